/* grassflow plot's drawing, shared by run folders and tables: plain SVG text, no dependency (plot_svg.h). */
#include "plot_svg.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

const char *const plot_colours[10] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                      "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};

#define LOG10_MAX 308.2547    /* log10 of the largest double */
#define LOG10_MIN (-323.3062) /* log10 of the smallest (subnormal) one */

double plot_px(const plot_scale *s, double v) {
    const double a = s->log ? log10(v) : v;
    return s->p0 + (a / 2 - s->lo / 2) / (s->hi / 2 - s->lo / 2) * (s->p1 - s->p0);
}

plot_scale plot_fit(double lo, double hi, bool log, double p0, double p1) {
    plot_scale s = {.p0 = p0, .p1 = p1, .log = log};
    if (log) {
        const double pad = hi > lo ? 0.04 * (log10(hi) - log10(lo)) : 0.5;
        s.lo = fmax(log10(lo) - pad, LOG10_MIN), s.hi = fmin(log10(hi) + pad, LOG10_MAX);
        return s;
    }
    const double pad = hi > lo ? 0.05 * hi - 0.05 * lo : lo == 0 ? 0.01 : fmax(0.05 * fabs(lo), fmin(0.01, 0.5 * fabs(lo)));
    s.lo = fmax(lo - pad, -DBL_MAX), s.hi = fmin(hi + pad, DBL_MAX);
    const double least = 1e-9 * fmax(fabs(s.lo), fabs(s.hi)), mid = s.lo / 2 + s.hi / 2;
    if (s.hi / 2 - s.lo / 2 < least / 2) s.lo = mid - least / 2, s.hi = mid + least / 2;
    return s;
}

void plot_put_escaped(FILE *f, const char *s) {
    char small[GF_ESCAPE_CAP(256)], *buf = small;
    const size_t need = gf_escape_xml(small, sizeof small, s);
    if (need >= sizeof small && (buf = malloc(need + 1))) gf_escape_xml(buf, need + 1, s);
    fputs(buf ? buf : small, f); /* out of memory: the escaped text cut short, still XML */
    if (buf && buf != small) free(buf);
}

/* ---- ticks ------------------------------------------------------------------------------------------------ */

/* 1, 2 or 5 times a power of ten, near 2 * half / want (half: half the range, which is finite). */
static double nice_step(double half, int want) {
    const double raw = half / want * 2, mag = pow(10, floor(log10(raw))), r = raw / mag;
    return (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10) * mag;
}

/* Log-scale ticks spanning a decade or more: 1, 2 and 5 times the powers of ten, or the powers alone, or
 * every stride-th power (stride 2, 5, 10, 20, 50, ...) so that at most 10 remain. */
static int log_ticks(const plot_scale *s, double *t, int max) {
    const int k0 = (int)floor(s->lo), k1 = (int)ceil(s->hi), decades = k1 - k0;
    int stride = 1, n = 0;
    for (int m = 1; decades / stride > 9; m *= 10) /* 1, 2, 5, 10, 20, 50, ... */
        stride = decades / (2 * m) <= 9 ? 2 * m : decades / (5 * m) <= 9 ? 5 * m : 10 * m;
    for (int per = stride == 1 ? 3 : 1; per >= 1 && (n == 0 || n > 10); per -= 2) { /* 1, 2, 5 times each, or 1 */
        n = 0;
        for (int k = k0 - (k0 % stride + stride) % stride; k <= k1; k += stride)
            for (int j = 0; j < per; j++) {
                const double v = (j == 0 ? 1 : j == 1 ? 2 : 5) * pow(10, k), a = log10(v);
                if (v > 0 && a >= s->lo - 1e-9 && a <= s->hi + 1e-9 && n < max) t[n++] = v;
            }
    }
    return n;
}

/* Ticks of s into t (at most max): multiples of a nice step, or on a log scale spanning a decade or more
 * powers of ten (log_ticks). *step: the linear step (0 on a log scale). */
