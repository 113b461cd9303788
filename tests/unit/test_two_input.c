/* A block with two inputs: its own sequence (N = B*T rows, slot 0) and a memory (B rows of S positions,
 * d_mem wide, padded by its own mask), read by a cross op (BOP_CROSS, model/block.h). The test builds a
 * block kind of its own, run by the library's interpreters,
 *
 *     pre-cross    x = h + Drop(cross(ln1(h), memory));    out = x + Drop(FFN(ln2(x)))
 *
 * with its parameters declared from its tensor list as model/params.c declares a layer's, and holds
 * - the forward output to a naive double reference written here (plain loops: LayerNorm, multi-head
 *   attention from the block's positions to the memory's real ones, the FFN),
 * - the input gradient, the memory gradient and every parameter gradient to central finite differences of
 *   that reference (gradient buffers pre-filled with random values: the backward accumulates),
 * - the whole backward to finite differences of the library's own forward along a random direction,
 * - padded memory positions to changing nothing: other values there leave the output and every gradient
 *   bit for bit as they were, and their memory gradient rows receive nothing.
 * Saved, scratch and gradient buffers start as NaN, so a read of what was never written shows up. */
#include "testlib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compute/parallel.h"
#include "model/block.h"
#include "ref_ops.h"

#define FD_H 1e-6

/* ---- the block kind ---------------------------------------------------------------------------- */

static const block_tensor LN_CROSS_LN_FFN[] = {
    BLOCK_TENSORS_LN("ln1", 0), BLOCK_TENSORS_CROSS, BLOCK_TENSORS_LN("ln2", 1), BLOCK_TENSORS_FFN,
};
enum { NT = (int)(sizeof LN_CROSS_LN_FFN / sizeof LN_CROSS_LN_FFN[0]) };
/* the tensors in list order, as the reference reads them */
enum { LN1_W, LN1_B, CQ_W, CQ_B, CK_W, CK_B, CV_W, CV_B, CO_W, CO_B, LN2_W, LN2_B, FC1_W, FC1_B, FC2_W, FC2_B };

/* slots: 0 h | 1 ln1 | 2 cross (dropped in place) | 3 x | 4 ln2 | 5 ffn (dropped in place) | 6 out */
static const block_kind PRE_CROSS = {"pre-cross", 7, 8, {
    {BOP_LN, 0, 0, 1, 0}, {BOP_CROSS, 1, 0, 2, 0}, {BOP_DROP, 2, 0, 2, 0}, {BOP_ADD, 0, 2, 3, 0},
    {BOP_LN, 3, 0, 4, 1}, {BOP_FFN, 4, 0, 5, 0}, {BOP_DROP, 5, 0, 5, 1}, {BOP_ADD, 3, 5, 6, 0},
}, NT, LN_CROSS_LN_FFN};

/* ---- cases ------------------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    int64_t B, T, S, d, dm, F, H;
    const char *mask; /* B*S characters, '1' real and '0' padding; NULL: no mask */
    uint64_t seed;
} xcase;

typedef struct {
    const xcase *c;
    const gf_config *cfg;
    double *h, *mem;      /* (N, d), (B*S, dm) */
    double *P[NT];
    const uint8_t *mask;
} ref_ctx;

/* ---- the reference ----------------------------------------------------------------------------- */

/* o (N, d): each row's queries q (N, d) over its memory positions' k, v (B*S, d), real ones only, H heads */
static void ref_attend(double *o, const double *q, const double *k, const double *v, const xcase *c,
                       const uint8_t *mask) {
    const int64_t d = c->d, dh = d / c->H;
    double *s = malloc((size_t)c->S * sizeof *s);
    for (int64_t b = 0; b < c->B; b++)
        for (int64_t h = 0; h < c->H; h++)
            for (int64_t t = 0; t < c->T; t++) {
                const double *qr = q + (b * c->T + t) * d + h * dh;
                double mx = -INFINITY, z = 0.0;
                for (int64_t j = 0; j < c->S; j++) {
                    double acc = 0.0;
                    for (int64_t e = 0; e < dh; e++) acc += qr[e] * k[(b * c->S + j) * d + h * dh + e];
                    s[j] = mask && !mask[b * c->S + j] ? -INFINITY : acc / sqrt((double)dh);
                    mx = s[j] > mx ? s[j] : mx;
                }
                for (int64_t j = 0; j < c->S && mx > -INFINITY; j++) z += exp(s[j] - mx);
                for (int64_t e = 0; e < dh; e++) { /* no real memory position: 0 */
                    double acc = 0.0;
                    for (int64_t j = 0; j < c->S && mx > -INFINITY; j++)
                        acc += exp(s[j] - mx) / z * v[(b * c->S + j) * d + h * dh + e];
                    o[(b * c->T + t) * d + h * dh + e] = acc;
                }
            }
    free(s);
}

