/* The sentence-pair (NLI) data source: each example is [CLS] premise [SEP] hypothesis [SEP] in WordPiece
 * ids, as BERT reads a pair, with segment ids 0 for "[CLS] premise [SEP]" and 1 for "hypothesis [SEP]",
 * one label, and a padding mask. Every pair is tokenized once, when the source is made; a sentence longer
 * than max_sent pieces is cut to its first max_sent (and counted). A batch is as long as its longest pair. */
#include "tasks/snli/pair_source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "sources/source.h"

typedef struct pair_source {
    gf_source s;               /* first: a gf_source * is a pair_source * */
    int64_t n;                 /* pairs */
    int32_t *ids;              /* every pair's premise pieces then hypothesis pieces */
    int64_t *start;            /* (n + 1) pair i: ids[start[i] .. start[i] + len_p[i] + len_h[i]) */
    int32_t *len_p, *len_h;
    int8_t *label;
    int32_t cls, sep, pad;
    int64_t max_id, longest;   /* the longest example, with its 3 special tokens */
    uint64_t seed;
    int64_t *perm, perm_epoch;
    int32_t *in, *tg;          /* the batch the source filled last */
    uint8_t *mask, *seg;
    int64_t cap;
    gf_pair_source_stats stats;
} pair_source;

static int64_t nli_n(void *ctx) { return ((pair_source *)ctx)->n; }

/* Room for a batch of `cells` positions and `rows` targets. */
static int nli_reserve(pair_source *s, int64_t cells) {
    if (cells <= s->cap) return 0;
    free(s->in);
    free(s->mask);
    free(s->seg);
    s->in = malloc((size_t)cells * sizeof *s->in);
    s->mask = malloc((size_t)cells);
    s->seg = malloc((size_t)cells);
    int32_t *tg = realloc(s->tg, (size_t)cells * sizeof *s->tg); /* rows <= cells */
    if (tg) s->tg = tg;
    s->cap = s->in && s->mask && s->seg && tg ? cells : 0;
    return s->cap ? 0 : gf_fail("pair source: out of memory for a batch of %lld positions", (long long)cells);
}

/* One pair as BERT reads it, padded to T (>= lp + lh + 3): [CLS] p [SEP] h [SEP] [PAD]..., token types 0
 * then 1 (0 on padding), mask 1 on the pair. */
static void lay_out(int32_t cls, int32_t sep, int32_t pad, const int32_t *p, int64_t lp, const int32_t *h, int64_t lh,
                    int64_t T, int32_t *in, uint8_t *m, uint8_t *g) {
    int64_t t = 0;
    in[t++] = cls;
    for (int64_t k = 0; k < lp; k++) in[t++] = p[k];
    in[t++] = sep;
    const int64_t first_b = t;
    for (int64_t k = 0; k < lh; k++) in[t++] = h[k];
    in[t++] = sep;
    for (int64_t k = 0; k < T; k++) {
        if (k >= t) in[k] = pad;
        m[k] = k < t;
        g[k] = k >= first_b && k < t;
    }
}

/* Example `pair` into row b of a (B, T) batch. */
static void put_row(pair_source *s, int64_t pair, int64_t b, int64_t T) {
    const int32_t *p = s->ids + s->start[pair];
    lay_out(s->cls, s->sep, s->pad, p, s->len_p[pair], p + s->len_p[pair], s->len_h[pair], T, s->in + b * T,
            s->mask + b * T, s->seg + b * T);
    s->tg[b] = s->label[pair];
}

static int fill_rows(pair_source *s, const int64_t *pairs, int64_t n, gf_batch *b) {
    int64_t T = 0;
    for (int64_t r = 0; r < n; r++) {
        const int64_t len = s->len_p[pairs[r]] + s->len_h[pairs[r]] + 3;
        T = len > T ? len : T;
    }
    if (nli_reserve(s, n * T)) return -1;
    int64_t labelled = 0;
    for (int64_t r = 0; r < n; r++) {
        put_row(s, pairs[r], r, T);
        labelled += s->tg[r] >= 0; /* a pair of a file read whole may have no label (-1): not counted */
    }
    *b = (gf_batch){.B = n, .T = T, .ids = s->in, .targets = s->tg, .n_targets = labelled, .mask = s->mask,
                    .segments = s->seg};
    return 0;
}

