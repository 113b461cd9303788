/* The mixers of attention deconstructed (issue 55) against naive references in double that build each
 * head's dense (T, T) weights: outputs, and every gradient (parameters and input) against the reference's
 * central differences.
 * - fixed-mix (src/mixers/fixed_mix.c, sequence-independent mixing): causal and bidirectional, spans below
 *   and at max_len, and span 1 (no mixing: proj(v(x)) exactly); its logits per offset drawn large
 *   (N(0, 1.5)) so that a wrong offset index moves every number.
 * - attn-form (src/mixers/attn_form.c): relu, sigmoid and l1, causal and bidirectional; qkv drawn large
 *   (N(0, 0.5)) so that the scores spread over both sides of relu's kink and sigmoid's middle.
 * - emb-qk (src/mixers/emb_qk.c, queries and keys from the input embeddings): through the harness, which
 *   reads its input as the embeddings too, so that the gradient they get (through the mixer's LayerNorm) adds
 *   to the input's; and in a model: in the first layer of a pre-norm model with ln1 at 1 and 0 it is
 *   attention, so its logits and every gradient but ln1's (the embeddings' too: the model adds what the mixer
 *   gives them) equal attention's, with qkv drawn large so that the queries' and keys' part matters.
 * Padding and whole models are held to PyTorch (tests/parity: fixed_mix_lm, bidir_fixed_mix_classify,
 * attn_form_lm, bidir_attn_form_classify, emb_qk_lm, bidir_emb_qk_classify); streaming in test_stream. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "grassflow_plugin.h"
#include "testlib.h"

typedef struct ref_case ref_case;
struct ref_case {
    int64_t B, T, d, H, S; /* fixed-mix: S the span in effect */
    bool causal;
    int form;              /* attn-form: 0 relu, 1 sigmoid, 2 l1, 3 softmax (attention's; emb-qk's) */
    bool emb_qk;           /* q and k from a LayerNorm (no weight or bias, eps 1e-5) of the input */
    const double *p[5];    /* fixed-mix: v.weight, v.bias, proj.weight, proj.bias, rel (H, R); attn-form:
                            * qkv.weight, qkv.bias, proj.weight, proj.bias */
    void (*forward)(const ref_case *r, const double *x, double *out);
};

/* y (n, m) = x (n, k) w^T + b, w (m, k) */
static void ref_linear(double *y, const double *x, const double *w, const double *b, int64_t n, int64_t k, int64_t m) {
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < m; j++) {
            double s = b[j];
            for (int64_t e = 0; e < k; e++) s += w[j * k + e] * x[i * k + e];
            y[i * m + j] = s;
        }
}

static int64_t ref_R(const ref_case *r) { return r->causal ? r->S : 2 * r->S - 1; }

/* fixed-mix's out (B, T, d) on x, in double: dense weights, softmax over the allowed keys */
static void ref_fixed_mix(const ref_case *r, const double *x, double *out) {
    const int64_t d = r->d, dh = d / r->H, R = ref_R(r);
    double *v = malloc((size_t)(r->T * d) * sizeof *v), *o = malloc((size_t)d * sizeof *o), w[512];
    for (int64_t b = 0; b < r->B; b++) {
        const double *xb = x + b * r->T * d;
        for (int64_t t = 0; t < r->T; t++)
            for (int64_t i = 0; i < d; i++) {
                double s = r->p[1][i];
                for (int64_t k = 0; k < d; k++) s += r->p[0][i * d + k] * xb[t * d + k];
                v[t * d + i] = s;
            }
        for (int64_t t = 0; t < r->T; t++) {
            for (int64_t h = 0; h < r->H; h++) {
                double mx = -INFINITY, sum = 0.0;
                for (int64_t s = 0; s < r->T; s++) {
                    const bool ok = labs((long)(t - s)) < r->S && (!r->causal || s <= t);
                    w[s] = ok ? r->p[4][h * R + (r->causal ? t - s : s - t + r->S - 1)] : -INFINITY;
                    mx = fmax(mx, w[s]);
                }
                for (int64_t s = 0; s < r->T; s++) sum += (w[s] = exp(w[s] - mx));
                for (int64_t e = 0; e < dh; e++) {
                    double acc = 0.0;
                    for (int64_t s = 0; s < r->T; s++) acc += w[s] / sum * v[s * d + h * dh + e];
                    o[h * dh + e] = acc;
                }
            }
            for (int64_t i = 0; i < d; i++) {
                double s = r->p[3][i];
                for (int64_t k = 0; k < d; k++) s += r->p[2][i * d + k] * o[k];
                out[(b * r->T + t) * d + i] = s;
            }
        }
    }
    free(v), free(o);
}

