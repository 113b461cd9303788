/* Checkpoints: save/load round trip, and hostile files rejected with a message naming file and field. */
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/safetensors.h"
#include "testlib.h"

static gf_model *tiny(const char *preset, uint64_t seed) {
    gf_config c;
    assert_int_equal(gf_config_preset(preset, &c), 0);
    gf_model *m = gf_model_create(&c);
    assert_non_null(m);
    gf_model_init(m, seed);
    return m;
}

static void test_roundtrip(void **state) {
    (void)state;
    const char *presets[] = {"grassmann-tiny", "transformer-tiny", "hybrid-tiny"};
    for (int i = 0; i < 3; i++) {
        gf_model *m = tiny(presets[i], 42 + i);
        const char *path = tl_tmp_path("rt.safetensors");
        assert_int_equal(gf_model_save(m, path), 0);
        gf_model *r = gf_model_load(path);
        if (!r) fail_msg("load: %s", gf_last_error());
        assert_int_equal(gf_model_num_params(r), gf_model_num_params(m));
        assert_memory_equal(gf_model_params(r), gf_model_params(m), (size_t)gf_model_num_params(m) * sizeof(float));
        char *a = gf_config_to_json(gf_model_config(m), false), *b = gf_config_to_json(gf_model_config(r), false);
        assert_string_equal(a, b);
        free(a);
        free(b);
        /* the file is what PyTorch expects: names, F32, (out, in) shapes, the config in the metadata */
        gf_st_file *f = gf_st_read(path);
        assert_non_null(f);
        assert_int_equal(f->n_tensors, gf_model_num_tensors(m));
        const gf_st_tensor *t = gf_st_find(f, "blocks.0.ffn.fc1.weight");
        assert_non_null(t);
        assert_int_equal(t->dtype, GF_DT_F32);
        assert_int_equal(t->shape[0], 64);
        assert_int_equal(t->shape[1], 32);
        char *cfg = gf_st_metadata(f, "config");
        assert_non_null(cfg);
        free(cfg);
        assert_int_equal((8 + *(uint64_t *)f->buf) % 8, 0); /* data section aligned */
        gf_st_free(f);
        gf_model_free(r);
        gf_model_free(m);
        glob_t g;
        assert_int_equal(glob(tl_tmp_path("*.tmp.*"), 0, NULL, &g), GLOB_NOMATCH); /* no temporary left */
        globfree(&g);
    }
}

