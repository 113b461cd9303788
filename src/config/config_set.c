/* --set KEY=VALUE and gf_config_get: the config's keys by name, as the command line and programs use them. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "config/config_internal.h"

/* "1,2,4" -> [1,2,4]; "g,a" -> ["g","a"] (words). NULL if s is not such a list. */
static cJSON *bare_list(const char *s, bool words) {
    cJSON *arr = cJSON_CreateArray();
    const char *p = s;
    while (*p) {
        const char *q = strchr(p, ',');
        size_t n = q ? (size_t)(q - p) : strlen(p);
        char tok[64];
        if (n == 0 || n >= sizeof tok) goto bad;
        memcpy(tok, p, n);
        tok[n] = '\0';
        if (words) {
            for (char *t = tok; *t; t++) *t = (char)tolower((unsigned char)*t);
            cJSON_AddItemToArray(arr, cJSON_CreateString(tok));
        } else {
            char *e;
            long v = strtol(tok, &e, 10);
            if (*e) goto bad;
            cJSON_AddItemToArray(arr, cJSON_CreateNumber((double)v));
        }
        p += n + (q ? 1 : 0);
        if (q && !*p) goto bad;
    }
    return arr;
bad:
    cJSON_Delete(arr);
    return NULL;
}

static int layer_key(const char *key, char *sub, size_t n);

/* The value text as JSON: JSON if it parses, else a bare comma list (list keys) or a bare word. */
static cJSON *read_value(const char *full_key, const char *val) {
    char sub[64];
    const char *key = layer_key(full_key, sub, sizeof sub) >= 0 ? sub : full_key; /* layers.N.KEY: KEY's type */
    const gf_mixer_ops *owner = gf_mixer_with_key(key);
    const gf_cfg_key *k = owner ? gf_key_find(owner->keys, owner->n_keys, key) : NULL;
    bool ints = k && k->type == GF_KEY_INTS;
    cJSON *v = cJSON_ParseWithOpts(val, NULL, 1);
    if (!v && (ints || !strcmp(key, "mixers"))) v = bare_list(val, !ints);
    else if (!v) v = cJSON_CreateString(val); /* bare word: post, tanh, ... */
    if (v && ints && cJSON_IsNumber(v)) { /* offsets=4: that one offset */
        cJSON *a = cJSON_CreateArray();
        cJSON_AddItemToArray(a, v);
        v = a;
    }
    if (v && !strcmp(key, "mixers") && cJSON_IsString(v)) { /* mixers=attention: every layer */
        cJSON *a = cJSON_CreateArray();
        cJSON_AddItemToArray(a, v);
        v = a;
    }
    return v;
}

/* "layers.N.KEY" or "layers[N].KEY": N and KEY; -1 if key is not of that form. */
static int layer_key(const char *key, char *sub, size_t n) {
    int l, used = 0;
    if (sscanf(key, "layers.%d.%n", &l, &used) == 1 && used) {
    } else if (sscanf(key, "layers[%d].%n", &l, &used) == 1 && used) {
    } else {
        return -1;
    }
    snprintf(sub, n, "%s", key + used);
    return l;
}

/* A mixer key given once at the top reaches the first stack's layers (gf_config_broadcast); put it also in
 * the entry of each further stack's layer whose mixer has it, so that it reaches every layer of every stack.
 * *first: some layer of the first stack has it; *further: how many further layers were set. */
static int stack_layers_value(cJSON *o, const gf_config *c, const char *key, const cJSON *v, const char *src,
                              bool *first, int *further) {
    const gf_mixer_ops *owner = gf_mixer_with_key(key);
    const gf_cfg_key *spec = gf_key_find(owner->keys, owner->n_keys, key);
    const bool per_layer = cJSON_IsArray(v) && (spec->type != GF_KEY_INTS || cJSON_IsArray(v->child));
    const cJSON *one = per_layer && cJSON_GetArraySize(v) == 1 ? v->child : v;
    cJSON *stacks = cJSON_GetObjectItemCaseSensitive(o, "stacks");
    *first = false;
    *further = 0;
    for (int l = 0; l < gf_config_total_layers(c); l++) {
        const gf_mixer_ops *m = gf_layer_mixer(c, l);
        const int k = gf_layer_stack(c, l);
        if (!m || !gf_key_find(m->keys, m->n_keys, key)) continue;
        if (k == 0) {
            *first = true;
            continue;
        }
        if (per_layer && one == v)
            return gf_fail("%s: a list gives one value per layer of the first stack, and this model has further stacks "
                           "(\"%s\"); give one value (every layer of every stack), or set each stack's layers in the "
                           "config file", src, c->stacks[k - 1].name);
        cJSON *layers = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(stacks, k - 1), "layers");
        cJSON *e = cJSON_GetArrayItem(layers, l - gf_stack_first_layer(c, k)), *dup = cJSON_Duplicate(one, 1);
        if (!cJSON_IsObject(e) || !dup) {
            cJSON_Delete(dup);
            return gf_fail("%s: out of memory", src);
        }
        if (cJSON_GetObjectItemCaseSensitive(e, key)) cJSON_ReplaceItemInObjectCaseSensitive(e, key, dup);
        else cJSON_AddItemToObject(e, key, dup);
        ++*further;
    }
    return 0;
}

