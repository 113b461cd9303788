"""The mixer study's bookkeeping (scripts/mixer_study.sh runs the jobs, this reads what they left):
   complete DIR        exit 0 if the compare in DIR finished every run
   best OUT            the model of the best non-Transformer variant of part (a) (lowest mean validation ppl)
   status OUT          what is done and what is left, part by part
   docs OUT FILE [README]  the tables and plots of every part into FILE (its hand-written section kept), and
                       a summary table into README (scripts/mixer_study.sh: docs/paper.md) between its <!-- mixers:begin/end --> markers
The variants and sizes come from mixer_study.sh through the environment (A_VARIANTS, C_VARIANTS, C_LENS, ...); the
plots are drawn by grassflow plot --table (scripts/plot_table.py: $GRASSFLOW, else build/grassflow)."""
import json
import math
import os
import shutil
import statistics as st
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from escape import md_cell  # noqa: E402
from plot_table import plot  # noqa: E402

HAND_BEGIN = "<!-- what-wins: written by hand after the full run; scripts/mixer_study.sh docs keeps it -->"
HAND_END = "<!-- /what-wins -->"
HAND_DEFAULT = """The study has not run yet: the tables below are filled by `scripts/mixer_study.sh` as its runs finish,
and this section (what wins where, with the spread across seeds, and what the study cannot show at this
scale) is written from them once every part has run. No result is claimed here before then."""
COLOURS = {"grassmann": "#2b7bba", "transformer": "#d7301f", "window": "#238b45", "performer": "#6a51a3"}


def variants(key):
    """[(name, model)] of A_VARIANTS or C_VARIANTS."""
    return [tuple(line.split("|", 1)) for line in os.environ.get(key, "").splitlines() if "|" in line]


def summary(d):
    """DIR/runs/summary.json (or DIR/summary.json), None if absent."""
    for p in (os.path.join(d, "runs", "summary.json"), os.path.join(d, "summary.json")):
        if os.path.exists(p):
            return json.load(open(p))
    return None


def read(path, default=""):
    return open(path).read().strip() if os.path.exists(path) else default


def unit_state(d):
    """'done', 'skipped: why', 'k of n runs done' or 'not started'."""
    if os.path.exists(os.path.join(d, "skipped")):
        return "skipped: " + read(os.path.join(d, "skipped"))
    s = summary(d)
    if s is None:
        return "not started"
    if s.get("complete"):
        return "done"
    runs = [r for m in s["models"] for r in m["runs"]]
    return "%d of %d runs done" % (sum(r["status"] == "done" for r in runs), len(runs))


QUIET = 0.85  # a quiet run's median 10-step rate is 0.92-0.95 of its best; below this it shared the machine


def logged_rates(d):
    """The tokens/s every run of unit d logged every 10 steps (each metrics.jsonl under d/runs: a model's,
    or each seed's of it)."""
    rates = []
    for root, _, files in sorted(os.walk(os.path.join(d, "runs"))):
        if "metrics.jsonl" in files:
            for line in open(os.path.join(root, "metrics.jsonl")):
                e = json.loads(line)
                if e.get("type") == "train" and e.get("tokens_per_s"):
                    rates.append(e["tokens_per_s"])
    return rates


def shared_note(d):
    """' (shared the machine: ...)' when the unit's median rate is under QUIET of its best, else ''."""
    rates = logged_rates(d)
    if not rates or st.median(rates) >= QUIET * max(rates):
        return ""
    return " (shared the machine: its median rate is %.2f of its best)" % (st.median(rates) / max(rates))


def window_rate(d, fallback):
    """Training tokens/s of a unit: the median of the rates its runs logged every 10 steps (every seed's
    pooled), so that a few minutes of another process on the machine do not move it; the compare's mean
    rate (fallback) when no run logged one."""
    rates = logged_rates(d)
    return st.median(rates) if rates else fallback


def peak_mb(d):
    """The largest max RSS (MB) /usr/bin/time recorded for the unit's processes, None if none."""
    kb = [int(x) for x in read(os.path.join(d, "maxrss_kb")).split() if x.isdigit()]
    return max(kb) / 1024 if kb else None


def fmt(mean, sd, digits=2):
    if mean is None:
        return "-"
    return "%.*f ± %.*f" % (digits, mean, digits, sd) if sd is not None else "%.*f" % (digits, mean)


