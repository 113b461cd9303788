/* The model struct, shared by the files of src/model (not part of the public API). */
#ifndef GF_MODEL_INTERNAL_H
#define GF_MODEL_INTERNAL_H

#include "grassflow_plugin.h"
#include "heads/head.h"
#include "mixers/mixer.h"
#include "model/block.h"

/* Per-layer activations, views into the activation arena (N = B*T rows). */
typedef struct gf_layer_acts {
    float *slot[BLOCK_MAX_SLOTS];          /* (N,d): the block's inner slots 1 .. n_slots-2 (model/block.h);
                                            * slot 0 and the last are views of resid */
    float *mean[BLOCK_MAX_LN], *rstd[BLOCK_MAX_LN]; /* (N) each: ln1, ln2, ln3 */
    float *h1, *a, *gk;                    /* (N,d_ff) fc1 output, GELU output, GELU's kept erf term */
    float *mix_saved;                      /* the mixer's saved_floats */
    float *mem_work;                       /* a mixer that reads the memory: its memory_floats */
    float *cross_saved;                    /* a decoder block's cross op's (gf_block_cross_saved_floats) */
} gf_layer_acts;

struct gf_model {
    gf_config cfg;
    int n_tensors;
    gf_tensor_info *tensors;
    gf_init_kind *init;                    /* per tensor */
    char *names;                           /* storage for tensor names */
    int64_t n_params, n_trainable;
    float *params;                         /* flat arena, n_params floats */
    float *grads;                          /* flat arena, n_trainable floats: the trainable tensors' gradients;
                                            * NULL until a backward needs it (gf_model_need_grads) */

    /* parameter views (p) and their gradients (g; NULL for a tensor that is not trainable) */
    float *tok_emb, *pos_emb, *seg_emb, *in_w, *in_b, *lnf_w, *lnf_b;
    float *d_tok_emb, *d_pos_emb, *d_seg_emb, *d_in_w, *d_in_b, *d_lnf_w, *d_lnf_b;
    float *embln_w, *embln_b, *d_embln_w, *d_embln_b; /* emb_norm: the LayerNorm on the embedding sum */
    /* an encoder-decoder's (cfg.source_vocab > 0): the source's embedding and learned positions, the encoder's
     * final LayerNorm (a pre-norm encoder's; NULL otherwise); tok_emb and pos_emb are then the target's */
    float *src_emb, *src_pos, *encln_w, *encln_b, *d_src_emb, *d_src_pos, *d_encln_w, *d_encln_b;
    float *sp_w[GF_MAX_STACKS + 1], *sp_b[GF_MAX_STACKS + 1];     /* stack k >= 1: its in_proj (d_k, d_k-1) */
    float *d_sp_w[GF_MAX_STACKS + 1], *d_sp_b[GF_MAX_STACKS + 1];
    gf_layer_params lp[GF_MAX_LAYERS], lg[GF_MAX_LAYERS];
    const gf_mixer_ops *mixer[GF_MAX_LAYERS];
    const block_kind *block[GF_MAX_LAYERS];
    const gf_head_ops *head;
    float *hp[GF_HEAD_MAX_PARAMS], *hg[GF_HEAD_MAX_PARAMS];
    int first_grad_layer;                  /* the backward stops below it: nothing trainable there or under */
    int n_layers;                          /* in all stacks */

    /* activation arena, laid out for the current (B, T) */
    float *acts;
    int64_t acts_floats;                   /* capacity */
    int64_t B, T;
    int64_t S;                             /* an encoder-decoder's source positions (its encoder's rows: B*S) */
    int n_threads;
    gf_layer_acts la[GF_MAX_LAYERS];
    float *sres[GF_MAX_STACKS + 1];        /* stack k: (n_layer_k + 1, N, d_k): its input, then each layer's
                                            * output */
    float *lnf_out, *lnf_mean, *lnf_rstd;
    float *emb_sum, *emb_mean, *emb_rstd;  /* emb_norm: the embedding sum (N, d) before its LayerNorm */
    float *out, *head_saved;               /* the head's outputs (logits) and what it keeps */
    float *scratch;                        /* shared by the mixers (largest need) */
    /* an encoder-decoder: the memory its decoder reads (the encoder's output through enc_ln, when it has one:
     * mem_x, with enc_ln's statistics), the memory's gradient, the cross ops' shared scratch */
    float *mem_x, *mem_mean, *mem_rstd, *dmem, *cross_scratch;
    float *demb;                           /* a mixer reads the input embeddings (reads_embeddings): the gradient
                                            * such mixers add to them (N, d), else NULL */
    block_memory memory;
    float *gbuf[BLOCK_MAX_SLOTS];          /* backward: (N,d) gradient buffers, gbuf[0] d(loss)/d(resid) */
    float *dff;                            /* backward: (N,d_ff) */
    float *pos_table;                      /* sinusoidal table (max(T, max_len), d) or NULL */
    int64_t pos_table_rows;
    /* copies of the last batch */
    int32_t *inputs, *targets;
    uint8_t *mask;
    uint8_t *segs;                         /* (N) token types, when the model has segments */
    int32_t *src;                          /* an encoder-decoder's source ids (B*S) and padding mask */
    uint8_t *src_mask;
    bool has_src_mask;
    int64_t src_cap;
    float *vectors;
    bool has_mask;
    int64_t batch_cap, vec_cap;

