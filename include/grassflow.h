/*
 * grassflow: attention-free Grassmann-flow language models and their Transformer twins, in C. This header is
 * the user API; grassflow_plugin.h adds what extends the library (mixers, heads, tasks, importers).
 *
 * A complete program (tests/project/install.sh builds and runs it as written: cc first.c $(pkg-config --cflags --libs
 * grassflow)): a model from a preset, twenty AdamW steps on one batch, the model saved.
 *
 *     #include <stdio.h>
 *     #include <grassflow.h>
 *
 *     int main(void) {
 *         gf_config cfg;
 *         if (gf_config_preset("grassmann-tiny", &cfg)) return fprintf(stderr, "%s\n", gf_last_error()), 1;
 *         cfg.vocab_size = 16;
 *         gf_model *m = gf_model_create(&cfg);          // parameters (gradients: on the first backward)
 *         if (!m) return fprintf(stderr, "%s\n", gf_last_error()), 1;
 *         gf_model_init(m, 1234);                       // N(0, 0.02) weights, zero biases, LayerNorms 1/0
 *         int32_t x[2 * 16], y[2 * 16];                 // inputs and targets, (B, T) = (2, 16); -1 = ignore
 *         for (int i = 0; i < 2 * 16; i++) x[i] = i % 7, y[i] = (i + 1) % 7;
 *         gf_adamw *opt = gf_adamw_create(m, gf_adamw_hparams_default());
 *         float loss = 0.0f;
 *         for (int step = 1; step <= 20 && gf_model_forward(m, x, y, 2, 16, &loss) == 0; step++) {
 *             gf_model_zero_grad(m);
 *             gf_model_backward(m);                     // accumulates into the gradient arena
 *             gf_adamw_step(opt, m, 1e-3f);
 *             if (step == 1 || step == 20) printf("step %d: loss %.3f\n", step, loss);
 *         }
 *         int rc = gf_model_save(m, "first.safetensors"); // atomic; PyTorch's tensor names
 *         if (rc) fprintf(stderr, "%s\n", gf_last_error());
 *         gf_adamw_free(opt);
 *         gf_model_free(m);
 *         return rc != 0;
 *     }
 *
 * Conventions: every function that can fail returns 0 on success (or a non-NULL pointer) and, on
 * failure, a non-zero value (or NULL) with a message for gf_last_error() that names the file or key,
 * what was expected, what was found and how to fix it. Sizes and offsets are 64-bit. The exact math
 * (tensor names, shapes, block wiring) is in docs/model.md; names, headers and the ABI's rules in
 * docs/api.md.
 */
#ifndef GRASSFLOW_H
#define GRASSFLOW_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Everything declared here is the library's interface, exported from libgrassflow.so (its sources build
 * with -fvisibility=hidden: what is not declared here is not exported). */
#pragma GCC visibility push(default)

#define GF_VERSION_MAJOR 0
#define GF_VERSION_MINOR 3
#define GF_VERSION_PATCH 0
#define GF_VERSION "0.3.0"
/* The binary interface: raised whenever a public struct's layout or a function's signature changes in a
 * way a program built against an older header would misread. The shared library's soname carries it
 * (libgrassflow.so.GF_ABI_VERSION), so such a program fails to load instead of misbehaving. 0: grassflow
 * 0.1-0.2 up to 2026-11-23; 1: gf_train_opts gained overwrite and accept_changed_data; 2: the plug-in
 * interface is public (gf_mixer_ops, gf_head_ops, their call structs, gf_cfg_key, gf_param_spec and
 * gf_mixer_register, gf_head_register, gf_fail, ...), so the layouts of those structs and of the config
 * they read (gf_config, gf_layer_config) are now part of the promise; and tasks are plug-ins (gf_task_ops,
 * gf_task_recipe): gf_train_opts lost seq_len, max_sent, task, corpus, tokenizer and model (a task's
 * recipe, stored through made_from_json); 3: gf_train_opts gained the fields of extending and branching
 * runs (init_from, save_every, patience, ...), gf_train_event epochs, seen and run_elapsed_s, gf_task_env
 * score_only, gf_task_ops text_counts (its version 3); 4: gf_train_opts gained precision; 5: gf_train_opts
 * gained deterministic (data-parallel training over MPI: gf_dist_*); 6: gf_task_env gained max_examples;
 * 7: a task's metric is its own (gf_metric; gf_task_ops version 4, score_by), gf_train_event gained
 * val_score, gf_train_result best_val_score, and gf_metrics.metric room for 31 characters; gf_layer_config
 * gained block; gf_config ends in reserved bytes (docs/api.md: how it grows from now on); the plug-in
 * interface moved to grassflow_plugin.h, and gf_output_check left the library for the command; 8: gf_batch
 * gained an encoder-decoder's source (S, source, source_mask) and gf_config the keys source_vocab and
 * cross_heads (from its reserved bytes). */
#define GF_ABI_VERSION 8
/* The version ("0.3.0") and the ABI of the library linked at run time: a program can compare them with
 * GF_VERSION and GF_ABI_VERSION of the header it was built with. */
const char *gf_version(void);
int gf_abi_version(void);
#define GF_MAX_LAYERS 64

/* ------------------------------------------------------------------------------------------------ */
/* Errors                                                                                            */

/* The message of the last failure on this thread ("" if none). */
const char *gf_last_error(void);
/* What the library says that is not an error (a cache used, sentences cut short, what a task changed in a
 * config) goes to fn(message, ctx), one line without its newline; NULL restores the default, a line
 * "grassflow: MESSAGE" on stderr. Not thread-safe: set it before other calls. */
typedef void (*gf_note_fn)(const char *msg, void *ctx);
void gf_set_note_handler(gf_note_fn fn, void *ctx);

/* Loops with less work than n elements run single-threaded (default 32768; 0 = always parallel). */
void gf_set_parallel_threshold(int64_t n);

/* ------------------------------------------------------------------------------------------------ */
/* Configuration                                                                                     */

typedef enum { GF_NORM_PRE = 0, GF_NORM_POST = 1 } gf_norm;
typedef enum { GF_GELU_ERF = 0, GF_GELU_TANH = 1 } gf_gelu_kind;
/* learned: a max_len x d table (the length limit); sinusoidal: computed for any position; none: no
 * position signal at all (a Grassmann layer is order-aware through its offsets) */
typedef enum { GF_POS_LEARNED = 0, GF_POS_SINUSOIDAL = 1, GF_POS_NONE = 2, GF_POS_SINUSOIDAL_2D = 3 } gf_pos_kind;
/* causal: position t sees positions <= t (language models); bidirectional: both sides (encoders) */
typedef enum { GF_CAUSAL = 0, GF_BIDIRECTIONAL = 1 } gf_direction;

/* The config format this version writes ("format" in the JSON form). Format 3 names the head's kind inside
 * the head's object ("head": {"kind": "classify", "n_classes": 3}); format 2 called it "task" at the top
 * ("task": "classify", "lm" for next_token), and format 1 (grassflow 0.1: flat keys, every key given) had
 * none. Both are still read, and "task" is still taken as the kind's old spelling. */
#define GF_CONFIG_FORMAT 3
#define GF_MIXER_NAME_MAX 24
#define GF_MIXER_CONFIG_BYTES 232
#define GF_HEAD_CONFIG_BYTES 128

/* One layer: its mixer (a registered name: "grassmann", "attention", ...) and that mixer's own config,
 * a struct the mixer defines, parses from the layer's JSON entry and validates. */
typedef struct gf_layer_config {
    char mixer[GF_MIXER_NAME_MAX];
    union {
        unsigned char bytes[GF_MIXER_CONFIG_BYTES];
        int64_t align_i;
        double align_d;
    } params;
    char block[GF_MIXER_NAME_MAX]; /* its block kind by name ("block" in its "layers" entry; docs/model.md,
                                    * "Block kinds"); "": the default, the one of its stack's norm and its mixer */
} gf_layer_config;

#define GF_MAX_STACKS 4

/* A stack after the first (the config's top-level d_model, n_layer, layers, ...): it reads the previous
 * stack's output through its own projection ("NAME.in_proj", d_prev -> d_model) and has its own blocks
 * ("NAME.blocks.J..."); the final LayerNorm and the head follow the last stack. An encoder under a
 * classification head, a frozen backbone under a trained one. */
typedef struct gf_stack_config {
    char name[GF_MIXER_NAME_MAX];        /* [a-z0-9_], unique: its tensors' prefix */
    int64_t d_model, d_ff, n_layer;
    gf_norm norm;
    gf_direction direction;
} gf_stack_config;

/* What the model reads: token ids (an embedding table) or float vectors of d_input (a projection). */
typedef enum { GF_INPUT_TOKENS = 0, GF_INPUT_VECTORS = 1 } gf_input_kind;

typedef struct gf_config {
    int format;                          /* GF_CONFIG_FORMAT */
    char head_kind[GF_MIXER_NAME_MAX];   /* the head: "next_token" (logits over the vocabulary at every
                                          * position), "classify" (one label per sequence), or a registered one */
    union {
        unsigned char bytes[GF_HEAD_CONFIG_BYTES];
        int64_t align_i;
        double align_d;
    } head;                              /* that head's own config ("head": {...} in the JSON form) */
    gf_input_kind input;
    int64_t d_input;                     /* vectors: their size */
    int64_t vocab_size, d_model, n_layer, d_ff;
    int64_t max_len;                     /* learned positions: the table's rows; otherwise 0 = no limit */
    gf_norm norm;
    bool tie_head;
    gf_gelu_kind gelu;
    gf_pos_kind pos;
    int64_t segments;                    /* token types (BERT's segments): a learned row per type added to the
                                          * input, from gf_batch.segments; 0 = none */
    bool emb_norm;                       /* a LayerNorm (emb_ln) on the embedding sum, as BERT has */
    float ln_eps;                        /* every LayerNorm's eps: 1e-5 (torch's default); BERT's 1e-12 */
    float dropout;
    gf_direction direction;
    int n_stacks;                        /* stacks after the first one (0: a single stack) */
    gf_stack_config stacks[GF_MAX_STACKS];
    /* every layer of every stack: the first stack's n_layer, then each further stack's, in order */
    gf_layer_config layers[GF_MAX_LAYERS];
    /* An encoder-decoder (docs/model.md, "Encoder-decoders"): with source_vocab > 0 the first stack (the
     * top-level keys) is an encoder over source ids 0 .. source_vocab-1 (gf_batch.source), read through its
     * own embedding (src_emb, and src_pos with learned positions), and the one further stack is a causal
     * decoder over the target ids (gf_batch.ids, through tok_emb), of the same width, whose blocks attend to
     * the encoder's output through a cross op of cross_heads heads. 0: not one (every model before it). */
    int64_t source_vocab;
    int64_t cross_heads;
    /* the positions' grid (an image's patches, row by row; 0: none): pos "sinusoidal-2d" gives position p the
     * sinusoidal rows of its row p / pos_grid and its column p % pos_grid, d / 2 channels each, side by side */
    int64_t pos_grid;
    /* the standard deviation of the normal init of every tensor initialised N(0, std) (weights, embeddings);
     * 0: 0.02, GPT-2's and every model's before the key existed (issue 55: an init scale to search) */
    float init_std;
    /* label smoothing of the training loss (issues 52, 53): the head's cross-entropy against (1 - eps) onehot
     * + eps / classes, PyTorch's label_smoothing; evaluation scores the plain loss. 0: none (every model
     * before the key) */
    float label_smoothing;
    /* Room for the keys of later versions, so that adding one keeps the struct's size and every member's
     * offset (docs/api.md, "Growing gf_config"): a new key takes bytes from here, and its zero value means
     * what grassflow did before the key existed. gf_config_preset, gf_config_from_json and gf_config_load
     * zero it; a program that fills a gf_config itself starts from gf_config_preset or zeroes it. */
    unsigned char reserved[256 - 3 * sizeof(int64_t) - 2 * sizeof(float)];
} gf_config;

/* Layers in all stacks. */
int gf_config_total_layers(const gf_config *cfg);
/* The stack of layer l: 0 for the first (top-level) stack, k for cfg->stacks[k - 1]. */
int gf_layer_stack(const gf_config *cfg, int l);
/* Stack k's width, FFN width, norm and direction (k = 0: the top-level ones). */
int64_t gf_stack_dim(const gf_config *cfg, int k);
int64_t gf_stack_ff(const gf_config *cfg, int k);
gf_norm gf_stack_norm(const gf_config *cfg, int k);
gf_direction gf_stack_direction(const gf_config *cfg, int k);
/* The width of the last stack's output: what the final LayerNorm and the head see. */
int64_t gf_config_out_dim(const gf_config *cfg);
/* Stack k's first layer and its number of layers. */
int gf_stack_first_layer(const gf_config *cfg, int k);
int64_t gf_stack_layers(const gf_config *cfg, int k);

