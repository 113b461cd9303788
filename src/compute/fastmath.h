/* Vectorisable exp, erf and tanh (compute/fastmath_poly.h): no calls, no branches, so `#pragma omp simd`
 * loops over them compile to AVX-512/AVX2 code. Two sets: the default, and the _fma set of --precision
 * fp32-fast. */
#ifndef GF_CORE_FASTMATH_H
#define GF_CORE_FASTMATH_H

#include <stdint.h>
#include <string.h>

/* A multiply and an add, each rounded (the default; the build is C11, where GCC does not contract a * x + b,
 * so these are the bits grassflow always had), or one fused multiply-add where the CPU has FMA (the
 * polynomials then take half the instructions and half the latency; --precision fp32-fast). Without FMA
 * the fused form is the plain expression: fmaf would be a library call. */
#define GF_MADD_ROUNDED(a, x, b) ((a) * (x) + (b))
#ifdef __FMA__
#define GF_MADD_FUSED(a, x, b) __builtin_fmaf((a), (x), (b))
#else
#define GF_MADD_FUSED(a, x, b) GF_MADD_ROUNDED(a, x, b)
#endif

#define GF_MADD GF_MADD_ROUNDED
#define GF_FAST_NAME(f) f
#include "compute/fastmath_poly.h"
#undef GF_MADD
#undef GF_FAST_NAME

#define GF_MADD GF_MADD_FUSED
#define GF_FAST_NAME(f) f##_fma
#include "compute/fastmath_poly.h"
#undef GF_MADD
#undef GF_FAST_NAME

#endif
