/* The config and its JSON form: the model's keys (a key table, plugin/schema.h), the layers with their
 * mixers' own keys, validation, printing, files. `--set` is in config_set.c.
 *
 * The JSON form (format 3):
 *   {"format": 3, "head": {"kind": "next_token", that head's keys}, "input": "tokens", "d_input": 0, "vocab_size": V, "d_model": d, "n_layer": L, "d_ff": F, "max_len": M,
 *    "norm": "pre", "tie_head": true, "gelu": "erf", "pos": "learned", "dropout": 0.1,
 *    "layers": [{"mixer": "grassmann", "rank": 32, "offsets": [1,2,4,8,12,16], ...}, ...]}
 * "layers" has one entry per layer, or one for all; an entry may be a bare mixer name (its defaults).
 * Also read:
 *   - "base": "PRESET", then any key overrides the preset's;
 *   - "mixers": ["grassmann", "attention", ...] instead of "layers" (a layer whose mixer is the base's
 *     keeps the base's settings, otherwise it takes those of the base's first layer with that mixer,
 *     else the mixer's defaults);
 *   - a mixer key at the top level ("rank": 16, "offsets": [[1],[2],...]): set in every layer whose
 *     mixer has it, one value for all or a list with one per layer;
 *   - format 2 (grassflow 0.2): the head's kind as "task" at the top ("lm" for next_token), "head" its keys;
 *   - format 1 (grassflow 0.1, no "format" key): flat keys n_head, rank, offsets, mixers, plucker_eps,
 *     extra_proj, every key required unless "base" is given. Its checkpoints load unchanged. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "io/file.h"
#include "io/json_out.h"
#include "heads/head.h"
#include "model/block.h"
#include "model/model_internal.h"
#include "config/config_internal.h"

static const char *const NORMS[] = {"pre", "post", NULL};
static const char *const GELUS[] = {"erf", "tanh", NULL};
static const char *const POSES[] = {"learned", "sinusoidal", "none", "sinusoidal-2d", NULL};
static const char *const INPUTS[] = {"tokens", "vectors", NULL};
static const char *const DIRECTIONS[] = {"causal", "bidirectional", NULL};

#define OFF(f) offsetof(gf_config, f)
static const gf_cfg_key KEYS[] = {
    {.name = "input", .type = GF_KEY_ENUM, .off = OFF(input), .names = INPUTS, .def = "\"tokens\"",
     .help = "tokens: ids through an embedding table; vectors: d_input floats per position through a projection"},
    {.name = "d_input", .type = GF_KEY_INT, .off = OFF(d_input), .lo = 0, .hi = 1 << 20, .def = "0",
     .help = "the size of each input vector (input vectors)"},
    {.name = "vocab_size", .type = GF_KEY_INT, .off = OFF(vocab_size), .lo = 0, .hi = 2147483647, .def = "0",
     .help = "token ids are 0 .. vocab_size-1 (token inputs, and the lm head's outputs)"},
    {.name = "d_model", .type = GF_KEY_INT, .off = OFF(d_model), .lo = 1, .hi = 65536, .help = "hidden size d"},
    {.name = "n_layer", .type = GF_KEY_INT, .off = OFF(n_layer), .lo = 1, .hi = GF_MAX_LAYERS, .help = "blocks"},
    {.name = "d_ff", .type = GF_KEY_INT, .off = OFF(d_ff), .lo = 1, .hi = 1 << 20,
     .help = "hidden size of each block's feed-forward network"},
    {.name = "max_len", .type = GF_KEY_INT, .off = OFF(max_len), .lo = 0, .hi = 1 << 24, .def = "0",
     .help = "rows of the learned position table (required with pos learned); 0 = no limit"},
    {.name = "norm", .type = GF_KEY_ENUM, .off = OFF(norm), .names = NORMS, .def = "\"pre\"",
     .help = "pre: h + mix(ln(h)); post: the paper's ln after each branch"},
    {.name = "tie_head", .type = GF_KEY_BOOL, .off = OFF(tie_head), .def = "true",
     .help = "the LM head reuses the token embedding"},
    {.name = "gelu", .type = GF_KEY_ENUM, .off = OFF(gelu), .names = GELUS, .def = "\"erf\"",
     .help = "exact GELU or its tanh approximation"},
    {.name = "pos", .type = GF_KEY_ENUM, .off = OFF(pos), .names = POSES, .def = "\"learned\"",
     .help = "position signal added to the token embedding"},
    {.name = "segments", .type = GF_KEY_INT, .off = OFF(segments), .lo = 0, .hi = 255, .def = "0",
     .help = "token types (BERT's segments, e.g. 2 for sentence pairs): a learned row per type added to the "
             "token embedding; 0 = none"},
    {.name = "emb_norm", .type = GF_KEY_BOOL, .off = OFF(emb_norm), .def = "false",
     .help = "a LayerNorm on the sum of the embeddings (BERT, DistilBERT), before the first block"},
    {.name = "ln_eps", .type = GF_KEY_FLOAT, .off = OFF(ln_eps), .lo = 0, .hi = 1, .flags = GF_KEY_LO_OPEN,
     .def = "1e-5", .help = "the eps of every LayerNorm (1e-5: torch's default; BERT and DistilBERT: 1e-12)"},
    {.name = "dropout", .type = GF_KEY_FLOAT, .off = OFF(dropout), .lo = 0, .hi = 1, .flags = GF_KEY_HI_OPEN,
     .def = "0", .help = "dropout probability on the residual branches while training"},
    {.name = "direction", .type = GF_KEY_ENUM, .off = OFF(direction), .names = DIRECTIONS, .def = "\"causal\"",
     .help = "causal: position t sees positions <= t; bidirectional: both sides (encoders)"},
    {.name = "source_vocab", .type = GF_KEY_INT, .off = OFF(source_vocab), .lo = 0, .hi = 2147483647, .def = "0",
     .help = "an encoder-decoder: source ids 0 .. source_vocab-1 into the first stack (the encoder), the second "
             "stack its decoder; 0 = not one"},
    {.name = "cross_heads", .type = GF_KEY_INT, .off = OFF(cross_heads), .lo = 0, .hi = 65536, .def = "0",
     .help = "an encoder-decoder: the heads of each decoder block's attention to the encoder"},
    {.name = "pos_grid", .type = GF_KEY_INT, .off = OFF(pos_grid), .lo = 0, .hi = 1 << 16, .def = "0",
     .help = "the positions' grid: this many columns (an image's patches, row by row; the image task sets it); "
             "pos sinusoidal-2d gives each position the sinusoidal signal of its row in d / 2 channels and of its "
             "column in the others; 0: none"},
    {.name = "init_std", .type = GF_KEY_FLOAT, .off = OFF(init_std), .lo = 0, .hi = 1, .def = "0",
     .help = "the standard deviation of the normal init of weights and embeddings; 0: 0.02 (GPT-2's)"},
    {.name = "label_smoothing", .type = GF_KEY_FLOAT, .off = OFF(label_smoothing), .lo = 0, .hi = 1,
     .flags = GF_KEY_HI_OPEN, .def = "0",
     .help = "label smoothing of the training loss: the cross-entropy against (1 - eps) onehot + eps / classes "
             "(evaluation scores the plain loss); 0 = none"},
};
/* Keys written into a config's JSON form only when they are not 0 (those of encoder-decoders, pos_grid,
 * init_std, label_smoothing): every other model's config reads as before they existed. */
