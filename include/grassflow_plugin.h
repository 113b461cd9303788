/*
 * grassflow_plugin.h: what a program includes to extend grassflow rather than use it: a mixer, a head, a task
 * (with its data source and metric), an importer of another tool's checkpoints, and the helpers the library
 * keeps its own messages and files to, so that a plug-in's match them (gf_fail, names in messages, files
 * written safely, JSON, escaping for each output format).
 *
 * Each extension is one file and one registration call, made before the first model, config or task is
 * used: examples/custom_mixer.c (a mixer), tests/plugins/task_vectors.c (a task with its own metric),
 * tests/plugins/importer_toy.c (an importer). The block kinds a layer can be wired as are not part of this
 * interface yet (src/model/block.h; docs/architecture.md says why).
 *
 * The tables here (gf_mixer_ops, gf_head_ops, gf_task_ops, gf_source, gf_importer) open with a version: a
 * later grassflow appends members and reads a member only from a table whose version has it, so a plug-in
 * built against an older header keeps working. Everything in grassflow.h is included.
 */
#ifndef GRASSFLOW_PLUGIN_H
#define GRASSFLOW_PLUGIN_H

#include "grassflow.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Exported from libgrassflow.so like grassflow.h (what neither header declares is not exported). */
#pragma GCC visibility push(default)

/* ------------------------------------------------------------------------------------------------ */
/* Errors                                                                                            */

/* Record a message (printf's format and arguments) as this thread's last failure and return -1: how a
 * plug-in's check function (Plug-ins, below) refuses a config, `return gf_fail("%s: ...", src, ...)`. A
 * message longer than 4 KiB keeps its first 1000 and last 2000 bytes. */
#if defined(__GNUC__)
int gf_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#else
int gf_fail(const char *fmt, ...);
#endif

/* ------------------------------------------------------------------------------------------------ */
/* Data sources                                                                                      */

/* A data source: one split of a data set behind function pointers. Like sqlite3_vfs it opens with a
 * version: a later version appends members, and the library reads a member only when `version` says
 * the source has it. A source fills batches into memory it owns; a batch stays valid until the
 * source's next fill. A source is used by one thread at a time. The library zeroes the gf_batch before
 * every fill and fill_eval, so a source sets only the fields it has (the others stay NULL or 0). */
#define GF_SOURCE_VERSION 1
typedef struct gf_source gf_source;
struct gf_source {
    int version;   /* the GF_SOURCE_VERSION this source implements (>= 1) */
    void *ctx;     /* handed to every function below */
    /* ---- version 1 ---- */
    /* Examples in one epoch (the token-block source: blocks); the trainer's batch counts these. */
    int64_t (*n_examples)(void *ctx);
    /* Fill *batch with examples [first, first + n) of epoch `epoch`'s order, a permutation that depends
     * on the epoch alone (and the source's seed): a resumed run jumps to any step without replaying the
     * data. Expects 0 <= first, n >= 1, first + n <= n_examples; 0 or -1 (gf_last_error). */
    int (*fill)(void *ctx, int64_t epoch, int64_t first, int64_t n, gf_batch *batch);
    /* Optional, both or neither: the evaluation examples, which may be cut otherwise than the training
     * ones (the token-block source: every token but the first predicted once). NULL: evaluation walks fill's
     * epoch-0 order. */
    int64_t (*n_eval_examples)(void *ctx);
    int (*fill_eval)(void *ctx, int64_t first, int64_t n, gf_batch *batch);
    /* Optional: 0 if model m can take this source's batches for `use`, else -1 with a message (the LM
     * source: blocks longer than learned positions allow, token ids outside the vocabulary, too few
     * tokens for one example). gf_train and gf_evaluate call it before anything else. */
    int (*check)(void *ctx, const gf_model *m, gf_source_use use);
    /* Optional: frees ctx and the source itself (gf_source_free calls it). */
    void (*destroy)(gf_source *s);
};

/* ------------------------------------------------------------------------------------------------ */
/* Plug-ins: mixers and heads                                                                       */
/*                                                                                                  */
/* A mixer is the part of a block that moves information between positions (the Grassmann layer,    */
/* attention); a head turns the last hidden states into outputs and a loss, and names the task      */
/* ("lm", "classify"). Each is a table of functions and facts under a name. The built-in ones are   */
/* such tables, checked as these functions check a program's; a program adds its own before it      */
/* builds a model, and from then on the config (JSON, --set, saving, help), the model, the          */
/* streaming engine and the checkpoints ask the table, never the name:                              */
/*                                                                                                  */
/*     typedef struct { int64_t width; } conv_config;         // the mixer's own config struct      */
/*     static const gf_cfg_key CONV_KEYS[] = {{.name = "width", .type = GF_KEY_INT,                 */
/*         .off = offsetof(conv_config, width), .lo = 1, .hi = 16, .def = "4", .help = "taps"}};    */
/*     static const gf_mixer_ops CONV = {.version = GF_MIXER_OPS_VERSION, .name = "conv",           */
/*         .letter = 'c', .config_size = sizeof(conv_config), .keys = CONV_KEYS, .n_keys = 1,       */
/*         .param_specs = conv_params, .saved_floats = conv_saved, .scratch_floats = conv_scratch,  */
/*         .forward = conv_forward, .backward = conv_backward};                                     */
/*     if (gf_mixer_register(&CONV) != 0) puts(gf_last_error()); // once, before a model uses it    */
/*     gf_config_set(&cfg, "mixers=conv,grassmann");   // or {"mixer": "conv", "width": 3} in JSON  */
/*                                                                                                  */
/* examples/custom_mixer.c is a complete mixer, trained; tests/unit/test_plugin.c adds a mixer and a     */
/* head. The rules every table follows:                                                             */
/*   - It opens with its interface version (as SQLite's sqlite3_module does): the GF_*_OPS_VERSION  */
/*     of the header it was written against. A later grassflow appends members after the last one   */
/*     and reads them only from tables whose version has them, so a table written for this header   */
/*     keeps working; a version newer than the library knows is refused at registration.            */
/*   - The library keeps the pointer: the table, its keys and every string they point to must stay  */
/*     valid and unchanged as long as models may use them (a static const table).                   */
/*   - Registering is not thread-safe and cannot be undone: register from one thread before models  */
/*     are built or configs read. At most GF_PLUGIN_MAX_ADDED mixers and as many heads are added.   */
/*   - Its config is a struct of its own, at most GF_MIXER_CONFIG_BYTES (a mixer, one per layer, in */
/*     gf_layer_config.params) or GF_HEAD_CONFIG_BYTES (a head, in gf_config.head), described by a  */
/*     key table: the library parses, range-checks, defaults, saves and documents it from the table.*/
/*   - Its tensors are declared by gf_param_spec; the model allocates, initialises, saves, loads and*/
/*     trains them, and hands the plug-in pointers to them in declaration order. A buffer (saved,   */
/*     never trained) starts as its init says, or as the mixer's draw_buffers (version 2) draws it  */
/*     from the seed; draw_buffers may also redraw it during training from (seed, step) alone.      */
/*   - Widths: a mixer reads its layer's width from gf_layer_dim (never cfg->d_model: stacks may    */
/*     differ in width), a head the last stack's from gf_config_out_dim.                            */

