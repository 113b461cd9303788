/* Tasks beyond language modelling: padding masks (padded positions change nothing that is not padding),
 * bidirectional stacks, the classification head trained on a task that needs mixing, vector inputs,
 * frozen tensors. (PyTorch parity of the same models: tests/parity/parity.sh, the bidir_* and *_padded cases.) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compute/blas.h"
#include "base/rng.h"
#include "testlib.h"

static gf_model *model(const char *json, uint64_t seed) {
    gf_config c;
    if (gf_config_from_json(json, "test", &c)) fail_msg("config: %s", gf_last_error());
    gf_model *m = gf_model_create(&c);
    if (!m) fail_msg("create: %s", gf_last_error());
    gf_model_init(m, seed);
    /* perturb every tensor so that biases and norms matter too */
    for (int i = 0; i < gf_model_num_tensors(m); i++) {
        const gf_tensor_info *t = gf_model_tensor(m, i);
        for (int64_t k = 0; k < t->numel; k++) t->data[k] += 0.05f * gf_normal(gf_key(seed, (uint64_t)i), (uint64_t)k);
    }
    return m;
}

#define CLS_G "{\"format\": 2, \"task\": \"classify\", \"head\": {\"n_classes\": 3}, \"vocab_size\": 20, " \
              "\"d_model\": 16, \"n_layer\": 2, \"d_ff\": 32, \"max_len\": 16, " \
              "\"layers\": [{\"mixer\": \"grassmann\", \"rank\": 4, \"offsets\": [1, 2, 5]}]}"
#define CLS_A "{\"format\": 2, \"task\": \"classify\", \"head\": {\"n_classes\": 3, \"pool\": \"first\"}, " \
              "\"vocab_size\": 20, \"d_model\": 16, \"n_layer\": 2, \"d_ff\": 32, \"max_len\": 16, \"norm\": \"post\", " \
              "\"layers\": [{\"mixer\": \"attention\", \"n_head\": 2}]}"
#define LM_H "{\"format\": 2, \"vocab_size\": 20, \"d_model\": 16, \"n_layer\": 2, \"d_ff\": 32, \"max_len\": 16, " \
             "\"layers\": [{\"mixer\": \"grassmann\", \"rank\": 4}, {\"mixer\": \"attention\", \"n_head\": 2}]}"

enum { B = 3, T = 12 };
static const int LEN[B] = {12, 7, 3};

/* A padded batch: row b has LEN[b] real tokens; the padding holds ids drawn with `junk`. */
static void padded_batch(int32_t *ids, int32_t *tg, uint8_t *mask, bool lm, uint64_t junk) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const bool real = t < LEN[b];
            const int i = b * T + t;
            ids[i] = (int32_t)(gf_rand64(real ? 1 : junk, (uint64_t)i) % 20);
            mask[i] = real;
            if (lm) tg[i] = real ? (int32_t)(gf_rand64(2, (uint64_t)i) % 20) : -1;
        }
    for (int b = 0; !lm && b < B; b++) tg[b] = b % 3;
}

/* Outputs at real positions (lm) or all outputs (classify), and every gradient, for one padding. */
static float *run_padded(gf_model *m, bool lm, uint64_t junk, int64_t *n_out) {
    int32_t ids[B * T], tg[B * T];
    uint8_t mask[B * T];
    padded_batch(ids, tg, mask, lm, junk);
    gf_batch b = {.B = B, .T = T, .ids = ids, .targets = tg, .mask = mask};
    float loss;
    if (gf_model_forward_batch(m, &b, &loss)) fail_msg("forward: %s", gf_last_error());
    const int64_t V = gf_model_config(m)->vocab_size, np = gf_model_num_params(m);
    const int64_t no = lm ? B * T * V : B * 3;
    float *got = falloc(no + np + 1);
    memcpy(got, gf_model_logits(m), (size_t)no * sizeof(float));
    for (int64_t i = 0; lm && i < B * T; i++)
        if (!mask[i]) memset(got + i * V, 0, (size_t)V * sizeof(float)); /* padded outputs are unspecified */
    got[no] = loss;
    gf_model_zero_grad(m);
    gf_model_backward(m);
    memcpy(got + no + 1, gf_model_grads(m), (size_t)np * sizeof(float));
    *n_out = no + np + 1;
    return got;
}

static void check_padding_inert(const char *json, bool lm) {
    gf_model *m = model(json, 4);
    int64_t n1, n2;
    float *a = run_padded(m, lm, 77, &n1), *c = run_padded(m, lm, 99, &n2);
    assert_int_equal(n1, n2);
    for (int64_t i = 0; i < n1; i++)
        if (memcmp(&a[i], &c[i], sizeof(float)))
            fail_msg("%s: value %lld (outputs, loss, then gradients) changed with what the padding holds: %.9g vs %.9g",
                     json, (long long)i, (double)a[i], (double)c[i]);
    gf_model_free(m);
}

static void test_padding_changes_nothing(void **state) {
    (void)state;
    check_padding_inert(CLS_G, false);
    check_padding_inert(CLS_A, false);
    check_padding_inert(LM_H, true);
}

