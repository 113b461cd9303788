/* Attention in other forms (issue 55's "attention deconstructed": the dot-product-and-softmax form relaxed,
 * as Xue, Moosavi and Aletras 2025 do, "Deconstructing Attention", arXiv 2510.11602): attention's tensors
 * and heads, with the weights a_ts of query t over the keys s it sees (causal: s <= t; padded keys never)
 * computed in one of three forms, z_ts = q_t.k_s / sqrt(dh) and n_t the number of keys t sees:
 *   relu     a_ts = relu(z_ts) / n_t             dot products, no softmax: ReLU attention (Wortsman et al.
 *                                                2023, arXiv 2309.08586), weights that need not sum to 1
 *   sigmoid  a_ts = sigmoid(z_ts - ln n_t)       dot products, each weight on its own: sigmoid attention with
 *                                                the bias -ln n (Ramapuram et al. 2024, arXiv 2409.04431)
 *   l1       a_ts = softmax_s(-|q_t - k_s|_1 / sqrt(dh))   softmax without dot products: the Manhattan distance
 * then o_t = sum_s a_ts v_s and out = proj(o), as attention's. A query that sees no key gets 0. Each head's
 * (T, T) scores live in a thread's scratch for one (row, head) at a time, forward and backward (recomputed);
 * the dot forms' products run on sgemm. Streams (causal) with attention's KV cache, 2 d floats a position. */
#include <math.h>
#include <stddef.h>

#include "compute/blas.h"
#include "compute/parallel.h"
#include "mixers/attn_common.h"
#include "mixers/mixer.h"
#include "ops/ops.h"

enum { FORM_RELU, FORM_SIGMOID, FORM_L1 };
static const char *const FORMS[] = {"relu", "sigmoid", "l1", NULL};

typedef struct {
    int64_t n_head; /* gf_attn_config's members first */
    int form;
} attn_form_config;

static const gf_cfg_key KEYS[] = {
    GF_ATTN_N_HEAD_KEY(attn_form_config),
    {.name = "form", .type = GF_KEY_ENUM, .off = offsetof(attn_form_config, form), .names = FORMS, .def = "\"relu\"",
     .help = "the weights: relu (relu(q.k / sqrt(dh)) / n), sigmoid (sigmoid(q.k / sqrt(dh) - ln n)), l1 (softmax of "
             "-|q - k|_1 / sqrt(dh)); n the keys a query sees"},
};

static int form_of(const gf_config *cfg, int layer) { return ((const attn_form_config *)gf_layer_mcfg(cfg, layer))->form; }

typedef struct {
    int64_t T, d, dh;
    int form;
    bool causal;
    float scale;
} fdims;

/* Row t's scores z (T floats, q k^T scaled; l1: the negated distance) for the keys of one head */
static void l1_scores(float *z, const float *q, const float *k, int64_t ld, int64_t n, int64_t dh, float scale) {
    for (int64_t s = 0; s < n; s++) {
        const float *ks = k + s * ld;
        float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
        for (int64_t e = 0; e < dh; e++) acc += fabsf(q[e] - ks[e]);
        z[s] = -scale * acc;
    }
}

/* Weights a (n keys) from the scores z of one query, keys with km[s] == 0 excluded (km NULL: none).
 * Shared by forward, backward and step. */
static void weights_row(float *a, const float *z, int64_t n, const uint8_t *km, int form) {
    int64_t seen = 0;
    for (int64_t s = 0; s < n; s++) seen += !km || km[s];
    if (form == FORM_L1) {
        float mx = -INFINITY, sum = 0.0f;
        for (int64_t s = 0; s < n; s++)
            if (!km || km[s]) mx = z[s] > mx ? z[s] : mx;
        for (int64_t s = 0; s < n; s++) sum += (a[s] = km && !km[s] ? 0.0f : expf(z[s] - mx));
        for (int64_t s = 0; s < n && sum > 0.0f; s++) a[s] /= sum;
        return;
    }
    const float ln_n = logf((float)(seen ? seen : 1)), inv_n = 1.0f / (float)(seen ? seen : 1);
    for (int64_t s = 0; s < n; s++)
        a[s] = km && !km[s] ? 0.0f
               : form == FORM_RELU ? (z[s] > 0.0f ? z[s] * inv_n : 0.0f)
                                   : 1.0f / (1.0f + expf(ln_n - z[s]));
}

/* dz (n) from the weights a, the scores z and da = dL/da of one query (in place over da) */
static void weights_row_backward(float *da, const float *a, const float *z, int64_t n, const uint8_t *km, int form) {
    int64_t seen = 0;
    for (int64_t s = 0; s < n; s++) seen += !km || km[s];
    if (form == FORM_L1) {
        float pd = 0.0f;
        for (int64_t s = 0; s < n; s++) pd += a[s] * da[s];
        for (int64_t s = 0; s < n; s++) da[s] = a[s] * (da[s] - pd);
        return;
    }
    const float inv_n = 1.0f / (float)(seen ? seen : 1);
    for (int64_t s = 0; s < n; s++)
        da[s] = km && !km[s] ? 0.0f
                : form == FORM_RELU ? (z[s] > 0.0f ? da[s] * inv_n : 0.0f)
                                    : da[s] * a[s] * (1.0f - a[s]);
}

