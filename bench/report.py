"""Turn bench/run.sh's results.jsonl into docs/bench/README.md and its figures (drawn by grassflow plot --table:
scripts/plot_table.py; $GRASSFLOW is the command, bench/run.sh passes the one it measured).
    report.py RESULTS.jsonl OUT LIST [--readme FILE] [--plot-only]
--plot-only draws the figures again from the results and writes nothing else (OUT/README.md is kept: a
superseded run's note written by hand stays)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from report_mixers import g_cross, mixer_sections, stream_sections, timing_section  # noqa: E402
import report_readme  # noqa: E402
from plot_table import plot  # noqa: E402


def load(path):
    rows = [json.loads(l) for l in open(path) if l.strip()]
    by = {}
    for r in rows:
        by.setdefault(r["case"], {})[r.get("impl", "")] = r
    return rows, by


def human(n):
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return ("%d %s" % (n, unit)) if unit == "B" else ("%.1f %s" % (n, unit))
        n /= 1024.0


def twin_env(by):
    for c in by.values():
        if "pytorch" in c and c["pytorch"].get("env"):
            return c["pytorch"]["env"]
    return ""


# perf profiles that bench/run.sh records next to the results (bench/profile.sh), by target
PROFILES = {"char-level Grassmann": "profile-char-grassmann.txt", "char-level Transformer": "profile-char-transformer.txt",
            "threads": "profile-word-grassmann-1-thread.txt", "word-level Grassmann": "profile-word-grassmann.txt",
            "FLOP utilisation, word level B=32 (Grassmann)": "profile-word-grassmann.txt",
            "word-level Transformer": "profile-word-transformer.txt",
            "FLOP utilisation, word level B=32 (Transformer)": "profile-word-transformer.txt"}


def needed_peak(c, need):
    """What a throughput target asks of this machine: the share of the sgemm peak that grassflow's matmuls
    alone would need to run at `need` times PyTorch's tokens/s (its own FLOPs a token, the peak measured
    in the run). Over 100% the target cannot be met on this machine without doing fewer FLOPs."""
    g, p = c.get("grassflow", {}), c.get("pytorch", {})
    if not all(k in g for k in ("gflop_per_step", "batch", "seq_len", "sgemm_peak_gflops")) or "tokens_per_s" not in p:
        return ""
    gflops = need * p["tokens_per_s"] * g["gflop_per_step"] / (g["batch"] * g["seq_len"])
    return " (at %gx PyTorch the whole step must run its matmul FLOPs at %.0f%% of the sgemm peak; now %.0f%%)" % (
        need, 100 * gflops / g["sgemm_peak_gflops"], 100 * g.get("utilisation", 0))


def median(xs):
    xs = sorted(xs)
    return (xs[len(xs) // 2] + xs[(len(xs) - 1) // 2]) / 2 if xs else None


def lowp_rounds(by):
    """{"word grassmann B=32": {"fp32": [tokens/s...], "bf16": [...], "bf16_row": a bf16 result}}: bench/run.sh's
    alternated rounds of grassflow fp32 and bf16 training ("lowp word grassmann B=32 bf16 2")."""
    out = {}
    for case, impls in by.items():
        parts = case.split()
        if parts[0] != "lowp" or "grassflow" not in impls or "tokens_per_s" not in impls["grassflow"]:
            continue
        key, prec = " ".join(parts[1:-2]), parts[-2]
        e = out.setdefault(key, {"fp32": [], "bf16": [], "bf16_row": {}})
        e[prec].append(impls["grassflow"]["tokens_per_s"])
        if prec == "bf16":
            e["bf16_row"] = impls["grassflow"]
    return {k: v for k, v in out.items() if v["fp32"] and v["bf16"]}


def lowp_section(by, lines, target):
    """bf16 training against fp32 and PyTorch's bf16 autocast; int8 and bf16 weights in generation."""
    tr = [c for c in by if c.startswith("train word ") and c.endswith(" bf16")]
    tr += ["train %s bf16" % k for k in lowp_rounds(by) if "train %s bf16" % k not in tr]
    if not tr and not any(c.startswith("generate word-g stream ") for c in by):
        return
    lines += ["## Low precision (docs/precision.md)", "",
              "bf16 training (`train --precision bf16`: bf16 matmuls through oneDNN, fp32 master weights) against "
              "grassflow's fp32 and PyTorch's bf16 autocast (the same oneDNN), word-level 6-layer models; the kernels "
              "are what each side's oneDNN reported." + (
                  " grassflow's fp32 and bf16 runs alternate %d times and the table shows the median of each (its "
                  "fp32 column can differ from the training table's single run)."
                  % max(len(r["bf16"]) for r in lowp_rounds(by).values()) if lowp_rounds(by) else ""), "",
              "| case | grassflow fp32 | grassflow bf16 | bf16 / fp32 | PyTorch fp32 | PyTorch bf16 autocast | "
              "grassflow bf16 / PyTorch bf16 | kernels (grassflow; PyTorch) |", "|---|---|---|---|---|---|---|---|"]
    skipped = by.get("lowp skip bf16", {}).get("", {}).get("skipped")
    if not tr and skipped:  # a CPU without bf16 arithmetic: the table would be empty
        lines.append("| not run: %s | | | | | | | |" % skipped)
    rounds = lowp_rounds(by)
    for case in tr:
        base = case[:-5]
        g16, p16 = by.get(case, {}).get("grassflow", {}), by.get(case, {}).get("pytorch", {})
        g32, p32 = by.get(base, {}).get("grassflow", {}), by.get(base, {}).get("pytorch", {})
        if base[6:] in rounds:  # grassflow's fp32 and bf16 alternated: the median of each
            r = rounds[base[6:]]
            g32, g16 = dict(g32, tokens_per_s=median(r["fp32"])), dict(r["bf16_row"], tokens_per_s=median(r["bf16"]))
        t = lambda r: r.get("tokens_per_s")
        num = lambda v: "%.0f" % v if v else "-"
        rat = lambda a, b: "%.2fx" % (a / b) if a and b else "-"
        kern = "%s; %s" % (g16.get("bf16_kernel", "?"),
                           ", ".join(k for k in p16.get("onednn_kernels", []) if k.startswith("matmul")) or "?")
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            base[6:], num(t(g32)), num(t(g16)), rat(t(g16), t(g32)), num(t(p32)), num(t(p16)), rat(t(g16), t(p16)), kern))
        who = base[11:].split()[0]
        target("bf16 training, word %s B=32: vs grassflow fp32" % who, 1.6, t(g16) and t(g32) and t(g16) / t(g32))
        target("bf16 training, word %s B=32: vs PyTorch bf16 autocast" % who, 1.0, t(g16) and t(p16) and t(g16) / t(p16))
    i8row = by.get("generate word-g stream int8", {}).get("grassflow") or {}
    lines += ["", "Generation, batch 1, at the end of the 128-token window: grassflow's stream with fp32, bf16 and int8 "
              "weights (int8: %s), PyTorch recomputing the window with fp32 weights and with its dynamic "
              "int8 (`torch.quantization.quantize_dynamic` on every nn.Linear; the tied head is not a Linear there)."
              % i8row.get("weights_kernel", "?"), "",
              "| model | stream fp32 | stream bf16 | stream int8 | int8 / fp32 | PyTorch recompute fp32 | PyTorch "
              "dynamic int8 |", "|---|---|---|---|---|---|---|"]
    last = lambda r: r["results"][-1]["tokens_per_s"] if r and r.get("results") else None
    for m in ("g", "t"):
        f32 = last(by.get("generate word-%s stream" % m, {}).get("grassflow"))
        b16 = last(by.get("generate word-%s stream bf16" % m, {}).get("grassflow"))
        i8 = last(by.get("generate word-%s stream int8" % m, {}).get("grassflow"))
        p32 = by.get("generate word-%s" % m, {}).get("pytorch", {}).get("tokens_per_s")
        p8 = by.get("generate word-%s int8" % m, {}).get("pytorch", {}).get("tokens_per_s")
        if not (f32 or b16 or i8):
            continue
        f = lambda v: "%.1f" % v if v else "-"
        lines.append("| word-%s | %s | %s | %s | %s | %s | %s |" % (m, f(f32), f(b16), f(i8),
                                                                 "%.2fx" % (i8 / f32) if i8 and f32 else "-", f(p32), f(p8)))
        target("int8 streaming generation, word-%s: vs grassflow fp32 stream" % m, 3.0, i8 and f32 and i8 / f32)
    lines.append("")


