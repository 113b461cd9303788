/* Decoding an encoder-decoder, or an ensemble of them: greedy and beam search (the rules are in
 * include/grassflow.h, "Decoding an encoder-decoder"). The encoder runs once per source, and each live hypothesis
 * is a stream of the decoder over its output (infer/source_memory.h) that feeds one token per step, a new
 * hypothesis taking over its parent's stream (an ensemble: one stream of each model). A model with a decoder
 * layer that cannot stream (its mixer has no step) is decoded by full forwards of every live hypothesis from
 * bos, encoder included, at every step: the reference the streamed search is held to (tests/unit/test_decode.c).
 * An ensemble of K models keeps K rows of logits per hypothesis, model k's at rows[k W + b]. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "grassflow_plugin.h"
#include "infer/source_memory.h"

enum { GF_DECODE_REF_MAX = 4096 }; /* target tokens a scored example may have */

gf_decode_opts gf_decode_opts_default(void) {
    return (gf_decode_opts){.beam = 1, .length_penalty = 0.0, .max_len = 0, .bos = 0, .eos = 0};
}

int64_t gf_decode_max_len(const gf_model *m) {
    const gf_config *c = gf_model_config(m);
    return c->pos == GF_POS_LEARNED ? c->max_len : 256;
}

/* o with max_len 0 made the models' (the smallest) */
static gf_decode_opts resolved(gf_model *const *models, int64_t K, const gf_decode_opts *o) {
    gf_decode_opts r = *o;
    if (r.max_len != 0) return r;
    for (int64_t k = 0; k < K; k++) {
        const int64_t l = gf_decode_max_len(models[k]);
        r.max_len = k == 0 || l < r.max_len ? l : r.max_len;
    }
    return r;
}

typedef struct {
    double logp;
    int64_t hyp;
    int32_t tok;
} cand;

/* Larger log-probability first; ties: the earlier hypothesis, then the smaller id. */
static int cand_order(const void *pa, const void *pb) {
    const cand *a = pa, *b = pb;
    if (a->logp != b->logp) return a->logp > b->logp ? -1 : 1;
    if (a->hyp != b->hyp) return a->hyp < b->hyp ? -1 : 1;
    return (a->tok > b->tok) - (a->tok < b->tok);
}

typedef struct {
    const gf_decode_opts *o;
    gf_model *const *models;  /* the ensemble's K models (one: gf_model_decode) */
    int64_t K, V, W, L;       /* models, vocabulary, beam width, max_len */
    int32_t *live, *next;     /* (W, L) the live hypotheses' tokens, and the next step's */
    double *live_logp, *next_logp;
    int64_t n_live;
    int32_t *fin;             /* (W, L) the finished ones kept, best first */
    double *fin_logp, *fin_score;
    int64_t *fin_len, n_fin;
    cand *c;                  /* (W V) */
    int64_t *parent;          /* (W) each live hypothesis's parent among the step's */
    const float **rows;       /* (K, W) model k's next-token logits (V) for each live hypothesis */
    double *lse;              /* (K) scratch: a row's log-sum-exp for each model */
    int32_t *ids, *src;       /* full forwards: (W, L) the decoder's inputs; (W, S) the source repeated */
    gf_source_memory **mem;   /* streamed: (K) the source's for each model, and (K, W) each live hypothesis's */
    gf_stream **st, **st_next;/* stream of each model (and a spare set) */
} search;

static double penalty(const gf_decode_opts *o, int64_t n) {
    return o->length_penalty > 0 ? pow((5.0 + (double)n) / 6.0, o->length_penalty) : 1.0;
}

/* Keep tokens[0..len) of log-probability logp (n counts the end token when it has one) among the best W
 * finished, which stay sorted by score, an earlier one first among equals. */
static void finish(search *s, const int32_t *tokens, int64_t len, int64_t n, double logp) {
    const double score = logp / penalty(s->o, n);
    int64_t at = s->n_fin;
    while (at > 0 && s->fin_score[at - 1] < score) at--;
    if (at >= s->W) return;
    const int64_t last = s->n_fin < s->W ? s->n_fin : s->W - 1; /* the one pushed out, if full */
    for (int64_t k = last; k > at; k--) {
        memcpy(s->fin + k * s->L, s->fin + (k - 1) * s->L, (size_t)s->L * sizeof(int32_t));
        s->fin_logp[k] = s->fin_logp[k - 1];
        s->fin_score[k] = s->fin_score[k - 1];
        s->fin_len[k] = s->fin_len[k - 1];
    }
    memcpy(s->fin + at * s->L, tokens, (size_t)len * sizeof(int32_t));
    s->fin_logp[at] = logp;
    s->fin_score[at] = score;
    s->fin_len[at] = len;
    if (s->n_fin < s->W) s->n_fin++;
}

