/* The layers of a config: "layers" entries, "mixers" lists, a base's layers, and mixer keys given at the
 * top level for every layer (config.c describes the forms). */
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "heads/head.h"
#include "model/block.h"
#include "config/config_internal.h"

int gf_list_fits_layers(const cJSON *arr, int64_t n_layer, const char *src, const char *key) {
    int n = cJSON_GetArraySize(arr);
    if (n == n_layer) return 0;
    char *first = cJSON_PrintUnformatted(cJSON_GetArrayItem(arr, 0));
    int uniform = first != NULL;
    for (int i = 1; i < n && uniform; i++) {
        char *s = cJSON_PrintUnformatted(cJSON_GetArrayItem(arr, i));
        uniform = s && !strcmp(s, first);
        cJSON_free(s);
    }
    cJSON_free(first);
    if (uniform && n >= 1) return 0;
    return gf_fail("%s: \"%s\" has %d entries but n_layer is %lld; give one entry per layer, or one entry "
                   "for all layers", src, key, n, (long long)n_layer);
}

/* The entry of a per-layer list for layer l (the only one when the list has one, or all are alike). */
static const cJSON *entry_for(const cJSON *arr, int l, int64_t n_layer) {
    return cJSON_GetArrayItem(arr, cJSON_GetArraySize(arr) == n_layer ? l : 0);
}

static void mixer_list(char *buf, size_t n) {
    buf[0] = '\0';
    for (int i = 0; i < gf_mixer_count(); i++)
        snprintf(buf + strlen(buf), n - strlen(buf), "%s\"%s\"", i ? ", " : "", gf_mixer_at(i)->name);
}

int gf_config_layer_mixer(gf_config *cfg, int l, const char *name, const gf_config *tmpl, const char *src,
                          const char *shown) {
    const gf_mixer_ops *m = gf_mixer_find(name);
    if (!m) {
        char names[512];
        mixer_list(names, sizeof names);
        return gf_fail("%s: %s is \"%s\"; it must be one of the mixers %s", src, shown, name, names);
    }
    if (!strcmp(cfg->layers[l].mixer, m->name)) return 0; /* the same mixer keeps its settings */
    for (int k = 0; tmpl && k < tmpl->n_layer; k++)
        if (!strcmp(tmpl->layers[k].mixer, m->name)) {
            cfg->layers[l] = tmpl->layers[k];
            return 0;
        }
    gf_layer_set_mixer(cfg, l, m);
    return 0;
}

/* A "layers" entry's "block": a kind's name (model/block.h's table), for layer l. */
static int layer_block(gf_config *cfg, int l, int idx, const cJSON *v, const char *src) {
    if (!cJSON_IsString(v) || !gf_block_kind_find(v->valuestring)) {
        char names[512];
        gf_block_kind_names(names, sizeof names);
        return gf_fail("%s: \"layers\"[%d].block must be a block kind's name, one of %s (or no \"block\": the one of "
                       "the norm)", src, idx, names);
    }
    snprintf(cfg->layers[l].block, sizeof cfg->layers[l].block, "%s", v->valuestring);
    return 0;
}

/* One "layers" entry: a mixer name, or {"mixer": NAME, "block": KIND, KEY: VALUE, ...}. Keys not given keep the base's
 * settings for that mixer (its same layer, else its first layer with that mixer), else the mixer's
 * defaults. */
static int parse_entry(gf_config *cfg, int l, int idx, const cJSON *e, const gf_config *base, const char *src) {
    char shown[96];
    snprintf(shown, sizeof shown, "\"layers\"[%d].mixer", idx);
    const cJSON *name = cJSON_IsString(e) ? e : cJSON_GetObjectItemCaseSensitive(e, "mixer");
    if (!cJSON_IsString(name))
        return gf_fail("%s: \"layers\"[%d] must be a mixer name or an object with \"mixer\": NAME and that "
                       "mixer's keys, e.g. {\"mixer\": \"grassmann\", \"rank\": 32}", src, idx);
    memset(&cfg->layers[l], 0, sizeof cfg->layers[l]);
    if (base && l < base->n_layer) cfg->layers[l] = base->layers[l];
    if (gf_config_layer_mixer(cfg, l, name->valuestring, base, src, shown)) return -1;
    const gf_mixer_ops *m = gf_layer_mixer(cfg, l);
    cfg->layers[l].block[0] = '\0';
    for (const cJSON *it = cJSON_IsObject(e) ? e->child : NULL; it; it = it->next) {
        if (!strcmp(it->string, "mixer")) continue;
        if (!strcmp(it->string, "block")) {
            if (layer_block(cfg, l, idx, it, src)) return -1;
            continue;
        }
        const gf_cfg_key *k = gf_key_find(m->keys, m->n_keys, it->string);
        if (!k) {
            char keys[512];
            gf_key_names(m->keys, m->n_keys, keys, sizeof keys);
            return gf_fail("%s: \"layers\"[%d]: mixer \"%s\" has no key \"%s\"; its keys are: %s", src, idx, m->name,
                           it->string, m->n_keys ? keys : "(none)");
        }
        snprintf(shown, sizeof shown, "layers[%d].%s", idx, it->string);
        if (gf_key_parse(k, it, cfg->layers[l].params.bytes, src, shown)) return -1;
    }
    return 0;
}

