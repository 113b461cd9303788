/* Reading a text file line by line, plain or xz-compressed, in constant memory: a 64 KiB input chunk,
 * a 64 KiB decoded chunk and one line (at most max_line bytes). A NUL byte in a line is an error: the
 * line is handed out NUL-terminated, and whatever took it by its string length would read it cut. */
#include "io/lines.h"

#include <lzma.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "io/file.h"
#include "io/text.h"

#define CHUNK 65536

struct gf_lines {
    FILE *f;
    char *path;
    bool xz, eof, in_done;
    lzma_stream st;
    unsigned char in[CHUNK];
    char out[CHUNK];
    size_t out_pos, out_len;   /* decoded bytes not yet split into lines: out[out_pos, out_len) */
    char *line;                /* the current line, NUL-terminated */
    size_t line_len, line_cap, max_line;
    int64_t number;            /* of the line last returned (1-based) */
    size_t xz_in;              /* the compressed file's size: what it may decompress to is gf_xz_bound of it */
    uint64_t xz_bound;
};

static bool ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

gf_lines *gf_lines_open(const char *path, size_t max_line) {
    struct stat st;
    FILE *f = gf_open_regular(path, &st);
    if (!f) return NULL;
    gf_lines *r = calloc(1, sizeof *r);
    if (r) r->path = strdup(path);
    if (r) r->line = malloc(256);
    if (!r || !r->path || !r->line) {
        fclose(f);
        if (r) free(r->path);
        free(r);
        gf_fail("out of memory opening %s", gf_show_name(path));
        return NULL;
    }
    r->f = f;
    r->line_cap = 256;
    r->max_line = max_line;
    r->xz = ends_with(path, ".xz");
    r->xz_in = (size_t)st.st_size;
    r->xz_bound = gf_xz_bound(r->xz_in);
    lzma_stream init = LZMA_STREAM_INIT;
    r->st = init;
    if (r->xz && lzma_stream_decoder(&r->st, UINT64_MAX, LZMA_CONCATENATED) != LZMA_OK) {
        gf_fail("%s: cannot start the xz decoder", gf_show_name(path));
        gf_lines_close(r);
        return NULL;
    }
    return r;
}

/* Refill out[] with the next decoded bytes; 0 with out_len 0 at the end of the file, -1 on an error. */
static int refill(gf_lines *r) {
    r->out_pos = r->out_len = 0;
    if (!r->xz) {
        r->out_len = fread(r->out, 1, CHUNK, r->f);
        if (ferror(r->f)) return gf_fail("%s: read error", gf_show_name(r->path));
        return 0;
    }
    r->st.next_out = (uint8_t *)r->out;
    r->st.avail_out = CHUNK;
    while (r->st.avail_out == CHUNK) {
        if (r->st.avail_in == 0 && !r->in_done) {
            r->st.avail_in = fread(r->in, 1, CHUNK, r->f);
            r->st.next_in = r->in;
            if (ferror(r->f)) return gf_fail("%s: read error", gf_show_name(r->path));
            r->in_done = r->st.avail_in == 0;
        }
        lzma_ret ret = lzma_code(&r->st, r->in_done ? LZMA_FINISH : LZMA_RUN);
        if (r->st.total_out > r->xz_bound) return gf_xz_refuse(r->path, r->xz_in);
        if (ret == LZMA_STREAM_END) break;
        if (ret != LZMA_OK)
            return gf_fail("%s: corrupt or truncated xz data (liblzma error %d)", gf_show_name(r->path), (int)ret);
        if (r->in_done && r->st.avail_out == CHUNK)
            return gf_fail("%s: truncated xz data (the stream ends early)", gf_show_name(r->path));
    }
    r->out_len = CHUNK - r->st.avail_out;
    return 0;
}

static int append(gf_lines *r, const char *p, size_t n) {
    if (r->line_len + n > r->max_line)
        return gf_fail("%s:%lld: the line is longer than %zu bytes; expected one record per line (a corrupt or "
                       "hostile file?)", gf_show_name(r->path), (long long)r->number + 1, r->max_line);
    if (r->line_len + n + 1 > r->line_cap) {
        size_t cap = r->line_cap;
        while (cap < r->line_len + n + 1) cap *= 2;
        char *nl = realloc(r->line, cap);
        if (!nl) return gf_fail("out of memory reading %s", gf_show_name(r->path));
        r->line = nl;
        r->line_cap = cap;
    }
    memcpy(r->line + r->line_len, p, n);
    r->line_len += n;
    return 0;
}

int gf_lines_next(gf_lines *r, const char **line, size_t *len) {
    r->line_len = 0;
    if (r->eof) return 0;
    for (;;) {
        if (r->out_pos == r->out_len) {
            if (refill(r)) return -1;
            if (r->out_len == 0) { /* the end: a last line without a newline still counts */
                r->eof = true;
                if (r->line_len == 0) return 0;
                break;
            }
        }
        const char *p = r->out + r->out_pos, *nl = memchr(p, '\n', r->out_len - r->out_pos);
        size_t n = nl ? (size_t)(nl - p) : r->out_len - r->out_pos;
        if (append(r, p, n)) return -1;
        r->out_pos += n + (nl ? 1 : 0);
        if (nl) break;
    }
    if (r->line_len > 0 && r->line[r->line_len - 1] == '\r') r->line_len--; /* CRLF files */
    r->line[r->line_len] = '\0';
    r->number++;
    const char *nul = memchr(r->line, '\0', r->line_len); /* a reader that took the line by strlen would cut it */
    if (nul)
        return gf_fail("%s:%lld: a NUL byte at byte %zu of the line; expected text (a binary or corrupt file?)",
                       gf_show_name(r->path), (long long)r->number, (size_t)(nul - r->line) + 1);
    *line = r->line;
    *len = r->line_len;
    return 1;
}

int64_t gf_lines_number(const gf_lines *r) { return r->number; }
const char *gf_lines_path(const gf_lines *r) { return r->path; }

void gf_lines_close(gf_lines *r) {
    if (!r) return;
    if (r->xz) lzma_end(&r->st);
    if (r->f) fclose(r->f);
    free(r->line);
    free(r->path);
    free(r);
}
