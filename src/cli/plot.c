/* grassflow plot: training and validation curves of run folders (their metrics.jsonl) as one SVG. The
 * curves come from gf_metrics_read; the drawing (panels, ticks, legend) is plain SVG text, no dependency. */
#include "plot.h"

#include <getopt.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

#define MAX_RUNS CLI_PLOT_MAX_RUNS
#define MAX_PANELS 3

/* ---- curves ------------------------------------------------------------------------------------------- */

typedef struct { double x, y; } point;
typedef struct {
    point *p;
    int n;
    int skipped;      /* rows that should have given a point but hold no finite value (null: a diverged step) */
} curve;

typedef struct run {
    char name[256];   /* the legend's: the folder's name, or the last parts of its path that tell it apart */
    gf_metrics m;
    int *keep;        /* the rows a curve is drawn from, in order (a step logged again after a resume: the later row) */
    int n_keep;
} run;

typedef enum { X_STEP, X_TOKENS, X_TIME } x_kind;

typedef struct plot {
    run runs[MAX_RUNS];
    int n;
    x_kind x;
    char x_label[64];
    double x_scale;                   /* time: seconds per unit of the axis */
    const char *panel[MAX_PANELS];    /* "loss" or a metric's name: "ppl", "accuracy", a task's own (in panel_list) */
    char panel_list[64];
    int n_panels;
} plot;

/* Drop r's kept rows from step `from` on (of type `type` only, unless NULL). */
static void drop_from(run *r, int64_t from, const char *type) {
    int k = 0;
    for (int j = 0; j < r->n_keep; j++) {
        const gf_metrics_row *v = &r->m.rows[r->keep[j]];
        if (v->step < from || (type && strcmp(v->type, type))) r->keep[k++] = r->keep[j];
    }
    r->n_keep = k;
}

/* The rows of r's curves: train and eval rows, except those a resume after a kill logged again (the steps
 * since the last save): a session's start row at step S drops the rows past S; in older files, which have
 * no start rows, a row whose step is not past the last one of its type drops those from its step on. */
static int keep_rows(run *r) {
    r->keep = malloc((size_t)(r->m.n ? r->m.n : 1) * sizeof *r->keep);
    if (!r->keep) return cli_error("out of memory");
    int64_t last[2] = {-1, -1}; /* the last kept train and eval steps */
    for (int64_t i = 0; i < r->m.n; i++) {
        const gf_metrics_row *w = &r->m.rows[i];
        const int t = !strcmp(w->type, "train") ? 0 : !strcmp(w->type, "eval") ? 1 : -1;
        if (!strcmp(w->type, "start") && (w->step < last[0] || w->step < last[1])) {
            drop_from(r, w->step + 1, NULL);
            last[0] = last[1] = w->step;
        }
        if (t < 0) continue;
        if (w->step <= last[t]) drop_from(r, w->step, w->type);
        r->keep[r->n_keep++] = (int)i;
        last[t] = w->step;
    }
    return EXIT_OK;
}

/* The x of row w, or NAN when the row does not say. */
static double x_of(const plot *p, const gf_metrics_row *w) {
    if (p->x == X_STEP) return (double)w->step;
    if (p->x == X_TOKENS) return w->seen;
    return w->elapsed_s / p->x_scale;
}

/* What panel `what` draws: the loss, a metric of the loss alone (gf_metric.by_loss: perplexity, from both
 * losses), or a metric's validation score (from the eval rows of the runs scored by it). */
typedef enum { PANEL_LOSS, PANEL_OF_LOSS, PANEL_SCORE } panel_kind;
static panel_kind kind_of(const char *what, const gf_metric **mt) {
    *mt = gf_metric_find(what);
    if (!strcmp(what, "loss")) return PANEL_LOSS;
    return *mt && (*mt)->by_loss ? PANEL_OF_LOSS : PANEL_SCORE;
}

/* The y of row w in panel `what` (of kind k, metric mt) for the training (train) or validation curve; NAN: no
 * point. */
static double y_of(const char *what, panel_kind k, const gf_metric *mt, const gf_metrics_row *w, bool train,
                   const gf_metrics *m) {
    if (strcmp(w->type, train ? "train" : "eval")) return NAN;
    if (k == PANEL_LOSS) return w->loss;
    if (k == PANEL_OF_LOSS) return mt->score(&(gf_eval_result){.mean_loss = w->loss, .n_correct = -1});
    return !train && !strcmp(m->metric, what) ? w->score : NAN;
}

/* Whether row w should give a point of the training (train) or validation curve in panel `what`. */
static bool has_y(const char *what, panel_kind k, const gf_metrics_row *w, bool train, const gf_metrics *m) {
    if (strcmp(w->type, train ? "train" : "eval")) return false;
    return k != PANEL_SCORE || (!train && !strcmp(m->metric, what));
}

