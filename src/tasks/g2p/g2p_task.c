/* Grapheme-to-phoneme conversion (task g2p, issue 52): a word's spelling in, its phonemes out, on an
 * encoder-decoder (docs/model.md, "Encoder-decoders"). The lexicon is read by tasks/g2p/lexicon.h (Festival's
 * format or the plain CMUdict's, split by a hash of the word); the examples go to sources/seq2seq_source.h.
 *
 * The sides: the source is the word's UTF-8 bytes (source_vocab 256: nothing to store, any word encodes); the
 * target is the phoneme names through a word tokenizer (names in the lexicon's order, then <eos> and <unk>),
 * stored with every checkpoint, <eos> both the decoder's first input and a target's end. Scored (for now) by
 * the perplexity per phoneme under teacher forcing; word and phoneme error rates need decoding. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "io/file.h"
#include "plugin/schema.h"
#include "sources/seq2seq_source.h"
#include "tasks/g2p/lexicon.h"
#include "tasks/task.h"

enum { G2P_SOURCE_VOCAB = 256 };

typedef struct {
    int stress;     /* 0 keep, 1 strip */
    int schwa;      /* 0 ax, 1 ah */
    int alternates; /* GF_LEXICON_FIRST (0) or GF_LEXICON_ALL (1) */
} g2p_options;

static const char *const STRESS[] = {"keep", "strip", NULL}, *const SCHWA[] = {"ax", "ah", NULL},
                         *const ALTERNATES[] = {"first", "all", NULL};
static const gf_cfg_key G2P_KEYS[] = {
    {.name = "stress", .type = GF_KEY_ENUM, .off = offsetof(g2p_options, stress), .names = STRESS,
     .def = "\"keep\"", .help = "a vowel's stress digit: keep (ae1, 69 phonemes in CMUdict) or strip (ae, 39; 40 in Festival's "
             "cmudict-0.4, which writes CMUdict's ah0 as ax: --schwa)"},
    {.name = "schwa", .type = GF_KEY_ENUM, .off = offsetof(g2p_options, schwa), .names = SCHWA, .def = "\"ax\"",
     .help = "Festival's unstressed ah: ax as the file writes it (with --stress strip, 40 phonemes in cmudict-0.4) or "
             "ah, CMUdict's AH0 (39: the published results' phonemes)"},
    {.name = "alternates", .type = GF_KEY_ENUM, .off = offsetof(g2p_options, alternates), .names = ALTERNATES,
     .def = "\"first\"", .help = "a word's pronunciations: first (the file's first one only) or all (each, for training "
                                 "and as references: a decoded word is right when it is any of them, its phoneme errors "
                                 "counted against the nearest)"},
};

typedef struct {
    gf_lexicon *lex;
    gf_tokenizer *own;          /* the phoneme vocabulary made from the lexicon (NULL when a fixed one is given) */
    const gf_tokenizer *tok;
    int32_t *map;               /* lexicon phoneme id -> target id */
    int32_t eos;
} g2p_data;

static void g2p_free(void *data) {
    g2p_data *g = data;
    if (!g) return;
    gf_lexicon_free(g->lex);
    gf_tokenizer_free(g->own);
    free(g->map);
    free(g);
}

/* --corpus cmudict (the sample grassflow ships) or a lexicon file of either format. */
static int lexicon_path(const gf_task_env *e, char *path, size_t n) {
    if (strcmp(e->corpus, "cmudict")) return snprintf(path, n, "%s", e->corpus) < (int)n ? 0 : gf_fail("--corpus: path too long");
    return gf_path_join(path, n, e->data_dir ? e->data_dir : "data", "cmudict/cmudict-0.4-sample20.out.xz");
}

/* The phoneme vocabulary: the lexicon's names (a new run's own), or their ids in a checkpoint's (fixed). */
static int phoneme_ids(g2p_data *g, const gf_tokenizer *fixed) {
    const gf_lexicon *lex = g->lex;
    g->map = malloc((size_t)(lex->n_phonemes > 0 ? lex->n_phonemes : 1) * sizeof *g->map);
    if (!g->map) return gf_fail("out of memory");
    if (!fixed) {
        size_t len = 0;
        char *text = malloc((size_t)lex->n_phonemes * GF_LEXICON_NAME + 1);
        if (!text) return gf_fail("out of memory");
        for (int32_t i = 0; i < lex->n_phonemes; i++) len += (size_t)sprintf(text + len, "%s%s", i ? " " : "", lex->phoneme_name[i]);
        g->own = gf_tokenizer_build(GF_TOK_WORD, text, len);
        free(text);
        if (!g->own) return -1;
    }
    g->tok = fixed ? fixed : g->own;
    g->eos = gf_tokenizer_eos_id(g->tok);
    if (g->eos < 0) return gf_fail("g2p: the checkpoint's tokenizer has no <eos>: it is not a phoneme vocabulary");
    for (int32_t i = 0; i < lex->n_phonemes; i++) {
        g->map[i] = gf_tokenizer_find(g->tok, lex->phoneme_name[i], strlen(lex->phoneme_name[i]));
        if (g->map[i] < 0)
            return gf_fail("%s: phoneme \"%s\" is not one the model knows (its vocabulary: the phonemes of the lexicon it "
                           "was trained on)\nHINT: read the lexicon as it was (--stress, --schwa), or train on this one",
                           lex->path, lex->phoneme_name[i]);
    }
    return 0;
}

