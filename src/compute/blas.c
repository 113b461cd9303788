#include "compute/blas.h"

#include <cblas.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "base/error.h"
#include "compute/gemv.h"
#include "compute/lowp.h"
#include "compute/matmul_dnnl.h"
#include "compute/parallel.h"

/* OpenBLAS extensions (declared in its cblas.h on Debian; repeated here for other cblas headers). */
char *openblas_get_corename(void);
int openblas_get_num_threads(void);
void openblas_set_num_threads(int);

static int blas_int(int64_t v, const char *what) {
    if (v < 0 || v > INT_MAX) {
        /* A programming error (sizes are validated long before): fail loudly, never compute garbage. */
        fprintf(stderr, "grassflow: internal error: matmul %s = %lld does not fit BLAS's int\n", what,
                (long long)v);
        abort();
    }
    return (int)v;
}

/* Matmul FLOPs issued so far (2 M N K per call), for utilisation reports. Relaxed atomics: cheap, and
 * calls from parallel regions count too. */
static _Atomic uint64_t g_flops;

uint64_t gf_blas_flops(void) { return g_flops; }
void gf_blas_flops_reset(void) { g_flops = 0; }

void gf_blas_set_threads(int n) { openblas_set_num_threads(n); }

/* ---- the matmul precision ------------------------------------------------------------------------------- */

static _Atomic int g_precision; /* gf_precision */

const char *gf_precision_name(gf_precision p) {
    return p == GF_PRECISION_BF16 ? "bf16" : p == GF_PRECISION_FP32_FAST ? "fp32-fast" : "fp32";
}

int gf_precision_parse(const char *s, gf_precision *p) {
    if (!strcmp(s, "fp32")) *p = GF_PRECISION_FP32;
    else if (!strcmp(s, "bf16")) *p = GF_PRECISION_BF16;
    else if (!strcmp(s, "fp32-fast")) *p = GF_PRECISION_FP32_FAST;
    else return -1;
    return 0;
}

const char *gf_precision_unavailable(gf_precision p) {
    return p == GF_PRECISION_BF16 ? gf_bf16_matmul_unavailable() : NULL;
}

int gf_set_matmul_precision(gf_precision p) {
    const char *why = gf_precision_unavailable(p);
    if (why) return gf_fail("bf16 matmuls cannot run here: %s", why);
    g_precision = (int)p;
    return 0;
}

gf_precision gf_matmul_precision(void) { return (gf_precision)g_precision; }
static bool fp32_fast(void) {
    return atomic_load_explicit(&g_precision, memory_order_relaxed) == GF_PRECISION_FP32_FAST;
}
bool gf_fast_numerics(void) {
    const int p = atomic_load_explicit(&g_precision, memory_order_relaxed);
    return p == GF_PRECISION_FP32_FAST || p == GF_PRECISION_BF16;
}
const char *gf_bf16_isa(void) { return gf_bf16_matmul_isa(); }
const char *gf_bf16_kernel(void) { return gf_bf16_matmul_kernel(); }

/* A bf16 matmul; -1 (after saying so, once) when it could not run, and the caller computes it in fp32. */
static int bf16_matmul(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                       int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    static _Atomic int said;
    if (gf_bf16_matmul(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) == 0) return 0;
    if (!atomic_exchange(&said, 1))
        gf_note("a bf16 matmul (%lld x %lld x %lld) could not run (no memory for its bf16 copies, or oneDNN refused "
                "the shape): it ran in fp32, as will any other that cannot", (long long)M, (long long)N, (long long)K);
    return -1;
}

/* ---- fp32: OpenBLAS, or oneDNN's fp32 matmul ---------------------------------------------------------- */

enum { F32_UNSET, F32_OPENBLAS, F32_ONEDNN };
static _Atomic int g_f32 = F32_UNSET;

/* Which library runs the skinny fp32 matmuls (GF_FP32_DNNL_MIN_MACS, GF_FP32_DNNL_SKINNY): OpenBLAS, unless
 * GF_FP32_MATMUL=onednn asks for oneDNN where its fp32 matmul can run (read once). Opt-in until a quiet
 * machine shows the end-to-end gain: on the noisy Xeon of 2026-11-27 oneDNN ran these shapes 1.2-4x faster,
 * but whole training steps moved by 0.94-1.22x between runs (docs/bench/method.md). */
