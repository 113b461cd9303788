/* SNLI files, streamed line by line (io/lines.h) into premise/hypothesis/label arrays. */
#include "data/nli.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "data/corpus.h"
#include "io/file.h"
#include "io/lines.h"

#define MAX_RECORD ((size_t)1 << 20) /* an SNLI jsonl line with its parse trees is about 1.5 KB */

static const char *const label_names[GF_NLI_CLASSES] = {"entailment", "neutral", "contradiction"};

const char *gf_nli_label_name(int label) {
    return label >= 0 && label < GF_NLI_CLASSES ? label_names[label] : "?";
}

const char *gf_nli_hypothesis(const gf_nli_split *s, int64_t i) {
    const char *p = s->text + s->premise[i];
    return p + strlen(p) + 1;
}

/* The label of a gold_label field: GF_NLI_*, -1 for "-" (no consensus), -2 for anything else. */
static int parse_label(const char *s, size_t n) {
    for (int k = 0; k < GF_NLI_CLASSES; k++)
        if (n == strlen(label_names[k]) && !memcmp(s, label_names[k], n)) return k;
    return n == 1 && s[0] == '-' ? -1 : -2;
}

static bool blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n') return false;
    return true;
}

static int grow(void **p, int64_t need, int64_t *cap, size_t el) {
    if (need <= *cap) return 0;
    int64_t nc = *cap ? *cap : 1024;
    while (nc < need) nc *= 2;
    void *np = realloc(*p, (size_t)nc * el);
    if (!np) return -1;
    *p = np;
    *cap = nc;
    return 0;
}

/* Keep one record: count it, drop "-" and empty sentences, store the rest. */
static int keep(gf_nli_split *s, const gf_lines *r, const char *lab, size_t nl, const char *pre, size_t np,
                const char *hyp, size_t nh) {
    s->rows++;
    int label = parse_label(lab, nl);
    if (label == -2)
        return gf_fail("%s:%lld: unknown gold label \"%.*s\"; expected entailment, neutral, contradiction or - (no "
                       "consensus)", s->path, (long long)gf_lines_number(r), (int)(nl > 40 ? 40 : nl), lab);
    if (label == -1) {
        s->unlabelled++;
        return 0;
    }
    if (blank(pre, np) || blank(hyp, nh)) {
        s->empty++;
        return 0;
    }
    int64_t cap = s->cap, tcap = s->text_cap;
    if (grow((void **)&s->premise, s->n + 1, &cap, sizeof *s->premise) ||
        grow((void **)&s->label, s->n + 1, &s->cap, sizeof *s->label) ||
        grow((void **)&s->text, s->text_len + (int64_t)(np + nh + 2), &tcap, 1))
        return gf_fail("out of memory reading %s (%lld pairs)", s->path, (long long)s->n);
    s->text_cap = tcap;
    s->premise[s->n] = s->text_len;
    s->label[s->n] = (int8_t)label;
    memcpy(s->text + s->text_len, pre, np);
    s->text[s->text_len + (int64_t)np] = '\0';
    memcpy(s->text + s->text_len + (int64_t)np + 1, hyp, nh);
    s->text[s->text_len + (int64_t)(np + nh) + 1] = '\0';
    s->text_len += (int64_t)(np + nh + 2);
    s->per_label[label]++;
    s->n++;
    return 0;
}

