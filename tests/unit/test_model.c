/* The whole model: dropout wiring (gradients with dropout on, every block kind), determinism, batch
 * shapes that change between calls, and input errors. End-to-end parity with PyTorch is tests/parity/parity.sh. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "testlib.h"

static void batch(int32_t *in, int32_t *tg, int64_t n, int64_t V, uint64_t seed) {
    for (int64_t i = 0; i < n; i++) {
        in[i] = (int32_t)(gf_rand64(seed, (uint64_t)i) % (uint64_t)V);
        tg[i] = (int32_t)(gf_rand64(seed + 1, (uint64_t)i) % (uint64_t)V);
    }
}

static double loss_at(gf_model *m, const int32_t *in, const int32_t *tg, int64_t B, int64_t T) {
    float l;
    assert_int_equal(gf_model_forward(m, in, tg, B, T, &l), 0);
    return l;
}

/* Parameter i's gradient g[i] against a central finite difference of the loss (float model, so coarse). */
static void fd_param(gf_model *m, const int32_t *in, const int32_t *tg, int64_t B, int64_t T, int64_t i,
                     const char *what, const char *name, int64_t k) {
    float *p = gf_model_params(m);
    float save = p[i], h = 1e-3f;
    p[i] = save + h;
    double lp = loss_at(m, in, tg, B, T);
    p[i] = save - h;
    double lm = loss_at(m, in, tg, B, T);
    p[i] = save;
    double fd = (lp - lm) / (2.0 * h), an = gf_model_grads(m)[i];
    if (!(fabs(fd - an) <= 1e-3 + 2e-2 * fabs(an)))
        fail_msg("%s: %s[%lld]: analytic %.6g vs finite difference %.6g", what, name, (long long)k, an, fd);
}

/* Finite differences (float model, so coarse) on the parameters with the largest gradients, with
 * dropout active: the backward must regenerate exactly the masks the forward used, at every site. */
static void fd_check(const char *preset, const char *const *sets) {
    gf_model *m = tl_make_model(preset, sets, 5);
    gf_model_set_training(m, true, 77, 3);
    const gf_config *c = gf_model_config(m);
    const int64_t B = 2, T = 10;
    int32_t in[20], tg[20];
    batch(in, tg, B * T, c->vocab_size, 8);
    loss_at(m, in, tg, B, T);
    gf_model_zero_grad(m);
    assert_int_equal(gf_model_backward(m), 0);
    char what[128];
    snprintf(what, sizeof what, "%s %s", preset, sets && sets[0] ? sets[0] : "");
    for (int ti = 0; ti < gf_model_num_tensors(m); ti++) {
        const gf_tensor_info *t = gf_model_tensor(m, ti);
        int64_t best = 0;
        for (int64_t k = 1; k < t->numel; k++)
            if (fabsf(t->grad[k]) > fabsf(t->grad[best])) best = k;
        fd_param(m, in, tg, B, T, t->offset + best, what, t->name, best);
    }
    gf_model_free(m);
}

/* pos "none": the same token at an offset gives layer 0 identical reduced vectors, p = 0 for every
 * parameter value. The gradient must be the total derivative (finite differences of the loss move both
 * rows together), not the literal +-(1/eps) Q v pair that cancels only up to float rounding. */
static void test_identical_partner(void **state) {
    (void)state;
    const char *sets[] = {"pos=none", NULL};
    gf_model *m = tl_make_model("grassmann-tiny", sets, 5);
    const int64_t B = 1, T = 12;
    int32_t in[12] = {5, 5, 9, 5, 9, 9, 3, 5, 1, 2, 3, 5}, tg[12];
    for (int i = 0; i < 12; i++) tg[i] = (i * 7 + 3) % 64;
    loss_at(m, in, tg, B, T);
    gf_model_zero_grad(m);
    assert_int_equal(gf_model_backward(m), 0);
    const char *names[] = {"blocks.0.mix.red.weight", "blocks.0.mix.red.bias", "blocks.0.ln1.weight", "tok_emb.weight"};
    for (int ni = 0; ni < 4; ni++) {
        const gf_tensor_info *t = gf_model_find_tensor(m, names[ni]);
        assert_non_null(t);
        for (int pick = 0; pick < 3; pick++) { /* the largest gradient and two fixed entries */
            int64_t k = 0;
            if (pick == 0) {
                for (int64_t q = 1; q < t->numel; q++)
                    if (fabsf(t->grad[q]) > fabsf(t->grad[k])) k = q;
            } else {
                k = (int64_t)(gf_rand64(77, (uint64_t)(ni * 3 + pick)) % (uint64_t)t->numel);
            }
            if (ni == 3) k = 5 * t->shape[1] + k % t->shape[1]; /* token 5's embedding row */
            fd_param(m, in, tg, B, T, t->offset + k, "identical partners (pos none)", names[ni], k);
        }
    }
    gf_model_free(m);
}

