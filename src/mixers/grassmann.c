/* Grassmann mixing (docs/model.md; arXiv 2512.19428 section 3.2 with look-back pairing).
 *
 *   z = red(h)                         (N, r)
 *   pbar[t] = mean_{s in S_t} p(z_t, z_{t+s}) / max(|p|, eps)     (N, C), C = r(r-1)/2
 *   S_t: the partner steps s whose partner t+s is in the sequence, not padding and (window W > 0) in the
 *   same window floor(t / W); causal: s = -D for each offset D; bidirectional: s = -D and s = +D
 *   g = plucker(pbar), g[t] = 0 where S_t is empty               (N, d)
 *   a = sigmoid(gate([h; g])),  m = a*h + (1-a)*g,  out = extra_proj ? out(m) : m
 *
 * The mean is taken before the C -> d projection (exact, since the projection is affine and rows with
 * no valid offset are zeroed), so one GEMM serves all offsets. The Plücker tensor is never stored: the
 * forward keeps z, g, a (and m with extra_proj) and the backward recomputes pbar in scratch.
 *
 * The paper's ablations (keys plucker and gate, both true by default):
 *   plucker: false: a pair enters as [z_later; z_earlier] (2r) through pair.weight/bias; by the same
 *     affinity, the mean over S_t of W [z_later; z_earlier] + b is W [ubar; vbar] + b with ubar, vbar
 *     the means of the pairs' halves: one GEMM on (N, 2r) rows (pair_mean)
 *   gate: false: no gate tensors; m = (h + g) / 2 (a is not kept)
 * And search dimensions (issue 55):
 *   gate_form scalar: one a per position, a = sigmoid(w . [h; g] + b) for every channel (gate.weight (1, 2d)),
 *     kept spread over (N, d) as the channel gate's a is;
 *   conv K > 0: the reduction reads u = h + dwconv_K(h) in place of h, a causal depthwise convolution over the
 *     last K positions (u_t = h_t + b + sum_k w_k h_{t-k}, per channel; a padded position reads as 0), its
 *     tensors starting at 0 so that the layer starts as the one without it; the gate still reads h;
 *   offset_mix learned: the mean over S_t becomes a weighted mean, pbar[t] = sum_{s in S_t} e_s phat_s / sum_{s in
 *     S_t} e_s with e_s = exp(l_D) of the slot's offset D, a softmax over the partners that exist: the logits l =
 *     mix.bias (n_offsets), starting at 0 (the mean); offset_mix token: l = mix(h_t) per position, mix.weight
 *     (n_offsets, d) and mix.bias, both starting at 0 (a gate per offset that reads the token); plucker true only. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/error.h"
#include "base/mem.h"
#include "compute/fastmath.h"
#include "compute/parallel.h"
#include "mixers/grassmann.h"
#include "mixers/mixer.h"
#include "ops/ops.h"

/* Tensors in order: red, the pair projection (plucker or pair), the gate (gate: true), out (extra_proj). */
enum { P_RED_W, P_RED_B, P_PROJ_W, P_PROJ_B, P_GATE_W, P_GATE_B };

#define OFF(f) offsetof(gf_grassmann_config, f)
static const char *const GATE_FORMS[] = {"channel", "scalar", NULL}; /* gf_grassmann_config.gate_form */
static const char *const OFFSET_MIXES[] = {"mean", "learned", "token", NULL}; /* gf_grassmann_config.offset_mix */
static const gf_cfg_key KEYS[] = {
    {.name = "rank", .type = GF_KEY_INT, .off = OFF(rank), .lo = 2, .hi = 256, .def = "32",
     .help = "r, the reduced dimension; a pair has r(r-1)/2 Pluecker coordinates"},
    {.name = "offsets", .type = GF_KEY_INTS, .off = OFF(offsets), .count_off = OFF(n_offsets),
     .max_count = GF_MAX_OFFSETS, .lo = 1, .hi = 1 << 20, .def = "[1,2,4,8,12,16]",
     .help = "the distances D: token t is paired with token t-D"},
    {.name = "plucker_eps", .type = GF_KEY_FLOAT, .off = OFF(plucker_eps), .lo = 0, .hi = 1e30,
     .flags = GF_KEY_LO_OPEN, .def = "1e-8", .help = "|p| is clamped at this before p is normalised"},
    {.name = "heads", .type = GF_KEY_INT, .off = OFF(heads), .lo = 1, .hi = 128, .def = "1",
     .help = "mixing heads: z is split into this many groups of rank/heads dimensions, each with its own "
             "Pluecker coordinates (heads x C(rank/heads, 2) in all)"},
    {.name = "window", .type = GF_KEY_INT, .off = OFF(window), .lo = 0, .hi = 1 << 24, .def = "0",
     .help = "> 0: a token pairs only with tokens of its own window of this many positions (windows tile the "
             "sequence, stride = window); 0: the whole sequence"},
    {.name = "grid", .type = GF_KEY_INT, .off = OFF(grid), .lo = 0, .hi = 1 << 16, .def = "0",
     .help = "> 0: the positions are a grid of this many columns, row by row (an image's patches): offset D is "
             "the step of dr rows and dc columns, D = dr grid + dc with -grid/2 < dc <= grid/2 (grid 7: 1 is "
             "(0,1), 7 is (1,0), 8 is (1,1), 6 is (1,-1)); a step that would wrap round a row's end pairs nothing"},
    {.name = "extra_proj", .type = GF_KEY_BOOL, .off = OFF(extra_proj), .def = "false",
     .help = "the paper's extra Linear(d, d) after the gate"},
    {.name = "plucker", .type = GF_KEY_BOOL, .off = OFF(plucker), .def = "true",
     .help = "false: the paper's ablation without Pluecker features: a pair enters as its concatenation "
             "[z_later; z_earlier] through pair.weight (d, 2r); needs heads 1, ignores plucker_eps"},
    {.name = "gate", .type = GF_KEY_BOOL, .off = OFF(gate), .def = "true",
     .help = "false: the paper's ablation without the gate: no gate tensors, the output is (h + g) / 2"},
    {.name = "gate_form", .type = GF_KEY_ENUM, .off = OFF(gate_form), .names = GATE_FORMS, .def = "\"channel\"",
     .help = "the gate's form: channel (a = sigmoid(gate([h; g])), one per channel, gate.weight (d, 2d)) or scalar "
             "(one a per position for every channel, gate.weight (1, 2d)); needs gate true"},
    {.name = "conv", .type = GF_KEY_INT, .off = OFF(conv), .lo = 0, .hi = 16, .def = "0",
     .help = "K > 0: the reduction reads h plus a causal depthwise convolution of h over the last K positions "
             "(conv.weight (d, K) and conv.bias, starting at 0); causal layers only; 0: none"},
    {.name = "offset_mix", .type = GF_KEY_ENUM, .off = OFF(offset_mix), .names = OFFSET_MIXES, .def = "\"mean\"",
     .help = "how a token's pairs are combined: mean (the paper's), learned (a softmax over the partners that exist "
             "of one learned logit per offset, mix.bias (n_offsets), starting at 0: the mean) or token (the logits "
             "read the token: mix(h_t), mix.weight (n_offsets, d) and mix.bias, starting at 0); needs plucker true"},
};
#undef OFF

static const gf_grassmann_config *GC(const gf_config *cfg, int layer) { return gf_layer_mcfg(cfg, layer); }

static int g_check(const gf_config *cfg, int layer, const char *src) {
    const gf_grassmann_config *g = GC(cfg, layer);
    if (g->rank > gf_layer_dim(cfg, layer))
        return gf_fail("%s: layer %d: rank is %lld; expected 2 <= rank <= min(256, d_model = %lld)", src, layer,
                       (long long)g->rank, (long long)gf_layer_dim(cfg, layer));
    if (g->heads < 1 || g->rank % g->heads || g->rank / g->heads < 2)
        return gf_fail("%s: layer %d: rank %lld in %lld heads; expected rank divisible by heads, with at least 2 "
                       "dimensions per head", src, layer, (long long)g->rank, (long long)g->heads);
    if (!g->plucker && g->heads != 1)
        return gf_fail("%s: layer %d: heads is %lld with plucker false; heads split the Pluecker coordinates, "
                       "which plucker false does not compute: set heads 1 or plucker true", src, layer,
                       (long long)g->heads);
    if (g->gate_form == GF_GATE_SCALAR && !g->gate)
        return gf_fail("%s: layer %d: gate_form scalar with gate false; there is no gate to shape\nHINT: gate true, or "
                       "gate_form channel (the default)", src, layer);
    if (g->offset_mix != GF_OFFSET_MEAN && !g->plucker)
        return gf_fail("%s: layer %d: offset_mix %s with plucker false; the learned mixture weighs Pluecker "
                       "terms\nHINT: plucker true, or offset_mix mean (the default)", src, layer,
                       OFFSET_MIXES[g->offset_mix]);
    if (g->conv && gf_stack_direction(cfg, gf_layer_stack(cfg, layer)) != GF_CAUSAL)
        return gf_fail("%s: layer %d: conv %lld in a bidirectional layer; the convolution is causal (it reads "
                       "positions t-K+1 .. t)\nHINT: conv 0 in bidirectional models", src, layer, (long long)g->conv);
    return 0;
}

