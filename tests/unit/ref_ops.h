/* Naive double-precision references for the ops and mixers, written from docs/model.md (plain loops, no
 * BLAS, nothing shared with src/), plus central finite differences and the checks the op tests use.
 * Header-only (static inline) so that every tests/unit/test_*.c can include it. */
#ifndef GF_TESTS_REF_OPS_H
#define GF_TESTS_REF_OPS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mixers/grassmann.h"
#include "testlib.h"

/* ---- ops ------------------------------------------------------------------------------------- */

/* out (B,T,C) = wte[tok] + pos[t] */
static inline void ref_embed(double *out, const int32_t *tok, const double *wte, const double *pos, int64_t B,
                             int64_t T, int64_t C) {
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++)
            for (int64_t c = 0; c < C; c++)
                out[(b * T + t) * C + c] = wte[(int64_t)tok[b * T + t] * C + c] + pos[t * C + c];
}

/* P[t,2i] = sin(t / 10000^(2i/C)), P[t,2i+1] = cos(t / 10000^(2i/C)) */
static inline void ref_sinusoidal(double *P, int64_t T, int64_t C) {
    for (int64_t t = 0; t < T; t++)
        for (int64_t i = 0; 2 * i < C; i++) {
            double ang = (double)t / pow(10000.0, (double)(2 * i) / (double)C);
            P[t * C + 2 * i] = sin(ang);
            if (2 * i + 1 < C) P[t * C + 2 * i + 1] = cos(ang);
        }
}

/* out (N,OC) = beta * out + inp w^T + b; inp row stride ldi, w (OC,IC) row stride ldw, b may be NULL. */
static inline void ref_linear(double *out, const double *inp, int64_t ldi, const double *w, int64_t ldw,
                              const double *b, int64_t N, int64_t IC, int64_t OC, double beta) {
    for (int64_t n = 0; n < N; n++)
        for (int64_t o = 0; o < OC; o++) {
            double s = b ? b[o] : 0.0;
            for (int64_t i = 0; i < IC; i++) s += inp[n * ldi + i] * w[o * ldw + i];
            out[n * OC + o] = (beta != 0.0 ? beta * out[n * OC + o] : 0.0) + s;
        }
}

/* torch.nn.LayerNorm(eps=eps): biased variance. mean/rstd may be NULL. */
static inline void ref_layernorm(double *out, double *mean, double *rstd, const double *inp, const double *w,
                                 const double *b, int64_t N, int64_t C, double eps) {
    for (int64_t n = 0; n < N; n++) {
        const double *x = inp + n * C;
        double mu = 0.0, var = 0.0;
        for (int64_t c = 0; c < C; c++) mu += x[c];
        mu /= (double)C;
        for (int64_t c = 0; c < C; c++) var += (x[c] - mu) * (x[c] - mu);
        var /= (double)C;
        double rs = 1.0 / sqrt(var + eps);
        for (int64_t c = 0; c < C; c++) out[n * C + c] = (x[c] - mu) * rs * w[c] + b[c];
        if (mean) mean[n] = mu;
        if (rstd) rstd[n] = rs;
    }
}

static inline double ref_gelu1(double x, gf_gelu_kind kind) {
    if (kind == GF_GELU_TANH) return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
}

static inline void ref_gelu(double *out, const double *inp, int64_t n, gf_gelu_kind kind) {
    for (int64_t i = 0; i < n; i++) out[i] = ref_gelu1(inp[i], kind);
}

/* losses (N) = -log softmax(logits[n])[target] (0 when target < 0), lse (N) may be NULL.
 * Returns the number of rows with target >= 0. */
static inline int64_t ref_xent(double *losses, double *lse, const double *logits, const int32_t *targets,
                               int64_t N, int64_t V) {
    int64_t cnt = 0;
    for (int64_t n = 0; n < N; n++) {
        const double *z = logits + n * V;
        double mx = z[0];
        for (int64_t v = 1; v < V; v++) mx = z[v] > mx ? z[v] : mx;
        double s = 0.0;
        for (int64_t v = 0; v < V; v++) s += exp(z[v] - mx);
        double l = mx + log(s);
        if (lse) lse[n] = l;
        if (targets[n] >= 0) {
            losses[n] = l - z[targets[n]];
            cnt++;
        } else {
            losses[n] = 0.0;
        }
    }
    return cnt;
}

