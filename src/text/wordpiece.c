/* BERT WordPiece: the vocabulary file and encoding, compatible with Hugging Face's (slow) BertTokenizer
 * for uncased vocabularies (do_lower_case, strip_accents following it, tokenize_chinese_chars).
 *
 * BertTokenizer.tokenize(text) does, in this order:
 *   1. split out the special tokens [UNK] [SEP] [PAD] [CLS] [MASK] where they occur verbatim in the text
 *      (even inside a word: "a[SEP]b" is a, [SEP], b), and lower-case the rest one character at a time;
 *   2. per remaining piece, BasicTokenizer: _clean_text (drop U+0000, U+FFFD and category C* except
 *      \t \n \r; whitespace -> space), spaces around CJK ideographs, split on whitespace, then per word
 *      lower-case (again; idempotent), NFD, drop Mn (strip accents), split off punctuation characters;
 *   3. WordpieceTokenizer per word: more than 100 code points -> [UNK]; otherwise greedy longest match
 *      first, continuations prefixed "##"; if some position matches nothing the whole word is [UNK].
 * The Unicode properties come from src/text/unicode.h (generated from Python's unicodedata, so they
 * match the Python that runs transformers up to the Unicode version recorded there).
 *
 * Lower-casing one character at a time (step 1) means Greek capital sigma always becomes σ (never the
 * final ς that str.lower() would give a whole word), and that lower-casing, NFD and accent stripping
 * can be done per code point with one table. NFD also reorders combining marks by combining class; after
 * stripping Mn that is visible only for the rare non-Mn marks (GF_UC_COMB), handled in reorder().
 *
 * One rule of grassflow's own, off unless the tokenizer has it (gf_tokenizer_set_unk_text): its unknown-word
 * spelling ("<unk>" for the language-model corpora) is split out like a special token and read as [UNK]. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "text/tokenizer.h"
#include "text/unicode.h"
#include "io/text.h"

#define MAX_WORD_CHARS 100            /* BERT's max_input_chars_per_word */
#define MAX_VOCAB_BYTES (64u << 20)   /* bert-base-uncased's vocab.txt is 231 KB */
#define MARK 0xFFFFFFFFu              /* a canonical-reordering barrier in a word (a stripped class-0 Mn) */

static const char *const SPECIALS[] = {"[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"};
#define N_SPECIALS 5

