/* NLI data (SNLI): the three file forms, dropped rows, and every kind of bad record, each with an error
 * that names the file and line. The shipped splits' counts are checked by tests/snli.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/nli.h"
#include "io/lines.h"
#include "tasks/nli.h"
#include "testlib.h"

static const char *write_file(const char *name, const char *text) {
    const char *p = tl_tmp_path(name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    fwrite(text, 1, strlen(text), f);
    fclose(f);
    return p;
}

static void expect_fail(const char *name, const char *text, const char *want) {
    gf_nli_split s;
    if (gf_nli_read(write_file(name, text), &s) == 0) fail_msg("%s: read, expected an error with \"%s\"", name, want);
    if (!strstr(gf_last_error(), want)) fail_msg("%s: error \"%s\" does not contain \"%s\"", name, gf_last_error(), want);
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
    gf_nli_source_stats st;
    gf_source *src = gf_nli_source_create(&sp, tok, 5, 1, &st);
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
    assert_null(gf_nli_source_create(&sp, bytes, 48, 1, NULL));
    assert_non_null(strstr(gf_last_error(), "no [CLS] token"));
    gf_tokenizer_free(bytes);
    gf_tokenizer_free(tok);
    gf_nli_split_free(&sp);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_tsv), cmocka_unit_test(test_jsonl_and_txt),
                                       cmocka_unit_test(test_bad_records), cmocka_unit_test(test_load_dir),
                                       cmocka_unit_test(test_source)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    pool_release();
    return rc;
}
