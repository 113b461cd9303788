/* alphaXiv's reproduction of the paper (github.com/alphaXiv/paper-implementations, attention_is_not_all_you_need):
 * the best.pt its train.py saves, torch.save({epoch, model_state_dict, optimizer_state_dict, val_loss, val_ppl}),
 * read without Python (io/torch_ckpt.h) into a grassflow model of the same function (docs/model.md, "alphaXiv's
 * checkpoints"). Their code has no config file; the shapes give the vocabulary, the width, the layers, the
 * positions (L), the rank and the FFN; what shapes cannot tell is their code's: 4 heads, and the offsets
 * 1, 2, 4, 8, 12, 16 in every layer (each twice from 12 layers on), the Grassmann block with a LayerNorm on the
 * mixer's output (block kind pre-mix-norm), pre-norm Transformer blocks, GELU (erf), LayerNorm eps 1e-5 and a
 * head tied to the token embedding. The tokenizer is BERT's uncased WordPiece: vocab.txt beside the checkpoint,
 * else GRASSFLOW_DATA's bert-base-uncased/vocab.txt (the CLI points GRASSFLOW_DATA at its data/); neither: the
 * model loads without one. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "grassflow_plugin.h"
#include "import/import.h"
#include "io/torch_ckpt.h"

#define IS gf_import_config_is /* the config's value at a key is ... (import/import.h) */

enum { HEADS = 4 };

/* Their names (%d: the layer) and grassflow's; gf NULL: read and checked, not copied. */
typedef struct {
    const char *theirs, *ours;
} name_map;
static const name_map NAMES[] = {
    {"token_embedding.weight", "tok_emb.weight"},       {"position_embedding.weight", "pos_emb.weight"},
    {"ln_f.weight", "ln_f.weight"},                     {"ln_f.bias", "ln_f.bias"},
    {"lm_head.weight", NULL},                           {"blocks.%d.ln1.weight", "blocks.%d.ln1.weight"},
    {"blocks.%d.ln1.bias", "blocks.%d.ln1.bias"},       {"blocks.%d.ln2.weight", "blocks.%d.ln2.weight"},
    {"blocks.%d.ln2.bias", "blocks.%d.ln2.bias"},       {"blocks.%d.ffn.0.weight", "blocks.%d.ffn.fc1.weight"},
    {"blocks.%d.ffn.0.bias", "blocks.%d.ffn.fc1.bias"}, {"blocks.%d.ffn.3.weight", "blocks.%d.ffn.fc2.weight"},
    {"blocks.%d.ffn.3.bias", "blocks.%d.ffn.fc2.bias"},
    {"blocks.%d.grassmann.W_red.weight", "blocks.%d.mix.red.weight"},
    {"blocks.%d.grassmann.W_red.bias", "blocks.%d.mix.red.bias"},
    {"blocks.%d.grassmann.W_plu.weight", "blocks.%d.mix.plucker.weight"},
    {"blocks.%d.grassmann.W_plu.bias", "blocks.%d.mix.plucker.bias"},
    {"blocks.%d.grassmann.W_gate.weight", "blocks.%d.mix.gate.weight"},
    {"blocks.%d.grassmann.W_gate.bias", "blocks.%d.mix.gate.bias"},
    {"blocks.%d.grassmann.layer_norm.weight", "blocks.%d.ln3.weight"},
    {"blocks.%d.grassmann.layer_norm.bias", "blocks.%d.ln3.bias"},
    {"blocks.%d.grassmann.plucker.idx_i", NULL},        {"blocks.%d.grassmann.plucker.idx_j", NULL},
    {"blocks.%d.qkv_proj.weight", "blocks.%d.mix.qkv.weight"}, {"blocks.%d.qkv_proj.bias", "blocks.%d.mix.qkv.bias"},
    {"blocks.%d.out_proj.weight", "blocks.%d.mix.proj.weight"}, {"blocks.%d.out_proj.bias", "blocks.%d.mix.proj.bias"},
};
enum { N_NAMES = (int)(sizeof NAMES / sizeof NAMES[0]) };

