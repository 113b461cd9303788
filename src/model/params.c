/* The model's tensors: one table declares each (name, shape, init, weight decay, trainable) in
 * checkpoint order (the input, each layer's as its block kind lists them: norms, mixer and FFN, the
 * final norm, the head); the arenas are laid out from it, and initialisation, freezing and lookup read it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/mem.h"
#include "compute/parallel.h"
#include "base/rng.h"
#include "model/model_internal.h"
#include "ops/ops.h"

typedef struct {
    char name[96];
    int ndim;
    int64_t shape[2];
    gf_init_kind init;
    bool decay, buffer;
    int depth;             /* the lowest layer the backward must reach for this tensor's gradient (0: input) */
    float **view, **gview; /* where to store the data/grad pointers once the arenas exist */
} tensor_decl;

typedef struct {
    tensor_decl *d;
    int n, cap;
    int rc;
    int depth; /* given to the tensors declared from now on */
} decl_list;

static void declare(decl_list *L, const char *name, int ndim, int64_t r, int64_t c, gf_init_kind init, bool decay,
                    float **view, float **gview) {
    if (L->n == L->cap) {
        int nc = L->cap ? 2 * L->cap : 64;
        tensor_decl *nd = realloc(L->d, (size_t)nc * sizeof *nd);
        if (!nd) {
            L->rc = gf_fail("out of memory declaring tensors");
            return;
        }
        L->d = nd;
        L->cap = nc;
    }
    tensor_decl *t = &L->d[L->n++];
    snprintf(t->name, sizeof t->name, "%.95s", name);
    t->ndim = ndim;
    t->shape[0] = r;
    t->shape[1] = ndim == 2 ? c : 1;
    t->init = init;
    t->decay = decay;
    t->buffer = false;
    t->depth = L->depth;
    t->view = view;
    t->gview = gview;
}

/* A mixer's or a head's specs: 2-D weights decay; buffers are never trained. */
static void declare_specs(decl_list *L, const char *prefix, const gf_param_spec *s, int n, float **p, float **g) {
    for (int i = 0; i < n; i++) {
        char nm[96];
        if (snprintf(nm, sizeof nm, "%.60s%.31s", prefix, s[i].name) < 0) nm[0] = '\0';
        declare(L, nm, s[i].ndim, s[i].shape[0], s[i].shape[1], s[i].init, s[i].ndim == 2 && !s[i].buffer, &p[i],
                &g[i]);
        if (!L->rc) L->d[L->n - 1].buffer = s[i].buffer;
    }
}

void gf_model_set_config(gf_model *m, const gf_config *cfg) {
    m->cfg = *cfg;
    m->head = gf_config_head(cfg);
    m->n_layers = gf_config_total_layers(cfg);
    for (int l = 0; l < m->n_layers; l++) {
        m->mixer[l] = gf_layer_mixer(cfg, l);
        m->block[l] = gf_block_kind_for(gf_stack_norm(cfg, gf_layer_stack(cfg, l)), m->mixer[l], cfg->layers[l].block,
                                        gf_layer_reads_memory(cfg, l));
    }
}

/* Layer l's tensors, as its block kind lists them (model/block.c): "blocks.J." in the first stack,
 * "NAME.blocks.J." in stack NAME (J counts in the stack); the kind's mixer entry is the mixer's own. */
