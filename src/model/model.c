/* The language model: parameter table and arenas, forward and backward over all blocks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/mem.h"
#include "core/parallel.h"
#include "core/rng.h"
#include "model/model_internal.h"
#include "ops/ops.h"

/* ---------------------------------------------------------------------------------------------- */
/* Parameter table                                                                                 */

typedef struct {
    char name[96];
    int ndim;
    int64_t shape[2];
    gf_init_kind init;
    bool decay;
    float **view, **gview; /* where to store the data/grad pointers once the arenas exist */
} tensor_decl;

typedef struct {
    tensor_decl *d;
    int n, cap;
} decl_list;

static int declare(decl_list *L, const char *name, int ndim, int64_t r, int64_t c, gf_init_kind init,
                   bool decay, float **view, float **gview) {
    if (L->n == L->cap) {
        int nc = L->cap ? 2 * L->cap : 64;
        tensor_decl *nd = realloc(L->d, (size_t)nc * sizeof *nd);
        if (!nd) return gf_fail("out of memory declaring tensors");
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
    t->view = view;
    t->gview = gview;
    return 0;
}

static int declare_all(gf_model *m, decl_list *L) {
    const gf_config *c = &m->cfg;
    const int64_t d = c->d_model, V = c->vocab_size, F = c->d_ff;
    int rc = 0;
    rc |= declare(L, "tok_emb.weight", 2, V, d, GF_INIT_NORMAL, false, &m->tok_emb, &m->d_tok_emb);
    if (c->pos == GF_POS_LEARNED)
        rc |= declare(L, "pos_emb.weight", 2, c->max_len, d, GF_INIT_NORMAL, false, &m->pos_emb, &m->d_pos_emb);
    for (int l = 0; l < c->n_layer && !rc; l++) {
        char nm[96];
        gf_layer_params *p = &m->lp[l], *g = &m->lg[l];
#define DECL(suffix, nd, r, cc, init, decay, field)                                                        \
    snprintf(nm, sizeof nm, "blocks.%d.%s", l, suffix);                                                    \
    rc |= declare(L, nm, nd, r, cc, init, decay, &p->field, &g->field)
        DECL("ln1.weight", 1, d, 0, GF_INIT_ONE, false, ln1_w);
        DECL("ln1.bias", 1, d, 0, GF_INIT_ZERO, false, ln1_b);
        gf_param_spec specs[GF_MIXER_MAX_PARAMS];
        int k = m->mixer[l]->param_specs(c, l, specs);
        for (int i = 0; i < k; i++) {
            snprintf(nm, sizeof nm, "blocks.%d.mix.%.31s", l, specs[i].name);
            rc |= declare(L, nm, specs[i].ndim, specs[i].shape[0], specs[i].shape[1], specs[i].init,
                          specs[i].ndim == 2, &p->mix[i], &g->mix[i]);
        }
        DECL("ln2.weight", 1, d, 0, GF_INIT_ONE, false, ln2_w);
        DECL("ln2.bias", 1, d, 0, GF_INIT_ZERO, false, ln2_b);
        DECL("ffn.fc1.weight", 2, F, d, GF_INIT_NORMAL, true, fc1_w);
        DECL("ffn.fc1.bias", 1, F, 0, GF_INIT_ZERO, false, fc1_b);
        DECL("ffn.fc2.weight", 2, d, F, GF_INIT_NORMAL, true, fc2_w);
        DECL("ffn.fc2.bias", 1, d, 0, GF_INIT_ZERO, false, fc2_b);
#undef DECL
    }
    rc |= declare(L, "ln_f.weight", 1, d, 0, GF_INIT_ONE, false, &m->lnf_w, &m->d_lnf_w);
    rc |= declare(L, "ln_f.bias", 1, d, 0, GF_INIT_ZERO, false, &m->lnf_b, &m->d_lnf_b);
    if (!c->tie_head) rc |= declare(L, "lm_head.weight", 2, V, d, GF_INIT_NORMAL, true, &m->head, &m->d_head);
    return rc;
}

gf_model *gf_model_create(const gf_config *cfg) {
    if (gf_config_validate(cfg, "config")) return NULL;
    gf_model *m = calloc(1, sizeof *m);
    if (!m) {
        gf_fail("out of memory creating the model");
        return NULL;
    }
    m->cfg = *cfg;
    for (int l = 0; l < cfg->n_layer; l++) {
        m->mixer[l] = gf_layer_mixer(cfg, l);
        m->block[l] = block_kind_for(cfg->norm, m->mixer[l]);
    }
    decl_list L = {0};
    if (declare_all(m, &L)) goto fail;
    size_t name_bytes = 0;
    int64_t total = 0;
    for (int i = 0; i < L.n; i++) {
        name_bytes += strlen(L.d[i].name) + 1;
        total += L.d[i].shape[0] * L.d[i].shape[1];
    }
    m->n_tensors = L.n;
    m->n_params = total;
    m->tensors = calloc((size_t)L.n, sizeof *m->tensors);
    m->names = malloc(name_bytes);
    m->params = gf_alloc_floats(total, "parameters");
    m->grads = gf_alloc_floats(total, "gradients");
    if (!m->tensors || !m->names || !m->params || !m->grads) {
        if (!m->tensors || !m->names) gf_fail("out of memory creating the model");
        goto fail;
    }
    char *np = m->names;
    int64_t off = 0;
    for (int i = 0; i < L.n; i++) {
        tensor_decl *t = &L.d[i];
        gf_tensor_info *ti = &m->tensors[i];
        strcpy(np, t->name);
        ti->name = np;
        np += strlen(t->name) + 1;
        ti->ndim = t->ndim;
        ti->shape[0] = t->shape[0];
        ti->shape[1] = t->ndim == 2 ? t->shape[1] : 0;
        ti->numel = t->shape[0] * t->shape[1];
        ti->offset = off;
        ti->decay = t->decay;
        ti->data = m->params + off;
        ti->grad = m->grads + off;
        *t->view = ti->data;
        *t->gview = ti->grad;
        off += ti->numel;
    }
    if (cfg->tie_head) {
        m->head = m->tok_emb;
        m->d_head = m->d_tok_emb;
    }
    free(L.d);
    return m;
fail:
    free(L.d);
    gf_model_free(m);
    return NULL;
}

void gf_model_free(gf_model *m) {
    if (!m) return;
    free(m->tensors);
    free(m->names);
    gf_free(m->params);
    gf_free(m->grads);
    gf_free(m->acts);
    gf_free(m->pos_table);
    free(m->inputs);
    free(m->targets);
    free(m);
}

const gf_config *gf_model_config(const gf_model *m) { return &m->cfg; }
int64_t gf_model_num_params(const gf_model *m) { return m->n_params; }
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
float *gf_model_grads(gf_model *m) { return m->grads; }
void gf_model_zero_grad(gf_model *m) { gf_zero(m->grads, m->n_params); }
const float *gf_model_logits(const gf_model *m) { return m->logits; }
size_t gf_model_activation_bytes(const gf_model *m) { return (size_t)m->acts_floats * sizeof(float); }

void gf_model_init(gf_model *m, uint64_t seed) {
    for (int i = 0; i < m->n_tensors; i++) {
        gf_tensor_info *t = &m->tensors[i];
        const char *nm = t->name;
        size_t n = strlen(nm);
        bool is_bias = n >= 5 && !strcmp(nm + n - 5, ".bias");
        bool is_ln = strstr(nm, "ln1.") || strstr(nm, "ln2.") || !strncmp(nm, "ln_f.", 5);
        if (is_bias) {
            gf_zero(t->data, t->numel);
        } else if (is_ln) {
            for (int64_t k = 0; k < t->numel; k++) t->data[k] = 1.0f;
        } else {
            uint64_t key = gf_key(seed, gf_hash_str(nm));
            float *x = t->data;
#pragma omp parallel for schedule(static) if (t->numel > GF_PAR_MIN)
            for (int64_t k = 0; k < t->numel; k++) x[k] = 0.02f * gf_normal(key, (uint64_t)k);
        }
    }
}

void gf_model_set_training(gf_model *m, bool training, uint64_t dropout_seed, uint64_t step) {
    m->training = training;
    m->dropout_seed = dropout_seed;
    m->step = step;
}

/* ---------------------------------------------------------------------------------------------- */
/* Activation arena                                                                                */

/* Lay out the arena for (B, T) starting at `base` (NULL: only count). Returns the floats needed. */
static int64_t layout(gf_model *m, float *base, int64_t B, int64_t T, int n_threads) {
    const gf_config *c = &m->cfg;
    const int64_t N = B * T, d = c->d_model, F = c->d_ff, V = c->vocab_size, L = c->n_layer;
    int64_t off = 0;
#define TAKE(ptr, n)                                                                                       \
    do {                                                                                                   \
        if (base) (ptr) = base + off;                                                                      \
        off += ((n) + 15) / 16 * 16; /* keep every view 64-byte aligned */                                 \
    } while (0)
    int64_t scratch = 0;
    for (int l = 0; l < L; l++) {
        gf_layer_acts *a = &m->la[l];
        for (int k = 1; k < m->block[l]->n_slots - 1; k++) TAKE(a->slot[k], N * d);
        for (int k = 0; k < 2; k++) {
            TAKE(a->mean[k], N);
            TAKE(a->rstd[k], N);
        }
        TAKE(a->h1, N * F);
        TAKE(a->a, N * F);
        TAKE(a->mix_saved, m->mixer[l]->saved_floats(c, l, B, T));
        int64_t s = m->mixer[l]->scratch_floats(c, l, B, T, n_threads);
        scratch = s > scratch ? s : scratch;
    }
    TAKE(m->resid, (L + 1) * N * d);
    TAKE(m->lnf_out, N * d);
    TAKE(m->lnf_mean, N);
    TAKE(m->lnf_rstd, N);
    TAKE(m->logits, N * V);
    TAKE(m->lse, N);
    TAKE(m->losses, N);
    TAKE(m->scratch, scratch);
    int n_slots = 0; /* gradient buffers: as many as the widest block has slots */
    for (int l = 0; l < L; l++) n_slots = m->block[l]->n_slots > n_slots ? m->block[l]->n_slots : n_slots;
    for (int k = 0; k < n_slots; k++) TAKE(m->gbuf[k], N * d);
    TAKE(m->dff, N * F);
#undef TAKE
    return off;
}

static int ensure_acts(gf_model *m, int64_t B, int64_t T) {
    int n_threads = gf_max_threads();
    int64_t need = layout(m, NULL, B, T, n_threads);
    if (need > m->acts_floats) {
        gf_free(m->acts);
        m->acts_floats = 0;
        m->acts = gf_alloc_floats(need, "activations");
        if (!m->acts) {
            gf_fail_context(" (batch %lld x sequence length %lld)", (long long)B, (long long)T);
            return -1;
        }
        m->acts_floats = need;
    }
    layout(m, m->acts, B, T, n_threads);
    m->B = B;
    m->T = T;
    m->n_threads = n_threads;
    if (B * T > m->ids_cap) {
        free(m->inputs);
        free(m->targets);
        m->inputs = malloc((size_t)(B * T) * sizeof(int32_t));
        m->targets = malloc((size_t)(B * T) * sizeof(int32_t));
        m->ids_cap = (m->inputs && m->targets) ? B * T : 0;
        if (!m->ids_cap) return gf_fail("out of memory for a batch of %lld tokens", (long long)(B * T));
    }
    if (m->cfg.pos == GF_POS_SINUSOIDAL && m->pos_table_rows < T) {
        int64_t rows = T > m->cfg.max_len ? T : m->cfg.max_len;
        gf_free(m->pos_table);
        m->pos_table = gf_alloc_floats(rows * m->cfg.d_model, "sinusoidal position table");
        m->pos_table_rows = m->pos_table ? rows : 0;
        if (!m->pos_table) return -1;
        gf_sinusoidal_table(m->pos_table, rows, m->cfg.d_model);
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* Forward                                                                                         */

enum { SITE_MIX = 0, SITE_FFN = 1 };

static uint64_t drop_key(const gf_model *m, int layer, int site) {
    return gf_key(gf_key(gf_key(m->dropout_seed, m->step), (uint64_t)layer), (uint64_t)site);
}

static float drop_p(const gf_model *m) { return m->training ? m->cfg.dropout : 0.0f; }

static gf_mixer_call mixer_call(gf_model *m, int l) {
    gf_mixer_call c = {
        .cfg = &m->cfg, .layer = l, .B = m->B, .T = m->T, .p = m->lp[l].mix, .g = m->lg[l].mix,
        .saved = m->la[l].mix_saved, .scratch = m->scratch, .n_threads = m->n_threads,
    };
    return c;
}

typedef struct {
    gf_model *m;
    int l;
} mix_ctx;

static void mix_forward(void *ctx, float *out, const float *inp) {
    mix_ctx *c = ctx;
    gf_mixer_call mc = mixer_call(c->m, c->l);
    c->m->mixer[c->l]->forward(&mc, out, inp);
}

static void mix_backward(void *ctx, float *dinp, const float *dout, const float *inp) {
    mix_ctx *c = ctx;
    gf_mixer_call mc = mixer_call(c->m, c->l);
    c->m->mixer[c->l]->backward(&mc, dinp, dout, inp);
}

/* Layer l's block over the current batch: its slots (0 and the last are views of resid), statistics,
 * parameters, gradients, dropout and mixer. */
static block_run layer_run(gf_model *m, int l, mix_ctx *mc) {
    const int64_t N = m->B * m->T, d = m->cfg.d_model;
    gf_layer_acts *a = &m->la[l];
    block_run r = {.kind = m->block[l], .cfg = &m->cfg, .N = N, .p = &m->lp[l], .g = &m->lg[l],
                   .h1 = a->h1, .act = a->a, .drop_p = drop_p(m), .mix = mix_forward, .mix_back = mix_backward,
                   .mix_ctx = mc};
    for (int k = 1; k < r.kind->n_slots - 1; k++) r.slot[k] = a->slot[k];
    r.slot[0] = m->resid + l * N * d;
    r.slot[r.kind->n_slots - 1] = m->resid + (l + 1) * N * d;
    for (int k = 0; k < 2; k++) {
        r.mean[k] = a->mean[k];
        r.rstd[k] = a->rstd[k];
        r.drop_key[k] = drop_key(m, l, k == 0 ? SITE_MIX : SITE_FFN);
    }
    *mc = (mix_ctx){m, l};
    return r;
}

int gf_model_forward(gf_model *m, const int32_t *inputs, const int32_t *targets, int64_t B, int64_t T,
                     float *loss) {
    const gf_config *c = &m->cfg;
    m->have_forward = false;
    if (B < 1 || T < 1) return gf_fail("forward: batch %lld x length %lld is empty", (long long)B, (long long)T);
    if (c->pos == GF_POS_LEARNED && T > c->max_len)
        return gf_fail("forward: sequence length %lld exceeds max_len %lld of this model (learned positions)\n"
                       "HINT: use sequences of at most max_len tokens", (long long)T, (long long)c->max_len);
    for (int64_t i = 0; i < B * T; i++) {
        if (inputs[i] < 0 || inputs[i] >= c->vocab_size)
            return gf_fail("forward: token id %d at batch row %lld, position %lld is outside the vocabulary "
                           "[0, %lld)", inputs[i], (long long)(i / T), (long long)(i % T),
                           (long long)c->vocab_size);
        if (targets && (targets[i] < -1 || targets[i] >= c->vocab_size))
            return gf_fail("forward: target id %d at batch row %lld, position %lld is outside [0, %lld) "
                           "(or -1 to ignore)", targets[i], (long long)(i / T), (long long)(i % T),
                           (long long)c->vocab_size);
    }
    if (ensure_acts(m, B, T)) return -1;
    const int64_t N = B * T, d = c->d_model, V = c->vocab_size, L = c->n_layer;
    memcpy(m->inputs, inputs, (size_t)N * sizeof(int32_t));
    if (targets) memcpy(m->targets, targets, (size_t)N * sizeof(int32_t));

    const float *pos = c->pos == GF_POS_LEARNED ? m->pos_emb : c->pos == GF_POS_SINUSOIDAL ? m->pos_table : NULL;
    gf_embed_forward(m->resid, m->inputs, m->tok_emb, pos, B, T, d);
    for (int l = 0; l < L; l++) {
        mix_ctx mc;
        block_run r = layer_run(m, l, &mc);
        block_forward(&r);
    }
    gf_layernorm_forward(m->lnf_out, m->lnf_mean, m->lnf_rstd, m->resid + L * N * d, m->lnf_w, m->lnf_b, N, d);
    gf_linear_forward(m->logits, m->lnf_out, d, m->head, d, NULL, N, d, V, 0.0f);

    m->have_forward = true;
    m->have_targets = targets != NULL;
    if (targets) {
        m->n_counted = gf_xent_forward(m->losses, m->lse, m->logits, m->targets, N, V);
        double s = 0.0;
        for (int64_t i = 0; i < N; i++) s += m->losses[i];
        if (loss) *loss = m->n_counted ? (float)(s / (double)m->n_counted) : NAN;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* Backward                                                                                        */

/* Backward through layer l: on entry m->gbuf[0] holds d(loss)/d(its output), on exit d(loss)/d(its input). */
static void layer_backward(gf_model *m, int l) {
    mix_ctx mc;
    block_run r = layer_run(m, l, &mc);
    const int n = r.kind->n_slots;
    float *G[BLOCK_MAX_SLOTS];
    G[n - 1] = m->gbuf[0];
    for (int k = 0; k < n - 1; k++) G[k] = m->gbuf[k + 1];
    block_backward(&r, G, m->dff);
    for (int k = 0; k < n; k++) m->gbuf[k] = G[k]; /* the same buffers, gbuf[0] now d(loss)/d(input) */
}

int gf_model_backward(gf_model *m) { return gf_model_backward_scaled(m, 1.0f); }

int gf_model_backward_scaled(gf_model *m, float loss_scale) {
    if (!m->have_forward || !m->have_targets)
        return gf_fail("backward: needs a forward pass with targets first (gf_model_forward with targets)");
    const gf_config *c = &m->cfg;
    const int64_t N = m->B * m->T, d = c->d_model, V = c->vocab_size, L = c->n_layer;
    const float scale = m->n_counted ? loss_scale / (float)m->n_counted : 0.0f;
    gf_xent_backward(m->logits, m->lse, m->targets, N, V, scale); /* logits now hold d(loss)/d(logits) */
    m->have_forward = false;
    float *dlnf = m->gbuf[1], *dres = m->gbuf[0];
    gf_zero(dlnf, N * d);
    gf_linear_backward(dlnf, d, m->d_head, d, NULL, m->logits, m->lnf_out, d, m->head, d, N, d, V);
    gf_zero(dres, N * d);
    gf_layernorm_backward(dres, m->d_lnf_w, m->d_lnf_b, dlnf, m->resid + L * N * d, m->lnf_w, m->lnf_mean,
                          m->lnf_rstd, N, d);
    for (int l = (int)L - 1; l >= 0; l--) layer_backward(m, l);
    gf_embed_backward(m->d_tok_emb, c->pos == GF_POS_LEARNED ? m->d_pos_emb : NULL, m->gbuf[0], m->inputs, m->B,
                      m->T, d);
    return 0;
}
