/* Fault injection for the shell tests, from the environment. The library has none: the trainer offers a
 * step hook (gf_train_opts.hooks) and the atomic writer a write hook, and only the command-line tool
 * installs them, from here:
 *   GRASSFLOW_FAULT_NONFINITE=A[-B]     the loss of steps A..B (1-based) becomes NaN (tests/trust/trust.sh)
 *   GRASSFLOW_FAULT_SIGINT_AT=N         SIGINT is raised after the process's N-th training step, counted over
 *                                       every run it trains (compare: across models; tests/cli/compare.sh)
 *   GRASSFLOW_FAULT_WRITE_DELAY_US=N    every chunk written to a temporary checkpoint file waits N
 *                                       microseconds first, so that kills land inside writes (tests/trust/kill.sh)
 *   GRASSFLOW_FAULT_STEP_DELAY_MS=N     every training step takes N milliseconds longer (progress lines between
 *                                       log lines: tests/train/train.sh)
 *   GRASSFLOW_FAULT_START_DELAY_MS=N    the command starts N milliseconds late (set on one rank of an MPI job:
 *                                       the others must not change --out before it has read it; tests/train/mpi.sh)
 * They live in the build tree's command (build/grassflow, which the tests run) only: `make install` installs
 * a build with -DGF_NO_TEST_HOOKS ($(BUILD)/release/grassflow), in which they do nothing. */
#ifndef GF_CLI_TESTHOOKS_H
#define GF_CLI_TESTHOOKS_H

#include "grassflow_plugin.h"

/* Install the hooks the environment asks for: the step hook into o, the write hook globally. */
void cli_test_hooks_install(gf_train_opts *o);
/* Waits as GRASSFLOW_FAULT_START_DELAY_MS asks (before the command reads its flags and files). */
void cli_test_start_delay(void);

#endif
