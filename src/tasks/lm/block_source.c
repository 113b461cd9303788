/* The language-model data source over an int32 token array: training examples are contiguous,
 * non-overlapping blocks of L + 1 tokens in an order shuffled per epoch. Evaluation examples, by the
 * protocol (tasks/lm/lm_source.h): GF_LM_STRIDE, blocks of L + 1 tokens with stride L (every token but the
 * first predicted once, the last block short); GF_LM_CHUNKS, the reproductions' non-overlapping chunks of L
 * tokens with the remainder dropped, each predicting its L - 1 tokens after the first. */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "sources/source.h"
#include "tasks/lm/lm_source.h"

typedef struct block_source {
    gf_source s;            /* first: a gf_source * is a block_source * */
    const int32_t *ids;     /* (n) borrowed */
    int64_t n, L, n_blocks;
    int64_t row;            /* the longest block it can fill: min(L, n - 1), so a split shorter than L
                             * costs what it holds, not what --seq-len says */
    int32_t max_id;         /* -1 for no tokens */
    uint64_t seed;
    int64_t *perm;          /* (n_blocks) the order of epoch perm_epoch */
    int64_t perm_epoch;     /* -1: none computed yet */
    int32_t *in, *tg;       /* (cap_rows, L) the batch the source filled last */
    int64_t cap_rows;
    int chunks;             /* evaluation in GF_LM_CHUNKS */
    int32_t *owned;         /* ids when the source made them (NULL: borrowed) */
} block_source;

static int64_t lm_n_examples(void *ctx) { return ((block_source *)ctx)->n_blocks; }

static int64_t lm_n_eval(void *ctx) {
    const block_source *s = ctx;
    if (s->chunks) return s->L < 2 ? 0 : s->n / s->L; /* chunk k predicts tokens k*L+1 .. k*L+L-1 */
    return s->n < 2 ? 0 : (s->n - 1 + s->L - 1) / s->L; /* block k predicts tokens k*L+1 .. k*L+L */
}

/* Room for rows x L ids and targets. */
static int lm_reserve(block_source *s, int64_t rows) {
    if (rows <= s->cap_rows) return 0;
    int32_t *in = realloc(s->in, (size_t)(rows * s->row) * sizeof *in);
    if (in) s->in = in;
    int32_t *tg = in ? realloc(s->tg, (size_t)(rows * s->row) * sizeof *tg) : NULL;
    if (!tg)
        return gf_fail("block source: out of memory for a batch of %lld x %lld tokens", (long long)rows, (long long)s->row);
    s->tg = tg;
    s->cap_rows = rows;
    return 0;
}

static int lm_range(int64_t first, int64_t n, int64_t count, const char *what) {
    char name[48];
    snprintf(name, sizeof name, "block source: %s", what);
    return gf_source_range(name, first, n, count);
}

static void lm_batch(const block_source *s, int64_t rows, int64_t T, int64_t counted, gf_batch *b) {
    *b = (gf_batch){.B = rows, .T = T, .ids = s->in, .targets = s->tg, .n_targets = counted};
}

static int lm_fill(void *ctx, int64_t epoch, int64_t first, int64_t n, gf_batch *b) {
    block_source *s = ctx;
    const int64_t L = s->L;
    if (lm_range(first, n, s->n_blocks, "training") || lm_reserve(s, n)) return -1;
    if (gf_epoch_perm("block source", s->perm, &s->perm_epoch, s->n_blocks, s->seed, epoch)) return -1;
    for (int64_t r = 0; r < n; r++) {
        const int32_t *src = s->ids + s->perm[first + r] * (L + 1);
        memcpy(s->in + r * L, src, (size_t)L * sizeof *s->in);
        memcpy(s->tg + r * L, src + 1, (size_t)L * sizeof *s->tg);
    }
    lm_batch(s, n, L, n * L, b);
    return 0;
}

/* Chunks k = first .. first+n-1 of L tokens: inputs its first L - 1, targets its last L - 1. A causal model's
 * outputs at those positions are the ones it gives the whole chunk (the last output, which has no target, is
 * not computed). */
static void fill_chunks(block_source *s, int64_t first, int64_t n, gf_batch *b) {
    const int64_t L = s->L, T = L - 1;
    for (int64_t r = 0; r < n; r++) {
        const int32_t *src = s->ids + (first + r) * L;
        memcpy(s->in + r * T, src, (size_t)T * sizeof *s->in);
        memcpy(s->tg + r * T, src + 1, (size_t)T * sizeof *s->tg);
    }
    lm_batch(s, n, T, n * T, b);
}

static int lm_fill_eval(void *ctx, int64_t first, int64_t n, gf_batch *b) {
    block_source *s = ctx;
    const int64_t L = s->L;
    if (lm_range(first, n, lm_n_eval(s), "evaluation") || lm_reserve(s, n)) return -1;
    if (s->chunks) {
        fill_chunks(s, first, n, b);
        return 0;
    }
    /* only the last block may be short: pad it and ignore the padding. The rows are as long as the
     * first (L, unless the batch is that one short block alone). */
    const int64_t T = s->n - 1 - first * L < L ? s->n - 1 - first * L : L;
    int64_t counted = 0;
    for (int64_t r = 0; r < n; r++) {
        const int64_t start = (first + r) * L, len = s->n - 1 - start < L ? s->n - 1 - start : L;
        for (int64_t t = 0; t < T; t++) {
            s->in[r * T + t] = t < len ? s->ids[start + t] : 0;
            s->tg[r * T + t] = t < len ? s->ids[start + t + 1] : -1;
        }
        counted += len;
    }
    lm_batch(s, n, T, counted, b);
    return 0;
}

