"""bench/report.py's sections on every mixer of bench/mixers.conf: training against the PyTorch twin, the
length sweep and the stream, each with its targets marked met or not met (the definitions are here, and
in docs/bench/README.md's text that this writes)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from escape import md_cell  # noqa: E402  (a reason from a log: no new cell, no HTML)
from plot_table import plot  # noqa: E402

TRAIN_NEED = 2.0      # a new mixer's training tokens/s over its PyTorch twin's
FLAT_NEED = 1.5       # linear math: time per token at FLAT_HI within this factor of FLAT_LO
FLAT_LO, FLAT_HI = 256, 8192
PALETTE = ["#2b7bba", "#d9534f", "#5cb85c", "#f0ad4e", "#8e44ad", "#16a085", "#7f8c8d", "#c0392b", "#2c3e50",
           "#e67e22", "#1abc9c", "#34495e"]


def entries(by):
    """[(label, entry record)] in the list's order; a skipped one has "skipped"."""
    return [(c[6:], r[""]) for c, r in by.items() if c.startswith("entry ") and "" in r]


def flags(e):
    return e.get("flags", "").split()


def verdict(ok):
    return "met" if ok else "**not met**"


def human(n):
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return ("%d %s" % (n, unit)) if unit == "B" else ("%.1f %s" % (n, unit))
        n /= 1024.0


def list_section(by, lines):
    lines += ["## Every mixer (bench/mixers.conf)", "",
              "Each line of bench/mixers.conf is a mixer (or a hybrid model) with its `--set` options; a line whose "
              "mixer is not registered in this build, or whose options this build refuses, is skipped and says why.",
              "", "| mixer | flags | options | |", "|---|---|---|---|"]
    for label, e in entries(by):
        if "skipped" in e:
            lines.append("| %s | | | skipped: %s |" % (label, md_cell(e["skipped"])))
        else:
            lines.append("| %s | %s | `%s` | measured |" % (label, e.get("flags", ""), e.get("sets", "")))
    lines.append("")


def train_section(by, lines, target):
    lines += ["### Training (grassmann-small with the mixer: d 128, 4 layers, vocabulary 65; tokens/s)", "",
              "Forward, backward and AdamW, medians over the timed steps; a `bidir` mixer trains as a classifier "
              "(one label per sequence). Target for a `new` mixer: at least %gx its PyTorch twin." % TRAIN_NEED, "",
              "| mixer | grassflow | PyTorch | ratio | PyTorch twin | target |", "|---|---|---|---|---|---|"]
    for label, e in entries(by):
        c = by.get("mtrain " + label, {})
        g, p = c.get("grassflow"), c.get("pytorch")
        if "skipped" in e or not g:
            continue
        if "tokens_per_s" not in g:
            lines.append("| %s | %s | | | | %s |" % (label, md_cell(g.get("failed", "?")), "**not met**" if "new" in flags(e) else ""))
            continue
        if not p or "tokens_per_s" not in p:
            why = (p or {}).get("skipped") or (p or {}).get("failed") or "none"
            lines.append("| %s | %.0f | — | — | %s | %s |" % (label, g["tokens_per_s"], md_cell(why),
                                                           "**not met** (no twin)" if "new" in flags(e) else ""))
            continue
        r = g["tokens_per_s"] / p["tokens_per_s"]
        mark = verdict(r >= TRAIN_NEED) if "new" in flags(e) else ""
        lines.append("| %s | %.0f | %.0f | %.2fx | %s | %s |" % (label, g["tokens_per_s"], p["tokens_per_s"], r,
                                                              ", ".join(p.get("twin_classes", [])), mark))
        if "new" in flags(e):
            target("%s training vs its PyTorch twin" % label, TRAIN_NEED, r)
    lines.append("")


def sweep_points(by, label, impl):
    return by.get("mixer " + label, {}).get(impl, {}).get("results", [])


def skipped_cell(r):
    if r.get("skipped") == "memory":
        return "skipped: needs ~%.1f GiB > budget %.1f GiB" % (r["estimated_bytes"] / 2 ** 30, r["max_bytes"] / 2 ** 30)
    return "failed: %s" % r.get("error", "?")


def sweep_rows(label, g, p):
    rows = []
    pt = {r["seq_len"]: r for r in p}
    for r in g:
        q = pt.get(r["seq_len"], {})
        gc = "%.3f" % r["us_per_token"] if "us_per_token" in r else skipped_cell(r)
        pc = "%.3f" % q["us_per_token"] if "us_per_token" in q else (skipped_cell(q) if q else "—")
        ratio = "%.2fx" % (q["us_per_token"] / r["us_per_token"]) if "us_per_token" in r and "us_per_token" in q else "—"
        mem = "%.0f" % r["bytes_per_token"] if "bytes_per_token" in r else "—"
        rows.append("| %s | %d | %s | %s | %s | %s |" % (label, r["seq_len"], gc, mem, pc, ratio))
    return rows


