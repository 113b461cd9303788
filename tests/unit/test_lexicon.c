/* Pronunciation lexicons (src/tasks/g2p/lexicon.h): both formats on hand-written files with known answers
 * (phonemes with stress kept and stripped, alternates first or all, parts of speech, skipped words), the split
 * as a pure function of the word and its proportions, inventories independent of the file's order, every kind
 * of malformed line with its line number, hostile files (an overlong line, a truncated one, NUL bytes, invalid
 * UTF-8, empty files, each limit), and the counts data/README.md gives for the shipped sample and for Debian's
 * full cmudict-0.4.out (skipped, saying so, when festlex-cmu is not installed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tasks/g2p/lexicon.h"
#include "testlib.h"

#define SAMPLE "data/cmudict/cmudict-0.4-sample20.out.xz"
#ifndef FULL /* (a build may point it elsewhere: -DFULL=...) */
#define FULL "/usr/share/festival/dicts/cmu/cmudict-0.4.out"
#endif

static const char *write_bytes(const char *name, const char *bytes, size_t n) {
    const char *p = tl_tmp_path(name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    fclose(f);
    return p;
}

static const char *write_file(const char *name, const char *text) { return write_bytes(name, text, strlen(text)); }

static gf_lexicon *load(const char *name, const char *text, bool strip, int alternates) {
    gf_lexicon_opts o;
    gf_lexicon_opts_default(&o);
    o.strip_stress = strip;
    o.alternates = alternates;
    gf_lexicon *lex = gf_lexicon_load(write_file(name, text), &o);
    if (!lex) fail_msg("%s: %s", name, gf_last_error());
    return lex;
}

static void expect_fail_opts(const char *name, const char *bytes, size_t n, const gf_lexicon_opts *o, const char *want) {
    gf_lexicon *lex = gf_lexicon_load(write_bytes(name, bytes, n), o);
    if (lex) {
        gf_lexicon_free(lex);
        fail_msg("%s: read, expected an error with \"%s\"", name, want);
    }
    if (!strstr(gf_last_error(), want)) fail_msg("%s: error \"%s\" does not contain \"%s\"", name, gf_last_error(), want);
}

static void expect_fail(const char *name, const char *text, const char *want) {
    expect_fail_opts(name, text, strlen(text), NULL, want);
}

/* Entry i: its word, phonemes as text and part of speech ("" none). */
static void check_entry(const gf_lexicon *lex, int64_t i, const char *word, const char *pron, const char *pos) {
    char buf[512];
    assert_true(i < lex->n);
    assert_string_equal(gf_lexicon_word(lex, i), word);
    gf_lexicon_pron_text(lex, i, buf, sizeof buf);
    assert_string_equal(buf, pron);
    assert_string_equal(lex->entry[i].pos < 0 ? "" : lex->pos_name[lex->entry[i].pos], pos);
    assert_int_equal(lex->entry[i].n_graphemes, strlen(word)); /* the words here are ASCII */
    for (int32_t k = 0; k < lex->entry[i].n_graphemes; k++)
        assert_int_equal(lex->grapheme_name[gf_lexicon_graphemes(lex, i)[k]][0], word[k]);
    assert_int_equal(lex->entry[i].split, gf_lexicon_split_of(word, strlen(word)));
}

/* Names sorted, so ids follow from the set of names alone. */
static void check_sorted(char (*names)[GF_LEXICON_NAME], int32_t n) {
    for (int32_t k = 1; k < n; k++)
        if (strcmp(names[k - 1], names[k]) >= 0) fail_msg("inventory not sorted: \"%s\" before \"%s\"", names[k - 1], names[k]);
}

static const char *const FESTIVAL =
    "MNCL\n"
    "; a comment\n"
    "(\"a\" dt (((ax) 0)))\n"
    "(\"a\" n (((ey) 1)))\n"
    "(\"abandon\" nil (((ax) 0) ((b ae n) 1) ((d ax n) 0)))\n"
    "\n"
    "(\"lead\" n (((l eh d) 1)))\n"
    "(\"lead\" v (((l iy d) 1)))\n"
    "(\"lead\" v_p (((l eh d) 1)))   ; the noun's again\n"
    "(\"AWOL\" n (((ey) 1) ((w ao l) 0)))\n"
    "( \"zwolinski\" nil (((z) 0) ((v ax) 0) ((l ih n) 1) ((s k iy) 0)))\r\n"
    "(\"ability\" nil (((ax) 0) ((b ih) 1) ((l ax) 0) ((t iy) 0)))";

/* Festival's format: a syllable's stress on its vowels, none on a syllable without one; the first pronunciation
 * of a word kept, alternates counted (lead v_p is lead n again: a duplicate); parts of speech, nil as none; a
 * capitalised word lower-cased; CRLF, blank and comment lines, a ; comment after an entry, a last line without a
 * newline. */
static void test_festival(void **state) {
    (void)state;
    gf_lexicon *lex = load("f.out", FESTIVAL, false, GF_LEXICON_FIRST);
    assert_string_equal(lex->format, "festival");
    assert_int_equal(lex->n, 6);
    check_entry(lex, 0, "a", "ax0", "dt");
    check_entry(lex, 1, "abandon", "ax0 b ae1 n d ax0 n", "");
    check_entry(lex, 2, "lead", "l eh1 d", "n");
    check_entry(lex, 3, "awol", "ey1 w ao0 l", "n");
    check_entry(lex, 4, "zwolinski", "z v ax0 l ih1 n s k iy0", "");
    check_entry(lex, 5, "ability", "ax0 b ih1 l ax0 t iy0", "");
    assert_int_equal(lex->total.entries, 9);
    assert_int_equal(lex->total.words, 6);
    assert_int_equal(lex->total.alternates, 3); /* a n, lead v, lead v_p */
    assert_int_equal(lex->total.duplicates, 1);
    assert_int_equal(lex->total.skipped, 0);
    assert_int_equal(lex->n_pos, 2); /* dt, n: the kept entries' */
    assert_string_equal(lex->pos_name[0], "dt");
    assert_int_equal(lex->stress_lost, 0);
    assert_int_equal(lex->split[GF_VALID].words, 1); /* zwolinski */
    assert_int_equal(lex->split[GF_TEST].words, 1);  /* ability */
    assert_int_equal(lex->split[GF_TRAIN].words, 4);
    assert_int_equal(lex->total.phonemes, 1 + 7 + 3 + 4 + 9 + 7);
    check_sorted(lex->phoneme_name, lex->n_phonemes);
    check_sorted(lex->grapheme_name, lex->n_graphemes);
    for (int64_t i = 0; i < lex->n; i++) {
        assert_int_equal(lex->entry[i].first, i);
        assert_int_equal(lex->entry[i].next, -1);
        assert_int_equal(lex->entry[i].alt, 0);
    }
    assert_int_equal(lex->entry[2].line, 7);
    gf_lexicon_free(lex);
}

/* Stress stripped; every pronunciation kept (GF_LEXICON_ALL), chained by first and next, but a duplicate. */
static void test_festival_options(void **state) {
    (void)state;
    gf_lexicon *lex = load("g.out", FESTIVAL, true, GF_LEXICON_ALL);
    assert_int_equal(lex->n, 8);
    check_entry(lex, 0, "a", "ax", "dt");
    check_entry(lex, 1, "a", "ey", "n");
    check_entry(lex, 2, "abandon", "ax b ae n d ax n", "");
    check_entry(lex, 4, "lead", "l iy d", "v");
    assert_int_equal(lex->entry[0].next, 1);
    assert_int_equal(lex->entry[1].first, 0);
    assert_int_equal(lex->entry[1].alt, 1);
    assert_int_equal(lex->entry[3].next, 4);
    assert_int_equal(lex->entry[4].next, -1);
    assert_int_equal(lex->total.alternates, 3);
    assert_int_equal(lex->total.duplicates, 1);
    assert_int_equal(lex->total.kept, 8);
    assert_int_equal(lex->total.words, 6);
    assert_int_equal(lex->n_pos, 3);
    for (int32_t k = 0; k < lex->n_phonemes; k++) assert_null(strpbrk(lex->phoneme_name[k], "012"));
    char buf[8];
    assert_int_equal(gf_lexicon_pron_text(lex, 2, buf, sizeof buf), strlen("ax b ae n d ax n")); /* cut, measured */
    assert_string_equal(buf, "ax b ae");
    gf_lexicon_free(lex);
    gf_lexicon_opts o = {.alternates = 7};
    expect_fail_opts("h.out", FESTIVAL, strlen(FESTIVAL), &o, "alternates is 7; expected GF_LEXICON_FIRST (0) or GF_LEXICON_ALL (1)");
}

/* cmu_schwa: Festival's ax read as ah (CMUdict's AH0), with stress kept (ah0) and stripped (ah), where it meets the
 * stressed ah of the same word; no other name changes. */
static void test_festival_schwa(void **state) {
    (void)state;
    static const char *const TEXT = "(\"abandon\" nil (((ax) 0) ((b ae n) 1) ((d ax n) 0)))\n"
                                    "(\"above\" nil (((ax) 0) ((b ah v) 1)))\n"
                                    "(\"taxi\" nil (((t ae k) 1) ((s iy) 0)))\n";
    gf_lexicon_opts o;
    gf_lexicon_opts_default(&o);
    assert_false(o.cmu_schwa);
    o.cmu_schwa = true;
    gf_lexicon *lex = gf_lexicon_load(write_file("s.out", TEXT), &o);
    if (!lex) fail_msg("%s", gf_last_error());
    check_entry(lex, 0, "abandon", "ah0 b ae1 n d ah0 n", "");
    check_entry(lex, 1, "above", "ah0 b ah1 v", "");
    check_entry(lex, 2, "taxi", "t ae1 k s iy0", "");
    for (int32_t k = 0; k < lex->n_phonemes; k++) assert_null(strstr(lex->phoneme_name[k], "ax"));
    gf_lexicon_free(lex);
    o.strip_stress = true;
    lex = gf_lexicon_load(write_file("s.out", TEXT), &o);
    if (!lex) fail_msg("%s", gf_last_error());
    check_entry(lex, 1, "above", "ah b ah v", "");
    assert_int_equal(lex->n_phonemes, 10); /* ae ah b d iy k n s t v (and ax without cmu_schwa) */
    gf_lexicon_free(lex);
}

static const char *const CMUDICT =
    ";;; # CMUdict  --  Major Version: 0.07\n"
    ";;;\n"
    "!EXCLAMATION-POINT  EH2 K S K L AH0 M EY1 SH AH0 N P OY2 N T\n"
    "'BOUT  B AW1 T\n"
    "A  AH0\n"
    "A(1)  EY1\n"
    "A.  EY1\n"
    "ABUSE  AH0 B Y UW1 S\n"
    "ABUSE(2)  AH0 B Y UW1 Z\n"
    ";SEMI-COLON  S EH1 M IY0 K OW1 L AH0 N\n"
    "d'artagnan D AH0 T AE1 NG Y AH0 N # foreign french\n"
    "live\tL IH1 V \n"
    "live(2)\tL AY1 V\n";

/* The plain CMUdict: ;;; comments (;SEMI-COLON is a word), WORD(N) an alternate of WORD, a # comment after the
 * phonemes, tabs, lower-case words (cmudict.dict); words with characters outside a-z and ' skipped and counted,
 * or kept with keep_symbols. */
static void test_cmudict(void **state) {
    (void)state;
    gf_lexicon *lex = load("c.dict", CMUDICT, false, GF_LEXICON_FIRST);
    assert_string_equal(lex->format, "cmudict");
    assert_int_equal(lex->n, 5);
    check_entry(lex, 0, "'bout", "b aw1 t", "");
    check_entry(lex, 1, "a", "ah0", "");
    check_entry(lex, 2, "abuse", "ah0 b y uw1 s", "");
    check_entry(lex, 3, "d'artagnan", "d ah0 t ae1 ng y ah0 n", "");
    check_entry(lex, 4, "live", "l ih1 v", "");
    assert_int_equal(lex->total.entries, 11);
    assert_int_equal(lex->total.skipped, 3);
    assert_int_equal(lex->total.alternates, 3);
    assert_int_equal(lex->total.duplicates, 0);
    assert_int_equal(lex->n_pos, 0);
    assert_int_equal(lex->n_graphemes, 15); /* ' a b d e g i l n o r s t u v */
    gf_lexicon_free(lex);
    lex = load("d.dict", CMUDICT, true, GF_LEXICON_ALL);
    assert_int_equal(lex->n, 8);
    check_entry(lex, 3, "abuse", "ah b y uw s", "");
    check_entry(lex, 4, "abuse", "ah b y uw z", "");
    check_entry(lex, 7, "live", "l ay v", "");
    gf_lexicon_free(lex);
    gf_lexicon_opts o = {.keep_symbols = true};
    lex = gf_lexicon_load(write_file("e.dict", CMUDICT), &o);
    assert_non_null(lex);
    assert_int_equal(lex->n, 8);
    assert_int_equal(lex->total.skipped, 0);
    check_entry(lex, 0, "!exclamation-point", "eh2 k s k l ah0 m ey1 sh ah0 n p oy2 n t", "");
    check_entry(lex, 3, "a.", "ey1", "");
    check_entry(lex, 5, ";semi-colon", "s eh1 m iy0 k ow1 l ah0 n", "");
    gf_lexicon_free(lex);
}

/* The split is a pure function of the word (these values pin the hash: scripts/make_cmudict_subset.py computes
 * the same); the inventories and each word's ids do not depend on the order of the file or on its other words. */
static void test_split_and_order(void **state) {
    (void)state;
    assert_true(gf_lexicon_hash("abandon", 7, 0) == 0x812a55e82a2e3a82ull);
    assert_true(gf_lexicon_hash("abandon", 7, 1) == 0xf5153608e11a7971ull);
    assert_true(gf_lexicon_hash("d'artagnan", 10, 0) == 0xc58c10f47bcbf062ull);
    assert_int_equal(gf_lexicon_split_of("abandon", 7), GF_TRAIN); /* 34 */
    assert_int_equal(gf_lexicon_split_of("zwolinski", 9), GF_VALID); /* 93 */
    assert_int_equal(gf_lexicon_split_of("ability", 7), GF_TEST);    /* 95 or more */
    gf_lexicon *a = load("o1.dict", "ZWOLINSKI  Z W OW0 L IH1 N S K IY0\nABILITY  AH0 B IH1 L AH0 T IY0\n"
                                    "ABANDON  AH0 B AE1 N D AH0 N\n", false, GF_LEXICON_FIRST);
    gf_lexicon *b = load("o2.dict", "ABANDON  AH0 B AE1 N D AH0 N\nQUARTZ  K W AO1 R T S\n"
                                    "ABILITY  AH0 B IH1 L AH0 T IY0\nZWOLINSKI  Z W OW0 L IH1 N S K IY0\n", false,
                         GF_LEXICON_FIRST);
    for (int64_t i = 0; i < a->n; i++) {
        int64_t j = 0;
        while (j < b->n && strcmp(gf_lexicon_word(a, i), gf_lexicon_word(b, j))) j++;
        assert_true(j < b->n);
        assert_int_equal(a->entry[i].split, b->entry[j].split);
        assert_int_equal(a->entry[i].n_phonemes, b->entry[j].n_phonemes);
        for (int32_t k = 0; k < a->entry[i].n_phonemes; k++) /* b has more names (quartz's): compare them */
            assert_string_equal(a->phoneme_name[gf_lexicon_phonemes(a, i)[k]], b->phoneme_name[gf_lexicon_phonemes(b, j)[k]]);
    }
    gf_lexicon_free(b);
    b = load("o3.dict", "ABILITY  AH0 B IH1 L AH0 T IY0\nABANDON  AH0 B AE1 N D AH0 N\n"
                        "ZWOLINSKI  Z W OW0 L IH1 N S K IY0\n", false, GF_LEXICON_FIRST);
    assert_int_equal(a->n_phonemes, b->n_phonemes); /* the same names in another order: the same ids */
    for (int32_t k = 0; k < a->n_phonemes; k++) assert_string_equal(a->phoneme_name[k], b->phoneme_name[k]);
    assert_memory_equal(gf_lexicon_phonemes(a, 2), gf_lexicon_phonemes(b, 1), 7 * sizeof(int32_t)); /* abandon */
    assert_int_equal(a->split[GF_TRAIN].words, 1);
    assert_int_equal(a->split[GF_VALID].words, 1);
    assert_int_equal(a->split[GF_TEST].words, 1);
    gf_lexicon_free(a);
    gf_lexicon_free(b);
}

/* Every malformed line of each format is an error naming the file, its line, what was expected there and the
 * form of an entry, with a HINT. */
static void test_malformed(void **state) {
    (void)state;
    const char *head = "MNCL\n(\"a\" dt (((ax) 0)))\n";
    static const char *const festival[][2] = {
        {"(\"b\" nil (((b iy) 1))\n", "expected the ) that closes the entry at byte 22, found the end of the line"},
        {"(\"abc nil (((ax) 0)))\n", "expected the double quote that ends the word"},
        {"(\"ab\" nil (((ae b))))\n", "expected the syllable's stress digit 0, 1 or 2 at byte 19, found \")))\""},
        {"(\"ab\" nil (((ae b) 3)))\n", "expected the syllable's stress digit 0, 1 or 2"},
        {"(\"ab\" nil ((() 0)))\n", "expected a phoneme in the syllable"},
        {"(\"ab\" nil ())\n", "expected a syllable ((phonemes) stress)"},
        {"(\"ab\" nil (((ae b) 1))) x\n", "expected the end of the line (or a ; comment)"},
        {"(\"ab\" (n) (((ae b) 1)))\n", "expected the part of speech (nil for none)"},
        {"(\"ab\" nil (((ae b!) 1)))\n", "expected a phoneme (letters, digits, _) or the syllable's )"},
        {"AB  AE1 B\n", "expected the ( that opens the entry at byte 1, found \"AB  AE1 B\""},
        {"MNCL\n", "expected the ( that opens the entry"},
    };
    char text[256], want[256];
    for (size_t k = 0; k < sizeof festival / sizeof *festival; k++) {
        snprintf(text, sizeof text, "%s%s(\"c\" nil (((s iy) 1)))\n", head, festival[k][0]);
        snprintf(want, sizeof want, "bad.out:3: %s", festival[k][1]);
        expect_fail("bad.out", text, want);
        expect_fail("bad.out", text, "an entry is (\"word\" pos (((phonemes) stress) ...))\nHINT: a Festival lexicon");
    }
#define PHONEME "expected a phoneme (1 to 4 capital letters, then a vowel's stress digit 0, 1 or 2: AH0, B) or the end of " \
                "the line (or a # comment)"
    static const char *const cmudict[][2] = {
        {"ABC\n", "expected the word's phonemes after it (AH0 B AE1 N ...) at byte 4, found the end of the line"},
        {"ABC  AH3\n", PHONEME " at byte 6, found \"AH3\""},
        {"ABC  ah0\n", PHONEME " at byte 6, found \"ah0\""},
        {"ABC  AHHHHH0\n", PHONEME " at byte 6"},
        {"ABC  AH0 B#C\n", PHONEME " at byte 10, found \"B#C\""},
        {"(\"abc\" nil (((ae b) 1)))\n", PHONEME " at byte 8, found \"nil"},
    };
    for (size_t k = 0; k < sizeof cmudict / sizeof *cmudict; k++) {
        snprintf(text, sizeof text, ";;; comment\nA  AH0\n;;; comment\n%sB  B IY1\n", cmudict[k][0]);
        snprintf(want, sizeof want, "bad.dict:4: %s", cmudict[k][1]);
        expect_fail("bad.dict", text, want);
        expect_fail("bad.dict", text, "an entry is WORD  PHONEME PHONEME ...\nHINT: a CMUdict file");
    }
}

/* Files that are no lexicon, or empty, or hostile: an error each (never a crash, never gigabytes). */
static void test_not_a_lexicon(void **state) {
    (void)state;
    expect_fail("empty.dict", "", "empty.dict: the file is empty (or holds only blank and comment lines); expected a "
                "pronunciation lexicon");
    expect_fail("comments.dict", ";;; only\n\n;;; comments\n", "comments.dict: the file is empty");
    expect_fail("mncl.out", "MNCL\n; nothing else\n", "mncl.out: a festival lexicon without an entry");
    expect_fail("text.txt", "\n\nThe cat sat on the mat.\n", "text.txt:3: not a pronunciation lexicon: the line \"The "
                "cat sat on the mat.\" is an entry of neither form");
    expect_fail("scheme.scm", "(define (f x) x)\n", "scheme.scm:1: not a pronunciation lexicon");
    expect_fail("symbols.dict", "A.  EY1\n3-D  TH R IY1 D IY2\n", "symbols.dict: none of its 2 entries is kept");
    gf_lexicon_opts o;
    gf_lexicon_opts_default(&o);
    assert_null(gf_lexicon_load(tl_tmp_path("missing.dict"), &o));
    assert_non_null(strstr(gf_last_error(), "missing.dict"));
    assert_null(gf_lexicon_load(tl_tmp_path(""), &o)); /* a directory */
    assert_non_null(strstr(gf_last_error(), "directory"));
}

static void test_hostile(void **state) {
    (void)state;
    char *big = malloc(8192);
    assert_non_null(big);
    memset(big, 'A', 8191);
    big[8191] = '\0';
    memcpy(big, "A  AH0\nB", 8);
    expect_fail("long.dict", big, "long.dict:2: the line is longer than 4096 bytes");
    free(big);
    expect_fail("trunc.out", "MNCL\n(\"a\" dt (((ax) 0)))\n(\"b\" nil (((b i", "trunc.out:3: expected a phoneme (letters, "
                "digits, _) or the syllable's ) at byte 16, found the end of the line");
    expect_fail_opts("nul.dict", "A  AH0\nB\0  B IY1\n", 17, NULL, "nul.dict:2: a NUL byte at byte 2 of the line");
    expect_fail_opts("nul.out", "MNCL\n\0\0\0\0", 9, NULL, "nul.out:2: a NUL byte");
    expect_fail("latin1.dict", "A  AH0\nCAF\xc9  K AE0 F EY1\n", "latin1.dict:2: invalid UTF-8 in the word at byte 4 "
                "(0xC9); expected UTF-8 text\nHINT: convert the file");
    expect_fail("utf8.out", "(\"a\\\xff\" nil (((ax) 0)))\n", "utf8.out:1: invalid UTF-8 in the word at byte 2 (0xFF)");
    expect_fail("ctrl.out", "(\"a\x01\" nil (((ax) 0)))\n", "ctrl.out:1: a control character (U+0001) in the word");
    char text[4096];
    int n = snprintf(text, sizeof text, "(\"");
    for (int k = 0; k < 200; k++) text[n++] = 'a';
    snprintf(text + n, sizeof text - (size_t)n, "\" nil (((ax) 0)))\n");
    expect_fail("word.out", text, "word.out:1: the word has more than 128 characters");
    n = snprintf(text, sizeof text, "A ");
    for (int k = 0; k < 200; k++) n += snprintf(text + n, sizeof text - (size_t)n, " B");
    expect_fail("phon.dict", text, "phon.dict:1: more than 128 phonemes in the pronunciation");
    char *alts = malloc(70 * 16 + 1), *p = alts;
    for (int k = 0; k < 70; k++) p += sprintf(p, "A(%d)  AH%d\n", k, k % 3);
    expect_fail("alts.dict", alts, "alts.dict:65: more than 64 pronunciations of \"a\"");
    free(alts);
}

/* Each inventory and the number of entries is bounded: an error at the line past the bound. */
static void test_limits(void **state) {
    (void)state;
    char *text = malloc(1 << 16), *p = text;
    for (int line = 0; line < 3; line++) { /* 300 distinct phoneme names, 100 a line */
        p += sprintf(p, "W%c ", 'A' + line);
        for (int k = 0; k < 100; k++) p += sprintf(p, " %c%c%c", 'A' + line, 'A' + k / 26, 'A' + k % 26);
        p += sprintf(p, "\n");
    }
    expect_fail("inv.dict", text, "inv.dict:3: more than 256 distinct phonemes");
    p = text; /* 1,100 distinct characters, kept with keep_symbols */
    for (int line = 0; line < 11; line++) {
        for (int k = 0; k < 100; k++) { /* U+4E00 + 100 line + k, three bytes of UTF-8 */
            const unsigned c = 0x4E00u + 100u * (unsigned)line + (unsigned)k;
            p += sprintf(p, "%c%c%c", 0xE0 | (c >> 12), 0x80 | ((c >> 6) & 0x3F), 0x80 | (c & 0x3F));
        }
        p += sprintf(p, "  AH0\n");
    }
    gf_lexicon_opts o = {.keep_symbols = true};
    expect_fail_opts("graph.dict", text, strlen(text), &o, "graph.dict:11: more than 1024 distinct graphemes");
    gf_lexicon_opts_default(&o);
    o.max_entries = 3;
    const char *four = "A  AH0\nB  B IY1\nC  S IY1\nD  D IY1\n";
    expect_fail_opts("many.dict", four, strlen(four), &o, "many.dict:4: more than 3 entries");
    p = text;
    for (int k = 0; k < 70; k++) p += sprintf(p, "(\"w%c%c\" p%d (((ax) 0)))\n", 'a' + k / 26, 'a' + k % 26, k);
    expect_fail("pos.out", text, "pos.out:65: more than 64 distinct parts of speech");
    free(text);
}

/* xz: the shipped sample is one; a truncated copy is an error naming the file. */
static void test_xz(void **state) {
    (void)state;
    FILE *f = fopen(SAMPLE, "rb");
    assert_non_null(f);
    char *buf = malloc(200000);
    const size_t n = fread(buf, 1, 200000, f);
    fclose(f);
    assert_true(n > 1000 && n < 200000);
    expect_fail_opts("cut.out.xz", buf, n / 2, NULL, "truncated xz data");
    free(buf);
}

static void check_counts(const gf_lexicon_counts *c, int64_t entries, int64_t words, int64_t alternates, int64_t duplicates) {
    assert_int_equal(c->entries, entries);
    assert_int_equal(c->words, words);
    assert_int_equal(c->alternates, alternates);
    assert_int_equal(c->duplicates, duplicates);
    assert_int_equal(c->skipped, 0);
}

/* The proportions of the splits, within tol percentage points of 90 / 5 / 5, and every entry in its word's split. */
static void check_proportions(const gf_lexicon *lex, double tol) {
    const double w = (double)lex->total.words;
    assert_true(lex->split[GF_TRAIN].words + lex->split[GF_VALID].words + lex->split[GF_TEST].words == lex->total.words);
    assert_true(fabs(100.0 * (double)lex->split[GF_TRAIN].words / w - 90.0) < tol);
    assert_true(fabs(100.0 * (double)lex->split[GF_VALID].words / w - 5.0) < tol);
    assert_true(fabs(100.0 * (double)lex->split[GF_TEST].words / w - 5.0) < tol);
    for (int64_t i = 0; i < lex->n; i++) {
        const char *word = gf_lexicon_word(lex, i);
        assert_int_equal(lex->entry[i].split, gf_lexicon_split_of(word, strlen(word)));
    }
}

/* path read with every alternate kept (o->alternates GF_LEXICON_ALL): the counts, the entries kept (all but the
 * duplicates) and the phonemes; it returns the lexicon for more checks (the caller frees it). */
static gf_lexicon *check_every_entry(const char *path, const gf_lexicon_opts *o, int64_t entries, int64_t words,
                                     int64_t alternates, int64_t duplicates, int32_t phonemes) {
    gf_lexicon *lex = gf_lexicon_load(path, o);
    if (!lex) fail_msg("%s: %s", path, gf_last_error());
    check_counts(&lex->total, entries, words, alternates, duplicates);
    assert_int_equal(lex->n, entries - duplicates);
    assert_int_equal(lex->n_phonemes, phonemes);
    return lex;
}

/* The shipped sample has the counts data/README.md gives (a changed file fails here), and each of its words is
 * one scripts/make_cmudict_subset.py samples (hash with seed 1, % 100 < 20). */
static void test_shipped_sample(void **state) {
    (void)state;
    gf_lexicon *lex = gf_lexicon_load(SAMPLE, NULL);
    if (!lex) fail_msg("%s", gf_last_error());
    assert_string_equal(lex->format, "festival");
    check_counts(&lex->total, 21000, 20955, 45, 3);
    assert_int_equal(lex->split[GF_TRAIN].words, 18925);
    assert_int_equal(lex->split[GF_VALID].words, 1011);
    assert_int_equal(lex->split[GF_TEST].words, 1019);
    assert_int_equal(lex->n, 20955);
    assert_int_equal(lex->n_phonemes, 55);
    assert_int_equal(lex->n_graphemes, 26);
    check_proportions(lex, 0.5);
    for (int64_t i = 0; i < lex->n; i++) {
        const char *word = gf_lexicon_word(lex, i);
        assert_true(gf_lexicon_hash(word, strlen(word), 1) % 100 < 20);
    }
    gf_lexicon_free(lex);
    gf_lexicon_opts o = {.strip_stress = true, .alternates = GF_LEXICON_ALL};
    gf_lexicon_free(check_every_entry(SAMPLE, &o, 21000, 20955, 45, 9, 40));
    o.cmu_schwa = true; /* ax as ah: CMUdict's 39 phonemes; an alternate that differed by ax alone is a duplicate now */
    gf_lexicon_free(check_every_entry(SAMPLE, &o, 21000, 20955, 45, 10, 39));
}

/* Debian's full cmudict-0.4.out (festlex-cmu), when it is installed: the counts data/README.md gives. */
static void test_full_file(void **state) {
    (void)state;
    FILE *f = fopen(FULL, "rb");
    if (!f) {
        print_message("test_lexicon: %s is not there (apt-get install festlex-cmu): its counts are not checked\n", FULL);
        skip();
    }
    fclose(f);
    gf_lexicon *lex = gf_lexicon_load(FULL, NULL);
    if (!lex) fail_msg("%s", gf_last_error());
    check_counts(&lex->total, 105901, 105664, 237, 7);
    assert_int_equal(lex->split[GF_TRAIN].words, 95047);
    assert_int_equal(lex->split[GF_VALID].words, 5281);
    assert_int_equal(lex->split[GF_TEST].words, 5336);
    assert_int_equal(lex->n_phonemes, 55);
    assert_int_equal(lex->n_graphemes, 26);
    assert_int_equal(lex->stress_lost, 0);
    check_proportions(lex, 0.1);
    gf_lexicon_free(lex);
    gf_lexicon_opts o = {.strip_stress = true, .alternates = GF_LEXICON_ALL};
    lex = check_every_entry(FULL, &o, 105901, 105664, 237, 69, 40);
    assert_int_equal(lex->n_pos, 7); /* b dt j n v vl y: v_p's one entry is a duplicate */
    gf_lexicon_free(lex);
    o.cmu_schwa = true;
    gf_lexicon_free(check_every_entry(FULL, &o, 105901, 105664, 237, 83, 39));
    o.strip_stress = false; /* ax0 joins cmudict-0.4's six ah0 */
    lex = gf_lexicon_load(FULL, &o);
    assert_non_null(lex);
    assert_int_equal(lex->n_phonemes, 54);
    gf_lexicon_free(lex);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_festival),      cmocka_unit_test(test_festival_options),
        cmocka_unit_test(test_festival_schwa),
        cmocka_unit_test(test_cmudict),       cmocka_unit_test(test_split_and_order),
        cmocka_unit_test(test_malformed),     cmocka_unit_test(test_not_a_lexicon),
        cmocka_unit_test(test_hostile),       cmocka_unit_test(test_limits),
        cmocka_unit_test(test_xz),            cmocka_unit_test(test_shipped_sample),
        cmocka_unit_test(test_full_file),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    pool_release();
    return rc;
}
