/* Pronunciation lexicons (lexicon.h): Festival's lexicon format and the plain CMU Pronouncing Dictionary,
 * streamed line by line (io/lines.h, plain or .xz) into entries of grapheme and phoneme ids. */
#include "tasks/g2p/lexicon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/utf8.h"
#include "io/lines.h"
#include "io/text.h"

#define MAX_WORD_BYTES (4 * GF_LEXICON_MAX_SYMBOLS)
#define MAX_BYTES ((int64_t)256 << 20) /* what the kept entries may take: 20 times cmudict-0.4.out's */
#define FESTIVAL_FORM "(\"word\" pos (((phonemes) stress) ...))"
#define FESTIVAL_HINT "a Festival lexicon holds one entry a line, e.g. (\"abandon\" nil (((ax) 0) ((b ae n) 1) ((d ax n) " \
                      "0))); a comment line begins with ;"
#define CMUDICT_FORM "WORD  PHONEME PHONEME ..."
#define CMUDICT_HINT "a CMUdict file holds one entry a line, e.g. ABANDON  AH0 B AE1 N D AH0 N (an alternate: ABUSE(2)  " \
                     "AH0 B Y UW1 Z); a comment line begins with ;;;"
#define LIMIT_HINT "a corrupt or hostile file? A pronunciation lexicon has one short entry a line"

/* A set of names (phonemes, graphemes or parts of speech), ids in the order first seen, found by hash. */
typedef struct {
    char (*name)[GF_LEXICON_NAME];
    int32_t n, max;
    int32_t *slot; /* (mask + 1) ids, -1 for none */
    uint32_t mask;
} inventory;

typedef struct {
    gf_lexicon *lex;
    gf_lines *r;
    int64_t max_entries;
    inventory phon, graph, pos;
    int64_t *word_slot; /* (word_mask + 1): the first kept entry of a word, -1 for none */
    int32_t *word_seen; /* pronunciations of that word read so far */
    uint64_t word_mask;
    int64_t n_words;
    const char *line; /* the line being read */
    size_t len;
    char word[MAX_WORD_BYTES + 1], lower[MAX_WORD_BYTES + 1]; /* as the file has it (unescaped); lower-cased */
    size_t word_len;
    char graph_name[GF_LEXICON_MAX_SYMBOLS][8];
    char phon_name[GF_LEXICON_MAX_SYMBOLS][GF_LEXICON_NAME];
    int n_graph, n_phon;
    char pos_name[GF_LEXICON_NAME]; /* "" for none */
    int lost;                       /* stressed syllables without a vowel in this entry */
} reader;

void gf_lexicon_opts_default(gf_lexicon_opts *o) { memset(o, 0, sizeof *o); }

uint64_t gf_lexicon_hash(const char *word, size_t n, uint64_t seed) {
    uint64_t h = gf_hash_bytes(word, n, seed);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

int gf_lexicon_split_of(const char *word, size_t n) {
    const uint64_t b = gf_lexicon_hash(word, n, 0) % 100;
    return b < GF_LEXICON_VALID_FROM ? GF_TRAIN : b < GF_LEXICON_TEST_FROM ? GF_VALID : GF_TEST;
}

static int inv_init(inventory *v, int32_t max) {
    v->n = 0;
    v->max = max;
    v->mask = 1;
    while (v->mask < 2u * (uint32_t)max) v->mask <<= 1;
    v->mask--;
    v->name = calloc((size_t)max, sizeof *v->name);
    v->slot = malloc(((size_t)v->mask + 1) * sizeof *v->slot);
    if (!v->name || !v->slot) return gf_fail("out of memory");
    memset(v->slot, 0xff, ((size_t)v->mask + 1) * sizeof *v->slot);
    return 0;
}

static void inv_free(inventory *v) {
    free(v->name);
    free(v->slot);
}

/* The id of name s (shorter than GF_LEXICON_NAME), added if new; -1 when v is full. */
static int32_t inv_id(inventory *v, const char *s) {
    const size_t n = strlen(s);
    uint32_t h = (uint32_t)gf_lexicon_hash(s, n, 0) & v->mask;
    for (; v->slot[h] >= 0; h = (h + 1) & v->mask)
        if (!strcmp(v->name[v->slot[h]], s)) return v->slot[h];
    if (v->n == v->max) return -1;
    memcpy(v->name[v->n], s, n + 1);
    v->slot[h] = v->n;
    return v->n++;
}

static const char *path_of(const reader *rd) { return gf_show_name(rd->lex->path); }
static long long line_of(const reader *rd) { return (long long)gf_lines_number(rd->r); }

/* A malformed line: what was expected at byte at (0-based) and what is there instead. -1. */
static int bad(const reader *rd, size_t at, const char *what) {
    const bool fest = !strcmp(rd->lex->format, "festival");
    char ex[64] = "";
    if (at < rd->len) {
        const size_t k = rd->len - at < 40 ? rd->len - at : 40;
        memcpy(ex, rd->line + at, k);
        snprintf(ex + k, sizeof ex - k, "%s", rd->len - at > 40 ? "..." : "");
    }
    return gf_fail("%s:%lld: expected %s at byte %zu, found %s%s%s; an entry is %s\nHINT: %s", path_of(rd), line_of(rd),
                   what, at + 1, at < rd->len ? "\"" : "the end of the line", at < rd->len ? gf_show_name(ex) : "",
                   at < rd->len ? "\"" : "", fest ? FESTIVAL_FORM : CMUDICT_FORM, fest ? FESTIVAL_HINT : CMUDICT_HINT);
}

static bool is_space(char c) { return c == ' ' || c == '\t'; }
static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_sym(char c) { return is_alpha(c) || (c >= '0' && c <= '9') || c == '_'; }
static char lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c + 32) : c; }
static size_t skip_space(const reader *rd, size_t i) {
    while (i < rd->len && is_space(rd->line[i])) i++;
    return i;
}
static bool at(const reader *rd, size_t i, char c) { return i < rd->len && rd->line[i] == c; }

