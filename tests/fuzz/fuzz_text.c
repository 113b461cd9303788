/* libFuzzer: corpus text (any bytes: invalid UTF-8, NULs, huge lines) through the text reader and every
 * tokenizer: word and char built from the text itself, bytes, and BERT WordPiece with the shipped
 * vocabulary; then back to text, whole and one token at a time (the two must give the same bytes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/tokenizer.h"
#include "io/text.h"

static gf_tokenizer *wp;

/* The incremental detokeniser's pieces of ids (n) must add up to the whole decode back (len). */
static void check_incremental(const gf_tokenizer *t, const int32_t *ids, int64_t n, const char *back, size_t len) {
    gf_detok *d = gf_detok_create(t, NULL, 0);
    if (!d) return;
    size_t at = 0, pl;
    for (int64_t i = 0; i <= n; i++) {
        const char *p = i < n ? gf_detok_push(d, ids[i], &pl) : gf_detok_flush(d, &pl);
        if (at + pl > len || memcmp(back + at, p, pl)) {
            fprintf(stderr, "fuzz_text: incremental detokenisation differs from the whole decode at byte %zu\n", at);
            abort();
        }
        at += pl;
    }
    if (at != len) abort();
    gf_detok_free(d);
}

static void roundtrip(const gf_tokenizer *t, const char *text, size_t n) {
    gf_ids ids = {0};
    if (gf_tokenize(t, text, n, "fuzz", &ids) == 0) {
        size_t len;
        char *back = gf_tokenizer_decode(t, ids.v, ids.n, &len);
        if (back) check_incremental(t, ids.v, ids.n, back, len);
        free(back);
    }
    gf_ids_free(&ids);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    if (!wp) wp = gf_wordpiece_load(getenv("GF_FUZZ_VOCAB") ? getenv("GF_FUZZ_VOCAB") : "data/bert-base-uncased/vocab.txt");
    unsigned char *raw = malloc(size + 1); /* gf_text_from_bytes wants room for a NUL */
    if (!raw) return 0;
    memcpy(raw, data, size);
    size_t n;
    char *text = gf_text_from_bytes("fuzz.txt", raw, size, (size_t)1 << 24, NULL, &n); /* takes raw */
    if (!text) return 0;
    for (int k = 0; k < 2; k++) {
        gf_tokenizer *t = gf_tokenizer_build(k ? GF_TOK_CHAR : GF_TOK_WORD, text, n);
        if (t) roundtrip(t, text, n);
        gf_tokenizer_free(t);
    }
    gf_tokenizer *b = gf_tokenizer_bytes();
    if (b) roundtrip(b, text, n);
    gf_tokenizer_free(b);
    if (wp) roundtrip(wp, text, n);
    free(text);
    return 0;
}
