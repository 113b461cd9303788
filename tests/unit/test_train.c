/* The data sources and the training loop: the token-block source's blocks, epoch orders (pinned: old runs
 * resume), evaluation blocking with its padded last block, jumps to any step; gf_evaluate and the one
 * log-sum-exp; one optimizer step (micro-batches weighted by counted targets, the non-finite hook); the
 * non-finite policy, a stopped-and-resumed and an extended run through gf_train, the schedule of an
 * extended run (gf_train_lr) and the recipe's later keys; metrics.jsonl lines are JSON (no inf)
 * and a line that cannot be written is an error. */
#include <math.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "io/json_out.h"
#include "tasks/lm/lm_source.h"
#include "testlib.h"
#include "train/run_dir.h"
#include "train/trainer.h"

/* ids[i] = i: a row's first input says which block it is. */
static int32_t *iota_ids(int64_t n) {
    int32_t *ids = talloc((size_t)n * sizeof *ids);
    for (int64_t i = 0; i < n; i++) ids[i] = (int32_t)i;
    return ids;
}

/* The block order of epoch e, read from a fill of all n blocks of blocks of L + 1 ids 0, 1, 2, ... */
static void read_order(gf_source *s, int64_t epoch, int64_t n, int64_t L, int64_t *order) {
    gf_batch b;
    assert_int_equal(s->fill(s->ctx, epoch, 0, n, &b), 0);
    for (int64_t r = 0; r < n; r++) order[r] = b.ids[r * L] / (L + 1);
}

static void test_lm_blocks(void **state) {
    (void)state;
    const int64_t L = 4, n = 10 * (L + 1) + 3; /* 10 blocks and 3 tokens that make no block */
    int32_t *ids = iota_ids(n);
    gf_source *s = gf_block_source_create(ids, n, L, 1234);
    assert_non_null(s);
    assert_int_equal(s->version, 1);
    assert_int_equal(s->n_examples(s->ctx), 10);
    gf_batch b;
    assert_int_equal(s->fill(s->ctx, 0, 0, 10, &b), 0);
    assert_int_equal(b.B, 10);
    assert_int_equal(b.T, L);
    assert_int_equal(b.n_targets, 10 * L);
    int seen[10] = {0};
    for (int64_t r = 0; r < 10; r++) {
        const int32_t k = b.ids[r * L] / (int32_t)(L + 1);
        assert_in_range(k, 0, 9);
        seen[k]++;
        for (int64_t t = 0; t < L; t++) { /* inputs: the block's first L tokens; targets: its last L */
            assert_int_equal(b.ids[r * L + t], k * (L + 1) + t);
            assert_int_equal(b.targets[r * L + t], k * (L + 1) + t + 1);
        }
    }
    for (int k = 0; k < 10; k++)
        if (seen[k] != 1) fail_msg("block %d appears %d times in epoch 0; expected once", k, seen[k]);
    gf_source_free(s);
}

/* The orders of the code that wrote the runs on disk: a change here would change every resumed run. */
static void test_lm_order_pinned(void **state) {
    (void)state;
    const int64_t L = 2, n = 12 * (L + 1);
    static const int64_t want[4][12] = {{3, 10, 9, 7, 2, 6, 11, 1, 0, 5, 4, 8},
                                        {0, 1, 9, 2, 8, 5, 4, 3, 11, 6, 10, 7},
                                        {10, 2, 8, 6, 1, 9, 4, 3, 5, 11, 7, 0},
                                        {0, 11, 2, 6, 8, 7, 4, 10, 3, 5, 9, 1}};
    static const uint64_t seeds[4] = {1234, 1234, 1234, 7};
    static const int64_t epochs[4] = {0, 1, 2, 5};
    int32_t *ids = iota_ids(n);
    for (int c = 0; c < 4; c++) {
        gf_source *s = gf_block_source_create(ids, n, L, seeds[c]);
        int64_t got[12];
        read_order(s, epochs[c], 12, L, got);
        for (int r = 0; r < 12; r++)
            if (got[r] != want[c][r])
                fail_msg("seed %llu epoch %lld: position %d holds block %lld; expected %lld",
                         (unsigned long long)seeds[c], (long long)epochs[c], r, (long long)got[r], (long long)want[c][r]);
        gf_source_free(s);
    }
}

/* Any range of any epoch, asked for in any order, is what a walk through that epoch gives. */
static void test_lm_jump(void **state) {
    (void)state;
    const int64_t L = 3, nb = 37, n = nb * (L + 1);
    int32_t *ids = iota_ids(n);
    gf_source *walk = gf_block_source_create(ids, n, L, 99), *jump = gf_block_source_create(ids, n, L, 99);
    int64_t full[37];
    read_order(walk, 4, nb, L, full);
    gf_batch b;
    assert_int_equal(jump->fill(jump->ctx, 1, 0, 5, &b), 0); /* another epoch first */
    for (int64_t first = 30; first >= 0; first -= 6) {
        assert_int_equal(jump->fill(jump->ctx, 4, first, 7, &b), 0);
        assert_int_equal(b.B, 7);
        for (int64_t r = 0; r < 7; r++)
            if (b.ids[r * L] / (L + 1) != full[first + r])
                fail_msg("epoch 4, example %lld: block %d; a walk through the epoch has %lld", (long long)(first + r),
                         b.ids[r * L] / (int32_t)(L + 1), (long long)full[first + r]);
    }
    int64_t other[37];
    read_order(walk, 5, nb, L, other);
    assert_true(memcmp(full, other, sizeof full) != 0); /* epochs are shuffled differently */
    gf_source_free(walk);
    gf_source_free(jump);
}

/* Blocks of L + 1 with stride L: every token but the first predicted once, the last block padded. */
static void test_lm_eval_blocks(void **state) {
    (void)state;
    const int64_t L = 4, n = 3 * L + 2; /* 14 tokens: 13 predictions, blocks of 4, 4, 4 and 1 */
    int32_t *ids = iota_ids(n);
    gf_source *s = gf_block_source_create(ids, n, L, 1);
    assert_int_equal(s->n_eval_examples(s->ctx), 4);
    gf_batch b;
    assert_int_equal(s->fill_eval(s->ctx, 0, 4, &b), 0);
    assert_int_equal(b.B, 4);
    assert_int_equal(b.n_targets, n - 1);
    for (int64_t k = 0; k < 4; k++)
        for (int64_t t = 0; t < L; t++) {
            const int64_t pos = k * L + t;
            const bool real = pos + 1 < n;
            assert_int_equal(b.ids[k * L + t], real ? pos : 0);
            assert_int_equal(b.targets[k * L + t], real ? pos + 1 : -1);
        }
    assert_int_equal(s->fill_eval(s->ctx, 3, 1, &b), 0); /* the short block alone: as long as it is */
    assert_int_equal(b.n_targets, 1);
    assert_int_equal(b.T, 1);
    assert_int_equal(b.ids[0], 12);
    assert_int_equal(b.targets[0], 13);
    assert_int_equal(s->fill_eval(s->ctx, 2, 2, &b), 0); /* with a full block before it: padded to L */
    assert_int_equal(b.T, L);
    assert_int_equal(b.ids[L], 12);
    assert_int_equal(b.targets[L], 13);
    assert_int_equal(b.targets[L + 1], -1);
    gf_source_free(s);
    /* a seq_len far above the split costs what the split holds: one block of n - 1 */
    s = gf_block_source_create(ids, n, (int64_t)1 << 40, 1);
    assert_int_equal(s->n_eval_examples(s->ctx), 1);
    assert_int_equal(s->fill_eval(s->ctx, 0, 1, &b), 0);
    assert_int_equal(b.T, n - 1);
    assert_int_equal(b.n_targets, n - 1);
    assert_int_equal(b.targets[n - 2], n - 1);
    gf_source_free(s);
}

