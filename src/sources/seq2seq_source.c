/* Sequence pairs as batches for an encoder-decoder (sources/seq2seq_source.h). */
#include "sources/seq2seq_source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "sources/source.h"

typedef struct {
    gf_source s; /* first: a gf_source * is one of these */
    int64_t n, source_vocab, target_vocab, longest_src, longest_tgt;
    int32_t *src, *tgt, bos, eos;
    int64_t *src_start, *tgt_start;
    char name[64];
    uint64_t seed;
    int64_t *perm, perm_epoch, *rows;
    int32_t *b_src, *b_in, *b_tg; /* the batch filled last */
    uint8_t *b_smask, *b_mask;
    int64_t cap_s, cap_t;
} s2s_source;

static int64_t s2s_n(void *ctx) { return ((s2s_source *)ctx)->n; }

static int reserve(s2s_source *s, int64_t cells_s, int64_t cells_t) {
    if (cells_s > s->cap_s) {
        free(s->b_src), free(s->b_smask);
        s->b_src = malloc((size_t)cells_s * sizeof(int32_t)), s->b_smask = malloc((size_t)cells_s);
        s->cap_s = s->b_src && s->b_smask ? cells_s : 0;
    }
    if (cells_t > s->cap_t) {
        free(s->b_in), free(s->b_tg), free(s->b_mask);
        s->b_in = malloc((size_t)cells_t * sizeof(int32_t)), s->b_tg = malloc((size_t)cells_t * sizeof(int32_t));
        s->b_mask = malloc((size_t)cells_t);
        s->cap_t = s->b_in && s->b_tg && s->b_mask ? cells_t : 0;
    }
    if (s->cap_s < cells_s || s->cap_t < cells_t) return gf_fail("%s: out of memory for a batch", s->name);
    return 0;
}

/* Example e into row r of a batch of sources S long and targets T long (the end included). */
static void put_row(s2s_source *s, int64_t e, int64_t r, int64_t S, int64_t T, int64_t *counted) {
    const int64_t ls = s->src_start[e + 1] - s->src_start[e], lt = s->tgt_start[e + 1] - s->tgt_start[e];
    const int32_t *x = s->src + s->src_start[e], *y = s->tgt + s->tgt_start[e];
    for (int64_t k = 0; k < S; k++) {
        s->b_src[r * S + k] = k < ls ? x[k] : 0;
        s->b_smask[r * S + k] = k < ls;
    }
    for (int64_t k = 0; k < T; k++) {
        s->b_in[r * T + k] = k == 0 ? s->bos : k <= lt ? y[k - 1] : s->eos;
        s->b_tg[r * T + k] = k < lt ? y[k] : k == lt ? s->eos : -1;
        s->b_mask[r * T + k] = k <= lt;
    }
    *counted += lt + 1;
}

static int fill_rows(s2s_source *s, const int64_t *ex, int64_t n, gf_batch *b) {
    int64_t S = 1, T = 1, counted = 0;
    for (int64_t r = 0; r < n; r++) {
        const int64_t ls = s->src_start[ex[r] + 1] - s->src_start[ex[r]], lt = s->tgt_start[ex[r] + 1] - s->tgt_start[ex[r]];
        S = ls > S ? ls : S;
        T = lt + 1 > T ? lt + 1 : T;
    }
    if (reserve(s, n * S, n * T)) return -1;
    for (int64_t r = 0; r < n; r++) put_row(s, ex[r], r, S, T, &counted);
    *b = (gf_batch){.B = n, .T = T, .ids = s->b_in, .targets = s->b_tg, .n_targets = counted, .mask = s->b_mask,
                    .S = S, .source = s->b_src, .source_mask = s->b_smask};
    return 0;
}

static int range_ok(const s2s_source *s, int64_t first, int64_t n) {
    char what[80];
    snprintf(what, sizeof what, "%s:", s->name);
    return gf_source_range(what, first, n, s->n);
}

static int s2s_fill(void *ctx, int64_t epoch, int64_t first, int64_t n, gf_batch *b) {
    s2s_source *s = ctx;
    if (range_ok(s, first, n)) return -1;
    if (gf_epoch_perm(s->name, s->perm, &s->perm_epoch, s->n, s->seed, epoch)) return -1;
    return fill_rows(s, s->perm + first, n, b);
}

static int s2s_fill_eval(void *ctx, int64_t first, int64_t n, gf_batch *b) {
    s2s_source *s = ctx;
    if (range_ok(s, first, n)) return -1;
    for (int64_t r = 0; r < n; r++) s->rows[r] = first + r;
    return fill_rows(s, s->rows, n, b);
}

static int s2s_check(void *ctx, const gf_model *m, gf_source_use use) {
    (void)use;
    const s2s_source *s = ctx;
    const gf_config *c = gf_model_config(m);
    if (c->source_vocab < 1)
        return gf_fail("%s: sequence pairs need an encoder-decoder (source_vocab > 0; docs/model.md, "
                       "\"Encoder-decoders\"), and this model is not one\nHINT: train an encoder-decoder preset (grassflow "
                       "info --presets)", s->name);
    if (c->source_vocab != s->source_vocab || c->vocab_size != s->target_vocab)
        return gf_fail("%s: the data's vocabularies are %lld source and %lld target ids, the model's %lld and %lld\n"
                       "HINT: the model must be made for this data (train sets both from it)", s->name,
                       (long long)s->source_vocab, (long long)s->target_vocab, (long long)c->source_vocab,
                       (long long)c->vocab_size);
    if (c->pos == GF_POS_LEARNED && (s->longest_src > c->max_len || s->longest_tgt + 1 > c->max_len))
        return gf_fail("%s: the longest source is %lld ids and the longest target %lld with its end; the model's "
                       "max_len is %lld (learned positions)\nHINT: --set max_len=%lld", s->name,
                       (long long)s->longest_src, (long long)s->longest_tgt + 1, (long long)c->max_len,
                       (long long)(s->longest_src > s->longest_tgt + 1 ? s->longest_src : s->longest_tgt + 1));
    return 0;
}

