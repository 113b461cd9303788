/* grassflow compare: the summary (OUT/summary.json, .tsv, .md) and the table on stdout. Across seeds each
 * number is the mean, with the sample standard deviation (n - 1; none for one seed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compare.h"

/* ---- the recipe ------------------------------------------------------------------------------------------ */

static const char *const FACTS[] = {"tokenizer_used", "blas_kernel", "blas_threads", "cpu", "seeds", "mpi_ranks"};

bool cmp_fact_key(const char *key) {
    for (size_t i = 0; i < sizeof FACTS / sizeof FACTS[0]; i++)
        if (!strcmp(key, FACTS[i])) return true;
    return false;
}

/* A seed as JSON: a number (exact up to 2^53), else its digits. */
static cJSON *seed_json(uint64_t s) {
    char buf[32];
    if (s <= (uint64_t)1 << 53) return cJSON_CreateNumber((double)s);
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)s);
    return cJSON_CreateString(buf);
}

/* The CPU's model name (/proc/cpuinfo), "" if unknown. */
static void cpu_model(char *buf, size_t n) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    buf[0] = '\0';
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) || !colon) continue;
        snprintf(buf, n, "%s", colon + 1 + (colon[1] == ' '));
        buf[strcspn(buf, "\n")] = '\0';
        break;
    }
    if (f) fclose(f);
}

/* The tokenizer the data was read with, as a finished run reports it: "none" for a task that reads no text,
 * "" before any run finished. */
static const char *tokenizer_used(const cmp_job *j) {
    for (int i = 0; i < j->n; i++)
        for (int k = 0; k < j->n_seeds; k++)
            if (j->m[i].runs[k].status == CMP_DONE)
                return j->m[i].runs[k].s.tokenizer[0] ? j->m[i].runs[k].s.tokenizer : "none";
    return "";
}

static void add_trainer_keys(cJSON *o, const recipe *r) {
    const gf_train_opts *t = &r->o;
#define I(k, v) cJSON_AddNumberToObject(o, k, (double)(v))
#define F(k, v) cJSON_AddNumberToObject(o, k, gf_float_shortest(v))
    I("steps", t->steps); I("epochs", t->epochs); I("batch", t->batch); I("accum", t->accum);
    F("lr", t->lr); F("min_lr", t->min_lr); I("warmup", t->warmup); F("wd", t->wd);
    F("beta1", t->beta1); F("beta2", t->beta2); F("eps", t->eps); F("clip", t->clip);
    I("eval_every", t->eval_every); I("log_every", t->log_every);
#undef I
#undef F
    if (r->dropout >= 0) cJSON_AddNumberToObject(o, "dropout", gf_float_shortest((float)r->dropout));
    else cJSON_AddStringToObject(o, "dropout", "the model's");
    cJSON_AddStringToObject(o, "on_nonfinite", t->on_nonfinite == GF_NONFINITE_SKIP ? "skip" : "stop");
    if (r->backbone) {
        cJSON_AddStringToObject(o, "backbone", r->backbone);
        cJSON_AddBoolToObject(o, "freeze_backbone", r->freeze_backbone);
        cJSON_AddBoolToObject(o, "feature_cache", t->feature_cache);
    }
}

cJSON *cmp_recipe_json(const cmp_job *j) {
    char *tj = gf_task_recipe_to_json(&j->r.t), cpu[256];
    cJSON *o = tj ? cJSON_Parse(tj) : NULL;
    free(tj);
    if (!o) return NULL;
    cJSON_DeleteItemFromObjectCaseSensitive(o, "model"); /* each model's own: "models" */
    if (!j->r.t.tokenizer[0]) cJSON_ReplaceItemInObjectCaseSensitive(o, "tokenizer", cJSON_CreateString("default"));
    add_trainer_keys(o, &j->r);
    if (j->per_seed) {
        cJSON *a = cJSON_AddArrayToObject(o, "seeds");
        for (int k = 0; k < j->n_seeds; k++) cJSON_AddItemToArray(a, seed_json(j->seeds[k]));
    } else {
        cJSON_AddItemToObject(o, "seed", seed_json(j->r.o.seed));
    }
    cJSON_AddStringToObject(o, "tokenizer_used", tokenizer_used(j));
    const char *kernel = gf_blas_kernel();
    cJSON_AddStringToObject(o, "blas_kernel", kernel ? kernel : "unknown");
    cJSON_AddNumberToObject(o, "blas_threads", gf_blas_threads());
    cJSON_AddStringToObject(o, "fp32_matmul", gf_fp32_matmul());
    cpu_model(cpu, sizeof cpu);
    cJSON_AddStringToObject(o, "cpu", cpu[0] ? cpu : "unknown");
    if (gf_dist_size() > 1) cJSON_AddNumberToObject(o, "mpi_ranks", gf_dist_size()); /* tokens/s are the job's */
    return o;
}

