/* grassflow search's report: every point's compare summary read back, then OUT/results.jsonl (a row per run),
 * OUT/summary.md and summary.tsv (a row per point, each search's best first), and at the end the plots:
 * OUT/by-KEY.svg (each point's mean validation score against a searched number that takes two values or more, a
 * series per search), OUT/points.svg (each run's validation score, a group of bars per point, each search's best
 * first) and OUT/best-curves.svg (the curves of each search's best point). Every file is written atomically. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "plot.h"
#include "search.h"

static const cJSON *point_model(const sr_point *p) {
    return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(p->summary, "models"), 0);
}

static double num(const cJSON *o, const char *name) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

double sr_point_val(const sr_point *p, bool *lower_better) {
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(p->summary, "metric");
    if (lower_better && cJSON_IsString(m)) *lower_better = !strcmp(m->valuestring, "ppl");
    return num(point_model(p), "val_mean");
}

bool sr_point_at(const sr_point *p, int64_t steps) {
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(p->summary, "complete");
    return cJSON_IsTrue(c) && (!steps || num(cJSON_GetObjectItemCaseSensitive(p->summary, "recipe"), "steps") >= (double)steps);
}

/* p->summary from p->dir/summary.json (kept as it was when the file is missing or unreadable) */
static void read_summary(sr_point *p) {
    char path[GF_PATH_MAX];
    struct stat st;
    size_t n;
    if (gf_path_join(path, sizeof path, p->dir, "summary.json") || stat(path, &st)) return;
    char *text = (char *)gf_read_file(path, (size_t)64 << 20, &n);
    cJSON *d = text ? cJSON_ParseWithLength(text, n) : NULL;
    free(text);
    if (!cJSON_IsObject(d)) return cJSON_Delete(d);
    cJSON_Delete(p->summary);
    p->summary = d;
}

static const char *status(const sr_job *j, const sr_point *p) {
    return p->dropped ? "dropped at the first rung" : sr_point_at(p, p->steps) ? "done"
           : j->eta && !isnan(p->first_val) ? "first rung" : p->summary ? "running" : "not run";
}

/* A row per run of every point that has a summary */
static char *results_text(const sr_job *j) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    for (int i = 0; f && i < j->n; i++) {
        const sr_point *p = &j->p[i];
        const cJSON *r;
        cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(point_model(p), "runs")) {
            fprintf(f, "{\"search\": %d, \"model\": ", p->entry + 1);
            gf_json_put_str(f, p->model);
            fprintf(f, ", \"point\": {");
            for (int k = 0; k < p->n_o; k++) {
                char key[80];
                snprintf(key, sizeof key, "%s%s", p->o[k].set ? "set " : "", p->o[k].key);
                gf_json_put_str(f, key);
                fprintf(f, ": ");
                if (p->o[k].numeric) fprintf(f, "%s", p->o[k].val);
                else gf_json_put_str(f, p->o[k].val);
                fprintf(f, k + 1 < p->n_o ? ", " : "");
            }
            fprintf(f, "}, \"folder\": ");
            gf_json_put_str(f, p->dir);
            fprintf(f, ", \"seed\": %s, \"steps\": %s, \"val\": %s, \"test\": %s, \"params\": %s, \"tokens_per_s\": %s, "
                    "\"wall_s\": %s, \"status\": ", gf_json_num(num(r, "seed"), 'f', 0).s, gf_json_num(num(r, "steps"), 'f', 0).s,
                    gf_json_num(num(r, "val"), 'g', 8).s, gf_json_num(num(r, "test"), 'g', 8).s,
                    gf_json_num(num(point_model(p), "params"), 'f', 0).s, gf_json_num(num(r, "tokens_per_s"), 'f', 1).s,
                    gf_json_num(num(r, "wall_s"), 'f', 1).s);
            gf_json_put_str(f, status(j, p));
            fprintf(f, "}\n");
        }
    }
    if (f) fclose(f);
    return buf;
}

/* The points of search e in order of their mean validation score, best first (none yet: last), into v */
static int ranked(const sr_job *j, int e, const sr_point **v) {
    int n = 0;
    bool lower = true;
    for (int i = 0; i < j->n; i++)
        if (j->p[i].entry == e) v[n++] = &j->p[i], sr_point_val(&j->p[i], &lower);
    for (int a = 1; a < n; a++) /* insertion sort: stable, and n is small */
        for (int b = a; b > 0; b--) {
            double x = sr_point_val(v[b - 1], NULL), y = sr_point_val(v[b], NULL);
            if (!(isnan(x) ? !isnan(y) : !isnan(y) && (lower ? y < x : y > x))) break;
            const sr_point *t = v[b - 1];
            v[b - 1] = v[b], v[b] = t;
        }
    return n;
}

