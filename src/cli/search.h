/* grassflow search: what its parts share (search.c reads the spec, plans the points and runs each one as a
 * `grassflow compare` of its own; search_report.c gathers their summaries into results.jsonl, summary.md,
 * summary.tsv and the plots). docs/search.md has the spec's form and the halving rule. */
#ifndef GF_CLI_SEARCH_H
#define GF_CLI_SEARCH_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "grassflow_plugin.h"

enum { SR_MAX_KEYS = 12, SR_MAX_POINTS = 4096, SR_MAX_RECIPE = 32, SR_MAX_ENTRIES = 64, SR_MAX_JOBS = 64 };

/* One option of a point or of the recipe: a compare flag (--lr 0.001) or a config key (--set rank=16). */
typedef struct {
    char key[64];   /* the flag's name without "--", or the config key */
    char val[256];  /* the value as the command line gives it */
    bool set;       /* a config key (the spec wrote "set KEY") */
    bool numeric;   /* val is a JSON number (the plots' x) */
} sr_opt;

typedef struct {
    int entry;             /* its search (the spec's "searches" index) */
    char model[256];
    sr_opt o[SR_MAX_KEYS]; /* what the point sets, in the spec's order */
    int n_o;
    char dir[GF_PATH_MAX]; /* OUT/ENTRY-MODEL/POINT: its compare's --out */
    int64_t steps;         /* its budget in optimizer steps (0 with an epoch budget) */
    bool dropped;          /* halving: kept at the first rung */
    double first_val;      /* halving: its mean validation score at the first rung (NAN: not known) */
    cJSON *summary;        /* its compare's summary.json once read (NULL: none yet) */
} sr_point;

typedef struct {
    const char *spec_path, *out;
    bool plan, json;
    int jobs;              /* points run at once (--jobs), each with its share of the threads */
    cJSON *spec;
    const char *corpus, *task;
    sr_opt recipe[SR_MAX_RECIPE];
    int n_recipe;
    char seeds[512];       /* "1234,2": compare's --seeds */
    int64_t tokens, steps, epochs; /* the budget: one of them */
    int eta;               /* halving: keep the best 1/eta of each search after its first rung (0: no halving) */
    double first;          /* the first rung's share of the budget */
    int n_entries;
    sr_point *p;
    int n;
} sr_job;

/* search_report.c: every point's summary.json read again (those whose compare has written one), then
 * OUT/results.jsonl, summary.md and summary.tsv written (atomically); with plots, OUT/by-KEY.svg for each
 * searched key whose values are numbers and OUT/best-curves.svg. EXIT_OK or an exit code after the message. */
int sr_report(sr_job *j, bool plots);
/* The mean validation score of point p (NAN: none yet); lower_better (may be NULL): the task's metric is a
 * perplexity. */
double sr_point_val(const sr_point *p, bool *lower_better);
/* OUT/summary.md (--json: OUT/results.jsonl) to stdout. */
int sr_print(const sr_job *j);
/* Whether p's compare has finished with at least `steps` steps (0: an epoch budget; finished). */
bool sr_point_at(const sr_point *p, int64_t steps);

#endif