/* "block" (v, owned) into every "layers" entry of the first stack. */
static int place_block(cJSON *o, cJSON *v, const char *src) {
    cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(o, "layers")) {
        cJSON *dup = cJSON_Duplicate(v, 1);
        if (!cJSON_IsObject(e) || !dup) {
            cJSON_Delete(dup);
            cJSON_Delete(v);
            return gf_fail("%s: out of memory", src);
        }
        if (cJSON_GetObjectItemCaseSensitive(e, "block")) cJSON_ReplaceItemInObjectCaseSensitive(e, "block", dup);
        else cJSON_AddItemToObject(e, "block", dup);
    }
    cJSON_Delete(v);
    return 0;
}

/* Put v (owned) where key says in the JSON form o of cfg; mixers are applied to tmp directly. */
static int place_value(cJSON *o, gf_config *tmp, const char *key, cJSON *v, const char *src) {
    char sub[64];
    int l = layer_key(key, sub, sizeof sub);
    if (l >= 0) {
        cJSON *layers = cJSON_GetObjectItemCaseSensitive(o, "layers"), *e = cJSON_GetArrayItem(layers, l);
        if (l >= tmp->n_layer || !e) {
            cJSON_Delete(v);
            return gf_fail("%s: there is no layer %d (n_layer is %lld; layers count from 0)", src, l,
                           (long long)tmp->n_layer);
        }
        if (!strcmp(sub, "mixer")) { /* a new mixer: its defaults */
            cJSON *fresh = cJSON_CreateObject();
            cJSON_AddItemToObject(fresh, "mixer", v);
            cJSON_ReplaceItemInArray(layers, l, fresh);
        } else if (cJSON_GetObjectItemCaseSensitive(e, sub)) {
            cJSON_ReplaceItemInObjectCaseSensitive(e, sub, v);
        } else {
            cJSON_AddItemToObject(e, sub, v);
        }
        return 0;
    }
    if (!strcmp(key, "task") || !strcmp(key, "head.kind")) { /* a new head: its defaults and its direction, unless
                                                             * set after ("task": the kind's old name) */
        cJSON_DeleteItemFromObjectCaseSensitive(o, "direction");
        cJSON *h = cJSON_CreateObject();
        cJSON_AddItemToObject(h, "kind", v);
        cJSON_ReplaceItemInObjectCaseSensitive(o, "head", h);
        return 0;
    }
    if (!strncmp(key, "head.", 5)) {
        cJSON *h = cJSON_GetObjectItemCaseSensitive(o, "head");
        if (!h) h = cJSON_AddObjectToObject(o, "head");
        if (cJSON_GetObjectItemCaseSensitive(h, key + 5)) cJSON_ReplaceItemInObjectCaseSensitive(h, key + 5, v);
        else cJSON_AddItemToObject(h, key + 5, v);
        return 0;
    }
    if (!strcmp(key, "block")) return place_block(o, v, src);
    if (!strcmp(key, "mixers")) {
        int rc = !cJSON_IsArray(v) || cJSON_GetArraySize(v) < 1
                     ? gf_fail("%s: \"mixers\" must be a list of mixer names, e.g. g,g,a", src)
                     : gf_list_fits_layers(v, tmp->n_layer, src, "mixers");
        const gf_config before = *tmp;
        for (int i = 0; !rc && i < tmp->n_layer; i++) {
            const cJSON *it = cJSON_GetArrayItem(v, cJSON_GetArraySize(v) == tmp->n_layer ? i : 0);
            char shown[64];
            snprintf(shown, sizeof shown, "\"mixers\"[%d]", i);
            rc = !cJSON_IsString(it) ? gf_fail("%s: %s must be a mixer name", src, shown)
                                     : gf_config_layer_mixer(tmp, i, it->valuestring, &before, src, shown);
        }
        cJSON_Delete(v);
        if (rc) return rc;
        cJSON_ReplaceItemInObjectCaseSensitive(o, "layers", cJSON_CreateArray());
        cJSON *layers = cJSON_GetObjectItemCaseSensitive(o, "layers");
        for (int i = 0; i < tmp->n_layer; i++) cJSON_AddItemToArray(layers, gf_layer_to_cjson(tmp, i));
        return 0;
    }
    int n_keys;
    const gf_cfg_key *keys = gf_config_keys(&n_keys);
    if (cJSON_GetObjectItemCaseSensitive(o, key)) {
        cJSON_ReplaceItemInObjectCaseSensitive(o, key, v);
    } else if (gf_key_find(keys, n_keys, key)) { /* a model key the JSON form leaves out at 0 (source_vocab) */
        cJSON_AddItemToObject(o, key, v);
    } else { /* a mixer key: set at the top for every layer of the first stack that has it, so taken out of the
              * entries, and in those of the further stacks' layers */
        bool first;
        int further;
        if (stack_layers_value(o, tmp, key, v, src, &first, &further)) {
            cJSON_Delete(v);
            return -1;
        }
        cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(o, "layers")) cJSON_DeleteItemFromObjectCaseSensitive(e, key);
        if (first || !further) cJSON_AddItemToObject(o, key, v); /* none at all: the usual error, from the top */
        else cJSON_Delete(v);
    }
    return 0;
}

