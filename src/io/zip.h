/* A read-only zip archive in memory, as torch.save writes one (PKWARE's APPNOTE): the end of central directory
 * record (and its zip64 form), the central directory, and each entry's local header, every offset and size
 * checked against the buffer. Entries are stored (method 0, what torch.save writes) or deflated (method 8,
 * through zlib, stopping at the size the directory states: a zip bomb costs no more than that, and that is
 * bounded by the caller). Encrypted entries, multi-disk archives and other methods are refused by name. */
#ifndef GF_IO_ZIP_H
#define GF_IO_ZIP_H

#include <stddef.h>
#include <stdint.h>

typedef struct gf_zip_entry {
    char *name;               /* NUL-terminated copy */
    uint64_t local_offset;    /* of its local header */
    uint64_t size, csize;     /* uncompressed and stored bytes */
    int method;               /* 0 stored, 8 deflated */
} gf_zip_entry;

typedef struct gf_zip {
    const uint8_t *buf; /* the archive (not owned) */
    size_t len;
    const char *what;   /* the file's name, for messages */
    gf_zip_entry *e;
    int64_t n;
} gf_zip;

/* Index the archive in buf (len bytes; what names it in errors). 0, or -1 (gf_fail). */
int gf_zip_open(gf_zip *z, const uint8_t *buf, size_t len, const char *what);
void gf_zip_close(gf_zip *z);
/* The entry called name, or NULL. */
const gf_zip_entry *gf_zip_find(const gf_zip *z, const char *name);
/* An entry's bytes: for a stored one a pointer into the archive (*owned NULL); a deflated one is inflated into
 * a malloc'd buffer (*owned = it, to free), refused past max_bytes. NULL (gf_fail) on any inconsistency. */
const uint8_t *gf_zip_data(const gf_zip *z, const gf_zip_entry *e, uint64_t max_bytes, uint8_t **owned);

#endif
