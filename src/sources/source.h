/* Helpers shared by data sources (the interface itself, gf_source, is public: include/grassflow.h). */
#ifndef GF_SOURCES_SOURCE_H
#define GF_SOURCES_SOURCE_H

#include "grassflow_plugin.h"

/* The example order of an epoch: perm (n) becomes a Fisher-Yates shuffle of 0..n-1 keyed by
 * (seed, epoch). Any source that shuffles uses it, so that orders depend on (seed, epoch) alone. */
void gf_epoch_order(int64_t *perm, int64_t n, uint64_t seed, int64_t epoch);

/* 0 if examples [first, first + n) are a range of a source holding count (first >= 0, n >= 1), else -1 with
 * a message that begins with `what` ("pair source:", "block source: training"). */
int gf_source_range(const char *what, int64_t first, int64_t n, int64_t count);
/* perm (n) as epoch's order (gf_epoch_order), computed only when *cached (-1: none yet) is another epoch;
 * -1 for an epoch below 0, the message beginning with `what`. */
int gf_epoch_perm(const char *what, int64_t *perm, int64_t *cached, int64_t n, uint64_t seed, int64_t epoch);

/* 0 if s is a source the library can use (a version it knows, the required members set, both or neither
 * evaluation members), else -1 with a message naming `what` ("the training source"). */
int gf_source_validate(const gf_source *s, const char *what);

/* gf_source_n_eval, gf_source_fill and gf_source_fill_eval are public (grassflow.h). */

/* gf_feature_source_create with owns false: inner stays the caller's (the trainer's cache over the sources
 * it is given). */
gf_source *gf_feature_source_wrap(gf_model *m, gf_source *inner, gf_source_use use, int64_t batch, size_t max_bytes,
                                  size_t *bytes, bool owns);

/* 0 if b is a batch the model can take (B, T >= 1, ids set, targets set if need_targets, 0 <= n_targets
 * <= B*T), else -1 with a message naming `what` ("the training source"). */
int gf_batch_check(const gf_batch *b, bool need_targets, const char *what);

#endif
