#include "base/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grassflow_plugin.h"

static _Thread_local char g_err[4096];

/* A message longer than the buffer (a path of many KB in it) keeps its head and its tail, where the
 * reason and the HINT are, with the middle elided. */
int gf_fail(const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(g_err, sizeof g_err, fmt, ap);
    va_end(ap);
    char *full = n >= (int)sizeof g_err ? malloc((size_t)n + 1) : NULL;
    if (full) {
        vsnprintf(full, (size_t)n + 1, fmt, ap2);
        const size_t head = 1000, tail = 2000;
        snprintf(g_err, sizeof g_err, "%.*s[... %zu bytes ...]%s", (int)head, full, (size_t)n - head - tail,
                 full + (size_t)n - tail);
        free(full);
    }
    va_end(ap2);
    return -1;
}

void gf_fail_context(const char *fmt, ...) {
    char extra[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(extra, sizeof extra, fmt, ap);
    va_end(ap);
    size_t n = strlen(g_err);
    snprintf(g_err + n, sizeof g_err - n, "%s", extra);
}

void gf_clear_error(void) { g_err[0] = '\0'; }

const char *gf_write_hint(int err) {
    switch (err) {
    case EROFS: return "the file system is read-only: write to a folder on a writable one, or remount it read-write";
    case EACCES:
    case EPERM: return "no permission to write there: choose a folder you can write to, or change the folder's owner or "
                       "mode (ls -ld shows them)";
    case ENOSPC: return "the disk is full: free some space (df -h shows each file system's), or write to another disk";
#ifdef EDQUOT
    case EDQUOT: return "your disk quota is used up: free some of your files (quota -s shows it), or write elsewhere";
#endif
    case EFBIG: return "the file is larger than the file system or the file size limit (ulimit -f) allows";
    case ENOENT:
    case ENOTDIR: return "a folder on the way is missing (or is a file): create it, or correct the path";
    case EISDIR: return "that name is a folder: give a file name";
    case ENAMETOOLONG: return "the path is too long: use shorter folder or file names";
    case ELOOP: return "a symbolic link on the way loops: correct the link, or give another path";
    case EIO: return "the device reported an input/output error: check the disk (dmesg), or write to another one";
    case EMFILE:
    case ENFILE: return "too many files are open: raise the limit (ulimit -n)";
    default: return "check that the folder exists, is writable and has free space";
    }
}

int gf_fail_write(int err, const char *fmt, ...) {
    char msg[3072];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return gf_fail("%s: %s\nHINT: %s", msg, strerror(err), gf_write_hint(err));
}

const char *gf_last_error(void) { return g_err; }

const char *gf_version(void) { return GF_VERSION; }

int gf_abi_version(void) { return GF_ABI_VERSION; }

/* ---- notes: what the library tells a user that is not an error ---------------------------------------- */

static void note_stderr(const char *msg, void *ctx) {
    (void)ctx;
    fputs("grassflow: ", stderr);
    gf_print_lines(stderr, msg); /* a name in it cannot send the terminal an escape sequence */
    fputc('\n', stderr);
}

static gf_note_fn g_note = note_stderr;
static void *g_note_ctx;
static bool g_notes_muted; /* a data-parallel job's ranks but the first (gf_note_mute, from dist/comm.c) */

void gf_note_mute(bool mute) { g_notes_muted = mute; }

void gf_set_note_handler(gf_note_fn fn, void *ctx) {
    g_note = fn ? fn : note_stderr;
    g_note_ctx = fn ? ctx : NULL;
}

void gf_note(const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!g_notes_muted) g_note(msg, g_note_ctx); /* a data-parallel job's notes: rank 0's, once */
}