static int f32_backend(void) {
    int b = atomic_load_explicit(&g_f32, memory_order_relaxed);
    if (b != F32_UNSET) return b;
    const char *e = getenv("GF_FP32_MATMUL"), *why = gf_f32_matmul_dnnl_unavailable();
    b = e && !strcmp(e, "onednn") && !why ? F32_ONEDNN : F32_OPENBLAS;
    if (e && strcmp(e, "openblas") && strcmp(e, "onednn"))
        gf_note("GF_FP32_MATMUL='%s' is not openblas or onednn: ignored", e);
    else if (e && !strcmp(e, "onednn") && why)
        gf_note("GF_FP32_MATMUL=onednn: oneDNN's fp32 matmul cannot run here (%s); OpenBLAS runs them", why);
    int unset = F32_UNSET;
    atomic_compare_exchange_strong(&g_f32, &unset, b);
    return atomic_load(&g_f32);
}

/* fp32-fast sends the skinny matmuls to oneDNN where its fp32 matmul runs (GF_FP32_MATMUL=openblas keeps
 * them on OpenBLAS) */
static bool fast_dnnl(void) {
    static _Atomic int ok = -1;
    if (!fp32_fast()) return false;
    int v = atomic_load_explicit(&ok, memory_order_relaxed);
    if (v < 0) {
        const char *e = getenv("GF_FP32_MATMUL");
        v = !gf_f32_matmul_dnnl_unavailable() && !(e && !strcmp(e, "openblas"));
        atomic_store(&ok, v);
    }
    return v;
}

const char *gf_fp32_matmul(void) {
    static char s[160];
    if (f32_backend() == F32_OPENBLAS && !fast_dnnl()) snprintf(s, sizeof s, "OpenBLAS %s", openblas_get_corename());
    else
        snprintf(s, sizeof s, "oneDNN %s + OpenBLAS %s", gf_f32_matmul_dnnl_isa(), openblas_get_corename());
    return s;
}

/* A matmul the fp32 oneDNN path takes: at least GF_FP32_DNNL_MIN_MACS multiply-adds, no side over
 * GF_FP32_DNNL_SKINNY. */
static bool skinny(int64_t M, int64_t N, int64_t K) {
    const int64_t side = M < N ? (M < K ? M : K) : (N < K ? N : K);
    return M * N * K >= GF_FP32_DNNL_MIN_MACS && side <= GF_FP32_DNNL_SKINNY;
}

void gf_sgemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
              int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    if (M == 0 || N == 0) return;
    atomic_fetch_add_explicit(&g_flops, (uint64_t)(2 * M * N * K), memory_order_relaxed);
    if (M == 1 && !transA && K > 0 && transB && gf_lowp_gemv(B, ldb, N, K, A, alpha, beta, C))
        return; /* int8 or bf16 weights (gf_model_set_weights) */
    if (M == 1 && !transA && K > 0) {
        /* one row (streaming inference): a matrix-vector product whose bits do not depend on the thread count
         * (compute/gemv.c). OpenBLAS sends a 1-row sgemm to its single-threaded small-matrix kernel with a
         * packing copy, 3-4x slower; its sgemv splits the sums by thread. */
        if (transB) gf_gemv_rows(B, ldb, N, K, A, alpha, beta, C); /* c (N) = alpha B (N,K) a + beta c */
        else gf_gemv_cols(B, ldb, N, K, A, alpha, beta, C);        /* c (N) = alpha B^T a + beta c, B (K,N) */
        return;
    }
    if (gf_sgemm_in_bf16(transA, M, N, K) && bf16_matmul(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) == 0)
        return;
    if (skinny(M, N, K) && (f32_backend() == F32_ONEDNN || fast_dnnl()) &&
        gf_f32_matmul_dnnl(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) == 0)
        return;
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
                blas_int(M, "M"), blas_int(N, "N"), blas_int(K, "K"), alpha, A, blas_int(lda, "lda"), B,
                blas_int(ldb, "ldb"), beta, C, blas_int(ldc, "ldc"));
}

int gf_sgemm_bias_fast(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
                       const float *bias, float *C) {
    if (M < 2 || K < 1 || !skinny(M, N, K) || !fast_dnnl() ||
        gf_f32_matmul_dnnl_bias(false, true, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, N, bias) != 0)
        return -1;
    atomic_fetch_add_explicit(&g_flops, (uint64_t)(2 * M * N * K), memory_order_relaxed);
    return 0;
}

void gf_sgemm_reuse_operands(bool on) { gf_dnnl_reuse_operands(on); }

bool gf_sgemm_in_bf16(bool transA, int64_t M, int64_t N, int64_t K) {
    return g_precision == GF_PRECISION_BF16 && !(M == 1 && !transA) && N > 0 && K > 0 && M * N * K >= GF_BF16_MIN_MACS;
}

