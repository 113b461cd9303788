/* What the attention family of mixers shares (attention.c, and the efficient attentions beside it): the
 * n_head key and its check, the tensors every one of them has and their layout (mix.qkv.weight (3d, d) and
 * .bias, rows q | k | v with each head's dh = d / n_head rows contiguous; mix.proj.weight (d, d) and .bias),
 * the QKV and output projections forward and backward, and one
 * query's attention over cached keys (streaming). One copy of each: a new attention mixer includes this
 * file instead of copying attention.c. */
#ifndef GF_MIXERS_ATTN_COMMON_H
#define GF_MIXERS_ATTN_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grassflow_plugin.h"

/* Every attention mixer's config struct begins with these members (its own keys follow). */
typedef struct gf_attn_config {
    int64_t n_head;
} gf_attn_config;

/* The n_head key of a config struct `cfg_type` that begins with gf_attn_config's members. */
#define GF_ATTN_N_HEAD_KEY(cfg_type)                                                                         \
    {.name = "n_head", .type = GF_KEY_INT, .off = offsetof(cfg_type, n_head), .lo = 1, .hi = 65536, .def = "4", \
     .help = "heads; each has d_model / n_head dimensions"}

/* The tensors every attention mixer has first, in this order (its own follow). */
enum { GF_ATTN_QKV_W, GF_ATTN_QKV_B, GF_ATTN_PROJ_W, GF_ATTN_PROJ_B, GF_ATTN_N_PARAMS };

/* Queries per block of a mixer's own blocked softmax (window.c; the others run ops.h's gf_attn_head): the
 * scratch of one thread is a few QB x (keys) floats. */
enum { GF_ATTN_QB = 64 };

int64_t gf_attn_n_head(const gf_config *cfg, int layer);
/* d_model divisible by n_head; 0 or gf_fail's -1 naming src and the layer. */
int gf_attn_check(const gf_config *cfg, int layer, const char *src);
/* specs[0 .. GF_ATTN_N_PARAMS) = qkv.weight, qkv.bias, proj.weight, proj.bias; returns GF_ATTN_N_PARAMS. */
int gf_attn_param_specs(const gf_config *cfg, int layer, gf_param_spec *specs);

/* qkv (N, 3d) = inp (N, d) W_qkv^T + b_qkv, N = c->B * c->T. */
void gf_attn_qkv_forward(const gf_mixer_call *c, float *qkv, const float *inp);
/* out (N, d) = o (N, d) W_proj^T + b_proj. */
void gf_attn_proj_forward(const gf_mixer_call *c, float *out, const float *o);
/* dO (N, d) = dout W_proj (overwritten); the proj gradients accumulate. */
void gf_attn_proj_backward(const gf_mixer_call *c, float *dO, const float *dout, const float *o);
/* dinp += dqkv W_qkv; the qkv gradients accumulate. */
void gf_attn_qkv_backward(const gf_mixer_call *c, float *dinp, const float *dqkv, const float *inp);

/* Softmax attention of every (row, head) of a fused qkv (N, 3d; q | k | v columns, as qkv_forward writes them),
 * causal or not as c is, padded keys (c->mask) excluded: o (N, d) and the log-sum-exps lse (B, H, T); backward
 * dqkv (N, 3d, zeroed by the caller) += from dO (N, d). Their scratch: gf_attn_heads_scratch floats at the
 * start of c->scratch (a head's per thread). */
int64_t gf_attn_heads_scratch(const gf_config *cfg, int layer, int64_t T, int n_threads);
void gf_attn_heads_forward(const gf_mixer_call *c, const float *qkv, float *o, float *lse);
void gf_attn_heads_backward(const gf_mixer_call *c, const float *qkv, const float *lse, const float *dO, float *dqkv);

/* Zero columns 0 .. n-1 of every row r < N of x (row stride ld) whose mask[r] is 0 (mask NULL: nothing): the
 * padded positions' keys and values, or their gradients. */
void gf_attn_zero_padded(float *x, int64_t ld, int64_t n, const uint8_t *mask, int64_t N);

/* One query's attention for one head (streaming): oh (dh) = sum_j softmax_j(scale q.k_j) v_j over the n
 * cached keys k_j = k + j * ld and values v_j = v + j * ld; row: n floats of scratch. The same arithmetic
 * as gf_attn_head_forward's default path, one row. */
void gf_attn_step_head(float *oh, const float *q, const float *k, const float *v, int64_t ld, int64_t n,
                       int64_t dh, float scale, float *row);

/* The attention mixer's weights (attention.c; grassflow inspect): w (n_head, T, T), head h's row t the softmax
 * over the keys s <= t (0 for s > t; every s in a bidirectional layer) of q_t.k_s / sqrt(dh), computed in double
 * from the layer's input inp (T, d) of one unpadded sequence and its tensors p (param_specs order). 0, or -1 out
 * of memory. */
int gf_attention_weights(const gf_config *cfg, int layer, float *const *p, const float *inp, int64_t T, float *w);

#endif
