/* Multi-head scaled dot-product attention with a fused QKV projection, causal or bidirectional, with
 * padded keys masked out: every (batch row, head) is one gf_attn_head (ops/sdpa.c, the blocked softmax
 * that keeps no T x T tensor), reading q, k and v in place in the fused qkv. */
#include <math.h>
#include <stddef.h>

#include "base/mem.h"
#include "compute/blas.h"
#include "compute/parallel.h"
#include "mixers/attn_common.h"
#include "mixers/mixer.h"
#include "ops/ops.h"

typedef struct attention_config {
    int64_t n_head; /* gf_attn_config's members first */
} attention_config;

static const gf_cfg_key KEYS[] = {GF_ATTN_N_HEAD_KEY(attention_config)};

/* saved: qkv (N,3d) | o (N,d) | lse (B,H,T) */
static int64_t a_saved_floats(const gf_config *cfg, int layer, int64_t B, int64_t T) {
    int64_t N = B * T, d = gf_layer_dim(cfg, layer);
    return 4 * N * d + B * gf_attn_n_head(cfg, layer) * T;
}

/* scratch: per thread a head's | do (N,d) | dqkv (N,3d) */
static int64_t a_scratch_floats(const gf_config *cfg, int layer, int64_t B, int64_t T, int n_threads) {
    return gf_attn_heads_scratch(cfg, layer, T, n_threads) + 4 * B * T * gf_layer_dim(cfg, layer);
}

static void a_forward(const gf_mixer_call *c, float *out, const float *inp) {
    const int64_t N = c->B * c->T, d = gf_layer_dim(c->cfg, c->layer);
    float *qkv = c->saved, *o = qkv + 3 * N * d, *lse = o + N * d;
    gf_attn_qkv_forward(c, qkv, inp);
    gf_attn_heads_forward(c, qkv, o, lse);
    gf_attn_proj_forward(c, out, o);
}

static void a_backward(const gf_mixer_call *c, float *dinp, const float *dout, const float *inp) {
    const int64_t N = c->B * c->T, d = gf_layer_dim(c->cfg, c->layer);
    const float *qkv = c->saved, *o = qkv + 3 * N * d, *lse = o + N * d;
    float *dO = c->scratch + gf_attn_heads_scratch(c->cfg, c->layer, c->T, c->n_threads), *dqkv = dO + N * d;
    gf_attn_proj_backward(c, dO, dout, o);
    gf_zero(dqkv, 3 * N * d);
    gf_attn_heads_backward(c, qkv, lse, dO, dqkv);
    gf_attn_qkv_backward(c, dinp, dqkv, inp);
}

/* ---- streaming: a KV cache ----------------------------------------------------------------------------- */

/* state: per position, k (d) then v (d): appending positions only appends floats */
static int64_t a_state_floats(const gf_config *cfg, int layer, int64_t cap) {
    (void)layer;
    return cap * 2 * gf_layer_dim(cfg, layer);
}

/* step scratch: qkv (3d) | o (d) | scores (H, cap) */
static int64_t a_step_scratch_floats(const gf_config *cfg, int layer, int64_t cap) {
    return 4 * gf_layer_dim(cfg, layer) + gf_attn_n_head(cfg, layer) * cap;
}

static void a_step(const gf_mixer_step *s, float *out, const float *inp) {
    const gf_config *cfg = s->cfg;
    const int64_t d = gf_layer_dim(cfg, s->layer), H = gf_attn_n_head(cfg, s->layer), dh = d / H, n = s->pos + 1;
    float *qkv = s->scratch, *o = qkv + 3 * d, *sc = o + d;
    const float scale = 1.0f / sqrtf((float)dh);
    gf_linear_forward(qkv, inp, d, s->p[GF_ATTN_QKV_W], d, s->p[GF_ATTN_QKV_B], 1, d, 3 * d, 0.0f);
    float *kv = s->state + s->pos * 2 * d;
    for (int64_t j = 0; j < 2 * d; j++) kv[j] = qkv[d + j];
    GF_PAR_FOR(n * d > GF_PAR_MIN, for (int64_t h = 0; h < H; h++)
                   gf_attn_step_head(o + h * dh, qkv + h * dh, s->state + h * dh, s->state + d + h * dh, 2 * d, n, dh, scale,
                                     sc + h * s->cap););
    gf_linear_forward(out, o, d, s->p[GF_ATTN_PROJ_W], d, s->p[GF_ATTN_PROJ_B], 1, d, d, 0.0f);
}

