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
    if (!ops || !ops->name || !ops->name[0] || strlen(ops->name) >= GF_MIXER_NAME_MAX)
        return gf_fail("gf_head_register: a head needs a name of 1 to %d characters", GF_MIXER_NAME_MAX - 1);
    if (ops->version < 1 || ops->version > GF_HEAD_OPS_VERSION)
        return gf_fail("gf_head_register: head \"%s\" declares interface version %d; this grassflow knows 1 to %d",
                       ops->name, ops->version, GF_HEAD_OPS_VERSION);
    if (ops->config_size > GF_HEAD_CONFIG_BYTES)
        return gf_fail("gf_head_register: head \"%s\" has a %zu-byte config; at most %d fit", ops->name,
                       ops->config_size, GF_HEAD_CONFIG_BYTES);
    if (!ops->target_count || !ops->param_specs || !ops->out_floats || !ops->saved_floats || !ops->n_outputs ||
        !ops->forward || !ops->backward)
        return gf_fail("gf_head_register: head \"%s\" lacks a function", ops->name);
    char who[64];
    snprintf(who, sizeof who, "gf_head_register: head \"%s\"", ops->name);
    if (gf_keys_check(ops->keys, ops->n_keys, ops->config_size, who)) return -1;
    if (gf_head_find(ops->name)) return gf_fail("gf_head_register: a head called \"%s\" exists already", ops->name);
    return gf_registry_add(&g_heads, ops, "heads (gf_head_register)");
}
