/* The public tokenizer API (include/grassflow.h): incremental detokenisation against the whole decode for
 * random id sequences of every tokenizer kind (word, char, byte with UTF-8 split across tokens, WordPiece
 * with ## pieces, vocabularies with edge-case pieces), encode errors naming the byte offset, prompts,
 * pieces and special ids, and checkpoints loaded with their tokenizer and recipe. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#include "base/rng.h"

#define KEY 0x70CE17ull
#define VOCAB "data/bert-base-uncased/vocab.txt"

static uint64_t rnd(uint64_t *ctr) { return gf_rand64(KEY, (*ctr)++); }

/* Length of the valid UTF-8 text s (n), or the offset of its first invalid or incomplete sequence. */
static size_t utf8_valid_prefix(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned char b = s[i];
        int len = b < 0x80                 ? 1
                  : b >= 0xC2 && b <= 0xDF ? 2
                  : b >= 0xE0 && b <= 0xEF ? 3
                  : b >= 0xF0 && b <= 0xF4 ? 4
                                           : 0;
        if (!len || i + (size_t)len > n) return i;
        unsigned char lo = b == 0xE0 ? 0xA0 : b == 0xF0 ? 0x90 : 0x80, hi = b == 0xED ? 0x9F : b == 0xF4 ? 0x8F : 0xBF;
        if (len > 1 && (s[i + 1] < lo || s[i + 1] > hi)) return i;
        for (int k = 2; k < len; k++)
            if ((s[i + k] & 0xC0) != 0x80) return i;
        i += (size_t)len;
    }
    return n;
}

/* Push ids (n) one at a time (after `prompt`); the pieces must add up to want (want_len). With
 * whole_chars, each piece must also be complete UTF-8 on its own. */
static void check_pieces(const gf_tokenizer *t, const char *prompt, const int32_t *ids, int64_t n,
                         const char *want, size_t want_len, bool whole_chars, const char *what) {
    gf_detok *d = gf_detok_create(t, prompt, prompt ? strlen(prompt) : 0);
    assert_non_null(d);
    size_t at = 0, len;
    for (int64_t i = 0; i <= n; i++) {
        const char *p = i < n ? gf_detok_push(d, ids[i], &len) : gf_detok_flush(d, &len);
        if (at + len > want_len || memcmp(want + at, p, len))
            fail_msg("%s: the piece of token %lld (id %d, %zu bytes) does not continue the whole decode at byte %zu",
                     what, (long long)i, i < n ? ids[i] : -1, len, at);
        if (p[len] != '\0') fail_msg("%s: piece %lld is not NUL-terminated", what, (long long)i);
        if (whole_chars && utf8_valid_prefix((const unsigned char *)p, len) != len)
            fail_msg("%s: the piece of token %lld splits a UTF-8 character", what, (long long)i);
        at += len;
    }
    if (at != want_len) fail_msg("%s: the pieces hold %zu bytes, the whole decode %zu", what, at, want_len);
    gf_detok_free(d);
}

/* Random ids, some outside the vocabulary; for byte tokenizers mostly the bytes UTF-8 decoding turns on. */
static int64_t random_ids(const gf_tokenizer *t, int32_t *ids, uint64_t *ctr) {
    static const unsigned char bytes[] = {0x00, 'a', ' ', '\n', 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC2,
                                          0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF};
    const int64_t V = gf_tokenizer_vocab_size(t), n = (int64_t)(rnd(ctr) % 120);
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = rnd(ctr);
        if (gf_tokenizer_kind(t) == GF_TOK_BYTE && r % 4)
            ids[i] = bytes[(r >> 8) % sizeof bytes];
        else
            ids[i] = (int32_t)((r >> 8) % (uint64_t)(V + 6)) - 3;
    }
    return n;
}

