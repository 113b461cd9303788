/* What `train`, `eval` and `compare` train on and report, one file per task: the data a recipe names,
 * the config it decides (vocabulary, head), the data source of each split, and the metric. A new task
 * (a file in src/cli/, one line in the table of task.c) needs no change to the commands. */
#ifndef GF_CLI_TASK_H
#define GF_CLI_TASK_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

#include "cli/cli.h"

/* A flag that only some tasks take (not every task has a use for it), and what it does in them. */
typedef struct cli_task_flag {
    const char *flag;          /* "--seq-len" */
    const char *does;          /* "tokens per block" */
} cli_task_flag;

typedef struct cli_task {
    const char *name;          /* --task NAME, and "task" in the stored recipe */
    const char *what;          /* one line for --help */
    const char *metric;        /* "ppl" or "accuracy": what the summary and compare print */
    /* The data of the recipe (o->corpus, o->tokenizer); fixed: the tokenizer a resumed run or a checkpoint
     * carries (NULL: the recipe's). *data is the task's own; EXIT_OK or an exit code after a message. */
    int (*load)(const gf_train_opts *o, bool no_cache, const gf_tokenizer *fixed, void **data);
    const gf_tokenizer *(*tokenizer)(const void *data);
    /* A new run's config: what the data decides (vocab_size, the head), printing what it changed. With data
     * NULL, a check before the data is read: the same but for the vocabulary, silently. Applied again after
     * the --set options, so that they are checked against the config the task builds and cannot undo what
     * the task needs. */
    int (*configure)(const void *data, const gf_train_opts *o, gf_config *cfg);
    /* The source of split s (GF_TRAIN, GF_VALID, GF_TEST), or NULL with gf_last_error. */
    gf_source *(*source)(const void *data, int split, const gf_train_opts *o);
    /* One line on the data for the start of a run: "3613 train tokens, vocabulary 52". */
    void (*describe)(const void *data, char *buf, size_t n);
    void (*free)(void *data);
    /* The flags of its own the task takes, ended by {NULL}: a flag some task lists and this one does not
     * is refused (cli_task_flags), not ignored. */
    const cli_task_flag *flags;
    /* Optional: load as load does, but only split s (what `eval --split` needs: the other splits are not
     * read, so that they cannot fail it); NULL: eval uses load. */
    int (*load_split)(const gf_train_opts *o, const gf_tokenizer *fixed, int split, void **data);
} cli_task;

/* The task named name, or NULL after a usage error naming the tasks there are. */
const cli_task *cli_task_find(const char *name, const char *cmd);
extern const cli_task cli_task_lm, cli_task_snli;

/* The long options a command line gave, by name ("seq-len"), each once. */
typedef struct cli_given {
    const char *name[64];
    int n;
} cli_given;
/* Note the long option getopt_long just returned (idx: its longindex, -1 for none). */
void cli_given_note(cli_given *g, const struct option *longopts, int idx);
bool cli_given_has(const cli_given *g, const char *name);
/* EXIT_OK if task t takes every given flag that is some task's own; else a usage error naming the first it
 * does not take, why (the task, and by: how it was chosen, NULL for --task) and the task that takes it. */
int cli_task_flags(const cli_task *t, const char *by, const char *cmd, const cli_given *g);

#endif
