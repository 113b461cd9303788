/* The recurrent decoders attention was invented for: a GRU decoder that reads the encoder's output M (B, S, d)
 * itself, position by position (gf_mixer_ops version 3, reads_memory), in the forms of
 *   - Cho et al. 2014 (arXiv 1406.1078), no attention ("none"): one context for the whole target, c = M at
 *     the source's last real position (the last encoder state), fed at every step;
 *   - Bahdanau et al. 2015 (arXiv 1409.0473, "bahdanau"): additive attention from the previous state,
 *     e_j = v . tanh(W1 s_{t-1} + W2 M_j), its context fed into the step;
 *   - Luong et al. 2015 (arXiv 1508.04025): attention from the new state with the scores "dot" (s_t . M_j),
 *     "general" (s_t . Wa M_j) and "concat" (v . tanh(W1 s_t + W2 M_j)), with input feeding (the previous
 *     attentional output enters the step) or without.
 * With a = softmax over the real source positions of e, c_t = sum_j a_j M_j, and a GRU of d units in
 * torch.nn.GRU's form (src/mixers/gru.c):
 *     input_t = [x_t; c_t] (none, bahdanau), [x_t; out_{t-1}] (luong, input feeding), x_t (luong)
 *     s_t = GRU(input_t, s_{t-1})                 s_{-1} = 0, out_{-1} = 0
 *     out_t = tanh(W_o [c_t; s_t] + b_o)          (Luong's attentional hidden state; for none and bahdanau
 *                                                  the same layer over their context: a deep output)
 * A padded target position is skipped: s and out pass it unchanged. docs/model.md has the tensors.
 *
 * Training runs T sequential steps: per step a few (B, .) x (., 3d) products and the attention of each row
 * over its S source positions; the products over all positions (the input projections, every weight
 * gradient) run once over the B T rows. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "compute/blas.h"
#include "mixers/gru_cell.h"
#include "mixers/mixer.h"
#include "ops/ops.h"

enum { ATT_NONE, ATT_BAHDANAU, ATT_DOT, ATT_GENERAL, ATT_CONCAT };
static const char *const ATTENTIONS[] = {"none", "bahdanau", "dot", "general", "concat", NULL};

typedef struct {
    int attention;
    bool input_feeding;
} ga_config;

static const gf_cfg_key KEYS[] = {
    {.name = "attention", .type = GF_KEY_ENUM, .off = offsetof(ga_config, attention), .names = ATTENTIONS,
     .def = "\"general\"", .help = "none (one context: the last encoder state), bahdanau (additive, from the "
     "previous state), or Luong's scores from the new state: dot, general, concat"},
    {.name = "input_feeding", .type = GF_KEY_BOOL, .off = offsetof(ga_config, input_feeding), .def = "true",
     .help = "Luong's scores: the previous attentional output enters each step (none and bahdanau feed their "
     "context anyway)"},
};

enum { P_IH_W, P_HH_W, P_IH_B, P_HH_B, P_OUT_W, P_OUT_B, P_SCORE_W, P_SCORE_V };

static const ga_config *gcfg(const gf_config *cfg, int layer) { return gf_layer_mcfg(cfg, layer); }
static bool luong(int att) { return att >= ATT_DOT; }
static bool additive(int att) { return att == ATT_BAHDANAU || att == ATT_CONCAT; }
/* whether the step has a second input ([x_t; e_t]) */
static bool second_input(const ga_config *g) { return !luong(g->attention) || g->input_feeding; }

