/* What train and compare share: the recipe's flags, and one training run of a model on a task. */
#include "run.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "testhooks.h"

void recipe_init(recipe *r) {
    memset(r, 0, sizeof *r);
    gf_train_opts_default(&r->o);
    gf_task_recipe_init(&r->t, gf_task_at(0)->name);
    r->dropout = -1.0;
}

void recipe_longopts(const struct option *base, struct option *out, int cap) {
    int n = 0;
    while (base[n].name && n < cap - 1) out[n] = base[n], n++;
    cli_task_longopts(out, &n, cap);
}

/* ", 2 ranks of 16 examples per micro-batch": how a data-parallel job shares each batch (a static buffer) */
const char *cli_ranks_note(int ranks, int64_t batch) {
    static char note[96];
    snprintf(note, sizeof note, "; %d ranks, %lld%s examples each per micro-batch", ranks,
             (long long)(batch / ranks), batch % ranks ? " or 1 more" : "");
    return note;
}

/* --precision: a precision that cannot run here is said, with the reason, and the run trains in fp32. */
static int precision_option(gf_train_opts *o, const char *cmd, const char *arg) {
    if (gf_precision_parse(arg, &o->precision))
        return cli_usage_error(cmd, "--precision expects fp32, fp32-fast or bf16, not '%s'", arg);
    const char *why = gf_precision_unavailable(o->precision);
    if (why) {
        if (gf_dist_rank() == 0)
            fprintf(stderr, "grassflow %s: --precision %s: %s; training in fp32 instead (the recipe records fp32)\n",
                    cmd, arg, why);
        o->precision = GF_PRECISION_FP32;
    }
    return EXIT_OK;
}

int recipe_option(recipe *r, const char *cmd, const struct option *longopts, int opt, const char *arg) {
    gf_train_opts *o = &r->o;
    int64_t i;
    double f;
    int rc = EXIT_OK;
#define INT(flag, lo, hi, field) rc = cli_parse_i64(cmd, flag, arg, lo, hi, &i); if (!rc) o->field = i; break
#define FLT(flag, lo, hi, field) rc = cli_parse_f(cmd, flag, arg, lo, hi, &f); if (!rc) o->field = (float)f; break
    switch (opt) {
    case O_CORPUS: /* the paths a recipe records: UTF-8 (cli_utf8_arg) */
        rc = cli_utf8_arg(cmd, "--corpus", arg);
        if (!rc) rc = cli_copy_arg(cmd, "--corpus", arg, r->t.corpus, sizeof r->t.corpus);
        break;
    case O_TOKENIZER:
        rc = cli_utf8_arg(cmd, "--tokenizer", arg);
        if (!rc) rc = cli_copy_arg(cmd, "--tokenizer", arg, r->t.tokenizer, sizeof r->t.tokenizer);
        break;
    case O_TASK:
        rc = cli_task_find(arg, cmd) ? cli_copy_arg(cmd, "--task", arg, r->task, sizeof r->task) : EXIT_USAGE;
        break;
    case O_BACKBONE: rc = cli_utf8_arg(cmd, "--backbone", r->backbone = arg); break;
    case O_HEAD: rc = cli_utf8_arg(cmd, "--head", r->head = arg); break;
    case O_FREEZE: r->freeze_backbone = 1; break;
    case O_NOFEAT: o->feature_cache = false; break;
    case O_FORCE: o->overwrite = true; break;
    case O_EPOCHS: INT("--epochs", 1, 1000000, epochs);
    case O_STEPS: INT("--steps", 1, INT64_MAX / 2, steps);
    case O_BATCH: INT("--batch", 1, 1 << 20, batch);
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
    case O_PRECISION: rc = precision_option(o, cmd, arg); break;
    case O_DETERMINISTIC: o->deterministic = true; break;
    case O_NONFINITE:
        if (!strcmp(arg, "stop")) o->on_nonfinite = GF_NONFINITE_STOP;
        else if (!strcmp(arg, "skip")) o->on_nonfinite = GF_NONFINITE_SKIP;
        else rc = cli_usage_error(cmd, "--on-nonfinite expects stop or skip, not '%s'", arg);
        break;
    default:
        if (!cli_task_note(&r->targs, longopts, opt, arg)) return 0;
    }
#undef INT
#undef FLT
    if (rc) return rc;
    r->n_recipe_flags++;
    return 1;
}

