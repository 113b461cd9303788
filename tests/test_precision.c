/* bf16 matmuls (src/core/bf16.c, src/core/matmul_bf16.c, the door in src/core/blas.c):
 * - the fast float -> bfloat16 conversion equals the scalar reference bit for bit (ties, carries into the
 *   exponent, overflow to infinity, denormals, NaNs, and a million random bit patterns);
 * - gf_sgemm in bf16 equals the naive bf16 reference (both operands rounded, sums in double) within the
 *   rounding of fp32 sums, for every transpose, alpha, beta and leading dimension, and leaves the rest of C;
 * - it is within the bound bfloat16's format gives of the exact product of the fp32 operands
 *   (|error| <= (2u + u^2) sum |a||b| plus the fp32 sums' own, u = 2^-8), and differs from fp32 sgemm
 *   (so the bf16 path ran);
 * - a matmul of one row or under GF_BF16_MIN_MACS multiply-adds stays fp32 bit for bit;
 * - the precision's names, and the refusal (with the reason) where bf16 cannot run.
 * Where this CPU or build cannot run bf16, the tests that need it are skipped, saying so. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "testlib.h"

#include "core/bf16.h"
#include "core/matmul_bf16.h"
#include "core/rng.h"

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
            if (fabs((double)C[i] - R[i]) > tol_ref)
                fail_msg("bf16 matmul %s%s M %lld N %lld K %lld: C[%lld][%lld] %.9g, reference %.9g (tol %.3g)",
                         ta ? "T" : "N", tb ? "T" : "N", (long long)M, (long long)N, (long long)K, (long long)m,
                         (long long)n, C[i], R[i], tol_ref);
            max_vs_fp32 = fmax(max_vs_fp32, fabs((double)C[i] - F[i]));
            /* against the exact product of the fp32 operands: bfloat16's bound */
            const double tol_fmt = (2 * u + u * u) * fabs(alpha) * s_exact + 2 * tol_ref;
            if (fabs((double)C[i] - (double)F[i]) > tol_fmt + (K + 3) * u32 * (fabs(alpha) * s_exact + c0 + 1.0))
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
        one_shape(ta, tb, 37, 29, 70, 1.0f, 0.0f, seed += 10);
        one_shape(ta, tb, 64, 48, 33, 0.5f, 1.0f, seed += 10);
        one_shape(ta, tb, 5, 130, 64, -1.25f, 0.25f, seed += 10);
    }
    assert_non_null(strstr(gf_bf16_isa(), "avx512_core"));
    assert_true(gf_bf16_kernel()[0] != '\0');
}

/* One row, or fewer multiply-adds than GF_BF16_MIN_MACS: fp32 sgemm, bit for bit. */
static void test_small_stays_fp32(void **state) {
    (void)state;
    if (!bf16_here()) skip();
    const int64_t shapes[][3] = {{1, 300, 200}, {8, 8, 8}, {15, 16, 16}};
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

static void test_names_and_refusal(void **state) {
    (void)state;
    gf_precision p;
    assert_int_equal(gf_precision_parse("bf16", &p), 0);
    assert_int_equal(p, GF_PRECISION_BF16);
    assert_int_equal(gf_precision_parse("fp32", &p), 0);
    assert_int_equal(p, GF_PRECISION_FP32);
    assert_int_equal(gf_precision_parse("fp16", &p), -1);
    assert_string_equal(gf_precision_name(GF_PRECISION_BF16), "bf16");
    assert_null(gf_precision_unavailable(GF_PRECISION_FP32));
    const char *why = gf_precision_unavailable(GF_PRECISION_BF16);
    if (why) { /* refused, with the reason, and fp32 stays */
        assert_int_equal(gf_set_matmul_precision(GF_PRECISION_BF16), -1);
        assert_non_null(strstr(gf_last_error(), why));
        assert_int_equal(gf_matmul_precision(), GF_PRECISION_FP32);
        assert_string_equal(gf_bf16_isa(), "none");
    } else {
        assert_int_equal(gf_set_matmul_precision(GF_PRECISION_BF16), 0);
        assert_int_equal(gf_matmul_precision(), GF_PRECISION_BF16);
        assert_int_equal(gf_set_matmul_precision(GF_PRECISION_FP32), 0);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_convert, pool_teardown),
        cmocka_unit_test_teardown(test_matmul, pool_teardown),
        cmocka_unit_test_teardown(test_small_stays_fp32, pool_teardown),
        cmocka_unit_test(test_names_and_refusal),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    pool_release();
    return rc;
}
