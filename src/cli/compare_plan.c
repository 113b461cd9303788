/* grassflow compare: the models (--models, each with its --set options), the seeds, and every run's folder,
 * all checked before anything trains. */
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compare.h"

/* The folder (under --out) of a compared model: its name with '/' as '_'. */
static void run_folder(const char *name, char *buf, size_t n) {
    snprintf(buf, n, "%s", name);
    for (char *c = buf; *c; c++)
        if (*c == '/') *c = '_';
}

/* Split --models into j->m[].name, refusing more than MAX_COMPARE, two that would share a folder, and a name
 * that is not UTF-8 (its run folder, OUT/NAME, is a path every checkpoint of the run records in its JSON
 * header: cli_utf8_arg). */
int cmp_models(cmp_job *j, const char *models) {
    char *names[MAX_COMPARE];
    int n, rc = cli_split_list("compare", "--models", models, j->list, sizeof j->list, names, MAX_COMPARE,
                               "models", &n);
    if (rc) return rc;
    for (j->n = 0; j->n < n;) {
        char *tok = names[j->n];
        const size_t len = strlen(tok);
        if ((rc = cli_utf8_arg("compare", "--models", tok))) return rc;
        j->m[j->n].name = tok;
        if (len > 5 && !strcmp(tok + len - 5, ".json")) j->m[j->n].mo.config_path = tok;
        else j->m[j->n].mo.preset = tok;
        run_folder(tok, j->m[j->n].folder, sizeof j->m[j->n].folder); /* as long as --models: never cut */
        j->n++;
    }
    for (int i = 0; i < j->n; i++)
        for (int k = 0; k < i; k++)
            if (!strcmp(j->m[i].folder, j->m[k].folder))
                return cli_usage_error("compare", "--models %s and %s would train into the same folder %s; give each "
                                       "model once, under distinct names", j->m[k].name, j->m[i].name, j->m[i].folder);
    return j->n ? EXIT_OK : cli_usage_error("compare", "--models lists no model");
}

/* --seeds 1,2,3: each model is trained once per seed (distinct, at most MAX_SEEDS, each at most 2^53 so that
 * JSON holds it exactly). */
int cmp_seeds(cmp_job *j, const char *arg) {
    char buf[1024], *seeds[MAX_SEEDS];
    int n, rc = cli_split_list("compare", "--seeds", arg, buf, sizeof buf, seeds, MAX_SEEDS, "seeds", &n);
    for (j->n_seeds = 0; !rc && j->n_seeds < n;) {
        int64_t v;
        if ((rc = cli_parse_i64("compare", "--seeds", seeds[j->n_seeds], 0, (int64_t)1 << 53, &v))) return rc;
        for (int k = 0; k < j->n_seeds; k++) /* 7 and 07 */
            if (j->seeds[k] == (uint64_t)v)
                return cli_usage_error("compare", "--seeds %s: lists the seed %lld twice; give each once", arg,
                                       (long long)v);
        j->seeds[j->n_seeds++] = (uint64_t)v;
    }
    if (rc) return rc;
    j->per_seed = true;
    return EXIT_OK;
}

/* --set MODEL:KEY=VALUE: the model (into model[n]) and *kv = KEY=VALUE; a --set KEY=VALUE: NULL. The model is
 * what comes before the last ':' ahead of the '=' (config keys have none). */
static const char *set_model(const char *arg, char *model, size_t n, const char **kv) {
    const char *eq = strchr(arg, '='), *colon = NULL;
    for (const char *c = arg; *c && (!eq || c < eq); c++)
        if (*c == ':') colon = c;
    *kv = colon ? colon + 1 : arg;
    if (!colon) return NULL;
    snprintf(model, n, "%.*s", (int)(colon - arg), arg);
    return model;
}

static int add_set(cmp_model *m, const char *kv) {
    if (m->mo.n_sets == (int)(sizeof m->mo.sets / sizeof m->mo.sets[0]))
        return cli_usage_error("compare", "too many --set options for %s (at most 64)", m->name);
    m->mo.sets[m->mo.n_sets++] = kv;
    return EXIT_OK;
}

/* Each --set onto the models it is for: every model, or the one it names. */
static int split_sets(cmp_job *j) {
    for (int s = 0; s < j->sets.n_sets; s++) {
        char model[1024];
        const char *kv, *only = set_model(j->sets.sets[s], model, sizeof model, &kv);
        int hit = 0, rc = EXIT_OK;
        for (int i = 0; i < j->n && !rc; i++)
            if (!only || !strcmp(only, j->m[i].name)) rc = add_set(&j->m[i], kv), hit++;
        if (rc) return rc;
        if (!hit) {
            char names[1100] = "";
            for (int i = 0; i < j->n; i++)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? "," : "", j->m[i].name);
            return cli_usage_error("compare", "--set %s: %s is not one of --models %s\nHINT: --set MODEL:KEY=VALUE "
                                   "names a model as --models gives it", j->sets.sets[s], only, names);
        }
    }
    return EXIT_OK;
}

