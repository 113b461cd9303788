#include "text/tokenizer.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

const char *gf_tok_kind_name(gf_tok_kind k) {
    static const char *const names[] = {"word", "char", "byte", "wordpiece"};
    return (k >= 0 && k <= GF_TOK_WORDPIECE) ? names[k] : "?";
}

static gf_tokenizer *alloc_tok(gf_tok_kind kind) {
    gf_tokenizer *t = calloc(1, sizeof *t);
    if (!t) {
        gf_fail("out of memory creating a tokenizer");
        return NULL;
    }
    t->kind = kind;
    t->unk_id = t->eos_id = -1;
    gf_vocab_init(&t->vocab);
    return t;
}

void gf_tokenizer_free(gf_tokenizer *t) {
    if (!t) return;
    gf_vocab_free(&t->vocab);
    free(t->source);
    free(t);
}

/* Length of the UTF-8 sequence at s[0..n), 0 if invalid (overlong, surrogate, > U+10FFFF, truncated). */
static int utf8_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    if (c < 0x80) return 1;
    int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (!len || c > 0xF4 || (size_t)len > n) return 0;
    for (int i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    if (len == 3 && ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] >= 0xA0))) return 0;
    if (len == 4 && ((c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] >= 0x90))) return 0;
    return len;
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

/* The words of a text as the word tokenizer reads it, one line at a time: a line is what lies before each
 * '\n', and the text after the last '\n' if it is not empty; its words are the runs of bytes between
 * is_space bytes; every line ends in an end-of-line token (<eos>). */
typedef struct {
    const char *t;
    size_t n, i, eol;
    bool in_line;
} word_iter;

/* The next item of it: 1 for a word (text[*w .. *w + *wl)), 2 for the end of a line, 0 past the text. */
static int next_word(word_iter *it, size_t *w, size_t *wl) {
    if (!it->in_line) {
        if (it->i >= it->n) return 0;
        for (it->eol = it->i; it->eol < it->n && it->t[it->eol] != '\n';) it->eol++;
        it->in_line = true;
    }
    size_t j = it->i;
    while (j < it->eol && is_space(it->t[j])) j++;
    if (j < it->eol) {
        *w = j;
        while (j < it->eol && !is_space(it->t[j])) j++;
        *wl = j - *w;
        it->i = j;
        return 1;
    }
    it->in_line = false;
    it->i = it->eol + 1;
    return 2;
}

int64_t gf_text_word_count(const char *text, size_t n) {
    word_iter it = {.t = text, .n = n};
    size_t w, wl;
    int64_t k = 0;
    while (next_word(&it, &w, &wl)) k++;
    return k;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

gf_tokenizer *gf_tokenizer_build(gf_tok_kind kind, const char *text, size_t n) {
    if (kind == GF_TOK_BYTE) return gf_tokenizer_bytes();
    if (kind != GF_TOK_WORD && kind != GF_TOK_CHAR) {
        gf_fail("gf_tokenizer_build: only word and char vocabularies are built from text");
        return NULL;
    }
    gf_tokenizer *t = alloc_tok(kind);
    if (!t) return NULL;
    if (kind == GF_TOK_WORD) {
        /* order of first appearance, like pytorch/examples' Dictionary */
        word_iter it = {.t = text, .n = n};
        size_t w, wl;
        for (int k; (k = next_word(&it, &w, &wl));) {
            for (size_t i = 0, l; k == 1 && i < wl; i += l) /* stored as JSON (UTF-8) in every checkpoint */
                if (!(l = (size_t)utf8_len((const unsigned char *)text + w + i, wl - i))) {
                    gf_fail("invalid UTF-8 at byte %zu of the training text; the word vocabulary is stored in every "
                            "checkpoint as JSON text, which is UTF-8 (convert the text, e.g. iconv -f latin1 -t "
                            "utf-8, or use --tokenizer byte for arbitrary bytes)", w + i);
                    goto fail;
                }
            if ((k == 1 ? gf_vocab_add_text(&t->vocab, text + w, wl) : gf_vocab_add(&t->vocab, "<eos>", 5)) < 0)
                goto fail;
        }
        t->eos_id = gf_vocab_add(&t->vocab, "<eos>", 5);
        t->unk_id = gf_vocab_add(&t->vocab, "<unk>", 5);
        if (t->eos_id < 0 || t->unk_id < 0) goto fail;
        return t;
    }
    /* char: the sorted set of code points */
    gf_vocab seen;
    gf_vocab_init(&seen);
    for (size_t i = 0; i < n;) {
        int l = utf8_len((const unsigned char *)text + i, n - i);
        if (!l) {
            gf_vocab_free(&seen);
            gf_fail("invalid UTF-8 at byte %zu of the training text; char tokenization needs UTF-8 (use "
                    "--tokenizer byte for arbitrary bytes)", i);
            goto fail;
        }
        if (gf_vocab_add_text(&seen, text + i, (size_t)l) < 0) {
            gf_vocab_free(&seen);
            goto fail;
        }
        i += (size_t)l;
    }
    if (seen.n > 1) /* UTF-8 byte order = code point order; an empty text has no array at all */
        qsort(seen.str, (size_t)seen.n, sizeof *seen.str, cmp_str);
    for (int64_t k = 0; k < seen.n; k++)
        if (gf_vocab_add(&t->vocab, seen.str[k], strlen(seen.str[k])) < 0) {
            gf_vocab_free(&seen);
            goto fail;
        }
    gf_vocab_free(&seen);
    return t;
fail:
    gf_tokenizer_free(t);
    return NULL;
}

gf_tokenizer *gf_tokenizer_bytes(void) {
    gf_tokenizer *t = alloc_tok(GF_TOK_BYTE);
    if (!t) return NULL;
    for (int b = 0; b < 256; b++) {
        char c = (char)b;
        /* byte 0 is stored as its own 1-byte string; strings carry lengths */
        if (gf_vocab_add(&t->vocab, &c, 1) < 0) {
            gf_tokenizer_free(t);
            return NULL;
        }
    }
    return t;
}

char *gf_tokenizer_to_json(const gf_tokenizer *t) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "kind", gf_tok_kind_name(t->kind));
    if (t->kind != GF_TOK_BYTE) {
        cJSON *a = cJSON_AddArrayToObject(o, "vocab");
        for (int64_t i = 0; i < t->vocab.n; i++) cJSON_AddItemToArray(a, cJSON_CreateString(t->vocab.str[i]));
    }
    if (t->unk_text[0]) cJSON_AddStringToObject(o, "unk_text", t->unk_text);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!s) gf_fail("out of memory saving a tokenizer");
    return s;
}

