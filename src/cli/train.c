/* grassflow train and grassflow compare. */
#include <errno.h>
#include <getopt.h>
#include <glob.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/backbone.h"
#include "cli/cli.h"
#include "cli/task.h"
#include "cli/testhooks.h"
#include "core/mem.h"
#include "data/corpus.h"
#include "io/file.h"
#include "train/trainer.h"

#define RECIPE_HELP                                                                                        \
    "  --task T            lm (default): a language model on a text corpus; snli: sentence pairs\n"       \
    "                      ([CLS] premise [SEP] hypothesis [SEP]) with 3 labels, scored by accuracy\n"   \
    "  --corpus C          lm: wikitext-2 | tinyshakespeare | a directory with train/valid/test(.txt|.txt.xz)\n" \
    "                      | a text file (split 90/5/5); snli: snli | the folder of snli_1.0.zip\n"       \
    "  --tokenizer T       word | char | byte | wordpiece:VOCAB (default: word for wikitext-2, else char;\n" \
    "                      snli: the BERT vocabulary, data/bert-base-uncased/vocab.txt)\n"              \
    "  --max-sent N        snli: WordPiece pieces kept per sentence (default 48, as in the paper)\n"      \
    "  --backbone CKPT     snli: a grassflow checkpoint (e.g. a WordPiece LM), or a Hugging Face DistilBERT\n" \
    "                        folder (config.json, model.safetensors, vocab.txt), as the first stack, with\n" \
    "  --head FILE           the head stack of FILE on top (configs/snli/head-*.json); the model is\n"    \
    "                        then these two, not --model/--config\n"                                      \
    "  --freeze-backbone   train the head only (the backbone's tensors get no gradient); its output is\n" \
    "                        computed once per pair and kept for a split the run goes through twice or\n" \
    "                        more (in at most a quarter of memory)\n"                                    \
    "  --no-feature-cache  with --freeze-backbone: run the backbone at every step instead\n"             \
    "  --epochs N          epochs (default 1), or\n"                                                      \
    "  --steps N           optimizer steps (overrides --epochs)\n"                                        \
    "  --batch B           blocks per micro-batch (default 32)\n"                                         \
    "  --seq-len L         tokens per block (default 128; at most the model's max_len)\n"                 \
    "  --accum K           micro-batches per optimizer step (default 1)\n"                                \
    "  --lr X              peak learning rate (default 6e-4)\n"                                           \
    "  --min-lr X          final learning rate of the cosine decay (default 6e-5)\n"                      \
    "  --warmup N          linear warmup steps (default 100)\n"                                           \
    "  --wd X              AdamW weight decay on matrices, not on biases/LayerNorm/embeddings (default 0.01)\n" \
    "  --beta1 X, --beta2 X, --eps X   AdamW (defaults 0.9, 0.95, 1e-8)\n"                                \
    "  --clip X            clip the global gradient norm (default 1.0; 0 = off)\n"                        \
    "  --dropout P         dropout probability (default: the model config's)\n"                          \
    "  --eval-every N      evaluate on the validation split every N steps (default 500, and at the end)\n" \
    "  --log-every N       progress/metrics every N steps (default 10)\n"                                 \
    "  --seed S            seed of initialisation, data order and dropout (default 1234)\n"               \
    "  --on-nonfinite A    a NaN/Inf loss or gradient: stop (default; checkpoints stay at the last good\n"  \
    "                      evaluation) or skip the step (stops after 10 in a row)\n"                      \
    "  --no-cache          do not read or write the tokenized-corpus cache\n"                             \
    "  --force             start again in an --out that holds a run, deleting that run's checkpoints,\n"  \
    "                      state and metrics (without it such a folder is refused)\n"

enum {
    O_CORPUS = 2000, O_TOKENIZER, O_EPOCHS, O_STEPS, O_BATCH, O_SEQ, O_ACCUM, O_LR, O_MINLR, O_WARMUP, O_WD,
    O_B1, O_B2, O_EPS, O_CLIP, O_DROPOUT, O_EVAL, O_LOG, O_SEED, O_NOCACHE, O_NONFINITE, O_OUT, O_RESUME, O_STOPAT, O_MODELS, O_REFERENCE,
    O_TASK, O_MAXSENT, O_BACKBONE, O_HEAD, O_FREEZE, O_NOFEAT, O_FORCE, O_ACCEPT
};

#define RECIPE_LONGOPTS                                                                                     \
    {"corpus", 1, 0, O_CORPUS}, {"tokenizer", 1, 0, O_TOKENIZER}, {"epochs", 1, 0, O_EPOCHS},            \
        {"steps", 1, 0, O_STEPS}, {"batch", 1, 0, O_BATCH}, {"seq-len", 1, 0, O_SEQ}, {"accum", 1, 0, O_ACCUM}, \
        {"lr", 1, 0, O_LR}, {"min-lr", 1, 0, O_MINLR}, {"warmup", 1, 0, O_WARMUP}, {"wd", 1, 0, O_WD},     \
        {"beta1", 1, 0, O_B1}, {"beta2", 1, 0, O_B2}, {"eps", 1, 0, O_EPS}, {"clip", 1, 0, O_CLIP},        \
        {"dropout", 1, 0, O_DROPOUT}, {"eval-every", 1, 0, O_EVAL}, {"log-every", 1, 0, O_LOG},              \
        {"seed", 1, 0, O_SEED}, {"no-cache", 0, 0, O_NOCACHE}, {"on-nonfinite", 1, 0, O_NONFINITE},         \
        {"task", 1, 0, O_TASK}, {"max-sent", 1, 0, O_MAXSENT}, {"backbone", 1, 0, O_BACKBONE},               \
        {"head", 1, 0, O_HEAD}, {"freeze-backbone", 0, 0, O_FREEZE}, {"no-feature-cache", 0, 0, O_NOFEAT},   \
        {"force", 0, 0, O_FORCE}

