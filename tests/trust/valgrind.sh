#!/usr/bin/env bash
# A short training run (with evaluation, checkpoints, a resume and generation) under valgrind memcheck:
# 0 errors and 0 bytes definitely lost, or the script fails.
#   bash tests/trust/valgrind.sh [BUILD]
# About a minute. One thread, so that the report is about our code rather than OpenMP's thread pool.
# Valgrind 3.19 does not decode AVX-512: the build is for x86-64-v3 (AVX2) and OpenBLAS runs its
# Haswell kernel.
set -uo pipefail
BUILD=${1:-build/vg}
cd "$(dirname "$0")/../.."
make -s BUILD="$BUILD" ARCH=x86-64-v3 all >/dev/null || { echo "valgrind: build failed" >&2; exit 1; }
GF="$BUILD/grassflow"
command -v valgrind >/dev/null || { echo "valgrind: not installed; apt-get install valgrind" >&2; exit 1; }
tmp=$(mktemp -d /tmp/grassflow-valgrind-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export GRASSFLOW_CACHE="$tmp/cache" OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
export OPENBLAS_CORETYPE=Haswell GRASSFLOW_NO_REEXEC=1 # no restart (under valgrind it would run unchecked)
VG="valgrind --tool=memcheck --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite"
fails=0
run() { # what, command...
    local what=$1; shift
    $VG --log-file="$tmp/vg.log" "$@" >/dev/null 2>"$tmp/err"
    local rc=$?
    local errs lost
    errs=$(grep -o "ERROR SUMMARY: [0-9]*" "$tmp/vg.log" | grep -o "[0-9]*$")
    lost=$(grep -o "definitely lost: [0-9,]* bytes" "$tmp/vg.log" | grep -o "[0-9,]* bytes" || echo "0 bytes")
    if [ "$rc" = 0 ] && [ "$errs" = 0 ] && [ "$lost" = "0 bytes" ]; then echo "  ok    $what: 0 errors, definitely lost $lost"
    else echo "  FAIL  $what: exit $rc, $errs errors, definitely lost $lost (log: $(grep -m3 -A6 '^==[0-9]*== [A-Z]' "$tmp/vg.log"))"; fails=$((fails + 1)); fi
}
echo "valgrind: memcheck on a short training run"
R="--model hybrid-tiny --corpus tinyshakespeare --steps 6 --batch 2 --seq-len 16 --eval-every 3 --dropout 0.1 --accum 2"
"$GF" train $R --out "$tmp/warm" --steps 1 >/dev/null 2>&1 # fills the token cache outside valgrind
run "train (stopped at step 3 of 6: an evaluation, checkpoints, the state)" "$GF" train $R --out "$tmp/r" --stop-at 3
run "train --resume (steps 4 to 6, the second evaluation)" "$GF" train --resume "$tmp/r"
run "eval" "$GF" eval --ckpt "$tmp/r/last.safetensors" --corpus tinyshakespeare --seq-len 16
run "generate (streaming)" "$GF" generate --ckpt "$tmp/r/last.safetensors" --prompt "ROMEO:" --tokens 20
run "generate --no-cache" "$GF" generate --ckpt "$tmp/r/last.safetensors" --prompt "ROMEO:" --tokens 20 --no-cache
head -c 3000 "$tmp/r/last.safetensors" >"$tmp/trunc.safetensors"
$VG --log-file="$tmp/vg.log" "$GF" eval --ckpt "$tmp/trunc.safetensors" --corpus tinyshakespeare >/dev/null 2>&1
rc=$?
errs=$(grep -o "ERROR SUMMARY: [0-9]*" "$tmp/vg.log" | grep -o "[0-9]*$")
[ "$rc" = 1 ] && [ "$errs" = 0 ] && echo "  ok    a truncated checkpoint is refused (exit 1) with 0 memory errors" \
    || { echo "  FAIL  truncated checkpoint: exit $rc (1 expected), $errs errors"; fails=$((fails + 1)); }
if [ $fails -ne 0 ]; then echo "valgrind: $fails FAILED"; exit 1; fi
echo "valgrind: all passed"