/* Names of the built-in presets, NULL-terminated. */
const char *const *gf_preset_names(void);
/* Fill cfg from a preset name ("grassmann-6L", "transformer-tiny", ...). */
int gf_config_preset(const char *name, gf_config *cfg);
/* Parse a JSON config. `source` names where it came from (a path, "--set", ...) for error messages. */
int gf_config_from_json(const char *json, const char *source, gf_config *cfg);
/* Read a JSON config file. */
int gf_config_load(const char *path, gf_config *cfg);
/* The JSON form of cfg (malloc'd, caller frees). pretty: indented. */
char *gf_config_to_json(const gf_config *cfg, bool pretty);
/* Apply "key=value": value is JSON (5, 1e-6, "post", [[1,2]]) or a bare word / comma list
 * (post, grassmann,attention, 1,2,4 meaning that list in every layer). KEY is a model key (d_model,
 * norm, ...), a mixer key (rank, n_head, ...: set in every layer, of every stack, whose mixer has it; a
 * list gives one value per layer of the first stack, refused if a further stack has the key), "mixers" (g,a,... keeps the settings of layers whose mixer stays) or
 * "layers.N.KEY" (one layer). Validates the result; on error cfg is unchanged. */
int gf_config_set(gf_config *cfg, const char *key_eq_value);
/* The JSON value of a key as gf_config_set names it ("d_model", "head.n_classes", "layers.2.rank",
 * "rank" when every layer that has it agrees), malloc'd; NULL (gf_last_error) if there is no such key. */
char *gf_config_get(const gf_config *cfg, const char *key);
/* The keys in which configs a and b differ, named as gf_config_set names them, each with both values:
 * "vocab_size 64 vs 65, layers.1.rank 6 vs 8" into buf (n bytes; cut short there, but every difference is
 * counted). The number of keys that differ (0: the same config), or -1 (gf_last_error) out of memory. */
int gf_config_diff(const gf_config *a, const gf_config *b, char *buf, size_t n);
/* Check every field; 0 if the config describes a model that can be built. */
int gf_config_validate(const gf_config *cfg, const char *source);
/* Parameter count of the model cfg describes; -1 (gf_last_error) if cfg does not validate. */
int64_t gf_config_num_params(const gf_config *cfg);

/* The registered mixers (built-in ones and those added with gf_mixer_register, Plug-ins below):
 * names[0..n) for n = the return value (at most cap are written). */
int gf_mixer_names(const char **names, int cap);
/* What a mixer is, its one-letter name for --set mixers=..., and its config keys with their types,
 * ranges and defaults (malloc'd text); NULL if no mixer has that name. */
char *gf_mixer_describe(const char *name);

/* ------------------------------------------------------------------------------------------------ */
/* Model                                                                                             */

typedef struct gf_model gf_model;

typedef struct gf_tensor_info {
    const char *name;      /* safetensors name, e.g. "blocks.0.mix.red.weight" */
    int ndim;              /* 1 or 2 */
    int64_t shape[2];
    int64_t numel;
    int64_t offset;        /* in floats, into the parameter arena */
    bool decay;            /* AdamW weight decay applies (2-D weights except embeddings) */
    bool trainable;        /* false: saved and loaded, but no gradient and no optimizer state */
    int64_t grad_offset;   /* in floats, into the gradient arena (and the AdamW moments); -1 if not trainable */
    float *data;           /* view into the parameter arena */
    float *grad;           /* view into the gradient arena; NULL if not trainable or before the arena
                            * exists (it is allocated by the first backward, zero_grad or gf_model_grads) */
} gf_tensor_info;

gf_model *gf_model_create(const gf_config *cfg);
void gf_model_free(gf_model *m);
/* The weights of a model's matrices for generation: fp32 (as trained), bf16 (each value rounded to bfloat16)
 * or int8 (a scale per row, w = q * scale, q in [-127, 127], rounded to nearest even). The matrices are the
 * 2-D trainable tensors but the position and segment tables (biases, LayerNorm and buffers stay fp32);
 * the token embedding is one (so a tied head is too). gf_model_set_weights writes the values the low
 * precision stands for into the model's fp32 tensors (every computation then sees them) and keeps the
 * low-precision copies, on which every one-row matmul runs (gf_stream_*, generation, eval --stream):
 * int8 ones with the input quantized per call to int8 (one scale) and exact int32 sums (AVX512_VNNI, or
 * AVX2 on a CPU without it: the same sums, so the same bits), bf16 ones with fp32 inputs and sums. Once, on an fp32 model; for inference (training such a model is not
 * refused but trains the rounded values in fp32). 0, or -1 (gf_last_error). */
typedef enum { GF_WEIGHTS_FP32 = 0, GF_WEIGHTS_BF16 = 1, GF_WEIGHTS_INT8 = 2 } gf_weights;
const char *gf_weights_name(gf_weights w); /* "fp32", "bf16", "int8" */
int gf_weights_parse(const char *s, gf_weights *w); /* 0, or -1 for another name */
/* What runs w's one-row matmuls on this CPU: "AVX512_VNNI", "AVX2 (vpmaddubsw)" or "reference (scalar)" for
 * int8, "AVX-512", "AVX2" or the reference for bf16, gf_blas_kernel()'s name for fp32 ("unknown" if none). */
const char *gf_weights_kernel(gf_weights w);
int gf_model_set_weights(gf_model *m, gf_weights w);
gf_weights gf_model_weights(const gf_model *m);
/* Write checkpoint `in` (fp32) as `out` with its weight matrices int8 or bf16 (gf_model_set_weights), every
 * other tensor and its metadata (tokenizer, recipe) kept, the layout in __metadata__["weights_layout"]; such a
 * file loads (gf_model_load, gf_checkpoint_load) with its weights as they are. Atomic. 0, or -1. */
int gf_checkpoint_quantize(const char *in, const char *out, gf_weights w);
const gf_config *gf_model_config(const gf_model *m);
int64_t gf_model_num_params(const gf_model *m);
int gf_model_num_tensors(const gf_model *m);
const gf_tensor_info *gf_model_tensor(const gf_model *m, int i);
const gf_tensor_info *gf_model_find_tensor(const gf_model *m, const char *name);
float *gf_model_params(gf_model *m);   /* the whole parameter arena (gf_model_num_params floats) */
/* The gradient arena: gf_model_num_trainable floats. A model that never runs a backward (inference)
 * never allocates it; this call does (zeroed), and returns NULL if it cannot (gf_last_error). */
float *gf_model_grads(gf_model *m);
/* Parameters that get gradients and optimizer state (all but frozen tensors and buffers). */
int64_t gf_model_num_trainable(const gf_model *m);
/* Freeze every tensor whose name starts with prefix ("" = all, "blocks." = every block, "tok_emb."):
 * it keeps its values, loses its gradient, and the backward stops where nothing below is trainable
 * (feature extraction). Call before gf_adamw_create; returns how many tensors it froze, or -1. */
int gf_model_freeze(gf_model *m, const char *prefix);
/* Freeze stack k by structure, whatever its tensors are named: for k = 0 the model's input (token,
 * position and token-type embeddings, the input projection, the embedding LayerNorm) and the first
 * stack's blocks, a backbone; for k >= 1 stack k's in_proj and blocks. Returns how many tensors it froze
 * (0 if they were frozen already), or -1 (k out of range, gf_last_error). */
int gf_model_freeze_stack(gf_model *m, int k);
/* Copy into dst every tensor of src whose name starts with one of prefixes (NULL-terminated) and that dst
 * has too (a pretrained backbone into a model that adds a head). A shape that differs is an error naming
 * the tensor; returns how many tensors were copied, or -1. */
int gf_model_copy_tensors(gf_model *dst, const gf_model *src, const char *const *prefixes);

/* Each tensor as its declaration says (gf_param_spec.init, Plug-ins below): N(0, 0.02) for linear
 * and embedding weights, zero biases, LayerNorm weight 1 / bias 0; then each mixer that draws its buffers
 * (gf_mixer_ops.draw_buffers: a performer's random features) draws them from the seed. The values depend
 * only on the seed and the tensor names (and layers), not on thread count. */
void gf_model_init(gf_model *m, uint64_t seed);

/* Training mode turns dropout on, and the config's label_smoothing (the loss of a forward in training mode
 * is then the smoothed one, and the next backward its gradient). Dropout masks come from a counter-based RNG keyed by
 * (seed, step, layer, site, element): a run reproduces exactly, whatever the thread count. Turning it on
 * at step >= 1 also lets each trained layer's mixer redraw its buffers for that step from (seed, step)
 * (gf_mixer_ops.draw_buffers: a performer's `redraw`); call it once per optimizer step, as the trainer does. */
void gf_model_set_training(gf_model *m, bool training, uint64_t dropout_seed, uint64_t step);

/* A batch: B sequences of T positions. Which fields a model reads follows its config: ids (input
 * "tokens") or vectors (input "vectors"), and targets of its head: next_token, the next token at each position
 * (B*T ids); classify, one label per sequence (B ids); -1 ignores one. mask marks padding: a padded
 * position is seen by no real one, is left out of pooling, and its targets should be -1. */
typedef struct gf_batch {
    int64_t B, T;
    const int32_t *ids;      /* (B, T) input token ids */
    const int32_t *targets;  /* next_token: (B, T); classify: (B); -1 = ignored; NULL: no loss */
    int64_t n_targets;       /* how many targets are counted (not -1): weights micro-batches */
    const uint8_t *mask;     /* (B, T): 1 = a real position, 0 = padding; NULL: no padding */
    const float *vectors;    /* (B, T, d_input): the inputs of a model with input "vectors" */
    const uint8_t *segments; /* (B, T) token types 0 .. segments-1 (a sentence pair: 0, then 1); NULL: all
                              * 0. Read only by a model whose config has segments > 0. */
    const float *features;   /* (B, T, width of the first stack): the first stack's output for these inputs,
                              * computed before (gf_feature_source_create); the forward starts at the second
                              * stack. Only for a model whose first stack is fixed (gf_model_first_stack_fixed);
                              * the inputs, mask and targets are still given. NULL: from the inputs. */
    /* An encoder-decoder's (gf_config.source_vocab > 0) source sequences, read by its encoder; ids, mask and
     * targets are then the decoder's (the target side). Read by no other model. */
    int64_t S;                   /* source positions per batch row */
    const int32_t *source;       /* (B, S) source token ids, 0 .. source_vocab-1 */
    const uint8_t *source_mask;  /* (B, S): 1 = a real position, 0 = padding; NULL: no padding */
} gf_batch;

/* Forward pass over a batch; with targets also the mean loss over the counted targets into *loss (NAN
 * if none counts). Activations are kept for gf_model_backward. */
int gf_model_forward_batch(gf_model *m, const gf_batch *b, float *loss);
/* Whether the model's outputs are next-token logits over its vocabulary at every position (head next_token):
 * what streaming, generation, scoring text and the LM data source need. */
bool gf_model_predicts_next_token(const gf_model *m);
/* Of the counted targets of the last forward, how many the outputs' argmax got right (classify); -1 for
 * heads that do not count it (next_token). */
int64_t gf_model_correct(const gf_model *m);
/* Outputs per target: vocab_size for next_token, n_classes for classify (the width of gf_model_logits' rows). */
int64_t gf_model_n_outputs(const gf_model *m);

/* Forward pass over inputs (B, T) int32 token ids. With targets (B, T; -1 = ignore) it also computes
 * the mean cross-entropy into *loss (label-smoothed in training mode when the config says so; NAN if every
 * target is ignored). Activations are kept for gf_model_backward. Grows the activation arena when B*T exceeds
 * what it holds. */
int gf_model_forward(gf_model *m, const int32_t *inputs, const int32_t *targets, int64_t B, int64_t T,
                     float *loss);
/* The head's outputs of the last forward (valid until the next gf_model_backward or forward): next_token, logits
 * (B, T, vocab_size); classify, logits (B, n_classes). */
const float *gf_model_logits(const gf_model *m);
/* The last stack's output of the last forward, before the final LayerNorm (a backbone's "last hidden
 * states"): (B, T, width) floats with *B, *T, *width set, valid until the next forward or backward; NULL
 * before any forward. */
const float *gf_model_hidden(const gf_model *m, int64_t *B, int64_t *T, int64_t *width);
/* The same for stack k (0: the first stack, cfg->n_stacks: the last, what gf_model_hidden gives); NULL
 * before any forward or for a k the model does not have. */
const float *gf_model_stack_output(const gf_model *m, int k, int64_t *B, int64_t *T, int64_t *width);
/* Whether the first stack's output is a function of the inputs alone, the same at every step: the model
 * has a further stack, and the embeddings and every tensor of the first stack are frozen (so they get no
 * gradient and no dropout). Then a batch may carry that output precomputed (gf_batch.features). */
bool gf_model_first_stack_fixed(const gf_model *m);
/* Backward of the last forward with targets: accumulates d(loss)/d(params) into the gradient arena. */
int gf_model_backward(gf_model *m);
/* The same with the loss multiplied by `scale` (gradient accumulation weights micro-batches this way). */
int gf_model_backward_scaled(gf_model *m, float scale);
void gf_model_zero_grad(gf_model *m);
/* Bytes held by the activation arena (for memory reports). */
size_t gf_model_activation_bytes(const gf_model *m);
/* Bytes the activation arena needs for a forward of B sequences of T positions (to size batches). */
size_t gf_model_forward_bytes(const gf_model *m, int64_t B, int64_t T);

/* Checkpoints: safetensors, F32 (a model with int8 or bf16 weights, gf_model_set_weights: its matrices I8
 * with scales or BF16, as gf_checkpoint_quantize), names of docs/model.md, the config JSON under
 * __metadata__["config"]. Writes are atomic (temporary file, fsync, rename). */
