/* Metrics: how a task's evaluations are scored (gf_metric in include/grassflow.h). The built-in ones, the
 * lookup by name (built-in, then the registered tasks' own) and the check a task's own metric passes. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "tasks/task.h"

static double score_ppl(const gf_eval_result *r) { return exp(r->mean_loss); }

static double score_accuracy(const gf_eval_result *r) {
    return r->n_correct >= 0 && r->n_counted > 0 ? (double)r->n_correct / (double)r->n_counted : NAN;
}

const gf_metric gf_metric_ppl = {.name = "ppl", .key = "ppl", .title = "perplexity", .higher_is_better = false,
                                 .by_loss = true, .relative_gap = true, .decimals = 2, .lo = 1.0, .hi = INFINITY,
                                 .score = score_ppl};
const gf_metric gf_metric_accuracy = {.name = "accuracy", .key = "acc", .title = "accuracy",
                                      .higher_is_better = true, .by_loss = false, .relative_gap = false,
                                      .decimals = 4, .lo = 0.0, .hi = 1.0, .score = score_accuracy};

static const gf_metric *builtin_metric(const char *name) {
    if (name && !strcmp(name, gf_metric_ppl.name)) return &gf_metric_ppl;
    if (name && !strcmp(name, gf_metric_accuracy.name)) return &gf_metric_accuracy;
    return NULL;
}

const gf_metric *gf_task_metric(const gf_task_ops *t) {
    if (!t) return NULL;
    if (t->version >= 4 && t->score_by) return t->score_by;
    return builtin_metric(t->metric);
}

const gf_metric *gf_metric_find(const char *name) {
    const gf_metric *m = builtin_metric(name);
    for (int i = 0; !m && name && i < gf_task_count(); i++) {
        const gf_metric *t = gf_task_metric(gf_task_at(i));
        if (t && !strcmp(t->name, name)) m = t;
    }
    return m;
}

/* A name of [a-z0-9_], 1 to 31 characters. */
static bool metric_name_ok(const char *s) {
    if (!s || !s[0] || strlen(s) > 31) return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_')) return false;
    return true;
}

int gf_metric_check(const gf_task_ops *t) {
    const char *nm = t->name;
    const gf_metric *m = t->version >= 4 ? t->score_by : NULL;
    if (!m) {
        if (builtin_metric(t->metric)) return 0;
        return gf_fail("gf_task_register: task %s: metric \"%s\"; expected \"ppl\" or \"accuracy\", or a metric of "
                       "its own in score_by", nm, t->metric ? t->metric : "(none)");
    }
    if (!metric_name_ok(m->name) || (m->key && !metric_name_ok(m->key)))
        return gf_fail("gf_task_register: task %s: metric name \"%s\" (key \"%s\"): expected 1 to 31 characters of "
                       "a-z, 0-9 and _", nm, m->name ? m->name : "(none)", m->key ? m->key : "");
    if (!t->metric || strcmp(t->metric, m->name))
        return gf_fail("gf_task_register: task %s: metric \"%s\" is not the name of its score_by, \"%s\"", nm,
                       t->metric ? t->metric : "(none)", m->name);
    if (!m->title || !m->score || m->decimals < 0 || m->decimals > 12 || !(m->lo < m->hi))
        return gf_fail("gf_task_register: task %s: metric %s lacks a title or a score function, or has decimals "
                       "%d (0 to 12) or a range [%g, %g]", nm, m->name, m->decimals, m->lo, m->hi);
    const gf_metric *same = gf_metric_find(m->name);
    if (same && same != m)
        return gf_fail("gf_task_register: task %s: a metric called %s exists already (another table); share it, "
                       "or name yours otherwise", nm, m->name);
    return 0;
}
