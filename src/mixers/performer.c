/* Performer attention (FAVOR+ with positive random features; Choromanski et al., "Rethinking Attention with
 * Performers", ICLR 2021), with the attention mixer's QKV and output projections (docs/model.md).
 *
 * Per head, with x = q / dh^(1/4) (queries) or k / dh^(1/4) (keys) and omega (m, dh) shared by the heads,
 *   phi(x)_i = exp(omega_i . x - |x|^2 / 2) / sqrt(m),   out_t = sum_j phi(q_t).phi(k_j) v_j / sum_j phi(q_t).phi(k_j)
 * over the keys j that t sees (causal: j <= t; bidirectional: all) that are not padding. Computed with
 * per-query and per-feature constants that cancel in the ratio (so no exp overflows):
 *   s_i   = max(0, |omega_i|^2 / 2 - KEY_BOUND)                          (a key feature is <= e^KEY_BOUND)
 *   fk_i  = exp(omega_i . x_k - |x_k|^2 / 2 - s_i)                      (0 for a padded key)
 *   fq_i  = exp(omega_i . x_q + s_i - a_q),  a_q = max_i (omega_i . x_q + s_i)   (the largest is 1)
 *   num_t = sum_j (fq_t . fk_j) v_j,  den_t = sum_j fq_t . fk_j,  o_t = num_t / den_t if den_t > 2^-126, else 0
 * Causal: chunks of C positions; a chunk's output is its queries against the running sums S = sum fk v^T
 * (m, dh) and z = sum fk (m) of the earlier chunks plus the chunk's own lower triangle (C, C), then the sums
 * take the chunk in: linear in T, memory C x m per thread. Bidirectional: the two full sums. The backward
 * recomputes the features: queries forward (S, z as in the forward), keys and values in reverse order with
 * the suffix sums R = sum_t fq_t g_t^T and r = sum_t e_t fq_t (g = dO / den, e = -dO.o / den). Streaming
 * keeps S and z per head: H (m dh + m) floats whatever the position. */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "compute/blas.h"
#include "base/error.h"
#include "compute/fastmath.h"
#include "compute/parallel.h"
#include "base/rng.h"
#include "mixers/attn_common.h"
#include "mixers/mixer.h"
#include "ops/ops.h"

typedef struct performer_config {
    int64_t n_head; /* gf_attn_config's members first */
    int64_t features;
    int64_t redraw;
} performer_config;

#define OFF(f) offsetof(performer_config, f)
static const gf_cfg_key KEYS[] = {
    GF_ATTN_N_HEAD_KEY(performer_config),
    {.name = "features", .type = GF_KEY_INT, .off = OFF(features), .lo = 1, .hi = 65536, .def = "128",
     .help = "m, random features per head (omega is (m, d_model / n_head), shared by the heads); cost and "
             "streaming state grow with m"},
    {.name = "redraw", .type = GF_KEY_INT, .off = OFF(redraw), .lo = 0, .hi = 1e15, .def = "0",
     .help = "redraw omega every this many training steps, from (seed, step); 0: never (drawn once at init)"},
};

enum { P_OMEGA = GF_ATTN_N_PARAMS, N_PARAMS };
enum { C = 64 };                    /* positions per chunk */
#define KEY_BOUND 40.0f             /* a key feature is at most e^40 (sums of 1e6 of them stay finite) */
#define DEN_MIN FLT_MIN             /* 2^-126: a query whose den is not above it (it sees no key) gets 0 */
#define MAX_STATE_FLOATS (1 << 24)  /* a layer's streaming state (and omega) at most 64 MiB */

static const performer_config *PC(const gf_config *cfg, int layer) { return gf_layer_mcfg(cfg, layer); }

static int p_check(const gf_config *cfg, int layer, const char *src) {
    if (gf_attn_check(cfg, layer, src)) return -1;
    const int64_t d = gf_layer_dim(cfg, layer), H = gf_attn_n_head(cfg, layer), m = PC(cfg, layer)->features;
    const int64_t floats = H * m * (d / H + 1);
    if (floats > MAX_STATE_FLOATS)
        return gf_fail("%s: layer %d: performer with features %lld, n_head %lld and d_model %lld keeps n_head x "
                       "features x (d_model / n_head + 1) = %lld floats of running sums per layer; at most %d (64 "
                       "MiB) are allowed\nHINT: lower features (at most %lld here)", src, layer, (long long)m,
                       (long long)H, (long long)d, (long long)floats, MAX_STATE_FLOATS,
                       (long long)(MAX_STATE_FLOATS / (d + H)));
    return 0;
}