# ---- commands -----------------------------------------------------------------------------------------------

def cmd_complete(d):
    s = summary(d)
    return 0 if s and s.get("complete") else 1


def cmd_best(out):
    best = None
    left = [n for n, _ in variants("A_VARIANTS") if unit_state(os.path.join(out, "a", n)) != "done"
            and not unit_state(os.path.join(out, "a", n)).startswith("skipped")]
    if left:
        print("part (a) is not finished: %s left" % ", ".join(left), file=sys.stderr)
        return 1
    for name, _ in variants("A_VARIANTS"):
        s = summary(os.path.join(out, "a", name))
        if name.startswith("transformer") or not s or not s.get("complete"):
            continue
        m = s["models"][0]
        if best is None or m["val_mean"] < best[0]:
            best = (m["val_mean"], m["model"])
    if best is None:
        print("no finished non-Transformer variant in %s/a" % out, file=sys.stderr)
        return 1
    print(best[1])
    return 0


def cmd_status(out):
    rows = [("a", name, unit_state(os.path.join(out, "a", name))) for name, _ in variants("A_VARIANTS")]
    best = read(os.path.join(out, "b", "best"))
    rows.append(("b", best or "(the best of a: chosen when a is done)", unit_state(os.path.join(out, "b"))))
    for L in os.environ.get("C_LENS", "").split():
        for name, _ in variants("C_VARIANTS"):
            d = os.path.join(out, "c", "L" + L, name)
            state = unit_state(d)
            if state == "done" and not os.path.exists(os.path.join(d, "stream.json")):
                state = "trained; streaming cost not measured"
            rows.append(("c", "%s L=%s" % (name, L), state))
    rows.append(("d", "SNLI heads", snli_state(os.path.join(out, "d"))))
    for part, what, state in rows:
        print("%s  %-38s %s" % (part, what, state))
    left = sum(not r[2].startswith(("done", "skipped")) for r in rows)
    print("\n%d of %d jobs left (%s); skipped ones run once this grassflow has their mixer" % (left, len(rows), out))
    return 0


def snli_state(d):
    skipped = read(os.path.join(d, "skipped"))
    if os.path.exists(os.path.join(d, "table.md")):
        return "done" + (" without the %s head(s): their mixers were missing" % skipped.replace(" ", ", ") if skipped else "")
    res = os.path.join(d, "results.tsv")
    n = max(0, len(read(res).splitlines()) - 1)
    return "%d runs done" % n if n else "not started"


# ---- part (a) ---------------------------------------------------------------------------------------------------

