/* The block kinds (model/block.h): their programs and the tensors those use; the one interpreter of each
 * direction. */
#include "model/block.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "ops/ops.h"

/* The tensors of the three kinds below, in checkpoint order: ln1, the mixer's, ln2, the FFN. */
static const block_tensor LN_MIX_LN_FFN[] = {
    BLOCK_TENSORS_LN("ln1", 0), BLOCK_TENSORS_MIX, BLOCK_TENSORS_LN("ln2", 1), BLOCK_TENSORS_FFN,
};
enum { N_LN_MIX_LN_FFN = (int)(sizeof LN_MIX_LN_FFN / sizeof LN_MIX_LN_FFN[0]) };

/* slots of pre: 0 h | 1 ln1 | 2 mix (dropped in place) | 3 x | 4 ln2 | 5 ffn (dropped in place) | 6 out */
static const block_kind PRE = {"pre", 7, 8, {
    {BOP_LN, 0, 0, 1, 0}, {BOP_MIX, 1, 0, 2, 0}, {BOP_DROP, 2, 0, 2, 0}, {BOP_ADD, 0, 2, 3, 0},
    {BOP_LN, 3, 0, 4, 1}, {BOP_FFN, 4, 0, 5, 0}, {BOP_DROP, 5, 0, 5, 1}, {BOP_ADD, 3, 5, 6, 0},
}, N_LN_MIX_LN_FFN, LN_MIX_LN_FFN};
/* post-gated: 0 h | 1 mix | 2 x = ln1(mix), dropped in place | 3 ffn (dropped in place) | 4 sum | 5 out */
static const block_kind POST_GATED = {"post-gated", 6, 7, {
    {BOP_MIX, 0, 0, 1, 0}, {BOP_LN, 1, 0, 2, 0}, {BOP_DROP, 2, 0, 2, 0}, {BOP_FFN, 2, 0, 3, 0},
    {BOP_DROP, 3, 0, 3, 1}, {BOP_ADD, 2, 3, 4, 0}, {BOP_LN, 4, 0, 5, 1},
}, N_LN_MIX_LN_FFN, LN_MIX_LN_FFN};
/* post-residual: 0 h | 1 mix (dropped in place) | 2 sum1 | 3 x | 4 ffn (dropped in place) | 5 sum2 | 6 out */
static const block_kind POST_RESIDUAL = {"post-residual", 7, 8, {
    {BOP_MIX, 0, 0, 1, 0}, {BOP_DROP, 1, 0, 1, 0}, {BOP_ADD, 0, 1, 2, 0}, {BOP_LN, 2, 0, 3, 0},
    {BOP_FFN, 3, 0, 4, 0}, {BOP_DROP, 4, 0, 4, 1}, {BOP_ADD, 3, 4, 5, 0}, {BOP_LN, 5, 0, 6, 1},
}, N_LN_MIX_LN_FFN, LN_MIX_LN_FFN};

/* pre-mix-norm (alphaXiv's reproduction of the paper: a LayerNorm on the mixer's output, inside the residual):
 * x = h + Drop(ln3(mix(ln1(h)))); out = x + Drop(FFN(ln2(x))). Its tensors: ln1, the mixer's, ln2, ln3, the FFN.
 * slots: 0 h | 1 ln1 | 2 mix | 3 ln3 (dropped in place) | 4 x | 5 ln2 | 6 ffn (dropped in place) | 7 out */