/* --set vocab_size=N (or MODEL:vocab_size=N) for a task that reads text: the vocabulary is its tokenizer's,
 * which the task sets after every --set; refused before any data is read or any model trains. */
static int vocab_set(const gf_task_ops *task, const cli_model_opts *mo, const char *cmd) {
    for (int i = 0; task->tokenizer && i < mo->n_sets; i++) {
        const char *kv = mo->sets[i], *eq = strchr(kv, '='), *key = kv;
        for (const char *c = kv; *c && (!eq || c < eq); c++)
            if (*c == ':') key = c + 1;
        if (eq && eq - key == 10 && !strncmp(key, "vocab_size", 10))
            return cli_usage_error(cmd, "--set %s does not apply with --task %s: the vocabulary is the tokenizer's "
                                   "(what --corpus and --tokenizer give), which the task sets\nHINT: drop it; "
                                   "--tokenizer chooses the vocabulary", kv, task->name);
    }
    return EXIT_OK;
}

/* --steps and --epochs both given to a new run: refused (--steps would override --epochs, silently). Without
 * --warmup, a run of --steps N < 1000 warms up for N / 10 steps instead of 100, which would be most of it (the
 * recipe records the number; a resumed run keeps its own). */
static int budget_flags(recipe *r, const cli_given *given, const char *cmd) {
    if (cli_given_has(given, "steps") && cli_given_has(given, "epochs"))
        return cli_usage_error(cmd, "--epochs %lld and --steps %lld: give one; --steps N is the run's length in "
                               "optimizer steps and would override --epochs\nHINT: drop --epochs to train %lld "
                               "steps, or drop --steps to train %lld whole epochs", (long long)r->o.epochs,
                               (long long)r->o.steps, (long long)r->o.steps, (long long)r->o.epochs);
    if (!cli_given_has(given, "warmup") && r->o.steps > 0 && r->o.steps < 1000) r->o.warmup = r->o.steps / 10;
    return EXIT_OK;
}

int recipe_flags(recipe *r, const cli_model_opts *mo, const cli_given *given, const char *cmd) {
    int brc = budget_flags(r, given, cmd);
    if (brc) return brc;
    gf_task_recipe t = r->t; /* the data flags given, on the task chosen */
    if (gf_task_recipe_init(&r->t, r->task[0] ? r->task : gf_task_at(0)->name))
        return cli_usage_error(cmd, "--task %s", gf_last_error());
    memcpy(r->t.corpus, t.corpus, sizeof t.corpus);
    memcpy(r->t.tokenizer, t.tokenizer, sizeof t.tokenizer);
    const char *by = cli_given_has(given, "task") ? NULL : "the default";
    int rc = cli_task_apply(&r->t, &r->targs, by, cmd);
    if (!rc) rc = cli_task_flags(r->t.task, by, cmd, given);
    if (rc) return rc;
    if (r->backbone && r->t.tokenizer[0])
        return cli_usage_error(cmd, "--tokenizer does not apply with --backbone: the model reads the backbone's own "
                               "tokenizer\nHINT: drop --tokenizer");
    if (r->backbone && mo->n_sets)
        return cli_usage_error(cmd, "--set does not apply with --backbone: the model is the backbone with a head "
                               "stack on top, each as its file says\nHINT: drop --set, or edit the head file");
    if (mo->vocab)
        return cli_usage_error(cmd, "--vocab does not apply to %s: the vocabulary is the tokenizer's (what --corpus "
                               "and --tokenizer give)\nHINT: drop --vocab", cmd);
    return vocab_set(r->t.task, mo, cmd);
}

/* ---- progress --------------------------------------------------------------------------------------------- */

typedef struct {
    int tty;
    char label[1024];   /* the run's name as shown (gf_escape_name: a config's or folder's name is the user's) */
    const char *unit;   /* what a counted target is (the task's unit): "tok", "pairs" */
    const char *resume_hint; /* recipe.resume_hint */
    int64_t events;     /* step and evaluation events of this session: an early stop follows an evaluation, so
                         * one said without any is an earlier session's, said again by a resume */
} progress;

void fmt_time(char *buf, size_t n, double s) {
    if (!(s >= 0) || s > 1e7) snprintf(buf, n, "?");
    else if (s < 60) snprintf(buf, n, "%.0fs", s);
    else if (s < 3600) snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
    else snprintf(buf, n, "%dh%02dm", (int)s / 3600, ((int)s % 3600) / 60);
}

