/* Config keys described as data: one table per config struct (the model's, each mixer's, each head's) says
 * each key's name, type, where its value lives, its range, its default and one line of help (gf_cfg_key,
 * in include/grassflow.h, since plug-ins write such tables). One parser, one printer and one help writer
 * serve every table, so a plug-in's keys are read, checked, saved and documented the same way as the
 * model's. What takes cJSON stays here, out of the public header. */
#ifndef GF_PLUGIN_SCHEMA_H
#define GF_PLUGIN_SCHEMA_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grassflow_plugin.h"

/* A key table is sound: names set, each value (and an INTS count) inside its config_size-byte struct,
 * INTS at most 256 long, ENUMs with names, defaults that parse. `who` names the table's owner in errors. */
int gf_keys_check(const gf_cfg_key *keys, int n, size_t config_size, const char *who);
/* The key called name in keys[0..n), or NULL. */
const gf_cfg_key *gf_key_find(const gf_cfg_key *keys, int n, const char *name);
/* Parse v into the struct at base. src names the source (a path, "--set k=v"), shown the key as the user
 * wrote it ("rank", "layers[2].rank", "offsets[3]"); errors use both. */
int gf_key_parse(const gf_cfg_key *k, const cJSON *v, void *base, const char *src, const char *shown);
/* Set every key of keys[0..n) that has a default to it. */
void gf_keys_default(const gf_cfg_key *keys, int n, void *base);
/* Add key k's value in the struct at base to the JSON object obj. */
void gf_key_to_json(const gf_cfg_key *k, const void *base, cJSON *obj);
/* "name, name, ..." of keys[0..n) into buf. */
void gf_key_names(const gf_cfg_key *keys, int n, char *buf, size_t size);
/* Help lines for keys[0..n): "  name  type, default D: help" each, into buf (appended). */
void gf_key_help(const gf_cfg_key *keys, int n, char *buf, size_t size);

#endif