static double log_sum_exp(const float *l, int64_t V) {
    double mx = l[0], sum = 0.0;
    for (int64_t v = 1; v < V; v++) mx = l[v] > mx ? l[v] : mx;
    for (int64_t v = 0; v < V; v++) sum += exp((double)l[v] - mx);
    return mx + log(sum);
}

/* Token v's log-probability after live hypothesis b: its log-softmax, or an ensemble's log of the mean of its
 * models' probabilities (log-sum-exp of their log-softmax, less log K). */
static double token_logp(const search *s, int64_t b, int64_t v) {
    const double x0 = (double)s->rows[b][v] - s->lse[0];
    if (s->K == 1) return x0;
    double mx = x0, sum = 0.0;
    for (int64_t k = 1; k < s->K; k++) {
        const double x = (double)s->rows[k * s->W + b][v] - s->lse[k];
        mx = x > mx ? x : mx;
    }
    if (mx == -INFINITY) return -INFINITY;
    for (int64_t k = 0; k < s->K; k++) sum += exp((double)s->rows[k * s->W + b][v] - s->lse[k] - mx);
    return mx + (log(sum) - log((double)s->K));
}

/* The candidates of a step from the live hypotheses' next-token logits (s->rows). */
static int64_t candidates(search *s) {
    int64_t n = 0;
    for (int64_t b = 0; b < s->n_live; b++) {
        for (int64_t k = 0; k < s->K; k++) s->lse[k] = log_sum_exp(s->rows[k * s->W + b], s->V);
        for (int64_t v = 0; v < s->V; v++) s->c[n++] = (cand){s->live_logp[b] + token_logp(s, b, v), b, (int32_t)v};
    }
    qsort(s->c, (size_t)n, sizeof *s->c, cand_order);
    return n;
}

/* Walk step t's candidates: an end finishes its hypothesis, any other lives on until W live; at max_len the
 * live ones finish as they are. */
static void advance(search *s, int64_t n_cand, int64_t t) {
    int64_t n_next = 0;
    for (int64_t i = 0; i < n_cand && n_next < s->W; i++) {
        const cand *c = &s->c[i];
        const int32_t *parent = s->live + c->hyp * s->L;
        if (c->tok == s->o->eos) {
            finish(s, parent, t, t + 1, c->logp);
            continue;
        }
        int32_t *h = s->next + n_next * s->L;
        memcpy(h, parent, (size_t)t * sizeof(int32_t));
        h[t] = c->tok;
        s->parent[n_next] = c->hyp;
        s->next_logp[n_next++] = c->logp;
    }
    int32_t *tmp = s->live;
    s->live = s->next;
    s->next = tmp;
    double *tl = s->live_logp;
    s->live_logp = s->next_logp;
    s->next_logp = tl;
    s->n_live = n_next;
    if (t + 1 == s->L) {
        for (int64_t b = 0; b < s->n_live; b++) finish(s, s->live + b * s->L, s->L, s->L, s->live_logp[b]);
        s->n_live = 0;
    }
}

/* Whether no live hypothesis can still score above the worst of W finished. */
static bool settled(const search *s) {
    if (s->n_live == 0) return true;
    if (s->n_fin < s->W) return false;
    double best = s->live_logp[0];
    for (int64_t b = 1; b < s->n_live; b++) best = s->live_logp[b] > best ? s->live_logp[b] : best;
    return best / penalty(s->o, s->L) <= s->fin_score[s->n_fin - 1];
}