static void s2s_destroy(gf_source *src) {
    s2s_source *s = (s2s_source *)src;
    free(s->src), free(s->tgt), free(s->src_start), free(s->tgt_start), free(s->perm), free(s->rows);
    free(s->b_src), free(s->b_in), free(s->b_tg), free(s->b_smask), free(s->b_mask);
    free(s);
}

/* Every example non-empty on the source side, every id in range; the longest of each side. */
static int check_pairs(s2s_source *s, const gf_seq2seq_pairs *p) {
    if (p->n < 1) return gf_fail("%s: no example", s->name);
    if (p->bos < 0 || p->bos >= p->target_vocab || p->eos < 0 || p->eos >= p->target_vocab)
        return gf_fail("%s: bos %d or eos %d outside the target vocabulary", s->name, p->bos, p->eos);
    for (int64_t i = 0; i < p->n; i++) {
        const int64_t ls = p->src_start[i + 1] - p->src_start[i], lt = p->tgt_start[i + 1] - p->tgt_start[i];
        if (ls < 1 || lt < 0) return gf_fail("%s: example %lld has an empty source", s->name, (long long)i + 1);
        for (int64_t k = 0; k < ls; k++)
            if (p->src[p->src_start[i] + k] < 0 || p->src[p->src_start[i] + k] >= p->source_vocab)
                return gf_fail("%s: example %lld: source id outside [0, %lld)", s->name, (long long)i + 1,
                               (long long)p->source_vocab);
        for (int64_t k = 0; k < lt; k++)
            if (p->tgt[p->tgt_start[i] + k] < 0 || p->tgt[p->tgt_start[i] + k] >= p->target_vocab)
                return gf_fail("%s: example %lld: target id outside [0, %lld)", s->name, (long long)i + 1,
                               (long long)p->target_vocab);
        s->longest_src = ls > s->longest_src ? ls : s->longest_src;
        s->longest_tgt = lt > s->longest_tgt ? lt : s->longest_tgt;
    }
    return 0;
}

static int copy_pairs(s2s_source *s, const gf_seq2seq_pairs *p) {
    const int64_t ns = p->src_start[p->n], nt = p->tgt_start[p->n];
    s->src = malloc((size_t)(ns > 0 ? ns : 1) * sizeof(int32_t)), s->tgt = malloc((size_t)(nt > 0 ? nt : 1) * sizeof(int32_t));
    s->src_start = malloc((size_t)(p->n + 1) * sizeof(int64_t)), s->tgt_start = malloc((size_t)(p->n + 1) * sizeof(int64_t));
    s->perm = malloc((size_t)p->n * sizeof(int64_t)), s->rows = malloc((size_t)p->n * sizeof(int64_t));
    if (!s->src || !s->tgt || !s->src_start || !s->tgt_start || !s->perm || !s->rows)
        return gf_fail("%s: out of memory for %lld examples", s->name, (long long)p->n);
    memcpy(s->src, p->src, (size_t)ns * sizeof(int32_t));
    memcpy(s->tgt, p->tgt, (size_t)nt * sizeof(int32_t));
    memcpy(s->src_start, p->src_start, (size_t)(p->n + 1) * sizeof(int64_t));
    memcpy(s->tgt_start, p->tgt_start, (size_t)(p->n + 1) * sizeof(int64_t));
    return 0;
}

int gf_seq2seq_configure(gf_config *cfg, const char *task, int64_t source_vocab, int64_t target_vocab, int64_t longest) {
    if (cfg->source_vocab < 1)
        return gf_fail("--task %s trains an encoder-decoder, and this model is not one (source_vocab 0)\nHINT: --model "
                       "transformer-g2p, grassmann-g2p or gru-g2p (grassflow info --presets; docs/model.md, \"Encoder-decoders\")",
                       task);
    if (target_vocab < 1) return 0; /* a check before the data is read */
    char kv[64];
    snprintf(kv, sizeof kv, "vocab_size=%lld", (long long)target_vocab);
    if (gf_config_set(cfg, kv)) return -1;
    snprintf(kv, sizeof kv, "source_vocab=%lld", (long long)source_vocab);
    if (gf_config_set(cfg, kv)) return -1;
    if (cfg->pos != GF_POS_LEARNED || cfg->max_len >= longest) return 0;
    snprintf(kv, sizeof kv, "max_len=%lld", (long long)longest);
    return gf_config_set(cfg, kv);
}

gf_source *gf_seq2seq_source_create(const gf_seq2seq_pairs *p, uint64_t seed) {
    s2s_source *s = calloc(1, sizeof *s);
    if (!s) {
        gf_fail("out of memory");
        return NULL;
    }
    snprintf(s->name, sizeof s->name, "%s", p->name ? p->name : "sequence pairs");
    if (check_pairs(s, p) || copy_pairs(s, p)) {
        s2s_destroy(&s->s);
        return NULL;
    }
    s->n = p->n, s->source_vocab = p->source_vocab, s->target_vocab = p->target_vocab;
    s->bos = p->bos, s->eos = p->eos, s->seed = seed, s->perm_epoch = -1;
    s->s = (gf_source){.version = GF_SOURCE_VERSION, .ctx = s, .n_examples = s2s_n, .fill = s2s_fill,
                       .n_eval_examples = s2s_n, .fill_eval = s2s_fill_eval, .check = s2s_check,
                       .destroy = s2s_destroy};
    return &s->s;
}