static int nli_range(const pair_source *s, int64_t first, int64_t n) {
    return gf_source_range("pair source:", first, n, s->n);
}

static int nli_fill(void *ctx, int64_t epoch, int64_t first, int64_t n, gf_batch *b) {
    pair_source *s = ctx;
    if (nli_range(s, first, n)) return -1;
    if (gf_epoch_perm("pair source", s->perm, &s->perm_epoch, s->n, s->seed, epoch)) return -1;
    return fill_rows(s, s->perm + first, n, b);
}

static int nli_fill_eval(void *ctx, int64_t first, int64_t n, gf_batch *b) {
    pair_source *s = ctx;
    if (nli_range(s, first, n)) return -1;
    int64_t *pairs = malloc((size_t)n * sizeof *pairs);
    if (!pairs) return gf_fail("pair source: out of memory");
    for (int64_t r = 0; r < n; r++) pairs[r] = first + r;
    int rc = fill_rows(s, pairs, n, b);
    free(pairs);
    return rc;
}

static int nli_check(void *ctx, const gf_model *m, gf_source_use use) {
    (void)use;
    const pair_source *s = ctx;
    const gf_config *c = gf_model_config(m);
    if (gf_model_predicts_next_token(m) || gf_model_n_outputs(m) != GF_NLI_CLASSES)
        return gf_fail("the pair source gives one of 3 labels per pair (entailment, neutral, contradiction); the "
                       "model needs the classify head with n_classes 3 (head %s here)", c->head_kind);
    if (s->max_id >= c->vocab_size)
        return gf_fail("the pairs' WordPiece ids go up to %lld, outside the model's vocabulary [0, %lld)\nHINT: the "
                       "model's vocab_size must be the tokenizer's (%lld)", (long long)s->max_id,
                       (long long)c->vocab_size, (long long)s->max_id + 1);
    if (c->pos == GF_POS_LEARNED && s->longest > c->max_len)
        return gf_fail("the longest pair is %lld tokens with [CLS] and two [SEP], above the model's max_len %lld\n"
                       "HINT: keep fewer pieces per sentence (--max-sent), or train a model with room for them: "
                       "grassflow train --set max_len=%lld", (long long)s->longest,
                       (long long)c->max_len, (long long)s->longest);
    return 0;
}

static void nli_destroy(gf_source *src) {
    pair_source *s = (pair_source *)src;
    free(s->ids);
    free(s->start);
    free(s->len_p);
    free(s->len_h);
    free(s->label);
    free(s->perm);
    free(s->in);
    free(s->tg);
    free(s->mask);
    free(s->seg);
    free(s);
}

/* The pieces of one sentence, cut to max_sent, appended at ids[*at]; *cut set if it was cut. */
static int encode_sentence(pair_source *s, const gf_tokenizer *tok, const char *text, const char *what,
                           int64_t max_sent, int64_t *cap, int64_t *at, int32_t *len, bool *cut) {
    int32_t *ids;
    int64_t n;
    if (gf_tokenizer_encode(tok, text, strlen(text), what, &ids, &n)) return -1;
    *cut = *cut || n > max_sent;
    n = n > max_sent ? max_sent : n;
    if (*at + n > *cap) {
        int64_t nc = *cap * 2 > *at + n ? *cap * 2 : *at + n;
        int32_t *g = realloc(s->ids, (size_t)nc * sizeof *g);
        if (!g) {
            free(ids);
            return gf_fail("pair source: out of memory tokenizing %s", what);
        }
        s->ids = g;
        *cap = nc;
    }
    for (int64_t k = 0; k < n; k++) s->max_id = ids[k] > s->max_id ? ids[k] : s->max_id;
    if (n) memcpy(s->ids + *at, ids, (size_t)n * sizeof *ids);
    free(ids);
    *at += n;
    *len = (int32_t)n;
    return 0;
}

