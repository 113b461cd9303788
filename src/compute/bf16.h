/* bfloat16: the upper 16 bits of an IEEE float (8 exponent bits, 8 significant bits), the format of the
 * bf16 matmuls (src/compute/matmul_dnnl.c) and of bf16 weights. Rounding is to nearest, ties to even, as
 * AVX512_BF16's VCVTNEPS2BF16 does it: a NaN stays a NaN (quiet, its sign kept), and a denormal input,
 * like a result too small for a normal bfloat16, becomes a zero of its sign (the instruction flushes them,
 * whatever MXCSR says). The fast conversion is held to the scalar reference bit for bit (tests/unit/test_ops.c). */
#ifndef GF_CORE_BF16_H
#define GF_CORE_BF16_H

#include <stdbool.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef uint16_t gf_bf16;

/* The reference: one float to bfloat16, rounded as above. */
static inline gf_bf16 gf_bf16_from_f32_ref(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) return (gf_bf16)((u >> 16) | 0x0040u); /* NaN */
    if ((u & 0x7f800000u) == 0) return (gf_bf16)((u >> 16) & 0x8000u); /* zero or denormal: a signed zero */
    u += 0x7fffu + ((u >> 16) & 1u); /* to nearest, ties to even (a carry into the exponent is right) */
    return (gf_bf16)(u >> 16);
}

/* IEEE 754 half precision (float16: PyTorch's half, GrassLM's f16 files) to float, exactly. */
static inline float gf_f16_to_f32(uint16_t h) {
    const unsigned e = (h >> 10) & 0x1f, m = h & 0x3ff;
    const float f = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 0x400), (int)e - 25);
    return h & 0x8000 ? -f : f;
}

static inline float gf_bf16_to_f32(gf_bf16 h) {
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Whether this CPU converts and multiplies bfloat16 in hardware (AVX512_BF16). */
bool gf_bf16_cpu(void);
/* rows x cols floats (row stride ld) into a contiguous rows x cols bfloat16 matrix, in parallel over
 * rows when large: AVX512_BF16 where the CPU has it, else the reference, with the same bits. */
void gf_bf16_from_f32(gf_bf16 *dst, const float *src, int64_t rows, int64_t cols, int64_t ld);
/* One row of n floats, on the calling thread (the same bits). */
void gf_bf16_from_f32_row(gf_bf16 *dst, const float *src, int64_t n);
/* The same with the reference alone (for tests). */
void gf_bf16_from_f32_naive(gf_bf16 *dst, const float *src, int64_t rows, int64_t cols, int64_t ld);

#endif
