#include "compute/parallel.h"

#include "compute/blas.h"
#include "grassflow_plugin.h"

int64_t gf_par_min = 32768;

void gf_set_parallel_threshold(int64_t n) { gf_par_min = n < 0 ? 0 : n; }

void gf_set_threads(int n) {
    if (n < 1) n = 1;
#ifdef _OPENMP
    omp_set_num_threads(n);
#endif
    gf_blas_set_threads(n);
}

int gf_threads(void) { return gf_max_threads(); }

int gf_threads_limit(int n) {
    const int prev = gf_max_threads();
    if (n >= 1 && n < prev) {
#ifdef _OPENMP
        omp_set_num_threads(n);
#endif
        gf_blas_set_threads(n);
    }
    return prev;
}

void gf_threads_restore(int prev) {
    if (gf_max_threads() == prev) return;
#ifdef _OPENMP
    omp_set_num_threads(prev);
#endif
    gf_blas_set_threads(prev);
}
