/* The training loop: batches of contiguous blocks, AdamW with warmup + cosine, clipping, accumulation,
 * evaluation, best/last checkpoints and an exactly resumable training state.
 *
 * Everything random is a function of (seed, step) or (seed, epoch): the block order of an epoch, the
 * dropout masks of a step. The training state is therefore the weights, the AdamW moments and the step,
 * and a resumed run computes exactly what an uninterrupted one would. */
#ifndef GF_TRAIN_TRAINER_H
#define GF_TRAIN_TRAINER_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "data/corpus.h"
#include "grassflow.h"

typedef struct gf_train_opts {
    int64_t batch, seq_len;       /* micro-batch of `batch` blocks of seq_len + 1 tokens */
    int64_t steps, epochs;        /* total optimizer steps; 0: epochs * steps per epoch */
    int64_t warmup, accum;        /* linear warmup steps; micro-batches per step */
    int64_t eval_every, log_every;
    int64_t stop_at;              /* stop (after saving) once this step is done, as if interrupted; 0: never */
    int on_nonfinite;             /* a NaN/Inf loss or gradient: GF_NONFINITE_STOP or GF_NONFINITE_SKIP */
    volatile const sig_atomic_t *interrupt; /* not stored: when *interrupt becomes non-zero (a signal handler), the
                                    * current step finishes, the state is saved and gf_train returns
                                    * GF_TRAIN_INTERRUPTED */
    float lr, min_lr, wd, clip, beta1, beta2, eps;
    uint64_t seed;
    char out_dir[512];
    char corpus[512], tokenizer[512], model[512]; /* what the run was made from (stored, for resume) */
} gf_train_opts;

enum { GF_NONFINITE_STOP = 0, GF_NONFINITE_SKIP = 1 };
/* skip mode stops anyway after this many consecutive non-finite steps: the run is diverging */
#define GF_MAX_NONFINITE_SKIPS 10
/* gf_train's return value when opts.interrupt stopped it (state saved, resumable) */
#define GF_TRAIN_INTERRUPTED 2

void gf_train_opts_default(gf_train_opts *o);
char *gf_train_opts_to_json(const gf_train_opts *o);
int gf_train_opts_from_json(const char *json, const char *source, gf_train_opts *o);

typedef enum {
    GF_EV_STEP, GF_EV_EVAL, GF_EV_SAVED, GF_EV_DONE, GF_EV_STOPPED, GF_EV_INTERRUPTED, GF_EV_SKIPPED
} gf_train_event_kind;

typedef struct gf_train_event {
    gf_train_event_kind kind;
    int64_t step, total_steps, epoch;
    double loss, lr, grad_norm, tokens_per_s, elapsed_s, eta_s;
    double val_loss, val_ppl, best_val_loss;
    bool is_best;
    const char *path;             /* GF_EV_SAVED, GF_EV_STOPPED, GF_EV_INTERRUPTED */
    const char *what;             /* GF_EV_SKIPPED: what was not finite */
} gf_train_event;

typedef void (*gf_train_cb)(const gf_train_event *e, void *ctx);

typedef struct gf_train_result {
    int64_t steps, tokens;
    double best_val_loss, last_val_loss, tokens_per_s, train_s, wall_s;
} gf_train_result;

/* Train m on c. With resume, the weights, moments and step come from OUT/state.safetensors (the model
 * must have the same config). Writes OUT/last.safetensors, OUT/best.safetensors, OUT/state.safetensors
 * and OUT/metrics.jsonl. */
int gf_train(gf_model *m, const gf_corpus *c, const gf_train_opts *o, bool resume, gf_train_cb cb, void *ctx,
             gf_train_result *res);

/* Token-weighted mean next-token loss over ids[0..n): blocks of seq_len + 1 tokens with stride seq_len,
 * so every token but the first is predicted once. */
int gf_evaluate(gf_model *m, const int32_t *ids, int64_t n, int64_t seq_len, int64_t batch, double *mean_loss,
                int64_t *n_predicted);

/* The learning rate at `step` (0-based) of `total`: linear warmup to lr, then cosine to min_lr. */
double gf_lr_at(int64_t step, int64_t total, int64_t warmup, double lr, double min_lr);

/* Steps in one epoch for these options and a training split of n tokens. */
int64_t gf_steps_per_epoch(const gf_train_opts *o, int64_t n_train);

#endif
