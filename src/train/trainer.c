/* The training loop: the schedule, one optimizer step (micro-batches, accumulation, clipping), the
 * non-finite policy, evaluation with best/last checkpoints, interruption, progress. The data come from
 * gf_source batches; what an example is (a block of text, a sentence pair) is the source's business. */
#include "train/trainer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dist/comm.h"
#include "base/error.h"
#include "base/mem.h"
#include "compute/parallel.h"
#include "io/file.h"
#include "model/model_internal.h"
#include "train/agreement.h"
#include "dist/step.h"
#include "sources/source.h"
#include "train/run_dir.h"
#include "base/clock.h"

/* ---- schedule ------------------------------------------------------------------------------------------ */

double gf_lr_at(int64_t step, int64_t total, int64_t warmup, double lr, double min_lr) {
    if (step < warmup) return lr * (double)(step + 1) / (double)warmup;
    if (total <= warmup) return lr;
    double progress = (double)(step - warmup) / (double)(total - warmup);
    if (progress > 1.0) progress = 1.0;
    return min_lr + 0.5 * (lr - min_lr) * (1.0 + cos(3.141592653589793 * progress));
}

double gf_train_lr(const gf_train_opts *o, int64_t step, int64_t total) {
    if (o->decay_from <= 0 || step < o->decay_from) return gf_lr_at(step, total, o->warmup, o->lr, o->min_lr);
    double progress = total > o->decay_from ? (double)(step - o->decay_from) / (double)(total - o->decay_from) : 1.0;
    if (progress > 1.0) progress = 1.0;
    return o->min_lr + 0.5 * (o->decay_from_lr - o->min_lr) * (1.0 + cos(3.141592653589793 * progress));
}

int64_t gf_steps_per_epoch(const gf_train_opts *o, gf_source *train) {
    const int64_t per_step = o->batch * o->accum;
    return (train->n_examples(train->ctx) + per_step - 1) / per_step;
}

/* ---- one optimizer step ---------------------------------------------------------------------------------- */

/* The gradient's L2 norm, the same bits on any number of threads: every rank of a data-parallel job computes
 * it from the same summed gradient, and ranks started with other --threads must clip alike (an OpenMP
 * reduction's partial sums follow the thread count). The squares are summed in order within fixed blocks,
 * and the blocks' sums in order (one block: the plain sum, as before). */
#define NORM_BLOCK ((int64_t)32768)

static double sum_squares(const float *g, int64_t lo, int64_t hi) {
    double ss = 0.0;
    for (int64_t i = lo; i < hi; i++) ss += (double)g[i] * g[i];
    return ss;
}

static double grad_norm(gf_model *m) {
    const float *g = gf_model_grads(m);
    const int64_t np = gf_model_num_trainable(m), nb = (np + NORM_BLOCK - 1) / NORM_BLOCK;
    double *part = nb > 1 ? malloc((size_t)nb * sizeof *part) : NULL; /* without it: the same sums, in turn */
    if (part) {
#pragma omp parallel for schedule(static) if (np > GF_PAR_MIN)
        for (int64_t b = 0; b < nb; b++) part[b] = sum_squares(g, b * NORM_BLOCK, b + 1 < nb ? (b + 1) * NORM_BLOCK : np);
    }
    double ss = 0.0;
    for (int64_t b = 0; b < nb; b++)
        ss += part ? part[b] : sum_squares(g, b * NORM_BLOCK, b + 1 < nb ? (b + 1) * NORM_BLOCK : np);
    free(part);
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
                          .lr = (float)gf_train_lr(o, step, total)};
    gf_dist_step *dp = gf_dist_step_of(m);
    if (!dp || gf_dist_step_count(dp, src, o, r->epoch, first, r->n_examples, &r->n_targets)) return -1;
    gf_model_zero_grad(m);
    gf_model_set_training(m, true, o->seed, (uint64_t)step);
    const gf_precision was = gf_matmul_precision(); /* the recipe's for forward and backward, then back */
    if (o->precision != was && gf_set_matmul_precision(o->precision))
        return gf_fail("the recipe trains its matmuls in %s: %s", gf_precision_name(o->precision), gf_last_error());
    const int rc = gf_dist_step_grads(dp, m, src, o, r->epoch, first, r->n_examples, r->n_targets, &r->loss);
    if (o->precision != was) gf_set_matmul_precision(was);
    if (rc) return -1;
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
    const gf_train_opts *o;              /* &oc */
    gf_train_opts oc;                    /* the caller's recipe, with the schedule an extended resume sets */
    gf_train_cb cb;
    void *cb_ctx;
    gf_adamw *opt;
    gf_run_dir run;
    int64_t step, total, n_bad;          /* n_bad: non-finite steps in a row */
    double best, last_val;               /* validation losses */
    double best_score;                   /* the best validation score by a metric not of the loss (it picks
                                          * best.safetensors: accuracy, a task's own); NAN for one by_loss */
    int64_t bad_evals;                   /* scheduled evaluations in a row without a better score (patience) */
    char stopped_early[256];             /* why the run ended early (patience ran out); "": it did not */
    double t_start, t_train;             /* wall clock at the start; seconds spent in steps */
    double elapsed0, seen0;              /* the earlier sessions' wall-clock time and counted targets */
    int64_t spe;                         /* steps per epoch */
    int64_t tokens, examples;            /* counted targets and examples of every step taken here */
    double win_t, win_loss;              /* the logging window: finite steps since the last log line */
    double line_t;                       /* when the last step or progress event went out (now_s) */
    int64_t win_tokens, win_steps;
    char data[256];                      /* what identifies the data (data_json), stored in the state */
    int64_t data_n[2];                   /* ... its training and validation examples and their hashes */
    uint64_t data_h[2];
} trainer;

