/* Low-precision weights for the batch-1 matmuls of generation (y = W x, W rows x cols, a row per output):
 * - int8: w[r][c] = q[r][c] * scale[r], q in [-127, 127] (symmetric, a scale per row, q rounded to nearest
 *   even); in memory each code is kept as the unsigned byte q + 128. The input x is quantized per call the
 *   same way (one scale, sx = max|x| / 127), and y[r] = (sum_c q[r][c] qx[c]) * (scale[r] * sx), the sum
 *   exact in int32: AVX512_VNNI's VPDPBUSD multiplies the unsigned weight bytes by the signed input bytes,
 *   and 128 * sum_c qx[c] is taken off once per call.
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

/* y[r] = alpha * (W x)[r] + beta * y[r] for r < rows, with W's rows at u8 + r * ld (codes + 128), columns
 * 0..cols-1, scales scale[r]: VNNI where the CPU has it, else the reference. qx: scratch of cols bytes. */
void gf_gemv_int8(const uint8_t *u8, int64_t ld, const float *scale, int64_t rows, int64_t cols, const float *x,
                  float alpha, float beta, float *y, int8_t *qx);
void gf_gemv_int8_naive(const uint8_t *u8, int64_t ld, const float *scale, int64_t rows, int64_t cols,
                        const float *x, float alpha, float beta, float *y, int8_t *qx);
/* The same with bfloat16 rows at h + r * ld. */
void gf_gemv_bf16(const gf_bf16 *h, int64_t ld, int64_t rows, int64_t cols, const float *x, float alpha, float beta,
                  float *y);
void gf_gemv_bf16_naive(const gf_bf16 *h, int64_t ld, int64_t rows, int64_t cols, const float *x, float alpha,
                        float beta, float *y);
/* Whether this CPU has AVX512_VNNI (the int8 kernel; without it the reference runs, slowly). */
bool gf_int8_cpu(void);

#endif
