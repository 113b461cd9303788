/* What each layer of a language model does with one text (gf_model_inspect; grassflow inspect), or of an
 * encoder-decoder with one source and target (gf_model_inspect_pair): one forward, then each layer's mixer probed
 * on the input it received there (mixers/grassmann.c: the terms offset by offset, the gate, the Pluecker
 * coordinates; mixers/attention.c: the attention weights; a decoder layer's attention over the source), then the
 * text scored again under each override an offset study asks for (model/override.c): each offset of each
 * Grassmann layer dropped, each gate forced to 0 and to 1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "mixers/attn_common.h"
#include "mixers/grassmann.h"
#include "model/model_internal.h"

/* What is inspected: the decoder's (a language model's) ids, and an encoder-decoder's source (NULL: none). */
typedef struct {
    const int32_t *source, *ids;
    int64_t S, n;
} inspect_in;

/* in's next-token loss: the mean into *loss, each position's into token_loss (NULL: not wanted). */
static int score_in(gf_model *m, const inspect_in *in, double *loss, float *token_loss) {
    const int32_t *ids = in->ids;
    const int64_t n = in->n;
    if (n < 2)
        return gf_fail("scoring a text: %lld token%s; a next-token loss needs 2 or more (ids[t + 1] is predicted from "
                       "position t)", (long long)n, n == 1 ? "" : "s");
    int32_t *tg = malloc((size_t)n * sizeof *tg);
    if (!tg) return gf_fail("out of memory scoring %lld tokens", (long long)n);
    for (int64_t t = 0; t < n; t++) tg[t] = t + 1 < n ? ids[t + 1] : -1;
    float lf = NAN;
    const gf_batch b = {.B = 1, .T = n, .ids = ids, .targets = tg, .S = in->S, .source = in->source};
    const int rc = gf_model_forward_batch(m, &b, &lf);
    free(tg);
    if (rc) return -1;
    *loss = lf;
    const int64_t V = m->cfg.vocab_size;
    for (int64_t t = 0; token_loss && t < n; t++)
        token_loss[t] = t + 1 < n ? gf_log_softmax_nll(m->out + t * V, V, ids[t + 1]) : NAN;
    return 0;
}

int gf_model_score(gf_model *m, const int32_t *ids, int64_t n, double *loss, float *token_loss) {
    if (gf_model_require_next_token(m, "scoring a text") || !ids) return -1;
    if (m->cfg.input != GF_INPUT_TOKENS) return gf_fail("scoring a text: this model reads vectors, not token ids");
    const inspect_in in = {.ids = ids, .n = n};
    return score_in(m, &in, loss, token_loss);
}

/* n zeroed elements of size el, or NULL with *oom set (one check after many allocations). */
static void *need(size_t n, size_t el, bool *oom) {
    void *p = calloc(n ? n : 1, el);
    *oom |= p == NULL;
    return p;
}

/* Layer l of the last forward's model, a Grassmann layer over P positions (the target's T, or the source's in
 * an encoder): what its probe gives, with its gate's mean over the channels and each offset's share. A
 * bidirectional layer's entries: the config's offsets D (partner t - D), then -D (partner t + D). */
