#!/usr/bin/env bash
# Data-parallel training under mpirun (docs/distributed.md), 1 thread per rank on a toy model: np 2 with
# global batch 8 against one process with batch 8 (final weights to 1e-6, dropout on), one set of files and
# one progress stream (rank 0's), a signal to one rank stopping both at the same step, resume under MPI
# byte-identical to an uninterrupted MPI run (and with one process instead of two), a killed rank ending
# the job with a message, ranks started with other data, models, recipes, states or commands stopping
# together with an error naming the difference. Skipped, saying why, when grassflow was built without MPI
# or mpirun is missing.
#   bash tests/train/mpi.sh [BUILD]
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
GF=$(realpath "$B/grassflow")
PY=/usr/bin/python3
tmp=$(mktemp -d /tmp/grassflow-mpi-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
echo "mpi: data-parallel training"
C=$tmp/corpus
mkdir -p "$C"
xz -dc data/tinyshakespeare/input.txt.xz | head -c 60000 >"$C/train.txt"
xz -dc data/tinyshakespeare/input.txt.xz | tail -c 6000 >"$C/valid.txt"
cp "$C/valid.txt" "$C/test.txt"
A=(--model grassmann-tiny --set dropout=0.1 --corpus "$C" --tokenizer char --batch 8 --seq-len 32 --warmup 2 --eval-every 3 --seed 7)
# rel A B [SUFFIX]: the largest |a - b| / max |a| over the tensors of two checkpoints (those whose names end in
# SUFFIX); "bitwise" when equal
rel() {
    $PY - "$1" "$2" "${3:-}" <<'PYEOF'
import sys
sys.path.insert(0, "python")
import numpy as np
from grassflow import st_io
a, b = (st_io.read(p) for p in sys.argv[1:3])
a, b = (x[0] if isinstance(x, tuple) else x for x in (a, b))
worst, same = 0.0, True
for k in (k for k in a if k.endswith(sys.argv[3])):
    x, y = np.asarray(a[k], dtype=np.float64), np.asarray(b[k], dtype=np.float64)
    same = same and np.array_equal(x, y)
    worst = max(worst, float(np.max(np.abs(x - y)) / max(float(np.max(np.abs(x))), 1e-30)))
print("bitwise" if same else "%.3g" % worst)
PYEOF
}
within() { $PY -c "import sys; sys.exit(0 if '$1' == 'bitwise' or float('$1') <= $2 else 1)"; }

# --deterministic in one process (MPI or not): the same bits on 1 and 2 threads, and (without dropout,
# whose masks are drawn per micro-batch, as they always were) with the batch in two micro-batches; the
# usual sum's weights within rounding; the recipe records it
A0=("${A[@]}")
A0[3]=dropout=0
A2=("${A0[@]}")
A2[9]=4 # --batch 8 -> --batch 4 (and --accum 2 below)
"$GF" --threads 1 train "${A[@]}" --steps 6 --deterministic --out "$tmp/d1" >/dev/null 2>&1 &&
    "$GF" --threads 2 train "${A[@]}" --steps 6 --deterministic --out "$tmp/d2t" >/dev/null 2>&1 &&
    "$GF" --threads 1 train "${A0[@]}" --steps 6 --deterministic --out "$tmp/d0" >/dev/null 2>&1 &&
    "$GF" --threads 1 train "${A2[@]}" --accum 2 --steps 6 --deterministic --out "$tmp/dacc" >/dev/null 2>&1 ||
    fail "--deterministic runs"
[ "$(rel "$tmp/d1/last.safetensors" "$tmp/d2t/last.safetensors")" = bitwise ] &&
    [ "$(rel "$tmp/d0/last.safetensors" "$tmp/dacc/last.safetensors")" = bitwise ] &&
    pass "--deterministic: 1 thread = 2 threads; batch 8 = batch 4 x accum 2 (dropout 0); bit for bit" ||
    fail "--deterministic in one process: $(rel "$tmp/d1/last.safetensors" "$tmp/d2t/last.safetensors"), $(rel "$tmp/d0/last.safetensors" "$tmp/dacc/last.safetensors")"
"$GF" --threads 1 train "${A[@]}" --steps 6 --out "$tmp/one" >"$tmp/one.out" 2>"$tmp/one.err" || fail "one process: $(tail -3 "$tmp/one.err")"
r=$(rel "$tmp/one/last.safetensors" "$tmp/d1/last.safetensors")
within "$r" 1e-5 && grep -aq 'deterministic.":true' "$tmp/d1/state.safetensors" && ! grep -aq deterministic "$tmp/one/state.safetensors" &&
    pass "--deterministic = the usual sum to rounding ($r); the recipe records it, and only when set" || fail "--deterministic against the usual sum: $r"
if ! "$GF" --version | grep -q '^mpi: Open MPI'; then
    echo "  skip  this grassflow was built without MPI ($("$GF" --version | grep '^mpi:')); scripts/install-deps.sh installs it"
    exit 0
fi
command -v mpirun >/dev/null || { echo "  skip  mpirun is missing (apt-get install openmpi-bin)"; exit 0; }
# OpenMPI as root in a container: the flags and the shared-memory setting its FAQ gives for this case
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMP_NUM_THREADS=1
MPI=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
"${MPI[@]}" -np 2 "$GF" --threads 1 train "${A[@]}" --steps 6 --out "$tmp/two" >"$tmp/two.out" 2>"$tmp/two.err" ||
    fail "np 2: $(tail -3 "$tmp/two.err")"
r=$(rel "$tmp/one/last.safetensors" "$tmp/two/last.safetensors")
within "$r" 1e-6 &&
    pass "np 2 x batch 4 = one process x batch 8, dropout 0.1, 6 steps: final weights within 1e-6 ($r)" || fail "np 2 against one process: $r"
[ "$(grep -c '^model grassmann-tiny' "$tmp/two.out")" = 1 ] && [ "$(grep -c 'eval step 6' "$tmp/two.err")" = 1 ] &&
    [ "$(grep -c 'parameters, .*; 2 ranks, 4 examples each per micro-batch$' "$tmp/two.err")" = 1 ] &&
    pass "one summary on stdout and one progress stream on stderr: rank 0's, saying how the ranks share a batch" ||
    fail "output: $(cat "$tmp/two.out" "$tmp/two.err" | head -20)"
[ "$(wc -l <"$tmp/two/metrics.jsonl")" = "$(wc -l <"$tmp/one/metrics.jsonl")" ] && ! ls "$tmp/two" | grep -q tmp &&
    pass "one metrics.jsonl, as one process writes it (rank 0 alone writes the run)" || fail "metrics: $(ls "$tmp/two")"

for np in 2 3; do # 3 ranks share a batch of 8 as 2 + 3 + 3: the fixed tree does not care
    "${MPI[@]}" -np $np "$GF" --threads 1 train "${A[@]}" --steps 6 --deterministic --out "$tmp/det$np" >/dev/null 2>"$tmp/det.err" ||
        fail "np $np --deterministic: $(tail -3 "$tmp/det.err")"
    r=$(rel "$tmp/d1/last.safetensors" "$tmp/det$np/last.safetensors")
    [ "$r" = bitwise ] && pass "--deterministic, np $np: bit for bit the one-process run" || fail "--deterministic np $np: $r"
done

# the evaluation, sharded by batches: the same bytes of output on 1, 2 and 3 ranks (sums put together exactly)
"$GF" --threads 1 eval --ckpt "$tmp/one/last.safetensors" --corpus "$C" --batch 3 --json >"$tmp/eval1.json" 2>"$tmp/eval.err" ||
    fail "eval, one process: $(cat "$tmp/eval.err")"
for np in 2 3; do
    "${MPI[@]}" -np $np "$GF" --threads 1 eval --ckpt "$tmp/one/last.safetensors" --corpus "$C" --batch 3 --json >"$tmp/eval$np.json" 2>"$tmp/eval.err" ||
        fail "eval, np $np: $(tail -3 "$tmp/eval.err")"
done
cmp -s "$tmp/eval1.json" "$tmp/eval2.json" && cmp -s "$tmp/eval1.json" "$tmp/eval3.json" && grep -q '"ppl"' "$tmp/eval1.json" &&
    pass "eval sharded over 2 and 3 ranks: the same output, byte for byte, as one process" ||
    fail "eval under MPI: $(cat "$tmp/eval1.json" "$tmp/eval2.json" "$tmp/eval3.json")"

# SNLI (pairs padded to each batch's longest: dropout follows an example's positions, not its batch's
# padding) and a head on a frozen backbone with its feature cache: np 2 = one process
S=$tmp/snli64
mkdir -p "$S"
for s in train_0.01 dev test; do xz -dc "data/snli/snli_1.0_$s.tsv.xz" | head -64 >"$S/snli_1.0_${s%_0.01}.tsv"; done
SN=(train --task snli --model grassmann-tiny --set dropout=0.1 --corpus "$S" --steps 6 --batch 8 --eval-every 3 --seed 3)
"$GF" --threads 1 "${SN[@]}" --out "$tmp/snli1" >/dev/null 2>"$tmp/err" && "${MPI[@]}" -np 2 "$GF" --threads 1 "${SN[@]}" --out "$tmp/snli2" \
    >/dev/null 2>>"$tmp/err" || fail "SNLI runs: $(tail -3 "$tmp/err")"
r=$(rel "$tmp/snli1/last.safetensors" "$tmp/snli2/last.safetensors")
# each rank pads its share to its own longest pair: the matmuls' shapes differ from one process's, and so
# does their rounding (3e-6 with dropout 0 as with 0.1: the masks agree)
within "$r" 1e-5 && pass "SNLI, padded pairs, dropout 0.1: np 2 = one process to $r" || fail "SNLI under MPI: $r"
"$GF" --threads 1 "${SN[@]}" --deterministic --out "$tmp/snlid1" >/dev/null 2>"$tmp/err" &&
    "${MPI[@]}" -np 2 "$GF" --threads 1 "${SN[@]}" --deterministic --out "$tmp/snlid2" >/dev/null 2>>"$tmp/err" || fail "SNLI --deterministic: $(tail -3 "$tmp/err")"
r=$(rel "$tmp/snlid1/last.safetensors" "$tmp/snlid2/last.safetensors")
[ "$r" = bitwise ] && pass "SNLI --deterministic: np 2 = one process, bit for bit" || fail "SNLI --deterministic under MPI: $r"
# an encoder-decoder (g2p: words padded to each batch's longest source and target), dropout 0.1: each share's
# masks on both sides are those one process draws (before, the encoder's followed the share's own source
# length: its weights were 0.26 apart). The weight matrices only: a cross op's key bias (and attention's, in
# qkv.bias) has a gradient of 0 in exact arithmetic (a shift common to every key), so its steps are AdamW's
# rescaled rounding noise, whatever the ranks
printf '%s' '{"format": 3, "head": {"kind": "next_token"}, "vocab_size": 60, "source_vocab": 256, "cross_heads": 2,
 "d_model": 32, "n_layer": 2, "d_ff": 64, "max_len": 40, "norm": "pre", "direction": "bidirectional", "dropout": 0.1,
 "layers": [{"mixer": "attention", "n_head": 2}], "stacks": [{"name": "decoder", "d_model": 32, "d_ff": 64,
 "n_layer": 2, "direction": "causal", "layers": [{"mixer": "grassmann", "rank": 8, "offsets": [1, 2]}]}]}' >"$tmp/ed.json"
