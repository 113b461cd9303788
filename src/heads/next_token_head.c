/* The language-model head: logits (B, T, V) = h W^T with W the token embedding (tie_head) or its own
 * lm_head.weight; the loss is the cross-entropy of each position's next token. */
#include "base/error.h"
#include "heads/head.h"
#include "ops/ops.h"

static int64_t lm_targets(int64_t B, int64_t T) { return B * T; }

static int lm_params(const gf_config *cfg, gf_param_spec *s) {
    if (cfg->tie_head) return 0;
    gf_param_spec_set(&s[0], "lm_head.weight", 2, cfg->vocab_size, gf_config_out_dim(cfg), GF_INIT_NORMAL);
    return 1;
}

static int64_t lm_out(const gf_config *cfg, int64_t B, int64_t T) { return B * T * cfg->vocab_size; }

/* saved: lse (N) | losses (N) */
static int64_t lm_saved(const gf_config *cfg, int64_t B, int64_t T) {
    (void)cfg;
    return 2 * B * T;
}

static int64_t lm_n_outputs(const gf_config *cfg) { return cfg->vocab_size; }

static int lm_check(const gf_config *cfg, const char *src) {
    if (cfg->input != GF_INPUT_TOKENS)
        return gf_fail("%s: task lm predicts tokens, so its input must be tokens (input \"tokens\")", src);
    if (cfg->tie_head && gf_config_out_dim(cfg) != cfg->d_model)
        return gf_fail("%s: tie_head reuses the token embedding (width %lld) as the head, but the last stack is "
                       "%lld wide; set tie_head false", src, (long long)cfg->d_model, (long long)gf_config_out_dim(cfg));
    return 0;
}

static void lm_forward(const gf_head_call *c, const float *h, gf_head_result *res) {
    const int64_t N = c->B * c->T, d = gf_config_out_dim(c->cfg), V = c->cfg->vocab_size;
    const float *W = c->cfg->tie_head ? c->emb : c->p[0];
    gf_linear_forward(c->out, h, d, W, d, NULL, N, d, V, 0.0f);
    res->n_correct = -1; /* an argmax over V per position would cost a pass over the logits */
    if (!c->targets) return;
    float *lse = c->saved, *losses = lse + N;
    res->n_counted = gf_xent_forward(losses, lse, c->out, c->targets, N, V, c->label_smoothing);
    double s = 0.0;
    for (int64_t i = 0; i < N; i++) s += losses[i];
    res->loss_sum = s;
}

static void lm_backward(const gf_head_call *c, const float *h, float *dh, float scale) {
    const int64_t N = c->B * c->T, d = gf_config_out_dim(c->cfg), V = c->cfg->vocab_size;
    const float *W = c->cfg->tie_head ? c->emb : c->p[0];
    float *dW = c->cfg->tie_head ? c->demb : c->g[0];
    gf_xent_linear_backward(dh, dW, c->out, c->saved, c->targets, h, W, N, d, V, scale,
                            c->label_smoothing);
}

const gf_head_ops gf_head_next_token = {
    .version = GF_HEAD_OPS_VERSION,
    .name = "next_token",
    .help = "next-token prediction: logits over the vocabulary at every position, cross-entropy of the next token",
    .check = lm_check,
    .direction = GF_CAUSAL,
    .causal_only = true,
    .next_token = true,
    .target_count = lm_targets,
    .param_specs = lm_params,
    .out_floats = lm_out,
    .saved_floats = lm_saved,
    .n_outputs = lm_n_outputs,
    .forward = lm_forward,
    .backward = lm_backward,
    .smooths_labels = true,
};
