#!/usr/bin/env bash
# Kill a training run with SIGKILL at N random moments (default 20), half of them while a checkpoint is
# being written (a .tmp file exists; the writes are slowed down by fault injection to make that window
# wide). After every kill the latest checkpoint must load, and resuming
# (again and again) must reach final weights byte-identical to an uninterrupted run.
#   bash tests/kill.sh [N] [BUILD]
set -uo pipefail
N=${1:-20}
BUILD=${2:-build}
cd "$(dirname "$0")/.."
GF="$BUILD/grassflow"
PY=/usr/bin/python3
tmp=$(mktemp -d /tmp/grassflow-kill-XXXXXX)
export GRASSFLOW_CACHE="$tmp/cache"
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
# checkpoint writes slowed down (each chunk waits 20 ms) so that kills land inside them
export GRASSFLOW_FAULT_WRITE_DELAY_US=5000
RUN="--model hybrid-tiny --corpus tinyshakespeare --steps 60 --batch 4 --seq-len 16 --eval-every 3 --warmup 5 --dropout 0.1 --seed 9"
"$GF" train $RUN --out "$tmp/ref" >/dev/null 2>&1 || { echo "kill: the reference run failed"; exit 1; }

echo "kill: $N SIGKILLs"
K="$tmp/k"
kills=0 loads=0 fresh=0 in_write=0 rounds=0
while [ $kills -lt "$N" ] && [ $rounds -lt $((N * 5)) ]; do
    rounds=$((rounds + 1))
    if [ -s "$K/state.safetensors" ]; then
        "$GF" train --resume "$K" >/dev/null 2>&1 &
    else
        rm -rf "$K"; fresh=$((fresh + 1))
        "$GF" train $RUN --out "$K" >/dev/null 2>&1 &
    fi
    pid=$!
    if [ $((kills % 2)) -eq 0 ]; then # wait until a checkpoint is being written, then kill
        end=$((SECONDS + 20))
        while [ $SECONDS -lt $end ]; do
            compgen -G "$K/*.tmp.*" >/dev/null && break
            kill -0 $pid 2>/dev/null || break
        done
        sleep "0.0$((RANDOM % 10))" # somewhere inside the write
        compgen -G "$K/*.tmp.*" >/dev/null && in_write=$((in_write + 1))
    else
        sleep "$((RANDOM % 3)).$(printf '%03d' $((RANDOM % 1000)))"
    fi
    if kill -9 $pid 2>/dev/null; then kills=$((kills + 1)); fi
    wait $pid 2>/dev/null
    if [ -e "$K/last.safetensors" ]; then
        if "$GF" generate --ckpt "$K/last.safetensors" --tokens 1 >/dev/null 2>"$tmp/err"; then loads=$((loads + 1))
        else fail "after kill $kills: last.safetensors does not load: $(cat "$tmp/err")"; fi
    fi
done
pass "$kills kills ($in_write while a checkpoint was being written, $fresh fresh starts); the latest checkpoint loaded after each of the $loads kills that had one"
# finish the run
if [ -s "$K/state.safetensors" ]; then "$GF" train --resume "$K" >/dev/null 2>&1; else rm -rf "$K"; "$GF" train $RUN --out "$K" >/dev/null 2>&1; fi
if ls "$K" | grep '\.tmp\.' >/dev/null; then fail "temporary files left in the run directory: $(ls "$K")"; else pass "no temporary files left"; fi
if $PY - "$tmp/ref/last.safetensors" "$K/last.safetensors" <<'PYEOF'
import sys
sys.path.insert(0, "tests/torch_ref")
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