static void declare_layer(gf_model *m, decl_list *L, int l) {
    const gf_config *c = &m->cfg;
    const int k = gf_layer_stack(c, l), j = l - gf_stack_first_layer(c, k);
    const int64_t d = gf_layer_dim(c, l), F = gf_stack_ff(c, k);
    const int64_t dmem = c->d_model; /* a decoder's memory: the encoder's output, as wide (gf_encdec_validate) */
    const block_kind *kind = m->block[l];
    char nm[96], pre[64];
    snprintf(pre, sizeof pre, "%s%sblocks.%d.", k ? c->stacks[k - 1].name : "", k ? "." : "", j);
    L->depth = l;
    for (int i = 0; i < kind->n_tensors; i++) {
        const block_tensor *t = &kind->tensors[i];
        float **p = block_tensor_view(&m->lp[l], t), **g = block_tensor_view(&m->lg[l], t);
        snprintf(nm, sizeof nm, "%s%s", pre, t->name);
        if (t->mixer) {
            gf_param_spec specs[GF_MIXER_MAX_PARAMS];
            declare_specs(L, nm, specs, m->mixer[l]->param_specs(c, l, specs), p, g);
        } else {
            declare(L, nm, t->ndim, block_dim_size(t->shape[0], d, F, dmem), block_dim_size(t->shape[1], d, F, dmem),
                    t->init, t->decay, p, g);
        }
    }
}

/* An encoder-decoder's tensors before its decoder's blocks (docs/model.md, "Encoder-decoders"): the source's
 * embedding and positions, the encoder's blocks, its final LayerNorm (a pre-norm encoder's), the target's
 * embedding and positions. */
static void declare_encoder(gf_model *m, decl_list *L) {
    const gf_config *c = &m->cfg;
    const int64_t d = c->d_model;
    const int dec = gf_stack_first_layer(c, 1);
    declare(L, "src_emb.weight", 2, c->source_vocab, d, GF_INIT_NORMAL, false, &m->src_emb, &m->d_src_emb);
    if (c->pos == GF_POS_LEARNED)
        declare(L, "src_pos.weight", 2, c->max_len, d, GF_INIT_NORMAL, false, &m->src_pos, &m->d_src_pos);
    for (int l = 0; l < dec; l++) declare_layer(m, L, l);
    L->depth = dec; /* their gradients are whole once the decoder's blocks are through */
    if (gf_stack_norm(c, 0) == GF_NORM_PRE) {
        declare(L, "enc_ln.weight", 1, d, 0, GF_INIT_ONE, false, &m->encln_w, &m->d_encln_w);
        declare(L, "enc_ln.bias", 1, d, 0, GF_INIT_ZERO, false, &m->encln_b, &m->d_encln_b);
    }
    declare(L, "tok_emb.weight", 2, c->vocab_size, d, GF_INIT_NORMAL, false, &m->tok_emb, &m->d_tok_emb);
    if (c->pos == GF_POS_LEARNED)
        declare(L, "pos_emb.weight", 2, c->max_len, d, GF_INIT_NORMAL, false, &m->pos_emb, &m->d_pos_emb);
}

static void declare_input(gf_model *m, decl_list *L) {
    const gf_config *c = &m->cfg;
    const int64_t d = c->d_model;
    if (c->input == GF_INPUT_TOKENS) {
        declare(L, "tok_emb.weight", 2, c->vocab_size, d, GF_INIT_NORMAL, false, &m->tok_emb, &m->d_tok_emb);
    } else {
        declare(L, "in_proj.weight", 2, d, c->d_input, GF_INIT_NORMAL, true, &m->in_w, &m->d_in_w);
        declare(L, "in_proj.bias", 1, d, 0, GF_INIT_ZERO, false, &m->in_b, &m->d_in_b);
    }
    if (c->pos == GF_POS_LEARNED)
        declare(L, "pos_emb.weight", 2, c->max_len, d, GF_INIT_NORMAL, false, &m->pos_emb, &m->d_pos_emb);
    if (c->segments > 0)
        declare(L, "seg_emb.weight", 2, c->segments, d, GF_INIT_NORMAL, false, &m->seg_emb, &m->d_seg_emb);
    if (c->emb_norm) {
        declare(L, "emb_ln.weight", 1, d, 0, GF_INIT_ONE, false, &m->embln_w, &m->d_embln_w);
        declare(L, "emb_ln.bias", 1, d, 0, GF_INIT_ZERO, false, &m->embln_b, &m->d_embln_b);
    }
}

