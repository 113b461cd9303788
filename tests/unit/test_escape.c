/* Escaping for each output format (src/io/escape.c): each function on the names that broke the formats
 * (a script tag, a tab, a newline, bytes that are not UTF-8), on cut buffers and measuring, and on random
 * bytes: whatever the input, the output is valid UTF-8 and holds none of the format's structure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grassflow_plugin.h" /* the escaping helpers */
#include "testlib.h"

#include "base/utf8.h"

typedef size_t (*esc_fn)(char *, size_t, const char *);

static size_t esc_term0(char *dst, size_t cap, const char *s) { return gf_escape_term(dst, cap, s, 0); }

/* esc(s) must be want; its returned length too; and GF_ESCAPE_CAP(strlen(s)) bytes must hold it. */
static void check(esc_fn esc, const char *s, const char *want) {
    char buf[512];
    const size_t n = esc(buf, sizeof buf, s);
    assert_string_equal(buf, want);
    assert_int_equal(n, strlen(want));
    assert_true(n < GF_ESCAPE_CAP(strlen(s)));
}

static bool valid_utf8(const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    size_t left = strlen(s);
    while (left) {
        uint32_t cp;
        const int n = gf_utf8_decode(p, left, &cp);
        if (!n) return false;
        p += n, left -= (size_t)n;
    }
    return true;
}

/* Whether the character at p is escaped: an odd number of backslashes before it. */
static bool escaped(const char *start, const char *p) {
    int n = 0;
    while (p > start && p[-1] == '\\') p--, n++;
    return n % 2 == 1;
}

static const char SCRIPT[] = "<script>alert(1)</script>.json", TABS[] = "a\tb\nc\rd|e", BAD[] = "x\xffy\xc0\xaf\xed\xa0\x80z\xe2\x82";

