#include "io/file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

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
        gf_fail("cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat own;
    st = st ? st : &own;
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
        gf_fail("%s is %s; expected a regular file", path, file_kind(st->st_mode));
        close(fd);
        return NULL;
    }
    FILE *f = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        gf_fail("cannot read %s: %s", path, strerror(errno));
        close(fd);
    }
    return f;
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
        gf_fail("%s is %lld bytes, more than the %zu this reader accepts", path, (long long)st.st_size, max_bytes);
        return NULL;
    }
    size_t n = (size_t)st.st_size;
    unsigned char *buf = malloc(n + 1);
    if (!buf) {
        fclose(f);
        gf_fail("out of memory reading %s (%zu bytes)", path, n);
        return NULL;
    }
    size_t got = fread(buf, 1, n, f);
    int err = ferror(f);
    fclose(f);
    if (got != n || err) {
        free(buf);
        gf_fail("error reading %s: got %zu of %zu bytes", path, got, n);
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
        gf_fail("out of memory opening %s", path);
        return NULL;
    }
    snprintf(f->tmp, n, "%s.tmp.%ld", path, (long)getpid());
    f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (f->fd < 0) {
        gf_fail("cannot write %s: %s\nHINT: check that the directory exists and is writable", f->tmp,
                strerror(errno));
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
            return gf_fail("error writing %s: %s", f->tmp, strerror(errno));
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
        gf_fail("error flushing %s to disk: %s", f->tmp, strerror(errno));
        gf_atomic_abort(f);
        return -1;
    }
    if (close(f->fd) != 0) {
        f->fd = -1;
        gf_fail("error closing %s: %s", f->tmp, strerror(errno));
        gf_atomic_abort(f);
        return -1;
    }
    f->fd = -1;
    if (rename(f->tmp, f->path) != 0) {
        gf_fail("cannot rename %s to %s: %s", f->tmp, f->path, strerror(errno));
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
    if (L >= sizeof p) return gf_fail("cannot create the output directory %s: the path is too long", dir);
    for (size_t i = 1; i <= L; i++) {
        if (i < L && (dir[i] != '/' || dir[i - 1] == '/')) continue;
        snprintf(p, sizeof p, "%.*s", (int)i, dir);
        if (mkdir(p, 0755) == 0) {
            if (*n < GF_MAX_MADE_DIRS) len[(*n)++] = i;
        } else if (errno != EEXIST) {
            const int e = errno;
            gf_unmake_dirs(dir, len, *n);
            return gf_fail("cannot create the output directory %s: %s: %s", dir, p, strerror(e));
        }
    }
    return 0;
}

int gf_mkdir_p(const char *dir) {
    size_t made[GF_MAX_MADE_DIRS];
    int n;
    return gf_make_dirs(dir, made, &n);
}