static int ga_param_specs(const gf_config *cfg, int layer, gf_param_spec *s) {
    const ga_config *g = gcfg(cfg, layer);
    const int64_t d = gf_layer_dim(cfg, layer);
    gf_param_spec_set(&s[P_IH_W], "gru.weight_ih_l0", 2, 3 * d, second_input(g) ? 2 * d : d, GF_INIT_NORMAL);
    gf_param_spec_set(&s[P_HH_W], "gru.weight_hh_l0", 2, 3 * d, d, GF_INIT_NORMAL);
    gf_param_spec_set(&s[P_IH_B], "gru.bias_ih_l0", 1, 3 * d, 0, GF_INIT_ZERO);
    gf_param_spec_set(&s[P_HH_B], "gru.bias_hh_l0", 1, 3 * d, 0, GF_INIT_ZERO);
    gf_param_spec_set(&s[P_OUT_W], "out.weight", 2, d, 2 * d, GF_INIT_NORMAL);
    gf_param_spec_set(&s[P_OUT_B], "out.bias", 1, d, 0, GF_INIT_ZERO);
    if (g->attention == ATT_GENERAL) {
        gf_param_spec_set(&s[P_SCORE_W], "score.weight", 2, d, d, GF_INIT_NORMAL);
        return 7;
    }
    if (!additive(g->attention)) return 6;
    gf_param_spec_set(&s[P_SCORE_W], "score.weight", 2, d, 2 * d, GF_INIT_NORMAL);
    gf_param_spec_set(&s[P_SCORE_V], "score.v", 1, d, 0, GF_INIT_NORMAL);
    return 8;
}

/* saved: s, r, z, n, W_hn s + b_hn, c, out at every position: (N, d) each */
static int64_t ga_saved_floats(const gf_config *cfg, int layer, int64_t B, int64_t T) {
    return 7 * B * T * gf_layer_dim(cfg, layer);
}

/* scratch: gi or dgi (N, 3d) | dgh (N, 3d) | da (N, d) | dq (N, d) | per step: gh, gi (B, 3d) each; e, q, dS,
 * dO, de, dq1 (B, d) each; dcs (B, 2d) */
static int64_t ga_scratch_floats(const gf_config *cfg, int layer, int64_t B, int64_t T, int n_threads) {
    (void)n_threads;
    const int64_t d = gf_layer_dim(cfg, layer), N = B * T;
    return 8 * N * d + B * (6 * d + 6 * d + 2 * d);
}

/* mem_work: the weights a (B, T, S) | K (B, S, d): M's keys (general: M Wa^T; additive: M W2^T) | dK (B, S, d)
 * | the scores of one step (B, S) */
static int64_t ga_memory_floats(const gf_config *cfg, int layer, int64_t B, int64_t T, int64_t S) {
    const int64_t d = gf_layer_dim(cfg, layer);
    return B * T * S + 2 * B * S * d + B * S;
}

typedef struct {
    const ga_config *g;
    int64_t B, T, S, d, N, din;
    float *const *p;
    float *const *gr;
    const float *M;
    const uint8_t *mmask, *mask;
    float *dM;
    float *s, *r, *z, *n, *ghn, *c, *out;           /* saved */
    float *gi, *dgh, *da, *dq, *gh, *gis, *e, *q, *dS, *dO, *de, *dq1, *dcs; /* scratch */
    float *a, *K, *dK, *sc;                          /* mem_work */
} ga_run;

static ga_run ga_layout(const gf_mixer_call *cl) {
    const ga_config *g = gcfg(cl->cfg, cl->layer);
    const int64_t d = gf_layer_dim(cl->cfg, cl->layer), B = cl->B, T = cl->T, S = cl->S, N = B * T;
    ga_run r = {.g = g, .B = B, .T = T, .S = S, .d = d, .N = N, .din = second_input(g) ? 2 * d : d, .p = cl->p,
                .gr = cl->g, .M = cl->mem, .mmask = cl->mem_mask, .mask = cl->mask, .dM = cl->dmem};
    float *v = cl->saved;
    r.s = v, r.r = v + N * d, r.z = v + 2 * N * d, r.n = v + 3 * N * d, r.ghn = v + 4 * N * d, r.c = v + 5 * N * d;
    r.out = v + 6 * N * d;
    v = cl->scratch;
    r.gi = v, r.dgh = v + 3 * N * d, r.da = v + 6 * N * d, r.dq = v + 7 * N * d;
    v += 8 * N * d;
    r.gh = v, r.gis = v + 3 * B * d, r.e = v + 6 * B * d, r.q = v + 7 * B * d, r.dS = v + 8 * B * d;
    r.dO = v + 9 * B * d, r.de = v + 10 * B * d, r.dq1 = v + 11 * B * d, r.dcs = v + 12 * B * d;
    v = cl->mem_work;
    r.a = v, r.K = v + B * T * S, r.dK = r.K + B * S * d, r.sc = r.dK + B * S * d;
    return r;
}

