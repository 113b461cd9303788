/* A mixer of one's own, from outside the library: a worked example for plug-in authors.
 *
 * Built in the source tree by `make examples` (build/examples/custom_mixer); against an installed grassflow
 * (make install; PKG_CONFIG_PATH=PREFIX/lib/pkgconfig if PREFIX is not a system one), from this folder:
 *
 *     cc -std=c11 -Wall -Wextra -O2 -o custom_mixer custom_mixer.c $(pkg-config --cflags --libs grassflow)
 *     cc -std=c11 -Wall -Wextra -O2 -o custom_mixer-static custom_mixer.c $(pkg-config --cflags --libs --static grassflow-static)
 *
 * (the second links libgrassflow.a; tests/project/install.sh runs both lines as written here).
 *
 *     ./custom_mixer [STEPS]
 *
 * The mixer, "dconv", is a depthwise causal convolution followed by a projection:
 *
 *     u[t, c] = sum_{j < K, j <= t} w[j, c] x[t - j, c]     (each channel c mixes its own last K inputs)
 *     out[t]  = W u[t] + bias                                  (W: d x d, then the block's residual path)
 *
 * K is the mixer's config key "kernel". The program registers the mixer with gf_mixer_register, builds a
 * model whose two layers use it (gf_config_set "mixers=dconv,dconv", as `--set` would), trains it with
 * gf_adamw on sequences that repeat every 3 tokens (the next token is the one 2 places back: a kernel of 3
 * sees it, the token alone does not tell it), prints the loss as it falls, and checks its backward against
 * finite differences and its streaming step against the batch forward. Exit status 0 if the last loss is
 * below the first and both checks hold.
 *
 * What a mixer provides (include/grassflow.h, "Plug-ins: mixers and heads", documents every member):
 *   1. its config: a struct of its own and a gf_cfg_key table describing it (parsing, ranges, defaults,
 *      saving and help come from the table), plus an optional check across keys;
 *   2. its tensors: param_specs, in an order that forward and backward see again in c->p and c->g;
 *   3. its memory: saved_floats (kept from forward to backward) and scratch_floats (during one call);
 *   4. forward and backward: backward ADDS into dinp and into the parameter gradients;
 *   5. optionally, a streaming step with its state (state_floats, step_scratch_floats, step).
 * Everything is read from the table: no line of the library names "dconv". */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grassflow_plugin.h"

/* ---- 1. the config ------------------------------------------------------------------------------ */

typedef struct {
    int64_t kernel; /* GF_KEY_INT values are int64_t */
} dconv_config;

static const gf_cfg_key DCONV_KEYS[] = {
    {.name = "kernel", .type = GF_KEY_INT, .off = offsetof(dconv_config, kernel), .lo = 1, .hi = 64, .def = "4",
     .help = "positions each channel looks back over, the current one included"},
};

static int64_t kernel_of(const gf_config *cfg, int layer) {
    return ((const dconv_config *)gf_layer_mcfg(cfg, layer))->kernel;
}

/* A check across keys: the range of "kernel" is the table's business; this is what the table cannot say. */
static int dconv_check(const gf_config *cfg, int layer, const char *src) {
    if (cfg->max_len > 0 && kernel_of(cfg, layer) > cfg->max_len)
        return gf_fail("%s: layer %d: dconv kernel %lld is longer than max_len %lld; taps that far back would "
                       "never see a token", src, layer, (long long)kernel_of(cfg, layer), (long long)cfg->max_len);
    return 0;
}

/* ---- 2. the tensors ----------------------------------------------------------------------------- */

enum { P_CONV, P_PROJ_W, P_PROJ_B };

static int dconv_params(const gf_config *cfg, int layer, gf_param_spec *s) {
    const int64_t d = gf_layer_dim(cfg, layer); /* the layer's width (never cfg->d_model: stacks may differ) */
    /* the model names them blocks.{l}.mix.conv.weight, ... */
    gf_param_spec_set(&s[P_CONV], "conv.weight", 2, kernel_of(cfg, layer), d, GF_INIT_ONE); /* (K, d): sums */
    gf_param_spec_set(&s[P_PROJ_W], "proj.weight", 2, d, d, GF_INIT_NORMAL);                /* (out, in) */
    gf_param_spec_set(&s[P_PROJ_B], "proj.bias", 1, d, 0, GF_INIT_ZERO);
    return 3;
}

