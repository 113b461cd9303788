/* Causal multi-head scaled dot-product attention with a fused QKV projection.
 *
 * Per (batch, head), scores for all T x T pairs are formed in a per-thread T x T scratch (never one per
 * head), softmaxed under the causal mask and applied to v; only the row log-sum-exp is saved. The
 * backward recomputes the probabilities from q, k and the saved log-sum-exp (O(T^2 dh) per head, like the
 * forward), so no T x T tensor is kept between passes and no T x T gradient exists per head. */
#include <math.h>

#include "core/blas.h"
#include "core/parallel.h"
#include "mixers/mixer.h"
#include "ops/ops.h"

enum { P_QKV_W, P_QKV_B, P_PROJ_W, P_PROJ_B };

static int a_param_specs(const gf_config *cfg, int layer, gf_param_spec *s) {
    (void)layer;
    int64_t d = cfg->d_model;
    gf_param_spec_set(&s[P_QKV_W], "qkv.weight", 2, 3 * d, d, GF_INIT_NORMAL);
    gf_param_spec_set(&s[P_QKV_B], "qkv.bias", 1, 3 * d, 0, GF_INIT_ZERO);
    gf_param_spec_set(&s[P_PROJ_W], "proj.weight", 2, d, d, GF_INIT_NORMAL);
    gf_param_spec_set(&s[P_PROJ_B], "proj.bias", 1, d, 0, GF_INIT_ZERO);
    return 4;
}

/* saved: qkv (N,3d) | o (N,d) | lse (B,H,T) */
static int64_t a_saved_floats(const gf_config *cfg, int layer, int64_t B, int64_t T) {
    (void)layer;
    int64_t N = B * T, d = cfg->d_model;
    return 4 * N * d + B * cfg->n_head * T;
}

/* scratch: per thread 2 (T,T) | do (N,d) | dqkv (N,3d) */
static int64_t a_scratch_floats(const gf_config *cfg, int layer, int64_t B, int64_t T, int n_threads) {
    (void)layer;
    int64_t N = B * T, d = cfg->d_model;
    return (int64_t)n_threads * 2 * T * T + 4 * N * d;
}

/* P (T,T) = causal softmax(scale * q k^T), from the saved lse when `lse_in` is set, else computing and
 * storing it into lse_out. */
static void probs(float *P, const float *q, const float *k, int64_t ld, int64_t T, int64_t dh, float scale,
                  const float *lse_in, float *lse_out) {
    gf_sgemm(false, true, T, T, dh, scale, q, ld, k, ld, 0.0f, P, T);
    for (int64_t i = 0; i < T; i++) {
        float *row = P + i * T;
        float l;
        if (lse_in) {
            l = lse_in[i];
        } else {
            float mx = -INFINITY;
            for (int64_t j = 0; j <= i; j++) mx = row[j] > mx ? row[j] : mx;
            double s = 0.0;
            for (int64_t j = 0; j <= i; j++) s += expf(row[j] - mx);
            l = mx + (float)log(s);
            lse_out[i] = l;
        }
        for (int64_t j = 0; j <= i; j++) row[j] = expf(row[j] - l);
        for (int64_t j = i + 1; j < T; j++) row[j] = 0.0f;
    }
}

static void a_forward(const gf_mixer_call *c, float *out, const float *inp) {
    const gf_config *cfg = c->cfg;
    const int64_t B = c->B, T = c->T, N = B * T, d = cfg->d_model, H = cfg->n_head, dh = d / H;
    float *qkv = c->saved, *o = qkv + 3 * N * d, *lse = o + N * d;
    const float scale = 1.0f / sqrtf((float)dh);

    gf_linear_forward(qkv, inp, d, c->p[P_QKV_W], d, c->p[P_QKV_B], N, d, 3 * d, 0.0f);
#pragma omp parallel for schedule(static) num_threads(c->n_threads)
    for (int64_t bh = 0; bh < B * H; bh++) {
        const int64_t b = bh / H, h = bh % H;
        float *P = c->scratch + (int64_t)gf_thread_id() * 2 * T * T;
        const float *q = qkv + b * T * 3 * d + h * dh, *k = q + d, *v = q + 2 * d;
        probs(P, q, k, 3 * d, T, dh, scale, NULL, lse + bh * T);
        gf_sgemm(false, false, T, dh, T, 1.0f, P, T, v, 3 * d, 0.0f, o + b * T * d + h * dh, d);
    }
    gf_linear_forward(out, o, d, c->p[P_PROJ_W], d, c->p[P_PROJ_B], N, d, d, 0.0f);
}

static void a_backward(const gf_mixer_call *c, float *dinp, const float *dout, const float *inp) {
    const gf_config *cfg = c->cfg;
    const int64_t B = c->B, T = c->T, N = B * T, d = cfg->d_model, H = cfg->n_head, dh = d / H;
    const float *qkv = c->saved, *o = qkv + 3 * N * d, *lse = o + N * d;
    float *dO = c->scratch + (int64_t)c->n_threads * 2 * T * T, *dqkv = dO + N * d;
    const float scale = 1.0f / sqrtf((float)dh);

    gf_zero(dO, N * d);
    gf_linear_backward(dO, d, c->g[P_PROJ_W], d, c->g[P_PROJ_B], dout, o, d, c->p[P_PROJ_W], d, N, d, d);
    gf_zero(dqkv, 3 * N * d);
#pragma omp parallel for schedule(static) num_threads(c->n_threads)
    for (int64_t bh = 0; bh < B * H; bh++) {
        const int64_t b = bh / H, h = bh % H;
        float *P = c->scratch + (int64_t)gf_thread_id() * 2 * T * T, *dS = P + T * T;
        const float *q = qkv + b * T * 3 * d + h * dh, *k = q + d, *v = q + 2 * d;
        const float *dOh = dO + b * T * d + h * dh;
        float *dq = dqkv + b * T * 3 * d + h * dh, *dk = dq + d, *dv = dq + 2 * d;
        probs(P, q, k, 3 * d, T, dh, scale, lse + bh * T, NULL);
        gf_sgemm(true, false, T, dh, T, 1.0f, P, T, dOh, d, 1.0f, dv, 3 * d);      /* dv = P^T dO */
        gf_sgemm(false, true, T, T, dh, 1.0f, dOh, d, v, 3 * d, 0.0f, dS, T);      /* dP = dO v^T */
        for (int64_t i = 0; i < T; i++) {                                         /* dS = P (dP - rowdot) */
            float *pr = P + i * T, *sr = dS + i * T;
            float dot = 0.0f;
            for (int64_t j = 0; j <= i; j++) dot += pr[j] * sr[j];
            for (int64_t j = 0; j <= i; j++) sr[j] = pr[j] * (sr[j] - dot) * scale;
            for (int64_t j = i + 1; j < T; j++) sr[j] = 0.0f;
        }
        gf_sgemm(false, false, T, dh, T, 1.0f, dS, T, k, 3 * d, 1.0f, dq, 3 * d);  /* dq = dS k */
        gf_sgemm(true, false, T, dh, T, 1.0f, dS, T, q, 3 * d, 1.0f, dk, 3 * d);   /* dk = dS^T q */
    }
    gf_linear_backward(dinp, d, c->g[P_QKV_W], d, c->g[P_QKV_B], dqkv, inp, d, c->p[P_QKV_W], d, N, d, 3 * d);
}

const gf_mixer_ops gf_mixer_attention = {
    .name = "attention",
    .param_specs = a_param_specs,
    .saved_floats = a_saved_floats,
    .scratch_floats = a_scratch_floats,
    .forward = a_forward,
    .backward = a_backward,
};
