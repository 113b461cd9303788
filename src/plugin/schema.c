/* The one parser, printer and help writer of config keys (plugin/schema.h). */
#include "plugin/schema.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/number.h"
#include "grassflow_plugin.h"

const gf_cfg_key *gf_key_find(const gf_cfg_key *keys, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!strcmp(keys[i].name, name)) return &keys[i];
    return NULL;
}

static bool in_range(const gf_cfg_key *k, double v) {
    bool lo_ok = (k->flags & GF_KEY_LO_OPEN) ? v > k->lo : v >= k->lo;
    bool hi_ok = (k->flags & GF_KEY_HI_OPEN) ? v < k->hi : v <= k->hi;
    return lo_ok && hi_ok;
}

static void range_text(const gf_cfg_key *k, char *buf, size_t n) {
    snprintf(buf, n, "%c%.15g, %.15g%c", (k->flags & GF_KEY_LO_OPEN) ? '(' : '[', k->lo, k->hi,
             (k->flags & GF_KEY_HI_OPEN) ? ')' : ']');
}

static int parse_int(const gf_cfg_key *k, const cJSON *v, const char *src, const char *shown, int64_t *out) {
    char r[96];
    range_text(k, r, sizeof r);
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble))
        return gf_fail("%s: \"%s\" must be an integer in %s", src, shown, r);
    if (!in_range(k, v->valuedouble))
        return gf_fail("%s: \"%s\" is %.17g; expected an integer in %s", src, shown, v->valuedouble, r);
    *out = (int64_t)v->valuedouble;
    return 0;
}

static int parse_ints(const gf_cfg_key *k, const cJSON *v, void *base, const char *src, const char *shown) {
    int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : -1;
    if (n < 1 || n > k->max_count)
        return gf_fail("%s: \"%s\" must be a non-empty list of at most %d integers, e.g. [1,2,4]", src, shown,
                       k->max_count);
    int vals[256];
    for (int i = 0; i < n; i++) {
        char el[160];
        int64_t x = 0;
        snprintf(el, sizeof el, "%s[%d]", shown, i);
        if (parse_int(k, cJSON_GetArrayItem(v, i), src, el, &x)) return -1;
        vals[i] = (int)x;
    }
    memcpy((char *)base + k->off, vals, (size_t)n * sizeof(int));
    *(int *)(void *)((char *)base + k->count_off) = n;
    return 0;
}

static int parse_enum(const gf_cfg_key *k, const cJSON *v, void *base, const char *src, const char *shown) {
    for (int i = 0; cJSON_IsString(v) && k->names[i]; i++)
        if (!strcmp(v->valuestring, k->names[i])) {
            *(int *)(void *)((char *)base + k->off) = i;
            return 0;
        }
    char names[256] = "";
    for (int i = 0; k->names[i]; i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s\"%s\"", i ? ", " : "", k->names[i]);
    return gf_fail("%s: \"%s\" must be one of %s", src, shown, names);
}

int gf_key_parse(const gf_cfg_key *k, const cJSON *v, void *base, const char *src, const char *shown) {
    char *at = (char *)base + k->off;
    switch (k->type) {
    case GF_KEY_INT: return parse_int(k, v, src, shown, (int64_t *)(void *)at);
    case GF_KEY_FLOAT: {
        char r[96];
        range_text(k, r, sizeof r);
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
            return gf_fail("%s: \"%s\" must be a finite number in %s", src, shown, r);
        if (!in_range(k, v->valuedouble) || !in_range(k, (float)v->valuedouble))
            return gf_fail("%s: \"%s\" is %g; expected a number in %s", src, shown, v->valuedouble, r);
        *(float *)(void *)at = (float)v->valuedouble;
        return 0;
    }
    case GF_KEY_BOOL:
        if (!cJSON_IsBool(v)) return gf_fail("%s: \"%s\" must be true or false", src, shown);
        *(bool *)(void *)at = cJSON_IsTrue(v);
        return 0;
    case GF_KEY_ENUM: return parse_enum(k, v, base, src, shown);
    case GF_KEY_INTS: return parse_ints(k, v, base, src, shown);
    }
    return gf_fail("%s: \"%s\" has an unknown key type", src, shown);
}

static size_t value_size(const gf_cfg_key *k) {
    switch (k->type) {
    case GF_KEY_INT: return sizeof(int64_t);
    case GF_KEY_FLOAT: return sizeof(float);
    case GF_KEY_BOOL: return sizeof(bool);
    case GF_KEY_ENUM: return sizeof(int);
    case GF_KEY_INTS: return (size_t)k->max_count * sizeof(int);
    }
    return 0;
}

