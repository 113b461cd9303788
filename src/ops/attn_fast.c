/* --precision fp32-fast's attention of one head (ops.h, gf_attn_head): the products of the blocked softmax
 * in register tiles instead of one BLAS call per product, in two forms: AVX-512 (16-lane registers, 32 of
 * them, mask registers) where the build has it, else AVX2 with FMA (8-lane registers, 16 of them, no mask
 * registers: x86-64-v3, e.g. Zen 3). Without either the default path runs.
 *
 * The default path (sdpa.c) makes two small BLAS calls per block of 64 queries in the forward and five in
 * the backward: at a head width of
 * 32 and 256 keys each call is a few hundred thousand multiply-adds, and the library's packing and
 * dispatch cost as much as the arithmetic (about 85 GFLOP/s on 2 cores, against 214 for the linear layers).
 * Here, per (batch row, head):
 * - k (and in the backward v) is transposed once into kt (dh, Sp), Sp = S rounded up to 16, zero-padded;
 * - a tile of RT queries' scores is a block of accumulators over dh (score_tile), only over the keys the
 *   tile can see when causal, rounded up to 16 (most of the diagonal block's masked triangle is never
 *   computed; what the rounding computes is overwritten);
 * - products whose inner dimension is the keys or the queries (P v, dS k, P^T dO, dS^T q) are tiles of RT
 *   rows x the head's columns over that dimension (row_tile), reading the left operand by strides, so the
 *   transposed ones need no copy.
 * The softmax rows run in whole chunks of 16 (a row padded to the chunk at -inf), the forward's without
 * its normalising pass (the tile's outputs are scaled by 1 / sum instead).
 *
 * The two forms differ only in the kernels (transpose_pad, score_tile, row_tile and the sums across a
 * chunk's 16 lanes); the rest, one copy, is the wiring: the scratch (tiles_of, gf_attn_head_fast_floats),
 * the softmax rows, the query tiles and blocks, the key tiles of the backward.
 * - AVX-512: RT = 8 rows. A score tile is 8 x 32 (16 zmm accumulators, two key registers, a broadcast); a
 *   row tile 8 x 32 head columns, the head's last columns under a mask register; k^T in 16 x 16 blocks.
 * - AVX2 + FMA: RT = 6 rows, tiles of 6 x 16: 12 ymm accumulators, two registers of the right operand's
 *   row and one broadcast of the left operand's element, 15 of the 16 registers (one left for a tail's
 *   mask). 8 x 16 would need 19, so accumulators would spill to the stack in the inner loop; 4 x 24 needs
 *   all 16, none for a mask, and a score tile's key count is a multiple of 16, not 24; 4 x 16 needs 11
 *   but loads the right operand's row for 8 multiply-adds instead of 12. A score tile runs 16 keys at a time (the keys are padded to 16,
 *   so no tail); a row tile takes the head's columns 16 at a time, then 8, then the last 1-7 through
 *   _mm256_maskload_ps / _mm256_maskstore_ps (the only masked accesses: a head width that is a multiple of
 *   8 has none); k^T goes in 8 x 8 blocks. The softmax rows keep chunks of 16 (two registers each): that
 *   code is shared, and a row's sums come out the same as the AVX-512 form's.
 * Every sum runs in the same order in both forms (a score, an output or a gradient element: one fused
 * multiply-add after another along the inner dimension; a row's max and sum: 16 lane partials, then the
 * same halving tree), so the AVX2 form gives the AVX-512 form's bits: 336 heads on fixed inputs (S 1 to
 * 256, dh 5 to 64, causal or not, padded keys) were equal bit for bit when it was written. (The two forms'
 * tiles end at different keys, so a product that is exactly 0 can come in at another place; that could
 * turn a -0 sum into +0, nothing else.)
 * Sums run in a different order from OpenBLAS's, and fused, so the bits differ from fp32's: that is why
 * this runs only under fp32-fast. tests/unit/test_ops.c holds it to the default path (test_attn_head_fast),
 * in whichever form the build has. */
#include <math.h>
#include <string.h>

#include "compute/blas.h"
#include "compute/fastmath.h"
#include "ops/ops.h"

#if defined(__AVX512F__)
#define GF_ATTN_LANES 16
#elif defined(__AVX2__) && defined(__FMA__)
#define GF_ATTN_LANES 8
#endif

