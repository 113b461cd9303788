/* bf16 matmuls (src/compute/bf16.c, src/compute/matmul_dnnl.c, the door in src/compute/blas.c):
 * - the fast float -> bfloat16 conversion equals the scalar reference bit for bit (ties, carries into the
 *   exponent, overflow to infinity, denormals, NaNs, and a million random bit patterns);
 * - gf_sgemm in bf16 equals the naive bf16 reference (both operands rounded, sums in double) within the
 *   rounding of fp32 sums, for every transpose, alpha, beta and leading dimension, and leaves the rest of C;
 * - it is within the bound bfloat16's format gives of the exact product of the fp32 operands
 *   (|error| <= (2u + u^2) sum |a||b| plus the fp32 sums' own, u = 2^-8), and differs from fp32 sgemm
 *   (so the bf16 path ran);
 * - a matmul of one row or under GF_BF16_MIN_MACS multiply-adds stays fp32 bit for bit;
 * - fp32 matmuls (through the door: OpenBLAS, or oneDNN's fp32 matmul for the skinny ones; and
 *   oneDNN's itself) against a double reference within fp32's bound, every transpose, alpha, beta, ld;
 *   oneDNN's refuses strided operands;
 * - oneDNN's matmuls (fp32 and bf16) under a storm of signals: the products bit for bit and the heap whole
 *   (its JIT sgemm, which corrupts the heap when a signal lands in it, is never used);
 * - the precision's names, and the refusal (with the reason) where bf16 cannot run;
 * - int8 weights: the row quantizer's codes and scales; the VNNI GEMV equals its reference bit for bit
 *   (every tail length, blocks of 4 rows and the rest, alpha and beta); bf16 weights: the GEMV against its
 *   reference; the door runs a one-row matmul on a registered copy, or on a block of its rows and columns,
 *   and leaves other matrices (and a block with another row stride) to fp32.
 * Where this CPU or build cannot run bf16, the tests that need it are skipped, saying so. */
#include <float.h>
#include <malloc.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"

#include "compute/bf16.h"
#include "compute/blas.h"
#include "compute/lowp.h"
#include "compute/matmul_dnnl.h"
#include "compute/quant.h"
#include "base/rng.h"
#include "ops/ops.h"

static bool bf16_here(void) {
    const char *why = gf_precision_unavailable(GF_PRECISION_BF16);
    if (why) fprintf(stderr, "bf16 unavailable here (%s): skipped\n", why);
    return !why;
}

static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static void check_convert(const float *x, int64_t n) {
    gf_bf16 *fast = talloc((size_t)n * sizeof *fast), *ref = talloc((size_t)n * sizeof *ref);
    gf_bf16_from_f32(fast, x, 1, n, n);
    gf_bf16_from_f32_naive(ref, x, 1, n, n);
    for (int64_t i = 0; i < n; i++)
        if (fast[i] != ref[i]) {
            uint32_t u;
            memcpy(&u, &x[i], sizeof u);
            fail_msg("bf16 of 0x%08x: fast 0x%04x, reference 0x%04x", u, fast[i], ref[i]);
        }
}

static void test_convert(void **state) {
    (void)state;
    if (!gf_bf16_cpu()) skip();
    const uint32_t edge[] = {0x00000000, 0x80000000, 0x3f800000, 0x3f808000, 0x3f818000, 0x3f80ffff, 0x3f7fffff,
                             0x7f7fffff, 0xff7fffff, 0x7f7f8000, 0x7f7f7fff, 0x00800000, 0x807fffff, 0x00000001,
                             0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xffa00001, 0x7fbfffff, 0x4effffff};
    float x[sizeof edge / sizeof *edge];
    for (size_t i = 0; i < sizeof edge / sizeof *edge; i++) x[i] = from_bits(edge[i]);
    check_convert(x, (int64_t)(sizeof x / sizeof *x));
    /* the reference's own cases, by hand */
    assert_int_equal(gf_bf16_from_f32_ref(from_bits(0x3f808000)), 0x3f80); /* a tie: to even (down) */
    assert_int_equal(gf_bf16_from_f32_ref(from_bits(0x3f818000)), 0x3f82); /* a tie: to even (up) */
    assert_int_equal(gf_bf16_from_f32_ref(FLT_MAX), 0x7f80);               /* overflows to infinity */
    assert_int_equal(gf_bf16_from_f32_ref(from_bits(0x807fffff)), 0x8000); /* a denormal: a signed zero */
    assert_int_equal(gf_bf16_from_f32_ref(from_bits(0x7f800001)), 0x7fc0); /* a NaN stays one */
    const int64_t n = 1 << 20;
    float *r = falloc(n);
    for (int64_t i = 0; i < n; i++) r[i] = from_bits((uint32_t)gf_rand64(7, (uint64_t)i));
    check_convert(r, n); /* and every tail length of the vector loop */
    for (int64_t len = 1; len < 40; len++) check_convert(r + len, len);
}