/* ---- inspection: the attention weights (attn_common.h) ------------------------------------------------- */

/* Head h's weights over one causal sequence of T rows: w (T, T), row t = softmax over s <= t of scale q_t.k_s,
 * in double (0 for s > t). */
static void head_weights(float *w, const float *qkv, int64_t T, int64_t d, int64_t h, int64_t dh, double scale,
                         bool causal, double *row) {
    for (int64_t t = 0; t < T; t++) {
        const float *q = qkv + t * 3 * d + h * dh;
        const int64_t last = causal ? t : T - 1;
        double mx = -INFINITY, sum = 0.0;
        for (int64_t s = 0; s <= last; s++) {
            const float *k = qkv + s * 3 * d + d + h * dh;
            double dot = 0.0;
            for (int64_t e = 0; e < dh; e++) dot += (double)q[e] * (double)k[e];
            row[s] = scale * dot;
            mx = row[s] > mx ? row[s] : mx;
        }
        for (int64_t s = 0; s <= last; s++) sum += exp(row[s] - mx);
        for (int64_t s = 0; s < T; s++) w[t * T + s] = s <= last ? (float)(exp(row[s] - mx) / sum) : 0.0f;
    }
}

int gf_attention_weights(const gf_config *cfg, int layer, float *const *p, const float *inp, int64_t T, float *w) {
    const int64_t d = gf_layer_dim(cfg, layer), H = gf_attn_n_head(cfg, layer), dh = d / H;
    float *qkv = gf_alloc_floats(3 * T * d + 2 * T + 2, "the attention weights of a layer");
    if (!qkv) return -1;
    gf_linear_forward(qkv, inp, d, p[GF_ATTN_QKV_W], d, p[GF_ATTN_QKV_B], T, d, 3 * d, 0.0f);
    double *row = (double *)(void *)(qkv + 3 * T * d + (3 * T * d) % 2); /* 8-byte aligned: the arena is 64 */
    const bool causal = gf_stack_direction(cfg, gf_layer_stack(cfg, layer)) == GF_CAUSAL;
    for (int64_t h = 0; h < H; h++) head_weights(w + h * T * T, qkv, T, d, h, dh, 1.0 / sqrt((double)dh), causal, row);
    gf_free(qkv);
    return 0;
}

const gf_mixer_ops gf_mixer_attention = {
    .version = GF_MIXER_OPS_VERSION,
    .name = "attention",
    .letter = 'a',
    .help = "Multi-head scaled dot-product attention with a fused QKV projection (the Transformer's), causal or\n"
            "bidirectional. Quadratic in the sequence length; streams (causal) with a KV cache of 2 d floats per\n"
            "position.",
    .config_size = sizeof(attention_config),
    .keys = KEYS,
    .n_keys = (int)(sizeof KEYS / sizeof KEYS[0]),
    .check = gf_attn_check,
    .gated_skip = false,
    .directions = GF_MIX_CAUSAL | GF_MIX_BIDIRECTIONAL,
    .masks = true,
    .param_specs = gf_attn_param_specs,
    .saved_floats = a_saved_floats,
    .scratch_floats = a_scratch_floats,
    .forward = a_forward,
    .backward = a_backward,
    .state_floats = a_state_floats,
    .step_scratch_floats = a_step_scratch_floats,
    .step = a_step,
};
