/* NLI data (SNLI): the three file forms, dropped rows, and every kind of bad record (NULs, invalid UTF-8,
 * too much text), each with an error that names the file and line; byte order marks, blank lines and
 * Unicode whitespace; missing splits and what else can stand where a split should be. The shipped splits'
 * counts are checked by tests/snli.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/corpus.h"
#include "data/nli_reader.h"
#include "io/lines.h"
#include "sources/pair_source.h"
#include "testlib.h"

static const char *write_file(const char *name, const char *text) {
    const char *p = tl_tmp_path(name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    fwrite(text, 1, strlen(text), f);
    fclose(f);
    return p;
}

/* n bytes, NULs and all */
static const char *write_bytes(const char *name, const char *bytes, size_t n) {
    const char *p = tl_tmp_path(name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    fwrite(bytes, 1, n, f);
    fclose(f);
    return p;
}

static void expect_fail_bytes(const char *name, const char *bytes, size_t n, const char *want) {
    gf_nli_split s;
    if (gf_nli_read(write_bytes(name, bytes, n), &s) == 0) fail_msg("%s: read, expected an error with \"%s\"", name, want);
    if (!strstr(gf_last_error(), want)) fail_msg("%s: error \"%s\" does not contain \"%s\"", name, gf_last_error(), want);
}

static void expect_fail(const char *name, const char *text, const char *want) {
    expect_fail_bytes(name, text, strlen(text), want);
}

/* The compact TSV: "-" rows and empty sentences dropped and counted, CRLF and a last line without a
 * newline read. */
static void test_tsv(void **state) {
    (void)state;
    gf_nli_split s;
    assert_int_equal(gf_nli_read(write_file("a.tsv", "neutral\tA man.\tA person.\r\n-\tX.\tY.\n"
                                                     "contradiction\t \tNobody.\nentailment\tTwo dogs.\tDogs."),
                                 &s), 0);
    assert_string_equal(s.format, "tsv");
    assert_int_equal(s.rows, 4);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.unlabelled, 1);
    assert_int_equal(s.empty, 1);
    assert_int_equal(s.per_label[GF_NLI_NEUTRAL], 1);
    assert_int_equal(s.per_label[GF_NLI_ENTAILMENT], 1);
    assert_string_equal(gf_nli_premise(&s, 0), "A man.");
    assert_string_equal(gf_nli_hypothesis(&s, 0), "A person.");
    assert_string_equal(gf_nli_premise(&s, 1), "Two dogs.");
    assert_string_equal(gf_nli_hypothesis(&s, 1), "Dogs.");
    assert_int_equal(s.label[1], GF_NLI_ENTAILMENT);
    gf_nli_split_free(&s);
}

/* The official jsonl (fields in any order, others ignored) and 14-column txt (columns found by name). */
static void test_jsonl_and_txt(void **state) {
    (void)state;
    gf_nli_split s;
    assert_int_equal(gf_nli_read(write_file("a.jsonl", "{\"annotator_labels\": [\"neutral\"], \"gold_label\": \"neutral\", "
                                                       "\"sentence1\": \"A \\\"tall\\\" man.\", \"sentence2\": \"He\\u00e9.\"}\n"
                                                       "{\"sentence2\": \"b\", \"sentence1\": \"a\", \"gold_label\": \"-\"}\n\n"),
                                 &s), 0);
    assert_string_equal(s.format, "jsonl");
    assert_int_equal(s.n, 1);
    assert_int_equal(s.unlabelled, 1);
    assert_string_equal(gf_nli_premise(&s, 0), "A \"tall\" man.");
    assert_string_equal(gf_nli_hypothesis(&s, 0), "He\xc3\xa9.");
    gf_nli_split_free(&s);
    const char *txt = "gold_label\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\tsentence2_parse\t"
                      "sentence1\tsentence2\tcaptionID\tpairID\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\n"
                      "contradiction\t( a )\t( b )\t(ROOT a)\t(ROOT b)\tA cat sits.\tA dog runs.\t1.jpg#0\t1r1c\t"
                      "contradiction\tcontradiction\t\t\t\n";
    assert_int_equal(gf_nli_read(write_file("a.txt", txt), &s), 0);
    assert_string_equal(s.format, "txt");
    assert_int_equal(s.rows, 1);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.label[0], GF_NLI_CONTRADICTION);
    assert_string_equal(gf_nli_premise(&s, 0), "A cat sits.");
    assert_string_equal(gf_nli_hypothesis(&s, 0), "A dog runs.");
    gf_nli_split_free(&s);
}

