/* Multi-head scaled dot-product attention with a fused QKV projection, causal or bidirectional, with
 * padded keys masked out.
 *
 * Per (batch, head), queries go in blocks of QB rows: a block's scores against the keys it may see
 * (causal: keys 0 .. last query of the block; bidirectional: all) are formed in a per-thread QB x T scratch,
 * softmaxed and applied to v; only the row log-sum-exp is saved. The backward recomputes each block's
 * probabilities from q, k and the saved log-sum-exp, so no T x T tensor exists at any time and the
 * memory per thread is QB x T, not T x T. */
#include <math.h>
#include <stddef.h>

#include "core/blas.h"
#include "core/error.h"
#include "core/fastmath.h"
#include "core/parallel.h"
#include "mixers/mixer.h"
#include "ops/ops.h"

enum { P_QKV_W, P_QKV_B, P_PROJ_W, P_PROJ_B };

typedef struct attention_config {
    int64_t n_head;
} attention_config;

static const gf_cfg_key KEYS[] = {
    {.name = "n_head", .type = GF_KEY_INT, .off = offsetof(attention_config, n_head), .lo = 1, .hi = 65536,
     .def = "4", .help = "heads; each has d_model / n_head dimensions"},
};

static int64_t n_head(const gf_config *cfg, int layer) {
    return ((const attention_config *)gf_layer_mcfg(cfg, layer))->n_head;
}

static int a_check(const gf_config *cfg, int layer, const char *src) {
    if (gf_layer_dim(cfg, layer) % n_head(cfg, layer) != 0)
        return gf_fail("%s: layer %d: d_model %lld is not divisible by n_head %lld", src, layer,
                       (long long)gf_layer_dim(cfg, layer), (long long)n_head(cfg, layer));
    return 0;
}

static int a_param_specs(const gf_config *cfg, int layer, gf_param_spec *s) {
    (void)layer;
    int64_t d = gf_layer_dim(cfg, layer);
    gf_param_spec_set(&s[P_QKV_W], "qkv.weight", 2, 3 * d, d, GF_INIT_NORMAL);
    gf_param_spec_set(&s[P_QKV_B], "qkv.bias", 1, 3 * d, 0, GF_INIT_ZERO);
    gf_param_spec_set(&s[P_PROJ_W], "proj.weight", 2, d, d, GF_INIT_NORMAL);
    gf_param_spec_set(&s[P_PROJ_B], "proj.bias", 1, d, 0, GF_INIT_ZERO);
    return 4;
}

/* saved: qkv (N,3d) | o (N,d) | lse (B,H,T) */
static int64_t a_saved_floats(const gf_config *cfg, int layer, int64_t B, int64_t T) {
    int64_t N = B * T, d = gf_layer_dim(cfg, layer);
    return 4 * N * d + B * n_head(cfg, layer) * T;
}

enum { QB = 64 }; /* query rows per block */

/* scratch: per thread 2 (QB,T) | do (N,d) | dqkv (N,3d) */
static int64_t a_scratch_floats(const gf_config *cfg, int layer, int64_t B, int64_t T, int n_threads) {
    (void)layer;
    int64_t N = B * T, d = gf_layer_dim(cfg, layer);
    return (int64_t)n_threads * 2 * QB * T + 4 * N * d;
}

/* P (nq, kl) = softmax(scale * q k^T) for the queries i0 .. i0+nq-1 against keys 0 .. kl-1 (causal:
 * kl = i0 + nq and query i sees keys 0 .. i; bidirectional: kl = T), padded keys (km) excluded; lse from
 * `lse_in` when set, else computed and stored into lse_out. */
static void probs(float *P, const float *q, const float *k, int64_t ld, int64_t i0, int64_t nq, int64_t kl,
                  int64_t dh, float scale, bool causal, const uint8_t *km, const float *lse_in, float *lse_out) {
    gf_sgemm(false, true, nq, kl, dh, scale, q + i0 * ld, ld, k, ld, 0.0f, P, kl);
    for (int64_t ii = 0; ii < nq; ii++) {
        float *row = P + ii * kl;
        const int64_t len = causal ? i0 + ii + 1 : kl;
        gf_softmax_row(row, len, km, lse_in ? lse_in + i0 + ii : NULL, lse_out ? lse_out + i0 + ii : NULL);
        for (int64_t j = len; j < kl; j++) row[j] = 0.0f;
    }
}

