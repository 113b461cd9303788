/* Mixer tests: the Grassmann, attention and linformer mixers through the gf_mixer_ops interface, against the
 * literal double references of tests/unit/ref_ops.h (forward) and central finite differences of those
 * references (backward: the input gradient and every parameter gradient, accumulated into buffers
 * pre-filled with random values). Saved and scratch buffers are allocated at exactly the declared sizes
 * and filled with NaN, so an overrun trips ASan and a read of memory the mixer did not write shows up as
 * NaN in the results. */
#include "mixers/grassmann.h"
#include "testlib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compute/parallel.h"
#include "mixers/mixer.h"
#include "ref_ops.h"

#define FD_H 1e-6
#define LAYER 1 /* the mixer runs as layer 1; layer 0 holds a decoy offset list */

/* allocations: talloc/falloc/dalloc from testlib, freed by pool_teardown after each test */

/* ---- cases ------------------------------------------------------------------------------------ */

typedef struct {
    const char *name;
    const char *mixer; /* "grassmann", "attention", "window", "linformer" or "performer" */
    int64_t d, H, r, B, T;
    int n_offsets;
    int offsets[GF_MAX_OFFSETS];
    bool extra_proj;
    float eps;     /* plucker_eps; 0 means 1e-8 */
    bool parallel; /* Grassmann eps branch: some z_t exactly parallel to z_{t-D} (p = 0) */
    bool bidir;    /* pairs / keys on both sides */
    bool padded;   /* a padding mask: row 1 ends in 3 padded positions, row 0 has one at t = 1 */
    bool pad_first; /* with padded: row 1 begins with 2 padded positions too (causal: queries that see no key) */
    int64_t window; /* Grassmann: pairs only within windows of this many positions (0: none) */
    int64_t grid;   /* Grassmann: the positions a grid of this many columns (0: none) */
    int64_t heads;  /* Grassmann mixing heads (0 means 1) */
    int64_t w, g;   /* window attention: window and n_global */
    bool no_plucker; /* Grassmann plucker: false (the pair as [z_later; z_earlier]) */
    bool no_gate;    /* Grassmann gate: false (out (h + g) / 2) */
    uint64_t seed; /* added to every seed of the random data */
    bool fast;     /* the mixer also under --precision fp32-fast, against the same references */
    int64_t k_proj, max_len; /* linformer: E and F (k_proj, max_len); max_len 0 means 256 */
    int64_t m;           /* performer: features */
    float omega_scale;   /* performer: omega as drawn times this (0 means 1; > 1 reaches the key shift) */
} mix_case;

static bool is_grassmann(const mix_case *mc) { return !strcmp(mc->mixer, "grassmann"); }
static bool is_linformer(const mix_case *mc) { return !strcmp(mc->mixer, "linformer"); }
static bool is_gru(const mix_case *mc) { return !strcmp(mc->mixer, "gru"); }
static bool is_token_mlp(const mix_case *mc) { return !strcmp(mc->mixer, "token-mlp"); }

static gf_grassmann_config *GC(gf_config *cfg, int l) { return (gf_grassmann_config *)(void *)cfg->layers[l].params.bytes; }

static void make_cfg(gf_config *cfg, const mix_case *mc) {
    memset(cfg, 0, sizeof *cfg);
    cfg->vocab_size = 32;
    cfg->d_model = mc->d;
    cfg->n_layer = 2;
    cfg->d_ff = 4 * mc->d;
    cfg->max_len = 256; /* room for window's n_global; linformer: then mc->max_len, once k_proj fits it */
    cfg->ln_eps = 1e-5f;
    const gf_mixer_ops *ops = gf_mixer_find(mc->mixer);
    if (!ops) fail_msg("%s: no mixer %s", mc->name, mc->mixer);
    gf_layer_set_mixer(cfg, 0, ops);
    gf_layer_set_mixer(cfg, LAYER, ops);
    if (is_linformer(mc) || is_token_mlp(mc) || (is_gru(mc) && mc->bidir)) { /* bidirectional only: a classifier */
        cfg->direction = GF_BIDIRECTIONAL;
        if (gf_config_set(cfg, "head.kind=classify")) fail_msg("%s: %s", mc->name, gf_last_error());
    }
    char head[64];
    snprintf(head, sizeof head, "n_head=%lld", (long long)mc->H);
    if (!is_grassmann(mc) && !is_gru(mc) && !is_token_mlp(mc) && gf_config_set(cfg, head))
        fail_msg("%s: %s", mc->name, gf_last_error());
    snprintf(head, sizeof head, "features=%lld", (long long)mc->m);
    if (mc->m && gf_config_set(cfg, head)) fail_msg("%s: %s", mc->name, gf_last_error());
    char kp[64]; /* layer 0 is a decoy with k_proj 1 */
    snprintf(kp, sizeof kp, "layers.%d.k_proj=%lld", LAYER, (long long)mc->k_proj);
    if (is_linformer(mc) && (gf_config_set(cfg, "layers.0.k_proj=1") || gf_config_set(cfg, kp)))
        fail_msg("%s: %s", mc->name, gf_last_error());
    snprintf(kp, sizeof kp, "layers.%d.hidden=%lld", LAYER, (long long)mc->k_proj); /* token-mlp: k_proj is hidden */
    if (is_token_mlp(mc) && (gf_config_set(cfg, "layers.0.hidden=1") || gf_config_set(cfg, kp)))
        fail_msg("%s: %s", mc->name, gf_last_error());
    snprintf(kp, sizeof kp, "max_len=%lld", (long long)mc->max_len);
    if (mc->max_len && gf_config_set(cfg, kp)) fail_msg("%s: %s", mc->name, gf_last_error());
    char wset[2][64];
    snprintf(wset[0], sizeof wset[0], "layers.%d.window=%lld", LAYER, (long long)mc->w);
    snprintf(wset[1], sizeof wset[1], "layers.%d.n_global=%lld", LAYER, (long long)mc->g);
    for (int k = 0; !strcmp(mc->mixer, "window") && k < 2; k++) /* layer 0 keeps the defaults: a decoy */
        if (gf_config_set(cfg, wset[k])) fail_msg("%s: %s", mc->name, gf_last_error());
    for (int l = 0; is_grassmann(mc) && l < 2; l++) {
        gf_grassmann_config *g = GC(cfg, l);
        g->rank = mc->r;
        g->heads = 1;
        g->n_offsets = 1; /* layer 0 is a decoy: a mixer reading its offsets computes something else */
        g->offsets[0] = 1;
        if (l != LAYER) continue;
        g->n_offsets = mc->n_offsets;
        for (int k = 0; k < mc->n_offsets; k++) g->offsets[k] = mc->offsets[k];
        g->plucker_eps = mc->eps > 0.0f ? mc->eps : 1e-8f;
        g->extra_proj = mc->extra_proj;
        g->window = mc->window;
        g->grid = mc->grid;
        g->heads = mc->heads ? mc->heads : 1;
        g->plucker = !mc->no_plucker;
        g->gate = !mc->no_gate;
    }
    cfg->norm = GF_NORM_PRE;
    cfg->gelu = GF_GELU_ERF;
    cfg->pos = GF_POS_LEARNED;
    if (gf_config_validate(cfg, mc->name) != 0)
        fail_msg("%s: test config invalid: %s", mc->name, gf_last_error());
}