/* Festival: a symbol (a phoneme or a part of speech): letters, digits and _ (a letter first), lower-cased into
 * out, at most room - 1 of them; *i moves past it. */
static int fest_symbol(const reader *rd, size_t *i, char *out, size_t room, const char *what) {
    size_t k = *i, n = 0;
    if (k >= rd->len || !is_alpha(rd->line[k])) return bad(rd, k, what);
    while (k < rd->len && is_sym(rd->line[k])) {
        if (n + 1 == room) return bad(rd, *i, what);
        out[n++] = lower(rd->line[k++]);
    }
    if (k < rd->len && !is_space(rd->line[k]) && rd->line[k] != '(' && rd->line[k] != ')') return bad(rd, k, what);
    out[n] = '\0';
    *i = k;
    return 0;
}

/* Festival: "word", \" and \\ escaping a quote and a backslash, into rd->word. */
static int fest_word(reader *rd, size_t *i) {
    size_t k = *i;
    if (!at(rd, k, '"')) return bad(rd, k, "the word in double quotes");
    rd->word_len = 0;
    for (k++;; k++) {
        if (k >= rd->len) return bad(rd, k, "the double quote that ends the word");
        if (rd->line[k] == '"') break;
        if (rd->line[k] == '\\' && ++k >= rd->len) return bad(rd, k, "a character after the backslash");
        if (rd->word_len == MAX_WORD_BYTES)
            return gf_fail("%s:%lld: the word is longer than %d bytes; expected a word of at most %d characters (%s)",
                           path_of(rd), line_of(rd), MAX_WORD_BYTES, GF_LEXICON_MAX_SYMBOLS, LIMIT_HINT);
        rd->word[rd->word_len++] = rd->line[k];
    }
    rd->word[rd->word_len] = '\0';
    *i = k + 1;
    return 0;
}

static bool is_vowel(const char *p) {
    static const char *const vowels[] = {"aa", "ae", "ah", "ao", "aw", "ax", "axr", "ay", "eh",
                                         "er", "ey", "ih", "ix", "iy", "ow", "oy", "uh", "uw"};
    for (size_t k = 0; k < sizeof vowels / sizeof *vowels; k++)
        if (!strcmp(p, vowels[k])) return true;
    return false;
}

static int too_many_phonemes(const reader *rd) {
    return gf_fail("%s:%lld: more than %d phonemes in the pronunciation; expected a word's (cmudict-0.4's longest has 20; "
                   "%s)", path_of(rd), line_of(rd), GF_LEXICON_MAX_SYMBOLS, LIMIT_HINT);
}

/* Festival: one syllable ((phonemes) stress), *i at its "(": its phonemes appended (ax as ah with cmu_schwa), its
 * stress digit on its vowels (unless stripped). */
