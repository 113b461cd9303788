#include "base/mem.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/error.h"

uint64_t gf_mem_limit(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t mem = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : UINT64_MAX;
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < mem) mem = rl.rlim_cur;
    return mem;
}

void *gf_alloc_bytes(size_t n, const char *what) {
    size_t rounded = (n + 63) / 64 * 64;
    if (rounded < n) {
        gf_fail("out of memory: %s needs %zu bytes, which overflows", what, n);
        return NULL;
    }
    const uint64_t limit = gf_mem_limit();
    if (rounded > limit) { /* zero-filling it would bring the out-of-memory killer, not an error */
        gf_fail("out of memory: %s needs %.1f MiB, more than this machine's memory (or the address-space limit, "
                "ulimit -v) of %.1f MiB\nHINT: use a smaller batch, sequence length or model", what,
                (double)n / (1024.0 * 1024.0), (double)limit / (1024.0 * 1024.0));
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
