/* Encoder-decoders (gf_config.source_vocab > 0; docs/model.md, "Encoder-decoders"): the config's checks and
 * its JSON form, the batch's source checks, what the source's padding may not change, that the decoder reads
 * the source, and the commands that cannot take one yet. tests/parity/parity.sh holds the numbers to PyTorch. */
#include "testlib.h"
#include "model/model_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A small encoder-decoder: a bidirectional encoder of `enc` layers, a causal decoder of `dec`, width 16. */
static char *encdec_json(const char *enc, const char *dec, const char *extra) {
    char *s = malloc(2048);
    snprintf(s, 2048,
             "{\"format\": 3, \"head\": {\"kind\": \"next_token\"}, \"vocab_size\": 11, \"source_vocab\": 13, "
             "\"cross_heads\": 2, \"d_model\": 16, \"n_layer\": 2, \"d_ff\": 24, \"max_len\": 12, \"norm\": \"pre\", "
             "\"direction\": \"bidirectional\", \"layers\": [%s], \"stacks\": [{\"name\": \"decoder\", \"d_model\": 16, "
             "\"d_ff\": 24, \"n_layer\": 2, \"direction\": \"causal\", \"layers\": [%s]}]%s}",
             enc, dec, extra);
    return s;
}

static const char *ATT = "{\"mixer\": \"attention\", \"n_head\": 2}";
static const char *GRASS = "{\"mixer\": \"grassmann\", \"rank\": 4, \"offsets\": [1, 2]}";

static int parse(const char *enc, const char *dec, const char *extra, gf_config *c) {
    char *js = encdec_json(enc, dec, extra);
    int rc = gf_config_from_json(js, "test", c);
    free(js);
    return rc;
}

/* The config reads, writes its two keys back, counts its tensors as the model declares them; others keep
 * their JSON form. */
static void test_config(void **state) {
    (void)state;
    gf_config c, back;
    assert_int_equal(parse(ATT, GRASS, "", &c), 0);
    char *js = gf_config_to_json(&c, false);
    assert_non_null(strstr(js, "\"source_vocab\":13"));
    assert_non_null(strstr(js, "\"cross_heads\":2"));
    assert_int_equal(gf_config_from_json(js, "back", &back), 0);
    assert_int_equal(gf_config_diff(&c, &back, NULL, 0), 0);
    free(js);
    gf_model *m = gf_model_create(&c);
    assert_non_null(m);
    assert_int_equal(gf_config_num_params(&c), gf_model_num_params(m));
    assert_non_null(gf_model_find_tensor(m, "src_emb.weight"));
    assert_non_null(gf_model_find_tensor(m, "enc_ln.weight"));
    assert_non_null(gf_model_find_tensor(m, "decoder.blocks.1.cross.k.weight"));
    assert_non_null(gf_model_find_tensor(m, "decoder.blocks.1.ln3.bias"));
    assert_null(gf_model_find_tensor(m, "decoder.in_proj.weight"));
    assert_null(gf_model_find_tensor(m, "blocks.0.cross.q.weight"));
    gf_model_free(m);
    gf_config lm;
    assert_int_equal(gf_config_preset("grassmann-tiny", &lm), 0);
    js = gf_config_to_json(&lm, false);
    assert_null(strstr(js, "source_vocab"));
    assert_null(strstr(js, "cross_heads"));
    free(js);
}

