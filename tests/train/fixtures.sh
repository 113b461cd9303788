#!/usr/bin/env bash
# Files written by grassflow 0.1.0 (config format 1) and 0.2.0 (format 2) mean today what they meant then:
#  - the checkpoints in tests/fixtures/v1/ give the same logits and loss, to the bit, as grassflow 0.1.0
#    built from git on this machine (the bits of float code depend on the CPU and the BLAS kernel, so the
#    old code is rebuilt here rather than trusted from a recording);
#  - a training state saved by 0.1.0 at step 3 resumes and ends with the same weights, to the bit, as
#    0.1.0 resuming it on this machine; the recorded end of 0.1.0's own uninterrupted run
#    (tests/fixtures/v1/run-final-last.safetensors) agrees with both within 1e-5 on any kernel.
# Without git history (a tarball) both checks fall back to the recordings within 1e-5.
set -uo pipefail
BUILD=${1:-build}
GF="$BUILD/grassflow"
OLD=e72dcbf # grassflow 0.1.0, the last commit with config format 1
tmp=$(mktemp -d /tmp/grassflow-fixtures-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
F=tests/fixtures/v1

echo "fixtures: format-1 checkpoints give the bits grassflow 0.1.0 gives"
# the comparison needs the old code built exactly like this one: done for the default build; the
# sanitizer build (-O1) is held to the recordings
export MAKEFLAGS= MAKELEVEL= MFLAGS=
if [ "$BUILD" = build ] && git cat-file -e "$OLD^{commit}" 2>/dev/null; then
    mkdir -p "$tmp/old"
    git archive "$OLD" | tar -x -C "$tmp/old"
    if make -s -C "$tmp/old" -j2 build/libgrassflow.a build/grassflow >"$tmp/old-build.log" 2>&1; then
        # this build's flags (CFLAGS from the probes), the old library and headers
        flags=$(make -s --no-print-directory -f - print-flags <<'MK'
include Makefile
print-flags: ; @echo $(CFLAGS) '|' $(LDFLAGS) $(LDLIBS)
MK
)
        cflags=${flags%%|*}
        ldflags=${flags#*|}
        cflags=$(echo "$cflags" | sed 's/-MMD -MP//; s/-Iinclude//; s/-Isrc//')
        # shellcheck disable=SC2086
        if gcc $cflags -I"$tmp/old/include" -I"$tmp/old/src" -I"$tmp/old/tests" -o "$tmp/old_fixtures" \
            tests/unit/test_fixtures.c "$tmp/old/tests/testlib.c" "$tmp/old/build/libgrassflow.a" $ldflags -lcmocka \
            2>"$tmp/cc.log"; then
            mkdir -p "$tmp/rec"
            "$tmp/old_fixtures" --record "$tmp/rec" >/dev/null 2>&1 && pass "0.1.0 recorded its logits here" \
                || fail "0.1.0 could not record its logits"
            if "$BUILD/tests/test_fixtures" --expect "$tmp/rec" >"$tmp/out" 2>&1; then
                pass "every 0.1.0 fixture gives the same logits and loss, bit for bit, as 0.1.0 (the 0.2.0 ones: within 1e-5 of 0.2.0's recordings)"
            else
                fail "fixtures differ from 0.1.0: $(grep -m1 -E 'ERROR|error' "$tmp/out")"
            fi
        else
            fail "cannot build the fixture recorder against 0.1.0: $(head -c 600 "$tmp/cc.log")"
        fi
    else
        fail "cannot build grassflow 0.1.0 ($OLD): $(tail -c 600 "$tmp/old-build.log")"
    fi
else
    echo "  note  $BUILD, or no git history with $OLD: holding the fixtures to their recordings within 1e-5"
    "$BUILD/tests/test_fixtures" >"$tmp/out" 2>&1 && pass "fixtures match their recordings" \
        || fail "fixtures differ from their recordings: $(grep -m1 ERROR "$tmp/out")"
fi

echo "fixtures: a 0.1.0 training state resumes to 0.1.0's own final weights"
same() { # same A B TOL: every tensor of B in A and equal (TOL 0: to the bit), and nothing more
    /usr/bin/python3 - "$1" "$2" "$3" <<'PYEOF'
import json, struct, sys
import numpy as np
def tensors(p):
    b = open(p, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    h.pop("__metadata__", None)
    return {k: b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]] for k, v in h.items()}
a, b, tol = tensors(sys.argv[1]), tensors(sys.argv[2]), float(sys.argv[3])
def differ(x, y):
    if x is None or len(x) != len(y): return True
    return x != y if tol == 0 else not np.abs(np.frombuffer(x, "<f4") - np.frombuffer(y, "<f4")).max() <= tol  # NaN differs
bad = [k for k in b if differ(a.get(k), b[k])] + [k for k in a if k not in b]
if bad:
    print("  differing tensors:", ", ".join(bad[:5]))
sys.exit(1 if bad else 0)
PYEOF
}
resume() { # resume BINARY DIR: the 0.1.0 step-3 state resumed to the end in DIR
    mkdir -p "$2" && cp "$F"/run-step3/* "$2/" && GRASSFLOW_CACHE= "$1" train --resume "$2" >"$tmp/out" 2>"$tmp/err"
}
if resume "$GF" "$tmp/run"; then
    if [ -x "$tmp/old/build/grassflow" ]; then
        if ! resume "$tmp/old/build/grassflow" "$tmp/oldrun"; then
            fail "0.1.0 itself could not resume its state here: $(tail -c 300 "$tmp/err")"
        elif same "$tmp/run/last.safetensors" "$tmp/oldrun/last.safetensors" 0; then
            pass "resumed weights equal 0.1.0's resuming the same state here, bit for bit"
        else
            fail "resumed weights differ from 0.1.0's resuming the same state on this machine"
        fi
    fi
    same "$tmp/run/last.safetensors" "$F/run-final-last.safetensors" 1e-5 \
        && pass "... and the recorded end of 0.1.0's uninterrupted run within 1e-5" \
        || fail "resumed weights differ from the recorded uninterrupted 0.1.0 run by more than 1e-5"
else
    fail "resuming the 0.1.0 state failed: $(head -c 400 "$tmp/err")"
fi

# the metrics.jsonl of the old run: its rows are kept as they were, the resumed session's rows follow with
# their type, epoch and time, and plot draws the whole file (on step: the old rows have no count)
metrics_kept() { # metrics_kept RUN FIXTURE_RUN
    /usr/bin/python3 - "$1/metrics.jsonl" "$2/metrics.jsonl" <<'PYEOF' || return 1
import json, sys
new, old = open(sys.argv[1]).read().splitlines(), open(sys.argv[2]).read().splitlines()
assert new[:len(old)] == old, "the old rows changed"
rows = [json.loads(l) for l in new[len(old):]]
assert rows[0]["type"] == "start" and rows[0]["resumed"] is True and rows[0]["step"] == 3, rows[0]
assert [r["step"] for r in rows if r["type"] == "eval"] == [6], rows
assert all(r["type"] in ("start", "train", "eval") and r["elapsed_s"] >= 0 and r["epoch"] > 0 for r in rows), rows
PYEOF
    "$GF" plot "$1" --x tokens --out "$tmp/fx.svg" >/dev/null 2>"$tmp/plot.err" && grep -q "plotting against step" "$tmp/plot.err" \
        && [ "$(grep -c '<polyline' "$tmp/fx.svg")" = 2 ]
}
metrics_kept "$tmp/run" "$F/run-step3" && pass "its metrics.jsonl keeps 0.1.0's rows, the resumed rows follow with type, epoch and time, and plot draws it (on step)" \
    || fail "metrics.jsonl of the resumed 0.1.0 run: $(tail -c 600 "$tmp/run/metrics.jsonl") $(cat "$tmp/plot.err" 2>/dev/null)"

echo "fixtures: a 0.2.0 training state (config format 2; seq_len and max_sent among the recipe's keys) resumes"
F2=tests/fixtures/v2
mkdir -p "$tmp/run2" && cp "$F2"/run-step3/* "$tmp/run2/"
if GRASSFLOW_CACHE= "$GF" train --resume "$tmp/run2" >"$tmp/out" 2>"$tmp/err"; then
    same "$tmp/run2/last.safetensors" "$F2/run-final-last.safetensors" 1e-5 \
        && pass "to the recorded end of 0.2.0's uninterrupted run within 1e-5" \
        || fail "resumed weights differ from the recorded uninterrupted 0.2.0 run by more than 1e-5"
    metrics_kept "$tmp/run2" "$F2/run-step3" && pass "its metrics.jsonl keeps 0.2.0's rows, and the resumed rows follow; plot draws it" \
        || fail "metrics.jsonl of the resumed 0.2.0 run: $(tail -c 600 "$tmp/run2/metrics.jsonl") $(cat "$tmp/plot.err" 2>/dev/null)"
else
    fail "resuming the 0.2.0 state failed: $(head -c 400 "$tmp/err")"
fi

[ "$fails" -eq 0 ] && echo "fixtures: all passed" || { echo "fixtures: $fails failed"; exit 1; }