static const block_tensor PRE_MIX_NORM_TENSORS[] = {
    BLOCK_TENSORS_LN("ln1", 0), BLOCK_TENSORS_MIX, BLOCK_TENSORS_LN("ln2", 1), BLOCK_TENSORS_LN("ln3", 2),
    BLOCK_TENSORS_FFN,
};
static const block_kind PRE_MIX_NORM = {"pre-mix-norm", 8, 9, {
    {BOP_LN, 0, 0, 1, 0}, {BOP_MIX, 1, 0, 2, 0}, {BOP_LN, 2, 0, 3, 2}, {BOP_DROP, 3, 0, 3, 0},
    {BOP_ADD, 0, 3, 4, 0}, {BOP_LN, 4, 0, 5, 1}, {BOP_FFN, 5, 0, 6, 0}, {BOP_DROP, 6, 0, 6, 1},
    {BOP_ADD, 4, 6, 7, 0},
}, (int)(sizeof PRE_MIX_NORM_TENSORS / sizeof PRE_MIX_NORM_TENSORS[0]), PRE_MIX_NORM_TENSORS};

/* An encoder-decoder's decoder blocks (docs/model.md, "Encoder-decoders"): between the self-mixing and the FFN,
 * a cross op attends to the encoder's output (BOP_CROSS). Their tensors: ln1, the mixer's, ln2, the cross op's,
 * ln3, the FFN. The three dropout sites: the mixer's, the cross op's, the FFN's. */
static const block_tensor DECODER_TENSORS[] = {
    BLOCK_TENSORS_LN("ln1", 0), BLOCK_TENSORS_MIX,   BLOCK_TENSORS_LN("ln2", 1),
    BLOCK_TENSORS_CROSS,        BLOCK_TENSORS_LN("ln3", 2), BLOCK_TENSORS_FFN,
};
enum { N_DECODER_TENSORS = (int)(sizeof DECODER_TENSORS / sizeof DECODER_TENSORS[0]) };

/* decoder-pre (torch.nn.TransformerDecoderLayer with norm_first): x = h + Drop(mix(ln1(h)));
 * y = x + Drop(cross(ln2(x))); out = y + Drop(FFN(ln3(y))).
 * slots: 0 h | 1 ln1 | 2 mix | 3 x | 4 ln2 | 5 cross | 6 y | 7 ln3 | 8 ffn | 9 out */
static const block_kind DECODER_PRE = {"decoder-pre", 10, 12, {
    {BOP_LN, 0, 0, 1, 0}, {BOP_MIX, 1, 0, 2, 0}, {BOP_DROP, 2, 0, 2, 0}, {BOP_ADD, 0, 2, 3, 0},
    {BOP_LN, 3, 0, 4, 1}, {BOP_CROSS, 4, 0, 5, 0}, {BOP_DROP, 5, 0, 5, 1}, {BOP_ADD, 3, 5, 6, 0},
    {BOP_LN, 6, 0, 7, 2}, {BOP_FFN, 7, 0, 8, 0}, {BOP_DROP, 8, 0, 8, 2}, {BOP_ADD, 6, 8, 9, 0},
}, N_DECODER_TENSORS, DECODER_TENSORS};
/* decoder-post (the post-norm Transformer's decoder layer): x = ln1(h + Drop(mix(h))); y = ln2(x + Drop(cross(x)));
 * out = ln3(y + Drop(FFN(y))).  slots: 0 h | 1 mix | 2 sum1 | 3 x | 4 cross | 5 sum2 | 6 y | 7 ffn | 8 sum3 | 9 out */
static const block_kind DECODER_POST = {"decoder-post", 10, 12, {
    {BOP_MIX, 0, 0, 1, 0}, {BOP_DROP, 1, 0, 1, 0}, {BOP_ADD, 0, 1, 2, 0}, {BOP_LN, 2, 0, 3, 0},
    {BOP_CROSS, 3, 0, 4, 0}, {BOP_DROP, 4, 0, 4, 1}, {BOP_ADD, 3, 4, 5, 0}, {BOP_LN, 5, 0, 6, 1},
    {BOP_FFN, 6, 0, 7, 0}, {BOP_DROP, 7, 0, 7, 2}, {BOP_ADD, 6, 7, 8, 0}, {BOP_LN, 8, 0, 9, 2},
}, N_DECODER_TENSORS, DECODER_TENSORS};
/* decoder-post-gated (the paper's Grassmann block, a cross op added): x = Drop(ln1(mix(h)));
 * y = ln2(x + Drop(cross(x))); out = ln3(y + Drop(FFN(y))).
 * slots: 0 h | 1 mix | 2 x | 3 cross | 4 sum | 5 y | 6 ffn | 7 sum | 8 out */