static int g2p_load(const gf_task_env *e, const void *options, void **data) {
    const g2p_options *o = options;
    char path[GF_PATH_MAX];
    if (e->tokenizer && e->tokenizer[0])
        return gf_fail("--tokenizer %s: task g2p reads a word's bytes and its phoneme names; it takes no tokenizer",
                       e->tokenizer);
    if (lexicon_path(e, path, sizeof path)) return -1;
    g2p_data *g = calloc(1, sizeof *g);
    if (!g) return gf_fail("out of memory");
    gf_lexicon_opts lo;
    gf_lexicon_opts_default(&lo);
    lo.strip_stress = o->stress == 1;
    lo.cmu_schwa = o->schwa == 1;
    lo.alternates = o->alternates == 1 ? GF_LEXICON_ALL : GF_LEXICON_FIRST;
    g->lex = gf_lexicon_load(path, &lo);
    if (!g->lex || phoneme_ids(g, e->fixed)) {
        g2p_free(g);
        return -1;
    }
    *data = g;
    return 0;
}

static const gf_tokenizer *g2p_tokenizer(const void *data) { return ((const g2p_data *)data)->tok; }

/* An encoder-decoder over the word's bytes and the phonemes; a model that is not one is refused, since
 * making one from a language model's preset would choose its decoder for the user. */
static int g2p_configure(const void *data, const void *options, gf_config *cfg) {
    (void)options;
    const g2p_data *g = data;
    int64_t longest = 0; /* a word's bytes, or its phonemes and the end */
    for (int64_t i = 0; g && i < g->lex->n; i++) {
        const int64_t w = (int64_t)strlen(gf_lexicon_word(g->lex, i)), p = g->lex->entry[i].n_phonemes + 1;
        longest = w > longest ? w : longest;
        longest = p > longest ? p : longest;
    }
    return gf_seq2seq_configure(cfg, "g2p", G2P_SOURCE_VOCAB, g ? gf_tokenizer_vocab_size(g->tok) : 0, longest);
}

/* Split s's examples: each kept entry's word bytes and its phonemes' target ids. */
static gf_source *g2p_source(const void *data, int split, const void *options, uint64_t seed) {
    (void)options;
    const g2p_data *g = data;
    const gf_lexicon *lex = g->lex;
    int64_t n = 0, ns = 0, nt = 0; /* the split's entries, their words' bytes and their phonemes */
    for (int64_t i = 0; i < lex->n; i++)
        if (lex->entry[i].split == split) n++, ns += (int64_t)strlen(gf_lexicon_word(lex, i)), nt += lex->entry[i].n_phonemes;
    int32_t *src = malloc((size_t)(ns > 0 ? ns : 1) * sizeof *src), *tgt = malloc((size_t)(nt > 0 ? nt : 1) * sizeof *tgt);
    int64_t *ss = malloc((size_t)(n + 1) * sizeof *ss), *ts = malloc((size_t)(n + 1) * sizeof *ts), k = 0;
    gf_source *out = NULL;
    static const char *const NAMES[3] = {"g2p train", "g2p valid", "g2p test"};
    if (!src || !tgt || !ss || !ts) {
        gf_fail("out of memory");
        goto done;
    }
    ss[0] = ts[0] = 0;
    for (int64_t i = 0; i < lex->n; i++) { /* a word's pronunciations one after another: its references */
        if (lex->entry[i].split != split || lex->entry[i].alt != 0) continue;
        for (int64_t e = i; e >= 0; e = lex->entry[e].next) {
            const unsigned char *w = (const unsigned char *)gf_lexicon_word(lex, e);
            const int32_t *ph = gf_lexicon_phonemes(lex, e);
            int64_t a = ss[k], b = ts[k];
            for (; *w; w++) src[a++] = *w;
            for (int32_t p = 0; p < lex->entry[e].n_phonemes; p++) tgt[b++] = g->map[ph[p]];
            ss[++k] = a;
            ts[k] = b;
        }
    }
    if (k == 0) {
        gf_fail("the %s split of %s has no word (words go to train, valid and test, 90/5/5, by a hash of the word; "
                "the split a word is in does not depend on the file)", split == GF_TRAIN ? "train" : split == GF_VALID
                ? "valid" : "test", lex->path);
        goto done;
    }
    const gf_seq2seq_pairs p = {.n = k, .src = src, .tgt = tgt, .src_start = ss, .tgt_start = ts,
                                .source_vocab = G2P_SOURCE_VOCAB, .target_vocab = gf_tokenizer_vocab_size(g->tok),
                                .bos = g->eos, .eos = g->eos, .name = NAMES[split]};
    out = gf_seq2seq_source_create(&p, seed);
done:
    free(src), free(tgt), free(ss), free(ts);
    return out;
}