/* C as gf_sgemm in bf16 leaves it against the naive reference: sums in a different order only. */
static void one_shape(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, float beta, uint64_t seed) {
    const int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 2, ldc = N + 5;
    const int64_t ra = ta ? K : M, rb = tb ? N : K;
    float *A = falloc(ra * lda), *B = falloc(rb * ldb), *C = falloc(M * ldc), *R = falloc(M * ldc),
          *F = falloc(M * ldc);
    tl_fill_uniform(A, ra * lda, seed, -2.0f, 2.0f);
    tl_fill_uniform(B, rb * ldb, seed + 1, -1.0f, 1.0f);
    tl_fill_uniform(C, M * ldc, seed + 2, -1.0f, 1.0f);
    memcpy(R, C, (size_t)(M * ldc) * sizeof *C);
    memcpy(F, C, (size_t)(M * ldc) * sizeof *C);
    assert_int_equal(gf_set_matmul_precision(GF_PRECISION_BF16), 0);
    gf_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    assert_int_equal(gf_set_matmul_precision(GF_PRECISION_FP32), 0);
    gf_bf16_matmul_naive(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, R, ldc);
    gf_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, F, ldc);
    const double u = 0x1p-8, u32 = 0x1p-24;
    double max_vs_fp32 = 0.0;
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < ldc; n++) {
            const int64_t i = m * ldc + n;
            if (n >= N) { /* outside op(A) op(B): untouched */
                assert_memory_equal(&C[i], &R[i], sizeof *C);
                continue;
            }
            double s_round = 0.0, s_exact = 0.0;
            for (int64_t k = 0; k < K; k++) {
                const float a = ta ? A[k * lda + m] : A[m * lda + k], b = tb ? B[n * ldb + k] : B[k * ldb + n];
                s_round += fabs((double)gf_bf16_to_f32(gf_bf16_from_f32_ref(a)) * gf_bf16_to_f32(gf_bf16_from_f32_ref(b)));
                s_exact += fabs((double)a * b);
            }
            const double c0 = fabs((double)beta); /* C before the call is in [-1, 1) */
            /* against the reference: fp32 sums of K products in any order, alpha, beta C, one rounding */
            const double tol_ref = (K + 3) * u32 * (fabs(alpha) * s_round + c0 + 1.0) * 1.01;
            if (!(fabs((double)C[i] - R[i]) <= tol_ref)) /* a NaN fails */
                fail_msg("bf16 matmul %s%s M %lld N %lld K %lld: C[%lld][%lld] %.9g, reference %.9g (tol %.3g)",
                         ta ? "T" : "N", tb ? "T" : "N", (long long)M, (long long)N, (long long)K, (long long)m,
                         (long long)n, C[i], R[i], tol_ref);
            max_vs_fp32 = fmax(max_vs_fp32, fabs((double)C[i] - F[i]));
            /* against the exact product of the fp32 operands: bfloat16's bound */
            const double tol_fmt = (2 * u + u * u) * fabs(alpha) * s_exact + 2 * tol_ref;
            if (!(fabs((double)C[i] - (double)F[i]) <= tol_fmt + (K + 3) * u32 * (fabs(alpha) * s_exact + c0 + 1.0)))
                fail_msg("bf16 matmul beyond bfloat16's bound at [%lld][%lld]: %.9g vs fp32 %.9g (bound %.3g)",
                         (long long)m, (long long)n, C[i], F[i], tol_fmt);
        }
    assert_true(max_vs_fp32 > 0.0); /* the bf16 path ran: fp32 sgemm gives other bits */
}

static void test_matmul(void **state) {
    (void)state;
    if (!bf16_here()) skip();
    uint64_t seed = 100;
    for (int t = 0; t < 4; t++) {
        const bool ta = t & 1, tb = t & 2;
        /* each at least GF_BF16_MIN_MACS multiply-adds, with odd sizes */
        one_shape(ta, tb, 137, 129, 70, 1.0f, 0.0f, seed += 10);
        one_shape(ta, tb, 164, 48, 135, 0.5f, 1.0f, seed += 10);
        one_shape(ta, tb, 9, 1130, 104, -1.25f, 0.25f, seed += 10);
    }
    assert_non_null(strstr(gf_bf16_isa(), "avx512_core"));
    assert_true(gf_bf16_kernel()[0] != '\0');
}

static void expect_bits(const float *got, const float *want, int64_t n, const char *what) {
    if (memcmp(got, want, (size_t)n * sizeof *got)) fail_msg("gf_sgemm_reuse_operands: %s", what);
}

/* gf_sgemm_reuse_operands (a linear layer's backward: dout is A of dinp = dout w and A^T of dw = dout^T x):
 * inside the span both products have the bits they have outside it (the second on the first's copy); a new
 * span forgets the copies made before it (A rewritten in between is read again); inside a span the same
 * address with another row count, or the same shape with another row stride, is another matrix; and
 * gf_linear_backward (which opens such a span) gives the bits of its two products made apart. */
static void test_reuse_operands(void **state) {
    (void)state;
    if (!bf16_here()) skip();
    const int64_t M = 274, K = 70, N = 129, H = M / 2;
    float *A = falloc(M * K), *B1 = falloc(K * N), *B2 = falloc(M * N);
    tl_fill_uniform(A, M * K, 400, -1.0f, 1.0f);
    tl_fill_uniform(B1, K * N, 401, -1.0f, 1.0f);
    tl_fill_uniform(B2, M * N, 402, -1.0f, 1.0f);
    float *R1 = falloc(M * N), *R2 = falloc(K * N), *R3 = falloc(H * N), *C1 = falloc(M * N), *C2 = falloc(K * N);
    float *C3 = falloc(H * N);
    assert_int_equal(gf_set_matmul_precision(GF_PRECISION_BF16), 0);
    gf_sgemm(false, false, M, N, K, 1.0f, A, K, B1, N, 0.0f, R1, N); /* R1 = A B1 */
    gf_sgemm(true, false, K, N, M, 1.0f, A, K, B2, N, 0.0f, R2, N);  /* R2 = A^T B2 */
    gf_sgemm(false, false, H, N, K, 1.0f, A, 2 * K, B1, N, 0.0f, R3, N); /* R3 = A's even rows B1 */
    gf_sgemm_reuse_operands(true);
    gf_sgemm(false, false, M, N, K, 1.0f, A, K, B1, N, 0.0f, C1, N);
    gf_sgemm(true, false, K, N, M, 1.0f, A, K, B2, N, 0.0f, C2, N);
    gf_sgemm_reuse_operands(false);
    expect_bits(C1, R1, M * N, "the first product differs");
    expect_bits(C2, R2, K * N, "the second product, on the reused copy, differs");
    gf_sgemm_reuse_operands(true); /* A's first H rows, then its even rows: the same address and shape */
    gf_sgemm(false, false, H, N, K, 1.0f, A, K, B1, N, 0.0f, C3, N);
    gf_sgemm(false, false, H, N, K, 1.0f, A, 2 * K, B1, N, 0.0f, C3, N);
    gf_sgemm_reuse_operands(false);
    expect_bits(C3, R3, H * N, "the same address and shape with another row stride took the other's copy");
    gf_sgemm(false, false, M, K, N, 1.0f, B2, N, B1, K, 0.0f, C1, N); /* slot A now holds another matrix */
    gf_sgemm_reuse_operands(true); /* A's first H rows, then all M: the same address and stride */
    gf_sgemm(false, false, H, N, K, 1.0f, A, K, B1, N, 0.0f, C3, N);
    gf_sgemm(false, false, M, N, K, 1.0f, A, K, B1, N, 0.0f, C1, N);
    gf_sgemm_reuse_operands(false);
    expect_bits(C1, R1, M * N, "the same address and stride with more rows took the smaller matrix's copy");
    /* gf_linear_backward in bf16: dinp (M, K) += dout (M, N) w (N, K); dw (N, K) += dout^T x (M, K) */
    float *x = falloc(M * K), *dinp = falloc(M * K), *dw = falloc(N * K), *Rin = falloc(M * K), *Rw = falloc(N * K);
    tl_fill_uniform(x, M * K, 403, -1.0f, 1.0f);
    tl_fill_uniform(dinp, M * K, 404, -1.0f, 1.0f);
    tl_fill_uniform(dw, N * K, 405, -1.0f, 1.0f);
    memcpy(Rin, dinp, (size_t)(M * K) * sizeof *dinp);
    memcpy(Rw, dw, (size_t)(N * K) * sizeof *dw);
    gf_sgemm(false, false, M, K, N, 1.0f, B2, N, B1, K, 1.0f, Rin, K); /* B1 read as w (N, K) */
    gf_sgemm(true, false, N, K, M, 1.0f, B2, N, x, K, 1.0f, Rw, K);
    gf_linear_backward(dinp, K, dw, K, NULL, B2, x, K, B1, K, M, K, N);
    expect_bits(dinp, Rin, M * K, "gf_linear_backward's input gradient differs from its product made apart");
    expect_bits(dw, Rw, N * K, "gf_linear_backward's weight gradient differs from its product made apart");
    gf_sgemm_reuse_operands(true);
    gf_sgemm(false, false, M, N, K, 1.0f, A, K, B1, N, 0.0f, C1, N);
    gf_sgemm_reuse_operands(false);
    for (int64_t i = 0; i < M * K; i++) A[i] = -A[i]; /* rounding is symmetric: every product negates */
    gf_sgemm_reuse_operands(true);
    gf_sgemm(false, false, M, N, K, 1.0f, A, K, B1, N, 0.0f, C1, N);
    gf_sgemm_reuse_operands(false);
    for (int64_t i = 0; i < M * N; i++) R1[i] = -R1[i];
    expect_bits(C1, R1, M * N, "a new span used a copy made before it, of A before it was rewritten");
    assert_int_equal(gf_set_matmul_precision(GF_PRECISION_FP32), 0);
}

