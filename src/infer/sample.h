/* The sampler's internals that the tests hold it to: the naive reference and the fallback count. */
#ifndef GF_INFER_SAMPLE_H
#define GF_INFER_SAMPLE_H

#include <stdbool.h>
#include <stdint.h>

#include "grassflow_plugin.h"

typedef struct gf_sample_cand {
    float p;      /* exp((logit - max) / temperature) */
    int32_t id;
} gf_sample_cand;

/* The draw among candidates a (n) with the cuts top_k, top_p and the uniform number in [0, 1): the fast
 * path of gf_sampler_sample (reorders a; *fell_back tells whether it needed the full sort) ... */
int32_t gf_sample_cands(gf_sample_cand *a, int64_t n, int64_t top_k, double top_p, float uniform, bool *fell_back);
/* ... and the naive reference: every candidate sorted, then the cuts and the draw by running sums in
 * that order (what `grassflow generate` did before gf_sampler). */
int32_t gf_sample_cands_reference(gf_sample_cand *a, int64_t n, int64_t top_k, double top_p, float uniform);
/* The reference from logits (V): greedy, or candidates p = exp((logit - max) / temperature) drawn with the
 * uniform number (key, counter). buf (V) scratch. Assumes finite logits and valid parameters. */
int32_t gf_sample_reference(const float *logits, int64_t V, const gf_sampler_params *p, uint64_t key,
                            uint64_t counter, gf_sample_cand *buf);
/* The generator key of a sampler with this seed (its n-th draw uses counter n). */
uint64_t gf_sampler_key(uint64_t seed);
/* Draws of s that fell back to the full sort because a running sum came too close to a cut to decide it
 * without the reference's exact rounding (rare; tests/unit/test_sample.c counts them). */
int64_t gf_sampler_fallbacks(const gf_sampler *s);

#endif
