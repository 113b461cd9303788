/* The classification head: one label per sequence. The last hidden states are pooled (the mean over
 * the real, unpadded positions, or the first real position: BERT's [CLS], or the last real one: a [CLS]
 * appended after the sequence, as the image task's) and a linear layer gives the
 * logits (B, n_classes); the loss is their cross-entropy, and the head counts the correct argmaxes. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "base/error.h"
#include "heads/head.h"
#include "ops/ops.h"

typedef struct {
    int64_t n_classes;
    int pool; /* POOL_MEAN, POOL_FIRST, POOL_LAST */
} classify_config;

enum { POOL_MEAN = 0, POOL_FIRST = 1, POOL_LAST = 2 };
static const char *const POOLS[] = {"mean", "first", "last", NULL};

static const gf_cfg_key KEYS[] = {
    {.name = "n_classes", .type = GF_KEY_INT, .off = offsetof(classify_config, n_classes), .lo = 2, .hi = 4096,
     .def = "2", .help = "labels 0 .. n_classes-1 (at most 4096: eval counts an n_classes x n_classes confusion)"},
    {.name = "pool", .type = GF_KEY_ENUM, .off = offsetof(classify_config, pool), .names = POOLS, .def = "\"mean\"",
     .help = "mean: over the unpadded positions; first: the first unpadded position (a [CLS] token); last: the "
     "last unpadded position (a [CLS] token appended to the sequence)"},
};

static const classify_config *CC(const gf_config *cfg) { return gf_head_cfg(cfg); }

static int64_t cls_targets(int64_t B, int64_t T) {
    (void)T;
    return B;
}

static int cls_params(const gf_config *cfg, gf_param_spec *s) {
    gf_param_spec_set(&s[0], "cls_head.weight", 2, CC(cfg)->n_classes, gf_config_out_dim(cfg), GF_INIT_NORMAL);
    gf_param_spec_set(&s[1], "cls_head.bias", 1, CC(cfg)->n_classes, 0, GF_INIT_ZERO);
    return 2;
}

static int64_t cls_out(const gf_config *cfg, int64_t B, int64_t T) {
    (void)T;
    return B * CC(cfg)->n_classes;
}

/* saved: pooled (B, d) | dpooled (B, d) | lse (B) | losses (B) */
static int64_t cls_saved(const gf_config *cfg, int64_t B, int64_t T) {
    (void)T;
    return 2 * B * gf_config_out_dim(cfg) + 2 * B;
}

static int64_t cls_n_outputs(const gf_config *cfg) { return CC(cfg)->n_classes; }

static bool real(const gf_head_call *c, int64_t b, int64_t t) { return !c->mask || c->mask[b * c->T + t]; }

/* How many positions row b pools (0 for a row of padding only), and whether position t is one of them:
 * every real position (mean), or the first real one (first), or the last (last). */
static int64_t pooled_count(const gf_head_call *c, int64_t b) {
    int64_t n = 0;
    for (int64_t t = 0; t < c->T; t++) n += real(c, b, t);
    return CC(c->cfg)->pool == POOL_MEAN ? n : n > 0;
}

static bool pooled_at(const gf_head_call *c, int64_t b, int64_t t) {
    if (!real(c, b, t)) return false;
    const int pool = CC(c->cfg)->pool;
    if (pool == POOL_MEAN) return true;
    for (int64_t k = pool == POOL_FIRST ? 0 : t + 1; k < (pool == POOL_FIRST ? t : c->T); k++)
        if (real(c, b, k)) return false;
    return true;
}

static void pool_forward(const gf_head_call *c, const float *h, float *pooled) {
    const int64_t d = gf_config_out_dim(c->cfg);
    for (int64_t b = 0; b < c->B; b++) {
        float *o = pooled + b * d;
        memset(o, 0, (size_t)d * sizeof *o);
        const int64_t n = pooled_count(c, b);
        for (int64_t t = 0; t < c->T && n > 0; t++)
            if (pooled_at(c, b, t))
                for (int64_t k = 0; k < d; k++) o[k] += h[(b * c->T + t) * d + k];
        for (int64_t k = 0; n > 1 && k < d; k++) o[k] /= (float)n;
    }
}

static void cls_forward(const gf_head_call *c, const float *h, gf_head_result *res) {
    const int64_t B = c->B, d = gf_config_out_dim(c->cfg), C = CC(c->cfg)->n_classes;
    float *pooled = c->saved, *lse = pooled + 2 * B * d, *losses = lse + B;
    pool_forward(c, h, pooled);
    gf_linear_forward(c->out, pooled, d, c->p[0], d, c->p[1], B, d, C, 0.0f);
    if (!c->targets) return;
    res->n_counted = gf_xent_forward(losses, lse, c->out, c->targets, B, C);
    res->loss_sum = 0.0;
    res->n_correct = 0;
    for (int64_t b = 0; b < B; b++) {
        if (c->targets[b] < 0) continue;
        res->loss_sum += losses[b];
        int64_t best = 0;
        for (int64_t k = 1; k < C; k++) best = c->out[b * C + k] > c->out[b * C + best] ? k : best;
        res->n_correct += best == c->targets[b];
    }
}

static void cls_backward(const gf_head_call *c, const float *h, float *dh, float scale) {
    (void)h;
    const int64_t B = c->B, T = c->T, d = gf_config_out_dim(c->cfg), C = CC(c->cfg)->n_classes;
    float *pooled = c->saved, *dpooled = pooled + B * d, *lse = pooled + 2 * B * d;
    gf_xent_backward(c->out, lse, c->targets, B, C, scale);
    gf_zero(dpooled, B * d);
    gf_linear_backward(dpooled, d, c->g[0], d, c->g[1], c->out, pooled, d, c->p[0], d, B, d, C);
    for (int64_t b = 0; b < B; b++) {
        const int64_t n = pooled_count(c, b);
        for (int64_t t = 0; t < T && n > 0; t++)
            if (pooled_at(c, b, t))
                for (int64_t k = 0; k < d; k++) dh[(b * T + t) * d + k] += dpooled[b * d + k] / (float)n;
    }
}

const gf_head_ops gf_head_classify = {
    .version = GF_HEAD_OPS_VERSION,
    .name = "classify",
    .help = "one label per sequence: pool the last hidden states (mean over real positions, the first or the last), "
            "a linear classifier, cross-entropy; counts accuracy",
    .config_size = sizeof(classify_config),
    .keys = KEYS,
    .n_keys = (int)(sizeof KEYS / sizeof KEYS[0]),
    .direction = GF_BIDIRECTIONAL,
    .target_count = cls_targets,
    .param_specs = cls_params,
    .out_floats = cls_out,
    .saved_floats = cls_saved,
    .n_outputs = cls_n_outputs,
    .forward = cls_forward,
    .backward = cls_backward,
};
