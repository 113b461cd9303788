/* The model: input (token embedding or a projection of vectors, plus positions) -> the blocks (one
 * wiring, model/block.c) -> the final LayerNorm -> the head of its task (heads/), forward and backward,
 * over batches with an optional padding mask. The tensors and arenas are in model/params.c; the embedding,
 * a further stack's in_proj and the output (ln_f, the head) in model/wiring.c, which the stream shares. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compute/blas.h"
#include "base/error.h"
#include "base/mem.h"
#include "compute/parallel.h"
#include "base/rng.h"
#include "io/text.h"
#include "model/model_internal.h"
#include "ops/ops.h"

gf_model *gf_model_create(const gf_config *cfg) {
    if (gf_config_validate(cfg, "config") || gf_blas_check_kernel() || gf_blas_fit_address_limit()) return NULL;
    gf_model *m = calloc(1, sizeof *m);
    if (!m) {
        gf_fail("out of memory creating the model");
        return NULL;
    }
    gf_model_set_config(m, cfg);
    if (gf_model_build_params(m)) {
        gf_model_free(m);
        return NULL;
    }
    return m;
}

void gf_model_free(gf_model *m) {
    if (!m) return;
    if (m->step_scratch_free) m->step_scratch_free(m->step_scratch);
    gf_model_free_lowp(m);
    free(m->tensors);
    free(m->init);
    free(m->names);
    gf_free(m->params);
    gf_free(m->grads);
    gf_free(m->acts);
    gf_free(m->pos_table);
    free(m->inputs);
    free(m->targets);
    free(m->mask);
    free(m->segs);
    free(m->src);
    free(m->src_mask);
    gf_free(m->vectors);
    free(m->ovr_cfg);
    free(m);
}

const gf_config *gf_model_config(const gf_model *m) { return &m->cfg; }
const float *gf_model_logits(const gf_model *m) { return m->out; }
size_t gf_model_activation_bytes(const gf_model *m) { return (size_t)m->acts_floats * sizeof(float); }
int64_t gf_model_correct(const gf_model *m) { return m->n_correct; }
int64_t gf_model_n_outputs(const gf_model *m) { return m->head->n_outputs(&m->cfg); }
bool gf_model_predicts_next_token(const gf_model *m) { return m->head->next_token; }

/* The error for a model whose outputs are not next-token logits, where they are needed (`what`). */
int gf_model_require_next_token(const gf_model *m, const char *what) {
    if (m->head->next_token && m->cfg.source_vocab > 0)
        return gf_fail("%s needs a language model; this model is an encoder-decoder, whose decoder reads a source "
                       "besides its own tokens\nHINT: decode it with its task (predict) or gf_model_forward_batch "
                       "with the source in the batch", what);
    if (m->head->next_token) return 0;
    return gf_fail("%s needs a language model (task lm: next-token logits at every position); this model's task "
                   "is %s", what, m->head->name);
}

void gf_model_set_example0(gf_model *m, int64_t e0, int64_t t_stride, int64_t s_stride) {
    m->example0 = e0;
    m->t_stride = t_stride;
    m->s_stride = s_stride;
}

void gf_model_set_training(gf_model *m, bool training, uint64_t dropout_seed, uint64_t step) {
    m->training = training;
    m->dropout_seed = dropout_seed;
    m->step = step;
    if (training && step > 0) gf_model_draw_buffers(m, dropout_seed, step);
}

/* ---------------------------------------------------------------------------------------------- */
/* Activation arena                                                                                */

/* The positions of stack k's sequences when the batch is B x T (and an encoder-decoder's source S): an
 * encoder-decoder's encoder runs over the source, every other stack over T. */
static int64_t seq_len(const gf_config *c, int k, int64_t T, int64_t S) { return c->source_vocab > 0 && k == 0 ? S : T; }
static int64_t stack_T(const gf_model *m, int k) { return seq_len(&m->cfg, k, m->T, m->S); }
static int64_t layer_T(const gf_model *m, int l) { return stack_T(m, gf_layer_stack(&m->cfg, l)); }

/* Whether a layer's mixer reads the input embeddings (gf_mixer_call.emb). */
static bool reads_embeddings(const gf_model *m) {
    for (int l = 0; l < m->n_layers; l++)
        if (gf_mixer_reads_embeddings(m->mixer[l])) return true;
    return false;
}

/* Lay out the arena for (B, T) (and an encoder-decoder's source S) starting at `base` (NULL: only count).
 * Returns the floats needed. */

