#include <math.h>
#include <string.h>

#include "compute/bf16.h"
#include "compute/blas.h"
#include "compute/fastmath.h"
#include "compute/parallel.h"
#include "ops/ops.h"

/* log sum_v exp(z[v]) of one row z (V), shifted by its maximum. row_lse picks the form (the default's, or
 * the fast numerics') for the loss of the forward pass and for gf_log_softmax_nll alike, so that the batched
 * and the streamed evaluation agree. The default's sum: gf_sum_exp_d (compute/fastmath.h). */
static float row_lse_exact(const float *z, int64_t V) {
    float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
    for (int64_t v = 0; v < V; v++) mx = z[v] > mx ? z[v] : mx;
    return mx + (float)log(gf_sum_exp_d(z, V, mx));
}

/* The fast numerics' form: one pass over the row instead of two (a maximum, then the sum), block by block,
 * the sum so far rescaled when a block raises the maximum; the exp with fused multiply-adds; float sums
 * inside a block, in LANES running sums (16 terms each, then the lanes in order: the same bits whatever
 * vector width the compiler picks, or none), double across blocks. A block's sum is off by at most 30
 * roundings of 2^-24 of itself. The exact form's loop-carried double adds and second pass cost a third of
 * the time. A block of -inf logits only (a masked vocabulary) adds nothing and leaves the maximum alone. */
enum { LSE_BLOCK = 256, LANES = 16 };
static float block_sum_exp(const float *b, int64_t w, float mx) {
    float acc[LANES] = {0};
    int64_t v = 0;
    for (; v + LANES <= w; v += LANES) {
#pragma omp simd
        for (int j = 0; j < LANES; j++) acc[j] += gf_exp_fast_fma(b[v + j] - mx);
    }
    for (int j = 0; v + j < w; j++) acc[j] += gf_exp_fast_fma(b[v + j] - mx);
    float s = 0.0f;
    for (int j = 0; j < LANES; j++) s += acc[j];
    return s;
}

static float row_lse_fast(const float *z, int64_t V) {
    float mx = -INFINITY;
    double s = 0.0;
    for (int64_t c = 0; c < V; c += LSE_BLOCK) {
        const float *b = z + c;
        const int64_t w = V - c < LSE_BLOCK ? V - c : LSE_BLOCK;
        float bm = -INFINITY;
#pragma omp simd reduction(max : bm)
        for (int64_t v = 0; v < w; v++) bm = b[v] > bm ? b[v] : bm;
        if (bm == -INFINITY) continue; /* exp(-inf - -inf) would be NaN */
        if (bm > mx) {
            if (s > 0.0) s *= exp((double)mx - (double)bm);
            mx = bm;
        }
        s += block_sum_exp(b, w, mx);
    }
    return mx + (float)log(s);
}

static inline float row_lse(const float *z, int64_t V, bool fast) {
    return fast ? row_lse_fast(z, V) : row_lse_exact(z, V);
}

/* logits (V), 0 <= target < V */
float gf_log_softmax_nll(const float *logits, int64_t V, int32_t target) {
    return row_lse(logits, V, gf_fast_numerics()) - logits[target];
}

/* Label smoothing's loss of one row given its plain one (nll = lse - z[target]): the cross-entropy against
 * (1 - eps) onehot + eps / V, that is (1 - eps) nll + eps (lse - mean z); the mean summed in double. */
static float smoothed_loss(const float *z, int64_t V, float l, float nll, float eps) {
    double s = 0.0;
    for (int64_t v = 0; v < V; v++) s += z[v];
    return (1.0f - eps) * nll + eps * (l - (float)(s / (double)V));
}

int64_t gf_xent_forward(float *losses, float *lse, const float *logits, const int32_t *targets, int64_t N,
                        int64_t V, float eps) {
    int64_t counted = 0;
    const bool fast = gf_fast_numerics();
#pragma omp parallel for schedule(static) reduction(+ : counted) if (N * V > GF_PAR_MIN)
    for (int64_t n = 0; n < N; n++) {
        const float *z = logits + n * V;
        const float l = row_lse(z, V, fast);
        lse[n] = l;
        if (targets[n] >= 0) {
            losses[n] = l - z[targets[n]];
            if (eps != 0.0f) losses[n] = smoothed_loss(z, V, l, losses[n], eps);
            counted++;
        } else {
            losses[n] = 0.0f;
        }
    }
    return counted;
}