static const block_kind DECODER_POST_GATED = {"decoder-post-gated", 9, 11, {
    {BOP_MIX, 0, 0, 1, 0}, {BOP_LN, 1, 0, 2, 0}, {BOP_DROP, 2, 0, 2, 0}, {BOP_CROSS, 2, 0, 3, 0},
    {BOP_DROP, 3, 0, 3, 1}, {BOP_ADD, 2, 3, 4, 0}, {BOP_LN, 4, 0, 5, 1}, {BOP_FFN, 5, 0, 6, 0},
    {BOP_DROP, 6, 0, 6, 2}, {BOP_ADD, 5, 6, 7, 0}, {BOP_LN, 7, 0, 8, 2},
}, N_DECODER_TENSORS, DECODER_TENSORS};

enum { MAX_KINDS = 16 };
static const block_kind *g_kinds[MAX_KINDS] = {&PRE, &POST_GATED, &POST_RESIDUAL, &PRE_MIX_NORM, &DECODER_PRE,
                                                &DECODER_POST, &DECODER_POST_GATED};
static int g_n_kinds = 7;

const block_kind *gf_block_kind_find(const char *name) {
    for (int i = 0; name && i < g_n_kinds; i++)
        if (!strcmp(g_kinds[i]->name, name)) return g_kinds[i];
    return NULL;
}

void gf_block_kind_names(char *buf, size_t n) {
    buf[0] = '\0';
    for (int i = 0; i < g_n_kinds && strlen(buf) + 1 < n; i++)
        snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", i ? ", " : "", g_kinds[i]->name);
}

const block_kind *gf_block_kind_for(gf_norm norm, const gf_mixer_ops *mixer, const char *name, bool decoder) {
    if (name && name[0]) return gf_block_kind_find(name);
    decoder = decoder && !gf_mixer_reads_memory(mixer); /* a mixer that reads the memory needs no cross op */
    if (norm == GF_NORM_PRE) return decoder ? &DECODER_PRE : &PRE;
    if (mixer->gated_skip) return decoder ? &DECODER_POST_GATED : &POST_GATED;
    return decoder ? &DECODER_POST : &POST_RESIDUAL;
}

bool gf_block_kind_has_cross(const block_kind *k) {
    for (int i = 0; i < k->n_ops; i++)
        if (k->ops[i].op == BOP_CROSS) return true;
    return false;
}

/* Whether op o of a kind of n slots reads and writes slots in range, and its LayerNorm or dropout site. */
static bool op_ok(const block_op *o, int n) {
    const bool two = o->op == BOP_ADD;
    if (o->in < 0 || o->in >= n || o->out < 1 || o->out >= n || (two && (o->in2 < 0 || o->in2 >= n))) return false;
    if (o->op == BOP_LN) return o->which >= 0 && o->which < BLOCK_MAX_LN;
    if (o->op == BOP_DROP) return o->which >= 0 && o->which < BLOCK_MAX_DROP;
    return o->op >= BOP_LN && o->op <= BOP_CROSS;
}

