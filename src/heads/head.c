/* The head registry: the built-in heads (one line each) and those registered at run time. Every table,
 * built-in or added, passes the same check (gf_head_ops_check, plugin/plugin.c): gf_head_register runs it
 * before adding one, tests/unit/test_plugin.c runs it on each built-in (gf_head_check_at). */
#include "heads/head.h"

#include <string.h>

#include "base/error.h"
#include "plugin/registry.h"

extern const gf_head_ops gf_head_next_token;
extern const gf_head_ops gf_head_classify;

static const gf_head_ops *const BUILTIN[] = {
    &gf_head_next_token,
    &gf_head_classify,
};
static gf_registry g_heads = {(const void *const *)BUILTIN, (int)(sizeof BUILTIN / sizeof BUILTIN[0]), {0}, 0};

int gf_head_count(void) { return gf_registry_count(&g_heads); }
const gf_head_ops *gf_head_at(int i) { return gf_registry_at(&g_heads, i); }

const gf_head_ops *gf_head_find(const char *name) {
    if (name && !strcmp(name, "lm")) name = "next_token"; /* its name in config formats 1 and 2 */
    for (int i = 0; name && i < gf_head_count(); i++)
        if (!strcmp(gf_head_at(i)->name, name)) return gf_head_at(i);
    return NULL;
}

/* A config built by hand with no head kind (all zero) predicts the next token. */
const gf_head_ops *gf_config_head(const gf_config *cfg) {
    return gf_head_find(cfg->head_kind[0] ? cfg->head_kind : "next_token");
}

int gf_head_register(const gf_head_ops *ops) {
    if (ops && ops->name && !strcmp(ops->name, "lm")) /* taken: the old name of next_token (config formats 1, 2) */
        return gf_fail("gf_head_register: a head called \"lm\" is already registered (next_token, by its name in "
                       "config formats 1 and 2)");
    if (gf_head_ops_check(ops, "gf_head_register", &g_heads, gf_head_count())) return -1;
    return gf_registry_add(&g_heads, ops, "heads (gf_head_register)");
}

int gf_head_check_at(int i) {
    if (i < 0 || i >= gf_head_count()) return gf_fail("gf_head_check_at: no head %d (%d registered)", i, gf_head_count());
    return gf_head_ops_check(gf_head_at(i), i < g_heads.n_builtin ? "built-in head (src/heads/head.c)" : "gf_head_register",
                             &g_heads, i);
}
