#!/usr/bin/env bash
# make test-bench: the benchmark machinery, in seconds (benchmarks are not timed tests: nothing here checks a
# speed). bench mixer's memory budget and one length, bench train on a classifier (a bidirectional mixer's
# training figure) and on an encoder-decoder (both sides), torch_bench's twin of a config the reference cannot build, and bench/run.sh --smoke on
# the per-mixer parts with a list of one registered mixer, one that is not registered and one whose option
# this build refuses: the skip lines, one point of the length sweep against PyTorch, one streaming point, the
# report's tables and plots.
#   bash tests/studies/bench.sh [BUILD]
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
GF=$B/grassflow
PY=/usr/bin/python3
tmp=$(mktemp -d /tmp/grassflow-test-bench-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
check() { # python expression over j (the JSON in file $1)
    $PY -c 'import json,sys; j=json.load(open(sys.argv[1])); assert eval(sys.argv[2]), sys.argv[2]' "$1" "$2" || fail "$3"
}

# bench mixer: one length measured, the next over the budget (skipped, saying so), in text and JSON
"$GF" bench mixer --mixer grassmann --seq-lens 16,100000 --reps 1 --max-bytes 50000000 --json >"$tmp/m.json"
check "$tmp/m.json" 'j["results"][0]["us_per_token"] > 0 and j["results"][0]["bytes_per_token"] > 0' "bench mixer: L=16 measured"
check "$tmp/m.json" 'j["results"][1]["skipped"] == "memory" and j["results"][1]["estimated_bytes"] > 50000000' \
    "bench mixer: L=100000 skipped over the memory budget"
check "$tmp/m.json" 'j["max_len"] >= 100000' "bench mixer: max_len raised to the longest length"
"$GF" bench mixer --mixer attention --seq-lens 100000 --max-bytes 50000000 | grep -q "L=100000 skipped: needs an estimated .* GiB, over the budget --max-bytes" \
    || fail "bench mixer: the text line of a skipped length"
# --mixer in its place among --set: a bidirectional model's layer (the classifier head makes it so)
"$GF" bench mixer --set head.kind=classify --mixer attention --set n_head=8 --seq-lens 8 --reps 1 | grep -q "^attention L=8 " \
    || fail "bench mixer: --mixer after --set head.kind=classify"
if "$GF" bench mixer --mixer nosuch 2>"$tmp/err"; then fail "bench mixer --mixer nosuch succeeded"; fi
grep -q "not a mixer" "$tmp/err" || fail "bench mixer: unknown mixer message"
# comma lists: no empty item, nothing twice
if "$GF" bench mixer --seq-lens 8,,16 2>"$tmp/err"; then fail "bench mixer --seq-lens 8,,16 succeeded"; fi
grep -q -- "--seq-lens 8,,16: item 2 is empty" "$tmp/err" || fail "bench mixer --seq-lens 8,,16: $(cat "$tmp/err")"
if "$GF" bench mixer --seq-lens 8,8 2>"$tmp/err"; then fail "bench mixer --seq-lens 8,8 succeeded"; fi
grep -q -- "--seq-lens 8,8: lists 8 twice" "$tmp/err" || fail "bench mixer --seq-lens 8,8: $(cat "$tmp/err")"
if "$GF" bench generate --model grassmann-tiny --positions 4,8, 2>"$tmp/err"; then fail "bench generate --positions 4,8, succeeded"; fi
grep -q -- "--positions 4,8,: item 3 is empty" "$tmp/err" || fail "bench generate --positions 4,8,: $(cat "$tmp/err")"

# a report's core count is the machine's: `nproc` alone counts OMP_NUM_THREADS (a one-thread run said "1 cores")
if grep -n '$(nproc) cores\|"cores\\": $(nproc)' bench/*.sh scripts/*.sh; then fail "a report counts cores with nproc, not nproc --all"; fi

# bench train of a classifier: one label per sequence
"$GF" bench train --model grassmann-tiny --vocab 65 --set head.kind=classify --batch 2 --seq-len 8 --steps 1 --json >"$tmp/t.json"
check "$tmp/t.json" 'j["head"] == "classify" and j["tokens_per_s"] > 0 and 0 < j["loss"] < 5' "bench train of a classifier"

# bench train of an encoder-decoder: a random source as long as the target, on both sides (without one the
# forward refuses the batch)
"$GF" bench train --model gru-g2p --vocab 42 --set attention=bahdanau --batch 2 --seq-len 4 \
    --steps 1 --json >"$tmp/s.json"
check "$tmp/s.json" 'j["tokens_per_s"] > 0 and 0 < j["loss"] < 10' "bench train of an encoder-decoder"
"$GF" info --model gru-g2p --vocab 42 --set attention=bahdanau --json >"$tmp/s.cfg.json"
$PY bench/torch_bench.py train --config "$tmp/s.cfg.json" --batch 2 --seq-len 4 --steps 1 --threads 1 >"$tmp/sp.json"
check "$tmp/sp.json" 'j["tokens_per_s"] > 0 and "GRUAttnMixer" in j["twin_classes"]' "torch_bench: an encoder-decoder's twin"

# the PyTorch twin of a config its reference cannot build: a clear skip, not a crash
"$GF" info --model grassmann-tiny --vocab 65 --json >"$tmp/c.json"
$PY -c 'import json,sys; d=json.load(open(sys.argv[1])); d["config"]["layers"][0]["mixer"]="nosuch"; json.dump(d, open(sys.argv[1], "w"))' "$tmp/c.json"
$PY bench/torch_bench.py train --config "$tmp/c.json" --batch 1 --seq-len 4 --steps 1 >"$tmp/p.json"
check "$tmp/p.json" '"no PyTorch twin" in j["skipped"] and "nosuch" in j["skipped"]' "torch_bench: skip of an unknown mixer"

# the per-mixer parts of the benchmark, end to end
cat >"$tmp/list.conf" <<'LIST'
# label | mixers | flags | --set   (attention flagged linear on purpose: its growing state must be marked not met; a quote ' in a comment is fine)
attention  | attention | linear     | mixers=attention
lstm       | lstm      | new linear | mixers=lstm
refused    | grassmann | new        | mixers=grassmann plucker_eps=-1
failing    | grassmann | new bidir  | head.kind=classify mixers=grassmann
LIST
# the command, except that the training of the list's fourth line (failing, bidirectional: config mt-1)
# fails: the run goes on
cat >"$tmp/gf" <<WRAP
#!/usr/bin/env bash
case "\$*" in *"bench train --config "*/mt-1.cfg.json*) echo "grassflow: injected failure" >&2; exit 3 ;; esac
exec "$(realpath "$GF")" "\$@"
WRAP
chmod +x "$tmp/gf"
GRASSFLOW=$tmp/gf bash bench/run.sh --smoke --only-mixers --mixers "$tmp/list.conf" --out "$tmp/out" >/dev/null 2>"$tmp/run.err" \
    || { cat "$tmp/run.err" >&2; fail "bench/run.sh --smoke --only-mixers"; }
