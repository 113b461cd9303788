/* Sliding-window attention with global tokens (Longformer, Beltagy et al. 2020, arXiv 2004.05150): the
 * attention mixer's tensors and heads, each query seeing only a band of keys around it plus the first
 * n_global positions.
 *
 *   causal:        query t sees key j  iff  j <= t and (t - j < w or j < g)
 *   bidirectional: query t sees key j  iff  |t - j| < w or j < g or t < g   (global tokens both ways)
 *
 * Padded keys are never seen. Per (batch, head), queries go in blocks of QB rows; a block's keys are two
 * runs of rows, the globals [0, n0) left of its band and the band [j1, j1 + n1) (bidirectional global
 * rows: one run, every key), so the scores of a block are QB x (g + QB + 2w) floats, never T x T, and the
 * cost is linear in T. The softmax, its backward, the projections and the streaming head's attention are
 * the attention family's (attn_common.h); only the choice of keys is this file's. */
#include <math.h>
#include <stddef.h>

#include "compute/blas.h"
#include "base/error.h"
#include "compute/parallel.h"
#include "mixers/attn_common.h"
#include "mixers/mixer.h"
#include "ops/ops.h"

typedef struct window_config {
    int64_t n_head; /* gf_attn_config's members first */
    int64_t window;   /* w */
    int64_t n_global; /* g */
} window_config;

#define OFF(f) offsetof(window_config, f)
static const gf_cfg_key KEYS[] = {
    GF_ATTN_N_HEAD_KEY(window_config),
    {.name = "window", .type = GF_KEY_INT, .off = OFF(window), .lo = 1, .hi = 1 << 24, .def = "64",
     .help = "w: a query sees the keys less than w positions away (causal: itself and the w - 1 before it)"},
    {.name = "n_global", .type = GF_KEY_INT, .off = OFF(n_global), .lo = 0, .hi = 1 << 24, .def = "0",
     .help = "g: the first g positions are global: every query sees them (causal: once reached), and "
             "bidirectionally they see every key (< max_len)"},
};
#undef OFF

enum { QB = GF_ATTN_QB };

static const window_config *WC(const gf_config *cfg, int layer) { return gf_layer_mcfg(cfg, layer); }

static int w_check(const gf_config *cfg, int layer, const char *src) {
    if (gf_attn_check(cfg, layer, src)) return -1;
    const window_config *w = WC(cfg, layer);
    if (cfg->max_len > 0 && w->n_global >= cfg->max_len)
        return gf_fail("%s: layer %d: n_global %lld is not below max_len %lld: the global positions must leave "
                       "room for the others\nHINT: set n_global below %lld (0: no global tokens)",
                       src, layer, (long long)w->n_global, (long long)cfg->max_len, (long long)cfg->max_len);
    return 0;
}

/* ---- which keys a query sees ---------------------------------------------------------------------- */

typedef struct geom {
    int64_t T, w, g;
    bool bidir;
    int64_t gq; /* bidirectional global rows per block: as many as fit in a band block's scores */
} geom;

/* Floats of one block's score matrix at most, in either direction: QB queries x the band's keys (at most
 * g + QB + 2(w - 1)), or one global row x T; so a thread's memory is O(QB (g + QB + w) + T). */
static int64_t block_floats(int64_t T, int64_t w, int64_t g) {
    const int64_t cols = g + QB + 2 * (w - 1), band = QB * (cols < T ? cols : T);
    return g > 0 && T > band ? T : band;
}

static geom geom_of(const gf_config *cfg, int layer, int64_t T, bool bidir) {
    const window_config *w = WC(cfg, layer);
    const int64_t gq = T > 0 ? block_floats(T, w->window, w->n_global) / T : 1;
    return (geom){T, w->window, w->n_global, bidir, gq < 1 ? 1 : gq > QB ? QB : gq};
}

static bool visible(const geom *G, int64_t t, int64_t j) {
    if (G->bidir) return t < G->g || j < G->g || (t - j < G->w && j - t < G->w);
    return j <= t && (j < G->g || t - j < G->w);
}

/* A block of queries [i0, i0 + nq) and its keys: column c of its rows is key c for c < n0 (globals left of
 * the band), else key j1 + c - n0 (the band); S = n0 + n1 columns. */
typedef struct wblock {
    int64_t i0, nq, n0, j1, n1, S;
} wblock;