/* One row, or fewer multiply-adds than GF_BF16_MIN_MACS: fp32 sgemm, bit for bit. */
static void test_small_stays_fp32(void **state) {
    (void)state;
    if (!bf16_here()) skip();
    const int64_t shapes[][3] = {{1, 3000, 400}, {8, 8, 8}, {63, 128, 128}}; /* one row; under GF_BF16_MIN_MACS */
    for (int s = 0; s < 3; s++) {
        const int64_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        float *A = falloc(M * K), *B = falloc(N * K), *C = falloc(M * N), *F = falloc(M * N);
        tl_fill_uniform(A, M * K, 1 + s, -1, 1);
        tl_fill_uniform(B, N * K, 2 + s, -1, 1);
        assert_int_equal(gf_set_matmul_precision(GF_PRECISION_BF16), 0);
        gf_sgemm(false, true, M, N, K, 1.0f, A, K, B, K, 0.0f, C, N);
        assert_int_equal(gf_set_matmul_precision(GF_PRECISION_FP32), 0);
        gf_sgemm(false, true, M, N, K, 1.0f, A, K, B, K, 0.0f, F, N);
        assert_memory_equal(C, F, (size_t)(M * N) * sizeof *C);
    }
}

/* fp32: C = alpha op(A) op(B) + beta C in double, then rounded once. */
static void f32_naive(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                      const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double s = 0.0;
            for (int64_t k = 0; k < K; k++)
                s += (double)(ta ? A[k * lda + m] : A[m * lda + k]) * (tb ? B[n * ldb + k] : B[k * ldb + n]);
            C[m * ldc + n] = (float)(alpha * s + (beta != 0.0f ? (double)beta * C[m * ldc + n] : 0.0));
        }
}

/* An fp32 matmul (through the door, or oneDNN's fp32 matmul itself) against f32_naive: fp32 sums of K
 * products in any order, |error| <= (K + 3) u sum |alpha a b| + beta C's, u = 2^-24; the columns past N
 * untouched. */
static void f32_shape(bool dnnl, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, float beta,
                      uint64_t seed) {
    const int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 2, ldc = N + 5, ra = ta ? K : M, rb = tb ? N : K;
    float *A = falloc(ra * lda), *B = falloc(rb * ldb), *C = falloc(M * ldc), *R = falloc(M * ldc);
    tl_fill_uniform(A, ra * lda, seed, -2.0f, 2.0f);
    tl_fill_uniform(B, rb * ldb, seed + 1, -1.0f, 1.0f);
    tl_fill_uniform(C, M * ldc, seed + 2, -1.0f, 1.0f);
    memcpy(R, C, (size_t)(M * ldc) * sizeof *C);
    if (dnnl && gf_f32_matmul_dnnl(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) {
        /* refused (a strided operand too big to copy): C untouched, the door then runs OpenBLAS */
        assert_memory_equal(C, R, (size_t)(M * ldc) * sizeof *C);
        return;
    }
    if (!dnnl) gf_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    f32_naive(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, R, ldc);
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < ldc; n++) {
            const int64_t i = m * ldc + n;
            if (n >= N) {
                assert_memory_equal(&C[i], &R[i], sizeof *C);
                continue;
            }
            double s = 0.0;
            for (int64_t k = 0; k < K; k++)
                s += fabs((double)(ta ? A[k * lda + m] : A[m * lda + k]) * (tb ? B[n * ldb + k] : B[k * ldb + n]));
            const double tol = (K + 3) * 0x1p-24 * (fabs(alpha) * s + fabs((double)beta) + 1.0);
            if (!(fabs((double)C[i] - R[i]) <= tol)) /* a NaN fails */
                fail_msg("fp32 matmul (%s) %s%s M %lld N %lld K %lld: C[%lld][%lld] %.9g, reference %.9g (tol %.3g)",
                         dnnl ? "oneDNN" : "the door", ta ? "T" : "N", tb ? "T" : "N", (long long)M, (long long)N,
                         (long long)K, (long long)m, (long long)n, C[i], R[i], tol);
        }
}

/* fp32 matmuls, as the door runs them (OpenBLAS, or oneDNN's fp32 matmul for the shapes it takes) and
 * oneDNN's fp32 matmul itself: every transpose, alpha, beta and leading dimension; shapes over and under
 * the door's GF_F32_DNNL_MIN_MACS, and the skinny ones of a d = 128 model (K or N of 16, M of 4,096). */
