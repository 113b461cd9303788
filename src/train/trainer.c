/* The training loop: the schedule, one optimizer step (micro-batches, accumulation, clipping), the
 * non-finite policy, evaluation with best/last checkpoints, interruption, progress. The data come from
 * gf_source batches; what an example is (a block of text, a sentence pair) is the source's business. */
#include "train/trainer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "core/error.h"
#include "core/mem.h"
#include "core/parallel.h"
#include "io/file.h"
#include "model/model_internal.h"
#include "sources/source.h"
#include "train/run_dir.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- schedule ------------------------------------------------------------------------------------------ */

double gf_lr_at(int64_t step, int64_t total, int64_t warmup, double lr, double min_lr) {
    if (step < warmup) return lr * (double)(step + 1) / (double)warmup;
    if (total <= warmup) return lr;
    double progress = (double)(step - warmup) / (double)(total - warmup);
    if (progress > 1.0) progress = 1.0;
    return min_lr + 0.5 * (lr - min_lr) * (1.0 + cos(3.141592653589793 * progress));
}

int64_t gf_steps_per_epoch(const gf_train_opts *o, gf_source *train) {
    const int64_t per_step = o->batch * o->accum;
    return (train->n_examples(train->ctx) + per_step - 1) / per_step;
}

/* ---- one optimizer step ---------------------------------------------------------------------------------- */

/* Micro-batch mb of a step whose examples are [first, first + n) of the epoch's order. */
static int fill_micro(gf_source *src, const gf_train_opts *o, int64_t epoch, int64_t first, int64_t n, int64_t mb,
                      gf_batch *b) {
    const int64_t nb = n - mb * o->batch < o->batch ? n - mb * o->batch : o->batch;
    if (gf_source_fill(src, epoch, first + mb * o->batch, nb, b)) return -1;
    return gf_batch_check(b, true, "the training source");
}

/* Forward and backward over the step's micro-batches (n_mb of them), micro-batch mb weighted by its share
 * n_targets(mb) / n_targets of the step: the gradient and *loss are those of the step's target-weighted
 * mean loss. Micro-batches without counted targets add nothing. */
static int accumulate(gf_model *m, gf_source *src, const gf_train_opts *o, int64_t epoch, int64_t first, int64_t n,
                      int64_t n_targets, double *loss) {
    const int64_t n_mb = (n + o->batch - 1) / o->batch;
    *loss = 0.0;
    for (int64_t mb = 0; mb < n_mb; mb++) {
        gf_batch b;
        float l;
        if (fill_micro(src, o, epoch, first, n, mb, &b)) return -1;
        if (!b.n_targets) continue;
        if (gf_model_forward_batch(m, &b, &l)) return -1;
        const double w = (double)b.n_targets / (double)n_targets;
        *loss += w * l;
        if (gf_model_backward_scaled(m, (float)w)) return -1;
    }
    return 0;
}

/* The counted targets of the step's micro-batches (the weights need the total before the first backward). */
static int count_targets(gf_source *src, const gf_train_opts *o, int64_t epoch, int64_t first, int64_t n,
                         int64_t *n_targets) {
    *n_targets = 0;
    for (int64_t mb = 0; mb * o->batch < n; mb++) {
        gf_batch b;
        if (fill_micro(src, o, epoch, first, n, mb, &b)) return -1;
        *n_targets += b.n_targets;
    }
    if (*n_targets == 0)
        return gf_fail("the training source's examples [%lld, %lld) of epoch %lld have no counted targets; expected "
                       "at least one target that is not -1 in every optimizer step", (long long)first,
                       (long long)(first + n), (long long)epoch);
    return 0;
}

static double grad_norm(gf_model *m) {
    const float *g = gf_model_grads(m);
    const int64_t np = gf_model_num_trainable(m);
    double ss = 0.0;
#pragma omp parallel for reduction(+ : ss) schedule(static) if (np > GF_PAR_MIN)
    for (int64_t i = 0; i < np; i++) ss += (double)g[i] * g[i];
    return sqrt(ss);
}

static void scale_grads(gf_model *m, float s) {
    float *g = gf_model_grads(m);
    const int64_t np = gf_model_num_trainable(m);
#pragma omp parallel for schedule(static) if (np > GF_PAR_MIN)
    for (int64_t i = 0; i < np; i++) g[i] *= s;
}

