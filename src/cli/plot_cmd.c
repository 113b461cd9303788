/* grassflow plot: the command's options and help, for its two inputs: run folders (cli_plot_runs) or a table
 * of series (--table: cli_plot_table). */
#include <float.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "plot.h"
#include "plot_table.h"

static void help(void) {
    printf("usage: grassflow plot RUN_DIR... [--out FILE.svg [--force]] [--x step|tokens|time] [--metric loss|ppl|accuracy,...]\n"
           "       grassflow plot --table FILE.tsv --out FILE.svg [--force] [--kind lines|points|bars] [--logx] [--logy]\n"
           "                      [--front] [--title T] [--xlabel X] [--ylabel Y] [--ymin V] [--ymax V]\n\n"
           "Draw the training and validation curves of one or more runs (each RUN_DIR/metrics.jsonl, the --out of\n"
           "train; the --out of compare stands for every run its summary.json lists that has logged a step, each\n"
           "seed its own curve, at most %d runs) into one SVG, one colour per run, the legend naming each run by its\n"
           "folder: training curves solid, validation curves dashed with a dot at each evaluation; a curve that one\n"
           "drawn after it follows closely (within 1.5 pixels at a quarter of its points) is drawn wider, to show\n"
           "around it. With --table, draw a table of series instead (below).\n\n"
           "  --out FILE          the SVG to write (atomically; runs: default curves.svg in the current directory). An\n"
           "                      existing SVG is replaced; another file only with --force; an input (a run's\n"
           "                      metrics.jsonl, the table), a device node or a FIFO never\n"
           "  --force             replace an existing --out file that is not an SVG\n"
           "  --x AXIS            step (default), tokens (the counted targets seen: tokens for a language model,\n"
           "                      pairs for sentence pairs) or time (wall-clock time of the run, across resumes).\n"
           "                      A metrics.jsonl of an older grassflow has neither tokens nor time: the plot then\n"
           "                      uses step, and says so\n"
           "  --metric LIST       the panels, top to bottom: loss (training and validation loss), ppl (their\n"
           "                      exponential), accuracy (validation accuracy of a classifier), or the metric a\n"
           "                      task of a program's own is scored by (its validation score); default loss, and\n"
           "                      below it each metric not of the loss that a run is scored by (a classifier's\n"
           "                      accuracy). Loss and ppl use a log scale when they span a factor of 3 or more\n\n", CLI_PLOT_MAX_RUNS);
    printf("A table (--table FILE.tsv; docs/plot.md): UTF-8 text, cells separated by tabs, the first line naming the\n"
           "columns in any order: series (the legend's name of the row's series; none: one series, no legend), x, y\n"
           "(numbers), label (text beside the point, or on the bar), dash (the series' line, e.g. 6,4), colour (#rgb\n"
           "or #rrggbb; default: the series' turn in the palette), group (a bar's group). Then a row per point; a\n"
           "cell may hold \\t \\n \\r \\\\ and \\xNN as gf_escape_tsv writes them; blank lines are skipped. At most %d\n"
           "series, %d groups of bars and %d rows; a bad cell is an error naming the file, the line and the\n"
           "column.\n\n"
           "  --table FILE        the table to draw (with --out; no RUN_DIR)\n"
           "  --kind KIND         lines (default: x and y; each series through its points in order of x, a dot at\n"
           "                      each up to %d), points (x and y; a dot per point, its label beside it, a series'\n"
           "                      points joined faintly in the rows' order) or bars (group and y: the series' bars\n"
           "                      side by side in each group, from 0, each value on its bar)\n"
           "  --logx, --logy      a log scale on x or y (every value of that axis above 0)\n"
           "  --front             points and lines: the Pareto front, dashed (the points no other is below and left\n"
           "                      of: lower is better on both axes)\n"
           "  --title T, --xlabel X, --ylabel Y   the figure's title and its axes' labels (default: none)\n"
           "  --ymin V, --ymax V  the ends of the y axis (default: the data's range with some room; bars from 0)\n",
           PLOT_TABLE_MAX_SERIES, PLOT_TABLE_MAX_GROUPS, PLOT_TABLE_MAX_ROWS, 80);
}