static bool key_shown(const gf_cfg_key *k, const gf_config *c) {
    if (k->off == offsetof(gf_config, source_vocab) || k->off == offsetof(gf_config, cross_heads))
        return c->source_vocab != 0 || c->cross_heads != 0;
    if (k->off == offsetof(gf_config, pos_grid)) return c->pos_grid != 0;
    if (k->off == offsetof(gf_config, init_std)) return c->init_std != 0.0f;
    if (k->off == offsetof(gf_config, label_smoothing)) return c->label_smoothing != 0.0f;
    return true;
}
#undef OFF
#define N_KEYS ((int)(sizeof KEYS / sizeof KEYS[0]))

/* Format 1 had every one of these, in this order; a file of that format missing one is damaged. */
static const char *const FORMAT1_KEYS[] = {"vocab_size", "d_model", "n_layer", "n_head", "d_ff", "max_len",
                                           "rank", "offsets", "mixers", "norm", "plucker_eps", "extra_proj",
                                           "tie_head", "gelu", "pos", "dropout", NULL};

const gf_cfg_key *gf_config_keys(int *n) {
    *n = N_KEYS;
    return KEYS;
}

/* The first registered mixer that has key `name`, or NULL. */
const gf_mixer_ops *gf_mixer_with_key(const char *name) {
    for (int i = 0; i < gf_mixer_count(); i++)
        if (gf_key_find(gf_mixer_at(i)->keys, gf_mixer_at(i)->n_keys, name)) return gf_mixer_at(i);
    return NULL;
}