/* Run i's curve (training or validation) in panel `what`; finite points only (the others counted). */
static int make_curve(const plot *p, int i, const char *what, bool train, curve *c) {
    const run *r = &p->runs[i];
    const gf_metric *mt;
    const panel_kind k = kind_of(what, &mt); /* once per curve, not per row */
    c->n = c->skipped = 0;
    c->p = malloc((size_t)(r->n_keep ? r->n_keep : 1) * sizeof *c->p);
    if (!c->p) return cli_error("out of memory");
    for (int j = 0; j < r->n_keep; j++) {
        const gf_metrics_row *w = &r->m.rows[r->keep[j]];
        const double x = x_of(p, w), y = y_of(what, k, mt, w, train, &r->m);
        if (isfinite(x) && isfinite(y)) c->p[c->n++] = (point){x, y};
        else c->skipped += isfinite(x) && has_y(what, k, w, train, &r->m);
    }
    if (c->skipped)
        fprintf(stderr, "grassflow plot: note: %s: %d %s row%s with no finite %s (null in metrics.jsonl: a step that "
                "diverged%s%s%s): not drawn\n", r->name, c->skipped, train ? "training" : "evaluation",
                c->skipped == 1 ? "" : "s", k == PANEL_SCORE ? what : train ? "loss" : "validation loss",
                k == PANEL_OF_LOSS ? ", or a loss whose " : "", k == PANEL_OF_LOSS ? mt->title : "",
                k == PANEL_OF_LOSS ? " is past 1.8e308" : "");
    return EXIT_OK;
}

/* ---- reading the runs ------------------------------------------------------------------------------------ */

/* The last k parts of path dir (all of it when it has no more) into buf. */
static const char *path_tail(const char *dir, int k, char *buf, size_t n) {
    snprintf(buf, n, "%s", dir);
    size_t len = strlen(buf);
    while (len > 1 && buf[len - 1] == '/') buf[--len] = '\0';
    const char *s = buf + len;
    while (s > buf && k > 0)
        if (*--s == '/' && --k == 0) s++;
    return s;
}

/* The legend's names: each folder's name, or as many of the last parts of its path as tell it from the
 * others (runs/a/s1 and runs/b/s1: a/s1 and b/s1). */
static void name_runs(plot *p, const char *const *dirs) {
    char buf[GF_PATH_MAX], other[GF_PATH_MAX];
    for (int i = 0; i < p->n; i++)
        for (int k = 1; k < 64; k++) {
            snprintf(p->runs[i].name, sizeof p->runs[i].name, "%s", path_tail(dirs[i], k, buf, sizeof buf));
            bool unique = true;
            for (int j = 0; j < p->n && unique; j++)
                unique = j == i || strcmp(p->runs[i].name, path_tail(dirs[j], k, other, sizeof other)) != 0;
            if (unique || !strcmp(p->runs[i].name, path_tail(dirs[i], 64, other, sizeof other))) break;
        }
}

/* Each run's metrics (a folder that is not there, or holds no metrics, is an error naming it). */
static int read_runs(plot *p, const char *const *dirs, int n) {
    for (int i = 0; i < n; i++) {
        struct stat st;
        char path[GF_PATH_MAX + 16];
        if (stat(dirs[i], &st) != 0 || !S_ISDIR(st.st_mode))
            return cli_error("plot: %s is not a folder (expected a training run's folder, the --out of train)", dirs[i]);
        snprintf(path, sizeof path, "%s/metrics.jsonl", dirs[i]);
        if (stat(path, &st) != 0)
            return cli_error("plot: %s holds no metrics.jsonl: not a training run's folder, or a run that has not "
                             "logged a step yet", dirs[i]);
        run *r = &p->runs[p->n++];
        if (gf_metrics_read(dirs[i], &r->m)) return cli_error("plot: %s", gf_last_error());
        if (keep_rows(r)) return EXIT_RUNTIME;
    }
    name_runs(p, dirs);
    return EXIT_OK;
}

/* The first run whose kept rows lack the chosen x (NULL: none). */
static const run *lacks_x(const plot *p) {
    for (int i = 0; i < p->n; i++)
        for (int j = 0; j < p->runs[i].n_keep; j++)
            if (!isfinite(x_of(p, &p->runs[i].m.rows[p->runs[i].keep[j]]))) return &p->runs[i];
    return NULL;
}

/* The x axis: its label and, for time, its unit (seconds, minutes or hours by the longest run); step when a
 * run lacks the x asked for (an older metrics.jsonl), with a note. */
