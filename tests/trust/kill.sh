#!/usr/bin/env bash
# Kill a training run with SIGKILL N times (default 20): half of them while a checkpoint is being written
# (a .tmp file exists; the killed runs' writes are slowed down by fault injection to make that window wide),
# half at a random moment of the run (startup, a step, an evaluation). After every kill the latest checkpoint
# must load, and resuming (again and again) must reach final weights byte-identical to an uninterrupted run.
# It fails unless all N kills land and at least a quarter of them land inside a write.
#   bash tests/trust/kill.sh [N] [BUILD]
set -uo pipefail
N=${1:-20}
BUILD=${2:-build}
cd "$(dirname "$0")/../.."
GF="$BUILD/grassflow"
PY=/usr/bin/python3
tmp=$(mktemp -d /tmp/grassflow-kill-XXXXXX)
export GRASSFLOW_CACHE="$tmp/cache"
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
RUN="--model hybrid-tiny --corpus tinyshakespeare --steps 60 --batch 4 --seq-len 16 --eval-every 3 --warmup 5 --dropout 0.1 --seed 9"
t0=$(date +%s%N)
"$GF" train $RUN --out "$tmp/ref" >/dev/null 2>&1 || { echo "kill: the reference run failed"; exit 1; }
ms=$((($(date +%s%N) - t0) / 1000000)) # the run's length, unslowed: about 1.6 s, 8 s under ASan

echo "kill: $N SIGKILLs"
K="$tmp/k"
# the killed runs' checkpoint writes are slowed down (each chunk waits 5 ms) so that kills land inside them
SLOW=GRASSFLOW_FAULT_WRITE_DELAY_US=5000
kills=0 loads=0 fresh=0 in_write=0 rounds=0 finished=0
while [ $kills -lt "$N" ] && [ $rounds -lt $((N * 5)) ]; do
    rounds=$((rounds + 1))
    # a chain that ran to its end before the kills were all used starts again (the 60 steps of the slowed
    # run take about 11 s without a sanitizer; the last chain is the one compared at the end)
    if [ -s "$K/state.safetensors" ] && [ $finished = 0 ]; then
        env $SLOW "$GF" train --resume "$K" >/dev/null 2>"$tmp/log" &
    else
        rm -rf "$K"; fresh=$((fresh + 1)) finished=0
        env $SLOW "$GF" train $RUN --out "$K" >/dev/null 2>"$tmp/log" &
    fi
    pid=$!
    if [ $((kills % 2)) -eq 0 ]; then # wait until a checkpoint is being written, then kill inside it
        end=$((SECONDS + 20))
        while [ $SECONDS -lt $end ]; do
            compgen -G "$K/*.tmp.*" >/dev/null && break
            kill -0 $pid 2>/dev/null || break
        done
        sleep "0.00$((RANDOM % 10))"
        compgen -G "$K/*.tmp.*" >/dev/null && write=1 || write=0
    else # at a random moment within the unslowed run's length: loading, a step, an evaluation
        r=$((RANDOM * 32768 + RANDOM))
        sleep "$((r % ms / 1000)).$(printf '%03d' $((r % ms % 1000)))"
        write=0
    fi
    kill -9 $pid 2>/dev/null # succeeds on a run that has ended but is not waited for: its exit code tells
    wait $pid 2>/dev/null
    rc=$?
    if [ $rc != 137 ]; then # it had ended by itself: at the end of the run (or it failed, which is an error)
        [ $rc = 0 ] || { fail "round $rounds: the run exited $rc by itself: $(tail -c 300 "$tmp/log")"; break; }
        finished=1
        continue
    fi
    kills=$((kills + 1)) in_write=$((in_write + write))
    if [ -e "$K/last.safetensors" ]; then
        if "$GF" generate --ckpt "$K/last.safetensors" --tokens 1 >/dev/null 2>"$tmp/err"; then loads=$((loads + 1))
        else fail "after kill $kills: last.safetensors does not load: $(cat "$tmp/err")"; fi
    fi
done
if [ $kills -eq "$N" ] && [ $((in_write * 4)) -ge "$N" ]; then
    pass "$kills kills ($in_write while a checkpoint was being written, $fresh fresh starts, $rounds rounds); the latest checkpoint loaded after each of the $loads kills that had one"
else
    fail "only $kills of $N kills landed, $in_write of them inside a write (at least $(((N + 3) / 4)) wanted), in $rounds rounds"
fi
# finish the run
if [ -s "$K/state.safetensors" ]; then "$GF" train --resume "$K" >/dev/null 2>&1; else rm -rf "$K"; "$GF" train $RUN --out "$K" >/dev/null 2>&1; fi
if ls "$K" | grep '\.tmp\.' >/dev/null; then fail "temporary files left in the run directory: $(ls "$K")"; else pass "no temporary files left"; fi
if $PY - "$tmp/ref/last.safetensors" "$K/last.safetensors" <<'PYEOF'
import sys
sys.path.insert(0, "tests/parity/torch_ref")
import st_io
a, ma = st_io.read(sys.argv[1]); b, mb = st_io.read(sys.argv[2])
bad = [k for k in a if a[k].tobytes() != b[k].tobytes()]
print("    %d tensors, step %s / %s, byte-identical: %s" % (len(a), ma["step"], mb["step"], not bad))
sys.exit(1 if bad or ma["step"] != mb["step"] else 0)
PYEOF
then pass "after all kills and resumes, the final weights are byte-identical to the uninterrupted run"
else fail "final weights differ from the uninterrupted run"; fi
if [ $fails -ne 0 ]; then echo "kill: $fails FAILED"; exit 1; fi
echo "kill: all passed"
