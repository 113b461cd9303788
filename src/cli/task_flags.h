/* The tasks on the command line (the tasks themselves are plug-ins of the library: gf_task_ops): --task, the
 * flags of each task's options (its key table's names with '-' for '_': --seq-len, --max-sent), and the
 * command-line flags that only tasks of one metric have a use for. No task is named here. */
#ifndef GF_CLI_TASK_FLAGS_H
#define GF_CLI_TASK_FLAGS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

#include "cli.h"

/* The task named name, or NULL after a usage error naming the tasks there are. */
const gf_task_ops *cli_task_find(const char *name, const char *cmd);

/* The long options a command line gave, by name ("seq-len"), each once. */
typedef struct cli_given {
    const char *name[64];
    int n;
} cli_given;
/* Note the long option getopt_long just returned (idx: its longindex, -1 for none). */
void cli_given_note(cli_given *g, const struct option *longopts, int idx);
bool cli_given_has(const cli_given *g, const char *name);

/* getopt codes of the task option flags: CLI_TASK_OPT + i */
enum { CLI_TASK_OPT = 5000, CLI_TASK_MAX_OPTS = 32 };
/* Append to longopts (at *n, at most cap entries in all, and a zero entry after them) one entry per distinct
 * option flag of the registered tasks. */
void cli_task_longopts(struct option *longopts, int *n, int cap);
/* The task option flags as given (applied once the task is known). */
typedef struct cli_task_args {
    int n;
    const char *flag[CLI_TASK_MAX_OPTS], *value[CLI_TASK_MAX_OPTS];
} cli_task_args;
/* 1 if opt (a getopt code) was a task option flag (recorded), else 0. */
int cli_task_note(cli_task_args *a, const struct option *longopts, int opt, const char *arg);
/* Apply the given option flags to r (its task set): EXIT_OK, or a usage error for a value out of range or a
 * flag of another task (by: how r's task was chosen, NULL for --task). */
int cli_task_apply(gf_task_recipe *r, const cli_task_args *a, const char *by, const char *cmd);
/* EXIT_OK if task t takes every given command-line flag that only tasks of one kind take (--stream: a language
 * model's; --backbone, --head, --freeze-backbone, --no-feature-cache: a classifier's, with labels); else a
 * usage error. */
int cli_task_flags(const gf_task_ops *t, const char *by, const char *cmd, const cli_given *g);
/* Help lines for the tasks and their options, for a command's --help. */
void cli_task_help(void);
/* The same without the option flags, for a command that takes --task but not the tasks' options. */
void cli_task_help_data(void);

#endif