/* One row's gradient before the target's -scale (1 - eps): dst (n) = scale * softmax of z given its lse l
 * (the exp with fused multiply-adds when fast), less off = scale * eps / V under label smoothing. The one
 * copy of the formula, for the fp32 gradient (dst = z) and the one rounded to bfloat16, so that the two have
 * the same bits. */
static inline void grad_row(float *dst, const float *z, int64_t n, float l, float scale, float off, bool fast) {
    if (fast) {
#pragma omp simd
        for (int64_t v = 0; v < n; v++) dst[v] = scale * gf_exp_fast_fma(z[v] - l);
    } else {
#pragma omp simd
        for (int64_t v = 0; v < n; v++) dst[v] = scale * gf_exp_fast_v(z[v] - l);
    }
    if (off != 0.0f)
        for (int64_t v = 0; v < n; v++) dst[v] -= off;
}

void gf_xent_backward(float *logits, const float *lse, const int32_t *targets, int64_t N, int64_t V,
                      float scale, float eps) {
    const float off = scale * eps / (float)V, hit = scale * (1.0f - eps);
    const bool fast = gf_fast_numerics();
#pragma omp parallel for schedule(static) if (N * V > GF_PAR_MIN)
    for (int64_t n = 0; n < N; n++) {
        float *z = logits + n * V;
        if (targets[n] < 0) {
            for (int64_t v = 0; v < V; v++) z[v] = 0.0f;
            continue;
        }
        grad_row(z, z, V, lse[n], scale, off, fast);
        z[targets[n]] -= hit;
    }
}

/* gf_xent_backward's gradient rounded to bfloat16 into g (N, V), in slices that stay in the first cache */
enum { SLICE = 1024 };
static void xent_backward_bf16(gf_bf16 *g, const float *logits, const float *lse, const int32_t *targets, int64_t N,
                               int64_t V, float scale, float eps) {
    const bool fast = gf_fast_numerics();
    const float off = scale * eps / (float)V, hit = scale * (1.0f - eps);
#pragma omp parallel for schedule(static) if (N * V > GF_PAR_MIN)
    for (int64_t n = 0; n < N; n++) {
        const float *z = logits + n * V;
        gf_bf16 *o = g + n * V;
        if (targets[n] < 0) {
            memset(o, 0, (size_t)V * sizeof *o); /* bfloat16 +0 */
            continue;
        }
        float t[SLICE];
        for (int64_t c = 0; c < V; c += SLICE) {
            const int64_t w = V - c < SLICE ? V - c : SLICE;
            grad_row(t, z + c, w, lse[n], scale, off, fast);
            if (targets[n] >= c && targets[n] < c + w) t[targets[n] - c] -= hit;
            gf_bf16_from_f32_row(o + c, t, w);
        }
    }
}

/* Both products in bf16 with the gradient rounded as it is made: 0; 1 when dh got its product and dW did
 * not; -1 when neither (nothing written but the room) */
static int head_backward_bf16(float *dh, float *dW, const float *logits, const float *lse, const int32_t *targets,
                              const float *h, const float *W, int64_t N, int64_t d, int64_t V, float scale, float eps) {
    if (!gf_sgemm_in_bf16(false, N, d, V) || !gf_sgemm_in_bf16(true, V, d, N)) return -1;
    gf_bf16 *g = gf_sgemm_bf16a_room(N * V);
    if (!g) return -1;
    xent_backward_bf16(g, logits, lse, targets, N, V, scale, eps);
    if (dh && gf_sgemm_bf16a(false, false, N, d, V, 1.0f, g, W, d, 1.0f, dh, d)) return -1;
    if (dW && gf_sgemm_bf16a(true, false, V, d, N, 1.0f, g, h, d, 1.0f, dW, d)) return 1;
    return 0;
}

void gf_xent_linear_backward(float *dh, float *dW, float *logits, const float *lse, const int32_t *targets,
                             const float *h, const float *W, int64_t N, int64_t d, int64_t V, float scale,
                             float eps) {
    const int rc = head_backward_bf16(dh, dW, logits, lse, targets, h, W, N, d, V, scale, eps);
    if (rc == 0) return;
    gf_xent_backward(logits, lse, targets, N, V, scale, eps);
    gf_linear_backward(rc == 1 ? NULL : dh, d, dW, d, NULL, logits, h, d, W, d, N, d, V);
}