static int tokenize_pairs(pair_source *s, const gf_nli_split *sp, const gf_tokenizer *tok, int64_t max_sent) {
    /* about 24 pieces a pair in SNLI; never more than the text has bytes (a piece takes at least one) */
    int64_t cap = (sp->n * 24 < sp->text_len ? sp->n * 24 : sp->text_len) + 16, at = 0;
    s->ids = malloc((size_t)cap * sizeof *s->ids);
    if (!s->ids) return gf_fail("pair source: out of memory for %lld pairs", (long long)sp->n);
    for (int64_t i = 0; i < sp->n; i++) {
        char what[GF_PATH_MAX + 48];
        snprintf(what, sizeof what, "%s, kept pair %lld", sp->path, (long long)i + 1);
        bool cut = false;
        s->start[i] = at;
        if (encode_sentence(s, tok, gf_nli_premise(sp, i), what, max_sent, &cap, &at, &s->len_p[i], &cut) ||
            encode_sentence(s, tok, gf_nli_hypothesis(sp, i), what, max_sent, &cap, &at, &s->len_h[i], &cut))
            return -1;
        s->stats.truncated += cut;
        const int64_t len = s->len_p[i] + s->len_h[i] + 3;
        s->longest = len > s->longest ? len : s->longest;
        s->stats.tokens += len;
    }
    s->start[sp->n] = at;
    return 0;
}

static int special(const gf_tokenizer *tok, const char *piece, int32_t *id) {
    *id = gf_tokenizer_find(tok, piece, strlen(piece));
    if (*id < 0)
        return gf_fail("the tokenizer has no %s token; sentence pairs are read as BERT reads them ([CLS] premise "
                       "[SEP] hypothesis [SEP])\nHINT: use a WordPiece tokenizer with a BERT vocab.txt "
                       "(wordpiece:data/bert-base-uncased/vocab.txt)", piece);
    return 0;
}

int gf_nli_encode_pair(const gf_tokenizer *tok, const char *premise, const char *hypothesis, int64_t max_sent,
                       int32_t **ids, uint8_t **segments, int64_t *n) {
    int32_t cls, sep, pad, *p = NULL, *h = NULL;
    int64_t lp = 0, lh = 0;
    *ids = NULL;
    *segments = NULL;
    if (max_sent < 1) /* lp = min(pieces, max_sent) below: a negative one sized the buffers short */
        return gf_fail("a sentence pair: max_sent is %lld; expected at least 1 piece per sentence", (long long)max_sent);
    if (special(tok, "[CLS]", &cls) || special(tok, "[SEP]", &sep) || special(tok, "[PAD]", &pad) ||
        gf_tokenizer_encode(tok, premise, strlen(premise), "the premise", &p, &lp) ||
        gf_tokenizer_encode(tok, hypothesis, strlen(hypothesis), "the hypothesis", &h, &lh)) {
        free(p);
        return -1;
    }
    lp = lp < max_sent ? lp : max_sent;
    lh = lh < max_sent ? lh : max_sent;
    *n = lp + lh + 3;
    *ids = malloc((size_t)*n * sizeof **ids);
    *segments = malloc((size_t)*n);
    uint8_t *mask = malloc((size_t)*n);
    int rc = *ids && *segments && mask ? 0 : gf_fail("out of memory encoding a pair");
    if (!rc) lay_out(cls, sep, pad, p, lp, h, lh, *n, *ids, mask, *segments);
    free(mask);
    free(p);
    free(h);
    return rc;
}

int gf_encode_single(const gf_tokenizer *tok, const char *text, size_t len, const char *what, int32_t **ids,
                     int64_t *n) {
    int32_t *raw;
    int64_t k;
    *ids = NULL;
    if (gf_tokenizer_encode(tok, text, len, what, &raw, &k)) return -1;
    const int32_t cls = gf_tokenizer_find(tok, "[CLS]", 5), sep = gf_tokenizer_find(tok, "[SEP]", 5);
    const int wrap = cls >= 0 && sep >= 0; /* a BERT vocabulary: one sentence is [CLS] text [SEP] */
    *n = k + 2 * wrap;
    if (*n == 0) return gf_fail("%s: no tokens; give a non-empty text", what ? what : "text");
    *ids = malloc((size_t)*n * sizeof **ids);
    if (*ids && wrap) (*ids)[0] = cls, (*ids)[k + 1] = sep;
    if (*ids && k) memcpy(*ids + wrap, raw, (size_t)k * sizeof *raw);
    free(raw);
    return *ids ? 0 : gf_fail("out of memory encoding a text of %lld tokens", (long long)k);
}