static bool real(const ga_run *r, int64_t b, int64_t t) { return !r->mask || r->mask[b * r->T + t]; }
static bool src_real(const ga_run *r, int64_t b, int64_t j) { return !r->mmask || r->mmask[b * r->S + j]; }
/* row (b, t) of a saved (N, d) array; t = -1: NULL (the zero before the first position) */
static float *row(const ga_run *r, float *x, int64_t b, int64_t t) { return t < 0 ? NULL : x + (b * r->T + t) * r->d; }

/* ---- attention ---- */

enum { ADD_CHUNK = 256 }; /* an additive score's tanh terms computed at once */

/* Row b's attention from query qv (d: s itself for dot and general; W1 s for additive) into a (S) and its
 * context c (d). */
static void attend(const ga_run *r, int64_t b, const float *qv, float *a, float *c) {
    const int64_t S = r->S, d = r->d;
    const float *K = r->g->attention == ATT_DOT ? r->M : r->K, *v = r->p[P_SCORE_V];
    float mx = -INFINITY, u[ADD_CHUNK];
    for (int64_t j = 0; j < S; j++) {
        const float *k = K + (b * S + j) * d;
        float e = 0.0f;
        if (additive(r->g->attention))
            for (int64_t i0 = 0; i0 < d; i0 += ADD_CHUNK) { /* the tanh as vectors, the sum in index order */
                const int64_t w = d - i0 < ADD_CHUNK ? d - i0 : ADD_CHUNK;
#pragma omp simd
                for (int64_t i = 0; i < w; i++) u[i] = gf_tanh_rel_v(qv[i0 + i] + k[i0 + i]);
                for (int64_t i = 0; i < w; i++) e += v[i0 + i] * u[i];
            }
        else
            for (int64_t i = 0; i < d; i++) e += qv[i] * k[i];
        a[j] = src_real(r, b, j) ? e : -INFINITY;
        mx = a[j] > mx ? a[j] : mx;
    }
    float sum = 0.0f;
    for (int64_t j = 0; j < S; j++) sum += (a[j] = src_real(r, b, j) ? expf(a[j] - mx) : 0.0f);
    for (int64_t i = 0; i < d; i++) c[i] = 0.0f;
    for (int64_t j = 0; j < S; j++) {
        a[j] /= sum;
        const float *m = r->M + (b * S + j) * d;
        for (int64_t i = 0; i < d; i++) c[i] += a[j] * m[i];
    }
}

/* Back through row b's attention: dc (d) the context's gradient; dM += a dc; the scores' gradient reaches
 * the keys (dK, or dM for dot) and the query: dqv (d) = d(loss)/d(qv) (overwritten). */
static void attend_back(const ga_run *r, int64_t b, const float *qv, const float *a, const float *dc, float *dqv) {
    const int64_t S = r->S, d = r->d;
    const bool add = additive(r->g->attention);
    const float *K = r->g->attention == ATT_DOT ? r->M : r->K, *v = r->p[P_SCORE_V];
    float *dK = r->g->attention == ATT_DOT ? r->dM : r->dK, *dv = add ? r->gr[P_SCORE_V] : NULL;
    float *da = r->sc + b * S, dot = 0.0f;
    for (int64_t j = 0; j < S; j++) {
        const float *m = r->M + (b * S + j) * d;
        float g = 0.0f;
        for (int64_t i = 0; i < d; i++) g += dc[i] * m[i];
        da[j] = g, dot += a[j] * g;
        if (r->dM)
            for (int64_t i = 0; i < d; i++) r->dM[(b * S + j) * d + i] += a[j] * dc[i];
    }
    for (int64_t i = 0; i < d; i++) dqv[i] = 0.0f;
    for (int64_t j = 0; j < S; j++) {
        const float de = a[j] * (da[j] - dot); /* 0 at padded positions (a = 0) */
        if (de == 0.0f) continue;
        const float *k = K + (b * S + j) * d;
        float *dk = dK ? dK + (b * S + j) * d : NULL;
        if (add)
#pragma omp simd
            for (int64_t i = 0; i < d; i++) {
                const float u = gf_tanh_rel_v(qv[i] + k[i]), dp = de * v[i] * (1.0f - u * u);
                if (dv) dv[i] += de * u;
                dqv[i] += dp;
                if (dk) dk[i] += dp;
            }
        else
            for (int64_t i = 0; i < d; i++) {
                dqv[i] += de * k[i];
                if (dk) dk[i] += de * qv[i];
            }
    }
}

