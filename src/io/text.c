#include "io/text.h"

#include <lzma.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
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

static char *xz_decode(const char *path, const unsigned char *in, size_t n_in, size_t max_bytes, const char *hint,
                       size_t *size) {
    lzma_stream st = LZMA_STREAM_INIT;
    if (lzma_stream_decoder(&st, UINT64_MAX, LZMA_CONCATENATED) != LZMA_OK) {
        gf_fail("%s: cannot start the xz decoder", path);
        return NULL;
    }
    size_t cap = n_in * 4 + 1024, len = 0;
    char *out = malloc(cap + 1);
    if (!out) {
        lzma_end(&st);
        gf_fail("out of memory decompressing %s", path);
        return NULL;
    }
    st.next_in = in;
    st.avail_in = n_in;
    lzma_ret r = LZMA_OK;
    for (;;) {
        if (len == cap) {
            if (cap >= max_bytes) {
                free(out);
                lzma_end(&st);
                gf_fail("%s decompresses to more than %zu bytes; refusing (a corrupt or hostile file?)%s%s", path,
                        max_bytes, hint ? "\nHINT: " : "", hint ? hint : "");
                return NULL;
            }
            size_t nc = cap * 2 > max_bytes ? max_bytes : cap * 2;
            char *no = realloc(out, nc + 1);
            if (!no) {
                free(out);
                lzma_end(&st);
                gf_fail("out of memory decompressing %s", path);
                return NULL;
            }
            out = no;
            cap = nc;
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
        gf_fail("%s: corrupt or truncated xz data (liblzma error %d)", path, (int)r);
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