static int fest_syllable(reader *rd, size_t *i) {
    size_t k = skip_space(rd, *i + 1);
    if (!at(rd, k, '(')) return bad(rd, k, "the syllable's phonemes in parentheses");
    const int first = rd->n_phon;
    for (k = skip_space(rd, k + 1); !at(rd, k, ')'); k = skip_space(rd, k)) {
        if (rd->n_phon == GF_LEXICON_MAX_SYMBOLS) return too_many_phonemes(rd);
        char *name = rd->phon_name[rd->n_phon];
        if (fest_symbol(rd, &k, name, GF_LEXICON_NAME - 1, "a phoneme (letters, digits, _) or the syllable's )")) return -1;
        if (rd->lex->opts.cmu_schwa && !strcmp(name, "ax")) strcpy(name, "ah");
        rd->n_phon++;
    }
    if (rd->n_phon == first) return bad(rd, k, "a phoneme in the syllable");
    k = skip_space(rd, k + 1);
    if (k >= rd->len || rd->line[k] < '0' || rd->line[k] > '2') return bad(rd, k, "the syllable's stress digit 0, 1 or 2");
    const char stress = rd->line[k];
    k = skip_space(rd, k + 1);
    if (!at(rd, k, ')')) return bad(rd, k, "the ) that closes the syllable");
    bool vowel = false;
    for (int p = first; p < rd->n_phon; p++) {
        if (!is_vowel(rd->phon_name[p])) continue;
        vowel = true;
        if (!rd->lex->opts.strip_stress) strncat(rd->phon_name[p], &stress, 1);
    }
    rd->lost += !vowel && stress != '0';
    *i = k + 1;
    return 0;
}

/* Festival: ("word" pos (syllable syllable ...)), then nothing but a ; comment. */
static int fest_entry(reader *rd) {
    size_t i = skip_space(rd, 0);
    if (!at(rd, i, '(')) return bad(rd, i, "the ( that opens the entry");
    i = skip_space(rd, i + 1);
    if (fest_word(rd, &i)) return -1;
    i = skip_space(rd, i);
    if (fest_symbol(rd, &i, rd->pos_name, GF_LEXICON_NAME, "the part of speech (nil for none)")) return -1;
    if (!strcmp(rd->pos_name, "nil")) rd->pos_name[0] = '\0';
    i = skip_space(rd, i);
    if (!at(rd, i, '(')) return bad(rd, i, "the ( that opens the syllables");
    for (i = skip_space(rd, i + 1); !at(rd, i, ')'); i = skip_space(rd, i)) {
        if (!at(rd, i, '(')) return bad(rd, i, "a syllable ((phonemes) stress) or the ) that ends the syllables");
        if (fest_syllable(rd, &i)) return -1;
    }
    if (rd->n_phon == 0) return bad(rd, i, "a syllable ((phonemes) stress)");
    i = skip_space(rd, i + 1);
    if (!at(rd, i, ')')) return bad(rd, i, "the ) that closes the entry");
    i = skip_space(rd, i + 1);
    if (i < rd->len && rd->line[i] != ';') return bad(rd, i, "the end of the line (or a ; comment)");
    return 0;
}

/* CMUdict: a phoneme at *i, 1 to 4 capital letters and a stress digit 0, 1 or 2 (a vowel's), lower-cased. */
static int cmu_phoneme(reader *rd, size_t *i) {
    static const char *const what = "a phoneme (1 to 4 capital letters, then a vowel's stress digit 0, 1 or 2: AH0, B) "
                                    "or the end of the line (or a # comment)";
    size_t k = *i, n = 0;
    char *out = rd->phon_name[rd->n_phon];
    while (k < rd->len && rd->line[k] >= 'A' && rd->line[k] <= 'Z' && n < 5) out[n++] = lower(rd->line[k++]);
    if (n == 0 || n > 4) return bad(rd, *i, what);
    if (k < rd->len && rd->line[k] >= '0' && rd->line[k] <= '2') {
        if (!rd->lex->opts.strip_stress) out[n++] = rd->line[k];
        k++;
    }
    if (k < rd->len && !is_space(rd->line[k])) return bad(rd, *i, what);
    out[n] = '\0';
    rd->n_phon++;
    *i = k;
    return 0;
}

/* CMUdict: WORD (or WORD(N), an alternate of WORD), then its phonemes, then perhaps a # comment. */
static int cmu_entry(reader *rd) {
    size_t i = skip_space(rd, 0), k = i;
    while (k < rd->len && !is_space(rd->line[k])) k++;
    if (k - i > MAX_WORD_BYTES)
        return gf_fail("%s:%lld: the word is longer than %d bytes; expected a word of at most %d characters (%s)",
                       path_of(rd), line_of(rd), MAX_WORD_BYTES, GF_LEXICON_MAX_SYMBOLS, LIMIT_HINT);
    rd->word_len = k - i;
    memcpy(rd->word, rd->line + i, rd->word_len);
    if (rd->word_len >= 4 && rd->word[rd->word_len - 1] == ')') { /* WORD(N): the word is WORD */
        size_t d = rd->word_len - 1;                                 /* d: the first digit of N */
        while (d > 0 && rd->word[d - 1] >= '0' && rd->word[d - 1] <= '9') d--;
        if (d < rd->word_len - 1 && d >= 2 && rd->word[d - 1] == '(') rd->word_len = d - 1;
    }
    rd->word[rd->word_len] = '\0';
    rd->pos_name[0] = '\0';
    for (i = skip_space(rd, k); i < rd->len && rd->line[i] != '#'; i = skip_space(rd, i)) {
        if (rd->n_phon == GF_LEXICON_MAX_SYMBOLS) return too_many_phonemes(rd);
        if (cmu_phoneme(rd, &i)) return -1;
    }
    if (rd->n_phon == 0) return bad(rd, i, "the word's phonemes after it (AH0 B AE1 N ...)");
    return 0;
}

