/* Evaluation: the target-weighted mean loss of a model over a source's evaluation examples. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dist/comm.h"
#include "base/error.h"
#include "base/mem.h"
#include "model/model_internal.h"
#include "sources/source.h"
#include "train/trainer.h"

/* At most `batch` examples per forward, and fewer when their activations would pass a quarter of the
 * memory the process can have (one example at the least): cost follows the machine, not the flag. */
static int64_t fit_batch(gf_model *m, gf_source *src, int64_t batch) {
    gf_batch b;
    if (batch == 1 || gf_source_fill_eval(src, 0, 1, &b)) return batch;
    const size_t row = gf_model_forward_bytes(m, 1, b.T), budget = (size_t)(gf_mem_limit() / 4);
    const int64_t fit = row ? (int64_t)(budget / row) : batch;
    return fit < 1 ? 1 : fit < batch ? fit : batch;
}

/* A data-parallel evaluation: the ranks compare the model (its config and weights) and the evaluation (its
 * batch and examples, a hash of every batch) before they share the batches out and add up their sums, whose
 * sizes come from them (gf_dist_agree; nothing to compare with one process). */
static int agree(gf_model *m, gf_source *src, int64_t batch) {
    if (gf_comm_size() == 1) return 0;
    const int64_t n = gf_source_n_eval(src);
    uint64_t h = 0;
    for (int64_t k = 0; batch > 0 && k < n; k += batch) {
        gf_batch b;
        if (gf_source_fill_eval(src, k, n - k < batch ? n - k : batch, &b)) return -1;
        h = gf_model_batch_hash(m, &b, h);
    }
    char *cfg = gf_config_to_json(gf_model_config(m), false);
    if (!cfg) return gf_fail("out of memory comparing the ranks' evaluations");
    const gf_agree_item items[] = {
        {.group = "model", .label = "parameters", .kind = GF_AGREE_INT, .i = gf_model_num_params(m)},
        {.group = "model", .label = "config (a hash of its JSON)", .kind = GF_AGREE_HASH, .h = gf_dist_hash(cfg, strlen(cfg), 0)},
        {.group = "model", .label = "weights (a hash)", .kind = GF_AGREE_HASH,
         .h = gf_dist_hash(gf_model_params(m), (size_t)gf_model_num_params(m) * sizeof(float), 0)},
        {.group = "evaluation", .label = "split", .unit = "examples", .kind = GF_AGREE_INT, .i = n},
        {.group = "evaluation", .label = "data (a hash of its batches)", .kind = GF_AGREE_HASH, .h = h},
        {.group = "evaluation", .label = "--batch", .kind = GF_AGREE_INT, .i = batch},
    };
    free(cfg);
    return gf_dist_agree("evaluation", items, (int)(sizeof items / sizeof *items));
}

/* The argmax of each row's logits against its target, into r's counts. */
static void tally(const gf_model *m, const gf_batch *b, int64_t n_classes, gf_eval_result *r) {
    const float *lg = gf_model_logits(m);
    for (int64_t i = 0; i < b->B; i++) {
        if (b->targets[i] < 0) continue;
        int64_t best = 0;
        for (int64_t c = 1; c < n_classes; c++) best = lg[i * n_classes + c] > lg[i * n_classes + best] ? c : best;
        r->confusion[b->targets[i] * n_classes + best]++;
    }
}

/* What is done with each evaluation batch after its forward pass (first: its first example's index). */
typedef int (*batch_fn)(gf_model *m, const gf_batch *b, int64_t first, float loss, void *ctx);

/* Every evaluation batch of src through m, dropout off, as gf_evaluate_result and gf_predict both take them:
 * at most `batch` examples each (fewer when memory asks, fit_batch: rank 0's choice in a data-parallel job),
 * in order; a batch with no counted target is skipped unless all. shard: in a data-parallel job, this rank
 * takes batches rank, rank + N, ... of them (the same batches one process makes), after the ranks agree on
 * the model and the batches (agree_first; a training run agreed on them as it started). fn's non-zero value
 * stops the walk and is returned. */
