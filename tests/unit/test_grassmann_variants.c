/* The Grassmann mixer's search dimensions of issue 55, each against what it must equal.
 * - conv (a causal depthwise convolution before the reduction): with gate false the layer's output is
 *   (h + g(u)) / 2 with u = h + conv(h), so a layer with conv on h equals a layer without it on u plus
 *   (h - u) / 2, u computed here by a literal loop in double; and its gradients follow from the layer
 *   without it by the convolution's adjoint: dh = dout / 2 + (I + C)^T (dinp_u - dout / 2), dw_k = sum_t
 *   (dinp_u - dout / 2)_t h_{t-k}. The convolution's weights are drawn large so that every lag matters; the
 *   tensors the two layers share get the same gradients. Causal only (a bidirectional layer refuses it).
 * - gate_form scalar (one gate per position): equals the channel gate whose d rows of gate.weight and gate.bias
 *   are all the scalar gate's one row, forward; backward, the same input gradient and shared tensors'
 *   gradients, and the scalar gate's gradients the sums of the channel gate's rows.
 * - offset_mix learned (a softmax over the partners of one logit per offset) and token (the logits read the token):
 *   at logits 0 each is the mean, bit for bit, forward and backward (token: but for the input's gradient, which
 *   its weights reach); far from 0 the gradients of its tensors and of the input are held to central
 *   differences of the loss sum(dout * out) in a two-head layer with a repeated offset.
 * Whole models are held to PyTorch (tests/parity: grassmann_conv, grassmann_gate_scalar, padded) and streamed
 * (test_stream). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grassflow_plugin.h"
#include "testlib.h"

enum { B = 2, T = 11, K = 3 };

static gf_mixer_harness *harness(const char *const *sets, gf_config *cfg) {
    assert_int_equal(gf_config_preset("grassmann-tiny", cfg), 0);
    for (int i = 0; sets[i]; i++)
        if (gf_config_set(cfg, sets[i])) fail_msg("%s: %s", sets[i], gf_last_error());
    gf_mixer_harness *h = gf_mixer_harness_create(cfg, 1, B, T, 5);
    if (!h) fail_msg("%s", gf_last_error());
    return h;
}

/* u = h + b + sum_k w[c, k] h_{t-k}, in double */
static void ref_conv(double *u, const float *h, const float *w, const float *b, int64_t d) {
    for (int64_t n = 0; n < B * T; n++)
        for (int64_t c = 0; c < d; c++) {
            double s = (double)h[n * d + c] + b[c];
            for (int64_t k = 0; k < K && k <= n % T; k++) s += (double)w[c * K + k] * h[(n - k) * d + c];
            u[n * d + c] = s;
        }
}

/* Layer 1 of two configs, a and b, whose first four tensors (red and plucker, of the same rank and heads) are the
 * same: b's are set to a's; n gets their sizes. */
static void shared_pair(const char *const *sa, const char *const *sb, gf_config *ca, gf_mixer_harness **a,
                        gf_mixer_harness **hb, int64_t n[4]) {
    gf_config cb;
    *a = harness(sa, ca), *hb = harness(sb, &cb);
    const int64_t d = ca->d_model;
    char *rank = gf_config_get(ca, "layers.1.rank"), *heads = gf_config_get(ca, "layers.1.heads");
    const int64_t r = atoll(rank), H = atoll(heads), rh = r / H;
    free(rank), free(heads);
    n[0] = r * d, n[1] = r, n[2] = d * H * (rh * (rh - 1) / 2), n[3] = d;
    for (int i = 0; i < 4; i++)
        memcpy(gf_mixer_harness_params(*hb)[i], gf_mixer_harness_params(*a)[i], (size_t)n[i] * sizeof(float));
}

