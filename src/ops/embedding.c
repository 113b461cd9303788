#include <math.h>

#include "compute/parallel.h"
#include "ops/ops.h"

/* Row n of the embedding. */
static inline void embed_row(float *out, const int32_t *tok, const float *wte, const float *pos, int64_t n, int64_t T,
                             int64_t C) {
    const float *e = wte + (int64_t)tok[n] * C;
    float *o = out + n * C;
    if (!pos) {
        for (int64_t c = 0; c < C; c++) o[c] = e[c];
        return;
    }
    const float *p = pos + (n % T) * C;
    for (int64_t c = 0; c < C; c++) o[c] = e[c] + p[c];
}

void gf_embed_forward(float *out, const int32_t *tok, const float *wte, const float *pos, int64_t B,
                      int64_t T, int64_t C) {
    if (B * T * C <= GF_PAR_MIN) { /* a stream's one row: no parallel region to enter */
        for (int64_t n = 0; n < B * T; n++) embed_row(out, tok, wte, pos, n, T, C);
        return;
    }
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < B * T; n++) embed_row(out, tok, wte, pos, n, T, C);
}

/* Rows collide (a token repeats), so threads split the columns: each owns a block of C for all rows. */
void gf_embed_backward(float *dwte, float *dpos, const float *dout, const int32_t *tok, int64_t B,
                       int64_t T, int64_t C) {
    const int64_t blk = 16, nblk = (C + blk - 1) / blk;
#pragma omp parallel for schedule(static) if (B * T * C > GF_PAR_MIN)
    for (int64_t cb = 0; cb < nblk; cb++) {
        int64_t c0 = cb * blk, c1 = c0 + blk < C ? c0 + blk : C;
        for (int64_t n = 0; n < B * T; n++) {
            const float *g = dout + n * C;
            float *e = dwte + (int64_t)tok[n] * C;
            for (int64_t c = c0; c < c1; c++) e[c] += g[c];
            if (dpos) {
                float *p = dpos + (n % T) * C;
                for (int64_t c = c0; c < c1; c++) p[c] += g[c];
            }
        }
    }
}

void gf_sinusoidal_row(float *row, int64_t t, int64_t C) {
    for (int64_t c = 0; c < C; c++) {
        int64_t i2 = c - (c & 1); /* 2i */
        double freq = pow(10000.0, -(double)i2 / (double)C);
        double a = (double)t * freq;
        row[c] = (float)((c & 1) ? cos(a) : sin(a));
    }
}

void gf_sinusoidal2d_row(float *row, int64_t p, int64_t C, int64_t G) {
    gf_sinusoidal_row(row, p / G, C / 2);
    gf_sinusoidal_row(row + C / 2, p % G, C - C / 2);
}

void gf_sinusoidal_table(float *table, int64_t T, int64_t C) {
    for (int64_t t = 0; t < T; t++) gf_sinusoidal_row(table + t * C, t, C);
}
