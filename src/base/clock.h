/* The one monotonic clock every timing in grassflow reads (training rates, evaluation, streaming, benchmarks). */
#ifndef GF_BASE_CLOCK_H
#define GF_BASE_CLOCK_H

#include "grassflow_plugin.h" /* gf_clock_s: public (Helpers) */

#endif