/* The dimensions of one head's reduction, and its Plücker coordinates. */
static int64_t head_rank(const gf_grassmann_config *g) { return g->rank / g->heads; }
static int64_t head_pairs(const gf_grassmann_config *g) { return head_rank(g) * (head_rank(g) - 1) / 2; }
static int64_t n_pairs(const gf_config *cfg, int layer) { return GC(cfg, layer)->heads * head_pairs(GC(cfg, layer)); }
/* The width of a pair's features before the projection: the Plücker coordinates, or [z_later; z_earlier]. */
static int64_t feat_dim(const gf_config *cfg, int layer) {
    return GC(cfg, layer)->plucker ? n_pairs(cfg, layer) : 2 * GC(cfg, layer)->rank;
}
/* Where out.weight is in the tensor list (out.bias follows), conv.weight (conv.bias follows), mix.weight (token only)
 * and mix.bias. */
static int out_index(const gf_grassmann_config *g) { return g->gate ? 6 : 4; }
static int conv_index(const gf_grassmann_config *g) { return out_index(g) + (g->extra_proj ? 2 : 0); }
static int mix_index(const gf_grassmann_config *g) { return conv_index(g) + (g->conv ? 2 : 0); }
static int mix_bias_index(const gf_grassmann_config *g) { return mix_index(g) + (g->offset_mix == GF_OFFSET_TOKEN); }
static bool token_mix(const gf_grassmann_config *g) { return g->offset_mix == GF_OFFSET_TOKEN; }
/* per position, the logits of the token mixture (N, n_offsets) */
static int64_t token_logits(const gf_grassmann_config *g, int64_t N) { return token_mix(g) ? N * g->n_offsets : 0; }

/* The gate's outputs: one per channel, or one (gate_form scalar) that every channel uses. */
static int64_t gate_out(const gf_grassmann_config *g, int64_t d) { return g->gate_form == GF_GATE_SCALAR ? 1 : d; }

static int g_param_specs(const gf_config *cfg, int layer, gf_param_spec *s) {
    const gf_grassmann_config *g = GC(cfg, layer);
    int64_t d = gf_layer_dim(cfg, layer), r = g->rank, F = feat_dim(cfg, layer);
    gf_param_spec_set(&s[P_RED_W], "red.weight", 2, r, d, GF_INIT_NORMAL);
    gf_param_spec_set(&s[P_RED_B], "red.bias", 1, r, 0, GF_INIT_ZERO);
    gf_param_spec_set(&s[P_PROJ_W], g->plucker ? "plucker.weight" : "pair.weight", 2, d, F, GF_INIT_NORMAL);
    gf_param_spec_set(&s[P_PROJ_B], g->plucker ? "plucker.bias" : "pair.bias", 1, d, 0, GF_INIT_ZERO);
    if (g->gate) {
        gf_param_spec_set(&s[P_GATE_W], "gate.weight", 2, gate_out(g, d), 2 * d, GF_INIT_NORMAL);
        gf_param_spec_set(&s[P_GATE_B], "gate.bias", 1, gate_out(g, d), 0, GF_INIT_ZERO);
    }
    const int o = out_index(g), c = conv_index(g);
    if (g->extra_proj) {
        gf_param_spec_set(&s[o], "out.weight", 2, d, d, GF_INIT_NORMAL);
        gf_param_spec_set(&s[o + 1], "out.bias", 1, d, 0, GF_INIT_ZERO);
    }
    if (g->conv) {
        gf_param_spec_set(&s[c], "conv.weight", 2, d, g->conv, GF_INIT_ZERO);
        gf_param_spec_set(&s[c + 1], "conv.bias", 1, d, 0, GF_INIT_ZERO);
    }
    if (g->offset_mix == GF_OFFSET_MEAN) return mix_index(g);
    if (token_mix(g)) gf_param_spec_set(&s[mix_index(g)], "mix.weight", 2, g->n_offsets, d, GF_INIT_ZERO);
    gf_param_spec_set(&s[mix_bias_index(g)], "mix.bias", 1, g->n_offsets, 0, GF_INIT_ZERO);
    return mix_bias_index(g) + 1;
}

/* saved: z (N,r) | g (N,d) | a (N,d) if gate | m (N,d) if extra_proj | u (N,d) if conv | the token mixture's
 * logits (N, n_offsets) */
static int64_t g_saved_floats(const gf_config *cfg, int layer, int64_t B, int64_t T) {
    const gf_grassmann_config *g = GC(cfg, layer);
    int64_t N = B * T, d = gf_layer_dim(cfg, layer);
    return N * g->rank + N * d + (g->gate ? N * d : 0) + (g->extra_proj ? N * d : 0) + (g->conv ? N * d : 0) +
           token_logits(g, N);
}

/* The saved gate activations a (NULL when gate is false) and m (out when there is no extra_proj). */
static float *saved_a(const gf_grassmann_config *gc, float *g, int64_t N, int64_t d) { return gc->gate ? g + N * d : NULL; }
static float *saved_m(const gf_grassmann_config *gc, float *g, int64_t N, int64_t d, float *out) {
    return gc->extra_proj ? g + (gc->gate ? 2 : 1) * N * d : out;
}
/* conv: the saved u (the reduction's input) */
static float *saved_u(const gf_grassmann_config *gc, float *g, int64_t N, int64_t d) {
    return g + (1 + gc->gate + gc->extra_proj) * N * d;
}
static float *saved_logits(const gf_grassmann_config *gc, float *g, int64_t N, int64_t d) {
    return g + (1 + gc->gate + gc->extra_proj + (gc->conv > 0)) * N * d;
}

/* ---- conv: u = h + b + sum_k w_k h_{t-k}, per channel (a padded position reads as 0) --------------------- */

/* u (B*T, d) from h (B*T, d); w (d, K), b (d) */
static void conv_forward(float *u, const float *h, const float *w, const float *b, int64_t B, int64_t T, int64_t d,
                         int64_t K, const uint8_t *mask) {
#pragma omp parallel for schedule(static) if (B * T * d * K > GF_PAR_MIN)
    for (int64_t n = 0; n < B * T; n++) {
        const int64_t t = n % T;
        for (int64_t c = 0; c < d; c++) u[n * d + c] = h[n * d + c] + b[c];
        for (int64_t k = 0; k < K && k <= t; k++) {
            if (mask && !mask[n - k]) continue;
            for (int64_t c = 0; c < d; c++) u[n * d + c] += w[c * K + k] * h[(n - k) * d + c];
        }
    }
}

/* dh += du + sum_k w_k du_{t+k} (where h_t is read), dw += du_t h_{t-k}, db += du. Each sum runs over n in one
 * order on any number of threads: a thread owns a block of CONV_CB channels and walks the positions in order,
 * the block's channels side by side (rows of d floats read in place, not one channel down a column), its
 * weights and their gradients copied into (K, CONV_CB) tiles so that every inner loop is over channels. */
