#!/usr/bin/env bash
# How the demo's recipe was chosen (scripts/demo.sh): each candidate trained as the demo trains (Tiny
# Shakespeare's characters, 2,400 steps of 1,024 characters, lr 6e-3 -> 6e-4, warmup 50, no dropout, fp32-fast)
# on one thread, scored once on the validation split. Prints one line per candidate: its validation loss per
# character, its training rate and its wall time. About 25 minutes; run it on an otherwise quiet machine.
#   bash scripts/demo_recipes.sh [OUT_DIR]      (default: a temporary folder, removed at the end)
set -uo pipefail
cd "$(dirname "$0")/.."
GF=${GF:-build/grassflow}
out=${1:-}
[ -n "$out" ] || { out=$(mktemp -d /tmp/grassflow-demo-recipes-XXXXXX); trap 'rm -rf "$out"' EXIT; }
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'); one thread; $("$GF" --version | grep '^blas')"
printf '%-44s %9s %10s %7s\n' candidate "val loss" "tokens/s" "wall s"
run() { # run NAME ARGS...: one candidate
    local name=$1 s e; shift
    s=$(date +%s.%N)
    if ! OMP_NUM_THREADS=1 "$GF" train --corpus tinyshakespeare --out "$out/$name" --force --steps 2400 --lr 6e-3 \
        --min-lr 6e-4 --warmup 50 --dropout 0 --precision fp32-fast --eval-every 2400 --log-every 1000 "$@" \
        >"$out/$name.out" 2>"$out/$name.err"; then
        echo "demo_recipes.sh: $name failed: $(tail -3 "$out/$name.err")" >&2; return 1
    fi
    e=$(date +%s.%N)
    printf '%-44s %9s %10s %7.0f\n' "$name" "$(grep -o 'val loss [0-9.]*' "$out/$name.err" | tail -1 | cut -d' ' -f3)" \
        "$(grep -o '[0-9]* tok/s' "$out/$name.out" | tail -1 | cut -d' ' -f1)" "$(echo "$e - $s" | bc)"
}
run "grassmann-small, conv 4, 8 x 128 (demo)" --model grassmann-small --set conv=4 --batch 8 --seq-len 128
run "grassmann-small, conv 2, 8 x 128" --model grassmann-small --set conv=2 --batch 8 --seq-len 128
run "grassmann-small, conv 8, 8 x 128" --model grassmann-small --set conv=8 --batch 8 --seq-len 128
run "grassmann-small, conv 4, 8 x 128, lr 1e-2" --model grassmann-small --set conv=4 --batch 8 --seq-len 128 \
    --lr 1e-2 --min-lr 1e-3
run "grassmann-small, learned pos, 8 x 128" --model grassmann-small --batch 8 --seq-len 128
run "grassmann-small, learned pos, 16 x 64" --model grassmann-small --batch 16 --seq-len 64
run "grassmann-small, no pos, 16 x 64" --model grassmann-small --set pos=none --batch 16 --seq-len 64
run "grassmann-small, no pos, 16 x 64, lr 2e-3" --model grassmann-small --set pos=none --batch 16 --seq-len 64 \
    --lr 2e-3 --min-lr 2e-4
run "grassmann-small, sinusoidal pos, 8 x 128" --model grassmann-small --set pos=sinusoidal --batch 8 --seq-len 128
run "hybrid-last-small, learned pos, 8 x 128" --model hybrid-last-small --batch 8 --seq-len 128
run "transformer-small, learned pos, 8 x 128" --model transformer-small --batch 8 --seq-len 128
