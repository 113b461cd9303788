/* The task registry (the built-in tasks, one line each, and those added with gf_task_register) and a task's
 * recipe: its options read, checked, stored and read back through its key table. */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "plugin/registry.h"
#include "plugin/schema.h"
#include "tasks/task.h"

static const gf_task_ops *const BUILTIN[] = {&gf_task_lm, &gf_task_snli, &gf_task_g2p, &gf_task_synth, &gf_task_image};
static gf_registry g_tasks = {(const void *const *)BUILTIN, (int)(sizeof BUILTIN / sizeof BUILTIN[0]), {0}, 0};

int gf_task_count(void) { return gf_registry_count(&g_tasks); }
const gf_task_ops *gf_task_at(int i) { return gf_registry_at(&g_tasks, i); }

/* The keys a stored recipe has besides a task's options: the trainer's and the task recipe's own. */
static const char *const RESERVED[] = {"batch", "steps", "epochs", "warmup", "accum", "eval_every", "log_every",
                                       "lr", "min_lr", "wd", "clip", "beta1", "beta2", "eps", "on_nonfinite",
                                       "feature_cache", "out_dir", "seed", "task", "corpus", "tokenizer", "model",
                                       NULL};

static bool name_ok(const char *s) {
    if (!s || !s[0] || strlen(s) >= GF_TASK_NAME_MAX) return false;
    for (; *s; s++)
        if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) && *s != '_' && *s != '-') return false;
    return true;
}

/* What gf_task_register checks, for a built-in task as for an added one. */
int gf_task_check(const gf_task_ops *t) {
    if (!t) return gf_fail("gf_task_register: NULL task");
    const char *nm = t->name ? t->name : "(no name)";
    if (t->version < 1 || t->version > GF_TASK_OPS_VERSION)
        return gf_fail("gf_task_register: task %s declares interface version %d; this build knows 1 .. %d", nm,
                       t->version, GF_TASK_OPS_VERSION);
    if (!name_ok(t->name))
        return gf_fail("gf_task_register: task name \"%s\": expected 1 to %d characters of a-z, 0-9, _ and -", nm,
                       GF_TASK_NAME_MAX - 1);
    if (gf_metric_check(t)) return -1;
    if (!t->help || !t->unit || !t->counted || !t->load || !t->configure || !t->source || !t->describe || !t->free)
        return gf_fail("gf_task_register: task %s lacks one of help, unit, counted, load, configure, source, describe, "
                       "free", nm);
    if (!gf_task_metric(t)->by_loss && !t->label)
        return gf_fail("gf_task_register: task %s is scored by %s but has no label function (its classes)", nm,
                       gf_task_metric(t)->title);
    if (t->options_size > GF_TASK_OPTIONS_BYTES)
        return gf_fail("gf_task_register: task %s: options of %zu bytes; at most %d", nm, t->options_size,
                       GF_TASK_OPTIONS_BYTES);
    if (t->n_keys < 0 || (t->n_keys > 0 && !t->keys) || gf_keys_check(t->keys, t->n_keys, t->options_size, nm))
        return t->n_keys < 0 || (t->n_keys > 0 && !t->keys)
                   ? gf_fail("gf_task_register: task %s: %d keys at %p", nm, t->n_keys, (const void *)t->keys) : -1;
    for (int i = 0; i < t->n_keys; i++)
        for (const char *const *r = RESERVED; *r; r++)
            if (!strcmp(t->keys[i].name, *r))
                return gf_fail("gf_task_register: task %s: option \"%s\" is a key the recipe has already; name it "
                               "otherwise", nm, *r);
    return 0;
}

int gf_task_register(const gf_task_ops *ops) {
    if (gf_task_check(ops)) return -1;
    for (int i = 0; i < gf_task_count(); i++)
        if (!strcmp(gf_task_at(i)->name, ops->name))
            return gf_fail("gf_task_register: a task called %s is registered already", ops->name);
    return gf_registry_add(&g_tasks, ops, "tasks (gf_task_register)");
}

int gf_task_stats(const gf_task_ops *t, const gf_task_env *e, bool json, char **text) {
    *text = NULL;
    if (t->version < 2 || !t->stats)
        return gf_fail("task %s reports no statistics of its data (its table has no stats function)", t->name);
    return t->stats(e, json, text);
}

int gf_task_text_counts(const gf_task_ops *t, const void *data, int split, gf_text_counts *out) {
    *out = (gf_text_counts){.first_skipped = -1};
    if (t->version < 3 || !t->text_counts) return -1;
    return t->text_counts(data, split, out);
}

int gf_task_eval_protocol(const gf_task_ops *t, const void *data, const void *options, char *buf, size_t n) {
    if (n) buf[0] = '\0';
    if (t->version < 5 || !t->eval_protocol || !n) return -1;
    t->eval_protocol(data, options, buf, n);
    return 0;
}

int gf_task_source_ids(const gf_task_ops *t, const void *options, const char *text, size_t n, const char *what,
                       int32_t **ids, int64_t *len) {
    if (t->version < 6 || !t->source_ids)
        return gf_fail("%s: task %s reads no source of its own from a line (it is not a task of sequence pairs)", what,
                       t->name);
    return t->source_ids(options, text, n, what, ids, len);
}