/* The keys every step reads: K = M Wk^T (general: Wa; additive: W2, score.weight's second half). */
static void keys_forward(const ga_run *r) {
    const int64_t d = r->d, ld = r->g->attention == ATT_GENERAL ? d : 2 * d;
    if (r->g->attention == ATT_GENERAL || additive(r->g->attention))
        gf_sgemm(false, true, r->B * r->S, d, d, 1.0f, r->M, d, r->p[P_SCORE_W] + (ld - d), ld, 0.0f, r->K, d);
}

/* After the steps: the keys' gradient dK into score.weight's and M's. */
static void keys_backward(const ga_run *r) {
    const int64_t d = r->d, BS = r->B * r->S, ld = r->g->attention == ATT_GENERAL ? d : 2 * d;
    if (r->g->attention != ATT_GENERAL && !additive(r->g->attention)) return;
    const float *Wk = r->p[P_SCORE_W] + (ld - d);
    if (r->gr[P_SCORE_W]) gf_sgemm(true, false, d, d, BS, 1.0f, r->dK, d, r->M, d, 1.0f, r->gr[P_SCORE_W] + (ld - d), ld);
    if (r->dM) gf_sgemm(false, false, BS, d, d, 1.0f, r->dK, d, Wk, ld, 1.0f, r->dM, d);
}

/* The queries of a step: q (B, d) = W1 x (additive: score.weight's first half) or x itself. */
static const float *queries(const ga_run *r, const float *x, int64_t ldx) {
    if (!additive(r->g->attention)) return x;
    gf_sgemm(false, true, r->B, r->d, r->d, 1.0f, x, ldx, r->p[P_SCORE_W], 2 * r->d, 0.0f, r->q, r->d);
    return r->q;
}

/* ---- forward ---- */

/* The context of none: M at the row's last real source position. */
static const float *last_state(const ga_run *r, int64_t b) {
    int64_t j = r->S - 1;
    while (j > 0 && !src_real(r, b, j)) j--;
    return r->M + (b * r->S + j) * r->d;
}

/* Step t's second input e (B, d): the context (none, bahdanau: attended from s_{t-1}) or out_{t-1}. */
static void step_input(const ga_run *r, int64_t t) {
    const int64_t d = r->d, T = r->T;
    const int att = r->g->attention;
    if (att == ATT_BAHDANAU) {
        if (t > 0) queries(r, r->s + (t - 1) * d, T * d);
        else gf_zero(r->q, r->B * d);
    }
    for (int64_t b = 0; b < r->B; b++) {
        float *e = r->e + b * d, *c = row(r, r->c, b, t);
        if (att == ATT_NONE) memcpy(c, last_state(r, b), (size_t)d * sizeof *c);
        if (att == ATT_BAHDANAU) attend(r, b, r->q + b * d, r->a + (b * r->T + t) * r->S, c);
        if (!luong(att)) memcpy(e, c, (size_t)d * sizeof *e);
        else if (t > 0) memcpy(e, row(r, r->out, b, t - 1), (size_t)d * sizeof *e);
        else memset(e, 0, (size_t)d * sizeof *e);
    }
}

/* The GRU update of step t: s_t (and its gates) from gi (the input's projection) and s_{t-1}; a padded
 * position keeps s_{t-1}. */
static void step_gru(const ga_run *r, int64_t t) {
    const int64_t d = r->d, T = r->T, B = r->B;
    for (int64_t b = 0; b < B; b++) memcpy(r->gis + b * 3 * d, r->gi + (b * T + t) * 3 * d, (size_t)(3 * d) * sizeof(float));
    if (second_input(r->g)) /* gi += e W_ih[:, d:]^T */
        gf_sgemm(false, true, B, 3 * d, d, 1.0f, r->e, d, r->p[P_IH_W] + d, 2 * d, 1.0f, r->gis, 3 * d);
    if (t > 0) gf_linear_forward(r->gh, r->s + (t - 1) * d, T * d, r->p[P_HH_W], d, r->p[P_HH_B], B, d, 3 * d, 0.0f);
    else
        for (int64_t b = 0; b < B; b++) gf_copy(r->gh + b * 3 * d, r->p[P_HH_B], 3 * d);
    for (int64_t b = 0; b < B; b++) {
        const float *hp = row(r, r->s, b, t - 1);
        float *h = row(r, r->s, b, t);
        gf_gru_cell(d, r->gis + b * 3 * d, r->gh + b * 3 * d, hp, h, row(r, r->r, b, t), row(r, r->z, b, t),
                    row(r, r->n, b, t), row(r, r->ghn, b, t));
        if (!real(r, b, t)) /* a padded position keeps the state */
            for (int64_t j = 0; j < d; j++) h[j] = hp ? hp[j] : 0.0f;
    }
}

