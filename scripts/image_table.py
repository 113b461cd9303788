#!/usr/bin/env python3
"""The image study's table (scripts/image_study.sh sync): one row per run of runs/image-study/NAME-sSEED/ and per
linear baseline (linear-sSEED.json), then each model's mean and spread over its seeds, best first, and
accuracy.tsv (each seed's test accuracy, for grassflow plot --table --kind bars) and confusion.svg (the test
confusion matrix of the best model, summed over its scored seeds). A run still training shows how far it got;
its test columns stay empty until image_study.sh has scored its best checkpoint.

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


def seed_key(s):
    """The study's order of seeds: 1234 first, then by number (a name that is no number last)."""
    return (s != "1234", not s.isdigit(), int(s) if s.isdigit() else 0, s)


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
    scores = {}  # model -> {seed: its test accuracy, None while unscored}
    for d, r in runs.items():
        m, seed = d.rsplit("-s", 1)
        scores.setdefault(m, {})[seed] = r["acc"]
    models = {m: list(v.values()) for m, v in scores.items()}
    models["linear (softmax regression)"] = [100 * j["accuracy"] for j in linear.values()]
    seeds = {m: list(v) for m, v in scores.items()}
    seeds["linear (softmax regression)"] = [d.rsplit("-s", 1)[1] for d in linear]
    print("\n| model | seeds scored | test accuracy (mean ± sd) |")
    print("|---|---:|---:|")
    order = sorted(models, key=lambda m: -statistics.mean([x for x in models[m] if x is not None] or [0]))
    for m in order:
        print("| %s | %d | %s |" % (m, sum(x is not None for x in models[m]), mean_sd(models[m])))
    with open(os.path.join(root, "accuracy.tsv"), "w") as f:  # grassflow plot --table --kind bars: each seed a bar
        f.write("group\tseries\ty\n")
        for m in order:
            for seed, x in sorted(zip(seeds[m], models[m]), key=lambda p: seed_key(p[0])):
                if x is not None:
                    f.write("%s\tseed %s\t%.2f\n" % (m.split(" (")[0], seed, x))
    gap_table(scores, [m for m in order if m in scores])
    write_confusion(root, runs, order)


def gap_table(scores, order):
    """Each model's gap to attention, seed by seed (the same seed's runs share their data order and
    initialiser's stream): the mean and spread of the paired differences, over the seeds both have scored.
    scores: model -> {seed: test accuracy or None}; order: the models, best first."""
    base = scores.get("attention", {})
    if not any(x is not None for x in base.values()):
        return
    print("\n| model | seeds paired with attention | gap to attention, test accuracy points (mean ± sd) | each seed |")
    print("|---|---:|---:|---|")
    for m in order:
        seeds = sorted((s for s, x in scores[m].items() if x is not None and base.get(s) is not None), key=seed_key)
        if m == "attention" or not seeds:
            continue
        d = [scores[m][s] - base[s] for s in seeds]
        spread = "" if len(d) < 2 else " ± %.2f" % statistics.stdev(d)
        print("| %s | %d | %+.2f%s | %s |" % (m, len(seeds), statistics.mean(d), spread,
                                               ", ".join("%s: %+.2f" % (s, x) for s, x in zip(seeds, d))))


def confusion_svg(path, title, labels, m):
    """The confusion matrix m (rows: true class, columns: predicted) as an SVG heat map: each cell's count, shaded
    by its share of its row."""
    n, cell, left, top = len(labels), 46, 110, 70
    w, h = left + n * cell + 20, top + n * cell + 90
    esc = lambda t: str(t).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">' % (w, h),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="22" font-size="14">%s</text>' % (left, esc(title))]
    for i in range(n):
        total = sum(m[i]) or 1
        out.append('<text x="%d" y="%d" text-anchor="end">%s</text>' % (left - 6, top + i * cell + cell // 2 + 4, esc(labels[i])))
        for j in range(n):
            share = m[i][j] / total
            shade = int(255 - 200 * share)
            out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="rgb(%d,%d,255)" stroke="#ddd"/>' % (
                left + j * cell, top + i * cell, cell, cell, shade, shade))
            out.append('<text x="%d" y="%d" text-anchor="middle" fill="%s">%d</text>' % (
                left + j * cell + cell // 2, top + i * cell + cell // 2 + 4, "white" if share > 0.5 else "black", m[i][j]))
    for j in range(n):
        x, y = left + j * cell + cell // 2, top + n * cell + 10
        out.append('<text x="%d" y="%d" text-anchor="end" transform="rotate(-45 %d %d)">%s</text>' % (x, y, x, y, esc(labels[j])))
    out.append('<text x="%d" y="%d">predicted (columns) against true class (rows)</text>' % (left, h - 8))
    out.append("</svg>\n")
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(out))
    os.replace(path + ".tmp", path)


def write_confusion(root, runs, order):
    """confusion.svg of the first model in order (best first) that has a scored run: its seeds' matrices summed."""
    for model in order:
        tests = [r["test"] for d, r in runs.items() if d.rsplit("-s", 1)[0] == model and r["test"]]
        if not tests:
            continue
        labels = list(tests[0]["per_class"])
        m = [[sum(t["confusion"][i][j] for t in tests) for j in range(len(labels))] for i in range(len(labels))]
        acc = sum(m[i][i] for i in range(len(labels))) / sum(map(sum, m))
        confusion_svg(os.path.join(root, "confusion.svg"), "%s: test confusion (%d seed%s%s; accuracy %.2f%%)" % (
            model, len(tests), "" if len(tests) == 1 else "s", "" if len(tests) == 1 else ", summed", 100 * acc), labels, m)
        return


if __name__ == "__main__":
    main()
