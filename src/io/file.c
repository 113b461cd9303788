#include "io/file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"

static const char *file_kind(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO (named pipe)";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

FILE *gf_open_regular(const char *path, struct stat *st) {
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        gf_fail("cannot open %s: %s", gf_show_name(path), strerror(errno));
        return NULL;
    }
    struct stat own;
    st = st ? st : &own;
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
        gf_fail("%s is %s; expected a regular file", gf_show_name(path), file_kind(st->st_mode));
        close(fd);
        return NULL;
    }
    FILE *f = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        gf_fail("cannot read %s: %s", gf_show_name(path), strerror(errno));
        close(fd);
    }
    return f;
}

int gf_open_write_regular(const char *path, int flags) {
    /* O_NONBLOCK: opening a FIFO for writing must not wait for a reader (with none it fails: ENXIO);
     * O_NOFOLLOW: a symbolic link is not followed to whatever it names */
    const int access_mode = (flags & O_ACCMODE) == O_RDWR ? 0 : O_WRONLY;
    int fd = open(path, flags | access_mode | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        struct stat st;
        if ((errno == ENXIO || errno == ELOOP) && lstat(path, &st) == 0)
            return gf_fail("%s is %s; grassflow writes only regular files\nHINT: give the path of a file", gf_show_name(path),
                           S_ISLNK(st.st_mode) ? "a symbolic link" : file_kind(st.st_mode));
        return gf_fail_write(errno, "cannot write %s", gf_show_name(path));
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return gf_fail("%s is %s; grassflow writes only regular files and never replaces a device node or a FIFO"
                       "\nHINT: give the path of a file", gf_show_name(path), file_kind(st.st_mode));
    }
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
        const int err = errno;
        close(fd);
        return gf_fail_write(err, "cannot write %s", gf_show_name(path));
    }
    return fd;
}

int gf_lock_file(const char *path, bool wait, char *held_by, size_t n) {
    for (int tries = 0; tries < 100; tries++) {
        int fd = gf_open_write_regular(path, O_RDWR | O_CREAT);
        if (fd < 0) return -1;
        int rc;
        while ((rc = flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB)) != 0 && errno == EINTR) {}
        if (rc != 0 && errno == EWOULDBLOCK) {
            ssize_t got = held_by && n ? pread(fd, held_by, n - 1, 0) : 0;
            if (held_by && n) held_by[got > 0 ? got : 0] = '\0';
            close(fd);
            return -2;
        }
        if (rc != 0) {
            gf_fail("cannot lock %s: %s", gf_show_name(path), strerror(errno));
            close(fd);
            return -1;
        }
        struct stat a, b; /* the holder before us may have removed the file as it unlocked: lock the new one */
        if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) return fd;
        close(fd);
    }
    return gf_fail("cannot lock %s: it is removed and made again faster than it can be locked", gf_show_name(path));
}

void gf_unlock_file(const char *path, int fd) {
    if (fd < 0) return;
    unlink(path); /* while it is held: a process waiting on this file sees it gone and locks a new one */
    close(fd);
}

/* 0 if path names no file; 1 if it is a regular file (*st filled); -1 (gf_fail) if it is something else. */
static int existing_regular(const char *path, struct stat *st) {
    if (stat(path, st) != 0) {
        if (errno == ENOENT) return 0;
        return gf_fail("cannot check %s: %s", gf_show_name(path), strerror(errno));
    }
    if (!S_ISREG(st->st_mode))
        return gf_fail("%s is %s; grassflow writes only regular files and never replaces a device node, a FIFO or "
                       "a directory\nHINT: give the path of a file", gf_show_name(path), file_kind(st->st_mode));
    return 1;
}

int gf_path_join(char *dst, size_t cap, const char *dir, const char *name) {
    int n = dir ? snprintf(dst, cap, "%s/%s", dir, name) : snprintf(dst, cap, "%s", name);
    if (n >= 0 && (size_t)n < cap) return 0;
    if (cap) dst[0] = '\0';
    return gf_fail("the path %.200s%s%.200s... is %d bytes long, more than the %zu this can hold\nHINT: use a shorter "
                   "directory or file name", dir ? dir : "", dir ? "/" : "", name, n, cap - 1);
}

unsigned char *gf_read_file(const char *path, size_t max_bytes, size_t *size) {
    struct stat st;
    FILE *f = gf_open_regular(path, &st);
    if (!f) return NULL;
    if ((unsigned long long)st.st_size > (unsigned long long)max_bytes) {
        fclose(f);
        gf_fail("%s is %lld bytes, more than the %zu this reader accepts", gf_show_name(path), (long long)st.st_size, max_bytes);
        return NULL;
    }
    size_t n = (size_t)st.st_size;
    unsigned char *buf = malloc(n + 1);
    if (!buf) {
        fclose(f);
        gf_fail("out of memory reading %s (%zu bytes)", gf_show_name(path), n);
        return NULL;
    }
    size_t got = fread(buf, 1, n, f);
    int err = ferror(f);
    fclose(f);
    if (got != n || err) {
        free(buf);
        gf_fail("error reading %s: got %zu of %zu bytes", gf_show_name(path), got, n);
        return NULL;
    }
    buf[n] = '\0';
    *size = n;
    return buf;
}

