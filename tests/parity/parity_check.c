/* PyTorch parity: hold the C model to the reference written by tests/parity/torch_ref/make_fixture.py.
 *
 *   parity_check INIT.safetensors REF.safetensors
 *
 * INIT is the checkpoint both sides start from; REF holds the batch, PyTorch's (float64) logits, loss,
 * every parameter gradient and the losses of a short AdamW run. Prints max |diff| per tensor and exits
 * 1 on the first tolerance exceeded (the tensor and the numbers are printed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grassflow_plugin.h"

#define TOL_LOGITS 1e-4       /* max |diff| of logits */
#define TOL_LOSS_REL 1e-5     /* relative loss difference */
#define TOL_GRAD_REL 1e-4     /* max |diff| of a gradient, relative to the largest |grad| of its tensor */
#define TOL_ADAMW 1e-4        /* max |diff| of the AdamW losses */

static int failures;

static float *load_f32(const gf_st_file *f, const char *name, int64_t want_numel) {
    const gf_st_tensor *t = gf_st_find(f, name);
    if (!t || t->dtype != GF_DT_F32 || (want_numel >= 0 && t->numel != want_numel)) {
        fprintf(stderr, "parity: %s: tensor %s missing, not F32 or of the wrong size\n", f->path, name);
        exit(1);
    }
    float *x = malloc((size_t)t->numel * sizeof *x);
    memcpy(x, t->data, (size_t)t->numel * sizeof *x);
    return x;
}

static int32_t *load_i32(const gf_st_file *f, const char *name, int64_t *B, int64_t *T) {
    const gf_st_tensor *t = gf_st_find(f, name);
    if (!t || t->dtype != GF_DT_I32 || t->ndim != 2) {
        fprintf(stderr, "parity: %s: tensor %s missing or not I32 (B, T)\n", f->path, name);
        exit(1);
    }
    *B = t->shape[0];
    *T = t->shape[1];
    int32_t *x = malloc((size_t)t->numel * sizeof *x);
    memcpy(x, t->data, (size_t)t->numel * sizeof *x);
    return x;
}

/* The batch of the reference: token ids "inputs" (B, T) or "vectors" (B, T, K), "targets" (B, T) or (B),
 * an optional padding "mask" (B, T), optional "segments" (B, T), and an encoder-decoder's "source" (B, S)
 * with its optional "source_mask", as make_fixture.py writes them. */
typedef struct {
    gf_batch b;
    uint8_t *mask, *seg, *smask;
    int32_t *source;
} ref_batch;

/* An I32 (B, T) tensor of 0/1 values as bytes. */
static uint8_t *load_u8(const gf_st_file *f, const char *name) {
    int64_t B, T;
    int32_t *v = load_i32(f, name, &B, &T);
    uint8_t *u = malloc((size_t)(B * T));
    for (int64_t i = 0; i < B * T; i++) u[i] = (uint8_t)v[i];
    free(v);
    return u;
}

static ref_batch load_batch(const gf_st_file *f) {
    ref_batch r = {0};
    const gf_st_tensor *in = gf_st_find(f, "inputs"), *vec = gf_st_find(f, "vectors");
    const gf_st_tensor *tg = gf_st_find(f, "targets"), *mk = gf_st_find(f, "mask");
    const gf_st_tensor *shape = in ? in : vec;
    if (!shape || !tg || tg->dtype != GF_DT_I32 || (in && in->dtype != GF_DT_I32) || (vec && vec->dtype != GF_DT_F32)) {
        fprintf(stderr, "parity: %s: needs I32 inputs or F32 vectors, and I32 targets\n", f->path);
        exit(1);
    }
    r.b.B = shape->shape[0];
    r.b.T = shape->shape[1];
    int64_t B, T;
    if (in) r.b.ids = load_i32(f, "inputs", &B, &T);
    if (vec) r.b.vectors = load_f32(f, "vectors", -1);
    int32_t *t = malloc((size_t)tg->numel * sizeof *t);
    memcpy(t, tg->data, (size_t)tg->numel * sizeof *t);
    r.b.targets = t;
    if (mk) r.b.mask = r.mask = load_u8(f, "mask");
    if (gf_st_find(f, "segments")) r.b.segments = r.seg = load_u8(f, "segments");
    if (gf_st_find(f, "source")) r.b.source = r.source = load_i32(f, "source", &B, &r.b.S);
    if (gf_st_find(f, "source_mask")) r.b.source_mask = r.smask = load_u8(f, "source_mask");
    return r;
}

