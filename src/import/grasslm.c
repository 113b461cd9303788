/* GrassLM's .grasslm files (github.com/adriansimonn/GrassLM, python/grasslm/export.py: read, not copied): a 64-byte
 * header ("GRLM", version 1, n_layers, d_model, d_reduce, d_ff, vocab_size, max_seq_len, dtype 0 f32 / 1 f16,
 * little-endian uint32s, zeros after), then a table: a count, and per weight its name's length and bytes, its
 * dimension count and sizes (uint32s), its data row-major. The model is the paper's post-norm block, which is
 * grassflow's post-gated one: x = Drop(ln1(a h + (1 - a) g)), out = ln2(x + Drop(FFN(x))), one offset per layer
 * (the table's "window_offsets"), the head tied to the token embedding (lm_head is not in the file), LayerNorm
 * eps 1e-5, GELU (erf). The vocabulary is BERT's uncased one (gf_import_bert_vocab). Every size, count and
 * length is checked against the file before it is used. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "compute/bf16.h"
#include "grassflow_plugin.h"
#include "import/import.h"
#include "io/file.h"

#define IS gf_import_config_is /* the config's value at a key is ... (import/import.h) */

#define MAX_FILE ((size_t)8 << 30)
enum { N_HEAD = 9, MAX_NAME = 256, MAX_DIMS = 4 };

typedef struct {
    const char *name;
    int ndim;
    int64_t shape[MAX_DIMS], numel;
    const unsigned char *data; /* numel f32 or f16 values, in the file */
} gl_weight;

typedef struct {
    const char *path;
    unsigned char *buf;
    size_t len;
    uint32_t h[N_HEAD]; /* magic, version, n_layers, d_model, d_reduce, d_ff, vocab_size, max_seq_len, dtype */
    gl_weight *w;
    int64_t n, cap; /* weights read; and the table's count (names holds up to cap, calloc'd) */
    char **names;
} gl_file;

enum { H_LAYERS = 2, H_D, H_R, H_FF, H_V, H_L, H_DTYPE };

static bool detect(const char *path) {
    const size_t n = strlen(path);
    return n > 8 && !strcmp(path + n - 8, ".grasslm");
}

static uint32_t u32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* n bytes at *at (moved past them), or NULL past the end. */
static const unsigned char *take(gl_file *g, size_t *at, uint64_t n, const char *what) {
    if (n > g->len - *at) return gf_fail("%s: %s runs past the end of the file (%zu bytes): a truncated file", g->path, what, g->len), NULL;
    const unsigned char *p = g->buf + *at;
    *at += n;
    return p;
}

static int read_weight(gl_file *g, size_t *at, int64_t k) {
    const unsigned char *p = take(g, at, 4, "a weight's name length");
    const uint32_t nl = p ? u32(p) : 0;
    if (!p || nl == 0 || nl > MAX_NAME)
        return p ? gf_fail("%s: weight %lld's name is %u bytes (1 to %d)", g->path, (long long)k, nl, MAX_NAME) : -1;
    const unsigned char *nm = take(g, at, nl, "a weight's name");
    if (!nm || !(g->names[k] = malloc(nl + 1))) return nm ? gf_fail("out of memory") : -1;
    memcpy(g->names[k], nm, nl);
    g->names[k][nl] = 0;
    gl_weight *w = &g->w[k];
    w->name = g->names[k];
    const unsigned char *d = take(g, at, 4, "a weight's dimension count");
    if (!d || (w->ndim = (int)u32(d)) < 1 || w->ndim > MAX_DIMS)
        return d ? gf_fail("%s: weight %s has %u dimensions (1 to %d)", g->path, w->name, u32(d), MAX_DIMS) : -1;
    const unsigned char *s = take(g, at, 4 * (uint64_t)w->ndim, "a weight's shape");
    if (!s) return -1;
    w->numel = 1;
    for (int i = 0; i < w->ndim; i++) {
        w->shape[i] = u32(s + 4 * i);
        if (w->shape[i] && w->numel > (int64_t)(g->len / (size_t)w->shape[i]))
            return gf_fail("%s: weight %s is larger than the file", g->path, w->name);
        w->numel *= w->shape[i];
    }
    return (w->data = take(g, at, (uint64_t)w->numel * (g->h[H_DTYPE] ? 2 : 4), "a weight's data")) ? 0 : -1;
}

