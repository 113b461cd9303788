/* grassflow plot on a compare folder: the --out of grassflow compare (summary.json, MODEL/ or MODEL/seed-S/
 * run folders) stands for the run folders its summary lists, every seed its own curve. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "plot.h"

/* Whether path names an existing file. */
static bool is_file(const char *dir, const char *name) {
    char path[GF_PATH_MAX];
    struct stat st;
    return !gf_path_join(path, sizeof path, dir, name) && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The runs summary.json of compare folder `dir` lists (models in order, then seeds), each a folder that holds
 * a metrics.jsonl, appended to out[*n..cap); a run that has not logged a step yet is left out with a note. */
static int summary_runs(const char *dir, char (*out)[GF_PATH_MAX], int *n, int cap) {
    char path[GF_PATH_MAX];
    size_t len;
    unsigned char *text = gf_path_join(path, sizeof path, dir, "summary.json") ? NULL
                          : gf_read_file(path, (size_t)64 << 20, &len);
    if (!text) return cli_error("plot: %s", gf_last_error());
    cJSON *s = cJSON_Parse((const char *)text), *m, *r;
    free(text);
    const cJSON *models = cJSON_GetObjectItemCaseSensitive(s, "models");
    int rc = cJSON_IsArray(models) ? EXIT_OK
             : cli_error("plot: %s is not a grassflow compare summary (no \"models\" list)\nHINT: give the run "
                         "folders themselves (MODEL/ or MODEL/seed-S/ in it)", path);
    cJSON_ArrayForEach(m, models) cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(m, "runs")) {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(r, "dir");
        if (rc || !cJSON_IsString(d)) continue;
        char run[GF_PATH_MAX];
        if (gf_path_join(run, sizeof run, dir, d->valuestring) || !is_file(run, "metrics.jsonl")) {
            fprintf(stderr, "grassflow plot: note: %s/%s has not logged a step yet (no metrics.jsonl): not drawn\n",
                    dir, d->valuestring);
            continue;
        }
        if (*n >= cap)
            rc = cli_usage_error("plot", "%s holds more runs than one plot draws (%d)\nHINT: give some of its run "
                                 "folders (MODEL/seed-S) instead", dir, CLI_PLOT_MAX_RUNS);
        else snprintf(out[(*n)++], GF_PATH_MAX, "%s", run);
    }
    cJSON_Delete(s);
    return rc;
}

int cli_plot_expand(const char *const *args, int n_args, char (*out)[GF_PATH_MAX], int *n, int cap) {
    *n = 0;
    for (int i = 0; i < n_args; i++) {
        const int before = *n;
        if (!is_file(args[i], "metrics.jsonl") && is_file(args[i], "summary.json")) {
            int rc = summary_runs(args[i], out, n, cap);
            if (rc) return rc;
            if (*n == before)
                return cli_error("plot: the compare in %s has no run that logged a step yet\nHINT: plot it once "
                                 "its first run has logged (every --log-every steps)", args[i]);
        } else if (*n >= cap) {
            return cli_usage_error("plot", "expected 1 to %d run folders, got more", cap);
        } else {
            snprintf(out[(*n)++], GF_PATH_MAX, "%s", args[i]);
        }
    }
    return EXIT_OK;
}