/* The parameter list docs/model.md prescribes, in the order the references take it. */
static int expected_specs(const mix_case *mc, gf_param_spec *s) {
    const int64_t d = mc->d, r = mc->r, H = mc->heads ? mc->heads : 1, C = H * ((r / H) * (r / H - 1) / 2); /* per head */
    if (is_gru(mc)) { /* torch.nn.GRU's tensors under its names */
        static const char *const NAMES[2][4] = {
            {"gru.weight_ih_l0", "gru.weight_hh_l0", "gru.bias_ih_l0", "gru.bias_hh_l0"},
            {"gru.weight_ih_l0_reverse", "gru.weight_hh_l0_reverse", "gru.bias_ih_l0_reverse", "gru.bias_hh_l0_reverse"}};
        const int nd = mc->bidir ? 2 : 1;
        const int64_t u = d / nd;
        for (int k = 0; k < nd; k++) {
            gf_param_spec_set(&s[4 * k], NAMES[k][0], 2, 3 * u, d, GF_INIT_NORMAL);
            gf_param_spec_set(&s[4 * k + 1], NAMES[k][1], 2, 3 * u, u, GF_INIT_NORMAL);
            gf_param_spec_set(&s[4 * k + 2], NAMES[k][2], 1, 3 * u, 0, GF_INIT_ZERO);
            gf_param_spec_set(&s[4 * k + 3], NAMES[k][3], 1, 3 * u, 0, GF_INIT_ZERO);
        }
        return 4 * nd;
    }
    if (is_token_mlp(mc)) { /* Linear(max_len, hidden) and Linear(hidden, max_len) along the positions */
        gf_param_spec_set(&s[0], "fc1.weight", 2, mc->k_proj, mc->max_len, GF_INIT_NORMAL);
        gf_param_spec_set(&s[1], "fc1.bias", 1, mc->k_proj, 0, GF_INIT_ZERO);
        gf_param_spec_set(&s[2], "fc2.weight", 2, mc->max_len, mc->k_proj, GF_INIT_NORMAL);
        gf_param_spec_set(&s[3], "fc2.bias", 1, mc->max_len, 0, GF_INIT_ZERO);
        return 4;
    }
    if (!is_grassmann(mc)) {
        gf_param_spec_set(&s[0], "qkv.weight", 2, 3 * d, d, GF_INIT_NORMAL);
        gf_param_spec_set(&s[1], "qkv.bias", 1, 3 * d, 0, GF_INIT_ZERO);
        gf_param_spec_set(&s[2], "proj.weight", 2, d, d, GF_INIT_NORMAL);
        gf_param_spec_set(&s[3], "proj.bias", 1, d, 0, GF_INIT_ZERO);
        if (mc->m) {
            gf_param_spec_set(&s[4], "omega", 2, mc->m, d / mc->H, GF_INIT_ZERO);
            s[4].buffer = true;
            return 5;
        }
        if (!is_linformer(mc)) return 4;
        gf_param_spec_set(&s[4], "E", 2, mc->k_proj, mc->max_len, GF_INIT_NORMAL);
        gf_param_spec_set(&s[5], "F", 2, mc->k_proj, mc->max_len, GF_INIT_NORMAL);
        return 6;
    }
    gf_param_spec_set(&s[0], "red.weight", 2, r, d, GF_INIT_NORMAL);
    gf_param_spec_set(&s[1], "red.bias", 1, r, 0, GF_INIT_ZERO);
    if (mc->no_plucker) {
        gf_param_spec_set(&s[2], "pair.weight", 2, d, 2 * r, GF_INIT_NORMAL);
        gf_param_spec_set(&s[3], "pair.bias", 1, d, 0, GF_INIT_ZERO);
    } else {
        gf_param_spec_set(&s[2], "plucker.weight", 2, d, C, GF_INIT_NORMAL);
        gf_param_spec_set(&s[3], "plucker.bias", 1, d, 0, GF_INIT_ZERO);
    }
    int n = 4;
    if (!mc->no_gate) {
        gf_param_spec_set(&s[n++], "gate.weight", 2, d, 2 * d, GF_INIT_NORMAL);
        gf_param_spec_set(&s[n++], "gate.bias", 1, d, 0, GF_INIT_ZERO);
    }
    if (!mc->extra_proj) return n;
    gf_param_spec_set(&s[n++], "out.weight", 2, d, d, GF_INIT_NORMAL);
    gf_param_spec_set(&s[n++], "out.bias", 1, d, 0, GF_INIT_ZERO);
    return n;
}

static int64_t spec_numel(const gf_param_spec *s) { return s->shape[0] * (s->ndim == 2 ? s->shape[1] : 1); }

typedef struct {
    const gf_config *cfg;
    bool grassmann, linformer, bidir;
    const uint8_t *mask;
    int64_t w, g; /* window attention (w = T, g = 0: full attention) */
    int64_t B, T, m; /* m: performer's features (0: another mixer) */
    int64_t n_head, k_proj; /* layer 1's (0: a key its mixer does not have) */
    double *inp;
    double *P[GF_MIXER_MAX_PARAMS];
    ref_grassmann_stats *st;
    bool gru;
    int64_t hidden; /* token-mlp's (0: another mixer) */
} mix_ctx;

static void mix_fwd(const void *c_, double *out) {
    const mix_ctx *c = c_;
    if (c->hidden) {
        ref_token_mlp(out, c->inp, (const double *const *)c->P, c->cfg->d_model, c->hidden, c->cfg->max_len, c->B,
                      c->T, c->cfg->gelu);
    } else if (c->gru) {
        ref_gru(out, c->inp, (const double *const *)c->P, c->cfg->d_model, c->B, c->T, c->bidir, c->mask);
    } else if (c->grassmann) {
        ref_grassmann(out, c->inp, (const double *const *)c->P, c->cfg, LAYER, c->B, c->T, c->bidir, c->mask, c->st);
    } else if (c->m) {
        ref_performer(out, c->inp, (const double *const *)c->P, c->cfg->d_model, c->n_head, c->m, c->B, c->T, c->bidir,
                      c->mask);
    } else if (c->linformer) {
        ref_linformer(out, c->inp, (const double *const *)c->P, c->cfg->d_model, c->n_head, c->k_proj,
                      c->cfg->max_len, c->B, c->T, c->mask);
    } else {
        ref_window_attention(out, c->inp, (const double *const *)c->P, c->cfg->d_model, c->n_head, c->B, c->T,
                             c->bidir, c->mask, c->w, c->g);
    }
}