grep -q "^skip lstm: not registered: mixer lstm is not in this build" "$tmp/run.err" || fail "run.sh: the skip line of an unregistered mixer"
grep -q "^skip refused: not registered: this build refuses its options: --set plucker_eps=-1" "$tmp/run.err" \
    || fail "run.sh: the skip line of a refused option"
grep -q "^== plan: 2 mixers of .*; about " "$tmp/run.err" || fail "run.sh: the plan"
R=$tmp/out/README.md
grep -q "| lstm | | | skipped: not registered: mixer lstm" "$R" || fail "report: the skipped mixer in the list table"
grep -qE "^\| attention \| [0-9]+ \| [0-9]+ \| [0-9.]+x \| LeanSelfAttention \|" "$R" || fail "report: training row with its twin"
grep -qE "^\| attention \| 64 \| [0-9.]+ \| [0-9]+ \| [0-9.]+ \| [0-9.]+x \|$" "$R" || fail "report: one sweep point against PyTorch"
grep -qE "^\| attention \| 65536 \| skipped: needs ~[0-9.]+ GiB > budget [0-9.]+ GiB \| — \| skipped: needs" "$R" \
    || fail "report: the length over the memory budget, both sides"
grep -qE "^\| attention \| [0-9.]+x \(L 128 over 64\) \| (met|\*\*not met\*\*) \|$" "$R" || fail "report: the flat-in-L target marked"
grep -qE "^\| attention \| 1000 \| [0-9.]+ \| [0-9]+ \| [0-9.]+ [KM]B \|" "$R" || fail "report: one streaming point"
grep -qE "^\| attention \| flat from position 10 to 1000 \| .* \| \*\*not met\*\* \|$" "$R" \
    || fail "report: the state target of a linear-flagged mixer whose state grows is not met"
