/* The GRU mixer (Cho et al. 2014, "Learning Phrase Representations using RNN Encoder-Decoder", arXiv
 * 1406.1078), in PyTorch's form (torch.nn.GRU, gates r, z, n in that order):
 *
 *     r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)       z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)
 *     n = tanh(W_in x + b_in + r * (W_hn h + b_hn))    h' = (1 - z) * n + z * h
 *
 * Causal: one GRU of d units, out_t = h_t. Bidirectional (an encoder): a forward GRU and a backward one of
 * d / 2 units each, out_t = [h_t forward; h_t backward], as nn.GRU(bidirectional=True) gives. The tensors
 * are nn.GRU's, under its names (gru.weight_ih_l0, ..., gru.bias_hh_l0_reverse), so a state dict moves
 * either way unchanged. A padded position is skipped: the state passes it unchanged (its output is the
 * state carried past it), so no real position sees padding wherever it sits; with padding only at the end
 * this is what a packed sequence computes at the real positions. No parameters beyond the GRU's: the block
 * around it adds the residual, the norms and the FFN. Streams with O(1) state (the d floats of h).
 *
 * Training runs the recurrence one position at a time, each step one (B, 3H) x (3H, H) product; the input
 * projections of every position and the weight gradients are single products over all B*T rows. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "compute/blas.h"
#include "mixers/gru_cell.h"
#include "mixers/mixer.h"
#include "ops/ops.h"

enum { G_IH_W, G_HH_W, G_IH_B, G_HH_B, G_PER_DIR };

static bool bidir(const gf_config *cfg, int layer) {
    return gf_stack_direction(cfg, gf_layer_stack(cfg, layer)) == GF_BIDIRECTIONAL;
}
static int n_dir(const gf_config *cfg, int layer) { return bidir(cfg, layer) ? 2 : 1; }
/* units per direction */
static int64_t units(const gf_config *cfg, int layer) { return gf_layer_dim(cfg, layer) / n_dir(cfg, layer); }

static int g_check(const gf_config *cfg, int layer, const char *src) {
    if (bidir(cfg, layer) && gf_layer_dim(cfg, layer) % 2)
        return gf_fail("%s: layer %d: a bidirectional gru needs an even width (d / 2 units each way), not %lld\n"
                       "HINT: an even d_model", src, layer, (long long)gf_layer_dim(cfg, layer));
    return 0;
}

static int g_param_specs(const gf_config *cfg, int layer, gf_param_spec *s) {
    static const char *const SUFFIX[2] = {"", "_reverse"};
    const int64_t d = gf_layer_dim(cfg, layer), H = units(cfg, layer);
    char name[64];
    for (int k = 0; k < n_dir(cfg, layer); k++) {
        gf_param_spec *p = s + k * G_PER_DIR;
        snprintf(name, sizeof name, "gru.weight_ih_l0%s", SUFFIX[k]);
        gf_param_spec_set(&p[G_IH_W], name, 2, 3 * H, d, GF_INIT_NORMAL);
        snprintf(name, sizeof name, "gru.weight_hh_l0%s", SUFFIX[k]);
        gf_param_spec_set(&p[G_HH_W], name, 2, 3 * H, H, GF_INIT_NORMAL);
        snprintf(name, sizeof name, "gru.bias_ih_l0%s", SUFFIX[k]);
        gf_param_spec_set(&p[G_IH_B], name, 1, 3 * H, 0, GF_INIT_ZERO);
        snprintf(name, sizeof name, "gru.bias_hh_l0%s", SUFFIX[k]);
        gf_param_spec_set(&p[G_HH_B], name, 1, 3 * H, 0, GF_INIT_ZERO);
    }
    return n_dir(cfg, layer) * G_PER_DIR;
}

/* saved, per direction: h, r, z, n and W_hn h + b_hn at every position (N, H) each: 5 N d in all */
static int64_t g_saved_floats(const gf_config *cfg, int layer, int64_t B, int64_t T) {
    return 5 * B * T * gf_layer_dim(cfg, layer);
}

/* scratch (one direction at a time): the input projections or their gradients (N, 3H), the recurrent
 * ones' gradients (N, 3H), one step's W_hh h + b_hh (B, 3H), the carried state gradient (B, H) */
static int64_t g_scratch_floats(const gf_config *cfg, int layer, int64_t B, int64_t T, int n_threads) {
    (void)n_threads;
    const int64_t H = units(cfg, layer);
    return 6 * B * T * H + 3 * B * H + B * H;
}

