/* Config: presets, parameter counts pinned to the paper's arithmetic, JSON form, --set overrides. */
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "mixers/grassmann.h"
#include "base/number.h"
#include "testlib.h"

/* Layer l's Grassmann settings, its mixer's name, and an integer key of the config (gf_config_get). */
static const gf_grassmann_config *GC(const gf_config *c, int l) {
    return (const gf_grassmann_config *)(const void *)c->layers[l].params.bytes;
}
static bool is(const gf_config *c, int l, const char *mixer) { return !strcmp(c->layers[l].mixer, mixer); }
static int64_t geti(const gf_config *c, const char *key) {
    char *s = gf_config_get(c, key);
    if (!s) fail_msg("gf_config_get(%s): %s", key, gf_last_error());
    int64_t v = atoll(s);
    free(s);
    return v;
}

static gf_config preset(const char *name) {
    gf_config c;
    assert_int_equal(gf_config_preset(name, &c), 0);
    return c;
}

/* grassmann-spec.md section 2.2 with V = 30522 (the acceptance numbers). */
/* The library's version and ABI are the header's (a program compares them to catch a mismatched build). */
/* Floats are written as the shortest decimal that reads back to them, and read back to the same bits. */
static void test_float_text(void **state) {
    (void)state;
    gf_config c, back;
    assert_int_equal(gf_config_preset("grassmann-6L", &c), 0);
    assert_int_equal(gf_config_set(&c, "dropout=0.3"), 0);
    assert_int_equal(gf_config_set(&c, "ln_eps=1e-12"), 0);
    char *j = gf_config_to_json(&c, false);
    if (!strstr(j, "\"dropout\":0.3,") || !strstr(j, "\"ln_eps\":1e-12,") || !strstr(j, "\"plucker_eps\":1e-08"))
        fail_msg("floats not in their shortest form: %s", j);
    assert_int_equal(gf_config_from_json(j, "test", &back), 0);
    assert_memory_equal(&back.dropout, &c.dropout, sizeof c.dropout);
    assert_memory_equal(&back.ln_eps, &c.ln_eps, sizeof c.ln_eps);
    free(j);
    for (int i = 1; i < 2000; i++) { /* every float reads back to itself */
        const float f = (float)i * 0.000731f + 1e-7f * (float)(i % 13);
        char buf[64];
        snprintf(buf, sizeof buf, "%.17g", gf_float_shortest(f));
        assert_true((float)strtod(buf, NULL) == f);
    }
}

static void test_version(void **state) {
    (void)state;
    char v[32];
    snprintf(v, sizeof v, "%d.%d.%d", GF_VERSION_MAJOR, GF_VERSION_MINOR, GF_VERSION_PATCH);
    assert_string_equal(gf_version(), GF_VERSION);
    assert_string_equal(v, GF_VERSION);
    assert_int_equal(gf_abi_version(), GF_ABI_VERSION);
    /* the defaults of the structs a user fills: the recipe's optimizer, generate's sampler */
    gf_train_opts o;
    gf_train_opts_default(&o);
    const gf_adamw_hparams hp = gf_adamw_hparams_default();
    assert_true(hp.lr == o.lr && hp.beta1 == o.beta1 && hp.beta2 == o.beta2 && hp.eps == o.eps && hp.weight_decay == o.wd);
    assert_true(o.lr == 6e-4f && o.min_lr == 6e-5f && hp.weight_decay == 0.01f);
    const gf_sampler_params sp = gf_sampler_params_default();
    assert_true(sp.temperature == 1.0 && sp.top_k == 0 && sp.top_p == 1.0 && sp.seed == 1234);
}