ED=(train --task g2p --config "$tmp/ed.json" --corpus cmudict --steps 6 --batch 8 --eval-every 3 --seed 3 --lr 3e-3 --warmup 2)
"$GF" --threads 1 "${ED[@]}" --out "$tmp/ed1" >/dev/null 2>"$tmp/err" && "${MPI[@]}" -np 2 "$GF" --threads 1 "${ED[@]}" \
    --out "$tmp/ed2" >/dev/null 2>>"$tmp/err" || fail "encoder-decoder runs: $(tail -3 "$tmp/err")"
r=$(rel "$tmp/ed1/last.safetensors" "$tmp/ed2/last.safetensors" weight)
within "$r" 1e-5 && pass "an encoder-decoder, padded sources and targets, dropout 0.1: np 2 = one process to $r" ||
    fail "encoder-decoder under MPI: $r"
"$GF" --threads 1 train --model grassmann-tiny --corpus "$C" --tokenizer wordpiece:data/bert-base-uncased/vocab.txt --steps 2 --batch 4 \
    --seq-len 32 --set max_len=128 --eval-every 0 --out "$tmp/lm" >/dev/null 2>&1 || fail "backbone LM"
printf '{"name": "head", "d_model": 16, "d_ff": 32, "n_layer": 1, "direction": "bidirectional", "layers": [{"mixer": "grassmann", "rank": 4, "offsets": [1, 2], "window": 8}]}' >"$tmp/head.json"
BB=(train --task snli --backbone "$tmp/lm/best.safetensors" --head "$tmp/head.json" --freeze-backbone --corpus "$S" --steps 6 --batch 8 --eval-every 3)
"$GF" --threads 1 "${BB[@]}" --out "$tmp/bb1" >/dev/null 2>"$tmp/err" && "${MPI[@]}" -np 2 "$GF" --threads 1 "${BB[@]}" --out "$tmp/bb2" \
    >/dev/null 2>>"$tmp/err" || fail "frozen backbone runs: $(tail -3 "$tmp/err")"
