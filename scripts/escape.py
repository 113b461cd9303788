"""Escaping for the scripts that write docs (Markdown tables) and the tables their figures are drawn from (TSV,
for `grassflow plot --table`), which run without the library: md_cell is gf_escape_md and tsv_cell is gf_escape_tsv
of src/io/escape.c, the same rules to the byte (tests/studies/precision_study.sh holds them to the library's on random
strings; grassflow plot reads tsv_cell's escapes back). A str may hold bytes that are not UTF-8 as surrogate escapes
(os.fsdecode's, errors="surrogateescape"); bytes are read as UTF-8."""

REPLACEMENT = "\ufffd"


def _chars(s):
    """(character, byte) pairs: a character of s, or a byte that is not part of valid UTF-8 (character None)."""
    b = s if isinstance(s, bytes) else s.encode("utf-8", "surrogateescape")
    for c in b.decode("utf-8", "surrogateescape"):
        if "\udc80" <= c <= "\udcff":
            yield None, ord(c) - 0xDC00
        else:
            yield c, None


def md_cell(s):
    """A Markdown table cell: \\ | ` * _ [ ] ~ backslash-escaped, & < > as entities, tab, LF, CR as \\t \\n \\r,
    other C0 controls, DEL and bytes that are not UTF-8 as \\xNN."""
    out = []
    for c, byte in _chars(s):
        if c is None:
            out.append("\\x%02x" % byte)
        elif c in "\\|`*_[]~":
            out.append("\\" + c)
        elif c in "&<>":
            out.append({"&": "&amp;", "<": "&lt;", ">": "&gt;"}[c])
        elif c in "\t\n\r":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r"}[c])
        elif ord(c) < 0x20 or c == "\x7f":
            out.append("\\x%02x" % ord(c))
        else:
            out.append(c)
    return "".join(out)


def tsv_cell(s):
    """A TSV cell: \\ as \\\\, tab, LF, CR as \\t \\n \\r, other C0 controls, DEL and bytes that are not UTF-8 as
    \\xNN."""
    out = []
    for c, byte in _chars(s):
        if c is None:
            out.append("\\x%02x" % byte)
        elif c in "\\\t\n\r":
            out.append({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}[c])
        elif ord(c) < 0x20 or c == "\x7f":
            out.append("\\x%02x" % ord(c))
        else:
            out.append(c)
    return "".join(out)
