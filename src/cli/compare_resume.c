/* grassflow compare run again into the same --out: the earlier compare's summary.json says which runs it
 * finished (read back, once their state says so too), which stopped (continued from their state) and what
 * recipe they share; a different recipe is refused, never mixed in. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compare.h"

#define START_OVER "\nHINT: give the options of that compare to resume it, --force to start over (deleting its runs), " \
                   "or another --out"

/* A JSON value as text (for messages and comparisons), into buf. */
static const char *json_text(const cJSON *v, char *buf, size_t n) {
    char *s = v ? gf_json_utf8(cJSON_PrintUnformatted(v)) : NULL; /* as summary.json holds it: valid UTF-8 */
    snprintf(buf, n, "%s", s ? s : "(none)");
    free(s);
    return buf;
}

static int differs(const cmp_job *j, const char *what, const cJSON *was, const cJSON *now) {
    char a[512], b[512];
    return cli_error("--out %s holds a compare whose %s is %s; this one asks for %s: continuing it would mix two "
                     "recipes" START_OVER, j->out, what, json_text(was, a, sizeof a), json_text(now, b, sizeof b));
}

static double num(const cJSON *o, const char *key);

/* The earlier compare's length (steps, epochs) and warmup against this one's: a warmup not given is the
 * earlier's (a default that depends on --steps must not make a rerun another recipe); a larger total extends
 * every run (j->extend), a smaller one is refused. */
static int budget_from_earlier(cmp_job *j, const cJSON *was) {
    gf_train_opts *o = &j->r.o;
    const double ws = num(was, "steps"), we = num(was, "epochs"), ww = num(was, "warmup");
    if (!j->warmup_given && ww >= 0 && ww <= (double)(1LL << 52)) o->warmup = (int64_t)ww;
    if (!(ws >= 0 && we >= 0) || (ws == (double)o->steps && we == (double)o->epochs)) return EXIT_OK;
    const bool cut = o->steps > 0 ? ws > 0 && (double)o->steps < ws : ws == 0 && (double)o->epochs < we;
    if (cut)
        return cli_error("--out %s holds a compare of %.0f %s; this one asks for %lld: a compare is extended, never "
                         "cut back\nHINT: --%s %.0f or more to go on (every run continues from its state), --force to "
                         "start over, or another --out", j->out, ws > 0 ? ws : we, ws > 0 ? "steps" : "epochs",
                         (long long)(o->steps > 0 ? o->steps : o->epochs), ws > 0 ? "steps" : "epochs", ws > 0 ? ws : we);
    j->extend = true;
    if (gf_dist_rank() == 0)
        fprintf(stderr, "grassflow compare: extending the compare in %s from %.0f to %lld %s: every run goes on from "
                "its state, as train --resume DIR --%s N does\n", j->out, ws > 0 ? ws : we,
                (long long)(o->steps > 0 ? o->steps : o->epochs), o->steps > 0 ? "steps" : "epochs",
                o->steps > 0 ? "steps" : "epochs");
    return EXIT_OK;
}

/* Whether key name, which the earlier compare's recipe lacks, is an option of the task that came after it and
 * is now at its default (v): a compare from before the option ran with what the default does, as a run read
 * back by gf_task_recipe_from_json keeps the default of an option its recipe lacks. */
static bool later_default(const cmp_job *j, const char *name, const cJSON *v) {
    const gf_task_ops *t = j->r.t.task;
    for (int i = 0; t && i < t->n_keys; i++) {
        if (strcmp(t->keys[i].name, name) || !t->keys[i].def) continue;
        cJSON *d = cJSON_Parse(t->keys[i].def);
        const bool same = d && cJSON_Compare(d, v, true);
        cJSON_Delete(d);
        return same;
    }
    return false;
}

/* Every key of the recipe (but the machine's facts) as it was: the first that differs is named (the length,
 * steps and epochs, not when the compare is extended; a task option newer than the earlier compare, at its
 * default, is the same recipe). */
static int same_recipe(const cmp_job *j, const cJSON *was) {
    cJSON *now = cmp_recipe_json(j);
    if (!now) return cli_error("out of memory reading the earlier compare");
    int rc = EXIT_OK;
    if (!cJSON_GetObjectItemCaseSensitive(was, "seeds") != !j->per_seed)
        rc = cli_error("--out %s holds a compare %s --seeds; this one is %s: the run folders differ (MODEL/seed-S "
                       "with --seeds, MODEL without)" START_OVER, j->out, j->per_seed ? "without" : "with",
                       j->per_seed ? "with" : "without");
    const cJSON *it;
    for (int pass = 0; pass < 2 && !rc; pass++) { /* the keys asked for now, then those only the earlier had */
        const cJSON *keys = pass ? was : now;
        cJSON_ArrayForEach(it, keys) {
            const cJSON *other = cJSON_GetObjectItemCaseSensitive(pass ? now : was, it->string);
            char a[512], b[512];
            if (rc || cmp_fact_key(it->string)) continue;
            if (j->extend && (!strcmp(it->string, "steps") || !strcmp(it->string, "epochs"))) continue;
            if (!pass && !other && later_default(j, it->string, it)) continue;
            if (!other || strcmp(json_text(it, a, sizeof a), json_text(other, b, sizeof b))) {
                char what[300];
                snprintf(what, sizeof what, "recipe key \"%s\"", it->string);
                rc = differs(j, what, pass ? it : other, pass ? other : it);
            }
        }
    }
    cJSON_Delete(now);
    return rc;
}

