/* The mixer registry: the built-in mixers (one line each) and those registered at run time. Every table,
 * built-in or added, passes the same check (gf_mixer_ops_check, plugin/plugin.c): gf_mixer_register runs it
 * before adding one, tests/unit/test_plugin.c runs it on each built-in (gf_mixer_check_at). */
#include "mixers/mixer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "plugin/registry.h"

extern const gf_mixer_ops gf_mixer_grassmann;
extern const gf_mixer_ops gf_mixer_attention;
extern const gf_mixer_ops gf_mixer_linformer;
extern const gf_mixer_ops gf_mixer_window;
extern const gf_mixer_ops gf_mixer_performer;
extern const gf_mixer_ops gf_mixer_gru;
extern const gf_mixer_ops gf_mixer_gru_attn;
extern const gf_mixer_ops gf_mixer_token_mlp;
extern const gf_mixer_ops gf_mixer_fixed_mix;
extern const gf_mixer_ops gf_mixer_attn_form;
extern const gf_mixer_ops gf_mixer_emb_qk;

/* The built-in mixers: a new one is its source file plus one line here. */
static const gf_mixer_ops *const BUILTIN[] = {
    &gf_mixer_grassmann,
    &gf_mixer_attention,
    &gf_mixer_linformer,
    &gf_mixer_window,
    &gf_mixer_performer,
    &gf_mixer_gru,
    &gf_mixer_gru_attn,
    &gf_mixer_token_mlp,
    &gf_mixer_fixed_mix,
    &gf_mixer_attn_form,
    &gf_mixer_emb_qk,
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
    if (gf_mixer_ops_check(ops, "gf_mixer_register", &g_mixers, gf_mixer_count())) return -1;
    return gf_registry_add(&g_mixers, ops, "mixers (gf_mixer_register)");
}

int gf_mixer_check_at(int i) {
    if (i < 0 || i >= gf_mixer_count()) return gf_fail("gf_mixer_check_at: no mixer %d (%d registered)", i, gf_mixer_count());
    return gf_mixer_ops_check(gf_mixer_at(i), i < g_mixers.n_builtin ? "built-in mixer (src/mixers/mixer.c)" : "gf_mixer_register",
                              &g_mixers, i);
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
