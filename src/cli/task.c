/* The tasks the commands know, by name, and the flags only some of them take. */
#include "cli/task.h"

#include <string.h>

static const cli_task *const TASKS[] = {&cli_task_lm, &cli_task_snli};
enum { N_TASKS = sizeof TASKS / sizeof TASKS[0] };

const cli_task *cli_task_find(const char *name, const char *cmd) {
    for (size_t i = 0; i < N_TASKS; i++)
        if (!strcmp(TASKS[i]->name, name)) return TASKS[i];
    cli_usage_error(cmd, "--task %s is not a task; the tasks are lm (a language model on a text corpus) and snli "
                    "(sentence-pair classification)", name);
    return NULL;
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

/* Task t's entry for flag name ("seq-len"), or NULL. */
static const cli_task_flag *task_flag(const cli_task *t, const char *name) {
    for (const cli_task_flag *f = t->flags; f && f->flag; f++)
        if (!strcmp(f->flag + 2, name)) return f;
    return NULL;
}

int cli_task_flags(const cli_task *t, const char *by, const char *cmd, const cli_given *g) {
    const bool switchable = !by || !strcmp(by, "the default"); /* not a checkpoint's own task */
    for (int i = 0; i < g->n; i++) {
        if (task_flag(t, g->name[i])) continue;
        for (size_t k = 0; k < N_TASKS; k++) {
            const cli_task_flag *f = task_flag(TASKS[k], g->name[i]);
            if (f)
                return cli_usage_error(cmd, "%s does not apply to --task %s%s%s%s, %s; it is for --task %s: %s\nHINT: "
                                       "drop %s%s%s", f->flag, t->name, by ? " (" : "", by ? by : "", by ? ")" : "",
                                       t->what, TASKS[k]->name, f->does, f->flag, switchable ? ", or give --task " : "",
                                       switchable ? TASKS[k]->name : "");
        }
    }
    return EXIT_OK;
}