/* Tokenizers of every kind, among them vocabularies with an empty piece, "##" alone and "##" pieces. */
static int make_tokenizers(gf_tokenizer **t) {
    const char *text = "the cat sat\non the  mat\n\nna\xC3\xAFve caf\xC3\xA9 "
                       "\xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80\n";
    int n = 0;
    t[n++] = gf_tokenizer_build(GF_TOK_WORD, text, strlen(text));
    t[n++] = gf_tokenizer_build(GF_TOK_CHAR, text, strlen(text));
    t[n++] = gf_tokenizer_bytes();
    t[n++] = gf_wordpiece_load(VOCAB);
    t[n++] = gf_tokenizer_from_json("{\"kind\": \"wordpiece\", \"vocab\": [\"[UNK]\", \"##\", \"##a\", \"b\", \"\", "
                                    "\"##\\u00e9\", \"\\n\", \"##\\n\"]}", "edge wordpiece");
    t[n++] = gf_tokenizer_from_json("{\"kind\": \"word\", \"vocab\": [\"<eos>\", \"<unk>\", \"a\", \"\", \"b c\", "
                                    "\"\\n\"]}", "edge word");
    for (int i = 0; i < n; i++)
        if (!t[i]) fail_msg("tokenizer %d: %s", i, gf_last_error());
    return n;
}

static void test_detok_equals_decode(void **state) {
    (void)state;
    gf_tokenizer *t[8];
    int n_tok = make_tokenizers(t);
    int32_t ids[128];
    uint64_t ctr = 0;
    for (int k = 0; k < n_tok; k++) {
        for (int rep = 0; rep < 400; rep++) {
            int64_t n = random_ids(t[k], ids, &ctr);
            size_t len;
            char *whole = gf_tokenizer_decode(t[k], ids, n, &len);
            assert_non_null(whole);
            char what[64];
            snprintf(what, sizeof what, "%s tokenizer %d, sequence %d", gf_tok_kind_name(gf_tokenizer_kind(t[k])), k,
                     rep);
            check_pieces(t[k], NULL, ids, n, whole, len, false, what);
            /* after a prompt: the same text, with a space first where a word continues a line */
            const char *prompt = rep % 2 ? "some text" : "a line\n";
            gf_tok_kind kind = gf_tokenizer_kind(t[k]);
            bool space = rep % 2 && (kind == GF_TOK_WORD || kind == GF_TOK_WORDPIECE) && len > 0 && whole[0] != '\n';
            char *spaced = malloc(len + 2);
            spaced[0] = ' ';
            memcpy(spaced + space, whole, len + 1);
            check_pieces(t[k], prompt, ids, n, spaced, len + space, false, what);
            free(spaced);
            free(whole);
        }
    }
    for (int k = 0; k < n_tok; k++) gf_tokenizer_free(t[k]);
}

/* Valid UTF-8 text through the byte tokenizer: every piece is whole characters (held back until complete). */
static void test_detok_holds_back_split_characters(void **state) {
    (void)state;
    static const char *const chars[] = {"a",           "\n",          "\xC3\xA9",         "\xDF\xBF",
                                        "\xE0\xA0\x80",  "\xE6\x97\xA5",  "\xED\x9F\xBF",      "\xF0\x90\x80\x80",
                                        "\xF0\x9F\x98\x80", "\xF4\x8F\xBF\xBF"};
    gf_tokenizer *t = gf_tokenizer_bytes();
    uint64_t ctr = 500;
    char text[512];
    for (int rep = 0; rep < 300; rep++) {
        size_t n = 0;
        for (int c = (int)(rnd(&ctr) % 60); c > 0; c--) {
            const char *ch = chars[rnd(&ctr) % 10];
            memcpy(text + n, ch, strlen(ch));
            n += strlen(ch);
        }
        int32_t *ids;
        int64_t n_ids;
        assert_int_equal(gf_tokenizer_encode(t, text, n, NULL, &ids, &n_ids), 0);
        assert_int_equal(n_ids, (int64_t)n);
        check_pieces(t, NULL, ids, n_ids, text, n, true, "valid UTF-8 through bytes");
        free(ids);
    }
    /* an incomplete sequence at the end comes out at the flush; a broken one as soon as it breaks */
    gf_detok *d = gf_detok_create(t, NULL, 0);
    size_t len;
    assert_int_equal((gf_detok_push(d, 0xE6, &len), len), 0);
    assert_int_equal((gf_detok_push(d, 0x97, &len), len), 0);
    assert_memory_equal(gf_detok_flush(d, &len), "\xE6\x97", 3);
    assert_int_equal(len, 2);
    assert_int_equal((gf_detok_push(d, 0xF0, &len), len), 0);
    assert_memory_equal(gf_detok_push(d, 'x', &len), "\xF0x", 3);
    assert_int_equal(len, 2);
    assert_int_equal((gf_detok_push(d, 0xED, &len), len), 0);
    assert_memory_equal(gf_detok_push(d, 0xA0, &len), "\xED\xA0", 3); /* a surrogate: invalid */
    gf_detok_free(d);
    gf_tokenizer_free(t);
}

