#include "testlib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compute/blas.h"
#include "base/rng.h"

void tl_fill_uniform(float *x, int64_t n, uint64_t seed, float lo, float hi) {
    for (int64_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * gf_uniform(seed, (uint64_t)i);
}

void tl_fill_uniform_d(double *x, int64_t n, uint64_t seed, double lo, double hi) {
    for (int64_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * (double)gf_uniform(seed, (uint64_t)i);
}

double *tl_to_double(const float *x, int64_t n) {
    double *y = malloc((size_t)n * sizeof *y);
    for (int64_t i = 0; i < n; i++) y[i] = x[i];
    return y;
}

float *tl_to_float(const double *x, int64_t n) {
    float *y = malloc((size_t)n * sizeof *y);
    for (int64_t i = 0; i < n; i++) y[i] = (float)x[i];
    return y;
}

double tl_max_abs_diff_fd(const float *a, const double *b, int64_t n) {
    double m = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (isnan(d)) return d; /* a NaN is the worst: once seen, no later element may replace it */
        if (!(d <= m)) m = d;
    }
    return m;
}

double tl_max_abs_d(const double *a, int64_t n) {
    double m = 0.0;
    for (int64_t i = 0; i < n; i++) m = fabs(a[i]) > m ? fabs(a[i]) : m;
    return m;
}

void tl_expect_error(int rc, const char *want) {
    if (rc == 0) fail_msg("expected an error with \"%s\", got success", want);
    if (!strstr(gf_last_error(), want)) fail_msg("error \"%s\" does not contain \"%s\"", gf_last_error(), want);
}

void tl_check_close(const char *what, const float *got, const double *want, int64_t n, double tol) {
    /* a tolerance made from a reference that holds an Inf (or NaN) would pass anything */
    if (!isfinite(tol)) fail_msg("%s: the tolerance %g is not finite: the reference is not", what, tol);
    int64_t worst = -1;
    double m = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        if (!(d <= m)) {
            m = d;
            worst = i;
            if (isnan(d)) break; /* a NaN is the worst: once seen, no later element may replace it */
        }
    }
    if (!(m <= tol)) {
        fail_msg("%s: max |diff| %.3g > tolerance %.3g at index %lld (got %.9g, want %.9g)", what, m, tol,
                 (long long)worst, worst >= 0 ? (double)got[worst] : 0.0, worst >= 0 ? want[worst] : 0.0);
    }
}

const char *tl_tmp_path(const char *name) {
    static char dir[256];
    static char buf[512];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/grassflow-test-XXXXXX");
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            abort();
        }
    }
    snprintf(buf, sizeof buf, "%s/%s", dir, name);
    return buf;
}

static void **pool;
static int pool_n, pool_cap;

void *talloc(size_t bytes) {
    if (pool_n == pool_cap) {
        pool_cap = pool_cap ? 2 * pool_cap : 64;
        pool = realloc(pool, (size_t)pool_cap * sizeof *pool);
        assert_non_null(pool);
    }
    void *p = malloc(bytes ? bytes : 1);
    assert_non_null(p);
    pool[pool_n++] = p;
    return p;
}

int pool_teardown(void **state) {
    (void)state;
    for (int i = 0; i < pool_n; i++) free(pool[i]);
    pool_n = 0;
    gf_set_matmul_precision(GF_PRECISION_FP32); /* a test that failed under fp32-fast leaves the next the default, */
    gf_sgemm_reuse_operands(false);             /* and outside any span of reused operands */
    return 0;
}

float *falloc(int64_t n) { return talloc((size_t)n * sizeof(float)); }

float *fdup(const float *x, int64_t n) {
    float *y = falloc(n);
    memcpy(y, x, (size_t)n * sizeof *y);
    return y;
}

double *ddup_f(const float *x, int64_t n) {
    double *y = dalloc(n);
    for (int64_t i = 0; i < n; i++) y[i] = x[i];
    return y;
}

void ffill(float *x, int64_t n, float v) {
    for (int64_t i = 0; i < n; i++) x[i] = v;
}
double *dalloc(int64_t n) { return talloc((size_t)n * sizeof(double)); }

void pool_release(void) {
    pool_teardown(NULL);
    free(pool);
    pool = NULL;
    pool_cap = 0;
}

/* Every parallel loop runs multi-threaded in the tests, however small the shapes. */
__attribute__((constructor)) static void tl_parallel_everywhere(void) { gf_set_parallel_threshold(0); }

gf_model *tl_make_model(const char *preset, const char *const *sets, uint64_t seed) {
    gf_config c;
    assert_int_equal(gf_config_preset(preset, &c), 0);
    for (; sets && *sets; sets++)
        if (gf_config_set(&c, *sets)) fail_msg("--set %s: %s", *sets, gf_last_error());
    gf_model *m = gf_model_create(&c);
    assert_non_null(m);
    gf_model_init(m, seed);
    float *p = gf_model_params(m);
    for (int64_t i = 0; i < gf_model_num_params(m); i++) p[i] += 0.05f * (gf_uniform(seed + 99, (uint64_t)i) - 0.5f);
    return m;
}
