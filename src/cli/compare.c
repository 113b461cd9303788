/* grassflow compare: models trained with one recipe (once per seed), then a table of their scores on the test
 * split, written into --out as a summary; run again, it continues where it stopped. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compare.h"
#include "plot.h"
#include "grassflow_plugin.h" /* gf_clock_s */

static void compare_help(void) {
    printf("usage: grassflow compare --models A,B[,...] --corpus C [--out DIR] [--seeds S1,S2,...]\n"
           "                         [--set [MODEL:]KEY=VALUE]... [--json] [recipe options]\n\n"
           "Train each model with the same recipe (into DIR/MODEL, with --seeds DIR/MODEL/seed-S), score the test\n"
           "split with each best checkpoint, and print a table: parameters, best validation perplexity, test\n"
           "perplexity, training tokens/s, wall time, and the perplexity gap to the reference model.\n"
           "A task scored by accuracy: dev and test accuracy of each best checkpoint and the gap in points;\n"
           "with --backbone CKPT, the models are heads on that one backbone (the paper's Table 3 for snli).\n"
           "The table and the recipe (with the tokenizer, the OpenBLAS kernel and the CPU) are written into DIR as\n"
           "summary.json, summary.tsv and summary.md after each model, and every run's curves as curves.svg at\n"
           "the end (grassflow plot).\n\n"
           "Run the same command again to continue: models that finished are read back, a stopped one continues\n"
           "bit for bit from its state, new models and seeds start. Run again with a larger --steps (or --epochs),\n"
           "every run goes on from its state to the new total, as train --resume DIR --steps N does (the learning\n"
           "rate goes on from where it stands and falls to --min-lr at the new last step). Another recipe is\n"
           "refused, naming what differs (--force starts over; or another --out). Ctrl-C (SIGINT, SIGTERM)\n"
           "finishes the step, saves the state, prints the command that resumes, and exits with 128 + the signal.\n\n"
           "  --models LIST       comma-separated presets (or config files ending in .json); with\n"
           "                      --backbone, head files (configs/*/head-*.json: head stacks grassflow ships).\n"
           "                      The presets (grassflow info --presets: sizes and layers):\n"
           "                      ");
    cli_print_presets("                      ", 22);
    printf("\n"
           "  --reference MODEL   the model the gaps are measured against (default: the last one listed,\n"
           "                      transformer-6L in --models grassmann-6L,transformer-6L)\n"
           "  --seeds LIST        train each model once per seed (instead of --seed); the table shows the mean\n"
           "                      and the sample standard deviation (n - 1) across them\n"
           "  --set KEY=VALUE     applied to every model; --set MODEL:KEY=VALUE to that model only; every model's\n"
           "                      config with its --set options is checked against the recipe before the first\n"
           "                      trains (a --set the task would change back, vocab_size among them, is refused)\n"
           "  --json              print the summary (summary.json) on stdout instead of the table\n"
           "  --out DIR           where the runs and the summary go (default runs/compare)\n"
           "  --resume            continue the compare in DIR (as a rerun does), refusing a DIR that holds none\n"
           "  --force             start over in DIR: every model's run there is deleted and trained again\n"
           RECIPE_HELP_TASK
           "  --backbone CKPT     a classification task: a grassflow checkpoint or a Hugging Face DistilBERT\n"
           "                        folder; --models then lists head stack files, each trained on top of it\n"
           RECIPE_HELP_FREEZE RECIPE_HELP_TRAIN);
    cli_task_help();
}

/* ---- the command line ------------------------------------------------------------------------------------ */

enum { O_SEEDS = 3000 };

/* The command as given, without --force (or an abbreviation of it): what resumes the compare. */
static void resume_command(cmp_job *j, int argc, char **argv) {
    size_t len = (size_t)snprintf(j->resume_cmd, sizeof j->resume_cmd, "grassflow compare");
    for (int i = 1; i < argc && len < sizeof j->resume_cmd; i++) {
        const char *a = argv[i];
        if (strlen(a) >= 4 && !strncmp("--force", a, strlen(a))) continue;
        cli_shell_word(j->resume_cmd, sizeof j->resume_cmd, &len, a);
    }
}

typedef struct {
    const char *models, *seeds;
    cli_given given;
} cmp_args;

