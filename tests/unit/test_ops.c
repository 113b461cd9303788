/* Per-op tests: every float32 kernel of src/ops against the naive double reference of tests/unit/ref_ops.h
 * (forward), and every backward against central finite differences of that double reference for the
 * loss L = sum(w .* out) with fixed random w, on gradient buffers pre-filled with random values (the
 * backward must accumulate into them). */
#include "testlib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "compute/fastmath.h"
#include "compute/gemv.h"
#include "compute/parallel.h"
#include "base/rng.h"
#include "ops/ops.h"
#include "ref_ops.h"

#define FD_H 1e-6

/* allocations: talloc/falloc/dalloc from testlib, freed by pool_teardown after each test */

static float *frand(int64_t n, uint64_t seed, float lo, float hi) {
    float *x = falloc(n);
    tl_fill_uniform(x, n, seed, lo, hi);
    return x;
}

/* ---- embedding -------------------------------------------------------------------------------- */

typedef struct {
    const int32_t *tok;
    double *wte, *pos;
    int64_t B, T, C;
} embed_ctx;

static void embed_fwd(const void *c_, double *out) {
    const embed_ctx *c = c_;
    ref_embed(out, c->tok, c->wte, c->pos, c->B, c->T, c->C);
}

static void test_embed_forward_learned(void **state) {
    (void)state;
    const int64_t B = 2, T = 5, C = 12, V = 7, L = 8;
    const int32_t tok[] = {3, 0, 6, 3, 3, 1, 6, 0, 2, 3};
    float *wte = frand(V * C, 1, -1, 1), *pos = frand(L * C, 2, -1, 1), *out = falloc(B * T * C);
    ffill(out, B * T * C, NAN);
    gf_embed_forward(out, tok, wte, pos, B, T, C);
    double *want = dalloc(B * T * C);
    ref_embed(want, tok, ddup_f(wte, V * C), ddup_f(pos, L * C), B, T, C);
    ref_check_rel("embed_forward(learned): out", out, want, B * T * C, 1e-6, 1.0);
}

static void test_sinusoidal_table(void **state) {
    (void)state;
    const int64_t Cs[] = {16, 15, 2, 64};
    for (int k = 0; k < 4; k++) {
        const int64_t T = 100, C = Cs[k];
        float *P = falloc(T * C);
        ffill(P, T * C, NAN);
        gf_sinusoidal_table(P, T, C);
        double *want = dalloc(T * C);
        ref_sinusoidal(want, T, C);
        char what[96];
        snprintf(what, sizeof what, "gf_sinusoidal_table(T=%lld, C=%lld)", (long long)T, (long long)C);
        tl_check_close(what, P, want, T * C, 2e-7);
    }
    /* and as the position table of the embedding */
    const int64_t B = 2, T = 6, C = 10, V = 5;
    const int32_t tok[] = {4, 4, 0, 1, 2, 3, 0, 0, 1, 4, 2, 2};
    float *wte = frand(V * C, 3, -1, 1), *P = falloc(T * C), *out = falloc(B * T * C);
    gf_sinusoidal_table(P, T, C);
    ffill(out, B * T * C, NAN);
    gf_embed_forward(out, tok, wte, P, B, T, C);
    double *Pd = dalloc(T * C), *want = dalloc(B * T * C);
    ref_sinusoidal(Pd, T, C);
    ref_embed(want, tok, ddup_f(wte, V * C), Pd, B, T, C);
    ref_check_rel("embed_forward(sinusoidal): out", out, want, B * T * C, 1e-6, 1.0);
}

static void test_embed_backward(void **state) {
    (void)state;
    /* C = 40: the backward splits columns in blocks of 16; tokens repeat, rows collide */
    const int64_t B = 2, T = 5, C = 40, V = 7, L = 8;
    const int32_t tok[] = {3, 0, 6, 3, 3, 1, 6, 0, 2, 3};
    float *wte = frand(V * C, 4, -1, 1), *pos = frand(L * C, 5, -1, 1), *w = frand(B * T * C, 6, -1, 1);
    embed_ctx ctx = {tok, ddup_f(wte, V * C), ddup_f(pos, L * C), B, T, C};
    double *wd = ddup_f(w, B * T * C), *fd_wte = dalloc(V * C), *fd_pos = dalloc(L * C);
    ref_fd_grad(fd_wte, ctx.wte, V * C, embed_fwd, &ctx, wd, B * T * C, FD_H);
    ref_fd_grad(fd_pos, ctx.pos, L * C, embed_fwd, &ctx, wd, B * T * C, FD_H);

    float *pre_wte = frand(V * C, 7, -0.5f, 0.5f), *pre_pos = frand(L * C, 8, -0.5f, 0.5f);
    float *dwte = fdup(pre_wte, V * C), *dpos = fdup(pre_pos, L * C);
    gf_embed_backward(dwte, dpos, w, tok, B, T, C);
    ref_check_grad("embed_backward: dwte", dwte, pre_wte, fd_wte, V * C, 1e-5, 1e-3);
    ref_check_grad("embed_backward: dpos", dpos, pre_pos, fd_pos, L * C, 1e-5, 1e-3);

    /* dpos NULL (fixed sinusoidal table) */
    dwte = fdup(pre_wte, V * C);
    gf_embed_backward(dwte, NULL, w, tok, B, T, C);
    ref_check_grad("embed_backward(dpos NULL): dwte", dwte, pre_wte, fd_wte, V * C, 1e-5, 1e-3);
}

/* ---- linear ----------------------------------------------------------------------------------- */

typedef struct {
    double *inp, *w, *b;
    int64_t ldi, ldw, N, IC, OC;
} linear_ctx;

static void linear_fwd(const void *c_, double *out) {
    const linear_ctx *c = c_;
    ref_linear(out, c->inp, c->ldi, c->w, c->ldw, c->b, c->N, c->IC, c->OC, 0.0);
}

static void test_linear_forward(void **state) {
    (void)state;
    const int64_t N = 7, IC = 13, OC = 19;
    const int64_t lds[2][2] = {{IC, IC}, {16, 20}}; /* (ldi, ldw): contiguous, then strided */
    for (int s = 0; s < 2; s++)
        for (int with_bias = 0; with_bias < 2; with_bias++)
            for (int beta = 0; beta < 2; beta++) {
                const int64_t ldi = lds[s][0], ldw = lds[s][1];
                float *inp = frand(N * ldi, 10 + s, -1, 1), *w = frand(OC * ldw, 20 + s, -1, 1);
                float *b = with_bias ? frand(OC, 30, -1, 1) : NULL;
                float *out = falloc(N * OC);
                if (beta)
                    tl_fill_uniform(out, N * OC, 40, -2, 2);
                else
                    ffill(out, N * OC, NAN); /* beta 0 overwrites, whatever was there */
                double *want = ddup_f(out, N * OC);
                ref_linear(want, ddup_f(inp, N * ldi), ldi, ddup_f(w, OC * ldw), ldw,
                           b ? ddup_f(b, OC) : NULL, N, IC, OC, (double)beta);
                gf_linear_forward(out, inp, ldi, w, ldw, b, N, IC, OC, (float)beta);
                char what[128];
                snprintf(what, sizeof what, "linear_forward(ldi=%lld, ldw=%lld, bias=%s, beta=%d): out",
                         (long long)ldi, (long long)ldw, b ? "yes" : "NULL", beta);
                ref_check_rel(what, out, want, N * OC, 1e-5, 1e-3);
            }
}

static void test_linear_backward(void **state) {
    (void)state;
    const int64_t N = 7, IC = 13, OC = 19, ldi = 16, ldw = 20, lddi = 15, lddw = 17;
    float *inp = frand(N * ldi, 50, -1, 1), *w = frand(OC * ldw, 51, -1, 1), *b = frand(OC, 52, -1, 1);
    float *dout = frand(N * OC, 53, -1, 1);
    linear_ctx ctx = {ddup_f(inp, N * ldi), ddup_f(w, OC * ldw), ddup_f(b, OC), ldi, ldw, N, IC, OC};
    double *wd = ddup_f(dout, N * OC);
    double *fd_inp = dalloc(N * ldi), *fd_w = dalloc(OC * ldw), *fd_b = dalloc(OC);
    ref_fd_grad(fd_inp, ctx.inp, N * ldi, linear_fwd, &ctx, wd, N * OC, FD_H);
    ref_fd_grad(fd_w, ctx.w, OC * ldw, linear_fwd, &ctx, wd, N * OC, FD_H);
    ref_fd_grad(fd_b, ctx.b, OC, linear_fwd, &ctx, wd, N * OC, FD_H);
    /* the gradients in the layouts of the gradient buffers (strides lddi, lddw); padding gets nothing */
    double *want_inp = dalloc(N * lddi), *want_w = dalloc(OC * lddw);
    for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < lddi; i++) want_inp[n * lddi + i] = i < IC ? fd_inp[n * ldi + i] : 0.0;
    for (int64_t o = 0; o < OC; o++)
        for (int64_t i = 0; i < lddw; i++) want_w[o * lddw + i] = i < IC ? fd_w[o * ldw + i] : 0.0;

    for (int mask = 0; mask < 8; mask++) { /* bit k set: pass gradient k (dinp, dw, db), else NULL */
        float *pre_inp = frand(N * lddi, 60 + mask, -0.5f, 0.5f),
              *pre_w = frand(OC * lddw, 70 + mask, -0.5f, 0.5f);
        float *pre_b = frand(OC, 80 + mask, -0.5f, 0.5f);
        float *dinp = fdup(pre_inp, N * lddi), *dw = fdup(pre_w, OC * lddw), *db = fdup(pre_b, OC);
        gf_linear_backward(mask & 1 ? dinp : NULL, lddi, mask & 2 ? dw : NULL, lddw, mask & 4 ? db : NULL,
                           dout, inp, ldi, w, ldw, N, IC, OC);
        char what[128];
        const char *tag =
            (const char *[]){"none", "dinp", "dw", "dinp+dw", "db", "dinp+db", "dw+db", "all"}[mask];
        if (mask & 1) {
            snprintf(what, sizeof what, "linear_backward(%s): dinp (stride %lld)", tag, (long long)lddi);
            ref_check_grad(what, dinp, pre_inp, want_inp, N * lddi, 1e-5, 1e-3);
        }
        if (mask & 2) {
            snprintf(what, sizeof what, "linear_backward(%s): dw (stride %lld)", tag, (long long)lddw);
            ref_check_grad(what, dw, pre_w, want_w, OC * lddw, 1e-5, 1e-3);
        }
        if (mask & 4) {
            snprintf(what, sizeof what, "linear_backward(%s): db", tag);
            ref_check_grad(what, db, pre_b, fd_b, OC, 1e-5, 1e-3);
        }
    }
}

