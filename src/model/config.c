/* The config struct and its JSON form (libcjson): parse with a checked key table, print, --set. */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "grassflow.h"
#include "mixers/mixer.h"

static const char *const NORMS[] = {"pre", "post", NULL};
static const char *const GELUS[] = {"erf", "tanh", NULL};
static const char *const POSES[] = {"learned", "sinusoidal", "none", NULL};
static const char *const MIXERS[] = {"grassmann", "attention", NULL};

const char *gf_mixer_name(gf_mixer_kind k) { return (k >= 0 && k < GF_MIXER_KINDS) ? MIXERS[k] : "?"; }

typedef enum { K_INT, K_FLOAT, K_BOOL, K_ENUM, K_OFFSETS, K_MIXERS } key_kind;

typedef struct {
    const char *key;
    key_kind kind;
    size_t off;                 /* offset of the field in gf_config */
    const char *const *names;   /* K_ENUM */
    int64_t lo, hi;             /* K_INT bounds */
} key_spec;

#define OFF(f) offsetof(gf_config, f)
static const key_spec KEYS[] = {
    {"vocab_size", K_INT, OFF(vocab_size), NULL, 1, 2147483647},
    {"d_model", K_INT, OFF(d_model), NULL, 1, 65536},
    {"n_layer", K_INT, OFF(n_layer), NULL, 1, GF_MAX_LAYERS},
    {"n_head", K_INT, OFF(n_head), NULL, 1, 65536},
    {"d_ff", K_INT, OFF(d_ff), NULL, 1, 1 << 20},
    {"max_len", K_INT, OFF(max_len), NULL, 1, 1 << 24},
    {"rank", K_INT, OFF(rank), NULL, 2, 256},
    {"offsets", K_OFFSETS, 0, NULL, 0, 0},
    {"mixers", K_MIXERS, 0, NULL, 0, 0},
    {"norm", K_ENUM, OFF(norm), NORMS, 0, 0},
    {"plucker_eps", K_FLOAT, OFF(plucker_eps), NULL, 0, 0},
    {"extra_proj", K_BOOL, OFF(extra_proj), NULL, 0, 0},
    {"tie_head", K_BOOL, OFF(tie_head), NULL, 0, 0},
    {"gelu", K_ENUM, OFF(gelu), GELUS, 0, 0},
    {"pos", K_ENUM, OFF(pos), POSES, 0, 0},
    {"dropout", K_FLOAT, OFF(dropout), NULL, 0, 0},
};
#define N_KEYS ((int)(sizeof KEYS / sizeof KEYS[0]))
#define MAX_OFFSET (1 << 20)

static void key_list(char *buf, size_t n) {
    buf[0] = '\0';
    for (int i = 0; i < N_KEYS; i++) {
        strncat(buf, KEYS[i].key, n - strlen(buf) - 1);
        if (i + 1 < N_KEYS) strncat(buf, ", ", n - strlen(buf) - 1);
    }
}

static void enum_list(char *buf, size_t n, const char *const *names) {
    buf[0] = '\0';
    for (const char *const *p = names; *p; p++) {
        strncat(buf, "\"", n - strlen(buf) - 1);
        strncat(buf, *p, n - strlen(buf) - 1);
        strncat(buf, p[1] ? "\", " : "\"", n - strlen(buf) - 1);
    }
}

static int parse_int(const cJSON *it, const char *src, const char *key, int64_t lo, int64_t hi, int64_t *out) {
    if (!cJSON_IsNumber(it) || it->valuedouble != floor(it->valuedouble))
        return gf_fail("%s: \"%s\" must be an integer", src, key);
    double v = it->valuedouble;
    if (v < (double)lo || v > (double)hi)
        return gf_fail("%s: \"%s\" is %.17g; expected an integer in [%lld, %lld]", src, key, v, (long long)lo,
                       (long long)hi);
    *out = (int64_t)v;
    return 0;
}

