/* Decoding an encoder-decoder (gf_model_decode, src/infer/decode.c) held to references written here:
 * - every target a small model can give (each of up to max_len tokens then the end, or max_len tokens) scored
 *   one at a time by a teacher-forced forward, the best by the same score: a beam wide enough to keep every
 *   hypothesis must find it, with and without a length penalty;
 * - greedy decoding as a plain loop (the first largest logit, until the end token): beam 1 must give it;
 *   (the best targets of these random models are none or max_len tokens: the tests check both are met);
 * - the options and sources it refuses;
 * - the streamed decoder (infer/source_memory.h) of every family that streams: its logits at every position held
 *   to the full forward's, and its decodings (greedy and beam) to those of full forwards at every step. */
#include "testlib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infer/source_memory.h"
#include "sources/seq2seq_source.h"

enum { V = 4, EOS = 3, L = 4 }; /* tokens 0, 1, 2, and the end (also the decoder's first input) */

/* A small encoder-decoder whose end token's logit is moved by about -eos_shift (its own head row against
 * ln_f's bias, set to 1): the best targets then run from none to max_len tokens as the shift grows. */
static gf_model *small_model(const char *dec_mixer, double eos_shift) {
    char js[1400];
    snprintf(js, sizeof js,
             "{\"format\": 3, \"head\": {\"kind\": \"next_token\"}, \"vocab_size\": %d, \"source_vocab\": 7, "
             "\"cross_heads\": 2, \"tie_head\": false, \"d_model\": 8, \"n_layer\": 1, \"d_ff\": 16, \"max_len\": 8, \"norm\": \"pre\", "
             "\"direction\": \"bidirectional\", \"layers\": [{\"mixer\": \"attention\", \"n_head\": 2}], "
             "\"stacks\": [{\"name\": \"decoder\", \"d_model\": 8, \"d_ff\": 16, \"n_layer\": 2, \"direction\": "
             "\"causal\", \"layers\": [%s]}]}", V, dec_mixer);
    gf_config c;
    assert_int_equal(gf_config_from_json(js, "test", &c), 0);
    gf_model *m = gf_model_create(&c);
    assert_non_null(m);
    gf_model_init(m, 3);
    float *p = gf_model_params(m); /* far from uniform: distributions of their own, few near-ties */
    for (int64_t i = 0; i < gf_model_num_params(m); i++) p[i] += 0.6f * (float)sin(1.7 * (double)i + 0.3);
    float *bias = gf_model_find_tensor(m, "ln_f.bias")->data, *eos = gf_model_find_tensor(m, "lm_head.weight")->data;
    for (int k = 0; k < 8; k++) {
        bias[k] = 1.0f;
        eos[EOS * 8 + k] -= (float)(eos_shift / 8);
    }
    return m;
}

static double penalty(double alpha, int64_t n) { return alpha > 0 ? pow((5.0 + (double)n) / 6.0, alpha) : 1.0; }

/* The log-probability of target y[0..k) (then the end token when ended) for source src under an ensemble of
 * K models (one row each, teacher-forced): at each step the log of the mean of the models' probabilities of
 * the wanted token, summed over the steps. One model: its log-softmax summed. */
static double score_mix(gf_model *const *ms, int K, const int32_t *src, int64_t S, const int32_t *y, int64_t k,
                        bool ended) {
    int32_t ids[16];
    double p[16] = {0}; /* each step's mean probability */
    const int64_t T = ended ? k + 1 : k;
    assert_true(T <= 16);
    ids[0] = EOS;
    for (int64_t i = 0; i + 1 < T; i++) ids[i + 1] = y[i];
    for (int j = 0; j < K; j++) {
        gf_batch b = {.B = 1, .T = T, .ids = ids, .S = S, .source = src};
        assert_int_equal(gf_model_forward_batch(ms[j], &b, NULL), 0);
        for (int64_t t = 0; t < T; t++) {
            const float *l = gf_model_logits(ms[j]) + t * V;
            double mx = l[0], s = 0.0;
            for (int v = 1; v < V; v++) mx = l[v] > mx ? l[v] : mx;
            for (int v = 0; v < V; v++) s += exp((double)l[v] - mx);
            p[t] += exp((double)l[t < k ? y[t] : EOS] - mx) / s / K;
        }
    }
    double lp = 0.0;
    for (int64_t t = 0; t < T; t++) lp += log(p[t]);
    return lp;
}