for f in mixer.svg stream-state.svg stream-speed.svg; do grep -q "<svg" "$tmp/out/$f" || fail "report: $f"; done
grep -q "^| mtrain failing | grassflow | failed (exit 3): grassflow: injected failure |$" "$R" || fail "report: a failed measurement"
grep -qE "^\| failing \| 64 \| [0-9.]+ \| [0-9]+ \| [0-9.]+ \| [0-9.]+x \|$" "$R" \
    || fail "run.sh: the run went on after a failed measurement (a bidirectional layer swept on both sides)"
grep -q "^| failing | | | | skipped: bidirectional only: it does not stream | |$" "$R" || fail "report: a bidir mixer is not streamed"
grep -q "^| stream " "$R" && fail "report: a stream skip shows as a mixer of the list"
grep -q "| total | " "$R" || fail "report: the time the run took beside its plan"
# --plan and --only (issue 48): the plan alone, nothing run or written; one mixer of the list into --out; the
# tracked docs/bench/ written by the full default run alone
bench_files() { find docs/bench -type f -printf '%p %s %T@\n' | sort | cksum; } # every file, its size and time
before=$(bench_files)
GRASSFLOW=$tmp/gf bash bench/run.sh --plan --mixers "$tmp/list.conf" >/dev/null 2>"$tmp/plan.err" || fail "bench/run.sh --plan: $(cat "$tmp/plan.err")"
grep -q "^== plan: 2 mixers of .*; about " "$tmp/plan.err" && grep -q "^== mixers: attention failing$" "$tmp/plan.err" \
    && grep -q "(--plan: nothing run, nothing written)" "$tmp/plan.err" || fail "run.sh --plan: $(cat "$tmp/plan.err")"
grep -Eq "^== (train |generate |perf |mixer [^ ]+, L|stream [^ ]+, pos)" "$tmp/plan.err" && fail "run.sh --plan measured something: $(grep '^== ' "$tmp/plan.err")"
GRASSFLOW=$tmp/gf bash bench/run.sh --smoke --only attention --mixers "$tmp/list.conf" --out "$tmp/one" >/dev/null 2>"$tmp/one.err" \
    || fail "bench/run.sh --smoke --only attention: $(tail -5 "$tmp/one.err")"
$PY -c 'import json,sys
cases = [json.loads(l)["case"] for l in open(sys.argv[1])]
assert "mtrain attention" in cases and "mixer attention" in cases and "stream attention" in cases, cases
assert not [c for c in cases if "failing" in c or c.startswith("train ") or c.startswith("lowp")], cases' "$tmp/one/results.jsonl" \
    || fail "run.sh --only attention: other cases ran: $(cut -c1-60 "$tmp/one/results.jsonl")"