#ifdef GF_ATTN_LANES
#include <immintrin.h>

#define ALWAYS_INLINE static inline __attribute__((always_inline))

static int64_t up16(int64_t n) { return (n + 15) & ~(int64_t)15; }

/* The left operand of row_tile: element (r, t) at p[r * rs + t * ts] (a row-major matrix, or the transpose
 * of one read in place). */
typedef struct strided {
    const float *p;
    int64_t rs, ts;
} strided;

#if GF_ATTN_LANES == 16 /* ---- AVX-512: 16-lane zmm registers, 32 of them, mask registers ------------------ */

enum { RT = 8, QBF = GF_ATTN_HEAD_QB }; /* rows of a register tile; queries per block */

/* r[0..15] (rows) transposed in place: r[c] becomes column c. Unpack pairs of rows, then 4 x 4 blocks
 * within each 128-bit lane, then the lanes across the four groups of four rows. */
static void transpose16(__m512 r[16]) {
    __m512 t[16], u[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int g = 0; g < 4; g++) { /* u[4g + c], lane L: column 4L + c of rows 4g .. 4g+3 */
        u[4 * g] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int c = 0; c < 4; c++) { /* column 4L + c: lane L of u[c], u[4 + c], u[8 + c], u[12 + c] */
        const __m512 v0 = _mm512_shuffle_f32x4(u[c], u[4 + c], _MM_SHUFFLE(1, 0, 1, 0));
        const __m512 v1 = _mm512_shuffle_f32x4(u[c], u[4 + c], _MM_SHUFFLE(3, 2, 3, 2));
        const __m512 w0 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], _MM_SHUFFLE(1, 0, 1, 0));
        const __m512 w1 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], _MM_SHUFFLE(3, 2, 3, 2));
        r[c] = _mm512_shuffle_f32x4(v0, w0, _MM_SHUFFLE(2, 0, 2, 0));
        r[4 + c] = _mm512_shuffle_f32x4(v0, w0, _MM_SHUFFLE(3, 1, 3, 1));
        r[8 + c] = _mm512_shuffle_f32x4(v1, w1, _MM_SHUFFLE(2, 0, 2, 0));
        r[12 + c] = _mm512_shuffle_f32x4(v1, w1, _MM_SHUFFLE(3, 1, 3, 1));
    }
}

static __mmask16 mask_of(int64_t n) { return n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1u); }

/* kt (dh, Sp) = k^T for S rows of k (stride ldk), columns S .. Sp-1 zero: 16 x 16 blocks transposed in
 * registers (reading k's columns one at a time waited on a cache line per element) */
static void transpose_pad(float *kt, const float *k, int64_t ldk, int64_t S, int64_t dh, int64_t Sp) {
    for (int64_t j0 = 0; j0 < Sp; j0 += 16)
        for (int64_t e0 = 0; e0 < dh; e0 += 16) {
            const __mmask16 m = mask_of(dh - e0);
            __m512 r[16];
            for (int jj = 0; jj < 16; jj++) {
                if (j0 + 32 + jj < S) _mm_prefetch((const char *)(k + (j0 + 32 + jj) * ldk + e0), _MM_HINT_T0);
                r[jj] = j0 + jj < S ? _mm512_maskz_loadu_ps(m, k + (j0 + jj) * ldk + e0) : _mm512_setzero_ps();
            }
            transpose16(r);
            for (int c = 0; c < 16 && e0 + c < dh; c++) _mm512_storeu_ps(kt + (e0 + c) * Sp + j0, r[c]);
        }
}

/* C (R, 16 W) = scale A (R, K) Bt (K, 16 W): A rows at stride lda, Bt and C rows at stride ld. */
ALWAYS_INLINE void score_kernel(const int R, const int W, float *C, const float *A, int64_t lda, const float *Bt,
                                int64_t ld, int64_t K, float scale) {
    __m512 acc[RT][2];
    for (int r = 0; r < R; r++)
        for (int w = 0; w < W; w++) acc[r][w] = _mm512_setzero_ps();
    for (int64_t e = 0; e < K; e++) {
        const __m512 b0 = _mm512_loadu_ps(Bt + e * ld), b1 = W > 1 ? _mm512_loadu_ps(Bt + e * ld + 16) : b0;
        for (int r = 0; r < R; r++) {
            const __m512 a = _mm512_set1_ps(A[r * lda + e]);
            acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
            if (W > 1) acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
        }
    }
    const __m512 s = _mm512_set1_ps(scale);
    for (int r = 0; r < R; r++)
        for (int w = 0; w < W; w++) _mm512_storeu_ps(C + r * ld + 16 * w, _mm512_mul_ps(acc[r][w], s));
}

