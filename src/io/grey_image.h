/* Greyscale image files, for a user's own images at predict time (the image task, issue 53): PGM (P5 binary or
 * P2 text, any maxval up to 65535, scaled to 0-255) and PNG (through libpng; a colour PNG is refused, a grey one
 * with alpha is composited on black), each checked against what its header says; and a resize to the side the
 * model reads. */
#ifndef GF_IO_GREY_IMAGE_H
#define GF_IO_GREY_IMAGE_H

#include <stdint.h>

typedef struct gf_grey_image {
    int64_t h, w;
    uint8_t *px; /* h x w, row by row */
} gf_grey_image;

/* path (.pgm or .png, by its first bytes) into *im, both sides at most max_side. 0, or -1 (gf_fail: the file
 * named, what is wrong, what was expected). */
int gf_grey_image_read(const char *path, int64_t max_side, gf_grey_image *im);
void gf_grey_image_free(gf_grey_image *im);
/* im resized to h x w into out: each output pixel the mean of the source pixels its area covers (a shrink),
 * or bilinear between the nearest source pixel centres (a stretch), per axis. */
void gf_grey_image_resize(const gf_grey_image *im, int64_t h, int64_t w, uint8_t *out);

#endif
