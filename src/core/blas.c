#include "core/blas.h"

#include <cblas.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

/* OpenBLAS extensions (declared in its cblas.h on Debian; repeated here for other cblas headers). */
char *openblas_get_corename(void);
int openblas_get_num_threads(void);
void openblas_set_num_threads(int);

static int blas_int(int64_t v, const char *what) {
    if (v < 0 || v > INT_MAX) {
        /* A programming error (sizes are validated long before): fail loudly, never compute garbage. */
        fprintf(stderr, "grassflow: internal error: matmul %s = %lld does not fit BLAS's int\n", what,
                (long long)v);
        abort();
    }
    return (int)v;
}

/* Matmul FLOPs issued so far (2 M N K per call), for utilisation reports. Relaxed atomics: cheap, and
 * calls from parallel regions count too. */
static _Atomic uint64_t g_flops;

uint64_t gf_blas_flops(void) { return g_flops; }
void gf_blas_flops_reset(void) { g_flops = 0; }

void gf_blas_set_threads(int n) { openblas_set_num_threads(n); }

void gf_sgemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
              int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    if (M == 0 || N == 0) return;
    atomic_fetch_add_explicit(&g_flops, (uint64_t)(2 * M * N * K), memory_order_relaxed);
    if (M == 1 && !transA && K > 0) {
        /* one row (streaming inference): a matrix-vector product. OpenBLAS sends a 1-row sgemm to its
         * single-threaded small-matrix kernel with a packing copy, 3-4x slower than its threaded sgemv. */
        if (transB) /* c (N) = alpha B (N,K) a + beta c */
            cblas_sgemv(CblasRowMajor, CblasNoTrans, blas_int(N, "N"), blas_int(K, "K"), alpha, B,
                        blas_int(ldb, "ldb"), A, 1, beta, C, 1);
        else /* c (N) = alpha B^T a + beta c, B (K,N) */
            cblas_sgemv(CblasRowMajor, CblasTrans, blas_int(K, "K"), blas_int(N, "N"), alpha, B,
                        blas_int(ldb, "ldb"), A, 1, beta, C, 1);
        return;
    }
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
                blas_int(M, "M"), blas_int(N, "N"), blas_int(K, "K"), alpha, A, blas_int(lda, "lda"), B,
                blas_int(ldb, "ldb"), beta, C, blas_int(ldc, "ldc"));
}

const char *gf_blas_kernel(void) { return openblas_get_corename(); }
int gf_blas_threads(void) { return openblas_get_num_threads(); }
