/* The deterministic sum of a step's per-example gradients (--deterministic; docs/distributed.md).
 *
 * The step's n examples are the leaves 0 .. n-1 of one fixed binary tree: the one a binary counter builds
 * when the leaves are pushed in order (partial sums of equal size are added, left + right, as soon as there
 * are two; at the end the rest is folded, b0 + (b1 + (... + b_top))). Any range [a, b) of leaves splits into
 * maximal aligned blocks ([c, c + 2^j) with 2^j dividing c) whose sums are subtrees of that tree, and pushing
 * those block sums in order leaves the counter exactly as pushing their leaves would. So a rank sums its
 * blocks alone, rank 0 pushes every rank's blocks in the examples' order, and the result is the same bits
 * whatever the number of ranks, the micro-batches or the threads. */
#ifndef GF_TRAIN_DETSUM_H
#define GF_TRAIN_DETSUM_H

#include <stdint.h>

typedef struct gf_detsum {
    int64_t n;            /* floats a vector */
    int depth;            /* partial sums held */
    float *buf[64];       /* buf[k]: the sum of size[k] leaves (allocated as the stack first grows) */
    int64_t size[64];
    double loss[64];      /* the weighted losses, summed along the same tree */
} gf_detsum;

void gf_detsum_init(gf_detsum *s, int64_t n);
void gf_detsum_free(gf_detsum *s);
static inline void gf_detsum_clear(gf_detsum *s) { s->depth = 0; }
/* Push v (NULL: zeros) standing for `size` leaves that follow those pushed so far (size a power of two
 * dividing the leaves before it); -1 (gf_fail) when memory runs out. */
int gf_detsum_push(gf_detsum *s, const float *v, double loss, int64_t size);
/* The sum of everything pushed into out (n floats) and *loss; the counter then holds it as one entry. */
void gf_detsum_fold(gf_detsum *s, float *out, double *loss);
/* The largest aligned block that starts at leaf c and ends at or before leaf b (exclusive). */
int64_t gf_detsum_block(int64_t c, int64_t b);

#endif