int gf_keys_check(const gf_cfg_key *keys, int n, size_t config_size, const char *who) {
    for (int i = 0; i < n; i++) {
        const gf_cfg_key *k = &keys[i];
        bool ok = k->name && k->name[0] && k->off + value_size(k) <= config_size &&
                  (k->type != GF_KEY_INTS ||
                   (k->max_count >= 1 && k->max_count <= 256 && k->count_off + sizeof(int) <= config_size)) &&
                  (k->type != GF_KEY_ENUM || (k->names && k->names[0]));
        if (!ok)
            return gf_fail("%s: key %d (%s) does not fit its %zu-byte config, or an INTS key is longer than 256, or "
                           "an ENUM has no names", who, i, k->name ? k->name : "unnamed", config_size);
        if (!k->def) continue;
        _Alignas(8) unsigned char scratch[1024];
        cJSON *v = config_size <= sizeof scratch ? cJSON_Parse(k->def) : NULL;
        int rc = v ? gf_key_parse(k, v, scratch, who, k->name) : -1;
        cJSON_Delete(v);
        if (rc) return gf_fail("%s: the default of key %s (%s) is not a valid value", who, k->name, k->def);
    }
    return 0;
}

void gf_keys_default(const gf_cfg_key *keys, int n, void *base) {
    for (int i = 0; i < n; i++) {
        if (!keys[i].def) continue;
        cJSON *v = cJSON_Parse(keys[i].def);
        int rc = v ? gf_key_parse(&keys[i], v, base, "default", keys[i].name) : -1;
        cJSON_Delete(v);
        if (rc) { /* a table's default that its own parser refuses is a bug in the table */
            fprintf(stderr, "grassflow: internal error: the default of key %s does not parse: %s\n", keys[i].name,
                    gf_last_error());
            abort();
        }
    }
}

void gf_key_to_json(const gf_cfg_key *k, const void *base, cJSON *obj) {
    const char *at = (const char *)base + k->off;
    switch (k->type) {
    case GF_KEY_INT: cJSON_AddNumberToObject(obj, k->name, (double)*(const int64_t *)(const void *)at); break;
    case GF_KEY_FLOAT: cJSON_AddNumberToObject(obj, k->name, gf_float_shortest(*(const float *)(const void *)at)); break;
    case GF_KEY_BOOL: cJSON_AddBoolToObject(obj, k->name, *(const bool *)(const void *)at); break;
    case GF_KEY_ENUM: cJSON_AddStringToObject(obj, k->name, k->names[*(const int *)(const void *)at]); break;
    case GF_KEY_INTS: {
        int n = *(const int *)(const void *)((const char *)base + k->count_off);
        cJSON_AddItemToObject(obj, k->name, cJSON_CreateIntArray((const int *)(const void *)at, n));
        break;
    }
    }
}

void gf_key_names(const gf_cfg_key *keys, int n, char *buf, size_t size) {
    buf[0] = '\0';
    for (int i = 0; i < n; i++)
        snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", i ? ", " : "", keys[i].name);
}

static const char *type_name(const gf_cfg_key *k) {
    switch (k->type) {
    case GF_KEY_INT: return "integer";
    case GF_KEY_FLOAT: return "number";
    case GF_KEY_BOOL: return "true/false";
    case GF_KEY_ENUM: return "name";
    case GF_KEY_INTS: return "list of integers";
    }
    return "?";
}

void gf_key_help(const gf_cfg_key *keys, int n, char *buf, size_t size) {
    for (int i = 0; i < n; i++) {
        const gf_cfg_key *k = &keys[i];
        char r[128] = "";
        if (k->type == GF_KEY_INT || k->type == GF_KEY_FLOAT || k->type == GF_KEY_INTS) {
            r[0] = ' ';
            range_text(k, r + 1, sizeof r - 1);
        } else if (k->type == GF_KEY_ENUM) {
            for (int j = 0; k->names[j]; j++)
                snprintf(r + strlen(r), sizeof r - strlen(r), "%s%s", j ? "|" : " ", k->names[j]);
        }
        snprintf(buf + strlen(buf), size - strlen(buf), "    %-12s %s%s, %s%s: %s\n", k->name, type_name(k), r,
                 k->def ? "default " : "required", k->def ? k->def : "", k->help);
    }
}
