/* grassflow inspect's figures: per layer, heat maps of what the inspection measured (inspect.h), with the
 * tokens' text on the axes. A Grassmann layer: its gates (channels x tokens, the mean over the channels above),
 * its offsets (tokens x offsets: each one's contribution, its share, the loss change when it is dropped) and its
 * most active Pluecker coordinates (coordinates x tokens); an attention layer: each head's weights (tokens x
 * tokens). The first --svg-tokens tokens are shown; the JSON has them all. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "inspect.h"
#include "plot_heat.h"
#include "plot_svg.h"

enum { LABEL_CHARS = 12, TOP_COORDS = 16, TOKEN_PX = 14 };

/* A token's text as an axis label: white space made visible (a space as U+2423, a line end as U+21B5, a tab as
 * U+21E5), what a terminal could not show as \xNN (gf_escape_name), at most LABEL_CHARS characters (then
 * U+2026). malloc'd. */
static char *axis_label(const char *piece) {
    char vis[4 * 64 + 1] = "", *v = vis;
    for (const char *p = piece; *p && v < vis + sizeof vis - 4; p++) {
        const char *sym = *p == ' ' ? "\u2423" : *p == '\n' ? "\u21b5" : *p == '\t' ? "\u21e5" : NULL;
        if (sym) v += sprintf(v, "%s", sym);
        else *v++ = *p;
    }
    *v = '\0';
    if (!vis[0]) snprintf(vis, sizeof vis, "\u2205"); /* an empty piece (a byte tokenizer's NUL) */
    char esc[GF_ESCAPE_CAP(sizeof vis)];
    gf_escape_name(esc, sizeof esc, vis);
    int chars = 0;
    char *cut;
    for (cut = esc; *cut; cut++)
        if ((*cut & 0xC0) != 0x80 && ++chars > LABEL_CHARS) break;
    if (*cut) strcpy(cut, "\u2026");
    return strdup(esc);
}

/* Labels "D=1", "D=2", ... of a layer's offsets, "(i,j)" of coordinates, "ch 0" ... of channels: into buf, each
 * 16 bytes, pointed to by out. */
static void number_labels(char (*buf)[16], const char **out, int n, const char *fmt, const int *a, const int *b) {
    for (int i = 0; i < n; i++) {
        snprintf(buf[i], 16, fmt, a ? a[i] : i, b ? b[i] : 0);
        out[i] = buf[i];
    }
}

typedef struct {
    const gf_inspection *x;
    const char *const *tok;   /* the target's (a language model's text's) axis labels */
    const char *const *src;   /* an encoder-decoder's source's */
    int T, S;                 /* shown of each */
    /* the layer being drawn: its positions (the target's, or the source's in an encoder), their labels, how
     * many are shown */
    const char *const *lab;
    int64_t P;
    int n;
    char title[160], subtitle[GF_PATH_MAX + 64];
} fig_ctx;

/* One figure into DIR/layerK-NAME.svg (checked only, without write). */
static int figure(const inspect_svg_opts *o, int layer, const char *name, heat_figure *f, bool write) {
    char path[GF_PATH_MAX], file[64];
    snprintf(file, sizeof file, "layer%d-%s.svg", layer, name);
    if (gf_path_join(path, sizeof path, o->dir, file)) return cli_error("--svg-dir: %s", gf_last_error());
    int rc = plot_check_out(path, "--svg-dir", "inspect", o->inputs, o->n_inputs, o->force);
    if (rc || !write) return rc;
    if ((rc = plot_write(path, heat_figure_draw, f))) return rc;
    fprintf(stderr, "grassflow: wrote %s\n", gf_show_name(path));
    return EXIT_OK;
}

static void titles(fig_ctx *c, heat_figure *f, const gf_inspect_layer *L, const char *what, const inspect_svg_opts *o) {
    snprintf(c->title, sizeof c->title, "layer %d (%s%s): %s", L->layer, c->x->S ? L->encoder ? "encoder, " :
             "decoder, " : "", L->mixer, what);
    snprintf(c->subtitle, sizeof c->subtitle, "%.4000s; %s 1-%d of %lld%s", gf_show_name(o->ckpt),
             L->encoder ? "source tokens" : "tokens", c->n, (long long)c->P,
             c->n < c->P ? " (--svg-tokens; the JSON has them all)" : "");
    f->title = c->title, f->subtitle = c->subtitle;
}

