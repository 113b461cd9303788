/* What train and compare share: the recipe's flags, and one training run of a model on a task. */
#ifndef GF_CLI_RUN_H
#define GF_CLI_RUN_H

#include <getopt.h>
#include <stdbool.h>

#include "cli.h"
#include "task_flags.h"

#define RECIPE_HELP RECIPE_HELP_TASK RECIPE_HELP_BACKBONE RECIPE_HELP_FREEZE RECIPE_HELP_TRAIN RECIPE_HELP_FORCE
#define RECIPE_HELP_TASK                                                                                   \
    "  --task T            the task (default lm; the list below): what the examples are and how a model is\n" \
    "                      scored\n"                                                                      \
    "  --corpus C          the task's data, --tokenizer T the tokenizer it is read with: what each task\n" \
    "                      takes is listed with the tasks below\n"
#define RECIPE_HELP_BACKBONE                                                                               \
    "  --backbone CKPT     a classification task: a grassflow checkpoint (e.g. a WordPiece LM), or a Hugging\n" \
    "                        Face DistilBERT folder (config.json, model.safetensors, vocab.txt), as the first\n" \
    "  --head FILE           stack, with the head stack of FILE on top (configs/*/head-*.json); the model\n" \
    "                        is then these two, not --model/--config\n"
#define RECIPE_HELP_FREEZE                                                                                 \
    "  --freeze-backbone   train the head only (the backbone's tensors get no gradient); its output is\n" \
    "                        computed once per example and kept for a split the run goes through twice or\n" \
    "                        more (in at most a quarter of memory)\n"                                    \
    "  --no-feature-cache  with --freeze-backbone: run the backbone at every step instead\n"
#define RECIPE_HELP_TRAIN                                                                                  \
    "  --epochs N          epochs (default 1), or\n"                                                      \
    "  --steps N           optimizer steps instead (both: refused)\n"                                     \
    "  --batch B           examples per micro-batch (default 32)\n"                                       \
    "  --accum K           micro-batches per optimizer step (default 1)\n"                                \
    "  --lr X              peak learning rate (default 6e-4)\n"                                           \
    "  --min-lr X          final learning rate of the cosine decay (default 6e-5)\n"                      \
    "  --warmup N          linear warmup steps (default 100; with --steps S below 1000, S / 10; one longer\n" \
    "                      than the run is warned about; the recipe records the number)\n"              \
    "  --wd X              AdamW weight decay on matrices, not on biases/LayerNorm/embeddings (default 0.01)\n" \
    "  --beta1 X, --beta2 X, --eps X   AdamW (defaults 0.9, 0.95, 1e-8)\n"                                \
    "  --clip X            clip the global gradient norm (default 1.0; 0 = off)\n"                        \
    "  --dropout P         dropout probability (default: the model config's)\n"                          \
    "  --eval-every N      evaluate on the whole validation split every N steps (default 500, and at the\n" \
    "                      end: a run of fewer steps is evaluated once, at its end)\n"                 \
    "  --log-every N       progress/metrics every N steps (default 10)\n"                                 \
    "  --seed S            seed of initialisation, data order and dropout (default 1234)\n"               \
    "  --on-nonfinite A    a NaN/Inf loss or gradient: stop (default; checkpoints stay at the last good\n"  \
    "                      evaluation) or skip the step (stops after 10 in a row)\n"                      \
    "  --no-cache          do not read or write the tokenized-corpus cache\n"                            \
    "  --precision P       the arithmetic of training: fp32 (default: the bits of every earlier version),\n" \
    "                      fp32-fast (fp32, rounded differently for speed: fused multiply-adds in GELU and\n" \
    "                      softmax, one exp a softmax element, attention heads in AVX-512 or AVX2 register\n" \
    "                      tiles, oneDNN's skinny matmuls; ~1e-6 from fp32) or\n"                           \
    "                      bf16 (matmul operands rounded to bfloat16, fp32 sums, through oneDNN on AMX or\n" \
    "                      AVX512_BF16; weights, optimizer, LayerNorm, softmax, loss stay fp32). Evaluation\n" \
    "                      is fp32. Where bf16 cannot run, it says why and trains in fp32; the recipe\n"    \
    "                      records the precision that ran\n"                                              \
    "  --deterministic     every example's gradient on its own, summed in one fixed pairwise order: under\n" \
    "                      mpirun the run equals one process on as many --threads bit for bit (every rank\n" \
    "                      must run with the same --threads); slower (docs/distributed.md); recorded in\n"  \
    "                      the recipe\n"
#define RECIPE_HELP_FORCE                                                                                  \
    "  --force             start again in an --out that holds a run, deleting that run's checkpoints,\n"  \
    "                      state and metrics (without it such a folder is refused)\n"

enum {
    O_CORPUS = 2000, O_TOKENIZER, O_EPOCHS, O_STEPS, O_BATCH, O_ACCUM, O_LR, O_MINLR, O_WARMUP, O_WD, O_B1, O_B2,
    O_EPS, O_CLIP, O_DROPOUT, O_EVAL, O_LOG, O_SEED, O_NOCACHE, O_NONFINITE, O_OUT, O_RESUME, O_STOPAT, O_MODELS,
    O_REFERENCE, O_TASK, O_BACKBONE, O_HEAD, O_FREEZE, O_NOFEAT, O_FORCE, O_ACCEPT, O_INITFROM, O_SAVEEVERY,
    O_PATIENCE, O_PRECISION, O_DETERMINISTIC
};

