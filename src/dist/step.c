/* One optimizer step's gradient over the ranks of a data-parallel job (docs/distributed.md): each rank's share
 * of every micro-batch, weighted by the step's counted targets, summed by MPI or (--deterministic) along one
 * fixed tree; with one process, the plain accumulation. Its scratch lives in the model it trains
 * (gf_dist_step_of). */
#include "dist/step.h"

#include <stdlib.h>

#include "base/error.h"
#include "dist/comm.h"
#include "model/model_internal.h"
#include "sources/source.h"

static void step_free(void *p) {
    gf_dist_step *d = p;
    if (!d) return;
    free(d->tmax);
    gf_detsum_free(&d->step);
    gf_detsum_free(&d->block);
    free(d);
}

gf_dist_step *gf_dist_step_of(gf_model *m) {
    if (!m->step_scratch) {
        m->step_scratch = calloc(1, sizeof(gf_dist_step));
        if (!m->step_scratch) return gf_fail("out of memory"), NULL;
        m->step_scratch_free = step_free;
    }
    return m->step_scratch;
}

/* This rank's share of micro-batch mb of a step whose examples are [first, first + n) of the epoch's
 * order: examples [*e0, *e0 + *nb) of the step (a contiguous slice of the micro-batch; all of it with one
 * process). *nb is 0 when the micro-batch has fewer examples than there are ranks and none is this rank's. */
static void my_share(const gf_train_opts *o, int64_t n, int64_t mb, int64_t *e0, int64_t *nb) {
    const int64_t size = n - mb * o->batch < o->batch ? n - mb * o->batch : o->batch, r = gf_comm_rank(),
                  np = gf_comm_size();
    const int64_t lo = size * r / np, hi = size * (r + 1) / np;
    *e0 = mb * o->batch + lo;
    *nb = hi - lo;
}

/* This rank's share of micro-batch mb into b; 1 when it has none (nothing filled), -1 on failure. */
static int fill_micro(gf_source *src, const gf_train_opts *o, int64_t epoch, int64_t first, int64_t n, int64_t mb,
                      gf_batch *b) {
    int64_t e0, nb;
    my_share(o, n, mb, &e0, &nb);
    if (!nb) return 1;
    if (gf_source_fill(src, epoch, first + e0, nb, b)) return -1;
    return gf_batch_check(b, true, "the training source");
}

/* Each micro-batch's longest example (and source) over every rank's share (count_targets): a share's dropout
 * masks are those its examples have in the whole micro-batch padded to that length, as one process draws them. */

/* Forward and backward over this rank's shares of the step's micro-batches, each weighted by its share
 * n_targets(share) / n_targets of the step (every rank's, counted by count_targets); then the gradients
 * and *loss summed over the ranks: those of the step's target-weighted mean loss. A share without counted
 * targets adds nothing. Each share's dropout masks are those its examples have in their whole micro-batch
 * (gf_model_set_example0), so N ranks train as one process would. */
static int accumulate(gf_dist_step *d, gf_model *m, gf_source *src, const gf_train_opts *o, int64_t epoch, int64_t first, int64_t n,
                      int64_t n_targets, double *loss) {
    const int64_t n_mb = (n + o->batch - 1) / o->batch;
    *loss = 0.0;
    for (int64_t mb = 0; mb < n_mb; mb++) {
        gf_batch b;
        float l;
        int64_t e0, nb;
        const int rc = fill_micro(src, o, epoch, first, n, mb, &b);
        if (rc < 0) return -1;
        if (rc > 0 || !b.n_targets) continue;
        my_share(o, n, mb, &e0, &nb);
        gf_model_set_example0(m, e0 - mb * o->batch, d->tmax[mb], d->smax[mb]);
        if (gf_model_forward_batch(m, &b, &l)) return -1;
        const double w = (double)b.n_targets / (double)n_targets;
        *loss += w * l;
        if (gf_model_backward_scaled(m, (float)w)) return -1;
    }
    gf_model_set_example0(m, 0, 0, 0);
    if (gf_comm_size() == 1) return 0;
    return gf_comm_sum_f32(gf_model_grads(m), gf_model_num_trainable(m)) || gf_comm_sum_f64(loss, 1) ? -1 : 0;
}

/* ---- --deterministic: every example's gradient alone, summed along one fixed tree (dist/detsum.h) ---- */


/* Leaf e of the step (its example first + e): its weighted gradient pushed onto blk (zeros without targets). */
static int det_leaf(gf_model *m, gf_source *src, int64_t epoch, int64_t first, int64_t e, int64_t batch,
                    int64_t n_targets, gf_detsum *blk) {
    gf_batch b;
    float l;
    if (gf_source_fill(src, epoch, first + e, 1, &b) || gf_batch_check(&b, true, "the training source")) return -1;
    if (!b.n_targets) return gf_detsum_push(blk, NULL, 0.0, 1);
    gf_model_zero_grad(m);
    gf_model_set_example0(m, e % batch, 0, 0); /* its masks in its micro-batch, at its own length */
    if (gf_model_forward_batch(m, &b, &l)) return -1;
    const double w = (double)b.n_targets / (double)n_targets;
    if (gf_model_backward_scaled(m, (float)w)) return -1;
    return gf_detsum_push(blk, gf_model_grads(m), w * l, 1);
}