static void declare_all(gf_model *m, decl_list *L) {
    const gf_config *c = &m->cfg;
    if (c->source_vocab > 0) declare_encoder(m, L);
    else declare_input(m, L);
    for (int k = c->source_vocab > 0; k <= c->n_stacks; k++) { /* an encoder-decoder's encoder is declared */
        if (k > 0 && c->source_vocab == 0) { /* the stack's projection from the previous stack's width */
            char nm[96];
            L->depth = gf_stack_first_layer(c, k);
            snprintf(nm, sizeof nm, "%s.in_proj.weight", c->stacks[k - 1].name);
            declare(L, nm, 2, gf_stack_dim(c, k), gf_stack_dim(c, k - 1), GF_INIT_NORMAL, true, &m->sp_w[k], &m->d_sp_w[k]);
            snprintf(nm, sizeof nm, "%s.in_proj.bias", c->stacks[k - 1].name);
            declare(L, nm, 1, gf_stack_dim(c, k), 0, GF_INIT_ZERO, false, &m->sp_b[k], &m->d_sp_b[k]);
        }
        for (int l = gf_stack_first_layer(c, k); l < gf_stack_first_layer(c, k + 1); l++) declare_layer(m, L, l);
    }
    const int64_t dout = gf_config_out_dim(c);
    L->depth = m->n_layers;
    declare(L, "ln_f.weight", 1, dout, 0, GF_INIT_ONE, false, &m->lnf_w, &m->d_lnf_w);
    declare(L, "ln_f.bias", 1, dout, 0, GF_INIT_ZERO, false, &m->lnf_b, &m->d_lnf_b);
    gf_param_spec specs[GF_HEAD_MAX_PARAMS];
    declare_specs(L, "", specs, m->head->param_specs(c, specs), m->hp, m->hg);
}

/* Number the trainable tensors' places in the gradient arena (and the AdamW moments). The arena itself is
 * allocated on first need (gf_model_need_grads): a model loaded for inference never holds one. */
static void number_grads(gf_model *m) {
    int64_t off = 0;
    for (int i = 0; i < m->n_tensors; i++) {
        gf_tensor_info *t = &m->tensors[i];
        t->grad_offset = t->trainable ? off : -1;
        t->grad = NULL;
        off += t->trainable ? t->numel : 0;
    }
    m->n_trainable = off;
    gf_free(m->grads);
    m->grads = NULL;
}

static void set_views(gf_model *m, const decl_list *L) {
    for (int i = 0; i < L->n; i++) {
        *L->d[i].view = m->tensors[i].data;
        *L->d[i].gview = m->tensors[i].grad;
    }
    /* the first layer whose backward is needed: the lowest a trainable tensor needs (an input one: 0) */
    m->first_grad_layer = m->n_layers;
    for (int i = 0; i < m->n_tensors; i++)
        if (m->tensors[i].trainable && L->d[i].depth < m->first_grad_layer) m->first_grad_layer = L->d[i].depth;
}

static int fill_table(gf_model *m, const decl_list *L) {
    size_t name_bytes = 0;
    int64_t total = 0;
    for (int i = 0; i < L->n; i++) {
        name_bytes += strlen(L->d[i].name) + 1;
        total += L->d[i].shape[0] * L->d[i].shape[1];
    }
    m->n_tensors = L->n;
    m->n_params = total;
    m->tensors = calloc((size_t)L->n, sizeof *m->tensors);
    m->init = calloc((size_t)L->n, sizeof *m->init);
    m->names = malloc(name_bytes);
    m->params = gf_alloc_floats(total, "parameters");
    if (!m->tensors || !m->init || !m->names || !m->params)
        return m->params ? gf_fail("out of memory creating the model") : -1;
    char *np = m->names;
    int64_t off = 0;
    for (int i = 0; i < L->n; i++) {
        const tensor_decl *t = &L->d[i];
        gf_tensor_info *ti = &m->tensors[i];
        strcpy(np, t->name);
        *ti = (gf_tensor_info){.name = np, .ndim = t->ndim, .numel = t->shape[0] * t->shape[1], .offset = off,
                               .decay = t->decay, .trainable = !t->buffer, .data = m->params + off};
        ti->shape[0] = t->shape[0];
        ti->shape[1] = t->ndim == 2 ? t->shape[1] : 0;
        m->init[i] = t->init;
        np += strlen(t->name) + 1;
        off += ti->numel;
    }
    return 0;
}