static void test_matmul_f32(void **state) {
    (void)state;
    const int64_t shapes[][3] = {{137, 129, 70}, {9, 1130, 104}, {4096, 16, 128}, {128, 128, 4096}, {63, 40, 30}};
    const bool dnnl = !gf_f32_matmul_dnnl_unavailable();
    if (!dnnl) fprintf(stderr, "oneDNN fp32 matmuls unavailable here (%s): the door alone\n", gf_f32_matmul_dnnl_unavailable());
    uint64_t seed = 500;
    for (int t = 0; t < 4; t++)
        for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++)
            for (int d = 0; d <= (int)dnnl; d++) {
                const float alpha = k % 2 ? -1.25f : 1.0f, beta = k % 3 == 0 ? 0.0f : k % 3 == 1 ? 1.0f : 0.25f;
                f32_shape(d, t & 1, t & 2, shapes[k][0], shapes[k][1], shapes[k][2], alpha, beta, seed += 10);
            }
    if (dnnl) {
        /* strided operands (oneDNN 2.6's brgemm takes none; see matmul_dnnl.c): a weight block under 4,096
         * rows (B) is copied, and right; so is a weight gradient's block (C); a strided activation of 4,096
         * rows is refused (the copy would cost as much as the matmul) */
        f32_shape(true, false, true, 4096, 128, 128, 1.0f, 1.0f, 901);   /* B and C strided: copied */
        f32_shape(true, true, false, 128, 128, 4096, 1.0f, 1.0f, 902);   /* A^T B, C strided: copied */
        float *A = falloc(4096 * 130), *B = falloc(128 * 16), *C = falloc(4096 * 16);
        assert_int_equal(gf_f32_matmul_dnnl(false, false, 4096, 16, 128, 1.0f, A, 130, B, 16, 0.0f, C, 16), -1);
        assert_int_equal(gf_f32_matmul_dnnl(false, false, 4096, 16, 128, 1.0f, A, 128, B, 16, 0.0f, C, 16), 0);
    }
    /* the door says which library it sends them to: OpenBLAS unless GF_FP32_MATMUL=onednn asks for oneDNN */
    const char *e = getenv("GF_FP32_MATMUL");
    const bool on = dnnl && e && !strcmp(e, "onednn");
    assert_true(!strncmp(gf_fp32_matmul(), on ? "oneDNN avx512_core" : "OpenBLAS ", on ? 18 : 9));
}

/* A linear layer's forward under fp32-fast: its bias goes into oneDNN's matmul (gf_sgemm_bias_fast) where
 * oneDNN runs, else the bias is broadcast and the door adds the product; either way out = inp W^T + b within
 * fp32's bound (f32_shape's), and the default precision's result the bits of the broadcast and the door. */
static void linear_bias_shape(int64_t N, int64_t IC, int64_t OC, int64_t ldi, uint64_t seed) {
    float *inp = falloc(N * ldi), *w = falloc(OC * IC), *b = falloc(OC), *out = falloc(N * OC), *ref = falloc(N * OC);
    tl_fill_uniform(inp, N * ldi, seed, -2.0f, 2.0f);
    tl_fill_uniform(w, OC * IC, seed + 1, -1.0f, 1.0f);
    tl_fill_uniform(b, OC, seed + 2, -3.0f, 3.0f);
    assert_int_equal(gf_set_matmul_precision(GF_PRECISION_FP32_FAST), 0);
    gf_linear_forward(out, inp, ldi, w, IC, b, N, IC, OC, 0.0f);
    assert_int_equal(gf_set_matmul_precision(GF_PRECISION_FP32), 0);
    for (int64_t n = 0; n < N; n++)
        for (int64_t o = 0; o < OC; o++) ref[n * OC + o] = b[o];
    f32_naive(false, true, N, OC, IC, 1.0f, inp, ldi, w, IC, 1.0f, ref, OC);
    for (int64_t n = 0; n < N; n++)
        for (int64_t o = 0; o < OC; o++) {
            double s = fabs((double)b[o]);
            for (int64_t k = 0; k < IC; k++) s += fabs((double)inp[n * ldi + k] * w[o * IC + k]);
            if (!(fabs((double)out[n * OC + o] - ref[n * OC + o]) <= (IC + 3) * 0x1p-24 * (s + 1.0))) /* a NaN fails */
                fail_msg("fp32-fast linear %lld x %lld -> %lld (ldi %lld): out[%lld][%lld] %.9g, reference %.9g",
                         (long long)N, (long long)IC, (long long)OC, (long long)ldi, (long long)n, (long long)o,
                         out[n * OC + o], ref[n * OC + o]);
        }
}

static void test_linear_bias_fast(void **state) {
    (void)state;
    linear_bias_shape(4096, 128, 96, 128, 950); /* oneDNN with its bias, where it runs */
    linear_bias_shape(512, 128, 384, 128, 960);
    linear_bias_shape(4096, 128, 96, 131, 970); /* a strided input: OpenBLAS, the bias broadcast */
    linear_bias_shape(37, 20, 9, 20, 980);      /* under oneDNN's size: the same */
    if (!gf_f32_matmul_dnnl_unavailable()) {    /* the path the first two took is oneDNN's */
        float *A = falloc(4096 * 128), *B = falloc(96 * 128), *bias = falloc(96), *C = falloc(4096 * 96);
        tl_fill_uniform(bias, 96, 990, -1.0f, 1.0f);
        ffill(A, 4096 * 128, 0.0f), ffill(B, 96 * 128, 0.0f);
        assert_int_equal(gf_set_matmul_precision(GF_PRECISION_FP32_FAST), 0);
        assert_int_equal(gf_sgemm_bias_fast(4096, 96, 128, A, 128, B, 128, bias, C), 0);
        assert_int_equal(gf_set_matmul_precision(GF_PRECISION_FP32), 0);
        assert_int_equal(gf_sgemm_bias_fast(4096, 96, 128, A, 128, B, 128, bias, C), -1); /* fp32: never */
        for (int64_t n = 0; n < 4096; n += 1023) assert_memory_equal(C + n * 96, bias, 96 * sizeof *bias);
    }
}

/* gf_linear_backward_set: dinp overwritten (NaN before), dw and db accumulated; fp32 gives the bits of
 * zeroing and accumulating, fp32-fast one product within fp32's bound of it (an FFN's d_ff gradient). */
