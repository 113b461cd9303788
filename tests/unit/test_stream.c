/* Streaming inference (src/infer/stream.c) against the full forward: at every position of a long
 * sequence, the logits of gf_stream_step equal those of gf_model_forward on the same prefix, for every
 * block kind, position kind and mixer mix; plus its errors, reset, and the state it holds. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "testlib.h"

/* Stream T tokens and compare each position's logits with the full forward over all T. */
static void check_stream(const char *what, const char *preset, const char *const *sets, int64_t T) {
    gf_model *m = tl_make_model(preset, sets, 11);
    for (int i = 0; i < gf_model_num_tensors(m); i++) { /* offset_mix learned or token: logits far from 0 */
        const gf_tensor_info *ti = gf_model_tensor(m, i);
        for (int64_t k = 0; strstr(ti->name, ".mix.mix.") && k < ti->numel; k++)
            ti->data[k] = (0.9f * (float)((k * 5) % 7) - 2.5f) * (ti->ndim == 2 ? 0.3f : 1.0f);
    }
    const gf_config *c = gf_model_config(m);
    const int64_t V = c->vocab_size;
    int32_t *tok = malloc((size_t)T * sizeof *tok);
    for (int64_t i = 0; i < T; i++) tok[i] = (int32_t)(gf_rand64(5, (uint64_t)i) % (uint64_t)V);
    if (gf_model_forward(m, tok, NULL, 1, T, NULL)) fail_msg("%s: forward: %s", what, gf_last_error());
    float *full = malloc((size_t)(T * V) * sizeof *full);
    memcpy(full, gf_model_logits(m), (size_t)(T * V) * sizeof *full);
    gf_stream *s = gf_stream_create(m);
    assert_non_null(s);
    double worst = 0.0, scale = 0.0;
    int64_t at = 0;
    for (int pass = 0; pass < 3; pass++) { /* after a reset, the same logits; pass 2 feeds without logits */
        for (int64_t t = 0; t < T; t++) {
            if (pass == 2 && t % 3 != 2) { /* two of every three tokens through gf_stream_feed */
                if (gf_stream_feed(s, tok + t, 1)) fail_msg("%s: feed %lld: %s", what, (long long)t, gf_last_error());
                continue;
            }
            const float *lg = gf_stream_step(s, tok[t]);
            if (!lg) fail_msg("%s: step %lld: %s", what, (long long)t, gf_last_error());
            for (int64_t v = 0; v < V; v++) {
                double e = fabs((double)lg[v] - full[t * V + v]);
                scale = fmax(scale, fabs(full[t * V + v]));
                if (e > worst) worst = e, at = t;
            }
        }
        assert_int_equal(gf_stream_pos(s), T);
        gf_stream_reset(s);
        assert_int_equal(gf_stream_pos(s), 0);
    }
    if (worst > 1e-5)
        fail_msg("%s: streaming logits differ from the full forward by %.3g at position %lld (want <= 1e-5; "
                 "largest |logit| %.3g)", what, worst, (long long)at, scale);
    if (scale < 0.1) fail_msg("%s: logits too small (%.3g) for the comparison to mean anything", what, scale);
    gf_stream_free(s);
    gf_model_free(m);
    free(full);
    free(tok);
}

