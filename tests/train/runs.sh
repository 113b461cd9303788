#!/usr/bin/env bash
# Runs continue and branch (issue 26, item 2): a run extended with --resume --steps/--epochs (equal to the
# longer run from the start where the schedule allows it, else following gf_train_lr's documented rule),
# --init-from a checkpoint, --save-every, early stopping (--patience), and the warning for a warmup
# longer than the run. Tiny models, a few steps each.
set -uo pipefail
BUILD=${1:-build}
GF="$BUILD/grassflow"
PY=/usr/bin/python3
export GRASSFLOW_DATA=$PWD/data
tmp=$(mktemp -d /tmp/grassflow-runs-XXXXXX)
export GRASSFLOW_CACHE="$tmp/cache"
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh

# same_tensors A B WHAT: every tensor of the two safetensors files is the same, byte for byte
same_tensors() {
    if $PY - "$1" "$2" <<'PYEOF'
import sys
sys.path.insert(0, "tests/parity/torch_ref")
import st_io
a, _ = st_io.read(sys.argv[1]); b, _ = st_io.read(sys.argv[2])
bad = [k for k in a if k not in b or a[k].tobytes() != b[k].tobytes()] + [k for k in b if k not in a]
if bad: print("    differ: %s" % bad[:4])
sys.exit(1 if bad else 0)
PYEOF
    then pass "$3"; else fail "$3"; fi
}
# metric FILE STEP KEY: KEY of the row of step STEP that has it (metrics.jsonl)
metric() {
    $PY -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("step") == int(sys.argv[2]) and sys.argv[3] in r: print(repr(r[sys.argv[3]])); break' "$@"
}
# recipe FILE KEY: KEY of the training recipe stored in a checkpoint or state
recipe() {
    $PY - "$@" <<'PYEOF'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
r = json.loads(json.loads(b[8:8 + n])["__metadata__"]["train"])
print(json.dumps(r.get(sys.argv[2])))
PYEOF
}
# same_losses A B FROM TO: the logged training losses of steps FROM..TO are the same strings in both
same_losses() {
    $PY -c '
import json, sys
def losses(p):
    return {r["step"]: r["loss"] for r in map(json.loads, open(p)) if "loss" in r and int(sys.argv[3]) <= r["step"] <= int(sys.argv[4])}
a, b = losses(sys.argv[1]), losses(sys.argv[2])
sys.exit(0 if a and a == b and len(a) == int(sys.argv[4]) - int(sys.argv[3]) + 1 else 1)' "$@"
}

H="--model hybrid-tiny --set norm=post --corpus tinyshakespeare --batch 4 --seq-len 16 --accum 2 --dropout 0.1 --eval-every 4 --log-every 1"

