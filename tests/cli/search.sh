#!/usr/bin/env bash
# grassflow search (issue 55): a spec's grids and lists expanded into points, each a compare with its seeds;
# the budget in tokens; halving (the best 1/eta of each search go on, the choice kept in halving.json); the
# results in results.jsonl, summary.md, summary.tsv and the plots; a rerun that reads everything back; --jobs 2
# (the numbers of one at a time, a log a point, signals to every running point); a search
# stopped by SIGINT in a point and run again, ending with the numbers of a search never stopped; SIGTERM and
# SIGINT sent to the search's pid alone; bad specs; the specs in configs/search plan.
#   bash tests/cli/search.sh [BUILD]
set -uo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/../.."
GF="$BUILD/grassflow"
PY=/usr/bin/python3
tmp=$(mktemp -d /tmp/grassflow-search-XXXXXX)
export GRASSFLOW_CACHE="$tmp/cache"
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
$PY -c "
import random; random.seed(2); w = 'the game of cafe a story ends begins and then'.split()
open('$tmp/small.txt', 'w').write(''.join(' '.join(random.choice(w) for _ in range(random.randint(2, 10))) + '\n' for _ in range(300)))"
R="\"corpus\": \"$tmp/small.txt\", \"recipe\": {\"tokenizer\": \"word\", \"batch\": 4, \"seq-len\": 16, \"eval-every\": 3, \"warmup\": 2, \"no-cache\": true}"
cat >"$tmp/spec.json" <<EOF
{$R, "tokens": 640, "seeds": [1, 2],
 "searches": [{"model": "grassmann-tiny", "grid": {"lr": [1e-3, 3e-3], "set rank": [4, 8]}},
              {"model": "transformer-tiny", "grid": {"lr": [1e-3, 3e-3]}, "list": [{"set mixers": "x,x", "set form": "sigmoid"}, {}]}],
 "halving": {"eta": 2, "first": 0.5}}
EOF

echo "search: the plan"
expect 0 "search --plan" "$GF" search "$tmp/spec.json" --out "$tmp/s" --plan
[ "$(grep -c '^grassflow compare' "$tmp/out")" = 8 ] && pass "8 points: a grid of 2 x 2, and a grid of 2 under a list of 2" \
    || fail "plan: $(cat "$tmp/out")"
grep -q -- "--models transformer-tiny --seeds 1,2 --out $tmp/s/02-transformer-tiny/lr=0.003,mixers=x,x,form=sigmoid .*--lr 0.003 --set mixers=x,x --set form=sigmoid --steps 10$" "$tmp/out" \
    && pass "... each a compare with its options; 640 tokens of 4 x 16 are 10 steps" || fail "plan: $(cat "$tmp/out")"
