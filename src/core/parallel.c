#include "core/parallel.h"

#include "grassflow.h"

int64_t gf_par_min = 32768;

void gf_set_parallel_threshold(int64_t n) { gf_par_min = n < 0 ? 0 : n; }