r=$(rel "$tmp/bb1/last.safetensors" "$tmp/bb2/last.safetensors")
within "$r" 1e-6 && pass "a head on a frozen backbone, its features cached: np 2 = one process to $r" || fail "frozen backbone under MPI: $r"

# a rank that starts late (GRASSFLOW_FAULT_START_DELAY_MS) finds --out as it was: every rank reads it before
# rank 0 writes into it (without that, rank 1 found rank 0's lock and refused the folder as in use)
LATE=(bash -c 'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then export GRASSFLOW_FAULT_START_DELAY_MS=1500; fi; exec "$0" "$@"')
"${MPI[@]}" -np 2 "${LATE[@]}" "$GF" --threads 1 train "${A[@]}" --steps 6 --out "$tmp/late" >/dev/null 2>"$tmp/err" &&
    [ "$(rel "$tmp/two/last.safetensors" "$tmp/late/last.safetensors")" = bitwise ] &&
    pass "train with rank 1 starting 1.5 s late: the folder is not refused, the run is the np 2 run's" || fail "late rank, train: $(grep -m3 error "$tmp/err")"
# compare under MPI: rank 0 alone writes the summary (the table on stdout is summary.md's, its own figures),
# whose machine line names the ranks; interrupted through one rank, it says so once and resumes to the
# uninterrupted job's checkpoints
CM=(compare --models grassmann-tiny,transformer-tiny --corpus "$C" --tokenizer char --batch 8 --seq-len 32 --steps 6 --warmup 2 --eval-every 3 --seed 7)
"${MPI[@]}" -np 2 "${LATE[@]}" "$GF" --threads 1 "${CM[@]}" --out "$tmp/cmp2" >"$tmp/cmp2.out" 2>"$tmp/err" || fail "compare under MPI: $(tail -3 "$tmp/err")"
rates() { awk '$1 ~ /-tiny$/ { print $1, $6 }' "$1"; }
md_rates() { awk -F' [|] ' '$1 ~ /-tiny$/ { print substr($1, 3), $6 }' "$1"; }
[ -n "$(rates "$tmp/cmp2.out")" ] && [ "$(rates "$tmp/cmp2.out")" = "$(md_rates "$tmp/cmp2/summary.md")" ] &&
    grep -q 'x 2 MPI ranks), CPU' "$tmp/cmp2.out" && grep -q '"mpi_ranks":.*2' "$tmp/cmp2/summary.json" &&
    pass "compare under np 2: one table, summary.md holds rank 0's figures, the machine line says 2 MPI ranks" ||
    fail "compare summary under MPI: $(rates "$tmp/cmp2.out") / $(md_rates "$tmp/cmp2/summary.md")"