/* C (R, n) = scale A (R, K) Bt (K, n) for n a multiple of 16, R <= RT rows */
ALWAYS_INLINE void score_rows(const int R, float *C, const float *A, int64_t lda, const float *Bt, int64_t ld,
                              int64_t K, int64_t n, float scale) {
    int64_t j = 0;
    for (; j + 32 <= n; j += 32) score_kernel(R, 2, C + j, A, lda, Bt + j, ld, K, scale);
    if (j < n) score_kernel(R, 1, C + j, A, lda, Bt + j, ld, K, scale);
}

static void score_tile(int R, float *C, const float *A, int64_t lda, const float *Bt, int64_t ld, int64_t K,
                       int64_t n, float scale) {
    switch (R) {
    case 8: score_rows(8, C, A, lda, Bt, ld, K, n, scale); break;
    case 7: score_rows(7, C, A, lda, Bt, ld, K, n, scale); break;
    case 6: score_rows(6, C, A, lda, Bt, ld, K, n, scale); break;
    case 5: score_rows(5, C, A, lda, Bt, ld, K, n, scale); break;
    case 4: score_rows(4, C, A, lda, Bt, ld, K, n, scale); break;
    case 3: score_rows(3, C, A, lda, Bt, ld, K, n, scale); break;
    case 2: score_rows(2, C, A, lda, Bt, ld, K, n, scale); break;
    default: score_rows(1, C, A, lda, Bt, ld, K, n, scale); break;
    }
}

/* C (R, cols e0 .. e0+16W) (+)= sum over t in [t0, t1) of A(r, t) B (t, e): B rows at stride ldb; m0, m1 mask
 * the two 16-column chunks (the head's last columns). */
ALWAYS_INLINE void row_kernel(const int R, const int W, float *C, int64_t ldc, strided A, const float *B,
                              int64_t ldb, int64_t t0, int64_t t1, __mmask16 m0, __mmask16 m1, bool acc_c) {
    __m512 acc[RT][2];
    for (int r = 0; r < R; r++) {
        acc[r][0] = acc_c ? _mm512_maskz_loadu_ps(m0, C + r * ldc) : _mm512_setzero_ps();
        if (W > 1) acc[r][1] = acc_c ? _mm512_maskz_loadu_ps(m1, C + r * ldc + 16) : _mm512_setzero_ps();
    }
    for (int64_t t = t0; t < t1; t++) {
        const __m512 b0 = _mm512_maskz_loadu_ps(m0, B + t * ldb);
        const __m512 b1 = W > 1 ? _mm512_maskz_loadu_ps(m1, B + t * ldb + 16) : b0;
        for (int r = 0; r < R; r++) {
            const __m512 a = _mm512_set1_ps(A.p[r * A.rs + t * A.ts]);
            acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
            if (W > 1) acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
        }
    }
    for (int r = 0; r < R; r++) {
        _mm512_mask_storeu_ps(C + r * ldc, m0, acc[r][0]);
        if (W > 1) _mm512_mask_storeu_ps(C + r * ldc + 16, m1, acc[r][1]);
    }
}

/* C (R, dh) (+)= A (R, [t0, t1)) B ([t0, t1), dh), the head's columns in chunks of 32 */
ALWAYS_INLINE void row_cols(const int R, float *C, int64_t ldc, strided A, const float *B, int64_t ldb,
                            int64_t dh, int64_t t0, int64_t t1, bool acc_c) {
    for (int64_t e = 0; e < dh; e += 32) {
        const int64_t left = dh - e;
        if (left > 16)
            row_kernel(R, 2, C + e, ldc, A, B + e, ldb, t0, t1, 0xFFFF, mask_of(left - 16), acc_c);
        else
            row_kernel(R, 1, C + e, ldc, A, B + e, ldb, t0, t1, mask_of(left), 0, acc_c);
    }
}