/* ---- mixers ---------------------------------------------------------------------------------- */

/* Diagnostics of one reference Grassmann forward: how the (offset, position) pairs fell relative to eps,
 * so a test can assert that finite differences are well posed (no pair close to the clamp). */
typedef struct {
    int64_t n_pairs;           /* (row, offset) pairs evaluated */
    int64_t n_clamped;         /* pairs with ||p|| < eps */
    double max_clamped_norm;   /* largest ||p|| among the clamped pairs */
    double min_unclamped_norm; /* smallest ||p|| among the others */
} ref_grassmann_stats;

/* Causal Grassmann mixer, the literal way (docs/model.md): for each position and each listed offset D
 * with t - D >= 0, Plücker coordinates of (z_t, z_{t-D}), normalised by max(||p||, eps), projected with
 * plucker.weight and plucker.bias; g = mean of the projections (0 when no offset is valid);
 * a = sigmoid(gate([h; g])), m = a h + (1 - a) g, out = extra_proj ? out(m) : m.
 * P: red.weight (r,d), red.bias (r), plucker.weight (d,C), plucker.bias (d), gate.weight (d,2d),
 * gate.bias (d), [out.weight (d,d), out.bias (d)].
 * Ablations: plucker false: the pair is [z_later; z_earlier] (2r), projected with pair.weight (d,2r) and
 * pair.bias in place of plucker.*; gate false: no gate.* (out.* move up two), m = (h + g) / 2. */
static inline void ref_grassmann(double *out, const double *inp, const double *const *P, const gf_config *cfg,
                                 int layer, int64_t B, int64_t T, bool bidir, const uint8_t *mask,
                                 ref_grassmann_stats *st) {
    const gf_grassmann_config *gc = (const gf_grassmann_config *)(const void *)cfg->layers[layer].params.bytes;
    const int64_t d = cfg->d_model, r = gc->rank, H = gc->heads, rh = r / H, C = H * (rh * (rh - 1) / 2), N = B * T;
    const double eps = (double)gc->plucker_eps;
    const double *Wr = P[0], *br = P[1], *Wp = P[2], *bp = P[3], *Wg = P[4], *bg = P[5];
    const double *const *Po = P + (gc->gate ? 6 : 4); /* out.weight, out.bias */
    const int64_t F = gc->plucker ? C : 2 * r;        /* the projection's input */
    double *z = malloc((size_t)(N * r) * sizeof *z);
    double *p = malloc((size_t)F * sizeof *p);
    double *g = malloc((size_t)d * sizeof *g);
    double *m = malloc((size_t)d * sizeof *m);
    if (st) {
        st->n_pairs = st->n_clamped = 0;
        st->max_clamped_norm = 0.0;
        st->min_unclamped_norm = INFINITY;
    }
    for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < r; i++) {
            double s = br[i];
            for (int64_t k = 0; k < d; k++) s += Wr[i * d + k] * inp[n * d + k];
            z[n * r + i] = s;
        }
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++) {
            const int64_t n = b * T + t;
            const double *h = inp + n * d;
            for (int64_t e = 0; e < d; e++) g[e] = 0.0;
            int cnt = 0;
            for (int o = 0; o < (bidir ? 2 : 1) * gc->n_offsets; o++) {
                /* partner t + step: -D for each offset, then +D when bidirectional; a pair runs from the
                 * later token to the earlier; a partner outside the sequence or padded does not exist */
                const int64_t step = o < gc->n_offsets ? -gc->offsets[o] : gc->offsets[o - gc->n_offsets];
                if (t + step < 0 || t + step >= T || (mask && !mask[n + step])) continue;
                if (gc->window && (t + step) / gc->window != t / gc->window) continue; /* another window */
                if (gc->grid) { /* a grid: the column moves by the step's dc, and must stay on the grid */
                    const int64_t D = step < 0 ? -step : step, c = D % gc->grid, dc = c > gc->grid / 2 ? c - gc->grid : c;
                    const int64_t col = t % gc->grid + (step < 0 ? -dc : dc);
                    if (col < 0 || col >= gc->grid) continue;
                }
                const double *u = z + (step < 0 ? n : n + step) * r, *v = z + (step < 0 ? n + step : n) * r;
                int64_t k = 0;
                for (int64_t i = 0; !gc->plucker && i < r; i++) { /* [z_later; z_earlier] */
                    p[i] = u[i];
                    p[r + i] = v[i];
                }
                for (int64_t hh = 0; gc->plucker && hh < H; hh++) { /* each head: its own rh dimensions, its own norm */
                    const double *uh = u + hh * rh, *vh = v + hh * rh;
                    const int64_t k0 = k;
                    double nrm = 0.0;
                    for (int64_t i = 0; i < rh; i++)
                        for (int64_t j = i + 1; j < rh; j++, k++) {
                            p[k] = uh[i] * vh[j] - uh[j] * vh[i];
                            nrm += p[k] * p[k];
                        }
                    nrm = sqrt(nrm);
                    const double den = nrm > eps ? nrm : eps;
                    for (int64_t kk = k0; kk < k; kk++) p[kk] /= den;
                    if (st) {
                        st->n_pairs++;
                        if (nrm < eps) {
                            st->n_clamped++;
                            if (nrm > st->max_clamped_norm) st->max_clamped_norm = nrm;
                        } else if (nrm < st->min_unclamped_norm) {
                            st->min_unclamped_norm = nrm;
                        }
                    }
                }
                for (int64_t e = 0; e < d; e++) {
                    double s = bp[e];
                    for (k = 0; k < F; k++) s += Wp[e * F + k] * p[k];
                    g[e] += s;
                }
                cnt++;
            }
            for (int64_t e = 0; e < d; e++) g[e] = cnt ? g[e] / cnt : 0.0;
            for (int64_t e = 0; e < d; e++) {
                if (!gc->gate) {
                    m[e] = (h[e] + g[e]) / 2.0;
                    continue;
                }
                double s = bg[e];
                for (int64_t k = 0; k < d; k++) s += Wg[e * 2 * d + k] * h[k];
                for (int64_t k = 0; k < d; k++) s += Wg[e * 2 * d + d + k] * g[k];
                double a = 1.0 / (1.0 + exp(-s));
                m[e] = a * h[e] + (1.0 - a) * g[e];
            }
            for (int64_t e = 0; e < d; e++) {
                if (gc->extra_proj) {
                    double s = Po[1][e];
                    for (int64_t k = 0; k < d; k++) s += Po[0][e * d + k] * m[k];
                    out[n * d + e] = s;
                } else {
                    out[n * d + e] = m[e];
                }
            }
        }
    free(z);
    free(p);
    free(g);
    free(m);
}

