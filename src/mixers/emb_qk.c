/* Attention whose queries and keys come from the model's input embeddings instead of the layer's hidden
 * states (issue 55's "attention deconstructed": the coupling of queries and keys to the current layer
 * relaxed, as Xue, Moosavi and Aletras 2025 do, "Deconstructing Attention", arXiv 2510.11602):
 *     q, k = n(e) W_q^T + b_q, n(e) W_k^T + b_k   (e: the input embeddings, what the first layer reads)
 *     v = h W_v^T + b_v                           (h: the layer's input)
 * then attention's heads, masks, softmax and proj; n is a LayerNorm without weight or bias (the config's
 * ln_eps), so that the queries and keys see inputs of the scale a pre-norm block's attention sees (in the first
 * layer of a pre-norm model whose ln1 is at its initial 1 and 0, it is attention). The same tensors as
 * attention (qkv rows q | k | v), so the two have the same parameters; the weights of a layer depend on the
 * tokens and their positions only, never on what earlier layers computed. Layers of the first stack of a model
 * that is not an encoder-decoder. Streams (causal) with attention's KV cache: the keys from the embeddings, the
 * values from the hidden states. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "base/error.h"
#include "compute/parallel.h"
#include "mixers/attn_common.h"
#include "mixers/mixer.h"
#include "ops/ops.h"

typedef struct {
    int64_t n_head; /* gf_attn_config's members first */
} emb_qk_config;

static const gf_cfg_key KEYS[] = {GF_ATTN_N_HEAD_KEY(emb_qk_config)};

static int e_check(const gf_config *cfg, int layer, const char *src) {
    if (gf_attn_check(cfg, layer, src)) return -1;
    if (cfg->source_vocab > 0 || gf_layer_stack(cfg, layer) != 0)
        return gf_fail("%s: layer %d: mixer \"emb-qk\" reads the model's input embeddings, which only the layers of "
                       "the first stack of a model that is not an encoder-decoder have\nHINT: use it in the first "
                       "stack, or attention elsewhere", src, layer);
    return 0;
}

/* saved: qkv (N, 3d), q and k from the embeddings, v from the input | o (N, d) | lse (B, H, T) | n(e) (N, d)
 * | its mean and rstd (N each) */
static int64_t e_saved_floats(const gf_config *cfg, int layer, int64_t B, int64_t T) {
    return 5 * B * T * gf_layer_dim(cfg, layer) + B * gf_attn_n_head(cfg, layer) * T + 2 * B * T;
}

/* scratch: per thread a head's | do (N, d) | dqkv (N, 3d) | the parts of dqkv or qkv, contiguous (N, 2d) |
 * d n(e) (N, d) | ones and zeros (d each: n's weight and bias) */
static int64_t e_scratch_floats(const gf_config *cfg, int layer, int64_t B, int64_t T, int n_threads) {
    const int64_t d = gf_layer_dim(cfg, layer);
    return gf_attn_heads_scratch(cfg, layer, T, n_threads) + 7 * B * T * d + 2 * d;
}

/* n's weight and bias at w (2d floats: ones, zeros) */
static const float *unit_affine(float *w, int64_t d) {
    for (int64_t i = 0; i < d; i++) w[i] = 1.0f, w[d + i] = 0.0f;
    return w;
}

/* qkv (N, 3d): q and k of n(emb) (written to en with its statistics), v of inp; part: 2 N d floats of scratch,
 * then 2 d for n's weight and bias */
static void project(const gf_mixer_call *c, float *qkv, const float *inp, float *part, float *en) {
    const int64_t N = c->B * c->T, d = gf_layer_dim(c->cfg, c->layer);
    const float *W = c->p[GF_ATTN_QKV_W], *b = c->p[GF_ATTN_QKV_B], *wb = unit_affine(part + 2 * N * d, d);
    gf_layernorm_forward(en, en + N * d, en + N * d + N, c->emb, wb, wb + d, N, d, c->cfg->ln_eps);
    gf_linear_forward(part, en, d, W, d, b, N, d, 2 * d, 0.0f);
    for (int64_t n = 0; n < N; n++) memcpy(qkv + n * 3 * d, part + n * 2 * d, (size_t)(2 * d) * sizeof(float));
    gf_linear_forward(part, inp, d, W + 2 * d * d, d, b + 2 * d, N, d, d, 0.0f);
    for (int64_t n = 0; n < N; n++) memcpy(qkv + n * 3 * d + 2 * d, part + n * d, (size_t)d * sizeof(float));
}

static void e_forward(const gf_mixer_call *c, float *out, const float *inp) {
    const int64_t B = c->B, T = c->T, N = B * T, d = gf_layer_dim(c->cfg, c->layer), H = gf_attn_n_head(c->cfg, c->layer);
    float *qkv = c->saved, *o = qkv + 3 * N * d, *lse = o + N * d, *en = lse + B * H * T;
    project(c, qkv, inp, c->scratch + gf_attn_heads_scratch(c->cfg, c->layer, T, c->n_threads) + 4 * N * d, en);
    gf_attn_heads_forward(c, qkv, o, lse);
    gf_attn_proj_forward(c, out, o);
}

/* dqkv's parts back: dq, dk through n into the embeddings' gradient (c->demb) and into qkv's first 2d rows, dv
 * into dinp and its last d rows; part: 3 N d + 2 d floats */
