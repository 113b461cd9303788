/* grassflow train: one training run, new or resumed (the recipe and the run itself: cli/run.c). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

static void train_help(void) {
    printf("usage: grassflow train (--model PRESET | --config FILE) [--set KEY=VALUE]... --corpus C --out DIR\n"
           "                       [recipe options] [--save-every N] [--patience K]\n"
           "       grassflow train --init-from CKPT --corpus C --out DIR [recipe options]\n"
           "       grassflow train --resume DIR [--steps N | --epochs N] [--stop-at STEP] [--accept-changed-data]\n\n"
           "Train a model on a task. Writes DIR/last.safetensors, DIR/best.safetensors (best validation loss),\n"
           "DIR/state.safetensors (weights, AdamW moments, step: what --resume needs) and DIR/metrics.jsonl.\n"
           "Progress goes to stderr; the final summary to stdout.\n\n");
    cli_model_help();
    printf(RECIPE_HELP
           "  --out DIR           output directory (created if missing)\n"
           "  --save-every N      also keep the model every N steps as DIR/step-NNNNNN.safetensors (each a\n"
           "                      checkpoint like last.safetensors; default 0: none)\n"
           "  --patience K        early stopping: end the run once K evaluations in a row (every --eval-every\n"
           "                      steps) found no better validation score than the best; the run is then\n"
           "                      finished, and its state says why (default 0: never)\n"
           "  --init-from CKPT    a new run (step 0, fresh optimizer moments, its own schedule) from the weights\n"
           "                      of a grassflow checkpoint: fine-tuning. The model's config and tokenizer are\n"
           "                      the checkpoint's (--model, --config, --set and --tokenizer are refused;\n"
           "                      --dropout applies); the checkpoint is scored on the validation split first\n"
           "                      (step 0, the first best); the recipe records the file (path, size, FNV-1a)\n"
           "  --resume DIR        continue the run in DIR exactly where its state was saved\n"
           "  --steps N, --epochs N  with --resume: the run's new total, to extend a finished or stopped run\n"
           "                      (never below the steps it has taken). The learning rate goes on from the step\n"
           "                      the run stands at: from its value there it falls to --min-lr at the new last\n"
           "                      step along a half cosine (a finished run goes on at --min-lr; while the warmup\n"
           "                      is not over, the schedule becomes that of an N-step run from the start). The\n"
           "                      recipe records it, so a later --resume follows it. A run that stopped early\n"
           "                      (--patience) goes on only this way, with a total above the one it had\n"
           "  --stop-at STEP      stop after STEP (saving the state), as if interrupted\n"
           "  --accept-changed-data  with --resume: go on although the training or validation data differ from\n"
           "                      those the state was saved with (refused otherwise: the run would no longer\n"
           "                      continue bit for bit)\n");
    cli_task_help();
}

/* --stop-at, --save-every, --patience: counts. */
static int run_count_option(recipe *r, int opt, const char *arg) {
    const char *flag = opt == O_STOPAT ? "--stop-at" : opt == O_SAVEEVERY ? "--save-every" : "--patience";
    int64_t v;
    int rc = cli_parse_i64("train", flag, arg, opt == O_STOPAT ? 1 : 0, INT64_MAX / 2, &v);
    if (rc) return rc;
    if (opt == O_STOPAT) r->o.stop_at = v;
    else if (opt == O_SAVEEVERY) r->o.save_every = v;
    else r->o.patience = v;
    return EXIT_OK;
}

/* --resume DIR: the saved run's own model and recipe; only a new total (--steps or --epochs) may be given. */
static int resume_flags(recipe *r, const cli_model_opts *mo, const cli_given *given) {
    const bool steps = cli_given_has(given, "steps"), epochs = cli_given_has(given, "epochs");
    if (steps && epochs) return cli_usage_error("train", "--steps and --epochs with --resume: give one, the run's new total");
    if (mo->preset || mo->config_path || mo->n_sets || mo->vocab || r->n_recipe_flags - steps - epochs || r->backbone ||
        r->head || r->init_from || cli_given_has(given, "out") || cli_given_has(given, "save-every") ||
        cli_given_has(given, "patience"))
        return cli_usage_error("train", "--resume DIR continues the saved run with its own model and recipe; "
                               "give only --resume (and optionally --steps or --epochs, --stop-at, "
                               "--accept-changed-data)");
    r->resume_steps = steps ? r->o.steps : 0;
    r->resume_epochs = epochs ? r->o.epochs : 0;
    return EXIT_OK;
}

/* --init-from CKPT: the model is the checkpoint's, so what would make another one is refused. */
static int init_from_flags(const recipe *r, const cli_model_opts *mo) {
    if (mo->preset || mo->config_path || mo->n_sets || mo->vocab)
        return cli_usage_error("train", "--init-from %s: the model is the checkpoint's (its config and weights); "
                               "--model, --config, --set and --vocab would change its architecture\nHINT: drop them "
                               "(--dropout and the recipe options apply)", r->init_from);
    if (r->backbone || r->head || r->freeze_backbone)
        return cli_usage_error("train", "--init-from and --backbone/--head/--freeze-backbone: give one (--init-from "
                               "takes a whole model, --backbone its blocks under a new head)");
    if (r->t.tokenizer[0])
        return cli_usage_error("train", "--tokenizer does not apply with --init-from: the run reads the checkpoint's "
                               "own tokenizer\nHINT: drop --tokenizer");
    return EXIT_OK;
}