/* The attention family's projections, the literal way (P: qkv.weight, qkv.bias, proj.weight, proj.bias):
 * qkv (N, 3d) = inp W_qkv^T + b, with the k and v of padded positions set to 0 when kv_mask is given (a
 * linformer projects them along the sequence); out (N, d) = o W_proj^T + b. */
static inline void ref_attn_qkv(double *qkv, const double *inp, const double *const *P, int64_t d, int64_t N,
                                const uint8_t *kv_mask) {
    for (int64_t n = 0; n < N; n++)
        for (int64_t e = 0; e < 3 * d; e++) {
            double acc = P[1][e];
            for (int64_t k = 0; k < d; k++) acc += P[0][e * d + k] * inp[n * d + k];
            qkv[n * 3 * d + e] = (e >= d && kv_mask && !kv_mask[n]) ? 0.0 : acc;
        }
}

static inline void ref_attn_proj(double *out, const double *o, const double *const *P, int64_t d, int64_t N) {
    for (int64_t n = 0; n < N; n++)
        for (int64_t e = 0; e < d; e++) {
            double acc = P[3][e];
            for (int64_t k = 0; k < d; k++) acc += P[2][e * d + k] * o[n * d + k];
            out[n * d + e] = acc;
        }
}

/* Whether query i sees key j in window attention (docs/model.md): causal: j <= i and (i - j < w or j < g);
 * bidirectional: |i - j| < w or j < g or i < g. Full attention is w = T, g = 0. */