int gf_model_save(const gf_model *m, const char *path);
/* The same with extra string metadata (e.g. "tokenizer", "train"). */
int gf_model_save_meta(const gf_model *m, const char *path, const char *const *keys, const char *const *vals,
                       int n);
gf_model *gf_model_load(const char *path);

/* ------------------------------------------------------------------------------------------------ */
/* Streaming inference: feed tokens one at a time, get the next-token logits.                       */
/*                                                                                                  */
/*     gf_stream *s = gf_stream_create(m);            // m: a loaded model; it must outlive s      */
/*     for (i = 0; i < n; i++) logits = gf_stream_step(s, prompt[i]);                              */
/*     next = argmax(logits, V); logits = gf_stream_step(s, next); ...                             */
/*     gf_stream_free(s);                                                                           */
/*                                                                                                  */
/* A Grassmann layer keeps only the reduced vectors of the last max-offset positions (a ring of     */
/* max_offset x rank floats): constant memory and time per token however long the text. An          */
/* attention layer keeps a KV cache of 2 d floats per position (hybrids keep both). With pos        */
/* "sinusoidal" or "none" there is no length limit; with "learned" the limit is max_len. The logits */
/* equal those of gf_model_forward on the same prefix (tests/unit/test_stream.c).                        */

typedef struct gf_stream gf_stream;

gf_stream *gf_stream_create(const gf_model *m);
/* Consume one token at the next position; returns the logits (vocab_size floats) for the token after
 * it, valid until the next call, or NULL (gf_last_error) for a token outside the vocabulary or a
 * position past max_len with learned positions. A failed step leaves the state unchanged. */
const float *gf_stream_step(gf_stream *s, int32_t token);
/* Consume n tokens without computing logits (a prompt, a context): the head, the most expensive part
 * of a step at a large vocabulary, is skipped. Returns 0, or -1 at the first bad token (the tokens
 * before it stay consumed). */
int gf_stream_feed(gf_stream *s, const int32_t *tokens, int64_t n);
/* Score one sequence from position 0 (the stream is reset first): feeds ids[t] and adds
 * -log p(targets[t]) to *total for every t with targets[t] >= 0 (counted in *counted); nothing past the
 * last counted target is fed. The same numbers as gf_model_forward's loss, in memory that does not grow
 * with n for Grassmann layers. Returns 0, or -1 at a bad id (gf_last_error). */
int gf_stream_score(gf_stream *s, const int32_t *ids, const int32_t *targets, int64_t n, double *total,
                    int64_t *counted);
/* Generation: the next-token logits after ids[0..n), feeding the stream only what it has not consumed (ids must
 * extend what earlier calls gave, and a fresh or reset stream starts at ids[0]). With learned positions the
 * context is the last max_len ids: past max_len, each call resets the stream and re-reads the last max_len
 * tokens (pos none or sinusoidal: constant cost, no limit). The logits equal gf_model_forward's on that
 * context; valid until the next call. NULL (gf_last_error) for a bad id or ids that do not extend the
 * stream's. grassflow generate and the Python package's generate sample from it. */
const float *gf_stream_next(gf_stream *s, const int32_t *ids, int64_t n);
/* Back to position 0 (keeps the memory). */
void gf_stream_reset(gf_stream *s);
/* Tokens consumed since creation or the last reset. */
int64_t gf_stream_pos(const gf_stream *s);
/* Bytes of context state held (rings, KV caches): flat for Grassmann, growing with attention. */
size_t gf_stream_state_bytes(const gf_stream *s);
void gf_stream_free(gf_stream *s);

/* ------------------------------------------------------------------------------------------------ */
/* AdamW                                                                                             */

typedef struct gf_adamw_hparams {
    float lr, beta1, beta2, eps, weight_decay;
} gf_adamw_hparams;
typedef struct gf_adamw gf_adamw;
/* The recipe's AdamW: lr 6e-4, betas 0.9 and 0.95, eps 1e-8, weight decay 0.01 (gf_train_opts_default's). */
gf_adamw_hparams gf_adamw_hparams_default(void);

gf_adamw *gf_adamw_create(const gf_model *m, gf_adamw_hparams hp);
void gf_adamw_free(gf_adamw *opt);
/* One step with learning rate lr (the schedule's value); weight decay only on tensors with decay.
 * Returns 0, or -1 (gf_last_error) if m's trainable parameters are not those the optimizer was created
 * for (a tensor frozen since) or its gradient arena cannot be had; nothing is changed then. */
int gf_adamw_step(gf_adamw *opt, gf_model *m, float lr);
int64_t gf_adamw_steps_taken(const gf_adamw *opt);
/* The moment arenas (gf_model_num_trainable floats each, laid out like the gradient arena: a tensor's
 * moments at its grad_offset; frozen tensors have none) and the step count, for saving and restoring the
 * training state. */
float *gf_adamw_m(gf_adamw *opt);
float *gf_adamw_v(gf_adamw *opt);
void gf_adamw_set_steps(gf_adamw *opt, int64_t t);

/* ------------------------------------------------------------------------------------------------ */
/* Safetensors files (any tensors, for tools and tests)                                             */

typedef enum { GF_DT_F32 = 0, GF_DT_I32 = 1, GF_DT_F64 = 2, GF_DT_I64 = 3, GF_DT_I8 = 4, GF_DT_BF16 = 5 } gf_dtype;

typedef struct gf_st_tensor {
    char *name;
    gf_dtype dtype;
    int ndim;
    int64_t shape[8];
    int64_t numel;
    const void *data;      /* points into the file's data section, little-endian, may be unaligned */
} gf_st_tensor;

typedef struct gf_st_file {
    char *path;
    unsigned char *buf;    /* the whole file */
    size_t size;
    int n_tensors;
    gf_st_tensor *tensors;
    char *metadata_json;   /* the __metadata__ object as JSON text, or NULL */
} gf_st_file;

/* Read and validate a safetensors file (header bounds, JSON, dtypes, shapes, offsets in bounds and
 * non-overlapping). */
gf_st_file *gf_st_read(const char *path);
void gf_st_free(gf_st_file *f);
const gf_st_tensor *gf_st_find(const gf_st_file *f, const char *name);
/* A metadata string value (NULL if absent). Returned string is malloc'd. */
char *gf_st_metadata(const gf_st_file *f, const char *key);
/* A model from an already-read checkpoint file (gf_model_load = gf_st_read + this). */
gf_model *gf_model_from_safetensors(const gf_st_file *f);

/* ------------------------------------------------------------------------------------------------ */
/* Tokenizers: text <-> token ids                                                                   */
/*                                                                                                  */
/*     gf_tokenizer *t = gf_wordpiece_load("data/bert-base-uncased/vocab.txt");                     */
/*     int32_t *ids; int64_t n;                                                                     */
/*     if (gf_tokenizer_encode(t, text, strlen(text), "text", &ids, &n)) puts(gf_last_error());     */
/*     char *back = gf_tokenizer_decode(t, ids, n, NULL);                                           */
/*     free(back); free(ids); gf_tokenizer_free(t);                                                 */
/*                                                                                                  */
/*   word       whitespace-split words, <eos> at every line end (the pytorch/examples WikiText      */
/*              convention); unknown words map to <unk>. Any bytes are accepted.                    */
/*   char       Unicode code points of UTF-8 text (invalid UTF-8: an error naming its offset).      */
/*   byte       the 256 byte values.                                                                */
/*   wordpiece  BERT uncased: basic tokenization then greedy longest-match WordPiece with ##        */
/*              continuations and [UNK] (invalid UTF-8: an error naming its byte offset).           */

typedef enum { GF_TOK_WORD = 0, GF_TOK_CHAR, GF_TOK_BYTE, GF_TOK_WORDPIECE } gf_tok_kind;
typedef struct gf_tokenizer gf_tokenizer;

/* A WordPiece tokenizer from a BERT vocab.txt (plain or .xz; id = line number - 1). */
gf_tokenizer *gf_wordpiece_load(const char *vocab_path);
/* The byte tokenizer (256 ids, id = byte value). */
gf_tokenizer *gf_tokenizer_bytes(void);
/* A word or char tokenizer whose vocabulary is built from training text[0..n) (word: order of first
 * appearance plus <eos> and <unk>; char: the sorted code points). GF_TOK_BYTE gives the byte tokenizer. */
gf_tokenizer *gf_tokenizer_build(gf_tok_kind kind, const char *train_text, size_t n);
/* The saved form, as checkpoints store it: {"kind": "...", "vocab": [...]}, and "unk_text" where the
 * tokenizer has that rule (malloc'd JSON). */
char *gf_tokenizer_to_json(const gf_tokenizer *t);
/* A tokenizer from its saved form; `source` names where the JSON came from in error messages. */
gf_tokenizer *gf_tokenizer_from_json(const char *json, const char *source);
void gf_tokenizer_free(gf_tokenizer *t);

gf_tok_kind gf_tokenizer_kind(const gf_tokenizer *t);
const char *gf_tok_kind_name(gf_tok_kind k);   /* "word", "char", "byte", "wordpiece" */
int64_t gf_tokenizer_vocab_size(const gf_tokenizer *t);
/* The piece of token `id` (*len bytes; the byte tokenizer's piece of id 0 is one NUL byte), or NULL for an
 * id outside the vocabulary. Valid as long as t. */
const char *gf_tokenizer_piece(const gf_tokenizer *t, int32_t id, size_t *len);
/* The id of piece[0..len), or -1 if it is not in the vocabulary. */
int32_t gf_tokenizer_find(const gf_tokenizer *t, const char *piece, size_t len);
/* The special tokens, -1 if the tokenizer has none: unknown (word <unk>, WordPiece [UNK]) and end of line
 * (word <eos>). */
int32_t gf_tokenizer_unk_id(const gf_tokenizer *t);
int32_t gf_tokenizer_eos_id(const gf_tokenizer *t);
/* WordPiece only: read `spelling` wherever a text writes it as the one unknown token [UNK], and decode
 * [UNK] back to it; NULL or "" turns the rule off (BERT's own reading: "<unk>" is "<", "un", "##k", ">").
 * 1 to 15 printable ASCII bytes without spaces. The rule is saved with the tokenizer. grassflow's
 * language-model corpora set "<unk>" (WikiText's marker of a word outside its vocabulary). 0, or -1 with
 * the reason (gf_last_error). gf_tokenizer_unk_text gives the spelling ("" for none). */
int gf_tokenizer_set_unk_text(gf_tokenizer *t, const char *spelling);
const char *gf_tokenizer_unk_text(const gf_tokenizer *t);

/* The ids of text[0..n) into *ids (malloc'd, caller frees; NULL when *n_ids is 0). On error (invalid
 * UTF-8, a character outside a char vocabulary) the message names `what` (e.g. a path; NULL: "text") and
 * the byte offset, and *ids is NULL. */
int gf_tokenizer_encode(const gf_tokenizer *t, const char *text, size_t n, const char *what, int32_t **ids,
                        int64_t *n_ids);
/* What a text holds beside its token ids, for figures that do not flatter a model (grassflow eval). */
typedef struct gf_text_counts {
    int64_t tokens;        /* the ids the text gave */
    int64_t words;         /* its words by gf_text_word_count's rule (whatever the tokenizer) */
    int64_t unknown;       /* ids standing for text outside the vocabulary: words mapped to <unk> (word), words
                            * that could not be pieced, mapped to [UNK] (wordpiece; not a [UNK] written in the
                            * text); 0 for char and byte */
    int64_t skipped;       /* characters outside a char vocabulary, given no id: neither context nor scored */
    int64_t first_skipped; /* the byte offset of the first of them, -1 if none */
} gf_text_counts;
/* The words of text[0..n), the count that puts results of every tokenizer in one table (perplexity per
 * word): each line (what comes before a '\n', and the text after the last '\n' if not empty) gives its
 * whitespace-separated words (runs of bytes other than space, \t, \r, \v, \f) plus one for its end.
 * This is exactly how many ids the word tokenizer gives the text (WikiText's convention, <eos> a word). */
int64_t gf_text_word_count(const char *text, size_t n);
/* gf_tokenizer_encode that also fills *counts (if given): with counts, a character outside a char
 * vocabulary is skipped and counted instead of failing the text. */
int gf_tokenizer_encode_counted(const gf_tokenizer *t, const char *text, size_t n, const char *what, int32_t **ids,
                                int64_t *n_ids, gf_text_counts *counts);
/* The ids a model continues `prompt` from: those of gf_tokenizer_encode, except that a word-level prompt
 * that does not end in a newline continues its line (no final <eos>), and an empty prompt is one start
 * token (<eos> for words, "\n" for char and byte if in the vocabulary, else id 0). Never empty. */
int gf_tokenizer_encode_prompt(const gf_tokenizer *t, const char *prompt, size_t n, const char *what,
                               int32_t **ids, int64_t *n_ids);
/* The text of ids (n) (malloc'd, NUL-terminated; *len, if given, is its length in bytes: the byte
 * tokenizer may put NULs inside): words joined by spaces with <eos> as a newline; chars and bytes
 * concatenated; WordPiece pieces joined by spaces with ## continuations glued to the previous piece.
 * Ids outside the vocabulary are skipped. */
