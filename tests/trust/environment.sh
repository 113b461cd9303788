#!/usr/bin/env bash
# The environment is not trusted blindly: an OPENBLAS_CORETYPE this CPU cannot run (OpenBLAS runs the
# named core's kernels without asking, and dies with SIGILL at the first matmul) is replaced, before OpenBLAS
# loads, by one it runs, with a note, in the command (it starts itself again, once) and in the Python
# package; a program of its own gets an error from gf_model_create instead of the SIGILL; the scripts never
# set such a core (tests/coretype.sh), whose table is held to the library's (gf_blas_core_check).
# GRASSFLOW_TEST_CPU_LACKS=avx512f,... (a test hook) lets this AVX-512 machine play one without AVX-512.
#   bash tests/trust/environment.sh [BUILD]
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
GF=$(realpath "$B/grassflow")
PY=/usr/bin/python3
tmp=$(mktemp -d /tmp/grassflow-env-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
echo "environment: OPENBLAS_CORETYPE against the CPU"
T=(--threads 1 train --model grassmann-tiny --corpus tinyshakespeare --steps 2 --batch 4 --seq-len 16 --warmup 1 --eval-every 0)
kernel_of() { sed -n 's/^blas: OpenBLAS, kernel \([^,]*\),.*/\1/p' "$1"; }

# the issue's case, played with the test hook: SKYLAKEX on a CPU without AVX-512
if [ "$(bash tests/coretype.sh)" = SKYLAKEX ]; then
    GRASSFLOW_TEST_CPU_LACKS=avx512f OPENBLAS_CORETYPE=SKYLAKEX timeout 60 "$GF" --version >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc = 0 ] && [ "$(kernel_of "$tmp/out")" = Haswell ] && [ "$(grep -c 'note: ' "$tmp/err")" = 1 ] &&
        grep -q "OpenBLAS's SkylakeX kernel (OPENBLAS_CORETYPE=SKYLAKEX) needs avx512f, which this CPU lacks.*running with OPENBLAS_CORETYPE=HASWELL instead" "$tmp/err" &&
        pass "OPENBLAS_CORETYPE=SKYLAKEX on a CPU without avx512f (hook): --version runs Haswell, one note names both and the reason" ||
        fail "SKYLAKEX without avx512f: exit $rc, kernel '$(kernel_of "$tmp/out")': $(head -c 400 "$tmp/err")"
else
    echo "  skip  the SKYLAKEX case needs a CPU with AVX-512 to hide it from (this one: '$(bash tests/coretype.sh)')"
fi

# a core type this CPU really cannot run: FMA4's (BULLDOZER; no Intel CPU and no Zen has FMA4), else 3DNow!'s
bad=""
for k in BULLDOZER OPTERON; do bash tests/coretype.sh --runs $k >/dev/null || { bad=$k; break; }; done
if [ -n "$bad" ]; then
    need=$(bash tests/coretype.sh --runs $bad)
    timeout 120 env OPENBLAS_CORETYPE=$bad "$GF" "${T[@]}" --out "$tmp/run" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc = 0 ] && grep -q "^model grassmann-tiny .* steps 2 " "$tmp/out" &&
        grep -q "note: OpenBLAS's [A-Za-z]* kernel (OPENBLAS_CORETYPE=$bad) needs $need, which this CPU lacks" "$tmp/err" &&
        pass "OPENBLAS_CORETYPE=$bad (needs $need, which this CPU lacks): train runs on $(OPENBLAS_CORETYPE=$bad bash tests/coretype.sh --env 2>/dev/null), saying so (was: SIGILL)" ||
        fail "OPENBLAS_CORETYPE=$bad: exit $rc: $(grep -v '^train step' "$tmp/err" | head -c 400)"
    # without the restart (GRASSFLOW_NO_REEXEC): an error that says what to set, not the SIGILL
    timeout 120 env OPENBLAS_CORETYPE=$bad GRASSFLOW_NO_REEXEC=1 "$GF" "${T[@]}" --out "$tmp/run2" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc = 1 ] && grep -q "error: OpenBLAS runs its [A-Za-z]* kernel (OPENBLAS_CORETYPE=$bad), which needs $need, and this CPU lacks it" "$tmp/err" &&
        grep -q "^HINT: start the program with OPENBLAS_CORETYPE=[A-Z]" "$tmp/err" && [ ! -e "$tmp/run2" ] &&
        pass "... with GRASSFLOW_NO_REEXEC=1: gf_model_create fails, saying what to set; exit 1, nothing written" ||
        fail "OPENBLAS_CORETYPE=$bad without the restart: exit $rc: $(head -c 400 "$tmp/err")"
    # the Python package, before it loads the library: a model scores instead of the SIGILL
    "$GF" init --model grassmann-tiny --out "$tmp/m.safetensors" >/dev/null 2>&1
    OPENBLAS_CORETYPE=$bad timeout 120 $PY -c 'import sys; sys.path.insert(0, "python"); import grassflow, grassflow._lib as L
