/* Aligned, checked allocation for the flat arenas. Sizes are 64-bit; a failed allocation records an
 * error saying how much was asked for. */
#ifndef GF_CORE_MEM_H
#define GF_CORE_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "grassflow_plugin.h" /* gf_mem_limit: public (Utilities) */

/* 64-byte aligned, zero-filled; NULL (with gf_last_error set) on failure, overflow, or a size above
 * gf_mem_limit (zero-filling that would end in the out-of-memory killer rather than an error). */
float *gf_alloc_floats(int64_t n, const char *what);
void *gf_alloc_bytes(size_t n, const char *what);
void gf_free(void *p);

#endif