bool cmp_is_string(const cJSON *v, const char *s) {
    char *u = cJSON_IsString(v) ? gf_json_utf8(strdup(s)) : NULL;
    const bool same = u && !strcmp(v->valuestring, u);
    free(u);
    return same;
}

/* The earlier compare's entry of model `name` (NULL: it had none). */
static const cJSON *earlier_model(const cJSON *summary, const char *name) {
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(summary, "models"))
        if (cmp_is_string(cJSON_GetObjectItemCaseSensitive(m, "model"), name)) return m;
    return NULL;
}

long long cmp_state_step(const char *dir) {
    char path[GF_PATH_MAX];
    if (gf_path_join(path, sizeof path, dir, "state.safetensors")) return -1;
    struct stat st;
    if (stat(path, &st) != 0) return -1;
    gf_st_file *f = gf_st_read(path);
    char *s = f ? gf_st_metadata(f, "step") : NULL;
    long long step = s ? strtoll(s, NULL, 10) : -1;
    free(s);
    gf_st_free(f);
    return step;
}

static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* The numbers of a finished run as the earlier summary gives them, if its folder proves them: its state at
 * the steps reported, its best validation score the state's, every number in range. */
static bool proven_numbers(const cmp_job *j, const cmp_run *u, const cJSON *model, const cJSON *run) {
    const double steps = num(run, "steps"), val = num(run, "val"), params = num(model, "params"),
                 trainable = num(model, "trainable"), rate = num(run, "tokens_per_s");
    if (!cmp_count_ok(steps) || cmp_state_step(u->dir) != (long long)steps || !cmp_score_ok(j, val) ||
        !cmp_score_ok(j, num(run, "test")) || !cmp_count_ok(params) || !cmp_count_ok(trainable) || trainable > params ||
        !(rate >= 0 && isfinite(rate)))
        return false;
    char path[GF_PATH_MAX];
    gf_st_file *f = gf_path_join(path, sizeof path, u->dir, "state.safetensors") ? NULL : gf_st_read(path);
    const gf_metric *mt = gf_task_metric(j->r.t.task);
    char key[48]; /* the state's best: its loss (a metric of the loss), else best_val_KEY */
    snprintf(key, sizeof key, "best_val_%s", mt->by_loss ? "loss" : mt->key ? mt->key : mt->name);
    char *bv = f ? gf_st_metadata(f, key) : NULL;
    const double best = bv ? strtod(bv, NULL) : NAN,
                 v = mt->by_loss ? mt->score(&(gf_eval_result){.mean_loss = best, .n_correct = -1}) : best;
    free(bv);
    gf_st_free(f);
    return fabs(v - val) <= 1e-9 * fabs(val);
}

/* Run u as the earlier compare left it: its wall time so far; started (continued from its state) or not
 * (replaced, if a --force said so); finished and proven by its folder (proven_numbers): its numbers. A
 * finished run whose numbers its folder does not prove is continued from its state like a stopped one:
 * a finished state trains no more, and is scored again. */
static void read_run(const cmp_job *j, cmp_run *u, const cJSON *model, const cJSON *run) {
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(run, "status"), *tok;
    const char *status = cJSON_IsString(st) ? st->valuestring : "pending";
    const double wall = num(run, "wall_s"), rate = num(run, "tokens_per_s");
    u->s.wall_s = isfinite(wall) && wall >= 0 ? wall : 0.0;
    u->s.tokens_per_s = isfinite(rate) && rate >= 0 ? rate : NAN; /* kept if it is scored again */
    u->replace = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(run, "replace"));
    u->status = strcmp(status, "pending") ? CMP_STOPPED : CMP_PENDING;
    if (strcmp(status, "done") || !proven_numbers(j, u, model, run)) return;
    u->status = CMP_DONE;
    u->s.steps = (int64_t)num(run, "steps");
    u->s.params = (int64_t)num(model, "params");
    u->s.trainable = (int64_t)num(model, "trainable");
    u->s.val = num(run, "val");
    u->s.test = num(run, "test");
    tok = cJSON_GetObjectItemCaseSensitive(run, "tokenizer");
    snprintf(u->s.tokenizer, sizeof u->s.tokenizer, "%s", cJSON_IsString(tok) ? tok->valuestring : "");
}