static void emit(const trainer *t, const gf_train_event *e) {
    if (t->cb && gf_comm_rank() == 0) t->cb(e, t->cb_ctx); /* progress: rank 0's alone */
}

static int check_opts(const gf_train_opts *o) {
    if (o->batch < 1) return gf_fail("--batch must be at least 1");
    if (o->accum < 1) return gf_fail("--accum must be at least 1");
    if (o->log_every < 1 || o->eval_every < 0) return gf_fail("--log-every must be >= 1 and --eval-every >= 0");
    if (!(o->lr > 0) || !(o->min_lr >= 0) || o->min_lr > o->lr) return gf_fail("need 0 <= --min-lr <= --lr, --lr > 0");
    if (o->save_every < 0 || o->patience < 0) return gf_fail("--save-every and --patience must be >= 0");
    if (o->patience > 0 && o->eval_every == 0)
        return gf_fail("--patience %lld counts the evaluations made every --eval-every steps, and --eval-every is 0"
                       "\nHINT: pass --eval-every N (N > 0) with --patience", (long long)o->patience);
    if (o->precision != GF_PRECISION_FP32 && o->precision != GF_PRECISION_BF16 && o->precision != GF_PRECISION_FP32_FAST)
        return gf_fail("the recipe's precision %d is not fp32 (0), bf16 (1) or fp32-fast (2)", (int)o->precision);
    const char *why = gf_precision_unavailable(o->precision);
    if (why)
        return gf_fail("the run trains its matmuls in %s (the recipe's \"precision\"), and %s cannot run here: %s\n"
                       "HINT: start a new run with --precision fp32; a saved run goes on in the precision it started "
                       "in (a resume is bit for bit within one precision)", gf_precision_name(o->precision),
                       gf_precision_name(o->precision), why);
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
    memcpy(t->data_n, n, sizeof n), memcpy(t->data_h, h, sizeof h);
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

/* The total of a recipe's run: its steps, or its epochs of steps_per_epoch. */
static int64_t total_steps(const gf_train_opts *o, int64_t steps_per_epoch) {
    return o->steps > 0 ? o->steps : o->epochs * steps_per_epoch;
}

/* A warmup that outlasts the run: the rate never reaches --lr, and the recipe's lr is not what it ran at. */
static void warn_long_warmup(const trainer *t) {
    const gf_train_opts *o = t->o;
    if (o->decay_from > 0 || o->warmup <= t->total || t->step >= t->total) return;
    const int64_t suggest = t->total / 10 > 0 ? t->total / 10 : 1;
    gf_note("warning: --warmup %lld is longer than the run's %lld steps: the learning rate will still be rising at "
            "the last step (it reaches %.1e of --lr %.1e) and the cosine decay to --min-lr never starts; pass "
            "--warmup %lld (a tenth of the run), say, for the full schedule", (long long)o->warmup,
            (long long)t->total, gf_train_lr(o, t->total - 1, t->total), (double)o->lr, (long long)suggest);
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
    e->run_elapsed_s = t->elapsed0 + gf_clock_s() - t->t_start;
}

/* The first line of this session in metrics.jsonl. */
static int start_row(trainer *t, bool resume) {
    t->t_start = t->line_t = gf_clock_s();
    gf_train_event e = {.step = t->step, .total_steps = t->total};
    run_clock(t, &e);
    return gf_run_metrics_start(&t->run, &e, resume);
}

/* A resume asked for another total than the saved recipe's `was`: refused below the steps taken; else the
 * schedule goes on as gf_train_lr says, and early stopping starts counting anew. */
static int extend_run(trainer *t, const gf_train_opts *saved, int64_t was) {
    gf_train_opts *o = &t->oc;
    const int64_t spe = gf_steps_per_epoch(o, t->train), at = t->step;
    if (t->stopped_early[0] && t->total < was) /* what its early stop says: a new total above its old one */
        return gf_fail("the run in %s stopped early after step %lld of %lld (%s); a total of %lld steps is within the "
                       "schedule it ended, and would not train on past it\nHINT: to train on, give a new total above "
                       "%lld: --steps %lld or more (or --epochs %lld or more)", o->out_dir, (long long)at,
                       (long long)was, t->stopped_early, (long long)t->total, (long long)was, (long long)was + 1,
                       (long long)(was / spe + 1));
    if (t->total < at)
        return gf_fail("the run in %s has taken %lld steps already; a total of %lld steps would end before them (a run "
                       "is extended, never cut back)\nHINT: --steps %lld or more (or --epochs %lld or more); or omit "
                       "them to end at step %lld as saved", o->out_dir, (long long)at, (long long)t->total,
                       (long long)at, (long long)((at + spe - 1) / spe), (long long)was);
    if (at > saved->warmup || saved->decay_from > 0) { /* the rate goes on from where it stands */
        o->decay_from = at;
        o->decay_from_lr = gf_train_lr(saved, at, was);
        gf_note("the run goes from %lld to %lld steps at step %lld: the learning rate goes on from %.3g and falls to "
                "--min-lr %.3g at step %lld (a half cosine; recorded in the recipe)", (long long)was,
                (long long)t->total, (long long)at, o->decay_from_lr, (double)o->min_lr, (long long)t->total);
    } else {
        gf_note("the run goes from %lld to %lld steps at step %lld, within its warmup of %lld steps: its schedule is "
                "now that of a %lld-step run from the start", (long long)was, (long long)t->total, (long long)at,
                (long long)saved->warmup, (long long)t->total);
        warn_long_warmup(t);
    }
    if (t->stopped_early[0]) gf_note("the run had stopped early (%s); it goes on as asked", t->stopped_early);
    t->bad_evals = 0;
    t->stopped_early[0] = '\0';
    return gf_run_dir_set_recipe(&t->run, o);
}

/* A resumed run keeps the schedule its state was saved with (an earlier extension's too), unless asked for
 * another total. */
static int resumed_schedule(trainer *t, const char *recipe) {
    char path[GF_PATH_MAX];
    gf_train_opts saved;
    if (gf_path_join(path, sizeof path, t->oc.out_dir, "state.safetensors") ||
        gf_train_opts_from_json(recipe, path, &saved))
        return -1;
    t->oc.decay_from = saved.decay_from;
    t->oc.decay_from_lr = saved.decay_from_lr;
    const int64_t was = total_steps(&saved, gf_steps_per_epoch(&saved, t->train));
    return t->total == was ? 0 : extend_run(t, &saved, was);
}

/* A data-parallel job's ranks compare their runs before they first work together (train/agreement.h): a new
 * run's data and first weights included, a resumed run's after its state is loaded (p). */
static int agree(trainer *t, const gf_run_progress *p) {
    const bool known = p || t->data_n[0] != INT64_MAX; /* data_json(t, false) has run */
    const gf_run_facts f = {.m = t->m, .o = t->o, .total = t->total, .n = known ? t->data_n : NULL,
                            .h = known ? t->data_h : NULL, .weights = known && !p, .opt = t->opt, .p = p};
    return gf_train_agree(&f);
}

/* A resumed run: its saved state, on the data it was saved with. */
static int resume_state(trainer *t) {
    char *saved = NULL, *recipe = NULL;
    gf_run_progress p;
    int rc = gf_run_load_state(&t->run, t->m, t->opt, &p, &saved, &recipe);
    if (!rc) {
        t->step = p.step;
        t->best = p.best;
        t->best_score = p.best_score;
        t->last_val = p.last_val;
        t->elapsed0 = p.elapsed_s;
        t->seen0 = p.seen;
        t->bad_evals = p.bad_evals;
        memcpy(t->stopped_early, p.stopped_early, sizeof t->stopped_early);
        rc = data_json(t, false) || gf_run_check_data(&t->run, saved) || resumed_schedule(t, recipe) ||
             check_resumed_step(t) || agree(t, &p) ? -1 : 0;
    }
    free(saved);
    free(recipe);
    return rc;
}

/* Everything is checked before the output directory is touched: a rejected run leaves nothing behind. */
static int trainer_start(trainer *t, bool resume) {
    const gf_train_opts *o = t->o;
    t->oc.decay_from = 0; /* the schedule's: a new run has none, a resumed one's comes from its state */
    t->oc.decay_from_lr = 0.0;
    if (gf_model_weights(t->m) != GF_WEIGHTS_FP32)
        return gf_fail("the model's weight matrices are %s (for generation); training updates fp32 weights\nHINT: train "
                       "from the fp32 checkpoint, and make it %s afterwards (grassflow quantize)",
                       gf_weights_name(gf_model_weights(t->m)), gf_weights_name(gf_model_weights(t->m)));
    if (check_opts(o) || check_sources(t) || data_json(t, true) || gf_run_dir_open(&t->run, t->m, o, t->data))
        return -1;
    t->spe = gf_steps_per_epoch(o, t->train);
    t->total = total_steps(o, t->spe);
    /* before the ranks first meet (the folder's barrier): a new run's data are final, a resumed one's once
     * its state is loaded */
    if ((!resume && data_json(t, false)) || agree(t, NULL) || gf_run_dir_prepare(&t->run, resume, o->overwrite))
        return -1;
    t->best = INFINITY;
    t->best_score = NAN;
    t->last_val = NAN;
    t->opt = gf_adamw_create(t->m, (gf_adamw_hparams){.lr = o->lr, .beta1 = o->beta1, .beta2 = o->beta2,
                                                        .eps = o->eps, .weight_decay = o->wd});
    if (!t->opt || (resume && resume_state(t))) return -1;
    if (gf_run_metrics_open(&t->run, resume)) return -1;
    if (!resume) warn_long_warmup(t);
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
 * event with the mean loss and the throughput of the finite steps since the last one; between them, once
 * GF_PROGRESS_S seconds have passed since the last event, the same figures as a GF_EV_PROGRESS event (not in
 * metrics.jsonl: its lines stay those of log_every); -1 when the metrics line could not be written. */
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
    if (!t->win_steps) return 0;
    const bool line = t->step % t->o->log_every == 0 || t->step == t->total;
    if (!line && gf_clock_s() - t->line_t < GF_PROGRESS_S) return 0;
    gf_train_event e = {.kind = line ? GF_EV_STEP : GF_EV_PROGRESS, .step = t->step, .total_steps = t->total, .epoch = r->epoch,
                        .loss = t->win_loss / (double)t->win_steps, .lr = r->lr, .grad_norm = r->grad_norm,
                        .tokens_per_s = t->win_tokens / t->win_t, .elapsed_s = gf_clock_s() - t->t_start};
    run_clock(t, &e);
    e.eta_s = (double)(t->total - t->step) * (t->t_train / (double)t->examples) * (double)(t->o->batch * t->o->accum);
    t->line_t = gf_clock_s();
    if (!line) { /* the window goes on to the next metrics line */
        emit(t, &e);
        return 0;
    }
    if (gf_run_metrics_line(&t->run, &e)) return -1;
    emit(t, &e);
    t->win_t = t->win_loss = 0.0;
    t->win_tokens = t->win_steps = 0;
    return 0;
}

/* Where the run stands, for its state. */
static gf_run_progress progress_of(const trainer *t) {
    gf_train_event now = {.step = t->step};
    run_clock(t, &now);
    gf_run_progress p = {.step = t->step, .best = t->best, .best_score = t->best_score, .last_val = t->last_val,
                         .elapsed_s = now.run_elapsed_s,
                         .seen = now.seen, .bad_evals = t->bad_evals};
    memcpy(p.stopped_early, t->stopped_early, sizeof p.stopped_early);
    return p;
}

/* Early stopping: a scheduled evaluation without a better score counts, a better one starts the count
 * again; o->patience of them in a row end the run before its last step (the reason goes into the state). */
static void count_patience(trainer *t, bool is_best) {
    const gf_train_opts *o = t->o;
    if (o->patience <= 0) return;
    t->bad_evals = is_best ? 0 : t->bad_evals + 1;
    if (t->bad_evals < o->patience || t->step >= t->total) return;
    const gf_metric *mt = t->run.metric;
    if (mt->by_loss)
        snprintf(t->stopped_early, sizeof t->stopped_early, "no validation loss below the best, %.6g, in %lld "
                 "evaluations in a row (--patience %lld)", t->best, (long long)t->bad_evals, (long long)o->patience);
    else
        snprintf(t->stopped_early, sizeof t->stopped_early, "no validation %s %s the best, %.6g, in %lld "
                 "evaluations in a row (--patience %lld)", mt->title, mt->higher_is_better ? "above" : "below",
                 t->best_score, (long long)t->bad_evals, (long long)o->patience);
}

/* Evaluate on the validation source; save best (if it is), last and the state. scheduled: an evaluation
 * every eval_every steps or at the end (early stopping counts these, not those of --stop-at). */
static int evaluate_and_save(trainer *t, bool scheduled) {
    gf_eval_result er = {0};
    if (gf_evaluate_in_run(t->m, t->valid, t->o->batch, &er)) return -1;
    const gf_metric *mt = t->run.metric;
    const double vl = er.mean_loss, acc = gf_metric_accuracy.score(&er), score = mt->score(&er);
    t->last_val = vl;
    /* the best checkpoint: by loss for a metric of the loss (perplexity), else by the metric's score, which way
     * it says is better (the first evaluation is the first best) */
    const bool is_best = mt->by_loss ? vl < t->best
                                     : isnan(t->best_score) || (mt->higher_is_better ? score > t->best_score
                                                                                     : score < t->best_score);
    if (is_best) {
        t->best = vl;
        t->best_score = mt->by_loss ? NAN : score;
    }
    if (scheduled) count_patience(t, is_best);
    gf_train_event e = {.kind = GF_EV_EVAL, .step = t->step, .total_steps = t->total, .val_loss = vl,
                        .val_ppl = exp(vl), .best_val_loss = t->best, .is_best = is_best,
                        .val_acc = acc, .val_score = score,
                        .elapsed_s = gf_clock_s() - t->t_start};
    run_clock(t, &e);
    if (gf_run_metrics_line(&t->run, &e)) return -1;
    emit(t, &e);
    const gf_run_progress p = progress_of(t);
    if ((is_best && gf_run_save_model(&t->run, t->m, "best.safetensors", t->step, vl)) ||
        gf_run_save_model(&t->run, t->m, "last.safetensors", t->step, vl) ||
        gf_run_save_state(&t->run, t->m, t->opt, &p))
        return -1;
    emit(t, &(gf_train_event){.kind = GF_EV_SAVED, .step = t->step, .path = t->o->out_dir});
    return 0;
}

/* A signal: save what resuming needs (no evaluation, which can take minutes), then stop. */
static int save_interrupted(trainer *t) {
    const gf_run_progress p = progress_of(t);
    if (gf_run_save_model(&t->run, t->m, "last.safetensors", t->step, t->last_val) ||
        gf_run_save_state(&t->run, t->m, t->opt, &p))
        return -1;
    emit(t, &(gf_train_event){.kind = GF_EV_INTERRUPTED, .step = t->step, .total_steps = t->total,
                              .path = t->o->out_dir});
    return GF_TRAIN_INTERRUPTED;
}

static void finish(const trainer *t, gf_train_result *res) {
    const gf_metric *mt = t->run.metric;
    const double best_score = !mt->by_loss               ? t->best_score
                              : isfinite(t->best) ? mt->score(&(gf_eval_result){.mean_loss = t->best, .n_correct = -1})
                                                  : NAN;
    if (res)
        *res = (gf_train_result){.steps = t->step, .tokens = t->tokens, .best_val_loss = t->best,
                                 .last_val_loss = t->last_val, .best_val_score = best_score,
                                 .best_val_acc = mt == &gf_metric_accuracy ? t->best_score : NAN, .train_s = t->t_train,
                                 .wall_s = gf_clock_s() - t->t_start,
                                 .tokens_per_s = t->t_train > 0 ? (double)t->tokens / t->t_train : 0.0};
    if (t->step >= t->total)
        emit(t, &(gf_train_event){.kind = GF_EV_DONE, .step = t->step, .total_steps = t->total,
                                  .best_val_loss = t->best, .elapsed_s = gf_clock_s() - t->t_start});
}

/* --save-every: the model at this step as OUT/step-NNNNNN.safetensors (atomic, like last.safetensors). */
static int save_step(const trainer *t) {
    char name[64];
    snprintf(name, sizeof name, "step-%06lld.safetensors", (long long)t->step);
    return gf_run_save_model(&t->run, t->m, name, t->step, t->last_val);
}

enum { STOP_HERE = 1 }; /* after_step: the run ends here (--stop-at, early stopping), saved */

/* A signal asked the run to stop: this process's (opts.interrupt), or in a data-parallel job any rank's
 * (a collective every rank makes after every step, so that all stop and save at the same step). */
static bool interrupted(const trainer *t) {
    int flag = t->o->interrupt && *t->o->interrupt ? 1 : 0;
    if (gf_comm_max_int(&flag)) return true; /* a rank is gone: stop here, saving what can be saved */
    return flag != 0;
}

/* After step t->step: evaluate and save when it is time, keep the step's checkpoint, stop when asked. */
static int after_step(trainer *t) {
    const gf_train_opts *o = t->o;
    const bool stop = o->stop_at > 0 && t->step >= o->stop_at && t->step < t->total;
    const bool scheduled = (o->eval_every > 0 && t->step % o->eval_every == 0) || t->step == t->total;
    if ((scheduled || stop) && evaluate_and_save(t, scheduled)) return -1;
    if (o->save_every > 0 && t->step % o->save_every == 0 && save_step(t)) return -1;
    if (t->stopped_early[0]) return STOP_HERE;
    if (stop) {
        emit(t, &(gf_train_event){.kind = GF_EV_STOPPED, .step = t->step, .total_steps = t->total, .path = o->out_dir});
        return STOP_HERE;
    }
    if (interrupted(t) && t->step < t->total) return save_interrupted(t);
    return 0;
}

int gf_train(gf_model *m, gf_source *train, gf_source *valid, const gf_train_opts *o, bool resume, gf_train_cb cb,
             void *ctx, gf_train_result *res) {
    trainer t = {.m = m, .train = train, .valid = valid, .oc = *o, .cb = cb, .cb_ctx = ctx, .run = {.lock_fd = -1}};
    t.o = &t.oc;
    int rc = trainer_start(&t, resume);
    /* a run from a checkpoint is scored before its first step: its curve starts at the checkpoint's score */
    if (!rc && !resume && o->init_from[0]) rc = evaluate_and_save(&t, false);
    while (!rc && t.step < t.total && !t.stopped_early[0]) {
        const double t0 = gf_clock_s();
        gf_step_result r;
        if ((rc = gf_train_step(m, t.opt, t.train, t.o, t.step, t.total, &r)) || (rc = nonfinite_policy(&t, &r))) break;
        t.step++;
        if ((rc = log_progress(&t, &r, gf_clock_s() - t0))) break;
        if ((rc = after_step(&t)) == STOP_HERE) {
            rc = 0;
            break;
        }
    }
    if (!rc && t.stopped_early[0])
        emit(&t, &(gf_train_event){.kind = GF_EV_EARLY_STOP, .step = t.step, .total_steps = t.total,
                                   .path = o->out_dir, .what = t.stopped_early});
    if (!rc) finish(&t, res);
    gf_adamw_free(t.opt);
    gf_source_free(t.cached[0]);
    gf_source_free(t.cached[1]);
    gf_run_dir_close(&t.run);
    return rc;
}