static int64_t layout(gf_model *m, float *base, int64_t B, int64_t T, int64_t S, int n_threads) {
    const gf_config *c = &m->cfg;
    const int64_t N = B * T, Nmax = B * (S > T ? S : T);
    int64_t off = 0, scratch = 0, cross = 0, dmax = 0, fmax = 0;
#define TAKE(ptr, n)                                                                                       \
    do {                                                                                                   \
        if (base) (ptr) = base + off;                                                                      \
        off += ((n) + 15) / 16 * 16; /* keep every view 64-byte aligned */                                 \
    } while (0)
    int n_slots = 0; /* gradient buffers: as many as the widest block has slots */
    for (int l = 0; l < m->n_layers; l++) {
        const int64_t d = gf_layer_dim(c, l), F = gf_stack_ff(c, gf_layer_stack(c, l));
        const int64_t Tl = seq_len(c, gf_layer_stack(c, l), T, S), N = B * Tl;
        gf_layer_acts *a = &m->la[l];
        for (int k = 1; k < m->block[l]->n_slots - 1; k++) TAKE(a->slot[k], N * d);
        for (int k = 0; k < BLOCK_MAX_LN; k++) {
            TAKE(a->mean[k], N);
            TAKE(a->rstd[k], N);
        }
        TAKE(a->h1, N * F);
        TAKE(a->a, N * F);
        if (m->training) TAKE(a->gk, N * F); /* GELU's kept term: only a training forward has a backward */
        else if (base) a->gk = NULL;
        TAKE(a->mix_saved, m->mixer[l]->saved_floats(c, l, B, Tl));
        int64_t s = m->mixer[l]->scratch_floats(c, l, B, Tl, n_threads);
        scratch = s > scratch ? s : scratch;
        if (gf_mixer_reads_memory(m->mixer[l]) && m->mixer[l]->memory_floats)
            TAKE(a->mem_work, m->mixer[l]->memory_floats(c, l, B, Tl, S));
        if (gf_block_kind_has_cross(m->block[l])) { /* a decoder block: its cross op over the source */
            const block_memory mem = {.B = B, .S = S, .d = c->d_model};
            TAKE(a->cross_saved, gf_block_cross_saved_floats(N, d, &mem, c->cross_heads));
            s = gf_block_cross_scratch_floats(N, d, &mem, c->cross_heads, n_threads);
            cross = s > cross ? s : cross;
        }
        n_slots = m->block[l]->n_slots > n_slots ? m->block[l]->n_slots : n_slots;
    }
    for (int k = 0; k <= c->n_stacks; k++) {
        const int64_t d = gf_stack_dim(c, k), F = gf_stack_ff(c, k);
        TAKE(m->sres[k], (gf_stack_layers(c, k) + 1) * B * seq_len(c, k, T, S) * d);
        dmax = d > dmax ? d : dmax;
        fmax = F > fmax ? F : fmax;
    }
    const int64_t dout = gf_config_out_dim(c);
    TAKE(m->lnf_out, N * dout);
    TAKE(m->lnf_mean, N);
    TAKE(m->lnf_rstd, N);
    if (c->emb_norm) {
        TAKE(m->emb_sum, N * c->d_model);
        TAKE(m->emb_mean, N);
        TAKE(m->emb_rstd, N);
    }
    TAKE(m->out, m->head->out_floats(c, B, T));
    TAKE(m->head_saved, m->head->saved_floats(c, B, T));
    TAKE(m->scratch, scratch);
    if (c->source_vocab > 0) { /* the memory: enc_ln's output (a pre-norm encoder's) and statistics, its gradient */
        if (gf_stack_norm(c, 0) == GF_NORM_PRE) {
            TAKE(m->mem_x, B * S * c->d_model);
            TAKE(m->mem_mean, B * S);
            TAKE(m->mem_rstd, B * S);
        }
        TAKE(m->dmem, B * S * c->d_model);
        TAKE(m->cross_scratch, cross);
    }
    if (reads_embeddings(m)) TAKE(m->demb, N * c->d_model);
    else if (base) m->demb = NULL;
    for (int k = 0; k < (n_slots > 2 ? n_slots : 2); k++) TAKE(m->gbuf[k], Nmax * dmax);
    TAKE(m->dff, Nmax * fmax);
#undef TAKE
    return off;
}

