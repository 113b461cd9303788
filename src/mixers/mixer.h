/* The mixer interface: the part of a block that moves information between positions.
 *
 * A mixer is a table of functions and facts (gf_mixer_ops) under a name. It owns
 *   - its config: a struct of its own (at most GF_MIXER_CONFIG_BYTES) inside each layer's entry, described
 *     by a key table (model/schema.h) that gives parsing, saving, defaults and help for free, plus an
 *     optional check across keys and against the model (rank <= d_model, d_model % n_head == 0);
 *   - its parameters: names relative to "blocks.{l}.mix.", shapes and init;
 *   - its passes: forward and backward over a batch, with the activations it keeps between them and the
 *     scratch it needs during one call, and optionally a streaming step with its per-layer state;
 *   - its place in a post-norm block: whether its output already carries the skip path (the Grassmann
 *     gate does: the paper's gated block) or needs the residual one.
 * Adding a mixer is one source file and one line in the table of src/mixers/mixer.c (or a call to
 * gf_mixer_register from a program or a test): the model, the streaming engine, the config, the CLI
 * and the benchmarks ask the table, never a name.
 *
 * The struct opens with a version (GF_MIXER_OPS_VERSION, as SQLite's sqlite3_module does): members added
 * later are read only from tables that declare a version that has them. */
#ifndef GF_MIXER_H
#define GF_MIXER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grassflow.h"
#include "model/schema.h"

#define GF_MIXER_OPS_VERSION 1
#define GF_MIXER_MAX_PARAMS 8

/* Directions a mixer can run in (gf_mixer_ops.directions). */
enum { GF_MIX_CAUSAL = 1, GF_MIX_BIDIRECTIONAL = 2 };

typedef enum { GF_INIT_NORMAL = 0, GF_INIT_ZERO, GF_INIT_ONE } gf_init_kind;

typedef struct gf_param_spec {
    char name[32];    /* relative name, e.g. "red.weight" */
    int ndim;
    int64_t shape[2];
    gf_init_kind init;
    bool buffer;      /* a buffer: saved and loaded with the model, never trained (no gradient: the
                       * call's g[i] is NULL; no optimizer state), e.g. fixed random features */
} gf_param_spec;

/* One call of a mixer on one layer. Pointers are views into the model's arenas. */
typedef struct gf_mixer_call {
    const gf_config *cfg;
    int layer;
    int64_t B, T;
    float *const *p;  /* parameters, in the order of param_specs */
    float *const *g;  /* their gradients (same order); backward accumulates into them */
    float *saved;     /* saved_floats(B, T) floats kept from forward to backward */
    float *scratch;   /* scratch_floats(B, T) floats, free for the duration of one call */
    int n_threads;    /* threads the scratch was sized for */
    bool bidirectional; /* false (the default): position t sees positions <= t only; true: both sides */
    const uint8_t *mask; /* (B, T): 1 = a real position, 0 = padding, which no real position may see;
                          * NULL: no padding. Outputs at padded positions are unspecified (finite). */
} gf_mixer_call;

/* One streaming step of a mixer on one layer (src/infer/stream.c): the new position's output from its
 * input and what the mixer kept from earlier positions in `state`. */
typedef struct gf_mixer_step {
    const gf_config *cfg;
    int layer;
    int64_t pos;      /* 0-based position of the new token; pos < cap */
    int64_t cap;      /* positions the state is sized for */
    float *const *p;  /* parameters, in the order of param_specs */
    float *state;     /* state_floats(cap) floats, zeroed at reset; the step updates it */
    float *scratch;   /* step_scratch_floats(cap) floats */
} gf_mixer_step;