static void choose_x(plot *p) {
    p->x_scale = 1.0;
    const run *r = p->x == X_STEP ? NULL : lacks_x(p);
    if (r) {
        fprintf(stderr, "grassflow plot: note: %s: metrics.jsonl has no %s on every row (written by an older "
                "grassflow); plotting against step\n", r->name, p->x == X_TOKENS ? "count of tokens seen" : "time");
        p->x = X_STEP;
    }
    if (p->x == X_STEP) snprintf(p->x_label, sizeof p->x_label, "step");
    if (p->x == X_TOKENS) {
        const char *u = p->runs[0].m.counted;
        for (int i = 1; i < p->n; i++)
            if (strcmp(p->runs[i].m.counted, u)) u = "counted targets";
        snprintf(p->x_label, sizeof p->x_label, "%s seen", u);
    }
    if (p->x == X_TIME) {
        double longest = 0;
        for (int i = 0; i < p->n; i++)
            for (int j = 0; j < p->runs[i].n_keep; j++)
                longest = fmax(longest, p->runs[i].m.rows[p->runs[i].keep[j]].elapsed_s);
        p->x_scale = longest >= 3 * 3600 ? 3600 : longest >= 300 ? 60 : 1;
        snprintf(p->x_label, sizeof p->x_label, "time (%s)", p->x_scale == 1 ? "s" : p->x_scale == 60 ? "min" : "h");
    }
}

/* Whether panel `what` is already among p's first n. */
static bool has_panel(const plot *p, const char *what) {
    for (int k = 0; k < p->n_panels; k++)
        if (!strcmp(p->panel[k], what)) return true;
    return false;
}

/* The panels --metric may name, into buf: loss, every metric this program knows (the built-in ones, the
 * registered tasks'), and those the runs are scored by. */
static void panel_names(const plot *p, char *buf, size_t n) {
    snprintf(buf, n, "loss, %s, %s", gf_metric_ppl.name, gf_metric_accuracy.name);
    for (int i = 0; i < gf_task_count() + p->n; i++) {
        const gf_metric *mt = i < gf_task_count() ? gf_task_metric(gf_task_at(i)) : NULL;
        const char *name = mt ? mt->name : i >= gf_task_count() ? p->runs[i - gf_task_count()].m.metric : "";
        char item[40];
        snprintf(item, sizeof item, ", %s", name);
        if (name[0] && !strstr(buf, item) && strlen(buf) + strlen(item) < n) strcat(buf, item);
    }
}

/* The panels: --metric's list, or loss and, below it, each metric not of the loss that a run is scored by
 * (a classifier's accuracy). */
static int choose_panels(plot *p, const char *metrics) {
    char *buf = p->panel_list, names[512];
    if (!metrics) {
        p->panel[p->n_panels++] = "loss";
        for (int i = 0; i < p->n && p->n_panels < MAX_PANELS; i++) {
            const gf_metric *mt;
            const char *m = p->runs[i].m.metric;
            if (m[0] && kind_of(m, &mt) == PANEL_SCORE && !has_panel(p, m)) p->panel[p->n_panels++] = m;
        }
        return EXIT_OK;
    }
    char *items[MAX_PANELS];
    int n, rc = cli_split_list("plot", "--metric", metrics, buf, sizeof p->panel_list, items, MAX_PANELS, "panels",
                               &n);
    if (rc) return rc;
    panel_names(p, names, sizeof names);
    for (int k = 0; k < n; k++) {
        char item[80];
        snprintf(item, sizeof item, ", %s,", items[k]);
        char list[sizeof names + 4];
        snprintf(list, sizeof list, ", %s,", names);
        if (!strstr(list, item))
            return cli_usage_error("plot", "--metric: '%s' is not one of %s", items[k], names);
        p->panel[p->n_panels++] = items[k];
    }
    if (!p->n_panels) return cli_usage_error("plot", "--metric: expected one of %s (or a list of them)", names);
    return EXIT_OK;
}

/* ---- drawing ---------------------------------------------------------------------------------------------- */

#define W 800
#define LEFT 78
#define RIGHT 24
#define TOP 46
#define PANEL_H 270
#define PANEL_GAP 62    /* below a panel: its tick labels, and the x label under the last one */
#define LEGEND_ROW 20
#define HIDDEN_PX 1.5   /* a curve this close to one drawn over it, at a quarter of its points, is hidden by it */
#define HIDDEN_BAND 2.6 /* ... and is drawn this much wider for each curve that hides it, to show around them */

static const char *const colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                      "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};

/* A scale: the axis from lo to hi onto pixels [p0, p1]; on a log scale lo and hi are the log10 of its ends (so
 * that any finite values have finite ends: 1e-300 to 1e300 is -300 to 300). Differences are taken of halves,
 * which cannot overflow (-1e308 to 1e308). */
typedef struct {
    double lo, hi, p0, p1;
    bool log;
} scale;

#define LOG10_MAX 308.2547    /* log10 of the largest double */
#define LOG10_MIN (-323.3062) /* log10 of the smallest (subnormal) one */

