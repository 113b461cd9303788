/* Evaluation: the target-weighted mean loss of a model over a source's evaluation examples. */
#include "core/error.h"
#include "tasks/source.h"

int gf_evaluate(gf_model *m, gf_source *src, int64_t batch, double *mean_loss, int64_t *n_counted) {
    if (gf_source_validate(src, "the evaluation source")) return -1;
    if (batch < 1)
        return gf_fail("evaluation: batch is %lld; expected at least 1 example per forward pass", (long long)batch);
    if (src->check && src->check(src->ctx, m, GF_USE_EVAL)) return -1;
    const int64_t n = gf_source_n_eval(src);
    gf_model_set_training(m, false, 0, 0);
    double total = 0.0;
    int64_t counted = 0;
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
    }
    if (!counted)
        return gf_fail("evaluation: the source's %lld examples hold no counted targets; expected at least one",
                       (long long)n);
    *mean_loss = total / (double)counted;
    if (n_counted) *n_counted = counted;
    return 0;
}
