/* Ops as forward/backward pairs (llm.c conventions).
 * - Outputs first, then what the forward saved, then inputs, parameters, sizes.
 * - Gradients carry a `d` prefix. Every backward ACCUMULATES (+=) into every gradient it writes, so a
 *   fork in the graph (a residual) needs no special case. A NULL gradient pointer is skipped.
 * - Row-major; linear weights (out, in) as torch.nn.Linear. N = rows (B*T).
 * - All loops are OpenMP-parallel over rows (or column blocks for parameter gradients). */
#ifndef GF_OPS_H
#define GF_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "grassflow_plugin.h"

/* ---- embedding: out[b,t,:] = wte[tok[b,t],:] + pos[t,:] -------------------------------------- */
/* out (B,T,C), tok (B,T), wte (V,C), pos (>=T, C) learned or sinusoidal table, or NULL (pos none). */
void gf_embed_forward(float *out, const int32_t *tok, const float *wte, const float *pos, int64_t B,
                      int64_t T, int64_t C);
/* dwte (V,C), dpos (>=T,C) or NULL for a fixed table. */
void gf_embed_backward(float *dwte, float *dpos, const float *dout, const int32_t *tok, int64_t B,
                       int64_t T, int64_t C);
/* table (T,C): P[t,2i] = sin(t / 10000^(2i/C)), P[t,2i+1] = cos(same). */
/* Row t of the sinusoidal table (the same floats as the table), for any t. */
void gf_sinusoidal_row(float *row, int64_t t, int64_t C);
/* pos "sinusoidal-2d": position p of a grid of G columns as the sinusoidal row of its row p / G in the first C / 2
 * channels and of its column p % G in the rest (each gf_sinusoidal_row over its own channels). */
void gf_sinusoidal2d_row(float *row, int64_t p, int64_t C, int64_t G);
void gf_sinusoidal_table(float *table, int64_t T, int64_t C);

/* ---- linear: out = inp w^T + b ---------------------------------------------------------------- */
/* out (N,OC), inp (N,IC) with row stride ldi (>= IC), w (OC,IC) with row stride ldw, b (OC) or NULL.
 * beta 0 overwrites out, 1 accumulates. */
void gf_linear_forward(float *out, const float *inp, int64_t ldi, const float *w, int64_t ldw,
                       const float *b, int64_t N, int64_t IC, int64_t OC, float beta);
/* dinp (N,IC) += dout w; dw (OC,IC) += dout^T inp; db (OC) += sum_rows dout. Any of dinp/dw/db NULL. */
void gf_linear_backward(float *dinp, int64_t lddi, float *dw, int64_t lddw, float *db, const float *dout,
                        const float *inp, int64_t ldi, const float *w, int64_t ldw, int64_t N, int64_t IC,
                        int64_t OC);
/* The same with dinp (N, IC) overwritten (= dout w; row stride IC): for a buffer that holds nothing yet.
 * fp32 zeroes it and accumulates (the bits of every earlier version); fp32-fast writes it in one product. */
void gf_linear_backward_set(float *dinp, float *dw, int64_t lddw, float *db, const float *dout, const float *inp,
                            int64_t ldi, const float *w, int64_t ldw, int64_t N, int64_t IC, int64_t OC);

/* ---- LayerNorm (biased variance; eps: the config's ln_eps, 1e-5 unless set) --------------------- */
/* out (N,C), mean (N), rstd (N) = 1 / sqrt(var + eps), inp (N,C), weight (C), bias (C). */
void gf_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                          const float *bias, int64_t N, int64_t C, float eps);
void gf_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                           const float *weight, const float *mean, const float *rstd, int64_t N, int64_t C);

/* ---- GELU --------------------------------------------------------------------------------------- */
void gf_gelu_forward(float *out, const float *inp, int64_t n, gf_gelu_kind kind);
/* dinp += dout * gelu'(inp). dinp may equal dout (then it is overwritten, not accumulated). */
void gf_gelu_backward(float *dinp, const float *inp, const float *dout, int64_t n, gf_gelu_kind kind);
/* The same two, with the forward keeping its erf (or tanh) term in keep (n floats) for the backward, which
 * then need not compute it again: the same bits as the pair above (tests/unit/test_ops.c), the backward in
 * about half the time. keep NULL: the pair above. */
void gf_gelu_forward_keep(float *out, float *keep, const float *inp, int64_t n, gf_gelu_kind kind);
void gf_gelu_backward_kept(float *dinp, const float *inp, const float *keep, const float *dout, int64_t n,
                           gf_gelu_kind kind);

/* ---- dropout with a counter-based mask --------------------------------------------------------- */
/* out[i] = keep(key, i) ? inp[i] / (1 - p) : 0 where keep = uniform(key, i) >= p. out may equal inp.
 * p == 0 copies. */