/* ---- LayerNorm -------------------------------------------------------------------------------- */

typedef struct {
    double *inp, *w, *b;
    int64_t N, C;
} ln_ctx;

static void ln_fwd(const void *c_, double *out) {
    const ln_ctx *c = c_;
    ref_layernorm(out, NULL, NULL, c->inp, c->w, c->b, c->N, c->C, 1e-5);
}

/* rows with different means and spreads */
static float *ln_input(int64_t N, int64_t C, uint64_t seed) {
    float *x = frand(N * C, seed, -1, 1);
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            x[n * C + c] = x[n * C + c] * (0.3f + 0.6f * (float)n) + 1.5f * (float)(n - 2);
    return x;
}

/* eps 1e-5 (torch's default) and 1e-12 (BERT's); the last row's variance (about 1e-8) is small enough that
 * the two give different outputs, so a kernel that ignored eps fails one of them. */
static void test_layernorm_forward(void **state) {
    (void)state;
    const int64_t N = 6, C = 37;
    const float eps[2] = {1e-5f, 1e-12f};
    float *inp = ln_input(N, C, 90), *w = frand(C, 91, 0.5f, 1.5f), *b = frand(C, 92, -0.5f, 0.5f);
    for (int64_t c = 0; c < C; c++) inp[(N - 1) * C + c] = 1e-4f * (float)(c % 3 - 1);
    for (int e = 0; e < 2; e++) {
        float *out = falloc(N * C), *mean = falloc(N), *rstd = falloc(N);
        ffill(out, N * C, NAN);
        gf_layernorm_forward(out, mean, rstd, inp, w, b, N, C, eps[e]);
        double *want = dalloc(N * C), *wmean = dalloc(N), *wrstd = dalloc(N);
        ref_layernorm(want, wmean, wrstd, ddup_f(inp, N * C), ddup_f(w, C), ddup_f(b, C), N, C, eps[e]);
        ref_check_rel("layernorm_forward: out", out, want, N * C, 1e-4, 1.0);
        ref_check_rel("layernorm_forward: mean", mean, wmean, N, 1e-6, 1.0);
        ref_check_rel("layernorm_forward: rstd", rstd, wrstd, N, 1e-4, 1.0);
    }
}

static void test_layernorm_backward(void **state) {
    (void)state;
    const int64_t N = 6, C = 37;
    float *inp = ln_input(N, C, 100), *w = frand(C, 101, 0.5f, 1.5f), *b = frand(C, 102, -0.5f, 0.5f);
    float *dout = frand(N * C, 103, -1, 1), *out = falloc(N * C), *mean = falloc(N), *rstd = falloc(N);
    gf_layernorm_forward(out, mean, rstd, inp, w, b, N, C, 1e-5f);
    ln_ctx ctx = {ddup_f(inp, N * C), ddup_f(w, C), ddup_f(b, C), N, C};
    double *wd = ddup_f(dout, N * C), *fd_inp = dalloc(N * C), *fd_w = dalloc(C), *fd_b = dalloc(C);
    ref_fd_grad(fd_inp, ctx.inp, N * C, ln_fwd, &ctx, wd, N * C, FD_H);
    ref_fd_grad(fd_w, ctx.w, C, ln_fwd, &ctx, wd, N * C, FD_H);
    ref_fd_grad(fd_b, ctx.b, C, ln_fwd, &ctx, wd, N * C, FD_H);
    for (int mask = 0; mask < 8; mask++) {
        float *pre_inp = frand(N * C, 110 + mask, -0.5f, 0.5f), *pre_w = frand(C, 120 + mask, -0.5f, 0.5f);
        float *pre_b = frand(C, 130 + mask, -0.5f, 0.5f);
        float *dinp = fdup(pre_inp, N * C), *dw = fdup(pre_w, C), *db = fdup(pre_b, C);
        gf_layernorm_backward(mask & 1 ? dinp : NULL, mask & 2 ? dw : NULL, mask & 4 ? db : NULL, dout, inp,
                              w, mean, rstd, N, C);
        char what[96];
        if (mask & 1) {
            snprintf(what, sizeof what, "layernorm_backward(mask %d): dinp", mask);
            ref_check_grad(what, dinp, pre_inp, fd_inp, N * C, 1e-5, 1e-3);
        }
        if (mask & 2) {
            snprintf(what, sizeof what, "layernorm_backward(mask %d): dweight", mask);
            ref_check_grad(what, dw, pre_w, fd_w, C, 1e-5, 1e-3);
        }
        if (mask & 4) {
            snprintf(what, sizeof what, "layernorm_backward(mask %d): dbias", mask);
            ref_check_grad(what, db, pre_b, fd_b, C, 1e-5, 1e-3);
        }
    }
}

/* ---- GELU ------------------------------------------------------------------------------------- */

typedef struct {
    double *inp;
    int64_t n;
    gf_gelu_kind kind;
} gelu_ctx;

static void gelu_fwd(const void *c_, double *out) {
    const gelu_ctx *c = c_;
    ref_gelu(out, c->inp, c->n, c->kind);
}

static float *gelu_input(int64_t n) {
    float *x = falloc(n);
    for (int64_t i = 0; i < n - 6; i++) x[i] = -6.0f + 12.0f * (float)i / (float)(n - 7);
    const float extra[6] = {0.0f, 1e-3f, -1e-3f, 10.0f, -10.0f, 0.7071f};
    for (int i = 0; i < 6; i++) x[n - 6 + i] = extra[i];
    return x;
}

static void test_gelu_forward(void **state) {
    (void)state;
    const int64_t n = 307;
    float *inp = gelu_input(n);
    for (int kind = 0; kind < 2; kind++) {
        float *out = falloc(n);
        ffill(out, n, NAN);
        gf_gelu_forward(out, inp, n, (gf_gelu_kind)kind);
        double *want = dalloc(n);
        ref_gelu(want, ddup_f(inp, n), n, (gf_gelu_kind)kind);
        ref_check_rel(kind == GF_GELU_TANH ? "gelu_forward(tanh): out" : "gelu_forward(erf): out", out, want,
                      n, 1e-6, 1.0);
    }
}

static void test_gelu_backward(void **state) {
    (void)state;
    const int64_t n = 307;
    float *inp = gelu_input(n), *dout = frand(n, 140, -1, 1);
    for (int kind = 0; kind < 2; kind++) {
        const char *nm = kind == GF_GELU_TANH ? "tanh" : "erf";
        gelu_ctx ctx = {ddup_f(inp, n), n, (gf_gelu_kind)kind};
        double *fd = dalloc(n);
        ref_fd_grad(fd, ctx.inp, n, gelu_fwd, &ctx, ddup_f(dout, n), n, FD_H);
        float *pre = frand(n, 141, -0.5f, 0.5f), *dinp = fdup(pre, n);
        gf_gelu_backward(dinp, inp, dout, n, (gf_gelu_kind)kind);
        char what[96];
        snprintf(what, sizeof what, "gelu_backward(%s): dinp", nm);
        ref_check_grad(what, dinp, pre, fd, n, 1e-5, 1e-3);
        /* dinp == dout: overwritten with dout * gelu'(inp), not accumulated */
        float *buf = fdup(dout, n), *zero = falloc(n);
        ffill(zero, n, 0.0f);
        gf_gelu_backward(buf, inp, buf, n, (gf_gelu_kind)kind);
        snprintf(what, sizeof what, "gelu_backward(%s, dinp == dout): dinp", nm);
        ref_check_grad(what, buf, zero, fd, n, 1e-5, 1e-3);
    }
}

/* The kept pair (the forward keeps its erf or tanh term for the backward) gives the plain pair's bits:
 * outputs, accumulated and overwritten gradients, both kinds, over a length with a vector remainder and
 * one past the threshold where the loops go parallel. */
static void test_gelu_kept_bits(void **state) {
    (void)state;
    const int64_t ns[2] = {307, 3 * 32768 / 2 + 5}; /* past compute/parallel.c's gf_par_min */
    for (int k = 0; k < 2; k++) {
        const int64_t n = ns[k];
        float *inp = frand(n, 142 + k, -7, 7), *dout = frand(n, 144 + k, -1, 1), *pre = frand(n, 146 + k, -1, 1);
        for (int kind = 0; kind < 2; kind++) {
            float *out = falloc(n), *out_k = falloc(n), *keep = falloc(n);
            gf_gelu_forward(out, inp, n, (gf_gelu_kind)kind);
            gf_gelu_forward_keep(out_k, keep, inp, n, (gf_gelu_kind)kind);
            float *d = fdup(pre, n), *d_k = fdup(pre, n), *o = fdup(dout, n), *o_k = fdup(dout, n);
            gf_gelu_backward(d, inp, dout, n, (gf_gelu_kind)kind);
            gf_gelu_backward_kept(d_k, inp, keep, dout, n, (gf_gelu_kind)kind);
            gf_gelu_backward(o, inp, o, n, (gf_gelu_kind)kind);
            gf_gelu_backward_kept(o_k, inp, keep, o_k, n, (gf_gelu_kind)kind);
            const size_t sz = (size_t)n * sizeof(float);
            if (memcmp(out, out_k, sz) || memcmp(d, d_k, sz) || memcmp(o, o_k, sz))
                fail_msg("gelu (%s, n %lld): the kept pair is not the bits of the plain pair",
                         kind == GF_GELU_TANH ? "tanh" : "erf", (long long)n);
        }
    }
}