static int check_opts(const gf_model *m, const gf_decode_opts *o, const int32_t *source, int64_t S) {
    const gf_config *c = gf_model_config(m);
    if (c->source_vocab < 1 || !gf_model_predicts_next_token(m))
        return gf_fail("decode: the model is not an encoder-decoder (source_vocab 0): it has no source to decode from");
    if (o->beam < 1 || o->beam > GF_DECODE_MAX_BEAM)
        return gf_fail("decode: beam is %lld; expected 1 (greedy) to %d", (long long)o->beam, GF_DECODE_MAX_BEAM);
    if (!(o->length_penalty >= 0 && o->length_penalty <= 100))
        return gf_fail("decode: length_penalty is %g; expected 0 (none) to 100", o->length_penalty);
    if (o->length_penalty > 0 && o->beam < 2)
        return gf_fail("decode: length_penalty %g with beam 1: greedy decoding stops at the first end token and has no "
                       "lengths to weigh; a length penalty needs beam >= 2", o->length_penalty);
    if (o->max_len < 1) return gf_fail("decode: max_len is %lld; expected at least 1", (long long)o->max_len);
    if (!isfinite(penalty(o, o->max_len + 1)))
        return gf_fail("decode: length_penalty %g over max_len %lld tokens: the penalty ((5 + n) / 6)^%g passes the "
                       "largest double, and every long hypothesis would score 0\nHINT: a smaller length_penalty or "
                       "max_len", o->length_penalty, (long long)o->max_len, o->length_penalty);
    if (c->pos == GF_POS_LEARNED && o->max_len > c->max_len)
        return gf_fail("decode: max_len %lld is above the model's max_len %lld (learned positions: the decoder reads "
                       "bos and up to max_len - 1 tokens)\nHINT: decode at most %lld tokens", (long long)o->max_len,
                       (long long)c->max_len, (long long)c->max_len);
    if (o->bos < 0 || o->bos >= c->vocab_size || o->eos < 0 || o->eos >= c->vocab_size)
        return gf_fail("decode: bos %d or eos %d is outside the target vocabulary [0, %lld)", o->bos, o->eos,
                       (long long)c->vocab_size);
    if (!source || S < 1) return gf_fail("decode: the source is empty; expected at least one source token");
    return 0;
}

/* An ensemble's models against the first: the same source and target vocabularies. */
static int check_ensemble(gf_model *const *models, int64_t K) {
    if (K < 1 || K > GF_DECODE_MAX_ENSEMBLE)
        return gf_fail("decode: an ensemble of %lld models; expected 1 to %d", (long long)K, GF_DECODE_MAX_ENSEMBLE);
    for (int64_t k = 0; k < K; k++)
        if (!models[k]) return gf_fail("decode: the ensemble's model %lld is NULL", (long long)k);
    const gf_config *a = gf_model_config(models[0]);
    for (int64_t k = 1; k < K; k++) {
        const gf_config *b = gf_model_config(models[k]);
        if (b->vocab_size != a->vocab_size || b->source_vocab != a->source_vocab)
            return gf_fail("decode: the ensemble's model %lld reads %lld source ids and writes %lld target ids, "
                           "model 0 %lld and %lld: an ensemble's models must share both vocabularies", (long long)k,
                           (long long)b->source_vocab, (long long)b->vocab_size, (long long)a->source_vocab,
                           (long long)a->vocab_size);
    }
    return 0;
}

static void search_free(search *s) {
    free(s->live), free(s->next), free(s->live_logp), free(s->next_logp), free(s->fin), free(s->fin_logp);
    free(s->fin_score), free(s->fin_len), free(s->c), free(s->parent), free(s->rows), free(s->lse), free(s->ids);
    free(s->src);
    for (int64_t b = 0; b < s->K * s->W; b++) {
        if (s->st) gf_stream_free(s->st[b]);
        if (s->st_next) gf_stream_free(s->st_next[b]);
    }
    free(s->st), free(s->st_next);
    for (int64_t k = 0; s->mem && k < s->K; k++) gf_source_memory_free(s->mem[k]);
    free(s->mem);
}

/* The streamed search's memories and 2 K W streams (none are made for a beam of one's spare set: greedy copies
 * nothing). */