"${MPI[@]}" -np 2 bash -c 'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then export GRASSFLOW_FAULT_SIGINT_AT=3; fi; exec "$0" "$@"' \
    "$GF" --threads 1 "${CM[@]}" --out "$tmp/cmpstop" >/dev/null 2>"$tmp/cmpstop.err"
rc=$?
"${MPI[@]}" -np 2 "$GF" --threads 1 "${CM[@]}" --out "$tmp/cmpstop" >/dev/null 2>"$tmp/err" || fail "compare resumed under MPI: $(tail -3 "$tmp/err")"
[ $rc != 0 ] && [ "$(grep -c '^grassflow compare: interrupted by SIGINT during grassmann-tiny' "$tmp/cmpstop.err")" = 1 ] &&
    [ "$(rel "$tmp/cmp2/grassmann-tiny/last.safetensors" "$tmp/cmpstop/grassmann-tiny/last.safetensors")" = bitwise ] &&
    [ "$(rel "$tmp/cmp2/transformer-tiny/last.safetensors" "$tmp/cmpstop/transformer-tiny/last.safetensors")" = bitwise ] &&
    pass "compare stopped through rank 1: said once; resumed, both models bit for bit the uninterrupted job's" ||
    fail "compare stopped under MPI: exit $rc: $(tail -4 "$tmp/cmpstop.err")"
