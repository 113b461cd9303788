#!/usr/bin/env bash
# Generation speed: grassflow's stream against alphaXiv's own generate() (issue 54, docs/model.md "Exporting"), on the
# same CPU in the same run. Their GrassmannGPT and BaseTransformer generate a token by a forward over the whole
# window (the last L tokens); grassflow streams, one token a step (a Grassmann layer's state is fixed in size, an
# attention layer's keys are cached). Their shape (d 256, 6 layers, rank 32, FFN 1024, BERT's 30,522 pieces,
# blocks of 128), random weights (the speed does not depend on them). At each thread count: a context of 100
# tokens, then 27 timed (so that the window stays within L); their code in PyTorch (tests/parity/torch_ref/
# alphaxiv.py speed, their forward written out), grassflow by `bench generate` on the same shape. Run it on a
# quiet machine: the kernel and the CPU are printed with the table.
#   bash scripts/reproduction_speed.sh [OUT.md]      (default runs/reproduction-speed.md)
set -euo pipefail
cd "$(dirname "$0")/.."
GF=${GF:-build/grassflow}
OUT=${1:-runs/reproduction-speed.md}
tmp=$(mktemp -d /tmp/grassflow-repspeed-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for kind in grassmann transformer; do
    if [ $kind = grassmann ]; then layer='{"mixer": "grassmann", "rank": 32, "offsets": [1, 2, 4, 8, 12, 16], "block": "pre-mix-norm"}'
    else layer='{"mixer": "attention", "n_head": 4}'; fi
    printf '{"format": 2, "vocab_size": 30522, "d_model": 256, "n_layer": 6, "d_ff": 1024, "max_len": 128, "norm": "pre",
     "pos": "learned", "tie_head": true, "gelu": "erf", "ln_eps": 1e-5, "layers": [%s]}\n' "$layer" >"$tmp/$kind.json"
done
{
    echo "| model | threads | their generate() (PyTorch), tokens/s | grassflow stream, tokens/s | speed-up |"
    echo "|---|---:|---:|---:|---:|"
    for kind in grassmann transformer; do
        for th in 1 2; do
            theirs=$(OMP_NUM_THREADS=$th /usr/bin/python3 tests/parity/torch_ref/alphaxiv.py speed --kind $kind --threads $th \
                | python3 -c 'import json, sys; print("%.1f" % json.load(sys.stdin)["tokens_per_s"])')
            ours=$(OMP_NUM_THREADS=$th "$GF" --threads $th bench generate --config "$tmp/$kind.json" --vocab 30522 --positions 100 \
                --tokens 27 --json 2>/dev/null | python3 -c 'import json, sys; print("%.1f" % json.load(sys.stdin)["results"][-1]["tokens_per_s"])')
            echo "| $kind | $th | $theirs | $ours | $(python3 -c "print('%.1fx' % ($ours / $theirs))") |"
        done
    done
    echo
    echo "Context 100 tokens, then 27 timed, batch 1; their shape, random weights. $("$GF" --version | sed -n 2p | sed 's/^blas: //'); CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'); PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)'); $(date -u +%Y-%m-%d). Command: \`bash scripts/reproduction_speed.sh\`."
} >"$OUT.tmp"
mv "$OUT.tmp" "$OUT"
cat "$OUT"