#define CONV_CB 16
static void conv_backward_block(float *dh, float *dw, float *db, const float *du, const float *h, const float *w,
                                int64_t N, int64_t T, int64_t d, int64_t K, const uint8_t *mask, int64_t c0,
                                int64_t nc) {
    float wt[16][CONV_CB], dwt[16][CONV_CB], dbt[CONV_CB], acc[CONV_CB]; /* K <= 16, the key's bound */
    for (int64_t c = 0; c < nc; c++) {
        for (int64_t k = 0; k < K; k++) wt[k][c] = w[(c0 + c) * K + k], dwt[k][c] = dw ? dw[(c0 + c) * K + k] : 0.0f;
        dbt[c] = db ? db[c0 + c] : 0.0f;
    }
    for (int64_t n = 0; n < N; n++) {
        const int64_t t = n % T, kin = (!mask || mask[n]) ? (K < T - t ? K : T - t) : 0;
        const float *dun = du + n * d + c0;
        for (int64_t c = 0; c < nc; c++) acc[c] = dun[c];
        for (int64_t k = 0; k < kin; k++)
            for (int64_t c = 0; c < nc; c++) acc[c] += wt[k][c] * dun[k * d + c];
        for (int64_t c = 0; c < nc; c++) dh[n * d + c0 + c] += acc[c], dbt[c] += dun[c];
        for (int64_t k = 0; dw && k < K && k <= t; k++) {
            if (mask && !mask[n - k]) continue;
            const float *hk = h + (n - k) * d + c0;
            for (int64_t c = 0; c < nc; c++) dwt[k][c] += dun[c] * hk[c];
        }
    }
    for (int64_t c = 0; c < nc; c++) {
        for (int64_t k = 0; dw && k < K; k++) dw[(c0 + c) * K + k] = dwt[k][c];
        if (db) db[c0 + c] = dbt[c];
    }
}

static void conv_backward(float *dh, float *dw, float *db, const float *du, const float *h, const float *w, int64_t B,
                          int64_t T, int64_t d, int64_t K, const uint8_t *mask) {
    const int64_t nblk = (d + CONV_CB - 1) / CONV_CB;
#pragma omp parallel for schedule(static) if (B * T * d * K > GF_PAR_MIN)
    for (int64_t blk = 0; blk < nblk; blk++) {
        const int64_t c0 = blk * CONV_CB;
        conv_backward_block(dh, dw, db, du, h, w, B * T, T, d, K, mask, c0, c0 + CONV_CB < d ? CONV_CB : d - c0);
    }
}

/* scratch: pbar (N,F) | dpbar (N,F) | dz (N,r) | dm (N,d) | dg (N,d) | da (N,d) | then doubles, from a
 * 64-byte boundary: y (N,r) | coef (N,K,3) | nu (N), K = partner slots: the layer's number of offsets
 * (twice that when bidirectional); F = feat_dim (pbar holds the pairs' means [ubar; vbar] when plucker is
 * false, which needs no doubles), then with offset_mix learned or token dl (rows, K); then at the end the token
 * mixture's dlogits (N, n_offsets) and du (N,d) with conv */
static int64_t g_scratch_floats(const gf_config *cfg, int layer, int64_t B, int64_t T, int n_threads) {
    (void)n_threads;
    int64_t N = B * T, d = gf_layer_dim(cfg, layer), r = GC(cfg, layer)->rank;
    /* coef holds one triple per partner slot: up to 2 per offset (bidirectional); sized for that whatever
     * the config's direction, since a call says its own (gf_mixer_call.bidirectional) */
    const int64_t slots = 2 * GC(cfg, layer)->n_offsets, rows = N * GC(cfg, layer)->heads;
    const int64_t dmix = GC(cfg, layer)->offset_mix != GF_OFFSET_MEAN ? rows * slots : 0; /* row, slot: d logit */
    const int64_t doubles = GC(cfg, layer)->plucker ? 16 + 2 * (N * r + 3 * rows * slots + rows + dmix) : 0;
    return 2 * N * feat_dim(cfg, layer) + N * r + 3 * N * d + doubles + token_logits(GC(cfg, layer), N) +
           (GC(cfg, layer)->conv ? N * d : 0);
}

/* Who is paired with whom: token t with t + step[o] for each slot o (step < 0 looks back), where that
 * position is inside the sequence and not padding. Causal: the steps -D of the offsets; bidirectional:
 * those, then +D. */
typedef struct {
    int n;
    int step[2 * GF_MAX_OFFSETS];
    int64_t T, W;        /* W > 0: partners only inside the token's window of W positions */
    int64_t G;           /* G > 0: a grid of G columns; slot o moves the column by dcol[o], inside the grid */
    int dcol[2 * GF_MAX_OFFSETS];
    int64_t H;           /* heads: row n of z viewed as (N * H, rank / H) is head n % H of position n / H */
    const uint8_t *mask; /* (B, T) or NULL */
    const float *mix;    /* offset_mix learned or token: position n's logits at mix + n * mix_stride (n_offsets; slot
                          * o's at o % n_offsets); NULL: the mean */
    int64_t mix_stride;  /* 0 (learned: mix.bias for every position) or n_offsets (token) */
    int n_offsets;
} pairing;

/* The logits of the mixture over offsets: NULL (the mean), mix.bias for every position (learned; *stride 0), or
 * lg (N, n_offsets) (token; *stride n_offsets), where mix(h) of the N positions is written unless h is NULL (lg
 * holds them already). p: the layer's tensors. */
static const float *mix_logits(const gf_grassmann_config *g, float *const *p, const float *h, int64_t N, int64_t d,
                               float *lg, int64_t *stride) {
    *stride = token_mix(g) ? g->n_offsets : 0;
    if (g->offset_mix == GF_OFFSET_MEAN) return NULL;
    if (!token_mix(g)) return p[mix_bias_index(g)];
    if (h) gf_linear_forward(lg, h, d, p[mix_index(g)], d, p[mix_bias_index(g)], N, d, g->n_offsets, 0.0f);
    return lg;
}

/* mix, stride: mix_logits' (NULL, 0: the mean) */
static pairing make_pairing(const gf_grassmann_config *g, bool causal, int64_t T, const uint8_t *mask,
                            const float *mix, int64_t stride) {
    pairing pr = {.n = 0, .T = T, .W = g->window, .G = g->grid, .H = g->heads, .mask = mask,
                  .mix = mix, .mix_stride = stride, .n_offsets = g->n_offsets};
    for (int o = 0; o < g->n_offsets; o++) {
        pr.dcol[pr.n] = g->grid ? -(int)gf_grassmann_grid_col(g->offsets[o], g->grid) : 0;
        pr.step[pr.n++] = -g->offsets[o];
    }
    for (int o = 0; !causal && o < g->n_offsets; o++) {
        pr.dcol[pr.n] = g->grid ? (int)gf_grassmann_grid_col(g->offsets[o], g->grid) : 0;
        pr.step[pr.n++] = g->offsets[o];
    }
    return pr;
}

/* Whether column c moved by dc stays in a grid of G columns (G 0: no grid). */
static bool on_grid(int64_t G, int64_t c, int64_t dc) { return !G || (c + dc >= 0 && c + dc < G); }

/* Whether position n (of the B*T, at t = n % T) has a partner in slot o. */
static bool has_partner(const pairing *pr, int64_t n, int o) {
    const int64_t t = n % pr->T, q = t + pr->step[o];
    return q >= 0 && q < pr->T && (!pr->W || q / pr->W == t / pr->W) &&
           on_grid(pr->G, pr->G ? t % pr->G : 0, pr->dcol[o]) && (!pr->mask || pr->mask[n + pr->step[o]]);
}

static int valid_count(const pairing *pr, int64_t n) {
    int c = 0;
    for (int o = 0; o < pr->n; o++) c += has_partner(pr, n, o);
    return c;
}

/* Zero the rows (N, d) of positions without a partner (there g is the constant 0). */
static void zero_rows_without_partners(float *x, int64_t d, const pairing *pr, int64_t N) {
#pragma omp parallel for schedule(static) if (N * d > GF_PAR_MIN)
    for (int64_t n = 0; n < N; n++)
        if (valid_count(pr, n) == 0)
            for (int64_t k = 0; k < d; k++) x[n * d + k] = 0.0f;
}

/* The Plücker step in closed form. For one token u = z_t and its partner v = z_{t-D}, with p = u ^ v
 * (p_ij = u_i v_j - u_j v_i, i < j) and P = u v^T - v u^T its antisymmetric matrix:
 *   |p|^2 = |u|^2 |v|^2 - (u.v)^2                   (Lagrange's identity; in double, so no cancellation
 *                                                     worse than the float inputs themselves carry)
 *   sum_D c_D (u ^ v_D) = u ^ (sum_D c_D v_D)       (bilinearity: one wedge per row, not one per offset)
 * and for the backward, with q = dL/dpbar of the row and Q its antisymmetric matrix (Q_ij = q_ij, i < j):
 *   p . q = u^T Q v = -(Q u) . v,   P v = u |v|^2 - v (u.v),   P u = u (u.v) - v |u|^2,
 *   dp = a q - b p  (a = s/|p|, b = s (p.q)/|p|^3, s = 1/count; a = s/eps, b = 0 below eps)
 *   du = G v = a Q v - b P v,   dv = -G u = -a Q u + b P u.
 * So each row costs one wedge forward and two antisymmetric mat-vecs backward, whatever the number of
 * offsets; the rest is O(r) per offset. tests/unit/test_mixers.c holds this to the literal per-offset
 * reference in double. */

