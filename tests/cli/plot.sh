#!/usr/bin/env bash
# Curves: what metrics.jsonl logs (a type, the epoch, the counted targets seen, the run's time, carried across
# a resume) and grassflow plot (an SVG that is XML, one polyline per curve, the runs named in the legend; the
# x axes; older files; a classifier's accuracy; the refusals). Tiny runs: a few seconds. Then plot --table: a
# table of each kind drawn, every bad table and option refused with its message, 60 random tables.
set -uo pipefail
BUILD=${1:-build}
GF="$BUILD/grassflow"
GV="$BUILD/tests/grassflow-vectors"
PY=/usr/bin/python3
tmp=$(mktemp -d /tmp/grassflow-plot-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
R=(--model grassmann-tiny --corpus tests/fixtures/v1/corpus.txt --tokenizer char --no-cache --steps 12 --batch 4 --seq-len 16
   --log-every 2 --eval-every 4 --warmup 2)

echo "plot: metrics.jsonl rows, a run stopped and resumed beside one that was not"
expect 0 "a run stopped at step 6" "$GF" train "${R[@]}" --out "$tmp/a" --stop-at 6
expect 0 "... resumed to step 12" "$GF" train --resume "$tmp/a"
expect 0 "the same run, uninterrupted" "$GF" train "${R[@]}" --out "$tmp/u"
$PY - "$tmp/a/metrics.jsonl" "$tmp/u/metrics.jsonl" <<'PYEOF' 2>"$tmp/py.err" && pass "every row has a type; train and eval rows the step, a fractional epoch, tokens seen (64 a step, carried across the resume, as in the run that was not stopped) and a time that goes on across the resume" || fail "metrics rows: $(cat "$tmp/py.err")"
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
u = [json.loads(l) for l in open(sys.argv[2])]
starts = [r for r in a if r["type"] == "start"]
assert [(s["step"], s["resumed"], s["tokens"], s["counted"], s["metric"]) for s in starts] == [(0, False, 0, "tokens", "ppl"), (6, True, 384, "tokens", "ppl")], starts
rows = [r for r in a if r["type"] in ("train", "eval")]
assert [r["step"] for r in rows if r["type"] == "eval"] == [4, 6, 8, 12], rows
assert len([r for r in rows if r["type"] == "train"]) == 6, rows
k = 1 / round(rows[-1]["step"] / rows[-1]["epoch"])                   # epoch = step / steps per epoch
assert all(abs(r["epoch"] - k * r["step"]) < 1e-6 for r in rows) and k < 1, rows
assert all(r["tokens"] == 64 * r["step"] for r in rows), rows
ua = {r["step"]: r["tokens"] for r in u if r["type"] == "train"}
assert len(ua) == 6 and all(ua[r["step"]] == r["tokens"] for r in rows if r["type"] == "train"), ua
t = [r["elapsed_s"] for r in a]
assert all(x <= y for x, y in zip(t, t[1:])) and t[-1] > 0, t          # one clock across both sessions
PYEOF

svg_ok() { # svg_ok FILE POLYLINES NAME...: XML, that many polylines, each name a legend entry and a curve's run
    $PY - "$@" <<'PYEOF'
import sys, xml.dom.minidom
path, n, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
d = xml.dom.minidom.parse(path)
lines = d.getElementsByTagName("polyline")
legend = [g.getElementsByTagName("text")[0].firstChild.data for g in d.getElementsByTagName("g") if g.getAttribute("class") == "legend"]
assert len(lines) == n, (len(lines), n)
assert legend == names, (legend, names)
assert {l.getAttribute("data-run") for l in lines} == set(names), [l.getAttribute("data-run") for l in lines]
assert all(len(l.getAttribute("points").split()) >= 1 for l in lines)
PYEOF
}
texts() { $PY -c "import sys, xml.dom.minidom; print('|'.join(t.firstChild.data for t in xml.dom.minidom.parse(sys.argv[1]).getElementsByTagName('text')))" "$1"; }

echo "plot: the SVG"
expect 0 "plot one run (default --out curves.svg)" bash -c "cd '$tmp' && '$PWD/$GF' plot a"
svg_ok "$tmp/curves.svg" 2 a && pass "curves.svg is XML with a training and a validation curve, the run named in the legend" || fail "one run: $(head -c 300 "$tmp/curves.svg")"
expect 0 "plot two runs against tokens" "$GF" plot "$tmp/a" "$tmp/u/" --x tokens --out "$tmp/two.svg"
svg_ok "$tmp/two.svg" 4 a u && grep -q "^wrote $tmp/two.svg" "$tmp/out" && pass "two runs: 4 curves, both named; it says what it wrote" || fail "two runs: $(cat "$tmp/out")"
widths() { $PY -c "import sys, xml.dom.minidom; print(' '.join(l.getAttribute('data-run') + ':' + l.getAttribute('stroke-width') for l in xml.dom.minidom.parse(sys.argv[1]).getElementsByTagName('polyline')))" "$1"; }
[ "$(widths "$tmp/two.svg")" = "a:4.2 a:4.4 u:1.6 u:1.8" ] && texts "$tmp/two.svg" | grep -q "|a wider line runs under one that follows it closely|" \
    && pass "... a's curves, which u's (the same run, not stopped) lie on, are drawn wider to show under them, and the legend says why" \
    || fail "coinciding curves: $(widths "$tmp/two.svg")"
texts "$tmp/two.svg" | grep -q "|tokens seen|" && pass "... the x axis is tokens seen" || fail "x label: $(texts "$tmp/two.svg")"
expect 0 "plot against time, as perplexity" "$GF" plot "$tmp/a" --x time --metric ppl --out "$tmp/time.svg"
texts "$tmp/time.svg" | grep -q "|time (s)|" && texts "$tmp/time.svg" | grep -q "^perplexity against time" && pass "... time (s) on x, perplexity on y" || fail "time plot: $(texts "$tmp/time.svg")"
[ -z "$(find "$tmp" -name '*.tmp.*')" ] && pass "no temporary files left" || fail "temporary files: $(find "$tmp" -name '*.tmp.*')"

echo "plot: a run killed after its last save and resumed logs those steps again; the curves hold the later rows"
mkdir -p "$tmp/killed" && $PY - "$tmp/killed/metrics.jsonl" <<'PYEOF'
import json, sys
row = lambda t, s, **k: dict(type=t, step=s, epoch=s / 10, tokens=64 * s, elapsed_s=s / 10, **k)
rows = [row("start", 0), row("train", 2, loss=4.0), row("train", 4, loss=3.9), row("eval", 4, val_loss=3.95, val_ppl=52.0),
        row("train", 6, loss=3.8), row("eval", 6, val_loss=3.85, val_ppl=47.0), row("train", 8, loss=3.7),  # killed here
        row("start", 4), row("train", 6, loss=3.6), row("train", 8, loss=3.5), row("eval", 8, val_loss=3.6, val_ppl=36.6)]
open(sys.argv[1], "w").write("".join(json.dumps(r) + "\n" for r in rows))
PYEOF
expect 0 "plot it" "$GF" plot "$tmp/killed" --out "$tmp/killed.svg"
$PY - "$tmp/killed.svg" <<'PYEOF' && pass "... training curve at steps 2, 4, 6, 8 (the resumed 6 and 8), validation at 4 and 8" || fail "killed run's curves: $(grep polyline "$tmp/killed.svg")"
import sys, xml.dom.minidom
n = [len(l.getAttribute("points").split()) for l in xml.dom.minidom.parse(sys.argv[1]).getElementsByTagName("polyline")]
sys.exit(n != [4, 2])
PYEOF

mkdir -p "$tmp/apart" && $PY -c "
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    r.update({k: r[k] - 1 for k in ('loss', 'val_loss') if k in r})
    print(json.dumps(r))" "$tmp/killed/metrics.jsonl" >"$tmp/apart/metrics.jsonl"
expect 0 "plot it beside a run a whole unit of loss below it" "$GF" plot "$tmp/killed" "$tmp/apart" --out "$tmp/apart.svg"
[ "$(widths "$tmp/apart.svg")" = "killed:1.6 killed:1.8 apart:1.6 apart:1.8" ] && ! texts "$tmp/apart.svg" | grep -q "wider line" \
    && pass "... curves apart keep their width, and the legend has no note" || fail "curves apart: $(widths "$tmp/apart.svg") $(texts "$tmp/apart.svg")"

echo "plot: names that break XML (a folder name that is not UTF-8 and holds a control character; a unit with markup)"
odd="$tmp/$(printf 'r\xff\x01<&"')" && mkdir -p "$odd" && $PY -c "
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    r['<b>tok\x01'] = r.pop('tokens')
    if r['type'] == 'start': r['counted'] = '<b>tok\x01'
    print(json.dumps(r))" "$tmp/killed/metrics.jsonl" >"$odd/metrics.jsonl"
expect 0 "plot it against what it counts" "$GF" plot "$odd" --x tokens --out "$tmp/odd.svg"
$PY - "$tmp/odd.svg" <<'PYEOF' 2>"$tmp/py.err" && pass "... the SVG is XML: the name with U+FFFD for the byte and the control, the unit as text" || fail "odd names: $(tail -1 "$tmp/py.err")"
import sys, xml.dom.minidom
d = xml.dom.minidom.parse(sys.argv[1])
texts = [t.firstChild.data for t in d.getElementsByTagName("text") if t.firstChild]
assert "r\ufffd\ufffd<&\"" in texts and "<b>tok\ufffd seen" in texts, texts
assert {l.getAttribute("data-run") for l in d.getElementsByTagName("polyline")} == {"r\ufffd\ufffd<&\""}
PYEOF

echo "plot: extreme finite values (a log or a linear axis of any finite range; a range narrow for its values)"
rows2() { # rows2 DIR A B: a run whose two steps have the losses A and B (B also its validation loss)
    mkdir -p "$1" && $PY -c "
import json, sys
a, b = float(sys.argv[2]), float(sys.argv[3])
r = lambda t, s, **k: json.dumps(dict(type=t, step=s, epoch=s / 10, tokens=64 * s, elapsed_s=s / 10, **k))
print(r('start', 0, counted='tokens', metric='ppl')); print(r('train', 1, loss=a)); print(r('train', 2, loss=b))
print(r('eval', 2, val_loss=b, val_ppl=None))" "$@" >"$1/metrics.jsonl"
}
axes_ok() { # axes_ok SVG: XML; every coordinate a finite number inside the picture; on each axis 2 to 11 tick labels, distinct
    $PY - "$1" <<'PYEOF'
import re, sys, xml.dom.minidom
d = xml.dom.minidom.parse(sys.argv[1])
svg = d.documentElement; W, H = float(svg.getAttribute("width")), float(svg.getAttribute("height"))
for l in d.getElementsByTagName("polyline"):
    for xy in l.getAttribute("points").split():
        x, y = map(float, xy.split(","))
        assert -1 <= x <= W + 1 and -1 <= y <= H + 1, (x, y)
texts = d.getElementsByTagName("text")
xt = [t.firstChild.data for t in texts if t.getAttribute("text-anchor") == "middle" and t.getAttribute("y") and float(t.getAttribute("y")) > 300 and not t.getAttribute("transform")]
yt = [t.firstChild.data for t in texts if t.getAttribute("text-anchor") == "end"]
for ticks in (xt[:-1], yt):  # xt ends with the x label
    assert 2 <= len(ticks) <= 11 and len(set(ticks)) == len(ticks), ticks
    assert all(re.fullmatch(r"[-+0-9.e]+[kMG]?", t) for t in ticks), ticks
print(" ".join(yt))
PYEOF
}
for pair in "1e300 1e-300" "5e-324 1" "1e308 1" "1e200 1" "-1e308 1e308" "-1.7e308 1.7e308" "1e-300 1e-300"; do
    set -- $pair
    rows2 "$tmp/x$1_$2" "$1" "$2"
    expect 0 "losses $1 and $2" "$GF" plot "$tmp/x$1_$2" --out "$tmp/ext.svg"
    labels=$(axes_ok "$tmp/ext.svg" 2>"$tmp/py.err") && { [ "$pair" != "1e-300 1e-300" ] || [[ " $labels " == *" 1.0e-300 "* ]]; } \
        && pass "... every point inside the picture, the ticks labelled apart: $labels" || fail "losses $1 and $2: $(tail -1 "$tmp/py.err") $labels"
done
rows2 "$tmp/narrow" 1 1.000000000000001
expect 0 "losses 1 and 1 + 1e-15" "$GF" plot "$tmp/narrow" --out "$tmp/ext.svg"
labels=$(axes_ok "$tmp/ext.svg" 2>"$tmp/py.err") && texts "$tmp/ext.svg" | grep -q "|loss − 1|" \
    && pass "... ticks as offsets from 1, named in the y label: $labels" || fail "narrow range: $(tail -1 "$tmp/py.err") $(texts "$tmp/ext.svg")"
mkdir -p "$tmp/long" && $PY -c "
import json, math
print(json.dumps(dict(type='start', step=0, epoch=0, tokens=0, elapsed_s=0, counted='tokens', metric='ppl')))
for s in range(1, 100001):
    print(json.dumps(dict(type='train', step=s, epoch=s / 1e4, tokens=64 * s, elapsed_s=s / 100, loss=2 + math.sin(s / 7) + math.exp(-s / 2e4))))" >"$tmp/long/metrics.jsonl"
expect 0 "a run of 100,000 logged steps" "$GF" plot "$tmp/long" --out "$tmp/long.svg"
n=$($PY -c "import sys, xml.dom.minidom; print(len(xml.dom.minidom.parse(sys.argv[1]).getElementsByTagName('polyline')[0].getAttribute('points').split()))" "$tmp/long.svg")
[ "$(stat -c %s "$tmp/long.svg")" -lt 100000 ] && [ "$n" -le 2792 ] && grep -q "note: long: its training curve of 100000 points is drawn with $n" "$tmp/err" \
    && pass "... drawn with $n points (4 a pixel column at most), $(stat -c %s "$tmp/long.svg") bytes, and it says so" || fail "long run: $n points, $(stat -c %s "$tmp/long.svg") bytes, $(cat "$tmp/err")"
mkdir -p "$tmp/strloss" && printf '{"type": "train", "step": 1, "loss": 3.0}\n{"type": "train", "step": 2, "loss": "2.5"}\n' >"$tmp/strloss/metrics.jsonl"
want='strloss/metrics.jsonl, line 2: "loss" is not a number'; expect 1 "a loss written as a string is refused, not skipped" "$GF" plot "$tmp/strloss" --out "$tmp/ext.svg"
mkdir -p "$tmp/nullloss" && printf '{"type": "train", "step": 1, "loss": 3.0}\n{"type": "train", "step": 2, "loss": null}\n{"type": "train", "step": 3, "loss": 2.0}\n' >"$tmp/nullloss/metrics.jsonl"
want="note: nullloss: 1 training row with no finite loss \(null in metrics.jsonl: a step that diverged\): not drawn"
expect 0 "a null loss (a diverged step) is left out, and the plot says so" "$GF" plot "$tmp/nullloss" --out "$tmp/ext.svg"

echo "plot: older metrics.jsonl (0.1.0 and 0.2.0: no type, no count, no time on eval rows)"
expect 0 "plot both against time" "$GF" plot tests/fixtures/v1/run-metrics tests/fixtures/v2/run-metrics --x time --out "$tmp/old.svg"
grep -q "note: v1/run-metrics: metrics.jsonl has no time on every row (written by an older grassflow); plotting against step" "$tmp/err" \
    && pass "... falls back to step and says so" || fail "old files: $(cat "$tmp/err")"
svg_ok "$tmp/old.svg" 4 v1/run-metrics v2/run-metrics && texts "$tmp/old.svg" | grep -q "|step|" \
    && pass "... 4 curves on step; two runs of one folder name are told apart by the end of their paths" || fail "old svg: $(texts "$tmp/old.svg")"

echo "plot: a classifier (the vectors task): loss, and its own metric below it"
if [ -x "$GV" ]; then
    mkdir -p "$tmp/vec"
    $PY - "$tmp/vec" <<'PYEOF'
import random, sys
random.seed(5)
for name, n in (("train", 96), ("valid", 32), ("test", 32)):
    with open(f"{sys.argv[1]}/{name}.txt", "w") as f:
        f.write("classes: down up\n")
        for _ in range(n):
            c = random.randrange(2)
            f.write(("up" if c else "down") + " " + " ".join(f"{random.gauss(0.5 if c else -0.5, 1.0):.4f}" for _ in range(18)) + "\n")
PYEOF
    expect 0 "train a classifier" "$GV" train --model grassmann-tiny --task vectors --corpus "$tmp/vec" --dim 3 --batch 16 --steps 12 --eval-every 4 --log-every 2 --out "$tmp/v"
    grep -q '"type": "train", "step": 2, "epoch": 0.333333, "sequences": 32,' "$tmp/v/metrics.jsonl" && pass "its rows count sequences, the task's unit" || fail "vectors rows: $(head -3 "$tmp/v/metrics.jsonl")"
    expect 0 "plot it against what it counts" "$GV" plot "$tmp/v" --x tokens --out "$tmp/v.svg"
    svg_ok "$tmp/v.svg" 3 v && texts "$tmp/v.svg" | grep -q "^loss and validation error rate against sequences seen|" \
        && pass "... two panels: training and validation loss, the task's own metric (validation error rate); x: sequences seen" || fail "classifier plot: $(texts "$tmp/v.svg")"
    want="no run has a point of accuracy to draw \(the runs are scored by error_rate: --metric error_rate\)"
    expect 1 "--metric accuracy of a run scored by its task's own metric: the one it is scored by" "$GV" plot "$tmp/v" --metric accuracy --out "$tmp/v3.svg"
else
    fail "$GV is missing (make $GV)"
fi

echo "plot: a compare folder (issue 48): every run its summary lists, each seed its own curve"
C=(--corpus tests/fixtures/v1/corpus.txt --tokenizer char --no-cache --steps 4 --batch 4 --seq-len 16 --log-every 2 --eval-every 2 --warmup 1)
expect 0 "compare two models with two seeds" "$GF" compare --models grassmann-tiny,transformer-tiny --seeds 1,2 "${C[@]}" --out "$tmp/cmp"
want=; expect 0 "plot the compare's folder" "$GF" plot "$tmp/cmp" --out "$tmp/cmp.svg"
svg_ok "$tmp/cmp.svg" 8 grassmann-tiny/seed-1 grassmann-tiny/seed-2 transformer-tiny/seed-1 transformer-tiny/seed-2 \
    && pass "... 4 runs, 8 curves, each named MODEL/seed-S" || fail "compare folder plot: $(cat "$tmp/err")"
expect 0 "plot a compare folder beside a run folder" "$GF" plot "$tmp/cmp" "$tmp/a" --out "$tmp/cmp2.svg"
svg_ok "$tmp/cmp2.svg" 10 grassmann-tiny/seed-1 grassmann-tiny/seed-2 transformer-tiny/seed-1 transformer-tiny/seed-2 a \
    && pass "... 5 runs" || fail "compare folder + run: $(cat "$tmp/err")"
mkdir -p "$tmp/notcmp" && echo '{}' >"$tmp/notcmp/summary.json"
want="notcmp/summary.json is not a grassflow compare summary"; expect 1 "a summary.json without models: refused" "$GF" plot "$tmp/notcmp" --out "$tmp/x.svg"

echo "plot: refusals"
want="plot: $tmp/nope is not a folder"; expect 1 "a folder that is not there" "$GF" plot "$tmp/nope"
mkdir -p "$tmp/empty"
want="plot: $tmp/empty holds no metrics.jsonl"; expect 1 "a folder without metrics" "$GF" plot "$tmp/a" "$tmp/empty" --out "$tmp/x.svg"
mkdir -p "$tmp/bad" && head -3 "$tmp/a/metrics.jsonl" >"$tmp/bad/metrics.jsonl" && echo '{"type": "train", "step": 8, "lo' >>"$tmp/bad/metrics.jsonl"
want="$tmp/bad/metrics.jsonl, line 4: not JSON"; expect 1 "a corrupt line, named by file and line" "$GF" plot "$tmp/bad" --out "$tmp/x.svg"
[ ! -e "$tmp/x.svg" ] && pass "... and no SVG is written" || fail "an SVG was written for a refused plot"
want="no run has a point of accuracy to draw \(the runs are scored by ppl: --metric ppl\)"; expect 1 "--metric accuracy of a language model" "$GF" plot "$tmp/a" --metric accuracy --out "$tmp/x.svg"
want="--x: 'epochs' is not one of step, tokens, time"; expect 2 "--x epochs" "$GF" plot "$tmp/a" --x epochs
want="--metric: 'bleu' is not one of loss, ppl, accuracy"; expect 2 "--metric bleu" "$GF" plot "$tmp/a" --metric loss,bleu
want="--metric loss,,ppl: item 2 is empty"; expect 2 "--metric loss,,ppl" "$GF" plot "$tmp/a" --metric loss,,ppl --out "$tmp/x.svg"
want="--metric loss,loss: lists loss twice"; expect 2 "--metric loss,loss (one panel twice)" "$GF" plot "$tmp/a" --metric loss,loss --out "$tmp/x.svg"
want="expected one or more run folders"; expect 2 "no folder" "$GF" plot --out "$tmp/x.svg"
want="cannot write $tmp/no/dir/x.svg"; expect 1 "an --out in a folder that is not there" "$GF" plot "$tmp/a" --out "$tmp/no/dir/x.svg"

echo "plot: --out never replaces what it reads, a device node or a FIFO; another file only with --force"
sum_a=$(cksum <"$tmp/a/metrics.jsonl")
want="--out $tmp/a/metrics.jsonl is an input, which this command reads"
expect 1 "--out the run's own metrics.jsonl" "$GF" plot "$tmp/a" --out "$tmp/a/metrics.jsonl"
expect 1 "... even with --force" "$GF" plot "$tmp/a" --out "$tmp/a/metrics.jsonl" --force
ln "$tmp/a/metrics.jsonl" "$tmp/hardlink.svg"
want="is $tmp/a/metrics.jsonl, which this command reads"; expect 1 "... or a hard link to it under another name" "$GF" plot "$tmp/a" "$tmp/u" --out "$tmp/hardlink.svg" --force
[ "$(cksum <"$tmp/a/metrics.jsonl")" = "$sum_a" ] && pass "... metrics.jsonl unchanged" || fail "metrics.jsonl changed by plot"
cp "$tmp/a/metrics.jsonl" "$tmp/precious.safetensors"
want="--out $tmp/precious.safetensors exists and is not replaced"; expect 1 "--out an existing file that is not an SVG" "$GF" plot "$tmp/a" --out "$tmp/precious.safetensors"
grep -q "plot replaces an SVG; give --force to replace another file" "$tmp/err" && pass "... saying how to replace it" || fail "no --force hint: $(cat "$tmp/err")"
[ "$(cksum <"$tmp/precious.safetensors")" = "$sum_a" ] && pass "... and it is unchanged" || fail "precious file replaced"
want=; expect 0 "... with --force it is replaced" "$GF" plot "$tmp/a" --out "$tmp/precious.safetensors" --force
expect 0 "an SVG plot wrote is replaced by a rerun" "$GF" plot "$tmp/a" --out "$tmp/again.svg"
expect 0 "... again" "$GF" plot "$tmp/a" "$tmp/u" --out "$tmp/again.svg"
mkfifo "$tmp/fifo.svg"
want="$tmp/fifo.svg is a FIFO \(named pipe\); grassflow writes only regular files"
expect 1 "--out a FIFO, with --force" timeout 20 "$GF" plot "$tmp/a" --out "$tmp/fifo.svg" --force
[ -p "$tmp/fifo.svg" ] && pass "... and the FIFO is still a FIFO" || fail "the FIFO was replaced"
if mknod "$tmp/full.svg" c 1 7 2>/dev/null; then
    want="$tmp/full.svg is a character device"; expect 1 "--out a character device, with --force" "$GF" plot "$tmp/a" --out "$tmp/full.svg" --force
    [ -c "$tmp/full.svg" ] && pass "... and the node is still a character device" || fail "the device node was replaced"
else
    echo "  skip  --out a character device: mknod needs root"
fi

echo "plot --table: a table of series as lines, labelled points or bars (the studies' and the benchmark's figures)"
T=$tmp/tables && mkdir -p "$T"
tsv() { printf "$2" >"$T/$1"; } # tsv NAME TEXT (printf: \t and \n)
figure() { # figure SVG PYTHON: the SVG parsed (d), el(tag, class), texts(class) and legend; PYTHON's asserts hold
    $PY - "$1" "$2" <<'PYEOF'
import sys, xml.dom.minidom
d = xml.dom.minidom.parse(sys.argv[1])
el = lambda tag, cls=None: [e for e in d.getElementsByTagName(tag) if cls is None or e.getAttribute("class") == cls]
texts = lambda cls=None: [t.firstChild.data for t in el("text", cls) if t.firstChild]
legend = [g.getElementsByTagName("text")[0].firstChild.data for g in el("g", "legend")]
pts = lambda line: [tuple(map(float, p.split(","))) for p in line.getAttribute("points").split()]
exec(sys.argv[2])
PYEOF
}
tsv lines.tsv 'series\tx\ty\tdash\tcolour\nfast\t4096\t1.1\t\t#d9534f\nfast\t256\t1.0\t\t#d9534f\nfast\t1024\t1.02\t\t\nslow\t256\t2.5\t6,4\t#2b7bba\nslow\t1024\t6\t6,4\t#2b7bba\nslow\t4096\t25\t\t#2b7bba\n\n'
want=; expect 0 "lines on log axes, with a title and axis labels" "$GF" plot --table "$T/lines.tsv" --out "$T/lines.svg" --logx --logy \
    --title "time per token" --xlabel "sequence length" --ylabel "µs per token"
figure "$T/lines.svg" '
s = {l.getAttribute("data-series"): l for l in el("polyline", "series")}
assert sorted(s) == ["fast", "slow"] and legend == ["fast", "slow"], (s, legend)
assert [x for x, _ in pts(s["fast"])] == sorted(x for x, _ in pts(s["fast"])), "drawn in order of x, whatever the rows order"
assert s["slow"].getAttribute("stroke-dasharray") == "6,4" and not s["fast"].getAttribute("stroke-dasharray")
assert s["fast"].getAttribute("stroke") == "#d9534f" and len(el("circle", "point")) == 6
t = texts()
assert t[0] == "time per token" and "sequence length (log scale)" in t and "µs per token (log scale)" in t, t
' 2>"$tmp/py.err" && pass "... XML: a polyline per series in order of x, its dash and colour (one row saying so is enough), a dot per point, the legend, the labels" \
    || fail "lines: $(tail -1 "$tmp/py.err")"
tsv points.tsv 'series\tx\ty\tlabel\na\t20\t2.1\tL=256\na\t22\t1.9\tL=1024\na\t25\t1.6\tL=4096\nb\t10\t2.0\tL=256\nb\t40\t1.95\tL=1024\nb\t160\t1.8\tL=4096\n'
want=; expect 0 "labelled points on a log x axis, with their Pareto front" "$GF" plot --table "$T/points.tsv" --kind points --logx --front --out "$T/points.svg"
figure "$T/points.svg" '
assert len(el("circle", "point")) == 6 and sorted(texts("label")) == sorted(["L=256", "L=1024", "L=4096"] * 2), texts("label")
f = el("polyline", "front")
assert len(f) == 1 and len(pts(f[0])) == 3, "the front: b L=256 (10, 2.0), a L=1024 (22, 1.9), a L=4096 (25, 1.6)"
assert len(el("polyline", "join")) == 2 and legend == ["a", "b", "Pareto front"], legend
' 2>"$tmp/py.err" && pass "... a dot and its label per point, each series joined, the front (3 of the 6 points), in the legend" \
    || fail "points: $(tail -1 "$tmp/py.err")"
$PY -c "
print('group\tseries\ty')
for g in range(12): print(f'case {g} with a long name\tgrassflow\t{1000 + 100 * g}\ncase {g} with a long name\tPyTorch\t{900 + g}')" >"$T/bars.tsv"
want=; expect 0 "bars in 12 groups" "$GF" plot --table "$T/bars.tsv" --kind bars --ylabel tokens/s --out "$T/bars.svg"
figure "$T/bars.svg" '
b = el("rect", "bar")
assert len(b) == 24 and {r.getAttribute("data-series") for r in b} == {"grassflow", "PyTorch"}, len(b)
assert float(d.documentElement.getAttribute("width")) == 78 + 24 + 80 * 12, "80 pixels a group"
assert "2100" in texts("value") and texts("group")[:2] == ["case 0 with", "a long name"], texts("group")[:3]
base = {round(float(r.getAttribute("y")) + float(r.getAttribute("height")), 1) for r in b}
assert len(base) == 1, ("every bar stands on 0", base)
' 2>"$tmp/py.err" && pass "... a bar per series and group on 0, its value on it, long group names on two lines, wider for many groups" \
    || fail "bars: $(tail -1 "$tmp/py.err")"
$PY -c "
print('group\tseries\ty')
for g in range(12): print(f'1: transformer-small, set mixers=x,x,x,x, set form=sigmoid{g}\ts\t{400 + g}')" >"$T/bars-long.tsv"
want=; expect 0 "bars with long group names" "$GF" plot --table "$T/bars-long.tsv" --kind bars --out "$T/bars-long.svg"
figure "$T/bars-long.svg" '
gw = (float(d.documentElement.getAttribute("width")) - 78 - 24) / 12
assert gw > 80, ("a group as wide as its name", gw)
for t in el("text", "group"):
    size = float(t.getAttribute("font-size"))
    assert size >= 7 and 0.62 * size * len(t.firstChild.data) <= gw, (t.firstChild.data, size, gw)
' 2>"$tmp/py.err" && pass "... long group names: each group widened to its name in 7-pixel type, no name wider than its group" \
    || fail "long group names: $(tail -1 "$tmp/py.err")"
$PY -c '
import sys; sys.path.insert(0, "scripts")
from escape import tsv_cell
name = "r\udcff\x01<&\"\tz\\\\x41"
print("x\ty\tseries\n1\t2\t%s\n2\t3\t%s" % (tsv_cell(name), tsv_cell(name)))' >"$T/odd.tsv"
want=; expect 0 "a series named with a tab, markup, a control and a byte that is not UTF-8 (escaped as gf_escape_tsv does)" \
    "$GF" plot --table "$T/odd.tsv" --out "$T/odd.svg"
figure "$T/odd.svg" 'assert legend == ["r\ufffd\ufffd<&\"\tz\\\\x41"], legend' 2>"$tmp/py.err" \
    && pass "... read back and escaped for XML: the legend names it, U+FFFD for the byte and the control" || fail "odd series: $(tail -1 "$tmp/py.err")"
tsv plain.tsv 'x\ty\n1\t5\n2\t7\n3\t6\n'
want=; expect 0 "no series column, --ymin and --ymax" "$GF" plot --table "$T/plain.tsv" --out "$T/plain.svg" --ymin 0 --ymax 10
figure "$T/plain.svg" '
assert legend == [] and len(el("polyline", "series")) == 1
y = [float(t) for t in (e.firstChild.data for e in el("text") if e.getAttribute("text-anchor") == "end")]
assert min(y) == 0 and max(y) == 10, y
' 2>"$tmp/py.err" && pass "... one series, no legend; the y axis from 0 to 10" || fail "plain table: $(tail -1 "$tmp/py.err")"

echo "plot --table: bad tables (an error naming the file, the line and the column; exit 1, no SVG)"
bad_table() { # bad_table WHAT WANT TEXT [OPTIONS...]: TEXT as a table is refused with WANT
    local what=$1; want=$2; tsv bad.tsv "$3"; shift 3
    rm -f "$T/bad.svg"
    expect 1 "$what" "$GF" plot --table "$T/bad.tsv" --out "$T/bad.svg" "$@"
    [ ! -e "$T/bad.svg" ] || fail "$what: an SVG was written"
}
want="plot: --table: cannot open $T/none.tsv: No such file"; expect 1 "a table that is not there" "$GF" plot --table "$T/none.tsv" --out "$T/x.svg"
want="plot: --table: $T is a directory"; expect 1 "a folder" "$GF" plot --table "$T" --out "$T/x.svg"
bad_table "an empty file" "bad.tsv, line 1: empty: the first line is the header" ''
bad_table "a header alone" "bad.tsv has no rows under its header: nothing to draw" 'x\ty\n\n'
bad_table "a column that is not one" "bad.tsv, line 1: header cell 2, 'why', is not a column of a table \(series, x, y" 'x\twhy\n1\t2\n'
bad_table "a column twice" "bad.tsv, line 1: the header names column y twice \(cells 2 and 3\)" 'x\ty\ty\n1\t2\t3\n'
bad_table "no x for lines" "bad.tsv, line 1: the header has no column x: a figure of lines needs x and y" 'series\ty\na\t1\n'
bad_table "x for bars" "bad.tsv, line 1: column x is not one a figure of bars draws" 'group\tx\ty\ng\t1\t2\n' --kind bars
bad_table "a cell that is not a number" "bad.tsv, line 3, column y: '2,5' is not a number" 'x\ty\n1\t2\n2\t2,5\n'
bad_table "an empty number" "bad.tsv, line 2, column x: '' is not a number" 'x\ty\n\t2\n'
bad_table "an infinite one" "bad.tsv, line 2, column y: 'inf' is not a finite number" 'x\ty\n1\tinf\n'
bad_table "0 on a log x axis" "bad.tsv, line 3, column x: 0 is not above 0, and --logx draws x on a log scale" 'x\ty\n1\t2\n0\t2\n' --logx
bad_table "a negative y on a log y axis" "bad.tsv, line 2, column y: -1 is not above 0, and --logy draws y on a log scale" 'x\ty\n1\t-1\n' --logy
bad_table "a row short of a cell" "bad.tsv, line 3: 1 cell; the header has 2 columns" 'x\ty\n1\t2\n3\n'
bad_table "a colour that is not one" "bad.tsv, line 2, column colour: 'red' is not a colour \(#rgb or #rrggbb\)" 'x\ty\tcolour\n1\t2\tred\n'
bad_table "two dashes for one series" "bad.tsv, line 3, column dash: '2,2', but series 'a' has dash 6,4 since line 2" 'series\tx\ty\tdash\na\t1\t2\t6,4\na\t2\t3\t2,2\n'
bad_table "a bar twice" "bad.tsv, line 3, column group: series 's' has a bar in group 'g' already \(line 2\)" 'group\tseries\ty\ng\ts\t1\ng\ts\t2\n' --kind bars
bad_table "a NUL byte" "bad.tsv holds a NUL byte \(at byte 7\): not a table of text" 'x\ty\n1\t2\0\n'
$PY -c "print('series\tx\ty'); [print(f's{i}\t1\t2') for i in range(25)]" >"$T/many.tsv"
want="many.tsv, line 26, column series: 's24' would be series 25; one plot holds 24"; expect 1 "25 series" "$GF" plot --table "$T/many.tsv" --out "$T/x.svg"
$PY - "$T" "$GF" <<'PYEOF' 2>"$tmp/py.err" && pass "60 tables of random cells: each drawn or refused with a message (exit 0, 1 or 2), none a crash" || fail "random tables: $(tail -3 "$tmp/py.err")"
import collections, os, random, subprocess, sys
r = random.Random(3)
# each column's cells, mostly of its kind; now and then any cell, a header that is not one, a cell too many
odd = ["", "nan", "-inf", "1e-320", "3e308", "\\x41", "\\", "\xff", "a b", "#abc", "6,4", "0", "-2"]
good = {"x": ["1", "2.5", "1e6", "0.001", "-3", "0"], "y": ["1", "2.5", "1e-9", "7e12", "-1", "0"], "series": ["a", "b", "c", ""],
        "group": ["g1", "g 2 with a long name", "g3"], "label": ["L=1", "", "<&>"], "colour": ["#abc", "#123456", ""], "dash": ["6,4", "2", ""]}
got = collections.Counter()
for i in range(60):
    kind, opts = r.choice([("lines", []), ("points", ["--front"]), ("bars", []), ("lines", ["--logx", "--logy"]), ("points", ["--ymin", "1"])])
    cols = (["group", "y"] if kind == "bars" else ["x", "y"]) + r.sample(["series", "label", "colour"] + ["dash"] * (kind != "bars"), r.randrange(4))
    r.shuffle(cols)
    if r.random() < 0.1:
        cols = [r.choice(odd + list(good)) for _ in range(3)]
    cell = lambda c: r.choice(odd) if r.random() < 0.03 or c not in good else r.choice(good[c])
    rows = ["\t".join(cell(c) for c in cols + ["x"] * (r.random() < 0.03)) for _ in range(r.randrange(12))]
    path = os.path.join(sys.argv[1], "r%d.tsv" % i)
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write("\n".join(["\t".join(cols)] + rows))
    p = subprocess.run([sys.argv[2], "plot", "--table", path, "--out", path + ".svg", "--force", "--kind", kind] + opts,
                       capture_output=True, env=dict(os.environ, GRASSFLOW_NO_REEXEC="1"))
    assert p.returncode in (0, 1, 2) and (p.returncode == 0 or b"grassflow" in p.stderr), (path, opts, p.returncode, p.stderr[-300:])
    got[p.returncode] += 1
assert got[0] >= 10 and got[1] >= 10, got  # drawn and refused, both
PYEOF

echo "plot --table: options that do not go together (exit 2)"
want="--kind: 'pie' is not one of lines, points, bars"; expect 2 "--kind pie" "$GF" plot --table "$T/plain.tsv" --out "$T/x.svg" --kind pie
want="--kind bars takes no --logy"; expect 2 "bars on a log axis" "$GF" plot --table "$T/bars.tsv" --out "$T/x.svg" --kind bars --logy
want="--x is an option of run folders, not of --table"; expect 2 "--x with --table" "$GF" plot --table "$T/plain.tsv" --out "$T/x.svg" --x tokens
want="--logx is an option of --table FILE"; expect 2 "--logx with run folders" "$GF" plot "$tmp/a" --logx --out "$T/x.svg"
want="--table needs --out FILE.svg"; expect 2 "--table without --out" "$GF" plot --table "$T/plain.tsv"
want="--table draws one table, without run folders \('$tmp/a'\)"; expect 2 "--table and a run folder" "$GF" plot --table "$T/plain.tsv" "$tmp/a" --out "$T/x.svg"
want="--ymin 3 is not below --ymax 1"; expect 2 "--ymin above --ymax" "$GF" plot --table "$T/plain.tsv" --out "$T/x.svg" --ymin 3 --ymax 1
want="--ymin and --ymax must be above 0 with --logy"; expect 2 "--ymin 0 with --logy" "$GF" plot --table "$T/plain.tsv" --out "$T/x.svg" --ymin 0 --logy
want="--ymin/--ymax: the y axis would run from 50 to"; expect 2 "--ymin above every y" "$GF" plot --table "$T/plain.tsv" --out "$T/x.svg" --ymin 50
want="--ymin expects a number"; expect 2 "--ymin low" "$GF" plot --table "$T/plain.tsv" --out "$T/x.svg" --ymin low

echo "plot --table: --out never replaces the table; another file that is not an SVG only with --force"
sum_t=$(cksum <"$T/plain.tsv")
want="--out $T/plain.tsv is an input, which this command reads"; expect 1 "--out the table itself, with --force" "$GF" plot --table "$T/plain.tsv" --out "$T/plain.tsv" --force
[ "$(cksum <"$T/plain.tsv")" = "$sum_t" ] && pass "... the table unchanged" || fail "the table was replaced"
cp "$T/plain.tsv" "$T/notes.txt"
want="--out $T/notes.txt exists and is not replaced"; expect 1 "--out a file that is not an SVG" "$GF" plot --table "$T/plain.tsv" --out "$T/notes.txt"
[ "$(cksum <"$T/notes.txt")" = "$sum_t" ] && pass "... unchanged" || fail "notes.txt replaced"
want=; expect 0 "... replaced with --force" "$GF" plot --table "$T/plain.tsv" --out "$T/notes.txt" --force
grep -q '^<svg' "$T/notes.txt" && pass "... by the SVG" || fail "notes.txt: $(head -c 100 "$T/notes.txt")"
expect 0 "an SVG is replaced without --force (a rerun redraws its figure)" "$GF" plot --table "$T/lines.tsv" --out "$T/plain.svg"
[ -z "$(find "$T" -name '*.tmp.*')" ] && pass "no temporary files left" || fail "temporary files: $(find "$T" -name '*.tmp.*')"

[ "$fails" -eq 0 ] && echo "plot: all passed" || { echo "plot: $fails FAILED"; exit 1; }