typedef struct {
    gf_train_opts o;
    double dropout;   /* < 0: keep */
    int no_cache;
    int n_recipe_flags;
    const char *backbone, *head; /* a new run on a pretrained checkpoint: its blocks under the head stack */
    int freeze_backbone;
    char *frozen;     /* resuming: the saved state's frozen tensors (JSON list), or NULL */
} recipe;

/* One recipe option; 1 if handled, 0 if not ours, or a usage exit code. */
static int recipe_option(recipe *r, const char *cmd, int opt, const char *arg) {
    gf_train_opts *o = &r->o;
    int64_t i;
    double f;
    int rc = EXIT_OK;
#define INT(flag, lo, hi, field) rc = cli_parse_i64(cmd, flag, arg, lo, hi, &i); if (!rc) o->field = i; break
#define FLT(flag, lo, hi, field) rc = cli_parse_f(cmd, flag, arg, lo, hi, &f); if (!rc) o->field = (float)f; break
    switch (opt) {
    case O_CORPUS: rc = cli_copy_arg(cmd, "--corpus", arg, o->corpus, sizeof o->corpus); break;
    case O_TOKENIZER: rc = cli_copy_arg(cmd, "--tokenizer", arg, o->tokenizer, sizeof o->tokenizer); break;
    case O_TASK:
        rc = cli_task_find(arg, cmd) ? cli_copy_arg(cmd, "--task", arg, o->task, sizeof o->task) : EXIT_USAGE;
        break;
    case O_MAXSENT: INT("--max-sent", 1, 4096, max_sent);
    case O_BACKBONE: r->backbone = arg; break;
    case O_HEAD: r->head = arg; break;
    case O_FREEZE: r->freeze_backbone = 1; break;
    case O_NOFEAT: o->feature_cache = false; break;
    case O_FORCE: o->overwrite = true; break;
    case O_EPOCHS: INT("--epochs", 1, 1000000, epochs);
    case O_STEPS: INT("--steps", 1, INT64_MAX / 2, steps);
    case O_BATCH: INT("--batch", 1, 1 << 20, batch);
    case O_SEQ: INT("--seq-len", 1, 1 << 24, seq_len);
    case O_ACCUM: INT("--accum", 1, 1 << 20, accum);
    case O_LR: FLT("--lr", 1e-12, 10, lr);
    case O_MINLR: FLT("--min-lr", 0, 10, min_lr);
    case O_WARMUP: INT("--warmup", 0, INT64_MAX / 2, warmup);
    case O_WD: FLT("--wd", 0, 10, wd);
    case O_B1: rc = cli_parse_f_below(cmd, "--beta1", arg, 0, 1, &f); if (!rc) o->beta1 = (float)f; break;
    case O_B2: rc = cli_parse_f_below(cmd, "--beta2", arg, 0, 1, &f); if (!rc) o->beta2 = (float)f; break;
    case O_EPS: FLT("--eps", 1e-30, 1, eps);
    case O_CLIP: FLT("--clip", 0, 1e30, clip);
    case O_DROPOUT:
        rc = cli_parse_f_below(cmd, "--dropout", arg, 0, 1, &f);
        if (!rc) r->dropout = f;
        break;
    case O_EVAL: INT("--eval-every", 0, INT64_MAX / 2, eval_every);
    case O_LOG: INT("--log-every", 1, INT64_MAX / 2, log_every);
    case O_SEED: rc = cli_parse_i64(cmd, "--seed", arg, 0, INT64_MAX, &i); if (!rc) o->seed = (uint64_t)i; break;
    case O_NOCACHE: r->no_cache = 1; break;
    case O_NONFINITE:
        if (!strcmp(arg, "stop")) o->on_nonfinite = GF_NONFINITE_STOP;
        else if (!strcmp(arg, "skip")) o->on_nonfinite = GF_NONFINITE_SKIP;
        else rc = cli_usage_error(cmd, "--on-nonfinite expects stop or skip, not '%s'", arg);
        break;
    default: return 0;
    }
#undef INT
#undef FLT
    if (rc) return rc;
    r->n_recipe_flags++;
    return 1;
}

static void recipe_init(recipe *r) {
    memset(r, 0, sizeof *r);
    gf_train_opts_default(&r->o);
    r->dropout = -1.0;
}

/* The flags of a new run that do not apply to its task, or to a model on a --backbone: refused, not ignored. */
static int recipe_flags(const recipe *r, const cli_model_opts *mo, const cli_given *given, const char *cmd) {
    const cli_task *task = cli_task_find(r->o.task, cmd);
    if (!task) return EXIT_USAGE;
    int rc = cli_task_flags(task, cli_given_has(given, "task") ? NULL : "the default", cmd, given);
    if (rc) return rc;
    if (r->backbone && r->o.tokenizer[0])
        return cli_usage_error(cmd, "--tokenizer does not apply with --backbone: the model reads the backbone's own "
                               "tokenizer\nHINT: drop --tokenizer");
    if (r->backbone && mo->n_sets)
        return cli_usage_error(cmd, "--set does not apply with --backbone: the model is the backbone with a head "
                               "stack on top, each as its file says\nHINT: drop --set, or edit the head file");
    if (mo->vocab)
        return cli_usage_error(cmd, "--vocab does not apply to %s: the vocabulary is the tokenizer's (what --corpus "
                               "and --tokenizer give)\nHINT: drop --vocab", cmd);
    return EXIT_OK;
}

/* ---- progress --------------------------------------------------------------------------------------------- */

