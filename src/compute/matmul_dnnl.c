/* bf16 and fp32 matmuls through oneDNN (see matmul_dnnl.h). Built with oneDNN when the Makefile finds it
 * (GF_HAVE_DNNL); without it every request is refused with the reason, and OpenBLAS runs fp32 as always.
 *
 * Only oneDNN's brgemm implementations are used (see first_brgemm), and oneDNN 2.6's brgemm takes dense
 * operands only. A bf16 call rounds op(A)'s and op(B)'s stored matrices into contiguous bfloat16 copies
 * (per-thread buffers, kept between calls); an fp32 call reads them in place where dense, and copies a
 * strided one when that is cheap (COPY_SHARE), else leaves the call to OpenBLAS; a C with a row stride is
 * written through a dense buffer. Each runs a matmul primitive made for its shape: primitives are kept
 * in a table (made once per shape, never freed while the process runs, so that a thread can use one while
 * another adds to the table); past its size a call makes a primitive for itself. Scratchpads are the
 * caller's (oneDNN's user mode), so that threads can run the same primitive at once. */
#include "compute/matmul_dnnl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compute/bf16.h"
#include "base/error.h"
#include "compute/parallel.h"

void gf_bf16_matmul_naive(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                          int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double s = 0.0;
            for (int64_t k = 0; k < K; k++) {
                const float a = transA ? A[k * lda + m] : A[m * lda + k];
                const float b = transB ? B[n * ldb + k] : B[k * ldb + n];
                s += (double)gf_bf16_to_f32(gf_bf16_from_f32_ref(a)) * gf_bf16_to_f32(gf_bf16_from_f32_ref(b));
            }
            C[m * ldc + n] = (float)(alpha * s + (beta != 0.0f ? (double)beta * C[m * ldc + n] : 0.0));
        }
}

#ifndef GF_HAVE_DNNL

