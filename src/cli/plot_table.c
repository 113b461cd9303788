/* grassflow plot --table FILE: a table of series (plot_tsv.c reads it) as lines, labelled points or grouped
 * bars, on the axes, ticks and legend of the runs' plots (plot_svg.c). The studies' and the benchmark's
 * figures are drawn here: the scripts write a table and call this. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "plot.h"
#include "plot_svg.h"
#include "plot_table.h"

#define TABLE_H 330      /* the panel's height */
#define GROUP_W 80       /* a bar chart's pixels per group, at least */
#define MAX_DOTS 80      /* a line of more points has no dot at each: they would hide it */

typedef struct {
    const plot_table *t;
    const cli_plot_table_opts *o;
    plot_kind kind;
    plot_scale xs, ys;
    int w, h, legend_top;
    plot_key keys[PLOT_TABLE_MAX_SERIES + 1];
    int n_keys;
} figure;

/* Series i's colour: its own, or its turn in the palette. */
static const char *colour_of(const plot_table *t, int i) {
    return t->s[i].colour[0] ? t->s[i].colour : plot_colours[i % 10];
}

static bool inside(const figure *g, double x, double y) {
    return x >= g->xs.p0 - 0.5 && x <= g->xs.p1 + 0.5 && y >= g->ys.p1 - 0.5 && y <= g->ys.p0 + 0.5;
}

/* ---- lines and points -------------------------------------------------------------------------------------- */

static int by_x(const void *a, const void *b) {
    const table_point *p = a, *q = b;
    return p->x < q->x ? -1 : p->x > q->x ? 1 : p->line - q->line; /* ties: in the file's order */
}

static int by_xy(const void *a, const void *b) {
    const table_point *p = a, *q = b;
    return p->x < q->x ? -1 : p->x > q->x ? 1 : p->y < q->y ? -1 : p->y > q->y;
}

/* The boxes a label must not cover: the points' dots (of a figure of up to MAX_AVOID points) and the labels
 * drawn before it. */
#define MAX_AVOID 4000
typedef struct {
    double x0, y0, x1, y1;
} box;
typedef struct {
    box *b;
    int n;
} taken;

static bool overlaps(const taken *t, const box *a) {
    for (int i = 0; i < t->n; i++)
        if (a->x0 < t->b[i].x1 && t->b[i].x0 < a->x1 && a->y0 < t->b[i].y1 && t->b[i].y0 < a->y1) return true;
    return false;
}

/* The dots of every point (a figure of up to MAX_AVOID of them), room for every label after them. */
static int start_taken(const figure *g, taken *t) {
    int n = 0, labels = 0;
    for (int i = 0; i < g->t->n; i++)
        for (int j = 0; j < g->t->s[i].n; j++) n++, labels += g->t->s[i].p[j].label != NULL;
    if (!(t->b = malloc((size_t)(labels + (n <= MAX_AVOID ? n : 0) + 1) * sizeof *t->b))) return cli_error("out of memory");
    for (int i = 0; i < g->t->n && n <= MAX_AVOID; i++)
        for (int j = 0; j < g->t->s[i].n; j++) {
            const double x = plot_px(&g->xs, g->t->s[i].p[j].x), y = plot_px(&g->ys, g->t->s[i].p[j].y);
            t->b[t->n++] = (box){x - 4, y - 4, x + 4, y + 4};
        }
    return EXIT_OK;
}

/* A point's label beside it: above or below it, right or left of it, the first of those places that covers
 * no dot and no label drawn before it (none free: the first that stays in the picture), so that the labels of
 * close points stay apart. */