static double score_one(gf_model *m, const int32_t *src, int64_t S, const int32_t *y, int64_t k, bool ended) {
    return score_mix(&m, 1, src, S, y, k, ended);
}

typedef struct {
    int32_t y[L];
    int64_t k;
    double score, second; /* the best score, and the runner-up's */
} best;

/* Every target of the search's space, scored under the ensemble of K models; the best kept (an earlier one first
 * among equals). */
static void exhaustive(gf_model *const *ms, int K, const int32_t *src, int64_t S, double alpha, best *out) {
    out->score = out->second = -INFINITY;
    for (int64_t k = 0; k <= L; k++) {
        int64_t count = 1;
        for (int64_t i = 0; i < k; i++) count *= 3;
        for (int64_t code = 0; code < count; code++) {
            int32_t y[L];
            for (int64_t i = 0, c = code; i < k; i++, c /= 3) y[k - 1 - i] = (int32_t)(c % 3);
            const bool ended = k < L; /* max_len tokens finish without the end token */
            const double sc = score_mix(ms, K, src, S, y, k, ended) / penalty(alpha, ended ? k + 1 : k);
            if (sc > out->score) {
                out->second = out->score;
                out->score = sc;
                memcpy(out->y, y, sizeof y);
                out->k = k;
            } else if (sc > out->second) {
                out->second = sc;
            }
        }
    }
}

static const int32_t SRC[3][6] = {{1, 4, 2, 6, 0, 3}, {5, 5, 1, 0, 0, 0}, {2, 0, 0, 0, 0, 0}};
static const int64_t SLEN[3] = {6, 3, 1};

static int seen_lengths; /* bit k: some exhaustive best had k tokens (the tests cover none and max_len) */

static void wide_beam_is_exhaustive(const char *mixer, double alpha, double shift) {
    gf_model *m = small_model(mixer, shift);
    gf_decode_opts o = gf_decode_opts_default();
    o.beam = 81; /* 3^4: every hypothesis lives */
    o.max_len = L;
    o.bos = o.eos = EOS;
    o.length_penalty = alpha;
    for (int s = 0; s < 3; s++) {
        best ref;
        exhaustive(&m, 1, SRC[s], SLEN[s], alpha, &ref);
        int32_t out[L];
        int64_t n;
        double sc;
        assert_int_equal(gf_model_decode(m, SRC[s], SLEN[s], &o, out, &n, &sc), 0);
        if (fabs(sc - ref.score) > 1e-5 * (1 + fabs(ref.score)))
            fail_msg("source %d: beam score %.9g, exhaustive best %.9g", s, sc, ref.score);
        seen_lengths |= 1 << ref.k;
        if (ref.score - ref.second > 1e-5) { /* a clear best: the same tokens */
            assert_int_equal(n, ref.k);
            assert_memory_equal(out, ref.y, (size_t)n * sizeof(int32_t));
        }
    }
    gf_model_free(m);
}

static const char *ATT = "{\"mixer\": \"attention\", \"n_head\": 2}";
static const char *GRASS = "{\"mixer\": \"grassmann\", \"rank\": 4, \"offsets\": [1, 2]}";

static void test_exhaustive_attention(void **state) {
    (void)state;
    seen_lengths = 0;
    for (double sh = 0.5; sh <= 2.5; sh += 1) wide_beam_is_exhaustive(ATT, 0.0, sh), wide_beam_is_exhaustive(ATT, 1.0, sh);
    assert_true((seen_lengths & 1) && (seen_lengths & (1 << L)));
}