int gf_train_step(gf_model *m, gf_adamw *opt, gf_source *src, const gf_train_opts *o, int64_t step, int64_t total,
                  gf_step_result *r) {
    const int64_t per_step = o->batch * o->accum, spe = gf_steps_per_epoch(o, src);
    const int64_t n_ex = src->n_examples(src->ctx), first = (step % spe) * per_step;
    *r = (gf_step_result){.epoch = step / spe, .n_examples = n_ex - first < per_step ? n_ex - first : per_step,
                          .lr = (float)gf_lr_at(step, total, o->warmup, o->lr, o->min_lr)};
    if (count_targets(src, o, r->epoch, first, r->n_examples, &r->n_targets)) return -1;
    gf_model_zero_grad(m);
    gf_model_set_training(m, true, o->seed, (uint64_t)step);
    if (accumulate(m, src, o, r->epoch, first, r->n_examples, r->n_targets, &r->loss)) return -1;
    r->grad_norm = grad_norm(m);
    if (o->hooks.step_loss) o->hooks.step_loss(step + 1, &r->loss, &r->grad_norm, o->hooks.ctx);
    r->nonfinite = !isfinite(r->loss) ? "the loss" : !isfinite(r->grad_norm) ? "the gradient norm" : NULL;
    if (r->nonfinite) return 0; /* no update from this step; the checkpoints on disk are the last good ones */
    if (o->clip > 0.0f && r->grad_norm > o->clip) scale_grads(m, (float)(o->clip / r->grad_norm));
    return gf_adamw_step(opt, m, r->lr);
}

/* ---- the run ----------------------------------------------------------------------------------------------- */

typedef struct trainer {
    gf_model *m;
    gf_source *train, *valid;            /* the caller's, or the feature caches over them (cached[i]) */
    gf_source *cached[2];
    const gf_train_opts *o;
    gf_train_cb cb;
    void *cb_ctx;
    gf_adamw *opt;
    gf_run_dir run;
    int64_t step, total, n_bad;          /* n_bad: non-finite steps in a row */
    double best, last_val;               /* validation losses */
    double best_acc;                     /* a classifier's best validation accuracy (it picks best.safetensors) */
    double t_start, t_train;             /* wall clock at the start; seconds spent in steps */
    double elapsed0, seen0;              /* the earlier sessions' wall-clock time and counted targets */
    int64_t spe;                         /* steps per epoch */
    int64_t tokens, examples;            /* counted targets and examples of every step taken here */
    double win_t, win_loss;              /* the logging window: finite steps since the last log line */
    int64_t win_tokens, win_steps;
    char data[256];                      /* what identifies the data (data_json), stored in the state */
} trainer;

static void emit(const trainer *t, const gf_train_event *e) {
    if (t->cb) t->cb(e, t->cb_ctx);
}

static int check_opts(const gf_train_opts *o) {
    if (o->batch < 1) return gf_fail("--batch must be at least 1");
    if (o->accum < 1) return gf_fail("--accum must be at least 1");
    if (o->log_every < 1 || o->eval_every < 0) return gf_fail("--log-every must be >= 1 and --eval-every >= 0");
    if (!(o->lr > 0) || !(o->min_lr >= 0) || o->min_lr > o->lr) return gf_fail("need 0 <= --min-lr <= --lr, --lr > 0");
    return 0;
}

static int check_sources(const trainer *t) {
    if (gf_source_validate(t->train, "the training source") || gf_source_validate(t->valid, "the validation source"))
        return -1;
    if (t->train->check && t->train->check(t->train->ctx, t->m, GF_USE_TRAIN)) return -1;
    if (t->valid->check && t->valid->check(t->valid->ctx, t->m, GF_USE_EVAL)) return -1;
    if (t->train->n_examples(t->train->ctx) < 1) return gf_fail("the training source holds no examples");
    return 0;
}

/* Examples of a split (the training examples in epoch 0's order, or the evaluation ones) and a hash of
 * every batch of them as the trainer makes them (FNV-1a, chained: gf_hash_bytes). */
static int fingerprint(const trainer *t, gf_source *s, bool eval, int64_t *n, uint64_t *h) {
    const int64_t B = t->o->batch;
    *n = eval ? gf_source_n_eval(s) : s->n_examples(s->ctx);
    *h = 0;
    for (int64_t k = 0; k < *n; k += B) {
        gf_batch b;
        const int64_t nb = *n - k < B ? *n - k : B;
        if (eval ? gf_source_fill_eval(s, k, nb, &b) : gf_source_fill(s, 0, k, nb, &b)) return -1;
        *h = gf_model_batch_hash(t->m, &b, *h);
    }
    return 0;
}

