/* Whole-file reads with size limits, and atomic writes (temporary file, fsync, rename, fsync dir). */
#ifndef GF_IO_FILE_H
#define GF_IO_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>

#include "grassflow_plugin.h" /* gf_read_file, gf_path_join, gf_mkdir_p, gf_atomic_set_write_hook: public */

/* path opened for reading if it is a regular file (stat into *st if st is non-NULL); a FIFO, a directory or
 * a device is refused with an error naming the path and what it is, and opening never blocks. */
FILE *gf_open_regular(const char *path, struct stat *st);


/* Atomic writer: data goes to "PATH.tmp.PID"; commit fsyncs and renames it over PATH, so PATH holds
 * either the old or the new content, never a torn file. A PATH that exists and is not a regular file (a FIFO,
 * a device node, a directory) is refused: the rename would replace the node. */
typedef struct gf_atomic_file gf_atomic_file;
gf_atomic_file *gf_atomic_open(const char *path);
int gf_atomic_write(gf_atomic_file *f, const void *data, size_t n);
int gf_atomic_commit(gf_atomic_file *f);   /* frees f */
void gf_atomic_abort(gf_atomic_file *f);   /* removes the temporary file, frees f */

/* mkdir -p dir (0755), as gf_mkdir_p; the folders it created (at most GF_MAX_MADE_DIRS, deepest last) are
 * listed by their path lengths in len[0..*n), for gf_unmake_dirs to remove again (a rejected run leaves
 * nothing behind). */
enum { GF_MAX_MADE_DIRS = 32 };
int gf_make_dirs(const char *dir, size_t *len, int *n);
void gf_unmake_dirs(const char *dir, const size_t *len, int n);

#endif