/* What an encoder-decoder needs, each refusal naming it. */
static void test_config_refusals(void **state) {
    (void)state;
    gf_config c;
    assert_int_equal(parse(ATT, ATT, "", &c), 0);
    tl_expect_error(gf_config_set(&c, "cross_heads=3"), "dividing d_model 16");
    tl_expect_error(gf_config_set(&c, "cross_heads=0"), "cross_heads is 0");
    tl_expect_error(parse("{\"mixer\": \"attention\", \"n_head\": 2, \"block\": \"decoder-pre\"}", ATT, "", &c),
            "only an encoder-decoder's decoder layers have one");
    tl_expect_error(parse(ATT, "{\"mixer\": \"attention\", \"n_head\": 2, \"block\": \"pre\"}", "", &c), "has no cross op");
    char *js = encdec_json(ATT, ATT, "");
    char *p = strstr(js, "\"d_model\": 16, \"d_ff\": 24, \"n_layer\": 2, \"direction\": \"causal\"");
    assert_non_null(p);
    memcpy(p, "\"d_model\": 32", 13); /* the decoder twice as wide */
    tl_expect_error(gf_config_from_json(js, "test", &c), "as wide as its encoder");
    free(js);
    js = encdec_json(ATT, ATT, "");
    char *q = strstr(js, "\"causal\"");
    char buf[2048];
    snprintf(buf, sizeof buf, "%.*s\"bidirectional\"%s", (int)(q - js), js, q + 8);
    tl_expect_error(gf_config_from_json(buf, "test", &c), "is causal");
    free(js);
    gf_config lm;
    assert_int_equal(gf_config_preset("grassmann-tiny", &lm), 0);
    tl_expect_error(gf_config_set(&lm, "cross_heads=2"), "not an encoder-decoder");
    tl_expect_error(gf_config_set(&lm, "source_vocab=5"), "exactly one stack after the first");
    /* gru-attn reads the encoder itself: a decoder layer without a cross op (the default) or with one; never
     * an encoder's layer, nor a language model's */
    const char *GA = "{\"mixer\": \"gru-attn\", \"attention\": \"bahdanau\"}";
    assert_int_equal(parse(ATT, GA, "", &c), 0);
    assert_int_equal(parse(ATT, "{\"mixer\": \"gru-attn\", \"block\": \"decoder-pre\"}", "", &c), 0);
    tl_expect_error(parse(GA, ATT, "", &c), "reads an encoder's output; only an encoder-decoder's decoder layers");
    tl_expect_error(gf_config_set(&lm, "mixers=u"), "reads an encoder's output");
    tl_expect_error(parse(ATT, "{\"mixer\": \"gru-attn\", \"attention\": \"luong\"}", "", &c), "attention");
}

/* A batch of B rows: target ids and targets, a source of S ids (the last row padded after 2). */
typedef struct {
    int32_t ids[3 * 6], tgt[3 * 6], src[3 * 7];
    uint8_t smask[3 * 7];
    gf_batch b;
} batch;

static void make_batch(batch *x, int64_t B, int64_t T, int64_t S, bool padded) {
    for (int64_t i = 0; i < B * T; i++) {
        x->ids[i] = (int32_t)((7 * i + 3) % 11);
        x->tgt[i] = (int32_t)((5 * i + 1) % 11);
    }
    for (int64_t i = 0; i < B * S; i++) {
        x->src[i] = (int32_t)((3 * i + 2) % 13);
        x->smask[i] = !(padded && i / S == B - 1 && i % S >= 2);
    }
    x->b = (gf_batch){.B = B, .T = T, .ids = x->ids, .targets = x->tgt, .S = S, .source = x->src,
                      .source_mask = padded ? x->smask : NULL};
}

static gf_model *model_of(const char *enc, const char *dec) {
    gf_config c;
    assert_int_equal(parse(enc, dec, "", &c), 0);
    gf_model *m = gf_model_create(&c);
    assert_non_null(m);
    gf_model_init(m, 5);
    float *p = gf_model_params(m); /* LayerNorms and biases away from 1 and 0: each one matters */
    for (int64_t i = 0; i < gf_model_num_params(m); i++) p[i] += 0.05f * (float)sin(0.37 * (double)i);
    return m;
}

