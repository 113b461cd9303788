/* grassflow eval of a classifier: accuracy, per-class precision/recall and the confusion matrix. */
#ifndef GF_CLI_EVAL_CLASSIFY_H
#define GF_CLI_EVAL_CLASSIFY_H

#include <stdbool.h>

#include "cli/task.h"

/* Evaluate classifier m (with its tokenizer tok) on split `split` (GF_TRAIN, GF_VALID, GF_TEST) of the
 * task's data named by corpus; prints the report (or its JSON). Returns an exit code. */
int cli_eval_classify(gf_model *m, const gf_tokenizer *tok, const cli_task *task, const char *corpus, int split,
                      int64_t batch, int64_t max_sent, bool json);

#endif