static void test_linear_backward_set(void **state) {
    (void)state;
    const int64_t N = 1024, IC = 512, OC = 128;
    float *dout = falloc(N * OC), *inp = falloc(N * IC), *w = falloc(OC * IC);
    tl_fill_uniform(dout, N * OC, 1001, -1.0f, 1.0f);
    tl_fill_uniform(inp, N * IC, 1002, -1.0f, 1.0f);
    tl_fill_uniform(w, OC * IC, 1003, -1.0f, 1.0f);
    float *di[3], *dw[3], *db[3];
    for (int k = 0; k < 3; k++) { /* 0: fp32, 1: fp32-fast, 2: zero + accumulate (the old form) */
        di[k] = falloc(N * IC), dw[k] = falloc(OC * IC), db[k] = falloc(OC);
        ffill(di[k], N * IC, k == 2 ? 0.0f : NAN);
        tl_fill_uniform(dw[k], OC * IC, 1004, -1.0f, 1.0f);
        tl_fill_uniform(db[k], OC, 1005, -1.0f, 1.0f);
        assert_int_equal(gf_set_matmul_precision(k == 1 ? GF_PRECISION_FP32_FAST : GF_PRECISION_FP32), 0);
        if (k < 2) gf_linear_backward_set(di[k], dw[k], IC, db[k], dout, inp, IC, w, IC, N, IC, OC);
        else gf_linear_backward(di[k], IC, dw[k], IC, db[k], dout, inp, IC, w, IC, N, IC, OC);
    }
    assert_int_equal(gf_set_matmul_precision(GF_PRECISION_FP32), 0);
    assert_memory_equal(di[0], di[2], (size_t)(N * IC) * sizeof(float));
    assert_memory_equal(dw[0], dw[2], (size_t)(OC * IC) * sizeof(float));
    assert_memory_equal(db[0], db[2], (size_t)OC * sizeof(float));
    for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < IC; i++) {
            double s = 0.0;
            for (int64_t o = 0; o < OC; o++) s += fabs((double)dout[n * OC + o] * w[o * IC + i]);
            if (!(fabs((double)di[1][n * IC + i] - di[0][n * IC + i]) <= 2 * (OC + 3) * 0x1p-24 * (s + 1.0)))
                fail_msg("linear backward_set fp32-fast: dinp[%lld][%lld] %.9g, fp32 %.9g", (long long)n, (long long)i,
                         di[1][n * IC + i], di[0][n * IC + i]);
        }
    for (int64_t j = 0; j < OC * IC; j++)
        if (!(fabs((double)dw[1][j] - dw[0][j]) <= 1e-4)) fail_msg("linear backward_set fp32-fast: dw[%lld] %.9g, fp32 %.9g", (long long)j, dw[1][j], dw[0][j]);
}

/* The loss's backward through the language-model head (gf_xent_linear_backward): where both products run
 * in bf16 the gradient is rounded as it is made, and dh and dW must be the bits of the two-step form
 * (gf_xent_backward, then gf_linear_backward, whose matmuls round the gradient themselves), with the
 * logits left as they were; under fp32, or a product too small for bf16, it is the two-step form itself.
 * V spans two of the rounding's slices; targets on both sides of the slice edge, and ignored rows. eps: the
 * label smoothing, the same in both forms. */
static void xent_head_case(gf_precision prec, int64_t N, int64_t d, int64_t V, bool want_dh, bool fused, float eps) {
    float *logits = falloc(N * V), *h = falloc(N * d), *W = falloc(V * d), *lse = falloc(N), *loss = falloc(N);
    int32_t *tg = (int32_t *)talloc((size_t)N * sizeof(int32_t));
    tl_fill_uniform(logits, N * V, 1101, -4.0f, 4.0f);
    tl_fill_uniform(h, N * d, 1102, -1.0f, 1.0f);
    tl_fill_uniform(W, V * d, 1103, -1.0f, 1.0f);
    const int32_t pick[] = {0, 1023, 1024, -1, (int32_t)V - 1, 7, -1, 1025};
    for (int64_t n = 0; n < N; n++) tg[n] = pick[n % 8] < V ? pick[n % 8] : (int32_t)(n % V);
    assert_int_equal(gf_set_matmul_precision(prec), 0);
    const float scale = 1.0f / (float)gf_xent_forward(loss, lse, logits, tg, N, V, eps);
    float *dh[2], *dW[2], *z[2];
    for (int k = 0; k < 2; k++) { /* 0: the two-step form, 1: gf_xent_linear_backward */
        dh[k] = falloc(N * d), dW[k] = falloc(V * d), z[k] = fdup(logits, N * V);
        tl_fill_uniform(dh[k], N * d, 1104, -1.0f, 1.0f);
        tl_fill_uniform(dW[k], V * d, 1105, -1.0f, 1.0f);
    }
    gf_xent_backward(z[0], lse, tg, N, V, scale, eps);
    gf_linear_backward(want_dh ? dh[0] : NULL, d, dW[0], d, NULL, z[0], h, d, W, d, N, d, V);
    gf_bf16 *room = gf_sgemm_bf16a_room(N * V); /* what an earlier product left there must not show */
    for (int64_t i = 0; room && i < N * V; i++) room[i] = 0x3f80; /* 1.0 */
    gf_xent_linear_backward(want_dh ? dh[1] : NULL, dW[1], z[1], lse, tg, h, W, N, d, V, scale, eps);
    assert_int_equal(gf_set_matmul_precision(GF_PRECISION_FP32), 0);
    assert_memory_equal(dh[0], dh[1], (size_t)(N * d) * sizeof(float));
    assert_memory_equal(dW[0], dW[1], (size_t)(V * d) * sizeof(float));
    assert_memory_equal(z[1], fused ? logits : z[0], (size_t)(N * V) * sizeof(float));
}

