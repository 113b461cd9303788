/* A source over another source whose batches carry a fixed first stack's output (gf_batch.features),
 * computed once: a frozen backbone under a trained head is then run once per example instead of once per
 * example and epoch (and evaluation). The examples are computed on the first fill, in the batches the
 * trainer (fill's epoch-0 order) or gf_evaluate (the evaluation order) would make of them, one entry per
 * example in that order, each with its key: the row's ids (or vectors), token types and mask up to its last
 * real position. An evaluation batch finds its rows by index and checks their keys, so every row gets the
 * features computed at its own place in its own batch: evaluation through the cache is bit for bit
 * evaluation without it under any BLAS kernel, even for an example that occurs twice (sgemm may round a row
 * differently at another place in the batch). A training batch (shuffled) finds its rows by key (the first
 * example with that key). A batch whose rows are all known gets their features (padding after the last real
 * position is 0); otherwise it goes without, and the model computes them itself. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/mem.h"
#include "io/text.h"
#include "sources/source.h"

typedef struct {
    uint64_t hash;
    int64_t len;        /* positions kept: up to the row's last real one */
    int64_t pos;        /* its first position in feat (len x width floats) */
    int64_t key;        /* its key's first byte in keys */
} entry;

typedef struct {
    gf_source *inner;
    bool owns;                 /* inner is freed with the cache (gf_feature_source_create), or borrowed */
    gf_model *m;
    gf_source_use use;  /* GF_USE_TRAIN: fill's epoch-0 examples; GF_USE_EVAL: the evaluation examples */
    int64_t batch, width, d_input;
    int64_t max_rows, max_pos, max_keys;   /* what the counting pass found (duplicates included) */
    entry *e;
    int64_t n_e, *table, cap;              /* open addressing over e: an index, or -1 */
    float *feat;
    int64_t n_pos;
    uint8_t *keys;
    int64_t n_keys;
    bool built;
    float *buf;                            /* the features of the last batch filled */
    int64_t buf_floats;
    uint8_t *key;                          /* a row's key, to look it up (max_key bytes: the longest seen) */
    int64_t max_key;
} feature_source;

/* ---- a row's key --------------------------------------------------------------------------------------- */

/* Positions up to row r's last real one (all T without a mask; 0 for a row of padding only). */
static int64_t row_len(const gf_batch *b, int64_t r) {
    int64_t len = b->T;
    while (b->mask && len > 0 && !b->mask[r * b->T + len - 1]) len--;
    return len;
}

static int64_t key_bytes(const feature_source *s, int64_t len) {
    return len * ((s->d_input ? s->d_input * (int64_t)sizeof(float) : (int64_t)sizeof(int32_t)) + 2);
}

/* Row r's key (key_bytes(len) bytes: inputs, token types, mask) into out. */
static void row_key(const feature_source *s, const gf_batch *b, int64_t r, int64_t len, uint8_t *out) {
    const int64_t n = r * b->T;
    if (s->d_input) {
        memcpy(out, b->vectors + n * s->d_input, (size_t)(len * s->d_input) * sizeof(float));
        out += len * s->d_input * (int64_t)sizeof(float);
    } else {
        memcpy(out, b->ids + n, (size_t)len * sizeof(int32_t));
        out += len * (int64_t)sizeof(int32_t);
    }
    for (int64_t t = 0; t < len; t++) out[t] = b->segments ? b->segments[n + t] : 0;
    for (int64_t t = 0; t < len; t++) out[len + t] = b->mask ? b->mask[n + t] : 1;
}

static uint64_t fnv1a(const uint8_t *p, int64_t n, int64_t len) { return gf_hash_bytes(p, (size_t)n, (uint64_t)len); }

/* The entry whose key is key (n bytes, len positions), or -1; *slot: where it is or would go. */
static int64_t find(const feature_source *s, const uint8_t *key, int64_t n, int64_t len, uint64_t h, int64_t *slot) {
    for (int64_t i = (int64_t)(h & (uint64_t)(s->cap - 1));; i = (i + 1) & (s->cap - 1)) {
        const int64_t k = s->table[i];
        *slot = i;
        if (k < 0) return -1;
        const entry *e = &s->e[k];
        if (e->hash == h && e->len == len && !memcmp(s->keys + e->key, key, (size_t)n)) return k;
    }
}

/* ---- counting, then computing once ------------------------------------------------------------------- */

static int fill_inner(feature_source *s, int64_t first, int64_t n, gf_batch *b) {
    const int rc = s->use == GF_USE_TRAIN ? gf_source_fill(s->inner, 0, first, n, b)
                                          : gf_source_fill_eval(s->inner, first, n, b);
    return rc ? rc : gf_batch_check(b, false, "the source under the feature cache");
}

static int64_t n_used(feature_source *s) {
    return s->use == GF_USE_TRAIN ? s->inner->n_examples(s->inner->ctx) : gf_source_n_eval(s->inner);
}