static const char *json_string(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int jsonl_record(gf_nli_split *s, const gf_lines *r, const char *line, size_t len) {
    cJSON *o = cJSON_ParseWithLength(line, len);
    if (!o || !cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return gf_fail("%s:%lld: not a JSON object; expected one SNLI record per line ({\"gold_label\": ..., "
                       "\"sentence1\": ..., \"sentence2\": ...})", s->path, (long long)gf_lines_number(r));
    }
    const char *lab = json_string(o, "gold_label"), *pre = json_string(o, "sentence1"), *hyp = json_string(o, "sentence2");
    const char *missing = !lab ? "gold_label" : !pre ? "sentence1" : !hyp ? "sentence2" : NULL;
    int rc = missing ? gf_fail("%s:%lld: no string \"%s\" in the record; expected gold_label, sentence1 and sentence2",
                               s->path, (long long)gf_lines_number(r), missing)
                     : keep(s, r, lab, strlen(lab), pre, strlen(pre), hyp, strlen(hyp));
    cJSON_Delete(o);
    return rc;
}

/* Split line at tabs into at most max fields (starts and lengths); returns how many there are. */
static int split_tabs(const char *line, size_t len, const char **f, size_t *fl, int max) {
    int n = 0;
    const char *p = line, *end = line + len;
    for (;;) {
        const char *t = memchr(p, '\t', (size_t)(end - p));
        if (n < max) {
            f[n] = p;
            fl[n] = t ? (size_t)(t - p) : (size_t)(end - p);
        }
        n++;
        if (!t) return n;
        p = t + 1;
    }
}

typedef struct {
    int cols, label, premise, hypothesis; /* the official txt: found by name in its header row */
} tsv_layout;

static int tsv_record(gf_nli_split *s, const gf_lines *r, const tsv_layout *lay, const char *line, size_t len) {
    const char *f[16];
    size_t fl[16];
    int n = split_tabs(line, len, f, fl, 16);
    if (n != lay->cols)
        return gf_fail("%s:%lld: %d tab-separated column(s); expected %d (%s)", s->path, (long long)gf_lines_number(r),
                       n, lay->cols, lay->cols == 3 ? "label, premise, hypothesis" : "as in the header row");
    return keep(s, r, f[lay->label], fl[lay->label], f[lay->premise], fl[lay->premise], f[lay->hypothesis],
                fl[lay->hypothesis]);
}

/* The official snli_1.0_*.txt header: where gold_label, sentence1 and sentence2 are. */
static int txt_header(gf_nli_split *s, const char *line, size_t len, tsv_layout *lay) {
    const char *f[16];
    size_t fl[16];
    int n = split_tabs(line, len, f, fl, 16);
    *lay = (tsv_layout){.cols = n, .label = -1, .premise = -1, .hypothesis = -1};
    for (int k = 0; k < n && k < 16; k++) {
        if (fl[k] == 10 && !memcmp(f[k], "gold_label", 10)) lay->label = k;
        if (fl[k] == 9 && !memcmp(f[k], "sentence1", 9)) lay->premise = k;
        if (fl[k] == 9 && !memcmp(f[k], "sentence2", 9)) lay->hypothesis = k;
    }
    if (n > 16 || lay->label < 0 || lay->premise < 0 || lay->hypothesis < 0)
        return gf_fail("%s:1: a header row without gold_label, sentence1 and sentence2 columns (or more than 16 "
                       "columns); expected the header of the official snli_1.0_*.txt files", s->path);
    return 0;
}

/* Which of the three forms a file is in, from its first line. */
static int read_records(gf_nli_split *s, gf_lines *r) {
    const char *line;
    size_t len;
    int got, rc = 0;
    tsv_layout lay = {.cols = 3, .label = 0, .premise = 1, .hypothesis = 2};
    bool first = true;
    while (!rc && (got = gf_lines_next(r, &line, &len)) == 1) {
        if (first) {
            first = false;
            s->format = len && line[0] == '{' ? "jsonl" : !strncmp(line, "gold_label\t", 11) ? "txt" : "tsv";
            if (!strcmp(s->format, "txt")) {
                rc = txt_header(s, line, len, &lay);
                continue;
            }
        }
        if (len == 0) continue; /* blank lines (a trailing one) carry nothing */
        rc = !strcmp(s->format, "jsonl") ? jsonl_record(s, r, line, len) : tsv_record(s, r, &lay, line, len);
    }
    return rc ? rc : got < 0 ? -1 : 0;
}

int gf_nli_read(const char *path, gf_nli_split *out) {
    memset(out, 0, sizeof *out);
    if (gf_path_join(out->path, sizeof out->path, NULL, path)) return -1;
    gf_lines *r = gf_lines_open(path, MAX_RECORD);
    if (!r) return -1;
    int rc = read_records(out, r);
    gf_lines_close(r);
    if (!rc && !out->format) rc = gf_fail("%s: the file is empty; expected SNLI records", path);
    if (rc) gf_nli_split_free(out);
    return rc;
}

void gf_nli_split_free(gf_nli_split *s) {
    free(s->text);
    free(s->premise);
    free(s->label);
    s->text = NULL;
    s->premise = NULL;
    s->label = NULL;
    s->n = 0;
}

/* The first of DIR/snli_1.0_STEM.{jsonl,txt,tsv}[.xz] that is a file, into path; 0 if none. */
static int find_split(const char *dir, const char *stem, char *path, size_t cap) {
    static const char *const ext[] = {".jsonl", ".jsonl.xz", ".txt", ".txt.xz", ".tsv", ".tsv.xz"};
    for (int k = 0; k < 6; k++) {
        char name[96];
        snprintf(name, sizeof name, "snli_1.0_%s%s", stem, ext[k]);
        struct stat st;
        if (!gf_path_join(path, cap, dir, name) && stat(path, &st) == 0 && S_ISREG(st.st_mode)) return 1;
    }
    return 0;
}

static int nli_dir(const char *spec, const char *data_dir, char *dir, size_t cap) {
    if (!strcmp(spec, "snli")) return gf_path_join(dir, cap, data_dir, "snli");
    return gf_path_join(dir, cap, NULL, spec);
}

int gf_nli_is_spec(const char *spec, const char *data_dir) {
    char dir[GF_PATH_MAX], path[GF_PATH_MAX];
    if (!strcmp(spec, "snli")) return 1;
    return !nli_dir(spec, data_dir, dir, sizeof dir) && find_split(dir, "dev", path, sizeof path);
}

gf_nli_data *gf_nli_load(const char *spec, const char *data_dir) {
    char dir[GF_PATH_MAX], path[GF_PATH_MAX];
    if (nli_dir(spec, data_dir, dir, sizeof dir)) return NULL;
    gf_nli_data *d = calloc(1, sizeof *d);
    if (!d) {
        gf_fail("out of memory");
        return NULL;
    }
    snprintf(d->name, sizeof d->name, "%.63s", spec);
    static const char *const stems[3][2] = {{"train", "train_0.01"}, {"dev", NULL}, {"test", NULL}};
    for (int s = 0; s < 3; s++) {
        bool found = find_split(dir, stems[s][0], path, sizeof path) ||
                     (stems[s][1] && find_split(dir, stems[s][1], path, sizeof path));
        if (!found) {
            gf_fail("%s: no snli_1.0_%s.{jsonl,txt,tsv}[.xz]%s; expected the files of snli_1.0.zip (or grassflow's "
                    "data/snli)\nHINT: unpack snli_1.0.zip and give its snli_1.0 folder as --corpus", dir, stems[s][0],
                    s == 0 ? " (nor snli_1.0_train_0.01.*)" : "");
            gf_nli_free(d);
            return NULL;
        }
        if (gf_nli_read(path, &d->split[s])) {
            gf_nli_free(d);
            return NULL;
        }
    }
    return d;
}

void gf_nli_free(gf_nli_data *d) {
    if (!d) return;
    for (int s = 0; s < 3; s++) gf_nli_split_free(&d->split[s]);
    free(d);
}
