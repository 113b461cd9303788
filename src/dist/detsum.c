/* The deterministic sum of per-example gradients (detsum.h). */
#include "dist/detsum.h"

#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/mem.h"
#include "compute/parallel.h"

void gf_detsum_init(gf_detsum *s, int64_t n) { *s = (gf_detsum){.n = n}; }

void gf_detsum_free(gf_detsum *s) {
    for (int k = 0; k < 64; k++) gf_free(s->buf[k]);
    *s = (gf_detsum){0};
}

/* x = x + y, element by element (the same bits on any number of threads) */
static void add(float *x, const float *y, int64_t n) {
#pragma omp parallel for schedule(static) if (n > GF_PAR_MIN)
    for (int64_t i = 0; i < n; i++) x[i] = x[i] + y[i];
}

/* y = x + y (the left operand first: floating-point addition commutes, but the order is stated) */
static void add_right(const float *x, float *y, int64_t n) {
#pragma omp parallel for schedule(static) if (n > GF_PAR_MIN)
    for (int64_t i = 0; i < n; i++) y[i] = x[i] + y[i];
}

int gf_detsum_push(gf_detsum *s, const float *v, double loss, int64_t size) {
    if (s->depth == 64) return gf_fail("deterministic sum: more than 2^64 leaves");
    const int k = s->depth;
    if (!s->buf[k] && !(s->buf[k] = gf_alloc_floats(s->n, "a partial sum of --deterministic's gradients"))) return -1;
    if (v) memcpy(s->buf[k], v, (size_t)s->n * sizeof(float));
    else memset(s->buf[k], 0, (size_t)s->n * sizeof(float));
    s->size[k] = size;
    s->loss[k] = loss;
    s->depth++;
    while (s->depth >= 2 && s->size[s->depth - 1] == s->size[s->depth - 2]) { /* left + right */
        const int l = s->depth - 2;
        add(s->buf[l], s->buf[l + 1], s->n);
        s->loss[l] = s->loss[l] + s->loss[l + 1];
        s->size[l] *= 2;
        s->depth--;
    }
    return 0;
}

void gf_detsum_fold(gf_detsum *s, float *out, double *loss) {
    if (s->depth == 0) {
        memset(out, 0, (size_t)s->n * sizeof(float));
        *loss = 0.0;
        return;
    }
    for (int k = s->depth - 2; k >= 0; k--) { /* b_k + (the sum of everything above it, in buf[k + 1]) */
        add_right(s->buf[k], s->buf[k + 1], s->n);
        float *t = s->buf[k]; /* the sum now sits in buf[k + 1]: swap it down */
        s->buf[k] = s->buf[k + 1];
        s->buf[k + 1] = t;
        s->loss[k] = s->loss[k] + s->loss[k + 1];
        s->size[k] += s->size[k + 1];
    }
    s->depth = 1;
    memcpy(out, s->buf[0], (size_t)s->n * sizeof(float));
    *loss = s->loss[0];
}

int64_t gf_detsum_block(int64_t c, int64_t b) {
    int64_t s = 1;
    while ((c % (2 * s)) == 0 && c + 2 * s <= b && 2 * s > 0) s *= 2;
    return s;
}