/* fn on every example of the split, in batches of s->batch (the same batches each time). */
static int each_batch(feature_source *s, int (*fn)(feature_source *s, gf_batch *b)) {
    const int64_t n = n_used(s);
    for (int64_t k = 0; k < n; k += s->batch) {
        gf_batch b;
        if (fill_inner(s, k, n - k < s->batch ? n - k : s->batch, &b) || fn(s, &b)) return -1;
    }
    return 0;
}

/* Rows, positions and key bytes of a batch, to size the cache before anything is computed. */
static int count_batch(feature_source *s, gf_batch *b) {
    for (int64_t r = 0; r < b->B; r++) {
        const int64_t len = row_len(b, r), nk = key_bytes(s, len);
        s->max_rows++;
        s->max_pos += len;
        s->max_keys += nk;
        s->max_key = nk > s->max_key ? nk : s->max_key;
    }
    return 0;
}

static size_t cache_bytes(const feature_source *s, int64_t cap) {
    return (size_t)(s->max_pos * s->width) * sizeof(float) + (size_t)s->max_keys +
           (size_t)s->max_rows * sizeof(entry) + (size_t)cap * sizeof(int64_t) + (size_t)s->max_key;
}

/* Keep the features of batch b's rows that are not kept yet (from the forward the model just ran). */
static void keep(feature_source *s, const gf_batch *b, const float *out) {
    for (int64_t r = 0; r < b->B; r++) {
        const int64_t len = row_len(b, r), nk = key_bytes(s, len);
        if (s->n_e == s->max_rows || s->n_pos + len > s->max_pos || s->n_keys + nk > s->max_keys)
            return; /* a source whose rows changed since they were counted: keep what fits */
        uint8_t *key = s->keys + s->n_keys;
        row_key(s, b, r, len, key);
        const uint64_t h = fnv1a(key, nk, len);
        int64_t slot;
        if (find(s, key, nk, len, h, &slot) < 0) s->table[slot] = s->n_e; /* found by key: the first of equals */
        s->e[s->n_e++] = (entry){.hash = h, .len = len, .pos = s->n_pos, .key = s->n_keys};
        memcpy(s->feat + s->n_pos * s->width, out + r * b->T * s->width, (size_t)(len * s->width) * sizeof(float));
        s->n_pos += len;
        s->n_keys += nk;
    }
}

/* One forward of a batch (dropout off), keeping its rows' first-stack output. */
static int build_batch(feature_source *s, gf_batch *b) {
    int64_t B, T, w;
    b->features = NULL;
    if (gf_model_forward_batch(s->m, b, NULL)) return -1;
    keep(s, b, gf_model_stack_output(s->m, 0, &B, &T, &w));
    return 0;
}

/* Run every example through the model once, in the batches the trainer or gf_evaluate make of them, so
 * that evaluation gets bit for bit the features it would compute itself. */
static int build(feature_source *s) {
    s->n_e = s->n_pos = s->n_keys = 0; /* from the start, after a build that failed too */
    for (int64_t i = 0; i < s->cap; i++) s->table[i] = -1;
    gf_model_set_training(s->m, false, 0, 0);
    if (each_batch(s, build_batch)) return -1;
    s->built = true;
    return 0;
}

/* ---- the source ---------------------------------------------------------------------------------------- */

/* The entry of a row whose key (nk bytes, len positions) is in s->key: entry `index` if its key is that
 * (index >= 0), or else the first entry with that key; -1 if the cache does not hold it. */
static int64_t lookup(const feature_source *s, int64_t index, int64_t nk, int64_t len) {
    if (index < 0) {
        int64_t slot;
        return find(s, s->key, nk, len, fnv1a(s->key, nk, len), &slot);
    }
    if (index >= s->n_e) return -1;
    const entry *e = &s->e[index];
    return e->len == len && !memcmp(s->keys + e->key, s->key, (size_t)nk) ? index : -1;
}

/* b's rows' features into s->buf and b->features, if every row is known; first: the index of b's first
 * row among the examples the cache was built from, or -1 to find rows by key. */
static int attach(feature_source *s, gf_batch *b, int64_t first) {
    b->features = NULL;
    const int64_t need = b->B * b->T * s->width;
    if (need > s->buf_floats) {
        gf_free(s->buf);
        s->buf_floats = 0;
        if (!(s->buf = gf_alloc_floats(need, "a batch of cached features"))) return -1;
        s->buf_floats = need;
    }
    for (int64_t r = 0; r < b->B; r++) {
        const int64_t len = row_len(b, r), nk = key_bytes(s, len);
        int64_t k = -1;
        if (nk <= s->max_key) { /* a longer row was not seen when the cache was made */
            row_key(s, b, r, len, s->key);
            k = lookup(s, first < 0 ? -1 : first + r, nk, len);
        }
        if (k < 0) return 0; /* a row not seen when the cache was made: the model computes this batch */
        float *dst = s->buf + r * b->T * s->width;
        memcpy(dst, s->feat + s->e[k].pos * s->width, (size_t)(len * s->width) * sizeof(float));
        memset(dst + len * s->width, 0, (size_t)((b->T - len) * s->width) * sizeof(float));
    }
    b->features = s->buf;
    return 0;
}

