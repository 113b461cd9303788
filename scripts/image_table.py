#!/usr/bin/env python3
"""The image study's table (scripts/image_study.sh sync): one row per run of runs/image-study/NAME-sSEED/ and per
linear baseline (linear-sSEED.json), then each model's mean and spread over its seeds, best first, and
accuracy.tsv (each seed's test accuracy, for grassflow plot --table --kind bars). A run still training shows
how far it got; its test columns stay empty until image_study.sh has scored its best checkpoint.

    python3 scripts/image_table.py runs/image-study EPOCHS
"""
import json
import os
import statistics
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def run_row(folder):
    with open(os.path.join(folder, "metrics.jsonl")) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    trains = [r for r in rows if r.get("type") == "train"]
    evals = [r for r in rows if r.get("type") == "eval"]
    out = {"epochs": trains[-1]["epoch"] if trains else 0.0,
           "val_acc": max((e["val_acc"] for e in evals), default=None),
           "train_rate": trains[-1]["images"] / trains[-1]["elapsed_s"] if trains and trains[-1]["elapsed_s"] else None,
           "wall": trains[-1]["elapsed_s"] if trains else None}
    for name, key in (("info.json", "info"), ("test.json", "test"), ("infer-b1.json", "b1"), ("infer-b256.json", "b256")):
        p = os.path.join(folder, name)
        out[key] = load(p) if os.path.exists(p) else None
    out["params"] = out["info"]["params"] if out["info"] else None
    out["acc"] = 100 * out["test"]["accuracy"] if out["test"] else None
    return out


def fmt(x, spec):
    return "" if x is None else format(x, spec)


def hms(s):
    return "" if s is None else "%dh%02dm" % (int(s) // 3600, int(s) % 3600 // 60)


def mean_sd(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return ""
    return "%.2f%%" % xs[0] if len(xs) == 1 else "%.2f%% ± %.2f" % (statistics.mean(xs), statistics.stdev(xs))


def main():
    root, epochs = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "?"
    names = sorted(os.listdir(root))
    runs = {d: run_row(os.path.join(root, d)) for d in names if os.path.isdir(os.path.join(root, d)) and "-s" in d}
    linear = {d[:-5]: load(os.path.join(root, d)) for d in names if d.startswith("linear-s") and d.endswith(".json")}
    print("Each run: %s epochs of Fashion-MNIST's 54,000 training images, batch 128 (docs/images.md has the recipe "
          "and the commands).\n" % epochs)
    print("| run | parameters | epochs | best valid acc | test acc | training images/s | inference images/s, "
          "batch 1 / 256 | wall |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for d, r in runs.items():
        b1 = r["b1"]["images_per_s"] if r["b1"] else None
        b256 = r["b256"]["images_per_s"] if r["b256"] else None
        print("| %s | %s | %.2f | %s | %s | %s | %s | %s |" % (
            d, fmt(r["params"], ","), r["epochs"], fmt(r["val_acc"] and 100 * r["val_acc"], ".2f"),
            fmt(r["acc"], ".2f"), fmt(r["train_rate"], ".0f"),
            "" if b1 is None else "%.0f / %.0f" % (b1, b256 or 0), hms(r["wall"])))
    for d, j in linear.items():
        print("| %s | %s | %d | | %.2f | | | %.0fs |" % (d, format(j["parameters"], ","), j["epochs"],
                                                          100 * j["accuracy"], j["seconds"]))
    models = {}
    for d, r in runs.items():
        models.setdefault(d.rsplit("-s", 1)[0], []).append(r["acc"])
    models["linear (softmax regression)"] = [100 * j["accuracy"] for j in linear.values()]
    print("\n| model | seeds scored | test accuracy (mean ± sd) |")
    print("|---|---:|---:|")
    order = sorted(models, key=lambda m: -statistics.mean([x for x in models[m] if x is not None] or [0]))
    for m in order:
        print("| %s | %d | %s |" % (m, sum(x is not None for x in models[m]), mean_sd(models[m])))
    with open(os.path.join(root, "accuracy.tsv"), "w") as f:  # grassflow plot --table --kind bars: each seed a bar
        f.write("group\tseries\ty\n")
        for m in order:
            for k, x in enumerate(x for x in models[m] if x is not None):
                f.write("%s\tseed %d\t%.2f\n" % (m.split(" (")[0], k + 1, x))


if __name__ == "__main__":
    main()
