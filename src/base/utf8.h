/* UTF-8 decoding, one sequence at a time: for the readers of text (data/: tokenizers, corpora, SNLI files) and
 * the writers of every output format (io/escape.c), which must agree on what is valid UTF-8. */
#ifndef GF_CORE_UTF8_H
#define GF_CORE_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length of the valid UTF-8 sequence at s[0..n) (1-4), or 0 if invalid (overlong forms, surrogates,
 * code points above U+10FFFF and truncated sequences are invalid). */
static inline int gf_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
    unsigned char b = s[0];
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    int len;
    uint32_t c, lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (b >= 0xC2 && b <= 0xDF) len = 2, c = b & 0x1F;
    else if (b >= 0xE0 && b <= 0xEF) {
        len = 3, c = b & 0x0F;
        if (b == 0xE0) lo = 0xA0;
        if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        len = 4, c = b & 0x07;
        if (b == 0xF0) lo = 0x90;
        if (b == 0xF4) hi = 0x8F;
    } else return 0;
    if ((size_t)len > n || s[1] < lo || s[1] > hi) return 0;
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        c = (c << 6) | (s[i] & 0x3F);
    }
    *cp = c;
    return len;
}

#endif