/* sum(out * g) */
static double ref_loss(const ref_case *r, const double *x, const double *g, double *out) {
    r->forward(r, x, out);
    double L = 0.0;
    for (int64_t i = 0; i < r->B * r->T * r->d; i++) L += out[i] * g[i];
    return L;
}

/* The central difference of sum(out * g) in each element of a (n doubles, which the reference reads) */
static void ref_grad(const ref_case *r, double *a, int64_t n, const double *x, const double *g, double *grad) {
    double *out = malloc((size_t)(r->B * r->T * r->d) * sizeof *out);
    for (int64_t i = 0; i < n; i++) {
        const double keep = a[i], h = 1e-5;
        a[i] = keep + h;
        const double up = ref_loss(r, x, g, out);
        a[i] = keep - h;
        grad[i] = (up - ref_loss(r, x, g, out)) / (2 * h);
        a[i] = keep;
    }
    free(out);
}

/* emb-qk's queries and keys, over the first 2d columns of qkv (T, 3d): from n(x), x (T, d) */
static void ref_emb_qk_project(const ref_case *r, const double *x, double *qkv) {
    const int64_t d = r->d, T = r->T;
    double *n = malloc((size_t)(T * d) * sizeof *n), *qk = malloc((size_t)(T * 2 * d) * sizeof *qk);
    for (int64_t t = 0; t < T; t++) {
        double mean = 0.0, var = 0.0;
        for (int64_t e = 0; e < d; e++) mean += x[t * d + e] / (double)d;
        for (int64_t e = 0; e < d; e++) var += (x[t * d + e] - mean) * (x[t * d + e] - mean) / (double)d;
        for (int64_t e = 0; e < d; e++) n[t * d + e] = (x[t * d + e] - mean) / sqrt(var + 1e-5);
    }
    ref_linear(qk, n, r->p[0], r->p[1], T, d, 2 * d);
    for (int64_t t = 0; t < T; t++)
        for (int64_t e = 0; e < 2 * d; e++) qkv[t * 3 * d + e] = qk[t * 2 * d + e];
    free(n), free(qk);
}