/* A key of layer 1 as a number (0 when its mixer has no such key). */
static int64_t layer1_key(const gf_config *cfg, const char *key) {
    char *v = gf_config_get(cfg, key);
    const int64_t n = v ? atoll(v) : 0;
    free(v);
    return n;
}

/* ref_fd_grad of the input (which < 0) or of parameter `which`, the elements shared out among the OpenMP
 * threads (finite differences are most of this test's time): each thread perturbs its own copy of the
 * context's input (n_inp values, as many as the output) and parameters. The same values as one thread's. */
static void mix_fd_grad(double *grad, const mix_ctx *ctx, int which, int np, const int64_t *numel, int64_t n_inp,
                        const double *wd) {
#pragma omp parallel
    {
        mix_ctx c = *ctx;
        c.st = NULL;
        c.inp = malloc((size_t)n_inp * sizeof(double));
        memcpy(c.inp, ctx->inp, (size_t)n_inp * sizeof(double));
        for (int i = 0; i < np; i++) {
            c.P[i] = malloc((size_t)numel[i] * sizeof(double));
            memcpy(c.P[i], ctx->P[i], (size_t)numel[i] * sizeof(double));
        }
        double *x = which < 0 ? c.inp : c.P[which], *out = malloc((size_t)n_inp * sizeof *out);
        const int64_t n = which < 0 ? n_inp : numel[which];
#pragma omp for schedule(dynamic, 4)
        for (int64_t i = 0; i < n; i++) grad[i] = ref_fd_one(x, i, mix_fwd, &c, wd, out, n_inp, FD_H);
        free(out), free(c.inp);
        for (int i = 0; i < np; i++) free(c.P[i]);
    }
}

/* Dyadic values with few mantissa bits: z = red(h) and the products in p are then exact in float, so
 * rows built as exact multiples of one another give p = 0 exactly in the float kernel as in double. */
static void fill_dyadic(float *x, int64_t n, uint64_t seed, float step, int kmax) {
    tl_fill_uniform(x, n, seed, -1.0f, 1.0f);
    for (int64_t i = 0; i < n; i++) x[i] = step * roundf(x[i] * (float)kmax);
}

/* One case's setup, references and buffers, shared by the steps of run_case. */
typedef struct {
    const mix_case *mc;
    gf_config cfg;
    const gf_mixer_ops *ops;
    int np;
    gf_param_spec specs[GF_MIXER_MAX_PARAMS];
    int64_t numel[GF_MIXER_MAX_PARAMS];
    float *p[GF_MIXER_MAX_PARAMS], *pre[GF_MIXER_MAX_PARAMS], *p0[GF_MIXER_MAX_PARAMS]; /* pre: the gradients' */
    float *inp, *inp0, *dout, *dout0, *pre_inp;                                       /* prior contents */
    uint8_t *mask;
    double *want, *fd_inp, *fd_p[GF_MIXER_MAX_PARAMS], gscale;
} case_run;

/* The mixer's parameter specs against the expected ones; their sizes. */
static void case_specs(case_run *c) {
    const mix_case *mc = c->mc;
    gf_param_spec want_specs[GF_MIXER_MAX_PARAMS];
    memset(c->specs, 0, sizeof c->specs);
    const int np = c->np = c->ops->param_specs(&c->cfg, LAYER, c->specs), wnp = expected_specs(mc, want_specs);
    if (np != wnp) fail_msg("%s: param_specs returned %d params, want %d", mc->name, np, wnp);
    for (int i = 0; i < np; i++) {
        const gf_param_spec *s = &c->specs[i], *w = &want_specs[i];
        if (strcmp(s->name, w->name) != 0 || s->ndim != w->ndim || s->shape[0] != w->shape[0] ||
            (s->ndim == 2 && s->shape[1] != w->shape[1]) || s->init != w->init || s->buffer != w->buffer)
            fail_msg("%s: param %d is %s ndim %d (%lld, %lld) init %d; want %s ndim %d (%lld, %lld) init %d",
                     mc->name, i, s->name, s->ndim, (long long)s->shape[0], (long long)s->shape[1],
                     (int)s->init, w->name, w->ndim, (long long)w->shape[0], (long long)w->shape[1],
                     (int)w->init);
        c->numel[i] = spec_numel(s);
    }
}

/* Parameters (weights U(-1.5, 1.5)/sqrt(fan_in), biases U(-0.5, 0.5), buffers as the model draws them),
 * the input, the output gradient, the gradients' prior contents, the padding mask, and copies to check
 * that the mixer leaves its inputs alone. */
static void case_data(case_run *c) {
    const mix_case *mc = c->mc;
    const int64_t T = mc->T, d = mc->d, N = mc->B * T;
    for (int i = 0; i < c->np; i++) {
        c->p[i] = falloc(c->numel[i]);
        const float a = c->specs[i].ndim == 2 ? 1.5f / sqrtf((float)c->specs[i].shape[1]) : 0.5f;
        tl_fill_uniform(c->p[i], c->numel[i], mc->seed + 1000 + (uint64_t)i, -a, a);
        c->pre[i] = falloc(c->numel[i]);
        tl_fill_uniform(c->pre[i], c->numel[i], mc->seed + 2000 + (uint64_t)i, -0.5f, 0.5f);
    }
    if (gf_mixer_draw_fn(c->ops)) { /* buffers as the model draws them, scaled */
        gf_mixer_draw_fn(c->ops)(&c->cfg, LAYER, c->p, mc->seed + 7, 0);
        for (int i = 0; i < c->np; i++)
            for (int64_t k = 0; c->specs[i].buffer && k < c->numel[i]; k++)
                c->p[i][k] *= mc->omega_scale ? mc->omega_scale : 1.0f;
    }
    c->inp = falloc(N * d);
    tl_fill_uniform(c->inp, N * d, mc->seed + 3000, -1.0f, 1.0f);
    if (mc->parallel) {
        /* red.bias 0 and dyadic red.weight / h; then b=0: h3 = 2 h2, h5 = -h2/2; b=1: h1 = -h0 (parallel,
         * not identical: an identical partner is skipped, tests/unit/test_model.c) */
        fill_dyadic(c->p[0], c->numel[0], mc->seed + 1000, 0.125f, 4);
        ffill(c->p[1], c->numel[1], 0.0f);
        fill_dyadic(c->inp, N * d, mc->seed + 3000, 0.125f, 8);
        for (int64_t k = 0; k < d; k++) {
            c->inp[3 * d + k] = 2.0f * c->inp[2 * d + k];
            c->inp[5 * d + k] = -0.5f * c->inp[2 * d + k];
            c->inp[(T + 1) * d + k] = -c->inp[T * d + k];
        }
    }
    c->dout = falloc(N * d), c->pre_inp = falloc(N * d);
    tl_fill_uniform(c->dout, N * d, mc->seed + 4000, -1.0f, 1.0f);
    tl_fill_uniform(c->pre_inp, N * d, mc->seed + 5000, -0.5f, 0.5f);
    c->inp0 = fdup(c->inp, N * d), c->dout0 = fdup(c->dout, N * d);
    for (int i = 0; i < c->np; i++) c->p0[i] = fdup(c->p[i], c->numel[i]);
    c->mask = NULL;
    if (mc->padded) {
        c->mask = talloc((size_t)N);
        for (int64_t n = 0; n < N; n++)
            c->mask[n] = !((n / T == 1 && n % T >= T - 3) || (n / T == 0 && n % T == 1) ||
                           (mc->pad_first && n / T == 1 && n % T < 2));
    }
}