/* Blocks never straddle the bidirectional global rows [0, min(g, T)), which see every key, G->gq at a time. */
static wblock block_at(const geom *G, int64_t i0) {
    const int64_t split = G->bidir ? (G->g < G->T ? G->g : G->T) : 0, end = i0 < split ? split : G->T,
                  rows = i0 < split ? G->gq : QB;
    wblock k = {.i0 = i0, .nq = end - i0 < rows ? end - i0 : rows, .n0 = 0, .j1 = 0, .n1 = G->T};
    if (i0 >= split) {
        const int64_t lo = i0 - G->w + 1 > 0 ? i0 - G->w + 1 : 0, top = i0 + k.nq + (G->bidir ? G->w - 1 : 0);
        k.n0 = G->g < lo ? G->g : lo;
        k.j1 = lo;
        k.n1 = (top < G->T ? top : G->T) - lo;
    }
    k.S = k.n0 + k.n1;
    return k;
}

/* ---- products over a block's two runs of keys ------------------------------------------------------ */

/* out (nq, S) = alpha A X_keys^T: A (nq, dh) rows of stride lda, X the key rows (stride ld). */
static void runs_nt(float *out, const wblock *k, float alpha, const float *A, int64_t lda, const float *X,
                    int64_t ld, int64_t dh) {
    if (k->n0) gf_sgemm(false, true, k->nq, k->n0, dh, alpha, A, lda, X, ld, 0.0f, out, k->S);
    gf_sgemm(false, true, k->nq, k->n1, dh, alpha, A, lda, X + k->j1 * ld, ld, 0.0f, out + k->n0, k->S);
}

/* out (nq, dh) = P X_keys (+ out when acc): P (nq, S). */
static void runs_nn(float *out, int64_t ldo, const wblock *k, const float *P, const float *X, int64_t ld,
                    int64_t dh, bool acc) {
    gf_sgemm(false, false, k->nq, dh, k->n1, 1.0f, P + k->n0, k->S, X + k->j1 * ld, ld, acc ? 1.0f : 0.0f, out, ldo);
    if (k->n0) gf_sgemm(false, false, k->nq, dh, k->n0, 1.0f, P, k->S, X, ld, 1.0f, out, ldo);
}

/* Y_keys += P^T A: P (nq, S), A (nq, dh) of stride lda, Y the key rows (stride ld). */
static void runs_tn(float *Y, int64_t ld, const wblock *k, const float *P, const float *A, int64_t lda, int64_t dh) {
    if (k->n0) gf_sgemm(true, false, k->n0, dh, k->nq, 1.0f, P, k->S, A, lda, 1.0f, Y, ld);
    gf_sgemm(true, false, k->n1, dh, k->nq, 1.0f, P + k->n0, k->S, A, lda, 1.0f, Y + k->j1 * ld, ld);
}

/* P (nq, S) = the block's softmax(scale q k^T) over the keys each query sees (the rest 0); vis: S bytes. */
static void block_probs(float *P, uint8_t *vis, const geom *G, const wblock *k, const float *q, const float *kk,
                        int64_t ld, int64_t dh, float scale, const uint8_t *km, const float *lse_in, float *lse_out) {
    runs_nt(P, k, scale, q + k->i0 * ld, ld, kk, ld, dh);
    for (int64_t ii = 0; ii < k->nq; ii++) {
        const int64_t t = k->i0 + ii;
        for (int64_t c = 0; c < k->S; c++) {
            const int64_t j = c < k->n0 ? c : k->j1 + c - k->n0;
            vis[c] = (!km || km[j]) && visible(G, t, j);
        }
        gf_softmax_row(P + ii * k->S, k->S, vis, lse_in ? lse_in + t : NULL, lse_out ? lse_out + t : NULL);
    }
}

/* ---- forward and backward ---------------------------------------------------------------------------- */

/* saved: qkv (N,3d) | o (N,d) | lse (B,H,T), as attention's */
static int64_t w_saved_floats(const gf_config *cfg, int layer, int64_t B, int64_t T) {
    return 4 * B * T * gf_layer_dim(cfg, layer) + B * gf_attn_n_head(cfg, layer) * T;
}

/* per thread: P and dS (block_floats each) and one row's visibility (T bytes) */
static int64_t thread_floats(const gf_config *cfg, int layer, int64_t T) {
    const window_config *w = WC(cfg, layer);
    return 2 * block_floats(T, w->window, w->n_global) + (T + 3) / 4;
}