static double max_abs(const float *a, int64_t n) {
    double m = 0.0;
    for (int64_t i = 0; i < n; i++) m = fabs(a[i]) > m ? fabs(a[i]) : m;
    return m;
}

static double max_diff(const float *a, const float *b, int64_t n, int64_t *where) {
    double m = 0.0;
    *where = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= m)) {
            m = d;
            *where = i;
            if (isnan(d)) break; /* a NaN is the worst: no later element may replace it */
        }
    }
    return m;
}

static void check(const char *what, double value, double tol, const char *detail) {
    int ok = value <= tol;
    if (!ok) failures++;
    printf("  %-44s %10.3e  (tol %.1e)%s%s\n", what, value, tol, ok ? "" : "  FAIL ", ok ? "" : detail);
}

static double meta_num(const gf_st_file *f, const char *key) {
    char *v = gf_st_metadata(f, key);
    if (!v) {
        fprintf(stderr, "parity: %s: metadata %s missing\n", f->path, key);
        exit(1);
    }
    double x = atof(v);
    free(v);
    return x;
}

/* The forward pass: logits and loss against the reference's. 0, or 1 when the model failed to run. */
static int check_forward(gf_model *m, const ref_batch *rb, const gf_st_file *ref, float **rl, float **rloss) {
    float loss;
    if (gf_model_forward_batch(m, &rb->b, &loss)) {
        fprintf(stderr, "parity: forward: %s\n", gf_last_error());
        return 1;
    }
    const gf_st_tensor *rlt = gf_st_find(ref, "logits");
    const int64_t n_out = rlt ? rlt->numel : 0;
    *rl = load_f32(ref, "logits", n_out), *rloss = load_f32(ref, "loss", 1);
    int64_t at;
    char detail[256];
    double dl = max_diff(gf_model_logits(m), *rl, n_out, &at);
    snprintf(detail, sizeof detail, "at %lld", (long long)at);
    check("logits max|diff|", dl, TOL_LOGITS, detail);
    snprintf(detail, sizeof detail, "C %.9g vs torch %.9g", (double)loss, (double)(*rloss)[0]);
    check("loss relative diff", fabs((double)loss - (*rloss)[0]) / fabs((double)(*rloss)[0]), TOL_LOSS_REL, detail);
    return 0;
}

/* Every trainable tensor's gradient after the forward above. 0, or 1 when backward failed. */
static int check_grads(gf_model *m, const gf_st_file *ref) {
    gf_model_zero_grad(m);
    if (gf_model_backward(m)) {
        fprintf(stderr, "parity: backward: %s\n", gf_last_error());
        return 1;
    }
    double worst = 0.0;
    const char *worst_name = "";
    int64_t at;
    char detail[256];
    for (int i = 0; i < gf_model_num_tensors(m); i++) {
        const gf_tensor_info *t = gf_model_tensor(m, i);
        char name[160];
        if (!t->trainable) continue; /* a buffer (a performer's omega): no gradient */
        snprintf(name, sizeof name, "grad.%s", t->name);
        float *g = load_f32(ref, name, t->numel);
        double scale = max_abs(g, t->numel), d = max_diff(t->grad, g, t->numel, &at);
        /* a tensor whose true gradient is zero must get (numerically) zero, not something relative to zero:
         * an offset longer than the sequence (exactly 0), a cross op's key bias, to which the softmax is
         * invariant (float64 leaves ~1e-20 there, float32 ~1e-12). Below 1e-3 a gradient is held absolutely. */
        double rel = d / (scale > 1e-3 ? scale : 1e-3);
        if (rel > worst) {
            worst = rel;
            worst_name = t->name;
        }
        if (!(rel <= TOL_GRAD_REL)) {
            snprintf(detail, sizeof detail, "at %lld: C %.9g vs torch %.9g (max|g| %.3g)", (long long)at,
                     (double)t->grad[at], (double)g[at], scale);
            check(name, rel, TOL_GRAD_REL, detail);
        }
        free(g);
    }
    snprintf(detail, sizeof detail, "(%s)", worst_name);
    char label[128];
    snprintf(label, sizeof label, "grads: worst rel diff (%.30s)", worst_name);
    check(label, worst, TOL_GRAD_REL, detail);
    return 0;
}