static void test_exhaustive_grassmann(void **state) {
    (void)state;
    seen_lengths = 0;
    for (double sh = 0.5; sh <= 2.5; sh += 1) wide_beam_is_exhaustive(GRASS, 0.0, sh), wide_beam_is_exhaustive(GRASS, 0.6, sh);
    assert_true((seen_lengths & 1) && (seen_lengths & (1 << L)));
}

/* Greedy as a plain loop: the first largest logit each step, until the end or max_len tokens. */
static void test_greedy(void **state) {
    (void)state;
    gf_model *m = small_model(GRASS, 1.25); /* greedy stops at once for one source, runs to max_len for two */
    gf_decode_opts o = gf_decode_opts_default();
    o.max_len = 6;
    o.bos = o.eos = EOS;
    int lengths = 0;
    for (int s = 0; s < 3; s++) {
        int32_t ids[8] = {EOS}, want[8];
        int64_t k = 0;
        for (; k < o.max_len; k++) {
            gf_batch b = {.B = 1, .T = k + 1, .ids = ids, .S = SLEN[s], .source = SRC[s]};
            assert_int_equal(gf_model_forward_batch(m, &b, NULL), 0);
            const float *l = gf_model_logits(m) + k * V;
            int32_t arg = 0;
            for (int v = 1; v < V; v++) arg = l[v] > l[arg] ? v : arg;
            if (arg == EOS) break;
            want[k] = ids[k + 1] = arg;
        }
        int32_t out[8];
        int64_t n;
        double sc;
        assert_int_equal(gf_model_decode(m, SRC[s], SLEN[s], &o, out, &n, &sc), 0);
        lengths |= 1 << k;
        assert_int_equal(n, k);
        assert_memory_equal(out, want, (size_t)k * sizeof(int32_t));
        const double ref = score_one(m, SRC[s], SLEN[s], want, k, k < o.max_len);
        assert_true(fabs(sc - ref) <= 1e-5 * (1 + fabs(ref)));
    }
    assert_true((lengths & 1) && (lengths & (1 << 6)));
    gf_model_free(m);
}

static void test_refusals(void **state) {
    (void)state;
    gf_model *m = small_model(ATT, 0.0);
    gf_decode_opts o = gf_decode_opts_default();
    o.bos = o.eos = EOS;
    int32_t out[64];
    int64_t n;
    o.max_len = 9;
    tl_expect_error(gf_model_decode(m, SRC[0], 6, &o, out, &n, NULL), "max_len 9 is above the model's max_len 8");
    o.max_len = 4;
    o.beam = 0;
    tl_expect_error(gf_model_decode(m, SRC[0], 6, &o, out, &n, NULL), "beam is 0");
    o.beam = GF_DECODE_MAX_BEAM + 1; /* two streams a hypothesis: thousands would cost gigabytes */
    tl_expect_error(gf_model_decode(m, SRC[0], 6, &o, out, &n, NULL), "beam is 257; expected 1 (greedy) to 256");
    o.beam = 2;
    o.eos = V;
    tl_expect_error(gf_model_decode(m, SRC[0], 6, &o, out, &n, NULL), "outside the target vocabulary");
    o.eos = EOS;
    tl_expect_error(gf_model_decode(m, SRC[0], 0, &o, out, &n, NULL), "the source is empty");
    const int32_t bad[2] = {1, 7};
    tl_expect_error(gf_model_decode(m, bad, 2, &o, out, &n, NULL), "source id 7");
    o.beam = 1, o.length_penalty = 0.6; /* greedy stops at the first end: no lengths to weigh */
    tl_expect_error(gf_model_decode(m, SRC[0], 6, &o, out, &n, NULL), "length_penalty 0.6 with beam 1");
    gf_config c = *gf_model_config(m);
    assert_int_equal(gf_config_set(&c, "pos=none"), 0);
    gf_model *none = gf_model_create(&c); /* no position limit: a max_len whose penalty passes the largest double */
    assert_non_null(none);
    o.beam = 2, o.length_penalty = 100, o.max_len = 1 << 20;
    tl_expect_error(gf_model_decode(none, SRC[0], 6, &o, out, &n, NULL), "passes the largest double");
    gf_model_free(none);
    gf_model_free(m);
    gf_model *lm = tl_make_model("grassmann-tiny", NULL, 1);
    tl_expect_error(gf_model_decode(lm, SRC[0], 6, &o, out, &n, NULL), "not an encoder-decoder");
    gf_model_free(lm);
}