/* ---- dropout ---------------------------------------------------------------------------------- */

static void test_dropout_p0_identity(void **state) {
    (void)state;
    const int64_t n = 1001;
    float *inp = frand(n, 150, -1, 1), *out = falloc(n);
    ffill(out, n, NAN);
    gf_dropout_forward(out, inp, n, 0.0f, 77);
    if (memcmp(out, inp, (size_t)n * sizeof *out) != 0) fail_msg("dropout_forward(p=0): out != inp");
    float *buf = fdup(inp, n);
    gf_dropout_forward(buf, buf, n, 0.0f, 77);
    if (memcmp(buf, inp, (size_t)n * sizeof *buf) != 0) fail_msg("dropout_forward(p=0, in place): changed");
    float *dout = frand(n, 151, -1, 1), *pre = frand(n, 152, -1, 1), *dinp = fdup(pre, n);
    gf_dropout_backward(dinp, dout, n, 0.0f, 77);
    for (int64_t i = 0; i < n; i++)
        if (dinp[i] != pre[i] + dout[i])
            fail_msg("dropout_backward(p=0): dinp[%lld] = %.9g, want pre + dout = %.9g", (long long)i,
                     (double)dinp[i], (double)(pre[i] + dout[i]));
    for (int64_t i = 0; i < n; i++)
        if (!gf_dropout_keep(77, i, 0.0f))
            fail_msg("gf_dropout_keep(p=0) dropped element %lld", (long long)i);
}

static void test_dropout_mask(void **state) {
    (void)state;
    const int64_t n = 100000;
    const float ps[3] = {0.1f, 0.25f, 0.9f};
    const uint64_t key = 0x1234abcdull;
    float *inp = frand(n, 160, 0.1f, 1.0f); /* nonzero, so a zero output means "dropped" */
    for (int k = 0; k < 3; k++) {
        const float p = ps[k];
        float *o1 = falloc(n), *o2 = falloc(n), *o3 = falloc(n);
        gf_dropout_forward(o1, inp, n, p, key);
        gf_dropout_forward(o2, inp, n, p, key);
        gf_dropout_forward(o3, inp, n, p, key + 1);
        /* values: kept ones scaled by 1/(1-p), mask = gf_dropout_keep = (uniform(key, i) >= p) */
        double *want = dalloc(n);
        int64_t kept = 0;
        for (int64_t i = 0; i < n; i++) {
            bool keep = gf_dropout_keep(key, i, p);
            if (keep != (gf_uniform(key, (uint64_t)i) >= p))
                fail_msg("gf_dropout_keep(p=%g, i=%lld) disagrees with uniform(key, i) >= p", (double)p,
                         (long long)i);
            want[i] = keep ? (double)inp[i] / (1.0 - (double)p) : 0.0;
            kept += keep;
            if ((o1[i] != 0.0f) != keep)
                fail_msg("dropout_forward(p=%g): element %lld kept=%d but out=%g", (double)p, (long long)i,
                         keep, (double)o1[i]);
        }
        char what[96];
        snprintf(what, sizeof what, "dropout_forward(p=%g): out", (double)p);
        ref_check_rel(what, o1, want, n, 1e-6, 1.0);
        double frac = (double)kept / (double)n, sd = sqrt((double)p * (1.0 - p) / (double)n);
        if (!(fabs(frac - (1.0 - p)) <= 5.0 * sd))
            fail_msg("dropout(p=%g): kept fraction %.5f, want %.5f +- %.5f", (double)p, frac, 1.0 - p,
                     5.0 * sd);
        /* same key: the same mask; another key: another mask (differs in about 2p(1-p) of the elements) */
        if (memcmp(o1, o2, (size_t)n * sizeof *o1) != 0)
            fail_msg("dropout(p=%g): same key, different output", (double)p);
        int64_t differ = 0, kept3 = 0;
        for (int64_t i = 0; i < n; i++) {
            differ += (o1[i] != 0.0f) != (o3[i] != 0.0f);
            kept3 += o3[i] != 0.0f;
        }
        double fd = (double)differ / (double)n, wd = 2.0 * p * (1.0 - p);
        if (!(fabs(fd - wd) <= 0.01))
            fail_msg("dropout(p=%g): masks of keys k and k+1 differ in %.4f of elements, want about %.4f",
                     (double)p, fd, wd);
        if (!(fabs((double)kept3 / (double)n - (1.0 - p)) <= 5.0 * sd))
            fail_msg("dropout(p=%g, key+1): kept fraction %.5f", (double)p, (double)kept3 / (double)n);
        /* the mask of element i does not depend on n, on in-place use or on the thread count */
        float *half = falloc(n / 2);
        gf_dropout_forward(half, inp, n / 2, p, key);
        if (memcmp(half, o1, (size_t)(n / 2) * sizeof *half) != 0)
            fail_msg("dropout(p=%g): mask depends on n", (double)p);
        float *buf = fdup(inp, n);
        gf_dropout_forward(buf, buf, n, p, key);
        if (memcmp(buf, o1, (size_t)n * sizeof *buf) != 0)
            fail_msg("dropout(p=%g): in place differs", (double)p);
#ifdef _OPENMP
        /* 1 thread against 2 or more (never 1 against 1, on a machine or an OMP_NUM_THREADS of one core) */
        const int nt = omp_get_max_threads(), many = nt > 1 ? nt : 2;
        float *buf2 = falloc(n);
        omp_set_num_threads(1);
        gf_dropout_forward(buf, inp, n, p, key);
        omp_set_num_threads(many);
        gf_dropout_forward(buf2, inp, n, p, key);
        omp_set_num_threads(nt);
        if (memcmp(buf, o1, (size_t)n * sizeof *buf) != 0 || memcmp(buf2, o1, (size_t)n * sizeof *buf) != 0)
            fail_msg("dropout(p=%g): 1 thread and %d threads differ", (double)p, many);
#endif
        /* backward: the same mask, same scale, accumulated */
        float *dout = frand(n, 161, -1, 1), *pre = frand(n, 162, -1, 1), *dinp = fdup(pre, n);
        gf_dropout_backward(dinp, dout, n, p, key);
        for (int64_t i = 0; i < n; i++) want[i] = o1[i] != 0.0f ? (double)dout[i] / (1.0 - (double)p) : 0.0;
        snprintf(what, sizeof what, "dropout_backward(p=%g): dinp", (double)p);
        ref_check_grad(what, dinp, pre, want, n, 1e-6, 1.0);
        for (int64_t i = 0; i < n; i++)
            if ((o1[i] == 0.0f) && dinp[i] != pre[i])
                fail_msg("dropout_backward(p=%g): element %lld dropped in the forward got a gradient",
                         (double)p, (long long)i);
    }
}

/* ---- fused softmax cross-entropy -------------------------------------------------------------- */

typedef struct {
    double *logits;
    const int32_t *targets;
    int64_t N, V;
} xent_ctx;

static void xent_fwd(const void *c_, double *out) {
    const xent_ctx *c = c_;
    ref_xent(out, NULL, c->logits, c->targets, c->N, c->V);
}

static void test_xent(void **state) {
    (void)state;
    const int64_t N = 7, V = 11;
    const int32_t targets[] = {3, -1, 0, 10, -1, 5, 7};
    float *logits = frand(N * V, 170, -3, 3);
    for (int64_t v = 0; v < V; v++) logits[5 * V + v] += 60.0f; /* large logits: must not overflow */
    float *losses = falloc(N), *lse = falloc(N);
    ffill(losses, N, NAN);
    int64_t cnt = gf_xent_forward(losses, lse, logits, targets, N, V, 0.0f);
    xent_ctx ctx = {ddup_f(logits, N * V), targets, N, V};
    double *wl = dalloc(N), *wlse = dalloc(N);
    int64_t wcnt = ref_xent(wl, wlse, ctx.logits, targets, N, V);
    if (cnt != wcnt)
        fail_msg("xent_forward: returned count %lld, want %lld", (long long)cnt, (long long)wcnt);
    ref_check_rel("xent_forward: losses", losses, wl, N, 1e-5, 1.0);
    ref_check_rel("xent_forward: lse", lse, wlse, N, 1e-6, 1.0);
    for (int64_t n = 0; n < N; n++)
        if (targets[n] < 0 && losses[n] != 0.0f)
            fail_msg("xent_forward: ignored row %lld has loss %g", (long long)n, (double)losses[n]);

    /* backward: d(scale * sum(losses)) / d(logits), in place */
    const float scale = 1.0f / (float)cnt;
    double *w = dalloc(N), *fd = dalloc(N * V);
    for (int64_t n = 0; n < N; n++) w[n] = scale;
    ref_fd_grad(fd, ctx.logits, N * V, xent_fwd, &ctx, w, N, FD_H);
    float *g = fdup(logits, N * V), *zero = falloc(N * V);
    ffill(zero, N * V, 0.0f);
    gf_xent_backward(g, lse, targets, N, V, scale, 0.0f);
    ref_check_grad("xent_backward: dlogits", g, zero, fd, N * V, 1e-5, 1e-3);
    for (int64_t n = 0; n < N; n++)
        for (int64_t v = 0; v < V && targets[n] < 0; v++)
            if (g[n * V + v] != 0.0f)
                fail_msg("xent_backward: ignored row %lld col %lld = %g", (long long)n, (long long)v,
                         (double)g[n * V + v]);

    /* every target ignored: count 0, zero losses, zero gradient */
    const int32_t none[] = {-1, -1, -1, -1, -1, -1, -1};
    cnt = gf_xent_forward(losses, lse, logits, none, N, V, 0.0f);
    if (cnt != 0) fail_msg("xent_forward(all ignored): count %lld, want 0", (long long)cnt);
    g = fdup(logits, N * V);
    gf_xent_backward(g, lse, none, N, V, 1.0f, 0.0f);
    for (int64_t i = 0; i < N * V; i++)
        if (g[i] != 0.0f || (i < N && losses[i] != 0.0f))
            fail_msg("xent(all ignored): nonzero at %lld", (long long)i);
}

