/* Inspection and evaluation-time overrides (src/model/inspection.c, override.c; the probes of
 * src/mixers/grassmann.c and attention.c), each held to an independent computation:
 *   - an offset dropped by an override gives the model whose config lacks it, the same weights: the same bits;
 *   - a gate forced to 1 gives the model whose gate is saturated at 1 by its weights (gate.weight 0, gate.bias
 *     100: sigmoid(100) is 1.0f), and changes nothing when the layer's Pluecker path is scrambled (the model
 *     without that layer's Grassmann update); forced to 0, the gate saturated at 0;
 *   - the probe's terms, offset by offset, rebuild the mixer's output, and its Pluecker coordinates are the
 *     literal wedge of the reduced pair in double;
 *   - the attention weights rebuild the attention mixer's output;
 *   - an inspection's numbers are those of gf_model_score under each override; its JSON has the shapes
 *     docs/usage.md promises; and the errors. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "grassflow_plugin.h"
#include "mixers/attn_common.h"
#include "mixers/grassmann.h"
#include "mixers/mixer.h"
#include "testlib.h"

enum { T_LEN = 24 };

static int32_t *token_ids(const gf_model *m, int64_t T, uint64_t seed) {
    int32_t *ids = talloc((size_t)T * sizeof *ids);
    for (int64_t t = 0; t < T; t++) ids[t] = (int32_t)(gf_rand64(seed, (uint64_t)t) % (uint64_t)gf_model_config(m)->vocab_size);
    return ids;
}

/* A model of cfg with m's weights (every tensor by name). */
static gf_model *twin(const gf_model *m, const gf_config *cfg) {
    gf_model *t = gf_model_create(cfg);
    assert_non_null(t);
    static const char *const all[] = {"", NULL};
    assert_int_equal(gf_model_copy_tensors(t, m, all), gf_model_num_tensors(m));
    return t;
}

static double score(gf_model *m, const int32_t *ids, int64_t T) {
    double loss = NAN;
    if (gf_model_score(m, ids, T, &loss, NULL)) fail_msg("score: %s", gf_last_error());
    return loss;
}

/* The loss of m under override o, then m without it (and the logits under it into logits, V x T). */
static double score_override(gf_model *m, gf_override o, const int32_t *ids, int64_t T, float *logits) {
    if (gf_model_set_override(m, &o, 1)) fail_msg("override: %s", gf_last_error());
    const double l = score(m, ids, T);
    if (logits) memcpy(logits, gf_model_logits(m), (size_t)(T * gf_model_config(m)->vocab_size) * sizeof *logits);
    assert_int_equal(gf_model_set_override(m, NULL, 0), 0);
    return l;
}

static void test_drop_offset_is_the_config_without_it(void **state) {
    (void)state;
    gf_model *m = tl_make_model("hybrid-tiny", NULL, 3); /* grassmann, attention, grassmann; offsets 1 .. 16 */
    const int32_t *ids = token_ids(m, T_LEN, 7);
    const int64_t V = gf_model_config(m)->vocab_size;
    const double base = score(m, ids, T_LEN);
    struct { gf_override o; const char *set; } cases[] = {
        {{0, 2, GF_GATE_LEARNED}, "layers.0.offsets=[1,4,8,12,16]"},
        {{2, 16, GF_GATE_LEARNED}, "layers.2.offsets=[1,2,4,8,12]"},
        {{-1, 4, GF_GATE_LEARNED}, "offsets=1,2,8,12,16"},
    };
    float *got = falloc(T_LEN * V);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const double l = score_override(m, cases[i].o, ids, T_LEN, got);
        gf_config c = *gf_model_config(m);
        if (gf_config_set(&c, cases[i].set)) fail_msg("%s: %s", cases[i].set, gf_last_error());
        gf_model *t = twin(m, &c);
        const double want = score(t, ids, T_LEN);
        const float *lt = gf_model_logits(t);
        for (int64_t k = 0; k < T_LEN * V; k++)
            if (got[k] != lt[k]) fail_msg("%s: logit %lld: %.9g under the override, %.9g in the model of that config",
                                          cases[i].set, (long long)k, got[k], lt[k]);
        assert_true(l == want && l != base); /* bit for bit, and the offset mattered */
        gf_model_free(t);
    }
    assert_true(score(m, ids, T_LEN) == base); /* cleared: the model as it was, bit for bit */
    gf_model_free(m);
}

