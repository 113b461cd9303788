/* A mixer and a head added from this file alone: no line of the library names them. The mixer is
 * registered with gf_mixer_register, configured by name with a key of its own, built into models by the
 * config, trained, checked by finite differences through the whole model, streamed, saved and loaded;
 * the head likewise with gf_head_register (below the mixer). Both are written against include/grassflow.h
 * alone; the internal headers are here for the registries' lookups and the checks of the built-ins, which
 * must pass what gf_mixer_register and gf_head_register ask of a new table.
 *
 * The mixer, "shift": out[t] = (1 + scale) * proj(inp[t - lag]) for t >= lag, 0 before; lag is its config
 * key and scale (d) a buffer: fixed numbers saved with the model, never trained. On a
 * sequence where x[t+1] = x[t-1] (random pairs repeated), a one-layer model can predict the next token
 * only if its mixer shows position t the token before it: lag 1 learns the task, lag 2 cannot. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/rng.h"
#include "heads/head.h"
#include "mixers/mixer.h"
#include "testlib.h"

typedef struct {
    int64_t lag;
} shift_config;

static const gf_cfg_key SHIFT_KEYS[] = {
    {.name = "lag", .type = GF_KEY_INT, .off = offsetof(shift_config, lag), .lo = 1, .hi = 64, .def = "1",
     .help = "how far back the mixer looks"},
};

static int64_t lag_of(const gf_config *c, int l) { return ((const shift_config *)gf_layer_mcfg(c, l))->lag; }

static int s_params(const gf_config *c, int l, gf_param_spec *s) {
    (void)l;
    gf_param_spec_set(&s[0], "proj.weight", 2, c->d_model, c->d_model, GF_INIT_NORMAL);
    gf_param_spec_set(&s[1], "proj.bias", 1, c->d_model, 0, GF_INIT_ZERO);
    gf_param_spec_set(&s[2], "fixed.scale", 1, c->d_model, 0, GF_INIT_NORMAL);
    s[2].buffer = true;
    return 3;
}

static int64_t s_none(const gf_config *c, int l, int64_t B, int64_t T) {
    (void)c, (void)l, (void)B, (void)T;
    return 0;
}

static int64_t s_no_scratch(const gf_config *c, int l, int64_t B, int64_t T, int n_threads) {
    (void)c, (void)l, (void)B, (void)T, (void)n_threads;
    return 0;
}

/* out (d) = (1 + scale) * (W x + b) */
static void proj(const gf_mixer_step *s, float *out, const float *x, int64_t d) {
    for (int64_t i = 0; i < d; i++) {
        float acc = s->p[1][i];
        for (int64_t k = 0; k < d; k++) acc += s->p[0][i * d + k] * x[k];
        out[i] = (1.0f + s->p[2][i]) * acc;
    }
}

static void s_forward(const gf_mixer_call *c, float *out, const float *inp) {
    const int64_t d = gf_layer_dim(c->cfg, c->layer), lag = lag_of(c->cfg, c->layer);
    gf_mixer_step s = {.p = c->p};
    for (int64_t n = 0; n < c->B * c->T; n++) {
        if (n % c->T < lag) memset(out + n * d, 0, (size_t)d * sizeof *out);
        else proj(&s, out + n * d, inp + (n - lag) * d, d);
    }
}

static void s_backward(const gf_mixer_call *c, float *dinp, const float *dout, const float *inp) {
    const int64_t d = gf_layer_dim(c->cfg, c->layer), lag = lag_of(c->cfg, c->layer);
    for (int64_t n = 0; n < c->B * c->T; n++) {
        if (n % c->T < lag) continue;
        const float *x = inp + (n - lag) * d, *go = dout + n * d;
        if (c->g[2]) fail_msg("the buffer fixed.scale was given a gradient");
        for (int64_t i = 0; i < d; i++) {
            const float g = (1.0f + c->p[2][i]) * go[i];
            c->g[1][i] += g;
            for (int64_t k = 0; k < d; k++) {
                c->g[0][i * d + k] += g * x[k];
                dinp[(n - lag) * d + k] += c->p[0][i * d + k] * g;
            }
        }
    }
}

/* state: the inputs of the last lag positions, a ring */
static int64_t s_state(const gf_config *c, int l, int64_t cap) {
    (void)cap;
    return lag_of(c, l) * c->d_model;
}

static int64_t s_step_scratch(const gf_config *c, int l, int64_t cap) {
    (void)c, (void)l, (void)cap;
    return 0;
}

static void s_step(const gf_mixer_step *s, float *out, const float *inp) {
    const int64_t d = gf_layer_dim(s->cfg, s->layer), lag = lag_of(s->cfg, s->layer);
    float *slot = s->state + (s->pos % lag) * d; /* holds the input of position pos - lag */
    if (s->pos < lag) memset(out, 0, (size_t)d * sizeof *out);
    else proj(s, out, slot, d);
    memcpy(slot, inp, (size_t)d * sizeof *inp);
}

