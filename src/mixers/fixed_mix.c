/* Sequence-independent mixing: attention whose weights are learned per head and per relative offset and do
 * not depend on the tokens (issue 55's "attention deconstructed": the principle of weights that adapt to
 * each input relaxed; Xue, Moosavi and Aletras 2025, "Deconstructing Attention", arXiv 2510.11602). For
 * head h and query t over the keys s within the span (|t - s| < S, and s <= t when causal; padded keys
 * excluded):
 *     a_ts = softmax_s(rel[h, k(t, s)]),   o_t = sum_s a_ts v_s,   out = proj(o),   v = x W_v^T + b_v
 * with k = t - s (causal, S offsets) or s - t + S - 1 (bidirectional, 2S - 1 offsets); S = span, or max_len
 * when span is 0. rel starts at zero: every query begins as the mean of the values it sees. span 1 is "no
 * mixing": a position sees only itself (out = proj(v(x)), the linear map of the values), rel then has one
 * offset, whose gradient is 0. The same tensors as attention minus the queries and keys: v (d, d) and
 * proj (d, d) with their biases, and rel (n_head, offsets). Cost O(T S d), computed band by band (no T x T
 * tensor); streams (causal) with a cache of d floats a position. */
#include <math.h>
#include <stddef.h>

#include "base/error.h"
#include "compute/parallel.h"
#include "mixers/attn_common.h"
#include "mixers/mixer.h"
#include "ops/ops.h"

typedef struct {
    int64_t n_head; /* gf_attn_config's members first: gf_attn_n_head and gf_attn_check read it */
    int64_t span;
} fixed_mix_config;

static const gf_cfg_key KEYS[] = {
    GF_ATTN_N_HEAD_KEY(fixed_mix_config),
    {.name = "span", .type = GF_KEY_INT, .off = offsetof(fixed_mix_config, span), .lo = 0, .hi = 1 << 20, .def = "0",
     .help = "offsets a query sees: keys with |t - s| < span (0: max_len); 1 = no mixing (each position itself)"},
};

enum { P_VW, P_VB, P_PW, P_PB, P_REL };

static bool causal_layer(const gf_config *cfg, int layer) {
    return gf_stack_direction(cfg, gf_layer_stack(cfg, layer)) == GF_CAUSAL;
}

static int64_t span(const gf_config *cfg, int layer) {
    const int64_t s = ((const fixed_mix_config *)gf_layer_mcfg(cfg, layer))->span;
    return s ? s : cfg->max_len;
}

/* rel's offsets per head */
static int64_t n_rel(const gf_config *cfg, int layer) {
    return causal_layer(cfg, layer) ? span(cfg, layer) : 2 * span(cfg, layer) - 1;
}

static int f_check(const gf_config *cfg, int layer, const char *src) {
    if (gf_attn_check(cfg, layer, src)) return -1;
    const int64_t s = ((const fixed_mix_config *)gf_layer_mcfg(cfg, layer))->span;
    if (s > cfg->max_len)
        return gf_fail("%s: layer %d: mixer \"fixed-mix\": span %lld is more than max_len %lld (rel has one weight "
                       "per offset up to the span)\nHINT: --set layers.%d.span=N with N <= %lld, or 0 for max_len",
                       src, layer, (long long)s, (long long)cfg->max_len, layer, (long long)cfg->max_len);
    return 0;
}

static int f_param_specs(const gf_config *cfg, int layer, gf_param_spec *s) {
    const int64_t d = gf_layer_dim(cfg, layer);
    gf_param_spec_set(&s[P_VW], "v.weight", 2, d, d, GF_INIT_NORMAL);
    gf_param_spec_set(&s[P_VB], "v.bias", 1, d, 0, GF_INIT_ZERO);
    gf_param_spec_set(&s[P_PW], "proj.weight", 2, d, d, GF_INIT_NORMAL);
    gf_param_spec_set(&s[P_PB], "proj.bias", 1, d, 0, GF_INIT_ZERO);
    gf_param_spec_set(&s[P_REL], "rel", 2, gf_attn_n_head(cfg, layer), n_rel(cfg, layer), GF_INIT_ZERO);
    return 5;
}

/* One query's band: the keys [*lo, *lo + n) it may see, and their weights into w (n floats): the softmax of
 * rel_h over the offsets, padded keys (km[s] == 0) at 0; every weight 0 when no key is real. Returns n. Shared
 * by forward, backward and step, so that each computes the same bits. */
