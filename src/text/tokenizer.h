/* Tokenizers: text <-> token ids.
 *   word       whitespace-split words, <eos> at every line end (the pytorch/examples WikiText
 *              convention); vocabulary built from the training split in order of first appearance,
 *              unknown words map to <unk> (added if the training text lacks it).
 *   char       Unicode code points of UTF-8 text; vocabulary = the code points of the text it is built from
 *              (a corpus: all three splits), sorted; no unknown id (gf_tokenize_counted skips such characters).
 *   byte       the 256 byte values.
 *   wordpiece  BERT: basic tokenization (clean, CJK split, lower-case, strip accents, split punctuation)
 *              then greedy longest-match-first WordPiece with ## continuations and [UNK]
 *              (vocabulary from a BERT vocab.txt, id = line number). */
#ifndef GF_DATA_TOKENIZER_H
#define GF_DATA_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "text/vocab.h"
#include "grassflow_plugin.h"

/* The struct behind the public gf_tokenizer handle (include/grassflow.h declares its functions: loading,
 * building, JSON form, encode, decode, pieces, special ids). */
typedef struct gf_tokenizer {
    gf_tok_kind kind;
    gf_vocab vocab;
    int32_t unk_id;   /* -1 if none */
    int32_t eos_id;   /* word: "<eos>"; -1 otherwise */
    char *source;     /* wordpiece: the vocab file it came from (for messages) */
    /* wordpiece: a spelling read as the one unknown token wherever it is written ("<unk>", WikiText's
     * marker of an unknown word, which BERT's basic tokenizer would split into "<", "un", "##k", ">"), and
     * written back for it by decode; "" for none (every WordPiece tokenizer saved before this existed).
     * Saved with the tokenizer ("unk_text"), so a checkpoint reads and scores text as it did. */
    char unk_text[16];
} gf_tokenizer;

/* Append the ids of text[0..n) to out. Invalid UTF-8 (char, wordpiece) is an error naming the byte
 * offset; `what` names the text in messages (a path). gf_tokenizer_encode is this into a new array. */
int gf_tokenize(const gf_tokenizer *t, const char *text, size_t n, const char *what, gf_ids *out);
/* The same, also counting into *c (added to what it holds; see gf_text_counts): with c given, a character
 * outside a char vocabulary is skipped (no id) and counted instead of failing the text. */
int gf_tokenize_counted(const gf_tokenizer *t, const char *text, size_t n, const char *what, gf_ids *out,
                        gf_text_counts *c);
/* WordPiece only: the same, for one text (used by gf_tokenize). Appends; on error `out` is put back as
 * it was. Byte offsets in messages are relative to `text`. Special tokens written in the text ([UNK],
 * [CLS], [SEP], [PAD], [MASK], upper case) map to their own ids, as BertTokenizer.tokenize does. */
int gf_wordpiece_encode(const gf_tokenizer *t, const char *text, size_t n, const char *what, gf_ids *out);
/* The same, adding to *n_unk (if given) the words that became [UNK] because they could not be pieced
 * (a [UNK] written in the text is not one of them). */
int gf_wordpiece_encode_counted(const gf_tokenizer *t, const char *text, size_t n, const char *what, gf_ids *out,
                                int64_t *n_unk);
/* How token id extends a decoded text that is `len` bytes long and ends in byte `last`: whether a space
 * goes first, then piece[0..pl). false for an id outside the vocabulary (skipped). The one rule behind
 * gf_tokenizer_decode and the incremental gf_detok. */
bool gf_tok_piece_out(const gf_tokenizer *t, int32_t id, size_t len, char last, const char **piece, size_t *pl,
                      bool *space);

#endif