/* The reproductions' protocol: chunks of L, the remainder dropped, each chunk's first L - 1 tokens predicting
 * its last L - 1; with [CLS] and [SEP] once around the split (copied: the caller's ids are not touched). */
static void test_lm_eval_chunks(void **state) {
    (void)state;
    const int64_t L = 4, n = 3 * L + 2; /* 14 tokens: 3 chunks, 2 dropped */
    int32_t *ids = iota_ids(n);
    gf_source *s = gf_lm_source_create(ids, n, L, 1, GF_LM_CHUNKS, -1, -1);
    assert_non_null(s);
    assert_int_equal(s->n_eval_examples(s->ctx), 3);
    assert_int_equal(s->n_examples(s->ctx), n / (L + 1)); /* training blocks as ever */
    gf_batch b;
    assert_int_equal(s->fill_eval(s->ctx, 0, 3, &b), 0);
    assert_int_equal(b.T, L - 1);
    assert_int_equal(b.n_targets, 3 * (L - 1));
    for (int64_t k = 0; k < 3; k++)
        for (int64_t t = 0; t < L - 1; t++) {
            assert_int_equal(b.ids[k * (L - 1) + t], k * L + t);
            assert_int_equal(b.targets[k * (L - 1) + t], k * L + t + 1);
        }
    gf_source_free(s);
    s = gf_lm_source_create(ids, n, L, 1, GF_LM_STRIDE, 900, 901); /* 16 tokens: 15 predictions */
    assert_int_equal(s->n_eval_examples(s->ctx), 4);
    assert_int_equal(s->fill_eval(s->ctx, 0, 4, &b), 0);
    assert_int_equal(b.n_targets, n + 1);
    assert_int_equal(b.ids[0], 900);
    assert_int_equal(b.targets[0], 0);
    assert_int_equal(b.targets[3 * L + 2], 901);
    assert_int_equal(ids[0], 0);
    gf_source_free(s);
    s = gf_lm_source_create(ids, n, L, 1, GF_LM_CHUNKS, 900, 901); /* 16 tokens: 4 chunks */
    assert_int_equal(s->n_eval_examples(s->ctx), 4);
    assert_int_equal(s->fill_eval(s->ctx, 3, 1, &b), 0);
    assert_int_equal(b.ids[0], 3 * L - 1);
    assert_int_equal(b.targets[L - 2], 901);
    gf_source_free(s);
    s = gf_lm_source_create(ids, L - 1, L, 1, GF_LM_CHUNKS, -1, -1); /* shorter than one chunk */
    assert_int_equal(s->n_eval_examples(s->ctx), 0);
    gf_source_free(s);
}

static void test_lm_errors(void **state) {
    (void)state;
    int32_t ids[40];
    for (int i = 0; i < 40; i++) ids[i] = i;
    tl_expect_error(gf_block_source_create(ids, 40, 0, 1) != NULL ? 0 : -1, "seq_len >= 1");
    ids[7] = -2;
    tl_expect_error(gf_block_source_create(ids, 40, 4, 1) != NULL ? 0 : -1, "token id -2 at position 7");
    ids[7] = 7;
    gf_source *s = gf_block_source_create(ids, 40, 4, 1); /* 8 blocks */
    gf_batch b;
    tl_expect_error(s->fill(s->ctx, 0, 6, 3, &b), "training examples [6, 9) asked for");
    tl_expect_error(s->fill(s->ctx, -1, 0, 1, &b), "epoch -1");
    tl_expect_error(s->fill_eval(s->ctx, 10, 1, &b), "evaluation examples [10, 11)");
    const char *sets[] = {"vocab_size=64", NULL};
    gf_model *m = tl_make_model("grassmann-tiny", sets, 1);
    assert_int_equal(s->check(s->ctx, m, GF_USE_TRAIN), 0);
    gf_source *long_blocks = gf_block_source_create(ids, 40, 33, 1), *short_split = gf_block_source_create(ids, 1, 4, 1);
    tl_expect_error(long_blocks->check(long_blocks->ctx, m, GF_USE_EVAL), "--seq-len 33 is above the model's max_len 32");
    tl_expect_error(short_split->check(short_split->ctx, m, GF_USE_TRAIN), "fewer than one block of --seq-len + 1 = 5");
    tl_expect_error(short_split->check(short_split->ctx, m, GF_USE_EVAL), "at least 2 are needed");
    gf_model_free(m);
    const char *small[] = {"vocab_size=39", NULL}; /* one short of the ids 0..39 */
    m = tl_make_model("grassmann-tiny", small, 1);
    tl_expect_error(s->check(s->ctx, m, GF_USE_TRAIN), "token ids go up to 39, outside the model's vocabulary [0, 39)");
    gf_model_free(m);
    gf_source_free(long_blocks);
    gf_source_free(short_split);
    gf_source_free(s);
}

/* gf_evaluate = the token-weighted mean of per-block losses, whatever the batch; the per-token loss of
 * the forward pass is gf_log_softmax_nll bit for bit (one log-sum-exp). */
