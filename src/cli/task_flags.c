/* The tasks on the command line: --task, each task's option flags, the flags of one metric's tasks. */
#include "task_flags.h"

#include <stdio.h>
#include <string.h>


const gf_task_ops *cli_task_find(const char *name, const char *cmd) {
    const gf_task_ops *t = gf_task_find(name);
    if (!t) cli_usage_error(cmd, "--task %s", gf_last_error());
    return t;
}

void cli_given_note(cli_given *g, const struct option *longopts, int idx) {
    if (idx < 0 || cli_given_has(g, longopts[idx].name)) return;
    if (g->n < (int)(sizeof g->name / sizeof g->name[0])) g->name[g->n++] = longopts[idx].name;
}

bool cli_given_has(const cli_given *g, const char *name) {
    for (int i = 0; i < g->n; i++)
        if (!strcmp(g->name[i], name)) return true;
    return false;
}

/* ---- the task option flags --------------------------------------------------------------------------- */

static char g_flag[CLI_TASK_MAX_OPTS][48]; /* "seq-len": the getopt names of the option flags */
static int g_n_flags;

/* The flag of option key name ("seq_len" -> "seq-len") into buf. */
static void flag_of(const char *key, char *buf, size_t n) {
    snprintf(buf, n, "%s", key);
    for (char *c = buf; *c; c++)
        if (*c == '_') *c = '-';
}

/* The key of task t whose flag is flag, or NULL. */
static const gf_cfg_key *task_key(const gf_task_ops *t, const char *flag) {
    char f[48];
    for (int i = 0; i < t->n_keys; i++) {
        flag_of(t->keys[i].name, f, sizeof f);
        if (!strcmp(f, flag)) return &t->keys[i];
    }
    return NULL;
}

void cli_task_longopts(struct option *longopts, int *n, int cap) {
    g_n_flags = 0;
    for (int i = 0; i < gf_task_count(); i++) {
        const gf_task_ops *t = gf_task_at(i);
        for (int k = 0; k < t->n_keys && g_n_flags < CLI_TASK_MAX_OPTS; k++) {
            char f[48];
            flag_of(t->keys[k].name, f, sizeof f);
            bool seen = false;
            for (int j = 0; j < g_n_flags; j++) seen = seen || !strcmp(g_flag[j], f);
            if (!seen) snprintf(g_flag[g_n_flags++], sizeof g_flag[0], "%s", f);
        }
    }
    for (int j = 0; j < g_n_flags && *n < cap - 1; j++)
        longopts[(*n)++] = (struct option){g_flag[j], required_argument, 0, CLI_TASK_OPT + j};
    longopts[*n] = (struct option){0, 0, 0, 0};
}

int cli_task_note(cli_task_args *a, const struct option *longopts, int opt, const char *arg) {
    (void)longopts;
    if (opt < CLI_TASK_OPT || opt >= CLI_TASK_OPT + g_n_flags) return 0;
    const char *flag = g_flag[opt - CLI_TASK_OPT];
    for (int i = 0; i < a->n; i++)
        if (!strcmp(a->flag[i], flag)) { /* given again: the last one counts */
            a->value[i] = arg;
            return 1;
        }
    if (a->n < CLI_TASK_MAX_OPTS) a->flag[a->n] = flag, a->value[a->n++] = arg;
    return 1;
}

/* A flag of another task: a usage error naming the task that takes it. */
static int other_task_flag(const gf_task_ops *t, const char *flag, const char *by, const char *cmd) {
    const bool switchable = !by || !strcmp(by, "the default"); /* not a checkpoint's own task */
    for (int i = 0; i < gf_task_count(); i++) {
        const gf_cfg_key *k = task_key(gf_task_at(i), flag);
        if (k)
            return cli_usage_error(cmd, "--%s does not apply to --task %s%s%s%s, %s; it is for --task %s: %s\nHINT: "
                                   "drop --%s%s%s", flag, t->name, by ? " (" : "", by ? by : "", by ? ")" : "",
                                   t->help, gf_task_at(i)->name, k->help, flag,
                                   switchable ? ", or give --task " : "", switchable ? gf_task_at(i)->name : "");
    }
    return cli_usage_error(cmd, "--%s is no option of any task", flag);
}

