/* The classification head: one label per sequence. The last hidden states are pooled (the mean over
 * the real, unpadded positions, or the first real position: BERT's [CLS], or the last real one: a [CLS]
 * appended after the sequence, as the image task's; or, for a pair of sentences, InferSent's features of the
 * two segments' means u and v: [u; v; |u - v|; u * v]) and a linear layer gives the
 * logits (B, n_classes); the loss is their cross-entropy, and the head counts the correct argmaxes. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "base/error.h"
#include "heads/head.h"
#include "ops/ops.h"

typedef struct {
    int64_t n_classes;
    int pool; /* POOL_MEAN, POOL_FIRST, POOL_LAST, POOL_PAIR */
} classify_config;

enum { POOL_MEAN = 0, POOL_FIRST = 1, POOL_LAST = 2, POOL_PAIR = 3 };
static const char *const POOLS[] = {"mean", "first", "last", "pair", NULL};

static const gf_cfg_key KEYS[] = {
    {.name = "n_classes", .type = GF_KEY_INT, .off = offsetof(classify_config, n_classes), .lo = 2, .hi = 4096,
     .def = "2", .help = "labels 0 .. n_classes-1 (at most 4096: eval counts an n_classes x n_classes confusion)"},
    {.name = "pool", .type = GF_KEY_ENUM, .off = offsetof(classify_config, pool), .names = POOLS, .def = "\"mean\"",
     .help = "mean: over the unpadded positions; first: the first unpadded position (a [CLS] token); last: the "
     "last unpadded position (a [CLS] token appended to the sequence); pair: a sentence pair's features "
     "[u; v; |u - v|; u * v] (InferSent's), u and v the means over segment 0's and segment 1's unpadded positions "
     "(needs segments 2)"},
};

static const classify_config *CC(const gf_config *cfg) { return gf_head_cfg(cfg); }

/* The classifier's input width: d, or 4d for pair's features. */
static int64_t feat_dim(const gf_config *cfg) {
    return (CC(cfg)->pool == POOL_PAIR ? 4 : 1) * gf_config_out_dim(cfg);
}

static int cls_check(const gf_config *cfg, const char *src) {
    if (CC(cfg)->pool == POOL_PAIR && cfg->segments != 2)
        return gf_fail("%s: head.pool \"pair\" pools the two sentences of a pair (segments 0 and 1) and needs "
                       "\"segments\": 2; segments is %lld\nHINT: \"segments\": 2 (a sentence-pair task: snli), or "
                       "head.pool mean", src, (long long)cfg->segments);
    return 0;
}

static int64_t cls_targets(int64_t B, int64_t T) {
    (void)T;
    return B;
}

static int cls_params(const gf_config *cfg, gf_param_spec *s) {
    gf_param_spec_set(&s[0], "cls_head.weight", 2, CC(cfg)->n_classes, feat_dim(cfg), GF_INIT_NORMAL);
    gf_param_spec_set(&s[1], "cls_head.bias", 1, CC(cfg)->n_classes, 0, GF_INIT_ZERO);
    return 2;
}

static int64_t cls_out(const gf_config *cfg, int64_t B, int64_t T) {
    (void)T;
    return B * CC(cfg)->n_classes;
}

