#!/usr/bin/env bash
# The whole benchmark: grassflow against its PyTorch twins on this machine, same models, same shapes,
# same thread count, in one run. Writes docs/bench/results.jsonl, docs/bench/README.md and SVG plots.
# Every mixer of bench/mixers.conf gets training tokens/s against its PyTorch twin, forward+backward cost
# per token from L = 256 to 32,768 and streaming speed and state from position 100 to 100,000.
#   bash bench/run.sh                  the full benchmark (about 13 minutes on 2 quiet cores; the plan is
#                                      printed first, the time each part took at the end)
#   bash bench/run.sh --smoke          (or --quick) tiny shapes: checks that everything runs (CI)
#   bash bench/run.sh --plan           the mixers, the parts and the time each is planned to take; runs and
#                                      writes nothing (make bench BENCH_ARGS=--plan)
#   bash bench/run.sh --only NAME      one part (models, lowp, mtrain, sweep, stream) or one mixer of the list
#                                      (its per-mixer parts), e.g. --only window --out /tmp/b
#   options: --mixers FILE (another list, as bench/mixers.conf), --only-mixers (only the per-mixer parts),
#            --out DIR (where results.jsonl, README.md and the plots go). Only the full default run writes
#            the tracked docs/bench/ (and docs/performance.md's table); any other run without --out writes a new
#            folder under /tmp, kept and named at the end, and --out docs/bench is refused for it
set -euo pipefail
cd "$(dirname "$0")/.."
GF=${GRASSFLOW:-build/grassflow} # the command to measure (tests/studies/bench.sh gives its build)
. bench/env.sh # PY, OPENBLAS_CORETYPE, OMP_NUM_THREADS, GOMP_SPINCOUNT, TORCH_ENV, PYT
smoke=0 only=0 list=bench/mixers.conf out="" keep=1 plan=0 one=""
while [ $# -gt 0 ]; do
    case "$1" in
    --smoke | --quick) smoke=1 ;;
    --only-mixers) only=1 ;;
    --plan) plan=1 ;;
    --only) one=${2:?--only needs a part (models, lowp, mtrain, sweep, stream) or a mixer label of the list}; shift ;;
    --mixers) list=${2:?--mixers needs a file}; shift ;;
    --out) out=${2:?--out needs a folder}; shift ;;
    *) echo "bench/run.sh: unknown option $1 (expected --smoke, --quick, --plan, --only NAME, --only-mixers, --mixers FILE, --out DIR)" >&2; exit 2 ;;
    esac
    shift
done
[ -r "$list" ] || { echo "bench/run.sh: cannot read the mixer list $list" >&2; exit 2; }
# the parts run: all, or --only-mixers' per-mixer ones, or --only's one part or one mixer (its per-mixer parts)
P_models=1 P_lowp=1 P_mtrain=1 P_sweep=1 P_stream=1 only_label=""
[ $only = 1 ] && P_models=0 P_lowp=0
case "$one" in
"") ;;
models | lowp | mtrain | sweep | stream) P_models=0 P_lowp=0 P_mtrain=0 P_sweep=0 P_stream=0; eval "P_$one=1" ;;
*)
    if ! grep -Eq "^$one *\|" "$list" 2>/dev/null || [[ "$one" =~ [^A-Za-z0-9_.-] ]]; then
        echo "bench/run.sh: --only $one: not a part (models, lowp, mtrain, sweep, stream) nor a mixer label of $list" \
            "($(grep -Eo '^[A-Za-z0-9_.-]+ *\|' "$list" | tr -d ' |' | tr '\n' ' ')); HINT: --plan lists both" >&2
        exit 2
    fi
    only_label=$one P_models=0 P_lowp=0 ;;
esac
full=$([ $smoke = 0 ] && [ $only = 0 ] && [ -z "$one" ] && [ "$list" = bench/mixers.conf ] && echo 1 || echo 0)
if [ $plan = 1 ]; then
    out=$(mktemp -d /tmp/grassflow-bench-plan-XXXXXX) keep=0 # the plan writes nothing that stays
