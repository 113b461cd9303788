#!/usr/bin/python3
"""Generate src/text/unicode_tables.c: the Unicode data the BERT basic tokenizer needs.

    /usr/bin/python3 scripts/gen_unicode_tables.py [OUTPUT]     (default: src/text/unicode_tables.c)

Standard library only (unicodedata and str.lower, so the tables follow the Unicode version of the
Python that runs it; the output records it). What Hugging Face's BertTokenizer (slow, uncased) does
per code point, and how the tables encode it (see src/text/unicode.h):

  class  one of OTHER, DROP (U+0000, U+FFFD, category C* except \\t \\n \\r: removed by _clean_text),
         SPACE (\\t \\n \\r space, Zs: mapped to a space; plus the other characters Python's str.split()
         splits on that survive cleaning: U+2028, U+2029), CJK (the ideograph ranges BERT lists: each one
         becomes a word of its own), PUNCT (ASCII 33-47, 58-64, 91-96, 123-126, or category P*: split off
         as one-character words), MN (category Mn: removed by strip-accents; MN0 when its canonical
         combining class is 0, which matters for canonical reordering), COMB (not Mn but a non-zero
         combining class: kept, and canonical reordering may move it).
         Stored as the start of each run of equal classes (binary search for the last start <= cp).
  map    lower-case (Python's full str.lower(), e.g. U+0130 -> "i" U+0307), then NFD, then drop Mn, for
         the code points where that differs from the identity, except Mn (always empty) and Hangul
         syllables (decomposed algorithmically in C). A sorted code point array with values: the
         replacement code point, or MAP_MULTI | length << 16 | offset into a pool.
  ccc    the canonical combining class of the COMB code points.

The script checks the assumptions the C code relies on and fails loudly if a Unicode version breaks one.
"""
import os
import re
import sys
import unicodedata as ud

MAXCP = 0x110000
CLASSES = ["OTHER", "DROP", "SPACE", "CJK", "PUNCT", "MN", "MN0", "COMB"]
C = {name: i for i, name in enumerate(CLASSES)}