int gf_model_build_params(gf_model *m) {
    decl_list L = {0};
    declare_all(m, &L);
    int rc = L.rc ? L.rc : fill_table(m, &L);
    if (!rc) {
        number_grads(m);
        set_views(m, &L);
    }
    free(L.d);
    return rc;
}

/* Point every view (parameters and gradients) at the tensors again, in declaration order. */
static int reset_views(gf_model *m) {
    decl_list L = {0};
    declare_all(m, &L);
    if (!L.rc) set_views(m, &L);
    free(L.d);
    return L.rc ? -1 : 0;
}

int gf_model_need_grads(gf_model *m) {
    if (m->grads) return 0;
    m->grads = gf_alloc_floats(m->n_trainable > 0 ? m->n_trainable : 1, "gradients");
    if (!m->grads) return -1;
    gf_zero(m->grads, m->n_trainable);
    for (int i = 0; i < m->n_tensors; i++) {
        gf_tensor_info *t = &m->tensors[i];
        if (t->trainable) t->grad = m->grads + t->grad_offset;
    }
    return reset_views(m);
}

int gf_model_plan(const gf_config *cfg, int (*each)(void *ctx, const char *name, int ndim, const int64_t *shape),
                  void *ctx) {
    if (gf_config_validate(cfg, "config")) return -1;
    gf_model *m = calloc(1, sizeof *m); /* the declarations only: no arena */
    if (!m) return gf_fail("out of memory");
    gf_model_set_config(m, cfg);
    decl_list L = {0};
    declare_all(m, &L);
    int rc = L.rc;
    for (int i = 0; !rc && i < L.n; i++) rc = each(ctx, L.d[i].name, L.d[i].ndim, L.d[i].shape);
    free(L.d);
    free(m);
    return rc;
}

/* After freezing n tensors: the gradient numbering and views follow. */
static int refrozen(gf_model *m, int n) {
    if (!n) return 0;
    const bool had = m->grads != NULL; /* keep an existing arena's promise: re-lay it out over the rest */
    number_grads(m);
    if (had) return gf_model_need_grads(m) ? -1 : n;
    return reset_views(m) ? -1 : n;
}

int gf_model_freeze(gf_model *m, const char *prefix) {
    int n = 0;
    for (int i = 0; i < m->n_tensors; i++)
        if (m->tensors[i].trainable && !strncmp(m->tensors[i].name, prefix, strlen(prefix))) {
            m->tensors[i].trainable = false;
            n++;
        }
    return refrozen(m, n);
}

int gf_model_freeze_stack(gf_model *m, int k) {
    const gf_config *c = &m->cfg;
    if (k < 0 || k > c->n_stacks)
        return gf_fail("freeze: stack %d does not exist; this model has stacks 0 to %d", k, c->n_stacks);
    decl_list L = {0};
    declare_all(m, &L); /* a tensor's depth is the first layer of its stack, or its own layer */
    const int lo = gf_stack_first_layer(c, k), hi = gf_stack_first_layer(c, k + 1);
    int n = 0;
    for (int i = 0; !L.rc && i < m->n_tensors; i++)
        if (m->tensors[i].trainable && L.d[i].depth >= lo && L.d[i].depth < hi) {
            m->tensors[i].trainable = false;
            n++;
        }
    const int rc = L.rc;
    free(L.d);
    return rc ? -1 : refrozen(m, n);
}