/* out (N, d) = cross(a, mem): q/k/v projections, attention, out projection */
static void ref_cross(double *out, const double *a, const ref_ctx *r) {
    const xcase *c = r->c;
    const int64_t N = c->B * c->T, M = c->B * c->S, d = c->d, dm = c->dm;
    double *q = malloc((size_t)(N * d) * sizeof *q), *k = malloc((size_t)(M * d) * sizeof *k);
    double *v = malloc((size_t)(M * d) * sizeof *v), *o = malloc((size_t)(N * d) * sizeof *o);
    ref_linear(q, a, d, r->P[CQ_W], d, r->P[CQ_B], N, d, d, 0.0);
    ref_linear(k, r->mem, dm, r->P[CK_W], dm, r->P[CK_B], M, dm, d, 0.0);
    ref_linear(v, r->mem, dm, r->P[CV_W], dm, r->P[CV_B], M, dm, d, 0.0);
    ref_attend(o, q, k, v, c, r->mask);
    ref_linear(out, o, d, r->P[CO_W], d, r->P[CO_B], N, d, d, 0.0);
    free(q);
    free(k);
    free(v);
    free(o);
}

/* The block: out (N, d) = x + FFN(ln2(x)), x = h + cross(ln1(h), memory) */
static void ref_block(const void *ctx, double *out) {
    const ref_ctx *r = ctx;
    const xcase *c = r->c;
    const int64_t N = c->B * c->T, d = c->d, F = c->F;
    double *a = malloc((size_t)(N * d) * sizeof *a), *x = malloc((size_t)(N * d) * sizeof *x);
    double *f = malloc((size_t)(N * F) * sizeof *f);
    ref_layernorm(a, NULL, NULL, r->h, r->P[LN1_W], r->P[LN1_B], N, d, r->cfg->ln_eps);
    ref_cross(x, a, r);
    for (int64_t i = 0; i < N * d; i++) x[i] += r->h[i];
    ref_layernorm(a, NULL, NULL, x, r->P[LN2_W], r->P[LN2_B], N, d, r->cfg->ln_eps);
    ref_linear(f, a, d, r->P[FC1_W], d, r->P[FC1_B], N, d, F, 0.0);
    ref_gelu(f, f, N * F, r->cfg->gelu);
    ref_linear(out, f, F, r->P[FC2_W], F, r->P[FC2_B], N, F, d, 0.0);
    for (int64_t i = 0; i < N * d; i++) out[i] += x[i];
    free(a);
    free(x);
    free(f);
}

/* ---- the block under test ---------------------------------------------------------------------- */

/* A layer's parameters and gradients, declared from the kind's tensor list as model/params.c declares
 * them (block_dim_size, block_tensor_view): values, gradients pre-filled at random, and those pre-fills. */
typedef struct {
    int64_t numel[NT];
    float *p[NT], *g[NT], *pre[NT];
    gf_layer_params lp, lg;
} layer;