/* Lists shorter or longer than n_layer: a list of one entry, or of identical entries, is resized. */
static int list_len_ok(const cJSON *arr, int64_t n_layer, const char *src, const char *key) {
    int n = cJSON_GetArraySize(arr);
    if (n == n_layer) return 0;
    char *first = cJSON_PrintUnformatted(cJSON_GetArrayItem(arr, 0));
    int uniform = 1;
    for (int i = 1; i < n && uniform; i++) {
        char *s = cJSON_PrintUnformatted(cJSON_GetArrayItem(arr, i));
        uniform = s && first && !strcmp(s, first);
        free(s);
    }
    free(first);
    if (uniform && n >= 1) return 0;
    return gf_fail("%s: \"%s\" has %d entries but n_layer is %lld; give one entry per layer, or one entry "
                   "for all layers", src, key, n, (long long)n_layer);
}

static int parse_offsets(const cJSON *arr, int64_t n_layer, const char *src, gf_config *c) {
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) < 1)
        return gf_fail("%s: \"offsets\" must be a non-empty list of lists of positive integers, e.g. "
                       "[[1,2,4,8,12,16]]", src);
    if (list_len_ok(arr, n_layer, src, "offsets")) return -1;
    int n = cJSON_GetArraySize(arr);
    for (int l = 0; l < n_layer; l++) {
        const cJSON *lst = cJSON_GetArrayItem(arr, n == n_layer ? l : 0);
        int m = cJSON_IsArray(lst) ? cJSON_GetArraySize(lst) : -1;
        if (m < 1 || m > GF_MAX_OFFSETS)
            return gf_fail("%s: \"offsets\"[%d] must be a list of 1 to %d positive integers", src, l,
                           GF_MAX_OFFSETS);
        c->n_offsets[l] = m;
        for (int k = 0; k < m; k++) {
            int64_t v = 0;
            char key[64];
            snprintf(key, sizeof key, "offsets[%d][%d]", l, k);
            if (parse_int(cJSON_GetArrayItem(lst, k), src, key, 1, MAX_OFFSET, &v)) return -1;
            c->offsets[l][k] = (int)v;
        }
    }
    return 0;
}

static int find_name(const char *s, const char *const *names) {
    for (int i = 0; names[i]; i++)
        if (!strcmp(s, names[i])) return i;
    return -1;
}

static int parse_mixers(const cJSON *arr, int64_t n_layer, const char *src, gf_config *c) {
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) < 1)
        return gf_fail("%s: \"mixers\" must be a non-empty list of \"grassmann\" / \"attention\"", src);
    if (list_len_ok(arr, n_layer, src, "mixers")) return -1;
    int n = cJSON_GetArraySize(arr);
    for (int l = 0; l < n_layer; l++) {
        const cJSON *it = cJSON_GetArrayItem(arr, n == n_layer ? l : 0);
        int k = cJSON_IsString(it) ? find_name(it->valuestring, MIXERS) : -1;
        if (k < 0)
            return gf_fail("%s: \"mixers\"[%d] must be \"grassmann\" or \"attention\"", src, l);
        c->mixers[l] = (gf_mixer_kind)k;
    }
    return 0;
}

static int parse_key(const key_spec *ks, const cJSON *it, const char *src, gf_config *c) {
    char *base = (char *)c;
    switch (ks->kind) {
    case K_INT: return parse_int(it, src, ks->key, ks->lo, ks->hi, (int64_t *)(base + ks->off));
    case K_FLOAT:
        if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
            return gf_fail("%s: \"%s\" must be a finite number", src, ks->key);
        *(float *)(base + ks->off) = (float)it->valuedouble;
        return 0;
    case K_BOOL:
        if (!cJSON_IsBool(it)) return gf_fail("%s: \"%s\" must be true or false", src, ks->key);
        *(bool *)(base + ks->off) = cJSON_IsTrue(it);
        return 0;
    case K_ENUM: {
        int k = cJSON_IsString(it) ? find_name(it->valuestring, ks->names) : -1;
        if (k < 0) {
            char names[256];
            enum_list(names, sizeof names, ks->names);
            return gf_fail("%s: \"%s\" must be one of %s", src, ks->key, names);
        }
        *(int *)(base + ks->off) = k;
        return 0;
    }
    default: return 0; /* lists are parsed once n_layer is known */
    }
}