/* The source's checks: present, in range, within learned positions, mask values 0 or 1. */
static void test_batch_checks(void **state) {
    (void)state;
    gf_model *m = model_of(ATT, ATT);
    batch x;
    float loss;
    make_batch(&x, 2, 5, 6, false);
    assert_int_equal(gf_model_forward_batch(m, &x.b, &loss), 0);
    gf_batch b = x.b;
    b.source = NULL;
    tl_expect_error(gf_model_forward_batch(m, &b, &loss), "has no source");
    b = x.b;
    b.S = 0;
    tl_expect_error(gf_model_forward_batch(m, &b, &loss), "has no source");
    x.src[3] = 13;
    tl_expect_error(gf_model_forward_batch(m, &x.b, &loss), "source id 13 at batch row 0, position 3");
    x.src[3] = 1;
    x.smask[4] = 2;
    b = x.b;
    b.source_mask = x.smask;
    tl_expect_error(gf_model_forward_batch(m, &b, &loss), "source mask value 2");
    batch y;
    make_batch(&y, 1, 2, 7, false);
    y.b.S = 13; /* past max_len 12 (the arrays are not read: the length is refused first) */
    tl_expect_error(gf_model_forward_batch(m, &y.b, &loss), "source length 13 exceeds max_len 12");
    gf_model_free(m);
}

/* Padded source positions change nothing, bit for bit: the loss, the logits, every gradient; and the real
 * source does reach the decoder (a changed source token changes the last row's logits). */
static void padding_and_reach(const char *enc, const char *dec) {
    gf_model *m = model_of(enc, dec);
    batch x;
    float l1, l2;
    make_batch(&x, 3, 6, 7, true);
    const int64_t nl = 3 * 6 * 11, ng = gf_model_num_trainable(m);
    assert_int_equal(gf_model_forward_batch(m, &x.b, &l1), 0);
    float *lg = malloc((size_t)nl * sizeof *lg), *g1 = malloc((size_t)ng * sizeof *g1);
    memcpy(lg, gf_model_logits(m), (size_t)nl * sizeof *lg);
    gf_model_zero_grad(m);
    assert_int_equal(gf_model_backward(m), 0);
    memcpy(g1, gf_model_grads(m), (size_t)ng * sizeof *g1);
    for (int64_t s = 2; s < 7; s++) x.src[2 * 7 + s] = (int32_t)((x.src[2 * 7 + s] + 5) % 13); /* the padding */
    assert_int_equal(gf_model_forward_batch(m, &x.b, &l2), 0);
    assert_true(l1 == l2);
    assert_memory_equal(lg, gf_model_logits(m), (size_t)nl * sizeof *lg);
    gf_model_zero_grad(m);
    assert_int_equal(gf_model_backward(m), 0);
    assert_memory_equal(g1, gf_model_grads(m), (size_t)ng * sizeof *g1);
    x.src[2 * 7 + 1] = (int32_t)((x.src[2 * 7 + 1] + 1) % 13); /* a real source token of the last row */
    assert_int_equal(gf_model_forward_batch(m, &x.b, &l2), 0);
    const float *now = gf_model_logits(m);
    double d0 = 0, d2 = 0;
    for (int64_t i = 0; i < 6 * 11; i++) {
        d0 += fabs((double)now[i] - lg[i]);                   /* row 0: its own source, unchanged */
        d2 += fabs((double)now[2 * 6 * 11 + i] - lg[2 * 6 * 11 + i]); /* row 2 */
    }
    assert_true(d0 == 0.0);
    assert_true(d2 > 1e-4);
    free(lg);
    free(g1);
    gf_model_free(m);
}

static void test_padding_attention(void **state) {
    (void)state;
    padding_and_reach(ATT, ATT);
}

static void test_padding_grassmann(void **state) {
    (void)state;
    padding_and_reach(GRASS, GRASS);
}

/* The cross-attention weights (gf_model_cross_attention): each row sums to 1 over the real source positions,
 * 0 at padded ones, and the weights applied to the cross op's values give back the attention output it saved
 * (model/block.c's layout: q, k, v, o, lse). A layer without a cross op, and no forward yet, are refused. */
