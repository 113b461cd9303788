/* Attention of one head, the blocked softmax (ops.h, gf_attn_head), and cross-attention over it.
 *
 * Per head, queries go in blocks of QB rows: a block's scores against the keys it may see (causal: keys
 * 0 .. the block's last query; else all S) are formed in a per-thread QB x S scratch, softmaxed and applied
 * to v; only the row log-sum-exp is saved. The backward recomputes each block's probabilities from q, k
 * and the saved log-sum-exp, so no T x S tensor is kept and the memory per thread is 2 QB x S (the register
 * tiles': about 2 (QB + dh) x S). The attention mixer (mixers/attention.c) runs it over one sequence, causal
 * or not; cross-attention (gf_sdpa, below) over another, and mixers/linformer.c over keys projected along the
 * sequence, reading q in place in its fused qkv (gf_sdpa.ldq). Under fp32-fast the heads run attn_fast.c's
 * register tiles. */
#include <math.h>

#include "compute/blas.h"
#include "compute/fastmath.h"
#include "compute/parallel.h"
#include "ops/ops.h"

enum { QB = GF_ATTN_HEAD_QB };

/* the default path's 2 QB x S, or the register tiles' layout (attn_fast.c) where this build has them */
int64_t gf_attn_head_scratch_floats(int64_t S, int64_t dh) {
    const int64_t blas = 2 * QB * S, tiles = gf_attn_head_fast_floats(S, dh);
    return tiles > blas ? tiles : blas;
}

float *gf_attn_head_thread_scratch(float *arena, int64_t S, int64_t dh) {
    return arena + (int64_t)gf_thread_id() * gf_attn_head_scratch_floats(S, dh);
}

float gf_attn_head_scale(const gf_attn_head *a) { return 1.0f / sqrtf((float)a->dh); }

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
        float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
        for (int64_t j = 0; j < S; j++) mx = row[j] > mx ? row[j] : mx;
        if (mx == -INFINITY) return INFINITY;
        l = mx + logf(gf_sum_exp_f(row, S, mx));
    }
    if (l != INFINITY) {
#pragma omp simd
        for (int64_t j = 0; j < S; j++) row[j] = gf_exp_fast_v(row[j] - l);
    }
    return l;
}

void gf_softmax_row(float *row, int64_t S, const uint8_t *km, const float *lse_in, float *lse_out) {
    for (int64_t j = 0; km && j < S; j++)
        if (!km[j]) row[j] = -INFINITY;
    const float l = gf_fast_numerics() ? softmax_fast(row, S, lse_in) : softmax_exact(row, S, lse_in);
    if (!lse_in) *lse_out = l;
    if (l == INFINITY) {
        for (int64_t j = 0; j < S; j++) row[j] = 0.0f;
        return;
    }
    for (int64_t j = 0; km && j < S; j++)
        if (!km[j]) row[j] = 0.0f; /* exactly: a padded key's value then adds nothing */
}

void gf_softmax_back_row(float *ds, const float *p, int64_t len, float scale) {
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int64_t j = 0; j < len; j++) dot += p[j] * ds[j];
#pragma omp simd
    for (int64_t j = 0; j < len; j++) ds[j] = p[j] * (ds[j] - dot) * scale;
}

/* P (nq, kl) = softmax(scale q k^T) for the block's queries i0 .. i0+nq-1 over keys 0 .. kl-1: causal, query
 * i's row over keys 0 .. i and 0 after; lse (indexed by query) from lse_in when set, else into lse_out. */
static void probs(const gf_attn_head *a, float *P, int64_t i0, int64_t nq, int64_t kl, float scale,
                  const float *lse_in, float *lse_out) {
    gf_sgemm(false, true, nq, kl, a->dh, scale, a->q + i0 * a->ldq, a->ldq, a->k, a->ldk, 0.0f, P, kl);
    for (int64_t ii = 0; ii < nq; ii++) {
        float *row = P + ii * kl;
        const int64_t len = a->causal ? i0 + ii + 1 : kl;
        gf_softmax_row(row, len, a->km, lse_in ? lse_in + i0 + ii : NULL, lse_out ? lse_out + i0 + ii : NULL);
        for (int64_t j = len; j < kl; j++) row[j] = 0.0f;
    }
}

void gf_attn_head_forward_exact(const gf_attn_head *a, float *o, float *lse) {
    const float scale = gf_attn_head_scale(a);
    for (int64_t i0 = 0; i0 < a->T; i0 += QB) {
        const int64_t nq = a->T - i0 < QB ? a->T - i0 : QB, kl = gf_attn_head_keys(a, i0, nq);
        probs(a, a->scratch, i0, nq, kl, scale, NULL, lse);
        gf_sgemm(false, false, nq, a->dh, kl, 1.0f, a->scratch, kl, a->v, a->ldv, 0.0f, o + i0 * a->ldo, a->ldo);
    }
}

