/* IDX files (src/io/idx.c) written here, plain and gzip, whole and damaged: each read back as written, or refused
 * with a message naming what is wrong; a gzip bomb refused after reading one byte past what its header says; and,
 * where Debian's dataset-fashion-mnist is installed, its test split read whole. */
#include "testlib.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "io/idx.h"

enum { MAXB = 1 << 20 };

/* An IDX header of type 0x08 and dims[0..nd) then body[0..nb) into path, gzip-compressed when gz; zeros bytes of
 * 0 after it (a bomb when gz). magic0: the first byte (0 in a real file). */
static const char *write_idx(const char *name, bool gz, int magic0, int type, int nd, const uint32_t *dims,
                             const uint8_t *body, int64_t nb, int64_t zeros) {
    const char *path = tl_tmp_path(name);
    uint8_t h[4 + 16] = {(uint8_t)magic0, 0, (uint8_t)type, (uint8_t)nd};
    for (int k = 0; k < nd; k++)
        for (int b = 0; b < 4; b++) h[4 + 4 * k + b] = (uint8_t)(dims[k] >> (24 - 8 * b));
    static uint8_t zero[65536];
    if (gz) {
        gzFile f = gzopen(path, "wb");
        assert_non_null(f);
        gzwrite(f, h, (unsigned)(4 + 4 * nd));
        if (nb) gzwrite(f, body, (unsigned)nb);
        for (int64_t z = 0; z < zeros; z += sizeof zero) gzwrite(f, zero, (unsigned)(zeros - z < (int64_t)sizeof zero ? zeros - z : (int64_t)sizeof zero));
        gzclose(f);
    } else {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        fwrite(h, 1, (size_t)(4 + 4 * nd), f);
        if (nb) fwrite(body, 1, (size_t)nb, f);
        for (int64_t z = 0; z < zeros; z++) fputc(0, f);
        fclose(f);
    }
    return path;
}

static uint8_t BODY[60];

static void test_round_trip(void **state) {
    (void)state;
    for (int i = 0; i < 60; i++) BODY[i] = (uint8_t)(i * 37 + 5);
    const uint32_t dims[3] = {5, 4, 3}, ldims[1] = {60};
    for (int gz = 0; gz < 2; gz++) {
        gf_idx x;
        assert_int_equal(gf_idx_read(write_idx(gz ? "img.gz" : "img", gz, 0, 8, 3, dims, BODY, 60, 0), 3, MAXB, &x), 0);
        assert_int_equal(x.ndims, 3);
        assert_true(x.dims[0] == 5 && x.dims[1] == 4 && x.dims[2] == 3 && x.n == 60);
        assert_memory_equal(x.data, BODY, 60);
        gf_idx_free(&x);
        assert_int_equal(gf_idx_read(write_idx("lab", gz, 0, 8, 1, ldims, BODY, 60, 0), 1, MAXB, &x), 0);
        assert_true(x.ndims == 1 && x.dims[0] == 60);
        gf_idx_free(&x);
    }
}