/* rd->word lower-cased into rd->lower and cut into graphemes: 1 when each is a-z or ', 0 when one is not, -1
 * after an error naming file and line (empty, invalid UTF-8, a control character, too many characters). */
static int word_check(reader *rd) {
    bool letters = true;
    rd->n_graph = 0;
    if (rd->word_len == 0) return gf_fail("%s:%lld: an empty word; expected a word", path_of(rd), line_of(rd));
    for (size_t i = 0; i < rd->word_len;) {
        uint32_t c;
        const int l = gf_utf8_decode((const unsigned char *)rd->word + i, rd->word_len - i, &c);
        if (!l)
            return gf_fail("%s:%lld: invalid UTF-8 in the word at byte %zu (0x%02X); expected UTF-8 text\nHINT: convert "
                           "the file, e.g. iconv -f latin1 -t utf-8", path_of(rd), line_of(rd), i + 1,
                           (unsigned char)rd->word[i]);
        if (c < 0x20 || (c >= 0x7F && c < 0xA0))
            return gf_fail("%s:%lld: a control character (U+%04X) in the word at byte %zu; expected a word (a binary or "
                           "corrupt file?)", path_of(rd), line_of(rd), (unsigned)c, i + 1);
        if (rd->n_graph == GF_LEXICON_MAX_SYMBOLS)
            return gf_fail("%s:%lld: the word has more than %d characters; expected a word (cmudict-0.4's longest has 20; "
                           "%s)", path_of(rd), line_of(rd), GF_LEXICON_MAX_SYMBOLS, LIMIT_HINT);
        char *g = rd->graph_name[rd->n_graph++];
        memcpy(g, rd->word + i, (size_t)l);
        g[l] = '\0';
        g[0] = lower(g[0]);
        memcpy(rd->lower + i, g, (size_t)l);
        letters = letters && l == 1 && ((g[0] >= 'a' && g[0] <= 'z') || g[0] == '\'');
        i += (size_t)l;
    }
    rd->lower[rd->word_len] = '\0';
    return letters;
}

/* Room for need elements of el bytes in *p (capacity *cap), doubling; -1 when out of memory. */
static int grow(void **p, int64_t need, int64_t *cap, size_t el) {
    if (need <= *cap) return 0;
    int64_t nc = *cap ? *cap : 1024;
    while (nc < need) nc *= 2;
    void *np = realloc(*p, (size_t)nc * el);
    if (!np) return -1;
    *p = np;
    *cap = nc;
    return 0;
}

/* The slot of the word table for word w: its first kept entry there, or -1 where it would go. */
static uint64_t word_slot(const reader *rd, const char *w) {
    uint64_t h = gf_lexicon_hash(w, strlen(w), 0) & rd->word_mask;
    for (; rd->word_slot[h] >= 0; h = (h + 1) & rd->word_mask)
        if (!strcmp(gf_lexicon_word(rd->lex, rd->word_slot[h]), w)) break;
    return h;
}

/* The word table twice as large (before it is half full), every word placed again. */
static int words_grow(reader *rd) {
    const uint64_t old_n = rd->word_mask + 1;
    int64_t *old_slot = rd->word_slot;
    int32_t *old_seen = rd->word_seen;
    rd->word_mask = old_n * 2 - 1;
    rd->word_slot = malloc(old_n * 2 * sizeof *rd->word_slot);
    rd->word_seen = calloc(old_n * 2, sizeof *rd->word_seen);
    if (!rd->word_slot || !rd->word_seen) {
        free(old_slot);
        free(old_seen);
        return gf_fail("out of memory reading %s (%lld words)", path_of(rd), (long long)rd->n_words);
    }
    memset(rd->word_slot, 0xff, old_n * 2 * sizeof *rd->word_slot);
    for (uint64_t k = 0; k < old_n; k++) {
        if (old_slot[k] < 0) continue;
        const uint64_t h = word_slot(rd, gf_lexicon_word(rd->lex, old_slot[k]));
        rd->word_slot[h] = old_slot[k];
        rd->word_seen[h] = old_seen[k];
    }
    free(old_slot);
    free(old_seen);
    return 0;
}