void gf_config_key_list(char *buf, size_t n) {
    gf_key_names(KEYS, N_KEYS, buf, n);
    snprintf(buf + strlen(buf), n - strlen(buf), ", layers (or mixers); mixer keys (in a layer's entry, or for "
                                                 "every layer that has them):");
    for (int i = 0; i < gf_mixer_count(); i++) {
        const gf_mixer_ops *m = gf_mixer_at(i);
        char keys[512];
        gf_key_names(m->keys, m->n_keys, keys, sizeof keys);
        snprintf(buf + strlen(buf), n - strlen(buf), "%s %s: %s", i ? ";" : "", m->name, m->n_keys ? keys : "-");
    }
}

/* ---- parsing ------------------------------------------------------------------------------------------ */

/* The format: as given, else 2 if a key that format 1 did not have is there, else 1 (grassflow 0.1). */
static int read_format(const cJSON *root, const char *src, int *format) {
    static const char *const ONLY2[] = {"layers", "task",     "head",     "direction", "input", "d_input",
                                        "stacks", "segments", "emb_norm", "ln_eps",    NULL};
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, "format");
    *format = 1;
    for (int i = 0; ONLY2[i]; i++)
        if (cJSON_GetObjectItemCaseSensitive(root, ONLY2[i])) *format = 2;
    if (!f) return 0;
    if (!cJSON_IsNumber(f) || f->valuedouble != floor(f->valuedouble))
        return gf_fail("%s: \"format\" must be an integer (the config format, %d for this version)", src,
                       GF_CONFIG_FORMAT);
    if (f->valuedouble < 1 || f->valuedouble > GF_CONFIG_FORMAT)
        return gf_fail("%s: config format %.17g is not one this grassflow (%s) reads: formats 1 to %d\nHINT: a "
                       "newer grassflow wrote it; upgrade", src, f->valuedouble, GF_VERSION, GF_CONFIG_FORMAT);
    *format = (int)f->valuedouble;
    return 0;
}

/* Every key of root is a model key, a layer-structure key, or some mixer's key. */
static int check_known_keys(const cJSON *root, int format, const char *src) {
    (void)format;
    static const char *const STRUCTURE[] = {"base", "format", "task", "head", "layers", "mixers", "stacks", NULL};
    for (const cJSON *it = root->child; it; it = it->next) {
        const char *k = it->string;
        bool structure = false;
        for (int i = 0; STRUCTURE[i]; i++) structure |= !strcmp(k, STRUCTURE[i]);
        if (structure || gf_key_find(KEYS, N_KEYS, k) || gf_mixer_with_key(k)) continue;
        char keys[2048];
        gf_config_key_list(keys, sizeof keys);
        return gf_fail("%s: unknown key \"%s\"; the keys are: base, format, task, head, %s", src, k, keys);
    }
    return 0;
}