static int read_file(gl_file *g) {
    if (!(g->buf = gf_read_file(g->path, MAX_FILE, &g->len))) return -1;
    if (g->len < 68 || memcmp(g->buf, "GRLM", 4)) return gf_fail("%s: not a .grasslm file (no GRLM magic)", g->path);
    for (int i = 0; i < N_HEAD; i++) g->h[i] = u32(g->buf + 4 * i);
    if (g->h[1] != 1) return gf_fail("%s: .grasslm version %u (this reader takes version 1)", g->path, g->h[1]);
    if (g->h[H_DTYPE] > 1) return gf_fail("%s: dtype %u (0 f32 or 1 f16)", g->path, g->h[H_DTYPE]);
    size_t at = 64;
    const uint32_t n = u32(take(g, &at, 4, "the weight count"));
    if (n > g->len / 13) return gf_fail("%s: %u weights, more than the file can hold", g->path, n);
    g->w = calloc(n ? n : 1, sizeof *g->w), g->names = calloc(n ? n : 1, sizeof *g->names), g->cap = n;
    if (!g->w || !g->names) return gf_fail("out of memory");
    for (g->n = 0; g->n < n; g->n++)
        if (read_weight(g, &at, g->n)) return -1;
    if (at != g->len) return gf_fail("%s: %zu bytes after the last weight", g->path, g->len - at);
    return 0;
}

static const gl_weight *find(const gl_file *g, const char *name) {
    for (int64_t i = 0; i < g->n; i++)
        if (!strcmp(g->w[i].name, name)) return &g->w[i];
    return NULL;
}

static float value(const gl_file *g, const gl_weight *w, int64_t i) {
    if (!g->h[H_DTYPE]) {
        float f;
        memcpy(&f, w->data + 4 * i, 4);
        return f;
    }
    return gf_f16_to_f32((uint16_t)(w->data[2 * i] | w->data[2 * i + 1] << 8));
}

/* The per-layer offsets (window_offsets: one float per layer) into the config's layers list. */
/* The header's sizes against the file's own weights, before a model of them is made: a 68-byte file must not
 * ask for gigabytes. */
static int check_header(const gl_file *g) {
    if (g->h[H_LAYERS] < 1 || g->h[H_LAYERS] > GF_MAX_LAYERS)
        return gf_fail("%s: %u layers (1 to %d)", g->path, g->h[H_LAYERS], GF_MAX_LAYERS);
    const gl_weight *e = find(g, "tok_embed.weight"), *p = find(g, "pos_embed.weight"), *f = find(g, "blocks.0.ffn.0.weight");
    const gl_weight *r = find(g, "blocks.0.mixing.plucker_encoder.W_red.weight");
    if (!e || !p || !f || !r || e->ndim != 2 || p->ndim != 2 || f->ndim != 2 || r->ndim != 2 || e->shape[0] != g->h[H_V] ||
        e->shape[1] != g->h[H_D] || p->shape[0] != g->h[H_L] || f->shape[0] != g->h[H_FF] || r->shape[0] != g->h[H_R])
        return gf_fail("%s: its header's sizes (vocabulary %u, width %u, positions %u, FFN %u, rank %u) are not its weights'",
                       g->path, g->h[H_V], g->h[H_D], g->h[H_L], g->h[H_FF], g->h[H_R]);
    return 0;
}

static int make_config(const gl_file *g, gf_config *cfg) {
    if (check_header(g)) return -1;
    const gl_weight *wo = find(g, "window_offsets");
    if (!wo || wo->numel != g->h[H_LAYERS]) return gf_fail("%s: no window_offsets of one offset per layer", g->path);
    char layers[64 * 80] = "", js[6000];
    for (int64_t l = 0; l < wo->numel; l++) {
        const float o = value(g, wo, l);
        if (!(o >= 1 && o <= 1 << 20) || o != floorf(o))
            return gf_fail("%s: window_offsets[%lld] is %g, not an offset", g->path, (long long)l, (double)o);
        snprintf(layers + strlen(layers), sizeof layers - strlen(layers), "%s{\"mixer\": \"grassmann\", \"rank\": %u, \"offsets\": [%d]}",
                 l ? ", " : "", g->h[H_R], (int)o);
    }
    snprintf(js, sizeof js, "{\"format\": 2, \"vocab_size\": %u, \"d_model\": %u, \"n_layer\": %u, \"d_ff\": %u, \"max_len\": %u, "
             "\"norm\": \"post\", \"pos\": \"learned\", \"tie_head\": true, \"gelu\": \"erf\", \"ln_eps\": 1e-5, \"dropout\": 0.1, "
             "\"layers\": [%s]}", g->h[H_V], g->h[H_D], g->h[H_LAYERS], g->h[H_FF], g->h[H_L], layers);
    return gf_config_from_json(js, g->path, cfg);
}

/* Their names and grassflow's: whole names, and the parts after "blocks.N." (a trailing '.': a prefix). */
static const char *const MAP[][2] = {
    {"tok_embed.weight", "tok_emb.weight"}, {"pos_embed.weight", "pos_emb.weight"}, {"ln_final.weight", "ln_f.weight"},
    {"ln_final.bias", "ln_f.bias"}, {"mixing.plucker_encoder.W_red.", "mix.red."}, {"mixing.plucker_encoder.W_plu.", "mix.plucker."},
    {"mixing.W_gate.", "mix.gate."}, {"ln1.", "ln1."}, {"ln2.", "ln2."}, {"ffn.0.", "ffn.fc1."}, {"ffn.2.", "ffn.fc2."}};