static int known_key(const char *key, const char *kv) {
    int n;
    const gf_cfg_key *keys = gf_config_keys(&n);
    char sub[64];
    if (gf_key_find(keys, n, key) || !strcmp(key, "mixers") || !strcmp(key, "block") || !strcmp(key, "task") ||
        gf_mixer_with_key(key) || !strncmp(key, "head.", 5))
        return 0;
    if (layer_key(key, sub, sizeof sub) >= 0 && (gf_mixer_with_key(sub) || !strcmp(sub, "mixer") || !strcmp(sub, "block")))
        return 0;
    char list[2048];
    gf_config_key_list(list, sizeof list);
    return gf_fail("--set %s: unknown key \"%s\"; the keys are: head.kind, head.KEY, block, %s; one layer's: "
                   "layers.N.KEY, layers.N.mixer, layers.N.block", kv, key, list);
}

int gf_config_set(gf_config *c, const char *kv) {
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv)
        return gf_fail("--set %s: expected KEY=VALUE, for example --set norm=post or --set offsets=1,2,4", kv);
    char key[64], src[160];
    size_t kn = (size_t)(eq - kv);
    if (kn >= sizeof key) return gf_fail("--set %s: key too long", kv);
    memcpy(key, kv, kn);
    key[kn] = '\0';
    snprintf(src, sizeof src, "--set %.100s", kv);
    if (known_key(key, kv)) return -1;
    cJSON *v = read_value(key, eq + 1);
    if (!v) return gf_fail("--set %s: cannot read the value \"%s\"", kv, eq + 1);
    gf_config *tmp = malloc(sizeof *tmp);
    cJSON *o = tmp ? gf_config_to_cjson(c) : NULL;
    int rc = o ? 0 : gf_fail("out of memory in --set");
    if (tmp) *tmp = *c;
    if (!rc) rc = place_value(o, tmp, key, v, src);
    else cJSON_Delete(v);
    char *json = rc ? NULL : cJSON_PrintUnformatted(o);
    if (!rc) rc = json ? gf_config_from_json(json, src, tmp) : gf_fail("out of memory in --set");
    if (!rc) *c = *tmp;
    cJSON_free(json);
    cJSON_Delete(o);
    free(tmp);
    return rc;
}

/* A mixer key across the layers of o: its value if every layer that has it agrees, else the per-layer list
 * (null where a layer's mixer lacks it); NULL if no layer has it. */
static cJSON *mixer_key_value(const cJSON *o, int64_t n_layer, const char *key) {
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(o, "layers"), *first = NULL;
    cJSON *per = cJSON_CreateArray();
    bool same = true;
    for (int i = 0; i < n_layer; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(layers, i), key);
        cJSON_AddItemToArray(per, v ? cJSON_Duplicate(v, 1) : cJSON_CreateNull());
        if (v && !first) first = v;
        else if (v) same &= cJSON_Compare(v, first, 1);
    }
    cJSON *got = !first ? NULL : same ? cJSON_Duplicate(first, 1) : cJSON_Duplicate(per, 1);
    cJSON_Delete(per);
    return got;
}