gf_source *gf_pair_source_create(const gf_nli_split *sp, const gf_tokenizer *tok, int64_t max_sent, uint64_t seed,
                                gf_pair_source_stats *stats) {
    if (max_sent < 1) {
        gf_fail("pair source: %lld pieces per sentence; expected at least 1", (long long)max_sent);
        return NULL;
    }
    if (sp->n < 1) {
        gf_fail("%s: no pair to use (rows %lld: labelled - for no consensus %lld, with an empty sentence %lld); "
                "expected at least one labelled pair", sp->path[0] ? sp->path : "the NLI split",
                (long long)sp->rows, (long long)sp->unlabelled, (long long)sp->empty);
        return NULL;
    }
    pair_source *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->s = (gf_source){.version = 1, .ctx = s, .n_examples = nli_n, .fill = nli_fill, .n_eval_examples = nli_n,
                       .fill_eval = nli_fill_eval, .check = nli_check, .destroy = nli_destroy};
    s->n = sp->n;
    s->seed = seed;
    s->perm_epoch = -1;
    s->max_id = -1;
    s->start = malloc((size_t)(sp->n + 1) * sizeof *s->start);
    s->len_p = malloc((size_t)sp->n * sizeof *s->len_p);
    s->len_h = malloc((size_t)sp->n * sizeof *s->len_h);
    s->label = malloc((size_t)sp->n);
    s->perm = malloc((size_t)sp->n * sizeof *s->perm);
    int rc = !s->start || !s->len_p || !s->len_h || !s->label || !s->perm ? gf_fail("pair source: out of memory") : 0;
    if (!rc) rc = special(tok, "[CLS]", &s->cls) || special(tok, "[SEP]", &s->sep) || special(tok, "[PAD]", &s->pad);
    if (!rc) rc = tokenize_pairs(s, sp, tok, max_sent);
    if (rc) {
        nli_destroy(&s->s);
        return NULL;
    }
    memcpy(s->label, sp->label, (size_t)sp->n);
    s->stats.pairs = sp->n;
    s->stats.longest = s->longest;
    if (stats) *stats = s->stats;
    return &s->s;
}

typedef struct {
    double *probs;
    int32_t *labels;
} nli_out;

static int keep_prediction(const gf_prediction *p, void *ctx) {
    nli_out *o = ctx;
    memcpy(o->probs + p->index * GF_NLI_CLASSES, p->probs, GF_NLI_CLASSES * sizeof *p->probs);
    if (o->labels) o->labels[p->index] = p->label;
    return 0;
}

int gf_nli_predict(gf_model *m, const gf_tokenizer *tok, const char *const *premise, const char *const *hypothesis,
                   int64_t n, int64_t max_sent, int64_t batch, double *probs, int32_t *labels) {
    if (n < 1) return gf_fail("gf_nli_predict: %lld pairs; expected at least 1", (long long)n);
    gf_nli_split sp;
    gf_nli_split_init(&sp, "the pairs given");
    int rc = 0;
    for (int64_t i = 0; i < n && !rc; i++) rc = gf_nli_split_add(&sp, premise[i], hypothesis[i], -1);
    gf_source *src = rc ? NULL : gf_pair_source_create(&sp, tok, max_sent, 0, NULL);
    gf_nli_split_free(&sp);
    if (!src) return -1;
    nli_out o = {.probs = probs, .labels = labels};
    rc = gf_predict(m, src, batch, keep_prediction, &o); /* which checks m first: 3 classes, the vocabulary */
    gf_source_free(src);
    return rc;
}
