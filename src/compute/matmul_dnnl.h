/* Matmuls through oneDNN's matmul primitive, C = alpha op(A) op(B) + beta C:
 * - bf16: A and B rounded to bfloat16 (compute/bf16.h), products and sums in fp32 (AMX or AVX512_BF16,
 *   whichever oneDNN picks); the door (gf_sgemm, compute/blas.c) sends a matmul here when the matmul
 *   precision is bf16;
 * - fp32: the operands read in place; the door sends the skinny fp32 matmuls here on an AVX-512 CPU
 *   (gf_fp32_matmul in grassflow.h). */
#ifndef GF_CORE_MATMUL_DNNL_H
#define GF_CORE_MATMUL_DNNL_H

#include <stdbool.h>
#include <stdint.h>

#include "compute/bf16.h"

/* NULL when bf16 matmuls can run here; else why not (this build lacks oneDNN, the CPU lacks AVX512_BF16,
 * oneDNN's ISA limit ONEDNN_MAX_CPU_ISA excludes it, ...), as a sentence. */
const char *gf_bf16_matmul_unavailable(void);
/* What oneDNN dispatches to ("avx512_core_amx", "avx512_core_bf16", ...), "none" when unavailable. */
const char *gf_bf16_matmul_isa(void);
/* The kernel oneDNN chose for the last primitive it made ("brg:avx512_core_amx_bf16"), "" before any. */
const char *gf_bf16_matmul_kernel(void);
/* 0, or -1 when this call could not run (memory for the bf16 copies, a shape oneDNN refuses): the caller
 * then computes it in fp32. Sizes as gf_sgemm's; M, N, K > 0. */
int gf_bf16_matmul(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                   int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc);
/* An A the caller rounds to bfloat16 itself, in the pass that computes it (the loss's gradient over the
 * vocabulary, which a separate rounding would read again): gf_bf16_matmul_a_room is room for n bfloat16
 * in the calling thread's A buffer (valid until the thread's next matmul here that copies an A of its own,
 * a bf16 one or a strided fp32 one, or its next call for room),
 * NULL when bf16 matmuls cannot run here or there is no memory; gf_bf16_matmul_a16 is gf_bf16_matmul with
 * that A, dense (op(A) M x K: K x M when transA), 0 or -1 as gf_bf16_matmul (C untouched). */
gf_bf16 *gf_bf16_matmul_a_room(int64_t n);
int gf_bf16_matmul_a16(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const gf_bf16 *A,
                       const float *B, int64_t ldb, float beta, float *C, int64_t ldc);
/* fp32 matmuls through oneDNN's matmul primitive, the operands read in place: NULL when they can run here,
 * else why not; 0, or -1 when a call could not run (the caller then uses the BLAS library): among them
 * every call whose A, B or C is not dense (lda, ldb, ldc other than op()'s widths). */
const char *gf_f32_matmul_dnnl_unavailable(void);
const char *gf_f32_matmul_dnnl_isa(void); /* oneDNN's ISA, "none" when unavailable */
int gf_f32_matmul_dnnl(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                       int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc);
/* The same with bias (N) added to every row of C (NULL: none); a C with a row stride is refused (-1). */
int gf_f32_matmul_dnnl_bias(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                            int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc,
                            const float *bias);
/* While on (for the calling thread), an operand that is the same matrix (address, shape, row stride, format)
 * as the one the previous call copied into the same slot (A or B) is not copied again: the caller promises
 * that nothing wrote it in between. Turning it on or off forgets every copy made before: only copies made
 * while it is on are reused. gf_sgemm_reuse_operands (blas.h) is the door. */
void gf_dnnl_reuse_operands(bool on);
/* The reference: both operands rounded with gf_bf16_from_f32_ref, then plain loops in double (tests). */
void gf_bf16_matmul_naive(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                          int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc);

#endif