/* Luong's attention from s_t, then out_t = tanh(W_o [c_t; s_t] + b_o); a padded position keeps out_{t-1}. */
static void step_output(const ga_run *r, int64_t t) {
    const int64_t d = r->d, T = r->T, B = r->B;
    if (luong(r->g->attention)) {
        const float *q = queries(r, r->s + t * d, T * d);
        const int64_t ldq = additive(r->g->attention) ? d : T * d;
        for (int64_t b = 0; b < B; b++) attend(r, b, q + b * ldq, r->a + (b * T + t) * r->S, row(r, r->c, b, t));
    }
    for (int64_t b = 0; b < B; b++) { /* [c; s], the output layer's input */
        memcpy(r->dcs + b * 2 * d, row(r, r->c, b, t), (size_t)d * sizeof(float));
        memcpy(r->dcs + b * 2 * d + d, row(r, r->s, b, t), (size_t)d * sizeof(float));
    }
    gf_linear_forward(r->dq1, r->dcs, 2 * d, r->p[P_OUT_W], 2 * d, r->p[P_OUT_B], B, 2 * d, d, 0.0f);
    for (int64_t b = 0; b < B; b++) {
        float *o = row(r, r->out, b, t);
        const float *prev = row(r, r->out, b, t - 1);
        for (int64_t i = 0; i < d; i++) o[i] = real(r, b, t) ? gf_tanh_rel_v(r->dq1[b * d + i]) : prev ? prev[i] : 0.0f;
    }
}

static void ga_forward(const gf_mixer_call *cl, float *out, const float *inp) {
    const ga_run r = ga_layout(cl);
    const int64_t d = r.d;
    keys_forward(&r);
    gf_linear_forward(r.gi, inp, d, r.p[P_IH_W], r.din, r.p[P_IH_B], r.N, d, 3 * d, 0.0f); /* the x part */
    for (int64_t t = 0; t < r.T; t++) {
        step_input(&r, t);
        step_gru(&r, t);
        step_output(&r, t);
    }
    gf_copy(out, r.out, r.N * d);
}

/* ---- backward ---- */

/* Step t back, its output layer and Luong's attention: da (the output's pre-tanh gradient, 0 at padded
 * positions), dcs = da W_o, and into dq1 the gradient of s_t from the attention; a padded position hands its
 * output's gradient on to out_{t-1} (dO). */
static void back_output(const ga_run *r, int64_t t, const float *dout) {
    const int64_t d = r->d, T = r->T, B = r->B;
    for (int64_t b = 0; b < B; b++) {
        const int64_t i = b * T + t;
        float *da = r->da + i * d, *dO = r->dO + b * d;
        const float *o = r->out + i * d;
        for (int64_t k = 0; k < d; k++) {
            const float g = dout[i * d + k] + dO[k];
            da[k] = real(r, b, t) ? g * (1.0f - o[k] * o[k]) : 0.0f;
            dO[k] = real(r, b, t) ? 0.0f : g;
        }
    }
    gf_sgemm(false, false, B, 2 * d, d, 1.0f, r->da + t * d, T * d, r->p[P_OUT_W], 2 * d, 0.0f, r->dcs, 2 * d);
    gf_zero(r->dq1, B * d);
    if (!luong(r->g->attention)) return;
    const float *q = queries(r, r->s + t * d, T * d);
    const int64_t ldq = additive(r->g->attention) ? d : T * d;
    for (int64_t b = 0; b < B; b++) {
        if (!real(r, b, t)) continue;
        float *dq = r->dq + (b * T + t) * d;
        attend_back(r, b, q + b * ldq, r->a + (b * T + t) * r->S, r->dcs + b * 2 * d, dq);
        memcpy(r->dq1 + b * d, dq, (size_t)d * sizeof(float));
    }
    if (additive(r->g->attention)) { /* d(W1 s)/ds: dq1 W1 */
        memcpy(r->e, r->dq1, (size_t)(B * d) * sizeof(float));
        gf_sgemm(false, false, B, d, d, 1.0f, r->e, d, r->p[P_SCORE_W], 2 * d, 0.0f, r->dq1, d);
    }
}

