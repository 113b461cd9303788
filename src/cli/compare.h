/* grassflow compare: what its parts share (compare.c runs it, compare_plan.c checks the models, their --set
 * options and folders, compare_resume.c reads what an earlier compare into the same --out left, and
 * compare_summary.c writes the summary and prints the table). */
#ifndef GF_CLI_COMPARE_H
#define GF_CLI_COMPARE_H

#include <cjson/cJSON.h>

#include "run.h"

enum { MAX_COMPARE = 16, MAX_SEEDS = 16 };

/* pending: not started by this compare (a run its folder holds is not its own); running: started (what a
 * kill leaves); stopped: started and stopped (a signal, an error); done: finished and scored. */
typedef enum { CMP_PENDING, CMP_RUNNING, CMP_STOPPED, CMP_DONE } cmp_status;

/* One training run of the comparison: a model with one seed. */
typedef struct {
    uint64_t seed;
    cmp_status status;
    bool replace;            /* --force: a run its folder holds from before is replaced (until it starts) */
    run_summary s;           /* CMP_DONE: its numbers; wall_s (also while stopped): every part's, summed */
    char dir[GF_PATH_MAX];   /* its run folder: OUT/MODEL, or with --seeds OUT/MODEL/seed-S */
} cmp_run;

typedef struct {
    const char *name;        /* as --models gives it */
    char folder[1024];       /* its folder under --out: the name with '/' as '_' */
    cli_model_opts mo;       /* its preset or file and the --set options that apply to it */
    cmp_run runs[MAX_SEEDS];
    cJSON *carried_runs;     /* its runs of other seeds that another compare on this --out made (proven) */
} cmp_model;

typedef struct {
    recipe r;
    cli_model_opts sets;     /* every --set as given: KEY=VALUE and MODEL:KEY=VALUE */
    const char *out, *reference;
    bool json, resume;
    bool warmup_given;       /* --warmup given: else a rerun keeps the earlier compare's warmup */
    bool extend;             /* a rerun with a larger --steps or --epochs than the earlier compare's: every run
                              * goes on from its state to the new total (as train --resume --steps N) */
    char list[1024];         /* --models, cut at the commas */
    int n, ref, n_seeds;
    uint64_t seeds[MAX_SEEDS];
    bool per_seed;           /* --seeds given: a folder per seed */
    cmp_model m[MAX_COMPARE];
    char resume_cmd[8192];   /* the command as given, without --force: what resumes this compare */
    cJSON *carried;          /* the models of other compares on this --out, as their folders prove them */
} cmp_job;

/* compare_plan.c: --models, --seeds and --set into j->m (each model checked with its --set options before
 * anything runs), and each run's folder. */
int cmp_models(cmp_job *j, const char *models);
int cmp_seeds(cmp_job *j, const char *arg);
int cmp_check_models(cmp_job *j);
int cmp_folders(cmp_job *j);

/* compare_resume.c: what OUT/summary.json of an earlier compare says (refused if its recipe differs, or a
 * model folder holds a run it does not know), the runs it finished marked done. */
int cmp_read_earlier(cmp_job *j);

/* compare_merge.c: summary.json as a cache of what the run folders prove. cmp_merge_summary carries into j
 * the runs of a summary (read from disk) that j does not own, each as its folder proves it;
 * cmp_lock_summary locks OUT/.grassflow-summary.lock, its path into path[0..n) (a descriptor for
 * gf_unlock_file, or -1 with gf_last_error). */
void cmp_merge_summary(cmp_job *j, const cJSON *summary);
int cmp_lock_summary(const cmp_job *j, char *path, size_t n);
void cmp_free_carried(cmp_job *j);
bool cmp_score_ok(const cmp_job *j, double v); /* a perplexity >= 1 or an accuracy in [0, 1] */
bool cmp_count_ok(double v);                    /* an integer in [1, 2^53] */
/* compare_resume.c: whether v, a string of summary.json, is s as summary.json writes it (a byte that is
 * not UTF-8 as U+FFFD). */
bool cmp_is_string(const cJSON *v, const char *s);
/* compare_resume.c: the step OUT/.../state.safetensors is at (-1: none, or not readable). */
long long cmp_state_step(const char *dir);

/* compare_summary.c */
cJSON *cmp_recipe_json(const cmp_job *j);   /* what the runs share (what a rerun must repeat) */
/* OUT/summary.json, summary.tsv and summary.md, each written atomically, under the summary's lock, with the
 * runs of other compares that the summary on disk holds now carried over (cmp_merge_summary). */
int cmp_write_summary(cmp_job *j);
/* The summary as JSON text (malloc'd). */
char *cmp_summary_text(const cmp_job *j);
void cmp_print_table(const cmp_job *j);
/* The keys of the recipe that describe the machine or what the data gave, not what was asked: not
 * compared on a rerun. */
bool cmp_fact_key(const char *key);

#endif
