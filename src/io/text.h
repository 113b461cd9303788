/* Reading text corpora: plain files or xz-compressed (.xz, by liblzma), whole into memory. */
#ifndef GF_IO_TEXT_H
#define GF_IO_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* Read path (decompressing when it ends in .xz) into a malloc'd NUL-terminated buffer. Fails with a
 * message naming the file when it is missing, unreadable, corrupt, or larger than max_bytes. */
char *gf_read_text(const char *path, size_t max_bytes, size_t *size);

/* The same from bytes already read from path: takes ownership of raw (n bytes, with room for a NUL
 * after them, as gf_read_file gives) and returns the text (raw itself when not compressed). hint (or
 * NULL): a HINT line for the error when the text would exceed max_bytes. */
char *gf_text_from_bytes(const char *path, unsigned char *raw, size_t n, size_t max_bytes, const char *hint,
                         size_t *size);

/* 64-bit FNV-1a of a byte range (for cache keys). */
uint64_t gf_hash_bytes(const void *data, size_t n, uint64_t seed);

#endif