char *gf_tokenizer_decode(const gf_tokenizer *t, const int32_t *ids, int64_t n, size_t *len);
/* A sentence pair as BERT reads it, and as the snli task lays out its examples: [CLS] premise [SEP]
 * hypothesis [SEP] (*n ids, malloc'd) with token types 0 then 1 (*segments, malloc'd), each sentence cut to
 * its first max_sent pieces. t must have [CLS] and [SEP] (a BERT WordPiece vocabulary). 0, or -1
 * (gf_last_error). */
int gf_nli_encode_pair(const gf_tokenizer *t, const char *premise, const char *hypothesis, int64_t max_sent,
                       int32_t **ids, uint8_t **segments, int64_t *n);
/* One text as a model reads it alone (grassflow features, the Python package's features): [CLS] text [SEP]
 * when t has [CLS] and [SEP] (a BERT vocabulary), else the ids of gf_tokenizer_encode; *n ids, malloc'd. A
 * text of no tokens is an error naming `what` (NULL: "text"). 0, or -1 (gf_last_error). */
int gf_encode_single(const gf_tokenizer *t, const char *text, size_t len, const char *what, int32_t **ids,
                     int64_t *n);

/* A checkpoint and what grassflow train stored with it: its tokenizer (*tok; NULL if it has none, as
 * after gf_model_save) and, with train_json non-NULL, its training recipe (malloc'd JSON, NULL if none).
 * The file is read once; a stored tokenizer whose size differs from the model's vocab_size is an error.
 * A file an importer detects (alphaXiv's best.pt) is read by it (gf_import_load), without a recipe. */
gf_model *gf_checkpoint_load(const char *path, gf_tokenizer **tok, char **train_json);
/* What a grassflow checkpoint (best/last.safetensors, gf_model_save's files) or a run's state.safetensors
 * holds, as a malloc'd JSON object: "file", "kind" ("model" or "training state"), "bytes", "producer",
 * "config" (as this version writes it), "params", "head", "tokenizer" ({"kind", "vocab_size"} or null),
 * "recipe" (the training recipe, when train saved it), "task", "step" and "val_loss" (a model) or
 * "best_val_loss", "best_val_acc", "data" and "frozen" (a state); keys the file lacks are left out. The file
 * is checked as gf_model_load checks it. NULL (gf_last_error) when it cannot be read. */
char *gf_checkpoint_describe(const char *path);

/* A grassflow checkpoint (as gf_checkpoint_load) or a checkpoint another tool wrote, in a format one of
 * grassflow's importers reads:
 *   hf-distilbert  a Hugging Face DistilBERT folder as a user downloads it: config.json, model.safetensors
 *                  (float32) and vocab.txt (uncased). Tensor names as Hugging Face writes them, with or
 *                  without the "distilbert." prefix; the MLM or classifier layers of the file are not read.
 *                  The model: emb_norm, ln_eps 1e-12, post-norm bidirectional attention, exact GELU, and a
 *                  classify head of 2 classes (the fewest a classifier has) and fresh weights; a task's head
 *                  replaces it (docs/model.md, "Imported checkpoints").
 *   alphaxiv       a checkpoint of alphaXiv's reproduction of the paper (torch.save's best.pt, a .pt or .pth
 *                  zip): GrassmannGPT or BaseTransformer, read without Python, with BERT's vocabulary when
 *                  vocab.txt beside it (or GRASSFLOW_DATA's bert-base-uncased/vocab.txt) has its size.
 * The model is a grassflow model (saving it writes grassflow's format). Missing, misnamed or misshapen
 * tensors are errors naming the tensor, the shape found and the shape config.json implies; non-finite
 * weights are refused as in grassflow's checkpoints; config.json and tokenizer_config.json keys of the
 * wrong type or out of range are errors in the file's own names. */
gf_model *gf_import_load(const char *path, gf_tokenizer **tok);
/* The importer that reads path ("hf-distilbert", or one a program registered), or NULL (a grassflow
 * checkpoint, or nothing known). */
const char *gf_import_detect(const char *path);


/* A classifier on a pretrained checkpoint (grassflow train --backbone CKPT --head FILE). ckpt is anything
 * gf_import_load reads: a grassflow language model, or a Hugging Face DistilBERT folder. The model is the
 * checkpoint's embeddings and blocks as its first stack (its own output layer dropped), with the stack of
 * head_path on top (a JSON object: one "stacks" entry, {"name": "head", "d_model": ..., "d_ff": ...,
 * "n_layer": ..., "layers": [...]}; "name" defaults to "head"), reading it through head.in_proj, and a
 * classify head of n_classes 2 until the task sets its own number (gf_task_ops.configure). Into *cfg, with
 * *tok the checkpoint's tokenizer (NULL if it has none; the caller frees it). A checkpoint that is a
 * classifier, or that has stacks of its own, is refused. 0, or -1 (gf_last_error names the checkpoint or the
 * head file; *tok is NULL). */
int gf_backbone_config(const char *ckpt, const char *head_path, gf_config *cfg, gf_tokenizer **tok);
/* Copy the checkpoint's embeddings and blocks into m (a model of gf_backbone_config's config, initialised)
 * and, with freeze, freeze them (gf_model_freeze_stack(m, 0)); says how many tensors it took through the
 * note handler (gf_set_note_handler). 0, or -1 (gf_last_error). */
int gf_backbone_load(gf_model *m, const char *ckpt, bool freeze);

/* ------------------------------------------------------------------------------------------------ */
/* Incremental detokenisation: print text as tokens arrive                                          */
/*                                                                                                  */
/*     gf_detok *d = gf_detok_create(t, prompt, strlen(prompt));                                    */
/*     fputs(prompt, stdout);                                                                       */
/*     for each sampled id: { s = gf_detok_push(d, id, &len); fwrite(s, 1, len, stdout); }          */
/*     s = gf_detok_flush(d, &len); fwrite(s, 1, len, stdout); gf_detok_free(d);                    */
/*                                                                                                  */
/* Each push costs O(piece length). Without a prompt the pieces concatenate to exactly              */
/* gf_tokenizer_decode of the whole sequence. Byte tokenizers hold back an incomplete UTF-8         */
/* sequence until it completes (or turns out invalid: then its bytes go out as they are); the       */
/* flush returns what is held back. With a prompt, a word or WordPiece continuation of a prompt     */
/* that does not end in a newline starts with a space (unless it starts with a newline): the text   */
/* is prompt, that space, then the decoded continuation, as `grassflow generate` prints it.         */

typedef struct gf_detok gf_detok;

/* prompt may be NULL (n 0); only its last byte and whether it is empty matter. t must outlive d. */
gf_detok *gf_detok_create(const gf_tokenizer *t, const char *prompt, size_t n);
/* The text token id adds (*len bytes, NUL-terminated; may be empty), valid until the next call. */
const char *gf_detok_push(gf_detok *d, int32_t id, size_t *len);
/* The bytes still held back (an incomplete UTF-8 sequence of a byte tokenizer): call it at the end. */
const char *gf_detok_flush(gf_detok *d, size_t *len);
void gf_detok_free(gf_detok *d);

/* ------------------------------------------------------------------------------------------------ */
/* Sampling the next token                                                                          */
/*                                                                                                  */
/*     gf_sampler *smp = gf_sampler_create(V, (gf_sampler_params){.temperature = 0.8, .top_k = 40,  */
/*                                                                .top_p = 0.95, .seed = 1234});    */
/*     int32_t next = gf_sampler_sample(smp, logits);    // -1 (gf_last_error): non-finite logits   */
/*                                                                                                  */
/* Temperature 0 is greedy (the first largest logit). Otherwise p = exp((logit - max) / T);         */
/* the candidates are ordered by p, largest first (ties: the smaller id first), cut to the          */
/* top_k first (0 = all), then to the shortest prefix holding at least top_p of their mass          */
/* (1 = all), and one is drawn in that order with the n-th uniform number of a counter-based        */
/* generator keyed by the seed (n counts the draws): the same seed gives the same tokens,           */
/* whatever else the program does. Neither cut sorts the whole vocabulary: top-k selects its k      */
/* and sorts only those, the rest is found by a weighted selection; the tokens are exactly          */
/* those of a full sort (src/infer/sample.c).                                                       */

typedef struct gf_sampler_params {
    double temperature;   /* >= 0; 0 = greedy */
    int64_t top_k;        /* >= 0; 0 = no cut */
    double top_p;         /* in (0, 1]; 1 = no cut */
    uint64_t seed;
} gf_sampler_params;
typedef struct gf_sampler gf_sampler;
/* grassflow generate's defaults: temperature 1, no top-k or top-p cut, seed 1234. */
gf_sampler_params gf_sampler_params_default(void);

gf_sampler *gf_sampler_create(int64_t vocab_size, gf_sampler_params p);
/* The next token for logits (vocab_size), or -1 (gf_last_error) if a logit is NaN or infinite. Each call
 * takes the next number of the generator (greedy ones too; a failed call takes none). */
int32_t gf_sampler_sample(gf_sampler *s, const float *logits);
void gf_sampler_free(gf_sampler *s);

/* ------------------------------------------------------------------------------------------------ */
/* Decoding an encoder-decoder (gf_config.source_vocab > 0): the target for a source                */
/*                                                                                                  */
/*     gf_decode_opts o = gf_decode_opts_default();     // greedy; o.beam = 5 for a beam search     */
/*     o.bos = o.eos = eos_id;  o.max_len = 40;                                                     */
/*     int64_t n;  double score;                                                                    */
/*     gf_model_decode(m, src, S, &o, out, &n, &score); // out: the n target ids, the end's not     */
/*                                                                                                  */
/* A hypothesis is the target tokens after bos; its log-probability the sum of the decoder's        */
/* log-softmax of each (the end token's too, when it has one); its score that divided by GNMT's     */
/* length penalty ((5 + n) / 6)^length_penalty, n its tokens with the end's (0: the sum itself).    */
/* Each step extends every live hypothesis by every token, orders the extensions by their           */
/* log-probability (ties: the earlier hypothesis, then the smaller id) and walks them: one ending   */
/* in eos is finished (the best `beam` finished are kept), any other lives on, until `beam` live;   */
/* a hypothesis of max_len tokens is finished as it is. The search stops when nothing lives, or     */
/* when `beam` are finished and no live one could still score above the worst of them (its          */
/* log-probability only falls; the penalty is at most max_len's). Beam 1 is greedy: the first       */
/* largest token each step, until eos (a length penalty needs beam >= 2: it is refused with beam 1, */
/* and so is one that overflows a double at max_len). The encoder runs once per source (its keys    */
/* and values for the decoder's cross ops too), and each live hypothesis is a stream of the decoder */
/* that feeds one token a step, its layers' states carried as generate carries them (O(1) for       */
/* Grassmann and the GRUs); a decoder layer whose mixer has no step (a plug-in's) makes it a full   */
/* forward of the live hypotheses at every step instead (src/infer/decode.c; tests/unit/            */
/* test_decode.c holds both to every hypothesis scored on a small model, and the streamed search to */
/* the full one).                                                                                   */

/* The widest beam: each hypothesis holds two decoder streams (a Transformer's keys and values for max_len
 * positions), so a width of thousands would cost gigabytes for one word. */
#define GF_DECODE_MAX_BEAM 256
typedef struct gf_decode_opts {
    int64_t beam;            /* hypotheses kept each step, 1 (greedy) to GF_DECODE_MAX_BEAM */
    double length_penalty;   /* GNMT's alpha, >= 0 (above 0 needs beam >= 2); 0: the log-probability */
    int64_t max_len;         /* target tokens at most, the end's not counted, >= 1; 0: gf_decode_max_len */
    int32_t bos, eos;        /* the decoder's first input, and the token that ends a target */
} gf_decode_opts;
/* beam 1, length_penalty 0, max_len 0 (the model's: gf_decode_max_len), bos and eos 0. */
gf_decode_opts gf_decode_opts_default(void);
/* The target length decoding m stops at when its options say 0: the model's max_len with learned positions
 * (the decoder reads bos and max_len - 1 tokens), else 256. */
int64_t gf_decode_max_len(const gf_model *m);
/* The best target for source[0..S) (ids in [0, source_vocab)) into out (room for max_len ids), its tokens
 * without the end token into *n, its score into *score (NULL: not wanted). The model is put in evaluation
 * mode (gf_model_set_training(m, false, 0, 0)). 0, or -1 (gf_last_error): not an encoder-decoder, bad
 * options, a source the model refuses (empty, too long, ids out of range). */
int gf_model_decode(gf_model *m, const int32_t *source, int64_t S, const gf_decode_opts *o, int32_t *out,
                    int64_t *n, double *score);
/* An ensemble of n_models encoder-decoders decoded as one model (gf_model_decode of one is the ensemble of
 * one): each step, a token's log-probability is the log of the mean of the models' probabilities of it (their
 * mixture; each model runs its own encoder and decoder streams), and the search is gf_model_decode's. The
 * models must share source_vocab and vocab_size, and their tokens must mean the same (the caller's to check:
 * grassflow eval --ensemble compares their tokenizers); max_len 0 is the smallest gf_decode_max_len of them.
 * Every model is put in evaluation mode. 0, or -1 (gf_last_error), as gf_model_decode (a model's refusal
 * named "the ensemble's model k (of n_models, from 0)"), or when the models differ in a vocabulary. The
 * decoders stream when every model's can; else every model runs full forwards at each step. */