static int p_param_specs(const gf_config *cfg, int layer, gf_param_spec *s) {
    const int64_t d = gf_layer_dim(cfg, layer), H = gf_attn_n_head(cfg, layer);
    gf_attn_param_specs(cfg, layer, s);
    gf_param_spec_set(&s[P_OMEGA], "omega", 2, PC(cfg, layer)->features, d / H, GF_INIT_ZERO);
    s[P_OMEGA].buffer = true;
    return N_PARAMS;
}

/* ---- omega: blocks of dh orthogonal Gaussian rows with chi(dh) norms ---------------------------------- */

/* The n (<= dh) rows of one block, in w (n, dh): n standard normal rows made orthonormal by modified
 * Gram-Schmidt (dots in double, two passes), then each scaled by the norm of an independent dh-dim standard normal
 * vector (chi(dh) distributed, as a Gaussian row's norm is). */
static void draw_block(float *w, int64_t n, int64_t dh, uint64_t key, int64_t block) {
    const uint64_t kg = gf_key(key, 2 * (uint64_t)block), kn = gf_key(key, 2 * (uint64_t)block + 1);
    for (int64_t i = 0; i < n * dh; i++) w[i] = gf_normal(kg, (uint64_t)i);
    for (int64_t i = 0; i < n; i++) {
        float *r = w + i * dh;
        double nn = 0.0;
        for (int64_t j = 0; j < 2 * i; j++) { /* twice over the rows before: float keeps them orthogonal */
            const float *p = w + (j % i) * dh;
            double dot = 0.0;
            for (int64_t e = 0; e < dh; e++) dot += (double)r[e] * p[e];
            for (int64_t e = 0; e < dh; e++) r[e] = (float)(r[e] - dot * p[e]);
        }
        for (int64_t e = 0; e < dh; e++) nn += (double)r[e] * r[e];
        nn = nn > 0.0 ? 1.0 / sqrt(nn) : 0.0;
        for (int64_t e = 0; e < dh; e++) r[e] = (float)(r[e] * nn);
    }
    for (int64_t i = 0; i < n; i++) {
        double chi = 0.0;
        for (int64_t e = 0; e < dh; e++) {
            const double z = gf_normal(kn, (uint64_t)(i * dh + e));
            chi += z * z;
        }
        for (int64_t e = 0; e < dh; e++) w[i * dh + e] = (float)(w[i * dh + e] * sqrt(chi));
    }
}

/* omega for (seed, step) of layer `layer`: a function of those alone. */
static void draw_omega(const gf_config *cfg, int layer, float *omega, uint64_t seed, uint64_t step) {
    const int64_t m = PC(cfg, layer)->features, dh = gf_layer_dim(cfg, layer) / gf_attn_n_head(cfg, layer);
    const uint64_t key = gf_key(gf_key(gf_key(seed, gf_hash_str("performer.omega")), (uint64_t)layer), step);
    for (int64_t b = 0; b * dh < m; b++) draw_block(omega + b * dh * dh, m - b * dh < dh ? m - b * dh : dh, dh, key, b);
}

static void p_draw_buffers(const gf_config *cfg, int layer, float *const *p, uint64_t seed, uint64_t step) {
    const int64_t every = PC(cfg, layer)->redraw;
    if (step == 0 || (every > 0 && step % (uint64_t)every == 0)) draw_omega(cfg, layer, p[P_OMEGA], seed, step);
}

/* ---- features ---------------------------------------------------------------------------------------------- */

/* s (m): the per-feature key shift max(0, |omega_i|^2 / 2 - KEY_BOUND). */
static void key_shift(float *s, const float *omega, int64_t m, int64_t dh) {
    for (int64_t i = 0; i < m; i++) {
        float nn = 0.0f;
        for (int64_t e = 0; e < dh; e++) nn += omega[i * dh + e] * omega[i * dh + e];
        s[i] = 0.5f * nn - KEY_BOUND > 0.0f ? 0.5f * nn - KEY_BOUND : 0.0f;
    }
}

typedef struct feat_ctx {
    const float *omega, *s; /* (m, dh), (m) */
    int64_t m, dh;
    float c; /* dh^(-1/4) */
} feat_ctx;