static void test_dropout_gradients(void **state) {
    (void)state;
    const char *pre[] = {"dropout=0.3", NULL}, *post[] = {"dropout=0.3", "norm=post", NULL},
               *extra[] = {"dropout=0.3", "norm=post", "extra_proj=true", NULL};
    fd_check("grassmann-tiny", pre);
    fd_check("grassmann-tiny", post);
    fd_check("transformer-tiny", pre);
    fd_check("transformer-tiny", post);
    fd_check("hybrid-tiny", extra);
}

static void test_dropout_determinism(void **state) {
    (void)state;
    const char *sets[] = {"dropout=0.2", NULL};
    gf_model *m = tl_make_model("hybrid-tiny", sets, 1);
    int32_t in[24], tg[24];
    batch(in, tg, 24, 64, 2);
    gf_model_set_training(m, true, 10, 1);
    double a = loss_at(m, in, tg, 2, 12), b = loss_at(m, in, tg, 2, 12);
    assert_true(a == b); /* same seed and step: same masks */
    gf_model_set_training(m, true, 10, 2);
    double c = loss_at(m, in, tg, 2, 12);
    assert_true(c != a); /* next step: new masks */
    gf_model_set_training(m, false, 10, 2);
    double e1 = loss_at(m, in, tg, 2, 12);
    gf_model_free(m);
    const char *nodrop[] = {"dropout=0", NULL};
    gf_model *n = tl_make_model("hybrid-tiny", nodrop, 1);
    double e2 = loss_at(n, in, tg, 2, 12);
    assert_true(e1 == e2); /* evaluation ignores dropout */
    gf_model_free(n);
}

/* Label smoothing is the training loss's alone: in training mode the loss is the smoothed one, larger than
 * the plain loss here (the logits of a fresh model are near uniform but not equal); evaluation scores the
 * plain loss, the bits of the same model without the key. */
static void test_label_smoothing_training_only(void **state) {
    (void)state;
    gf_config a;
    assert_int_equal(gf_config_preset("grassmann-tiny", &a), 0);
    char *j = gf_config_to_json(&a, false);
    assert_null(strstr(j, "label_smoothing")); /* 0: written only when set */
    free(j);
    assert_int_equal(gf_config_set(&a, "label_smoothing=0.25"), 0);
    j = gf_config_to_json(&a, false);
    assert_non_null(strstr(j, "\"label_smoothing\":0.25"));
    gf_config b;
    assert_int_equal(gf_config_from_json(j, "test", &b), 0);
    assert_true(b.label_smoothing == 0.25f);
    free(j);
    tl_expect_error(gf_config_set(&a, "label_smoothing=1"), "label_smoothing");
    const char *sets[] = {"label_smoothing=0.1", NULL}, *plain[] = {"label_smoothing=0", NULL};
    gf_model *m = tl_make_model("grassmann-tiny", sets, 1), *n = tl_make_model("grassmann-tiny", plain, 1);
    int32_t in[24], tg[24];
    batch(in, tg, 24, 64, 2);
    const double eval_s = loss_at(m, in, tg, 2, 12), eval_p = loss_at(n, in, tg, 2, 12);
    assert_true(eval_s == eval_p);
    gf_model_set_training(m, true, 10, 1);
    gf_model_set_training(n, true, 10, 1);
    const double train_s = loss_at(m, in, tg, 2, 12), train_p = loss_at(n, in, tg, 2, 12);
    assert_true(train_p == eval_p); /* no dropout: training mode alone changes nothing */
    assert_true(train_s != train_p);
    gf_model_free(m);
    gf_model_free(n);
    const char *smooth[] = {"label_smoothing=0.2", NULL}; /* the head's backward is the smoothed loss's */
    fd_check("grassmann-tiny", smooth);
}