static double dot_d(const float *a, const float *b, int64_t r) {
    double s = 0.0;
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < r; i++) s += (double)a[i] * (double)b[i];
    return s;
}

/* The partners of head row n (z as (N * H, r) rows, r = rank / H): vs[o] = the same head's row at position
 * n / H + step[o], NULL where there is none. Returns how many exist. */
static int partners(const float *z, int64_t n, int64_t r, const pairing *pr, const float **vs) {
    int cnt = 0;
    for (int o = 0; o < pr->n; o++) {
        vs[o] = has_partner(pr, n / pr->H, o) ? z + (n + pr->step[o] * pr->H) * r : NULL;
        cnt += vs[o] != NULL;
    }
    return cnt;
}

/* The weights of the partner slots of position pos (vs from partners(): 0 where there is none), returned with their
 * sum, which divides them: 1 each and the count (the mean), or exp(l_D - max l) of the slot's offset D (offset_mix
 * learned or token: a softmax over the partners that exist; the mean when the logits are equal). */
static double slot_weights(const pairing *pr, int64_t pos, const float *const *vs, double *wt) {
    const float *l = pr->mix ? pr->mix + pos * pr->mix_stride : NULL;
    double mx = -INFINITY, sum = 0.0;
    for (int o = 0; l && o < pr->n; o++)
        if (vs[o]) mx = fmax(mx, (double)l[o % pr->n_offsets]);
    for (int o = 0; o < pr->n; o++) {
        wt[o] = !vs[o] ? 0.0 : l ? exp((double)l[o % pr->n_offsets] - mx) : 1.0;
        sum += wt[o];
    }
    return sum;
}

/* A partner identical to the token (bitwise) gives p = 0 exactly, which in a model only happens when both
 * come from the same computation on the same input: the same token at offset D in layer 0 with pos
 * "none". Then p is 0 for every value of the parameters, so the pair contributes nothing forward and its
 * total derivative is exactly 0. Its literal gradient through p / eps is +-(1/eps) Q v on the two rows,
 * which cancels in every parameter gradient, but in float32 only up to rounding of order 1e8 ulp; so
 * such a pair is skipped outright (docs/model.md). A parallel but different partner keeps the literal
 * p / eps rule. */
static int identical(const float *u, const float *v, int64_t r) { return !memcmp(u, v, (size_t)r * sizeof *u); }

/* Per list entry o: the norm of u ^ vs[o] and u.vs[o] (0 where vs[o] is NULL); *nu = |u|^2. */
static void row_norms(const float *u, const float *const *vs, int n_offs, int64_t r, double *nrm, double *uv,
                      double *nu) {
    *nu = dot_d(u, u, r);
    for (int o = 0; o < n_offs; o++) {
        nrm[o] = uv[o] = 0.0;
        if (!vs[o]) continue;
        double nv = dot_d(vs[o], vs[o], r), w = dot_d(u, vs[o], r), n2 = *nu * nv - w * w;
        nrm[o] = sqrt(n2 > 0.0 ? n2 : 0.0);
        uv[o] = w;
    }
}

/* y = Q x for the antisymmetric Q of q (row-major pairs i < j), in double. */
static void antisym_matvec(const float *q, int64_t r, const double *x, double *y) {
    for (int64_t i = 0; i < r; i++) y[i] = 0.0;
    const float *qi = q;
    for (int64_t i = 0; i < r; i++) {
        const double xi = x[i];
        double yi = 0.0;
        const int64_t len = r - i - 1;
        const double *xj = x + i + 1;
        double *yj = y + i + 1;
#pragma omp simd reduction(+ : yi)
        for (int64_t k = 0; k < len; k++) {
            yi += (double)qi[k] * xj[k];
            yj[k] -= (double)qi[k] * xi;
        }
        y[i] += yi;
        qi += len;
    }
}

/* One row of pbar (C): u ^ (sum_o wt[o] vs[o] / (wsum max(|u ^ vs[o]|, eps))), zero without partners (the mean:
 * wt[o] 1 and wsum the count; slot_weights). */
static void plucker_row(float *pb, const float *u, const float *const *vs, const int *steps, int n_offs,
                        const double *wt, double wsum, int64_t r, double eps) {
    double nrm[2 * GF_MAX_OFFSETS], uv[2 * GF_MAX_OFFSETS], nu, vbar[256];
    row_norms(u, vs, n_offs, r, nrm, uv, &nu);
    for (int64_t j = 0; j < r; j++) vbar[j] = 0.0;
    for (int o = 0; o < n_offs; o++) {
        if (!vs[o] || identical(u, vs[o], r)) continue;
        /* a pair is oriented from the later token to the earlier one, p(z_later, z_earlier), as in the causal
         * layer: a partner after the token enters with p(z_{t+D}, z_t) = -p(z_t, z_{t+D}) */
        const double c = (steps[o] > 0 ? -wt[o] : wt[o]) / ((nrm[o] >= eps ? nrm[o] : eps) * wsum);
        const float *v = vs[o];
#pragma omp simd
        for (int64_t j = 0; j < r; j++) vbar[j] += c * (double)v[j];
    }
    for (int64_t i = 0; i < r; i++) {
        const double ui = u[i], bi = vbar[i];
        const int64_t len = r - i - 1;
        const float *uj = u + i + 1;
        const double *bj = vbar + i + 1;
#pragma omp simd
        for (int64_t k = 0; k < len; k++) pb[k] = (float)(ui * bj[k] - (double)uj[k] * bi);
        pb += len;
    }
}

/* pbar (N, H*C_h) from z (N, H*r_h), viewed as N*H head rows: row by row. Rows without a partner are
 * zero. */
static void plucker_mean(float *pbar, const float *z, const gf_grassmann_config *g, const pairing *pr, int64_t N) {
    const int64_t r = head_rank(g), C = head_pairs(g), rows = N * g->heads;
#pragma omp parallel for schedule(static) if (rows * C > GF_PAR_MIN)
    for (int64_t n = 0; n < rows; n++) {
        const float *vs[2 * GF_MAX_OFFSETS];
        double wt[2 * GF_MAX_OFFSETS];
        partners(z, n, r, pr, vs);
        const double wsum = slot_weights(pr, n / pr->H, vs, wt);
        plucker_row(pbar + n * C, z + n * r, vs, pr->step, pr->n, wt, wsum, r, g->plucker_eps);
    }
}

/* offset_mix learned or token: row n's gradient of each slot's logit, into dl (slots): pbar = sum_o pi_o phat_o with pi the
 * softmax weights, so d logit_o = pi_o (q . phat_o - q . pbar); pq[o] = q . phat_o (0 without a partner). */
static void mix_grad_row(double *dl, const double *pq, const double *wt, double wsum, int n_offs) {
    double qp = 0.0;
    for (int o = 0; o < n_offs; o++) qp += wt[o] / wsum * pq[o];
    for (int o = 0; o < n_offs; o++) dl[o] = wt[o] / wsum * (pq[o] - qp);
}

/* Pass 1 for row n: du = its gradient as the current token of its pairs; saves y = Q u, |u|^2 and, per
 * slot, the coefficients a, b and u.v that pass 2 needs (0 where the slot has no partner); with dl (offset_mix
 * learned or token), the row's gradient of each slot's logit. */