/* A new run: the task, the model's source and the output folder. */
static int new_run_flags(recipe *r, const cli_model_opts *mo, const cli_given *given, const char *out) {
    if (!r->t.corpus[0]) return cli_usage_error("train", "--corpus is required");
    int rc = r->init_from ? init_from_flags(r, mo) : EXIT_OK;
    if (!rc) rc = recipe_flags(r, mo, given, "train");
    if (rc) return rc;
    if (!r->backbone != !r->head) return cli_usage_error("train", "--backbone CKPT and --head FILE go together");
    if (r->freeze_backbone && !r->backbone) return cli_usage_error("train", "--freeze-backbone needs --backbone");
    if (!r->o.feature_cache && !r->freeze_backbone)
        return cli_usage_error("train", "--no-feature-cache goes with --freeze-backbone (only a frozen backbone's "
                               "output is kept)");
    if (r->backbone && (mo->preset || mo->config_path || mo->n_sets || mo->vocab))
        return cli_usage_error("train", "--backbone: the model is the backbone with --head on top; drop --model, "
                               "--config, --set and --vocab");
    if (r->o.patience > 0 && r->o.eval_every == 0)
        return cli_usage_error("train", "--patience %lld counts the evaluations made every --eval-every steps, and "
                               "--eval-every is 0\nHINT: pass --eval-every N (N > 0) with --patience",
                               (long long)r->o.patience);
    if (!out) return cli_usage_error("train", "--out DIR is required");
    rc = out_dir_ok("train", out, r->o.overwrite);
    const char *inputs[] = {r->init_from, r->backbone, r->head, mo->config_path};
    if (!rc && r->o.overwrite) rc = force_spares_inputs(out, inputs, 4);
    if (rc) return rc;
    snprintf(r->o.out_dir, sizeof r->o.out_dir, "%s", out); /* fits: out_dir_ok checked its length */
    return EXIT_OK;
}

/* --out, --resume, --init-from, --config: paths the recipe records, so UTF-8 (cli_utf8_arg); 0 (valid, or
 * not one of them: the option is handled on), or a usage error's exit code. */
static int path_option(int opt, const char *arg) {
    const char *flag = opt == O_OUT ? "--out" : opt == O_RESUME ? "--resume" : opt == O_INITFROM ? "--init-from"
                       : opt == OPT_CONFIG ? "--config" : NULL;
    return flag ? cli_utf8_arg("train", flag, arg) : 0;
}

int cmd_train(int argc, char **argv) {
    static const struct option base[] = {CLI_MODEL_LONGOPTS, RECIPE_LONGOPTS, {"out", 1, 0, O_OUT},
                                         {"resume", 1, 0, O_RESUME}, {"stop-at", 1, 0, O_STOPAT},
                                         {"accept-changed-data", 0, 0, O_ACCEPT}, {"init-from", 1, 0, O_INITFROM},
                                         {"save-every", 1, 0, O_SAVEEVERY}, {"patience", 1, 0, O_PATIENCE},
                                         {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    struct option longopts[96];
    recipe_longopts(base, longopts, 96);
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
        int h = path_option(opt, optarg);
        if (h == 0) h = cli_model_option(&mo, "train", opt, optarg);
        if (h == 0) h = recipe_option(&r, "train", longopts, opt, optarg);
        if (h == 1) continue;
        if (h > 1) return h;
        if (opt == O_OUT) out = optarg;
        else if (opt == O_RESUME) resume = optarg;
        else if (opt == O_ACCEPT) r.o.accept_changed_data = true;
        else if (opt == O_INITFROM) r.init_from = optarg;
        else if (opt == O_STOPAT || opt == O_SAVEEVERY || opt == O_PATIENCE) {
            int rc = run_count_option(&r, opt, optarg);
            if (rc) return rc;
        } else if (opt == 'h') { train_help(); return EXIT_OK; }
        else return cli_usage_error("train", "unknown option");
    }
    if (optind < argc) return cli_usage_error("train", "unexpected argument '%s'", argv[optind]);
    if (r.o.accept_changed_data && !resume)
        return cli_usage_error("train", "--accept-changed-data goes with --resume (a new run has no earlier data)");
    int rc = resume ? resume_flags(&r, &mo, &given) : new_run_flags(&r, &mo, &given, out);
    if (rc) return rc;
    run_summary s;
    catch_signals();
    rc = run(&mo, &r, resume, "train", 0, &s);
    if (rc) return rc;
    char wt[32], pb[32];
    fmt_time(wt, sizeof wt, s.wall_s);
    const gf_metric *mt = gf_task_metric(r.t.task);
    if (mt == &gf_metric_ppl) /* the perplexity of the best validation */
        printf("model %s  params %lld  trainable %lld  steps %lld  best val ppl %s  train %.0f tok/s  wall %s  "
               "checkpoints %s/\n", gf_show_name(r.t.model), (long long)s.params, (long long)s.trainable,
               (long long)s.steps,
               cli_ppl(pb, sizeof pb, s.val, 2), s.tokens_per_s, wt, gf_show_name(r.o.out_dir));
    else
        printf("model %s  params %lld  trainable %lld  steps %lld  best checkpoint: dev %s %.*f  test %s %.*f  "
               "train %.0f %s/s  wall %s  checkpoints %s/\n", gf_show_name(r.t.model), (long long)s.params,
               (long long)s.trainable, (long long)s.steps, mt->title, mt->decimals, s.val, mt->title, mt->decimals,
               s.test, s.tokens_per_s, r.t.task->unit, wt, gf_show_name(r.o.out_dir));
    return EXIT_OK;
}

