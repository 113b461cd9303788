#!/usr/bin/env bash
# Batch-1 streaming with fp32, int8 and bf16 weights: grassmann-6L and transformer-6L (33,278 words, no
# positions), 128 tokens timed from position 1,000, ROUNDS runs of each (tokens/s, one line per run, with the
# kernel the low-precision matmuls ran on). On this CPU as it is, or as on an AVX2 one:
#   bash bench/lowp_stream.sh [ROUNDS]                       (default 3)
#   bash bench/as_avx2.sh bash bench/lowp_stream.sh 3        (the AVX2 emulation: docs/precision.md)
set -euo pipefail
cd "$(dirname "$0")/.."
GF=${GRASSFLOW:-build/grassflow}
rounds=${1:-3}
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $GF${GRASSFLOW_TEST_CPU_LACKS:+ (AVX2 emulated)}"
for model in grassmann-6L transformer-6L; do
    for w in fp32 int8 bf16; do
        for r in $(seq "$rounds"); do
            "$GF" bench generate --model "$model" --set pos=none --positions 1000 --tokens 128 --weights "$w" --json \
                2>/dev/null | python3 -c "import json, sys; d = json.load(sys.stdin)
print('$model', '$w', repr(d['weights_kernel']), d['results'][0]['tokens_per_s'])"
        done
    done
done