static int check_required(const cJSON *root, int format, const char *src) {
    for (int i = 0; format == 1 && FORMAT1_KEYS[i]; i++)
        if (!cJSON_GetObjectItemCaseSensitive(root, FORMAT1_KEYS[i]))
            return gf_fail("%s: missing key \"%s\"\nHINT: give every key, or \"base\": \"PRESET\" to start from a "
                           "preset, or \"format\": 2 and \"layers\" (where keys a model does not need have "
                           "defaults)", src, FORMAT1_KEYS[i]);
    for (int i = 0; i < N_KEYS; i++)
        if (!KEYS[i].def && !cJSON_GetObjectItemCaseSensitive(root, KEYS[i].name))
            return gf_fail("%s: missing key \"%s\"\nHINT: give every required key, or \"base\": \"PRESET\" to "
                           "start from a preset", src, KEYS[i].name);
    if (!cJSON_GetObjectItemCaseSensitive(root, "layers") && !cJSON_GetObjectItemCaseSensitive(root, "mixers"))
        return gf_fail("%s: missing key \"layers\" (one entry per layer, e.g. [{\"mixer\": \"grassmann\"}])", src);
    return 0;
}

/* A preset or nothing to start from, the model keys, the layers, then the mixer keys given at the top. */
static int parse_root(const cJSON *root, const char *src, gf_config *cfg) {
    int format;
    if (read_format(root, src, &format) || check_known_keys(root, format, src)) return -1;
    const cJSON *base = cJSON_GetObjectItemCaseSensitive(root, "base");
    gf_config from;
    memset(&from, 0, sizeof from);
    if (base) {
        if (!cJSON_IsString(base)) return gf_fail("%s: \"base\" must name a preset", src);
        if (gf_config_preset(base->valuestring, &from)) {
            gf_fail_context(" (in %s, key \"base\")", src);
            return -1;
        }
        *cfg = from;
    } else {
        if (check_required(root, format, src)) return -1;
        gf_keys_default(KEYS, N_KEYS, cfg);
    }
    cfg->format = GF_CONFIG_FORMAT;
    for (int i = 0; i < N_KEYS; i++) {
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, KEYS[i].name);
        if (it && gf_key_parse(&KEYS[i], it, cfg, src, KEYS[i].name)) return -1;
    }
    if (gf_config_parse_head(root, !base, src, cfg)) return -1;
    if (gf_config_parse_layers(root, base ? &from : NULL, src, cfg)) return -1;
    for (const cJSON *it = root->child; it; it = it->next)
        if (!gf_key_find(KEYS, N_KEYS, it->string) && gf_mixer_with_key(it->string) &&
            gf_config_broadcast(cfg, it, cJSON_GetObjectItemCaseSensitive(root, "layers"), format == 1, src))
            return -1;
    cfg->n_stacks = 0; /* further stacks are not inherited from a base */
    return gf_config_parse_stacks(root, src, cfg);
}

int gf_config_from_json(const char *json, const char *source, gf_config *c) {
    const char *src = source ? source : "config";
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(json, &end, 1);
    if (!root) {
        long at = end ? (long)(end - json) : 0;
        return gf_fail("%s: not valid JSON (error near byte %ld)", src, at);
    }
    gf_config *cfg = calloc(1, sizeof *cfg);
    int rc = -1;
    char dup[256] = "";
    if (!cfg) gf_fail("out of memory reading the config %s", src);
    else if (!cJSON_IsObject(root)) gf_fail("%s: a config must be a JSON object", src);
    else if (gf_json_duplicate_key(root, dup, sizeof dup))
        gf_fail("%s: the key \"%s\" appears twice; expected each key once: which to read is not clear", src, dup);
    else if (!parse_root(root, src, cfg) && !gf_config_validate(cfg, src)) rc = 0;
    if (!rc) *c = *cfg;
    free(cfg);
    cJSON_Delete(root);
    return rc;
}