char *gf_config_get(const gf_config *c, const char *key) {
    cJSON *o = gf_config_to_cjson(c), *got = NULL;
    char sub[64];
    int l = layer_key(key, sub, sizeof sub);
    if (l >= 0 && l < c->n_layer) {
        const cJSON *e = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "layers"), l);
        got = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(e, sub), 1);
    } else if (l < 0 && !strcmp(key, "task")) { /* the head's kind, by its name in formats 1 and 2 */
        got = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "head"), "kind"), 1);
    } else if (l < 0 && !strncmp(key, "head.", 5)) { /* the head's keys, as gf_config_set writes them */
        got = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "head"), key + 5), 1);
    } else if (l < 0 && cJSON_GetObjectItemCaseSensitive(o, key)) {
        got = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(o, key), 1);
    } else if (l < 0) {
        got = mixer_key_value(o, c->n_layer, key);
    }
    cJSON_Delete(o);
    if (!got) {
        gf_fail("no config key \"%s\" in this model", key);
        return NULL;
    }
    char *s = cJSON_PrintUnformatted(got);
    cJSON_Delete(got);
    return s;
}

/* ---- the keys two configs differ in ---------------------------------------------------------------------- */

typedef struct {
    char *buf;
    size_t cap, len;
    int n;
    bool full;
} diff_out;

/* v as JSON text for a message, at most 48 bytes ("..." after), into buf; "(none)" when absent. */
static const char *diff_value(const cJSON *v, char buf[64]) {
    char *s = v ? cJSON_PrintUnformatted(v) : NULL;
    if (!s) snprintf(buf, 64, "(none)");
    else snprintf(buf, 64, "%.48s%s", s, strlen(s) > 48 ? "..." : "");
    free(s);
    return buf;
}

/* One difference more: counted, and shown if it fits whole in the buffer (else "..." once, if that fits). */
static void diff_note(diff_out *o, const char *key, const cJSON *a, const cJSON *b) {
    char va[64], vb[64], one[512];
    const int w = snprintf(one, sizeof one, "%s%s %s vs %s", o->n ? ", " : "", key, diff_value(a, va), diff_value(b, vb));
    o->n++;
    if (o->full || w < 0 || o->len + (size_t)w + 5 >= o->cap) { /* room for ", ..." after it */
        if (!o->full && o->len + 5 < o->cap)
            o->len += (size_t)snprintf(o->buf + o->len, o->cap - o->len, "%s...", o->len ? ", " : "");
        o->full = true;
        return;
    }
    memcpy(o->buf + o->len, one, (size_t)w + 1);
    o->len += (size_t)w;
}

/* Every leaf where a and b (either may be NULL) differ, named as gf_config_set names keys: "vocab_size",
 * "head.n_classes", "layers.1.rank". */
static void diff_walk(const cJSON *a, const cJSON *b, char *key, size_t cap, diff_out *o) {
    const size_t at = strlen(key);
    const bool objects = cJSON_IsObject(a) && cJSON_IsObject(b);
    const bool rows = cJSON_IsArray(a) && cJSON_IsArray(b) && cJSON_GetArraySize(a) == cJSON_GetArraySize(b) &&
                      cJSON_IsObject(cJSON_GetArrayItem(a, 0));
    if (!objects && !rows) {
        char *sa = a ? cJSON_PrintUnformatted(a) : NULL, *sb = b ? cJSON_PrintUnformatted(b) : NULL;
        if (!sa || !sb || strcmp(sa, sb)) diff_note(o, key, a, b);
        free(sa);
        free(sb);
        return;
    }
    int i = 0;
    for (const cJSON *c = a->child; c; c = c->next, i++) { /* a's members (or rows), then those only b has */
        if (objects) snprintf(key + at, cap - at, "%s%s", at ? "." : "", c->string);
        else snprintf(key + at, cap - at, ".%d", i);
        diff_walk(c, objects ? cJSON_GetObjectItemCaseSensitive(b, c->string) : cJSON_GetArrayItem(b, i), key, cap, o);
    }
    for (const cJSON *c = objects ? b->child : NULL; c; c = c->next)
        if (!cJSON_GetObjectItemCaseSensitive(a, c->string)) {
            snprintf(key + at, cap - at, "%s%s", at ? "." : "", c->string);
            diff_note(o, key, NULL, c);
        }
    key[at] = '\0';
}

int gf_config_diff(const gf_config *a, const gf_config *b, char *buf, size_t n) {
    cJSON *ja = gf_config_to_cjson(a), *jb = gf_config_to_cjson(b);
    char key[256] = "";
    diff_out o = {.buf = buf, .cap = n};
    if (n) buf[0] = '\0';
    if (ja && jb) diff_walk(ja, jb, key, sizeof key, &o);
    cJSON_Delete(ja);
    cJSON_Delete(jb);
    if (!ja || !jb) return gf_fail("out of memory comparing two configs");
    return o.n;
}