static void test_stream_grassmann(void **state) {
    (void)state;
    const char *pre_none[] = {"pos=none", "max_len=32", NULL};
    check_stream("grassmann pre, pos none, 150 positions (past max_len)", "grassmann-tiny", pre_none, 150);
    const char *post[] = {"norm=post", "extra_proj=true", "pos=sinusoidal", NULL};
    check_stream("grassmann post + extra_proj, sinusoidal, 100 positions", "grassmann-tiny", post, 100);
    const char *learned[] = {"max_len=64", "offsets=2,3,3,7", "rank=5", NULL};
    check_stream("grassmann pre, learned, offsets 2,3,3,7, rank 5, 64 positions", "grassmann-tiny", learned, 64);
    const char *grid[] = {"pos=none", "grid=5", "offsets=1,4,5,6,10", "rank=6", NULL}; /* (0,1),(1,-1),(1,0),(1,1),(2,0) */
    check_stream("grassmann pre, a grid of 5 columns, offsets 1,4,5,6,10, 60 positions", "grassmann-tiny", grid, 60);
    const char *mix_norm[] = {"pos=none", "layers.0.block=pre-mix-norm", "layers.1.block=pre-mix-norm", NULL};
    check_stream("grassmann, block pre-mix-norm (alphaXiv's), 80 positions", "grassmann-tiny", mix_norm, 80);
    const char *windowed[] = {"pos=none", "window=8", "offsets=1,2,4,12", "rank=8", "heads=4", NULL};
    check_stream("grassmann pre, windows of 8, offsets 1,2,4,12, rank 8 in 4 heads, 70 positions", "grassmann-tiny",
                 windowed, 70);
}

/* The paper's ablations stream with the same ring of reduced vectors; so does conv, with a ring of inputs, and
 * the scalar gate. */
static void test_stream_ablations(void **state) {
    (void)state;
    const char *no_plucker[] = {"pos=none", "max_len=32", "plucker=false", NULL};
    check_stream("grassmann plucker false, pos none, 150 positions (past max_len)", "grassmann-tiny", no_plucker, 150);
    const char *no_gate[] = {"norm=post", "extra_proj=true", "pos=sinusoidal", "gate=false", NULL};
    check_stream("grassmann gate false, post + extra_proj, sinusoidal, 100 positions", "grassmann-tiny", no_gate, 100);
    const char *both[] = {"pos=none", "window=8", "offsets=1,2,4,12", "rank=6", "plucker=false", "gate=false", NULL};
    check_stream("grassmann plucker and gate false, windows of 8, offsets 1,2,4,12, 70 positions", "grassmann-tiny", both,
                 70);
    /* conv (issue 55): a ring of the last conv - 1 inputs beside the ring of reduced vectors */
    const char *conv[] = {"pos=none", "max_len=32", "conv=3", NULL};
    check_stream("grassmann conv 3, pos none, 150 positions (past max_len)", "grassmann-tiny", conv, 150);
    const char *conv_mix[] = {"norm=post", "extra_proj=true", "layers.0.conv=1", "layers.1.conv=5", "max_len=64", NULL};
    check_stream("grassmann conv 1 and 5, post + extra_proj, 64 positions", "grassmann-tiny", conv_mix, 64);
    const char *scalar[] = {"pos=none", "max_len=32", "layers.1.gate_form=scalar", "conv=2", NULL};
    check_stream("grassmann scalar gate in layer 1, conv 2, pos none, 90 positions", "grassmann-tiny", scalar, 90);
    const char *mix[] = {"max_len=48", "offset_mix=learned", "layers.1.offsets=1,2,4,2", "layers.1.heads=2", NULL};
    check_stream("grassmann learned offset mixture (logits set), heads 2 in layer 1, 48 positions", "grassmann-tiny",
                 mix, 48);
    const char *token[] = {"max_len=48", "offset_mix=token", "layers.0.offsets=1,3", "layers.1.heads=2", NULL};
    check_stream("grassmann offset mixture from the token (tensors set), heads 2 in layer 1, 48 positions",
                 "grassmann-tiny", token, 48);
}

static void test_stream_transformer(void **state) {
    (void)state;
    const char *pre[] = {"max_len=96", NULL};
    check_stream("transformer pre, learned, 96 positions", "transformer-tiny", pre, 96);
    const char *post[] = {"norm=post", "pos=sinusoidal", "gelu=tanh", NULL};
    check_stream("transformer post, sinusoidal, tanh GELU, 130 positions (past max_len)", "transformer-tiny", post, 130);
    const char *bert[] = {"norm=post", "emb_norm=true", "ln_eps=1e-12", "max_len=40", NULL};
    check_stream("transformer post, BERT's embedding LayerNorm, eps 1e-12, 40 positions", "transformer-tiny", bert, 40);
}