static bool detect(const char *path) {
    const size_t n = strlen(path);
    if (!(n > 3 && !strcmp(path + n - 3, ".pt")) && !(n > 4 && !strcmp(path + n - 4, ".pth"))) return false;
    FILE *f = fopen(path, "rb");
    unsigned char m[4] = {0};
    const bool zip = f && fread(m, 1, 4, f) == 4 && !memcmp(m, "PK\x03\x04", 4);
    if (f) fclose(f);
    return zip;
}

typedef struct {
    const char *path;
    gf_torch_ckpt c;
    bool grassmann;
    int64_t V, d, L, N, r, ff;
} ax_file;

static const gf_torch_tensor *need(const ax_file *a, const char *name, int ndim) {
    const gf_torch_tensor *t = gf_torch_find(&a->c, name);
    if (!t || t->ndim != ndim)
        return gf_fail("%s: no %d-D tensor %s: not the state dict of alphaXiv's GrassmannGPT or BaseTransformer",
                       a->path, ndim, name), NULL;
    return t;
}

/* The shapes: vocabulary and width, positions, layers, the rank (Grassmann) and the FFN. */
static int read_shapes(ax_file *a) {
    a->grassmann = gf_torch_find(&a->c, "blocks.0.grassmann.W_red.weight") != NULL;
    const gf_torch_tensor *e = need(a, "token_embedding.weight", 2), *p = e ? need(a, "position_embedding.weight", 2) : NULL;
    const gf_torch_tensor *f = p ? need(a, "blocks.0.ffn.0.weight", 2) : NULL;
    const gf_torch_tensor *w = f ? need(a, a->grassmann ? "blocks.0.grassmann.W_red.weight" : "blocks.0.qkv_proj.weight", 2) : NULL;
    if (!w) return -1;
    a->V = e->shape[0], a->d = e->shape[1], a->L = p->shape[0], a->ff = f->shape[0], a->r = a->grassmann ? w->shape[0] : 0;
    char name[96];
    for (a->N = 0; a->N < GF_MAX_LAYERS; a->N++) {
        snprintf(name, sizeof name, "blocks.%lld.ln1.weight", (long long)a->N);
        if (!gf_torch_find(&a->c, name)) break;
    }
    snprintf(name, sizeof name, "blocks.%lld.ln1.weight", (long long)a->N);
    if (gf_torch_find(&a->c, name))
        return gf_fail("%s: more than the %d layers grassflow builds", a->path, GF_MAX_LAYERS);
    if (a->d % HEADS && !a->grassmann)
        return gf_fail("%s: width %lld is not a multiple of their 4 heads", a->path, (long long)a->d);
    return 0;
}

/* Their code's offsets for n_layer layers (1, 2, 4, 8, 12, 16; from 12 layers on each twice), joined by sep. */
static void their_offsets(int64_t n_layer, const char *sep, char *buf, size_t cap) {
    static const int BASE[6] = {1, 2, 4, 8, 12, 16};
    buf[0] = 0;
    for (int i = 0; i < 6; i++)
        for (int k = 0; k < (n_layer >= 12 ? 2 : 1); k++)
            snprintf(buf + strlen(buf), cap - strlen(buf), "%s%d", buf[0] ? sep : "", BASE[i]);
}

