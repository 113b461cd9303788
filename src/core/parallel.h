/* OpenMP, optional at build time (make NO_OMP=1). */
#ifndef GF_CORE_PARALLEL_H
#define GF_CORE_PARALLEL_H

#ifdef _OPENMP
#include <omp.h>
static inline int gf_thread_id(void) { return omp_get_thread_num(); }
static inline int gf_max_threads(void) { return omp_get_max_threads(); }
#else
static inline int gf_thread_id(void) { return 0; }
static inline int gf_max_threads(void) { return 1; }
#endif

#endif