# BERT's _is_chinese_char ranges (tokenization_bert.py): these are BERT's choice, not Unicode data.
CJK_RANGES = [(0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
              (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)]

HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fail(msg):
    sys.stderr.write("gen_unicode_tables.py: assumption broken: %s\n" % msg)
    sys.exit(1)


def valid(cp):
    return not (0xD800 <= cp <= 0xDFFF)


def cat(ch):
    return ud.category(ch)


def is_cjk(cp):
    return any(lo <= cp <= hi for lo, hi in CJK_RANGES)


def is_bert_punct(cp):
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return cat(chr(cp)).startswith("P")


def is_dropped(cp):
    ch = chr(cp)
    if cp in (0, 0xFFFD):
        return True
    return ch not in "\t\n\r" and cat(ch).startswith("C")


def is_space(cp):
    ch = chr(cp)
    if ch in " \t\n\r" or cat(ch) == "Zs":
        return True
    # whitespace_tokenize uses str.split(): anything Python calls whitespace that cleaning kept
    return ch.isspace() and not is_dropped(cp)


def strip_map(s):
    """lower-case, NFD, drop Mn (BasicTokenizer: token.lower() then _run_strip_accents)."""
    d = ud.normalize("NFD", s.lower())
    return "".join(x for x in d if cat(x) != "Mn")


def classify(cp):
    if not valid(cp):
        return C["DROP"]
    ch = chr(cp)
    if is_dropped(cp):
        return C["DROP"]
    if is_space(cp):
        return C["SPACE"]
    if is_cjk(cp):
        return C["CJK"]
    if is_bert_punct(cp):
        return C["PUNCT"]
    if cat(ch) == "Mn":
        return C["MN0"] if ud.combining(ch) == 0 else C["MN"]
    if ud.combining(ch) != 0:
        return C["COMB"]
    return C["OTHER"]


def main():
    cls = [classify(cp) for cp in range(MAXCP)]

    # ---- checks -------------------------------------------------------------------------------------
    for cp in range(MAXCP):
        if not valid(cp):
            continue
        ch = chr(cp)
        low = ch.lower()
        if low.lower() != low:
            fail("lower-casing U+%04X is not idempotent" % cp)
        if low != ch:
            # HF lower-cases the text one character at a time before cleaning (PreTrainedTokenizer.tokenize);
            # doing it per word after cleaning is the same only if lower-casing never touches these classes.
            if cls[cp] in (C["DROP"], C["SPACE"], C["CJK"]) or any(
                    cls[ord(x)] in (C["DROP"], C["SPACE"], C["CJK"]) for x in low):
                fail("lower-casing U+%04X involves a dropped/space/CJK character" % cp)
        if cls[cp] in (C["DROP"], C["SPACE"]):
            continue  # removed or a separator before any mapping
        m = strip_map(ch)
        if cls[cp] in (C["MN"], C["MN0"]) and m != "":
            fail("Mn U+%04X does not map to nothing" % cp)
        for x in m:
            if cls[ord(x)] in (C["DROP"], C["SPACE"]) or x.isspace():
                fail("U+%04X maps to a dropped or space character U+%04X" % (cp, ord(x)))
        # Canonical reordering sorts runs of non-zero-class characters; a stripped Mn of class 0 ends a run,
        # and the C code sees those only as whole input characters (MN0). One inside a decomposition must
        # sit next to a kept class-0 character of that decomposition (only stripped class-0 Mn between),
        # so that forgetting it merges a run with an empty one.
        if cls[cp] not in (C["MN"], C["MN0"]):
            full = ud.normalize("NFD", low)
            for j, x in enumerate(full):
                if cat(x) != "Mn" or ud.combining(x) != 0:
                    continue
                covered = False
                for step in (-1, 1):
                    k = j + step
                    while 0 <= k < len(full) and cat(full[k]) == "Mn" and ud.combining(full[k]) == 0:
                        k += step
                    if 0 <= k < len(full) and ud.combining(full[k]) == 0:
                        covered = True
                if not covered:
                    fail("the decomposition of U+%04X has a class-0 Mn the C code would miss" % cp)
        if cls[cp] == C["PUNCT"] and ud.combining(ch) != 0:
            fail("punctuation U+%04X has a non-zero combining class" % cp)
        if HANGUL_FIRST <= cp <= HANGUL_LAST:
            s = cp - HANGUL_FIRST
            want = chr(0x1100 + s // 588) + chr(0x1161 + (s % 588) // 28) + (chr(0x11A7 + s % 28) if s % 28 else "")
            if m != want or cls[cp] != C["OTHER"]:
                fail("Hangul syllable U+%04X does not decompose algorithmically" % cp)
    # Newer transformers apply NFC before splitting words; that changes nothing when lower-casing and
    # stripping a precomposed character equals doing it to its canonical decomposition.
    for cp in range(MAXCP):
        if not valid(cp):
            continue
        ch = chr(cp)
        d = ud.decomposition(ch)
        if d and not d.startswith("<"):
            parts = "".join(chr(int(h, 16)) for h in d.split())
            if strip_map(ch) != strip_map(parts):
                fail("NFC sensitivity at U+%04X" % cp)
    # Jamo produced by Hangul decomposition are plain letters
    for cp in list(range(0x1100, 0x1113)) + list(range(0x1161, 0x1176)) + list(range(0x11A8, 0x11C3)):
        if cls[cp] != C["OTHER"]:
            fail("jamo U+%04X is not class OTHER" % cp)

    # ---- class runs ---------------------------------------------------------------------------------
    starts, run_cls = [], []
    for cp in range(MAXCP):
        if cp == 0 or cls[cp] != cls[cp - 1]:
            starts.append(cp)
            run_cls.append(cls[cp])

    # ---- map ----------------------------------------------------------------------------------------
    keys, vals, pool = [], [], []
    max_len = 0
    for cp in range(MAXCP):
        if not valid(cp) or cls[cp] in (C["DROP"], C["SPACE"], C["MN"], C["MN0"]):
            continue
        if HANGUL_FIRST <= cp <= HANGUL_LAST:
            continue
        m = strip_map(chr(cp))
        if m == chr(cp):
            continue
        if len(m) == 0:
            fail("U+%04X (not Mn) maps to nothing" % cp)
        max_len = max(max_len, len(m))
        keys.append(cp)
        if len(m) == 1:
            vals.append(ord(m))
        else:
            vals.append(0x80000000 | (len(m) << 16) | len(pool))
            pool.extend(ord(x) for x in m)
    if len(pool) >= 0x10000:
        fail("map pool too large")
    with open(os.path.join(ROOT, "src", "data", "unicode.h"), encoding="utf-8") as f:
        GF_UC_MAX_MAP = int(re.search(r"#define GF_UC_MAX_MAP (\d+)", f.read()).group(1))
    if max_len > GF_UC_MAX_MAP:
        fail("a mapping is longer than GF_UC_MAX_MAP (%d in src/text/unicode.h): %d" % (GF_UC_MAX_MAP, max_len))

    comb = [(cp, ud.combining(chr(cp))) for cp in range(MAXCP) if cls[cp] == C["COMB"]]

    # ---- ASCII fast path ----------------------------------------------------------------------------
    ascii_cls = cls[:128]

    # ---- output -------------------------------------------------------------------------------------
    out = []
    w = out.append
    w("/* GENERATED by scripts/gen_unicode_tables.py from Python %s's unicodedata: Unicode %s.\n"
      % (sys.version.split()[0], ud.unidata_version))
    w(" * Do not edit; rerun: /usr/bin/python3 scripts/gen_unicode_tables.py\n")
    w(" * %d class runs, %d mapped code points (pool %d), %d COMB code points. */\n"
      % (len(starts), len(keys), len(pool), len(comb)))
    w('#include "text/unicode.h"\n\n')
    w('const char gf_uc_unicode_version[] = "%s";\n\n' % ud.unidata_version)

    def array(ctype, name, items, per_line, fmt):
        w("const %s %s[%d] = {\n" % (ctype, name, len(items)))
        for i in range(0, len(items), per_line):
            w("    " + ", ".join(fmt(x) for x in items[i:i + per_line]) + ",\n")
        w("};\n")

    w("const int gf_uc_n_runs = %d;\n" % len(starts))
    array("uint32_t", "gf_uc_run_start", starts, 10, lambda x: "0x%05X" % x)
    array("uint8_t", "gf_uc_run_class", run_cls, 24, str)
    w("\nconst uint8_t gf_uc_ascii_class[128] = {\n")
    for i in range(0, 128, 32):
        w("    " + ", ".join(str(x) for x in ascii_cls[i:i + 32]) + ",\n")
    w("};\n\n")
    w("const int gf_uc_n_map = %d;\n" % len(keys))
    array("uint32_t", "gf_uc_map_key", keys, 10, lambda x: "0x%05X" % x)
    array("uint32_t", "gf_uc_map_val", vals, 8, lambda x: "0x%08X" % x)
    array("uint32_t", "gf_uc_map_pool", pool, 10, lambda x: "0x%05X" % x)
    w("\nconst int gf_uc_n_comb = %d;\n" % len(comb))
    array("uint32_t", "gf_uc_comb_cp", [c for c, _ in comb], 10, lambda x: "0x%05X" % x)
    array("uint8_t", "gf_uc_comb_ccc", [k for _, k in comb], 24, str)
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "src", "data", "unicode_tables.c")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="ascii") as f:
        f.write("".join(out))
    os.replace(tmp, path)
    sys.stderr.write("gen_unicode_tables.py: Unicode %s, %d runs, %d mapped, pool %d, max map %d, %d COMB\n"
                     % (ud.unidata_version, len(starts), len(keys), len(pool), max_len, len(comb)))


if __name__ == "__main__":
    main()