/* A word as the lexicon reads it (lower-cased; a-z and ' only) into its bytes: predict's input. */
static int g2p_source_ids(const void *options, const char *text, size_t n, const char *what, int32_t **ids,
                          int64_t *len) {
    (void)options;
    while (n > 0 && (text[n - 1] == ' ' || text[n - 1] == '\t' || text[n - 1] == '\r')) n--; /* trailing blanks */
    while (n > 0 && (*text == ' ' || *text == '\t')) text++, n--;
    if (n == 0) return gf_fail("%s: an empty line; expected one word a line", what);
    if (n > GF_LEXICON_MAX_SYMBOLS)
        return gf_fail("%s: a word of %zu characters; at most %d", what, n, GF_LEXICON_MAX_SYMBOLS);
    for (size_t i = 0; i < n; i++) {
        const unsigned char c = (unsigned char)text[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '\''))
            return gf_fail("%s: character %s%c%s (byte 0x%02x) at %zu of \"%.*s\": the model reads words of the letters a-z "
                           "and ' only, as the lexicon it was trained on has them (one word a line)", what,
                           c > 32 && c < 127 ? "'" : "", c > 32 && c < 127 ? c : '?', c > 32 && c < 127 ? "'" : "", c,
                           i + 1, (int)(n < 64 ? n : 64), text);
    }
    *ids = malloc(n * sizeof **ids);
    if (!*ids) return gf_fail("out of memory");
    for (size_t i = 0; i < n; i++) (*ids)[i] = (unsigned char)text[i] >= 'A' && (unsigned char)text[i] <= 'Z' ? text[i] + 32 : text[i];
    *len = (int64_t)n;
    return 0;
}

static void g2p_describe(const void *data, char *buf, size_t n) {
    const g2p_data *g = data;
    const gf_lexicon *lex = g->lex;
    int len = snprintf(buf, n, "%lld train words (valid %lld, test %lld)", (long long)lex->split[0].words,
                       (long long)lex->split[1].words, (long long)lex->split[2].words);
    if (len >= 0 && (size_t)len < n && lex->total.kept != lex->total.words)
        len += snprintf(buf + len, n - (size_t)len, ", %lld pronunciations (every one kept)", (long long)lex->total.kept);
    if (len >= 0 && (size_t)len < n)
        snprintf(buf + len, n - (size_t)len, ", %d phonemes, %s", lex->n_phonemes, lex->format);
}

static int g2p_owns(const char *corpus, const char *data_dir) {
    (void)data_dir;
    return !strcmp(corpus, "cmudict");
}

const gf_task_ops gf_task_g2p = {
    .version = GF_TASK_OPS_VERSION, .name = "g2p",
    .help = "grapheme-to-phoneme conversion: a word's spelling to its phonemes (an encoder-decoder)",
    .metric = "ppl", .unit = "phon", .counted = "phonemes", .options_size = sizeof(g2p_options), .keys = G2P_KEYS,
    .n_keys = (int)(sizeof G2P_KEYS / sizeof G2P_KEYS[0]), .load = g2p_load, .tokenizer = g2p_tokenizer,
    .configure = g2p_configure, .source = g2p_source, .describe = g2p_describe, .owns = g2p_owns, .free = g2p_free,
    .source_ids = g2p_source_ids,
    .data_help = "--corpus cmudict (a 20% sample of CMUdict 0.4 grassflow ships: data/cmudict) | a lexicon file in\n"
                 "Festival's format (festlex-cmu's /usr/share/festival/dicts/cmu/cmudict-0.4.out) or the plain\n"
                 "CMUdict's (cmudict-0.7b), plain or .xz, split 90/5/5 by a hash of the word; no --tokenizer\n"};
