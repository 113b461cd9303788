/* A Hugging Face DistilBERT folder (config.json, model.safetensors, vocab.txt, as downloaded for
 * distilbert-base-uncased) as a grassflow model.
 *
 * DistilBERT is grassflow's post-norm bidirectional attention block with what BERT adds: a LayerNorm on the
 * embedding sum (emb_norm) and LayerNorm eps 1e-12 (fixed in Hugging Face's code, not in config.json).
 * Its tensors map one to one onto grassflow's, except q_lin, k_lin and v_lin, which are the three row
 * blocks of the fused qkv projection. It has no token types and no final LayerNorm; grassflow's ln_f and
 * classify head come with fresh weights (a backbone's head replaces them; gf_model_hidden is before ln_f).
 * What differs while training: Hugging Face also drops attention probabilities (attention_dropout);
 * grassflow drops the residual branches only (docs/model.md, "Imported checkpoints"). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "import/import.h"
#include "io/file.h"
#include "io/json_out.h"
#include "io/safetensors.h"

/* config.json's shape keys, all required, each an integer from 1 to the largest grassflow builds (its own
 * config's limits, src/config/config.c and src/mixers/attention.c: d_model, n_layer, n_head, d_ff,
 * vocab_size, max_len), so that gf_config_from_json never refuses them in its own names. */
enum { K_DIM, K_LAYERS, K_HEADS, K_HIDDEN, K_VOCAB, K_MAXPOS, N_SHAPE };
static const char *const SHAPE_KEYS[N_SHAPE] = {"dim", "n_layers", "n_heads", "hidden_dim", "vocab_size",
                                                "max_position_embeddings"};
static const int64_t SHAPE_MAX[N_SHAPE] = {65536, GF_MAX_LAYERS, 65536, 1 << 20, 2147483647, 1 << 24};

typedef struct {
    int64_t v[N_SHAPE];
    double dropout;
} hf_config;

/* One Hugging Face tensor: the grassflow tensor it fills, which third of its rows (q, k, v: 0, 1, 2; -1: all
 * of it), and its shape in config.json's terms (rows, cols: SHAPE_KEYS indices; cols -1: a vector). */
typedef struct {
    const char *hf, *gf;
    int part, rows, cols;
} name_map;

static const name_map EMBEDDINGS[] = {
    {"embeddings.word_embeddings.weight", "tok_emb.weight", -1, K_VOCAB, K_DIM},
    {"embeddings.position_embeddings.weight", "pos_emb.weight", -1, K_MAXPOS, K_DIM},
    {"embeddings.LayerNorm.weight", "emb_ln.weight", -1, K_DIM, -1},
    {"embeddings.LayerNorm.bias", "emb_ln.bias", -1, K_DIM, -1},
};
static const name_map LAYER[] = {
    {"attention.q_lin.weight", "mix.qkv.weight", 0, K_DIM, K_DIM},
    {"attention.q_lin.bias", "mix.qkv.bias", 0, K_DIM, -1},
    {"attention.k_lin.weight", "mix.qkv.weight", 1, K_DIM, K_DIM},
    {"attention.k_lin.bias", "mix.qkv.bias", 1, K_DIM, -1},
    {"attention.v_lin.weight", "mix.qkv.weight", 2, K_DIM, K_DIM},
    {"attention.v_lin.bias", "mix.qkv.bias", 2, K_DIM, -1},
    {"attention.out_lin.weight", "mix.proj.weight", -1, K_DIM, K_DIM},
    {"attention.out_lin.bias", "mix.proj.bias", -1, K_DIM, -1},
    {"sa_layer_norm.weight", "ln1.weight", -1, K_DIM, -1},
    {"sa_layer_norm.bias", "ln1.bias", -1, K_DIM, -1},
    {"ffn.lin1.weight", "ffn.fc1.weight", -1, K_HIDDEN, K_DIM},
    {"ffn.lin1.bias", "ffn.fc1.bias", -1, K_HIDDEN, -1},
    {"ffn.lin2.weight", "ffn.fc2.weight", -1, K_DIM, K_HIDDEN},
    {"ffn.lin2.bias", "ffn.fc2.bias", -1, K_DIM, -1},
    {"output_layer_norm.weight", "ln2.weight", -1, K_DIM, -1},
    {"output_layer_norm.bias", "ln2.bias", -1, K_DIM, -1},
};
#define N_LAYER_MAP ((int)(sizeof LAYER / sizeof LAYER[0]))

