/* Tasks (the interface is public: gf_task_ops in include/grassflow.h): the built-in ones and the check every
 * task passes, built-in or added. A new built-in task is one file in src/tasks/ and one line in task.c. */
#ifndef GF_TASKS_TASK_H
#define GF_TASKS_TASK_H

#include "grassflow_plugin.h"

extern const gf_task_ops gf_task_lm, gf_task_snli, gf_task_g2p, gf_task_synth, gf_task_image;

/* 0 if t is a task gf_task_register would take (its name aside: duplicates are the registry's to find). */
int gf_task_check(const gf_task_ops *t);
/* 0 if t's metric is sound: a built-in one named, or its own score_by (tasks/metric.c); else -1 (gf_fail). */
int gf_metric_check(const gf_task_ops *t);

#endif
