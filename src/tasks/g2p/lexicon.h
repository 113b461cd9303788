/* Pronunciation lexicons for grapheme-to-phoneme conversion (issue 52): a file of words and their phonemes,
 * read into entries of grapheme ids and phoneme ids with a fixed train/valid/test split by word.
 *
 * Formats, told apart by the first line that is not blank or a comment (plain or .xz, as every data file):
 *   Festival's lexicon format (festlex-cmu's /usr/share/festival/dicts/cmu/cmudict-0.4.out):
 *       MNCL                                             a first line of its own ("compiled lexicon")
 *       ("abandon" nil (((ax) 0) ((b ae n) 1) ((d ax n) 0)))
 *       ("lead" n (((l eh d) 1)))                        one entry a line: the word in double quotes (\" and
 *       ("lead" v (((l iy d) 1)))                        \\ escape a quote and a backslash), its part of speech
 *                                                        (a symbol; nil: none), its syllables, each its phonemes
 *                                                        (letters, digits, _) and a stress digit 0, 1 or 2
 *                                                        (cmudict-0.4.out: 0 or 1). Comment lines begin with ;.
 *   the plain CMU Pronouncing Dictionary (cmudict-0.7b, cmudict.dict):
 *       ;;; a comment                                    comment lines begin with ;;;
 *       ABANDON  AH0 B AE1 N D AH0 N                     the word, spaces or tabs, its phonemes (1 to 4 capital
 *       ABUSE(2)  AH0 B Y UW1 Z                          letters, a vowel's with a stress digit 0, 1 or 2);
 *       A(1)  EY1                                        WORD(1), WORD(2), ...: alternates of WORD;
 *       d'artagnan D AH0 T AE1 NG Y AH0 N # foreign      "# ..." after the phonemes is a comment.
 *   A line that begins with "(\"" (or is MNCL) makes the file Festival's; one that begins as WORD PHONEME, CMUdict's;
 *   anything else is "not a pronunciation lexicon". A UTF-8 byte order mark and blank lines are skipped; in a
 *   CMUdict file a line beginning with ; but not ;;; is an entry (cmudict-0.7b's ;SEMI-COLON).
 *
 * Entries:
 *   - Words are lower-cased (ASCII A-Z; other characters stay as they are) and must be UTF-8 without control
 *     characters. A word with a character outside a-z and ' (cmudict-0.7b's A., 3-D, A42128, #SHARP-SIGN) is
 *     skipped and counted (skipped), unless keep_symbols: then each of its characters is a grapheme too.
 *   - Phoneme names are the file's, lower-cased: ARPAbet in both (Festival's cmudict writes unstressed AH as
 *     ax). Stress kept (the default): a vowel carries its stress digit, ae1, ax0; CMUdict's digits are its
 *     vowels', Festival's are its syllables' and go to the syllable's vowels (aa ae ah ao aw ax axr ay eh er ey
 *     ih ix iy ow oy uh uw; cmudict-0.4's 115 syllables without one are all unstressed: a stressed syllable
 *     without a vowel is counted, stress_lost). strip_stress: no digits (ae, ax). cmu_schwa: Festival's ax (every
 *     one of cmudict-0.4.out's is in an unstressed syllable: CMUdict's AH0) is read as ah, so that both formats
 *     name it alike: with strip_stress, CMUdict's 39 phonemes, those the published G2P results score.
 *   - Alternates (a word again: Festival's entries of one word with different parts of speech, CMUdict's
 *     WORD(2)) are counted. GF_LEXICON_FIRST (the default) keeps the word's first pronunciation in the file, as
 *     training and single-reference scoring want (CMUdict lists its primary one first); GF_LEXICON_ALL keeps
 *     each, chained by first/next, for "any of them" scoring, but not one equal to a pronunciation kept for the
 *     word already (after strip_stress): those are counted (duplicates) and dropped.
 *   - The phoneme, grapheme and part-of-speech inventories are sorted by name (bytes), ids 0.. in that order:
 *     the same names get the same ids whatever the file's order.
 *
 * The split is a pure function of the lower-cased word: h = fmix64(FNV-1a-64(word)) (MurmurHash3's finalizer
 * on the FNV-1a hash of its UTF-8 bytes, seed 0: gf_lexicon_hash), h % 100 < 90 train, < 95 valid, else test.
 * Every pronunciation of a word is in its word's split, whichever file it is read from (the shipped sample's
 * test words are test words of the full file). The finalizer matters: FNV-1a's low bits are a weak function of
 * the bytes' low bits (h mod 4 depends on nothing else), and mod 100 would inherit it.
 *
 * Limits (a hostile file costs an error, never gigabytes): a line of GF_LEXICON_MAX_LINE bytes, a word of
 * GF_LEXICON_MAX_SYMBOLS graphemes, a pronunciation of as many phonemes, GF_LEXICON_MAX_ALTS pronunciations of
 * one word, GF_LEXICON_MAX_PHONEMES phoneme names, GF_LEXICON_MAX_GRAPHEMES graphemes, GF_LEXICON_MAX_POS parts
 * of speech, opts.max_entries (default GF_LEXICON_MAX_ENTRIES) entries, 256 MiB for the entries kept (64 bytes
 * an entry, 4 a grapheme or phoneme, and the words' text: cmudict-0.4.out's take 13 MiB); an .xz file
 * decompresses to at most gf_xz_bound of its size (io/text.h). */