static void test_bad_records(void **state) {
    (void)state;
    expect_fail("m.jsonl", "{\"gold_label\": \"neutral\", \"sentence1\": \"a\", \"sentence2\": \"b\"}\n{\"gold_label\": \"ne",
                "m.jsonl:2: not a JSON object");
    expect_fail("n.jsonl", "{\"gold_label\": \"neutral\", \"sentence1\": \"a\"}\n", "n.jsonl:1: no string \"sentence2\"");
    expect_fail("u.tsv", "neutral\ta\tb\nmaybe\ta\tb\n", "u.tsv:2: unknown gold label \"maybe\"");
    expect_fail("c.tsv", "neutral\ta\tb\ncontradiction\ta\n", "c.tsv:2: 2 tab-separated column(s); expected 3");
    expect_fail("h.txt", "gold_label\tsentence1\n", "h.txt:1: a header row without gold_label, sentence1 and sentence2");
    expect_fail("r.txt", "gold_label\tsentence1\tsentence2\nneutral\ta\n", "r.txt:2: 2 tab-separated column(s); expected 3");
    expect_fail("e.tsv", "", "e.tsv: the file is empty");
    char *big = malloc((1 << 20) + 64);
    assert_non_null(big);
    memset(big, 'a', (1 << 20) + 32);
    memcpy(big, "neutral\t", 8);
    big[(1 << 20) + 32] = '\0';
    expect_fail("big.tsv", big, "big.tsv:1: the line is longer than 1048576 bytes");
    free(big);
    gf_nli_split s;
    assert_int_not_equal(gf_nli_read(tl_tmp_path("missing.tsv"), &s), 0);
    assert_non_null(strstr(gf_last_error(), "missing.tsv"));
}

/* What a string length would hide: a NUL byte in a TSV or txt line, a \u0000 in a jsonl sentence (or any
 * field), each refused with file and line; an escaped backslash before "u0000" is text. Invalid UTF-8 is
 * refused by file and line, in a dropped row too; an unknown label is shown with its invisible bytes. */
static void test_nul_and_utf8(void **state) {
    (void)state;
    static const char tsv[] = "neutral\ta\tb\nneutral\tA man\0 sleeps.\tHe sleeps.\n";
    expect_fail_bytes("nul.tsv", tsv, sizeof tsv - 1, "nul.tsv:2: a NUL byte at byte 14 of the line");
    static const char txt[] = "gold_label\tsentence1\tsentence2\nneutral\ta\tb\0c\n";
    expect_fail_bytes("nul.txt", txt, sizeof txt - 1, "nul.txt:2: a NUL byte");
    expect_fail("nul.jsonl", "{\"gold_label\": \"neutral\", \"sentence1\": \"a\\u0000b\", \"sentence2\": \"c\"}\n",
                "nul.jsonl:1: a NUL character (\\u0000) at byte 42 of the record");
    expect_fail("nul2.jsonl", "{\"gold_label\": \"neutral\", \"sentence1\": \"a\", \"sentence2\": \"c\", \"pairID\": \"\\u0000\"}\n",
                "nul2.jsonl:1: a NUL character");
    gf_nli_split s;
    assert_int_equal(gf_nli_read(write_file("esc.jsonl", "{\"gold_label\": \"neutral\", \"sentence1\": \"a\\\\u0000b\", "
                                                         "\"sentence2\": \"c\"}\n"), &s), 0);
    assert_string_equal(gf_nli_premise(&s, 0), "a\\u0000b");
    gf_nli_split_free(&s);
    expect_fail("u8.tsv", "neutral\ta\tb\n-\ta\tcaf\xe9\n", "u8.tsv:2: invalid UTF-8 in the hypothesis at byte 4 (0xE9)");
    expect_fail("u8.jsonl", "{\"gold_label\": \"neutral\", \"sentence1\": \"\xed\xa0\x80\", \"sentence2\": \"c\"}\n",
                "u8.jsonl:1: invalid UTF-8 in the premise at byte 1");
    expect_fail("vis.tsv", "neutral\ta\tb\nneutral\xc2\xa0\ta\tb\n", "vis.tsv:2: unknown gold label \"neutral\\xC2\\xA0\"");
}

/* A UTF-8 byte order mark and blank leading lines are skipped before the form is told; a sentence of
 * Unicode whitespace (U+3000, U+00A0, U+2028), format characters (U+200B) or a lone accent is empty. */