echo "runs: an extended run equals the longer run from the start where the schedule allows it"
# constant rate after the warmup (--min-lr = --lr): the schedule does not depend on the total
C="$H --warmup 3 --lr 1e-3 --min-lr 1e-3"
"$GF" train $C --steps 12 --out "$tmp/c12" >/dev/null 2>&1
"$GF" train $C --steps 24 --out "$tmp/c24" >/dev/null 2>&1
expect 0 "a finished 12-step run extended to 24 steps" "$GF" train --resume "$tmp/c12" --steps 24
grep -q "steps 24" "$tmp/out" && pass "the summary says 24 steps" || fail "summary: $(cat "$tmp/out")"
same_tensors "$tmp/c12/last.safetensors" "$tmp/c24/last.safetensors" "constant rate: extended weights = the 24-step run's, bit for bit"
same_tensors "$tmp/c12/state.safetensors" "$tmp/c24/state.safetensors" "constant rate: extended AdamW moments = the 24-step run's"
same_losses "$tmp/c12/metrics.jsonl" "$tmp/c24/metrics.jsonl" 1 24 && pass "constant rate: the losses of steps 1-24 are the same" || fail "constant rate: losses differ"
# within the warmup (30 steps): the extension's schedule is the 24-step run's from the start
W="$H --warmup 30 --lr 1e-3"
"$GF" train $W --steps 12 --out "$tmp/w12" >/dev/null 2>&1
"$GF" train $W --steps 24 --out "$tmp/w24" >/dev/null 2>&1
want="within its warmup of 30 steps"; expect 0 "a run extended within its warmup" "$GF" train --resume "$tmp/w12" --steps 24
same_tensors "$tmp/w12/state.safetensors" "$tmp/w24/state.safetensors" "within the warmup: extended weights and moments = the 24-step run's"
same_losses "$tmp/w12/metrics.jsonl" "$tmp/w24/metrics.jsonl" 1 24 && pass "within the warmup: the losses of steps 1-24 are the same" || fail "within the warmup: losses differ"
# --epochs: an epoch of a tiny corpus in 2 steps of 8 examples
mkdir -p "$tmp/tiny"
$PY -c 'import sys; sys.stdout.write("".join("line %d of a tiny corpus, with some words.\n" % i for i in range(60)))' >"$tmp/tiny/train.txt"
head -c 600 "$tmp/tiny/train.txt" >"$tmp/tiny/valid.txt"; cp "$tmp/tiny/valid.txt" "$tmp/tiny/test.txt"
E="--model grassmann-tiny --corpus $tmp/tiny --seq-len 16 --batch 8 --eval-every 0 --warmup 0 --lr 1e-3 --min-lr 1e-3"
"$GF" train $E --epochs 2 --out "$tmp/e2" >/dev/null 2>&1
"$GF" train $E --epochs 5 --out "$tmp/e5" >/dev/null 2>&1
expect 0 "a 2-epoch run extended to 5 epochs" "$GF" train --resume "$tmp/e2" --epochs 5
same_tensors "$tmp/e2/state.safetensors" "$tmp/e5/state.safetensors" "--epochs: the extended run = the 5-epoch run, bit for bit"

echo "runs: where it cannot hold, the rate goes on from where it stood (gf_train_lr)"
D="$H --warmup 3 --lr 1e-3 --min-lr 1e-4"
"$GF" train $D --steps 20 --stop-at 8 --out "$tmp/d" >/dev/null 2>&1
cp -r "$tmp/d" "$tmp/d2"
want="goes from 20 to 30 steps at step 8"; expect 0 "a run stopped at step 8 of 20 extended to 30" "$GF" train --resume "$tmp/d" --steps 30
# the documented rule: decay_from 8, decay_from_lr = the 20-step schedule's rate at step 8; step s (1-based in
# metrics.jsonl) runs at min + (L0 - min) (1 + cos(pi (s - 1 - 8) / (30 - 8))) / 2
if $PY - "$tmp/d" <<PYEOF
import json, math, struct, subprocess, sys
import numpy as np
f32 = lambda x: float(np.float32(x))
lr, mn, W, T0, S, T1 = f32(1e-3), f32(1e-4), 3, 20, 8, 30
L0 = mn + 0.5 * (lr - mn) * (1 + math.cos(math.pi * (S - W) / (T0 - W)))
rows = {r["step"]: r for r in map(json.loads, open(sys.argv[1] + "/metrics.jsonl")) if "lr" in r}
b = open(sys.argv[1] + "/state.safetensors", "rb").read(); n = struct.unpack("<Q", b[:8])[0]
rec = json.loads(json.loads(b[8:8 + n])["__metadata__"]["train"])
ok = rec["decay_from"] == S and rec["decay_from_lr"] == L0 and rec["steps"] == T1
for s in range(S + 1, T1 + 1):
    want = f32(mn + 0.5 * (L0 - mn) * (1 + math.cos(math.pi * (s - 1 - S) / (T1 - S))))
    ok = ok and abs(rows[s]["lr"] - want) <= 1e-5 * want