int gf_tokenizer_set_unk_text(gf_tokenizer *t, const char *spelling) {
    if (!spelling || !*spelling) {
        t->unk_text[0] = '\0';
        return 0;
    }
    if (t->kind != GF_TOK_WORDPIECE)
        return gf_fail("an unknown-word spelling (unk_text) is a WordPiece rule; this is a %s tokenizer",
                       gf_tok_kind_name(t->kind));
    size_t n = strlen(spelling);
    bool ok = n < sizeof t->unk_text;
    for (size_t i = 0; ok && i < n; i++) ok = spelling[i] > ' ' && spelling[i] < 0x7F;
    if (!ok)
        return gf_fail("unknown-word spelling \"%.40s\": expected 1 to %zu printable ASCII bytes without spaces, "
                       "e.g. <unk>", spelling, sizeof t->unk_text - 1);
    memcpy(t->unk_text, spelling, n + 1);
    return 0;
}

const char *gf_tokenizer_unk_text(const gf_tokenizer *t) { return t->unk_text; }

/* The saved form's "unk_text" (absent: no such rule, as in every tokenizer saved before it existed). */
static int read_unk_text(gf_tokenizer *t, const cJSON *o, const char *source) {
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(o, "unk_text");
    if (!u) return 0;
    if (!cJSON_IsString(u)) return gf_fail("%s: the saved tokenizer's \"unk_text\" is not a string", source);
    if (gf_tokenizer_set_unk_text(t, u->valuestring)) {
        gf_fail_context(" (%s: the saved tokenizer's \"unk_text\")", source);
        return -1;
    }
    return 0;
}

