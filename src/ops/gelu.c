#include <math.h>

#include "core/fastmath.h"
#include "core/parallel.h"
#include "ops/ops.h"

/* The loops go through GF_PAR_FOR_SIMD (core/parallel.h), whose serial copy stays `omp simd`: a short
 * (one token's) row run scalar is several times slower. */

#define GF_SQRT_2_OVER_PI 0.7978845608028654f
#define GF_INV_SQRT_2 0.7071067811865476f
#define GF_INV_SQRT_2PI 0.3989422804014327f

void gf_gelu_forward(float *out, const float *inp, int64_t n, gf_gelu_kind kind) {
    if (kind == GF_GELU_TANH) {
        GF_PAR_FOR_SIMD(n > GF_PAR_MIN, for (int64_t i = 0; i < n; i++) {
            float x = inp[i];
            out[i] = 0.5f * x * (1.0f + gf_tanh_fast(GF_SQRT_2_OVER_PI * (x + 0.044715f * x * x * x)));
        });
    } else {
        GF_PAR_FOR_SIMD(n > GF_PAR_MIN, for (int64_t i = 0; i < n; i++) {
            float x = inp[i];
            out[i] = 0.5f * x * (1.0f + gf_erf_fast(x * GF_INV_SQRT_2));
        });
    }
}

void gf_gelu_backward(float *dinp, const float *inp, const float *dout, int64_t n, gf_gelu_kind kind) {
    const int overwrite = dinp == dout;
    if (kind == GF_GELU_TANH) {
        GF_PAR_FOR_SIMD(n > GF_PAR_MIN, for (int64_t i = 0; i < n; i++) {
            float x = inp[i];
            float u = GF_SQRT_2_OVER_PI * (x + 0.044715f * x * x * x);
            float th = gf_tanh_fast(u);
            float du = GF_SQRT_2_OVER_PI * (1.0f + 3.0f * 0.044715f * x * x);
            float grad = 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du;
            dinp[i] = (overwrite ? 0.0f : dinp[i]) + grad * dout[i];
        });
    } else {
        GF_PAR_FOR_SIMD(n > GF_PAR_MIN, for (int64_t i = 0; i < n; i++) {
            float x = inp[i];
            float grad = 0.5f * (1.0f + gf_erf_fast(x * GF_INV_SQRT_2)) + x * GF_INV_SQRT_2PI * gf_exp_fast(-0.5f * x * x);
            dinp[i] = (overwrite ? 0.0f : dinp[i]) + grad * dout[i];
        });
    }
}

/* The kept term: erf(x / sqrt 2), or tanh(sqrt(2/pi) (x + 0.044715 x^3)); each expression as above, so
 * the outputs and gradients are those of gf_gelu_forward and gf_gelu_backward to the bit. */
void gf_gelu_forward_keep(float *out, float *keep, const float *inp, int64_t n, gf_gelu_kind kind) {
    if (kind == GF_GELU_TANH) {
        GF_PAR_FOR_SIMD(n > GF_PAR_MIN, for (int64_t i = 0; i < n; i++) {
            float x = inp[i];
            float th = gf_tanh_fast(GF_SQRT_2_OVER_PI * (x + 0.044715f * x * x * x));
            keep[i] = th;
            out[i] = 0.5f * x * (1.0f + th);
        });
    } else {
        GF_PAR_FOR_SIMD(n > GF_PAR_MIN, for (int64_t i = 0; i < n; i++) {
            float x = inp[i], e = gf_erf_fast(x * GF_INV_SQRT_2);
            keep[i] = e;
            out[i] = 0.5f * x * (1.0f + e);
        });
    }
}

void gf_gelu_backward_kept(float *dinp, const float *inp, const float *keep, const float *dout, int64_t n,
                           gf_gelu_kind kind) {
    const int overwrite = dinp == dout;
    if (kind == GF_GELU_TANH) {
        GF_PAR_FOR_SIMD(n > GF_PAR_MIN, for (int64_t i = 0; i < n; i++) {
            float x = inp[i], th = keep[i];
            float du = GF_SQRT_2_OVER_PI * (1.0f + 3.0f * 0.044715f * x * x);
            float grad = 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du;
            dinp[i] = (overwrite ? 0.0f : dinp[i]) + grad * dout[i];
        });
    } else {
        GF_PAR_FOR_SIMD(n > GF_PAR_MIN, for (int64_t i = 0; i < n; i++) {
            float x = inp[i];
            float grad = 0.5f * (1.0f + keep[i]) + x * GF_INV_SQRT_2PI * gf_exp_fast(-0.5f * x * x);
            dinp[i] = (overwrite ? 0.0f : dinp[i]) + grad * dout[i];
        });
    }
}