void gf_dropout_forward(float *out, const float *inp, int64_t n, float p, uint64_t key);
/* dinp[i] += keep(key, i) ? dout[i] / (1 - p) : 0 (the same mask as the forward with this key). */
void gf_dropout_backward(float *dinp, const float *dout, int64_t n, float p, uint64_t key);
bool gf_dropout_keep(uint64_t key, int64_t i, float p);
/* The same with row r's element j (rows of row_len elements) given counter base + r row_stride + j: a
 * micro-batch's or a rank's examples get the masks one batch of the whole step gives them (ops/dropout.c). */
void gf_dropout_forward_at(float *out, const float *inp, int64_t n, float p, uint64_t key, int64_t base,
                           int64_t row_len, int64_t row_stride);
void gf_dropout_backward_at(float *dinp, const float *dout, int64_t n, float p, uint64_t key, int64_t base,
                            int64_t row_len, int64_t row_stride);

/* Softmax of one score row over S keys (km: their padding mask, NULL none) in place; lse from lse_in when
 * given (the backward), else computed into *lse_out. A row with no real key gets P = 0 and lse = +inf; a
 * padded key gets exactly 0 (its value then adds nothing). The blocked softmax's default path and window.c
 * use it (sdpa.c); fp32-fast's register tiles have their own chunked rows (attn_fast.c). */
void gf_softmax_row(float *row, int64_t S, const uint8_t *km, const float *lse_in, float *lse_out);
/* Its backward over one row's first len entries, in place: ds = p (ds - p.ds) scale (ds holds dP = dO v^T). */
void gf_softmax_back_row(float *ds, const float *p, int64_t len, float scale);

/* ---- attention of one head (sdpa.c; attn_fast.c under fp32-fast) ----------------------------------- */
/* T queries of one head over its S keys and values, scale 1 / sqrt(dh): causal (S == T, query i sees keys
 * 0 .. i) or every key, padded keys (km) masked out; a query with no real key gets 0. Queries go in blocks
 * of GF_ATTN_HEAD_QB: a block's probabilities are formed in the scratch, applied to v, and only the rows'
 * log-sum-exp is saved; the backward recomputes them from q, k and it, so no T x S tensor is kept. Every
 * attention mixer and cross-attention run their heads through these two calls (one copy of the blocked
 * softmax). Under --precision fp32-fast, on an AVX-512 build or an AVX2 + FMA one (x86-64-v3), attn_fast.c's
 * register tiles run instead of BLAS calls (different bits; the default's are every earlier version's). */
enum { GF_ATTN_HEAD_QB = 64 };
typedef struct gf_attn_head {
    const float *q, *k, *v;           /* the head's first column in row 0 of each */
    int64_t ldq, ldk, ldv, ldo;       /* row strides of q, k, v, o; dq, dk, dv and dout have the same */
    int64_t T, S, dh;
    bool causal;
    const uint8_t *km;                /* (S): 1 a real key, 0 padding; NULL: none */
    float *scratch;                   /* gf_attn_head_scratch_floats(S, dh) floats, the calling thread's */
} gf_attn_head;
int64_t gf_attn_head_scratch_floats(int64_t S, int64_t dh);
/* The calling thread's scratch in an arena of gf_attn_head_scratch_floats(S, dh) floats per thread. */
float *gf_attn_head_thread_scratch(float *arena, int64_t S, int64_t dh);
float gf_attn_head_scale(const gf_attn_head *a); /* 1 / sqrt(dh) */
/* The keys that queries i .. i+n-1 see: causal i + n, else all S. */
static inline int64_t gf_attn_head_keys(const gf_attn_head *a, int64_t i, int64_t n) { return a->causal ? i + n : a->S; }
/* o (T, dh) = softmax(q k^T / sqrt(dh)) v; lse (T): the rows' log-sum-exp, +inf for a row with no key. */
void gf_attn_head_forward(const gf_attn_head *a, float *o, float *lse);
/* dq (T, dh), dk, dv (S, dh) += the gradients for dout (T, dh) = d(loss)/d(o); lse: the forward's. */
void gf_attn_head_backward(const gf_attn_head *a, float *dq, float *dk, float *dv, const float *dout,
                           const float *lse);
/* the two paths (tests): BLAS calls, fp32's bits; the register tiles (the BLAS path without them) */
void gf_attn_head_forward_exact(const gf_attn_head *a, float *o, float *lse);
void gf_attn_head_backward_exact(const gf_attn_head *a, float *dq, float *dk, float *dv, const float *dout,
                                 const float *lse);
