/* libFuzzer: corpus text (any bytes: invalid UTF-8, NULs, huge lines) through the text reader and every
 * tokenizer: word and char built from the text itself, bytes, and BERT WordPiece with the shipped
 * vocabulary; then back to text. */
#include <stdlib.h>
#include <string.h>

#include "data/tokenizer.h"
#include "io/text.h"

static gf_tokenizer *wp;

static void roundtrip(const gf_tokenizer *t, const char *text, size_t n) {
    gf_ids ids = {0};
    if (gf_tokenize(t, text, n, "fuzz", &ids) == 0) {
        char *back = gf_detokenize(t, ids.v, ids.n);
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
    char *text = gf_text_from_bytes("fuzz.txt", raw, size, (size_t)1 << 24, &n); /* takes raw */
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