const gf_task_ops *gf_task_find(const char *name) {
    char names[512] = "";
    for (int i = 0; i < gf_task_count(); i++) {
        if (name && !strcmp(gf_task_at(i)->name, name)) return gf_task_at(i);
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s (%s)", i ? ", " : "", gf_task_at(i)->name,
                 gf_task_at(i)->help);
    }
    gf_fail("%s is not a task; the tasks are %s", name ? name : "(none)", names);
    return NULL;
}

int64_t gf_task_n_labels(const gf_task_ops *t, const void *data) {
    int64_t n = 0;
    while (t->label && t->label(data, n)) n++;
    return n;
}

const char *gf_task_label(const gf_task_ops *t, const void *data, int64_t i) {
    return t && t->label && i >= 0 ? t->label(data, i) : NULL;
}

/* ---- a task's recipe ---------------------------------------------------------------------------------- */

int gf_task_recipe_init(gf_task_recipe *r, const char *name) {
    memset(r, 0, sizeof *r);
    r->task = gf_task_find(name);
    if (!r->task) return -1;
    gf_keys_default(r->task->keys, r->task->n_keys, r->options.bytes);
    return 0;
}

/* Option key's entry, or NULL after an error naming the options there are. */
static const gf_cfg_key *option_key(const gf_task_recipe *r, const char *key, const char *src) {
    const gf_cfg_key *k = gf_key_find(r->task->keys, r->task->n_keys, key);
    if (k) return k;
    char names[512];
    gf_key_names(r->task->keys, r->task->n_keys, names, sizeof names);
    gf_fail("%s: task %s has no option %s; its options: %s", src, r->task->name, key, names[0] ? names : "none");
    return NULL;
}

int gf_task_option_set(gf_task_recipe *r, const char *key, const char *value, const char *src) {
    const gf_cfg_key *k = option_key(r, key, src);
    if (!k) return -1;
    cJSON *v = cJSON_ParseWithOpts(value, NULL, 1);
    if (!v) v = cJSON_CreateString(value); /* a bare word: an enum's name */
    unsigned char tmp[GF_TASK_OPTIONS_BYTES];
    memcpy(tmp, r->options.bytes, sizeof tmp);
    int rc = v ? gf_key_parse(k, v, tmp, src, key) : gf_fail("out of memory");
    if (!rc) memcpy(r->options.bytes, tmp, sizeof tmp);
    cJSON_Delete(v);
    return rc;
}

char *gf_task_option_get(const gf_task_recipe *r, const char *key) {
    const gf_cfg_key *k = option_key(r, key, "gf_task_option_get");
    cJSON *o = k ? cJSON_CreateObject() : NULL;
    if (!o) return NULL;
    gf_key_to_json(k, r->options.bytes, o);
    char *s = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(o, k->name));
    cJSON_Delete(o);
    return s;
}

char *gf_task_recipe_to_json(const gf_task_recipe *r) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "task", r->task->name);
    cJSON_AddStringToObject(j, "corpus", r->corpus);
    cJSON_AddStringToObject(j, "tokenizer", r->tokenizer);
    cJSON_AddStringToObject(j, "model", r->model);
    for (int i = 0; i < r->task->n_keys; i++) gf_key_to_json(&r->task->keys[i], r->options.bytes, j);
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
}

/* Member key of j, a string that fits dst[cap] (absent: ""); 0 or -1 naming source. */
static int copy_str(const cJSON *j, const char *key, const char *source, char *dst, size_t cap) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(j, key);
    dst[0] = '\0';
    if (!it) return 0;
    if (!cJSON_IsString(it)) return gf_fail("%s: the training recipe's \"%s\" is not a string", source, key);
    if (strlen(it->valuestring) >= cap)
        return gf_fail("%s: the training recipe's \"%s\" is longer than %zu bytes", source, key, cap - 1);
    memcpy(dst, it->valuestring, strlen(it->valuestring) + 1);
    return 0;
}

int gf_task_recipe_from_json(const char *json, const char *source, gf_task_recipe *r) {
    cJSON *j = cJSON_Parse(json);
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return gf_fail("%s: the training recipe is not a JSON object", source);
    }
    char name[GF_TASK_NAME_MAX];
    int rc = copy_str(j, "task", source, name, sizeof name);
    if (!rc && gf_task_recipe_init(r, name[0] ? name : gf_task_at(0)->name)) {
        char why[1024]; /* gf_fail must not read the buffer it writes */
        snprintf(why, sizeof why, "%s", gf_last_error());
        rc = gf_fail("%s: the training recipe's task: %s", source, why);
    }
    if (!rc) rc = copy_str(j, "corpus", source, r->corpus, sizeof r->corpus);
    if (!rc) rc = copy_str(j, "tokenizer", source, r->tokenizer, sizeof r->tokenizer);
    if (!rc) rc = copy_str(j, "model", source, r->model, sizeof r->model);
    for (int i = 0; !rc && i < r->task->n_keys; i++) { /* a run from before an option keeps its default */
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, r->task->keys[i].name);
        if (v) rc = gf_key_parse(&r->task->keys[i], v, r->options.bytes, source, r->task->keys[i].name);
    }
    cJSON_Delete(j);
    return rc;
}

gf_task_env gf_task_recipe_env(const gf_task_recipe *r, const char *data_dir, const char *cache_dir) {
    return (gf_task_env){.corpus = r->corpus, .tokenizer = r->tokenizer, .splits = 7u, .data_dir = data_dir,
                         .cache_dir = cache_dir};
}