    bool training;
    float head_eps;                       /* the label smoothing of the last forward, for its backward */
    uint64_t dropout_seed, step;
    int64_t example0, t_stride, s_stride; /* dropout masks: where the batch's rows sit in their micro-batch
                                           * (gf_model_set_example0) */
    void *step_scratch;                    /* a training step's scratch (dist/step.c), freed with the model by */
    void (*step_scratch_free)(void *);     /* this: the model knows nothing of what it holds */
    bool have_forward, have_targets;
    gf_config *ovr_cfg;                    /* gf_model_set_override: the config the mixers see in a batch forward
                                            * (model/override.c); NULL: none, they see cfg */
    int64_t n_counted, n_correct;

    /* low-precision weights (model/weights.c): what the matrices are, and their copies for the door */
    int weights;                           /* gf_weights; GF_WEIGHTS_FP32 until gf_model_set_weights */
    void *lowp;                            /* the copies' storage, freed with the model */
};

/* Whether tensor t is one of the matrices gf_model_set_weights makes int8 or bf16 (model/weights.c). */
bool gf_weights_eligible(const gf_tensor_info *t);
/* Register the int8 codes (+128) and scales, or bf16 values, of eligible tensor t (taking ownership of the
 * malloc'd arrays), after writing the values they stand for into t->data (model/weights.c). */
int gf_model_attach_lowp(gf_model *m, const gf_tensor_info *t, int kind, uint8_t *u8, float *scale, uint16_t *h);
void gf_model_free_lowp(gf_model *m);
/* t's low-precision copy (int8: u8 codes + 128 and scales; bf16: h), false if it has none. */
bool gf_model_lowp_of(const gf_model *m, const gf_tensor_info *t, const uint8_t **u8, const float **scale,
                      const uint16_t **h);
/* The layout of int8 and bf16 checkpoints, stored as their "weights_layout" metadata (model/checkpoint_lowp.c). */
extern const char GF_WEIGHTS_LAYOUT[];
/* check_file's part for such a file: the dtype and shape tensor `name` (ndim, shape) may have there, and the
 * index of its scale tensor in f (-1: none). 0, or -1 naming the file and what is wrong. */
int gf_lowp_check_tensor(const gf_st_file *f, gf_weights kind, const char *name, int ndim, const int64_t *shape,
                         const gf_st_tensor *s, int *scale_index);
/* The file's "weights" metadata: fp32 when absent; -1 for another value (naming the file). */
int gf_lowp_file_kind(const gf_st_file *f, gf_weights *kind);
/* Tensor t of the loaded model from its I8 (+ scale) or BF16 entry s in f: the values into t->data and the
 * copy attached. 0, or -1 naming the file, the tensor and what is wrong. */
int gf_lowp_load_tensor(gf_model *m, const gf_st_file *f, const gf_tensor_info *t, const gf_st_tensor *s);

/* Whether layer l's mixer is the Grassmann mixer (model/override.c). */
bool gf_layer_is_grassmann(const gf_model *m, int l);
/* The input of layer l's mixer in the last forward (the block's slot its mix op reads: ln1(h) in a pre-norm
 * block, h in a post-norm one), (B*T, d) rows; NULL before a forward (model.c). */
const float *gf_model_mixer_input(gf_model *m, int l);
/* Layer l's mixer call on the current batch (what its forward and backward get). */
gf_mixer_call gf_model_mixer_call(gf_model *m, int l);

/* 0, or an error naming `what` if the model's head does not predict the next token (model.c). */
int gf_model_require_next_token(const gf_model *m, const char *what);

/* Every tensor the model of cfg declares, in checkpoint order, given to each(name, ndim, shape) without
 * allocating anything: a file can be checked against it before a byte of parameters is allocated. The
 * first non-zero return of each stops it and is returned. */
int gf_model_plan(const gf_config *cfg, int (*each)(void *ctx, const char *name, int ndim, const int64_t *shape),
                  void *ctx);