/* The flags into j and a; -1 after --help. */
static int parse(cmp_job *j, cmp_args *a, int argc, char **argv) {
    static const struct option base_opts[] = {RECIPE_LONGOPTS, {"models", 1, 0, O_MODELS}, {"set", 1, 0, OPT_SET},
                                              {"out", 1, 0, O_OUT}, {"reference", 1, 0, O_REFERENCE},
                                              {"seeds", 1, 0, O_SEEDS}, {"json", 0, 0, OPT_JSON},
                                              {"resume", 0, 0, O_RESUME}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    struct option longopts[96];
    recipe_longopts(base_opts, longopts, 96);
    int opt, idx = -1;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", longopts, &idx)) != -1) {
        cli_given_note(&a->given, longopts, idx);
        idx = -1;
        int h = recipe_option(&j->r, "compare", longopts, opt, optarg);
        if (h == 0 && opt == OPT_SET) h = cli_model_option(&j->sets, "compare", opt, optarg);
        if (h == 1) continue;
        if (h > 1) return h;
        if (opt == O_MODELS) a->models = optarg;
        else if (opt == O_OUT) j->out = optarg;
        else if (opt == O_REFERENCE) j->reference = optarg;
        else if (opt == O_SEEDS) a->seeds = optarg;
        else if (opt == OPT_JSON) j->json = true;
        else if (opt == O_RESUME) j->resume = true;
        else if (opt == 'h') { compare_help(); return -1; }
        else return cli_usage_error("compare", "unknown option");
    }
    if (optind < argc) return cli_usage_error("compare", "unexpected argument '%s'", argv[optind]);
    return EXIT_OK;
}

/* The flags checked together: what is required, what goes with what. */
static int check_flags(cmp_job *j, cmp_args *a) {
    recipe *r = &j->r;
    if (!a->models) return cli_usage_error("compare", "--models A,B is required");
    if (!r->t.corpus[0]) return cli_usage_error("compare", "--corpus is required");
    /* --out: a path every run's recipe records (cli_utf8_arg; --corpus and --tokenizer: recipe_option; a model's
     * name, its run folder's: cmp_models) */
    int rc = cli_utf8_arg("compare", "--out", j->out);
    if (!rc) rc = recipe_flags(r, &j->sets, &a->given, "compare");
    if (rc) return rc;
    if (r->head) return cli_usage_error("compare", "--head: with --backbone, --models lists the head files");
    if (r->freeze_backbone && !r->backbone) return cli_usage_error("compare", "--freeze-backbone needs --backbone");
    if (!r->o.feature_cache && !r->freeze_backbone)
        return cli_usage_error("compare", "--no-feature-cache goes with --freeze-backbone");
    if (a->seeds && cli_given_has(&a->given, "seed"))
        return cli_usage_error("compare", "--seed and --seeds: give one (--seeds trains each model once per seed)");
    j->warmup_given = cli_given_has(&a->given, "warmup");
    if (j->resume && r->o.overwrite)
        return cli_usage_error("compare", "--resume continues the compare in --out, --force starts it over: give one");
    return EXIT_OK;
}

/* ---- the runs -------------------------------------------------------------------------------------------- */

/* A data-parallel job's ranks compare the plan before they train: the models, the seeds and what --out
 * holds of each run (a rank that trained fewer models would leave the others waiting; each run's training
 * compares the rest: data, model, recipe). */
static int agree_plan(const cmp_job *j) {
    char models[MAX_COMPARE * 1030] = "", seeds[MAX_SEEDS * 24] = "", runs[MAX_COMPARE * MAX_SEEDS * 3] = "";
    for (int i = 0; i < j->n; i++)
        snprintf(models + strlen(models), sizeof models - strlen(models), "%s%s", i ? "," : "", j->m[i].name);
    for (int k = 0; k < j->n_seeds; k++)
        snprintf(seeds + strlen(seeds), sizeof seeds - strlen(seeds), "%s%llu", k ? "," : "", (unsigned long long)j->seeds[k]);
    for (int i = 0; i < j->n; i++)
        for (int k = 0; k < j->n_seeds; k++)
            snprintf(runs + strlen(runs), sizeof runs - strlen(runs), "%c%s", "PRSD"[j->m[i].runs[k].status],
                     j->m[i].runs[k].replace ? "!" : "");
    const gf_agree_item items[] = {
        {.group = "comparison", .label = "--models", .kind = GF_AGREE_TEXT, .text = models},
        {.group = "comparison", .label = "--seeds", .kind = GF_AGREE_TEXT, .text = seeds},
        {.group = "comparison", .label = "runs in --out (P new, R running, S stopped, D done, ! replaced by --force)",
         .kind = GF_AGREE_TEXT, .text = runs},
    };
    return gf_dist_agree("compare", items, 3) ? cli_error("%s", gf_last_error()) : EXIT_OK;
}