static void draw_label(FILE *f, const figure *g, const table_point *q, const char *colour, taken *t) {
    const double x = plot_px(&g->xs, q->x), y = plot_px(&g->ys, q->y), w = 6.2 * (double)strlen(q->label ? q->label : "");
    if (!q->label || !inside(g, x, y)) return;
    static const double dx[4] = {6, 6, -6, -6}, dy[4] = {-5, 14, -5, 14}; /* 10-pixel text: 6.2 pixels a character */
    box at[4];
    int pick = -1, fits = -1;
    for (int c = 0; c < 4 && pick < 0; c++) {
        const double x0 = dx[c] > 0 ? x + dx[c] : x + dx[c] - w;
        at[c] = (box){x0, y + dy[c] - 9, x0 + w, y + dy[c] + 2};
        if (at[c].x0 < g->xs.p0 || at[c].x1 > g->xs.p1) continue; /* not across the frame */
        if (fits < 0) fits = c;
        if (!overlaps(t, &at[c])) pick = c;
    }
    pick = pick >= 0 ? pick : fits >= 0 ? fits : 0;
    t->b[t->n++] = at[pick];
    fprintf(f, "<text class=\"label\" x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"%s\"%s>", x + dx[pick],
            y + dy[pick], colour, dx[pick] < 0 ? " text-anchor=\"end\"" : "");
    plot_put_escaped(f, q->label);
    fputs("</text>\n", f);
}

/* The points of a polyline (its element begun by the caller) through q[0..n): every point, or on a line of
 * more than the panel's pixels take, those plot_thin keeps. */
static void draw_points(FILE *f, const figure *g, const table_point *q, int n) {
    plot_point *pts = malloc((size_t)n * sizeof *pts);
    int *keep = malloc((size_t)n * sizeof *keep), m = n;
    for (int k = 0; pts && k < n; k++) pts[k] = (plot_point){q[k].x, q[k].y};
    if (pts && keep && g->kind == PLOT_LINES) m = plot_thin(pts, n, &g->xs, &g->ys, keep); /* out of memory: all */
    fputs(" points=\"", f);
    for (int k = 0; k < m; k++) {
        const table_point *p = &q[pts && keep && m < n ? keep[k] : k];
        fprintf(f, "%s%.1f,%.1f", k ? " " : "", plot_px(&g->xs, p->x), plot_px(&g->ys, p->y));
    }
    fputs("\"/>\n", f);
    free(pts);
    free(keep);
}

/* Series i: lines through its points in order of x (a dot at each when there are few), or points in the
 * order of the rows joined by a faint thin line; each point's label beside it. */
static int draw_series(FILE *f, const figure *g, int i, taken *labels) {
    const table_series *s = &g->t->s[i];
    const bool lines = g->kind == PLOT_LINES;
    const char *colour = colour_of(g->t, i);
    table_point *q = malloc((size_t)s->n * sizeof *q);
    if (!q) return cli_error("out of memory");
    memcpy(q, s->p, (size_t)s->n * sizeof *q);
    if (lines) qsort(q, (size_t)s->n, sizeof *q, by_x);
    if (s->n > 1) {
        fprintf(f, "<polyline class=\"%s\" data-series=\"", lines ? "series" : "join");
        plot_put_escaped(f, s->name);
        fprintf(f, "\" clip-path=\"url(#c0)\" fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s", colour, lines ? "2" : "1",
                lines ? "" : " opacity=\"0.5\"");
        if (s->dash[0]) fprintf(f, " stroke-dasharray=\"%s\"", s->dash);
        draw_points(f, g, q, s->n);
    }
    if (!lines || s->n <= MAX_DOTS)
        for (int k = 0; k < s->n; k++)
            fprintf(f, "<circle class=\"point\" cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" fill=\"%s\" clip-path=\"url(#c0)\"/>\n",
                    plot_px(&g->xs, q[k].x), plot_px(&g->ys, q[k].y), lines ? 3 : 4, colour);
    for (int k = 0; k < s->n; k++) draw_label(f, g, &q[k], colour, labels);
    free(q);
    return EXIT_OK;
}

/* The Pareto front of every point of the table (lower is better on both axes): those no other point is below
 * and left of, as a dashed line. */
