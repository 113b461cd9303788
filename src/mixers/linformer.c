/* Linformer (Wang et al. 2020, "Linformer: Self-Attention with Linear Complexity", arXiv 2006.04768):
 * multi-head attention whose keys and values are first projected along the sequence to k_proj rows,
 * K' = E[:, :T] K and V' = F[:, :T] V, so each of the T queries attends to k_proj projected keys: O(T k_proj d)
 * instead of O(T^2 d). E and F (k_proj, max_len) are trained and shared by every head (the paper's headwise
 * sharing); a sequence of T positions uses their first T columns. Padded positions' keys and values are zeroed
 * before the projection, so padding changes nothing. Bidirectional only: every projected key mixes all
 * positions, the later ones too. docs/model.md has the exact math.
 *
 * The attention itself is src/ops/sdpa.c's (T queries over k_proj keys, q read in place in the fused qkv);
 * the qkv and output projections are attn_common's. */
#include <stddef.h>

#include "compute/blas.h"
#include "base/error.h"
#include "mixers/attn_common.h"
#include "mixers/mixer.h"
#include "ops/ops.h"

typedef struct linformer_config {
    int64_t n_head; /* gf_attn_config's members first */
    int64_t k_proj;
} linformer_config;

static const gf_cfg_key KEYS[] = {
    GF_ATTN_N_HEAD_KEY(linformer_config),
    {.name = "k_proj", .type = GF_KEY_INT, .off = offsetof(linformer_config, k_proj), .lo = 1, .hi = 1 << 24,
     .def = "32", .help = "rows of E and F: the sequence is projected to this many keys and values (<= max_len)"},
};

enum { LF_E = GF_ATTN_N_PARAMS, LF_F, LF_N_PARAMS };

static int64_t k_proj(const gf_config *cfg, int layer) {
    return ((const linformer_config *)gf_layer_mcfg(cfg, layer))->k_proj;
}

static int l_check(const gf_config *cfg, int layer, const char *src) {
    if (gf_attn_check(cfg, layer, src)) return -1;
    if (cfg->pos != GF_POS_LEARNED)
        return gf_fail("%s: layer %d: mixer \"linformer\" needs pos \"learned\": its E and F have one column per "
                       "position up to max_len, and only learned positions hold every sequence to max_len\nHINT: "
                       "--set pos=learned", src, layer);
    if (k_proj(cfg, layer) > cfg->max_len)
        return gf_fail("%s: layer %d: linformer's k_proj %lld is above max_len %lld: E and F (k_proj, max_len) would "
                       "project a sequence onto more rows than it can have positions\nHINT: --set k_proj=%lld (or "
                       "less), or raise max_len", src, layer, (long long)k_proj(cfg, layer), (long long)cfg->max_len,
                       (long long)cfg->max_len);
    return 0;
}

static int l_param_specs(const gf_config *cfg, int layer, gf_param_spec *s) {
    gf_attn_param_specs(cfg, layer, s);
    gf_param_spec_set(&s[LF_E], "E", 2, k_proj(cfg, layer), cfg->max_len, GF_INIT_NORMAL);
    gf_param_spec_set(&s[LF_F], "F", 2, k_proj(cfg, layer), cfg->max_len, GF_INIT_NORMAL);
    return LF_N_PARAMS;
}

/* saved: qkv (N,3d), padded rows' k and v zeroed | K' (B,kp,d) | V' (B,kp,d) | o (N,d) | lse (B,H,T) */
static int64_t l_saved_floats(const gf_config *cfg, int layer, int64_t B, int64_t T) {
    const int64_t N = B * T, d = gf_layer_dim(cfg, layer);
    return 4 * N * d + 2 * B * k_proj(cfg, layer) * d + B * gf_attn_n_head(cfg, layer) * T;
}

/* scratch: sdpa's (kp) | dO (N,d) | dqkv (N,3d) | dK' (B,kp,d) | dV' (B,kp,d) */
static int64_t l_scratch_floats(const gf_config *cfg, int layer, int64_t B, int64_t T, int n_threads) {
    const int64_t N = B * T, d = gf_layer_dim(cfg, layer), kp = k_proj(cfg, layer);
    return gf_sdpa_scratch_floats(kp, d / gf_attn_n_head(cfg, layer), n_threads) + 4 * N * d + 2 * B * kp * d;
}

/* The layer's buffers in saved and scratch, and the sdpa call over the projected keys. */
typedef struct lf_run {
    int64_t B, T, d, kp, ld;   /* ld: max_len, the row stride of E and F */
    float *qkv, *Kp, *Vp, *o, *lse;
    float *dO, *dqkv, *dKp, *dVp;
    gf_sdpa sdpa;
} lf_run;