/* Everything checked, then --out (and with --seeds each model's folder) made and the summary written: an
 * interrupted compare can be resumed from its first step on. */
static int prepare(cmp_job *j, cmp_args *a) {
    int rc = cmp_models(j, a->models);
    if (!rc && a->seeds) rc = cmp_seeds(j, a->seeds);
    if (!rc && !a->seeds) j->n_seeds = 1, j->seeds[0] = j->r.o.seed;
    if (!rc) rc = cmp_check_models(j);
    if (!rc) rc = out_dir_ok("compare", j->out, true);
    if (!rc) rc = cmp_folders(j);
    if (!rc) rc = cmp_read_earlier(j);
    if (!rc) rc = agree_plan(j);
    /* a data-parallel job: every rank has read --out before rank 0 writes into it */
    if (!rc && gf_dist_barrier()) rc = cli_error("%s", gf_last_error());
    if (rc || gf_dist_rank() != 0) return rc;
    if (gf_mkdir_p(j->out)) return cli_error("--out: %s", gf_last_error());
    for (int i = 0; i < j->n && j->per_seed; i++) {
        char dir[GF_PATH_MAX];
        if (gf_path_join(dir, sizeof dir, j->out, j->m[i].folder) || gf_mkdir_p(dir))
            return cli_error("--out: %s", gf_last_error());
    }
    return cmp_write_summary(j);
}

/* The first difference between the trainer's recipe a state was saved with and this compare's for run u
 * (its seed), or NULL; extend: the total may differ (the run goes on to this compare's). */
static const char *recipe_differs(const gf_train_opts *a, const gf_train_opts *b, uint64_t seed, bool extend) {
    if (a->batch != b->batch) return "batch";
    if (a->accum != b->accum) return "accum";
    if (!extend && (a->steps != b->steps || a->epochs != b->epochs)) return "steps (or epochs)";
    if (a->warmup != b->warmup) return "warmup";
    if (a->eval_every != b->eval_every) return "eval_every";
    if (a->lr != b->lr || a->min_lr != b->min_lr) return "lr (or min_lr)";
    if (a->wd != b->wd || a->clip != b->clip) return "wd (or clip)";
    if (a->beta1 != b->beta1 || a->beta2 != b->beta2 || a->eps != b->eps) return "beta1, beta2 (or eps)";
    if (a->seed != seed) return "seed";
    return NULL;
}

/* A state in run u's folder must be one this compare made for model m there: its recipe names m's model and
 * this task, corpus and tokenizer, and its trainer's recipe is this compare's with u's seed. A state copied
 * from another model's folder, or left by another recipe, is refused: resumed, its numbers would go into m's
 * row. */
static int state_is_ours(const cmp_job *j, const cmp_model *m, const cmp_run *u) {
    gf_run_info info = {0};
    if (gf_run_read(u->dir, &info)) return cli_error("%s", gf_last_error());
    const char *want = m->mo.preset ? m->mo.preset : m->mo.config_path ? m->mo.config_path : "";
    const gf_task_recipe *t = &info.task;
    const char *what = j->r.backbone ? NULL /* heads on a backbone: the recipe names both (checked below) */
                       : strcmp(t->model, want) ? "model"
                       : NULL;
    if (!what && (t->task != j->r.t.task || strcmp(t->corpus, j->r.t.corpus))) what = "task or corpus";
    if (!what && strcmp(t->tokenizer, j->r.t.tokenizer)) what = "tokenizer";
    if (!what) what = recipe_differs(&info.train, &j->r.o, u->seed, j->extend);
    char model[sizeof t->model];
    snprintf(model, sizeof model, "%s", t->model);
    gf_run_info_free(&info);
    if (!what) return EXIT_OK;
    return cli_error("%s holds the state of a run (of %s) whose %s is not this compare's for %s: resumed, it would "
                     "put another run's numbers in %s's row\nHINT: move that folder away, or give --force to train "
                     "every model again", u->dir, model, what, m->name, m->name);
}

