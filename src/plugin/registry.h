/* A registry of plug-ins of one kind (mixers, heads): a static table of built-in ones and those added at
 * run time, in that order. Adding is not thread-safe: register before models are built. What a plug-in
 * must satisfy to be added is checked in plugin/plugin.h. */
#ifndef GF_PLUGIN_REGISTRY_H
#define GF_PLUGIN_REGISTRY_H

#include "grassflow_plugin.h" /* GF_PLUGIN_MAX_ADDED */

typedef struct gf_registry {
    const void *const *builtin;
    int n_builtin;
    const void *extra[GF_PLUGIN_MAX_ADDED];
    int n_extra;
} gf_registry;

int gf_registry_count(const gf_registry *r);
/* Entry i in [0, count), NULL outside. */
const void *gf_registry_at(const gf_registry *r, int i);
/* Append p; fails (gf_fail naming `what`) when the registry is full. */
int gf_registry_add(gf_registry *r, const void *p, const char *what);

#endif