/* Label smoothing: the loss is the cross-entropy against q = (1 - eps) onehot(target) + eps / V, written
 * here as that sum (-sum_v q_v log p_v, in double) rather than the library's algebra; the gradient against
 * finite differences of it; eps = 0 gives the plain loss's bits. */
typedef struct {
    xent_ctx x;
    double eps;
} smooth_ctx;

static void ref_smoothed(const void *c_, double *out) {
    const smooth_ctx *c = c_;
    const int64_t N = c->x.N, V = c->x.V;
    double *lse = dalloc(N);
    ref_xent(out, lse, c->x.logits, c->x.targets, N, V);
    for (int64_t n = 0; n < N; n++) {
        if (c->x.targets[n] < 0) continue;
        double s = 0.0;
        for (int64_t v = 0; v < V; v++) {
            const double q = (v == c->x.targets[n] ? 1.0 - c->eps : 0.0) + c->eps / (double)V;
            s -= q * (c->x.logits[n * V + v] - lse[n]);
        }
        out[n] = s;
    }
}

static void test_xent_smoothed(void **state) {
    (void)state;
    const int64_t N = 6, V = 13;
    const int32_t targets[] = {3, -1, 0, 12, 5, 7};
    float *logits = frand(N * V, 171, -3, 3);
    float *losses = falloc(N), *lse = falloc(N), *plain = falloc(N), *lse0 = falloc(N);
    smooth_ctx ctx = {{ddup_f(logits, N * V), targets, N, V}, 0.1};
    const int64_t cnt = gf_xent_forward(losses, lse, logits, targets, N, V, 0.1f);
    assert_int_equal(cnt, 5);
    double *want = dalloc(N);
    ref_smoothed(&ctx, want);
    ref_check_rel("xent_forward, eps 0.1: losses", losses, want, N, 1e-5, 1.0);
    gf_xent_forward(plain, lse0, logits, targets, N, V, 0.0f);
    double *wplain = dalloc(N);
    ref_xent(wplain, NULL, ctx.x.logits, targets, N, V);
    ref_check_rel("xent_forward, eps 0: losses", plain, wplain, N, 1e-5, 1.0);
    for (int64_t n = 0; n < N; n++)
        if (targets[n] >= 0 && fabs((double)losses[n] - (double)plain[n]) < 1e-3)
            fail_msg("xent_forward: row %lld's smoothed loss equals its plain one", (long long)n);

    const float scale = 0.5f;
    double *w = dalloc(N), *fd = dalloc(N * V);
    for (int64_t n = 0; n < N; n++) w[n] = scale;
    ref_fd_grad(fd, ctx.x.logits, N * V, ref_smoothed, &ctx, w, N, FD_H);
    float *g = fdup(logits, N * V), *zero = falloc(N * V);
    ffill(zero, N * V, 0.0f);
    gf_xent_backward(g, lse, targets, N, V, scale, 0.1f);
    ref_check_grad("xent_backward, eps 0.1: dlogits", g, zero, fd, N * V, 1e-5, 1e-3);
    for (int64_t v = 0; v < V; v++)
        if (g[1 * V + v] != 0.0f) fail_msg("xent_backward, eps 0.1: ignored row has %g", (double)g[V + v]);
}

/* The default's sums over exp keep the bits they always had (compute/fastmath.h, gf_sum_exp_f and _d): without
 * AVX-512, those of the terms gf_exp_fast(z - max) added one by one in index order (the plain loops below, which
 * the compiler may not reorder), bit for bit; with AVX-512, the compiler's lane-wise order, held to 1e-6. The
 * loss's log-sum-exp (double sums, a float result) and a softmax's (float sums: a change of order moves them),
 * with masked entries, every block and the tail; tests/train/fixtures.sh holds training to 0.1's bits. */
static float lse_in_order(const float *z, int64_t V, bool in_double) {
    float mx = -INFINITY;
    for (int64_t v = 0; v < V; v++) mx = z[v] > mx ? z[v] : mx;
    double sd = 0.0;
    float sf = 0.0f;
    for (int64_t v = 0; v < V; v++) {
        sd += gf_exp_fast(z[v] - mx);
        sf += gf_exp_fast(z[v] - mx);
    }
    return in_double ? mx + (float)log(sd) : mx + logf(sf);
}

static void same_lse(const char *what, int64_t V, float got, float want) {
#if defined(__AVX512F__)
    if (!(fabsf(got - want) <= 1e-6f * fabsf(want) + 1e-6f))
#else
    if (memcmp(&got, &want, sizeof got))
#endif
        fail_msg("%s of a row of %lld: %.9g, in order %.9g", what, (long long)V, (double)got, (double)want);
}

static void test_sum_exp_order(void **state) {
    (void)state;
    const int64_t sizes[] = {1, 7, 255, 256, 257, 1000, 33278};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        const int64_t V = sizes[k];
        /* logits close together: every term counts, so a float sum in another order gives other bits */
        float *z = frand(V, 190 + (uint64_t)k, -1, 1);
        for (int64_t v = 3; v < V; v += 97) z[v] = -INFINITY; /* masked entries add nothing */
        same_lse("the loss's log-sum-exp", V, gf_log_softmax_nll(z, V, 0), lse_in_order(z, V, true) - z[0]);
        float *row = fdup(z, V), l = 0.0f;
        gf_softmax_row(row, V, NULL, NULL, &l);
        same_lse("a softmax's log-sum-exp", V, l, lse_in_order(z, V, false));
    }
}

/* ---- elementwise ------------------------------------------------------------------------------ */

static void test_elementwise(void **state) {
    (void)state;
    const int64_t n = 1001;
    float *a = frand(n, 180, -1, 1), *b = frand(n, 181, -1, 1), *out = falloc(n);
    double *want = dalloc(n);
    for (int64_t i = 0; i < n; i++) want[i] = (double)a[i] + (double)b[i];
    ffill(out, n, NAN);
    gf_add(out, a, b, n);
    ref_check_rel("gf_add: out", out, want, n, 1e-7, 1.0);
    float *buf = fdup(a, n);
    gf_add(buf, buf, b, n);
    ref_check_rel("gf_add(out == a): out", buf, want, n, 1e-7, 1.0);
    buf = fdup(b, n);
    gf_add(buf, a, buf, n);
    ref_check_rel("gf_add(out == b): out", buf, want, n, 1e-7, 1.0);
    buf = fdup(a, n);
    gf_acc(buf, b, n);
    ref_check_rel("gf_acc: out", buf, want, n, 1e-7, 1.0);
    gf_zero(buf, n);
    for (int64_t i = 0; i < n; i++)
        if (buf[i] != 0.0f) fail_msg("gf_zero: element %lld = %g", (long long)i, (double)buf[i]);
    gf_copy(buf, a, n);
    if (memcmp(buf, a, (size_t)n * sizeof *a) != 0) fail_msg("gf_copy: differs");
    gf_copy(buf, buf, n);
    if (memcmp(buf, a, (size_t)n * sizeof *a) != 0) fail_msg("gf_copy(out == a): changed");

    /* colsum: (N, C) with row stride ld, C across the 16-column blocks, accumulated */
    const int64_t shapes[3][3] = {{9, 37, 41}, {5, 5, 5}, {0, 7, 7}};
    for (int s = 0; s < 3; s++) {
        const int64_t N = shapes[s][0], C = shapes[s][1], ld = shapes[s][2];
        float *inp = frand(N * ld + 1, 190 + s, -1, 1), *pre = frand(C, 195 + s, -1, 1), *o = fdup(pre, C);
        double *sum = dalloc(C);
        for (int64_t c = 0; c < C; c++) {
            sum[c] = 0.0;
            for (int64_t r = 0; r < N; r++) sum[c] += inp[r * ld + c];
        }
        gf_colsum_acc(o, inp, ld, N, C);
        char what[96];
        snprintf(what, sizeof what, "gf_colsum_acc(N=%lld, C=%lld, ld=%lld): out", (long long)N, (long long)C,
                 (long long)ld);
        ref_check_grad(what, o, pre, sum, C, 1e-6, 1.0);
    }
}

/* ---- column sums: the same bits at every block width and thread count ---------------------------- */

/* gf_colsum_acc and LayerNorm's weight and bias gradients sum each column over the rows in order, in float,
 * whatever the width of the column blocks the threads own (64 where there are enough of them, else 16):
 * so equal, bit for bit, to the plain loop below on every shape (wide blocks, narrow ones and a tail), on
 * 1 and 2 threads. A training run resumes to the same bits as the version that started it (fixtures.sh). */
/* One-row matrix-vector products (compute/gemv.c) against their naive references, rows and columns, tails of
 * every length mod 32, beta 0 (c not read: NaN there) and not; and their bits the same on 1 and 2 threads
 * with the parallel threshold at 0 (the stream picks its threads by speed and must give the same tokens). */
static void test_gemv(void **state) {
    (void)state;
    const int64_t shapes[][2] = {{1, 1}, {3, 17}, {65, 256}, {33, 496}, {130, 31}, {257, 1024}, {513, 64}};
    const int saved = gf_threads();
    const int64_t par = gf_par_min;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const int64_t N = shapes[i][0], K = shapes[i][1], ld = K + 3, ldc = N + 5;
        float *B = frand(N * ld, 400 + (int)i, -1, 1), *Bc = frand(K * ldc, 410 + (int)i, -1, 1);
        float *a = frand(K, 420 + (int)i, -1, 1), *c0 = frand(N, 430, -1, 1);
        for (int beta01 = 0; beta01 < 2; beta01++) {
            const float alpha = 0.75f, beta = beta01 ? 0.5f : 0.0f;
            float *want_r = fdup(c0, N), *want_c = fdup(c0, N), *bits_r = falloc(N), *bits_c = falloc(N);
            gf_gemv_rows_naive(B, ld, N, K, a, alpha, beta, want_r);
            gf_gemv_cols_naive(Bc, ldc, N, K, a, alpha, beta, want_c);
            for (int th = 1; th <= 2; th++) {
                gf_set_threads(th);
                gf_set_parallel_threshold(0);
                float *r = fdup(c0, N), *c = fdup(c0, N);
                if (!beta01) ffill(r, N, NAN), ffill(c, N, NAN);
                gf_gemv_rows(B, ld, N, K, a, alpha, beta, r);
                gf_gemv_cols(Bc, ldc, N, K, a, alpha, beta, c);
                gf_set_parallel_threshold(par);
                double *wr = tl_to_double(want_r, N), *wc = tl_to_double(want_c, N);
                tl_check_close("gemv rows", r, wr, N, 2e-5 * sqrt((double)K));
                tl_check_close("gemv cols", c, wc, N, 2e-5 * sqrt((double)K));
                free(wr), free(wc);
                if (th == 1) memcpy(bits_r, r, (size_t)N * sizeof *r), memcpy(bits_c, c, (size_t)N * sizeof *c);
                else if (memcmp(bits_r, r, (size_t)N * sizeof *r) || memcmp(bits_c, c, (size_t)N * sizeof *c))
                    fail_msg("gemv %lld x %lld: 2 threads do not give the bits of 1", (long long)N, (long long)K);
            }
        }
    }
    gf_set_threads(saved);
}

