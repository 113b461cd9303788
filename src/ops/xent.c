#include <math.h>

#include "core/fastmath.h"
#include "core/parallel.h"
#include "ops/ops.h"

/* log sum_v exp(z[v]) of one row z (V), shifted by its maximum: grassflow's one log-sum-exp (the loss of
 * the forward pass and gf_log_softmax_nll, so the batched and the streamed evaluation agree). */
static inline float row_lse(const float *z, int64_t V) {
    float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
    for (int64_t v = 0; v < V; v++) mx = z[v] > mx ? z[v] : mx;
    double s = 0.0;
#pragma omp simd reduction(+ : s)
    for (int64_t v = 0; v < V; v++) s += gf_exp_fast(z[v] - mx);
    return mx + (float)log(s);
}

/* logits (V), 0 <= target < V */
float gf_log_softmax_nll(const float *logits, int64_t V, int32_t target) {
    return row_lse(logits, V) - logits[target];
}

int64_t gf_xent_forward(float *losses, float *lse, const float *logits, const int32_t *targets, int64_t N,
                        int64_t V) {
    int64_t counted = 0;
#pragma omp parallel for schedule(static) reduction(+ : counted) if (N * V > GF_PAR_MIN)
    for (int64_t n = 0; n < N; n++) {
        const float *z = logits + n * V;
        const float l = row_lse(z, V);
        lse[n] = l;
        if (targets[n] >= 0) {
            losses[n] = l - z[targets[n]];
            counted++;
        } else {
            losses[n] = 0.0f;
        }
    }
    return counted;
}

void gf_xent_backward(float *logits, const float *lse, const int32_t *targets, int64_t N, int64_t V,
                      float scale) {
#pragma omp parallel for schedule(static) if (N * V > GF_PAR_MIN)
    for (int64_t n = 0; n < N; n++) {
        float *z = logits + n * V;
        if (targets[n] < 0) {
            for (int64_t v = 0; v < V; v++) z[v] = 0.0f;
            continue;
        }
        float l = lse[n];
#pragma omp simd
        for (int64_t v = 0; v < V; v++) z[v] = scale * gf_exp_fast(z[v] - l);
        z[targets[n]] -= scale;
    }
}