static int grassmann_layer(gf_model *m, int l, gf_inspect_layer *L, int64_t P, int64_t T) {
    const gf_grassmann_config *g = gf_layer_mcfg(&m->cfg, l);
    const bool both = gf_stack_direction(&m->cfg, gf_layer_stack(&m->cfg, l)) != GF_CAUSAL;
    const int64_t d = L->d, K = both ? 2 * g->n_offsets : g->n_offsets;
    bool oom = false;
    L->kind = GF_INSPECT_GRASSMANN;
    L->n_offsets = (int)K, L->rank = g->rank, L->heads = g->heads;
    L->offsets = need((size_t)K, sizeof *L->offsets, &oom);
    L->n_valid = need((size_t)P, sizeof *L->n_valid, &oom);
    L->valid = need((size_t)(P * K), sizeof *L->valid, &oom);
    L->contrib = need((size_t)(P * K), sizeof *L->contrib, &oom);
    L->share = need((size_t)(P * K), sizeof *L->share, &oom);
    L->drop_loss = need((size_t)K, sizeof *L->drop_loss, &oom);
    L->drop_token_loss = need((size_t)(T * K), sizeof *L->drop_token_loss, &oom);
    L->n_coords = gf_grassmann_n_coords(&m->cfg, l);
    L->coord_i = need((size_t)L->n_coords, sizeof *L->coord_i, &oom);
    L->coord_j = need((size_t)L->n_coords, sizeof *L->coord_j, &oom);
    L->coord = need((size_t)(P * L->n_coords), sizeof *L->coord, &oom);
    if (g->gate) L->gate = need((size_t)(P * d), sizeof *L->gate, &oom), L->gate_mean = need((size_t)P, sizeof(float), &oom);
    if (oom) return gf_fail("out of memory inspecting layer %d over %lld tokens", l, (long long)P);
    for (int64_t o = 0; o < K; o++) L->offsets[o] = o < g->n_offsets ? g->offsets[o] : -g->offsets[o - g->n_offsets];
    gf_grassmann_coord_dims(&m->cfg, l, L->coord_i, L->coord_j);
    const gf_grassmann_probe p = {.contrib = L->contrib, .n_valid = L->n_valid, .valid = L->valid, .coord = L->coord,
                                  .gate = L->gate};
    if (gf_grassmann_probe_run(&m->cfg, l, m->lp[l].mix, gf_model_mixer_input(m, l), P, &p)) return -1;
    for (int64_t t = 0; t < P; t++) {
        double sum = 0.0, a = 0.0;
        for (int64_t o = 0; o < K; o++) sum += L->contrib[t * K + o];
        for (int64_t o = 0; o < K; o++) L->share[t * K + o] = sum > 0 ? (float)(L->contrib[t * K + o] / sum) : 0.0f;
        for (int64_t c = 0; L->gate && c < d; c++) a += L->gate[t * d + c];
        if (L->gate_mean) L->gate_mean[t] = (float)(a / (double)d);
    }
    return 0;
}

/* A decoder layer's attention over the source in the last forward (cross, cross_heads). */
static int cross_layer(gf_model *m, int l, gf_inspect_layer *L, int64_t T, int64_t S) {
    L->cross_heads = gf_model_cross_heads(m, l);
    if (!L->cross_heads) return 0;
    L->cross = malloc((size_t)(L->cross_heads * T * S) * sizeof *L->cross);
    if (!L->cross) return gf_fail("out of memory for layer %d's attention over the source", l);
    return gf_model_cross_attention(m, l, L->cross);
}

/* Layer l of the last forward, whatever its mixer: its name, its width, and what its kind has to show. */
static int inspect_layer(gf_model *m, int l, gf_inspect_layer *L, const inspect_in *in) {
    const int64_t T = in->n;
    L->layer = l;
    L->d = gf_layer_dim(&m->cfg, l);
    L->gate_loss[0] = L->gate_loss[1] = NAN;
    L->encoder = in->source && gf_layer_stack(&m->cfg, l) == 0;
    const int64_t P = L->positions = L->encoder ? in->S : T;
    snprintf(L->mixer, sizeof L->mixer, "%s", m->mixer[l]->name);
    if (in->source && !L->encoder && cross_layer(m, l, L, T, in->S)) return -1;
    if (gf_layer_is_grassmann(m, l)) return grassmann_layer(m, l, L, P, T);
    if (strcmp(m->mixer[l]->name, "attention")) return 0; /* another kind: its name alone */
    L->kind = GF_INSPECT_ATTENTION;
    L->n_head = gf_attn_n_head(&m->cfg, l);
    L->attn = malloc((size_t)(L->n_head * P * P) * sizeof *L->attn);
    if (!L->attn) return gf_fail("out of memory for layer %d's attention weights over %lld tokens", l, (long long)P);
    return gf_attention_weights(&m->cfg, l, m->lp[l].mix, gf_model_mixer_input(m, l), P, L->attn);
}