static void test_evaluate(void **state) {
    (void)state;
    const char *sets[] = {"vocab_size=64", "max_len=16", NULL};
    gf_model *m = tl_make_model("hybrid-tiny", sets, 3);
    const int64_t L = 8, n = 61, V = 64;
    int32_t *ids = talloc((size_t)n * sizeof *ids);
    for (int64_t i = 0; i < n; i++) ids[i] = (int32_t)(gf_rand64(17, (uint64_t)i) % (uint64_t)V);
    gf_source *s = gf_block_source_create(ids, n, L, 5);
    double want = 0.0;
    for (int64_t k = 0; k * L < n - 1; k++) { /* block k alone, by hand: tokens k*L .. k*L + len */
        const int64_t len = n - 1 - k * L < L ? n - 1 - k * L : L;
        float l;
        assert_int_equal(gf_model_forward(m, ids + k * L, ids + k * L + 1, 1, len, &l), 0);
        want += (double)l * (double)len;
    }
    want /= (double)(n - 1);
    for (int64_t B = 1; B <= 9; B += 4) {
        double got;
        int64_t counted;
        assert_int_equal(gf_evaluate(m, s, B, &got, &counted), 0);
        assert_int_equal(counted, n - 1);
        if (!(fabs(got - want) <= 1e-5 * want))
            fail_msg("batch %lld: gf_evaluate %.9g; by hand %.9g", (long long)B, got, want);
    }
    int32_t tg[16];
    for (int64_t t = 0; t < 16; t++) { /* the loss of position t alone */
        float l;
        for (int64_t u = 0; u < 16; u++) tg[u] = u == t ? ids[t + 1] : -1;
        assert_int_equal(gf_model_forward(m, ids, tg, 1, 16, &l), 0);
        const float nll = gf_log_softmax_nll(gf_model_logits(m) + t * V, V, ids[t + 1]);
        if (nll != l) fail_msg("position %lld: gf_log_softmax_nll %.9g; the forward's loss %.9g", (long long)t, nll, l);
    }
    tl_expect_error(gf_evaluate(m, s, 0, &want, NULL), "batch is 0");
    gf_source_free(s);
    gf_model_free(m);
}

/* ---- a second kind of source: fixed rows with some targets ignored ---------------------------------- */

typedef struct {
    int64_t rows, T;
    const int32_t *ids, *targets; /* (rows, T) */
} rows_source;

static int64_t rows_n(void *ctx) { return ((rows_source *)ctx)->rows; }

static int rows_fill(void *ctx, int64_t epoch, int64_t first, int64_t n, gf_batch *b) {
    (void)epoch;
    const rows_source *s = ctx;
    int64_t counted = 0;
    for (int64_t i = first * s->T; i < (first + n) * s->T; i++) counted += s->targets[i] >= 0;
    *b = (gf_batch){.B = n, .T = s->T, .ids = s->ids + first * s->T, .targets = s->targets + first * s->T,
                    .n_targets = counted};
    return 0;
}

static gf_source rows_make(rows_source *rs) {
    return (gf_source){.version = 1, .ctx = rs, .n_examples = rows_n, .fill = rows_fill};
}

/* Two rows with 3 and 7 counted targets. */
static void two_rows(int32_t *ids, int32_t *tg, int64_t T) {
    for (int64_t i = 0; i < 2 * T; i++) {
        ids[i] = (int32_t)(gf_rand64(3, (uint64_t)i) % 64);
        tg[i] = (int32_t)(gf_rand64(4, (uint64_t)i) % 64);
    }
    for (int64_t t = 3; t < T; t++) tg[t] = -1;    /* row 0: 3 targets */
    for (int64_t t = 7; t < T; t++) tg[T + t] = -1; /* row 1: 7 targets */
}

static void step_opts(gf_train_opts *o, int64_t batch, int64_t accum) {
    gf_train_opts_default(o);
    o->batch = batch;
    o->accum = accum;
    o->warmup = 0;
    o->lr = 1e-2f;
    o->clip = 0.5f;
}

/* A step of two micro-batches of one row each equals one step on a batch of both: each micro-batch
 * weighs by its counted targets (3 and 7), not by its rows. */
static void test_step_accumulation(void **state) {
    (void)state;
    const int64_t T = 10;
    int32_t ids[20], tg[20];
    two_rows(ids, tg, T);
    rows_source rs = {.rows = 2, .T = T, .ids = ids, .targets = tg};
    gf_source src = rows_make(&rs);
    const char *sets[] = {"vocab_size=64", NULL};
    gf_model *one = tl_make_model("grassmann-tiny", sets, 8), *two = tl_make_model("grassmann-tiny", sets, 8);
    gf_adamw_hparams hp = {.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.01f};
    gf_adamw *o1 = gf_adamw_create(one, hp), *o2 = gf_adamw_create(two, hp);
    gf_train_opts a, b;
    step_opts(&a, 2, 1);
    step_opts(&b, 1, 2);
    gf_step_result r1, r2;
    assert_int_equal(gf_train_step(one, o1, &src, &a, 0, 10, &r1), 0);
    assert_int_equal(gf_train_step(two, o2, &src, &b, 0, 10, &r2), 0);
    assert_int_equal(r1.n_targets, 10);
    assert_int_equal(r2.n_targets, 10);
    assert_null(r2.nonfinite);
    if (!(fabs(r1.loss - r2.loss) <= 1e-6 * r1.loss) || !(fabs(r1.grad_norm - r2.grad_norm) <= 1e-5 * r1.grad_norm))
        fail_msg("one batch: loss %.9g, grad norm %.9g; two micro-batches: %.9g, %.9g", r1.loss, r1.grad_norm, r2.loss,
                 r2.grad_norm);
    assert_true(r1.grad_norm > a.clip); /* the clipping ran in both */
    /* the clipped gradients agree to float accuracy; the weights to a small part of the AdamW step (lr) */
    const float *g1 = gf_model_grads(one), *g2 = gf_model_grads(two);
    const float *p1 = gf_model_params(one), *p2 = gf_model_params(two);
    double gworst = 0.0, gmax = 0.0, pworst = 0.0, ss = 0.0;
    for (int64_t i = 0; i < gf_model_num_params(one); i++) {
        gworst = tl_max_nan(gworst, fabs((double)g1[i] - g2[i]));
        gmax = fmax(gmax, fabs((double)g1[i]));
        pworst = tl_max_nan(pworst, fabs((double)p1[i] - p2[i]));
        ss += (double)g1[i] * g1[i];
    }
    if (!(fabs(sqrt(ss) - a.clip) <= 1e-5)) fail_msg("gradient norm %.7g after clipping to %g", sqrt(ss), (double)a.clip);
    if (!(gworst <= 1e-5 * gmax) || !(pworst <= 1e-2 * a.lr))
        fail_msg("one batch against two micro-batches: gradients differ by %.3g (largest %.3g), weights after the "
                 "step by %.3g (lr %g)", gworst, gmax, pworst, (double)a.lr);
    gf_adamw_free(o1);
    gf_adamw_free(o2);
    gf_model_free(one);
    gf_model_free(two);
}

/* The gradient norm (which decides the clipping) is the same bits on 1, 2 and 3 threads: every rank of a
 * data-parallel job computes it from the same summed gradient, and ranks started with other --threads must
 * clip alike (an OpenMP reduction's partial sums followed the thread count). Parallel loops forced on, and a
 * gradient of several blocks (a 4096-token vocabulary). */
