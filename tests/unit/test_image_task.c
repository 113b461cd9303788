/* The image task (src/tasks/image/image_task.c) on the sample grassflow ships, through the public task API:
 * an image read as its patches in raster order, each pixel scaled and centred as documented; valid is every
 * tenth training image; and the augmentation: a training image with --crop c is the image shifted by some (dy,
 * dx) within c (background 0 moving in), with --flip mirrored or not, the same draw for the same (seed, epoch,
 * image) and evaluation never augmented; --cls's extra position. */
#include "testlib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grassflow_plugin.h"
#include "io/idx.h"

enum { H = 28, W = 28, P = 4, T = 49, D = 16 };
static const float MEAN = 0.2860f, STD = 0.3530f;

static gf_idx IM, LB; /* the sample's training file, read here independently */

static gf_source *make(gf_task_recipe *r, const char *crop, const char *flip, int split, uint64_t seed, void **data) {
    assert_int_equal(gf_task_recipe_init(r, "image"), 0);
    snprintf(r->corpus, sizeof r->corpus, "fashion-mnist-sample");
    assert_int_equal(gf_task_option_set(r, "crop", crop, "--crop"), 0);
    assert_int_equal(gf_task_option_set(r, "flip", flip, "--flip"), 0);
    gf_task_env e = gf_task_recipe_env(r, "data", NULL);
    if (r->task->load(&e, r->options.bytes, data)) fail_msg("load: %s", gf_last_error());
    gf_source *s = r->task->source(*data, split, r->options.bytes, seed);
    assert_non_null(s);
    return s;
}

/* Pixel (i, j) of image `img` shifted by (dy, dx) and mirrored, as the patch layout holds it. */
static float want_px(int64_t img, int i, int j, int dy, int dx, bool mirror) {
    const int si = i + dy, sj = (mirror ? W - 1 - j : j) + dx;
    const int v = si >= 0 && si < H && sj >= 0 && sj < W ? IM.data[img * H * W + si * W + sj] : 0;
    return ((float)v / 255.0f - MEAN) / STD;
}

/* Whether x (T x D) is image img shifted by (dy, dx), mirrored or not. */
static bool is_view(const float *x, int64_t img, int dy, int dx, bool mirror) {
    for (int t = 0; t < T; t++)
        for (int k = 0; k < D; k++) {
            const int i = t / 7 * P + k / P, j = t % 7 * P + k % P;
            if (fabsf(x[t * D + k] - want_px(img, i, j, dy, dx, mirror)) > 1e-6f) return false;
        }
    return true;
}

static void test_patches_and_splits(void **state) {
    (void)state;
    gf_task_recipe r;
    void *data;
    gf_source *s = make(&r, "0", "false", GF_VALID, 1, &data);
    assert_int_equal(gf_source_n_eval(s), 200);
    gf_batch b;
    assert_int_equal(gf_source_fill_eval(s, 0, 3, &b), 0);
    assert_true(b.B == 3 && b.T == T);
    for (int k = 0; k < 3; k++) { /* valid's k-th image is the training file's 10 k + 9 */
        assert_true(is_view(b.vectors + k * T * D, 10 * k + 9, 0, 0, false));
        assert_int_equal(b.targets[k], LB.data[10 * k + 9]);
    }
    gf_source_free(s);
    r.task->free(data);
}

/* Every training image of an epoch under crop 2 and flip: some shift within 2 and mirror; the draws vary. */
static void test_augmentation(void **state) {
    (void)state;
    gf_task_recipe r;
    void *data;
    gf_source *s = make(&r, "2", "true", GF_TRAIN, 7, &data);
    gf_batch b;
    int mirrored = 0, shifted = 0;
    float first[T * D];
    for (int64_t at = 0; at < 64; at += 16) {
        assert_int_equal(gf_source_fill(s, 3, at, 16, &b), 0);
        if (at == 0) memcpy(first, b.vectors, sizeof first);
        for (int k = 0; k < 16; k++) {
            bool found = false;
            for (int img = 0; img < 2000 && !found; img++) { /* which image, then which view */
                if (img % 10 == 9 || LB.data[img] != b.targets[k]) continue;
                for (int m = 0; m < 2 && !found; m++)
                    for (int dy = -2; dy <= 2 && !found; dy++)
                        for (int dx = -2; dx <= 2 && !found; dx++)
                            if (is_view(b.vectors + k * T * D, img, dy, dx, m)) {
                                found = true, mirrored += m, shifted += dy || dx;
                            }
            }
            if (!found) fail_msg("training image %lld of epoch 3 is no shift within 2 of a training image", (long long)(at + k));
        }
    }
    assert_true(mirrored > 10 && mirrored < 54 && shifted > 40); /* 64 draws: about half mirrored, most shifted */
    assert_int_equal(gf_source_fill(s, 3, 0, 16, &b), 0);
    assert_memory_equal(b.vectors, first, sizeof first); /* the same (seed, epoch, image): the same view */
    gf_source_free(s);
    r.task->free(data);
    s = make(&r, "2", "true", GF_VALID, 7, &data); /* evaluation: never augmented */
    assert_int_equal(gf_source_fill_eval(s, 0, 1, &b), 0);
    assert_true(is_view(b.vectors, 9, 0, 0, false));
    gf_source_free(s);
    r.task->free(data);
}

/* --cls: one position more after the patches, all zeros; the model pools it (head.pool last) and, with learned
 * positions, has one for it (max_len T + 1). */
static void test_cls(void **state) {
    (void)state;
    gf_task_recipe r;
    assert_int_equal(gf_task_recipe_init(&r, "image"), 0);
    snprintf(r.corpus, sizeof r.corpus, "fashion-mnist-sample");
    assert_int_equal(gf_task_option_set(&r, "cls", "true", "--cls"), 0);
    gf_task_env e = gf_task_recipe_env(&r, "data", NULL);
    void *data;
    if (r.task->load(&e, r.options.bytes, &data)) fail_msg("load: %s", gf_last_error());
    gf_source *s = r.task->source(data, GF_TEST, r.options.bytes, 1);
    assert_non_null(s);
    gf_batch b;
    assert_int_equal(gf_source_fill_eval(s, 0, 2, &b), 0);
    assert_true(b.B == 2 && b.T == T + 1);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < D; i++) assert_true(b.vectors[(k * (T + 1) + T) * D + i] == 0.0f);
    gf_config c;
    assert_int_equal(gf_config_preset("transformer-tiny", &c), 0);
    assert_int_equal(r.task->configure(data, r.options.bytes, &c), 0);
    char *pool = gf_config_get(&c, "head.pool");
    assert_string_equal(pool, "\"last\"");
    free(pool);
    assert_int_equal(c.max_len, T + 1);
    gf_source_free(s);
    r.task->free(data);
}

static int setup(void **state) {
    (void)state;
    if (gf_idx_read("data/fashion-mnist/train-images-idx3-ubyte.gz", 3, 1 << 24, &IM) ||
        gf_idx_read("data/fashion-mnist/train-labels-idx1-ubyte.gz", 1, 1 << 24, &LB))
        return -1;
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_patches_and_splits), cmocka_unit_test(test_augmentation),
                                       cmocka_unit_test(test_cls)};
    return cmocka_run_group_tests(tests, setup, NULL);
}
