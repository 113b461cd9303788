/* OpenMP, optional at build time (make NO_OMP=1). */
#ifndef GF_CORE_PARALLEL_H
#define GF_CORE_PARALLEL_H

#include <stdint.h>

#include "grassflow.h" /* gf_set_threads, gf_threads: public (Utilities) */

/* Loops with less work than this (elements touched) run on one thread: a parallel region costs a few
 * microseconds, more when the machine is busy, which small tensors cannot repay. Default 32768; the
 * tests set it to 0 (gf_set_parallel_threshold) so that every parallel path runs on their small shapes. */
extern int64_t gf_par_min;
#define GF_PAR_MIN gf_par_min

#ifdef _OPENMP
#include <omp.h>
static inline int gf_thread_id(void) { return omp_get_thread_num(); }
static inline int gf_max_threads(void) { return omp_get_max_threads(); }
#else
static inline int gf_thread_id(void) { return 0; }
static inline int gf_max_threads(void) { return 1; }
#endif

#endif