static void test_column_sums_bits(void **state) {
    (void)state;
    const int64_t N = 33, Cs[] = {16, 70, 128, 200, 256};
    const int saved = gf_threads();
    for (int th = 1; th <= 2; th++) {
        gf_set_threads(th);
        for (size_t k = 0; k < sizeof Cs / sizeof Cs[0]; k++) {
            const int64_t C = Cs[k];
            float *x = frand(N * C, 300 + (int)k, -2, 2), *g = frand(N * C, 310 + (int)k, -1, 1), *w = frand(C, 320, 0.5f, 1.5f);
            float *b = frand(C, 321, -0.5f, 0.5f), *y = falloc(N * C), *mean = falloc(N), *rstd = falloc(N);
            float *cs = frand(C, 330, -1, 1), *dw = frand(C, 331, -1, 1), *db = frand(C, 332, -1, 1);
            float *want_cs = fdup(cs, C), *want_dw = fdup(dw, C), *want_db = fdup(db, C);
            gf_layernorm_forward(y, mean, rstd, x, w, b, N, C, 1e-5f);
            for (int64_t c = 0; c < C; c++) {
                float a = 0.0f, aw = 0.0f, ab = 0.0f;
                for (int64_t n = 0; n < N; n++) {
                    a += x[n * C + c];
                    aw += g[n * C + c] * (x[n * C + c] - mean[n]) * rstd[n];
                    ab += g[n * C + c];
                }
                want_cs[c] += a, want_dw[c] += aw, want_db[c] += ab;
            }
            gf_colsum_acc(cs, x, C, N, C);
            gf_layernorm_backward(NULL, dw, db, g, x, w, mean, rstd, N, C);
            if (memcmp(cs, want_cs, (size_t)C * sizeof(float)) || memcmp(dw, want_dw, (size_t)C * sizeof(float)) ||
                memcmp(db, want_db, (size_t)C * sizeof(float)))
                fail_msg("column sums at C %lld, %d threads: not the bits of the in-order loop", (long long)C, th);
        }
    }
    gf_set_threads(saved);
}

/* LayerNorm runs LN_ROWS rows at once (ops/layernorm.c), each row's sums still in column order: every row
 * of a many-row call, forward and input gradient, is the bits of that row alone (the one-row code), at
 * widths below and above a vector, with a remainder group, on 1 and 2 threads. */
static void test_layernorm_rows_bits(void **state) {
    (void)state;
    const int64_t N = 8 * 40 + 5, Cs[] = {16, 37, 128, 256};
    const int saved = gf_threads();
    for (int th = 1; th <= 2; th++) {
        gf_set_threads(th);
        for (size_t k = 0; k < sizeof Cs / sizeof Cs[0]; k++) {
            const int64_t C = Cs[k];
            float *x = ln_input(N, C, 340 + (int)k), *g = frand(N * C, 350 + (int)k, -1, 1), *w = frand(C, 360, 0.5f, 1.5f);
            float *b = frand(C, 361, -0.5f, 0.5f), *y = falloc(N * C), *mean = falloc(N), *rstd = falloc(N);
            float *y1 = falloc(N * C), *mean1 = falloc(N), *rstd1 = falloc(N);
            float *dx = frand(N * C, 362, -1, 1), *dx1 = fdup(dx, N * C);
            gf_layernorm_forward(y, mean, rstd, x, w, b, N, C, 1e-5f);
            gf_layernorm_backward(dx, NULL, NULL, g, x, w, mean, rstd, N, C);
            for (int64_t n = 0; n < N; n++) {
                gf_layernorm_forward(y1 + n * C, mean1 + n, rstd1 + n, x + n * C, w, b, 1, C, 1e-5f);
                gf_layernorm_backward(dx1 + n * C, NULL, NULL, g + n * C, x + n * C, w, mean1 + n, rstd1 + n, 1, C);
            }
            if (memcmp(y, y1, (size_t)(N * C) * sizeof(float)) || memcmp(mean, mean1, (size_t)N * sizeof(float)) ||
                memcmp(rstd, rstd1, (size_t)N * sizeof(float)))
                fail_msg("layernorm forward at C %lld, %d threads: rows at once are not the bits of one row", (long long)C, th);
            if (memcmp(dx, dx1, (size_t)(N * C) * sizeof(float)))
                fail_msg("layernorm input gradient at C %lld, %d threads: rows at once are not the bits of one row",
                         (long long)C, th);
        }
    }
    gf_set_threads(saved);
}

/* LayerNorm under --precision fp32-fast (float sums across the lanes, one row at a time): the same checks
 * against the double reference and finite differences; at widths 1 to 1,023 (remainders of every size
 * class of the vector loops), the default's outputs to float accuracy, other bits than the default's
 * somewhere (the fast path ran), and every row of a batch the bits of that row alone at another address
 * (a copy 1 to 15 floats off the batch's alignment: a sum that depended on where the row sits shows). */
static void ln_fast_rows_alone(const float *x, const float *g, const float *w, const float *b, const float *y,
                               const float *dx0, const float *dx, int64_t N, int64_t C) {
    float *buf = falloc(3 * C + 16), *mean = falloc(1), *rstd = falloc(1);
    for (int64_t n = 0; n < N; n++) {
        float *xr = buf + 1 + n % 15, *yr = xr + C, *dr = yr + C;
        memcpy(xr, x + n * C, (size_t)C * sizeof *xr);
        memcpy(dr, dx0 + n * C, (size_t)C * sizeof *dr);
        gf_layernorm_forward(yr, mean, rstd, xr, w, b, 1, C, 1e-5f);
        gf_layernorm_backward(dr, NULL, NULL, g + n * C, xr, w, mean, rstd, 1, C);
        if (memcmp(yr, y + n * C, (size_t)C * sizeof *yr) || memcmp(dr, dx + n * C, (size_t)C * sizeof *dr))
            fail_msg("layernorm fp32-fast at C %lld: row %lld alone is not the bits it had in the batch", (long long)C,
                     (long long)n);
    }
}

/* One row of fp32-fast's LayerNorm (y, dx) against the default's (y0, dx0_out, double sums), within what float
 * sums of C terms in any order allow (the sanitizer build sums in order, the optimised one across lanes):
 * each of the row's sums off by up to e = C u of the sum of its terms' magnitudes, u = 2^-24, carried
 * through the mean, 1/std, xhat and the backward's two means to y and dx, plus a few roundings of the
 * results. A wrong count, term or formula is off by far more. */
static void ln_fast_row_check(const float *x, const float *g, const float *w, const float *b, const float *y,
                              const float *y0, const float *dxin, const float *dx, const float *dx0, int64_t C) {
    const double u = 0x1p-24, e = (double)C * u;
    double m = 0, mabs = 0, var = 0, a1 = 0, a2 = 0, s2 = 0, xh_max = 0;
    for (int64_t c = 0; c < C; c++) m += x[c], mabs += fabs((double)x[c]);
    m /= (double)C, mabs /= (double)C;
    for (int64_t c = 0; c < C; c++) var += ((double)x[c] - m) * ((double)x[c] - m);
    const double r = 1.0 / sqrt(var / (double)C + 1e-5);
    for (int64_t c = 0; c < C; c++) {
        const double gw = (double)g[c] * w[c], xh = ((double)x[c] - m) * r;
        a1 += fabs(gw), a2 += fabs(gw * xh), s2 += gw * xh, xh_max = fmax(xh_max, fabs(xh));
    }
    a1 /= (double)C, a2 /= (double)C, s2 /= (double)C;
    const double dxh_max = e * (r * mabs + xh_max); /* the largest error of an xhat */
    for (int64_t c = 0; c < C; c++) {
        const double xh = fabs(((double)x[c] - m) * r), dxh = e * (r * mabs + xh);
        const double ty = fabs((double)w[c]) * dxh + 4 * u * (fabs((double)y0[c]) + fabs((double)b[c]) + 1);
        const double tdx = r * (e * a1 + xh * (e * a2 + a1 * dxh_max) + fabs(s2) * dxh) + e * fabs((double)dx0[c] - dxin[c]) +
                           4 * u * (fabs((double)dx0[c]) + fabs((double)dxin[c]) + 1);
        if (!(fabs((double)y[c] - y0[c]) <= ty) || !(fabs((double)dx[c] - dx0[c]) <= tdx)) /* a NaN fails */
            fail_msg("layernorm fp32-fast at C %lld, column %lld: y %.9g / %.9g (tolerance %.3g), dx %.9g / %.9g (%.3g)",
                     (long long)C, (long long)c, y[c], y0[c], ty, dx[c], dx0[c], tdx);
    }
}

