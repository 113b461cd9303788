/* safetensors: 8-byte little-endian header length, a JSON header, raw little-endian data.
 * The reader lives in the public API (gf_st_read); this header adds the writer. */
#ifndef GF_IO_SAFETENSORS_H
#define GF_IO_SAFETENSORS_H

#include "grassflow.h"

typedef struct gf_st_out {
    const char *name;
    gf_dtype dtype;
    int ndim;
    int64_t shape[8];
    const void *data;
} gf_st_out;

/* Write tensors (in this order) and string metadata atomically. */
int gf_st_write(const char *path, const gf_st_out *ts, int n, const char *const *meta_keys,
                const char *const *meta_vals, int n_meta);
size_t gf_dtype_size(gf_dtype dt);
/* gf_st_read on bytes already in memory (buf: malloc'd, size bytes; taken over, also on failure); path
 * only names the file in messages. */
gf_st_file *gf_st_parse(const char *path, unsigned char *buf, size_t size);

#endif
