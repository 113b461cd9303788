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
} cmp_model;

typedef struct {
    recipe r;
    cli_model_opts sets;     /* every --set as given: KEY=VALUE and MODEL:KEY=VALUE */
    const char *out, *reference;
    bool json, resume;
    char list[1024];         /* --models, cut at the commas */
    int n, ref, n_seeds;
    uint64_t seeds[MAX_SEEDS];
    bool per_seed;           /* --seeds given: a folder per seed */
    cmp_model m[MAX_COMPARE];
    char resume_cmd[8192];   /* the command as given, without --force: what resumes this compare */
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

/* compare_summary.c */
cJSON *cmp_recipe_json(const cmp_job *j);   /* what the runs share (what a rerun must repeat) */
/* OUT/summary.json, summary.tsv and summary.md, each written atomically. */
int cmp_write_summary(const cmp_job *j);
/* The summary as JSON text (malloc'd). */
char *cmp_summary_text(const cmp_job *j);
void cmp_print_table(const cmp_job *j);
/* The keys of the recipe that describe the machine or what the data gave, not what was asked: not
 * compared on a rerun. */
bool cmp_fact_key(const char *key);

#endif