static cJSON *read_json(const char *dir, const char *name, const char *what, char *path) {
    if (gf_path_join(path, GF_PATH_MAX, dir, name)) return NULL;
    size_t n;
    char *txt = (char *)gf_read_file(path, (size_t)1 << 20, &n);
    if (!txt) return NULL;
    cJSON *o = cJSON_Parse(txt);
    free(txt);
    char dup[256] = "";
    if (!cJSON_IsObject(o) || gf_json_duplicate_key(o, dup, sizeof dup)) {
        if (dup[0])
            gf_fail("%s: the key \"%s\" appears twice; expected each key once: which to read is not clear", path, dup);
        else
            gf_fail("%s: not a JSON object; expected %s", path, what);
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static bool detect(const char *path) {
    struct stat st;
    char p[GF_PATH_MAX];
    if (stat(path, &st) || !S_ISDIR(st.st_mode) || gf_path_join(p, sizeof p, path, "config.json") || access(p, R_OK))
        return false;
    cJSON *o = read_json(path, "config.json", "", p);
    const cJSON *t = o ? cJSON_GetObjectItemCaseSensitive(o, "model_type") : NULL;
    bool yes = cJSON_IsString(t) && !strcmp(t->valuestring, "distilbert");
    cJSON_Delete(o);
    gf_clear_error();
    return yes;
}

/* A JSON value as the file has it, for messages: 1e9 as 1000000000, "x" with its quotes, at most 40
 * characters; with what type it is when that is not the one expected. */
static void shown(const cJSON *v, char *buf, size_t n) {
    char *s = cJSON_PrintUnformatted(v);
    const char *type = cJSON_IsString(v) ? " (a string)" : cJSON_IsArray(v) ? " (an array)"
                       : cJSON_IsObject(v) ? " (an object)" : "";
    snprintf(buf, n, "%.40s%s%s", s ? s : "?", s && strlen(s) > 40 ? "..." : "", type);
    free(s);
}

/* Shape key k of config.json o (path): there, a whole number in [1, SHAPE_MAX[k]]. */
static int read_shape_key(const char *path, const cJSON *o, int k, int64_t *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, SHAPE_KEYS[k]);
    if (!v)
        return gf_fail("%s: \"%s\" is missing; a DistilBERT config.json has dim, n_layers, n_heads, hidden_dim, "
                       "vocab_size and max_position_embeddings", path, SHAPE_KEYS[k]);
    const double x = cJSON_IsNumber(v) ? v->valuedouble : 0;
    if (x >= 1 && x <= (double)SHAPE_MAX[k] && x == (double)(int64_t)x) { /* range first: the cast needs it */
        *out = (int64_t)x;
        return 0;
    }
    char got[64];
    shown(v, got, sizeof got);
    return gf_fail("%s: \"%s\" is %s; expected an integer from 1 to %lld%s", path, SHAPE_KEYS[k], got,
                   (long long)SHAPE_MAX[k], x > (double)SHAPE_MAX[k] ? " (the largest grassflow builds)" : "");
}

static int read_shape(const char *path, const cJSON *o, hf_config *h) {
    for (int k = 0; k < N_SHAPE; k++)
        if (read_shape_key(path, o, k, &h->v[k])) return -1;
    if (h->v[K_DIM] % h->v[K_HEADS])
        return gf_fail("%s: \"dim\" %lld is not divisible by \"n_heads\" %lld; each attention head is dim / "
                       "n_heads wide", path, (long long)h->v[K_DIM], (long long)h->v[K_HEADS]);
    return 0;
}

/* The other keys grassflow reads: activation "gelu" (if there), dropout a probability (if there; Hugging
 * Face's default 0.1), sinusoidal_pos_embds a boolean (if there; the table is in the file either way). */
static int read_options(const char *path, const cJSON *o, hf_config *h) {
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(o, "activation");
    const cJSON *dr = cJSON_GetObjectItemCaseSensitive(o, "dropout");
    const cJSON *sin = cJSON_GetObjectItemCaseSensitive(o, "sinusoidal_pos_embds");
    char got[64];
    if (act && !(cJSON_IsString(act) && !strcmp(act->valuestring, "gelu"))) {
        shown(act, got, sizeof got);
        return gf_fail("%s: \"activation\" is %s; grassflow reads DistilBERTs with \"gelu\" (exact GELU)", path, got);
    }
    h->dropout = dr && cJSON_IsNumber(dr) ? dr->valuedouble : 0.1;
    if (dr && !(cJSON_IsNumber(dr) && h->dropout >= 0 && h->dropout < 1 && (float)h->dropout < 1)) {
        shown(dr, got, sizeof got);
        return gf_fail("%s: \"dropout\" is %s; expected a probability in [0, 1)", path, got);
    }
    if (sin && !cJSON_IsBool(sin)) {
        shown(sin, got, sizeof got);
        return gf_fail("%s: \"sinusoidal_pos_embds\" is %s; expected true or false", path, got);
    }
    return 0;
}

static int read_config(const char *dir, hf_config *h) {
    char path[GF_PATH_MAX];
    cJSON *o = read_json(dir, "config.json", "Hugging Face's config.json of a DistilBERT", path);
    if (!o) return -1;
    int rc = read_shape(path, o, h) || read_options(path, o, h) ? -1 : 0;
    cJSON_Delete(o);
    return rc;
}

static int make_config(const char *dir, const hf_config *h, gf_config *cfg) {
    char js[1024], src[GF_PATH_MAX + 16];
    snprintf(js, sizeof js,
             "{\"format\": 3, \"head\": {\"kind\": \"classify\", \"n_classes\": 2, \"pool\": \"first\"}, "
             "\"vocab_size\": %lld, \"d_model\": %lld, \"n_layer\": %lld, \"d_ff\": %lld, \"max_len\": %lld, "
             "\"norm\": \"post\", \"gelu\": \"erf\", \"pos\": \"learned\", \"emb_norm\": true, \"ln_eps\": 1e-12, "
             "\"direction\": \"bidirectional\", \"dropout\": %.9g, "
             "\"layers\": [{\"mixer\": \"attention\", \"n_head\": %lld}]}",
             (long long)h->v[K_VOCAB], (long long)h->v[K_DIM], (long long)h->v[K_LAYERS], (long long)h->v[K_HIDDEN],
             (long long)h->v[K_MAXPOS], h->dropout, (long long)h->v[K_HEADS]);
    if (gf_path_join(src, sizeof src, dir, "config.json")) return -1;
    return gf_config_from_json(js, src, cfg);
}

/* tokenizer_config.json's special tokens: Hugging Face's defaults, the ones grassflow's WordPiece uses. */
static const char *const SPECIAL_KEYS[][2] = {{"unk_token", "[UNK]"}, {"sep_token", "[SEP]"}, {"pad_token", "[PAD]"},
                                              {"cls_token", "[CLS]"}, {"mask_token", "[MASK]"}};

/* tokenizer_config.json (if there) asks for what grassflow's WordPiece does, BERT's uncased tokenizer:
 * do_lower_case, strip_accents and tokenize_chinese_chars true (or absent; strip_accents also null), and
 * the default special tokens (a string, or an AddedToken object with that "content"). */
static int check_tok_config(const char *path, const cJSON *tc) {
    static const char *const FLAGS[] = {"do_lower_case", "strip_accents", "tokenize_chinese_chars"};
    char got[64];
    for (int i = 0; i < 3; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(tc, FLAGS[i]);
        if (!v || cJSON_IsTrue(v) || (i == 1 && cJSON_IsNull(v))) continue;
        shown(v, got, sizeof got);
        return gf_fail("%s: \"%s\" is %s; grassflow's WordPiece is BERT's uncased one (distilbert-base-uncased): "
                       "expected true%s", path, FLAGS[i], got, i == 1 ? " or null" : "");
    }
    for (size_t i = 0; i < sizeof SPECIAL_KEYS / sizeof SPECIAL_KEYS[0]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(tc, SPECIAL_KEYS[i][0]);
        const cJSON *c = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "content") : v;
        if (!v || (cJSON_IsString(c) && !strcmp(c->valuestring, SPECIAL_KEYS[i][1]))) continue;
        shown(v, got, sizeof got);
        return gf_fail("%s: \"%s\" is %s; grassflow's WordPiece uses BERT's special tokens: expected \"%s\"", path,
                       SPECIAL_KEYS[i][0], got, SPECIAL_KEYS[i][1]);
    }
    return 0;
}