def header_lines(by, out):
    """The page's title and what ran: machine, both sides' environment, the twins. A run written elsewhere
    than docs/bench (--out) says so in its command and links docs/bench/method.md from where it is."""
    m = by.get("machine", {}).get("", {})
    home = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "bench")
    at_home = os.path.isdir(home) and os.path.samefile(out, home)
    where = "" if at_home else " --out %s" % os.path.relpath(out, os.path.join(home, "..", ".."))
    method = os.path.relpath(os.path.join(home, "method.md"), out)
    return ["# grassflow benchmark", "",
             "Made by `bash bench/run.sh%s%s` on %s: %s, %s cores; %s (the OpenBLAS kernel that ran; "
             "fp32 matmuls: %s; OPENBLAS_CORETYPE=%s, OMP_NUM_THREADS=%s for both sides); PyTorch %s. Every figure below comes from "
             "`results.jsonl` in this directory. Throughputs are medians over the timed steps, for both sides. "
             "What runs, the rules (memory, flat, streaming) and the expected time: [method.md](%s)."
             % (" --smoke" if m.get("smoke") else "", where, m.get("date", "?"), m.get("cpu", "?"), m.get("cores", "?"),
                m.get("blas", "?"), m.get("fp32_matmul") or "OpenBLAS (no record: an older grassflow)",
                m.get("openblas_coretype") or "(unset)", m.get("omp_num_threads", "?"), m.get("torch", "?"), method), "",
             "**The PyTorch twins** (bench/torch_bench.py) are the test reference python/grassflow/torch_model.py in float32, "
             "built through its MIXERS table, same configs, shapes and thread count, with two changes: the Grassmann "
             "mixer takes all offsets at once and the mean before the projection, as grassflow does "
             "(`LeanGrassmannMixer`), and attention runs PyTorch's own kernel, 1.13's "
             "`torch.nn.functional._scaled_dot_product_attention` (`LeanSelfAttention`; on the CPU this is PyTorch's "
             "composite matmul-softmax-matmul: 1.13's fused attention kernels are CUDA-only). Both are checked "
             "against the reference at every start; `--twin reference` runs the literal classes. Every other mixer "
             "(window, performer, linformer, the ablations) runs as its reference class: PyTorch 1.13 has no fused "
             "kernel for them. The tables name the classes that ran. PyTorch runs in the best "
             "environment we found for it on this machine: `%s`. Debian's default (pthread OpenBLAS, glibc malloc) "
             "is 1.5-2x slower; see bench/run.sh for the measurements behind each setting."
             % (twin_env(by) or "default"), ""]


