/* Reading a run's metrics.jsonl (the rows run_dir.c writes, and those of every older version). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "io/file.h"

#define MAX_LINE (1 << 16) /* a row is a few hundred bytes; a longer line is not a row */

/* The number under key, or NAN when it is absent or null. */
static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* The first key of keys (NULL-ended; "" skipped) that o holds as neither a number nor null (a string "3.2", a
 * bool: not what grassflow writes), or NULL. */
static const char *not_a_number(const cJSON *o, const char *const *keys) {
    for (; *keys; keys++) {
        const cJSON *v = (*keys)[0] ? cJSON_GetObjectItemCaseSensitive(o, *keys) : NULL;
        if (v && !cJSON_IsNumber(v) && !cJSON_IsNull(v)) return *keys;
    }
    return NULL;
}

static void copy_str(char *dst, size_t cap, const cJSON *v) {
    if (cJSON_IsString(v)) snprintf(dst, cap, "%s", v->valuestring);
}

/* A row of an older file (no "type"): what its keys say it is. */
static const char *legacy_type(const cJSON *o) {
    if (cJSON_GetObjectItemCaseSensitive(o, "val_loss")) return "eval";
    if (cJSON_GetObjectItemCaseSensitive(o, "skipped")) return "skipped";
    if (cJSON_GetObjectItemCaseSensitive(o, "loss")) return "train";
    return "other";
}

/* Row r from object o; what a start row says of the run into m. -1 when o is not a row (the reason in why, n bytes). */
static int parse_row(const cJSON *o, gf_metrics *m, gf_metrics_row *r, char *why, size_t n) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(o, "type"), *step = cJSON_GetObjectItemCaseSensitive(o, "step");
    if (!cJSON_IsObject(o)) return snprintf(why, n, "not a JSON object"), -1;
    if (!cJSON_IsNumber(step) || !(step->valuedouble >= 0 && step->valuedouble <= 9007199254740992.0) ||
        step->valuedouble != floor(step->valuedouble))
        return snprintf(why, n, "no \"step\" (a count of optimizer steps, at most 2^53)"), -1;
    if (type && !cJSON_IsString(type)) return snprintf(why, n, "\"type\" is not a string"), -1;
    const char *counted = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "counted"));
    const char *const keys[] = {"epoch", "elapsed_s", "loss", "lr", "val_loss", "val_acc", "val_ppl", m->counted,
                                counted ? counted : "", NULL};
    const char *bad = not_a_number(o, keys);
    if (bad)
        return snprintf(why, n, "\"%.40s\" is not a number (nor null, which stands for a value that is not finite)",
                        bad), -1;
    *r = (gf_metrics_row){.step = (int64_t)step->valuedouble, .epoch = num(o, "epoch"), .elapsed_s = num(o, "elapsed_s"),
                          .seen = NAN, .loss = NAN, .score = NAN, .lr = NAN};
    snprintf(r->type, sizeof r->type, "%s", type ? type->valuestring : legacy_type(o));
    m->legacy |= !type;
    if (!strcmp(r->type, "start")) {
        copy_str(m->counted, sizeof m->counted, cJSON_GetObjectItemCaseSensitive(o, "counted"));
        copy_str(m->metric, sizeof m->metric, cJSON_GetObjectItemCaseSensitive(o, "metric"));
    }
    if (m->counted[0]) r->seen = num(o, m->counted);
    if (!strcmp(r->type, "train")) r->loss = num(o, "loss"), r->lr = num(o, "lr");
    if (!strcmp(r->type, "eval")) {
        if (!m->metric[0]) /* a file from before start rows named the metric: by the key its rows have */
            snprintf(m->metric, sizeof m->metric, "%s", cJSON_GetObjectItemCaseSensitive(o, "val_acc") ? "accuracy" : "ppl");
        /* the metric's value is "val_KEY": its key, or for a metric this program does not know, its name */
        const gf_metric *mt = gf_metric_find(m->metric);
        char key[48];
        snprintf(key, sizeof key, "val_%s", mt && mt->key ? mt->key : m->metric);
        const char *const score_key[] = {key, NULL};
        if ((bad = not_a_number(o, score_key)))
            return snprintf(why, n, "\"%.40s\" is not a number (nor null)", bad), -1;
        r->loss = num(o, "val_loss");
        r->score = num(o, key);
    }
    return 0;
}

static int add_row(gf_metrics *m, int64_t *cap, const gf_metrics_row *r) {
    if (m->n == *cap) {
        const int64_t c = *cap ? 2 * *cap : 64;
        gf_metrics_row *p = realloc(m->rows, (size_t)c * sizeof *p);
        if (!p) return gf_fail("out of memory reading metrics");
        m->rows = p;
        *cap = c;
    }
    m->rows[m->n++] = *r;
    return 0;
}

/* Every line of f (path) into m. */
static int read_rows(FILE *f, const char *path, gf_metrics *m) {
    char *line = NULL;
    size_t size = 0;
    ssize_t len;
    int64_t cap = 0, no = 0;
    int rc = 0;
    while (!rc && (len = getline(&line, &size, f)) >= 0) {
        no++;
        if (strspn(line, " \t\r\n") == (size_t)len) continue; /* a blank line */
        if (len > MAX_LINE) {
            rc = gf_fail("%s, line %lld: %lld bytes, not a metrics row (a row is one JSON object of a few hundred "
                         "bytes)", path, (long long)no, (long long)len);
            break;
        }
        cJSON *o = cJSON_Parse(line);
        char why[160] = "not JSON (a line cut short, or another file)";
        gf_metrics_row r;
        if (!o || parse_row(o, m, &r, why, sizeof why)) {
            const int show = (int)strcspn(line, "\r\n");
            rc = gf_fail("%s, line %lld: %s: %.*s%s\nHINT: metrics.jsonl holds one JSON object per line, as "
                         "grassflow train writes it; remove or repair that line", path, (long long)no, why,
                         show > 80 ? 80 : show, line, show > 80 ? "..." : "");
        } else {
            rc = add_row(m, &cap, &r);
        }
        cJSON_Delete(o);
    }
    if (!rc && ferror(f)) rc = gf_fail("error reading %s", path);
    free(line);
    return rc;
}

int gf_metrics_read(const char *dir, gf_metrics *out) {
    char path[GF_PATH_MAX];
    *out = (gf_metrics){0};
    if (gf_path_join(path, sizeof path, dir, "metrics.jsonl")) return -1;
    FILE *f = gf_open_regular(path, NULL);
    if (!f) return -1;
    const int rc = read_rows(f, path, out);
    fclose(f);
    if (rc) gf_metrics_free(out);
    return rc;
}

void gf_metrics_free(gf_metrics *m) {
    if (!m) return;
    free(m->rows);
    *m = (gf_metrics){0};
}
