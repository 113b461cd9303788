/* Vectorisable exp, erf and tanh (compute/fastmath_poly.h): no calls, no branches, so `#pragma omp simd`
 * loops over them compile to AVX-512/AVX2 code. Three sets: the default, _v (the same values), and the _fma
 * set of --precision fp32-fast (gf_select_bits below says why). */
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

/* c ? a : b as a blend of bits (the same value, NaN included). GCC keeps a clamp written `x < lo ? lo : x` as
 * a branch and, its arm a constant, folds the next product into it; where the vector unit has no masks (AVX2)
 * the loop then stays scalar, since the product may trap. The blend leaves it nothing to fold. (Scalar, the
 * GELU loops took a quarter of an AVX2 build's training step: docs/bench/method.md.) So three sets: the
 * default (rounded, plain choices), whose sums over exp (a softmax's) keep the order, and so the bits, that
 * they always had on each CPU (scalar on AVX2); the _v set, the default's values with blended choices, for
 * loops that write each element alone (no sum: vector or scalar, the bits are the same); and the _fma set of
 * --precision fp32-fast, fused and blended. */
static inline float gf_select_bits(int c, float a, float b) {
    uint32_t ua, ub;
    memcpy(&ua, &a, sizeof ua);
    memcpy(&ub, &b, sizeof ub);
    const uint32_t m = -(uint32_t)(c != 0), r = (ua & m) | (ub & ~m);
    float f;
    memcpy(&f, &r, sizeof f);
    return f;
}

#define GF_MADD GF_MADD_ROUNDED
#define GF_SELECT(c, a, b) ((c) ? (a) : (b))
#define GF_FAST_NAME(f) f
#include "compute/fastmath_poly.h"
#undef GF_MADD
#undef GF_SELECT
#undef GF_FAST_NAME

#define GF_MADD GF_MADD_ROUNDED
#define GF_SELECT(c, a, b) gf_select_bits((c), (a), (b))
#define GF_FAST_NAME(f) f##_v
#include "compute/fastmath_poly.h"
#undef GF_MADD
#undef GF_SELECT
#undef GF_FAST_NAME

#define GF_MADD GF_MADD_FUSED
#define GF_SELECT(c, a, b) gf_select_bits((c), (a), (b))
#define GF_FAST_NAME(f) f##_fma
#include "compute/fastmath_poly.h"
#undef GF_MADD
#undef GF_SELECT
#undef GF_FAST_NAME

/* The default's sums over exp, sum_j gf_exp_fast(x[j] - shift) for j < n, in float (a softmax's) or double (the
 * loss's log-sum-exp), with the bits they always had on each CPU. With AVX-512 the compiler vectorises the
 * plain loop (its lane-wise order). Without it the loop stayed scalar (the exp's clamps are branches there):
 * the terms added one by one in index order. That order is kept, but a block's exps are computed first by the
 * _v set (the same values, as vectors) and only the adds stay serial: the default loss and softmax took 10-13%
 * of an AVX2 CPU's training step scalar (docs/bench/method.md). tests/unit/test_ops.c holds both to the plain
 * loop. */
enum { GF_SUM_EXP_BLOCK = 256 };
#define GF_SUM_EXP_IN_ORDER(T, name)                                                                           \
    static inline T name(const float *x, int64_t n, float shift) {                                            \
        T s = 0;                                                                                               \
        float e[GF_SUM_EXP_BLOCK];                                                                             \
        for (int64_t c = 0; c < n; c += GF_SUM_EXP_BLOCK) {                                                    \
            const int64_t w = n - c < GF_SUM_EXP_BLOCK ? n - c : GF_SUM_EXP_BLOCK;                             \
            _Pragma("omp simd") for (int64_t j = 0; j < w; j++) e[j] = gf_exp_fast_v(x[c + j] - shift);        \
            for (int64_t j = 0; j < w; j++) s += e[j];                                                         \
        }                                                                                                      \
        return s;                                                                                              \
    }
#define GF_SUM_EXP_PLAIN(T, name)                                                                              \
    static inline T name(const float *x, int64_t n, float shift) {                                            \
        T s = 0;                                                                                               \
        _Pragma("omp simd reduction(+ : s)") for (int64_t j = 0; j < n; j++) s += gf_exp_fast(x[j] - shift);   \
        return s;                                                                                              \
    }
#if defined(__AVX512F__)
GF_SUM_EXP_PLAIN(float, gf_sum_exp_f)
GF_SUM_EXP_PLAIN(double, gf_sum_exp_d)
#else
GF_SUM_EXP_IN_ORDER(float, gf_sum_exp_f)
GF_SUM_EXP_IN_ORDER(double, gf_sum_exp_d)
#endif

#endif