/* A padded row gives what the same row gives alone, without padding. */
static void test_padded_equals_alone(void **state) {
    (void)state;
    const char *cfgs[] = {CLS_G, CLS_A};
    for (int k = 0; k < 2; k++) {
        gf_model *m = model(cfgs[k], 5);
        int32_t ids[B * T], tg[B * T];
        uint8_t mask[B * T];
        padded_batch(ids, tg, mask, false, 3);
        gf_batch b = {.B = B, .T = T, .ids = ids, .mask = mask};
        if (gf_model_forward_batch(m, &b, NULL)) fail_msg("forward: %s", gf_last_error());
        float all[B * 3];
        memcpy(all, gf_model_logits(m), sizeof all);
        for (int r = 0; r < B; r++) {
            gf_batch one = {.B = 1, .T = LEN[r], .ids = ids + r * T};
            if (gf_model_forward_batch(m, &one, NULL)) fail_msg("forward: %s", gf_last_error());
            for (int j = 0; j < 3; j++)
                if (!(fabsf(gf_model_logits(m)[j] - all[r * 3 + j]) <= 1e-5f))
                    fail_msg("%s: row %d alone gives logit %d = %.7g, padded %.7g", cfgs[k], r, j,
                             (double)gf_model_logits(m)[j], (double)all[r * 3 + j]);
        }
        gf_model_free(m);
    }
}

/* Label 1 if the ordered bigram (3, 7) occurs, else 0: mean pooling of unmixed embeddings cannot tell
 * "3 then 7" from "7 then 3", so the bidirectional mixing must carry the order. */
static void bigram_batch(int32_t *ids, int32_t *tg, uint8_t *mask, int n, uint64_t seed) {
    for (int b = 0; b < n; b++) {
        const int len = 6 + (int)(gf_rand64(seed, 1000 + (uint64_t)b) % 7);
        const int kind = (int)(gf_rand64(seed, 2000 + (uint64_t)b) % 2);
        const int at = (int)(gf_rand64(seed, 3000 + (uint64_t)b) % (uint64_t)(len - 1));
        for (int t = 0; t < T; t++) {
            ids[b * T + t] = 10 + (int32_t)(gf_rand64(seed, (uint64_t)(b * T + t)) % 10); /* no 3 or 7 */
            mask[b * T + t] = t < len;
        }
        ids[b * T + at] = kind ? 3 : 7; /* 3 then 7 (label 1), or 7 then 3 (label 0) */
        ids[b * T + at + 1] = kind ? 7 : 3;
        tg[b] = kind;
    }
}

static void test_classifier_learns(void **state) {
    (void)state;
    gf_model *m = model(CLS_G, 6);
    enum { N = 32 };
    int32_t ids[N * T], tg[N];
    uint8_t mask[N * T];
    gf_adamw *opt = gf_adamw_create(m, (gf_adamw_hparams){.lr = 3e-3f, .beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f});
    for (int s = 0; s < 250; s++) {
        bigram_batch(ids, tg, mask, N, 100 + (uint64_t)s);
        gf_batch b = {.B = N, .T = T, .ids = ids, .targets = tg, .mask = mask};
        float loss;
        gf_model_set_training(m, true, 1, (uint64_t)s);
        if (gf_model_forward_batch(m, &b, &loss)) fail_msg("forward: %s", gf_last_error());
        gf_model_zero_grad(m);
        gf_model_backward(m);
        gf_adamw_step(opt, m, 3e-3f);
    }
    gf_model_set_training(m, false, 0, 0);
    int correct = 0;
    for (int k = 0; k < 4; k++) { /* held-out batches */
        bigram_batch(ids, tg, mask, N, 9000 + (uint64_t)k);
        gf_batch b = {.B = N, .T = T, .ids = ids, .targets = tg, .mask = mask};
        gf_model_forward_batch(m, &b, NULL);
        correct += (int)gf_model_correct(m);
    }
    printf("  held-out accuracy on the ordered bigram task: %d / %d\n", correct, 4 * N);
    if (correct < (int)(0.9 * 4 * N)) fail_msg("accuracy %d / %d after 250 steps", correct, 4 * N);
    gf_adamw_free(opt);
    gf_model_free(m);
}

