/* The mixer registry: the built-in mixers and those added with gf_mixer_register, looked up by name.
 *
 * What a mixer is (gf_mixer_ops: its config keys, tensors, forward/backward, mask and direction, streaming
 * step) is public, in include/grassflow.h, "Plug-ins: mixers and heads"; what a table must satisfy is
 * checked in plugin/plugin.h. Adding a mixer is one source file and one line in the table of
 * src/mixers/mixer.c (or a call to gf_mixer_register from a program or a test): the model, the streaming
 * engine, the config, the CLI and the benchmarks ask the table, never a name. */
#ifndef GF_MIXERS_MIXER_H
#define GF_MIXERS_MIXER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grassflow.h"
#include "plugin/plugin.h"

/* The mixer called name (or whose letter is name, "g"), NULL if none. */
const gf_mixer_ops *gf_mixer_find(const char *name);
/* The mixer of layer l of cfg (NULL if its name is not registered). */
const gf_mixer_ops *gf_layer_mixer(const gf_config *cfg, int l);
/* Registered mixers: i in [0, gf_mixer_count()), the built-ins first. */
int gf_mixer_count(void);
const gf_mixer_ops *gf_mixer_at(int i);
/* Check mixer i as gf_mixer_register checks a new one (gf_mixer_ops_check), against the mixers before it:
 * tests run every built-in through it. 0 or -1 (gf_last_error). */
int gf_mixer_check_at(int i);
/* Set layer l of cfg to mixer ops with its default config. */
void gf_layer_set_mixer(gf_config *cfg, int l, const gf_mixer_ops *ops);

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