/* A Grassmann case's pairs must sit away from the clamp ||p|| = eps, where finite differences are well posed
 * (or, for `parallel`, exactly at p = 0). */
static void check_clamp(const mix_case *mc, gf_config *cfg, const ref_grassmann_stats *st) {
    if (mc->parallel) {
        if (st->n_clamped < 3 || st->max_clamped_norm != 0.0)
            fail_msg("%s: setup: %lld clamped pairs, largest norm %g; want >= 3 with p = 0 exactly", mc->name,
                     (long long)st->n_clamped, st->max_clamped_norm);
    } else if (st->n_clamped != 0) {
        fail_msg("%s: setup: %lld pairs below eps", mc->name, (long long)st->n_clamped);
    }
    if (st->n_pairs > st->n_clamped &&
        !(st->min_unclamped_norm > 2.0 * GC(cfg, LAYER)->plucker_eps && st->min_unclamped_norm > 5e-3))
        fail_msg("%s: setup: smallest unclamped ||p|| = %g is too close to eps", mc->name, st->min_unclamped_norm);
}

/* The reference forward in double and the finite-difference gradients of the input and every parameter. */
static void case_reference(case_run *c) {
    const mix_case *mc = c->mc;
    const int64_t T = mc->T, d = mc->d, N = mc->B * T;
    const bool win = !strcmp(mc->mixer, "window");
    ref_grassmann_stats st;
    mix_ctx ctx = {&c->cfg, is_grassmann(mc), is_linformer(mc), mc->bidir, c->mask, win ? mc->w : T,
                   win ? mc->g : 0, mc->B, T, mc->m, layer1_key(&c->cfg, "layers.1.n_head"),
                   layer1_key(&c->cfg, "layers.1.k_proj"), ddup_f(c->inp, N * d), {0}, &st, is_gru(mc),
                   is_token_mlp(mc) ? layer1_key(&c->cfg, "layers.1.hidden") : 0};
    for (int i = 0; i < c->np; i++) ctx.P[i] = ddup_f(c->p[i], c->numel[i]);
    double *wd = ddup_f(c->dout, N * d);
    c->want = dalloc(N * d);
    mix_fwd(&ctx, c->want);
    ctx.st = NULL;
    if (is_grassmann(mc)) check_clamp(mc, &c->cfg, &st);
    c->fd_inp = dalloc(N * d);
    mix_fd_grad(c->fd_inp, &ctx, -1, c->np, c->numel, N * d, wd);
    for (int i = 0; i < c->np; i++) {
        c->fd_p[i] = dalloc(c->numel[i]);
        mix_fd_grad(c->fd_p[i], &ctx, i, c->np, c->numel, N * d, wd);
    }
    /* Gradients that are 0 in exact arithmetic (r = 2: phat = sign(p), so no gradient reaches red) come out
     * of float cancellation, amplified by 1/||p||: judge every tensor at the scale of the input gradient
     * at least. */
    c->gscale = ref_max_abs(c->fd_inp, N * d);
}

/* The mixer's forward and backward on nth threads (its scratch sized for them), in fp32 or fp32-fast,
 * against the references; then that it left its inputs alone. */
static void case_check(case_run *c, int nth, bool fast) {
    const mix_case *mc = c->mc;
    const gf_mixer_ops *ops = c->ops;
    const int64_t B = mc->B, T = mc->T, N = B * T, nd = N * mc->d;
    assert_int_equal(gf_set_matmul_precision(fast ? GF_PRECISION_FP32_FAST : GF_PRECISION_FP32), 0);
    char name[128], what[200];
    snprintf(name, sizeof name, "%s%s", mc->name, fast ? ", fp32-fast" : "");
    const int64_t n_saved = ops->saved_floats(&c->cfg, LAYER, B, T);
    const int64_t n_scratch = ops->scratch_floats(&c->cfg, LAYER, B, T, nth);
    float *saved = falloc(n_saved), *scratch = falloc(n_scratch), *out = falloc(nd);
    ffill(saved, n_saved, NAN);
    ffill(scratch, n_scratch, NAN);
    ffill(out, nd, NAN);
    float *g[GF_MIXER_MAX_PARAMS] = {0};
    for (int i = 0; i < c->np; i++) g[i] = fdup(c->pre[i], c->numel[i]);
    float *dinp = fdup(c->pre_inp, nd);
    gf_mixer_call call = {.cfg = &c->cfg, .layer = LAYER, .B = B, .T = T, .p = c->p, .g = g,
                          .saved = saved, .scratch = scratch, .n_threads = nth, .bidirectional = mc->bidir,
                          .mask = c->mask};

    ops->forward(&call, out, c->inp);
    snprintf(what, sizeof what, "%s (%d threads): forward out", name, nth);
    ref_check_rel(what, out, c->want, nd, 1e-5, 1.0);

    ffill(scratch, n_scratch, NAN); /* scratch does not survive between calls */
    ops->backward(&call, dinp, c->dout, c->inp);
    snprintf(what, sizeof what, "%s (%d threads): backward dinp", name, nth);
    ref_check_grad(what, dinp, c->pre_inp, c->fd_inp, nd, 2e-5, c->gscale);
    for (int i = 0; i < c->np; i++) {
        snprintf(what, sizeof what, "%s (%d threads): backward d(%.31s)", name, nth, c->specs[i].name);
        if (c->specs[i].buffer) { /* never trained: the backward leaves its gradient alone */
            if (memcmp(g[i], c->pre[i], (size_t)c->numel[i] * sizeof *g[i]) != 0) fail_msg("%s: written", what);
        } else {
            ref_check_grad(what, g[i], c->pre[i], c->fd_p[i], c->numel[i], 2e-5, c->gscale);
        }
    }

    /* inputs are read-only */
    if (memcmp(c->inp, c->inp0, (size_t)nd * sizeof *c->inp) != 0) fail_msg("%s: the mixer modified inp", name);
    if (memcmp(c->dout, c->dout0, (size_t)nd * sizeof *c->dout) != 0) fail_msg("%s: backward modified dout", name);
    for (int i = 0; i < c->np; i++)
        if (memcmp(c->p[i], c->p0[i], (size_t)c->numel[i] * sizeof *c->p[i]) != 0)
            fail_msg("%s: the mixer modified parameter %s", name, c->specs[i].name);
}