static lf_run lf_layout(const gf_mixer_call *c) {
    lf_run r = {.B = c->B, .T = c->T, .d = gf_layer_dim(c->cfg, c->layer), .kp = k_proj(c->cfg, c->layer),
                .ld = c->cfg->max_len};
    const int64_t N = r.B * r.T, P = r.B * r.kp * r.d;
    r.qkv = c->saved, r.Kp = r.qkv + 3 * N * r.d, r.Vp = r.Kp + P, r.o = r.Vp + P, r.lse = r.o + N * r.d;
    r.dO = c->scratch + gf_sdpa_scratch_floats(r.kp, r.d / gf_attn_n_head(c->cfg, c->layer), c->n_threads), r.dqkv = r.dO + N * r.d;
    r.dKp = r.dqkv + 3 * N * r.d, r.dVp = r.dKp + P;
    r.sdpa = (gf_sdpa){.B = r.B, .T = r.T, .S = r.kp, .H = gf_attn_n_head(c->cfg, c->layer), .d = r.d,
                       .ldq = 3 * r.d, .kmask = NULL, .scratch = c->scratch, .n_threads = c->n_threads};
    return r;
}

static void l_forward(const gf_mixer_call *c, float *out, const float *inp) {
    const lf_run r = lf_layout(c);
    const int64_t d = r.d, kp = r.kp, T = r.T;
    gf_attn_qkv_forward(c, r.qkv, inp);
    gf_attn_zero_padded(r.qkv + d, 3 * d, 2 * d, c->mask, r.B * T); /* padded keys and values: 0 */
    for (int64_t b = 0; b < r.B; b++) {
        const float *k = r.qkv + b * T * 3 * d + d, *v = k + d;
        gf_sgemm(false, false, kp, d, T, 1.0f, c->p[LF_E], r.ld, k, 3 * d, 0.0f, r.Kp + b * kp * d, d); /* E K */
        gf_sgemm(false, false, kp, d, T, 1.0f, c->p[LF_F], r.ld, v, 3 * d, 0.0f, r.Vp + b * kp * d, d); /* F V */
    }
    gf_sdpa_forward(&r.sdpa, r.o, r.lse, r.qkv, r.Kp, r.Vp);
    gf_attn_proj_forward(c, out, r.o);
}

/* For one batch row: dP[:, :T] += dP' X^T (if dP) and dX = P[:, :T]^T dP' (overwritten), where X' = P X. */
static void seq_project_back(const lf_run *r, const float *P, float *dP, const float *dXp, const float *X,
                             float *dX) {
    if (dP) gf_sgemm(false, true, r->kp, r->T, r->d, 1.0f, dXp, r->d, X, 3 * r->d, 1.0f, dP, r->ld);
    gf_sgemm(true, false, r->T, r->d, r->kp, 1.0f, P, r->ld, dXp, r->d, 0.0f, dX, 3 * r->d);
}

static void l_backward(const gf_mixer_call *c, float *dinp, const float *dout, const float *inp) {
    const lf_run r = lf_layout(c);
    const int64_t d = r.d, kp = r.kp, T = r.T, N = r.B * T;
    gf_attn_proj_backward(c, r.dO, dout, r.o);
    gf_zero(r.dqkv, 3 * N * d);
    gf_zero(r.dKp, 2 * r.B * kp * d);
    gf_sdpa_backward(&r.sdpa, r.dqkv, r.dKp, r.dVp, r.dO, r.lse, r.qkv, r.Kp, r.Vp);
    for (int64_t b = 0; b < r.B; b++) {
        const int64_t row = b * T * 3 * d;
        seq_project_back(&r, c->p[LF_E], c->g[LF_E], r.dKp + b * kp * d, r.qkv + row + d, r.dqkv + row + d);
        seq_project_back(&r, c->p[LF_F], c->g[LF_F], r.dVp + b * kp * d, r.qkv + row + 2 * d, r.dqkv + row + 2 * d);
    }
    gf_attn_zero_padded(r.dqkv + d, 3 * d, 2 * d, c->mask, N); /* a padded key or value is the constant 0 */
    gf_attn_qkv_backward(c, dinp, r.dqkv, inp);
}

const gf_mixer_ops gf_mixer_linformer = {
    .version = GF_MIXER_OPS_VERSION,
    .name = "linformer",
    .letter = 'l',
    .help = "Multi-head attention over keys and values projected along the sequence (Linformer, Wang et al. 2020,\n"
            "arXiv 2006.04768): K' = E[:, :T] K, V' = F[:, :T] V with trained E, F (k_proj, max_len) shared by the\n"
            "heads, then softmax(q K'^T / sqrt(dh)) V'. Linear in the sequence length (T k_proj d per layer);\n"
            "bidirectional only (each projected key mixes every position, later ones too), sequences of at most\n"
            "max_len positions (learned positions), no streaming.",
    .config_size = sizeof(linformer_config),
    .keys = KEYS,
    .n_keys = (int)(sizeof KEYS / sizeof KEYS[0]),
    .check = l_check,
    .gated_skip = false,
    .directions = GF_MIX_BIDIRECTIONAL,
    .masks = true,
    .param_specs = l_param_specs,
    .saved_floats = l_saved_floats,
    .scratch_floats = l_scratch_floats,
    .forward = l_forward,
    .backward = l_backward,
};