/* Head h of row b: the scores Z (T, T) of its queries over its keys (row t: keys 0 .. (causal ? t : T - 1)),
 * then the weights A (T, T), zero outside what each query sees. */
static void head_weights(const fdims *z, const float *q, const float *k, const uint8_t *km, float *Z, float *A) {
    const int64_t T = z->T, ld = 3 * z->d;
    if (z->form == FORM_L1)
        for (int64_t t = 0; t < T; t++) l1_scores(Z + t * T, q + t * ld, k, ld, z->causal ? t + 1 : T, z->dh, z->scale);
    else
        gf_sgemm(false, true, T, T, z->dh, z->scale, q, ld, k, ld, 0.0f, Z, T);
    for (int64_t t = 0; t < T; t++) {
        const int64_t n = z->causal ? t + 1 : T;
        weights_row(A + t * T, Z + t * T, n, km, z->form);
        for (int64_t s = n; s < T; s++) A[t * T + s] = 0.0f;
    }
}

static int64_t head_scratch(int64_t T) { return 3 * T * T; }

/* saved: qkv (N, 3d) | o (N, d) */
static int64_t x_saved_floats(const gf_config *cfg, int layer, int64_t B, int64_t T) {
    return 4 * B * T * gf_layer_dim(cfg, layer);
}

/* scratch: do (N, d) | dqkv (N, 3d) | per thread Z, A, dA (3 T^2) */
static int64_t x_scratch_floats(const gf_config *cfg, int layer, int64_t B, int64_t T, int n_threads) {
    return 4 * B * T * gf_layer_dim(cfg, layer) + (int64_t)n_threads * head_scratch(T);
}

static fdims fdims_of(const gf_mixer_call *c) {
    const int64_t d = gf_layer_dim(c->cfg, c->layer), dh = d / gf_attn_n_head(c->cfg, c->layer);
    return (fdims){c->T, d, dh, form_of(c->cfg, c->layer), !c->bidirectional, 1.0f / sqrtf((float)dh)};
}

static void x_forward(const gf_mixer_call *c, float *out, const float *inp) {
    const fdims z = fdims_of(c);
    const int64_t B = c->B, T = c->T, N = B * T, d = z.d, H = d / z.dh;
    float *qkv = c->saved, *o = qkv + 3 * N * d, *heads = c->scratch + 4 * N * d;
    gf_attn_qkv_forward(c, qkv, inp);
#pragma omp parallel for schedule(static) num_threads(c->n_threads)
    for (int64_t bh = 0; bh < B * H; bh++) {
        const int64_t b = bh / H, h = bh % H;
        float *Z = heads + (int64_t)gf_thread_id() * head_scratch(T), *A = Z + T * T;
        const float *q = qkv + b * T * 3 * d + h * z.dh;
        head_weights(&z, q, q + d, c->mask ? c->mask + b * T : NULL, Z, A);
        gf_sgemm(false, false, T, z.dh, T, 1.0f, A, T, q + 2 * d, 3 * d, 0.0f, o + b * T * d + h * z.dh, d);
    }
    gf_attn_proj_forward(c, out, o);
}

/* l1's dq (row t) and dk (rows s) from dZ: d(-scale |q - k|_1) = -scale sign(q - k) dq, +scale sign(q - k) dk */
static void l1_backward(const fdims *z, const float *q, const float *k, const float *dZ, float *dq, float *dk) {
    const int64_t T = z->T, ld = 3 * z->d;
    for (int64_t t = 0; t < T; t++)
        for (int64_t s = 0; s < (z->causal ? t + 1 : T); s++) {
            const float g = dZ[t * T + s] * z->scale, *qt = q + t * ld, *ks = k + s * ld;
            float *dqt = dq + t * ld, *dks = dk + s * ld;
            for (int64_t e = 0; e < z->dh; e++) {
                const float sg = qt[e] > ks[e] ? g : qt[e] < ks[e] ? -g : 0.0f;
                dqt[e] -= sg;
                dks[e] += sg;
            }
        }
}

/* Head h of row b backward: its columns of dqkv (rows of b) from dO */
static void head_backward(const fdims *z, const float *q, const uint8_t *km, const float *dO, float *dq, float *heads) {
    const int64_t T = z->T, d = z->d, ld = 3 * d;
    float *Z = heads, *A = Z + T * T, *dA = A + T * T;
    head_weights(z, q, q + d, km, Z, A);
    gf_sgemm(true, false, T, z->dh, T, 1.0f, A, T, dO, d, 1.0f, dq + 2 * d, ld); /* dv += A^T dO */
    gf_sgemm(false, true, T, T, z->dh, 1.0f, dO, d, q + 2 * d, ld, 0.0f, dA, T); /* dA = dO v^T */
    for (int64_t t = 0; t < T; t++) {
        const int64_t n = z->causal ? t + 1 : T;
        weights_row_backward(dA + t * T, A + t * T, Z + t * T, n, km, z->form);
        for (int64_t s = n; s < T; s++) dA[t * T + s] = 0.0f;
    }
    if (z->form == FORM_L1) {
        l1_backward(z, q, q + d, dA, dq, dq + d);
        return;
    }
    gf_sgemm(false, false, T, z->dh, T, z->scale, dA, T, q + d, ld, 1.0f, dq, ld); /* dq += s dZ k */
    gf_sgemm(true, false, T, z->dh, T, z->scale, dA, T, q, ld, 1.0f, dq + d, ld);  /* dk += s dZ^T q */
}