/* ---- validation: every value in its range (the key tables' own parser), then across keys ------------- */

static int check_value(const gf_cfg_key *k, const void *base, const char *src, const char *shown) {
    cJSON *o = cJSON_CreateObject();
    gf_key_to_json(k, base, o);
    _Alignas(8) unsigned char scratch[sizeof(gf_config)];
    int rc = gf_key_parse(k, o->child, scratch, src, shown);
    cJSON_Delete(o);
    return rc;
}

static int validate_layer(const gf_config *c, int l, const char *src) {
    const gf_mixer_ops *m = gf_layer_mixer(c, l);
    if (!m) {
        char names[512] = "";
        for (int i = 0; i < gf_mixer_count(); i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s\"%s\"", i ? ", " : "",
                     gf_mixer_at(i)->name);
        return gf_fail("%s: layer %d: unknown mixer \"%.*s\"; the mixers are: %s", src, l, GF_MIXER_NAME_MAX,
                       c->layers[l].mixer, names);
    }
    for (int i = 0; i < m->n_keys; i++) {
        char shown[96];
        snprintf(shown, sizeof shown, "layers[%d].%s", l, m->keys[i].name);
        if (check_value(&m->keys[i], c->layers[l].params.bytes, src, shown)) return -1;
    }
    const char *blk = c->layers[l].block;
    if (blk[0] && (!memchr(blk, '\0', sizeof c->layers[l].block) || !gf_block_kind_find(blk))) {
        char names[512];
        gf_block_kind_names(names, sizeof names);
        return gf_fail("%s: layer %d: unknown block kind \"%.*s\"; the kinds are: %s", src, l,
                       (int)sizeof c->layers[l].block, blk, names);
    }
    const bool dec = gf_layer_reads_memory(c, l);
    const block_kind *kind = gf_block_kind_for(gf_stack_norm(c, gf_layer_stack(c, l)), m, blk, dec);
    if (gf_mixer_reads_memory(m) && !dec)
        return gf_fail("%s: layer %d: mixer \"%s\" reads an encoder's output; only an encoder-decoder's decoder layers "
                       "(its second stack) have one\nHINT: another mixer here, or source_vocab and a decoder stack",
                       src, l, m->name);
    if (!(dec && gf_mixer_reads_memory(m)) && gf_block_kind_has_cross(kind) != dec) /* else: either kind */
        return gf_fail("%s: layer %d: block kind \"%s\" %s; %s\nHINT: leave \"block\" out for the default kind", src, l,
                       kind->name, dec ? "has no cross op" : "attends to an encoder (a cross op)",
                       dec ? "an encoder-decoder's decoder layers attend to its encoder (decoder-pre, decoder-post, "
                             "decoder-post-gated)"
                           : "only an encoder-decoder's decoder layers have one");
    const gf_direction dir = gf_stack_direction(c, gf_layer_stack(c, l));
    const unsigned want = dir == GF_BIDIRECTIONAL ? GF_MIX_BIDIRECTIONAL : GF_MIX_CAUSAL;
    if (!((m->directions ? m->directions : GF_MIX_CAUSAL) & want) && dir != GF_BIDIRECTIONAL)
        return gf_fail("%s: layer %d: mixer \"%s\" cannot run causally: it is bidirectional only (each of its "
                       "outputs mixes in later positions, so in a causal model the past would see the future)\n"
                       "HINT: use it in a bidirectional model or stack (direction bidirectional, e.g. a "
                       "classifier), or another mixer in this layer", src, l, m->name);
    if (!((m->directions ? m->directions : GF_MIX_CAUSAL) & want))
        return gf_fail("%s: layer %d: mixer \"%s\" cannot run bidirectionally", src, l, m->name);
    return m->check ? m->check(c, l, src) : 0;
}