gf_tokenizer *gf_tokenizer_from_json(const char *json, const char *source) {
    cJSON *o = cJSON_Parse(json);
    gf_tokenizer *t = NULL;
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(o, "kind");
    if (!cJSON_IsString(kind)) {
        gf_fail("%s: the saved tokenizer has no \"kind\"", source);
        goto done;
    }
    int k = 0;
    while (k <= GF_TOK_WORDPIECE && strcmp(kind->valuestring, gf_tok_kind_name((gf_tok_kind)k))) k++;
    if (k > GF_TOK_WORDPIECE) {
        gf_fail("%s: unknown tokenizer kind \"%s\"", source, kind->valuestring);
        goto done;
    }
    if (k == GF_TOK_BYTE) {
        t = gf_tokenizer_bytes();
        goto done;
    }
    const cJSON *voc = cJSON_GetObjectItemCaseSensitive(o, "vocab");
    if (!cJSON_IsArray(voc)) {
        gf_fail("%s: the saved tokenizer has no \"vocab\" list", source);
        goto done;
    }
    t = alloc_tok((gf_tok_kind)k);
    if (!t) goto done;
    int64_t i = 0;
    for (const cJSON *it = voc->child; it; it = it->next, i++) {
        if (!cJSON_IsString(it) || gf_vocab_add(&t->vocab, it->valuestring, strlen(it->valuestring)) != i) {
            gf_fail("%s: vocabulary entry %lld is not a string or repeats an earlier one", source, (long long)i);
            gf_tokenizer_free(t);
            t = NULL;
            goto done;
        }
    }
    if (k == GF_TOK_WORD) {
        t->eos_id = gf_vocab_find(&t->vocab, "<eos>", 5);
        t->unk_id = gf_vocab_find(&t->vocab, "<unk>", 5);
    } else if (k == GF_TOK_WORDPIECE) {
        t->unk_id = gf_vocab_find(&t->vocab, "[UNK]", 5);
    }
    if ((k == GF_TOK_WORD && (t->eos_id < 0 || t->unk_id < 0)) || (k == GF_TOK_WORDPIECE && t->unk_id < 0)) {
        gf_fail("%s: the %s vocabulary lacks %s; it could not encode a line end or an unknown word\nHINT: the "
                "tokenizer was edited or forged; use a checkpoint as grassflow wrote it", source,
                k == GF_TOK_WORD ? "word" : "WordPiece", k == GF_TOK_WORD ? "\"<eos>\" or \"<unk>\"" : "\"[UNK]\"");
        gf_tokenizer_free(t);
        t = NULL;
        goto done;
    }
    if (read_unk_text(t, o, source)) {
        gf_tokenizer_free(t);
        t = NULL;
        goto done;
    }
    t->source = strdup(source);
done:
    cJSON_Delete(o);
    return t;
}

/* The char tokenizer's ids of text[0..n): a character outside the vocabulary fails the text, or with c given
 * is skipped and counted. */
static int tokenize_chars(const gf_tokenizer *t, const char *text, size_t n, const char *what, gf_ids *out,
                          gf_text_counts *c) {
    for (size_t i = 0; i < n;) {
        int l = utf8_len((const unsigned char *)text + i, n - i);
        if (!l) return gf_fail("%s: invalid UTF-8 at byte %zu", what, i);
        int32_t id = gf_vocab_find(&t->vocab, text + i, (size_t)l);
        if (id < 0 && !c)
            return gf_fail("%s: character '%.*s' at byte %zu is not in the vocabulary of this char tokenizer (the "
                           "characters of the corpus it was built from)\nHINT: leave the character out; a model that "
                           "reads any text is trained with grassflow train --tokenizer byte", what, l, text + i, i);
        if (id < 0 && c->skipped++ == 0) c->first_skipped = (int64_t)i;
        if (id >= 0 && gf_ids_push(out, id)) return -1;
        i += (size_t)l;
    }
    return 0;
}

/* The word tokenizer's ids of text[0..n), words outside the vocabulary as <unk> (counted into c, if given). */
static int tokenize_words(const gf_tokenizer *t, const char *text, size_t n, gf_ids *out, gf_text_counts *c) {
    word_iter it = {.t = text, .n = n};
    size_t w, wl;
    for (int k; (k = next_word(&it, &w, &wl));) {
        int32_t id = k == 1 ? gf_vocab_find(&t->vocab, text + w, wl) : t->eos_id;
        if (id < 0 && c) c->unknown++;
        if (gf_ids_push(out, id >= 0 ? id : t->unk_id)) return -1;
    }
    return 0;
}

int gf_tokenize_counted(const gf_tokenizer *t, const char *text, size_t n, const char *what, gf_ids *out,
                        gf_text_counts *c) {
    const int64_t n0 = out->n;
    int rc;
    switch (t->kind) {
    case GF_TOK_BYTE:
        rc = 0;
        for (size_t i = 0; i < n && !rc; i++) rc = gf_ids_push(out, (unsigned char)text[i]);
        break;
    case GF_TOK_CHAR: rc = tokenize_chars(t, text, n, what, out, c); break;
    case GF_TOK_WORD: rc = tokenize_words(t, text, n, out, c); break;
    case GF_TOK_WORDPIECE: rc = gf_wordpiece_encode_counted(t, text, n, what, out, c ? &c->unknown : NULL); break;
    default: return gf_fail("unknown tokenizer kind");
    }
    if (rc || !c) return rc;
    c->tokens += out->n - n0;
    c->words += t->kind == GF_TOK_WORD ? out->n - n0 : gf_text_word_count(text, n); /* the same count */
    return 0;
}

int gf_tokenize(const gf_tokenizer *t, const char *text, size_t n, const char *what, gf_ids *out) {
    return gf_tokenize_counted(t, text, n, what, out, NULL);
}

