/* Causal Grassmann mixing (docs/model.md; arXiv 2512.19428 section 3.2 with look-back pairing).
 *
 *   z = red(h)                         (N, r)
 *   pbar[t] = mean_{D in S_t} p(z_t, z_{t-D}) / max(|p|, eps)     (N, C), C = r(r-1)/2
 *   g = plucker(pbar), g[t] = 0 where S_t is empty               (N, d)
 *   a = sigmoid(gate([h; g])),  m = a*h + (1-a)*g,  out = extra_proj ? out(m) : m
 *
 * The mean is taken before the C -> d projection (exact, since the projection is affine and rows with
 * no valid offset are zeroed), so one GEMM serves all offsets. The Plücker tensor is never stored: the
 * forward keeps z, g, a (and m with extra_proj) and the backward recomputes pbar in scratch. */
#include <math.h>

#include "core/parallel.h"
#include "mixers/mixer.h"
#include "ops/ops.h"

enum { P_RED_W, P_RED_B, P_PLU_W, P_PLU_B, P_GATE_W, P_GATE_B, P_OUT_W, P_OUT_B };

static int64_t n_pairs(const gf_config *cfg) { return cfg->rank * (cfg->rank - 1) / 2; }

static int g_param_specs(const gf_config *cfg, int layer, gf_param_spec *s) {
    (void)layer;
    int64_t d = cfg->d_model, r = cfg->rank, C = n_pairs(cfg);
    gf_param_spec_set(&s[P_RED_W], "red.weight", 2, r, d, GF_INIT_NORMAL);
    gf_param_spec_set(&s[P_RED_B], "red.bias", 1, r, 0, GF_INIT_ZERO);
    gf_param_spec_set(&s[P_PLU_W], "plucker.weight", 2, d, C, GF_INIT_NORMAL);
    gf_param_spec_set(&s[P_PLU_B], "plucker.bias", 1, d, 0, GF_INIT_ZERO);
    gf_param_spec_set(&s[P_GATE_W], "gate.weight", 2, d, 2 * d, GF_INIT_NORMAL);
    gf_param_spec_set(&s[P_GATE_B], "gate.bias", 1, d, 0, GF_INIT_ZERO);
    if (!cfg->extra_proj) return 6;
    gf_param_spec_set(&s[P_OUT_W], "out.weight", 2, d, d, GF_INIT_NORMAL);
    gf_param_spec_set(&s[P_OUT_B], "out.bias", 1, d, 0, GF_INIT_ZERO);
    return 8;
}

/* saved: z (N,r) | g (N,d) | a (N,d) | m (N,d) if extra_proj */
static int64_t g_saved_floats(const gf_config *cfg, int layer, int64_t B, int64_t T) {
    (void)layer;
    int64_t N = B * T, d = cfg->d_model;
    return N * cfg->rank + 2 * N * d + (cfg->extra_proj ? N * d : 0);
}

/* scratch: pbar (N,C) | dpbar (N,C) | dz (N,r) | dm (N,d) | dg (N,d) | da (N,d) */
static int64_t g_scratch_floats(const gf_config *cfg, int layer, int64_t B, int64_t T, int n_threads) {
    (void)layer;
    (void)n_threads;
    int64_t N = B * T, d = cfg->d_model;
    return 2 * N * n_pairs(cfg) + N * cfg->rank + 3 * N * d;
}

/* Number of offsets of the layer that look back from position t without leaving the sequence. */
static int valid_count(const int *offs, int n_offs, int64_t t) {
    int c = 0;
    for (int k = 0; k < n_offs; k++) c += offs[k] <= t;
    return c;
}

/* Zero the rows (N, d) of positions from which no offset looks back (there g is the constant 0). */
static void zero_rows_without_offsets(float *x, int64_t d, const int *offs, int n_offs, int64_t N, int64_t T) {
#pragma omp parallel for schedule(static) if (N * d > GF_PAR_MIN)
    for (int64_t n = 0; n < N; n++)
        if (valid_count(offs, n_offs, n % T) == 0)
            for (int64_t k = 0; k < d; k++) x[n * d + k] = 0.0f;
}

