/* SNLI files, streamed line by line (io/lines.h) into premise/hypothesis/label arrays. */
#include "data/nli_reader.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "data/corpus.h"
#include "data/unicode.h"
#include "io/file.h"
#include "io/lines.h"

#define MAX_RECORD ((size_t)1 << 20) /* an SNLI jsonl line with its parse trees is about 1.5 KB */
#define PAIR_INDEX 9                  /* bytes a kept pair takes besides its text: its offset and label */
/* The longest sentence kept: SNLI's longest is 402 bytes, and a pair is cut to --max-sent pieces (at most
 * 4096) anyway; a file of sentences of hundreds of KB (an .xz of 183 KB held 1.2 GB of them) is refused at
 * its first such line rather than kept up to the memory limit. */
#define MAX_SENTENCE ((size_t)1 << 16)
#define MAX_TEXT_HINT "the pairs kept from one SNLI file may take a sixth of the machine's memory (or of ulimit " \
                      "-v), as the text of a corpus file may; GRASSFLOW_MAX_TEXT=BYTES sets another limit"

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

/* s[0..n) as a message can show it: printable ASCII as it is (a quote or backslash escaped), any other
 * byte as \xHH, so that a byte order mark or a control character is seen; at most 40 bytes, "..." after. */
static const char *visible(const char *s, size_t n, char buf[200]) {
    size_t o = 0;
    for (size_t i = 0; i < n && i < 40; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') o += (size_t)snprintf(buf + o, 200 - o, "\\%c", c);
        else if (c >= 0x20 && c < 0x7F) buf[o++] = (char)c;
        else o += (size_t)snprintf(buf + o, 200 - o, "\\x%02X", c);
    }
    snprintf(buf + o, 200 - o, "%s", n > 40 ? "..." : "");
    return buf;
}

/* A line of nothing but spaces and tabs (or a stray \r): skipped wherever it is (a trailing one, leading
 * ones). */
static bool blank_line(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') return false;
    return true;
}

/* A character the BERT tokenizer keeps in a word (unicode.h): not whitespace (Unicode's: Zs, U+2028,
 * U+2029, \t \n \r), a control or format character, or an accent, which it drops. */
static inline bool is_word(int uc_class) {
    return uc_class != GF_UC_SPACE && uc_class != GF_UC_DROP && uc_class != GF_UC_MN && uc_class != GF_UC_MN0;
}

/* Whether sentence s[0..n) holds a character of a word: a sentence without one would be no piece, and is
 * empty. -1 after an error naming file, line and field for invalid UTF-8 or a NUL. */

static int has_word(const gf_nli_split *sp, const gf_lines *r, const char *field, const char *s, size_t n) {
    int word = 0;
    for (size_t i = 0; i < n;) {
        if ((unsigned char)s[i] < 0x80 && s[i]) { /* ASCII: the common case */
            word = word || is_word(gf_uc_ascii_class[(unsigned char)s[i]]);
            i++;
            continue;
        }
        uint32_t c;
        int l = gf_utf8_decode((const unsigned char *)s + i, n - i, &c);
        if (!l)
            return gf_fail("%s:%lld: invalid UTF-8 in the %s at byte %zu (0x%02X); expected UTF-8 text\nHINT: "
                           "convert the file, e.g. iconv -f latin1 -t utf-8", sp->path, (long long)gf_lines_number(r),
                           field, i + 1, (unsigned char)s[i]);
        if (c == 0)
            return gf_fail("%s:%lld: a NUL character in the %s at byte %zu; expected text without NUL characters",
                           sp->path, (long long)gf_lines_number(r), field, i + 1);
        i += (size_t)l;
        word = word || is_word(gf_uc_class(c));
    }
    return word;
}

/* Room for need elements of el bytes in *p, doubling, but never past max (or need, if larger). */
static int grow(void **p, int64_t need, int64_t *cap, size_t el, int64_t max) {
    if (need <= *cap) return 0;
    int64_t nc = *cap ? *cap : 1024;
    while (nc < need) nc *= 2;
    if (nc > max) nc = max > need ? max : need;
    void *np = realloc(*p, (size_t)nc * el);
    if (!np) return -1;
    *p = np;
    *cap = nc;
    return 0;
}