int gf_block_kind_register(const block_kind *k) {
    if (!k || !k->name || !k->name[0] || strlen(k->name) > 31 || strspn(k->name, "abcdefghijklmnopqrstuvwxyz0123456789_-") != strlen(k->name))
        return gf_fail("gf_block_kind_register: a kind needs a name of 1 to 31 characters of a-z, 0-9, _ and -");
    if (gf_block_kind_find(k->name)) return gf_fail("gf_block_kind_register: a block kind called %s exists already", k->name);
    if (g_n_kinds == MAX_KINDS) return gf_fail("gf_block_kind_register: %d kinds at most", MAX_KINDS);
    if (k->n_slots < 2 || k->n_slots > BLOCK_MAX_SLOTS || k->n_ops < 1 || k->n_ops > BLOCK_MAX_OPS || k->n_tensors < 0 ||
        (k->n_tensors && !k->tensors))
        return gf_fail("gf_block_kind_register: kind %s: %d slots (2 to %d), %d ops (1 to %d), %d tensors", k->name,
                       k->n_slots, BLOCK_MAX_SLOTS, k->n_ops, BLOCK_MAX_OPS, k->n_tensors);
    bool last = false;
    for (int i = 0; i < k->n_ops; i++) {
        if (!op_ok(&k->ops[i], k->n_slots))
            return gf_fail("gf_block_kind_register: kind %s: op %d reads or writes a slot, LayerNorm or dropout site out "
                           "of range", k->name, i);
        last |= k->ops[i].out == k->n_slots - 1;
    }
    if (!last) return gf_fail("gf_block_kind_register: kind %s: no op writes its output (slot %d)", k->name, k->n_slots - 1);
    g_kinds[g_n_kinds++] = k;
    return 0;
}

static void ffn_forward(const block_run *r, float *out, const float *inp) {
    const int64_t N = r->N, d = r->d, F = r->F;
    const gf_layer_params *p = r->p;
    gf_linear_forward(r->h1, inp, d, p->fc1_w, d, p->fc1_b, N, d, F, 0.0f);
    if (r->gelu_keep) gf_gelu_forward_keep(r->act, r->gelu_keep, r->h1, N * F, r->cfg->gelu);
    else gf_gelu_forward(r->act, r->h1, N * F, r->cfg->gelu);
    gf_linear_forward(out, r->act, F, p->fc2_w, F, p->fc2_b, N, F, d, 0.0f);
}

static void ffn_backward(const block_run *r, float *dinp, const float *dout, const float *inp, float *dff) {
    const int64_t N = r->N, d = r->d, F = r->F;
    const gf_layer_params *p = r->p, *g = r->g;
    gf_linear_backward_set(dff, g->fc2_w, F, g->fc2_b, dout, r->act, F, p->fc2_w, F, N, F, d);
    if (r->gelu_keep) gf_gelu_backward_kept(dff, r->h1, r->gelu_keep, dff, N * F, r->cfg->gelu);
    else gf_gelu_backward(dff, r->h1, dff, N * F, r->cfg->gelu); /* a run that kept nothing (tests/unit/test_two_input.c) */
    gf_linear_backward(dinp, d, g->fc1_w, d, g->fc1_b, dff, inp, d, p->fc1_w, d, N, d, F);
}

/* The cross op (BOP_CROSS). saved: q (N,d) | k, v (B*S, d) each | o (N,d) | lse (B,H,T); scratch: the
 * attention's | dO (N,d) | dq (N,d) | dk, dv (B*S, d) each. */
int64_t gf_block_cross_saved_floats(int64_t N, int64_t d, const block_memory *mem, int64_t H) {
    return 2 * N * d + 2 * mem->B * mem->S * d + (H > 0 ? H : 1) * N;
}

static int64_t cross_dh(int64_t d, int64_t H) { return d / (H > 0 ? H : 1); }

int64_t gf_block_cross_scratch_floats(int64_t N, int64_t d, const block_memory *mem, int64_t H, int n_threads) {
    return gf_sdpa_scratch_floats(mem->S, cross_dh(d, H), n_threads) + 2 * N * d + 2 * mem->B * mem->S * d;
}