static void a_forward(const gf_mixer_call *c, float *out, const float *inp) {
    const gf_config *cfg = c->cfg;
    const int64_t B = c->B, T = c->T, N = B * T, d = gf_layer_dim(cfg, c->layer), H = n_head(cfg, c->layer), dh = d / H;
    float *qkv = c->saved, *o = qkv + 3 * N * d, *lse = o + N * d;
    const float scale = 1.0f / sqrtf((float)dh);

    gf_linear_forward(qkv, inp, d, c->p[P_QKV_W], d, c->p[P_QKV_B], N, d, 3 * d, 0.0f);
#pragma omp parallel for schedule(static) num_threads(c->n_threads)
    for (int64_t bh = 0; bh < B * H; bh++) {
        const int64_t b = bh / H, h = bh % H;
        float *P = c->scratch + (int64_t)gf_thread_id() * 2 * QB * T;
        const float *q = qkv + b * T * 3 * d + h * dh, *k = q + d, *v = q + 2 * d;
        const uint8_t *km = c->mask ? c->mask + b * T : NULL;
        for (int64_t i0 = 0; i0 < T; i0 += QB) {
            const int64_t nq = T - i0 < QB ? T - i0 : QB, kl = !c->bidirectional ? i0 + nq : T;
            probs(P, q, k, 3 * d, i0, nq, kl, dh, scale, !c->bidirectional, km, NULL, lse + bh * T);
            gf_sgemm(false, false, nq, dh, kl, 1.0f, P, kl, v, 3 * d, 0.0f, o + (b * T + i0) * d + h * dh, d);
        }
    }
    gf_linear_forward(out, o, d, c->p[P_PROJ_W], d, c->p[P_PROJ_B], N, d, d, 0.0f);
}

static void a_backward(const gf_mixer_call *c, float *dinp, const float *dout, const float *inp) {
    const gf_config *cfg = c->cfg;
    const int64_t B = c->B, T = c->T, N = B * T, d = gf_layer_dim(cfg, c->layer), H = n_head(cfg, c->layer), dh = d / H;
    const float *qkv = c->saved, *o = qkv + 3 * N * d, *lse = o + N * d;
    float *dO = c->scratch + (int64_t)c->n_threads * 2 * QB * T, *dqkv = dO + N * d;
    const float scale = 1.0f / sqrtf((float)dh);

    gf_zero(dO, N * d);
    gf_linear_backward(dO, d, c->g[P_PROJ_W], d, c->g[P_PROJ_B], dout, o, d, c->p[P_PROJ_W], d, N, d, d);
    gf_zero(dqkv, 3 * N * d);
#pragma omp parallel for schedule(static) num_threads(c->n_threads)
    for (int64_t bh = 0; bh < B * H; bh++) {
        const int64_t b = bh / H, h = bh % H;
        float *P = c->scratch + (int64_t)gf_thread_id() * 2 * QB * T, *dS = P + QB * T;
        const float *q = qkv + b * T * 3 * d + h * dh, *k = q + d, *v = q + 2 * d;
        float *dq = dqkv + b * T * 3 * d + h * dh, *dk = dq + d, *dv = dq + 2 * d;
        const uint8_t *km = c->mask ? c->mask + b * T : NULL;
        for (int64_t i0 = 0; i0 < T; i0 += QB) {
            const int64_t nq = T - i0 < QB ? T - i0 : QB, kl = !c->bidirectional ? i0 + nq : T;
            const float *dOh = dO + (b * T + i0) * d + h * dh;
            probs(P, q, k, 3 * d, i0, nq, kl, dh, scale, !c->bidirectional, km, lse + bh * T, NULL);
            gf_sgemm(true, false, kl, dh, nq, 1.0f, P, kl, dOh, d, 1.0f, dv, 3 * d);  /* dv += P^T dO */
            gf_sgemm(false, true, nq, kl, dh, 1.0f, dOh, d, v, 3 * d, 0.0f, dS, kl);  /* dP = dO v^T */
            for (int64_t ii = 0; ii < nq; ii++) {                                   /* dS = P (dP - rowdot) */
                float *pr = P + ii * kl, *sr = dS + ii * kl;
                const int64_t len = !c->bidirectional ? i0 + ii + 1 : kl;
                float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
                for (int64_t j = 0; j < len; j++) dot += pr[j] * sr[j];
#pragma omp simd
                for (int64_t j = 0; j < len; j++) sr[j] = pr[j] * (sr[j] - dot) * scale;
                for (int64_t j = len; j < kl; j++) sr[j] = 0.0f;
            }
            gf_sgemm(false, false, nq, dh, kl, 1.0f, dS, kl, k, 3 * d, 1.0f, dq + i0 * 3 * d, 3 * d); /* dq = dS k */
            gf_sgemm(true, false, kl, dh, nq, 1.0f, dS, kl, q + i0 * 3 * d, 3 * d, 1.0f, dk, 3 * d);  /* dk += dS^T q */
        }
    }
    gf_linear_backward(dinp, d, c->g[P_QKV_W], d, c->g[P_QKV_B], dqkv, inp, d, c->p[P_QKV_W], d, N, d, 3 * d);
}