/* "resume with: " and the command: the recipe's hint (compare's, shell-quoted; its control bytes shown as \xNN)
 * or grassflow train --resume and the run folder (escaped), then a newline. */
static void resume_with(const progress *p, const gf_train_event *e) {
    fputs("resume with: ", stderr);
    if (p->resume_hint) gf_print_lines(stderr, p->resume_hint);
    else fprintf(stderr, "grassflow train --resume %s", gf_show_name(e->path));
    fputc('\n', stderr);
}

/* The run stopped early (patience), now or, on a resume that trained nothing, before. */
static void early_stop(const progress *p, const gf_train_event *e) {
    fprintf(stderr, "%s%s %s early after step %lld of %lld: %s; %sthe run is finished (best.safetensors holds its "
            "best); to train on anyway, give it a new total above %lld: grassflow train --resume %s --steps N (N > "
            "%lld)\n", p->tty ? "\n" : "", p->label, p->events ? "stopped" : "had stopped", (long long)e->step,
            (long long)e->total_steps, e->what, p->events ? "" : "nothing was trained: ", (long long)e->total_steps,
            gf_show_name(e->path), (long long)e->total_steps);
}

static void on_event(const gf_train_event *e, void *ctx) {
    progress *p = ctx;
    char eta[32], el[32];
    switch (e->kind) {
    case GF_EV_STEP:
    case GF_EV_PROGRESS: {
        p->events++;
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
        p->events++;
        if (isnan(e->val_acc)) snprintf(metric, sizeof metric, "val ppl %s", cli_ppl(pb, sizeof pb, e->val_ppl, 2));
        else snprintf(metric, sizeof metric, "val acc %.4f", e->val_acc);
        fprintf(stderr, "%s%s eval step %lld: val loss %.4f  %s%s\n", p->tty ? "\n" : "", p->label, (long long)e->step,
                e->val_loss, metric, e->is_best ? "  (best)" : "");
        break;
    }
    case GF_EV_STOPPED:
        fprintf(stderr, "%s stopped after step %lld of %lld; ", p->label, (long long)e->step, (long long)e->total_steps);
        resume_with(p, e);
        break;
    case GF_EV_INTERRUPTED:
        fprintf(stderr, "%s%s interrupted by a signal after step %lld of %lld; the state is saved; ", p->tty ? "\n" : "",
                p->label, (long long)e->step, (long long)e->total_steps);
        resume_with(p, e);
        break;
    case GF_EV_EARLY_STOP: early_stop(p, e); break;
    case GF_EV_SKIPPED:
        fprintf(stderr, "%s%s step %lld skipped: %s is not finite (NaN or Inf); no update\n", p->tty ? "\n" : "",
                p->label, (long long)e->step, e->what);
        break;
    default: break;
    }
}

/* ---- signals: SIGINT / SIGTERM finish the step, save, and stop -------------------------------------------- */

static volatile sig_atomic_t g_signal, g_signals, g_relayed; /* g_relayed: the search's copy came first (its signal) */
static struct timespec g_relayed_at;                            /* when it came */
enum { GROUP_COPY_WINDOW_MS = 100 }; /* a group signal's two copies come microseconds apart, not a user's two */
static pid_t g_relay; /* a `grassflow search` that runs this process as a point, or 0 */

/* First signal: set the flag (the trainer saves and stops after its current step). A second one (GNU
 * timeout signals the child and then its process group; an impatient Ctrl-C) must not lose that save: it
 * is acknowledged. A third ends the process at once, saying so; the checkpoints and state already on disk
 * stay whole (every write is atomic). A signal sent to the whole process group reaches a point twice,
 * directly and through its search (src/cli/search.c), in either order (the sender's loop over the group
 * can be held up between the two): it counts once. So the search's copy of a signal already counted is
 * not counted, and when the search's copy came first, the next direct signal is taken as the group's own
 * copy and not counted either, if it is the same signal, sent by a process, within GROUP_COPY_WINDOW_MS (a later
 * one is the user's second signal: a search stopped by `kill PID` gets no direct copy). Only async-signal-safe
 * calls here (clock_gettime is one). Returns whether to abort (the third signal). */
