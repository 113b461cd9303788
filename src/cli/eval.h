/* grassflow eval and predict: a checkpoint, the task it is scored on, and that task's data (one split of a
 * folder, or a file scored whole), chosen and checked the same way for both commands. */
#ifndef GF_CLI_EVAL_H
#define GF_CLI_EVAL_H

#include "task_flags.h"

/* grassflow inspect --drop-offset/--force-gate: the override eval applies to the model it loads, the flags that
 * asked for it (named in errors), and how the output shows it. */
typedef struct cli_override {
    gf_override o;
    char flags[96];  /* "--drop-offset 4 --layer 2" */
    char text[256];  /* "offset 4 dropped in layer 2" */
    char json[128];  /* {"layer": 2, "drop_offset": 4, "force_gate": null} */
} cli_override;
/* ov set on m (gf_model_set_override): EXIT_OK, or an exit code after an error naming ov's flags. */
int cli_eval_override(gf_model *m, const cli_override *ov);

/* eval and predict --ensemble: the models that decode as one, --ckpt's first (cli/eval_ensemble.c). */
typedef struct cli_ensemble {
    gf_model *models[GF_DECODE_MAX_ENSEMBLE];
    int64_t n;
} cli_ensemble;

typedef struct eval_args {
    const char *cmd;     /* "eval" or "predict": named in messages */
    const char *ckpt, *corpus, *split, *tok_spec, *task;
    int64_t B;
    int json, no_cache, stream, si;
    int weights_given;   /* eval --weights W: the model's matrices made W (gf_model_set_weights) */
    gf_weights weights;
    int64_t limit;       /* predict: the first limit examples (0: all) */
    gf_decode_opts dec;  /* predict of an encoder-decoder: --beam, --length-penalty, --max-len (0: the model's,
                          * gf_decode_max_len); bos and eos are the tokenizer's end; predict --align-dir */
    const char *align_dir; /* predict of an encoder-decoder: each word's cross-attention drawn here (NULL: no) */
    int force;           /* predict --force: --align-dir may replace files that are not SVGs */
    const char *ensemble; /* eval and predict of an encoder-decoder: more checkpoints, comma-separated (NULL: none) */
    const cli_ensemble *en; /* and their models with --ckpt's, once loaded (NULL: --ckpt's alone) */
    cli_given given;     /* the long options given: those of a task that is not the checkpoint's are refused */
    cli_task_args targs; /* the task's option flags */
    /* inspect: its long options in place of eval's, each given to extra before the shared ones (EXIT_OK: taken;
     * -1: not its own; else an exit code); --corpus is then optional (inspect reads a text or a corpus) */
    const struct option *extra_opts;
    int (*extra)(struct eval_args *a, int opt, const char *arg);
    void *extra_ctx;
    const cli_override *override; /* inspect on a corpus: set on the model, shown in the output; NULL: none */
} eval_args;

/* The command line of eval or predict (a->cmd, with a's defaults set) into *a, --split into a->si: the
 * options both take, and eval's --no-cache and --stream or predict's --limit. EXIT_OK, an exit code, or -1
 * after help() for --help. */
int cli_eval_parse(int argc, char **argv, eval_args *a, void (*help)(void));
/* --ensemble's checkpoints loaded into en after m (--ckpt's, its tokenizer tok, scored on task t), each checked
 * to decode with it: en->models[0] is m, and en->n is 1 without --ensemble. An exit code (en then holds what
 * was loaded: cli_ensemble_free it either way). */
int cli_ensemble_load(const eval_args *a, gf_model *m, const gf_tokenizer *tok, const gf_task_recipe *t,
                      cli_ensemble *en);
/* The models en loaded, the first (the caller's) not. */
void cli_ensemble_free(cli_ensemble *en);
/* Load a->ckpt, choose its task and read the data as eval does, then score it (eval) or print each example's
 * prediction (predict, a classifier only). An exit code. */
int cli_eval_run(const eval_args *a);
/* predict of an encoder-decoder (cli/predict_decode.c): each line of a->corpus through task t's source_ids,
 * decoded (a->dec), printed with the target's pieces. An exit code. */
int cli_predict_decode(gf_model *m, const gf_tokenizer *tok, const gf_task_recipe *t, const eval_args *a);
/* predict --align-dir: the alignment of source src[0..S) and its decoded out[0..n) (options o) drawn into
 * a->align_dir/align-INDEX.svg (cli/predict_align.c). An exit code. */
/* A source id's label into buf: its character where the source is bytes and the byte is printable ASCII, else
 * "#id". */
void cli_source_label(char *buf, size_t n, int32_t id, int64_t source_vocab);
/* The task checkpoint m is scored with (eval's rule: --task, else its run's; rj its recipe, may be NULL). An exit
 * code. */
int cli_checkpoint_task(const gf_model *m, const eval_args *a, const char *rj, gf_task_recipe *t);
int cli_predict_align(gf_model *m, const gf_tokenizer *tok, const gf_decode_opts *o, const int32_t *src, int64_t S,
                      const int32_t *out, int64_t n, const char *word, int64_t index, const eval_args *a);
/* predict's part: every example of src (task t's data) through classifier m, one line each. An exit code. */
int cli_predict_print(gf_model *m, const gf_tokenizer *tok, const gf_task_ops *t, const void *data, gf_source *src,
                      const eval_args *a);

#endif