static void test_xent_head_bf16(void **state) {
    (void)state;
    xent_head_case(GF_PRECISION_FP32, 40, 32, 1100, true, false, 0.0f);
    xent_head_case(GF_PRECISION_FP32_FAST, 40, 32, 1100, true, false, 0.0f);
    xent_head_case(GF_PRECISION_FP32, 40, 32, 1100, true, false, 0.1f); /* label smoothing */
    if (!bf16_here()) skip();
    assert_false(gf_sgemm_in_bf16(false, 40, 32, 1100)); /* fp32 in force */
    assert_int_equal(gf_set_matmul_precision(GF_PRECISION_BF16), 0);
    assert_true(gf_sgemm_in_bf16(false, 40, 32, 1100) && !gf_sgemm_in_bf16(false, 8, 16, 1100));
    assert_int_equal(gf_set_matmul_precision(GF_PRECISION_FP32), 0);
    xent_head_case(GF_PRECISION_BF16, 40, 32, 1100, true, true, 0.0f);
    xent_head_case(GF_PRECISION_BF16, 40, 32, 1100, false, true, 0.0f);
    xent_head_case(GF_PRECISION_BF16, 40, 32, 1100, true, true, 0.2f); /* label smoothing, rounded as made */
    xent_head_case(GF_PRECISION_BF16, 37, 40, 2100, true, true, 0.0f); /* rows not a multiple of anything */
    xent_head_case(GF_PRECISION_BF16, 256, 64, 300, true, true, 0.0f); /* V under one slice */
    xent_head_case(GF_PRECISION_BF16, 8, 16, 1100, true, false, 0.0f); /* under GF_BF16_MIN_MACS: fp32 */
}

/* oneDNN matmuls under a storm of signals. oneDNN's own JIT sgemm ("gemm:jit", which its fp32 matmul picks
 * for some shapes: 32768 x 128 x 128 with a sum post-op, a linear layer's forward after its bias) points
 * rsp into a heap buffer while it runs (oneDNN issue 4845, fixed in 3.x; Debian ships 2.6): a signal that
 * lands there writes its frame into the heap, and the process aborts later ("corrupted size vs. prev_size
 * while consolidating"), as a SIGTERM in mid-step once did. The door must not use such an implementation:
 * with a thread sending this process a signal every few microseconds, every product stays right (bit for
 * bit: the same primitive) and the heap whole. */
static volatile sig_atomic_t g_hits;
static _Atomic int g_storm;
static void on_signal(int sig) {
    (void)sig;
    g_hits++;
}
static void *storm(void *arg) {
    (void)arg;
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &s, NULL); /* for the others */
    const struct timespec gap = {0, 5000};
    while (g_storm) {
        kill(getpid(), SIGUSR2);
        nanosleep(&gap, NULL);
    }
    return NULL;
}

static int storm_shape(bool bf16, bool tb, float beta, int64_t wide, int reps) {
    /* wide: B a block of a wider matrix (a gate's half of its weight), for which oneDNN 2.6 offers gemm:jit
     * before brgemm (which takes it through a dense copy) */
    const int64_t M = 32768, N = 128, K = 128, ldb = (tb ? K : N) * wide;
    float *A = falloc(M * K), *B = falloc(K * N * wide), *C0 = falloc(M * N), *C = falloc(M * N), *R = falloc(M * N);
    tl_fill_uniform(A, M * K, 77, -1.0f, 1.0f);
    tl_fill_uniform(B, K * N * wide, 78, -1.0f, 1.0f);
    tl_fill_uniform(C0, M * N, 79, -1.0f, 1.0f);
    for (int r = -1; r < reps; r++) { /* r = -1: the reference */
        float *out = r < 0 ? R : C;
        memcpy(out, C0, (size_t)(M * N) * sizeof *C);
        const int rc = bf16 ? gf_bf16_matmul(false, tb, M, N, K, 1.0f, A, K, B, ldb, beta, out, N)
                            : gf_f32_matmul_dnnl(false, tb, M, N, K, 1.0f, A, K, B, ldb, beta, out, N);
        if (rc && r < 0) return 0; /* a shape oneDNN is not used for (the door runs OpenBLAS) */
        assert_int_equal(rc, 0);
        if (r >= 0) assert_memory_equal(C, R, (size_t)(M * N) * sizeof *C);
        for (int k = 0; k < 64; k++) free(malloc((size_t)(16 + 48 * k))); /* the heap's lists, walked */
        malloc_trim(0);                                                    /* and consolidated */
    }
    return 1;
}

static void test_matmul_signals(void **state) {
    (void)state;
    struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART}, old;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR2, &sa, &old);
    pthread_t t;
    g_storm = 1;
    assert_int_equal(pthread_create(&t, NULL, storm, NULL), 0);
    int ran = 0;
    for (int k = 0; k < 8; k++) {
        const bool tb = k & 1;
        const float beta = k & 2 ? 1.0f : 0.0f;
        const int64_t wide = k & 4 ? 2 : 1;
        if (!gf_f32_matmul_dnnl_unavailable()) ran += storm_shape(false, tb, beta, wide, 6);
        if (!gf_bf16_matmul_unavailable()) ran += storm_shape(true, tb, beta, wide, 6);
    }
    /* every one ran on oneDNN (a strided B through its dense copy) */
    assert_int_equal(ran, 8 * !gf_f32_matmul_dnnl_unavailable() + 8 * !gf_bf16_matmul_unavailable());
    g_storm = 0;
    pthread_join(t, NULL);
    sigaction(SIGUSR2, &old, NULL);
    fprintf(stderr, "%d oneDNN matmul shapes under %d signals: every product and the heap intact\n", ran, (int)g_hits);
}