/* Room for a batch's copies: ids, targets, mask, vectors, an encoder-decoder's source. */
static int ensure_batch(gf_model *m, int64_t B, int64_t T, int64_t S) {
    const int64_t N = B * T, nv = m->cfg.input == GF_INPUT_VECTORS ? N * m->cfg.d_input : 0;
    if (N > m->batch_cap) {
        free(m->inputs);
        free(m->targets);
        free(m->mask);
        free(m->segs);
        m->inputs = malloc((size_t)N * sizeof(int32_t));
        m->targets = malloc((size_t)N * sizeof(int32_t));
        m->mask = malloc((size_t)N);
        m->segs = malloc((size_t)N);
        m->batch_cap = (m->inputs && m->targets && m->mask && m->segs) ? N : 0;
        if (!m->batch_cap) return gf_fail("out of memory for a batch of %lld positions", (long long)N);
    }
    const int64_t NS = m->cfg.source_vocab > 0 ? B * S : 0;
    if (NS > m->src_cap) {
        free(m->src);
        free(m->src_mask);
        m->src = malloc((size_t)NS * sizeof(int32_t));
        m->src_mask = malloc((size_t)NS);
        m->src_cap = m->src && m->src_mask ? NS : 0;
        if (!m->src_cap) return gf_fail("out of memory for a batch's source of %lld positions", (long long)NS);
    }
    if (nv > m->vec_cap) {
        gf_free(m->vectors);
        m->vectors = gf_alloc_floats(nv, "input vectors");
        m->vec_cap = m->vectors ? nv : 0;
        if (!m->vectors) return -1;
    }
    return 0;
}

size_t gf_model_forward_bytes(const gf_model *m, int64_t B, int64_t T) {
    /* without a base, layout only counts: it writes nothing into the model (an encoder-decoder's source as
     * long as its target) */
    return (size_t)layout((gf_model *)m, NULL, B, T, T, gf_max_threads()) * sizeof(float);
}