/* The vocabulary the model was trained with: vocab.txt, as many pieces as vocab_size, with BERT's [CLS],
 * [SEP] and [PAD] (a text is read as [CLS] text [SEP]; without them grassflow would read it otherwise). */
static int check_vocab(const char *path, const gf_tokenizer *t, int64_t vocab_size) {
    if (gf_tokenizer_vocab_size(t) != vocab_size)
        return gf_fail("%s has %lld pieces but config.json's vocab_size is %lld; they must come from the same model",
                       path, (long long)gf_tokenizer_vocab_size(t), (long long)vocab_size);
    for (int i = 1; i < 4; i++)
        if (gf_tokenizer_find(t, SPECIAL_KEYS[i][1], strlen(SPECIAL_KEYS[i][1])) < 0)
            return gf_fail("%s has no %s line; a DistilBERT reads a text as [CLS] text [SEP], padded with [PAD]\n"
                           "HINT: give the model's own vocab.txt (distilbert-base-uncased's has [PAD] on line 1, "
                           "[CLS] on 102, [SEP] on 103)", path, SPECIAL_KEYS[i][1]);
    return 0;
}

static gf_tokenizer *load_vocab(const char *dir, int64_t vocab_size) {
    char path[GF_PATH_MAX];
    cJSON *tc = NULL;
    if (!gf_path_join(path, sizeof path, dir, "tokenizer_config.json") && !access(path, F_OK) &&
        !(tc = read_json(dir, "tokenizer_config.json", "Hugging Face's tokenizer_config.json", path)))
        return NULL;
    int rc = tc ? check_tok_config(path, tc) : 0;
    cJSON_Delete(tc);
    if (rc || gf_path_join(path, sizeof path, dir, "vocab.txt")) return NULL;
    gf_tokenizer *t = gf_wordpiece_load(path);
    if (t && check_vocab(path, t, vocab_size)) {
        gf_tokenizer_free(t);
        return NULL;
    }
    return t;
}