typedef struct {
    int tty;
    const char *label;
    const char *unit;   /* what a counted target is: "tok" (lm), "pairs" */
} progress;

static void fmt_time(char *buf, size_t n, double s) {
    if (!(s >= 0) || s > 1e7) snprintf(buf, n, "?");
    else if (s < 60) snprintf(buf, n, "%.0fs", s);
    else if (s < 3600) snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
    else snprintf(buf, n, "%dh%02dm", (int)s / 3600, ((int)s % 3600) / 60);
}

static void on_event(const gf_train_event *e, void *ctx) {
    progress *p = ctx;
    char eta[32], el[32];
    switch (e->kind) {
    case GF_EV_STEP: {
        fmt_time(eta, sizeof eta, e->eta_s);
        fmt_time(el, sizeof el, e->elapsed_s);
        if (p->tty) {
            int width = 24, done = (int)(width * (double)e->step / (double)e->total_steps);
            char bar[32];
            for (int i = 0; i < width; i++) bar[i] = i < done ? '=' : (i == done ? '>' : ' ');
            bar[width] = '\0';
            fprintf(stderr, "\r%s [%s] step %lld/%lld  loss %.4f  lr %.2e  %.0f %s/s  ETA %s   ", p->label, bar,
                    (long long)e->step, (long long)e->total_steps, e->loss, e->lr, e->tokens_per_s, p->unit, eta);
        } else {
            fprintf(stderr, "%s step %lld/%lld  epoch %lld  loss %.4f  lr %.2e  grad-norm %.3f  %.0f %s/s  elapsed %s  ETA %s\n",
                    p->label, (long long)e->step, (long long)e->total_steps, (long long)e->epoch, e->loss, e->lr,
                    e->grad_norm, e->tokens_per_s, p->unit, el, eta);
        }
        break;
    }
    case GF_EV_EVAL: {
        char pb[32], metric[64];
        if (isnan(e->val_acc)) snprintf(metric, sizeof metric, "val ppl %s", cli_ppl(pb, sizeof pb, e->val_ppl, 2));
        else snprintf(metric, sizeof metric, "val acc %.4f", e->val_acc);
        fprintf(stderr, "%s%s eval step %lld: val loss %.4f  %s%s\n", p->tty ? "\n" : "", p->label, (long long)e->step,
                e->val_loss, metric, e->is_best ? "  (best)" : "");
        break;
    }
    case GF_EV_STOPPED:
        fprintf(stderr, "%s stopped after step %lld of %lld; resume with: grassflow train --resume %s\n", p->label,
                (long long)e->step, (long long)e->total_steps, e->path);
        break;
    case GF_EV_INTERRUPTED:
        fprintf(stderr, "%s%s interrupted by a signal after step %lld of %lld; the state is saved; resume with: "
                "grassflow train --resume %s\n", p->tty ? "\n" : "", p->label, (long long)e->step,
                (long long)e->total_steps, e->path);
        break;
    case GF_EV_SKIPPED:
        fprintf(stderr, "%s%s step %lld skipped: %s is not finite (NaN or Inf); no update\n", p->tty ? "\n" : "",
                p->label, (long long)e->step, e->what);
        break;
    default: break;
    }
}

/* ---- signals: SIGINT / SIGTERM finish the step, save, and stop -------------------------------------------- */

static volatile sig_atomic_t g_signal, g_signals;

/* First signal: set the flag (the trainer saves and stops after its current step). A second one (GNU
 * timeout signals the child and then its process group; an impatient Ctrl-C) must not lose that save: it
 * is acknowledged. A third ends the process at once, saying so; the checkpoints and state already on disk
 * stay whole (every write is atomic). Only async-signal-safe calls here. */
static void on_signal(int sig) {
    static const char again[] = "\ngrassflow: signal received again: still finishing the step and saving the "
                                "state; a third signal aborts without saving\n";
    static const char abort_msg[] = "\ngrassflow: third signal: aborting without saving this step; checkpoints "
                                    "and state saved before it are intact\n";
    ssize_t w = 0;
    if (!g_signal) g_signal = sig;
    if (++g_signals == 2) w = write(STDERR_FILENO, again, sizeof again - 1);
    if (g_signals >= 3) {
        w = write(STDERR_FILENO, abort_msg, sizeof abort_msg - 1);
        signal(sig, SIG_DFL); /* delivered when the handler returns: the signal's own exit status */
        raise(sig);
    }
    (void)w; /* nothing to do if stderr is gone */
}

static void catch_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT); /* one handler at a time: the count stays exact */
    sigaddset(&sa.sa_mask, SIGTERM);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* ---- one training run ------------------------------------------------------------------------------------- */

typedef struct {
    int64_t params, trainable, steps; /* trainable: all but a frozen backbone's */
    double val, test;        /* the task's metric (ppl or accuracy) of the best checkpoint on dev and test */
    double tokens_per_s, wall_s;
} run_summary;

/* The recipe, config and tokenizer of the run saved in resume_dir (only --stop-at and --accept-changed-data
 * are kept from r). */
