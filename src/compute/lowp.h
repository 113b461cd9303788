/* Low-precision copies of weight matrices, found by the door (gf_sgemm) from the fp32 matrix a one-row
 * matmul reads: a model whose weights were made int8 or bf16 (gf_model_set_weights) registers each matrix
 * here, and every batch-1 matmul on it (generation, streaming evaluation) runs on the copy
 * (compute/quant.h), including one on a block of its rows or columns (a view with the matrix's row stride).
 * Register and remove while no matmul runs (model load and free). */
#ifndef GF_CORE_LOWP_H
#define GF_CORE_LOWP_H

#include <stdbool.h>
#include <stdint.h>

#include "compute/bf16.h"

typedef struct gf_lowp_mat {
    int kind;              /* GF_WEIGHTS_INT8 or GF_WEIGHTS_BF16 */
    const float *w;        /* the fp32 matrix (rows x cols, row stride cols) the copy stands for */
    int64_t rows, cols;
    const uint8_t *u8;     /* int8: the codes + 128, rows x cols */
    const float *scale;    /* int8: a scale per row */
    const gf_bf16 *h;      /* bf16: rows x cols */
} gf_lowp_mat;

/* Largest column count of an int8 matrix (its int32 sums stay exact). */
#define GF_LOWP_MAX_COLS 65536

/* 0, or -1 (gf_last_error) when the table is full or m is malformed. */
int gf_lowp_add(const gf_lowp_mat *m);
/* Forget every copy whose fp32 matrix starts in [lo, hi). */
void gf_lowp_remove(const float *lo, const float *hi);
/* C (N) = alpha B a + beta C for the one-row matmul of gf_sgemm with B (N, K) row-major at B with row stride
 * ldb, when B is a registered matrix or a block of one: true if done here. */
bool gf_lowp_gemv(const float *B, int64_t ldb, int64_t N, int64_t K, const float *a, float alpha, float beta,
                  float *C);

#endif