elif [ -z "$out" ]; then
    if [ $smoke = 1 ]; then out=$(mktemp -d /tmp/grassflow-bench-XXXXXX) keep=0
    elif [ $full = 1 ]; then out=docs/bench
    else out=$(mktemp -d /tmp/grassflow-bench-XXXXXX); echo "== a partial run: results go to $out (docs/bench/ is the full run's)" >&2; fi
elif [ $full = 0 ] && [ -d "$out" ] && [ "$out" -ef docs/bench ]; then
    echo "bench/run.sh: --out $out is the tracked docs/bench/, which only the full default run writes; this run is partial" \
        "($([ $smoke = 1 ] && echo "--smoke ")$([ $only = 1 ] && echo "--only-mixers ")${one:+--only $one }${list#bench/mixers.conf})" \
        "and would replace the full run's results with its own. HINT: give another --out, or drop the partial options" >&2
    exit 2
fi
mkdir -p "$out"
res="$out/results.jsonl"
: >"$res"
cfgdir=$(mktemp -d /tmp/grassflow-benchcfg-XXXXXX)
trap 'rm -rf "$cfgdir"; [ $keep = 0 ] && rm -rf "$out"' EXIT

# one JSON line per measurement, tagged with the case and the implementation
record() { # case impl json
    $PY -c 'import json,sys; d=json.loads(sys.argv[3]); d["case"]=sys.argv[1]; d["impl"]=sys.argv[2]; print(json.dumps(d))' "$1" "$2" "$3" >>"$res"
}
config() { bench_config "$@"; } # bench/env.sh

if [ $smoke = 1 ]; then
    STEPS=1; TOK=2; STOK=2; LREPS=1
    config word-g --model grassmann-tiny --set dropout=0; config word-t --model transformer-tiny --set dropout=0
    config char-g --model grassmann-tiny --set dropout=0; config char-t --model transformer-tiny --set dropout=0
    WB="2 4"; WL=16; CB=2; CL=32
    # the last length is over the memory budget on both sides: the skip is exercised too
    MLENS=64,128,65536; MREPS=1; MAXB=$((256 << 20)); TB=1; TL=128; MSTEPS=1; SPOS=10,1000; SFAR=2000; SFARCUT=1000
else
    STEPS=8; TOK=16; STOK=32; LREPS=3
    # word level: WikiText-2's 33,278 words, L=128, pre-LN, offsets 1..16, tied head, no dropout
    config word-g --model grassmann-6L --vocab 33278 --set dropout=0
    config word-t --model transformer-6L --vocab 33278 --set dropout=0
    # character level: vocabulary 65, 4 layers, d 128, d_ff 512, r 16, 4 heads, L 256
    config char-g --model grassmann-small --vocab 65 --set max_len=256 --set dropout=0
    config char-t --model transformer-small --vocab 65 --set max_len=256 --set dropout=0
    WB="8 32"; WL=128; CB=16; CL=256
    # per mixer: training at L 1024 (B 4: 4,096 tokens a step), the sweep, the stream (see docs/bench)
    MLENS=256,1024,4096,8192,32768; MREPS=2; MAXB=$((4 << 30)); TB=4; TL=1024; MSTEPS=6
    SPOS=100,1000,10000; SFAR=100000; SFARCUT=10000
fi
# the machine and how both sides run: CPU, cores, BLAS and its kernel, OPENBLAS_CORETYPE, threads, PyTorch
echo "== machine: $("$GF" --version | tr '\n' ' ')" >&2
[ $plan = 1 ] || echo "{\"case\": \"machine\", \"date\": \"$(date -u +%Y-%m-%dT%H:%MZ)\", \"cpu\": \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)\", \"cores\": $(nproc --all), \"version\": \"$("$GF" --version | head -1)\", \"blas\": \"$("$GF" --version | sed -n 2p)\", \"fp32_matmul\": \"$("$GF" --version | sed -n 's/^fp32 matmuls: //p')\", \"openblas_coretype\": \"${OPENBLAS_CORETYPE:-}\", \"omp_num_threads\": \"$OMP_NUM_THREADS\", \"smoke\": $smoke, \"avx512\": $(grep -qw avx512f /proc/cpuinfo && echo true || echo false), \"torch\": \"$($PY -c 'import torch; print(torch.__version__)')\"}" >>"$res"