static void row_backward(float *du, const float *q, const float *z, int64_t n, const gf_grassmann_config *g,
                         const pairing *pr, double *yd, double *cf, double *nu, double *dl) {
    const int64_t r = head_rank(g);
    const int n_offs = pr->n;
    const double eps = g->plucker_eps;
    double nrm[2 * GF_MAX_OFFSETS], uv[2 * GF_MAX_OFFSETS], wt[2 * GF_MAX_OFFSETS], pq[2 * GF_MAX_OFFSETS];
    double ud[256], vsum[256], acc[256], qv[256];
    const float *vs[2 * GF_MAX_OFFSETS], *u = z + n * r;
    const int cnt = partners(z, n, r, pr, vs);
    const double wsum = slot_weights(pr, n / pr->H, vs, wt);
    row_norms(u, vs, n_offs, r, nrm, uv, nu);
    for (int o = 0; o < n_offs; o++) cf[3 * o] = cf[3 * o + 1] = cf[3 * o + 2] = pq[o] = 0.0;
    for (int64_t j = 0; j < r; j++) {
        ud[j] = u[j];
        vsum[j] = acc[j] = yd[j] = 0.0;
        du[j] = 0.0f;
    }
    if (cnt == 0) {
        for (int o = 0; dl && o < n_offs; o++) dl[o] = 0.0;
        return;
    }
    antisym_matvec(q, r, ud, yd); /* y = Q u */
    for (int o = 0; o < n_offs; o++) {
        if (!vs[o] || identical(u, vs[o], r)) continue; /* coefficients stay 0 */
        const float *v = vs[o];
        const double s = (pr->step[o] > 0 ? -wt[o] : wt[o]) / wsum; /* the pair's orientation (plucker_row) */
        const double cl = nrm[o] >= eps ? nrm[o] : eps;
        double dot = 0.0; /* p.q = -(Q u).v */
#pragma omp simd reduction(- : dot)
        for (int64_t j = 0; j < r; j++) dot -= yd[j] * (double)v[j];
        const double a = s / cl, b = nrm[o] >= eps ? s * dot / (cl * cl * cl) : 0.0;
        pq[o] = (pr->step[o] > 0 ? -dot : dot) / cl;
        const double bnv = b * dot_d(v, v, r), buv = b * uv[o];
#pragma omp simd
        for (int64_t j = 0; j < r; j++) {
            vsum[j] += a * (double)v[j];
            acc[j] -= bnv * ud[j] - buv * (double)v[j]; /* -b P v */
        }
        cf[3 * o] = a;
        cf[3 * o + 1] = b;
        cf[3 * o + 2] = uv[o];
    }
    if (dl) mix_grad_row(dl, pq, wt, wsum, n_offs);
    antisym_matvec(q, r, vsum, qv); /* Q sum_D a_D v_D */
    for (int64_t j = 0; j < r; j++) du[j] = (float)(acc[j] + qv[j]);
}

/* dz (N,r) from dpbar (N,C), in two passes over rows so that no two threads write the same row:
 * pass 1 (row_backward) gives each row its gradient as the current token of its pairs; pass 2 adds each
 * row's gradient as the partner of the rows that pair with it. */
static void plucker_backward(float *dz, const float *dpbar, const float *z, const gf_grassmann_config *g,
                             const pairing *pr, int64_t N, double *y, double *coef, double *nus, double *dl) {
    const int64_t r = head_rank(g), C = head_pairs(g), T = pr->T, H = g->heads, rows = N * H;
    const int n_offs = pr->n;
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int64_t n = 0; n < rows; n++)
            row_backward(dz + n * r, dpbar + n * C, z, n, g, pr, y + n * r, coef + n * 3 * n_offs, &nus[n],
                         dl ? dl + n * n_offs : NULL);
        /* implicit barrier: pass 2 reads y, coef and nu of other rows */
#pragma omp for schedule(static)
        for (int64_t n = 0; n < rows; n++) {
            const int64_t t = n / H % T;
            const float *v = z + n * r;
            float *dv = dz + n * r;
            double acc[256];
            for (int64_t j = 0; j < r; j++) acc[j] = 0.0;
            for (int o = 0; o < n_offs; o++) {
                const int64_t D = pr->step[o]; /* row m, D positions back, pairs with row n in slot o */
                if (t - D < 0 || t - D >= T) continue;
                const int64_t m = n - D * H;
                const double *cf = coef + m * 3 * n_offs + 3 * o, *ym = y + m * r;
                const float *um = z + m * r;
                const double a = cf[0], buv = cf[1] * cf[2], bnu = cf[1] * nus[m];
#pragma omp simd
                for (int64_t j = 0; j < r; j++) acc[j] += -a * ym[j] + buv * um[j] - bnu * v[j]; /* -a Q u + b P u */
            }
            for (int64_t j = 0; j < r; j++) dv[j] += (float)acc[j];
        }
    }
}

/* offset_mix learned: dw (n_offsets) += the rows' logit gradients dl (rows, slots), summed in row order whatever the
 * number of threads (slot o is offset o % n_offsets: both directions of a bidirectional layer share a logit). */
static void mix_grad_sum(float *dw, const double *dl, int64_t rows, const pairing *pr) {
    double acc[GF_MAX_OFFSETS] = {0};
    for (int64_t n = 0; n < rows; n++)
        for (int o = 0; o < pr->n; o++) acc[o % pr->n_offsets] += dl[n * pr->n + o];
    for (int o = 0; o < pr->n_offsets; o++) dw[o] += (float)acc[o];
}

/* The mixture's backward from the rows' logit gradients dl (N * heads rows, pr->n slots). learned: mix_grad_sum into
 * d mix.bias; token: per position dlog (N, n_offsets), its heads' and both directions' slots summed in order, then
 * mix.weight's, mix.bias's and the input's gradients as a linear layer's. */
static void mix_backward(const gf_mixer_call *c, const gf_grassmann_config *gc, const pairing *pr, const double *dl,
                         float *dlog, const float *inp, float *dinp) {
    const int64_t N = c->B * c->T, d = gf_layer_dim(c->cfg, c->layer), H = gc->heads, K = gc->n_offsets;
    float *db = c->g[mix_bias_index(gc)];
    if (!token_mix(gc)) {
        if (db) mix_grad_sum(db, dl, N * H, pr);
        return;
    }
#pragma omp parallel for schedule(static) if (N * H * pr->n > GF_PAR_MIN)
    for (int64_t n = 0; n < N; n++) {
        double acc[GF_MAX_OFFSETS] = {0};
        for (int64_t h = 0; h < H; h++)
            for (int o = 0; o < pr->n; o++) acc[o % K] += dl[(n * H + h) * pr->n + o];
        for (int64_t o = 0; o < K; o++) dlog[n * K + o] = (float)acc[o];
    }
    gf_linear_backward(dinp, d, c->g[mix_index(gc)], d, db, dlog, inp, d, c->p[mix_index(gc)], d, N, d, K);
}

/* ---- plucker: false: the pair as [z_later; z_earlier] ------------------------------------------------ */

/* One row of the pairs' mean (2r): [ubar; vbar] = the mean over the partners vs[o] (NULL: none) of
 * [u; v] for a partner before the token (step < 0) and [v; u] for one after it: each pair runs from the
 * later token to the earlier, as p does. Zero when cnt = 0. */
static void pair_row(float *x, const float *u, const float *const *vs, const int *steps, int n_offs, int cnt,
                     int64_t r) {
    double acc[512];
    for (int64_t j = 0; j < 2 * r; j++) acc[j] = 0.0;
    for (int o = 0; o < n_offs; o++) {
        if (!vs[o]) continue;
        const float *later = steps[o] < 0 ? u : vs[o], *earlier = steps[o] < 0 ? vs[o] : u;
        for (int64_t j = 0; j < r; j++) {
            acc[j] += later[j];
            acc[r + j] += earlier[j];
        }
    }
    const double s = cnt ? 1.0 / cnt : 0.0;
    for (int64_t j = 0; j < 2 * r; j++) x[j] = (float)(acc[j] * s);
}

/* The pairs' means (N, 2r) from z (N, r), row by row (heads is 1). */
static void pair_mean(float *x, const float *z, const gf_grassmann_config *g, const pairing *pr, int64_t N) {
    const int64_t r = g->rank;
#pragma omp parallel for schedule(static) if (N * r > GF_PAR_MIN)
    for (int64_t n = 0; n < N; n++) {
        const float *vs[2 * GF_MAX_OFFSETS];
        int cnt = partners(z, n, r, pr, vs);
        pair_row(x + n * 2 * r, z + n * r, vs, pr->step, pr->n, cnt, r);
    }
}

/* dz (N,r) from dx = dL/d[ubar; vbar] (N,2r; scaled in place by 1/count): row n's first half goes to the
 * later token of each of its pairs, its second half to the earlier one. Pass 1 scales; pass 2 gathers, per
 * row, its share as the token of its own pairs and as the partner of the rows that pair with it. */
