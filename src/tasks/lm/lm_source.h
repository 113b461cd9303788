/* The language-model task's evaluation protocols: how a split's tokens become scored examples (issue 51;
 * docs/usage.md, "Evaluation protocols"). Training examples are the same under every protocol. */
#ifndef GF_TASKS_LM_SOURCE_H
#define GF_TASKS_LM_SOURCE_H

#include "grassflow.h"

enum {
    GF_LM_STRIDE = 0, /* blocks of L + 1 with stride L: every token but the split's first predicted once */
    GF_LM_CHUNKS = 1, /* non-overlapping chunks of L, the remainder dropped, L - 1 predictions each */
};

/* The token-block source of ids[0..n) (gf_block_source_create) evaluated by blocks (GF_LM_STRIDE or
 * GF_LM_CHUNKS), with first and last (ids >= 0; -1: none) added once before the split's first token and after
 * its last ([CLS] and [SEP]: what BertTokenizer does to the split's text encoded as one string). The ids are
 * borrowed unless first or last is given (then the source keeps its own copy). NULL with gf_last_error. */
gf_source *gf_lm_source_create(const int32_t *ids, int64_t n, int64_t seq_len, uint64_t seed, int blocks,
                               int32_t first, int32_t last);

#endif