/* A folder that holds checkpoints but no state (deleted, or lost): continuing it would train over them. */
static int state_lost(const cmp_run *u) {
    static const char *const kept[] = {"best.safetensors", "last.safetensors"};
    for (int i = 0; i < 2; i++) {
        char path[GF_PATH_MAX];
        if (!gf_path_join(path, sizeof path, u->dir, kept[i]) && access(path, F_OK) == 0)
            return cli_error("%s holds %s but no state.safetensors: the run cannot be continued, and training it "
                             "again would replace its checkpoints\nHINT: put the state back, move the folder away, or "
                             "give --force to train every model again", u->dir, kept[i]);
    }
    return EXIT_OK;
}

/* Run k of model i: a new run, or the one its folder holds continued (finished: only read back). */
static int train_one(cmp_job *j, int i, int k) {
    cmp_model *m = &j->m[i];
    cmp_run *u = &m->runs[k];
    recipe ri = j->r;
    char label[1100];
    if (j->per_seed) snprintf(label, sizeof label, "%s seed-%llu", m->name, (unsigned long long)u->seed);
    else snprintf(label, sizeof label, "%s", m->name);
    ri.head = j->r.backbone ? m->name : NULL;
    ri.o.seed = u->seed;
    ri.resume_hint = j->resume_cmd;
    if (j->extend) { /* continued to the new total, as train --resume DIR --steps N (or --epochs N) */
        ri.resume_steps = j->r.o.steps;
        ri.resume_epochs = j->r.o.steps ? 0 : j->r.o.epochs;
    }
    memcpy(ri.o.out_dir, u->dir, sizeof ri.o.out_dir); /* the same size: GF_PATH_MAX */
    /* started before: continued from its state, or (killed before it saved one) started again; else new, a
     * run from before a --force replaced */
    char state[GF_PATH_MAX];
    const bool started = u->status == CMP_STOPPED && gf_run_dir_holds_run(u->dir, NULL, 0);
    const bool resume = started && !gf_path_join(state, sizeof state, u->dir, "state.safetensors") &&
                        access(state, F_OK) == 0;
    int rc = resume ? state_is_ours(j, m, u) : started ? state_lost(u) : EXIT_OK;
    if (rc) return rc;
    if (started && !resume && gf_dist_rank() == 0)
        fprintf(stderr, "%s: stopped before it saved a state: started again\n", gf_show_name(label));
    ri.o.overwrite = u->replace || (started && !resume);
    const double t0 = gf_clock_s(), before = u->s.wall_s, rate = u->s.tokens_per_s;
    run_summary s = {0};
    u->status = CMP_RUNNING; /* in the summary before it starts: a kill leaves a run the rerun continues */
    rc = cmp_write_summary(j);
    if (!rc) rc = run(&m->mo, &ri, resume ? u->dir : NULL, label, 1, &s);
    if (!rc) u->s = s;
    if (!rc && s.tokens_per_s == 0 && rate > 0) u->s.tokens_per_s = rate; /* finished before: scored again only */
    u->s.wall_s = before + (gf_clock_s() - t0);
    u->status = !rc ? CMP_DONE : gf_run_dir_holds_run(u->dir, NULL, 0) ? CMP_STOPPED : CMP_PENDING;
    return rc;
}

/* What a signal stopped (run k of model i: in the middle, just finished, or not started yet), and the
 * command that resumes. */