/* Gates: the mean over the channels (1 x tokens) above the channels (d x tokens). */
static int gates(fig_ctx *c, const gf_inspect_layer *L, const inspect_svg_opts *o, bool write) {
    if (!L->gate) return EXIT_OK;
    heat_figure f = {.n = 2, .per_row = 1};
    titles(c, &f, L, "the gate a (1 keeps the hidden state h, 0 takes the Grassmann update g)", o);
    const int d = (int)L->d, ch = d <= 48 ? 12 : d <= 128 ? 5 : 3;
    char(*buf)[16] = malloc((size_t)d * sizeof *buf);
    const char **rows = malloc((size_t)d * sizeof *rows);
    if (!buf || !rows) return free(buf), free(rows), cli_error("out of memory drawing the gates");
    number_labels(buf, rows, d, "ch %d", NULL, NULL);
    static const char *const mean[] = {"mean"};
    f.panels[0] = (heat_panel){.title = "mean over the channels", .rows = 1, .cols = c->n, .v = L->gate_mean,
                               .stride = (int)c->P, .row_labels = mean, .value_name = "mean gate a",
                               .scale = {0, 1, false}, .cell_w = TOKEN_PX, .cell_h = 14, .row_name = " ",
                               .label_chars = (int)strlen(buf[d - 1])}; /* its grid over the channels' grid */
    f.panels[1] = (heat_panel){.title = "per channel", .rows = d, .cols = c->n, .v = L->gate, .stride = d,
                               .row_labels = rows, .col_labels = c->lab, .row_name = "channel", .col_name = "token",
                               .value_name = "gate a", .scale = {0, 1, false}, .cell_w = TOKEN_PX, .cell_h = ch};
    /* the gate is (T, d): the panel reads row = channel, column = token, so it takes the transpose */
    float *tr = malloc((size_t)d * (size_t)c->n * sizeof *tr);
    int rc = tr ? EXIT_OK : cli_error("out of memory drawing the gates");
    for (int k = 0; tr && k < d; k++)
        for (int t = 0; t < c->n; t++) tr[(size_t)k * (size_t)c->n + (size_t)t] = L->gate[(size_t)t * (size_t)d + (size_t)k];
    f.panels[1].v = tr, f.panels[1].stride = c->n;
    if (!rc) rc = figure(o, L->layer, "gates", &f, write);
    free(tr), free(buf), free(rows);
    return rc;
}

/* Offsets: tokens x offsets, three panels: contribution, share, loss change when dropped (an encoder's layer:
 * the first two; a dropped offset changes the target's losses, not its positions'). */
static int offsets(fig_ctx *c, const gf_inspect_layer *L, const inspect_svg_opts *o, bool write) {
    const int K = L->n_offsets, T = c->n;
    heat_figure f = {.n = L->encoder ? 2 : 3, .per_row = 3};
    titles(c, &f, L, "each offset D's part, token by token", o);
    char buf[64][16];
    const char *cols[64];
    number_labels(buf, cols, K, "D=%d", L->offsets, NULL);
    float *v = malloc((size_t)(3 * T * K) * sizeof *v), *contrib = v, *share = v + T * K, *delta = share + T * K;
    if (!v) return cli_error("out of memory drawing the offsets");
    for (int t = 0; t < T; t++) /* a token without a partner at D: an empty cell (its last: no loss to change) */
        for (int k = 0; k < K; k++) {
            const bool in = L->valid[t * K + k];
            contrib[t * K + k] = in ? L->contrib[t * K + k] : NAN;
            share[t * K + k] = in ? L->share[t * K + k] : NAN;
            delta[t * K + k] = in && !L->encoder ? L->drop_token_loss[t * K + k] - c->x->token_loss[t] : NAN;
        }
    const heat_panel base = {.rows = T, .cols = K, .stride = K, .col_labels = cols, .col_name = "offset",
                             .cell_w = 30, .cell_h = TOKEN_PX};
    f.panels[0] = base, f.panels[1] = base, f.panels[2] = base;
    f.panels[0].title = "|W phat_D| / n_valid", f.panels[0].v = contrib, f.panels[0].row_labels = c->lab;
    f.panels[0].row_name = "token", f.panels[0].value_name = "contribution norm";
    f.panels[0].scale = heat_fit(contrib, T, K, K, false, true);
    f.panels[1].title = "share of the mix", f.panels[1].v = share, f.panels[1].value_name = "share";
    f.panels[1].scale = (heat_scale){0, 1, false};
    f.panels[2].title = "loss change when dropped", f.panels[2].v = delta;
    f.panels[2].value_name = "loss change (nats; red: D helped)";
    f.panels[2].scale = heat_fit(delta, T, K, K, true, false);
    const int rc = figure(o, L->layer, "offsets", &f, write);
    free(v);
    return rc;
}