static void run_case(const mix_case *mc) {
    static case_run c; /* large (the specs); one case at a time */
    memset(&c, 0, sizeof c);
    c.mc = mc;
    make_cfg(&c.cfg, mc);
    c.ops = gf_mixer_find(mc->mixer);
    if (!c.ops) fail_msg("%s: gf_mixer_find returned NULL", mc->name);
    case_specs(&c);
    case_data(&c);
    case_reference(&c);
    /* fp32 on the OpenMP thread count and on one thread, then fp32-fast on both */
    const int nths[2] = {gf_max_threads(), 1};
    static bool said;
    if (nths[0] == 1 && !said) /* the threads' split of the work is not checked: say so */
        said = true, print_message("test_mixers: one OpenMP thread here; the multi-thread paths do not run\n");
    for (int run = 0; run < (mc->fast ? 4 : 2); run++) {
        if (run % 2 == 1 && nths[1] == nths[0]) continue;
        case_check(&c, nths[run % 2], run >= 2);
    }
    assert_int_equal(gf_set_matmul_precision(GF_PRECISION_FP32), 0);
}

/* ---- Grassmann -------------------------------------------------------------------------------- */

/* d = 16, B = 2, eps 1e-8 (0), no extra_proj unless the arguments say otherwise */
#define GRASSMANN(nm, ...)                                                                                   \
    (mix_case) { .name = nm, .mixer = "grassmann", .d = 16, .H = 4, .B = 2, __VA_ARGS__ }
#define LONG_OFFSETS .n_offsets = 6, .offsets = {1, 2, 4, 8, 12, 16}

static void test_grassmann_r6_T7_long_offsets(void **state) {
    (void)state;
    mix_case mc = GRASSMANN("grassmann(r=6, T=7, offsets 1..16)", .r = 6, .T = 7, LONG_OFFSETS);
    run_case(&mc);
    mc.name = "grassmann(r=6, T=7, offsets 1..16, extra_proj)";
    mc.extra_proj = true;
    run_case(&mc);
}

static void test_grassmann_r6_T20_long_offsets(void **state) {
    (void)state;
    mix_case mc = GRASSMANN("grassmann(r=6, T=20, offsets 1..16)", .r = 6, .T = 20, LONG_OFFSETS);
    run_case(&mc);
    mc.name = "grassmann(r=6, T=20, offsets 1..16, extra_proj)";
    mc.extra_proj = true;
    run_case(&mc);
}

#define SEED_R2_T20 3
static void test_grassmann_r2(void **state) {
    (void)state;
    /* C = 1: phat = sign(p), so no gradient flows into red through the Plücker path */
    mix_case mc = GRASSMANN("grassmann(r=2, T=7, offsets 1..16, extra_proj)", .r = 2, .T = 7, LONG_OFFSETS,
                            .extra_proj = true);
    run_case(&mc);
    mc.name = "grassmann(r=2, T=20, offsets 1..16)";
    mc.T = 20;
    mc.seed = SEED_R2_T20; /* data with every |p| well away from 0 */
    mc.extra_proj = false;
    run_case(&mc);
}

static void test_grassmann_no_valid_offset(void **state) {
    (void)state;
    /* offsets [16] with T = 12: no row has a valid offset, g = 0 everywhere (not plucker.bias) */
    mix_case mc =
        GRASSMANN("grassmann(r=6, T=12, offsets [16])", .r = 6, .T = 12, .n_offsets = 1, .offsets = {16});
    run_case(&mc);
    mc.name = "grassmann(r=6, T=12, offsets [16], extra_proj)";
    mc.extra_proj = true;
    run_case(&mc);
}

static void test_grassmann_repeated_offsets(void **state) {
    (void)state;
    /* [2, 3, 3]: offset 3 counts twice in the mean */
    mix_case mc = GRASSMANN("grassmann(r=6, T=9, offsets [2,3,3], extra_proj)", .r = 6, .T = 9,
                            .n_offsets = 3, .offsets = {2, 3, 3}, .extra_proj = true);
    run_case(&mc);
    mc.name = "grassmann(r=6, T=9, offsets [2,3,3])";
    mc.extra_proj = false;
    run_case(&mc);
}

static void test_grassmann_parallel_eps(void **state) {
    (void)state;
    /* z_3 = 2 z_2, z_5 = -z_2/2 (batch 0) and z_1 = -z_0 (batch 1): p = 0 < eps for (t=3, D=1), (t=5, D=3)
     * and (t=1, D=1), so phat = p / eps there, alone (t=1) or averaged with an unclamped pair (t=3, 5).
     * The finite differences stay inside the clamp (|p| ~ 1e-6 << eps), where phat = p / eps is smooth. */
    mix_case mc =
        GRASSMANN("grassmann(r=4, T=8, offsets [1,3], parallel rows, eps 1e-2, extra_proj)", .r = 4, .T = 8,
                  .n_offsets = 2, .offsets = {1, 3}, .extra_proj = true, .eps = 1e-2f, .parallel = true);
    run_case(&mc);
    mc.name = "grassmann(r=4, T=8, offsets [1,3], parallel rows, eps 1e-2)";
    mc.extra_proj = false;
    run_case(&mc);
}

/* ---- attention -------------------------------------------------------------------------------- */

static void test_attention(void **state) {
    (void)state;
    mix_case mc = {.name = "attention(d=16, H=4, T=1)",
                   .mixer = "attention",
                   .d = 16,
                   .H = 4,
                   .r = 4,
                   .B = 2,
                   .T = 1,
                   .n_offsets = 1,
                   .offsets = {1}};
    run_case(&mc);
    mc.name = "attention(d=16, H=4, T=9)";
    mc.T = 9;
    run_case(&mc);
    mc.name = "attention(d=16, H=1, T=6)";
    mc.H = 1;
    mc.T = 6;
    run_case(&mc);
    /* query blocks of 64 rows: one full block and a partial second one */
    mc.name = "attention(d=16, H=2, T=70)";
    mc.H = 2;
    mc.T = 70;
    mc.fast = true; /* and attention's register tiles (fp32-fast) */
    run_case(&mc);
}

