"""Escaping for the scripts that write docs (Markdown tables, SVG), which run without the library: md_cell is
gf_escape_md and xml_text is gf_escape_xml of src/io/escape.c, the same rules to the byte (tests/precision_study.sh
holds them to the library's on random strings). A str may hold bytes that are not UTF-8 as surrogate escapes
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


def xml_text(s):
    """XML text or an attribute value: & < > " ' as entities, tab, LF, CR as character references, the
    characters XML 1.0 forbids (other C0 controls, U+FFFE, U+FFFF) and bytes that are not UTF-8 as U+FFFD."""
    ent = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;", "\t": "&#9;", "\n": "&#10;", "\r": "&#13;"}
    out = []
    for c, _ in _chars(s):
        if c is None or (c not in ent and (ord(c) < 0x20 or c in "\ufffe\uffff")):
            out.append(REPLACEMENT)
        else:
            out.append(ent.get(c, c))
    return "".join(out)