static void test_json(void **state) {
    (void)state;
    check(gf_escape_json, SCRIPT, SCRIPT); /* nothing to escape in JSON */
    check(gf_escape_json, "a\"b\\c\n\x01\x7f", "a\\\"b\\\\c\\u000a\\u0001\x7f");
    check(gf_escape_json, TABS, "a\\u0009b\\u000ac\\u000dd|e");
    /* each byte that is not UTF-8 (a lone 0xff, an overlong '/', a surrogate, a cut euro sign) is U+FFFD */
    check(gf_escape_json, BAD, "x\xEF\xBF\xBDy\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDz\xEF\xBF\xBD\xEF\xBF\xBD");
    check(gf_escape_json, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    char path[700];
    snprintf(path, sizeof path, "%s", tl_tmp_path("esc.json"));
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    gf_json_put_str(f, "q\"\xff");
    fclose(f);
    char buf[64] = "";
    f = fopen(path, "r");
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    assert_string_equal(buf, "\"q\\\"\xEF\xBF\xBD\"");
}

static void test_json_utf8(void **state) {
    (void)state;
    char *ok = strdup("{\"a\": \"caf\xc3\xa9\"}");
    assert_ptr_equal(gf_json_utf8(ok), ok); /* valid: the same text */
    free(ok);
    char *fixed = gf_json_utf8(strdup("{\"x\xffy\": [\"\xc0\xaf\", 1]}"));
    assert_string_equal(fixed, "{\"x\xEF\xBF\xBDy\": [\"\xEF\xBF\xBD\xEF\xBF\xBD\", 1]}");
    free(fixed);
    assert_null(gf_json_utf8(NULL));
}

static void test_xml(void **state) {
    (void)state;
    check(gf_escape_xml, SCRIPT, "&lt;script&gt;alert(1)&lt;/script&gt;.json");
    check(gf_escape_xml, "a&b\"c'd", "a&amp;b&quot;c&#39;d");
    check(gf_escape_xml, TABS, "a&#9;b&#10;c&#13;d|e");
    check(gf_escape_xml, "\x01\x1b[31m\xef\xbf\xbe", "\xEF\xBF\xBD\xEF\xBF\xBD[31m\xEF\xBF\xBD"); /* not XML 1.0 characters */
    check(gf_escape_xml, "x\xffy", "x\xEF\xBF\xBDy");
}

static void test_md(void **state) {
    (void)state;
    check(gf_escape_md, SCRIPT, "&lt;script&gt;alert(1)&lt;/script&gt;.json");
    check(gf_escape_md, TABS, "a\\tb\\nc\\rd\\|e");
    check(gf_escape_md, "a\\b*c_d`e[f](g)~h&i", "a\\\\b\\*c\\_d\\`e\\[f\\](g)\\~h&amp;i");
    check(gf_escape_md, "grassmann-tiny configs/x.json", "grassmann-tiny configs/x.json"); /* the usual names as they are */
    check(gf_escape_md, "x\xffy\x1b", "x\\xffy\\x1b");
}

static void test_tsv(void **state) {
    (void)state;
    check(gf_escape_tsv, SCRIPT, SCRIPT);
    check(gf_escape_tsv, TABS, "a\\tb\\nc\\rd|e");
    check(gf_escape_tsv, "c:\\dir\x01", "c:\\\\dir\\x01");
    check(gf_escape_tsv, BAD, "x\\xffy\\xc0\\xaf\\xed\\xa0\\x80z\\xe2\\x82");
}

static void test_term(void **state) {
    (void)state;
    check(esc_term0, SCRIPT, SCRIPT);
    check(esc_term0, TABS, "a\\tb\\nc\\rd|e");
    check(esc_term0, "\x1b[2J\xc2\x9b" "1m\xe2\x80\xaeok", "\\x1b[2J\\u009b1m\\u202eok"); /* ESC, C1 CSI, RLO */
    check(esc_term0, "x\xffy", "x\\xffy");
    char buf[64];
    assert_int_equal(gf_escape_term(buf, sizeof buf, "ab", 5), 5); /* padded to 5 columns */
    assert_string_equal(buf, "ab   ");
    gf_escape_term(buf, sizeof buf, "caf\xc3\xa9", 6); /* é: 2 bytes, 1 column */
    assert_string_equal(buf, "caf\xc3\xa9  ");
    gf_escape_term(buf, sizeof buf, "\xe6\xbc\xa2x", 4); /* a CJK ideograph: 2 columns */
    assert_string_equal(buf, "\xe6\xbc\xa2x ");
    gf_escape_term(buf, sizeof buf, "e\xcc\x81", 3); /* e + combining acute: 1 column */
    assert_string_equal(buf, "e\xcc\x81  ");
    gf_escape_term(buf, sizeof buf, "a\tb", 5); /* "a\tb": 4 columns */
    assert_string_equal(buf, "a\\tb ");
    gf_escape_term(buf, sizeof buf, "longer than five", 5); /* never cut to the width */
    assert_string_equal(buf, "longer than five");
}

/* A buffer too small: cut before the escape that does not fit, never inside it; NULL measures. */
static void test_cut(void **state) {
    (void)state;
    char buf[8];
    memset(buf, 'Z', sizeof buf);
    assert_int_equal(gf_escape_xml(buf, 8, "ab<cd"), 8); /* "ab&lt;cd": the entity does not fit in 7 */
    assert_string_equal(buf, "ab&lt;c");
    assert_int_equal(gf_escape_xml(buf, 5, "ab<cd"), 8);
    assert_string_equal(buf, "ab");
    assert_int_equal(gf_escape_json(buf, 4, "\xc3\xa9\xc3\xa9"), 4); /* é é: the second does not fit in 3 */
    assert_string_equal(buf, "\xc3\xa9");
    assert_int_equal(gf_escape_md(NULL, 0, "a|b"), 4);
    assert_int_equal(gf_escape_term(NULL, 0, "a", 10), 10);
    assert_int_equal(gf_escape_tsv(buf, 1, "abc"), 3);
    assert_string_equal(buf, "");
}

/* Random bytes: every output is valid UTF-8 and holds nothing that ends a field, a row, a string or a tag. */
static void test_random_bytes(void **state) {
    (void)state;
    static const esc_fn fns[] = {gf_escape_json, gf_escape_xml, gf_escape_md, gf_escape_tsv, esc_term0};
    uint64_t x = 88172645463325252ull;
    char s[64], out[GF_ESCAPE_CAP(64)];
    for (int trial = 0; trial < 20000; trial++) {
        const int n = 1 + trial % 63;
        for (int i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            s[i] = trial % 3 ? (char)(1 + x % 255) : "\t\n\r|<&\"\\\xff\xc3\xa9\xe2\x80\xae\x1b"[x % 15];
        }
        s[n] = '\0';
        for (int k = 0; k < 5; k++) {
            const size_t len = fns[k](out, sizeof out, s);
            assert_int_equal(len, strlen(out)); /* GF_ESCAPE_CAP holds it: nothing cut */
            assert_true(valid_utf8(out));
            for (const char *p = out; *p; p++) {
                const unsigned char c = (unsigned char)*p;
                assert_true(c >= 0x20);                             /* no control: no new row, field or line */
                if (k >= 2) assert_true(c != 0x7f);                 /* (DEL is an XML and a JSON character) */
                if (k == 0 && c == '"') assert_true(escaped(out, p));
                if (k == 1) assert_true(c != '<' && c != '>' && c != '"' && c != '\'');
                if (k == 2 && (c == '|' || c == '<' || c == '>')) assert_true(c == '|' && escaped(out, p));
            }
        }
    }
}

/* A name in a message (gf_escape_name): as a terminal cell, with \ doubled; the whole message
 * (gf_escape_lines) keeps its lines, tabs and backslashes; gf_show_name's buffers used in turn. */
static void test_name(void **state) {
    (void)state;
    check(gf_escape_name, "runs/a b", "runs/a b");
    check(gf_escape_name, "r\x1b[31m\nZQ\xff", "r\\x1b[31m\\nZQ\\xff"); /* ESC, a newline, a byte not UTF-8 */
    check(gf_escape_name, "c:\\x1b\t\xe2\x80\xae", "c:\\\\x1b\\t\\u202e"); /* a backslash: the name reads back */
    check(gf_escape_name, "caf\xc3\xa9 \xe6\xbc\xa2", "caf\xc3\xa9 \xe6\xbc\xa2");
    check(gf_escape_lines, "cannot open a\\x1b\nHINT:\tb\x1b[2J\xff", "cannot open a\\x1b\nHINT:\tb\\x1b[2J\\xff");
    const char *shown[9];
    char names[9][8];
    for (int i = 0; i < 9; i++) snprintf(names[i], sizeof names[i], "n%d\x1b", i), shown[i] = gf_show_name(names[i]);
    for (int i = 1; i < 8; i++) { /* eight at once: the first is reused by the ninth */
        char want[16];
        snprintf(want, sizeof want, "n%d\\x1b", i);
        assert_string_equal(shown[i], want);
    }
    assert_string_equal(shown[0], "n8\\x1b");
    char *big = malloc(3001);
    memset(big, '\x01', 3000), big[3000] = '\0';
    const char *cut = gf_show_name(big); /* 12,000 bytes escaped: cut, never inside an escape, and said */
    assert_true(strlen(cut) < 1024 && strlen(cut) > 900);
    assert_string_equal(cut + strlen(cut) - 7, "\\x01...");
    free(big);
    assert_int_equal(gf_utf8_invalid_at("runs/caf\xc3\xa9"), -1);
    assert_int_equal(gf_utf8_invalid_at("run-\xff"), 4);
    assert_int_equal(gf_utf8_invalid_at("ab\xc3"), 2); /* a truncated sequence */
    assert_int_equal(gf_utf8_invalid_at(""), -1);
}

/* The escaped name read back: \\ \t \n \r \xNN \uXXXX undone. */
static size_t unescape_name(const char *s, char *out) {
    size_t k = 0;
    for (const char *p = s; *p;) {
        if (*p != '\\') { out[k++] = *p++; continue; }
        const char c = p[1];
        if (c == '\\' || c == 't' || c == 'n' || c == 'r') {
            out[k++] = c == '\\' ? '\\' : c == 't' ? '\t' : c == 'n' ? '\n' : '\r';
            p += 2;
        } else if (c == 'x') {
            out[k++] = (char)strtoul((char[]){p[2], p[3], 0}, NULL, 16);
            p += 4;
        } else {
            assert_int_equal(c, 'u');
            const unsigned long cp = strtoul((char[]){p[2], p[3], p[4], p[5], 0}, NULL, 16);
            if (cp < 0x800) out[k++] = (char)(0xC0 | cp >> 6), out[k++] = (char)(0x80 | (cp & 0x3F));
            else out[k++] = (char)(0xE0 | cp >> 12), out[k++] = (char)(0x80 | ((cp >> 6) & 0x3F)), out[k++] = (char)(0x80 | (cp & 0x3F));
            p += 6;
        }
    }
    out[k] = '\0';
    return k;
}

/* Random bytes: a name escaped is valid UTF-8 without a control byte, and reads back to the same bytes. */
static void test_name_round_trip(void **state) {
    (void)state;
    uint64_t x = 2463534242ull;
    char s[64], out[GF_ESCAPE_CAP(64)], back[64 * 4];
    for (int trial = 0; trial < 20000; trial++) {
        const int n = 1 + trial % 63;
        for (int i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            s[i] = trial % 3 ? (char)(1 + x % 255) : "\t\n\r\\x\xff\xc3\xa9\xe2\x80\xae\x1b\xc2\x9b"[x % 14];
        }
        s[n] = '\0';
        const size_t len = gf_escape_name(out, sizeof out, s);
        assert_int_equal(len, strlen(out));
        assert_true(valid_utf8(out));
        for (const char *p = out; *p; p++) assert_true((unsigned char)*p >= 0x20 && *p != 0x7f);
        assert_int_equal(unescape_name(out, back), (size_t)n);
        assert_memory_equal(back, s, (size_t)n);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json),   cmocka_unit_test(test_json_utf8), cmocka_unit_test(test_xml),
        cmocka_unit_test(test_md),     cmocka_unit_test(test_tsv),       cmocka_unit_test(test_term),
        cmocka_unit_test(test_cut),    cmocka_unit_test(test_random_bytes), cmocka_unit_test(test_name),
        cmocka_unit_test(test_name_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
