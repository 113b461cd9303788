/* The one door to BLAS: row-major sgemm with 64-bit sizes, checked against BLAS's 32-bit ints. */
#ifndef GF_CORE_BLAS_H
#define GF_CORE_BLAS_H

#include <stdbool.h>
#include <stdint.h>

#include "compute/bf16.h"
#include "grassflow_plugin.h" /* gf_sgemm, gf_blas_kernel, gf_blas_threads, gf_blas_flops(_reset): public (Utilities) */

/* The test hook GRASSFLOW_TEST_CPU_LACKS=avx512f,avx512vnni,...: whether it names feature `name` (GCC's
 * __builtin_cpu_supports spelling), which every kernel choice then takes as absent, so that a machine that
 * has it runs and tests the path of one that does not (the int8 and bf16 one-row kernels, OpenBLAS's core). */
bool gf_cpu_hidden_by_test(const char *name);
/* BLAS's thread count (gf_set_threads sets OpenMP's and this). */
void gf_blas_set_threads(int n);
/* Under an address-space limit (ulimit -v), cap the threads to what the BLAS library's per-thread buffers
 * leave room for, before its first call (it would otherwise retry a failed allocation forever); fails
 * with the reason when not even one thread fits. Once per process; gf_model_create calls it. */
int gf_blas_fit_address_limit(void);
/* gf_model_create's check of OpenBLAS's kernel: -1 (gf_last_error: what to set) when it is one this CPU
 * cannot run (a SIGILL at the first matmul, gf_blas_core_check); else 0, after a note (once per process)
 * saying what to set when OpenBLAS runs its generic kernel on a CPU with AVX2 or AVX-512 and nobody chose a
 * core type. */
int gf_blas_check_kernel(void);
/* fp32-fast only: C (M, N) = A (M, K) B^T + bias (N) on each row in one oneDNN call (C dense), where the
 * fp32-fast matmuls run on oneDNN; 0, or -1 when it did not run (the caller adds the bias and calls gf_sgemm). */
int gf_sgemm_bias_fast(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
                       const float *bias, float *C);
/* Between gf_sgemm_reuse_operands(true) and (false), on the calling thread: where matmuls copy their
 * operands (bf16 rounding, a strided operand made dense for oneDNN), an operand that is the same matrix
 * (address, shape, row stride) as the last one copied into the same slot (A or B) inside the span is taken
 * as unchanged and its copy used again. The caller promises that nothing writes it in between. The bits
 * are those of copying it again. Spans do not nest: (true) and (false) each forget every copy. */
void gf_sgemm_reuse_operands(bool on);
/* Whether gf_sgemm runs this product in bf16: the precision in force is bf16, the product is large enough
 * (GF_BF16_MIN_MACS), and it is not one row of an untransposed A (which the door runs as a matrix-vector
 * product). */
bool gf_sgemm_in_bf16(bool transA, int64_t M, int64_t N, int64_t K);
/* For a caller that rounds a matmul's A to bfloat16 in the pass that computes it (the loss's gradient over
 * the vocabulary, which rounding it apart would read again):
 * - gf_sgemm_bf16a_room: room for n bfloat16, the calling thread's, valid until its next oneDNN matmul that
 *   copies an A of its own (a bf16 one, or a strided fp32 one) or its next call for room; NULL when bf16
 *   matmuls cannot run here or there is no memory;
 * - gf_sgemm_bf16a: C = alpha op(A) op(B) + beta C with that A, dense (K x M when transA); 0, or -1 when
 *   gf_sgemm would not run this product in bf16 or it could not run, and then C is untouched. */
gf_bf16 *gf_sgemm_bf16a_room(int64_t n);
int gf_sgemm_bf16a(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const gf_bf16 *A,
                   const float *B, int64_t ldb, float beta, float *C, int64_t ldc);
/* The precision in force is GF_PRECISION_FP32_FAST or GF_PRECISION_BF16: the ops outside the matmuls take
 * their fused, reassociated fp32 forms (fp32-fast's; in bf16 they would otherwise hold its matmuls back, and
 * their rounding is far below bfloat16's). fp32 keeps the exact forms. */
bool gf_fast_numerics(void);

#endif