/* "k=v, ..." of p into buf */
static const char *point_name(const sr_point *p, char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = 0;
    for (int k = 0; k < p->n_o && len < cap; k++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%s%s=%s", k ? ", " : "", p->o[k].set ? "set " : "", p->o[k].key,
                                p->o[k].val);
    if (!p->n_o) snprintf(buf, cap, "(the model as it is)");
    return buf;
}

static void md_cell(FILE *f, const char *s) {
    char esc[GF_ESCAPE_CAP(600)];
    gf_escape_md(esc, sizeof esc, s);
    fprintf(f, " %s |", esc);
}

/* A point's budget in the table: its steps, or under an epoch budget (whose recipe says 0 steps) its epochs */
static const char *budget_cell(char *cell, size_t n, const sr_point *p) {
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(p->summary, "recipe");
    const double steps = num(r, "steps"), epochs = num(r, "epochs");
    if (!(steps > 0) && epochs > 0) snprintf(cell, n, "%g epoch%s", epochs, epochs == 1 ? "" : "s");
    else snprintf(cell, n, "%.0f", steps);
    return cell;
}

static char *md_text(const sr_job *j, const sr_point **v) {
    char *buf = NULL, name[600], cell[128];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    fprintf(f, "# grassflow search\n\nSpec `%s`; seeds %s; budget ", j->spec_path, j->seeds);
    if (j->tokens) fprintf(f, "%lld training tokens a run", (long long)j->tokens);
    else fprintf(f, j->steps ? "%lld steps a run" : "%lld epochs a run", (long long)(j->steps ? j->steps : j->epochs));
    if (j->eta) fprintf(f, "; halving: every point first ran %.3g of it, then the best 1/%d of each search (by their "
                        "first rung's score, in halving.json) the rest", j->first, j->eta);
    fprintf(f, ". Each search's best point first; val and test: the mean over the seeds that finished, with the "
            "sample standard deviation.\n");
    for (int e = 0; e < j->n_entries; e++) {
        const int n = ranked(j, e, v);
        fprintf(f, "\n## Search %d: %s\n\n| point | seeds | val | test | params | steps | tokens/s | status |\n"
                "|---|---|---|---|---|---|---|---|\n", e + 1, v[0]->model);
        for (int k = 0; k < n; k++) {
            const cJSON *m = point_model(v[k]);
            fputs("|", f);
            md_cell(f, point_name(v[k], name, sizeof name));
            snprintf(cell, sizeof cell, "%.0f", isnan(num(m, "n")) ? 0.0 : num(m, "n"));
            md_cell(f, cell);
            snprintf(cell, sizeof cell, isnan(num(m, "val_std")) ? "%.2f" : "%.2f ± %.2f", num(m, "val_mean"), num(m, "val_std"));
            md_cell(f, isnan(num(m, "val_mean")) ? "" : cell);
            snprintf(cell, sizeof cell, "%.2f", num(m, "test_mean"));
            md_cell(f, isnan(num(m, "test_mean")) ? "" : cell);
            snprintf(cell, sizeof cell, "%.0f", num(m, "params"));
            md_cell(f, isnan(num(m, "params")) ? "" : cell);
            md_cell(f, v[k]->summary ? budget_cell(cell, sizeof cell, v[k]) : "");
            snprintf(cell, sizeof cell, "%.0f", num(m, "tokens_per_s"));
            md_cell(f, isnan(num(m, "tokens_per_s")) ? "" : cell);
            md_cell(f, status(j, v[k]));
            fputc('\n', f);
        }
    }
    fclose(f);
    return buf;
}

