#include "core/blas.h"

#include <cblas.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

/* OpenBLAS extensions (declared in its cblas.h on Debian; repeated here for other cblas headers). */
char *openblas_get_corename(void);
int openblas_get_num_threads(void);

static int blas_int(int64_t v, const char *what) {
    if (v < 0 || v > INT_MAX) {
        /* A programming error (sizes are validated long before): fail loudly, never compute garbage. */
        fprintf(stderr, "grassflow: internal error: matmul %s = %lld does not fit BLAS's int\n", what,
                (long long)v);
        abort();
    }
    return (int)v;
}

void gf_sgemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
              int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    if (M == 0 || N == 0) return;
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
                blas_int(M, "M"), blas_int(N, "N"), blas_int(K, "K"), alpha, A, blas_int(lda, "lda"), B,
                blas_int(ldb, "ldb"), beta, C, blas_int(ldc, "ldc"));
}

const char *gf_blas_kernel(void) { return openblas_get_corename(); }
int gf_blas_threads(void) { return openblas_get_num_threads(); }