static void x_backward(const gf_mixer_call *c, float *dinp, const float *dout, const float *inp) {
    const fdims z = fdims_of(c);
    const int64_t B = c->B, T = c->T, N = B * T, d = z.d, H = d / z.dh;
    const float *qkv = c->saved, *o = qkv + 3 * N * d;
    float *dO = c->scratch, *dqkv = dO + N * d, *heads = dqkv + 3 * N * d;
    gf_attn_proj_backward(c, dO, dout, o);
    gf_zero(dqkv, 3 * N * d);
#pragma omp parallel for schedule(static) num_threads(c->n_threads)
    for (int64_t bh = 0; bh < B * H; bh++) {
        const int64_t b = bh / H, h = bh % H, off = b * T * 3 * d + h * z.dh;
        head_backward(&z, qkv + off, c->mask ? c->mask + b * T : NULL, dO + b * T * d + h * z.dh, dqkv + off,
                      heads + (int64_t)gf_thread_id() * head_scratch(T));
    }
    gf_attn_qkv_backward(c, dinp, dqkv, inp);
}

/* ---- streaming: attention's KV cache ------------------------------------------------------------------- */

static int64_t x_state_floats(const gf_config *cfg, int layer, int64_t cap) { return cap * 2 * gf_layer_dim(cfg, layer); }

/* step scratch: qkv (3d) | o (d) | z and a (2 cap) */
static int64_t x_step_scratch_floats(const gf_config *cfg, int layer, int64_t cap) {
    return 4 * gf_layer_dim(cfg, layer) + 2 * cap;
}

static void x_step(const gf_mixer_step *s, float *out, const float *inp) {
    const int64_t d = gf_layer_dim(s->cfg, s->layer), dh = d / gf_attn_n_head(s->cfg, s->layer), n = s->pos + 1;
    const int form = form_of(s->cfg, s->layer);
    const float scale = 1.0f / sqrtf((float)dh);
    float *qkv = s->scratch, *o = qkv + 3 * d, *zr = o + d, *a = zr + s->cap;
    gf_linear_forward(qkv, inp, d, s->p[GF_ATTN_QKV_W], d, s->p[GF_ATTN_QKV_B], 1, d, 3 * d, 0.0f);
    for (int64_t j = 0; j < 2 * d; j++) s->state[s->pos * 2 * d + j] = qkv[d + j];
    for (int64_t h = 0; h < d / dh; h++) {
        const float *q = qkv + h * dh, *k = s->state + h * dh, *v = k + d;
        if (form == FORM_L1)
            l1_scores(zr, q, k, 2 * d, n, dh, scale);
        else
            for (int64_t j = 0; j < n; j++) {
                float acc = 0.0f;
                for (int64_t e = 0; e < dh; e++) acc += q[e] * k[j * 2 * d + e];
                zr[j] = scale * acc;
            }
        weights_row(a, zr, n, NULL, form);
        for (int64_t e = 0; e < dh; e++) o[h * dh + e] = 0.0f;
        for (int64_t j = 0; j < n; j++)
            for (int64_t e = 0; e < dh; e++) o[h * dh + e] += a[j] * v[j * 2 * d + e];
    }
    gf_linear_forward(out, o, d, s->p[GF_ATTN_PROJ_W], d, s->p[GF_ATTN_PROJ_B], 1, d, d, 0.0f);
}

const gf_mixer_ops gf_mixer_attn_form = {
    .version = GF_MIXER_OPS_VERSION,
    .name = "attn-form",
    .letter = 'x',
    .help = "Attention in other forms (attention deconstructed, arXiv 2510.11602): attention's tensors and heads,\n"
            "the weights relu(q.k / sqrt(dh)) / n, sigmoid(q.k / sqrt(dh) - ln n), or a softmax of the L1\n"
            "distance -|q - k|_1 / sqrt(dh) (no dot products); key form. O(T^2 d); streams (causal), KV cache.",
    .config_size = sizeof(attn_form_config),
    .keys = KEYS,
    .n_keys = (int)(sizeof KEYS / sizeof KEYS[0]),
    .check = gf_attn_check,
    .gated_skip = false,
    .directions = GF_MIX_CAUSAL | GF_MIX_BIDIRECTIONAL,
    .masks = true,
    .param_specs = gf_attn_param_specs,
    .saved_floats = x_saved_floats,
    .scratch_floats = x_scratch_floats,
    .forward = x_forward,
    .backward = x_backward,
    .state_floats = x_state_floats,
    .step_scratch_floats = x_step_scratch_floats,
    .step = x_step,
};
