/* The block kinds (model/block.h): their programs and the tensors those use; the one interpreter of each
 * direction. */
#include "model/block.h"

#include <stddef.h>

#include "ops/ops.h"

/* The tensors of the three kinds below, in checkpoint order: ln1, the mixer's, ln2, the FFN. */
#define LN(nm, fw, fb)                                                                                      \
    {nm ".weight", false, 1, {BDIM_D, BDIM_D}, GF_INIT_ONE, false, offsetof(gf_layer_params, fw)},           \
    {nm ".bias", false, 1, {BDIM_D, BDIM_D}, GF_INIT_ZERO, false, offsetof(gf_layer_params, fb)}
static const block_tensor LN_MIX_LN_FFN[] = {
    LN("ln1", ln1_w, ln1_b),
    {"mix.", true, 0, {BDIM_D, BDIM_D}, GF_INIT_NORMAL, false, offsetof(gf_layer_params, mix)},
    LN("ln2", ln2_w, ln2_b),
    {"ffn.fc1.weight", false, 2, {BDIM_FF, BDIM_D}, GF_INIT_NORMAL, true, offsetof(gf_layer_params, fc1_w)},
    {"ffn.fc1.bias", false, 1, {BDIM_FF, BDIM_D}, GF_INIT_ZERO, false, offsetof(gf_layer_params, fc1_b)},
    {"ffn.fc2.weight", false, 2, {BDIM_D, BDIM_FF}, GF_INIT_NORMAL, true, offsetof(gf_layer_params, fc2_w)},
    {"ffn.fc2.bias", false, 1, {BDIM_D, BDIM_D}, GF_INIT_ZERO, false, offsetof(gf_layer_params, fc2_b)},
};
#undef LN
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

const block_kind *block_kind_for(gf_norm norm, const gf_mixer_ops *mixer) {
    if (norm == GF_NORM_PRE) return &PRE;
    return mixer->gated_skip ? &POST_GATED : &POST_RESIDUAL;
}

static void ffn_forward(const block_run *r, float *out, const float *inp) {
    const int64_t N = r->N, d = r->d, F = r->F;
    const gf_layer_params *p = r->p;
    gf_linear_forward(r->h1, inp, d, p->fc1_w, d, p->fc1_b, N, d, F, 0.0f);
    gf_gelu_forward(r->act, r->h1, N * F, r->cfg->gelu);
    gf_linear_forward(out, r->act, F, p->fc2_w, F, p->fc2_b, N, F, d, 0.0f);
}

static void ffn_backward(const block_run *r, float *dinp, const float *dout, const float *inp, float *dff) {
    const int64_t N = r->N, d = r->d, F = r->F;
    const gf_layer_params *p = r->p, *g = r->g;
    gf_zero(dff, N * F);
    gf_linear_backward(dff, F, g->fc2_w, F, g->fc2_b, dout, r->act, F, p->fc2_w, F, N, F, d);
    gf_gelu_backward(dff, r->h1, dff, N * F, r->cfg->gelu);
    gf_linear_backward(dinp, d, g->fc1_w, d, g->fc1_b, dff, inp, d, p->fc1_w, d, N, d, F);
}

void block_forward(const block_run *r) {
    const int64_t d = r->d, Nd = r->N * d;
    float *const *S = r->slot;
    for (int i = 0; i < r->kind->n_ops; i++) {
        const block_op *o = &r->kind->ops[i];
        switch (o->op) {
        case BOP_LN:
            gf_layernorm_forward(S[o->out], r->mean[o->which], r->rstd[o->which], S[o->in],
                                 o->which ? r->p->ln2_w : r->p->ln1_w, o->which ? r->p->ln2_b : r->p->ln1_b, r->N, d, r->cfg->ln_eps);
            break;
        case BOP_MIX: r->mix(r->mix_ctx, S[o->out], S[o->in]); break;
        case BOP_FFN: ffn_forward(r, S[o->out], S[o->in]); break;
        case BOP_DROP: gf_dropout_forward(S[o->out], S[o->in], Nd, r->drop_p, r->drop_key[o->which]); break;
        case BOP_ADD: gf_add(S[o->out], S[o->in], S[o->in2], Nd); break;
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
    const float *w = o->which ? r->p->ln2_w : r->p->ln1_w;
    switch (o->op) {
    case BOP_ADD:
        add_into(g, o->in2, o->out);
        hand_on(g, o->in, o->out);
        break;
    case BOP_DROP:
        if (o->in == o->out) { /* in place: d(in) = mask * d(out) / (1 - p), which is the forward map */
            gf_dropout_forward(G[o->out], G[o->out], g->n, r->drop_p, r->drop_key[o->which]);
        } else {
            ensure(g, o->in);
            gf_dropout_backward(G[o->in], G[o->out], g->n, r->drop_p, r->drop_key[o->which]);
        }
        break;
    case BOP_LN:
        ensure(g, o->in);
        gf_layernorm_backward(G[o->in], o->which ? r->g->ln2_w : r->g->ln1_w, o->which ? r->g->ln2_b : r->g->ln1_b,
                              G[o->out], S[o->in], w, r->mean[o->which], r->rstd[o->which], r->N, d);
        break;
    case BOP_MIX:
        ensure(g, o->in);
        r->mix_back(r->mix_ctx, G[o->in], G[o->out], S[o->in]);
        break;
    case BOP_FFN:
        ensure(g, o->in);
        ffn_backward(r, G[o->in], G[o->out], S[o->in], dff);
        break;
    }
}

void block_backward(const block_run *r, float **G, float *dff) {
    grads g = {.G = G, .n = r->N * r->d};
    const int last = r->kind->n_slots - 1;
    g.live[last] = true;
    for (int i = r->kind->n_ops - 1; i >= 0; i--) {
        const block_op *o = &r->kind->ops[i];
        if (g.live[o->out]) op_backward(r, o, &g, dff); /* else d(out) is 0: nothing flows */
    }
    ensure(&g, 0);
}