/* Both directions with padding: the kernels against the literal references and finite differences. */
static void test_bidirectional_and_masks(void **state) {
    (void)state;
    mix_case g = GRASSMANN("grassmann(r=6, T=20, offsets 1..16, bidirectional, padded)", .r = 6, .T = 20,
                           LONG_OFFSETS, .bidir = true, .padded = true);
    run_case(&g);
    g.name = "grassmann(r=5, T=9, offsets 1,3,3, bidirectional, extra_proj)";
    g.r = 5, g.T = 9, g.n_offsets = 3, g.offsets[0] = 1, g.offsets[1] = 3, g.offsets[2] = 3;
    g.padded = false, g.extra_proj = true, g.seed = 2;
    run_case(&g);
    g.name = "grassmann(r=5, T=9, offsets 1,3,3, causal, padded)";
    g.bidir = false, g.padded = true;
    run_case(&g);
    mix_case a = {.name = "attention(d=16, H=4, T=70, bidirectional, padded)", .mixer = "attention", .d = 16, .H = 4,
                  .r = 4, .B = 2, .T = 70, .bidir = true, .padded = true, .fast = true};
    run_case(&a);
    a.name = "attention(d=16, H=2, T=11, causal, padded)";
    a.H = 2, a.T = 11, a.bidir = false;
    run_case(&a);
}

/* Windows (the paper's SNLI head: window 8, stride 8): pairs never cross a window boundary, with padding,
 * both directions; the kernels against the literal references and finite differences. */
static void test_windows(void **state) {
    (void)state;
    mix_case g = GRASSMANN("grassmann(r=6, T=20, offsets 1,2,4, window 8, bidirectional, padded)", .r = 6, .T = 20,
                           .n_offsets = 3, .offsets = {1, 2, 4}, .bidir = true, .padded = true, .window = 8);
    run_case(&g);
    g.name = "grassmann(r=5, T=13, offsets 1,3, window 4, causal, extra_proj)";
    g.r = 5, g.T = 13, g.n_offsets = 2, g.offsets[1] = 3, g.window = 4, g.bidir = false, g.padded = false;
    g.extra_proj = true, g.seed = 3;
    run_case(&g);
    g.name = "grassmann(r=5, T=13, offsets [4], window 4: no pair at all)";
    g.n_offsets = 1, g.offsets[0] = 4, g.extra_proj = false;
    run_case(&g);
}

/* A grid (an image's patches, issue 53): offsets are 2-D steps, D = dr grid + dc, and a step that would wrap
 * round a row's end pairs nothing; both directions, causal and padded, on a grid of 5 columns (T = 20: 4 rows)
 * and of 4 (T = 18: the last row partial). */
static void test_grid(void **state) {
    (void)state;
    mix_case g = GRASSMANN("grassmann(r=6, T=20, grid 5, offsets 1,5,6,4 = (0,1),(1,0),(1,1),(1,-1), bidirectional, padded)",
                           .r = 6, .T = 20, .n_offsets = 4, .offsets = {1, 5, 6, 4}, .bidir = true, .padded = true,
                           .grid = 5);
    run_case(&g);
    g.name = "grassmann(r=5, T=18, grid 4, offsets 2,3,4 = (0,2),(1,-1),(1,0), causal, extra_proj)";
    g.r = 5, g.T = 18, g.n_offsets = 3, g.offsets[0] = 2, g.offsets[1] = 3, g.offsets[2] = 4, g.grid = 4;
    g.bidir = false, g.padded = false, g.extra_proj = true, g.seed = 7;
    run_case(&g);
}

/* Mixing heads (the paper's SNLI head: d_proj 64 in 4 heads): each head pairs its own slice of z. */
static void test_heads(void **state) {
    (void)state;
    mix_case g = GRASSMANN("grassmann(r=8 in 2 heads, T=17, offsets 1,2,4, window 8, bidirectional, padded)", .r = 8,
                           .T = 17, .n_offsets = 3, .offsets = {1, 2, 4}, .bidir = true, .padded = true, .window = 8,
                           .heads = 2);
    run_case(&g);
    g.name = "grassmann(r=9 in 3 heads, T=12, offsets 1,3,3, causal, extra_proj)";
    g.r = 9, g.heads = 3, g.T = 12, g.offsets[1] = 3, g.offsets[2] = 3, g.window = 0, g.bidir = false;
    g.padded = false, g.extra_proj = true, g.seed = 5;
    run_case(&g);
}

/* ---- linformer ------------------------------------------------------------------------------- */

/* Keys and values projected along the sequence by E and F (k_proj, max_len): the first T columns (T < max_len
 * and T = max_len), fewer or more rows than positions, one sdpa query block and a partial second, with
 * padding (padded keys and values zeroed before the projection). */
static void test_linformer(void **state) {
    (void)state;
    mix_case mc = {.name = "linformer(d=16, H=4, k_proj 5, T=9 < max_len 12, padded)", .mixer = "linformer",
                   .d = 16, .H = 4, .B = 2, .T = 9, .k_proj = 5, .max_len = 12, .bidir = true, .padded = true};
    run_case(&mc);
    mc.name = "linformer(d=16, H=2, k_proj 8, T = max_len 8)";
    mc.H = 2, mc.k_proj = 8, mc.T = 8, mc.max_len = 8, mc.padded = false, mc.seed = 1;
    run_case(&mc);
    mc.name = "linformer(d=16, H=4, k_proj 10 > T=4, max_len 16, padded)";
    mc.H = 4, mc.k_proj = 10, mc.T = 4, mc.max_len = 16, mc.padded = true, mc.seed = 2;
    run_case(&mc);
    mc.name = "linformer(d=8, H=1, k_proj 3, T=70, max_len 72, padded)";
    mc.d = 8, mc.H = 1, mc.k_proj = 3, mc.T = 70, mc.max_len = 72, mc.seed = 3, mc.fast = true;
    run_case(&mc);
}

/* ---- token-mlp ----------------------------------------------------------------------------------- */

/* MLP-Mixer's token mixing: the first T columns of W1 and rows of W2 (T < max_len and T = max_len), a hidden
 * width below and above T, and a longer sequence under fp32-fast too. */
static void test_token_mlp(void **state) {
    (void)state;
    mix_case mc = {.name = "token-mlp(d=8, hidden 6, T=9 < max_len 12)", .mixer = "token-mlp", .d = 8, .B = 2,
                   .T = 9, .k_proj = 6, .max_len = 12, .bidir = true};
    run_case(&mc);
    mc.name = "token-mlp(d=12, hidden 16, T = max_len 10)";
    mc.d = 12, mc.k_proj = 16, mc.T = 10, mc.max_len = 10, mc.seed = 1;
    run_case(&mc);
    mc.name = "token-mlp(d=8, hidden 20, T=49 = max_len, fp32-fast)";
    mc.d = 8, mc.k_proj = 20, mc.T = 49, mc.max_len = 49, mc.seed = 2, mc.fast = true;
    run_case(&mc);
}