static int walk(gf_model *m, gf_source *src, int64_t batch, bool all, bool shard, bool agree_first, batch_fn fn,
                void *ctx) {
    if (gf_source_validate(src, "the evaluation source")) return -1;
    if (batch < 1)
        return gf_fail("evaluation: batch is %lld; expected at least 1 example per forward pass", (long long)batch);
    if (src->check && src->check(src->ctx, m, GF_USE_EVAL)) return -1;
    const int64_t n = gf_source_n_eval(src);
    if (shard && agree_first && agree(m, src, batch)) return -1;
    if (n > 0) batch = fit_batch(m, src, batch);
    if (shard && gf_comm_bcast(&batch, sizeof batch, 0)) return -1;
    const int64_t me = shard ? gf_comm_rank() : 0, np = shard ? gf_comm_size() : 1;
    gf_model_set_training(m, false, 0, 0);
    for (int64_t k = me * batch; k < n; k += np * batch) {
        gf_batch b;
        float loss;
        if (gf_source_fill_eval(src, k, n - k < batch ? n - k : batch, &b) ||
            gf_batch_check(&b, true, "the evaluation source"))
            return -1;
        if (!b.n_targets && !all) continue;
        if (gf_model_forward_batch(m, &b, &loss)) return -1;
        const int rc = fn(m, &b, k, loss, ctx);
        if (rc) return rc;
    }
    return 0;
}

/* Each batch's loss sum, counted targets and correct answers, by its first example (index first): one
 * process fills them all, a rank of a data-parallel job its own batches (the others stay 0). */
typedef struct {
    gf_eval_result *r;
    int64_t nc, n;
    double *total; /* n entries each: an entry per example index a batch can start at */
    int64_t *counted, *correct;
} eval_sums;

static int add_batch(gf_model *m, const gf_batch *b, int64_t first, float loss, void *ctx) {
    eval_sums *e = ctx;
    e->total[first] = (double)loss * (double)b->n_targets; /* exact: a float times an integer below 2^29 */
    e->counted[first] = b->n_targets;
    if (e->nc) e->correct[first] = gf_model_correct(m);
    if (e->nc && e->r->confusion) tally(m, b, e->nc, e->r);
    return 0;
}

/* The ranks' entries put together (each entry has one rank's value and the others' zeros, so the sums are
 * exact), then summed in the examples' order: the same double, bit for bit, on any number of ranks. */
static int eval_total(eval_sums *e, double *total, int64_t *counted, int64_t *correct) {
    const int64_t n = e->n;
    if (gf_comm_size() > 1 && (gf_comm_sum_f64(e->total, n) || gf_comm_sum_i64(e->counted, n) ||
                               gf_comm_sum_i64(e->correct, n) ||
                               (e->nc && e->r->confusion && gf_comm_sum_i64(e->r->confusion, e->nc * e->nc))))
        return -1;
    *total = 0.0, *counted = 0, *correct = e->nc ? 0 : -1;
    for (int64_t i = 0; i < n; i++) {
        if (!e->counted[i]) continue;
        *total += e->total[i];
        *counted += e->counted[i];
        if (e->nc) *correct += e->correct[i];
    }
    return 0;
}

