/* Scaled dot-product attention of one sequence's positions over another's (the core of cross-attention):
 * no causal order, padded keys masked out.
 *
 * Per (batch row, head), queries go in blocks of QB rows: a block's scores against the row's S keys are
 * formed in a per-thread QB x S scratch, softmaxed and applied to v; only the row log-sum-exp is saved.
 * The backward recomputes each block's probabilities from q, k and the saved log-sum-exp, so no T x S
 * tensor is kept and the memory per thread is 2 QB x S. (The attention mixer, mixers/attention.c, does
 * the same over one sequence, causal or not; mixers/linformer.c runs this over keys projected along the
 * sequence, reading q in place in its fused qkv: gf_sdpa.ldq.) */
#include <math.h>

#include "core/blas.h"
#include "core/fastmath.h"
#include "core/parallel.h"
#include "ops/ops.h"

enum { QB = 64 }; /* query rows per block */

int64_t gf_sdpa_scratch_floats(int64_t S, int n_threads) { return (int64_t)n_threads * 2 * QB * S; }

/* --precision fp32-fast: one exp an element in the forward (e^(x - max), scaled by 1 / their sum; the
 * default takes a second pass of exps, e^(x - lse), the bits grassflow always had) and the _fma exp.
 * Returns the log-sum-exp, INFINITY when every key is masked out. */
static float softmax_fast(float *row, int64_t S, const float *lse_in) {
    if (lse_in) {
        const float l = *lse_in;
        if (l != INFINITY) {
#pragma omp simd
            for (int64_t j = 0; j < S; j++) row[j] = gf_exp_fast_fma(row[j] - l);
        }
        return l;
    }
    float mx = -INFINITY, s = 0.0f;
#pragma omp simd reduction(max : mx)
    for (int64_t j = 0; j < S; j++) mx = row[j] > mx ? row[j] : mx;
    if (mx == -INFINITY) return INFINITY;
#pragma omp simd reduction(+ : s)
    for (int64_t j = 0; j < S; j++) {
        row[j] = gf_exp_fast_fma(row[j] - mx);
        s += row[j];
    }
    const float inv = 1.0f / s;
#pragma omp simd
    for (int64_t j = 0; j < S; j++) row[j] *= inv;
    return mx + logf(s);
}

/* the default: e^(x - lse), lse = max + log sum e^(x - max) */
static float softmax_exact(float *row, int64_t S, const float *lse_in) {
    float l;
    if (lse_in) {
        l = *lse_in;
    } else {
        float mx = -INFINITY, s = 0.0f;
#pragma omp simd reduction(max : mx)
        for (int64_t j = 0; j < S; j++) mx = row[j] > mx ? row[j] : mx;
        if (mx == -INFINITY) return INFINITY;
#pragma omp simd reduction(+ : s)
        for (int64_t j = 0; j < S; j++) s += gf_exp_fast(row[j] - mx);
        l = mx + logf(s);
    }
    if (l != INFINITY) {
#pragma omp simd
        for (int64_t j = 0; j < S; j++) row[j] = gf_exp_fast(row[j] - l);
    }
    return l;
}

void gf_softmax_row(float *row, int64_t S, const uint8_t *km, const float *lse_in, float *lse_out) {
    for (int64_t j = 0; km && j < S; j++)
        if (!km[j]) row[j] = -INFINITY;
    const float l = gf_fp32_fast() ? softmax_fast(row, S, lse_in) : softmax_exact(row, S, lse_in);
    if (!lse_in) *lse_out = l;
    if (l == INFINITY) {
        for (int64_t j = 0; j < S; j++) row[j] = 0.0f;
        return;
    }
    for (int64_t j = 0; km && j < S; j++)
        if (!km[j]) row[j] = 0.0f; /* exactly: a padded key's value then adds nothing */
}

/* P (nq, S) = softmax(scale q k^T) for nq queries (q: row stride ldq) over S keys (k: row stride d), dh
 * columns each; lse from lse_in when set, else into lse_out. */