/* The text scored under override o alone: the mean loss, each position's into tok (T). */
static int score_under(gf_model *m, const inspect_in *in, gf_override o, double *loss, float *tok) {
    if (gf_model_set_override(m, &o, 1)) return -1;
    const int rc = score_in(m, in, loss, tok);
    gf_model_set_override(m, NULL, 0);
    return rc;
}

/* Grassmann layer L scored with each of its offsets dropped (an offset listed twice, or a bidirectional layer's
 * -D: once, every entry of it taking the loss), then with its gate forced to 0 and to 1. */
static int overrides_of(gf_model *m, const inspect_in *in, gf_inspect_layer *L, float *tok) {
    const int K = L->n_offsets;
    const int64_t T = in->n;
    for (int o = 0; o < K; o++) {
        int first = o; /* the first entry of this offset */
        for (int k = o - 1; k >= 0; k--) first = abs(L->offsets[k]) == abs(L->offsets[o]) ? k : first;
        if (first == o && score_under(m, in, (gf_override){L->layer, abs(L->offsets[o]), GF_GATE_LEARNED},
                                      &L->drop_loss[o], tok)) return -1;
        L->drop_loss[o] = L->drop_loss[first];
        for (int64_t t = 0; t < T; t++) L->drop_token_loss[t * K + o] = first == o ? tok[t] : L->drop_token_loss[t * K + first];
    }
    for (int a = 0; L->gate && a < 2; a++)
        if (score_under(m, in, (gf_override){L->layer, 0, a ? GF_GATE_ONE : GF_GATE_ZERO}, &L->gate_loss[a], tok))
            return -1;
    return 0;
}

/* 0 when every Grassmann and attention layer of m is causal (what inspect reads); else the error. */
static int causal_layers(const gf_model *m) {
    for (int l = 0; l < m->n_layers; l++)
        if ((gf_layer_is_grassmann(m, l) || !strcmp(m->mixer[l]->name, "attention")) &&
            gf_stack_direction(&m->cfg, gf_layer_stack(&m->cfg, l)) != GF_CAUSAL)
            return gf_fail("inspect: layer %d is bidirectional; inspect reads causal layers (a language model's)", l);
    return 0;
}

static int no_overrides(const gf_model *m) {
    if (!m->ovr_cfg) return 0;
    return gf_fail("inspect: the model has evaluation-time overrides; inspect sets its own\nHINT: clear them first: "
                   "gf_model_set_override(m, NULL, 0)");
}

static gf_inspection *inspect_run(gf_model *m, const inspect_in *in) {
    const int64_t n = in->n, S = in->source ? in->S : 0;
    gf_inspection *x = calloc(1, sizeof *x);
    bool oom = x == NULL;
    if (x) {
        x->T = n, x->S = S, x->n_layers = m->n_layers;
        x->ids = need((size_t)(n > 0 ? n : 1), sizeof *x->ids, &oom);
        x->token_loss = need((size_t)(n > 0 ? n : 1), sizeof *x->token_loss, &oom);
        x->layers = need((size_t)m->n_layers, sizeof *x->layers, &oom);
        if (S > 0) x->source = need((size_t)S, sizeof *x->source, &oom);
    }
    float *tok = need((size_t)(n > 0 ? n : 1), sizeof *tok, &oom);
    int rc = oom ? gf_fail("out of memory inspecting %lld tokens", (long long)n) : 0;
    if (!rc && n > 0) memcpy(x->ids, in->ids, (size_t)n * sizeof *in->ids);
    if (!rc && S > 0) memcpy(x->source, in->source, (size_t)S * sizeof *in->source);
    if (!rc) rc = score_in(m, in, &x->loss, x->token_loss);
    for (int l = 0; !rc && l < m->n_layers; l++) rc = inspect_layer(m, l, &x->layers[l], in); /* this forward's */
    for (int l = 0; !rc && l < m->n_layers; l++)
        if (x->layers[l].kind == GF_INSPECT_GRASSMANN) rc = overrides_of(m, in, &x->layers[l], tok);
    free(tok);
    if (rc) {
        gf_inspection_free(x);
        return NULL;
    }
    return x;
}

