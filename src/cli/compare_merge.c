/* grassflow compare: summary.json as a cache of what the run folders prove. Another compare on the same
 * --out (before this one, after it, or at the same time) keeps its runs in the summary: each write takes
 * OUT/.grassflow-summary.lock, reads the summary on disk again and carries every run this compare does not
 * own, once its folder proves it (a finished run's state at the steps it reported, numbers in range);
 * what a folder no longer proves is marked stopped, and a run whose folder is gone is dropped. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"

#define LOCK_NAME ".grassflow-summary.lock"

/* A number of o under key, NAN if absent or not a number. */
static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

bool cmp_score_ok(const cmp_job *j, double v) {
    const gf_metric *mt = gf_task_metric(j->r.t.task);
    return isfinite(v) && v >= mt->lo && v <= mt->hi;
}

bool cmp_count_ok(double v) { return v >= 1.0 && v <= 9007199254740992.0 && v == floor(v); }

/* A run folder named in a summary: a relative path under --out without "..", or NULL. */
static const char *safe_dir(const cJSON *run) {
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(run, "dir");
    if (!cJSON_IsString(d) || !d->valuestring[0] || d->valuestring[0] == '/') return NULL;
    for (const char *p = d->valuestring; (p = strstr(p, "..")); p += 2)
        if ((p == d->valuestring || p[-1] == '/') && (p[2] == '\0' || p[2] == '/')) return NULL;
    return d->valuestring;
}

/* A copy of a run entry of another compare as its folder proves it, or NULL (no such folder or run). */
static cJSON *proven_run(const cmp_job *j, const cJSON *run) {
    const char *dir = safe_dir(run);
    char path[GF_PATH_MAX];
    if (!dir || gf_path_join(path, sizeof path, j->out, dir) || gf_run_dir_holds_run(path, NULL, 0) != 1) return NULL;
    cJSON *c = cJSON_Duplicate(run, 1);
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(run, "status");
    const double steps = num(run, "steps"), rate = num(run, "tokens_per_s");
    const bool done = cJSON_IsString(st) && !strcmp(st->valuestring, "done");
    if (done && !(cmp_count_ok(steps) && cmp_state_step(path) == (long long)steps && cmp_score_ok(j, num(run, "val")) &&
                  cmp_score_ok(j, num(run, "test")) && isfinite(rate) && rate >= 0)) {
        static const char *const numbers[] = {"steps", "val", "test", "tokens_per_s"};
        for (size_t k = 0; k < sizeof numbers / sizeof *numbers; k++) cJSON_DeleteItemFromObject(c, numbers[k]);
        cJSON_ReplaceItemInObject(c, "status", cJSON_CreateString("stopped")); /* its folder proves no more */
    } else if (!done && !cJSON_IsString(st)) {
        cJSON_DeleteItemFromObject(c, "status");
        cJSON_AddStringToObject(c, "status", "stopped");
    }
    if (!(num(c, "wall_s") >= 0)) cJSON_ReplaceItemInObject(c, "wall_s", cJSON_CreateNumber(0));
    return c;
}

/* mean and sample standard deviation of key over the finished runs, into the model entry m. */
static void restat(cJSON *m, const cJSON *runs, const char *key, const char *mean_key, const char *sd_key) {
    double x[64], s = 0.0, q = 0.0;
    int n = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, runs) {
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(r, "status");
        if (n < 64 && cJSON_IsString(st) && !strcmp(st->valuestring, "done")) s += (x[n++] = num(r, key));
    }
    const double mean = n ? s / n : NAN;
    for (int i = 0; i < n; i++) q += (x[i] - mean) * (x[i] - mean);
    const double sd = n >= 2 ? sqrt(q / (n - 1)) : NAN;
    cJSON_DeleteItemFromObject(m, mean_key);
    cJSON_AddItemToObject(m, mean_key, isfinite(mean) ? cJSON_CreateNumber(mean) : cJSON_CreateNull());
    if (sd_key) {
        cJSON_DeleteItemFromObject(m, sd_key);
        cJSON_AddItemToObject(m, sd_key, isfinite(sd) ? cJSON_CreateNumber(sd) : cJSON_CreateNull());
    }
    cJSON_DeleteItemFromObject(m, "n");
    cJSON_AddNumberToObject(m, "n", n);
}