def twin_ratio(by, case):
    """(grassflow, PyTorch) tokens/s of a case, or None. An fp32-fast case ("... fp32-fast") is held to the
    PyTorch run of its fp32 case."""
    c = by.get(case, {})
    twin = by.get(case[:-len(" fp32-fast")], {}) if case.endswith(" fp32-fast") else c
    if "tokens_per_s" in c.get("grassflow", {}) and "tokens_per_s" in twin.get("pytorch", {}):
        return c["grassflow"]["tokens_per_s"], twin["pytorch"]["tokens_per_s"]
    return None


def training_section(by, out, lines):
    """The training table (fp32 cases) and its bar plot."""
    ratio = lambda case: twin_ratio(by, case)
    if any(c.startswith("train ") for c in by):
        lines += ["## Training throughput (tokens/s, forward + backward + AdamW)", "",
                  "| case | grassflow | PyTorch | ratio | grassflow matmul GFLOP/s | sgemm peak | utilisation |",
                  "|---|---|---|---|---|---|---|"]
    bars = []
    for case in [c for c in by if c.startswith("train ") and not c.endswith(" bf16")]:
        r = ratio(case)
        if not r:
            continue
        g = by[case]["grassflow"]
        lines.append("| %s | %.0f | %.0f | %.2fx | %.1f | %.1f | %.0f%% |" % (
            case[6:], r[0], r[1], r[0] / r[1], g["gflops"], g["sgemm_peak_gflops"], 100 * g["utilisation"]))
        group = case[6:].replace("grassmann", "G").replace("transformer", "T").replace("fp32-fast", "fast")
        bars += [{"group": group, "series": "grassflow", "y": r[0], "colour": "#2b7bba"},
                 {"group": group, "series": "PyTorch", "y": r[1], "colour": "#aaaaaa"}]
    if bars:
        plot(out + "/train.svg", bars, kind="bars", title="Training tokens/s, grassflow vs PyTorch (same machine, same run)",
             ylabel="tokens/s")
        lines += ["", "![training throughput](train.svg)", ""]



