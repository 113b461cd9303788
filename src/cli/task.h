/* What `train`, `eval` and `compare` train on and report, one file per task: the data a recipe names,
 * the config it decides (vocabulary, head), the data source of each split, and the metric. A new task
 * (a file in src/cli/, one line in the table of task.c) needs no change to the commands. */
#ifndef GF_CLI_TASK_H
#define GF_CLI_TASK_H

#include <stdbool.h>
#include <stddef.h>

#include "cli/cli.h"

typedef struct cli_task {
    const char *name;          /* --task NAME, and "task" in the stored recipe */
    const char *what;          /* one line for --help */
    const char *metric;        /* "ppl" or "accuracy": what the summary and compare print */
    /* The data of the recipe (o->corpus, o->tokenizer); fixed: the tokenizer a resumed run or a checkpoint
     * carries (NULL: the recipe's). *data is the task's own; EXIT_OK or an exit code after a message. */
    int (*load)(const gf_train_opts *o, bool no_cache, const gf_tokenizer *fixed, void **data);
    const gf_tokenizer *(*tokenizer)(const void *data);
    /* A new run's config: what the data decides (vocab_size, the head), printing what it changed. */
    int (*configure)(const void *data, const gf_train_opts *o, gf_config *cfg);
    /* The source of split s (GF_TRAIN, GF_VALID, GF_TEST), or NULL with gf_last_error. */
    gf_source *(*source)(const void *data, int split, const gf_train_opts *o);
    /* One line on the data for the start of a run: "3613 train tokens, vocabulary 52". */
    void (*describe)(const void *data, char *buf, size_t n);
    void (*free)(void *data);
    /* Optional: load as load does, but only split s (what `eval --split` needs: the other splits are not
     * read, so that they cannot fail it); NULL: eval uses load. */
    int (*load_split)(const gf_train_opts *o, const gf_tokenizer *fixed, int split, void **data);
} cli_task;

/* The task named name, or NULL after a usage error naming the tasks there are. */
const cli_task *cli_task_find(const char *name, const char *cmd);
extern const cli_task cli_task_lm, cli_task_snli;

#endif