static void test_step_norm_threads(void **state) {
    (void)state;
    const int64_t T = 10;
    int32_t ids[20], tg[20];
    two_rows(ids, tg, T);
    rows_source rs = {.rows = 2, .T = T, .ids = ids, .targets = tg};
    gf_source src = rows_make(&rs);
    const char *sets[] = {"vocab_size=64", "n_layer=12", NULL};
    const int threads = gf_threads();
    double norm[3];
    for (int k = 0; k < 3; k++) {
        gf_set_threads(k + 1);
        gf_model *m = tl_make_model("grassmann-tiny", sets, 8);
        gf_adamw *opt = gf_adamw_create(m, (gf_adamw_hparams){.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f});
        gf_train_opts o;
        step_opts(&o, 2, 1);
        gf_step_result r;
        assert_true(gf_model_num_trainable(m) > 2 * 32768);
        assert_int_equal(gf_train_step(m, opt, &src, &o, 0, 10, &r), 0);
        norm[k] = r.grad_norm;
        gf_adamw_free(opt);
        gf_model_free(m);
    }
    gf_set_threads(threads);
    if (memcmp(&norm[0], &norm[1], sizeof(double)) || memcmp(&norm[0], &norm[2], sizeof(double)))
        fail_msg("gradient norm on 1, 2 and 3 threads: %.17g, %.17g, %.17g", norm[0], norm[1], norm[2]);
}

typedef struct {
    int64_t from, to;  /* steps (1-based) made non-finite */
    bool norm;         /* the gradient norm instead of the loss */
} nan_hook;

static void make_nonfinite(int64_t step, double *loss, double *grad_norm, void *ctx) {
    const nan_hook *h = ctx;
    if (step < h->from || step > h->to) return;
    if (h->norm) *grad_norm = INFINITY;
    else *loss = NAN;
}

/* A step the hook makes non-finite changes nothing; a finite one updates. */
static void test_step_nonfinite(void **state) {
    (void)state;
    const int64_t T = 10;
    int32_t ids[20], tg[20];
    two_rows(ids, tg, T);
    rows_source rs = {.rows = 2, .T = T, .ids = ids, .targets = tg};
    gf_source src = rows_make(&rs);
    const char *sets[] = {"vocab_size=64", NULL};
    gf_model *m = tl_make_model("grassmann-tiny", sets, 8);
    gf_adamw *opt = gf_adamw_create(m, (gf_adamw_hparams){.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f});
    const int64_t np = gf_model_num_params(m);
    float *before = fdup(gf_model_params(m), np);
    nan_hook h = {.from = 1, .to = 1};
    gf_train_opts o;
    step_opts(&o, 2, 1);
    o.hooks = (gf_train_hooks){.step_loss = make_nonfinite, .ctx = &h};
    gf_step_result r;
    assert_int_equal(gf_train_step(m, opt, &src, &o, 0, 10, &r), 0);
    assert_string_equal(r.nonfinite, "the loss");
    h.norm = true;
    assert_int_equal(gf_train_step(m, opt, &src, &o, 0, 10, &r), 0);
    assert_string_equal(r.nonfinite, "the gradient norm");
    assert_memory_equal(before, gf_model_params(m), (size_t)np * sizeof(float));
    assert_int_equal(gf_adamw_steps_taken(opt), 0);
    assert_int_equal(gf_train_step(m, opt, &src, &o, 1, 10, &r), 0); /* step 2: the hook leaves it alone */
    assert_null(r.nonfinite);
    assert_int_equal(gf_adamw_steps_taken(opt), 1);
    assert_true(memcmp(before, gf_model_params(m), (size_t)np * sizeof(float)) != 0);
    gf_adamw_free(opt);
    gf_model_free(m);
}

/* ---- whole runs through gf_train ------------------------------------------------------------------------ */

typedef struct {
    int skipped[8];
    int n_skipped;
} events;

static void count_events(const gf_train_event *e, void *ctx) {
    events *ev = ctx;
    if (e->kind == GF_EV_SKIPPED && ev->n_skipped < 8) ev->skipped[ev->n_skipped++] = (int)e->step;
}

typedef struct {
    int32_t ids[600];
    gf_source *train, *valid;
} lm_data;

static void lm_data_make(lm_data *d) {
    for (int i = 0; i < 600; i++) d->ids[i] = (int32_t)(gf_rand64(21, (uint64_t)i) % 64);
    d->train = gf_block_source_create(d->ids, 500, 8, 3); /* 55 blocks: 7 steps an epoch at batch 4, accum 2 */
    d->valid = gf_block_source_create(d->ids + 500, 100, 8, 3);
}

static void lm_data_free(lm_data *d) {
    gf_source_free(d->train);
    gf_source_free(d->valid);
}

static void run_opts(gf_train_opts *o, const char *dir, int64_t steps) {
    gf_train_opts_default(o);
    o->batch = 4;
    o->accum = 2;
    o->steps = steps;
    o->warmup = 2;
    o->eval_every = 3;
    snprintf(o->out_dir, sizeof o->out_dir, "%s", tl_tmp_path(dir));
}

static int count_lines(const char *dir, const char *what) {
    char path[GF_PATH_MAX + 32], line[512];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    FILE *f = fopen(path, "r");
    int n = 0;
    while (f && fgets(line, sizeof line, f)) n += strstr(line, what) != NULL;
    if (f) fclose(f);
    return n;
}

/* The non-finite policy: skip mode records and skips, gives up after 10 in a row; stop mode stops. */
static void test_train_nonfinite_policy(void **state) {
    (void)state;
    lm_data d;
    lm_data_make(&d);
    const char *sets[] = {"vocab_size=64", NULL};
    gf_model *m = tl_make_model("grassmann-tiny", sets, 2);
    nan_hook h = {.from = 2, .to = 3};
    gf_train_opts o;
    run_opts(&o, "skip", 6);
    o.on_nonfinite = GF_NONFINITE_SKIP;
    o.hooks = (gf_train_hooks){.step_loss = make_nonfinite, .ctx = &h};
    events ev = {0};
    gf_train_result res;
    if (gf_train(m, d.train, d.valid, &o, false, count_events, &ev, &res)) fail_msg("skip run: %s", gf_last_error());
    assert_int_equal(res.steps, 6);
    assert_int_equal(ev.n_skipped, 2);
    assert_int_equal(ev.skipped[0], 2);
    assert_int_equal(ev.skipped[1], 3);
    assert_int_equal(count_lines(o.out_dir, "\"skipped\": \"the loss is not finite\""), 2);
    run_opts(&o, "stop", 6);
    o.hooks = (gf_train_hooks){.step_loss = make_nonfinite, .ctx = &h};
    tl_expect_error(gf_train(m, d.train, d.valid, &o, false, NULL, NULL, NULL),
                 "step 2: the loss is NaN; training stopped");
    h = (nan_hook){.from = 2, .to = 20, .norm = true};
    run_opts(&o, "diverge", 20);
    o.on_nonfinite = GF_NONFINITE_SKIP;
    o.hooks = (gf_train_hooks){.step_loss = make_nonfinite, .ctx = &h};
    tl_expect_error(gf_train(m, d.train, d.valid, &o, false, NULL, NULL, NULL),
                 "step 12: the gradient norm is infinite for more than 10 steps in a row");
    gf_model_free(m);
    lm_data_free(&d);
}

