/* A vectorisable exp for the loops that dominate the softmax over a large vocabulary: no calls, no
 * branches, so `#pragma omp simd` loops over it compile to AVX-512/AVX2 code. For x <= 88 it matches
 * expf within about 2 ulp (Cody-Waite reduction to [-ln2/2, ln2/2], degree-7 Taylor polynomial, whose
 * truncation error 0.347^8/8! = 5e-9 is below float rounding); below -87.3 it returns ~1e-38 instead of
 * a denormal or zero, which no softmax sum can tell apart. Held to expf by tests/test_ops.c. */
#ifndef GF_CORE_FASTMATH_H
#define GF_CORE_FASTMATH_H

#include <stdint.h>
#include <string.h>

#pragma omp declare simd notinbranch
static inline float gf_exp_fast(float x) {
    x = x < -87.3f ? -87.3f : x;
    x = x > 88.3f ? 88.3f : x;
    const float k = __builtin_rintf(x * 1.44269504088896341f);
    const float r = (x - k * 0.693145751953125f) - k * 1.42860682030941723e-6f; /* ln2 split hi + lo */
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    const int32_t bits = ((int32_t)k + 127) << 23; /* 2^k, k in [-126, 127] */
    float two_k;
    memcpy(&two_k, &bits, sizeof two_k);
    return p * two_k;
}

#endif