int cli_task_apply(gf_task_recipe *r, const cli_task_args *a, const char *by, const char *cmd) {
    for (int i = 0; i < a->n; i++) {
        const gf_cfg_key *k = task_key(r->task, a->flag[i]);
        if (!k) return other_task_flag(r->task, a->flag[i], by, cmd);
        char src[64];
        snprintf(src, sizeof src, "--%s", a->flag[i]);
        if (gf_task_option_set(r, k->name, a->value[i], src)) return cli_usage_error(cmd, "%s", gf_last_error());
    }
    return EXIT_OK;
}

/* The command-line flags that only the tasks of one kind have a use for (labels: a classifier's tasks, which
 * have class names; else a language model's), and what they do. */
static const struct {
    const char *flag;
    bool labels;
    const char *does;
} KIND_FLAGS[] = {
    {"stream", false, "score a block one token at a time with the streaming engine"},
    {"backbone", true, "a pretrained checkpoint under a head stack (a classifier)"},
    {"head", true, "the head stack on a --backbone"},
    {"freeze-backbone", true, "train the head on a --backbone only"},
    {"no-feature-cache", true, "run a frozen --backbone at every step"},
};

int cli_task_flags(const gf_task_ops *t, const char *by, const char *cmd, const cli_given *g) {
    for (size_t i = 0; i < sizeof KIND_FLAGS / sizeof KIND_FLAGS[0]; i++) {
        const bool labels = KIND_FLAGS[i].labels;
        if (!cli_given_has(g, KIND_FLAGS[i].flag) || (t->label != NULL) == labels) continue;
        const char *other = NULL; /* a task that takes it */
        for (int k = 0; k < gf_task_count() && !other; k++)
            if ((gf_task_at(k)->label != NULL) == labels) other = gf_task_at(k)->name;
        const bool switchable = (!by || !strcmp(by, "the default")) && other;
        return cli_usage_error(cmd, "--%s does not apply to --task %s%s%s%s, %s; it is for --task %s (%s): %s\nHINT: "
                               "drop --%s%s%s", KIND_FLAGS[i].flag, t->name, by ? " (" : "", by ? by : "", by ? ")" : "",
                               t->help, other ? other : "(none registered)",
                               labels ? "a classifier's tasks, of labels" : "a language model's tasks, of tokens",
                               KIND_FLAGS[i].does, KIND_FLAGS[i].flag, switchable ? ", or give --task " : "",
                               switchable ? other : "");
    }
    return EXIT_OK;
}

static void task_help(bool options) {
    printf("  tasks (--task NAME)%s:\n", options ? " and their options" : "");
    for (int i = 0; i < gf_task_count(); i++) {
        const gf_task_ops *t = gf_task_at(i);
        printf("    %-16s %s; scored by %s\n", t->name, t->help, gf_task_metric(t)->title);
        const char *h = t->version >= 2 ? t->data_help : NULL;
        for (const char *line = h; line && *line;) { /* each line indented under the task */
            const char *end = strchr(line, '\n');
            const int len = end ? (int)(end - line) : (int)strlen(line);
            printf("      %.*s\n", len, line);
            line += len + (end ? 1 : 0);
        }
        for (int k = 0; k < t->n_keys && options; k++) {
            char f[48];
            flag_of(t->keys[k].name, f, sizeof f);
            printf("      --%-14s %s (default %s)\n", f, t->keys[k].help, t->keys[k].def ? t->keys[k].def : "none");
        }
    }
}

void cli_task_help(void) { task_help(true); }
void cli_task_help_data(void) { task_help(false); }