/* ---- each model across its seeds ---------------------------------------------------------------------- */

typedef struct {
    int n;                             /* runs done */
    double val, val_sd, test, test_sd; /* mean and sample standard deviation (NAN for fewer than two) */
    double tokens_per_s, wall_s;       /* mean rate; wall time summed */
    int64_t params, trainable;
} model_stats;

static void mean_sd(const double *x, int n, double *mean, double *sd) {
    double s = 0.0, q = 0.0;
    for (int i = 0; i < n; i++) s += x[i];
    *mean = n ? s / n : NAN;
    for (int i = 0; i < n; i++) q += (x[i] - *mean) * (x[i] - *mean);
    *sd = n >= 2 ? sqrt(q / (n - 1)) : NAN;
}

static model_stats stats_of(const cmp_job *j, int i) {
    model_stats st = {.params = -1, .trainable = -1};
    double val[MAX_SEEDS], test[MAX_SEEDS], rate[MAX_SEEDS], sd;
    for (int k = 0; k < j->n_seeds; k++) {
        const cmp_run *u = &j->m[i].runs[k];
        st.wall_s += u->s.wall_s;
        if (u->status != CMP_DONE) continue;
        val[st.n] = u->s.val, test[st.n] = u->s.test, rate[st.n] = u->s.tokens_per_s;
        st.params = u->s.params, st.trainable = u->s.trainable;
        st.n++;
    }
    mean_sd(val, st.n, &st.val, &st.val_sd);
    mean_sd(test, st.n, &st.test, &st.test_sd);
    mean_sd(rate, st.n, &st.tokens_per_s, &sd);
    return st;
}

/* The gap on test to the reference: a percent of it (perplexity), or points (accuracy, a share). */
static double gap_of(const cmp_job *j, const model_stats *st, const model_stats *ref) {
    if (gf_task_metric(j->r.t.task)->relative_gap) return 100.0 * (st->test / ref->test - 1.0);
    return 100.0 * (st->test - ref->test);
}

/* The table's two score columns: "best val ppl", "test ppl"; "dev acc", "test acc" (the metric's key). */
static void score_heads(const gf_metric *mt, char *val, char *test, size_t n) {
    const char *key = mt->key ? mt->key : mt->name;
    snprintf(val, n, mt->by_loss ? "best val %s" : "dev %s", key);
    snprintf(test, n, "test %s", key);
}

/* ---- summary.json ------------------------------------------------------------------------------------------ */

static const char *status_name(cmp_status s) {
    return s == CMP_DONE ? "done" : s == CMP_STOPPED ? "stopped" : s == CMP_RUNNING ? "running" : "pending";
}

/* v as the shortest decimal that reads back to the same double (cJSON's own printing stops at 15 digits
 * when they come within its tolerance: not the same bits), null when not finite. */
static void add_num(cJSON *o, const char *k, double v) {
    char buf[40];
    for (int d = 15; d <= 17 && isfinite(v); d++) {
        snprintf(buf, sizeof buf, "%.*g", d, v);
        if (strtod(buf, NULL) == v) break;
    }
    if (isfinite(v)) cJSON_AddRawToObject(o, k, buf);
    else cJSON_AddNullToObject(o, k);
}

static cJSON *run_json(const cmp_run *u, const char *out) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "seed", seed_json(u->seed));
    cJSON_AddStringToObject(o, "dir", u->dir + strlen(out) + 1); /* under --out */
    cJSON_AddStringToObject(o, "status", status_name(u->status));
    add_num(o, "wall_s", u->s.wall_s);
    if (u->status == CMP_PENDING && u->replace) cJSON_AddTrueToObject(o, "replace");
    if (u->status != CMP_DONE) return o;
    cJSON_AddNumberToObject(o, "steps", (double)u->s.steps);
    add_num(o, "val", u->s.val);
    add_num(o, "test", u->s.test);
    add_num(o, "tokens_per_s", u->s.tokens_per_s);
    cJSON_AddStringToObject(o, "tokenizer", u->s.tokenizer);
    return o;
}