#ifndef GF_TASKS_G2P_LEXICON_H
#define GF_TASKS_G2P_LEXICON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grassflow_plugin.h" /* GF_TRAIN, GF_VALID, GF_TEST, GF_PATH_MAX */

#define GF_LEXICON_MAX_LINE 4096        /* bytes; cmudict-0.4.out's longest line is 137 */
#define GF_LEXICON_MAX_SYMBOLS 128      /* graphemes of a word, phonemes of a pronunciation (its longest: 20, 20) */
#define GF_LEXICON_MAX_ALTS 64          /* pronunciations of one word (its most: 3) */
#define GF_LEXICON_MAX_PHONEMES 256     /* distinct phoneme names (ARPAbet: 39, 69 with stress digits) */
#define GF_LEXICON_MAX_GRAPHEMES 1024   /* distinct graphemes (27 without keep_symbols) */
#define GF_LEXICON_MAX_POS 64           /* distinct parts of speech (cmudict-0.4.out: 8 besides nil) */
#define GF_LEXICON_MAX_ENTRIES 2000000  /* entries (CMUdict 0.7b: about 134,000); opts.max_entries: another */
#define GF_LEXICON_NAME 16              /* bytes of a phoneme or part-of-speech name, with its NUL */
#define GF_LEXICON_VALID_FROM 90        /* h % 100: [0, 90) train, [90, 95) valid, [95, 100) test */
#define GF_LEXICON_TEST_FROM 95

enum { GF_LEXICON_FIRST = 0, GF_LEXICON_ALL = 1 };

typedef struct gf_lexicon_opts {
    bool strip_stress;    /* phonemes without stress digits (ae); default: with them (ae1) */
    bool cmu_schwa;       /* Festival's ax read as ah, CMUdict's name for it (ah0 with stress); default: ax */
    int alternates;       /* GF_LEXICON_FIRST (default) or GF_LEXICON_ALL */
    bool keep_symbols;    /* keep words with characters outside a-z and '; default: skip and count them */
    int64_t max_entries;  /* at most this many entries (0: GF_LEXICON_MAX_ENTRIES) */
} gf_lexicon_opts;

typedef struct gf_lexicon_entry {
    int64_t word;         /* offset of the word in lex->text: lower-cased UTF-8, NUL-terminated */
    int64_t graphemes;    /* offset of its n_graphemes grapheme ids in lex->grapheme_ids */
    int64_t phonemes;     /* offset of its n_phonemes phoneme ids in lex->phoneme_ids */
    int64_t first;        /* index of the word's first kept entry (the entry itself when alt is 0) */
    int64_t next;         /* index of the word's next kept pronunciation (GF_LEXICON_ALL), or -1 */
    int64_t line;         /* the line of the file it was read from (1-based) */
    int32_t n_graphemes, n_phonemes;
    int16_t pos;          /* part of speech: index in lex->pos_name, -1 for none (nil, or a CMUdict file) */
    uint8_t split;        /* GF_TRAIN, GF_VALID or GF_TEST */
    uint8_t alt;          /* 0: the word's first pronunciation; 1, 2, ...: later ones kept (GF_LEXICON_ALL) */
} gf_lexicon_entry;

