/* Low-precision weights for the batch-1 matmuls of generation (y = W x, W rows x cols, a row per output):
 * - int8: w[r][c] = q[r][c] * scale[r], q in [-127, 127] (symmetric, a scale per row, q rounded to nearest
 *   even); in memory each code is kept as the unsigned byte q + 128. The input x is quantized per call the
 *   same way (one scale, sx = max|x| / 127), and y[r] = (sum_c q[r][c] qx[c]) * (scale[r] * sx), the sum
 *   exact in int32: AVX512_VNNI's VPDPBUSD multiplies the unsigned weight bytes by the signed input bytes,
 *   and 128 * sum_c qx[c] is taken off once per call; on AVX2, VPMADDUBSW takes the codes' magnitudes and
 *   the input's bytes with the codes' signs (quant.c).
 * - bf16: w rounded to bfloat16 (compute/bf16.h); y in fp32 with the input unrounded.
 * The fast kernels are held to the references here by tests/unit/test_precision.c: int8 bit for bit, bf16 to
 * the rounding of fp32 sums. */
#ifndef GF_CORE_QUANT_H
#define GF_CORE_QUANT_H

#include <stdbool.h>
#include <stdint.h>

#include "compute/bf16.h"

/* One row of int8 codes and its scale from n floats. */
void gf_quant_int8_row(const float *w, int64_t n, int8_t *q, float *scale);
/* x (n floats) quantized to signed bytes with one scale (*sx = max|x| / 127, 0 for a zero x); returns
 * sum_c qx[c]. The reference's; the VNNI kernel has its AVX-512 twin, held to it bit for bit. */
int64_t gf_quant_input(const float *x, int64_t n, int8_t *qx, float *sx);

/* The kernels of the one-row products, best first; each CPU runs the best it has the instructions of. */
typedef enum { GF_LOWP_REFERENCE = 0, GF_LOWP_AVX2 = 1, GF_LOWP_AVX512 = 2 } gf_lowp_kernel;
/* int8: AVX512_VNNI (VPDPBUSD), else AVX2 (VPMADDUBSW with the sign trick), else the reference; bf16:
 * AVX-512 (BW, VL), else AVX2 with FMA, else the reference. Features hidden by GRASSFLOW_TEST_CPU_LACKS
 * (compute/blas.h) count as absent, so an AVX-512 machine runs the AVX2 path as an AVX2 CPU would. */
gf_lowp_kernel gf_int8_kernel(void);
gf_lowp_kernel gf_bf16_gemv_kernel(void);
/* "AVX512_VNNI", "AVX2 (vpmaddubsw)", "reference (scalar)"; for bf16 (int8 false) "AVX-512", "AVX2", ... */
const char *gf_lowp_kernel_name(gf_lowp_kernel k, bool int8);

/* y[r] = alpha * (W x)[r] + beta * y[r] for r < rows, with W's rows at u8 + r * ld (codes + 128), columns
 * 0..cols-1, scales scale[r]: the kernel gf_int8_kernel chose (chosen once per process). qx: scratch of cols
 * bytes. Every kernel's sums are exact, so each gives the reference's bits. _with runs kernel k, which the CPU
 * must have (the tests hold each to the reference). */
void gf_gemv_int8(const uint8_t *u8, int64_t ld, const float *scale, int64_t rows, int64_t cols, const float *x,
                  float alpha, float beta, float *y, int8_t *qx);
void gf_gemv_int8_with(gf_lowp_kernel k, const uint8_t *u8, int64_t ld, const float *scale, int64_t rows,
                       int64_t cols, const float *x, float alpha, float beta, float *y, int8_t *qx);
void gf_gemv_int8_naive(const uint8_t *u8, int64_t ld, const float *scale, int64_t rows, int64_t cols,
                        const float *x, float alpha, float beta, float *y, int8_t *qx);
/* The same with bfloat16 rows at h + r * ld (fp32 sums: the kernels differ from the reference, which sums in
 * double, by the rounding of fp32 sums). */
void gf_gemv_bf16(const gf_bf16 *h, int64_t ld, int64_t rows, int64_t cols, const float *x, float alpha, float beta,
                  float *y);
void gf_gemv_bf16_with(gf_lowp_kernel k, const gf_bf16 *h, int64_t ld, int64_t rows, int64_t cols, const float *x,
                       float alpha, float beta, float *y);
void gf_gemv_bf16_naive(const gf_bf16 *h, int64_t ld, int64_t rows, int64_t cols, const float *x, float alpha,
                        float beta, float *y);

#endif