static void test_conv(void **state) {
    (void)state;
    const char *with[] = {"gate=false", "offsets=[[1],[1,2,4]]", "layers.1.conv=3", NULL};
    const char *without[] = {"gate=false", "offsets=[[1],[1,2,4]]", NULL};
    gf_config ca;
    gf_mixer_harness *a, *hb;
    int64_t n[4];
    shared_pair(with, without, &ca, &a, &hb, n);
    const int64_t d = ca.d_model, N = B * T * d;
    assert_int_equal(gf_mixer_harness_n_params(a), 6);
    assert_int_equal(gf_mixer_harness_n_params(hb), 4);
    float *const *pa = gf_mixer_harness_params(a);
    for (int64_t k = 0; k < d * K; k++) pa[4][k] *= 25.0f; /* 0.02 N(0, 1) to 0.5 N(0, 1) */
    float *h = falloc(N), *dout = falloc(N), *oa = falloc(N), *ob = falloc(N), *da = falloc(N), *db = falloc(N);
    float *uf = falloc(N);
    double *u = dalloc(N), *want = dalloc(N);
    tl_fill_uniform(h, N, 1, -1.0f, 1.0f), tl_fill_uniform(dout, N, 2, -1.0f, 1.0f);
    ref_conv(u, h, pa[4], pa[5], d);
    for (int64_t i = 0; i < N; i++) uf[i] = (float)u[i];
    gf_mixer_harness_forward(a, oa, h), gf_mixer_harness_forward(hb, ob, uf);
    for (int64_t i = 0; i < N; i++) want[i] = ob[i] + (h[i] - u[i]) / 2.0;
    tl_check_close("conv forward: the layer without conv on u, plus (h - u) / 2", oa, want, N, 1e-5);
    ffill(da, N, 0.0f), ffill(db, N, 0.0f);
    gf_mixer_harness_backward(a, da, dout, h), gf_mixer_harness_backward(hb, db, dout, uf);
    double *gw = dalloc(d * K), *gb = dalloc(d);
    memset(gw, 0, (size_t)(d * K) * sizeof *gw), memset(gb, 0, (size_t)d * sizeof *gb);
    for (int64_t i = 0; i < N; i++) want[i] = dout[i] / 2.0; /* the direct path */
    for (int64_t nn = 0; nn < B * T; nn++)
        for (int64_t c = 0; c < d; c++) {
            const double v = db[nn * d + c] - dout[nn * d + c] / 2.0; /* d loss / d u */
            gb[c] += v;
            for (int64_t k = 0; k < K && k <= nn % T; k++) {
                want[(nn - k) * d + c] += v * (k == 0 ? 1.0 + pa[4][c * K] : pa[4][c * K + k]);
                gw[c * K + k] += v * h[(nn - k) * d + c];
            }
        }
    tl_check_close("conv backward: the input's gradient", da, want, N, 1e-5);
    tl_check_close("conv backward: conv.weight", gf_mixer_harness_grads(a)[4], gw, d * K, 1e-4);
    tl_check_close("conv backward: conv.bias", gf_mixer_harness_grads(a)[5], gb, d, 1e-4);
    for (int i = 0; i < 4; i++) {
        double *g = ddup_f(gf_mixer_harness_grads(hb)[i], n[i]);
        tl_check_close("conv backward: a tensor both layers have", gf_mixer_harness_grads(a)[i], g, n[i], 1e-5);
    }
    gf_mixer_harness_free(a), gf_mixer_harness_free(hb);
}

static void test_gate_scalar(void **state) {
    (void)state;
    const char *scalar[] = {"offsets=[[1],[1,2,4]]", "layers.1.gate_form=scalar", NULL};
    const char *channel[] = {"offsets=[[1],[1,2,4]]", NULL};
    gf_config ca;
    gf_mixer_harness *a, *hb;
    int64_t n[4];
    shared_pair(scalar, channel, &ca, &a, &hb, n);
    const int64_t d = ca.d_model, N = B * T * d;
    assert_int_equal(gf_mixer_harness_n_params(a), 6);
    float *const *pa = gf_mixer_harness_params(a), *const *pb = gf_mixer_harness_params(hb);
    for (int64_t k = 0; k < 2 * d; k++) pa[4][k] *= 10.0f; /* a gate far from 1/2, so that it matters */
    pa[5][0] = 0.3f;
    for (int64_t c = 0; c < d; c++)
        memcpy(pb[4] + c * 2 * d, pa[4], (size_t)(2 * d) * sizeof(float)), pb[5][c] = pa[5][0];
    float *h = falloc(N), *dout = falloc(N), *oa = falloc(N), *ob = falloc(N), *da = falloc(N), *db = falloc(N);
    tl_fill_uniform(h, N, 3, -1.0f, 1.0f), tl_fill_uniform(dout, N, 4, -1.0f, 1.0f);
    gf_mixer_harness_forward(a, oa, h), gf_mixer_harness_forward(hb, ob, h);
    double *want = ddup_f(ob, N);
    tl_check_close("scalar gate forward: the channel gate with every row the same", oa, want, N, 1e-5);
    ffill(da, N, 0.0f), ffill(db, N, 0.0f);
    gf_mixer_harness_backward(a, da, dout, h), gf_mixer_harness_backward(hb, db, dout, h);
    want = ddup_f(db, N);
    tl_check_close("scalar gate backward: the input's gradient", da, want, N, 1e-5);
    for (int i = 0; i < 4; i++) {
        want = ddup_f(gf_mixer_harness_grads(hb)[i], n[i]);
        tl_check_close("scalar gate backward: a tensor both layers have", gf_mixer_harness_grads(a)[i], want, n[i],
                       1e-5);
    }
    double *gw = dalloc(2 * d), gbias = 0.0;
    memset(gw, 0, (size_t)(2 * d) * sizeof *gw);
    for (int64_t c = 0; c < d; c++) {
        for (int64_t k = 0; k < 2 * d; k++) gw[k] += gf_mixer_harness_grads(hb)[4][c * 2 * d + k];
        gbias += gf_mixer_harness_grads(hb)[5][c];
    }
    tl_check_close("scalar gate backward: gate.weight, the channel rows' sum", gf_mixer_harness_grads(a)[4], gw,
                   2 * d, 1e-4);
    tl_check_close("scalar gate backward: gate.bias, the channel biases' sum", gf_mixer_harness_grads(a)[5], &gbias,
                   1, 1e-4);
    gf_mixer_harness_free(a), gf_mixer_harness_free(hb);
}