int gf_config_from_json(const char *json, const char *source, gf_config *c) {
    const char *src = source ? source : "config";
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(json, &end, 1);
    if (!root) {
        long at = end ? (long)(end - json) : 0;
        return gf_fail("%s: not valid JSON (error near byte %ld)", src, at);
    }
    int rc = -1;
    gf_config cfg;
    memset(&cfg, 0, sizeof cfg);
    if (!cJSON_IsObject(root)) {
        gf_fail("%s: a config must be a JSON object", src);
        goto done;
    }
    const cJSON *basek = cJSON_GetObjectItemCaseSensitive(root, "base");
    if (basek) {
        if (!cJSON_IsString(basek)) {
            gf_fail("%s: \"base\" must name a preset", src);
            goto done;
        }
        if (gf_config_preset(basek->valuestring, &cfg)) {
            gf_fail_context(" (in %s, key \"base\")", src);
            goto done;
        }
    }
    for (const cJSON *it = root->child; it; it = it->next) {
        if (!strcmp(it->string, "base")) continue;
        int found = 0;
        for (int i = 0; i < N_KEYS; i++) found |= !strcmp(it->string, KEYS[i].key);
        if (!found) {
            char keys[512];
            key_list(keys, sizeof keys);
            gf_fail("%s: unknown key \"%s\"; the keys are: base, %s", src, it->string, keys);
            goto done;
        }
    }
    for (int i = 0; i < N_KEYS; i++) {
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, KEYS[i].key);
        if (!it) {
            if (basek) continue;
            gf_fail("%s: missing key \"%s\"\nHINT: give every key, or \"base\": \"PRESET\" to start from a preset",
                    src, KEYS[i].key);
            goto done;
        }
        if (parse_key(&KEYS[i], it, src, &cfg)) goto done;
    }
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(root, "offsets");
    const cJSON *mix = cJSON_GetObjectItemCaseSensitive(root, "mixers");
    if (offs && parse_offsets(offs, cfg.n_layer, src, &cfg)) goto done;
    if (mix && parse_mixers(mix, cfg.n_layer, src, &cfg)) goto done;
    /* with a base preset and n_layer changed, the preset's per-layer lists must still fit */
    if (basek && cJSON_GetObjectItemCaseSensitive(root, "n_layer") && (!offs || !mix)) {
        gf_config p;
        gf_config_preset(basek->valuestring, &p);
        for (int l = 0; l < cfg.n_layer; l++) {
            int src_l = l < p.n_layer ? l : -1;
            int uniform = 1;
            for (int k = 1; k < p.n_layer; k++)
                uniform &= p.mixers[k] == p.mixers[0] && p.n_offsets[k] == p.n_offsets[0] &&
                           !memcmp(p.offsets[k], p.offsets[0], sizeof p.offsets[0]);
            if (src_l < 0 && !uniform) {
                gf_fail("%s: n_layer %lld exceeds the %lld layers of preset %s, whose offsets/mixers differ by "
                        "layer; give \"offsets\" and \"mixers\" too", src, (long long)cfg.n_layer,
                        (long long)p.n_layer, basek->valuestring);
                goto done;
            }
            if (src_l < 0) src_l = 0;
            if (!offs) {
                cfg.n_offsets[l] = p.n_offsets[src_l];
                memcpy(cfg.offsets[l], p.offsets[src_l], sizeof cfg.offsets[l]);
            }
            if (!mix) cfg.mixers[l] = p.mixers[src_l];
        }
    }
    if (gf_config_validate(&cfg, src)) goto done;
    *c = cfg;
    rc = 0;
done:
    cJSON_Delete(root);
    return rc;
}