static gf_sdpa cross_sdpa(const block_run *r) {
    const block_memory *mem = r->mem;
    gf_sdpa a = {.B = mem->B, .T = r->N / mem->B, .S = mem->S, .H = r->cross_heads > 0 ? r->cross_heads : 1,
                 .d = r->d, .kmask = mem->mask, .scratch = r->cross_scratch, .n_threads = r->n_threads};
    return a;
}

void gf_block_cross_keys(const gf_layer_params *p, const block_memory *mem, int64_t d, float *kv) {
    const int64_t M = mem->B * mem->S, dm = mem->d;
    gf_linear_forward(kv, mem->x, dm, p->ck_w, dm, p->ck_b, M, dm, d, 0.0f);
    gf_linear_forward(kv + M * d, mem->x, dm, p->cv_w, dm, p->cv_b, M, dm, d, 0.0f);
}

/* out (N,d) = out-projection of attention(q(inp), k(mem), v(mem)) */
static void cross_forward(const block_run *r, float *out, const float *inp) {
    const block_memory *mem = r->mem;
    const gf_layer_params *p = r->p;
    const int64_t N = r->N, d = r->d, M = mem->B * mem->S;
    float *q = r->cross_saved, *kv = q + N * d, *o = kv + 2 * M * d, *lse = o + N * d;
    gf_linear_forward(q, inp, d, p->cq_w, d, p->cq_b, N, d, d, 0.0f);
    if (!r->cross_kv) gf_block_cross_keys(p, mem, d, kv);
    const float *k = r->cross_kv ? r->cross_kv : kv, *v = k + M * d; /* a stream's: once per source */
    const gf_sdpa a = cross_sdpa(r);
    gf_sdpa_forward(&a, o, lse, q, k, v);
    gf_linear_forward(out, o, d, p->co_w, d, p->co_b, N, d, d, 0.0f);
}

/* dinp (N,d) and mem->dx (when wanted) += their gradients; the cross tensors' gradients accumulate. */
static void cross_backward(const block_run *r, float *dinp, const float *dout, const float *inp) {
    const block_memory *mem = r->mem;
    const gf_layer_params *p = r->p, *g = r->g;
    const int64_t N = r->N, d = r->d, M = mem->B * mem->S, dm = mem->d;
    const float *q = r->cross_saved, *k = q + N * d, *v = k + M * d, *o = v + M * d, *lse = o + N * d;
    float *dO = r->cross_scratch + gf_sdpa_scratch_floats(mem->S, cross_dh(d, r->cross_heads), r->n_threads), *dq = dO + N * d, *dk = dq + N * d,
          *dv = dk + M * d;
    gf_zero(dO, 2 * N * d + 2 * M * d); /* dO, dq, dk, dv */
    gf_linear_backward(dO, d, g->co_w, d, g->co_b, dout, o, d, p->co_w, d, N, d, d);
    const gf_sdpa a = cross_sdpa(r);
    gf_sdpa_backward(&a, dq, dk, dv, dO, lse, q, k, v);
    gf_linear_backward(dinp, d, g->cq_w, d, g->cq_b, dq, inp, d, p->cq_w, d, N, d, d);
    gf_linear_backward(mem->dx, dm, g->ck_w, dm, g->ck_b, dk, mem->x, dm, p->ck_w, dm, M, dm, d);
    gf_linear_backward(mem->dx, dm, g->cv_w, dm, g->cv_b, dv, mem->x, dm, p->cv_w, dm, M, dm, d);
}

void gf_block_forward(const block_run *r) {
    const int64_t d = r->d, Nd = r->N * d;
    float *const *S = r->slot;
    for (int i = 0; i < r->kind->n_ops; i++) {
        const block_op *o = &r->kind->ops[i];
        switch (o->op) {
        case BOP_LN:
            gf_layernorm_forward(S[o->out], r->mean[o->which], r->rstd[o->which], S[o->in], r->p->ln_w[o->which],
                                 r->p->ln_b[o->which], r->N, d, r->cfg->ln_eps);
            break;
        case BOP_MIX: r->mix(r->mix_ctx, S[o->out], S[o->in]); break;
        case BOP_FFN: ffn_forward(r, S[o->out], S[o->in]); break;
        case BOP_DROP: gf_dropout_forward_at(S[o->out], S[o->in], Nd, r->drop_p, r->drop_key[o->which], r->drop_base, r->drop_row, r->drop_stride); break;
        case BOP_ADD: gf_add(S[o->out], S[o->in], S[o->in2], Nd); break;
        case BOP_CROSS: cross_forward(r, S[o->out], S[o->in]); break;
        }
    }
}