/* The id of name in v, added if new; -1 after an error naming what v holds when it is full. */
static int32_t intern(const reader *rd, inventory *v, const char *name, const char *what) {
    const int32_t id = inv_id(v, name);
    if (id < 0)
        gf_fail("%s:%lld: more than %d distinct %s (at \"%s\"); expected a lexicon's few (%s)", path_of(rd), line_of(rd),
                v->max, what, gf_show_name(name), LIMIT_HINT);
    return id;
}

/* The line's entry appended to lex (word rd->lower, split s, alt, first: the word's first entry or -1 for
 * itself); its index, or -1 after an error. */
static int64_t add_entry(reader *rd, int s, int alt, int64_t first) {
    gf_lexicon *lex = rd->lex;
    const int64_t bytes = (lex->n + 1) * (int64_t)sizeof(gf_lexicon_entry) + lex->text_len + (int64_t)rd->word_len + 1 +
                          4 * (lex->n_grapheme_ids + lex->n_phoneme_ids + rd->n_graph + rd->n_phon);
    if (bytes > MAX_BYTES)
        return gf_fail("%s:%lld: the %lld entries kept so far take more than %lld MiB; expected a pronunciation "
                       "lexicon (cmudict-0.4.out's take 13 MiB; %s)", path_of(rd), line_of(rd), (long long)lex->n,
                       (long long)(MAX_BYTES >> 20), LIMIT_HINT);
    if (grow((void **)&lex->entry, lex->n + 1, &lex->cap, sizeof *lex->entry) ||
        grow((void **)&lex->text, lex->text_len + (int64_t)rd->word_len + 1, &lex->text_cap, 1) ||
        grow((void **)&lex->grapheme_ids, lex->n_grapheme_ids + rd->n_graph, &lex->grapheme_cap, sizeof(int32_t)) ||
        grow((void **)&lex->phoneme_ids, lex->n_phoneme_ids + rd->n_phon, &lex->phoneme_cap, sizeof(int32_t)))
        return gf_fail("out of memory reading %s (%lld entries)", path_of(rd), (long long)lex->n);
    gf_lexicon_entry *e = &lex->entry[lex->n];
    *e = (gf_lexicon_entry){.word = lex->text_len, .graphemes = lex->n_grapheme_ids, .phonemes = lex->n_phoneme_ids,
                            .first = first < 0 ? lex->n : first, .next = -1, .line = gf_lines_number(rd->r),
                            .n_graphemes = rd->n_graph, .n_phonemes = rd->n_phon, .pos = -1, .split = (uint8_t)s,
                            .alt = (uint8_t)alt};
    for (int k = 0; k < rd->n_graph; k++) {
        const int32_t id = intern(rd, &rd->graph, rd->graph_name[k], "graphemes");
        if (id < 0) return -1;
        lex->grapheme_ids[lex->n_grapheme_ids + k] = id;
    }
    for (int k = 0; k < rd->n_phon; k++) {
        const int32_t id = intern(rd, &rd->phon, rd->phon_name[k], "phonemes");
        if (id < 0) return -1;
        lex->phoneme_ids[lex->n_phoneme_ids + k] = id;
    }
    if (rd->pos_name[0] && (e->pos = (int16_t)intern(rd, &rd->pos, rd->pos_name, "parts of speech")) < 0) return -1;
    memcpy(lex->text + lex->text_len, rd->lower, rd->word_len + 1);
    lex->text_len += (int64_t)rd->word_len + 1;
    lex->n_grapheme_ids += rd->n_graph;
    lex->n_phoneme_ids += rd->n_phon;
    lex->stress_lost += rd->lost;
    lex->total.graphemes += rd->n_graph, lex->split[s].graphemes += rd->n_graph;
    lex->total.phonemes += rd->n_phon, lex->split[s].phonemes += rd->n_phon;
    lex->total.kept++, lex->split[s].kept++;
    return lex->n++;
}

/* Whether the line's phonemes are those of entry e (by name: ids are given to kept entries only). */
static bool same_pron(const reader *rd, const gf_lexicon_entry *e) {
    if (e->n_phonemes != rd->n_phon) return false;
    const int32_t *ids = rd->lex->phoneme_ids + e->phonemes;
    for (int k = 0; k < rd->n_phon; k++)
        if (strcmp(rd->phon.name[ids[k]], rd->phon_name[k])) return false;
    return true;
}

/* A word read before (its first kept entry *slot): counted, and kept (GF_LEXICON_ALL) unless its phonemes equal
 * those of one kept for the word. */