/* ---- streaming: a KV cache ----------------------------------------------------------------------------- */

/* state: per position, k (d) then v (d): appending positions only appends floats */
static int64_t a_state_floats(const gf_config *cfg, int layer, int64_t cap) {
    (void)layer;
    return cap * 2 * gf_layer_dim(cfg, layer);
}

/* step scratch: qkv (3d) | o (d) | scores (H, cap) */
static int64_t a_step_scratch_floats(const gf_config *cfg, int layer, int64_t cap) {
    return 4 * gf_layer_dim(cfg, layer) + n_head(cfg, layer) * cap;
}

static void a_step(const gf_mixer_step *s, float *out, const float *inp) {
    const gf_config *cfg = s->cfg;
    const int64_t d = gf_layer_dim(cfg, s->layer), H = n_head(cfg, s->layer), dh = d / H, n = s->pos + 1;
    float *qkv = s->scratch, *o = qkv + 3 * d, *sc = o + d;
    const float scale = 1.0f / sqrtf((float)dh);
    gf_linear_forward(qkv, inp, d, s->p[P_QKV_W], d, s->p[P_QKV_B], 1, d, 3 * d, 0.0f);
    float *kv = s->state + s->pos * 2 * d;
    for (int64_t j = 0; j < 2 * d; j++) kv[j] = qkv[d + j];
    /* the same arithmetic as probs() and the P v product of the batch forward, one query row */
#pragma omp parallel for schedule(static) if (n * d > GF_PAR_MIN)
    for (int64_t h = 0; h < H; h++) {
        const float *q = qkv + h * dh;
        float *row = sc + h * s->cap, mx = -INFINITY, sum = 0.0f;
        for (int64_t j = 0; j < n; j++) {
            const float *k = s->state + j * 2 * d + h * dh;
            float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
            for (int64_t e = 0; e < dh; e++) dot += q[e] * k[e];
            row[j] = scale * dot;
            mx = row[j] > mx ? row[j] : mx;
        }
#pragma omp simd reduction(+ : sum)
        for (int64_t j = 0; j < n; j++) sum += gf_exp_fast(row[j] - mx);
        const float l = mx + logf(sum);
        float *oh = o + h * dh;
        for (int64_t e = 0; e < dh; e++) oh[e] = 0.0f;
        for (int64_t j = 0; j < n; j++) {
            const float pj = gf_exp_fast(row[j] - l), *v = s->state + j * 2 * d + d + h * dh;
#pragma omp simd
            for (int64_t e = 0; e < dh; e++) oh[e] += pj * v[e];
        }
    }
    gf_linear_forward(out, o, d, s->p[P_PROJ_W], d, s->p[P_PROJ_B], 1, d, d, 0.0f);
}

const gf_mixer_ops gf_mixer_attention = {
    .version = GF_MIXER_OPS_VERSION,
    .name = "attention",
    .letter = 'a',
    .help = "Multi-head scaled dot-product attention with a fused QKV projection (the Transformer's), causal or\n"
            "bidirectional. Quadratic in the sequence length; streams (causal) with a KV cache of 2 d floats per\n"
            "position.",
    .config_size = sizeof(attention_config),
    .keys = KEYS,
    .n_keys = (int)(sizeof KEYS / sizeof KEYS[0]),
    .check = a_check,
    .gated_skip = false,
    .directions = GF_MIX_CAUSAL | GF_MIX_BIDIRECTIONAL,
    .masks = true,
    .param_specs = a_param_specs,
    .saved_floats = a_saved_floats,
    .scratch_floats = a_scratch_floats,
    .forward = a_forward,
    .backward = a_backward,
    .state_floats = a_state_floats,
    .step_scratch_floats = a_step_scratch_floats,
    .step = a_step,
};