static void test_stream_window(void **state) {
    (void)state;
    const char *glob[] = {"mixers=w", "window=5", "n_global=3", "pos=none", NULL};
    check_stream("window 5, 3 globals, pos none, 150 positions (past max_len)", "transformer-tiny", glob, 150);
    const char *post[] = {"mixers=w", "window=8", "norm=post", "pos=sinusoidal", NULL};
    check_stream("window 8, post, sinusoidal, 100 positions (past max_len)", "transformer-tiny", post, 100);
    /* the ring grows with the stream's capacity (256 first) up to w slots, then the globals leave it */
    const char *grow[] = {"mixers=w", "window=300", "n_global=2", "pos=none", NULL};
    check_stream("window 300 (more than the first capacity), 2 globals, pos none, 620 positions", "transformer-tiny",
                 grow, 620);
    const char *hyb[] = {"mixers=g,w,a", "window=4", "n_global=1", "max_len=64", NULL};
    check_stream("hybrid G,W,A, window 4, 1 global, learned, 64 positions", "hybrid-tiny", hyb, 64);
}

static void test_stream_hybrid(void **state) {
    (void)state;
    const char *pre[] = {"pos=none", NULL};
    check_stream("hybrid G,A,G pre, pos none, 140 positions", "hybrid-tiny", pre, 140);
    const char *post[] = {"norm=post", "mixers=a,g,g", "extra_proj=true", "tie_head=false", "max_len=80", NULL};
    check_stream("hybrid A,G,G post + extra_proj, untied, 80 positions", "hybrid-tiny", post, 80);
    /* the study's hybrid presets, narrowed: attention last, attention in a middle layer */
    const char *narrow[] = {"vocab_size=64", "d_model=32", "d_ff=64", "rank=6", "dropout=0", "pos=none", NULL};
    check_stream("hybrid-last-small narrowed, pos none, 150 positions", "hybrid-last-small", narrow, 150);
    check_stream("hybrid-middle-small narrowed, pos none, 150 positions", "hybrid-middle-small", narrow, 150);
    const char *narrow_w[] = {"vocab_size=64", "d_model=32", "d_ff=64", "rank=6", "dropout=0", "pos=none",
                              "layers.1.window=5", "layers.3.window=7", "layers.3.n_global=2", NULL};
    check_stream("hybrid-window-small narrowed (windows 5 and 7, 2 globals), pos none, 150 positions",
                 "hybrid-window-small", narrow_w, 150);
}

static void test_stream_performer(void **state) {
    (void)state;
    const char *pre[] = {"mixers=p,p", "features=24", "max_len=96", NULL};
    check_stream("performer pre, learned, 24 features, 96 positions (chunks of 64)", "transformer-tiny", pre, 96);
    const char *none[] = {"mixers=p,a", "features=9", "n_head=2", "pos=none", "max_len=32", NULL};
    check_stream("performer,attention pre, pos none, 9 features, 2 heads, 150 positions (past max_len)",
                 "transformer-tiny", none, 150);
    const char *post[] = {"norm=post", "mixers=p,g", "pos=sinusoidal", NULL};
    check_stream("performer,grassmann post, sinusoidal, 128 features, 130 positions", "transformer-tiny", post, 130);
}

static void test_stream_gru(void **state) {
    (void)state;
    const char *pre[] = {"mixers=r,r", "pos=none", NULL};
    check_stream("gru,gru pre, pos none, 150 positions", "transformer-tiny", pre, 150);
    const char *post[] = {"norm=post", "mixers=r,g", "pos=sinusoidal", NULL};
    check_stream("gru,grassmann post, sinusoidal, 130 positions", "transformer-tiny", post, 130);
}

/* attention deconstructed: fixed-mix's cache of values, the band of a span past max_len and span 1 (no mixing);
 * attn-form's three forms over the KV cache; emb-qk's keys from the embeddings (after emb_ln) */