/* Whether `name` (without prefix) is a tensor of a DistilBERT with n_layers layers. */
static bool expected(const char *name, int64_t n_layers) {
    for (size_t i = 0; i < sizeof EMBEDDINGS / sizeof EMBEDDINGS[0]; i++)
        if (!strcmp(name, EMBEDDINGS[i].hf)) return true;
    int l, at = 0;
    if (sscanf(name, "transformer.layer.%d.%n", &l, &at) != 1 || !at || l < 0 || l >= n_layers) return false;
    for (int i = 0; i < N_LAYER_MAP; i++)
        if (!strcmp(name + at, LAYER[i].hf)) return true;
    return false;
}

/* Up to three tensors of f that look like DistilBERT's (prefix + embeddings. / transformer.) but are none
 * of this shape's: a misnamed tensor, or a layer config.json does not have. */
static void unknown_list(const gf_st_file *f, const char *prefix, int64_t n_layers, char *buf, size_t n) {
    buf[0] = '\0';
    int k = 0;
    for (int i = 0; i < f->n_tensors && k < 3; i++) {
        const char *s = f->tensors[i].name;
        if (strncmp(s, prefix, strlen(prefix))) continue;
        s += strlen(prefix);
        if ((strncmp(s, "embeddings.", 11) && strncmp(s, "transformer.", 12)) || expected(s, n_layers)) continue;
        snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", k++ ? ", " : "", f->tensors[i].name);
    }
}

/* The tensors of one DistilBERT file: each mapped entry (EMBEDDINGS, then LAYER for each layer) in turn. */
typedef struct {
    const gf_st_file *f;
    const char *prefix;
    const hf_config *h;
} hf_file;

