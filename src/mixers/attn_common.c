/* The attention family's shared pieces (attn_common.h): one copy, used by every attention mixer. */
#include "mixers/attn_common.h"

#include <math.h>

#include "compute/blas.h"
#include "base/error.h"
#include "compute/fastmath.h"
#include "ops/ops.h"

int64_t gf_attn_n_head(const gf_config *cfg, int layer) {
    return ((const gf_attn_config *)gf_layer_mcfg(cfg, layer))->n_head;
}

int gf_attn_check(const gf_config *cfg, int layer, const char *src) {
    if (gf_layer_dim(cfg, layer) % gf_attn_n_head(cfg, layer) != 0)
        return gf_fail("%s: layer %d: d_model %lld is not divisible by n_head %lld", src, layer,
                       (long long)gf_layer_dim(cfg, layer), (long long)gf_attn_n_head(cfg, layer));
    return 0;
}

int gf_attn_param_specs(const gf_config *cfg, int layer, gf_param_spec *s) {
    int64_t d = gf_layer_dim(cfg, layer);
    gf_param_spec_set(&s[GF_ATTN_QKV_W], "qkv.weight", 2, 3 * d, d, GF_INIT_NORMAL);
    gf_param_spec_set(&s[GF_ATTN_QKV_B], "qkv.bias", 1, 3 * d, 0, GF_INIT_ZERO);
    gf_param_spec_set(&s[GF_ATTN_PROJ_W], "proj.weight", 2, d, d, GF_INIT_NORMAL);
    gf_param_spec_set(&s[GF_ATTN_PROJ_B], "proj.bias", 1, d, 0, GF_INIT_ZERO);
    return GF_ATTN_N_PARAMS;
}

void gf_attn_qkv_forward(const gf_mixer_call *c, float *qkv, const float *inp) {
    const int64_t d = gf_layer_dim(c->cfg, c->layer);
    gf_linear_forward(qkv, inp, d, c->p[GF_ATTN_QKV_W], d, c->p[GF_ATTN_QKV_B], c->B * c->T, d, 3 * d, 0.0f);
}

void gf_attn_proj_forward(const gf_mixer_call *c, float *out, const float *o) {
    const int64_t d = gf_layer_dim(c->cfg, c->layer);
    gf_linear_forward(out, o, d, c->p[GF_ATTN_PROJ_W], d, c->p[GF_ATTN_PROJ_B], c->B * c->T, d, d, 0.0f);
}

void gf_attn_proj_backward(const gf_mixer_call *c, float *dO, const float *dout, const float *o) {
    const int64_t d = gf_layer_dim(c->cfg, c->layer), N = c->B * c->T;
    gf_linear_backward_set(dO, c->g[GF_ATTN_PROJ_W], d, c->g[GF_ATTN_PROJ_B], dout, o, d, c->p[GF_ATTN_PROJ_W], d, N,
                           d, d);
}

void gf_attn_qkv_backward(const gf_mixer_call *c, float *dinp, const float *dqkv, const float *inp) {
    const int64_t d = gf_layer_dim(c->cfg, c->layer), N = c->B * c->T;
    gf_linear_backward(dinp, d, c->g[GF_ATTN_QKV_W], d, c->g[GF_ATTN_QKV_B], dqkv, inp, d, c->p[GF_ATTN_QKV_W], d,
                       N, d, 3 * d);
}

int64_t gf_attn_heads_scratch(const gf_config *cfg, int layer, int64_t T, int n_threads) {
    return (int64_t)n_threads * gf_attn_head_scratch_floats(T, gf_layer_dim(cfg, layer) / gf_attn_n_head(cfg, layer));
}

/* head (b, h) over the fused qkv: its q, k, v columns, rows of b */
static gf_attn_head head_at(const gf_mixer_call *c, int64_t bh, const float *qkv) {
    const int64_t T = c->T, d = gf_layer_dim(c->cfg, c->layer), H = gf_attn_n_head(c->cfg, c->layer), dh = d / H;
    const int64_t b = bh / H, h = bh % H;
    const float *q = qkv + b * T * 3 * d + h * dh;
    return (gf_attn_head){.q = q, .k = q + d, .v = q + 2 * d, .ldq = 3 * d, .ldk = 3 * d, .ldv = 3 * d, .ldo = d,
                          .T = T, .S = T, .dh = dh, .causal = !c->bidirectional, .km = c->mask ? c->mask + b * T : NULL,
                          .scratch = gf_attn_head_thread_scratch(c->scratch, T, dh)};
}

void gf_attn_heads_forward(const gf_mixer_call *c, const float *qkv, float *o, float *lse) {
    const int64_t T = c->T, d = gf_layer_dim(c->cfg, c->layer), H = gf_attn_n_head(c->cfg, c->layer);
#pragma omp parallel for schedule(static) num_threads(c->n_threads)
    for (int64_t bh = 0; bh < c->B * H; bh++) {
        const gf_attn_head hd = head_at(c, bh, qkv);
        gf_attn_head_forward(&hd, o + (bh / H) * T * d + (bh % H) * hd.dh, lse + bh * T);
    }
}

void gf_attn_heads_backward(const gf_mixer_call *c, const float *qkv, const float *lse, const float *dO, float *dqkv) {
    const int64_t T = c->T, d = gf_layer_dim(c->cfg, c->layer), H = gf_attn_n_head(c->cfg, c->layer);
#pragma omp parallel for schedule(static) num_threads(c->n_threads)
    for (int64_t bh = 0; bh < c->B * H; bh++) {
        const gf_attn_head hd = head_at(c, bh, qkv);
        float *dq = dqkv + (hd.q - qkv);
        gf_attn_head_backward(&hd, dq, dq + d, dq + 2 * d, dO + (bh / H) * T * d + (bh % H) * hd.dh, lse + bh * T);
    }
}

void gf_attn_zero_padded(float *x, int64_t ld, int64_t n, const uint8_t *mask, int64_t N) {
    for (int64_t r = 0; mask && r < N; r++)
        if (!mask[r]) gf_zero(x + r * ld, n);
}

void gf_attn_step_head(float *oh, const float *q, const float *k, const float *v, int64_t ld, int64_t n,
                       int64_t dh, float scale, float *row) {
    float mx = -INFINITY;
    for (int64_t j = 0; j < n; j++) {
        const float *kj = k + j * ld;
        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (int64_t e = 0; e < dh; e++) dot += q[e] * kj[e];
        row[j] = scale * dot;
        mx = row[j] > mx ? row[j] : mx;
    }
    const float l = mx + logf(gf_sum_exp_f(row, n, mx));
    for (int64_t e = 0; e < dh; e++) oh[e] = 0.0f;
    for (int64_t j = 0; j < n; j++) {
        const float pj = gf_exp_fast(row[j] - l), *vj = v + j * ld;
#pragma omp simd
        for (int64_t e = 0; e < dh; e++) oh[e] += pj * vj[e];
    }
}