if bash bench/run.sh --only nosuch --plan 2>"$tmp/err"; then fail "run.sh --only nosuch succeeded"; fi
grep -q "^bench/run.sh: --only nosuch: not a part (models, lowp, mtrain, sweep, stream) nor a mixer label" "$tmp/err" || fail "run.sh --only nosuch: $(cat "$tmp/err")"
if bash bench/run.sh --only-mixers --out docs/bench 2>"$tmp/err"; then fail "run.sh --only-mixers --out docs/bench succeeded"; fi
grep -q "only the full default run writes" "$tmp/err" || fail "run.sh --out docs/bench for a partial run: $(cat "$tmp/err")"
[ "$(bench_files)" = "$before" ] || fail "run.sh --plan, --only or a refused run changed docs/bench/"
# the README's table (bench/report.py --readme): written between the markers from the results, the rest of
# the file kept; grassflow's alternated fp32/bf16 rounds judged by their medians; a file without markers
# left alone with a message
cat >"$tmp/lowp.jsonl" <<'RES'
{"case": "machine", "impl": "", "date": "2026-01-01T00:00Z", "cpu": "Test CPU", "cores": 2, "blas": "blas: x", "omp_num_threads": "2"}
{"case": "train word grassmann B=32", "impl": "grassflow", "tokens_per_s": 2000, "gflops": 1, "sgemm_peak_gflops": 200, "utilisation": 0.8, "threads": 2}
{"case": "train word grassmann B=32", "impl": "pytorch", "tokens_per_s": 1000}
{"case": "lowp word grassmann B=32 fp32 1", "impl": "grassflow", "tokens_per_s": 1000}
{"case": "lowp word grassmann B=32 bf16 1", "impl": "grassflow", "tokens_per_s": 1500}
{"case": "lowp word grassmann B=32 fp32 2", "impl": "grassflow", "tokens_per_s": 1100}
{"case": "lowp word grassmann B=32 bf16 2", "impl": "grassflow", "tokens_per_s": 1900}
{"case": "lowp word grassmann B=32 fp32 3", "impl": "grassflow", "tokens_per_s": 1200}
{"case": "lowp word grassmann B=32 bf16 3", "impl": "grassflow", "tokens_per_s": 1800}
{"case": "train word grassmann B=32 bf16", "impl": "pytorch", "tokens_per_s": 900}
RES
printf 'top\n<!-- bench:begin -->\nold figures\n<!-- bench:end -->\nbottom\n' >"$tmp/readme.md"
mkdir -p "$tmp/lowp"
GRASSFLOW=$GF $PY bench/report.py "$tmp/lowp.jsonl" "$tmp/lowp" "$tmp/list.conf" --readme "$tmp/readme.md" || fail "report.py --readme"
grep -q "^| word grassmann B=32 | 1100 | 1800 | 1.64x | 1000 | 900 | 2.00x |" "$tmp/lowp/README.md" \
    || fail "report: the bf16 row is the median of the alternated rounds (1800 / 1100)"
grep -q "^bf16 training, word grassmann B=32: vs grassflow fp32 | >= 1.6x | 1.64x | met |" <(sed 's/^| //' "$tmp/lowp/README.md") \
    || fail "report: the bf16 target judged on the medians"
head -1 "$tmp/readme.md" | grep -qx top && tail -1 "$tmp/readme.md" | grep -qx bottom || fail "report --readme: the rest of the file kept"
grep -q "old figures" "$tmp/readme.md" && fail "report --readme: the old table is still there"
grep -q "^Its run of 2026-01-01 00:00 UTC (Test CPU, 2 cores; .*sgemm peak 200 GFLOP/s on 2 threads" "$tmp/readme.md" \
    || fail "report --readme: the run's machine line"
grep -q "^| bf16, words, B=32: .* | 1,800 / - | 900 / - | 2.00x / - |" "$tmp/readme.md" || fail "report --readme: the bf16 row"
grep -q "^| \`grassmann-6L\`, words, B=8 / 32 | - / 2,000 | - / 1,000 | - / 2.00x |" "$tmp/readme.md" || fail "report --readme: a training row"
printf 'no markers\n' >"$tmp/plain.md"
GRASSFLOW=$GF $PY bench/report.py "$tmp/lowp.jsonl" "$tmp/lowp" "$tmp/list.conf" --readme "$tmp/plain.md" 2>"$tmp/err"
grep -qx "no markers" "$tmp/plain.md" && grep -q "has no <!-- bench:begin --> ... <!-- bench:end --> markers" "$tmp/err" \
    || fail "report --readme: a file without markers is left alone, with a message"
echo "bench: all passed"