static int parse_mixers(const cJSON *arr, const gf_config *base, const char *src, gf_config *cfg) {
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) < 1)
        return gf_fail("%s: \"mixers\" must be a non-empty list of mixer names, e.g. [\"grassmann\"]", src);
    if (gf_list_fits_layers(arr, cfg->n_layer, src, "mixers")) return -1;
    for (int l = 0; l < cfg->n_layer; l++) {
        const cJSON *it = entry_for(arr, l, cfg->n_layer);
        char shown[64];
        snprintf(shown, sizeof shown, "\"mixers\"[%d]", cJSON_GetArraySize(arr) == cfg->n_layer ? l : 0);
        memset(&cfg->layers[l], 0, sizeof cfg->layers[l]);
        if (base && l < base->n_layer) cfg->layers[l] = base->layers[l];
        if (!cJSON_IsString(it)) return gf_fail("%s: %s must be a mixer name", src, shown);
        if (gf_config_layer_mixer(cfg, l, it->valuestring, base, src, shown)) return -1;
    }
    return 0;
}

/* No "layers" or "mixers": the base's layers, for a changed n_layer only if they are all alike. */
static int base_layers(const gf_config *base, const char *src, gf_config *cfg) {
    bool uniform = true;
    for (int l = 1; l < base->n_layer; l++)
        uniform &= !memcmp(&base->layers[l], &base->layers[0], sizeof base->layers[0]);
    for (int l = 0; l < cfg->n_layer; l++) {
        if (l >= base->n_layer && !uniform)
            return gf_fail("%s: n_layer %lld exceeds the %lld layers of the base preset, whose layers differ; give "
                           "\"layers\" (or \"mixers\") too", src, (long long)cfg->n_layer, (long long)base->n_layer);
        cfg->layers[l] = base->layers[l < base->n_layer ? l : 0];
    }
    for (int l = (int)cfg->n_layer; l < GF_MAX_LAYERS; l++) memset(&cfg->layers[l], 0, sizeof cfg->layers[l]);
    return 0;
}

int gf_config_parse_layers(const cJSON *root, const gf_config *base, const char *src, gf_config *cfg) {
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
    const cJSON *mixers = cJSON_GetObjectItemCaseSensitive(root, "mixers");
    if (layers && mixers) return gf_fail("%s: give either \"layers\" or \"mixers\", not both", src);
    if (mixers) return parse_mixers(mixers, base, src, cfg);
    if (!layers) return base ? base_layers(base, src, cfg) : 0;
    if (!cJSON_IsArray(layers) || cJSON_GetArraySize(layers) < 1)
        return gf_fail("%s: \"layers\" must be a non-empty list with one entry per layer (or one for all)", src);
    if (gf_list_fits_layers(layers, cfg->n_layer, src, "layers")) return -1;
    const int n = cJSON_GetArraySize(layers);
    for (int l = 0; l < cfg->n_layer; l++)
        if (parse_entry(cfg, l, n == cfg->n_layer ? l : 0, entry_for(layers, l, cfg->n_layer), base, src)) return -1;
    for (int l = (int)cfg->n_layer; l < GF_MAX_LAYERS; l++) memset(&cfg->layers[l], 0, sizeof cfg->layers[l]);
    return 0;
}

int gf_config_broadcast(gf_config *cfg, const cJSON *it, const cJSON *layers, bool lenient, const char *src) {
    const char *key = it->string;
    for (int i = 0; i < cJSON_GetArraySize(layers); i++)
        if (cJSON_IsObject(cJSON_GetArrayItem(layers, i)) &&
            cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(layers, i), key))
            return gf_fail("%s: \"%s\" is given both at the top level and in \"layers\"[%d]; give it in one place",
                           src, key, i);
    const gf_mixer_ops *owner = gf_mixer_with_key(key);
    const gf_cfg_key *spec = gf_key_find(owner->keys, owner->n_keys, key);
    const bool per_layer = cJSON_IsArray(it) && (spec->type != GF_KEY_INTS || cJSON_IsArray(it->child));
    if (per_layer && gf_list_fits_layers(it, cfg->n_layer, src, key)) return -1;
    const int n = per_layer ? cJSON_GetArraySize(it) : 0;
    int applied = 0;
    for (int l = 0; l < cfg->n_layer; l++) {
        const gf_mixer_ops *m = gf_layer_mixer(cfg, l);
        const gf_cfg_key *k = m ? gf_key_find(m->keys, m->n_keys, key) : NULL;
        if (!k) continue;
        char shown[96];
        if (per_layer) snprintf(shown, sizeof shown, "%s[%d]", key, n == cfg->n_layer ? l : 0);
        else snprintf(shown, sizeof shown, "%s", key);
        if (gf_key_parse(k, per_layer ? entry_for(it, l, cfg->n_layer) : it, cfg->layers[l].params.bytes, src, shown))
            return -1;
        applied++;
    }
    if (!applied && !lenient)
        return gf_fail("%s: no layer of this model has a mixer with key \"%s\" (mixer \"%s\" has it)", src, key,
                       owner->name);
    return 0;
}