#define GF_DECODE_MAX_ENSEMBLE 64
int gf_ensemble_decode(gf_model *const *models, int64_t n_models, const int32_t *source, int64_t S,
                       const gf_decode_opts *o, int32_t *out, int64_t *n, double *score);


/* ------------------------------------------------------------------------------------------------ */
/* Training: batches, data sources, evaluation, the training loop                                   */
/*                                                                                                  */
/*     gf_source *tr = gf_block_source_create(train_ids, n_train, 128, 1234); // blocks of 129 tokens  */
/*     gf_source *va = gf_block_source_create(valid_ids, n_valid, 128, 1234);                          */
/*     gf_train_opts o;                                                                             */
/*     gf_train_opts_default(&o);                                                                   */
/*     o.steps = 1000; snprintf(o.out_dir, sizeof o.out_dir, "runs/mine");                          */
/*     gf_train(m, tr, va, &o, false, on_event, NULL, &res);  // OUT/last, best, state, metrics     */
/*     gf_evaluate(m, va, 16, &loss, &n_counted);                                                   */
/*     gf_source_free(tr); gf_source_free(va);                                                      */
/*                                                                                                  */
/* examples/train.c is a complete program. The trainer knows batches, never what an example is:     */
/* blocks of text, sentence pairs, image patches are all sources.                                   */

/* The batch type, gf_batch, is defined with the model above. */

/* The splits of a data set. */
enum { GF_TRAIN = 0, GF_VALID = 1, GF_TEST = 2 };

/* What a source's batches are checked for (gf_source.check). */
typedef enum { GF_USE_TRAIN = 0, GF_USE_EVAL = 1 } gf_source_use;

/* A data source: one split of a data set behind function pointers (struct gf_source, its members and
 * GF_SOURCE_VERSION: grassflow_plugin.h, for a program that writes its own). */
typedef struct gf_source gf_source;

/* Free a source through its destroy member (nothing if it has none). NULL is fine. */
void gf_source_free(gf_source *s);
/* A source's batches as the library takes them: fill (gf_source_fill), or the evaluation examples
 * (n_eval_examples and fill_eval, or fill's epoch-0 order without them), with *batch zeroed first. */
int gf_source_fill(gf_source *s, int64_t epoch, int64_t first, int64_t n, gf_batch *batch);
int64_t gf_source_n_eval(gf_source *s);
int gf_source_fill_eval(gf_source *s, int64_t first, int64_t n, gf_batch *batch);

/* What decoding a split gives against its references (gf_evaluate_decoding). */
#define GF_DECODE_BY_LEN 64
typedef struct gf_decode_scores {
    int64_t examples, wrong;     /* examples decoded; those whose target is not their reference exactly */
    int64_t tokens, edits;       /* the references' tokens; the edit distance to them summed (substitutions,
                                  * insertions, deletions: Levenshtein's) */
    /* the same two counts by source length: [S] for sources of S ids, [GF_DECODE_BY_LEN] for longer ones */
    int64_t len_examples[GF_DECODE_BY_LEN + 1], len_wrong[GF_DECODE_BY_LEN + 1];
} gf_decode_scores;
/* Every evaluation example of src (an encoder-decoder's sequence pairs, as gf_source_fill_eval gives them:
 * the source, the targets up to o->eos) decoded with o (gf_model_decode) and scored against its targets into
 * *out: the word error rate of G2P is wrong / examples, the phoneme error rate edits / tokens. Examples one
 * after another with the same source and targets other than the first's are one example with several
 * references (a word's pronunciations): it is decoded once, wrong unless its target is one of them, and its
 * edits and tokens are those of the nearest (the first among equals); the same pair again is an example of its
 * own. 0 or -1. */
int gf_evaluate_decoding(gf_model *m, gf_source *src, const gf_decode_opts *o, gf_decode_scores *out);
/* The same, each example decoded by an ensemble (gf_ensemble_decode). */
int gf_ensemble_evaluate_decoding(gf_model *const *models, int64_t n_models, gf_source *src, const gf_decode_opts *o,
                                  gf_decode_scores *out);

/* The language-model source over ids[0..n) (int32 token ids >= 0, borrowed: they must outlive the
 * source). Training examples: the n / (seq_len + 1) contiguous, non-overlapping blocks of seq_len + 1
 * tokens (inputs the first seq_len, targets the last seq_len), in an order shuffled per epoch by a
 * Fisher-Yates shuffle keyed by (seed, epoch). Evaluation examples: blocks of seq_len + 1 tokens with
 * stride seq_len, so every token but the first is predicted once; the last block is padded (input 0,
 * target -1). */
gf_source *gf_block_source_create(const int32_t *ids, int64_t n, int64_t seq_len, uint64_t seed);

/* A source over `inner` whose batches carry model m's first-stack output (gf_batch.features), computed
 * once: for a model whose first stack is fixed (gf_model_first_stack_fixed: a frozen backbone under a
 * trained head), which then runs it once per example rather than once per example and epoch. The first
 * fill runs every example of `use` (GF_USE_TRAIN: fill's epoch-0 order; GF_USE_EVAL: the evaluation
 * examples) through m, dropout off, `batch` examples a forward, as gf_train or gf_evaluate with that
 * batch would: evaluation with that batch then gets bit for bit the features it would compute, under any
 * BLAS kernel (an evaluation row is found by its index and checked against its content: an example that
 * occurs twice keeps the features of its own place in its batch, as sgemm may round a row differently at
 * another place). Training rows are found by their content (inputs, token types and mask up to the last
 * real position). A batch with a row not seen then goes without features (the model computes them). The cache may take at most max_bytes (*bytes: what it
 * takes); more, or m not fixed, gives NULL with gf_last_error, and inner stays the caller's. On success
 * the new source owns inner and must be used with m only. */
gf_source *gf_feature_source_create(gf_model *m, gf_source *inner, gf_source_use use, int64_t batch,
                                    size_t max_bytes, size_t *bytes);

/* Target-weighted mean loss of m over src's evaluation examples, `batch` examples per forward pass,
 * dropout off: for the token-block source, the token-weighted mean next-token loss over the whole split.
 * n_counted (may be NULL): how many targets were counted. */
int gf_evaluate(gf_model *m, gf_source *src, int64_t batch, double *mean_loss, int64_t *n_counted);

/* The same, with what a classifier is judged by. confusion: NULL, or n_classes x n_classes counts that
 * gf_evaluate_result zeroes and fills (row: the true label, column: the argmax of the logits). */
typedef struct gf_eval_result {
    double mean_loss;
    int64_t n_counted;
    int64_t n_correct;            /* classify heads: counted targets whose argmax is right; -1 for next_token */
    int64_t *confusion;
} gf_eval_result;
int gf_evaluate_result(gf_model *m, gf_source *src, int64_t batch, gf_eval_result *r);

/* One example's prediction by a classifier (gf_predict): valid during the callback only. */
typedef struct gf_prediction {
    int64_t index;                /* the example's place among the source's evaluation examples, from 0 */
    int32_t label;                /* the predicted class: the first largest logit, as gf_evaluate_result counts */
    int32_t gold;                 /* the example's target; -1 when it has none */
    int64_t n_classes;
    const double *probs;          /* (n_classes) the softmax of the logits, in double: they sum to 1 */
    const float *logits;          /* (n_classes) */
    int64_t n_ids;                /* the input as the model read it (after any cut), padding left out */
    const int32_t *ids;           /* (n_ids) token ids; NULL for a model of input vectors */
    const uint8_t *segments;      /* (n_ids) token types; NULL when the source gives none */
} gf_prediction;
/* 0: go on; > 0: stop (gf_predict returns 0); < 0: an error (gf_predict returns -1; set gf_last_error). */
typedef int (*gf_predict_cb)(const gf_prediction *p, void *ctx);
/* Classifier m's prediction for every evaluation example of src, in order, examples without a target
 * included, each handed to cb: the same batches (`batch` examples a forward pass, fewer when memory asks),
 * so the same logits bit for bit, as gf_evaluate_result takes with that batch; the share of examples with a
 * target whose label is their gold is its accuracy. Dropout off. 0, or -1 (gf_last_error). */
int gf_predict(gf_model *m, gf_source *src, int64_t batch, gf_predict_cb cb, void *ctx);
/* A classifier trained with --task snli on n sentence pairs given in memory: probs (n x 3, each row summing
 * to 1, classes in the snli task's order: entailment, neutral, contradiction) and, if labels is not NULL,
 * the predicted class of each (n). Each pair is read as the snli task reads a file of pairs (laid out as
 * gf_nli_encode_pair does, each sentence cut to max_sent pieces: the run's "max_sent", 48 by default) and
 * batched as its evaluation batches them (gf_predict with `batch`, as grassflow predict --batch, default 16):
 * the same numbers as grassflow predict on a file of the same pairs in the same order. tok: the checkpoint's
 * (gf_checkpoint_load). 0, or -1 (gf_last_error: invalid UTF-8 names the pair). */
int gf_nli_predict(gf_model *m, const gf_tokenizer *tok, const char *const *premise, const char *const *hypothesis,
                   int64_t n, int64_t max_sent, int64_t batch, double *probs, int32_t *labels);

/* -log softmax(logits)[target] of one row of V logits (0 <= target < V): the same log-sum-exp, in the
 * same precision, as the loss of gf_model_forward (for scoring logits from gf_stream_step). */
float gf_log_softmax_nll(const float *logits, int64_t V, int32_t target);

/* Test hooks of the training loop (NULL members in production). */
typedef struct gf_train_hooks {
    /* After each step's backward passes: the step (1-based), its loss and global gradient norm, before
     * the non-finite policy looks at them; it may change both (a test makes a loss NaN, as a diverging
     * run would). */
    void (*step_loss)(int64_t step, double *loss, double *grad_norm, void *ctx);
    void *ctx;
} gf_train_hooks;

/* The training recipe: the optimizer, the schedule and the run's policies. What the data and the model
 * were made from is the task's recipe (gf_task_recipe), stored beside it through made_from_json. */
/* The longest path (with its NUL) grassflow builds or stores: Linux's PATH_MAX. */
#define GF_PATH_MAX 4096

/* The precision of matmuls (gf_set_matmul_precision, under Utilities, says what each means). */
typedef enum { GF_PRECISION_FP32 = 0, GF_PRECISION_BF16 = 1, GF_PRECISION_FP32_FAST = 2 } gf_precision;

typedef struct gf_train_opts {
    int64_t batch;                /* examples per micro-batch */
    int64_t steps, epochs;        /* total optimizer steps; 0: epochs * steps per epoch */
    int64_t warmup, accum;        /* linear warmup steps; micro-batches per step */
    int64_t eval_every, log_every;
    int64_t stop_at;              /* stop (after saving) once this step is done, as if interrupted; 0: never */
    int on_nonfinite;             /* a NaN/Inf loss or gradient: GF_NONFINITE_STOP or GF_NONFINITE_SKIP */
    bool feature_cache;           /* a model whose first stack is fixed (gf_model_first_stack_fixed: a frozen
                                   * backbone): gf_train computes that stack's output once per example and keeps
                                   * it (gf_feature_source_create, within a quarter of memory) for each split
                                   * the run goes through twice or more, the same bits as computing it at
                                   * every step; default true, false for runs that predate it */
    bool accept_changed_data;     /* not stored: resume although the data differ from those the state was
                                   * saved with (each split's examples and a hash of them, stored in the
                                   * state); the run then no longer continues bit for bit. false: refused */
    bool overwrite;               /* not stored: a new run (not resume) may start in an out_dir that holds a
                                   * run (its state, last, best or metrics); they are removed first.
                                   * false (the default): gf_train refuses such a folder */
    volatile const sig_atomic_t *interrupt; /* not stored: when *interrupt becomes non-zero (a signal handler),
                                   * the current step finishes, the state is saved and gf_train returns
                                   * GF_TRAIN_INTERRUPTED */
    float lr, min_lr, wd, clip, beta1, beta2, eps;
    uint64_t seed;                /* dropout masks (the sources take their own seed for the data order) */
    char out_dir[GF_PATH_MAX];    /* paths longer than GF_PATH_MAX - 1 are refused, never cut short */
    const char *made_from_json;   /* a JSON object whose members are stored in the recipe beside the
                                   * trainer's own (what the run was made from: its task, data and model,
                                   * gf_task_recipe_to_json); the trainer reads only its "task", whose unit
                                   * and metric metrics.jsonl uses; NULL: nothing */
    const char *tokenizer_json;   /* not in the recipe: stored as "tokenizer" in every checkpoint and
                                   * state, and checked on resume; NULL: none */
    gf_train_hooks hooks;         /* not stored */
    /* ---- appended after grassflow 0.2 (older recipes lack these keys: read as 0 / "") ---- */
    int64_t save_every;           /* also keep the model at every save_every-th step as OUT/step-NNNNNN.safetensors
                                   * (six digits or more, like last.safetensors); 0: none */
    int64_t patience;             /* early stopping: the run ends (finished, the reason stored in its state) once
                                   * this many scheduled evaluations in a row (every eval_every steps) found no
                                   * better validation score than the best; 0: never. Needs eval_every > 0 */
    int64_t decay_from;           /* set by gf_train, a caller leaves it 0: when a resume changes the run's total
                                   * (an extended run, gf_train_lr), the step from which the learning rate falls
                                   * from decay_from_lr to min_lr along a half cosine ending at the last step */
    double decay_from_lr;
    char init_from[GF_PATH_MAX];  /* not read by the trainer: the checkpoint whose weights the run started from
                                   * (gf_run_init_from sets it and the two below); "": none */
    int64_t init_from_bytes;      /* its size */
    uint64_t init_from_fnv1a64;   /* FNV-1a 64 of its bytes */
    /* ---- appended after grassflow 0.3 ---- */
    gf_precision precision;       /* the matmuls of training steps (gf_train_step sets it for the step's forward
                                   * and backward, gf_set_matmul_precision): GF_PRECISION_FP32 (the default, bit
                                   * for bit as before), GF_PRECISION_BF16 or GF_PRECISION_FP32_FAST; weights,
                                   * AdamW moments, LayerNorm, softmax, the loss and evaluation stay fp32 (fp32-fast
                                   * and bf16 round some of them differently). Recorded in the recipe
                                   * ("precision", written when not fp32); a resume keeps it */
    bool deterministic;           /* each example's gradient computed on its own and the step's summed in one
                                   * fixed pairwise order (docs/distributed.md), so that a data-parallel run
                                   * equals one process on as many threads bit for bit (gf_train refuses ranks
                                   * on other thread counts); recorded ("deterministic": true) when set */
} gf_train_opts;