print("    L0 %.9g (recipe %r); step 9 lr %g, step 30 lr %g" % (L0, rec.get("decay_from_lr"), rows[9]["lr"], rows[30]["lr"]))
sys.exit(0 if ok else 1)
PYEOF
then pass "the recipe records decay_from 8 and the rate there; every extended step's rate is the formula's"; else fail "the extended schedule is not the documented one"; fi
# a later plain --resume follows the recorded schedule: extension stopped at 15, resumed without --steps
expect 0 "the extension stopped at step 15" "$GF" train --resume "$tmp/d2" --steps 30 --stop-at 15
expect 0 "... resumed plainly to the end" "$GF" train --resume "$tmp/d2"
same_tensors "$tmp/d/state.safetensors" "$tmp/d2/state.safetensors" "an interrupted extension resumed plainly = the uninterrupted extension, bit for bit"
# a finished run goes on at --min-lr
"$GF" train $D --steps 10 --out "$tmp/f" >/dev/null 2>&1
"$GF" train --resume "$tmp/f" --steps 13 >/dev/null 2>&1
l=$(for s in 11 12 13; do metric "$tmp/f/metrics.jsonl" $s lr; done | sort -u)
[ "$l" = "0.0001" ] && pass "a finished run extended goes on at --min-lr 1e-4" || fail "extended finished run's rates: $l"
want="has taken 8 steps already; a total of 5 steps would end before them"
"$GF" train $D --steps 20 --stop-at 8 --out "$tmp/d3" >/dev/null 2>&1
expect 1 "a total below the steps taken is refused, naming both" "$GF" train --resume "$tmp/d3" --steps 5
want="give one"; expect 2 "--steps and --epochs together are refused" "$GF" train --resume "$tmp/d3" --steps 30 --epochs 3
want="give only --resume"; expect 2 "--resume with --lr is still refused" "$GF" train --resume "$tmp/d3" --steps 30 --lr 1
mkdir -p "$tmp/old" && cp tests/fixtures/v1/run-step3/* "$tmp/old/"
old_total=$(recipe "$tmp/old/state.safetensors" steps)
expect 0 "a grassflow 0.1 run extended" "$GF" train --resume "$tmp/old" --steps $((old_total + 3))
[ "$(recipe "$tmp/old/last.safetensors" steps)" = $((old_total + 3)) ] && grep -q "steps $((old_total + 3))" "$tmp/out" \
    && pass "... to $((old_total + 3)) steps" || fail "0.1 run extension: $(cat "$tmp/out")"

echo "runs: --init-from a checkpoint"
"$GF" train $C --steps 6 --out "$tmp/base" >/dev/null 2>&1
I="--corpus tinyshakespeare --batch 4 --seq-len 16 --eval-every 4 --log-every 1 --warmup 2 --lr 1e-3"
expect 0 "a new run from a checkpoint's weights" "$GF" train --init-from "$tmp/base/last.safetensors" $I --steps 4 --out "$tmp/ft"
cp -r "$tmp/base" "$tmp/base2"
want="--force starts the run in $tmp/base2 over: --out $tmp/base2/last.safetensors is $tmp/base2/./last.safetensors, which this command reads"
expect 1 "--force on the folder that holds the --init-from checkpoint is refused" "$GF" train --init-from "$tmp/base2/./last.safetensors" $I --steps 4 --out "$tmp/base2" --force
cmp -s "$tmp/base/last.safetensors" "$tmp/base2/last.safetensors" && pass "... and the checkpoint is intact" || fail "--force replaced the --init-from checkpoint"
e=$("$GF" eval --ckpt "$tmp/base/last.safetensors" --corpus tinyshakespeare --seq-len 16 --batch 4 --json 2>/dev/null)
v=$(metric "$tmp/ft/metrics.jsonl" 0 val_loss)
$PY -c 'import json,sys; sys.exit(not abs(json.loads(sys.argv[1])["loss"] - float(sys.argv[2])) <= 1e-6)' "$e" "$v" \
    && pass "step 0's validation loss ($v) is the checkpoint's (eval: $e)" || fail "step 0 val_loss $v vs eval $e"
# the step-0 checkpoint: a NaN at step 1 stops the run, leaving the checkpoints of step 0's evaluation
GRASSFLOW_FAULT_NONFINITE=1 "$GF" train --init-from "$tmp/base/last.safetensors" $I --steps 4 --out "$tmp/ft0" >/dev/null 2>&1
[ "$(recipe "$tmp/ft0/last.safetensors" steps)" = 4 ] && $PY -c 'import sys,json,struct; b=open(sys.argv[1],"rb").read(); n=struct.unpack("<Q",b[:8])[0]; sys.exit(json.loads(b[8:8+n])["__metadata__"]["step"] != "0")' "$tmp/ft0/last.safetensors" \
    && pass "the run saved its step 0" || fail "no step-0 checkpoint in $tmp/ft0"
same_tensors "$tmp/base/last.safetensors" "$tmp/ft0/last.safetensors" "the weights at step 0 are the checkpoint's, bit for bit"
if $PY - "$tmp/ft/state.safetensors" "$tmp/base/last.safetensors" <<'PYEOF'
import json, os, struct, sys
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]
rec = json.loads(json.loads(b[8:8 + n])["__metadata__"]["train"])["init_from"]
h = 0xcbf29ce484222325
for c in open(sys.argv[2], "rb").read(): h = ((h ^ c) * 0x100000001b3) & (2**64 - 1)
print("    init_from: %s" % rec)
sys.exit(0 if rec == {"path": sys.argv[2], "bytes": os.path.getsize(sys.argv[2]), "fnv1a64": "%016x" % h} else 1)
PYEOF
then pass "the recipe records init_from: path, size and FNV-1a 64"; else fail "init_from record"; fi
[ "$(recipe "$tmp/ft/state.safetensors" warmup)" = 2 ] && [ "$(recipe "$tmp/ft/state.safetensors" steps)" = 4 ] \
    && pass "the new run has its own schedule" || fail "init-from recipe"
want="--init-from $tmp/base/metrics.jsonl|$tmp/base/metrics.jsonl"; expect 1 "--init-from a file that is not a checkpoint" "$GF" train --init-from "$tmp/base/metrics.jsonl" $I --steps 2 --out "$tmp/x1"
want="cannot open $tmp/none.safetensors"; expect 1 "--init-from a missing file" "$GF" train --init-from "$tmp/none.safetensors" $I --steps 2 --out "$tmp/x2"
"$GF" init --model grassmann-tiny --out "$tmp/init.safetensors" >/dev/null 2>&1
want="needs another model than the checkpoint's: vocab_size 64 vs 65 \(the checkpoint's vs what the task makes of it\)"
expect 1 "--init-from a checkpoint whose vocabulary does not fit: the key that differs, both values" "$GF" train --init-from "$tmp/init.safetensors" $I --steps 2 --out "$tmp/x3"
grep -q '"format"' "$tmp/err" && fail "... and no whole config: $(head -c 300 "$tmp/err")" || pass "... and no whole config"
want="would change its architecture"; expect 2 "--init-from with --model" "$GF" train --init-from "$tmp/base/last.safetensors" --model grassmann-tiny $I --steps 2 --out "$tmp/x4"
want="would change its architecture"; expect 2 "--init-from with --set" "$GF" train --init-from "$tmp/base/last.safetensors" --set d_model=8 $I --steps 2 --out "$tmp/x5"
want="checkpoint's own tokenizer"; expect 2 "--init-from with --tokenizer" "$GF" train --init-from "$tmp/base/last.safetensors" --tokenizer byte $I --steps 2 --out "$tmp/x6"
[ ! -e "$tmp/x1" ] && [ ! -e "$tmp/x2" ] && [ ! -e "$tmp/x3" ] && [ ! -e "$tmp/x4" ] && [ ! -e "$tmp/x5" ] && [ ! -e "$tmp/x6" ] && pass "refused runs leave no folder" || fail "a refused --init-from left a folder"

echo "runs: --save-every keeps intermediate checkpoints"
expect 0 "a 12-step run keeping every 4th" "$GF" train $D --steps 12 --save-every 4 --out "$tmp/s"
for s in 4 8 12; do f=$(printf "%s/s/step-%06d.safetensors" "$tmp" $s); [ -s "$f" ] || fail "no $f"; done
[ "$(ls "$tmp/s" | grep -c '^step-')" = 3 ] && pass "step-000004, -000008, -000012 and no other" || fail "step files: $(ls "$tmp/s")"
"$GF" train $D --steps 12 --stop-at 8 --out "$tmp/s8" >/dev/null 2>&1
same_tensors "$tmp/s/step-000008.safetensors" "$tmp/s8/last.safetensors" "step-000008 = a run stopped at step 8, bit for bit"
same_tensors "$tmp/s/step-000012.safetensors" "$tmp/s/last.safetensors" "step-000012 = the final last.safetensors"
expect 0 "a kept checkpoint loads with eval" "$GF" eval --ckpt "$tmp/s/step-000004.safetensors" --corpus tinyshakespeare --json
expect 0 "... and info --ckpt describes it" "$GF" info --ckpt "$tmp/s/step-000004.safetensors"
grep -Eq "^training +step 4" "$tmp/out" && pass "... at step 4" || fail "info of step-000004: $(head -5 "$tmp/out")"
meta() { $PY -c 'import sys,json,struct; b=open(sys.argv[1],"rb").read(); n=struct.unpack("<Q",b[:8])[0]; print(json.loads(b[8:8+n])["__metadata__"].get(sys.argv[2]))' "$1" "$2"; }
"$GF" train $D --steps 12 --eval-every 4 --save-every 2 --out "$tmp/sv" >/dev/null 2>&1
"$GF" train $D --steps 12 --eval-every 4 --save-every 2 --out "$tmp/sk" --stop-at 4 >/dev/null 2>&1
stopped_at "$tmp/sk" 4
rm -f "$tmp/sk/step-000002.safetensors" && "$GF" train --resume "$tmp/sk" >/dev/null 2>&1
a=$(meta "$tmp/sv/step-000006.safetensors" val_loss); b=$(meta "$tmp/sk/step-000006.safetensors" val_loss)
[ -n "$a" ] && [ "$a" != None ] && [ "$a" != nan ] && [ "$a" = "$b" ] \
    && pass "a step checkpoint written after a resume records the last evaluation's val_loss ($b), as without the stop" || fail "step-000006 val_loss after a resume: '$b', uninterrupted '$a'"
expect 0 "--force starts the run again" "$GF" train $D --steps 4 --out "$tmp/s" --force
[ "$(ls "$tmp/s" | grep -c '^step-')" = 0 ] && pass "... and removes the old run's step checkpoints" || fail "--force left: $(ls "$tmp/s")"

echo "runs: early stopping"
P="--model grassmann-tiny --corpus tinyshakespeare --batch 4 --seq-len 16 --eval-every 2 --warmup 0 --lr 5 --steps 40"
want="stopped early after step [0-9]+ of 40: no validation loss below the best"
expect 0 "a diverging run with --patience 2 stops early" "$GF" train $P --patience 2 --out "$tmp/p"
st=$($PY -c 'import sys,json,struct; b=open(sys.argv[1],"rb").read(); n=struct.unpack("<Q",b[:8])[0]; m=json.loads(b[8:8+n])["__metadata__"]; print(m["step"], "stopped_early" in m)' "$tmp/p/state.safetensors")
case "$st" in "40 "*|*False) fail "early stop state: $st";; [0-9]*" True") pass "its state records the early stop at step ${st% *}";;
    *) fail "early stop state unreadable: $st";; esac
# the rows of steps and evaluations (a session also opens with a row of its own)
trained() { grep -c '"loss"' "$tmp/p/metrics.jsonl"; }
lines=$(trained)
want="stopped early after step ${st% *} of 40"; expect 0 "a plain resume says the run stopped early" "$GF" train --resume "$tmp/p"
[ "$(trained)" = "$lines" ] && pass "... and does not go on" || fail "a plain resume of an early-stopped run trained on"
S=${st% *}
want="had stopped early after step $S of 40: .*; nothing was trained: the run is finished .*give it a new total above 40"
expect 0 "--steps 40, the total it had: says it had stopped early, that nothing was trained, and what to do" "$GF" train --resume "$tmp/p" --steps 40
want="the run in .*stopped early after step $S of 40 \(.*\); a total of $((S + 1)) steps is within the schedule it ended"
expect 1 "--steps $((S + 1)), above the step it stopped at but not above 40: refused, as the hint (N > 40) says" "$GF" train --resume "$tmp/p" --steps $((S + 1))
grep -q "^HINT: to train on, give a new total above 40: --steps 41 or more" "$tmp/err" && pass "... the total to give" || fail "early-stop hint: $(cat "$tmp/err")"
[ "$(trained)" = "$lines" ] && pass "... and neither trains on" || fail "a refused resume of an early-stopped run trained on"
want="had stopped early"; expect 0 "a new total makes it go on" "$GF" train --resume "$tmp/p" --steps 41
[ "$(trained)" -gt "$lines" ] && pass "... and it trained on" || fail "the extended early-stopped run did not train"
want="--patience 2 counts the evaluations"; expect 2 "--patience without evaluations is refused" "$GF" train $P --patience 2 --eval-every 0 --out "$tmp/x7"
"$GF" train $P --out "$tmp/np" >/dev/null 2>&1
$PY -c 'import sys,json,struct; b=open(sys.argv[1],"rb").read(); n=struct.unpack("<Q",b[:8])[0]; sys.exit(json.loads(b[8:8+n])["__metadata__"]["step"] != "40")' "$tmp/np/last.safetensors" \
    && pass "without --patience the same run goes to its end" || fail "the run without --patience stopped early"

echo "runs: a warmup longer than the run"
want="--warmup 100 is longer than the run's 20 steps: the learning rate will still be rising at the last step \(it reaches 1.2e-04 of --lr 6.0e-04\)"
expect 0 "--warmup 100 on a 20-step run warns" "$GF" train --model grassmann-tiny --corpus tinyshakespeare --batch 4 --seq-len 16 --eval-every 0 --steps 20 --warmup 100 --out "$tmp/wu"
grep -q "pass --warmup 2" "$tmp/err" && pass "... and suggests --warmup 2" || fail "warmup hint: $(cat "$tmp/err")"
expect 0 "--warmup 20 on a 20-step run" "$GF" train --model grassmann-tiny --corpus tinyshakespeare --batch 4 --seq-len 16 --eval-every 0 --steps 20 --warmup 20 --out "$tmp/wu2"
grep -q "warmup" "$tmp/err" && fail "a warmup that fits warns: $(cat "$tmp/err")" || pass "... does not warn"

echo "runs: a short run's default warmup is a tenth of it (issue 48: 100 steps of warmup dominated --steps 50)"
want=; expect 0 "--steps 20 without --warmup" "$GF" train --model grassmann-tiny --corpus tinyshakespeare --batch 4 --seq-len 16 --eval-every 0 --steps 20 --out "$tmp/wu3"
grep -q "warmup" "$tmp/err" && fail "the default warmup warns: $(cat "$tmp/err")" || pass "... does not warn"
[ "$(recipe "$tmp/wu3/state.safetensors" warmup)" = 2 ] && pass "... the recipe records warmup 2 (20 / 10)" \
    || fail "default warmup of a 20-step run: $(recipe "$tmp/wu3/state.safetensors" warmup)"
want=; expect 0 "--steps 1000 without --warmup" "$GF" train --model grassmann-tiny --corpus tinyshakespeare --batch 4 --seq-len 16 --eval-every 0 --steps 1000 --stop-at 1 --out "$tmp/wu4"
[ "$(recipe "$tmp/wu4/state.safetensors" warmup)" = 100 ] && pass "... 1000 steps keep the warmup of 100" \
    || fail "default warmup of a 1000-step run: $(recipe "$tmp/wu4/state.safetensors" warmup)"

if [ $fails -ne 0 ]; then echo "runs: $fails FAILED"; exit 1; fi
echo "runs: all passed"
