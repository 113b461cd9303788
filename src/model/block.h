/* Blocks, wired once. A block kind is a short program over slots (N x d activations, N = B*T rows): slot 0
 * is the block's input, the last slot its output. One interpreter runs it forward (a batch, or one token of
 * a stream: the mixer's forward or its step), one runs it backward. A kind also lists the tensors its ops
 * use (name, shape in d, d_ff and d_mem, init, decay, the gf_layer_params field), and model/params.c
 * declares each layer's tensors from that list, so a block's program and its parameters are written in one
 * place.
 *
 * The kinds (a table: block.c's built-in ones, and those added with gf_block_kind_register), chosen per layer by
 * name (a layer's "block" in a config), or by default by its stack's norm and its mixer:
 *
 *   pre            x = h + Drop(mix(ln1(h)));       out = x + Drop(FFN(ln2(x)))
 *   post-gated     x = Drop(ln1(mix(h)));            out = ln2(x + Drop(FFN(x)))   (the paper's Grassmann
 *                                                                                  block: the gate is the skip)
 *   post-residual  x = ln1(h + Drop(mix(h)));        out = ln2(x + Drop(FFN(x)))   (post-norm Transformer)
 *
 * A kind names up to BLOCK_MAX_LN LayerNorms ("ln1".."ln3", op `which` 0..2) and BLOCK_MAX_DROP dropout sites
 * (each its own masks); a new kind is a program and a tensor list, one entry of the table.
 *
 * A second input. BOP_CROSS reads, besides its slot, a run's memory (block_memory): a second sequence of
 * S positions per batch row, d_mem wide, with its own padding mask, e.g. an encoder's output. It is
 * multi-head cross-attention (queries from the slot, keys and values from the memory: ops/sdpa.c), its
 * tensors "cross.{q,k,v,out}.{weight,bias}" under the block's prefix (BLOCK_TENSORS_CROSS), and its backward
 * accumulates into the memory's gradient as well, so an encoder under it trains. A kind with a cross op is
 * a program over these ops and a list of these tensors; tests/unit/test_two_input.c builds one (pre-norm:
 * x = h + cross(ln1(h), memory); out = x + FFN(ln2(x))) and holds it to a reference. An encoder-decoder
 * (gf_config.source_vocab > 0) gives its decoder layers the encoder's output as their memory, and their kinds
 * (decoder-pre, decoder-post, decoder-post-gated) have a cross op each. The stream (infer/stream.c) has no
 * memory of its own: gf_model_decode streams a decoder over cached keys (infer/source_memory.c). */
#ifndef GF_MODEL_BLOCK_H
#define GF_MODEL_BLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grassflow_plugin.h"
#include "mixers/mixer.h"

enum { BLOCK_MAX_OPS = 12, BLOCK_MAX_SLOTS = 10, BLOCK_MAX_LN = 3, BLOCK_MAX_DROP = 3 };

typedef enum {
    BOP_LN,   /* out = LayerNorm_which(in)   which: 0 = ln1, 1 = ln2, 2 = ln3 (< BLOCK_MAX_LN) */
    BOP_MIX,  /* out = mixer(in) */
    BOP_FFN,  /* out = fc2(GELU(fc1(in))) */
    BOP_DROP, /* out = Dropout_which(in), which = its site (< BLOCK_MAX_DROP: each site its own masks); in ==
               * out: in place (the slot's value before the dropout then has no other reader) */
    BOP_ADD,  /* out = in + in2 */
    BOP_CROSS, /* out = cross(in, memory): attention from the slot's rows to the run's memory (block_run.mem,
                * which a run of a kind with this op must have); one per kind (its tensors cq_w .. co_b) */
} block_op_kind;

typedef struct {
    block_op_kind op;
    int8_t in, in2, out, which;
} block_op;

/* A size of a block's tensor, in terms of its layer: d (the layer's width), d_ff (its FFN's hidden width) or
 * d_mem (the width of the memory a cross op reads). */
typedef enum { BDIM_D, BDIM_FF, BDIM_MEM } block_dim;

/* A tensor a block kind uses, as model/params.c declares it: its name after the layer's prefix
 * ("blocks.J."), its shape (rows, and cols when ndim is 2), its initialisation, whether AdamW decays it, and
 * the gf_layer_params field it binds (an offsetof: the field is where the block's ops find it). An entry
 * with mixer set stands for the mixer's own tensors: name ("mix.") + each of its param_specs, in their
 * order, bound to the field's array (mix). */
typedef struct {
    const char *name;
    bool mixer;
    int8_t ndim;
    block_dim shape[2];
    gf_init_kind init;
    bool decay;
    size_t field;
} block_tensor;