m = grassflow.load(sys.argv[1]); print(L.lib.gf_blas_kernel().decode(), m.score([1, 2, 3, 4, 5]).ppl > 0)' \
        "$tmp/m.safetensors" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc = 0 ] && grep -q " True$" "$tmp/out" && [ "$(grep -c 'note: ' "$tmp/err")" = 1 ] &&
        grep -q "note: OpenBLAS's [A-Za-z]* kernel (OPENBLAS_CORETYPE=$bad) needs $need, which this CPU lacks" "$tmp/err" &&
        pass "python: OPENBLAS_CORETYPE=$bad replaced before the library loads ($(cut -d' ' -f1 "$tmp/out")), one note" ||
        fail "python with OPENBLAS_CORETYPE=$bad: exit $rc: $(head -c 400 "$tmp/out" "$tmp/err")"
else
    echo "  skip  this CPU runs every core type tried (BULLDOZER, OPTERON)"
fi
GRASSFLOW_TEST_CPU_LACKS=avx512f OPENBLAS_CORETYPE=SKYLAKEX timeout 120 $PY -c 'import sys; sys.path.insert(0, "python")
import grassflow, grassflow._lib as L; print(L.lib.gf_blas_kernel().decode())' >"$tmp/out" 2>"$tmp/err"
[ "$(cat "$tmp/out")" = Haswell ] && grep -q "note: OpenBLAS's SkylakeX kernel (OPENBLAS_CORETYPE=SKYLAKEX) needs avx512f" "$tmp/err" &&
    pass "python: OPENBLAS_CORETYPE=SKYLAKEX without avx512f (hook): Haswell, with the note" ||
    fail "python, SKYLAKEX without avx512f: $(head -c 400 "$tmp/out" "$tmp/err")"

# it cannot loop: with every feature hidden, the replacement (none: OPENBLAS_CORETYPE unset) loads a kernel the
# check again refuses (OpenBLAS's own choice), and the command starts itself again once, not forever
all=sse3,ssse3,sse4.1,sse4.2,3dnow,avx,avx2,fma,fma4,avx512f,avx512cd,avx512bw,avx512dq,avx512vl,avx512bf16,amx-bf16
GRASSFLOW_TEST_CPU_LACKS=$all OPENBLAS_CORETYPE=SKYLAKEX timeout 30 "$GF" --version >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc = 0 ] && [ "$(grep -c 'note: ' "$tmp/err")" = 1 ] && grep -q "running with OPENBLAS_CORETYPE unset instead" "$tmp/err" &&
    [ -n "$(kernel_of "$tmp/out")" ] && [ "$(kernel_of "$tmp/out")" != SkylakeX ] &&
    pass "every feature hidden: one restart with OPENBLAS_CORETYPE unset, one note, then it runs ($(kernel_of "$tmp/out")); no loop" ||
    fail "every feature hidden: exit $rc (124: a loop): $(head -c 400 "$tmp/err")"