static void test_stream_deconstructed(void **state) {
    (void)state;
    const char *band[] = {"mixers=f,a", "layers.0.span=5", "n_head=2", "pos=none", "max_len=32", NULL};
    check_stream("fixed-mix span 5,attention pre, pos none, 150 positions (past max_len)", "transformer-tiny", band, 150);
    const char *post[] = {"mixers=f,f", "layers.1.span=1", "norm=post", "pos=sinusoidal", NULL};
    check_stream("fixed-mix span max_len 64,span 1 post, sinusoidal, 130 positions", "transformer-tiny", post, 130);
    const char *hyb[] = {"mixers=f,g", "max_len=96", NULL};
    check_stream("fixed-mix,grassmann pre, learned, 96 positions", "transformer-tiny", hyb, 96);
    const char *forms[] = {"mixers=x,x", "layers.0.form=\"sigmoid\"", "layers.1.form=\"l1\"", "pos=none", NULL};
    check_stream("attn-form sigmoid,l1 pre, pos none, 150 positions (past max_len)", "transformer-tiny", forms, 150);
    const char *relu[] = {"mixers=x,a", "norm=post", "max_len=96", NULL};
    check_stream("attn-form relu,attention post, learned, 96 positions", "transformer-tiny", relu, 96);
    const char *emb[] = {"mixers=a,e", "pos=none", NULL};
    check_stream("attention,emb-qk pre, pos none, 150 positions (past max_len)", "transformer-tiny", emb, 150);
    const char *emb_post[] = {"mixers=e,e", "norm=post", "emb_norm=true", "max_len=80", NULL};
    check_stream("emb-qk,emb-qk post, BERT's embedding LayerNorm, 80 positions", "transformer-tiny", emb_post, 80);
}

/* The state bytes of a stream of transformer-tiny with sets after one token, checked to be the same after
 * 3,000 (a state flat in position). */
static size_t flat_state_bytes(const char *const *sets) {
    gf_model *m = tl_make_model("transformer-tiny", sets, 3);
    gf_stream *s = gf_stream_create(m);
    assert_non_null(gf_stream_step(s, 1));
    const size_t b1 = gf_stream_state_bytes(s);
    for (int t = 1; t < 3000; t++) assert_non_null(gf_stream_step(s, t % 64));
    assert_int_equal(gf_stream_state_bytes(s), b1);
    gf_stream_free(s);
    gf_model_free(m);
    return b1;
}