static bool count_signal(int sig, const siginfo_t *si) {
    static const char again[] = "\ngrassflow: signal received again: still finishing the step and saving the "
                                "state; a third signal aborts without saving\n";
    static const char abort_msg[] = "\ngrassflow: third signal: aborting without saving this step; checkpoints "
                                    "and state saved before it are intact\n";
    const bool relayed = g_relay && si->si_code == SI_USER && si->si_pid == g_relay;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (relayed && g_signal) return false;
    if (!relayed && g_relayed == sig && si->si_code == SI_USER) {
        g_relayed = 0; /* one copy at most */
        const long long ms = (now.tv_sec - g_relayed_at.tv_sec) * 1000LL + (now.tv_nsec - g_relayed_at.tv_nsec) / 1000000;
        if (ms <= GROUP_COPY_WINDOW_MS) return false;
    }
    if (relayed) g_relayed = sig, g_relayed_at = now;
    ssize_t w = 0;
    if (!g_signal) g_signal = sig;
    if (++g_signals == 2) w = write(STDERR_FILENO, again, sizeof again - 1);
    if (g_signals >= 3) w = write(STDERR_FILENO, abort_msg, sizeof abort_msg - 1);
    (void)w; /* nothing to do if stderr is gone */
    return g_signals >= 3;
}

/* The handler masks SIGINT and SIGTERM in its own thread only: a process-directed signal can be handled by
 * any thread (an OpenMP or OpenBLAS worker too), so two signals that come at once can run two handlers at
 * once, one per thread. The lock (a lock-free atomic flag, async-signal-safe) keeps the count exact; a
 * handler never waits on its own thread, which cannot enter twice. */
static void on_signal(int sig, siginfo_t *si, void *uc) {
    static atomic_flag busy = ATOMIC_FLAG_INIT;
    (void)uc;
    const int saved_errno = errno;
    while (atomic_flag_test_and_set_explicit(&busy, memory_order_acquire)) {
    }
    const bool abort_now = count_signal(sig, si);
    atomic_flag_clear_explicit(&busy, memory_order_release);
    if (abort_now) {
        signal(sig, SIG_DFL); /* delivered when the handler returns: the signal's own exit status */
        raise(sig);
    }
    errno = saved_errno;
}

int caught_signal(void) { return (int)g_signal; }

int agreed_signal(void) {
    int sig = (int)g_signal;
    if (gf_dist_size() == 1) return sig;
    if (gf_dist_max_int(&sig)) return -1;
    if (sig) g_signal = sig; /* rank 0's SIGTERM and rank 1's SIGINT: every rank says and exits with the same */
    return sig;
}

/* Whether this process's parent runs the same executable: a search running its points (src/cli/search.c) */
static pid_t relay_parent(void) {
    char self[4096], parent[4096], path[64];
    const pid_t pp = getppid();
    snprintf(path, sizeof path, "/proc/%ld/exe", (long)pp);
    const ssize_t a = readlink("/proc/self/exe", self, sizeof self - 1), b = readlink(path, parent, sizeof parent - 1);
    if (a <= 0 || a != b) return 0;
    return memcmp(self, parent, (size_t)a) == 0 ? pp : 0;
}

void catch_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    g_relay = relay_parent();
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT); /* one handler at a time: the count stays exact */
    sigaddset(&sa.sa_mask, SIGTERM);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* ---- one training run ----------------------------------------------------------------------------- */

/* The recipe, config and tokenizer of the run saved in resume_dir (only --stop-at, --accept-changed-data and
 * a new total, --steps or --epochs, are kept from r); *info: what the library read (the model is rebuilt
 * from it). */
static int resume_recipe(recipe *r, const char *resume_dir, gf_run_info *info) {
    int rc = cli_copy_arg("train", "--resume", resume_dir, r->o.out_dir, sizeof r->o.out_dir);
    if (rc) return rc;
    if (gf_run_read(resume_dir, info)) return cli_error("%s", gf_last_error());
    const int64_t stop_at = r->o.stop_at;
    const bool accept = r->o.accept_changed_data;
    r->o = info->train;
    r->t = info->task;
    r->o.stop_at = stop_at;
    r->o.accept_changed_data = accept;
    if (r->resume_steps) r->o.steps = r->resume_steps; /* the trainer extends the schedule (gf_train_lr) */
    if (r->resume_epochs) {
        r->o.epochs = r->resume_epochs;
        r->o.steps = 0; /* steps would override epochs */
    }
    return EXIT_OK;
}

