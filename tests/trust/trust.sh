#!/usr/bin/env bash
# Runs that go wrong: NaN/Inf in training, SIGINT/SIGTERM, a full disk, two runs in one folder. Nothing
# may be lost: the last good checkpoints stay byte-identical, and an interrupted run resumes to the same
# weights. Names with control bytes are shown escaped; paths that are not UTF-8 are refused up front.
#   bash tests/trust/trust.sh [BUILD]
set -uo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/../.."
GF="$BUILD/grassflow"
PY=/usr/bin/python3
tmp=$(mktemp -d /tmp/grassflow-trust-XXXXXX)
export GRASSFLOW_CACHE="$tmp/cache"
cleanup() {
    for m in "$tmp/full" "$tmp/ro"; do mountpoint -q "$m" 2>/dev/null && umount "$m"; done
    rm -rf "$tmp" "${locked:-}"
}
trap cleanup EXIT
. tests/lib.sh
R="--model grassmann-tiny --corpus tinyshakespeare --steps 30 --batch 4 --seq-len 16 --eval-every 10 --seed 3"
same_weights() { # a.safetensors b.safetensors: tensors and step identical (the metadata names the run dir)
    $PY - "$1" "$2" <<'PYEOF'
import sys
sys.path.insert(0, "tests/parity/torch_ref")
import st_io
a, ma = st_io.read(sys.argv[1]); b, mb = st_io.read(sys.argv[2])
sys.exit(0 if list(a) == list(b) and all(a[k].tobytes() == b[k].tobytes() for k in a) and ma["step"] == mb["step"] else 1)
PYEOF
}

echo "trust: NaN and Inf"
"$GF" train $R --out "$tmp/ref10" --stop-at 10 >/dev/null 2>&1
want="step 15: the loss is NaN; training stopped. The checkpoints in .* are intact"
GRASSFLOW_FAULT_NONFINITE=15 expect 1 "a NaN loss stops the run with a clear message" "$GF" train $R --out "$tmp/nan"
for f in last best state; do
    same_weights "$tmp/nan/$f.safetensors" "$tmp/ref10/$f.safetensors" && pass "... $f.safetensors still holds step 10, every tensor byte-identical" || fail "$f.safetensors changed after the NaN"
done
want="resume with: grassflow train --resume"; GRASSFLOW_FAULT_NONFINITE=15 expect 1 "... and says how to resume" "$GF" train $R --out "$tmp/nan2"
GRASSFLOW_FAULT_NONFINITE=15-17 expect 0 "--on-nonfinite skip skips three NaN steps and finishes" "$GF" train $R --out "$tmp/skip" --on-nonfinite skip
[ "$(grep -c '"skipped"' "$tmp/skip/metrics.jsonl")" = 3 ] && pass "... metrics.jsonl records the 3 skipped steps" || fail "skipped steps in metrics: $(grep skipped "$tmp/skip/metrics.jsonl")"
grep -q "step 16 skipped: the loss is not finite" "$tmp/err" && pass "... and stderr names each one" || fail "skip message: $(head -c 300 "$tmp/err")"
want="for more than 10 steps in a row"; GRASSFLOW_FAULT_NONFINITE=12-25 expect 1 "skip mode stops after 10 non-finite steps in a row" "$GF" train $R --out "$tmp/skip2" --on-nonfinite skip
want="step 3: the loss is NaN; training stopped before any checkpoint was written"; GRASSFLOW_FAULT_NONFINITE=3 expect 1 "a NaN before the first evaluation says no checkpoint exists yet" "$GF" train $R --out "$tmp/nan0"
want="grassflow train --resume"; ! grep -q "$want" "$tmp/err" && pass "... and does not offer a resume that cannot work" || fail "first-step NaN offers --resume: $(head -c 300 "$tmp/err")"
want="is a training state"; expect 1 "a training state given as a checkpoint is named as such" "$GF" generate --ckpt "$tmp/ref10/state.safetensors" --prompt "a" --tokens 2
mkdir -p "$tmp/lnk" && echo precious >"$tmp/victim" && ln -s "$tmp/victim" "$tmp/lnk/metrics.jsonl"
want="symbolic link"; expect 1 "a symbolic link planted as metrics.jsonl is refused" "$GF" train $R --out "$tmp/lnk" --steps 2
[ "$(cat "$tmp/victim")" = precious ] && pass "... and its target is untouched" || fail "metrics symlink target overwritten"
want="--on-nonfinite expects stop or skip"; expect 2 "a bad --on-nonfinite" "$GF" train $R --out "$tmp/x" --on-nonfinite ignore

