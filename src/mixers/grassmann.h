/* The Grassmann mixer's config (the "grassmann" entries of a config's layers). */
#ifndef GF_MIXERS_GRASSMANN_H
#define GF_MIXERS_GRASSMANN_H

#include <stdbool.h>
#include <stdint.h>

#include "grassflow_plugin.h"

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
    int64_t grid;                 /* > 0: the positions are a grid of this many columns, row by row (an
                                   * image's patches): offset D is the step of dr rows and dc columns with
                                   * D = dr grid + dc, -grid/2 < dc <= grid/2 (gf_grassmann_grid_col), and a
                                   * partner whose column is not the token's moved by that dc (the step would
                                   * wrap round a row's end) is no partner; 0: a plain sequence */
    bool extra_proj;              /* the paper's extra Linear(d, d) after the gate */
    bool plucker;                 /* false (the paper's ablation): a pair enters as its concatenation
                                   * [z_later; z_earlier] through pair.weight (d, 2r), not as Pluecker
                                   * coordinates; heads must be 1 and plucker_eps is unused */
    bool gate;                    /* false (the paper's ablation): no gate tensors, the mixer's output is
                                   * (h + g) / 2 */
    int gate_form;                /* GF_GATE_CHANNEL (one gate per channel, the paper's) or GF_GATE_SCALAR (one
                                   * per position, for every channel; issue 55) */
    int64_t conv;                 /* K > 0: the reduction reads u = h + a causal depthwise convolution of h over
                                   * positions t-K+1 .. t (conv.weight (d, K), conv.bias (d), both starting at
                                   * 0), not h; 0: none (issue 55) */
    int offset_mix;               /* GF_OFFSET_MEAN (the paper's mean over the partners), GF_OFFSET_LEARNED (a
                                   * softmax over the partners of learned logits mix.bias (n_offsets), one per
                                   * offset, starting at 0: the mean) or GF_OFFSET_TOKEN (the logits mix(h_t),
                                   * mix.weight (n_offsets, d) and mix.bias, starting at 0); issue 55 */
    uint8_t force_gate;           /* evaluation only, never a config key (a loaded or parsed config has 0):
                                   * gf_model_set_override's gf_gate_force. GF_GATE_ONE: a = 1, m = h;
                                   * GF_GATE_ZERO: a = 0, m = g; 0 (GF_GATE_LEARNED): the learned gate */
} gf_grassmann_config;
enum { GF_GATE_CHANNEL, GF_GATE_SCALAR }; /* gf_grassmann_config.gate_form, in the key's order of names */
enum { GF_OFFSET_MEAN, GF_OFFSET_LEARNED, GF_OFFSET_TOKEN }; /* gf_grassmann_config.offset_mix, the key's order */

/* The column step dc of offset D on a grid of G columns: D = dr G + dc, -G/2 < dc <= G/2. */
static inline int64_t gf_grassmann_grid_col(int64_t D, int64_t G) {
    const int64_t c = D % G;
    return c > G / 2 ? c - G : c;
}

/* ---- inspection (model/inspection.c; grassflow inspect) ---------------------------------------------------- */

/* What layer `layer` (a Grassmann layer) does at each of T positions of one sequence: its terms, partner slot by
 * slot, and its gate. K = n_offsets (the list as the config gives it, the partners t - D) in a causal layer;
 * 2 n_offsets in a bidirectional one (the partners t - D of the list, then t + D of the list). C =
 * gf_grassmann_n_coords. Each array is the caller's (NULL: not wanted). */
typedef struct gf_grassmann_probe {
    float *terms;    /* (T, K, d): W f_D(t), offset D's feature projected without the bias (f = the normalised
                      * Pluecker vector p / max(|p|, eps) through plucker.weight, or [z_t; z_t-D] through
                      * pair.weight), 0 where t has no partner at D: g(t) = sum_D pi_D(t) terms + bias, pi_D(t) =
                      * 1 / n_valid(t) (offset_mix mean) or the learned softmax weight of D among t's partners */
    float *contrib;  /* (T, K): pi_D(t) |terms|, offset D's share of the mean without the bias */
    int *n_valid;    /* (T): |S_t|, the offsets whose partner exists */
    uint8_t *valid;  /* (T, K): 1 where t has a partner at offset D (t - D in the sequence and the window) */
    float *coord;    /* (T, C): the pi-weighted mean over S_t of |phat_k| (0 where S_t is empty); unused with
                      * plucker false */
    float *gate;     /* (T, d): a, as the forward computes it (untouched with gate false) */
    float *out;      /* (T, d): the mixer's output, as the forward's */
} gf_grassmann_probe;
/* Fill what p asks for from the layer's input inp (T, d) and its tensors w (param_specs order). 0, or -1 out of
 * memory (gf_last_error). */
int gf_grassmann_probe_run(const gf_config *cfg, int layer, float *const *w, const float *inp, int64_t T,
                           const gf_grassmann_probe *p);
/* The layer's Pluecker coordinates: heads x C(rank/heads, 2); 0 with plucker false. */
int64_t gf_grassmann_n_coords(const gf_config *cfg, int layer);
/* Coordinate k pairs reduced dimensions ci[k] < cj[k] (dimensions of z, over all heads). */
void gf_grassmann_coord_dims(const gf_config *cfg, int layer, int32_t *ci, int32_t *cj);

#endif