static int64_t fs_n(void *ctx) { return ((feature_source *)ctx)->inner->n_examples(((feature_source *)ctx)->inner->ctx); }

static int fs_fill(void *ctx, int64_t epoch, int64_t first, int64_t n, gf_batch *b) {
    feature_source *s = ctx;
    if (!s->built && build(s)) return -1; /* before the fill: building fills the inner source's batch too */
    return gf_source_fill(s->inner, epoch, first, n, b) ? -1 : attach(s, b, -1);
}

static int64_t fs_n_eval(void *ctx) { return gf_source_n_eval(((feature_source *)ctx)->inner); }

static int fs_fill_eval(void *ctx, int64_t first, int64_t n, gf_batch *b) {
    feature_source *s = ctx;
    if (!s->built && build(s)) return -1;
    return gf_source_fill_eval(s->inner, first, n, b) ? -1 : attach(s, b, s->use == GF_USE_EVAL ? first : -1);
}

static int fs_check(void *ctx, const gf_model *m, gf_source_use use) {
    feature_source *s = ctx;
    if (m != s->m)
        return gf_fail("the feature cache was made for another model; its features would be that model's");
    return s->inner->check ? s->inner->check(s->inner->ctx, m, use) : 0;
}

static void fs_free(feature_source *s) {
    free(s->e);
    free(s->table);
    gf_free(s->feat);
    free(s->keys);
    free(s->key);
    gf_free(s->buf);
    free(s);
}

static void fs_destroy(gf_source *src) {
    feature_source *s = src->ctx;
    if (s->owns) gf_source_free(s->inner);
    fs_free(s);
    free(src);
}

static int fs_alloc(feature_source *s, size_t max_bytes, size_t *bytes) {
    s->cap = 16;
    while (s->cap < 2 * s->max_rows) s->cap *= 2;
    *bytes = cache_bytes(s, s->cap);
    if (*bytes > max_bytes)
        return gf_fail("the first stack's output for %lld examples (%lld positions of %lld floats) would take "
                       "%.1f MiB, more than the %.1f MiB allowed", (long long)s->max_rows, (long long)s->max_pos,
                       (long long)s->width, (double)*bytes / 1048576.0, (double)max_bytes / 1048576.0);
    s->e = malloc((size_t)(s->max_rows ? s->max_rows : 1) * sizeof(entry));
    s->table = malloc((size_t)s->cap * sizeof(int64_t));
    s->keys = malloc((size_t)(s->max_keys ? s->max_keys : 1));
    s->key = malloc((size_t)(s->max_key ? s->max_key : 1));
    s->feat = gf_alloc_floats(s->max_pos * s->width > 0 ? s->max_pos * s->width : 1, "the feature cache");
    if (!s->e || !s->table || !s->keys || !s->key || !s->feat) return gf_fail("out of memory for the feature cache");
    return 0;
}

gf_source *gf_feature_source_create(gf_model *m, gf_source *inner, gf_source_use use, int64_t batch,
                                    size_t max_bytes, size_t *bytes) {
    return gf_feature_source_wrap(m, inner, use, batch, max_bytes, bytes, true);
}

gf_source *gf_feature_source_wrap(gf_model *m, gf_source *inner, gf_source_use use, int64_t batch, size_t max_bytes,
                                  size_t *bytes, bool owns) {
    if (!m || gf_source_validate(inner, "the source under the feature cache")) return NULL;
    if (!gf_model_first_stack_fixed(m)) {
        gf_fail("a feature cache needs a model whose first stack is frozen under further stacks");
        return NULL;
    }
    if (batch < 1) {
        gf_fail("feature cache: batch is %lld; expected at least 1", (long long)batch);
        return NULL;
    }
    feature_source *s = calloc(1, sizeof *s);
    gf_source *src = calloc(1, sizeof *src);
    const gf_config *c = gf_model_config(m);
    size_t got = 0;
    if (!s || !src) gf_fail("out of memory for a feature cache");
    else {
        *s = (feature_source){.inner = inner, .owns = owns, .m = m, .use = use, .batch = batch, .width = gf_stack_dim(c, 0),
                              .d_input = c->input == GF_INPUT_VECTORS ? c->d_input : 0};
        if (!each_batch(s, count_batch) && !fs_alloc(s, max_bytes, &got)) {
            *src = (gf_source){.version = GF_SOURCE_VERSION, .ctx = s, .n_examples = fs_n, .fill = fs_fill,
                               .check = fs_check, .destroy = fs_destroy};
            if (inner->fill_eval) src->n_eval_examples = fs_n_eval, src->fill_eval = fs_fill_eval;
            if (bytes) *bytes = got;
            return src;
        }
    }
    if (s) fs_free(s);
    free(src);
    return NULL;
}
