/* Text for each output format from any bytes: one function per format (JSON string, XML/SVG text and
 * attribute, Markdown table cell, TSV field, terminal table cell), all on one walk over the string that
 * reads it as UTF-8 and hands each character, or each byte that is not part of valid UTF-8, to the format's
 * rule. The rules (include/grassflow.h says them to a user of the library):
 *   JSON      " \ and C0 controls escaped; bytes that are not UTF-8 become U+FFFD (JSON text is UTF-8)
 *   XML       & < > " ' as entities; tab, LF, CR as character references (an attribute keeps them); the
 *             characters XML 1.0 forbids (other C0 controls, U+FFFE, U+FFFF) and bytes that are not UTF-8
 *             become U+FFFD
 *   Markdown  \ | ` * _ [ ] ~ backslash-escaped, & < > as entities (no HTML, no link, no emphasis, no new
 *             cell); tab, LF, CR as \t \n \r, other C0 controls, DEL and bytes that are not UTF-8 as \xNN
 *   TSV       \ tab LF CR as \\ \t \n \r (a field never splits), other C0 controls, DEL and bytes that are
 *             not UTF-8 as \xNN
 *   terminal  tab, LF, CR as \t \n \r, other C0 controls, DEL and bytes that are not UTF-8 as \xNN, C1
 *             controls and the bidirectional controls as \uXXXX (nothing moves the cursor or reorders the
 *             line); padded with spaces to a width in columns
 *   name      a name or path in a line of a message: as terminal, and \ doubled (it reads back exactly)
 *   lines     a whole message (its names escaped already): as terminal, but LF, tab and \ kept as they are */
#include "io/escape.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

typedef enum { F_JSON, F_XML, F_MD, F_TSV, F_TERM, F_NAME, F_LINES } format;

/* Where escaped text goes: a FILE, or dst[0..cap) (never cut inside a unit: a character or an escape). */
typedef struct {
    FILE *f;
    char *dst;
    size_t cap, len, need; /* len: written to dst; need: the whole text's length */
    bool cut;
    int cols;              /* terminal columns of the whole text */
} sink;

static void emit(sink *o, const void *s, size_t n, int cols) {
    if (o->f) fwrite(s, 1, n, o->f);
    else if (!o->cut && o->len + n < o->cap) memcpy(o->dst + o->len, s, n), o->len += n;
    else o->cut = true;
    o->need += n;
    o->cols += cols;
}

static void emit_str(sink *o, const char *s) { emit(o, s, strlen(s), (int)strlen(s)); }

static void emit_hex(sink *o, const char *fmt, unsigned v) {
    char buf[16];
    snprintf(buf, sizeof buf, fmt, v);
    emit_str(o, buf);
}

static const char REPLACEMENT[] = "\xEF\xBF\xBD"; /* U+FFFD */

/* Columns a character takes on a terminal: 0 for a combining mark (the main blocks), 2 for the wide East
 * Asian ranges, else 1. */
static int columns(uint32_t cp) {
    static const uint32_t zero[][2] = {{0x0300, 0x036F}, {0x0483, 0x0489}, {0x0591, 0x05BD}, {0x0610, 0x061A},
                                       {0x064B, 0x065F}, {0x1AB0, 0x1AFF}, {0x1DC0, 0x1DFF}, {0x200B, 0x200D},
                                       {0x20D0, 0x20FF}, {0xFE00, 0xFE0F}, {0xFE20, 0xFE2F}};
    static const uint32_t wide[][2] = {{0x1100, 0x115F}, {0x2E80, 0x303E}, {0x3041, 0x33FF}, {0x3400, 0x4DBF},
                                       {0x4E00, 0x9FFF}, {0xA000, 0xA4CF}, {0xAC00, 0xD7A3}, {0xF900, 0xFAFF},
                                       {0xFE30, 0xFE4F}, {0xFF00, 0xFF60}, {0xFFE0, 0xFFE6}, {0x1F300, 0x1F64F},
                                       {0x1F900, 0x1F9FF}, {0x20000, 0x3FFFD}};
    for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++)
        if (cp >= zero[i][0] && cp <= zero[i][1]) return 0;
    for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++)
        if (cp >= wide[i][0] && cp <= wide[i][1]) return 2;
    return 1;
}