/* gf_config_get reads the head's keys as gf_config_set writes them (head.KEY). */
static void test_get_head_keys(void **state) {
    (void)state;
    gf_config c;
    assert_int_equal(gf_config_preset("grassmann-tiny", &c), 0);
    assert_int_equal(gf_config_set(&c, "task=classify"), 0);
    assert_int_equal(gf_config_set(&c, "head.n_classes=7"), 0);
    assert_int_equal(gf_config_set(&c, "head.pool=first"), 0);
    char *n = gf_config_get(&c, "head.n_classes"), *p = gf_config_get(&c, "head.pool");
    assert_non_null(n);
    assert_non_null(p);
    assert_string_equal(n, "7");
    assert_string_equal(p, "\"first\"");
    free(n);
    free(p);
    assert_null(gf_config_get(&c, "head.nope"));
    assert_non_null(strstr(gf_last_error(), "no config key \"head.nope\""));
}

/* The classify head's pool "pair" (InferSent's features of a sentence pair): refused, naming segments, unless the
 * model has 2 token types; its classifier then reads 4 d features. */
static void test_pool_pair(void **state) {
    (void)state;
    gf_config c;
    assert_int_equal(gf_config_preset("grassmann-tiny", &c), 0);
    assert_int_equal(gf_config_set(&c, "task=classify"), 0);
    assert_int_equal(gf_config_set(&c, "head.n_classes=3"), 0);
    assert_int_equal(gf_config_set(&c, "head.pool=pair"), -1); /* gf_config_set validates what it makes */
    assert_non_null(strstr(gf_last_error(), "head.pool \"pair\""));
    assert_non_null(strstr(gf_last_error(), "needs \"segments\": 2; segments is 0"));
    assert_int_equal(gf_config_set(&c, "segments=2"), 0);
    assert_int_equal(gf_config_set(&c, "head.pool=pair"), 0);
    assert_int_equal(gf_config_validate(&c, "t"), 0);
    assert_int_equal(gf_config_set(&c, "segments=3"), -1);
    assert_non_null(strstr(gf_last_error(), "segments is 3"));
    const int64_t with_pair = gf_config_num_params(&c);
    assert_int_equal(gf_config_set(&c, "head.pool=mean"), 0);
    assert_int_equal(with_pair - gf_config_num_params(&c), 3 * 3 * c.d_model); /* cls_head.weight (3, 4d) */
}

static void test_param_counts(void **state) {
    (void)state;
    struct { const char *preset, *set; int64_t want; } cases[] = {
        {"transformer-6L", NULL, 12585472},  {"grassmann-6L", NULL, 12607168},
        {"grassmann-6L", "extra_proj=true", 13001920}, {"transformer-12L", NULL, 17356800},
        {"grassmann-12L", NULL, 17400192},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gf_config c = preset(cases[i].preset);
        assert_int_equal(gf_config_set(&c, "vocab_size=30522"), 0);
        if (cases[i].set) assert_int_equal(gf_config_set(&c, cases[i].set), 0);
        int64_t n = gf_config_num_params(&c);
        if (n != cases[i].want)
            fail_msg("%s %s: %lld parameters, expected %lld", cases[i].preset, cases[i].set ? cases[i].set : "",
                     (long long)n, (long long)cases[i].want);
        /* the allocated model agrees with the arithmetic */
        gf_model *m = gf_model_create(&c);
        assert_non_null(m);
        assert_int_equal(gf_model_num_params(m), cases[i].want);
        int64_t sum = 0;
        for (int k = 0; k < gf_model_num_tensors(m); k++) sum += gf_model_tensor(m, k)->numel;
        assert_int_equal(sum, cases[i].want);
        gf_model_free(m);
    }
}