/* gf_text_word_count: whitespace words plus one per line, by hand, and the same as the word tokenizer's ids for
 * random texts of words, spaces and line ends. */
static void test_word_count(void **state) {
    (void)state;
    struct { const char *text; int64_t words; } cases[] = {
        {"", 0},           {"\n", 1},        {"a", 2},     {"a\n", 2},        {"a\n\n", 3},
        {" \t\r\n", 1},    {"a b\nc", 5},    {"a b\nc\n", 5}, {"x\v\fy  z", 4}, {"the dog sat\n\n  on a mat  \nthe end", 12},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (gf_text_word_count(cases[i].text, strlen(cases[i].text)) != cases[i].words)
            fail_msg("'%s': %lld words, expected %lld", cases[i].text,
                     (long long)gf_text_word_count(cases[i].text, strlen(cases[i].text)), (long long)cases[i].words);
    gf_tokenizer *w = gf_tokenizer_build(GF_TOK_WORD, "a b", 3);
    assert_non_null(w);
    uint64_t ctr = 0;
    const char alphabet[] = "ab \t\n\r\v\fc";
    char text[64];
    for (int k = 0; k < 2000; k++) {
        size_t n = rnd(&ctr) % sizeof text;
        for (size_t i = 0; i < n; i++) text[i] = alphabet[rnd(&ctr) % (sizeof alphabet - 1)];
        int32_t *ids;
        int64_t n_ids;
        gf_text_counts c;
        assert_int_equal(gf_tokenizer_encode_counted(w, text, n, NULL, &ids, &n_ids, &c), 0);
        if (n_ids != gf_text_word_count(text, n) || c.words != n_ids || c.tokens != n_ids)
            fail_msg("text %d: %lld word ids, %lld counted words, %lld by gf_text_word_count", k, (long long)n_ids,
                     (long long)c.words, (long long)gf_text_word_count(text, n));
        free(ids);
    }
    gf_tokenizer_free(w);
}

/* gf_tokenizer_encode_counted against hand counts: words outside a word vocabulary (<unk>), characters
 * outside a char vocabulary (skipped, the first one's offset), WordPiece words that cannot be pieced. */
static void test_encode_counted(void **state) {
    (void)state;
    const char *train = "the cat sat\non the mat\n", *other = "the dog sat\n\n  on a mat  \nthe end";
    gf_tokenizer *w = gf_tokenizer_build(GF_TOK_WORD, train, strlen(train));
    gf_tokenizer *c = gf_tokenizer_build(GF_TOK_CHAR, train, strlen(train));
    gf_tokenizer *b = gf_tokenizer_bytes(), *wp = gf_wordpiece_load(VOCAB);
    assert_true(w && c && b && wp);
    int32_t *ids;
    int64_t n;
    gf_text_counts k;
    /* word: the dog(unk) sat <eos> | <eos> | on a(unk) mat <eos> | the end(unk) <eos> */
    assert_int_equal(gf_tokenizer_encode_counted(w, other, strlen(other), NULL, &ids, &n, &k), 0);
    assert_true(n == 12 && k.tokens == 12 && k.words == 12 && k.unknown == 3 && k.skipped == 0 && k.first_skipped == -1);
    assert_int_equal(ids[1], gf_tokenizer_unk_id(w));
    free(ids);
    assert_int_equal(gf_tokenizer_encode_counted(w, "dog", 3, NULL, &ids, &n, &k), 0); /* the first word, no '\n' */
    assert_true(n == 2 && k.words == 2 && k.unknown == 1);
    free(ids);
    /* a literal <unk> in the text is a word of the vocabulary when the training text had it */
    gf_tokenizer *wu = gf_tokenizer_build(GF_TOK_WORD, "a <unk> b\n", 10);
    assert_int_equal(gf_tokenizer_encode_counted(wu, "<unk> c", 7, NULL, &ids, &n, &k), 0);
    assert_true(n == 3 && k.unknown == 1 && ids[0] == gf_tokenizer_unk_id(wu) && ids[1] == gf_tokenizer_unk_id(wu));
    free(ids);
    gf_tokenizer_free(wu);
    /* char: d, g and the d of "end" are not in the vocabulary: 33 characters, 30 ids */
    assert_int_equal(gf_tokenizer_encode_counted(c, other, strlen(other), NULL, &ids, &n, &k), 0);
    assert_true(n == 30 && k.tokens == 30 && k.words == 12 && k.unknown == 0 && k.skipped == 3 && k.first_skipped == 4);
    char *back = gf_tokenizer_decode(c, ids, n, NULL);
    assert_string_equal(back, "the o sat\n\n  on a mat  \nthe en");
    free(back);
    free(ids);
    /* without counts the same text is refused, with a hint that names a command that takes its flag */
    assert_int_equal(gf_tokenizer_encode(c, other, strlen(other), "--prompt", &ids, &n), -1);
    assert_non_null(strstr(gf_last_error(), "--prompt: character 'd' at byte 4 is not in the vocabulary"));
    assert_non_null(strstr(gf_last_error(), "grassflow train --tokenizer byte"));
    /* byte: every byte has an id */
    assert_int_equal(gf_tokenizer_encode_counted(b, other, strlen(other), NULL, &ids, &n, &k), 0);
    assert_true(n == 33 && k.tokens == 33 && k.words == 12 && k.unknown == 0 && k.skipped == 0);
    free(ids);
    /* WordPiece: a word of 101 characters cannot be pieced ([UNK]); a [UNK] written in the text is not counted */
    char long_word[160] = "hello [UNK] ";
    memset(long_word + 12, 'x', 101);
    strcpy(long_word + 113, " world\n");
    assert_int_equal(gf_tokenizer_encode_counted(wp, long_word, strlen(long_word), NULL, &ids, &n, &k), 0);
    assert_true(n == 4 && k.tokens == 4 && k.words == 5 && k.unknown == 1 && k.skipped == 0);
    assert_true(ids[1] == gf_tokenizer_unk_id(wp) && ids[2] == gf_tokenizer_unk_id(wp));
    free(ids);
    gf_tokenizer_free(w);
    gf_tokenizer_free(c);
    gf_tokenizer_free(b);
    gf_tokenizer_free(wp);
}

static void test_encode(void **state) {
    (void)state;
    const char *text = "ab\nc\xC3\xA9";
    gf_tokenizer *c = gf_tokenizer_build(GF_TOK_CHAR, text, strlen(text));
    gf_tokenizer *wp = gf_wordpiece_load(VOCAB);
    gf_tokenizer *w = gf_tokenizer_build(GF_TOK_WORD, "the cat\nsat", 11);
    assert_true(c && wp && w);
    int32_t *ids = (int32_t *)1;
    int64_t n = 7;
    assert_int_equal(gf_tokenizer_encode(c, "ab\xC3\xA9\xFF", 5, NULL, &ids, &n), -1);
    assert_string_equal(gf_last_error(), "text: invalid UTF-8 at byte 4");
    assert_true(ids == NULL && n == 0);
    assert_int_equal(gf_tokenizer_encode(wp, "ok \xE6\x97", 5, "notes.txt", &ids, &n), -1);
    assert_non_null(strstr(gf_last_error(), "notes.txt: invalid UTF-8 at byte 3"));
    assert_int_equal(gf_tokenizer_encode(c, "abz", 3, "--prompt", &ids, &n), -1);
    assert_non_null(strstr(gf_last_error(), "--prompt: character 'z' at byte 2 is not in the vocabulary"));
    assert_int_equal(gf_tokenizer_encode(c, "c\xC3\xA9" "a", 4, NULL, &ids, &n), 0);
    assert_int_equal(n, 3);
    char *back = gf_tokenizer_decode(c, ids, n, NULL);
    assert_string_equal(back, "c\xC3\xA9" "a");
    free(back);
    free(ids);
    /* prompts: a word-level one continues its line; an empty one is the start token */
    int32_t eos = gf_tokenizer_eos_id(w), the = gf_tokenizer_find(w, "the", 3), cat = gf_tokenizer_find(w, "cat", 3);
    struct { const gf_tokenizer *t; const char *p; int64_t n; int32_t last; } cases[] = {
        {w, "the cat", 2, cat}, {w, "the cat\n", 3, eos}, {w, "", 1, eos}, {w, "the", 1, the},
        {c, "", 1, gf_tokenizer_find(c, "\n", 1)}, {wp, "", 1, 0},
    };
    for (int i = 0; i < 6; i++) {
        assert_int_equal(gf_tokenizer_encode_prompt(cases[i].t, cases[i].p, strlen(cases[i].p), NULL, &ids, &n), 0);
        if (n != cases[i].n || ids[n - 1] != cases[i].last)
            fail_msg("prompt '%s': %lld ids ending in %d, expected %lld ending in %d", cases[i].p, (long long)n,
                     ids[n - 1], (long long)cases[i].n, cases[i].last);
        free(ids);
    }
    gf_tokenizer *b = gf_tokenizer_bytes();
    assert_int_equal(gf_tokenizer_encode_prompt(b, "", 0, NULL, &ids, &n), 0);
    assert_true(n == 1 && ids[0] == '\n');
    free(ids);
    gf_tokenizer_free(b);
    gf_tokenizer_free(c);
    gf_tokenizer_free(wp);
    gf_tokenizer_free(w);
}

static void test_pieces_and_json(void **state) {
    (void)state;
    gf_tokenizer *wp = gf_wordpiece_load(VOCAB), *b = gf_tokenizer_bytes();
    assert_int_equal(gf_tokenizer_kind(wp), GF_TOK_WORDPIECE);
    assert_int_equal(gf_tokenizer_vocab_size(wp), 30522);
    assert_int_equal(gf_tokenizer_unk_id(wp), 100);
    assert_int_equal(gf_tokenizer_eos_id(wp), -1);
    size_t len;
    assert_string_equal(gf_tokenizer_piece(wp, 7668, &len), "cafe");
    assert_int_equal(len, 4);
    assert_int_equal(gf_tokenizer_find(wp, "cafe", 4), 7668);
    assert_int_equal(gf_tokenizer_find(wp, "no such piece", 13), -1);
    assert_null(gf_tokenizer_piece(wp, 30522, &len));
    assert_null(gf_tokenizer_piece(wp, -1, &len));
    assert_memory_equal(gf_tokenizer_piece(b, 0, &len), "\0", 1);
    assert_int_equal(len, 1);
    assert_int_equal(gf_tokenizer_vocab_size(b), 256);
    char *js = gf_tokenizer_to_json(wp);
    gf_tokenizer *back = gf_tokenizer_from_json(js, "saved");
    assert_non_null(back);
    assert_int_equal(gf_tokenizer_vocab_size(back), 30522);
    assert_int_equal(gf_tokenizer_unk_id(back), 100);
    assert_string_equal(gf_tokenizer_piece(back, 2000, NULL), gf_tokenizer_piece(wp, 2000, NULL));
    free(js);
    assert_null(gf_tokenizer_from_json("{\"kind\": \"bpe\", \"vocab\": []}", "model.safetensors"));
    assert_string_equal(gf_last_error(), "model.safetensors: unknown tokenizer kind \"bpe\"");
    /* a vocabulary without its special tokens would encode line ends or unknown words as id -1 */
    assert_null(gf_tokenizer_from_json("{\"kind\": \"word\", \"vocab\": [\"<eos>\", \"a\"]}", "w.safetensors"));
    assert_non_null(strstr(gf_last_error(), "w.safetensors: the word vocabulary lacks \"<eos>\" or \"<unk>\""));
    assert_null(gf_tokenizer_from_json("{\"kind\": \"word\", \"vocab\": [\"<unk>\", \"a\"]}", "w.safetensors"));
    assert_null(gf_tokenizer_from_json("{\"kind\": \"wordpiece\", \"vocab\": [\"a\", \"##b\"]}", "p.safetensors"));
    assert_non_null(strstr(gf_last_error(), "p.safetensors: the WordPiece vocabulary lacks \"[UNK]\""));
    gf_tokenizer_free(back);
    gf_tokenizer_free(wp);
    gf_tokenizer_free(b);
}

static void test_checkpoint_load(void **state) {
    (void)state;
    gf_model *m = tl_make_model("grassmann-tiny", (const char *const[]){"vocab_size=256", NULL}, 3);
    gf_tokenizer *b = gf_tokenizer_bytes(), *tok;
    char *js = gf_tokenizer_to_json(b);
    const char *keys[] = {"tokenizer", "train"}, *vals[] = {js, "{\"lr\": 0.001}"};
    char with[512], without[512]; /* tl_tmp_path's buffer is reused */
    snprintf(with, sizeof with, "%s", tl_tmp_path("with.safetensors"));
    snprintf(without, sizeof without, "%s", tl_tmp_path("without.safetensors"));
    assert_int_equal(gf_model_save_meta(m, with, keys, vals, 2), 0);
    assert_int_equal(gf_model_save(m, without), 0);
    char *train;
    gf_model *l = gf_checkpoint_load(with, &tok, &train);
    assert_true(l && tok && train);
    assert_int_equal(gf_tokenizer_kind(tok), GF_TOK_BYTE);
    assert_string_equal(train, "{\"lr\": 0.001}");
    assert_memory_equal(gf_model_params(l), gf_model_params(m), (size_t)gf_model_num_params(m) * sizeof(float));
    gf_tokenizer_free(tok);
    gf_model_free(l);
    free(train);
    l = gf_checkpoint_load(without, &tok, &train);
    assert_true(l && !tok && !train);
    gf_model_free(l);
    gf_model_free(m);
    /* a tokenizer that does not fit the model */
    m = tl_make_model("grassmann-tiny", NULL, 3);
    assert_int_equal(gf_model_save_meta(m, with, keys, vals, 1), 0);
    assert_null(gf_checkpoint_load(with, &tok, NULL));
    assert_null(tok);
    assert_non_null(strstr(gf_last_error(), "the stored tokenizer has 256 tokens but the model's vocab_size is 64"));
    assert_null(gf_checkpoint_load(tl_tmp_path("none.safetensors"), &tok, NULL));
    assert_non_null(strstr(gf_last_error(), "none.safetensors"));
    gf_model_free(m);
    free(js);
    gf_tokenizer_free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_detok_equals_decode), cmocka_unit_test(test_detok_holds_back_split_characters),
        cmocka_unit_test(test_encode),              cmocka_unit_test(test_pieces_and_json),
        cmocka_unit_test(test_word_count),          cmocka_unit_test(test_encode_counted),
        cmocka_unit_test(test_checkpoint_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
