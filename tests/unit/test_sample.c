/* The sampler (src/infer/sample.c) against its naive reference (sort all V, running sums in that order):
 * the same token for thousands of random logits, cuts, temperatures and seeds (ties, k >= V, p = 1,
 * temperature 0, V = 1, a 30522-token vocabulary), and for candidates built so that a running sum lands
 * within a few ulps of a cut, where only the exact reproduction of the reference's rounding decides;
 * then frequencies against the distribution, the tie order, seeds, and errors (non-finite logits, bad
 * parameters). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "testlib.h"

#include "base/rng.h"
#include "infer/sample.h"

#define KEY 0xC0FFEEull

static uint64_t rnd(uint64_t *ctr) { return gf_rand64(KEY, (*ctr)++); }
static double runif(uint64_t *ctr) { return (double)(rnd(ctr) >> 11) * 0x1p-53; }

/* logits (V) of one of six shapes: spread, integer ties, all equal, one peak, wide, near FLT_MAX. */
static void make_logits(float *x, int64_t V, int shape, uint64_t *ctr) {
    for (int64_t v = 0; v < V; v++) {
        double u = runif(ctr);
        switch (shape) {
        case 0: x[v] = (float)(10 * u - 5); break;
        case 1: x[v] = (float)(int)(4 * u); break;
        case 2: x[v] = 0.25f; break;
        case 3: x[v] = (float)(4 * u - 2); break;
        case 4: x[v] = (float)(400 * u - 200); break;
        default: x[v] = (float)((u < 0.5 ? -3e38 : 3e38) * runif(ctr)); break;
        }
    }
    if (shape == 3) x[rnd(ctr) % (uint64_t)V] = 15.0f;
}

/* Draw `draws` tokens from the same logits with the sampler and with the reference; they must agree.
 * Returns the draws that went through the weighted selection (no top-k cut, temperature > 0) and adds
 * those that fell back to the full sort to *fallbacks. */
static int64_t compare(const float *logits, int64_t V, gf_sampler_params p, int draws, int64_t *fallbacks,
                       const char *what) {
    gf_sampler *s = gf_sampler_create(V, p);
    assert_non_null(s);
    gf_sample_cand *buf = talloc((size_t)V * sizeof *buf);
    for (int d = 0; d < draws; d++) {
        int32_t got = gf_sampler_sample(s, logits);
        int32_t want = gf_sample_reference(logits, V, &p, gf_sampler_key(p.seed), (uint64_t)d, buf);
        if (got != want)
            fail_msg("%s: V %lld, temperature %g, top_k %lld, top_p %.17g, seed %llu, draw %d: sampler chose %d, "
                     "the reference %d", what, (long long)V, p.temperature, (long long)p.top_k, p.top_p,
                     (unsigned long long)p.seed, d, got, want);
    }
    *fallbacks += gf_sampler_fallbacks(s);
    gf_sampler_free(s);
    return p.temperature > 0 && (p.top_k == 0 || p.top_k >= V) ? draws : 0;
}

static void test_matches_reference(void **state) {
    (void)state;
    static const int64_t Vs[] = {1, 2, 3, 5, 8, 17, 64, 100, 257, 1000, 3000};
    static const double temps[] = {0, 1e-3, 0.3, 1, 1.7, 100};
    static const double tps[] = {1, 1, 1e-9, 0.05, 0.5, 0.9, 0.999999};
    uint64_t ctr = 0;
    int64_t weighted[2] = {0, 0}, fallbacks[2] = {0, 0};
    float *logits = falloc(3000);
    for (int c = 0; c < 3000; c++) {
        int64_t V = Vs[rnd(&ctr) % (c % 10 == 0 ? 11 : 8)];
        make_logits(logits, V, c % 6, &ctr);
        const int64_t ks[] = {0, 0, 1, 2, V / 3, V - 1, V, V + 5};
        gf_sampler_params p = {.temperature = temps[rnd(&ctr) % 6], .top_k = ks[rnd(&ctr) % 8],
                               .top_p = tps[rnd(&ctr) % 7], .seed = rnd(&ctr)};
        int tied = c % 6 == 1 || c % 6 == 2; /* exact ties of sums with the cut are for the full sort */
        weighted[tied] += compare(logits, V, p, 6, &fallbacks[tied], "random logits");
    }
    /* a word-level vocabulary with logits like a trained model's: normal, sd 3 */
    float *big = falloc(30522);
    for (int c = 0; c < 12; c++) {
        for (int64_t v = 0; v < 30522; v++) big[v] = 3.0f * gf_normal(KEY + (uint64_t)c, (uint64_t)v);
        gf_sampler_params p = {.temperature = c % 3 ? 0.8 : 1.0, .top_k = c % 4 == 1 ? 40 : 0,
                               .top_p = c % 2 ? 0.95 : 1.0, .seed = (uint64_t)c};
        weighted[0] += compare(big, 30522, p, 10, &fallbacks[0], "V 30522");
    }
    printf("    draws by weighted selection: %lld of spread logits (%lld fell back to the full sort), %lld of "
           "equal or integer logits (%lld fell back)\n", (long long)weighted[0], (long long)fallbacks[0],
           (long long)weighted[1], (long long)fallbacks[1]);
    /* the fast path must be what is tested, not the fallback */
    assert_true(weighted[0] > 4000 && fallbacks[0] * 100 < weighted[0]);
}