static int resume_recipe(recipe *r, const char *resume_dir, gf_config *cfg, gf_tokenizer **saved_tok) {
    char path[GF_PATH_MAX];
    int rc = cli_copy_arg("train", "--resume", resume_dir, r->o.out_dir, sizeof r->o.out_dir);
    if (rc) return rc;
    if (gf_path_join(path, sizeof path, resume_dir, "state.safetensors")) return cli_error("--resume: %s", gf_last_error());
    gf_st_file *f = gf_st_read(path);
    if (!f) return cli_error("%s\nHINT: --resume takes the --out directory of an earlier run", gf_last_error());
    char *cj = gf_st_metadata(f, "config"), *rj = gf_st_metadata(f, "train"), *tj = gf_st_metadata(f, "tokenizer");
    r->frozen = gf_st_metadata(f, "frozen"); /* absent: nothing frozen */
    int bad = !cj || !rj || !tj || gf_config_from_json(cj, path, cfg);
    const int64_t stop_at = r->o.stop_at;
    const bool accept = r->o.accept_changed_data;
    if (!bad) bad = gf_train_opts_from_json(rj, path, &r->o);
    if (!bad) *saved_tok = gf_tokenizer_from_json(tj, path);
    bad = bad || !*saved_tok;
    r->o.stop_at = stop_at;
    r->o.accept_changed_data = accept;
    snprintf(r->o.out_dir, sizeof r->o.out_dir, "%s", resume_dir); /* fits: checked above */
    free(cj);
    free(rj);
    free(tj);
    gf_st_free(f);
    if (bad) return cli_error("%s: cannot resume: %s", path, gf_last_error());
    return EXIT_OK;
}

/* The config of a preset or file (*cfg) made the task's (data NULL: a check before the data is read), then
 * the --set options, checked against that config, then the task's needs checked again. */
static int task_config(const cli_model_opts *mo, const cli_task *task, const void *data, const gf_train_opts *o,
                       const char *cmd, gf_config *cfg) {
    int rc = task->configure(data, o, cfg);
    if (!rc && mo->n_sets && !(rc = cli_model_sets(mo, cmd, cfg))) rc = task->configure(data, o, cfg);
    return rc;
}

/* A new run's config: what the task's data decides, --dropout, and the model's name for the recipe. */
static int new_run_config(const cli_model_opts *mo, recipe *r, const cli_task *task, const void *data, gf_config *cfg) {
    const int64_t max_len = cfg->max_len, vocab = cfg->vocab_size;
    int rc = task_config(mo, task, data, &r->o, "train", cfg);
    if (rc) return rc;
    if (r->backbone && cfg->max_len != max_len) /* a pretrained position table cannot grow */
        return cli_error("--task %s needs examples of %lld positions; the backbone %s has %lld\nHINT: shorter examples "
                         "(snli: --max-sent N makes them 2N + 3 long)", task->name, (long long)cfg->max_len, r->backbone,
                         (long long)max_len);
    if (r->backbone && cfg->vocab_size != vocab)
        return cli_error("--task %s reads a vocabulary of %lld pieces; the backbone %s has %lld\nHINT: a backbone "
                         "trained on the same WordPiece vocabulary", task->name, (long long)cfg->vocab_size, r->backbone,
                         (long long)vocab);
    if (r->dropout >= 0) {
        char kv[64];
        snprintf(kv, sizeof kv, "dropout=%.9g", r->dropout);
        if (gf_config_set(cfg, kv)) return cli_error("%s", gf_last_error());
    }
    if (r->backbone) {
        if (strlen(r->backbone) + strlen(r->head) + 32 > sizeof r->o.model)
            return cli_usage_error("train", "--backbone and --head are too long to record (%zu bytes at most)",
                                   sizeof r->o.model - 32);
        snprintf(r->o.model, sizeof r->o.model, "backbone %s, head %s%s", r->backbone, r->head,
                 r->freeze_backbone ? ", frozen" : "");
        return EXIT_OK;
    }
    return cli_copy_arg("train", mo->preset ? "--model" : "--config", mo->preset ? mo->preset : mo->config_path,
                        r->o.model, sizeof r->o.model);
}

/* The task's metric of model m on split `split`: perplexity (lm) or accuracy (a classifier). */
static int split_metric(gf_model *m, const cli_task *task, const void *data, int split, const gf_train_opts *o,
                        double *metric) {
    gf_source *src = task->source(data, split, o);
    gf_eval_result er = {0};
    int rc = !src || gf_evaluate_result(m, src, o->batch, &er) ? cli_error("%s", gf_last_error()) : EXIT_OK;
    if (!rc) *metric = er.n_correct >= 0 ? (double)er.n_correct / (double)er.n_counted : exp(er.mean_loss);
    gf_source_free(src);
    return rc;
}

/* The metric of OUT/best.safetensors on the test split (training measured it on dev). */
static int best_metrics(const recipe *r, const cli_task *task, const void *data, run_summary *sum) {
    char bp[GF_PATH_MAX];
    if (gf_path_join(bp, sizeof bp, r->o.out_dir, "best.safetensors")) return cli_error("%s", gf_last_error());
    gf_model *best = gf_model_load(bp);
    if (!best) return cli_error("%s", gf_last_error());
    int rc = split_metric(best, task, data, GF_TEST, &r->o, &sum->test);
    gf_model_free(best);
    return rc;
}

/* A frozen backbone under a head (a fixed first stack): its output for each training and dev example is
 * computed once and kept, within a quarter of memory, for each split the run goes through at least twice
 * (a shorter run would compute more than it saves); otherwise, or with --no-feature-cache, the backbone
 * runs at every step. The choice depends on the recipe alone, so a resumed run makes the same one. */
