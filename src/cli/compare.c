/* grassflow compare: models trained with one recipe, then a table of their scores on the test split. */
#include <errno.h>
#include <getopt.h>
#include <glob.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run.h"

/* ---- compare ---------------------------------------------------------------------------------------------- */

static void compare_help(void) {
    printf("usage: grassflow compare --models A,B[,...] --corpus C [--out DIR] [recipe options]\n\n"
           "Train each model with the same recipe (into DIR/MODEL, default DIR runs/compare), score the test split\n"
           "with each best checkpoint, and print a table: parameters, best validation perplexity, test\n"
           "perplexity, training tokens/s, wall time, and the perplexity gap to the reference model.\n"
           "A task scored by accuracy: dev and test accuracy of each best checkpoint and the gap in points;\n"
           "with --backbone CKPT, the models are heads on that one backbone (the paper's Table 3 for snli).\n\n"
           "  --models LIST       comma-separated presets (or config files ending in .json); with\n"
           "                      --backbone, head files (configs/*/head-*.json: head stacks grassflow ships)\n"
           "  --reference MODEL   the model the gaps are measured against (default: the last one listed,\n"
           "                      transformer-6L in --models grassmann-6L,transformer-6L)\n"
           "  --set KEY=VALUE     applied to every model\n" RECIPE_HELP
           "  --out DIR           where the runs go (default runs/compare)\n");
    cli_task_help();
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

/* The task's options as "max_sent 48" (none: ""). */
static void options_text(const gf_task_recipe *t, char *buf, size_t n) {
    buf[0] = '\0';
    for (int i = 0; i < t->task->n_keys; i++) {
        char *v = gf_task_option_get(t, t->task->keys[i].name);
        snprintf(buf + strlen(buf), n - strlen(buf), "%s%s %s", i ? ", " : "", t->task->keys[i].name, v ? v : "?");
        free(v);
    }
}

/* The comparison: the task's metric (perplexity or accuracy) of each best checkpoint, and the gap on test. */
static void print_table(const recipe *r, char **names, int n, int ref, const run_summary *s) {
    const bool ppl = !strcmp(r->t.task->metric, "ppl");
    char rate[32], opts[256];
    snprintf(rate, sizeof rate, "%s/s", r->t.task->unit);
    printf("\n%-20s %12s %12s %14s %10s %10s %10s %12s\n", "model", "params", "trainable", ppl ? "best val ppl" : "dev acc",
           ppl ? "test ppl" : "test acc", rate, "wall", "gap (test)");
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
    options_text(&r->t, opts, sizeof opts);
    printf("recipe: task %s%s%s%s, %s, %lld steps, batch %lld, lr %g -> %g, warmup %lld, seed %llu\n", r->t.task->name,
           opts[0] ? " (" : "", opts, opts[0] ? ")" : "", r->t.corpus, (long long)s[0].steps, (long long)r->o.batch,
           (double)r->o.lr, (double)r->o.min_lr, (long long)r->o.warmup, (unsigned long long)r->o.seed);
}

/* With --backbone, a --models entry that is no file: the head files are meant. */
static int not_a_head(const char *name) {
    char dir[GF_PATH_MAX + 32], real[PATH_MAX], pattern[PATH_MAX + GF_PATH_MAX + 64], heads[1024] = "";
    glob_t g;
    snprintf(dir, sizeof dir, "%.*s/../configs", GF_PATH_MAX, cli_data_dir()); /* the source tree's */
    snprintf(pattern, sizeof pattern, "%s/*/head-*.json", realpath(dir, real) ? real : dir);
    if (glob(pattern, 0, NULL, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc; i++)
            snprintf(heads + strlen(heads), sizeof heads - strlen(heads), "%s%s", i ? ", " : "", g.gl_pathv[i]);
    globfree(&g);
    return cli_usage_error("compare", "--models %s: no such file; with --backbone, --models lists head stack files "
                           "(JSON, one stack each), not presets; the heads grassflow ships: %s", name,
                           heads[0] ? heads : "configs/*/head-*.json in its source tree");
}

/* Model i of --models: a preset or config file, or with a backbone a head file; checked before any run. */
static int compare_model(const cli_model_opts *base, const recipe *r, const char *name, cli_model_opts *mo) {
    const char *backbone = r->backbone;
    gf_config c;
    *mo = *base;
    if (backbone && access(name, F_OK) != 0) return not_a_head(name);
    if (backbone) {
        gf_tokenizer *tok = NULL;
        int rc = gf_backbone_config(backbone, name, &c, &tok) ? cli_error("%s", gf_last_error()) : EXIT_OK;
        gf_tokenizer_free(tok);
        return rc;
    }
    size_t len = strlen(name);
    if (len > 5 && !strcmp(name + len - 5, ".json")) mo->config_path = name;
    else mo->preset = name;
    int rc = cli_model_base(mo, "compare", &c);
    return rc ? rc : task_config(mo, r->t.task, NULL, r->t.options.bytes, "compare", &c);
}

int cmd_compare(int argc, char **argv) {
    static const struct option base_opts[] = {RECIPE_LONGOPTS, {"models", 1, 0, O_MODELS}, {"set", 1, 0, OPT_SET},
                                              {"out", 1, 0, O_OUT}, {"reference", 1, 0, O_REFERENCE},
                                              {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    struct option longopts[96];
    recipe_longopts(base_opts, longopts, 96);
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
        int h = recipe_option(&r, "compare", longopts, opt, optarg);
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
    if (!r.t.corpus[0]) return cli_usage_error("compare", "--corpus is required");
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
    if (gf_mkdir_p(out)) return cli_error("--out: %s", gf_last_error());
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
