#include "core/parallel.h"
#include "core/rng.h"
#include "ops/ops.h"

bool gf_dropout_keep(uint64_t key, int64_t i, float p) { return gf_uniform(key, (uint64_t)i) >= p; }

void gf_dropout_forward(float *out, const float *inp, int64_t n, float p, uint64_t key) {
    if (p <= 0.0f) {
        if (out != inp) gf_copy(out, inp, n);
        return;
    }
    const float scale = 1.0f / (1.0f - p);
#pragma omp parallel for schedule(static) if (n > GF_PAR_MIN)
    for (int64_t i = 0; i < n; i++) out[i] = gf_dropout_keep(key, i, p) ? inp[i] * scale : 0.0f;
}

void gf_dropout_backward(float *dinp, const float *dout, int64_t n, float p, uint64_t key) {
    if (p <= 0.0f) {
        gf_acc(dinp, dout, n);
        return;
    }
    const float scale = 1.0f / (1.0f - p);
#pragma omp parallel for schedule(static) if (n > GF_PAR_MIN)
    for (int64_t i = 0; i < n; i++)
        if (gf_dropout_keep(key, i, p)) dinp[i] += dout[i] * scale;
}
