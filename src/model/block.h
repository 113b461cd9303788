/* Blocks, wired once. A block kind is a short program over slots (N x d activations): slot 0 is the
 * block's input, the last slot its output. One interpreter runs it forward (a batch, or one token of a
 * stream: the mixer's forward or its step), one runs it backward. A kind also lists the tensors its ops
 * use (name, shape in d and d_ff, init, decay, the gf_layer_params field), and model/params.c declares each
 * layer's tensors from that list, so a block's program and its parameters are written in one place.
 * Adding a block kind (a cross-attention block for seq2seq: a second mixer op reading the encoder's output)
 * is a table entry, not a new copy of the wiring.
 *
 *   pre            x = h + Drop(mix(ln1(h)));       out = x + Drop(FFN(ln2(x)))
 *   post-gated     x = Drop(ln1(mix(h)));            out = ln2(x + Drop(FFN(x)))   (the paper's Grassmann
 *                                                                                  block: the gate is the skip)
 *   post-residual  x = ln1(h + Drop(mix(h)));        out = ln2(x + Drop(FFN(x)))   (post-norm Transformer) */
#ifndef GF_MODEL_BLOCK_H
#define GF_MODEL_BLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "grassflow.h"
#include "mixers/mixer.h"

enum { BLOCK_MAX_OPS = 10, BLOCK_MAX_SLOTS = 8 };

typedef enum {
    BOP_LN,   /* out = LayerNorm_which(in)   which: 0 = ln1, 1 = ln2 */
    BOP_MIX,  /* out = mixer(in) */
    BOP_FFN,  /* out = fc2(GELU(fc1(in))) */
    BOP_DROP, /* out = Dropout_which(in), which = its site; in == out: in place (the slot's value before the
               * dropout then has no other reader) */
    BOP_ADD,  /* out = in + in2 */
} block_op_kind;

typedef struct {
    block_op_kind op;
    int8_t in, in2, out, which;
} block_op;

/* A size of a block's tensor, in terms of its layer: d (the layer's width) or d_ff (its FFN's hidden width). */
typedef enum { BDIM_D, BDIM_FF } block_dim;

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

typedef struct {
    const char *name;
    int n_slots;
    int n_ops;
    block_op ops[BLOCK_MAX_OPS];
    int n_tensors;
    const block_tensor *tensors; /* in checkpoint order */
} block_kind;

/* The kind of a block with this norm and this mixer (the mixer says whether its output holds the skip). */
const block_kind *block_kind_for(gf_norm norm, const gf_mixer_ops *mixer);

/* One layer's parameters (views into the model's parameter or gradient arena), bound by its kind's tensors. */
typedef struct gf_layer_params {
    float *ln1_w, *ln1_b, *ln2_w, *ln2_b, *fc1_w, *fc1_b, *fc2_w, *fc2_b;
    float *mix[GF_MIXER_MAX_PARAMS];
} gf_layer_params;

/* The view in p that tensor t binds (the first of the mixer's, for its entry). */
static inline float **block_tensor_view(gf_layer_params *p, const block_tensor *t) {
    return (float **)(void *)((char *)p + t->field);
}
/* A size of t in a layer of width d whose FFN is F wide. */
static inline int64_t block_dim_size(block_dim b, int64_t d, int64_t F) { return b == BDIM_FF ? F : d; }

/* One run of a block over N rows. */
typedef struct block_run {
    const block_kind *kind;
    const gf_config *cfg;
    int64_t N, d, F;                    /* rows; the layer's width and its FFN's hidden width */
    const gf_layer_params *p;
    gf_layer_params *g;                 /* backward: gradients accumulate here */
    float *slot[BLOCK_MAX_SLOTS];       /* (N, d) each; slot 0 the input, the last the output */
    float *mean[2], *rstd[2];           /* (N) each: what ln1 and ln2 keep for the backward */
    float *h1, *act;                    /* (N, d_ff): fc1's output and GELU's */
    float drop_p;                       /* 0 when not training */
    uint64_t drop_key[2];               /* per dropout site */
    /* the mixer: forward (or a streaming step) and backward, on the caller's context */
    void (*mix)(void *ctx, float *out, const float *inp);
    void (*mix_back)(void *ctx, float *dinp, const float *dout, const float *inp);
    void *mix_ctx;
} block_run;

/* Run the block forward: fills every slot but 0 (and the LN statistics, the FFN's hidden activations). */
void block_forward(const block_run *r);
/* Backward through the block. grad[s] are n_slots buffers of (N, d) floats, grad[last] holding d(loss)/d(out)
 * on entry; the function permutes them (no copies where a gradient can be handed on) and on return
 * grad[0] holds d(loss)/d(in). dff: (N, d_ff) scratch. */
void block_backward(const block_run *r, float **grad, float *dff);

#endif