/* m's tensor `name` set to v everywhere. */
static void set_tensor(gf_model *m, const char *name, float v) {
    const gf_tensor_info *t = gf_model_find_tensor(m, name);
    assert_non_null(t);
    for (int64_t i = 0; i < t->numel; i++) t->data[i] = v;
}

static void test_forced_gate(void **state) {
    (void)state;
    gf_model *m = tl_make_model("hybrid-tiny", NULL, 5);
    const int32_t *ids = token_ids(m, T_LEN, 9);
    for (int one = 0; one < 2; one++) {
        const double l = score_override(m, (gf_override){2, 0, one ? GF_GATE_ONE : GF_GATE_ZERO}, ids, T_LEN, NULL);
        gf_model *t = twin(m, gf_model_config(m)); /* the gate saturated by its weights */
        set_tensor(t, "blocks.2.mix.gate.weight", 0.0f);
        set_tensor(t, "blocks.2.mix.gate.bias", one ? 100.0f : -100.0f);
        const double want = score(t, ids, T_LEN);
        print_message("gate forced to %d: loss %.9g; the gate saturated by its weights: %.9g (difference %.1e)\n", one, l,
                      want, fabs(l - want));
        if (fabs(l - want) > 1e-6) fail_msg("gate forced to %d: loss %.9g; saturated by the weights: %.9g", one, l, want);
        gf_model_free(t);
    }
    /* a = 1: the layer's Grassmann path no longer matters (the model without that layer's update) */
    const double l1 = score_override(m, (gf_override){0, 0, GF_GATE_ONE}, ids, T_LEN, NULL);
    gf_model *t = twin(m, gf_model_config(m));
    set_tensor(t, "blocks.0.mix.plucker.weight", 0.5f);
    set_tensor(t, "blocks.0.mix.red.weight", -0.25f);
    assert_true(score_override(t, (gf_override){0, 0, GF_GATE_ONE}, ids, T_LEN, NULL) == l1);
    assert_true(score(t, ids, T_LEN) != score(m, ids, T_LEN)); /* ... which the learned gate would have seen */
    gf_model_free(t);
    gf_model_free(m);
}

/* Harness params perturbed so that biases and gates matter. */
static gf_mixer_harness *harness(const gf_config *c, int layer, uint64_t seed) {
    gf_mixer_harness *h = gf_mixer_harness_create(c, layer, 1, T_LEN, seed);
    assert_non_null(h);
    gf_param_spec s[GF_MIXER_MAX_PARAMS];
    const gf_mixer_ops *ops = gf_layer_mixer(c, layer);
    assert_non_null(ops);
    const int n = ops->param_specs(c, layer, s);
    for (int i = 0; i < n; i++) {
        const int64_t numel = s[i].shape[0] * (s[i].ndim == 2 ? s[i].shape[1] : 1);
        tl_fill_uniform(gf_mixer_harness_params(h)[i], numel, seed * 31 + (uint64_t)i, -0.3f, 0.3f);
    }
    return h;
}

/* The literal pi-weighted mean |phat_k| of row t over its partners (pi: row t's K slot weights), in double: z =
 * red(inp), p = z_t ^ z_t-D head by head (a bidirectional layer's also z_t ^ z_t+D). */