static void test_names_and_refusal(void **state) {
    (void)state;
    gf_precision p;
    assert_int_equal(gf_precision_parse("bf16", &p), 0);
    assert_int_equal(p, GF_PRECISION_BF16);
    assert_int_equal(gf_precision_parse("fp32", &p), 0);
    assert_int_equal(p, GF_PRECISION_FP32);
    assert_int_equal(gf_precision_parse("fp32-fast", &p), 0);
    assert_int_equal(p, GF_PRECISION_FP32_FAST);
    assert_int_equal(gf_precision_parse("fp16", &p), -1);
    assert_int_equal(gf_precision_parse("fp32-", &p), -1);
    assert_string_equal(gf_precision_name(GF_PRECISION_BF16), "bf16");
    assert_string_equal(gf_precision_name(GF_PRECISION_FP32_FAST), "fp32-fast");
    assert_string_equal(gf_precision_name(GF_PRECISION_FP32), "fp32");
    assert_null(gf_precision_unavailable(GF_PRECISION_FP32));
    assert_null(gf_precision_unavailable(GF_PRECISION_FP32_FAST)); /* runs everywhere (no FMA: the plain forms) */
    /* the fused forms: fp32-fast and bf16; the bias inside oneDNN's fp32 matmul: fp32-fast only (under bf16
     * a linear layer must not run in fp32) */
    const int64_t M = 4096, N = 128, K = 128;
    float *A = falloc(M * K), *B = falloc(N * K), *bias = falloc(N), *C = falloc(M * N);
    tl_fill_uniform(A, M * K, 61, -1.0f, 1.0f), tl_fill_uniform(B, N * K, 62, -1.0f, 1.0f), tl_fill_uniform(bias, N, 63, -1.0f, 1.0f);
    assert_false(gf_fast_numerics());
    assert_int_equal(gf_sgemm_bias_fast(M, N, K, A, K, B, K, bias, C), -1);
    assert_int_equal(gf_set_matmul_precision(GF_PRECISION_FP32_FAST), 0);
    assert_int_equal(gf_matmul_precision(), GF_PRECISION_FP32_FAST);
    assert_true(gf_fast_numerics());
    assert_int_equal(gf_sgemm_bias_fast(M, N, K, A, K, B, K, bias, C), gf_f32_matmul_dnnl_unavailable() ? -1 : 0);
    assert_int_equal(gf_set_matmul_precision(GF_PRECISION_FP32), 0);
    const char *why = gf_precision_unavailable(GF_PRECISION_BF16);
    if (why) { /* refused, with the reason, and fp32 stays */
        assert_int_equal(gf_set_matmul_precision(GF_PRECISION_BF16), -1);
        assert_non_null(strstr(gf_last_error(), why));
        assert_int_equal(gf_matmul_precision(), GF_PRECISION_FP32);
        assert_string_equal(gf_bf16_isa(), "none");
    } else {
        assert_int_equal(gf_set_matmul_precision(GF_PRECISION_BF16), 0);
        assert_int_equal(gf_matmul_precision(), GF_PRECISION_BF16);
        assert_true(gf_fast_numerics());
        assert_int_equal(gf_sgemm_bias_fast(M, N, K, A, K, B, K, bias, C), -1);
        assert_int_equal(gf_set_matmul_precision(GF_PRECISION_FP32), 0);
    }
}

static void test_int8_rows(void **state) {
    (void)state;
    const float w[5] = {0.5f, -1.0f, 0.25f, 0.0f, 0.0039f};
    int8_t q[5];
    float s;
    gf_quant_int8_row(w, 5, q, &s);
    assert_true(s == 1.0f / 127.0f);
    assert_int_equal(q[0], 64); /* 63.5: to even */
    assert_int_equal(q[1], -127);
    assert_int_equal(q[2], 32);   /* 31.75 */
    assert_int_equal(q[3], 0);
    assert_int_equal(q[4], 0);    /* 0.495 */
    const float z[3] = {0, 0, 0};
    gf_quant_int8_row(z, 3, q, &s);
    assert_true(s == 0.0f && q[0] == 0 && q[2] == 0);
}

/* R x C floats as the int8 door keeps them: codes + 128 and a scale per row. */
static void quantize_rows(const float *w, int64_t R, int64_t C, uint8_t *u8, float *scale) {
    int8_t *q = talloc((size_t)C);
    for (int64_t r = 0; r < R; r++) {
        gf_quant_int8_row(w + r * C, C, q, &scale[r]);
        for (int64_t c = 0; c < C; c++) u8[r * C + c] = (uint8_t)(q[c] + 128);
    }
}

static void check_gemv_int8(gf_lowp_kernel k) {
    const int64_t R = 39, C = 300; /* nine blocks of 4 rows and a last block of 3 */
    float *w = falloc(R * C), *x = falloc(C), *y = falloc(R), *yr = falloc(R), *scale = falloc(R);
    uint8_t *u8 = talloc((size_t)(R * C));
    int8_t *qx = talloc((size_t)C);
    tl_fill_uniform(w, R * C, 11, -0.2f, 0.2f);
    tl_fill_uniform(x, C, 12, -3, 3);
    quantize_rows(w, R, C, u8, scale);
    for (int par = 0; par < 2; par++) { /* the plain loop (default threshold), then the parallel one */
        gf_set_parallel_threshold(par ? 0 : 32768);
        for (int64_t cols = 1; cols <= C; cols += cols < 70 ? 1 : 23) /* every tail of the 64-byte loop */
            for (int ab = 0; ab < 3; ab++) {
                const float alpha = ab == 2 ? -0.5f : 1.0f, beta = ab == 0 ? 0.0f : 0.75f;
                tl_fill_uniform(y, R, 13 + cols, -1, 1);
                memcpy(yr, y, (size_t)R * sizeof *y);
                gf_gemv_int8_with(k, u8, C, scale, R, cols, x, alpha, beta, y, qx);
                gf_gemv_int8_naive(u8, C, scale, R, cols, x, alpha, beta, yr, qx);
                if (memcmp(y, yr, (size_t)R * sizeof *y))
                    fail_msg("int8 GEMV (%s), %lld columns (parallel: %d): not the reference's bits", gf_lowp_kernel_name(k, true), (long long)cols, par);
            }
    }
    /* an input whose codes are exact ties (max|x| = 127: x itself is scaled by 1), rounded to even both
     * ways; then with a NaN: both give NaN outputs (not finite numbers that hide it) and the same codes */
    float ties[] = {127.0f, 0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 126.5f, -126.5f, 3.5f, -4.5f, 0.0f, 17.5f};
    const int64_t nt = (int64_t)(sizeof ties / sizeof *ties);
    int8_t fast[16];
    for (int nan = 0; nan < 2; nan++)
        for (int64_t cols = 1; cols <= nt; cols++) {
            if (nan) ties[cols - 1] = NAN;
            gf_gemv_int8_with(k, u8, C, scale, R, cols, ties, 1.0f, 0.0f, y, qx);
            memcpy(fast, qx, (size_t)cols);
            gf_gemv_int8_naive(u8, C, scale, R, cols, ties, 1.0f, 0.0f, yr, qx);
            if (memcmp(fast, qx, (size_t)cols)) fail_msg("int8 input codes of %lld ties (NaN: %d): not the reference's", (long long)cols, nan);
            for (int64_t r = 0; r < R; r++)
                if (nan ? !isnan(y[r]) || !isnan(yr[r]) : memcmp(&y[r], &yr[r], sizeof *y))
                    fail_msg("int8 GEMV of %lld ties (NaN: %d), row %lld: %g, the reference %g", (long long)cols, nan, (long long)r, y[r], yr[r]);
        }
    gf_set_parallel_threshold(32768); /* the default */
}


/* Every int8 kernel this CPU runs (AVX512_VNNI, AVX2), each held to the reference bit for bit; the public
 * name of what runs (gf_weights_kernel) is the chosen kernel's. */
