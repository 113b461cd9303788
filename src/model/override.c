/* Evaluation-time overrides of the Grassmann layers (gf_model_set_override): a copy of the model's config in
 * which a layer's offsets lack D, or its gate is forced to 0 or 1. The batch forward hands the copy to the
 * mixers (model.c, mixer_call: one pointer test per layer); every other part of the model reads its own
 * config. Dropping an offset is therefore exactly the model whose config does not list it: the weights do not
 * depend on the offsets, and the mixer computes from the copy what it computes from such a config. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "mixers/grassmann.h"
#include "model/model_internal.h"

bool gf_layer_is_grassmann(const gf_model *m, int l) { return !strcmp(m->mixer[l]->name, "grassmann"); }

static gf_grassmann_config *grassmann_of(gf_config *c, int l) {
    return (gf_grassmann_config *)(void *)c->layers[l].params.bytes;
}

/* The Grassmann layers of m as "0, 2" into buf ("none" if there is none). */
static const char *grassmann_layers(const gf_model *m, char *buf, size_t n) {
    size_t at = 0;
    buf[0] = '\0';
    for (int l = 0; l < m->n_layers && at < n; l++)
        if (gf_layer_is_grassmann(m, l)) at += (size_t)snprintf(buf + at, n - at, "%s%d", at ? ", " : "", l);
    if (!buf[0]) snprintf(buf, n, "none");
    return buf;
}

/* Layer l's offsets as "1, 2, 4" into buf. */
static const char *offsets_text(const gf_grassmann_config *g, char *buf, size_t n) {
    size_t at = 0;
    buf[0] = '\0';
    for (int o = 0; o < g->n_offsets && at < n; o++)
        at += (size_t)snprintf(buf + at, n - at, "%s%d", o ? ", " : "", g->offsets[o]);
    return buf;
}

static bool lists(const gf_grassmann_config *g, int D) {
    for (int o = 0; o < g->n_offsets; o++)
        if (g->offsets[o] == D) return true;
    return false;
}

/* Override o applied to layer l of c (a Grassmann layer of m): its offsets without D, its gate forced. 0, or -1
 * naming the layer when it lacks what o changes (with `every`, a layer that does not list D is skipped). */
static int apply_layer(const gf_model *m, gf_config *c, int l, const gf_override *o, bool every, bool *hit) {
    gf_grassmann_config *g = grassmann_of(c, l);
    char buf[160];
    if (o->drop_offset > 0 && !lists(g, o->drop_offset)) {
        if (every) return 0;
        return gf_fail("override: layer %d's offsets are %s; %d is not among them\nHINT: drop one of the offsets "
                       "it lists (grassflow info --ckpt FILE shows each layer's)", l,
                       offsets_text(grassmann_of((gf_config *)&m->cfg, l), buf, sizeof buf), o->drop_offset);
    }
    if (o->gate != GF_GATE_LEARNED && !g->gate)
        return gf_fail("override: layer %d has no gate to force (its config has gate false: m = (h + g) / 2)\n"
                       "HINT: force the gate of a layer that has one%s", l, every ? ", naming it" : "");
    int n = 0;
    for (int k = 0; k < g->n_offsets; k++)
        if (g->offsets[k] != o->drop_offset) g->offsets[n++] = g->offsets[k];
    g->n_offsets = n; /* 0 when D was its only offset: S_t is empty, g = 0 at every position */
    if (o->gate != GF_GATE_LEARNED) g->force_gate = (uint8_t)o->gate;
    *hit = true;
    return 0;
}

/* Override o applied to c: 0, or -1 (gf_fail) for a layer or a value the model does not have. */
static int apply(const gf_model *m, gf_config *c, const gf_override *o) {
    char buf[256];
    if (o->layer < -1 || o->layer >= m->n_layers)
        return gf_fail("override: layer %d; this model has layers 0 to %d", o->layer, m->n_layers - 1);
    if (o->drop_offset < 0 || (o->gate != GF_GATE_LEARNED && o->gate != GF_GATE_ONE && o->gate != GF_GATE_ZERO))
        return gf_fail("override: drop_offset %d and gate %d; expected an offset >= 1 (0: none) and a gf_gate_force",
                       o->drop_offset, (int)o->gate);
    if (o->layer >= 0 && !gf_layer_is_grassmann(m, o->layer))
        return gf_fail("override: layer %d's mixer is %s; offsets and gates are a Grassmann layer's (this model's "
                       "Grassmann layers: %s)", o->layer, m->mixer[o->layer]->name,
                       grassmann_layers(m, buf, sizeof buf));
    bool hit = false;
    for (int l = o->layer < 0 ? 0 : o->layer; l <= (o->layer < 0 ? m->n_layers - 1 : o->layer); l++)
        if (gf_layer_is_grassmann(m, l) && apply_layer(m, c, l, o, o->layer < 0, &hit)) return -1;
    if (!hit && grassmann_layers(m, buf, sizeof buf)[0] == 'n')
        return gf_fail("override: this model has no Grassmann layer (layer 0's mixer is %s); offsets and gates are a "
                       "Grassmann layer's", m->mixer[0]->name);
    if (!hit)
        return gf_fail("override: no Grassmann layer lists offset %d (layers %s)\nHINT: the offsets each layer lists: "
                       "grassflow info --ckpt FILE", o->drop_offset, buf);
    return 0;
}

int gf_model_set_override(gf_model *m, const gf_override *o, int n) {
    if (n < 0 || (n > 0 && !o)) return gf_fail("gf_model_set_override: %d overrides at %p", n, (const void *)o);
    m->have_forward = false; /* the activations are the last forward's, under the other overrides: no backward */
    if (n == 0) {
        free(m->ovr_cfg);
        m->ovr_cfg = NULL;
        return 0;
    }
    gf_config *c = malloc(sizeof *c);
    if (!c) return gf_fail("out of memory for an override");
    memcpy(c, &m->cfg, sizeof *c);
    for (int i = 0; i < n; i++)
        if (apply(m, c, &o[i])) {
            free(c);
            return -1;
        }
    free(m->ovr_cfg);
    m->ovr_cfg = c;
    return 0;
}

bool gf_model_has_override(const gf_model *m) { return m->ovr_cfg != NULL; }
