/* WordPiece (BERT bert-base-uncased): tricky sentences pinned to ids, vocabulary loading errors.
 *
 * The expected ids were checked by hand against data/bert-base-uncased/vocab.txt (id = 0-based line
 * number: `grep -n -x -F 'cafe' vocab.txt` prints line L, so the id is L - 1). Each case lists its pieces;
 * the test also looks every piece up in the loaded vocabulary, so a mistyped id or a different vocab.txt
 * shows up as such. There is no Hugging Face tokenizer here, so the comments say how BertTokenizer (slow,
 * do_lower_case=True) arrives at the pieces: clean the text (drop controls, whitespace -> space), put
 * spaces around CJK ideographs, split on whitespace, lower-case, NFD, drop nonspacing marks, split off
 * punctuation, then greedy longest-match-first WordPiece per word ("##" marks a continuation; a word
 * with an unmatchable position or more than 100 characters is one [UNK]). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#include "text/tokenizer.h"

#define VOCAB "data/bert-base-uncased/vocab.txt"

typedef struct {
    const char *text;
    const char *pieces; /* space-separated, for the reader and for the vocabulary cross-check */
    int32_t ids[32];
    int n;
} wp_case;

static const wp_case CASES[] = {
    /* Accents: lower-case, NFD, then the combining marks (category Mn) are dropped: é -> e + U+0301 -> e. */
    {"Caf\xC3\xA9 na\xC3\xAFve r\xC3\xA9sum\xC3\xA9 Z\xC3\xBCrich", "cafe naive resume zurich",
     {7668, 15743, 13746, 10204}, 4},
    /* The same words typed decomposed (i + U+0308, E + U+0301) give the same ids. */
    {"nai\xCC\x88ve CAFE\xCC\x81", "naive cafe", {15743, 7668}, 2},
    /* "elève" is not a word of the vocabulary: the longest prefix is "el", then "##eve". */
    {"\xC3\x89" "COLE \xC3\xA9l\xC3\xA8ve", "ecole el ##eve", {12431, 3449, 18697}, 3},
    /* Apostrophes, hyphens and every other punctuation character become words of their own. */
    {"Don't stop-believing!!! (really?)", "don ' t stop - believing ! ! ! ( really ? )",
     {2123, 1005, 1056, 2644, 1011, 8929, 999, 999, 999, 1006, 2428, 1029, 1007}, 13},
    /* The typographic apostrophe U+2019 is punctuation (Pf) too; "ete" is absent: "et" + "##e". */
    {"l'\xC3\xA9t\xC3\xA9 d\xE2\x80\x99or", "l ' et ##e d \xE2\x80\x99 or",
     {1048, 1005, 3802, 2063, 1040, 1521, 2030}, 7},
    /* Numbers: "." and "," split them; "14159" is absent ("141", "##59"; no "1415"). */
    {"In 1984, 3.14159 and 1,000,000 people", "in 1984 , 3 . 141 ##59 and 1 , 000 , 000 people",
     {1999, 3118, 1010, 1017, 1012, 15471, 28154, 1998, 1015, 1010, 2199, 1010, 2199, 2111}, 14},
    /* BERT counts all non-alphanumeric ASCII as punctuation, also the symbols $ & % # + ~ ^ | ` (not P*). */
    {"$5.99 & 20% off #1", "$ 5 . 99 & 20 % off # 1", {1002, 1019, 1012, 5585, 1004, 2322, 1003, 2125, 1001, 1015}, 10},
    {"C++ / C# ~ x^2 | `code`", "c + + / c # ~ x ^ 2 | ` code `",
     {1039, 1009, 1009, 1013, 1039, 1001, 1066, 1060, 1034, 1016, 1064, 1036, 3642, 1036}, 14},
    {"e-mail: john.doe@example.com", "e - mail : john . doe @ example . com",
     {1041, 1011, 5653, 1024, 2198, 1012, 18629, 1030, 2742, 1012, 4012}, 11},
    /* Mixed case: the vocabulary is lower case. */
    {"HeLLo WORLD iPhone McDonald's", "hello world iphone mcdonald ' s", {7592, 2088, 18059, 9383, 1005, 1055}, 6},
    /* Rare words: greedy longest match first ("quokka", "quokk", "quok" are absent; "quo" is there). */
    {"The quokka's antidisestablishmentarianism",
     "the quo ##kka ' s anti ##dis ##est ##ab ##lish ##ment ##arian ##ism",
     {1996, 22035, 15714, 1005, 1055, 3424, 10521, 4355, 7875, 13602, 3672, 12199, 2964}, 13},
    /* Not "un ##aff ##able" (the BERT docstring's example): this vocabulary has no "##aff", and greedy
     * takes the longest first piece, "una". */
    {"unaffable", "una ##ffa ##ble", {14477, 20961, 3468}, 3},
    /* U+2603 (snowman, So) is not punctuation, so it stays inside the word; nothing matches "##☃" (nor
     * "☃"), so each whole word is one [UNK] — "snow" is lost too. */
    {"x\xE2\x98\x83y snow\xE2\x98\x83", "[UNK] [UNK]", {100, 100}, 2},
    /* Fullwidth letters lower-case to fullwidth letters (NFD leaves compatibility forms alone): unknown. */
    {"\xEF\xBC\xA6\xEF\xBD\x95\xEF\xBD\x8C\xEF\xBD\x8C\xEF\xBD\x97\xEF\xBD\x89\xEF\xBD\x84\xEF\xBD\x94\xEF\xBD\x88",
     "[UNK]", {100}, 1},
    /* ...likewise the "fi" ligature U+FB01, which the vocabulary happens to contain. */
    {"\xEF\xAC\x81ne", "\xEF\xAC\x81 ##ne", {1984, 2638}, 2},
    /* U+2126 OHM SIGN lower-cases to ω (U+03C9); U+2103 DEGREE CELSIUS (So) is unknown. */
    {"\xE2\x84\xA6mega \xE2\x84\x83", "\xCF\x89 ##me ##ga [UNK]", {1179, 4168, 3654, 100}, 4},
    /* CJK ideographs are words of their own (spaces are put around them)... */
    {"\xE6\x9D\xB1\xE4\xBA\xAC is big", "\xE6\x9D\xB1 \xE4\xBA\xAC is big", {1879, 1755, 2003, 2502}, 4},
    /* ...hiragana is not in BERT's CJK ranges, but here "の" sits between ideographs anyway. */
    {"\xE6\x9D\xB1\xE4\xBA\xAC\xE5\xA4\xA7\xE5\xAD\xA6\xE3\x81\xAE\xE5\xAD\xA6\xE7\x94\x9F",
     "\xE6\x9D\xB1 \xE4\xBA\xAC \xE5\xA4\xA7 \xE5\xAD\xA6 \xE3\x81\xAE \xE5\xAD\xA6 \xE7\x94\x9F",
     {1879, 1755, 1810, 1817, 1671, 1817, 1910}, 7},
    /* Hangul: NFD decomposes each syllable into conjoining jamo (한 -> ᄒ ᅡ ᆫ), matched piece by piece. */
    {"\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4",
     "\xE1\x84\x92 ##\xE1\x85\xA1 ##\xE1\x86\xAB ##\xE1\x84\x80 ##\xE1\x85\xAE ##\xE1\x86\xA8 ##\xE1\x84\x8B "
     "##\xE1\x85\xA5",
     {1469, 30006, 30021, 29991, 30014, 30020, 29999, 30008}, 8},
    /* Control characters: \t \r \n, NBSP and U+3000 separate words; U+0001 (Cc) and U+200B (Cf) are deleted
     * without separating anything, so "b\1c\u200Bd" is the word "bcd" ("bc" + "##d"). */
    {"a\tb\x01" "c\xE2\x80\x8B" "d\r\ne\xC2\xA0" "f\xE3\x80\x80g", "a bc ##d e f g", {1037, 4647, 2094, 1041, 1042, 1043}, 6},
    /* Nothing at all. */
    {"", "", {0}, 0},
    {" \t\r\n \xC2\xA0", "", {0}, 0},
    /* Emoji (So) are not in the vocabulary: [UNK] each; U+FE0F (variation selector, Mn) is stripped. */
    {"I \xE2\x9D\xA4\xEF\xB8\x8F \xF0\x9F\x8D\x95 \xF0\x9F\x98\x80!", "i [UNK] [UNK] [UNK] !", {1045, 100, 100, 100, 999}, 5},
    /* U+1D11E (musical G clef) is outside the Basic Multilingual Plane and unknown. */
    {"\xF0\x9D\x84\x9E", "[UNK]", {100}, 1},
    /* İ lower-cases to i + U+0307 (Python's full lower case), and the dot is stripped. ß stays ß ("straße"
     * and "stra"/"str" are absent: "st" + "##raße"). The text is lower-cased one character at a time
     * (PreTrainedTokenizer.tokenize), so Σ always becomes σ (1173), never the final ς (1172). */
    {"\xC4\xB0stanbul \xCE\xA3\xCE\x9F\xCE\xA6\xCE\x99\xCE\x91 Stra\xC3\x9F" "e",
     "istanbul \xCF\x83 ##\xCE\xBF ##\xCF\x86 ##\xCE\xB9\xCE\xB1 st ##ra\xC3\x9F" "e",
     {9960, 1173, 29730, 29736, 27432, 2358, 27807}, 7},
    {"\xCE\x9F\xCE\x94\xCE\x9F\xCE\xA3", "\xCE\xBF ##\xCE\xB4 ##\xCE\xBF ##\xCF\x83", {1169, 29722, 29730, 29733}, 4},
    /* Special tokens written in the text are kept whole (even inside a word), as BertTokenizer does; only
     * the exact upper-case spelling counts. */
    {"[CLS] Hello [SEP] [cls] x[MASK]y", "[CLS] hello [SEP] [ cl ##s ] x [MASK] y",
     {101, 7592, 102, 1031, 18856, 2015, 1033, 1060, 103, 1061}, 10},
    /* Unicode punctuation (¿ ¡ “ ” — …) splits like ASCII punctuation. */
    {"\xC2\xBFQu\xC3\xA9? \xC2\xA1S\xC3\xAD! \xE2\x80\x9Cquoted\xE2\x80\x9D \xE2\x80\x94 done\xE2\x80\xA6",
     "\xC2\xBF que ? \xC2\xA1 si ! \xE2\x80\x9C quoted \xE2\x80\x9D \xE2\x80\x94 done \xE2\x80\xA6",
     {1094, 10861, 1029, 1067, 9033, 999, 1523, 9339, 1524, 1517, 2589, 1529}, 12},
};