int gf_model_copy_tensors(gf_model *dst, const gf_model *src, const char *const *prefixes) {
    int n = 0;
    for (int i = 0; i < src->n_tensors; i++) {
        const gf_tensor_info *s = &src->tensors[i], *d = gf_model_find_tensor(dst, s->name);
        bool wanted = false;
        for (int k = 0; prefixes[k] && !wanted; k++) wanted = !strncmp(s->name, prefixes[k], strlen(prefixes[k]));
        if (!wanted || !d) continue;
        if (d->ndim != s->ndim || d->shape[0] != s->shape[0] || d->shape[1] != s->shape[1])
            return gf_fail("tensor \"%s\" is (%lld, %lld) in the source and (%lld, %lld) in the model it is copied "
                           "into", s->name, (long long)s->shape[0], (long long)s->shape[1], (long long)d->shape[0],
                           (long long)d->shape[1]);
        memcpy(d->data, s->data, (size_t)s->numel * sizeof(float));
        n++;
    }
    return n;
}

int64_t gf_model_num_params(const gf_model *m) { return m->n_params; }
int64_t gf_model_num_trainable(const gf_model *m) { return m->n_trainable; }
int gf_model_num_tensors(const gf_model *m) { return m->n_tensors; }
const gf_tensor_info *gf_model_tensor(const gf_model *m, int i) {
    return (i >= 0 && i < m->n_tensors) ? &m->tensors[i] : NULL;
}
const gf_tensor_info *gf_model_find_tensor(const gf_model *m, const char *name) {
    for (int i = 0; i < m->n_tensors; i++)
        if (!strcmp(m->tensors[i].name, name)) return &m->tensors[i];
    return NULL;
}
float *gf_model_params(gf_model *m) { return m->params; }
float *gf_model_grads(gf_model *m) { return gf_model_need_grads(m) ? NULL : m->grads; }
void gf_model_zero_grad(gf_model *m) {
    if (!gf_model_need_grads(m)) gf_zero(m->grads, m->n_trainable); /* on failure the backward reports it */
}

/* Whether layer l's mixer is trained: one of its tensors (a buffer never is) is trainable. */
static bool mixer_trained(const gf_model *m, int l) {
    for (int i = 0; i < GF_MIXER_MAX_PARAMS && m->lp[l].mix[i]; i++)
        for (int k = 0; k < m->n_tensors; k++)
            if (m->tensors[k].data == m->lp[l].mix[i] && m->tensors[k].trainable) return true;
    return false;
}

void gf_model_draw_buffers(gf_model *m, uint64_t seed, uint64_t step) {
    for (int l = 0; l < m->n_layers; l++) {
        void (*draw)(const gf_config *, int, float *const *, uint64_t, uint64_t) = gf_mixer_draw_fn(m->mixer[l]);
        if (draw && (step == 0 || mixer_trained(m, l))) draw(&m->cfg, l, m->lp[l].mix, seed, step);
    }
}

void gf_model_init(gf_model *m, uint64_t seed) {
    for (int i = 0; i < m->n_tensors; i++) {
        gf_tensor_info *t = &m->tensors[i];
        if (m->init[i] == GF_INIT_ZERO) {
            gf_zero(t->data, t->numel);
        } else if (m->init[i] == GF_INIT_ONE) {
            for (int64_t k = 0; k < t->numel; k++) t->data[k] = 1.0f;
        } else {
            uint64_t key = gf_key(seed, gf_hash_str(t->name));
            float *x = t->data;
            const float std = m->cfg.init_std > 0.0f ? m->cfg.init_std : 0.02f; /* 0: the 0.02 of every version */
#pragma omp parallel for schedule(static) if (t->numel > GF_PAR_MIN)
            for (int64_t k = 0; k < t->numel; k++) x[k] = std * gf_normal(key, (uint64_t)k);
        }
    }
    gf_model_draw_buffers(m, seed, 0);
}