static int ticks(const plot_scale *s, double *t, int max, double *step) {
    *step = 0;
    if (s->log && s->hi - s->lo >= 1) return log_ticks(s, t, max);
    const double lo = s->log ? pow(10, s->lo) : s->lo, hi = s->log ? fmin(pow(10, s->hi), DBL_MAX) : s->hi;
    *step = nice_step(hi / 2 - lo / 2, 6);
    const double k0 = ceil(lo / *step - 1e-9);
    int n = 0;
    for (double v = k0 * *step; isfinite(v) && v / 2 - hi / 2 <= 5e-10 * *step && n < max; v = (k0 + n) * *step)
        t[n++] = fabs(v) < 1e-12 * *step ? 0 : v;
    return n;
}

/* A tick label: step gives the decimals; big numbers (tokens) with k, M or G by the axis's largest (0: none);
 * a value that would take more than 6 digits before the point or after it in scientific notation, with the
 * digits its step needs (1.5e+300, 1.0000002e+00). */
static void tick_label(char *buf, size_t n, double v, double step, double axis_max) {
    const double d = axis_max >= 1e15 ? 1 : axis_max >= 1e9 ? 1e9 : axis_max >= 1e6 ? 1e6 : axis_max >= 1e4 ? 1e3 : 1;
    const char *suffix = d == 1e9 ? "G" : d == 1e6 ? "M" : d == 1e3 ? "k" : "";
    const double a = fabs(v) / d, st = step / d;
    if (v == 0) {
        snprintf(buf, n, "0");
    } else if (step <= 0) { /* a log scale's: 1, 2 or 5 times a power of ten */
        snprintf(buf, n, a >= 1e6 || a < 1e-4 ? "%.0e%s" : "%g%s", v / d, suffix);
    } else if (a >= 1e6 || st < 1e-6) {
        const int p = (int)floor(log10(a)) - (int)floor(log10(st));
        snprintf(buf, n, "%.*e%s", p < 0 ? 0 : p > 15 ? 15 : p, v / d, suffix);
    } else {
        const int dec = st >= 1 ? 0 : (int)ceil(-log10(st) - 1e-9);
        snprintf(buf, n, "%.*f%s", dec, v / d, suffix);
    }
}

/* ' font-size="S"' for a tick label that would not fit in px pixels at the font's 12 (about 7.4 pixels a
 * character): the long labels of a narrow or a vast range; "" for the others. */
static const char *fit(char *buf, size_t n, const char *label, double px) {
    const double size = px / (0.62 * (double)strlen(label));
    buf[0] = '\0';
    if (size < 12) snprintf(buf, n, " font-size=\"%.1f\"", fmax(size, 5.0));
    return buf;
}

/* ---- axes ------------------------------------------------------------------------------------------------- */

/* The x axis's grid lines and tick labels. Big numbers get k, M or G on a linear axis; a log axis's powers
 * are labelled each by itself. */
static void x_ticks_of(FILE *f, const plot_scale *xs, const plot_scale *ys) {
    double t[64], step;
    char lab[64], font[32];
    const int nt = ticks(xs, t, 64, &step);
    for (int i = 0; i < nt; i++) {
        const double x = plot_px(xs, t[i]), room = nt > 1 ? fabs(plot_px(xs, t[1]) - plot_px(xs, t[0])) - 6 : PLOT_W;
        tick_label(lab, sizeof lab, t[i], step, xs->log ? 0 : xs->hi);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n", x, ys->p1, x, ys->p0);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\"%s>%s</text>\n", x, ys->p0 + 17,
                fit(font, sizeof font, lab, room), lab);
    }
}

/* The y axis's grid lines and tick labels; returns the base they are offsets from (0: none). A range narrow
 * for its values (1 to 1 + 1e-15) has its ticks as offsets from the middle one, named in the y label, instead
 * of labels of a dozen digits. */