static int make_config(const ax_file *a, gf_config *cfg) {
    char layer[400], offs[200] = "";
    their_offsets(a->N, ", ", offs, sizeof offs);
    if (a->grassmann)
        snprintf(layer, sizeof layer, "{\"mixer\": \"grassmann\", \"rank\": %lld, \"offsets\": [%s], \"block\": "
                 "\"pre-mix-norm\"}", (long long)a->r, offs);
    else
        snprintf(layer, sizeof layer, "{\"mixer\": \"attention\", \"n_head\": %d}", HEADS);
    char js[1024];
    snprintf(js, sizeof js, "{\"format\": 2, \"vocab_size\": %lld, \"d_model\": %lld, \"n_layer\": %lld, \"d_ff\": "
             "%lld, \"max_len\": %lld, \"norm\": \"pre\", \"pos\": \"learned\", \"tie_head\": true, \"gelu\": \"erf\", "
             "\"ln_eps\": 1e-5, \"dropout\": 0.1, \"layers\": [%s]}", (long long)a->V, (long long)a->d, (long long)a->N,
             (long long)a->ff, (long long)a->L, layer);
    return gf_config_from_json(js, a->path, cfg);
}

/* Their Pluecker index buffers must be the pairs i < j in row-major order, as grassflow's. */
static int check_pairs(const ax_file *a, const gf_torch_tensor *ti, const gf_torch_tensor *tj, const char *name) {
    if (!ti || !tj || ti->dtype != GF_TT_I64 || tj->dtype != GF_TT_I64 || ti->numel != a->r * (a->r - 1) / 2 ||
        tj->numel != ti->numel)
        return gf_fail("%s: %s is not the int64 pair list of rank %lld", a->path, name, (long long)a->r);
    const int64_t *I = ti->data, *J = tj->data;
    int64_t k = 0;
    for (int64_t i = 0; i < a->r; i++)
        for (int64_t j = i + 1; j < a->r; j++, k++)
            if (I[k] != i || J[k] != j) return gf_fail("%s: %s pairs dimensions in another order than i < j row by row",
                                                       a->path, name);
    return 0;
}

/* Their tensor t into grassflow's tensor ours (same shape), as float32. */
static int copy(const ax_file *a, gf_model *m, const gf_torch_tensor *t, const char *ours) {
    const gf_tensor_info *ti = gf_model_find_tensor(m, ours);
    if (!ti) return gf_fail("%s: %s has no place in the model its shapes describe", a->path, t->name);
    bool same = ti->ndim == t->ndim;
    for (int k = 0; same && k < t->ndim; k++) same = ti->shape[k] == t->shape[k];
    if (!same) return gf_fail("%s: %s has another shape than the model its other tensors describe", a->path, t->name);
    return gf_torch_to_f32(t, ti->data);
}

/* The state dict's name of map entry e for its layer l (no layer: l < 0 when e has none). */
static void names_of(const name_map *e, int64_t l, char *theirs, char *ours, size_t n) {
    snprintf(theirs, n, e->theirs, (int)l);
    if (e->ours) snprintf(ours, n, e->ours, (int)l);
}

static int copy_all(const ax_file *a, gf_model *m) {
    int64_t used = 0;
    char theirs[128], ours[128];
    for (int k = 0; k < N_NAMES; k++) {
        const bool per_layer = strstr(NAMES[k].theirs, "%d") != NULL;
        for (int64_t l = 0; l < (per_layer ? a->N : 1); l++) {
            names_of(&NAMES[k], l, theirs, ours, sizeof theirs);
            const gf_torch_tensor *t = gf_torch_find(&a->c, theirs);
            if (!t) continue;
            used++;
            if (NAMES[k].ours && copy(a, m, t, ours)) return -1;
        }
    }
    if (used != a->c.n)
        for (int64_t i = 0; i < a->c.n; i++) { /* name what is left over */
            bool known = false;
            for (int k = 0; k < N_NAMES && !known; k++)
                for (int64_t l = 0; l < a->N && !known; l++)
                    names_of(&NAMES[k], l, theirs, ours, sizeof theirs), known = !strcmp(theirs, a->c.t[i].name);
            if (!known) return gf_fail("%s: tensor %s is not one of alphaXiv's models'", a->path, a->c.t[i].name);
        }
    return 0;
}

