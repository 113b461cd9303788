#include "compute/parallel.h"
#include "base/rng.h"
#include "ops/ops.h"

bool gf_dropout_keep(uint64_t key, int64_t i, float p) { return gf_uniform(key, (uint64_t)i) >= p; }

void gf_dropout_forward(float *out, const float *inp, int64_t n, float p, uint64_t key) {
    gf_dropout_forward_at(out, inp, n, p, key, 0, n, n);
}

void gf_dropout_backward(float *dinp, const float *dout, int64_t n, float p, uint64_t key) {
    gf_dropout_backward_at(dinp, dout, n, p, key, 0, n, n);
}

/* Element i of row r (rows of row_len elements) gets the mask of counter base + r row_stride + (i mod
 * row_len): an example's masks then depend on the example's place in its step (base) and on each element's
 * place in the example (the stride is the longest an example can be), not on the batch, its padding or the
 * rank that computed it. row_len = row_stride = n with base 0 is the plain counter i. */
void gf_dropout_forward_at(float *out, const float *inp, int64_t n, float p, uint64_t key, int64_t base,
                           int64_t row_len, int64_t row_stride) {
    if (p <= 0.0f) {
        if (out != inp) gf_copy(out, inp, n);
        return;
    }
    if (n <= 0 || row_len <= 0) return;
    const float scale = 1.0f / (1.0f - p);
    const int64_t rows = n / row_len;
#pragma omp parallel for collapse(2) schedule(static) if (n > GF_PAR_MIN)
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < row_len; j++) {
            const int64_t i = r * row_len + j;
            out[i] = gf_dropout_keep(key, base + r * row_stride + j, p) ? inp[i] * scale : 0.0f;
        }
}

void gf_dropout_backward_at(float *dinp, const float *dout, int64_t n, float p, uint64_t key, int64_t base,
                            int64_t row_len, int64_t row_stride) {
    if (p <= 0.0f) {
        gf_acc(dinp, dout, n);
        return;
    }
    if (n <= 0 || row_len <= 0) return;
    const float scale = 1.0f / (1.0f - p);
    const int64_t rows = n / row_len;
#pragma omp parallel for collapse(2) schedule(static) if (n > GF_PAR_MIN)
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < row_len; j++) {
            const int64_t i = r * row_len + j;
            if (gf_dropout_keep(key, base + r * row_stride + j, p)) dinp[i] += dout[i] * scale;
        }
}