/* F (n, m): the query (key false) or key features of the n rows of x (stride ld); km (NULL: none) marks
 * padded keys, whose features are 0. */
static void features(const feat_ctx *f, float *F, const float *x, int64_t ld, int64_t n, bool key,
                     const uint8_t *km) {
    const int64_t m = f->m;
    gf_sgemm(false, true, n, m, f->dh, f->c, x, ld, f->omega, f->dh, 0.0f, F, m);
    for (int64_t t = 0; t < n; t++) {
        float *row = F + t * m;
        if (key && km && !km[t]) {
            for (int64_t i = 0; i < m; i++) row[i] = 0.0f;
            continue;
        }
        float sh = 0.0f;
        if (key) {
            for (int64_t e = 0; e < f->dh; e++) sh += x[t * ld + e] * x[t * ld + e];
            sh *= 0.5f * f->c * f->c;
        } else {
            sh = -INFINITY;
            for (int64_t i = 0; i < m; i++) sh = row[i] + f->s[i] > sh ? row[i] + f->s[i] : sh;
        }
        const float sg = key ? -1.0f : 1.0f;
#pragma omp simd
        for (int64_t i = 0; i < m; i++) row[i] = gf_exp_fast_v(row[i] + sg * f->s[i] - sh);
    }
}

/* dx (n rows, stride ld) = d/dx of the features F given dF (n, m), overwritten in dF (the query's max is a
 * constant of the ratio: no gradient); key: the |x|^2 / 2 term too. */
static void features_back(const feat_ctx *f, float *dx, int64_t ld, float *dF, const float *F, const float *x,
                          int64_t xld, int64_t n, bool key) {
    const int64_t m = f->m;
    for (int64_t t = 0; t < n; t++) {
        float *w = dF + t * m, sum = 0.0f;
        const float *fr = F + t * m;
#pragma omp simd reduction(+ : sum)
        for (int64_t i = 0; i < m; i++) {
            w[i] *= fr[i];
            sum += w[i];
        }
        if (key)
            for (int64_t e = 0; e < f->dh; e++) dx[t * ld + e] = -f->c * f->c * sum * x[t * xld + e];
    }
    gf_sgemm(false, false, n, f->dh, m, f->c, dF, m, f->omega, f->dh, key ? 1.0f : 0.0f, dx, ld);
}

/* ---- one (batch, head): forward --------------------------------------------------------------------------- */

typedef struct head_io {
    const float *q, *k, *v; /* rows of stride ld (3d) */
    int64_t ld, T;
    const uint8_t *km;
    bool causal;
} head_io;

/* A (n, n) = the lower triangle (j <= t; the rest 0) of X Y^T, X and Y (n, m). */
static void tri(float *A, const float *X, const float *Y, int64_t n, int64_t m) {
    gf_sgemm(false, true, n, n, m, 1.0f, X, m, Y, m, 0.0f, A, n);
    for (int64_t t = 0; t < n; t++)
        for (int64_t j = t + 1; j < n; j++) A[t * n + j] = 0.0f;
}

/* S (m, dh) += F^T V, z (m) += F^T w (w NULL: ones) over a chunk of n rows. */
static void sums_add(float *S, float *z, const float *F, const float *V, int64_t ld, const float *w, int64_t n,
                     int64_t m, int64_t dh) {
    gf_sgemm(true, false, m, dh, n, 1.0f, F, m, V, ld, 1.0f, S, dh);
    for (int64_t t = 0; t < n; t++)
        for (int64_t i = 0; i < m; i++) z[i] += (w ? w[t] : 1.0f) * F[t * m + i];
}

/* S, z over every key (bidirectional); Q, K scratch. */
static void full_sums(const feat_ctx *f, const head_io *io, float *S, float *z, float *K) {
    for (int64_t t0 = 0; t0 < io->T; t0 += C) {
        const int64_t n = io->T - t0 < C ? io->T - t0 : C;
        features(f, K, io->k + t0 * io->ld, io->ld, n, true, io->km ? io->km + t0 : NULL);
        sums_add(S, z, K, io->v + t0 * io->ld, io->ld, NULL, n, f->m, f->dh);
    }
}

