#!/usr/bin/env bash
# A/B throughput of two grassflow binaries on this machine: the benchmark's training cases (word-level
# 6-layer models at batch 8 and 32, character-level small models) and streaming generation, each run
# alternately with both binaries, ROUNDS times; prints the median tokens/s of each and the ratio new/old.
# Both get the same OPENBLAS_CORETYPE (bench/env.sh: this CPU's best kernel unless one it runs is set) and thread count.
#
#   bash bench/ab.sh OLD_GRASSFLOW NEW_GRASSFLOW [ROUNDS]      (about 10 minutes with 3 rounds)
#
# Besides the medians it prints the best of each side and in how many rounds NEW was ahead: on a shared
# cloud host whose speed moves from minute to minute, those two settle what one pair of medians cannot.
# AB_CASES=REGEX runs only the cases whose name matches (e.g. AB_CASES='^char' for the character level);
# AB_ARGS='...' adds options to every training case's command (e.g. AB_ARGS='--precision fp32-fast').
#
# Used to hold a refactoring to the speed of the code before it (e.g. OLD = grassflow 0.1 built with
# `git worktree add /tmp/old e72dcbf && make -C /tmp/old`). OLD and NEW are command lines, split at spaces,
# so that one binary can be set against itself in two environments:
#   bash bench/ab.sh "env GF_FP32_MATMUL=openblas build/grassflow" "env GF_FP32_MATMUL=onednn build/grassflow"
set -euo pipefail
OLD=${1:?usage: ab.sh OLD_GRASSFLOW NEW_GRASSFLOW [ROUNDS]}
NEW=${2:?usage: ab.sh OLD_GRASSFLOW NEW_GRASSFLOW [ROUNDS]}
ROUNDS=${3:-3}
read -ra OLDCMD <<<"$OLD"
read -ra NEWCMD <<<"$NEW"
. "$(dirname "$0")/env.sh" # PY, OPENBLAS_CORETYPE, OMP_NUM_THREADS, GOMP_SPINCOUNT, median, best
field() { $PY -c 'import json,sys; d=json.loads(sys.stdin.read()); r=d.get("results"); print((r[0] if r else d)[sys.argv[1]])' "$1"; }

cases=(
    "word grassmann-6L B=8|bench train --model grassmann-6L --vocab 33278 --set dropout=0 --batch 8 --seq-len 128 --steps 6 --json|tokens_per_s"
    "word grassmann-6L B=32|bench train --model grassmann-6L --vocab 33278 --set dropout=0 --batch 32 --seq-len 128 --steps 4 --json|tokens_per_s"
    "word transformer-6L B=8|bench train --model transformer-6L --vocab 33278 --set dropout=0 --batch 8 --seq-len 128 --steps 6 --json|tokens_per_s"
    "word transformer-6L B=32|bench train --model transformer-6L --vocab 33278 --set dropout=0 --batch 32 --seq-len 128 --steps 4 --json|tokens_per_s"
    "char grassmann-small|bench train --model grassmann-small --vocab 65 --set max_len=256 --set dropout=0 --batch 16 --seq-len 256 --steps 8 --json|tokens_per_s"
    "char transformer-small|bench train --model transformer-small --vocab 65 --set max_len=256 --set dropout=0 --batch 16 --seq-len 256 --steps 8 --json|tokens_per_s"
    "stream grassmann-6L pos none @1000|bench generate --model grassmann-6L --vocab 33278 --set pos=none --positions 1000 --tokens 64 --json|tokens_per_s"
    "stream transformer-6L @100|bench generate --model transformer-6L --vocab 33278 --positions 100 --tokens 27 --json|tokens_per_s"
)
echo "kernel: $("${NEWCMD[@]}" --version | sed -n 2p); fp32 matmuls: old $("${OLDCMD[@]}" --version | sed -n 's/^fp32 matmuls: //p'), new $("${NEWCMD[@]}" --version | sed -n 's/^fp32 matmuls: //p'); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); rounds: $ROUNDS${AB_ARGS:+; every training case with $AB_ARGS}"
printf "%-36s %12s %12s %8s %12s %12s %8s\n" case old new new/old "old best" "new best" "new won"
for c in "${cases[@]}"; do
    IFS='|' read -r name cmd key <<<"$c"
    [[ $name =~ ${AB_CASES:-.} ]] || continue
    extra=""
    [[ $cmd == "bench train"* ]] && extra=${AB_ARGS:-}
    o=() n=()
    for ((r = 0; r < ROUNDS; r++)); do
        # shellcheck disable=SC2086
        o+=("$("${OLDCMD[@]}" $cmd $extra 2>/dev/null | field "$key")")
        # shellcheck disable=SC2086
        n+=("$("${NEWCMD[@]}" $cmd $extra 2>/dev/null | field "$key")")
    done
    mo=$(echo "${o[*]}" | median) mn=$(echo "${n[*]}" | median) bo=$(echo "${o[*]}" | best) bn=$(echo "${n[*]}" | best)
    won=0
    for ((r = 0; r < ROUNDS; r++)); do awk -v a="${n[r]}" -v b="${o[r]}" 'BEGIN {exit !(a > b)}' && won=$((won + 1)); done
    printf "%-36s %12.1f %12.1f %8.3f %12.1f %12.1f %5s/%s\n" "$name" "$mo" "$mn" "$(awk -v a="$mn" -v b="$mo" 'BEGIN {print a / b}')" \
        "$bo" "$bn" "$won" "$ROUNDS"
done
