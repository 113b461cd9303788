/* safetensors: 8-byte little-endian header length, a JSON header, raw little-endian data.
 * The reader lives in the public API (gf_st_read); this header adds the writer. */
#ifndef GF_IO_SAFETENSORS_H
#define GF_IO_SAFETENSORS_H

#include "grassflow_plugin.h"

typedef struct gf_st_out {
    const char *name;
    gf_dtype dtype;
    int ndim;
    int64_t shape[8];
    const void *data;
} gf_st_out;

/* The largest header gf_st_read accepts; gf_st_write refuses to write a larger one. */
#define GF_ST_MAX_HEADER (100u << 20)

/* 0 if string metadata of these keys and values leaves room for a model's tensor entries in a header
 * gf_st_read accepts; else an error naming what: checked before a run starts, not at its first save. */
int gf_st_metadata_fits(const char *const *meta_keys, const char *const *meta_vals, int n_meta);

/* Write tensors (in this order) and string metadata atomically. */
int gf_st_write(const char *path, const gf_st_out *ts, int n, const char *const *meta_keys,
                const char *const *meta_vals, int n_meta);
size_t gf_dtype_size(gf_dtype dt);
/* The check every weight grassflow loads gets (its checkpoints, and what an importer reads): 0 if the n
 * floats at x are all finite; else an error "PATH: tensor "NAME" holds NaN (or an infinite value) at index
 * K; " followed by why (what that says of the file, and a HINT). */
int gf_st_check_finite(const char *path, const char *name, const float *x, int64_t n, const char *why);
/* gf_st_read on bytes already in memory (buf: malloc'd, size bytes; taken over, also on failure); path
 * only names the file in messages. */
gf_st_file *gf_st_parse(const char *path, unsigned char *buf, size_t size);

#endif