/* o (T rows, stride ldo) and den (T): scratch Q, K (C, m), A (C, C), S (m, dh), z (m). */
static void head_forward(const feat_ctx *f, const head_io *io, float *o, int64_t ldo, float *den, float *Q, float *K,
                         float *A, float *S, float *z) {
    const int64_t m = f->m, dh = f->dh;
    gf_zero(S, m * dh);
    gf_zero(z, m);
    if (!io->causal) full_sums(f, io, S, z, K);
    for (int64_t t0 = 0; t0 < io->T; t0 += C) {
        const int64_t n = io->T - t0 < C ? io->T - t0 : C;
        const float *v = io->v + t0 * io->ld;
        float *oc = o + t0 * ldo;
        features(f, Q, io->q + t0 * io->ld, io->ld, n, false, NULL);
        gf_sgemm(false, false, n, dh, m, 1.0f, Q, m, S, dh, 0.0f, oc, ldo); /* earlier chunks (or all) */
        for (int64_t t = 0; t < n; t++) {
            float s = 0.0f;
            for (int64_t i = 0; i < m; i++) s += Q[t * m + i] * z[i];
            den[t0 + t] = s;
        }
        if (io->causal) { /* the chunk's own lower triangle, then the sums take it in */
            features(f, K, io->k + t0 * io->ld, io->ld, n, true, io->km ? io->km + t0 : NULL);
            tri(A, Q, K, n, m);
            gf_sgemm(false, false, n, dh, n, 1.0f, A, n, v, io->ld, 1.0f, oc, ldo);
            for (int64_t t = 0; t < n; t++)
                for (int64_t j = 0; j <= t; j++) den[t0 + t] += A[t * n + j];
            sums_add(S, z, K, v, io->ld, NULL, n, m, dh);
        }
        for (int64_t t = 0; t < n; t++) {
            const float inv = den[t0 + t] > DEN_MIN ? 1.0f / den[t0 + t] : 0.0f;
            for (int64_t e = 0; e < dh; e++) oc[t * ldo + e] *= inv;
        }
    }
}

/* ---- the mixer -------------------------------------------------------------------------------------------- */

/* saved: qkv (N,3d) | o (N,d) | den (B,H,T) */
static int64_t p_saved_floats(const gf_config *cfg, int layer, int64_t B, int64_t T) {
    return 4 * B * T * gf_layer_dim(cfg, layer) + B * gf_attn_n_head(cfg, layer) * T;
}

/* per thread in the backward (the forward uses a prefix of it) */
static int64_t thread_floats(const gf_config *cfg, int layer) {
    const int64_t m = PC(cfg, layer)->features, dh = gf_layer_dim(cfg, layer) / gf_attn_n_head(cfg, layer);
    return 4 * C * m + 2 * C * C + m * dh + m + C * dh + C;
}

/* scratch: s (m) | per thread thread_floats | dO (N,d) | dqkv (N,3d) */
static int64_t p_scratch_floats(const gf_config *cfg, int layer, int64_t B, int64_t T, int n_threads) {
    return PC(cfg, layer)->features + n_threads * thread_floats(cfg, layer) + 4 * B * T * gf_layer_dim(cfg, layer);
}

static feat_ctx feat_of(const gf_config *cfg, int layer, const float *omega, float *s) {
    const int64_t m = PC(cfg, layer)->features, dh = gf_layer_dim(cfg, layer) / gf_attn_n_head(cfg, layer);
    key_shift(s, omega, m, dh);
    return (feat_ctx){.omega = omega, .s = s, .m = m, .dh = dh, .c = 1.0f / sqrtf(sqrtf((float)dh))};
}

static head_io io_of(const gf_mixer_call *c, const float *qkv, int64_t bh) {
    const int64_t d = gf_layer_dim(c->cfg, c->layer), H = gf_attn_n_head(c->cfg, c->layer), b = bh / H,
                  h = bh % H, dh = d / H;
    const float *q = qkv + b * c->T * 3 * d + h * dh;
    return (head_io){.q = q, .k = q + d, .v = q + 2 * d, .ld = 3 * d, .T = c->T,
                     .km = c->mask ? c->mask + b * c->T : NULL, .causal = !c->bidirectional};
}