static int lm_check(void *ctx, const gf_model *m, gf_source_use use) {
    const block_source *s = ctx;
    const gf_config *c = gf_model_config(m);
    if (!gf_model_predicts_next_token(m))
        return gf_fail("the token-block source (blocks of a token stream) needs a model whose head predicts the "
                       "next token (next_token); this model's head is %s", c->head_kind);
    if (c->pos == GF_POS_LEARNED && s->L > c->max_len)
        return gf_fail("--seq-len %lld is above the model's max_len %lld\nHINT: lower --seq-len or --set max_len=%lld",
                       (long long)s->L, (long long)c->max_len, (long long)s->L);
    if (use == GF_USE_TRAIN && s->n_blocks < 1)
        return gf_fail("the training split has %lld tokens, fewer than one block of --seq-len + 1 = %lld",
                       (long long)s->n, (long long)(s->L + 1));
    if (use == GF_USE_EVAL && s->n < 2)
        return gf_fail("evaluation split has %lld tokens; at least 2 are needed", (long long)s->n);
    if (use == GF_USE_EVAL && s->chunks && lm_n_eval(ctx) < 1)
        return gf_fail("--eval-blocks chunks: the evaluation split has %lld tokens, fewer than one chunk of --seq-len "
                       "%lld (and a chunk needs 2 tokens)\nHINT: a shorter --seq-len, or --eval-blocks stride, which "
                       "scores a short split whole", (long long)s->n, (long long)s->L);
    if (s->max_id >= c->vocab_size)
        return gf_fail("the token ids go up to %d, outside the model's vocabulary [0, %lld)\nHINT: set vocab_size "
                       "to at least %lld", s->max_id, (long long)c->vocab_size, (long long)s->max_id + 1);
    return 0;
}

static void lm_destroy(gf_source *src) {
    block_source *s = (block_source *)src;
    free(s->perm);
    free(s->in);
    free(s->tg);
    free(s->owned);
    free(s);
}

gf_source *gf_block_source_create(const int32_t *ids, int64_t n, int64_t seq_len, uint64_t seed) {
    if (seq_len < 1 || n < 0 || (n > 0 && !ids)) {
        gf_fail("block source: %lld tokens at %p with seq_len %lld; expected n >= 0 tokens (non-NULL if n > 0) and "
                "seq_len >= 1", (long long)n, (const void *)ids, (long long)seq_len);
        return NULL;
    }
    int32_t max_id = -1;
    for (int64_t i = 0; i < n; i++) {
        if (ids[i] < 0) {
            gf_fail("block source: token id %d at position %lld; expected ids >= 0", ids[i], (long long)i);
            return NULL;
        }
        max_id = ids[i] > max_id ? ids[i] : max_id;
    }
    block_source *s = calloc(1, sizeof *s);
    const int64_t n_blocks = n / (seq_len + 1);
    if (!s || !(s->perm = malloc((size_t)(n_blocks > 0 ? n_blocks : 1) * sizeof *s->perm))) {
        free(s);
        gf_fail("out of memory creating a token-block source of %lld tokens", (long long)n);
        return NULL;
    }
    s->s = (gf_source){.version = 1, .ctx = s, .n_examples = lm_n_examples, .fill = lm_fill,
                       .n_eval_examples = lm_n_eval, .fill_eval = lm_fill_eval, .check = lm_check,
                       .destroy = lm_destroy};
    s->ids = ids;
    s->n = n;
    s->L = seq_len;
    s->row = n - 1 < seq_len ? (n > 1 ? n - 1 : 1) : seq_len;
    s->n_blocks = n_blocks;
    s->max_id = max_id;
    s->seed = seed;
    s->perm_epoch = -1;
    return &s->s;
}

gf_source *gf_lm_source_create(const int32_t *ids, int64_t n, int64_t seq_len, uint64_t seed, int blocks,
                               int32_t first, int32_t last) {
    int32_t *own = NULL;
    if (first >= 0 || last >= 0) {
        if (n < 0 || (n > 0 && !ids) || !(own = malloc((size_t)(n + 2) * sizeof *own))) {
            gf_fail("block source: out of memory (or a NULL array) for %lld tokens", (long long)n);
            return NULL;
        }
        int64_t k = 0;
        if (first >= 0) own[k++] = first;
        if (n > 0) memcpy(own + k, ids, (size_t)n * sizeof *own);
        k += n;
        if (last >= 0) own[k++] = last;
        ids = own;
        n = k;
    }
    block_source *s = (block_source *)gf_block_source_create(ids, n, seq_len, seed);
    if (!s) {
        free(own);
        return NULL;
    }
    s->owned = own;
    s->chunks = blocks == GF_LM_CHUNKS;
    return &s->s;
}