const char *gf_bf16_matmul_unavailable(void) {
    return "this grassflow was built without oneDNN, which bf16 matmuls need (install libdnnl-dev, e.g. with "
           "scripts/install-deps.sh, then rebuild: make clean && make)";
}
const char *gf_bf16_matmul_isa(void) { return "none"; }
const char *gf_f32_matmul_dnnl_unavailable(void) { return "this grassflow was built without oneDNN"; }
const char *gf_f32_matmul_dnnl_isa(void) { return "none"; }
int gf_f32_matmul_dnnl(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                       int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    (void)transA, (void)transB, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)B, (void)ldb;
    (void)beta, (void)C, (void)ldc;
    return -1;
}
int gf_f32_matmul_dnnl_bias(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                            int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc,
                            const float *bias) {
    (void)bias;
    return gf_f32_matmul_dnnl(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
const char *gf_bf16_matmul_kernel(void) { return ""; }
void gf_dnnl_reuse_operands(bool on) { (void)on; }
int gf_bf16_matmul(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                   int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    return gf_f32_matmul_dnnl(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc); /* refused too */
}
gf_bf16 *gf_bf16_matmul_a_room(int64_t n) {
    (void)n;
    return NULL;
}
int gf_bf16_matmul_a16(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const gf_bf16 *A,
                       const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    (void)transA, (void)transB, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)B, (void)ldb, (void)beta;
    (void)C, (void)ldc;
    return -1;
}

#else

#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>

static dnnl_engine_t g_engine;
static const char *g_why, *g_why_f32; /* NULL: bf16 (fp32) matmuls available */
static char g_isa[32] = "none", g_kernel[64];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *isa_name(dnnl_cpu_isa_t isa) {
    switch (isa) {
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx2: return "avx2";
    default: return "older than avx2";
    }
}

static void init_once(void) {
    const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    snprintf(g_isa, sizeof g_isa, "%s", isa_name(isa));
    if (dnnl_engine_create(&g_engine, dnnl_cpu, 0) != dnnl_success) {
        g_why = g_why_f32 = "oneDNN could not create its CPU engine";
        return;
    }
    if (((unsigned)isa & (unsigned)dnnl_cpu_isa_avx512_core) != (unsigned)dnnl_cpu_isa_avx512_core)
        g_why_f32 = "oneDNN's fp32 matmul is used with AVX-512 only: below it oneDNN 2.6 has no brgemm matmul, and its "
                    "other one (gemm:jit) is unsafe under signals (docs/bench/method.md); this CPU, or oneDNN's ISA "
                    "limit ONEDNN_MAX_CPU_ISA, gives less";
    if (!gf_bf16_cpu())
        g_why = "this CPU has no AVX512_BF16 (bf16 matmuls would be slower than fp32 here)";
    else if (((unsigned)isa & (unsigned)dnnl_cpu_isa_avx512_core_bf16) != (unsigned)dnnl_cpu_isa_avx512_core_bf16)
        g_why = "oneDNN's CPU ISA is limited below avx512_core_bf16 (ONEDNN_MAX_CPU_ISA or DNNL_MAX_CPU_ISA in the "
                "environment)";
}

/* *why once oneDNN is set up: NULL when that precision's matmuls can run here */
static const char *ready(const char *const *why) {
    pthread_once(&g_once, init_once);
    return *why;
}
const char *gf_f32_matmul_dnnl_unavailable(void) { return ready(&g_why_f32); }
const char *gf_f32_matmul_dnnl_isa(void) { return ready(&g_why_f32) ? "none" : g_isa; }
const char *gf_bf16_matmul_unavailable(void) { return ready(&g_why); }
const char *gf_bf16_matmul_isa(void) { return ready(&g_why) ? "none" : g_isa; }
const char *gf_bf16_matmul_kernel(void) { return g_kernel; }

/* ---- primitives, one per shape ------------------------------------------------------------------------- */

typedef struct { /* every operand dense (op() in its strides): the only ones oneDNN 2.6's brgemm takes */
    int64_t M, N, K;
    float alpha, beta;
    bool ta, tb, bf16; /* bf16: A and B in bfloat16; else fp32 */
    bool bias;         /* a bias row (N) added to every row of C */
} shape;

typedef struct {
    shape s;
    dnnl_primitive_t prim;
    size_t scratch; /* bytes of scratchpad it needs */
} entry;

#define N_ENTRIES 1024 /* a batch's length varies (padded pairs): a few shapes per length */
static entry g_table[N_ENTRIES];
static int g_n; /* entries filled; an entry is complete before g_n counts it */

/* The first of oneDNN's implementations of d that is a brgemm one ("brg:..."), its name kept for
 * gf_bf16_matmul_kernel(). The others are refused: oneDNN 2.6's own JIT sgemm ("gemm:jit", its choice for
 * operands brgemm does not take) points rsp into a heap buffer while it runs, and a signal that lands
 * there writes its frame into the heap (oneDNN issue 4845, fixed in 3.x): a SIGTERM in mid-step corrupted
 * the heap. tests/unit/test_precision.c's signal storm holds this. */
static dnnl_status_t first_brgemm(const dnnl_matmul_desc_t *d, const_dnnl_primitive_attr_t attr,
                                  dnnl_primitive_desc_t *pd) {
    dnnl_primitive_desc_iterator_t it;
    dnnl_status_t st = dnnl_primitive_desc_iterator_create(&it, d, attr, g_engine, NULL);
    if (st != dnnl_success) return st;
    *pd = NULL;
    do {
        dnnl_primitive_desc_t p = dnnl_primitive_desc_iterator_fetch(it);
        const char *impl = NULL;
        if (p && dnnl_primitive_desc_query(p, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl &&
            !strncmp(impl, "brg:", 4)) {
            snprintf(g_kernel, sizeof g_kernel, "%s", impl);
            *pd = p;
        } else if (p)
            dnnl_primitive_desc_destroy(p);
    } while (!*pd && dnnl_primitive_desc_iterator_next(it) == dnnl_success);
    dnnl_primitive_desc_iterator_destroy(it);
    return *pd ? dnnl_success : dnnl_unimplemented;
}

static dnnl_status_t make(const shape *s, dnnl_primitive_t *prim, size_t *scratch) {
    dnnl_memory_desc_t a, b, c, bias;
    const dnnl_dims_t da = {s->M, s->K}, db = {s->K, s->N}, dc = {s->M, s->N}, dbias = {1, s->N};
    /* the stored matrices are dense: op() is in the strides */
    const dnnl_dims_t sa = {s->ta ? 1 : s->K, s->ta ? s->M : 1}, sb = {s->tb ? 1 : s->N, s->tb ? s->K : 1},
                      sc = {s->N, 1};
    const dnnl_data_type_t dt = s->bf16 ? dnnl_bf16 : dnnl_f32;
    dnnl_matmul_desc_t d;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t st = dnnl_memory_desc_init_by_strides(&a, 2, da, dt, sa);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_strides(&b, 2, db, dt, sb);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_strides(&c, 2, dc, dnnl_f32, sc);
    if (st == dnnl_success && s->bias) st = dnnl_memory_desc_init_by_strides(&bias, 2, dbias, dnnl_f32, sc);
    if (st == dnnl_success) st = dnnl_matmul_desc_init(&d, &a, &b, s->bias ? &bias : NULL, &c);
    if (st == dnnl_success) st = dnnl_primitive_attr_create(&attr);
    if (st == dnnl_success) st = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (st == dnnl_success && s->alpha != 1.0f) st = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &s->alpha);
    if (st == dnnl_success && s->beta != 0.0f) {
        st = dnnl_post_ops_create(&po);
        if (st == dnnl_success) st = dnnl_post_ops_append_sum(po, s->beta);
        if (st == dnnl_success) st = dnnl_primitive_attr_set_post_ops(attr, po);
    }
    if (st == dnnl_success) st = first_brgemm(&d, attr, &pd);
    if (st == dnnl_success) {
        const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
        *scratch = sp ? dnnl_memory_desc_get_size(sp) : 0;
        st = dnnl_primitive_create(prim, pd);
    }
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (po) dnnl_post_ops_destroy(po);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return st;
}

static bool same(const shape *a, const shape *b) { /* field by field: the struct has padding */
    return a->M == b->M && a->N == b->N && a->K == b->K && a->alpha == b->alpha && a->beta == b->beta &&
           a->ta == b->ta && a->tb == b->tb && a->bf16 == b->bf16 && a->bias == b->bias;
}

/* The table's primitive for s (made and added when new); *temp when the table is full and the primitive is
 * the caller's to destroy. */
static dnnl_primitive_t lookup(const shape *s, size_t *scratch, bool *temp) {
    *temp = false;
    const int n = __atomic_load_n(&g_n, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (same(&g_table[i].s, s)) return *scratch = g_table[i].scratch, g_table[i].prim;
    pthread_mutex_lock(&g_lock);
    for (int i = n; i < g_n; i++) /* another thread may have made it meanwhile */
        if (same(&g_table[i].s, s)) {
            pthread_mutex_unlock(&g_lock);
            return *scratch = g_table[i].scratch, g_table[i].prim;
        }
    dnnl_primitive_t p = NULL;
    if (make(s, &p, scratch) != dnnl_success) p = NULL;
    else if (g_n < N_ENTRIES) {
        g_table[g_n] = (entry){.s = *s, .prim = p, .scratch = *scratch};
        __atomic_store_n(&g_n, g_n + 1, __ATOMIC_RELEASE);
    } else {
        static bool said;
        if (!said)
            gf_note("more than %d oneDNN matmul shapes in this process (sequence lengths that vary from batch to "
                    "batch?): the others make their primitive at every call, which is slower", N_ENTRIES);
        said = *temp = true;
    }
    pthread_mutex_unlock(&g_lock);
    return p;
}

/* ---- per-thread buffers and stream ------------------------------------------------------------------ */

/* An operand's dense copy: the buffer, and which matrix it holds (src NULL: none, or not to be trusted) */
typedef struct {
    void *p;
    size_t size;
    const float *src;
    int64_t rows, cols, ld;
    bool bf16;
} buffer;

static _Thread_local buffer t_a, t_b, t_c, t_scratch;
static _Thread_local dnnl_stream_t t_stream;
static _Thread_local bool t_reuse;

/* on or off, the copies made before are not trusted: only what was copied inside the span is reused */
void gf_dnnl_reuse_operands(bool on) {
    t_reuse = on;
    t_a.src = t_b.src = NULL;
}

static void *room(buffer *b, size_t bytes) {
    bytes = bytes ? bytes : 64; /* never NULL for a primitive without a scratchpad */
    if (b->p && b->size >= bytes) return b->p;
    free(b->p);
    b->size = 0;
    if (posix_memalign(&b->p, 64, bytes)) return b->p = NULL;
    b->size = bytes;
    return b->p;
}

/* bias: NULL, or the primitive's bias row */
static dnnl_status_t run(dnnl_primitive_t p, const void *a, const void *b, float *c, void *sp, const float *bias) {
    const_dnnl_primitive_desc_t pd;
    dnnl_memory_t m[5] = {0};
    dnnl_status_t st = dnnl_primitive_get_primitive_desc(p, &pd);
    const dnnl_query_t q[5] = {dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md, dnnl_query_weights_md,
                               dnnl_query_scratchpad_md};
    void *h[5] = {(void *)a, (void *)b, c, (void *)bias, sp};
    const int arg[5] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS, DNNL_ARG_SCRATCHPAD};
    dnnl_exec_arg_t args[5];
    int n = 0;
    for (int i = 0; i < 5 && st == dnnl_success; i++) {
        if (i == 3 && !bias) continue;
        const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, q[i], i == 3 ? 1 : 0); /* bias: weights #1 */
        if (i == 4 && (!md || !dnnl_memory_desc_get_size(md))) break;
        st = dnnl_memory_create(&m[i], md, g_engine, h[i]);
        args[n++] = (dnnl_exec_arg_t){arg[i], m[i]};
    }
    if (st == dnnl_success && !t_stream) st = dnnl_stream_create(&t_stream, g_engine, dnnl_stream_default_flags);
    if (st == dnnl_success) st = dnnl_primitive_execute(p, t_stream, n, args);
    if (st == dnnl_success) st = dnnl_stream_wait(t_stream);
    for (int i = 0; i < 5; i++)
        if (m[i]) dnnl_memory_destroy(m[i]);
    return st;
}

