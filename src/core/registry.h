/* A registry of plug-ins (mixers, heads): a static table of built-in ones and those added at run time,
 * in that order. Adding is not thread-safe: register before models are built. */
#ifndef GF_CORE_REGISTRY_H
#define GF_CORE_REGISTRY_H

#define GF_REGISTRY_EXTRA 32

typedef struct gf_registry {
    const void *const *builtin;
    int n_builtin;
    const void *extra[GF_REGISTRY_EXTRA];
    int n_extra;
} gf_registry;

int gf_registry_count(const gf_registry *r);
/* Entry i in [0, count), NULL outside. */
const void *gf_registry_at(const gf_registry *r, int i);
/* Append p; fails (gf_fail naming `what`) when the registry is full. */
int gf_registry_add(gf_registry *r, const void *p, const char *what);

#endif