/* grassflow plot RUN_DIR...: the run folders (a compare folder: its runs) drawn into out (default curves.svg). */
static int plot_runs(int argc, char **argv, const char *out, const cli_plot_opts *o) {
    if (optind >= argc)
        return cli_usage_error("plot", "expected one or more run folders (the --out of train) or compare folders, or "
                               "--table FILE");
    char (*dirs)[GF_PATH_MAX] = malloc(CLI_PLOT_MAX_RUNS * sizeof *dirs);
    const char *names[CLI_PLOT_MAX_RUNS];
    int n = 0, rc = dirs ? cli_plot_expand((const char *const *)argv + optind, argc - optind, dirs, &n, CLI_PLOT_MAX_RUNS)
                         : cli_error("out of memory");
    for (int i = 0; i < n; i++) names[i] = dirs[i];
    if (!rc) rc = cli_plot_runs(names, n, out ? out : "curves.svg", o);
    free(dirs);
    return rc;
}

enum { OPT_TABLE = 2000, OPT_KIND, OPT_LOGX, OPT_LOGY, OPT_FRONT, OPT_TITLE, OPT_XLABEL, OPT_YLABEL, OPT_YMIN, OPT_YMAX };

int cmd_plot(int argc, char **argv) {
    static const struct option longopts[] = {
        {"out", 1, 0, 'o'}, {"x", 1, 0, 'x'}, {"metric", 1, 0, 'm'}, {"force", 0, 0, 'f'}, {"help", 0, 0, 'h'},
        {"table", 1, 0, OPT_TABLE}, {"kind", 1, 0, OPT_KIND}, {"logx", 0, 0, OPT_LOGX}, {"logy", 0, 0, OPT_LOGY},
        {"front", 0, 0, OPT_FRONT}, {"title", 1, 0, OPT_TITLE}, {"xlabel", 1, 0, OPT_XLABEL},
        {"ylabel", 1, 0, OPT_YLABEL}, {"ymin", 1, 0, OPT_YMIN}, {"ymax", 1, 0, OPT_YMAX}, {0, 0, 0, 0}};
    cli_plot_opts o = {0};
    cli_plot_table_opts t = {.ymin = NAN, .ymax = NAN};
    const char *out = NULL, *table = NULL, *runs_only = NULL, *table_only = NULL; /* an option of the other input */
    int opt, rc = EXIT_OK;
    optind = 1;
    while (!rc && (opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (opt == 'o') out = optarg;
        else if (opt == 'x') o.x = optarg, runs_only = "--x";
        else if (opt == 'm') o.metrics = optarg, runs_only = "--metric";
        else if (opt == 'f') o.force = t.force = true;
        else if (opt == 'h') return help(), EXIT_OK;
        else if (opt == OPT_TABLE) table = optarg;
        else if (opt == OPT_KIND) t.kind = optarg, table_only = "--kind";
        else if (opt == OPT_LOGX) t.logx = true, table_only = "--logx";
        else if (opt == OPT_LOGY) t.logy = true, table_only = "--logy";
        else if (opt == OPT_FRONT) t.front = true, table_only = "--front";
        else if (opt == OPT_TITLE) t.title = optarg, table_only = "--title";
        else if (opt == OPT_XLABEL) t.x_label = optarg, table_only = "--xlabel";
        else if (opt == OPT_YLABEL) t.y_label = optarg, table_only = "--ylabel";
        else if (opt == OPT_YMIN || opt == OPT_YMAX) {
            table_only = opt == OPT_YMIN ? "--ymin" : "--ymax";
            rc = cli_parse_f("plot", table_only, optarg, -DBL_MAX, DBL_MAX, opt == OPT_YMIN ? &t.ymin : &t.ymax);
        }
        else rc = cli_usage_error("plot", "unknown option");
    }
    if (rc) return rc;
    if (!table && table_only) return cli_usage_error("plot", "%s is an option of --table FILE", table_only);
    if (table && runs_only) return cli_usage_error("plot", "%s is an option of run folders, not of --table", runs_only);
    if (table && optind < argc)
        return cli_usage_error("plot", "--table draws one table, without run folders ('%s')", gf_show_name(argv[optind]));
    if (table && !out) return cli_usage_error("plot", "--table needs --out FILE.svg");
    rc = table ? cli_plot_table(table, out, &t) : plot_runs(argc, argv, out, &o);
    if (!rc) printf("wrote %s\n", out ? out : "curves.svg");
    return rc;
}
