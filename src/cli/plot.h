/* grassflow plot: training curves of run folders (plot.c; compare draws its models') or a table of series
 * (plot_table.c) as one self-contained SVG. */
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

typedef struct cli_plot_table_opts {
    const char *kind;              /* "lines" (NULL: the default), "points" or "bars" */
    bool logx, logy;               /* a log axis (bars: neither) */
    bool front;                    /* the Pareto front of the points: lower is better on both axes */
    bool force;                    /* replace an existing out_svg that is not an SVG */
    const char *title, *x_label, *y_label; /* NULL: none */
    double ymin, ymax;             /* the y axis's ends; NAN: from the data */
} cli_plot_table_opts;

/* The table of series in file tsv (a header naming the columns, a row per point: docs/plot.md) drawn into
 * out_svg (atomically). EXIT_OK, EXIT_USAGE (options that do not go together) or EXIT_RUNTIME (a file that is
 * not such a table, named with the line and the column; a write that failed), the message printed. */
int cli_plot_table(const char *tsv, const char *out_svg, const cli_plot_table_opts *o);

#endif