/* Stopped at step 5 (inside epoch 0) and resumed to step 16 (epoch 2): the weights equal an uninterrupted
 * run's bit for bit, with dropout on: the trainer jumps into the source's order where the state says. */
static void test_train_resume(void **state) {
    (void)state;
    lm_data d;
    lm_data_make(&d);
    const char *sets[] = {"vocab_size=64", "dropout=0.1", NULL};
    gf_model *ref = tl_make_model("hybrid-tiny", sets, 4), *cut = tl_make_model("hybrid-tiny", sets, 4);
    gf_train_opts o;
    run_opts(&o, "straight", 16);
    if (gf_train(ref, d.train, d.valid, &o, false, NULL, NULL, NULL)) fail_msg("straight: %s", gf_last_error());
    run_opts(&o, "cut", 16);
    o.stop_at = 5;
    if (gf_train(cut, d.train, d.valid, &o, false, NULL, NULL, NULL)) fail_msg("cut: %s", gf_last_error());
    gf_model_init(cut, 77); /* the resume must restore every weight */
    o.stop_at = 0;
    gf_train_result res;
    if (gf_train(cut, d.train, d.valid, &o, true, NULL, NULL, &res)) fail_msg("resume: %s", gf_last_error());
    assert_int_equal(res.steps, 16);
    assert_memory_equal(gf_model_params(ref), gf_model_params(cut), (size_t)gf_model_num_params(ref) * sizeof(float));
    gf_model_free(ref);
    gf_model_free(cut);
    lm_data_free(&d);
}

/* An extended run through gf_train (a resume asked for more steps): with a constant rate after the warmup
 * it ends where a run asked for the longer total from the start does, bit for bit; elsewhere the rate goes
 * on from the step it stood at (gf_train_lr), recorded so that the next resume follows it; a total below
 * the steps taken is refused. */
static void test_train_extend(void **state) {
    (void)state;
    lm_data d;
    lm_data_make(&d);
    const char *sets[] = {"vocab_size=64", "dropout=0.1", NULL};
    gf_model *ref = tl_make_model("hybrid-tiny", sets, 4), *ext = tl_make_model("hybrid-tiny", sets, 4);
    gf_train_opts o;
    run_opts(&o, "long", 14);
    o.min_lr = o.lr;
    if (gf_train(ref, d.train, d.valid, &o, false, NULL, NULL, NULL)) fail_msg("long: %s", gf_last_error());
    run_opts(&o, "extended", 6);
    o.min_lr = o.lr;
    if (gf_train(ext, d.train, d.valid, &o, false, NULL, NULL, NULL)) fail_msg("short: %s", gf_last_error());
    o.steps = 3;
    assert_int_not_equal(gf_train(ext, d.train, d.valid, &o, true, NULL, NULL, NULL), 0);
    assert_non_null(strstr(gf_last_error(), "has taken 6 steps already; a total of 3 steps"));
    o.steps = 14;
    gf_train_result res;
    if (gf_train(ext, d.train, d.valid, &o, true, NULL, NULL, &res)) fail_msg("extend: %s", gf_last_error());
    assert_int_equal(res.steps, 14);
    assert_memory_equal(gf_model_params(ref), gf_model_params(ext), (size_t)gf_model_num_params(ref) * sizeof(float));
    gf_run_info info;
    if (gf_run_read(tl_tmp_path("extended"), &info)) fail_msg("read: %s", gf_last_error());
    assert_int_equal(info.train.steps, 14);
    assert_int_equal(info.train.decay_from, 6); /* past the warmup: the rule is recorded */
    assert_true(info.train.decay_from_lr == (double)o.lr);
    gf_run_info_free(&info);
    gf_model_free(ref);
    gf_model_free(ext);
    lm_data_free(&d);
}

/* gf_train_lr: gf_lr_at until decay_from, then the half cosine from decay_from_lr to min_lr at the last
 * step; the recipe's later keys read back exactly (decay_from_lr to the bit), and a recipe without them
 * reads as 0. */
static void test_train_lr_and_recipe(void **state) {
    (void)state;
    gf_train_opts o;
    gf_train_opts_default(&o);
    o.warmup = 4;
    for (int64_t s = 0; s < 20; s++) assert_true(gf_train_lr(&o, s, 20) == gf_lr_at(s, 20, 4, o.lr, o.min_lr));
    o.decay_from = 10;
    o.decay_from_lr = 0.0008211856239292811; /* 17 digits to read back (15 give the next double) */
    assert_true(gf_train_lr(&o, 9, 30) == gf_lr_at(9, 30, 4, o.lr, o.min_lr));
    assert_true(gf_train_lr(&o, 10, 30) == o.decay_from_lr);
    const double want = o.min_lr + 0.5 * (o.decay_from_lr - o.min_lr) * (1.0 + cos(3.141592653589793 * 15.0 / 20.0));
    assert_true(fabs(gf_train_lr(&o, 25, 30) - want) <= 1e-15);
    assert_true(gf_train_lr(&o, 30, 30) == o.min_lr);
    o.save_every = 7;
    o.patience = 3;
    snprintf(o.init_from, sizeof o.init_from, "runs/a/best.safetensors");
    o.init_from_bytes = 123456;
    o.init_from_fnv1a64 = 0xfedcba9876543210ull;
    snprintf(o.out_dir, sizeof o.out_dir, "runs/b");
    char *j = gf_train_opts_to_json(&o);
    gf_train_opts back;
    if (gf_train_opts_from_json(j, "test", &back)) fail_msg("%s", gf_last_error());
    free(j);
    assert_int_equal(back.save_every, 7);
    assert_int_equal(back.patience, 3);
    assert_int_equal(back.decay_from, 10);
    assert_true(back.decay_from_lr == o.decay_from_lr);
    assert_string_equal(back.init_from, "runs/a/best.safetensors");
    assert_int_equal(back.init_from_bytes, 123456);
    assert_true(back.init_from_fnv1a64 == 0xfedcba9876543210ull);
    const char *old = "{\"batch\": 4, \"steps\": 10, \"epochs\": 1, \"warmup\": 2, \"accum\": 1, \"eval_every\": 5, "
                      "\"log_every\": 1, \"lr\": 0.001, \"min_lr\": 0.0001, \"wd\": 0.01, \"clip\": 1, \"beta1\": 0.9, "
                      "\"beta2\": 0.95, \"eps\": 1e-8, \"out_dir\": \"r\", \"seed\": \"1\"}";
    if (gf_train_opts_from_json(old, "old", &back)) fail_msg("%s", gf_last_error());
    assert_true(back.save_every == 0 && back.patience == 0 && back.decay_from == 0 && !back.init_from[0]);
}