# a core type the CPU runs is the user's: kept, nothing said
OPENBLAS_CORETYPE=Haswell "$GF" --version >"$tmp/out" 2>"$tmp/err"
[ "$(kernel_of "$tmp/out")" = Haswell ] && [ ! -s "$tmp/err" ] && pass "OPENBLAS_CORETYPE=Haswell (this CPU runs it): kept, nothing said" ||
    fail "OPENBLAS_CORETYPE=Haswell: kernel $(kernel_of "$tmp/out"): $(head -c 300 "$tmp/err")"

# tests/coretype.sh (what the scripts set) agrees with the library on every core type, on this CPU and with
# features hidden; and --env never gives one the CPU cannot run
cores="KATMAI COPPERMINE NORTHWOOD BANIAS PRESCOTT OPTERON OPTERON_SSE3 BARCELONA CORE2 ATOM NANO BOBCAT PENRYN
DUNNINGTON NEHALEM SANDYBRIDGE BULLDOZER PILEDRIVER STEAMROLLER EXCAVATOR HASWELL ZEN SKYLAKEX COOPERLAKE SAPPHIRERAPIDS"
lib_says() {
    $PY - "$B/libgrassflow.so" $cores <<'PYEOF'
import ctypes, sys
L = ctypes.CDLL(sys.argv[1])
L.gf_blas_core_check.restype = ctypes.c_char_p
L.gf_blas_core_check.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
why = ctypes.create_string_buffer(160)
for k in sys.argv[2:]:
    print(k, "runs" if L.gf_blas_core_check(k.encode(), why, 160) is None else why.value.decode().replace(", ", " "))
PYEOF
}
sh_says() { for k in $cores; do m=$(bash tests/coretype.sh --runs $k) && echo "$k runs" || echo "$k $m"; done; }
same=0 diff=""
for lacks in "" avx512f avx512bf16 avx2,avx512f fma4 3dnow,sse4.2 "$all"; do
    a=$(GRASSFLOW_TEST_CPU_LACKS=$lacks lib_says) b=$(GRASSFLOW_TEST_CPU_LACKS=$lacks sh_says)
    [ "$a" = "$b" ] && same=$((same + 1)) || diff="$diff [lacks '$lacks': $(diff <(echo "$a") <(echo "$b") | grep '^[<>]' | head -4 | tr '\n' ' ')]"
    for k in SKYLAKEX BULLDOZER ""; do
        e=$(GRASSFLOW_TEST_CPU_LACKS=$lacks OPENBLAS_CORETYPE=$k bash tests/coretype.sh --env 2>/dev/null)
        [ -z "$e" ] || GRASSFLOW_TEST_CPU_LACKS=$lacks bash tests/coretype.sh --runs "$e" >/dev/null || diff="$diff [--env gave $e, lacking '$lacks']"
    done
done
[ -z "$diff" ] && pass "tests/coretype.sh agrees with gf_blas_core_check on $(echo $cores | wc -w) core types x $same CPUs; --env only gives core types the CPU runs" ||
    fail "tests/coretype.sh against the library:$diff"
# the scripts the README points at, and every benchmark that sets a core type, go through it
bad_set=$(grep -lE '(export|TEST_ENV :=) OPENBLAS_CORETYPE=\$\{OPENBLAS_CORETYPE:-' bench/*.sh scripts/*.sh Makefile | tr '\n' ' ')
unfixed=$(grep -LE 'coretype\.sh"? --(env|export)' scripts/snli_study.sh scripts/distilbert_cost.sh bench/env.sh | tr '\n' ' ')
[ -z "$bad_set$unfixed" ] && ! grep -q 'OPENBLAS_CORETYPE=SKYLAKEX bash' README.md &&
    pass "no script keeps a user's OPENBLAS_CORETYPE unchecked, and the README no longer tells users to set SKYLAKEX" ||
    fail "scripts: unchecked in '$bad_set', not through tests/coretype.sh: '$unfixed'"
[ "$fails" -eq 0 ] && echo "environment: all passed" || { echo "environment: $fails FAILED"; exit 1; }