#define GF_MIXER_OPS_VERSION 4 /* the gf_mixer_ops this header describes (2: draw_buffers; 3: reads_memory;
                                * 4: reads_embeddings) */
#define GF_HEAD_OPS_VERSION 2  /* the gf_head_ops this header describes (2: smooths_labels) */
#define GF_MIXER_MAX_PARAMS 12 /* tensors one mixer layer may declare (8 before issue 55) */
#define GF_HEAD_MAX_PARAMS 4   /* tensors a head may declare */
#define GF_PLUGIN_MAX_ADDED 32 /* mixers (and, apart, heads) a program may register besides the built-ins */

/* ---- config keys: one table per config struct ---- */

/* A key's type, and the C type of its value at gf_cfg_key.off in the struct. */
typedef enum {
    GF_KEY_INT,   /* int64_t; JSON: an integer */
    GF_KEY_FLOAT, /* float; JSON: a finite number */
    GF_KEY_BOOL,  /* bool; JSON: true or false */
    GF_KEY_ENUM,  /* int, the index into gf_cfg_key.names; JSON: one of the names as a string */
    GF_KEY_INTS,  /* int[max_count] plus an int count (1 .. max_count) at count_off; JSON: a list */
} gf_key_type;

/* gf_cfg_key.flags */
enum {
    GF_KEY_LO_OPEN = 1, /* the range excludes lo */
    GF_KEY_HI_OPEN = 2, /* the range excludes hi */
};

/* One key of a config struct. The library reads the key from JSON ("rank": 32 in a layer's entry, "head":
 * {"n_classes": 3}) and from --set, refuses a value of the wrong type or outside the range (the message
 * names the key and the range), writes it back into saved configs and checkpoints, and lists it in
 * help (gf_mixer_describe). Checks across keys, or against the model, go in the ops' check function. */
typedef struct gf_cfg_key {
    const char *name;         /* the key in JSON: [a-z0-9_] by convention, unique in its table */
    gf_key_type type;
    size_t off;               /* offset of the value in the struct (offsetof) */
    double lo, hi;            /* INT, FLOAT and each element of INTS: the allowed range, closed unless flags
                               * open a side */
    unsigned flags;           /* GF_KEY_LO_OPEN, GF_KEY_HI_OPEN */
    const char *const *names; /* ENUM: the allowed names, NULL-terminated (at least one) */
    size_t count_off;         /* INTS: offset of the int that holds the count */
    int max_count;            /* INTS: capacity of the array, 1 .. 256 */
    const char *def;          /* the default as JSON text ("32", "0.5", "[1,2,4]", "\"mean\"", "true"); it must
                               * be a valid value. NULL: none (the value starts as zero bytes and is checked
                               * like any other; give defaults unless zero is meant) */
    const char *help;         /* one line for help */
} gf_cfg_key;

/* ---- tensors ---- */

/* How a tensor starts (gf_model_init): N(0, 0.02) (weights), zeros (biases), ones (LayerNorm-style gains).
 * The values depend only on the seed and the tensor's full name. */
typedef enum { GF_INIT_NORMAL = 0, GF_INIT_ZERO, GF_INIT_ONE } gf_init_kind;

/* One tensor of a plug-in, written by its param_specs function (gf_param_spec_set fills one). The model
 * names it "blocks.{j}.mix." + name for a mixer of the first stack ("STACK.blocks.{j}.mix." + name in a
 * further stack) and name alone for a head, so a head's names must not be the model's own ("tok_emb.",
 * "blocks.", "ln_f.", a stack's name): e.g. "my_head.weight". 2-D trainable tensors get AdamW's weight
 * decay, 1-D ones do not. */
typedef struct gf_param_spec {
    char name[32];    /* e.g. "proj.weight" (at most 31 characters) */
    int ndim;         /* 1 or 2 */
    int64_t shape[2]; /* (rows, cols) row-major, or (n, unused) for ndim 1: a linear layer's weight is
                       * (out, in), as PyTorch stores it */
    gf_init_kind init;
    bool buffer;      /* a buffer: saved and loaded with the model, never trained (no gradient: the
                       * call's g[i] is NULL; no optimizer state), e.g. fixed random features */
} gf_param_spec;