static void test_cross_weights(void **state) {
    (void)state;
    gf_model *m = model_of(ATT, GRASS);
    float w1[1];
    tl_expect_error(gf_model_cross_attention(m, 2, w1), "no forward has run yet");
    batch x;
    float loss;
    make_batch(&x, 3, 6, 7, true);
    assert_int_equal(gf_model_forward_batch(m, &x.b, &loss), 0);
    enum { B = 3, T = 6, S = 7, H = 2, D = 16, DH = 8 };
    float *w = malloc(B * H * T * S * sizeof *w);
    tl_expect_error(gf_model_cross_attention(m, 1, w), "layer 1 has no cross op and its mixer does not attend");
    for (int l = 2; l < 4; l++) {
        assert_int_equal(gf_model_cross_attention(m, l, w), 0);
        const float *q = m->la[l].cross_saved, *v = q + B * T * D + B * S * D, *o = v + B * S * D;
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++)
                for (int t = 0; t < T; t++) {
                    const float *row = w + ((b * H + h) * T + t) * S;
                    double sum = 0;
                    for (int s = 0; s < S; s++) {
                        if (!x.smask[b * S + s]) assert_true(row[s] == 0.0f);
                        sum += row[s];
                    }
                    assert_true(fabs(sum - 1.0) < 1e-5);
                    for (int i = 0; i < DH; i++) {
                        double acc = 0;
                        for (int s = 0; s < S; s++) acc += row[s] * v[(b * S + s) * D + h * DH + i];
                        assert_true(fabs(acc - o[(b * T + t) * D + h * DH + i]) < 1e-5);
                    }
                }
    }
    free(w);
    gf_model_free(m);
    /* a gru-attn decoder (Bahdanau's; Luong's general): one head, its weights giving back the contexts c_t it
     * saved (mixers/gru_attn.c: s, r, z, n, ghn, c, out); none's: all on the last real source position */
    const char *const dec[3] = {"{\"mixer\": \"gru-attn\", \"attention\": \"bahdanau\"}",
                                "{\"mixer\": \"gru-attn\", \"attention\": \"general\"}",
                                "{\"mixer\": \"gru-attn\", \"attention\": \"none\"}"};
    for (int k = 0; k < 3; k++) {
        m = model_of(ATT, dec[k]);
        assert_int_equal(gf_model_forward_batch(m, &x.b, &loss), 0);
        assert_int_equal(gf_model_cross_heads(m, 2), 1);
        assert_int_equal(gf_model_cross_heads(m, 1), 0);
        w = malloc(B * T * S * sizeof *w);
        assert_int_equal(gf_model_cross_attention(m, 3, w), 0);
        const float *c = m->la[3].mix_saved + 5 * B * T * D, *M = m->memory.x;
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) {
                double sum = 0;
                for (int s = 0; s < S; s++) sum += w[(b * T + t) * S + s];
                assert_true(fabs(sum - 1.0) < 1e-5);
                for (int i = 0; i < D; i++) {
                    double acc = 0;
                    for (int s = 0; s < S; s++) acc += w[(b * T + t) * S + s] * M[(b * S + s) * D + i];
                    assert_true(fabs(acc - c[(b * T + t) * D + i]) < 1e-5);
                }
            }
        free(w);
        gf_model_free(m);
    }
}

/* Streaming, generation and scoring text read no source: refused with a message. */
static void test_no_stream(void **state) {
    (void)state;
    gf_model *m = model_of(ATT, GRASS);
    assert_null(gf_stream_create(m));
    assert_non_null(strstr(gf_last_error(), "encoder-decoder"));
    gf_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config),          cmocka_unit_test(test_config_refusals),
        cmocka_unit_test(test_batch_checks),    cmocka_unit_test(test_padding_attention),
        cmocka_unit_test(test_padding_grassmann), cmocka_unit_test(test_no_stream),
        cmocka_unit_test(test_cross_weights),
    };
    return cmocka_run_group_tests_name("encoder-decoders", tests, NULL, NULL);
}
