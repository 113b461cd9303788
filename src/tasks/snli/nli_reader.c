/* SNLI files, streamed line by line (io/lines.h) into premise/hypothesis/label arrays. */
#include "tasks/snli/nli_reader.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "tasks/lm/corpus.h"
#include "text/unicode.h"
#include "io/csv.h"
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

static bool ends_with(const char *s, const char *end) {
    const size_t n = strlen(s), k = strlen(end);
    return n >= k && !strcmp(s + n - k, end);
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

/* Store one pair (label -1: none). */
static int store(gf_nli_split *s, const gf_lines *r, int label, const char *pre, size_t np, const char *hyp,
                 size_t nh) {
    const int64_t limit = s->max_bytes;
    const int64_t text = s->text_len + (int64_t)(np + nh + 2);
    if (text + (s->n + 1) * PAIR_INDEX > limit)
        return gf_fail("%s:%lld: the pairs kept so far (%lld, with %.1f MiB of text) pass the %lld bytes one file's "
                       "pairs may take; refusing (a corrupt or hostile file?)\nHINT: " MAX_TEXT_HINT, s->path,
                       r ? (long long)gf_lines_number(r) : (long long)s->n + 1, (long long)s->n + 1,
                       (double)text / 1048576.0, (long long)limit);
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
    if (label >= 0) s->per_label[label]++;
    s->n++;
    return 0;
}

/* The label of a record: GF_NLI_*, or -1 when it has none ("-", or in a file of pairs read whole an empty
 * label or none at all); -2 after an error naming file and line. */
static int record_label(const gf_nli_split *s, const gf_lines *r, const char *lab, size_t nl) {
    if (!lab || (s->all && nl == 0)) return -1;
    const int label = parse_label(lab, nl);
    char vis[200];
    if (label == -2)
        gf_fail("%s:%lld: unknown gold label \"%s\"; expected entailment, neutral, contradiction or - (no "
                "consensus)%s", s->path, (long long)gf_lines_number(r), visible(lab, nl, vis), s->all ? ", or none" : "");
    return label;
}

/* Keep one record: count it, drop "-" and empty sentences, store the rest (a file of pairs read whole keeps
 * them too, a pair without a label as -1). The label and both sentences are checked first, in every row (a
 * dropped one too): a known label, UTF-8 without NUL. lab NULL: the record has no label. */
static int keep(gf_nli_split *s, const gf_lines *r, const char *lab, size_t nl, const char *pre, size_t np,
                const char *hyp, size_t nh) {
    s->rows++;
    const int label = record_label(s, r, lab, nl);
    if (label == -2) return -1;
    if (np > MAX_SENTENCE || nh > MAX_SENTENCE)
        return gf_fail("%s:%lld: the %s is %zu bytes long; a sentence of a pair may be at most %zu bytes (SNLI's "
                       "longest is 402; a pair is cut to --max-sent pieces anyway)\nHINT: is this a sentence-pair file?",
                       s->path, (long long)gf_lines_number(r), np > MAX_SENTENCE ? "premise" : "hypothesis",
                       np > MAX_SENTENCE ? np : nh, MAX_SENTENCE);
    const int wp = has_word(s, r, "premise", pre, np), wh = wp < 0 ? -1 : has_word(s, r, "hypothesis", hyp, nh);
    if (wp < 0 || wh < 0) return -1;
    s->unlabelled += label == -1;
    s->empty += label != -1 && (!wp || !wh);
    if (!s->all && (label == -1 || !wp || !wh)) return 0;
    return store(s, r, label, pre, np, hyp, nh);
}

static const char *json_string(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* How many members of object o are named key (JSON lets one name come twice; cJSON would take the first). */
static int key_count(const cJSON *o, const char *key) {
    int n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, o) n += it->string && !strcmp(it->string, key);
    return n;
}

/* The member of record o that one field has, under SNLI's name a or Hugging Face's b, into *v (NULL: none);
 * -1 after an error naming file, line and keys when the record has both, or one of them twice: which would
 * be read is not clear. */
static int json_field(const gf_nli_split *s, const gf_lines *r, const cJSON *o, const char *a, const char *b,
                      const cJSON **v) {
    const int na = key_count(o, a), nb = key_count(o, b);
    *v = NULL;
    if (na && nb)
        return gf_fail("%s:%lld: the record has both \"%s\" and \"%s\"; expected one of them (%s as SNLI's files name "
                       "it, or %s as Hugging Face's): which to read is not clear", s->path,
                       (long long)gf_lines_number(r), a, b, a, b);
    if (na > 1 || nb > 1)
        return gf_fail("%s:%lld: the record has the key \"%s\" %d times; expected it once: which to read is not clear",
                       s->path, (long long)gf_lines_number(r), na > 1 ? a : b, na > 1 ? na : nb);
    *v = cJSON_GetObjectItemCaseSensitive(o, na ? a : b);
    return 0;
}

/* The label of record o: "gold_label" (SNLI), else "label", a name or a number as Hugging Face's snli has
 * it (0 entailment, 1 neutral, 2 contradiction, -1 none), into *lab (NULL: none; null is none). 0, or -1
 * after an error naming file and line. */
static int json_label(const gf_nli_split *s, const gf_lines *r, const cJSON *o, const char **lab) {
    static const char *const by_number[] = {"-", "entailment", "neutral", "contradiction"};
    const cJSON *v;
    *lab = NULL;
    if (json_field(s, r, o, "gold_label", "label", &v)) return -1;
    if (!v || cJSON_IsNull(v)) return 0;
    if (cJSON_IsString(v)) *lab = v->valuestring;
    else if (cJSON_IsNumber(v) && v->valuedouble >= -1 && v->valuedouble <= 2 && v->valuedouble == (int)v->valuedouble)
        *lab = by_number[(int)v->valuedouble + 1];
    else
        return gf_fail("%s:%lld: \"%s\" is neither a string nor one of the numbers -1, 0, 1, 2; expected entailment, "
                       "neutral, contradiction or - (or 0, 1, 2, -1 as Hugging Face's snli numbers them)", s->path,
                       (long long)gf_lines_number(r), v->string);
    return 0;
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

/* What JSON value v is, for a message: "an array", "a number", ... */
static const char *json_kind(const cJSON *v) {
    return cJSON_IsArray(v) ? "an array" : cJSON_IsString(v) ? "a string" : cJSON_IsNumber(v) ? "a number"
         : cJSON_IsBool(v) ? "a boolean" : "null";
}

#define RECORD_FORMS "({\"gold_label\": ..., \"sentence1\": ..., \"sentence2\": ...} or {\"label\": ..., \"premise\": " \
                     "..., \"hypothesis\": ...})"

/* Line line[0..len) parsed as a record object into *o; -1 after an error naming file and line. */
static int parse_record(const gf_nli_split *s, const gf_lines *r, const char *line, size_t len, cJSON **o) {
    char vis[200];
    const char *nul = json_nul(line, len);
    if (nul)
        return gf_fail("%s:%lld: a NUL character (\\u0000) at byte %zu of the record; expected text without NUL "
                       "characters", s->path, (long long)gf_lines_number(r), (size_t)(nul - line) + 1);
    *o = cJSON_ParseWithLength(line, len);
    if (*o && cJSON_IsObject(*o)) return 0;
    const char *kind = *o ? json_kind(*o) : NULL;
    cJSON_Delete(*o);
    *o = NULL;
    if (kind)
        return gf_fail("%s:%lld: %s (the line begins \"%s\"), not a JSON object; expected one record per line "
                       RECORD_FORMS, s->path, (long long)gf_lines_number(r), kind, visible(line, len, vis));
    return gf_fail("%s:%lld: not a JSON object (the line begins \"%s\"); expected one record per line " RECORD_FORMS,
                   s->path, (long long)gf_lines_number(r), visible(line, len, vis));
}

/* A sentence field of record o (SNLI's name a, Hugging Face's b): its string into *text, NULL when it has
 * none or not a string. -1 after an error (both names, one twice). */
static int json_sentence(const gf_nli_split *s, const gf_lines *r, const cJSON *o, const char *a, const char *b,
                         const char **text) {
    const cJSON *v;
    if (json_field(s, r, o, a, b, &v)) return -1;
    *text = cJSON_IsString(v) ? v->valuestring : NULL;
    return 0;
}

/* A record: {"gold_label", "sentence1", "sentence2"} as SNLI's jsonl, or {"label", "premise", "hypothesis"}
 * (Hugging Face's snli); other fields are ignored. */
static int jsonl_record(gf_nli_split *s, const gf_lines *r, const char *line, size_t len) {
    cJSON *o;
    if (parse_record(s, r, line, len, &o)) return -1;
    const char *lab = NULL, *pre = NULL, *hyp = NULL;
    int rc = json_sentence(s, r, o, "sentence1", "premise", &pre) ? -1
           : json_sentence(s, r, o, "sentence2", "hypothesis", &hyp) ? -1 : json_label(s, r, o, &lab);
    const char *missing = !pre ? "sentence1\" (or \"premise" : !hyp ? "sentence2\" (or \"hypothesis"
                        : !lab && !s->all ? "gold_label\" (or \"label" : NULL;
    if (!rc && missing)
        rc = gf_fail("%s:%lld: no string \"%s\") in the record; expected gold_label, sentence1 and sentence2 (or "
                     "label, premise and hypothesis)", s->path, (long long)gf_lines_number(r), missing);
    if (!rc) rc = keep(s, r, lab, lab ? strlen(lab) : 0, pre, strlen(pre), hyp, strlen(hyp));
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

/* Where a TSV or CSV file's columns are: cols columns, label -1 when it has none. */
typedef struct {
    int cols, label, premise, hypothesis;
} tsv_layout;

/* The fields of one record: a line split at tabs, or a comma-separated record (which may span lines). */
typedef struct {
    const char *f[GF_CSV_MAX_FIELDS];
    size_t fl[GF_CSV_MAX_FIELDS];
    int n;
} fields;

static const char *sep_name(const gf_nli_split *s) { return s->csv ? "comma-separated" : "tab-separated"; }

/* A record's fields (f, n) kept by the layout; shown: what a message shows of it (the line, or the record's
 * first field). */
static int fields_record(gf_nli_split *s, const gf_lines *r, const tsv_layout *lay, const fields *fs, const char *shown,
                         size_t nshown) {
    const char *const *f = fs->f;
    const size_t *fl = fs->fl;
    char vis[200];
    if (fs->n != lay->cols)
        return gf_fail("%s:%lld: %d %s column(s); expected %d (%s); the %s \"%s\"", s->path,
                       (long long)gf_lines_number(r), fs->n, sep_name(s), lay->cols,
                       lay->cols == 3 && !lay->label ? "label, premise, hypothesis"
                       : lay->cols == 2 && lay->label < 0 ? "premise, hypothesis" : "as in the header row",
                       s->csv ? "record's first field is" : "line begins", visible(shown, nshown, vis));
    const int lab = lay->label;
    if (lab == 0 && lay->cols == 3 && parse_label(f[0], fl[0]) == -2 && parse_label(f[2], fl[2]) != -2)
        return gf_fail("%s:%lld: unknown gold label \"%s\" in the first column, and a label in the last; without "
                       "a header row the columns are label, premise, hypothesis\nHINT: name the columns in a first row: "
                       "%s", s->path, (long long)gf_lines_number(r), visible(f[0], fl[0], vis),
                       s->csv ? "premise,hypothesis,label" : "premise<TAB>hypothesis<TAB>label");
    return keep(s, r, lab < 0 ? NULL : f[lab], lab < 0 ? 0 : fl[lab], f[lay->premise], fl[lay->premise],
                f[lay->hypothesis], fl[lay->hypothesis]);
}

/* line split at tabs into fs (at most GF_CSV_MAX_FIELDS kept; fs->n counts them all). */
static void tab_fields(const char *line, size_t len, fields *fs) {
    fs->n = split_tabs(line, len, fs->f, fs->fl, GF_CSV_MAX_FIELDS);
}

/* The record beginning with line into fs: split at tabs, or read as CSV (r NULL: that line alone). */
static int line_fields(const gf_nli_split *s, gf_lines *r, gf_csv_record *csv, const char *line, size_t len,
                       fields *fs) {
    if (!s->csv) {
        tab_fields(line, len, fs);
        return 0;
    }
    if (gf_csv_parse(csv, r, line, len)) return -1;
    fs->n = csv->n;
    for (int k = 0; k < csv->n && k < GF_CSV_MAX_FIELDS; k++) fs->f[k] = csv->f[k], fs->fl[k] = csv->fl[k];
    return 0;
}

/* Whether field f[0..n) is one of the names a header gives a column. */
static bool named(const char *f, size_t n, const char *a, const char *b) {
    return (n == strlen(a) && !memcmp(f, a, n)) || (n == strlen(b) && !memcmp(f, b, n));
}

/* Column k (named f[0..n)) of a header row for the field whose names are a and b, into *at; -1 after an error
 * naming file, line and both columns if an earlier column named it too: which to read is not clear. */
static int header_column(const gf_nli_split *s, const gf_lines *r, const char *const *f, const size_t *fl, int k,
                         const char *a, const char *b, int *at) {
    if (!named(f[k], fl[k], a, b)) return 0;
    if (*at >= 0) {
        char va[200], vb[200];
        return gf_fail("%s:%lld: the header row names columns %d (\"%s\") and %d (\"%s\") for one field (%s or %s); "
                       "expected one column each for the label, the premise and the hypothesis: which to read is not "
                       "clear\nHINT: rename or remove one of them", s->path, (long long)gf_lines_number(r), *at + 1,
                       visible(f[*at], fl[*at], va), k + 1, visible(f[k], fl[k], vb), a, b);
    }
    *at = k;
    return 0;
}

/* A header row (the official snli_1.0_*.txt one, or any naming its columns): where gold_label (or label),
 * sentence1 (or premise) and sentence2 (or hypothesis) are. A file of pairs read whole may have no label
 * column. */
static int fields_header(gf_nli_split *s, const gf_lines *r, const fields *fs, tsv_layout *lay) {
    const int n = fs->n;
    *lay = (tsv_layout){.cols = n, .label = -1, .premise = -1, .hypothesis = -1};
    for (int k = 0; k < n && k < GF_CSV_MAX_FIELDS; k++)
        if (header_column(s, r, fs->f, fs->fl, k, "gold_label", "label", &lay->label) ||
            header_column(s, r, fs->f, fs->fl, k, "sentence1", "premise", &lay->premise) ||
            header_column(s, r, fs->f, fs->fl, k, "sentence2", "hypothesis", &lay->hypothesis))
            return -1;
    if (n > GF_CSV_MAX_FIELDS || (lay->label < 0 && !s->all) || lay->premise < 0 || lay->hypothesis < 0)
        return gf_fail("%s:%lld: a header row without gold_label (or label), sentence1 (or premise) and sentence2 (or "
                       "hypothesis) columns, or with more than 16 columns; expected the header of the official "
                       "snli_1.0_*.txt files, or one such as %s%s", s->path, (long long)gf_lines_number(r),
                       s->csv ? "premise,hypothesis,label" : "premise<TAB>hypothesis<TAB>label",
                       s->all ? " (the label column may be left out)" : "");
    return 0;
}

/* Whether a first record is a header row: two columns or more, one named gold_label, sentence1, premise or
 * sentence2. */
static bool is_header(const fields *fs) {
    for (int k = 0; k < fs->n && k < GF_CSV_MAX_FIELDS && fs->n >= 2; k++)
        if (named(fs->f[k], fs->fl[k], "gold_label", "sentence1") || named(fs->f[k], fs->fl[k], "premise", "sentence2"))
            return true;
    return false;
}

/* Whether line (one without a tab) is a comma-separated header row: how a file not named *.csv is known as
 * CSV. */
static bool csv_header_line(const char *line, size_t len) {
    gf_csv_record c;
    fields fs;
    gf_csv_init(&c, MAX_RECORD);
    bool header = !memchr(line, '\t', len) && !gf_csv_parse(&c, NULL, line, len);
    if (header) {
        fs.n = c.n;
        for (int k = 0; k < c.n && k < GF_CSV_MAX_FIELDS; k++) fs.f[k] = c.f[k], fs.fl[k] = c.fl[k];
        header = is_header(&fs);
    }
    gf_csv_free(&c);
    return header;
}

#define PAIR_FORMS "JSON lines ({\"premise\": ..., \"hypothesis\": ..., \"label\": ...} or SNLI's {\"sentence1\", " \
                   "\"sentence2\", \"gold_label\"}), tab-separated columns (label<TAB>premise<TAB>hypothesis, " \
                   "premise<TAB>hypothesis, or a header row naming them) or comma-separated ones (named *.csv, or with " \
                   "a header row such as premise,hypothesis,label)"

/* A first line in none of the forms, in a file whose name does not say its form. */
static int unknown_form(const gf_nli_split *s, const gf_lines *r, const char *line, size_t len) {
    char vis[200];
    return gf_fail("%s:%lld: not sentence pairs in a form grassflow reads: the first line (\"%s\") is not a JSON "
                   "object, has no tab and is not a comma-separated header row; expected " PAIR_FORMS "\nHINT: name "
                   "the file for its form (*.jsonl, *.tsv, *.csv; plain or .xz), or give it a header row",
                   s->path, (long long)gf_lines_number(r), visible(line, len, vis));
}

/* The format from the first record that is not blank: "{" jsonl; a header row "txt" (the official one, which
 * begins with gold_label), "tsv-header" or "csv-header"; anything else "tsv" or "csv": label, premise,
 * hypothesis (or in a file of pairs read whole, premise, hypothesis). A file whose name does not say its form is
 * CSV if its first line is a comma-separated header row. 1 when the record was read here (the header, or a
 * CSV record, which may have taken more lines), 0 when the line is a record still to read, -1 after an error. */
static int sniff(gf_nli_split *s, gf_lines *r, gf_csv_record *csv, const char *line, size_t len, tsv_layout *lay) {
    size_t k = 0;
    while (k < len && (line[k] == ' ' || line[k] == '\t')) k++;
    if (line[k] == '{' && !s->tsv_named && !s->csv) {
        s->format = "jsonl";
        return 0;
    }
    if (!s->tsv_named && !s->csv && !memchr(line, '\t', len)) {
        if (!csv_header_line(line, len)) return unknown_form(s, r, line, len);
        s->csv = true;
    }
    fields fs;
    if (line_fields(s, r, csv, line, len, &fs)) return -1;
    const bool header = is_header(&fs);
    s->format = s->csv ? (header ? "csv-header" : "csv") : !header ? "tsv"
              : !strncmp(line, "gold_label\t", 11) ? "txt" : "tsv-header";
    if (header) return fields_header(s, r, &fs, lay) ? -1 : 1;
    if (s->all && fs.n == 2) *lay = (tsv_layout){.cols = 2, .label = -1, .hypothesis = 1};
    if (!s->csv) return 0;
    return fields_record(s, r, lay, &fs, fs.f[0], fs.fl[0]) ? -1 : 1;
}

/* One record of a TSV or CSV file. */
static int columns_record(gf_nli_split *s, gf_lines *r, gf_csv_record *csv, const tsv_layout *lay, const char *line,
                          size_t len) {
    fields fs;
    if (line_fields(s, r, csv, line, len, &fs)) return -1;
    return s->csv ? fields_record(s, r, lay, &fs, fs.f[0], fs.fl[0]) : fields_record(s, r, lay, &fs, line, len);
}

/* Every record of the file (a UTF-8 byte order mark before the first is skipped, and blank lines). */
static int read_records(gf_nli_split *s, gf_lines *r) {
    const char *line;
    size_t len;
    int got = 0, rc = 0;
    tsv_layout lay = {.cols = 3, .label = 0, .premise = 1, .hypothesis = 2};
    gf_csv_record csv;
    gf_csv_init(&csv, MAX_RECORD);
    while (!rc && (s->max_pairs <= 0 || s->n < s->max_pairs) && (got = gf_lines_next(r, &line, &len)) == 1) {
        if (gf_lines_number(r) == 1 && len >= 3 && !memcmp(line, "\xEF\xBB\xBF", 3)) line += 3, len -= 3;
        if (blank_line(line, len)) continue; /* blank lines carry nothing */
        if (!s->format && (rc = sniff(s, r, &csv, line, len, &lay)) != 0) {
            rc = rc < 0 ? -1 : 0;
            continue;
        }
        rc = !strcmp(s->format, "jsonl") ? jsonl_record(s, r, line, len) : columns_record(s, r, &csv, &lay, line, len);
    }
    gf_csv_free(&csv);
    return rc ? rc : got < 0 ? -1 : 0;
}

/* A file is known by its name: *.jsonl is JSON lines (each line an object, whatever it begins with), *.tsv
 * tab-separated, *.csv comma-separated (plain or .xz); any other name (*.txt among them) by its first line
 * (sniff). */
static void format_by_name(gf_nli_split *s, const char *path) {
    if (ends_with(path, ".jsonl") || ends_with(path, ".jsonl.xz")) s->format = "jsonl";
    s->tsv_named = ends_with(path, ".tsv") || ends_with(path, ".tsv.xz");
    s->csv = ends_with(path, ".csv") || ends_with(path, ".csv.xz");
}
/* path into *out, every row kept when all (gf_nli_read_pairs); the first max_pairs pairs only if > 0. */
static int read_file(const char *path, gf_nli_split *out, bool all, int64_t max_pairs) {
    memset(out, 0, sizeof *out);
    out->all = all;
    out->max_pairs = max_pairs;
    format_by_name(out, path);
    if (gf_path_join(out->path, sizeof out->path, NULL, path)) return -1;
    const size_t max_text = gf_corpus_max_text(); /* once: it asks the system for the memory there is */
    out->max_bytes = max_text < ((size_t)1 << 62) ? (int64_t)max_text : (int64_t)1 << 62;
    gf_lines *r = gf_lines_open(path, MAX_RECORD);
    if (!r) return -1;
    int rc = read_records(out, r);
    gf_lines_close(r);
    if (!rc && (!out->format || (!out->rows && !strcmp(out->format, "jsonl")))) /* jsonl: known by its name */
        rc = gf_fail("%s: the file is empty (or blank); expected sentence pairs", gf_show_name(path));
    if (!rc && all && !out->n) rc = gf_fail("%s: a header row and no pair; expected sentence pairs", gf_show_name(path));
    if (rc) gf_nli_split_free(out);
    return rc;
}

int gf_nli_read(const char *path, gf_nli_split *out) { return read_file(path, out, false, 0); }
int gf_nli_read_pairs(const char *path, gf_nli_split *out) { return read_file(path, out, true, 0); }

void gf_nli_split_init(gf_nli_split *s, const char *what) {
    memset(s, 0, sizeof *s);
    s->all = true;
    s->format = "memory";
    snprintf(s->path, sizeof s->path, "%s", what);
    const size_t max_text = gf_corpus_max_text();
    s->max_bytes = max_text < ((size_t)1 << 62) ? (int64_t)max_text : (int64_t)1 << 62;
}

int gf_nli_split_add(gf_nli_split *s, const char *premise, const char *hypothesis, int label) {
    if (label < -1 || label >= GF_NLI_CLASSES)
        return gf_fail("%s, pair %lld: label %d; expected -1 (none) or 0 .. 2", s->path, (long long)s->n + 1, label);
    s->rows++;
    s->unlabelled += label == -1;
    return store(s, NULL, label, premise, strlen(premise), hypothesis, strlen(hypothesis));
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

/* The one of DIR/snli_1.0_STEM.{jsonl,txt,tsv}[.xz] there is, into path: 1 if it is a regular file (or a link
 * to one), -1 after an error saying what else it is (a directory, a FIFO, a link loop, a dangling link: never
 * taken for a missing file, nor passed over for the next name) or naming two that are there (snli_1.0_dev.jsonl
 * and snli_1.0_dev.txt: which to read is not clear), 0 if there is none. */
static int find_split(const char *dir, const char *stem, char *path, size_t cap) {
    char name[96], first[GF_PATH_MAX] = "";
    struct stat st;
    for (int k = 0; k < 6; k++) {
        snprintf(name, sizeof name, "snli_1.0_%s%s", stem, EXT[k]);
        if (gf_path_join(path, cap, dir, name)) return -1;
        if (lstat(path, &st) != 0) continue; /* nothing by that name */
        if (first[0])
            return gf_fail("%s and %s are both there; expected one file for the %s split: which to read is not clear"
                           "\nHINT: move one of them out of %s", first, gf_show_name(path), stem, gf_show_name(dir));
        snprintf(first, sizeof first, "%s", path);
    }
    if (!first[0]) return 0;
    snprintf(path, cap, "%s", first); /* fits: it was joined into path */
    if (stat(path, &st) != 0) {
        if (errno == ELOOP || errno == ENOENT)
            return gf_fail("%s is %s; expected a regular file", gf_show_name(path),
                           errno == ELOOP ? "a symbolic link loop" : "a symbolic link to nothing");
        return gf_fail("cannot read %s: %s", gf_show_name(path), strerror(errno));
    }
    if (!S_ISREG(st.st_mode)) {
        FILE *f = gf_open_regular(path, NULL); /* which says what it is */
        if (f) fclose(f);
        return -1;
    }
    return 1;
}

static int nli_dir(const char *spec, const char *data_dir, char *dir, size_t cap) {
    if (!strcmp(spec, "snli")) return gf_path_join(dir, cap, data_dir, "snli");
    return gf_path_join(dir, cap, NULL, spec);
}

static const char *const STEMS[3][2] = {{"train", "train_0.01"}, {"dev", NULL}, {"test", NULL}};
static const char *const SPLIT_NAMES[3] = {"train", "dev", "test"};


/* Whether the first line of a file that is not blank looks like a record of pairs or their header. */
static bool looks_like_pairs(const char *line, size_t len) {
    if (len && line[0] == '{') {
        cJSON *o = cJSON_ParseWithLength(line, len);
        const bool pairs = json_string(o, "sentence1") || json_string(o, "premise");
        cJSON_Delete(o);
        return pairs;
    }
    fields fs;
    tab_fields(line, len, &fs);
    return is_header(&fs) || (fs.n == 3 && parse_label(fs.f[0], fs.fl[0]) != -2) || csv_header_line(line, len);
}

bool gf_nli_file(const char *path) {
    static const char *const names[] = {".jsonl", ".jsonl.xz", ".tsv", ".tsv.xz", ".csv", ".csv.xz"};
    bool named = false;
    for (int k = 0; k < 6; k++) named = named || ends_with(path, names[k]);
    struct stat st;
    if (stat(path, &st) != 0) return named && errno == ENOENT; /* reading it says it is not there */
    if (named && !S_ISDIR(st.st_mode)) return true;             /* ... or what else it is (a FIFO) */
    if (!S_ISREG(st.st_mode)) return false;
    gf_lines *r = gf_lines_open(path, MAX_RECORD);
    const char *line;
    size_t len;
    bool pairs = false;
    while (r && gf_lines_next(r, &line, &len) == 1) {
        if (gf_lines_number(r) == 1 && len >= 3 && !memcmp(line, "\xEF\xBB\xBF", 3)) line += 3, len -= 3;
        if (blank_line(line, len)) continue;
        pairs = looks_like_pairs(line, len);
        break;
    }
    if (r) gf_lines_close(r);
    return pairs;
}

int gf_nli_is_spec(const char *spec, const char *data_dir) {
    char dir[GF_PATH_MAX], path[GF_PATH_MAX];
    if (!strcmp(spec, "snli")) return 1;
    if (gf_nli_file(spec)) return 2;
    if (nli_dir(spec, data_dir, dir, sizeof dir)) return 0;
    for (int s = 0; s < 3; s++)
        for (int k = 0; k < 2; k++)
            if (STEMS[s][k] && find_split(dir, STEMS[s][k], path, sizeof path) != 0) return 1;
    return 0;
}

bool gf_nli_whole_file(const char *spec) {
    struct stat st;
    return strcmp(spec, "snli") && (gf_nli_file(spec) || (stat(spec, &st) == 0 && S_ISREG(st.st_mode)));
}

/* A file of pairs as each split of the mask (its first max_pairs if > 0): never the training split. */
static gf_nli_data *load_file(const char *path, unsigned splits, int64_t max_pairs, gf_nli_data *d) {
    if (splits & 1u << GF_TRAIN) {
        gf_fail("%s is a file%s: it can be scored (grassflow eval, predict), not trained on; expected a folder with "
                "a train and a dev split\nHINT: snli, or the folder of snli_1.0.zip (snli_1.0_train.jsonl, "
                "snli_1.0_dev.jsonl, ...)", gf_show_name(path), gf_nli_file(path) ? " of sentence pairs" : ", not a folder of splits");
        gf_nli_free(d);
        return NULL;
    }
    for (int s = 0; s < 3; s++)
        if (splits & 1u << s && read_file(path, &d->split[s], true, max_pairs)) {
            gf_nli_free(d);
            return NULL;
        }
    return d;
}

gf_nli_data *gf_nli_load_splits(const char *spec, const char *data_dir, unsigned splits) {
    return gf_nli_load_first(spec, data_dir, splits, 0);
}

gf_nli_data *gf_nli_load_first(const char *spec, const char *data_dir, unsigned splits, int64_t max_pairs) {
    char dir[GF_PATH_MAX], path[GF_PATH_MAX];
    if (nli_dir(spec, data_dir, dir, sizeof dir)) return NULL;
    gf_nli_data *d = calloc(1, sizeof *d);
    if (!d) {
        gf_fail("out of memory");
        return NULL;
    }
    snprintf(d->name, sizeof d->name, "%.63s", spec);
    if (gf_nli_whole_file(spec)) return load_file(spec, splits, max_pairs, d);
    for (int s = 0; s < 3; s++) {
        if (!(splits & (1u << s))) continue;
        int found = find_split(dir, STEMS[s][0], path, sizeof path);
        if (!found && STEMS[s][1]) found = find_split(dir, STEMS[s][1], path, sizeof path);
        if (!found)
            gf_fail("%s: no %s split: no snli_1.0_%s.jsonl, .jsonl.xz, .txt, .txt.xz, .tsv or .tsv.xz%s; expected the "
                    "files of snli_1.0.zip (or grassflow's data/snli)\nHINT: unpack snli_1.0.zip and give its snli_1.0 "
                    "folder as --corpus", gf_show_name(dir), SPLIT_NAMES[s], STEMS[s][0], s == 0 ? " (nor snli_1.0_train_0.01.*)" : "");
        if (found != 1 || read_file(path, &d->split[s], false, max_pairs)) {
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
