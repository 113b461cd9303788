#include <math.h>

#include "compute/blas.h"
#include "compute/parallel.h"
#include "ops/ops.h"

/* one row of C: its mean and 1/std (sums in double), then the normalised, scaled and shifted row */
static void ln_row(float *o, float *mean, float *rstd, const float *x, const float *weight, const float *bias,
                   int64_t C, float eps) {
    double s = 0.0;
    for (int64_t c = 0; c < C; c++) s += x[c];
    float m = (float)(s / (double)C);
    double v = 0.0;
    for (int64_t c = 0; c < C; c++) {
        float d = x[c] - m;
        v += (double)d * d;
    }
    float r = 1.0f / sqrtf((float)(v / (double)C) + eps);
    for (int64_t c = 0; c < C; c++) o[c] = (x[c] - m) * r * weight[c] + bias[c];
    *mean = m;
    *rstd = r;
}

/* LN_ROWS rows at once, each exactly as ln_row: every row's sums still run over its columns in order, in
 * double, so the results are ln_row's bits; only the rows' chains interleave. One row's chain of dependent
 * double adds costs about 9 cycles an element; LN_ROWS of them side by side cost about as much in all (and
 * vectorise across the rows). tests/unit/test_ops.c holds the two to the same bits. */
enum { LN_ROWS = 8 };

static void ln_rows(float *o, float *mean, float *rstd, const float *x, const float *weight, const float *bias,
                    int64_t C, float eps) {
    double s[LN_ROWS] = {0}, v[LN_ROWS] = {0};
    float m[LN_ROWS], r[LN_ROWS];
    for (int64_t c = 0; c < C; c++)
        for (int k = 0; k < LN_ROWS; k++) s[k] += x[k * C + c];
    for (int k = 0; k < LN_ROWS; k++) m[k] = (float)(s[k] / (double)C);
    for (int64_t c = 0; c < C; c++)
        for (int k = 0; k < LN_ROWS; k++) {
            float d = x[k * C + c] - m[k];
            v[k] += (double)d * d;
        }
    for (int k = 0; k < LN_ROWS; k++) {
        r[k] = 1.0f / sqrtf((float)(v[k] / (double)C) + eps);
        mean[k] = m[k];
        rstd[k] = r[k];
    }
    for (int k = 0; k < LN_ROWS; k++) {
        const float *xk = x + k * C;
        float *ok = o + k * C;
#pragma omp simd
        for (int64_t c = 0; c < C; c++) ok[c] = (xk[c] - m[k]) * r[k] * weight[c] + bias[c];
    }
}

/* --precision fp32-fast: one row's sums in float across the vector's lanes, fused multiply-adds (the default's
 * double sums in column order, LN_ROWS rows at a time, cost a gather per element). Each row alone, so a row
 * gets the same bits in any batch. Still two passes (mean, then the spread about it): no cancellation. */
static void ln_row_fast(float *o, float *mean, float *rstd, const float *x, const float *weight, const float *bias,
                        int64_t C, float eps) {
    float s = 0.0f, v = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int64_t c = 0; c < C; c++) s += x[c];
    const float m = s / (float)C;
#pragma omp simd reduction(+ : v)
    for (int64_t c = 0; c < C; c++) v = __builtin_fmaf(x[c] - m, x[c] - m, v);
    const float r = 1.0f / sqrtf(v / (float)C + eps);
#pragma omp simd
    for (int64_t c = 0; c < C; c++) o[c] = __builtin_fmaf((x[c] - m) * r, weight[c], bias[c]);
    *mean = m;
    *rstd = r;
}

void gf_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                          const float *bias, int64_t N, int64_t C, float eps) {
    if (gf_fast_numerics()) {
        GF_PAR_FOR(N * C > GF_PAR_MIN, for (int64_t n = 0; n < N; n++) ln_row_fast(out + n * C, mean + n, rstd + n,
                                                                                  inp + n * C, weight, bias, C, eps););
        return;
    }
    const int64_t ng = N / LN_ROWS; /* groups of LN_ROWS rows, then the rest one by one */
    GF_PAR_FOR(N * C > GF_PAR_MIN, for (int64_t g = 0; g < ng; g++) {
        const int64_t n = g * LN_ROWS;
        ln_rows(out + n * C, mean + n, rstd + n, inp + n * C, weight, bias, C, eps);
    });
    for (int64_t n = ng * LN_ROWS; n < N; n++) ln_row(out + n * C, mean + n, rstd + n, inp + n * C, weight, bias, C, eps);
}

enum { LN_WIDE = GF_COLBLOCK_WIDE };

/* columns c0 .. c1-1 of the weight and bias gradients, summed over the rows in order */
static void ln_param_block(float *dweight, float *dbias, const float *dout, const float *inp, const float *mean,
                           const float *rstd, int64_t N, int64_t C, int64_t c0, int64_t c1) {
    float aw[LN_WIDE] = {0}, ab[LN_WIDE] = {0};
    const int64_t w = c1 - c0;
    for (int64_t n = 0; n < N; n++) {
        const float *x = inp + n * C + c0, *g = dout + n * C + c0;
        const float m = mean[n], r = rstd[n];
        if (w == LN_WIDE) {
#pragma omp simd
            for (int64_t c = 0; c < LN_WIDE; c++) {
                aw[c] += g[c] * (x[c] - m) * r;
                ab[c] += g[c];
            }
        } else {
            for (int64_t c = 0; c < w; c++) {
                aw[c] += g[c] * (x[c] - m) * r;
                ab[c] += g[c];
            }
        }
    }
    for (int64_t c = 0; c < w; c++) {
        if (dweight) dweight[c0 + c] += aw[c];
        if (dbias) dbias[c0 + c] += ab[c];
    }
}

