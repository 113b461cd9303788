/* A model's matrices as int8 or bf16 for generation (gf_model_set_weights in grassflow.h): the copies
 * the door's one-row matmuls run on (compute/lowp.h), and the values they stand for in the fp32 tensors. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "compute/lowp.h"
#include "compute/quant.h"
#include "model/model_internal.h"

const char *gf_weights_name(gf_weights w) {
    return w == GF_WEIGHTS_INT8 ? "int8" : w == GF_WEIGHTS_BF16 ? "bf16" : "fp32";
}

int gf_weights_parse(const char *s, gf_weights *w) {
    if (!strcmp(s, "fp32")) *w = GF_WEIGHTS_FP32;
    else if (!strcmp(s, "bf16")) *w = GF_WEIGHTS_BF16;
    else if (!strcmp(s, "int8")) *w = GF_WEIGHTS_INT8;
    else return -1;
    return 0;
}

gf_weights gf_model_weights(const gf_model *m) { return (gf_weights)m->weights; }

const char *gf_weights_kernel(gf_weights w) {
    if (w == GF_WEIGHTS_INT8) return gf_lowp_kernel_name(gf_int8_kernel(), true);
    if (w == GF_WEIGHTS_BF16) return gf_lowp_kernel_name(gf_bf16_gemv_kernel(), false);
    return gf_blas_kernel() ? gf_blas_kernel() : "unknown";
}

bool gf_weights_eligible(const gf_tensor_info *t) {
    return t->ndim == 2 && t->trainable && strncmp(t->name, "pos_emb.", 8) && strncmp(t->name, "seg_emb.", 8);
}

/* The copies' storage: one block per matrix, in a list freed with the model. */
typedef struct lowp_block {
    struct lowp_block *next;
    const gf_tensor_info *t;
    uint8_t *u8;
    float *scale;
    uint16_t *h;
} lowp_block;

bool gf_model_lowp_of(const gf_model *m, const gf_tensor_info *t, const uint8_t **u8, const float **scale,
                      const uint16_t **h) {
    for (const lowp_block *b = m->lowp; b; b = b->next)
        if (b->t == t) {
            *u8 = b->u8, *scale = b->scale, *h = b->h;
            return true;
        }
    return false;
}

int gf_model_attach_lowp(gf_model *m, const gf_tensor_info *t, int kind, uint8_t *u8, float *scale, uint16_t *h) {
    lowp_block *b = malloc(sizeof *b);
    const gf_lowp_mat lm = {.kind = kind, .w = t->data, .rows = t->shape[0], .cols = t->shape[1], .u8 = u8,
                            .scale = scale, .h = h};
    if (!b || gf_lowp_add(&lm)) {
        free(b), free(u8), free(scale), free(h);
        return b ? -1 : gf_fail("out of memory for the low-precision copy of %s", t->name);
    }
    *b = (lowp_block){.next = m->lowp, .t = t, .u8 = u8, .scale = scale, .h = h};
    m->lowp = b;
    m->weights = kind;
    return 0;
}

void gf_model_free_lowp(gf_model *m) {
    if (!m->lowp) return;
    gf_lowp_remove(m->params, m->params + m->n_params);
    for (lowp_block *b = m->lowp, *next; b; b = next) {
        next = b->next;
        free(b->u8), free(b->scale), free(b->h);
        free(b);
    }
    m->lowp = NULL;
}

/* t quantized: its int8 codes (+128) and row scales, and q * scale written back into t->data. */
static int to_int8(gf_model *m, const gf_tensor_info *t) {
    const int64_t R = t->shape[0], C = t->shape[1];
    if (C > GF_LOWP_MAX_COLS)
        return gf_fail("%s has %lld columns; int8 weights take at most %d", t->name, (long long)C, GF_LOWP_MAX_COLS);
    uint8_t *u8 = malloc((size_t)(R * C));
    float *scale = malloc((size_t)R * sizeof *scale);
    int8_t *q = malloc((size_t)C);
    if (!u8 || !scale || !q) {
        free(u8), free(scale), free(q);
        return gf_fail("out of memory making %s int8", t->name);
    }
    for (int64_t r = 0; r < R; r++) {
        float *w = t->data + r * C;
        gf_quant_int8_row(w, C, q, &scale[r]);
        for (int64_t c = 0; c < C; c++) {
            u8[r * C + c] = (uint8_t)(q[c] + 128);
            w[c] = (float)q[c] * scale[r];
        }
    }
    free(q);
    return gf_model_attach_lowp(m, t, GF_WEIGHTS_INT8, u8, scale, NULL);
}

/* t rounded to bfloat16: the copy, and its values written back into t->data. */
static int to_bf16(gf_model *m, const gf_tensor_info *t) {
    const int64_t n = t->numel;
    uint16_t *h = malloc((size_t)n * sizeof *h);
    if (!h) return gf_fail("out of memory making %s bf16", t->name);
    gf_bf16_from_f32_naive(h, t->data, 1, n, n);
    for (int64_t i = 0; i < n; i++) t->data[i] = gf_bf16_to_f32(h[i]);
    return gf_model_attach_lowp(m, t, GF_WEIGHTS_BF16, NULL, NULL, h);
}

int gf_model_set_weights(gf_model *m, gf_weights w) {
    if (w != GF_WEIGHTS_FP32 && w != GF_WEIGHTS_BF16 && w != GF_WEIGHTS_INT8)
        return gf_fail("weights %d: expected fp32, bf16 or int8", (int)w);
    if (w == (gf_weights)m->weights) return 0;
    if (m->weights != GF_WEIGHTS_FP32)
        return gf_fail("the model's weights are %s already: they cannot be made %s (load the fp32 checkpoint)",
                       gf_weights_name((gf_weights)m->weights), gf_weights_name(w));
    for (int i = 0; i < m->n_tensors; i++) {
        const gf_tensor_info *t = &m->tensors[i];
        if (!gf_weights_eligible(t)) continue;
        if (w == GF_WEIGHTS_INT8 ? to_int8(m, t) : to_bf16(m, t)) return -1;
    }
    return 0;
}