/* max_len 0 decodes to the model's limit: its max_len with learned positions (a model whose end token never
 * wins runs to it), else 256. */
static void test_default_max_len(void **state) {
    (void)state;
    gf_model *m = small_model(ATT, 40.0);
    assert_int_equal(gf_decode_max_len(m), 8);
    gf_decode_opts o = gf_decode_opts_default();
    assert_int_equal(o.max_len, 0);
    o.bos = o.eos = EOS;
    int32_t out[8];
    int64_t n = -1;
    assert_int_equal(gf_model_decode(m, SRC[0], 6, &o, out, &n, NULL), 0);
    assert_int_equal(n, 8);
    gf_config c = *gf_model_config(m);
    assert_int_equal(gf_config_set(&c, "pos=none"), 0);
    gf_model *none = gf_model_create(&c);
    assert_non_null(none);
    assert_int_equal(gf_decode_max_len(none), 256);
    gf_model_free(none);
    gf_model_free(m);
}

/* Levenshtein's distance written as its definition (recursion: the lengths here are a few tokens). */
static int64_t lev(const int32_t *a, int64_t n, const int32_t *b, int64_t m) {
    if (n == 0 || m == 0) return n + m;
    const int64_t sub = lev(a, n - 1, b, m - 1) + (a[n - 1] != b[m - 1]), del = lev(a, n - 1, b, m) + 1,
                  ins = lev(a, n, b, m - 1) + 1;
    return sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
}

/* gf_evaluate_decoding of m over n pairs (sources src from offsets ss, targets tgt from ts), greedy to 6 tokens
 * (the options into *o, for the reference to decode with). */
static gf_decode_scores scored_pairs(gf_model *m, const int32_t *src, const int64_t *ss, const int32_t *tgt,
                                     const int64_t *ts, int n, gf_decode_opts *o) {
    const gf_seq2seq_pairs p = {.n = n, .src = src, .tgt = tgt, .src_start = ss, .tgt_start = ts, .source_vocab = 7,
                                .target_vocab = V, .bos = EOS, .eos = EOS, .name = "test pairs"};
    gf_source *source = gf_seq2seq_source_create(&p, 1);
    assert_non_null(source);
    *o = gf_decode_opts_default();
    o->max_len = 6;
    o->bos = o->eos = EOS;
    gf_decode_scores got;
    assert_int_equal(gf_evaluate_decoding(m, source, o, &got), 0);
    gf_source_free(source);
    return got;
}

static void same_scores(const gf_decode_scores *got, const gf_decode_scores *want) {
    assert_int_equal(got->examples, want->examples);
    assert_int_equal(got->tokens, want->tokens);
    assert_int_equal(got->edits, want->edits);
    assert_int_equal(got->wrong, want->wrong);
    assert_memory_equal(got->len_examples, want->len_examples, sizeof got->len_examples);
    assert_memory_equal(got->len_wrong, want->len_wrong, sizeof got->len_wrong);
}

