/* Config keys described as data: one table per config struct (the model's, each mixer's) says each key's
 * name, type, where its value lives, its range, its default and one line of help. One parser, one printer
 * and one help writer serve every table, so a mixer's keys are read, checked, saved and documented the
 * same way as the model's. */
#ifndef GF_MODEL_SCHEMA_H
#define GF_MODEL_SCHEMA_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    GF_KEY_INT,   /* int64_t */
    GF_KEY_FLOAT, /* float */
    GF_KEY_BOOL,  /* bool */
    GF_KEY_ENUM,  /* int: the index into names */
    GF_KEY_INTS,  /* int[max_count] plus an int count at count_off */
} gf_key_type;

enum {
    GF_KEY_LO_OPEN = 1, /* the range excludes lo */
    GF_KEY_HI_OPEN = 2, /* the range excludes hi */
};

typedef struct gf_cfg_key {
    const char *name;
    gf_key_type type;
    size_t off;               /* offset of the value in the struct */
    double lo, hi;            /* INT, FLOAT and the elements of INTS: the allowed range */
    unsigned flags;           /* GF_KEY_LO_OPEN, GF_KEY_HI_OPEN */
    const char *const *names; /* ENUM: NULL-terminated */
    size_t count_off;         /* INTS: offset of the int count */
    int max_count;            /* INTS: capacity (the count is 1 .. max_count) */
    const char *def;          /* the default as JSON text ("32", "[1,2,4]", "\"pre\""); NULL: required */
    const char *help;         /* one line */
} gf_cfg_key;

/* A plug-in's key table is sound: names set, each value (and an INTS count) inside its config_size-byte
 * struct, INTS at most 256 long, ENUMs with names, defaults that parse. `who` names the plug-in. */
int gf_keys_check(const gf_cfg_key *keys, int n, size_t config_size, const char *who);
/* What every plug-in's ops must satisfy, for fn ("gf_mixer_register") and kind ("mixer"): a name of 1 to
 * name_max - 1 characters, an interface version in [1, max_version], a config of at most config_max bytes
 * and a sound key table. */
typedef struct gf_plugin_desc {
    const char *fn, *kind, *name;
    int version, max_version, name_max;
    size_t config_size, config_max;
    const gf_cfg_key *keys;
    int n_keys;
} gf_plugin_desc;
int gf_plugin_check(const gf_plugin_desc *d);
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