static int draw_front(FILE *f, const figure *g) {
    int n = 0, m = 0;
    for (int i = 0; i < g->t->n; i++) n += g->t->s[i].n;
    table_point *q = malloc((size_t)n * sizeof *q);
    if (!q) return cli_error("out of memory");
    for (int i = 0, k = 0; i < g->t->n; i++)
        for (int j = 0; j < g->t->s[i].n; j++, k++) q[k] = (table_point){g->t->s[i].p[j].x, g->t->s[i].p[j].y, 0, NULL};
    qsort(q, (size_t)n, sizeof *q, by_xy);
    double best = INFINITY;
    for (int k = 0; k < n; k++) /* in order of x (then y): each point lower than all before it */
        if (q[k].y < best) best = q[k].y, q[m++] = q[k];
    fputs("<polyline class=\"front\" clip-path=\"url(#c0)\" fill=\"none\" stroke=\"#555\" stroke-width=\"1.5\" "
          "stroke-dasharray=\"6,4\"", f);
    draw_points(f, g, q, m);
    free(q);
    return EXIT_OK;
}

/* ---- bars -------------------------------------------------------------------------------------------------- */

/* A bar's value as its label: whole numbers from 100 (tokens/s), three digits below. */
static void value_text(char *buf, size_t n, double v) {
    snprintf(buf, n, fabs(v) >= 100 && fabs(v) < 1e15 ? "%.0f" : "%.3g", v);
}

/* Every series' bar in each group, side by side in the order of the series, its value (or its label) on it. */
static void draw_bars(FILE *f, const figure *g) {
    const double gw = (g->xs.p1 - g->xs.p0) / g->t->n_groups, bw = 0.8 * gw / g->t->n;
    const double base = g->ys.lo > 0 ? g->ys.lo : g->ys.hi < 0 ? g->ys.hi : 0, b = plot_px(&g->ys, base);
    for (int i = 0; i < g->t->n; i++)
        for (int j = 0; j < g->t->s[i].n; j++) {
            const table_point *q = &g->t->s[i].p[j];
            const double x = g->xs.p0 + q->x * gw + 0.1 * gw + i * bw;
            const double y = fmin(fmax(plot_px(&g->ys, q->y), g->ys.p1), g->ys.p0);
            fprintf(f, "<rect class=\"bar\" data-series=\"");
            plot_put_escaped(f, g->t->s[i].name);
            fprintf(f, "\" data-group=\"");
            plot_put_escaped(f, g->t->groups[(int)q->x]);
            fprintf(f, "\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n", x, fmin(y, b),
                    fmax(bw - 2, 1), fabs(y - b), colour_of(g->t, i));
            char value[32];
            value_text(value, sizeof value, q->y);
            const char *text = q->label ? q->label : value;
            const double size = fmin(10, (bw - 1) / (0.62 * (double)strlen(text)));
            if (size < 5) continue; /* too narrow a bar to carry it */
            fprintf(f, "<text class=\"value\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"%.1f\">",
                    x + bw / 2 - 1, q->y >= base ? fmin(y, b) - 3 : fmax(y, b) + size + 1, size);
            plot_put_escaped(f, text);
            fputs("</text>\n", f);
        }
}

/* Where a group's name goes on a second line: at the space nearest its middle when it is longer than 12
 * characters, else nowhere (0). */
static size_t group_split(const char *name) {
    const size_t len = strlen(name);
    for (size_t d = 0; len > 12 && d < len / 2; d++)
        if (name[len / 2 - d] == ' ' || name[len / 2 + d] == ' ')
            return name[len / 2 - d] == ' ' ? len / 2 - d : len / 2 + d;
    return 0;
}

/* The characters of a group name's longer line, split at AT (group_split's). */
static size_t group_longest(const char *name, size_t at) {
    const size_t len = strlen(name);
    return at && len - at - 1 > at ? len - at - 1 : at ? at : len;
}

/* Each group's name under its bars: on two lines when it is long and has a space near its middle, smaller
 * when a line would be wider than the group. */