# the signal reaches rank 1 in its last step of the first model, after the ranks agreed on that step's stop:
# they agree again between the models (rank 0 did not wait at the next model's start for a rank that left)
t0=$SECONDS
GRASSFLOW_MPI_TIMEOUT=30 "${MPI[@]}" -x GRASSFLOW_MPI_TIMEOUT -np 2 bash -c 'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then export GRASSFLOW_FAULT_SIGINT_AT=6; fi; exec "$0" "$@"' \
    "$GF" --threads 1 "${CM[@]}" --out "$tmp/cmpbetween" >/dev/null 2>"$tmp/cmpbetween.err"
rc=$?
[ $rc != 0 ] && [ $((SECONDS - t0)) -lt 25 ] && [ "$(grep -c '^grassflow compare: interrupted by SIGINT after grassmann-tiny finished' "$tmp/cmpbetween.err")" = 1 ] &&
    "${MPI[@]}" -np 2 "$GF" --threads 1 "${CM[@]}" --out "$tmp/cmpbetween" >/dev/null 2>"$tmp/err" &&
    [ "$(rel "$tmp/cmp2/transformer-tiny/last.safetensors" "$tmp/cmpbetween/transformer-tiny/last.safetensors")" = bitwise ] &&
    pass "compare signalled through rank 1 between two models: every rank stops there, said once; the rerun trains the second" ||
    fail "compare signalled between models under MPI: exit $rc after $((SECONDS - t0)) s: $(grep -v '^ *$' "$tmp/cmpbetween.err" | tail -4)"

# SIGINT to rank 1 alone after its 3rd step: both ranks stop there, save and exit 130; resuming (np 2) ends
# byte for byte where the uninterrupted np 2 run (two, above) ended
"${MPI[@]}" -np 2 bash -c 'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then export GRASSFLOW_FAULT_SIGINT_AT=3; fi; exec "$0" "$@"' \
    "$GF" --threads 1 train "${A[@]}" --steps 6 --out "$tmp/stop" >/dev/null 2>"$tmp/stop.err"
rc=$?
[ $rc != 0 ] && [ "$(grep -c 'train interrupted by a signal after step 3 of 6; the state is saved' "$tmp/stop.err")" = 1 ] &&
    pass "a signal to one rank: every rank stops after step 3, rank 0 saves and says so once (mpirun exit $rc)" ||
    fail "signal to rank 1: exit $rc: $(tail -5 "$tmp/stop.err")"
"${MPI[@]}" -np 2 "$GF" --threads 1 train --resume "$tmp/stop" >/dev/null 2>"$tmp/resume.err" || fail "resume: $(tail -3 "$tmp/resume.err")"
r=$(rel "$tmp/two/last.safetensors" "$tmp/stop/last.safetensors")
[ "$r" = bitwise ] && pass "resumed under MPI: every tensor of last.safetensors bit for bit that of the uninterrupted np 2 run" ||
    fail "resume under MPI: $r"
