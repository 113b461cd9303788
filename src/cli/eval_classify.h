/* grassflow eval of a classifier: accuracy, per-class precision/recall and the confusion matrix. */
#ifndef GF_CLI_EVAL_CLASSIFY_H
#define GF_CLI_EVAL_CLASSIFY_H

#include <stdbool.h>

#include "cli/task.h"

/* What is scored: the checkpoint's path (for messages), the task's data (--corpus) and, for a checkpoint
 * without a tokenizer, --tokenizer (NULL: the task's default). */
typedef struct cli_eval_data {
    const char *ckpt, *corpus, *tok_spec;
} cli_eval_data;

/* Evaluate classifier m (with its tokenizer tok, or NULL) on split `split` (GF_TRAIN, GF_VALID, GF_TEST)
 * of the task's data d; prints the report (or its JSON). Returns an exit code. */
int cli_eval_classify(gf_model *m, const gf_tokenizer *tok, const cli_task *task, const cli_eval_data *d, int split,
                      int64_t batch, int64_t max_sent, bool json);

#endif
