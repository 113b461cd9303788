/* int8 and bf16 weights for batch-1 matmuls (see quant.h). */
#include "compute/quant.h"

#include <immintrin.h>
#include <math.h>

#include "compute/blas.h"
#include "compute/parallel.h"

/* Whether the CPU runs instructions of `name` (GCC's spelling), unless the test hook hides them. */
#define CPU_HAS(name) (__builtin_cpu_supports(name) && !gf_cpu_hidden_by_test(name))

gf_lowp_kernel gf_int8_kernel(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (CPU_HAS("avx512vnni") && CPU_HAS("avx512bw") && CPU_HAS("avx512f")) return GF_LOWP_AVX512;
    if (CPU_HAS("avx2")) return GF_LOWP_AVX2;
#endif
    return GF_LOWP_REFERENCE;
}

gf_lowp_kernel gf_bf16_gemv_kernel(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (CPU_HAS("avx512bw") && CPU_HAS("avx512vl") && CPU_HAS("avx512f")) return GF_LOWP_AVX512;
    if (CPU_HAS("avx2") && CPU_HAS("fma")) return GF_LOWP_AVX2;
#endif
    return GF_LOWP_REFERENCE;
}

const char *gf_lowp_kernel_name(gf_lowp_kernel k, bool int8) {
    if (k == GF_LOWP_AVX512) return int8 ? "AVX512_VNNI" : "AVX-512";
    return k == GF_LOWP_AVX2 ? (int8 ? "AVX2 (vpmaddubsw)" : "AVX2") : "reference (scalar)";
}

static int8_t code(float v, float inv) {
    float r = nearbyintf(v * inv); /* to nearest even (the default rounding mode) */
    r = r > 127.0f ? 127.0f : r < -127.0f ? -127.0f : r;
    return r == r ? (int8_t)r : 0; /* a NaN's code is 0 (defined, where a cast would not be) */
}

void gf_quant_int8_row(const float *w, int64_t n, int8_t *q, float *scale) {
    float amax = 0.0f;
    for (int64_t i = 0; i < n; i++) amax = fabsf(w[i]) > amax ? fabsf(w[i]) : amax;
    *scale = amax / 127.0f;
    const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    for (int64_t i = 0; i < n; i++) q[i] = code(w[i], inv);
}

int64_t gf_quant_input(const float *x, int64_t n, int8_t *qx, float *sx) {
    float amax = 0.0f;
    for (int64_t i = 0; i < n; i++) { /* a NaN is kept: *sx NaN makes every output NaN, as fp32 would */
        const float a = fabsf(x[i]);
        amax = a > amax || a != a ? a : amax;
    }
    *sx = amax / 127.0f;
    const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    int64_t sum = 0;
    for (int64_t i = 0; i < n; i++) sum += qx[i] = code(x[i], inv);
    return sum;
}

/* y[r] from the exact integer dot: the one formula both kernels use. */
static inline float finish(int64_t dot, float scale, float sx, float alpha, float beta, float y) {
    const float v = (float)dot * (scale * sx);
    return beta == 0.0f ? alpha * v : alpha * v + beta * y;
}

void gf_gemv_int8_naive(const uint8_t *u8, int64_t ld, const float *scale, int64_t rows, int64_t cols,
                        const float *x, float alpha, float beta, float *y, int8_t *qx) {
    float sx;
    gf_quant_input(x, cols, qx, &sx);
    for (int64_t r = 0; r < rows; r++) {
        int64_t dot = 0;
        for (int64_t c = 0; c < cols; c++) dot += (int64_t)((int)u8[r * ld + c] - 128) * qx[c];
        y[r] = finish(dot, scale[r], sx, alpha, beta, y[r]);
    }
}

void gf_gemv_bf16_naive(const gf_bf16 *h, int64_t ld, int64_t rows, int64_t cols, const float *x, float alpha,
                        float beta, float *y) {
    for (int64_t r = 0; r < rows; r++) {
        double s = 0.0;
        for (int64_t c = 0; c < cols; c++) s += (double)gf_bf16_to_f32(h[r * ld + c]) * x[c];
        y[r] = (float)(beta == 0.0f ? alpha * s : alpha * s + (double)beta * y[r]);
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#define TARGET_INT8 __attribute__((target("avx512f,avx512bw,avx512vnni")))
#define TARGET_BF16 __attribute__((target("avx512f,avx512bw,avx512vl")))

static inline __mmask64 tail64(int64_t left) { return left >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << left) - 1); }

static inline __mmask16 tail16(int64_t left) { return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1); }

/* gf_quant_input in AVX-512, bit for bit: the maximum is exact in any order (and NaN if any x is),
 * roundscale rounds to nearest even as nearbyintf does, and the clamp, a NaN's code 0 and the sum are the
 * same. */