static double to_px(const scale *s, double v) {
    const double a = s->log ? log10(v) : v;
    return s->p0 + (a / 2 - s->lo / 2) / (s->hi / 2 - s->lo / 2) * (s->p1 - s->p0);
}

/* s (a run's name or the x label: under 256 bytes) as XML text or attribute: a name that is not UTF-8, or
 * holds a control character, still gives XML. */
static void put_escaped(FILE *f, const char *s) {
    char buf[GF_ESCAPE_CAP(256)];
    gf_escape_xml(buf, sizeof buf, s);
    fputs(buf, f);
}

/* 1, 2 or 5 times a power of ten, near 2 * half / want (half: half the range, which is finite). */
static double nice_step(double half, int want) {
    const double raw = half / want * 2, mag = pow(10, floor(log10(raw))), r = raw / mag;
    return (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10) * mag;
}

/* Log-scale ticks spanning a decade or more: 1, 2 and 5 times the powers of ten, or the powers alone, or
 * every stride-th power (stride 2, 5, 10, 20, 50, ...) so that at most 10 remain. */
static int log_ticks(const scale *s, double *t, int max) {
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
static int ticks(const scale *s, double *t, int max, double *step) {
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

/* A tick label: step gives the decimals; big numbers (tokens) with k, M or G by the axis's largest; a value
 * that would take more than 6 digits before the point or after it in scientific notation, with the digits
 * its step needs (1.5e+300, 1.0000002e+00). */
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

/* The axes of a panel: frame, grid, tick labels, the y label (and the x label under the bottom panel). */
static void draw_axes(FILE *f, const plot *p, const scale *xs, const scale *ys, const char *y_label, bool bottom) {
    double t[64], step;
    char lab[64], font[32];
    int nt = ticks(xs, t, 64, &step);
    for (int i = 0; i < nt; i++) {
        const double x = to_px(xs, t[i]), room = nt > 1 ? fabs(to_px(xs, t[1]) - to_px(xs, t[0])) - 6 : W;
        tick_label(lab, sizeof lab, t[i], step, xs->hi);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n", x, ys->p1, x, ys->p0);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\"%s>%s</text>\n", x, ys->p0 + 17,
                fit(font, sizeof font, lab, room), lab);
    }
    nt = ticks(ys, t, 64, &step);
    /* a range narrow for its values (1 to 1 + 1e-15): the ticks as offsets from the middle one, named in the y
     * label, instead of labels of a dozen digits */
    const double base = step > 0 && nt > 2 && step < 1e-5 * fmax(fabs(t[0]), fabs(t[nt - 1])) ? t[nt / 2] : 0;
    for (int i = 0; i < nt; i++) {
        const double y = to_px(ys, t[i]);
        tick_label(lab, sizeof lab, t[i] - base, step, 0);
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n", LEFT, y, W - RIGHT, y);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\"%s>%s</text>\n", LEFT - 6, y + 4,
                fit(font, sizeof font, lab, LEFT - 30), lab); /* right of the y label */
    }
    fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#444\"/>\n", LEFT, ys->p1,
            W - LEFT - RIGHT, PANEL_H);
    char off[48] = "";
    if (base != 0) /* as many digits as the step needs */
        snprintf(off, sizeof off, " \u2212 %.*g", (int)fmin(17, floor(log10(fabs(base))) - floor(log10(step)) + 1), base);
    fprintf(f, "<text transform=\"translate(%d %.1f) rotate(-90)\" text-anchor=\"middle\">%s%s%s</text>\n", 18,
            (ys->p0 + ys->p1) / 2, y_label, off, ys->log ? " (log scale)" : "");
    if (bottom) {
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"middle\">", (LEFT + W - RIGHT) / 2, ys->p0 + 40);
        put_escaped(f, p->x_label); /* "tokens seen": the unit is the file's */
        fputs("</text>\n", f);
    }
}

/* One curve as a polyline (and a dot per point of a validation curve of up to 80, or of a curve of one point);
 * under depth curves drawn after it that hide it, wider by a band each so that it shows around them. */
/* The points of c a polyline needs (their indices into keep, in order): all of them up to THIN_MAX; of more,
 * in each run of points in one pixel column the first, the highest, the lowest and the last, which draw the
 * picture all of them draw. */