static void test_layernorm_fast(void **state) {
    assert_int_equal(gf_set_matmul_precision(GF_PRECISION_FP32_FAST), 0);
    test_layernorm_forward(state);
    test_layernorm_backward(state);
    const int64_t N = 9, Cs[] = {1, 5, 16, 37, 45, 128, 1000, 1023};
    for (size_t k = 0; k < sizeof Cs / sizeof Cs[0]; k++) {
        const int64_t C = Cs[k];
        float *x = ln_input(N, C, 370 + (int)k), *g = frand(N * C, 380, -1, 1), *w = frand(C, 381, 0.5f, 1.5f);
        float *b = frand(C, 382, -0.5f, 0.5f), *dx0 = frand(N * C, 383, -1, 1), *y[2], *mean[2], *rstd[2], *dx[2];
        for (int p = 0; p < 2; p++) {
            assert_int_equal(gf_set_matmul_precision(p ? GF_PRECISION_FP32_FAST : GF_PRECISION_FP32), 0);
            y[p] = falloc(N * C), mean[p] = falloc(N), rstd[p] = falloc(N), dx[p] = fdup(dx0, N * C);
            gf_layernorm_forward(y[p], mean[p], rstd[p], x, w, b, N, C, 1e-5f);
            gf_layernorm_backward(dx[p], NULL, NULL, g, x, w, mean[p], rstd[p], N, C);
        }
        for (int64_t n = 0; n < N; n++) ln_fast_row_check(x + n * C, g + n * C, w, b, y[1] + n * C, y[0] + n * C,
                                                          dx0 + n * C, dx[1] + n * C, dx[0] + n * C, C);
        if (C == 1000 && !memcmp(y[1], y[0], (size_t)(N * C) * sizeof(float)))
            fail_msg("layernorm under fp32-fast gave the default's bits at C 1000: the fast path did not run");
        ln_fast_rows_alone(x, g, w, b, y[1], dx0, dx[1], N, C);
    }
    assert_int_equal(gf_set_matmul_precision(GF_PRECISION_FP32), 0);
}

/* ---- fast exp (the vectorised exp of the softmax) held to libm ---------------------------------- */

/* the two sets of compute/fastmath.h: the default, and the fused one of --precision fp32-fast */
typedef struct {
    const char *name;
    float (*exp)(float), (*erf)(float), (*tanh)(float);
} fast_set;
static float exp_d(float x) { return gf_exp_fast(x); }
static float erf_d(float x) { return gf_erf_fast(x); }
static float tanh_d(float x) { return gf_tanh_fast(x); }
static float exp_f(float x) { return gf_exp_fast_fma(x); }
static float erf_f(float x) { return gf_erf_fast_fma(x); }
static float tanh_f(float x) { return gf_tanh_fast_fma(x); }
static const fast_set FAST_SETS[2] = {{"gf_*_fast", exp_d, erf_d, tanh_d}, {"gf_*_fast_fma", exp_f, erf_f, tanh_f}};

static void test_exp_fast(void **state) {
    (void)state;
    for (int k = 0; k < 2; k++) {
        const fast_set *f = &FAST_SETS[k];
        double worst = 0.0;
        float at = 0.0f;
        for (int64_t i = 0; i <= 2000000; i++) {
            float x = -87.0f + 175.0f * (float)i / 2000000.0f;
            double want = exp((double)x), got = f->exp(x), rel = fabs(got - want) / want;
            if (isnan(rel) || rel > worst) { /* a NaN stays the worst */
                worst = isnan(worst) ? worst : rel;
                at = x;
            }
        }
        if (!(worst <= 4e-7)) fail_msg("%s exp: relative error %.3g at x = %.9g (want <= 4e-7, about 3 ulp)", f->name, worst, at);
        assert_true(f->exp(-1000.0f) < 1e-37f && f->exp(-1000.0f) >= 0.0f); /* clamped, no NaN */
        assert_true(f->exp(0.0f) == 1.0f);
    }
}

/* ---- fast erf and tanh (GELU) held to libm in double ------------------------------------------- */

static void test_erf_tanh_fast(void **state) {
    (void)state;
    for (int k = 0; k < 2; k++) {
        const fast_set *f = &FAST_SETS[k];
        double werf = 0.0, wtanh = 0.0;
        float aterf = 0.0f, attanh = 0.0f;
        for (int64_t i = 0; i <= 2000000; i++) {
            float x = -10.0f + 20.0f * (float)i / 2000000.0f;
            double e = fabs((double)f->erf(x) - erf((double)x));
            double t = fabs((double)f->tanh(x) - tanh((double)x));
            if (!isnan(werf) && !(e <= werf)) werf = e, aterf = x; /* a NaN stays the worst */
            if (!isnan(wtanh) && !(t <= wtanh)) wtanh = t, attanh = x;
        }
        if (!(werf <= 2e-7)) fail_msg("%s erf: absolute error %.3g at x = %.9g (want <= 2e-7)", f->name, werf, aterf);
        if (!(wtanh <= 2.5e-7)) fail_msg("%s tanh: absolute error %.3g at x = %.9g (want <= 2.5e-7)", f->name, wtanh, attanh);
        /* the range joins, the tails and the sign */
        const float probe[] = {0.0f, 0.999999f, 1.0f, 3.899999f, 3.9f, 50.0f, 1e30f};
        for (size_t j = 0; j < sizeof probe / sizeof *probe; j++) {
            float x = probe[j];
            assert_true(fabs((double)f->erf(x) - erf((double)x)) <= 2e-7);
            assert_true(f->erf(-x) == -f->erf(x));
            assert_true(fabs((double)f->tanh(x) - tanh((double)x)) <= 2.5e-7);
            assert_true(fabs((double)f->tanh(-x) + tanh((double)x)) <= 2.5e-7);
        }
    }
}

/* ---- the _v set: the default's bits, in a form that vectorises on AVX2 too --------------------------- */

/* Every element loop that moved to the _v set (GELU, the softmax's and the loss gradient's exp, the gate's
 * sigmoid) keeps the default's bits only if _v gives them for every input: over a sweep of both clamps and
 * erf's range joins, and NaN, infinities and signed zeros. Here the _v values come from an `omp simd` loop
 * (vector code where the CPU has it) and the default's one call at a time through a pointer (scalar). A
 * NaN stays a NaN in all three sets' exp and tanh (a blend must not turn a diverged loss into a number; erf's
 * NaN is +-1 in every set, and GELU's x times it a NaN); its sign bit may differ, as between any two orders of
 * the same operations. */
static bool same_bits(float a, float b) { return (isnan(a) && isnan(b)) || !memcmp(&a, &b, sizeof a); }

static void test_fast_v_bits(void **state) {
    (void)state;
    enum { N = 1 << 21 };
    float *x = falloc(N + 8), *e = falloc(N + 8), *r = falloc(N + 8), *t = falloc(N + 8);
    for (int64_t i = 0; i < N; i++) x[i] = -200.0f + 400.0f * (float)i / (float)N;
    const float special[8] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, -87.3f, 88.3f};
    memcpy(x + N, special, sizeof special);
#pragma omp simd
    for (int64_t i = 0; i < N + 8; i++) {
        e[i] = gf_exp_fast_v(x[i]);
        r[i] = gf_erf_fast_v(x[i]);
        t[i] = gf_tanh_fast_v(x[i]);
    }
    for (int64_t i = 0; i < N + 8; i++) {
        const float we = FAST_SETS[0].exp(x[i]), wr = FAST_SETS[0].erf(x[i]), wt = FAST_SETS[0].tanh(x[i]);
        if (!same_bits(we, e[i]) || !same_bits(wr, r[i]) || !same_bits(wt, t[i]))
            fail_msg("the _v set differs from the default at x = %.9g: exp %.9g / %.9g, erf %.9g / %.9g, tanh %.9g / "
                     "%.9g", x[i], e[i], we, r[i], wr, t[i], wt);
    }
    for (int k = 0; k < 2; k++) assert_true(isnan(FAST_SETS[k].exp(NAN)) && isnan(FAST_SETS[k].tanh(NAN)));
    assert_true(isnan(e[N]) && isnan(t[N]));
}

/* ---- gf_tanh_rel (the GRU's and additive attention's tanh) held to libm in double, relatively ---------- */

static float tanh_rel_d(float x) { return gf_tanh_rel(x); }
static float tanh_rel_f(float x) { return gf_tanh_rel_fma(x); }

/* the worst relative error of f against tanh over x = sign * (lo..hi, n steps; geometric if geo) */
static double tanh_rel_worst(float (*f)(float), double lo, double hi, int64_t n, bool geo, float *at) {
    double worst = 0.0;
    for (int64_t i = 0; i <= n; i++)
        for (int sg = -1; sg <= 1; sg += 2) {
            const double u = (double)i / (double)n;
            const float x = (float)(sg * (geo ? lo * pow(hi / lo, u) : lo + (hi - lo) * u));
            const double want = tanh((double)x), got = f(x), rel = want == 0.0 ? fabs(got) : fabs(got - want) / fabs(want);
            if (!isnan(worst) && !(rel <= worst)) worst = rel, *at = x; /* a NaN stays the worst */
        }
    return worst;
}

static void test_tanh_rel(void **state) {
    (void)state;
    float (*const sets[2])(float) = {tanh_rel_d, tanh_rel_f};
    for (int k = 0; k < 2; k++) {
        float at = 0.0f;
        double w = tanh_rel_worst(sets[k], 0.0, 20.0, 2000000, false, &at);
        if (!(w <= 5e-7)) fail_msg("gf_tanh_rel%s: relative error %.3g at x = %.9g (want <= 5e-7, about 4 ulp)",
                                   k ? "_fma" : "", w, at);
        w = tanh_rel_worst(sets[k], 1e-30, 1.0, 200000, true, &at); /* near 0, where 1 - 2/(1 + e^2x) fails */
        if (!(w <= 5e-7)) fail_msg("gf_tanh_rel%s near 0: relative error %.3g at x = %.9g", k ? "_fma" : "", w, at);
        assert_true(sets[k](INFINITY) == 1.0f && sets[k](-INFINITY) == -1.0f && sets[k](1e30f) == 1.0f);
        assert_true(sets[k](0.0f) == 0.0f && !signbit(sets[k](0.0f)) && isnan(sets[k](NAN)));
        assert_true(sets[k](-0.0f) == 0.0f && signbit(sets[k](-0.0f))); /* tanh(-0) = -0 */
    }
    /* the _v set: the default's bits, vector or scalar */
    enum { N = 1 << 20 };
    float *x = falloc(N + 5), *t = falloc(N + 5);
    for (int64_t i = 0; i < N; i++) x[i] = -50.0f + 100.0f * (float)i / (float)N;
    const float special[5] = {NAN, INFINITY, -INFINITY, -0.3f, -0.0f};
    memcpy(x + N, special, sizeof special);
#pragma omp simd
    for (int64_t i = 0; i < N + 5; i++) t[i] = gf_tanh_rel_v(x[i]);
    for (int64_t i = 0; i < N + 5; i++)
        if (!same_bits(t[i], tanh_rel_d(x[i]))) fail_msg("gf_tanh_rel_v differs from gf_tanh_rel at x = %.9g", x[i]);
}