/* pbar (N,C) from z (N,r). Rows with no valid offset are zero. */
static void plucker_mean(float *pbar, const float *z, const gf_config *cfg, int layer, int64_t B, int64_t T) {
    const int64_t r = cfg->rank, C = n_pairs(cfg), N = B * T;
    const int *offs = cfg->offsets[layer];
    const int n_offs = cfg->n_offsets[layer];
    const float eps = cfg->plucker_eps;
#pragma omp parallel for schedule(static) if (N * C * n_offs > GF_PAR_MIN)
    for (int64_t n = 0; n < N; n++) {
        const int64_t t = n % T;
        float *pb = pbar + n * C;
        for (int64_t k = 0; k < C; k++) pb[k] = 0.0f;
        const float *u = z + n * r;
        int cnt = 0;
        for (int o = 0; o < n_offs; o++) {
            const int64_t D = offs[o];
            if (D > t) continue;
            const float *v = z + (n - D) * r;
            float nrm2 = 0.0f;
            for (int64_t i = 0; i < r; i++)
                for (int64_t j = i + 1; j < r; j++) {
                    float p = u[i] * v[j] - u[j] * v[i];
                    nrm2 += p * p;
                }
            float nrm = sqrtf(nrm2);
            float inv = 1.0f / (nrm >= eps ? nrm : eps);
            int64_t k = 0;
            for (int64_t i = 0; i < r; i++)
                for (int64_t j = i + 1; j < r; j++, k++) pb[k] += (u[i] * v[j] - u[j] * v[i]) * inv;
            cnt++;
        }
        if (cnt > 1) {
            float ic = 1.0f / (float)cnt;
            for (int64_t k = 0; k < C; k++) pb[k] *= ic;
        }
    }
}

/* Gradient of pbar's term p(u, v)/max(|p|, eps) / cnt, given dpb = d(loss)/d(pbar) of that row:
 * adds to du (if non-NULL) and dv (if non-NULL). With G the antisymmetric matrix of dp,
 * du = G v and dv = -G u. */
static void plucker_grad(const float *dpb, float inv_cnt, const float *u, const float *v, int64_t r,
                         float eps, float *du, float *dv) {
    float nrm2 = 0.0f, dot = 0.0f;
    int64_t k = 0;
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = i + 1; j < r; j++, k++) {
            float p = u[i] * v[j] - u[j] * v[i];
            nrm2 += p * p;
            dot += p * dpb[k];
        }
    float nrm = sqrtf(nrm2), a, b;
    if (nrm >= eps) {
        a = inv_cnt / nrm;
        b = inv_cnt * dot / (nrm * nrm * nrm);
    } else {
        a = inv_cnt / eps;
        b = 0.0f;
    }
    k = 0;
    for (int64_t i = 0; i < r; i++) {
        float gi_u = 0.0f, gi_v = 0.0f;
        for (int64_t j = i + 1; j < r; j++, k++) {
            float p = u[i] * v[j] - u[j] * v[i];
            float dp = a * dpb[k] - b * p;
            if (du) {
                gi_u += dp * v[j];
                du[j] -= dp * v[i];
            }
            if (dv) {
                dv[j] += dp * u[i];
                gi_v -= dp * u[j];
            }
        }
        if (du) du[i] += gi_u;
        if (dv) dv[i] += gi_v;
    }
}

static void g_forward(const gf_mixer_call *c, float *out, const float *inp) {
    const gf_config *cfg = c->cfg;
    const int64_t N = c->B * c->T, T = c->T, d = cfg->d_model, r = cfg->rank, C = n_pairs(cfg);
    float *z = c->saved, *g = z + N * r, *a = g + N * d, *m = cfg->extra_proj ? a + N * d : out;
    float *pbar = c->scratch;
    const int *offs = cfg->offsets[c->layer];
    const int n_offs = cfg->n_offsets[c->layer];

    gf_linear_forward(z, inp, d, c->p[P_RED_W], d, c->p[P_RED_B], N, d, r, 0.0f);
    plucker_mean(pbar, z, cfg, c->layer, c->B, T);
    gf_linear_forward(g, pbar, C, c->p[P_PLU_W], C, c->p[P_PLU_B], N, C, d, 0.0f);
    /* no offset looks back from the first positions: there g = 0 (not the bias) */
    zero_rows_without_offsets(g, d, offs, n_offs, N, T);
    /* gate pre-activation = h W_gate[:, :d]^T + g W_gate[:, d:]^T + b */
    gf_linear_forward(a, inp, d, c->p[P_GATE_W], 2 * d, c->p[P_GATE_B], N, d, d, 0.0f);
    gf_linear_forward(a, g, d, c->p[P_GATE_W] + d, 2 * d, NULL, N, d, d, 1.0f);
#pragma omp parallel for schedule(static) if (N * d > GF_PAR_MIN)
    for (int64_t i = 0; i < N * d; i++) {
        float s = 1.0f / (1.0f + expf(-a[i]));
        a[i] = s;
        m[i] = s * inp[i] + (1.0f - s) * g[i];
    }
    if (cfg->extra_proj) gf_linear_forward(out, m, d, c->p[P_OUT_W], d, c->p[P_OUT_B], N, d, d, 0.0f);
}

