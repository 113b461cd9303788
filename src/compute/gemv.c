#include "compute/gemv.h"

#include <string.h>

#include "compute/parallel.h"

#define LANES 32 /* independent partial sums of a dot product: two vectors of 16 */
#define COLS 128 /* outputs of gf_gemv_cols one task sums, in a block small enough to stay in registers/L1 */

static inline float finish(float s, float alpha, float beta, const float *c) {
    return beta == 0.0f ? alpha * s : alpha * s + beta * *c;
}

/* 16 floats: GCC's vector extension, one AVX-512 register or two AVX2 ones. This file is built with
 * -ffp-contract=fast (Makefile): a * b + c is one fused multiply-add where the CPU has them. */
typedef float v16 __attribute__((vector_size(64)));
#if defined(__GNUC__) && !defined(__clang__)
/* Without AVX-512 (an x86-64-v3 build) GCC notes that passing a v16 by value "changes the ABI": these are static
 * functions of this file only, inlined, so no caller across an ABI sees one. */
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

static inline v16 load16(const float *p) {
    v16 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline float reduce16(const v16 *s) { /* by address: a v16 argument has no AVX register in plain x86-64 */
    float h[16];
    memcpy(h, s, sizeof h);
    for (int half = 8; half > 0; half /= 2)
        for (int l = 0; l < half; l++) h[l] += h[l + half];
    return h[0];
}

/* The sums of w_r[k] x[k] for R rows (w_r = w + r ldw) in a fixed order: for each row, LANES running sums
 * over k mod LANES (a zero-padded copy of the tail as a last step), then a fixed tree. A row's bits do not
 * depend on R: rows are grouped only to share x's loads. */
#define DOT_ROWS(R)                                                                                               \
    static void dot##R(const float *w, int64_t ldw, const float *x, int64_t K, float *out) {                     \
        v16 a0[R] = {{0}}, a1[R] = {{0}};                                                                         \
        int64_t k = 0;                                                                                            \
        for (; k + LANES <= K; k += LANES) {                                                                      \
            const v16 x0 = load16(x + k), x1 = load16(x + k + 16);                                                \
            for (int r = 0; r < R; r++) {                                                                         \
                a0[r] += load16(w + r * ldw + k) * x0;                                                            \
                a1[r] += load16(w + r * ldw + k + 16) * x1;                                                       \
            }                                                                                                     \
        }                                                                                                         \
        if (k < K) {                                                                                              \
            float tw[LANES] = {0}, tx[LANES] = {0};                                                               \
            memcpy(tx, x + k, (size_t)(K - k) * sizeof *tx);                                                      \
            for (int r = 0; r < R; r++) {                                                                         \
                memcpy(tw, w + r * ldw + k, (size_t)(K - k) * sizeof *tw);                                        \
                a0[r] += load16(tw) * load16(tx);                                                                 \
                a1[r] += load16(tw + 16) * load16(tx + 16);                                                       \
            }                                                                                                     \
        }                                                                                                         \
        for (int r = 0; r < R; r++) {                                                                             \
            const v16 t = a0[r] + a1[r];                                                                          \
            out[r] = reduce16(&t);                                                                                \
        }                                                                                                         \
    }
DOT_ROWS(1)
/* Rows a group shares x's loads over: 4 rows take 8 accumulators of 16 floats, 8 of AVX-512's 32 registers but
 * all 16 of AVX2's (x's 4 more spill); without AVX-512, 2 rows: grassmann-6L's fp32 stream 205 -> 238 tokens/s
 * on an AMD EPYC Zen 3 (docs/bench/method.md). The bits are the same either way (a row's do not depend on R). */
#if defined(__AVX512F__)
#define GROUP 4
DOT_ROWS(4)
#define dot_group dot4
#else
#define GROUP 2
DOT_ROWS(2)
#define dot_group dot2
#endif

void gf_gemv_rows(const float *B, int64_t ldb, int64_t N, int64_t K, const float *a, float alpha, float beta,
                  float *c) {
    const int64_t groups = (N + GROUP - 1) / GROUP;
    GF_PAR_FOR(N * K > GF_PAR_MIN && gf_max_threads() > 1, for (int64_t g = 0; g < groups; g++) {
        float s[GROUP];
        const int64_t n0 = GROUP * g, rows = N - n0 < GROUP ? N - n0 : GROUP;
        if (rows == GROUP) dot_group(B + n0 * ldb, ldb, a, K, s);
        else
            for (int64_t r = 0; r < rows; r++) dot1(B + (n0 + r) * ldb, ldb, a, K, s + r);
        for (int64_t r = 0; r < rows; r++) c[n0 + r] = finish(s[r], alpha, beta, c + n0 + r);
    });
}

/* outputs [n0, n0 + w): B's rows in order k = 0..K-1, each output's sum in that order */
static void cols_block(const float *B, int64_t ldb, int64_t n0, int64_t w, int64_t K, const float *a, float alpha,
                       float beta, float *c) {
    float acc[COLS] = {0};
    for (int64_t k = 0; k < K; k++) {
        const float ak = a[k], *row = B + k * ldb + n0;
        for (int64_t j = 0; j < w; j++) acc[j] += ak * row[j];
    }
    for (int64_t j = 0; j < w; j++) c[n0 + j] = finish(acc[j], alpha, beta, c + n0 + j);
}

void gf_gemv_cols(const float *B, int64_t ldb, int64_t N, int64_t K, const float *a, float alpha, float beta,
                  float *c) {
    const int64_t blocks = (N + COLS - 1) / COLS;
    GF_PAR_FOR(N * K > GF_PAR_MIN && gf_max_threads() > 1 && blocks > 1, for (int64_t b = 0; b < blocks; b++) {
        const int64_t n0 = b * COLS, w = N - n0 < COLS ? N - n0 : COLS;
        cols_block(B, ldb, n0, w, K, a, alpha, beta, c);
    });
}

void gf_gemv_rows_naive(const float *B, int64_t ldb, int64_t N, int64_t K, const float *a, float alpha, float beta,
                        float *c) {
    for (int64_t n = 0; n < N; n++) {
        float s = 0.0f;
        for (int64_t k = 0; k < K; k++) s += B[n * ldb + k] * a[k];
        c[n] = finish(s, alpha, beta, c + n);
    }
}

void gf_gemv_cols_naive(const float *B, int64_t ldb, int64_t N, int64_t K, const float *a, float alpha, float beta,
                        float *c) {
    for (int64_t n = 0; n < N; n++) {
        float s = 0.0f;
        for (int64_t k = 0; k < K; k++) s += B[k * ldb + n] * a[k];
        c[n] = finish(s, alpha, beta, c + n);
    }
}
