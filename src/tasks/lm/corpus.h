/* Corpora: three splits of token ids plus the tokenizer that made them, with a checked on-disk cache. */
#ifndef GF_DATA_CORPUS_H
#define GF_DATA_CORPUS_H

#include "text/tokenizer.h"

typedef struct gf_corpus {
    char *name;
    gf_tokenizer *tok;
    gf_ids split[3];
    int64_t lines[3];
    gf_text_counts counts[3]; /* per split: words, ids for unknown text, skipped characters (gf_text_counts) */
    char cache_note[8192];   /* what happened with the cache ("hit PATH", "wrote PATH", "disabled", a warning): a
                              * path of up to 4,095 bytes, whole */
    char note[4352];         /* where the splits come from when a user should know (wikitext-2-raw), or "" */
} gf_corpus;

/* spec: a built-in corpus name ("wikitext-2", "wikitext-2-raw", "tinyshakespeare", found under data_dir; the
 * second is the raw release's valid and test splits with the tokenized release's train split, c->note) or a
 * path: a
 * directory holding train/valid/test as .txt or .txt.xz (one file a split: train.txt beside train.txt.xz is
 * an error naming both), or one text file (split 90/5/5 at line
 * boundaries). tok_spec: "word", "char", "byte", "wordpiece:VOCAB" or NULL for the corpus default (word
 * for wikitext-2, char otherwise). fixed: use this tokenizer (e.g. a checkpoint's) instead of building
 * one; the corpus then borrows it. cache_dir: where tokenized corpora are cached (NULL: no cache). */
/* A WordPiece tokenizer loaded here (tok_spec "wordpiece:VOCAB") reads GF_CORPUS_UNK_TEXT as [UNK]
 * (gf_tokenizer_set_unk_text); a fixed one keeps the rule it was saved with. */
#define GF_CORPUS_UNK_TEXT "<unk>"
/* A char tokenizer (fixed) that lacks a character of the text skips it and counts it (counts[s].skipped);
 * the caller decides whether that is acceptable (the lm task refuses it for training). */
gf_corpus *gf_corpus_load(const char *spec, const char *data_dir, const char *tok_spec, const gf_tokenizer *fixed,
                          const char *cache_dir);
void gf_corpus_free(gf_corpus *c);
/* The most text one corpus file may hold: gf_corpus_max_text and gf_corpus_set_max_text, public (a sixth of
 * memory by default, since its tokens take up to 4 bytes per byte of text besides it). */
const char *gf_split_name(int split);
/* "train"/"valid"/"test" -> index, -1 otherwise */
int gf_split_index(const char *name);

/* Read a token cache file into c (splits and, unless fixed is given, the tokenizer). Returns 0, or -1 for
 * a file that is missing, stale (key), or malformed in any way (a cache is a file like any other); the
 * corpus loader then rebuilds it. Exposed for tests/fuzz. */
int gf_corpus_cache_load(gf_corpus *c, const char *path, uint64_t key, const gf_tokenizer *fixed);

#endif
