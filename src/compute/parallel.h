/* OpenMP, optional at build time (make NO_OMP=1). */
#ifndef GF_CORE_PARALLEL_H
#define GF_CORE_PARALLEL_H

#include <stdint.h>

#include "grassflow_plugin.h" /* gf_set_threads, gf_threads: public (Utilities) */

/* Loops with less work than this (elements touched) run on one thread: a parallel region costs a few
 * microseconds, more when the machine is busy, which small tensors cannot repay. Default 32768; the
 * tests set it to 0 (gf_set_parallel_threshold) so that every parallel path runs on their small shapes. */
extern int64_t gf_par_min;
#define GF_PAR_MIN gf_par_min

/* Work of the calling thread on at most n threads (OpenMP and BLAS) until gf_threads_restore(the value it
 * returned); n < 1, or not below the threads set, changes nothing. */
int gf_threads_limit(int n);
void gf_threads_restore(int prev);

/* GF_PAR_FOR(cond, for (...) body): the loop under `omp parallel for schedule(static)` when cond holds, the
 * plain loop otherwise. An if clause alone is not enough: libgomp enters every region, even one whose if
 * clause is false, and then allocates and frees a team and makes a futex call (about 0.3 us, more than a
 * loop over one token's 256 floats costs). A streamed token of the word-level 6-layer Grassmann model went
 * through 73 such regions. GF_PAR_FOR_SIMD is the same for a `parallel for simd` loop, whose plain copy
 * stays `omp simd`. */
#define GF_PAR_FOR(cond, ...)                                                                                     \
    do {                                                                                                         \
        if (cond) {                                                                                              \
            _Pragma("omp parallel for schedule(static)") __VA_ARGS__                                             \
        } else {                                                                                                 \
            __VA_ARGS__                                                                                          \
        }                                                                                                        \
    } while (0)
#define GF_PAR_FOR_SIMD(cond, ...)                                                                                \
    do {                                                                                                         \
        if (cond) {                                                                                              \
            _Pragma("omp parallel for simd schedule(static)") __VA_ARGS__                                        \
        } else {                                                                                                 \
            _Pragma("omp simd") __VA_ARGS__                                                                      \
        }                                                                                                        \
    } while (0)

#ifdef _OPENMP
#include <omp.h>
static inline int gf_thread_id(void) { return omp_get_thread_num(); }
static inline int gf_max_threads(void) { return omp_get_max_threads(); }
#else
static inline int gf_thread_id(void) { return 0; }
static inline int gf_max_threads(void) { return 1; }
#endif

#endif