TARGET_INT8 static int64_t quant_input_fast(const float *x, int64_t n, int8_t *qx, float *sx) {
    __m512 m = _mm512_setzero_ps();
    __mmask16 nan = 0;
    for (int64_t i = 0; i < n; i += 16) {
        const __m512 v = _mm512_maskz_loadu_ps(tail16(n - i), x + i);
        m = _mm512_max_ps(_mm512_abs_ps(v), m);
        nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    }
    const float amax = nan ? NAN : _mm512_reduce_max_ps(m);
    *sx = amax / 127.0f;
    const __m512 inv = _mm512_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
    const __m512 hi = _mm512_set1_ps(127.0f), lo = _mm512_set1_ps(-127.0f);
    __m512i sum = _mm512_setzero_si512();
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 k = tail16(n - i);
        const __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + i), inv);
        const __m512 r = _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        const __mmask16 ord = _mm512_cmp_ps_mask(r, r, _CMP_ORD_Q);
        const __m512i q = _mm512_cvtps_epi32(_mm512_maskz_mov_ps(ord, _mm512_min_ps(_mm512_max_ps(r, lo), hi)));
        sum = _mm512_add_epi32(sum, q);
        _mm512_mask_cvtepi32_storeu_epi8(qx + i, k, q);
    }
    return _mm512_reduce_add_epi32(sum);
}

/* the four int32 sums of a0..a3 (one per row), as one vector: halves added, then a tree of hadds */
TARGET_INT8 static __m128i sum4_epi32(__m512i a0, __m512i a1, __m512i a2, __m512i a3) {
#define GF_HALVES(a) _mm256_add_epi32(_mm512_castsi512_si256(a), _mm512_extracti64x4_epi64(a, 1))
    const __m256i h01 = _mm256_hadd_epi32(GF_HALVES(a0), GF_HALVES(a1));
    const __m256i h23 = _mm256_hadd_epi32(GF_HALVES(a2), GF_HALVES(a3));
#undef GF_HALVES
    const __m256i h = _mm256_hadd_epi32(h01, h23);
    return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

/* How far ahead dot4_int8 asks for its rows' bytes (into L1 and L2). The hardware's L2 streamer stops at
 * every 4 KB page and has to learn the stream again; a row block of d = 256 columns is 1 KB, so a
 * software prefetch a few blocks ahead keeps the lines coming across pages. A prefetch never faults, so
 * one past the matrix's end is harmless. Measured on the word-level head (33,278 x 256) and the layers'
 * matrices streamed from L3 on a Xeon (AMX): 1 KB-4 KB ahead were 10-20% faster than none, 8 KB slower
 * (docs/precision.md). */
#define INT8_PREFETCH 2048

/* sum over cols of u8[c] * qx[c] for 4 rows (row stride ld) */
TARGET_INT8 static void dot4_int8(const uint8_t *u8, int64_t ld, int64_t cols, const int8_t *qx, int32_t out[4]) {
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t c = 0; c < cols; c += 64) {
        for (int i = 0; i < 4; i++) _mm_prefetch((const char *)u8 + i * ld + c + INT8_PREFETCH, _MM_HINT_T0);
        const __mmask64 k = tail64(cols - c);
        const __m512i x = _mm512_maskz_loadu_epi8(k, qx + c);
        a0 = _mm512_dpbusd_epi32(a0, _mm512_maskz_loadu_epi8(k, u8 + c), x);
        a1 = _mm512_dpbusd_epi32(a1, _mm512_maskz_loadu_epi8(k, u8 + ld + c), x);
        a2 = _mm512_dpbusd_epi32(a2, _mm512_maskz_loadu_epi8(k, u8 + 2 * ld + c), x);
        a3 = _mm512_dpbusd_epi32(a3, _mm512_maskz_loadu_epi8(k, u8 + 3 * ld + c), x);
    }
    _mm_storeu_si128((__m128i *)out, sum4_epi32(a0, a1, a2, a3));
}

TARGET_INT8 static int32_t dot1_int8(const uint8_t *u8, int64_t cols, const int8_t *qx) {
    __m512i a = _mm512_setzero_si512();
    for (int64_t c = 0; c < cols; c += 64) {
        const __mmask64 k = tail64(cols - c);
        a = _mm512_dpbusd_epi32(a, _mm512_maskz_loadu_epi8(k, u8 + c), _mm512_maskz_loadu_epi8(k, qx + c));
    }
    return _mm512_reduce_add_epi32(a);
}