static int streams_alloc(search *s, const int32_t *source, int64_t S) {
    const size_t n = (size_t)(s->K * s->W);
    s->st = calloc(n, sizeof *s->st), s->st_next = calloc(n, sizeof *s->st_next);
    s->mem = calloc((size_t)s->K, sizeof *s->mem);
    if (!s->st || !s->st_next || !s->mem)
        return gf_fail("decode: out of memory for a beam of %lld streams", (long long)s->W);
    for (int64_t k = 0; k < s->K; k++) {
        gf_model *m = s->models[k];
        if (!(s->mem[k] = gf_source_memory_create(m, source, S))) return -1;
        for (int64_t b = k * s->W; b < (k + 1) * s->W; b++)
            if (!(s->st[b] = gf_stream_create_decoder(m, s->mem[k])) ||
                (s->W > 1 && !(s->st_next[b] = gf_stream_create_decoder(m, s->mem[k]))))
                return -1;
    }
    return 0;
}

static int search_alloc(search *s, const int32_t *source, int64_t S) {
    const size_t WL = (size_t)(s->W * s->L);
    s->live = calloc(WL, sizeof(int32_t)), s->next = calloc(WL, sizeof(int32_t)), s->fin = calloc(WL, sizeof(int32_t));
    s->live_logp = calloc((size_t)s->W, sizeof(double)), s->next_logp = calloc((size_t)s->W, sizeof(double));
    s->fin_logp = calloc((size_t)s->W, sizeof(double)), s->fin_score = calloc((size_t)s->W, sizeof(double));
    s->fin_len = calloc((size_t)s->W, sizeof(int64_t));
    s->c = malloc((size_t)(s->W * s->V) * sizeof(cand));
    s->parent = calloc((size_t)s->W, sizeof(int64_t)), s->rows = calloc((size_t)(s->K * s->W), sizeof(float *));
    s->lse = calloc((size_t)s->K, sizeof(double));
    s->ids = malloc(WL * sizeof(int32_t)), s->src = malloc((size_t)(s->W * S) * sizeof(int32_t));
    if (!s->live || !s->next || !s->fin || !s->live_logp || !s->next_logp || !s->fin_logp || !s->fin_score ||
        !s->fin_len || !s->c || !s->parent || !s->rows || !s->lse || !s->ids || !s->src)
        return gf_fail("decode: out of memory for a beam of %lld over %lld tokens", (long long)s->W, (long long)s->L);
    for (int64_t b = 0; b < s->W; b++) memcpy(s->src + b * S, source, (size_t)S * sizeof(int32_t));
    s->n_live = 1; /* the empty hypothesis, log-probability 0 */
    return 0;
}

/* One step by full forwards: the live hypotheses (t tokens each) from bos through each model, then their
 * candidates walked. */
static int step_full(search *s, int64_t S, int64_t t) {
    for (int64_t b = 0; b < s->n_live; b++) {
        s->ids[b * (t + 1)] = s->o->bos;
        memcpy(s->ids + b * (t + 1) + 1, s->live + b * s->L, (size_t)t * sizeof(int32_t));
    }
    gf_batch batch = {.B = s->n_live, .T = t + 1, .ids = s->ids, .S = S, .source = s->src};
    for (int64_t k = 0; k < s->K; k++) {
        if (gf_model_forward_batch(s->models[k], &batch, NULL)) return -1;
        for (int64_t b = 0; b < s->n_live; b++)
            s->rows[k * s->W + b] = gf_model_logits(s->models[k]) + (b * (t + 1) + t) * s->V;
    }
    advance(s, candidates(s), t);
    return 0;
}

/* One streamed step: each live hypothesis's streams feed its last token (bos first); after the walk, each new
 * hypothesis takes over its parent's streams. */
static int step_streamed(search *s, int64_t t) {
    for (int64_t k = 0; k < s->K; k++)
        for (int64_t b = 0; b < s->n_live; b++) {
            const int32_t last = t ? s->live[b * s->L + t - 1] : s->o->bos;
            if (!(s->rows[k * s->W + b] = gf_stream_step(s->st[k * s->W + b], last))) return -1;
        }
    advance(s, candidates(s), t);
    if (s->W == 1) return 0; /* greedy: the one hypothesis is its parent's own stream */
    for (int64_t k = 0; k < s->K; k++)
        for (int64_t b = 0; b < s->n_live; b++)
            if (gf_stream_copy(s->st_next[k * s->W + b], s->st[k * s->W + s->parent[b]])) return -1;
    gf_stream **tmp = s->st;
    s->st = s->st_next;
    s->st_next = tmp;
    return 0;
}