/* The --set options the task's configure (run after them) changed back: refused, naming the first that did
 * (sets[i], unless a later --set of the same key gave way to it) and the task's value, not ignored. */
static int sets_kept(const cli_model_opts *mo, const gf_task_ops *task, const char *cmd, const gf_config *cfg) {
    gf_config *again = malloc(sizeof *again);
    char diff[1024];
    int rc = again ? EXIT_OK : cli_error("out of memory"), i = mo->n_sets - 1, n = 0;
    for (; !rc && i >= 0 && n == 0; i--) {
        *again = *cfg;
        for (int k = i; k < mo->n_sets; k++) gf_config_set(again, mo->sets[k]); /* each applied before */
        if ((n = gf_config_diff(cfg, again, diff, sizeof diff)) < 0) rc = cli_error("%s", gf_last_error());
    }
    free(again);
    if (rc || n == 0) return rc;
    return cli_usage_error(cmd, "--set %s does not apply with --task %s: the task sets %s (the task's value vs the "
                           "--set's): what its data or its kind of model needs\nHINT: drop that --set (grassflow train "
                           "--help says what each task sets)", mo->sets[i + 1], task->name, diff);
}

int task_config(const cli_model_opts *mo, const gf_task_ops *task, const void *data, const void *options,
                const char *cmd, gf_config *cfg) {
    int rc = task->configure(data, options, cfg) ? cli_error("%s", gf_last_error()) : EXIT_OK;
    if (!rc && mo->n_sets && !(rc = cli_model_sets(mo, cmd, cfg)))
        rc = task->configure(data, options, cfg) ? cli_error("%s", gf_last_error()) : EXIT_OK;
    return rc || !mo->n_sets ? rc : sets_kept(mo, task, cmd, cfg);
}

/* A new run on a --backbone: the head's classes are the task's (the backbone's config has 2 until then). */
static int backbone_classes(const recipe *r, const void *data, gf_config *cfg) {
    const int64_t n = gf_task_n_labels(r->t.task, data);
    char kv[64];
    snprintf(kv, sizeof kv, "head.n_classes=%lld", (long long)n);
    if (n < 2 || gf_config_set(cfg, kv))
        return cli_error("--task %s with --backbone: the head needs the task's classes (%lld): %s", r->t.task->name,
                         (long long)n, n < 2 ? "a classification task has two or more" : gf_last_error());
    return EXIT_OK;
}

/* A new run's config: what the task's data decides, --dropout, and the model's name for the recipe. */
static int new_run_config(const cli_model_opts *mo, recipe *r, const void *data, gf_config *cfg) {
    const gf_task_ops *task = r->t.task;
    const int64_t max_len = cfg->max_len, vocab = cfg->vocab_size;
    int rc = r->backbone ? backbone_classes(r, data, cfg) : EXIT_OK;
    if (!rc) rc = task_config(mo, task, data, r->t.options.bytes, "train", cfg);
    if (rc) return rc;
    if (r->backbone && cfg->max_len != max_len) /* a pretrained position table cannot grow */
        return cli_error("--task %s needs examples of %lld positions; the backbone %s has %lld\nHINT: shorter examples "
                         "(the task's options: grassflow train --help)", task->name, (long long)cfg->max_len,
                         r->backbone, (long long)max_len);
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
        if (strlen(r->backbone) + strlen(r->head) + 32 > sizeof r->t.model)
            return cli_usage_error("train", "--backbone and --head are too long to record (%zu bytes at most)",
                                   sizeof r->t.model - 32);
        snprintf(r->t.model, sizeof r->t.model, "backbone %s, head %s%s", r->backbone, r->head,
                 r->freeze_backbone ? ", frozen" : "");
        return EXIT_OK;
    }
    return cli_copy_arg("train", mo->preset ? "--model" : "--config", mo->preset ? mo->preset : mo->config_path,
                        r->t.model, sizeof r->t.model);
}

/* The task's metric of model m on split `split` (gf_task_metric: perplexity, accuracy, its own). */
static int split_metric(gf_model *m, const recipe *r, const void *data, int split, double *metric) {
    gf_source *src = r->t.task->source(data, split, r->t.options.bytes, r->o.seed);
    gf_eval_result er = {0};
    int rc = !src || gf_evaluate_result(m, src, r->o.batch, &er) ? cli_error("%s", gf_last_error()) : EXIT_OK;
    if (!rc) *metric = gf_task_metric(r->t.task)->score(&er);
    gf_source_free(src);
    return rc;
}