static double coord_ref(const gf_grassmann_config *g, bool both, float *const *w, const float *inp, int64_t d,
                        int64_t t, int64_t k, const double *pi, int *cnt) {
    const int64_t r = g->rank, rh = r / g->heads;
    double z[2][256], acc = 0.0;
    int64_t head = 0, i = 0, j = 0, kk = k;
    while (kk >= rh * (rh - 1) / 2) kk -= rh * (rh - 1) / 2, head++;
    for (i = 0; kk >= rh - 1 - i; i++) kk -= rh - 1 - i;
    j = i + 1 + kk;
    *cnt = 0;
    for (int o = 0; o < (both ? 2 : 1) * g->n_offsets; o++) {
        const int64_t s = o < g->n_offsets ? t - g->offsets[o] : t + g->offsets[o - g->n_offsets];
        if (s < 0 || s >= T_LEN || (g->window && s / g->window != t / g->window)) continue;
        for (int q = 0; q < 2; q++)
            for (int64_t a = 0; a < r; a++) {
                double v = w[1][a];
                for (int64_t e = 0; e < d; e++) v += (double)w[0][a * d + e] * inp[(q ? s : t) * d + e];
                z[q][a] = v;
            }
        double n2 = 0.0, pk = 0.0;
        for (int64_t a = 0; a < rh; a++)
            for (int64_t b = a + 1; b < rh; b++) {
                const double p = z[0][head * rh + a] * z[1][head * rh + b] - z[0][head * rh + b] * z[1][head * rh + a];
                n2 += p * p;
                if (a == i && b == j) pk = p;
            }
        acc += pi[o] * fabs(pk) / fmax(sqrt(n2), g->plucker_eps);
        (*cnt)++;
    }
    return acc;
}

/* The weight of each partner slot of each row in layer 0's mixture over offsets, literally: 1 / n_valid (the mean),
 * or a softmax over the valid slots of exp(l), l = mix.bias (learned) or mix.weight inp_t + mix.bias (token), in
 * double. Layer 0 of grassmann-tiny without conv or extra_proj: mix.* are tensors 6 (and 7). */
static void slot_pi(double *pi, const gf_grassmann_config *g, float *const *w, const float *inp, int64_t d, int64_t K,
                    const uint8_t *valid, const int *nv) {
    const int n = g->n_offsets;
    for (int64_t t = 0; t < T_LEN; t++) {
        double sum = 0.0;
        for (int64_t o = 0; o < K; o++) {
            double l = 0.0;
            if (g->offset_mix == GF_OFFSET_TOKEN) {
                l = w[7][o % n];
                for (int64_t e = 0; e < d; e++) l += (double)w[6][o % n * d + e] * inp[t * d + e];
            } else if (g->offset_mix == GF_OFFSET_LEARNED) {
                l = w[6][o % n];
            }
            pi[t * K + o] = valid[t * K + o] ? exp(l) : 0.0;
            sum += pi[t * K + o];
        }
        for (int64_t o = 0; o < K; o++) pi[t * K + o] = nv[t] ? pi[t * K + o] / sum : 0.0;
    }
}

/* The probe of layer 0 of grassmann-tiny with sets: its output is the mixer's (the harness's forward), its
 * terms rebuild it, its contributions are their norms, its coordinates the literal wedge's. */
