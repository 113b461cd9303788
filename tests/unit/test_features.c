/* The feature cache (gf_feature_source_create): a frozen first stack run once per example. Evaluation
 * through it is bit for bit evaluation without it; training through it follows training without it; a row
 * it has not seen is computed by the model; what cannot be cached is refused with the reason. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "sources/source.h"
#include "testlib.h"
#include "train/trainer.h"

/* a bidirectional backbone (attention and Grassmann, padded keys masked) under a head stack */
#define PAIRS "{\"format\": 2, \"task\": \"classify\", \"head\": {\"n_classes\": 3}, \"vocab_size\": 30, " \
    "\"d_model\": 24, \"n_layer\": 2, \"d_ff\": 48, \"max_len\": 16, \"norm\": \"post\", \"segments\": 2, "     \
    "\"direction\": \"bidirectional\", \"dropout\": 0.1, \"layers\": [{\"mixer\": \"attention\", \"n_head\": 2}, " \
    "{\"mixer\": \"grassmann\", \"rank\": 5}], \"stacks\": [{\"name\": \"head\", \"d_model\": 16, \"d_ff\": 32, "  \
    "\"n_layer\": 1, \"direction\": \"bidirectional\", \"layers\": [{\"mixer\": \"grassmann\", \"rank\": 4, "     \
    "\"offsets\": [1, 2], \"window\": 8}]}]}"

enum { N_EX = 37, MAXLEN = 14 };

/* Examples of 3 to 14 tokens (two token types), shuffled per epoch, padded to the longest in a batch;
 * examples 5 and 6 are the same pair. */
typedef struct {
    int32_t ids[N_EX][MAXLEN];
    int len[N_EX];
    int32_t in[N_EX * MAXLEN], tg[N_EX];
    uint8_t mask[N_EX * MAXLEN], seg[N_EX * MAXLEN];
} pairs;

static void pairs_make(pairs *p) {
    for (int i = 0; i < N_EX; i++) {
        const int src = i == 6 ? 5 : i;
        p->len[i] = 3 + (int)(gf_rand64(7, (uint64_t)src) % (MAXLEN - 2));
        for (int t = 0; t < MAXLEN; t++) p->ids[i][t] = 1 + (int32_t)(gf_rand64(8, (uint64_t)(src * MAXLEN + t)) % 29);
    }
}

static int64_t pairs_n(void *ctx) { (void)ctx; return N_EX; }

static int pairs_rows(pairs *p, const int64_t *rows, int64_t n, gf_batch *b) {
    int64_t T = 1;
    for (int64_t r = 0; r < n; r++) T = p->len[rows[r]] > T ? p->len[rows[r]] : T;
    for (int64_t r = 0; r < n; r++)
        for (int64_t t = 0; t < T; t++) {
            const int64_t i = rows[r], real = t < p->len[i];
            p->in[r * T + t] = real ? p->ids[i][t] : 0;
            p->mask[r * T + t] = (uint8_t)real;
            p->seg[r * T + t] = (uint8_t)(real && 2 * t >= p->len[i]);
        }
    for (int64_t r = 0; r < n; r++) p->tg[r] = (int32_t)(rows[r] % 3);
    *b = (gf_batch){.B = n, .T = T, .ids = p->in, .targets = p->tg, .n_targets = n, .mask = p->mask, .segments = p->seg};
    return 0;
}

static int pairs_fill(void *ctx, int64_t epoch, int64_t first, int64_t n, gf_batch *b) {
    int64_t perm[N_EX];
    gf_epoch_order(perm, N_EX, 77, epoch);
    return pairs_rows(ctx, perm + first, n, b);
}

static int pairs_fill_eval(void *ctx, int64_t first, int64_t n, gf_batch *b) {
    int64_t rows[N_EX];
    for (int64_t r = 0; r < n; r++) rows[r] = first + r;
    return pairs_rows(ctx, rows, n, b);
}

static void pairs_destroy(gf_source *s) { free(s); }

/* A source over p, on the heap like the library's (the feature source frees what it owns). */
static gf_source *pairs_source(pairs *p) {
    gf_source *s = calloc(1, sizeof *s);
    *s = (gf_source){.version = 1, .ctx = p, .n_examples = pairs_n, .fill = pairs_fill,
                     .n_eval_examples = pairs_n, .fill_eval = pairs_fill_eval, .destroy = pairs_destroy};
    return s;
}