/* Keep one record: count it, drop "-" and empty sentences, store the rest. The label and both sentences
 * are checked first, in every row (a dropped one too): a known label, UTF-8 without NUL. */
static int keep(gf_nli_split *s, const gf_lines *r, const char *lab, size_t nl, const char *pre, size_t np,
                const char *hyp, size_t nh) {
    s->rows++;
    int label = parse_label(lab, nl);
    char vis[200];
    if (label == -2)
        return gf_fail("%s:%lld: unknown gold label \"%s\"; expected entailment, neutral, contradiction or - (no "
                       "consensus)", s->path, (long long)gf_lines_number(r), visible(lab, nl, vis));
    if (np > MAX_SENTENCE || nh > MAX_SENTENCE)
        return gf_fail("%s:%lld: the %s is %zu bytes long; a sentence of a pair may be at most %zu bytes (SNLI's "
                       "longest is 402; a pair is cut to --max-sent pieces anyway)\nHINT: is this a sentence-pair file?",
                       s->path, (long long)gf_lines_number(r), np > MAX_SENTENCE ? "premise" : "hypothesis",
                       np > MAX_SENTENCE ? np : nh, MAX_SENTENCE);
    const int wp = has_word(s, r, "premise", pre, np), wh = wp < 0 ? -1 : has_word(s, r, "hypothesis", hyp, nh);
    if (wp < 0 || wh < 0) return -1;
    if (label == -1) {
        s->unlabelled++;
        return 0;
    }
    if (!wp || !wh) {
        s->empty++;
        return 0;
    }
    const int64_t limit = s->max_bytes;
    const int64_t text = s->text_len + (int64_t)(np + nh + 2);
    if (text + (s->n + 1) * PAIR_INDEX > limit)
        return gf_fail("%s:%lld: the pairs kept so far (%lld, with %.1f MiB of text) pass the %lld bytes one file's "
                       "pairs may take; refusing (a corrupt or hostile file?)\nHINT: " MAX_TEXT_HINT, s->path,
                       (long long)gf_lines_number(r), (long long)s->n + 1, (double)text / 1048576.0, (long long)limit);
    int64_t cap = s->cap, tcap = s->text_cap;
    if (grow((void **)&s->premise, s->n + 1, &cap, sizeof *s->premise, limit / PAIR_INDEX) ||
        grow((void **)&s->label, s->n + 1, &s->cap, sizeof *s->label, limit / PAIR_INDEX) ||
        grow((void **)&s->text, text, &tcap, 1, limit))
        return gf_fail("out of memory reading %s (%lld pairs)", s->path, (long long)s->n);
    s->text_cap = tcap;
    s->premise[s->n] = s->text_len;
    s->label[s->n] = (int8_t)label;
    memcpy(s->text + s->text_len, pre, np);
    s->text[s->text_len + (int64_t)np] = '\0';
    memcpy(s->text + s->text_len + (int64_t)np + 1, hyp, nh);
    s->text[s->text_len + (int64_t)(np + nh) + 1] = '\0';
    s->text_len = text;
    s->per_label[label]++;
    s->n++;
    return 0;
}