/* The head's tensors (cls_head.weight, ...) must not share their first name part with a stack. */
static int head_names_free(const gf_config *c, const gf_head_ops *h, const char *src) {
    gf_param_spec specs[GF_HEAD_MAX_PARAMS];
    const int n = h->param_specs(c, specs);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < c->n_stacks && k < GF_MAX_STACKS; k++) {
            const size_t len = strlen(c->stacks[k].name);
            if (!strncmp(specs[i].name, c->stacks[k].name, len) && specs[i].name[len] == '.')
                return gf_fail("%s: \"stacks\"[%d] is named \"%s\", as the %s head's tensor %s begins: its tensors would be "
                               "taken for the head's\nHINT: name it otherwise, e.g. \"head\"", src, k,
                               c->stacks[k].name, h->name, specs[i].name);
        }
    return 0;
}

static int validate_head(const gf_config *c, const char *src) {
    const gf_head_ops *h = gf_config_head(c);
    if (!h) return gf_fail("%s: unknown head kind \"%.*s\"", src, GF_MIXER_NAME_MAX, c->head_kind);
    for (int i = 0; i < h->n_keys; i++) {
        char shown[96];
        snprintf(shown, sizeof shown, "head.%s", h->keys[i].name);
        if (check_value(&h->keys[i], c->head.bytes, src, shown)) return -1;
    }
    bool causal = true; /* every stack, or an encoder-decoder's decoder (its encoder reads the source) */
    for (int k = c->source_vocab > 0; k <= c->n_stacks && k <= GF_MAX_STACKS; k++)
        causal &= gf_stack_direction(c, k) == GF_CAUSAL;
    if (c->label_smoothing > 0.0f && !(h->version >= 2 && h->smooths_labels))
        return gf_fail("%s: label_smoothing is %g, but the %s head's loss does not smooth labels (its table lacks "
                       "smooths_labels)\nHINT: label_smoothing 0 for this head", src, (double)c->label_smoothing, h->name);
    if (h->causal_only && !causal)
        return gf_fail("%s: task %s needs a causal model: with direction bidirectional position t would see the "
                       "token it predicts", src, h->name);
    return (h->check && h->check(c, src)) || head_names_free(c, h, src) ? -1 : 0;
}

int gf_config_validate(const gf_config *c, const char *source) {
    const char *src = source ? source : "config";
    for (int i = 0; i < N_KEYS; i++)
        if (check_value(&KEYS[i], c, src, KEYS[i].name)) return -1;
    if (c->pos == GF_POS_LEARNED && c->max_len < 1)
        return gf_fail("%s: max_len is %lld; learned positions need max_len >= 1 (the table's rows)\nHINT: set "
                       "max_len, or use pos \"sinusoidal\" or \"none\"", src, (long long)c->max_len);
    if (c->pos == GF_POS_SINUSOIDAL_2D && (c->pos_grid < 1 || c->d_model % 4))
        return gf_fail("%s: pos \"sinusoidal-2d\" with pos_grid %lld and d_model %lld; it needs pos_grid >= 1 (the "
                       "grid's columns) and d_model divisible by 4 (sines and cosines for the row and the column)\n"
                       "HINT: set pos_grid (an image of 28 x 28 in patches of 4: 7)", src, (long long)c->pos_grid,
                       (long long)c->d_model);
    if (c->input == GF_INPUT_TOKENS && c->vocab_size < 1)
        return gf_fail("%s: vocab_size is %lld; a model with token inputs needs vocab_size >= 1 (missing key "
                       "\"vocab_size\"?)", src, (long long)c->vocab_size);
    if (c->input == GF_INPUT_VECTORS && c->d_input < 1)
        return gf_fail("%s: input is \"vectors\" but d_input is %lld; give the vectors' size", src,
                       (long long)c->d_input);
    if (c->input == GF_INPUT_VECTORS && c->segments > 0)
        return gf_fail("%s: segments is %lld but input is \"vectors\"; token types are added to token embeddings",
                       src, (long long)c->segments);
    if (gf_stacks_validate(c, src) || gf_encdec_validate(c, src) || validate_head(c, src)) return -1;
    for (int l = 0; l < gf_config_total_layers(c); l++)
        if (validate_layer(c, l, src)) return -1;
    return 0;
}