/* A saved run read back (gf_run_read): its config, the trainer's recipe (out_dir the folder), the task's
 * recipe stored beside it (made_from_json), its tokenizer, and the tensors it froze; gf_run_model rebuilds
 * the model with those frozen again, and a resume from it ends where an uninterrupted run does. */
static void test_run_read(void **state) {
    (void)state;
    lm_data d;
    lm_data_make(&d);
    const char *sets[] = {"vocab_size=64", NULL};
    gf_model *ref = tl_make_model("grassmann-tiny", sets, 4), *cut = tl_make_model("grassmann-tiny", sets, 4);
    assert_true(gf_model_freeze(ref, "blocks.0.") > 0 && gf_model_freeze(cut, "blocks.0.") > 0);
    gf_train_opts o;
    run_opts(&o, "straight-frozen", 10);
    if (gf_train(ref, d.train, d.valid, &o, false, NULL, NULL, NULL)) fail_msg("straight: %s", gf_last_error());
    run_opts(&o, "cut-frozen", 10);
    o.stop_at = 4;
    o.made_from_json = "{\"task\": \"lm\", \"corpus\": \"ids\", \"model\": \"grassmann-tiny\", \"seq_len\": 8}";
    gf_tokenizer *bytes = gf_tokenizer_bytes();
    char *tj = gf_tokenizer_to_json(bytes);
    o.tokenizer_json = tj;
    if (gf_train(cut, d.train, d.valid, &o, false, NULL, NULL, NULL)) fail_msg("cut: %s", gf_last_error());
    gf_model_free(cut);
    gf_run_info info;
    if (gf_run_read(tl_tmp_path("cut-frozen"), &info)) fail_msg("read: %s", gf_last_error());
    assert_string_equal(info.train.out_dir, tl_tmp_path("cut-frozen"));
    assert_int_equal(info.train.steps, 10);
    assert_ptr_equal(info.task.task, gf_task_find("lm"));
    assert_string_equal(info.task.corpus, "ids");
    char *sl = gf_task_option_get(&info.task, "seq_len");
    assert_string_equal(sl, "8");
    free(sl);
    assert_non_null(info.tokenizer);
    assert_int_equal(gf_tokenizer_vocab_size(info.tokenizer), 256);
    assert_non_null(info.frozen_json);
    cut = gf_run_model(&info);
    if (!cut) fail_msg("model: %s", gf_last_error());
    assert_int_equal(gf_model_num_trainable(cut), gf_model_num_trainable(ref));
    info.train.tokenizer_json = tj;
    gf_train_result res;
    if (gf_train(cut, d.train, d.valid, &info.train, true, NULL, NULL, &res)) fail_msg("resume: %s", gf_last_error());
    assert_int_equal(res.steps, 10);
    assert_memory_equal(gf_model_params(ref), gf_model_params(cut), (size_t)gf_model_num_params(ref) * sizeof(float));
    gf_run_info_free(&info);
    assert_int_not_equal(gf_run_read(tl_tmp_path("no-such-run"), &info), 0);
    assert_non_null(strstr(gf_last_error(), "state.safetensors"));
    free(tj);
    gf_tokenizer_free(bytes);
    gf_model_free(ref);
    gf_model_free(cut);
    lm_data_free(&d);
}

/* A new run in a folder that holds a run is refused, naming what is there, and leaves it as it was;
 * with overwrite it starts again there. */
static void test_train_refuses_a_run(void **state) {
    (void)state;
    lm_data d;
    lm_data_make(&d);
    const char *sets[] = {"vocab_size=64", NULL};
    gf_model *m = tl_make_model("grassmann-tiny", sets, 2);
    gf_train_opts o;
    run_opts(&o, "again", 6);
    o.stop_at = 3;
    if (gf_train(m, d.train, d.valid, &o, false, NULL, NULL, NULL)) fail_msg("first run: %s", gf_last_error());
    const int lines = count_lines(o.out_dir, "step");
    char what[GF_PATH_MAX + 400];
    assert_int_equal(gf_run_dir_holds_run(o.out_dir, what, sizeof what), 1);
    if (!strstr(what, "state.safetensors, last.safetensors, best.safetensors, metrics.jsonl") ||
        !strstr(what, "logged up to step 3"))
        fail_msg("%s", what);
    o.stop_at = 0;
    tl_expect_error(gf_train(m, d.train, d.valid, &o, false, NULL, NULL, NULL), "holds a run");
    const char *other_sets[] = {"vocab_size=64", "rank=4", NULL}; /* resumed with another model: the keys named */
    gf_model *other = tl_make_model("grassmann-tiny", other_sets, 2);
    tl_expect_error(gf_train(other, d.train, d.valid, &o, true, NULL, NULL, NULL), "the saved run has another model "
                 "config than the one given: layers.0.rank 6 vs 4, layers.1.rank 6 vs 4 (the saved run's vs the one given)");
    gf_model_free(other);
    assert_int_equal(count_lines(o.out_dir, "step"), lines); /* metrics.jsonl not truncated */
    gf_train_result res;
    o.overwrite = true;
    if (gf_train(m, d.train, d.valid, &o, false, NULL, NULL, &res)) fail_msg("--force: %s", gf_last_error());
    assert_int_equal(res.steps, 6);
    assert_int_equal(gf_run_dir_holds_run(tl_tmp_path("nothing-here"), what, sizeof what), 0);
    gf_model_free(m);
    lm_data_free(&d);
}

/* A resume notices that its data changed since the state was saved (one token of the training text, or a
 * shorter validation text) and refuses, unless told to go on; a --stop-at at or before the saved step is
 * refused. */