/* The activation arena is laid out per call: shapes may grow and shrink. */
static void test_changing_shapes(void **state) {
    (void)state;
    gf_model *m = tl_make_model("hybrid-tiny", NULL, 3);
    int32_t in[64], tg[64];
    batch(in, tg, 64, 64, 4);
    double small = loss_at(m, in, tg, 1, 5);
    loss_at(m, in, tg, 2, 32);
    double again = loss_at(m, in, tg, 1, 5);
    assert_true(fabs(small - again) < 1e-6);
    gf_model *fresh = tl_make_model("hybrid-tiny", NULL, 3);
    double ref = loss_at(fresh, in, tg, 1, 5);
    assert_true(fabs(small - ref) < 1e-6);
    gf_model_free(fresh);
    gf_model_free(m);
}

/* Causality of the whole model: changing token t leaves the logits before t unchanged. */
static void test_causal(void **state) {
    (void)state;
    const char *presets[] = {"grassmann-tiny", "transformer-tiny", "hybrid-tiny"};
    for (int k = 0; k < 3; k++) {
        gf_model *m = tl_make_model(presets[k], NULL, 7);
        const int64_t T = 20, V = 64, t0 = 11;
        int32_t in[20], tg[20];
        batch(in, tg, T, V, 9);
        assert_int_equal(gf_model_forward(m, in, NULL, 1, T, NULL), 0);
        float *before = malloc((size_t)(T * V) * sizeof(float));
        memcpy(before, gf_model_logits(m), (size_t)(T * V) * sizeof(float));
        in[t0] = (in[t0] + 1) % (int32_t)V;
        assert_int_equal(gf_model_forward(m, in, NULL, 1, T, NULL), 0);
        const float *after = gf_model_logits(m);
        for (int64_t i = 0; i < t0 * V; i++)
            if (before[i] != after[i]) fail_msg("%s: logit %lld before position %lld changed", presets[k], (long long)i, (long long)t0);
        double moved = 0;
        for (int64_t i = t0 * V; i < T * V; i++) moved += fabs(before[i] - after[i]);
        assert_true(moved > 0);
        free(before);
        gf_model_free(m);
    }
}

static void test_input_errors(void **state) {
    (void)state;
    gf_model *m = tl_make_model("grassmann-tiny", NULL, 1);
    int32_t in[40] = {0}, tg[40] = {0};
    float l;
    in[3] = 64;
    assert_int_not_equal(gf_model_forward(m, in, tg, 1, 8, &l), 0);
    assert_non_null(strstr(gf_last_error(), "token id 64"));
    in[3] = 0;
    tg[5] = -2;
    assert_int_not_equal(gf_model_forward(m, in, tg, 1, 8, &l), 0);
    assert_non_null(strstr(gf_last_error(), "target id -2"));
    tg[5] = 0;
    assert_int_not_equal(gf_model_forward(m, in, tg, 1, 33, &l), 0);
    assert_non_null(strstr(gf_last_error(), "max_len 32"));
    assert_int_not_equal(gf_model_backward(m), 0); /* no successful forward */
    /* every target ignored: the loss is NaN and the gradients stay zero */
    for (int i = 0; i < 8; i++) tg[i] = -1;
    assert_int_equal(gf_model_forward(m, in, tg, 1, 8, &l), 0);
    assert_true(isnan(l));
    gf_model_zero_grad(m);
    assert_int_equal(gf_model_backward(m), 0);
    for (int64_t i = 0; i < gf_model_num_params(m); i++) assert_true(gf_model_grads(m)[i] == 0.0f);
    /* forward without targets, then backward: refused */
    assert_int_equal(gf_model_forward(m, in, NULL, 1, 8, NULL), 0);
    assert_int_not_equal(gf_model_backward(m), 0);
    gf_model_free(m);
}

/* linformer's E and F have max_len columns: a longer batch is refused with the reason, never read past them
 * (the model needs learned positions, which hold every batch to max_len). */