static double y_ticks_of(FILE *f, const plot_scale *xs, const plot_scale *ys, double *step) {
    double t[64];
    char lab[64], font[32];
    const int nt = ticks(ys, t, 64, step);
    const double base = *step > 0 && nt > 2 && *step < 1e-5 * fmax(fabs(t[0]), fabs(t[nt - 1])) ? t[nt / 2] : 0;
    for (int i = 0; i < nt; i++) {
        const double y = plot_px(ys, t[i]);
        tick_label(lab, sizeof lab, t[i] - base, *step, 0);
        fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n", xs->p0, y, xs->p1, y);
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\"%s>%s</text>\n", xs->p0 - 6, y + 4,
                fit(font, sizeof font, lab, xs->p0 - 30), lab); /* right of the y label */
    }
    return base;
}

void plot_axes(FILE *f, const plot_scale *xs, const plot_scale *ys, const char *y_label, const char *x_label,
               bool x_ticks) {
    double step;
    if (x_ticks) x_ticks_of(f, xs, ys);
    const double base = y_ticks_of(f, xs, ys, &step);
    fprintf(f, "<rect x=\"%.0f\" y=\"%.1f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"#444\"/>\n", xs->p0,
            ys->p1, xs->p1 - xs->p0, ys->p0 - ys->p1);
    char off[48] = "";
    if (base != 0) /* as many digits as the step needs */
        snprintf(off, sizeof off, " \u2212 %.*g", (int)fmin(17, floor(log10(fabs(base))) - floor(log10(step)) + 1), base);
    fprintf(f, "<text transform=\"translate(%d %.1f) rotate(-90)\" text-anchor=\"middle\">", 18, (ys->p0 + ys->p1) / 2);
    plot_put_escaped(f, y_label);
    fprintf(f, "%s%s</text>\n", off, ys->log ? " (log scale)" : "");
    if (x_label) { /* under two lines of a bar chart's group names, lower */
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"middle\">", (xs->p0 + xs->p1) / 2,
                ys->p0 + (x_ticks ? 40 : 50));
        plot_put_escaped(f, x_label); /* "tokens seen": the unit is the file's */
        fprintf(f, "%s</text>\n", xs->log ? " (log scale)" : "");
    }
}

int plot_thin(const plot_point *c, int n_points, const plot_scale *xs, const plot_scale *ys, int *keep) {
    const int max = 4 * (int)(xs->p1 - xs->p0);
    int n = 0;
    for (int i = 0; i < n_points;) {
        const double col = floor(plot_px(xs, c[i].x));
        int j = i, lo = i, hi = i;
        for (; j < n_points && (n_points <= max || floor(plot_px(xs, c[j].x)) == col); j++) {
            if (plot_px(ys, c[j].y) < plot_px(ys, c[lo].y)) lo = j;
            if (plot_px(ys, c[j].y) > plot_px(ys, c[hi].y)) hi = j;
            if (n_points <= max) keep[n++] = j;
        }
        if (n_points > max) { /* i, lo, hi, j - 1 in order, once each */
            const int a = lo < hi ? lo : hi, b = lo < hi ? hi : lo, pick[4] = {i, a, b, j - 1};
            for (int k = 0; k < 4; k++)
                if (n == 0 || pick[k] > keep[n - 1]) keep[n++] = pick[k];
        }
        i = j;
    }
    return n;
}

/* ---- the legend ------------------------------------------------------------------------------------------- */

/* The most characters of a name the legend shows (about 7 pixels each): a longer one (a path) loses its
 * beginning. */
#define LEGEND_CHARS ((PLOT_W - PLOT_LEFT - PLOT_RIGHT - 44) / 7)

