/* grassflow plot --table's reader: a TSV file (a header line naming the columns, then a row per point) into
 * a plot_table. Every cell is checked as it is read, and a bad one is an error naming the file, the line and
 * the column: a figure drawn from a table that was misread would be believed. */
#include "plot_table.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { COL_SERIES, COL_X, COL_Y, COL_LABEL, COL_DASH, COL_COLOUR, COL_GROUP, N_COLS };
static const char *const col_names[N_COLS] = {"series", "x", "y", "label", "dash", "colour", "group"};
#define COLUMN_LIST "series, x, y, label, dash, colour, group"

/* Where the reader is, for its messages, and what the header said. */
typedef struct {
    const char *path;
    int line;
    int col[N_COLS]; /* each column's cell in a row, -1: the table has no such column */
    int n_cols;
    plot_kind kind;
    bool logx, logy;
    int rows;
} reader;

/* An error at the reader's line, in column col (-1: the line as a whole). */
static int bad(const reader *r, int col, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(const reader *r, int col, const char *fmt, ...) {
    char msg[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (col < 0) return cli_error("plot: %s, line %d: %s", gf_show_name(r->path), r->line, msg);
    return cli_error("plot: %s, line %d, column %s: %s", gf_show_name(r->path), r->line, col_names[col], msg);
}

/* The cells of line s, cut in place at its tabs, into cells[0..max); returns how many it has (past max: not
 * stored). */
static int split(char *s, char **cells, int max) {
    int n = 0;
    for (char *c = s;;) {
        char *tab = strchr(c, '\t');
        if (n < max) cells[n] = c;
        n++;
        if (!tab) return n;
        *tab = '\0';
        c = tab + 1;
    }
}

static int hex(char c) { return isdigit((unsigned char)c) ? c - '0' : tolower((unsigned char)c) - 'a' + 10; }

/* A cell as gf_escape_tsv writes it, read back in place: \\ \t \n \r and \xNN stand for the byte they name
 * (\x00 excepted: a cell is a C string); a backslash before anything else is itself. */
static void unescape(char *s) {
    char *o = s;
    for (const char *i = s; *i; i++) {
        const char c = i[0] == '\\' ? i[1] : '\0';
        if (c == '\\' || c == 't' || c == 'n' || c == 'r') {
            *o++ = c == 't' ? '\t' : c == 'n' ? '\n' : c == 'r' ? '\r' : '\\';
            i++;
        } else if (c == 'x' && isxdigit((unsigned char)i[2]) && isxdigit((unsigned char)i[3]) &&
                   16 * hex(i[2]) + hex(i[3]) != 0) {
            *o++ = (char)(16 * hex(i[2]) + hex(i[3]));
            i += 3;
        } else {
            *o++ = *i;
        }
    }
    *o = '\0';
}

/* The columns a figure of r's kind needs and those it cannot draw. */
static int check_columns(const reader *r) {
    const bool bars = r->kind == PLOT_BARS;
    const char *kind = bars ? "bars" : r->kind == PLOT_POINTS ? "points" : "lines";
    const int need[2] = {bars ? COL_GROUP : COL_X, COL_Y}, refuse[2] = {bars ? COL_X : COL_GROUP, bars ? COL_DASH : -1};
    for (int k = 0; k < 2; k++)
        if (r->col[need[k]] < 0)
            return bad(r, -1, "the header has no column %s: a figure of %s needs %s and y", col_names[need[k]], kind,
                       col_names[need[0]]);
    for (int k = 0; k < 2; k++)
        if (refuse[k] >= 0 && r->col[refuse[k]] >= 0)
            return bad(r, -1, "column %s is not one a figure of %s draws (%s)", col_names[refuse[k]], kind,
                       refuse[k] == COL_GROUP ? "group is for --kind bars; lines and points are placed by x"
                       : refuse[k] == COL_X   ? "bars are placed by group, not by x"
                                              : "bars have no line");
    return EXIT_OK;
}

/* The header line: each cell one of the columns, none twice. */
static int read_header(reader *r, char *line) {
    char *cells[N_COLS];
    const int n = split(line, cells, N_COLS);
    for (int k = 0; k < N_COLS; k++) r->col[k] = -1;
    if (!line[0] && n == 1)
        return bad(r, -1, "empty: the first line is the header, the columns' names separated by tabs (" COLUMN_LIST ")");
    if (n > N_COLS)
        return bad(r, -1, "the header has %d cells; a table has at most %d columns, each once (" COLUMN_LIST ")", n,
                   N_COLS);
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < N_COLS && strcmp(cells[i], col_names[k])) k++;
        if (k == N_COLS)
            return bad(r, -1, "header cell %d, '%s', is not a column of a table (" COLUMN_LIST ")", i + 1,
                       gf_show_name(cells[i]));
        if (r->col[k] >= 0)
            return bad(r, -1, "the header names column %s twice (cells %d and %d)", cells[i], r->col[k] + 1, i + 1);
        r->col[k] = i;
    }
    r->n_cols = n;
    return check_columns(r);
}

