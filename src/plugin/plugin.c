/* The checks every plug-in table passes (plugin/plugin.h), and the small public helpers a plug-in calls
 * (gf_param_spec_set, gf_layer_mcfg, gf_head_cfg; gf_layer_dim is the stacks' geometry, config/stacks.c). */
#include "plugin/plugin.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"

static bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

int gf_plugin_check(const gf_plugin_desc *d) {
    if (!d->name || !d->name[0] || strlen(d->name) >= (size_t)d->name_max)
        return gf_fail("%s: a %s needs a name of 1 to %d characters", d->fn, d->kind, d->name_max - 1);
    for (const char *c = d->name; *c; c++)
        if (!name_char(*c))
            return gf_fail("%s: %s name \"%s\" has the character '%c'; a name is letters, digits, '_' and '-' "
                           "(it is written in configs and in --set lists)", d->fn, d->kind, d->name, *c);
    if (d->version < 1 || d->version > d->max_version)
        return gf_fail("%s: %s \"%s\" declares interface version %d; this grassflow knows 1 to %d", d->fn, d->kind,
                       d->name, d->version, d->max_version);
    if (d->config_size > d->config_max)
        return gf_fail("%s: %s \"%s\" has a %zu-byte config; at most %zu fit", d->fn, d->kind, d->name,
                       d->config_size, d->config_max);
    if (d->n_keys < 0 || (d->n_keys > 0 && !d->keys))
        return gf_fail("%s: %s \"%s\" has n_keys %d and keys %s", d->fn, d->kind, d->name, d->n_keys,
                       d->keys ? "set" : "NULL");
    char who[96];
    snprintf(who, sizeof who, "%s: %s \"%s\"", d->fn, d->kind, d->name);
    return gf_keys_check(d->keys, d->n_keys, d->config_size, who);
}

/* Whether mixer m answers to the name or letter of ops (gf_mixer_find's rule: a name, or a one-character
 * string equal to a letter). */
static bool mixer_clash(const gf_mixer_ops *m, const gf_mixer_ops *ops) {
    if (!strcmp(m->name, ops->name)) return true;
    if (ops->letter && (m->letter == ops->letter || (m->name[0] == ops->letter && !m->name[1]))) return true;
    return m->letter && ops->name[0] == m->letter && !ops->name[1];
}

int gf_mixer_ops_check(const gf_mixer_ops *ops, const char *fn, const gf_registry *r, int n_before) {
    if (!ops) return gf_fail("%s: no mixer given", fn);
    const gf_plugin_desc d = {fn, "mixer", ops->name, ops->version, GF_MIXER_OPS_VERSION, GF_MIXER_NAME_MAX,
                              ops->config_size, GF_MIXER_CONFIG_BYTES, ops->keys, ops->n_keys};
    if (gf_plugin_check(&d)) return -1;
    const char l = ops->letter;
    if (l && !((l >= 'a' && l <= 'z') || (l >= 'A' && l <= 'Z') || (l >= '0' && l <= '9')))
        return gf_fail("%s: mixer \"%s\" has the letter '%c' (0x%02x); a letter is [A-Za-z0-9], or 0 for none", fn,
                       ops->name, l, (unsigned char)l);
    if (ops->directions & ~(unsigned)(GF_MIX_CAUSAL | GF_MIX_BIDIRECTIONAL))
        return gf_fail("%s: mixer \"%s\" has directions 0x%x; only GF_MIX_CAUSAL (1) and GF_MIX_BIDIRECTIONAL (2) "
                       "exist", fn, ops->name, ops->directions);
    if (!ops->param_specs || !ops->saved_floats || !ops->scratch_floats || !ops->forward || !ops->backward ||
        (!ops->step) != (!ops->state_floats) || (!ops->step) != (!ops->step_scratch_floats))
        return gf_fail("%s: mixer \"%s\" lacks a function (param_specs, saved_floats, scratch_floats, forward and "
                       "backward are required; step, state_floats and step_scratch_floats go together)", fn,
                       ops->name);
    for (int i = 0; i < n_before; i++) {
        const gf_mixer_ops *m = gf_registry_at(r, i);
        if (m && mixer_clash(m, ops))
            return gf_fail("%s: a mixer called \"%s\" (or with letter '%c') is already registered: \"%s\"%s%c%s", fn,
                           ops->name, l ? l : ' ', m->name, m->letter ? " (" : "", m->letter ? m->letter : ' ',
                           m->letter ? ")" : "");
    }
    return 0;
}

int gf_head_ops_check(const gf_head_ops *ops, const char *fn, const gf_registry *r, int n_before) {
    if (!ops) return gf_fail("%s: no head given", fn);
    const gf_plugin_desc d = {fn, "head", ops->name, ops->version, GF_HEAD_OPS_VERSION, GF_MIXER_NAME_MAX,
                              ops->config_size, GF_HEAD_CONFIG_BYTES, ops->keys, ops->n_keys};
    if (gf_plugin_check(&d)) return -1;
    if (ops->direction != GF_CAUSAL && ops->direction != GF_BIDIRECTIONAL)
        return gf_fail("%s: head \"%s\" has direction %d; GF_CAUSAL or GF_BIDIRECTIONAL", fn, ops->name,
                       (int)ops->direction);
    if (ops->causal_only && ops->direction != GF_CAUSAL)
        return gf_fail("%s: head \"%s\" is causal_only but its models default to bidirectional", fn, ops->name);
    if (!ops->target_count || !ops->param_specs || !ops->out_floats || !ops->saved_floats || !ops->n_outputs ||
        !ops->forward || !ops->backward)
        return gf_fail("%s: head \"%s\" lacks a function (target_count, param_specs, out_floats, saved_floats, "
                       "n_outputs, forward and backward are required)", fn, ops->name);
    for (int i = 0; i < n_before; i++) {
        const gf_head_ops *h = gf_registry_at(r, i);
        if (h && !strcmp(h->name, ops->name))
            return gf_fail("%s: a head called \"%s\" is already registered", fn, ops->name);
    }
    return 0;
}

void gf_param_spec_set(gf_param_spec *s, const char *name, int ndim, int64_t rows, int64_t cols,
                       gf_init_kind init) {
    snprintf(s->name, sizeof s->name, "%s", name);
    s->ndim = ndim;
    s->shape[0] = rows;
    s->shape[1] = cols;
    s->init = init;
    s->buffer = false;
}

const void *gf_layer_mcfg(const gf_config *cfg, int layer) { return cfg->layers[layer].params.bytes; }

const void *gf_head_cfg(const gf_config *cfg) { return cfg->head.bytes; }
