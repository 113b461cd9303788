/* One mixer layer outside a model: its parameters, gradients, saved activations and scratch, wired into a
 * gf_mixer_call the way src/model/model.c's mixer_call wires a model's layer (no padding mask). For the
 * benchmarks and tests that time or check a mixer alone, so that they do not drive the vtable themselves. */
#include <stdlib.h>

#include "base/error.h"
#include "compute/parallel.h"
#include "base/rng.h"
#include "mixers/mixer.h"

struct gf_mixer_harness {
    gf_config cfg; /* a copy: the call points here */
    const gf_mixer_ops *ops;
    gf_mixer_call call;
    int np;
    float *p[GF_MIXER_MAX_PARAMS], *g[GF_MIXER_MAX_PARAMS];
    int64_t n_saved, n_scratch;
    float *demb; /* a mixer that reads the embeddings: their gradient (the harness's input stands for them) */
};

static int64_t spec_numel(const gf_param_spec *s) { return s->shape[0] * (s->ndim == 2 ? s->shape[1] : 1); }

void gf_mixer_harness_free(gf_mixer_harness *h) {
    if (!h) return;
    for (int i = 0; i < h->np; i++) free(h->p[i]), free(h->g[i]);
    free(h->call.saved);
    free(h->call.scratch);
    free(h->demb);
    free(h);
}

/* The parameters (0.02 N(0, 1) from the seed: param i, element k from gf_normal(gf_key(seed, i), k); then
 * the mixer's draw_buffers, if it has one, draws its buffers from the seed as gf_model_init does) and
 * their zeroed gradients; the bytes asked for are added to *bytes. 0, or -1 if out of memory. */
static int alloc_params(gf_mixer_harness *h, int layer, uint64_t seed, size_t *bytes) {
    gf_param_spec specs[GF_MIXER_MAX_PARAMS];
    h->np = h->ops->param_specs(&h->cfg, layer, specs);
    int rc = 0;
    for (int i = 0; i < h->np; i++) {
        int64_t n = spec_numel(&specs[i]);
        *bytes += 2 * (size_t)n * sizeof(float);
        h->p[i] = malloc((size_t)(n ? n : 1) * sizeof(float));
        h->g[i] = calloc((size_t)(n ? n : 1), sizeof(float));
        if (!h->p[i] || !h->g[i]) {
            rc = -1;
            continue;
        }
        for (int64_t k = 0; k < n; k++) h->p[i][k] = 0.02f * gf_normal(gf_key(seed, (uint64_t)i), (uint64_t)k);
    }
    if (!rc && gf_mixer_draw_fn(h->ops)) gf_mixer_draw_fn(h->ops)(&h->cfg, layer, h->p, seed, 0);
    return rc;
}

gf_mixer_harness *gf_mixer_harness_create(const gf_config *cfg, int layer, int64_t B, int64_t T, uint64_t seed) {
    const gf_mixer_ops *ops = layer >= 0 && layer < gf_config_total_layers(cfg) ? gf_layer_mixer(cfg, layer) : NULL;
    if (!ops) {
        gf_fail("mixer harness: layer %d of a %lld-layer config has no registered mixer", layer,
                (long long)gf_config_total_layers(cfg));
        return NULL;
    }
    if (gf_mixer_reads_memory(ops)) {
        gf_fail("mixer harness: layer %d's mixer \"%s\" reads an encoder's output, which a layer alone has not: "
                "time it inside its encoder-decoder", layer, ops->name);
        return NULL;
    }
    gf_mixer_harness *h = calloc(1, sizeof *h);
    if (!h) {
        gf_fail("out of memory: a mixer harness wanted %zu bytes", sizeof *h);
        return NULL;
    }
    h->cfg = *cfg;
    h->ops = ops;
    const int nt = gf_max_threads();
    h->n_saved = ops->saved_floats(cfg, layer, B, T);
    h->n_scratch = ops->scratch_floats(cfg, layer, B, T, nt);
    size_t bytes = sizeof *h + (size_t)(h->n_saved + h->n_scratch) * sizeof(float);
    int rc = alloc_params(h, layer, seed, &bytes);
    float *saved = malloc((size_t)(h->n_saved ? h->n_saved : 1) * sizeof(float));
    float *scratch = malloc((size_t)(h->n_scratch ? h->n_scratch : 1) * sizeof(float));
    const bool bidir = gf_stack_direction(cfg, gf_layer_stack(cfg, layer)) == GF_BIDIRECTIONAL;
    h->call = (gf_mixer_call){.cfg = &h->cfg, .layer = layer, .B = B, .T = T, .p = h->p, .g = h->g,
                              .saved = saved, .scratch = scratch, .n_threads = nt, .bidirectional = bidir, .mask = NULL};
    if (gf_mixer_reads_embeddings(ops)) {
        h->demb = malloc((size_t)(B * T * gf_layer_dim(cfg, layer)) * sizeof(float));
        rc = rc || !h->demb;
    }
    if (rc || !saved || !scratch) {
        gf_fail("out of memory: mixer %s, layer %d, B=%lld T=%lld wanted %zu bytes (parameters, gradients, "
                "saved activations and scratch)", ops->name, layer, (long long)B, (long long)T, bytes);
        gf_mixer_harness_free(h);
        return NULL;
    }
    return h;
}

/* A mixer that reads the embeddings reads the harness's input as them too (a first layer's view), and the
 * gradient it gives them is added to the input's. */
void gf_mixer_harness_forward(gf_mixer_harness *h, float *out, const float *inp) {
    if (h->demb) h->call.emb = inp;
    h->ops->forward(&h->call, out, inp);
}

void gf_mixer_harness_backward(gf_mixer_harness *h, float *dinp, const float *dout, const float *inp) {
    const int64_t n = h->call.B * h->call.T * gf_layer_dim(&h->cfg, h->call.layer);
    if (h->demb) {
        for (int64_t i = 0; i < n; i++) h->demb[i] = 0.0f;
        h->call.emb = inp, h->call.demb = h->demb;
    }
    h->ops->backward(&h->call, dinp, dout, inp);
    for (int64_t i = 0; h->demb && i < n; i++) dinp[i] += h->demb[i];
}

float *const *gf_mixer_harness_params(gf_mixer_harness *h) { return h->p; }
float *const *gf_mixer_harness_grads(gf_mixer_harness *h) { return h->g; }
int gf_mixer_harness_n_params(const gf_mixer_harness *h) { return h->np; }
size_t gf_mixer_harness_bytes(const gf_mixer_harness *h) {
    return (size_t)(h->n_saved + h->n_scratch) * sizeof(float);
}

size_t gf_mixer_harness_bytes_for(const gf_config *cfg, int layer, int64_t B, int64_t T) {
    const gf_mixer_ops *ops = layer >= 0 && layer < gf_config_total_layers(cfg) ? gf_layer_mixer(cfg, layer) : NULL;
    if (!ops) return 0;
    return (size_t)(ops->saved_floats(cfg, layer, B, T) + ops->scratch_floats(cfg, layer, B, T, gf_max_threads())) *
           sizeof(float);
}