void gf_attn_head_forward_fast(const gf_attn_head *a, float *o, float *lse);
void gf_attn_head_backward_fast(const gf_attn_head *a, float *dq, float *dk, float *dv, const float *dout,
                                const float *lse);
bool gf_attn_head_fast_available(void); /* this build has the register tiles (AVX-512, or AVX2 with FMA) */
const char *gf_attn_head_fast_kernel(void); /* their form in this build: "avx512", "avx2"; NULL without them */
int64_t gf_attn_head_fast_floats(int64_t S, int64_t dh); /* the tiles' scratch; 0 without them */

/* ---- attention of one sequence over another (sdpa.c): cross-attention's core ---------------------- */
/* B batch rows; row b's T queries attend to the same row's S keys and values, in H heads of dh = d / H
 * (head h: columns h*dh .. h*dh+dh-1 of q, k, v and o), every key visible (no causal order) except
 * padded ones (kmask (B, S): 1 real, 0 padding; NULL: none). A query whose row has no real key gets 0. */
typedef struct gf_sdpa {
    int64_t B, T, S, H, d;
    int64_t ldq;          /* row stride of q and dq (0: d; 3d: q inside a fused qkv); k, v, o: d */
    const uint8_t *kmask;
    float *scratch;       /* gf_sdpa_scratch_floats(S, d / H, n_threads) floats, free during the call */
    int n_threads;        /* the threads the scratch was sized for (at most OpenMP's maximum) */
} gf_sdpa;
int64_t gf_sdpa_scratch_floats(int64_t S, int64_t dh, int n_threads);
/* o (B*T, d) = softmax(q k^T / sqrt(dh)) v per row and head; q (B*T, d), k, v (B*S, d); lse (B, H, T), the
 * rows' log-sum-exp, saved for the backward. */
void gf_sdpa_forward(const gf_sdpa *a, float *o, float *lse, const float *q, const float *k, const float *v);
/* dq (B*T, d), dk, dv (B*S, d) += the gradients for dout (B*T, d) = d(loss)/d(o); lse, q, k, v: the forward's.
 * A padded key's rows of dk and dv receive nothing. */
void gf_sdpa_backward(const gf_sdpa *a, float *dq, float *dk, float *dv, const float *dout, const float *lse,
                      const float *q, const float *k, const float *v);

/* ---- fused softmax cross-entropy ---------------------------------------------------------------- */
/* losses (N): -log softmax(logits[n])[targets[n]], 0 where targets[n] < 0. lse (N) saved.
 * Returns the number of counted rows (targets >= 0). eps in [0, 1): label smoothing, the cross-entropy
 * against (1 - eps) onehot(target) + eps / V (PyTorch's label_smoothing); 0: the plain loss, its bits as
 * before the option. */
int64_t gf_xent_forward(float *losses, float *lse, const float *logits, const int32_t *targets, int64_t N,
                        int64_t V, float eps);
/* In place: logits (N,V) become scale * (softmax - (1 - eps) onehot(target) - eps / V); rows with target < 0
 * become 0. */
void gf_xent_backward(float *logits, const float *lse, const int32_t *targets, int64_t N, int64_t V,
                      float scale, float eps);
/* The loss's backward through a linear head, logits (N, V) = h (N, d) W^T: dh (N, d) += G W and dW (V, d) +=
 * G^T h, with G = gf_xent_backward's gradient (dh or dW NULL: not wanted). Where both products run in bf16,
 * G is rounded to bfloat16 as it is made (the same bits as rounding gf_xent_backward's output) and logits
 * are left as they were; else logits become G. */
void gf_xent_linear_backward(float *dh, float *dW, float *logits, const float *lse, const int32_t *targets,
                             const float *h, const float *W, int64_t N, int64_t d, int64_t V, float scale,
                             float eps);

/* ---- elementwise -------------------------------------------------------------------------------- */
void gf_add(float *out, const float *a, const float *b, int64_t n);   /* out = a + b (out may alias) */
void gf_acc(float *out, const float *a, int64_t n);                  /* out += a */
void gf_zero(float *out, int64_t n);
void gf_copy(float *out, const float *a, int64_t n);
/* out (C) += sum over rows of inp (N, C) with row stride ld. */
void gf_colsum_acc(float *out, const float *inp, int64_t ld, int64_t N, int64_t C);
/* The width of the column blocks that threads own in column sums (gf_colsum_acc, LayerNorm's parameter
 * gradients): GF_COLBLOCK_WIDE where C has as many such blocks as there are threads, else
 * GF_COLBLOCK_NARROW (ops/elementwise.c says why). */
enum { GF_COLBLOCK_WIDE = 64, GF_COLBLOCK_NARROW = 16 };
int64_t gf_colblock_width(int64_t C);

#endif