static int draw_groups(FILE *f, const figure *g) {
    const double gw = (g->xs.p1 - g->xs.p0) / g->t->n_groups;
    for (int k = 0; k < g->t->n_groups; k++) {
        char *name = strdup(g->t->groups[k]), *second = NULL;
        if (!name) return cli_error("out of memory");
        const size_t at = group_split(name), longest = group_longest(name, at);
        if (at) name[at] = '\0', second = name + at + 1;
        const double size = fmax(6, fmin(11, (gw - 4) / (0.62 * (double)(longest ? longest : 1))));
        for (int l = 0; l < 2; l++) {
            if (l && !second) break;
            fprintf(f, "<text class=\"group\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"%.1f\">",
                    g->xs.p0 + (k + 0.5) * gw, g->ys.p0 + 16 + 13 * l, size);
            plot_put_escaped(f, l ? second : name);
            fputs("</text>\n", f);
        }
        free(name);
    }
    return EXIT_OK;
}

/* ---- the figure -------------------------------------------------------------------------------------------- */

static int draw(FILE *f, const void *ctx) {
    const figure *g = ctx;
    plot_begin(f, g->w, g->h, g->o->title);
    fprintf(f, "<clipPath id=\"c0\"><rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\"/></clipPath>\n",
            g->xs.p0 - 3, g->ys.p1 - 3, g->xs.p1 - g->xs.p0 + 6, g->ys.p0 - g->ys.p1 + 6);
    const char *xl = g->o->x_label && g->o->x_label[0] ? g->o->x_label : NULL;
    plot_axes(f, &g->xs, &g->ys, g->o->y_label ? g->o->y_label : "", xl, g->kind != PLOT_BARS);
    taken labels = {0};
    int rc = g->kind == PLOT_BARS ? draw_groups(f, g) : start_taken(g, &labels);
    if (!rc && g->kind == PLOT_BARS) draw_bars(f, g);
    if (!rc && g->kind != PLOT_BARS && g->o->front) rc = draw_front(f, g);
    for (int i = 0; i < g->t->n && !rc && g->kind != PLOT_BARS; i++) rc = draw_series(f, g, i, &labels);
    free(labels.b);
    plot_legend(f, g->keys, g->n_keys, g->legend_top);
    fputs("</svg>\n", f);
    return rc;
}

/* The y axis of bars: from 0 (or below it, for negative values) to the largest value, and room above for the
 * values printed on the bars. */
static plot_scale bar_scale(double y0, double y1, double p0, double p1) {
    const double lo = fmin(0, y0), hi = fmax(0, y1), pad = hi > lo ? 0.16 * (hi / 2 - lo / 2) : 1;
    return (plot_scale){.lo = lo < 0 ? fmax(lo - pad, -DBL_MAX) : 0, .hi = hi > 0 || lo == hi ? fmin(hi + pad, DBL_MAX) : 0,
                        .p0 = p0, .p1 = p1};
}