/* Fill one spec: name, ndim, shape (rows, cols; cols is ignored when ndim is 1), init; buffer false. */
void gf_param_spec_set(gf_param_spec *s, const char *name, int ndim, int64_t rows, int64_t cols, gf_init_kind init);

/* ---- mixers ---- */

/* Directions a mixer can run in (gf_mixer_ops.directions). */
enum { GF_MIX_CAUSAL = 1, GF_MIX_BIDIRECTIONAL = 2 };

/* One call of a mixer on one layer over a batch, made by the model (and tests' harnesses). Everything it
 * points to belongs to the model and is valid for the call only. */
typedef struct gf_mixer_call {
    const gf_config *cfg;     /* the model's config: gf_layer_mcfg(cfg, layer), gf_layer_dim(cfg, layer) */
    int layer;                /* 0 .. gf_config_total_layers(cfg) - 1, counted over all stacks */
    int64_t B, T;             /* the batch: B sequences of T positions */
    float *const *p;          /* parameters, in the order of param_specs */
    float *const *g;          /* their gradients (same order; g[i] is NULL for a buffer or a frozen tensor):
                               * backward accumulates (+=) into them, forward does not touch them */
    float *saved;             /* saved_floats(B, T) floats that forward fills and the backward of the same
                               * batch reads (not zeroed: forward writes what backward needs) */
    float *scratch;           /* scratch_floats(B, T, n_threads) floats, free for the duration of one call,
                               * shared with other layers (not zeroed) */
    int n_threads;            /* threads the scratch was sized for (OpenMP's maximum) */
    bool bidirectional;       /* false: position t sees positions <= t only (causal); true: both sides */
    const uint8_t *mask;      /* (B, T): 1 = a real position, 0 = padding, which no real position may see;
                               * NULL: no padding (always NULL unless the mixer declares masks). Outputs at
                               * padded positions are unspecified but must be finite. */
    /* a mixer that reads memory (gf_mixer_ops version 3, reads_memory; NULL and 0 otherwise): the
     * encoder's output it reads, (B, S, d), its padding (B, S) (1 = real; NULL: none), where backward
     * accumulates (+=) the memory's gradient, and memory_floats(B, T, S) floats that forward fills and
     * the backward of the same batch reads */
    const float *mem;
    const uint8_t *mem_mask;
    float *dmem;
    int64_t S;
    float *mem_work;
    /* a mixer that reads the embeddings (version 4, reads_embeddings; NULL otherwise): the model's input
     * embeddings (B, T, d), what its first layer reads (tokens and positions, after emb_ln), and where backward
     * accumulates (+=) their gradient. (Filled by the library; a program that calls a mixer with a call of its
     * own zeroes these.) */
    const float *emb;
    float *demb;
} gf_mixer_call;

/* One streaming step of a mixer on one layer (gf_stream_step): the new position's output from its input
 * and what the mixer kept from earlier positions in `state`. */
typedef struct gf_mixer_step {
    const gf_config *cfg;
    int layer;
    int64_t pos;              /* 0-based position of the new token; pos < cap */
    int64_t cap;              /* positions the state is sized for */
    float *const *p;          /* parameters, in the order of param_specs */
    float *state;             /* state_floats(cap) floats, zeroed at the stream's start and reset; the step
                               * updates it */
    float *scratch;           /* step_scratch_floats(cap) floats, free during the step */
    /* a mixer that reads memory (version 3, reads_memory; NULL and 0 otherwise), streamed in an
     * encoder-decoder's decoder (gf_model_decode): the encoder's output for one source, (S, d), unpadded,
     * and mem_work, memory_floats(cfg, layer, 1, 2, S) floats that every stream over this memory shares
     * (the hypotheses of a beam) and that lasts while it does. The step at pos 0 may fill mem_work with
     * what derives from the memory alone (keys); later steps of any stream over it may read that. */
    const float *mem;
    int64_t S;
    float *mem_work;
    /* a mixer that reads the embeddings (version 4, reads_embeddings; NULL otherwise): the input embedding of
     * the new position (d) */
    const float *emb;
} gf_mixer_step;

/* A mixer. Required: version, name, param_specs, saved_floats, scratch_floats, forward, backward; the
 * streaming functions come as three or not at all. Every function is called by the library's thread
 * (a mixer may run OpenMP loops inside) and must not fail: what could fail belongs in check. */
