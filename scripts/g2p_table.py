#!/usr/bin/env python3
"""The G2P study's table (scripts/g2p_study.sh sync): one row per run of runs/g2p-study/NAME-sSEED/, then each
family's mean over its seeds. A run still training shows how far it got and its best validation loss so far;
its test columns stay empty until g2p_study.sh score has scored its best checkpoint. Then the ensembles
(runs/g2p-study/ensemble+RUN+RUN..., g2p_study.sh ensemble): their members and test scores."""
import json
import os
import statistics
import sys


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def test_scores(folder, out):
    """The folder's test-beam1.json and test-beam5.json (those there) into out's wer1, per1, wer5, per5 (%)."""
    for beam in (1, 5):
        p = os.path.join(folder, "test-beam%d.json" % beam)
        if os.path.exists(p):
            with open(p) as f:
                t = json.load(f)
            out["wer%d" % beam], out["per%d" % beam] = 100 * t["wer"], 100 * t["per"]
    return out


def run_row(folder):
    rows = read_jsonl(os.path.join(folder, "metrics.jsonl"))
    evals = [r for r in rows if r.get("type") == "eval"]
    trains = [r for r in rows if r.get("type") == "train"]
    info = {}
    if os.path.exists(os.path.join(folder, "info.json")):
        with open(os.path.join(folder, "info.json")) as f:
            info = json.load(f)
    out = {"params": info.get("params"), "epochs": evals[-1]["epoch"] if evals else 0.0,
           "best_val_ppl": min((e["val_ppl"] for e in evals), default=None),
           "elapsed_s": trains[-1]["elapsed_s"] if trains else None,
           "phonemes": trains[-1].get("phonemes") if trains else None}
    return test_scores(folder, out)


def fmt(x, spec):
    return "" if x is None else format(x, spec)


def hms(s):
    if s is None:
        return ""
    s = int(s)
    return "%dh%02dm" % (s // 3600, s % 3600 // 60)


def main():
    root = sys.argv[1]
    dirs = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    runs = [d for d in dirs if "-s" in d and not d.startswith("ensemble+")]
    table = {d: run_row(os.path.join(root, d)) for d in runs}
    print("| run | parameters | epochs | best valid ppl / phoneme | test WER / PER, greedy | test WER / PER, beam 5 "
          "| training wall (phonemes/s) |")
    print("|---|---|---|---|---|---|---|")
    for d in runs:
        r = table[d]
        rate = r["phonemes"] / r["elapsed_s"] if r["phonemes"] and r["elapsed_s"] else None
        print("| %s | %s | %.2f | %s | %s | %s | %s (%s) |" % (
            d, fmt(r["params"], ","), r["epochs"], fmt(r["best_val_ppl"], ".4f"),
            "" if "wer1" not in r else "%.2f%% / %.2f%%" % (r["wer1"], r["per1"]),
            "" if "wer5" not in r else "%.2f%% / %.2f%%" % (r["wer5"], r["per5"]),
            hms(r["elapsed_s"]), fmt(rate, ".0f")))
    families = sorted({d.rsplit("-s", 1)[0] for d in runs})
    print()
    print("| family | seeds scored | test WER, beam 5 (mean, sd) | test PER, beam 5 (mean, sd) |")
    print("|---|---|---|---|")
    for fam in families:
        scored = [table[d] for d in runs if d.rsplit("-s", 1)[0] == fam and "wer5" in table[d]]
        if not scored:
            continue
        w = [r["wer5"] for r in scored]
        p = [r["per5"] for r in scored]
        sd = (lambda v: " ± %.2f" % statistics.stdev(v) if len(v) > 1 else "")
        print("| %s | %d | %.2f%%%s | %.2f%%%s |" % (fam, len(scored), statistics.mean(w), sd(w), statistics.mean(p),
                                                   sd(p)))
    ensembles = [d for d in dirs if d.startswith("ensemble+")]
    if ensembles:
        print()
        print("| ensemble (its runs' best checkpoints decoding as one) | test WER / PER, greedy | test WER / PER, beam 5 |")
        print("|---|---|---|")
    for d in ensembles:
        r = test_scores(os.path.join(root, d), {})
        print("| %s | %s | %s |" % (" + ".join(d.split("+")[1:]),
                                    "" if "wer1" not in r else "%.2f%% / %.2f%%" % (r["wer1"], r["per1"]),
                                    "" if "wer5" not in r else "%.2f%% / %.2f%%" % (r["wer5"], r["per5"])))


if __name__ == "__main__":
    main()