static gf_tokenizer *load_bert(void) {
    gf_tokenizer *t = gf_wordpiece_load(VOCAB);
    if (!t) fail_msg("%s (the tests run from the repository root)", gf_last_error());
    return t;
}

static void write_file(const char *path, const char *data, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* Encode text and compare with the expected ids, printing both on a mismatch. */
static void check_ids(const gf_tokenizer *t, const char *label, const char *text, size_t n, const int32_t *want,
                      int n_want) {
    gf_ids ids = {0};
    if (gf_wordpiece_encode(t, text, n, label, &ids)) fail_msg("%s: %s", label, gf_last_error());
    int ok = ids.n == n_want;
    for (int i = 0; ok && i < n_want; i++) ok = ids.v[i] == want[i];
    if (!ok) {
        char got[4096] = "", exp[4096] = "";
        for (int64_t i = 0; i < ids.n && strlen(got) < sizeof got - 16; i++)
            snprintf(got + strlen(got), sizeof got - strlen(got), " %d", ids.v[i]);
        for (int i = 0; i < n_want && strlen(exp) < sizeof exp - 16; i++)
            snprintf(exp + strlen(exp), sizeof exp - strlen(exp), " %d", want[i]);
        fail_msg("%s:\n  got     %s\n  expected%s", label, got, exp);
    }
    gf_ids_free(&ids);
}

static void test_load_bert(void **state) {
    (void)state;
    gf_tokenizer *t = load_bert();
    assert_int_equal(t->kind, GF_TOK_WORDPIECE);
    assert_int_equal(t->vocab.n, 30522);
    assert_int_equal(t->unk_id, 100);
    assert_int_equal(t->eos_id, -1);
    assert_string_equal(t->source, VOCAB);
    assert_string_equal(t->vocab.str[0], "[PAD]");
    assert_string_equal(t->vocab.str[101], "[CLS]");
    assert_string_equal(t->vocab.str[30521], "##\xEF\xBD\x9E"); /* the last line: "##～" */
    gf_tokenizer_free(t);
}

static void test_sentences(void **state) {
    (void)state;
    gf_tokenizer *t = load_bert();
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        const wp_case *k = &CASES[c];
        char label[96];
        snprintf(label, sizeof label, "case %zu \"%.40s\"", c, k->text);
        /* the hand-written pieces and ids agree with the vocabulary file */
        char pieces[512];
        snprintf(pieces, sizeof pieces, "%s", k->pieces);
        int np = 0;
        for (char *save, *p = strtok_r(pieces, " ", &save); p; p = strtok_r(NULL, " ", &save), np++) {
            assert_true(np < k->n);
            int32_t id = gf_vocab_find(&t->vocab, p, strlen(p));
            if (id != k->ids[np]) fail_msg("%s: piece \"%s\" has id %d in %s, the case says %d", label, p, id, VOCAB, k->ids[np]);
        }
        assert_int_equal(np, k->n);
        check_ids(t, label, k->text, strlen(k->text), k->ids, k->n);
    }
    gf_tokenizer_free(t);
}

