/* The sentence-pair classification source (SNLI) over pairs read by tasks/snli/nli_reader.h. */
#ifndef GF_SOURCES_PAIR_SOURCE_H
#define GF_SOURCES_PAIR_SOURCE_H

#include "tasks/snli/nli_reader.h"
#include "grassflow_plugin.h"

typedef struct gf_pair_source_stats {
    int64_t pairs;
    int64_t truncated;   /* pairs with a sentence cut to max_sent pieces */
    int64_t tokens;      /* with [CLS] and two [SEP] per pair */
    int64_t longest;     /* the longest example, in tokens */
} gf_pair_source_stats;

/* Examples: [CLS] premise [SEP] hypothesis [SEP] in the ids of tok (which must have [CLS], [SEP] and
 * [PAD]: a BERT WordPiece vocabulary), each sentence cut to its first max_sent pieces; segments 0 then
 * 1; the label as target. Training order: shuffled per epoch by (seed, epoch); evaluation: file order.
 * sp and tok are only read while the source is made. stats (may be NULL) says what was cut. */
gf_source *gf_pair_source_create(const gf_nli_split *sp, const gf_tokenizer *tok, int64_t max_sent, uint64_t seed,
                                gf_pair_source_stats *stats);

/* One pair as the source lays it out: gf_nli_encode_pair (public, include/grassflow.h). */

#endif
