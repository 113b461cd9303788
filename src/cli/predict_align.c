/* grassflow predict --align-dir DIR on an encoder-decoder: each decoded word's alignment, one SVG a word
 * (DIR/align-NNNN.svg, NNNN its index): for every decoder layer, its weights over the source averaged over its
 * heads (gf_model_cross_attention: a cross op's, or a gru-attn mixer's own), the output tokens (the decoded ones,
 * then the end unless the word stopped at max_len) down the side and the source's tokens along the top, drawn by
 * plot_heat.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"
#include "plot_heat.h"
#include "plot_svg.h"

void cli_source_label(char *buf, size_t n, int32_t id, int64_t source_vocab) {
    if (source_vocab == 256 && id > 32 && id < 127) snprintf(buf, n, "%c", (char)id);
    else snprintf(buf, n, "#%d", id);
}

/* Each decoder layer's weights over the source (a cross op's, or its mixer's own attention), the heads' mean,
 * into w (layers, T, S); how many layers have them, or -1. heads: room for cross_heads x T x S. */
static int mean_weights(gf_model *m, int64_t T, int64_t S, float *w, float *heads) {
    const gf_config *c = gf_model_config(m);
    int n = 0;
    for (int l = 0; l < gf_config_total_layers(c) && n < HEAT_MAX_PANELS; l++) {
        const int64_t H = gf_layer_stack(c, l) == 1 ? gf_model_cross_heads(m, l) : 0;
        if (H == 0) continue;
        if (gf_model_cross_attention(m, l, heads)) return -1;
        float *o = w + (int64_t)n++ * T * S;
        for (int64_t i = 0; i < T * S; i++) {
            double sum = 0;
            for (int64_t h = 0; h < H; h++) sum += heads[h * T * S + i];
            o[i] = (float)(sum / (double)H);
        }
    }
    return n;
}

typedef struct {
    char (*rows)[48], (*cols)[16];
    const char **row_p, **col_p;
    float *w, *heads;
} align_buf;

static void align_free(align_buf *b) { free(b->rows), free(b->cols), free(b->row_p), free(b->col_p), free(b->w), free(b->heads); }

static int align_alloc(align_buf *b, int64_t T, int64_t S, int64_t H) {
    b->rows = malloc((size_t)T * sizeof *b->rows), b->cols = malloc((size_t)S * sizeof *b->cols);
    b->row_p = malloc((size_t)T * sizeof *b->row_p), b->col_p = malloc((size_t)S * sizeof *b->col_p);
    b->w = malloc((size_t)(HEAT_MAX_PANELS * T * S) * sizeof *b->w), b->heads = malloc((size_t)(H * T * S) * sizeof *b->heads);
    return b->rows && b->cols && b->row_p && b->col_p && b->w && b->heads ? 0 : -1;
}

/* The labels: the decoded tokens' pieces then the end's (T rows: n, or n + 1 with the end); the source's characters. */
static void align_labels(align_buf *b, const gf_tokenizer *tok, const gf_decode_opts *o, const int32_t *out, int64_t n,
                         int64_t T, const int32_t *src, int64_t S, int64_t source_vocab) {
    for (int64_t t = 0; t < T; t++) {
        size_t pl = 0;
        const char *p = gf_tokenizer_piece(tok, t < n ? out[t] : o->eos, &pl);
        snprintf(b->rows[t], sizeof b->rows[t], "%.*s", p ? (int)(pl < 40 ? pl : 40) : 1, p ? p : "?");
        b->row_p[t] = b->rows[t];
    }
    for (int64_t s = 0; s < S; s++) {
        cli_source_label(b->cols[s], sizeof b->cols[s], src[s], source_vocab);
        b->col_p[s] = b->cols[s];
    }
}

int cli_predict_align(gf_model *m, const gf_tokenizer *tok, const gf_decode_opts *o, const int32_t *src, int64_t S,
                      const int32_t *out, int64_t n, const char *word, int64_t index, const eval_args *a) {
    const gf_config *c = gf_model_config(m);
    /* the rows: each token emitted, and the end unless the word stopped at max_len without one */
    const int64_t T = n + (n < o->max_len), H = c->cross_heads > 0 ? c->cross_heads : 1;
    char path[GF_PATH_MAX], file[64], title[320], sub[GF_PATH_MAX + 128], names[HEAT_MAX_PANELS][48];
    snprintf(file, sizeof file, "align-%04lld.svg", (long long)index);
    if (gf_path_join(path, sizeof path, a->align_dir, file)) return cli_error("--align-dir: %s", gf_last_error());
    const char *inputs[2] = {a->corpus, a->ckpt};
    int rc = plot_check_out(path, "--align-dir", "predict", inputs, 2, a->force);
    if (rc) return rc;
    align_buf b = {0};
    int32_t *ids = malloc((size_t)T * sizeof *ids);
    if (!ids || align_alloc(&b, T, S, H)) {
        free(ids), align_free(&b);
        return cli_error("out of memory drawing the alignment of %s", word);
    }
    ids[0] = o->bos;
    memcpy(ids + 1, out, (size_t)(T - 1) * sizeof *ids);
    gf_batch batch = {.B = 1, .T = T, .ids = ids, .S = S, .source = src};
    const int layers = gf_model_forward_batch(m, &batch, NULL) ? -1 : mean_weights(m, T, S, b.w, b.heads);
    if (layers < 0) rc = cli_error("--align-dir: the alignment of \"%.200s\": %s", word, gf_last_error());
    else if (layers == 0)
        rc = cli_error("--align-dir: %s has no decoder layer that attends to the source (no cross op, no mixer of "
                       "its own attention): nothing to draw", gf_show_name(a->ckpt));
    align_labels(&b, tok, o, out, n, T, src, S, c->source_vocab);
    snprintf(title, sizeof title, "%.200s: each decoder layer's attention over the source, the heads' mean", word);
    snprintf(sub, sizeof sub, "%.3800s; row: the token emitted; column: the source token it reads", gf_show_name(a->ckpt));
    heat_figure f = {.title = title, .subtitle = sub, .n = layers > 0 ? layers : 0, .per_row = 2};
    for (int k = 0; !rc && k < layers; k++) {
        snprintf(names[k], sizeof names[k], "decoder layer %d", k);
        f.panels[k] = (heat_panel){.title = names[k], .rows = (int)T, .cols = (int)S, .v = b.w + (int64_t)k * T * S,
                                   .stride = (int)S, .row_labels = b.row_p, .col_labels = b.col_p, .row_name = "output",
                                   .col_name = "source", .value_name = "attention weight", .scale = {0, 1, false},
                                   .cell_w = 16, .cell_h = 16};
    }
    if (!rc && !(rc = plot_write(path, heat_figure_draw, &f))) fprintf(stderr, "grassflow: wrote %s\n", gf_show_name(path));
    free(ids), align_free(&b);
    return rc;
}