static const gf_mixer_ops SHIFT = {
    .version = GF_MIXER_OPS_VERSION,
    .name = "shift",
    .letter = 's',
    .help = "out[t] = proj(inp[t - lag]): a test mixer",
    .config_size = sizeof(shift_config),
    .keys = SHIFT_KEYS,
    .n_keys = 1,
    .param_specs = s_params,
    .saved_floats = s_none,
    .scratch_floats = s_no_scratch,
    .forward = s_forward,
    .backward = s_backward,
    .state_floats = s_state,
    .step_scratch_floats = s_step_scratch,
    .step = s_step,
};

/* draw_buffers (gf_mixer_ops version 2): "shiftdraw" writes scale[i] = seed + step / 1000 + i and counts its
 * calls; "shiftold" is a version-1 table whose draw_buffers member the library must never read. */
static int n_draws;
static void d_draw(const gf_config *c, int l, float *const *p, uint64_t seed, uint64_t step) {
    (void)l;
    n_draws++;
    for (int64_t i = 0; i < c->d_model; i++) p[2][i] = (float)seed + 0.001f * (float)step + (float)i;
}
static void d_never(const gf_config *c, int l, float *const *p, uint64_t seed, uint64_t step) {
    (void)c, (void)l, (void)p, (void)seed, (void)step;
    fail_msg("draw_buffers of a version-1 table was called");
}

static gf_model *shift_model(const char *lag) {
    char json[512];
    snprintf(json, sizeof json,
             "{\"format\": 2, \"vocab_size\": 12, \"d_model\": 24, \"n_layer\": 1, \"d_ff\": 48, \"max_len\": 32, "
             "\"layers\": [{\"mixer\": \"shift\", \"lag\": %s}]}", lag);
    gf_config c;
    if (gf_config_from_json(json, "test", &c)) fail_msg("config: %s", gf_last_error());
    gf_model *m = gf_model_create(&c);
    if (!m) fail_msg("create: %s", gf_last_error());
    gf_model_init(m, 3);
    return m;
}

/* B sequences of T+1 tokens, x[t+1] = x[t-1]: a random pair repeated. */
static void pair_batch(int32_t *in, int32_t *tg, int64_t B, int64_t T, uint64_t seed) {
    for (int64_t b = 0; b < B; b++) {
        int32_t a = (int32_t)(gf_rand64(seed, 2 * (uint64_t)b) % 12), c = (int32_t)(gf_rand64(seed, 2 * (uint64_t)b + 1) % 12);
        for (int64_t t = 0; t <= T; t++) {
            int32_t x = t % 2 ? c : a;
            if (t < T) in[b * T + t] = x;
            if (t > 0) tg[b * T + t - 1] = x;
        }
    }
}

static double train(gf_model *m, int steps) {
    enum { B = 16, T = 16 };
    int32_t in[B * T], tg[B * T];
    gf_adamw *opt = gf_adamw_create(m, (gf_adamw_hparams){.lr = 3e-3f, .beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f});
    float loss = NAN;
    for (int s = 0; s < steps; s++) {
        pair_batch(in, tg, B, T, 100 + (uint64_t)s);
        if (gf_model_forward(m, in, tg, B, T, &loss)) fail_msg("forward: %s", gf_last_error());
        gf_model_zero_grad(m);
        gf_model_backward(m);
        gf_adamw_step(opt, m, 3e-3f);
    }
    gf_adamw_free(opt);
    return loss;
}

static gf_model *named_model(const char *mixer) {
    char json[512];
    snprintf(json, sizeof json, "{\"format\": 2, \"vocab_size\": 12, \"d_model\": 24, \"n_layer\": 1, \"d_ff\": 48, "
             "\"max_len\": 32, \"layers\": [{\"mixer\": \"%s\"}]}", mixer);
    gf_config c;
    if (gf_config_from_json(json, "test", &c)) fail_msg("config: %s", gf_last_error());
    gf_model *m = gf_model_create(&c);
    if (!m) fail_msg("create: %s", gf_last_error());
    return m;
}

/* gf_model_init draws a version-2 mixer's buffers (step 0); gf_model_set_training(true, seed, step >= 1)
 * redraws them in a trained layer only; a version-1 table's draw_buffers is never read. */