static int alternate(reader *rd, uint64_t h, int s) {
    gf_lexicon *lex = rd->lex;
    lex->total.alternates++, lex->split[s].alternates++;
    if (++rd->word_seen[h] > GF_LEXICON_MAX_ALTS)
        return gf_fail("%s:%lld: more than %d pronunciations of \"%s\"; expected a few (cmudict-0.4's most: 3; %s)",
                       path_of(rd), line_of(rd), GF_LEXICON_MAX_ALTS, gf_show_name(rd->lower), LIMIT_HINT);
    int64_t last = rd->word_slot[h];
    int alt = 1;
    for (int64_t e = last; e >= 0; e = lex->entry[e].next, alt++) {
        if (same_pron(rd, &lex->entry[e])) {
            lex->total.duplicates++, lex->split[s].duplicates++;
            return 0;
        }
        last = e;
    }
    if (rd->lex->opts.alternates != GF_LEXICON_ALL) return 0;
    const int64_t i = add_entry(rd, s, alt - 1, rd->word_slot[h]);
    if (i < 0) return -1;
    lex->entry[last].next = i;
    return 0;
}

/* The line's entry (parsed into rd) counted, and kept, skipped or dropped. */
static int keep_entry(reader *rd) {
    gf_lexicon *lex = rd->lex;
    const int letters = word_check(rd);
    if (letters < 0) return -1;
    const int s = gf_lexicon_split_of(rd->lower, rd->word_len);
    lex->total.entries++, lex->split[s].entries++;
    if (lex->total.entries > rd->max_entries)
        return gf_fail("%s:%lld: more than %lld entries; expected a pronunciation lexicon (CMUdict 0.7b has about 134,000; "
                       "%s)\nHINT: gf_lexicon_opts.max_entries sets another limit", path_of(rd), line_of(rd),
                       (long long)rd->max_entries, LIMIT_HINT);
    if (!letters && !lex->opts.keep_symbols) {
        lex->total.skipped++, lex->split[s].skipped++;
        return 0;
    }
    if (2 * (uint64_t)(rd->n_words + 1) > rd->word_mask + 1 && words_grow(rd)) return -1;
    const uint64_t h = word_slot(rd, rd->lower);
    if (rd->word_slot[h] >= 0) return alternate(rd, h, s);
    const int64_t i = add_entry(rd, s, 0, -1);
    if (i < 0) return -1;
    rd->word_slot[h] = i;
    rd->word_seen[h] = 1;
    rd->n_words++;
    lex->total.words++, lex->split[s].words++;
    return 0;
}

/* The line (not blank, no comment) parsed into rd in the file's format. */
static int parse_entry(reader *rd) {
    rd->n_phon = 0;
    rd->lost = 0;
    return !strcmp(rd->lex->format, "festival") ? fest_entry(rd) : cmu_entry(rd);
}

/* Whether the line begins as a CMUdict entry: a word, spaces, then a phoneme (1 to 4 capital letters, perhaps a
 * stress digit 0, 1 or 2) that ends the line or a space does. */
static bool looks_cmudict(const reader *rd) {
    size_t i = skip_space(rd, 0), n = 0;
    while (i < rd->len && !is_space(rd->line[i])) i++;
    const size_t j = skip_space(rd, i);
    if (j == i || j == rd->len) return false;
    for (i = j; i < rd->len && rd->line[i] >= 'A' && rd->line[i] <= 'Z'; i++) n++;
    if (i < rd->len && rd->line[i] >= '0' && rd->line[i] <= '2') i++;
    return n >= 1 && n <= 4 && (i == rd->len || is_space(rd->line[i]));
}

/* The format from the first line that is not blank or a comment: MNCL (Festival's first line: 1, nothing more
 * to read) or ("word" ... Festival's, a line that begins as WORD PHONEME CMUdict's (0: the line parsed as an
 * entry); -1 after an error: a malformed entry, or a file that is not a lexicon. */
static int detect(reader *rd) {
    const size_t i = skip_space(rd, 0), j = skip_space(rd, i + 1);
    size_t end = rd->len;
    while (end > i && is_space(rd->line[end - 1])) end--;
    if (end - i == 4 && !memcmp(rd->line + i, "MNCL", 4)) {
        rd->lex->format = "festival";
        return 1;
    }
    if (at(rd, i, '(') && at(rd, j, '"')) {
        rd->lex->format = "festival";
        return parse_entry(rd);
    }
    if (looks_cmudict(rd)) {
        rd->lex->format = "cmudict";
        return parse_entry(rd);
    }
    char ex[64];
    snprintf(ex, sizeof ex, "%.40s%s", rd->line, rd->len > 40 ? "..." : "");
    return gf_fail("%s:%lld: not a pronunciation lexicon: the line \"%s\" is an entry of neither form; expected "
                   "Festival's " FESTIVAL_FORM " or CMUdict's " CMUDICT_FORM "\nHINT: e.g. (\"abandon\" nil (((ax) 0) "
                   "((b ae n) 1) ((d ax n) 0))) or ABANDON  AH0 B AE1 N D AH0 N, one entry a line (a Festival "
                   "lexicon may begin with a line MNCL)", path_of(rd), line_of(rd), gf_show_name(ex));
}

