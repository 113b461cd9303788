/* Greyscale image files (io/grey_image.h). */
#include "io/grey_image.h"

#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "io/file.h"

void gf_grey_image_free(gf_grey_image *im) {
    free(im->px);
    memset(im, 0, sizeof *im);
}

/* ---- PGM ---- */

/* The next number of a PGM header or P2 body at *p (whitespace and # comments skipped); -1 if none. */
static int64_t pgm_number(const char **p, const char *end) {
    while (*p < end) {
        if (**p == '#')
            while (*p < end && **p != '\n') (*p)++;
        else if (**p == ' ' || **p == '\t' || **p == '\n' || **p == '\r')
            (*p)++;
        else
            break;
    }
    int64_t v = -1;
    for (; *p < end && **p >= '0' && **p <= '9' && v < (int64_t)1 << 40; (*p)++) v = (v < 0 ? 0 : v * 10) + (**p - '0');
    return v;
}

static int pgm_read(const char *path, const char *buf, size_t n, int64_t max_side, gf_grey_image *im) {
    const char *p = buf + 2, *end = buf + n;
    const bool text = buf[1] == '2';
    const int64_t w = pgm_number(&p, end), h = pgm_number(&p, end), maxval = pgm_number(&p, end);
    if (w < 1 || h < 1 || maxval < 1 || maxval > 65535)
        return gf_fail("%s: a PGM header of width %lld, height %lld, maxval %lld; expected positive sides and a maxval of "
                       "1 to 65535", gf_show_name(path), (long long)w, (long long)h, (long long)maxval);
    if (w > max_side || h > max_side)
        return gf_fail("%s: an image of %lld x %lld; at most %lld pixels a side", gf_show_name(path), (long long)w,
                       (long long)h, (long long)max_side);
    const int64_t bytes = maxval > 255 ? 2 : 1;
    if (!text) p++; /* the single whitespace after maxval */
    if (!text && (int64_t)(end - p) < w * h * bytes)
        return gf_fail("%s: truncated: its PGM header says %lld x %lld pixels of %lld byte%s, the file holds %lld bytes of "
                       "them", gf_show_name(path), (long long)w, (long long)h, (long long)bytes, bytes > 1 ? "s" : "",
                       (long long)(end - p));
    if (!(im->px = malloc((size_t)(w * h)))) return gf_fail("out of memory for %s", gf_show_name(path));
    im->h = h, im->w = w;
    for (int64_t i = 0; i < w * h; i++) {
        int64_t v = text ? pgm_number(&p, end) : bytes == 2 ? ((uint8_t)p[2 * i] << 8 | (uint8_t)p[2 * i + 1]) : (uint8_t)p[i];
        if (v < 0 || v > maxval) {
            gf_grey_image_free(im);
            return gf_fail("%s: pixel %lld is %s; expected a value of 0 to maxval %lld", gf_show_name(path),
                           (long long)i, v < 0 ? "missing (the file ends early)" : "above maxval", (long long)maxval);
        }
        im->px[i] = (uint8_t)((v * 255 + maxval / 2) / maxval);
    }
    return 0;
}

/* ---- PNG ---- */

static int png_read(const char *path, FILE *f, int64_t max_side, gf_grey_image *im) {
    png_image pi;
    memset(&pi, 0, sizeof pi);
    pi.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_stdio(&pi, f))
        return gf_fail("%s: not a readable PNG file (%s)", gf_show_name(path), pi.message);
    int rc = 0;
    if (pi.format & PNG_FORMAT_FLAG_COLOR)
        rc = gf_fail("%s: a colour PNG; the model reads greyscale images\nHINT: convert it first (for example "
                     "`convert IN -colorspace Gray OUT.png`)", gf_show_name(path));
    else if ((int64_t)pi.width > max_side || (int64_t)pi.height > max_side)
        rc = gf_fail("%s: an image of %u x %u; at most %lld pixels a side", gf_show_name(path), pi.width, pi.height,
                     (long long)max_side);
    if (rc) {
        png_image_free(&pi);
        return rc;
    }
    pi.format = PNG_FORMAT_GRAY; /* alpha, if any, composited on black */
    im->h = pi.height, im->w = pi.width;
    if (!(im->px = malloc(PNG_IMAGE_SIZE(pi)))) {
        png_image_free(&pi);
        return gf_fail("out of memory for %s", gf_show_name(path));
    }
    if (!png_image_finish_read(&pi, NULL, im->px, 0, NULL)) {
        rc = gf_fail("%s: a damaged PNG file (%s)", gf_show_name(path), pi.message);
        gf_grey_image_free(im);
    }
    png_image_free(&pi);
    return rc;
}