/* Step t's GRU back: g = dS + the output layer's and the attention's gradients of s_t; dgi and dgh of the
 * position; into gh (as dSp) the gradient of s_{t-1} through the cell. */
static void back_gru(const ga_run *r, int64_t t) {
    const int64_t d = r->d, T = r->T, B = r->B;
    float *dSp = r->gh, *g = r->e; /* e: free until back_input */
    for (int64_t b = 0; b < B; b++) {
        const int64_t i = b * T + t;
        float *dgi = r->gi + i * 3 * d, *dgh = r->dgh + i * 3 * d, *sp = dSp + b * d, *gb = g + b * d;
        if (!real(r, b, t)) { /* s_t = s_{t-1}: its gradient passes on */
            memset(dgi, 0, (size_t)(3 * d) * sizeof(float)), memset(dgh, 0, (size_t)(3 * d) * sizeof(float));
            memcpy(sp, r->dS + b * d, (size_t)d * sizeof(float));
            continue;
        }
        for (int64_t j = 0; j < d; j++) gb[j] = r->dS[b * d + j] + r->dcs[b * 2 * d + d + j] + r->dq1[b * d + j];
        gf_gru_cell_backward(d, gb, row(r, r->s, b, t - 1), r->r + i * d, r->z + i * d, r->n + i * d, r->ghn + i * d,
                             dgi, dgh, sp);
    }
    if (t > 0) gf_sgemm(false, false, B, d, 3 * d, 1.0f, r->dgh + t * 3 * d, T * 3 * d, r->p[P_HH_W], d, 1.0f, dSp, d);
}

/* Step t's second input back: de = dgi W_ih[:, d:]; Luong's feeding hands it to out_{t-1}; none's context (the
 * last state) and Bahdanau's (attended from s_{t-1}) take it with the output layer's. Then dS = dSp. */
static void back_input(const ga_run *r, int64_t t) {
    const int64_t d = r->d, T = r->T, B = r->B;
    const int att = r->g->attention;
    if (second_input(r->g))
        gf_sgemm(false, false, B, d, 3 * d, 1.0f, r->gi + t * 3 * d, T * 3 * d, r->p[P_IH_W] + d, 2 * d, 0.0f, r->de, d);
    const float *q = att == ATT_BAHDANAU && t > 0 ? queries(r, r->s + (t - 1) * d, T * d) : NULL;
    gf_zero(r->e, B * d); /* Bahdanau: the query's gradient, row by row */
    for (int64_t b = 0; b < B; b++) {
        if (!real(r, b, t)) continue;
        float *de = r->de + b * d, *dc = r->dcs + b * 2 * d;
        if (luong(att)) {
            if (r->g->input_feeding) memcpy(r->dO + b * d, de, (size_t)d * sizeof(float));
            continue;
        }
        for (int64_t k = 0; k < d; k++) dc[k] += de[k];
        if (att == ATT_NONE && r->dM) {
            float *m = r->dM + (last_state(r, b) - r->M);
            for (int64_t k = 0; k < d; k++) m[k] += dc[k];
        } else if (att == ATT_BAHDANAU) {
            float *dq = r->dq + (b * T + t) * d;
            attend_back(r, b, q ? q + b * d : r->e + b * d, r->a + (b * T + t) * r->S, dc, dq);
            memcpy(r->e + b * d, dq, (size_t)d * sizeof(float));
            if (!q) gf_zero(dq, d); /* s_{-1} = 0: no weight gradient */
        }
    }
    if (att == ATT_BAHDANAU && t > 0) /* dS_{t-1} += dq W1 */
        gf_sgemm(false, false, B, d, d, 1.0f, r->e, d, r->p[P_SCORE_W], 2 * d, 1.0f, r->gh, d);
    memcpy(r->dS, r->gh, (size_t)(B * d) * sizeof(float));
}