static void test_resume_data_changed(void **state) {
    (void)state;
    lm_data d, e;
    lm_data_make(&d);
    const char *sets[] = {"vocab_size=64", NULL};
    gf_model *m = tl_make_model("grassmann-tiny", sets, 2);
    gf_train_opts o;
    run_opts(&o, "changed", 9);
    o.stop_at = 4;
    if (gf_train(m, d.train, d.valid, &o, false, NULL, NULL, NULL)) fail_msg("first run: %s", gf_last_error());
    memcpy(e.ids, d.ids, sizeof e.ids);
    e.ids[123] = (e.ids[123] + 1) % 64;
    e.train = gf_block_source_create(e.ids, 500, 8, 3);
    e.valid = gf_block_source_create(e.ids + 500, 100, 8, 3);
    o.stop_at = 0;
    tl_expect_error(gf_train(m, e.train, d.valid, &o, true, NULL, NULL, NULL),
                 "the data changed since this run was saved: the training split had 55 examples, now 55 examples of "
                 "other content");
    gf_source *short_valid = gf_block_source_create(d.ids + 500, 60, 8, 3);
    tl_expect_error(gf_train(m, d.train, short_valid, &o, true, NULL, NULL, NULL), "the validation split had");
    o.stop_at = 4;
    tl_expect_error(gf_train(m, d.train, d.valid, &o, true, NULL, NULL, NULL), "--stop-at 4: the run in");
    o.stop_at = 0;
    o.accept_changed_data = true;
    gf_train_result res;
    if (gf_train(m, e.train, d.valid, &o, true, NULL, NULL, &res)) fail_msg("accepted change: %s", gf_last_error());
    assert_int_equal(res.steps, 9);
    gf_source_free(short_valid);
    lm_data_free(&e);
    gf_model_free(m);
    lm_data_free(&d);
}

/* A user's source that sets only the fields it has, one by one (no mask, token types or features): the
 * library zeroes the batch before each fill, so they are NULL, not what the stack held. */
static int32_t one_by_one_ids[64];
static int64_t obo_n(void *ctx) { (void)ctx; return 8; }
static int obo_fill(void *ctx, int64_t epoch, int64_t first, int64_t n, gf_batch *b) {
    (void)ctx;
    (void)epoch;
    b->B = n;
    b->T = 7;
    b->ids = one_by_one_ids + first;
    b->targets = one_by_one_ids + first + 1;
    b->n_targets = n * 7;
    return 0;
}

static void test_fill_zeroed(void **state) {
    (void)state;
    for (int i = 0; i < 64; i++) one_by_one_ids[i] = (int32_t)(gf_rand64(5, (uint64_t)i) % 64);
    gf_source src = {.version = 1, .n_examples = obo_n, .fill = obo_fill};
    gf_batch b;
    memset(&b, 0xAB, sizeof b); /* what an uninitialised batch may hold */
    assert_int_equal(gf_source_fill(&src, 0, 1, 1, &b), 0);
    assert_null(b.mask);
    assert_null(b.segments);
    assert_null(b.features);
    assert_null(b.vectors);
    memset(&b, 0xAB, sizeof b);
    assert_int_equal(gf_source_fill_eval(&src, 0, 2, &b), 0); /* no fill_eval: fill's epoch-0 order */
    assert_true(b.B == 2 && !b.mask && !b.features);
    assert_int_equal(gf_source_n_eval(&src), 8);
    const char *sets[] = {"vocab_size=64", NULL};
    gf_model *m = tl_make_model("grassmann-tiny", sets, 2);
    gf_train_opts o;
    run_opts(&o, "one-by-one", 3);
    gf_train_result res;
    if (gf_train(m, &src, &src, &o, false, NULL, NULL, &res)) fail_msg("train: %s", gf_last_error());
    assert_int_equal(res.steps, 3);
    gf_model_free(m);
}

/* Sources the library cannot use are refused with a message that names them. */
static void test_bad_sources(void **state) {
    (void)state;
    lm_data d;
    lm_data_make(&d);
    const char *sets[] = {"vocab_size=64", NULL};
    gf_model *m = tl_make_model("grassmann-tiny", sets, 2);
    gf_train_opts o;
    run_opts(&o, "bad", 2);
    gf_source future = *d.valid;
    future.version = GF_SOURCE_VERSION + 1;
    tl_expect_error(gf_train(m, d.train, &future, &o, false, NULL, NULL, NULL),
                 "the validation source has version 2; this library reads versions 1 to 1");
    gf_source half = *d.train;
    half.fill_eval = NULL;
    tl_expect_error(gf_evaluate(m, &half, 4, &(double){0}, NULL), "sets one of n_eval_examples and fill_eval");
    half = *d.train;
    half.fill = NULL;
    tl_expect_error(gf_train(m, &half, d.valid, &o, false, NULL, NULL, NULL),
                 "the training source lacks n_examples or fill");
    gf_model_free(m);
    lm_data_free(&d);
}

/* JSON has no inf or NaN: gf_json_num writes null for them, and metrics.jsonl goes through it. */
static void test_json_numbers(void **state) {
    (void)state;
    assert_string_equal(gf_json_num(INFINITY, 'f', 4).s, "null");
    assert_string_equal(gf_json_num(-INFINITY, 'g', 9).s, "null");
    assert_string_equal(gf_json_num(NAN, 'g', 9).s, "null");
    assert_string_equal(gf_json_num(1.5, 'f', 2).s, "1.50");
    assert_string_equal(gf_json_num(2314.94678, 'g', 9).s, "2314.94678");
    assert_string_equal(gf_json_num(1e300, 'f', 6).s, "1.0000000000000001e+300"); /* not 301 digits, not cut */
    char path[700];
    snprintf(path, sizeof path, "%s", tl_tmp_path("str.json"));
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    gf_json_put_str(f, "a\"b\\c\n\x01");
    fclose(f);
    char buf[128] = "";
    f = fopen(path, "r");
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    assert_string_equal(buf, "\"a\\\"b\\\\c\\u000a\\u0001\"");
}