static void put_legend_name(FILE *f, const char *name) {
    const size_t len = strlen(name);
    if (len > LEGEND_CHARS) {
        fputs("...", f);
        name += len - (LEGEND_CHARS - 3);
        while ((*name & 0xC0) == 0x80) name++; /* not inside a UTF-8 character */
    }
    plot_put_escaped(f, name);
}

/* The legend's columns: as many as the longest name lets fit. */
static int legend_cols(const plot_key *keys, int n, int *col_w) {
    size_t longest = 0;
    for (int i = 0; i < n; i++) longest = strlen(keys[i].name) > longest ? strlen(keys[i].name) : longest;
    *col_w = 44 + 7 * (int)(longest < LEGEND_CHARS ? longest : LEGEND_CHARS);
    return *col_w < PLOT_W - PLOT_LEFT - PLOT_RIGHT ? (PLOT_W - PLOT_LEFT - PLOT_RIGHT) / *col_w : 1;
}

int plot_legend_height(const plot_key *keys, int n) {
    int col_w;
    const int cols = legend_cols(keys, n, &col_w);
    return PLOT_LEGEND_ROW * ((n + cols - 1) / cols);
}

void plot_legend(FILE *f, const plot_key *keys, int n, double top) {
    int col_w;
    const int cols = legend_cols(keys, n, &col_w);
    for (int i = 0; i < n; i++) {
        const int x = PLOT_LEFT + (i % cols) * col_w;
        const double y = top + PLOT_LEGEND_ROW * (i / cols) + 6;
        if (keys[i].dash)
            fprintf(f, "<g class=\"legend\"><line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\" "
                    "stroke-width=\"2.5\" stroke-dasharray=\"%s\"/><text x=\"%d\" y=\"%.1f\">", x, y, x + 30, y,
                    keys[i].colour, keys[i].dash, x + 36, y + 4);
        else
            fprintf(f, "<g class=\"legend\"><rect x=\"%d\" y=\"%.1f\" width=\"30\" height=\"4\" fill=\"%s\"/>"
                    "<text x=\"%d\" y=\"%.1f\">", x, y - 2, keys[i].colour, x + 36, y + 4);
        put_legend_name(f, keys[i].name);
        fputs("</text></g>\n", f);
    }
}

/* ---- the file --------------------------------------------------------------------------------------------- */

void plot_begin(FILE *f, int w, int h, const char *title) {
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
            "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\" fill=\"#222\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", w, h, w, h);
    if (!title) return;
    fprintf(f, "<text x=\"%d\" y=\"26\" font-size=\"15\">", PLOT_LEFT);
    plot_put_escaped(f, title);
    fputs("</text>\n", f);
}

int plot_write(const char *out, int (*draw)(FILE *f, const void *ctx), const void *ctx) {
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (!f) return cli_error("out of memory drawing %s", out);
    int rc = draw(f, ctx);
    if (fclose(f) != 0 && !rc) rc = cli_error("out of memory drawing %s", out);
    if (!rc && gf_write_file_atomic(out, buf, size)) rc = cli_error("plot: %s", gf_last_error());
    free(buf);
    return rc;
}

/* Whether path holds an SVG (its text starts with "<svg" or "<?xml", after white space): what plot replaces
 * without --force. */
static bool holds_svg(const char *path) {
    char head[256] = "";
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    size_t n = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    head[n] = '\0';
    const char *h = head + strspn(head, " \t\r\n");
    return !strncmp(h, "<svg", 4) || !strncmp(h, "<?xml", 5);
}

int plot_check_out(const char *out, const char *flag, const char *cmd, const char *const *inputs, int n, bool force) {
    struct stat st;
    char hint[96];
    snprintf(hint, sizeof hint, "%s replaces an SVG; give --force to replace another file", cmd);
    const bool replace = force || (stat(out, &st) == 0 && S_ISREG(st.st_mode) && holds_svg(out));
    if (cli_output_check(out, flag, inputs, n, replace, hint)) return cli_error("%s: %s", cmd, gf_last_error());
    return EXIT_OK;
}