gf_inspection *gf_model_inspect(gf_model *m, const int32_t *ids, int64_t n) {
    if (no_overrides(m) || causal_layers(m) || gf_model_require_next_token(m, "inspect")) return NULL;
    if (!ids) return gf_fail("inspect: no ids"), NULL;
    const inspect_in in = {.ids = ids, .n = n};
    return inspect_run(m, &in);
}

gf_inspection *gf_model_inspect_pair(gf_model *m, const int32_t *source, int64_t S, const int32_t *ids, int64_t n) {
    if (no_overrides(m)) return NULL;
    if (m->cfg.source_vocab < 1 || !gf_model_predicts_next_token(m)) {
        gf_fail("inspect: the model is not an encoder-decoder (source_vocab 0)\nHINT: gf_model_inspect reads a "
                "language model");
        return NULL;
    }
    if (!source || S < 1 || !ids) return gf_fail("inspect: an empty source or no target ids"), NULL;
    const inspect_in in = {.source = source, .S = S, .ids = ids, .n = n};
    return inspect_run(m, &in);
}

void gf_inspection_free(gf_inspection *x) {
    if (!x) return;
    for (int l = 0; x->layers && l < x->n_layers; l++) {
        gf_inspect_layer *L = &x->layers[l];
        void *arrays[] = {L->offsets, L->n_valid, L->valid, L->gate, L->gate_mean, L->contrib, L->share, L->drop_loss,
                          L->drop_token_loss, L->coord_i, L->coord_j, L->coord, L->attn, L->cross};
        for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) free(arrays[i]);
    }
    free(x->layers);
    free(x->source);
    free(x->ids);
    free(x->token_loss);
    free(x);
}

int64_t gf_model_cross_heads(const gf_model *m, int layer) {
    if (layer < 0 || layer >= m->n_layers) return 0;
    if (gf_block_kind_has_cross(m->block[layer])) return m->cfg.cross_heads > 0 ? m->cfg.cross_heads : 1;
    const gf_mixer_ops *o = m->mixer[layer];
    return gf_mixer_reads_memory(o) && o->memory_weights ? 1 : 0;
}

/* The cross op's saved q (N, d), k (B S, d) and log-sum-exp (B, H, T) (model/block.c, cross_forward) give
 * back its weights: w = exp(q_h . k_h / sqrt(dh) - lse), 0 at padded source positions. */
static void cross_op_weights(const gf_model *m, int layer, float *out) {
    const block_memory *mem = &m->memory;
    const int64_t B = mem->B, S = mem->S, d = m->cfg.d_model, H = m->cfg.cross_heads > 0 ? m->cfg.cross_heads : 1;
    const int64_t T = m->T, N = B * T, dh = d / H;
    const float *q = m->la[layer].cross_saved, *k = q + N * d, *lse = k + 2 * B * S * d + N * d;
    const float scale = 1.0f / sqrtf((float)dh);
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t t = 0; t < T; t++) {
                const float *qr = q + (b * T + t) * d + h * dh, l = lse[(b * H + h) * T + t];
                float *o = out + ((b * H + h) * T + t) * S;
                for (int64_t s = 0; s < S; s++) {
                    const float *kr = k + (b * S + s) * d + h * dh;
                    float dot = 0.0f;
                    for (int64_t i = 0; i < dh; i++) dot += qr[i] * kr[i];
                    o[s] = mem->mask && !mem->mask[b * S + s] ? 0.0f : expf(dot * scale - l);
                }
            }
}

int gf_model_cross_attention(const gf_model *m, int layer, float *out) {
    if (!m->have_forward) return gf_fail("cross-attention weights: no forward has run yet");
    const int64_t H = gf_model_cross_heads(m, layer);
    if (H == 0)
        return gf_fail("cross-attention weights: layer %d has no cross op and its mixer does not attend to the "
                       "source (an encoder-decoder's decoder layers do)", layer);
    if (gf_block_kind_has_cross(m->block[layer])) {
        cross_op_weights(m, layer, out);
        return 0;
    }
    const gf_mixer_call c = gf_model_mixer_call((gf_model *)m, layer); /* reads, writes nothing */
    m->mixer[layer]->memory_weights(&c, out);
    return 0;
}