/* The weight gradients over all positions at once, and dinp. */
static void back_weights(const ga_run *r, float *dinp, const float *inp) {
    const int64_t d = r->d, T = r->T, B = r->B, N = r->N;
    float *const *g = r->gr;
    if (g[P_OUT_W]) {
        gf_sgemm(true, false, d, d, N, 1.0f, r->da, d, r->c, d, 1.0f, g[P_OUT_W], 2 * d);
        gf_sgemm(true, false, d, d, N, 1.0f, r->da, d, r->s, d, 1.0f, g[P_OUT_W] + d, 2 * d);
    }
    if (g[P_OUT_B]) gf_colsum_acc(g[P_OUT_B], r->da, d, N, d);
    if (g[P_IH_W]) gf_sgemm(true, false, 3 * d, d, N, 1.0f, r->gi, 3 * d, inp, d, 1.0f, g[P_IH_W], r->din);
    if (g[P_IH_W] && !luong(r->g->attention)) /* the context: the second input */
        gf_sgemm(true, false, 3 * d, d, N, 1.0f, r->gi, 3 * d, r->c, d, 1.0f, g[P_IH_W] + d, 2 * d);
    if (g[P_IH_B]) gf_colsum_acc(g[P_IH_B], r->gi, 3 * d, N, 3 * d);
    if (g[P_HH_B]) gf_colsum_acc(g[P_HH_B], r->dgh, 3 * d, N, 3 * d);
    const bool feed = luong(r->g->attention) && r->g->input_feeding;
    for (int64_t b = 0; T > 1 && b < B; b++) { /* what position t read of position t - 1: s (and out, fed) */
        const int64_t i1 = b * T + 1, i0 = b * T;
        if (g[P_HH_W]) gf_sgemm(true, false, 3 * d, d, T - 1, 1.0f, r->dgh + i1 * 3 * d, 3 * d, r->s + i0 * d, d, 1.0f, g[P_HH_W], d);
        if (g[P_IH_W] && feed)
            gf_sgemm(true, false, 3 * d, d, T - 1, 1.0f, r->gi + i1 * 3 * d, 3 * d, r->out + i0 * d, d, 1.0f, g[P_IH_W] + d, 2 * d);
        if (g[P_SCORE_W] && r->g->attention == ATT_BAHDANAU) /* W1's input: s_{t-1} */
            gf_sgemm(true, false, d, d, T - 1, 1.0f, r->dq + i1 * d, d, r->s + i0 * d, d, 1.0f, g[P_SCORE_W], 2 * d);
    }
    if (g[P_SCORE_W] && r->g->attention == ATT_CONCAT) /* W1's input: s_t */
        gf_sgemm(true, false, d, d, N, 1.0f, r->dq, d, r->s, d, 1.0f, g[P_SCORE_W], 2 * d);
    gf_sgemm(false, false, N, d, 3 * d, 1.0f, r->gi, 3 * d, r->p[P_IH_W], r->din, 1.0f, dinp, d);
    keys_backward(r);
}

static void ga_backward(const gf_mixer_call *cl, float *dinp, const float *dout, const float *inp) {
    const ga_run r = ga_layout(cl);
    const int64_t d = r.d;
    gf_zero(r.dq, r.N * d);
    gf_zero(r.dK, r.B * r.S * d);
    gf_zero(r.dS, r.B * d);
    gf_zero(r.dO, r.B * d);
    for (int64_t t = r.T - 1; t >= 0; t--) {
        back_output(&r, t, dout);
        back_gru(&r, t);
        back_input(&r, t);
    }
    back_weights(&r, dinp, inp);
}

/* ---- streaming (gf_model_decode): the state is s_{t-1} | out_{t-1} ---- */

static int64_t ga_state_floats(const gf_config *cfg, int layer, int64_t cap) {
    (void)cap;
    return 2 * gf_layer_dim(cfg, layer);
}

/* a forward's saved and scratch for one row of two positions: the previous one (the state), the new one */
static int64_t ga_step_scratch_floats(const gf_config *cfg, int layer, int64_t cap) {
    (void)cap;
    return ga_saved_floats(cfg, layer, 1, 2) + ga_scratch_floats(cfg, layer, 1, 2, 1);
}