/* ---- window attention -------------------------------------------------------------------------- */

/* Both directions, padded, with and without global positions; T = 70, not a multiple of the 64-query block
 * (the second block's band starts past the globals), w > T, and more global rows than one block holds. */
static void test_window(void **state) {
    (void)state;
    mix_case c = {.name = "window(w=5, T=70, causal)", .mixer = "window", .d = 8, .H = 2, .B = 2, .T = 70, .w = 5};
    run_case(&c);
    c.name = "window(w=5, g=3, T=70, causal, padded)";
    c.g = 3, c.padded = true, c.seed = 1;
    run_case(&c);
    c.name = "window(w=5, g=3, T=70, bidirectional, padded)";
    c.bidir = true, c.seed = 2;
    run_case(&c);
    c.name = "window(w=40, g=0, T=70, bidirectional, padded): a band over two blocks";
    c.w = 40, c.g = 0, c.H = 1, c.seed = 3;
    run_case(&c);
    c.name = "window(w=3, g=66, T=70, bidirectional): global rows in two blocks";
    c.w = 3, c.g = 66, c.padded = false, c.seed = 4;
    run_case(&c);
    c.name = "window(w=3, g=66, T=70, causal, padded)";
    c.bidir = false, c.padded = true, c.seed = 5;
    run_case(&c);
    c.name = "window(w=20, g=2, T=9, causal, padded): w > T";
    c.w = 20, c.g = 2, c.T = 9, c.d = 16, c.H = 4, c.seed = 6;
    run_case(&c);
    c.name = "window(w=20, g=12, T=9, bidirectional, padded): w > T, g > T";
    c.bidir = true, c.g = 12, c.seed = 7;
    run_case(&c);
    c.name = "window(w=1, g=1, T=11, causal): itself and the first";
    c.w = 1, c.g = 1, c.T = 11, c.bidir = false, c.padded = false, c.seed = 8;
    run_case(&c);
}

/* The paper's ablations (plucker false: the pair as [z_later; z_earlier] through pair.weight; gate false:
 * (h + g) / 2), alone and together, causal and bidirectional, padded, windowed, without any valid offset. */
static void test_ablations(void **state) {
    (void)state;
    mix_case g = GRASSMANN("grassmann(plucker false, r=6, T=20, offsets 1..16, extra_proj)", .r = 6, .T = 20,
                           LONG_OFFSETS, .extra_proj = true, .no_plucker = true);
    run_case(&g);
    g.name = "grassmann(plucker false, r=5, T=17, offsets 1,3,3, window 8, bidirectional, padded)";
    g.r = 5, g.T = 17, g.n_offsets = 3, g.offsets[0] = 1, g.offsets[1] = 3, g.offsets[2] = 3, g.window = 8;
    g.bidir = true, g.padded = true, g.extra_proj = false, g.seed = 7;
    run_case(&g);
    g.name = "grassmann(plucker false, gate false, r=5, T=17, offsets 1,3,3, window 8, bidirectional, padded, "
             "extra_proj)";
    g.no_gate = true, g.extra_proj = true;
    run_case(&g);
    g.name = "grassmann(plucker false, gate false, r=4, T=9, offsets 1,2, causal, padded)";
    g.r = 4, g.T = 9, g.n_offsets = 2, g.offsets[1] = 2, g.window = 0, g.bidir = false, g.extra_proj = false;
    run_case(&g);
    g.name = "grassmann(gate false, r=8 in 2 heads, T=17, offsets 1,2,4, bidirectional, padded)";
    g.no_plucker = false, g.r = 8, g.heads = 2, g.T = 17, g.n_offsets = 3, g.offsets[1] = 2, g.offsets[2] = 4;
    g.bidir = true, g.seed = 8;
    run_case(&g);
    g = GRASSMANN("grassmann(gate false, r=6, T=20, offsets 1..16, causal, extra_proj)", .r = 6, .T = 20,
                  LONG_OFFSETS, .extra_proj = true, .no_gate = true, .seed = 9);
    run_case(&g);
    g = GRASSMANN("grassmann(plucker false, gate false, r=6, T=12, offsets [16]: no pair at all)", .r = 6, .T = 12,
                  .n_offsets = 1, .offsets = {16}, .no_plucker = true, .no_gate = true);
    run_case(&g);
}

/* Performer: causal and bidirectional, chunks of 64 (one full and a partial one), padding, one head and
 * several, few and many features, and omega large enough that the key shift is not 0. */
static void test_performer(void **state) {
    (void)state;
    mix_case p = {.name = "performer(d=16, H=4, m=8, T=9)", .mixer = "performer", .d = 16, .H = 4, .r = 4, .B = 2,
                  .T = 9, .m = 8};
    run_case(&p);
    p.name = "performer(d=16, H=2, m=20, T=70)", p.H = 2, p.m = 20, p.T = 70;
    run_case(&p);
    p.name = "performer(d=16, H=2, m=20, T=70, bidirectional, padded)", p.bidir = true, p.padded = true;
    run_case(&p);
    p.name = "performer(d=16, H=4, m=6, T=11, causal, padded)", p.H = 4, p.m = 6, p.T = 11, p.bidir = false;
    run_case(&p);
    p.name = "performer(d=16, H=4, m=6, T=11, causal, padded first: queries that see no key)", p.pad_first = true;
    run_case(&p);
    p.pad_first = false;
    p.name = "performer(d=16, H=1, m=5, T=7, omega x 3.5: key shift > 0)", p.H = 1, p.m = 5, p.T = 7;
    p.padded = false, p.omega_scale = 3.5f, p.seed = 3;
    run_case(&p);
    p.name = "performer(d=16, H=1, m=5, T=7, omega x 3.5, bidirectional, padded)", p.bidir = true, p.padded = true;
    run_case(&p);
}

/* omega: a function of (seed, layer, step); blocks of dh orthonormal directions with chi(dh) norms; drawn at
 * init (step 0) and at multiples of `redraw` only. */
