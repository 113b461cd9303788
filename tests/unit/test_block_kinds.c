/* Block kinds as an open set (model/block.h): a layer's "block" chooses one by name, and a kind added from one
 * test file (tests/plugins/block_parallel.c: the parallel block, linked into every test program) is reached from a
 * config, declares its own tensors, trains, and streams as its batch forward computes; what
 * gf_block_kind_register refuses, and a name no kind has. Its PyTorch parity: tests/parity/parity.sh. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "model/block.h"
#include "testlib.h"

static bool has_tensor(const gf_model *m, const char *name) {
    for (int i = 0; i < gf_model_num_tensors(m); i++)
        if (!strcmp(gf_model_tensor(m, i)->name, name)) return true;
    return false;
}

/* "block" by --set for every layer, and for one (layers.N.block): the kind's tensors, in its layers only. */
static void test_config_reaches_kind(void **state) {
    (void)state;
    const char *all[] = {"block=parallel", NULL}, *one[] = {"layers.1.block=parallel", NULL};
    gf_model *base = tl_make_model("hybrid-tiny", NULL, 3), *p = tl_make_model("hybrid-tiny", all, 3),
             *o = tl_make_model("hybrid-tiny", one, 3);
    const int64_t d = gf_model_config(base)->d_model, L = gf_model_config(base)->n_layer;
    assert_int_equal(gf_model_num_params(p), gf_model_num_params(base) - L * 2 * d); /* no ln2 */
    assert_int_equal(gf_model_num_params(o), gf_model_num_params(base) - 2 * d);
    assert_int_equal(gf_config_num_params(gf_model_config(p)), gf_model_num_params(p)); /* counted from the kind */
    assert_int_equal(gf_config_num_params(gf_model_config(o)), gf_model_num_params(o));
    assert_true(has_tensor(p, "blocks.0.ln1.weight") && !has_tensor(p, "blocks.0.ln2.weight"));
    assert_true(has_tensor(o, "blocks.0.ln2.weight") && !has_tensor(o, "blocks.1.ln2.weight"));
    char *js = gf_config_to_json(gf_model_config(o), false); /* written only where chosen, read back the same */
    assert_non_null(strstr(js, "\"block\":\"parallel\""));
    assert_null(strstr(strstr(js, "\"block\":\"parallel\"") + 1, "\"block\""));
    gf_config back;
    assert_int_equal(gf_config_from_json(js, "test", &back), 0);
    assert_string_equal(back.layers[1].block, "parallel");
    assert_string_equal(back.layers[0].block, "");
    free(js);
    gf_config c;
    assert_int_equal(gf_config_preset("hybrid-tiny", &c), 0);
    assert_int_not_equal(gf_config_set(&c, "block=nosuch"), 0);
    assert_non_null(strstr(gf_last_error(), "pre, post-gated, post-residual, pre-mix-norm, decoder-pre, decoder-post, decoder-post-gated, parallel"));
    gf_model_free(base);
    gf_model_free(p);
    gf_model_free(o);
}

/* What gf_block_kind_register refuses. */
static void test_register_refusals(void **state) {
    (void)state;
    static const block_tensor none[] = {BLOCK_TENSORS_MIX};
    block_kind k = {"mine", 3, 2, {{BOP_MIX, 0, 0, 1, 0}, {BOP_ADD, 0, 1, 2, 0}}, 1, none};
    block_kind bad = k;
    bad.name = "parallel";
    assert_int_not_equal(gf_block_kind_register(&bad), 0);
    assert_non_null(strstr(gf_last_error(), "exists already"));
    bad = k, bad.name = "My Kind";
    assert_int_not_equal(gf_block_kind_register(&bad), 0);
    bad = k, bad.ops[1].in2 = 7;
    assert_int_not_equal(gf_block_kind_register(&bad), 0);
    assert_non_null(strstr(gf_last_error(), "op 1"));
    bad = k, bad.ops[0] = (block_op){BOP_LN, 0, 0, 1, BLOCK_MAX_LN};
    assert_int_not_equal(gf_block_kind_register(&bad), 0);
    bad = k, bad.ops[1].out = 1;
    assert_int_not_equal(gf_block_kind_register(&bad), 0);
    assert_non_null(strstr(gf_last_error(), "no op writes its output"));
    assert_null(gf_block_kind_find("mine"));
}

/* It trains: 40 steps of plain gradient descent on a repeating sequence bring the loss down by half. */
static void test_parallel_trains(void **state) {
    (void)state;
    const char *sets[] = {"block=parallel", NULL};
    gf_model *m = tl_make_model("hybrid-tiny", sets, 5);
    const int64_t B = 2, T = 16, V = gf_model_config(m)->vocab_size, P = gf_model_num_params(m);
    int32_t x[32], y[32];
    for (int i = 0; i < B * T; i++) x[i] = (int32_t)((i * 7) % 5), y[i] = (int32_t)(((i + 1) * 7) % 5);
    float first = NAN, loss = NAN;
    for (int step = 0; step < 40; step++) {
        gf_model_zero_grad(m);
        assert_int_equal(gf_model_forward(m, x, y, B, T, &loss), 0);
        assert_int_equal(gf_model_backward(m), 0);
        float *p = gf_model_params(m);
        const float *g = gf_model_grads(m);
        for (int64_t i = 0; i < P; i++) p[i] -= 0.5f * g[i];
        if (step == 0) first = loss;
    }
    assert_true(V > 5 && isfinite(loss));
    if (!(loss < 0.5f * first)) fail_msg("loss %.4f -> %.4f: it does not learn", first, loss);
    gf_model_free(m);
}

/* A stream of it computes what its batch forward does (within 1e-5, as for every kind: test_stream.c). */
static void test_parallel_streams(void **state) {
    (void)state;
    const char *sets[] = {"block=parallel", "pos=none", NULL};
    gf_model *m = tl_make_model("hybrid-tiny", sets, 11);
    const int64_t T = 50, V = gf_model_config(m)->vocab_size;
    int32_t tok[50];
    for (int64_t i = 0; i < T; i++) tok[i] = (int32_t)(gf_rand64(5, (uint64_t)i) % (uint64_t)V);
    assert_int_equal(gf_model_forward(m, tok, NULL, 1, T, NULL), 0);
    float *full = fdup(gf_model_logits(m), T * V);
    gf_stream *s = gf_stream_create(m);
    assert_non_null(s);
    double worst = 0.0, scale = 0.0;
    for (int64_t t = 0; t < T; t++) {
        const float *lg = gf_stream_step(s, tok[t]);
        assert_non_null(lg);
        for (int64_t v = 0; v < V; v++)
            worst = fmax(worst, fabs((double)lg[v] - full[t * V + v])), scale = fmax(scale, fabs(full[t * V + v]));
    }
    if (worst > 1e-5 || scale < 0.1) fail_msg("stream vs batch: %.3g (largest |logit| %.3g)", worst, scale);
    gf_stream_free(s);
    gf_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_reaches_kind),
        cmocka_unit_test(test_register_refusals),
        cmocka_unit_test(test_parallel_trains),
        cmocka_unit_test(test_parallel_streams),
    };
    int rc = cmocka_run_group_tests(tests, NULL, pool_teardown);
    pool_release();
    return rc;
}