/* More than 100 characters (code points, after stripping accents) make a word [UNK]; 100 are fine. */
static void test_long_words(void **state) {
    (void)state;
    gf_tokenizer *t = load_bert();
    char text[512];
    int32_t want[64];
    /* 100 × "a": "aaa" (13360), then "##aa" (11057) × 48 ("aaaa", "##aaa" are absent), then "##a" (2050) */
    memset(text, 'a', 100);
    want[0] = 13360;
    for (int i = 1; i <= 48; i++) want[i] = 11057;
    want[49] = 2050;
    check_ids(t, "100 a", text, 100, want, 50);
    memset(text, 'a', 101);
    want[0] = 100;
    check_ids(t, "101 a", text, 101, want, 1);
    /* 101 × "é" (2 bytes each, but 101 characters) */
    for (int i = 0; i < 101; i++) memcpy(text + 2 * i, "\xC3\xA9", 2);
    check_ids(t, "101 e-acute", text, 202, want, 1);
    /* 101 × "e" + U+0301: 202 code points in the text but 101 characters after accent stripping: [UNK] */
    for (int i = 0; i < 101; i++) memcpy(text + 3 * i, "e\xCC\x81", 3);
    check_ids(t, "101 e + U+0301", text, 303, want, 1);
    /* ...and 100 of them are fine: "eee" is absent, so "ee" (25212), then "##ee" (4402) × 49 ("##eee" is
     * absent too) */
    want[0] = 25212;
    for (int i = 1; i < 50; i++) want[i] = 4402;
    check_ids(t, "100 e + U+0301", text, 300, want, 50);
    /* punctuation splits a long run into short words: 60 a, "-", 60 a */
    memset(text, 'a', 60);
    text[60] = '-';
    memset(text + 61, 'a', 60);
    gf_ids ids = {0};
    assert_int_equal(gf_wordpiece_encode(t, text, 121, "split", &ids), 0);
    assert_int_equal(ids.n, 30 + 1 + 30); /* aaa ##aa×28 ##a, -, again */
    assert_int_equal(ids.v[30], 1011);
    for (int64_t i = 0; i < ids.n; i++) assert_int_not_equal(ids.v[i], 100);
    gf_ids_free(&ids);
    gf_tokenizer_free(t);
}

