/* Fault injection for the shell tests (see testhooks.h). */
#include "testhooks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static long long nan_first = -1, nan_last = -1; /* steps whose loss becomes NaN */
static long write_delay_us;

static void nan_steps(int64_t step, double *loss, double *grad_norm, void *ctx) {
    (void)grad_norm;
    (void)ctx;
    if (step >= nan_first && step <= nan_last) *loss = NAN;
}

static void slow_write(const char *tmp_path, size_t n, void *ctx) {
    (void)tmp_path;
    (void)n;
    (void)ctx;
    usleep((useconds_t)write_delay_us);
}

void cli_test_hooks_install(gf_train_opts *o) {
    const char *e = getenv("GRASSFLOW_FAULT_NONFINITE");
    const int got = e ? sscanf(e, "%lld-%lld", &nan_first, &nan_last) : 0;
    if (got >= 1) {
        if (got == 1) nan_last = nan_first;
        o->hooks = (gf_train_hooks){.step_loss = nan_steps};
    }
    e = getenv("GRASSFLOW_FAULT_WRITE_DELAY_US");
    if (e && (write_delay_us = atol(e)) > 0) gf_atomic_set_write_hook(slow_write, NULL);
}