def table_a(out):
    lines = ["| variant | model | params | val ppl | test ppl | seeds | train tokens/s | peak RSS | wall |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, model in variants("A_VARIANTS"):
        d = os.path.join(out, "a", name)
        s, state = summary(d), unit_state(d)
        m = s["models"][0] if s else None
        if not m or not m["n"]:
            lines.append("| %s | `%s` | - | - | - | 0 | - | - | %s |" % (name, model, md_cell(state)))
            continue
        rss = peak_mb(d)
        lines.append("| %s | `%s` | %d | %s | %s | %d | %s | %s | %s |" % (
            name, model, m["params"], fmt(m["val_mean"], m["val_std"]), fmt(m["test_mean"], m["test_std"]), m["n"],
            rate_cell(out, "a", d, window_rate(d, m["tokens_per_s"])), "%.0f MB" % rss if rss else "-", hms(m["wall_s"]) + ("" if state == "done" else
                                                                                    " (" + state + ")") + shared_note(d)))
    return "\n".join(lines)


def hms(s):
    s = int(round(s or 0))
    return "%dh%02dm" % (s // 3600, s // 60 % 60) if s >= 3600 else "%dm%02ds" % (s // 60, s % 60)


def commands(out, dirs, extra=()):
    """The commands that made these units, as run (each unit's `command` file), in a code block."""
    cmds = [read(os.path.join(d, "command")) for d in dirs if os.path.exists(os.path.join(d, "command"))]
    cmds += [read(os.path.join(d, "stream.command")) for d in extra if os.path.exists(os.path.join(d, "stream.command"))]
    return "```sh\n" + "\n".join(cmds) + "\n```" if cmds else ""


def trained_units(out, part):
    """The unit folders of a part that trained at least one run, in order."""
    top = os.path.join(out, part)
    dirs = sorted(os.path.join(top, n) for n in os.listdir(top)) if os.path.isdir(top) else []
    return [d for d in dirs if summary(d) and any(m["n"] for m in summary(d)["models"])]


def machine(d):
    """(OpenBLAS kernel, CPU) that unit d trained with."""
    r = summary(d)["recipe"]
    return r["blas_kernel"], r["cpu"]


def cpus(out, part):
    return sorted({machine(d)[1] for d in trained_units(out, part)})


def rate_cell(out, part, d, rate):
    """A unit's training tokens/s; with the CPU's short name when the part's units ran on more than one
    CPU (sessions move between machines), since a rate only compares with rates on the same CPU."""
    if len(cpus(out, part)) < 2:
        return "%.0f" % rate
    cpu = machine(d)[1]
    short = next((w for w in ("Xeon", "EPYC") if w in cpu), cpu)
    return "%.0f (%s)" % (rate, short)


def recipe_line(out, part):
    units = trained_units(out, part)
    if not units:
        return ""
    r = summary(units[0])["recipe"]
    seen = sorted({machine(d) for d in units})
    line = "Machine: %s (%s threads); tokenizer %s." % (
        "; ".join("OpenBLAS kernel %s, CPU %s" % m for m in seen), r["blas_threads"], r["tokenizer_used"])
    if len(cpus(out, part)) > 1:
        line += (" The runs of this part were made on more than one CPU (each rate names its CPU): training "
                 "tokens/s compare only between rows on the same CPU; the plan above times every variant on one "
                 "machine.")
    return line


# ---- part (c) ---------------------------------------------------------------------------------------------------

def c_points(out):
    """{(mixer, L): {...}} for every (c) unit that trained, with its streaming cost where measured."""
    pts = {}
    for L in os.environ.get("C_LENS", "").split():
        for name, _ in variants("C_VARIANTS"):
            d = os.path.join(out, "c", "L" + L, name)
            s = summary(d)
            if not s or not s.get("complete"):
                continue
            m = s["models"][0]
            p = {"params": m["params"], "val_bpc": math.log2(m["val_mean"]), "test_bpc": math.log2(m["test_mean"]),
                 "train_us": 1e6 / window_rate(d, m["tokens_per_s"])}
            sj = os.path.join(d, "stream.json")
            if os.path.exists(sj):
                r = json.load(open(sj))["results"][0]
                p["stream_us"], p["state"] = r["us_per_token"], r["state_bytes"]
            p["note"] = shared_note(d)
            pts[(name.split("-")[0], int(L))] = p
    return pts


def table_c(pts):
    lines = ["| mixer | L | params | val bits/char | test bits/char | training µs/token | streaming µs/token at L | "
             "stream state |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for (mixer, L), p in sorted(pts.items()):
        lines.append("| %s | %d | %d | %.3f | %.3f | %.1f%s | %s | %s |" % (
            mixer, L, p["params"], p["val_bpc"], p["test_bpc"], p["train_us"], p.get("note", ""),
            "%.1f" % p["stream_us"] if "stream_us" in p else "-", kib(p.get("state"))))
    return "\n".join(lines)


def kib(b):
    return "-" if b is None else "%.0f KiB" % (b / 1024) if b >= 1024 else "%d B" % b


def break_even(pts, key):
    """Per mixer: the L at which its cost (key) meets the Transformer's, from the measured lengths."""
    out = {}
    for mixer in sorted({m for m, _ in pts} - {"transformer"}):
        lens = sorted(L for m, L in pts if m == mixer and (("transformer", L) in pts) and key in pts[(m, L)]
                      and key in pts[("transformer", L)])
        r = [(L, pts[(mixer, L)][key] / pts[("transformer", L)][key]) for L in lens]
        out[mixer] = crossing(r)
    return out


def crossing(r):
    if not r:
        return "-"
    if r[0][1] <= 1:
        return "cheaper already at L = %d (%.2fx)" % r[0]
    for (l0, r0), (l1, r1) in zip(r, r[1:]):
        if r1 <= 1 < r0:  # log-linear between the two measured lengths
            t = math.log(r0) / (math.log(r0) - math.log(r1))
            return "L ≈ %d (between %d and %d)" % (round(math.exp(math.log(l0) + t * (math.log(l1) - math.log(l0)))),
                                                   l0, l1)
    return "not up to L = %d (%.2fx the Transformer's cost there)" % r[-1]


def pareto_svgs(pts, where):
    """pareto-train.svg and pareto-stream.svg in `where`; their file names."""
    made = []
    for key, fname, what, xlabel in (("train_us", "pareto-train.svg", "training", "training µs per token"),
                                     ("stream_us", "pareto-stream.svg", "streaming", "streaming µs per token at L")):
        rows = [{"series": mixer, "x": p[key], "y": p["val_bpc"], "label": "L=%d" % L,
                 "colour": COLOURS.get(mixer, "#444444")} for (mixer, L), p in sorted(pts.items()) if key in p]
        if not rows:
            continue
        plot(os.path.join(where, fname), rows, kind="points", title="Tiny Shakespeare: validation bits/char against %s cost"
             % what, xlabel=xlabel, ylabel="validation bits per character", logx=True, front=True)
        made.append(fname)
    return made


# ---- the document ------------------------------------------------------------------------------------------------

def hand_section(path):
    text = read(path)
    if HAND_BEGIN in text and HAND_END in text:
        return text.split(HAND_BEGIN, 1)[1].split(HAND_END, 1)[0].strip("\n")
    return HAND_DEFAULT


README_BEGIN, README_END = "<!-- mixers:begin -->", "<!-- mixers:end -->"


def readme_tables(out):
    """The README's summary: part (a)'s quality by variant, part (c)'s bits per character by mixer and L."""
    rows = ["| variant (a: WikiText-2 words, d 128, 4 layers, 2 epochs) | params | val ppl | test ppl | seeds |",
            "|---|---:|---:|---:|---:|"]
    for name, _ in variants("A_VARIANTS"):
        s = summary(os.path.join(out, "a", name))
        m = s["models"][0] if s else None
        if m and m["n"]:
            rows.append("| %s | %.1fM | %s | %s | %d |" % (name, m["params"] / 1e6, fmt(m["val_mean"], m["val_std"]),
                                                          fmt(m["test_mean"], m["test_std"]), m["n"]))
        else:
            rows.append("| %s | | not run yet | | 0 |" % name)
    pts, lens = c_points(out), os.environ.get("C_LENS", "").split()
    if pts:
        rows += ["", "| mixer (c: Tiny Shakespeare, same tokens at each L) | " + " | ".join(
            "val bits/char, L = %s" % n for n in lens) + " |", "|---|" + "---:|" * len(lens)]
        for mixer in sorted({k[0] for k in pts}):
            rows.append("| %s | %s |" % (mixer, " | ".join(
                "%.3f" % pts[(mixer, int(n))]["val_bpc"] if (mixer, int(n)) in pts else "-" for n in lens)))
    return "\n".join(rows)


def write_readme(out, readme):
    """The summary tables into README between its markers (a README without them is left alone)."""
    text = read(readme)
    if README_BEGIN not in text or README_END not in text:
        print("mixer_study: %s has no %s ... %s markers: its summary table not written" % (
            readme, README_BEGIN, README_END), file=sys.stderr)
        return
    head, rest = text.split(README_BEGIN, 1)
    tail = rest.split(README_END, 1)[1]
    tmp = readme + ".tmp"
    open(tmp, "w").write(head + README_BEGIN + "\n" + readme_tables(out) + "\n" + README_END + tail + "\n" * (not text.endswith("\n")))
    os.replace(tmp, readme)


def cmd_docs(out, path, readme=None):
    figdir = os.path.join(os.path.dirname(path) or ".", "mixers")
    rel = os.path.relpath(figdir, os.path.dirname(path) or ".")
    os.makedirs(figdir, exist_ok=True)
    parts = [header(out, path), plan_section(out), "## What wins where\n\n%s\n%s\n%s" % (
        HAND_BEGIN, hand_section(path), HAND_END), section_a(out), section_b(out), section_c(out, figdir, rel),
        section_d(out, figdir, rel)]
    tmp = path + ".tmp"
    open(tmp, "w").write("\n\n".join(p.strip("\n") for p in parts if p) + "\n")
    os.replace(tmp, path)
    if readme:
        write_readme(out, readme)
    print("mixer_study: wrote %s (figures in %s)%s" % (path, figdir, " and the summary in " + readme if readme else ""))
    return 0


def header(out, path):
    quick = os.environ.get("QUICK") == "1"
    return """# Which mixer? The mixer study

Written by `bash scripts/mixer_study.sh%s docs` from the runs in `%s`.%s
Every table below is made from the results of the commands printed beside it (each run is one
`grassflow compare` in its own folder); the variants are presets (`grassflow info --presets`), each the
one change it is named for: `grassmann-small` and `transformer-small` (d 128, 4 layers, d_ff 512, 4
heads, Grassmann rank 16), `window-small` (every layer window attention, w = 32, a quarter of the
128-token blocks of WikiText-2, no global tokens), `performer-small` (FAVOR+, 128 features, no redraw),
the hybrids `hybrid-last-small` (attention in the last layer of a Grassmann stack), `hybrid-middle-small`
(attention in layer index 2) and `hybrid-window-small` (window attention, w = 32, in layers 1 and 3), and
the paper's ablations in `configs/mixer-study/` (`grassmann-small-noplucker` and `-nogate`:
`plucker: false` and `gate: false`); their `-6L` presets and files are the same changes to `grassmann-6L`
and `transformer-6L`.

Run it, or continue it, with one command (each part alone: `a`, `b`, `c`, `d`; `status` says what is done
and what is left):

```sh
bash scripts/mixer_study.sh [--6L-from runs/wt2-1ep] [--snli-from runs/snli-study]   # all, then this page
bash scripts/mixer_study.sh status
```

Every run's results are kept as it ends; Ctrl-C (or `kill PID`) stops the run in progress after its
step, saving its state, and the same command continues bit for bit. `--6L-from DIR` reuses a finished
one-epoch `grassmann-6L`/`transformer-6L` compare of the README's recipe for part (b), `--snli-from DIR`
docs/paper.md's SNLI study (its Grassmann and Transformer heads and its language model) for part (d).
`--quick` runs the same steps at toy sizes (a few steps on corpora cut from the shipped data, into
`runs/mixer-study-quick`, its page `runs/mixer-study-quick/mixers.md`) to check the machinery.""" % (
        " --quick" if quick else "", out, " **Quick mode: toy sizes, the numbers mean nothing.**" if quick else "")


# ---- the machine-time plan (from OUT/plan.tsv: bench train's tokens/s of each variant at its part's shape) ----

WT2_TRAIN, WT2_VAL, WT2_TEST = 2088628, 217646, 245569  # WikiText-2 words (data/README.md)
TS_SPLIT = 55770  # characters of Tiny Shakespeare's validation (and test) split: 5 % of 1,115,394
EVAL_SPEEDUP = 3  # assumed: a forward-only token costs a third of a training token
REF_QUIET = 2695  # grassmann-6L's training tokens/s on a quiet Xeon, 2 cores (README, "The paper's experiment")


def plan_rows(out):
    """[(part, variant, tokens/s scaled to a quiet machine)], and the scale: REF_QUIET over the reference's rate."""
    rows = [line.split("\t") for line in read(os.path.join(out, "plan.tsv")).splitlines()[1:]]
    rows = [(p, n, float(tps)) for p, n, _, _, tps in rows if tps]
    ref = [tps for p, _, tps in rows if p == "ref"]
    scale = REF_QUIET / st.mean(ref) if ref else 1.0
    return [(p, n, tps * scale) for p, n, tps in rows if p != "ref"], scale


def hours(train_tokens, eval_tokens, tps):
    return (train_tokens + eval_tokens / EVAL_SPEEDUP) / tps / 3600


def plan_estimates(rows):
    """[(part, what, runs, hours)] of the full study."""
    c_tokens = int(os.environ.get("C_STEPS_FULL", 0)) * int(os.environ.get("C_TOKENS_FULL", 0))
    est = []
    for part, name, tps in rows:
        if part == "a":  # 2 seeds x 2 epochs; validation at steps 500, 1000 and the end, then the test split
            est.append(("a", name, 2, 2 * hours(2 * WT2_TRAIN, 3 * WT2_VAL + WT2_TEST, tps)))
        elif part == "b":
            est.append(("b", name, 1, hours(WT2_TRAIN, WT2_VAL + WT2_TEST, tps)))
        elif part == "c":
            est.append(("c", name, 1, hours(c_tokens, 2 * TS_SPLIT, tps)))
    return est


def part_hours(est, part, n_all):
    """Part's hours over the runs measured, and over all n_all of them at the mean of those measured."""
    h = [e[3] for e in est if e[0] == part]
    return (sum(h), sum(h) / len(h) * n_all) if h else (0.0, 0.0)


def plan_section(out):
    rows, scale = plan_rows(out)
    head = "## Machine time\n\n"
    if not rows:
        return head + "Not estimated yet: `bash scripts/mixer_study.sh plan` measures it."
    est = plan_estimates(rows)
    lines = ["| part | run | runs | estimated hours |", "|---|---|---:|---:|"]
    lines += ["| %s | %s | %d | %.1f |" % e for e in est]
    n_a, n_c = len(variants("A_VARIANTS")), len(variants("C_VARIANTS")) * 3
    a, c = part_hours(est, "a", n_a), part_hours(est, "c", n_c)
    b = [e[3] for e in est if e[0] == "b" and e[1] not in ("grassmann-6L", "transformer-6L")] or [0.0]
    pair = sum(e[3] for e in est if e[0] == "b" and e[1] in ("grassmann-6L", "transformer-6L"))
    d = (24 * 145 + 31 * 60) / 3600
    return head + """An **estimate**, not a measurement of the study: `bash scripts/mixer_study.sh plan` timed one
training step of every variant at its part's batch and length (`grassflow bench train`, after a warm-up
step; OUT/plan.tsv), and of `grassmann-6L` before and after them. %s The rates are scaled by %.2f, so that
`grassmann-6L` runs at the %d tokens/s the README measured on a quiet 2-core Xeon (a variant's cost
relative to `grassmann-6L` is taken from the busy machine), then to each run's training tokens, with
evaluation counted as a third of a training token. Variants missing from the table were not in the
grassflow that made it (their mixer or key did not exist yet): they are counted at the mean of the
measured ones of their part, and `plan` again after they are merged measures them.

- Part (a): %.1f hours for the %d variants measured, about %.1f for all %d.
- Part (b): %.1f hours for the best variant (known after (a); the measured ones: %s),
  plus %.1f for `grassmann-6L` and `transformer-6L` unless `--6L-from` reuses them.
- Part (c): %.1f hours for the %d runs measured, about %.1f for all %d.
- Part (d): not timed by `plan`; from docs/paper.md's SNLI study (131 to 151 s a run, 31 minutes to
  pretrain the language model) about %.1f hours for its 24 runs (4 heads, 2 backbones, 3 seeds), half
  of that with `--snli-from`.
- In all about %.0f hours (%.0f with `--6L-from` and `--snli-from`). Each part runs alone (`scripts/mixer_study.sh a`) and
  stops and continues at any point, so the study can be spread over sessions.

%s""" % (read(os.path.join(out, "plan.machine")), scale, REF_QUIET,
         a[0], sum(e[0] == "a" for e in est), a[1], n_a, st.mean(b), " to ".join(sorted({"%.1f" % min(b), "%.1f" % max(b)})), pair,
         c[0], sum(e[0] == "c" for e in est), c[1], n_c, d, a[1] + st.mean(b) + pair + c[1] + d,
         a[1] + st.mean(b) + c[1] + (12 * 145) / 3600, "\n".join(lines))


def section_a(out):
    if not any(summary(os.path.join(out, "a", n)) for n, _ in variants("A_VARIANTS")):
        return "## (a) WikiText-2 words, small size, 2 epochs, 2 seeds\n\nNot run yet (`bash scripts/mixer_study.sh a`)."
    return """## (a) WikiText-2 words, small size, 2 epochs, 2 seeds

Validation and test perplexity of each run's best checkpoint (mean ± sample standard deviation over the
seeds), parameters, training tokens/s (the median of the rates the runs logged every 10 steps, both seeds
pooled, so that a few minutes of another process on the machine do not move it), the peak resident memory of a process that
trained it (the largest max RSS `/usr/bin/time` recorded over the processes that ran its compare: the model,
its AdamW moments, the activations and the tokenized corpus), and the wall time of all its runs.

%s

%s
%s""" % (table_a(out), recipe_line(out, "a"), commands(out, [os.path.join(out, "a", n) for n, _ in
                                                             variants("A_VARIANTS")]))


def section_b(out):
    d = os.path.join(out, "b")
    best = read(os.path.join(d, "best"))
    if not best:
        return "## (b) The best variant at the 6-layer size, 1 epoch\n\nNot run yet: it waits for part (a)."
    md = read(os.path.join(d, "runs", "summary.md"), "Not run yet (`bash scripts/mixer_study.sh b`).")
    return """## (b) The best variant at the 6-layer size, 1 epoch

The best non-Transformer variant of (a) by mean validation perplexity, `%s`, beside `grassmann-6L` and
`transformer-6L` with the README's one-epoch recipe (the gap is to `transformer-6L`); %s.

%s

%s""" % (best, unit_state(d), md, commands(out, [d]))


def section_c(out, figdir, rel):
    pts = c_points(out)
    lens = os.environ.get("C_LENS", "").split()
    head = """## (c) Long context on characters: quality against cost

Tiny Shakespeare characters at L = %s, the same %s training tokens at each length (%s steps of %s
tokens: the batch is %s / L), seed 1; the window layers see w = %s keys. Quality is the best checkpoint's
validation (and test) bits per character; the training cost is microseconds per training token (from
the median of the rates the run logged every 10 steps), the streaming cost the microseconds per generated token at the end of a context of L
(`grassflow bench generate`: %s tokens from position L - %s, random weights: the cost does not depend on them),
with the stream's state.""" % (", ".join("{:,}".format(int(L)) for L in lens),
                      "{:,}".format(int(os.environ.get("C_STEPS", 0)) * int(os.environ.get("C_TOKENS", 0))),
                      os.environ.get("C_STEPS"), os.environ.get("C_TOKENS"), os.environ.get("C_TOKENS"),
                      os.environ.get("C_WINDOW"), os.environ.get("C_GEN"), os.environ.get("C_GEN"))
    if not pts:
        return head + "\n\nNot run yet (`bash scripts/mixer_study.sh c`)."
    figs = pareto_svgs(pts, figdir)
    be = [break_even(pts, k) for k in ("train_us", "stream_us")]
    even = ["| mixer | training cost meets the Transformer's at | streaming cost meets it at |", "|---|---|---|"]
    even += ["| %s | %s | %s |" % (m, be[0][m], be[1].get(m, "-")) for m in sorted(be[0])]
    units = [os.path.join(out, "c", "L" + L, n) for L in lens for n, _ in variants("C_VARIANTS")]
    return "%s\n\n%s\n\n%s\n\nWhere each mixer's cost per token meets the Transformer's (interpolated in log L " \
           "between the measured lengths):\n\n%s\n\n%s\n\n%s" % (
               head, table_c(pts), "\n\n".join("![%s](%s/%s)" % (f[:-4], rel, f) for f in figs), "\n".join(even),
               "In the plots each point is one (mixer, L); the dashed line joins the Pareto front (no other point "
               "is both cheaper and better).", commands(out, units, units))


def section_d(out, figdir, rel):
    d = os.path.join(out, "d")
    lines = read(os.path.join(d, "table.md")).splitlines()
    notes = ["The backbone %s" % line[len("backbone "):] for line in lines if line.startswith("backbone ")]
    table = "\n".join(line for line in lines if line.startswith("|"))
    if not table:
        return "## (d) SNLI heads\n\nNot run yet (`bash scripts/mixer_study.sh d`)."
    fig = os.path.join(d, "dev-accuracy.svg")
    if os.path.exists(fig):
        shutil.copyfile(fig, os.path.join(figdir, "snli-dev-accuracy.svg"))
    return """## (d) SNLI heads

The head study of `scripts/snli_study.sh` (docs/paper.md, "The second experiment: SNLI") with a window head
(w = 8, one global token) and a performer head (m = 64) beside the Grassmann and Transformer heads, each
with no backbone and on the frozen WikiText-2 language model.%s

%s

![SNLI dev accuracy per epoch](%s/snli-dev-accuracy.svg)

%s""" % ("".join("\n\n" + n for n in notes), table, rel, commands(out, [d]))


def main(argv):
    cmd = argv[1] if len(argv) > 1 else ""
    if cmd == "complete" and len(argv) == 3:
        return cmd_complete(argv[2])
    if cmd == "best" and len(argv) == 3:
        return cmd_best(argv[2])
    if cmd == "status" and len(argv) == 3:
        return cmd_status(argv[2])
    if cmd == "docs" and len(argv) in (4, 5):
        return cmd_docs(*argv[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
