/* The token-mixing MLP of MLP-Mixer (Tolstikhin et al. 2021, "MLP-Mixer: An all-MLP Architecture for Vision",
 * arXiv 2105.01601): each channel's column of the sequence through a two-layer MLP along the positions,
 *     Y[:, c] = W2[:T, :] GELU(W1[:, :T] X[:, c] + b1) + b2[:T]        X, Y (T, d); W1 (hidden, max_len)
 * the same weights for every channel, every position mixing with every other: attention-free and bidirectional,
 * the image baseline of issue 53 (in a pre-norm block with the FFN as channel mixing, this is a Mixer layer).
 * A sequence of T < max_len positions uses W1's first T columns and W2's and b2's first T rows (as Linformer's E
 * and F), so its weights are (hidden, max_len) and (max_len, hidden), torch.nn.Linear(max_len, hidden) and
 * Linear(hidden, max_len) on the transposed sequence; no padding (every position is real), no streaming. */
#include <stddef.h>

#include "base/error.h"
#include "compute/blas.h"
#include "mixers/mixer.h"
#include "ops/ops.h"

typedef struct {
    int64_t hidden;
} token_mlp_config;

static const gf_cfg_key KEYS[] = {
    {.name = "hidden", .type = GF_KEY_INT, .off = offsetof(token_mlp_config, hidden), .lo = 1, .hi = 1 << 16,
     .def = "64", .help = "the MLP's hidden width along the positions (MLP-Mixer's D_S)"},
};

enum { P_W1, P_B1, P_W2, P_B2 };

static int64_t hidden(const gf_config *cfg, int layer) { return ((const token_mlp_config *)gf_layer_mcfg(cfg, layer))->hidden; }

static int t_check(const gf_config *cfg, int layer, const char *src) {
    if (cfg->pos != GF_POS_LEARNED)
        return gf_fail("%s: layer %d: mixer \"token-mlp\" needs pos \"learned\": its weights have one column per "
                       "position up to max_len, and only learned positions hold every sequence to max_len\nHINT: "
                       "--set pos=learned", src, layer);
    return 0;
}

static int t_param_specs(const gf_config *cfg, int layer, gf_param_spec *s) {
    const int64_t Hd = hidden(cfg, layer), L = cfg->max_len;
    gf_param_spec_set(&s[P_W1], "fc1.weight", 2, Hd, L, GF_INIT_NORMAL);
    gf_param_spec_set(&s[P_B1], "fc1.bias", 1, Hd, 0, GF_INIT_ZERO);
    gf_param_spec_set(&s[P_W2], "fc2.weight", 2, L, Hd, GF_INIT_NORMAL);
    gf_param_spec_set(&s[P_B2], "fc2.bias", 1, L, 0, GF_INIT_ZERO);
    return 4;
}

/* saved: the pre-activation A and GELU(A), (B, hidden, d) each */
static int64_t t_saved_floats(const gf_config *cfg, int layer, int64_t B, int64_t T) {
    (void)T;
    return 2 * B * hidden(cfg, layer) * gf_layer_dim(cfg, layer);
}

/* scratch: dA (hidden, d) for one row at a time */
static int64_t t_scratch_floats(const gf_config *cfg, int layer, int64_t B, int64_t T, int n_threads) {
    (void)B, (void)T, (void)n_threads;
    return hidden(cfg, layer) * gf_layer_dim(cfg, layer);
}

static void t_forward(const gf_mixer_call *c, float *out, const float *inp) {
    const int64_t T = c->T, d = gf_layer_dim(c->cfg, c->layer), Hd = hidden(c->cfg, c->layer), L = c->cfg->max_len;
    for (int64_t b = 0; b < c->B; b++) {
        float *A = c->saved + b * Hd * d, *G = c->saved + (c->B + b) * Hd * d, *Y = out + b * T * d;
        gf_sgemm(false, false, Hd, d, T, 1.0f, c->p[P_W1], L, inp + b * T * d, d, 0.0f, A, d);
        for (int64_t i = 0; i < Hd; i++)
            for (int64_t k = 0; k < d; k++) A[i * d + k] += c->p[P_B1][i];
        gf_gelu_forward(G, A, Hd * d, c->cfg->gelu);
        gf_sgemm(false, false, T, d, Hd, 1.0f, c->p[P_W2], Hd, G, d, 0.0f, Y, d);
        for (int64_t t = 0; t < T; t++)
            for (int64_t k = 0; k < d; k++) Y[t * d + k] += c->p[P_B2][t];
    }
}

/* The sums of the rows of x (n, d) added into g (NULL: not wanted). */
static void add_row_sums(float *g, const float *x, int64_t n, int64_t d) {
    for (int64_t i = 0; g && i < n; i++) {
        double s = 0.0;
        for (int64_t k = 0; k < d; k++) s += x[i * d + k];
        g[i] += (float)s;
    }
}

static void t_backward(const gf_mixer_call *c, float *dinp, const float *dout, const float *inp) {
    const int64_t T = c->T, d = gf_layer_dim(c->cfg, c->layer), Hd = hidden(c->cfg, c->layer), L = c->cfg->max_len;
    float *dA = c->scratch;
    for (int64_t b = 0; b < c->B; b++) {
        const float *A = c->saved + b * Hd * d, *G = c->saved + (c->B + b) * Hd * d, *dY = dout + b * T * d;
        const float *X = inp + b * T * d;
        if (c->g[P_W2]) gf_sgemm(false, true, T, Hd, d, 1.0f, dY, d, G, d, 1.0f, c->g[P_W2], Hd);
        add_row_sums(c->g[P_B2], dY, T, d);
        gf_sgemm(true, false, Hd, d, T, 1.0f, c->p[P_W2], Hd, dY, d, 0.0f, dA, d); /* dG */
        gf_gelu_backward(dA, A, dA, Hd * d, c->cfg->gelu);                         /* dA, in place */
        if (c->g[P_W1]) gf_sgemm(false, true, Hd, T, d, 1.0f, dA, d, X, d, 1.0f, c->g[P_W1], L);
        add_row_sums(c->g[P_B1], dA, Hd, d);
        gf_sgemm(true, false, T, d, Hd, 1.0f, c->p[P_W1], L, dA, d, 1.0f, dinp + b * T * d, d);
    }
}

const gf_mixer_ops gf_mixer_token_mlp = {
    .version = GF_MIXER_OPS_VERSION,
    .name = "token-mlp",
    .letter = 'm',
    .help = "MLP-Mixer's token-mixing MLP (Tolstikhin et al. 2021, arXiv 2105.01601): each channel's column of the\n"
            "sequence through W2 GELU(W1 x + b1) + b2 along the positions, W1 (hidden, max_len): attention-free,\n"
            "bidirectional, sequences of at most max_len positions (learned positions), no padding, no streaming.",
    .config_size = sizeof(token_mlp_config),
    .keys = KEYS,
    .n_keys = (int)(sizeof KEYS / sizeof KEYS[0]),
    .check = t_check,
    .gated_skip = false,
    .directions = GF_MIX_BIDIRECTIONAL,
    .masks = false,
    .param_specs = t_param_specs,
    .saved_floats = t_saved_floats,
    .scratch_floats = t_scratch_floats,
    .forward = t_forward,
    .backward = t_backward,
};