/* Layer 1 with offset_mix learned or token against the mean: at logits 0, the same bits everywhere. */
static void offset_mix_zero(const char *mode) {
    char key[64];
    snprintf(key, sizeof key, "layers.1.offset_mix=%s", mode);
    const char *mixed[] = {"offsets=[[1],[1,2,4,2]]", "heads=[1,2]", "rank=[4,6]", key, NULL};
    const char *mean[] = {"offsets=[[1],[1,2,4,2]]", "heads=[1,2]", "rank=[4,6]", NULL};
    gf_config ca;
    gf_mixer_harness *a, *hb;
    int64_t n[6];
    shared_pair(mixed, mean, &ca, &a, &hb, n);
    const int64_t d = ca.d_model, N = B * T * d;
    const int np = gf_mixer_harness_n_params(a);
    assert_int_equal(np, strcmp(mode, "token") ? 7 : 8);
    n[4] = 2 * d * d, n[5] = d;
    for (int i = 4; i < 6; i++)
        memcpy(gf_mixer_harness_params(hb)[i], gf_mixer_harness_params(a)[i], (size_t)n[i] * sizeof(float));
    for (int i = 6; i < np; i++) /* the harness draws every tensor at random */
        ffill(gf_mixer_harness_params(a)[i], i == np - 1 ? 4 : 4 * d, 0.0f);
    float *h = falloc(N), *dout = falloc(N), *oa = falloc(N), *ob = falloc(N), *da = falloc(N), *db = falloc(N);
    tl_fill_uniform(h, N, 3, -1.0f, 1.0f), tl_fill_uniform(dout, N, 4, -1.0f, 1.0f);
    gf_mixer_harness_forward(a, oa, h), gf_mixer_harness_forward(hb, ob, h);
    assert_memory_equal(oa, ob, (size_t)N * sizeof *oa);
    ffill(da, N, 0.0f), ffill(db, N, 0.0f);
    gf_mixer_harness_backward(a, da, dout, h), gf_mixer_harness_backward(hb, db, dout, h);
    if (!strcmp(mode, "learned")) /* token: the logits' weights pass a gradient to h even at 0 */
        assert_memory_equal(da, db, (size_t)N * sizeof *da);
    for (int i = 0; i < 6; i++)
        assert_memory_equal(gf_mixer_harness_grads(a)[i], gf_mixer_harness_grads(hb)[i], (size_t)n[i] * sizeof(float));
    gf_mixer_harness_free(a), gf_mixer_harness_free(hb);
}

static void test_offset_mix_zero(void **state) {
    (void)state;
    offset_mix_zero("learned");
    offset_mix_zero("token");
}

/* sum(dout * out) of the layer at input h, in double */
static double mix_loss(gf_mixer_harness *m, const float *h, const float *dout, float *out, int64_t N) {
    gf_mixer_harness_forward(m, out, h);
    double s = 0.0;
    for (int64_t i = 0; i < N; i++) s += (double)dout[i] * out[i];
    return s;
}

/* Central differences of sum(dout * out) in x[k] (a logit or an input), step e. */
static double central(gf_mixer_harness *m, float *x, int64_t k, float e, const float *h, const float *dout, float *out,
                      int64_t N) {
    const float x0 = x[k];
    x[k] = x0 + e;
    const double up = mix_loss(m, h, dout, out, N);
    x[k] = x0 - e;
    const double down = mix_loss(m, h, dout, out, N);
    x[k] = x0;
    return (up - down) / (2.0 * (double)e);
}

static void expect_central(const char *what, int k, double got, double want) {
    if (fabs(got - want) > 2e-3 + 1e-2 * fabs(want))
        fail_msg("%s %d: gradient %.6g, central difference %.6g", what, k, got, want);
}