/* attn-form's out (B, T, d) on x, in double: each query's scores over the keys it sees, the form's weights */
static void ref_attn_form(const ref_case *r, const double *x, double *out) {
    const int64_t d = r->d, dh = d / r->H, T = r->T;
    double *qkv = malloc((size_t)(T * 3 * d) * sizeof *qkv), *o = malloc((size_t)(T * d) * sizeof *o), z[512];
    for (int64_t b = 0; b < r->B; b++) {
        ref_linear(qkv, x + b * T * d, r->p[0], r->p[1], T, d, 3 * d);
        if (r->emb_qk) ref_emb_qk_project(r, x + b * T * d, qkv);
        for (int64_t t = 0; t < T; t++)
            for (int64_t h = 0; h < r->H; h++) {
                const int64_t n = r->causal ? t + 1 : T;
                double mx = -INFINITY, sum = 0.0;
                for (int64_t s = 0; s < n; s++) {
                    double acc = 0.0;
                    for (int64_t e = 0; e < dh; e++) {
                        const double qe = qkv[t * 3 * d + h * dh + e], ke = qkv[s * 3 * d + d + h * dh + e];
                        acc += r->form == 2 ? -fabs(qe - ke) : qe * ke;
                    }
                    z[s] = acc / sqrt((double)dh);
                    mx = fmax(mx, z[s]);
                }
                for (int64_t s = 0; s < n; s++) {
                    z[s] = r->form == 0 ? fmax(z[s], 0.0) / (double)n
                           : r->form == 1 ? 1.0 / (1.0 + exp(log((double)n) - z[s]))
                                          : exp(z[s] - mx); /* l1 and softmax: normalised below */
                    sum += z[s];
                }
                for (int64_t e = 0; e < dh; e++) {
                    double acc = 0.0;
                    for (int64_t s = 0; s < n; s++) acc += z[s] * qkv[s * 3 * d + 2 * d + h * dh + e];
                    o[t * d + h * dh + e] = r->form >= 2 ? acc / sum : acc;
                }
            }
        ref_linear(out + b * T * d, o, r->p[2], r->p[3], T, d, d);
    }
    free(qkv), free(o);
}

/* The mixer of layer 1 of transformer-tiny with sets (2 heads) through the harness, its params' first
 * n_big scaled by big, against the reference r (its shape and kind filled in here) */
static void check_case(const char *what, const char *const *sets, ref_case r, int n_big, float big) {
    gf_config cfg;
    assert_int_equal(gf_config_preset("transformer-tiny", &cfg), 0);
    for (int i = 0; sets[i]; i++)
        if (gf_config_set(&cfg, sets[i])) fail_msg("%s: %s: %s", what, sets[i], gf_last_error());
    gf_mixer_harness *hs = gf_mixer_harness_create(&cfg, 1, r.B, r.T, 3);
    if (!hs) fail_msg("%s: %s", what, gf_last_error());
    const int64_t d = r.d = cfg.d_model, N = r.B * r.T * d, R = r.causal ? r.S : 2 * r.S - 1;
    const bool fixed = r.forward == ref_fixed_mix;
    const int np = fixed ? 5 : 4;
    const int64_t n[5] = {fixed ? d * d : 3 * d * d, fixed ? d : 3 * d, d * d, d, r.H * R};
    assert_int_equal(gf_mixer_harness_n_params(hs), np);
    float *const *P = gf_mixer_harness_params(hs), *const *G = gf_mixer_harness_grads(hs);
    for (int64_t k = 0; k < n[n_big]; k++) P[n_big][k] *= big;
    double *pd[5];
    for (int i = 0; i < np; i++) r.p[i] = pd[i] = ddup_f(P[i], n[i]);
    float *x = falloc(N), *dout = falloc(N), *out = falloc(N), *dx = falloc(N);
    tl_fill_uniform(x, N, 1, -1.0f, 1.0f);
    tl_fill_uniform(dout, N, 2, -1.0f, 1.0f);
    ffill(dx, N, 0.0f);
    gf_mixer_harness_forward(hs, out, x);
    gf_mixer_harness_backward(hs, dx, dout, x);
    double *xd = ddup_f(x, N), *gd = ddup_f(dout, N), *want = dalloc(N), *grad = dalloc(N > 3 * d * d ? N : 3 * d * d);
    r.forward(&r, xd, want);
    tl_check_close(what, out, want, N, 2e-6 * (1.0 + tl_max_abs_d(want, N)));
    ref_grad(&r, xd, N, xd, gd, grad);
    tl_check_close(what, dx, grad, N, 1e-5 * (1.0 + tl_max_abs_d(grad, N)));
    for (int i = 0; i < np; i++) {
        ref_grad(&r, pd[i], n[i], xd, gd, grad);
        tl_check_close(what, G[i], grad, n[i], 1e-5 * (1.0 + tl_max_abs_d(grad, n[i])));
    }
    gf_mixer_harness_free(hs);
}