void gf_attn_head_backward_exact(const gf_attn_head *a, float *dq, float *dk, float *dv, const float *dout,
                                 const float *lse) {
    const float scale = gf_attn_head_scale(a);
    const int64_t dh = a->dh;
    float *P = a->scratch, *dS = P + QB * a->S;
    for (int64_t i0 = 0; i0 < a->T; i0 += QB) {
        const int64_t nq = a->T - i0 < QB ? a->T - i0 : QB, kl = gf_attn_head_keys(a, i0, nq);
        const float *qi = a->q + i0 * a->ldq, *dOi = dout + i0 * a->ldo;
        probs(a, P, i0, nq, kl, scale, lse, NULL);
        gf_sgemm(true, false, kl, dh, nq, 1.0f, P, kl, dOi, a->ldo, 1.0f, dv, a->ldv);  /* dv += P^T dO */
        gf_sgemm(false, true, nq, kl, dh, 1.0f, dOi, a->ldo, a->v, a->ldv, 0.0f, dS, kl); /* dP = dO v^T */
        for (int64_t ii = 0; ii < nq; ii++) {
            const int64_t len = a->causal ? i0 + ii + 1 : kl;
            gf_softmax_back_row(dS + ii * kl, P + ii * kl, len, scale);
            for (int64_t j = len; j < kl; j++) dS[ii * kl + j] = 0.0f;
        }
        gf_sgemm(false, false, nq, dh, kl, 1.0f, dS, kl, a->k, a->ldk, 1.0f, dq + i0 * a->ldq, a->ldq); /* dq += dS k */
        gf_sgemm(true, false, kl, dh, nq, 1.0f, dS, kl, qi, a->ldq, 1.0f, dk, a->ldk);                  /* dk += dS^T q */
    }
}

static bool head_fast(void) { return gf_fast_numerics() && gf_attn_head_fast_available(); }

void gf_attn_head_forward(const gf_attn_head *a, float *o, float *lse) {
    if (head_fast())
        gf_attn_head_forward_fast(a, o, lse);
    else
        gf_attn_head_forward_exact(a, o, lse);
}

void gf_attn_head_backward(const gf_attn_head *a, float *dq, float *dk, float *dv, const float *dout,
                           const float *lse) {
    if (head_fast())
        gf_attn_head_backward_fast(a, dq, dk, dv, dout, lse);
    else
        gf_attn_head_backward_exact(a, dq, dk, dv, dout, lse);
}

/* ---- cross-attention: every (batch row, head) a gf_attn_head ---------------------------------------- */

int64_t gf_sdpa_scratch_floats(int64_t S, int64_t dh, int n_threads) {
    return (int64_t)n_threads * gf_attn_head_scratch_floats(S, dh);
}

/* (b, h)'s head: q, k, v and o at their rows of b, columns of h */
static gf_attn_head sdpa_head(const gf_sdpa *a, int64_t bh, const float *q, const float *k, const float *v) {
    const int64_t b = bh / a->H, h = bh % a->H, dh = a->d / a->H, lq = a->ldq ? a->ldq : a->d;
    return (gf_attn_head){.q = q + b * a->T * lq + h * dh, .k = k + b * a->S * a->d + h * dh,
                          .v = v + b * a->S * a->d + h * dh, .ldq = lq, .ldk = a->d, .ldv = a->d, .ldo = a->d,
                          .T = a->T, .S = a->S, .dh = dh, .causal = false, .km = a->kmask ? a->kmask + b * a->S : NULL,
                          .scratch = gf_attn_head_thread_scratch(a->scratch, a->S, dh)};
}

void gf_sdpa_forward(const gf_sdpa *a, float *o, float *lse, const float *q, const float *k, const float *v) {
    const int64_t dh = a->d / a->H;
#pragma omp parallel for schedule(static) num_threads(a->n_threads)
    for (int64_t bh = 0; bh < a->B * a->H; bh++) {
        const gf_attn_head hd = sdpa_head(a, bh, q, k, v);
        gf_attn_head_forward(&hd, o + (bh / a->H) * a->T * a->d + (bh % a->H) * dh, lse + bh * a->T);
    }
}

void gf_sdpa_backward(const gf_sdpa *a, float *dq, float *dk, float *dv, const float *dout, const float *lse,
                      const float *q, const float *k, const float *v) {
#pragma omp parallel for schedule(static) num_threads(a->n_threads)
    for (int64_t bh = 0; bh < a->B * a->H; bh++) { /* (b, h) owns dk, dv's rows of b, columns of h */
        const gf_attn_head hd = sdpa_head(a, bh, q, k, v);
        const int64_t qo = hd.q - q, ko = hd.k - k, oo = (bh / a->H) * a->T * a->d + (bh % a->H) * hd.dh;
        gf_attn_head_backward(&hd, dq + qo, dk + ko, dv + ko, dout + oo, lse + bh * a->T);
    }
}
