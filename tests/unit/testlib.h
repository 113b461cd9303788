/* Helpers shared by the C tests (cmocka). */
#ifndef GF_TESTLIB_H
#define GF_TESTLIB_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the includes above first */
#include <cmocka.h>

#include "grassflow.h" /* the user API alone: tests/train/fixtures.sh builds test_fixtures.c against 0.1.0's headers */

/* Deterministic uniform values in [lo, hi) from (seed, index). */
void tl_fill_uniform(float *x, int64_t n, uint64_t seed, float lo, float hi);
void tl_fill_uniform_d(double *x, int64_t n, uint64_t seed, double lo, double hi);
double *tl_to_double(const float *x, int64_t n);       /* malloc'd copy */
float *tl_to_float(const double *x, int64_t n);        /* malloc'd copy */
/* max |a - b| */
double tl_max_abs_diff_fd(const float *a, const double *b, int64_t n);
double tl_max_abs_d(const double *a, int64_t n);
/* The larger of m and x, and NaN once either is: a running worst that a NaN cannot slip past (fmax drops it). */
static inline double tl_max_nan(double m, double x) { return m != m || x != x ? x + m : x > m ? x : m; }
/* Fail the current test (with a message naming what and where) if max |got - want| > tol, or a difference
 * or the tolerance is not a number. */
void tl_check_close(const char *what, const float *got, const double *want, int64_t n, double tol);
/* Fail the current test unless rc is non-zero and gf_last_error() holds want. */
void tl_expect_error(int rc, const char *want);
/* An allocation pool: everything a test allocates with these is freed by pool_teardown (use it as the
 * cmocka teardown), even after a failed assertion. */
void *talloc(size_t bytes);
float *falloc(int64_t n);
double *dalloc(int64_t n);
int pool_teardown(void **state);
void pool_release(void); /* at exit: the pool's own array */
float *fdup(const float *x, int64_t n);      /* pooled copy */
double *ddup_f(const float *x, int64_t n);   /* pooled copy in double */
void ffill(float *x, int64_t n, float v);
/* A model from a preset with --set overrides (NULL-terminated list), initialised from seed, then every
 * parameter perturbed (init gives LayerNorm 1/0 and zero biases) so that each one matters in a check. */
gf_model *tl_make_model(const char *preset, const char *const *sets, uint64_t seed);
/* A path under a fresh temporary directory (created once per process). */
const char *tl_tmp_path(const char *name);

#endif