enum { GF_NONFINITE_STOP = 0, GF_NONFINITE_SKIP = 1 };
/* skip mode stops anyway after this many consecutive non-finite steps: the run is diverging */
#define GF_MAX_NONFINITE_SKIPS 10
/* gf_train's return value when opts.interrupt stopped it (state saved, resumable) */
#define GF_TRAIN_INTERRUPTED 2

/* AdamW 6e-4 -> 6e-5 cosine, 100 warmup steps, weight decay 0.01, clip 1.0, batch 32, seq_len 128,
 * one epoch, eval every 500, log every 10, seed 1234. */
void gf_train_opts_default(gf_train_opts *o);

typedef enum {
    GF_EV_STEP, GF_EV_EVAL, GF_EV_SAVED, GF_EV_DONE, GF_EV_STOPPED, GF_EV_INTERRUPTED, GF_EV_SKIPPED,
    GF_EV_EARLY_STOP, /* the run ended early (gf_train_opts.patience), or a resumed run had: what says why; it
                       * is finished (a resume goes on only when asked for another total) */
    GF_EV_PROGRESS    /* GF_EV_STEP's fields between two log_every steps, once GF_PROGRESS_S seconds have
                       * passed since the last step line: for a person watching, not written to metrics.jsonl */
} gf_train_event_kind;
#define GF_PROGRESS_S 5.0

typedef struct gf_train_event {
    gf_train_event_kind kind;
    int64_t step, total_steps, epoch;
    double loss, lr, grad_norm, tokens_per_s, elapsed_s, eta_s; /* tokens: counted targets */
    double val_loss, val_ppl, best_val_loss;
    double val_acc;               /* GF_EV_EVAL of a classifier: accuracy on the validation source; else NAN */
    bool is_best;
    const char *path;             /* GF_EV_SAVED, GF_EV_STOPPED, GF_EV_INTERRUPTED, GF_EV_EARLY_STOP */
    const char *what;             /* GF_EV_SKIPPED: what was not finite; GF_EV_EARLY_STOP: why it stopped */
    /* GF_EV_STEP, GF_EV_EVAL, GF_EV_SKIPPED (as written to metrics.jsonl): where the run is, counted from
     * its first step across resumes (elapsed_s above is this session's) */
    double epochs;                /* epochs of the training source done: step / steps per epoch */
    double seen;                  /* counted targets trained on (tokens, pairs: the task's unit); NAN when
                                   * unknown (a run resumed from a state saved before grassflow counted them) */
    double run_elapsed_s;         /* wall-clock seconds of the run: this session's plus the earlier ones' */
    double val_score;             /* GF_EV_EVAL: the run's metric on the validation source (the task's,
                                   * gf_task_metric: perplexity, accuracy, ...); NAN otherwise */
} gf_train_event;

typedef void (*gf_train_cb)(const gf_train_event *e, void *ctx);

typedef struct gf_train_result {
    int64_t steps, tokens;        /* tokens: counted targets trained on */
    double best_val_loss, last_val_loss, tokens_per_s, train_s, wall_s;
    double best_val_acc;          /* a classifier scored by accuracy: the dev accuracy of best.safetensors;
                                   * else NAN */
    double best_val_score;        /* the run's metric (gf_task_metric) of best.safetensors on the validation
                                   * source: what chose it (perplexity: exp(best_val_loss)); NAN: no evaluation */
} gf_train_result;

/* Train m on the training source, evaluating on the validation source every eval_every steps and at
 * the end: AdamW, warmup + cosine schedule, micro-batches weighted by their counted targets, global
 * gradient-norm clipping. Writes OUT/last.safetensors, OUT/best.safetensors (best validation loss),
 * OUT/state.safetensors (weights, AdamW moments, step) and OUT/metrics.jsonl (its rows: gf_metrics_read),
 * every write atomic. With
 * resume, the weights, moments and step come from OUT/state.safetensors (same config, tokenizer and
 * data: each split's examples and a hash of their batches are stored in the state, and a change is
 * refused unless o->accept_changed_data) and the run continues bit for bit; asked for another total than
 * the saved recipe's (o->steps or o->epochs), the run is extended (or ends sooner), its schedule changed as
 * gf_train_lr says and recorded in the recipe, and a total below the steps taken is refused. A resumed run
 * that had stopped early (o->patience) and keeps its total trains no more (GF_EV_EARLY_STOP says why).
 * With o->init_from set (gf_run_init_from), a new run first evaluates its starting weights (step 0).
 * Without resume, an OUT that holds a run is refused unless o->overwrite (gf_run_dir_holds_run says what
 * is there). cb (may be NULL) gets progress events. Returns 0,
 * GF_TRAIN_INTERRUPTED, or -1 (gf_last_error). */
int gf_train(gf_model *m, gf_source *train, gf_source *valid, const gf_train_opts *o, bool resume,
             gf_train_cb cb, void *ctx, gf_train_result *res);

/* Whether directory dir holds a training run: 1 if any of state.safetensors, last.safetensors,
 * best.safetensors, metrics.jsonl is there, with what into what (a sentence: the files, and the last
 * step metrics.jsonl logged); 0 if not (or dir does not exist). */
int gf_run_dir_holds_run(const char *dir, char *what, size_t size);
/* 0 if a new run (not a resume) may start in dir: it does not exist, or holds no run, or overwrite; -1
 * with gf_last_error naming what is there: a live run (its PID), or a run's files. gf_train checks this
 * itself; a program calls it to refuse before loading its data. */
int gf_run_dir_check_new(const char *dir, bool overwrite);

/* One line of a run's metrics.jsonl (gf_metrics_read). */
typedef struct gf_metrics_row {
    char type[16];                /* "train" (a logged step), "eval", "skipped", "start" (a session began: a
                                   * new run or a resume), or what a later version logs (cut to 15 bytes).
                                   * Rows of older files, which have no type, are given one by their keys */
    int64_t step;                 /* optimizer steps done */
    double epoch;                 /* epochs of the training data done (older files: the integer data epoch of
                                   * train rows); NAN when the row does not say */
    double elapsed_s;             /* wall-clock seconds since the run began, across resumes (older files:
                                   * since the session began, train rows only); NAN when the row does not say */
    double seen;                  /* counted targets trained on (gf_metrics.counted); NAN when not logged */
    double loss;                  /* train: the mean loss since the last train row; eval: the validation
                                   * loss; NAN for other rows, or null in the file (a diverged run) */
    double score;                 /* eval: the task's metric on the validation data (perplexity, accuracy:
                                   * gf_metrics.metric); NAN otherwise */
    double lr;                    /* train: the learning rate of the step; NAN otherwise */
} gf_metrics_row;

typedef struct gf_metrics {
    gf_metrics_row *rows;         /* in file order; a run resumed after a kill logs the steps since its last
                                   * save again, and the later row of a step is the one the run continued from */
    int64_t n;
    char counted[32];             /* what `seen` counts: "tokens", "pairs" (the task's unit); "" when the
                                   * file does not say (older files) */
    char metric[32];              /* what `score` is: a metric's name (gf_metric: "ppl", "accuracy", a task's own);
                                   * "" when no row says */
    bool legacy;                  /* some rows have no type: written before grassflow logged one */
} gf_metrics;

/* Read DIR/metrics.jsonl (a training run's log) into *out: every line a JSON object with a "step"; files of
 * every grassflow version are read (missing keys are NAN). A missing or unreadable file, or a line that is
 * not such an object, is -1 with gf_last_error naming the file and the line. Free with gf_metrics_free. */
int gf_metrics_read(const char *dir, gf_metrics *out);
void gf_metrics_free(gf_metrics *m);

/* Write size bytes of data to path atomically (a temporary file, fsync, rename): path holds either its old
 * content or the new one, never part of it. 0, or -1 with gf_last_error naming the path. */
int gf_write_file_atomic(const char *path, const void *data, size_t size);

/* The learning rate at `step` (0-based) of `total`: linear warmup to lr, then cosine to min_lr. */
double gf_lr_at(int64_t step, int64_t total, int64_t warmup, double lr, double min_lr);
/* The learning rate of step `step` (0-based) of a run of `total` steps with recipe o: gf_lr_at, except in a
 * run whose total was changed on resume (o->decay_from > 0), where from step decay_from on it falls from
 * decay_from_lr to min_lr along a half cosine that reaches min_lr at the last step:
 *     min_lr + (decay_from_lr - min_lr) * (1 + cos(pi * (step - decay_from) / (total - decay_from))) / 2.
 * gf_train sets decay_from when a resume asks for another total than the saved one, at the step S the run
 * stands at, with decay_from_lr the rate step S had under the old total: the rate goes on from where it
 * was (a finished run goes on at min_lr). While the warmup is not over (S <= warmup) the schedule is
 * instead gf_lr_at over the new total, whose first S steps are those already taken: the extended run is
 * then the run asked for the new total from the start, bit for bit. */
double gf_train_lr(const gf_train_opts *o, int64_t step, int64_t total);

/* Optimizer steps in one epoch of the training source (the last one may be short). */
int64_t gf_steps_per_epoch(const gf_train_opts *o, gf_source *train);

/* ------------------------------------------------------------------------------------------------ */
/* Tasks: what a run trains on and how it is scored, as plug-ins                                     */
/*                                                                                                  */
/* A task turns data named on a command line (--corpus, --tokenizer, its own options) into the     */
/* sources of three splits, decides what the data fixes in a model's config (the vocabulary, the   */
/* head and its classes), and says how the result is read: its metric, what it counts, the names   */
/* of its classes. The commands (train, eval, compare) know tasks only through this table; the     */
/* built-in ones are "lm" (blocks of a text corpus, perplexity) and "snli" (sentence pairs,        */
/* accuracy), and a program adds one with gf_task_register (tests/plugins/task_vectors.c: a task added     */
/* from one file). Like a source, the table opens with its version.                                 */

/* What a task's load is given. */
typedef struct gf_task_env {
    const char *corpus;           /* the data: a name the task knows ("wikitext-2", "snli") or a path */
    const char *tokenizer;        /* a tokenizer spec ("word", "wordpiece:FILE"); "": the task's default */
    const gf_tokenizer *fixed;    /* a checkpoint's or a resumed run's tokenizer: read the data with it (it
                                   * outlives the data); NULL: the recipe's */
    unsigned splits;              /* the splits to read: bits 1 << GF_TRAIN, 1 << GF_VALID, 1 << GF_TEST
                                   * (eval reads one: a broken split it does not score cannot fail it) */
    bool no_cache;                /* do not read or write a cache of the prepared data */
    const char *data_dir;         /* where built-in data sets live */
    const char *cache_dir;        /* where prepared data may be cached; NULL: nowhere */
    bool score_only;              /* the data is read to be scored, never trained on (eval): text that the fixed
                                   * tokenizer cannot read (a character outside a char vocabulary) is skipped and
                                   * counted (text_counts) rather than refused */
    int64_t max_examples;         /* > 0: only the first max_examples examples of each split are used (predict
                                   * --limit): a task may stop reading there (a file of a million pairs is not
                                   * read for ten), giving those first ones in their order; 0: all */
} gf_task_env;

/* A metric: how a task's evaluations are scored and read. The built-in ones are gf_metric_ppl (exp of the
 * mean loss, lower is better) and gf_metric_accuracy (the share of counted targets whose argmax is right,
 * higher is better); a task declares its own in gf_task_ops.score_by (tests/plugins/task_vectors.c: an error rate),
 * and train's best checkpoint, --patience, eval, compare's summary and plot follow it. */