echo "trust: SIGINT and SIGTERM"
# 400 steps (100 under AddressSanitizer, 5x slower): the signal comes at the first step line, step 10
NS=400; ldd "$GF" | grep libasan >/dev/null && NS=100
RS="--model hybrid-tiny --corpus tinyshakespeare --steps $NS --batch 8 --seq-len 32 --eval-every 100 --seed 4 --dropout 0.1"
"$GF" train $RS --out "$tmp/sref" >/dev/null 2>&1
for sig in INT TERM; do
    "$GF" train $RS --out "$tmp/s$sig" >"$tmp/out" 2>"$tmp/err" &
    pid=$!
    end=$((SECONDS + 30))
    until grep -q "step [0-9]*/$NS" "$tmp/err" 2>/dev/null || [ $SECONDS -ge $end ]; do sleep 0.05; done
    kill -$sig $pid
    wait $pid
    rc=$?
    code=$([ $sig = INT ] && echo 130 || echo 143)
    [ $rc = $code ] && pass "SIG$sig: exit $rc" || fail "SIG$sig: exit $rc, expected $code ($(tail -c 300 "$tmp/err"))"
    grep -q "interrupted by a signal after step [0-9]* of $NS; the state is saved; resume with: grassflow train --resume $tmp/s$sig" "$tmp/err" \
        && pass "SIG$sig: says where it stopped and how to resume" || fail "SIG$sig message: $(tail -c 300 "$tmp/err")"
    st=$(grep -o "after step [0-9]*" "$tmp/err" | grep -o "[0-9]*")
    [ -n "$st" ] && [ "$st" -lt $NS ] && pass "SIG$sig: stopped early, at step $st" || fail "SIG$sig: stopped at '$st'"
    "$GF" train --resume "$tmp/s$sig" >/dev/null 2>&1
    same_weights "$tmp/s$sig/last.safetensors" "$tmp/sref/last.safetensors" && pass "SIG$sig: resumed to weights byte-identical to an uninterrupted run" || fail "SIG$sig: resumed weights differ"
done

# a resumed run reads its recipe back from the state: the signal handling must survive that
"$GF" train $RS --out "$tmp/sres" --stop-at 20 >/dev/null 2>&1
"$GF" train --resume "$tmp/sres" >"$tmp/out" 2>"$tmp/err" &
pid=$!
end=$((SECONDS + 30))
until grep -q "step [0-9]*/$NS" "$tmp/err" 2>/dev/null || [ $SECONDS -ge $end ]; do sleep 0.05; done
# what the signal found, for the message if it fails (once, in the sanitizer build of a CI run, the run went
# on to its end and exit 0: not seen again in 6 runs of this block by hand)
seen=$(grep -o "step [0-9]*/$NS" "$tmp/err" | tail -1) alive=$(kill -0 $pid 2>/dev/null && echo "was still running" || echo "had ended")
kill -INT $pid
wait $pid
rc=$?
[ $rc = 130 ] && grep -q "interrupted by a signal after step [0-9]* of $NS" "$tmp/err" \
    && pass "SIGINT during a resumed run: exit 130, the state is saved" ||
    fail "SIGINT during a resumed run: exit $rc; SIGINT sent after '${seen:-no step line}' (30 s limit) to a process that $alive ($(tail -c 300 "$tmp/err"))"
"$GF" train --resume "$tmp/sres" >/dev/null 2>&1
same_weights "$tmp/sres/last.safetensors" "$tmp/sref/last.safetensors" && pass "... and resumed again to weights byte-identical to an uninterrupted run" || fail "resumed-then-interrupted run: weights differ"

# a signal that comes twice (GNU timeout signals the child, then its process group; an impatient Ctrl-C)
# must not lose the save the first one asked for; a third aborts, and says so. Steps of about a second
# (5M parameters, 32,768 tokens; 0.25 s steps let the third signal of 50 ms apart come after the save):
# the signals arrive during the step, one by one.
SLOW="--model grassmann-small --corpus tinyshakespeare --steps 100000 --batch 256 --seq-len 128 --eval-every 100000 --seed 3"
signals() { # DIR SIG COUNT: start a run in DIR, send SIG COUNT times 50 ms apart once it trains; its exit code
    "$GF" train $SLOW --out "$1" >"$tmp/out" 2>"$tmp/err" &
    local pid=$! end=$((SECONDS + 60))
    until grep -q "from scratch" "$tmp/err" 2>/dev/null || [ $SECONDS -ge $end ]; do sleep 0.05; done
    sleep 0.3
    for _ in $(seq "$3"); do kill -"$2" $pid 2>/dev/null; sleep 0.05; done
    wait $pid
}
signals "$tmp/twice" TERM 2; rc=$?
st=$(grep -o "interrupted by a signal after step [0-9]*" "$tmp/err" | grep -o "[0-9]*$")
[ $rc = 143 ] && grep -q "signal received again: still finishing the step and saving the state" "$tmp/err" && [ -n "$st" ] \
    && pass "SIGTERM twice: the second is acknowledged, the state of step $st is saved, exit 143" || fail "SIGTERM twice: exit $rc $(tail -c 300 "$tmp/err")"