/* fixed-mix, B rows of T, span S in effect: rel (param 4) from 0.02 N(0, 1) to 1.5 N(0, 1) */
static void check_fixed(const char *what, const char *const *sets, int64_t B, int64_t T, bool causal, int64_t S) {
    check_case(what, sets, (ref_case){.B = B, .T = T, .H = 2, .S = S, .causal = causal, .forward = ref_fixed_mix}, 4,
               75.0f);
}

/* attn-form: qkv.weight (param 0) from 0.02 N(0, 1) to 0.5 N(0, 1) */
static void check_form(const char *what, const char *const *sets, int64_t B, int64_t T, bool causal, int form) {
    check_case(what, sets, (ref_case){.B = B, .T = T, .H = 2, .S = 1, .causal = causal, .form = form,
                                      .forward = ref_attn_form}, 0, 25.0f);
}

static void test_fixed_causal(void **state) {
    (void)state;
    const char *full[] = {"mixers=f,f", "n_head=2", "max_len=12", NULL};
    check_fixed("causal, span 0 (max_len 12), T 12", full, 2, 12, true, 12);
    const char *band[] = {"mixers=f,f", "n_head=2", "layers.1.span=4", NULL};
    check_fixed("causal, span 4, T 11", band, 2, 11, true, 4);
    const char *self[] = {"mixers=f,f", "n_head=2", "layers.1.span=1", NULL};
    check_fixed("causal, span 1 (no mixing), T 7", self, 2, 7, true, 1);
}

static void test_fixed_bidirectional(void **state) {
    (void)state;
    const char *band[] = {"mixers=f,f", "n_head=2", "head.kind=classify", "direction=bidirectional",
                          "layers.1.span=3", NULL};
    check_fixed("bidirectional, span 3, T 9", band, 2, 9, false, 3);
    const char *full[] = {"mixers=f,f", "n_head=2", "head.kind=classify", "direction=bidirectional", "max_len=10",
                          NULL};
    check_fixed("bidirectional, span 0 (max_len 10), T 8", full, 3, 8, false, 10);
}

static void test_forms(void **state) {
    (void)state;
    const char *names[] = {"relu", "sigmoid", "l1"};
    for (int f = 0; f < 3; f++) {
        char form[32], what[96];
        snprintf(form, sizeof form, "layers.1.form=\"%s\"", names[f]);
        const char *causal[] = {"mixers=x,x", "n_head=2", form, NULL};
        snprintf(what, sizeof what, "attn-form %s, causal, T 9", names[f]);
        check_form(what, causal, 2, 9, true, f);
        const char *bidir[] = {"mixers=x,x", "n_head=2", "head.kind=classify", "direction=bidirectional", form, NULL};
        snprintf(what, sizeof what, "attn-form %s, bidirectional, T 7", names[f]);
        check_form(what, bidir, 2, 7, false, f);
    }
}

static void test_emb_qk_harness(void **state) {
    (void)state;
    const char *causal[] = {"mixers=e,e", "n_head=2", NULL};
    check_case("emb-qk, causal, T 9", causal, (ref_case){.B = 2, .T = 9, .H = 2, .S = 1, .causal = true, .form = 3,
                                                          .emb_qk = true, .forward = ref_attn_form}, 0, 25.0f);
    const char *bidir[] = {"mixers=e,e", "n_head=2", "head.kind=classify", "direction=bidirectional", NULL};
    check_case("emb-qk, bidirectional, T 7", bidir, (ref_case){.B = 2, .T = 7, .H = 2, .S = 1, .form = 3,
                                                                .emb_qk = true, .forward = ref_attn_form}, 0, 25.0f);
}

/* transformer-tiny (pre-norm) with mixers, its first layer's qkv scaled by 25: loss, then logits and every
 * gradient into malloc'd copies */