/* Whether line[i..len) is a comment: ; in a Festival file (or before the format is known), ;;; in a CMUdict file,
 * where ;SEMI-COLON is a word. */
static bool comment(const reader *rd, size_t i) {
    const bool cmu = rd->lex->format && !strcmp(rd->lex->format, "cmudict");
    return at(rd, i, ';') && (!cmu || (at(rd, i + 1, ';') && at(rd, i + 2, ';')));
}

static int read_lines(reader *rd) {
    const char *line;
    size_t len;
    int got;
    while ((got = gf_lines_next(rd->r, &line, &len)) == 1) {
        if (gf_lines_number(rd->r) == 1 && len >= 3 && !memcmp(line, "\xEF\xBB\xBF", 3)) line += 3, len -= 3;
        rd->line = line;
        rd->len = len;
        const size_t i = skip_space(rd, 0);
        if (i == len || comment(rd, i)) continue;
        const int rc = rd->lex->format ? parse_entry(rd) : detect(rd);
        if (rc < 0) return -1;
        if (rc == 0 && keep_entry(rd)) return -1;
    }
    return got < 0 ? -1 : 0;
}

typedef struct {
    char name[GF_LEXICON_NAME];
    int32_t id;
} named_id;

static int by_name(const void *a, const void *b) { return strcmp(((const named_id *)a)->name, ((const named_id *)b)->name); }

/* v's names sorted into *names (malloc'd), and new_id[old id]; -1 when out of memory. */
static int sort_inventory(const inventory *v, char (**names)[GF_LEXICON_NAME], int32_t *new_id) {
    named_id *order = malloc(((size_t)v->n + 1) * sizeof *order);
    *names = malloc(((size_t)v->n + 1) * sizeof **names);
    if (!order || !*names) {
        free(order);
        return gf_fail("out of memory");
    }
    for (int32_t k = 0; k < v->n; k++) {
        memcpy(order[k].name, v->name[k], GF_LEXICON_NAME);
        order[k].id = k;
    }
    qsort(order, (size_t)v->n, sizeof *order, by_name);
    for (int32_t k = 0; k < v->n; k++) {
        memcpy((*names)[k], order[k].name, GF_LEXICON_NAME);
        new_id[order[k].id] = k;
    }
    free(order);
    return 0;
}

/* The distinct graphemes and phonemes of each split's entries. */
static void count_types(gf_lexicon *lex) {
    for (int s = 0; s < 3; s++) {
        unsigned char gu[GF_LEXICON_MAX_GRAPHEMES] = {0}, pu[GF_LEXICON_MAX_PHONEMES] = {0};
        for (int64_t i = 0; i < lex->n; i++) {
            if (lex->entry[i].split != s) continue;
            for (int32_t k = 0; k < lex->entry[i].n_graphemes; k++) gu[gf_lexicon_graphemes(lex, i)[k]] = 1;
            for (int32_t k = 0; k < lex->entry[i].n_phonemes; k++) pu[gf_lexicon_phonemes(lex, i)[k]] = 1;
        }
        for (int k = 0; k < GF_LEXICON_MAX_GRAPHEMES; k++) lex->split[s].grapheme_types += gu[k];
        for (int k = 0; k < GF_LEXICON_MAX_PHONEMES; k++) lex->split[s].phoneme_types += pu[k];
    }
    lex->total.grapheme_types = lex->n_graphemes;
    lex->total.phoneme_types = lex->n_phonemes;
}

/* The inventories sorted by name and every id renumbered (the same names, the same ids, whatever the order of
 * the file); the counts of kinds. */
static int finish(reader *rd) {
    gf_lexicon *lex = rd->lex;
    int32_t pmap[GF_LEXICON_MAX_PHONEMES], gmap[GF_LEXICON_MAX_GRAPHEMES], smap[GF_LEXICON_MAX_POS];
    if (sort_inventory(&rd->phon, &lex->phoneme_name, pmap) || sort_inventory(&rd->graph, &lex->grapheme_name, gmap) ||
        sort_inventory(&rd->pos, &lex->pos_name, smap))
        return -1;
    lex->n_phonemes = rd->phon.n;
    lex->n_graphemes = rd->graph.n;
    lex->n_pos = rd->pos.n;
    for (int64_t k = 0; k < lex->n_phoneme_ids; k++) lex->phoneme_ids[k] = pmap[lex->phoneme_ids[k]];
    for (int64_t k = 0; k < lex->n_grapheme_ids; k++) lex->grapheme_ids[k] = gmap[lex->grapheme_ids[k]];
    for (int64_t i = 0; i < lex->n; i++)
        if (lex->entry[i].pos >= 0) lex->entry[i].pos = (int16_t)smap[lex->entry[i].pos];
    count_types(lex);
    return 0;
}