/* Layer 1 with the mixture's tensors far from 0 (learned: 4 logits; token: also mix.weight (4, d)): the gradients
 * of mix.bias, of 6 entries of mix.weight and of 6 inputs against central differences. */
static void offset_mix_grad(const char *mode) {
    gf_config cfg;
    char key[64];
    snprintf(key, sizeof key, "layers.1.offset_mix=%s", mode);
    const char *sets[] = {"offsets=[[1],[1,2,4,2]]", "heads=[1,2]", "rank=[4,6]", key, NULL};
    gf_mixer_harness *m = harness(sets, &cfg);
    const int64_t d = cfg.d_model, N = B * T * d;
    const bool token = !strcmp(mode, "token");
    float *w = gf_mixer_harness_params(m)[token ? 7 : 6], *wt = token ? gf_mixer_harness_params(m)[6] : NULL;
    const float logits[4] = {1.5f, -1.0f, 0.4f, -2.0f};
    memcpy(w, logits, sizeof logits);
    if (wt) tl_fill_uniform(wt, 4 * d, 9, -1.0f, 1.0f);
    float *h = falloc(N), *dout = falloc(N), *out = falloc(N), *dh = falloc(N);
    tl_fill_uniform(h, N, 3, -1.0f, 1.0f), tl_fill_uniform(dout, N, 4, -1.0f, 1.0f);
    gf_mixer_harness_forward(m, out, h);
    ffill(dh, N, 0.0f);
    gf_mixer_harness_backward(m, dh, dout, h);
    const float *gw = gf_mixer_harness_grads(m)[token ? 7 : 6], *gwt = token ? gf_mixer_harness_grads(m)[6] : NULL;
    double size = 0.0;
    for (int k = 0; k < 4; k++) {
        const double want = central(m, w, k, 1e-2f, h, dout, out, N);
        expect_central("mix.bias", k, gw[k], want);
        size += fabs(want);
    }
    assert_true(size > 1e-2); /* the test can fail */
    for (int k = 0; wt && k < 6; k++) {
        const int64_t at = (k % 4) * d + k * 5 % d;
        expect_central("mix.weight entry", (int)at, gwt[at], central(m, wt, at, 1e-2f, h, dout, out, N));
    }
    for (int k = 0; k < 6; k++) { /* inputs of rows far into the sequence, where every offset has a partner */
        const int64_t at = (T - 1 - k) * d + k * 3;
        expect_central("input", (int)at, dh[at], central(m, h, at, 1e-2f, h, dout, out, N));
    }
    gf_mixer_harness_free(m);
}

static void test_offset_mix_grad(void **state) {
    (void)state;
    offset_mix_grad("learned");
    offset_mix_grad("token");
}

static void test_conv_refused(void **state) {
    (void)state;
    gf_config cfg;
    assert_int_equal(gf_config_preset("grassmann-tiny", &cfg), 0);
    assert_int_equal(gf_config_set(&cfg, "head.kind=classify"), 0);
    assert_int_equal(gf_config_set(&cfg, "direction=bidirectional"), 0);
    tl_expect_error(gf_config_set(&cfg, "conv=2"), "conv 2 in a bidirectional layer");
    assert_int_equal(gf_config_preset("grassmann-tiny", &cfg), 0);
    tl_expect_error(gf_config_set(&cfg, "conv=17"), "conv");
    assert_int_equal(gf_config_preset("grassmann-tiny", &cfg), 0);
    assert_int_equal(gf_config_set(&cfg, "gate=false"), 0);
    tl_expect_error(gf_config_set(&cfg, "gate_form=scalar"), "gate_form scalar with gate false");
    assert_int_equal(gf_config_preset("grassmann-tiny", &cfg), 0);
    tl_expect_error(gf_config_set(&cfg, "gate_form=vector"), "gate_form");
    assert_int_equal(gf_config_preset("grassmann-tiny", &cfg), 0);
    assert_int_equal(gf_config_set(&cfg, "plucker=false"), 0);
    tl_expect_error(gf_config_set(&cfg, "offset_mix=learned"), "offset_mix learned with plucker false");
    tl_expect_error(gf_config_set(&cfg, "offset_mix=token"), "offset_mix token with plucker false");
    assert_int_equal(gf_config_preset("grassmann-tiny", &cfg), 0);
    tl_expect_error(gf_config_set(&cfg, "offset_mix=softmax"), "offset_mix");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_conv, pool_teardown),
        cmocka_unit_test_teardown(test_gate_scalar, pool_teardown),
        cmocka_unit_test_teardown(test_offset_mix_zero, pool_teardown),
        cmocka_unit_test_teardown(test_offset_mix_grad, pool_teardown),
        cmocka_unit_test_teardown(test_conv_refused, pool_teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    pool_release();
    return rc;
}