/* A control's short escape (\t \n \r), or NULL. */
static const char *short_escape(uint32_t cp) {
    return cp == '\t' ? "\\t" : cp == '\n' ? "\\n" : cp == '\r' ? "\\r" : NULL;
}

/* The character cp (its n bytes at p; n == 0: the byte *p, not part of valid UTF-8) in format fmt. */
static void put_char(sink *o, format fmt, const unsigned char *p, int n, uint32_t cp) {
    const bool bad = n == 0, c0 = !bad && (cp < 0x20 || cp == 0x7F);
    const char *sh = bad ? NULL : short_escape(cp);
    switch (fmt) {
    case F_JSON:
        if (bad) return emit(o, REPLACEMENT, 3, 1);
        if (cp == '"' || cp == '\\') return emit(o, cp == '"' ? "\\\"" : "\\\\", 2, 2);
        if (cp < 0x20) return emit_hex(o, "\\u%04x", cp);
        break;
    case F_XML: {
        static const char *const ent[] = {['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;", ['"'] = "&quot;",
                                          ['\''] = "&#39;", ['\t'] = "&#9;", ['\n'] = "&#10;", ['\r'] = "&#13;"};
        if (!bad && cp < sizeof ent / sizeof ent[0] && ent[cp]) return emit_str(o, ent[cp]);
        if (bad || cp < 0x20 || cp == 0xFFFE || cp == 0xFFFF) return emit(o, REPLACEMENT, 3, 1);
        break;
    }
    case F_MD:
        if (!bad && cp && cp < 0x80 && strchr("\\|`*_[]~", (int)cp)) {
            const char e[2] = {'\\', (char)cp};
            return emit(o, e, 2, 2);
        }
        if (!bad && (cp == '&' || cp == '<' || cp == '>'))
            return emit_str(o, cp == '&' ? "&amp;" : cp == '<' ? "&lt;" : "&gt;");
        /* fall through - the controls as in TSV */
    case F_TSV:
        if (fmt == F_TSV && !bad && cp == '\\') return emit(o, "\\\\", 2, 2);
        if (sh) return emit_str(o, sh);
        if (bad || c0) return emit_hex(o, "\\x%02x", bad ? *p : cp);
        break;
    case F_NAME:
    case F_LINES:
        if (fmt == F_NAME && !bad && cp == '\\') return emit(o, "\\\\", 2, 2);
        if (fmt == F_LINES && !bad && (cp == '\n' || cp == '\t')) break;
        /* fall through - the controls as on a terminal */
    case F_TERM:
        if (sh) return emit_str(o, sh);
        if (bad || c0) return emit_hex(o, "\\x%02x", bad ? *p : cp);
        if ((cp >= 0x80 && cp < 0xA0) || cp == 0x061C || cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) ||
            (cp >= 0x2066 && cp <= 0x2069))
            return emit_hex(o, "\\u%04x", cp);
        break;
    }
    emit(o, p, (size_t)n, fmt == F_TERM ? columns(cp) : 1);
}

/* s in format fmt into o. */
static void walk(sink *o, format fmt, const char *s) {
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t left = strlen((const char *)p);
    while (left) {
        uint32_t cp = 0;
        const int n = gf_utf8_decode(p, left, &cp);
        put_char(o, fmt, p, n, cp);
        p += n ? n : 1, left -= n ? (size_t)n : 1;
    }
}

