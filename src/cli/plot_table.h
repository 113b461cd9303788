/* grassflow plot --table: a table of series (TSV) read into memory (plot_tsv.c) and drawn (plot_table.c). The
 * file's form is in docs/plot.md and `grassflow plot --help`. */
#ifndef GF_CLI_PLOT_TABLE_H
#define GF_CLI_PLOT_TABLE_H

#include <stdbool.h>

enum {
    PLOT_TABLE_MAX_SERIES = 24,      /* a legend line and a colour each, as the runs of a plot */
    PLOT_TABLE_MAX_GROUPS = 64,      /* a bar chart's groups (80 pixels each) */
    PLOT_TABLE_MAX_ROWS = 1000000,   /* more is not a figure */
    PLOT_TABLE_MAX_BYTES = 64 << 20, /* the file */
};

typedef enum { PLOT_LINES, PLOT_POINTS, PLOT_BARS } plot_kind;

typedef struct {
    double x, y;  /* a bar's x: its group's index */
    int line;     /* the file's line it came from */
    char *label;  /* NULL: none */
} table_point;

typedef struct {
    char *name;          /* "": not in the legend (a table without a series column has one such series) */
    char colour[8];      /* #rgb or #rrggbb; "": the palette's colour of its index */
    char dash[32];       /* an SVG dash pattern ("6,4"); "": a solid line */
    int colour_line, dash_line; /* the lines that set them (a row that disagrees is an error naming both) */
    table_point *p;
    int n, cap;
} table_series;

typedef struct {
    table_series s[PLOT_TABLE_MAX_SERIES]; /* in the order of their first row */
    int n;
    char *groups[PLOT_TABLE_MAX_GROUPS];   /* a bar chart's, in the order of their first row */
    int n_groups;
} plot_table;

/* path's rows into t for a figure of kind `kind` (its columns: series, x, y, label, dash, colour, group; the
 * ones that kind needs, none it cannot draw), every x > 0 with logx and every y > 0 with logy. EXIT_OK, or
 * EXIT_RUNTIME after a message naming the file, the line and the column (t then holds what was read: free
 * it). */
int plot_table_read(const char *path, plot_kind kind, bool logx, bool logy, plot_table *t);
void plot_table_free(plot_table *t);

#endif