/* The error just set, said of model k of an ensemble of K (one model: as it is). -1. */
static int member_error(int64_t k, int64_t K) {
    if (K == 1) return -1;
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", gf_last_error());
    const char *m = strncmp(msg, "decode: ", 8) ? msg : msg + 8;
    return gf_fail("decode: the ensemble's model %lld (of %lld, from 0): %s", (long long)k, (long long)K, m);
}

/* The options (resolved) and source checked against every model of an ensemble. */
static int check_all(gf_model *const *models, int64_t K, const gf_decode_opts *o, const int32_t *source, int64_t S) {
    if (check_ensemble(models, K)) return -1;
    for (int64_t k = 0; k < K; k++)
        if (check_opts(models[k], o, source, S)) return member_error(k, K);
    return 0;
}

int gf_ensemble_decode_by(gf_model *const *models, int64_t K, const int32_t *source, int64_t S,
                          const gf_decode_opts *opts, bool streamed, int32_t *out, int64_t *n, double *score) {
    if (check_ensemble(models, K)) return -1;
    const gf_decode_opts ro = resolved(models, K, opts), *o = &ro;
    if (check_all(models, K, o, source, S)) return -1;
    search s = {.o = o, .models = models, .K = K, .V = gf_model_config(models[0])->vocab_size, .W = o->beam,
                .L = o->max_len};
    for (int64_t k = 0; k < K; k++) gf_model_set_training(models[k], false, 0, 0);
    int rc = search_alloc(&s, source, S);
    if (!rc && streamed) rc = streams_alloc(&s, source, S);
    for (int64_t t = 0; !rc && !settled(&s); t++) rc = streamed ? step_streamed(&s, t) : step_full(&s, S, t);
    if (!rc) {
        memcpy(out, s.fin, (size_t)s.fin_len[0] * sizeof(int32_t));
        *n = s.fin_len[0];
        if (score) *score = s.fin_score[0];
    }
    search_free(&s);
    return rc;
}

/* Whether every model of an ensemble streams its decoder. */
static bool all_stream(gf_model *const *models, int64_t K) {
    for (int64_t k = 0; k < K; k++)
        if (!gf_decoder_streams(models[k])) return false;
    return true;
}

int gf_ensemble_decode(gf_model *const *models, int64_t K, const int32_t *source, int64_t S,
                       const gf_decode_opts *opts, int32_t *out, int64_t *n, double *score) {
    if (check_ensemble(models, K)) return -1;
    return gf_ensemble_decode_by(models, K, source, S, opts, all_stream(models, K), out, n, score);
}

int gf_model_decode_by(gf_model *m, const int32_t *source, int64_t S, const gf_decode_opts *opts, bool streamed,
                       int32_t *out, int64_t *n, double *score) {
    return gf_ensemble_decode_by(&m, 1, source, S, opts, streamed, out, n, score);
}

int gf_model_decode(gf_model *m, const int32_t *source, int64_t S, const gf_decode_opts *opts, int32_t *out,
                    int64_t *n, double *score) {
    return gf_ensemble_decode(&m, 1, source, S, opts, out, n, score);
}

/* Levenshtein's distance between a[0..n) and b[0..m) (row: m + 1 ints of scratch). */
static int64_t edit_distance(const int32_t *a, int64_t n, const int32_t *b, int64_t m, int64_t *row) {
    for (int64_t j = 0; j <= m; j++) row[j] = j;
    for (int64_t i = 1; i <= n; i++) {
        int64_t diag = row[0];
        row[0] = i;
        for (int64_t j = 1; j <= m; j++) {
            const int64_t up = row[j], sub = diag + (a[i - 1] != b[j - 1]), del = up + 1, ins = row[j - 1] + 1;
            const int64_t v = sub < del ? sub : del;
            row[j] = v < ins ? v : ins;
            diag = up;
        }
    }
    return row[m];
}

/* One evaluation example as scoring reads it: its source (without padding) and its reference (to the end). */
typedef struct {
    int32_t *src, ref[GF_DECODE_REF_MAX];
    int64_t S, k, cap;
} example;