static void test_bom_blank_and_whitespace(void **state) {
    (void)state;
    gf_nli_split s;
    assert_int_equal(gf_nli_read(write_file("bom.jsonl", "\xEF\xBB\xBF{\"gold_label\": \"neutral\", \"sentence1\": \"a\", "
                                                         "\"sentence2\": \"b\"}\n"), &s), 0);
    assert_string_equal(s.format, "jsonl");
    assert_int_equal(s.n, 1);
    gf_nli_split_free(&s);
    assert_int_equal(gf_nli_read(write_file("blank.jsonl", "\n  \r\n{\"gold_label\": \"neutral\", \"sentence1\": \"a\", "
                                                           "\"sentence2\": \"b\"}\n\n"), &s), 0);
    assert_string_equal(s.format, "jsonl");
    assert_int_equal(s.rows, 1);
    gf_nli_split_free(&s);
    assert_int_equal(gf_nli_read(write_file("bom.tsv", "\xEF\xBB\xBFneutral\ta\tb\n"), &s), 0);
    assert_string_equal(s.format, "tsv");
    assert_int_equal(s.per_label[GF_NLI_NEUTRAL], 1);
    gf_nli_split_free(&s);
    assert_int_equal(gf_nli_read(write_file("bom.txt", "\xEF\xBB\xBF\ngold_label\tsentence1\tsentence2\nneutral\ta\tb\n"),
                                 &s), 0);
    assert_string_equal(s.format, "txt");
    assert_int_equal(s.n, 1);
    gf_nli_split_free(&s);
    expect_fail("blank.tsv", "\n \n\t\n", "blank.tsv: the file is empty");
    assert_int_equal(gf_nli_read(write_file("ws.tsv", "neutral\t\xe3\x80\x80\tb\n"          /* U+3000 */
                                                      "neutral\ta\t\xc2\xa0 \xc2\xa0\n"     /* U+00A0 */
                                                      "neutral\t\xe2\x80\xa8\tb\n"          /* U+2028 */
                                                      "neutral\t\xe2\x80\x8b\tb\n"          /* U+200B */
                                                      "neutral\t\xcc\x81\tb\n"              /* a lone U+0301 */
                                                      "entailment\tA\xe3\x80\x80man.\t\xe2\x80\x8bHe.\n"),
                                 &s), 0);
    assert_int_equal(s.rows, 6);
    assert_int_equal(s.empty, 5);
    assert_int_equal(s.n, 1);
    assert_string_equal(gf_nli_premise(&s, 0), "A\xe3\x80\x80man.");
    gf_nli_split_free(&s);
}

/* The pairs one file keeps are bounded by gf_corpus_max_text (GRASSFLOW_MAX_TEXT), with file and line. */
static void test_memory_bound(void **state) {
    (void)state;
    gf_corpus_set_max_text(100);
    gf_nli_split s;
    const char *p = write_file("bound.tsv", "neutral\tA man sleeps in the sun.\tHe sleeps.\n"
                                            "neutral\tA man sleeps in the sun.\tHe sleeps.\n"
                                            "neutral\tA man sleeps in the sun.\tHe sleeps.\n");
    int rc = gf_nli_read(p, &s);
    gf_corpus_set_max_text(0);
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(gf_last_error(), "bound.tsv:3: the pairs kept so far (3, "));
    assert_non_null(strstr(gf_last_error(), "pass the 100 bytes"));
    assert_non_null(strstr(gf_last_error(), "GRASSFLOW_MAX_TEXT"));
    assert_int_equal(gf_nli_read(p, &s), 0); /* the default: a sixth of memory */
    assert_int_equal(s.n, 3);
    gf_nli_split_free(&s);
}

/* A directory of the official file names; the training split falls back to the 1% sample's name. */
static void test_load_dir(void **state) {
    (void)state;
    write_file("snli_1.0_dev.tsv", "neutral\ta\tb\n");
    write_file("snli_1.0_test.jsonl", "{\"gold_label\": \"entailment\", \"sentence1\": \"c\", \"sentence2\": \"d\"}\n");
    const char *tr = write_file("snli_1.0_train_0.01.tsv", "neutral\ta\tb\ncontradiction\tc\td\n");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", tr);
    *strrchr(dir, '/') = '\0';
    assert_true(gf_nli_is_spec(dir, "."));
    gf_nli_data *d = gf_nli_load(dir, ".");
    assert_non_null(d);
    assert_int_equal(d->split[0].n, 2);
    assert_int_equal(d->split[1].n, 1);
    assert_string_equal(d->split[2].format, "jsonl");
    gf_nli_free(d);
    write_file("snli_1.0_train.tsv", "entailment\ta\tb\n"); /* the full file, when there, comes first */
    d = gf_nli_load(dir, ".");
    assert_int_equal(d->split[0].n, 1);
    gf_nli_free(d);
    assert_false(gf_nli_is_spec("/nonexistent", "."));
    assert_null(gf_nli_load("/nonexistent", "."));
    assert_non_null(strstr(gf_last_error(), "no snli_1.0_train"));
}