/* The layer's most active coordinates (by their mean over all the tokens) x tokens. */
static int plucker(fig_ctx *c, const gf_inspect_layer *L, const inspect_svg_opts *o, bool write) {
    const int64_t C = L->n_coords;
    if (!C) return EXIT_OK;
    const int n = C < TOP_COORDS ? (int)C : TOP_COORDS, T = c->n;
    int top[TOP_COORDS], ci[TOP_COORDS], cj[TOP_COORDS];
    double best[TOP_COORDS];
    for (int q = 0; q < n; q++) best[q] = -1, top[q] = 0;
    for (int64_t k = 0; k < C; k++) { /* the n largest means over every token, an insertion into a short list */
        double s = 0;
        for (int64_t t = 0; t < c->P; t++) s += L->coord[t * C + k];
        int at = n;
        while (at > 0 && s > best[at - 1]) at--;
        for (int q = n - 1; q > at; q--) best[q] = best[q - 1], top[q] = top[q - 1];
        if (at < n) best[at] = s, top[at] = (int)k;
    }
    float *v = malloc((size_t)(n * T) * sizeof *v);
    if (!v) return cli_error("out of memory drawing the Pluecker coordinates");
    for (int q = 0; q < n; q++) {
        ci[q] = L->coord_i[top[q]], cj[q] = L->coord_j[top[q]];
        for (int t = 0; t < T; t++) v[q * T + t] = L->coord[(int64_t)t * C + top[q]];
    }
    char buf[TOP_COORDS][16];
    const char *rows[TOP_COORDS];
    number_labels(buf, rows, n, "(%d,%d)", ci, cj);
    heat_figure f = {.n = 1, .per_row = 1};
    titles(c, &f, L, "its most active Pluecker coordinates (pairs i < j of reduced dimensions)", o);
    f.panels[0] = (heat_panel){.title = "mean |phat_ij| over the token's offsets", .rows = n, .cols = T, .v = v,
                               .stride = T, .row_labels = rows, .col_labels = c->lab, .row_name = "coordinate (i,j)",
                               .col_name = "token", .value_name = "mean |phat_ij|",
                               .scale = heat_fit(v, n, T, T, false, true), .cell_w = TOKEN_PX, .cell_h = TOKEN_PX};
    const int rc = figure(o, L->layer, "plucker", &f, write);
    free(v);
    return rc;
}

/* Attention: each head's weights, queries (rows) x keys (columns). */
static int attention(fig_ctx *c, const gf_inspect_layer *L, const inspect_svg_opts *o, bool write) {
    const int64_t H = L->n_head < HEAT_MAX_PANELS ? L->n_head : HEAT_MAX_PANELS, T = c->P;
    heat_figure f = {.n = (int)H, .per_row = 2};
    titles(c, &f, L, "attention weights, head by head (row: the query; column: the key it reads)", o);
    char names[HEAT_MAX_PANELS][32];
    const int n = c->n, px = n <= 32 ? TOKEN_PX : n <= 64 ? 12 : 8; /* 8: a label every other token */
    float *v = malloc((size_t)(H * n * n) * sizeof *v);
    if (!v) return cli_error("out of memory drawing the attention weights");
    for (int64_t h = 0; h < H; h++) {
        for (int q = 0; q < n; q++) /* a key after the query in a causal layer: an empty cell (it is not seen) */
            for (int k = 0; k < n; k++) v[(h * n + q) * n + k] = k <= q || L->encoder ? L->attn[(h * T + q) * T + k] : NAN;
        snprintf(names[h], sizeof names[h], "head %lld", (long long)h);
        f.panels[h] = (heat_panel){.title = names[h], .rows = n, .cols = n, .v = v + h * n * n, .stride = n,
                                   .row_labels = c->lab, .col_labels = c->lab, .row_name = "query", .col_name = "key",
                                   .value_name = "attention weight", .scale = {0, 1, false}, .cell_w = px, .cell_h = px};
    }
    const int rc = figure(o, L->layer, "attention", &f, write);
    free(v);
    return rc;
}