static char *tsv_text(const sr_job *j, const sr_point **v) {
    char *buf = NULL, name[600], esc[GF_ESCAPE_CAP(600)];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    fprintf(f, "search\tmodel\tpoint\tseeds\tval_mean\tval_std\ttest_mean\tparams\tfolder\tstatus\n");
    for (int e = 0; e < j->n_entries; e++)
        for (int k = 0, n = ranked(j, e, v); k < n; k++) {
            const cJSON *m = point_model(v[k]);
            fprintf(f, "%d\t", e + 1);
            gf_escape_tsv(esc, sizeof esc, v[k]->model), fprintf(f, "%s\t", esc);
            gf_escape_tsv(esc, sizeof esc, point_name(v[k], name, sizeof name)), fprintf(f, "%s\t", esc);
            fprintf(f, "%s\t%s\t%s\t%s\t%s\t", gf_json_num(num(m, "n"), 'f', 0).s, gf_json_num(num(m, "val_mean"), 'g', 8).s,
                    gf_json_num(num(m, "val_std"), 'g', 8).s, gf_json_num(num(m, "test_mean"), 'g', 8).s,
                    gf_json_num(num(m, "params"), 'f', 0).s);
            gf_escape_tsv(esc, sizeof esc, v[k]->dir), fprintf(f, "%s\t%s\n", esc, status(j, v[k]));
        }
    fclose(f);
    return buf;
}

static int write_out(const sr_job *j, const char *name, char *text) {
    char path[GF_PATH_MAX];
    int rc = !text ? cli_error("out of memory writing %s", name)
             : gf_path_join(path, sizeof path, j->out, name) || gf_write_file_atomic(path, text, strlen(text))
                 ? cli_error("%s", gf_last_error()) : EXIT_OK;
    free(text);
    return rc;
}

/* OUT/by-KEY.svg for searched key k (numbers only): each point's mean validation score against its value, a
 * series per search (its points that halving stopped at the first rung a series of their own) */
static int plot_key(const sr_job *j, const char *key) {
    char tsv[GF_PATH_MAX], svg[GF_PATH_MAX], name[300], esc[GF_ESCAPE_CAP(300)];
    double lo = INFINITY, hi = -INFINITY;
    bool lower = true;
    snprintf(name, sizeof name, "by-%s.tsv", key);
    for (char *c = name; *c; c++) *c = *c == '/' || *c == ' ' ? '_' : *c;
    if (gf_path_join(tsv, sizeof tsv, j->out, name)) return cli_error("%s", gf_last_error());
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return cli_error("out of memory");
    fprintf(f, "series\tx\ty\n");
    int rows = 0;
    for (int i = 0; i < j->n; i++)
        for (int k = 0; k < j->p[i].n_o; k++) {
            const double y = sr_point_val(&j->p[i], &lower), x = atof(j->p[i].o[k].val);
            if (strcmp(j->p[i].o[k].key, key) || !j->p[i].o[k].numeric || isnan(y)) continue;
            snprintf(name, sizeof name, "%d: %s%s", j->p[i].entry + 1, j->p[i].model,
                     j->p[i].dropped ? " (stopped at the first rung)" : "");
            gf_escape_tsv(esc, sizeof esc, name);
            fprintf(f, "%s\t%s\t%s\n", esc, j->p[i].o[k].val, gf_json_num(y, 'g', 8).s);
            lo = x < lo ? x : lo, hi = x > hi ? x : hi, rows++;
        }
    fclose(f);
    if (!(hi > lo)) rows = 0; /* one value: nothing to draw the score against */
    int rc = !rows ? EXIT_OK : write_out(j, strrchr(tsv, '/') + 1, buf);
    if (!rows) free(buf);
    snprintf(name, sizeof name, "%s", strrchr(tsv, '/') + 1);
    memcpy(name + strlen(name) - 3, "svg", 3);
    if (rc || !rows || gf_path_join(svg, sizeof svg, j->out, name)) return rc;
    cli_plot_table_opts o = {.kind = "points", .logx = lo > 0 && hi >= 10 * lo, .title = NULL, .x_label = key,
                             .y_label = lower ? "validation perplexity (mean over seeds)" : "validation score (mean)",
                             .ymin = NAN, .ymax = NAN};
    return cli_plot_table(tsv, svg, &o);
}

/* OUT/points.tsv and points.svg: a group of bars per point that has a score ("S: model, point", each search's
 * best first), a bar per seed */