/* A model of PAIRS from seed with its backbone (embeddings and first stack) frozen. */
static gf_model *frozen_model(uint64_t seed) {
    gf_config c;
    if (gf_config_from_json(PAIRS, "test", &c)) fail_msg("config: %s", gf_last_error());
    gf_model *m = gf_model_create(&c);
    if (!m) fail_msg("create: %s", gf_last_error());
    gf_model_init(m, seed);
    const char *backbone[] = {"tok_emb.", "pos_emb.", "seg_emb.", "blocks."};
    for (int i = 0; i < 4; i++) assert_true(gf_model_freeze(m, backbone[i]) > 0);
    assert_true(gf_model_first_stack_fixed(m));
    return m;
}

static gf_source *cached(gf_model *m, gf_source *inner, gf_source_use use, int64_t batch) {
    size_t bytes = 0;
    gf_source *s = gf_feature_source_create(m, inner, use, batch, (size_t)1 << 30, &bytes);
    if (!s) fail_msg("feature source: %s", gf_last_error());
    /* 37 rows of at most 14 positions of 24 floats, the keys, the table */
    if (bytes < 37 * 3 * 24 * sizeof(float) || bytes > 37 * 14 * 24 * sizeof(float) + 65536) fail_msg("%zu bytes", bytes);
    return s;
}

/* Every evaluation batch: the same logits bit for bit with and without the cache, the cached batch
 * carrying features; gf_evaluate_result: the same loss and count. */
static void test_eval_bitwise(void **state) {
    (void)state;
    pairs p;
    pairs_make(&p);
    gf_model *m = frozen_model(3);
    gf_source *plain = pairs_source(&p), *fs = cached(m, pairs_source(&p), GF_USE_EVAL, 8);
    float *want = malloc(sizeof(float) * 8 * 3);
    for (int64_t k = 0; k < N_EX; k += 8) {
        const int64_t n = N_EX - k < 8 ? N_EX - k : 8;
        gf_batch b;
        assert_int_equal(gf_source_fill_eval(plain, k, n, &b), 0);
        assert_null(b.features);
        assert_int_equal(gf_model_forward_batch(m, &b, NULL), 0);
        memcpy(want, gf_model_logits(m), sizeof(float) * (size_t)n * 3);
        assert_int_equal(gf_source_fill_eval(fs, k, n, &b), 0);
        assert_non_null(b.features);
        assert_int_equal(gf_model_forward_batch(m, &b, NULL), 0);
        assert_memory_equal(gf_model_logits(m), want, sizeof(float) * (size_t)n * 3);
    }
    gf_eval_result a = {0}, c = {0};
    assert_int_equal(gf_evaluate_result(m, plain, 8, &a), 0);
    assert_int_equal(gf_evaluate_result(m, fs, 8, &c), 0);
    assert_true(a.mean_loss == c.mean_loss && a.n_correct == c.n_correct && a.n_counted == N_EX);
    free(want);
    gf_source_free(plain);
    gf_source_free(fs);
    gf_model_free(m);
}

/* Training through the cache (dropout on in the head) follows training without it: the head's weights
 * agree to float rounding (the features were computed in other batches), the backbone stays as it was. */
static void test_train_follows(void **state) {
    (void)state;
    pairs p;
    pairs_make(&p);
    gf_model *a = frozen_model(5), *b = frozen_model(5);
    gf_source *plain = pairs_source(&p), *fs = cached(b, pairs_source(&p), GF_USE_TRAIN, 6);
    gf_train_opts o;
    gf_train_opts_default(&o);
    o.batch = 6;
    o.accum = 2;
    o.warmup = 2;
    const gf_adamw_hparams hp = {.lr = 3e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.01f};
    gf_adamw *oa = gf_adamw_create(a, hp), *ob = gf_adamw_create(b, hp);
    for (int64_t step = 0; step < 8; step++) { /* 3 steps an epoch: every row, in three orders */
        gf_step_result ra, rb;
        assert_int_equal(gf_train_step(a, oa, plain, &o, step, 8, &ra), 0);
        assert_int_equal(gf_train_step(b, ob, fs, &o, step, 8, &rb), 0);
        if (!(fabs(ra.loss - rb.loss) <= 1e-5)) fail_msg("step %lld: loss %.9g with the cache, %.9g without", (long long)step,
                                                    rb.loss, ra.loss);
    }
    for (int i = 0; i < gf_model_num_tensors(a); i++) {
        const gf_tensor_info *x = gf_model_tensor(a, i), *y = gf_model_tensor(b, i);
        for (int64_t k = 0; k < x->numel; k++)
            if (!(fabsf(x->data[k] - y->data[k]) <= 1e-5f)) fail_msg("%s[%lld]: %.9g vs %.9g", x->name, (long long)k,
                                                              x->data[k], y->data[k]);
    }
    gf_adamw_free(oa);
    gf_adamw_free(ob);
    gf_source_free(plain);
    gf_source_free(fs);
    gf_model_free(a);
    gf_model_free(b);
}