static int interrupted(const cmp_job *j, int i, int k, int sig) {
    int done = 0;
    char what[1100], where[GF_PATH_MAX + 1200];
    const cmp_run *u = &j->m[i].runs[k];
    if (gf_dist_rank() != 0) return 128 + sig; /* a data-parallel job: rank 0 says it */
    for (int a = 0; a < j->n; a++)
        for (int b = 0; b < j->n_seeds; b++) done += j->m[a].runs[b].status == CMP_DONE;
    if (j->per_seed) snprintf(what, sizeof what, "%s seed %llu", j->m[i].name, (unsigned long long)u->seed);
    else snprintf(what, sizeof what, "%s", j->m[i].name);
    if (u->status == CMP_STOPPED)
        snprintf(where, sizeof where, "during %s; its state is saved in %s", gf_show_name(what), gf_show_name(u->dir));
    else
        snprintf(where, sizeof where, u->status == CMP_DONE ? "after %s finished" : "before %s started",
                 gf_show_name(what));
    fprintf(stderr, "grassflow compare: interrupted by %s %s; runs finished: %d of %d (%s/summary.json)\nresume with: ",
            sig == SIGTERM ? "SIGTERM" : "SIGINT", where, done, j->n * j->n_seeds, gf_show_name(j->out));
    gf_print_lines(stderr, j->resume_cmd); /* shell-quoted: its control bytes shown as \xNN */
    fputc('\n', stderr);
    return 128 + sig;
}

/* Every run not finished yet, the summary rewritten after each; stops at a signal or an error. */
/* OUT/curves.svg: every run's training and validation curves, one colour each (grassflow plot); past the
 * runs one plot can hold, each model's first seed. A plot that fails is a warning: the runs and the
 * summary stand. */
static void plot_all(const cmp_job *j) {
    if (gf_dist_rank() != 0) return; /* a data-parallel job: rank 0 alone writes */
    const char *dirs[MAX_COMPARE * MAX_SEEDS];
    const int per = j->n * j->n_seeds > CLI_PLOT_MAX_RUNS ? 1 : j->n_seeds;
    int n = 0;
    for (int i = 0; i < j->n; i++)
        for (int k = 0; k < per; k++) dirs[n++] = j->m[i].runs[k].dir;
    char out[GF_PATH_MAX];
    if (per < j->n_seeds)
        fprintf(stderr, "note: %d runs are more than one plot holds (%d); %s/curves.svg shows each model's first "
                "seed (grassflow plot draws any of them)\n", j->n * j->n_seeds, CLI_PLOT_MAX_RUNS,
                gf_show_name(j->out));
    if (gf_path_join(out, sizeof out, j->out, "curves.svg")) cli_error("%s", gf_last_error());
    else if (cli_plot_runs(dirs, n, out, NULL) == EXIT_OK) return;
    fprintf(stderr, "grassflow compare: warning: no curves.svg (the error above); the runs and the summary are "
            "complete\n");
}

static int run_all(cmp_job *j) {
    catch_signals();
    int sig;
    /* every rank of a data-parallel job passes each agreed_signal() together (their runs' statuses agree):
     * a signal that reached one rank between two runs stops them all there */
    for (int i = 0; i < j->n; i++)
        for (int k = 0; k < j->n_seeds; k++) {
            if (j->m[i].runs[k].status == CMP_DONE) continue;
            if ((sig = agreed_signal()) < 0) return cli_error("%s", gf_last_error());
            if (sig) return interrupted(j, i, k, sig); /* while reading a finished one */
            int rc = train_one(j, i, k), wrc = cmp_write_summary(j);
            const bool last = i == j->n - 1 && k == j->n_seeds - 1;
            if ((rc > 0 && rc < 128) || wrc) return rc ? rc : wrc; /* an error (on one rank: main ends the job) */
            if ((sig = agreed_signal()) < 0) return cli_error("%s", gf_last_error());
            if (sig && (rc || !last)) return interrupted(j, i, k, sig);
            if (rc) return rc;
        }
    plot_all(j);
    if (!j->json) {
        cmp_print_table(j);
        return EXIT_OK;
    }
    char *text = cmp_summary_text(j);
    if (!text) return cli_error("out of memory printing the summary");
    printf("%s\n", text);
    free(text);
    return EXIT_OK;
}

int cmd_compare(int argc, char **argv) {
    cmp_job *j = calloc(1, sizeof *j);
    if (!j) return cli_error("out of memory");
    cmp_args a = {0};
    recipe_init(&j->r);
    j->out = "runs/compare";
    resume_command(j, argc, argv); /* before getopt reorders argv */
    int rc = parse(j, &a, argc, argv);
    if (!rc) rc = check_flags(j, &a);
    if (!rc) rc = prepare(j, &a);
    if (!rc) rc = run_all(j);
    cmp_free_carried(j);
    free(j);
    return rc < 0 ? EXIT_OK : rc;
}