static void pair_backward(float *dz, float *dx, const pairing *pr, int64_t N, int64_t r) {
    const int64_t T = pr->T;
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int64_t n = 0; n < N; n++) {
            const int cnt = valid_count(pr, n);
            const float s = cnt ? 1.0f / (float)cnt : 0.0f;
            for (int64_t j = 0; j < 2 * r; j++) dx[n * 2 * r + j] *= s;
        }
        /* implicit barrier: pass 2 reads other rows of dx */
#pragma omp for schedule(static)
        for (int64_t n = 0; n < N; n++) {
            const int64_t t = n % T;
            double acc[256];
            for (int64_t j = 0; j < r; j++) acc[j] = 0.0;
            for (int o = 0; o < pr->n; o++) {
                const int st = pr->step[o];
                if (has_partner(pr, n, o)) { /* n's own pair: n is the later token when its partner is before */
                    const float *own = dx + n * 2 * r + (st < 0 ? 0 : r);
                    for (int64_t j = 0; j < r; j++) acc[j] += own[j];
                }
                const int64_t m = n - st; /* row m pairs with n in slot o: n is its partner */
                if (t - st < 0 || t - st >= T || !has_partner(pr, m, o)) continue;
                const float *other = dx + m * 2 * r + (st < 0 ? r : 0);
                for (int64_t j = 0; j < r; j++) acc[j] += other[j];
            }
            for (int64_t j = 0; j < r; j++) dz[n * r + j] = (float)acc[j];
        }
    }
}

/* ---- the gate --------------------------------------------------------------------------------------- */

/* gate: a = sigmoid(gate([h; g])), m = a*h + (1-a)*g; gate false: m = (h + g) / 2 (a unused); a gate forced at
 * evaluation (force_gate): a = 1, m = h or a = 0, m = g exactly. Then out = extra_proj ? out(m) : m (m may be
 * out), N rows. */
static void gate_forward(float *const *p, const gf_grassmann_config *gc, int64_t d, float *out, float *a, float *m,
                         const float *inp, const float *g, int64_t N) {
    if (gc->gate && gc->force_gate) { /* an evaluation-time override (gf_model_set_override): a fixed gate */
        const bool one = gc->force_gate == GF_GATE_ONE;
        GF_PAR_FOR(N * d > GF_PAR_MIN, for (int64_t i = 0; i < N * d; i++) {
            a[i] = one ? 1.0f : 0.0f;
            m[i] = one ? inp[i] : g[i];
        });
    } else if (gc->gate) {
        /* gate pre-activation = h W_gate[:, :d]^T + g W_gate[:, d:]^T + b (N, go); a scalar one spread to (N, d) */
        const int64_t go = gate_out(gc, d);
        gf_linear_forward(a, inp, d, p[P_GATE_W], 2 * d, p[P_GATE_B], N, d, go, 0.0f);
        gf_linear_forward(a, g, d, p[P_GATE_W] + d, 2 * d, NULL, N, d, go, 1.0f);
        if (go == 1)
            for (int64_t n = N - 1; n >= 0; n--) { /* in place, last row first: a[n] is read before row n is written */
                const float v = a[n];
                for (int64_t i = 0; i < d; i++) a[n * d + i] = v;
            }
        GF_PAR_FOR(N * d > GF_PAR_MIN, for (int64_t i = 0; i < N * d; i++) {
            float s = 1.0f / (1.0f + gf_exp_fast_v(-a[i]));
            a[i] = s;
            m[i] = s * inp[i] + (1.0f - s) * g[i];
        });
    } else {
        GF_PAR_FOR(N * d > GF_PAR_MIN, for (int64_t i = 0; i < N * d; i++) m[i] = 0.5f * (inp[i] + g[i]););
    }
    const int o = out_index(gc);
    if (gc->extra_proj) gf_linear_forward(out, m, d, p[o], d, p[o + 1], N, d, d, 0.0f);
}

/* Backward of gate_forward's mixing (after out): dh += dm*a, dg = dm*(1-a), and the gate's weights; or
 * with gate false dh += dm/2, dg = dm/2. da is scratch (N, d). */
static void gate_backward(const gf_mixer_call *c, const gf_grassmann_config *gc, int64_t d, float *dinp, float *dg,
                          float *da, const float *dmix, const float *inp, const float *g, const float *a) {
    const int64_t N = c->B * c->T;
    if (!gc->gate) {
#pragma omp parallel for schedule(static) if (N * d > GF_PAR_MIN)
        for (int64_t i = 0; i < N * d; i++) {
            float dmi = 0.5f * dmix[i];
            dinp[i] += dmi;
            dg[i] = dmi;
        }
        return;
    }
    /* m = a*h + (1-a)*g:  dh += dm*a;  dg = dm*(1-a);  d(pre) = dm*(h-g)*a*(1-a) */
#pragma omp parallel for schedule(static) if (N * d > GF_PAR_MIN)
    for (int64_t i = 0; i < N * d; i++) {
        float ai = a[i], dmi = dmix[i];
        dinp[i] += dmi * ai;
        dg[i] = dmi * (1.0f - ai);
        da[i] = dmi * (inp[i] - g[i]) * ai * (1.0f - ai);
    }
    const int64_t go = gate_out(gc, d);
    if (go == 1)
        for (int64_t n = 0; n < N; n++) { /* a scalar gate: its pre-activation's gradient sums the row, in order */
            float s = 0.0f;
            for (int64_t i = 0; i < d; i++) s += da[n * d + i];
            da[n] = s; /* row n (or an earlier one) is read already */
        }
    gf_linear_backward(dinp, d, c->g[P_GATE_W], 2 * d, c->g[P_GATE_B], da, inp, d, c->p[P_GATE_W], 2 * d, N,
                       d, go);
    float *dgate_g = c->g[P_GATE_W] ? c->g[P_GATE_W] + d : NULL; /* NULL: the gate is frozen */
    gf_linear_backward(dg, d, dgate_g, 2 * d, NULL, da, g, d, c->p[P_GATE_W] + d, 2 * d, N, d, go);
}

static void g_forward(const gf_mixer_call *c, float *out, const float *inp) {
    const gf_grassmann_config *gc = GC(c->cfg, c->layer);
    const int64_t N = c->B * c->T, T = c->T, d = gf_layer_dim(c->cfg, c->layer), r = gc->rank, F = feat_dim(c->cfg, c->layer);
    float *z = c->saved, *g = z + N * r, *a = saved_a(gc, g, N, d), *m = saved_m(gc, g, N, d, out);
    float *pbar = c->scratch;
    int64_t stride;
    const float *mix = mix_logits(gc, c->p, inp, N, d, saved_logits(gc, g, N, d), &stride);
    const pairing pr = make_pairing(gc, !c->bidirectional, T, c->mask, mix, stride);
    const float *red_in = inp;
    if (gc->conv) {
        const int ci = conv_index(gc);
        conv_forward(saved_u(gc, g, N, d), inp, c->p[ci], c->p[ci + 1], c->B, T, d, gc->conv, c->mask);
        red_in = saved_u(gc, g, N, d);
    }
    gf_linear_forward(z, red_in, d, c->p[P_RED_W], d, c->p[P_RED_B], N, d, r, 0.0f);
    if (gc->plucker)
        plucker_mean(pbar, z, gc, &pr, N);
    else
        pair_mean(pbar, z, gc, &pr, N);
    gf_linear_forward(g, pbar, F, c->p[P_PROJ_W], F, c->p[P_PROJ_B], N, F, d, 0.0f);
    /* a position without a partner (the first ones, when causal): there g = 0 (not the bias) */
    zero_rows_without_partners(g, d, &pr, N);
    gate_forward(c->p, gc, d, out, a, m, inp, g, N);
}

