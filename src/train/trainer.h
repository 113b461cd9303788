/* The training loop's internals (the API is public: gf_train, gf_evaluate, gf_source in
 * include/grassflow.h): the recipe's JSON form and one optimizer step, exposed for the CLI and the tests.
 *
 * Everything random is a function of (seed, step) or (seed, epoch): the example order of an epoch (the
 * source's), the dropout masks of a step. The training state is therefore the weights, the AdamW moments
 * and the step, and a resumed run computes exactly what an uninterrupted one would. */
#ifndef GF_TRAIN_TRAINER_H
#define GF_TRAIN_TRAINER_H

#include <stdbool.h>
#include <stdint.h>

#include "grassflow_plugin.h"

/* The recipe as JSON (stored in checkpoints and in the training state), and back: every number is
 * range-checked like the command line checks it. */
char *gf_train_opts_to_json(const gf_train_opts *o);
int gf_train_opts_from_json(const char *json, const char *source, gf_train_opts *o);

typedef struct gf_step_result {
    int64_t epoch;         /* the epoch the step's examples came from */
    int64_t n_examples;    /* examples in the step (the last step of an epoch may be short) */
    int64_t n_targets;     /* targets counted */
    float lr;              /* the schedule's learning rate */
    double loss;           /* target-weighted mean loss over the step's micro-batches */
    double grad_norm;      /* global L2 norm of the gradient, before clipping */
    const char *nonfinite; /* NULL, or what was not finite ("the loss", "the gradient norm"): no update */
} gf_step_result;

/* Optimizer step `step` (0-based) of `total` on src: the step's examples in micro-batches of o->batch
 * (o->accum of them at most), each weighted by its share of the step's counted targets; the global
 * gradient norm; o->hooks.step_loss; then, if loss and norm are finite, clipping to o->clip and an AdamW
 * step, else no update (r->nonfinite says why; the policy is the caller's). */
int gf_train_step(gf_model *m, gf_adamw *opt, gf_source *src, const gf_train_opts *o, int64_t step, int64_t total,
                  gf_step_result *r);

/* gf_evaluate_result for a training run's own evaluations: in a data-parallel job the ranks compared the
 * model and the validation data as the run started (train/agreement.h) and have stayed in step since, so
 * they do not compare them again (a standalone evaluation does). */
int gf_evaluate_in_run(gf_model *m, gf_source *src, int64_t batch, gf_eval_result *r);

#endif
