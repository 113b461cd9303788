/* The tasks the commands know, by name. */
#include "cli/task.h"

#include <string.h>

static const cli_task *const TASKS[] = {&cli_task_lm, &cli_task_snli};

const cli_task *cli_task_find(const char *name, const char *cmd) {
    for (size_t i = 0; i < sizeof TASKS / sizeof TASKS[0]; i++)
        if (!strcmp(TASKS[i]->name, name)) return TASKS[i];
    cli_usage_error(cmd, "--task %s is not a task; the tasks are lm (a language model on a text corpus) and snli "
                    "(sentence-pair classification)", name);
    return NULL;
}
