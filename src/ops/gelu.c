#include <math.h>

#include "compute/blas.h"
#include "compute/fastmath.h"
#include "compute/parallel.h"
#include "ops/ops.h"

/* The loops go through GF_PAR_FOR_SIMD (compute/parallel.h), whose serial copy stays `omp simd`: a short
 * (one token's) row run scalar is several times slower. Each loop is written once, over the exp, erf and
 * tanh it is given: the default values (the _v set of compute/fastmath.h: no sum here, so it vectorises on
 * every CPU with the bits of the default set), or under --precision fp32-fast the _fma set, whose
 * polynomials take half the instructions; and with or without the kept term, as separate loops (a test
 * inside the loop would have the vector code compute the erf anyway). */

#define GF_SQRT_2_OVER_PI 0.7978845608028654f
#define GF_INV_SQRT_2 0.7071067811865476f
#define GF_INV_SQRT_2PI 0.3989422804014327f

/* out = GELU(inp), with its erf or tanh term t; then KEEP (keep[i] = t, or nothing) */
#define GELU_FORWARD(ERF, TANH, KEEP)                                                                        \
    do {                                                                                                     \
        if (kind == GF_GELU_TANH) {                                                                          \
            GF_PAR_FOR_SIMD(n > GF_PAR_MIN, for (int64_t i = 0; i < n; i++) {                                \
                float x = inp[i], t = TANH(GF_SQRT_2_OVER_PI * (x + 0.044715f * x * x * x));                 \
                KEEP;                                                                                        \
                out[i] = 0.5f * x * (1.0f + t);                                                              \
            });                                                                                              \
        } else {                                                                                             \
            GF_PAR_FOR_SIMD(n > GF_PAR_MIN, for (int64_t i = 0; i < n; i++) {                                \
                float x = inp[i], t = ERF(x * GF_INV_SQRT_2);                                                \
                KEEP;                                                                                        \
                out[i] = 0.5f * x * (1.0f + t);                                                              \
            });                                                                                              \
        }                                                                                                    \
    } while (0)

/* dinp (+)= dout * GELU'(inp), its tanh term TH(x) or erf term E(x) given as expressions */
#define GELU_BACKWARD(EXP, TH, E)                                                                            \
    do {                                                                                                     \
        const int overwrite = dinp == dout;                                                                  \
        if (kind == GF_GELU_TANH) {                                                                          \
            GF_PAR_FOR_SIMD(n > GF_PAR_MIN, for (int64_t i = 0; i < n; i++) {                                \
                float x = inp[i], th = TH;                                                                   \
                float du = GF_SQRT_2_OVER_PI * (1.0f + 3.0f * 0.044715f * x * x);                            \
                float grad = 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du;                          \
                dinp[i] = (overwrite ? 0.0f : dinp[i]) + grad * dout[i];                                     \
            });                                                                                              \
        } else {                                                                                             \
            GF_PAR_FOR_SIMD(n > GF_PAR_MIN, for (int64_t i = 0; i < n; i++) {                                \
                float x = inp[i], e = E;                                                                     \
                float grad = 0.5f * (1.0f + e) + x * GF_INV_SQRT_2PI * EXP(-0.5f * x * x);                   \
                dinp[i] = (overwrite ? 0.0f : dinp[i]) + grad * dout[i];                                     \
            });                                                                                              \
        }                                                                                                    \
    } while (0)

#define TANH_TERM(TANH) TANH(GF_SQRT_2_OVER_PI * (x + 0.044715f * x * x * x))
#define ERF_TERM(ERF) ERF(x * GF_INV_SQRT_2)

void gf_gelu_forward_keep(float *out, float *keep, const float *inp, int64_t n, gf_gelu_kind kind) {
    const bool fast = gf_fast_numerics();
    if (fast && keep) GELU_FORWARD(gf_erf_fast_fma, gf_tanh_fast_fma, keep[i] = t);
    else if (fast) GELU_FORWARD(gf_erf_fast_fma, gf_tanh_fast_fma, (void)0);
    else if (keep) GELU_FORWARD(gf_erf_fast_v, gf_tanh_fast_v, keep[i] = t);
    else GELU_FORWARD(gf_erf_fast_v, gf_tanh_fast_v, (void)0);
}

void gf_gelu_backward_kept(float *dinp, const float *inp, const float *keep, const float *dout, int64_t n,
                           gf_gelu_kind kind) {
    const bool fast = gf_fast_numerics();
    if (fast && keep) GELU_BACKWARD(gf_exp_fast_fma, keep[i], keep[i]);
    else if (fast) GELU_BACKWARD(gf_exp_fast_fma, TANH_TERM(gf_tanh_fast_fma), ERF_TERM(gf_erf_fast_fma));
    else if (keep) GELU_BACKWARD(gf_exp_fast_v, keep[i], keep[i]);
    else GELU_BACKWARD(gf_exp_fast_v, TANH_TERM(gf_tanh_fast_v), ERF_TERM(gf_erf_fast_v));
}

void gf_gelu_forward(float *out, const float *inp, int64_t n, gf_gelu_kind kind) {
    gf_gelu_forward_keep(out, NULL, inp, n, kind);
}

void gf_gelu_backward(float *dinp, const float *inp, const float *dout, int64_t n, gf_gelu_kind kind) {
    gf_gelu_backward_kept(dinp, inp, NULL, dout, n, kind);
}