static inline bool ref_window_sees(int64_t i, int64_t j, int64_t w, int64_t g, bool bidir) {
    if (bidir) return llabs(i - j) < w || j < g || i < g;
    return j <= i && (i - j < w || j < g);
}

/* Multi-head window attention with g global positions, the literal way (keys by ref_window_sees; padded keys
 * never). P: qkv.weight (3d,d), qkv.bias (3d), proj.weight (d,d), proj.bias (d). */
static inline void ref_window_attention(double *out, const double *inp, const double *const *P, int64_t d, int64_t H,
                                        int64_t B, int64_t T, bool bidir, const uint8_t *mask, int64_t w, int64_t g) {
    const int64_t dh = d / H, N = B * T;
    double *qkv = malloc((size_t)(N * 3 * d) * sizeof *qkv);
    double *o = malloc((size_t)(N * d) * sizeof *o);
    double *s = malloc((size_t)T * sizeof *s);
    ref_attn_qkv(qkv, inp, P, d, N, NULL);
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < T; i++) {
                const double *q = qkv + (b * T + i) * 3 * d + h * dh;
                double mx = -INFINITY;
                for (int64_t j = 0; j < T; j++) {
                    s[j] = -INFINITY; /* unless the query sees the key, and it is not padding */
                    if ((mask && !mask[b * T + j]) || !ref_window_sees(i, j, w, g, bidir)) continue;
                    const double *k = qkv + (b * T + j) * 3 * d + d + h * dh;
                    double acc = 0.0;
                    for (int64_t c = 0; c < dh; c++) acc += q[c] * k[c];
                    s[j] = acc / sqrt((double)dh);
                    if (s[j] > mx) mx = s[j];
                }
                double z = 0.0, *oi = o + (b * T + i) * d + h * dh;
                for (int64_t j = 0; j < T; j++)
                    if (s[j] > -INFINITY) z += exp(s[j] - mx);
                for (int64_t c = 0; c < dh; c++) oi[c] = 0.0; /* a query that sees no key: 0 */
                for (int64_t j = 0; j < T; j++)
                    for (int64_t c = 0; c < dh && s[j] > -INFINITY; c++)
                        oi[c] += exp(s[j] - mx) / z * qkv[(b * T + j) * 3 * d + 2 * d + h * dh + c];
            }
    ref_attn_proj(out, o, P, d, N);
    free(qkv);
    free(o);
    free(s);
}

/* Multi-head attention, the literal way (causal: key <= query; bidir: every key; padded keys never). */
static inline void ref_attention(double *out, const double *inp, const double *const *P, int64_t d, int64_t H,
                                 int64_t B, int64_t T, bool bidir, const uint8_t *mask) {
    ref_window_attention(out, inp, P, d, H, B, T, bidir, mask, T, 0);
}

/* Performer (FAVOR+) literally: phi(x) = exp(omega x - |x|^2 / 2) / sqrt(m) on x = q / dh^(1/4) and
 * k / dh^(1/4), omega = P[4] (m, dh) shared by the heads; o_t = sum_j phi(q_t).phi(k_j) v_j /
 * sum_j phi(q_t).phi(k_j) over the keys t sees (causal: j <= t), padded keys excluded; none of the float
 * kernel's stabilisers (they cancel in the ratio). The projections as ref_attention's. */