/* X (rows x cols, row stride ld) as the dense matrix oneDNN's brgemm takes: X itself when it is dense and
 * fp32 is asked for; else a copy in the per-thread buffer b (rounded to bfloat16 when bf16). NULL: no memory. */
static const void *dense(buffer *b, const float *X, int64_t rows, int64_t cols, int64_t ld, bool bf16) {
    if (!bf16 && ld == cols) return X;
    if (t_reuse && b->src == X && b->rows == rows && b->cols == cols && b->ld == ld && b->bf16 == bf16) return b->p;
    b->src = NULL;
    void *d = room(b, (size_t)(rows * cols) * (bf16 ? sizeof(gf_bf16) : sizeof(float)));
    if (!d) return NULL;
    if (bf16) {
        gf_bf16_from_f32(d, X, rows, cols, ld);
    } else {
#pragma omp parallel for schedule(static) if (rows * cols > GF_PAR_MIN)
        for (int64_t r = 0; r < rows; r++) memcpy((float *)d + r * cols, X + r * ld, (size_t)cols * sizeof(float));
    }
    *b = (buffer){.p = b->p, .size = b->size, .src = X, .rows = rows, .cols = cols, .ld = ld, .bf16 = bf16};
    return d;
}

/* C = alpha op(A) op(B) + beta C through a brgemm primitive on dense operands: A and B as they are where
 * dense and fp32, else through dense copies (see dense); a C with a row stride through a dense buffer,
 * the beta C added here. */
