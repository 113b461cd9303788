/* A data source of sequence pairs for an encoder-decoder (docs/model.md, "Encoder-decoders"): example i is a
 * source of ids and a target of ids. A batch holds B examples: their sources padded to the longest
 * (gf_batch.source, source_mask), the decoder's inputs [bos, y1 .. yk] and targets [y1 .. yk, eos] padded to
 * the longest target + 1 (ids, targets -1 past the end, mask). Training order: gf_epoch_order of (seed, epoch);
 * evaluation: the examples in order. Any task with sequence pairs (grapheme-to-phoneme, the synthetic tasks)
 * makes its examples and hands them here. */
#ifndef GF_SOURCES_SEQ2SEQ_SOURCE_H
#define GF_SOURCES_SEQ2SEQ_SOURCE_H

#include "grassflow_plugin.h"

typedef struct gf_seq2seq_pairs {
    int64_t n;                     /* examples */
    const int32_t *src, *tgt;      /* every example's ids, one after another */
    const int64_t *src_start;      /* (n + 1): example i's source is src[src_start[i] .. src_start[i + 1]) */
    const int64_t *tgt_start;      /* (n + 1): its target likewise in tgt */
    int64_t source_vocab, target_vocab; /* ids are below these (checked against a model's) */
    int32_t bos, eos;              /* the decoder's first input, the target's end */
    const char *name;              /* what the examples are, for messages ("g2p train") */
} gf_seq2seq_pairs;

/* What a task of sequence pairs does to a config (its configure): refuse one that is not an encoder-decoder
 * (naming `task` and the presets that are one), and with vocabularies known (target_vocab > 0) set its
 * vocab_size, source_vocab, and max_len to at least longest with learned positions. 0, or -1 (gf_fail). */
int gf_seq2seq_configure(gf_config *cfg, const char *task, int64_t source_vocab, int64_t target_vocab, int64_t longest);

/* A source over a copy of p (p may go once it returns). NULL (gf_last_error): no example, an empty source, an
 * id out of range, out of memory. */
gf_source *gf_seq2seq_source_create(const gf_seq2seq_pairs *p, uint64_t seed);

#endif
