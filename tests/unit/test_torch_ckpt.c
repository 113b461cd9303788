/* PyTorch checkpoints read without Python (src/io/torch_ckpt.c, zip.c, pickle.c), against the files
 * tests/fixtures/torch/make.py wrote with torch 1.13: every tensor's name (prefixes stripped), dtype, shape and
 * values as expected.txt lists them (a transposed view, a slice at an offset, float16, bfloat16, int64, a 0-d
 * tensor), the checkpoint's numbers; and the hostile archives and pickles, each refused by name. */
#include "testlib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "io/pickle.h"
#include "io/torch_ckpt.h"

#define DIR "tests/fixtures/torch/"

/* Each line of expected.txt naming a tensor of c: the same dtype, shape and values, bit for bit. Returns how
 * many lines matched a tensor of c. */
static int match_expected(const gf_torch_ckpt *c) {
    FILE *f = fopen(DIR "expected.txt", "r");
    assert_non_null(f);
    char line[8192];
    int matched = 0;
    while (fgets(line, sizeof line, f)) {
        char name[256], dtype[32];
        int ndim, used;
        assert_int_equal(sscanf(line, "%255s %31s %d%n", name, dtype, &ndim, &used), 3);
        const gf_torch_tensor *t = gf_torch_find(c, name);
        if (!t) continue;
        matched++;
        assert_string_equal(gf_torch_dtype_name(t->dtype), dtype);
        assert_int_equal(t->ndim, ndim);
        const char *p = line + used;
        int64_t numel = 1;
        for (int k = 0; k < ndim; k++) {
            char *end;
            assert_int_equal(strtoll(p, &end, 10), t->shape[k]);
            numel *= t->shape[k], p = end;
        }
        assert_int_equal(t->numel, numel);
        float *v = malloc((size_t)numel * sizeof *v);
        assert_int_equal(gf_torch_to_f32(t, v), 0);
        for (int64_t i = 0; i < numel; i++) {
            char *end;
            const float want = strtof(p, &end);
            if (v[i] != want) fail_msg("%s[%lld]: %.9g, expected %.9g", name, (long long)i, (double)v[i], (double)want);
            p = end;
        }
        free(v);
    }
    fclose(f);
    return matched;
}

static void test_reproduction(void **state) {
    (void)state;
    gf_torch_ckpt c;
    if (gf_torch_load(DIR "reproduction.pt", &c)) fail_msg("%s", gf_last_error());
    assert_int_equal(c.n, 7);
    assert_int_equal(c.stripped, 7); /* every name had _orig_mod. */
    assert_int_equal(match_expected(&c), 7);
    assert_true(c.epoch == 3.0 && c.val_loss == 5.25 && c.val_ppl == 190.566268);
    assert_null(gf_torch_find(&c, "_orig_mod.ln_f.weight"));
    gf_torch_free(&c);
    if (gf_torch_load(DIR "plain.pt", &c)) fail_msg("%s", gf_last_error());
    assert_int_equal(c.n, 4);
    assert_int_equal(match_expected(&c), 4);
    assert_true(isnan(c.epoch));
    gf_torch_free(&c);
}

static void test_hostile(void **state) {
    (void)state;
    static const char *const CASES[][2] = {
        {"stride-past-end.pt", "reaches past the end of its storage"},
        {"huge-shape.pt", "more elements than its storage"},
        {"short-storage.pt", "storage claims 600 elements of float32"},
        {"offset-outside.pt", "starts at 6, outside its storage of 6"},
        {"missing-storage.pt", "storage archive/data/1 is missing"},
        {"other-storage.pt", "the global torch.ComplexFloatStorage"},
        {"os-system.pt", "the global os.system"},
        {"zip-bomb.pt", "past the 67108864 this reader accepts"},
        {"truncated.pt", "no zip end-of-central-directory record"},
        {"many-views.pt", "its tensors copy out to more than"},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, DIR "hostile/%s", CASES[i][0]);
        gf_torch_ckpt c;
        const int rc = gf_torch_load(path, &c);
        if (!rc || !strstr(gf_last_error(), CASES[i][1]))
            fail_msg("%s: rc %d, error \"%s\"; expected one saying \"%s\"", CASES[i][0], rc, rc ? gf_last_error() : "",
                     CASES[i][1]);
        assert_null(c.t);
    }
}

/* The unpickler on its own: what it refuses, and what it builds. */
static void test_pickle(void **state) {
    (void)state;
    const gf_pk *root;
    static const uint8_t sys_call[] = "\x80\x02" "cos\nsystem\n" "X\x02\x00\x00\x00ls\x85R.";
    assert_null(gf_pickle_read(sys_call, sizeof sys_call - 1, "p", &root));
    assert_non_null(strstr(gf_last_error(), "os.system"));
    static const uint8_t eval[] = "\x80\x02" "\x8c\x08" "builtins" "\x8c\x04" "eval" "\x93" ".";
    assert_null(gf_pickle_read(eval, sizeof eval - 1, "p", &root));
    assert_non_null(strstr(gf_last_error(), "builtins.eval"));
    static const uint8_t newobj[] = "\x80\x02" "N" ")" "\x81" ".";
    assert_null(gf_pickle_read(newobj, sizeof newobj - 1, "p", &root));
    assert_non_null(strstr(gf_last_error(), "opcode 0x81"));
    static const uint8_t memo[] = "\x80\x02" "j\xff\xff\xff\x7f" ".";
    assert_null(gf_pickle_read(memo, sizeof memo - 1, "p", &root));
    static const uint8_t nostop[] = "\x80\x02" "}";
    assert_null(gf_pickle_read(nostop, sizeof nostop - 1, "p", &root));
    assert_non_null(strstr(gf_last_error(), "without its STOP"));
    /* {"a": [1, -2, 3.5, None, True], "b": (b"xy",)} with a memoized list appended to itself */
    static const uint8_t ok[] = "\x80\x02}q\x00(X\x01\x00\x00\x00" "a]q\x01(K\x01J\xfe\xff\xff\xffG@\x0c\x00\x00\x00\x00\x00\x00"
                                "N\x88h\x01" "eX\x01\x00\x00\x00" "bC\x02xy\x85u.";
    gf_pickle *p = gf_pickle_read(ok, sizeof ok - 1, "p", &root);
    if (!p) fail_msg("%s", gf_last_error());
    const gf_pk *a = gf_pk_get(root, "a"), *b = gf_pk_get(root, "b");
    assert_true(a && a->kind == GF_PK_LIST && a->n == 6);
    assert_true(a->items[0]->i == 1 && a->items[1]->i == -2 && a->items[2]->f == 3.5);
    assert_true(a->items[3]->kind == GF_PK_NONE && a->items[4]->kind == GF_PK_BOOL && a->items[4]->i == 1);
    assert_ptr_equal(a->items[5], a); /* the cycle is a pointer, and nothing walks it here */
    assert_true(b && b->kind == GF_PK_TUPLE && b->n == 1 && b->items[0]->len == 2 && !memcmp(b->items[0]->s, "xy", 2));
    gf_pickle_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_reproduction), cmocka_unit_test(test_hostile),
                                       cmocka_unit_test(test_pickle)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
