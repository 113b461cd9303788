/* grassflow eval of a classifier: accuracy, per-class precision/recall and the confusion matrix. */
#ifndef GF_CLI_EVAL_CLASSIFY_H
#define GF_CLI_EVAL_CLASSIFY_H

#include <stdbool.h>

#include "task_flags.h"

/* Evaluate classifier m on src (split `split` of task t's data, read from corpus; NULL: a file scored whole);
 * prints the report (or its JSON), the classes named by the task; examples without a label are not counted
 * (a note says how many). Returns an exit code. */
int cli_eval_classify(gf_model *m, const gf_task_ops *t, const void *data, gf_source *src, const char *corpus,
                      const char *split, int64_t batch, bool json);

#endif
