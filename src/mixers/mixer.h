/* The mixer interface: the part of a block that moves information between positions.
 *
 * A mixer declares its parameters (names relative to "blocks.{l}.mix.", shapes, init), how many floats
 * of activations it keeps between forward and backward, and how much scratch it needs during a pass.
 * The model lays those out in its arenas and calls forward/backward with views into them; adding a
 * mixer (sliding window, linear attention, ...) means one new file and one line in mixer.c, with no
 * change to the model code. */
#ifndef GF_MIXER_H
#define GF_MIXER_H

#include <stddef.h>
#include <stdint.h>

#include "grassflow.h"

#define GF_MIXER_MAX_PARAMS 8

typedef enum { GF_INIT_NORMAL = 0, GF_INIT_ZERO, GF_INIT_ONE } gf_init_kind;

typedef struct gf_param_spec {
    char name[32];    /* relative name, e.g. "red.weight" */
    int ndim;
    int64_t shape[2];
    gf_init_kind init;
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
    const char *name;
    /* Writes the parameter specs, returns how many (<= GF_MIXER_MAX_PARAMS). */
    int (*param_specs)(const gf_config *cfg, int layer, gf_param_spec *specs);
    int64_t (*saved_floats)(const gf_config *cfg, int layer, int64_t B, int64_t T);
    int64_t (*scratch_floats)(const gf_config *cfg, int layer, int64_t B, int64_t T, int n_threads);
    /* out (B,T,d) = mix(inp (B,T,d)); out must not alias inp. */
    void (*forward)(const gf_mixer_call *c, float *out, const float *inp);
    /* dinp (B,T,d) += d(out)/d(inp)^T dout; parameter gradients accumulate into c->g. */
    void (*backward)(const gf_mixer_call *c, float *dinp, const float *dout, const float *inp);
    /* Streaming. The state layout must be prefix-stable: growing cap only appends floats, so the caller
     * can grow it with realloc. A mixer whose state does not depend on cap returns the same size for
     * every cap (Grassmann: a ring of the last max-offset reduced vectors). */
    int64_t (*state_floats)(const gf_config *cfg, int layer, int64_t cap);
    int64_t (*step_scratch_floats)(const gf_config *cfg, int layer, int64_t cap);
    /* out (d) = the mixer's output at position s->pos for inp (d), the input at that position. */
    void (*step)(const gf_mixer_step *s, float *out, const float *inp);
} gf_mixer_ops;

const gf_mixer_ops *gf_mixer_get(gf_mixer_kind kind);
/* Fill one parameter spec (for the mixers' param_specs). */
void gf_param_spec_set(gf_param_spec *s, const char *name, int ndim, int64_t rows, int64_t cols,
                       gf_init_kind init);

extern const gf_mixer_ops gf_mixer_grassmann;
extern const gf_mixer_ops gf_mixer_attention;

#endif