/* A diverged evaluation (val_ppl inf, best inf) is written with null; a full disk is an error. */
static void test_metrics_line(void **state) {
    (void)state;
    char path[700];
    snprintf(path, sizeof path, "%s", tl_tmp_path("metrics.jsonl"));
    gf_run_dir r = {.dir = "RUN", .metrics = fopen(path, "w"), .lock_fd = -1, .metric = &gf_metric_ppl};
    assert_non_null(r.metrics);
    snprintf(r.counted, sizeof r.counted, "tokens");
    gf_train_event e = {.kind = GF_EV_EVAL, .step = 10, .val_loss = 2000.0, .val_ppl = INFINITY,
                        .best_val_loss = INFINITY, .val_acc = NAN, .epochs = 0.5, .seen = 1280, .run_elapsed_s = 2.5,
                        .val_score = INFINITY};
    assert_int_equal(gf_run_metrics_line(&r, &e), 0);
    fclose(r.metrics);
    char line[256] = "";
    FILE *f = fopen(path, "r");
    assert_non_null(fgets(line, sizeof line, f));
    fclose(f);
    assert_string_equal(line, "{\"type\": \"eval\", \"step\": 10, \"epoch\": 0.500000, \"tokens\": 1280, \"elapsed_s\": "
                              "2.500, \"val_loss\": 2000.000000, \"val_ppl\": null, \"best_val_loss\": null, "
                              "\"is_best\": false}\n");
    r.metrics = fopen("/dev/full", "w");
    if (!r.metrics) skip();
    e = (gf_train_event){.kind = GF_EV_STEP, .step = 1, .loss = 4.0};
    assert_int_equal(gf_run_metrics_line(&r, &e), -1);
    assert_non_null(strstr(gf_last_error(), "cannot write RUN/metrics.jsonl: No space left on device"));
    fclose(r.metrics);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* gf_metrics_read: rows of this version (their type, epoch, count in the unit the start row names, time),
 * rows of older files (typed by their keys; what they lack is NAN), a null loss; a corrupt line (a step past
 * 2^53, a string where a number goes) is an error naming the file and the line. */
static void test_metrics_read(void **state) {
    (void)state;
    char dir[700], path[800];
    snprintf(dir, sizeof dir, "%s", tl_tmp_path("metrics-read"));
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    write_text(path, "{\"step\": 2, \"epoch\": 0, \"loss\": 4.1, \"lr\": 0.0003, \"grad_norm\": 1, \"tokens_per_s\": 9, "
                     "\"elapsed_s\": 0.5}\n{\"step\": 2, \"val_loss\": 4.0, \"val_ppl\": 54.6, \"best_val_loss\": 4.0, "
                     "\"is_best\": true}\n\n"
                     "{\"type\": \"start\", \"step\": 2, \"epoch\": 0.5, \"pairs\": 64, \"elapsed_s\": 0.6, \"counted\": "
                     "\"pairs\", \"metric\": \"accuracy\", \"resumed\": true}\n"
                     "{\"type\": \"train\", \"step\": 4, \"epoch\": 1.0, \"pairs\": 128, \"elapsed_s\": 1.25, \"loss\": null, "
                     "\"lr\": 0.0002}\n{\"type\": \"eval\", \"step\": 4, \"epoch\": 1.0, \"pairs\": 128, \"elapsed_s\": 1.5, "
                     "\"val_loss\": 0.9, \"val_acc\": 0.75}\n");
    gf_metrics m;
    if (gf_metrics_read(dir, &m)) fail_msg("%s", gf_last_error());
    assert_int_equal(m.n, 5);
    assert_true(m.legacy);
    assert_string_equal(m.counted, "pairs");
    assert_string_equal(m.metric, "accuracy");
    const gf_metrics_row *r = m.rows;
    assert_string_equal(r[0].type, "train");
    assert_true(r[0].step == 2 && r[0].loss == 4.1 && r[0].elapsed_s == 0.5 && isnan(r[0].seen));
    assert_string_equal(r[1].type, "eval");
    assert_true(r[1].loss == 4.0 && r[1].score == 54.6 && isnan(r[1].elapsed_s) && isnan(r[1].epoch));
    assert_string_equal(r[2].type, "start");
    assert_true(r[3].step == 4 && r[3].epoch == 1.0 && r[3].seen == 128 && r[3].elapsed_s == 1.25 && isnan(r[3].loss));
    assert_true(r[4].loss == 0.9 && r[4].score == 0.75 && r[4].seen == 128);
    gf_metrics_free(&m);
    write_text(path, "{\"type\": \"train\", \"step\": 1, \"loss\": 2}\n{\"type\": \"train\", \"step\": 2, \"lo");
    assert_int_equal(gf_metrics_read(dir, &m), -1);
    assert_non_null(strstr(gf_last_error(), "metrics.jsonl, line 2: not JSON"));
    assert_null(m.rows);
    write_text(path, "[1, 2]\n");
    assert_int_equal(gf_metrics_read(dir, &m), -1);
    assert_non_null(strstr(gf_last_error(), "line 1: not a JSON object"));
    write_text(path, "{\"loss\": 2}\n");
    assert_int_equal(gf_metrics_read(dir, &m), -1);
    assert_non_null(strstr(gf_last_error(), "line 1: no \"step\""));
    write_text(path, "{\"type\": \"train\", \"step\": 1e300, \"loss\": 2}\n"); /* not an int64_t: refused, not cast */
    assert_int_equal(gf_metrics_read(dir, &m), -1);
    assert_non_null(strstr(gf_last_error(), "line 1: no \"step\""));
    write_text(path, "{\"type\": \"train\", \"step\": 1, \"loss\": 2}\n{\"type\": \"train\", \"step\": 2, \"loss\": \"3.2\"}\n");
    assert_int_equal(gf_metrics_read(dir, &m), -1); /* a string where a number goes: refused, not skipped */
    assert_non_null(strstr(gf_last_error(), "line 2: \"loss\" is not a number"));
    write_text(path, "{\"type\": \"start\", \"step\": 0, \"counted\": \"pairs\"}\n{\"type\": \"eval\", \"step\": 2, \"pairs\": true}\n");
    assert_int_equal(gf_metrics_read(dir, &m), -1);
    assert_non_null(strstr(gf_last_error(), "line 2: \"pairs\" is not a number"));
    assert_int_equal(gf_metrics_read(tl_tmp_path("no-such-run"), &m), -1);
    assert_non_null(strstr(gf_last_error(), "no-such-run/metrics.jsonl"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_lm_blocks, pool_teardown),
        cmocka_unit_test_teardown(test_lm_order_pinned, pool_teardown),
        cmocka_unit_test_teardown(test_lm_jump, pool_teardown),
        cmocka_unit_test_teardown(test_lm_eval_blocks, pool_teardown),
        cmocka_unit_test_teardown(test_lm_eval_chunks, pool_teardown),
        cmocka_unit_test_teardown(test_lm_errors, pool_teardown),
        cmocka_unit_test_teardown(test_evaluate, pool_teardown),
        cmocka_unit_test_teardown(test_step_accumulation, pool_teardown),
        cmocka_unit_test_teardown(test_step_nonfinite, pool_teardown),
        cmocka_unit_test_teardown(test_step_norm_threads, pool_teardown),
        cmocka_unit_test_teardown(test_train_nonfinite_policy, pool_teardown),
        cmocka_unit_test_teardown(test_train_resume, pool_teardown),
        cmocka_unit_test_teardown(test_train_extend, pool_teardown),
        cmocka_unit_test(test_train_lr_and_recipe),
        cmocka_unit_test_teardown(test_run_read, pool_teardown),
        cmocka_unit_test_teardown(test_train_refuses_a_run, pool_teardown),
        cmocka_unit_test_teardown(test_resume_data_changed, pool_teardown),
        cmocka_unit_test_teardown(test_fill_zeroed, pool_teardown),
        cmocka_unit_test_teardown(test_bad_sources, pool_teardown),
        cmocka_unit_test(test_json_numbers),
        cmocka_unit_test(test_metrics_line),
        cmocka_unit_test(test_metrics_read),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    pool_release();
    return rc;
}