/* What a file held, in all and split by split (a skipped entry counts in its word's split too). */
typedef struct gf_lexicon_counts {
    int64_t entries;      /* lines holding an entry: kept + skipped + alternates dropped */
    int64_t kept;         /* entries kept */
    int64_t words;        /* distinct words kept */
    int64_t alternates;   /* entries of a word read before (kept with GF_LEXICON_ALL unless duplicates) */
    int64_t duplicates;   /* alternates whose phonemes equal those of one kept for the word */
    int64_t skipped;      /* entries of a word with a character outside a-z and ' (without keep_symbols) */
    int64_t graphemes, phonemes;          /* in the entries kept */
    int32_t grapheme_types, phoneme_types; /* distinct ones in the entries kept */
} gf_lexicon_counts;

typedef struct gf_lexicon {
    char path[GF_PATH_MAX];
    const char *format;   /* "festival" or "cmudict" */
    gf_lexicon_opts opts;
    int64_t n;            /* entries kept, in file order */
    gf_lexicon_entry *entry;
    char *text;           /* the words */
    int32_t *grapheme_ids, *phoneme_ids;
    int32_t n_phonemes, n_graphemes, n_pos;           /* inventory sizes */
    char (*phoneme_name)[GF_LEXICON_NAME];            /* (n_phonemes) sorted */
    char (*grapheme_name)[GF_LEXICON_NAME];           /* (n_graphemes) one UTF-8 character each, sorted */
    char (*pos_name)[GF_LEXICON_NAME];                /* (n_pos) sorted */
    gf_lexicon_counts total, split[3];
    int64_t stress_lost;  /* Festival: stressed syllables without a vowel to carry the digit */
    int64_t text_len, text_cap, grapheme_cap, phoneme_cap, n_grapheme_ids, n_phoneme_ids, cap;
} gf_lexicon;

void gf_lexicon_opts_default(gf_lexicon_opts *o);
/* Read path (either format; .xz decompressed) with opts (NULL: the defaults). NULL after an error naming the
 * file, the line, what was expected and a HINT: a malformed line, a file that is no lexicon (or is empty, or
 * has no entry), invalid UTF-8 or a control character in a word, a NUL byte, a limit passed. */
gf_lexicon *gf_lexicon_load(const char *path, const gf_lexicon_opts *opts);
void gf_lexicon_free(gf_lexicon *lex);

/* fmix64(FNV-1a-64 of word[0..n) from seed): the split's hash with seed 0 (scripts/make_cmudict_subset.py
 * computes the same in Python). */
uint64_t gf_lexicon_hash(const char *word, size_t n, uint64_t seed);
/* The split of a lower-cased word: GF_TRAIN, GF_VALID or GF_TEST. */
int gf_lexicon_split_of(const char *word, size_t n);

static inline const char *gf_lexicon_word(const gf_lexicon *lex, int64_t i) { return lex->text + lex->entry[i].word; }
static inline const int32_t *gf_lexicon_phonemes(const gf_lexicon *lex, int64_t i) {
    return lex->phoneme_ids + lex->entry[i].phonemes;
}
static inline const int32_t *gf_lexicon_graphemes(const gf_lexicon *lex, int64_t i) {
    return lex->grapheme_ids + lex->entry[i].graphemes;
}
/* Entry i's phonemes as names between single spaces ("ax0 b ae1 n") into buf (cap bytes, cut if short): its
 * length as snprintf gives it. */
size_t gf_lexicon_pron_text(const gf_lexicon *lex, int64_t i, char *buf, size_t cap);

#endif
