#include "io/text.h"

#include <lzma.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "io/file.h"

uint64_t gf_hash_bytes(const void *data, size_t n, uint64_t seed) {
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ull ^ seed;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static int ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

size_t gf_xz_bound(size_t n_in) {
    const size_t most = n_in > SIZE_MAX / GF_XZ_RATIO ? SIZE_MAX : n_in * GF_XZ_RATIO;
    return most > GF_XZ_FLOOR ? most : GF_XZ_FLOOR;
}

int gf_xz_refuse(const char *path, size_t n_in) {
    return gf_fail("%s: %zu bytes of xz decompress to more than %zu bytes, the most taken from them (%d times their "
                   "size, and at least %zu MiB); refusing (a decompression bomb, or a corrupt file?)\nHINT: if the file "
                   "is genuine, give it decompressed: xz -dk %s", gf_show_name(path), n_in, gf_xz_bound(n_in), GF_XZ_RATIO,
                   GF_XZ_FLOOR >> 20, gf_show_name(path));
}

/* Room for len + more decoded bytes in *out (cap: its size), doubling, at most max_bytes: 0; 1 past it; -1 when
 * out of memory (*out freed). */
static int xz_grow(char **out, size_t *cap, size_t max_bytes) {
    if (*cap >= max_bytes) return 1;
    size_t nc = *cap * 2 > max_bytes ? max_bytes : *cap * 2;
    char *no = realloc(*out, nc + 1);
    if (!no) {
        free(*out);
        return -1;
    }
    *out = no;
    *cap = nc;
    return 0;
}

static char *xz_decode(const char *path, const unsigned char *in, size_t n_in, size_t max_bytes, const char *hint,
                       size_t *size) {
    const size_t bound = gf_xz_bound(n_in), most = bound < max_bytes ? bound : max_bytes;
    lzma_stream st = LZMA_STREAM_INIT;
    if (lzma_stream_decoder(&st, UINT64_MAX, LZMA_CONCATENATED) != LZMA_OK) {
        gf_fail("%s: cannot start the xz decoder", gf_show_name(path));
        return NULL;
    }
    size_t cap = n_in < most / 4 ? n_in * 4 + 1024 : most, len = 0;
    cap = cap < most ? cap : most;
    char *out = malloc(cap + 1);
    if (!out) {
        lzma_end(&st);
        gf_fail("out of memory decompressing %s", gf_show_name(path));
        return NULL;
    }
    st.next_in = in;
    st.avail_in = n_in;
    lzma_ret r = LZMA_OK;
    for (;;) {
        const int grown = len == cap ? xz_grow(&out, &cap, most) : 0;
        if (grown) {
            if (grown > 0) free(out);
            lzma_end(&st);
            if (grown < 0) gf_fail("out of memory decompressing %s", gf_show_name(path));
            else if (most == bound) gf_xz_refuse(path, n_in);
            else
                gf_fail("%s decompresses to more than %zu bytes; refusing (a corrupt or hostile file?)%s%s", gf_show_name(path),
                        max_bytes, hint ? "\nHINT: " : "", hint ? hint : "");
            return NULL;
        }
        st.next_out = (uint8_t *)out + len;
        st.avail_out = cap - len;
        r = lzma_code(&st, LZMA_FINISH);
        len = cap - st.avail_out;
        if (r == LZMA_STREAM_END) break;
        if (r != LZMA_OK && r != LZMA_BUF_ERROR) break;
        if (r == LZMA_BUF_ERROR && st.avail_out != 0) break; /* truncated input */
    }
    lzma_end(&st);
    if (r != LZMA_STREAM_END) {
        free(out);
        gf_fail("%s: corrupt or truncated xz data (liblzma error %d)", gf_show_name(path), (int)r);
        return NULL;
    }
    out[len] = '\0';
    *size = len;
    return out;
}

char *gf_text_from_bytes(const char *path, unsigned char *raw, size_t n, size_t max_bytes, const char *hint,
                         size_t *size) {
    if (!ends_with(path, ".xz")) {
        raw[n] = '\0';
        *size = n;
        return (char *)raw;
    }
    char *text = xz_decode(path, raw, n, max_bytes, hint, size);
    free(raw);
    return text;
}

char *gf_read_text(const char *path, size_t max_bytes, size_t *size) {
    size_t n;
    unsigned char *raw = gf_read_file(path, max_bytes, &n);
    return raw ? gf_text_from_bytes(path, raw, n, max_bytes, NULL, size) : NULL;
}