/* gf_evaluate_decoding over sequence pairs: each example decoded alone and scored by lev against its target. */
static void test_decoding_scores(void **state) {
    (void)state;
    gf_model *m = small_model(GRASS, 1.25);
    enum { N = 6 };
    int32_t src[N * 6], tgt[N * 4];
    int64_t ss[N + 1] = {0}, ts[N + 1] = {0};
    for (int i = 0; i < N; i++) {
        const int ls = 1 + i % 6, lt = i % 4;
        for (int k = 0; k < ls; k++) src[ss[i] + k] = (int32_t)((3 * i + 5 * k + 1) % 7);
        for (int k = 0; k < lt; k++) tgt[ts[i] + k] = (int32_t)((i + 2 * k) % 3);
        ss[i + 1] = ss[i] + ls, ts[i + 1] = ts[i] + lt;
    }
    gf_decode_opts o;
    const gf_decode_scores got = scored_pairs(m, src, ss, tgt, ts, N, &o);
    gf_decode_scores want = {0};
    for (int i = 0; i < N; i++) {
        int32_t out[8];
        int64_t n;
        assert_int_equal(gf_model_decode(m, src + ss[i], ss[i + 1] - ss[i], &o, out, &n, NULL), 0);
        const int64_t e = lev(tgt + ts[i], ts[i + 1] - ts[i], out, n);
        want.examples++, want.tokens += ts[i + 1] - ts[i], want.edits += e, want.wrong += e > 0;
        want.len_examples[ss[i + 1] - ss[i]]++, want.len_wrong[ss[i + 1] - ss[i]] += e > 0;
    }
    same_scores(&got, &want);
    assert_true(want.edits > 0); /* a random model: not a trivial check */
    gf_model_free(m);
}

/* Examples one after another with the same source and other targets are one example with several references:
 * decoded once, right when the target is any of them, its edits and tokens those of the nearest (the first
 * among equals). Groups of 1 to 3 references; a source repeated after another one in between is a group of its
 * own, and so is the same pair again (the last two examples). */
static void test_decoding_references(void **state) {
    (void)state;
    gf_model *m = small_model(GRASS, 1.25);
    enum { N = 11 };
    static const int GROUP[N] = {0, 0, 1, 2, 2, 2, 3, 4, 4, 5, 6}; /* the examples each scored example takes */
    static const int SOURCE[N] = {0, 0, 1, 2, 2, 2, 3, 0, 0, 1, 1}; /* group 4's source is group 0's again */
    int32_t src[N * 6], tgt[N * 4];
    int64_t ss[N + 1] = {0}, ts[N + 1] = {0};
    for (int i = 0; i < N; i++) {
        const int g = SOURCE[i], ls = 2 + g, e = i < N - 1 ? i : i - 1, lt = 1 + (e * 5) % 4; /* 9, 10: a pair twice */
        for (int k = 0; k < ls; k++) src[ss[i] + k] = (int32_t)((3 * g + 5 * k + 1) % 7);
        for (int k = 0; k < lt; k++) tgt[ts[i] + k] = (int32_t)((e + 2 * k) % 3);
        ss[i + 1] = ss[i] + ls, ts[i + 1] = ts[i] + lt;
    }
    gf_decode_opts o;
    const gf_decode_scores got = scored_pairs(m, src, ss, tgt, ts, N, &o);
    gf_decode_scores want = {0};
    bool later = false; /* a group whose nearest reference is not its first */
    for (int i = 0; i < N;) {
        int32_t out[8];
        int64_t n, best = -1, k = 0, j = i;
        assert_int_equal(gf_model_decode(m, src + ss[i], ss[i + 1] - ss[i], &o, out, &n, NULL), 0);
        for (; j < N && GROUP[j] == GROUP[i]; j++) {
            const int64_t e = lev(tgt + ts[j], ts[j + 1] - ts[j], out, n);
            if (best >= 0 && e < best) later = true;
            if (best < 0 || e < best) best = e, k = ts[j + 1] - ts[j];
        }
        want.examples++, want.tokens += k, want.edits += best, want.wrong += best > 0;
        want.len_examples[ss[i + 1] - ss[i]]++, want.len_wrong[ss[i + 1] - ss[i]] += best > 0;
        i = (int)j;
    }
    assert_int_equal(got.examples, 7);
    same_scores(&got, &want);
    assert_true(later); /* not a check of the first reference alone */
    gf_model_free(m);
}