static void data_record(char *out, size_t size, const int64_t n[2], const uint64_t h[2]) {
    snprintf(out, size, "{\"train\": {\"examples\": %lld, \"fnv1a64\": \"%016llx\"}, \"valid\": {\"examples\": "
             "%lld, \"fnv1a64\": \"%016llx\"}}", (long long)n[0], (unsigned long long)h[0], (long long)n[1],
             (unsigned long long)h[1]);
}

/* What identifies the run's data, stored in its state: a resume on other data is then noticed. Run once
 * the weights are final (after a resume's load): a source may compute from the model as it fills (the
 * feature cache of a frozen backbone). Until then t->data holds the longest record, for the size checks. */
static int data_json(trainer *t, bool longest) {
    int64_t n[2] = {INT64_MAX, INT64_MAX};
    uint64_t h[2] = {UINT64_MAX, UINT64_MAX};
    if (!longest && (fingerprint(t, t->train, false, &n[0], &h[0]) || fingerprint(t, t->valid, true, &n[1], &h[1])))
        return -1;
    data_record(t->data, sizeof t->data, n, h);
    return 0;
}

/* A resumed run continues from its saved step: a --stop-at at or before it is refused, saying so. */
static int check_resumed_step(const trainer *t) {
    const gf_train_opts *o = t->o;
    if (o->stop_at > 0 && o->stop_at <= t->step)
        return gf_fail("--stop-at %lld: the run in %s is at step %lld already\nHINT: give a later step (it ends at "
                       "%lld), or omit --stop-at", (long long)o->stop_at, o->out_dir, (long long)t->step,
                       (long long)t->total);
    return 0;
}

/* A resumed run: its saved state, on the data it was saved with. */
static int resume_state(trainer *t) {
    char *saved = NULL;
    int rc = gf_run_load_state(&t->run, t->m, t->opt, &t->step, &t->best, &t->best_acc, &saved, &t->elapsed0,
                               &t->seen0);
    if (!rc) rc = data_json(t, false) || gf_run_check_data(&t->run, saved) || check_resumed_step(t) ? -1 : 0;
    free(saved);
    return rc;
}

/* A frozen backbone under a head (a fixed first stack): its output for each training and dev example is
 * computed once and kept, within a quarter of memory, for each split the run goes through at least twice (a
 * shorter run would compute more than it saves); otherwise, or without o->feature_cache, the backbone runs at
 * every step. The choice depends on the recipe alone, so a resumed run makes the same one; the cache is made
 * once the weights are final (after a resume's load) and gives the bits the backbone would. */
static void cache_features(trainer *t) {
    const gf_train_opts *o = t->o;
    if (!o->feature_cache || !gf_model_first_stack_fixed(t->m)) return;
    const int64_t evals = (o->eval_every > 0 ? t->total / o->eval_every : 0) + 1;
    const bool want[2] = {t->total * o->batch * o->accum >= 2 * t->train->n_examples(t->train->ctx), evals >= 2};
    gf_source **src[2] = {&t->train, &t->valid};
    const char *name[2] = {"train", "dev"};
    const size_t budget = (size_t)(gf_mem_limit() / 4);
    size_t used[2] = {0, 0};
    char kept[128] = "", every[128] = "";
    for (int i = 0; i < 2; i++) {
        t->cached[i] = want[i] ? gf_feature_source_wrap(t->m, *src[i], i ? GF_USE_EVAL : GF_USE_TRAIN, o->batch,
                                                        budget - used[0], &used[i], false) : NULL;
        if (want[i] && !t->cached[i]) gf_note("%s: %s", name[i], gf_last_error());
        if (t->cached[i]) {
            *src[i] = t->cached[i];
            snprintf(kept + strlen(kept), sizeof kept - strlen(kept), "%s%s %.1f MiB", kept[0] ? ", " : "", name[i],
                     (double)used[i] / 1048576.0);
        } else {
            snprintf(every + strlen(every), sizeof every - strlen(every), "%s%s", every[0] ? ", " : "", name[i]);
        }
    }
    gf_note("the frozen backbone's output, computed once per example and kept: %s; run at every step: %s%s",
            kept[0] ? kept : "none", every[0] ? every : "none",
            every[0] ? " (a split seen fewer than twice, or too large: a quarter of memory at most)" : "");
}

/* Where the run is, across its sessions, for event e of step e->step. */
static void run_clock(const trainer *t, gf_train_event *e) {
    e->epochs = (double)e->step / (double)t->spe;
    e->seen = t->seen0 + (double)t->tokens;
    e->run_elapsed_s = t->elapsed0 + now_s() - t->t_start;
}

/* The first line of this session in metrics.jsonl. */
static int start_row(trainer *t, bool resume) {
    t->t_start = now_s();
    gf_train_event e = {.step = t->step, .total_steps = t->total};
    run_clock(t, &e);
    return gf_run_metrics_start(&t->run, &e, resume);
}

