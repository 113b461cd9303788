#include <math.h>

#include "core/parallel.h"
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

void gf_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                          const float *bias, int64_t N, int64_t C, float eps) {
    GF_PAR_FOR(N * C > GF_PAR_MIN, for (int64_t n = 0; n < N; n++)
                                       ln_row(out + n * C, mean + n, rstd + n, inp + n * C, weight, bias, C, eps););
}

enum { LN_WIDE = 64, LN_NARROW = 16 };

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

void gf_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                           const float *weight, const float *mean, const float *rstd, int64_t N, int64_t C) {
    if (dinp) {
#pragma omp parallel for schedule(static) if (N * C > GF_PAR_MIN)
        for (int64_t n = 0; n < N; n++) {
            const float *x = inp + n * C, *g = dout + n * C;
            float m = mean[n], r = rstd[n];
            /* dxhat = g * w;  dx = r * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) */
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
    }
    /* Parameter gradients: threads own column blocks and walk all rows, each column summed over the rows in
     * order (so the block width and thread count do not change the sums); 64 columns a block where there
     * are enough blocks for the threads, as gf_colsum_acc. */
    const int64_t blk = C / LN_WIDE >= gf_max_threads() ? LN_WIDE : LN_NARROW, nblk = (C + blk - 1) / blk;
    GF_PAR_FOR(N * C > GF_PAR_MIN, for (int64_t cb = 0; cb < nblk; cb++) ln_param_block(dweight, dbias, dout, inp,
                                                                                        mean, rstd, N, C, cb * blk,
                                                                                        cb * blk + blk < C ? cb * blk + blk : C););
}