static void test_performer_omega(void **state) {
    (void)state;
    mix_case mc = {.name = "performer omega", .mixer = "performer", .d = 16, .H = 1, .B = 1, .T = 1, .m = 2056};
    gf_config cfg;
    make_cfg(&cfg, &mc);
    void (*draw)(const gf_config *, int, float *const *, uint64_t, uint64_t) = gf_mixer_draw_fn(gf_mixer_find("performer"));
    if (!draw) fail_msg("performer has no draw_buffers");
    const int64_t m = mc.m, dh = 16, n = m * dh;
    float *w[5][5] = {{0}};
    for (int k = 0; k < 5; k++) w[k][4] = falloc(n);
    draw(&cfg, LAYER, w[0], 11, 0);
    draw(&cfg, LAYER, w[1], 11, 0);
    draw(&cfg, LAYER, w[2], 12, 0);
    draw(&cfg, 0, w[3], 11, 0);
    if (memcmp(w[0][4], w[1][4], (size_t)n * sizeof(float))) fail_msg("omega: two draws with one seed differ");
    if (!memcmp(w[0][4], w[2][4], (size_t)n * sizeof(float))) fail_msg("omega: seeds 11 and 12 draw the same");
    if (!memcmp(w[0][4], w[3][4], (size_t)n * sizeof(float))) fail_msg("omega: layers 0 and 1 draw the same");
    double mean = 0.0, worst = 0.0, across = 0.0;
    for (int64_t i = 0; i < m; i++) {
        const float *a = w[0][4] + i * dh;
        double na = 0.0;
        for (int64_t e = 0; e < dh; e++) na += (double)a[e] * a[e];
        mean += na / (double)m;
        for (int64_t j = i + 1; j < m && j < i + 2 * dh; j++) {
            const float *b = w[0][4] + j * dh;
            double dot = 0.0, nb = 0.0;
            for (int64_t e = 0; e < dh; e++) dot += (double)a[e] * b[e], nb += (double)b[e] * b[e];
            const double cosine = fabs(dot) / sqrt(na * nb);
            if (i / dh == j / dh) worst = tl_max_nan(worst, cosine); /* same block: orthogonal */
            else across = tl_max_nan(across, cosine);               /* other blocks: independent */
        }
    }
    if (!(worst <= 1e-5)) fail_msg("omega: rows of one block are not orthogonal (|cos| %g)", worst);
    if (!(across >= 0.3)) fail_msg("omega: rows of different blocks look orthogonal too (|cos| <= %g)", across);
    /* |omega_i|^2 ~ chi^2(16): mean 16, the mean of 2056 rows within 1 (8 of its standard deviations) */
    if (!(fabs(mean - 16.0) <= 1.0)) fail_msg("omega: mean squared row norm %g, want about 16", mean);
    /* redraw: none by default; with redraw 5, steps 5 and 10 draw (seed, step) and step 6 leaves omega */
    memcpy(w[4][4], w[0][4], (size_t)n * sizeof(float));
    draw(&cfg, LAYER, w[4], 11, 5);
    if (memcmp(w[4][4], w[0][4], (size_t)n * sizeof(float))) fail_msg("omega: redraw 0 redrew at step 5");
    if (gf_config_set(&cfg, "redraw=5")) fail_msg("%s", gf_last_error());
    draw(&cfg, LAYER, w[4], 11, 6);
    if (memcmp(w[4][4], w[0][4], (size_t)n * sizeof(float))) fail_msg("omega: redraw 5 redrew at step 6");
    draw(&cfg, LAYER, w[4], 11, 10);
    if (!memcmp(w[4][4], w[0][4], (size_t)n * sizeof(float))) fail_msg("omega: redraw 5 kept omega at step 10");
    draw(&cfg, LAYER, w[1], 11, 5);
    draw(&cfg, LAYER, w[1], 11, 10);
    if (memcmp(w[4][4], w[1][4], (size_t)n * sizeof(float))) fail_msg("omega at step 10 depends on earlier draws");
}

/* ---- GRU -------------------------------------------------------------------------------------- */

/* Causal and bidirectional (d / 2 units each way), padded (a padded position inside a row, the end of
 * another, and with pad_first its start: the state passes them unchanged), B = 2, and T long enough that
 * the recurrence's gradient runs through many steps. */
static void test_gru(void **state) {
    (void)state;
    mix_case c = {.name = "gru(d=8, T=11, causal)", .mixer = "gru", .d = 8, .B = 2, .T = 11, .fast = true};
    run_case(&c);
    c.name = "gru(d=8, T=11, causal, padded, pad_first)";
    c.padded = true, c.pad_first = true, c.seed = 1;
    run_case(&c);
    c.name = "gru(d=12, T=9, bidirectional, padded)";
    c.d = 12, c.T = 9, c.bidir = true, c.pad_first = false, c.seed = 2;
    run_case(&c);
    c.name = "gru(d=6, T=1, bidirectional): one step";
    c.d = 6, c.T = 1, c.padded = false, c.seed = 3;
    run_case(&c);
}

static void test_mixer_get(void **state) {
    (void)state;
    const gf_mixer_ops *g = gf_mixer_find("grassmann"), *a = gf_mixer_find("attention");
    if (!g || strcmp(g->name, "grassmann") != 0) fail_msg("gf_mixer_find(\"grassmann\") is not grassmann");
    if (!a || strcmp(a->name, "attention") != 0) fail_msg("gf_mixer_find(\"attention\") is not attention");
    if (gf_mixer_find("g") != g || gf_mixer_find("a") != a) fail_msg("the letters g and a do not find them");
    if (gf_mixer_find("mamba") != NULL || gf_mixer_find("") != NULL) fail_msg("an unknown name finds a mixer");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mixer_get),
        cmocka_unit_test_teardown(test_grassmann_r6_T7_long_offsets, pool_teardown),
        cmocka_unit_test_teardown(test_grassmann_r6_T20_long_offsets, pool_teardown),
        cmocka_unit_test_teardown(test_grassmann_r2, pool_teardown),
        cmocka_unit_test_teardown(test_grassmann_no_valid_offset, pool_teardown),
        cmocka_unit_test_teardown(test_grassmann_repeated_offsets, pool_teardown),
        cmocka_unit_test_teardown(test_grassmann_parallel_eps, pool_teardown),
        cmocka_unit_test_teardown(test_attention, pool_teardown),
        cmocka_unit_test_teardown(test_bidirectional_and_masks, pool_teardown),
        cmocka_unit_test_teardown(test_windows, pool_teardown),
        cmocka_unit_test_teardown(test_grid, pool_teardown),
        cmocka_unit_test_teardown(test_heads, pool_teardown),
        cmocka_unit_test_teardown(test_linformer, pool_teardown),
        cmocka_unit_test_teardown(test_token_mlp, pool_teardown),
        cmocka_unit_test_teardown(test_window, pool_teardown),
        cmocka_unit_test_teardown(test_ablations, pool_teardown),
        cmocka_unit_test_teardown(test_performer, pool_teardown),
        cmocka_unit_test_teardown(test_performer_omega, pool_teardown),
        cmocka_unit_test_teardown(test_gru, pool_teardown),
    };
    int rc = cmocka_run_group_tests_name("mixers", tests, NULL, NULL);
    pool_release();
    return rc;
}