/* The AVX2 twins (no VNNI): the weight bytes made signed codes again (u8 ^ 0x80 = q), then VPMADDUBSW of |q|
 * (unsigned) by qx with q's sign (VPSIGNB): each pair of products is at most 2 x 127 x 127 = 32,258, so the
 * int16 sums never saturate (|q| and |qx| are at most 127: no code is -128), and VPMADDWD by ones widens them
 * to int32. The sums are exact, so the results are the reference's bits; no 128 x sum(qx) to take off. */
#define TARGET_AVX2 __attribute__((target("avx2,fma")))

TARGET_AVX2 static inline __m256i madd_codes(const uint8_t *w, __m256i x) {
    const __m256i q = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)w), _mm256_set1_epi8((char)0x80));
    const __m256i p = _mm256_maddubs_epi16(_mm256_abs_epi8(q), _mm256_sign_epi8(x, q));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

/* sum over cols of q[c] * qx[c] for 4 rows (row stride ld): 32 columns a step, the rest one by one */
TARGET_AVX2 static void dot4_int8_avx2(const uint8_t *u8, int64_t ld, int64_t cols, const int8_t *qx, int32_t out[4]) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    int64_t c = 0;
    for (; c + 32 <= cols; c += 32) {
        for (int i = 0; i < 4; i++) _mm_prefetch((const char *)u8 + i * ld + c + INT8_PREFETCH, _MM_HINT_T0);
        const __m256i x = _mm256_loadu_si256((const __m256i *)(qx + c));
        a0 = _mm256_add_epi32(a0, madd_codes(u8 + c, x));
        a1 = _mm256_add_epi32(a1, madd_codes(u8 + ld + c, x));
        a2 = _mm256_add_epi32(a2, madd_codes(u8 + 2 * ld + c, x));
        a3 = _mm256_add_epi32(a3, madd_codes(u8 + 3 * ld + c, x));
    }
    const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(a0, a1), _mm256_hadd_epi32(a2, a3));
    _mm_storeu_si128((__m128i *)out, _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1)));
    for (; c < cols; c++)
        for (int i = 0; i < 4; i++) out[i] += ((int32_t)u8[i * ld + c] - 128) * qx[c];
}

TARGET_AVX2 static int32_t dot1_int8_avx2(const uint8_t *u8, int64_t cols, const int8_t *qx) {
    __m256i a = _mm256_setzero_si256();
    int64_t c = 0;
    for (; c + 32 <= cols; c += 32) a = _mm256_add_epi32(a, madd_codes(u8 + c, _mm256_loadu_si256((const __m256i *)(qx + c))));
    const __m128i h = _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    int32_t v[4], sum = 0;
    _mm_storeu_si128((__m128i *)v, h);
    for (int i = 0; i < 4; i++) sum += v[i];
    for (; c < cols; c++) sum += ((int32_t)u8[c] - 128) * qx[c];
    return sum;
}

typedef void (*dot4_fn)(const uint8_t *u8, int64_t ld, int64_t cols, const int8_t *qx, int32_t out[4]);
typedef int32_t (*dot1_fn)(const uint8_t *u8, int64_t cols, const int8_t *qx);

/* What one int8 kernel needs: its dot products and what its sums carry beyond sum q qx (off). */
typedef struct {
    dot4_fn dot4;
    dot1_fn dot1;
    int64_t off;
} int8_kernel;

/* row blocks b0 .. b1 of 4 rows (the last may be partial) */
static void int8_blocks(const int8_kernel *k, const uint8_t *u8, int64_t ld, const float *scale, int64_t rows,
                        int64_t cols, int64_t b0, int64_t b1, const int8_t *qx, float sx, float alpha, float beta,
                        float *y) {
    for (int64_t b = b0; b < b1; b++) {
        const int64_t r0 = 4 * b;
        if (r0 + 4 <= rows) {
            int32_t d[4];
            k->dot4(u8 + r0 * ld, ld, cols, qx, d);
            for (int i = 0; i < 4; i++) y[r0 + i] = finish((int64_t)d[i] - k->off, scale[r0 + i], sx, alpha, beta, y[r0 + i]);
        } else {
            for (int64_t r = r0; r < rows; r++)
                y[r] = finish((int64_t)k->dot1(u8 + r * ld, cols, qx) - k->off, scale[r], sx, alpha, beta, y[r]);
        }
    }
}

/* A small matrix runs outside any parallel region (GF_PAR_FOR), and so does any matrix on one thread. The
 * VNNI kernel multiplies the unsigned bytes (codes + 128), so 128 x sum(qx) comes off each sum. */