/* The entries a kind's tensor list is made of (a static const block_tensor[] initialiser), in checkpoint
 * order within each: a LayerNorm (its name, its two gf_layer_params fields), the mixer's, the FFN's, the
 * cross op's (queries from d, keys and values from d_mem, out to d: (out, in) as torch.nn.Linear). */
#define BLOCK_TENSORS_LN(nm, i)                                                                             \
    {nm ".weight", false, 1, {BDIM_D, BDIM_D}, GF_INIT_ONE, false, offsetof(gf_layer_params, ln_w[i])},      \
    {nm ".bias", false, 1, {BDIM_D, BDIM_D}, GF_INIT_ZERO, false, offsetof(gf_layer_params, ln_b[i])}
#define BLOCK_TENSORS_MIX {"mix.", true, 0, {BDIM_D, BDIM_D}, GF_INIT_NORMAL, false, offsetof(gf_layer_params, mix)}
#define BLOCK_TENSORS_FFN                                                                                   \
    {"ffn.fc1.weight", false, 2, {BDIM_FF, BDIM_D}, GF_INIT_NORMAL, true, offsetof(gf_layer_params, fc1_w)}, \
    {"ffn.fc1.bias", false, 1, {BDIM_FF, BDIM_D}, GF_INIT_ZERO, false, offsetof(gf_layer_params, fc1_b)},    \
    {"ffn.fc2.weight", false, 2, {BDIM_D, BDIM_FF}, GF_INIT_NORMAL, true, offsetof(gf_layer_params, fc2_w)}, \
    {"ffn.fc2.bias", false, 1, {BDIM_D, BDIM_D}, GF_INIT_ZERO, false, offsetof(gf_layer_params, fc2_b)}
#define BLOCK_TENSORS_CROSS_LINEAR(nm, in, fw, fb)                                                          \
    {"cross." nm ".weight", false, 2, {BDIM_D, in}, GF_INIT_NORMAL, true, offsetof(gf_layer_params, fw)},    \
    {"cross." nm ".bias", false, 1, {BDIM_D, BDIM_D}, GF_INIT_ZERO, false, offsetof(gf_layer_params, fb)}
#define BLOCK_TENSORS_CROSS                                                                                 \
    BLOCK_TENSORS_CROSS_LINEAR("q", BDIM_D, cq_w, cq_b), BLOCK_TENSORS_CROSS_LINEAR("k", BDIM_MEM, ck_w, ck_b), \
    BLOCK_TENSORS_CROSS_LINEAR("v", BDIM_MEM, cv_w, cv_b), BLOCK_TENSORS_CROSS_LINEAR("out", BDIM_D, co_w, co_b)

typedef struct {
    const char *name;            /* [a-z0-9_-]: a layer's "block" in a config */
    int n_slots;
    int n_ops;
    block_op ops[BLOCK_MAX_OPS];
    int n_tensors;
    const block_tensor *tensors; /* in checkpoint order */
} block_kind;

/* The kind a layer's config names (name, its "block"), or with name "" the default: the one of its norm and
 * mixer (pre; post-gated when the mixer's output holds the skip, else post-residual), or in an
 * encoder-decoder's decoder (decoder: gf_layer_reads_memory) its decoder twin (decoder-pre, decoder-post-gated,
 * decoder-post). NULL for a name no kind has (gf_block_kind_names lists them). */
const block_kind *gf_block_kind_for(gf_norm norm, const gf_mixer_ops *mixer, const char *name, bool decoder);
/* Whether kind k has a cross op (and so reads a memory: an encoder-decoder's decoder layers only). */
bool gf_block_kind_has_cross(const block_kind *k);
/* Whether layer l of c is a decoder layer of an encoder-decoder (gf_config.source_vocab > 0: a layer of its
 * second stack), whose block reads the encoder's output (config/stacks.c). */
bool gf_layer_reads_memory(const gf_config *c, int l);
/* The kind called name, or NULL. */
const block_kind *gf_block_kind_find(const char *name);
/* "pre, post-gated, post-residual, ..." into buf. */
void gf_block_kind_names(char *buf, size_t n);
/* Add a kind (a program's own, before configs are read; not thread-safe): one table entry, checked (a name of
 * [a-z0-9_-] no kind has, slots and ops within their limits, every op's slots, LayerNorm and dropout site in
 * range, the last slot written). 0, or -1 (gf_fail). tests/plugins/block_parallel.c adds the parallel block. */
int gf_block_kind_register(const block_kind *kind);

/* One layer's parameters (views into the model's parameter or gradient arena), bound by its kind's tensors. */
typedef struct gf_layer_params {
    float *ln_w[BLOCK_MAX_LN], *ln_b[BLOCK_MAX_LN]; /* ln1, ln2, ln3 (BLOCK_TENSORS_LN) */
    float *fc1_w, *fc1_b, *fc2_w, *fc2_b;
    float *mix[GF_MIXER_MAX_PARAMS];
    float *cq_w, *cq_b, *ck_w, *ck_b, *cv_w, *cv_b, *co_w, *co_b; /* a cross op's (BLOCK_TENSORS_CROSS) */
} gf_layer_params;