/* saved: pooled (B, F) | dpooled (B, F) | lse (B) | losses (B), F = feat_dim */
static int64_t cls_saved(const gf_config *cfg, int64_t B, int64_t T) {
    (void)T;
    return 2 * B * feat_dim(cfg) + 2 * B;
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

/* Segment of position t of row b (0 without segments). */
static int seg(const gf_head_call *c, int64_t b, int64_t t) { return c->segments ? c->segments[b * c->T + t] : 0; }

/* n[s]: how many real positions of row b are of segment s (0 or 1). */
static void pair_counts(const gf_head_call *c, int64_t b, int64_t n[2]) {
    n[0] = n[1] = 0;
    for (int64_t t = 0; t < c->T; t++)
        if (real(c, b, t)) n[seg(c, b, t) == 1]++;
}

/* pair: each row's features f = [u; v; |u - v|; u * v], u and v the means over segment 0's and 1's real
 * positions (0 for a segment with none). */
static void pair_forward(const gf_head_call *c, const float *h, float *pooled) {
    const int64_t d = gf_config_out_dim(c->cfg);
    for (int64_t b = 0; b < c->B; b++) {
        float *f = pooled + b * 4 * d;
        int64_t n[2];
        memset(f, 0, (size_t)(2 * d) * sizeof *f);
        pair_counts(c, b, n);
        for (int64_t t = 0; t < c->T; t++)
            if (real(c, b, t))
                for (int64_t k = 0, s = seg(c, b, t) == 1; k < d; k++) f[s * d + k] += h[(b * c->T + t) * d + k];
        for (int s = 0; s < 2; s++)
            for (int64_t k = 0; n[s] > 1 && k < d; k++) f[s * d + k] /= (float)n[s];
        for (int64_t k = 0; k < d; k++) f[2 * d + k] = fabsf(f[k] - f[d + k]), f[3 * d + k] = f[k] * f[d + k];
    }
}

/* pair's backward: the features' gradient df (B, 4d) folded onto u and v, then spread over their positions. */
static void pair_backward(const gf_head_call *c, const float *pooled, float *df, float *dh) {
    const int64_t d = gf_config_out_dim(c->cfg);
    for (int64_t b = 0; b < c->B; b++) {
        const float *f = pooled + b * 4 * d;
        float *g = df + b * 4 * d;
        int64_t n[2];
        pair_counts(c, b, n);
        for (int64_t k = 0; k < d; k++) {
            const float u = f[k], v = f[d + k], a = g[2 * d + k] * (float)((u > v) - (u < v));
            g[k] += a + g[3 * d + k] * v, g[d + k] += -a + g[3 * d + k] * u;
        }
        for (int64_t t = 0; t < c->T; t++)
            if (real(c, b, t)) {
                const int64_t s = seg(c, b, t) == 1;
                for (int64_t k = 0; k < d; k++) dh[(b * c->T + t) * d + k] += g[s * d + k] / (float)n[s];
            }
    }
}

static void cls_forward(const gf_head_call *c, const float *h, gf_head_result *res) {
    const int64_t B = c->B, F = feat_dim(c->cfg), C = CC(c->cfg)->n_classes;
    float *pooled = c->saved, *lse = pooled + 2 * B * F, *losses = lse + B;
    if (CC(c->cfg)->pool == POOL_PAIR) pair_forward(c, h, pooled);
    else pool_forward(c, h, pooled);
    gf_linear_forward(c->out, pooled, F, c->p[0], F, c->p[1], B, F, C, 0.0f);
    if (!c->targets) return;
    res->n_counted = gf_xent_forward(losses, lse, c->out, c->targets, B, C, c->label_smoothing);
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
    const int64_t B = c->B, T = c->T, d = gf_config_out_dim(c->cfg), F = feat_dim(c->cfg), C = CC(c->cfg)->n_classes;
    float *pooled = c->saved, *dpooled = pooled + B * F, *lse = pooled + 2 * B * F;
    gf_xent_backward(c->out, lse, c->targets, B, C, scale, c->label_smoothing);
    gf_zero(dpooled, B * F);
    gf_linear_backward(dpooled, F, c->g[0], F, c->g[1], c->out, pooled, F, c->p[0], F, B, F, C);
    if (CC(c->cfg)->pool == POOL_PAIR) {
        pair_backward(c, pooled, dpooled, dh);
        return;
    }
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
    .help = "one label per sequence: pool the last hidden states (mean over real positions, the first or the last, "
            "or a sentence pair's features), a linear classifier, cross-entropy; counts accuracy",
    .config_size = sizeof(classify_config),
    .keys = KEYS,
    .n_keys = (int)(sizeof KEYS / sizeof KEYS[0]),
    .check = cls_check,
    .direction = GF_BIDIRECTIONAL,
    .target_count = cls_targets,
    .param_specs = cls_params,
    .out_floats = cls_out,
    .saved_floats = cls_saved,
    .n_outputs = cls_n_outputs,
    .forward = cls_forward,
    .backward = cls_backward,
    .smooths_labels = true,
};
