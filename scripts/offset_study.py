"""The offset study's tables (scripts/offset_study.sh): results.tsv -> table.md and the bar charts' tables.

    python3 scripts/offset_study.py OUT/results.tsv OUT

results.tsv: name, layer, offset, gate, tokens, loss (one evaluation a row; "base" is the model as trained).
Writes OUT/table.md (each evaluation's loss, perplexity and change against base) and the tables that
grassflow plot --table draws: OUT/offsets.tsv, OUT/gates.tsv and, with per-layer rows, OUT/per-layer.tsv.
"""
import csv
import math
import sys


def main(res, out):
    rows = list(csv.DictReader(open(res), delimiter="\t"))
    base = [r for r in rows if r["name"] == "base"]
    if not base:
        sys.exit("offset_study.py: %s has no base row" % res)
    b = float(base[0]["loss"])
    for r in rows:
        r["delta"] = float(r["loss"]) - b
    write_table(rows, b, out + "/table.md")
    drops = [r for r in rows if r["layer"] == "all"]
    gates = [r for r in rows if r["gate"] not in ("-", "")]
    singles = [r for r in rows if r["layer"] not in ("all", "-") and r["offset"] != "-"]
    write_bars(out + "/offsets.tsv", [("D = " + r["offset"], "every layer", r["delta"]) for r in drops])
    write_bars(out + "/gates.tsv", [("layer " + r["layer"], "a = 0 (the update alone)" if r["gate"] == "0"
                                     else "a = 1 (no update)", r["delta"]) for r in gates])
    if singles:
        write_bars(out + "/per-layer.tsv", [("D = " + r["offset"], "layer " + r["layer"], r["delta"]) for r in singles])


def write_table(rows, b, path):
    with open(path, "w") as f:
        f.write("| evaluation | tokens | loss | ppl | loss change | ppl change |\n|---|---:|---:|---:|---:|---:|\n")
        for r in rows:
            loss = float(r["loss"])
            ratio = math.exp(loss - b)  # a percentage, or a factor when it is over 10 times
            change = "x %.3g" % ratio if ratio > 10 else "%+.1f%%" % (100 * (ratio - 1))
            f.write("| %s | %s | %.4f | %.5g | %+.4f | %s |\n" % (
                r["name"], r["tokens"], loss, math.exp(loss), r["delta"], change))


def write_bars(path, bars):
    with open(path, "w") as f:
        f.write("group\tseries\ty\n")
        for g, s, y in bars:
            f.write("%s\t%s\t%.4f\n" % (g, s, y))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