int gf_grey_image_read(const char *path, int64_t max_side, gf_grey_image *im) {
    memset(im, 0, sizeof *im);
    FILE *f = gf_open_regular(path, NULL);
    if (!f) return -1;
    uint8_t head[8] = {0};
    const size_t got = fread(head, 1, sizeof head, f);
    int rc;
    if (got == 8 && !png_sig_cmp(head, 0, 8)) {
        rewind(f);
        rc = png_read(path, f, max_side, im);
    } else if (got >= 2 && head[0] == 'P' && (head[1] == '5' || head[1] == '2')) {
        fclose(f);
        f = NULL;
        size_t n = 0;
        const int64_t cap = 64 + 12 * max_side * max_side; /* the longest P2 body such sides can have */
        char *buf = (char *)gf_read_file(path, (size_t)cap, &n);
        rc = buf ? pgm_read(path, buf, n, max_side, im) : -1;
        free(buf);
    } else {
        rc = gf_fail("%s: neither a PNG nor a greyscale PGM (P5 or P2) file\nHINT: give a greyscale .png or .pgm "
                     "image (a colour one converted first)", gf_show_name(path));
    }
    if (f) fclose(f);
    return rc;
}

/* Output pixel i's source span [lo, hi) along one axis of n source pixels resized to m, and bilinear's pair. */
static double sample_axis(const uint8_t *line, int64_t stride, int64_t n, int64_t m, int64_t i) {
    if (m <= n) { /* a shrink: the mean over the area the pixel covers */
        const double a = (double)i * n / m, b = (double)(i + 1) * n / m;
        double s = 0.0;
        for (int64_t k = (int64_t)a; k < n && k < b; k++) {
            const double lo = k > a ? k : a, hi = k + 1 < b ? k + 1 : b;
            s += (hi - lo) * line[k * stride];
        }
        return s / (b - a);
    }
    double x = (i + 0.5) * n / m - 0.5; /* a stretch: bilinear between the two nearest pixel centres */
    x = x < 0 ? 0 : x > n - 1 ? n - 1 : x;
    const int64_t k = (int64_t)x, k1 = k + 1 < n ? k + 1 : k;
    return (1.0 - (x - k)) * line[k * stride] + (x - k) * line[k1 * stride];
}

void gf_grey_image_resize(const gf_grey_image *im, int64_t h, int64_t w, uint8_t *out) {
    double *rows = malloc((size_t)(im->h * w) * sizeof *rows); /* the width resized first */
    uint8_t *tmp = malloc((size_t)im->h);
    if (!rows || !tmp) { /* out of memory: nearest pixels, never a failure */
        for (int64_t i = 0; i < h; i++)
            for (int64_t j = 0; j < w; j++) out[i * w + j] = im->px[(i * im->h / h) * im->w + j * im->w / w];
        free(rows), free(tmp);
        return;
    }
    for (int64_t r = 0; r < im->h; r++)
        for (int64_t j = 0; j < w; j++) rows[r * w + j] = sample_axis(im->px + r * im->w, 1, im->w, w, j);
    for (int64_t j = 0; j < w; j++) {
        for (int64_t r = 0; r < im->h; r++) {
            const double v = rows[r * w + j];
            tmp[r] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v + 0.5);
        }
        for (int64_t i = 0; i < h; i++) {
            const double v = sample_axis(tmp, 1, im->h, h, i);
            out[i * w + j] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v + 0.5);
        }
    }
    free(rows), free(tmp);
}