static void gemv_int8_fast(gf_lowp_kernel which, const uint8_t *u8, int64_t ld, const float *scale, int64_t rows,
                           int64_t cols, const float *x, float alpha, float beta, float *y, int8_t *qx) {
    float sx;
    int8_kernel k = {dot4_int8_avx2, dot1_int8_avx2, 0};
    if (which == GF_LOWP_AVX512)
        k = (int8_kernel){dot4_int8, dot1_int8, 128 * quant_input_fast(x, cols, qx, &sx)};
    else
        gf_quant_input(x, cols, qx, &sx);
    const int64_t blocks = (rows + 3) / 4;
    GF_PAR_FOR(rows * cols > GF_PAR_MIN && gf_max_threads() > 1, for (int64_t b = 0; b < blocks; b++)
                   int8_blocks(&k, u8, ld, scale, rows, cols, b, b + 1, qx, sx, alpha, beta, y););
}

TARGET_AVX2 static float dot_bf16_avx2(const gf_bf16 *h, int64_t cols, const float *x) {
    __m256 a = _mm256_setzero_ps(), b = a;
    int64_t c = 0;
#define GF_BF16_8(p) _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(p))), 16))
    for (; c + 16 <= cols; c += 16) {
        a = _mm256_fmadd_ps(GF_BF16_8(h + c), _mm256_loadu_ps(x + c), a);
        b = _mm256_fmadd_ps(GF_BF16_8(h + c + 8), _mm256_loadu_ps(x + c + 8), b);
    }
    if (c + 8 <= cols) a = _mm256_fmadd_ps(GF_BF16_8(h + c), _mm256_loadu_ps(x + c), a), c += 8;
#undef GF_BF16_8
    a = _mm256_add_ps(a, b);
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    float sum = _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
    for (; c < cols; c++) sum += gf_bf16_to_f32(h[c]) * x[c];
    return sum;
}

TARGET_BF16 static float dot_bf16(const gf_bf16 *h, int64_t cols, const float *x) {
    __m512 a = _mm512_setzero_ps();
    for (int64_t c = 0; c < cols; c += 16) {
        const __mmask16 k = tail16(cols - c);
        const __m512i w = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(k, h + c)), 16);
        a = _mm512_fmadd_ps(_mm512_castsi512_ps(w), _mm512_maskz_loadu_ps(k, x + c), a);
    }
    return _mm512_reduce_add_ps(a);
}
#endif

void gf_gemv_int8_with(gf_lowp_kernel k, const uint8_t *u8, int64_t ld, const float *scale, int64_t rows,
                       int64_t cols, const float *x, float alpha, float beta, float *y, int8_t *qx) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (k != GF_LOWP_REFERENCE) {
        gemv_int8_fast(k, u8, ld, scale, rows, cols, x, alpha, beta, y, qx);
        return;
    }
#else
    (void)k;
#endif
    gf_gemv_int8_naive(u8, ld, scale, rows, cols, x, alpha, beta, y, qx);
}

void gf_gemv_bf16_with(gf_lowp_kernel k, const gf_bf16 *h, int64_t ld, int64_t rows, int64_t cols, const float *x,
                       float alpha, float beta, float *y) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (k != GF_LOWP_REFERENCE) {
        GF_PAR_FOR(rows * cols > GF_PAR_MIN && gf_max_threads() > 1, for (int64_t r = 0; r < rows; r++) {
            const float v = k == GF_LOWP_AVX512 ? dot_bf16(h + r * ld, cols, x) : dot_bf16_avx2(h + r * ld, cols, x);
            y[r] = beta == 0.0f ? alpha * v : alpha * v + beta * y[r];
        });
        return;
    }
#else
    (void)k;
#endif
    gf_gemv_bf16_naive(h, ld, rows, cols, x, alpha, beta, y);
}

/* The kernels chosen once per process (the CPU does not change; the test hook is read at the first call). */
static gf_lowp_kernel chosen(int *cache, gf_lowp_kernel (*choose)(void)) {
    int k = __atomic_load_n(cache, __ATOMIC_RELAXED);
    if (k < 0) __atomic_store_n(cache, k = (int)choose(), __ATOMIC_RELAXED);
    return (gf_lowp_kernel)k;
}

void gf_gemv_int8(const uint8_t *u8, int64_t ld, const float *scale, int64_t rows, int64_t cols, const float *x,
                  float alpha, float beta, float *y, int8_t *qx) {
    static int cache = -1;
    gf_gemv_int8_with(chosen(&cache, gf_int8_kernel), u8, ld, scale, rows, cols, x, alpha, beta, y, qx);
}

void gf_gemv_bf16(const gf_bf16 *h, int64_t ld, int64_t rows, int64_t cols, const float *x, float alpha, float beta,
                  float *y) {
    static int cache = -1;
    gf_gemv_bf16_with(chosen(&cache, gf_bf16_gemv_kernel), h, ld, rows, cols, x, alpha, beta, y);
}