static int matmul(bool bf16, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                  int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc, const float *bias,
                  const gf_bf16 *a16) {
    const bool direct = ldc == N;
    if (bias && !direct) return -1;
    const shape s = {.M = M, .N = N, .K = K, .alpha = alpha, .beta = direct ? beta : 0.0f, .ta = ta, .tb = tb,
                     .bf16 = bf16, .bias = bias != NULL};
    size_t scratch = 0;
    bool temp;
    dnnl_primitive_t p = lookup(&s, &scratch, &temp);
    const void *a = a16 ? (const void *)a16 : dense(&t_a, A, ta ? K : M, ta ? M : K, lda, bf16);
    const void *b = dense(&t_b, B, tb ? N : K, tb ? K : N, ldb, bf16);
    float *c = direct ? C : room(&t_c, (size_t)(M * N) * sizeof *c);
    void *sp = room(&t_scratch, scratch);
    const int rc = p && a && b && c && sp && run(p, a, b, c, sp, bias) == dnnl_success ? 0 : -1;
    if (temp) dnnl_primitive_destroy(p);
    if (rc || direct) return rc;
#pragma omp parallel for schedule(static) if (M * N > GF_PAR_MIN)
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++)
            C[m * ldc + n] = beta == 0.0f ? c[m * N + n] : c[m * N + n] + beta * C[m * ldc + n];
    return 0;
}

int gf_bf16_matmul(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                   int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    if (gf_bf16_matmul_unavailable()) return -1;
    return matmul(true, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL, NULL);
}

gf_bf16 *gf_bf16_matmul_a_room(int64_t n) {
    if (gf_bf16_matmul_unavailable() || n < 1) return NULL;
    t_a.src = NULL; /* the caller writes it */
    return room(&t_a, (size_t)n * sizeof(gf_bf16));
}

int gf_bf16_matmul_a16(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const gf_bf16 *A,
                       const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    if (gf_bf16_matmul_unavailable()) return -1;
    return matmul(true, transA, transB, M, N, K, alpha, NULL, transA ? M : K, B, ldb, beta, C, ldc, NULL, A);
}

/* A strided operand of an fp32 matmul is copied (or, C, written through a buffer) when the copy moves at most
 * 1/64 of the matmul's multiply-adds in floats: a weight block under thousands of rows. A strided activation
 * (the copy as long as the matmul) is left to OpenBLAS, which reads it in place. */
#define COPY_SHARE 64

int gf_f32_matmul_dnnl(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                       int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    return gf_f32_matmul_dnnl_bias(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL);
}

int gf_f32_matmul_dnnl_bias(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                            int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc,
                            const float *bias) {
    if (gf_f32_matmul_dnnl_unavailable()) return -1;
    const int64_t macs = M * N * K;
    if ((lda != (transA ? M : K) && M * K * COPY_SHARE > macs) || (ldb != (transB ? K : N) && K * N * COPY_SHARE > macs) ||
        (ldc != N && M * N * COPY_SHARE > macs))
        return -1;
    return matmul(false, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias, NULL);
}

#endif