/* Every decoder family a stream can carry (the encoder is attention's). */
static const char *const STREAMED[] = {
    "{\"mixer\": \"attention\", \"n_head\": 2}",
    "{\"mixer\": \"grassmann\", \"rank\": 4, \"offsets\": [1, 2]}",
    "{\"mixer\": \"gru\"}",
    "{\"mixer\": \"window\", \"window\": 2, \"n_head\": 2}",
    "{\"mixer\": \"performer\", \"n_head\": 2, \"features\": 8}",
    "{\"mixer\": \"gru-attn\", \"attention\": \"none\"}",
    "{\"mixer\": \"gru-attn\", \"attention\": \"bahdanau\"}",
    "{\"mixer\": \"gru-attn\", \"attention\": \"dot\"}",
    "{\"mixer\": \"gru-attn\", \"attention\": \"general\"}",
    "{\"mixer\": \"gru-attn\", \"attention\": \"concat\"}",
    "{\"mixer\": \"gru-attn\", \"attention\": \"general\", \"input_feeding\": false}",
};
enum { N_STREAMED = sizeof STREAMED / sizeof STREAMED[0] };

/* A stream over each source's memory, fed a target: its logits at every position against a forward of the
 * prefix (the same model's, over the same source). */
static void test_streamed_logits(void **state) {
    (void)state;
    const int32_t y[8] = {EOS, 0, 2, 1, 1, 0, 2, 2};
    for (int f = 0; f < N_STREAMED; f++) {
        gf_model *m = small_model(STREAMED[f], 1.0);
        assert_true(gf_decoder_streams(m));
        for (int s = 0; s < 3; s++) {
            gf_source_memory *mem = gf_source_memory_create(m, SRC[s], SLEN[s]);
            assert_non_null(mem);
            gf_stream *st = gf_stream_create_decoder(m, mem);
            assert_non_null(st);
            float got[8 * V];
            for (int t = 0; t < 8; t++) {
                const float *l = gf_stream_step(st, y[t]);
                assert_non_null(l);
                memcpy(got + t * V, l, sizeof(float) * V);
            }
            gf_batch b = {.B = 1, .T = 8, .ids = y, .S = SLEN[s], .source = SRC[s]};
            assert_int_equal(gf_model_forward_batch(m, &b, NULL), 0);
            double worst = 0;
            for (int i = 0; i < 8 * V; i++) worst = fmax(worst, fabs((double)got[i] - gf_model_logits(m)[i]));
            if (!(worst <= 1e-5)) fail_msg("%s, source %d: streamed logits differ by %.3g", STREAMED[f], s, worst);
            gf_stream_free(st);
            gf_source_memory_free(mem);
        }
        gf_model_free(m);
    }
}

/* y[0..n) (then the end, if ended) scored by a fresh stream over the source, summed as the search sums: what
 * the streamed search must give bit for bit if carrying and handing over streams changes nothing. */
static double restream(gf_model *m, int s, const int32_t *y, int64_t n, bool ended, double alpha) {
    gf_source_memory *mem = gf_source_memory_create(m, SRC[s], SLEN[s]);
    gf_stream *st = mem ? gf_stream_create_decoder(m, mem) : NULL;
    assert_non_null(st);
    double logp = 0.0;
    for (int64_t t = 0; t < n + ended; t++) {
        const float *l = gf_stream_step(st, t ? y[t - 1] : EOS);
        assert_non_null(l);
        double mx = l[0], sum = 0.0;
        for (int v = 1; v < V; v++) mx = l[v] > mx ? l[v] : mx;
        for (int v = 0; v < V; v++) sum += exp((double)l[v] - mx);
        logp = logp + ((double)l[t < n ? y[t] : EOS] - (mx + log(sum)));
    }
    gf_stream_free(st);
    gf_source_memory_free(mem);
    return logp / penalty(alpha, n + ended);
}