def speed_targets(by, target, targets):
    """The speed issue's targets: word and character level against PyTorch, FLOP utilisation, threads."""
    ratio = lambda case: twin_ratio(by, case)
    for B in (8, 32):
        r = ratio("train word grassmann B=%d" % B)
        target("word-level Grassmann B=%d vs PyTorch" % B, 1.5, r and r[0] / r[1], case="train word grassmann B=%d" % B)
        r = ratio("train word transformer B=%d" % B)
        target("word-level Transformer B=%d vs PyTorch" % B, 1.2, r and r[0] / r[1], case="train word transformer B=%d" % B)
    r = ratio("train char grassmann")
    target("char-level Grassmann vs PyTorch", 3.0, r and r[0] / r[1], case="train char grassmann")
    r = ratio("train char transformer")
    target("char-level Transformer vs PyTorch", 2.0, r and r[0] / r[1], case="train char transformer")
    for kind, need in (("Grassmann", 3.0), ("Transformer", 2.0)):
        case = "train char %s fp32-fast" % kind.lower()
        r = ratio(case)
        if r:
            target("char-level %s vs PyTorch, --precision fp32-fast" % kind, need, r[0] / r[1])
    machine = by.get("machine", {}).get("", {})
    if machine.get("avx512") is False:  # an AVX2-only CPU: issue 50's targets, fp32-fast allowed
        for case, name, need in (("train word grassmann B=8", "word-level Grassmann B=8", 2.0),
                                 ("train word transformer B=8", "word-level Transformer B=8", 1.2),
                                 ("train char grassmann", "char-level Grassmann", 2.5),
                                 ("train char transformer", "char-level Transformer", 1.5)):
            got = [(r[0] / r[1], c) for c in (case, case + " fp32-fast") for r in [ratio(c)] if r]
            best = max(got) if got else None
            target("AVX2 CPU: %s vs PyTorch, the better of fp32 and fp32-fast%s"
                   % (name, " (%s)" % best[1][6:] if best else ""), need, best and best[0], case=best[1] if best else case)
    g32 = by.get("train word grassmann B=32", {}).get("grassflow")
    target("FLOP utilisation, word level B=32 (Grassmann)", 70, g32 and 100 * g32["utilisation"], "%")
    t32 = by.get("train word transformer B=32", {}).get("grassflow")
    target("FLOP utilisation, word level B=32 (Transformer)", 70, t32 and 100 * t32["utilisation"], "%")
    one = [c for c in by if c.endswith("1 thread")]
    if one:
        b = one[0].split("B=")[1].split()[0]
        two = by.get("train word grassmann B=%s" % b, {}).get("grassflow")
        got1 = by[one[0]].get("grassflow")
        target("threads 1 -> 2 speed-up (training, word Grassmann B=%s)" % b, 1.7,
               two and got1 and two["tokens_per_s"] / got1["tokens_per_s"])
        t2, t1 = by.get("train word grassmann B=%s" % b, {}).get("pytorch"), by[one[0]].get("pytorch")
        if t1 and t2:
            targets.append("| (for reference: PyTorch's own 1 -> 2 thread speed-up, same case) | | %.2fx | |"
                           % (t2["tokens_per_s"] / t1["tokens_per_s"]))