int gf_config_validate(const gf_config *c, const char *source) {
    const char *src = source ? source : "config";
    if (c->vocab_size < 1 || c->vocab_size > 2147483647)
        return gf_fail("%s: vocab_size %lld is out of range [1, 2^31-1]", src, (long long)c->vocab_size);
    if (c->d_model < 1 || c->d_model > 65536) return gf_fail("%s: d_model must be in [1, 65536]", src);
    if (c->n_layer < 1 || c->n_layer > GF_MAX_LAYERS)
        return gf_fail("%s: n_layer must be in [1, %d]", src, GF_MAX_LAYERS);
    if (c->d_ff < 1 || c->d_ff > (1 << 20)) return gf_fail("%s: d_ff must be in [1, 2^20]", src);
    if (c->max_len < 1 || c->max_len > (1 << 24)) return gf_fail("%s: max_len must be in [1, 2^24]", src);
    if (!(c->dropout >= 0.0f && c->dropout < 1.0f))
        return gf_fail("%s: dropout is %g; expected a probability in [0, 1)", src, (double)c->dropout);
    if (c->norm != GF_NORM_PRE && c->norm != GF_NORM_POST) return gf_fail("%s: bad norm", src);
    if (c->gelu != GF_GELU_ERF && c->gelu != GF_GELU_TANH) return gf_fail("%s: bad gelu", src);
    if (c->pos != GF_POS_LEARNED && c->pos != GF_POS_SINUSOIDAL && c->pos != GF_POS_NONE)
        return gf_fail("%s: pos must be \"learned\", \"sinusoidal\" or \"none\"", src);
    bool any_attn = false, any_grass = false;
    for (int l = 0; l < c->n_layer; l++) {
        if (c->mixers[l] == GF_MIXER_ATTENTION) any_attn = true;
        else if (c->mixers[l] == GF_MIXER_GRASSMANN) any_grass = true;
        else return gf_fail("%s: mixers[%d] is not a known mixer", src, l);
        if (c->mixers[l] != GF_MIXER_GRASSMANN) continue;
        if (c->n_offsets[l] < 1 || c->n_offsets[l] > GF_MAX_OFFSETS)
            return gf_fail("%s: offsets[%d] must hold 1 to %d offsets", src, l, GF_MAX_OFFSETS);
        for (int k = 0; k < c->n_offsets[l]; k++)
            if (c->offsets[l][k] < 1 || c->offsets[l][k] > MAX_OFFSET)
                return gf_fail("%s: offsets[%d][%d] is %d; offsets look back, so each must be in [1, %d]", src,
                               l, k, c->offsets[l][k], MAX_OFFSET);
    }
    if (any_attn && (c->n_head < 1 || c->d_model % c->n_head != 0))
        return gf_fail("%s: d_model %lld is not divisible by n_head %lld", src, (long long)c->d_model,
                       (long long)c->n_head);
    if (any_grass) {
        if (c->rank < 2 || c->rank > 256 || c->rank > c->d_model)
            return gf_fail("%s: rank is %lld; expected 2 <= rank <= min(256, d_model)", src, (long long)c->rank);
        if (!(c->plucker_eps > 0.0f) || !isfinite(c->plucker_eps))
            return gf_fail("%s: plucker_eps must be a positive number (e.g. 1e-8)", src);
    }
    return 0;
}

static cJSON *config_to_cjson(const gf_config *c) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "vocab_size", (double)c->vocab_size);
    cJSON_AddNumberToObject(o, "d_model", (double)c->d_model);
    cJSON_AddNumberToObject(o, "n_layer", (double)c->n_layer);
    cJSON_AddNumberToObject(o, "n_head", (double)c->n_head);
    cJSON_AddNumberToObject(o, "d_ff", (double)c->d_ff);
    cJSON_AddNumberToObject(o, "max_len", (double)c->max_len);
    cJSON_AddNumberToObject(o, "rank", (double)c->rank);
    cJSON *offs = cJSON_AddArrayToObject(o, "offsets");
    cJSON *mix = cJSON_AddArrayToObject(o, "mixers");
    for (int l = 0; l < c->n_layer; l++) {
        cJSON_AddItemToArray(offs, cJSON_CreateIntArray(c->offsets[l], c->n_offsets[l]));
        cJSON_AddItemToArray(mix, cJSON_CreateString(gf_mixer_name(c->mixers[l])));
    }
    cJSON_AddStringToObject(o, "norm", NORMS[c->norm]);
    cJSON_AddNumberToObject(o, "plucker_eps", (double)c->plucker_eps);
    cJSON_AddBoolToObject(o, "extra_proj", c->extra_proj);
    cJSON_AddBoolToObject(o, "tie_head", c->tie_head);
    cJSON_AddStringToObject(o, "gelu", GELUS[c->gelu]);
    cJSON_AddStringToObject(o, "pos", POSES[c->pos]);
    cJSON_AddNumberToObject(o, "dropout", (double)c->dropout);
    return o;
}