static void check_probe(const char *what, const char *const *sets) {
    gf_config c;
    assert_int_equal(gf_config_preset("grassmann-tiny", &c), 0);
    for (; sets && *sets; sets++)
        if (gf_config_set(&c, *sets)) fail_msg("%s: %s", *sets, gf_last_error());
    const gf_grassmann_config *g = gf_layer_mcfg(&c, 0);
    const bool both = c.direction == GF_BIDIRECTIONAL; /* partners t - D, then t + D */
    const int64_t d = c.d_model, K = (both ? 2 : 1) * g->n_offsets, C = gf_grassmann_n_coords(&c, 0), T = T_LEN;
    gf_mixer_harness *h = harness(&c, 0, 13);
    float *inp = falloc(T * d), *want = falloc(T * d), *out = falloc(T * d), *gate = falloc(T * d);
    float *terms = falloc(T * K * d), *contrib = falloc(T * K), *coord = falloc(T * (C ? C : 1));
    int *nv = talloc((size_t)T * sizeof *nv);
    uint8_t *valid = talloc((size_t)(T * K));
    double *pi = dalloc(T * K);
    tl_fill_uniform(inp, T * d, 17, -1.0f, 1.0f);
    gf_mixer_harness_forward(h, want, inp);
    float *const *w = gf_mixer_harness_params(h);
    const gf_grassmann_probe p = {.terms = terms, .contrib = contrib, .n_valid = nv, .valid = valid, .coord = coord,
                                  .gate = gate, .out = out};
    assert_int_equal(gf_grassmann_probe_run(&c, 0, w, inp, T, &p), 0);
    slot_pi(pi, g, w, inp, d, K, valid, nv);
    double worst = 0.0, rebuilt = 0.0, coords = 0.0;
    for (int64_t k = 0; k < T * d; k++) worst = fmax(worst, fabs((double)out[k] - want[k]));
    for (int64_t t = 0; t < T; t++)
        for (int64_t e = 0; e < d && g->gate && !g->extra_proj; e++) { /* m = a h + (1 - a) (sum pi terms + b) */
            double gv = nv[t] ? w[3][e] : 0.0;
            for (int64_t o = 0; o < K; o++) gv += pi[t * K + o] * (double)terms[(t * K + o) * d + e];
            const double a = gate[t * d + e], m = a * inp[t * d + e] + (1 - a) * gv;
            rebuilt = fmax(rebuilt, fabs(m - want[t * d + e]));
        }
    for (int64_t t = 0; t < T; t++)
        for (int64_t o = 0; o < K; o++) {
            double n2 = 0.0;
            for (int64_t e = 0; e < d; e++) n2 += (double)terms[(t * K + o) * d + e] * terms[(t * K + o) * d + e];
            rebuilt = fmax(rebuilt, fabs(contrib[t * K + o] - pi[t * K + o] * sqrt(n2)));
        }
    for (int64_t t = 0; t < T; t++)
        for (int64_t k = 0; k < C; k++) {
            int cnt;
            coords = fmax(coords, fabs(coord[t * C + k] - coord_ref(g, both, w, inp, d, t, k, pi + t * K, &cnt)));
            assert_int_equal(cnt, nv[t]);
        }
    print_message("%s: probe output vs the mixer's %.2e, terms rebuilding it %.2e, coordinates vs the literal wedge %.2e\n",
                  what, worst, rebuilt, coords);
    assert_true(worst == 0.0 && rebuilt < 2e-5 && coords < 2e-5);
    gf_mixer_harness_free(h);
}

static void test_grassmann_probe(void **state) {
    (void)state;
    check_probe("default", NULL);
    const char *heads[] = {"heads=2", NULL}, *window[] = {"window=5", NULL}, *pair[] = {"plucker=false", NULL};
    const char *extra[] = {"extra_proj=true", NULL}, *nogate[] = {"gate=false", NULL};
    check_probe("heads 2", heads);
    check_probe("window 5", window);
    check_probe("plucker false", pair);
    check_probe("extra_proj", extra);
    check_probe("gate false", nogate);
    const char *bidir[] = {"head.kind=classify", "direction=bidirectional", NULL};
    const char *bidir_window[] = {"head.kind=classify", "direction=bidirectional", "window=5", "heads=2", NULL};
    check_probe("bidirectional", bidir);
    check_probe("bidirectional, window 5, heads 2", bidir_window);
    const char *learned[] = {"offset_mix=learned", NULL}, *token[] = {"offset_mix=token", "heads=2", NULL};
    const char *bidir_token[] = {"head.kind=classify", "direction=bidirectional", "offset_mix=token", NULL};
    check_probe("offset_mix learned", learned);
    check_probe("offset_mix token, heads 2", token);
    check_probe("bidirectional, offset_mix token", bidir_token);
}