static void row_tile(int R, float *C, int64_t ldc, strided A, const float *B, int64_t ldb, int64_t dh, int64_t t0,
                     int64_t t1, bool acc_c) {
    switch (R) {
    case 8: row_cols(8, C, ldc, A, B, ldb, dh, t0, t1, acc_c); break;
    case 7: row_cols(7, C, ldc, A, B, ldb, dh, t0, t1, acc_c); break;
    case 6: row_cols(6, C, ldc, A, B, ldb, dh, t0, t1, acc_c); break;
    case 5: row_cols(5, C, ldc, A, B, ldb, dh, t0, t1, acc_c); break;
    case 4: row_cols(4, C, ldc, A, B, ldb, dh, t0, t1, acc_c); break;
    case 3: row_cols(3, C, ldc, A, B, ldb, dh, t0, t1, acc_c); break;
    case 2: row_cols(2, C, ldc, A, B, ldb, dh, t0, t1, acc_c); break;
    default: row_cols(1, C, ldc, A, B, ldb, dh, t0, t1, acc_c); break;
    }
}

/* the largest and the sum of a chunk's 16 lane partials */
static float hmax16(const float m[16]) { return _mm512_reduce_max_ps(_mm512_loadu_ps(m)); }
static float hsum16(const float s[16]) { return _mm512_reduce_add_ps(_mm512_loadu_ps(s)); }

static const char KERNEL[] = "avx512";

#elif GF_ATTN_LANES == 8 /* ---- AVX2 + FMA: 8-lane ymm registers, 16 of them, no mask registers ---------- */

enum { RT = 6, QBF = GF_ATTN_HEAD_QB }; /* rows of a register tile (the file's comment); queries per block */

/* Unrolled before GCC's scalar replacement of the accumulator arrays (12.2 left the loops over a tile's
 * rows that set or store them rolled: the arrays stayed in memory, stored to the stack at every step of
 * the inner loop) */
#define UNROLL _Pragma("GCC unroll 8")

/* the mask of _mm256_maskload_ps / _mm256_maskstore_ps for lanes 0 .. n-1 (all 8 for n >= 8) */
static __m256i mask8(int64_t n) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n >= 8 ? 8 : (int)n), lane);
}

/* r[0..7] (rows) transposed in place: r[c] becomes column c. Unpack pairs of rows, then 4 x 4 blocks within
 * each 128-bit lane, then the lanes of the two groups of four rows. */
static void transpose8(__m256 r[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int g = 0; g < 2; g++) { /* u[4g + c], lane L: column 4L + c of rows 4g .. 4g+3 */
        u[4 * g] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * g + 1] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[4 * g + 2] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * g + 3] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int c = 0; c < 4; c++) { /* column c: the low lanes of u[c], u[4 + c]; column 4 + c: the high ones */
        r[c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20);
        r[4 + c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31);
    }
}

/* kt (dh, Sp) = k^T for S rows of k (stride ldk), columns S .. Sp-1 zero: 8 x 8 blocks transposed in
 * registers, a head's last 1-7 columns read by a masked load */
static void transpose_pad(float *kt, const float *k, int64_t ldk, int64_t S, int64_t dh, int64_t Sp) {
    for (int64_t j0 = 0; j0 < Sp; j0 += 8)
        for (int64_t e0 = 0; e0 < dh; e0 += 8) {
            const bool full = dh - e0 >= 8;
            const __m256i m = mask8(dh - e0);
            __m256 r[8];
            for (int jj = 0; jj < 8; jj++) {
                const float *row = k + (j0 + jj) * ldk + e0;
                if (j0 + 32 + jj < S) _mm_prefetch((const char *)(row + 32 * ldk), _MM_HINT_T0);
                r[jj] = j0 + jj >= S ? _mm256_setzero_ps() : full ? _mm256_loadu_ps(row) : _mm256_maskload_ps(row, m);
            }
            transpose8(r);
            for (int c = 0; c < 8 && e0 + c < dh; c++) _mm256_storeu_ps(kt + (e0 + c) * Sp + j0, r[c]);
        }
}

