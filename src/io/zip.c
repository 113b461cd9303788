/* A read-only zip archive in memory (io/zip.h). */
#include "io/zip.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/error.h"

static uint64_t le(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* Whether [off, off + n) lies within the archive. */
static int fits(const gf_zip *z, uint64_t off, uint64_t n) { return off <= z->len && n <= z->len - off; }

/* The central directory's offset and entry count from the end records (zip64's when the classic one says so). */
static int find_directory(gf_zip *z, uint64_t *cd, uint64_t *count) {
    if (z->len < 22) return gf_fail("%s: %zu bytes, too short for a zip archive", z->what, z->len);
    int64_t at = -1;
    for (int64_t i = (int64_t)z->len - 22; i >= 0 && i >= (int64_t)z->len - 22 - 65535; i--)
        if (le(z->buf + i, 4) == 0x06054b50) {
            at = i;
            break;
        }
    if (at < 0) return gf_fail("%s: no zip end-of-central-directory record (a truncated or non-zip file)", z->what);
    const uint8_t *e = z->buf + at;
    if (le(e + 4, 2) != 0 || le(e + 6, 2) != 0) return gf_fail("%s: a multi-disk zip archive is not read", z->what);
    *count = le(e + 10, 2), *cd = le(e + 16, 4);
    if (*count != 0xFFFF && *cd != 0xFFFFFFFF) return 0;
    if (at < 20 || le(z->buf + at - 20, 4) != 0x07064b50) return gf_fail("%s: a zip64 archive without its locator", z->what);
    const uint64_t e64 = le(z->buf + at - 20 + 8, 8);
    if (!fits(z, e64, 56) || le(z->buf + e64, 4) != 0x06064b50)
        return gf_fail("%s: its zip64 end record lies outside the file", z->what);
    *count = le(z->buf + e64 + 32, 8), *cd = le(z->buf + e64 + 48, 8);
    return 0;
}

/* The zip64 extra field's sizes and offset for the members that are 0xFFFFFFFF. */
static int zip64_extra(const gf_zip *z, const uint8_t *x, uint64_t n, gf_zip_entry *e) {
    for (uint64_t k = 0; k + 4 <= n;) {
        const uint64_t id = le(x + k, 2), sz = le(x + k + 2, 2);
        if (k + 4 + sz > n) break;
        if (id == 0x0001) {
            const uint8_t *p = x + k + 4;
            uint64_t *want[3] = {&e->size, &e->csize, &e->local_offset}, used = 0;
            for (int i = 0; i < 3; i++)
                if (*want[i] == 0xFFFFFFFF) {
                    if (used + 8 > sz) return gf_fail("%s: entry %s's zip64 field is too short", z->what, e->name);
                    *want[i] = le(p + used, 8), used += 8;
                }
            return 0;
        }
        k += 4 + sz;
    }
    if (e->size == 0xFFFFFFFF || e->csize == 0xFFFFFFFF || e->local_offset == 0xFFFFFFFF)
        return gf_fail("%s: entry %s needs a zip64 field it does not have", z->what, e->name);
    return 0;
}

/* Central directory record at *at into e; *at moves past it. */
static int read_record(gf_zip *z, uint64_t *at, gf_zip_entry *e) {
    if (!fits(z, *at, 46) || le(z->buf + *at, 4) != 0x02014b50)
        return gf_fail("%s: a damaged zip central directory (a record at byte %llu)", z->what, (unsigned long long)*at);
    const uint8_t *r = z->buf + *at;
    const uint64_t nlen = le(r + 28, 2), xlen = le(r + 30, 2), clen = le(r + 32, 2);
    if (!fits(z, *at + 46, nlen + xlen + clen)) return gf_fail("%s: a zip directory record runs past the end", z->what);
    if (!(e->name = malloc(nlen + 1))) return gf_fail("out of memory");
    memcpy(e->name, r + 46, nlen);
    e->name[nlen] = 0;
    if (le(r + 8, 2) & 1) return gf_fail("%s: entry %s is encrypted", z->what, e->name);
    e->method = (int)le(r + 10, 2);
    e->csize = le(r + 20, 4), e->size = le(r + 24, 4), e->local_offset = le(r + 42, 4);
    if (e->method != 0 && e->method != 8)
        return gf_fail("%s: entry %s uses compression method %d (this reader takes stored and deflated entries)",
                       z->what, e->name, e->method);
    if (zip64_extra(z, r + 46 + nlen, xlen, e)) return -1;
    *at += 46 + nlen + xlen + clen;
    return 0;
}

int gf_zip_open(gf_zip *z, const uint8_t *buf, size_t len, const char *what) {
    *z = (gf_zip){.buf = buf, .len = len, .what = what};
    uint64_t at = 0, count = 0;
    if (find_directory(z, &at, &count)) return -1;
    if (count > len / 46 || count > 65536)
        return gf_fail("%s: its zip directory claims %llu entries, more than the file can hold (or this reader takes: "
                       "65,536)", what, (unsigned long long)count);
    z->e = calloc(count ? count : 1, sizeof *z->e);
    if (!z->e) return gf_fail("out of memory");
    for (uint64_t i = 0; i < count; i++, z->n++)
        if (read_record(z, &at, &z->e[i])) {
            z->n++;
            gf_zip_close(z);
            return -1;
        }
    return 0;
}

void gf_zip_close(gf_zip *z) {
    for (int64_t i = 0; z->e && i < z->n; i++) free(z->e[i].name);
    free(z->e);
    z->e = NULL, z->n = 0;
}

const gf_zip_entry *gf_zip_find(const gf_zip *z, const char *name) {
    for (int64_t i = 0; i < z->n; i++)
        if (!strcmp(z->e[i].name, name)) return &z->e[i];
    return NULL;
}

static uint8_t *inflate_entry(const gf_zip *z, const gf_zip_entry *e, const uint8_t *src) {
    uint8_t *out = malloc(e->size ? e->size : 1);
    if (!out) return gf_fail("out of memory for %s's entry %s (%llu bytes)", z->what, e->name, (unsigned long long)e->size), NULL;
    z_stream s = {.next_in = (Bytef *)src, .avail_in = (uInt)e->csize, .next_out = out, .avail_out = (uInt)e->size};
    int rc = inflateInit2(&s, -MAX_WBITS);
    if (rc == Z_OK) rc = inflate(&s, Z_FINISH);
    const int done = rc == Z_STREAM_END && s.total_out == e->size;
    inflateEnd(&s);
    if (!done) {
        free(out);
        return gf_fail("%s: entry %s does not inflate to the %llu bytes its directory states", z->what, e->name,
                       (unsigned long long)e->size), NULL;
    }
    return out;
}

const uint8_t *gf_zip_data(const gf_zip *z, const gf_zip_entry *e, uint64_t max_bytes, uint8_t **owned) {
    *owned = NULL;
    if (e->size > max_bytes)
        return gf_fail("%s: entry %s is %llu bytes, past the %llu this reader accepts", z->what, e->name,
                       (unsigned long long)e->size, (unsigned long long)max_bytes), NULL;
    if (!fits(z, e->local_offset, 30) || le(z->buf + e->local_offset, 4) != 0x04034b50)
        return gf_fail("%s: entry %s's local header is missing (a damaged or truncated archive)", z->what, e->name), NULL;
    const uint8_t *h = z->buf + e->local_offset;
    const uint64_t data = e->local_offset + 30 + le(h + 26, 2) + le(h + 28, 2);
    if (!fits(z, data, e->csize))
        return gf_fail("%s: entry %s runs past the end of the file (a truncated archive)", z->what, e->name), NULL;
    if (e->method == 0) {
        if (e->csize != e->size) return gf_fail("%s: stored entry %s has two sizes", z->what, e->name), NULL;
        return z->buf + data;
    }
    if (e->csize > 0xFFFFFFFFu || e->size > 0xFFFFFFFFu)
        return gf_fail("%s: deflated entry %s is past 4 GiB", z->what, e->name), NULL;
    return *owned = inflate_entry(z, e, z->buf + data);
}