static void test_stream_errors_and_state(void **state) {
    (void)state;
    /* learned positions: the step past max_len is a clear error and leaves the stream usable */
    gf_model *m = tl_make_model("grassmann-tiny", NULL, 3);
    const int64_t maxlen = gf_model_config(m)->max_len;
    gf_stream *s = gf_stream_create(m);
    for (int64_t t = 0; t < maxlen; t++) assert_non_null(gf_stream_step(s, 1));
    assert_null(gf_stream_step(s, 1));
    assert_non_null(strstr(gf_last_error(), "max_len"));
    assert_int_equal(gf_stream_pos(s), maxlen);
    assert_null(gf_stream_step(s, -1));
    assert_non_null(strstr(gf_last_error(), "vocabulary"));
    gf_stream_reset(s);
    assert_null(gf_stream_step(s, 64)); /* vocab 64 */
    assert_int_equal(gf_stream_pos(s), 0);
    assert_non_null(gf_stream_step(s, 63));
    gf_stream_free(s);
    gf_model_free(m);

    /* state: flat for a Grassmann model with no positions, growing for attention */
    const char *none[] = {"pos=none", NULL};
    m = tl_make_model("grassmann-tiny", none, 3);
    s = gf_stream_create(m);
    assert_non_null(gf_stream_step(s, 1));
    size_t b1 = gf_stream_state_bytes(s);
    for (int t = 1; t < 3000; t++) assert_non_null(gf_stream_step(s, t % 64));
    assert_int_equal(gf_stream_state_bytes(s), b1);
    /* 2 layers x ring of 16 offsets x rank 6 floats */
    assert_int_equal(b1, 2 * 16 * 6 * sizeof(float));
    gf_stream_free(s);
    gf_model_free(m);
    /* window attention: a ring of w keys and values plus the g globals, flat */
    const char *wnone[] = {"mixers=w", "window=7", "n_global=2", "pos=none", NULL};
    assert_int_equal(flat_state_bytes(wnone), 2 * (7 + 2) * 2 * 32 * sizeof(float)); /* 2 layers x (w + g) x k, v of d = 32 */
    const char *tnone[] = {"pos=none", NULL};
    m = tl_make_model("transformer-tiny", tnone, 3);
    s = gf_stream_create(m);
    assert_non_null(gf_stream_step(s, 1));
    b1 = gf_stream_state_bytes(s);
    for (int t = 1; t < 3000; t++) assert_non_null(gf_stream_step(s, t % 64));
    assert_true(gf_stream_state_bytes(s) >= (size_t)3000 * 2 * 32 * 2 * sizeof(float)); /* 2 layers, k and v */
    assert_true(gf_stream_state_bytes(s) > b1);
    gf_stream_free(s);
    gf_model_free(m);
    /* performer: flat, the running sums: 2 layers x 4 heads x 16 features x (8 + 1) floats */
    const char *pnone[] = {"pos=none", "mixers=p,p", "features=16", NULL};
    assert_int_equal(flat_state_bytes(pnone), 2 * 4 * 16 * (8 + 1) * sizeof(float));
    /* gru: flat, h: 2 layers x d = 32 */
    const char *rnone[] = {"pos=none", "mixers=r,r", NULL};
    assert_int_equal(flat_state_bytes(rnone), 2 * 32 * sizeof(float));
}

/* gf_stream_next (generation): the logits after ids[0..n) for n = 1, 2, ... equal the full forward's over the
 * context (the last max_len ids with learned positions, where the stream slides; all of them otherwise, where it
 * never restarts), and ids that do not extend the stream's are refused. */
static void check_next(const char *what, const char *const *sets, int64_t N) {
    gf_model *m = tl_make_model("hybrid-tiny", sets, 13);
    const gf_config *c = gf_model_config(m);
    const int64_t V = c->vocab_size, W = c->pos == GF_POS_LEARNED ? c->max_len : N;
    int32_t *ids = malloc((size_t)N * sizeof *ids);
    for (int64_t i = 0; i < N; i++) ids[i] = (int32_t)(gf_rand64(9, (uint64_t)i) % (uint64_t)V);
    gf_stream *s = gf_stream_create(m);
    float *lg = malloc((size_t)V * sizeof *lg);
    double worst = 0.0;
    for (int64_t n = 1; n <= N; n++) {
        const float *p = gf_stream_next(s, ids, n);
        if (!p) fail_msg("%s: next %lld: %s", what, (long long)n, gf_last_error());
        memcpy(lg, p, (size_t)V * sizeof *lg);
        assert_int_equal(gf_stream_pos(s), n < W ? n : W); /* the window it holds */
        const int64_t T = n < W ? n : W;
        if (gf_model_forward(m, ids + n - T, NULL, 1, T, NULL)) fail_msg("%s: forward: %s", what, gf_last_error());
        const float *full = gf_model_logits(m) + (T - 1) * V;
        for (int64_t v = 0; v < V; v++) worst = tl_max_nan(worst, fabs((double)lg[v] - full[v]));
    }
    if (!(worst <= 1e-5)) fail_msg("%s: gf_stream_next's logits differ from the forward over the context by %.3g", what, worst);
    assert_null(gf_stream_next(s, ids, N - 1)); /* it has consumed more than that context */
    assert_non_null(strstr(gf_last_error(), "expected ids that extend what it was given"));
    assert_null(gf_stream_next(s, ids, 0));
    gf_stream_reset(s);
    assert_non_null(gf_stream_next(s, ids, 3)); /* a reset stream starts at ids[0] */
    assert_int_equal(gf_stream_pos(s), 3);
    gf_stream_free(s);
    gf_model_free(m);
    free(lg);
    free(ids);
}