/* A folder with some splits but not dev is still SNLI, and the missing split is named; whatever else
 * takes a split's name is said for what it is; one split can be read without the others. */
static void test_missing_and_odd_splits(void **state) {
    (void)state;
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s", tl_tmp_path("odd"));
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/snli_1.0_train.tsv", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("not a row\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/snli_1.0_test.tsv", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("neutral\ta\tb\n", f);
    fclose(f);
    assert_true(gf_nli_is_spec(dir, "."));
    assert_null(gf_nli_load(dir, "."));
    assert_non_null(strstr(gf_last_error(), "snli_1.0_train.tsv:1: 1 tab-separated column(s)"));
    gf_nli_data *d = gf_nli_load_splits(dir, ".", 1u << GF_TEST); /* the bad training file is not read */
    assert_non_null(d);
    assert_int_equal(d->split[GF_TEST].n, 1);
    assert_int_equal(d->split[GF_TRAIN].n, 0);
    assert_null(d->split[GF_TRAIN].format);
    gf_nli_free(d);
    assert_null(gf_nli_load_splits(dir, ".", 1u << GF_VALID));
    assert_non_null(strstr(gf_last_error(), "no dev split: no snli_1.0_dev.jsonl, .jsonl.xz, .txt, .txt.xz, .tsv or .tsv.xz"));
    snprintf(path, sizeof path, "%s/snli_1.0_dev.jsonl", dir);
    assert_int_equal(mkdir(path, 0755), 0);
    assert_null(gf_nli_load_splits(dir, ".", 1u << GF_VALID));
    assert_non_null(strstr(gf_last_error(), "snli_1.0_dev.jsonl is a directory"));
    rmdir(path);
    assert_int_equal(symlink("snli_1.0_dev.jsonl", path), 0); /* itself */
    assert_null(gf_nli_load_splits(dir, ".", 1u << GF_VALID));
    assert_non_null(strstr(gf_last_error(), "snli_1.0_dev.jsonl is a symbolic link loop"));
    unlink(path);
    assert_int_equal(mkfifo(path, 0644), 0);
    assert_null(gf_nli_load_splits(dir, ".", 1u << GF_VALID));
    assert_non_null(strstr(gf_last_error(), "snli_1.0_dev.jsonl is a FIFO"));
    unlink(path);
}

/* The source: [CLS] premise [SEP] hypothesis [SEP] with segments 0 then 1, padding, the label; sentences cut
 * to max_sent pieces and counted; a shuffled training order that is a permutation; errors for a tokenizer
 * without [CLS] and a model that is not a 3-way classifier. */
