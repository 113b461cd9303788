/* libFuzzer: image files, any bytes: MNIST's IDX (src/io/idx.c; written gzip-compressed when the first byte is
 * odd, plain otherwise, read with the dimensions the second byte's low bits ask for: 0 any, 1 labels, 3 images)
 * and a user's greyscale images (src/io/grey_image.c: PGM P5 or P2, PNG through libpng), each then resized
 * both ways. What is read must hold together: an IDX file's bytes are the product of its dimensions, within the
 * bound; an image's sides within theirs. The bounds (1 MiB of IDX data, 256 pixels a side) keep a forged header
 * from costing memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "io/grey_image.h"
#include "io/idx.h"

static void check(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "fuzz_images: %s\n", what);
        abort();
    }
}

static void idx_case(const unsigned char *data, size_t size, const char *path) {
    if (data[0] & 1) {
        gzFile g = gzopen(path, "wb");
        if (!g) return;
        if (size > 2) gzwrite(g, data + 2, (unsigned)(size - 2));
        gzclose(g);
    } else {
        FILE *f = fopen(path, "wb");
        if (!f) return;
        fwrite(data + 2, 1, size - 2, f);
        fclose(f);
    }
    static const int want[4] = {0, 1, 0, 3};
    gf_idx x;
    if (gf_idx_read(path, want[data[1] & 3], 1 << 20, &x) == 0) {
        int64_t n = 1; /* a zero dimension makes the rest free (and their product may overflow) */
        for (int k = 0; k < x.ndims; k++) n = x.dims[k] == 0 || n == 0 ? 0 : n * x.dims[k] > 1 << 20 ? (1 << 20) + 1 : n * x.dims[k];
        check(x.n == n && n <= 1 << 20 && x.ndims >= 1 && x.ndims <= GF_IDX_MAX_DIMS, "IDX bytes != its dimensions");
        volatile uint8_t sum = 0;
        for (int64_t i = 0; i < x.n; i++) sum += x.data[i]; /* every byte readable */
        gf_idx_free(&x);
    }
}

static void image_case(const unsigned char *data, size_t size, const char *path) {
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(data + 2, 1, size - 2, f);
    fclose(f);
    gf_grey_image im;
    if (gf_grey_image_read(path, 256, &im) == 0) {
        check(im.h >= 1 && im.w >= 1 && im.h <= 256 && im.w <= 256 && im.px, "an image's sides out of bounds");
        uint8_t small[7 * 7], *big = malloc(300 * 300);
        gf_grey_image_resize(&im, 7, 7, small);
        if (big) gf_grey_image_resize(&im, 300, 300, big);
        free(big);
        gf_grey_image_free(&im);
    }
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    if (size < 2) return 0;
    char path[80];
    snprintf(path, sizeof path, "/tmp/grassflow-fuzz-images-%ld", (long)getpid());
    if (data[1] & 4) image_case(data, size, path);
    else idx_case(data, size, path);
    unlink(path);
    return 0;
}