/* A row the cache has not seen (the data changed under it): that batch goes without features and the
 * model computes them; the next batch of known rows has them again. */
static void test_unseen_row(void **state) {
    (void)state;
    pairs p;
    pairs_make(&p);
    gf_model *m = frozen_model(9);
    gf_source *fs = cached(m, pairs_source(&p), GF_USE_EVAL, 4);
    gf_batch b;
    assert_int_equal(gf_source_fill_eval(fs, 0, 4, &b), 0); /* the first fill computes every example */
    assert_non_null(b.features);
    p.ids[2][1] = p.ids[2][1] % 29 + 1; /* example 2 is another pair now */
    assert_int_equal(gf_source_fill_eval(fs, 0, 4, &b), 0);
    assert_null(b.features);
    float loss;
    assert_int_equal(gf_model_forward_batch(m, &b, &loss), 0);
    assert_true(isfinite(loss));
    assert_int_equal(gf_source_fill_eval(fs, 4, 4, &b), 0);
    assert_non_null(b.features);
    gf_source_free(fs);
    gf_model_free(m);
}

static void expect_error(const void *got, const char *want) {
    if (got) fail_msg("accepted; expected an error with '%s'", want);
    if (!strstr(gf_last_error(), want)) fail_msg("'%s' lacks '%s'", gf_last_error(), want);
}

/* What cannot be cached is refused, naming why, and the source given stays the caller's; a batch with
 * features is refused by a model whose first stack trains; stack outputs out of range are NULL. */
static void test_refused(void **state) {
    (void)state;
    pairs p;
    pairs_make(&p);
    gf_source *inner = pairs_source(&p);
    gf_model *m = frozen_model(2);
    size_t bytes = 0;
    expect_error(gf_feature_source_create(m, inner, GF_USE_TRAIN, 4, 1000, &bytes), "more than the 0.0 MiB allowed");
    expect_error(gf_feature_source_create(m, inner, GF_USE_TRAIN, 0, 1 << 30, &bytes), "batch is 0");
    gf_config c;
    assert_int_equal(gf_config_from_json(PAIRS, "test", &c), 0);
    gf_model *trains = gf_model_create(&c);
    assert_false(gf_model_first_stack_fixed(trains));
    expect_error(gf_feature_source_create(trains, inner, GF_USE_TRAIN, 4, 1 << 30, &bytes), "first stack is frozen");
    gf_batch b;
    assert_int_equal(inner->fill(inner->ctx, 0, 0, 4, &b), 0); /* still the caller's, and whole */
    float *feat = calloc((size_t)(b.B * b.T * 24), sizeof(float));
    b.features = feat;
    assert_int_equal(gf_model_forward_batch(trains, &b, NULL), -1);
    assert_non_null(strstr(gf_last_error(), "first stack has trainable tensors"));
    assert_int_equal(gf_model_forward_batch(m, &b, NULL), 0); /* the frozen one takes them */
    int64_t B, T, w;
    assert_non_null(gf_model_stack_output(m, 0, &B, &T, &w));
    assert_true(w == 24 && B == 4);
    assert_non_null(gf_model_stack_output(m, 1, &B, &T, &w));
    assert_true(w == 16);
    assert_null(gf_model_stack_output(m, 2, &B, &T, &w));
    assert_null(gf_model_stack_output(m, -1, &B, &T, &w));
    gf_source *fs = cached(m, inner, GF_USE_TRAIN, 4);
    assert_int_equal(fs->check(fs->ctx, trains, GF_USE_TRAIN), -1);
    assert_non_null(strstr(gf_last_error(), "made for another model"));
    free(feat);
    gf_source_free(fs); /* and inner with it */
    gf_model_free(trains);
    gf_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eval_bitwise),
        cmocka_unit_test(test_train_follows),
        cmocka_unit_test(test_unseen_row),
        cmocka_unit_test(test_refused),
    };
    int rc = cmocka_run_group_tests_name("features", tests, NULL, NULL);
    pool_release();
    return rc;
}