want=; expect 0 "... and it resumes" "$GF" train --resume "$tmp/twice" --stop-at $((st + 1))
signals "$tmp/thrice" INT 3; rc=$?
[ $rc = 130 ] && grep -q "third signal: aborting without saving this step" "$tmp/err" && ! grep -q "the state is saved" "$tmp/err" \
    && pass "SIGINT three times: aborts at once and says so, exit 130" || fail "SIGINT three times: exit $rc $(tail -c 300 "$tmp/err")"
timeout -s TERM 3 "$GF" train $SLOW --out "$tmp/timeout" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc = 124 ] && [ -f "$tmp/timeout/state.safetensors" ] && grep -q "the state is saved" "$tmp/err" \
    && pass "under GNU timeout (child, then process group): the state is saved" || fail "timeout: exit $rc $(tail -c 300 "$tmp/err")"

echo "trust: a full disk"
mkdir -p "$tmp/full"
if mount -t tmpfs -o size=64k tmpfs "$tmp/full" 2>/dev/null; then
    dd if=/dev/zero of="$tmp/full/fill" bs=4k count=16 2>/dev/null
    want="cannot write in the output directory $tmp/full/run: No space left on device"
    # a first step would end in a NaN (fault injection) and say so: the step lines come every 10 steps only
    expect 1 "a full output disk is reported before training starts" env GRASSFLOW_FAULT_NONFINITE=1 "$GF" train $R --out "$tmp/full/run"
    grep -Eq "step [0-9]+|NaN" "$tmp/err" && fail "... but it trained first: $(head -c 300 "$tmp/err")" || pass "... before any step"
    [ ! -e "$tmp/full/run" ] && pass "... and leaves no directory behind" || fail "left $tmp/full/run"
    umount "$tmp/full"
    # room for the first round of checkpoints and 24 KB more: the second round's first write (73 KB) fails
    "$GF" train $R --out "$tmp/r1" --stop-at 10 >/dev/null 2>&1
    need=$(( $(du -b "$tmp/r1"/*.safetensors | awk '{s += $1} END {print s}') / 1024 + 24 ))
    mount -t tmpfs -o size=${need}k tmpfs "$tmp/full"
    want="No space left on device"; expect 1 "a disk that fills up during the run stops it with the reason" "$GF" train $R --out "$tmp/full/run"
    ok=1
    for f in last best state; do same_weights "$tmp/full/run/$f.safetensors" "$tmp/r1/$f.safetensors" || ok=0; done
    [ $ok = 1 ] && pass "... and the step-10 checkpoints are intact (every tensor byte-identical)" || fail "checkpoints after the full disk: $(ls -l "$tmp/full/run")"
    ls "$tmp/full/run" | grep '\.tmp\.' >/dev/null && fail "... temporary file left: $(ls "$tmp/full/run")" || pass "... and no temporary file is left"
    umount "$tmp/full"
    # stdout on a disk that fills up part way through: the first buffers land, a later one does not
    mount -t tmpfs -o size=64k tmpfs "$tmp/full"
    dd if=/dev/zero of="$tmp/full/fill" bs=4k count=14 2>/dev/null
    "$GF" features --ckpt "$tmp/r1/last.safetensors" --text "First Citizen: Before we proceed" --json >"$tmp/full/f.json" 2>"$tmp/err"
    rc=$?
    got=$(stat -c %s "$tmp/full/f.json")
    [ $rc = 1 ] && grep -q "error: writing standard output: No space left on device" "$tmp/err" \
        && pass "features --json on a disk that fills up after $got bytes exits 1 and says why" \
        || fail "features --json on a full disk: exit $rc after $got bytes ($(head -c 300 "$tmp/err"))"
    umount "$tmp/full"
else
    echo "  skip  full-disk checks: mounting a tmpfs needs root"
fi

echo "trust: a read-only file system, a folder without permission: the hint is the error's (gf_write_hint)"
mkdir -p "$tmp/ro"
RO="HINT: the file system is read-only: write to a folder on a writable one, or remount it read-write"
ro_hint() { # WHAT: the read-only hint, and not the full disk's
    grep -q "^$RO" "$tmp/err" && ! grep -q "free some space" "$tmp/err" && pass "... $1" || fail "$1: $(head -c 300 "$tmp/err")"
}
if mount -t tmpfs -o size=2m tmpfs "$tmp/ro" 2>/dev/null; then
    "$GF" train $R --out "$tmp/ro/run" --stop-at 10 >/dev/null 2>&1
    mkdir "$tmp/ro/empty" && mount -o remount,ro "$tmp/ro"
    want="cannot write in the output directory $tmp/ro/run: Read-only file system"
    expect 1 "--resume of a run on a read-only file system" "$GF" train --resume "$tmp/ro/run"
    ro_hint "the hint: read-only (it said \"free some space\")"
    want="--out $tmp/ro/empty is not writable: Read-only file system"; expect 1 "a new run into a folder on it" "$GF" train $R --out "$tmp/ro/empty"
    ro_hint "and the same hint"
    want="cannot create --out $tmp/ro/new: $tmp/ro is not writable: Read-only file system"; expect 1 "a new run whose folder would be made on it" "$GF" train $R --out "$tmp/ro/new"
    ro_hint "and the same hint"
    GRASSFLOW_CACHE="$tmp/ro/cache" "$GF" data stats --corpus tinyshakespeare --tokenizer byte >/dev/null 2>"$tmp/err"
    grep -q "warning: could not write the token cache .*: cannot create the cache folder $tmp/ro/cache: Read-only file system (the corpus is read all the same" "$tmp/err" \
        && pass "a token cache on it: a warning with the reason (it had none), the corpus read" || fail "cache on a read-only file system: $(cat "$tmp/err")"
    umount "$tmp/ro"
else
    echo "  skip  read-only file system checks: mounting a tmpfs needs root"
fi
locked=$(mktemp -d /tmp/grassflow-trust-locked-XXXXXX) && chmod 755 "$locked"
if [ "$(id -u)" = 0 ] && setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
    want="cannot create --out $locked/run: $locked is not writable: Permission denied"
    expect 1 "a new run in a folder another user owns" setpriv --reuid=65534 --regid=65534 --clear-groups "$GF" train $R --out "$locked/run"
    grep -q "^HINT: no permission to write there" "$tmp/err" && pass "... the hint: no permission" || fail "permission hint: $(head -c 300 "$tmp/err")"
else
    echo "  skip  a folder without permission: needs root, to run as another user (setpriv)"
fi

echo "trust: a device node or FIFO planted as a run file is refused before any step, and left as it was"
"$GF" train $R --out "$tmp/mfull" --stop-at 10 >/dev/null 2>&1
rm -f "$tmp/mfull/metrics.jsonl"
if mknod "$tmp/mfull/metrics.jsonl" c 1 7 2>/dev/null; then # a /dev/full
    want="$tmp/mfull/metrics.jsonl is a character device; grassflow writes only regular files"
    # a step that ran would end in a NaN (fault injection at step 11) and say so
    expect 1 "a character device as metrics.jsonl is refused with the reason" env GRASSFLOW_FAULT_NONFINITE=11 "$GF" train --resume "$tmp/mfull"
    grep -Eq "NaN|step 1[1-9]" "$tmp/err" && fail "... but it trained on: $(head -c 300 "$tmp/err")" || pass "... at once, not at the end"
    [ -c "$tmp/mfull/metrics.jsonl" ] && pass "... and the node is still a character device" || fail "metrics.jsonl node replaced: $(ls -l "$tmp/mfull")"
else
    echo "  skip  metrics.jsonl as a device node: mknod needs root"
fi
"$GF" train $R --out "$tmp/mfifo" --stop-at 10 >/dev/null 2>&1
rm -f "$tmp/mfifo/metrics.jsonl" && mkfifo "$tmp/mfifo/metrics.jsonl"
want="metrics.jsonl is a FIFO"; expect 1 "a FIFO as metrics.jsonl is refused at once (no wait for a reader)" timeout 20 "$GF" train --resume "$tmp/mfifo"
[ -p "$tmp/mfifo/metrics.jsonl" ] && pass "... and the FIFO is still there" || fail "metrics.jsonl FIFO replaced"
rm -f "$tmp/mfifo/.grassflow.lock" && mkfifo "$tmp/mfifo/.grassflow.lock"
want=".grassflow.lock is a FIFO"; expect 1 "a FIFO as the run lock is refused at once" timeout 20 "$GF" train --resume "$tmp/mfifo"
rm -f "$tmp/mfifo/.grassflow.lock" "$tmp/mfifo/metrics.jsonl" && mkfifo "$tmp/mfifo/best.safetensors.tmp.x"
rm -f "$tmp/mfifo/best.safetensors" && mkfifo "$tmp/mfifo/best.safetensors"
want="best.safetensors is a FIFO"; expect 1 "a FIFO as a checkpoint is refused, never replaced by the rename" timeout 60 "$GF" train --resume "$tmp/mfifo" --stop-at 20
[ -p "$tmp/mfifo/best.safetensors" ] && pass "... and the FIFO is still there" || fail "best.safetensors FIFO replaced"

echo "trust: one run per folder"
"$GF" train $R --out "$tmp/nolock" --steps 4 >/dev/null 2>&1
[ -d "$tmp/nolock" ] && [ ! -e "$tmp/nolock/.grassflow.lock" ] && pass "a finished run leaves no .grassflow.lock behind" || fail "lock file left: $(ls -a "$tmp/nolock")"
LONG="--model grassmann-tiny --corpus tinyshakespeare --steps 100000 --batch 4 --seq-len 16 --eval-every 20 --seed 3"
"$GF" train $LONG --out "$tmp/busy" >/dev/null 2>&1 &
holder=$!
for _ in $(seq 200); do [ -s "$tmp/busy/.grassflow.lock" ] && [ -e "$tmp/busy/state.safetensors" ] && break; sleep 0.1; done
want="in use by another grassflow run \(PID $holder\)"
expect 1 "a second run on a busy folder is refused, naming the holder's PID" "$GF" train $R --out "$tmp/busy"
want="in use by another grassflow run \(PID $holder\)"
expect 1 "... and so is a resume of it" "$GF" train --resume "$tmp/busy"
kill -9 $holder 2>/dev/null; wait $holder 2>/dev/null
"$GF" train $R --out "$tmp/killed" --stop-at 10 >/dev/null 2>&1
"$GF" train --resume "$tmp/killed" --stop-at 20 >/dev/null 2>&1 &
victim=$!
for _ in $(seq 100); do grep -q "^$victim$" "$tmp/killed/.grassflow.lock" 2>/dev/null && break; sleep 0.05; done
kill -9 $victim 2>/dev/null; wait $victim 2>/dev/null
rc=$?
[ $rc = 137 ] && pass "a resume SIGKILLed while it holds the folder's lock" || fail "the SIGKILL did not land: the resume exited $rc"
sleep 30 &
live=$!
touch "$tmp/killed/last.safetensors.tmp.999999" "$tmp/killed/best.safetensors.tmp.$live"
want=; expect 0 "a SIGKILLed run's folder resumes without cleanup (its lock died with it)" "$GF" train --resume "$tmp/killed"
[ ! -e "$tmp/killed/last.safetensors.tmp.999999" ] && pass "... a dead writer's temporary file is removed" || fail "a dead writer's tmp file stayed"
[ -e "$tmp/killed/best.safetensors.tmp.$live" ] && pass "... a live writer's temporary file stays" || fail "a live writer's tmp file was removed"
kill $live 2>/dev/null
echo "trust: a resume notices changed inputs"
mkdir -p "$tmp/cd"
xz -dc data/tinyshakespeare/input.txt.xz | head -c 40000 >"$tmp/cd/train.txt"
xz -dc data/tinyshakespeare/input.txt.xz | tail -c 6000 >"$tmp/cd/valid.txt"; cp "$tmp/cd/valid.txt" "$tmp/cd/test.txt"
CD="--model grassmann-tiny --corpus $tmp/cd --tokenizer char --steps 20 --batch 4 --seq-len 16 --eval-every 10 --seed 3 --no-cache"
"$GF" train $CD --out "$tmp/cdrun" --stop-at 5 >/dev/null 2>&1
want="--stop-at 3: the run in $tmp/cdrun is at step 5 already"; expect 1 "--resume --stop-at before the saved step is refused" "$GF" train --resume "$tmp/cdrun" --stop-at 3
sed -i '1s/First/Frist/' "$tmp/cd/train.txt"
want="the data changed since this run was saved: the training split had [0-9]+ examples, now [0-9]+ examples of other content"
expect 1 "a training text edited after the stop: the resume is refused, naming the split" "$GF" train --resume "$tmp/cdrun"
head -c 3000 "$tmp/cd/valid.txt" >"$tmp/cd/v" && mv "$tmp/cd/v" "$tmp/cd/valid.txt"
want="the validation split had [0-9]+ examples, now [0-9]+ examples"; expect 1 "... and a validation text cut short" "$GF" train --resume "$tmp/cdrun"
want="going on as asked: the run no longer continues bit for bit"; expect 0 "--accept-changed-data goes on, and says what that means" "$GF" train --resume "$tmp/cdrun" --accept-changed-data
want="--accept-changed-data goes with --resume"; expect 2 "--accept-changed-data without --resume" "$GF" train $CD --out "$tmp/cdx" --accept-changed-data

echo "trust: a run folder is never overwritten by accident"
"$GF" train $R --out "$tmp/stopped" --stop-at 10 >/dev/null 2>&1
sum() { (cd "$1" && cat state.safetensors last.safetensors best.safetensors metrics.jsonl | md5sum); }
before=$(sum "$tmp/stopped")
want="--out $tmp/stopped holds a run \(state.safetensors, last.safetensors, best.safetensors, metrics.jsonl; metrics.jsonl logged up to step 10\)"
expect 1 "train without --resume on a stopped run's folder is refused, saying what is there" "$GF" train $R --out "$tmp/stopped"
grep -q "HINT: continue it with: grassflow train --resume $tmp/stopped; .* pass --force" "$tmp/err" && pass "... and how to go on" || fail "no HINT: $(cat "$tmp/err")"
[ "$(sum "$tmp/stopped")" = "$before" ] && pass "... and the run is untouched (state, checkpoints, metrics)" || fail "the stopped run was changed"
"$GF" train --resume "$tmp/stopped" >/dev/null 2>&1
want="holds a run"; expect 1 "... and so is a finished run's folder" "$GF" train $R --out "$tmp/stopped" --steps 5
mkdir -p "$tmp/cmpo" && cp -r "$tmp/stopped" "$tmp/cmpo/transformer-tiny"
want="--out $tmp/cmpo/transformer-tiny holds a run"; expect 1 "compare refuses when the second model's folder holds a run, before the first trains" "$GF" compare --models grassmann-tiny,transformer-tiny --corpus tinyshakespeare --steps 5 --batch 4 --seq-len 16 --eval-every 5 --out "$tmp/cmpo"
[ ! -e "$tmp/cmpo/grassmann-tiny" ] && pass "... (no folder made for the first model)" || fail "compare trained the first model before refusing"
want=; expect 0 "--force starts again in a folder that holds a run" "$GF" train $R --out "$tmp/stopped" --steps 5 --eval-every 5 --force
$PY -c "
import json, struct, sys
b = open(sys.argv[1] + '/state.safetensors', 'rb').read(); h = json.loads(b[8:8 + struct.unpack('<Q', b[:8])[0]])
steps = [json.loads(l).get('step') for l in open(sys.argv[1] + '/metrics.jsonl')]
sys.exit(h['__metadata__']['step'] != '5' or max(steps) != 5)" "$tmp/stopped" && pass "... its state and metrics are the new run's alone" || fail "--force: $(cat "$tmp/stopped/metrics.jsonl")"
want="--resume DIR continues the saved run"; expect 2 "--force does not go with --resume" "$GF" train --resume "$tmp/stopped" --force
want="--models grassmann-tiny,grassmann-tiny: lists grassmann-tiny twice; give each once"; expect 2 "compare refuses a model listed twice" "$GF" compare --models grassmann-tiny,grassmann-tiny --corpus tinyshakespeare --out "$tmp/cmp"
want="would train into the same folder"; expect 2 "... also through a / in a name" "$GF" compare --models cfg/a.json,cfg_a.json --corpus tinyshakespeare --out "$tmp/cmp"
many=$(for i in $(seq 17); do printf "grassmann-tiny%d," $i; done)
want="more than 16 models"; expect 2 "compare refuses more models than it can hold instead of dropping some" "$GF" compare --models "${many%,}" --corpus tinyshakespeare --out "$tmp/cmp"

echo "trust: long paths are used whole or refused, never cut short"
deep="$tmp/long"; for i in $(seq 12); do deep="$deep/$(printf 'd%.0s' $(seq 80))"; done; mkdir -p "$deep"
want=; expect 0 "a run folder ${#deep} bytes deep trains and resumes" "$GF" train $R --out "$deep/run" --stop-at 10
[ -f "$deep/run/state.safetensors" ] && pass "... its checkpoints are in that folder, not in a shortened one" || fail "no state in the deep run folder: $(ls "$deep/run" 2>&1 | head -3)"
want=; expect 0 "... and its resume finds it there" "$GF" train --resume "$deep/run"
huge=$(printf 'x%.0s' $(seq 4100))
want="--out is 4100 bytes long"; expect 2 "an --out longer than a path can be is refused, naming the flag" "$GF" train $R --out "$huge"
want="--corpus is 4100 bytes long"; expect 2 "... and so is such a --corpus" "$GF" train $R --corpus "$huge" --out "$tmp/x"
want="--resume is 4100 bytes long"; expect 2 "... and such a --resume" "$GF" train --resume "$huge"
want="File name too long"; expect 1 "score with a --ckpt path too long to open says so (the message keeps its reason)" "$GF" score --ckpt "$huge" --tokens "$tmp/x"
want="File name too long"; expect 1 "... eval" "$GF" eval --ckpt "$huge" --corpus tinyshakespeare
want="File name too long"; expect 1 "... generate" "$GF" generate --ckpt "$huge"
want="File name too long"; expect 1 "... init --out" "$GF" init --model grassmann-tiny --out "$huge"
want="--out is 4100 bytes long"; expect 2 "... compare --out" "$GF" compare --models grassmann-tiny,transformer-tiny --corpus tinyshakespeare --seq-len 16 --out "$huge"
want="not a built-in corpus"; expect 1 "... data stats --corpus" "$GF" data stats --corpus "$huge"
longc="$deep"; for i in $(seq 15); do longc="$longc/$(printf 'c%.0s' $(seq 250))"; done
want="token cache not used: the path .* more than"; GRASSFLOW_CACHE="$longc" expect 0 "a cache folder too long to name a file in runs without the cache, and says so" "$GF" data stats --corpus tinyshakespeare

echo "trust: a run never writes what cannot be read back"
for k in $(seq 100); do printf 'a b\nc \0d e\nf g\n'; done >"$tmp/nul.txt"
for t in word char; do
    want="the text holds a NUL byte .* --tokenizer byte \(building the vocabulary of $tmp/nul.txt\)"; expect 1 "a NUL byte in a word is refused before training ($t tokenizer)" "$GF" train $R --corpus "$tmp/nul.txt" --tokenizer $t --out "$tmp/nul-$t" --no-cache
done
[ ! -e "$tmp/nul-word" ] && [ ! -e "$tmp/nul-char" ] && pass "... and no run folder is left" || fail "NUL corpus left a run folder"
mkdir -p "$tmp/bigtok" && printf 'a b\n' >"$tmp/bigtok/valid.txt" && printf 'a c\n' >"$tmp/bigtok/test.txt"
$PY -c "import sys; sys.stdout.buffer.write(b'\x01' * (17 << 20) + b'\n' + b'a b c\n' * 200)" >"$tmp/bigtok/train.txt"
want="\"tokenizer\" is [0-9]+ of them\), more than the [0-9]+ a safetensors header may hold"; expect 1 "a tokenizer too large for a checkpoint header is refused before training" "$GF" train $R --corpus "$tmp/bigtok" --tokenizer word --out "$tmp/bigrun" --no-cache
[ ! -e "$tmp/bigrun" ] && pass "... and no run folder is left" || fail "the oversized tokenizer left $tmp/bigrun"
rm -rf "$tmp/bigtok"

echo "trust: a name with control bytes is shown escaped on stderr, never raw (gf_escape_name)"
# a run folder, a corpus and a config named with an escape sequence (ESC [31m: red) and a newline: printed
# raw, they coloured the terminal and started a line of their own ("ZQ..." below, which could forge one)
esc=$(printf 'r\033[31m\nZQ')
shown='r\\x1b\[31m\\nZQ'
raw_free() { # FILE...: no ESC byte, no line that starts with the name's second line
    ! grep -q $'\033' "$@" && ! grep -q '^ZQ' "$@"
}
want=; expect 0 "a run folder named with ESC [31m and a newline trains" "$GF" train $R --steps 2 --eval-every 1 --out "$tmp/$esc"
raw_free "$tmp/err" "$tmp/out" && grep -Eq "checkpoints .*$shown/" "$tmp/out" \
    && pass "... its name is shown escaped (\\x1b[31m\\n), never raw, on stdout and stderr" || fail "raw name: $(cat -A "$tmp/out" "$tmp/err" | head -c 600)"
want="$shown holds a run"; expect 1 "... a new run there is refused, naming the folder escaped" "$GF" train $R --steps 2 --out "$tmp/$esc"
raw_free "$tmp/err" && pass "... with no raw ESC or newline" || fail "raw name in the refusal: $(cat -A "$tmp/err" | head -c 600)"
want="--corpus .*$shown\.txt: not a built-in corpus"; expect 1 "a missing --corpus so named is named escaped" "$GF" train $R --corpus "$tmp/$esc.txt" --out "$tmp/x"
raw_free "$tmp/err" && pass "... with no raw ESC or newline" || fail "raw corpus name: $(cat -A "$tmp/err" | head -c 600)"
want="cannot open config file .*$shown\.json"; expect 1 "a missing --config so named is named escaped" "$GF" train --config "$tmp/$esc.json" --corpus tinyshakespeare --out "$tmp/x"
raw_free "$tmp/err" && pass "... with no raw ESC or newline" || fail "raw config name: $(cat -A "$tmp/err" | head -c 600)"
printf '{"base": ' >"$tmp/$esc.json"
want="$shown\.json: not valid JSON"; expect 1 "a config so named that is not JSON is named escaped" "$GF" train --config "$tmp/$esc.json" --corpus tinyshakespeare --out "$tmp/x"
want="cannot open .*$shown\.safetensors"; expect 1 "a missing --ckpt so named (generate) is named escaped" "$GF" generate --ckpt "$tmp/$esc.safetensors"
raw_free "$tmp/err" && pass "... with no raw ESC or newline" || fail "raw checkpoint name: $(cat -A "$tmp/err" | head -c 600)"
# the library's file errors too: a checkpoint so named that is too short, and a corpus so named cut mid-xz
printf 'abc' >"$tmp/$esc.safetensors"
want="$shown\.safetensors: 3 bytes is too short"; expect 1 "a truncated checkpoint so named (safetensors.c) is named escaped" "$GF" info --ckpt "$tmp/$esc.safetensors"
raw_free "$tmp/err" && pass "... with no raw ESC or newline" || fail "raw name in safetensors.c's error: $(cat -A "$tmp/err" | head -c 600)"
printf 'the king\n' | xz | head -c 20 >"$tmp/$esc.txt.xz"
want="$shown\.txt\.xz: (truncated|corrupt)"; expect 1 "a truncated .xz corpus so named (lines.c) is named escaped" "$GF" data stats --corpus "$tmp/$esc.txt.xz" --no-cache
raw_free "$tmp/err" && pass "... with no raw ESC or newline" || fail "raw name in lines.c's error: $(cat -A "$tmp/err" | head -c 600)"

echo "trust: a path that is not UTF-8 is refused before anything is written (checkpoint headers are JSON: UTF-8)"
bad=$(printf 'run-\377\033x')
for flag in --out --corpus --tokenizer --config --init-from --resume; do
    args=($R --out "$tmp/ok-$flag")
    case $flag in
        --out) args=($R --out "$tmp/$bad");;
        --corpus) args=($R --corpus "$tmp/$bad.txt" --out "$tmp/ok-$flag");;
        --tokenizer) args=($R --tokenizer "wordpiece:$tmp/$bad.txt" --out "$tmp/ok-$flag");;
        --config) args=(--config "$tmp/$bad.json" --corpus tinyshakespeare --out "$tmp/ok-$flag");;
        --init-from) args=(--init-from "$tmp/$bad.safetensors" --corpus tinyshakespeare --out "$tmp/ok-$flag");;
        --resume) args=(--resume "$tmp/$bad");;
    esac
    want="^grassflow train: $flag .*run-\\\\xff\\\\x1bx.*: byte [0-9]+ \(0xff\) is not UTF-8; .*JSON holds UTF-8"
    expect 2 "train $flag with a byte 0xff in the path: a usage error naming the flag and the path escaped" "$GF" train "${args[@]}"
    grep -q "HINT: rename it" "$tmp/err" && pass "... and says to rename it" || fail "no HINT: $(head -c 300 "$tmp/err")"
done
[ -z "$(ls -d "$tmp"/run-* "$tmp"/ok-* 2>/dev/null)" ] && pass "... and none of them wrote a folder or a file" || fail "written: $(ls -d "$tmp"/run-* "$tmp"/ok-* | cat -A)"
want="compare: --out .*: byte [0-9]+ \(0xff\) is not UTF-8"; expect 2 "compare --out with a byte 0xff is refused" "$GF" compare --models grassmann-tiny,transformer-tiny --corpus tinyshakespeare --seq-len 16 --steps 2 --out "$tmp/$bad"
[ ! -e "$tmp/$bad" ] && pass "... before it made the folder" || fail "compare made $tmp/$bad"

if [ $fails -ne 0 ]; then echo "trust: $fails FAILED"; exit 1; fi
echo "trust: all passed"