/* Encoding appends; invalid UTF-8 fails naming the byte and leaves the output as it was. */
static void test_encode_errors(void **state) {
    (void)state;
    gf_tokenizer *t = load_bert();
    gf_ids ids = {0};
    assert_int_equal(gf_wordpiece_encode(t, "hello", 5, "a", &ids), 0);
    assert_int_equal(gf_wordpiece_encode(t, "world", 5, "b", &ids), 0);
    assert_int_equal(ids.n, 2);
    assert_int_equal(ids.v[0], 7592);
    assert_int_equal(ids.v[1], 2088);
    static const struct { const char *text; const char *at; } bad[] = {
        {"ok \xC3\x28", "byte 3"},          /* a lead byte without its continuation */
        {"ok \xC0\xAF", "byte 3"},          /* overlong "/" */
        {"okay \xED\xA0\x80", "byte 5"},    /* a UTF-16 surrogate */
        {"o \xF4\x90\x80\x80", "byte 2"},   /* above U+10FFFF */
        {"ok \xE2\x82", "byte 3"},          /* truncated at the end */
        {"\xFF", "byte 0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(gf_wordpiece_encode(t, bad[i].text, strlen(bad[i].text), "corpus.txt", &ids), -1);
        if (!strstr(gf_last_error(), bad[i].at) || !strstr(gf_last_error(), "corpus.txt") ||
            !strstr(gf_last_error(), "UTF-8"))
            fail_msg("case %zu: error '%s' should name corpus.txt, UTF-8 and %s", i, gf_last_error(), bad[i].at);
        assert_int_equal(ids.n, 2);
    }
    /* a NUL byte is a control character: removed, like in BERT */
    assert_int_equal(gf_wordpiece_encode(t, "hel\0lo", 6, "nul", &ids), 0);
    assert_int_equal(ids.n, 3);
    assert_int_equal(ids.v[2], 7592);
    gf_ids_free(&ids);
    gf_tokenizer_free(t);
}

/* Behaviour that bert-base-uncased cannot show (its pieces would all be [UNK]), with a small vocabulary. */
static void test_small_vocab(void **state) {
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s", tl_tmp_path("small_vocab.txt"));
    /* ids:           0        1   2   3                                   4                                 */
    const char v[] = "[UNK]\r\nx\r\ny\r\n##\xF0\x9D\x85\xA5\xF0\x9D\x85\xAD\r\n##\xF0\x9D\x85\xAD\r\n";
    write_file(path, v, sizeof v - 1);
    gf_tokenizer *t = gf_wordpiece_load(path);
    if (!t) fail_msg("%s", gf_last_error());
    assert_int_equal(t->vocab.n, 5); /* CRLF line ends: the \r is not part of the token */
    assert_int_equal(gf_vocab_find(&t->vocab, "x", 1), 1);
    /* NFD puts combining marks in canonical order: U+1D16D (augmentation dot, class 226) after U+1D165
     * (stem, class 216). These marks are Mc, so stripping accents keeps them; the order shows. */
    const int32_t reordered[] = {1, 3};
    check_ids(t, "reorder", "x\xF0\x9D\x85\xAD\xF0\x9D\x85\xA5", 9, reordered, 2);
    /* ...also across a removed accent (U+0301, class 230, only sorted along) or a deleted U+200B, */
    check_ids(t, "reorder 0301", "x\xF0\x9D\x85\xAD\xCC\x81\xF0\x9D\x85\xA5", 11, reordered, 2);
    check_ids(t, "reorder 200B", "x\xF0\x9D\x85\xAD\xE2\x80\x8B\xF0\x9D\x85\xA5", 12, reordered, 2);
    /* ...but not across U+0B56 (Oriya AI length mark: Mn of class 0, so it ends the run before it is
     * stripped): "##\U0001D16D\U0001D165" is not in the vocabulary, so the word is [UNK]. */
    const int32_t unk[] = {0};
    check_ids(t, "no reorder", "x\xF0\x9D\x85\xAD\xE0\xAD\x96\xF0\x9D\x85\xA5", 12, unk, 1);
    /* special tokens missing from the vocabulary still split the text, with the [UNK] id (as BertTokenizer's
     * token -> id lookup does) */
    const int32_t sp[] = {1, 0, 2};
    check_ids(t, "special", "x[CLS]y", 7, sp, 3);
    gf_tokenizer_free(t);
}

/* Vocabulary files: errors name the file, the line and what was expected. */
static void test_load_errors(void **state) {
    (void)state;
    assert_null(gf_wordpiece_load("/nonexistent/vocab.txt"));
    assert_non_null(strstr(gf_last_error(), "/nonexistent/vocab.txt"));

    static const struct { const char *name, *data, *msg[3]; } cases[] = {
        {"dup.txt", "[PAD]\n[UNK]\nhello\nworld\nhello\n", {"dup.txt:5:", "duplicate", "line 3"}},
        {"nounk.txt", "[PAD]\nhello\n", {"nounk.txt", "[UNK]", NULL}},
        {"emptyline.txt", "[UNK]\n\nhello\n", {"emptyline.txt:2:", "empty line", NULL}},
        {"crlfempty.txt", "[UNK]\r\n\r\nhello\r\n", {"crlfempty.txt:2:", "empty line", NULL}},
        {"utf8.txt", "[UNK]\nh\xFFllo\n", {"utf8.txt:2:", "UTF-8", NULL}},
        {"empty.txt", "", {"empty.txt", "empty", NULL}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s", tl_tmp_path(cases[i].name));
        write_file(path, cases[i].data, strlen(cases[i].data));
        gf_tokenizer *t = gf_wordpiece_load(path);
        if (t) fail_msg("%s: accepted", cases[i].name);
        for (int k = 0; k < 3 && cases[i].msg[k]; k++)
            if (!strstr(gf_last_error(), cases[i].msg[k]))
                fail_msg("%s: error '%s' does not mention '%s'", cases[i].name, gf_last_error(), cases[i].msg[k]);
    }
    /* no newline at the end, and a byte order mark: fine */
    char path[512];
    snprintf(path, sizeof path, "%s", tl_tmp_path("bom.txt"));
    write_file(path, "\xEF\xBB\xBF[PAD]\n[UNK]\nhello", 20);
    gf_tokenizer *t = gf_wordpiece_load(path);
    if (!t) fail_msg("%s", gf_last_error());
    assert_int_equal(t->vocab.n, 3);
    assert_int_equal(t->unk_id, 1);
    assert_int_equal(gf_vocab_find(&t->vocab, "[PAD]", 5), 0);
    assert_int_equal(gf_vocab_find(&t->vocab, "hello", 5), 2);
    gf_tokenizer_free(t);
}

/* The unknown-word spelling (gf_tokenizer_set_unk_text): "<unk>" is one [UNK] under the rule, BERT's four
 * pieces without it; decode writes it back; the saved form keeps the rule, and a form saved before the rule
 * existed reads text as it did. */
static void test_unk_text(void **state) {
    (void)state;
    gf_tokenizer *t = load_bert();
    const char *text = "a <unk> b x<unk>y <UNK> <unk";
    const int32_t bert[] = {1037, 1026, 4895, 2243, 1028, 1038, 1060, 1026, 4895, 2243, 1028, 1061,
                            1026, 4895, 2243, 1028, 1026, 4895, 2243}; /* a < un ##k > b x < un ##k > y ... */
    check_ids(t, "no rule", text, strlen(text), bert, 19);
    char *old_form = gf_tokenizer_to_json(t);
    assert_null(strstr(old_form, "unk_text"));
    assert_int_equal(gf_tokenizer_set_unk_text(t, "<unk>"), 0);
    assert_string_equal(gf_tokenizer_unk_text(t), "<unk>");
    const int32_t ruled[] = {1037, 100, 1038, 1060, 100, 1061, 1026, 4895, 2243, 1028, 1026, 4895, 2243};
    check_ids(t, "rule", text, strlen(text), ruled, 13); /* exact spelling only: <UNK> and a cut <unk stay */
    const int32_t ids[] = {1037, 100, 1038};
    char *dec = gf_tokenizer_decode(t, ids, 3, NULL);
    assert_string_equal(dec, "a <unk> b");
    free(dec);
    char *form = gf_tokenizer_to_json(t);
    assert_non_null(strstr(form, "\"unk_text\":\"<unk>\""));
    gf_tokenizer *back = gf_tokenizer_from_json(form, "saved"), *old = gf_tokenizer_from_json(old_form, "old");
    if (!back || !old) fail_msg("%s", gf_last_error());
    check_ids(back, "rule, saved and read", text, strlen(text), ruled, 13);
    check_ids(old, "saved before the rule", text, strlen(text), bert, 19);
    /* bad spellings and a forged saved form are refused with the reason */
    assert_int_equal(gf_tokenizer_set_unk_text(t, "<u nk>"), -1);
    assert_non_null(strstr(gf_last_error(), "printable ASCII"));
    assert_int_equal(gf_tokenizer_set_unk_text(t, "0123456789abcdef"), -1);
    assert_string_equal(gf_tokenizer_unk_text(t), "<unk>"); /* a refused spelling changes nothing */
    char *forged = strdup(form);
    memcpy(strstr(forged, "\"<unk>\""), "1234567", 7);
    assert_null(gf_tokenizer_from_json(forged, "forged"));
    assert_non_null(strstr(gf_last_error(), "unk_text"));
    gf_tokenizer *bytes = gf_tokenizer_bytes();
    assert_int_equal(gf_tokenizer_set_unk_text(bytes, "<unk>"), -1);
    assert_non_null(strstr(gf_last_error(), "WordPiece"));
    free(forged), free(form), free(old_form);
    gf_tokenizer_free(bytes), gf_tokenizer_free(back), gf_tokenizer_free(old), gf_tokenizer_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_bert),     cmocka_unit_test(test_sentences),   cmocka_unit_test(test_long_words),
        cmocka_unit_test(test_encode_errors), cmocka_unit_test(test_small_vocab), cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_unk_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