static void test_attention_weights(void **state) {
    (void)state;
    gf_config c;
    assert_int_equal(gf_config_preset("hybrid-tiny", &c), 0);
    const int64_t d = c.d_model, T = T_LEN, H = gf_attn_n_head(&c, 1), dh = d / H;
    gf_mixer_harness *h = harness(&c, 1, 21);
    float *const *w = gf_mixer_harness_params(h);
    float *inp = falloc(T * d), *want = falloc(T * d), *att = falloc(H * T * T);
    tl_fill_uniform(inp, T * d, 23, -1.0f, 1.0f);
    gf_mixer_harness_forward(h, want, inp);
    assert_int_equal(gf_attention_weights(&c, 1, w, inp, T, att), 0);
    double worst = 0.0, rows = 0.0;
    for (int64_t t = 0; t < T; t++) {
        double o[256] = {0}; /* sum_s w v_s, heads concatenated, in double */
        for (int64_t hh = 0; hh < H; hh++) {
            double sum = 0.0;
            for (int64_t s = 0; s < T; s++) {
                const double a = att[(hh * T + t) * T + s];
                sum += a;
                if (s > t) assert_true(a == 0.0);
                for (int64_t e = 0; e < dh; e++) {
                    double v = w[1][2 * d + hh * dh + e];
                    for (int64_t q = 0; q < d; q++) v += (double)w[0][(2 * d + hh * dh + e) * d + q] * inp[s * d + q];
                    o[hh * dh + e] += a * v;
                }
            }
            rows = fmax(rows, fabs(sum - 1.0));
        }
        for (int64_t e = 0; e < d; e++) {
            double y = w[3][e];
            for (int64_t q = 0; q < d; q++) y += (double)w[2][e * d + q] * o[q];
            worst = fmax(worst, fabs(y - want[t * d + e]));
        }
    }
    print_message("attention weights: rows sum to 1 within %.1e; rebuild the mixer's output within %.1e\n", rows, worst);
    assert_true(rows < 1e-6 && worst < 1e-5);
    gf_mixer_harness_free(h);
}

/* A JSON array's length (-1: not an array). */
static int len(const cJSON *a) { return cJSON_IsArray(a) ? cJSON_GetArraySize(a) : -1; }

static void check_json(const gf_inspection *x) {
    const char *labels[T_LEN];
    for (int t = 0; t < T_LEN; t++) labels[t] = t % 2 ? "a<b&\"c\"" : "\n";
    char *s = gf_inspection_to_json(x, labels, 3);
    cJSON *o = cJSON_Parse(s);
    assert_non_null(o);
    assert_int_equal(len(cJSON_GetObjectItem(o, "pieces")), T_LEN);
    const cJSON *L = cJSON_GetObjectItem(o, "layers"), *g = cJSON_GetArrayItem(L, 0), *a = cJSON_GetArrayItem(L, 1);
    assert_int_equal(len(L), 3);
    assert_string_equal(cJSON_GetObjectItem(a, "kind")->valuestring, "attention");
    assert_int_equal(len(cJSON_GetObjectItem(a, "attention")), 4);
    assert_int_equal(len(cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetObjectItem(a, "attention"), 3), T_LEN - 1)), T_LEN);
    assert_int_equal(len(cJSON_GetObjectItem(g, "gate")), T_LEN);
    assert_int_equal(len(cJSON_GetArrayItem(cJSON_GetObjectItem(g, "gate"), 0)), 32);
    const char *per_offset[] = {"contribution", "share", "drop_token_delta"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(len(cJSON_GetObjectItem(g, per_offset[i])), T_LEN);
        assert_int_equal(len(cJSON_GetArrayItem(cJSON_GetObjectItem(g, per_offset[i]), 5)), 6);
    }
    assert_int_equal(len(cJSON_GetArrayItem(cJSON_GetObjectItem(g, "plucker_top"), 4)), 3);
    assert_true(cJSON_IsNull(cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetObjectItem(g, "drop_token_delta"), T_LEN - 1), 0)));
    cJSON_Delete(o);
    free(s);
}