/* The model of checkpoint `path`, in training mode when its config smooths the labels: the loss the
 * reference differentiates is then the smoothed one (the parity configs have no dropout, so training mode
 * changes nothing else). NULL when it does not load. */
static gf_model *load_model(const char *path) {
    gf_model *m = gf_model_load(path);
    if (m && gf_model_config(m)->label_smoothing > 0.0f) gf_model_set_training(m, true, 0, 0);
    return m;
}

/* The AdamW trajectory from the initial weights in `init`: each step's loss, then the final weights (reported;
 * a buffer must stay as loaded). 0, or 1 when the model failed to load or run. */
static int check_adamw(const char *init, const ref_batch *rb, const gf_st_file *ref) {
    gf_model *m = load_model(init);
    if (!m) {
        fprintf(stderr, "parity: %s\n", gf_last_error());
        return 1;
    }
    int steps = (int)meta_num(ref, "steps");
    float *rlosses = load_f32(ref, "adamw_losses", steps), loss = 0.0f;
    gf_adamw_hparams hp = {.lr = (float)meta_num(ref, "lr"), .beta1 = (float)meta_num(ref, "beta1"),
                           .beta2 = (float)meta_num(ref, "beta2"), .eps = (float)meta_num(ref, "eps"),
                           .weight_decay = (float)meta_num(ref, "weight_decay")};
    gf_adamw *opt = gf_adamw_create(m, hp);
    double dtraj = 0.0;
    for (int s = 0; s < steps; s++) {
        if (gf_model_forward_batch(m, &rb->b, &loss)) {
            fprintf(stderr, "parity: %s\n", gf_last_error());
            return 1;
        }
        double d = fabs((double)loss - rlosses[s]);
        dtraj = d > dtraj ? d : dtraj;
        gf_model_zero_grad(m);
        gf_model_backward(m);
        gf_adamw_step(opt, m, hp.lr);
    }
    char detail[256], label[128];
    snprintf(detail, sizeof detail, "last loss C %.7g vs torch %.7g", (double)loss, (double)rlosses[steps - 1]);
    snprintf(label, sizeof label, "AdamW losses (%d steps) max|diff|", steps);
    check(label, dtraj, TOL_ADAMW, detail);
    double dw = 0.0;
    int64_t at;
    for (int i = 0; i < gf_model_num_tensors(m); i++) {
        const gf_tensor_info *t = gf_model_tensor(m, i);
        char name[160];
        snprintf(name, sizeof name, "final.%s", t->name);
        float *w = load_f32(ref, name, t->numel);
        double d = max_diff(t->data, w, t->numel, &at);
        dw = d > dw ? d : dw;
        if (!t->trainable) { /* a buffer: AdamW leaves it as it was loaded, in both */
            snprintf(label, sizeof label, "buffer %.40s after AdamW max|diff|", t->name);
            check(label, d, 0.0, "");
        }
        free(w);
    }
    printf("  %-44s %10.3e  (reported)\n", "weights after AdamW max|diff|", dw);
    gf_adamw_free(opt);
    free(rlosses);
    gf_model_free(m);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: parity_check INIT.safetensors REF.safetensors\n");
        return 2;
    }
    gf_model *m = load_model(argv[1]);
    gf_st_file *ref = gf_st_read(argv[2]);
    if (!m || !ref) {
        fprintf(stderr, "parity: %s\n", gf_last_error());
        return 1;
    }
    ref_batch rb = load_batch(ref);
    printf("parity %s (B=%lld T=%lld%s%s, %lld params)\n", argv[2], (long long)rb.b.B, (long long)rb.b.T,
           rb.mask ? ", padded" : "", rb.b.vectors ? ", vector inputs" : rb.source ? ", encoder-decoder" : "",
           (long long)gf_model_num_params(m));
    float *rl = NULL, *rloss = NULL;
    if (check_forward(m, &rb, ref, &rl, &rloss) || check_grads(m, ref)) return 1;
    gf_model_free(m);
    if (check_adamw(argv[1], &rb, ref)) return 1;
    free(rl);
    free(rloss);
    free((void *)rb.b.ids);
    free((void *)rb.b.vectors);
    free((void *)rb.b.targets);
    free(rb.mask);
    free(rb.seg);
    free(rb.source);
    free(rb.smask);
    gf_st_free(ref);
    if (failures) printf("parity FAILED: %d check(s)\n", failures);
    return failures ? 1 : 0;
}