static void cache_features(gf_model *m, const gf_train_opts *o, gf_source **train, gf_source **valid) {
    if (!o->feature_cache || !gf_model_first_stack_fixed(m)) return;
    const int64_t total = o->steps > 0 ? o->steps : o->epochs * gf_steps_per_epoch(o, *train);
    const int64_t evals = (o->eval_every > 0 ? total / o->eval_every : 0) + 1;
    const bool want[2] = {total * o->batch * o->accum >= 2 * (*train)->n_examples((*train)->ctx), evals >= 2};
    gf_source **src[2] = {train, valid};
    const char *name[2] = {"train", "dev"};
    const size_t budget = (size_t)(gf_mem_limit() / 4);
    size_t used[2] = {0, 0};
    char kept[128] = "", every[128] = "";
    for (int i = 0; i < 2; i++) {
        gf_source *w = want[i] ? gf_feature_source_create(m, *src[i], i ? GF_USE_EVAL : GF_USE_TRAIN, o->batch,
                                                          budget - used[0], &used[i]) : NULL;
        if (want[i] && !w) fprintf(stderr, "grassflow: %s: %s\n", name[i], gf_last_error());
        if (w) {
            *src[i] = w;
            snprintf(kept + strlen(kept), sizeof kept - strlen(kept), "%s%s %.1f MiB", kept[0] ? ", " : "", name[i],
                     (double)used[i] / 1048576.0);
        } else {
            snprintf(every + strlen(every), sizeof every - strlen(every), "%s%s", every[0] ? ", " : "", name[i]);
        }
    }
    fprintf(stderr, "grassflow: the frozen backbone's output, computed once per example and kept: %s; run at every step: "
            "%s%s\n", kept[0] ? kept : "none", every[0] ? every : "none",
            every[0] ? " (a split seen fewer than twice, or too large: a quarter of memory at most)" : "");
}

/* Train m on the task's training split, validating on its dev split. */
static int train_on(gf_model *m, recipe *r, const cli_task *task, const void *data, bool resume, const char *label,
                    gf_train_result *res) {
    const gf_tokenizer *tok = task->tokenizer(data);
    if (gf_model_config(m)->vocab_size != gf_tokenizer_vocab_size(tok))
        return cli_error("the model's vocab_size %lld differs from the tokenizer's vocabulary (%lld tokens)",
                         (long long)gf_model_config(m)->vocab_size, (long long)gf_tokenizer_vocab_size(tok));
    gf_source *train = task->source(data, GF_TRAIN, &r->o);
    gf_source *valid = train ? task->source(data, GF_VALID, &r->o) : NULL;
    char *tok_json = gf_tokenizer_to_json(tok), what[256];
    int rc = EXIT_OK;
    if (!valid || !tok_json) {
        rc = cli_error("%s", tok_json ? gf_last_error() : "out of memory starting training");
        goto done;
    }
    cache_features(m, &r->o, &train, &valid);
    task->describe(data, what, sizeof what);
    fprintf(stderr, "%s: %s, %lld parameters, %s (%s), %lld steps/epoch, %s\n", label, r->o.model,
            (long long)gf_model_num_params(m), r->o.corpus, what, (long long)gf_steps_per_epoch(&r->o, train),
            resume ? "resuming" : "from scratch");
    /* set after the recipe is final: resuming reads it from the state, which knows neither */
    r->o.tokenizer_json = tok_json;
    r->o.interrupt = &g_signal;
    cli_test_hooks_install(&r->o);
    progress p = {.tty = isatty(2), .label = label, .unit = strcmp(task->metric, "ppl") ? "pairs" : "tok"};
    int trc = gf_train(m, train, valid, &r->o, resume, on_event, &p, res);
    if (p.tty && trc != GF_TRAIN_INTERRUPTED) fputc('\n', stderr);
    if (trc == GF_TRAIN_INTERRUPTED) rc = 128 + (int)g_signal;
    else if (trc) rc = cli_error("%s", gf_last_error());
done:
    r->o.tokenizer_json = NULL;
    free(tok_json);
    gf_source_free(train);
    gf_source_free(valid);
    return rc;
}

/* Train one model (new run or resume); with test_eval, score dev and test with its best checkpoint. */
static int run(const cli_model_opts *mo, recipe *r, const char *resume_dir, const char *label, int test_eval,
               run_summary *sum) {
    void *data = NULL;
    gf_model *m = NULL;
    gf_tokenizer *saved_tok = NULL;
    gf_config cfg;
    int rc = resume_dir    ? resume_recipe(r, resume_dir, &cfg, &saved_tok)
             : r->backbone ? cli_backbone_config(r->backbone, r->head, &cfg, &saved_tok)
                           : cli_model_base(mo, "train", &cfg); /* its --set options: new_run_config */
    const cli_task *task = rc ? NULL : cli_task_find(r->o.task, "train");
    if (!rc && !task) rc = EXIT_USAGE;
    if (!rc) rc = task->load(&r->o, r->no_cache, saved_tok, &data);
    if (!rc && !resume_dir) rc = new_run_config(mo, r, task, data, &cfg);
    if (!rc && !(m = gf_model_create(&cfg))) rc = cli_error("%s", gf_last_error());
    if (rc) goto done;
    gf_model_init(m, r->o.seed);
    if (!resume_dir && r->backbone) rc = cli_backbone_load_weights(m, r->backbone, r->freeze_backbone);
    if (resume_dir && r->frozen) rc = cli_refreeze(m, r->frozen);
    if (rc) goto done;
    gf_train_result res;
    if ((rc = train_on(m, r, task, data, resume_dir != NULL, label, &res))) goto done;
    /* the best checkpoint's dev metric as training measured it: accuracy, else perplexity */
    *sum = (run_summary){.params = gf_model_num_params(m), .trainable = gf_model_num_trainable(m), .steps = res.steps,
                         .val = isnan(res.best_val_acc) ? exp(res.best_val_loss) : res.best_val_acc,
                         .tokens_per_s = res.tokens_per_s, .wall_s = res.wall_s, .test = NAN};
    if (test_eval || strcmp(task->metric, "ppl")) rc = best_metrics(r, task, data, sum);
done:
    gf_model_free(m);
    if (task && data) task->free(data);
    gf_tokenizer_free(saved_tok);
    free(r->frozen);
    r->frozen = NULL;
    return rc;
}

