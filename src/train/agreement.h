/* What the ranks of a data-parallel training run compare before they first work together (gf_dist_agree):
 * the corpus (vocabulary, tokenizer, each split's examples and their hash), the model (parameters, its
 * name, its config, a new run's first weights), the recipe (every option that changes what the ranks
 * compute or when they meet: steps, batch, accum, the schedule, seed, precision, --deterministic, when to
 * evaluate, save and stop, the task's own options), the run's total steps, and a resumed run's state (its
 * step, weights and moments, best score, early stopping). With one process: nothing to compare. */
#ifndef GF_TRAIN_AGREEMENT_H
#define GF_TRAIN_AGREEMENT_H

#include <stdbool.h>
#include <stdint.h>

#include "grassflow_plugin.h"
#include "train/run_dir.h"

typedef struct {
    gf_model *m;
    const gf_train_opts *o;
    int64_t total;              /* the run's steps */
    const int64_t *n;           /* the training and validation examples; NULL: not known yet (a resume, before its load) */
    const uint64_t *h;          /* their batches' hashes (the state's "data") */
    bool weights;               /* a new run: compare its weights before the first step */
    gf_adamw *opt;              /* a resumed run, loaded: compare its state (weights and moments) ... */
    const gf_run_progress *p;   /* ... and where it stands; NULL: not a loaded resume */
} gf_run_facts;

/* 0 when every rank states the same facts; else -1 on every rank, gf_last_error naming what differs. */
int gf_train_agree(const gf_run_facts *f);

#endif
