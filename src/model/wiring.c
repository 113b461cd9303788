/* The wiring around the blocks, written once for the batch forward (model/model.c) and the streaming
 * step (infer/stream.c): the embedding, a further stack's entry projection, the final LayerNorm and the
 * head. A stream's token is the N = 1 case of the batch's rows (model/model_internal.h). */
#include "model/model_internal.h"
#include "ops/ops.h"

void gf_pos_row(const gf_config *c, float *row, int64_t p) {
    if (c->pos == GF_POS_SINUSOIDAL_2D) gf_sinusoidal2d_row(row, p, c->d_model, c->pos_grid);
    else gf_sinusoidal_row(row, p, c->d_model);
}

const float *gf_pos_rows(const gf_model *m, int64_t pos0, int64_t T, const float *table, float *buf) {
    const int64_t d = m->cfg.d_model;
    switch (m->cfg.pos) {
    case GF_POS_LEARNED: return m->pos_emb + pos0 * d;
    case GF_POS_SINUSOIDAL:
    case GF_POS_SINUSOIDAL_2D:
        if (table) return table + pos0 * d;
        for (int64_t t = 0; t < T; t++) gf_pos_row(&m->cfg, buf + t * d, pos0 + t);
        return buf;
    default: return NULL;
    }
}

const float *gf_source_pos_rows(const gf_model *m, int64_t pos0, int64_t T, const float *table, float *buf) {
    if (m->cfg.pos == GF_POS_LEARNED) return m->src_pos + pos0 * m->cfg.d_model;
    return gf_pos_rows(m, pos0, T, table, buf);
}

void gf_embed_rows(const gf_model *m, const gf_embed_in *in, float *out, float *sum, float *mean, float *rstd) {
    const gf_config *c = &m->cfg;
    const int64_t B = in->B, T = in->T, d = c->d_model;
    float *h = c->emb_norm ? sum : out; /* the sum of the embeddings, before emb_ln */
    if (c->input == GF_INPUT_TOKENS) {
        gf_embed_forward(h, in->ids, in->table ? in->table : m->tok_emb, in->pos, B, T, d);
        for (int64_t n = 0; c->segments > 0 && n < B * T; n++) {
            const float *s = m->seg_emb + (int64_t)(in->segs ? in->segs[n] : 0) * d;
            for (int64_t k = 0; k < d; k++) h[n * d + k] += s[k];
        }
    } else {
        gf_linear_forward(h, in->vectors, c->d_input, m->in_w, c->d_input, m->in_b, B * T, c->d_input, d, 0.0f);
        for (int64_t n = 0; in->pos && n < B * T; n++)
            for (int64_t k = 0; k < d; k++) h[n * d + k] += in->pos[(n % T) * d + k];
    }
    if (c->emb_norm) gf_layernorm_forward(out, mean, rstd, sum, m->embln_w, m->embln_b, B * T, d, c->ln_eps);
}

int gf_layer_enters_stack(const gf_config *c, int l) {
    const int k = gf_layer_stack(c, l);
    return k > 0 && l == gf_stack_first_layer(c, k) ? k : 0;
}

void gf_stack_in_proj(const gf_model *m, int k, float *out, const float *inp, int64_t N) {
    const int64_t din = gf_stack_dim(&m->cfg, k - 1);
    gf_linear_forward(out, inp, din, m->sp_w[k], din, m->sp_b[k], N, din, gf_stack_dim(&m->cfg, k), 0.0f);
}

gf_head_call gf_model_head_call(const gf_model *m, int64_t B, int64_t T, float *out) {
    gf_head_call hc = {.cfg = &m->cfg, .B = B, .T = T, .p = m->hp, .g = m->hg, .emb = m->tok_emb, .out = out};
    return hc;
}

void gf_model_output(const gf_model *m, const gf_head_call *hc, const float *h, float *lnf, float *mean,
                     float *rstd, gf_head_result *res) {
    const gf_config *c = &m->cfg;
    gf_layernorm_forward(lnf, mean, rstd, h, m->lnf_w, m->lnf_b, hc->B * hc->T, gf_config_out_dim(c), c->ln_eps);
    m->head->forward(hc, lnf, res);
}
