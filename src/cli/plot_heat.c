/* Heat maps as SVG (plot_heat.h): cells, labels, a colour legend; plain SVG text, drawn with plot_svg.c's pieces. */
#include "plot_heat.h"

#include <math.h>
#include <string.h>

#include "plot_svg.h"

enum { PAD = 12, TITLE_H = 22, NAME_H = 16, LEGEND_H = 50, LEGEND_W = 240, LABEL_MAX = 16 };
#define CHAR_W 6.2 /* pixels per character of a label at font size 11 (DejaVu Sans: about 6 on average) */

/* The stops of the two scales: sequential white to dark blue (ColorBrewer's Blues), diverging blue, white, red
 * (RdBu), each at 0, 1/4, 1/2, 3/4, 1 of the way. */
static const unsigned SEQ[5] = {0xffffff, 0xc6dbef, 0x6baed6, 0x2171b5, 0x08306b};
static const unsigned DIV[5] = {0x2166ac, 0x92c5de, 0xf7f7f7, 0xf4a582, 0xb2182b};

heat_scale heat_fit(const float *v, int rows, int cols, int stride, bool diverging, bool from_zero) {
    double lo = INFINITY, hi = -INFINITY;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            const double x = v[(size_t)r * (size_t)stride + (size_t)c];
            if (isfinite(x)) lo = fmin(lo, x), hi = fmax(hi, x);
        }
    if (!isfinite(lo)) lo = hi = 0;
    if (diverging) {
        const double span = fmax(fmax(fabs(lo), fabs(hi)), 1e-12);
        return (heat_scale){-span, span, true};
    }
    if (from_zero) lo = fmin(lo, 0);
    return (heat_scale){lo, hi > lo ? hi : lo + 1e-12, false};
}

/* The colour of x on s as #rrggbb into buf. */
static const char *colour(char *buf, double x, const heat_scale *s) {
    const unsigned *stop = s->diverging ? DIV : SEQ;
    double t = (x - s->lo) / (s->hi - s->lo);
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    const int k = t >= 1 ? 3 : (int)(t * 4);
    const double f = t * 4 - k;
    int rgb[3];
    for (int i = 0; i < 3; i++) {
        const int a = (int)(stop[k] >> (16 - 8 * i) & 0xff), b = (int)(stop[k + 1] >> (16 - 8 * i) & 0xff);
        rgb[i] = (int)lround(a + f * (b - a));
    }
    snprintf(buf, 8, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
    return buf;
}

/* The characters of s (UTF-8 lead bytes), at most LABEL_MAX. */
static int chars(const char *s) {
    int n = 0;
    for (; s && *s; s++) n += (*s & 0xC0) != 0x80;
    return n < LABEL_MAX ? n : LABEL_MAX;
}

/* All the characters of s. */
static int chars_all(const char *s) {
    int n = 0;
    for (; *s; s++) n += (*s & 0xC0) != 0x80;
    return n;
}

static int longest(const char *const *labels, int n) {
    int m = 0;
    for (int i = 0; labels && i < n; i++) m = chars(labels[i]) > m ? chars(labels[i]) : m;
    return m;
}

/* A label every step rows (or columns) of size px: all of them from 11 pixels, else every few. */
static int label_step(int px) { return px >= 11 ? 1 : (11 + px - 1) / px; }

/* The panel's parts: the label band left of the grid and the one under it. */
static double row_band(const heat_panel *p) {
    const int n = longest(p->row_labels, p->rows);
    return (p->row_labels ? 8 + CHAR_W * (n > p->label_chars ? n : p->label_chars) : 0) + (p->row_name ? NAME_H : 0);
}
static double col_band(const heat_panel *p) {
    return (p->col_labels ? 8 + CHAR_W * longest(p->col_labels, p->cols) : 0) + (p->col_name ? NAME_H + 4 : 0);
}

static double panel_w(const heat_panel *p) {
    return PAD + fmax(row_band(p) + (double)p->cols * p->cell_w, LEGEND_W) + PAD;
}
static double panel_h(const heat_panel *p) {
    return (p->title ? TITLE_H : 0) + (double)p->rows * p->cell_h + col_band(p) + LEGEND_H + PAD;
}

/* The cells, each with its tooltip: "ROW / COL: VALUE". */
static void cells(FILE *f, const heat_panel *p, double x0, double y0) {
    char c[8];
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"#e8e8e8\"/>\n", x0, y0,
            p->cols * p->cell_w, p->rows * p->cell_h); /* an empty cell: no value there */
    for (int r = 0; r < p->rows; r++)
        for (int k = 0; k < p->cols; k++) {
            const double v = p->v[(size_t)r * (size_t)p->stride + (size_t)k];
            if (!isfinite(v)) continue; /* empty: the grey background */
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"%s\"><title>", x0 + k * p->cell_w,
                    y0 + r * p->cell_h, p->cell_w, p->cell_h, colour(c, v, &p->scale));
            if (p->row_labels) plot_put_escaped(f, p->row_labels[r]);
            else fprintf(f, "%d", r);
            fputs(" / ", f);
            if (p->col_labels) plot_put_escaped(f, p->col_labels[k]);
            else fprintf(f, "%d", k);
            fprintf(f, ": %s %.4g</title></rect>\n", p->value_name, v);
        }
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#888\"/>\n", x0, y0,
            p->cols * p->cell_w, p->rows * p->cell_h);
}