def flat_ratio(g):
    """Time per token at FLAT_HI (or the longest length measured below it) over that at FLAT_LO (or the
    shortest): (ratio, lo, hi) or None."""
    pts = {r["seq_len"]: r["us_per_token"] for r in g if "us_per_token" in r}
    lo = [L for L in sorted(pts) if L >= FLAT_LO] or sorted(pts)
    hi = [L for L in sorted(pts) if L <= FLAT_HI]
    if not lo or not hi or hi[-1] <= lo[0]:
        return None
    return pts[hi[-1]] / pts[lo[0]], lo[0], hi[-1]


def sweep_section(by, out, lines, target):
    lines += ["### Forward + backward per token against L (one layer of grassmann-6L's size: d 256)", "",
              "`grassflow bench mixer` (best of the reps) and the PyTorch twin's layer, batch 1. Memory rule: "
              "grassflow skips a length whose estimated bytes (the layer's activations and scratch, its input, "
              "output and input gradient) exceed the budget (4 GiB); the PyTorch twin, whose memory cannot be "
              "asked beforehand, skips a length when the growth of its peak memory so far, scaled by the square "
              "of the length ratio, would exceed it. *Flat*: for a `linear` mixer, the time per token at L = %d "
              "within %gx of that at L = %d." % (FLAT_HI, FLAT_NEED, FLAT_LO), "",
              "| mixer | L | grassflow us/token | grassflow bytes/token | PyTorch us/token | ratio |",
              "|---|---|---|---|---|---|"]
    series, flat_rows = [], []
    for k, (label, e) in enumerate(entries(by)):
        g, p = sweep_points(by, label, "grassflow"), sweep_points(by, label, "pytorch")
        if not g:
            continue
        lines += sweep_rows(label, g, p)
        for impl, pts, dash in (("grassflow", g, None), ("PyTorch", p, "6,4")):  # a mixer's two lines in its colour
            series += [{"series": "%s (%s)" % (label, impl), "x": r["seq_len"], "y": r["us_per_token"], "dash": dash,
                        "colour": PALETTE[k % len(PALETTE)]} for r in pts if "us_per_token" in r]
        fr = flat_ratio(g)
        if "linear" in flags(e) and fr:
            flat_rows.append("| %s | %.2fx (L %d over %d) | %s |" % (label, fr[0], fr[2], fr[1], verdict(fr[0] <= FLAT_NEED)))
            target("%s time/token flat in L, L=%d over L=%d" % (label, fr[2], fr[1]), FLAT_NEED, fr[0], "x", True)
        elif fr:
            flat_rows.append("| %s | %.2fx (L %d over %d) | (not linear: no target) |" % (label, fr[0], fr[2], fr[1]))
    if series:
        plot(out + "/mixer.svg", series, title="Mixer forward+backward time per token vs L (solid grassflow, dashed PyTorch)",
             xlabel="sequence length", ylabel="microseconds per token", logx=True, logy=True)
        lines += ["", "![time per token vs L, every mixer](mixer.svg)", ""]
    if flat_rows:
        lines += ["Flat in L (target for `linear` mixers: <= %gx):" % FLAT_NEED, "",
                  "| mixer | time per token, long over short | target |", "|---|---|---|"] + flat_rows + [""]


def failures(by, lines):
    """Every measurement whose command failed (bench/run.sh's measure): the run went on without it."""
    rows = ["| %s | %s | %s |" % (c, impl, md_cell(r["failed"])) for c, d in by.items() for impl, r in d.items() if "failed" in r]
    if rows:
        lines += ["## Measurements that failed", "", "| case | side | |", "|---|---|---|"] + rows + [""]


def mixer_sections(by, out, lines, target):
    failures(by, lines)
    if not entries(by):
        return
    list_section(by, lines)
    train_section(by, lines, target)
    sweep_section(by, out, lines, target)