bool gf_tok_piece_out(const gf_tokenizer *t, int32_t id, size_t len, char last, const char **piece, size_t *pl,
                      bool *space) {
    if (id < 0 || id >= t->vocab.n) return false;
    const char *p = t->vocab.str[id];
    size_t n = t->vocab.len[id];
    *space = false;
    if (t->kind == GF_TOK_WORD) {
        if (id == t->eos_id) {
            p = "\n";
            n = 1;
        } else {
            *space = len > 0 && last != '\n';
        }
    } else if (t->kind == GF_TOK_WORDPIECE) {
        if (id == t->unk_id && t->unk_text[0]) {
            p = t->unk_text;
            n = strlen(p);
            *space = len > 0;
        } else if (n > 2 && p[0] == '#' && p[1] == '#') {
            p += 2;
            n -= 2;
        } else {
            *space = len > 0;
        }
    }
    *piece = p;
    *pl = n;
    return true;
}

char *gf_tokenizer_decode(const gf_tokenizer *t, const int32_t *ids, int64_t n, size_t *out_len) {
    size_t cap = 64, len = 0;
    char *s = malloc(cap);
    if (!s) goto oom;
    for (int64_t i = 0; i < n; i++) {
        const char *p;
        size_t pl;
        bool space;
        if (!gf_tok_piece_out(t, ids[i], len, len ? s[len - 1] : '\0', &p, &pl, &space)) continue;
        size_t need = len + space + pl + 1;
        if (need > cap) {
            while (cap < need) cap *= 2;
            char *ns = realloc(s, cap);
            if (!ns) goto oom;
            s = ns;
        }
        if (space) s[len++] = ' ';
        memcpy(s + len, p, pl);
        len += pl;
    }
    s[len] = '\0';
    if (out_len) *out_len = len;
    return s;
oom:
    free(s);
    gf_fail("out of memory decoding %lld token ids", (long long)n);
    return NULL;
}

gf_tok_kind gf_tokenizer_kind(const gf_tokenizer *t) { return t->kind; }
int64_t gf_tokenizer_vocab_size(const gf_tokenizer *t) { return t->vocab.n; }
int32_t gf_tokenizer_unk_id(const gf_tokenizer *t) { return t->unk_id; }
int32_t gf_tokenizer_eos_id(const gf_tokenizer *t) { return t->eos_id; }

const char *gf_tokenizer_piece(const gf_tokenizer *t, int32_t id, size_t *len) {
    if (id < 0 || id >= t->vocab.n) return NULL;
    if (len) *len = t->vocab.len[id];
    return t->vocab.str[id];
}

int32_t gf_tokenizer_find(const gf_tokenizer *t, const char *piece, size_t len) {
    return gf_vocab_find(&t->vocab, piece, len);
}

int gf_tokenizer_encode_counted(const gf_tokenizer *t, const char *text, size_t n, const char *what, int32_t **ids,
                                int64_t *n_ids, gf_text_counts *counts) {
    gf_ids a = {0};
    *ids = NULL;
    *n_ids = 0;
    if (counts) *counts = (gf_text_counts){.first_skipped = -1};
    if (gf_tokenize_counted(t, text, n, what ? what : "text", &a, counts)) {
        gf_ids_free(&a);
        return -1;
    }
    *ids = a.v;
    *n_ids = a.n;
    return 0;
}

int gf_tokenizer_encode(const gf_tokenizer *t, const char *text, size_t n, const char *what, int32_t **ids,
                        int64_t *n_ids) {
    return gf_tokenizer_encode_counted(t, text, n, what, ids, n_ids, NULL);
}

int gf_tokenizer_encode_prompt(const gf_tokenizer *t, const char *prompt, size_t n, const char *what,
                               int32_t **ids, int64_t *n_ids) {
    if (gf_tokenizer_encode(t, prompt, n, what, ids, n_ids)) return -1;
    /* a word prompt gets <eos> at its end like every line; continue the line instead */
    if (t->kind == GF_TOK_WORD && *n_ids > 0 && (n == 0 || prompt[n - 1] != '\n')) --*n_ids;
    if (*n_ids > 0) return 0;
    int32_t start = t->eos_id >= 0 ? t->eos_id : 0;
    if (t->kind == GF_TOK_CHAR || t->kind == GF_TOK_BYTE) {
        int32_t nl = gf_vocab_find(&t->vocab, "\n", 1);
        if (nl >= 0) start = nl;
    }
    int32_t *one = realloc(*ids, sizeof *one);
    if (!one) {
        free(*ids);
        *ids = NULL;
        return gf_fail("out of memory encoding %s", what ? what : "a prompt");
    }
    one[0] = start;
    *ids = one;
    *n_ids = 1;
    return 0;
}