/* The output directory must be a writable directory that holds no run (unless --force), or creatable;
 * nothing is created here (the trainer creates it once everything else has been checked, so a rejected
 * run leaves nothing behind). The trainer checks for a run again, under the folder's lock. */
static int out_dir_ok(const char *cmd, const char *dir, bool force) {
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) return cli_usage_error(cmd, "--out %s exists and is not a directory", dir);
        if (access(dir, W_OK) != 0) return cli_error("--out %s is not writable", dir);
        if (gf_run_dir_check_new(dir, force)) return cli_error("--out %s", gf_last_error());
        return EXIT_OK;
    }
    char parent[GF_PATH_MAX];
    if (strlen(dir) + 64 > sizeof parent) /* room for the run's own files inside it */
        return cli_usage_error(cmd, "--out is %zu bytes long; the longest a run folder can be is %zu", strlen(dir),
                               sizeof parent - 64);
    snprintf(parent, sizeof parent, "%s", dir);
    char *slash = strrchr(parent, '/');
    if (slash) *slash = '\0';
    const char *p = slash ? (parent[0] ? parent : "/") : ".";
    if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
        return cli_error("cannot create --out %s: %s does not exist\nHINT: create the parent directory first", dir, p);
    if (access(p, W_OK) != 0) return cli_error("cannot create --out %s: %s is not writable", dir, p);
    return EXIT_OK;
}

static void train_help(void) {
    printf("usage: grassflow train (--model PRESET | --config FILE) [--set KEY=VALUE]... --corpus C --out DIR\n"
           "                       [recipe options]\n"
           "       grassflow train --resume DIR [--stop-at STEP] [--accept-changed-data]\n\n"
           "Train a language model. Writes DIR/last.safetensors, DIR/best.safetensors (best validation loss),\n"
           "DIR/state.safetensors (weights, AdamW moments, step: what --resume needs) and DIR/metrics.jsonl.\n"
           "Progress goes to stderr; the final summary to stdout.\n\n" CLI_MODEL_HELP RECIPE_HELP
           "  --out DIR           output directory (created if missing)\n"
           "  --resume DIR        continue the run in DIR exactly where its state was saved\n"
           "  --stop-at STEP      stop after STEP (saving the state), as if interrupted\n"
           "  --accept-changed-data  with --resume: go on although the training or validation data differ from\n"
           "                      those the state was saved with (refused otherwise: the run would no longer\n"
           "                      continue bit for bit)\n");
}

int cmd_train(int argc, char **argv) {
    static const struct option longopts[] = {CLI_MODEL_LONGOPTS, RECIPE_LONGOPTS, {"out", 1, 0, O_OUT},
                                             {"resume", 1, 0, O_RESUME}, {"stop-at", 1, 0, O_STOPAT},
                                             {"accept-changed-data", 0, 0, O_ACCEPT}, {"help", 0, 0, 'h'},
                                             {0, 0, 0, 0}};
    cli_model_opts mo = {0};
    recipe r;
    recipe_init(&r);
    const char *out = NULL, *resume = NULL;
    cli_given given = {0};
    int opt, idx = -1;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", longopts, &idx)) != -1) {
        cli_given_note(&given, longopts, idx);
        idx = -1;
        int h = cli_model_option(&mo, "train", opt, optarg);
        if (h == 0) h = recipe_option(&r, "train", opt, optarg);
        if (h == 1) continue;
        if (h > 1) return h;
        if (opt == O_OUT) out = optarg;
        else if (opt == O_RESUME) resume = optarg;
        else if (opt == O_ACCEPT) r.o.accept_changed_data = true;
        else if (opt == O_STOPAT) {
            int64_t v;
            int rc = cli_parse_i64("train", "--stop-at", optarg, 1, INT64_MAX / 2, &v);
            if (rc) return rc;
            r.o.stop_at = v;
        } else if (opt == 'h') { train_help(); return EXIT_OK; }
        else return cli_usage_error("train", "unknown option");
    }
    if (optind < argc) return cli_usage_error("train", "unexpected argument '%s'", argv[optind]);
    if (r.o.accept_changed_data && !resume)
        return cli_usage_error("train", "--accept-changed-data goes with --resume (a new run has no earlier data)");
    if (resume) {
        if (mo.preset || mo.config_path || mo.n_sets || mo.vocab || r.n_recipe_flags || out || r.backbone || r.head)
            return cli_usage_error("train", "--resume DIR continues the saved run with its own model and recipe; "
                                   "give only --resume (and optionally --stop-at, --accept-changed-data)");
    } else {
        if (!r.o.corpus[0]) return cli_usage_error("train", "--corpus is required");
        int rc = recipe_flags(&r, &mo, &given, "train");
        if (rc) return rc;
        if (!r.backbone != !r.head) return cli_usage_error("train", "--backbone CKPT and --head FILE go together");
        if (r.freeze_backbone && !r.backbone) return cli_usage_error("train", "--freeze-backbone needs --backbone");
        if (!r.o.feature_cache && !r.freeze_backbone)
            return cli_usage_error("train", "--no-feature-cache goes with --freeze-backbone (only a frozen backbone's "
                                   "output is kept)");
        if (r.backbone && (mo.preset || mo.config_path || mo.n_sets || mo.vocab))
            return cli_usage_error("train", "--backbone: the model is the backbone with --head on top; drop --model, "
                                   "--config, --set and --vocab");
        if (!out) return cli_usage_error("train", "--out DIR is required");
        rc = out_dir_ok("train", out, r.o.overwrite);
        if (rc) return rc;
        snprintf(r.o.out_dir, sizeof r.o.out_dir, "%s", out); /* fits: out_dir_ok checked its length */
    }
    run_summary s;
    catch_signals();
    int rc = run(&mo, &r, resume, "train", 0, &s);
    if (rc) return rc;
    char wt[32], pb[32];
    fmt_time(wt, sizeof wt, s.wall_s);
    if (isnan(s.test)) /* a language model: the perplexity of the best validation */
        printf("model %s  params %lld  trainable %lld  steps %lld  best val ppl %s  train %.0f tok/s  wall %s  "
               "checkpoints %s/\n", r.o.model, (long long)s.params, (long long)s.trainable, (long long)s.steps,
               cli_ppl(pb, sizeof pb, s.val, 2), s.tokens_per_s, wt, r.o.out_dir);
    else
        printf("model %s  params %lld  trainable %lld  steps %lld  best checkpoint: dev accuracy %.4f  test accuracy %.4f  "
               "train %.0f examples/s  wall %s  checkpoints %s/\n", r.o.model, (long long)s.params, (long long)s.trainable,
               (long long)s.steps, s.val, s.test, s.tokens_per_s, wt, r.o.out_dir);
    return EXIT_OK;
}

