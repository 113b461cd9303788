#!/usr/bin/env bash
# Batch-1 streaming beside a busy neighbour: grassflow bench generate (grassmann-small over 65 characters,
# as the demo's, and the word-level 6-layer models, each with sinusoidal positions so that 1,000 tokens fit;
# position 10, 1,000 tokens) on a quiet machine and while another process keeps one core busy, with the
# default threads (the stream's rule: src/infer/stream.c, token_threads) and with --threads 1, R rounds
# each, medians. Run it on an otherwise quiet machine.
#   bash bench/stream_neighbour.sh [BUILD] [ROUNDS]
set -uo pipefail
BUILD=${1:-build}
R=${2:-3}
cd "$(dirname "$0")/.."
. bench/env.sh
GF="$BUILD/grassflow"
rate() {  # rate THREADS_FLAG MODEL_ARGS...
    local t=$1 out r; shift
    out=$("$GF" $t bench generate --positions 10 --tokens 1000 "$@" 2>&1) || { echo "stream_neighbour.sh: $GF $t bench generate $* failed: $(echo "$out" | head -3)" >&2; exit 1; }
    r=$(echo "$out" | awk '/tokens\/s/ {for (i = 2; i <= NF; i++) if ($i == "tokens/s") print $(i - 1)}')
    [ -n "$r" ] || { echo "stream_neighbour.sh: no tokens/s in: $out" >&2; exit 1; }
    echo "$r"
}
burn() { while :; do :; done; }
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc --all) cores; $("$GF" --version | grep '^blas')"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for spec in "grassmann-small 65" "grassmann-6L 33278" "transformer-6L 33278"; do
    read -r model vocab <<<"$spec"
    printf '{"base": "%s", "pos": "sinusoidal"}\n' "$model" >"$tmp/$model.json"
    margs=(--config "$tmp/$model.json" --vocab "$vocab")
    for threads in default 1; do
        targ=""; [ $threads = 1 ] && targ="--threads 1"
        quiet=(); busy=()
        for _ in $(seq "$R"); do
            quiet+=("$(rate "$targ" "${margs[@]}")")
            burn & b=$!
            sleep 0.2
            busy+=("$(rate "$targ" "${margs[@]}")")
            kill $b; wait $b 2>/dev/null
        done
        case " ${quiet[*]} ${busy[*]} " in *"  "*) echo "stream_neighbour.sh: a measurement failed (see above)" >&2; exit 1;; esac
        q=$(echo "${quiet[*]}" | median); n=$(echo "${busy[*]}" | median)
        printf '%-16s threads %-8s quiet %9.1f tokens/s   busy neighbour %9.1f tokens/s   ratio %.2fx\n' \
            "$model" "$threads" "$q" "$n" "$(echo "$q / $n" | bc -l)"
    done
done