static int ensure_acts(gf_model *m, int64_t B, int64_t T, int64_t S) {
    int n_threads = gf_max_threads();
    int64_t need = layout(m, NULL, B, T, S, n_threads);
    if (need > m->acts_floats) {
        gf_free(m->acts);
        m->acts_floats = 0;
        m->acts = gf_alloc_floats(need, "activations");
        if (!m->acts) {
            gf_fail_context(" (batch %lld x sequence length %lld)", (long long)B, (long long)T);
            return -1;
        }
        m->acts_floats = need;
    }
    layout(m, m->acts, B, T, S, n_threads);
    m->B = B;
    m->T = T;
    m->S = S;
    m->n_threads = n_threads;
    if (ensure_batch(m, B, T, S)) return -1;
    const int64_t rows = S > T ? S : T; /* the rows used, whatever max_len says: cost follows the input */
    if ((m->cfg.pos == GF_POS_SINUSOIDAL || m->cfg.pos == GF_POS_SINUSOIDAL_2D) && m->pos_table_rows < rows) {
        gf_free(m->pos_table);
        m->pos_table = gf_alloc_floats(rows * m->cfg.d_model, "sinusoidal position table");
        m->pos_table_rows = m->pos_table ? rows : 0;
        if (!m->pos_table) return -1;
        for (int64_t p = 0; p < rows; p++) gf_pos_row(&m->cfg, m->pos_table + p * m->cfg.d_model, p);
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* Blocks                                                                                          */

/* Dropout site k of layer l (a kind's `which`: 0 the mixer's and 1 the FFN's in the built-in kinds) draws its
 * masks from (seed, step, layer, k). */
static uint64_t drop_key(const gf_model *m, int layer, int site) {
    return gf_key(gf_key(gf_key(m->dropout_seed, m->step), (uint64_t)layer), (uint64_t)site);
}

/* Layer l's dropout: none in evaluation, and none in a frozen layer below every trainable tensor (a frozen
 * backbone is a fixed feature extractor, as it is in evaluation). */
static float drop_p(const gf_model *m, int l) { return m->training && l >= m->first_grad_layer ? m->cfg.dropout : 0.0f; }

gf_mixer_call gf_model_mixer_call(gf_model *m, int l) {
    const bool source = m->cfg.source_vocab > 0 && gf_layer_stack(&m->cfg, l) == 0; /* an encoder's layer */
    gf_mixer_call c = {
        .cfg = m->ovr_cfg ? m->ovr_cfg : &m->cfg, .layer = l, /* an evaluation-time override (model/override.c) */ .B = m->B, .T = layer_T(m, l), .p = m->lp[l].mix, .g = m->lg[l].mix,
        .saved = m->la[l].mix_saved, .scratch = m->scratch, .n_threads = m->n_threads,
        .bidirectional = gf_stack_direction(&m->cfg, gf_layer_stack(&m->cfg, l)) == GF_BIDIRECTIONAL,
    };
    if (source ? m->has_src_mask : m->has_mask) c.mask = source ? m->src_mask : m->mask;
    if (gf_mixer_reads_memory(m->mixer[l])) { /* a decoder's: the encoder's output (enter_decoder) */
        c.mem = m->memory.x, c.mem_mask = m->memory.mask, c.dmem = m->memory.dx, c.S = m->memory.S;
        c.mem_work = m->la[l].mem_work;
    }
    if (gf_mixer_reads_embeddings(m->mixer[l])) c.emb = m->sres[0], c.demb = m->demb; /* the first layer's input */
    return c;
}

typedef struct {
    gf_model *m;
    int l;
} mix_ctx;

static void mix_forward(void *ctx, float *out, const float *inp) {
    mix_ctx *c = ctx;
    gf_mixer_call mc = gf_model_mixer_call(c->m, c->l);
    c->m->mixer[c->l]->forward(&mc, out, inp);
}

static void mix_backward(void *ctx, float *dinp, const float *dout, const float *inp) {
    mix_ctx *c = ctx;
    gf_mixer_call mc = gf_model_mixer_call(c->m, c->l);
    c->m->mixer[c->l]->backward(&mc, dinp, dout, inp);
}

/* Layer l's block over the current batch: its slots (0 and the last are views of resid), statistics,
 * parameters, gradients, dropout and mixer. */
static block_run layer_run(gf_model *m, int l, mix_ctx *mc) {
    const gf_config *c = &m->cfg;
    const int k = gf_layer_stack(c, l), j = l - gf_stack_first_layer(c, k);
    const int64_t T = stack_T(m, k), N = m->B * T, d = gf_layer_dim(c, l);
    /* the masks' stride: the micro-batch's length (gf_model_set_example0), an encoder-decoder's source's in its
     * encoder */
    const int64_t mb_T = c->source_vocab > 0 && k == 0 ? m->s_stride : m->t_stride, stride = mb_T > T ? mb_T : T;
    gf_layer_acts *a = &m->la[l];
    block_run r = {.kind = m->block[l], .cfg = c, .N = N, .d = d, .F = gf_stack_ff(c, k), .p = &m->lp[l], .g = &m->lg[l],
                   .h1 = a->h1, .act = a->a, .gelu_keep = a->gk, .drop_p = drop_p(m, l), .drop_row = T * d,
                   .drop_stride = stride * d, .mix = mix_forward, .mix_back = mix_backward, .mix_ctx = mc,
                   .n_threads = m->n_threads};
    if (gf_block_kind_has_cross(r.kind)) { /* a decoder block: the encoder's output (enter_decoder) */
        r.mem = &m->memory;
        r.cross_heads = c->cross_heads;
        r.cross_saved = a->cross_saved;
        r.cross_scratch = m->cross_scratch;
    }
    r.drop_base = m->example0 * r.drop_stride;
    for (int k = 1; k < r.kind->n_slots - 1; k++) r.slot[k] = a->slot[k];
    r.slot[0] = m->sres[k] + j * N * d;
    r.slot[r.kind->n_slots - 1] = m->sres[k] + (j + 1) * N * d;
    for (int k = 0; k < BLOCK_MAX_LN; k++) r.mean[k] = a->mean[k], r.rstd[k] = a->rstd[k];
    for (int k = 0; k < BLOCK_MAX_DROP; k++) r.drop_key[k] = drop_key(m, l, k);
    *mc = (mix_ctx){m, l};
    return r;
}

const float *gf_model_mixer_input(gf_model *m, int l) {
    if (!m->have_forward || l < 0 || l >= m->n_layers) return NULL;
    mix_ctx mc;
    const block_run r = layer_run(m, l, &mc);
    for (int i = 0; i < r.kind->n_ops; i++)
        if (r.kind->ops[i].op == BOP_MIX) return r.slot[r.kind->ops[i].in];
    return NULL;
}

/* ---------------------------------------------------------------------------------------------- */
/* Forward                                                                                         */

/* Stack k's output: its last layer's (its input if it has none). */
static float *stack_output(const gf_model *m, int k) {
    return m->sres[k] + gf_stack_layers(&m->cfg, k) * m->B * stack_T(m, k) * gf_stack_dim(&m->cfg, k);
}

const float *gf_model_stack_output(const gf_model *m, int k, int64_t *B, int64_t *T, int64_t *width) {
    if (!m->have_forward || k < 0 || k > m->cfg.n_stacks) return NULL;
    *B = m->B;
    *T = stack_T(m, k);
    *width = gf_stack_dim(&m->cfg, k);
    return stack_output(m, k);
}

const float *gf_model_hidden(const gf_model *m, int64_t *B, int64_t *T, int64_t *width) {
    return gf_model_stack_output(m, m->cfg.n_stacks, B, T, width);
}

bool gf_model_first_stack_fixed(const gf_model *m) {
    return m->cfg.n_stacks > 0 && m->first_grad_layer >= gf_stack_first_layer(&m->cfg, 1);
}

/* h chained with n bytes at p (none if p is NULL: a batch without that field). */
static uint64_t fnv(uint64_t h, const void *p, size_t n) { return p ? gf_hash_bytes(p, n, h) : h; }

uint64_t gf_model_batch_hash(const gf_model *m, const gf_batch *b, uint64_t h) {
    const int64_t N = b->B * b->T, nt = m->head->target_count(b->B, b->T);
    const int64_t shape[2] = {b->B, b->T};
    h = fnv(h, shape, sizeof shape);
    if (m->cfg.input == GF_INPUT_VECTORS) h = fnv(h, b->vectors, (size_t)(N * m->cfg.d_input) * sizeof(float));
    else h = fnv(h, b->ids, (size_t)N * sizeof(int32_t));
    if (m->cfg.segments > 0) h = fnv(h, b->segments, (size_t)N);
    h = fnv(h, b->mask, (size_t)N);
    if (m->cfg.source_vocab > 0) { /* an encoder-decoder's source */
        h = fnv(h, &b->S, sizeof b->S);
        h = fnv(h, b->source, (size_t)(b->B * b->S) * sizeof(int32_t));
        h = fnv(h, b->source_mask, (size_t)(b->B * b->S));
    }
    return fnv(h, b->targets, (size_t)nt * sizeof(int32_t));
}

/* An encoder-decoder's source: present, in range, within learned positions. */
static int check_source(const gf_model *m, const gf_batch *b) {
    const gf_config *c = &m->cfg;
    const int64_t B = b->B, S = b->S;
    if (!b->source || S < 1)
        return gf_fail("forward: this model is an encoder-decoder and the batch has no source (gf_batch.source, "
                       "S >= 1)\nHINT: give each row's source ids and S, the source positions per row");
    if (c->pos == GF_POS_LEARNED && S > c->max_len)
        return gf_fail("forward: source length %lld exceeds max_len %lld of this model (learned positions)\nHINT: "
                       "use sources of at most max_len tokens", (long long)S, (long long)c->max_len);
    for (int64_t i = 0; i < B * S; i++)
        if (b->source[i] < 0 || b->source[i] >= c->source_vocab)
            return gf_fail("forward: source id %d at batch row %lld, position %lld is outside the source vocabulary "
                           "[0, %lld)", b->source[i], (long long)(i / S), (long long)(i % S), (long long)c->source_vocab);
    for (int64_t i = 0; b->source_mask && i < B * S; i++)
        if (b->source_mask[i] > 1)
            return gf_fail("forward: source mask value %d at batch row %lld, position %lld; expected 1 (real) or 0 "
                           "(padding)", b->source_mask[i], (long long)(i / S), (long long)(i % S));
    return 0;
}

/* Every input, target and mask value in range, and the inputs the model reads present. */
static int check_batch(const gf_model *m, const gf_batch *b) {
    const gf_config *c = &m->cfg;
    const int64_t B = b->B, T = b->T, nt = m->head->target_count(B, T), no = m->head->n_outputs(c);
    if (B < 1 || T < 1) return gf_fail("forward: batch %lld x length %lld is empty", (long long)B, (long long)T);
    if (c->pos == GF_POS_LEARNED && T > c->max_len)
        return gf_fail("forward: sequence length %lld exceeds max_len %lld of this model (learned positions)\n"
                       "HINT: use sequences of at most max_len tokens", (long long)T, (long long)c->max_len);
    if (c->input == GF_INPUT_TOKENS ? !b->ids : !b->vectors)
        return gf_fail("forward: this model reads %s, and the batch has none", c->input == GF_INPUT_TOKENS ?
                       "token ids" : "input vectors");
    for (int64_t i = 0; b->ids && c->input == GF_INPUT_TOKENS && i < B * T; i++)
        if (b->ids[i] < 0 || b->ids[i] >= c->vocab_size)
            return gf_fail("forward: token id %d at batch row %lld, position %lld is outside the vocabulary "
                           "[0, %lld)", b->ids[i], (long long)(i / T), (long long)(i % T), (long long)c->vocab_size);
    for (int64_t i = 0; b->targets && i < nt; i++)
        if (b->targets[i] < -1 || b->targets[i] >= no)
            return gf_fail("forward: target id %d at %s %lld is outside [0, %lld) (or -1 to ignore)", b->targets[i],
                           nt == B ? "batch row" : "position", (long long)i, (long long)no);
    for (int l = 0; b->mask && l < m->n_layers; l++)
        if (!m->mixer[l]->masks)
            return gf_fail("forward: the batch is padded (it has a mask) but layer %d's mixer \"%s\" cannot honour "
                           "a padding mask\nHINT: batch sequences of one length, without a mask", l,
                           m->mixer[l]->name);
    for (int64_t i = 0; b->segments && c->segments > 0 && i < B * T; i++)
        if (b->segments[i] >= c->segments)
            return gf_fail("forward: segment %d at batch row %lld, position %lld; this model has %lld token types "
                           "(0 .. %lld)", b->segments[i], (long long)(i / T), (long long)(i % T),
                           (long long)c->segments, (long long)c->segments - 1);
    if (b->features && !gf_model_first_stack_fixed(m))
        return gf_fail("forward: the batch carries the first stack's output (features), but this model's first "
                       "stack %s\nHINT: features are for a model whose first stack is frozen under further stacks",
                       c->n_stacks ? "has trainable tensors" : "is its only one");
    for (int64_t i = 0; b->mask && i < B * T; i++)
        if (b->mask[i] > 1)
            return gf_fail("forward: mask value %d at batch row %lld, position %lld; expected 1 (real) or 0 "
                           "(padding)", b->mask[i], (long long)(i / T), (long long)(i % T));
    return c->source_vocab > 0 ? check_source(m, b) : 0;
}

/* resid[0] = the embedding of the batch (model/wiring.c), the sum kept for emb_ln's backward; an
 * encoder-decoder's: of its source. */
static void embed_forward(gf_model *m) {
    if (m->cfg.source_vocab > 0) {
        const gf_embed_in in = {.ids = m->src, .table = m->src_emb, .B = m->B, .T = m->S,
                                .pos = gf_source_pos_rows(m, 0, m->S, m->pos_table, NULL)};
        gf_embed_rows(m, &in, m->sres[0], NULL, NULL, NULL);
        return;
    }
    const gf_embed_in in = {.ids = m->inputs, .vectors = m->vectors, .segs = m->segs, .B = m->B, .T = m->T,
                            .pos = gf_pos_rows(m, 0, m->T, m->pos_table, NULL)};
    gf_embed_rows(m, &in, m->sres[0], m->emb_sum, m->emb_mean, m->emb_rstd);
}

/* An encoder-decoder at its decoder's first layer: the memory its blocks read (the encoder's output, through
 * enc_ln when it has one) and the decoder's input (the target's embedding). */
static void enter_decoder(gf_model *m) {
    const gf_config *c = &m->cfg;
    const int64_t d = c->d_model;
    const float *enc = stack_output(m, 0);
    if (m->encln_w) {
        gf_layernorm_forward(m->mem_x, m->mem_mean, m->mem_rstd, enc, m->encln_w, m->encln_b, m->B * m->S, d, c->ln_eps);
        enc = m->mem_x;
    }
    m->memory = (block_memory){.x = enc, .mask = m->has_src_mask ? m->src_mask : NULL, .dx = m->dmem, .B = m->B,
                               .S = m->S, .d = d};
    const gf_embed_in in = {.ids = m->inputs, .B = m->B, .T = m->T, .pos = gf_pos_rows(m, 0, m->T, m->pos_table, NULL)};
    gf_embed_rows(m, &in, m->sres[1], NULL, NULL, NULL);
}

static void copy_batch(gf_model *m, const gf_batch *b) {
    const int64_t N = b->B * b->T, nt = m->head->target_count(b->B, b->T);
    if (b->ids && m->cfg.input == GF_INPUT_TOKENS) memcpy(m->inputs, b->ids, (size_t)N * sizeof(int32_t));
    if (m->cfg.input == GF_INPUT_VECTORS)
        memcpy(m->vectors, b->vectors, (size_t)(N * m->cfg.d_input) * sizeof(float));
    if (b->targets) memcpy(m->targets, b->targets, (size_t)nt * sizeof(int32_t));
    m->has_mask = b->mask != NULL;
    if (b->mask) memcpy(m->mask, b->mask, (size_t)N);
    if (b->segments) memcpy(m->segs, b->segments, (size_t)N);
    else memset(m->segs, 0, (size_t)N);
    for (int64_t i = 0; b->mask && b->targets && nt == N && i < N; i++)
        if (!b->mask[i]) m->targets[i] = -1; /* a padded position is never scored */
    m->has_src_mask = m->cfg.source_vocab > 0 && b->source_mask;
    if (m->cfg.source_vocab > 0) memcpy(m->src, b->source, (size_t)(b->B * b->S) * sizeof(int32_t));
    if (m->has_src_mask) memcpy(m->src_mask, b->source_mask, (size_t)(b->B * b->S));
}

static gf_head_call head_call(gf_model *m) {
    gf_head_call h = gf_model_head_call(m, m->B, m->T, m->out);
    h.demb = m->d_tok_emb;
    h.mask = m->has_mask ? m->mask : NULL;
    h.targets = m->have_targets ? m->targets : NULL;
    h.saved = m->head_saved;
    h.segments = m->cfg.segments > 0 ? m->segs : NULL;
    h.label_smoothing = m->head_eps;
    return h;
}

int gf_model_forward_batch(gf_model *m, const gf_batch *b, float *loss) {
    const gf_config *c = &m->cfg;
    m->have_forward = false;
    if (check_batch(m, b) || ensure_acts(m, b->B, b->T, c->source_vocab > 0 ? b->S : 0)) return -1;
    const int64_t N = b->B * b->T;
    copy_batch(m, b);
    if (b->features) /* the first stack's output, computed before: start at the second stack */
        memcpy(stack_output(m, 0), b->features, (size_t)(N * gf_stack_dim(c, 0)) * sizeof(float));
    else
        embed_forward(m);
    for (int l = b->features ? gf_stack_first_layer(c, 1) : 0; l < m->n_layers; l++) {
        const int k = gf_layer_enters_stack(c, l);
        if (k && c->source_vocab > 0) enter_decoder(m);
        else if (k) gf_stack_in_proj(m, k, m->sres[k], stack_output(m, k - 1), N); /* the previous stack's output */
        mix_ctx mc;
        block_run r = layer_run(m, l, &mc);
        gf_block_forward(&r);
    }
    m->have_targets = b->targets != NULL;
    m->head_eps = m->training ? c->label_smoothing : 0.0f; /* backward keeps it, whatever the mode then */
    gf_head_call hc = head_call(m);
    gf_head_result res = {0, 0, -1};
    gf_model_output(m, &hc, stack_output(m, c->n_stacks), m->lnf_out, m->lnf_mean, m->lnf_rstd, &res);
    m->have_forward = true;
    m->n_counted = res.n_counted;
    m->n_correct = res.n_correct;
    if (b->targets && loss) *loss = res.n_counted ? (float)(res.loss_sum / (double)res.n_counted) : NAN;
    return 0;
}

int gf_model_forward(gf_model *m, const int32_t *inputs, const int32_t *targets, int64_t B, int64_t T,
                     float *loss) {
    gf_batch b = {.B = B, .T = T, .ids = inputs, .targets = targets};
    return gf_model_forward_batch(m, &b, loss);
}

/* ---------------------------------------------------------------------------------------------- */
/* Backward                                                                                        */

/* Backward through layer l: on entry m->gbuf[0] holds d(loss)/d(its output), on exit d(loss)/d(its input). */
static void layer_backward(gf_model *m, int l) {
    mix_ctx mc;
    block_run r = layer_run(m, l, &mc);
    const int n = r.kind->n_slots;
    float *G[BLOCK_MAX_SLOTS];
    G[n - 1] = m->gbuf[0];
    for (int k = 0; k < n - 1; k++) G[k] = m->gbuf[k + 1];
    gf_block_backward(&r, G, m->dff);
    for (int k = 0; k < n; k++) m->gbuf[k] = G[k]; /* the same buffers, gbuf[0] now d(loss)/d(input) */
}

/* d(loss)/d(table[ids] + pos rows), dres (B*T rows of d), into the table's and the learned positions'
 * gradients (either NULL: frozen, or no learned positions). */
static void ids_embed_backward(float *demb, float *dpos, const float *dres, const int32_t *ids, int64_t B, int64_t T,
                               int64_t d) {
    if (demb)
        gf_embed_backward(demb, dpos, dres, ids, B, T, d);
    else
        for (int64_t n = 0; dpos && n < B * T; n++)
            for (int64_t k = 0; k < d; k++) dpos[(n % T) * d + k] += dres[n * d + k];
}

/* An encoder-decoder at its decoder's first layer, gbuf[0] holding d(loss)/d(the decoder's input): the target
 * embedding's gradients; then, when the backward goes on into the encoder (further), gbuf[0] becomes
 * d(loss)/d(the encoder's output), taken back from the memory's through enc_ln. */
static void leave_decoder(gf_model *m, bool further) {
    const gf_config *c = &m->cfg;
    const int64_t d = c->d_model, NS = m->B * m->S;
    ids_embed_backward(m->d_tok_emb, c->pos == GF_POS_LEARNED ? m->d_pos_emb : NULL, m->gbuf[0], m->inputs, m->B,
                       m->T, d);
    if (m->encln_w) {
        float *denc = further ? m->gbuf[0] : NULL;
        if (denc) gf_zero(denc, NS * d);
        gf_layernorm_backward(denc, m->d_encln_w, m->d_encln_b, m->dmem, stack_output(m, 0), m->encln_w, m->mem_mean,
                              m->mem_rstd, NS, d);
    } else if (further) {
        gf_copy(m->gbuf[0], m->dmem, NS * d);
    }
}

/* dres: d(loss)/d(resid[0]); with emb_norm it is taken back through emb_ln into scratch (gbuf[1]) first. */
static void embed_backward(gf_model *m, const float *dres) {
    const gf_config *c = &m->cfg;
    const int64_t d = c->d_model;
    if (c->emb_norm) {
        float *dsum = m->gbuf[1];
        gf_zero(dsum, m->B * m->T * d);
        gf_layernorm_backward(dsum, m->d_embln_w, m->d_embln_b, dres, m->emb_sum, m->embln_w, m->emb_mean,
                              m->emb_rstd, m->B * m->T, d);
        dres = dsum;
    }
    if (c->source_vocab > 0) { /* an encoder-decoder: the source's embedding */
        ids_embed_backward(m->d_src_emb, c->pos == GF_POS_LEARNED ? m->d_src_pos : NULL, dres, m->src, m->B, m->S, d);
        return;
    }
    if (c->input == GF_INPUT_TOKENS) {
        ids_embed_backward(m->d_tok_emb, c->pos == GF_POS_LEARNED ? m->d_pos_emb : NULL, dres, m->inputs, m->B, m->T, d);
        for (int64_t n = 0; m->d_seg_emb && n < m->B * m->T; n++)
            for (int64_t k = 0; k < d; k++) m->d_seg_emb[(int64_t)m->segs[n] * d + k] += dres[n * d + k];
        return;
    }
    gf_linear_backward(NULL, 0, m->d_in_w, c->d_input, m->d_in_b, dres, m->vectors, c->d_input, m->in_w, c->d_input,
                       m->B * m->T, c->d_input, d);
    ids_embed_backward(NULL, c->pos == GF_POS_LEARNED ? m->d_pos_emb : NULL, dres, NULL, m->B, m->T, d);
}

/* Through stack k's in_proj: gbuf[0] holds d(loss)/d(its input); its gradients accumulate and, when the
 * backward goes on below (further), gbuf[0] becomes d(loss)/d(the previous stack's output). */
static void stack_input_backward(gf_model *m, int k, bool further) {
    const gf_config *c = &m->cfg;
    const int64_t N = m->B * m->T, din = gf_stack_dim(c, k - 1), d = gf_stack_dim(c, k);
    float *dprev = further ? m->gbuf[1] : NULL;
    if (dprev) gf_zero(dprev, N * din);
    gf_linear_backward(dprev, din, m->d_sp_w[k], din, m->d_sp_b[k], m->gbuf[0], stack_output(m, k - 1), din,
                       m->sp_w[k], din, N, din, d);
    if (dprev) {
        m->gbuf[1] = m->gbuf[0];
        m->gbuf[0] = dprev;
    }
}

int gf_model_backward(gf_model *m) { return gf_model_backward_scaled(m, 1.0f); }

int gf_model_backward_scaled(gf_model *m, float loss_scale) {
    if (m->ovr_cfg)
        return gf_fail("backward: the model has evaluation-time overrides (gf_model_set_override), which a backward "
                       "pass does not follow\nHINT: clear them first: gf_model_set_override(m, NULL, 0)");
    if (!m->have_forward || !m->have_targets)
        return gf_fail("backward: needs a forward pass with targets first (gf_model_forward with targets)");
    if (gf_model_need_grads(m)) return -1;
    const gf_config *c = &m->cfg;
    const int64_t N = m->B * m->T, dout = gf_config_out_dim(c);
    const float scale = m->n_counted ? loss_scale / (float)m->n_counted : 0.0f;
    m->have_forward = false;
    float *dlnf = m->gbuf[1], *dres = m->gbuf[0];
    gf_zero(dlnf, N * dout);
    gf_head_call hc = head_call(m);
    m->head->backward(&hc, m->lnf_out, dlnf, scale);
    gf_zero(dres, N * dout);
    gf_layernorm_backward(dres, m->d_lnf_w, m->d_lnf_b, dlnf, stack_output(m, c->n_stacks), m->lnf_w, m->lnf_mean,
                          m->lnf_rstd, N, dout);
    if (c->source_vocab > 0) gf_zero(m->dmem, m->B * m->S * c->d_model); /* the decoder's blocks add into it */
    if (m->demb) gf_zero(m->demb, N * c->d_model);                         /* so do mixers that read embeddings */
    for (int l = m->n_layers - 1; l >= m->first_grad_layer; l--) {
        layer_backward(m, l);
        const int k = gf_layer_enters_stack(c, l);
        if (k && c->source_vocab > 0) leave_decoder(m, l > m->first_grad_layer);
        else if (k) stack_input_backward(m, k, l > m->first_grad_layer);
    }
    if (m->first_grad_layer == 0 && m->demb) gf_acc(m->gbuf[0], m->demb, N * c->d_model);
    if (m->first_grad_layer == 0) embed_backward(m, m->gbuf[0]);
    return 0;
}