static int plot_points(const sr_job *j, const sr_point **v) {
    char tsv[GF_PATH_MAX], svg[GF_PATH_MAX], name[700], pt[600], esc[GF_ESCAPE_CAP(700)], *buf = NULL;
    size_t len = 0;
    bool lower = true;
    int rows = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return cli_error("out of memory");
    fprintf(f, "group\tseries\ty\n");
    for (int e = 0; e < j->n_entries; e++)
        for (int k = 0, n = ranked(j, e, v); k < n; k++) {
            const cJSON *r;
            snprintf(name, sizeof name, "%d: %s, %s", e + 1, v[k]->model, point_name(v[k], pt, sizeof pt));
            gf_escape_tsv(esc, sizeof esc, name);
            sr_point_val(v[k], &lower);
            cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(point_model(v[k]), "runs")) {
                if (isnan(num(r, "val"))) continue;
                fprintf(f, "%s\tseed %s\t%s\n", esc, gf_json_num(num(r, "seed"), 'f', 0).s,
                        gf_json_num(num(r, "val"), 'g', 8).s);
                rows++;
            }
        }
    fclose(f);
    int rc = !rows ? EXIT_OK : write_out(j, "points.tsv", buf);
    if (!rows) free(buf);
    if (rc || !rows || gf_path_join(tsv, sizeof tsv, j->out, "points.tsv") ||
        gf_path_join(svg, sizeof svg, j->out, "points.svg"))
        return rc;
    cli_plot_table_opts o = {.kind = "bars", .y_label = lower ? "validation perplexity" : "validation score",
                             .ymin = NAN, .ymax = NAN};
    return cli_plot_table(tsv, svg, &o);
}

/* OUT/best-curves.svg: each search's best point's runs (at most a plot's worth) */
static int plot_best(const sr_job *j, const sr_point **v) {
    char (*dirs)[GF_PATH_MAX] = malloc(CLI_PLOT_MAX_RUNS * sizeof *dirs), out[GF_PATH_MAX];
    const char *args[SR_MAX_ENTRIES], *ptr[CLI_PLOT_MAX_RUNS];
    int na = 0, n = 0, rc = EXIT_OK;
    for (int e = 0; e < j->n_entries; e++)
        if (ranked(j, e, v) && v[0]->summary && !isnan(sr_point_val(v[0], NULL))) args[na++] = v[0]->dir;
    if (dirs && na) rc = cli_plot_expand(args, na, dirs, &n, CLI_PLOT_MAX_RUNS);
    for (int i = 0; i < n; i++) ptr[i] = dirs[i];
    if (!rc && n && !gf_path_join(out, sizeof out, j->out, "best-curves.svg")) rc = cli_plot_runs(ptr, n, out, NULL);
    free(dirs);
    return rc;
}

static int plots(const sr_job *j, const sr_point **v) {
    int rc = plot_best(j, v);
    if (!rc) rc = plot_points(j, v);
    for (int i = 0; !rc && i < j->n; i++)
        for (int k = 0; !rc && k < j->p[i].n_o; k++) {
            bool first = true; /* each key once: at its first numeric appearance */
            for (int a = 0; a <= i && first; a++)
                for (int b = 0; b < (a < i ? j->p[a].n_o : k) && first; b++)
                    first = strcmp(j->p[a].o[b].key, j->p[i].o[k].key) || !j->p[a].o[b].numeric;
            if (first && j->p[i].o[k].numeric) rc = plot_key(j, j->p[i].o[k].key);
        }
    return rc;
}

int sr_report(sr_job *j, bool with_plots) {
    const sr_point **v = malloc((size_t)(j->n ? j->n : 1) * sizeof *v);
    if (!v) return cli_error("out of memory");
    for (int i = 0; i < j->n; i++) read_summary(&j->p[i]);
    int rc = gf_mkdir_p(j->out) ? cli_error("%s", gf_last_error()) : EXIT_OK;
    if (!rc) rc = write_out(j, "results.jsonl", results_text(j));
    if (!rc) rc = write_out(j, "summary.md", md_text(j, v));
    if (!rc) rc = write_out(j, "summary.tsv", tsv_text(j, v));
    if (!rc && with_plots) rc = plots(j, v);
    free(v);
    return rc;
}

int sr_print(const sr_job *j) {
    char path[GF_PATH_MAX];
    size_t n;
    if (gf_path_join(path, sizeof path, j->out, j->json ? "results.jsonl" : "summary.md")) return cli_error("%s", gf_last_error());
    char *text = (char *)gf_read_file(path, (size_t)256 << 20, &n);
    if (!text) return cli_error("%s", gf_last_error());
    fwrite(text, 1, n, stdout);
    free(text);
    return EXIT_OK;
}