/* scratch: per thread (thread_floats) | dO (N,d) | dqkv (N,3d) */
static int64_t w_scratch_floats(const gf_config *cfg, int layer, int64_t B, int64_t T, int n_threads) {
    return (int64_t)n_threads * thread_floats(cfg, layer, T) + 4 * B * T * gf_layer_dim(cfg, layer);
}

static void w_forward(const gf_mixer_call *c, float *out, const float *inp) {
    const int64_t B = c->B, T = c->T, N = B * T, d = gf_layer_dim(c->cfg, c->layer), H = gf_attn_n_head(c->cfg, c->layer),
                  dh = d / H, per = thread_floats(c->cfg, c->layer, T);
    float *qkv = c->saved, *o = qkv + 3 * N * d, *lse = o + N * d;
    const float scale = 1.0f / sqrtf((float)dh);
    const geom G = geom_of(c->cfg, c->layer, T, c->bidirectional);
    const int64_t bf = block_floats(T, G.w, G.g);

    gf_attn_qkv_forward(c, qkv, inp);
#pragma omp parallel for schedule(static) num_threads(c->n_threads)
    for (int64_t bh = 0; bh < B * H; bh++) {
        const int64_t b = bh / H, h = bh % H;
        float *P = c->scratch + (int64_t)gf_thread_id() * per;
        uint8_t *vis = (uint8_t *)(P + 2 * bf);
        const float *q = qkv + b * T * 3 * d + h * dh, *k = q + d, *v = q + 2 * d;
        const uint8_t *km = c->mask ? c->mask + b * T : NULL;
        for (int64_t i0 = 0; i0 < T;) {
            const wblock kb = block_at(&G, i0);
            block_probs(P, vis, &G, &kb, q, k, 3 * d, dh, scale, km, NULL, lse + bh * T);
            runs_nn(o + (b * T + i0) * d + h * dh, d, &kb, P, v, 3 * d, dh, false);
            i0 += kb.nq;
        }
    }
    gf_attn_proj_forward(c, out, o);
}

static void w_backward(const gf_mixer_call *c, float *dinp, const float *dout, const float *inp) {
    const int64_t B = c->B, T = c->T, N = B * T, d = gf_layer_dim(c->cfg, c->layer), H = gf_attn_n_head(c->cfg, c->layer),
                  dh = d / H, per = thread_floats(c->cfg, c->layer, T);
    const float *qkv = c->saved, *o = qkv + 3 * N * d, *lse = o + N * d;
    float *dO = c->scratch + (int64_t)c->n_threads * per, *dqkv = dO + N * d;
    const float scale = 1.0f / sqrtf((float)dh);
    const geom G = geom_of(c->cfg, c->layer, T, c->bidirectional);
    const int64_t bf = block_floats(T, G.w, G.g);

    gf_attn_proj_backward(c, dO, dout, o);
    gf_zero(dqkv, 3 * N * d);
#pragma omp parallel for schedule(static) num_threads(c->n_threads)
    for (int64_t bh = 0; bh < B * H; bh++) {
        const int64_t b = bh / H, h = bh % H;
        float *P = c->scratch + (int64_t)gf_thread_id() * per, *dS = P + bf;
        uint8_t *vis = (uint8_t *)(P + 2 * bf);
        const float *q = qkv + b * T * 3 * d + h * dh, *k = q + d, *v = q + 2 * d;
        float *dq = dqkv + b * T * 3 * d + h * dh, *dk = dq + d, *dv = dq + 2 * d;
        const uint8_t *km = c->mask ? c->mask + b * T : NULL;
        for (int64_t i0 = 0; i0 < T;) {
            const wblock kb = block_at(&G, i0);
            const float *dOh = dO + (b * T + i0) * d + h * dh;
            block_probs(P, vis, &G, &kb, q, k, 3 * d, dh, scale, km, lse + bh * T, NULL);
            runs_tn(dv, 3 * d, &kb, P, dOh, d, dh);                  /* dv += P^T dO */
            runs_nt(dS, &kb, 1.0f, dOh, d, v, 3 * d, dh);            /* dP = dO v^T */
            for (int64_t ii = 0; ii < kb.nq; ii++) gf_softmax_back_row(dS + ii * kb.S, P + ii * kb.S, kb.S, scale);
            runs_nn(dq + i0 * 3 * d, 3 * d, &kb, dS, k, 3 * d, dh, true); /* dq += dS k */
            runs_tn(dk, 3 * d, &kb, dS, q + i0 * 3 * d, 3 * d, dh);  /* dk += dS^T q */
            i0 += kb.nq;
        }
    }
    gf_attn_qkv_backward(c, dinp, dqkv, inp);
}

