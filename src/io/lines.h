/* Line-by-line reading of a text file, plain or xz-compressed (.xz), in constant memory: for data sets
 * that must stream (the full SNLI training file) rather than be read whole. */
#ifndef GF_IO_LINES_H
#define GF_IO_LINES_H

#include <stddef.h>
#include <stdint.h>

typedef struct gf_lines gf_lines;

/* Open path (a regular file; decompressed on the fly when it ends in .xz). A line longer than max_line
 * bytes is an error naming the file and line, not an allocation. */
gf_lines *gf_lines_open(const char *path, size_t max_line);
/* The next line, without its "\n" (or "\r\n"), NUL-terminated and valid until the next call: 1, or 0 at
 * the end of the file, or -1 on an error (gf_last_error names the file and line): a read or xz error, a
 * line longer than max_line, a NUL byte inside a line (so *len is always the line's strlen). */
int gf_lines_next(gf_lines *r, const char **line, size_t *len);
int64_t gf_lines_number(const gf_lines *r); /* 1-based number of the line last returned */
const char *gf_lines_path(const gf_lines *r);
void gf_lines_close(gf_lines *r);

#endif
