/* Counter-based random numbers: value = f(key, counter), no state. Dropout masks and initial weights
 * are functions of (seed, what, index), so results do not depend on thread count or call order, and a
 * backward pass can regenerate the mask its forward used instead of storing it. */
#ifndef GF_CORE_RNG_H
#define GF_CORE_RNG_H

#include <math.h>
#include <stdint.h>

/* splitmix64's finaliser: a bijective 64-bit mixer with full avalanche. */
static inline uint64_t gf_mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Derive a key from a parent key and a number (e.g. seed -> step -> layer -> site). */
static inline uint64_t gf_key(uint64_t parent, uint64_t child) {
    return gf_mix64(parent ^ gf_mix64(child + 0x632BE59BD9B4E019ull));
}

/* 64 random bits for element `counter` of stream `key`. */
static inline uint64_t gf_rand64(uint64_t key, uint64_t counter) {
    return gf_mix64(gf_mix64(key) + counter * 0xD1B54A32D192ED03ull);
}

/* Uniform in [0, 1) with 24 bits. */
static inline float gf_uniform(uint64_t key, uint64_t counter) {
    return (float)(gf_rand64(key, counter) >> 40) * (1.0f / 16777216.0f);
}

/* Standard normal (Box-Muller on two 32-bit uniforms from one draw). */
static inline float gf_normal(uint64_t key, uint64_t counter) {
    uint64_t r = gf_rand64(key, counter);
    double u1 = ((double)(r >> 32) + 1.0) * (1.0 / 4294967297.0); /* (0, 1) */
    double u2 = (double)(r & 0xFFFFFFFFu) * (1.0 / 4294967296.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

/* FNV-1a of a string, to key streams by tensor name. */
static inline uint64_t gf_hash_str(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

#endif
