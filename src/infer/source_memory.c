/* One source's memory for a streamed decoder (infer/source_memory.h). */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/mem.h"
#include "infer/source_memory.h"
#include "model/model_internal.h"

void gf_source_memory_free(gf_source_memory *mem) {
    if (!mem) return;
    gf_free(mem->x);
    for (int l = 0; l < GF_MAX_LAYERS; l++) gf_free(mem->kv[l]), gf_free(mem->work[l]);
    free(mem);
}

/* Decoder layer l's keys (a cross op's, or what its mixer's first step will put in its work). */
static int layer_keys(const gf_model *m, gf_source_memory *mem, int l) {
    const gf_config *c = &m->cfg;
    const int64_t d = gf_layer_dim(c, l), S = mem->bm.S;
    if (gf_block_kind_has_cross(m->block[l])) {
        if (!(mem->kv[l] = gf_alloc_floats(2 * S * d, "a decoder layer's keys and values"))) return -1;
        gf_block_cross_keys(&m->lp[l], &mem->bm, d, mem->kv[l]);
    }
    if (gf_mixer_reads_memory(m->mixer[l]) && m->mixer[l]->memory_floats) {
        const int64_t n = m->mixer[l]->memory_floats(c, l, 1, 2, S);
        if (!(mem->work[l] = gf_alloc_floats(n, "a decoder layer's memory work"))) return -1;
        memset(mem->work[l], 0, (size_t)n * sizeof(float));
    }
    return 0;
}

gf_source_memory *gf_source_memory_create(gf_model *m, const int32_t *source, int64_t S) {
    const gf_config *c = &m->cfg;
    gf_source_memory *mem = calloc(1, sizeof *mem);
    if (!mem) {
        gf_fail("out of memory for a source's memory");
        return NULL;
    }
    /* the encoder, through a forward of one target token (the decoder's share of it is one position) */
    const int32_t first = 0;
    const gf_batch b = {.B = 1, .T = 1, .ids = &first, .S = S, .source = source};
    mem->first = gf_stack_first_layer(c, 1);
    if (gf_model_forward_batch(m, &b, NULL) || !(mem->x = gf_alloc_floats(S * c->d_model, "a source's memory"))) {
        gf_source_memory_free(mem);
        return NULL;
    }
    memcpy(mem->x, m->memory.x, (size_t)(S * c->d_model) * sizeof(float));
    mem->bm = (block_memory){.x = mem->x, .B = 1, .S = S, .d = c->d_model};
    for (int l = mem->first; l < m->n_layers; l++)
        if (layer_keys(m, mem, l)) {
            gf_source_memory_free(mem);
            return NULL;
        }
    return mem;
}