typedef struct gf_mixer_ops {
    int version;              /* GF_MIXER_OPS_VERSION (1 to 4): the members up to step are those of version
                               * 1; version 2 appends draw_buffers, version 3 reads_memory and memory_floats,
                               * version 4 reads_embeddings */
    const char *name;         /* the name in configs ("grassmann"): 1 to GF_MIXER_NAME_MAX - 1 letters,
                               * digits, '_' or '-'; unique among mixers */
    char letter;              /* one letter or digit for --set mixers=g,a,... and `info` (0: none); unique */
    const char *help;         /* a few lines: what it computes, its cost, where it comes from (may be NULL) */
    /* its config: a struct of config_size bytes (<= GF_MIXER_CONFIG_BYTES), described by keys[0..n_keys) */
    size_t config_size;
    const gf_cfg_key *keys;
    int n_keys;
    /* Optional (NULL: none): checks across its keys and against the model (rank <= width, width % n_head
     * == 0) of layer `layer`, called whenever a config is validated (after every key is in its range).
     * Returns 0, or gf_fail's -1 with a message that starts with src (where the config came from) and
     * names the layer, the key, what it holds and what it should. */
    int (*check)(const gf_config *cfg, int layer, const char *src);
    /* post-norm block kind: true if the output already holds the skip path (x = ln1(mix(h)): the
     * Grassmann gate), false for the residual one (x = ln1(h + mix(h))); pre-norm blocks ignore it */
    bool gated_skip;
    unsigned directions;      /* GF_MIX_CAUSAL | GF_MIX_BIDIRECTIONAL: what forward and backward implement
                               * (0 means causal only); a config asking for another is refused */
    bool masks;               /* forward and backward honour gf_mixer_call.mask (padding); a model refuses a
                               * padded batch if one of its mixers does not */

    /* Writes layer `layer`'s tensor specs into specs[0..GF_MIXER_MAX_PARAMS) and returns how many. Called
     * when a model is built and when its parameters are counted. */
    int (*param_specs)(const gf_config *cfg, int layer, gf_param_spec *specs);
    /* Floats forward keeps for backward (gf_mixer_call.saved), and scratch floats one call needs, for a
     * batch of (B, T): called when the model sizes its activations for a batch shape. */
    int64_t (*saved_floats)(const gf_config *cfg, int layer, int64_t B, int64_t T);
    int64_t (*scratch_floats)(const gf_config *cfg, int layer, int64_t B, int64_t T, int n_threads);
    /* out (B,T,d) = mix(inp (B,T,d)), d = gf_layer_dim(cfg, layer); out must not alias inp. Overwrites out
     * (every element, padded positions too) and fills saved. */
    void (*forward)(const gf_mixer_call *c, float *out, const float *inp);
    /* After the forward of the same batch: dinp (B,T,d) += d(out)/d(inp)^T dout; parameter gradients
     * accumulate (+=) into c->g. inp is the forward's input, unchanged. */
    void (*backward)(const gf_mixer_call *c, float *dinp, const float *dout, const float *inp);
    /* Streaming, causal only (all three NULL: the mixer cannot stream, and gf_stream_create refuses a
     * model that has it). The state layout must be prefix-stable: growing cap only appends floats, so the
     * library grows it with realloc. A mixer whose state does not depend on cap returns the same size for
     * every cap (Grassmann: a ring of the last max-offset reduced vectors). */
    int64_t (*state_floats)(const gf_config *cfg, int layer, int64_t cap);
    int64_t (*step_scratch_floats)(const gf_config *cfg, int layer, int64_t cap);
    /* out (d) = the mixer's output at position s->pos for inp (d), the input there: the same numbers as
     * forward gives at that position of the sequence streamed so far. */
    void (*step)(const gf_mixer_step *s, float *out, const float *inp);

    /* ---- version 2 (read only from tables whose version is 2 or more) ---- */
    /* Optional (NULL: the buffers keep their declared init): draw the layer's buffers (its tensors whose spec
     * has buffer set; p as in gf_mixer_call, in param_specs order). step 0: the model is being initialised
     * (gf_model_init, after every tensor got its declared init, and gf_mixer_harness_create): fill them.
     * step >= 1: training step `step` begins (gf_model_set_training(m, true, seed, step), which the trainer
     * calls before each step's forward) in a layer that is trained (a tensor of its mixer is not frozen):
     * redraw the buffers due at this step (a performer's omega every `redraw` steps) or return at once. The
     * values written must depend only on (cfg, layer, seed, step), never on earlier draws, so a run resumed
     * from a checkpoint (where the buffers are saved) continues bit for bit as the uninterrupted run. */
    void (*draw_buffers)(const gf_config *cfg, int layer, float *const *p, uint64_t seed, uint64_t step);

    /* ---- version 3 ---- */
    /* true: the mixer reads the encoder's output (gf_mixer_call.mem): a recurrent decoder with attention of
     * its own. It runs only in an encoder-decoder's decoder layers, whose block then needs no cross op (the
     * default kinds there are the plain ones); memory_floats (NULL: none) sizes gf_mixer_call.mem_work. */
    bool reads_memory;
    int64_t (*memory_floats)(const gf_config *cfg, int layer, int64_t B, int64_t T, int64_t S);
    /* Optional (NULL: none): after a forward, the weights its attention put on each source position, (B, T, S)
     * into out, each row summing to 1 over the real positions (gf_model_cross_attention; predict --align-dir). */
    void (*memory_weights)(const gf_mixer_call *c, float *out);

    /* ---- version 4 ---- */
    /* true: the mixer also reads the model's input embeddings (gf_mixer_call.emb, gf_mixer_step.emb) beside
     * its layer's input: attention whose queries and keys come from the embeddings. Layers of the first stack
     * of a model that is not an encoder-decoder only (its check says so). */
    bool reads_embeddings;
} gf_mixer_ops;

/* Add a mixer (the pointer is kept). Returns 0, or -1 (gf_last_error) for a missing table, a name or
 * letter that is malformed or taken, a version this library does not know, a config larger than
 * GF_MIXER_CONFIG_BYTES, an unsound key table (a value outside the struct, an ENUM without names, a
 * default that is not a valid value), a missing function, or a full registry. */
int gf_mixer_register(const gf_mixer_ops *ops);
/* The width of layer l's hidden states (what its mixer's inputs and outputs have per position): its
 * stack's d_model. A mixer reads it here, never from cfg->d_model. */
int64_t gf_layer_dim(const gf_config *cfg, int layer);
/* Layer l's mixer config: the struct its mixer's keys describe (cast it to the mixer's own type). */
const void *gf_layer_mcfg(const gf_config *cfg, int layer);