/* The metric of OUT/best.safetensors on the test split (training measured it on dev). */
static int best_metrics(const recipe *r, const void *data, run_summary *sum) {
    char bp[GF_PATH_MAX];
    if (gf_path_join(bp, sizeof bp, r->o.out_dir, "best.safetensors")) return cli_error("%s", gf_last_error());
    gf_model *best = gf_model_load(bp);
    if (!best) return cli_error("%s", gf_last_error());
    int rc = split_metric(best, r, data, GF_TEST, &sum->test);
    gf_model_free(best);
    return rc;
}

/* The task's data (a resumed run's or a backbone's tokenizer fixed), into *data. */
static int load_data(const recipe *r, const gf_tokenizer *fixed, void **data) {
    gf_task_env e = gf_task_recipe_env(&r->t, cli_data_dir(), cli_cache_dir());
    e.fixed = fixed;
    e.no_cache = r->no_cache;
    return r->t.task->load(&e, r->t.options.bytes, data) ? cli_error("%s", gf_last_error()) : EXIT_OK;
}

int run_test_score(const recipe *r, const char *dir, double *test) {
    recipe rr = *r;
    gf_run_info info = {0};
    void *data = NULL;
    run_summary sum = {.test = NAN};
    int rc = resume_recipe(&rr, dir, &info);
    if (!rc) rc = load_data(&rr, info.tokenizer, &data);
    if (!rc) rc = best_metrics(&rr, data, &sum);
    if (data) rr.t.task->free(data);
    gf_run_info_free(&info);
    *test = sum.test;
    return rc;
}

/* The tokenizer's saved form (NULL: the task reads no text), after checking it against m's vocabulary. */
static int tokenizer_json(const gf_model *m, const gf_tokenizer *tok, char **json) {
    *json = NULL;
    if (!tok) return EXIT_OK;
    if (gf_model_config(m)->vocab_size != gf_tokenizer_vocab_size(tok))
        return cli_error("the model's vocab_size %lld differs from the tokenizer's vocabulary (%lld tokens)",
                         (long long)gf_model_config(m)->vocab_size, (long long)gf_tokenizer_vocab_size(tok));
    *json = gf_tokenizer_to_json(tok);
    return *json ? EXIT_OK : cli_error("out of memory starting training");
}

/* Train m on the task's training split, validating on its dev split. */
static int train_on(gf_model *m, recipe *r, const void *data, bool resume, const char *label, gf_train_result *res) {
    const gf_task_ops *task = r->t.task;
    char *tok_json = NULL, *made_from = NULL, what[256];
    gf_source *train = NULL, *valid = NULL;
    int rc = tokenizer_json(m, task->tokenizer ? task->tokenizer(data) : NULL, &tok_json);
    if (rc) return rc;
    train = task->source(data, GF_TRAIN, r->t.options.bytes, r->o.seed);
    valid = train ? task->source(data, GF_VALID, r->t.options.bytes, r->o.seed) : NULL;
    made_from = gf_task_recipe_to_json(&r->t);
    if (!valid || !made_from) {
        rc = cli_error("%s", made_from ? gf_last_error() : "out of memory starting training");
        goto done;
    }
    task->describe(data, what, sizeof what);
    if (gf_dist_rank() == 0) /* a data-parallel job says it once */
        fprintf(stderr, "%s: %s, %lld parameters, %s (%s), %lld steps/epoch, %s%s\n", gf_show_name(label),
                gf_show_name(r->t.model), (long long)gf_model_num_params(m), gf_show_name(r->t.corpus), what,
                (long long)gf_steps_per_epoch(&r->o, train),
                resume ? "resuming" : r->init_from ? "from the weights of --init-from" : "from scratch",
                gf_dist_size() > 1 ? cli_ranks_note(gf_dist_size(), r->o.batch) : "");
    /* set after the recipe is final: resuming reads it from the state, which knows neither */
    r->o.tokenizer_json = tok_json;
    r->o.made_from_json = made_from;
    r->o.interrupt = &g_signal;
    cli_test_hooks_install(&r->o);
    progress p = {.tty = isatty(2), .unit = task->unit, .resume_hint = r->resume_hint};
    if (gf_escape_name(p.label, sizeof p.label - 3, label) >= sizeof p.label - 3) strcat(p.label, "...");
    int trc = gf_train(m, train, valid, &r->o, resume, on_event, &p, res);
    if (p.tty && trc != GF_TRAIN_INTERRUPTED) fputc('\n', stderr);
    if (trc == GF_TRAIN_INTERRUPTED) { /* in a data-parallel job, perhaps by another rank's signal: agreed */
        const int sig = agreed_signal();
        rc = sig > 0 ? 128 + sig : cli_error("training stopped: %s", sig < 0 ? gf_last_error()
                                             : "another rank of the job is gone");
    }
    else if (trc) rc = cli_error("%s", gf_last_error());
done:
    r->o.tokenizer_json = NULL;
    r->o.made_from_json = NULL;
    free(tok_json);
    free(made_from);
    gf_source_free(train);
    gf_source_free(valid);
    return rc;
}