/* Candidates whose running sums sit within a few ulps of the draw's target: 1.0, a tail of random floats
 * over many exponents summing to about 1, and a last candidate scanned ulp by ulp across the point where
 * the exact total is 2. With uniform 0.5 (or top_p 0.5) the first candidate's slice ends at the target. */
static void test_near_ties_of_sums(void **state) {
    (void)state;
    uint64_t ctr = 1000;
    int64_t n_cases = 0, n_fallbacks = 0, n_each[2] = {0, 0};
    gf_sample_cand a[64], b[64];
    for (int trial = 0; trial < 300; trial++) {
        int n = 0;
        long double sum = 1.0L;
        a[n++] = (gf_sample_cand){1.0f, 0};
        while (n < 40 && sum < 1.9L) {
            float x = ldexpf((float)(1 + runif(&ctr)), -(int)(1 + rnd(&ctr) % 36));
            if (sum + x > 1.99L) continue;
            a[n] = (gf_sample_cand){x, n};
            sum += x;
            n++;
        }
        float coarse = (float)(2.0L - sum);
        a[n] = (gf_sample_cand){coarse, n};
        n++;
        float fine = (float)(2.0L - sum - coarse);
        if (!(fine > 0)) continue;
        for (int k = -12; k <= 12; k++) {
            float f = fine;
            for (int j = 0; j < (k < 0 ? -k : k); j++) f = nextafterf(f, k < 0 ? 0.0f : 1.0f);
            a[n] = (gf_sample_cand){f, n};
            for (int i = 0; i <= n; i++) a[i].id = (int32_t)((i * 37 + trial) % (n + 1)); /* ids not in order */
            for (int mode = 0; mode < 2; mode++) {
                double top_p = mode ? 0.5 : 1.0;
                float uniform = mode ? 0.999f : 0.5f;
                bool fell;
                memcpy(b, a, sizeof a);
                int32_t want = gf_sample_cands_reference(b, n + 1, 0, top_p, uniform);
                memcpy(b, a, sizeof a);
                int32_t got = gf_sample_cands(b, n + 1, 0, top_p, uniform, &fell);
                if (got != want)
                    fail_msg("trial %d, scan %d, %s: the sampler chose %d, the reference %d", trial, k,
                             mode ? "top_p 0.5" : "uniform 0.5", got, want);
                n_each[want == a[0].id]++;
                n_fallbacks += fell;
                n_cases++;
            }
        }
    }
    printf("    %lld cases at a cut (%lld chose the first candidate, %lld another), %lld fell back\n",
           (long long)n_cases, (long long)n_each[1], (long long)n_each[0], (long long)n_fallbacks);
    /* the scans cross the cut: both answers occur, and the close ones are left to the full sort */
    assert_true(n_each[0] > 100 && n_each[1] > 100 && n_fallbacks > 0);
}

/* Frequencies of 40000 draws against p (4) within 0.01. */
static void check_freq(gf_sampler_params p, const float *logits, const double *want) {
    gf_sampler *s = gf_sampler_create(4, p);
    assert_non_null(s);
    int64_t count[4] = {0};
    for (int d = 0; d < 40000; d++) count[gf_sampler_sample(s, logits)]++;
    gf_sampler_free(s);
    for (int v = 0; v < 4; v++)
        if (!(fabs((double)count[v] / 40000 - want[v]) <= 0.01))
            fail_msg("temperature %g, top_k %lld, top_p %g: token %d drawn %.4f of the time, expected %.4f",
                     p.temperature, (long long)p.top_k, p.top_p, v, (double)count[v] / 40000, want[v]);
}

static void test_distribution(void **state) {
    (void)state;
    const float logits[4] = {logf(1), logf(2), logf(3), logf(4)};
    check_freq((gf_sampler_params){1.0, 0, 1.0, 7}, logits, (const double[]){0.1, 0.2, 0.3, 0.4});
    check_freq((gf_sampler_params){0.5, 0, 1.0, 7}, logits, (const double[]){1 / 30., 4 / 30., 9 / 30., 16 / 30.});
    check_freq((gf_sampler_params){1.0, 2, 1.0, 8}, logits, (const double[]){0, 0, 3 / 7., 4 / 7.});
    check_freq((gf_sampler_params){1.0, 0, 0.5, 9}, logits, (const double[]){0, 0, 3 / 7., 4 / 7.});
    check_freq((gf_sampler_params){0.0, 0, 1.0, 9}, logits, (const double[]){0, 0, 0, 1});
}

