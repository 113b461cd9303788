#!/usr/bin/env bash
# scripts/precision_study.sh --quick end to end in seconds (toy sizes: grassmann-tiny, a few steps, corpora
# cut from the shipped data): the two compares, the scores with fp32, bf16 and int8 weights, the greedy
# texts, status, the page and its verdicts; a rerun skips every finished step; docs into a page with the
# markers replaces only what lies between them.
#   bash tests/studies/precision_study.sh [BUILD]
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
tmp=$(mktemp -d /tmp/grassflow-precision-study-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
O=$tmp/out
echo "precision_study: --quick"
GF=$B/grassflow bash scripts/precision_study.sh --quick --out "$O" >"$tmp/log" 2>&1 || fail "the quick study failed: $(tail -5 "$tmp/log")"
GF=$B/grassflow bash scripts/precision_study.sh --quick --out "$O" status >"$tmp/status" 2>&1
grep -q '^0 of 5 steps left' "$tmp/status" && pass "every step done: two trainings, three scores" || fail "status: $(cat "$tmp/status")"
Q=$O/quality.md
grep -Eq '^\| fp32 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ ± [0-9.]+ \|' "$Q" && grep -Eq '^\| bf16 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ ± [0-9.]+ \|' "$Q" &&
    grep -Eq "^bf16's mean validation perplexity is [0-9.]+ from fp32's, and fp32's two seeds are [0-9.]+ apart: \*\*(within|not within)\*\*" "$Q" &&
    pass "training: both seeds of both precisions, and the verdict against fp32's seed spread" || fail "training table: $(cat "$Q")"
grep -Eq '^\| int8 \| [0-9.]+ \| [+-][0-9.]+% \| 1.0% \| (met|\*\*not met\*\*) \|$' "$Q" && grep -Eq '^\| bf16 \| [0-9.]+ \| [+-][0-9.]+% \| 0.2% \| (met|\*\*not met\*\*) \|$' "$Q" &&
    pass "weights: each scored by the streaming engine, its change from fp32 against the issue's bound" || fail "weights table: $(cat "$Q")"
[ "$(grep -cE '^\| (The history of|In 1995 , the|The album was) \| .+ \| (all 8|the first [0-9] of 8) \| (all 8|the first [0-9] of 8) \|$' "$Q")" = 3 ] &&
    pass "greedy texts: three prompts, bf16's and int8's words compared with fp32's" || fail "greedy table: $(cat "$Q")"
grep -q -- '--precision bf16' "$Q" && grep -q -- '--stream --weights int8 --json' "$Q" && pass "the commands beside the tables" || fail "commands: $(cat "$Q")"
GF=$B/grassflow bash scripts/precision_study.sh --quick --out "$O" >"$tmp/log2" 2>&1
rc=$?
[ $rc = 0 ] && ! grep -q 'precision_study: .*grassflow \(compare\|eval\)' "$tmp/log2" && pass "a rerun runs nothing again" || fail "rerun: exit $rc: $(cat "$tmp/log2")"
printf 'top\n<!-- precision-quality -->\nold\n<!-- /precision-quality -->\nbottom\n' >"$tmp/precision.md"
/usr/bin/python3 scripts/precision_study.py docs "$O" "$tmp/precision.md" 2>/dev/null
head -1 "$tmp/precision.md" | grep -qx top && tail -1 "$tmp/precision.md" | grep -qx bottom && ! grep -qx old "$tmp/precision.md" &&
    grep -q '^### Quality (scripts/precision_study.sh)' "$tmp/precision.md" && pass "docs/precision.md: only the text between the markers is replaced" ||
    fail "docs into precision.md: $(cat "$tmp/precision.md" | head -5)"
GF=$B/grassflow bash scripts/precision_study.sh --quick --out "$O" nosuch >/dev/null 2>"$tmp/err" && fail "an unknown part was accepted" ||
    { grep -q "unknown argument 'nosuch'" "$tmp/err" && pass "an unknown part: an error naming it"  || fail "unknown part: $(cat "$tmp/err")"; }
echo "precision_study: the escaping of the scripts that write docs (scripts/escape.py) is the library's"
PYL=/usr/bin/python3 # an ASan+UBSan library (make test-san) needs the sanitizers' runtimes loaded first (tests/parity/python.sh)
if nm -D "$B/libgrassflow.so" 2>/dev/null | grep "U __asan_init" >/dev/null; then
    PYL="env LD_PRELOAD=$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so) ASAN_OPTIONS=detect_leaks=0:${ASAN_OPTIONS:-} $PYL"
fi
$PYL - "$B/libgrassflow.so" <<'PYEOF' 2>"$tmp/err" && pass "md_cell and tsv_cell give gf_escape_md's and gf_escape_tsv's bytes on 5,000 random strings" || fail "scripts/escape.py: $(tail -1 "$tmp/err")"
import ctypes, random, sys
sys.path.insert(0, "scripts")
import escape
lib = ctypes.CDLL(sys.argv[1])
def c(name, b):
    f = getattr(lib, name)
    f.restype, f.argtypes = ctypes.c_size_t, [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p]
    buf = ctypes.create_string_buffer(6 * len(b) + 1)
    f(buf, len(buf), b)
    return buf.value
r = random.Random(7)
alphabet = [bytes([i]) for i in range(1, 256)] + [b"\xc3\xa9", b"\xe2\x80\xae", b"\xef\xbf\xbe", b"\xf0\x9f\x98\x80"]
for _ in range(5000):
    b = b"".join(r.choice(alphabet) for _ in range(r.randrange(1, 40)))
    for name, py in (("gf_escape_md", escape.md_cell), ("gf_escape_tsv", escape.tsv_cell)):
        assert c(name, b) == py(b).encode("utf-8"), (name, b, c(name, b), py(b))
assert escape.md_cell("the <unk> , a|b") == "the &lt;unk&gt; , a\\|b"
PYEOF
[ "$fails" -eq 0 ] && echo "precision_study: all passed" || { echo "precision_study: $fails FAILED"; exit 1; }