"$GF" --threads 1 train "${A[@]}" --steps 6 --stop-at 3 --out "$tmp/mixed" >/dev/null 2>&1 &&
    "${MPI[@]}" -np 2 "$GF" --threads 1 train --resume "$tmp/mixed" >/dev/null 2>"$tmp/mixed.err" || fail "one process, then np 2: $(tail -3 "$tmp/mixed.err")"
r=$(rel "$tmp/one/last.safetensors" "$tmp/mixed/last.safetensors")
within "$r" 1e-6 &&
    pass "3 steps in one process, resumed under np 2 for 3 more: the one-process run's weights within 1e-6 ($r)" || fail "resume with another number of ranks: $r"

# ranks that do not agree (mpirun's MPMD form, `-np 1 A : -np 1 B`): every rank stops before the first
# collective with an error naming what differs, exit non-zero, no hang (the collectives' watchdog is at 20 s:
# without the check these ranks corrupted the heap, hung, or trained on other data silently)
C2=$tmp/upper C3=$tmp/reversed C4=$tmp/othertest
mkdir -p "$C2" "$C3" "$C4"
for s in train valid test; do tr 'a-z' 'A-Z' <"$C/$s.txt" >"$C2/$s.txt"; done # another vocabulary
tac "$C/train.txt" >"$C3/train.txt" && cp "$C/valid.txt" "$C/test.txt" "$C3/" # the same vocabulary, other text
cp "$C/train.txt" "$C4/" && tac "$C/valid.txt" >"$C4/valid.txt" && cp "$C4/valid.txt" "$C4/test.txt" # other text to score
D=(--model grassmann-tiny --tokenizer char --batch 8 --seq-len 32 --warmup 2 --eval-every 3 --seed 7)
# refused WHAT PATTERN MPMD-ARGS...: the job ends with an error matching PATTERN within 120 s
refused() {
    local what=$1 pat=$2 t0=$SECONDS rc
    shift 2
    GRASSFLOW_MPI_TIMEOUT=20 timeout 120 "${MPI[@]}" -x GRASSFLOW_MPI_TIMEOUT "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ $rc != 0 ] && [ $rc != 124 ] && grep -q -- "$pat" "$tmp/err" && ! grep -q "has waited" "$tmp/err"; then
        pass "$what: stopped in $((SECONDS - t0)) s, exit $rc: $(grep -m1 -o "rank 1.s [a-z]* differs.*; every" "$tmp/err" | sed 's/; every$//' | cut -c1-110)"
    else
        fail "$what: exit $rc (124: a hang) after $((SECONDS - t0)) s: $(grep -a -v '^ *$' "$tmp/err" | grep -v '^\[' | tail -3)"
    fi
}
TR=("$GF" --threads 1 train "${D[@]}" --steps 6)
refused "train, another vocabulary on rank 1" "rank 1's corpus differs from rank 0's: vocabulary [0-9]* vs [0-9]* tokens" \
    -np 1 "${TR[@]}" --corpus "$C" --out "$tmp/dv" : -np 1 "${TR[@]}" --corpus "$C2" --out "$tmp/dv"
[ ! -e "$tmp/dv" ] && pass "... and nothing written: the ranks compared before rank 0 made --out" || fail "another vocabulary: $(ls "$tmp/dv")"
refused "train, the same vocabulary and other text on rank 1" "rank 1's corpus differs from rank 0's: training data (a hash of its batches) [0-9a-f]* vs" \
    -np 1 "${TR[@]}" --corpus "$C" --out "$tmp/dt" : -np 1 "${TR[@]}" --corpus "$C3" --out "$tmp/dt"
refused "train, --steps 8 on rank 1 and 6 on rank 0" "rank 1's recipe differs from rank 0's: --steps 8 vs 6" \
    -np 1 "${TR[@]}" --corpus "$C" --out "$tmp/ds" : -np 1 "${TR[@]}" --steps 8 --corpus "$C" --out "$tmp/ds"
refused "train, another model on rank 1" "rank 1's model differs from rank 0's: '--model transformer-tiny' vs '--model grassmann-tiny'" \
    -np 1 "${TR[@]}" --corpus "$C" --out "$tmp/dm" : -np 1 "${TR[@]}" --model transformer-tiny --corpus "$C" --out "$tmp/dm"