static inline void ref_performer(double *out, const double *inp, const double *const *P, int64_t d, int64_t H,
                                 int64_t m, int64_t B, int64_t T, bool bidir, const uint8_t *mask) {
    const int64_t dh = d / H, N = B * T;
    const double c = pow((double)dh, -0.25);
    double *qkv = malloc((size_t)(N * 3 * d) * sizeof *qkv), *o = malloc((size_t)(N * d) * sizeof *o);
    double *phi = malloc((size_t)(2 * N * H * m) * sizeof *phi); /* phi(q) then phi(k), (n, h, i) */
    ref_attn_qkv(qkv, inp, P, d, N, NULL);
    for (int64_t w = 0; w < 2; w++)
        for (int64_t n = 0; n < N; n++)
            for (int64_t h = 0; h < H; h++) {
                const double *x = qkv + n * 3 * d + w * d + h * dh;
                double xx = 0.0;
                for (int64_t e = 0; e < dh; e++) xx += c * x[e] * c * x[e];
                for (int64_t i = 0; i < m; i++) {
                    double dot = 0.0;
                    for (int64_t e = 0; e < dh; e++) dot += P[4][i * dh + e] * c * x[e];
                    phi[((w * N + n) * H + h) * m + i] = exp(dot - xx / 2.0) / sqrt((double)m);
                }
            }
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t t = 0; t < T; t++) {
                double num[dh], den = 0.0;
                for (int64_t e = 0; e < dh; e++) num[e] = 0.0;
                for (int64_t j = 0; j <= (bidir ? T - 1 : t); j++) {
                    if (mask && !mask[b * T + j]) continue;
                    const double *pq = phi + ((b * T + t) * H + h) * m, *pk = phi + ((N + b * T + j) * H + h) * m;
                    double a = 0.0;
                    for (int64_t i = 0; i < m; i++) a += pq[i] * pk[i];
                    den += a;
                    for (int64_t e = 0; e < dh; e++) num[e] += a * qkv[(b * T + j) * 3 * d + 2 * d + h * dh + e];
                }
                for (int64_t e = 0; e < dh; e++) o[(b * T + t) * d + h * dh + e] = den > 0.0 ? num[e] / den : 0.0;
            }
    ref_attn_proj(out, o, P, d, N);
    free(qkv);
    free(o);
    free(phi);
}

/* Linformer, the literal way: qkv as attention; padded positions' k and v set to 0; per batch row
 * K'[i] = sum_{t<T} E[i,t] k[t], V'[i] = sum_{t<T} F[i,t] v[t] (E, F: (kp, max_len), heads sharing them);
 * each query attends to the kp projected keys of its head; then proj. P: qkv.weight, qkv.bias, proj.weight,
 * proj.bias, E, F. */
/* MLP-Mixer's token mixing (src/mixers/token_mlp.c), literally: for each row b and channel c,
 * out[b, t, c] = sum_j W2[t, j] gelu(sum_s W1[j, s] inp[b, s, c] + b1[j]) + b2[t], over the first T positions of
 * W1 (Hd, max_len) and W2 (max_len, Hd). P: fc1.weight, fc1.bias, fc2.weight, fc2.bias. */
static inline void ref_token_mlp(double *out, const double *inp, const double *const *P, int64_t d, int64_t Hd,
                                 int64_t max_len, int64_t B, int64_t T, gf_gelu_kind kind) {
    double *h = malloc((size_t)Hd * sizeof *h);
    for (int64_t b = 0; b < B; b++)
        for (int64_t c = 0; c < d; c++) {
            for (int64_t j = 0; j < Hd; j++) {
                double a = P[1][j];
                for (int64_t s = 0; s < T; s++) a += P[0][j * max_len + s] * inp[(b * T + s) * d + c];
                h[j] = ref_gelu1(a, kind);
            }
            for (int64_t t = 0; t < T; t++) {
                double y = P[3][t];
                for (int64_t j = 0; j < Hd; j++) y += P[2][t * Hd + j] * h[j];
                out[(b * T + t) * d + c] = y;
            }
        }
    free(h);
}

static inline void ref_linformer(double *out, const double *inp, const double *const *P, int64_t d, int64_t H,
                                 int64_t kp, int64_t max_len, int64_t B, int64_t T, const uint8_t *mask) {
    const int64_t dh = d / H, N = B * T;
    double *qkv = malloc((size_t)(N * 3 * d) * sizeof *qkv), *o = malloc((size_t)(N * d) * sizeof *o);
    double *Kp = malloc((size_t)(kp * d) * sizeof *Kp), *Vp = malloc((size_t)(kp * d) * sizeof *Vp);
    double *s = malloc((size_t)kp * sizeof *s);
    ref_attn_qkv(qkv, inp, P, d, N, mask);
    for (int64_t b = 0; b < B; b++) {
        for (int64_t i = 0; i < kp; i++)
            for (int64_t c = 0; c < d; c++) {
                double ak = 0.0, av = 0.0;
                for (int64_t t = 0; t < T; t++) {
                    ak += P[4][i * max_len + t] * qkv[(b * T + t) * 3 * d + d + c];
                    av += P[5][i * max_len + t] * qkv[(b * T + t) * 3 * d + 2 * d + c];
                }
                Kp[i * d + c] = ak, Vp[i * d + c] = av;
            }
        for (int64_t h = 0; h < H; h++)
            for (int64_t t = 0; t < T; t++) {
                const double *q = qkv + (b * T + t) * 3 * d + h * dh;
                double mx = -INFINITY, z = 0.0;
                for (int64_t i = 0; i < kp; i++) {
                    double acc = 0.0;
                    for (int64_t c = 0; c < dh; c++) acc += q[c] * Kp[i * d + h * dh + c];
                    s[i] = acc / sqrt((double)dh);
                    if (s[i] > mx) mx = s[i];
                }
                for (int64_t i = 0; i < kp; i++) z += exp(s[i] - mx);
                for (int64_t c = 0; c < dh; c++) {
                    double acc = 0.0;
                    for (int64_t i = 0; i < kp; i++) acc += exp(s[i] - mx) / z * Vp[i * d + h * dh + c];
                    o[(b * T + t) * d + h * dh + c] = acc;
                }
            }
    }
    ref_attn_proj(out, o, P, d, N);
    free(qkv), free(o), free(Kp), free(Vp), free(s);
}