/* One direction's view of the call: its tensors, saved arrays and scratch. */
typedef struct gru_dir {
    int64_t B, T, d, H, k; /* k: 0 forward, 1 backward (reverse) */
    const float *Wih, *Whh, *bih, *bhh;
    float *gWih, *gWhh, *gbih, *gbhh;
    float *h, *r, *z, *n, *ghn;  /* saved (N, H) each */
    float *gi, *dgh, *gh, *dhc;  /* scratch: gi (N,3H) also holds dgi in backward */
    const uint8_t *mask;
} gru_dir;

static gru_dir dir_view(const gf_mixer_call *c, int k) {
    const int64_t d = gf_layer_dim(c->cfg, c->layer), H = units(c->cfg, c->layer), N = c->B * c->T;
    gru_dir v = {.B = c->B, .T = c->T, .d = d, .H = H, .k = k, .mask = c->mask};
    float *const *p = c->p + k * G_PER_DIR, *const *g = c->g + k * G_PER_DIR;
    v.Wih = p[G_IH_W], v.Whh = p[G_HH_W], v.bih = p[G_IH_B], v.bhh = p[G_HH_B];
    v.gWih = g[G_IH_W], v.gWhh = g[G_HH_W], v.gbih = g[G_IH_B], v.gbhh = g[G_HH_B];
    float *s = c->saved + 5 * N * H * k;
    v.h = s, v.r = s + N * H, v.z = s + 2 * N * H, v.n = s + 3 * N * H, v.ghn = s + 4 * N * H;
    v.gi = c->scratch, v.dgh = v.gi + 3 * N * H, v.gh = v.dgh + 3 * N * H, v.dhc = v.gh + 3 * c->B * H;
    return v;
}

/* position of the s-th step of direction k */
static int64_t step_pos(const gru_dir *v, int64_t s) { return v->k ? v->T - 1 - s : s; }

static void dir_forward(const gru_dir *v, const float *inp) {
    const int64_t B = v->B, T = v->T, H = v->H, N = B * T;
    gf_linear_forward(v->gi, inp, v->d, v->Wih, v->d, v->bih, N, v->d, 3 * H, 0.0f);
    for (int64_t s = 0; s < T; s++) {
        const int64_t t = step_pos(v, s), tp = s ? step_pos(v, s - 1) : -1;
        if (tp >= 0) gf_linear_forward(v->gh, v->h + tp * H, T * H, v->Whh, H, v->bhh, B, H, 3 * H, 0.0f);
        else
            for (int64_t b = 0; b < B; b++) gf_copy(v->gh + b * 3 * H, v->bhh, 3 * H); /* h_{-1} = 0 */
#pragma omp parallel for if (B * H >= 4096)
        for (int64_t b = 0; b < B; b++) {
            const int64_t row = (b * T + t) * H;
            const float *hp = tp >= 0 ? v->h + (b * T + tp) * H : NULL;
            if (v->mask && !v->mask[b * T + t]) { /* skipped: the state passes unchanged */
                for (int64_t j = 0; j < H; j++) v->h[row + j] = hp ? hp[j] : 0.0f;
                continue;
            }
            gf_gru_cell(H, v->gi + (b * T + t) * 3 * H, v->gh + b * 3 * H, hp, v->h + row, v->r + row, v->z + row,
                     v->n + row, v->ghn + row);
        }
    }
}

static void g_forward(const gf_mixer_call *c, float *out, const float *inp) {
    const int nd = n_dir(c->cfg, c->layer);
    for (int k = 0; k < nd; k++) {
        const gru_dir v = dir_view(c, k);
        dir_forward(&v, inp);
        for (int64_t i = 0; i < v.B * v.T; i++) memcpy(out + i * v.d + k * v.H, v.h + i * v.H, (size_t)v.H * sizeof(float));
    }
}

/* Back through the recurrence, last step first: dgi and dgh of every position (0 at skipped ones). */
static void dir_recur_backward(const gru_dir *v, const float *dout) {
    const int64_t B = v->B, T = v->T, H = v->H, d = v->d;
    gf_zero(v->dhc, B * H);
    for (int64_t s = T - 1; s >= 0; s--) {
        const int64_t t = step_pos(v, s), tp = s ? step_pos(v, s - 1) : -1;
#pragma omp parallel for if (B * H >= 4096)
        for (int64_t b = 0; b < B; b++) {
            const int64_t i = b * T + t, row = i * H;
            float *g = v->dhc + b * H;
            for (int64_t j = 0; j < H; j++) g[j] += dout[i * d + v->k * H + j];
            float *dgi = v->gi + i * 3 * H, *dgh = v->dgh + i * 3 * H;
            if (v->mask && !v->mask[i]) { /* h_t = h_{t-1}: the gradient passes on unchanged */
                memset(dgi, 0, (size_t)(3 * H) * sizeof(float)), memset(dgh, 0, (size_t)(3 * H) * sizeof(float));
                continue;
            }
            const float *hp = tp >= 0 ? v->h + (b * T + tp) * H : NULL;
            gf_gru_cell_backward(H, g, hp, v->r + row, v->z + row, v->n + row, v->ghn + row, dgi, dgh, g);
        }
        if (tp >= 0) /* dL/dh_{t-1} += dgh W_hh */
            gf_sgemm(false, false, B, H, 3 * H, 1.0f, v->dgh + t * 3 * H, T * 3 * H, v->Whh, H, 1.0f, v->dhc, H);
    }
}