static void project_backward(const gf_mixer_call *c, float *dinp, const float *dqkv, const float *inp, const float *en,
                             float *part) {
    const int64_t N = c->B * c->T, d = gf_layer_dim(c->cfg, c->layer);
    const float *W = c->p[GF_ATTN_QKV_W];
    float *gW = c->g[GF_ATTN_QKV_W], *gb = c->g[GF_ATTN_QKV_B], *den = part + 2 * N * d;
    for (int64_t n = 0; n < N; n++) memcpy(part + n * 2 * d, dqkv + n * 3 * d, (size_t)(2 * d) * sizeof(float));
    gf_zero(den, N * d);
    gf_linear_backward(den, d, gW, d, gb, part, en, d, W, d, N, d, 2 * d);
    gf_layernorm_backward(c->demb, NULL, NULL, den, c->emb, unit_affine(den + N * d, d), en + N * d, en + N * d + N, N,
                          d);
    for (int64_t n = 0; n < N; n++) memcpy(part + n * d, dqkv + n * 3 * d + 2 * d, (size_t)d * sizeof(float));
    gf_linear_backward(dinp, d, gW ? gW + 2 * d * d : NULL, d, gb ? gb + 2 * d : NULL, part, inp, d, W + 2 * d * d, d,
                       N, d, d);
}

static void e_backward(const gf_mixer_call *c, float *dinp, const float *dout, const float *inp) {
    const int64_t B = c->B, T = c->T, N = B * T, d = gf_layer_dim(c->cfg, c->layer), H = gf_attn_n_head(c->cfg, c->layer);
    const float *qkv = c->saved, *o = qkv + 3 * N * d, *lse = o + N * d, *en = lse + B * H * T;
    float *dO = c->scratch + gf_attn_heads_scratch(c->cfg, c->layer, T, c->n_threads), *dqkv = dO + N * d;
    gf_attn_proj_backward(c, dO, dout, o);
    gf_zero(dqkv, 3 * N * d);
    gf_attn_heads_backward(c, qkv, lse, dO, dqkv);
    project_backward(c, dinp, dqkv, inp, en, dqkv + 3 * N * d);
}

/* ---- streaming: attention's KV cache, the keys from the embeddings --------------------------------------- */

static int64_t e_state_floats(const gf_config *cfg, int layer, int64_t cap) { return cap * 2 * gf_layer_dim(cfg, layer); }

/* step scratch: qkv (3d) | o (d) | n(e) (d), its statistics (2) | n's weight and bias (2d) | scores (H, cap) */
static int64_t e_step_scratch_floats(const gf_config *cfg, int layer, int64_t cap) {
    return 7 * gf_layer_dim(cfg, layer) + 2 + gf_attn_n_head(cfg, layer) * cap;
}

static void e_step(const gf_mixer_step *s, float *out, const float *inp) {
    const int64_t d = gf_layer_dim(s->cfg, s->layer), H = gf_attn_n_head(s->cfg, s->layer), dh = d / H, n = s->pos + 1;
    const float *W = s->p[GF_ATTN_QKV_W], *b = s->p[GF_ATTN_QKV_B];
    float *qkv = s->scratch, *o = qkv + 3 * d, *en = o + d, *wb = en + d + 2, *sc = wb + 2 * d;
    gf_layernorm_forward(en, en + d, en + d + 1, s->emb, unit_affine(wb, d), wb + d, 1, d, s->cfg->ln_eps);
    gf_linear_forward(qkv, en, d, W, d, b, 1, d, 2 * d, 0.0f);
    gf_linear_forward(qkv + 2 * d, inp, d, W + 2 * d * d, d, b + 2 * d, 1, d, d, 0.0f);
    float *kv = s->state + s->pos * 2 * d;
    for (int64_t j = 0; j < 2 * d; j++) kv[j] = qkv[d + j];
    for (int64_t h = 0; h < H; h++)
        gf_attn_step_head(o + h * dh, qkv + h * dh, s->state + h * dh, s->state + d + h * dh, 2 * d, n, dh,
                          1.0f / sqrtf((float)dh), sc + h * s->cap);
    gf_linear_forward(out, o, d, s->p[GF_ATTN_PROJ_W], d, s->p[GF_ATTN_PROJ_B], 1, d, d, 0.0f);
}

const gf_mixer_ops gf_mixer_emb_qk = {
    .version = GF_MIXER_OPS_VERSION,
    .name = "emb-qk",
    .letter = 'e',
    .help = "Attention with queries and keys from the model's input embeddings, values from the layer's input\n"
            "(attention deconstructed, arXiv 2510.11602): attention's tensors; the weights depend on the tokens\n"
            "and positions only. First stack, no encoder-decoder. Streams (causal) with a KV cache.",
    .config_size = sizeof(emb_qk_config),
    .keys = KEYS,
    .n_keys = (int)(sizeof KEYS / sizeof KEYS[0]),
    .check = e_check,
    .gated_skip = false,
    .directions = GF_MIX_CAUSAL | GF_MIX_BIDIRECTIONAL,
    .masks = true,
    .param_specs = gf_attn_param_specs,
    .saved_floats = e_saved_floats,
    .scratch_floats = e_scratch_floats,
    .forward = e_forward,
    .backward = e_backward,
    .state_floats = e_state_floats,
    .step_scratch_floats = e_step_scratch_floats,
    .step = e_step,
    .reads_embeddings = true,
};