[ ! -e "$tmp/s" ] && pass "... and --plan creates nothing" || fail "--plan made $tmp/s"
for spec in configs/search/*.json; do  # the specs grassflow ships (docs/search.md) stay valid
    expect 0 "shipped spec $spec plans" "$GF" search "$spec" --out "$tmp/shipped" --plan
    grep -q '^grassflow compare' "$tmp/out" || fail "$spec: no point in its plan: $(head -3 "$tmp/out")"
done

echo "search: a run with halving"
expect 0 "search" "$GF" search "$tmp/spec.json" --out "$tmp/s"
PYCODE='
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1] + "/results.jsonl")]
assert len(rows) == 16, len(rows)
for s in (1, 2):
    st = {}
    for r in rows:
        if r["search"] == s: st.setdefault(r["folder"], (r["status"], r["steps"]))
    done = [f for f, v in st.items() if v == ("done", 10)]
    drop = [f for f, v in st.items() if v == ("dropped at the first rung", 5)]
    assert len(done) == 2 and len(drop) == 2, st
    first = json.load(open(sys.argv[1] + "/halving.json"))
    score = {f: first[f.split(sys.argv[1] + "/")[1]] for f in st}
    assert max(score[f] for f in done) <= min(score[f] for f in drop), score
print("ok")'
py() { $PY - "$@" 2>"$tmp/pyerr" <<<"$PYCODE"; }
[ "$(py "$tmp/s")" = ok ] && pass "results.jsonl: a row per run; in each search the 2 best of 4 at the first rung (5 steps) went on to 10" \
    || fail "results: $(cat "$tmp/pyerr")"
grep -q '^| lr=0.003, set mixers=x,x, set form=sigmoid | 2 |' "$tmp/s/summary.md" && grep -q '^## Search 2: transformer-tiny' "$tmp/s/summary.md" \
    && pass "summary.md: a table per search, a row per point" || fail "summary.md: $(cat "$tmp/s/summary.md")"
cmp -s "$tmp/out" "$tmp/s/summary.md" && pass "... printed at the end" || fail "stdout is not summary.md"
[ "$(wc -l <"$tmp/s/summary.tsv")" = 9 ] && pass "summary.tsv: a header and 8 points" || fail "summary.tsv: $(cat "$tmp/s/summary.tsv")"
for f in by-lr.svg by-rank.svg best-curves.svg points.svg; do
    grep -q '</svg>' "$tmp/s/$f" && pass "$f drawn" || fail "no $f"
done
bars=$(grep -c $'\tseed [12]\t' "$tmp/s/points.tsv")
[ "$bars" -gt 0 ] && [ "$bars" = "$(grep -c '"val": [0-9]' "$tmp/s/results.jsonl")" ] \
    && pass "points.tsv: a bar for each run that has a validation score" || fail "points.tsv: $(cat "$tmp/s/points.tsv")"
grep -q 'stopped at the first rung' "$tmp/s/by-lr.svg" && pass "... the points halving stopped drawn as a series of their own" \
    || fail "by-lr.svg does not mark the dropped points"
cp "$tmp/s/results.jsonl" "$tmp/results-1"
cp "$tmp/s/halving.json" "$tmp/halving-1"
expect 0 "search again" "$GF" search "$tmp/spec.json" --out "$tmp/s" --json
cmp -s "$tmp/s/results.jsonl" "$tmp/results-1" && cmp -s "$tmp/out" "$tmp/results-1" \
    && pass "a rerun reads every point back (the same results; --json prints them)" || fail "a rerun changed the results"
! grep -q '== search: point' "$tmp/err" && pass "... and runs no point again" || fail "a rerun ran: $(grep '== search' "$tmp/err" | head -3)"
rm "$tmp/s/halving.json"
expect 0 "search again, halving.json lost" "$GF" search "$tmp/spec.json" --out "$tmp/s" --json
cmp -s "$tmp/s/results.jsonl" "$tmp/results-1" && ! grep -q '== search: point' "$tmp/err" \
    && pass "... the points at the first rung take their summary's score, those gone on stay kept: the same choice" \
    || fail "without halving.json: $(grep '== search' "$tmp/err" | head -3)"

echo "search: --jobs 2 (two points at once)"
# (--threads 2: a point each; the toy points are too small for a second thread, so any thread count gives
# the bits of the search above)
expect 0 "search --jobs 2" "$GF" --threads 2 search "$tmp/spec.json" --out "$tmp/j" --jobs 2
PYCODE='
import json, sys
def rows(d): return sorted((r["folder"].split(d + "/")[1], r["seed"], r["val"], r["test"], r["steps"], r["status"])
                           for r in map(json.loads, open(d + "/results.jsonl")))
a, b = rows(sys.argv[1]), rows(sys.argv[2])
assert a == b and len(a) == 16, (a, b)
assert json.load(open(sys.argv[3])) == json.load(open(sys.argv[2] + "/halving.json"))
print("ok")'
[ "$(py "$tmp/s" "$tmp/j" "$tmp/halving-1")" = ok ] && pass "... the numbers, steps, statuses and halving choice of one at a time" \
    || fail "--jobs 2 differs: $(cat "$tmp/pyerr")"
[ "$(ls "$tmp"/j/0[12]-*/*.log | wc -l)" = 8 ] && grep -q "its output: $tmp/j/01-grassmann-tiny/lr=0.001,rank=4.log): .* --threads 1$" "$tmp/err" \
    && grep -q '^train step\|"val"\|step ' "$tmp/j/01-grassmann-tiny/lr=0.001,rank=4.log" \
    && pass "... each point's output in DIR/NN-MODEL/POINT.log, named when it starts" || fail "--jobs 2 logs: $(ls "$tmp"/j/0[12]-*)"