# ---- the mixer list: which lines run, which are skipped and why ----------------------------------------
registered=$("$GF" info --mixers | sed -nE 's/^([A-Za-z0-9_-]+)( \(.\))?$/\1/p')
LABELS=() FLAGS=() SETS=()
skip() { # label reason [case]: printed and recorded (as case, default "entry LABEL"), so the tables say it too
    echo "skip $1: $2" >&2
    record "${3:-entry $1}" "" "$($PY -c 'import json,sys; print(json.dumps({"label": sys.argv[1], "skipped": sys.argv[2]}))' "$1" "$2")"
}
trim() { local s=$1; s=${s#"${s%%[![:space:]]*}"}; printf '%s' "${s%"${s##*[![:space:]]}"}"; }
while IFS='|' read -r label needs flags sets; do
    label=$(trim "$label")
    case "$label" in '' | '#'*) continue ;; esac
    [ -n "$only_label" ] && [ "$label" != "$only_label" ] && continue
    why=""
    for m in $needs; do
        grep -qx -- "$m" <<<"$registered" || { why="not registered: mixer $m is not in this build (src/mixers/mixer.c's BUILTIN)"; break; }
    done
    setargs=()
    for kv in $sets; do setargs+=(--set "$kv"); done
    if [ -z "$why" ] && ! err=$("$GF" info --model grassmann-small --vocab 65 --set max_len=$TL "${setargs[@]}" 2>&1 >/dev/null); then
        why="not registered: this build refuses its options: $(echo "$err" | head -1 | sed -e "s/^grassflow info: //" -e "s/; the keys are.*//")"
    fi
    if [ -n "$why" ]; then skip "$label" "$why"; continue; fi
    record "entry $label" "" "{\"label\": \"$label\", \"flags\": \"$(echo $flags)\", \"sets\": \"$(echo $sets)\"}"
    LABELS+=("$label") FLAGS+=(" $(echo $flags) ") SETS+=("$(echo $sets)")
done <"$list"
n=${#LABELS[@]}
has() { [[ "${FLAGS[$1]}" == *" $2 "* ]]; } # entry flag
setargs_of() { local kv; SETARGS=(); for kv in ${SETS[$1]}; do SETARGS+=(--set "$kv"); done; }

# ---- the plan: seconds each part is expected to take on 2 quiet cores (docs/bench/README.md) ------------
n_sweep=0 n_quad=0 n_flat=0 n_grow=0
for ((i = 0; i < n; i++)); do
    if ! has $i model; then n_sweep=$((n_sweep + 1)); has $i linear || n_quad=$((n_quad + 1)); fi
    if ! has $i bidir; then if has $i linear; then n_flat=$((n_flat + 1)); else n_grow=$((n_grow + 1)); fi; fi
done
if [ $smoke = 1 ]; then per_old=40 per_lowp=20 per_train=6 per_sweep=6 per_quad=0 per_flat=6 per_grow=6
else per_old=560 per_lowp=300 per_train=7 per_sweep=12 per_quad=20 per_flat=10 per_grow=10; fi # the run of 2026-11-25: 734 s (per_old: + 25 s for the two char fp32-fast runs, + 25 s for the word ones)
# (per_lowp: 77 s on 2026-11-26 with one bf16 run a model; 3 rounds of fp32 and bf16 add about 3.5 min)
PLAN_OLD=$((P_models * per_old)) PLAN_LOWP=$((P_lowp * per_lowp)) PLAN_TRAIN=$((P_mtrain * n * per_train))
PLAN_SWEEP=$((P_sweep * (n_sweep * per_sweep + n_quad * per_quad))) PLAN_STREAM=$((P_stream * (n_flat * per_flat + n_grow * per_grow)))
PLAN_TOTAL=$((PLAN_OLD + PLAN_LOWP + PLAN_TRAIN + PLAN_SWEEP + PLAN_STREAM))
echo "== plan: $n mixers of $list; about $((PLAN_TOTAL / 60)) min $((PLAN_TOTAL % 60)) s on 2 quiet cores:" \
    "models ${PLAN_OLD}s, low precision ${PLAN_LOWP}s, training per mixer ${PLAN_TRAIN}s, length sweep ${PLAN_SWEEP}s," \
    "streaming ${PLAN_STREAM}s" >&2
if [ $plan = 1 ]; then # what would run, then nothing
    echo "== parts: models $([ $P_models = 1 ] && echo yes || echo no), lowp $([ $P_lowp = 1 ] && echo yes || echo no)," \
        "mtrain $([ $P_mtrain = 1 ] && echo yes || echo no), sweep $([ $P_sweep = 1 ] && echo yes || echo no)," \
        "stream $([ $P_stream = 1 ] && echo yes || echo no)" >&2
    echo "== mixers: ${LABELS[*]}" >&2
    echo "== results would go to $([ $full = 1 ] && [ -z "$one" ] && echo docs/bench || echo "--out (a new /tmp folder if none)")" \
        "(--plan: nothing run, nothing written)" >&2
    exit 0
fi
T_START=$SECONDS
phase_t0=$SECONDS
phase_end() { # name planned_s: records the time a part took beside its plan
    record "timing $1" "" "{\"phase\": \"$1\", \"planned_s\": $2, \"actual_s\": $((SECONDS - phase_t0))}"
    echo "== $1 took $((SECONDS - phase_t0)) s (planned $2 s)" >&2
    phase_t0=$SECONDS
}

# case impl command...: records the JSON the command prints; a command that fails (a new mixer's bug, memory)
# is recorded as failed with its last line of stderr, and the run goes on to the next measurement
measure() {
    local c=$1 impl=$2 j rc=0
    shift 2
    j=$("$@" 2>"$cfgdir/err") || rc=$?
    if [ $rc = 0 ]; then record "$c" "$impl" "$j"; return; fi
    local msg
    msg="failed (exit $rc): $(grep -v '^advancing' "$cfgdir/err" | grep -v '^{' | tail -1)"
    echo "== $c ($impl) $msg" >&2
    # what it printed before it stopped (bench mixer's lengths measured before memory ran out) is kept
    record "$c" "$impl" "$($PY -c 'import json,sys
try: d = json.loads(sys.argv[2])
except ValueError: d = {}
d["failed"] = sys.argv[1]; print(json.dumps(d))' "$msg" "$j")"
}
train_pair() { # case cfg batch seqlen threads [steps]
    local c=$1 cfg=$2 B=$3 L=$4 th=$5 st=${6:-$STEPS}
    echo "== train $c (B=$B L=$L, $th threads)" >&2
    measure "$c" grassflow env OMP_NUM_THREADS=$th "$GF" bench train --config "$cfgdir/$cfg.cfg.json" --batch "$B" --seq-len "$L" --steps $st --threads "$th" --json
    measure "$c" pytorch env OMP_NUM_THREADS=$th ${TORCH_ENV[@]+"${TORCH_ENV[@]}"} $PY bench/torch_bench.py train --config "$cfgdir/$cfg.json" --batch "$B" --seq-len "$L" --steps $st --threads "$th"
}

# ---- the models of the earlier speed issues (word and character level, generation) ----------------------
if [ $P_models = 1 ]; then
    for B in $WB; do
        train_pair "train word grassmann B=$B" word-g "$B" $WL 2
        train_pair "train word transformer B=$B" word-t "$B" $WL 2
    done
    train_pair "train char grassmann" char-g $CB $CL 2
    train_pair "train char transformer" char-t $CB $CL 2
    # the same in --precision fp32-fast (docs/precision.md), against the same PyTorch runs (the word models at
    # the first batch size)
    first_b=${WB%% *}
    for m in grassmann:g transformer:t; do
        echo "== train char ${m%%:*} fp32-fast" >&2
        measure "train char ${m%%:*} fp32-fast" grassflow env OMP_NUM_THREADS=2 "$GF" bench train --config "$cfgdir/char-${m##*:}.cfg.json" \
            --batch $CB --seq-len $CL --steps $STEPS --threads 2 --precision fp32-fast --json
        echo "== train word ${m%%:*} B=$first_b fp32-fast" >&2
        measure "train word ${m%%:*} B=$first_b fp32-fast" grassflow env OMP_NUM_THREADS=2 "$GF" bench train \
            --config "$cfgdir/word-${m##*:}.cfg.json" --batch "$first_b" --seq-len $WL --steps $STEPS --threads 2 \
            --precision fp32-fast --json
    done
    train_pair "train word grassmann B=$first_b 1 thread" word-g "$first_b" $WL 1
    # generation, batch 1: the window recomputed per token (what the PyTorch twin does) and the stream at
    # the same place
    for m in g t; do
        echo "== generate word-$m" >&2
        record "generate word-$m" grassflow "$("$GF" bench generate --config "$cfgdir/word-$m.cfg.json" --no-cache --positions $WL --tokens $TOK --threads 2 --json)"
        record "generate word-$m stream" grassflow "$("$GF" bench generate --config "$cfgdir/word-$m.cfg.json" --positions $((WL - TOK)) --tokens $TOK --threads 2 --json)"
        record "generate word-$m" pytorch "$(PYT bench/torch_bench.py generate --config "$cfgdir/word-$m.json" --tokens $TOK --threads 2)"
    done
    # perf profiles of the training cases with targets (the report links them from every target not met)
    if [ $smoke = 0 ] && command -v perf >/dev/null; then
        echo "== perf profiles" >&2
        wargs=(--config "$cfgdir/word-g.cfg.json" --batch 32 --seq-len $WL --steps 4)
        bash bench/profile.sh "$out/profile-word-grassmann.txt" 2 "${wargs[@]}"
        bash bench/profile.sh "$out/profile-word-grassmann-1-thread.txt" 1 "${wargs[@]}"
        bash bench/profile.sh "$out/profile-word-transformer.txt" 2 --config "$cfgdir/word-t.cfg.json" --batch 32 --seq-len $WL --steps 4
        bash bench/profile.sh "$out/profile-char-grassmann.txt" 2 --config "$cfgdir/char-g.cfg.json" --batch $CB --seq-len $CL --steps 20
        bash bench/profile.sh "$out/profile-char-transformer.txt" 2 --config "$cfgdir/char-t.cfg.json" --batch $CB --seq-len $CL --steps 20
    fi
    phase_end models $PLAN_OLD
fi

# ---- low precision (docs/precision.md): bf16 training against PyTorch's bf16 autocast (both on oneDNN),
# generation with int8 and bf16 weights against PyTorch's dynamic int8, word-level 6-layer models ---------
if [ $P_lowp = 1 ]; then
    LB=${WB##* }
    if "$GF" --version | grep -q "^bf16 matmuls: oneDNN"; then
        for m in g t; do
            name=$([ $m = g ] && echo grassmann || echo transformer)
            # grassflow's fp32 and bf16 alternated LREPS times: the ratio is of the two medians, so that a
            # few seconds of another process do not decide it (single runs moved it from 1.54x to 1.72x)
            for ((r = 1; r <= LREPS; r++)); do
                echo "== train word-$m fp32 and bf16, round $r of $LREPS (B=$LB L=$WL)" >&2
                for p in fp32 bf16; do
                    measure "lowp word $name B=$LB $p $r" grassflow env OMP_NUM_THREADS=2 "$GF" bench train --config "$cfgdir/word-$m.cfg.json" --batch "$LB" --seq-len $WL --steps $STEPS --threads 2 --precision $p --json
                done
            done
            measure "train word $name B=$LB bf16" pytorch env OMP_NUM_THREADS=2 ${TORCH_ENV[@]+"${TORCH_ENV[@]}"} $PY bench/torch_bench.py train --config "$cfgdir/word-$m.json" --batch "$LB" --seq-len $WL --steps $STEPS --threads 2 --precision bf16
        done
    else
        skip "bf16 training" "$("$GF" --version | sed -n 's/^bf16 matmuls: //p')" "lowp skip bf16"
    fi
    for m in g t; do
        for w in bf16 int8; do
            echo "== generate word-$m stream, $w weights" >&2
            measure "generate word-$m stream $w" grassflow "$GF" bench generate --config "$cfgdir/word-$m.cfg.json" --positions $((WL - TOK)) --tokens $TOK --threads 2 --weights $w --json
        done
        measure "generate word-$m int8" pytorch PYT bench/torch_bench.py generate --config "$cfgdir/word-$m.json" --tokens $TOK --threads 2 --weights int8
    done
    phase_end "low precision" $PLAN_LOWP
fi

# ---- every mixer: training against its PyTorch twin (grassmann-small, vocabulary 65, L $TL) --------------
for ((i = 0; i < n && P_mtrain; i++)); do
    setargs_of $i
    config "mt-$i" --model grassmann-small --vocab 65 --set dropout=0 --set max_len=$TL "${SETARGS[@]}"
    train_pair "mtrain ${LABELS[$i]}" "mt-$i" $TB $TL 2 $MSTEPS
done
phase_end "training per mixer" $PLAN_TRAIN

# ---- every mixer: forward+backward per token against L (grassmann-6L's layer, d 256) ---------------------
maxl=${MLENS##*,}
for ((i = 0; i < n && P_sweep; i++)); do
    has $i model && continue
    setargs_of $i
    echo "== mixer ${LABELS[$i]}, L = $MLENS" >&2
    measure "mixer ${LABELS[$i]}" grassflow "$GF" bench mixer "${SETARGS[@]}" --seq-lens $MLENS --reps $MREPS --max-bytes $MAXB --threads 2 --json
    config "mx-$i" --model grassmann-6L --set max_len=$maxl "${SETARGS[@]}"
    measure "mixer ${LABELS[$i]}" pytorch PYT bench/torch_bench.py mixer --config "$cfgdir/mx-$i.json" --batch 1 --seq-lens $MLENS --reps $MREPS --max-bytes $MAXB --threads 2
done
phase_end "length sweep" $PLAN_SWEEP

# ---- every causal mixer: the stream far out (grassmann-small, sinusoidal positions) ----------------------
# Positions $SPOS in one run; a mixer whose state stayed flat over them then goes on to $SFAR (a mixer
# whose state grows, a KV cache, stops at $SFARCUT: its time per token grows with the position).
for ((i = 0; i < n && P_stream; i++)); do
    lab=${LABELS[$i]}
    if has $i bidir; then skip "$lab" "bidirectional only: it does not stream" "streamskip $lab"; continue; fi
    setargs_of $i
    config "ms-$i" --model grassmann-small --vocab 65 --set dropout=0 --set pos=sinusoidal "${SETARGS[@]}"
    echo "== stream $lab, positions $SPOS" >&2
    if ! j=$("$GF" bench generate --config "$cfgdir/ms-$i.cfg.json" --positions $SPOS --tokens $STOK --threads 2 --json 2>"$cfgdir/err"); then
        skip "$lab" "it does not stream: $(grep -v '^advancing' "$cfgdir/err" | head -1)" "streamskip $lab"
        continue
    fi
    record "stream $lab" grassflow "$j"
    flat=$($PY -c 'import json,sys; r=json.loads(sys.argv[1])["results"]; print(int(len({x["state_bytes"] for x in r}) == 1))' "$j")
    if [ "$flat" = 1 ]; then
        echo "== stream $lab, position $SFAR (flat state)" >&2
        measure "stream $lab far" grassflow "$GF" bench generate --config "$cfgdir/ms-$i.cfg.json" --positions $SFAR --tokens $STOK --threads 2 --json
    else
        echo "== stream $lab: its state grows; not run past position $SFARCUT" >&2
    fi
done
phase_end streaming $PLAN_STREAM
record "timing total" "" "{\"phase\": \"total\", \"planned_s\": $PLAN_TOTAL, \"actual_s\": $((SECONDS - T_START))}"

readme=()
[ $full = 1 ] && [ "$out" -ef docs/bench ] && readme=(--readme docs/performance.md) # docs/performance.md's table: full runs only
GRASSFLOW=$GF $PY bench/report.py "$res" "$out" "$list" ${readme[@]+"${readme[@]}"} # its figures: grassflow plot --table
echo "== wrote $out/README.md in $((SECONDS - T_START)) s (planned $PLAN_TOTAL s)" >&2
if [ $smoke = 1 ]; then cat "$out/README.md"; fi
