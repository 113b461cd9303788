/* The Grassmann mixer's config (the "grassmann" entries of a config's layers). */
#ifndef GF_MIXERS_GRASSMANN_H
#define GF_MIXERS_GRASSMANN_H

#include <stdbool.h>
#include <stdint.h>

#define GF_MAX_OFFSETS 16

typedef struct gf_grassmann_config {
    int64_t rank;                 /* r: the reduced dimension */
    int n_offsets;
    int offsets[GF_MAX_OFFSETS];  /* look-back distances D >= 1 */
    float plucker_eps;            /* |p| is clamped at this */
    int64_t heads;                /* mixing heads: z splits into heads groups of rank/heads, each group paired
                                   * with itself only (heads x C(rank/heads, 2) coordinates) */
    int64_t window;               /* > 0: pairs only within windows of this many positions, stride the same
                                   * (positions kW .. kW+W-1); 0: the whole sequence */
    bool extra_proj;              /* the paper's extra Linear(d, d) after the gate */
    bool plucker;                 /* false (the paper's ablation): a pair enters as its concatenation
                                   * [z_later; z_earlier] through pair.weight (d, 2r), not as Pluecker
                                   * coordinates; heads must be 1 and plucker_eps is unused */
    bool gate;                    /* false (the paper's ablation): no gate tensors, the mixer's output is
                                   * (h + g) / 2 */
} gf_grassmann_config;

#endif
