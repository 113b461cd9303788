#include <string.h>

#include "compute/parallel.h"
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

/* Threads own blocks of columns and walk all rows, each column summed over the rows in order: the result
 * does not depend on the block width or the thread count. Blocks of 64 columns (four AVX-512 registers of
 * sums) where there are enough of them for the threads, else 16: a 16-column block reads one cache line a
 * row, 2 KB apart for a 512-wide gradient, and ran at half the speed. */
int64_t gf_colblock_width(int64_t C) { return C / GF_COLBLOCK_WIDE >= gf_max_threads() ? GF_COLBLOCK_WIDE : GF_COLBLOCK_NARROW; }

enum { COLSUM_WIDE = GF_COLBLOCK_WIDE };

static void colsum_block(float *out, const float *inp, int64_t ld, int64_t N, int64_t c0, int64_t c1) {
    float acc[COLSUM_WIDE] = {0};
    if (c1 - c0 == COLSUM_WIDE) {
        for (int64_t n = 0; n < N; n++) {
            const float *r = inp + n * ld + c0;
#pragma omp simd
            for (int64_t c = 0; c < COLSUM_WIDE; c++) acc[c] += r[c];
        }
    } else {
        for (int64_t n = 0; n < N; n++) {
            const float *r = inp + n * ld;
            for (int64_t c = c0; c < c1; c++) acc[c - c0] += r[c];
        }
    }
    for (int64_t c = c0; c < c1; c++) out[c] += acc[c - c0];
}

void gf_colsum_acc(float *out, const float *inp, int64_t ld, int64_t N, int64_t C) {
    const int64_t blk = gf_colblock_width(C), nblk = (C + blk - 1) / blk;
    GF_PAR_FOR(N * C > GF_PAR_MIN, for (int64_t cb = 0; cb < nblk; cb++) colsum_block(out, inp, ld, N, cb * blk,
                                                                                   cb * blk + blk < C ? cb * blk + blk : C););
}
