/* Built-in model presets. All use norm "pre"; the paper's "post" is one --set away. */
#include <string.h>

#include "core/error.h"
#include "grassflow.h"

static const char *const g_names[] = {
    "grassmann-6L", "transformer-6L", "grassmann-12L", "transformer-12L", "grassmann-small", "transformer-small",
    "grassmann-tiny", "transformer-tiny", "hybrid-tiny", NULL,
};

const char *const *gf_preset_names(void) { return g_names; }

static void base(gf_config *c, int64_t n_layer, int64_t max_len, gf_mixer_kind mixer) {
    memset(c, 0, sizeof *c);
    c->vocab_size = 30522; /* bert-base-uncased WordPiece, as in the paper; --vocab N overrides */
    c->d_model = 256;
    c->n_layer = n_layer;
    c->n_head = 4;
    c->d_ff = 1024;
    c->max_len = max_len;
    c->rank = 32;
    static const int six[6] = {1, 2, 4, 8, 12, 16};
    for (int l = 0; l < GF_MAX_LAYERS; l++) {
        c->n_offsets[l] = 6;
        memcpy(c->offsets[l], six, sizeof six);
        c->mixers[l] = mixer;
    }
    c->norm = GF_NORM_PRE;
    c->plucker_eps = 1e-8f;
    c->extra_proj = false;
    c->tie_head = true;
    c->gelu = GF_GELU_ERF;
    c->pos = GF_POS_LEARNED;
    c->dropout = 0.1f;
}

/* The deeper models' schedule: one offset per layer, 1,1,2,2,4,4,8,8,12,12,16,16 over depth. */
static void schedule12(gf_config *c) {
    static const int sched[12] = {1, 1, 2, 2, 4, 4, 8, 8, 12, 12, 16, 16};
    for (int l = 0; l < 12; l++) {
        c->n_offsets[l] = 1;
        c->offsets[l][0] = sched[l];
    }
}

/* small: the quick-start model, a few minutes of WikiText-2 on two cores */
static void small(gf_config *c, gf_mixer_kind mixer) {
    base(c, 4, 128, mixer);
    c->d_model = 128;
    c->d_ff = 512;
    c->rank = 16;
}

static void tiny(gf_config *c, gf_mixer_kind mixer) {
    base(c, 2, 32, mixer);
    c->vocab_size = 64;
    c->d_model = 32;
    c->d_ff = 64;
    c->rank = 6;
    c->dropout = 0.0f;
}

int gf_config_preset(const char *name, gf_config *c) {
    if (!name) return gf_fail("no preset name given");
    if (!strcmp(name, "grassmann-6L")) base(c, 6, 128, GF_MIXER_GRASSMANN);
    else if (!strcmp(name, "transformer-6L")) base(c, 6, 128, GF_MIXER_ATTENTION);
    else if (!strcmp(name, "grassmann-12L")) { base(c, 12, 256, GF_MIXER_GRASSMANN); schedule12(c); }
    else if (!strcmp(name, "transformer-12L")) { base(c, 12, 256, GF_MIXER_ATTENTION); schedule12(c); }
    else if (!strcmp(name, "grassmann-small")) small(c, GF_MIXER_GRASSMANN);
    else if (!strcmp(name, "transformer-small")) small(c, GF_MIXER_ATTENTION);
    else if (!strcmp(name, "grassmann-tiny")) tiny(c, GF_MIXER_GRASSMANN);
    else if (!strcmp(name, "transformer-tiny")) tiny(c, GF_MIXER_ATTENTION);
    else if (!strcmp(name, "hybrid-tiny")) {
        tiny(c, GF_MIXER_GRASSMANN);
        c->n_layer = 3;
        c->mixers[1] = GF_MIXER_ATTENTION;
    } else {
        char list[512] = "";
        for (const char *const *p = g_names; *p; p++) {
            strncat(list, *p, sizeof list - strlen(list) - 1);
            if (p[1]) strncat(list, ", ", sizeof list - strlen(list) - 1);
        }
        return gf_fail("unknown model preset '%s'; expected one of: %s\nHINT: or give --config FILE.json",
                       name, list);
    }
    return 0;
}
