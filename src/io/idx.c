/* IDX files (io/idx.h). */
#include "io/idx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "base/error.h"
#include "io/file.h"

void gf_idx_free(gf_idx *x) {
    free(x->data);
    memset(x, 0, sizeof *x);
}

/* Exactly n bytes of gz into buf: 0, or the bytes it had (fewer), or -1 on a read error (gf_fail). */
static int64_t read_full(gzFile gz, uint8_t *buf, int64_t n, const char *path) {
    int64_t got = 0;
    while (got < n) {
        const unsigned chunk = n - got > (1 << 30) ? 1u << 30 : (unsigned)(n - got);
        const int r = gzread(gz, buf + got, chunk);
        if (r < 0) {
            int err;
            const char *msg = gzerror(gz, &err);
            return gf_fail("%s: not a readable gzip or IDX file (%s)", gf_show_name(path), msg ? msg : "read error");
        }
        if (r == 0) break;
        got += r;
    }
    return got;
}

/* The header: the magic (0, 0, type, ndims) and the dimensions, checked; the data's bytes into *bytes. */
static int read_header(gzFile gz, const char *path, int want_ndims, int64_t max_bytes, gf_idx *x, int64_t *bytes) {
    uint8_t h[4 + 4 * GF_IDX_MAX_DIMS];
    int64_t got = read_full(gz, h, 4, path);
    if (got < 0) return -1;
    if (got < 4 || h[0] || h[1])
        return gf_fail("%s: not an IDX file: its first bytes are not the IDX magic (0x00 0x00, the element type, the "
                       "number of dimensions)\nHINT: give MNIST's or Fashion-MNIST's files (train-images-idx3-ubyte"
                       ".gz and the like), plain or gzip-compressed", gf_show_name(path));
    if (h[2] != GF_IDX_UBYTE)
        return gf_fail("%s: IDX element type 0x%02x; expected 0x08 (unsigned bytes, as MNIST's images and labels are)",
                       gf_show_name(path), h[2]);
    x->ndims = h[3];
    if (x->ndims < 1 || x->ndims > GF_IDX_MAX_DIMS || (want_ndims && x->ndims != want_ndims))
        return gf_fail("%s: an IDX file of %d dimensions; expected %d (%s)", gf_show_name(path), x->ndims,
                       want_ndims ? want_ndims : GF_IDX_MAX_DIMS, want_ndims == 1 ? "labels: a count" :
                       want_ndims == 3 ? "images: a count, rows, columns" : "at most");
    if ((got = read_full(gz, h + 4, 4 * x->ndims, path)) < 0) return -1;
    if (got < 4 * x->ndims) return gf_fail("%s: the IDX header ends before its %d dimensions", gf_show_name(path), x->ndims);
    int64_t n = 1;
    for (int k = 0; k < x->ndims; k++) {
        const uint8_t *b = h + 4 + 4 * k;
        x->dims[k] = (int64_t)b[0] << 24 | (int64_t)b[1] << 16 | (int64_t)b[2] << 8 | b[3];
        n = x->dims[k] && n > max_bytes / x->dims[k] ? max_bytes + 1 : n * x->dims[k];
    }
    if (n > max_bytes)
        return gf_fail("%s: its IDX header says %lld x ... elements, more than the %lld bytes this reads\nHINT: a "
                       "corrupt header, or a dataset larger than this task reads", gf_show_name(path),
                       (long long)x->dims[0], (long long)max_bytes);
    *bytes = n;
    return 0;
}

int gf_idx_read(const char *path, int want_ndims, int64_t max_bytes, gf_idx *x) {
    memset(x, 0, sizeof *x);
    FILE *f = gf_open_regular(path, NULL); /* never a FIFO or a device */
    if (!f) return -1;
    const int fd = dup(fileno(f));
    fclose(f);
    gzFile gz = fd >= 0 ? gzdopen(fd, "rb") : NULL;
    if (!gz) {
        if (fd >= 0) close(fd);
        return gf_fail("%s: cannot be read (out of memory or descriptors)", gf_show_name(path));
    }
    int64_t n = 0, got = 0;
    uint8_t extra;
    int rc = read_header(gz, path, want_ndims, max_bytes, x, &n);
    if (!rc && !(x->data = malloc((size_t)(n ? n : 1)))) rc = gf_fail("out of memory for %s's %lld bytes", gf_show_name(path), (long long)n);
    if (!rc && (got = read_full(gz, x->data, n, path)) < 0) rc = -1;
    if (!rc && got < n)
        rc = gf_fail("%s: truncated: its IDX header says %lld bytes of data, the file holds %lld", gf_show_name(path),
                     (long long)n, (long long)got);
    if (!rc && (got = read_full(gz, &extra, 1, path)) != 0)
        rc = got < 0 ? -1 : gf_fail("%s: holds more than its IDX header says (%lld bytes of data): not one IDX file",
                                    gf_show_name(path), (long long)n);
    gzclose(gz);
    if (rc) gf_idx_free(x);
    else x->n = n;
    return rc;
}