static size_t to_buffer(char *dst, size_t cap, const char *s, format fmt, int width) {
    sink o = {.dst = dst, .cap = cap};
    walk(&o, fmt, s);
    for (int c = o.cols; c < width; c++) emit(&o, " ", 1, 1);
    if (dst && cap) dst[o.len] = '\0';
    return o.need;
}

size_t gf_escape_json(char *dst, size_t cap, const char *s) { return to_buffer(dst, cap, s, F_JSON, 0); }
size_t gf_escape_xml(char *dst, size_t cap, const char *s) { return to_buffer(dst, cap, s, F_XML, 0); }
size_t gf_escape_md(char *dst, size_t cap, const char *s) { return to_buffer(dst, cap, s, F_MD, 0); }
size_t gf_escape_tsv(char *dst, size_t cap, const char *s) { return to_buffer(dst, cap, s, F_TSV, 0); }
size_t gf_escape_term(char *dst, size_t cap, const char *s, int width) { return to_buffer(dst, cap, s, F_TERM, width); }
size_t gf_escape_name(char *dst, size_t cap, const char *s) { return to_buffer(dst, cap, s, F_NAME, 0); }
size_t gf_escape_lines(char *dst, size_t cap, const char *s) { return to_buffer(dst, cap, s, F_LINES, 0); }

/* 8 buffers a thread uses in turn: a message shows up to 8 names */
#define SHOW_SLOTS 8
#define SHOW_CAP 1024
const char *gf_show_name(const char *s) {
    if (!s) return "(null)"; /* as printf's %s shows it */
    static _Thread_local char slot[SHOW_SLOTS][SHOW_CAP];
    static _Thread_local unsigned next;
    char *buf = slot[next++ % SHOW_SLOTS];
    if (gf_escape_name(buf, SHOW_CAP - 3, s) >= SHOW_CAP - 3) strcat(buf, "...");
    return buf;
}

/* In one fwrite: stderr is unbuffered, and a write per character let the messages of two processes sharing it
 * (the ranks of an MPI job) interleave character by character. */
int gf_print_lines(FILE *f, const char *s) {
    char small[4096], *buf = small;
    const size_t need = gf_escape_lines(small, sizeof small, s);
    if (need >= sizeof small && (buf = malloc(need + 1))) gf_escape_lines(buf, need + 1, s);
    if (buf) {
        fwrite(buf, 1, strlen(buf), f);
        if (buf != small) free(buf);
    } else { /* no memory for the whole message: unit by unit */
        sink o = {.f = f};
        walk(&o, F_LINES, s);
    }
    return ferror(f) ? -1 : 0;
}

void gf_json_put_str(FILE *f, const char *s) {
    sink o = {.f = f};
    fputc('"', f);
    walk(&o, F_JSON, s);
    fputc('"', f);
}

int64_t gf_utf8_invalid_at(const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    const size_t left = strlen(s);
    for (size_t i = 0; i < left;) {
        uint32_t cp;
        const int n = gf_utf8_decode(p + i, left - i, &cp);
        if (!n) return (int64_t)i;
        i += (size_t)n;
    }
    return -1;
}

char *gf_json_utf8(char *json) {
    if (!json) return NULL;
    const unsigned char *p = (const unsigned char *)json;
    size_t left = strlen(json), bad = 0;
    for (size_t i = 0; i < left;) {
        uint32_t cp;
        const int n = gf_utf8_decode(p + i, left - i, &cp);
        bad += !n, i += n ? (size_t)n : 1;
    }
    if (!bad) return json;
    char *out = malloc(left + 2 * bad + 1);
    if (!out) {
        free(json);
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < left;) { /* outside strings every byte is ASCII: only a string's bytes change */
        uint32_t cp;
        const int n = gf_utf8_decode(p + i, left - i, &cp);
        if (n) memcpy(out + k, p + i, (size_t)n), k += (size_t)n, i += (size_t)n;
        else memcpy(out + k, REPLACEMENT, 3), k += 3, i++;
    }
    out[k] = '\0';
    free(json);
    return out;
}