/* Model i's --set options as the earlier compare's entry m of it lists them. */
static int same_sets(const cmp_job *j, int i, const cJSON *m) {
    const cJSON *was = cJSON_GetObjectItemCaseSensitive(m, "set");
    cJSON *now = cJSON_CreateArray();
    for (int s = 0; s < j->m[i].mo.n_sets; s++) cJSON_AddItemToArray(now, cJSON_CreateString(j->m[i].mo.sets[s]));
    char a[512], b[512], what[1100];
    int rc = EXIT_OK;
    if (strcmp(json_text(was, a, sizeof a), json_text(now, b, sizeof b))) {
        snprintf(what, sizeof what, "--set list of the model %s", j->m[i].name);
        rc = differs(j, what, was, now);
    }
    cJSON_Delete(now);
    return rc;
}

/* Each model's runs as the earlier compare left them; its --set options must be the same. A run folder that
 * holds a run the earlier compare did not list is refused (as a new run's folder is) unless --force. */
static int read_runs(cmp_job *j, const cJSON *summary) {
    for (int i = 0; i < j->n; i++) {
        const cJSON *m = summary ? earlier_model(summary, j->m[i].name) : NULL, *run;
        int rc = m ? same_sets(j, i, m) : EXIT_OK;
        if (rc) return rc;
        for (int k = 0; k < j->n_seeds; k++) {
            cmp_run *u = &j->m[i].runs[k];
            bool known = false;
            const cJSON *runs = m ? cJSON_GetObjectItemCaseSensitive(m, "runs") : NULL;
            cJSON_ArrayForEach(run, runs) {
                const cJSON *d = cJSON_GetObjectItemCaseSensitive(run, "dir");
                if (!known && cmp_is_string(d, u->dir + strlen(j->out) + 1))
                    read_run(j, u, m, run), known = true;
            }
            struct stat st; /* a run this compare did not start is not its own */
            if (u->status == CMP_PENDING && !u->replace && stat(u->dir, &st) == 0 &&
                (rc = out_dir_ok("compare", u->dir, false)))
                return rc;
        }
    }
    return EXIT_OK;
}

/* Each finished run's test score as its best checkpoint gives it now (the one number a folder cannot prove
 * without scoring it again): a summary that says otherwise was edited, and is corrected with a note. */
static int rescore_done(cmp_job *j) {
    for (int i = 0; i < j->n; i++)
        for (int k = 0; k < j->n_seeds; k++) {
            cmp_run *u = &j->m[i].runs[k];
            double test;
            if (u->status != CMP_DONE) continue;
            recipe r = j->r;
            int rc = run_test_score(&r, u->dir, &test);
            if (rc) return rc;
            if (!(fabs(test - u->s.test) <= 1e-6 * fabs(test)) && gf_dist_rank() == 0)
                fprintf(stderr, "note: %s/summary.json gave %s a test score of %.6g; its best checkpoint scores %.6g: "
                        "the summary is corrected\n", gf_show_name(j->out), gf_show_name(u->dir), u->s.test, test);
            u->s.test = test;
        }
    return EXIT_OK;
}

int cmp_read_earlier(cmp_job *j) {
    char path[GF_PATH_MAX];
    struct stat st;
    if (j->r.o.overwrite) { /* --force: every run starts again, none over a file the compare reads */
        for (int i = 0; i < j->n; i++)
            for (int k = 0; k < j->n_seeds; k++) {
                const char *inputs[] = {j->r.backbone, j->m[i].mo.config_path, j->r.backbone ? j->m[i].name : NULL};
                int rc = force_spares_inputs(j->m[i].runs[k].dir, inputs, 3);
                if (rc) return rc;
                j->m[i].runs[k].replace = true;
            }
        return EXIT_OK;
    }
    if (gf_path_join(path, sizeof path, j->out, "summary.json")) return cli_error("--out: %s", gf_last_error());
    if (stat(path, &st) != 0) {
        if (j->resume)
            return cli_usage_error("compare", "--resume: --out %s holds no compare to resume (no summary.json)\nHINT: "
                                   "drop --resume to start one there", j->out);
        return read_runs(j, NULL);
    }
    size_t n;
    unsigned char *text = gf_read_file(path, (size_t)64 << 20, &n);
    if (!text) return cli_error("%s", gf_last_error());
    cJSON *summary = cJSON_Parse((const char *)text);
    free(text);
    const cJSON *recipe = cJSON_GetObjectItemCaseSensitive(summary, "recipe");
    int rc = cJSON_IsObject(recipe) ? budget_from_earlier(j, recipe)
                                    : cli_error("%s: not a grassflow compare summary (no \"recipe\" object)" START_OVER,
                                                path);
    if (!rc) rc = same_recipe(j, recipe);
    if (!rc) rc = read_runs(j, summary);
    for (int i = 0; !rc && j->extend && i < j->n; i++) /* finished runs go on to the new total */
        for (int k = 0; k < j->n_seeds; k++)
            if (j->m[i].runs[k].status == CMP_DONE) j->m[i].runs[k].status = CMP_STOPPED;
    if (!rc) rc = rescore_done(j);
    cJSON_Delete(summary);
    return rc;
}