want="--jobs expects"; expect 2 "--jobs 0" "$GF" search "$tmp/spec.json" --out "$tmp/bad" --jobs 0
want="--jobs expects"; expect 2 "--jobs 65" "$GF" search "$tmp/spec.json" --out "$tmp/bad" --jobs 65

echo "search: stopped by SIGINT and run again"
cat >"$tmp/long.json" <<EOF
{$R, "steps": 150, "seeds": [3], "searches": [{"model": "grassmann-tiny", "grid": {"lr": [1e-3, 2e-3]}}]}
EOF
expect 0 "the search never stopped" "$GF" search "$tmp/long.json" --out "$tmp/a"
GRASSFLOW_FAULT_SIGINT_AT=60 "$GF" search "$tmp/long.json" --out "$tmp/b" >"$tmp/b.out" 2>"$tmp/b.err"
rc=$?
[ "$rc" = 130 ] && grep -q "resume with: grassflow search $tmp/long.json --out $tmp/b" "$tmp/b.err" \
    && pass "SIGINT in the first point (at its step 60): exit 130 and the command that resumes" || fail "SIGINT: rc $rc; $(tail -3 "$tmp/b.err")"
stopped_at "$tmp/b/01-grassmann-tiny/lr=0.001/grassmann-tiny/seed-3" 60
expect 0 "the stopped search run again" "$GF" search "$tmp/long.json" --out "$tmp/b"
PYCODE='
import json, sys
a = [(r["folder"].split("/")[-1], r["val"], r["test"], r["steps"]) for r in map(json.loads, open(sys.argv[1]))]
b = [(r["folder"].split("/")[-1], r["val"], r["test"], r["steps"]) for r in map(json.loads, open(sys.argv[2]))]
assert a == b and len(a) == 2, (a, b)
print("ok")'
[ "$(py "$tmp/a/results.jsonl" "$tmp/b/results.jsonl")" = ok ] && pass "... ends with the numbers of the search never stopped" \
    || fail "resumed search differs: $(cat "$tmp/pyerr")"

GRASSFLOW_FAULT_SIGINT_AT=60 "$GF" search "$tmp/long.json" --out "$tmp/bj" --jobs 2 >/dev/null 2>"$tmp/bj.err"
rc=$?
[ "$rc" = 130 ] && grep -q "resume with: grassflow search $tmp/long.json --out $tmp/bj --jobs 2$" "$tmp/bj.err" \
    && pass "--jobs 2, SIGINT in both points (at their step 60): exit 130 and the command that resumes, --jobs kept" \
    || fail "--jobs 2 SIGINT: rc $rc; $(tail -3 "$tmp/bj.err")"
# (the first to reach its step 60 stops; the search then stops the other, wherever it is, its state saved)
steps=$(for lr in 0.001 0.002; do $PY -c 'import sys, json, struct
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]
print(json.loads(b[8:8 + n])["__metadata__"]["step"])' "$tmp/bj/01-grassmann-tiny/lr=$lr/grassmann-tiny/seed-3/state.safetensors" 2>&1; done | sort -n | tr '\n' ' ')
[[ "$steps" =~ ^[1-9][0-9]*\ 60\ $ ]] && pass "... both points saved their state: one at step 60, the other stopped beside it (steps $steps)" \
    || fail "--jobs 2 SIGINT: the states are at steps '$steps'"
expect 0 "... run again" "$GF" search "$tmp/long.json" --out "$tmp/bj" --jobs 2
[ "$(py "$tmp/a/results.jsonl" "$tmp/bj/results.jsonl")" = ok ] && pass "... ends with the numbers of the search never stopped" \
    || fail "resumed --jobs 2 search differs: $(cat "$tmp/pyerr")"