static void test_gemv_int8(void **state) {
    (void)state;
    assert_string_equal(gf_weights_kernel(GF_WEIGHTS_INT8), gf_lowp_kernel_name(gf_int8_kernel(), true));
    assert_string_equal(gf_weights_kernel(GF_WEIGHTS_BF16), gf_lowp_kernel_name(gf_bf16_gemv_kernel(), false));
    if (gf_int8_kernel() == GF_LOWP_REFERENCE) skip();
    for (gf_lowp_kernel k = GF_LOWP_AVX2; k <= gf_int8_kernel(); k++) {
        print_message("int8 kernel %s\n", gf_lowp_kernel_name(k, true));
        check_gemv_int8(k);
    }
}
/* Every bf16 kernel this CPU runs (AVX-512, AVX2), each within the rounding of fp32 sums of the reference. */
static void test_gemv_bf16(void **state) {
    (void)state;
    if (gf_bf16_gemv_kernel() == GF_LOWP_REFERENCE) skip();
    const int64_t R = 19, C = 77;
    float *w = falloc(R * C), *x = falloc(C), *y = falloc(R), *yr = falloc(R);
    gf_bf16 *h = talloc((size_t)(R * C) * sizeof *h);
    tl_fill_uniform(w, R * C, 21, -1, 1);
    tl_fill_uniform(x, C, 22, -1, 1);
    gf_bf16_from_f32_naive(h, w, R, C, C);
    for (gf_lowp_kernel k = GF_LOWP_AVX2; k <= gf_bf16_gemv_kernel(); k++)
        for (int par = 0; par < 2; par++) { /* the plain loop (default threshold), then the parallel one */
            gf_set_parallel_threshold(par ? 0 : 32768);
            for (int64_t cols = 1; cols <= C; cols++) {
                tl_fill_uniform(y, R, 23, -1, 1);
                memcpy(yr, y, (size_t)R * sizeof *y);
                gf_gemv_bf16_with(k, h, C, R, cols, x, 0.5f, 1.0f, y);
                gf_gemv_bf16_naive(h, C, R, cols, x, 0.5f, 1.0f, yr);
                for (int64_t r = 0; r < R; r++)
                    if (!(fabs((double)y[r] - yr[r]) <= (cols + 2) * 0x1p-24 * (0.5 * cols + 2.0)))
                        fail_msg("bf16 GEMV (%s), %lld columns, row %lld: %.9g, the reference %.9g",
                                 gf_lowp_kernel_name(k, false), (long long)cols, (long long)r, y[r], yr[r]);
            }
        }
    gf_set_parallel_threshold(32768); /* the default */
}

/* The door: a one-row matmul on a registered matrix (or a block of it) runs on its copy. */
static void test_door(void **state) {
    (void)state;
    const int64_t R = 40, C = 96;
    float *w = falloc(R * C), *x = falloc(C), *y = falloc(R), *want = falloc(R), *scale = falloc(R);
    uint8_t *u8 = talloc((size_t)(R * C));
    int8_t *qx = talloc((size_t)C);
    tl_fill_uniform(w, R * C, 31, -0.5f, 0.5f);
    tl_fill_uniform(x, C, 32, -1, 1);
    quantize_rows(w, R, C, u8, scale);
    const gf_lowp_mat m = {.kind = GF_WEIGHTS_INT8, .w = w, .rows = R, .cols = C, .u8 = u8, .scale = scale};
    assert_int_equal(gf_lowp_add(&m), 0);
    /* the whole matrix, then rows 8..31 and columns 32..95 (a block, as the gate's second half is read) */
    const int64_t blocks[2][4] = {{0, R, 0, C}, {8, 24, 32, 64}};
    for (int b = 0; b < 2; b++) {
        const int64_t r0 = blocks[b][0], n = blocks[b][1], c0 = blocks[b][2], k = blocks[b][3];
        memset(y, 0, (size_t)R * sizeof *y);
        memset(want, 0, (size_t)R * sizeof *want);
        gf_sgemm(false, true, 1, n, k, 1.0f, x + c0, k, w + r0 * C + c0, C, 0.0f, y, n);
        gf_gemv_int8_naive(u8 + r0 * C + c0, C, scale + r0, n, k, x + c0, 1.0f, 0.0f, want, qx);
        assert_memory_equal(y, want, (size_t)n * sizeof *y);
    }
    /* another row stride is not a block of it: fp32 */
    float *f = falloc(R);
    gf_sgemm(false, true, 1, 4, 48, 1.0f, x, 48, w, 48, 0.0f, y, 4);
    for (int64_t r = 0; r < 4; r++) {
        double s = 0;
        for (int64_t c = 0; c < 48; c++) s += (double)x[c] * w[r * 48 + c];
        f[r] = (float)s;
        assert_true(fabs((double)y[r] - f[r]) < 1e-5);
    }
    gf_lowp_remove(w, w + 1);
    gf_sgemm(false, true, 1, R, C, 1.0f, x, C, w, C, 0.0f, y, R); /* removed: fp32 again */
    gf_sgemm(false, true, 1, R, C, 1.0f, x, C, w, C, 0.0f, want, R);
    assert_memory_equal(y, want, (size_t)R * sizeof *y);
    gf_gemv_int8_naive(u8, C, scale, R, C, x, 1.0f, 0.0f, f, qx);
    assert_memory_not_equal(y, f, (size_t)R * sizeof *y);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_convert, pool_teardown),
        cmocka_unit_test_teardown(test_matmul, pool_teardown),
        cmocka_unit_test_teardown(test_small_stays_fp32, pool_teardown),
        cmocka_unit_test_teardown(test_reuse_operands, pool_teardown),
        cmocka_unit_test_teardown(test_matmul_f32, pool_teardown),
        cmocka_unit_test_teardown(test_linear_bias_fast, pool_teardown),
        cmocka_unit_test_teardown(test_linear_backward_set, pool_teardown),
        cmocka_unit_test_teardown(test_xent_head_bf16, pool_teardown),
        cmocka_unit_test_teardown(test_matmul_signals, pool_teardown),
        cmocka_unit_test_teardown(test_names_and_refusal, pool_teardown),
        cmocka_unit_test(test_int8_rows),
        cmocka_unit_test_teardown(test_gemv_int8, pool_teardown),
        cmocka_unit_test_teardown(test_gemv_bf16, pool_teardown),
        cmocka_unit_test_teardown(test_door, pool_teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    pool_release();
    return rc;
}
