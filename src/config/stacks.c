/* The stacks of a config: the first is the top-level keys, the others cfg->stacks[]. */
#include "grassflow_plugin.h"

int gf_config_total_layers(const gf_config *c) {
    int64_t n = c->n_layer;
    for (int k = 0; k < c->n_stacks; k++) n += c->stacks[k].n_layer;
    return (int)n;
}

int gf_stack_first_layer(const gf_config *c, int k) {
    int64_t first = 0;
    for (int s = 0; s < k; s++) first += gf_stack_layers(c, s);
    return (int)first;
}

int gf_layer_stack(const gf_config *c, int l) {
    int k = 0;
    for (int64_t end = c->n_layer; k < c->n_stacks && l >= end; k++) end += c->stacks[k].n_layer;
    return k;
}

int64_t gf_stack_dim(const gf_config *c, int k) { return k ? c->stacks[k - 1].d_model : c->d_model; }
int64_t gf_stack_ff(const gf_config *c, int k) { return k ? c->stacks[k - 1].d_ff : c->d_ff; }
gf_norm gf_stack_norm(const gf_config *c, int k) { return k ? c->stacks[k - 1].norm : c->norm; }
gf_direction gf_stack_direction(const gf_config *c, int k) { return k ? c->stacks[k - 1].direction : c->direction; }
int64_t gf_config_out_dim(const gf_config *c) { return gf_stack_dim(c, c->n_stacks); }
int64_t gf_layer_dim(const gf_config *c, int l) { return gf_stack_dim(c, gf_layer_stack(c, l)); }
int64_t gf_stack_layers(const gf_config *c, int k) { return k ? c->stacks[k - 1].n_layer : c->n_layer; }

/* ---- the "stacks" key: parsing, printing, checking ------------------------------------------------------ */

#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "config/config_internal.h"

static const char *const NORMS[] = {"pre", "post", NULL};
static const char *const DIRECTIONS[] = {"causal", "bidirectional", NULL};

#define OFF(f) offsetof(gf_stack_config, f)
static const gf_cfg_key STACK_KEYS[] = {
    {.name = "d_model", .type = GF_KEY_INT, .off = OFF(d_model), .lo = 1, .hi = 65536, .help = "its width"},
    {.name = "d_ff", .type = GF_KEY_INT, .off = OFF(d_ff), .lo = 1, .hi = 1 << 20, .help = "its FFN width"},
    {.name = "n_layer", .type = GF_KEY_INT, .off = OFF(n_layer), .lo = 1, .hi = GF_MAX_LAYERS, .help = "its blocks"},
    {.name = "norm", .type = GF_KEY_ENUM, .off = OFF(norm), .names = NORMS, .help = "default: the model's"},
    {.name = "direction", .type = GF_KEY_ENUM, .off = OFF(direction), .names = DIRECTIONS,
     .help = "default: the model's"},
};
#undef OFF
#define N_STACK_KEYS ((int)(sizeof STACK_KEYS / sizeof STACK_KEYS[0]))

/* The first parts of the names of the tensors outside the stacks (the head's are checked with the head,
 * config.c): a stack of one of these names would share their prefix, and whatever selects tensors by
 * name (a backbone copied in, a checkpoint read) would take the stack's for the model's own. */
static const char *const RESERVED[] = {"tok_emb", "pos_emb", "seg_emb", "emb_ln", "in_proj", "blocks", "ln_f", NULL};

/* 0 if name is a stack name: 1 to GF_MIXER_NAME_MAX - 1 characters a-z, 0-9, _, not reserved. */
static int check_stack_name(const char *name, int k, const char *src) {
    bool ok = name[0] && strlen(name) < GF_MIXER_NAME_MAX;
    for (const char *p = name; ok && *p; p++) ok &= islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_';
    if (!ok)
        return gf_fail("%s: \"stacks\"[%d] needs a \"name\" of 1 to %d characters a-z, 0-9, _: it prefixes the "
                       "stack's tensors", src, k, GF_MIXER_NAME_MAX - 1);
    for (int i = 0; RESERVED[i]; i++)
        if (!strcmp(name, RESERVED[i]))
            return gf_fail("%s: \"stacks\"[%d] is named \"%s\", a name the model's own tensors use (tok_emb, pos_emb, "
                           "seg_emb, emb_ln, in_proj, blocks, ln_f): its tensors would be taken for those\nHINT: "
                           "name it otherwise, e.g. \"head\"", src, k, name);
    return 0;
}

static int stack_name(const cJSON *e, int k, const char *src, gf_stack_config *st) {
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
    if (!cJSON_IsString(nm))
        return gf_fail("%s: \"stacks\"[%d] needs a \"name\" (a string of a-z, 0-9, _): it prefixes the stack's "
                       "tensors", src, k);
    if (check_stack_name(nm->valuestring, k, src)) return -1;
    snprintf(st->name, sizeof st->name, "%s", nm->valuestring);
    return 0;
}

