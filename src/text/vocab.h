/* A vocabulary: token strings <-> ids, with an open-addressing hash table. */
#ifndef GF_DATA_VOCAB_H
#define GF_DATA_VOCAB_H

#include <stddef.h>
#include <stdint.h>

typedef struct gf_vocab {
    int64_t n, cap;
    char **str;        /* NUL-terminated copies */
    uint32_t *len;     /* byte lengths (strings may contain any byte but NUL) */
    int32_t *slots;    /* hash table of ids, -1 empty */
    int64_t n_slots;
} gf_vocab;

void gf_vocab_init(gf_vocab *v);
void gf_vocab_free(gf_vocab *v);
/* id of s[0..n), or -1 */
int32_t gf_vocab_find(const gf_vocab *v, const char *s, size_t n);
/* id of s[0..n), adding it if absent; -1 (with gf_last_error) when out of memory or over 2^31 entries */
int32_t gf_vocab_add(gf_vocab *v, const char *s, size_t n);
/* gf_vocab_add for entries a tokenizer stores as JSON text: one holding a NUL byte is an error (it would be
 * read back cut short). The byte tokenizer's 256 entries go through gf_vocab_add. */
int32_t gf_vocab_add_text(gf_vocab *v, const char *s, size_t n);
/* A hash of the whole vocabulary (strings in id order). */
uint64_t gf_vocab_hash(const gf_vocab *v);

/* A growable array of token ids. */
typedef struct gf_ids {
    int32_t *v;
    int64_t n, cap;
} gf_ids;
int gf_ids_push(gf_ids *a, int32_t id);
void gf_ids_free(gf_ids *a);

#endif