static void test_damaged(void **state) {
    (void)state;
    const uint32_t dims[3] = {5, 4, 3}, big[3] = {60000, 28, 28}, zero[3] = {0, 28, 28};
    gf_idx x;
    for (int gz = 0; gz < 2; gz++) {
        tl_expect_error(gf_idx_read(write_idx("t", gz, 0, 8, 3, dims, BODY, 50, 0), 3, MAXB, &x),
                        "truncated: its IDX header says 60 bytes of data, the file holds 50");
        assert_null(x.data);
        tl_expect_error(gf_idx_read(write_idx("l", gz, 0, 8, 3, dims, BODY, 60, 7), 3, MAXB, &x),
                        "holds more than its IDX header says (60 bytes of data)");
        tl_expect_error(gf_idx_read(write_idx("m", gz, 1, 8, 3, dims, BODY, 60, 0), 3, MAXB, &x), "not an IDX file");
        tl_expect_error(gf_idx_read(write_idx("f", gz, 0, 0x0D, 3, dims, BODY, 60, 0), 3, MAXB, &x),
                        "IDX element type 0x0d; expected 0x08");
        tl_expect_error(gf_idx_read(write_idx("d", gz, 0, 8, 3, dims, BODY, 60, 0), 1, MAXB, &x),
                        "an IDX file of 3 dimensions; expected 1 (labels: a count)");
        tl_expect_error(gf_idx_read(write_idx("h", gz, 0, 8, 3, big, NULL, 0, 0), 3, MAXB, &x),
                        "its IDX header says 60000 x ... elements, more than the 1048576 bytes this reads");
        tl_expect_error(gf_idx_read(write_idx("e", gz, 0, 8, 0, dims, NULL, 0, 0), 0, MAXB, &x),
                        "an IDX file of 0 dimensions");
    }
    assert_int_equal(gf_idx_read(write_idx("z", false, 0, 8, 3, zero, NULL, 0, 0), 3, MAXB, &x), 0); /* empty: no error here */
    assert_int_equal(x.n, 0);
    gf_idx_free(&x);
    FILE *f = fopen(tl_tmp_path("short"), "wb"); /* the header stops inside its dimensions */
    fwrite("\0\0\x08\x03\0\0\0\x05\0\0", 1, 10, f);
    fclose(f);
    tl_expect_error(gf_idx_read(tl_tmp_path("short"), 3, MAXB, &x), "the IDX header ends before its 3 dimensions");
    f = fopen(tl_tmp_path("text"), "wb");
    fputs("hello, world\n", f);
    fclose(f);
    tl_expect_error(gf_idx_read(tl_tmp_path("text"), 3, MAXB, &x), "not an IDX file");
    f = fopen(tl_tmp_path("empty"), "wb");
    fclose(f);
    tl_expect_error(gf_idx_read(tl_tmp_path("empty"), 3, MAXB, &x), "not an IDX file");
    mkdir(tl_tmp_path("dir"), 0755);
    tl_expect_error(gf_idx_read(tl_tmp_path("dir"), 3, MAXB, &x), "dir");
    tl_expect_error(gf_idx_read(tl_tmp_path("missing.gz"), 3, MAXB, &x), "missing.gz");
}

/* 64 MiB of zeros compressed to about 64 KiB after a 60-byte image: refused once the 61st byte is read. */
static void test_gzip_bomb(void **state) {
    (void)state;
    const uint32_t dims[3] = {5, 4, 3};
    const char *p = write_idx("bomb.gz", true, 0, 8, 3, dims, BODY, 60, (int64_t)64 << 20);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_true(st.st_size < 1 << 20);
    gf_idx x;
    tl_expect_error(gf_idx_read(p, 3, MAXB, &x), "holds more than its IDX header says");
}

/* Debian's Fashion-MNIST test split, where it is installed: 10,000 images of 28 x 28 and their labels 0-9. */
static void test_fashion_mnist(void **state) {
    (void)state;
    const char *dir = "/usr/share/datasets/fashion-mnist";
    char ip[256], lp[256];
    snprintf(ip, sizeof ip, "%s/t10k-images-idx3-ubyte.gz", dir);
    snprintf(lp, sizeof lp, "%s/t10k-labels-idx1-ubyte.gz", dir);
    struct stat st;
    if (stat(ip, &st) != 0) {
        print_message("skipped: %s is not installed (apt-get install dataset-fashion-mnist)\n", ip);
        return;
    }
    gf_idx im, lb;
    assert_int_equal(gf_idx_read(ip, 3, (int64_t)64 << 20, &im), 0);
    assert_int_equal(gf_idx_read(lp, 1, (int64_t)64 << 20, &lb), 0);
    assert_true(im.dims[0] == 10000 && im.dims[1] == 28 && im.dims[2] == 28 && lb.dims[0] == 10000);
    int count[10] = {0};
    for (int64_t i = 0; i < lb.n; i++) {
        assert_true(lb.data[i] < 10);
        count[lb.data[i]]++;
    }
    for (int c = 0; c < 10; c++) assert_int_equal(count[c], 1000); /* the test split is balanced */
    gf_idx_free(&im);
    gf_idx_free(&lb);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip), cmocka_unit_test(test_damaged), cmocka_unit_test(test_gzip_bomb),
        cmocka_unit_test(test_fashion_mnist),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