static void test_draw_buffers(void **state) {
    (void)state;
    static gf_mixer_ops drawn, old;
    drawn = SHIFT, drawn.name = "shiftdraw", drawn.letter = 0, drawn.draw_buffers = d_draw;
    old = SHIFT, old.name = "shiftold", old.letter = 0, old.version = 1, old.draw_buffers = d_never;
    assert_int_equal(gf_mixer_register(&drawn), 0);
    assert_int_equal(gf_mixer_register(&old), 0);
    gf_model *m = named_model("shiftdraw");
    const float *sc = gf_model_find_tensor(m, "blocks.0.mix.fixed.scale")->data;
    n_draws = 0;
    gf_model_init(m, 3);
    assert_int_equal(n_draws, 1);
    assert_true(sc[0] == 3.0f && sc[5] == 8.0f);
    gf_model_set_training(m, true, 9, 0); /* step 0: the init's draw stands */
    gf_model_set_training(m, false, 9, 4); /* not training */
    assert_int_equal(n_draws, 1);
    gf_model_set_training(m, true, 9, 4);
    assert_int_equal(n_draws, 2);
    assert_true(sc[0] == 9.0f + 0.004f);
    assert_int_equal(gf_model_freeze(m, "blocks.0.mix."), 2); /* its layer is no longer trained */
    gf_model_set_training(m, true, 9, 5);
    assert_int_equal(n_draws, 2);
    gf_model_free(m);
    m = named_model("shiftold");
    gf_model_init(m, 3);
    const float *so = gf_model_find_tensor(m, "blocks.0.mix.fixed.scale")->data;
    assert_true(fabsf(so[0]) < 0.2f); /* its declared N(0, 0.02) init */
    gf_model_set_training(m, true, 1, 3);
    gf_model_free(m);
}

static void test_register(void **state) {
    (void)state;
    assert_int_equal(gf_mixer_register(&SHIFT), 0);
    assert_int_not_equal(gf_mixer_register(&SHIFT), 0); /* twice */
    assert_non_null(strstr(gf_last_error(), "already registered"));
    gf_mixer_ops bad = SHIFT;
    bad.name = "shift2";
    bad.letter = 0;
    bad.version = GF_MIXER_OPS_VERSION + 1;
    assert_int_not_equal(gf_mixer_register(&bad), 0);
    assert_non_null(strstr(gf_last_error(), "interface version"));
    bad.version = GF_MIXER_OPS_VERSION;
    bad.forward = NULL;
    assert_int_not_equal(gf_mixer_register(&bad), 0);
    assert_non_null(strstr(gf_last_error(), "lacks a function"));
    bad.forward = SHIFT.forward;
    bad.step = NULL; /* the streaming three go together */
    assert_int_not_equal(gf_mixer_register(&bad), 0);
    assert_non_null(strstr(gf_last_error(), "lacks a function"));
    bad.step = SHIFT.step;
    bad.config_size = GF_MIXER_CONFIG_BYTES + 1;
    assert_int_not_equal(gf_mixer_register(&bad), 0);
    assert_non_null(strstr(gf_last_error(), "at most 232 fit"));
    bad.config_size = sizeof(shift_config);
    bad.letter = 'g'; /* grassmann's */
    assert_int_not_equal(gf_mixer_register(&bad), 0);
    assert_non_null(strstr(gf_last_error(), "already registered: \"grassmann\" (g)"));
    bad.letter = ',';
    assert_int_not_equal(gf_mixer_register(&bad), 0);
    assert_non_null(strstr(gf_last_error(), "has the letter ','"));
    bad.letter = 0;
    bad.name = "a"; /* attention's letter, as a name: gf_mixer_find("a") could not tell them apart */
    assert_int_not_equal(gf_mixer_register(&bad), 0);
    assert_non_null(strstr(gf_last_error(), "already registered"));
    bad.name = "shift,2";
    assert_int_not_equal(gf_mixer_register(&bad), 0);
    assert_non_null(strstr(gf_last_error(), "has the character ','"));
    bad.name = "shift2";
    bad.directions = 4;
    assert_int_not_equal(gf_mixer_register(&bad), 0);
    assert_non_null(strstr(gf_last_error(), "directions 0x4"));
    assert_null(gf_mixer_find("shift2")); /* nothing refused was added */
    assert_true(gf_mixer_find("shift") == &SHIFT && gf_mixer_find("s") == &SHIFT);
    char *help = gf_mixer_describe("shift");
    assert_non_null(help);
    assert_non_null(strstr(help, "lag"));
    free(help);
}

/* The config reaches the mixer: its key, --set, errors naming it, the JSON form, the tensor names. */
static void test_config(void **state) {
    (void)state;
    gf_config c;
    assert_int_equal(gf_config_preset("grassmann-tiny", &c), 0);
    assert_int_equal(gf_config_set(&c, "mixers=g,s"), 0);
    assert_int_equal(gf_config_set(&c, "lag=3"), 0);
    char *v = gf_config_get(&c, "layers.1.lag");
    assert_string_equal(v, "3");
    free(v);
    assert_int_not_equal(gf_config_set(&c, "lag=0"), 0);
    assert_non_null(strstr(gf_last_error(), "lag"));
    assert_int_not_equal(gf_config_from_json("{\"base\": \"grassmann-tiny\", \"format\": 2, \"layers\": "
                                             "[{\"mixer\": \"shift\", \"rank\": 3}]}", "t", &c), 0);
    assert_non_null(strstr(gf_last_error(), "mixer \"shift\" has no key \"rank\""));
    gf_model *m = shift_model("2");
    assert_non_null(gf_model_find_tensor(m, "blocks.0.mix.proj.weight"));
    const gf_tensor_info *buf = gf_model_find_tensor(m, "blocks.0.mix.fixed.scale");
    assert_non_null(buf);
    assert_false(buf->trainable);
    assert_null(buf->grad);
    assert_int_equal(gf_model_num_trainable(m), gf_model_num_params(m) - buf->numel);
    char *j = gf_config_to_json(gf_model_config(m), false);
    assert_non_null(strstr(j, "{\"mixer\":\"shift\",\"lag\":2}"));
    free(j);
    gf_model_free(m);
}