/* ---- 3. memory: u (B, T, d) is kept for the backward; one row of du is scratch ------------------- */

static int64_t dconv_saved(const gf_config *cfg, int layer, int64_t B, int64_t T) {
    return B * T * gf_layer_dim(cfg, layer);
}

static int64_t dconv_scratch(const gf_config *cfg, int layer, int64_t B, int64_t T, int n_threads) {
    (void)B, (void)T, (void)n_threads; /* this mixer's loops are serial; a parallel one sizes by n_threads */
    return gf_layer_dim(cfg, layer);
}

/* ---- 4. forward and backward -------------------------------------------------------------------- */

/* u (d) at position t of the row that starts at x (T, d): the causal depthwise convolution */
static void conv_at(float *u, const float *x, int64_t t, const float *w, int64_t K, int64_t d) {
    for (int64_t c = 0; c < d; c++) u[c] = 0.0f;
    for (int64_t j = 0; j < K && j <= t; j++)
        for (int64_t c = 0; c < d; c++) u[c] += w[j * d + c] * x[(t - j) * d + c];
}

/* out (d) = W u + bias */
static void project(float *out, const float *u, const float *W, const float *bias, int64_t d) {
    for (int64_t i = 0; i < d; i++) {
        float acc = bias[i];
        for (int64_t k = 0; k < d; k++) acc += W[i * d + k] * u[k];
        out[i] = acc;
    }
}

static void dconv_forward(const gf_mixer_call *c, float *out, const float *inp) {
    const int64_t d = gf_layer_dim(c->cfg, c->layer), K = kernel_of(c->cfg, c->layer), T = c->T;
    for (int64_t b = 0; b < c->B; b++)
        for (int64_t t = 0; t < T; t++) {
            float *u = c->saved + (b * T + t) * d;
            conv_at(u, inp + b * T * d, t, c->p[P_CONV], K, d);
            project(out + (b * T + t) * d, u, c->p[P_PROJ_W], c->p[P_PROJ_B], d);
        }
}

/* Gradients accumulate (+=): into dinp and into c->g. A gradient pointer is NULL when its tensor is
 * frozen (gf_model_freeze), so each is tested before use. */
static void dconv_backward(const gf_mixer_call *c, float *dinp, const float *dout, const float *inp) {
    const int64_t d = gf_layer_dim(c->cfg, c->layer), K = kernel_of(c->cfg, c->layer), T = c->T;
    const float *w = c->p[P_CONV], *W = c->p[P_PROJ_W];
    float *dw = c->g[P_CONV], *dW = c->g[P_PROJ_W], *dbias = c->g[P_PROJ_B], *du = c->scratch;
    for (int64_t b = 0; b < c->B; b++)
        for (int64_t t = 0; t < T; t++) {
            const int64_t n = b * T + t;
            const float *go = dout + n * d, *u = c->saved + n * d;
            for (int64_t k = 0; k < d; k++) du[k] = 0.0f;
            for (int64_t i = 0; i < d; i++) { /* out = W u + bias */
                if (dbias) dbias[i] += go[i];
                for (int64_t k = 0; k < d; k++) {
                    if (dW) dW[i * d + k] += go[i] * u[k];
                    du[k] += W[i * d + k] * go[i];
                }
            }
            for (int64_t j = 0; j < K && j <= t; j++) /* u[t] = sum_j w[j] x[t - j] */
                for (int64_t ch = 0; ch < d; ch++) {
                    if (dw) dw[j * d + ch] += du[ch] * inp[(n - j) * d + ch];
                    dinp[(n - j) * d + ch] += w[j * d + ch] * du[ch];
                }
        }
}

/* ---- 5. streaming: the state is a ring of the last K inputs -------------------------------------- */

static int64_t dconv_state(const gf_config *cfg, int layer, int64_t cap) {
    (void)cap; /* constant memory per token, however long the text */
    return kernel_of(cfg, layer) * gf_layer_dim(cfg, layer);
}

static int64_t dconv_step_scratch(const gf_config *cfg, int layer, int64_t cap) {
    (void)cap;
    return gf_layer_dim(cfg, layer);
}

