/* NLI data (SNLI): the three file forms, dropped rows, and every kind of bad record (NULs, invalid UTF-8,
 * too much text), each with an error that names the file and line; byte order marks, blank lines and
 * Unicode whitespace; missing splits and what else can stand where a split should be. The shipped splits'
 * counts are checked by tests/train/snli.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tasks/lm/corpus.h"
#include "tasks/snli/nli_reader.h"
#include "io/lines.h"
#include "tasks/snli/pair_source.h"
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
    expect_fail("h.txt", "gold_label\tsentence1\n", "h.txt:1: a header row without gold_label (or label), sentence1 (or "
                "premise) and sentence2 (or hypothesis) columns");
    expect_fail("nolabel.tsv", "premise\thypothesis\na\tb\n", "nolabel.tsv:1: a header row without gold_label"); /* a split */
    expect_fail("nolabel.jsonl", "{\"premise\": \"a\", \"hypothesis\": \"b\"}\n", "nolabel.jsonl:1: no string \"gold_label\" (or \"label\")");
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

/* A record or header that could be read two ways is refused, naming file, line and the keys or columns: a
 * label under both names (or one twice), both names of a sentence; a .jsonl is JSON lines whatever its
 * first line begins with, a line that is JSON but no object named for what it is; a .tsv is never read as
 * jsonl. */