/* Entry k of the mapping (k < 4 + 16 n_layers): its Hugging Face and grassflow names. */
static const name_map *entry(const hf_file *c, int64_t k, char *hf, char *gf, size_t n) {
    const int64_t n_emb = (int64_t)(sizeof EMBEDDINGS / sizeof EMBEDDINGS[0]);
    if (k < n_emb) {
        snprintf(hf, n, "%s%s", c->prefix, EMBEDDINGS[k].hf);
        snprintf(gf, n, "%s", EMBEDDINGS[k].gf);
        return &EMBEDDINGS[k];
    }
    const int64_t l = (k - n_emb) / N_LAYER_MAP;
    const name_map *nm = &LAYER[(k - n_emb) % N_LAYER_MAP];
    snprintf(hf, n, "%stransformer.layer.%lld.%s", c->prefix, (long long)l, nm->hf);
    snprintf(gf, n, "blocks.%lld.%s", (long long)l, nm->gf);
    return nm;
}

static int64_t n_entries(const hf_file *c) {
    return (int64_t)(sizeof EMBEDDINGS / sizeof EMBEDDINGS[0]) + N_LAYER_MAP * c->h->v[K_LAYERS];
}

/* Tensor `hf` is there, floating point, of the shape config.json implies. */
static int check_one(const hf_file *c, const name_map *nm, const char *hf) {
    const gf_st_tensor *t = gf_st_find(c->f, hf);
    if (!t) {
        char unknown[800];
        unknown_list(c->f, c->prefix, c->h->v[K_LAYERS], unknown, sizeof unknown);
        return gf_fail("%s: no tensor %s, which a DistilBERT of this config.json has%s%s\nHINT: the tensor names are "
                       "Hugging Face's (distilbert.transformer.layer.N.attention.q_lin.weight, ...)", c->f->path, hf,
                       unknown[0] ? "; tensors of the file that are no DistilBERT tensor of this shape: " : "",
                       unknown);
    }
    const int ndim = nm->cols < 0 ? 1 : 2;
    const int64_t want[2] = {c->h->v[nm->rows], nm->cols < 0 ? 0 : c->h->v[nm->cols]};
    if (t->ndim != ndim || t->shape[0] != want[0] || (ndim > 1 && t->shape[1] != want[1])) {
        char got[160] = "[", exp[64];
        for (int d = 0; d < t->ndim; d++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? ", " : "", (long long)t->shape[d]);
        strncat(got, "]", sizeof got - strlen(got) - 1);
        snprintf(exp, sizeof exp, ndim == 1 ? "[%lld]" : "[%lld, %lld]", (long long)want[0], (long long)want[1]);
        return gf_fail("%s: tensor %s has shape %s; config.json (%s%s%s) says %s\nHINT: config.json and "
                       "model.safetensors must come from the same model", c->f->path, hf, got, SHAPE_KEYS[nm->rows],
                       ndim > 1 ? ", " : "", ndim > 1 ? SHAPE_KEYS[nm->cols] : "", exp);
    }
    if (t->dtype != GF_DT_F32 && t->dtype != GF_DT_F64)
        return gf_fail("%s: tensor %s is not floating point (F32 or F64)", c->f->path, hf);
    return 0;
}

/* Before anything is allocated: every tensor there and of its shape (so the model is as large as the file),
 * and no tensor of DistilBERT's form that this shape has no place for (a layer beyond n_layers, a misspelt
 * name). Other tensors (the MLM or classifier layers of DistilBertForMaskedLM and ...ForSequenceClassification
 * files) are not read. */
static int check_all(const hf_file *c) {
    char hf[256], gf[256], extra[800];
    for (int64_t k = 0; k < n_entries(c); k++)
        if (check_one(c, entry(c, k, hf, gf, sizeof hf), hf)) return -1;
    unknown_list(c->f, c->prefix, c->h->v[K_LAYERS], extra, sizeof extra);
    if (extra[0])
        return gf_fail("%s: tensors a DistilBERT of config.json's shape (n_layers %lld) has no place for: %s\nHINT: "
                       "config.json and model.safetensors must come from the same model", c->f->path,
                       (long long)c->h->v[K_LAYERS], extra);
    return 0;
}

