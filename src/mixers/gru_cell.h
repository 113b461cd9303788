/* One GRU update in torch.nn.GRU's form (gates r, z, n), forward and backward, shared by the GRU mixer
 * (mixers/gru.c) and the recurrent decoder (mixers/gru_attn.c). */
#ifndef GF_MIXERS_GRU_CELL_H
#define GF_MIXERS_GRU_CELL_H

#include <math.h>
#include <stdint.h>

#include "compute/fastmath.h"

/* The cell's sigmoid and tanh: the vectorisable exp and tanh of compute/fastmath.h (a few ulp from libm's,
 * relatively; the _v set, whose values are the same in vector and scalar code, so that a stream's step and the
 * whole forward agree bit for bit). libm's scalar expf and tanhf took a third of a GRU decoder's training step. */
#pragma omp declare simd notinbranch
static inline float gf_sigmoid(float x) { return 1.0f / (1.0f + gf_exp_fast_v(-x)); }

/* One GRU update of H units: gi = W_i x + b_i and gh = W_h hp + b_h (3H each, gates r, z, n), hp the state
 * before (NULL: zero); writes h and the gates backward needs. The forward and the streaming step share it. */
static inline void gf_gru_cell(int64_t H, const float *gi, const float *gh, const float *hp, float *h, float *r, float *z,
                     float *n, float *ghn) {
#pragma omp simd
    for (int64_t j = 0; j < H; j++) {
        const float rj = gf_sigmoid(gi[j] + gh[j]), zj = gf_sigmoid(gi[H + j] + gh[H + j]);
        const float nj = gf_tanh_rel_v(gi[2 * H + j] + rj * gh[2 * H + j]);
        h[j] = (1.0f - zj) * nj + zj * (hp ? hp[j] : 0.0f);
        r[j] = rj, z[j] = zj, n[j] = nj, ghn[j] = gh[2 * H + j];
    }
}

/* The gradients of one real position's gates: g = dL/dh_t (its output's and the carried one); writes
 * dgi (3H: the input projection's), dgh (3H: the recurrent one's) and dhp = dL/dh_{t-1} through z. */
static inline void gf_gru_cell_backward(int64_t H, const float *g, const float *hp, const float *r, const float *z,
                          const float *n, const float *ghn, float *dgi, float *dgh, float *dhp) {
    for (int64_t j = 0; j < H; j++) {
        const float hpj = hp ? hp[j] : 0.0f;
        const float dan = g[j] * (1.0f - z[j]) * (1.0f - n[j] * n[j]);
        const float dar = dan * ghn[j] * r[j] * (1.0f - r[j]);
        const float daz = g[j] * (hpj - n[j]) * z[j] * (1.0f - z[j]);
        dgi[j] = dar, dgi[H + j] = daz, dgi[2 * H + j] = dan;
        dgh[j] = dar, dgh[H + j] = daz, dgh[2 * H + j] = dan * r[j];
        dhp[j] = g[j] * z[j];
    }
}

#endif
