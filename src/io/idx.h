/* IDX files, the format of MNIST and Fashion-MNIST (yann.lecun.com/exdb/mnist): a big-endian header (two zero
 * bytes, the element type, the number of dimensions, then each dimension as a uint32) and the elements, row-major;
 * read plain or gzip-compressed (zlib: what Debian's dataset-fashion-mnist ships). The header's dimensions are
 * checked against what the file holds: a file shorter than they say, or longer, is an error naming the file and
 * both counts; a size past the caller's bound is refused before anything is allocated, and the reading stops at
 * the bound (a gzip bomb costs no more memory than the bound). */
#ifndef GF_IO_IDX_H
#define GF_IO_IDX_H

#include <stdint.h>

enum { GF_IDX_MAX_DIMS = 4, GF_IDX_UBYTE = 0x08 };

typedef struct gf_idx {
    int ndims;
    int64_t dims[GF_IDX_MAX_DIMS];
    uint8_t *data; /* dims[0] x ... bytes (the elements are unsigned bytes: the only type this reads) */
    int64_t n;     /* bytes of data */
} gf_idx;

/* Read path (plain or .gz) into *x, whose data holds at most max_bytes. 0, or -1 (gf_fail: what is wrong, the
 * file named). want_ndims (1 labels, 3 images; 0: any) is checked. */
int gf_idx_read(const char *path, int want_ndims, int64_t max_bytes, gf_idx *x);
void gf_idx_free(gf_idx *x);

#endif