/* ---- streaming: a ring of the last w keys and values, and the g global ones --------------------------- */

/* Slots of k (d) then v (d): position j at ring slot j % w while it is in the window, then, if j < g, at
 * slot R + j once it leaves (R = min(w, cap): the ring grows with the text up to w slots, and while it is
 * smaller nothing has left it yet, so the global slots are unused and growing cap only appends). */
static int64_t ring_slots(const gf_config *cfg, int layer, int64_t cap) {
    const int64_t w = WC(cfg, layer)->window;
    return w < cap ? w : cap;
}

static int64_t w_state_floats(const gf_config *cfg, int layer, int64_t cap) {
    return (ring_slots(cfg, layer, cap) + WC(cfg, layer)->n_global) * 2 * gf_layer_dim(cfg, layer);
}

/* step scratch: qkv (3d) | o (d) | scores (H, ring + g) */
static int64_t w_step_scratch_floats(const gf_config *cfg, int layer, int64_t cap) {
    return 4 * gf_layer_dim(cfg, layer) +
           gf_attn_n_head(cfg, layer) * (ring_slots(cfg, layer, cap) + WC(cfg, layer)->n_global);
}

static void w_step(const gf_mixer_step *s, float *out, const float *inp) {
    const gf_config *cfg = s->cfg;
    const window_config *wc = WC(cfg, s->layer);
    const int64_t d = gf_layer_dim(cfg, s->layer), H = gf_attn_n_head(cfg, s->layer), dh = d / H, p = s->pos,
                  w = wc->window, g = wc->n_global, R = ring_slots(cfg, s->layer, s->cap);
    float *qkv = s->scratch, *o = qkv + 3 * d, *sc = o + d, *slot = s->state + p % w * 2 * d;
    const float scale = 1.0f / sqrtf((float)dh);
    gf_linear_forward(qkv, inp, d, s->p[GF_ATTN_QKV_W], d, s->p[GF_ATTN_QKV_B], 1, d, 3 * d, 0.0f);
    if (p >= w && p - w < g) /* position p - w leaves the window: a global one keeps its key and value */
        for (int64_t j = 0; j < 2 * d; j++) s->state[(R + p - w) * 2 * d + j] = slot[j];
    for (int64_t j = 0; j < 2 * d; j++) slot[j] = qkv[d + j];
    /* the ring's filled slots, then (once it is full, R = w) the globals that left it: one run of slots */
    const int64_t n_ring = p + 1 < w ? p + 1 : w, n_left = p - w + 1 < g ? p - w + 1 : g,
                  n = n_ring + (n_left > 0 ? n_left : 0);
    GF_PAR_FOR(n * d > GF_PAR_MIN, for (int64_t h = 0; h < H; h++)
                   gf_attn_step_head(o + h * dh, qkv + h * dh, s->state + h * dh, s->state + d + h * dh, 2 * d, n, dh, scale,
                                     sc + h * (R + g)););
    gf_linear_forward(out, o, d, s->p[GF_ATTN_PROJ_W], d, s->p[GF_ATTN_PROJ_B], 1, d, d, 0.0f);
}

const gf_mixer_ops gf_mixer_window = {
    .version = GF_MIXER_OPS_VERSION,
    .name = "window",
    .letter = 'w',
    .help = "Sliding-window attention with global tokens (Longformer, Beltagy et al. 2020): the attention\n"
            "mixer's tensors and heads, each query seeing only the keys less than `window` positions away\n"
            "(causal: itself and the window - 1 before it) plus the first `n_global` positions, which\n"
            "bidirectionally also see every key. Linear in the sequence length: O(T (w + g) d) (global rows:\n"
            "O(g T d)), blocked over the band, never a T x T matrix; streams (causal) with a ring of w keys\n"
            "and values plus the g global ones, 2 d (w + g) floats, whatever the position.",
    .config_size = sizeof(window_config),
    .keys = KEYS,
    .n_keys = (int)(sizeof KEYS / sizeof KEYS[0]),
    .check = w_check,
    .gated_skip = false,
    .directions = GF_MIX_CAUSAL | GF_MIX_BIDIRECTIONAL,
    .masks = true,
    .param_specs = gf_attn_param_specs,
    .saved_floats = w_saved_floats,
    .scratch_floats = w_scratch_floats,
    .forward = w_forward,
    .backward = w_backward,
    .state_floats = w_state_floats,
    .step_scratch_floats = w_step_scratch_floats,
    .step = w_step,
};