#define RECIPE_LONGOPTS                                                                                     \
    {"corpus", 1, 0, O_CORPUS}, {"tokenizer", 1, 0, O_TOKENIZER}, {"epochs", 1, 0, O_EPOCHS},            \
        {"steps", 1, 0, O_STEPS}, {"batch", 1, 0, O_BATCH}, {"accum", 1, 0, O_ACCUM},                      \
        {"lr", 1, 0, O_LR}, {"min-lr", 1, 0, O_MINLR}, {"warmup", 1, 0, O_WARMUP}, {"wd", 1, 0, O_WD},     \
        {"beta1", 1, 0, O_B1}, {"beta2", 1, 0, O_B2}, {"eps", 1, 0, O_EPS}, {"clip", 1, 0, O_CLIP},        \
        {"dropout", 1, 0, O_DROPOUT}, {"eval-every", 1, 0, O_EVAL}, {"log-every", 1, 0, O_LOG},              \
        {"seed", 1, 0, O_SEED}, {"no-cache", 0, 0, O_NOCACHE}, {"on-nonfinite", 1, 0, O_NONFINITE},         \
        {"task", 1, 0, O_TASK}, {"backbone", 1, 0, O_BACKBONE}, {"head", 1, 0, O_HEAD},                      \
        {"freeze-backbone", 0, 0, O_FREEZE}, {"no-feature-cache", 0, 0, O_NOFEAT}, {"force", 0, 0, O_FORCE},     \
        {"precision", 1, 0, O_PRECISION}, {"deterministic", 0, 0, O_DETERMINISTIC}

typedef struct recipe {
    gf_train_opts o;
    gf_task_recipe t;  /* the task, its data and options, and what the model was made from */
    char task[GF_TASK_NAME_MAX]; /* --task; "": the first task */
    cli_task_args targs; /* the task's option flags as given */
    double dropout;   /* < 0: keep */
    int no_cache;
    int n_recipe_flags;
    const char *backbone, *head; /* a new run on a pretrained checkpoint: its blocks under the head stack */
    int freeze_backbone;
    const char *init_from;   /* a new run from this checkpoint's weights (train --init-from) */
    int64_t resume_steps, resume_epochs; /* train --resume DIR --steps N | --epochs N: the run's new total; 0: keep */
    const char *resume_hint; /* what a stopped run says resumes it; NULL: grassflow train --resume OUT */
} recipe;

void recipe_init(recipe *r);
/* One recipe option (a getopt code); 1 if handled, 0 if not ours, or a usage exit code. */
int recipe_option(recipe *r, const char *cmd, const struct option *longopts, int opt, const char *arg);
/* A new run's task (with the option flags applied) and the flags that do not apply to it or to a model on
 * a --backbone: refused, not ignored. */
int recipe_flags(recipe *r, const cli_model_opts *mo, const cli_given *given, const char *cmd);
/* longopts = base (ending in a zero entry) + the task option flags, into out[cap]. */
void recipe_longopts(const struct option *base, struct option *out, int cap);

typedef struct {
    int64_t params, trainable, steps; /* trainable: all but a frozen backbone's */
    double val, test;        /* the task's metric (ppl or accuracy) of the best checkpoint on dev and test */
    double tokens_per_s, wall_s;
    char tokenizer[64];      /* the tokenizer the data was read with: "word (vocabulary 1234)"; "": none */
} run_summary;

/* Train one model (a new run, or with resume_dir the run saved there); with test_eval, score the test split
 * with its best checkpoint (always for a task scored by accuracy). Returns an exit code. */
int run(const cli_model_opts *mo, recipe *r, const char *resume_dir, const char *label, int test_eval,
        run_summary *sum);
/* The test metric of the best checkpoint of the run saved in dir, on its own recipe's data (r gives the
 * options a resume keeps: --no-cache); EXIT_OK, or an exit code after printing the error. */
int run_test_score(const recipe *r, const char *dir, double *test);
/* --force starts the run in dir over: none of the files it replaces may be one of inputs[0..n) (the files the
 * run reads: a checkpoint to start from, a backbone, a config or head file; NULL entries skipped), or it would
 * be lost before it was used. EXIT_OK, or an exit code after printing the error. */
int force_spares_inputs(const char *dir, const char *const *inputs, int n);
/* The config of a preset or file (*cfg) made the task's (data NULL: a check before the data is read), then
 * the --set options, checked against that config, then the task's needs checked again. */
int task_config(const cli_model_opts *mo, const gf_task_ops *task, const void *data, const void *options,
                const char *cmd, gf_config *cfg);
/* The output directory must be a writable directory that holds no run (unless force), or creatable. */
int out_dir_ok(const char *cmd, const char *dir, bool force);
void fmt_time(char *buf, size_t n, double s);
/* SIGINT / SIGTERM finish the step, save, and stop. */
void catch_signals(void);
/* The signal caught (SIGINT, SIGTERM), 0 if none. */
int caught_signal(void);
/* The signal any rank of a data-parallel job caught (0: none), agreed by every rank at the same point (each
 * must call it there), and then this rank's too; -1 if they could not agree (gf_last_error). One process:
 * caught_signal(). */
int agreed_signal(void);

/* How a data-parallel job of `ranks` ranks shares each micro-batch of `batch` examples (for the run's first line). */
const char *cli_ranks_note(int ranks, int64_t batch);

#endif