/* With --backbone, a --models entry that is no file: the head files are meant. */
static int not_a_head(const char *name) {
    char dir[GF_PATH_MAX + 32], real[PATH_MAX], pattern[PATH_MAX + GF_PATH_MAX + 64], heads[1024] = "";
    glob_t g;
    snprintf(dir, sizeof dir, "%.*s/../configs", GF_PATH_MAX, cli_data_dir()); /* the source tree's */
    snprintf(pattern, sizeof pattern, "%s/*/head-*.json", realpath(dir, real) ? real : dir);
    if (glob(pattern, 0, NULL, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc; i++)
            snprintf(heads + strlen(heads), sizeof heads - strlen(heads), "%s%s", i ? ", " : "", g.gl_pathv[i]);
    globfree(&g);
    return cli_usage_error("compare", "--models %s: no such file; with --backbone, --models lists head stack files "
                           "(JSON, one stack each), not presets; the heads grassflow ships: %s", name,
                           heads[0] ? heads : "configs/*/head-*.json in its source tree");
}

/* Whether KEY=VALUE applies to model m (its config as the task makes it): for the hint of a --set that does
 * not apply to every model. */
static bool set_fits(const cmp_job *j, const cmp_model *m, const char *kv) {
    gf_config c;
    if (m->mo.preset ? gf_config_preset(m->mo.preset, &c) : gf_config_load(m->mo.config_path, &c)) return false;
    return !j->r.t.task->configure(NULL, j->r.t.options.bytes, &c) && !gf_config_set(&c, kv);
}

/* A --set that does not apply to model i: the error names the model and the key, and the hint sets it on
 * the models it fits. */
static int set_refused(const cmp_job *j, int i, const char *kv) {
    char why[1024], hint[2048] = "";
    snprintf(why, sizeof why, "%s", gf_last_error());
    for (int s = 0; s < j->sets.n_sets; s++) /* was it given for every model, or for this one? */
        if (j->sets.sets[s] == kv)
            for (int k = 0; k < j->n; k++)
                if (k != i && set_fits(j, &j->m[k], kv))
                    snprintf(hint + strlen(hint), sizeof hint - strlen(hint), " --set %s:%s", j->m[k].name, kv);
    return cli_usage_error("compare", "--set %s does not apply to the model %s: %s%s%s", kv, j->m[i].name, why,
                           hint[0] ? "\nHINT: set it only on the models it applies to:" : "", hint);
}

/* The task's options (--seq-len, ...) against model i's config c (the task's check_options): refused before any
 * model trains, not when model i's turn comes. */
static int options_fit(const cmp_job *j, int i, const gf_config *c) {
    const gf_task_ops *t = j->r.t.task;
    if (t->version < 2 || !t->check_options || !t->check_options(j->r.t.options.bytes, c)) return EXIT_OK;
    return cli_usage_error("compare", "the model %s%s: %s\nHINT: change that option, or the model (--set %s:KEY=VALUE "
                           "sets a key of this model alone)", j->m[i].name,
                           j->m[i].mo.n_sets ? " with its --set options" : "", gf_last_error(), j->m[i].name);
}

/* Model i of --models: a preset or config file, or with a backbone a head file, with its --set options; each
 * --set is tried on its own first, so that one that does not fit names the model; then the task's options. */
static int check_model(cmp_job *j, int i) {
    cmp_model *m = &j->m[i];
    const char *name = m->name;
    gf_config c;
    if (j->r.backbone && access(name, F_OK) != 0) return not_a_head(name);
    if (j->r.backbone) {
        gf_tokenizer *tok = NULL;
        int rc = gf_backbone_config(j->r.backbone, name, &c, &tok) ? cli_error("%s", gf_last_error()) : EXIT_OK;
        gf_tokenizer_free(tok);
        return rc ? rc : options_fit(j, i, &c);
    }
    int rc = cli_model_base(&m->mo, "compare", &c);
    if (!rc && j->r.t.task->configure(NULL, j->r.t.options.bytes, &c)) rc = cli_error("%s", gf_last_error());
    for (int s = 0; !rc && s < m->mo.n_sets; s++)
        if (gf_config_set(&c, m->mo.sets[s])) return set_refused(j, i, m->mo.sets[s]);
    if (!rc) rc = task_config(&m->mo, j->r.t.task, NULL, j->r.t.options.bytes, "compare", &c);
    return rc ? rc : options_fit(j, i, &c);
}

int cmp_check_models(cmp_job *j) {
    int rc = split_sets(j);
    j->ref = j->reference ? -1 : j->n - 1;
    for (int i = 0; i < j->n && j->reference; i++)
        if (!strcmp(j->reference, j->m[i].name)) j->ref = i;
    if (!rc && j->ref < 0)
        return cli_usage_error("compare", "--reference %s is not one of --models", j->reference);
    for (int i = 0; i < j->n && !rc; i++) rc = check_model(j, i);
    return rc;
}

/* Every run's folder: OUT/MODEL, or with --seeds OUT/MODEL/seed-S. */
int cmp_folders(cmp_job *j) {
    for (int i = 0; i < j->n; i++)
        for (int k = 0; k < j->n_seeds; k++) {
            cmp_run *u = &j->m[i].runs[k];
            char sub[1100];
            if (j->per_seed) snprintf(sub, sizeof sub, "%s/seed-%llu", j->m[i].folder, (unsigned long long)j->seeds[k]);
            else snprintf(sub, sizeof sub, "%s", j->m[i].folder);
            u->seed = j->seeds[k];
            if (gf_path_join(u->dir, sizeof u->dir, j->out, sub) || strlen(u->dir) + 64 > sizeof u->dir)
                return cli_error("--out %s: the run folder %s/%s is too long", j->out, j->out, sub);
        }
    return EXIT_OK;
}