static void make_layer(layer *L, const xcase *c) {
    memset(L, 0, sizeof *L);
    for (int i = 0; i < NT; i++) {
        const block_tensor *t = &PRE_CROSS.tensors[i];
        const int64_t rows = block_dim_size(t->shape[0], c->d, c->F, c->dm);
        L->numel[i] = rows * (t->ndim == 2 ? block_dim_size(t->shape[1], c->d, c->F, c->dm) : 1);
        L->p[i] = falloc(L->numel[i]);
        L->pre[i] = falloc(L->numel[i]);
        const bool gain = t->init == GF_INIT_ONE, weight = t->ndim == 2;
        tl_fill_uniform(L->p[i], L->numel[i], c->seed + 100 + (uint64_t)i, gain ? 0.7f : weight ? -0.5f : -0.3f,
                        gain ? 1.3f : weight ? 0.5f : 0.3f);
        tl_fill_uniform(L->pre[i], L->numel[i], c->seed + 200 + (uint64_t)i, -1.0f, 1.0f);
        L->g[i] = fdup(L->pre[i], L->numel[i]);
        *block_tensor_view(&L->lp, t) = L->p[i];
        *block_tensor_view(&L->lg, t) = L->g[i];
    }
}

/* Buffers of one run (all NaN until written) and the run itself. */
typedef struct {
    block_run r;
    block_memory mem;
    float *G[BLOCK_MAX_SLOTS], *dff;
} run;

static void make_run(run *R, const xcase *c, const gf_config *cfg, layer *L, const float *h,
                     const float *mem, const uint8_t *mask, float *dmem, int n_threads) {
    const int64_t N = c->B * c->T, d = c->d;
    memset(R, 0, sizeof *R);
    R->mem = (block_memory){.x = mem, .mask = mask, .dx = dmem, .B = c->B, .S = c->S, .d = c->dm};
    block_run *r = &R->r;
    *r = (block_run){.kind = &PRE_CROSS, .cfg = cfg, .N = N, .d = d, .F = c->F, .p = &L->lp, .g = &L->lg,
                     .h1 = falloc(N * c->F), .act = falloc(N * c->F), .mem = &R->mem, .cross_heads = c->H,
                     .n_threads = n_threads};
    const int64_t ns = gf_block_cross_saved_floats(N, d, &R->mem, c->H), nx = gf_block_cross_scratch_floats(N, d, &R->mem, c->H, n_threads);
    r->cross_saved = falloc(ns);
    r->cross_scratch = falloc(nx);
    ffill(r->cross_saved, ns, NAN);
    ffill(r->cross_scratch, nx, NAN);
    r->slot[0] = (float *)h;
    for (int s = 1; s < PRE_CROSS.n_slots; s++) {
        r->slot[s] = falloc(N * d);
        ffill(r->slot[s], N * d, NAN);
    }
    for (int k = 0; k < 2; k++) {
        r->mean[k] = falloc(N);
        r->rstd[k] = falloc(N);
    }
    for (int s = 0; s < PRE_CROSS.n_slots; s++) {
        R->G[s] = falloc(N * d);
        ffill(R->G[s], N * d, NAN);
    }
    R->dff = falloc(N * c->F);
    ffill(R->dff, N * c->F, NAN);
}

/* Forward, then backward from dout: the output in r.slot[last], d(h) in G[0]. */
static void run_block(run *R, const float *dout) {
    const int last = PRE_CROSS.n_slots - 1;
    gf_block_forward(&R->r);
    ffill(R->r.cross_scratch, gf_block_cross_scratch_floats(R->r.N, R->r.d, &R->mem, R->r.cross_heads, R->r.n_threads), NAN);
    memcpy(R->G[last], dout, (size_t)(R->r.N * R->r.d) * sizeof *dout);
    gf_block_backward(&R->r, R->G, R->dff);
}

/* ---- the checks -------------------------------------------------------------------------------- */

/* A case's inputs (float, and the reference's double copies), and what the reference says. */
typedef struct {
    const xcase *c;
    gf_config cfg;
    int64_t N, M;
    float *h, *mem, *dout, *dmem_pre;
    uint8_t *mask;
    ref_ctx ref;
    double *want, *fd_h, *fd_mem, *fd_p[NT];
} fixture;