static cJSON *model_json(const cmp_job *j, int i, const model_stats *ref) {
    const cmp_model *m = &j->m[i];
    const model_stats st = stats_of(j, i);
    cJSON *o = cJSON_CreateObject(), *sets = cJSON_CreateArray(), *runs = cJSON_CreateArray();
    cJSON_AddStringToObject(o, "model", m->name);
    for (int s = 0; s < m->mo.n_sets; s++) cJSON_AddItemToArray(sets, cJSON_CreateString(m->mo.sets[s]));
    cJSON_AddItemToObject(o, "set", sets);
    if (st.n) {
        cJSON_AddNumberToObject(o, "params", (double)st.params);
        cJSON_AddNumberToObject(o, "trainable", (double)st.trainable);
    }
    cJSON_AddNumberToObject(o, "n", st.n);
    add_num(o, "val_mean", st.val);
    add_num(o, "val_std", st.val_sd);
    add_num(o, "test_mean", st.test);
    add_num(o, "test_std", st.test_sd);
    add_num(o, "tokens_per_s", st.tokens_per_s);
    add_num(o, "wall_s", st.wall_s);
    add_num(o, "gap", gap_of(j, &st, ref));
    for (int k = 0; k < j->n_seeds; k++) cJSON_AddItemToArray(runs, run_json(&m->runs[k], j->out));
    const cJSON *c;
    cJSON_ArrayForEach(c, m->carried_runs) cJSON_AddItemToArray(runs, cJSON_Duplicate(c, 1));
    cJSON_AddItemToObject(o, "runs", runs);
    return o;
}

char *cmp_summary_text(const cmp_job *j) {
    const gf_metric *mt = gf_task_metric(j->r.t.task);
    const model_stats ref = stats_of(j, j->ref);
    bool complete = true;
    cJSON *o = cJSON_CreateObject(), *models = cJSON_CreateArray(), *recipe = cmp_recipe_json(j);
    if (!recipe) return NULL;
    char val[96], test[96], gap[96];
    snprintf(val, sizeof val, mt->by_loss ? "best validation %s" : "dev %s of the best checkpoint", mt->title);
    snprintf(test, sizeof test, "test %s of the best checkpoint", mt->title);
    snprintf(gap, sizeof gap, "test %s vs the reference, %s", mt->title, mt->relative_gap ? "percent" : "points");
    cJSON_AddNumberToObject(o, "format", 1);
    cJSON_AddStringToObject(o, "metric", mt->name);
    cJSON_AddStringToObject(o, "val", val);
    cJSON_AddStringToObject(o, "test", test);
    cJSON_AddStringToObject(o, "std", "sample standard deviation (n - 1) across seeds; null with fewer than two");
    cJSON_AddStringToObject(o, "gap", gap);
    cJSON_AddStringToObject(o, "reference", j->m[j->ref].name);
    cJSON_AddItemToObject(o, "recipe", recipe);
    for (int i = 0; i < j->n; i++) {
        cJSON_AddItemToArray(models, model_json(j, i, &ref));
        for (int k = 0; k < j->n_seeds; k++) complete = complete && j->m[i].runs[k].status == CMP_DONE;
    }
    const cJSON *c;
    cJSON_ArrayForEach(c, j->carried) cJSON_AddItemToArray(models, cJSON_Duplicate(c, 1));
    cJSON_AddItemToObject(o, "models", models);
    cJSON_AddBoolToObject(o, "complete", complete);
    char *s = gf_json_utf8(cJSON_Print(o)); /* a name that is not UTF-8: U+FFFD, as every strict parser reads it */
    cJSON_Delete(o);
    return s;
}

/* ---- the table: stdout, summary.tsv, summary.md -------------------------------------------------------- */

/* "12.34" or "12.34 ± 0.05" (with seeds), "-" when no run is done. */
static void fmt_stat(char *buf, size_t n, double mean, double sd, int d, bool per_seed) {
    if (isnan(mean)) snprintf(buf, n, "-");
    else if (per_seed && !isnan(sd)) snprintf(buf, n, "%.*f ± %.*f", d, mean, d, sd);
    else snprintf(buf, n, "%.*f", d, mean);
}