/* The forward's own steps on one row: position 0 as the forward's first step (T = 1); a later one as step 1 of
 * two positions whose first holds the state. mem_work (memory_floats(1, 2, S)) keeps the keys at 2 S either
 * way: the first step computes them, and every stream over this memory reads them. */
static void ga_step(const gf_mixer_step *st, float *out, const float *inp) {
    const int64_t d = gf_layer_dim(st->cfg, st->layer), T = st->pos ? 2 : 1, t = T - 1;
    const gf_mixer_call cl = {.cfg = st->cfg, .layer = st->layer, .B = 1, .T = T, .p = st->p, .saved = st->scratch,
                              .scratch = st->scratch + ga_saved_floats(st->cfg, st->layer, 1, 2), .n_threads = 1,
                              .mem = st->mem, .S = st->S, .mem_work = st->mem_work + (T == 1 ? st->S : 0)};
    const ga_run r = ga_layout(&cl);
    if (t == 0) keys_forward(&r);
    else memcpy(r.s, st->state, (size_t)d * sizeof(float)), memcpy(r.out, st->state + d, (size_t)d * sizeof(float));
    gf_linear_forward(r.gi + t * 3 * d, inp, d, r.p[P_IH_W], r.din, r.p[P_IH_B], 1, d, 3 * d, 0.0f);
    step_input(&r, t);
    step_gru(&r, t);
    step_output(&r, t);
    memcpy(st->state, row(&r, r.s, 0, t), (size_t)d * sizeof(float));
    memcpy(st->state + d, row(&r, r.out, 0, t), (size_t)d * sizeof(float));
    memcpy(out, row(&r, r.out, 0, t), (size_t)d * sizeof(float));
}

/* The weights of the last forward: a (none: all on the last real source position, its one context). */
static void ga_memory_weights(const gf_mixer_call *cl, float *out) {
    const ga_run r = ga_layout(cl);
    const int64_t S = r.S;
    if (r.g->attention != ATT_NONE) {
        memcpy(out, r.a, (size_t)(r.B * r.T * S) * sizeof(float));
        return;
    }
    for (int64_t b = 0; b < r.B; b++) {
        const int64_t last = (last_state(&r, b) - r.M) / r.d - b * S;
        for (int64_t t = 0; t < r.T; t++)
            for (int64_t j = 0; j < S; j++) out[(b * r.T + t) * S + j] = j == last ? 1.0f : 0.0f;
    }
}

static int ga_check(const gf_config *cfg, int layer, const char *src) {
    if (gf_stack_direction(cfg, gf_layer_stack(cfg, layer)) != GF_CAUSAL)
        return gf_fail("%s: layer %d: mixer \"gru-attn\" is a causal decoder", src, layer);
    return 0;
}

const gf_mixer_ops gf_mixer_gru_attn = {
    .version = GF_MIXER_OPS_VERSION,
    .name = "gru-attn",
    .letter = 'u',
    .help = "A GRU decoder with attention of its own over the encoder's output (an encoder-decoder's decoder\n"
            "layers only): none (Cho et al. 2014: the last encoder state as the one context), bahdanau (additive,\n"
            "from the previous state, its context fed into the step; arXiv 1409.0473), or Luong's dot, general and\n"
            "concat scores from the new state (arXiv 1508.04025), with input feeding or without; the output\n"
            "tanh(W_o [c_t; s_t] + b_o). T sequential steps per layer; streams in decoding with O(1) state (s and out).",
    .config_size = sizeof(ga_config),
    .keys = KEYS,
    .n_keys = (int)(sizeof KEYS / sizeof KEYS[0]),
    .check = ga_check,
    .gated_skip = false,
    .directions = GF_MIX_CAUSAL,
    .masks = true,
    .param_specs = ga_param_specs,
    .saved_floats = ga_saved_floats,
    .scratch_floats = ga_scratch_floats,
    .forward = ga_forward,
    .backward = ga_backward,
    .state_floats = ga_state_floats,
    .step_scratch_floats = ga_step_scratch_floats,
    .step = ga_step,
    .reads_memory = true,
    .memory_floats = ga_memory_floats,
    .memory_weights = ga_memory_weights,
};
