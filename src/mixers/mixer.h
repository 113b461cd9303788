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

#include "grassflow_plugin.h"
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
/* ops->draw_buffers if its table has it (version >= 2), else NULL. */
static inline void (*gf_mixer_draw_fn(const gf_mixer_ops *ops))(const gf_config *, int, float *const *, uint64_t,
                                                                  uint64_t) {
    return ops->version >= 2 ? ops->draw_buffers : NULL;
}
/* Whether ops reads an encoder's output (version >= 3, reads_memory). */
static inline bool gf_mixer_reads_memory(const gf_mixer_ops *ops) { return ops->version >= 3 && ops->reads_memory; }
/* Whether ops reads the model's input embeddings (version >= 4, reads_embeddings). */
static inline bool gf_mixer_reads_embeddings(const gf_mixer_ops *ops) { return ops->version >= 4 && ops->reads_embeddings; }
/* Set layer l of cfg to mixer ops with its default config. */
void gf_layer_set_mixer(gf_config *cfg, int l, const gf_mixer_ops *ops);

/* One mixer layer outside a model (src/mixers/harness.c): gf_mixer_harness, public (include/grassflow.h,
 * "Plug-ins"). */

#endif