static void p_forward(const gf_mixer_call *c, float *out, const float *inp) {
    const int64_t B = c->B, T = c->T, N = B * T, d = gf_layer_dim(c->cfg, c->layer), H = gf_attn_n_head(c->cfg, c->layer),
                  dh = d / H;
    float *qkv = c->saved, *o = qkv + 3 * N * d, *den = o + N * d;
    const feat_ctx f = feat_of(c->cfg, c->layer, c->p[P_OMEGA], c->scratch);
    const int64_t m = f.m, tf = thread_floats(c->cfg, c->layer);
    gf_attn_qkv_forward(c, qkv, inp);
#pragma omp parallel for schedule(static) num_threads(c->n_threads)
    for (int64_t bh = 0; bh < B * H; bh++) {
        float *Q = c->scratch + m + (int64_t)gf_thread_id() * tf, *K = Q + C * m, *A = K + C * m, *S = A + C * C,
              *z = S + m * dh;
        const head_io io = io_of(c, qkv, bh);
        head_forward(&f, &io, o + (bh / H) * T * d + (bh % H) * dh, d, den + bh * T, Q, K, A, S, z);
    }
    gf_attn_proj_forward(c, out, o);
}

/* ---- one (batch, head): backward -------------------------------------------------------------------------- */

typedef struct head_grad {
    const float *dO, *o, *den; /* dO, o rows of stride ldo; den (T) */
    int64_t ldo;
    float *dq, *dk, *dv;       /* rows of stride io->ld */
    float *Q, *K, *dQ, *dK, *A, *D, *S, *z, *G, *E; /* scratch */
} head_grad;

/* G (n, dh) = dO / den, E (n) = -dO.o / den for positions t0 .. t0+n-1 (both 0 where o is 0 for want of a
 * key: no gradient passes there). */
static void chunk_ge(const head_grad *g, int64_t t0, int64_t n, int64_t dh) {
    for (int64_t t = 0; t < n; t++) {
        const float dn = g->den[t0 + t], inv = dn > DEN_MIN ? 1.0f / dn : 0.0f;
        const float *dO = g->dO + (t0 + t) * g->ldo, *o = g->o + (t0 + t) * g->ldo;
        float dot = 0.0f;
        for (int64_t e = 0; e < dh; e++) {
            g->G[t * dh + e] = dO[e] * inv;
            dot += dO[e] * o[e];
        }
        g->E[t] = -dot * inv;
    }
}

/* D (n, n) = lower triangle of G V^T + E 1^T (dL/d(fq_t . fk_j) within the chunk). */
static void chunk_d(const head_grad *g, const float *v, int64_t ld, int64_t n, int64_t dh) {
    gf_sgemm(false, true, n, n, dh, 1.0f, g->G, dh, v, ld, 0.0f, g->D, n);
    for (int64_t t = 0; t < n; t++)
        for (int64_t j = 0; j < n; j++) g->D[t * n + j] = j <= t ? g->D[t * n + j] + g->E[t] : 0.0f;
}

/* Queries, in order: dQ = G S^T + E z^T (+ D K within a causal chunk), S and z the sums before the chunk (or
 * all of them). */
static void queries_back(const feat_ctx *f, const head_io *io, const head_grad *g) {
    const int64_t m = f->m, dh = f->dh;
    gf_zero(g->S, m * dh);
    gf_zero(g->z, m);
    if (!io->causal) full_sums(f, io, g->S, g->z, g->K);
    for (int64_t t0 = 0; t0 < io->T; t0 += C) {
        const int64_t n = io->T - t0 < C ? io->T - t0 : C;
        const float *v = io->v + t0 * io->ld;
        features(f, g->Q, io->q + t0 * io->ld, io->ld, n, false, NULL);
        chunk_ge(g, t0, n, dh);
        gf_sgemm(false, true, n, m, dh, 1.0f, g->G, dh, g->S, dh, 0.0f, g->dQ, m);
        for (int64_t t = 0; t < n; t++)
            for (int64_t i = 0; i < m; i++) g->dQ[t * m + i] += g->E[t] * g->z[i];
        if (io->causal) {
            features(f, g->K, io->k + t0 * io->ld, io->ld, n, true, io->km ? io->km + t0 : NULL);
            chunk_d(g, v, io->ld, n, dh);
            gf_sgemm(false, false, n, m, n, 1.0f, g->D, n, g->K, m, 1.0f, g->dQ, m);
            sums_add(g->S, g->z, g->K, v, io->ld, NULL, n, m, dh);
        }
        features_back(f, g->dq + t0 * io->ld, io->ld, g->dQ, g->Q, io->q + t0 * io->ld, io->ld, n, false);
    }
}