/* The model of a new run: its config made the task's, initialised, a backbone's weights copied in. */
static int new_model(const cli_model_opts *mo, recipe *r, const void *data, gf_config *cfg, gf_model **m) {
    int rc = new_run_config(mo, r, data, cfg);
    if (!rc && !(*m = gf_model_create(cfg))) rc = cli_error("%s", gf_last_error());
    if (rc) return rc;
    gf_model_init(*m, r->o.seed);
    if (r->backbone && gf_backbone_load(*m, r->backbone, r->freeze_backbone)) return cli_error("%s", gf_last_error());
    return EXIT_OK;
}

/* --init-from: the checkpoint's model (*m, with its weights) and tokenizer (*tok); the recipe records it. */
static int init_from_load(recipe *r, gf_model **m, gf_tokenizer **tok) {
    if (!(*m = gf_run_init_from(r->init_from, tok, &r->o))) return cli_error("--init-from: %s", gf_last_error());
    return cli_copy_arg("train", "--init-from", r->init_from, r->t.model, sizeof r->t.model);
}

/* The model of an --init-from run on the task's data: the checkpoint's config must be what the task makes of it
 * (its vocabulary, its classes: a change would not fit the weights); --dropout applies; *m (the checkpoint's
 * model) is replaced by a model of the final config holding every one of its tensors. */
static int init_from_model(const recipe *r, const void *data, gf_model **m) {
    gf_config cfg = *gf_model_config(*m);
    const cli_model_opts none = {0};
    char diff[1024];
    int rc = task_config(&none, r->t.task, data, r->t.options.bytes, "train", &cfg), n = 0;
    if (!rc && (n = gf_config_diff(gf_model_config(*m), &cfg, diff, sizeof diff)) < 0)
        rc = cli_error("%s", gf_last_error());
    if (!rc && n > 0)
        rc = cli_error("--init-from %s: --task %s on --corpus %s needs another model than the checkpoint's: %s (the "
                       "checkpoint's vs what the task makes of it)\nHINT: fine-tune on data the checkpoint's tokenizer "
                       "reads, with the task it was trained for", r->init_from, r->t.task->name, r->t.corpus, diff);
    char kv[64];
    snprintf(kv, sizeof kv, "dropout=%.9g", r->dropout);
    if (!rc && r->dropout >= 0 && gf_config_set(&cfg, kv)) rc = cli_error("%s", gf_last_error());
    gf_model *fresh = rc ? NULL : gf_model_create(&cfg);
    const char *const all[] = {"", NULL};
    if (!rc && (!fresh || gf_model_copy_tensors(fresh, *m, all) != gf_model_num_tensors(*m)))
        rc = cli_error("--init-from %s: %s", r->init_from, gf_last_error());
    gf_model_free(rc ? fresh : *m);
    if (!rc) *m = fresh;
    return rc;
}

/* The config of a head on r->backbone (gf_backbone_config), *tok the backbone's tokenizer. */
static int backbone_config(const recipe *r, gf_config *cfg, gf_tokenizer **tok) {
    return gf_backbone_config(r->backbone, r->head, cfg, tok) ? cli_error("%s", gf_last_error()) : EXIT_OK;
}