typedef struct {
    char model[256], params[32], trainable[32], val[64], test[64], rate[32], wall[32], gap[32];
} table_row;

static table_row row_of(const cmp_job *j, int i, const model_stats *ref) {
    const gf_metric *mt = gf_task_metric(j->r.t.task);
    const model_stats st = stats_of(j, i);
    table_row t;
    snprintf(t.model, sizeof t.model, "%s", j->m[i].name);
    snprintf(t.params, sizeof t.params, st.n ? "%lld" : "-", (long long)st.params);
    snprintf(t.trainable, sizeof t.trainable, st.n ? "%lld" : "-", (long long)st.trainable);
    fmt_stat(t.val, sizeof t.val, st.val, st.val_sd, mt->decimals, j->per_seed);
    fmt_stat(t.test, sizeof t.test, st.test, st.test_sd, mt->decimals, j->per_seed);
    snprintf(t.rate, sizeof t.rate, st.n ? "%.0f" : "-", st.tokens_per_s);
    if (st.wall_s > 0.0) fmt_time(t.wall, sizeof t.wall, st.wall_s);
    else snprintf(t.wall, sizeof t.wall, "-"); /* not started: no time to show */
    const double gap = gap_of(j, &st, ref);
    if (i == j->ref) snprintf(t.gap, sizeof t.gap, "reference");
    else if (isnan(gap)) snprintf(t.gap, sizeof t.gap, "-");
    else snprintf(t.gap, sizeof t.gap, mt->relative_gap ? "%+.1f%%" : "%+.2f pts", gap);
    return t;
}

/* The task's options as "max_sent 48" (none: ""). */
static void options_text(const gf_task_recipe *t, char *buf, size_t n) {
    buf[0] = '\0';
    for (int i = 0; i < t->task->n_keys; i++) {
        char *v = gf_task_option_get(t, t->task->keys[i].name);
        snprintf(buf + strlen(buf), n - strlen(buf), "%s%s %s", i ? ", " : "", t->task->keys[i].name, v ? v : "?");
        free(v);
    }
}

/* The two lines: their fixed text, and the corpus, the tokenizer, the options, the CPU and the kernel escaped */
#define RECIPE_LINES_MAX (2048 + 2 * GF_ESCAPE_CAP(GF_PATH_MAX) + 3 * GF_ESCAPE_CAP(256))

static size_t term_text(char *dst, size_t cap, const char *s) { return gf_escape_term(dst, cap, s, 0); }

/* The recipe line and the machine line under the table, their names escaped by esc (the table's format). */
static void recipe_lines(const cmp_job *j, char *buf, size_t n, const char *eol,
                         size_t (*esc)(char *, size_t, const char *)) {
    const recipe *r = &j->r;
    char opts[256], cpu[256], seeds[512] = "", e_corpus[GF_ESCAPE_CAP(GF_PATH_MAX)], e_tok[GF_ESCAPE_CAP(GF_PATH_MAX)];
    char e_opts[GF_ESCAPE_CAP(256)], e_cpu[GF_ESCAPE_CAP(256)], e_kernel[GF_ESCAPE_CAP(256)];
    int64_t steps = 0;
    for (int i = 0; i < j->n && !steps; i++)
        for (int k = 0; k < j->n_seeds && !steps; k++)
            if (j->m[i].runs[k].status == CMP_DONE) steps = j->m[i].runs[k].s.steps;
    for (int k = 0; k < j->n_seeds; k++)
        snprintf(seeds + strlen(seeds), sizeof seeds - strlen(seeds), "%s%llu", k ? "," : "", (unsigned long long)j->seeds[k]);
    char len[64]; /* the steps a finished run took; before one has, what the recipe asked for */
    if (steps || r->o.steps > 0) snprintf(len, sizeof len, "%lld steps", (long long)(steps ? steps : r->o.steps));
    else snprintf(len, sizeof len, "%lld epoch%s", (long long)r->o.epochs, r->o.epochs == 1 ? "" : "s");
    options_text(&r->t, opts, sizeof opts);
    cpu_model(cpu, sizeof cpu);
    const char *tok = tokenizer_used(j), *kernel = gf_blas_kernel();
    esc(e_corpus, sizeof e_corpus, r->t.corpus), esc(e_opts, sizeof e_opts, opts);
    esc(e_cpu, sizeof e_cpu, cpu[0] ? cpu : "unknown");
    esc(e_tok, sizeof e_tok, tok[0] ? tok : r->t.tokenizer[0] ? r->t.tokenizer : "default");
    esc(e_kernel, sizeof e_kernel, kernel ? kernel : "unknown");
    char ranks[48] = "";
    if (gf_dist_size() > 1) snprintf(ranks, sizeof ranks, " x %d MPI ranks", gf_dist_size());
    snprintf(buf, n, "recipe: task %s%s%s%s, %s, tokenizer %s, %s, batch %lld, lr %g -> %g, warmup %lld, "
             "seed%s %s%s" "machine: OpenBLAS kernel %s, fp32 matmuls %s (%d threads%s), CPU %s%s", r->t.task->name,
             opts[0] ? " (" : "", e_opts, opts[0] ? ")" : "", e_corpus, e_tok, len, (long long)r->o.batch, (double)r->o.lr,
             (double)r->o.min_lr, (long long)r->o.warmup, j->per_seed ? "s" : "", seeds, eol, e_kernel, gf_fp32_matmul(),
             gf_blas_threads(), ranks, e_cpu, eol);
}