static void g_backward(const gf_mixer_call *c, float *dinp, const float *dout, const float *inp) {
    const gf_config *cfg = c->cfg;
    const int64_t N = c->B * c->T, T = c->T, d = cfg->d_model, r = cfg->rank, C = n_pairs(cfg);
    const float *z = c->saved, *g = z + N * r, *a = g + N * d, *m = a + N * d;
    float *pbar = c->scratch, *dpbar = pbar + N * C, *dz = dpbar + N * C, *dm = dz + N * r, *dg = dm + N * d,
          *da = dg + N * d;
    const int *offs = cfg->offsets[c->layer];
    const int n_offs = cfg->n_offsets[c->layer];
    const float eps = cfg->plucker_eps;

    const float *dmix = dout;
    if (cfg->extra_proj) {
        gf_zero(dm, N * d);
        gf_linear_backward(dm, d, c->g[P_OUT_W], d, c->g[P_OUT_B], dout, m, d, c->p[P_OUT_W], d, N, d, d);
        dmix = dm;
    }
    /* m = a*h + (1-a)*g:  dh += dm*a;  dg = dm*(1-a);  d(pre) = dm*(h-g)*a*(1-a) */
#pragma omp parallel for schedule(static) if (N * d > GF_PAR_MIN)
    for (int64_t i = 0; i < N * d; i++) {
        float ai = a[i], dmi = dmix[i];
        dinp[i] += dmi * ai;
        dg[i] = dmi * (1.0f - ai);
        da[i] = dmi * (inp[i] - g[i]) * ai * (1.0f - ai);
    }
    gf_linear_backward(dinp, d, c->g[P_GATE_W], 2 * d, c->g[P_GATE_B], da, inp, d, c->p[P_GATE_W], 2 * d, N,
                       d, d);
    gf_linear_backward(dg, d, c->g[P_GATE_W] + d, 2 * d, NULL, da, g, d, c->p[P_GATE_W] + d, 2 * d, N, d, d);
    /* g is the constant 0 on rows with no valid offset: no gradient flows past it there */
    zero_rows_without_offsets(dg, d, offs, n_offs, N, T);

    plucker_mean(pbar, z, cfg, c->layer, c->B, T);
    gf_zero(dpbar, N * C);
    gf_linear_backward(dpbar, C, c->g[P_PLU_W], C, c->g[P_PLU_B], dg, pbar, C, c->p[P_PLU_W], C, N, C, d);

    /* dz, gathered per row so that threads never write the same row: row n receives its share as the
     * current token of its own pairs and as the earlier token of the pairs of rows n + D. */
#pragma omp parallel for schedule(static) if (N * C * n_offs > GF_PAR_MIN)
    for (int64_t n = 0; n < N; n++) {
        const int64_t t = n % T;
        float *dzn = dz + n * r;
        for (int64_t k = 0; k < r; k++) dzn[k] = 0.0f;
        const float *zn = z + n * r;
        int cnt = valid_count(offs, n_offs, t);
        for (int o = 0; o < n_offs; o++) {
            const int64_t D = offs[o];
            if (D <= t) plucker_grad(dpbar + n * C, 1.0f / (float)cnt, zn, z + (n - D) * r, r, eps, dzn, NULL);
            if (t + D < T) {
                int cm = valid_count(offs, n_offs, t + D);
                plucker_grad(dpbar + (n + D) * C, 1.0f / (float)cm, z + (n + D) * r, zn, r, eps, NULL, dzn);
            }
        }
    }
    gf_linear_backward(dinp, d, c->g[P_RED_W], d, c->g[P_RED_B], dz, inp, d, c->p[P_RED_W], d, N, d, r);
}

const gf_mixer_ops gf_mixer_grassmann = {
    .name = "grassmann",
    .param_specs = g_param_specs,
    .saved_floats = g_saved_floats,
    .scratch_floats = g_scratch_floats,
    .forward = g_forward,
    .backward = g_backward,
};