/* Example i of src into *x (the batch is the source's until its next fill: both sides are copied). */
static int fetch(gf_source *src, int64_t i, const gf_decode_opts *o, example *x) {
    gf_batch b;
    if (gf_source_fill_eval(src, i, 1, &b)) return -1;
    if (!b.source || !b.targets)
        return gf_fail("decode: evaluation example %lld has no source or no targets: not sequence pairs", (long long)i);
    int64_t S = b.S, k = 0;
    while (b.source_mask && S > 0 && !b.source_mask[S - 1]) S--;
    while (k < b.T && b.targets[k] >= 0 && b.targets[k] != o->eos) k++;
    if (k > o->max_len)
        return gf_fail("decode: evaluation example %lld has a target of %lld tokens; max_len is %lld", (long long)i,
                       (long long)k, (long long)o->max_len);
    if (S > x->cap) {
        int32_t *p = realloc(x->src, (size_t)S * sizeof *p);
        if (!p) return gf_fail("out of memory");
        x->src = p, x->cap = S;
    }
    memcpy(x->src, b.source, (size_t)S * sizeof *x->src);
    memcpy(x->ref, b.targets, (size_t)k * sizeof *x->ref);
    x->S = S, x->k = k;
    return 0;
}

/* The examples from *i on that share example *i's source with other targets (a source with several references,
 * one after another; the same pair again is an example of its own) decoded once and scored as one into *out:
 * wrong unless the target is one of them; its edits and tokens those of the nearest (the first among equals).
 * *i moves past them. x and y: scratch examples; hyp and row: room for o->max_len tokens and its references. */
static int score_group(gf_model *const *models, int64_t K, gf_source *src, int64_t *i, const gf_decode_opts *o,
                       example *x, example *y, int32_t *hyp, int64_t *row, gf_decode_scores *out) {
    const int64_t n_eval = gf_source_n_eval(src);
    int64_t n = 0;
    if (fetch(src, *i, o, x) || gf_ensemble_decode(models, K, x->src, x->S, o, hyp, &n, NULL)) return -1;
    int64_t e = edit_distance(x->ref, x->k, hyp, n, row), k = x->k;
    for (++*i; *i < n_eval; ++*i) {
        if (fetch(src, *i, o, y)) return -1;
        if (y->S != x->S || memcmp(y->src, x->src, (size_t)x->S * sizeof *x->src)) break;
        if (y->k == x->k && !memcmp(y->ref, x->ref, (size_t)x->k * sizeof *x->ref)) break; /* the pair again */
        const int64_t ey = edit_distance(y->ref, y->k, hyp, n, row);
        if (ey < e) e = ey, k = y->k;
    }
    out->examples++, out->tokens += k, out->edits += e, out->wrong += e > 0;
    const int64_t at = x->S < GF_DECODE_BY_LEN ? x->S : GF_DECODE_BY_LEN;
    out->len_examples[at]++, out->len_wrong[at] += e > 0;
    return 0;
}

int gf_ensemble_evaluate_decoding(gf_model *const *models, int64_t K, gf_source *src, const gf_decode_opts *opts,
                                  gf_decode_scores *out) {
    *out = (gf_decode_scores){0};
    if (check_ensemble(models, K)) return -1;
    const gf_decode_opts ro = resolved(models, K, opts), *o = &ro;
    if (o->max_len > GF_DECODE_REF_MAX)
        return gf_fail("decode: max_len %lld; scoring decodes at most %d tokens", (long long)o->max_len, GF_DECODE_REF_MAX);
    for (int64_t k = 0; k < K; k++) /* sources a model cannot read, by name */
        if (src->check && src->check(src->ctx, models[k], GF_USE_EVAL)) return member_error(k, K);
    int32_t *hyp = malloc((size_t)o->max_len * sizeof *hyp);
    int64_t *row = malloc((size_t)(o->max_len + 1) * sizeof *row);
    example *xy = calloc(2, sizeof *xy);
    int rc = hyp && row && xy ? 0 : gf_fail("out of memory");
    const int64_t n = gf_source_n_eval(src);
    for (int64_t i = 0; !rc && i < n;) rc = score_group(models, K, src, &i, o, &xy[0], &xy[1], hyp, row, out);
    if (xy) free(xy[0].src), free(xy[1].src);
    free(hyp), free(row), free(xy);
    return rc;
}

int gf_evaluate_decoding(gf_model *m, gf_source *src, const gf_decode_opts *opts, gf_decode_scores *out) {
    return gf_ensemble_evaluate_decoding(&m, 1, src, opts, out);
}