/* Tensor t (checked by check_one) into dst, as float32: each value finite, as grassflow's own checkpoints'
 * (gf_st_check_finite). */
static int copy_one(const hf_file *c, const gf_st_tensor *t, const char *hf, float *dst) {
    static const char why[] = "a DistilBERT's weights are finite numbers, so the file is damaged\nHINT: download "
                              "model.safetensors again from the model's Hugging Face repository";
    const unsigned char *src = t->data;
    if (t->dtype == GF_DT_F32) {
        memcpy(dst, src, (size_t)t->numel * 4);
        return gf_st_check_finite(c->f->path, hf, dst, t->numel, why);
    }
    for (int64_t i = 0; i < t->numel; i++) {
        double x;
        memcpy(&x, src + i * 8, 8);
        dst[i] = (float)x;
        if (isfinite(x) && !isfinite(dst[i]))
            return gf_fail("%s: tensor \"%s\" holds %g at index %lld, beyond float32's range; %s", c->f->path, hf, x,
                           (long long)i, why);
    }
    return gf_st_check_finite(c->f->path, hf, dst, t->numel, why);
}

/* Every tensor into its place in m (checked by check_all). */
static int copy_all(const hf_file *c, gf_model *m) {
    char hf[256], gf[256];
    for (int64_t k = 0; k < n_entries(c); k++) {
        const name_map *nm = entry(c, k, hf, gf, sizeof hf);
        const gf_st_tensor *t = gf_st_find(c->f, hf);
        const gf_tensor_info *ti = gf_model_find_tensor(m, gf);
        if (copy_one(c, t, hf, gf_model_params(m) + ti->offset + (nm->part >= 0 ? nm->part * t->numel : 0)))
            return -1;
    }
    return 0;
}

/* The model of config.json, if the file's tensors fit it, with the file's weights. */
static gf_model *build(const char *dir, const hf_config *h, const gf_config *cfg, const gf_st_file *f) {
    hf_file c = {f, gf_st_find(f, "embeddings.word_embeddings.weight") ? "" : "distilbert.", h};
    if (check_all(&c)) return NULL;
    gf_model *m = gf_model_create(cfg);
    if (!m) {
        char e[1024];
        snprintf(e, sizeof e, "%s", gf_last_error());
        gf_fail("%s/config.json describes a DistilBERT that cannot be built here: %s", dir, e);
        return NULL;
    }
    if (copy_all(&c, m)) {
        gf_model_free(m);
        return NULL;
    }
    return m;
}

static gf_model *load(const char *dir, gf_tokenizer **tok) {
    hf_config h;
    gf_config cfg;
    char path[GF_PATH_MAX];
    *tok = NULL;
    if (read_config(dir, &h) || make_config(dir, &h, &cfg)) return NULL;
    gf_tokenizer *t = load_vocab(dir, h.v[K_VOCAB]);
    gf_st_file *f = t && !gf_path_join(path, sizeof path, dir, "model.safetensors") ? gf_st_read(path) : NULL;
    if (t && !f && access(path, F_OK) && !gf_path_join(path, sizeof path, dir, "pytorch_model.bin") &&
        !access(path, F_OK))
        gf_fail("%s has pytorch_model.bin but no model.safetensors; grassflow reads safetensors, not Python pickles\n"
                "HINT: download model.safetensors from the same Hugging Face repository (distilbert-base-uncased has "
                "one)", dir);
    gf_model *m = f ? build(dir, &h, &cfg, f) : NULL;
    gf_st_free(f);
    if (!m) gf_tokenizer_free(t);
    else *tok = t;
    return m;
}

const gf_importer gf_importer_distilbert = {
    .version = GF_IMPORTER_VERSION,
    .name = "hf-distilbert",
    .what = "a Hugging Face DistilBERT folder (config.json with model_type distilbert, model.safetensors, vocab.txt)",
    .label = "a Hugging Face DistilBERT folder",
    .detect = detect,
    .load = load,
};