/* One mixer layer outside a model, for benchmarks and tests of a mixer (grassflow bench mixer times one
 * through it): the mixer of layer `layer` of cfg (cfg is copied) with its parameters (param i, element k:
 * 0.02 times a standard normal number keyed by seed and i; buffers then drawn by the mixer's draw_buffers
 * from seed, as gf_model_init draws them), zeroed gradients, and saved activations and
 * scratch sized for (B, T) and gf_threads() threads, called as a model calls it (bidirectional as the
 * layer's stack is, no padding mask; a mixer that reads the embeddings reads its input as them, as in a first
 * layer, and backward adds the gradient they get to the input's). NULL (gf_last_error) if the layer has no registered mixer or memory
 * runs out (the message names the bytes wanted). */
typedef struct gf_mixer_harness gf_mixer_harness;
gf_mixer_harness *gf_mixer_harness_create(const gf_config *cfg, int layer, int64_t B, int64_t T, uint64_t seed);
/* out (B,T,d) = mix(inp), d = gf_layer_dim(cfg, layer); then backward: dinp += d(out)/d(inp)^T dout, the
 * parameter gradients accumulate. */
void gf_mixer_harness_forward(gf_mixer_harness *h, float *out, const float *inp);
void gf_mixer_harness_backward(gf_mixer_harness *h, float *dinp, const float *dout, const float *inp);
/* The parameters and their gradients, in the order of param_specs, and how many there are. */
float *const *gf_mixer_harness_params(gf_mixer_harness *h);
float *const *gf_mixer_harness_grads(gf_mixer_harness *h);
int gf_mixer_harness_n_params(const gf_mixer_harness *h);
/* Bytes of saved activations plus scratch (the layer's memory for B*T tokens, parameters aside); _for: the
 * same for a harness not yet created (0 if the layer has no mixer). */
size_t gf_mixer_harness_bytes(const gf_mixer_harness *h);
size_t gf_mixer_harness_bytes_for(const gf_config *cfg, int layer, int64_t B, int64_t T);
void gf_mixer_harness_free(gf_mixer_harness *h);

/* ---- heads ---- */

/* One call of a head on a batch; h (B, T, d) are the last hidden states (after the final LayerNorm),
 * d = gf_config_out_dim(cfg). Everything belongs to the model and is valid for the call only. */
typedef struct gf_head_call {
    const gf_config *cfg;     /* the model's config: gf_head_cfg(cfg) */
    int64_t B, T;
    float *const *p;          /* parameters, in the order of param_specs */
    float *const *g;          /* their gradients (NULL for a buffer or a frozen tensor) */
    const float *emb;         /* the token embedding (vocab_size, d_model), for a head tied to it; NULL for a
                               * model whose input is vectors */
    float *demb;              /* its gradient (NULL if none) */
    const uint8_t *mask;      /* (B, T): 1 real, 0 padding; NULL: none */
    const int32_t *targets;   /* target_count(B, T) ids, each -1 (ignored) or 0 .. n_outputs - 1; NULL: no
                               * loss (forward computes the outputs only) */
    float *out;               /* out_floats(B, T) floats: forward writes the outputs (logits) here */
    float *saved;             /* saved_floats(B, T) floats kept from forward to backward (not zeroed) */
    const uint8_t *segments;  /* (B, T) token types (the config's segments > 0); NULL: none (all type 0). Added
                               * last, so a head built against an earlier header reads the members above it as
                               * before */
    float label_smoothing;    /* the loss's label smoothing eps (the config's label_smoothing in a training
                               * forward, and the same in its backward; 0 otherwise: evaluation scores the plain
                               * loss). Read by a head whose table says smooths_labels. Added last, like segments */
} gf_head_call;

/* What forward reports about the batch (the model sets {0, 0, -1} before the call). */
typedef struct gf_head_result {
    double loss_sum;          /* sum of the per-target losses (the model's loss is loss_sum / n_counted) */
    int64_t n_counted;        /* targets that count (not -1) */
    int64_t n_correct;        /* of those, predicted right (argmax); -1 when the head does not count it */
} gf_head_result;

/* A head. Required: version, name, target_count, param_specs, out_floats, saved_floats, n_outputs,
 * forward, backward. Like a mixer's, its functions run on the library's thread and must not fail. */
typedef struct gf_head_ops {
    int version;              /* GF_HEAD_OPS_VERSION: the members below are those of version 2 (a version-1
                               * table ends before smooths_labels, read as false) */
    const char *name;         /* the task's name (the config's "task"): 1 to GF_MIXER_NAME_MAX - 1 letters,
                               * digits, '_' or '-'; unique among heads */
    const char *help;         /* a few lines (may be NULL) */
    size_t config_size;       /* <= GF_HEAD_CONFIG_BYTES: the struct in gf_config.head, "head": {...} in JSON */
    const gf_cfg_key *keys;
    int n_keys;
    /* Optional (NULL: none): checks across its keys and against the model, as gf_mixer_ops.check does
     * (0, or gf_fail's -1 with a message that starts with src) */
    int (*check)(const gf_config *cfg, const char *src);
    gf_direction direction;   /* the direction a model of this task has unless its config says otherwise */
    bool causal_only;         /* the task is wrong for a bidirectional model (next-token prediction) */
    bool next_token;          /* its outputs are next-token logits over the vocabulary at every position:
                               * what streaming, generation and the LM data source need */
    /* How many target ids a batch of (B, T) carries: B*T (one per position) or B (one per sequence). */
    int64_t (*target_count)(int64_t B, int64_t T);
    /* Writes its tensor specs into specs[0..GF_HEAD_MAX_PARAMS) (absolute names), returns how many. */
    int (*param_specs)(const gf_config *cfg, gf_param_spec *specs);
    /* Floats of outputs (gf_head_call.out) and of saved activations for a batch of (B, T). */
    int64_t (*out_floats)(const gf_config *cfg, int64_t B, int64_t T);
    int64_t (*saved_floats)(const gf_config *cfg, int64_t B, int64_t T);
    /* The largest valid target id + 1 (vocab_size, n_classes): the width of an output row. */
    int64_t (*n_outputs)(const gf_config *cfg);
    /* Writes c->out; with targets, also fills *res (and c->saved for backward). */
    void (*forward)(const gf_head_call *c, const float *h, gf_head_result *res);
    /* After a forward with targets: dh (B, T, d) += scale * d(loss_sum)/dh; parameter gradients accumulate
     * (+=) into c->g (and c->demb for a tied head). May overwrite c->out. */
    void (*backward)(const gf_head_call *c, const float *h, float *dh, float scale);
    /* ---- version 2 ---- */
    bool smooths_labels;      /* forward's loss and backward's gradient honour gf_head_call.label_smoothing; a
                               * config with label_smoothing > 0 on a head without it is refused */
} gf_head_ops;