static void test_inspection(void **state) {
    (void)state;
    gf_model *m = tl_make_model("hybrid-tiny", NULL, 8);
    const int32_t *ids = token_ids(m, T_LEN, 4);
    gf_inspection *x = gf_model_inspect(m, ids, T_LEN);
    assert_non_null(x);
    assert_false(gf_model_has_override(m));
    assert_true(x->loss == score(m, ids, T_LEN));
    const gf_inspect_layer *L = &x->layers[2];
    assert_int_equal(x->layers[1].kind, GF_INSPECT_ATTENTION);
    assert_int_equal(L->kind, GF_INSPECT_GRASSMANN);
    for (int o = 0; o < L->n_offsets; o++)
        assert_true(L->drop_loss[o] == score_override(m, (gf_override){2, L->offsets[o], GF_GATE_LEARNED}, ids, T_LEN, NULL));
    assert_true(L->gate_loss[1] == score_override(m, (gf_override){2, 0, GF_GATE_ONE}, ids, T_LEN, NULL));
    for (int64_t t = 1; t < T_LEN; t++) { /* shares sum to 1 where a partner exists; the first token has none */
        double s = 0.0;
        for (int o = 0; o < L->n_offsets; o++) s += L->share[t * L->n_offsets + o];
        assert_true(fabs(s - 1.0) < 1e-5);
    }
    assert_int_equal(L->n_valid[0], 0);
    assert_int_equal(L->n_valid[T_LEN - 1], 6);
    check_json(x);
    gf_inspection_free(x);
    gf_model_free(m);
}

/* An encoder-decoder: Grassmann and attention in each stack (the encoder's bidirectional), a cross op per
 * decoder block. */
static gf_model *encdec(void) {
    const char *js = "{\"format\": 3, \"head\": {\"kind\": \"next_token\"}, \"vocab_size\": 7, \"source_vocab\": 9, "
                     "\"cross_heads\": 2, \"d_model\": 16, \"n_layer\": 2, \"d_ff\": 32, \"max_len\": 16, \"direction\": "
                     "\"bidirectional\", \"layers\": [{\"mixer\": \"grassmann\", \"rank\": 4, \"offsets\": [1, 3]}, "
                     "{\"mixer\": \"attention\", \"n_head\": 2}], \"stacks\": [{\"name\": \"decoder\", \"d_model\": 16, "
                     "\"d_ff\": 32, \"n_layer\": 2, \"direction\": \"causal\", \"layers\": [{\"mixer\": \"grassmann\", "
                     "\"rank\": 4, \"offsets\": [1, 2]}, {\"mixer\": \"attention\", \"n_head\": 2}]}]}";
    gf_config c;
    if (gf_config_from_json(js, "test", &c)) fail_msg("%s", gf_last_error());
    gf_model *m = gf_model_create(&c);
    assert_non_null(m);
    gf_model_init(m, 5);
    return m;
}

/* The target's loss of (source, ids) under override o (none: layer -1, offset 0, the gate learned). */
static double pair_loss(gf_model *m, const int32_t *src, int64_t S, const int32_t *ids, int64_t n, gf_override o) {
    const bool any = o.layer >= 0;
    if (any && gf_model_set_override(m, &o, 1)) fail_msg("override: %s", gf_last_error());
    int32_t tg[16];
    for (int64_t t = 0; t < n; t++) tg[t] = t + 1 < n ? ids[t + 1] : -1;
    const gf_batch b = {.B = 1, .T = n, .ids = ids, .targets = tg, .S = S, .source = src};
    float l = NAN;
    if (gf_model_forward_batch(m, &b, &l)) fail_msg("forward: %s", gf_last_error());
    if (any) gf_model_set_override(m, NULL, 0);
    return l;
}

/* gf_model_inspect_pair: the encoder's layers over the source, both ways; the decoder's over the target, with
 * their attention over the source; every loss the one its override gives. */