/* A GRU, the literal way (torch.nn.GRU's equations, gates r, z, n): causal, one direction of d units;
 * bidirectional, a forward and a backward one of d / 2 units each, out = [h forward; h backward]. A padded
 * position passes the state on unchanged and outputs it. P per direction: weight_ih (3H, d), weight_hh
 * (3H, H), bias_ih, bias_hh; the backward direction's four after the forward's. */
static inline void ref_gru(double *out, const double *inp, const double *const *P, int64_t d, int64_t B, int64_t T,
                           bool bidir, const uint8_t *mask) {
    const int nd = bidir ? 2 : 1;
    const int64_t H = d / nd;
    double *h = malloc((size_t)H * sizeof *h), *hn = malloc((size_t)H * sizeof *hn), a[3], c[3];
    for (int k = 0; k < nd; k++) {
        const double *Wi = P[4 * k], *Wh = P[4 * k + 1], *bi = P[4 * k + 2], *bh = P[4 * k + 3];
        for (int64_t b = 0; b < B; b++) {
            for (int64_t j = 0; j < H; j++) h[j] = 0.0;
            for (int64_t s = 0; s < T; s++) {
                const int64_t t = k ? T - 1 - s : s;
                const double *x = inp + (b * T + t) * d;
                for (int64_t j = 0; j < H && (!mask || mask[b * T + t]); j++) {
                    for (int g = 0; g < 3; g++) {
                        a[g] = bi[g * H + j], c[g] = bh[g * H + j];
                        for (int64_t i = 0; i < d; i++) a[g] += Wi[(g * H + j) * d + i] * x[i];
                        for (int64_t i = 0; i < H; i++) c[g] += Wh[(g * H + j) * H + i] * h[i];
                    }
                    const double r = 1.0 / (1.0 + exp(-(a[0] + c[0]))), z = 1.0 / (1.0 + exp(-(a[1] + c[1])));
                    const double n = tanh(a[2] + r * c[2]);
                    hn[j] = (1.0 - z) * n + z * h[j];
                }
                if (!mask || mask[b * T + t]) memcpy(h, hn, (size_t)H * sizeof *h);
                for (int64_t j = 0; j < H; j++) out[(b * T + t) * d + k * H + j] = h[j];
            }
        }
    }
    free(h), free(hn);
}

/* ---- finite differences ---------------------------------------------------------------------- */

/* A reference forward: writes its output (n_out doubles) from inputs reachable through ctx. */
typedef void (*ref_forward_fn)(const void *ctx, double *out);