/* Add a head (the pointer is kept): 0, or -1 (gf_last_error) for the reasons gf_mixer_register gives
 * (a config larger than GF_HEAD_CONFIG_BYTES here). */
int gf_head_register(const gf_head_ops *ops);
/* The head's config: the struct its keys describe, read from the config's "head" object. */
const void *gf_head_cfg(const gf_config *cfg);


/* ------------------------------------------------------------------------------------------------ */
/* Tasks (what the library reads of one: grassflow.h's Tasks section)                                */

/* 1: up to free; 2: stats, data_help and check_options; 3: text_counts; 4: score_by; 5: eval_protocol;
 * 6: source_ids. A table of an older
 * version still registers and works: the library reads a member only from a table whose version has it. */
#define GF_TASK_OPS_VERSION 6
typedef struct gf_task_ops {
    int version;                  /* GF_TASK_OPS_VERSION */
    const char *name;             /* --task NAME and "task" in a stored recipe: [a-z0-9_-], unique */
    const char *help;             /* one line: what the examples are */
    const char *metric;           /* its metric's name: "ppl" or "accuracy" (gf_metric_ppl, gf_metric_accuracy),
                                   * or that of its own score_by */
    const char *unit;             /* a counted target, short, for rates: "tok", "pairs" */
    const char *counted;          /* the same in reports and JSON: "tokens", "pairs" */
    /* Its options: a struct of options_size bytes (<= GF_TASK_OPTIONS_BYTES) described by keys[0..n_keys),
     * stored in the recipe under the keys' names (which must not be the trainer's) and given on the command
     * line as --NAME with '-' for '_' (--seq-len); a flag of another task's is refused, not ignored. */
    size_t options_size;
    const gf_cfg_key *keys;
    int n_keys;
    /* The data of e's splits into *data (the task's own); 0, or -1 with gf_last_error. */
    int (*load)(const gf_task_env *e, const void *options, void **data);
    /* Optional: the tokenizer the data was read with (stored with every checkpoint); NULL member or NULL
     * result: the task reads no text (a model of input "vectors"). */
    const gf_tokenizer *(*tokenizer)(const void *data);
    /* What the data decides in a new run's config (vocab_size, the head, its n_classes, the input), telling
     * what it changed through gf_note-style messages (gf_set_note_handler); with data NULL a check before the
     * data is read: the same but for what only the data knows, silently. Called again after the user's
     * --set options, so they are checked against it and cannot undo what the task needs. 0 or -1. */
    int (*configure)(const void *data, const void *options, gf_config *cfg);
    /* The source of split s, its training order keyed by seed; NULL with gf_last_error. */
    gf_source *(*source)(const void *data, int split, const void *options, uint64_t seed);
    /* One line on the data for the start of a run: "3613 train tokens, vocabulary 52". */
    void (*describe)(const void *data, char *buf, size_t n);
    /* Optional (a classification task): the name of class i, NULL past the last (how many there are). */
    const char *(*label)(const void *data, int64_t i);
    /* Optional: 1 if corpus names data of this task's kind (eval's check that a checkpoint and the data
     * match), GF_TASK_OWNS_WHOLE if it is one set of examples rather than a data set of splits (snli: a file
     * of pairs), which load gives as each split asked for and eval and predict score whole (--split does not
     * apply); 0 if not. NULL: no opinion. */
    int (*owns)(const char *corpus, const char *data_dir);
    /* Optional: the options for scoring a checkpoint that has no training recipe (lm: blocks of max_len). */
    void (*eval_defaults)(void *options, const gf_config *cfg);
    void (*free)(void *data);
    /* ---- version 2 ---- */
    /* Optional: statistics of the data e names, every split (grassflow data stats; call it through
     * gf_task_stats): text lines, or with json one JSON object on one line, each ending in a newline, into
     * *text (malloc'd). Reads the data itself (as load would, without its checks for training). 0; -1 with
     * gf_last_error; or GF_TASK_NOT_APPLICABLE when e asks for what does not apply to this data (a tokenizer
     * for pairs counted before tokenizing), with gf_last_error saying so. */
    int (*stats)(const gf_task_env *e, bool json, char **text);
    /* Optional: what --corpus and --tokenizer take, for --help: a few lines, each ending in a newline. */
    const char *data_help;
    /* Optional: 0 if the options fit a model of config cfg, else -1 with a message naming the option's flag
     * (lm: --seq-len at most a learned-position model's max_len); eval refuses them as a usage error. */
    int (*check_options)(const void *options, const gf_config *cfg);
    /* ---- version 3 ---- */
    /* Optional (a task that reads text): what split s's text holds beside its ids (gf_text_counts: its words,
     * ids for unknown text, skipped characters), for eval's out-of-vocabulary rate and perplexity per word.
     * 0, or -1 when the task does not count them. */
    int (*text_counts)(const void *data, int split, gf_text_counts *out);
    /* ---- version 4 ---- */
    /* Optional: the task's own metric (its name is `metric`'s); NULL: the built-in one `metric` names. */
    const gf_metric *score_by;
    /* ---- version 5 ---- */
    /* Optional: one line naming how a split of data is scored under options (lm: the blocks, the special
     * tokens, how lines are joined, the averaging), which eval prints beside the result ("protocol"). */
    void (*eval_protocol)(const void *data, const void *options, char *buf, size_t n);
    /* ---- version 6 ---- */
    /* Optional (a task of sequence pairs, on an encoder-decoder): the source ids of one input (a line of
     * predict's input, text[0..n)) under options, malloc'd into *ids (*len of them); 0, or -1 with a message
     * that begins with `what` (where the input is: "words.txt:3") and names what it cannot read, *ids then
     * left as it was (nothing of the call's to free). */
    int (*source_ids)(const void *options, const char *text, size_t n, const char *what, int32_t **ids, int64_t *len);
} gf_task_ops;
#define GF_TASK_NOT_APPLICABLE (-2)
#define GF_TASK_OWNS_WHOLE 2
/* Add a task (before it is used; not thread-safe). Fails for a duplicate or malformed name, a version this
 * build does not know, options larger than GF_TASK_OPTIONS_BYTES, an unsound key table or a key the recipe
 * already has, a metric that is neither built-in nor its score_by (malformed, or named as another task's
 * metric that is not the same table), or a missing function. The built-in tasks pass the same checks. */