static gf_model *first_layer_model(const char *mixers, const int32_t *tok, int64_t B, int64_t T, float *loss) {
    gf_config cfg;
    assert_int_equal(gf_config_preset("transformer-tiny", &cfg), 0);
    if (gf_config_set(&cfg, mixers)) fail_msg("%s: %s", mixers, gf_last_error());
    gf_model *m = gf_model_create(&cfg);
    assert_non_null(m);
    gf_model_init(m, 5);
    const gf_tensor_info *w = gf_model_find_tensor(m, "blocks.0.mix.qkv.weight");
    assert_non_null(w);
    for (int64_t k = 0; k < w->numel; k++) gf_model_params(m)[w->offset + k] *= 25.0f;
    gf_model_zero_grad(m);
    if (gf_model_forward(m, tok, tok + 1, B, T, loss) || gf_model_backward(m)) fail_msg("%s: %s", mixers, gf_last_error());
    return m;
}

static void test_emb_qk_first_layer(void **state) {
    (void)state;
    enum { B = 2, T = 12 };
    int32_t tok[B * T + 1];
    for (int i = 0; i < B * T + 1; i++) tok[i] = (int32_t)((i * 7 + 3) % 50);
    float la, le;
    gf_model *a = first_layer_model("mixers=a,a", tok, B, T, &la), *e = first_layer_model("mixers=e,a", tok, B, T, &le);
    const int64_t V = gf_model_config(a)->vocab_size, n = gf_model_num_trainable(a);
    assert_int_equal(n, gf_model_num_trainable(e));
    double *want = ddup_f(gf_model_logits(a), B * T * V);
    tl_check_close("emb-qk first layer: logits", gf_model_logits(e), want, B * T * V, 1e-5 * (1.0 + tl_max_abs_d(want, B * T * V)));
    for (int i = 0; i < gf_model_num_tensors(a); i++) {
        const gf_tensor_info *ta = gf_model_tensor(a, i), *te = gf_model_find_tensor(e, ta->name);
        assert_non_null(te);
        if (!strncmp(ta->name, "blocks.0.ln1.", 13)) continue; /* attention's q and k depend on ln1's 1 and 0 too */
        double *g = ddup_f(gf_model_grads(a) + ta->grad_offset, ta->numel);
        tl_check_close(ta->name, gf_model_grads(e) + te->grad_offset, g, ta->numel, 1e-4 * (1e-3 + tl_max_abs_d(g, ta->numel)));
    }
    gf_model_free(a), gf_model_free(e);
}

/* span above max_len: refused, naming the key and the fix */
static void test_span_refused(void **state) {
    (void)state;
    gf_config cfg;
    assert_int_equal(gf_config_preset("transformer-tiny", &cfg), 0);
    assert_int_equal(gf_config_set(&cfg, "mixers=f,f"), 0);
    tl_expect_error(gf_config_set(&cfg, "layers.1.span=33"), "span 33 is more than max_len 32");
}

/* emb-qk outside the first stack of a plain model: refused, naming the layer */
static void test_emb_qk_refused(void **state) {
    (void)state;
    gf_config cfg;
    assert_int_equal(gf_config_preset("transformer-g2p", &cfg), 0);
    tl_expect_error(gf_config_set(&cfg, "layers.0.mixer=emb-qk"), "mixer \"emb-qk\" reads the model's input embeddings");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_fixed_causal, pool_teardown),
        cmocka_unit_test_teardown(test_fixed_bidirectional, pool_teardown),
        cmocka_unit_test_teardown(test_forms, pool_teardown),
        cmocka_unit_test_teardown(test_emb_qk_harness, pool_teardown),
        cmocka_unit_test_teardown(test_emb_qk_first_layer, pool_teardown),
        cmocka_unit_test_teardown(test_span_refused, pool_teardown),
        cmocka_unit_test_teardown(test_emb_qk_refused, pool_teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    pool_release();
    return rc;
}
