/* The sampler: greedy, temperature, top-k, top-p, with a counter-based generator.
 *
 * The tokens are those of the naive reference (gf_sample_reference: sort all V candidates, sum their p in
 * that order, cut, draw), bit for bit, without its O(V log V) sort:
 *   - top-k (k < V) selects the first k candidates in O(V) (quickselect) and sorts only those; the sums and
 *     the draw then run on the same k candidates in the same order as the reference's.
 *   - otherwise the top-p cut and the draw are both "the first candidate in the order at which the running
 *     sum of p passes a target", found by a weighted quickselect in O(V) expected, no sort at all. Its sums
 *     are taken in another order than the reference's, so they differ from the reference's by rounding,
 *     at most (n + 1) 2^-53 of the total for each n-term sum. A decision is taken only when its target
 *     is farther than a margin of 16 (V + 2) 2^-53 of the total from both sides of the candidate's slice of
 *     the running sum, which covers every one of those roundings; closer than that (rare), the sampler
 *     falls back to the reference's sort. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "base/error.h"
#include "base/rng.h"
#include "infer/sample.h"

struct gf_sampler {
    gf_sampler_params p;
    int64_t V;
    uint64_t key, counter, fallbacks;
    gf_sample_cand *buf;   /* (V) */
};

uint64_t gf_sampler_key(uint64_t seed) { return gf_key(seed, 0x5A3D1E); }

gf_sampler_params gf_sampler_params_default(void) {
    return (gf_sampler_params){.temperature = 1.0, .top_k = 0, .top_p = 1.0, .seed = 1234};
}

gf_sampler *gf_sampler_create(int64_t vocab_size, gf_sampler_params p) {
    if (vocab_size < 1 || vocab_size > INT32_MAX) {
        gf_fail("sampler: vocab_size %lld; expected 1 to %d", (long long)vocab_size, INT32_MAX);
        return NULL;
    }
    if (!(p.temperature >= 0.0 && isfinite(p.temperature)) || p.top_k < 0 || !(p.top_p > 0.0 && p.top_p <= 1.0)) {
        gf_fail("sampler: temperature %g, top_k %lld, top_p %g; expected a finite temperature >= 0 (0 = greedy), "
                "top_k >= 0 (0 = all) and top_p in (0, 1] (1 = all)", p.temperature, (long long)p.top_k, p.top_p);
        return NULL;
    }
    gf_sampler *s = calloc(1, sizeof *s);
    if (!s || !(s->buf = malloc((size_t)vocab_size * sizeof *s->buf))) {
        free(s);
        gf_fail("sampler: out of memory for %lld candidates", (long long)vocab_size);
        return NULL;
    }
    s->p = p;
    s->V = vocab_size;
    s->key = gf_sampler_key(p.seed);
    return s;
}

void gf_sampler_free(gf_sampler *s) {
    if (!s) return;
    free(s->buf);
    free(s);
}

int64_t gf_sampler_fallbacks(const gf_sampler *s) { return (int64_t)s->fallbacks; }

/* ---- what the reference and the fast path share ---------------------------------------------------- */

/* The order: larger p first, ties by smaller id. */
static int by_order(const void *a, const void *b) {
    float x = ((const gf_sample_cand *)a)->p, y = ((const gf_sample_cand *)b)->p;
    if (x != y) return x < y ? 1 : -1;
    return ((const gf_sample_cand *)a)->id - ((const gf_sample_cand *)b)->id;
}

static inline int precedes(const gf_sample_cand *a, const gf_sample_cand *b) {
    return a->p > b->p || (a->p == b->p && a->id < b->id);
}

static int32_t argmax(const float *logits, int64_t V) {
    int64_t best = 0;
    for (int64_t v = 1; v < V; v++)
        if (logits[v] > logits[best]) best = v;
    return (int32_t)best;
}

/* buf (V) = (exp((logit - max) / temperature), id) for logits (V). */
static void fill(const float *logits, int64_t V, double temperature, gf_sample_cand *buf) {
    float mx = logits[0];
    for (int64_t v = 1; v < V; v++) mx = logits[v] > mx ? logits[v] : mx;
    for (int64_t v = 0; v < V; v++) {
        buf[v].p = expf((float)((logits[v] - mx) / temperature));
        buf[v].id = (int32_t)v;
    }
}

/* The cuts and the draw on buf (n) sorted in the order: the running sums in that order. */
static int32_t finish(const gf_sample_cand *buf, int64_t n, double top_p, float uniform) {
    double total = 0.0;
    for (int64_t i = 0; i < n; i++) total += buf[i].p;
    if (top_p < 1.0) {
        double acc = 0.0;
        int64_t keep = 0;
        while (keep < n) {
            acc += buf[keep++].p / total;
            if (acc >= top_p) break;
        }
        n = keep;
        total = 0.0;
        for (int64_t i = 0; i < n; i++) total += buf[i].p;
    }
    double u = (double)uniform * total, acc = 0.0;
    for (int64_t i = 0; i < n; i++) {
        acc += buf[i].p;
        if (u < acc) return buf[i].id;
    }
    return buf[n - 1].id;
}

int32_t gf_sample_cands_reference(gf_sample_cand *a, int64_t n, int64_t top_k, double top_p, float uniform) {
    qsort(a, (size_t)n, sizeof *a, by_order);
    return finish(a, top_k > 0 && top_k < n ? top_k : n, top_p, uniform);
}