/* The row labels (right-aligned left of the grid) and the column labels (upright, reading upwards, under it). */
static void labels(FILE *f, const heat_panel *p, double x0, double y0) {
    const int rs = label_step(p->cell_h), cs = label_step(p->cell_w);
    for (int r = 0; p->row_labels && r < p->rows; r += rs) {
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\">", x0 - 4,
                y0 + (r + 0.5) * p->cell_h + 4);
        plot_put_escaped(f, p->row_labels[r]);
        fputs("</text>\n", f);
    }
    const double yb = y0 + (double)p->rows * p->cell_h + 4;
    for (int k = 0; p->col_labels && k < p->cols; k += cs) {
        fprintf(f, "<text transform=\"translate(%.1f %.1f) rotate(-90)\" text-anchor=\"end\" font-size=\"11\">",
                x0 + (k + 0.5) * p->cell_w + 4, yb);
        plot_put_escaped(f, p->col_labels[k]);
        fputs("</text>\n", f);
    }
    if (p->row_name) {
        fprintf(f, "<text transform=\"translate(%.1f %.1f) rotate(-90)\" text-anchor=\"middle\" fill=\"#555\">",
                x0 - row_band(p) + 12, y0 + (double)p->rows * p->cell_h / 2);
        plot_put_escaped(f, p->row_name);
        fputs("</text>\n", f);
    }
    if (p->col_name) {
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#555\">", x0 + (double)p->cols * p->cell_w / 2,
                yb + col_band(p) - 6);
        plot_put_escaped(f, p->col_name);
        fputs("</text>\n", f);
    }
}

/* The colour bar (a gradient of the scale's stops), its two ends and middle, and what it measures. */
static void legend(FILE *f, const heat_panel *p, double x0, double y0, int id) {
    const unsigned *stop = p->scale.diverging ? DIV : SEQ;
    fprintf(f, "<defs><linearGradient id=\"heat%d\">", id);
    for (int i = 0; i < 5; i++) fprintf(f, "<stop offset=\"%d%%\" stop-color=\"#%06x\"/>", 25 * i, stop[i]);
    fprintf(f, "</linearGradient></defs>\n<rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"12\" fill=\"url(#heat%d)\" "
            "stroke=\"#888\"/>\n", x0, y0, LEGEND_W - 40, id);
    const double v[3] = {p->scale.lo, (p->scale.lo + p->scale.hi) / 2, p->scale.hi};
    for (int i = 0; i < 3; i++)
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"11\">%.3g</text>\n",
                x0 + i * (LEGEND_W - 40) / 2.0, y0 + 25, i == 0 ? "start" : i == 1 ? "middle" : "end", v[i]);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#555\">", x0, y0 + 40);
    plot_put_escaped(f, p->value_name);
    fputs("</text>\n", f);
}

/* Panel p with its top left corner at (x, y). */
static void panel(FILE *f, const heat_panel *p, double x, double y, int id) {
    if (p->title) {
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\" font-weight=\"bold\">", x + PAD, y + 15);
        plot_put_escaped(f, p->title);
        fputs("</text>\n", f);
        y += TITLE_H;
    }
    const double gx = x + PAD + row_band(p);
    cells(f, p, gx, y);
    labels(f, p, gx, y);
    legend(f, p, gx, y + (double)p->rows * p->cell_h + col_band(p) + 6, id);
}

int heat_figure_draw(FILE *f, const void *ctx) {
    const heat_figure *g = ctx;
    const int per = g->per_row > 0 ? g->per_row : 1;
    double w = 0, h = (g->title ? PLOT_TOP - 10 : 0) + (g->subtitle ? 18 : 0), row_h = 0, row_w = 0;
    w = g->title ? PLOT_LEFT + 8.6 * chars_all(g->title) + PAD : 0; /* the title at font size 15 */
    for (int i = 0; i < g->n; i++) { /* the figure's size: rows of panels */
        row_w += panel_w(&g->panels[i]), row_h = fmax(row_h, panel_h(&g->panels[i]));
        if (i % per == per - 1 || i == g->n - 1) w = fmax(w, row_w), h += row_h, row_w = row_h = 0;
    }
    plot_begin(f, (int)ceil(fmax(w, PLOT_W / 2)), (int)ceil(h), g->title);
    double y = g->title ? PLOT_TOP - 10 : 0, x = 0;
    if (g->subtitle) {
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" fill=\"#555\">", PLOT_LEFT, y + 8);
        plot_put_escaped(f, g->subtitle);
        fputs("</text>\n", f);
        y += 18;
    }
    for (int i = 0; i < g->n; i++) {
        panel(f, &g->panels[i], x, y, i);
        x += panel_w(&g->panels[i]), row_h = fmax(row_h, panel_h(&g->panels[i]));
        if (i % per == per - 1) x = 0, y += row_h, row_h = 0;
    }
    fputs("</svg>\n", f);
    return 0;
}
