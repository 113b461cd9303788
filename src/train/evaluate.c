/* Evaluation: the target-weighted mean loss of a model over a source's evaluation examples. */
#include <string.h>

#include "core/error.h"
#include "core/mem.h"
#include "sources/source.h"

/* At most `batch` examples per forward, and fewer when their activations would pass a quarter of the
 * memory the process can have (one example at the least): cost follows the machine, not the flag. */
static int64_t fit_batch(gf_model *m, gf_source *src, int64_t batch) {
    gf_batch b;
    if (batch == 1 || gf_source_fill_eval(src, 0, 1, &b)) return batch;
    const size_t row = gf_model_forward_bytes(m, 1, b.T), budget = (size_t)(gf_mem_limit() / 4);
    const int64_t fit = row ? (int64_t)(budget / row) : batch;
    return fit < 1 ? 1 : fit < batch ? fit : batch;
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

int gf_evaluate_result(gf_model *m, gf_source *src, int64_t batch, gf_eval_result *r) {
    if (gf_source_validate(src, "the evaluation source")) return -1;
    if (batch < 1)
        return gf_fail("evaluation: batch is %lld; expected at least 1 example per forward pass", (long long)batch);
    if (src->check && src->check(src->ctx, m, GF_USE_EVAL)) return -1;
    const int64_t n = gf_source_n_eval(src), nc = gf_model_predicts_next_token(m) ? 0 : gf_model_n_outputs(m);
    if (n > 0) batch = fit_batch(m, src, batch);
    if (r->confusion) memset(r->confusion, 0, (size_t)(nc * nc) * sizeof *r->confusion);
    gf_model_set_training(m, false, 0, 0);
    double total = 0.0;
    int64_t counted = 0, correct = nc ? 0 : -1;
    for (int64_t k = 0; k < n; k += batch) {
        gf_batch b;
        float loss;
        if (gf_source_fill_eval(src, k, n - k < batch ? n - k : batch, &b) ||
            gf_batch_check(&b, true, "the evaluation source"))
            return -1;
        if (!b.n_targets) continue;
        if (gf_model_forward_batch(m, &b, &loss)) return -1;
        total += (double)loss * (double)b.n_targets;
        counted += b.n_targets;
        if (nc) correct += gf_model_correct(m);
        if (nc && r->confusion) tally(m, &b, nc, r);
    }
    if (!counted)
        return gf_fail("evaluation: the source's %lld examples hold no counted targets; expected at least one",
                       (long long)n);
    r->mean_loss = total / (double)counted;
    r->n_counted = counted;
    r->n_correct = correct;
    return 0;
}

int gf_evaluate(gf_model *m, gf_source *src, int64_t batch, double *mean_loss, int64_t *n_counted) {
    gf_eval_result r = {0};
    if (gf_evaluate_result(m, src, batch, &r)) return -1;
    *mean_loss = r.mean_loss;
    if (n_counted) *n_counted = r.n_counted;
    return 0;
}