/* A file that held no entry, or none kept: an error naming it. */
static int nothing_kept(const reader *rd) {
    const gf_lexicon *lex = rd->lex;
    if (!lex->format)
        return gf_fail("%s: the file is empty (or holds only blank and comment lines); expected a pronunciation lexicon: "
                       "Festival's " FESTIVAL_FORM " or CMUdict's " CMUDICT_FORM, path_of(rd));
    if (!lex->total.entries)
        return gf_fail("%s: a %s lexicon without an entry; expected one entry a line", path_of(rd), lex->format);
    return gf_fail("%s: none of its %lld entries is kept: every word has a character outside a-z and '; expected "
                   "words\nHINT: gf_lexicon_opts.keep_symbols keeps them", path_of(rd), (long long)lex->total.entries);
}

static int reader_init(reader *rd, gf_lexicon *lex, const char *path) {
    rd->lex = lex;
    rd->max_entries = lex->opts.max_entries > 0 ? lex->opts.max_entries : GF_LEXICON_MAX_ENTRIES;
    rd->word_mask = 4095;
    rd->word_slot = malloc((rd->word_mask + 1) * sizeof *rd->word_slot);
    rd->word_seen = calloc(rd->word_mask + 1, sizeof *rd->word_seen);
    if (!rd->word_slot || !rd->word_seen || inv_init(&rd->phon, GF_LEXICON_MAX_PHONEMES) ||
        inv_init(&rd->graph, GF_LEXICON_MAX_GRAPHEMES) || inv_init(&rd->pos, GF_LEXICON_MAX_POS))
        return gf_fail("out of memory opening %s", gf_show_name(path));
    memset(rd->word_slot, 0xff, (rd->word_mask + 1) * sizeof *rd->word_slot);
    rd->r = gf_lines_open(path, GF_LEXICON_MAX_LINE);
    return rd->r ? 0 : -1;
}

static void reader_free(reader *rd) {
    gf_lines_close(rd->r);
    free(rd->word_slot);
    free(rd->word_seen);
    inv_free(&rd->phon);
    inv_free(&rd->graph);
    inv_free(&rd->pos);
    free(rd);
}

gf_lexicon *gf_lexicon_load(const char *path, const gf_lexicon_opts *opts) {
    gf_lexicon *lex = calloc(1, sizeof *lex);
    reader *rd = calloc(1, sizeof *rd);
    if (!lex || !rd) {
        free(lex);
        free(rd);
        gf_fail("out of memory opening %s", gf_show_name(path));
        return NULL;
    }
    if (opts) lex->opts = *opts;
    if (lex->opts.alternates != GF_LEXICON_FIRST && lex->opts.alternates != GF_LEXICON_ALL) {
        gf_fail("gf_lexicon_load: alternates is %d; expected GF_LEXICON_FIRST (0) or GF_LEXICON_ALL (1)",
                lex->opts.alternates);
        lex->opts.alternates = -1;
    }
    int rc = lex->opts.alternates < 0 || gf_path_join(lex->path, sizeof lex->path, NULL, path) ||
             reader_init(rd, lex, path) || read_lines(rd);
    if (!rc && !lex->total.kept) rc = nothing_kept(rd);
    if (!rc) rc = finish(rd);
    reader_free(rd);
    if (rc) {
        gf_lexicon_free(lex);
        return NULL;
    }
    return lex;
}

void gf_lexicon_free(gf_lexicon *lex) {
    if (!lex) return;
    free(lex->entry);
    free(lex->text);
    free(lex->grapheme_ids);
    free(lex->phoneme_ids);
    free(lex->phoneme_name);
    free(lex->grapheme_name);
    free(lex->pos_name);
    free(lex);
}

size_t gf_lexicon_pron_text(const gf_lexicon *lex, int64_t i, char *buf, size_t cap) {
    size_t n = 0;
    const int32_t *ids = gf_lexicon_phonemes(lex, i);
    if (cap) buf[0] = '\0';
    for (int32_t k = 0; k < lex->entry[i].n_phonemes; k++) {
        const int w = snprintf(n < cap ? buf + n : NULL, n < cap ? cap - n : 0, "%s%s", k ? " " : "",
                               lex->phoneme_name[ids[k]]);
        n += (size_t)w;
    }
    return n;
}