static void make_fixture(fixture *f, const xcase *c) {
    memset(f, 0, sizeof *f);
    f->c = c;
    assert_int_equal(gf_config_preset("transformer-tiny", &f->cfg), 0);
    f->N = c->B * c->T;
    f->M = c->B * c->S;
    const int64_t nh = f->N * c->d, nm = f->M * c->dm;
    f->h = falloc(nh);
    f->mem = falloc(nm);
    f->dout = falloc(nh);
    f->dmem_pre = falloc(nm);
    tl_fill_uniform(f->h, nh, c->seed + 1, -1.0f, 1.0f);
    tl_fill_uniform(f->mem, nm, c->seed + 2, -1.0f, 1.0f);
    tl_fill_uniform(f->dout, nh, c->seed + 3, -1.0f, 1.0f);
    tl_fill_uniform(f->dmem_pre, nm, c->seed + 4, -1.0f, 1.0f);
    if (c->mask) {
        assert_int_equal((int64_t)strlen(c->mask), f->M);
        f->mask = talloc((size_t)f->M);
        for (int64_t i = 0; i < f->M; i++) f->mask[i] = c->mask[i] == '1';
    }
    layer L;
    make_layer(&L, c);
    f->ref = (ref_ctx){.c = c, .cfg = &f->cfg, .h = ddup_f(f->h, nh), .mem = ddup_f(f->mem, nm), .mask = f->mask};
    for (int i = 0; i < NT; i++) f->ref.P[i] = ddup_f(L.p[i], L.numel[i]);
    f->want = dalloc(nh);
    ref_block(&f->ref, f->want);
    double *w = ddup_f(f->dout, nh);
    f->fd_h = dalloc(nh);
    f->fd_mem = dalloc(nm);
    ref_fd_grad(f->fd_h, f->ref.h, nh, ref_block, &f->ref, w, nh, FD_H);
    ref_fd_grad(f->fd_mem, f->ref.mem, nm, ref_block, &f->ref, w, nh, FD_H);
    for (int i = 0; i < NT; i++) {
        f->fd_p[i] = dalloc(L.numel[i]);
        ref_fd_grad(f->fd_p[i], f->ref.P[i], L.numel[i], ref_block, &f->ref, w, nh, FD_H);
    }
}

/* One run of the block (n_threads for its attention) held to the reference. */
static void check_against_reference(const fixture *f, int n_threads) {
    const xcase *c = f->c;
    const int64_t nh = f->N * c->d, nm = f->M * c->dm;
    layer L;
    make_layer(&L, c);
    float *dmem = fdup(f->dmem_pre, nm);
    run R;
    make_run(&R, c, &f->cfg, &L, f->h, f->mem, f->mask, dmem, n_threads);
    run_block(&R, f->dout);
    const double gscale = ref_max_abs(f->fd_h, nh);
    char what[160];
    snprintf(what, sizeof what, "%s (%d threads): forward out", c->name, n_threads);
    ref_check_rel(what, R.r.slot[PRE_CROSS.n_slots - 1], f->want, nh, 1e-5, 1.0);
    snprintf(what, sizeof what, "%s (%d threads): d(input)", c->name, n_threads);
    ref_check_rel(what, R.G[0], f->fd_h, nh, 2e-5, gscale);
    snprintf(what, sizeof what, "%s (%d threads): d(memory)", c->name, n_threads);
    ref_check_grad(what, dmem, f->dmem_pre, f->fd_mem, nm, 2e-5, gscale);
    for (int i = 0; i < NT; i++) {
        snprintf(what, sizeof what, "%s (%d threads): d(%s)", c->name, n_threads, PRE_CROSS.tensors[i].name);
        ref_check_grad(what, L.g[i], L.pre[i], f->fd_p[i], L.numel[i], 2e-5, gscale);
    }
}

/* Other values at the padded memory positions: the output and every gradient stay bit for bit, and the
 * padded positions' memory gradient rows stay at what they held. */