/* Every tensor of the model filled, the tied head equal to the embedding, the pair lists as grassflow's. */
static int check_all(const ax_file *a, const gf_model *m) {
    int64_t expected = 0;
    for (int i = 0; gf_model_tensor(m, i); i++) expected++;
    int64_t mapped = 0;
    char theirs[128], ours[128];
    for (int k = 0; k < N_NAMES; k++)
        for (int64_t l = 0; l < (strstr(NAMES[k].theirs, "%d") ? a->N : 1); l++) {
            names_of(&NAMES[k], l, theirs, ours, sizeof theirs);
            mapped += NAMES[k].ours && gf_torch_find(&a->c, theirs);
        }
    if (mapped != expected)
        return gf_fail("%s: %lld of the model's %lld tensors are in it: a state dict of another model", a->path,
                       (long long)mapped, (long long)expected);
    const gf_torch_tensor *e = gf_torch_find(&a->c, "token_embedding.weight"), *h = gf_torch_find(&a->c, "lm_head.weight");
    const size_t bytes = (size_t)e->numel * (size_t)gf_torch_dtype_size(e->dtype);
    if (h && (h->numel != e->numel || h->dtype != e->dtype || memcmp(h->data, e->data, bytes)))
        return gf_fail("%s: lm_head.weight differs from token_embedding.weight; their models tie the two", a->path);
    for (int64_t l = 0; a->grassmann && l < a->N; l++) {
        char ni[96], nj[96];
        snprintf(ni, sizeof ni, "blocks.%lld.grassmann.plucker.idx_i", (long long)l);
        snprintf(nj, sizeof nj, "blocks.%lld.grassmann.plucker.idx_j", (long long)l);
        const gf_torch_tensor *ti = gf_torch_find(&a->c, ni), *tj = gf_torch_find(&a->c, nj);
        if ((ti || tj) && check_pairs(a, ti, tj, ni)) return -1;
    }
    return 0;
}

static gf_model *load(const char *path, gf_tokenizer **tok) {
    ax_file a = {.path = gf_show_name(path)};
    *tok = NULL;
    if (gf_torch_load(path, &a.c)) return NULL;
    gf_config cfg;
    gf_model *m = NULL;
    if (!read_shapes(&a) && !make_config(&a, &cfg) && (m = gf_model_create(&cfg)) &&
        (copy_all(&a, m) || check_all(&a, m))) {
        gf_model_free(m);
        m = NULL;
    }
    if (m) *tok = gf_import_bert_vocab(path, a.V);
    gf_torch_free(&a.c);
    return m;
}

/* ---- export: a grassflow model of their form as their best.pt ------------------------------------------- */


/* What of m their code cannot hold, or NULL: their two classes, exactly. */
static const char *not_theirs(const gf_model *m, bool *grassmann) {
    const gf_config *c = gf_model_config(m);
    static char why[512];
    if (!gf_import_plain_lm(c, "\"pre\""))
        return "their models are pre-norm language models with learned positions, a tied head, GELU (erf) and "
               "LayerNorm eps 1e-5, one stack";
    char offs[160] = "[";
    their_offsets(c->n_layer, ",", offs + 1, sizeof offs - 2);
    strcat(offs, "]");
    *grassmann = IS(c, "layers.0.mixer", "\"grassmann\"", "");
    for (int l = 0; l < c->n_layer; l++) {
        char k[13][48];
        const char *keys[13] = {"mixer", "block", "offsets", "n_head", "extra_proj", "heads",
                                "window", "grid", "plucker", "gate", "conv", "gate_form", "offset_mix"};
        for (int i = 0; i < 13; i++) snprintf(k[i], sizeof k[i], "layers.%d.%s", l, keys[i]);
        const bool ok = *grassmann ? IS(c, k[0], "\"grassmann\"", "") && IS(c, k[1], "\"pre-mix-norm\"", "\"pre\"") &&
                                         IS(c, k[2], offs, "") && IS(c, k[4], "false", "") && IS(c, k[5], "1", "") &&
                                         IS(c, k[6], "0", "") && IS(c, k[7], "0", "") && IS(c, k[8], "true", "") &&
                                         IS(c, k[9], "true", "") && IS(c, k[10], "0", "") &&
                                         IS(c, k[11], "\"channel\"", "") && IS(c, k[12], "\"mean\"", "")
                                   : IS(c, k[0], "\"attention\"", "") && IS(c, k[1], "\"pre\"", "\"pre\"") &&
                                         IS(c, k[3], "4", "");
        if (!ok) {
            snprintf(why, sizeof why, "layer %d is not theirs: every layer Grassmann in block pre-mix-norm with offsets %s "
                     "(and no window, grid, conv, scalar gate, learned offset mixture or ablation), or every layer attention with 4 heads in block pre", l, offs);
            return why;
        }
    }
    return NULL;
}