/* ---- --precision fp32-fast: the ops' fused forms against the default ------------------------------ */

/* The fast numerics' cross-entropy (fp32-fast and bf16): one pass over each row, block by block, against
 * the default's two passes and a double reference. Rows: random; rising (a new maximum in every block, so
 * the sum is rescaled each time); falling; one huge logit in the last block; logits far below the maximum
 * (exp underflows); -inf over the first block (a masked vocabulary), finite after it; V under, at and over
 * a block (256), and a word vocabulary. The bound: both forms' exps are within 2 ulp of expf; a block of
 * the fast form sums 16 lanes of 16 terms in float, off by at most 30 roundings of 2^-24 of itself, so lse
 * = max + log(sum) is off by that much, plus its own rounding. The gradient: each element scale * exp(z -
 * lse) moves by that relative amount, and the target's by an ulp of scale more. gf_log_softmax_nll (the
 * streamed evaluation) gives the batched loss's bits. */
static void test_xent_fast(void **state) {
    (void)state;
    const int64_t Vs[] = {1, 255, 256, 257, 1000, 33278};
    for (size_t iv = 0; iv < sizeof Vs / sizeof *Vs; iv++) {
        const int64_t V = Vs[iv], N = 7;
        float *z = frand(N * V, 190 + iv, -6, 6);
        for (int64_t v = 0; v < V; v++) {
            z[1 * V + v] = -30.0f + 60.0f * (float)v / (float)V; /* rising */
            z[2 * V + v] = 30.0f - 60.0f * (float)v / (float)V;  /* falling */
            z[4 * V + v] = v % 3 ? -200.0f : 0.5f;               /* most exps underflow */
            if (v < 256 && v < V - 1) z[6 * V + v] = -INFINITY;  /* masked, then finite */
        }
        z[3 * V + V - 1] = 80.0f; /* one huge logit, last */
        int32_t tg[7] = {0, (int32_t)(V - 1), (int32_t)(V / 2), -1, (int32_t)(V / 3), (int32_t)(V - 1), (int32_t)(V - 1)};
        float *l0 = falloc(N), *lse0 = falloc(N), *l1 = falloc(N), *lse1 = falloc(N);
        const int64_t c0 = gf_xent_forward(l0, lse0, z, tg, N, V, 0.0f);
        float *g0 = fdup(z, N * V), *g1 = fdup(z, N * V);
        gf_xent_backward(g0, lse0, tg, N, V, 0.25f, 0.0f);
        assert_int_equal(gf_set_matmul_precision(GF_PRECISION_FP32_FAST), 0);
        const int64_t c1 = gf_xent_forward(l1, lse1, z, tg, N, V, 0.0f);
        gf_xent_backward(g1, lse1, tg, N, V, 0.25f, 0.0f);
        for (int64_t n = 0; n < N; n++)
            if (tg[n] >= 0 && gf_log_softmax_nll(z + n * V, V, tg[n]) != l1[n])
                fail_msg("xent fp32-fast, V %lld row %lld: the streamed loss is not the batched loss's bits", (long long)V, (long long)n);
        assert_int_equal(gf_set_matmul_precision(GF_PRECISION_FP32), 0);
        assert_int_equal(c0, c1);
        if (V == 33278 && !memcmp(g0, g1, (size_t)(N * V) * sizeof *g0))
            fail_msg("xent fp32-fast: the gradient has the default's bits over 7 rows of 33278 (the fast form did not run)");
        const double rel = (30 + 4 + 4) * 0x1p-24;
        for (int64_t n = 0; n < N; n++) {
            double mx = -INFINITY, s = 0.0;
            for (int64_t v = 0; v < V; v++) mx = fmax(mx, z[n * V + v]);
            for (int64_t v = 0; v < V; v++) s += exp((double)z[n * V + v] - mx);
            const double want = mx + log(s), tol = rel + 2 * 0x1p-24 * fabs(want);
            if (!(fabs(lse1[n] - want) <= tol) || !(fabs((double)lse1[n] - lse0[n]) <= tol))
                fail_msg("xent fp32-fast, V %lld row %lld: lse %.9g, default %.9g, double %.9g", (long long)V, (long long)n,
                         lse1[n], lse0[n], want);
            for (int64_t v = 0; v < V; v++) {
                const double a = g1[n * V + v], b = g0[n * V + v];
                const double p = 0.25 * exp((double)z[n * V + v] - want);
                const double ulp_scale = v == tg[n] ? 0.25 * 0x1p-24 : 0.0;
                if (!(fabs(a - b) <= 2 * (tol + 4 * 0x1p-24) * p + ulp_scale + 1e-37))
                    fail_msg("xent fp32-fast, V %lld row %lld col %lld: gradient %.9g, default %.9g", (long long)V,
                             (long long)n, (long long)v, a, b);
            }
        }
    }
}

/* GELU (both kinds, kept or not) and the softmax rows (forward and from a saved log-sum-exp, with masked
 * keys and a row of masked keys only) under fp32-fast: within a few ulp-sized errors of the default, which
 * test_gelu_* and the parity tests hold to double; the kept GELU pair still the bits of the plain one. */
static void test_fp32_fast_ops(void **state) {
    (void)state;
    const int64_t n = 3 * 32768 / 2 + 5;
    float *inp = frand(n, 170, -7, 7), *dout = frand(n, 171, -1, 1);
    for (int kind = 0; kind < 2; kind++) {
        float *out = falloc(n), *outf = falloc(n), *keep = falloc(n), *outk = falloc(n);
        float *d = falloc(n), *df = falloc(n), *dk = falloc(n);
        ffill(d, n, 0.0f), ffill(df, n, 0.0f), ffill(dk, n, 0.0f);
        gf_gelu_forward(out, inp, n, (gf_gelu_kind)kind);
        gf_gelu_backward(d, inp, dout, n, (gf_gelu_kind)kind);
        assert_int_equal(gf_set_matmul_precision(GF_PRECISION_FP32_FAST), 0);
        gf_gelu_forward(outf, inp, n, (gf_gelu_kind)kind);
        gf_gelu_backward(df, inp, dout, n, (gf_gelu_kind)kind);
        gf_gelu_forward_keep(outk, keep, inp, n, (gf_gelu_kind)kind);
        gf_gelu_backward_kept(dk, inp, keep, dout, n, (gf_gelu_kind)kind);
        assert_int_equal(gf_set_matmul_precision(GF_PRECISION_FP32), 0);
        double wo = 0, wd = 0;
        for (int64_t i = 0; i < n; i++) {
            wo = tl_max_nan(wo, fabs((double)outf[i] - out[i]) / fmax(1.0, fabs((double)inp[i])));
            wd = tl_max_nan(wd, fabs((double)df[i] - d[i]));
        }
        if (!(wo <= 1e-6) || !(wd <= 1e-6)) fail_msg("gelu (kind %d) fp32-fast: %.3g / %.3g from the default", kind, wo, wd);
        if (memcmp(outf, outk, (size_t)n * sizeof(float)) || memcmp(df, dk, (size_t)n * sizeof(float)))
            fail_msg("gelu (kind %d) fp32-fast: the kept pair is not the bits of the plain pair", kind);
    }
    const int64_t S = 77;
    uint8_t km[77];
    for (int64_t j = 0; j < S; j++) km[j] = j % 5 != 3;
    for (int masked = 0; masked < 3; masked++) {
        float *row = frand(S, 180 + masked, -20, 20), *r0 = fdup(row, S), *r1 = fdup(row, S), *r2 = fdup(row, S);
        uint8_t none[77] = {0};
        const uint8_t *m = masked == 0 ? NULL : masked == 1 ? km : none;
        float l0, l1, lb;
        gf_softmax_row(r0, S, m, NULL, &l0);
        assert_int_equal(gf_set_matmul_precision(GF_PRECISION_FP32_FAST), 0);
        gf_softmax_row(r1, S, m, NULL, &l1);
        gf_softmax_row(r2, S, m, &l1, &lb); /* the backward's recomputation from the saved lse */
        assert_int_equal(gf_set_matmul_precision(GF_PRECISION_FP32), 0);
        if (masked == 2) {
            assert_true(l0 == INFINITY && l1 == INFINITY);
            for (int64_t j = 0; j < S; j++) assert_true(r1[j] == 0.0f && r2[j] == 0.0f);
            continue;
        }
        if (!(fabs((double)l1 - l0) <= 1e-6 * fmax(1.0, fabs((double)l0)))) fail_msg("softmax fp32-fast: lse %.9g, default %.9g", l1, l0);
        for (int64_t j = 0; j < S; j++) {
            if (!(fabs((double)r1[j] - r0[j]) <= 1e-6) || !(fabs((double)r2[j] - r0[j]) <= 1e-6)) /* a NaN fails */
                fail_msg("softmax fp32-fast at %lld: %.9g / %.9g, default %.9g", (long long)j, r1[j], r2[j], r0[j]);
            if (m && !m[j]) assert_true(r1[j] == 0.0f && r2[j] == 0.0f);
        }
    }
}

/* ---- one attention head: fp32-fast's register tiles against the default path's BLAS calls ----------- */

typedef struct {
    int64_t T, S, dh, pad; /* pad: extra floats in each row stride (q, k, v and o read in place, as in qkv) */
    bool causal;
    int mask;              /* 0 none, 1 every 5th key padded (key 0 too: query 0 of a causal head sees none),
                            * 2 every key padded (a cross-attention row with no memory) */
} head_case;

