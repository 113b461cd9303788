/* The mixer registry: the built-in mixers (one line each) and those registered at run time. */
#include "mixers/mixer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/registry.h"

extern const gf_mixer_ops gf_mixer_grassmann;
extern const gf_mixer_ops gf_mixer_attention;

/* The built-in mixers: a new one is its source file plus one line here. */
static const gf_mixer_ops *const BUILTIN[] = {
    &gf_mixer_grassmann,
    &gf_mixer_attention,
};
static gf_registry g_mixers = {(const void *const *)BUILTIN, (int)(sizeof BUILTIN / sizeof BUILTIN[0]), {0}, 0};

int gf_mixer_count(void) { return gf_registry_count(&g_mixers); }
const gf_mixer_ops *gf_mixer_at(int i) { return gf_registry_at(&g_mixers, i); }

const gf_mixer_ops *gf_mixer_find(const char *name) {
    if (!name) return NULL;
    for (int i = 0; i < gf_mixer_count(); i++) {
        const gf_mixer_ops *m = gf_mixer_at(i);
        if (!strcmp(m->name, name) || (m->letter && name[0] == m->letter && !name[1])) return m;
    }
    return NULL;
}

const gf_mixer_ops *gf_layer_mixer(const gf_config *cfg, int l) { return gf_mixer_find(cfg->layers[l].mixer); }

int gf_mixer_register(const gf_mixer_ops *ops) {
    if (!ops) return gf_fail("gf_mixer_register: no mixer given");
    const gf_plugin_desc d = {"gf_mixer_register", "mixer", ops->name, ops->version, GF_MIXER_OPS_VERSION,
                              GF_MIXER_NAME_MAX, ops->config_size, GF_MIXER_CONFIG_BYTES, ops->keys, ops->n_keys};
    if (gf_plugin_check(&d)) return -1;
    if (!ops->param_specs || !ops->saved_floats || !ops->scratch_floats || !ops->forward || !ops->backward ||
        (!ops->step) != (!ops->state_floats) || (!ops->step) != (!ops->step_scratch_floats))
        return gf_fail("gf_mixer_register: mixer \"%s\" lacks a function (param_specs, saved_floats, "
                       "scratch_floats, forward and backward are required; step, state_floats and "
                       "step_scratch_floats go together)", ops->name);
    char letter[2] = {ops->letter, 0};
    if (gf_mixer_find(ops->name) || (ops->letter && gf_mixer_find(letter)))
        return gf_fail("gf_mixer_register: a mixer called \"%s\" (or with letter '%c') is already registered",
                       ops->name, ops->letter ? ops->letter : ' ');
    return gf_registry_add(&g_mixers, ops, "mixers (gf_mixer_register)");
}

void gf_layer_set_mixer(gf_config *cfg, int l, const gf_mixer_ops *ops) {
    gf_layer_config *lc = &cfg->layers[l];
    memset(lc, 0, sizeof *lc);
    snprintf(lc->mixer, sizeof lc->mixer, "%s", ops->name);
    gf_keys_default(ops->keys, ops->n_keys, lc->params.bytes);
}

int gf_mixer_names(const char **names, int cap) {
    int n = gf_mixer_count();
    for (int i = 0; i < n && i < cap; i++) names[i] = gf_mixer_at(i)->name;
    return n;
}

char *gf_mixer_describe(const char *name) {
    const gf_mixer_ops *m = gf_mixer_find(name);
    if (!m) return NULL;
    size_t size = 4096 + strlen(m->help ? m->help : "");
    char *buf = malloc(size);
    if (!buf) return NULL;
    snprintf(buf, size, "%s%s%c%s\n%s\n  keys (in a layer's entry, or at the top level for every layer):\n",
             m->name, m->letter ? " (" : "", m->letter ? m->letter : ' ', m->letter ? ")" : "",
             m->help ? m->help : "");
    if (m->n_keys == 0) snprintf(buf + strlen(buf), size - strlen(buf), "    (none)\n");
    gf_key_help(m->keys, m->n_keys, buf, size);
    return buf;
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