/* name in the other naming: column from (0 theirs, 1 grassflow's) to 1 - from. 0, or -1 when it has none. */
static int rename_to(const char *name, int from, char *out, size_t n) {
    int l = 0, used = 0;
    const char *rest = name;
    if (!strncmp(name, "blocks.", 7)) { /* blocks.N. with N digits, no leading zero: one spelling per layer */
        const char *p = name + 7;
        while (*p >= '0' && *p <= '9' && p - name < 12) l = 10 * l + (*p++ - '0');
        if (p == name + 7 || *p != '.' || (name[7] == '0' && p > name + 8)) return -1;
        used = (int)(p + 1 - name), rest = p + 1;
    }
    for (size_t k = 0; k < sizeof MAP / sizeof MAP[0]; k++) {
        const char *src = MAP[k][from], *dst = MAP[k][1 - from];
        const size_t pl = strlen(src);
        const bool whole = src[pl - 1] != '.';
        if ((whole && !used && !strcmp(rest, src)) || (!whole && used && !strncmp(rest, src, pl))) {
            if (used) snprintf(out, n, "blocks.%d.%s%s", l, dst, rest + pl);
            else snprintf(out, n, "%s", dst);
            return 0;
        }
    }
    return -1;
}

static int ours(const char *theirs, char *out, size_t n) { return rename_to(theirs, 0, out, n); }
static int theirs_of(const char *ours_name, char *out, size_t n) { return rename_to(ours_name, 1, out, n); }

static int copy_each(const gl_file *g, gf_model *m, bool *filled, int64_t *copied) {
    for (int64_t i = 0; i < g->n; i++) {
        const gl_weight *w = &g->w[i];
        char name[MAX_NAME + 32];
        if (!strcmp(w->name, "window_offsets")) continue;
        if (ours(w->name, name, sizeof name)) return gf_fail("%s: weight %s is not one of GrassLM's", g->path, w->name);
        int at = -1;
        for (int k = 0; gf_model_tensor(m, k) && at < 0; k++)
            if (!strcmp(gf_model_tensor(m, k)->name, name)) at = k;
        const gf_tensor_info *ti = at >= 0 ? gf_model_tensor(m, at) : NULL;
        bool same = ti && ti->ndim == w->ndim;
        for (int k = 0; same && k < w->ndim; k++) same = ti->shape[k] == w->shape[k];
        if (!same) return gf_fail("%s: weight %s has no place of its shape in the model its header describes", g->path, w->name);
        if (filled[at]) return gf_fail("%s: weight %s is in it twice", g->path, w->name);
        filled[at] = true;
        for (int64_t k = 0; k < w->numel; k++) ti->data[k] = value(g, w, k);
        ++*copied;
    }
    return 0;
}

/* Every tensor of m filled once from the file's weights (a weight named twice, or a tensor left out, is refused). */
static int copy_all(const gl_file *g, gf_model *m) {
    int64_t copied = 0, expected = 0;
    for (int i = 0; gf_model_tensor(m, i); i++) expected++;
    bool *filled = calloc((size_t)expected + 1, sizeof *filled);
    if (!filled) return gf_fail("out of memory");
    const int rc = copy_each(g, m, filled, &copied);
    free(filled);
    if (rc) return -1;
    if (copied != expected) return gf_fail("%s: %lld of the model's %lld tensors are in it", g->path, (long long)copied, (long long)expected);
    return 0;
}

static gf_model *load(const char *path, gf_tokenizer **tok) {
    gl_file g = {.path = gf_show_name(path)};
    *tok = NULL;
    gf_config cfg;
    gf_model *m = NULL;
    if (!read_file(&g) && !make_config(&g, &cfg) && (m = gf_model_create(&cfg)) && copy_all(&g, m)) {
        gf_model_free(m);
        m = NULL;
    }
    if (m) *tok = gf_import_bert_vocab(path, g.h[H_V]);
    for (int64_t i = 0; g.names && i < g.cap; i++) free(g.names[i]); /* a weight that failed may have its name */
    free(g.names), free(g.w), free(g.buf);
    return m;
}

/* ---- export: a grassflow model of GrassLM's form as a .grasslm file (f32) -------------------------------- */


/* Layer l's one offset, or 0 when the layer is not GrassLM's (a Grassmann mixer with one offset, post-gated,
 * no extra projection, one head, no window, grid or conv, Pluecker coordinates, the per-channel gate and the
 * mean over offsets). */