static double head_gap(const float *x, const float *ref, int64_t rows, int64_t ld, int64_t dh) {
    double w = 0, m = 1;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t e = 0; e < dh; e++) /* an infinite lse (a query that sees no key) must not scale the rest to 0 */
            if (isfinite(ref[i * ld + e])) m = fmax(m, fabs((double)ref[i * ld + e]));
    for (int64_t i = 0; i < rows; i++)
        for (int64_t e = 0; e < dh; e++) {
            const double a = x[i * ld + e], b = ref[i * ld + e];
            w = isfinite(a) == isfinite(b) && (isfinite(a) || a == b) ? fmax(w, isfinite(a) ? fabs(a - b) : 0) : INFINITY;
        }
    return w / m;
}

/* forward and backward (onto random gradients, which both must add to) of one case, both paths; the
 * largest gap relative to each tensor's largest value; *differ set when some output's bits differ (the
 * tiles ran: they sum in another order) */
static double head_case_gap(const head_case *c, uint64_t seed, bool *differ) {
    const int64_t ld = c->dh + c->pad, ldo = c->dh + 2 * c->pad;
    uint8_t *km = NULL;
    if (c->mask) {
        km = (uint8_t *)talloc(c->S);
        for (int64_t j = 0; j < c->S; j++) km[j] = c->mask == 1 && j % 5 != 0;
    }
    float *q = frand(c->T * ld, seed, -2, 2), *k = frand(c->S * ld, seed + 1, -2, 2), *v = frand(c->S * ld, seed + 2, -1, 1);
    float *dout = frand(c->T * ldo, seed + 3, -1, 1);
    float *o[2], *lse[2], *dq[2], *dk[2], *dv[2];
    for (int p = 0; p < 2; p++) {
        o[p] = frand(c->T * ldo, seed + 4, -1, 1), lse[p] = falloc(c->T);
        dq[p] = frand(c->T * ld, seed + 5, -1, 1), dk[p] = frand(c->S * ld, seed + 6, -1, 1), dv[p] = frand(c->S * ld, seed + 7, -1, 1);
        float *scratch = falloc(gf_attn_head_scratch_floats(c->S, c->dh));
        ffill(scratch, gf_attn_head_scratch_floats(c->S, c->dh), NAN); /* nothing may read what it did not write */
        const gf_attn_head a = {.q = q, .k = k, .v = v, .ldq = ld, .ldk = ld, .ldv = ld, .ldo = ldo, .T = c->T,
                                .S = c->S, .dh = c->dh, .causal = c->causal, .km = km, .scratch = scratch};
        if (p == 0) {
            gf_attn_head_forward_exact(&a, o[p], lse[p]);
            gf_attn_head_backward_exact(&a, dq[p], dk[p], dv[p], dout, lse[p]);
        } else {
            assert_int_equal(gf_set_matmul_precision(GF_PRECISION_FP32_FAST), 0);
            gf_attn_head_forward(&a, o[p], lse[p]);
            gf_attn_head_backward(&a, dq[p], dk[p], dv[p], dout, lse[p]);
            assert_int_equal(gf_set_matmul_precision(GF_PRECISION_FP32), 0);
        }
    }
    *differ = *differ || memcmp(o[1], o[0], (size_t)(c->T * ldo) * sizeof(float)) ||
              memcmp(dq[1], dq[0], (size_t)(c->T * ld) * sizeof(float)) ||
              memcmp(dk[1], dk[0], (size_t)(c->S * ld) * sizeof(float)) ||
              memcmp(dv[1], dv[0], (size_t)(c->S * ld) * sizeof(float));
    double w = head_gap(o[1], o[0], c->T, ldo, c->dh);
    w = fmax(w, head_gap(lse[1], lse[0], c->T, 1, 1));
    w = fmax(w, head_gap(dq[1], dq[0], c->T, ld, c->dh));
    w = fmax(w, head_gap(dk[1], dk[0], c->S, ld, c->dh));
    return fmax(w, head_gap(dv[1], dv[0], c->S, ld, c->dh));
}

/* the tiles' form this build compiles (attn_fast.c): AVX-512, else AVX2 with FMA, else none */
static const char *attn_tiles_built(void) {
#if defined(__AVX512F__)
    return "avx512";
#elif defined(__AVX2__) && defined(__FMA__)
    return "avx2";
#else
    return NULL;
#endif
}

static void head_case_check(const head_case *c, uint64_t seed, const char *what, double *worst, bool *differ) {
    const double w = head_case_gap(c, seed, differ);
    if (!(w <= 2e-6))
        fail_msg("attention head, %s (T %lld S %lld dh %lld, causal %d, mask %d): fp32-fast %.3g from the default",
                 what, (long long)c->T, (long long)c->S, (long long)c->dh, c->causal, c->mask, w);
    *worst = fmax(*worst, w);
}

static void test_attn_head_fast(void **state) {
    (void)state;
    static const head_case cases[] = {
        {256, 256, 32, 64, true, 0},  /* the character-level Transformer's heads, in a fused qkv */
        {77, 77, 8, 3, true, 1},      /* transformer-tiny's head width; an all-padded first query */
        {50, 37, 24, 0, false, 1},    /* cross-attention: other keys, padding */
        {130, 130, 48, 5, false, 0},  /* bidirectional; a head of 32 + 16 columns; a partial block */
        {9, 9, 64, 0, true, 1},       /* fewer queries than a tile */
        {70, 70, 5, 1, true, 0},      /* a head narrower than a chunk; a block of 6 after 64 */
        {3, 200, 33, 2, false, 0},    /* three queries over many keys; 32 + 1 columns */
        {20, 16, 24, 0, false, 2},    /* no key at all: outputs and gradients 0, lse +inf */
    };
    const char *built = attn_tiles_built(), *kernel = gf_attn_head_fast_kernel();
    if (!built != !kernel || (built && strcmp(built, kernel)))
        fail_msg("attention tiles: the library has %s, a build for this CPU level has %s", kernel ? kernel : "none",
                 built ? built : "none");
    assert_true(gf_attn_head_fast_available() == (kernel != NULL));
    if (!gf_attn_head_fast_available()) { /* fp32-fast would run the default path: the default against itself */
        print_message("attention head: this build has no register tiles; fp32-fast runs the default path\n");
        skip();
    }
    double worst = 0;
    bool differ = false;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) head_case_check(&cases[i], 300 + 10 * i, "case", &worst, &differ);
    /* the tiles' and blocks' edges: key counts about the 16-key chunks and the 64-query blocks, tiles of 8
     * (AVX-512) or 6 (AVX2) queries, partial or not; head widths in whole 8- and 16-column registers or not
     * (12, 44: the AVX2 form's masked second register); causal or not, keys padded or not; the unpadded
     * non-causal heads with 2 S + 3 queries (several blocks over fewer keys) */
    static const int64_t Ss[] = {1, 7, 9, 17, 100, 130}, dhs[] = {8, 12, 16, 24, 32, 44, 64};
    uint64_t seed = 500;
    for (size_t si = 0; si < sizeof Ss / sizeof Ss[0]; si++)
        for (size_t di = 0; di < sizeof dhs / sizeof dhs[0]; di++)
            for (int k = 0; k < 4; k++) {
                const int64_t S = Ss[si], dh = dhs[di];
                const bool causal = k & 1;
                const int mask = k >> 1;
                const head_case c = {causal || mask ? S : 2 * S + 3, S, dh, (S + dh) % 3, causal, mask};
                head_case_check(&c, seed, "sweep", &worst, &differ);
                seed += 10;
            }
    if (!differ) fail_msg("attention head: fp32-fast gave the default path's bits everywhere: the %s tiles did not run", kernel);
    print_message("attention head (%s tiles): at most %.3g from the default path\n", kernel, worst);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_embed_forward_learned, pool_teardown),
        cmocka_unit_test_teardown(test_sinusoidal_table, pool_teardown),
        cmocka_unit_test_teardown(test_embed_backward, pool_teardown),
        cmocka_unit_test_teardown(test_linear_forward, pool_teardown),
        cmocka_unit_test_teardown(test_linear_backward, pool_teardown),
        cmocka_unit_test_teardown(test_layernorm_forward, pool_teardown),
        cmocka_unit_test_teardown(test_layernorm_backward, pool_teardown),
        cmocka_unit_test_teardown(test_gelu_forward, pool_teardown),
        cmocka_unit_test_teardown(test_gelu_backward, pool_teardown),
        cmocka_unit_test_teardown(test_gelu_kept_bits, pool_teardown),
        cmocka_unit_test_teardown(test_dropout_p0_identity, pool_teardown),
        cmocka_unit_test_teardown(test_dropout_mask, pool_teardown),
        cmocka_unit_test_teardown(test_xent, pool_teardown),
        cmocka_unit_test_teardown(test_xent_smoothed, pool_teardown),
        cmocka_unit_test_teardown(test_sum_exp_order, pool_teardown),
        cmocka_unit_test_teardown(test_xent_fast, pool_teardown),
        cmocka_unit_test_teardown(test_elementwise, pool_teardown),
        cmocka_unit_test_teardown(test_gemv, pool_teardown),
        cmocka_unit_test_teardown(test_column_sums_bits, pool_teardown),
        cmocka_unit_test_teardown(test_layernorm_rows_bits, pool_teardown),
        cmocka_unit_test_teardown(test_layernorm_fast, pool_teardown),
        cmocka_unit_test(test_exp_fast),
        cmocka_unit_test(test_erf_tanh_fast),
        cmocka_unit_test_teardown(test_tanh_rel, pool_teardown),
        cmocka_unit_test_teardown(test_fast_v_bits, pool_teardown),
        cmocka_unit_test_teardown(test_fp32_fast_ops, pool_teardown),
        cmocka_unit_test_teardown(test_attn_head_fast, pool_teardown),
    };
    int rc = cmocka_run_group_tests_name("ops", tests, NULL, NULL);
    pool_release();
    return rc;
}