static void test_trains(void **state) {
    (void)state;
    gf_model *m1 = shift_model("1"), *m2 = shift_model("2");
    const gf_tensor_info *buf = gf_model_find_tensor(m1, "blocks.0.mix.fixed.scale");
    const float before = buf->data[5];
    double l1 = train(m1, 150), l2 = train(m2, 150);
    if (buf->data[5] != before) fail_msg("training changed the buffer fixed.scale");
    printf("  loss after 150 steps: lag 1 %.3f, lag 2 %.3f (log 12 = %.3f)\n", l1, l2, log(12.0));
    if (!(l1 < 0.3)) fail_msg("lag 1 sees the token it must predict but its loss is %.3f", l1);
    if (!(l2 > 1.5)) fail_msg("lag 2 cannot see it, yet its loss is %.3f", l2);
    gf_model_free(m1);
    gf_model_free(m2);
}

/* The whole model's gradient of one shift weight and one input-side weight, against central differences. */
static void test_gradients(void **state) {
    (void)state;
    gf_model *m = shift_model("2");
    enum { B = 2, T = 9 };
    int32_t in[B * T], tg[B * T];
    pair_batch(in, tg, B, T, 7);
    float loss;
    gf_model_forward(m, in, tg, B, T, &loss);
    gf_model_zero_grad(m);
    gf_model_backward(m);
    const char *names[] = {"blocks.0.mix.proj.weight", "blocks.0.mix.proj.bias", "tok_emb.weight"};
    for (int i = 0; i < 3; i++) {
        const gf_tensor_info *t = gf_model_find_tensor(m, names[i]);
        for (int64_t k = 0; k < t->numel; k += t->numel / 5 + 1) {
            const float x0 = t->data[k], h = 1e-2f;
            float lp, lm;
            t->data[k] = x0 + h;
            gf_model_forward(m, in, tg, B, T, &lp);
            t->data[k] = x0 - h;
            gf_model_forward(m, in, tg, B, T, &lm);
            t->data[k] = x0;
            double fd = ((double)lp - lm) / (2.0 * h);
            if (!(fabs(fd - t->grad[k]) <= 2e-3 + 2e-2 * fabs(fd)))
                fail_msg("%s[%lld]: gradient %.6g, finite differences %.6g", names[i], (long long)k, (double)t->grad[k], fd);
        }
    }
    gf_model_free(m);
}

/* Streamed logits equal the batch forward's; a checkpoint keeps the mixer and its key. */
static void test_stream_and_checkpoint(void **state) {
    (void)state;
    gf_model *m = shift_model("3");
    enum { T = 20 };
    int32_t in[T];
    for (int t = 0; t < T; t++) in[t] = (int32_t)(gf_rand64(9, (uint64_t)t) % 12);
    gf_model_forward(m, in, NULL, 1, T, NULL);
    const float *full = gf_model_logits(m);
    gf_stream *s = gf_stream_create(m);
    assert_non_null(s);
    for (int t = 0; t < T; t++) {
        const float *lg = gf_stream_step(s, in[t]);
        for (int v = 0; v < 12; v++)
            if (!(fabsf(lg[v] - full[t * 12 + v]) <= 1e-5f)) fail_msg("position %d: stream %g, forward %g", t, lg[v], full[t * 12 + v]);
    }
    gf_stream_free(s);
    const char *path = tl_tmp_path("shift.safetensors");
    assert_int_equal(gf_model_save(m, path), 0);
    gf_model *back = gf_model_load(path);
    if (!back) fail_msg("load: %s", gf_last_error());
    char *v = gf_config_get(gf_model_config(back), "layers.0.lag");
    assert_string_equal(v, "3");
    free(v);
    assert_memory_equal(gf_model_params(back), gf_model_params(m), (size_t)gf_model_num_params(m) * sizeof(float));
    gf_model_free(back);
    gf_model_free(m);
}

/* ---- a head: "last", a classifier of the last real position ----------------------------------------- *
 * logits (B, C) = W h[b, last] + bias, where last is the row's last unpadded position (T-1 without a mask),
 * and the loss is their cross-entropy: what a causal model's last position has seen is the whole row. Its
 * key n_classes is C; its tensors are last_head.weight (C, d) and last_head.bias (C). */

typedef struct {
    int64_t n_classes;
} last_config;

static const gf_cfg_key LAST_KEYS[] = {
    {.name = "n_classes", .type = GF_KEY_INT, .off = offsetof(last_config, n_classes), .lo = 2, .hi = 64, .def = "3",
     .help = "labels 0 .. n_classes-1"},
};