typedef struct gf_metric {
    const char *name;             /* [a-z0-9_], unique: metrics.jsonl's and summary.json's "metric" */
    const char *key;              /* metrics.jsonl's "val_KEY" and a state's "best_val_KEY"; NULL: name */
    const char *title;            /* words for tables, plots and messages: "perplexity", "error rate" */
    bool higher_is_better;
    bool by_loss;                 /* an increasing function of the mean loss alone: the best checkpoint is
                                   * the one of lowest loss (perplexity) */
    bool relative_gap;            /* compare's gap to its reference: a percent of it (perplexity), else the
                                   * difference in points (x 100: a share) */
    int decimals;                 /* shown with this many (tables; metrics.jsonl two more) */
    double lo, hi;                /* the range of a score (a stored best outside it is refused) */
    double (*score)(const gf_eval_result *r); /* from an evaluation; NAN when it cannot give one (no
                                   * n_correct for a metric of labels) */
} gf_metric;
extern const gf_metric gf_metric_ppl, gf_metric_accuracy;
/* The metric called name: a built-in one or a registered task's; NULL if none. */
const gf_metric *gf_metric_find(const char *name);

#define GF_TASK_NAME_MAX 32
#define GF_TASK_OPTIONS_BYTES 64

typedef struct gf_task_ops gf_task_ops; /* its members: grassflow_plugin.h */

/* The metric task t is scored by: its score_by, else the built-in one its metric names. */
const gf_metric *gf_task_metric(const gf_task_ops *t);
/* The task called name, or NULL with gf_last_error naming the tasks there are. */
const gf_task_ops *gf_task_find(const char *name);
/* Registered tasks, built-in ones first: i in [0, gf_task_count()). */
int gf_task_count(void);
const gf_task_ops *gf_task_at(int i);
/* How many classes a task's data has (0 for a task without labels). */
int64_t gf_task_n_labels(const gf_task_ops *t, const void *data);
/* The name of class i (gf_task_ops.label), or NULL past the last class or for a task without labels. The
 * built-in tasks name their classes without their data (data may be NULL): what a program that holds only a
 * checkpoint and its recipe's task name, as the Python package does, needs. */
const char *gf_task_label(const gf_task_ops *t, const void *data, int64_t i);
/* t's statistics of the data e names (gf_task_ops.stats, as it returns); a task without them (its table
 * older than version 2, or the member NULL) fails with a message naming the task. */
int gf_task_stats(const gf_task_ops *t, const gf_task_env *e, bool json, char **text);
/* What split `split` of t's data (from its load) holds beside its ids (gf_task_ops.text_counts): 0, or -1 for
 * a task that does not count them (its table older than version 3, or the member NULL; no message). */
int gf_task_text_counts(const gf_task_ops *t, const void *data, int split, gf_text_counts *out);
/* One line into buf naming how t scores a split of data under options (gf_task_ops.eval_protocol: for lm the
 * blocks, the special tokens, how lines are joined, the averaging): 0, or -1 (buf "") for a task that does
 * not say (its table older than version 5, or the member NULL; no message). */
int gf_task_eval_protocol(const gf_task_ops *t, const void *data, const void *options, char *buf, size_t n);
/* Task t's source ids of one input text[0..n) under options (its source_ids, version 6), malloc'd into *ids:
 * 0; -1 with gf_last_error (beginning with `what`), or when t reads no such input (a message saying so). */
int gf_task_source_ids(const gf_task_ops *t, const void *options, const char *text, size_t n, const char *what,
                       int32_t **ids, int64_t *len);

/* A task with its options and what a run was made from: the part of a run's recipe that is not the
 * trainer's, stored with it (gf_train_opts.made_from_json). */
typedef struct gf_task_recipe {
    const gf_task_ops *task;
    char corpus[GF_PATH_MAX], tokenizer[GF_PATH_MAX];
    char model[GF_PATH_MAX];      /* what the model was made from, as a user would say it again */
    union {
        unsigned char bytes[GF_TASK_OPTIONS_BYTES];
        int64_t align_i;
        double align_d;
    } options;                    /* the task's options struct */
} gf_task_recipe;

/* Task `name` with its options at their defaults and nothing else said; -1 for an unknown task. */
int gf_task_recipe_init(gf_task_recipe *r, const char *name);
/* Set option key (its name in the key table: "seq_len") from text as a command line gives it ("128");
 * src names where it came from ("--seq-len") in errors. 0, or -1 (the option is unchanged). */
int gf_task_option_set(gf_task_recipe *r, const char *key, const char *value, const char *src);
/* The JSON text of option key's value (malloc'd), NULL for a key the task does not have. */
char *gf_task_option_get(const gf_task_recipe *r, const char *key);
/* {"task": ..., "corpus": ..., "tokenizer": ..., "model": ..., OPTION: value, ...} (malloc'd). */
char *gf_task_recipe_to_json(const gf_task_recipe *r);
/* Back from a stored recipe (the trainer's keys are skipped). A recipe without "task" is of the first
 * built-in task (runs from before tasks had names were language models); options it lacks keep their
 * defaults. 0, or -1 naming source. */
int gf_task_recipe_from_json(const char *json, const char *source, gf_task_recipe *r);
/* The environment that reads r's data (fixed NULL, every split, cache per the arguments). */
gf_task_env gf_task_recipe_env(const gf_task_recipe *r, const char *data_dir, const char *cache_dir);

/* A saved run (DIR/state.safetensors) as a resume needs it: the model's config, the trainer's recipe (its
 * out_dir: DIR), the task's recipe stored beside it, the tokenizer (NULL: the run reads no text) and the
 * tensors the run froze (a JSON list of names; NULL: none). */
typedef struct gf_run_info {
    gf_config config;
    gf_train_opts train;
    gf_task_recipe task;
    gf_tokenizer *tokenizer;
    char *frozen_json;
} gf_run_info;
/* Read it; 0, or -1 (gf_last_error names the file and what is wrong). gf_run_info_free releases it. */
int gf_run_read(const char *dir, gf_run_info *info);
void gf_run_info_free(gf_run_info *info);
/* The run's model as gf_train(..., resume = true) takes it: built from its config, initialised with its seed
 * (the state's weights replace these), and what the run froze frozen again (by name, before the optimizer
 * exists). NULL (gf_last_error) on failure. */
gf_model *gf_run_model(const gf_run_info *info);
/* A new run that starts from checkpoint ckpt's weights (fine-tuning): the model with the checkpoint's
 * config and weights, its tokenizer (*tok, NULL if it has none; the caller frees it), and into o what the
 * recipe records of it (init_from: the path, the file's size and FNV-1a 64 hash). The run is then a new one
 * (gf_train with resume false): step 0, fresh optimizer moments, its own schedule. NULL (gf_last_error
 * names the file and what is wrong) on failure. */
gf_model *gf_run_init_from(const char *ckpt, gf_tokenizer **tok, gf_train_opts *o);

/* ------------------------------------------------------------------------------------------------ */
/* Inspection: what each layer does with one text, and evaluation-time overrides (grassflow inspect)  */
/*                                                                                                  */
/*     gf_override o = {.layer = 2, .drop_offset = 4};   // layer 2 as if its offsets lacked 4       */
/*     gf_model_set_override(m, &o, 1);                   // every batch forward from now on        */
/*     gf_evaluate(m, valid, 16, &loss, NULL);            // ... the whole split without offset 4   */
/*     gf_model_set_override(m, NULL, 0);                 // the model as trained again             */
/*     gf_inspection *x = gf_model_inspect(m, ids, n);    // gates, offsets, Pluecker, attention    */
/*     char *json = gf_inspection_to_json(x, pieces, 5); gf_inspection_free(x);                    */
/*                                                                                                  */
/* The terms (docs/model.md, "Grassmann mixer"; docs/usage.md, "grassflow inspect": each number).  */

/* How an override sets a Grassmann layer's gate a (m = a * h + (1 - a) * g, h the mixer's input, g its
 * Grassmann update). */
typedef enum {
    GF_GATE_LEARNED = 0, /* a = sigmoid(gate([h; g])), as trained */
    GF_GATE_ONE = 1,     /* a = 1: m = h exactly, the mixer passes its input through (then out(h) with extra_proj):
                          * the model without that layer's Grassmann update */
    GF_GATE_ZERO = 2,    /* a = 0: m = g exactly, the Grassmann update alone */
} gf_gate_force;

/* One evaluation-time change to the Grassmann layers. */
typedef struct gf_override {
    int layer;           /* the layer, from 0 over all stacks; -1: every Grassmann layer (with drop_offset: every
                          * one that lists it) */
    int drop_offset;     /* D >= 1: the layer computes as if its config's offsets did not list D (every entry D
                          * leaves S_t, the mean is over the others; a layer left without offsets has g = 0
                          * everywhere); 0: none */
    gf_gate_force gate;  /* GF_GATE_LEARNED: none */
} gf_override;

/* Overrides o[0..n) (applied in order) for every batch forward of m from now on (gf_model_forward,
 * gf_evaluate, gf_model_score), or with n = 0 none; the weights are untouched. A dropped offset gives exactly
 * the model whose config lacks it, the same weights (no weight depends on the offsets): the same numbers.
 * Each is checked against m: the layer exists and is a Grassmann one, it lists drop_offset, it has a gate to
 * force. The backward pass and gf_stream_create refuse a model with overrides (they are for evaluation; the
 * forward that trains is untouched: one pointer test per layer), and a stream made before does not see them.
 * 0, or -1 (gf_last_error; the overrides set before stay). */
int gf_model_set_override(gf_model *m, const gf_override *o, int n);
bool gf_model_has_override(const gf_model *m);

/* The next-token loss of one sequence ids[0..n) read whole by a language model: n inputs (n <= max_len with
 * learned positions), n - 1 predictions (ids[t + 1] from position t), under m's overrides. *loss: their mean
 * (gf_model_forward's); token_loss (n floats, may be NULL): each position's -log p(ids[t + 1]), NAN at the
 * last. 0, or -1 (gf_last_error: n < 2, an id outside the vocabulary, a model that is no language model). */
int gf_model_score(gf_model *m, const int32_t *ids, int64_t n, double *loss, float *token_loss);

/* What a layer does at each of T positions; arrays row-major, NULL where the layer has none. */
typedef enum { GF_INSPECT_OTHER = 0, GF_INSPECT_GRASSMANN = 1, GF_INSPECT_ATTENTION = 2 } gf_inspect_kind;
typedef struct gf_inspect_layer {
    int layer;                   /* from 0, over all stacks */
    gf_inspect_kind kind;        /* a mixer of another kind (window, performer, ...): its name alone */
    char mixer[GF_MIXER_NAME_MAX];
    int64_t d;                   /* the layer's width: its channels */
    /* a Grassmann layer: a = its gate, phat_D(t) = p / max(|p|, eps) of the pair (z_t, z_t-D), W = plucker.weight
     * (pair.weight and [z_t; z_t-D] with plucker false), S_t its offsets with a partner at t */
    int n_offsets;               /* the config's list (an offset listed twice is there twice) */
    int *offsets;                /* (n_offsets) */
    int64_t rank, heads;
    int *n_valid;                /* (T) |S_t| */
    uint8_t *valid;              /* (T, n_offsets) 1 where t - D is t's partner (in the text, and the window) */
    float *gate;                 /* (T, d) a; NULL with gate false */
    float *gate_mean;            /* (T) a's mean over the channels; NULL with gate false */
    float *contrib;              /* (T, n_offsets) |W phat_D(t)| / |S_t|: offset D's term in g(t) without the bias;
                                  * 0 where t - D has no partner */
    float *share;                /* (T, n_offsets) contrib over its sum at t; 0 where that is 0 */
    double *drop_loss;           /* (n_offsets) the text's mean loss with D dropped from this layer (gf_override) */
    float *drop_token_loss;      /* (T, n_offsets) each position's loss with D dropped; NAN at the last */
    double gate_loss[2];         /* the mean loss with this layer's gate forced: [0] a = 0, [1] a = 1; NAN without */
    int64_t n_coords;            /* Pluecker coordinates: heads x C(rank / heads, 2); 0 with plucker false */
    int32_t *coord_i, *coord_j;  /* (n_coords) coordinate k is the pair (i, j), i < j, of z's dimensions */
    float *coord;                /* (T, n_coords) the mean over S_t of |phat_k|; 0 where S_t is empty */
    /* an attention layer */
    int64_t n_head;
    float *attn;                 /* (n_head, T, T) weights: head h's row t the query at t over the keys (0 past t) */
    /* An encoder-decoder's (gf_model_inspect_pair). In an encoder's layer every per-position array above has
     * P = S rows (the source's positions) where it says T, except drop_token_loss (T, n_offsets: the target's
     * losses); its Grassmann layers pair both ways: n_offsets is twice the config's, the entries D of the list
     * (partner t - D) then -D (partner t + D), and an offset dropped is dropped both ways (the -D entry's
     * drop_loss is D's); its attention is over all S keys. */
    int64_t positions;           /* P: the rows of this layer's per-position arrays (T, or S in an encoder) */
    bool encoder;                /* a layer of an encoder-decoder's encoder */
    int64_t cross_heads;         /* a decoder layer's attention over the source: gf_model_cross_heads (0: none) */
    float *cross;                /* (cross_heads, T, S) its weights (gf_model_cross_attention) */
} gf_inspect_layer;
typedef struct gf_inspection {
    int64_t T;
    int32_t *ids;                /* (T) */
    double loss;                 /* gf_model_score's: the mean over the T - 1 predictions */
    float *token_loss;           /* (T) NAN at the last */
    int n_layers;
    gf_inspect_layer *layers;    /* (n_layers) */
    int64_t S;                   /* an encoder-decoder's source: S ids (0 and NULL for a language model) */
    int32_t *source;
} gf_inspection;
/* Language model m on ids[0..n) (gf_model_score's reading; n >= 2, n <= max_len with learned positions), its
 * causal layers one by one; each Grassmann layer's offsets dropped one at a time and its gate forced to 0 and
 * 1 (1 + sum over Grassmann layers of (distinct offsets + 2) forwards of n tokens). m must have no overrides;
 * it has none after. NULL (gf_last_error) on failure. gf_inspection_free(NULL) does nothing. */
