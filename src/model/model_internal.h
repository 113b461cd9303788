/* The model struct, shared by the files of src/model (not part of the public API). */
#ifndef GF_MODEL_INTERNAL_H
#define GF_MODEL_INTERNAL_H

#include "grassflow.h"
#include "mixers/mixer.h"

typedef struct gf_layer_params {
    float *ln1_w, *ln1_b, *ln2_w, *ln2_b, *fc1_w, *fc1_b, *fc2_w, *fc2_b;
    float *mix[GF_MIXER_MAX_PARAMS];
} gf_layer_params;

/* Per-layer activations, views into the activation arena (N = B*T rows). */
typedef struct gf_layer_acts {
    float *ln1_out, *ln1_mean, *ln1_rstd;  /* (N,d), (N), (N) */
    float *mix_out;                        /* (N,d) mixer output (dropout applied in place) */
    float *x;                              /* (N,d) the block's middle: input of the FFN branch */
    float *sum1, *sum2;                    /* (N,d) LayerNorm inputs of the post-norm blocks */
    float *ln2_out, *ln2_mean, *ln2_rstd;  /* (N,d), (N), (N) */
    float *h1, *a;                         /* (N,d_ff) fc1 output, GELU output */
    float *ffn_out;                        /* (N,d) */
    float *mix_saved;                      /* the mixer's saved_floats */
} gf_layer_acts;

struct gf_model {
    gf_config cfg;
    int n_tensors;
    gf_tensor_info *tensors;
    char *names;                           /* storage for tensor names */
    int64_t n_params;
    float *params, *grads;                 /* flat arenas, n_params floats each */

    /* parameter views (p) and their gradients (g) */
    float *tok_emb, *pos_emb, *lnf_w, *lnf_b, *head;
    float *d_tok_emb, *d_pos_emb, *d_lnf_w, *d_lnf_b, *d_head;
    gf_layer_params lp[GF_MAX_LAYERS], lg[GF_MAX_LAYERS];
    const gf_mixer_ops *mixer[GF_MAX_LAYERS];

    /* activation arena, laid out for the current (B, T) */
    float *acts;
    int64_t acts_floats;                   /* capacity */
    int64_t B, T;
    int n_threads;
    gf_layer_acts la[GF_MAX_LAYERS];
    float *resid;                          /* (L+1, N, d): input of each layer, then the last output */
    float *lnf_out, *lnf_mean, *lnf_rstd, *logits, *lse, *losses;
    float *scratch;                        /* shared by the mixers (largest need) */
    float *dres, *d1, *d2, *d3, *dff;      /* backward buffers */
    float *pos_table;                      /* sinusoidal table (max(T, max_len), d) or NULL */
    int64_t pos_table_rows;
    int32_t *inputs, *targets;             /* copies of the last batch */
    int64_t ids_cap;

    bool training;
    uint64_t dropout_seed, step;
    bool have_forward, have_targets;
    int64_t n_counted;
};

#endif
