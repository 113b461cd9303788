"""The performance table of docs/performance.md (linked from the README), written by bench/report.py from the same
results.jsonl as docs/bench, so that it never shows figures of an older run: the text between its two markers is replaced."""
import re

BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


def _tps(by, case, impl):
    return by.get(case, {}).get(impl, {}).get("tokens_per_s")


def _n(v):
    return "{:,.0f}".format(v) if v else "-"


def _pair(vals):
    return " / ".join(_n(v) for v in vals)


def _span(lo, hi, fmt="%.0f"):
    return fmt % lo if fmt % lo == fmt % hi else (fmt + "-" + fmt) % (lo, hi)


def _ratios(gs, ps):
    return " / ".join("%.2fx" % (g / p) if g and p else "-" for g, p in zip(gs, ps))


def _row(label, by, cases):
    gs = [_tps(by, c, "grassflow") for c in cases]
    ps = [_tps(by, c[:-len(" fp32-fast")] if c.endswith(" fp32-fast") else c, "pytorch") for c in cases]
    return "| %s | %s | %s | %s |" % (label, _pair(gs), _pair(ps), _ratios(gs, ps)) if any(gs) else None


def _last(by, case):
    r = by.get(case, {}).get("grassflow")
    return r["results"][-1]["tokens_per_s"] if r and r.get("results") else None


def _stream_sentence(by):
    """The stream far out, from the every-mixer streaming part."""
    def runs(label):
        return [x for c in ("stream " + label, "stream %s far" % label) for x in by.get(c, {}).get("grassflow", {}).get("results", [])]
    g = runs("grassmann")
    if not g:
        return ""
    kb = lambda b: "%.0f KB" % (b / 1024) if b < 1 << 20 else "%.0f MB" % (b / (1 << 20))
    s = ("Streaming `grassmann-small` runs at {:,.0f}-{:,.0f} tokens/s from position {:,} to {:,} with {} of state"
         .format(min(x["tokens_per_s"] for x in g), max(x["tokens_per_s"] for x in g), g[0]["position"], g[-1]["position"],
                 kb(g[-1]["state_bytes"])))
    flat = [(m, runs(m)[-1]["state_bytes"]) for m in ("window", "performer") if runs(m)]
    if flat:
        s += "; %s whatever the position" % " and ".join("%s keeps %s" % (m, kb(b)) for m, b in flat)
    a = runs("attention")
    if len(a) > 1:
        s += ("; attention's KV cache reaches {} at position {:,} and its speed falls {:.0f}-fold"
              .format(kb(a[-1]["state_bytes"]), a[-1]["position"], a[0]["tokens_per_s"] / a[-1]["tokens_per_s"]))
    return s + "."


def block(by, lowp_rounds, median, not_met):
    """The markdown between the markers."""
    m = by.get("machine", {}).get("", {})
    threads = str(m.get("omp_num_threads", ""))
    peaks = [r["sgemm_peak_gflops"] for c in by.values() for r in c.values()
             if isinstance(r, dict) and r.get("sgemm_peak_gflops") and str(r.get("threads")) == threads]
    total = by.get("timing total", {}).get("", {}).get("actual_s")
    utils = [by[c]["grassflow"]["utilisation"] for c in ("train word grassmann B=32", "train word transformer B=32")
             if by.get(c, {}).get("grassflow", {}).get("utilisation")]
    lines = ["Its run of %s (%s, %s cores; %s; fp32 matmuls %s; OPENBLAS_CORETYPE=%s for both sides%s%s):" % (
        m.get("date", "?").replace("T", " ").replace("Z", " UTC"), m.get("cpu", "?"), m.get("cores", "?"), m.get("blas", "?"),
        m.get("fp32_matmul") or "OpenBLAS", m.get("openblas_coretype") or "(unset)",
        "; sgemm peak %s GFLOP/s on %s threads, measured in the run" % (_span(min(peaks), max(peaks)), threads) if peaks else "",
        "; it took %d min %d s" % (total // 60, total % 60) if total else ""), "",
        "| training tokens/s | grassflow | PyTorch | |", "|---|---|---|---|"]
    rows = [("`grassmann-6L`, words, B=8 / 32", ["train word grassmann B=8", "train word grassmann B=32"]),
            ("`transformer-6L`, words, B=8 / 32", ["train word transformer B=8", "train word transformer B=32"]),
            ("char Grassmann / Transformer (d 128, L 256)", ["train char grassmann", "train char transformer"]),
            ("the same, `--precision fp32-fast` (PyTorch: the same runs)",
             ["train char grassmann fp32-fast", "train char transformer fp32-fast"]),
            ("char, d 128, L 1,024: window / performer / linformer", ["mtrain window", "mtrain performer", "mtrain linformer"]),
            ("the same: `plucker: false` / `gate: false`", ["mtrain grassmann-noplucker", "mtrain grassmann-nogate"])]
    lines += [r for r in (_row(label, by, cases) for label, cases in rows) if r]
    rounds = lowp_rounds(by)
    b16 = [median(rounds[k]["bf16"]) if k in rounds else _tps(by, "train %s bf16" % k, "grassflow")
           for k in ("word grassmann B=32", "word transformer B=32")]
    p16 = [_tps(by, "train word %s B=32 bf16" % w, "pytorch") for w in ("grassmann", "transformer")]
    if any(b16):
        lines.append("| bf16, words, B=32: `grassmann-6L` / `transformer-6L` (PyTorch: bf16 autocast) | %s | %s | %s |"
                     % (_pair(b16), _pair(p16), _ratios(b16, p16)))
    gen = []
    for w, name in (("g", "grassmann-6L"), ("t", "transformer-6L")):
        st = [_last(by, "generate word-%s stream%s" % (w, s)) for s in ("", " bf16", " int8")]
        pt = [_tps(by, "generate word-%s%s" % (w, s), "pytorch") for s in ("", " int8")]
        if any(st):
            gen.append("| `%s` | %s | %s |" % (name, _pair(st), _pair(pt)))
    if gen:
        lines += ["", "| generation, batch 1, tokens/s | grassflow stream fp32 / bf16 / int8 weights | PyTorch "
                  "(recomputing the window) fp32 / dynamic int8 |", "|---|---|---|"] + gen
    lines.append("")
    if utils:
        lines.append("fp32 matmuls run at %s%% of the sgemm peak at word level (B=32)." % _span(100 * min(utils), 100 * max(utils)))
    sent = _stream_sentence(by)
    if sent:
        lines.append(sent)
    lines.append("Not met in this run: %s." % "; ".join(not_met) if not_met else "Every target was met in this run.")
    return "\n".join(lines)


def update(path, text):
    """Replace what lies between the markers in the file at path; the file is left alone without them."""
    src = open(path).read()
    pat = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    if not pat.search(src):
        return False
    open(path, "w").write(pat.sub(lambda _: BEGIN + "\n" + text + "\n" + END, src))
    return True