static int utf8_encode(uint32_t c, char *o) {
    if (c < 0x80) {
        o[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (char)(0xC0 | (c >> 6));
        o[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (char)(0xE0 | (c >> 12));
        o[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        o[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (c >> 18));
    o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((c >> 6) & 0x3F));
    o[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

/* ---- loading ------------------------------------------------------------------------------------- */

static void free_partial(gf_tokenizer *t) {
    if (!t) return;
    gf_vocab_free(&t->vocab);
    free(t->source);
    free(t);
}

gf_tokenizer *gf_wordpiece_load(const char *path) {
    size_t size;
    char *text = gf_read_text(path, MAX_VOCAB_BYTES, &size);
    if (!text) {
        gf_fail_context("\nHINT: a WordPiece vocabulary is a BERT vocab.txt (one token per line, id = line "
                        "number - 1), e.g. data/bert-base-uncased/vocab.txt");
        return NULL;
    }
    gf_tokenizer *t = calloc(1, sizeof *t);
    if (!t || !(t->source = strdup(path))) {
        gf_fail("out of memory loading %s", gf_show_name(path));
        free(text);
        free(t);
        return NULL;
    }
    t->kind = GF_TOK_WORDPIECE;
    gf_vocab_init(&t->vocab);
    t->unk_id = -1;
    t->eos_id = -1;

    size_t p = 0;
    if (size >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) p = 3; /* a byte order mark is not part of a token */
    long long line = 0;
    while (p < size) {
        line++;
        size_t e = p;
        while (e < size && text[e] != '\n') e++;
        size_t next = e + 1, len = e - p;
        if (len > 0 && text[p + len - 1] == '\r') len--; /* CRLF files */
        const char *s = text + p;
        if (len == 0) {
            gf_fail("%s:%lld: empty line; expected one token per line (a BERT vocab.txt has no empty lines, and "
                    "ids are line numbers, so blank lines cannot simply be skipped)", gf_show_name(path), line);
            goto fail;
        }
        for (size_t i = 0; i < len;) {
            uint32_t cp;
            int l = s[i] ? gf_utf8_decode((const unsigned char *)s + i, len - i, &cp) : 0;
            if (!l) {
                gf_fail("%s:%lld: invalid UTF-8 (or a NUL byte) at byte %zu of the line; expected a UTF-8 text file "
                        "with one token per line", gf_show_name(path), line, i + 1);
                goto fail;
            }
            i += (size_t)l;
        }
        int32_t prev = gf_vocab_find(&t->vocab, s, len);
        if (prev >= 0) {
            gf_fail("%s:%lld: duplicate token \"%.*s\" (first on line %lld); expected each token once, since a "
                    "token's id is its line number - 1", gf_show_name(path), line, len > 60 ? 60 : (int)len, s, (long long)prev + 1);
            goto fail;
        }
        int32_t id = gf_vocab_add_text(&t->vocab, s, len);
        if (id < 0) {
            gf_fail_context(" (loading %s, line %lld)", path, line);
            goto fail;
        }
        p = next;
    }
    if (t->vocab.n == 0) {
        gf_fail("%s: the vocabulary is empty; expected a BERT vocab.txt (one token per line)", gf_show_name(path));
        goto fail;
    }
    t->unk_id = gf_vocab_find(&t->vocab, "[UNK]", 5);
    if (t->unk_id < 0) {
        gf_fail("%s: no \"[UNK]\" line; a WordPiece vocabulary needs the unknown token (bert-base-uncased's "
                "vocab.txt has it on line 101)\nHINT: is this a BERT vocab.txt?", gf_show_name(path));
        goto fail;
    }
    free(text);
    return t;
fail:
    free(text);
    free_partial(t);
    return NULL;
}

/* ---- encoding ------------------------------------------------------------------------------------ */

typedef struct {
    const gf_vocab *v;
    int32_t unk;
    int64_t n_unk;  /* words given [UNK] because they could not be pieced (not a [UNK] written in the text) */
    gf_ids *out;
    /* the current word: code points after lower-casing / NFD / accent stripping, with MARK barriers
     * (only while has_comb, and never two in a row) */
    uint32_t cp[2 * MAX_WORD_CHARS + 4];
    int n_buf, n_chars;
    bool too_long, has_comb;
    char bytes[4 * (MAX_WORD_CHARS + 1) + 2]; /* "##" + the word's UTF-8 */
    int off[MAX_WORD_CHARS + 2];              /* byte offset of each character in bytes + 2 */
    int32_t special_id[N_SPECIALS];           /* SPECIALS[k]'s id ([UNK]'s if the vocabulary lacks it) */
    size_t special_len[N_SPECIALS];
    const char *unk_text; /* the tokenizer's spelling of an unknown word ("<unk>"), read as [UNK]; or "" */
    size_t unk_text_len;
} encoder;

/* NFD's canonical ordering, restricted to the kept characters: a stable sort by combining class of
 * each run of non-zero classes (a run ends at a class-0 character or a MARK). */
static void reorder(encoder *e) {
    int k = 0;
    for (int i = 0; i < e->n_buf;) {
        int ccc = e->cp[i] == MARK ? 0 : gf_uc_comb_class(e->cp[i]);
        if (ccc == 0) {
            if (e->cp[i] != MARK) e->cp[k++] = e->cp[i];
            i++;
            continue;
        }
        int start = k;
        while (i < e->n_buf && e->cp[i] != MARK && (ccc = gf_uc_comb_class(e->cp[i])) != 0) {
            uint32_t c = e->cp[i++];
            int j = k++;
            while (j > start && gf_uc_comb_class(e->cp[j - 1]) > ccc) {
                e->cp[j] = e->cp[j - 1];
                j--;
            }
            e->cp[j] = c;
        }
    }
    e->n_buf = k;
}

static int push(encoder *e, int32_t id) {
    if (gf_ids_push(e->out, id)) return gf_fail("out of memory tokenizing");
    return 0;
}

/* Greedy longest-match-first WordPiece of the current word. */
static int end_word(encoder *e) {
    if (e->n_chars == 0) {
        e->n_buf = 0;
        e->has_comb = false;
        return 0;
    }
    int n = e->n_chars;
    bool too_long = e->too_long;
    if (e->has_comb) reorder(e);
    e->n_buf = e->n_chars = 0;
    e->too_long = e->has_comb = false;
    if (too_long) {
        e->n_unk++;
        return push(e, e->unk);
    }

    char *b = e->bytes + 2; /* b[-2..-1] is room for "##" */
    int len = 0;
    for (int i = 0; i < n; i++) {
        e->off[i] = len;
        len += utf8_encode(e->cp[i], b + len);
    }
    e->off[n] = len;
    int64_t mark = e->out->n;
    for (int s = 0; s < n;) {
        int32_t id = -1;
        int end = n;
        if (s > 0) { /* write "##" just before the continuation (over bytes already matched) */
            b[e->off[s] - 2] = '#';
            b[e->off[s] - 1] = '#';
        }
        const char *q = s > 0 ? b + e->off[s] - 2 : b;
        for (; end > s; end--) {
            size_t ql = (size_t)(e->off[end] - e->off[s]) + (s > 0 ? 2 : 0);
            if ((id = gf_vocab_find(e->v, q, ql)) >= 0) break;
        }
        if (id < 0) {
            e->out->n = mark;
            e->n_unk++;
            return push(e, e->unk);
        }
        if (push(e, id)) return -1;
        s = end;
    }
    return 0;
}

/* Append one kept code point (class cls) to the current word. */
static inline void add_char(encoder *e, uint32_t c, int cls) {
    if (e->too_long) return;
    if (e->n_chars == MAX_WORD_CHARS) {
        e->too_long = true;
        return;
    }
    if (cls == GF_UC_COMB) e->has_comb = true;
    e->cp[e->n_buf++] = c;
    e->n_chars++;
}

static void encoder_init(encoder *e, const gf_tokenizer *t, gf_ids *out) {
    e->v = &t->vocab;
    e->unk = t->unk_id;
    e->out = out;
    e->n_unk = 0;
    e->n_buf = e->n_chars = 0;
    e->too_long = e->has_comb = false;
    for (int k = 0; k < N_SPECIALS; k++) {
        e->special_len[k] = strlen(SPECIALS[k]);
        e->special_id[k] = gf_vocab_find(&t->vocab, SPECIALS[k], e->special_len[k]);
        if (e->special_id[k] < 0) e->special_id[k] = t->unk_id; /* as BertTokenizer's token -> id does */
    }
    e->unk_text = t->unk_text;
    e->unk_text_len = strlen(t->unk_text);
}

/* The index in SPECIALS of the special token spelled at s[0..rem), or -1. */
static int special_at(const encoder *e, const unsigned char *s, size_t rem) {
    for (int k = 0; k < N_SPECIALS; k++)
        if (rem >= e->special_len[k] && !memcmp(s, SPECIALS[k], e->special_len[k])) return k;
    return -1;
}

/* One code point c of class cls other than a plain ASCII letter or digit: dropped, a word break, an accent
 * to strip, or lower-cased / decomposed into kept characters (punctuation and CJK ideographs are words of
 * their own). 0, or -1 (gf_fail) if out of memory. */
static int add_code_point(encoder *e, uint32_t c, int cls) {
    switch (cls) {
    case GF_UC_DROP: return 0; /* removed without splitting the word */
    case GF_UC_SPACE: return end_word(e);
    case GF_UC_MN: return 0; /* accent stripping */
    case GF_UC_MN0:
        if (e->has_comb && e->n_buf > 0 && e->cp[e->n_buf - 1] != MARK && !e->too_long) e->cp[e->n_buf++] = MARK;
        return 0;
    default: break;
    }
    if (cls == GF_UC_CJK && end_word(e)) return -1; /* a word of its own */
    uint32_t m[GF_UC_MAX_MAP];
    int nm = 1;
    if (c < 0x80) m[0] = c; /* ASCII punctuation */
    else nm = gf_uc_map(c, m);
    for (int j = 0; j < nm; j++) {
        int mc = m[j] == c ? cls : gf_uc_class(m[j]);
        if (mc == GF_UC_PUNCT) {
            if (end_word(e)) return -1;
            add_char(e, m[j], mc);
            if (end_word(e)) return -1;
        } else {
            add_char(e, m[j], mc);
        }
    }
    if (cls == GF_UC_CJK && end_word(e)) return -1;
    return 0;
}

int gf_wordpiece_encode(const gf_tokenizer *t, const char *text, size_t n, const char *what, gf_ids *out) {
    return gf_wordpiece_encode_counted(t, text, n, what, out, NULL);
}

int gf_wordpiece_encode_counted(const gf_tokenizer *t, const char *text, size_t n, const char *what, gf_ids *out,
                                int64_t *n_unk) {
    if (!what) what = "text";
    encoder *e = malloc(sizeof *e);
    if (!e) return gf_fail("out of memory tokenizing %s", what);
    encoder_init(e, t, out);
    const unsigned char *s = (const unsigned char *)text;
    int64_t start_n = out->n;
    for (size_t i = 0; i < n;) {
        uint32_t c = s[i];
        int cls;
        if (c < 0x80) {
            int k = c == '[' ? special_at(e, s + i, n - i) : -1;
            if (k >= 0) {
                if (end_word(e) || push(e, e->special_id[k])) goto fail;
                i += e->special_len[k];
                continue;
            }
            if (e->unk_text_len && c == (unsigned char)e->unk_text[0] && n - i >= e->unk_text_len &&
                !memcmp(s + i, e->unk_text, e->unk_text_len)) { /* split out like a special token */
                if (end_word(e) || push(e, e->unk)) goto fail;
                i += e->unk_text_len;
                continue;
            }
            i++;
            cls = gf_uc_ascii_class[c];
            if (cls == GF_UC_OTHER) { /* the common case: a letter or digit */
                add_char(e, c >= 'A' && c <= 'Z' ? c + 32 : c, GF_UC_OTHER);
                continue;
            }
        } else {
            int l = gf_utf8_decode(s + i, n - i, &c);
            if (!l) {
                gf_fail("%s: invalid UTF-8 at byte %zu (0x%02X); expected UTF-8 text\nHINT: convert it, e.g. "
                        "iconv -f latin1 -t utf-8", what, i, s[i]);
                goto fail;
            }
            i += (size_t)l;
            cls = gf_uc_class(c);
        }
        if (add_code_point(e, c, cls)) goto fail;
    }
    if (end_word(e)) goto fail;
    if (n_unk) *n_unk += e->n_unk;
    free(e);
    return 0;
fail:
    out->n = start_n;
    free(e);
    return -1;
}
