/* RFC 4180 records over a line reader: a small state machine, one record's bytes in one buffer. */
#include "io/csv.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

enum { FIELD_START, UNQUOTED, QUOTED, QUOTE_SEEN };

void gf_csv_init(gf_csv_record *c, size_t max) {
    memset(c, 0, sizeof *c);
    c->max = max;
}

void gf_csv_free(gf_csv_record *c) {
    free(c->buf);
    c->buf = NULL;
    c->len = c->cap = 0;
}

static const char *path_of(gf_lines *r) { return r ? gf_lines_path(r) : "the line"; }
static int64_t line_of(const gf_csv_record *c, gf_lines *r) { return r ? gf_lines_number(r) : c->first_line; }

/* One byte more in the record: -1 after an error once it passes max bytes (or out of memory). */
static int put(gf_csv_record *c, gf_lines *r, char ch) {
    if (c->len + 1 >= c->cap) {
        if (c->len + 1 > c->max)
            return gf_fail("%s:%lld: a record (from line %lld) passes %zu bytes; expected comma-separated fields, a "
                           "quoted one closed by a \" on its line or a later one\nHINT: a quote that opens a field "
                           "and never closes? A quote inside a quoted field is written twice (\"\")", path_of(r),
                           (long long)line_of(c, r), (long long)c->first_line, c->max);
        size_t nc = c->cap ? c->cap * 2 : 256;
        if (nc > c->max + 1) nc = c->max + 1;
        char *nb = realloc(c->buf, nc);
        if (!nb) return gf_fail("out of memory reading a record of %s", path_of(r));
        c->buf = nb;
        c->cap = nc;
    }
    c->buf[c->len++] = ch;
    return 0;
}

/* The field that began at offset start ends here: NUL-terminate it and note where it is. */
static int end_field(gf_csv_record *c, gf_lines *r, size_t *start, size_t *off) {
    if (put(c, r, '\0')) return -1;
    if (c->n < GF_CSV_MAX_FIELDS) {
        off[c->n] = *start;
        c->fl[c->n] = c->len - 1 - *start;
    }
    c->n++;
    *start = c->len;
    return 0;
}

static int after_quote(const gf_csv_record *c, gf_lines *r, char ch) {
    return gf_fail("%s:%lld: '%c' after the closing quote of field %d; expected a comma or the end of the line\n"
                   "HINT: a quote inside a quoted field is written twice (\"\"): \"She said \"\"hi\"\"\"",
                   path_of(r), (long long)line_of(c, r), ch >= 0x20 && ch < 0x7F ? ch : '?', c->n + 1);
}

/* One line's bytes through the state machine; *state is where the record stands at its end. */
static int scan(gf_csv_record *c, gf_lines *r, const char *line, size_t len, int *state, size_t *start, size_t *off) {
    for (size_t i = 0; i < len; i++) {
        const char ch = line[i];
        int rc = 0;
        switch (*state) {
        case FIELD_START:
            if (ch == '"') *state = QUOTED;
            else if (ch == ',') rc = end_field(c, r, start, off);
            else *state = UNQUOTED, rc = put(c, r, ch);
            break;
        case UNQUOTED:
            if (ch == ',') *state = FIELD_START, rc = end_field(c, r, start, off);
            else rc = put(c, r, ch);
            break;
        case QUOTED:
            if (ch == '"') *state = QUOTE_SEEN;
            else rc = put(c, r, ch);
            break;
        default: /* QUOTE_SEEN */
            if (ch == '"') *state = QUOTED, rc = put(c, r, '"');
            else if (ch == ',') *state = FIELD_START, rc = end_field(c, r, start, off);
            else rc = after_quote(c, r, ch);
        }
        if (rc) return -1;
    }
    return 0;
}

int gf_csv_parse(gf_csv_record *c, gf_lines *r, const char *line, size_t len) {
    size_t start = 0, off[GF_CSV_MAX_FIELDS];
    int state = FIELD_START;
    c->n = 0;
    c->len = 0;
    c->first_line = r ? gf_lines_number(r) : 1;
    for (;;) {
        if (scan(c, r, line, len, &state, &start, off)) return -1;
        if (state != QUOTED) break;
        if (!r) return gf_fail("the line ends inside a quoted field");
        if (put(c, r, '\n')) return -1; /* a line break inside a quoted field */
        const int got = gf_lines_next(r, &line, &len);
        if (got < 0) return -1;
        if (got == 0)
            return gf_fail("%s:%lld: a quoted field opens on this line and never closes (the file ends first); "
                           "expected a closing \"\nHINT: a quote inside a quoted field is written twice (\"\")",
                           path_of(r), (long long)c->first_line);
    }
    if (end_field(c, r, &start, off)) return -1;
    for (int k = 0; k < c->n && k < GF_CSV_MAX_FIELDS; k++) c->f[k] = c->buf + off[k];
    c->last_line = line_of(c, r);
    return 0;
}