/* A line naming what summary.json carries of other compares on this --out ("" if nothing). */
static void carried_note(const cmp_job *j, char *buf, size_t n, const char *eol) {
    size_t len = 0;
    int runs = 0;
    const cJSON *c;
    buf[0] = '\0';
    for (int i = 0; i < j->n; i++) runs += cJSON_GetArraySize(j->m[i].carried_runs);
    cJSON_ArrayForEach(c, j->carried) runs += cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(c, "runs"));
    if (!runs) return;
    len = (size_t)snprintf(buf, n, "summary.json also lists %d run%s of another compare on this --out", runs,
                           runs == 1 ? "" : "s");
    const char *sep = ": models ";
    cJSON_ArrayForEach(c, j->carried) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(c, "model");
        if (len < n && cJSON_IsString(name)) len += (size_t)snprintf(buf + len, n - len, "%s%s", sep, name->valuestring);
        sep = ", ";
    }
    if (len < n) snprintf(buf + len, n - len, "%s", eol);
}

void cmp_print_table(const cmp_job *j) {
    const model_stats ref = stats_of(j, j->ref);
    char rate[32], lines[RECIPE_LINES_MAX], name[GF_ESCAPE_CAP(sizeof(table_row){0}.model) + 20], vh[64], th[64];
    const int w = j->per_seed ? 22 : 14;
    snprintf(rate, sizeof rate, "%s/s", j->r.t.task->unit);
    score_heads(gf_task_metric(j->r.t.task), vh, th, sizeof vh);
    printf("\n%-20s %12s %12s %*s %*s %10s %10s %12s\n", "model", "params", "trainable", w, vh, w, th, rate, "wall",
           "gap (test)");
    for (int i = 0; i < j->n; i++) {
        const table_row t = row_of(j, i, &ref);
        gf_escape_term(name, sizeof name, t.model, 20); /* %-20s in columns; a tab, an escape sequence shown as text */
        printf("%s %12s %12s %*s %*s %10s %10s %12s\n", name, t.params, t.trainable, w + 1, t.val, w + 1, t.test,
               t.rate, t.wall, t.gap); /* "±" is two bytes, one column */
    }
    recipe_lines(j, lines, sizeof lines, "\n", term_text);
    fputs(lines, stdout);
    if (j->per_seed) printf("mean ± sample standard deviation (n - 1) over %d seeds\n", j->n_seeds);
    carried_note(j, lines, sizeof lines, "\n");
    fputs(lines, stdout);
}