static int64_t band(const float *rel_h, int64_t t, int64_t T, int64_t S, bool causal, const uint8_t *km, float *w,
                    int64_t *lo) {
    const int64_t a = t - S + 1 > 0 ? t - S + 1 : 0, b = causal ? t : (t + S - 1 < T - 1 ? t + S - 1 : T - 1);
    const int64_t n = b - a + 1;
    float mx = -INFINITY, sum = 0.0f;
    for (int64_t s = a; s <= b; s++) {
        const float l = rel_h[causal ? t - s : s - t + S - 1];
        w[s - a] = km && !km[s] ? -INFINITY : l;
        mx = w[s - a] > mx ? w[s - a] : mx;
    }
    for (int64_t j = 0; j < n; j++) {
        w[j] = mx == -INFINITY ? 0.0f : expf(w[j] - mx);
        sum += w[j];
    }
    for (int64_t j = 0; j < n && sum > 0.0f; j++) w[j] /= sum;
    *lo = a;
    return n;
}

/* o_h (dh) = sum_j w[j] v_(lo + j),h over rows of stride ld */
static void mix_row(float *o, const float *w, const float *v, int64_t ld, int64_t n, int64_t dh) {
    for (int64_t e = 0; e < dh; e++) o[e] = 0.0f;
    for (int64_t j = 0; j < n; j++) {
        const float *vj = v + j * ld;
#pragma omp simd
        for (int64_t e = 0; e < dh; e++) o[e] += w[j] * vj[e];
    }
}

/* saved: v (N, d) | o (N, d) */
static int64_t f_saved_floats(const gf_config *cfg, int layer, int64_t B, int64_t T) {
    return 2 * B * T * gf_layer_dim(cfg, layer);
}

/* scratch: do (N, d) | dv (N, d) | drel per (b, h) (B, H, offsets) | per thread w and dw (2 x offsets) */
static int64_t f_scratch_floats(const gf_config *cfg, int layer, int64_t B, int64_t T, int n_threads) {
    const int64_t R = n_rel(cfg, layer);
    return 2 * B * T * gf_layer_dim(cfg, layer) + B * gf_attn_n_head(cfg, layer) * R + (int64_t)n_threads * 2 * R;
}

typedef struct {
    int64_t B, T, d, H, dh, S, R;
    bool causal;
} dims;

static dims dims_of(const gf_mixer_call *c) {
    const int64_t d = gf_layer_dim(c->cfg, c->layer), H = gf_attn_n_head(c->cfg, c->layer);
    return (dims){c->B, c->T, d, H, d / H, span(c->cfg, c->layer), n_rel(c->cfg, c->layer), !c->bidirectional};
}

static void f_forward(const gf_mixer_call *c, float *out, const float *inp) {
    const dims z = dims_of(c);
    const int64_t N = z.B * z.T;
    float *v = c->saved, *o = v + N * z.d, *wbase = c->scratch + 2 * N * z.d + z.B * z.H * z.R;
    gf_linear_forward(v, inp, z.d, c->p[P_VW], z.d, c->p[P_VB], N, z.d, z.d, 0.0f);
    GF_PAR_FOR(N * z.d * z.S > GF_PAR_MIN, for (int64_t bh = 0; bh < z.B * z.H; bh++) {
        const int64_t b = bh / z.H, h = bh % z.H;
        float *w = wbase + (int64_t)gf_thread_id() * 2 * z.R;
        const float *vb = v + b * z.T * z.d + h * z.dh;
        for (int64_t t = 0; t < z.T; t++) {
            int64_t lo;
            const int64_t n = band(c->p[P_REL] + h * z.R, t, z.T, z.S, z.causal, c->mask ? c->mask + b * z.T : NULL, w, &lo);
            mix_row(o + (b * z.T + t) * z.d + h * z.dh, w, vb + lo * z.d, z.d, n, z.dh);
        }
    });
    gf_linear_forward(out, o, z.d, c->p[P_PW], z.d, c->p[P_PB], N, z.d, z.d, 0.0f);
}

/* Head h of row b backward: dv (its columns, rows of b) += a^T do, and drel_bh (R) = the offsets' gradients. */
static void head_backward(const gf_mixer_call *c, const dims *z, int64_t b, int64_t h, const float *v,
                          const float *dO, float *dv, float *drel_bh, float *w) {
    float *dw = w + z->R;
    const float *vb = v + b * z->T * z->d + h * z->dh;
    for (int64_t k = 0; k < z->R; k++) drel_bh[k] = 0.0f;
    for (int64_t t = 0; t < z->T; t++) {
        int64_t lo;
        const int64_t n = band(c->p[P_REL] + h * z->R, t, z->T, z->S, z->causal, c->mask ? c->mask + b * z->T : NULL, w, &lo);
        const float *dot = dO + (b * z->T + t) * z->d + h * z->dh;
        float pd = 0.0f;
        for (int64_t j = 0; j < n; j++) {
            const float *vj = vb + (lo + j) * z->d;
            float s = 0.0f;
#pragma omp simd reduction(+ : s)
            for (int64_t e = 0; e < z->dh; e++) s += dot[e] * vj[e];
            dw[j] = s;
            pd += w[j] * s;
        }
        for (int64_t j = 0; j < n; j++) {
            const int64_t s = lo + j;
            drel_bh[z->causal ? t - s : s - t + z->S - 1] += w[j] * (dw[j] - pd);
            float *dvj = dv + (b * z->T + s) * z->d + h * z->dh;
#pragma omp simd
            for (int64_t e = 0; e < z->dh; e++) dvj[e] += w[j] * dot[e];
        }
    }
}