static int64_t classes_of(const gf_config *c) { return ((const last_config *)gf_head_cfg(c))->n_classes; }

static int64_t last_targets(int64_t B, int64_t T) {
    (void)T;
    return B;
}

static int last_params(const gf_config *c, gf_param_spec *s) {
    gf_param_spec_set(&s[0], "last_head.weight", 2, classes_of(c), gf_config_out_dim(c), GF_INIT_NORMAL);
    gf_param_spec_set(&s[1], "last_head.bias", 1, classes_of(c), 0, GF_INIT_ZERO);
    return 2;
}

static int64_t last_out(const gf_config *c, int64_t B, int64_t T) {
    (void)T;
    return B * classes_of(c);
}

/* saved: the log-sum-exp of each row's logits (B) */
static int64_t last_saved(const gf_config *c, int64_t B, int64_t T) {
    (void)c, (void)T;
    return B;
}

static int64_t last_n_outputs(const gf_config *c) { return classes_of(c); }

static int64_t last_pos(const gf_head_call *c, int64_t b) {
    int64_t t = c->T - 1;
    while (c->mask && t > 0 && !c->mask[b * c->T + t]) t--;
    return t;
}

static void last_forward(const gf_head_call *c, const float *h, gf_head_result *res) {
    const int64_t d = gf_config_out_dim(c->cfg), C = classes_of(c->cfg);
    res->loss_sum = 0.0;
    res->n_counted = res->n_correct = 0;
    for (int64_t b = 0; b < c->B; b++) {
        const float *x = h + (b * c->T + last_pos(c, b)) * d;
        float *o = c->out + b * C, mx = -INFINITY;
        int64_t best = 0;
        for (int64_t k = 0; k < C; k++) {
            double acc = c->p[1][k];
            for (int64_t i = 0; i < d; i++) acc += (double)c->p[0][k * d + i] * x[i];
            o[k] = (float)acc;
            mx = o[k] > mx ? o[k] : mx;
            best = o[k] > o[best] ? k : best;
        }
        double z = 0.0;
        for (int64_t k = 0; k < C; k++) z += exp((double)(o[k] - mx));
        c->saved[b] = mx + (float)log(z);
        if (!c->targets || c->targets[b] < 0) continue;
        res->loss_sum += c->saved[b] - o[c->targets[b]];
        res->n_counted++;
        res->n_correct += best == c->targets[b];
    }
    if (!c->targets) res->n_correct = -1;
}

static void last_backward(const gf_head_call *c, const float *h, float *dh, float scale) {
    const int64_t d = gf_config_out_dim(c->cfg), C = classes_of(c->cfg);
    for (int64_t b = 0; b < c->B; b++) {
        if (c->targets[b] < 0) continue;
        const int64_t at = (b * c->T + last_pos(c, b)) * d;
        for (int64_t k = 0; k < C; k++) {
            const float g = scale * (expf(c->out[b * C + k] - c->saved[b]) - (k == c->targets[b]));
            if (c->g[1]) c->g[1][k] += g;
            for (int64_t i = 0; i < d; i++) {
                if (c->g[0]) c->g[0][k * d + i] += g * h[at + i];
                dh[at + i] += g * c->p[0][k * d + i];
            }
        }
    }
}

static const gf_head_ops LAST = {
    .version = GF_HEAD_OPS_VERSION,
    .name = "last",
    .help = "a test head: a linear classifier of the last real position",
    .config_size = sizeof(last_config),
    .keys = LAST_KEYS,
    .n_keys = 1,
    .direction = GF_CAUSAL,
    .target_count = last_targets,
    .param_specs = last_params,
    .out_floats = last_out,
    .saved_floats = last_saved,
    .n_outputs = last_n_outputs,
    .forward = last_forward,
    .backward = last_backward,
};

/* A one-layer causal attention model under the head "last". */
static gf_model *last_model(void) {
    gf_config c;
    if (gf_config_from_json("{\"format\": 2, \"task\": \"last\", \"head\": {\"n_classes\": 3}, \"vocab_size\": 12, "
                            "\"d_model\": 16, \"n_layer\": 1, \"d_ff\": 32, \"max_len\": 16, \"dropout\": 0, "
                            "\"layers\": [{\"mixer\": \"attention\", \"n_head\": 2}]}", "test", &c))
        fail_msg("config: %s", gf_last_error());
    gf_model *m = gf_model_create(&c);
    if (!m) fail_msg("create: %s", gf_last_error());
    gf_model_init(m, 5);
    return m;
}

/* B rows of T random tokens, the label of a row its first token mod 3: the last position sees it only through
 * the mixer. With a mask, row b has its last b % 3 positions padded. */
static void last_batch(int32_t *in, int32_t *tg, uint8_t *mask, int64_t B, int64_t T, uint64_t seed) {
    for (int64_t b = 0; b < B; b++) {
        const int64_t n = mask ? T - b % 3 : T;
        for (int64_t t = 0; t < T; t++) {
            in[b * T + t] = (int32_t)(gf_rand64(seed, (uint64_t)(b * T + t)) % 12);
            if (mask) mask[b * T + t] = t < n;
        }
        tg[b] = in[b * T] % 3;
    }
}