static void test_ties_and_edges(void **state) {
    (void)state;
    float flat[10], one[1] = {-3.0f}, tie[4] = {1, 3, 3, 2};
    ffill(flat, 10, 0.5f);
    int seen[10] = {0};
    gf_sampler *s = gf_sampler_create(10, (gf_sampler_params){1.0, 3, 1.0, 1});
    for (int d = 0; d < 300; d++) seen[gf_sampler_sample(s, flat)]++;
    gf_sampler_free(s);
    for (int v = 0; v < 10; v++) /* equal candidates: the smaller ids come first */
        if ((v < 3) != (seen[v] > 0)) fail_msg("top_k 3 of 10 equal logits drew token %d %d times", v, seen[v]);
    s = gf_sampler_create(8, (gf_sampler_params){1.0, 0, 0.25, 2}); /* nucleus: 2 of 8 equal ones */
    for (int d = 0; d < 200; d++) assert_true(gf_sampler_sample(s, flat) < 2);
    gf_sampler_free(s);
    s = gf_sampler_create(4, (gf_sampler_params){0.0, 0, 1.0, 3}); /* greedy: the first largest */
    assert_int_equal(gf_sampler_sample(s, tie), 1);
    gf_sampler_free(s);
    for (int mode = 0; mode < 4; mode++) { /* one token: always it */
        s = gf_sampler_create(1, (gf_sampler_params){mode ? 1.0 : 0.0, mode == 2 ? 5 : 0, mode == 3 ? 0.1 : 1, 4});
        for (int d = 0; d < 20; d++) assert_int_equal(gf_sampler_sample(s, one), 0);
        gf_sampler_free(s);
    }
    /* k >= V draws what k = 0 draws; the same seed the same tokens, another seed others */
    float x[50];
    uint64_t ctr = 77;
    make_logits(x, 50, 0, &ctr);
    gf_sampler *a = gf_sampler_create(50, (gf_sampler_params){1.0, 0, 1.0, 11});
    gf_sampler *b = gf_sampler_create(50, (gf_sampler_params){1.0, 50, 1.0, 11});
    gf_sampler *c = gf_sampler_create(50, (gf_sampler_params){1.0, 0, 1.0, 12});
    int differ = 0;
    for (int d = 0; d < 100; d++) {
        int32_t ta = gf_sampler_sample(a, x);
        assert_int_equal(ta, gf_sampler_sample(b, x));
        differ += ta != gf_sampler_sample(c, x);
    }
    assert_true(differ > 50);
    gf_sampler_free(a);
    gf_sampler_free(b);
    gf_sampler_free(c);
}

static void test_errors(void **state) {
    (void)state;
    float x[6] = {0, 1, 2, 3, 4, 5};
    gf_sample_cand buf[6];
    gf_sampler_params p = {1.0, 0, 0.9, 5};
    gf_sampler *s = gf_sampler_create(6, p);
    const float bad[] = {NAN, INFINITY, -INFINITY};
    for (int i = 0; i < 3; i++) {
        x[3] = bad[i];
        assert_int_equal(gf_sampler_sample(s, x), -1);
        assert_non_null(strstr(gf_last_error(), "sampler: logit 3 (of 6) is"));
        assert_non_null(strstr(gf_last_error(), "expected finite logits"));
    }
    x[3] = 3;
    /* a failed call takes no number: the next draw is the reference's first */
    assert_int_equal(gf_sampler_sample(s, x), gf_sample_reference(x, 6, &p, gf_sampler_key(5), 0, buf));
    gf_sampler_free(s);
    s = gf_sampler_create(6, (gf_sampler_params){0.0, 0, 1.0, 5});
    x[0] = NAN;
    assert_int_equal(gf_sampler_sample(s, x), -1); /* greedy too */
    gf_sampler_free(s);
    const gf_sampler_params bad_p[] = {{-1, 0, 1, 0}, {NAN, 0, 1, 0}, {1, -1, 1, 0}, {1, 0, 0, 0}, {1, 0, 1.5, 0}};
    for (int i = 0; i < 5; i++) {
        assert_null(gf_sampler_create(6, bad_p[i]));
        assert_non_null(strstr(gf_last_error(), "expected a finite temperature >= 0"));
    }
    assert_null(gf_sampler_create(0, p));
    assert_non_null(strstr(gf_last_error(), "sampler: vocab_size 0; expected 1 to"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_matches_reference, pool_teardown),
        cmocka_unit_test(test_near_ties_of_sums),
        cmocka_unit_test(test_distribution),
        cmocka_unit_test(test_ties_and_edges),
        cmocka_unit_test(test_errors),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    pool_release();
    return rc;
}