/* C (R, 16) = scale A (R, K) Bt (K, 16): A rows at stride lda, Bt and C rows at stride ld; R <= RT */
ALWAYS_INLINE void score_kernel(const int R, float *C, const float *A, int64_t lda, const float *Bt, int64_t ld,
                                int64_t K, float scale) {
    __m256 acc[RT][2];
    UNROLL for (int r = 0; r < R; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int64_t e = 0; e < K; e++) {
        const __m256 b0 = _mm256_loadu_ps(Bt + e * ld), b1 = _mm256_loadu_ps(Bt + e * ld + 8);
        UNROLL for (int r = 0; r < R; r++) {
            const __m256 a = _mm256_broadcast_ss(A + r * lda + e);
            acc[r][0] = _mm256_fmadd_ps(a, b0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(a, b1, acc[r][1]);
        }
    }
    const __m256 s = _mm256_set1_ps(scale);
    UNROLL for (int r = 0; r < R; r++) {
        _mm256_storeu_ps(C + r * ld, _mm256_mul_ps(acc[r][0], s));
        _mm256_storeu_ps(C + r * ld + 8, _mm256_mul_ps(acc[r][1], s));
    }
}

/* C (R, n) = scale A (R, K) Bt (K, n) for n a multiple of 16, R <= RT rows */
ALWAYS_INLINE void score_rows(const int R, float *C, const float *A, int64_t lda, const float *Bt, int64_t ld,
                              int64_t K, int64_t n, float scale) {
    for (int64_t j = 0; j < n; j += 16) score_kernel(R, C + j, A, lda, Bt + j, ld, K, scale);
}

static void score_tile(int R, float *C, const float *A, int64_t lda, const float *Bt, int64_t ld, int64_t K,
                       int64_t n, float scale) {
    switch (R) {
    case 6: score_rows(6, C, A, lda, Bt, ld, K, n, scale); break;
    case 5: score_rows(5, C, A, lda, Bt, ld, K, n, scale); break;
    case 4: score_rows(4, C, A, lda, Bt, ld, K, n, scale); break;
    case 3: score_rows(3, C, A, lda, Bt, ld, K, n, scale); break;
    case 2: score_rows(2, C, A, lda, Bt, ld, K, n, scale); break;
    default: score_rows(1, C, A, lda, Bt, ld, K, n, scale); break;
    }
}

/* 8 head columns from p: all of them, or (tail) the lanes of m, the others read as 0 and never written */
ALWAYS_INLINE __m256 load8(const bool tail, const float *p, __m256i m) {
    return tail ? _mm256_maskload_ps(p, m) : _mm256_loadu_ps(p);
}
ALWAYS_INLINE void store8(const bool tail, float *p, __m256i m, __m256 x) {
    if (tail)
        _mm256_maskstore_ps(p, m, x);
    else
        _mm256_storeu_ps(p, x);
}

/* C (R, cols e0 .. e0+8W) (+)= sum over t in [t0, t1) of A(r, t) B (t, e): B rows at stride ldb; tail: the
 * last of the W registers holds the head's last columns, the lanes of m. */
ALWAYS_INLINE void row_kernel(const int R, const int W, const bool tail, float *C, int64_t ldc, strided A,
                              const float *B, int64_t ldb, int64_t t0, int64_t t1, __m256i m, bool acc_c) {
    __m256 acc[RT][2], b[2];
    UNROLL for (int r = 0; r < R; r++) {
        UNROLL for (int w = 0; w < W; w++)
            acc[r][w] = acc_c ? load8(tail && w == W - 1, C + r * ldc + 8 * w, m) : _mm256_setzero_ps();
    }
    for (int64_t t = t0; t < t1; t++) {
        UNROLL for (int w = 0; w < W; w++) b[w] = load8(tail && w == W - 1, B + t * ldb + 8 * w, m);
        UNROLL for (int r = 0; r < R; r++) {
            const __m256 a = _mm256_broadcast_ss(A.p + r * A.rs + t * A.ts);
            UNROLL for (int w = 0; w < W; w++) acc[r][w] = _mm256_fmadd_ps(a, b[w], acc[r][w]);
        }
    }
    UNROLL for (int r = 0; r < R; r++) {
        UNROLL for (int w = 0; w < W; w++) store8(tail && w == W - 1, C + r * ldc + 8 * w, m, acc[r][w]);
    }
}

/* C (R, dh) (+)= A (R, [t0, t1)) B ([t0, t1), dh): the head's columns 16 at a time, then 8, then the last
 * 1-15 (the last register's masked) */
ALWAYS_INLINE void row_cols(const int R, float *C, int64_t ldc, strided A, const float *B, int64_t ldb,
                            int64_t dh, int64_t t0, int64_t t1, bool acc_c) {
    const __m256i all = _mm256_set1_epi32(-1);
    int64_t e = 0;
    for (; e + 16 <= dh; e += 16) row_kernel(R, 2, false, C + e, ldc, A, B + e, ldb, t0, t1, all, acc_c);
    const int64_t left = dh - e;
    if (left > 8)
        row_kernel(R, 2, true, C + e, ldc, A, B + e, ldb, t0, t1, mask8(left - 8), acc_c);
    else if (left == 8)
        row_kernel(R, 1, false, C + e, ldc, A, B + e, ldb, t0, t1, all, acc_c);
    else if (left > 0)
        row_kernel(R, 1, true, C + e, ldc, A, B + e, ldb, t0, t1, mask8(left), acc_c);
}

static void row_tile(int R, float *C, int64_t ldc, strided A, const float *B, int64_t ldb, int64_t dh, int64_t t0,
                     int64_t t1, bool acc_c) {
    switch (R) {
    case 6: row_cols(6, C, ldc, A, B, ldb, dh, t0, t1, acc_c); break;
    case 5: row_cols(5, C, ldc, A, B, ldb, dh, t0, t1, acc_c); break;
    case 4: row_cols(4, C, ldc, A, B, ldb, dh, t0, t1, acc_c); break;
    case 3: row_cols(3, C, ldc, A, B, ldb, dh, t0, t1, acc_c); break;
    case 2: row_cols(2, C, ldc, A, B, ldb, dh, t0, t1, acc_c); break;
    default: row_cols(1, C, ldc, A, B, ldb, dh, t0, t1, acc_c); break;
    }
}

/* the largest and the sum of a chunk's 16 lane partials: the halving tree of _mm512_reduce_max_ps and
 * _mm512_reduce_add_ps (the AVX-512 form's), so the two forms' rows agree bit for bit */
static float hmax16(const float m[16]) {
    const __m256 v = _mm256_max_ps(_mm256_loadu_ps(m + 8), _mm256_loadu_ps(m));
    __m128 w = _mm_max_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
    w = _mm_max_ps(w, _mm_movehl_ps(w, w));
    return _mm_cvtss_f32(_mm_max_ss(w, _mm_movehdup_ps(w)));
}
static float hsum16(const float s[16]) {
    const __m256 v = _mm256_add_ps(_mm256_loadu_ps(s + 8), _mm256_loadu_ps(s));
    __m128 w = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
    w = _mm_add_ps(w, _mm_movehl_ps(w, w));
    return _mm_cvtss_f32(_mm_add_ss(w, _mm_movehdup_ps(w)));
}

static const char KERNEL[] = "avx2";

#endif

/* ---- the wiring, one copy for both forms: first the softmax rows of a tile, in whole chunks of 16 ---- */
/* A row's first len scores, its padded keys (km) and its padding to whole chunks at -inf; returns its length
 * in chunks of 16 floats (the row's stride leaves room: Sp is a multiple of 16). */
static int64_t chunked(float *row, int64_t len, const uint8_t *km) {
    const int64_t n = up16(len);
    for (int64_t j = len; j < n; j++) row[j] = -INFINITY;
    for (int64_t j = 0; km && j < len; j++)
        if (!km[j]) row[j] = -INFINITY;
    return n;
}

static float row_max(const float *row, int64_t n) {
    float m[16];
    for (int l = 0; l < 16; l++) m[l] = -INFINITY;
    for (int64_t j = 0; j < n; j += 16)
#pragma omp simd
        for (int l = 0; l < 16; l++) m[l] = row[j + l] > m[l] ? row[j + l] : m[l];
    return hmax16(m);
}

/* row = e^(row - sub); returns the sum */
static float exp_sum(float *row, int64_t n, float sub) {
    float s[16] = {0};
    for (int64_t j = 0; j < n; j += 16)
#pragma omp simd
        for (int l = 0; l < 16; l++) {
            row[j + l] = gf_exp_fast_fma(row[j + l] - sub);
            s[l] += row[j + l];
        }
    return hsum16(s);
}

/* Exact zeros where no key is: the padded keys, and from len to end (the -inf above became e^-87) */
static void clear(float *row, int64_t len, int64_t end, const uint8_t *km) {
    for (int64_t j = 0; km && j < len; j++)
        if (!km[j]) row[j] = 0.0f;
    if (end > len) memset(row + len, 0, (size_t)(end - len) * sizeof(float));
}

/* The tile's R rows of probabilities from i (absolute), each 0 from its last key to kl (and to its chunk's
 * end): the forward's (lse_out) e^(x - max) left unnormalised, 1 / sum into inv; the backward's (lse_in)
 * e^(x - lse). The scores are over the keys the tile sees, rounded up to 16 against the zero-padded kt. */
static void probs_tile(const gf_attn_head *a, float *P, int64_t Sp, const float *kt, int64_t i, int R, int64_t kl,
                       float scale, const float *lse_in, float *lse_out, float *inv) {
    score_tile(R, P, a->q + i * a->ldq, a->ldq, kt, Sp, a->dh, up16(gf_attn_head_keys(a, i, R)), scale);
    for (int r = 0; r < R; r++) {
        float *row = P + r * Sp;
        const int64_t len = a->causal ? i + r + 1 : a->S, n = chunked(row, len, a->km);
        float l = lse_in ? lse_in[i + r] : row_max(row, n);
        if (lse_in ? l == INFINITY : l == -INFINITY) { /* no real key: P = 0, lse = +inf (an overflowed score,
                                                         * max +inf, goes on to NaN, as in the default path) */
            l = INFINITY;
            memset(row, 0, (size_t)(n > kl ? n : kl) * sizeof(float));
        } else if (lse_in) {
            exp_sum(row, n, l);
        } else {
            const float sum = exp_sum(row, n, l);
            inv[r] = 1.0f / sum;
            l += logf(sum);
        }
        if (lse_out) lse_out[i + r] = l;
        if (l == INFINITY && inv) inv[r] = 0.0f;
        if (l != INFINITY) clear(row, len, n > kl ? n : kl, a->km);
    }
}

/* dS = P (dP - rowdot(P, dP)) scale in place over a row's chunks (P is 0 past the row's last key) */
static void softmax_back_chunked(float *ds, const float *p, int64_t n, float scale) {
    float d[16] = {0};
    for (int64_t j = 0; j < n; j += 16)
#pragma omp simd
        for (int l = 0; l < 16; l++) d[l] += p[j + l] * ds[j + l];
    const float dot = hsum16(d);
    for (int64_t j = 0; j < n; j += 16)
#pragma omp simd
        for (int l = 0; l < 16; l++) ds[j + l] = p[j + l] * (ds[j + l] - dot) * scale;
}

/* The thread's scratch: P and dS (QBF, Sp) each, then kt and vt (dh, Sp) each; Sp = S rounded up to 16. */
typedef struct tiles {
    float *P, *dS, *kt, *vt;
    int64_t Sp;
} tiles;

static tiles tiles_of(const gf_attn_head *a) {
    tiles t = {.Sp = up16(a->S), .P = a->scratch};
    t.dS = t.P + QBF * t.Sp, t.kt = t.dS + QBF * t.Sp, t.vt = t.kt + a->dh * t.Sp;
    return t;
}

int64_t gf_attn_head_fast_floats(int64_t S, int64_t dh) { return (2 * QBF + 2 * dh) * up16(S); }

void gf_attn_head_forward_fast(const gf_attn_head *a, float *o, float *lse) {
    const tiles t = tiles_of(a);
    const int64_t Sp = t.Sp;
    float *P = t.P, *kt = t.kt;
    const float scale = gf_attn_head_scale(a);
    transpose_pad(kt, a->k, a->ldk, a->S, a->dh, Sp);
    for (int64_t i = 0; i < a->T; i += RT) {
        const int R = a->T - i < RT ? (int)(a->T - i) : RT;
        const int64_t kl = gf_attn_head_keys(a, i, R);
        float inv[RT];
        probs_tile(a, P, Sp, kt, i, R, kl, scale, NULL, lse, inv);
        row_tile(R, o + i * a->ldo, a->ldo, (strided){P, Sp, 1}, a->v, a->ldv, a->dh, 0, kl, false);
        for (int r = 0; r < R; r++) {
            float *orow = o + (i + r) * a->ldo;
#pragma omp simd
            for (int64_t e = 0; e < a->dh; e++) orow[e] *= inv[r];
        }
    }
}

/* One block of up to QBF queries from i0: P and dS for the block's rows (tile by tile: P, dP = dO v^T, dS,
 * and dq += dS k), then dv += P^T dO and dk += dS^T q over the block's rows, key tile by key tile. */
static void backward_block(const gf_attn_head *a, float *dq, float *dk, float *dv, const float *dout,
                           const float *lse, int64_t i0, int64_t nq) {
    const tiles t = tiles_of(a);
    const int64_t Sp = t.Sp, kl = gf_attn_head_keys(a, i0, nq);
    float *P = t.P, *dS = t.dS, *kt = t.kt, *vt = t.vt;
    const float scale = gf_attn_head_scale(a);
    for (int64_t it = 0; it < nq; it += RT) {
        const int R = nq - it < RT ? (int)(nq - it) : RT;
        const int64_t i = i0 + it, tk = gf_attn_head_keys(a, i, R);
        float *Pt = P + it * Sp, *dSt = dS + it * Sp;
        probs_tile(a, Pt, Sp, kt, i, R, kl, scale, lse, NULL, NULL);
        score_tile(R, dSt, dout + i * a->ldo, a->ldo, vt, Sp, a->dh, up16(tk), 1.0f);
        for (int r = 0; r < R; r++) {
            const int64_t n = up16(a->causal ? i + r + 1 : a->S);
            softmax_back_chunked(dSt + r * Sp, Pt + r * Sp, n, scale);
            if (kl > n) memset(dSt + r * Sp + n, 0, (size_t)(kl - n) * sizeof(float));
        }
        row_tile(R, dq + i * a->ldq, a->ldq, (strided){dSt, Sp, 1}, a->k, a->ldk, a->dh, 0, tk, true);
    }
    for (int64_t j = 0; j < kl; j += RT) {
        const int R = kl - j < RT ? (int)(kl - j) : RT;
        const int64_t t0 = a->causal && j > i0 ? j - i0 : 0; /* the block's queries that see key j */
        row_tile(R, dv + j * a->ldv, a->ldv, (strided){P + j, 1, Sp}, dout + i0 * a->ldo, a->ldo, a->dh, t0, nq, true);
        row_tile(R, dk + j * a->ldk, a->ldk, (strided){dS + j, 1, Sp}, a->q + i0 * a->ldq, a->ldq, a->dh, t0, nq, true);
    }
}

void gf_attn_head_backward_fast(const gf_attn_head *a, float *dq, float *dk, float *dv, const float *dout,
                                const float *lse) {
    const tiles t = tiles_of(a);
    transpose_pad(t.kt, a->k, a->ldk, a->S, a->dh, t.Sp);
    transpose_pad(t.vt, a->v, a->ldv, a->S, a->dh, t.Sp);
    for (int64_t i0 = 0; i0 < a->T; i0 += QBF)
        backward_block(a, dq, dk, dv, dout, lse, i0, a->T - i0 < QBF ? a->T - i0 : QBF);
}

bool gf_attn_head_fast_available(void) { return true; }
const char *gf_attn_head_fast_kernel(void) { return KERNEL; }

#else /* neither AVX-512 nor AVX2 with FMA in this build: the default path runs */

bool gf_attn_head_fast_available(void) { return false; }
const char *gf_attn_head_fast_kernel(void) { return NULL; }
int64_t gf_attn_head_fast_floats(int64_t S, int64_t dh) { (void)S, (void)dh; return 0; }
void gf_attn_head_forward_fast(const gf_attn_head *a, float *o, float *lse) { gf_attn_head_forward_exact(a, o, lse); }
void gf_attn_head_backward_fast(const gf_attn_head *a, float *dq, float *dk, float *dv, const float *dout,
                                const float *lse) {
    gf_attn_head_backward_exact(a, dq, dk, dv, dout, lse);
}

#endif

const char *gf_attention_fast_kernel(void) {
    const char *k = gf_attn_head_fast_kernel();
    if (!k) return "none (the default path's BLAS calls)";
    return !strcmp(k, "avx512") ? "AVX-512 register tiles" : "AVX2 + FMA register tiles";
}
