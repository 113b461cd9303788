/* The head registry: the built-in heads (one line each) and those registered at run time. */
#include "heads/head.h"

#include <string.h>

#include "core/error.h"
#include "core/registry.h"

extern const gf_head_ops gf_head_lm;
extern const gf_head_ops gf_head_classify;

static const gf_head_ops *const BUILTIN[] = {
    &gf_head_lm,
    &gf_head_classify,
};
static gf_registry g_heads = {(const void *const *)BUILTIN, (int)(sizeof BUILTIN / sizeof BUILTIN[0]), {0}, 0};

int gf_head_count(void) { return gf_registry_count(&g_heads); }
const gf_head_ops *gf_head_at(int i) { return gf_registry_at(&g_heads, i); }

const gf_head_ops *gf_head_find(const char *name) {
    for (int i = 0; name && i < gf_head_count(); i++)
        if (!strcmp(gf_head_at(i)->name, name)) return gf_head_at(i);
    return NULL;
}

/* A config built by hand with no task (all zero) is a language model. */
const gf_head_ops *gf_config_head(const gf_config *cfg) { return gf_head_find(cfg->task[0] ? cfg->task : "lm"); }

int gf_head_register(const gf_head_ops *ops) {
    if (!ops) return gf_fail("gf_head_register: no head given");
    const gf_plugin_desc d = {"gf_head_register", "head", ops->name, ops->version, GF_HEAD_OPS_VERSION,
                              GF_MIXER_NAME_MAX, ops->config_size, GF_HEAD_CONFIG_BYTES, ops->keys, ops->n_keys};
    if (gf_plugin_check(&d)) return -1;
    if (!ops->target_count || !ops->param_specs || !ops->out_floats || !ops->saved_floats || !ops->n_outputs ||
        !ops->forward || !ops->backward)
        return gf_fail("gf_head_register: head \"%s\" lacks a function", ops->name);
    if (gf_head_find(ops->name)) return gf_fail("gf_head_register: a head called \"%s\" exists already", ops->name);
    return gf_registry_add(&g_heads, ops, "heads (gf_head_register)");
}