/* Cell s of column col as a finite number into *v (above 0 on a log axis). */
static int number(const reader *r, int col, const char *s, bool log, double *v) {
    char *end;
    *v = strtod(s, &end);
    while (*end == ' ') end++;
    if (end == s || *end) return bad(r, col, "'%s' is not a number", gf_show_name(s));
    if (!isfinite(*v)) return bad(r, col, "'%s' is not a finite number", gf_show_name(s));
    if (log && !(*v > 0))
        return bad(r, col, "%s is not above 0, and --log%s draws %s on a log scale", gf_show_name(s), col_names[col],
                   col_names[col]);
    return EXIT_OK;
}

static bool is_colour(const char *s) {
    const size_t n = strlen(s);
    return s[0] == '#' && (n == 4 || n == 7) && strspn(s + 1, "0123456789abcdefABCDEF") == n - 1;
}

static bool is_dash(const char *s) { return strlen(s) < 32 && strpbrk(s, "0123456789") && !s[strspn(s, "0123456789., ")]; }

/* Series s's colour or dash (column col) from cell v ("": the row does not say): checked, and the same on
 * every row of the series that says. */
static int style(const reader *r, table_series *s, int col, const char *v) {
    if (!v || !v[0]) return EXIT_OK;
    char *have = col == COL_COLOUR ? s->colour : s->dash;
    int *at = col == COL_COLOUR ? &s->colour_line : &s->dash_line;
    if (col == COL_COLOUR && !is_colour(v)) return bad(r, col, "'%s' is not a colour (#rgb or #rrggbb)", gf_show_name(v));
    if (col == COL_DASH && !is_dash(v))
        return bad(r, col, "'%s' is not a dash pattern (lengths in pixels, separated by commas: 6,4)", gf_show_name(v));
    if (have[0] && strcmp(have, v))
        return bad(r, col, "'%s', but series '%s' has %s %s since line %d (one %s a series)", gf_show_name(v),
                   gf_show_name(s->name), col_names[col], have, *at, col_names[col]);
    if (!have[0]) strcpy(have, v), *at = r->line; /* is_colour, is_dash: it fits */
    return EXIT_OK;
}

/* The series named `name` (a new one after the others), into *s. */
static int series_of(const reader *r, plot_table *t, const char *name, table_series **s) {
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->s[i].name, name)) return *s = &t->s[i], EXIT_OK;
    if (t->n == PLOT_TABLE_MAX_SERIES)
        return bad(r, r->col[COL_SERIES], "'%s' would be series %d; one plot holds %d", gf_show_name(name), t->n + 1,
                   PLOT_TABLE_MAX_SERIES);
    *s = &t->s[t->n];
    if (!((*s)->name = strdup(name))) return cli_error("out of memory");
    t->n++;
    return EXIT_OK;
}

/* The index of group `name` (a new one after the others) as *x; a series has one bar in a group. */
static int group_of(const reader *r, plot_table *t, const table_series *s, const char *name, double *x) {
    int g = 0;
    while (g < t->n_groups && strcmp(t->groups[g], name)) g++;
    if (g == PLOT_TABLE_MAX_GROUPS)
        return bad(r, COL_GROUP, "'%s' would be group %d; a bar chart holds %d", gf_show_name(name), g + 1,
                   PLOT_TABLE_MAX_GROUPS);
    if (g == t->n_groups && !(t->groups[t->n_groups++] = strdup(name))) return cli_error("out of memory");
    for (int j = 0; j < s->n; j++)
        if (s->p[j].x == g)
            return bad(r, COL_GROUP, "series '%s' has a bar in group '%s' already (line %d)", gf_show_name(s->name),
                       gf_show_name(name), s->p[j].line);
    *x = g;
    return EXIT_OK;
}