/* Decoding streamed and by full forwards: the same targets, the same scores (to rounding); and the streamed
 * score is, bit for bit, a fresh stream's of the same target. */
static void test_streamed_decodes(void **state) {
    (void)state;
    const int64_t beams[3] = {1, 3, 81};
    for (int f = 0; f < N_STREAMED; f++)
        for (double sh = 0.5; sh <= 2.5; sh += 1) {
            gf_model *m = small_model(STREAMED[f], sh);
            for (int k = 0; k < 6; k++) {
                gf_decode_opts o = gf_decode_opts_default();
                o.beam = beams[k % 3], o.max_len = L, o.bos = o.eos = EOS;
                o.length_penalty = k < 3 || o.beam == 1 ? 0.0 : 0.6; /* a penalty needs a beam */
                for (int s = 0; s < 3; s++) {
                    int32_t a[L], b[L];
                    int64_t na, nb;
                    double sa, sb;
                    assert_int_equal(gf_model_decode_by(m, SRC[s], SLEN[s], &o, true, a, &na, &sa), 0);
                    assert_int_equal(gf_model_decode_by(m, SRC[s], SLEN[s], &o, false, b, &nb, &sb), 0);
                    if (na != nb || memcmp(a, b, (size_t)na * sizeof *a) || fabs(sa - sb) > 1e-5 * (1 + fabs(sb)))
                        fail_msg("%s, shift %.1f, beam %lld, penalty %.1f, source %d: streamed %lld tokens scoring "
                                 "%.9g, full forwards %lld scoring %.9g", STREAMED[f], sh, (long long)o.beam,
                                 o.length_penalty, s, (long long)na, sa, (long long)nb, sb);
                    const double re = restream(m, s, a, na, na < L, o.length_penalty);
                    if (sa != re)
                        fail_msg("%s, beam %lld, source %d: the streamed score %.17g is not a fresh stream's %.17g",
                                 STREAMED[f], (long long)o.beam, s, sa, re);
                }
            }
            gf_model_free(m);
        }
}

/* An ensemble: a beam that keeps every hypothesis finds the best target of the models' mixture (scored by
 * score_mix, one model's teacher-forced forward at a time), streamed and by full forwards alike; a mixture of
 * the same model with itself is that model, bit for bit. The pairs of end-token shifts make the two models
 * disagree on some sources (one ends at once, the other runs to max_len; or both run, to other targets). */
static void test_ensemble(void **state) {
    (void)state;
    static const double SHIFTS[3][2] = {{2.5, 2.5}, {0.5, 3.5}, {1.5, 0.5}};
    int disagree = 0; /* sources whose two models' best targets differ */
    for (int q = 0; q < 3; q++) {
        const double sh = SHIFTS[q][0];
        gf_model *ms[2] = {small_model(ATT, sh), small_model(GRASS, SHIFTS[q][1])};
        gf_decode_opts o = gf_decode_opts_default();
        o.beam = 81, o.max_len = L, o.bos = o.eos = EOS;
        for (int s = 0; s < 3; s++) {
            best ref, one[2];
            exhaustive(ms, 2, SRC[s], SLEN[s], 0.0, &ref);
            for (int j = 0; j < 2; j++) exhaustive(&ms[j], 1, SRC[s], SLEN[s], 0.0, &one[j]);
            for (int streamed = 0; streamed < 2; streamed++) {
                int32_t out[L];
                int64_t n;
                double sc;
                assert_int_equal(gf_ensemble_decode_by(ms, 2, SRC[s], SLEN[s], &o, streamed, out, &n, &sc), 0);
                if (fabs(sc - ref.score) > 1e-5 * (1 + fabs(ref.score)))
                    fail_msg("shift %.1f, source %d, %s: ensemble score %.9g, the mixture's exhaustive best %.9g", sh, s,
                             streamed ? "streamed" : "full forwards", sc, ref.score);
                if (ref.score - ref.second > 1e-5) {
                    assert_int_equal(n, ref.k);
                    assert_memory_equal(out, ref.y, (size_t)n * sizeof(int32_t));
                }
            }
            disagree += one[0].k != one[1].k || memcmp(one[0].y, one[1].y, (size_t)one[0].k * sizeof(int32_t));
        }
        gf_model *twice[2] = {ms[0], ms[0]};
        o.beam = 3;
        for (int s = 0; s < 3; s++) {
            int32_t a[L], b[L];
            int64_t na, nb;
            double sa, sb;
            assert_int_equal(gf_model_decode(ms[0], SRC[s], SLEN[s], &o, a, &na, &sa), 0);
            assert_int_equal(gf_ensemble_decode(twice, 2, SRC[s], SLEN[s], &o, b, &nb, &sb), 0);
            assert_int_equal(na, nb);
            assert_memory_equal(a, b, (size_t)na * sizeof *a);
            assert_true(sa == sb);
        }
        gf_model_free(ms[0]), gf_model_free(ms[1]);
    }
    assert_true(disagree >= 3); /* the mixture was tested where it matters: models that pick other targets */
}