char *gf_config_to_json(const gf_config *c, bool pretty) {
    cJSON *o = config_to_cjson(c);
    char *s = pretty ? cJSON_Print(o) : cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

int gf_config_load(const char *path, gf_config *c) {
    FILE *f = fopen(path, "rb");
    if (!f) return gf_fail("cannot open config file %s: %s", path, strerror(errno));
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 8192;
            if (cap > (16u << 20)) {
                fclose(f);
                free(buf);
                return gf_fail("config file %s is larger than 16 MiB; a config is a small JSON object", path);
            }
            char *nb = realloc(buf, cap);
            if (!nb) {
                fclose(f);
                free(buf);
                return gf_fail("out of memory reading %s", path);
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
        return gf_fail("error reading config file %s", path);
    }
    buf[len] = '\0';
    if (strlen(buf) != len) {
        free(buf);
        return gf_fail("%s: contains a NUL byte; expected a JSON text file", path);
    }
    int rc = gf_config_from_json(buf, path, c);
    free(buf);
    return rc;
}

/* "1,2,4" -> [1,2,4]; "g,a" -> ["grassmann","attention"]. NULL if s is not such a list. */
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
            const char *name = !strcmp(tok, "g") ? "grassmann" : !strcmp(tok, "a") ? "attention" : tok;
            cJSON_AddItemToArray(arr, cJSON_CreateString(name));
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

int gf_config_set(gf_config *c, const char *kv) {
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv)
        return gf_fail("--set %s: expected KEY=VALUE, for example --set norm=post or --set offsets=1,2,4", kv);
    char key[64];
    size_t kn = (size_t)(eq - kv);
    if (kn >= sizeof key) return gf_fail("--set %s: key too long", kv);
    memcpy(key, kv, kn);
    key[kn] = '\0';
    const char *val = eq + 1;
    int known = 0;
    for (int i = 0; i < N_KEYS; i++) known |= !strcmp(key, KEYS[i].key);
    if (!known) {
        char keys[512];
        key_list(keys, sizeof keys);
        return gf_fail("--set %s: unknown key \"%s\"; the keys are: %s", kv, key, keys);
    }
    cJSON *v = cJSON_ParseWithOpts(val, NULL, 1);
    if (!strcmp(key, "offsets")) {
        if (!v) v = bare_list(val, false);
        if (v && cJSON_IsNumber(v)) { /* offsets=4 */
            cJSON *a = cJSON_CreateArray();
            cJSON_AddItemToArray(a, v);
            v = a;
        }
        if (v && cJSON_IsArray(v) && cJSON_IsNumber(cJSON_GetArrayItem(v, 0))) { /* one list for every layer */
            cJSON *a = cJSON_CreateArray();
            cJSON_AddItemToArray(a, v);
            v = a;
        }
    } else if (!strcmp(key, "mixers")) {
        if (!v) v = bare_list(val, true);
    } else if (!v) {
        v = cJSON_CreateString(val); /* bare word: post, tanh, ... */
    }
    if (!v) return gf_fail("--set %s: cannot read the value \"%s\"", kv, val);
    cJSON *o = config_to_cjson(c);
    cJSON_ReplaceItemInObjectCaseSensitive(o, key, v);
    /* lists that depend on n_layer are resized by the parser when they are uniform */
    char *json = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    char src[128];
    snprintf(src, sizeof src, "--set %.100s", kv);
    gf_config tmp;
    int rc = gf_config_from_json(json, src, &tmp);
    free(json);
    if (rc == 0) *c = tmp;
    return rc;
}

int64_t gf_config_num_params(const gf_config *c) {
    const int64_t d = c->d_model;
    int64_t n = c->vocab_size * d + (c->pos == GF_POS_LEARNED ? c->max_len * d : 0);
    for (int l = 0; l < c->n_layer; l++) {
        gf_param_spec specs[GF_MIXER_MAX_PARAMS];
        int k = gf_mixer_get(c->mixers[l])->param_specs(c, l, specs);
        for (int i = 0; i < k; i++) n += specs[i].shape[0] * (specs[i].ndim == 2 ? specs[i].shape[1] : 1);
        n += 4 * d + 2 * c->d_ff * d + c->d_ff + d; /* 2 LayerNorms + FFN */
    }
    n += 2 * d + (c->tie_head ? 0 : c->vocab_size * d);
    return n;
}