static int save(const gf_model *m, const char *path) {
    bool grassmann = false;
    const char *why = not_theirs(m, &grassmann);
    if (why) return gf_fail("%s cannot be written as an alphaXiv checkpoint: %s", path, why);
    const int64_t N = gf_model_config(m)->n_layer, r = grassmann ? gf_model_find_tensor(m, "blocks.0.mix.red.weight")->shape[0] : 0;
    gf_torch_tensor *t = calloc((size_t)(N_NAMES * N + 1), sizeof *t);
    int64_t *pairs = calloc((size_t)(r * r + 1), sizeof *pairs), n = 0;
    char(*names)[128] = calloc((size_t)(N_NAMES * N + 1), sizeof *names);
    if (!t || !pairs || !names) return free(t), free(pairs), free(names), gf_fail("out of memory");
    for (int64_t i = 0, k = 0; i < r; i++) /* their pair buffers: i < j row by row */
        for (int64_t j = i + 1; j < r; j++, k++) pairs[k] = i, pairs[r * (r - 1) / 2 + k] = j;
    char ours[128];
    for (int k = 0; k < N_NAMES; k++)
        for (int64_t l = 0; l < (strstr(NAMES[k].theirs, "%d") ? N : 1); l++) {
            names_of(&NAMES[k], l, names[n], ours, sizeof ours);
            const bool pair = strstr(names[n], "idx_") != NULL;
            const gf_tensor_info *ti = gf_model_find_tensor(m, NAMES[k].ours ? ours : pair ? "blocks.0.mix.red.weight" : "tok_emb.weight");
            if (!ti || (pair && !grassmann) || (!pair && !NAMES[k].ours && strcmp(names[n], "lm_head.weight"))) continue;
            gf_torch_tensor *x = &t[n];
            *x = (gf_torch_tensor){.name = names[n], .dtype = GF_TT_F32, .ndim = ti->ndim, .numel = ti->numel, .data = ti->data};
            for (int d = 0; d < ti->ndim; d++) x->shape[d] = ti->shape[d];
            if (pair) { /* int64 (r(r-1)/2,): idx_i then idx_j */
                x->dtype = GF_TT_I64, x->ndim = 1, x->numel = x->shape[0] = r * (r - 1) / 2;
                x->data = pairs + (strstr(names[n], "idx_j") ? x->numel : 0);
            }
            n++;
        }
    const gf_torch_numbers nums = {NAN, NAN, NAN};
    const int rc = gf_torch_save(path, t, n, &nums);
    free(t), free(pairs), free(names);
    return rc;
}

const gf_importer gf_importer_alphaxiv = {
    .version = GF_IMPORTER_VERSION,
    .name = "alphaxiv",
    .what = "a checkpoint of alphaXiv's reproduction (torch.save's best.pt: GrassmannGPT or BaseTransformer)",
    .label = "an alphaXiv checkpoint",
    .detect = detect,
    .load = load,
    .save = save,
};