/* h chained with what batch b holds for model m (inputs, token types, mask, targets; not features;
 * gf_hash_bytes), so that a run can tell on resume whether its data changed. */
uint64_t gf_model_batch_hash(const gf_model *m, const gf_batch *b, uint64_t h);

/* model/wiring.c: the wiring around the blocks, shared by the batch forward (model.c) and the streaming step
 * (infer/stream.c), which runs it over one row (N = 1, its position pos0 = the tokens it has consumed). */

/* Rows pos0 .. pos0+T-1 of the position encoding, (T, d_model); NULL for pos none. Learned: a view of pos_emb.
 * Sinusoidal: of table (the rows from position 0, computed once by the batch) when it is given, else
 * computed into buf (T rows; a stream computes its one row). */
const float *gf_pos_rows(const gf_model *m, int64_t pos0, int64_t T, const float *table, float *buf);
/* Position p's sinusoidal row (pos "sinusoidal", or "sinusoidal-2d" over c->pos_grid columns) into row (d_model). */
void gf_pos_row(const gf_config *c, float *row, int64_t p);

/* The same rows of an encoder-decoder's source positions: its own learned table (src_pos), else as
 * gf_pos_rows. */
const float *gf_source_pos_rows(const gf_model *m, int64_t pos0, int64_t T, const float *table, float *buf);

/* What the embedding reads: B sequences of T rows, row n at t = n % T. */
typedef struct gf_embed_in {
    const int32_t *ids;     /* (B*T) token ids (input tokens) */
    const float *table;     /* the table ids index (d_model wide); NULL: tok_emb (an encoder-decoder's source:
                             * src_emb) */
    const float *vectors;   /* (B*T, d_input) (input vectors) */
    const uint8_t *segs;    /* (B*T) token types; NULL: type 0 everywhere (a stream is one text) */
    const float *pos;       /* (T, d_model) the position rows (gf_pos_rows); NULL: none */
    int64_t B, T;
} gf_embed_in;

/* out (B*T, d_model) = tok_emb[ids] (or in_proj(vectors)) + pos[t] + seg_emb[segs] (with segments), then
 * emb_ln when the model has one: the sum then goes to sum (B*T, d_model; not out), emb_ln's statistics to
 * mean and rstd (B*T), all three kept for the backward. */
void gf_embed_rows(const gf_model *m, const gf_embed_in *in, float *out, float *sum, float *mean, float *rstd);

/* k when layer l is the first of a further stack k (>= 1), which reads the previous stack's output through
 * its in_proj; else 0. */
int gf_layer_enters_stack(const gf_config *c, int l);
/* out (N, d_k) = stack k's in_proj (k >= 1) of inp (N, d_k-1). */
void gf_stack_in_proj(const gf_model *m, int k, float *out, const float *inp, int64_t N);

/* A head call on m's head parameters (and the tied embedding) for B x T rows, outputs to out; the rest
 * (gradients of the embedding, mask, targets, saved) is the caller's to add. */
gf_head_call gf_model_head_call(const gf_model *m, int64_t B, int64_t T, float *out);
/* The model's output: lnf (B*T, out width) = ln_f(h), its statistics in mean and rstd (B*T rows of hc),
 * then the head (hc) on lnf. */
void gf_model_output(const gf_model *m, const gf_head_call *hc, const float *h, float *lnf, float *mean,
                     float *rstd, gf_head_result *res);

/* model/params.c: a model of cfg: its config, head, and each layer's mixer and block kind (what its tensors
 * are declared from), before anything is declared. */
void gf_model_set_config(gf_model *m, const gf_config *cfg);
/* Declare every tensor (input, layers, final norm, head) and build the arenas. */
int gf_model_build_params(gf_model *m);
/* Let each mixer with draw_buffers draw its buffers: at step 0 every layer's (the init), at a training step
 * >= 1 those of the layers whose mixer is trained (gf_model_set_training). */
void gf_model_draw_buffers(gf_model *m, uint64_t seed, uint64_t step);
/* The next batches are examples e0, e0 + 1, ... of a micro-batch whose examples are t_stride tokens long
 * (padded to its longest), and whose sources (an encoder-decoder's) are s_stride long: their dropout masks are
 * those they have in that whole micro-batch, as one process computes it (a rank's share, or one example of
 * --deterministic). (0, 0, 0): the batch is the whole micro-batch, the masks as grassflow has always drawn
 * them. */
void gf_model_set_example0(gf_model *m, int64_t e0, int64_t t_stride, int64_t s_stride);
/* The gradient arena, allocated (zeroed) on first need: a backward, zero_grad, gf_model_grads. */
int gf_model_need_grads(gf_model *m);

#endif
