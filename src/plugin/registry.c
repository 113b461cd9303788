/* The plug-in registries' store (plugin/registry.h): built-ins first, then those added. */
#include "plugin/registry.h"

#include "base/error.h"

int gf_registry_count(const gf_registry *r) { return r->n_builtin + r->n_extra; }

const void *gf_registry_at(const gf_registry *r, int i) {
    if (i < 0 || i >= gf_registry_count(r)) return 0;
    return i < r->n_builtin ? r->builtin[i] : r->extra[i - r->n_builtin];
}

int gf_registry_add(gf_registry *r, const void *p, const char *what) {
    if (r->n_extra == GF_PLUGIN_MAX_ADDED) return gf_fail("at most %d %s can be added", GF_PLUGIN_MAX_ADDED, what);
    r->extra[r->n_extra++] = p;
    return 0;
}
