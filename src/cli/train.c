/* grassflow train: one training run, new or resumed (the recipe and the run itself: cli/run.c). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

static void train_help(void) {
    printf("usage: grassflow train (--model PRESET | --config FILE) [--set KEY=VALUE]... --corpus C --out DIR\n"
           "                       [recipe options]\n"
           "       grassflow train --resume DIR [--stop-at STEP] [--accept-changed-data]\n\n"
           "Train a model on a task. Writes DIR/last.safetensors, DIR/best.safetensors (best validation loss),\n"
           "DIR/state.safetensors (weights, AdamW moments, step: what --resume needs) and DIR/metrics.jsonl.\n"
           "Progress goes to stderr; the final summary to stdout.\n\n" CLI_MODEL_HELP RECIPE_HELP
           "  --out DIR           output directory (created if missing)\n"
           "  --resume DIR        continue the run in DIR exactly where its state was saved\n"
           "  --stop-at STEP      stop after STEP (saving the state), as if interrupted\n"
           "  --accept-changed-data  with --resume: go on although the training or validation data differ from\n"
           "                      those the state was saved with (refused otherwise: the run would no longer\n"
           "                      continue bit for bit)\n");
    cli_task_help();
}

int cmd_train(int argc, char **argv) {
    static const struct option base[] = {CLI_MODEL_LONGOPTS, RECIPE_LONGOPTS, {"out", 1, 0, O_OUT},
                                         {"resume", 1, 0, O_RESUME}, {"stop-at", 1, 0, O_STOPAT},
                                         {"accept-changed-data", 0, 0, O_ACCEPT}, {"help", 0, 0, 'h'},
                                         {0, 0, 0, 0}};
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
        int h = cli_model_option(&mo, "train", opt, optarg);
        if (h == 0) h = recipe_option(&r, "train", longopts, opt, optarg);
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
        if (!r.t.corpus[0]) return cli_usage_error("train", "--corpus is required");
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
    if (!strcmp(r.t.task->metric, "ppl")) /* the perplexity of the best validation */
        printf("model %s  params %lld  trainable %lld  steps %lld  best val ppl %s  train %.0f tok/s  wall %s  "
               "checkpoints %s/\n", r.t.model, (long long)s.params, (long long)s.trainable, (long long)s.steps,
               cli_ppl(pb, sizeof pb, s.val, 2), s.tokens_per_s, wt, r.o.out_dir);
    else
        printf("model %s  params %lld  trainable %lld  steps %lld  best checkpoint: dev accuracy %.4f  test accuracy %.4f  "
               "train %.0f %s/s  wall %s  checkpoints %s/\n", r.t.model, (long long)s.params, (long long)s.trainable,
               (long long)s.steps, s.val, s.test, s.tokens_per_s, r.t.task->unit, wt, r.o.out_dir);
    return EXIT_OK;
}