/* Rank q's share [a, b) of the step's leaves, block by block (maximal aligned ones): computed here when
 * q is this rank (and sent to rank 0 unless this is rank 0), received from q on rank 0; rank 0 pushes each
 * block onto the step's counter in order. */
static int det_share(gf_dist_step *d, gf_model *m, gf_source *src, int64_t epoch, int64_t first, int64_t batch, int64_t n_targets,
                     int q, int64_t a, int64_t b) {
    const int me = gf_comm_rank();
    const int64_t P = gf_model_num_trainable(m);
    float *g = gf_model_grads(m); /* a block's sum passes through the gradient buffer */
    for (int64_t c = a; c < b;) {
        const int64_t size = gf_detsum_block(c, b);
        double l = 0.0;
        if (q == me) {
            gf_detsum_clear(&d->block);
            for (int64_t e = c; e < c + size; e++)
                if (det_leaf(m, src, epoch, first, e, batch, n_targets, &d->block)) return -1;
            gf_detsum_fold(&d->block, g, &l);
            if (me != 0 && gf_comm_send(g, P, l, 0)) return -1;
        } else if (me == 0 && gf_comm_recv(g, P, &l, q)) {
            return -1;
        }
        if (me == 0 && gf_detsum_push(&d->step, g, l, size)) return -1;
        c += size;
    }
    return 0;
}

/* The step's gradient and *loss as accumulate() gives them, in one order whatever the ranks: rank 0 sums,
 * then every rank receives the result. */
static int accumulate_det(gf_dist_step *d, gf_model *m, gf_source *src, const gf_train_opts *o, int64_t epoch, int64_t first,
                          int64_t n, int64_t n_targets, double *loss) {
    const int64_t P = gf_model_num_trainable(m);
    if (d->step.n != P) gf_detsum_free(&d->step), gf_detsum_free(&d->block), gf_detsum_init(&d->step, P), gf_detsum_init(&d->block, P);
    gf_detsum_clear(&d->step);
    const int np = gf_comm_size();
    for (int64_t mb = 0; mb * o->batch < n; mb++) {
        const int64_t size = n - mb * o->batch < o->batch ? n - mb * o->batch : o->batch;
        for (int q = 0; q < np; q++)
            if (det_share(d, m, src, epoch, first, o->batch, n_targets, q, mb * o->batch + size * q / np,
                          mb * o->batch + size * (q + 1) / np))
                return -1;
    }
    gf_model_set_example0(m, 0, 0, 0);
    if (gf_comm_rank() == 0) gf_detsum_fold(&d->step, gf_model_grads(m), loss);
    if (gf_comm_bcast(gf_model_grads(m), P * (int64_t)sizeof(float), 0)) return -1;
    return gf_comm_bcast(loss, sizeof *loss, 0);
}

int gf_dist_step_count(gf_dist_step *d, gf_source *src, const gf_train_opts *o, int64_t epoch, int64_t first, int64_t n,
                         int64_t *n_targets) {
    const int64_t n_mb = (n + o->batch - 1) / o->batch;
    if (n_mb > d->n_tmax) {
        int64_t *t = realloc(d->tmax, (size_t)(2 * n_mb) * sizeof *t);
        if (!t) return gf_fail("out of memory for the lengths of %lld micro-batches", (long long)n_mb);
        d->tmax = t, d->n_tmax = n_mb;
    }
    d->smax = d->tmax + n_mb;
    *n_targets = 0;
    for (int64_t mb = 0; mb < n_mb; mb++) {
        gf_batch b;
        const int rc = fill_micro(src, o, epoch, first, n, mb, &b);
        if (rc < 0) return -1;
        if (rc == 0) *n_targets += b.n_targets;
        d->tmax[mb] = rc == 0 ? b.T : 0;
        d->smax[mb] = rc == 0 && b.source ? b.S : 0;
    }
    if (gf_comm_sum_i64(n_targets, 1) || gf_comm_max_i64(d->tmax, 2 * n_mb)) return -1;
    if (*n_targets == 0)
        return gf_fail("the training source's examples [%lld, %lld) of epoch %lld have no counted targets; expected "
                       "at least one target that is not -1 in every optimizer step", (long long)first,
                       (long long)(first + n), (long long)epoch);
    return 0;
}

int gf_dist_step_grads(gf_dist_step *d, gf_model *m, gf_source *src, const gf_train_opts *o, int64_t epoch,
                       int64_t first, int64_t n, int64_t n_targets, double *loss) {
    return (o->deterministic ? accumulate_det : accumulate)(d, m, src, o, epoch, first, n, n_targets, loss);
}
