/* Incremental detokenisation: the text each new token adds, in O(piece length) per token, with exactly
 * the bytes gf_tokenizer_decode gives for the whole sequence (both follow gf_tok_piece_out). The decoder
 * keeps what the rule needs of the text so far (its length and last byte); a byte tokenizer also holds
 * back the start of a UTF-8 sequence until the sequence completes or turns out invalid. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "text/tokenizer.h"

struct gf_detok {
    const gf_tokenizer *t;
    char *out;                /* the increment handed out: cap bytes */
    size_t cap;
    size_t len;               /* bytes of the decoded text so far (held-back bytes included) */
    char last;                /* its last byte */
    unsigned char held[4];    /* byte tokenizer: an incomplete UTF-8 sequence */
    int n_held, need;         /* bytes held, bytes the sequence needs */
    bool prompt_space;        /* a space still owed between the prompt and the first text */
};

gf_detok *gf_detok_create(const gf_tokenizer *t, const char *prompt, size_t n) {
    gf_detok *d = calloc(1, sizeof *d);
    size_t longest = 0;
    for (int64_t i = 0; i < t->vocab.n; i++) longest = t->vocab.len[i] > longest ? t->vocab.len[i] : longest;
    /* the prompt's space, a separator, the held bytes, the piece, a NUL */
    if (d) d->cap = longest + 8;
    if (!d || !(d->out = malloc(d->cap))) {
        free(d);
        gf_fail("out of memory creating a detokeniser for a %lld-token vocabulary", (long long)t->vocab.n);
        return NULL;
    }
    d->t = t;
    d->prompt_space = (t->kind == GF_TOK_WORD || t->kind == GF_TOK_WORDPIECE) && n > 0 && prompt[n - 1] != '\n';
    return d;
}

void gf_detok_free(gf_detok *d) {
    if (!d) return;
    free(d->out);
    free(d);
}

/* Bytes of the UTF-8 sequence that lead byte b starts (2-4), or 0 if b cannot start a longer one. */
static int lead_len(unsigned char b) {
    if (b >= 0xC2 && b <= 0xDF) return 2;
    if (b >= 0xE0 && b <= 0xEF) return 3;
    if (b >= 0xF0 && b <= 0xF4) return 4;
    return 0;
}

/* Whether b can follow held[0..n) in a valid sequence (no overlong forms, surrogates or > U+10FFFF). */
static bool continues(const unsigned char *held, int n, unsigned char b) {
    unsigned char lo = 0x80, hi = 0xBF;
    if (n == 1) {
        if (held[0] == 0xE0) lo = 0xA0;
        if (held[0] == 0xED) hi = 0x9F;
        if (held[0] == 0xF0) lo = 0x90;
        if (held[0] == 0xF4) hi = 0x8F;
    }
    return b >= lo && b <= hi;
}

/* Byte tokenizer: put byte b through the hold-back; what is released goes to out (o bytes so far). */
static size_t push_byte(gf_detok *d, unsigned char b, size_t o) {
    if (d->n_held > 0) {
        if (continues(d->held, d->n_held, b)) {
            d->held[d->n_held++] = b;
            if (d->n_held < d->need) return o;
            memcpy(d->out + o, d->held, (size_t)d->n_held); /* complete */
            o += (size_t)d->n_held;
            d->n_held = 0;
            return o;
        }
        memcpy(d->out + o, d->held, (size_t)d->n_held); /* invalid: out as they are */
        o += (size_t)d->n_held;
        d->n_held = 0;
    }
    if ((d->need = lead_len(b)) > 0) {
        d->held[0] = b;
        d->n_held = 1;
    } else {
        d->out[o++] = (char)b;
    }
    return o;
}

/* The owed space between the prompt and the first text, if that text does not start with a newline. */
static size_t settle_prompt_space(gf_detok *d, size_t o) {
    if (!d->prompt_space || o == 0) return o;
    d->prompt_space = false;
    if (d->out[0] == '\n') return o;
    memmove(d->out + 1, d->out, o);
    d->out[0] = ' ';
    return o + 1;
}

const char *gf_detok_push(gf_detok *d, int32_t id, size_t *len) {
    const char *p;
    size_t pl, o = 0;
    bool space;
    if (gf_tok_piece_out(d->t, id, d->len, d->last, &p, &pl, &space)) {
        if (space) d->out[o++] = ' ';
        if (d->t->kind == GF_TOK_BYTE) {
            o = push_byte(d, (unsigned char)p[0], o);
        } else {
            memcpy(d->out + o, p, pl);
            o += pl;
        }
        d->len += space + pl;
        if (space + pl > 0) d->last = pl > 0 ? p[pl - 1] : ' ';
    }
    o = settle_prompt_space(d, o);
    d->out[o] = '\0';
    *len = o;
    return d->out;
}

const char *gf_detok_flush(gf_detok *d, size_t *len) {
    size_t o = (size_t)d->n_held;
    memcpy(d->out, d->held, o);
    o = settle_prompt_space(d, o);
    d->out[o] = '\0';
    *len = o;
    d->n_held = 0;
    return d->out;
}