/* ---- compare ---------------------------------------------------------------------------------------------- */

static void compare_help(void) {
    printf("usage: grassflow compare --models A,B[,...] --corpus C [--out DIR] [recipe options]\n\n"
           "Train each model with the same recipe (into DIR/MODEL, default DIR runs/compare), score the test split\n"
           "with each best checkpoint, and print a table: parameters, best validation perplexity, test\n"
           "perplexity, training tokens/s, wall time, and the perplexity gap to the reference model.\n"
           "With --task snli: dev and test accuracy of each best checkpoint and the gap in points; with\n"
           "--backbone CKPT, the models are heads on that one backbone (the paper's Table 3).\n\n"
           "  --models LIST       comma-separated presets (or config files ending in .json); with\n"
           "                      --backbone, head files (configs/snli/head-grassmann.json,...)\n"
           "  --reference MODEL   the model the gaps are measured against (default: the last one listed,\n"
           "                      transformer-6L in --models grassmann-6L,transformer-6L)\n"
           "  --set KEY=VALUE     applied to every model\n" RECIPE_HELP
           "  --out DIR           where the runs go (default runs/compare)\n");
}

enum { MAX_COMPARE = 16 };

/* The folder (under --out) of a compared model: its name with '/' as '_'. */
static void run_folder(const char *name, char *buf, size_t n) {
    snprintf(buf, n, "%s", name);
    for (char *c = buf; *c; c++)
        if (*c == '/') *c = '_';
}

/* Split --models into names (in list), refusing more than MAX_COMPARE and two that would share a folder. */
static int compare_models(const char *models, char *list, size_t size, char **names, int *n) {
    if (strlen(models) >= size) return cli_usage_error("compare", "--models is longer than %zu characters", size - 1);
    snprintf(list, size, "%s", models);
    *n = 0;
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        if (*n == MAX_COMPARE)
            return cli_usage_error("compare", "--models lists more than %d models; compare at most %d at a time",
                                   MAX_COMPARE, MAX_COMPARE);
        names[(*n)++] = tok;
    }
    for (int i = 0; i < *n; i++)
        for (int j = 0; j < i; j++) {
            char a[1024], b[1024]; /* as long as --models itself: never cut short */
            run_folder(names[i], a, sizeof a);
            run_folder(names[j], b, sizeof b);
            if (!strcmp(a, b))
                return cli_usage_error("compare", "--models %s and %s would train into the same folder %s; give each "
                                       "model once, under distinct names", names[j], names[i], a);
        }
    return 0;
}

/* The comparison: perplexity (lm) or accuracy (snli) of each best checkpoint, and the gap on test. */
static void print_table(const recipe *r, char **names, int n, int ref, const run_summary *s) {
    const bool ppl = !strcmp(r->o.task, "lm");
    printf("\n%-20s %12s %12s %14s %10s %10s %10s %12s\n", "model", "params", "trainable", ppl ? "best val ppl" : "dev acc",
           ppl ? "test ppl" : "test acc", ppl ? "tok/s" : "pairs/s", "wall", "gap (test)");
    for (int i = 0; i < n; i++) {
        char wt[32], gap[32];
        fmt_time(wt, sizeof wt, s[i].wall_s);
        if (i == ref) snprintf(gap, sizeof gap, "reference");
        else if (ppl) snprintf(gap, sizeof gap, "%+.1f%%", 100.0 * (s[i].test / s[ref].test - 1.0));
        else snprintf(gap, sizeof gap, "%+.2f pts", 100.0 * (s[i].test - s[ref].test));
        printf(ppl ? "%-20s %12lld %12lld %14.2f %10.2f %10.0f %10s %12s\n"
                   : "%-20s %12lld %12lld %14.4f %10.4f %10.0f %10s %12s\n",
               names[i], (long long)s[i].params, (long long)s[i].trainable, s[i].val, s[i].test, s[i].tokens_per_s, wt, gap);
    }
    printf("recipe: task %s, %s, %lld steps, batch %lld x %lld %s, lr %g -> %g, warmup %lld, seed %llu\n", r->o.task,
           r->o.corpus, (long long)s[0].steps, (long long)r->o.batch, (long long)(ppl ? r->o.seq_len : r->o.max_sent),
           ppl ? "tokens" : "pieces per sentence", (double)r->o.lr, (double)r->o.min_lr, (long long)r->o.warmup,
           (unsigned long long)r->o.seed);
}