static void dconv_step(const gf_mixer_step *s, float *out, const float *inp) {
    const int64_t d = gf_layer_dim(s->cfg, s->layer), K = kernel_of(s->cfg, s->layer);
    memcpy(s->state + (s->pos % K) * d, inp, (size_t)d * sizeof *inp);
    float *u = s->scratch;
    for (int64_t c = 0; c < d; c++) u[c] = 0.0f;
    for (int64_t j = 0; j < K && j <= s->pos; j++) {
        const float *x = s->state + ((s->pos - j) % K) * d;
        for (int64_t c = 0; c < d; c++) u[c] += s->p[P_CONV][j * d + c] * x[c];
    }
    project(out, u, s->p[P_PROJ_W], s->p[P_PROJ_B], d);
}

/* ---- the table ---------------------------------------------------------------------------------- */

static const gf_mixer_ops DCONV = {
    .version = GF_MIXER_OPS_VERSION, /* first: a later grassflow reads only the members this version has */
    .name = "dconv",
    .letter = 'c', /* --set mixers=c,c */
    .help = "depthwise causal convolution over the last `kernel` positions, then a d x d projection; "
            "O(T K d + T d^2). An example plug-in (examples/custom_mixer.c)",
    .config_size = sizeof(dconv_config),
    .keys = DCONV_KEYS,
    .n_keys = (int)(sizeof DCONV_KEYS / sizeof DCONV_KEYS[0]),
    .check = dconv_check,
    .gated_skip = false,           /* a post-norm block adds the residual: x = ln1(h + mix(h)) */
    .directions = GF_MIX_CAUSAL,   /* no bidirectional form */
    .masks = false,                /* no padding mask: models refuse padded batches */
    .param_specs = dconv_params,
    .saved_floats = dconv_saved,
    .scratch_floats = dconv_scratch,
    .forward = dconv_forward,
    .backward = dconv_backward,
    .state_floats = dconv_state,
    .step_scratch_floats = dconv_step_scratch,
    .step = dconv_step,
};

/* ---- using it ----------------------------------------------------------------------------------- */

enum { V = 16, B = 16, T = 24 };

/* B rows of T + 1 tokens, each row three random tokens repeated: x[t + 1] = x[t - 2]. A small counter
 * hash keeps the batches the same on every machine. */
static void batch(int32_t *in, int32_t *tg, uint64_t step) {
    for (int64_t b = 0; b < B; b++) {
        int32_t three[3];
        for (int k = 0; k < 3; k++) {
            uint64_t h = (step * 1000003u + (uint64_t)b * 131u + (uint64_t)k + 1) * 0x9E3779B97F4A7C15ull;
            h ^= h >> 29;
            three[k] = (int32_t)((h * 0xBF58476D1CE4E5B9ull) >> 60) % V;
        }
        for (int64_t t = 0; t < T; t++) {
            in[b * T + t] = three[t % 3];
            tg[b * T + t] = three[(t + 1) % 3];
        }
    }
}

/* Before trusting a backward, hold it to central differences of the model's loss: a few entries of each of
 * the mixer's tensors and of one tensor below it (which the mixer's dinp reaches). Returns the largest
 * error, relative to max(|finite difference|, 0.01). */
static double gradient_error(gf_model *m, const int32_t *in, const int32_t *tg, int64_t Bn, int64_t Tn) {
    float loss, lp, lm;
    gf_model_forward(m, in, tg, Bn, Tn, &loss);
    gf_model_zero_grad(m);
    gf_model_backward(m);
    const char *names[] = {"blocks.1.mix.conv.weight", "blocks.1.mix.proj.weight", "blocks.1.mix.proj.bias",
                           "blocks.0.mix.conv.weight", "tok_emb.weight"};
    double worst = 0.0;
    for (int i = 0; i < 5; i++) {
        const gf_tensor_info *t = gf_model_find_tensor(m, names[i]);
        for (int64_t k = 0; k < t->numel; k += t->numel / 4 + 1) {
            const float x0 = t->data[k], h = 1e-2f;
            t->data[k] = x0 + h;
            gf_model_forward(m, in, tg, Bn, Tn, &lp);
            t->data[k] = x0 - h;
            gf_model_forward(m, in, tg, Bn, Tn, &lm);
            t->data[k] = x0;
            const double fd = ((double)lp - lm) / (2.0 * h);
            worst = fmax(worst, fabs(fd - t->grad[k]) / fmax(fabs(fd), 1e-2));
        }
    }
    return worst;
}

