/* The task registry: what gf_task_register refuses (each with a message naming the task and the fault),
 * that the built-in tasks pass the same checks, and a task's recipe: options set from command-line text,
 * range-checked, stored beside the trainer's keys and read back (older recipes keep their defaults). The
 * task run end to end through the command: tests/cli/task_plugin.sh. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/schema.h"
#include "tasks/task.h"
#include "testlib.h"

typedef struct {
    int64_t n;
} opts;

static const gf_cfg_key KEYS[] = {{.name = "n", .type = GF_KEY_INT, .off = 0, .lo = 1, .hi = 9, .def = "3", .help = "n"}};
static const gf_cfg_key BATCH_KEY[] = {{.name = "batch", .type = GF_KEY_INT, .off = 0, .lo = 1, .hi = 9, .def = "3", .help = "b"}};

static int t_load(const gf_task_env *e, const void *o, void **d) { (void)e, (void)o, (void)d; return -1; }
static int t_conf(const void *d, const void *o, gf_config *c) { (void)d, (void)o, (void)c; return 0; }
static gf_source *t_src(const void *d, int s, const void *o, uint64_t seed) { (void)d, (void)s, (void)o, (void)seed; return NULL; }
static void t_desc(const void *d, char *b, size_t n) { (void)d; snprintf(b, n, "x"); }
static const char *t_label(const void *d, int64_t i) { (void)d; return i < 2 ? (i ? "b" : "a") : NULL; }
static void t_free(void *d) { (void)d; }

static double mine_score(const gf_eval_result *r) { return r->mean_loss; }

static gf_task_ops good(const char *name) {
    return (gf_task_ops){.version = GF_TASK_OPS_VERSION, .name = name, .help = "h", .metric = "accuracy", .unit = "u",
                         .counted = "units", .options_size = sizeof(opts), .keys = KEYS, .n_keys = 1, .load = t_load,
                         .configure = t_conf, .source = t_src, .describe = t_desc, .label = t_label, .free = t_free};
}

static void refused(const gf_task_ops *t, const char *want) {
    if (gf_task_register(t) == 0) fail_msg("registered, expected a refusal with '%s'", want);
    if (!strstr(gf_last_error(), want)) fail_msg("message '%s' lacks '%s'", gf_last_error(), want);
}

static void test_refusals(void **state) {
    (void)state;
    gf_task_ops t;
    refused(NULL, "NULL task");
    t = good("x1"), t.version = 0, refused(&t, "interface version 0");
    t = good("x1"), t.version = GF_TASK_OPS_VERSION + 1, refused(&t, "interface version");
    t = good("Bad Name"), refused(&t, "task name \"Bad Name\"");
    t = good(""), refused(&t, "task name");
    t = good("x1"), t.metric = "f1", refused(&t, "metric \"f1\"");
    t = good("x1"), t.source = NULL, refused(&t, "lacks one of");
    t = good("x1"), t.counted = NULL, refused(&t, "lacks one of");
    t = good("x1"), t.label = NULL, refused(&t, "no label function");
    t = good("x1"), t.options_size = GF_TASK_OPTIONS_BYTES + 1, refused(&t, "options of");
    t = good("x1"), t.keys = BATCH_KEY, refused(&t, "option \"batch\" is a key the recipe has already");
    t = good("x1"), t.options_size = 4, refused(&t, "x1"); /* the key's int64 does not fit 4 bytes */
    t = good("lm"), refused(&t, "a task called lm is registered already");
    /* a metric of its own (score_by): named as the table says, well formed, not another's name */
    static const gf_metric mine = {.name = "mine", .title = "mine", .decimals = 3, .lo = 0, .hi = 1,
                                   .score = mine_score};
    gf_metric bad = mine;
    t = good("x1"), t.score_by = &mine, refused(&t, "metric \"accuracy\" is not the name of its score_by, \"mine\"");
    t = good("x1"), t.metric = "mine", t.score_by = &bad, bad.name = "Mine!", refused(&t, "metric name \"Mine!\"");
    bad = mine, bad.score = NULL, t.score_by = &bad, refused(&t, "lacks a title or a score function");
    bad = mine, bad.lo = 1, t.score_by = &bad, refused(&t, "a range [1, 1]");
    bad = gf_metric_accuracy, t.metric = "accuracy", t.score_by = &bad, refused(&t, "a metric called accuracy exists already");
    t = good("x1"), t.metric = "mine", t.version = 3, t.score_by = &mine, refused(&t, "metric \"mine\"; expected"); /* v3: no score_by */
    t = good("x1"), t.metric = "mine", t.score_by = &mine;
    assert_null(gf_metric_find("mine"));
    assert_ptr_equal(gf_metric_find("ppl"), &gf_metric_ppl);
    assert_ptr_equal(gf_task_metric(&gf_task_lm), &gf_metric_ppl);
    assert_ptr_equal(gf_task_metric(&gf_task_snli), &gf_metric_accuracy);
    assert_null(gf_task_find("x1"));
    assert_non_null(strstr(gf_last_error(), "the tasks are lm"));
}

