/* Whole-file reads with size limits, and atomic writes (temporary file, fsync, rename, fsync dir). */
#ifndef GF_IO_FILE_H
#define GF_IO_FILE_H

#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>

/* Read all of path into a malloc'd buffer (NUL-terminated, not counted in *size). Fails with a clear
 * message when the file is missing, unreadable or larger than max_bytes. */
/* path opened for reading if it is a regular file (stat into *st if st is non-NULL); a FIFO, a directory or
 * a device is refused with an error naming the path and what it is, and opening never blocks. */
FILE *gf_open_regular(const char *path, struct stat *st);
unsigned char *gf_read_file(const char *path, size_t max_bytes, size_t *size);

/* dst = "DIR/NAME" (dir may be NULL: dst = NAME); a result that does not fit in cap bytes is an error naming
 * the path, never a shorter path that would name another file. */
int gf_path_join(char *dst, size_t cap, const char *dir, const char *name);

/* Atomic writer: data goes to "PATH.tmp.PID"; commit fsyncs and renames it over PATH, so PATH holds
 * either the old or the new content, never a torn file. */
typedef struct gf_atomic_file gf_atomic_file;
gf_atomic_file *gf_atomic_open(const char *path);
int gf_atomic_write(gf_atomic_file *f, const void *data, size_t n);
int gf_atomic_commit(gf_atomic_file *f);   /* frees f */
void gf_atomic_abort(gf_atomic_file *f);   /* removes the temporary file, frees f */

/* A test hook: called before every chunk gf_atomic_write writes, with the temporary file's path and the
 * chunk's size (tests/kill.sh slows writes down through it so that kills land inside them). NULL: none.
 * Set it before any write starts; the library itself never sets it. */
typedef void (*gf_write_hook)(const char *tmp_path, size_t n, void *ctx);
void gf_atomic_set_write_hook(gf_write_hook hook, void *ctx);

#endif