struct gf_atomic_file {
    char *path, *tmp;
    int fd;
};

gf_atomic_file *gf_atomic_open(const char *path) {
    gf_atomic_file *f = calloc(1, sizeof *f);
    size_t n = strlen(path) + 32;
    if (!f || !(f->path = strdup(path)) || !(f->tmp = malloc(n))) {
        if (f) free(f->path);
        free(f);
        gf_fail("out of memory opening %s", gf_show_name(path));
        return NULL;
    }
    snprintf(f->tmp, n, "%s.tmp.%ld", path, (long)getpid());
    struct stat st;
    f->fd = -1;
    if (existing_regular(path, &st) >= 0) { /* the rename would replace a device node or a FIFO */
        struct stat old;
        if (lstat(f->tmp, &old) == 0 && S_ISREG(old.st_mode)) unlink(f->tmp); /* a dead process's, with our pid */
        f->fd = gf_open_write_regular(f->tmp, O_CREAT | O_EXCL);
    }
    if (f->fd < 0) {
        free(f->path);
        free(f->tmp);
        free(f);
        return NULL;
    }
    return f;
}

static gf_write_hook write_hook;
static void *write_hook_ctx;

void gf_atomic_set_write_hook(gf_write_hook hook, void *ctx) {
    write_hook = hook;
    write_hook_ctx = ctx;
}

int gf_atomic_write(gf_atomic_file *f, const void *data, size_t n) {
    const char *p = data;
    if (write_hook) write_hook(f->tmp, n, write_hook_ctx);
    while (n > 0) {
        ssize_t w = write(f->fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return gf_fail_write(errno, "error writing %s", gf_show_name(f->tmp));
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void atomic_free(gf_atomic_file *f) {
    free(f->path);
    free(f->tmp);
    free(f);
}

void gf_atomic_abort(gf_atomic_file *f) {
    if (!f) return;
    if (f->fd >= 0) close(f->fd);
    unlink(f->tmp);
    atomic_free(f);
}

int gf_write_file_atomic(const char *path, const void *data, size_t size) {
    gf_atomic_file *f = gf_atomic_open(path);
    if (!f) return -1;
    if (gf_atomic_write(f, data, size)) {
        gf_atomic_abort(f);
        return -1;
    }
    return gf_atomic_commit(f);
}

int gf_atomic_commit(gf_atomic_file *f) {
    if (fsync(f->fd) != 0) {
        gf_fail_write(errno, "error flushing %s to disk", gf_show_name(f->tmp));
        gf_atomic_abort(f);
        return -1;
    }
    if (close(f->fd) != 0) {
        f->fd = -1;
        gf_fail_write(errno, "error closing %s", gf_show_name(f->tmp));
        gf_atomic_abort(f);
        return -1;
    }
    f->fd = -1;
    if (rename(f->tmp, f->path) != 0) {
        gf_fail_write(errno, "cannot rename %s to %s", gf_show_name(f->tmp), gf_show_name(f->path));
        gf_atomic_abort(f);
        return -1;
    }
    /* make the rename itself durable */
    char *dcopy = strdup(f->path);
    if (dcopy) {
        int dfd = open(dirname(dcopy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            fsync(dfd);
            close(dfd);
        }
        free(dcopy);
    }
    atomic_free(f);
    return 0;
}

void gf_unmake_dirs(const char *dir, const size_t *len, int n) {
    char p[GF_PATH_MAX];
    for (int i = n - 1; i >= 0; i--) {
        snprintf(p, sizeof p, "%.*s", (int)len[i], dir);
        rmdir(p);
    }
}

int gf_make_dirs(const char *dir, size_t *len, int *n) {
    char p[GF_PATH_MAX];
    const size_t L = strlen(dir);
    *n = 0;
    if (L >= sizeof p) return gf_fail("cannot create the output directory %s: the path is too long", gf_show_name(dir));
    for (size_t i = 1; i <= L; i++) {
        if (i < L && (dir[i] != '/' || dir[i - 1] == '/')) continue;
        snprintf(p, sizeof p, "%.*s", (int)i, dir);
        struct stat st;
        if (mkdir(p, 0755) == 0) {
            if (*n < GF_MAX_MADE_DIRS) len[(*n)++] = i;
        } else if (errno != EEXIST) {
            const int e = errno;
            gf_unmake_dirs(dir, len, *n);
            return gf_fail_write(e, "cannot create the output directory %s: %s", gf_show_name(dir), gf_show_name(p));
        } else if (stat(p, &st) == 0 && !S_ISDIR(st.st_mode)) { /* EEXIST: a file (or a link to one) */
            gf_unmake_dirs(dir, len, *n);
            return gf_fail("cannot create the output directory %s: %s exists and is not a directory\nHINT: another "
                           "path, or move the file away", gf_show_name(dir), gf_show_name(p));
        }
    }
    return 0;
}

int gf_mkdir_p(const char *dir) {
    size_t made[GF_MAX_MADE_DIRS];
    int n;
    return gf_make_dirs(dir, made, &n);
}
