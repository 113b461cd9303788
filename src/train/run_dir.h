/* The files of a training run in its output directory OUT: last.safetensors and best.safetensors (the
 * model with metadata tokenizer, train, step, val_loss), state.safetensors (params, adam_m, adam_v with
 * metadata config, tokenizer, train, step, best_val_loss, elapsed_s, seen, producer: what --resume reads) and
 * metrics.jsonl. Every checkpoint write is atomic. These formats are what older runs resume from. */
#ifndef GF_TRAIN_RUN_DIR_H
#define GF_TRAIN_RUN_DIR_H

#include <stdio.h>

#include "grassflow_plugin.h"

typedef struct gf_run_dir {
    const char *dir;          /* OUT (borrowed) */
    char *cfg_json, *recipe_json;
    const char *tok_json;     /* borrowed; NULL: the run has no tokenizer (the key is left out) */
    const char *data_json;    /* borrowed: what identifies the data (stored as "data" in the state) */
    bool accept_changed_data; /* resume although "data" differs */
    FILE *metrics;
    char counted[32];             /* what metrics.jsonl counts ("tokens", "pairs") */
    const gf_metric *metric;      /* and what it scores: the task's metric (gf_task_metric) */
    int lock_fd;              /* OUT/.grassflow.lock, held (flock) for the life of the run; -1: none */
} gf_run_dir;

/* The metadata of m's run under recipe o, its data described by data_json (nothing is written yet). */
int gf_run_dir_open(gf_run_dir *r, const gf_model *m, const gf_train_opts *o, const char *data_json);
/* Create OUT if missing; write and remove a probe file (a full or read-only disk fails here, before any
 * training time is spent; a directory created here is removed again); take the run's exclusive lock on
 * OUT (another live run there: an error naming its PID; a killed run's lock is free again, the kernel
 * drops it); remove temporary files whose writer is dead. */
/* A new run (!resume) in an OUT that holds a run (gf_run_dir_holds_run) is refused, or with overwrite
 * the old run's files are removed first. */
int gf_run_dir_prepare(gf_run_dir *r, bool resume, bool overwrite);
/* metrics.jsonl (appended to when resuming). */
int gf_run_metrics_open(gf_run_dir *r, bool append);
/* Closes the metrics file and releases the lock. */
void gf_run_dir_close(gf_run_dir *r);

/* Where a run stands, as its state records it. */
typedef struct gf_run_progress {
    int64_t step;
    double best, best_score;  /* best.safetensors' validation loss, and its score by a metric not of the loss
                               * (stored as best_val_KEY: accuracy, a task's own); NAN for a metric by_loss */
    double last_val;          /* the validation loss of the last evaluation (NAN: none yet, or a state from
                               * before it was kept): what a step checkpoint written after a resume records */
    double elapsed_s, seen;   /* the run's wall-clock seconds and counted targets up to step, across sessions */
    int64_t bad_evals;        /* scheduled evaluations in a row without a better score (early stopping) */
    char stopped_early[256];  /* why the run ended before its last step (early stopping); "": it did not */
} gf_run_progress;

/* The recipe stored from now on (an extended run's schedule): o's, checked to fit the metadata. */
int gf_run_dir_set_recipe(gf_run_dir *r, const gf_train_opts *o);

/* OUT/name: the model with its run's metadata. */
int gf_run_save_model(const gf_run_dir *r, const gf_model *m, const char *name, int64_t step, double val_loss);
/* OUT/state.safetensors: weights, AdamW moments and where the run stands (p; bad_evals and stopped_early
 * are left out while 0 and "", as runs before them wrote it; seen NAN: not known, not stored). */
int gf_run_save_state(const gf_run_dir *r, gf_model *m, gf_adamw *opt, const gf_run_progress *p);
/* Read OUT/state.safetensors back into m and opt; it must be of this config and tokenizer. *data: what it
 * says of its data (malloc'd), or NULL if nothing (a run from before that was recorded); *recipe: the
 * training recipe it was saved with (malloc'd). p->elapsed_s, p->seen: what gf_run_save_state stored (a
 * state saved before they were: the time metrics.jsonl last logged at or before the step, and seen NAN). */
int gf_run_load_state(const gf_run_dir *r, gf_model *m, gf_adamw *opt, gf_run_progress *p, char **data,
                      char **recipe);
/* The data a state was saved with (saved: its "data", or NULL) must be r->data_json, unless
 * r->accept_changed_data (a note then); else an error saying which split changed and how. */
int gf_run_check_data(const gf_run_dir *r, const char *saved);

/* One line of metrics.jsonl for a step, evaluation or skipped-step event (others write nothing), flushed.
 * A number that is not finite (a diverged run's loss or perplexity) is written as null, since JSON has no
 * inf or NaN. -1 (gf_last_error) when the line could not be written (a full disk): the run must stop. */
int gf_run_metrics_line(const gf_run_dir *r, const gf_train_event *e);
/* The line that opens a session of the run (a new run, or resumed): "type": "start", where the run is (e's
 * step, epochs, seen, run_elapsed_s), what it counts and scores. Rows keyed as in gf_metrics_read. */
int gf_run_metrics_start(const gf_run_dir *r, const gf_train_event *e, bool resumed);

#endif