static void head_list(char *buf, size_t n) {
    buf[0] = '\0';
    for (int i = 0; i < gf_head_count(); i++)
        snprintf(buf + strlen(buf), n - strlen(buf), "%s\"%s\"", i ? ", " : "", gf_head_at(i)->name);
}

/* The head's kind: "head": {"kind": ...} (format 3), or "task" (its name in formats 1 and 2). */
static int head_kind(const cJSON *root, bool fresh, const char *src, const gf_config *cfg, const gf_head_ops **h) {
    const cJSON *task = cJSON_GetObjectItemCaseSensitive(root, "task"), *head = cJSON_GetObjectItemCaseSensitive(root, "head");
    const cJSON *kind = cJSON_IsObject(head) ? cJSON_GetObjectItemCaseSensitive(head, "kind") : NULL;
    if (task && kind)
        return gf_fail("%s: the head's kind is given twice, as \"task\" and as \"head\": {\"kind\"}\nHINT: give "
                       "head.kind only (\"task\" is its name in config formats 1 and 2)", src);
    const cJSON *k = kind ? kind : task;
    const char *name = k ? (cJSON_IsString(k) ? k->valuestring : "") : fresh ? "next_token" : cfg->head_kind;
    *h = gf_head_find(name);
    if (*h) return 0;
    char names[256];
    head_list(names, sizeof names);
    return gf_fail("%s: \"%s\" must be one of %s", src, kind ? "head.kind" : "task", names);
}

int gf_config_parse_head(const cJSON *root, bool fresh, const char *src, gf_config *cfg) {
    const cJSON *head = cJSON_GetObjectItemCaseSensitive(root, "head");
    const gf_head_ops *h;
    if (head_kind(root, fresh, src, cfg, &h)) return -1;
    if (strcmp(cfg->head_kind, h->name) != 0) { /* a new head: its defaults */
        memset(cfg->head.bytes, 0, sizeof cfg->head.bytes);
        snprintf(cfg->head_kind, sizeof cfg->head_kind, "%s", h->name);
        gf_keys_default(h->keys, h->n_keys, cfg->head.bytes);
        if (!cJSON_GetObjectItemCaseSensitive(root, "direction")) cfg->direction = h->direction;
    }
    if (head && !cJSON_IsObject(head))
        return gf_fail("%s: \"head\" must be an object of the %s head's keys", src, h->name);
    for (const cJSON *it = head ? head->child : NULL; it; it = it->next) {
        if (!strcmp(it->string, "kind")) continue;
        const gf_cfg_key *k = gf_key_find(h->keys, h->n_keys, it->string);
        char shown[96];
        snprintf(shown, sizeof shown, "head.%s", it->string);
        if (!k) {
            char keys[512];
            gf_key_names(h->keys, h->n_keys, keys, sizeof keys);
            return gf_fail("%s: the %s head has no key \"%s\"; its keys are: %s", src, h->name, it->string,
                           h->n_keys ? keys : "(none)");
        }
        if (gf_key_parse(k, it, cfg->head.bytes, src, shown)) return -1;
    }
    return 0;
}

int gf_config_parse_stack_layers(const cJSON *e, int first, int n, const char *src, gf_config *cfg) {
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(e, "layers"), *mixers = cJSON_GetObjectItemCaseSensitive(e, "mixers");
    const cJSON *arr = layers ? layers : mixers;
    const char *key = layers ? "layers" : "mixers";
    if (layers && mixers) return gf_fail("%s: a stack gives either \"layers\" or \"mixers\", not both", src);
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) < 1)
        return gf_fail("%s: a stack needs \"layers\": one entry per layer (or one for all)", src);
    if (gf_list_fits_layers(arr, n, src, key)) return -1;
    for (int j = 0; j < n; j++) {
        const int l = first + j, idx = cJSON_GetArraySize(arr) == n ? j : 0;
        const cJSON *it = entry_for(arr, j, n);
        if (layers) {
            if (parse_entry(cfg, l, idx, it, NULL, src)) return -1;
            continue;
        }
        char shown[64];
        snprintf(shown, sizeof shown, "\"mixers\"[%d]", idx);
        memset(&cfg->layers[l], 0, sizeof cfg->layers[l]);
        if (!cJSON_IsString(it)) return gf_fail("%s: %s must be a mixer name", src, shown);
        if (gf_config_layer_mixer(cfg, l, it->valuestring, NULL, src, shown)) return -1;
    }
    return 0;
}
