#include "mixers/mixer.h"

#include <stdio.h>

const gf_mixer_ops *gf_mixer_get(gf_mixer_kind kind) {
    switch (kind) {
    case GF_MIXER_GRASSMANN: return &gf_mixer_grassmann;
    case GF_MIXER_ATTENTION: return &gf_mixer_attention;
    default: return NULL;
    }
}

void gf_param_spec_set(gf_param_spec *s, const char *name, int ndim, int64_t rows, int64_t cols,
                       gf_init_kind init) {
    snprintf(s->name, sizeof s->name, "%s", name);
    s->ndim = ndim;
    s->shape[0] = rows;
    s->shape[1] = cols;
    s->init = init;
}