int gf_task_register(const gf_task_ops *ops);

/* ------------------------------------------------------------------------------------------------ */
/* Importers                                                                                         */

/* An importer: a format of checkpoints another tool writes, read as a grassflow model by gf_import_load (and
 * so by every command that takes a backbone, and features --ckpt). The built-in one is hf-distilbert
 * (src/import/distilbert.c); a program adds its own with gf_importer_register, one file and one call
 * (tests/plugins/importer_toy.c). gf_import_load asks each importer in turn, built-in ones first, whether it reads
 * a path (detect) and loads it with the first that does; a path none claims is read as grassflow's own. */
#define GF_IMPORTER_VERSION 2 /* the gf_importer this header describes (2: save) */
typedef struct gf_importer {
    int version;          /* GF_IMPORTER_VERSION */
    const char *name;     /* [a-z0-9_-], unique: "hf-distilbert" */
    const char *what;     /* one line for messages: "a Hugging Face DistilBERT folder (config.json, ...)" */
    const char *label;    /* a few words for messages: "a Hugging Face DistilBERT folder" */
    /* Whether path is this format (cheap: a file name, a config field); never an error, never gf_fail. */
    bool (*detect)(const char *path);
    /* The model and its tokenizer (*tok, NULL if the format has none); NULL + gf_fail naming the file. */
    gf_model *(*load)(const char *path, gf_tokenizer **tok);
    /* Version 2: write m in this format, atomically, so that the program that made the format reads it; NULL
     * for a format grassflow only reads. 0, or -1 (gf_fail: what of m the format cannot hold). */
    int (*save)(const gf_model *m, const char *path);
} gf_importer;
/* Add an importer (before it is used; not thread-safe; at most GF_PLUGIN_MAX_ADDED). Fails (gf_last_error)
 * for a version this build does not know, a malformed or taken name, or a missing member. */
int gf_importer_register(const gf_importer *imp);
/* Registered importers, built-in ones first: i in [0, gf_importer_count()); NULL outside. */
int gf_importer_count(void);
const gf_importer *gf_importer_at(int i);

/* ------------------------------------------------------------------------------------------------ */
/* Helpers: files, JSON and escaping, as the library's own messages and files use them; a clock      */

/* All of path into a malloc'd buffer (NUL-terminated, the NUL not counted in *size); NULL (gf_last_error
 * naming the path) when it is missing, unreadable, not a regular file (a FIFO or a directory is refused
 * without blocking) or larger than max_bytes. */
unsigned char *gf_read_file(const char *path, size_t max_bytes, size_t *size);
/* The double of the shortest decimal that reads back as f (0.1 for 0.1f, not 0.10000000149011612): what a
 * float is written as in JSON. NaN and infinities are returned as they are. */
double gf_float_shortest(float f);
/* Seconds on the monotonic clock (CLOCK_MONOTONIC), the one every rate grassflow reports reads: only
 * differences mean anything. */
double gf_clock_s(void);
/* dst = "DIR/NAME" (dir NULL: NAME); 0, or -1 (gf_last_error naming the path) when it does not fit in cap
 * bytes: never a shorter path that would name another file. */
int gf_path_join(char *dst, size_t cap, const char *dir, const char *name);
/* mkdir -p: dir and the folders above it that are missing (0755); 0, or -1 (gf_last_error names the folder
 * that could not be made; the folders made before it are removed again). */
int gf_mkdir_p(const char *dir);
/* A file opened for writing (open(2) flags such as O_CREAT | O_TRUNC or O_APPEND, with O_WRONLY added unless
 * they hold O_RDWR) only
 * if it is a regular file: a FIFO, a device node, a directory or a symbolic link is refused with an error
 * naming the path and what it is, and opening never blocks. The descriptor, or -1 (gf_fail). */
