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

/* The most n_in bytes of xz data may decompress to: GF_XZ_RATIO times as many, and never less than
 * GF_XZ_FLOOR. Text compresses 3 to 15 times (WikiText-2 3.9, SNLI's TSV 6); a file past the bound is
 * a decompression bomb (46 KB of xz can hold 695 MB of text) and is refused, by the whole-file reader here and
 * by the line reader (io/lines.h), so that no small input costs gigabytes. A genuine file that is this
 * repetitive can be given decompressed. */
#define GF_XZ_RATIO 1000
#define GF_XZ_FLOOR ((size_t)64 << 20)
size_t gf_xz_bound(size_t n_in);
/* The error for an xz file of n_in bytes that decompresses past gf_xz_bound(n_in): -1. */
int gf_xz_refuse(const char *path, size_t n_in);

/* 64-bit FNV-1a of a byte range (for cache keys). */
uint64_t gf_hash_bytes(const void *data, size_t n, uint64_t seed);

#endif