def anchor_section(by):
    """The throughput targets judged against the issue's anchor figures (PyTorch measured earlier)."""
    # the anchors: PyTorch figures measured earlier on this kind of machine with its own twin
    anchors = {"train word grassmann B=8": 1070, "train word grassmann B=32": 1270, "train word transformer B=8": 1680,
               "train word transformer B=32": 1890, "train char grassmann": 8800, "train char transformer": 11200}
    need = {"grassmann": {"word": 1.5, "char": 3.0}, "transformer": {"word": 1.2, "char": 2.0}}
    anchor_rows = []
    for case, ref in anchors.items():
        g = by.get(case, {}).get("grassflow")
        if not g:
            continue
        kind = "grassmann" if "grassmann" in case else "transformer"
        lvl = "word" if " word " in case else "char"
        r = g["tokens_per_s"] / ref
        anchor_rows.append("| %s | %.0f | %d | %.2fx | >= %gx | %s |" % (case[6:], g["tokens_per_s"], ref, r, need[kind][lvl],
                                                                        "met" if r >= need[kind][lvl] else "**not met**"))
    return anchor_rows


def main():
    res_path, out = sys.argv[1], sys.argv[2]
    rows, by = load(res_path)
    lines = header_lines(by, out)
    targets, missed = [], []
    training_section(by, out, lines)

    def target(name, need, got, unit="x", at_most=False, case=None):
        ok = got is not None and (got <= need if at_most else got >= need)
        verdict = "met" if ok else "**not met**" if got is not None else "not measured in this run"
        if case and got is not None and not ok:
            verdict += needed_peak(by.get(case, {}), need)
        if not ok:
            prof = [f for k, f in PROFILES.items() if name.startswith(k) and os.path.exists(os.path.join(out, f))]
            if prof:
                verdict += " (profile: [%s](%s))" % (prof[0], prof[0])
        targets.append("| %s | %s %g%s | %s | %s |" % (name, "<=" if at_most else ">=", need, unit,
                                                        "n/a" if got is None else "%.2f%s" % (got, unit), verdict))
        if got is not None and not ok:
            missed.append("%s (%.2f%s, needed %s %g%s)" % (name, got, unit, "<=" if at_most else ">=", need, unit))

    speed_targets(by, target, targets)

    mixer_sections(by, out, lines, target)
    g_cross(by, lines, target)
    gen = ["## Generation (batch 1)", "",
              "Word-level 6-layer models at the end of their 128-token window: grassflow recomputing the window "
              "per token (as the PyTorch twin does), and grassflow streaming (src/infer/stream.c).", "",
              "| model | grassflow stream tokens/s | grassflow recompute tokens/s | PyTorch recompute tokens/s |",
              "|---|---|---|---|"]
    if "generate word-g" in by:
        lines += gen
    for m in [x for x in ("g", "t") if "generate word-%s" % x in by]:
        c, st = by.get("generate word-%s" % m, {}), by.get("generate word-%s stream" % m, {}).get("grassflow")
        tps = lambda r: r["results"][-1]["tokens_per_s"] if r and r.get("results") else float("nan")
        lines.append("| word-%s | %.1f | %.1f | %.1f |" % (m, tps(st), tps(c.get("grassflow")),
                                                         c.get("pytorch", {}).get("tokens_per_s", float("nan"))))
    lines.append("")
    lowp_section(by, lines, target)
    stream_sections(by, out, lines)
    lines.append("")
    anchor_rows = anchor_section(by)
    lines += ["", "## Targets of the speed issue (against the PyTorch twin measured in this run)", "",
              "| target | needed | measured | |", "|---|---|---|---|"] + targets
    lines += [] if not anchor_rows else ["", "## The same throughput targets against the issue's anchor figures", "",
              "The speed issue quotes PyTorch figures measured earlier on this kind of machine with its own twin. "
              "They are judged here too, so that a twin slower than the issue's cannot flatter us.", "",
              "| case | grassflow tokens/s | anchor tokens/s | ratio | needed | |", "|---|---|---|---|---|---|"] + anchor_rows
    timing_section(by, lines)
    if "--plot-only" in sys.argv:  # the figures above, drawn again; no text
        return
    open(out + "/README.md", "w").write("\n".join(lines) + "\n")
    if "--readme" in sys.argv:  # bench/run.sh's full run: docs/performance.md's table from the same results
        path = sys.argv[sys.argv.index("--readme") + 1]
        if not report_readme.update(path, report_readme.block(by, lowp_rounds, median, missed)):
            print("report.py: %s has no %s ... %s markers; its table was not written" % (
                path, report_readme.BEGIN, report_readme.END), file=sys.stderr)


if __name__ == "__main__":
    main()