static void g_backward(const gf_mixer_call *c, float *dinp, const float *dout, const float *inp) {
    const gf_grassmann_config *gc = GC(c->cfg, c->layer);
    const int64_t N = c->B * c->T, T = c->T, d = gf_layer_dim(c->cfg, c->layer), r = gc->rank, F = feat_dim(c->cfg, c->layer);
    float *z = c->saved, *g = z + N * r, *a = saved_a(gc, g, N, d), *m = saved_m(gc, g, N, d, NULL);
    float *pbar = c->scratch, *dpbar = pbar + N * F, *dz = dpbar + N * F, *dm = dz + N * r, *dg = dm + N * d,
          *da = dg + N * d;
    int64_t stride;
    const float *mix = mix_logits(gc, c->p, NULL, N, d, saved_logits(gc, g, N, d), &stride);
    const pairing pr = make_pairing(gc, !c->bidirectional, T, c->mask, mix, stride);

    const float *dmix = dout;
    if (gc->extra_proj) {
        const int o = out_index(gc);
        gf_zero(dm, N * d);
        gf_linear_backward(dm, d, c->g[o], d, c->g[o + 1], dout, m, d, c->p[o], d, N, d, d);
        dmix = dm;
    }
    gate_backward(c, gc, d, dinp, dg, da, dmix, inp, g, a);
    /* g is the constant 0 on rows without a partner: no gradient flows past it there */
    zero_rows_without_partners(dg, d, &pr, N);

    if (gc->plucker)
        plucker_mean(pbar, z, gc, &pr, N);
    else
        pair_mean(pbar, z, gc, &pr, N);
    gf_zero(dpbar, N * F);
    gf_linear_backward(dpbar, F, c->g[P_PROJ_W], F, c->g[P_PROJ_B], dg, pbar, F, c->p[P_PROJ_W], F, N, F, d);

    if (gc->plucker) {
        /* the double-precision scratch starts at the next 64-byte boundary after da (16 floats reserved) */
        float *dbl = da + N * d;
        dbl += (16 - (uintptr_t)dbl / sizeof(float) % 16) % 16;
        double *y = (double *)(void *)dbl;
        double *coef = y + N * r, *nus = coef + 3 * N * gc->heads * pr.n, *dl = nus + N * gc->heads;
        plucker_backward(dz, dpbar, z, gc, &pr, N, y, coef, nus, mix ? dl : NULL);
        const int64_t tail = g_scratch_floats(c->cfg, c->layer, c->B, T, c->n_threads) - (gc->conv ? N * d : 0);
        if (mix) mix_backward(c, gc, &pr, dl, c->scratch + tail - token_logits(gc, N), inp, dinp);
    } else {
        pair_backward(dz, dpbar, &pr, N, r);
    }
    if (!gc->conv) {
        gf_linear_backward(dinp, d, c->g[P_RED_W], d, c->g[P_RED_B], dz, inp, d, c->p[P_RED_W], d, N, d, r);
        return;
    }
    const int ci = conv_index(gc);
    const float *u = saved_u(gc, g, N, d);
    float *du = c->scratch + g_scratch_floats(c->cfg, c->layer, c->B, T, c->n_threads) - N * d;
    gf_zero(du, N * d);
    gf_linear_backward(du, d, c->g[P_RED_W], d, c->g[P_RED_B], dz, u, d, c->p[P_RED_W], d, N, d, r);
    conv_backward(dinp, c->g[ci], c->g[ci + 1], du, inp, c->p[ci], c->B, T, d, gc->conv, c->mask);
}

/* ---- streaming: a ring of the last max-offset reduced vectors, whatever the position ---------------- */

static int max_offset(const gf_grassmann_config *g) {
    int mx = 1;
    for (int o = 0; o < g->n_offsets; o++) mx = g->offsets[o] > mx ? g->offsets[o] : mx;
    return mx;
}

/* state: z of positions pos-K .. pos-1 in a ring of K = max offset slots (slot = position mod K); with conv,
 * then the inputs h of positions pos-conv+1 .. pos-1 in a ring of conv - 1 slots */
static int64_t g_state_floats(const gf_config *cfg, int layer, int64_t cap) {
    (void)cap;
    const gf_grassmann_config *g = GC(cfg, layer);
    return (int64_t)max_offset(g) * g->rank + (g->conv > 1 ? (g->conv - 1) * gf_layer_dim(cfg, layer) : 0);
}

/* step scratch: z (r) | pbar (F) | g (d) | a (d) | m (d) | u (d) | the mixture's logits (n_offsets) */
static int64_t g_step_scratch_floats(const gf_config *cfg, int layer, int64_t cap) {
    (void)cap;
    return GC(cfg, layer)->rank + feat_dim(cfg, layer) + 4 * gf_layer_dim(cfg, layer) + GC(cfg, layer)->n_offsets;
}

/* conv's u (d) of the new position from h = inp and the ring of earlier inputs (state past the z ring), then
 * the ring's slot of the oldest input takes h */
static const float *conv_step(const gf_mixer_step *s, const gf_grassmann_config *gc, int64_t d, const float *inp,
                              float *u) {
    const int ci = conv_index(gc);
    const int64_t K = gc->conv, R = K - 1;
    const float *w = s->p[ci], *b = s->p[ci + 1];
    float *ring = s->state + (int64_t)max_offset(gc) * gc->rank;
    for (int64_t c = 0; c < d; c++) u[c] = inp[c] + b[c] + w[c * K] * inp[c];
    for (int64_t k = 1; k < K && k <= s->pos; k++)
        for (int64_t c = 0; c < d; c++) u[c] += w[c * K + k] * ring[(s->pos - k) % R * d + c];
    if (R > 0) memcpy(ring + s->pos % R * d, inp, (size_t)d * sizeof *inp);
    return u;
}

static void g_step(const gf_mixer_step *s, float *out, const float *inp) {
    const gf_grassmann_config *gc = GC(s->cfg, s->layer);
    const int64_t d = gf_layer_dim(s->cfg, s->layer), r = gc->rank, F = feat_dim(s->cfg, s->layer), K = max_offset(gc);
    const int *offs = gc->offsets;
    const int n_offs = gc->n_offsets;
    float *z = s->scratch, *pbar = z + r, *g = pbar + F, *a = g + d, *m = gc->extra_proj ? a + d : out;
    const float *red_in = gc->conv ? conv_step(s, gc, d, inp, a + 2 * d) : inp;
    gf_linear_forward(z, red_in, d, s->p[P_RED_W], d, s->p[P_RED_B], 1, d, r, 0.0f);
    const float *vs[2 * GF_MAX_OFFSETS];
    int cnt = 0;
    const int64_t W = gc->window;
    for (int o = 0; o < n_offs; o++) {
        const int64_t col = gc->grid ? s->pos % gc->grid : 0, dc = gc->grid ? -gf_grassmann_grid_col(offs[o], gc->grid) : 0;
        const bool in = offs[o] <= s->pos && (!W || (s->pos - offs[o]) / W == s->pos / W) && on_grid(gc->grid, col, dc);
        vs[o] = in ? s->state + (s->pos - offs[o]) % K * r : NULL;
        cnt += vs[o] != NULL;
    }
    if (cnt) {
        int steps[GF_MAX_OFFSETS];
        double wt[GF_MAX_OFFSETS];
        int64_t stride;
        const float *mix = mix_logits(gc, s->p, inp, 1, d, a + 3 * d, &stride);
        const pairing causal = {.n = n_offs, .mix = mix, .n_offsets = n_offs};
        const double wsum = slot_weights(&causal, 0, vs, wt);
        for (int o = 0; o < n_offs; o++) steps[o] = -offs[o];
        const int64_t rh = head_rank(gc), Ch = head_pairs(gc);
        for (int64_t h = 0; gc->plucker && h < gc->heads; h++) { /* head h: dimensions h*rh .. of the token
                                                                   * and its partners */
            const float *vh[GF_MAX_OFFSETS];
            for (int o = 0; o < n_offs; o++) vh[o] = vs[o] ? vs[o] + h * rh : NULL;
            plucker_row(pbar + h * Ch, z + h * rh, vh, steps, n_offs, wt, wsum, rh, gc->plucker_eps);
        }
        if (!gc->plucker) pair_row(pbar, z, vs, steps, n_offs, cnt, r);
        gf_linear_forward(g, pbar, F, s->p[P_PROJ_W], F, s->p[P_PROJ_B], 1, F, d, 0.0f);
    } else {
        gf_zero(g, d); /* no offset looks back from here: g = 0 (not the bias) */
    }
    /* only now overwrite the oldest slot: offset K reads it above */
    for (int64_t j = 0; j < r; j++) s->state[s->pos % K * r + j] = z[j];
    gate_forward(s->p, gc, d, out, a, m, inp, g, 1);
}

/* ---- inspection: the layer's terms offset by offset, and its gate (grassmann.h) ------------------------ */

