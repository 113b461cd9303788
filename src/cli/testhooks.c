/* Fault injection for the shell tests (see testhooks.h). */
#include "testhooks.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static long long nan_first = -1, nan_last = -1; /* steps whose loss becomes NaN */
static long long signal_at = -1, steps_seen;    /* SIGINT after the process's signal_at-th step */
static long write_delay_us;
static long step_delay_ms; /* each step takes this much longer (progress between log lines) */

static void step_hook(int64_t step, double *loss, double *grad_norm, void *ctx) {
    (void)grad_norm;
    (void)ctx;
    if (step >= nan_first && step <= nan_last) *loss = NAN;
    if (++steps_seen == signal_at) raise(SIGINT);
    if (step_delay_ms > 0) usleep((useconds_t)(step_delay_ms * 1000));
}

static void slow_write(const char *tmp_path, size_t n, void *ctx) {
    (void)tmp_path;
    (void)n;
    (void)ctx;
    usleep((useconds_t)write_delay_us);
}

#ifdef GF_NO_TEST_HOOKS /* the installed command (make install): the environment injects no fault */
void cli_test_hooks_install(gf_train_opts *o) { (void)o; }
void cli_test_start_delay(void) {}
#else
void cli_test_hooks_install(gf_train_opts *o) {
    const char *e = getenv("GRASSFLOW_FAULT_NONFINITE");
    const int got = e ? sscanf(e, "%lld-%lld", &nan_first, &nan_last) : 0;
    if (got == 1) nan_last = nan_first;
    e = getenv("GRASSFLOW_FAULT_SIGINT_AT");
    if (e) signal_at = atoll(e);
    e = getenv("GRASSFLOW_FAULT_STEP_DELAY_MS");
    if (e && (step_delay_ms = atol(e)) > 60000) step_delay_ms = 60000;
    if (got >= 1 || signal_at > 0 || step_delay_ms > 0) o->hooks = (gf_train_hooks){.step_loss = step_hook};
    e = getenv("GRASSFLOW_FAULT_WRITE_DELAY_US");
    if (e && (write_delay_us = atol(e)) > 0) gf_atomic_set_write_hook(slow_write, NULL);
}

void cli_test_start_delay(void) {
    const char *e = getenv("GRASSFLOW_FAULT_START_DELAY_MS");
    const long ms = e ? atol(e) : 0;
    if (ms > 0 && ms < 600000) usleep((useconds_t)(ms * 1000));
}
#endif