static void test_head_register(void **state) {
    (void)state;
    assert_int_equal(gf_head_register(&LAST), 0);
    assert_true(gf_head_find("last") == &LAST);
    assert_int_not_equal(gf_head_register(&LAST), 0); /* twice */
    assert_non_null(strstr(gf_last_error(), "already registered"));
    gf_head_ops bad = LAST;
    bad.name = "lm"; /* a built-in's name */
    assert_int_not_equal(gf_head_register(&bad), 0);
    assert_non_null(strstr(gf_last_error(), "\"lm\" is already registered"));
    bad.name = "last2";
    bad.version = GF_HEAD_OPS_VERSION + 1;
    assert_int_not_equal(gf_head_register(&bad), 0);
    char want[48];
    snprintf(want, sizeof want, "interface version %d", GF_HEAD_OPS_VERSION + 1);
    assert_non_null(strstr(gf_last_error(), want));
    bad.version = 0;
    assert_int_not_equal(gf_head_register(&bad), 0);
    assert_non_null(strstr(gf_last_error(), "interface version 0"));
    bad.version = GF_HEAD_OPS_VERSION;
    bad.config_size = GF_HEAD_CONFIG_BYTES + 1;
    assert_int_not_equal(gf_head_register(&bad), 0);
    assert_non_null(strstr(gf_last_error(), "at most 128 fit"));
    bad.config_size = sizeof(last_config);
    bad.backward = NULL;
    assert_int_not_equal(gf_head_register(&bad), 0);
    assert_non_null(strstr(gf_last_error(), "lacks a function"));
    bad.backward = LAST.backward;
    bad.n_outputs = NULL;
    assert_int_not_equal(gf_head_register(&bad), 0);
    assert_non_null(strstr(gf_last_error(), "lacks a function"));
    bad.n_outputs = LAST.n_outputs;
    const gf_cfg_key bad_default[] = {{.name = "n_classes", .type = GF_KEY_INT, .off = 0, .lo = 2, .hi = 64, .def = "1"}};
    bad.keys = bad_default;
    assert_int_not_equal(gf_head_register(&bad), 0);
    assert_non_null(strstr(gf_last_error(), "the default of key n_classes (1) is not a valid value"));
    bad.keys = LAST_KEYS;
    bad.name = "last two";
    assert_int_not_equal(gf_head_register(&bad), 0);
    assert_non_null(strstr(gf_last_error(), "has the character ' '"));
    bad.name = "last2";
    bad.direction = GF_BIDIRECTIONAL;
    bad.causal_only = true;
    assert_int_not_equal(gf_head_register(&bad), 0);
    assert_non_null(strstr(gf_last_error(), "causal_only"));
    assert_null(gf_head_find("last2")); /* nothing refused was added */
    assert_int_not_equal(gf_head_register(NULL), 0);
}

/* The head's config: its key from JSON and --set, range errors naming it, the JSON form, its tensors. */
static void test_head_config(void **state) {
    (void)state;
    gf_model *m = last_model();
    assert_non_null(gf_model_find_tensor(m, "last_head.weight"));
    assert_int_equal(gf_model_find_tensor(m, "last_head.weight")->shape[0], 3);
    assert_int_equal(gf_model_n_outputs(m), 3);
    assert_false(gf_model_predicts_next_token(m));
    gf_config c = *gf_model_config(m);
    assert_int_equal(gf_config_set(&c, "head.n_classes=5"), 0);
    char *v = gf_config_get(&c, "head.n_classes");
    assert_string_equal(v, "5");
    free(v);
    assert_int_not_equal(gf_config_set(&c, "head.n_classes=1"), 0);
    assert_non_null(strstr(gf_last_error(), "n_classes"));
    char *j = gf_config_to_json(&c, false);
    assert_non_null(strstr(j, "\"head\":{\"kind\":\"last\",\"n_classes\":5}"));
    free(j);
    /* its table does not say smooths_labels: a config that smooths them is refused, not trained plain */
    tl_expect_error(gf_config_set(&c, "label_smoothing=0.1"), "smooths_labels");
    c.label_smoothing = 0.1f; /* set by hand: the model refuses it all the same */
    assert_null(gf_model_create(&c));
    assert_non_null(strstr(gf_last_error(), "smooths_labels"));
    gf_model_free(m);
}