static void check_padding(const fixture *f) {
    const xcase *c = f->c;
    const int64_t nh = f->N * c->d, nm = f->M * c->dm;
    float *mem2 = fdup(f->mem, nm), *dmem[2] = {fdup(f->dmem_pre, nm), fdup(f->dmem_pre, nm)};
    tl_fill_uniform(mem2, nm, c->seed + 5, -3.0f, 3.0f);
    int64_t n_padded = 0;
    for (int64_t j = 0; j < f->M; j++) {
        if (f->mask[j]) memcpy(mem2 + j * c->dm, f->mem + j * c->dm, (size_t)c->dm * sizeof *mem2);
        else n_padded++;
    }
    assert_true(n_padded > 0);
    layer L[2];
    run R[2];
    for (int k = 0; k < 2; k++) {
        make_layer(&L[k], c);
        make_run(&R[k], c, &f->cfg, &L[k], f->h, k ? mem2 : f->mem, f->mask, dmem[k], gf_max_threads());
        run_block(&R[k], f->dout);
    }
    const int last = PRE_CROSS.n_slots - 1;
    if (memcmp(R[0].r.slot[last], R[1].r.slot[last], (size_t)nh * sizeof(float)))
        fail_msg("%s: the values at padded memory positions changed the output", c->name);
    if (memcmp(R[0].G[0], R[1].G[0], (size_t)nh * sizeof(float)))
        fail_msg("%s: the values at padded memory positions changed d(input)", c->name);
    if (memcmp(dmem[0], dmem[1], (size_t)nm * sizeof(float)))
        fail_msg("%s: the values at padded memory positions changed d(memory)", c->name);
    for (int i = 0; i < NT; i++)
        if (memcmp(L[0].g[i], L[1].g[i], (size_t)L[0].numel[i] * sizeof(float)))
            fail_msg("%s: the values at padded memory positions changed d(%s)", c->name, PRE_CROSS.tensors[i].name);
    for (int64_t j = 0; j < f->M; j++)
        if (!f->mask[j] && memcmp(dmem[1] + j * c->dm, f->dmem_pre + j * c->dm, (size_t)c->dm * sizeof(float)))
            fail_msg("%s: padded memory position %lld received a gradient", c->name, (long long)j);
}

/* sum_i a[i] b[i] in double */
static double dotf(const float *a, const float *b, int64_t n) {
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += (double)a[i] * (double)b[i];
    return s;
}

/* d(loss)/d(everything) along a random direction u, loss = sum dout * out, against the central difference
 * (loss(theta + eps u) - loss(theta - eps u)) / 2 eps of the library's own forward in float. */
static void check_direction(const fixture *f) {
    const xcase *c = f->c;
    const int64_t nh = f->N * c->d, nm = f->M * c->dm, last = PRE_CROSS.n_slots - 1;
    const float eps = 2e-3f;
    float *uh = falloc(nh), *um = falloc(nm), *up[NT], *dmem = fdup(f->dmem_pre, nm);
    tl_fill_uniform(uh, nh, c->seed + 6, -1.0f, 1.0f);
    tl_fill_uniform(um, nm, c->seed + 7, -1.0f, 1.0f);
    layer L;
    make_layer(&L, c);
    run R;
    make_run(&R, c, &f->cfg, &L, f->h, f->mem, f->mask, dmem, gf_max_threads());
    run_block(&R, f->dout);
    double analytic = dotf(R.G[0], uh, nh);
    for (int64_t i = 0; i < nm; i++) analytic += ((double)dmem[i] - f->dmem_pre[i]) * um[i];
    for (int i = 0; i < NT; i++) {
        up[i] = falloc(L.numel[i]);
        tl_fill_uniform(up[i], L.numel[i], c->seed + 300 + (uint64_t)i, -1.0f, 1.0f);
        for (int64_t k = 0; k < L.numel[i]; k++) analytic += ((double)L.g[i][k] - L.pre[i][k]) * up[i][k];
    }
    double loss[2];
    for (int s = 0; s < 2; s++) {
        const float e = s ? -eps : eps;
        float *h = fdup(f->h, nh), *mem = fdup(f->mem, nm);
        for (int64_t i = 0; i < nh; i++) h[i] += e * uh[i];
        for (int64_t i = 0; i < nm; i++) mem[i] += e * um[i];
        make_layer(&L, c);
        for (int i = 0; i < NT; i++)
            for (int64_t k = 0; k < L.numel[i]; k++) L.p[i][k] += e * up[i][k];
        make_run(&R, c, &f->cfg, &L, h, mem, f->mask, NULL, gf_max_threads());
        gf_block_forward(&R.r);
        loss[s] = dotf(R.r.slot[last], f->dout, nh);
    }
    const double fd = (loss[0] - loss[1]) / (2.0 * (double)eps);
    if (!(fabs(fd - analytic) <= 1e-3 * fmax(fabs(analytic), 1.0)))
        fail_msg("%s: along a random direction the backward gives %.9g, finite differences of the forward %.9g",
                 c->name, analytic, fd);
}