typedef struct gf_mixer_ops {
    int version;              /* GF_MIXER_OPS_VERSION */
    const char *name;         /* the name in configs: "grassmann" */
    char letter;              /* one letter for --set mixers=g,a,... and `info` (0: none) */
    const char *help;         /* a few lines: what it computes, its cost, where it comes from */
    /* its config: a struct of config_size bytes, described by keys[0..n_keys) */
    size_t config_size;
    const gf_cfg_key *keys;
    int n_keys;
    /* checks across its keys and against the model's (d_model); 0 or gf_fail naming src and the layer */
    int (*check)(const gf_config *cfg, int layer, const char *src);
    /* post-norm block kind: true if the output already holds the skip path (x = ln1(mix(h))), false for
     * the residual one (x = ln1(h + mix(h))) */
    bool gated_skip;
    unsigned directions;      /* GF_MIX_CAUSAL | GF_MIX_BIDIRECTIONAL: what forward/backward implement
                               * (0 means causal only) */
    bool masks;               /* forward/backward honour gf_mixer_call.mask (padding); a model refuses a
                               * padded batch if one of its mixers does not */

    /* Writes the parameter specs, returns how many (<= GF_MIXER_MAX_PARAMS). */
    int (*param_specs)(const gf_config *cfg, int layer, gf_param_spec *specs);
    int64_t (*saved_floats)(const gf_config *cfg, int layer, int64_t B, int64_t T);
    int64_t (*scratch_floats)(const gf_config *cfg, int layer, int64_t B, int64_t T, int n_threads);
    /* out (B,T,d) = mix(inp (B,T,d)); out must not alias inp. */
    void (*forward)(const gf_mixer_call *c, float *out, const float *inp);
    /* dinp (B,T,d) += d(out)/d(inp)^T dout; parameter gradients accumulate into c->g. */
    void (*backward)(const gf_mixer_call *c, float *dinp, const float *dout, const float *inp);
    /* Streaming, causal only (all three NULL: the mixer cannot stream). The state layout must be prefix-stable:
     * growing cap only appends floats, so the caller can grow it with realloc. A mixer whose state does
     * not depend on cap returns the same size for every cap (Grassmann: a ring of the last max-offset
     * reduced vectors). */
    int64_t (*state_floats)(const gf_config *cfg, int layer, int64_t cap);
    int64_t (*step_scratch_floats)(const gf_config *cfg, int layer, int64_t cap);
    /* out (d) = the mixer's output at position s->pos for inp (d), the input at that position. */
    void (*step)(const gf_mixer_step *s, float *out, const float *inp);
} gf_mixer_ops;

/* The mixer called name (or whose letter is name, "g"), NULL if none. */
const gf_mixer_ops *gf_mixer_find(const char *name);
/* The mixer of layer l of cfg (NULL if its name is not registered). */
const gf_mixer_ops *gf_layer_mixer(const gf_config *cfg, int l);
/* The width of layer l's hidden states: what a mixer's inputs and outputs have per position. A mixer reads
 * it here, never from cfg->d_model (a model's stacks may differ in width). */
static inline int64_t gf_layer_dim(const gf_config *cfg, int l) { return gf_stack_dim(cfg, gf_layer_stack(cfg, l)); }
/* The layer's mixer config struct (the mixer's own type). */
static inline const void *gf_layer_mcfg(const gf_config *cfg, int l) { return cfg->layers[l].params.bytes; }
/* Add a mixer to the registry (before any model uses it). Fails for a duplicate name or letter, a
 * version this build does not know, a config larger than GF_MIXER_CONFIG_BYTES or a missing function. */
int gf_mixer_register(const gf_mixer_ops *ops);
/* Registered mixers: i in [0, gf_mixer_count()). */
int gf_mixer_count(void);
const gf_mixer_ops *gf_mixer_at(int i);
/* Set layer l of cfg to mixer ops with its default config. */
void gf_layer_set_mixer(gf_config *cfg, int l, const gf_mixer_ops *ops);
/* Fill one parameter spec (for the mixers' param_specs). */
void gf_param_spec_set(gf_param_spec *s, const char *name, int ndim, int64_t rows, int64_t cols,
                       gf_init_kind init);

/* One mixer layer outside a model (src/mixers/harness.c), for benchmarks and tests: the mixer of layer
 * `layer` of cfg (copied) with its parameters (param i, element k = 0.02 gf_normal(gf_key(seed, i), k)),
 * zeroed gradients, and saved activations and scratch sized for (B, T) and gf_max_threads() threads,
 * called as a model calls it (bidirectional from cfg->direction, no padding mask). NULL (gf_last_error)
 * if the layer has no registered mixer or memory runs out (the message names the bytes wanted). */
typedef struct gf_mixer_harness gf_mixer_harness;
gf_mixer_harness *gf_mixer_harness_create(const gf_config *cfg, int layer, int64_t B, int64_t T, uint64_t seed);
/* out (B,T,d) = mix(inp); then backward: dinp += d(out)/d(inp)^T dout, parameter gradients accumulate. */
void gf_mixer_harness_forward(gf_mixer_harness *h, float *out, const float *inp);
void gf_mixer_harness_backward(gf_mixer_harness *h, float *dinp, const float *dout, const float *inp);
float *const *gf_mixer_harness_params(gf_mixer_harness *h); /* in the order of param_specs */
float *const *gf_mixer_harness_grads(gf_mixer_harness *h);
int gf_mixer_harness_n_params(const gf_mixer_harness *h);
/* Bytes of saved activations plus scratch (a harness's memory per B*T tokens, parameters aside); _for:
 * the same for a harness not yet created (0 if the layer has no mixer). */
size_t gf_mixer_harness_bytes(const gf_mixer_harness *h);
size_t gf_mixer_harness_bytes_for(const gf_config *cfg, int layer, int64_t B, int64_t T);
void gf_mixer_harness_free(gf_mixer_harness *h);

#endif