static void test_head_trains(void **state) {
    (void)state;
    enum { B = 32, T = 6, STEPS = 100 };
    int32_t in[B * T], tg[B];
    gf_model *m = last_model();
    gf_adamw *opt = gf_adamw_create(m, (gf_adamw_hparams){.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f});
    float first = NAN, loss = NAN;
    double correct = 0;
    for (int s = 0; s < STEPS; s++) {
        last_batch(in, tg, NULL, B, T, 200 + (uint64_t)s);
        if (gf_model_forward(m, in, tg, B, T, &loss)) fail_msg("forward: %s", gf_last_error());
        if (s == 0) first = loss;
        if (s >= STEPS - 20) correct += (double)gf_model_correct(m);
        gf_model_zero_grad(m);
        gf_model_backward(m);
        gf_adamw_step(opt, m, 1e-2f);
    }
    const double acc = correct / (20.0 * B);
    printf("  head \"last\": loss %.3f -> %.3f in %d steps, accuracy of the last 20 batches %.3f (chance 1/3)\n",
           first, loss, STEPS, acc);
    if (!(first > 0.9f && loss < 0.5f * first)) fail_msg("the loss went from %.3f to %.3f", first, loss);
    if (!(acc > 0.8)) fail_msg("accuracy %.3f", acc);
    gf_adamw_free(opt);
    /* a checkpoint keeps the task and its key */
    const char *path = tl_tmp_path("last.safetensors");
    assert_int_equal(gf_model_save(m, path), 0);
    gf_model *back = gf_model_load(path);
    if (!back) fail_msg("load: %s", gf_last_error());
    char *v = gf_config_get(gf_model_config(back), "head.n_classes");
    assert_string_equal(v, "3");
    free(v);
    assert_memory_equal(gf_model_params(back), gf_model_params(m), (size_t)gf_model_num_params(m) * sizeof(float));
    gf_model_free(back);
    gf_model_free(m);
}

/* The whole model's gradient through the head, with padding, against central differences: the head's own
 * tensors, the mixer's and the embedding; and the padding mask reaches the head. */
static void test_head_gradients(void **state) {
    (void)state;
    enum { B = 3, T = 5 };
    int32_t in[B * T], tg[B];
    uint8_t mask[B * T];
    last_batch(in, tg, mask, B, T, 11);
    gf_model *m = last_model();
    const gf_batch batch = {.B = B, .T = T, .ids = in, .targets = tg, .n_targets = B, .mask = mask};
    float loss;
    if (gf_model_forward_batch(m, &batch, &loss)) fail_msg("forward: %s", gf_last_error());
    gf_model_zero_grad(m);
    gf_model_backward(m);
    const char *names[] = {"last_head.weight", "last_head.bias", "blocks.0.mix.qkv.weight", "tok_emb.weight"};
    int checked = 0;
    for (int i = 0; i < 4; i++) {
        const gf_tensor_info *t = gf_model_find_tensor(m, names[i]);
        if (!t) fail_msg("no tensor %s", names[i]);
        for (int64_t k = 0; k < t->numel; k += t->numel / 7 + 1) {
            const float x0 = t->data[k], h = 1e-2f;
            float lp, lm;
            t->data[k] = x0 + h;
            gf_model_forward_batch(m, &batch, &lp);
            t->data[k] = x0 - h;
            gf_model_forward_batch(m, &batch, &lm);
            t->data[k] = x0;
            const double fd = ((double)lp - lm) / (2.0 * h);
            if (!(fabs(fd - t->grad[k]) <= 2e-3 + 2e-2 * fabs(fd)))
                fail_msg("%s[%lld]: gradient %.6g, finite differences %.6g", names[i], (long long)k, (double)t->grad[k], fd);
            checked += fabs(fd) > 1e-4;
        }
    }
    if (checked < 8) fail_msg("only %d of the checked gradients are not ~0: the check proves little", checked);
    /* the mask reaches the head: a padded row's logits are those of the row cut to its real positions */
    float padded[B * 3];
    gf_model_forward_batch(m, &batch, NULL);
    memcpy(padded, gf_model_logits(m), sizeof padded);
    for (int64_t b = 1; b < B; b++) {
        const int64_t n = T - b % 3;
        if (gf_model_forward(m, in + b * T, NULL, 1, n, NULL)) fail_msg("forward: %s", gf_last_error());
        for (int k = 0; k < 3; k++)
            if (!(fabsf(gf_model_logits(m)[k] - padded[b * 3 + k]) <= 1e-5f))
                fail_msg("row %lld, %lld real positions: logit %d is %g padded, %g cut", (long long)b, (long long)n, k,
                         padded[b * 3 + k], gf_model_logits(m)[k]);
    }
    gf_model_free(m);
}

/* Every built-in table passes the check gf_mixer_register / gf_head_register run on a new one (a built-in
 * that would be refused at run time fails here), and so do the two this file added. */
/* An importer of the test's own (a folder with a file "inline-model": grassmann-tiny over 64 tokens, seed 5)
 * through gf_importer_register: gf_import_detect and gf_import_load reach it, a grassflow checkpoint still
 * loads as before, and what the register refuses leaves nothing behind. tests/plugins/importer_toy.c is the same
 * through the installed library (tests/project/install.sh). */