/* summary.tsv: one row per model, every number in full (as summary.json has it); empty: none. */
static char *tsv_text(const cmp_job *j) {
    const model_stats ref = stats_of(j, j->ref);
    size_t cap = 4096 + (size_t)j->n * (GF_ESCAPE_CAP(sizeof j->list) + 1024), len = 0;
    char *s = malloc(cap), name[GF_ESCAPE_CAP(sizeof j->list)];
    if (!s) return NULL;
    len += (size_t)snprintf(s, cap, "model\tn\tparams\ttrainable\tval_mean\tval_std\ttest_mean\ttest_std\ttokens_per_s"
                            "\twall_s\tgap\n");
    for (int i = 0; i < j->n; i++) {
        const model_stats st = stats_of(j, i);
        const double v[] = {st.val, st.val_sd, st.test, st.test_sd, st.tokens_per_s, st.wall_s, gap_of(j, &st, &ref)};
        gf_escape_tsv(name, sizeof name, j->m[i].name); /* a tab or a newline in it: no new column or row */
        len += (size_t)snprintf(s + len, cap - len, "%s\t%d\t%lld\t%lld", name, st.n, (long long)st.params,
                                (long long)st.trainable);
        for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
            len += (size_t)snprintf(s + len, cap - len, isfinite(v[k]) ? "\t%.17g" : "\t", v[k]);
        len += (size_t)snprintf(s + len, cap - len, "\n");
    }
    return s;
}

/* summary.md: the table as markdown, the recipe under it. */
static char *md_text(const cmp_job *j) {
    const model_stats ref = stats_of(j, j->ref);
    char vh[64], th[64];
    score_heads(gf_task_metric(j->r.t.task), vh, th, sizeof vh);
    size_t cap = RECIPE_LINES_MAX + 1024 + (size_t)j->n * (GF_ESCAPE_CAP(sizeof(table_row){0}.model) + 1024), len = 0;
    char *s = malloc(cap), lines[RECIPE_LINES_MAX], name[GF_ESCAPE_CAP(sizeof(table_row){0}.model)];
    if (!s) return NULL;
    len += (size_t)snprintf(s, cap, "| model | params | trainable | %s | %s | %s/s | wall | gap (test) |\n"
                            "|---|---:|---:|---:|---:|---:|---:|---:|\n", vh, th, j->r.t.task->unit);
    for (int i = 0; i < j->n; i++) {
        const table_row t = row_of(j, i, &ref);
        gf_escape_md(name, sizeof name, t.model); /* no HTML, no new cell or row */
        len += (size_t)snprintf(s + len, cap - len, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", name, t.params,
                                t.trainable, t.val, t.test, t.rate, t.wall, t.gap);
    }
    recipe_lines(j, lines, sizeof lines, "  \n", gf_escape_md);
    len += (size_t)snprintf(s + len, cap - len, "\n%s", lines);
    if (j->per_seed)
        len += (size_t)snprintf(s + len, cap - len, "mean ± sample standard deviation (n - 1) over %d seeds\n", j->n_seeds);
    if (len < cap) carried_note(j, s + len, cap - len, "\n");
    return s;
}

static int write_text(const cmp_job *j, const char *name, char *text) {
    char path[GF_PATH_MAX];
    int rc = !text ? cli_error("out of memory writing the summary")
             : gf_path_join(path, sizeof path, j->out, name) || gf_write_file_atomic(path, text, strlen(text))
                 ? cli_error("%s", gf_last_error()) : EXIT_OK;
    free(text);
    return rc;
}

/* What OUT/summary.json holds now (NULL: none, or not a compare summary of this recipe's kind). */
static cJSON *summary_on_disk(const cmp_job *j) {
    char path[GF_PATH_MAX];
    size_t n;
    struct stat st;
    if (gf_path_join(path, sizeof path, j->out, "summary.json") || stat(path, &st) != 0) return NULL;
    unsigned char *text = gf_read_file(path, (size_t)64 << 20, &n);
    cJSON *o = text ? cJSON_Parse((const char *)text) : NULL;
    free(text);
    return o;
}

int cmp_write_summary(cmp_job *j) {
    if (gf_dist_rank() != 0) return EXIT_OK; /* a data-parallel job: rank 0 alone writes (its own figures) */
    char lock_path[GF_PATH_MAX];
    const int lock = cmp_lock_summary(j, lock_path, sizeof lock_path);
    if (lock < 0) return cli_error("%s", gf_last_error());
    cJSON *disk = summary_on_disk(j); /* another compare on this --out may have written since */
    if (disk) cmp_merge_summary(j, disk);
    cJSON_Delete(disk);
    int rc = write_text(j, "summary.json", cmp_summary_text(j));
    if (!rc) rc = write_text(j, "summary.tsv", tsv_text(j));
    if (!rc) rc = write_text(j, "summary.md", md_text(j));
    gf_unlock_file(lock_path, lock);
    return rc;
}