refused "train, --deterministic on rank 1 alone" "rank 1's recipe differs from rank 0's: --deterministic 'on' vs 'off'" \
    -np 1 "${TR[@]}" --corpus "$C" --out "$tmp/dd" : -np 1 "${TR[@]}" --deterministic --corpus "$C" --out "$tmp/dd"
# a resume from another state on each rank (--out not shared, or two runs): the same step on every rank, or nothing
"$GF" --threads 1 train "${D[@]}" --steps 6 --corpus "$C" --stop-at 2 --out "$tmp/r2" >/dev/null 2>&1 &&
    "$GF" --threads 1 train "${D[@]}" --steps 6 --corpus "$C" --stop-at 4 --out "$tmp/r4" >/dev/null 2>&1 || fail "the states to resume"
refused "resume, the state at step 2 on rank 0 and at step 4 on rank 1" "rank 1's state differs from rank 0's: step 4 vs 2" \
    -np 1 "$GF" --threads 1 train --resume "$tmp/r2" : -np 1 "$GF" --threads 1 train --resume "$tmp/r4"
stopped_at "$tmp/r2" 2
# evaluation: the same checkpoint and split on every rank
refused "eval, another checkpoint on rank 1" "rank 1's model differs from rank 0's: weights (a hash) [0-9a-f]* vs" \
    -np 1 "$GF" --threads 1 eval --ckpt "$tmp/r2/last.safetensors" --corpus "$C" : -np 1 "$GF" --threads 1 eval --ckpt "$tmp/r4/last.safetensors" --corpus "$C"
refused "eval, other text in rank 1's validation split" "rank 1's evaluation differs from rank 0's: data (a hash of its batches)" \
    -np 1 "$GF" --threads 1 eval --ckpt "$tmp/r2/last.safetensors" --corpus "$C" : -np 1 "$GF" --threads 1 eval --ckpt "$tmp/r2/last.safetensors" --corpus "$C4"
# compare: the same models on every rank (a rank with fewer would leave the other waiting at the next one)
CP=("$GF" --threads 1 compare --corpus "$C" --tokenizer char --batch 8 --seq-len 32 --steps 4 --eval-every 2 --out "$tmp/dc")
refused "compare, one model fewer on rank 1" "rank 1's comparison differs from rank 0's: --models 'grassmann-tiny' vs 'grassmann-tiny,transformer-tiny'" \
    -np 1 "${CP[@]}" --models grassmann-tiny,transformer-tiny : -np 1 "${CP[@]}" --models grassmann-tiny
refused "train on rank 0, eval on rank 1" "rank 1 is starting evaluation with other things to agree on than rank 0 starting training" \
    -np 1 "${TR[@]}" --corpus "$C" --out "$tmp/de" : -np 1 "$GF" --threads 1 eval --ckpt "$tmp/r2/last.safetensors" --corpus "$C"
# what may differ: the thread count of each rank (each rank's share is summed with the others', and what
# every rank computes from the sum does not depend on it), and --out's path (rank 0 alone writes)
"${MPI[@]}" -np 1 "$GF" --threads 1 train "${A[@]}" --steps 6 --out "$tmp/thr" : \
    -np 1 "$GF" --threads 2 train "${A[@]}" --steps 6 --out "$tmp/thr-1" >/dev/null 2>"$tmp/err" || fail "threads 1 and 2: $(tail -3 "$tmp/err")"
r=$(rel "$tmp/one/last.safetensors" "$tmp/thr/last.safetensors")
within "$r" 1e-6 && [ ! -e "$tmp/thr-1" ] && pass "--threads 1 on rank 0 and 2 on rank 1: one process's weights within 1e-6 ($r)" ||
    fail "ranks with other thread counts: $r"