#define THIN_MAX (4 * (W - LEFT - RIGHT))
static int thin(const curve *c, const scale *xs, const scale *ys, int *keep) {
    int n = 0;
    for (int i = 0; i < c->n;) {
        const double col = floor(to_px(xs, c->p[i].x));
        int j = i, lo = i, hi = i;
        for (; j < c->n && (c->n <= THIN_MAX || floor(to_px(xs, c->p[j].x)) == col); j++) {
            if (to_px(ys, c->p[j].y) < to_px(ys, c->p[lo].y)) lo = j;
            if (to_px(ys, c->p[j].y) > to_px(ys, c->p[hi].y)) hi = j;
            if (c->n <= THIN_MAX) keep[n++] = j;
        }
        if (c->n > THIN_MAX) { /* i, lo, hi, j - 1 in order, once each */
            const int a = lo < hi ? lo : hi, b = lo < hi ? hi : lo, pick[4] = {i, a, b, j - 1};
            for (int k = 0; k < 4; k++)
                if (n == 0 || pick[k] > keep[n - 1]) keep[n++] = pick[k];
        }
        i = j;
    }
    return n;
}

static void draw_curve(FILE *f, const curve *c, const scale *xs, const scale *ys, const char *colour, bool train,
                       const char *run_name, int clip, int depth) {
    if (!c->n) return;
    int *keep = malloc((size_t)c->n * sizeof *keep), n = c->n;
    if (keep) n = thin(c, xs, ys, keep); /* out of memory: every point */
    if (n < c->n) {
        fputs("grassflow plot: note: ", stderr);
        fprintf(stderr, "%s: its %s curve of %d points is drawn with %d (the first, last, highest and lowest of each "
                "pixel column: the picture all of them draw, to within a pixel)\n", run_name, train ? "training" : "validation", c->n, n);
    }
    fprintf(f, "<polyline class=\"%s\" data-run=\"", train ? "train" : "val");
    put_escaped(f, run_name);
    fprintf(f, "\" clip-path=\"url(#c%d)\" fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\"%s points=\"", clip, colour,
            (train ? 1.6 : 1.8) + HIDDEN_BAND * depth, train ? "" : " stroke-dasharray=\"6,3\"");
    for (int k = 0; k < n; k++) {
        const point *q = &c->p[keep ? keep[k] : k];
        fprintf(f, "%s%.1f,%.1f", k ? " " : "", to_px(xs, q->x), to_px(ys, q->y));
    }
    free(keep);
    fputs("\"/>\n", f);
    if ((!train && c->n <= 80) || c->n == 1) /* more dots than that would hide the line */
        for (int i = 0; i < c->n; i++)
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\" clip-path=\"url(#c%d)\"/>\n",
                    to_px(xs, c->p[i].x), to_px(ys, c->p[i].y), 2.6 + HIDDEN_BAND * depth / 2, colour, clip);
}

/* The y of curve c at x, straight between its points (in the order logged, x not decreasing); false outside
 * its points' range. */
static bool y_at(const curve *c, double x, double *y) {
    if (!c->n || x < c->p[0].x || x > c->p[c->n - 1].x) return false;
    int lo = 0, hi = c->n - 1; /* p[lo].x <= x <= p[hi].x */
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (c->p[mid].x <= x) lo = mid;
        else hi = mid;
    }
    const double dx = c->p[hi].x - c->p[lo].x, t = dx > 0 ? (x - c->p[lo].x) / dx : 0;
    *y = c->p[lo].y + t * (c->p[hi].y - c->p[lo].y);
    return true;
}

/* Whether curve b, drawn over curve a, hides it: at a quarter or more of a's points b passes within
 * HIDDEN_PX pixels (curves that coincide: two runs of one model and seed, or two mixers that learn alike). */
static bool hides(const curve *a, const curve *b, const scale *ys) {
    int near = 0;
    double y;
    for (int i = 0; i < a->n; i++)
        near += y_at(b, a->p[i].x, &y) && fabs(to_px(ys, y) - to_px(ys, a->p[i].y)) < HIDDEN_PX;
    return a->n && 4 * near >= a->n;
}

/* The data range of curves c[0..n) into [x0, x1] (0 within it) and [y0, y1]; false when they hold no point. */
static bool extent(const curve *c, int n, double *x0, double *x1, double *y0, double *y1) {
    *x0 = *x1 = 0, *y0 = INFINITY, *y1 = -INFINITY;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < c[i].n; j++) {
            *x0 = fmin(*x0, c[i].p[j].x), *x1 = fmax(*x1, c[i].p[j].x);
            *y0 = fmin(*y0, c[i].p[j].y);
            *y1 = fmax(*y1, c[i].p[j].y);
        }
    return *y0 <= *y1;
}

/* The y scale of a panel: a loss or perplexity spanning a factor of 3 or more on a log scale; some room
 * above and below (4% of the decades, 5% of a linear range), within what a double holds; a linear range
 * narrower than a billionth of its values is widened to that, for ticks to tell apart. */
