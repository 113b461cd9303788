/* Shared by the files of the config (config.c, config_layers.c, config_set.c, presets.c); not public. */
#ifndef GF_MODEL_CONFIG_INTERNAL_H
#define GF_MODEL_CONFIG_INTERNAL_H

#include <cjson/cJSON.h>

#include "grassflow_plugin.h"
#include "mixers/mixer.h"
#include "plugin/schema.h"

/* The model's key table. */
const gf_cfg_key *gf_config_keys(int *n);
/* The first registered mixer with a key called name, or NULL. */
const gf_mixer_ops *gf_mixer_with_key(const char *name);
/* Every key a config may hold, for "unknown key" messages. */
void gf_config_key_list(char *buf, size_t n);
/* The JSON form of the config and of one layer's entry. */
cJSON *gf_config_to_cjson(const gf_config *c);
cJSON *gf_layer_to_cjson(const gf_config *c, int l);

/* The "stacks" after the top-level one (config/stacks.c): parse (after the top-level layers), print, check. */
int gf_config_parse_stacks(const cJSON *root, const char *src, gf_config *cfg);
void gf_stacks_to_cjson(const gf_config *c, cJSON *o);
int gf_stacks_validate(const gf_config *c, const char *src);
/* An encoder-decoder's keys (source_vocab, cross_heads) against the rest of the config (config/stacks.c). */
int gf_encdec_validate(const gf_config *c, const char *src);
/* A stack entry's "layers" (or "mixers") into cfg->layers[first .. first + n). */
int gf_config_parse_stack_layers(const cJSON *e, int first, int n, const char *src, gf_config *cfg);

/* The task ("task": a head's name; the model's default direction follows it) and its "head" keys. With
 * fresh (no base), a config without "task" is a language model. */
int gf_config_parse_head(const cJSON *root, bool fresh, const char *src, gf_config *cfg);
/* Fill cfg->layers[0 .. n_layer) from root's "layers" or "mixers" or, with neither, from the base
 * config (resized to n_layer when its layers are all alike). */
int gf_config_parse_layers(const cJSON *root, const gf_config *base, const char *src, gf_config *cfg);
/* Give layer l of cfg the mixer called name: it keeps its settings if its mixer is already that one,
 * else takes those of tmpl's first layer with that mixer (tmpl may be NULL), else the mixer's defaults. */
int gf_config_layer_mixer(gf_config *cfg, int l, const char *name, const gf_config *tmpl, const char *src,
                          const char *shown);
/* Apply the top-level mixer key `it` (one value, or a list with one per layer) to every layer whose mixer
 * has it. With lenient, a key that no layer has is ignored (format 1 wrote every key for every model),
 * otherwise it is an error; so is a key that the config's "layers" entries (layers, may be NULL) give too. */
int gf_config_broadcast(gf_config *cfg, const cJSON *it, const cJSON *layers, bool lenient, const char *src);
/* A list key with n entries fits n_layer layers if n == n_layer, or if every entry is the same. */
int gf_list_fits_layers(const cJSON *arr, int64_t n_layer, const char *src, const char *key);

#endif
