/* One optimizer step's gradient over a data-parallel job's ranks (dist/step.c): what gf_train_step calls. */
#ifndef GF_DIST_STEP_H
#define GF_DIST_STEP_H

#include <stdint.h>

#include "dist/detsum.h"
#include "grassflow_plugin.h"

/* The step's scratch, kept between steps: each micro-batch's longest example and longest source (an
 * encoder-decoder's; 0 otherwise) over the ranks, and --deterministic's counters (the step's, on rank 0, and a
 * block's). */
typedef struct gf_dist_step {
    int64_t *tmax, *smax, n_tmax; /* smax: in tmax's allocation, after its n_mb */
    gf_detsum step, block;
} gf_dist_step;

/* m's (made by the first call, freed with m); NULL when out of memory. */
gf_dist_step *gf_dist_step_of(gf_model *m);
/* The counted targets of the step's micro-batches (examples [first, first + n) of epoch), every rank's (the
 * weights need the total before the first backward), and each micro-batch's longest example over the ranks.
 * 0, or -1 (gf_last_error; also when no example has a counted target). */
int gf_dist_step_count(gf_dist_step *d, gf_source *src, const gf_train_opts *o, int64_t epoch, int64_t first,
                       int64_t n, int64_t *n_targets);
/* Forward and backward over this rank's shares, each weighted by its counted targets over n_targets; the
 * gradients and *loss summed over the ranks (o->deterministic: in one fixed order whatever the ranks). */
int gf_dist_step_grads(gf_dist_step *d, gf_model *m, gf_source *src, const gf_train_opts *o, int64_t epoch,
                       int64_t first, int64_t n, int64_t n_targets, double *loss);

#endif