int32_t gf_sample_reference(const float *logits, int64_t V, const gf_sampler_params *p, uint64_t key,
                            uint64_t counter, gf_sample_cand *buf) {
    if (p->temperature <= 0.0) return argmax(logits, V);
    fill(logits, V, p->temperature, buf);
    return gf_sample_cands_reference(buf, V, p->top_k, p->top_p, gf_uniform(key, counter));
}

/* ---- selection without a full sort ---------------------------------------------------------------- */

/* Partition a[lo..hi) around a[piv]: the candidates preceding it first, then it, then the rest. Returns its
 * new index; *mass (if given) = the sum of p over the ones preceding it. */
static int64_t partition(gf_sample_cand *a, int64_t lo, int64_t hi, int64_t piv, double *mass) {
    gf_sample_cand pv = a[piv], tmp;
    a[piv] = a[hi - 1];
    int64_t st = lo;
    double m = 0.0;
    for (int64_t i = lo; i < hi - 1; i++)
        if (precedes(&a[i], &pv)) {
            m += a[i].p;
            tmp = a[i], a[i] = a[st], a[st++] = tmp;
        }
    a[hi - 1] = a[st];
    a[st] = pv;
    if (mass) *mass = m;
    return st;
}

/* A pivot index in [lo, hi) from a small deterministic generator (no input can make every pivot bad). */
static int64_t pick(uint64_t *r, int64_t lo, int64_t hi) {
    *r = gf_mix64(*r);
    return lo + (int64_t)(*r % (uint64_t)(hi - lo));
}

/* Reorder a (n) so that a[0..k) are the first k candidates in the order (unsorted), 0 < k < n. */
static void select_first(gf_sample_cand *a, int64_t n, int64_t k) {
    int64_t lo = 0, hi = n;
    uint64_t r = 0x2545F4914F6CDD1Dull;
    while (lo < k && hi > k) {
        int64_t pos = partition(a, lo, hi, pick(&r, lo, hi), NULL);
        if (pos < k) lo = pos + 1;
        else hi = pos;
    }
}

/* Reorder a (n) so that a[0..i) are, unsorted, the candidates preceding a[i], where a[i] is the first
 * candidate in the order at which the running sum of p exceeds t; *before = the sum over a[0..i) (up to
 * rounding). Returns i, or -1 if the computed sums never exceed t. */
static int64_t crossing(gf_sample_cand *a, int64_t n, double t, double *before) {
    int64_t lo = 0, hi = n;
    double acc = 0.0, g;
    uint64_t r = 0x9E3779B97F4A7C15ull;
    while (hi > lo) {
        int64_t pos = partition(a, lo, hi, pick(&r, lo, hi), &g);
        if (acc + g > t) {
            hi = pos;
        } else if (acc + g + a[pos].p > t) {
            *before = acc + g;
            return pos;
        } else {
            acc += g + a[pos].p;
            lo = pos + 1;
        }
    }
    return -1;
}

/* Whether candidate i (the running sum is `before` just before it, `after` just after) is the one whose
 * slice holds target t beyond doubt: t is more than `margin` inside (before, after]. For i = 0 nothing was
 * compared before it, so only the upper side counts. */
static int decided(int64_t i, double before, double after, double t, double margin) {
    return i >= 0 && after - t > margin && (i == 0 || t - before > margin);
}

/* The top-p cut and the draw on all n candidates of a, or -1 when a decision is too close to call. */
static int32_t sample_weighted(gf_sample_cand *a, int64_t n, double top_p, float uniform) {
    double E = 0.0, before = 0.0;
    for (int64_t i = 0; i < n; i++) E += a[i].p;
    const double margin = 16.0 * (double)(n + 2) * 0x1p-53 * E;
    int64_t m = n;
    double mass = E;
    if (top_p < 1.0) { /* the shortest prefix whose share reaches top_p: a[0..m) */
        double t = top_p * E;
        int64_t j = crossing(a, n, t, &before);
        if (j < 0 || !decided(j, before, before + a[j].p, t, margin)) return -1;
        m = j + 1;
        mass = before + a[j].p;
    }
    double u = (double)uniform * mass;
    int64_t i = crossing(a, m, u, &before);
    if (i < 0 || !decided(i, before, before + a[i].p, u, margin)) return -1;
    return a[i].id;
}

int32_t gf_sample_cands(gf_sample_cand *a, int64_t n, int64_t top_k, double top_p, float uniform, bool *fell_back) {
    *fell_back = false;
    if (top_k > 0 && top_k < n) {
        select_first(a, n, top_k);
        qsort(a, (size_t)top_k, sizeof *a, by_order);
        return finish(a, top_k, top_p, uniform);
    }
    int32_t id = sample_weighted(a, n, top_p, uniform);
    if (id >= 0) return id;
    *fell_back = true;
    qsort(a, (size_t)n, sizeof *a, by_order);
    return finish(a, n, top_p, uniform);
}

int32_t gf_sampler_sample(gf_sampler *s, const float *logits) {
    const int64_t V = s->V;
    for (int64_t v = 0; v < V; v++)
        if (!isfinite(logits[v]))
            return gf_fail("sampler: logit %lld (of %lld) is %g; expected finite logits (a diverged model, or "
                           "logits not written?)", (long long)v, (long long)V, (double)logits[v]);
    const uint64_t counter = s->counter++;
    if (s->p.temperature <= 0.0) return argmax(logits, V);
    fill(logits, V, s->p.temperature, s->buf);
    bool fell_back;
    int32_t id = gf_sample_cands(s->buf, V, s->p.top_k, s->p.top_p, gf_uniform(s->key, counter), &fell_back);
    s->fallbacks += fell_back;
    return id;
}
