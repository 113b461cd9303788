#include <string.h>

#include "core/parallel.h"
#include "ops/ops.h"

void gf_add(float *out, const float *a, const float *b, int64_t n) {
    GF_PAR_FOR(n > GF_PAR_MIN, for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];);
}

void gf_acc(float *out, const float *a, int64_t n) {
    GF_PAR_FOR(n > GF_PAR_MIN, for (int64_t i = 0; i < n; i++) out[i] += a[i];);
}

void gf_zero(float *out, int64_t n) {
    GF_PAR_FOR(n > GF_PAR_MIN, for (int64_t i = 0; i < n; i++) out[i] = 0.0f;);
}

void gf_copy(float *out, const float *a, int64_t n) {
    if (out != a) memmove(out, a, (size_t)n * sizeof(float));
}

void gf_colsum_acc(float *out, const float *inp, int64_t ld, int64_t N, int64_t C) {
    const int64_t blk = 16, nblk = (C + blk - 1) / blk;
#pragma omp parallel for schedule(static) if (N * C > GF_PAR_MIN)
    for (int64_t cb = 0; cb < nblk; cb++) {
        int64_t c0 = cb * blk, c1 = c0 + blk < C ? c0 + blk : C;
        float acc[16] = {0};
        for (int64_t n = 0; n < N; n++) {
            const float *r = inp + n * ld;
            for (int64_t c = c0; c < c1; c++) acc[c - c0] += r[c];
        }
        for (int64_t c = c0; c < c1; c++) out[c] += acc[c - c0];
    }
}
