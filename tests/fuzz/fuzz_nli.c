/* libFuzzer: SNLI files (any bytes, in any of the forms: jsonl, the official 14-column txt, the compact
 * TSV, CSV by name or by its header row; xz-compressed when the first byte is odd) through the streaming line reader and the NLI
 * reader (as a split of a folder, or when the first byte's bit 1 is set as a file of pairs read whole), then
 * what was kept through the pair source (BERT WordPiece with the shipped vocabulary). What is read must hold
 * together: every kept sentence valid UTF-8 (with a word in it, for a split), the text's length the sum of
 * the sentences', the counts adding up. The kept text is bounded (gf_corpus_set_max_text) so that
 * a small xz file that decompresses to much cannot take the fuzzer's memory. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tasks/lm/corpus.h"
#include "tasks/snli/nli_reader.h"
#include "text/tokenizer.h"
#include "text/unicode.h"
#include "tasks/snli/pair_source.h"

static gf_tokenizer *wp;

static void check(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "fuzz_nli: %s\n", what);
        abort();
    }
}

/* A kept sentence: valid UTF-8, no NUL (its strlen is its length), something but whitespace (unless all:
 * a file of pairs read whole keeps empty ones). */
static void check_sentence(const char *s, bool all) {
    size_t n = strlen(s), i = 0;
    int word = 0;
    while (i < n) {
        uint32_t c;
        int l = gf_utf8_decode((const unsigned char *)s + i, n - i, &c);
        check(l > 0, "a kept sentence is not valid UTF-8");
        int k = gf_uc_class(c);
        word |= k != GF_UC_SPACE && k != GF_UC_DROP && k != GF_UC_MN && k != GF_UC_MN0;
        i += (size_t)l;
    }
    check(word || all, "a kept sentence has no word");
}

static void check_split(const gf_nli_split *s) {
    if (s->all) {
        check(s->n == s->rows && s->n > 0, "a file read whole: rows != kept");
        check(s->per_label[0] + s->per_label[1] + s->per_label[2] + s->unlabelled == s->n, "the labels do not add up");
    } else {
        check(s->n >= 0 && s->n + s->unlabelled + s->empty == s->rows, "rows != kept + unlabelled + empty");
        check(s->per_label[0] + s->per_label[1] + s->per_label[2] == s->n, "the labels do not add up to the pairs");
    }
    int64_t at = 0;
    for (int64_t i = 0; i < s->n; i++) {
        check(s->premise[i] == at, "a pair's premise is not where the last one ended");
        check(s->label[i] >= (s->all ? -1 : 0) && s->label[i] < GF_NLI_CLASSES, "a label out of range");
        const char *p = gf_nli_premise(s, i), *h = gf_nli_hypothesis(s, i);
        check_sentence(p, s->all);
        check_sentence(h, s->all);
        at += (int64_t)(strlen(p) + strlen(h) + 2);
    }
    check(at == s->text_len, "the text is not the sum of its sentences");
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    if (size < 1) return 0;
    if (!wp) {
        wp = gf_wordpiece_load(getenv("GF_FUZZ_VOCAB") ? getenv("GF_FUZZ_VOCAB") : "data/bert-base-uncased/vocab.txt");
        gf_corpus_set_max_text((size_t)1 << 24);
    }
    char path[80];
    /* the name: *.tsv; with bit 2 set *.csv (bit 3 set) or *.txt, known by its first line */
    const char *name = !(data[0] & 4) ? ".tsv" : data[0] & 8 ? ".csv" : ".txt";
    snprintf(path, sizeof path, "/tmp/grassflow-fuzz-nli-%ld%s%s", (long)getpid(), name, data[0] & 1 ? ".xz" : "");
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fwrite(data + 1, 1, size - 1, f);
    fclose(f);
    gf_nli_split s;
    if ((data[0] & 2 ? gf_nli_read_pairs(path, &s) : gf_nli_read(path, &s)) == 0) {
        check_split(&s);
        gf_source *src = wp && s.n > 0 ? gf_pair_source_create(&s, wp, 1 + data[0] / 8, 1, NULL) : NULL;
        if (src) {
            gf_batch b;
            int64_t n = s.n < 4 ? s.n : 4;
            check(src->fill_eval(src->ctx, s.n - n, n, &b) == 0, "fill_eval failed on kept pairs");
            check(b.B == n && b.T >= 3, "a batch of the wrong shape");
            check(src->fill(src->ctx, 0, 0, n, &b) == 0, "fill failed on kept pairs");
            gf_source_free(src);
        }
        gf_nli_split_free(&s);
    }
    unlink(path);
    return 0;
}
