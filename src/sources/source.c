/* What every data source shares: validation of the interface, the evaluation fallback, the shuffle. */
#include "sources/source.h"

#include "base/error.h"
#include "base/rng.h"

void gf_source_free(gf_source *s) {
    if (s && s->destroy) s->destroy(s);
}

void gf_epoch_order(int64_t *perm, int64_t n, uint64_t seed, int64_t epoch) {
    uint64_t key = gf_key(gf_key(seed, 0xDA7A5EEDull), (uint64_t)epoch);
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(gf_rand64(key, (uint64_t)i) % (uint64_t)(i + 1));
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

int gf_source_range(const char *what, int64_t first, int64_t n, int64_t count) {
    if (first < 0 || n < 1 || first > count - n)
        return gf_fail("%s examples [%lld, %lld) asked for; expected first >= 0, n >= 1 and first + n <= %lld (the "
                       "examples it holds)", what, (long long)first, (long long)(first + n), (long long)count);
    return 0;
}

int gf_epoch_perm(const char *what, int64_t *perm, int64_t *cached, int64_t n, uint64_t seed, int64_t epoch) {
    if (epoch < 0) return gf_fail("%s: epoch %lld asked for; expected an epoch >= 0", what, (long long)epoch);
    if (epoch != *cached) {
        gf_epoch_order(perm, n, seed, epoch);
        *cached = epoch;
    }
    return 0;
}

int gf_source_validate(const gf_source *s, const char *what) {
    if (!s) return gf_fail("%s is NULL; expected a data source (e.g. gf_block_source_create)", what);
    if (s->version < 1 || s->version > GF_SOURCE_VERSION)
        return gf_fail("%s has version %d; this library reads versions 1 to %d (GF_SOURCE_VERSION)", what,
                       s->version, GF_SOURCE_VERSION);
    if (!s->n_examples || !s->fill) return gf_fail("%s lacks n_examples or fill; expected both", what);
    if (!s->n_eval_examples != !s->fill_eval)
        return gf_fail("%s sets one of n_eval_examples and fill_eval; expected both or neither", what);
    return 0;
}

int64_t gf_source_n_eval(gf_source *s) {
    return s->n_eval_examples ? s->n_eval_examples(s->ctx) : s->n_examples(s->ctx);
}

int gf_source_fill(gf_source *s, int64_t epoch, int64_t first, int64_t n, gf_batch *batch) {
    *batch = (gf_batch){0}; /* a source that sets fields one by one leaves the rest NULL, not garbage */
    return s->fill(s->ctx, epoch, first, n, batch);
}

int gf_source_fill_eval(gf_source *s, int64_t first, int64_t n, gf_batch *batch) {
    *batch = (gf_batch){0};
    return s->fill_eval ? s->fill_eval(s->ctx, first, n, batch) : s->fill(s->ctx, 0, first, n, batch);
}

int gf_batch_check(const gf_batch *b, bool need_targets, const char *what) {
    if (b->B < 1 || b->T < 1 || (!b->ids && !b->vectors) || (need_targets && !b->targets) || b->n_targets < 0 ||
        b->n_targets > b->B * b->T)
        return gf_fail("%s filled a batch of %lld x %lld with ids %s, targets %s and %lld counted targets; expected "
                       "B, T >= 1, ids (or vectors)%s and 0 <= n_targets <= B*T", what, (long long)b->B, (long long)b->T,
                       b->ids ? "set" : "NULL", b->targets ? "set" : "NULL", (long long)b->n_targets,
                       need_targets ? " and targets set" : " set");
    return 0;
}
