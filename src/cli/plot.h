/* Training curves of run folders as one self-contained SVG (grassflow plot; compare draws its models'). */
#ifndef GF_CLI_PLOT_H
#define GF_CLI_PLOT_H

#include <stdbool.h>

#include "cli.h"

enum { CLI_PLOT_MAX_RUNS = 24 }; /* the runs one plot holds (a legend line and a colour each) */

typedef struct cli_plot_opts {
    const char *x;       /* the x axis: "step", "tokens" (the counted targets seen: tokens, pairs) or "time";
                          * NULL: "step". A run whose metrics.jsonl lacks it (an older file) puts every run on
                          * step, with a note saying so */
    const char *metrics; /* the panels, top to bottom, comma-separated: "loss" (training and validation),
                          * a metric's name: of the loss alone, from both losses ("ppl": their exponential), else
                          * its validation score ("accuracy", a task's own); NULL: loss, and
                          * below it each metric not of the loss a run is scored by (a classifier's accuracy) */
    bool force;          /* replace an existing out_svg that is not an SVG (cli_output_check) */
} cli_plot_opts;

/* Read DIR/metrics.jsonl of each of dirs[0..n) (gf_metrics_read) and draw their curves into out_svg
 * (atomically), one colour per run, the legend naming each by its folder. o may be NULL (the defaults).
 * EXIT_OK, EXIT_USAGE (a bad option value) or EXIT_RUNTIME (a folder without metrics, a corrupt line, a
 * write that failed), the message printed. */
int cli_plot_runs(const char *const *dirs, int n, const char *out_svg, const cli_plot_opts *o);

/* The run folders of the plot's arguments into out[0..*n) (cap at most): a run folder as given; a compare folder
 * (summary.json, no metrics.jsonl) as every run its summary lists that has logged a step, model by model,
 * each seed its own. EXIT_OK, or an exit code after printing the error. */
int cli_plot_expand(const char *const *args, int n_args, char (*out)[GF_PATH_MAX], int *n, int cap);

#endif