static bool inline_detect(const char *path) {
    char f[512];
    snprintf(f, sizeof f, "%s/inline-model", path);
    FILE *fp = fopen(f, "r");
    if (fp) fclose(fp);
    return fp != NULL;
}
static gf_model *inline_load(const char *path, gf_tokenizer **tok) {
    (void)path;
    gf_config cfg;
    if (gf_config_preset("grassmann-tiny", &cfg)) return NULL;
    gf_model *m = gf_model_create(&cfg);
    if (m) gf_model_init(m, 5);
    *tok = NULL;
    return m;
}
static const gf_importer INLINE = {.version = GF_IMPORTER_VERSION, .name = "inline", .what = "an inline folder",
                                   .label = "an inline folder", .detect = inline_detect, .load = inline_load};

static void test_importer_register(void **state) {
    (void)state;
    const int n0 = gf_importer_count();
    assert_true(n0 >= 1 && !strcmp(gf_importer_at(0)->name, "hf-distilbert") && !gf_importer_at(n0));
    gf_importer bad = INLINE;
    bad.version = GF_IMPORTER_VERSION + 1;
    assert_int_not_equal(gf_importer_register(&bad), 0);
    assert_non_null(strstr(gf_last_error(), "interface version"));
    bad = INLINE;
    bad.name = "in line";
    assert_int_not_equal(gf_importer_register(&bad), 0);
    assert_non_null(strstr(gf_last_error(), "has the character ' '"));
    bad = INLINE;
    bad.load = NULL;
    assert_int_not_equal(gf_importer_register(&bad), 0);
    assert_non_null(strstr(gf_last_error(), "lacks one of"));
    bad = INLINE;
    bad.name = "hf-distilbert";
    assert_int_not_equal(gf_importer_register(&bad), 0);
    assert_non_null(strstr(gf_last_error(), "registered already"));
    assert_int_not_equal(gf_importer_register(NULL), 0);
    assert_int_equal(gf_importer_count(), n0); /* nothing refused was added */
    assert_int_equal(gf_importer_register(&INLINE), 0);
    assert_true(gf_importer_count() == n0 + 1 && gf_importer_at(n0) == &INLINE);

    char dir[] = "/tmp/grassflow-importer-XXXXXX", f[600];
    assert_non_null(mkdtemp(dir));
    assert_null(gf_import_detect(dir));
    gf_tokenizer *tok = NULL;
    assert_null(gf_import_load(dir, &tok)); /* a folder no importer claims: the message names them all */
    assert_non_null(strstr(gf_last_error(), "inline: an inline folder"));
    snprintf(f, sizeof f, "%s/inline-model", dir);
    FILE *fp = fopen(f, "w");
    assert_non_null(fp);
    fclose(fp);
    assert_string_equal(gf_import_detect(dir), "inline");
    gf_model *m = gf_import_load(dir, &tok);
    assert_non_null(m);
    gf_config cfg;
    assert_int_equal(gf_config_preset("grassmann-tiny", &cfg), 0);
    gf_model *ref = gf_model_create(&cfg);
    gf_model_init(ref, 5);
    assert_int_equal(gf_model_num_params(m), gf_model_num_params(ref));
    const gf_tensor_info *a = gf_model_tensor(m, 0), *b = gf_model_tensor(ref, 0);
    assert_memory_equal(a->data, b->data, (size_t)a->numel * sizeof(float));
    snprintf(f, sizeof f, "%s/m.safetensors", dir); /* grassflow's own format still loads, through the importers */
    assert_int_equal(gf_model_save(m, f), 0);
    assert_null(gf_import_detect(f));
    gf_model *back = gf_import_load(f, &tok);
    assert_non_null(back);
    assert_memory_equal(gf_model_tensor(back, 0)->data, a->data, (size_t)a->numel * sizeof(float));
    gf_model_free(back);
    gf_model_free(ref);
    gf_model_free(m);
    remove(f);
    snprintf(f, sizeof f, "%s/inline-model", dir);
    remove(f);
    rmdir(dir);
}

static void test_builtins_pass_the_checks(void **state) {
    (void)state;
    for (int i = 0; i < gf_mixer_count(); i++)
        if (gf_mixer_check_at(i)) fail_msg("mixer %d (%s): %s", i, gf_mixer_at(i)->name, gf_last_error());
    for (int i = 0; i < gf_head_count(); i++)
        if (gf_head_check_at(i)) fail_msg("head %d (%s): %s", i, gf_head_at(i)->name, gf_last_error());
    assert_true(gf_mixer_count() >= 3 && gf_head_count() >= 3); /* the built-ins, shift and last */
    assert_int_not_equal(gf_mixer_check_at(gf_mixer_count()), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_register),
        cmocka_unit_test(test_draw_buffers),
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_trains),
        cmocka_unit_test(test_gradients),
        cmocka_unit_test(test_stream_and_checkpoint),
        cmocka_unit_test(test_head_register),
        cmocka_unit_test(test_head_config),
        cmocka_unit_test(test_head_trains),
        cmocka_unit_test(test_head_gradients),
        cmocka_unit_test(test_builtins_pass_the_checks),
        cmocka_unit_test(test_importer_register),
    };
    return cmocka_run_group_tests_name("plugin", tests, NULL, NULL);
}