echo "search: SIGTERM or SIGINT sent to the search alone (kill PID) stops its point, the state saved"
cat >"$tmp/forever.json" <<EOF
{$R, "steps": 1000000, "seeds": [3], "searches": [{"model": "grassmann-tiny", "grid": {"lr": [1e-3, 2e-3]}}]}
EOF
signal_search() { # signal, exit code wanted[, group: the signal to the search's whole process group]
    local d="$tmp/sig-$1${3:-}" pid rc i p
    # (a background job of a script starts with SIGINT ignored: the search must catch it all the same)
    # point-first: every chunk of a checkpoint written 0.2 s late, so that the point is still saving when the
    # search's copy comes
    local slow=GRASSFLOW_FAULT_STEP_DELAY_MS=0
    [[ "${3:-}" = *-first || "${3:-}" = search-then-user ]] && slow=GRASSFLOW_FAULT_WRITE_DELAY_US=200000
    env "$slow" setsid "$GF" search "$tmp/forever.json" --out "$d" >/dev/null 2>"$d.err" &
    pid=$!
    for i in $(seq 600); do [ -n "$(find "$d" -name metrics.jsonl -size +0 2>/dev/null)" ] && break; sleep 0.1; done
    case "${3:-}" in
    group) kill -"$1" -- "-$pid" ;;
    # the race of a group's signal made slow: the point gets it, handles it, then gets the search's copy
    point-first) kill -"$1" "$(pgrep -f "compare .*--out $d/" | head -1)"; sleep 0.3; kill -"$1" "$pid" ;;
    # the other order (the sender held up between the two): the search's copy first, the point's own late
    search-first) p=$(pgrep -f "compare .*--out $d/" | head -1); kill -"$1" "$pid"; sleep 0.03
        kill -"$1" "$p" || fail "search-first: the point ($p) was gone before its own copy" ;;
    # the search stopped alone (kill PID), then the user's own signal to the point well after: a second signal
    search-then-user) p=$(pgrep -f "compare .*--out $d/" | head -1); kill -"$1" "$pid"; sleep 0.5
        kill -"$1" "$p" || fail "search-then-user: the point ($p) was gone before the user's signal" ;;
    *) kill -"$1" "$pid" ;;
    esac
    for i in $(seq 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        fail "SIG$1 to the search's pid: still running 60 s later (the signal not passed on to its point)"
        pkill -KILL -f "$d" 2>/dev/null
        return
    fi
    wait "$pid"
    rc=$?
    local again=0 counted=one # (search-then-user: two signals, the second acknowledged)
    grep -q "received again" "$d.err" && again=1
    [ "${3:-}" = search-then-user ] && again=$((1 - again)) counted=two
    [ "$rc" = "$2" ] && grep -q "resume with: grassflow search $tmp/forever.json --out $d" "$d.err" && [ "$again" = 0 ] \
        && pass "SIG$1 to the search's ${3:-pid}: exit $2 and the command that resumes; the point counted $counted signal(s)" \
        || fail "SIG$1 ${3:-}: rc $rc; $(tail -3 "$d.err")"
    [ -n "$(find "$d" -name state.safetensors)" ] && ! pgrep -f "$d" >/dev/null \
        && pass "... its point saved its state, and no child is left running" || fail "SIG$1: no state saved, or a child left"
    pkill -KILL -f "$d" 2>/dev/null
}
signal_search TERM 143
# jobs_signal DIR WHAT: a search of two endless points with --jobs 2 into DIR; once both train, WHAT (a command;
# $pid is the search's) runs; then rc is the search's exit code, or "running" if it still ran 60 s later, and left
# is 1 if a process of the search was left running (0: none)
jobs_signal() {
    local d=$1 pid i
    setsid "$GF" search "$tmp/forever.json" --out "$d" --jobs 2 >/dev/null 2>"$d.err" &
    pid=$!
    for i in $(seq 600); do [ "$(find "$d" -name metrics.jsonl -size +0 2>/dev/null | wc -l)" = 2 ] && break; sleep 0.1; done
    eval "$2"
    for i in $(seq 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then rc=running; else wait "$pid"; rc=$?; fi
    left=0
    pgrep -f "$d" >/dev/null && left=1
    pkill -KILL -f "$d" 2>/dev/null
}
# --jobs 2: a signal to the search's pid reaches both running points, and each saves its state
d="$tmp/sig-jobs"
jobs_signal "$d" 'kill -TERM $pid'
[ "$rc" = 143 ] && [ "$(find "$d" -name state.safetensors | wc -l)" = 2 ] && [ "$left" = 0 ] \
    && pass "--jobs 2, SIGTERM to the search's pid: exit 143, both points saved their state, no child left" \
    || fail "--jobs 2 SIGTERM: rc $rc (running: a point not stopped), $(find "$d" -name state.safetensors | wc -l) states; $(tail -3 "$d.err")"
# --jobs 2: a point killed outright (SIGKILL: the OOM killer) fails the search, which stops the other point
d="$tmp/kill-jobs"
jobs_signal "$d" 'kill -KILL "$(pgrep -f "compare .*--out $d/01-grassmann-tiny/lr=0.001 " | head -1)"'
[ "$rc" = 1 ] && grep -q "point 1 of 2 .* was killed by signal 9" "$d.err" && [ "$left" = 0 ] \
    && [ -n "$(find "$d/01-grassmann-tiny/lr=0.002" -name state.safetensors)" ] \
    && pass "--jobs 2, a point killed by SIGKILL: exit 1, named; the other point stopped with its state saved" \
    || fail "--jobs 2 SIGKILL: rc $rc (running: the other point not stopped); $(tail -3 "$d.err")"
# --jobs 2: a point that cannot start (its log's path is a folder) stops the one started before it
d="$tmp/nostart-jobs"
mkdir -p "$d/01-grassmann-tiny/lr=0.002.log"
want="cannot start point 2's compare .*lr=0.002.log"
expect 1 "--jobs 2, a point that cannot start" timeout 120 "$GF" search "$tmp/forever.json" --out "$d" --jobs 2
! pgrep -f "$d" >/dev/null && pass "... the point started before it stopped, no child left" || fail "--jobs 2: a child left running"
pkill -KILL -f "$d" 2>/dev/null
signal_search INT 130
signal_search TERM 143 group # (kill %1, GNU timeout, systemd: the point gets it directly and from the search)
signal_search TERM 143 point-first
signal_search TERM 143 search-first
signal_search TERM 143 search-then-user
# Ctrl-C at a terminal reaches the point's process group itself: the search must not pass it on as a second
# signal (two more and the point would abort without saving)
PYCODE='
import os, pty, signal, sys, time
pid, fd = pty.fork()
if pid == 0:
    signal.signal(signal.SIGINT, signal.SIG_DFL) # (this test itself may have started with SIGINT ignored)
    os.execv(sys.argv[1], [sys.argv[1], "search", sys.argv[2], "--out", sys.argv[3]])
out, t0, sent = b"", time.time(), False
while True:
    try:
        chunk = os.read(fd, 65536)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
    if not sent and b"step " in out and time.time() - t0 > 1:
        os.write(fd, b"\x03")
        sent = True
rc = os.waitpid(pid, 0)[1]
text = out.decode(errors="replace")
print("rc=%d again=%d resume=%d" % (os.waitstatus_to_exitcode(rc), "received again" in text, "resume with: grassflow search" in text))'
got=$(timeout 120 $PY - "$GF" "$tmp/forever.json" "$tmp/sig-tty" 2>"$tmp/pyerr" <<<"$PYCODE")
[ "$got" = "rc=130 again=0 resume=1" ] && pass "Ctrl-C at a terminal: exit 130, the point stopped by that one signal (not passed on again)" \
    || fail "Ctrl-C at a terminal: $got $(cat "$tmp/pyerr")"
pkill -KILL -f "$tmp/sig-tty" 2>/dev/null

echo "search: an epoch budget"
cat >"$tmp/epoch.json" <<EOF
{$R, "epochs": 1, "seeds": [1], "searches": [{"model": "grassmann-tiny"}]}
EOF
expect 0 "a search of one epoch" "$GF" search "$tmp/epoch.json" --out "$tmp/e"
grep -q '^| (the model as it is) | 1 | .* | 1 epoch | [0-9]* | done |$' "$tmp/e/summary.md" \
    && pass "summary.md gives the budget as 1 epoch (the recipe's steps are 0)" || fail "epoch budget: $(grep '^| (the model' "$tmp/e/summary.md")"

echo "search: bad specs (exit 1, nothing made) and a bad command line (exit 2)"
want="give one spec file"; expect 2 "no spec" "$GF" search --out "$tmp/bad"
want="unknown option"; expect 2 "an unknown option" "$GF" search "$tmp/spec.json" --steps 3
bad() { # what, spec text, message wanted
    printf '%s' "$2" >"$tmp/bad.json"
    want="$3"; expect 1 "$1" "$GF" search "$tmp/bad.json" --out "$tmp/bad"
}
bad "no corpus" '{"steps": 5, "searches": [{"model": "grassmann-tiny"}]}' '"corpus".*is missing'
bad "two budgets" "{$R, \"steps\": 5, \"tokens\": 9, \"searches\": [{\"model\": \"grassmann-tiny\"}]}" 'the budget is one of'
bad "a key the search sets" "{$R, \"steps\": 5, \"searches\": [{\"model\": \"grassmann-tiny\", \"grid\": {\"steps\": [1, 2]}}]}" '"steps" is not an option a point may set'
bad "halving with epochs" "{$R, \"epochs\": 1, \"halving\": {\"eta\": 2, \"first\": 0.5}, \"searches\": [{\"model\": \"grassmann-tiny\"}]}" 'needs a budget in tokens or steps'
bad "tokens without seq-len" "{\"corpus\": \"x\", \"tokens\": 100, \"searches\": [{\"model\": \"grassmann-tiny\"}]}" 'needs "batch" and "seq-len"'
bad "a point twice" "{$R, \"steps\": 5, \"searches\": [{\"model\": \"grassmann-tiny\", \"list\": [{\"lr\": 0.001}, {\"lr\": 0.001}]}]}" 'set the same options'
bad "an empty grid list" "{$R, \"steps\": 5, \"searches\": [{\"model\": \"grassmann-tiny\", \"grid\": {\"lr\": []}}]}" 'each with a list of one or more values'
bad "not JSON" '{"corpus": ' 'not a JSON object'
[ ! -e "$tmp/bad" ] && pass "... none of them creates anything" || fail "a refused spec made $tmp/bad"
printf '%s' "{$R, \"steps\": 2, \"searches\": [{\"model\": \"grassmann-tiny\", \"grid\": {\"no-such-flag\": [1]}}]}" >"$tmp/bad.json"
want="point 1 of 1 .* failed \\(exit 2\\)"; expect 1 "a flag compare does not know: its point fails, named" "$GF" search "$tmp/bad.json" --out "$tmp/bad"
printf '%s' "{$R, \"steps\": 1000000, \"searches\": [{\"model\": \"grassmann-tiny\", \"list\": [{\"no-such-flag\": 1}, {}]}]}" >"$tmp/bad.json"
want="point 1 of 2 .* failed \\(exit 2\\).*running beside it stop"
expect 1 "--jobs 2: a point fails beside a running one" timeout 120 "$GF" search "$tmp/bad.json" --out "$tmp/bad3" --jobs 2
grep -q "== the end of .*no-such-flag=1.log:" "$tmp/err" && grep -q "unknown option" "$tmp/err" && ! pgrep -f "$tmp/bad3" >/dev/null \
    && pass "... the end of its log shown, the other point stopped (no child left)" || fail "--jobs 2 failure: $(tail -5 "$tmp/err")"
want="cannot open .*nope.json"; expect 1 "a spec that is missing" "$GF" search "$tmp/nope.json" --out "$tmp/bad2"
[ $fails = 0 ] && echo "search: all passed" || { echo "search: $fails FAILED"; exit 1; }