static int layer_offset(const gf_config *c, int l) {
    char k[11][48], *v;
    const char *keys[11] = {"mixer", "block", "extra_proj", "heads", "window", "grid", "plucker", "gate", "conv",
                            "gate_form", "offset_mix"};
    for (int i = 0; i < 11; i++) snprintf(k[i], sizeof k[i], "layers.%d.%s", l, keys[i]);
    if (!IS(c, k[0], "\"grassmann\"", "") || !IS(c, k[1], "\"post-gated\"", "\"post-gated\"") ||
        !IS(c, k[2], "false", "") || !IS(c, k[3], "1", "") || !IS(c, k[4], "0", "") || !IS(c, k[5], "0", "") ||
        !IS(c, k[6], "true", "") || !IS(c, k[7], "true", "") || !IS(c, k[8], "0", "") ||
        !IS(c, k[9], "\"channel\"", "") || !IS(c, k[10], "\"mean\"", ""))
        return 0;
    snprintf(k[0], sizeof k[0], "layers.%d.offsets", l);
    int o = 0, used = 0;
    v = gf_config_get(c, k[0]);
    const bool one = v && sscanf(v, "[%d]%n", &o, &used) == 1 && used == (int)strlen(v);
    free(v);
    return one ? o : 0;
}

static void put(FILE *f, const void *p, size_t n, int *bad) { *bad |= fwrite(p, 1, n, f) != n; }
static void put32(FILE *f, uint32_t v, int *bad) {
    const unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16), (unsigned char)(v >> 24)};
    put(f, b, 4, bad);
}

static void put_weight(FILE *f, const char *name, const gf_tensor_info *ti, const float *data, int64_t numel, int *bad) {
    put32(f, (uint32_t)strlen(name), bad);
    put(f, name, strlen(name), bad);
    put32(f, (uint32_t)(ti ? ti->ndim : 1), bad);
    for (int d = 0; d < (ti ? ti->ndim : 1); d++) put32(f, (uint32_t)(ti ? ti->shape[d] : numel), bad);
    put(f, data, (size_t)numel * 4, bad); /* little-endian float32, as x86 holds it */
}

static int save(const gf_model *m, const char *path) {
    const gf_config *c = gf_model_config(m);
    if (!gf_import_plain_lm(c, "\"post\""))
        return gf_fail("%s cannot be written as a .grasslm file: GrassLM is a post-norm language model with learned "
                       "positions, a tied head, GELU (erf) and LayerNorm eps 1e-5, one stack", path);
    float offsets[GF_MAX_LAYERS];
    for (int l = 0; l < c->n_layer; l++)
        if (!(offsets[l] = (float)layer_offset(c, l)))
            return gf_fail("%s cannot be written as a .grasslm file: layer %d is not GrassLM's (a Grassmann mixer with "
                           "one offset, post-gated, with its gate and Pluecker coordinates, nothing else)", path, l);
    const gf_tensor_info *red = gf_model_find_tensor(m, "blocks.0.mix.red.weight");
    const gf_tensor_info *f1 = gf_model_find_tensor(m, "blocks.0.ffn.fc1.weight");
    const uint32_t head[9] = {0x4d4c5247u /* GRLM */, 1, (uint32_t)c->n_layer, (uint32_t)c->d_model, (uint32_t)red->shape[0],
                              (uint32_t)f1->shape[0], (uint32_t)c->vocab_size, (uint32_t)c->max_len, 0};
    char tmp[GF_PATH_MAX + 16];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return gf_fail("cannot write %s", tmp);
    int bad = 0;
    for (int i = 0; i < 16; i++) put32(f, i < 9 ? head[i] : 0, &bad);
    int n = 1; /* window_offsets */
    for (int i = 0; gf_model_tensor(m, i); i++) n++;
    put32(f, (uint32_t)n, &bad);
    char theirs[GF_PATH_MAX];
    for (int i = 0; gf_model_tensor(m, i); i++) {
        const gf_tensor_info *ti = gf_model_tensor(m, i);
        if (theirs_of(ti->name, theirs, sizeof theirs)) {
            fclose(f), remove(tmp);
            return gf_fail("%s: tensor %s has no GrassLM name", path, ti->name);
        }
        put_weight(f, theirs, ti, ti->data, ti->numel, &bad);
    }
    put_weight(f, "window_offsets", NULL, offsets, c->n_layer, &bad);
    bad |= fflush(f) != 0 || fsync(fileno(f)) != 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path)) {
        remove(tmp);
        return gf_fail("cannot write %s", path);
    }
    return 0;
}

const gf_importer gf_importer_grasslm = {
    .version = GF_IMPORTER_VERSION,
    .name = "grasslm",
    .what = "a GrassLM model (a .grasslm file of its export.py, f32 or f16)",
    .label = "a GrassLM model",
    .detect = detect,
    .load = load,
    .save = save,
};