/* R (m, dh) = sum fq g^T, r (m) = sum e fq over every query (bidirectional), in S and z. */
static void full_back_sums(const feat_ctx *f, const head_io *io, const head_grad *g) {
    for (int64_t t0 = 0; t0 < io->T; t0 += C) {
        const int64_t n = io->T - t0 < C ? io->T - t0 : C;
        features(f, g->Q, io->q + t0 * io->ld, io->ld, n, false, NULL);
        chunk_ge(g, t0, n, f->dh);
        sums_add(g->S, g->z, g->Q, g->G, f->dh, g->E, n, f->m, f->dh);
    }
}

/* Keys and values, in reverse: dK = V R^T + 1 r^T (+ D^T Q), dV = K R (+ A^T G), R and r the sums over the
 * later chunks (or all of them). */
static void keys_back(const feat_ctx *f, const head_io *io, const head_grad *g) {
    const int64_t m = f->m, dh = f->dh;
    gf_zero(g->S, m * dh);
    gf_zero(g->z, m);
    if (!io->causal) full_back_sums(f, io, g);
    for (int64_t t0 = (io->T - 1) / C * C; t0 >= 0; t0 -= C) {
        const int64_t n = io->T - t0 < C ? io->T - t0 : C;
        const float *v = io->v + t0 * io->ld, *k = io->k + t0 * io->ld;
        const uint8_t *km = io->km ? io->km + t0 : NULL;
        features(f, g->K, k, io->ld, n, true, km);
        gf_sgemm(false, true, n, m, dh, 1.0f, v, io->ld, g->S, dh, 0.0f, g->dK, m);
        for (int64_t t = 0; t < n; t++)
            for (int64_t i = 0; i < m; i++) g->dK[t * m + i] += g->z[i];
        gf_sgemm(false, false, n, dh, m, 1.0f, g->K, m, g->S, dh, 0.0f, g->dv + t0 * io->ld, io->ld);
        if (io->causal) {
            features(f, g->Q, io->q + t0 * io->ld, io->ld, n, false, NULL);
            chunk_ge(g, t0, n, dh);
            chunk_d(g, v, io->ld, n, dh);
            gf_sgemm(true, false, n, m, n, 1.0f, g->D, n, g->Q, m, 1.0f, g->dK, m);
            tri(g->A, g->Q, g->K, n, m);
            gf_sgemm(true, false, n, dh, n, 1.0f, g->A, n, g->G, dh, 1.0f, g->dv + t0 * io->ld, io->ld);
            sums_add(g->S, g->z, g->Q, g->G, dh, g->E, n, m, dh);
        }
        features_back(f, g->dk + t0 * io->ld, io->ld, g->dK, g->K, k, io->ld, n, true);
    }
}

static void p_backward(const gf_mixer_call *c, float *dinp, const float *dout, const float *inp) {
    const int64_t B = c->B, T = c->T, N = B * T, d = gf_layer_dim(c->cfg, c->layer), H = gf_attn_n_head(c->cfg, c->layer),
                  dh = d / H;
    const float *qkv = c->saved, *o = qkv + 3 * N * d, *den = o + N * d;
    const feat_ctx f = feat_of(c->cfg, c->layer, c->p[P_OMEGA], c->scratch);
    const int64_t m = f.m, tf = thread_floats(c->cfg, c->layer);
    float *dO = c->scratch + m + c->n_threads * tf, *dqkv = dO + N * d;
    gf_attn_proj_backward(c, dO, dout, o);
#pragma omp parallel for schedule(static) num_threads(c->n_threads)
    for (int64_t bh = 0; bh < B * H; bh++) {
        const int64_t b = bh / H, h = bh % H;
        float *Q = c->scratch + m + (int64_t)gf_thread_id() * tf, *dq = dqkv + b * T * 3 * d + h * dh;
        head_grad g = {.dO = dO + b * T * d + h * dh, .o = o + b * T * d + h * dh, .den = den + bh * T, .ldo = d,
                       .dq = dq, .dk = dq + d, .dv = dq + 2 * d, .Q = Q};
        g.K = g.Q + C * m, g.dQ = g.K + C * m, g.dK = g.dQ + C * m, g.A = g.dK + C * m, g.D = g.A + C * C;
        g.S = g.D + C * C, g.z = g.S + m * dh, g.G = g.z + m, g.E = g.G + C * dh;
        const head_io io = io_of(c, qkv, bh);
        queries_back(&f, &io, &g);
        keys_back(&f, &io, &g);
    }
    gf_attn_qkv_backward(c, dinp, dqkv, inp);
}