static void test_linformer_length(void **state) {
    (void)state;
    const char *sets[] = {"head.kind=classify", "direction=bidirectional", "mixers=l,g", "k_proj=8", NULL};
    gf_model *m = tl_make_model("grassmann-tiny", sets, 3);
    int32_t in[33] = {0}, tg[1] = {1};
    float l;
    assert_int_equal(gf_model_forward(m, in, tg, 1, 32, &l), 0);
    assert_true(isfinite(l));
    assert_int_not_equal(gf_model_forward(m, in, tg, 1, 33, &l), 0);
    assert_non_null(strstr(gf_last_error(), "sequence length 33 exceeds max_len 32"));
    assert_null(gf_stream_create(m)); /* a classifier: refused before its mixers are asked */
    gf_model_free(m);
}

/* A model that only runs forwards (score, eval, generate) never holds a gradient arena; the first
 * backward, zero_grad or gf_model_grads makes one, zeroed; freezing after that re-lays it out. */
static void test_grads_on_need(void **state) {
    (void)state;
    gf_model *m = tl_make_model("grassmann-tiny", NULL, 1);
    const gf_tensor_info *emb = gf_model_find_tensor(m, "tok_emb.weight");
    int32_t in[8], tg[8];
    batch(in, tg, 8, 64, 5);
    float l;
    assert_int_equal(gf_model_forward(m, in, tg, 1, 8, &l), 0);
    assert_null(emb->grad);
    assert_int_equal(gf_model_backward(m), 0);
    assert_non_null(emb->grad);
    double sum = 0;
    for (int64_t k = 0; k < emb->numel; k++) sum += fabs(emb->grad[k]);
    assert_true(sum > 0);
    assert_true(gf_model_freeze(m, "tok_emb.") == 1);
    assert_null(emb->grad);
    const gf_tensor_info *h = gf_model_find_tensor(m, "ln_f.weight");
    assert_true(h->grad == gf_model_grads(m) + h->grad_offset);
    gf_model_free(m);
    m = tl_make_model("grassmann-tiny", NULL, 1);
    float *g = gf_model_grads(m);
    assert_non_null(g);
    for (int64_t i = 0; i < gf_model_num_trainable(m); i++) assert_true(g[i] == 0.0f);
    gf_model_free(m);
}

/* init_std (issue 55): every tensor initialised N(0, std) drawn with std in place of 0.02, from the same
 * numbers; 0 is 0.02 and stays out of the config's JSON (every older config reads as before) */
static void test_init_std(void **state) {
    (void)state;
    gf_config a, b;
    assert_int_equal(gf_config_preset("hybrid-tiny", &a), 0);
    b = a;
    assert_int_equal(gf_config_set(&b, "init_std=0.05"), 0);
    char *ja = gf_config_to_json(&a, false), *jb = gf_config_to_json(&b, false);
    assert_null(strstr(ja, "init_std"));
    assert_non_null(strstr(jb, "\"init_std\":0.05"));
    free(ja), free(jb);
    tl_expect_error(gf_config_set(&b, "init_std=2"), "init_std");
    gf_model *ma = gf_model_create(&a), *mb = gf_model_create(&b);
    gf_model_init(ma, 9), gf_model_init(mb, 9);
    const gf_tensor_info *ta = gf_model_find_tensor(ma, "blocks.1.mix.qkv.weight"), *tb = gf_model_find_tensor(mb, ta->name);
    const gf_tensor_info *la = gf_model_find_tensor(ma, "blocks.1.ln1.weight"), *lb = gf_model_find_tensor(mb, la->name);
    for (int64_t k = 0; k < ta->numel; k++) {
        const float x = gf_model_params(ma)[ta->offset + k], y = gf_model_params(mb)[tb->offset + k];
        if (fabs(y - 2.5 * x) > 1e-6 * fabs(y)) fail_msg("qkv.weight[%lld]: %g at std 0.05, %g at 0.02", (long long)k, y, x);
    }
    for (int64_t k = 0; k < la->numel; k++) assert_true(gf_model_params(mb)[lb->offset + k] == 1.0f); /* LayerNorms: 1 */
    gf_model_free(ma), gf_model_free(mb);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dropout_gradients), cmocka_unit_test(test_init_std),
        cmocka_unit_test(test_identical_partner), cmocka_unit_test(test_dropout_determinism),
        cmocka_unit_test(test_label_smoothing_training_only),
        cmocka_unit_test(test_changing_shapes), cmocka_unit_test(test_causal), cmocka_unit_test(test_input_errors), cmocka_unit_test(test_linformer_length), cmocka_unit_test(test_grads_on_need),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