static int append(table_series *s, const table_point *q) {
    if (s->n == s->cap) {
        const int cap = s->cap ? 2 * s->cap : 16;
        table_point *p = realloc(s->p, (size_t)cap * sizeof *p);
        if (!p) return cli_error("out of memory");
        s->p = p, s->cap = cap;
    }
    s->p[s->n++] = *q;
    return EXIT_OK;
}

/* One row: its cells, then the point they make, appended to its series. */
static int read_row(reader *r, char *line, plot_table *t) {
    char *cells[N_COLS];
    const int n = split(line, cells, N_COLS);
    if (n != r->n_cols) return bad(r, -1, "%d cell%s; the header has %d columns", n, n == 1 ? "" : "s", r->n_cols);
    const char *cell[N_COLS];
    for (int k = 0; k < N_COLS; k++) {
        cell[k] = r->col[k] >= 0 ? cells[r->col[k]] : NULL;
        if (cell[k]) unescape(cells[r->col[k]]);
    }
    table_point q = {.line = r->line};
    table_series *s = NULL;
    int rc = series_of(r, t, cell[COL_SERIES] ? cell[COL_SERIES] : "", &s);
    if (!rc && cell[COL_X]) rc = number(r, COL_X, cell[COL_X], r->logx, &q.x);
    if (!rc) rc = number(r, COL_Y, cell[COL_Y], r->logy, &q.y);
    if (!rc && cell[COL_GROUP]) rc = group_of(r, t, s, cell[COL_GROUP], &q.x);
    if (!rc) rc = style(r, s, COL_COLOUR, cell[COL_COLOUR]);
    if (!rc) rc = style(r, s, COL_DASH, cell[COL_DASH]);
    if (!rc && cell[COL_LABEL] && cell[COL_LABEL][0] && !(q.label = strdup(cell[COL_LABEL])))
        rc = cli_error("out of memory");
    if (!rc) rc = append(s, &q);
    if (rc) free(q.label);
    return rc;
}

int plot_table_read(const char *path, plot_kind kind, bool logx, bool logy, plot_table *t) {
    memset(t, 0, sizeof *t);
    size_t len;
    char *text = (char *)gf_read_file(path, PLOT_TABLE_MAX_BYTES, &len);
    if (!text) return cli_error("plot: --table: %s", gf_last_error());
    reader r = {.path = path, .kind = kind, .logx = logx, .logy = logy};
    int rc = strlen(text) != len ? cli_error("plot: %s holds a NUL byte (at byte %zu): not a table of text",
                                             gf_show_name(path), strlen(text))
                                 : EXIT_OK;
    for (char *line = text, *next; !rc && line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        size_t n = strlen(line);
        if (n && line[n - 1] == '\r') line[--n] = '\0'; /* a file written with CRLF line ends */
        if (++r.line == 1) rc = read_header(&r, line);
        else if (n && ++r.rows > PLOT_TABLE_MAX_ROWS)
            rc = bad(&r, -1, "more than %d rows: more points than a figure shows", PLOT_TABLE_MAX_ROWS);
        else if (n) rc = read_row(&r, line, t); /* a blank line (the file's end) holds no row */
    }
    if (!rc && !r.rows) rc = cli_error("plot: %s has no rows under its header: nothing to draw", gf_show_name(path));
    free(text);
    return rc;
}

void plot_table_free(plot_table *t) {
    for (int i = 0; i < t->n; i++) {
        for (int j = 0; j < t->s[i].n; j++) free(t->s[i].p[j].label);
        free(t->s[i].p);
        free(t->s[i].name);
    }
    for (int g = 0; g < t->n_groups; g++) free(t->groups[g]);
    memset(t, 0, sizeof *t);
}
