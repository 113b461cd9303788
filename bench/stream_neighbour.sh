#!/usr/bin/env bash
# Batch-1 streaming beside a busy neighbour: grassflow bench generate (the word-level 6-layer models,
# position 10, 200 tokens) on a quiet machine and while another process keeps one core busy, with the
# default threads (the stream's rule: src/infer/stream.c, token_threads) and with --threads 1, R rounds
# each, medians. Run it on an otherwise quiet machine.
#   bash bench/stream_neighbour.sh [BUILD] [ROUNDS]
set -uo pipefail
BUILD=${1:-build}
R=${2:-3}
cd "$(dirname "$0")/.."
. bench/env.sh
GF="$BUILD/grassflow"
rate() { "$GF" "$@" bench generate --positions 10 --tokens 200 2>/dev/null | awk '/tokens\/s/ {for (i = 2; i <= NF; i++) if ($i == "tokens/s") print $(i - 1)}'; }
burn() { while :; do :; done; }
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores; $("$GF" --version | grep '^blas')"
for model in grassmann-6L transformer-6L; do
    for threads in default 1; do
        targs=(); [ $threads = 1 ] && targs=(--threads 1)
        quiet=(); busy=()
        for _ in $(seq "$R"); do
            quiet+=("$(rate "${targs[@]}" --model $model)" )
            burn & b=$!
            sleep 0.2
            busy+=("$(rate "${targs[@]}" --model $model)")
            kill $b; wait $b 2>/dev/null
        done
        q=$(echo "${quiet[*]}" | median); n=$(echo "${busy[*]}" | median)
        printf '%-16s threads %-8s quiet %9.1f tokens/s   busy neighbour %9.1f tokens/s   ratio %.2fx\n' \
            "$model" "$threads" "$q" "$n" "$(echo "$q / $n" | bc -l)"
    done
done
