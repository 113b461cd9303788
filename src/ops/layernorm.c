#include <math.h>

#include "core/parallel.h"
#include "ops/ops.h"

/* one row of C: its mean and 1/std (sums in double), then the normalised, scaled and shifted row. The sums
 * are `omp simd` reductions (8 partial sums in the lanes of a vector, added at the end): a serial sum in
 * double is one chain of dependent adds, 4 cycles each, and made LayerNorm cost 9 cycles an element. */
static void ln_row(float *o, float *mean, float *rstd, const float *x, const float *weight, const float *bias,
                   int64_t C, float eps) {
    double s = 0.0;
#pragma omp simd reduction(+ : s)
    for (int64_t c = 0; c < C; c++) s += x[c];
    float m = (float)(s / (double)C);
    double v = 0.0;
#pragma omp simd reduction(+ : v)
    for (int64_t c = 0; c < C; c++) {
        float d = x[c] - m;
        v += (double)d * d;
    }
    float r = 1.0f / sqrtf((float)(v / (double)C) + eps);
    for (int64_t c = 0; c < C; c++) o[c] = (x[c] - m) * r * weight[c] + bias[c];
    *mean = m;
    *rstd = r;
}

void gf_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                          const float *bias, int64_t N, int64_t C, float eps) {
    GF_PAR_FOR(N * C > GF_PAR_MIN, for (int64_t n = 0; n < N; n++)
                                       ln_row(out + n * C, mean + n, rstd + n, inp + n * C, weight, bias, C, eps););
}

void gf_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                           const float *weight, const float *mean, const float *rstd, int64_t N, int64_t C) {
    if (dinp) {
#pragma omp parallel for schedule(static) if (N * C > GF_PAR_MIN)
        for (int64_t n = 0; n < N; n++) {
            const float *x = inp + n * C, *g = dout + n * C;
            float m = mean[n], r = rstd[n];
            /* dxhat = g * w;  dx = r * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) */
            double s1 = 0.0, s2 = 0.0;
#pragma omp simd reduction(+ : s1, s2)
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
    }
    /* Parameter gradients: threads own column blocks and walk all rows. */
    const int64_t blk = 16, nblk = (C + blk - 1) / blk;
#pragma omp parallel for schedule(static) if (N * C > GF_PAR_MIN)
    for (int64_t cb = 0; cb < nblk; cb++) {
        int64_t c0 = cb * blk, c1 = c0 + blk < C ? c0 + blk : C;
        float aw[16] = {0}, ab[16] = {0};
        for (int64_t n = 0; n < N; n++) {
            const float *x = inp + n * C, *g = dout + n * C;
            float m = mean[n], r = rstd[n];
            for (int64_t c = c0; c < c1; c++) {
                aw[c - c0] += g[c] * (x[c] - m) * r;
                ab[c - c0] += g[c];
            }
        }
        for (int64_t c = c0; c < c1; c++) {
            if (dweight) dweight[c] += aw[c - c0];
            if (dbias) dbias[c] += ab[c - c0];
        }
    }
}
