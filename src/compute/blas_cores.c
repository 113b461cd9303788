/* OpenBLAS's core types against this CPU (gf_blas_core_check, gf_blas_fast_core in grassflow.h). OpenBLAS reads OPENBLAS_CORETYPE as it loads and
 * runs the named core's kernels without asking whether the CPU has their instructions: a core the CPU cannot
 * run stops the program with SIGILL at its first matmul. The instructions each core's kernels need are
 * those of OpenBLAS's kernel/x86_64 (checked on an AMD EPYC without FMA4 or 3DNow!: BULLDOZER, PILEDRIVER,
 * STEAMROLLER and EXCAVATOR die in vfmaddps, OPTERON and OPTERON_SSE3 in femms). */
#include <cpuid.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "grassflow_plugin.h"
#include "compute/blas.h"

enum {
    F_SSE3, F_SSSE3, F_SSE41, F_SSE42, F_3DNOW, F_AVX, F_AVX2, F_FMA, F_FMA4, F_AVX512F, F_AVX512CD, F_AVX512BW,
    F_AVX512DQ, F_AVX512VL, F_AVX512BF16, F_AMXBF16, F_N
};

/* The features' names, as GCC's __builtin_cpu_supports spells them (3dnow: CPUID 0x80000001 EDX bit 31). */
static const char *const feature_name[F_N] = {"sse3", "ssse3", "sse4.1", "sse4.2", "3dnow", "avx", "avx2", "fma",
                                              "fma4", "avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl",
                                              "avx512bf16", "amx-bf16"};

#define AVX512 (1u << F_AVX512F | 1u << F_AVX512CD | 1u << F_AVX512BW | 1u << F_AVX512DQ | 1u << F_AVX512VL)
#define AVX2FMA (1u << F_AVX2 | 1u << F_FMA)

/* Each core type OpenBLAS's x86-64 builds know (OPENBLAS_CORETYPE's names, any case) and the features its
 * kernels use beyond x86-64's SSE2. A name not listed is left to OpenBLAS (it says "Core not found" and
 * chooses by itself). */
static const struct {
    const char *name;
    unsigned needs;
} cores[] = {
    {"KATMAI", 0}, {"COPPERMINE", 0}, {"NORTHWOOD", 0}, {"BANIAS", 0},
    {"PRESCOTT", 1u << F_SSE3}, {"OPTERON", 1u << F_3DNOW}, {"OPTERON_SSE3", 1u << F_3DNOW | 1u << F_SSE3},
    {"BARCELONA", 1u << F_SSE3}, {"CORE2", 1u << F_SSSE3}, {"ATOM", 1u << F_SSSE3}, {"NANO", 1u << F_SSSE3},
    {"BOBCAT", 1u << F_SSSE3}, {"PENRYN", 1u << F_SSE41}, {"DUNNINGTON", 1u << F_SSE41},
    {"NEHALEM", 1u << F_SSE42}, {"SANDYBRIDGE", 1u << F_AVX}, {"BULLDOZER", 1u << F_AVX | 1u << F_FMA4},
    {"PILEDRIVER", 1u << F_AVX | 1u << F_FMA | 1u << F_FMA4}, {"STEAMROLLER", 1u << F_AVX | 1u << F_FMA | 1u << F_FMA4},
    {"EXCAVATOR", AVX2FMA | 1u << F_FMA4}, {"HASWELL", AVX2FMA}, {"ZEN", AVX2FMA}, {"SKYLAKEX", AVX2FMA | AVX512},
    {"COOPERLAKE", AVX2FMA | AVX512 | 1u << F_AVX512BF16},
    {"SAPPHIRERAPIDS", AVX2FMA | AVX512 | 1u << F_AVX512BF16 | 1u << F_AMXBF16},
};

/* The fastest core types first: the one to use instead of a core the CPU cannot run. */
static const char *const fastest[] = {"SKYLAKEX", "HASWELL", "SANDYBRIDGE", "NEHALEM", "PRESCOTT"};

/* GRASSFLOW_TEST_CPU_LACKS=avx512f,fma (a test hook): features taken as absent, so that a machine that has
 * them can check what happens on one that does not. */
bool gf_cpu_hidden_by_test(const char *name) {
    const char *e = getenv("GRASSFLOW_TEST_CPU_LACKS");
    const size_t n = strlen(name);
    for (const char *p = e; p && *p;) {
        const size_t len = strcspn(p, ",");
        if (len == n && !strncasecmp(p, name, n)) return true;
        p += len + (p[len] == ',');
    }
    return false;
}

static bool has_3dnow(void) {
    unsigned a, b, c, d;
    return __get_cpuid(0x80000001u, &a, &b, &c, &d) && (d >> 31 & 1u);
}

/* AMX-BF16 (CPUID leaf 7, EDX bit 22): clang 14's __builtin_cpu_supports does not know "amx-bf16" */
static bool has_amx_bf16(void) {
    unsigned a, b, c, d;
    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (d >> 22 & 1u);
}

static bool cpu_has(int f) {
    if (gf_cpu_hidden_by_test(feature_name[f])) return false;
    __builtin_cpu_init();
    switch (f) {
    case F_SSE3: return __builtin_cpu_supports("sse3");
    case F_SSSE3: return __builtin_cpu_supports("ssse3");
    case F_SSE41: return __builtin_cpu_supports("sse4.1");
    case F_SSE42: return __builtin_cpu_supports("sse4.2");
    case F_3DNOW: return has_3dnow();
    case F_AVX: return __builtin_cpu_supports("avx");
    case F_AVX2: return __builtin_cpu_supports("avx2");
    case F_FMA: return __builtin_cpu_supports("fma");
    case F_FMA4: return __builtin_cpu_supports("fma4");
    case F_AVX512F: return __builtin_cpu_supports("avx512f");
    case F_AVX512CD: return __builtin_cpu_supports("avx512cd");
    case F_AVX512BW: return __builtin_cpu_supports("avx512bw");
    case F_AVX512DQ: return __builtin_cpu_supports("avx512dq");
    case F_AVX512VL: return __builtin_cpu_supports("avx512vl");
    case F_AVX512BF16: return __builtin_cpu_supports("avx512bf16");
    case F_AMXBF16: return has_amx_bf16();
    default: return false;
    }
}

/* The features of `needs` this CPU lacks. */
static unsigned lacking(unsigned needs) {
    unsigned out = 0;
    for (int f = 0; f < F_N; f++)
        if ((needs >> f & 1u) && !cpu_has(f)) out |= 1u << f;
    return out;
}

/* The features `core` needs (-1: a name the table does not know). */
static long long needs_of(const char *core) {
    for (size_t i = 0; i < sizeof cores / sizeof *cores; i++)
        if (!strcasecmp(core, cores[i].name)) return cores[i].needs;
    return -1;
}

const char *gf_blas_fast_core(void) {
    for (size_t i = 0; i < sizeof fastest / sizeof *fastest; i++)
        if (!lacking((unsigned)needs_of(fastest[i]))) return fastest[i];
    return "";
}

const char *gf_blas_core_check(const char *core, char *why, size_t n) {
    const long long needs = core ? needs_of(core) : -1;
    const unsigned missing = needs < 0 ? 0 : lacking((unsigned)needs);
    if (!missing) return NULL;
    if (why && n) {
        why[0] = '\0';
        for (int f = 0, k = 0; f < F_N; f++)
            if (missing >> f & 1u) {
                const size_t at = strlen(why);
                snprintf(why + at, n - at, "%s%s", k++ ? ", " : "", feature_name[f]);
            }
    }
    return gf_blas_fast_core();
}
