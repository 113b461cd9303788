/* An encoder-decoder's decoder streamed over one source (gf_model_decode, infer/decode.c): the encoder runs
 * once, its output and what the decoder layers take from it alone (a cross op's keys and values; a recurrent
 * decoder's own keys, in its mem_work) are kept here, and each hypothesis is a gf_stream over them that feeds
 * one target token at a time, its layers' states carried as generate carries them (O(1) for Grassmann and the
 * GRUs). tests/unit/test_decode.c holds its logits to the full forward's and its decodings to those of full
 * recomputes. */
#ifndef GF_INFER_SOURCE_MEMORY_H
#define GF_INFER_SOURCE_MEMORY_H

#include <stdbool.h>
#include <stdint.h>

#include "grassflow.h"
#include "model/block.h"

typedef struct gf_source_memory {
    block_memory bm;              /* (1, S, d): the encoder's output (through enc_ln), no padding */
    float *x;
    float *kv[GF_MAX_LAYERS];     /* a decoder layer with a cross op: its keys then values, (S, d) each */
    float *work[GF_MAX_LAYERS];   /* a decoder layer whose mixer reads memory: its mem_work (gf_mixer_step) */
    int first;                    /* the decoder's first layer */
} gf_source_memory;

/* Whether every decoder layer of encoder-decoder m can stream (its mixer has a step) and m has no
 * evaluation-time overrides; when not, gf_model_decode recomputes full forwards. */
bool gf_decoder_streams(const gf_model *m);
/* The encoder over source[0..S) (one forward of m, whose activations it overwrites), and the keys. NULL:
 * gf_last_error. */
gf_source_memory *gf_source_memory_create(gf_model *m, const int32_t *source, int64_t S);
void gf_source_memory_free(gf_source_memory *mem);

/* A stream of m's decoder over mem (which must outlive it), at position 0. NULL: gf_last_error. */
gf_stream *gf_stream_create_decoder(const gf_model *m, const gf_source_memory *mem);
/* dst becomes what src is (its states and position): a hypothesis taken over from its parent. Both are
 * streams of the same model (and memory). 0, or -1 (out of memory growing dst). */
int gf_stream_copy(gf_stream *dst, const gf_stream *src);

/* gf_model_decode, streamed (every decoder layer must stream: gf_decoder_streams) or by full forwards of the
 * live hypotheses at every step (any model; the reference); and gf_ensemble_decode the same way. */
int gf_model_decode_by(gf_model *m, const int32_t *source, int64_t S, const gf_decode_opts *opts, bool streamed,
                       int32_t *out, int64_t *n, double *score);
int gf_ensemble_decode_by(gf_model *const *models, int64_t K, const int32_t *source, int64_t S,
                          const gf_decode_opts *opts, bool streamed, int32_t *out, int64_t *n, double *score);

#endif