static void test_presets_shape(void **state) {
    (void)state;
    gf_config g = preset("grassmann-6L"), t6 = preset("transformer-6L"), g12 = preset("grassmann-12L"),
              t = preset("transformer-12L");
    assert_int_equal(g.d_model, 256);
    assert_int_equal(g.d_ff, 1024);
    assert_int_equal(geti(&t6, "n_head"), 4);
    assert_int_equal(geti(&g, "rank"), 32);
    assert_int_equal(g.max_len, 128);
    assert_int_equal(g.norm, GF_NORM_PRE);
    for (int l = 0; l < 6; l++) {
        assert_int_equal(GC(&g, l)->n_offsets, 6);
        assert_int_equal(GC(&g, l)->offsets[5], 16);
        assert_true(is(&g, l, "grassmann"));
        assert_int_equal(GC(&g, l)->rank, 32);
        assert_true(is(&t6, l, "attention"));
    }
    const int sched[12] = {1, 1, 2, 2, 4, 4, 8, 8, 12, 12, 16, 16};
    assert_int_equal(t.max_len, 256);
    assert_int_equal(g12.max_len, 256);
    for (int l = 0; l < 12; l++) {
        assert_int_equal(GC(&g12, l)->n_offsets, 1);
        assert_int_equal(GC(&g12, l)->offsets[0], sched[l]);
        assert_true(is(&g12, l, "grassmann"));
        assert_true(is(&t, l, "attention"));
    }
    for (const char *const *p = gf_preset_names(); *p; p++) {
        gf_config c = preset(*p);
        assert_int_equal(gf_config_validate(&c, *p), 0);
    }
    gf_config bad;
    assert_int_not_equal(gf_config_preset("grassmann-7L", &bad), 0);
    assert_non_null(strstr(gf_last_error(), "grassmann-6L"));
}

static void test_json_roundtrip(void **state) {
    (void)state;
    for (const char *const *p = gf_preset_names(); *p; p++) {
        gf_config c = preset(*p), d;
        char *j = gf_config_to_json(&c, true);
        assert_int_equal(gf_config_from_json(j, "roundtrip", &d), 0);
        char *k = gf_config_to_json(&d, true);
        assert_string_equal(j, k);
        free(j);
        free(k);
    }
}

static void test_set(void **state) {
    (void)state;
    gf_config c = preset("grassmann-6L");
    assert_int_equal(gf_config_set(&c, "norm=post"), 0);
    assert_int_equal(c.norm, GF_NORM_POST);
    assert_int_equal(gf_config_set(&c, "rank=16"), 0);
    for (int l = 0; l < 6; l++) assert_int_equal(GC(&c, l)->rank, 16);
    assert_int_equal(gf_config_set(&c, "offsets=1,2,4"), 0);
    for (int l = 0; l < 6; l++) {
        assert_int_equal(GC(&c, l)->n_offsets, 3);
        assert_int_equal(GC(&c, l)->offsets[2], 4);
    }
    assert_int_equal(gf_config_set(&c, "offsets=[[1],[2],[3],[4],[5],[6]]"), 0);
    assert_int_equal(GC(&c, 5)->offsets[0], 6);
    assert_int_equal(gf_config_set(&c, "mixers=g,g,A,g,g,g"), 0);
    assert_true(is(&c, 2, "attention"));
    assert_true(is(&c, 3, "grassmann"));
    assert_int_equal(GC(&c, 3)->offsets[0], 4); /* a layer whose mixer stays keeps its settings */
    assert_int_equal(gf_config_set(&c, "plucker_eps=1e-6"), 0);
    for (int l = 0; l < 6; l++)
        if (l != 2) assert_true(GC(&c, l)->plucker_eps > 0.9e-6f && GC(&c, l)->plucker_eps < 1.1e-6f);
    assert_int_equal(gf_config_set(&c, "extra_proj=true"), 0);
    assert_true(GC(&c, 0)->extra_proj);
    assert_int_equal(gf_config_set(&c, "gelu=tanh"), 0);
    assert_int_equal(gf_config_set(&c, "pos=\"sinusoidal\""), 0);
    assert_int_equal(c.pos, GF_POS_SINUSOIDAL);
    /* n_layer with per-layer lists that differ: must say so */
    assert_int_not_equal(gf_config_set(&c, "n_layer=3"), 0);
    assert_non_null(strstr(gf_last_error(), "n_layer is 3"));
    /* uniform lists follow n_layer */
    gf_config u = preset("grassmann-6L");
    assert_int_equal(gf_config_set(&u, "n_layer=9"), 0);
    assert_int_equal(u.n_layer, 9);
    assert_int_equal(GC(&u, 8)->n_offsets, 6);
    assert_true(is(&u, 8, "grassmann"));
    /* errors name the key and keep the config unchanged */
    gf_config before = u;
    const char *bad[] = {"colour=red", "norm=sideways", "rank=1", "offsets=0", "offsets=1,,2", "dropout=1",
                         "d_model=-4", "mixers=g,x", "n_head=3.5", "noequals", "=5", "vocab_size=1e12"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (gf_config_set(&u, bad[i]) == 0) fail_msg("--set %s was accepted", bad[i]);
        assert_true(strlen(gf_last_error()) > 10);
        assert_memory_equal(&u, &before, sizeof u);
    }
}