def g_cross(by, lines, target):
    """The earlier speed issue's Grassmann-mixer targets, from the sweep's grassmann line."""
    g = {r["seq_len"]: r for r in sweep_points(by, "grassmann", "grassflow") if "us_per_token" in r}
    if not g:
        return
    Ls = sorted(L for L in g if L <= FLAT_HI)
    target("Grassmann mixer time/token, L=%d over L=%d" % (Ls[-1], Ls[0]), 1.25,
           g[Ls[-1]]["us_per_token"] / g[Ls[0]]["us_per_token"], "x", True)
    target("Grassmann mixer memory/token, L=%d over L=%d (flat)" % (Ls[-1], Ls[0]), 1.0,
           g[Ls[-1]]["bytes_per_token"] / g[Ls[0]]["bytes_per_token"], "x", True)
    pt = {r["seq_len"]: r["us_per_token"] for r in sweep_points(by, "grassmann", "pytorch") if "us_per_token" in r}
    worst = min((pt[L] / g[L]["us_per_token"] for L in Ls if L in pt), default=None)
    target("Grassmann mixer vs PyTorch twin, every length (worst)", 3.0, worst)
    a = {r["seq_len"]: r["us_per_token"] for r in sweep_points(by, "attention", "grassflow") if "us_per_token" in r}
    cross = [L for L in sorted(g) if L in a and a[L] > g[L]["us_per_token"]]
    lines += ["Crossover: the Grassmann mixer is cheaper than attention per token from L = %s on (of the lengths "
              "measured)." % (cross[0] if cross else "none measured"), ""]


def stream_points(by, label):
    c = by.get("stream " + label, {}).get("grassflow")
    far = by.get("stream %s far" % label, {}).get("grassflow")
    return (c or {}).get("results", []) + (far or {}).get("results", [])


def stream_section_rows(by, lines):
    """The table rows and the plot series; the state target for `linear` causal mixers."""
    series_state, series_speed, rows, marks = [], [], [], []
    for k, (label, e) in enumerate(entries(by)):
        pts = stream_points(by, label)
        skipped = by.get("streamskip " + label, {}).get("", {}).get("skipped")
        if skipped:
            rows.append("| %s | | | | skipped: %s | |" % (label, md_cell(skipped)))
        if not pts:
            continue
        for x in pts:
            rows.append("| %s | %d | %.1f | %.0f | %s | %.1f MB |" % (label, x["position"], x["tokens_per_s"],
                        x["us_per_token"], human(x["state_bytes"]), x["rss_bytes"] / 1e6))
        colour = PALETTE[k % len(PALETTE)]
        series_state += [{"series": label, "x": x["position"], "y": max(x["state_bytes"], 1), "colour": colour} for x in pts]
        series_speed += [{"series": label, "x": x["position"], "y": x["us_per_token"], "colour": colour} for x in pts]
        states = {x["state_bytes"] for x in pts}
        span = "%d to %d" % (pts[0]["position"], pts[-1]["position"])
        if "linear" in flags(e):
            marks.append("| %s | flat from position %s | %s | %s |" % (label, span, human(max(states)), verdict(len(states) == 1)))
        else:
            marks.append("| %s | (grows: no target) | %s to %s | |" % (label, human(min(states)), human(max(states))))
    return series_state, series_speed, rows, marks


def stream_sections(by, out, lines):
    series_state, series_speed, rows, marks = stream_section_rows(by, lines)
    if not rows:
        return
    lines += ["## Streaming, every causal mixer (grassmann-small with the mixer, sinusoidal positions, batch 1)", "",
              "`grassflow bench generate`: the context is advanced to each position (not timed), then the next "
              "tokens are timed. A mixer whose state stayed the same size up to position 10,000 is run on to "
              "100,000; one whose state grows (a KV cache) stops at 10,000.", "",
              "| mixer | position | tokens/s | us/token | context state | process RSS |", "|---|---|---|---|---|---|"]
    lines += rows
    if series_state:
        plot(out + "/stream-state.svg", series_state, title="Streaming state vs position", xlabel="position",
             ylabel="state bytes", logx=True, logy=True)
        plot(out + "/stream-speed.svg", series_speed, title="Streaming time per token vs position", xlabel="position",
             ylabel="microseconds per token", logx=True, logy=True)
        lines += ["", "![stream state vs position](stream-state.svg)", "", "![stream time per token](stream-speed.svg)"]
    lines += ["", "State target (`linear` causal mixers: the same bytes at every position):", "",
              "| mixer | needed | state | |", "|---|---|---|---|"] + marks + [""]
    g = {x["position"]: x for x in stream_points(by, "grassmann")}
    if g:
        lo, hi = min(g), max(p for p in g if p <= 10000)
        r = g[hi]["us_per_token"] / g[lo]["us_per_token"]
        lines += ["Grassmann per-token time, position %d over %d: %.2fx (needed <= 1.1x): %s" % (hi, lo, r, verdict(r <= 1.1)), ""]


def timing_section(by, lines):
    rows = [r[""] for c, r in by.items() if c.startswith("timing ") and "" in r]
    if not rows:
        return
    lines += ["## Time the run took", "", "| part | planned | actual |", "|---|---|---|"]
    lines += ["| %s | %d s | %d s |" % (r["phase"], r["planned_s"], r["actual_s"]) for r in rows]
    lines.append("")
