/* grassflow plot RUN_DIR...: training and validation curves of run folders (their metrics.jsonl) as one SVG.
 * The curves come from gf_metrics_read; the axes, ticks and legend are plot_svg.c's. */
#include "plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "plot_svg.h"

#define MAX_RUNS CLI_PLOT_MAX_RUNS
#define MAX_PANELS 3

/* ---- curves ------------------------------------------------------------------------------------------- */

typedef struct {
    plot_point *p;
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
        if (isfinite(x) && isfinite(y)) c->p[c->n++] = (plot_point){x, y};
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

#define PANEL_H 270
#define HIDDEN_PX 1.5   /* a curve this close to one drawn over it, at a quarter of its points, is hidden by it */
#define HIDDEN_BAND 2.6 /* ... and is drawn this much wider for each curve that hides it, to show around them */

/* One curve as a polyline (and a dot per point of a validation curve of up to 80, or of a curve of one point);
 * under depth curves drawn after it that hide it, wider by a band each so that it shows around them. */
static void draw_curve(FILE *f, const curve *c, const plot_scale *xs, const plot_scale *ys, const char *colour,
                       bool train, const char *run_name, int clip, int depth) {
    if (!c->n) return;
    int *keep = malloc((size_t)c->n * sizeof *keep), n = c->n;
    if (keep) n = plot_thin(c->p, c->n, xs, ys, keep); /* out of memory: every point */
    if (n < c->n) {
        fputs("grassflow plot: note: ", stderr);
        fprintf(stderr, "%s: its %s curve of %d points is drawn with %d (the first, last, highest and lowest of each "
                "pixel column: the picture all of them draw, to within a pixel)\n", run_name, train ? "training" : "validation",
                c->n, n);
    }
    fprintf(f, "<polyline class=\"%s\" data-run=\"", train ? "train" : "val");
    plot_put_escaped(f, run_name);
    fprintf(f, "\" clip-path=\"url(#c%d)\" fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\"%s points=\"", clip, colour,
            (train ? 1.6 : 1.8) + HIDDEN_BAND * depth, train ? "" : " stroke-dasharray=\"6,3\"");
    for (int k = 0; k < n; k++) {
        const plot_point *q = &c->p[keep ? keep[k] : k];
        fprintf(f, "%s%.1f,%.1f", k ? " " : "", plot_px(xs, q->x), plot_px(ys, q->y));
    }
    free(keep);
    fputs("\"/>\n", f);
    if ((!train && c->n <= 80) || c->n == 1) /* more dots than that would hide the line */
        for (int i = 0; i < c->n; i++)
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\" clip-path=\"url(#c%d)\"/>\n",
                    plot_px(xs, c->p[i].x), plot_px(ys, c->p[i].y), 2.6 + HIDDEN_BAND * depth / 2, colour, clip);
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
static bool hides(const curve *a, const curve *b, const plot_scale *ys) {
    int near = 0;
    double y;
    for (int i = 0; i < a->n; i++)
        near += y_at(b, a->p[i].x, &y) && fabs(plot_px(ys, y) - plot_px(ys, a->p[i].y)) < HIDDEN_PX;
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

/* The y scale of a panel: a loss or perplexity spanning a factor of 3 or more on a log scale (plot_fit). */
static plot_scale y_scale(const char *what, double y0, double y1, double top) {
    const gf_metric *mt;
    const bool log = kind_of(what, &mt) != PANEL_SCORE && y0 > 0 && log10(y1) - log10(y0) >= log10(3);
    return plot_fit(y0, y1, log, top + PANEL_H, top);
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

/* Panel k of p at pixel height top: every run's training and validation curve; *widened is set when a
 * curve was drawn wider to show under one that hides it. */
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
        /* x from 0 (x0 < 0: a forged file) */
        const plot_scale xs = {.lo = x0, .hi = x1 > x0 ? x1 : x0 + 1, .p0 = PLOT_LEFT, .p1 = PLOT_W - PLOT_RIGHT};
        const plot_scale ys = y_scale(what, y0, y1, top);
        fprintf(f, "<clipPath id=\"c%d\"><rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%d\"/></clipPath>\n", k,
                PLOT_LEFT - 3, top - 3, PLOT_W - PLOT_LEFT - PLOT_RIGHT + 6, PANEL_H + 6);
        char label[96];
        plot_axes(f, &xs, &ys, y_label(what, label, sizeof label), k == p->n_panels - 1 ? p->x_label : NULL, true);
        for (int i = 0; i < p->n; i++)
            for (int j = 0; j < 2; j++) {
                int depth = 0; /* the runs drawn after this one whose curve of this kind hides it */
                for (int later = i + 1; later < p->n; later++) depth += hides(&c[2 * i + j], &c[2 * later + j], &ys);
                draw_curve(f, &c[2 * i + j], &xs, &ys, plot_colours[i % 10], j == 0, p->runs[i].name, k, depth);
                *widened |= depth > 0;
            }
    }
    for (int i = 0; i < 2 * p->n; i++) free(c[i].p);
    return rc;
}

/* The legend from pixel height top: the line styles (and what a wider line means, when one was widened),
 * then the runs in columns. */
static void draw_legend(FILE *f, const plot *p, const plot_key *keys, double top, bool widened) {
    const int L = PLOT_LEFT;
    fprintf(f, "<g fill=\"#333\"><line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#333\" stroke-width=\"1.6\"/>"
            "<text x=\"%d\" y=\"%.1f\">training</text>", L, top + 6, L + 30, top + 6, L + 36, top + 10);
    fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#333\" stroke-width=\"1.8\" "
            "stroke-dasharray=\"6,3\"/><circle cx=\"%d\" cy=\"%.1f\" r=\"2.6\"/><text x=\"%d\" y=\"%.1f\">validation"
            "</text></g>\n", L + 120, top + 6, L + 150, top + 6, L + 135, top + 6, L + 156, top + 10);
    if (widened)
        fprintf(f, "<text class=\"widened\" x=\"%d\" y=\"%.1f\" fill=\"#555\">a wider line runs under one that follows "
                "it closely</text>\n", L + 250, top + 10);
    plot_legend(f, keys, p->n, top + PLOT_LEGEND_ROW);
}