static void test_json_errors(void **state) {
    (void)state;
    gf_config c;
    struct { const char *json, *msg; } cases[] = {
        {"{", "not valid JSON"},
        {"[1,2]", "must be a JSON object"},
        {"{\"vocab_size\": 10}", "missing key \"d_model\""},
        {"{\"base\": \"grassmann-tiny\", \"colour\": 1}", "unknown key \"colour\""},
        {"{\"base\": \"grassmann-tiny\", \"rank\": \"big\"}", "\"rank\" must be an integer"},
        {"{\"base\": \"grassmann-tiny\", \"d_model\": 1e9}", "\"d_model\" is 1000000000"},
        {"{\"base\": \"grassmann-tiny\", \"offsets\": [[1,-2]]}", "offsets[0][1]"},
        {"{\"base\": \"grassmann-tiny\", \"offsets\": [[1],[2],[3]]}", "\"offsets\" has 3 entries"},
        {"{\"base\": \"grassmann-tiny\", \"offsets\": []}", "non-empty"},
        {"{\"base\": \"grassmann-tiny\", \"mixers\": [\"mamba\"]}", "mixers\"[0]"},
        {"{\"base\": \"grassmann-tiny\", \"dropout\": 1.5}", "dropout"},
        {"{\"base\": \"grassmann-tiny\", \"plucker_eps\": 0}", "plucker_eps"},
        {"{\"base\": \"nope\"}", "unknown model preset"},
        {"{\"base\": \"grassmann-tiny\", \"extra_proj\": 1}", "true or false"},
        /* a key twice: cJSON reads the first, so the file would be read one way silently */
        {"{\"base\": \"grassmann-tiny\", \"d_model\": 32, \"d_model\": 64}", "the key \"d_model\" appears twice"},
        {"{\"base\": \"grassmann-tiny\", \"layers\": [{\"mixer\": \"grassmann\", \"rank\": 4, \"rank\": 8}]}",
         "the key \"layers[0].rank\" appears twice"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (gf_config_from_json(cases[i].json, "test.json", &c) == 0) fail_msg("accepted: %s", cases[i].json);
        if (!strstr(gf_last_error(), cases[i].msg))
            fail_msg("%s: error '%s' does not mention '%s'", cases[i].json, gf_last_error(), cases[i].msg);
        assert_non_null(strstr(gf_last_error(), "test.json"));
    }
    /* base + overrides */
    assert_int_equal(gf_config_from_json("{\"base\": \"grassmann-6L\", \"rank\": 8, \"norm\": \"post\"}", "t", &c), 0);
    assert_int_equal(GC(&c, 0)->rank, 8);
    assert_int_equal(c.norm, GF_NORM_POST);
    assert_int_equal(c.d_model, 256);
}

/* gf_config_diff: the keys two configs differ in, named as --set names them, with both values; every one
 * counted, those that fit shown whole. */
static void test_config_diff(void **state) {
    (void)state;
    gf_config a, b;
    char buf[256];
    assert_int_equal(gf_config_preset("grassmann-tiny", &a), 0);
    b = a;
    assert_int_equal(gf_config_diff(&a, &b, buf, sizeof buf), 0);
    assert_string_equal(buf, "");
    assert_int_equal(gf_config_set(&b, "vocab_size=65"), 0);
    assert_int_equal(gf_config_diff(&a, &b, buf, sizeof buf), 1);
    assert_string_equal(buf, "vocab_size 64 vs 65");
    assert_int_equal(gf_config_set(&b, "layers.1.rank=4"), 0);
    assert_int_equal(gf_config_set(&b, "head.kind=classify"), 0); /* which makes it bidirectional */
    assert_int_equal(gf_config_diff(&a, &b, buf, sizeof buf), 6);
    assert_string_equal(buf, "head.kind \"next_token\" vs \"classify\", head.n_classes (none) vs 2, head.pool (none) vs "
                             "\"mean\", vocab_size 64 vs 65, direction \"causal\" vs \"bidirectional\", layers.1.rank 6 vs 4");
    char small[32];
    assert_int_equal(gf_config_diff(&a, &b, small, sizeof small), 6); /* all counted; what does not fit: ... */
    assert_string_equal(small, "...");
    assert_int_equal(gf_config_diff(&b, &a, buf, 48), 6);
    assert_string_equal(buf, "head.kind \"classify\" vs \"next_token\", ...");
}

/* linformer: bidirectional only (told why), k_proj <= max_len, learned positions; errors name the layer and key */
static void test_linformer_errors(void **state) {
    (void)state;
    gf_config c;
#define CLS "{\"base\": \"grassmann-tiny\", \"head\": {\"kind\": \"classify\"}, \"direction\": \"bidirectional\", "
    struct { const char *json, *msg[2]; } cases[] = {
        {"{\"base\": \"grassmann-tiny\", \"mixers\": [\"grassmann\", \"linformer\"]}",
         {"layer 1: mixer \"linformer\" cannot run causally", "the past would see the future"}},
        {CLS "\"layers\": [{\"mixer\": \"linformer\", \"k_proj\": 33}]}", {"layer 0: linformer's k_proj 33 is above max_len 32", "HINT: --set k_proj=32"}},
        {CLS "\"pos\": \"none\", \"layers\": [{\"mixer\": \"linformer\", \"k_proj\": 8}]}", {"layer 0: mixer \"linformer\" needs pos \"learned\"", "max_len"}},
        {CLS "\"layers\": [{\"mixer\": \"linformer\", \"k_proj\": 0}]}", {"k_proj", "0"}},
        {CLS "\"layers\": [{\"mixer\": \"linformer\", \"n_head\": 5}]}", {"not divisible by n_head 5", "layer 0"}},
    };
#undef CLS
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (gf_config_from_json(cases[i].json, "test.json", &c) == 0) fail_msg("accepted: %s", cases[i].json);
        for (int k = 0; k < 2; k++)
            if (!strstr(gf_last_error(), cases[i].msg[k]))
                fail_msg("%s: error '%s' does not mention '%s'", cases[i].json, gf_last_error(), cases[i].msg[k]);
    }
    /* the largest k_proj fits; E and F are (k_proj, max_len) each */
    gf_config ok;
    assert_int_equal(gf_config_from_json("{\"base\": \"grassmann-tiny\", \"head\": {\"kind\": \"classify\"}, "
                                         "\"direction\": \"bidirectional\", \"layers\": [{\"mixer\": \"linformer\", "
                                         "\"k_proj\": 32}, \"grassmann\"]}", "t", &ok), 0);
    gf_config att = ok;
    assert_int_equal(gf_config_set(&att, "mixers=a,g"), 0);
    assert_int_equal(gf_config_num_params(&ok) - gf_config_num_params(&att), 2 * 32 * 32);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_float_text), cmocka_unit_test(test_version), cmocka_unit_test(test_get_head_keys), cmocka_unit_test(test_pool_pair), cmocka_unit_test(test_param_counts), cmocka_unit_test(test_presets_shape),
        cmocka_unit_test(test_json_roundtrip), cmocka_unit_test(test_set), cmocka_unit_test(test_json_errors), cmocka_unit_test(test_config_diff), cmocka_unit_test(test_linformer_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