static void test_builtins_and_added(void **state) {
    (void)state;
    for (int i = 0; i < gf_task_count(); i++)
        if (gf_task_check(gf_task_at(i))) fail_msg("built-in task %s: %s", gf_task_at(i)->name, gf_last_error());
    static gf_task_ops added;
    added = good("two-class");
    const int n = gf_task_count();
    if (gf_task_register(&added)) fail_msg("%s", gf_last_error());
    assert_int_equal(gf_task_count(), n + 1);
    assert_ptr_equal(gf_task_find("two-class"), &added);
    assert_int_equal(gf_task_n_labels(&added, NULL), 2);
    assert_int_equal(gf_task_n_labels(&gf_task_lm, NULL), 0);
    /* a task with a metric of its own: registered, found by name, its task's */
    static const gf_metric own = {.name = "own_rate", .key = "own", .title = "own rate", .decimals = 4, .lo = 0,
                                  .hi = 1, .score = mine_score};
    static gf_task_ops scored;
    scored = good("own-scored"), scored.metric = "own_rate", scored.score_by = &own;
    if (gf_task_register(&scored)) fail_msg("%s", gf_last_error());
    assert_ptr_equal(gf_metric_find("own_rate"), &own);
    assert_ptr_equal(gf_task_metric(&scored), &own);
}

static int t_stats(const gf_task_env *e, bool json, char **text) {
    (void)e;
    *text = strdup(json ? "{}\n" : "stats\n");
    return *text ? 0 : -1;
}

/* stats came with version 2: a version-1 table still registers, and is never asked for it */
static void test_stats_member(void **state) {
    (void)state;
    static gf_task_ops v1, v2;
    v1 = good("stats-v1"), v1.version = 1, v1.stats = t_stats; /* a stale member a version-1 table cannot have */
    v2 = good("stats-v2"), v2.stats = t_stats;
    if (gf_task_register(&v1) || gf_task_register(&v2)) fail_msg("%s", gf_last_error());
    char *text = (char *)"x";
    gf_task_env e = {.corpus = "c", .tokenizer = ""};
    assert_int_equal(gf_task_stats(&v1, &e, false, &text), -1);
    assert_null(text);
    assert_non_null(strstr(gf_last_error(), "task stats-v1 reports no statistics"));
    assert_int_equal(gf_task_stats(&v2, &e, true, &text), 0);
    assert_string_equal(text, "{}\n");
    free(text);
    /* the built-in SNLI task counts pairs before any tokenizer: one asked for does not apply */
    e = (gf_task_env){.corpus = "snli", .tokenizer = "word", .data_dir = "data"};
    assert_int_equal(gf_task_stats(&gf_task_snli, &e, false, &text), GF_TASK_NOT_APPLICABLE);
    assert_non_null(strstr(gf_last_error(), "--tokenizer: snli holds sentence pairs"));
}

static void test_recipe(void **state) {
    (void)state;
    gf_task_recipe r;
    assert_int_equal(gf_task_recipe_init(&r, "snli"), 0);
    char *v = gf_task_option_get(&r, "max_sent");
    assert_string_equal(v, "48");
    free(v);
    assert_int_equal(gf_task_option_set(&r, "max_sent", "20", "--max-sent"), 0);
    assert_int_not_equal(gf_task_option_set(&r, "max_sent", "5000", "--max-sent"), 0);
    assert_non_null(strstr(gf_last_error(), "--max-sent"));
    assert_int_not_equal(gf_task_option_set(&r, "seq_len", "8", "--seq-len"), 0);
    assert_non_null(strstr(gf_last_error(), "task snli has no option seq_len; its options: max_sent"));
    snprintf(r.corpus, sizeof r.corpus, "snli");
    char *js = gf_task_recipe_to_json(&r);
    gf_task_recipe back;
    assert_int_equal(gf_task_recipe_from_json(js, "test", &back), 0);
    assert_ptr_equal(back.task, &gf_task_snli);
    assert_string_equal(back.corpus, "snli");
    assert_memory_equal(back.options.bytes, r.options.bytes, sizeof r.options.bytes);
    free(js);
    /* a recipe of grassflow 0.1: no "task" (a language model), seq_len among the trainer's keys */
    assert_int_equal(gf_task_recipe_from_json("{\"batch\": 4, \"seq_len\": 64, \"corpus\": \"c\"}", "old", &back), 0);
    assert_ptr_equal(back.task, &gf_task_lm);
    v = gf_task_option_get(&back, "seq_len");
    assert_string_equal(v, "64");
    free(v);
    assert_int_not_equal(gf_task_recipe_from_json("{\"task\": \"nope\"}", "f.json", &back), 0);
    assert_non_null(strstr(gf_last_error(), "f.json: the training recipe's task: nope is not a task"));
    assert_int_not_equal(gf_task_recipe_from_json("{\"task\": \"lm\", \"seq_len\": 0}", "f.json", &back), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_builtins_and_added),
        cmocka_unit_test(test_stats_member),
        cmocka_unit_test(test_recipe),
    };
    return cmocka_run_group_tests_name("task_registry", tests, NULL, NULL);
}