/* ---- the tests --------------------------------------------------------------------------------- */

/* The cross op's tensors, as the kind lists them: named under the block, keys and values from d_mem. */
static void test_cross_tensors(void **state) {
    (void)state;
    static const char *const names[NT] = {
        "ln1.weight", "ln1.bias", "cross.q.weight", "cross.q.bias", "cross.k.weight", "cross.k.bias", "cross.v.weight",
        "cross.v.bias", "cross.out.weight", "cross.out.bias", "ln2.weight", "ln2.bias", "ffn.fc1.weight", "ffn.fc1.bias",
        "ffn.fc2.weight", "ffn.fc2.bias"};
    const int64_t d = 8, F = 12, dm = 5;
    for (int i = 0; i < NT; i++) {
        const block_tensor *t = &PRE_CROSS.tensors[i];
        if (strcmp(t->name, names[i]) != 0) fail_msg("tensor %d is \"%s\", expected \"%s\"", i, t->name, names[i]);
        const int64_t cols = t->ndim == 2 ? block_dim_size(t->shape[1], d, F, dm) : 0;
        const bool from_mem = i == CK_W || i == CV_W;
        if (t->ndim == 2 && cols != (from_mem ? dm : i == FC2_W ? F : d))
            fail_msg("tensor %s has %lld columns", t->name, (long long)cols);
        if (t->decay != (t->ndim == 2)) fail_msg("tensor %s: weight decay on a %d-D tensor", t->name, t->ndim);
    }
}

static void run_case(const xcase *c) {
    fixture f;
    make_fixture(&f, c);
    const int nths[2] = {gf_max_threads(), 1};
    for (int k = 0; k < 2 && (k == 0 || nths[1] != nths[0]); k++) check_against_reference(&f, nths[k]);
    if (c->mask) check_padding(&f);
    check_direction(&f);
    /* --precision fp32-fast (its attention tiles, with every thread): the same reference and padding */
    print_message("%s: under fp32-fast\n", c->name);
    assert_int_equal(gf_set_matmul_precision(GF_PRECISION_FP32_FAST), 0);
    check_against_reference(&f, gf_max_threads());
    if (c->mask) check_padding(&f);
    assert_int_equal(gf_set_matmul_precision(GF_PRECISION_FP32), 0);
}

static void test_one_head_padded(void **state) {
    (void)state;
    static const xcase c = {"one head, padded memory", 2, 3, 5, 8, 6, 12, 1, "1011111100", 11};
    run_case(&c);
}

static void test_two_heads(void **state) {
    (void)state;
    static const xcase c = {"two heads, no mask", 2, 4, 3, 8, 5, 10, 2, NULL, 22};
    run_case(&c);
}

static void test_row_without_memory(void **state) {
    (void)state;
    static const xcase c = {"a row with no real memory position", 2, 2, 3, 6, 4, 8, 1, "011000", 33};
    run_case(&c);
}

static void test_two_query_blocks(void **state) {
    (void)state;
    static const xcase c = {"70 queries (two blocks of the attention), two heads", 1, 70, 6, 4, 3, 6, 2, "111011", 44};
    run_case(&c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cross_tensors),
        cmocka_unit_test_teardown(test_one_head_padded, pool_teardown),
        cmocka_unit_test_teardown(test_two_heads, pool_teardown),
        cmocka_unit_test_teardown(test_row_without_memory, pool_teardown),
        cmocka_unit_test_teardown(test_two_query_blocks, pool_teardown),
    };
    int rc = cmocka_run_group_tests_name("two inputs", tests, NULL, NULL);
    pool_release();
    return rc;
}