int gf_open_write_regular(const char *path, int flags);
/* An advisory lock (flock) on path, a regular file made if missing (gf_open_write_regular): the descriptor
 * (>= 0) to give gf_unlock_file; with wait, it waits for another holder; without, a held lock gives -2, and
 * held_by (if not NULL) what the holder wrote at its start (its PID). -1 with gf_last_error on failure.
 * gf_unlock_file removes path while holding it, then releases it, so a finished holder leaves no file; a
 * waiter that then finds the file gone locks a new one. */
int gf_lock_file(const char *path, bool wait, char *held_by, size_t n);
void gf_unlock_file(const char *path, int fd);
/* A test hook of the library's atomic writes (checkpoints, states): called before every chunk is written,
 * with the temporary file's path and the chunk's size (tests/trust/kill.sh slows writes down through it, so that
 * kills land inside them). NULL: none. Set it before any write starts; the library never sets it. */
typedef void (*gf_write_hook)(const char *tmp_path, size_t n, void *ctx);
void gf_atomic_set_write_hook(gf_write_hook hook, void *ctx);

/* JSON numbers as every JSON grassflow writes them: v with printf's conversion conv ('f' or 'g') and
 * precision prec (at most 30), "null" when v is NaN or infinite (JSON has neither), %.17g when 'f' would
 * print more than 21 digits before the point. By value, so it goes straight into printf:
 * printf("{\"loss\": %s}", gf_json_num(loss, 'f', 6).s). */
typedef struct gf_jnum {
    char s[64];
} gf_jnum;
gf_jnum gf_json_num(double v, char conv, int prec);
/* s as a JSON string to f: quoted, as gf_escape_json escapes it. */
void gf_json_put_str(FILE *f, const char *s);

/* Escaping: any string (a path, a config's name, a label from a file) as text of one output format, so that
 * it cannot break the file or the table it goes into, whatever bytes it holds. Each writes s escaped into
 * dst (cap bytes, NUL-terminated; never cut inside a character or an escape) and returns the length the
 * whole of it needs (as snprintf: a result >= cap was cut; dst NULL with cap 0 only measures).
 * GF_ESCAPE_CAP(n) bytes always hold a string of n bytes (gf_escape_term: and its padding). Bytes that are
 * not UTF-8 are shown as \xNN where the format lets a byte be shown, and are U+FFFD where it does not. */
#define GF_ESCAPE_CAP(n) (6 * (size_t)(n) + 1)
/* The inside of a JSON string: " and \ backslash-escaped, C0 controls as \u00XX; bytes that are not UTF-8
 * become U+FFFD (JSON text is UTF-8: every strict parser reads it). */
size_t gf_escape_json(char *dst, size_t cap, const char *s);
/* XML (SVG) text or an attribute value between double quotes: & < > " ' as entities, tab, LF and CR as
 * &#9; &#10; &#13; (an attribute keeps them); the characters XML 1.0 forbids (other C0 controls, U+FFFE,
 * U+FFFF) and bytes that are not UTF-8 become U+FFFD. */
size_t gf_escape_xml(char *dst, size_t cap, const char *s);
/* A Markdown table cell (GitHub's and CommonMark's): \ | ` * _ [ ] ~ backslash-escaped, & < > as &amp; &lt;
 * &gt; (no HTML, no link or emphasis, no new cell), tab, LF, CR as \t \n \r, other C0 controls, DEL and
 * bytes that are not UTF-8 as \xNN: it renders as the text it was. */
size_t gf_escape_md(char *dst, size_t cap, const char *s);
/* A TSV field, one line of fields read by splitting at tabs: \ tab LF CR as \\ \t \n \r, other C0 controls,
 * DEL and bytes that are not UTF-8 as \xNN (read it with Python's csv as quoting=csv.QUOTE_NONE). */
size_t gf_escape_tsv(char *dst, size_t cap, const char *s);
/* A cell of a table printed on a terminal: tab, LF, CR as \t \n \r, other C0 controls, DEL and bytes that
 * are not UTF-8 as \xNN, C1 controls and bidirectional controls as \uXXXX (nothing moves the cursor,
 * changes colours or reorders the line), then spaces up to width columns (a wide East Asian character
 * takes two, a nonspacing mark none): printf's %-20s, counted in columns instead of bytes. */
size_t gf_escape_term(char *dst, size_t cap, const char *s, int width);
/* A name or a path (a run folder, a config's name, a file) in a line of a message on a terminal (an error, a
 * note, a progress line): as gf_escape_term, unpadded, and \ as \\ so the name reads back exactly. Nothing in
 * it moves the cursor, changes colours, starts a line of its own or reorders the line. */
size_t gf_escape_name(char *dst, size_t cap, const char *s);
/* s as gf_escape_name escapes it, in one of 8 buffers of this thread used in turn (valid until the 8th call
 * after; one message can show 8 names): printf("cannot open %s", gf_show_name(path)). A name that escapes to
 * more than 1,000 bytes is cut, ending in "...". */
const char *gf_show_name(const char *s);
/* A whole message whose names are escaped already (its lines and HINT lines), as the last guard of a printer:
 * as gf_escape_name, but LF, tab and \ kept. gf_print_lines writes it to f (-1 when f has failed). */
size_t gf_escape_lines(char *dst, size_t cap, const char *s);
int gf_print_lines(FILE *f, const char *s);
/* A JSON text (cJSON_Print's, malloc'd) made valid UTF-8: each byte that is not part of valid UTF-8 (only a
 * string's can be) becomes U+FFFD. Returns json itself when it is valid, else a malloc'd copy (json is
 * freed); NULL (json freed) when out of memory or json is NULL. */
char *gf_json_utf8(char *json);
/* The offset of the first byte of s that is not part of valid UTF-8 (as gf_json_utf8 reads it), or -1 when
 * all of s is valid UTF-8. */
int64_t gf_utf8_invalid_at(const char *s);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