static void f_backward(const gf_mixer_call *c, float *dinp, const float *dout, const float *inp) {
    const dims z = dims_of(c);
    const int64_t N = z.B * z.T;
    const float *v = c->saved, *o = v + N * z.d;
    float *dO = c->scratch, *dv = dO + N * z.d, *drel = dv + N * z.d, *wbase = drel + z.B * z.H * z.R;
    gf_linear_backward_set(dO, c->g[P_PW], z.d, c->g[P_PB], dout, o, z.d, c->p[P_PW], z.d, N, z.d, z.d);
    gf_zero(dv, N * z.d);
    GF_PAR_FOR(N * z.d * z.S > GF_PAR_MIN, for (int64_t bh = 0; bh < z.B * z.H; bh++)
                   head_backward(c, &z, bh / z.H, bh % z.H, v, dO, dv, drel + bh * z.R,
                                 wbase + (int64_t)gf_thread_id() * 2 * z.R););
    for (int64_t b = 0; c->g[P_REL] && b < z.B; b++) /* in row order: the same bits on any number of threads */
        for (int64_t k = 0; k < z.H * z.R; k++) c->g[P_REL][k] += drel[b * z.H * z.R + k];
    gf_linear_backward(dinp, z.d, c->g[P_VW], z.d, c->g[P_VB], dv, inp, z.d, c->p[P_VW], z.d, N, z.d, z.d);
}

/* ---- streaming: a cache of the values ------------------------------------------------------------------ */

static int64_t f_state_floats(const gf_config *cfg, int layer, int64_t cap) { return cap * gf_layer_dim(cfg, layer); }

/* step scratch: o (d) | w (offsets) */
static int64_t f_step_scratch_floats(const gf_config *cfg, int layer, int64_t cap) {
    (void)cap;
    return gf_layer_dim(cfg, layer) + n_rel(cfg, layer);
}

static void f_step(const gf_mixer_step *s, float *out, const float *inp) {
    const int64_t d = gf_layer_dim(s->cfg, s->layer), H = gf_attn_n_head(s->cfg, s->layer), dh = d / H;
    const int64_t S = span(s->cfg, s->layer), R = n_rel(s->cfg, s->layer);
    float *o = s->scratch, *w = o + d, *v = s->state + s->pos * d;
    gf_linear_forward(v, inp, d, s->p[P_VW], d, s->p[P_VB], 1, d, d, 0.0f);
    for (int64_t h = 0; h < H; h++) {
        int64_t lo;
        const int64_t n = band(s->p[P_REL] + h * R, s->pos, s->pos + 1, S, true, NULL, w, &lo);
        mix_row(o + h * dh, w, s->state + lo * d + h * dh, d, n, dh);
    }
    gf_linear_forward(out, o, d, s->p[P_PW], d, s->p[P_PB], 1, d, d, 0.0f);
}

const gf_mixer_ops gf_mixer_fixed_mix = {
    .version = GF_MIXER_OPS_VERSION,
    .name = "fixed-mix",
    .letter = 'f',
    .help = "Sequence-independent mixing (attention deconstructed, arXiv 2510.11602): each head's weights over the\n"
            "keys are a softmax of learned logits per relative offset, the same for every input; values and output\n"
            "projection as attention's. span 1: no mixing. O(T span d); streams (causal) with d floats a position.",
    .config_size = sizeof(fixed_mix_config),
    .keys = KEYS,
    .n_keys = (int)(sizeof KEYS / sizeof KEYS[0]),
    .check = f_check,
    .gated_skip = false,
    .directions = GF_MIX_CAUSAL | GF_MIX_BIDIRECTIONAL,
    .masks = true,
    .param_specs = f_param_specs,
    .saved_floats = f_saved_floats,
    .scratch_floats = f_scratch_floats,
    .forward = f_forward,
    .backward = f_backward,
    .state_floats = f_state_floats,
    .step_scratch_floats = f_step_scratch_floats,
    .step = f_step,
};