static void test_stream_next(void **state) {
    (void)state;
    const char *learned[] = {"max_len=16", NULL};
    check_next("hybrid, learned positions, max_len 16, 40 ids (the window slides)", learned, 40);
    const char *sinus[] = {"pos=sinusoidal", NULL};
    check_next("hybrid, sinusoidal, 40 ids (no window)", sinus, 40);
}

/* A streamed token of a small model runs on one thread (the stream's rule), and the threads set before are
 * set again after every step, feed and error. */
static void test_stream_threads(void **state) {
    (void)state;
    gf_model *m = tl_make_model("grassmann-tiny", NULL, 3);
    gf_stream *s = gf_stream_create(m);
    assert_non_null(s);
    const int before = gf_threads();
    gf_set_threads(2);
    const int32_t ids[] = {1, 2, 3};
    assert_non_null(gf_stream_step(s, 1));
    assert_int_equal(gf_threads(), 2);
    assert_int_equal(gf_stream_feed(s, ids, 3), 0);
    assert_int_equal(gf_threads(), 2);
    assert_null(gf_stream_step(s, 1 << 30)); /* outside the vocabulary */
    assert_int_equal(gf_threads(), 2);
    gf_set_threads(before);
    gf_stream_free(s);
    gf_model_free(m);
}

/* A large token (a hybrid of 5.3M parameters, above the stream's 4M multiply-adds) runs on one thread or two,
 * whichever its tokens measure faster, trying the other every 32 or more tokens: its logits must have the
 * bits of a stream held to one thread, token for token (a choice by speed must never change a token), and
 * the threads set before are set again. */
static void test_stream_threads_large(void **state) {
    (void)state;
    const char *sets[] = {"vocab_size=20000", "d_model=256", "d_ff=1024", "pos=sinusoidal", NULL};
    gf_model *m = tl_make_model("hybrid-tiny", sets, 5);
    const int64_t V = gf_model_config(m)->vocab_size, T = 200;
    float *one = malloc((size_t)(T * V) * sizeof *one);
    const int before = gf_threads();
    for (int th = 1; th <= 2; th++) {
        gf_set_threads(th);
        gf_stream *s = gf_stream_create(m);
        assert_non_null(s);
        for (int64_t t = 0; t < T; t++) {
            const int32_t id = (int32_t)(gf_rand64(9, (uint64_t)t) % (uint64_t)V);
            if (t % 10 == 9) { /* fed tokens are not timed, and run on the choice in force */
                assert_int_equal(gf_stream_feed(s, &id, 1), 0);
                continue;
            }
            const float *lg = gf_stream_step(s, id);
            if (!lg) fail_msg("step %lld: %s", (long long)t, gf_last_error());
            assert_int_equal(gf_threads(), th);
            if (th == 1) memcpy(one + t * V, lg, (size_t)V * sizeof *lg);
            else if (memcmp(one + t * V, lg, (size_t)V * sizeof *lg))
                fail_msg("position %lld: the logits on two threads are not the bits of one thread", (long long)t);
        }
        gf_stream_free(s);
    }
    gf_set_threads(before);
    free(one);
    gf_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stream_next),
        cmocka_unit_test(test_stream_threads),
        cmocka_unit_test(test_stream_threads_large),
        cmocka_unit_test(test_stream_grassmann),
        cmocka_unit_test(test_stream_ablations),
        cmocka_unit_test(test_stream_transformer),
        cmocka_unit_test(test_stream_window),
        cmocka_unit_test(test_stream_hybrid),
        cmocka_unit_test(test_stream_performer),
        cmocka_unit_test(test_stream_gru),
        cmocka_unit_test(test_stream_deconstructed),
        cmocka_unit_test(test_stream_errors_and_state),
    };
    return cmocka_run_group_tests_name("stream", tests, NULL, NULL);
}
