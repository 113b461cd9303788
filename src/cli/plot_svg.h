/* The drawing shared by grassflow plot's two inputs, run folders (plot.c) and tables (plot_table.c): scales,
 * ticks and their labels, a panel's axes, the legend, XML escaping, and the SVG file itself (its header, its
 * atomic write, the rule for an existing --out). One copy of each: a figure of either kind looks the same. */
#ifndef GF_CLI_PLOT_SVG_H
#define GF_CLI_PLOT_SVG_H

#include <stdbool.h>
#include <stdio.h>

/* The geometry every figure shares: 800 pixels wide (a bar chart of many groups: wider), the frame's left and
 * right margins, the title's band above the first panel, the band under a panel (its tick labels and the x
 * label) and a legend row. */
#define PLOT_W 800
#define PLOT_LEFT 78
#define PLOT_RIGHT 24
#define PLOT_TOP 46
#define PLOT_GAP 62
#define PLOT_LEGEND_ROW 20

extern const char *const plot_colours[10]; /* a series' colour by its index, in turn */

/* A scale: the axis from lo to hi onto pixels [p0, p1]; on a log scale lo and hi are the log10 of its ends (so
 * that any finite values have finite ends: 1e-300 to 1e300 is -300 to 300). Differences are taken of halves,
 * which cannot overflow (-1e308 to 1e308). */
typedef struct {
    double lo, hi, p0, p1;
    bool log;
} plot_scale;

typedef struct {
    double x, y;
} plot_point;

/* The pixel of value v on s (v > 0 on a log scale). */
double plot_px(const plot_scale *s, double v);
/* The scale of the values lo..hi (lo <= hi; both > 0 when log) onto [p0, p1], with some room at both ends (4%
 * of the decades, 5% of a linear range), within what a double holds; a linear range narrower than a
 * billionth of its values is widened to that, and a log range of one value to a decade, for ticks to tell
 * apart. */
plot_scale plot_fit(double lo, double hi, bool log, double p0, double p1);

/* s as XML text or an attribute value (gf_escape_xml): a name that is not UTF-8, or holds a control
 * character, still gives XML. */
void plot_put_escaped(FILE *f, const char *s);

/* The axes of a panel whose frame the scales span: frame, grid, tick labels, the y label (rotated, left of
 * the ticks) and, when x_label is not NULL, the x label under it; either label gains " (log scale)" on a log
 * axis. Without x_ticks the x axis has no grid or numbers (a bar chart's groups, which the caller labels;
 * its x label then sits lower, under two lines of them). */
void plot_axes(FILE *f, const plot_scale *xs, const plot_scale *ys, const char *y_label, const char *x_label,
               bool x_ticks);

/* The points of c[0..n) a polyline needs (indices, in order, into keep, which holds n): all of them up to
 * 4 per pixel column of xs; of more, in each run of points in one pixel column the first, the highest, the
 * lowest and the last, which draw the picture all of them draw. Returns how many. */
int plot_thin(const plot_point *c, int n, const plot_scale *xs, const plot_scale *ys, int *keep);

/* A legend entry: a name beside a swatch of its colour (a bar; a line of that dash pattern when dash is not
 * NULL). */
typedef struct {
    const char *name, *colour, *dash;
} plot_key;

/* The height of the legend of keys[0..n) (in as many columns as the longest name lets fit). */
int plot_legend_height(const plot_key *keys, int n);
/* The legend from pixel height top: the keys in columns, row by row. */
void plot_legend(FILE *f, const plot_key *keys, int n, double top);

/* The figure's start (w x h pixels, white) and its title (NULL: none) on the first line. */
void plot_begin(FILE *f, int w, int h, const char *title);

/* The figure draw(f, ctx) makes into path `out`, atomically; EXIT_OK or the exit code of draw or of the
 * write (the message printed). */
int plot_write(const char *out, int (*draw)(FILE *f, const void *ctx), const void *ctx);

/* The output rule (cli_output_check) of an SVG that command cmd ("plot") writes at out, given by flag ("--out"):
 * out is never one of inputs[0..n) (the files the command reads), a device node or a FIFO, and an existing file
 * is replaced only if it is an SVG, or with force. EXIT_OK, or an exit code after the message. */
int plot_check_out(const char *out, const char *flag, const char *cmd, const char *const *inputs, int n, bool force);

#endif