gf_inspection *gf_model_inspect(gf_model *m, const int32_t *ids, int64_t n);
/* The same for encoder-decoder m over source[0..S) (1 <= S, S <= max_len with learned positions) and the decoder's
 * input ids[0..n): bos, the target's tokens, then the end token (its n - 1 predictions the target's and the
 * end's): every layer, the encoder's over the source (bidirectional), the decoder's with their attention over
 * the source (cross, cross_heads). */
gf_inspection *gf_model_inspect_pair(gf_model *m, const int32_t *source, int64_t S, const int32_t *ids, int64_t n);
void gf_inspection_free(gf_inspection *x);
/* The inspection as JSON (malloc'd; docs/usage.md, "grassflow inspect": the schema): labels (T strings, then an
 * encoder-decoder's S source strings; may be NULL) the tokens' text, top_k (1 to 64) the Pluecker coordinates
 * listed per token and per layer. NULL out of memory. */
char *gf_inspection_to_json(const gf_inspection *x, const char *const *labels, int top_k);

/* An encoder-decoder's alignment: after a forward (gf_model_forward_batch with a source), decoder layer
 * `layer`'s weights over the source into out, (B, H, T, S) floats with H = gf_model_cross_heads(m, layer), T
 * the target positions and S the source's: row (b, h, t) the query at t over the source positions (0 at
 * padded ones), summing to 1. A layer with a cross op gives its heads' (H = cross_heads); else one whose mixer
 * attends to the source itself (gru-attn) gives its attention's (H = 1). 0, or -1 (gf_last_error: no
 * forward yet, a layer with neither). */
int gf_model_cross_attention(const gf_model *m, int layer, float *out);
/* H of gf_model_cross_attention for layer `layer`: cross_heads (0 means 1) for a cross op, 1 for a mixer that
 * attends to the source, 0 for a layer with neither. */
int64_t gf_model_cross_heads(const gf_model *m, int layer);

/* ------------------------------------------------------------------------------------------------ */
/* Utilities: what a command-line tool or a plug-in needs besides the model                          */

/* Threads: n for OpenMP's parallel regions and for BLAS (a command line's --threads), and how many the
 * library's parallel loops use (OpenMP's maximum; 1 in a build without OpenMP). */
void gf_set_threads(int n);
int gf_threads(void);
/* The BLAS the library calls: the OpenBLAS kernel in use ("SkylakeX", "Haswell", ...; NULL if unknown) and
 * its thread count. */
const char *gf_blas_kernel(void);
int gf_blas_threads(void);
/* OpenBLAS reads OPENBLAS_CORETYPE as it loads (before main) and runs the named core's kernels without
 * asking whether the CPU has their instructions: one it lacks them for stops the program with SIGILL at its
 * first matmul. gf_blas_core_check(core, why, n): NULL when this CPU runs OpenBLAS core type `core`
 * ("SKYLAKEX", "Haswell", gf_blas_kernel()'s name; any case) or the name is not one OpenBLAS's x86-64 builds
 * know (OpenBLAS then chooses by itself); else the core type to use instead, gf_blas_fast_core()'s, with
 * why (n bytes, may be NULL) listing the features `core` needs that the CPU lacks ("avx512f, avx512bw").
 * gf_blas_fast_core(): the fastest core type this CPU runs among SKYLAKEX, HASWELL, SANDYBRIDGE, NEHALEM and
 * PRESCOTT ("" if none). Neither calls BLAS: a program can ask before its first matmul and start itself again
 * with the answer. The test hook GRASSFLOW_TEST_CPU_LACKS=avx512f,fma (features named as `why` names them)
 * makes both take those features as absent (tests/trust/environment.sh). */
const char *gf_blas_core_check(const char *core, char *why, size_t n);
const char *gf_blas_fast_core(void);
/* C (M,N) = alpha op(A) op(B) + beta C, row-major, op(A) (M,K), op(B) (K,N) (transposed when transA or
 * transB): BLAS sgemm with 64-bit sizes (checked against BLAS's 32-bit ints), the call every matmul of the
 * library goes through, for plug-ins and benchmarks. */
void gf_sgemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
              const float *B, int64_t ldb, float beta, float *C, int64_t ldc);
/* Which library runs gf_sgemm's fp32 matmuls: OpenBLAS (the default), or, with GF_FP32_MATMUL=onednn in the
 * environment on a CPU with AVX-512 in a build with oneDNN, oneDNN's fp32 matmul (its brgemm kernels) for the
 * skinny ones: more than one row, at least GF_FP32_DNNL_MIN_MACS multiply-adds and a smallest side of at most
 * GF_FP32_DNNL_SKINNY, where OpenBLAS spends its time packing (oneDNN ran them 1.2-4x faster; OpenBLAS is as
 * fast or faster on the larger ones: docs/bench/method.md). Each library's sums are deterministic for a given
 * machine and thread count, so a run resumes bit for bit. --precision fp32-fast sends them to oneDNN too
 * (unless GF_FP32_MATMUL=openblas). What runs under the precision in force, as text: "OpenBLAS SkylakeX",
 * or "oneDNN avx512_core + OpenBLAS SkylakeX". */
#define GF_FP32_DNNL_MIN_MACS (1 << 22)
#define GF_FP32_DNNL_SKINNY 128
const char *gf_fp32_matmul(void);
/* The form of --precision fp32-fast's attention head in this build: "AVX-512 register tiles", "AVX2 + FMA
 * register tiles", or "none (the default path's BLAS calls)" for a build with neither. */
const char *gf_attention_fast_kernel(void);
/* Matmul FLOPs (2 M N K per gf_sgemm) issued by this process since the last reset (for achieved FLOP/s). */
uint64_t gf_blas_flops(void);
void gf_blas_flops_reset(void);
/* The precision of gf_sgemm's matmuls, for the whole process: GF_PRECISION_FP32 (the default: BLAS sgemm,
 * bit for bit as always) or GF_PRECISION_BF16 (both operands rounded to bfloat16, to nearest even; the
 * products and their sums in fp32; through oneDNN's matmul, on AMX or AVX512_BF16) or GF_PRECISION_FP32_FAST
 * (fp32 throughout, rounded differently for speed: fused multiply-adds in GELU's and softmax's exp and erf,
 * softmax with one exp an element, attention heads in AVX-512 or AVX2 register tiles, the skinny matmuls through
 * oneDNN's fp32 matmul where this build has it, a linear layer's bias inside it, a fresh gradient buffer
 * written rather than zeroed and summed onto; about 1e-6 relative from fp32, and not the bits of earlier grassflow versions, which the default
 * keeps: docs/precision.md). In bf16, a matmul of one row or of fewer than GF_BF16_MIN_MACS multiply-adds
 * stays fp32, and the ops outside the matmuls take fp32-fast's forms (its loss's one-pass log-sum-exp and
 * attention's register tiles among them). gf_train sets it from the recipe for its steps and evaluates in
 * fp32. */
/* gf_precision is defined above, with the training recipe (gf_train_opts.precision). */
#define GF_BF16_MIN_MACS (1 << 20) /* 2 threads, AMX: oneDNN is 0.6x OpenBLAS at 64^3, 1.3x at 128^3 */
const char *gf_precision_name(gf_precision p); /* "fp32", "bf16", "fp32-fast" */
int gf_precision_parse(const char *s, gf_precision *p); /* 0, or -1 for a name not listed above */
/* NULL when p can run here; else why not, as a sentence (this build has no oneDNN, the CPU has no
 * AVX512_BF16, oneDNN's ISA limit ONEDNN_MAX_CPU_ISA excludes it). */
const char *gf_precision_unavailable(gf_precision p);
/* 0, or -1 (gf_last_error: why p cannot run here); gf_matmul_precision() the one in force. */
int gf_set_matmul_precision(gf_precision p);
gf_precision gf_matmul_precision(void);
/* What bf16 matmuls run on: oneDNN's CPU ISA ("avx512_core_amx", "avx512_core_bf16"; "none" when bf16 is
 * unavailable) and the kernel of the last matmul primitive made ("brg:avx512_core_amx_bf16"; "" before). */
const char *gf_bf16_isa(void);
const char *gf_bf16_kernel(void);

/* Data-parallel training over MPI (docs/distributed.md). A program calls gf_dist_init first in main and
 * gf_dist_finalize before it returns. Started by mpirun (or another MPI launcher), the process is then one
 * rank of the job: gf_train splits each batch across the ranks, sums their gradients and lets rank 0 alone
 * write the run's files. Built without MPI, or not started by a launcher: one rank of one, as before. */
int gf_dist_init(int *argc, char ***argv);
void gf_dist_finalize(void);
/* Ends every rank of the job with code (an error one rank met that the others cannot see). */
void gf_dist_abort(int code);
int gf_dist_rank(void);
int gf_dist_size(void);
/* Returns once every rank has called it: 0, or -1 (gf_last_error: a rank gone, the collectives' timeout).
 * A program whose ranks all read a file that rank 0 then rewrites calls it between the two. */
int gf_dist_barrier(void);
/* *x becomes the largest of the ranks' *x, on every rank (what one rank saw, a signal say, agreed by all):
 * 0, or -1 as gf_dist_barrier. */
int gf_dist_max_int(int *x);
/* The MPI library ("Open MPI v4.1.4"), or NULL when grassflow was built without MPI. */
const char *gf_dist_library(void);
/* What the ranks of a job must agree on before they first work together (gf_dist_agree): ranks started with
 * other data, models or recipes (mpirun's `-np 1 A : -np 1 B`, a file that differs from node to node) would
 * otherwise exchange buffers of other sizes (heap corruption), wait for each other at other steps (a hang),
 * or train on other data silently. An item is named by its group and label ("rank 1's corpus differs from
 * rank 0's: vocabulary 65 vs 33278 tokens") and compared by its kind's value: i, f (bit for bit), h (a hash
 * of what is compared: FNV-1a 64, gf_dist_hash), or text (compared whole, by its hash; the message quotes
 * up to GF_AGREE_TEXT - 1 bytes of it). */
typedef enum { GF_AGREE_INT = 0, GF_AGREE_REAL = 1, GF_AGREE_HASH = 2, GF_AGREE_TEXT = 3 } gf_agree_kind;
typedef struct gf_agree_item {
    const char *group; /* what it belongs to: "corpus", "model", "recipe", "state" */
    const char *label; /* what it is: "vocabulary", "--steps"; NULL: none (a text item that says it all) */
    const char *unit;  /* after both values ("tokens"), or NULL */
    gf_agree_kind kind;
    int64_t i;
    double f;
    uint64_t h;
    const char *text;  /* NULL reads as "" */
} gf_agree_item;
#define GF_AGREE_MAX 96
#define GF_AGREE_TEXT 48
/* Every rank's n items (n <= GF_AGREE_MAX) against rank 0's, in order, before the ranks start `what`
 * ("training", "evaluation") together: 0 when they agree, and with one process; else -1 on every rank, with
 * gf_last_error naming the first rank and item that differ, both values and what to do. A rank that states
 * other items (another command, another task) is named as such. A collective: every rank calls it at the
 * same point. */
int gf_dist_agree(const char *what, const gf_agree_item *items, int n);
/* FNV-1a 64 of n bytes, chained from h (0 starts afresh): for GF_AGREE_HASH items. */
uint64_t gf_dist_hash(const void *p, size_t n, uint64_t h);

/* What to do about a failed write, by its errno (the one wording of it, for every file grassflow writes and a
 * program's own): EROFS a read-only file system, EACCES/EPERM no permission, ENOSPC a full disk, EDQUOT a
 * used-up quota, EFBIG a file size limit, ENOENT/ENOTDIR a missing folder, EIO a failing device, ...; a
 * sentence without "HINT: " or a final period, to follow "HINT: ". Never NULL. */
const char *gf_write_hint(int err);
/* The memory this process can have: the machine's physical memory or RLIMIT_AS (ulimit -v), whichever is
 * lower (to size batches and caches). */
uint64_t gf_mem_limit(void);
/* The most text one corpus file may hold once decompressed (GRASSFLOW_MAX_TEXT; for a file of pairs, which
 * is streamed, the pairs it keeps): bytes, or with 0 (the default) a sixth of gf_mem_limit(), at most 16 GiB.
 * A larger file is an error naming it. Whatever this limit, an .xz file is read up to 1000 times its size (at
 * least 64 MiB): more is a decompression bomb, refused. */
void gf_corpus_set_max_text(size_t bytes);
size_t gf_corpus_max_text(void);


#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