/* The backward keeps, per slot, whether its gradient buffer holds anything yet (live). A gradient that
 * is complete and read by one consumer only is handed on by swapping buffers; a dead buffer is zeroed
 * only when an op accumulates into it. */
typedef struct {
    float **G;
    bool live[BLOCK_MAX_SLOTS];
    int64_t n;
} grads;

static void ensure(grads *g, int s) {
    if (!g->live[s]) gf_zero(g->G[s], g->n);
    g->live[s] = true;
}

/* G[dst] += G[src], where G[src] is read by nothing else afterwards: a swap when G[dst] is empty. */
static void hand_on(grads *g, int dst, int src) {
    if (g->live[dst]) {
        gf_acc(g->G[dst], g->G[src], g->n);
    } else {
        float *t = g->G[dst];
        g->G[dst] = g->G[src];
        g->G[src] = t;
        g->live[dst] = true;
    }
    g->live[src] = false;
}

static void add_into(grads *g, int dst, int src) {
    if (g->live[dst]) gf_acc(g->G[dst], g->G[src], g->n);
    else gf_copy(g->G[dst], g->G[src], g->n);
    g->live[dst] = true;
}

static void op_backward(const block_run *r, const block_op *o, grads *g, float *dff) {
    const int64_t d = r->d;
    float *const *S = r->slot, **G = g->G;
    switch (o->op) {
    case BOP_ADD:
        add_into(g, o->in2, o->out);
        hand_on(g, o->in, o->out);
        break;
    case BOP_DROP:
        if (o->in == o->out) { /* in place: d(in) = mask * d(out) / (1 - p), which is the forward map */
            gf_dropout_forward_at(G[o->out], G[o->out], g->n, r->drop_p, r->drop_key[o->which], r->drop_base, r->drop_row, r->drop_stride);
        } else {
            ensure(g, o->in);
            gf_dropout_backward_at(G[o->in], G[o->out], g->n, r->drop_p, r->drop_key[o->which], r->drop_base, r->drop_row, r->drop_stride);
        }
        break;
    case BOP_LN:
        ensure(g, o->in);
        gf_layernorm_backward(G[o->in], r->g->ln_w[o->which], r->g->ln_b[o->which], G[o->out], S[o->in],
                              r->p->ln_w[o->which], r->mean[o->which], r->rstd[o->which], r->N, d);
        break;
    case BOP_MIX:
        ensure(g, o->in);
        r->mix_back(r->mix_ctx, G[o->in], G[o->out], S[o->in]);
        break;
    case BOP_FFN:
        ensure(g, o->in);
        ffn_backward(r, G[o->in], G[o->out], S[o->in], dff);
        break;
    case BOP_CROSS:
        ensure(g, o->in);
        cross_backward(r, G[o->in], G[o->out], S[o->in]);
        break;
    }
}

void gf_block_backward(const block_run *r, float **G, float *dff) {
    grads g = {.G = G, .n = r->N * r->d};
    const int last = r->kind->n_slots - 1;
    g.live[last] = true;
    for (int i = r->kind->n_ops - 1; i >= 0; i--) {
        const block_op *o = &r->kind->ops[i];
        if (g.live[o->out]) op_backward(r, o, &g, dff); /* else d(out) is 0: nothing flows */
    }
    ensure(&g, 0);
}