/* What an ensemble refuses: no models, too many, a NULL one, models of other vocabularies. */
static void test_ensemble_refusals(void **state) {
    (void)state;
    gf_model *m = small_model(ATT, 0.0);
    gf_config c = *gf_model_config(m);
    assert_int_equal(gf_config_set(&c, "vocab_size=5"), 0);
    gf_model *wide = gf_model_create(&c);
    assert_non_null(wide);
    gf_decode_opts o = gf_decode_opts_default();
    o.bos = o.eos = EOS, o.max_len = L;
    int32_t out[L];
    int64_t n;
    gf_model *pair[2] = {m, wide}, *null_pair[2] = {m, NULL};
    tl_expect_error(gf_ensemble_decode(pair, 0, SRC[0], 6, &o, out, &n, NULL), "an ensemble of 0 models");
    tl_expect_error(gf_ensemble_decode(pair, GF_DECODE_MAX_ENSEMBLE + 1, SRC[0], 6, &o, out, &n, NULL),
                    "an ensemble of 65 models; expected 1 to 64");
    tl_expect_error(gf_ensemble_decode(null_pair, 2, SRC[0], 6, &o, out, &n, NULL), "model 1 is NULL");
    tl_expect_error(gf_ensemble_decode(pair, 2, SRC[0], 6, &o, out, &n, NULL),
                    "model 1 reads 7 source ids and writes 5 target ids, model 0 7 and 4");
    gf_decode_scores sc;
    tl_expect_error(gf_ensemble_evaluate_decoding(pair, 2, NULL, &o, &sc), "must share both vocabularies");
    c = *gf_model_config(m);
    assert_int_equal(gf_config_set(&c, "max_len=3"), 0);
    gf_model *shorter = gf_model_create(&c); /* learned positions for 3 tokens: a max_len of 4 is its refusal */
    assert_non_null(shorter);
    gf_model *three[3] = {m, m, shorter};
    tl_expect_error(gf_ensemble_decode(three, 3, SRC[0], 6, &o, out, &n, NULL),
                    "decode: the ensemble's model 2 (of 3, from 0): max_len 4 is above the model's max_len 3");
    gf_model_free(shorter);
    gf_model_free(wide);
    gf_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exhaustive_attention), cmocka_unit_test(test_exhaustive_grassmann),
        cmocka_unit_test(test_greedy), cmocka_unit_test(test_refusals), cmocka_unit_test(test_default_max_len),
        cmocka_unit_test(test_decoding_scores), cmocka_unit_test(test_decoding_references),
        cmocka_unit_test(test_streamed_logits),
        cmocka_unit_test(test_streamed_decodes),
        cmocka_unit_test(test_ensemble),           cmocka_unit_test(test_ensemble_refusals),
    };
    gf_set_threads(1); /* thousands of tiny forwards: a parallel region would cost more than its work */
    return cmocka_run_group_tests_name("decoding", tests, NULL, NULL);
}