/* Everything is checked before the output directory is touched: a rejected run leaves nothing behind. */
static int trainer_start(trainer *t, bool resume) {
    const gf_train_opts *o = t->o;
    if (check_opts(o) || check_sources(t) || data_json(t, true) || gf_run_dir_open(&t->run, t->m, o, t->data) ||
        gf_run_dir_prepare(&t->run, resume, o->overwrite))
        return -1;
    t->spe = gf_steps_per_epoch(o, t->train);
    t->total = o->steps > 0 ? o->steps : o->epochs * t->spe;
    t->best = INFINITY;
    t->best_acc = NAN;
    t->last_val = NAN;
    t->opt = gf_adamw_create(t->m, (gf_adamw_hparams){.lr = o->lr, .beta1 = o->beta1, .beta2 = o->beta2,
                                                        .eps = o->eps, .weight_decay = o->wd});
    if (!t->opt || (resume ? resume_state(t) : data_json(t, false))) return -1;
    if (gf_run_metrics_open(&t->run, resume)) return -1;
    cache_features(t);
    return start_row(t, resume);
}

/* A step whose loss or gradient norm is not finite made no update: stop the run (on_nonfinite stop, or
 * too many in a row), or record it as skipped and go on. */
static int nonfinite_policy(trainer *t, const gf_step_result *r) {
    const gf_train_opts *o = t->o;
    if (!r->nonfinite) {
        t->n_bad = 0;
        return 0;
    }
    const double bad = !isfinite(r->loss) ? r->loss : r->grad_norm;
    char state[GF_PATH_MAX];
    const bool saved = gf_path_join(state, sizeof state, o->out_dir, "state.safetensors") == 0 &&
                       access(state, F_OK) == 0;
    const bool stop = o->on_nonfinite == GF_NONFINITE_STOP || ++t->n_bad > GF_MAX_NONFINITE_SKIPS;
    const char *what = isnan(bad) ? "NaN" : "infinite";
    const char *row = o->on_nonfinite == GF_NONFINITE_SKIP ? " for more than 10 steps in a row" : "";
    if (stop && !saved)
        return gf_fail("step %lld: %s is %s%s; training stopped before any checkpoint was written (the run had "
                       "not reached its first evaluation)\nHINT: lower --lr, keep --clip on, or pass --on-nonfinite "
                       "skip to skip such steps, and start again", (long long)t->step + 1, r->nonfinite, what, row);
    if (stop)
        return gf_fail("step %lld: %s is %s%s; training stopped. The checkpoints in %s are those of the last "
                       "evaluation before it and are intact.\nHINT: lower --lr, keep --clip on, or pass "
                       "--on-nonfinite skip to skip such steps; resume with: grassflow train --resume %s",
                       (long long)t->step + 1, r->nonfinite, what, row, o->out_dir, o->out_dir);
    gf_train_event e = {.kind = GF_EV_SKIPPED, .step = t->step + 1, .total_steps = t->total, .what = r->nonfinite};
    run_clock(t, &e);
    if (gf_run_metrics_line(&t->run, &e)) return -1;
    emit(t, &e);
    return 0;
}

/* Count the step that took dt seconds; every log_every steps (and at the end) a metrics line and an
 * event with the mean loss and the throughput of the finite steps since the last one; -1 when the metrics
 * line could not be written. */
static int log_progress(trainer *t, const gf_step_result *r, double dt) {
    t->t_train += dt;
    t->tokens += r->n_targets;
    t->examples += r->n_examples;
    if (!r->nonfinite) {
        t->win_t += dt;
        t->win_tokens += r->n_targets;
        t->win_loss += r->loss;
        t->win_steps++;
    }
    if (!t->win_steps || (t->step % t->o->log_every != 0 && t->step != t->total)) return 0;
    gf_train_event e = {.kind = GF_EV_STEP, .step = t->step, .total_steps = t->total, .epoch = r->epoch,
                        .loss = t->win_loss / (double)t->win_steps, .lr = r->lr, .grad_norm = r->grad_norm,
                        .tokens_per_s = t->win_tokens / t->win_t, .elapsed_s = now_s() - t->t_start};
    run_clock(t, &e);
    e.eta_s = (double)(t->total - t->step) * (t->t_train / (double)t->examples) * (double)(t->o->batch * t->o->accum);
    if (gf_run_metrics_line(&t->run, &e)) return -1;
    emit(t, &e);
    t->win_t = t->win_loss = 0.0;
    t->win_tokens = t->win_steps = 0;
    return 0;
}