/* With --backbone, a --models entry that is no file: the head files are meant. */
static int not_a_head(const char *name) {
    char dir[GF_PATH_MAX + 32], real[PATH_MAX], pattern[PATH_MAX + GF_PATH_MAX + 64], heads[1024] = "";
    glob_t g;
    snprintf(dir, sizeof dir, "%.*s/../configs/snli", GF_PATH_MAX, cli_data_dir()); /* the source tree's */
    snprintf(pattern, sizeof pattern, "%s/head-*.json", realpath(dir, real) ? real : dir);
    if (glob(pattern, 0, NULL, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc; i++)
            snprintf(heads + strlen(heads), sizeof heads - strlen(heads), "%s%s", i ? ", " : "", g.gl_pathv[i]);
    globfree(&g);
    return cli_usage_error("compare", "--models %s: no such file; with --backbone, --models lists head stack files "
                           "(JSON, one stack each), not presets; the heads grassflow ships: %s", name,
                           heads[0] ? heads : "configs/snli/head-*.json in its source tree");
}

/* Model i of --models: a preset or config file, or with a backbone a head file; checked before any run. */
static int compare_model(const cli_model_opts *base, const recipe *r, const char *name, cli_model_opts *mo) {
    const char *backbone = r->backbone;
    gf_config c;
    *mo = *base;
    if (backbone && access(name, F_OK) != 0) return not_a_head(name);
    if (backbone) {
        gf_tokenizer *tok = NULL;
        int rc = cli_backbone_config(backbone, name, &c, &tok);
        gf_tokenizer_free(tok);
        return rc;
    }
    size_t len = strlen(name);
    if (len > 5 && !strcmp(name + len - 5, ".json")) mo->config_path = name;
    else mo->preset = name;
    const cli_task *task = cli_task_find(r->o.task, "compare");
    if (!task) return EXIT_USAGE;
    int rc = cli_model_base(mo, "compare", &c);
    return rc ? rc : task_config(mo, task, NULL, &r->o, "compare", &c);
}

int cmd_compare(int argc, char **argv) {
    static const struct option longopts[] = {RECIPE_LONGOPTS, {"models", 1, 0, O_MODELS}, {"set", 1, 0, OPT_SET},
                                             {"out", 1, 0, O_OUT}, {"reference", 1, 0, O_REFERENCE},
                                             {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    recipe r;
    recipe_init(&r);
    cli_model_opts base = {0};
    const char *models = NULL, *out = "runs/compare", *reference = NULL;
    cli_given given = {0};
    int opt, rc, idx = -1;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", longopts, &idx)) != -1) {
        cli_given_note(&given, longopts, idx);
        idx = -1;
        int h = recipe_option(&r, "compare", opt, optarg);
        if (h == 0 && opt == OPT_SET) h = cli_model_option(&base, "compare", opt, optarg);
        if (h == 1) continue;
        if (h > 1) return h;
        if (opt == O_MODELS) models = optarg;
        else if (opt == O_OUT) out = optarg;
        else if (opt == O_REFERENCE) reference = optarg;
        else if (opt == 'h') { compare_help(); return EXIT_OK; }
        else return cli_usage_error("compare", "unknown option");
    }
    if (optind < argc) return cli_usage_error("compare", "unexpected argument '%s'", argv[optind]);
    if (!models) return cli_usage_error("compare", "--models A,B is required");
    if (!r.o.corpus[0]) return cli_usage_error("compare", "--corpus is required");
    if ((rc = recipe_flags(&r, &base, &given, "compare"))) return rc;
    char list[1024], *names[MAX_COMPARE];
    int n = 0;
    if ((rc = compare_models(models, list, sizeof list, names, &n))) return rc;
    /* check every model before training anything; the gaps are measured against the reference */
    cli_model_opts mos[MAX_COMPARE];
    int ref = reference ? -1 : n - 1;
    if (r.head) return cli_usage_error("compare", "--head: with --backbone, --models lists the head files");
    if (r.freeze_backbone && !r.backbone) return cli_usage_error("compare", "--freeze-backbone needs --backbone");
    if (!r.o.feature_cache && !r.freeze_backbone)
        return cli_usage_error("compare", "--no-feature-cache goes with --freeze-backbone");
    for (int i = 0; i < n; i++) {
        if ((rc = compare_model(&base, &r, names[i], &mos[i]))) return rc;
        if (reference && !strcmp(reference, names[i])) ref = i;
    }
    if (ref < 0) return cli_usage_error("compare", "--reference %s is not one of --models %s", reference, models);
    if ((rc = out_dir_ok("compare", out, true))) return rc;
    char dirs[MAX_COMPARE][GF_PATH_MAX];
    for (int i = 0; i < n; i++) { /* every model's folder, before any training */
        char base_name[1024];
        run_folder(names[i], base_name, sizeof base_name);
        if (gf_path_join(dirs[i], sizeof dirs[i], out, base_name)) return cli_error("--out: %s", gf_last_error());
        struct stat st; /* one not there yet is made in --out, which is checked above */
        if (stat(dirs[i], &st) == 0 && (rc = out_dir_ok("compare", dirs[i], r.o.overwrite))) return rc;
    }
    if (mkdir(out, 0755) != 0 && errno != EEXIST) return cli_error("cannot create --out %s: %s", out, strerror(errno));
    run_summary s[MAX_COMPARE];
    for (int i = 0; i < n; i++) {
        recipe ri = r;
        ri.head = r.backbone ? names[i] : NULL;
        memcpy(ri.o.out_dir, dirs[i], sizeof ri.o.out_dir); /* the same size: GF_PATH_MAX */
        if ((rc = run(&mos[i], &ri, NULL, names[i], 1, &s[i]))) return rc;
    }
    print_table(&r, names, n, ref, s);
    return EXIT_OK;
}
