#include "core/mem.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

void *gf_alloc_bytes(size_t n, const char *what) {
    size_t rounded = (n + 63) / 64 * 64;
    if (rounded < n) {
        gf_fail("out of memory: %s needs %zu bytes, which overflows", what, n);
        return NULL;
    }
    if (rounded == 0) rounded = 64;
    void *p = aligned_alloc(64, rounded);
    if (!p) {
        gf_fail("out of memory: could not allocate %.1f MiB for %s\nHINT: use a smaller batch, sequence "
                "length or model", (double)n / (1024.0 * 1024.0), what);
        return NULL;
    }
    memset(p, 0, rounded);
    return p;
}

float *gf_alloc_floats(int64_t n, const char *what) {
    if (n < 0 || (uint64_t)n > SIZE_MAX / sizeof(float)) {
        gf_fail("out of memory: %s asks for %lld floats", what, (long long)n);
        return NULL;
    }
    return gf_alloc_bytes((size_t)n * sizeof(float), what);
}

void gf_free(void *p) { free(p); }