static void test_inspection_pair(void **state) {
    (void)state;
    gf_model *m = encdec();
    const int32_t src[7] = {1, 8, 3, 3, 0, 5, 2}, ids[5] = {6, 2, 0, 4, 6}; /* bos, 3 tokens, the end */
    const int64_t S = 7, n = 5;
    gf_inspection *x = gf_model_inspect_pair(m, src, S, ids, n);
    if (!x) fail_msg("%s", gf_last_error());
    assert_int_equal(x->S, S);
    assert_true((float)x->loss == (float)pair_loss(m, src, S, ids, n, (gf_override){-1, 0, GF_GATE_LEARNED}));
    const gf_inspect_layer *E = &x->layers[0], *A = &x->layers[1], *D = &x->layers[2], *X = &x->layers[3];
    assert_true(E->encoder && A->encoder && !D->encoder && !X->encoder);
    assert_int_equal(E->positions, S);
    assert_int_equal(D->positions, n);
    assert_int_equal(E->n_offsets, 4); /* 1, 3, then -1, -3: the partners t + 1, t + 3 */
    assert_true(E->offsets[0] == 1 && E->offsets[1] == 3 && E->offsets[2] == -1 && E->offsets[3] == -3);
    assert_int_equal(E->n_valid[0], 2);     /* 1 and 3 places after the first position */
    assert_int_equal(E->n_valid[3], 4);
    assert_int_equal(E->n_valid[S - 1], 2); /* 1 and 3 places before the last */
    for (int64_t t = 0; t < S; t++) {
        double sh = 0.0;
        for (int o = 0; o < 4; o++) sh += E->share[t * 4 + o];
        assert_true(fabs(sh - 1.0) < 1e-5);
    }
    for (int o = 0; o < 4; o++) /* a dropped offset goes both ways */
        assert_true(E->drop_loss[o] == pair_loss(m, src, S, ids, n, (gf_override){0, abs(E->offsets[o]), GF_GATE_LEARNED}));
    assert_true(E->drop_loss[0] == E->drop_loss[2] && E->drop_loss[0] != x->loss);
    assert_true(D->drop_loss[1] == pair_loss(m, src, S, ids, n, (gf_override){2, 2, GF_GATE_LEARNED}));
    double late = 0.0; /* the encoder's attention reads keys after the query */
    for (int64_t h = 0; h < A->n_head; h++)
        for (int64_t t = 0; t < S; t++) {
            double row = 0.0;
            for (int64_t s = 0; s < S; s++) row += A->attn[(h * S + t) * S + s], late += s > t ? A->attn[(h * S + t) * S + s] : 0;
            assert_true(fabs(row - 1.0) < 1e-5);
        }
    assert_true(late > 1.0);
    for (int l = 2; l < 4; l++) { /* each decoder layer's attention over the source, its rows summing to 1 */
        const gf_inspect_layer *L = &x->layers[l];
        assert_int_equal(L->cross_heads, 2);
        for (int64_t r = 0; r < 2 * n; r++) {
            double row = 0.0;
            for (int64_t s = 0; s < S; s++) row += L->cross[r * S + s];
            assert_true(fabs(row - 1.0) < 1e-5);
        }
    }
    assert_int_equal(E->cross_heads, 0);
    const char *labels[12] = {"<eos>", "ae1", "t", "p", "<eos>", "a", "t", "o", "p", "s", "x", "y"};
    char *js = gf_inspection_to_json(x, labels, 2);
    cJSON *o = cJSON_Parse(js), *Ls = cJSON_GetObjectItem(o, "layers");
    assert_int_equal(len(cJSON_GetObjectItem(o, "source_pieces")), S);
    assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "source_pieces"), 1)->valuestring, "t");
    const cJSON *e = cJSON_GetArrayItem(Ls, 0), *dj = cJSON_GetArrayItem(Ls, 2);
    assert_string_equal(cJSON_GetObjectItem(e, "stack")->valuestring, "encoder");
    assert_int_equal(len(cJSON_GetObjectItem(e, "contribution")), S);
    assert_int_equal(len(cJSON_GetArrayItem(cJSON_GetObjectItem(e, "contribution"), 0)), 4);
    assert_int_equal(len(cJSON_GetObjectItem(e, "drop_token_delta")), n);
    assert_int_equal(len(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(Ls, 1), "attention"), 1)), S);
    assert_int_equal(len(cJSON_GetObjectItem(dj, "cross")), 2);
    assert_int_equal(len(cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetObjectItem(dj, "cross"), 1), n - 1)), S);
    cJSON_Delete(o);
    free(js);
    gf_inspection_free(x);
    tl_expect_error(gf_model_inspect_pair(m, src, 0, ids, n) != NULL ? 0 : -1, "an empty source");
    gf_model *lm = tl_make_model("grassmann-tiny", NULL, 2);
    tl_expect_error(gf_model_inspect_pair(lm, src, S, ids, n) != NULL ? 0 : -1, "not an encoder-decoder");
    tl_expect_error(gf_model_inspect(m, ids, n) != NULL ? 0 : -1, "inspect");
    gf_model_free(lm);
    gf_model_free(m);
}

