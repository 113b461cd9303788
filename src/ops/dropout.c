#include "core/parallel.h"
#include "core/rng.h"
#include "ops/ops.h"

bool gf_dropout_keep(uint64_t key, int64_t i, float p) { return gf_uniform(key, (uint64_t)i) >= p; }

void gf_dropout_forward(float *out, const float *inp, int64_t n, float p, uint64_t key) {
    gf_dropout_forward_at(out, inp, n, p, key, 0);
}

void gf_dropout_backward(float *dinp, const float *dout, int64_t n, float p, uint64_t key) {
    gf_dropout_backward_at(dinp, dout, n, p, key, 0);
}

/* Element i's mask is that of counter base + i: a micro-batch that starts at the step's example e0 passes
 * base = e0 * (its elements per example), so the masks of an example do not depend on which micro-batch
 * or rank computed it. */
void gf_dropout_forward_at(float *out, const float *inp, int64_t n, float p, uint64_t key, int64_t base) {
    if (p <= 0.0f) {
        if (out != inp) gf_copy(out, inp, n);
        return;
    }
    const float scale = 1.0f / (1.0f - p);
#pragma omp parallel for schedule(static) if (n > GF_PAR_MIN)
    for (int64_t i = 0; i < n; i++) out[i] = gf_dropout_keep(key, base + i, p) ? inp[i] * scale : 0.0f;
}

void gf_dropout_backward_at(float *dinp, const float *dout, int64_t n, float p, uint64_t key, int64_t base) {
    if (p <= 0.0f) {
        gf_acc(dinp, dout, n);
        return;
    }
    const float scale = 1.0f / (1.0f - p);
#pragma omp parallel for schedule(static) if (n > GF_PAR_MIN)
    for (int64_t i = 0; i < n; i++)
        if (gf_dropout_keep(key, base + i, p)) dinp[i] += dout[i] * scale;
}
