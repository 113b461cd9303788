/* Comma-separated records (RFC 4180) read from a gf_lines reader: fields separated by commas; a field in
 * double quotes may hold commas, a quote written twice ("") and line breaks, so that one record may span
 * lines (a line break inside a field is read as "\n", a CRLF one too). A quote inside a field that does not
 * begin with one is kept as it is (as Python's csv module keeps it). Memory is one record, at most max
 * bytes: a quoted field that never closes is an error naming the line it opened on, at the end of the file
 * or once the record passes max bytes, whichever comes first. */
#ifndef GF_IO_CSV_H
#define GF_IO_CSV_H

#include <stddef.h>
#include <stdint.h>

#include "io/lines.h"

enum { GF_CSV_MAX_FIELDS = 16 };

typedef struct gf_csv_record {
    int n;                               /* fields in the record (the first GF_CSV_MAX_FIELDS are kept) */
    const char *f[GF_CSV_MAX_FIELDS];    /* each NUL-terminated, valid until the next record */
    size_t fl[GF_CSV_MAX_FIELDS];
    int64_t first_line, last_line;       /* the lines of the file the record spans (1-based) */
    char *buf;
    size_t len, cap, max;
} gf_csv_record;

/* An empty record holder whose records may take at most max bytes. */
void gf_csv_init(gf_csv_record *c, size_t max);
/* The record that begins with line[0..len) (the line r returned last): further lines are read from r while a
 * quoted field is open (r NULL: line is the whole record, and a quoted field open at its end is an error).
 * 0, or -1 after an error naming the file and line (gf_last_error): a quoted field that never closes, a
 * character other than a comma after a closing quote, a record past max bytes, or r's own errors. */
int gf_csv_parse(gf_csv_record *c, gf_lines *r, const char *line, size_t len);
void gf_csv_free(gf_csv_record *c);

#endif