static int evaluate(gf_model *m, gf_source *src, int64_t batch, bool agree_first, gf_eval_result *r) {
    const int64_t nc = gf_model_predicts_next_token(m) ? 0 : gf_model_n_outputs(m);
    if (r->confusion) memset(r->confusion, 0, (size_t)(nc * nc) * sizeof *r->confusion);
    const int64_t n = gf_source_n_eval(src) > 0 ? gf_source_n_eval(src) : 1;
    eval_sums e = {.r = r, .nc = nc, .n = n, .total = calloc((size_t)n, sizeof(double)),
                   .counted = calloc((size_t)n, sizeof(int64_t)), .correct = calloc((size_t)n, sizeof(int64_t))};
    double total = 0.0;
    int64_t counted = 0, correct = 0;
    int rc = !e.total || !e.counted || !e.correct
                 ? gf_fail("evaluation: no memory for the sums of %lld examples", (long long)n)
                 : walk(m, src, batch, false, true, agree_first, add_batch, &e) || eval_total(&e, &total, &counted, &correct)
                 ? -1 : 0;
    free(e.total), free(e.counted), free(e.correct);
    if (rc) return -1;
    if (!counted)
        return gf_fail("evaluation: the source's %lld examples hold no counted targets; expected at least one",
                       (long long)gf_source_n_eval(src));
    r->mean_loss = total / (double)counted;
    r->n_counted = counted;
    r->n_correct = correct;
    return 0;
}

int gf_evaluate_result(gf_model *m, gf_source *src, int64_t batch, gf_eval_result *r) {
    return evaluate(m, src, batch, true, r);
}

int gf_evaluate_in_run(gf_model *m, gf_source *src, int64_t batch, gf_eval_result *r) {
    return evaluate(m, src, batch, false, r);
}

typedef struct {
    gf_predict_cb cb;
    void *ctx;
    double *probs;
} predict_state;

/* Row i's prediction: the first largest logit (as the head and tally count it), the softmax in double. */
static void predict_row(const float *lg, int64_t C, double *probs, gf_prediction *p) {
    int64_t best = 0;
    for (int64_t c = 1; c < C; c++) best = lg[c] > lg[best] ? c : best;
    double sum = 0.0;
    for (int64_t c = 0; c < C; c++) sum += probs[c] = exp((double)lg[c] - (double)lg[best]);
    for (int64_t c = 0; c < C; c++) probs[c] /= sum;
    p->label = (int32_t)best;
    p->n_classes = C;
    p->probs = probs;
    p->logits = lg;
}

static int predict_batch(gf_model *m, const gf_batch *b, int64_t first, float loss, void *ctx) {
    (void)loss;
    predict_state *st = ctx;
    const int64_t C = gf_model_n_outputs(m);
    const float *lg = gf_model_logits(m);
    for (int64_t i = 0; i < b->B; i++) {
        gf_prediction p = {.index = first + i, .gold = b->targets[i], .ids = b->ids ? b->ids + i * b->T : NULL,
                           .segments = b->segments ? b->segments + i * b->T : NULL, .n_ids = b->T};
        while (b->mask && p.n_ids > 0 && !b->mask[i * b->T + p.n_ids - 1]) p.n_ids--; /* padding is not read */
        predict_row(lg + i * C, C, st->probs, &p);
        const int rc = st->cb(&p, st->ctx);
        if (rc) return rc;
    }
    return 0;
}

int gf_predict(gf_model *m, gf_source *src, int64_t batch, gf_predict_cb cb, void *ctx) {
    if (gf_model_predicts_next_token(m))
        return gf_fail("gf_predict: the model predicts next tokens (head %s); expected a classifier (head classify)",
                       gf_model_config(m)->head_kind);
    predict_state st = {.cb = cb, .ctx = ctx, .probs = malloc((size_t)gf_model_n_outputs(m) * sizeof(double))};
    if (!st.probs) return gf_fail("gf_predict: out of memory");
    const int rc = walk(m, src, batch, true, false, false, predict_batch, &st);
    free(st.probs);
    return rc < 0 ? -1 : 0;
}

int gf_evaluate(gf_model *m, gf_source *src, int64_t batch, double *mean_loss, int64_t *n_counted) {
    gf_eval_result r = {0};
    if (gf_evaluate_result(m, src, batch, &r)) return -1;
    *mean_loss = r.mean_loss;
    if (n_counted) *n_counted = r.n_counted;
    return 0;
}