/* A decoder layer's attention over the source, head by head: target tokens (rows) x source tokens (columns). */
static int cross(fig_ctx *c, const gf_inspect_layer *L, const inspect_svg_opts *o, bool write) {
    const int64_t H = L->cross_heads < HEAT_MAX_PANELS ? L->cross_heads : HEAT_MAX_PANELS, T = c->x->T, S = c->x->S;
    heat_figure f = {.n = (int)H, .per_row = 2};
    titles(c, &f, L, "attention over the source, head by head (row: the target token; column: the source token)", o);
    char names[HEAT_MAX_PANELS][32];
    for (int64_t h = 0; h < H; h++) {
        snprintf(names[h], sizeof names[h], "head %lld", (long long)h);
        f.panels[h] = (heat_panel){.title = names[h], .rows = c->T, .cols = c->S, .v = L->cross + h * T * S,
                                   .stride = (int)S, .row_labels = c->tok, .col_labels = c->src, .row_name = "target",
                                   .col_name = "source", .value_name = "attention weight", .scale = {0, 1, false},
                                   .cell_w = TOKEN_PX, .cell_h = TOKEN_PX};
    }
    return figure(o, L->layer, "cross", &f, write);
}

/* n axis labels of pieces[0..n) (malloc'd, each freed by free_labels), or NULL out of memory. */
static char **labels_of(const char *const *pieces, int n) {
    char **l = calloc((size_t)(n > 0 ? n : 1), sizeof *l);
    for (int t = 0; l && t < n; t++)
        if (!(l[t] = axis_label(pieces[t]))) {
            for (int k = 0; k < t; k++) free(l[k]);
            free(l);
            return NULL;
        }
    return l;
}

static void free_labels(char **l, int n) {
    for (int t = 0; l && t < n; t++) free(l[t]);
    free(l);
}

/* Layer L's figures. */
static int layer_figures(fig_ctx *c, const gf_inspect_layer *L, const inspect_svg_opts *o, bool write) {
    c->P = L->encoder ? c->x->S : c->x->T, c->n = L->encoder ? c->S : c->T, c->lab = L->encoder ? c->src : c->tok;
    int rc = L->cross_heads ? cross(c, L, o, write) : EXIT_OK;
    if (!rc && L->kind == GF_INSPECT_GRASSMANN) {
        rc = gates(c, L, o, write);
        if (!rc) rc = offsets(c, L, o, write);
        if (!rc) rc = plucker(c, L, o, write);
    } else if (!rc && L->kind == GF_INSPECT_ATTENTION) {
        rc = attention(c, L, o, write);
    }
    return rc;
}

int cli_inspect_svgs(const gf_inspection *x, const char *const *pieces, const inspect_svg_opts *o, bool write) {
    if (write && gf_mkdir_p(o->dir)) return cli_error("--svg-dir: %s", gf_last_error());
    struct stat st;
    if (!write && stat(o->dir, &st) == 0 && !S_ISDIR(st.st_mode))
        return cli_error("--svg-dir %s is not a folder\nHINT: give a folder (made if missing)", gf_show_name(o->dir));
    fig_ctx c = {.x = x, .T = (int)(x->T < o->max_tokens ? x->T : o->max_tokens),
                 .S = (int)(x->S < o->max_tokens ? x->S : o->max_tokens)};
    char **tok = labels_of(pieces, c.T), **src = labels_of(pieces + x->T, c.S);
    int rc = tok && src ? EXIT_OK : cli_error("out of memory drawing the figures");
    c.tok = (const char *const *)tok, c.src = (const char *const *)src;
    for (int l = 0; !rc && l < x->n_layers; l++) rc = layer_figures(&c, &x->layers[l], o, write);
    free_labels(tok, c.T);
    free_labels(src, c.S);
    return rc;
}
