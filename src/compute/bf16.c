/* float -> bfloat16 conversion (see bf16.h). */
#include "compute/bf16.h"

#include <immintrin.h>

#include "compute/blas.h"
#include "compute/parallel.h"

/* Asked once per process (the conversion of every row asks it; the test hook reads the environment). */
bool gf_bf16_cpu(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    static int known = -1;
    int v = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (v < 0) {
#define HAS(name) (__builtin_cpu_supports(name) && !gf_cpu_hidden_by_test(name)) /* the hook: compute/blas.h */
        v = HAS("avx512bf16") && HAS("avx512bw") && HAS("avx512vl");
#undef HAS
        __atomic_store_n(&known, v, __ATOMIC_RELAXED);
    }
    return v != 0;
#else
    return false;
#endif
}

void gf_bf16_from_f32_naive(gf_bf16 *dst, const float *src, int64_t rows, int64_t cols, int64_t ld) {
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) dst[r * cols + c] = gf_bf16_from_f32_ref(src[r * ld + c]);
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) static void row_avx512(gf_bf16 *dst, const float *src,
                                                                                      int64_t n) {
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        const __m512i h = (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + i + 16), _mm512_loadu_ps(src + i));
        _mm512_storeu_si512((void *)(dst + i), h);
    }
    for (; i < n; i += 16) {
        const __mmask16 k = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        const __m256i h = (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(k, src + i));
        _mm256_mask_storeu_epi16(dst + i, k, h);
    }
}
#endif

void gf_bf16_from_f32_row(gf_bf16 *dst, const float *src, int64_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (gf_bf16_cpu()) {
        row_avx512(dst, src, n);
        return;
    }
#endif
    gf_bf16_from_f32_naive(dst, src, 1, n, n);
}

void gf_bf16_from_f32(gf_bf16 *dst, const float *src, int64_t rows, int64_t cols, int64_t ld) {
#pragma omp parallel for schedule(static) if (rows * cols > GF_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) gf_bf16_from_f32_row(dst + r * cols, src + r * ld, cols);
}