/* One "stacks" entry into cfg->stacks[k], its layers from cfg->layers[first]. */
static int parse_stack(const cJSON *e, int k, int first, const char *src, gf_config *cfg) {
    gf_stack_config *st = &cfg->stacks[k];
    if (!cJSON_IsObject(e)) return gf_fail("%s: \"stacks\"[%d] must be an object", src, k);
    memset(st, 0, sizeof *st);
    st->norm = cfg->norm;
    st->direction = cfg->direction;
    if (stack_name(e, k, src, st)) return -1;
    for (const cJSON *it = e->child; it; it = it->next) {
        const gf_cfg_key *key = gf_key_find(STACK_KEYS, N_STACK_KEYS, it->string);
        char shown[96];
        snprintf(shown, sizeof shown, "stacks[%d].%s", k, it->string);
        if (key && gf_key_parse(key, it, st, src, shown)) return -1;
        if (!key && strcmp(it->string, "name") && strcmp(it->string, "layers") && strcmp(it->string, "mixers"))
            return gf_fail("%s: \"stacks\"[%d] has no key \"%s\"; its keys are: name, d_model, d_ff, n_layer, norm, "
                           "direction, layers", src, k, it->string);
    }
    for (int i = 0; i < 3; i++)
        if (!cJSON_GetObjectItemCaseSensitive(e, STACK_KEYS[i].name))
            return gf_fail("%s: \"stacks\"[%d] lacks \"%s\"", src, k, STACK_KEYS[i].name);
    if (first + st->n_layer > GF_MAX_LAYERS)
        return gf_fail("%s: the stacks hold more than %d layers in all", src, GF_MAX_LAYERS);
    return gf_config_parse_stack_layers(e, first, (int)st->n_layer, src, cfg);
}

int gf_config_parse_stacks(const cJSON *root, const char *src, gf_config *cfg) {
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "stacks");
    if (!arr) return 0;
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) > GF_MAX_STACKS)
        return gf_fail("%s: \"stacks\" must be a list of at most %d stacks (after the top-level one)", src,
                       GF_MAX_STACKS);
    cfg->n_stacks = cJSON_GetArraySize(arr);
    for (int k = 0; k < cfg->n_stacks; k++)
        if (parse_stack(cJSON_GetArrayItem(arr, k), k, gf_stack_first_layer(cfg, k + 1), src, cfg)) return -1;
    return 0;
}

void gf_stacks_to_cjson(const gf_config *c, cJSON *o) {
    if (!c->n_stacks) return;
    cJSON *arr = cJSON_AddArrayToObject(o, "stacks");
    for (int k = 0; k < c->n_stacks; k++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", c->stacks[k].name);
        for (int i = 0; i < N_STACK_KEYS; i++) gf_key_to_json(&STACK_KEYS[i], &c->stacks[k], e);
        cJSON *layers = cJSON_AddArrayToObject(e, "layers");
        for (int l = gf_stack_first_layer(c, k + 1); l < gf_stack_first_layer(c, k + 2); l++)
            cJSON_AddItemToArray(layers, gf_layer_to_cjson(c, l));
        cJSON_AddItemToArray(arr, e);
    }
}

int gf_stacks_validate(const gf_config *c, const char *src) {
    if (c->n_stacks < 0 || c->n_stacks > GF_MAX_STACKS)
        return gf_fail("%s: n_stacks is %d; expected 0 to %d", src, c->n_stacks, GF_MAX_STACKS);
    for (int k = 0; k < c->n_stacks; k++) {
        const gf_stack_config *st = &c->stacks[k];
        for (int i = 0; i < N_STACK_KEYS; i++) {
            cJSON *o = cJSON_CreateObject();
            gf_key_to_json(&STACK_KEYS[i], st, o);
            gf_stack_config tmp;
            char shown[96];
            snprintf(shown, sizeof shown, "stacks[%d].%s", k, STACK_KEYS[i].name);
            int rc = gf_key_parse(&STACK_KEYS[i], o->child, &tmp, src, shown);
            cJSON_Delete(o);
            if (rc) return -1;
        }
        for (int j = 0; j < k; j++)
            if (!strcmp(c->stacks[j].name, st->name)) return gf_fail("%s: two stacks are called \"%s\"", src, st->name);
        if (!st->name[0]) return gf_fail("%s: stacks[%d] has no name", src, k);
        if (check_stack_name(st->name, k, src)) return -1; /* a config made in C is held to the same names */
    }
    if (gf_config_total_layers(c) > GF_MAX_LAYERS)
        return gf_fail("%s: the stacks hold %d layers in all; at most %d", src, gf_config_total_layers(c), GF_MAX_LAYERS);
    return 0;
}

/* ---- an encoder-decoder (source_vocab > 0): the first stack encodes the source, the second decodes ---------- */

#include "model/block.h"

bool gf_layer_reads_memory(const gf_config *c, int l) { return c->source_vocab > 0 && gf_layer_stack(c, l) == 1; }

int gf_encdec_validate(const gf_config *c, const char *src) {
    if (c->source_vocab == 0) {
        if (c->cross_heads != 0)
            return gf_fail("%s: cross_heads is %lld, but this is not an encoder-decoder (source_vocab 0): only a "
                           "decoder's blocks attend to an encoder\nHINT: set source_vocab, or leave cross_heads out",
                           src, (long long)c->cross_heads);
        return 0;
    }
    const char *why = c->n_stacks != 1 ? "it has exactly one stack after the first (its decoder, in \"stacks\")"
                      : c->input != GF_INPUT_TOKENS ? "its input is tokens (source and target ids)"
                      : c->segments > 0 ? "it has no token types (segments 0)"
                      : c->emb_norm ? "it has no emb_norm"
                      : c->stacks[0].d_model != c->d_model ? "its decoder (the second stack) is as wide as its encoder"
                      : c->stacks[0].direction != GF_CAUSAL ? "its decoder (the second stack) is causal"
                      : NULL;
    if (why)
        return gf_fail("%s: source_vocab %lld makes an encoder-decoder, and one needs that %s (docs/model.md, "
                       "\"Encoder-decoders\")", src, (long long)c->source_vocab, why);
    if (c->cross_heads < 1 || c->d_model % c->cross_heads)
        return gf_fail("%s: cross_heads is %lld; an encoder-decoder's decoder attends to the encoder with cross_heads "
                       "heads, at least 1 and dividing d_model %lld", src, (long long)c->cross_heads,
                       (long long)c->d_model);
    return 0;
}
