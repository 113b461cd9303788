/* The one door to BLAS: row-major sgemm with 64-bit sizes, checked against BLAS's 32-bit ints. */
#ifndef GF_CORE_BLAS_H
#define GF_CORE_BLAS_H

#include <stdbool.h>
#include <stdint.h>

/* C (M,N) = alpha * op(A) op(B) + beta * C, row-major. op(A) is (M,K), op(B) is (K,N). */
void gf_sgemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
              int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc);

/* Name of the BLAS kernel in use (OpenBLAS core name) and its thread count. */
const char *gf_blas_kernel(void);
int gf_blas_threads(void);
void gf_blas_set_threads(int n);
/* Under an address-space limit (ulimit -v), cap the threads to what the BLAS library's per-thread buffers
 * leave room for, before its first call (it would otherwise retry a failed allocation forever); fails
 * with the reason when not even one thread fits. Once per process; gf_model_create calls it. */
int gf_blas_fit_address_limit(void);
/* Matmul FLOPs (2 M N K per sgemm) issued since the last reset. */
uint64_t gf_blas_flops(void);
void gf_blas_flops_reset(void);

#endif