static void test_errors(void **state) {
    (void)state;
    gf_config c;
    const char *bad[][2] = {
        {"{\"base\": \"grassmann-tiny\", \"direction\": \"bidirectional\"}", "needs a causal model"},
        {"{\"base\": \"grassmann-tiny\", \"task\": \"translate\"}", "\"task\" must be one of"},
        {"{\"base\": \"grassmann-tiny\", \"task\": \"classify\", \"head\": {\"n_classes\": 1}}", "head.n_classes"},
        {"{\"base\": \"grassmann-tiny\", \"task\": \"classify\", \"head\": {\"classes\": 3}}", "no key \"classes\""},
        {"{\"base\": \"grassmann-tiny\", \"input\": \"vectors\"}", "d_input"},
        {"{\"base\": \"grassmann-tiny\", \"input\": \"vectors\", \"d_input\": 4}", "task lm predicts tokens"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (!gf_config_from_json(bad[i][0], "t", &c)) fail_msg("accepted: %s", bad[i][0]);
        if (!strstr(gf_last_error(), bad[i][1])) fail_msg("%s: '%s' lacks '%s'", bad[i][0], gf_last_error(), bad[i][1]);
    }
    gf_model *m = model(CLS_G, 1);
    int32_t ids[B * T], tg[B * T];
    uint8_t mask[B * T];
    padded_batch(ids, tg, mask, false, 3);
    mask[4] = 2;
    gf_batch b = {.B = B, .T = T, .ids = ids, .targets = tg, .mask = mask};
    assert_int_not_equal(gf_model_forward_batch(m, &b, NULL), 0);
    assert_non_null(strstr(gf_last_error(), "mask value 2"));
    mask[4] = 1;
    tg[1] = 3; /* n_classes 3 */
    assert_int_not_equal(gf_model_forward_batch(m, &b, NULL), 0);
    assert_non_null(strstr(gf_last_error(), "target id 3"));
    assert_null(gf_stream_create(m)); /* a bidirectional classifier: cannot stream */
    assert_non_null(strstr(gf_last_error(), "task lm"));
    gf_model_free(m);
}

/* Vector inputs: a classifier over float vectors learns which of two directions they point in. */
static void test_vector_inputs(void **state) {
    (void)state;
    gf_model *m = model("{\"format\": 2, \"task\": \"classify\", \"input\": \"vectors\", \"d_input\": 6, \"d_model\": 16, "
                        "\"n_layer\": 1, \"d_ff\": 32, \"pos\": \"none\", \"layers\": [{\"mixer\": \"grassmann\", \"rank\": 4}]}", 8);
    assert_non_null(gf_model_find_tensor(m, "in_proj.weight"));
    assert_null(gf_model_find_tensor(m, "tok_emb.weight"));
    enum { N = 16, L = 5 };
    float x[N * L * 6];
    int32_t tg[N];
    gf_adamw *opt = gf_adamw_create(m, (gf_adamw_hparams){.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f});
    float loss = NAN;
    for (int s = 0; s < 60; s++) {
        for (int b = 0; b < N; b++) {
            tg[b] = (int32_t)(gf_rand64(s, (uint64_t)b) % 2);
            for (int k = 0; k < L * 6; k++) x[b * L * 6 + k] = 0.3f * gf_normal(s + 50, (uint64_t)(b * 64 + k)) + (k % 6 == tg[b] ? 1.0f : 0.0f);
        }
        gf_batch bt = {.B = N, .T = L, .vectors = x, .targets = tg};
        if (gf_model_forward_batch(m, &bt, &loss)) fail_msg("forward: %s", gf_last_error());
        gf_model_zero_grad(m);
        gf_model_backward(m);
        gf_adamw_step(opt, m, 1e-2f);
    }
    if (!(loss < 0.2f)) fail_msg("vector classifier: loss %.3f after 60 steps", (double)loss);
    gf_batch no_vec = {.B = 1, .T = 2, .ids = tg};
    assert_int_not_equal(gf_model_forward_batch(m, &no_vec, NULL), 0);
    assert_non_null(strstr(gf_last_error(), "input vectors"));
    gf_adamw_free(opt);
    gf_model_free(m);
}

/* gf_model_hidden: the last stack's output before ln_f; ln_f of it, pooled over the real positions and put
 * through cls_head, gives the logits of the forward (so it is the hidden state the head reads). */
static void test_hidden(void **state) {
    (void)state;
    gf_model *m = model(CLS_G, 4);
    int64_t hb, ht, w;
    assert_null(gf_model_hidden(m, &hb, &ht, &w));
    int32_t ids[B * T], tg[B * T];
    uint8_t mask[B * T];
    padded_batch(ids, tg, mask, false, 1);
    gf_batch b = {.B = B, .T = T, .ids = ids, .mask = mask};
    assert_int_equal(gf_model_forward_batch(m, &b, NULL), 0);
    const float *h = gf_model_hidden(m, &hb, &ht, &w);
    assert_non_null(h);
    assert_true(hb == B && ht == T && w == gf_model_config(m)->d_model);
    const float *lw = gf_model_find_tensor(m, "ln_f.weight")->data, *lb = gf_model_find_tensor(m, "ln_f.bias")->data;
    const float *cw = gf_model_find_tensor(m, "cls_head.weight")->data, *cb = gf_model_find_tensor(m, "cls_head.bias")->data;
    for (int64_t r = 0; r < B; r++) {
        double pooled[64] = {0}, cnt = 0;
        for (int64_t t = 0; t < T; t++) {
            if (!mask[r * T + t]) continue;
            const float *x = h + (r * T + t) * w;
            double mu = 0, var = 0;
            for (int64_t k = 0; k < w; k++) mu += x[k] / (double)w;
            for (int64_t k = 0; k < w; k++) var += (x[k] - mu) * (x[k] - mu) / (double)w;
            for (int64_t k = 0; k < w; k++) pooled[k] += (x[k] - mu) / sqrt(var + 1e-5) * lw[k] + lb[k];
            cnt++;
        }
        for (int64_t c = 0; c < 3; c++) {
            double logit = cb[c];
            for (int64_t k = 0; k < w; k++) logit += cw[c * w + k] * pooled[k] / cnt;
            if (!(fabs(logit - gf_model_logits(m)[r * 3 + c]) <= 1e-4))
                fail_msg("row %lld class %lld: logit %.6g from the hidden states, %.6g from the forward", (long long)r,
                         (long long)c, logit, (double)gf_model_logits(m)[r * 3 + c]);
        }
    }
    gf_model_free(m);
}

/* Frozen tensors: no gradient, no optimizer state, unchanged by AdamW; the head's gradient is the same as
 * without freezing, and the backward does not run through frozen layers. */
static void test_freeze(void **state) {
    (void)state;
    gf_model *m = model(CLS_G, 9), *ref = model(CLS_G, 9);
    const int64_t all = gf_model_num_trainable(m);
    assert_int_equal(all, gf_model_num_params(m));
    assert_true(gf_model_freeze(m, "tok_emb.") == 1);
    assert_true(gf_model_freeze(m, "pos_emb.") == 1);
    assert_true(gf_model_freeze(m, "blocks.") > 10);
    assert_true(gf_model_freeze(m, "blocks.") == 0);
    const gf_tensor_info *w = gf_model_find_tensor(m, "blocks.0.mix.red.weight"), *h = gf_model_find_tensor(m, "cls_head.weight");
    assert_false(w->trainable);
    assert_null(w->grad);
    assert_non_null(gf_model_grads(m)); /* the arena comes on first need (test_model.c test_grads_on_need) */
    assert_null(w->grad);
    assert_true(h->trainable && h->grad);
    const int64_t n_head = gf_model_find_tensor(m, "cls_head.weight")->numel + 3 + 2 * 16; /* + bias, ln_f */
    assert_int_equal(gf_model_num_trainable(m), n_head);
    int32_t ids[B * T], tg[B * T];
    uint8_t mask[B * T];
    padded_batch(ids, tg, mask, false, 3);
    gf_batch b = {.B = B, .T = T, .ids = ids, .targets = tg, .mask = mask};
    float l1, l2;
    gf_model_forward_batch(m, &b, &l1);
    gf_model_forward_batch(ref, &b, &l2);
    assert_memory_equal(&l1, &l2, sizeof l1);
    gf_model_zero_grad(m);
    gf_model_backward(m);
    gf_model_zero_grad(ref);
    gf_model_backward(ref);
    assert_memory_equal(h->grad, gf_model_find_tensor(ref, "cls_head.weight")->grad, (size_t)h->numel * sizeof(float));
    float before = w->data[3];
    gf_adamw *opt = gf_adamw_create(m, (gf_adamw_hparams){.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f});
    assert_int_equal(gf_adamw_step(opt, m, 1e-2f), 0);
    assert_true(w->data[3] == before);
    assert_true(h->data[0] != gf_model_find_tensor(ref, "cls_head.weight")->data[0]);
    /* a tensor frozen after the optimizer was made: its moments no longer fit; an error, nothing changed */
    const float h0 = h->data[0];
    assert_true(gf_model_freeze(m, "cls_head.bias") == 1);
    assert_int_equal(gf_adamw_step(opt, m, 1e-2f), -1);
    assert_non_null(strstr(gf_last_error(), "the optimizer holds moments for"));
    assert_true(h->data[0] == h0 && gf_adamw_steps_taken(opt) == 1);
    gf_adamw_free(opt);
    gf_model_free(m);
    gf_model_free(ref);
}

/* Frozen layers below every trainable tensor run without dropout, as in evaluation: a frozen backbone is a
 * fixed feature extractor. With the blocks trainable, the same training-mode forward differs. */
static void test_frozen_no_dropout(void **state) {
    (void)state;
    const char *json = "{\"format\": 2, \"task\": \"classify\", \"head\": {\"n_classes\": 3}, \"vocab_size\": 20, "
                       "\"d_model\": 16, \"n_layer\": 2, \"d_ff\": 32, \"max_len\": 16, \"dropout\": 0.5, "
                       "\"layers\": [{\"mixer\": \"attention\", \"n_head\": 2}]}";
    int32_t ids[B * T], tg[B * T];
    uint8_t mask[B * T];
    padded_batch(ids, tg, mask, false, 3);
    gf_batch b = {.B = B, .T = T, .ids = ids, .targets = tg, .mask = mask};
    float loss[2][2]; /* [frozen][training] */
    for (int frozen = 0; frozen < 2; frozen++) {
        gf_model *m = model(json, 4);
        if (frozen) {
            assert_true(gf_model_freeze(m, "tok_emb.") == 1 && gf_model_freeze(m, "pos_emb.") == 1);
            assert_true(gf_model_freeze(m, "blocks.") > 10);
        }
        for (int training = 0; training < 2; training++) {
            gf_model_set_training(m, training, 77, 5);
            assert_int_equal(gf_model_forward_batch(m, &b, &loss[frozen][training]), 0);
        }
        gf_model_free(m);
    }
    assert_true(loss[0][0] == loss[1][0]);
    assert_true(loss[0][1] != loss[0][0]);     /* trainable blocks: dropout */
    assert_memory_equal(&loss[1][1], &loss[1][0], sizeof(float)); /* frozen: none */
}

/* A frozen layer above a trainable one: the backward runs through it (the gradient arena has no room for
 * its tensors) and the trainable layer below gets the same gradient as without freezing. */
static void test_partial_freeze(void **state) {
    (void)state;
    gf_model *m = model(LM_H, 3), *ref = model(LM_H, 3);
    assert_true(gf_model_freeze(m, "blocks.1.") > 5);
    assert_true(gf_model_freeze(m, "ln_f.") == 2);
    int32_t ids[B * T], tg[B * T];
    uint8_t mask[B * T];
    padded_batch(ids, tg, mask, true, 3);
    gf_batch b = {.B = B, .T = T, .ids = ids, .targets = tg, .mask = mask};
    gf_model *both[2] = {m, ref};
    for (int k = 0; k < 2; k++) {
        if (gf_model_forward_batch(both[k], &b, NULL)) fail_msg("forward: %s", gf_last_error());
        gf_model_zero_grad(both[k]);
        gf_model_backward(both[k]);
    }
    const char *names[] = {"blocks.0.mix.gate.weight", "blocks.0.ffn.fc1.weight", "tok_emb.weight"};
    for (int i = 0; i < 3; i++) {
        const gf_tensor_info *a = gf_model_find_tensor(m, names[i]), *r = gf_model_find_tensor(ref, names[i]);
        assert_memory_equal(a->grad, r->grad, (size_t)a->numel * sizeof(float));
    }
    assert_null(gf_model_find_tensor(m, "blocks.1.mix.qkv.weight")->grad);
    gf_model_free(m);
    gf_model_free(ref);
}

/* Targets at padded positions are never scored; pool "first" takes the first real position, "last" the last. */
static void test_padding_rules(void **state) {
    (void)state;
    gf_model *m = model(LM_H, 2);
    int32_t ids[B * T], tg[B * T];
    uint8_t mask[B * T];
    padded_batch(ids, tg, mask, true, 3);
    gf_batch b = {.B = B, .T = T, .ids = ids, .targets = tg, .mask = mask};
    float l1, l2;
    gf_model_forward_batch(m, &b, &l1);
    for (int i = 0; i < B * T; i++)
        if (!mask[i]) tg[i] = 5;
    gf_model_forward_batch(m, &b, &l2);
    assert_memory_equal(&l1, &l2, sizeof l1);
    gf_model_free(m);
    m = model("{\"format\": 2, \"task\": \"classify\", \"head\": {\"n_classes\": 3, \"pool\": \"first\"}, "
              "\"vocab_size\": 20, \"d_model\": 16, \"n_layer\": 2, \"d_ff\": 32, \"pos\": \"none\", \"norm\": "
              "\"post\", \"layers\": [{\"mixer\": \"attention\", \"n_head\": 2}]}", 2); /* pool first, no positions */
    int32_t row[4] = {0, 0, 7, 9}, alone[2] = {7, 9};
    uint8_t left[4] = {0, 0, 1, 1};
    gf_batch lb = {.B = 1, .T = 4, .ids = row, .mask = left}, ab = {.B = 1, .T = 2, .ids = alone};
    float lo[3], ao[3];
    gf_model_forward_batch(m, &lb, NULL);
    memcpy(lo, gf_model_logits(m), sizeof lo);
    gf_model_forward_batch(m, &ab, NULL);
    memcpy(ao, gf_model_logits(m), sizeof ao);
    for (int j = 0; j < 3; j++)
        if (!(fabsf(lo[j] - ao[j]) <= 1e-5f)) fail_msg("left-padded row: logit %d %.7g, alone %.7g", j, (double)lo[j], (double)ao[j]);
    gf_model_free(m);
    /* pool last: a right-padded row gives what the row alone gives, and its last real position decides */
    m = model("{\"format\": 2, \"task\": \"classify\", \"head\": {\"n_classes\": 3, \"pool\": \"last\"}, "
              "\"vocab_size\": 20, \"d_model\": 16, \"n_layer\": 1, \"d_ff\": 32, \"pos\": \"none\", \"layers\": "
              "[{\"mixer\": \"attention\", \"n_head\": 2}]}", 2);
    int32_t rrow[4] = {7, 9, 3, 3}, perms[9] = {7, 9, 5, 9, 7, 5, 7, 5, 9};
    uint8_t right[4] = {1, 1, 0, 0};
    gf_batch rb = {.B = 1, .T = 4, .ids = rrow, .mask = right}, pb = {.B = 3, .T = 3, .ids = perms};
    gf_model_forward_batch(m, &rb, NULL);
    memcpy(lo, gf_model_logits(m), sizeof lo);
    gf_model_forward_batch(m, &ab, NULL);
    memcpy(ao, gf_model_logits(m), sizeof ao);
    for (int j = 0; j < 3; j++)
        if (!(fabsf(lo[j] - ao[j]) <= 1e-5f)) fail_msg("right-padded row: logit %d %.7g, alone %.7g", j, (double)lo[j], (double)ao[j]);
    /* without positions attention sees a set: rows 0 and 1 end in the same token (pool first would differ),
     * row 2 does not (a mean would not tell) */
    gf_model_forward_batch(m, &pb, NULL);
    const float *pl = gf_model_logits(m);
    bool differs = false;
    for (int j = 0; j < 3; j++) {
        if (!(fabsf(pl[j] - pl[3 + j]) <= 1e-5f)) fail_msg("same last token: logit %d %.7g against %.7g", j, (double)pl[j], (double)pl[3 + j]);
        differs |= fabsf(pl[j] - pl[6 + j]) > 1e-4f;
    }
    assert_true(differs);
    /* outputs that are not next-token logits cannot stream */
    gf_model *causal = model("{\"format\": 2, \"task\": \"classify\", \"direction\": \"causal\", \"vocab_size\": 20, "
                             "\"d_model\": 16, \"n_layer\": 1, \"d_ff\": 32, \"max_len\": 8, \"layers\": [\"attention\"]}", 1);
    assert_null(gf_stream_create(causal));
    assert_non_null(strstr(gf_last_error(), "task lm"));
    assert_false(gf_model_predicts_next_token(causal));
    gf_model_free(causal);
    gf_model_free(m);
}

/* --set reaches every part: one layer's list key, a layer's mixer, the task (and its direction), the head. */
static void test_set_paths(void **state) {
    (void)state;
    gf_config c;
    assert_int_equal(gf_config_preset("hybrid-tiny", &c), 0);
    assert_int_equal(gf_config_set(&c, "layers.0.offsets=1,2"), 0);
    char *v = gf_config_get(&c, "layers.0.offsets");
    assert_string_equal(v, "[1,2]");
    free(v);
    assert_int_equal(gf_config_set(&c, "layers.2.offsets=3"), 0);
    assert_int_equal(gf_config_set(&c, "layers.1.mixer=g"), 0);
    v = gf_config_get(&c, "layers.1.rank");
    assert_string_equal(v, "32"); /* a new mixer takes its defaults */
    free(v);
    assert_int_equal(gf_config_set(&c, "task=classify"), 0);
    assert_int_equal(c.direction, GF_BIDIRECTIONAL);
    assert_int_equal(gf_config_set(&c, "head.n_classes=5"), 0);
    v = gf_config_get(&c, "head");
    assert_string_equal(v, "{\"kind\":\"classify\",\"n_classes\":5,\"pool\":\"mean\"}");
    free(v);
    assert_int_not_equal(gf_config_set(&c, "head.classes=5"), 0);
    /* a file with format-2 keys but no "format" is format 2; a key both at the top and in a layer is refused */
    assert_int_equal(gf_config_from_json("{\"vocab_size\": 10, \"d_model\": 8, \"n_layer\": 1, \"d_ff\": 16, "
                                         "\"max_len\": 8, \"layers\": [{\"mixer\": \"grassmann\", \"rank\": 4}]}", "t", &c), 0);
    assert_int_not_equal(gf_config_from_json("{\"format\": 2, \"vocab_size\": 10, \"d_model\": 8, \"n_layer\": 1, "
                                             "\"d_ff\": 16, \"max_len\": 8, \"rank\": 3, \"layers\": [{\"mixer\": "
                                             "\"grassmann\", \"rank\": 4}]}", "t", &c), 0);
    assert_non_null(strstr(gf_last_error(), "both at the top level and in \"layers\"[0]"));
}

#define STACKS_CLS STACKS_CLS_AS("head")
#define STACKS_CLS_AS(NAME) "{\"format\": 2, \"task\": \"classify\", \"head\": {\"n_classes\": 3}, \"vocab_size\": 20, " \
    "\"d_model\": 24, \"n_layer\": 2, \"d_ff\": 48, \"max_len\": 16, \"norm\": \"post\", \"layers\": [{\"mixer\": " \
    "\"grassmann\", \"rank\": 5}], \"stacks\": [{\"name\": \"" NAME "\", \"d_model\": 16, \"d_ff\": 32, \"n_layer\": 2, " \
    "\"layers\": [{\"mixer\": \"attention\", \"n_head\": 2}, {\"mixer\": \"grassmann\", \"rank\": 4}]}]}"

/* Two stacks of different widths: tensor names, a frozen backbone under a trained head stack (the same
 * head gradients, no backward below it), streaming a two-stack LM, config errors. */
static void test_stacks(void **state) {
    (void)state;
    gf_model *m = model(STACKS_CLS, 4), *ref = model(STACKS_CLS, 4);
    assert_non_null(gf_model_find_tensor(m, "head.in_proj.weight"));
    assert_int_equal(gf_model_find_tensor(m, "head.blocks.1.mix.red.weight")->shape[1], 16);
    assert_int_equal(gf_model_num_params(m), gf_config_num_params(gf_model_config(m)));
    /* the backbone frozen by structure: the input and the first stack, nothing of the head stack */
    assert_int_equal(gf_model_freeze_stack(m, 2), -1);
    assert_non_null(strstr(gf_last_error(), "stack 2 does not exist; this model has stacks 0 to 1"));
    assert_true(gf_model_freeze_stack(m, 0) > 0);
    assert_int_equal(gf_model_freeze_stack(m, 0), 0); /* frozen already */
    for (int i = 0; i < gf_model_num_tensors(m); i++) {
        const gf_tensor_info *t = gf_model_tensor(m, i);
        const bool backbone = !strncmp(t->name, "tok_emb.", 8) || !strncmp(t->name, "pos_emb.", 8) ||
                              !strncmp(t->name, "blocks.", 7);
        if (t->trainable == backbone) fail_msg("%s: trainable %d after freezing stack 0", t->name, t->trainable);
    }
    assert_true(gf_model_first_stack_fixed(m));
    int32_t ids[B * T], tg[B * T];
    uint8_t mask[B * T];
    padded_batch(ids, tg, mask, false, 3);
    gf_batch b = {.B = B, .T = T, .ids = ids, .targets = tg, .mask = mask};
    gf_model *both[2] = {m, ref};
    uint64_t flops[2];
    for (int k = 0; k < 2; k++) {
        if (gf_model_forward_batch(both[k], &b, NULL)) fail_msg("forward: %s", gf_last_error());
        gf_model_zero_grad(both[k]);
        gf_blas_flops_reset();
        gf_model_backward(both[k]);
        flops[k] = gf_blas_flops();
    }
    /* the frozen backbone's backward is not run: far fewer matmul FLOPs (a quarter is the head stack's share) */
    if (!(flops[0] * 2 < flops[1])) fail_msg("backward FLOPs frozen %llu vs all trained %llu", (unsigned long long)flops[0],
                                         (unsigned long long)flops[1]);
    const char *names[] = {"head.in_proj.weight", "head.in_proj.bias", "head.blocks.0.mix.qkv.weight", "cls_head.weight"};
    for (int i = 0; i < 4; i++) {
        const gf_tensor_info *a = gf_model_find_tensor(m, names[i]), *r = gf_model_find_tensor(ref, names[i]);
        assert_memory_equal(a->grad, r->grad, (size_t)a->numel * sizeof(float));
    }
    gf_model_free(m);
    gf_model_free(ref);
    /* a two-stack causal LM streams: every position's logits equal the batch forward's */
    m = model("{\"format\": 2, \"vocab_size\": 20, \"d_model\": 16, \"n_layer\": 1, \"d_ff\": 32, \"pos\": \"none\", "
              "\"tie_head\": false, \"layers\": [{\"mixer\": \"grassmann\", \"rank\": 4}], \"stacks\": [{\"name\": "
              "\"top\", \"d_model\": 12, \"d_ff\": 24, \"n_layer\": 2, \"norm\": \"post\", \"layers\": [\"attention\", "
              "{\"mixer\": \"grassmann\", \"rank\": 3}]}]}", 6);
    enum { L = 30 };
    int32_t tok[L];
    for (int t = 0; t < L; t++) tok[t] = (int32_t)(gf_rand64(8, (uint64_t)t) % 20);
    gf_batch one = {.B = 1, .T = L, .ids = tok};
    gf_model_forward_batch(m, &one, NULL);
    float *full = falloc(L * 20);
    memcpy(full, gf_model_logits(m), sizeof(float) * L * 20);
    gf_stream *st = gf_stream_create(m);
    if (!st) fail_msg("stream: %s", gf_last_error());
    for (int t = 0; t < L; t++) {
        const float *lg = gf_stream_step(st, tok[t]);
        for (int v = 0; v < 20; v++)
            if (!(fabsf(lg[v] - full[t * 20 + v]) <= 1e-5f)) fail_msg("stacks stream: position %d id %d", t, v);
    }
    gf_stream_free(st);
    gf_model_free(m);
}

static void test_stack_errors(void **state) {
    (void)state;
    gf_config c;
    const char *base = "{\"format\": 2, \"vocab_size\": 20, \"d_model\": 16, \"n_layer\": 1, \"d_ff\": 32, \"max_len\": 8, "
                       "\"layers\": [{\"mixer\": \"grassmann\", \"rank\": 4}], \"stacks\": [%s]}";
    const char *bad[][2] = {
        {"{\"name\": \"Top\", \"d_model\": 8, \"d_ff\": 8, \"n_layer\": 1, \"layers\": [\"attention\"]}", "needs a \"name\""},
        {"{\"name\": \"t\", \"d_ff\": 8, \"n_layer\": 1, \"layers\": [\"attention\"]}", "lacks \"d_model\""},
        {"{\"name\": \"t\", \"d_model\": 8, \"d_ff\": 8, \"n_layer\": 1, \"layers\": [\"attention\"], \"rank\": 3}", "no key \"rank\""},
        {"{\"name\": \"t\", \"d_model\": 8, \"d_ff\": 8, \"n_layer\": 1, \"layers\": [\"attention\"]}", "tie_head"},
        {"{\"name\": \"t\", \"d_model\": 16, \"d_ff\": 8, \"n_layer\": 1, \"direction\": \"bidirectional\", "
         "\"layers\": [\"attention\"]}", "causal"},
        {"{\"name\": \"t\", \"d_model\": 16, \"d_ff\": 8, \"n_layer\": 1, \"layers\": [\"attention\"]}, {\"name\": \"t\", "
         "\"d_model\": 16, \"d_ff\": 8, \"n_layer\": 1, \"layers\": [\"attention\"]}", "two stacks are called \"t\""},
        {"{\"name\": \"t\", \"d_model\": 16, \"d_ff\": 8, \"n_layer\": 64, \"layers\": [\"attention\"]}", "more than 64 layers"},
        /* names of the model's own tensors: the stack's would be taken for them (a backbone's, frozen) */
        {"{\"name\": \"tok_emb\", \"d_model\": 16, \"d_ff\": 8, \"n_layer\": 1, \"layers\": [\"attention\"]}",
         "is named \"tok_emb\", a name the model's own tensors use"},
        {"{\"name\": \"pos_emb\", \"d_model\": 16, \"d_ff\": 8, \"n_layer\": 1, \"layers\": [\"attention\"]}", "own tensors use"},
        {"{\"name\": \"seg_emb\", \"d_model\": 16, \"d_ff\": 8, \"n_layer\": 1, \"layers\": [\"attention\"]}", "own tensors use"},
        {"{\"name\": \"emb_ln\", \"d_model\": 16, \"d_ff\": 8, \"n_layer\": 1, \"layers\": [\"attention\"]}", "own tensors use"},
        {"{\"name\": \"in_proj\", \"d_model\": 16, \"d_ff\": 8, \"n_layer\": 1, \"layers\": [\"attention\"]}", "own tensors use"},
        {"{\"name\": \"blocks\", \"d_model\": 16, \"d_ff\": 8, \"n_layer\": 1, \"layers\": [\"attention\"]}", "own tensors use"},
        {"{\"name\": \"ln_f\", \"d_model\": 16, \"d_ff\": 8, \"n_layer\": 1, \"layers\": [\"attention\"]}", "own tensors use"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char json[1024];
        snprintf(json, sizeof json, base, bad[i][0]);
        if (!gf_config_from_json(json, "t", &c)) fail_msg("accepted: %s", json);
        if (!strstr(gf_last_error(), bad[i][1])) fail_msg("%s: '%s' lacks '%s'", bad[i][0], gf_last_error(), bad[i][1]);
    }
    /* a head's tensors: a stack named like them is refused too (cls_head.weight; lm_head.weight untied) */
    assert_int_not_equal(gf_config_from_json(STACKS_CLS_AS("cls_head"), "t", &c), 0);
    if (!strstr(gf_last_error(), "is named \"cls_head\", as the classify head's tensor cls_head.weight begins"))
        fail_msg("%s", gf_last_error());
    assert_int_not_equal(gf_config_from_json("{\"format\": 2, \"vocab_size\": 20, \"d_model\": 16, \"n_layer\": 1, "
                                             "\"d_ff\": 32, \"max_len\": 8, \"tie_head\": false, \"layers\": [\"attention\"], "
                                             "\"stacks\": [{\"name\": \"lm_head\", \"d_model\": 8, \"d_ff\": 8, "
                                             "\"n_layer\": 1, \"layers\": [\"attention\"]}]}", "t", &c), 0);
    if (!strstr(gf_last_error(), "as the next_token head's tensor lm_head.weight begins")) fail_msg("%s", gf_last_error());
    /* the JSON form round-trips */
    assert_int_equal(gf_config_from_json(STACKS_CLS, "t", &c), 0);
    char *j = gf_config_to_json(&c, false);
    gf_config d;
    assert_int_equal(gf_config_from_json(j, "roundtrip", &d), 0);
    char *k = gf_config_to_json(&d, false);
    assert_string_equal(j, k);
    free(j);
    free(k);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_padding_changes_nothing, pool_teardown),
        cmocka_unit_test(test_padded_equals_alone),
        cmocka_unit_test(test_classifier_learns),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_vector_inputs),
        cmocka_unit_test(test_freeze),
        cmocka_unit_test(test_frozen_no_dropout),
        cmocka_unit_test(test_hidden),
        cmocka_unit_test(test_partial_freeze),
        cmocka_unit_test(test_padding_rules),
        cmocka_unit_test(test_set_paths),
        cmocka_unit_test_teardown(test_stacks, pool_teardown),
        cmocka_unit_test(test_stack_errors),
    };
    int rc = cmocka_run_group_tests_name("tasks", tests, NULL, NULL);
    pool_release();
    return rc;
}