int run(const cli_model_opts *mo, recipe *r, const char *resume_dir, const char *label, int test_eval,
        run_summary *sum) {
    void *data = NULL;
    gf_model *m = NULL;
    gf_tokenizer *backbone_tok = NULL; /* the backbone's, or the --init-from checkpoint's */
    gf_run_info info = {0};
    gf_config cfg;
    int rc = resume_dir     ? resume_recipe(r, resume_dir, &info)
             : r->backbone  ? backbone_config(r, &cfg, &backbone_tok)
             : r->init_from ? init_from_load(r, &m, &backbone_tok)
                            : cli_model_base(mo, "train", &cfg); /* its --set options: new_run_config */
    const gf_task_ops *task = r->t.task;
    if (!rc) rc = load_data(r, resume_dir ? info.tokenizer : backbone_tok, &data);
    if (!rc && resume_dir && !(m = gf_run_model(&info))) rc = cli_error("%s", gf_last_error());
    if (!rc && r->init_from) rc = init_from_model(r, data, &m);
    else if (!rc && !resume_dir) rc = new_model(mo, r, data, &cfg, &m);
    if (rc) goto done;
    gf_train_result res;
    if ((rc = train_on(m, r, data, resume_dir != NULL, label, &res))) goto done;
    /* the best checkpoint's dev metric as training measured it */
    *sum = (run_summary){.params = gf_model_num_params(m), .trainable = gf_model_num_trainable(m), .steps = res.steps,
                         .val = res.best_val_score,
                         .tokens_per_s = res.tokens_per_s, .wall_s = res.wall_s, .test = NAN};
    const gf_tokenizer *tok = task->tokenizer ? task->tokenizer(data) : NULL;
    if (tok)
        snprintf(sum->tokenizer, sizeof sum->tokenizer, "%s (vocabulary %lld)", gf_tok_kind_name(gf_tokenizer_kind(tok)),
                 (long long)gf_tokenizer_vocab_size(tok));
    const bool score_best = test_eval || !gf_task_metric(task)->by_loss;
    /* a data-parallel job: rank 0 has written best.safetensors before any rank reads it back */
    if (score_best && gf_dist_barrier()) rc = cli_error("%s", gf_last_error());
    else if (score_best) rc = best_metrics(r, data, sum);
done:
    gf_model_free(m);
    if (data) task->free(data);
    gf_tokenizer_free(backbone_tok);
    gf_run_info_free(&info);
    return rc;
}

int force_spares_inputs(const char *dir, const char *const *inputs, int n) {
    static const char *const replaced[] = {"state.safetensors", "last.safetensors", "best.safetensors",
                                           "metrics.jsonl"};
    for (size_t i = 0; i < sizeof replaced / sizeof *replaced; i++) {
        char path[GF_PATH_MAX];
        if (gf_path_join(path, sizeof path, dir, replaced[i]) || cli_output_check(path, "--out", inputs, n, true, NULL))
            return cli_error("--force starts the run in %s over: %s", dir, gf_last_error());
    }
    return EXIT_OK;
}

/* The output directory must be a writable directory that holds no run (unless --force), or creatable (with
 * the folders above it that are missing, as mkdir -p: runs/x in a fresh clone); nothing is created here (the trainer creates it once everything else has been checked, so a rejected
 * run leaves nothing behind). The trainer checks for a run again, under the folder's lock. */
int out_dir_ok(const char *cmd, const char *dir, bool force) {
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) return cli_usage_error(cmd, "--out %s exists and is not a directory", dir);
        if (access(dir, W_OK) != 0)
            return cli_error("--out %s is not writable: %s\nHINT: %s", dir, strerror(errno), gf_write_hint(errno));
        if (gf_run_dir_check_new(dir, force)) return cli_error("--out %s", gf_last_error());
        return EXIT_OK;
    }
    char parent[GF_PATH_MAX];
    if (strlen(dir) + 64 > sizeof parent) /* room for the run's own files inside it */
        return cli_usage_error(cmd, "--out is %zu bytes long; the longest a run folder can be is %zu", strlen(dir),
                               sizeof parent - 64);
    snprintf(parent, sizeof parent, "%s", dir);
    const char *p = ".";
    for (char *slash; (slash = strrchr(parent, '/'));) { /* the nearest folder that exists: the rest is created */
        *slash = '\0';
        p = parent[0] ? parent : "/";
        if (stat(p, &st) == 0) break;
        p = ".";
    }
    if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
        return cli_error("cannot create --out %s: %s is not a directory", dir, p);
    if (access(p, W_OK) != 0)
        return cli_error("cannot create --out %s: %s is not writable: %s\nHINT: %s", dir, p, strerror(errno),
                         gf_write_hint(errno));
    return EXIT_OK;
}