static void probs(float *P, const float *q, int64_t ldq, const float *k, int64_t d, int64_t nq, int64_t S,
                  int64_t dh, float scale, const uint8_t *km, const float *lse_in, float *lse_out) {
    gf_sgemm(false, true, nq, S, dh, scale, q, ldq, k, d, 0.0f, P, S);
    for (int64_t i = 0; i < nq; i++)
        gf_softmax_row(P + i * S, S, km, lse_in ? lse_in + i : NULL, lse_out ? lse_out + i : NULL);
}

void gf_sdpa_forward(const gf_sdpa *a, float *o, float *lse, const float *q, const float *k, const float *v) {
    const int64_t T = a->T, S = a->S, d = a->d, H = a->H, dh = d / H, lq = a->ldq ? a->ldq : d;
    const float scale = 1.0f / sqrtf((float)dh);
#pragma omp parallel for schedule(static) num_threads(a->n_threads)
    for (int64_t bh = 0; bh < a->B * H; bh++) {
        const int64_t b = bh / H, h = bh % H;
        float *P = a->scratch + (int64_t)gf_thread_id() * 2 * QB * S;
        const float *qb = q + b * T * lq + h * dh, *kb = k + b * S * d + h * dh, *vb = v + b * S * d + h * dh;
        const uint8_t *km = a->kmask ? a->kmask + b * S : NULL;
        for (int64_t i0 = 0; i0 < T; i0 += QB) {
            const int64_t nq = T - i0 < QB ? T - i0 : QB;
            probs(P, qb + i0 * lq, lq, kb, d, nq, S, dh, scale, km, NULL, lse + bh * T + i0);
            gf_sgemm(false, false, nq, dh, S, 1.0f, P, S, vb, d, 0.0f, o + (b * T + i0) * d + h * dh, d);
        }
    }
}

/* dS = P (dP - rowdot(P, dP)) scale, in place in dS (nq, S) */
static void softmax_back(float *dS, const float *P, int64_t nq, int64_t S, float scale) {
    for (int64_t i = 0; i < nq; i++) {
        const float *pr = P + i * S;
        float *sr = dS + i * S, dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (int64_t j = 0; j < S; j++) dot += pr[j] * sr[j];
#pragma omp simd
        for (int64_t j = 0; j < S; j++) sr[j] = pr[j] * (sr[j] - dot) * scale;
    }
}

void gf_sdpa_backward(const gf_sdpa *a, float *dq, float *dk, float *dv, const float *dout, const float *lse,
                      const float *q, const float *k, const float *v) {
    const int64_t T = a->T, S = a->S, d = a->d, H = a->H, dh = d / H, lq = a->ldq ? a->ldq : d;
    const float scale = 1.0f / sqrtf((float)dh);
#pragma omp parallel for schedule(static) num_threads(a->n_threads)
    for (int64_t bh = 0; bh < a->B * H; bh++) { /* (b, h) owns dk, dv's rows of b, columns of h */
        const int64_t b = bh / H, h = bh % H, qo = b * T * lq + h * dh, oo = b * T * d + h * dh, ko = b * S * d + h * dh;
        float *P = a->scratch + (int64_t)gf_thread_id() * 2 * QB * S, *dS = P + QB * S;
        const uint8_t *km = a->kmask ? a->kmask + b * S : NULL;
        for (int64_t i0 = 0; i0 < T; i0 += QB) {
            const int64_t nq = T - i0 < QB ? T - i0 : QB, r0 = qo + i0 * lq, o0 = oo + i0 * d;
            probs(P, q + r0, lq, k + ko, d, nq, S, dh, scale, km, lse + bh * T + i0, NULL);
            gf_sgemm(true, false, S, dh, nq, 1.0f, P, S, dout + o0, d, 1.0f, dv + ko, d);  /* dv += P^T dO */
            gf_sgemm(false, true, nq, S, dh, 1.0f, dout + o0, d, v + ko, d, 0.0f, dS, S); /* dP = dO v^T */
            softmax_back(dS, P, nq, S, scale);
            gf_sgemm(false, false, nq, dh, S, 1.0f, dS, S, k + ko, d, 1.0f, dq + r0, lq); /* dq += dS k */
            gf_sgemm(true, false, S, dh, nq, 1.0f, dS, S, q + r0, lq, 1.0f, dk + ko, d);  /* dk += dS^T q */
        }
    }
}