static void test_source(void **state) {
    (void)state;
    gf_nli_split sp;
    assert_int_equal(gf_nli_read(write_file("s.tsv", "neutral\tA man sleeps.\tYes.\n"
                                                     "contradiction\tthe the the the the the the\tNo.\n"), &sp), 0);
    gf_tokenizer *tok = gf_wordpiece_load("data/bert-base-uncased/vocab.txt");
    assert_non_null(tok);
    gf_pair_source_stats st;
    gf_source *src = gf_pair_source_create(&sp, tok, 5, 1, &st);
    assert_non_null(src);
    assert_int_equal(st.pairs, 2);
    assert_int_equal(st.truncated, 1);
    assert_int_equal(st.longest, 5 + 2 + 3);
    gf_batch b;
    assert_int_equal(src->fill_eval(src->ctx, 0, 2, &b), 0);
    assert_int_equal(b.B, 2);
    assert_int_equal(b.T, 10);
    /* "a man sleeps ." = 1037 2158 25126 1012, "yes ." = 2748 1012 (bert-base-uncased: the 0-based line of
     * each piece in vocab.txt); [CLS] 101, [SEP] 102, [PAD] 0 */
    const int32_t row0[10] = {101, 1037, 2158, 25126, 1012, 102, 2748, 1012, 102, 0};
    const uint8_t seg0[10] = {0, 0, 0, 0, 0, 0, 1, 1, 1, 0};
    for (int t = 0; t < 10; t++) {
        assert_int_equal(b.ids[t], row0[t]);
        assert_int_equal(b.segments[t], seg0[t]);
        assert_int_equal(b.mask[t], t < 9);
    }
    const int32_t row1[10] = {101, 1996, 1996, 1996, 1996, 1996, 102, 2053, 1012, 102}; /* cut to 5 "the" */
    for (int t = 0; t < 10; t++) assert_int_equal(b.ids[10 + t], row1[t]);
    assert_int_equal(b.targets[0], GF_NLI_NEUTRAL);
    assert_int_equal(b.targets[1], GF_NLI_CONTRADICTION);
    assert_int_equal(src->fill_eval(src->ctx, 0, 1, &b), 0); /* alone, a row is as long as itself */
    assert_int_equal(b.T, 9);
    int seen = 0;
    for (int64_t first = 0; first < 2; first++) {
        assert_int_equal(src->fill(src->ctx, 3, first, 1, &b), 0);
        seen |= 1 << b.targets[0];
    }
    assert_int_equal(seen, (1 << GF_NLI_NEUTRAL) | (1 << GF_NLI_CONTRADICTION)); /* a permutation */
    gf_config cfg;
    assert_int_equal(gf_config_preset("grassmann-tiny", &cfg), 0);
    gf_model *lm = gf_model_create(&cfg);
    assert_int_not_equal(src->check(src->ctx, lm, GF_USE_TRAIN), 0);
    assert_non_null(strstr(gf_last_error(), "n_classes 3"));
    gf_model_free(lm);
    gf_source_free(src);
    gf_tokenizer *bytes = gf_tokenizer_bytes();
    assert_null(gf_pair_source_create(&sp, bytes, 48, 1, NULL));
    assert_non_null(strstr(gf_last_error(), "no [CLS] token"));
    gf_tokenizer_free(bytes);
    gf_nli_split_free(&sp);
    assert_int_equal(gf_nli_read(write_file("dash.tsv", "-\ta\tb\n-\tc\td\nneutral\t \tx\n"), &sp), 0);
    assert_null(gf_pair_source_create(&sp, tok, 48, 1, NULL)); /* nothing kept: the file says why */
    assert_non_null(strstr(gf_last_error(), "dash.tsv: no pair to use (rows 3: labelled - for no consensus 2, with an "
                                            "empty sentence 1)"));
    gf_nli_split_free(&sp);
    gf_tokenizer_free(tok);
}

/* One text alone: [CLS] text [SEP] with a BERT vocabulary, its bare tokens otherwise, and no tokens refused. */
static void test_encode_single(void **state) {
    (void)state;
    gf_tokenizer *wp = gf_wordpiece_load("data/bert-base-uncased/vocab.txt"), *bytes = gf_tokenizer_bytes();
    assert_non_null(wp);
    int32_t *ids;
    int64_t n;
    assert_int_equal(gf_encode_single(wp, "A man sleeps.", 13, "--text", &ids, &n), 0);
    const int32_t want[6] = {101, 1037, 2158, 25126, 1012, 102}; /* [CLS] a man sleeps . [SEP] */
    assert_int_equal(n, 6);
    for (int t = 0; t < 6; t++) assert_int_equal(ids[t], want[t]);
    free(ids);
    assert_int_equal(gf_encode_single(bytes, "ab", 2, "--text", &ids, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(ids[0], 'a');
    assert_int_equal(ids[1], 'b');
    free(ids);
    assert_int_equal(gf_encode_single(bytes, "", 0, "--text", &ids, &n), -1);
    assert_null(ids);
    assert_string_equal(gf_last_error(), "--text: no tokens; give a non-empty text");
    assert_int_equal(gf_encode_single(wp, "\xff", 1, "--text", &ids, &n), -1); /* the tokenizer's error */
    assert_non_null(strstr(gf_last_error(), "--text"));
    gf_tokenizer_free(bytes);
    gf_tokenizer_free(wp);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_encode_single), cmocka_unit_test(test_tsv), cmocka_unit_test(test_jsonl_and_txt),
                                       cmocka_unit_test(test_bad_records), cmocka_unit_test(test_nul_and_utf8),
                                       cmocka_unit_test(test_bom_blank_and_whitespace),
                                       cmocka_unit_test(test_memory_bound), cmocka_unit_test(test_load_dir),
                                       cmocka_unit_test(test_missing_and_odd_splits), cmocka_unit_test(test_source)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    pool_release();
    return rc;
}