static void test_errors(void **state) {
    (void)state;
    gf_model *m = tl_make_model("hybrid-tiny", (const char *const[]){"layers.2.gate=false", NULL}, 2);
    const int32_t *ids = token_ids(m, T_LEN, 1);
    tl_expect_error(gf_model_set_override(m, &(gf_override){1, 2, 0}, 1), "layer 1's mixer is attention");
    tl_expect_error(gf_model_set_override(m, &(gf_override){0, 3, 0}, 1), "layer 0's offsets are 1, 2, 4, 8, 12, 16; 3 is");
    tl_expect_error(gf_model_set_override(m, &(gf_override){7, 2, 0}, 1), "this model has layers 0 to 2");
    tl_expect_error(gf_model_set_override(m, &(gf_override){2, 0, GF_GATE_ONE}, 1), "layer 2 has no gate to force");
    tl_expect_error(gf_model_set_override(m, &(gf_override){-1, 5, 0}, 1), "no Grassmann layer lists offset 5 (layers 0, 2)");
    assert_false(gf_model_has_override(m));
    assert_int_equal(gf_model_set_override(m, &(gf_override){0, 1, GF_GATE_ZERO}, 1), 0);
    assert_true(gf_model_has_override(m));
    tl_expect_error(gf_model_forward(m, ids, ids, 1, T_LEN, NULL) || gf_model_backward(m), "evaluation-time overrides");
    assert_null(gf_stream_create(m));
    assert_null(gf_model_inspect(m, ids, T_LEN));
    assert_int_equal(gf_model_set_override(m, NULL, 0), 0);
    double l;
    tl_expect_error(gf_model_score(m, ids, 1, &l, NULL), "1 token; a next-token loss needs 2 or more");
    assert_null(gf_model_inspect(m, token_ids(m, 40, 2), 40)); /* past max_len 32 (the ids are 40: ASan reads them) */
    gf_model_free(m);
    gf_model *t = tl_make_model("transformer-tiny", NULL, 2); /* no Grassmann layer: attention weights alone */
    gf_inspection *x = gf_model_inspect(t, ids, T_LEN);
    assert_non_null(x);
    assert_int_equal(x->layers[0].kind, GF_INSPECT_ATTENTION);
    tl_expect_error(gf_model_set_override(t, &(gf_override){-1, 1, 0}, 1), "this model has no Grassmann layer");
    gf_inspection_free(x);
    gf_model_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_drop_offset_is_the_config_without_it, pool_teardown),
        cmocka_unit_test_teardown(test_forced_gate, pool_teardown),
        cmocka_unit_test_teardown(test_grassmann_probe, pool_teardown),
        cmocka_unit_test_teardown(test_attention_weights, pool_teardown),
        cmocka_unit_test_teardown(test_inspection, pool_teardown),
        cmocka_unit_test_teardown(test_inspection_pair, pool_teardown),
        cmocka_unit_test_teardown(test_errors, pool_teardown),
    };
    const int rc = cmocka_run_group_tests(tests, NULL, NULL);
    pool_release();
    return rc;
}