static const char *json_string(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Where JSON text s[0..n) holds the escape \u0000 (which cJSON decodes into a string cut short there), or
 * NULL. */
static const char *json_nul(const char *s, size_t n) {
    const char *end = s + n;
    for (const char *p = s; (p = memchr(p, '\\', (size_t)(end - p))) != NULL; p += 2) {
        if (end - p >= 6 && p[1] == 'u' && !memcmp(p + 2, "0000", 4)) return p;
        if (end - p < 2) break; /* p + 2: past the escaped character (\\u0000 is a backslash, then text) */
    }
    return NULL;
}

static int jsonl_record(gf_nli_split *s, const gf_lines *r, const char *line, size_t len) {
    char vis[200];
    const char *nul = json_nul(line, len);
    if (nul)
        return gf_fail("%s:%lld: a NUL character (\\u0000) at byte %zu of the record; expected text without NUL "
                       "characters", s->path, (long long)gf_lines_number(r), (size_t)(nul - line) + 1);
    cJSON *o = cJSON_ParseWithLength(line, len);
    if (!o || !cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return gf_fail("%s:%lld: not a JSON object (the line begins \"%s\"); expected one SNLI record per line "
                       "({\"gold_label\": ..., \"sentence1\": ..., \"sentence2\": ...})", s->path,
                       (long long)gf_lines_number(r), visible(line, len, vis));
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
    char vis[200];
    if (n != lay->cols)
        return gf_fail("%s:%lld: %d tab-separated column(s); expected %d (%s); the line begins \"%s\"", s->path,
                       (long long)gf_lines_number(r), n, lay->cols,
                       lay->cols == 3 ? "label, premise, hypothesis" : "as in the header row", visible(line, len, vis));
    return keep(s, r, f[lay->label], fl[lay->label], f[lay->premise], fl[lay->premise], f[lay->hypothesis],
                fl[lay->hypothesis]);
}

/* The official snli_1.0_*.txt header: where gold_label, sentence1 and sentence2 are. */
static int txt_header(gf_nli_split *s, const gf_lines *r, const char *line, size_t len, tsv_layout *lay) {
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
        return gf_fail("%s:%lld: a header row without gold_label, sentence1 and sentence2 columns (or more than 16 "
                       "columns); expected the header of the official snli_1.0_*.txt files", s->path,
                       (long long)gf_lines_number(r));
    return 0;
}

/* Every record of the file; which of the three forms it is in is told by its first line that is not blank
 * (a UTF-8 byte order mark before it is skipped): "{" jsonl, a "gold_label" column the official txt,
 * anything else the compact TSV. */
static int read_records(gf_nli_split *s, gf_lines *r) {
    const char *line;
    size_t len;
    int got, rc = 0;
    tsv_layout lay = {.cols = 3, .label = 0, .premise = 1, .hypothesis = 2};
    while (!rc && (got = gf_lines_next(r, &line, &len)) == 1) {
        if (gf_lines_number(r) == 1 && len >= 3 && !memcmp(line, "\xEF\xBB\xBF", 3)) line += 3, len -= 3;
        if (blank_line(line, len)) continue; /* blank lines carry nothing */
        if (!s->format) {
            size_t k = 0;
            while (k < len && (line[k] == ' ' || line[k] == '\t')) k++;
            s->format = line[k] == '{' ? "jsonl" : !strncmp(line, "gold_label\t", 11) ? "txt" : "tsv";
            if (!strcmp(s->format, "txt")) {
                rc = txt_header(s, r, line, len, &lay);
                continue;
            }
        }
        rc = !strcmp(s->format, "jsonl") ? jsonl_record(s, r, line, len) : tsv_record(s, r, &lay, line, len);
    }
    return rc ? rc : got < 0 ? -1 : 0;
}

int gf_nli_read(const char *path, gf_nli_split *out) {
    memset(out, 0, sizeof *out);
    if (gf_path_join(out->path, sizeof out->path, NULL, path)) return -1;
    const size_t max_text = gf_corpus_max_text(); /* once: it asks the system for the memory there is */
    out->max_bytes = max_text < ((size_t)1 << 62) ? (int64_t)max_text : (int64_t)1 << 62;
    gf_lines *r = gf_lines_open(path, MAX_RECORD);
    if (!r) return -1;
    int rc = read_records(out, r);
    gf_lines_close(r);
    if (!rc && !out->format) rc = gf_fail("%s: the file is empty (or blank); expected SNLI records", path);
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

static const char *const EXT[] = {".jsonl", ".jsonl.xz", ".txt", ".txt.xz", ".tsv", ".tsv.xz"};

/* The first of DIR/snli_1.0_STEM.{jsonl,txt,tsv}[.xz] there is, into path: 1 if it is a regular file (or a
 * link to one), -1 after an error saying what else it is (a directory, a FIFO, a link loop, a dangling
 * link: never taken for a missing file, nor passed over for the next name), 0 if there is none. */
static int find_split(const char *dir, const char *stem, char *path, size_t cap) {
    for (int k = 0; k < 6; k++) {
        char name[96];
        snprintf(name, sizeof name, "snli_1.0_%s%s", stem, EXT[k]);
        struct stat st;
        if (gf_path_join(path, cap, dir, name)) return -1;
        if (lstat(path, &st) != 0) continue; /* nothing by that name */
        if (stat(path, &st) != 0) {
            if (errno == ELOOP || errno == ENOENT)
                return gf_fail("%s is %s; expected a regular file", path,
                               errno == ELOOP ? "a symbolic link loop" : "a symbolic link to nothing");
            return gf_fail("cannot read %s: %s", path, strerror(errno));
        }
        if (!S_ISREG(st.st_mode)) {
            FILE *f = gf_open_regular(path, NULL); /* which says what it is */
            if (f) fclose(f);
            return -1;
        }
        return 1;
    }
    return 0;
}

static int nli_dir(const char *spec, const char *data_dir, char *dir, size_t cap) {
    if (!strcmp(spec, "snli")) return gf_path_join(dir, cap, data_dir, "snli");
    return gf_path_join(dir, cap, NULL, spec);
}

static const char *const STEMS[3][2] = {{"train", "train_0.01"}, {"dev", NULL}, {"test", NULL}};
static const char *const SPLIT_NAMES[3] = {"train", "dev", "test"};

int gf_nli_is_spec(const char *spec, const char *data_dir) {
    char dir[GF_PATH_MAX], path[GF_PATH_MAX];
    if (!strcmp(spec, "snli")) return 1;
    if (nli_dir(spec, data_dir, dir, sizeof dir)) return 0;
    for (int s = 0; s < 3; s++)
        for (int k = 0; k < 2; k++)
            if (STEMS[s][k] && find_split(dir, STEMS[s][k], path, sizeof path) != 0) return 1;
    return 0;
}

gf_nli_data *gf_nli_load_splits(const char *spec, const char *data_dir, unsigned splits) {
    char dir[GF_PATH_MAX], path[GF_PATH_MAX];
    if (nli_dir(spec, data_dir, dir, sizeof dir)) return NULL;
    gf_nli_data *d = calloc(1, sizeof *d);
    if (!d) {
        gf_fail("out of memory");
        return NULL;
    }
    snprintf(d->name, sizeof d->name, "%.63s", spec);
    for (int s = 0; s < 3; s++) {
        if (!(splits & (1u << s))) continue;
        int found = find_split(dir, STEMS[s][0], path, sizeof path);
        if (!found && STEMS[s][1]) found = find_split(dir, STEMS[s][1], path, sizeof path);
        if (!found)
            gf_fail("%s: no %s split: no snli_1.0_%s.jsonl, .jsonl.xz, .txt, .txt.xz, .tsv or .tsv.xz%s; expected the "
                    "files of snli_1.0.zip (or grassflow's data/snli)\nHINT: unpack snli_1.0.zip and give its snli_1.0 "
                    "folder as --corpus", dir, SPLIT_NAMES[s], STEMS[s][0], s == 0 ? " (nor snli_1.0_train_0.01.*)" : "");
        if (found != 1 || gf_nli_read(path, &d->split[s])) {
            gf_nli_free(d);
            return NULL;
        }
    }
    return d;
}

gf_nli_data *gf_nli_load(const char *spec, const char *data_dir) { return gf_nli_load_splits(spec, data_dir, 7u); }

void gf_nli_free(gf_nli_data *d) {
    if (!d) return;
    for (int s = 0; s < 3; s++) gf_nli_split_free(&d->split[s]);
    free(d);
}