/* ---- printing ------------------------------------------------------------------------------------------ */

cJSON *gf_layer_to_cjson(const gf_config *c, int l) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "mixer", c->layers[l].mixer);
    if (c->layers[l].block[0]) cJSON_AddStringToObject(e, "block", c->layers[l].block); /* only when chosen */
    const gf_mixer_ops *m = gf_layer_mixer(c, l);
    for (int i = 0; m && i < m->n_keys; i++) gf_key_to_json(&m->keys[i], c->layers[l].params.bytes, e);
    return e;
}

cJSON *gf_config_to_cjson(const gf_config *c) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "format", GF_CONFIG_FORMAT);
    const gf_head_ops *h = gf_config_head(c);
    cJSON *ho = cJSON_AddObjectToObject(o, "head");
    cJSON_AddStringToObject(ho, "kind", h ? h->name : c->head_kind);
    for (int i = 0; h && i < h->n_keys; i++) gf_key_to_json(&h->keys[i], c->head.bytes, ho);
    for (int i = 0; i < N_KEYS; i++)
        if (key_shown(&KEYS[i], c)) gf_key_to_json(&KEYS[i], c, o);
    cJSON *layers = cJSON_AddArrayToObject(o, "layers");
    for (int l = 0; l < c->n_layer; l++) cJSON_AddItemToArray(layers, gf_layer_to_cjson(c, l));
    gf_stacks_to_cjson(c, o);
    return o;
}

char *gf_config_to_json(const gf_config *c, bool pretty) {
    cJSON *o = gf_config_to_cjson(c);
    char *s = pretty ? cJSON_Print(o) : cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* ---- files and sizes -------------------------------------------------------------------------------------- */

int gf_config_load(const char *path, gf_config *c) {
    FILE *f = gf_open_regular(path, NULL);
    if (!f) {
        gf_fail_context(" (the config file)");
        if (access(path, F_OK) != 0) return gf_fail("cannot open config file %s: %s", gf_show_name(path), strerror(errno));
        return -1;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 8192;
            if (cap > (16u << 20)) {
                fclose(f);
                free(buf);
                return gf_fail("config file %s is larger than 16 MiB; a config is a small JSON object", gf_show_name(path));
            }
            char *nb = realloc(buf, cap);
            if (!nb) {
                fclose(f);
                free(buf);
                return gf_fail("out of memory reading %s", gf_show_name(path));
            }
            buf = nb;
        }
        size_t n = fread(buf + len, 1, 4096, f);
        len += n;
        if (n < 4096) break;
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        return gf_fail("error reading config file %s", gf_show_name(path));
    }
    buf[len] = '\0';
    if (strlen(buf) != len) {
        free(buf);
        return gf_fail("%s: contains a NUL byte; expected a JSON text file", gf_show_name(path));
    }
    char shown[1024]; /* its messages name the file as shown (gf_escape_name) */
    if (gf_escape_name(shown, sizeof shown - 3, path) >= sizeof shown - 3) strcat(shown, "...");
    int rc = gf_config_from_json(buf, shown, c);
    free(buf);
    return rc;
}

/* The model's plan (model/params.c) declares every tensor: counting them here would be a second copy. */
static int count_tensor(void *ctx, const char *name, int ndim, const int64_t *shape) {
    (void)name;
    *(int64_t *)ctx += shape[0] * (ndim == 2 ? shape[1] : 1);
    return 0;
}

int64_t gf_config_num_params(const gf_config *c) {
    int64_t n = 0;
    return gf_model_plan(c, count_tensor, &n) ? -1 : n;
}