/* ---- streaming: the running sums ---------------------------------------------------------------------- */

/* state: per head S (m, dh) then z (m), whatever cap */
static int64_t p_state_floats(const gf_config *cfg, int layer, int64_t cap) {
    (void)cap;
    const int64_t H = gf_attn_n_head(cfg, layer);
    return H * PC(cfg, layer)->features * (gf_layer_dim(cfg, layer) / H + 1);
}

/* step scratch: qkv (3d) | o (d) | s (m) | per head fq, fk (2 m) */
static int64_t p_step_scratch_floats(const gf_config *cfg, int layer, int64_t cap) {
    (void)cap;
    const int64_t m = PC(cfg, layer)->features;
    return 4 * gf_layer_dim(cfg, layer) + m + 2 * m * gf_attn_n_head(cfg, layer);
}

/* head h of a streamed token: its key's features into the running sums, then the query against them */
static void p_step_head(const gf_mixer_step *s, const feat_ctx *f, const float *qkv, float *o, float *sh, int64_t h,
                        int64_t d, int64_t dh) {
    const int64_t m = f->m;
    float *S = s->state + h * m * (dh + 1), *z = S + m * dh, *fq = sh + m + 2 * h * m, *fk = fq + m;
    const float *q = qkv + h * dh, *v = q + 2 * d;
    features(f, fk, q + d, 3 * d, 1, true, NULL);
    sums_add(S, z, fk, v, 3 * d, NULL, 1, m, dh);
    features(f, fq, q, 3 * d, 1, false, NULL);
    gf_sgemm(false, false, 1, dh, m, 1.0f, fq, m, S, dh, 0.0f, o + h * dh, d);
    float den = 0.0f;
    for (int64_t i = 0; i < m; i++) den += fq[i] * z[i];
    const float inv = den > DEN_MIN ? 1.0f / den : 0.0f;
    for (int64_t e = 0; e < dh; e++) o[h * dh + e] *= inv;
}

static void p_step(const gf_mixer_step *s, float *out, const float *inp) {
    const int64_t d = gf_layer_dim(s->cfg, s->layer), H = gf_attn_n_head(s->cfg, s->layer), dh = d / H;
    float *qkv = s->scratch, *o = qkv + 3 * d, *sh = o + d;
    const feat_ctx f = feat_of(s->cfg, s->layer, s->p[P_OMEGA], sh);
    gf_linear_forward(qkv, inp, d, s->p[GF_ATTN_QKV_W], d, s->p[GF_ATTN_QKV_B], 1, d, 3 * d, 0.0f);
    GF_PAR_FOR(f.m * d > GF_PAR_MIN, for (int64_t h = 0; h < H; h++) p_step_head(s, &f, qkv, o, sh, h, d, dh););
    gf_linear_forward(out, o, d, s->p[GF_ATTN_PROJ_W], d, s->p[GF_ATTN_PROJ_B], 1, d, d, 0.0f);
}

const gf_mixer_ops gf_mixer_performer = {
    .version = GF_MIXER_OPS_VERSION,
    .name = "performer",
    .letter = 'p',
    .help = "Performer attention (FAVOR+, Choromanski et al. 2021): softmax attention approximated with m positive\n"
            "random features per head, exp(omega x - |x|^2/2) / sqrt(m) of q and k scaled by dh^-1/4, omega (m, dh)\n"
            "a buffer of orthogonal Gaussian blocks drawn from the seed (saved, never trained; `redraw` redraws\n"
            "it during training). Causal by chunked prefix sums, bidirectional by two sums: linear in the\n"
            "sequence length (O(T m dh) per head); streams (causal) with n_head (m dh + m) floats of state\n"
            "whatever the position. The attention mixer's qkv/proj tensors, plus mix.omega.",
    .config_size = sizeof(performer_config),
    .keys = KEYS,
    .n_keys = (int)(sizeof KEYS / sizeof KEYS[0]),
    .check = p_check,
    .gated_skip = false,
    .directions = GF_MIX_CAUSAL | GF_MIX_BIDIRECTIONAL,
    .masks = true,
    .param_specs = p_param_specs,
    .saved_floats = p_saved_floats,
    .scratch_floats = p_scratch_floats,
    .forward = p_forward,
    .backward = p_backward,
    .state_floats = p_state_floats,
    .step_scratch_floats = p_step_scratch_floats,
    .step = p_step,
    .draw_buffers = p_draw_buffers,
};
