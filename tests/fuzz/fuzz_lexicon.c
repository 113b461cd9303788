/* libFuzzer: pronunciation lexicons (src/tasks/g2p/lexicon.h), any bytes in either format (plain, or read as
 * .xz when the first byte is odd), with the options of the first byte's bits 1-4 (stress stripped, every
 * alternate kept, words with symbols kept, Festival's ax read as ah). What is read must hold together: the counts add up, total and
 * split by split; every entry's ids are within the inventories, its word valid UTF-8 with as many graphemes
 * as its ids, its split its word's; alternates chained to their word's first entry; the inventories sorted,
 * each name once. The entries are bounded (max_entries) so that a small xz file cannot take the fuzzer's
 * memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/utf8.h"
#include "tasks/g2p/lexicon.h"

static void check(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "fuzz_lexicon: %s\n", what);
        abort();
    }
}

static void check_names(char (*names)[GF_LEXICON_NAME], int32_t n) {
    for (int32_t k = 0; k < n; k++) {
        check(names[k][0] != '\0' && memchr(names[k], '\0', GF_LEXICON_NAME) != NULL, "an empty or unended name");
        check(k == 0 || strcmp(names[k - 1], names[k]) < 0, "an inventory not sorted, or a name twice");
    }
}

/* The entries' sums against the counts, and each count's parts against the whole. */
static void check_counts(const gf_lexicon *lex) {
    const gf_lexicon_counts *t = &lex->total;
    const int64_t dropped = lex->opts.alternates == GF_LEXICON_ALL ? t->duplicates : t->alternates;
    check(t->kept == lex->n && t->kept == t->entries - t->skipped - dropped, "kept != entries - skipped - dropped");
    check(t->duplicates <= t->alternates && t->words + t->alternates + t->skipped == t->entries,
          "words + alternates + skipped != entries");
    int64_t sum[6] = {0};
    for (int s = 0; s < 3; s++) {
        const gf_lexicon_counts *c = &lex->split[s];
        sum[0] += c->entries, sum[1] += c->kept, sum[2] += c->words, sum[3] += c->alternates;
        sum[4] += c->skipped, sum[5] += c->phonemes;
        check(c->phoneme_types <= lex->n_phonemes && c->grapheme_types <= lex->n_graphemes, "a split's kinds");
    }
    check(sum[0] == t->entries && sum[1] == t->kept && sum[2] == t->words && sum[3] == t->alternates &&
          sum[4] == t->skipped && sum[5] == t->phonemes, "the splits do not add up to the total");
}

static void check_entry(const gf_lexicon *lex, int64_t i, int64_t *words) {
    const gf_lexicon_entry *e = &lex->entry[i];
    const char *w = gf_lexicon_word(lex, i);
    const size_t n = strlen(w);
    int32_t graphemes = 0;
    for (size_t k = 0; k < n; graphemes++) {
        uint32_t c;
        const int l = gf_utf8_decode((const unsigned char *)w + k, n - k, &c);
        check(l > 0 && c >= 0x20, "a word that is not UTF-8 text");
        k += (size_t)l;
    }
    check(graphemes == e->n_graphemes && graphemes > 0 && e->n_phonemes > 0, "a word's graphemes or phonemes");
    for (int32_t k = 0; k < e->n_graphemes; k++)
        check(gf_lexicon_graphemes(lex, i)[k] >= 0 && gf_lexicon_graphemes(lex, i)[k] < lex->n_graphemes, "a grapheme id");
    for (int32_t k = 0; k < e->n_phonemes; k++)
        check(gf_lexicon_phonemes(lex, i)[k] >= 0 && gf_lexicon_phonemes(lex, i)[k] < lex->n_phonemes, "a phoneme id");
    check(e->pos >= -1 && e->pos < lex->n_pos, "a part of speech id");
    check(e->split == gf_lexicon_split_of(w, n), "an entry outside its word's split");
    check((e->alt == 0) == (e->first == i) && e->first <= i && !strcmp(gf_lexicon_word(lex, e->first), w),
          "an alternate not chained to its word's first entry");
    check(e->next == -1 || (e->next > i && lex->entry[e->next].first == e->first), "a broken chain of alternates");
    *words += e->alt == 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    if (size < 1) return 0;
    char path[80];
    snprintf(path, sizeof path, "/tmp/grassflow-fuzz-lexicon-%ld%s", (long)getpid(), data[0] & 1 ? ".out.xz" : ".out");
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fwrite(data + 1, 1, size - 1, f);
    fclose(f);
    gf_lexicon_opts o = {.strip_stress = data[0] & 2, .alternates = data[0] & 4 ? GF_LEXICON_ALL : GF_LEXICON_FIRST,
                         .keep_symbols = data[0] & 8, .cmu_schwa = data[0] & 16, .max_entries = 100000};
    gf_lexicon *lex = gf_lexicon_load(path, &o);
    if (lex) {
        check_names(lex->phoneme_name, lex->n_phonemes);
        check_names(lex->grapheme_name, lex->n_graphemes);
        check_names(lex->pos_name, lex->n_pos);
        check_counts(lex);
        int64_t words = 0;
        for (int64_t i = 0; i < lex->n; i++) check_entry(lex, i, &words);
        check(words == lex->total.words, "words != the entries with alt 0");
        char buf[16];
        check(lex->n == 0 || gf_lexicon_pron_text(lex, lex->n - 1, buf, sizeof buf) >= strlen(buf), "pron_text");
        gf_lexicon_free(lex);
    }
    unlink(path);
    return 0;
}