/* Evaluate on the validation source; save best (if it is), last and the state. */
static int evaluate_and_save(trainer *t) {
    gf_eval_result er = {0};
    if (gf_evaluate_result(t->m, t->valid, t->o->batch, &er)) return -1;
    const double vl = er.mean_loss, acc = er.n_correct >= 0 ? (double)er.n_correct / (double)er.n_counted : NAN;
    t->last_val = vl;
    /* the best checkpoint: a classifier's by accuracy (the first evaluation is the first best), else by loss */
    const bool is_best = !isnan(acc) ? isnan(t->best_acc) || acc > t->best_acc : vl < t->best;
    if (is_best) {
        t->best = vl;
        t->best_acc = acc;
    }
    gf_train_event e = {.kind = GF_EV_EVAL, .step = t->step, .total_steps = t->total, .val_loss = vl,
                        .val_ppl = exp(vl), .best_val_loss = t->best, .is_best = is_best,
                        .val_acc = acc,
                        .elapsed_s = now_s() - t->t_start};
    run_clock(t, &e);
    if (gf_run_metrics_line(&t->run, &e)) return -1;
    emit(t, &e);
    if ((is_best && gf_run_save_model(&t->run, t->m, "best.safetensors", t->step, vl)) ||
        gf_run_save_model(&t->run, t->m, "last.safetensors", t->step, vl) ||
        gf_run_save_state(&t->run, t->m, t->opt, t->step, t->best, t->best_acc, e.run_elapsed_s, e.seen))
        return -1;
    emit(t, &(gf_train_event){.kind = GF_EV_SAVED, .step = t->step, .path = t->o->out_dir});
    return 0;
}

/* A signal: save what resuming needs (no evaluation, which can take minutes), then stop. */
static int save_interrupted(trainer *t) {
    gf_train_event now = {.step = t->step};
    run_clock(t, &now);
    if (gf_run_save_model(&t->run, t->m, "last.safetensors", t->step, t->last_val) ||
        gf_run_save_state(&t->run, t->m, t->opt, t->step, t->best, t->best_acc, now.run_elapsed_s, now.seen))
        return -1;
    emit(t, &(gf_train_event){.kind = GF_EV_INTERRUPTED, .step = t->step, .total_steps = t->total,
                              .path = t->o->out_dir});
    return GF_TRAIN_INTERRUPTED;
}

static void finish(const trainer *t, gf_train_result *res) {
    if (res)
        *res = (gf_train_result){.steps = t->step, .tokens = t->tokens, .best_val_loss = t->best,
                                 .last_val_loss = t->last_val, .best_val_acc = t->best_acc, .train_s = t->t_train,
                                 .wall_s = now_s() - t->t_start,
                                 .tokens_per_s = t->t_train > 0 ? (double)t->tokens / t->t_train : 0.0};
    if (t->step >= t->total)
        emit(t, &(gf_train_event){.kind = GF_EV_DONE, .step = t->step, .total_steps = t->total,
                                  .best_val_loss = t->best, .elapsed_s = now_s() - t->t_start});
}

int gf_train(gf_model *m, gf_source *train, gf_source *valid, const gf_train_opts *o, bool resume, gf_train_cb cb,
             void *ctx, gf_train_result *res) {
    trainer t = {.m = m, .train = train, .valid = valid, .o = o, .cb = cb, .cb_ctx = ctx, .run = {.lock_fd = -1}};
    int rc = trainer_start(&t, resume);
    while (!rc && t.step < t.total) {
        const double t0 = now_s();
        gf_step_result r;
        if ((rc = gf_train_step(m, t.opt, t.train, o, t.step, t.total, &r)) || (rc = nonfinite_policy(&t, &r))) break;
        t.step++;
        if ((rc = log_progress(&t, &r, now_s() - t0))) break;
        const bool stop = o->stop_at > 0 && t.step >= o->stop_at && t.step < t.total;
        if ((o->eval_every > 0 && t.step % o->eval_every == 0) || t.step == t.total || stop) rc = evaluate_and_save(&t);
        if (!rc && stop) {
            emit(&t, &(gf_train_event){.kind = GF_EV_STOPPED, .step = t.step, .total_steps = t.total,
                                       .path = o->out_dir});
            break;
        }
        if (!rc && o->interrupt && *o->interrupt && t.step < t.total) rc = save_interrupted(&t);
    }
    if (!rc) finish(&t, res);
    gf_adamw_free(t.opt);
    gf_source_free(t.cached[0]);
    gf_source_free(t.cached[1]);
    gf_run_dir_close(&t.run);
    return rc;
}
