/* Tokenizers: text <-> token ids.
 *   word       whitespace-split words, <eos> at every line end (the pytorch/examples WikiText
 *              convention); vocabulary built from the training split in order of first appearance,
 *              unknown words map to <unk> (added if the training text lacks it).
 *   char       Unicode code points of UTF-8 text; vocabulary = the training split's code points, sorted.
 *   byte       the 256 byte values.
 *   wordpiece  BERT: basic tokenization (clean, CJK split, lower-case, strip accents, split punctuation)
 *              then greedy longest-match-first WordPiece with ## continuations and [UNK]
 *              (vocabulary from a BERT vocab.txt, id = line number). */
#ifndef GF_DATA_TOKENIZER_H
#define GF_DATA_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data/vocab.h"

typedef enum { GF_TOK_WORD = 0, GF_TOK_CHAR, GF_TOK_BYTE, GF_TOK_WORDPIECE } gf_tok_kind;

typedef struct gf_tokenizer {
    gf_tok_kind kind;
    gf_vocab vocab;
    int32_t unk_id;   /* -1 if none */
    int32_t eos_id;   /* word: "<eos>"; -1 otherwise */
    char *source;     /* wordpiece: the vocab file it came from (for messages) */
} gf_tokenizer;

const char *gf_tok_kind_name(gf_tok_kind k);

/* word / char tokenizers with a vocabulary built from training text */
gf_tokenizer *gf_tokenizer_build(gf_tok_kind kind, const char *train_text, size_t n);
/* a byte tokenizer */
gf_tokenizer *gf_tokenizer_bytes(void);
/* a WordPiece tokenizer from a BERT vocab.txt (plain or .xz); errors name the file and line */
gf_tokenizer *gf_wordpiece_load(const char *vocab_path);
/* a tokenizer from its saved form (kind + vocabulary as a JSON list of strings), as checkpoints store it */
gf_tokenizer *gf_tokenizer_from_json(const char *json, const char *source);
/* the saved form (malloc'd JSON: {"kind": "...", "vocab": [...]}) */
char *gf_tokenizer_to_json(const gf_tokenizer *t);
void gf_tokenizer_free(gf_tokenizer *t);

/* Append the ids of text[0..n) to out. Invalid UTF-8 (char, wordpiece) is an error naming the byte
 * offset; `what` names the text in messages (a path). */
int gf_tokenize(const gf_tokenizer *t, const char *text, size_t n, const char *what, gf_ids *out);
/* WordPiece only: the same, for one text (used by gf_tokenize). Appends; on error `out` is put back as
 * it was. Byte offsets in messages are relative to `text`. Special tokens written in the text ([UNK],
 * [CLS], [SEP], [PAD], [MASK], upper case) map to their own ids, as BertTokenizer.tokenize does. */
int gf_wordpiece_encode(const gf_tokenizer *t, const char *text, size_t n, const char *what, gf_ids *out);

/* Text of ids (malloc'd): words joined by spaces with <eos> as a newline; chars and bytes concatenated;
 * WordPiece pieces joined by spaces with ## continuations glued to the previous piece. */
char *gf_detokenize(const gf_tokenizer *t, const int32_t *ids, int64_t n);

#endif