# ... except with --deterministic, whose bits are those of one thread count (OpenBLAS and the parallel loops
# round differently on more threads on models larger than this one)
refused "train --deterministic, --threads 2 on rank 1 and 1 on rank 0" "rank 1's recipe differs from rank 0's: --threads (with --deterministic) 2 vs 1" \
    -np 1 "$GF" --threads 1 train "${A[@]}" --steps 6 --deterministic --out "$tmp/thrd" : -np 1 "$GF" --threads 2 train "${A[@]}" --steps 6 --deterministic --out "$tmp/thrd"

# a rank of the job writing to $tmp/DIR: a process whose command line starts with the grassflow command
# (mpirun's own command line holds the same words further on, and PIDs wrap around at pid_max, so the
# highest PID of a looser match was once mpirun's: stopped instead of a rank, it left the job running)
rank_pid() { pgrep -f "^[^ ]*grassflow --threads 1 train .*$tmp/$1" | tail -1; }

# a rank killed (SIGKILL: nothing saved) ends the whole job, with a message, well within 60 s
"${MPI[@]}" -np 2 "$GF" --threads 1 train "${A[@]}" --steps 100000 --eval-every 0 --out "$tmp/kill" >/dev/null 2>"$tmp/kill.err" &
job=$!
for _ in $(seq 100); do [ -s "$tmp/kill/metrics.jsonl" ] && break; sleep 0.2; done
victim=$(rank_pid kill)
t0=$SECONDS
kill -9 "$victim" 2>/dev/null
for _ in $(seq 600); do kill -0 $job 2>/dev/null || break; sleep 0.1; done
if kill -0 $job 2>/dev/null; then
    pkill -9 -f "$tmp/kill"; fail "a killed rank: the job still runs after 60 s"
else
    wait $job; rc=$?
    [ $rc != 0 ] && [ $((SECONDS - t0)) -lt 60 ] && grep -Eiq 'exited on signal 9|killed' "$tmp/kill.err" &&
        pass "a killed rank ends the job in $((SECONDS - t0)) s, exit $rc, saying which rank died" || fail "killed rank: exit $rc: $(tail -5 "$tmp/kill.err")"
fi
# a rank that hangs without dying (SIGSTOP): the others' collective times out (GRASSFLOW_MPI_TIMEOUT) and
# the job ends with a message naming what waited
GRASSFLOW_MPI_TIMEOUT=3 "${MPI[@]}" -x GRASSFLOW_MPI_TIMEOUT -np 2 "$GF" --threads 1 train "${A[@]}" --steps 100000 --eval-every 0 \
    --out "$tmp/hang" >/dev/null 2>"$tmp/hang.err" &
job=$!
for _ in $(seq 100); do [ -s "$tmp/hang/metrics.jsonl" ] && break; sleep 0.2; done
victim=$(rank_pid hang)
t0=$SECONDS
kill -STOP "$victim" 2>/dev/null
for _ in $(seq 600); do kill -0 $job 2>/dev/null || break; sleep 0.1; done
if kill -0 $job 2>/dev/null; then
    kill -9 "$victim"; pkill -9 -f "$tmp/hang"; fail "a hung rank: the job still runs after 60 s"
else
    wait $job; rc=$?
    [ $rc != 0 ] && grep -q "has waited [0-9]* s for the other ranks (GRASSFLOW_MPI_TIMEOUT=3): one of them hangs or died" "$tmp/hang.err" &&
        pass "a hung rank (SIGSTOP): the other's collective times out after 3 s, the job ends in $((SECONDS - t0)) s with the reason" ||
        fail "hung rank: exit $rc: $(tail -5 "$tmp/hang.err")"
fi
kill -9 "$victim" 2>/dev/null
GRASSFLOW_MPI_TIMEOUT=soon "${MPI[@]}" -x GRASSFLOW_MPI_TIMEOUT -np 2 "$GF" --version >/dev/null 2>"$tmp/err" && fail "GRASSFLOW_MPI_TIMEOUT=soon accepted" ||
    { grep -q "GRASSFLOW_MPI_TIMEOUT is 'soon'; expected seconds" "$tmp/err" && pass "a bad GRASSFLOW_MPI_TIMEOUT: an error naming it" || fail "bad timeout: $(cat "$tmp/err")"; }
[ "$fails" -eq 0 ] && echo "mpi: all passed" || { echo "mpi: $fails FAILED"; exit 1; }
