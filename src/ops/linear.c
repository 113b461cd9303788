#include "compute/parallel.h"
#include "compute/blas.h"
#include "ops/ops.h"

void gf_linear_forward(float *out, const float *inp, int64_t ldi, const float *w, int64_t ldw,
                       const float *b, int64_t N, int64_t IC, int64_t OC, float beta) {
    if (b && beta == 0.0f && gf_sgemm_bias_fast(N, OC, IC, inp, ldi, w, ldw, b, out) == 0) return; /* fp32-fast */
    if (b) {
        if (beta == 0.0f) {
            GF_PAR_FOR(N * OC > GF_PAR_MIN, for (int64_t n = 0; n < N; n++) for (int64_t o = 0; o < OC; o++)
                                                 out[n * OC + o] = b[o];);
        } else {
            GF_PAR_FOR(N * OC > GF_PAR_MIN, for (int64_t n = 0; n < N; n++) for (int64_t o = 0; o < OC; o++)
                                                 out[n * OC + o] += b[o];);
        }
        beta = 1.0f;
    }
    gf_sgemm(false, true, N, OC, IC, 1.0f, inp, ldi, w, ldw, beta, out, OC);
}

/* dinp = dout w + beta dinp, dw += dout^T inp, db += dout's column sums */
static void backward(float *dinp, int64_t lddi, float beta, float *dw, int64_t lddw, float *db, const float *dout,
                     const float *inp, int64_t ldi, const float *w, int64_t ldw, int64_t N, int64_t IC, int64_t OC) {
    gf_sgemm_reuse_operands(true); /* dout is A of both products: rounded to bf16 once */
    if (dinp) gf_sgemm(false, false, N, IC, OC, 1.0f, dout, OC, w, ldw, beta, dinp, lddi);
    if (dw) gf_sgemm(true, false, OC, IC, N, 1.0f, dout, OC, inp, ldi, 1.0f, dw, lddw);
    gf_sgemm_reuse_operands(false);
    if (db) gf_colsum_acc(db, dout, OC, N, OC);
}

void gf_linear_backward(float *dinp, int64_t lddi, float *dw, int64_t lddw, float *db, const float *dout,
                        const float *inp, int64_t ldi, const float *w, int64_t ldw, int64_t N, int64_t IC,
                        int64_t OC) {
    backward(dinp, lddi, 1.0f, dw, lddw, db, dout, inp, ldi, w, ldw, N, IC, OC);
}

void gf_linear_backward_set(float *dinp, float *dw, int64_t lddw, float *db, const float *dout, const float *inp,
                            int64_t ldi, const float *w, int64_t ldw, int64_t N, int64_t IC, int64_t OC) {
    const float beta = gf_fast_numerics() ? 0.0f : 1.0f; /* the default: zeroed and summed onto, its bits */
    if (beta != 0.0f) gf_zero(dinp, N * IC);
    backward(dinp, IC, beta, dw, lddw, db, dout, inp, ldi, w, ldw, N, IC, OC);
}