gf_bf16 *gf_sgemm_bf16a_room(int64_t n) { return gf_bf16_matmul_a_room(n); }

int gf_sgemm_bf16a(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const gf_bf16 *A,
                   const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    if (!gf_sgemm_in_bf16(transA, M, N, K) || gf_bf16_matmul_a16(transA, transB, M, N, K, alpha, A, B, ldb, beta, C, ldc))
        return -1;
    atomic_fetch_add_explicit(&g_flops, (uint64_t)(2 * M * N * K), memory_order_relaxed);
    return 0;
}

const char *gf_blas_kernel(void) { return openblas_get_corename(); }

/* Debian's OpenBLAS 0.3.21 falls back to its generic "Prescott" kernel, 5-10x slower, on CPUs it does not
 * know (the recent Xeons and EPYCs) unless OPENBLAS_CORETYPE is set as it loads. The command re-runs itself
 * with it set (src/cli/main.c) and the Python package sets it before it loads the library; any other
 * program is told, once, what to set. A core type the user set is theirs, unless this CPU cannot run it:
 * then the first matmul would stop the program with SIGILL, and this fails instead, saying what to set. */
int gf_blas_check_kernel(void) {
    static _Atomic int said;
    const char *core = openblas_get_corename();
    char why[160];
    const char *instead = core ? gf_blas_core_check(core, why, sizeof why) : NULL;
    if (instead) {
        const char *set = getenv("OPENBLAS_CORETYPE");
        char from[96] = "";
        if (set) snprintf(from, sizeof from, " (OPENBLAS_CORETYPE=%.60s)", set);
        return gf_fail("OpenBLAS runs its %s kernel%s, which needs %s, and this CPU lacks it: the first matmul "
                       "would stop the program with an illegal instruction (SIGILL)\nHINT: start the program with %s%s "
                       "(OpenBLAS reads it as it loads)", core, from, why,
                       instead[0] ? "OPENBLAS_CORETYPE=" : "OPENBLAS_CORETYPE unset", instead);
    }
    if (getenv("OPENBLAS_CORETYPE") || !core || strcmp(core, "Prescott") != 0) return 0;
    const char *want = gf_blas_fast_core();
    if ((!strcmp(want, "SKYLAKEX") || !strcmp(want, "HASWELL")) && !atomic_exchange(&said, 1))
        gf_note("OpenBLAS runs its generic Prescott kernel on this CPU, 5-10x slower than it can: start the program "
                "with OPENBLAS_CORETYPE=%s in its environment (OpenBLAS reads it as it loads)", want);
    return 0;
}
int gf_blas_threads(void) { return openblas_get_num_threads(); }

/* OpenBLAS allocates a 128 MiB work buffer per thread at its first call, and when that allocation fails
 * it retries forever (a process under a tight `ulimit -v` spins at 100% CPU). So before the first call:
 * under an address-space limit, use only as many threads as the room left allows, and with no room for
 * one, fail with the reason. */
#define BLAS_THREAD_BYTES ((int64_t)(128 + 16) << 20) /* its buffer and the thread's stack */
#define BLAS_MARGIN_BYTES ((int64_t)64 << 20)          /* for what the caller allocates next */

static int64_t address_space_used(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long long pages = 0;
    if (f) {
        if (fscanf(f, "%lld", &pages) != 1) pages = 0;
        fclose(f);
    }
    return (int64_t)pages * 4096;
}

int gf_blas_fit_address_limit(void) {
    static _Atomic int done;
    struct rlimit rl;
    if (done || getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 0;
    const int64_t room = (int64_t)rl.rlim_cur - address_space_used() - BLAS_MARGIN_BYTES;
    const int64_t fit = room / BLAS_THREAD_BYTES;
    if (fit < 1)
        return gf_fail("the address-space limit (ulimit -v) is %lld MiB and %lld MiB of it are in use; the BLAS "
                       "library needs about %lld MiB more for one thread\nHINT: raise the limit to at least %lld MiB, or start "
                       "grassflow with OMP_NUM_THREADS=1 (the BLAS library reserves its buffers per thread at start)",
                       (long long)(rl.rlim_cur >> 20), (long long)(address_space_used() >> 20),
                       (long long)((BLAS_THREAD_BYTES + BLAS_MARGIN_BYTES) >> 20),
                       (long long)((address_space_used() + BLAS_THREAD_BYTES + BLAS_MARGIN_BYTES) >> 20) + 1);
    if (fit < gf_max_threads()) {
#ifdef _OPENMP
        omp_set_num_threads((int)fit);
#endif
        openblas_set_num_threads((int)fit);
    }
    done = 1;
    return 0;
}