/* The figure's size, scales (--ymin and --ymax over the data's range) and legend. */
static int lay_out(figure *g) {
    const plot_table *t = g->t;
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (int i = 0; i < t->n; i++)
        for (int j = 0; j < t->s[i].n; j++) {
            x0 = fmin(x0, t->s[i].p[j].x), x1 = fmax(x1, t->s[i].p[j].x);
            y0 = fmin(y0, t->s[i].p[j].y), y1 = fmax(y1, t->s[i].p[j].y);
        }
    const bool bars = g->kind == PLOT_BARS;
    double group_w = GROUP_W; /* wide enough for each group's name in 7-pixel type */
    for (int k = 0; bars && k < t->n_groups; k++)
        group_w = fmax(group_w, 0.62 * 7 * group_longest(t->groups[k], group_split(t->groups[k])) + 4);
    const int bars_w = PLOT_LEFT + PLOT_RIGHT + (int)ceil(group_w * t->n_groups);
    g->w = bars && bars_w > PLOT_W ? bars_w : PLOT_W;
    const double top = PLOT_TOP, bottom = PLOT_TOP + TABLE_H;
    g->xs = bars ? (plot_scale){.lo = 0, .hi = t->n_groups, .p0 = PLOT_LEFT, .p1 = g->w - PLOT_RIGHT}
                 : plot_fit(x0, x1, g->o->logx, PLOT_LEFT, g->w - PLOT_RIGHT);
    g->ys = bars ? bar_scale(y0, y1, bottom, top) : plot_fit(y0, y1, g->o->logy, bottom, top);
    if (!isnan(g->o->ymin)) g->ys.lo = g->o->logy ? log10(g->o->ymin) : g->o->ymin;
    if (!isnan(g->o->ymax)) g->ys.hi = g->o->logy ? log10(g->o->ymax) : g->o->ymax;
    const double lo = g->o->logy ? pow(10, g->ys.lo) : g->ys.lo, hi = g->o->logy ? pow(10, g->ys.hi) : g->ys.hi;
    if (!(g->ys.hi > g->ys.lo))
        return cli_usage_error("plot", "--ymin/--ymax: the y axis would run from %g to %g (the table's y: %g to %g)", lo,
                               hi, y0, y1);
    for (int i = 0; i < t->n; i++)
        if (t->s[i].name[0])
            g->keys[g->n_keys++] = (plot_key){t->s[i].name, colour_of(t, i), t->s[i].dash[0] ? t->s[i].dash : NULL};
    if (g->o->front) g->keys[g->n_keys++] = (plot_key){"Pareto front", "#555", "6,4"};
    const bool x_label = g->o->x_label && g->o->x_label[0]; /* under the tick labels, or the groups' two lines */
    g->legend_top = PLOT_TOP + TABLE_H + (x_label ? PLOT_GAP + (bars ? 12 : 0) : bars ? 40 : 28) + 4;
    g->h = g->legend_top + plot_legend_height(g->keys, g->n_keys) + 10;
    return EXIT_OK;
}

/* The options against the kind: bars start at 0, on no log axis, and have no front. */
static int check_opts(const cli_plot_table_opts *o, plot_kind *kind) {
    const char *k = o->kind ? o->kind : "lines";
    *kind = !strcmp(k, "points") ? PLOT_POINTS : !strcmp(k, "bars") ? PLOT_BARS : PLOT_LINES;
    if (strcmp(k, "lines") && strcmp(k, "points") && strcmp(k, "bars"))
        return cli_usage_error("plot", "--kind: '%s' is not one of lines, points, bars", k);
    if (*kind == PLOT_BARS && (o->logx || o->logy || o->front))
        return cli_usage_error("plot", "--kind bars takes no %s (bars stand on 0, in groups)",
                               o->logx ? "--logx" : o->logy ? "--logy" : "--front");
    if (o->logy && ((!isnan(o->ymin) && !(o->ymin > 0)) || (!isnan(o->ymax) && !(o->ymax > 0))))
        return cli_usage_error("plot", "--ymin and --ymax must be above 0 with --logy");
    if (!isnan(o->ymin) && !isnan(o->ymax) && !(o->ymin < o->ymax))
        return cli_usage_error("plot", "--ymin %g is not below --ymax %g", o->ymin, o->ymax);
    return EXIT_OK;
}

int cli_plot_table(const char *tsv, const char *out_svg, const cli_plot_table_opts *o) {
    figure g = {.o = o};
    int rc = check_opts(o, &g.kind);
    const char *inputs[1] = {tsv};
    if (!rc) rc = plot_check_out(out_svg, "--out", "plot", inputs, 1, o->force);
    plot_table *t = calloc(1, sizeof *t);
    if (!rc && !t) rc = cli_error("out of memory");
    if (!rc) rc = plot_table_read(tsv, g.kind, o->logx, o->logy, t);
    g.t = t;
    if (!rc) rc = lay_out(&g);
    if (!rc) rc = plot_write(out_svg, draw, &g);
    if (t) plot_table_free(t);
    free(t);
    return rc;
}
