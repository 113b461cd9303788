/* fp32 matrix-vector products for one row (streaming inference), whose bits do not depend on the thread
 * count: each output is one thread's sum, always in the same order. The stream may then pick its threads by
 * how fast they run (src/infer/stream.c) and still give the same tokens for a seed. Each has its naive
 * reference beside it (tests/unit/test_ops.c holds one to the other). */
#ifndef GF_CORE_GEMV_H
#define GF_CORE_GEMV_H

#include <stdint.h>

/* c[n] = alpha * sum_k B[n * ldb + k] a[k] + beta c[n] for n < N (c is not read when beta is 0). */
void gf_gemv_rows(const float *B, int64_t ldb, int64_t N, int64_t K, const float *a, float alpha, float beta,
                  float *c);
/* c[n] = alpha * sum_k B[k * ldb + n] a[k] + beta c[n] for n < N: the product with B's transpose. */
void gf_gemv_cols(const float *B, int64_t ldb, int64_t N, int64_t K, const float *a, float alpha, float beta,
                  float *c);
/* The references: plain loops, each output summed in index order. */
void gf_gemv_rows_naive(const float *B, int64_t ldb, int64_t N, int64_t K, const float *a, float alpha, float beta,
                        float *c);
void gf_gemv_cols_naive(const float *B, int64_t ldb, int64_t N, int64_t K, const float *a, float alpha, float beta,
                        float *c);

#endif