static scale y_scale(const char *what, double y0, double y1, double top) {
    const gf_metric *mt;
    scale s = {.p0 = top + PANEL_H, .p1 = top,
               .log = kind_of(what, &mt) != PANEL_SCORE && y0 > 0 && log10(y1) - log10(y0) >= log10(3)};
    if (s.log) {
        const double pad = 0.04 * (log10(y1) - log10(y0));
        s.lo = fmax(log10(y0) - pad, LOG10_MIN), s.hi = fmin(log10(y1) + pad, LOG10_MAX);
        return s;
    }
    const double pad = y1 > y0 ? 0.05 * y1 - 0.05 * y0 : y0 == 0 ? 0.01 : fmax(0.05 * fabs(y0), fmin(0.01, 0.5 * fabs(y0)));
    s.lo = fmax(y0 - pad, -DBL_MAX), s.hi = fmin(y1 + pad, DBL_MAX);
    const double least = 1e-9 * fmax(fabs(s.lo), fabs(s.hi)), mid = s.lo / 2 + s.hi / 2;
    if (s.hi / 2 - s.lo / 2 < least / 2) s.lo = mid - least / 2, s.hi = mid + least / 2;
    return s;
}

/* "loss", "perplexity", "validation accuracy" into buf (a metric's title; a metric this program does not
 * know: its name); returns buf. */
static const char *y_label(const char *what, char *buf, size_t n) {
    const gf_metric *mt;
    const panel_kind k = kind_of(what, &mt);
    if (k == PANEL_LOSS) snprintf(buf, n, "loss");
    else if (k == PANEL_OF_LOSS) snprintf(buf, n, "%s", mt->title);
    else snprintf(buf, n, "validation %s", mt ? mt->title : what);
    return buf;
}

/* Panel k of p at pixel height top: every run's training and validation curve; *widened is set when a
 * curve was drawn wider to show under one that hides it. */
/* The error for a panel with no point: a metric no run is scored by names the one they are, else a hint. */
static int no_points(const plot *p, const char *what) {
    const gf_metric *mt;
    const char *theirs = NULL;
    for (int i = 0; i < p->n && !theirs; i++)
        if (p->runs[i].m.metric[0] && strcmp(p->runs[i].m.metric, what)) theirs = p->runs[i].m.metric;
    if (kind_of(what, &mt) == PANEL_SCORE && theirs)
        return cli_error("plot: no run has a point of %s to draw (the runs are scored by %s: --metric %s)", what,
                         theirs, theirs);
    return cli_error("plot: no run has a point of %s to draw (has a run logged a step yet?)", what);
}

static int draw_panel(FILE *f, const plot *p, int k, double top, bool *widened) {
    const char *what = p->panel[k];
    curve c[2 * MAX_RUNS] = {{0}};
    int rc = EXIT_OK;
    for (int i = 0; i < p->n && !rc; i++)
        rc = make_curve(p, i, what, true, &c[2 * i]) || make_curve(p, i, what, false, &c[2 * i + 1]) ? EXIT_RUNTIME : 0;
    double x0, x1, y0, y1;
    if (!rc && !extent(c, 2 * p->n, &x0, &x1, &y0, &y1))
        rc = no_points(p, what);
    if (!rc) {
        const scale xs = {.lo = x0, .hi = x1 > x0 ? x1 : x0 + 1, .p0 = LEFT, .p1 = W - RIGHT}; /* x0 < 0: a forged file */
        const scale ys = y_scale(what, y0, y1, top);
        fprintf(f, "<clipPath id=\"c%d\"><rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%d\"/></clipPath>\n", k, LEFT - 3,
                top - 3, W - LEFT - RIGHT + 6, PANEL_H + 6);
        char label[96];
        draw_axes(f, p, &xs, &ys, y_label(what, label, sizeof label), k == p->n_panels - 1);
        for (int i = 0; i < p->n; i++)
            for (int j = 0; j < 2; j++) {
                int depth = 0; /* the runs drawn after this one whose curve of this kind hides it */
                for (int later = i + 1; later < p->n; later++) depth += hides(&c[2 * i + j], &c[2 * later + j], &ys);
                draw_curve(f, &c[2 * i + j], &xs, &ys, colours[i % 10], j == 0, p->runs[i].name, k, depth);
                *widened |= depth > 0;
            }
    }
    for (int i = 0; i < 2 * p->n; i++) free(c[i].p);
    return rc;
}

/* The most characters of a run's name the legend shows (about 7 pixels each): a longer one (a path) loses
 * its beginning. */
#define LEGEND_CHARS ((W - LEFT - RIGHT - 44) / 7)

static void put_legend_name(FILE *f, const char *name) {
    const size_t len = strlen(name);
    if (len > LEGEND_CHARS) {
        fputs("...", f);
        name += len - (LEGEND_CHARS - 3);
        while ((*name & 0xC0) == 0x80) name++; /* not inside a UTF-8 character */
    }
    put_escaped(f, name);
}