/* The view in p that tensor t binds (the first of the mixer's, for its entry). */
static inline float **block_tensor_view(gf_layer_params *p, const block_tensor *t) {
    return (float **)(void *)((char *)p + t->field);
}
/* A size of t in a layer of width d whose FFN is F wide and whose memory is dmem wide. */
static inline int64_t block_dim_size(block_dim b, int64_t d, int64_t F, int64_t dmem) {
    return b == BDIM_FF ? F : b == BDIM_MEM ? dmem : d;
}

/* The second sequence a run's cross op reads: B batch rows (the run's N rows are B x T, T = N / B), each of
 * S positions, d wide. Positions padded in mask are seen by no row: their values change nothing and their
 * gradient rows receive nothing. */
typedef struct block_memory {
    const float *x;           /* (B, S, d) */
    const uint8_t *mask;      /* (B, S): 1 = a real position, 0 = padding; NULL: none */
    float *dx;                /* backward: d(loss)/d(x) accumulates (+=) here, (B, S, d); NULL: not wanted */
    int64_t B, S, d;
} block_memory;

/* What a cross op keeps from its forward for its backward (block_run.cross_saved) and needs besides during
 * one call (block_run.cross_scratch), in floats, for a run of N rows of width d over memory mem with H heads. */
int64_t gf_block_cross_saved_floats(int64_t N, int64_t d, const block_memory *mem, int64_t H);
int64_t gf_block_cross_scratch_floats(int64_t N, int64_t d, const block_memory *mem, int64_t H, int n_threads);

/* One run of a block over N rows. */
typedef struct block_run {
    const block_kind *kind;
    const gf_config *cfg;
    int64_t N, d, F;                    /* rows; the layer's width and its FFN's hidden width */
    const gf_layer_params *p;
    gf_layer_params *g;                 /* backward: gradients accumulate here */
    float *slot[BLOCK_MAX_SLOTS];       /* (N, d) each; slot 0 the input, the last the output */
    float *mean[BLOCK_MAX_LN], *rstd[BLOCK_MAX_LN]; /* (N) each: what each LayerNorm keeps for the backward */
    float *h1, *act;                    /* (N, d_ff): fc1's output and GELU's */
    float *gelu_keep;                   /* (N, d_ff): GELU's erf term for the backward (gf_gelu_forward_keep);
                                         * NULL in a forward that no backward follows (evaluation, scoring,
                                         * streaming) */
    float drop_p;                       /* 0 when not training */
    uint64_t drop_key[BLOCK_MAX_DROP];  /* per dropout site */
    int64_t drop_base, drop_row, drop_stride; /* the masks' counters (gf_dropout_forward_at): the batch's first
                                               * example in its micro-batch x stride; T d; the micro-batch's T d */
    /* the mixer: forward (or a streaming step) and backward, on the caller's context */
    void (*mix)(void *ctx, float *out, const float *inp);
    void (*mix_back)(void *ctx, float *dinp, const float *dout, const float *inp);
    void *mix_ctx;
    /* a cross op (BOP_CROSS): the memory it reads, its heads (d % heads == 0; 0 means 1), what it keeps
     * (gf_block_cross_saved_floats) and its scratch (gf_block_cross_scratch_floats, sized for n_threads) */
    const block_memory *mem;
    const float *cross_kv;              /* NULL: the cross op projects mem itself; else its keys then values,
                                         * (B*S, d) each, computed before (a stream's, once per source:
                                         * gf_block_cross_keys), which a forward then reads (no backward) */
    int64_t cross_heads;
    float *cross_saved, *cross_scratch;
    int n_threads;
} block_run;

/* kv (2 M, d) = the keys then the values layer p's cross op takes from M = mem->B * mem->S memory rows: what
 * the forward computes, for a run that sets block_run.cross_kv. */
void gf_block_cross_keys(const gf_layer_params *p, const block_memory *mem, int64_t d, float *kv);
/* Run the block forward: fills every slot but 0 (and the LN statistics, the FFN's hidden activations). */
void gf_block_forward(const block_run *r);
/* Backward through the block. grad[s] are n_slots buffers of (N, d) floats, grad[last] holding d(loss)/d(out)
 * on entry; the function permutes them (no copies where a gradient can be handed on) and on return
 * grad[0] holds d(loss)/d(in). dff: (N, d_ff) scratch. */
void gf_block_backward(const block_run *r, float **grad, float *dff);

#endif