/* The whole figure into f: title ("loss and perplexity against step"), panels, legend. */
static int draw(FILE *f, const void *ctx) {
    const plot *p = ctx;
    plot_key keys[MAX_RUNS];
    for (int i = 0; i < p->n; i++) keys[i] = (plot_key){p->runs[i].name, plot_colours[i % 10], NULL};
    const int legend_top = PLOT_TOP + p->n_panels * (PANEL_H + PLOT_GAP) + 4;
    const int height = legend_top + PLOT_LEGEND_ROW + plot_legend_height(keys, p->n) + 10;
    char title[512] = "", label[96];
    for (int k = 0; k < p->n_panels; k++)
        snprintf(title + strlen(title), sizeof title - strlen(title), "%s%s",
                 k ? k == p->n_panels - 1 ? " and " : ", " : "", y_label(p->panel[k], label, sizeof label));
    snprintf(title + strlen(title), sizeof title - strlen(title), " against %s", p->x_label);
    plot_begin(f, PLOT_W, height, title);
    bool widened = false;
    for (int k = 0; k < p->n_panels; k++)
        if (draw_panel(f, p, k, PLOT_TOP + k * (PANEL_H + PLOT_GAP), &widened)) return EXIT_RUNTIME;
    draw_legend(f, p, keys, legend_top, widened);
    fputs("</svg>\n", f);
    return EXIT_OK;
}

/* ---- the runs' plot ---------------------------------------------------------------------------------------- */

static void free_plot(plot *p) {
    for (int i = 0; i < p->n; i++) {
        gf_metrics_free(&p->runs[i].m);
        free(p->runs[i].keep);
    }
}

/* The output rule (plot_check_out): out is never one of the runs' metrics.jsonl. */
static int check_out(const char *const *dirs, int n, const char *out, bool force) {
    char (*metrics)[GF_PATH_MAX] = calloc((size_t)n, sizeof *metrics);
    const char **inputs = calloc((size_t)n, sizeof *inputs);
    int rc = !metrics || !inputs ? cli_error("out of memory") : EXIT_OK;
    for (int i = 0; !rc && i < n; i++)
        if (!gf_path_join(metrics[i], sizeof metrics[i], dirs[i], "metrics.jsonl")) inputs[i] = metrics[i];
    if (!rc) rc = plot_check_out(out, "--out", "plot", inputs, n, force);
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
        rc = plot_write(out_svg, draw, p);
    }
    free_plot(p);
    free(p);
    return rc;
}