static inline double ref_dot(const double *a, const double *b, int64_t n) {
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* grad[i] = dL/dx[i] for L = sum_k w[k] out[k], by central differences with step h. x must be one of the
 * arrays f reads through ctx; it is perturbed in place and restored exactly. */
/* One element of it: the central difference at x[i] (x[i] restored after), out (n_out) the forward's room. */
static inline double ref_fd_one(double *x, int64_t i, ref_forward_fn f, const void *ctx, const double *w,
                                double *out, int64_t n_out, double h) {
    const double x0 = x[i];
    x[i] = x0 + h;
    f(ctx, out);
    const double lp = ref_dot(w, out, n_out);
    x[i] = x0 - h;
    f(ctx, out);
    const double lm = ref_dot(w, out, n_out);
    x[i] = x0;
    return (lp - lm) / (2.0 * h);
}

static inline void ref_fd_grad(double *grad, double *x, int64_t n, ref_forward_fn f, const void *ctx,
                               const double *w, int64_t n_out, double h) {
    double *out = malloc((size_t)n_out * sizeof *out);
    for (int64_t i = 0; i < n; i++) grad[i] = ref_fd_one(x, i, f, ctx, w, out, n_out, h);
    free(out);
}

/* ---- checks ---------------------------------------------------------------------------------- */

/* Self-check of the tests (off by default): built with -DGF_TEST_SELFCHECK, the check numbered
 * $GF_TEST_PERTURB (counting from 1 in each process) moves one expected value by 1e-3 of its scale, and
 * that check must then fail. */
#ifdef GF_TEST_SELFCHECK
static int ref_check_counter;
static inline void ref_selfcheck_perturb(double *want, int64_t n, double scale) {
    const char *e = getenv("GF_TEST_PERTURB");
    if (++ref_check_counter == (e ? atoi(e) : -1) && n > 0) {
        fprintf(stderr, "[selfcheck] perturbing check %d at index %lld\n", ref_check_counter,
                (long long)(n / 2));
        want[n / 2] += 1e-3 * scale;
    }
}
static inline void ref_selfcheck_report(const char *what, const float *got, const double *want, int64_t n,
                                        double tol) {
    if (getenv("GF_TEST_REPORT"))
        fprintf(stderr, "[selfcheck] %-60s err/tol %.3g (tol %.3g)\n", what,
                tl_max_abs_diff_fd(got, want, n) / tol, tol);
}
#else
static inline void ref_selfcheck_report(const char *what, const float *got, const double *want, int64_t n,
                                        double tol) {
    (void)what;
    (void)got;
    (void)want;
    (void)n;
    (void)tol;
}
static inline void ref_selfcheck_perturb(double *want, int64_t n, double scale) {
    (void)want;
    (void)n;
    (void)scale;
}
#endif

static inline double ref_max_abs(const double *a, int64_t n) {
    double m = 0.0;
    for (int64_t i = 0; i < n; i++) m = fabs(a[i]) > m ? fabs(a[i]) : m;
    return m;
}

/* Fail unless max |got - want| <= rtol * max(max |want|, floor). */
static inline void ref_check_rel(const char *what, const float *got, const double *want, int64_t n,
                                 double rtol, double floor) {
    double scale = ref_max_abs(want, n);
    if (scale < floor) scale = floor;
#ifdef GF_TEST_SELFCHECK
    double *w2 = malloc((size_t)n * sizeof *w2);
    memcpy(w2, want, (size_t)n * sizeof *w2);
    ref_selfcheck_perturb(w2, n, scale);
    want = w2;
#endif
    ref_selfcheck_report(what, got, want, n, rtol * scale);
    tl_check_close(what, got, want, n, rtol * scale);
#ifdef GF_TEST_SELFCHECK
    free(w2);
#endif
}

/* A backward's gradient buffer `got` was pre-filled with `pre` before the call; it must now hold
 * pre + fd (the backward accumulates). Tolerance rtol * max(max |fd|, floor), plus float rounding of pre. */
static inline void ref_check_grad(const char *what, const float *got, const float *pre, const double *fd,
                                  int64_t n, double rtol, double floor) {
    double *want = malloc((size_t)n * sizeof *want);
    double mpre = 0.0;
    for (int64_t i = 0; i < n; i++) {
        want[i] = (double)pre[i] + fd[i];
        mpre = fabs((double)pre[i]) > mpre ? fabs((double)pre[i]) : mpre;
    }
    double scale = ref_max_abs(fd, n);
    if (scale < floor) scale = floor;
    ref_selfcheck_perturb(want, n, scale);
    ref_selfcheck_report(what, got, want, n, rtol * scale + 1e-7 * mpre);
    tl_check_close(what, got, want, n, rtol * scale + 1e-7 * mpre);
    free(want);
}

#endif