/* dinp row n += the input gradient of row n: dxhat = g * w;  dx = r * (dxhat - mean(dxhat) - xhat *
 * mean(dxhat * xhat)), the two means summed over the columns in order, in double */
static void ln_back_row(float *dinp, const float *dout, const float *inp, const float *weight, const float *mean,
                        const float *rstd, int64_t n, int64_t C) {
    const float *x = inp + n * C, *g = dout + n * C;
    float m = mean[n], r = rstd[n];
    double s1 = 0.0, s2 = 0.0;
    for (int64_t c = 0; c < C; c++) {
        float dxh = g[c] * weight[c];
        s1 += dxh;
        s2 += (double)dxh * ((x[c] - m) * r);
    }
    float m1 = (float)(s1 / (double)C), m2 = (float)(s2 / (double)C);
    float *d = dinp + n * C;
    for (int64_t c = 0; c < C; c++) {
        float xh = (x[c] - m) * r;
        d[c] += r * (g[c] * weight[c] - m1 - xh * m2);
    }
}

/* rows n .. n + LN_ROWS - 1 of ln_back_row, their sums interleaved as in ln_rows: the same bits */
static void ln_back_rows(float *dinp, const float *dout, const float *inp, const float *weight, const float *mean,
                         const float *rstd, int64_t n, int64_t C) {
    const float *x = inp + n * C, *g = dout + n * C;
    double s1[LN_ROWS] = {0}, s2[LN_ROWS] = {0};
    for (int64_t c = 0; c < C; c++)
#pragma omp simd
        for (int k = 0; k < LN_ROWS; k++) {
            float dxh = g[k * C + c] * weight[c];
            s1[k] += dxh;
            s2[k] += (double)dxh * ((x[k * C + c] - mean[n + k]) * rstd[n + k]);
        }
    for (int k = 0; k < LN_ROWS; k++) {
        const float m = mean[n + k], r = rstd[n + k], m1 = (float)(s1[k] / (double)C), m2 = (float)(s2[k] / (double)C);
        const float *xk = x + k * C, *gk = g + k * C;
        float *d = dinp + (n + k) * C;
#pragma omp simd
        for (int64_t c = 0; c < C; c++) {
            float xh = (xk[c] - m) * r;
            d[c] += r * (gk[c] * weight[c] - m1 - xh * m2);
        }
    }
}

/* ln_back_row under --precision fp32-fast: the two means in float across the lanes (as ln_row_fast) */
static void ln_back_row_fast(float *dinp, const float *dout, const float *inp, const float *weight, const float *mean,
                             const float *rstd, int64_t n, int64_t C) {
    const float *x = inp + n * C, *g = dout + n * C;
    const float m = mean[n], r = rstd[n];
    float s1 = 0.0f, s2 = 0.0f;
#pragma omp simd reduction(+ : s1, s2)
    for (int64_t c = 0; c < C; c++) {
        const float dxh = g[c] * weight[c];
        s1 += dxh;
        s2 = __builtin_fmaf(dxh, (x[c] - m) * r, s2);
    }
    const float m1 = s1 / (float)C, m2 = s2 / (float)C;
    float *d = dinp + n * C;
#pragma omp simd
    for (int64_t c = 0; c < C; c++) d[c] = __builtin_fmaf(r, __builtin_fmaf(g[c], weight[c], -m1) - (x[c] - m) * r * m2, d[c]);
}

static void ln_backward_input(float *dinp, const float *dout, const float *inp, const float *weight, const float *mean,
                              const float *rstd, int64_t N, int64_t C) {
    if (gf_fast_numerics()) {
        GF_PAR_FOR(N * C > GF_PAR_MIN,
                   for (int64_t n = 0; n < N; n++) ln_back_row_fast(dinp, dout, inp, weight, mean, rstd, n, C););
        return;
    }
    const int64_t ng = (N + LN_ROWS - 1) / LN_ROWS;
    GF_PAR_FOR(N * C > GF_PAR_MIN, for (int64_t g = 0; g < ng; g++) {
        const int64_t n = g * LN_ROWS;
        if (n + LN_ROWS <= N) ln_back_rows(dinp, dout, inp, weight, mean, rstd, n, C);
        else
            for (int64_t i = n; i < N; i++) ln_back_row(dinp, dout, inp, weight, mean, rstd, i, C);
    });
}

void gf_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                           const float *weight, const float *mean, const float *rstd, int64_t N, int64_t C) {
    if (dinp) ln_backward_input(dinp, dout, inp, weight, mean, rstd, N, C);
    /* Parameter gradients: threads own column blocks and walk all rows, each column summed over the rows in
     * order (so the block width and thread count do not change the sums), as gf_colsum_acc's
     * (gf_colblock_width). */
    const int64_t blk = gf_colblock_width(C), nblk = (C + blk - 1) / blk;
    GF_PAR_FOR(N * C > GF_PAR_MIN, for (int64_t cb = 0; cb < nblk; cb++) ln_param_block(dweight, dbias, dout, inp,
                                                                                        mean, rstd, N, C, cb * blk,
                                                                                        cb * blk + blk < C ? cb * blk + blk : C););
}