static void test_ambiguous_records(void **state) {
    (void)state;
    expect_fail("both.jsonl", "{\"gold_label\": \"neutral\", \"sentence1\": \"a\", \"sentence2\": \"b\"}\n"
                "{\"gold_label\": \"neutral\", \"label\": 2, \"sentence1\": \"a\", \"sentence2\": \"b\"}\n",
                "both.jsonl:2: the record has both \"gold_label\" and \"label\"");
    expect_fail("pre.jsonl", "{\"label\": 1, \"sentence1\": \"a\", \"premise\": \"c\", \"hypothesis\": \"b\"}\n",
                "pre.jsonl:1: the record has both \"sentence1\" and \"premise\"");
    expect_fail("hyp.jsonl", "{\"label\": 1, \"premise\": \"a\", \"sentence2\": \"c\", \"hypothesis\": \"b\"}\n",
                "hyp.jsonl:1: the record has both \"sentence2\" and \"hypothesis\"");
    expect_fail("twice.jsonl", "{\"label\": 1, \"label\": 0, \"premise\": \"a\", \"hypothesis\": \"b\"}\n",
                "twice.jsonl:1: the record has the key \"label\" 2 times");
    expect_fail("h2.tsv", "premise\thypothesis\tsentence1\tlabel\na\tb\tc\tneutral\n",
                "h2.tsv:1: the header row names columns 1 (\"premise\") and 3 (\"sentence1\") for one field");
    expect_fail("h3.txt", "gold_label\tsentence1\tsentence2\tlabel\nneutral\ta\tb\tneutral\n",
                "h3.txt:1: the header row names columns 1 (\"gold_label\") and 4 (\"label\")");
    expect_fail("arr.jsonl", "[1,2,3]\n", "arr.jsonl:1: an array (the line begins \"[1,2,3]\"), not a JSON object");
    expect_fail("num.jsonl", "{\"gold_label\": \"neutral\", \"sentence1\": \"a\", \"sentence2\": \"b\"}\n\n7\n",
                "num.jsonl:3: a number (the line begins \"7\"), not a JSON object");
    expect_fail("text.jsonl", "neutral\ta\tb\n", "text.jsonl:1: not a JSON object");
    expect_fail("blank.jsonl", "\n \n", "blank.jsonl: the file is empty");
    expect_fail("obj.tsv", "{\"gold_label\": \"neutral\", \"sentence1\": \"a\", \"sentence2\": \"b\"}\n",
                "obj.tsv:1: 1 tab-separated column(s); expected 3");
    gf_nli_split sp; /* a name that says nothing: known by the first line */
    assert_int_equal(gf_nli_read(write_file("pairs.data", "{\"gold_label\": \"neutral\", \"sentence1\": \"a\", "
                                            "\"sentence2\": \"b\"}\n"), &sp), 0);
    assert_string_equal(sp.format, "jsonl");
    assert_int_equal(sp.n, 1);
    gf_nli_split_free(&sp);
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

static void expect_fail_pairs(const char *name, const char *text, const char *want) {
    gf_nli_split s;
    if (gf_nli_read_pairs(write_file(name, text), &s) == 0) fail_msg("%s: read, expected an error with \"%s\"", name, want);
    if (!strstr(gf_last_error(), want)) fail_msg("%s: error \"%s\" does not contain \"%s\"", name, gf_last_error(), want);
}

/* The pairs (premise, hypothesis, label) of s, one string, to compare files of other forms. */
static void same_pairs(const gf_nli_split *s, const gf_nli_split *t) {
    assert_int_equal(s->n, t->n);
    for (int64_t i = 0; i < s->n; i++) {
        assert_string_equal(gf_nli_premise(s, i), gf_nli_premise(t, i));
        assert_string_equal(gf_nli_hypothesis(s, i), gf_nli_hypothesis(t, i));
        assert_int_equal(s->label[i], t->label[i]);
    }
}

/* A file of pairs read whole: every row kept in order (no label: -1; an empty sentence as it is), in every
 * form: SNLI's jsonl, Hugging Face's (numbers for labels, null or none for no label), a TSV whose header row
 * names its columns in any order (the label column may be left out), the compact TSV, and a headerless
 * premise, hypothesis TSV. */
static void test_pairs_file(void **state) {
    (void)state;
    gf_nli_split a, b;
    assert_int_equal(gf_nli_read_pairs(write_file("p.tsv", "neutral\tA man.\tA person.\n-\tX.\tY.\n"
                                                           "contradiction\t \tNobody.\n"), &a), 0);
    assert_int_equal(a.n, 3);
    assert_int_equal(a.rows, 3);
    assert_int_equal(a.unlabelled, 1);
    assert_int_equal(a.empty, 1);
    assert_int_equal(a.label[1], -1);
    assert_string_equal(gf_nli_premise(&a, 2), " ");
    assert_int_equal(gf_nli_read_pairs(write_file("p.jsonl", "{\"label\": 1, \"premise\": \"A man.\", \"hypothesis\": "
                                                             "\"A person.\"}\n{\"premise\": \"X.\", \"hypothesis\": \"Y.\"}\n"
                                                             "{\"gold_label\": \"contradiction\", \"sentence1\": \" \", "
                                                             "\"sentence2\": \"Nobody.\"}\n"), &b), 0);
    same_pairs(&a, &b);
    gf_nli_split_free(&b);
    assert_int_equal(gf_nli_read_pairs(write_file("p2.jsonl", "{\"label\": \"neutral\", \"premise\": \"A man.\", "
                                                              "\"hypothesis\": \"A person.\"}\n{\"label\": null, \"premise\": "
                                                              "\"X.\", \"hypothesis\": \"Y.\"}\n{\"label\": 2, \"premise\": "
                                                              "\" \", \"hypothesis\": \"Nobody.\"}\n"), &b), 0);
    same_pairs(&a, &b);
    gf_nli_split_free(&b);
    assert_int_equal(gf_nli_read_pairs(write_file("h.tsv", "hypothesis\tlabel\tpremise\nA person.\tneutral\tA man.\n"
                                                           "Y.\t\tX.\nNobody.\tcontradiction\t \n"), &b), 0);
    assert_string_equal(b.format, "tsv-header");
    same_pairs(&a, &b);
    gf_nli_split_free(&b);
    gf_nli_split_free(&a);
    assert_int_equal(gf_nli_read_pairs(write_file("two.tsv", "A man.\tA person.\nX.\tY.\n"), &a), 0);
    assert_int_equal(gf_nli_read_pairs(write_file("two.txt", "premise\thypothesis\nA man.\tA person.\nX.\tY.\n"), &b), 0);
    same_pairs(&a, &b);
    assert_int_equal(a.unlabelled, 2);
    assert_int_equal(a.label[0], -1);
    gf_nli_split_free(&a);
    gf_nli_split_free(&b);
    assert_int_equal(gf_nli_read(write_file("hf.jsonl", "{\"label\": 0, \"premise\": \"a\", \"hypothesis\": \"b\"}\n"
                                                        "{\"label\": -1, \"premise\": \"a\", \"hypothesis\": \"b\"}\n"), &a), 0);
    assert_int_equal(a.n, 1); /* a split of a folder: Hugging Face's form too, "-" (-1) dropped as ever */
    assert_int_equal(a.label[0], GF_NLI_ENTAILMENT);
    gf_nli_split_free(&a);
}

/* What a file of pairs refuses, by file and line. */
static void test_pairs_file_errors(void **state) {
    (void)state;
    expect_fail_pairs("c.tsv", "neutral\ta\tb\ncontradiction\tc\n", "c.tsv:2: 2 tab-separated column(s); expected 3 "
                      "(label, premise, hypothesis)");
    expect_fail_pairs("c2.tsv", "a\tb\nc\td\te\n", "c2.tsv:2: 3 tab-separated column(s); expected 2 (premise, hypothesis)");
    expect_fail_pairs("l.tsv", "neutral\ta\tb\nmaybe\tc\td\n", "l.tsv:2: unknown gold label \"maybe\"");
    expect_fail_pairs("order.tsv", "A man.\tA person.\tneutral\n", "order.tsv:1: unknown gold label \"A man.\" in the "
                      "first column, and a label in the last");
    expect_fail_pairs("l7.jsonl", "{\"label\": 7, \"premise\": \"a\", \"hypothesis\": \"b\"}\n",
                      "l7.jsonl:1: \"label\" is neither a string nor one of the numbers -1, 0, 1, 2");
    expect_fail_pairs("nh.jsonl", "{\"premise\": \"a\", \"label\": 1}\n", "nh.jsonl:1: no string \"sentence2\" (or "
                      "\"hypothesis\")");
    expect_fail_pairs("j.jsonl", "{\"premise\": \"a\", \"hypothesis\": \"b\"}\n[1, 2]\n",
                      "j.jsonl:2: an array (the line begins \"[1, 2]\"), not a JSON object");
    expect_fail_pairs("hp.tsv", "premise\tlabel\na\tneutral\n", "hp.tsv:1: a header row without gold_label (or label), "
                      "sentence1 (or premise) and sentence2 (or hypothesis) columns");
    expect_fail_pairs("ho.tsv", "premise\thypothesis\tlabel\n\n", "ho.tsv: a header row and no pair");
    expect_fail_pairs("e.jsonl", "", "e.jsonl: the file is empty");
}

/* Which paths name a file of pairs: by name (*.jsonl, *.tsv, .xz, even when missing: reading it says so), or
 * by a first line of pairs; never a text corpus, a folder or a missing file of another name. */
static void test_pairs_file_names(void **state) {
    (void)state;
    assert_true(gf_nli_file(write_file("any.tsv", "whatever\n")));
    assert_true(gf_nli_file(tl_tmp_path("missing.jsonl.xz")));
    assert_false(gf_nli_file(tl_tmp_path("missing.txt")));
    assert_true(gf_nli_file(write_file("pairs.txt", "\n{\"premise\": \"a\", \"hypothesis\": \"b\"}\n")));
    assert_true(gf_nli_file(write_file("hdr.txt", "sentence2\tsentence1\nb\ta\n")));
    assert_true(gf_nli_file(write_file("three.txt", "-\ta\tb\n")));
    assert_false(gf_nli_file(write_file("text.txt", "First Citizen:\nBefore we proceed any further, hear me speak.\n")));
    assert_false(gf_nli_file(write_file("json.txt", "{\"text\": \"a\"}\n")));
    assert_false(gf_nli_file(write_file("word.txt", "premise\nOf a text corpus.\n")));
    char dir[600];
    snprintf(dir, sizeof dir, "%s", tl_tmp_path("folder.jsonl"));
    mkdir(dir, 0755);
    assert_false(gf_nli_file(dir));
    snprintf(dir, sizeof dir, "%s", tl_tmp_path("fifo.tsv"));
    assert_int_equal(mkfifo(dir, 0644), 0);
    assert_true(gf_nli_file(dir)); /* and its read says it is a FIFO, without blocking */
    gf_nli_split fs;
    assert_int_not_equal(gf_nli_read_pairs(dir, &fs), 0);
    assert_non_null(strstr(gf_last_error(), "is a FIFO"));
    unlink(dir);
    assert_int_equal(gf_nli_is_spec(tl_tmp_path("pairs.txt"), "."), 2);
    assert_int_equal(gf_nli_is_spec("snli", "."), 1);
    gf_nli_data *d = gf_nli_load_splits(tl_tmp_path("pairs.txt"), ".", 1u << GF_TEST);
    assert_non_null(d);
    assert_int_equal(d->split[GF_TEST].n, 1);
    assert_int_equal(d->split[GF_TEST].label[0], -1);
    gf_nli_free(d);
    assert_null(gf_nli_load_splits(tl_tmp_path("pairs.txt"), ".", 7u));
    assert_non_null(strstr(gf_last_error(), "pairs.txt is a file of sentence pairs: it can be scored (grassflow eval, "
                                            "predict), not trained on"));
}

/* Pairs as CSV (RFC 4180): a header row in any column order, quoted commas, a quote written twice, a line
 * break inside a quoted field, CRLF and a byte order mark read as their TSV twin reads; without a header
 * label,premise,hypothesis or premise,hypothesis; known by the name *.csv or by a first line that is a
 * comma-separated header row. */
static void test_csv(void **state) {
    (void)state;
    gf_nli_split t, c;
    assert_int_equal(gf_nli_read_pairs(write_file("twin.tsv", "premise\thypothesis\tlabel\nA man, tall, sleeps.\t"
                                                              "He said \"no\".\tneutral\nX.\tY.\t\n"), &t), 0);
    assert_int_equal(gf_nli_read_pairs(write_file("twin.csv", "\xEF\xBB\xBFlabel,hypothesis,premise\r\nneutral,"
                                                              "\"He said \"\"no\"\".\",\"A man, tall, sleeps.\"\r\n"
                                                              ",Y.,X.\r\n"), &c), 0);
    assert_string_equal(c.format, "csv-header");
    same_pairs(&t, &c);
    gf_nli_split_free(&c);
    /* the same by its first line, under another name; a quote inside an unquoted field is kept */
    assert_int_equal(gf_nli_read_pairs(write_file("twin.txt", "premise,hypothesis,label\n\"A man, tall, sleeps.\","
                                                              "He said \"no\".,neutral\nX.,Y.,\n"), &c), 0);
    assert_string_equal(c.format, "csv-header");
    same_pairs(&t, &c);
    gf_nli_split_free(&c);
    gf_nli_split_free(&t);
    assert_true(gf_nli_file(tl_tmp_path("twin.txt")));
    assert_true(gf_nli_file(write_file("quoted.txt", "\"sentence1\",\"sentence2\"\na,b\n")));
    assert_false(gf_nli_file(write_file("prose.txt", "A premise, as it were, is text.\n")));
    /* a line break inside a quoted field: one record over three lines, the next one's line numbers right */
    assert_int_equal(gf_nli_read_pairs(write_file("nl.csv", "premise,hypothesis\n\"A man\r\nsleeps,\n.\",B.\nC.,D.\n"
                                                            "E.,\"F\n"), &c), -1);
    assert_non_null(strstr(gf_last_error(), "nl.csv:6: a quoted field opens on this line and never closes"));
    assert_int_equal(gf_nli_read_pairs(write_file("nl.csv", "premise,hypothesis\n\"A man\r\nsleeps,\n.\",B.\nC.,D.\n"),
                                       &c), 0);
    assert_int_equal(c.n, 2);
    assert_string_equal(gf_nli_premise(&c, 0), "A man\nsleeps,\n.");
    assert_string_equal(gf_nli_hypothesis(&c, 1), "D.");
    gf_nli_split_free(&c);
    /* without a header: label, premise, hypothesis; or premise, hypothesis in a file read whole */
    assert_int_equal(gf_nli_read(write_file("bare.csv", "neutral,\"A, b\",C\n-,x,y\n"), &c), 0);
    assert_string_equal(c.format, "csv");
    assert_int_equal(c.n, 1);
    assert_string_equal(gf_nli_premise(&c, 0), "A, b");
    gf_nli_split_free(&c);
    assert_int_equal(gf_nli_read_pairs(write_file("bare2.csv", "\"A, b\",C\nx,y\n"), &c), 0);
    assert_int_equal(c.n, 2);
    assert_int_equal(c.label[0], -1);
    gf_nli_split_free(&c);
}

/* What a CSV of pairs refuses, by file and line; a quote that never closes takes at most 1 MiB; a file in
 * no known form is an error listing the forms. */
static void test_csv_errors(void **state) {
    (void)state;
    expect_fail_pairs("q.csv", "premise,hypothesis\n\"a\" b,c\n", "q.csv:2: ' ' after");
    expect_fail_pairs("q.csv", "premise,hypothesis\n\"a\" b,c\n", "after the closing quote of field 1; expected a comma");
    expect_fail_pairs("two.csv", "premise,hypothesis,sentence1\na,b,c\n", "two.csv:1: the header row names columns 1 "
                      "(\"premise\") and 3 (\"sentence1\") for one field");
    expect_fail_pairs("cols.csv", "premise,hypothesis\na,\"b,c\",d\n", "cols.csv:2: 3 comma-separated column(s); "
                      "expected 2");
    expect_fail_pairs("order.csv", "A man.,A person.,neutral\n", "premise,hypothesis,label");
    expect_fail_pairs("open.csv", "premise,hypothesis\na,\"b\n", "open.csv:2: a quoted field opens on this line and "
                      "never closes (the file ends first)");
    expect_fail_pairs("prose.txt", "Just some text.\n", "prose.txt:1: not sentence pairs in a form grassflow reads");
    expect_fail_pairs("prose.txt", "Just some text.\n", "comma-separated ones (named *.csv, or with a header row");
    /* 2 MiB of lines inside one open quote: refused once the record passes 1 MiB, not read into memory whole */
    const size_t n = 2u << 20;
    char *big = malloc(n + 32);
    assert_non_null(big);
    strcpy(big, "premise,hypothesis\na,\"");
    for (size_t k = strlen(big); k < n; k++) big[k] = k % 64 ? 'x' : '\n';
    big[n] = '\0';
    expect_fail_pairs("big.csv", big, "a record (from line 2) passes 1048576 bytes");
    free(big);
    /* any regular file given as the pairs of a split is read as one: its reading says what it holds */
    assert_true(gf_nli_whole_file(tl_tmp_path("prose.txt")));
    assert_false(gf_nli_whole_file("snli"));
    assert_null(gf_nli_load_splits(tl_tmp_path("prose.txt"), ".", 1u << GF_TEST));
    assert_non_null(strstr(gf_last_error(), "prose.txt:1: not sentence pairs in a form grassflow reads"));
}

typedef struct {
    int64_t n, right, counted, unlabelled;
    double probs[64][3];
} tally_ctx;

static int tally_prediction(const gf_prediction *p, void *ctx) {
    tally_ctx *t = ctx;
    assert_int_equal(p->index, t->n);
    assert_int_equal(p->n_classes, 3);
    double sum = 0.0;
    int64_t best = 0;
    for (int c = 0; c < 3; c++) {
        sum += p->probs[c];
        best = p->logits[c] > p->logits[best] ? c : best;
        if (t->n < 64) t->probs[t->n][c] = p->probs[c];
    }
    assert_true(sum > 1.0 - 1e-12 && sum < 1.0 + 1e-12);
    assert_int_equal(p->label, best);
    assert_int_equal(p->ids[0], 101); /* [CLS], unpadded: ends in [SEP] */
    assert_int_equal(p->ids[p->n_ids - 1], 102);
    t->counted += p->gold >= 0;
    t->unlabelled += p->gold < 0;
    t->right += p->gold >= 0 && p->gold == p->label;
    t->n++;
    return 0;
}

static int stop_after_two(const gf_prediction *p, void *ctx) {
    (void)ctx;
    return p->index == 1;
}

/* gf_predict walks the batches gf_evaluate_result takes: its labels give the same accuracy, pairs without a
 * label included but not counted; its probabilities sum to 1; gf_nli_predict on the same pairs in memory gives
 * the same bits; a callback can stop it. */
static void test_predict(void **state) {
    (void)state;
    gf_nli_split sp;
    assert_int_equal(gf_nli_read_pairs(write_file("pr.tsv", "neutral\tA man sleeps.\tHe sleeps.\n-\tTwo dogs run.\tDogs.\n"
                                                            "contradiction\tA girl sings loudly.\tNobody sings.\n"
                                                            "entailment\tKids play.\tChildren are playing outside.\n"
                                                            "neutral\tA cat.\tThe cat is hungry.\n"), &sp), 0);
    gf_tokenizer *tok = gf_wordpiece_load("data/bert-base-uncased/vocab.txt");
    gf_config cfg;
    assert_int_equal(gf_config_preset("grassmann-tiny", &cfg), 0);
    assert_int_equal(gf_config_set(&cfg, "vocab_size=30522"), 0);
    assert_int_equal(gf_config_set(&cfg, "head.kind=classify"), 0);
    assert_int_equal(gf_config_set(&cfg, "head.n_classes=3"), 0);
    assert_int_equal(gf_config_set(&cfg, "segments=2"), 0);
    gf_model *m = gf_model_create(&cfg);
    gf_model_init(m, 7);
    gf_source *src = gf_pair_source_create(&sp, tok, 4, 1, NULL);
    assert_non_null(src);
    int64_t conf[9];
    gf_eval_result er = {.confusion = conf};
    assert_int_equal(gf_evaluate_result(m, src, 2, &er), 0);
    tally_ctx t = {0};
    assert_int_equal(gf_predict(m, src, 2, tally_prediction, &t), 0);
    assert_int_equal(t.n, 5);
    assert_int_equal(t.unlabelled, 1);
    assert_int_equal(t.counted, er.n_counted);
    assert_int_equal(t.right, er.n_correct);
    const char *pre[5], *hyp[5];
    for (int i = 0; i < 5; i++) pre[i] = gf_nli_premise(&sp, i), hyp[i] = gf_nli_hypothesis(&sp, i);
    double probs[15];
    int32_t labels[5];
    assert_int_equal(gf_nli_predict(m, tok, pre, hyp, 5, 4, 2, probs, labels), 0);
    for (int i = 0; i < 5; i++)
        for (int c = 0; c < 3; c++) assert_memory_equal(&probs[i * 3 + c], &t.probs[i][c], sizeof(double));
    assert_int_equal(gf_predict(m, src, 2, stop_after_two, NULL), 0);
    const char *bad = "caf\xe9";
    assert_int_not_equal(gf_nli_predict(m, tok, &bad, &bad, 1, 4, 2, probs, NULL), 0);
    assert_non_null(strstr(gf_last_error(), "invalid UTF-8"));
    gf_source_free(src);
    gf_model_free(m);
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

/* gf_nli_encode_pair: each sentence cut to max_sent pieces; a max_sent below 1 is refused (a negative one
 * once sized the ids short and wrote [CLS] [SEP] [SEP] past them) */
static void test_encode_pair(void **state) {
    (void)state;
    gf_tokenizer *wp = gf_wordpiece_load("data/bert-base-uncased/vocab.txt");
    assert_non_null(wp);
    int32_t *ids;
    uint8_t *seg;
    int64_t n;
    assert_int_equal(gf_nli_encode_pair(wp, "A man sleeps.", "Yes.", 2, &ids, &seg, &n), 0);
    const int32_t want[7] = {101, 1037, 2158, 102, 2748, 1012, 102}; /* [CLS] a man [SEP] yes . [SEP] */
    const uint8_t want_seg[7] = {0, 0, 0, 0, 1, 1, 1};
    assert_int_equal(n, 7);
    for (int t = 0; t < 7; t++) {
        assert_int_equal(ids[t], want[t]);
        assert_int_equal(seg[t], want_seg[t]);
    }
    free(ids);
    free(seg);
    for (int64_t bad = 0; bad >= -1; bad--) {
        assert_int_equal(gf_nli_encode_pair(wp, "A man sleeps.", "Yes.", bad, &ids, &seg, &n), -1);
        assert_null(ids);
        assert_null(seg);
        assert_non_null(strstr(gf_last_error(), bad ? "max_sent is -1; expected at least 1" : "max_sent is 0; expected at least 1"));
    }
    gf_tokenizer_free(wp);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_encode_single), cmocka_unit_test(test_encode_pair),
                                       cmocka_unit_test(test_tsv), cmocka_unit_test(test_jsonl_and_txt),
                                       cmocka_unit_test(test_bad_records), cmocka_unit_test(test_ambiguous_records),
                                       cmocka_unit_test(test_nul_and_utf8),
                                       cmocka_unit_test(test_bom_blank_and_whitespace),
                                       cmocka_unit_test(test_memory_bound), cmocka_unit_test(test_load_dir),
                                       cmocka_unit_test(test_missing_and_odd_splits), cmocka_unit_test(test_source),
                                       cmocka_unit_test(test_pairs_file), cmocka_unit_test(test_pairs_file_errors),
                                       cmocka_unit_test(test_pairs_file_names), cmocka_unit_test(test_csv),
                                       cmocka_unit_test(test_csv_errors), cmocka_unit_test(test_predict)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    pool_release();
    return rc;
}
