/* Streaming inference: one token per call, each layer carrying only what its mixer needs from the past
 * (mixers/mixer.h: state_floats, step). The block wiring mirrors layer_forward in model/model.c for the
 * three block kinds, without dropout (inference); tests/test_stream.c holds every position's logits to
 * gf_model_forward on the same prefix. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/mem.h"
#include "model/model_internal.h"
#include "ops/ops.h"

struct gf_stream {
    const gf_model *m;
    int64_t pos;                   /* tokens consumed */
    int64_t cap;                   /* positions the states are sized for */
    float *state[GF_MAX_LAYERS];   /* per layer, state_floats(cap) floats */
    int64_t state_n[GF_MAX_LAYERS];
    float *buf;                    /* per-token buffers (below) */
    int64_t buf_n;
    /* views into buf */
    float *h, *ln, *mix, *x, *sum, *hid, *act, *ffn, *stat, *logits, *mscratch;
};

/* Per-token buffers for capacity cap: h, ln, mix, x, sum, ffn (d each) | hid, act (d_ff) | LayerNorm
 * mean and rstd (2) | logits (V) | the largest mixer step scratch. */
static int64_t buf_floats(const gf_model *m, int64_t cap, float *base, gf_stream *s) {
    const gf_config *c = &m->cfg;
    int64_t off = 0, ms = 0;
#define TAKE(ptr, n)                                                                                       \
    do {                                                                                                   \
        if (base) s->ptr = base + off;                                                                     \
        off += ((n) + 15) / 16 * 16;                                                                       \
    } while (0)
    TAKE(h, c->d_model);
    TAKE(ln, c->d_model);
    TAKE(mix, c->d_model);
    TAKE(x, c->d_model);
    TAKE(sum, c->d_model);
    TAKE(ffn, c->d_model);
    TAKE(hid, c->d_ff);
    TAKE(act, c->d_ff);
    TAKE(stat, 2);
    TAKE(logits, c->vocab_size);
    for (int l = 0; l < c->n_layer; l++) {
        int64_t k = m->mixer[l]->step_scratch_floats(c, l, cap);
        ms = k > ms ? k : ms;
    }
    TAKE(mscratch, ms);
#undef TAKE
    return off;
}

/* Size every state and buffer for cap positions, keeping the states' contents (prefix-stable layout). */
static int grow(gf_stream *s, int64_t cap) {
    const gf_config *c = &s->m->cfg;
    for (int l = 0; l < c->n_layer; l++) {
        int64_t n = s->m->mixer[l]->state_floats(c, l, cap);
        if (n == s->state_n[l]) continue;
        float *p = realloc(s->state[l], (size_t)n * sizeof(float));
        if (!p)
            return gf_fail("out of memory growing the layer %d stream state to %lld positions", l, (long long)cap);
        memset(p + s->state_n[l], 0, (size_t)(n - s->state_n[l]) * sizeof(float));
        s->state[l] = p;
        s->state_n[l] = n;
    }
    int64_t nb = buf_floats(s->m, cap, NULL, s);
    if (nb > s->buf_n) {
        float *b = gf_alloc_floats(nb, "stream buffers");
        if (!b) return -1;
        gf_free(s->buf);
        s->buf = b;
        s->buf_n = nb;
    }
    buf_floats(s->m, cap, s->buf, s);
    s->cap = cap;
    return 0;
}

gf_stream *gf_stream_create(const gf_model *m) {
    gf_stream *s = calloc(1, sizeof *s);
    if (!s) {
        gf_fail("out of memory creating a stream");
        return NULL;
    }
    s->m = m;
    int64_t cap = m->cfg.pos == GF_POS_LEARNED ? m->cfg.max_len : 256;
    if (grow(s, cap)) {
        gf_stream_free(s);
        return NULL;
    }
    return s;
}

void gf_stream_free(gf_stream *s) {
    if (!s) return;
    for (int l = 0; l < GF_MAX_LAYERS; l++) free(s->state[l]);
    gf_free(s->buf);
    free(s);
}

void gf_stream_reset(gf_stream *s) {
    for (int l = 0; l < s->m->cfg.n_layer; l++) memset(s->state[l], 0, (size_t)s->state_n[l] * sizeof(float));
    s->pos = 0;
}

int64_t gf_stream_pos(const gf_stream *s) { return s->pos; }

size_t gf_stream_state_bytes(const gf_stream *s) {
    size_t b = 0;
    for (int l = 0; l < s->m->cfg.n_layer; l++) b += (size_t)s->state_n[l] * sizeof(float);
    return b;
}