int64_t gf_grassmann_n_coords(const gf_config *cfg, int layer) {
    return GC(cfg, layer)->plucker ? n_pairs(cfg, layer) : 0;
}

void gf_grassmann_coord_dims(const gf_config *cfg, int layer, int32_t *ci, int32_t *cj) {
    const gf_grassmann_config *g = GC(cfg, layer);
    const int64_t rh = head_rank(g);
    int64_t k = 0;
    for (int64_t h = 0; h < g->heads; h++) /* head by head, pairs i < j in row-major order (plucker_row) */
        for (int64_t i = 0; i < rh; i++)
            for (int64_t j = i + 1; j < rh; j++, k++) {
                ci[k] = (int32_t)(h * rh + i);
                cj[k] = (int32_t)(h * rh + j);
            }
}

/* Row t's feature f (feat_dim) for slot o alone, whose partner exists: what the forward averages over S_t,
 * the normalised Pluecker vector head by head (plucker_row with one partner), or [z_later; z_earlier]. */
static void slot_feature(float *f, const float *z, int64_t t, int o, const gf_grassmann_config *g, const pairing *pr) {
    const int64_t r = g->rank, rh = head_rank(g), Ch = head_pairs(g);
    const float *vs[2 * GF_MAX_OFFSETS] = {0};
    double one[2 * GF_MAX_OFFSETS] = {0};
    vs[o] = z + (t + pr->step[o]) * r;
    one[o] = 1.0;
    if (!g->plucker) {
        pair_row(f, z + t * r, vs, pr->step, pr->n, 1, r);
        return;
    }
    for (int64_t h = 0; h < g->heads; h++) {
        const float *vh[2 * GF_MAX_OFFSETS] = {0};
        vh[o] = vs[o] + h * rh;
        plucker_row(f + h * Ch, z + t * r + h * rh, vh, pr->step, pr->n, one, 1.0, rh, g->plucker_eps);
    }
}

/* Per row: n_valid, pi_D |terms| and the pi-weighted mean |phat| of each coordinate over S_t (pi: the slot's
 * weight in the mean, 1 / n_valid unless offset_mix is learned). */
static void probe_rows(const gf_grassmann_probe *p, const float *feat, const float *terms, const pairing *pr,
                       int64_t T, int64_t d, int64_t F, int64_t C) {
    const int K = pr->n;
    for (int64_t t = 0; t < T; t++) {
        const float *vs[2 * GF_MAX_OFFSETS]; /* slot_weights reads only whether a partner exists */
        double wt[2 * GF_MAX_OFFSETS];
        for (int o = 0; o < K; o++) vs[o] = has_partner(pr, t, o) ? feat : NULL;
        const int cnt = valid_count(pr, t);
        const double wsum = slot_weights(pr, t, vs, wt);
        if (p->n_valid) p->n_valid[t] = cnt;
        for (int o = 0; o < K && p->valid; o++) p->valid[t * K + o] = has_partner(pr, t, o);
        for (int o = 0; o < K && p->contrib; o++) {
            const double nrm = sqrt(dot_d(terms + (t * K + o) * d, terms + (t * K + o) * d, d));
            p->contrib[t * K + o] = cnt ? (float)(nrm * wt[o] / wsum) : 0.0f;
        }
        for (int64_t k = 0; k < C && p->coord; k++) {
            double acc = 0.0; /* feat is 0 without a partner */
            for (int o = 0; o < K; o++) acc += wt[o] * fabs((double)feat[(t * K + o) * F + k]);
            p->coord[t * C + k] = cnt ? (float)(acc / wsum) : 0.0f;
        }
    }
}

/* The layer's forward over the T rows (g_forward's steps, in buffers of its own): a and the output. */
static void probe_gate(const gf_grassmann_probe *p, const gf_grassmann_config *gc, float *const *w, const float *inp,
                       const float *z, const pairing *pr, int64_t T, int64_t d, int64_t F, float *buf) {
    float *pbar = buf, *g = pbar + T * F, *a = g + T * d, *out = a + T * d, *m = out + T * d;
    if (gc->plucker)
        plucker_mean(pbar, z, gc, pr, T);
    else
        pair_mean(pbar, z, gc, pr, T);
    gf_linear_forward(g, pbar, F, w[P_PROJ_W], F, w[P_PROJ_B], T, F, d, 0.0f);
    zero_rows_without_partners(g, d, pr, T);
    gate_forward(w, gc, d, out, a, gc->extra_proj ? m : out, inp, g, T);
    if (p->gate && gc->gate) memcpy(p->gate, a, (size_t)(T * d) * sizeof *a);
    if (p->out) memcpy(p->out, out, (size_t)(T * d) * sizeof *out);
}

int gf_grassmann_probe_run(const gf_config *cfg, int layer, float *const *w, const float *inp, int64_t T,
                           const gf_grassmann_probe *p) {
    const gf_grassmann_config *gc = GC(cfg, layer);
    const bool causal = gf_stack_direction(cfg, gf_layer_stack(cfg, layer)) == GF_CAUSAL;
    const int64_t d = gf_layer_dim(cfg, layer), r = gc->rank, F = feat_dim(cfg, layer);
    const int64_t K = (causal ? 1 : 2) * gc->n_offsets, C = gf_grassmann_n_coords(cfg, layer);
    float *z = gf_alloc_floats(T * r + T * K * F + T * K * d + T * F + 5 * T * d + T * gc->n_offsets,
                               "the inspection of a Grassmann layer");
    if (!z) return -1;
    float *feat = z + T * r, *terms = feat + T * K * F, *buf = terms + T * K * d, *u = buf + T * F + 4 * T * d;
    int64_t stride;
    const float *mix = mix_logits(gc, w, inp, T, d, u + T * d, &stride);
    const pairing pr = make_pairing(gc, causal, T, NULL, mix, stride);
    if (gc->conv) conv_forward(u, inp, w[conv_index(gc)], w[conv_index(gc) + 1], 1, T, d, gc->conv, NULL);
    gf_linear_forward(z, gc->conv ? u : inp, d, w[P_RED_W], d, w[P_RED_B], T, d, r, 0.0f);
    for (int64_t t = 0; t < T; t++)
        for (int o = 0; o < pr.n; o++)
            if (has_partner(&pr, t, o)) slot_feature(feat + (t * K + o) * F, z, t, o, gc, &pr);
    gf_linear_forward(terms, feat, F, w[P_PROJ_W], F, NULL, T * K, F, d, 0.0f);
    probe_rows(p, feat, terms, &pr, T, d, F, C);
    if (p->terms) memcpy(p->terms, terms, (size_t)(T * K * d) * sizeof *terms);
    probe_gate(p, gc, w, inp, z, &pr, T, d, F, buf);
    gf_free(z);
    return 0;
}

const gf_mixer_ops gf_mixer_grassmann = {
    .version = GF_MIXER_OPS_VERSION,
    .name = "grassmann",
    .letter = 'g',
    .help = "Grassmann mixing (arXiv 2512.19428, docs/model.md): reduce to r dimensions, pair token t with t-D for\n"
            "each offset D (bidirectional: also t+D, each pair oriented from the later token to the earlier),\n"
            "normalise each pair's Pluecker coordinates, average, project back and gate into the hidden state.\n"
            "Linear in the sequence length; streams (causal) with a ring of max(D) reduced vectors.\n"
            "The paper's ablations: plucker false feeds each pair as its concatenation [z_later; z_earlier]\n"
            "(2r values) instead of its Pluecker coordinates (does the geometry matter, or only the pairing?);\n"
            "gate false drops the gate, output (h + g) / 2. Both stay linear in T; plucker false forms 2r-vectors\n"
            "in place of the r(r-1)/2 wedge (docs/model.md, \"The paper's ablations\").",
    .config_size = sizeof(gf_grassmann_config),
    .keys = KEYS,
    .n_keys = (int)(sizeof KEYS / sizeof KEYS[0]),
    .check = g_check,
    .gated_skip = true,
    .directions = GF_MIX_CAUSAL | GF_MIX_BIDIRECTIONAL,
    .masks = true,
    .param_specs = g_param_specs,
    .saved_floats = g_saved_floats,
    .scratch_floats = g_scratch_floats,
    .forward = g_forward,
    .backward = g_backward,
    .state_floats = g_state_floats,
    .step_scratch_floats = g_step_scratch_floats,
    .step = g_step,
};