static int fail(const char *what) {
    fprintf(stderr, "error: %s: %s\n", what, gf_last_error());
    return 1;
}

int main(int argc, char **argv) {
    const long steps = argc > 1 ? strtol(argv[1], NULL, 10) : 80;
    if (argc > 2 || steps < 1) {
        fprintf(stderr, "usage: %s [STEPS]   (a positive number, default 80)\n", argv[0]);
        return 2;
    }
    /* register once, before any config names the mixer */
    if (gf_mixer_register(&DCONV)) return fail("gf_mixer_register");

    /* a two-layer model from a preset, its layers switched to dconv (as --set does); then the mixer's key */
    gf_config cfg;
    if (gf_config_preset("grassmann-tiny", &cfg) || gf_config_set(&cfg, "vocab_size=16") ||
        gf_config_set(&cfg, "mixers=dconv,dconv") || gf_config_set(&cfg, "kernel=3"))
        return fail("config");
    if (gf_config_set(&cfg, "kernel=40") == 0) { /* dconv_check: longer than max_len 32 */
        fprintf(stderr, "error: kernel=40 was accepted\n");
        return 1;
    }
    printf("refused, as dconv_check says: %s\n", gf_last_error());
    char *json = gf_config_to_json(&cfg, false);
    printf("config: %s\n", json);
    free(json);

    gf_model *m = gf_model_create(&cfg);
    if (!m) return fail("gf_model_create");
    gf_model_init(m, 1234);
    const gf_tensor_info *conv = gf_model_find_tensor(m, "blocks.0.mix.conv.weight");
    printf("%lld parameters; %s is %lld x %lld\n", (long long)gf_model_num_params(m), conv->name,
           (long long)conv->shape[0], (long long)conv->shape[1]);

    int32_t in[B * T], tg[B * T];
    batch(in, tg, 12345);
    const double gerr = gradient_error(m, in, tg, 2, T);
    printf("backward against finite differences: %s\n", gerr < 0.05 ? "agrees (within 5%)" : "DISAGREES");

    /* train: forward, zero the gradients, backward, one AdamW step */
    gf_adamw_hparams hp = gf_adamw_hparams_default();
    hp.lr = 1e-2f;
    gf_adamw *opt = gf_adamw_create(m, hp);
    if (!opt) return fail("gf_adamw_create");
    float first = NAN, loss = NAN;
    for (long s = 0; s < steps; s++) {
        batch(in, tg, (uint64_t)s);
        if (gf_model_forward(m, in, tg, B, T, &loss)) return fail("gf_model_forward");
        gf_model_zero_grad(m);
        if (gf_model_backward(m) || gf_adamw_step(opt, m, hp.lr)) return fail("backward / step");
        if (s == 0) first = loss;
        if (s % 10 == 0 || s == steps - 1) printf("step %3ld  loss %.4f\n", s + 1, loss);
    }
    gf_adamw_free(opt);
    printf("loss %.4f -> %.4f (log %d = %.4f: a guess)\n", first, loss, V, log((double)V));

    /* the streaming step gives what the batch forward gives, position by position */
    batch(in, tg, 99999);
    if (gf_model_forward(m, in, NULL, 1, T, NULL)) return fail("gf_model_forward");
    const float *full = gf_model_logits(m);
    gf_stream *st = gf_stream_create(m);
    if (!st) return fail("gf_stream_create");
    double worst = 0.0;
    for (int64_t t = 0; t < T; t++) {
        const float *lg = gf_stream_step(st, in[t]);
        if (!lg) return fail("gf_stream_step");
        for (int v = 0; v < V; v++) worst = fmax(worst, fabs((double)lg[v] - full[t * V + v]));
    }
    gf_stream_free(st);
    printf("streamed logits against the batch forward: max |diff| %s 1e-4\n", worst < 1e-4 ? "<" : ">=");
    gf_model_free(m);
    return loss < first && worst < 1e-4 && gerr < 0.05 ? 0 : 1;
}