/* The legend's columns: as many as the longest run name lets fit. */
static int legend_cols(const plot *p, int *col_w) {
    size_t longest = 0;
    for (int i = 0; i < p->n; i++) longest = strlen(p->runs[i].name) > longest ? strlen(p->runs[i].name) : longest;
    *col_w = 44 + 7 * (int)(longest < LEGEND_CHARS ? longest : LEGEND_CHARS);
    return *col_w < W - LEFT - RIGHT ? (W - LEFT - RIGHT) / *col_w : 1;
}

/* The legend from pixel height top: the line styles (and what a wider line means, when one was widened),
 * then the runs in columns. */
static void draw_legend(FILE *f, const plot *p, double top, bool widened) {
    int col_w;
    const int cols = legend_cols(p, &col_w);
    fprintf(f, "<g fill=\"#333\"><line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#333\" stroke-width=\"1.6\"/>"
            "<text x=\"%d\" y=\"%.1f\">training</text>", LEFT, top + 6, LEFT + 30, top + 6, LEFT + 36, top + 10);
    fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#333\" stroke-width=\"1.8\" "
            "stroke-dasharray=\"6,3\"/><circle cx=\"%d\" cy=\"%.1f\" r=\"2.6\"/><text x=\"%d\" y=\"%.1f\">validation"
            "</text></g>\n", LEFT + 120, top + 6, LEFT + 150, top + 6, LEFT + 135, top + 6, LEFT + 156, top + 10);
    if (widened)
        fprintf(f, "<text class=\"widened\" x=\"%d\" y=\"%.1f\" fill=\"#555\">a wider line runs under one that follows "
                "it closely</text>\n", LEFT + 250, top + 10);
    for (int i = 0; i < p->n; i++) {
        const int x = LEFT + (i % cols) * col_w;
        const double y = top + LEGEND_ROW * (1 + i / cols) + 6;
        fprintf(f, "<g class=\"legend\"><rect x=\"%d\" y=\"%.1f\" width=\"30\" height=\"4\" fill=\"%s\"/><text x=\"%d\" "
                "y=\"%.1f\">", x, y - 2, colours[i % 10], x + 36, y + 4);
        put_legend_name(f, p->runs[i].name);
        fputs("</text></g>\n", f);
    }
}

/* The whole figure into f: title, panels, legend. */
static int draw(FILE *f, const plot *p) {
    int col_w;
    const int legend_top = TOP + p->n_panels * (PANEL_H + PANEL_GAP) + 4;
    const int height = legend_top + LEGEND_ROW * (1 + (p->n + legend_cols(p, &col_w) - 1) / legend_cols(p, &col_w)) + 10;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
            "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\" fill=\"#222\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"%d\" y=\"26\" font-size=\"15\">",
            W, height, W, height, LEFT);
    for (int k = 0; k < p->n_panels; k++) {
        char label[96];
        fprintf(f, "%s%s", k ? k == p->n_panels - 1 ? " and " : ", " : "", y_label(p->panel[k], label, sizeof label));
    }
    fputs(" against ", f);
    put_escaped(f, p->x_label);
    fputs("</text>\n", f);
    bool widened = false;
    for (int k = 0; k < p->n_panels; k++)
        if (draw_panel(f, p, k, TOP + k * (PANEL_H + PANEL_GAP), &widened)) return EXIT_RUNTIME;
    draw_legend(f, p, legend_top, widened);
    fputs("</svg>\n", f);
    return EXIT_OK;
}

/* The figure into out, atomically. */
static int write_svg(const plot *p, const char *out) {
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (!f) return cli_error("out of memory drawing %s", out);
    int rc = draw(f, p);
    if (fclose(f) != 0 && !rc) rc = cli_error("out of memory drawing %s", out);
    if (!rc && gf_write_file_atomic(out, buf, size)) rc = cli_error("plot: %s", gf_last_error());
    free(buf);
    return rc;
}

/* ---- the command ----------------------------------------------------------------------------------------- */