/* A copy of another compare's model entry with the runs its folders prove and its figures recomputed from
 * them (its gap was to that compare's reference: null here), or NULL when no run is left. */
static cJSON *proven_model(const cmp_job *j, const cJSON *m) {
    cJSON *c = cJSON_Duplicate(m, 1), *runs = cJSON_CreateArray();
    const cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(m, "runs")) {
        cJSON *p = proven_run(j, r);
        if (p) cJSON_AddItemToArray(runs, p);
    }
    if (!cJSON_GetArraySize(runs)) {
        cJSON_Delete(runs);
        cJSON_Delete(c);
        return NULL;
    }
    cJSON_DeleteItemFromObject(c, "runs");
    cJSON_AddItemToObject(c, "runs", runs);
    restat(c, runs, "val", "val_mean", "val_std");
    restat(c, runs, "test", "test_mean", "test_std");
    restat(c, runs, "tokens_per_s", "tokens_per_s", NULL);
    if (!cmp_count_ok(num(c, "params")) || !cmp_count_ok(num(c, "trainable")) || num(c, "trainable") > num(c, "params")) {
        cJSON_DeleteItemFromObject(c, "params");
        cJSON_DeleteItemFromObject(c, "trainable");
    }
    cJSON_DeleteItemFromObject(c, "gap");
    cJSON_AddNullToObject(c, "gap");
    cJSON_AddTrueToObject(c, "another_compare");
    return c;
}

/* Put item into array (made if *array is NULL) in place of the entry whose key equals its own, or last. */
static void put_by(cJSON **array, const char *key, cJSON *item) {
    if (!*array) *array = cJSON_CreateArray();
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(item, key);
    int i = 0;
    cJSON *e;
    cJSON_ArrayForEach(e, *array) {
        const cJSON *ek = cJSON_GetObjectItemCaseSensitive(e, key);
        if (cJSON_IsString(k) && cJSON_IsString(ek) && !strcmp(k->valuestring, ek->valuestring)) {
            cJSON_ReplaceItemInArray(*array, i, item);
            return;
        }
        i++;
    }
    cJSON_AddItemToArray(*array, item);
}

/* The model of this compare that summary.json names so, or -1. */
static int own_model(const cmp_job *j, const cJSON *name) {
    for (int i = 0; i < j->n; i++)
        if (cmp_is_string(name, j->m[i].name)) return i;
    return -1;
}

static bool own_run(const cmp_model *m, int n_seeds, const char *out, const cJSON *dir) {
    for (int k = 0; k < n_seeds; k++)
        if (cmp_is_string(dir, m->runs[k].dir + strlen(out) + 1)) return true;
    return false;
}

void cmp_merge_summary(cmp_job *j, const cJSON *summary) {
    const cJSON *m, *r;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(summary, "models")) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(m, "model");
        if (!cJSON_IsString(name)) continue;
        const int i = own_model(j, name);
        if (i < 0) {
            cJSON *p = proven_model(j, m);
            if (p) put_by(&j->carried, "model", p);
            continue;
        }
        cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(m, "runs")) { /* its other seeds */
            const char *dir = safe_dir(r);
            cJSON *p = dir && !own_run(&j->m[i], j->n_seeds, j->out, cJSON_GetObjectItemCaseSensitive(r, "dir"))
                           ? proven_run(j, r) : NULL;
            if (p) put_by(&j->m[i].carried_runs, "dir", p);
        }
    }
}

int cmp_lock_summary(const cmp_job *j, char *path, size_t n) {
    if (gf_path_join(path, n, j->out, LOCK_NAME)) return -1;
    return gf_lock_file(path, true, NULL, 0);
}

void cmp_free_carried(cmp_job *j) {
    cJSON_Delete(j->carried);
    j->carried = NULL;
    for (int i = 0; i < j->n; i++) {
        cJSON_Delete(j->m[i].carried_runs);
        j->m[i].carried_runs = NULL;
    }
}