static void ffn_step(const gf_stream *s, const gf_layer_params *p, const float *inp) {
    const gf_config *c = &s->m->cfg;
    gf_linear_forward(s->hid, inp, c->d_model, p->fc1_w, c->d_model, p->fc1_b, 1, c->d_model, c->d_ff, 0.0f);
    gf_gelu_forward(s->act, s->hid, c->d_ff, c->gelu);
    gf_linear_forward(s->ffn, s->act, c->d_ff, p->fc2_w, c->d_ff, p->fc2_b, 1, c->d_ff, c->d_model, 0.0f);
}

static void layer_step(gf_stream *s, int l) {
    const gf_config *c = &s->m->cfg;
    const gf_layer_params *p = &s->m->lp[l];
    const int64_t d = c->d_model;
    float *mean = s->stat, *rstd = s->stat + 1;
    gf_mixer_step ms = {.cfg = c, .layer = l, .pos = s->pos, .cap = s->cap, .p = p->mix,
                        .state = s->state[l], .scratch = s->mscratch};
    const gf_mixer_ops *mx = s->m->mixer[l];
    if (c->norm == GF_NORM_PRE) { /* h += mix(ln1(h));  h += FFN(ln2(h)) */
        gf_layernorm_forward(s->ln, mean, rstd, s->h, p->ln1_w, p->ln1_b, 1, d);
        mx->step(&ms, s->mix, s->ln);
        gf_add(s->x, s->h, s->mix, d);
        gf_layernorm_forward(s->ln, mean, rstd, s->x, p->ln2_w, p->ln2_b, 1, d);
        ffn_step(s, p, s->ln);
        gf_add(s->h, s->x, s->ffn, d);
    } else {
        mx->step(&ms, s->mix, s->h);
        if (c->mixers[l] == GF_MIXER_GRASSMANN) { /* x = ln1(mix(h)) */
            gf_layernorm_forward(s->x, mean, rstd, s->mix, p->ln1_w, p->ln1_b, 1, d);
        } else { /* x = ln1(h + mix(h)) */
            gf_add(s->sum, s->h, s->mix, d);
            gf_layernorm_forward(s->x, mean, rstd, s->sum, p->ln1_w, p->ln1_b, 1, d);
        }
        ffn_step(s, p, s->x); /* h = ln2(x + FFN(x)) */
        gf_add(s->sum, s->x, s->ffn, d);
        gf_layernorm_forward(s->h, mean, rstd, s->sum, p->ln2_w, p->ln2_b, 1, d);
    }
}

/* Run one token through every layer; with_logits also applies the final LayerNorm and the head. */
static int advance(gf_stream *s, int32_t token, bool with_logits) {
    const gf_model *m = s->m;
    const gf_config *c = &m->cfg;
    const int64_t d = c->d_model;
    if (token < 0 || token >= c->vocab_size)
        return gf_fail("stream: token id %d is outside the vocabulary [0, %lld)", token, (long long)c->vocab_size);
    if (c->pos == GF_POS_LEARNED && s->pos >= c->max_len)
        return gf_fail("stream: position %lld is past max_len %lld of this model, which has learned positions\n"
                       "HINT: reset the stream, or use a model with pos \"none\" or \"sinusoidal\" (no length limit)",
                       (long long)s->pos, (long long)c->max_len);
    if (s->pos >= s->cap && grow(s, 2 * s->cap)) return -1;
    const float *e = m->tok_emb + (int64_t)token * d;
    if (c->pos == GF_POS_LEARNED) {
        const float *pe = m->pos_emb + s->pos * d;
        for (int64_t k = 0; k < d; k++) s->h[k] = e[k] + pe[k];
    } else if (c->pos == GF_POS_SINUSOIDAL) {
        gf_sinusoidal_row(s->x, s->pos, d);
        for (int64_t k = 0; k < d; k++) s->h[k] = e[k] + s->x[k];
    } else {
        memcpy(s->h, e, (size_t)d * sizeof(float));
    }
    for (int l = 0; l < c->n_layer; l++) layer_step(s, l);
    if (with_logits) {
        gf_layernorm_forward(s->ln, s->stat, s->stat + 1, s->h, m->lnf_w, m->lnf_b, 1, d);
        gf_linear_forward(s->logits, s->ln, d, m->head, d, NULL, 1, d, c->vocab_size, 0.0f);
    }
    s->pos++;
    return 0;
}

const float *gf_stream_step(gf_stream *s, int32_t token) { return advance(s, token, true) ? NULL : s->logits; }

int gf_stream_feed(gf_stream *s, const int32_t *tokens, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (advance(s, tokens[i], false)) {
            gf_fail_context(" (token %lld of %lld fed)", (long long)i, (long long)n);
            return -1;
        }
    return 0;
}
