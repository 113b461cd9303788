#!/usr/bin/env bash
# Training throughput on a machine another process is busy on (issue 26, item 6): `bench train` of a
# small character model and the paper's word-level Grassmann model, quiet and beside one busy loop, under
# OpenMP's default waiting (libgomp spins 300,000 rounds before an idle thread sleeps), grassflow's own
# choice (GOMP_SPINCOUNT=10000, what src/cli/main.c sets unless the user chose), passive waiting, and one
# thread. Median tokens/s of ROUNDS runs each; writes docs/bench/shared-machine.md.
#   bash bench/shared.sh [ROUNDS]     (about 4 minutes with 2 rounds on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
GF=build/grassflow
ROUNDS=${1:-2}
export OPENBLAS_CORETYPE=$(bash tests/coretype.sh --env) GRASSFLOW_NO_REEXEC=1 # never a core this CPU cannot run
unset OMP_WAIT_POLICY GOMP_SPINCOUNT
median() { tr ' ' '\n' | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
tps() { /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); r=d.get("results"); print(round((r[0] if r else d)["tokens_per_s"]))'; }
cases=("char grassmann-small|--model grassmann-small --vocab 65 --set max_len=256 --set dropout=0 --batch 16 --seq-len 256 --steps 8"
       "word grassmann-6L B=8|--model grassmann-6L --vocab 33278 --set dropout=0 --batch 8 --seq-len 128 --steps 6")
policies=("OpenMP default|" "grassflow: GOMP_SPINCOUNT=10000|GOMP_SPINCOUNT=10000" "OMP_WAIT_POLICY=passive|OMP_WAIT_POLICY=passive"
          "one thread (OMP_NUM_THREADS=1)|OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1")
out=docs/bench/shared-machine.md
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
{
    echo "# Training on a shared machine"
    echo
    echo "\`bash bench/shared.sh $ROUNDS\` on $(date -u +%Y-%m-%d): $cpu, $(nproc --all) cores, OpenBLAS kernel $OPENBLAS_CORETYPE,"
    echo "\`bench train\` tokens/s (median of $ROUNDS). *Busy*: one \`while :; do :; done\` shell loop beside it."
    echo "grassflow sets GOMP_SPINCOUNT=10000 for itself unless OMP_WAIT_POLICY or GOMP_SPINCOUNT is set (src/cli/main.c)."
    echo
    echo "| case | waiting | quiet | busy | busy / quiet |"
    echo "|---|---|---|---|---|"
} >"$out"
for c in "${cases[@]}"; do
    name=${c%%|*} args=${c#*|}
    for p in "${policies[@]}"; do
        pname=${p%%|*} penv=${p#*|}
        q=() b=()
        for r in $(seq 1 "$ROUNDS"); do
            # shellcheck disable=SC2086
            q+=("$(env $penv $GF bench train $args --json 2>/dev/null | tps)")
        done
        sh -c 'while :; do :; done' &
        busy=$!
        for r in $(seq 1 "$ROUNDS"); do
            # shellcheck disable=SC2086
            b+=("$(env $penv $GF bench train $args --json 2>/dev/null | tps)")
        done
        kill $busy
        mq=$(echo "${q[*]}" | median) mb=$(echo "${b[*]}" | median)
        line="| $name | $pname | $mq | $mb | $(/usr/bin/python3 -c "print('%.2f' % ($mb / $mq))") |"
        echo "$line" | tee -a "$out"
    done
done
echo "wrote $out"