static void free_plot(plot *p) {
    for (int i = 0; i < p->n; i++) {
        gf_metrics_free(&p->runs[i].m);
        free(p->runs[i].keep);
    }
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

/* The output rule (cli_output_check): out is never one of the runs' metrics.jsonl, a device node or a FIFO,
 * and an existing file is replaced only if it is an SVG, or with --force. */
static int check_out(const char *const *dirs, int n, const char *out, bool force) {
    char (*metrics)[GF_PATH_MAX] = calloc((size_t)n, sizeof *metrics);
    const char **inputs = calloc((size_t)n, sizeof *inputs);
    int rc = !metrics || !inputs ? cli_error("out of memory") : EXIT_OK;
    for (int i = 0; !rc && i < n; i++)
        if (!gf_path_join(metrics[i], sizeof metrics[i], dirs[i], "metrics.jsonl")) inputs[i] = metrics[i];
    struct stat st;
    bool replace = force || (stat(out, &st) == 0 && S_ISREG(st.st_mode) && holds_svg(out));
    if (!rc && cli_output_check(out, "--out", inputs, n, replace, "plot replaces an SVG; give --force to replace "
                                                                 "another file"))
        rc = cli_error("plot: %s", gf_last_error());
    free(metrics);
    free(inputs);
    return rc;
}

int cli_plot_runs(const char *const *dirs, int n, const char *out_svg, const cli_plot_opts *o) {
    const cli_plot_opts def = {0};
    if (!o) o = &def;
    if (n < 1 || n > MAX_RUNS) return cli_usage_error("plot", "expected 1 to %d run folders, got %d", MAX_RUNS, n);
    plot *p = calloc(1, sizeof *p);
    if (!p) return cli_error("out of memory");
    const char *x = o->x ? o->x : "step";
    int rc = EXIT_OK;
    if (strcmp(x, "step") && strcmp(x, "tokens") && strcmp(x, "time"))
        rc = cli_usage_error("plot", "--x: '%s' is not one of step, tokens, time", x);
    p->x = !strcmp(x, "tokens") ? X_TOKENS : !strcmp(x, "time") ? X_TIME : X_STEP;
    if (!rc) rc = check_out(dirs, n, out_svg, o->force);
    if (!rc) rc = read_runs(p, dirs, n);
    if (!rc) rc = choose_panels(p, o->metrics);
    if (!rc) {
        choose_x(p);
        rc = write_svg(p, out_svg);
    }
    free_plot(p);
    free(p);
    return rc;
}

static void help(void) {
    printf("usage: grassflow plot RUN_DIR... [--out FILE.svg [--force]] [--x step|tokens|time] [--metric loss|ppl|accuracy,...]\n\n"
           "Draw the training and validation curves of one or more runs (each RUN_DIR/metrics.jsonl, the --out of\n"
           "train; the --out of compare stands for every run its summary.json lists that has logged a step, each\n"
           "seed its own curve, at most %d runs) into one SVG, one colour per run, the legend naming each run by its\n"
           "folder: training curves solid, validation curves dashed with a dot at each evaluation; a curve that one\n"
           "drawn after it follows closely (within 1.5 pixels at a quarter of its points) is drawn wider, to show\n"
           "around it.\n\n"
           "  --out FILE          the SVG to write (atomically; default curves.svg in the current directory). An\n"
           "                      existing SVG is replaced; another file only with --force; a run's metrics.jsonl,\n"
           "                      a device node or a FIFO never\n"
           "  --force             replace an existing --out file that is not an SVG\n"
           "  --x AXIS            step (default), tokens (the counted targets seen: tokens for a language model,\n"
           "                      pairs for sentence pairs) or time (wall-clock time of the run, across resumes).\n"
           "                      A metrics.jsonl of an older grassflow has neither tokens nor time: the plot then\n"
           "                      uses step, and says so\n"
           "  --metric LIST       the panels, top to bottom: loss (training and validation loss), ppl (their\n"
           "                      exponential), accuracy (validation accuracy of a classifier), or the metric a\n"
           "                      task of a program's own is scored by (its validation score); default loss, and\n"
           "                      below it each metric not of the loss that a run is scored by (a classifier's\n"
           "                      accuracy). Loss and ppl use a log scale when they span a factor of 3 or more\n", MAX_RUNS);
}

int cmd_plot(int argc, char **argv) {
    static const struct option longopts[] = {{"out", 1, 0, 'o'}, {"x", 1, 0, 'x'}, {"metric", 1, 0, 'm'},
                                             {"force", 0, 0, 'f'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    cli_plot_opts o = {0};
    const char *out = "curves.svg";
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (opt == 'o') out = optarg;
        else if (opt == 'x') o.x = optarg;
        else if (opt == 'm') o.metrics = optarg;
        else if (opt == 'f') o.force = true;
        else if (opt == 'h') return help(), EXIT_OK;
        else return cli_usage_error("plot", "unknown option");
    }
    if (optind >= argc)
        return cli_usage_error("plot", "expected one or more run folders (the --out of train) or compare folders");
    char (*dirs)[GF_PATH_MAX] = malloc(MAX_RUNS * sizeof *dirs);
    const char *names[MAX_RUNS];
    int n = 0, rc = dirs ? cli_plot_expand((const char *const *)argv + optind, argc - optind, dirs, &n, MAX_RUNS)
                         : cli_error("out of memory");
    for (int i = 0; i < n; i++) names[i] = dirs[i];
    if (!rc) rc = cli_plot_runs(names, n, out, &o);
    if (!rc) printf("wrote %s\n", out);
    free(dirs);
    return rc;
}