/* The weight gradients from dgi and dgh, and dinp += dgi W_ih. */
static void dir_weight_backward(const gru_dir *v, float *dinp, const float *inp) {
    const int64_t B = v->B, T = v->T, H = v->H, d = v->d, N = B * T;
    if (v->gbhh) gf_colsum_acc(v->gbhh, v->dgh, 3 * H, N, 3 * H);
    for (int64_t b = 0; v->gWhh && T > 1 && b < B; b++) { /* h_prev of position t: h_{t-1} forward, h_{t+1} back */
        const int64_t first = b * T + (v->k ? 0 : 1), prev = b * T + (v->k ? 1 : 0);
        gf_sgemm(true, false, 3 * H, H, T - 1, 1.0f, v->dgh + first * 3 * H, 3 * H, v->h + prev * H, H, 1.0f, v->gWhh, H);
    }
    gf_linear_backward(dinp, d, v->gWih, d, v->gbih, v->gi, inp, d, v->Wih, d, N, d, 3 * H);
}

static void g_backward(const gf_mixer_call *c, float *dinp, const float *dout, const float *inp) {
    for (int k = 0; k < n_dir(c->cfg, c->layer); k++) {
        const gru_dir v = dir_view(c, k);
        dir_recur_backward(&v, dout);
        dir_weight_backward(&v, dinp, inp);
    }
}

/* ---- streaming (causal): the state is h ---- */

static int64_t g_state_floats(const gf_config *cfg, int layer, int64_t cap) {
    (void)cap;
    return gf_layer_dim(cfg, layer);
}

/* gi, gh (3H each) and r, z, n, ghn (H each) */
static int64_t g_step_scratch_floats(const gf_config *cfg, int layer, int64_t cap) {
    (void)cap;
    return 10 * gf_layer_dim(cfg, layer);
}

static void g_step(const gf_mixer_step *s, float *out, const float *inp) {
    const int64_t d = gf_layer_dim(s->cfg, s->layer), H = d;
    float *gi = s->scratch, *gh = gi + 3 * H, *r = gh + 3 * H, *z = r + H, *n = z + H, *ghn = n + H;
    gf_linear_forward(gi, inp, d, s->p[G_IH_W], d, s->p[G_IH_B], 1, d, 3 * H, 0.0f);
    gf_linear_forward(gh, s->state, H, s->p[G_HH_W], H, s->p[G_HH_B], 1, H, 3 * H, 0.0f);
    gf_gru_cell(H, gi, gh, s->pos ? s->state : NULL, out, r, z, n, ghn);
    memcpy(s->state, out, (size_t)H * sizeof(float));
}

const gf_mixer_ops gf_mixer_gru = {
    .version = GF_MIXER_OPS_VERSION,
    .name = "gru",
    .letter = 'r',
    .help = "A gated recurrent unit (Cho et al. 2014, arXiv 1406.1078) in torch.nn.GRU's form and names: causal, one\n"
            "GRU of d units (out = h_t); bidirectional, a forward and a backward GRU of d / 2 units each, their\n"
            "states concatenated. A padded position is skipped (the state passes it unchanged). No keys; 3 (d + H)\n"
            "H weights per direction; T sequential steps per layer, each a (B, 3H) x (3H, H) product; streams with\n"
            "O(1) state (h).",
    .config_size = 0,
    .keys = NULL,
    .n_keys = 0,
    .check = g_check,
    .gated_skip = false,
    .directions = GF_MIX_CAUSAL | GF_MIX_BIDIRECTIONAL,
    .masks = true,
    .param_specs = g_param_specs,
    .saved_floats = g_saved_floats,
    .scratch_floats = g_scratch_floats,
    .forward = g_forward,
    .backward = g_backward,
    .state_floats = g_state_floats,
    .step_scratch_floats = g_step_scratch_floats,
    .step = g_step,
};