/* Write a file with the given header JSON and data bytes. */
static const char *write_raw(const char *name, const char *header, uint64_t declared_len, size_t data_bytes) {
    const char *path = tl_tmp_path(name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    uint64_t hl = declared_len ? declared_len : strlen(header);
    fwrite(&hl, 8, 1, f);
    fwrite(header, 1, strlen(header), f);
    for (size_t i = 0; i < data_bytes; i++) fputc(0, f);
    fclose(f);
    return path;
}

static void expect_reject(const char *name, const char *header, uint64_t declared_len, size_t data_bytes,
                          const char *msg) {
    const char *path = write_raw(name, header, declared_len, data_bytes);
    gf_st_file *f = gf_st_read(path);
    if (f) {
        gf_st_free(f);
        fail_msg("%s: accepted a hostile file", name);
    }
    if (!strstr(gf_last_error(), msg) || !strstr(gf_last_error(), name))
        fail_msg("%s: error '%s' should name the file and mention '%s'", name, gf_last_error(), msg);
}

static void test_hostile_headers(void **state) {
    (void)state;
    expect_reject("len.st", "{}", 1ull << 40, 0, "header length");
    expect_reject("json.st", "{\"a\": {\"dtype\": \"F32\", ", 0, 0, "not a JSON object");
    expect_reject("dtype.st", "{\"a\":{\"dtype\":\"F8_E4M3\",\"shape\":[2],\"data_offsets\":[0,2]}}", 0, 2, "F8_E4M3");
    expect_reject("oob.st", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 0, 8, "data_offsets");
    expect_reject("mismatch.st", "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 0, 8, "span 8 bytes");
    expect_reject("overlap.st",
                  "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                  "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 0, 12, "overlaps");
    expect_reject("gap.st", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 0, 8, "gap");
    expect_reject("tail.st", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 0, 12, "belong to no tensor");
    expect_reject("overflow.st",
                  "{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,4]}}", 0, 4,
                  "overflows");
    expect_reject("negshape.st", "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 0, 4, "shape");
    expect_reject("dup.st",
                  "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                  "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 0, 8, "twice");
    expect_reject("meta.st", "{\"__metadata__\":{\"config\":5}}", 0, 0, "must be a string");
    expect_reject("short.st", "", 3, 0, "header length");
    /* a file shorter than the 8-byte length field */
    const char *p = tl_tmp_path("tiny.st");
    FILE *f = fopen(p, "wb");
    fputs("abc", f);
    fclose(f);
    assert_null(gf_st_read(p));
    assert_non_null(strstr(gf_last_error(), "too short"));
    assert_null(gf_st_read(tl_tmp_path("does-not-exist.st")));
    assert_non_null(strstr(gf_last_error(), "cannot open"));
}

/* Valid safetensors files that are not checkpoints of the model their config describes. */
static void test_model_mismatch(void **state) {
    (void)state;
    gf_model *m = tiny("grassmann-tiny", 1);
    const char *good = tl_tmp_path("good.safetensors");
    assert_int_equal(gf_model_save(m, good), 0);

    /* no config */
    const char *path = write_raw("nocfg.st", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 0, 4);
    assert_null(gf_model_load(path));
    assert_non_null(strstr(gf_last_error(), "not a grassflow checkpoint"));

    /* the same tensors, but a config that wants another rank: shapes no longer fit */
    int n = gf_model_num_tensors(m);
    gf_st_out *ts = calloc((size_t)n, sizeof *ts);
    for (int i = 0; i < n; i++) {
        const gf_tensor_info *t = gf_model_tensor(m, i);
        ts[i] = (gf_st_out){.name = t->name, .dtype = GF_DT_F32, .ndim = t->ndim, .data = t->data};
        ts[i].shape[0] = t->shape[0];
        ts[i].shape[1] = t->shape[1];
    }
    gf_config c = *gf_model_config(m);
    assert_int_equal(gf_config_set(&c, "rank=4"), 0);
    char *cj = gf_config_to_json(&c, false);
    const char *keys[] = {"config"};
    const char *vals[] = {cj};
    const char *p2 = tl_tmp_path("rank.safetensors");
    assert_int_equal(gf_st_write(p2, ts, n, keys, vals, 1), 0);
    assert_null(gf_model_load(p2));
    if (!strstr(gf_last_error(), "blocks.0.mix.red.weight") || !strstr(gf_last_error(), "(4, 32)"))
        fail_msg("shape mismatch message: %s", gf_last_error());
    free(cj);

    /* a tensor missing, and an unexpected extra one */
    cj = gf_config_to_json(gf_model_config(m), false);
    vals[0] = cj;
    assert_int_equal(gf_st_write(p2, ts, n - 1, keys, vals, 1), 0);
    assert_null(gf_model_load(p2));
    assert_non_null(strstr(gf_last_error(), "is missing"));
    ts[n - 1].name = "blocks.9.surprise";
    assert_int_equal(gf_st_write(p2, ts, n, keys, vals, 1), 0);
    assert_null(gf_model_load(p2));
    assert_non_null(strstr(gf_last_error(), "missing"));
    free(cj);
    free(ts);
    gf_model_free(m);
}

/* A failed write reports the path and leaves the previous file intact. */
static void test_atomic_write(void **state) {
    (void)state;
    gf_model *m = tiny("grassmann-tiny", 3);
    assert_int_not_equal(gf_model_save(m, "/nonexistent-dir/x.safetensors"), 0);
    assert_non_null(strstr(gf_last_error(), "/nonexistent-dir/x.safetensors"));
    const char *path = tl_tmp_path("keep.safetensors");
    assert_int_equal(gf_model_save(m, path), 0);
    gf_model *m2 = tiny("grassmann-tiny", 4);
    assert_int_equal(gf_model_save(m2, path), 0); /* overwrite: the new weights */
    gf_model *r = gf_model_load(path);
    assert_non_null(r);
    assert_memory_equal(gf_model_params(r), gf_model_params(m2), (size_t)gf_model_num_params(m2) * sizeof(float));
    gf_model_free(r);
    gf_model_free(m2);
    gf_model_free(m);
}

/* gf_write_file_atomic: the whole new content replaces the old one, no temporary file stays beside it, and a
 * write that cannot happen names the path and leaves nothing behind. */
static void test_write_file(void **state) {
    (void)state;
    const char *path = tl_tmp_path("summary.json");
    assert_int_equal(gf_write_file_atomic(path, "{\"a\": 1}\n", 9), 0);
    assert_int_equal(gf_write_file_atomic(path, "{}\n", 3), 0); /* shorter: nothing of the old content stays */
    size_t n = 0;
    unsigned char *back = gf_read_file(path, 1 << 20, &n);
    assert_non_null(back);
    assert_int_equal(n, 3);
    assert_memory_equal(back, "{}\n", 3);
    free(back);
    char pattern[4200];
    snprintf(pattern, sizeof pattern, "%s.tmp*", path);
    glob_t g;
    assert_int_equal(glob(pattern, 0, NULL, &g), GLOB_NOMATCH);
    globfree(&g);
    assert_int_not_equal(gf_write_file_atomic("/nonexistent-dir/summary.json", "{}", 2), 0);
    assert_non_null(strstr(gf_last_error(), "/nonexistent-dir/summary.json"));
    /* the hint is the errno's (gf_write_hint), not one for every failure */
    assert_non_null(strstr(gf_last_error(), "No such file or directory\nHINT: a folder on the way is missing"));
}

/* gf_write_hint: the one wording of what to do about a failed write, by errno. */
static void test_write_hint(void **state) {
    (void)state;
    const struct { int err; const char *says; } cases[] = {
        {EROFS, "read-only"}, {EACCES, "no permission"}, {EPERM, "no permission"}, {ENOSPC, "the disk is full"},
        {EDQUOT, "quota"}, {EFBIG, "ulimit -f"}, {ENOENT, "a folder on the way is missing"}, {EIO, "input/output"},
        {EMFILE, "ulimit -n"}, {12345, "check that the folder exists, is writable and has free space"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (!strstr(gf_write_hint(cases[i].err), cases[i].says))
            fail_msg("errno %d: \"%s\" does not say \"%s\"", cases[i].err, gf_write_hint(cases[i].err), cases[i].says);
    assert_null(strstr(gf_write_hint(EROFS), "free some space"));
}

/* Reader and writer share one header limit: metadata too large to read back is refused before writing
 * (and before a run starts, through gf_st_metadata_fits), and the previous file stays. */
static void test_header_limit(void **state) {
    (void)state;
    const size_t big = GF_ST_MAX_HEADER / 6 + 16; /* control characters: 6 bytes each once JSON-escaped */
    char *v = malloc(big + 1);
    assert_non_null(v);
    memset(v, 1, big);
    v[big] = '\0';
    const char *keys[] = {"config", "tokenizer"}, *vals[] = {"{}", v};
    assert_int_not_equal(gf_st_metadata_fits(keys, vals, 2), 0);
    assert_non_null(strstr(gf_last_error(), "\"tokenizer\" is"));
    const char *path = tl_tmp_path("limit.safetensors");
    float x = 1.0f;
    const gf_st_out t = {.name = "x", .dtype = GF_DT_F32, .ndim = 1, .shape = {1}, .data = &x};
    assert_int_equal(gf_st_write(path, &t, 1, keys, vals, 1), 0); /* small metadata: written */
    assert_int_not_equal(gf_st_write(path, &t, 1, keys, vals, 2), 0);
    assert_non_null(strstr(gf_last_error(), "nothing was written"));
    gf_st_file *f = gf_st_read(path); /* the earlier file is intact */
    assert_non_null(f);
    assert_null(gf_st_metadata(f, "tokenizer"));
    gf_st_free(f);
    v[GF_ST_MAX_HEADER / 8] = '\0'; /* well inside the limit */
    assert_int_equal(gf_st_metadata_fits(keys, vals, 2), 0);
    free(v);
}

/* gf_mkdir_p: the missing folders above a run's --out are made; under a file it fails naming the folder it
 * could not make and leaves none of those it made. */
static void test_mkdir_p(void **state) {
    (void)state;
    char deep[512], file[512], blocked[700], rb[512], toolong[900];
    snprintf(deep, sizeof deep, "%s/a//b/c", tl_tmp_path("mk"));
    snprintf(file, sizeof file, "%s", tl_tmp_path("mkfile"));
    struct stat st;
    assert_int_equal(gf_mkdir_p(deep), 0);
    assert_int_equal(stat(deep, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(gf_mkdir_p(deep), 0); /* there already: fine */
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(blocked, sizeof blocked, "%s/x/y", file);
    assert_int_not_equal(gf_mkdir_p(blocked), 0);
    assert_non_null(strstr(gf_last_error(), file));
    /* two new folders, then a name too long for the file system: both new folders are removed again */
    snprintf(rb, sizeof rb, "%s", tl_tmp_path("mkrb"));
    snprintf(toolong, sizeof toolong, "%s/new/%0300d/z", rb, 7);
    assert_int_not_equal(gf_mkdir_p(toolong), 0);
    assert_non_null(strstr(gf_last_error(), "cannot create the output directory"));
    assert_int_not_equal(stat(rb, &st), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip), cmocka_unit_test(test_hostile_headers),
        cmocka_unit_test(test_model_mismatch), cmocka_unit_test(test_atomic_write), cmocka_unit_test(test_write_file),
        cmocka_unit_test(test_write_hint),
        cmocka_unit_test(test_header_limit), cmocka_unit_test(test_mkdir_p),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
