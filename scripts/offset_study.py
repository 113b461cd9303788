"""The offset study's tables (scripts/offset_study.sh): results.tsv -> table.md and the bar charts' tables.

    python3 scripts/offset_study.py OUT/results.tsv OUT [GRID]

results.tsv: name, layer, offset, gate, tokens, loss[, accuracy] (one evaluation a row; "base" is the model as
trained; "tokens" counts a classifier's examples, and its accuracy is the seventh column, "-" for a language
model). Writes OUT/table.md (each evaluation's loss, perplexity or accuracy, and change against base) and the
tables that grassflow plot --table draws: OUT/offsets.tsv, OUT/gates.tsv and, with per-layer rows,
OUT/per-layer.tsv. GRID > 0 (the layers' patch-grid columns): each offset D is also named by its 2-D step
(dr, dc), D = dr GRID + dc with -GRID/2 < dc <= GRID/2, and OUT/neighbours.svg draws each dropped offset's loss
change at its step and at the mirror step around the patch.
"""
import csv
import math
import sys


def step(d, grid):
    """Offset d as (dr, dc) on a grid of `grid` columns (the mixer's rule), or None without a grid."""
    if grid <= 0:
        return None
    dr, dc = divmod(d, grid)
    if dc > grid // 2:
        dr, dc = dr + 1, dc - grid
    return dr, dc


def label(d, grid):
    st = step(int(d), grid)
    return "D = %s" % d if st is None else "D = %s (%d,%+d)" % (d, st[0], st[1])


def classifier(rows):
    return any(r.get("accuracy") not in (None, "", "-") for r in rows)


def main(res, out, grid=0):
    rows = list(csv.DictReader(open(res), delimiter="\t"))
    base = [r for r in rows if r["name"] == "base"]
    if not base:
        sys.exit("offset_study.py: %s has no base row" % res)
    b = float(base[0]["loss"])
    for r in rows:
        r["delta"] = float(r["loss"]) - b
    write_table(rows, b, base[0], out + "/table.md")
    drops = [r for r in rows if r["layer"] == "all"]
    gates = [r for r in rows if r["gate"] not in ("-", "")]
    singles = [r for r in rows if r["layer"] not in ("all", "-") and r["offset"] != "-"]
    write_bars(out + "/offsets.tsv", [(label(r["offset"], grid), "every layer", r["delta"]) for r in drops])
    write_bars(out + "/gates.tsv", [("layer " + r["layer"], "a = 0 (the update alone)" if r["gate"] == "0"
                                     else "a = 1 (no update)", r["delta"]) for r in gates])
    if singles:
        write_bars(out + "/per-layer.tsv", [(label(r["offset"], grid), "layer " + r["layer"], r["delta"]) for r in singles])
    if grid > 0 and drops:
        write_neighbours(out + "/neighbours.svg", [(step(int(r["offset"]), grid), r["delta"]) for r in drops],
                         classifier(rows))


def write_table(rows, b, base, path):
    if classifier(rows):
        a = float(base["accuracy"])
        with open(path, "w") as f:
            f.write("| evaluation | examples | loss | accuracy | loss change | accuracy change (points) |\n"
                    "|---|---:|---:|---:|---:|---:|\n")
            for r in rows:
                f.write("| %s | %s | %.4f | %.2f%% | %+.4f | %+.2f |\n" % (
                    r["name"], r["tokens"], float(r["loss"]), 100 * float(r["accuracy"]), r["delta"],
                    100 * (float(r["accuracy"]) - a)))
        return
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


def write_neighbours(path, cells, per_example):
    """A heat map of the patch's neighbourhood: each dropped offset's loss change at its step (dr, dc) and at
    (-dr, -dc), white for none, red for a loss that rises; the patch itself at the centre."""
    R = max(max(abs(st[0]), abs(st[1])) for st, _ in cells)
    top = max(max(abs(v) for _, v in cells), 1e-12)
    cell, n = 64, 2 * R + 1
    W, H = max(620, 80 + n * cell), 50 + n * cell + 80
    margin = (W - n * cell) // 2
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">'
         % (W, H), '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="22" text-anchor="middle" font-size="14">Loss change when an offset is dropped from every'
         ' layer</text>' % (W // 2)]
    value = {}
    for (dr, dc), v in cells:
        value[(dr, dc)] = value[(-dr, -dc)] = v
    for i in range(n):
        for j in range(n):
            dr, dc = i - R, j - R
            x, y = margin + j * cell, 50 + i * cell
            if (dr, dc) == (0, 0):
                fill, text = "#444444", "patch"
            elif (dr, dc) in value:
                v = value[(dr, dc)]
                t = min(1.0, abs(v) / top)
                g = int(255 * (1 - t))
                fill, text = ("#ff%02x%02x" % (g, g)) if v >= 0 else ("#%02x%02xff" % (g, g)), "%+.4f" % v
            else:
                fill, text = "#eeeeee", ""
            o.append('<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#999999"/>' % (x, y, cell, cell, fill))
            if text:
                colour = "white" if (dr, dc) == (0, 0) else "black"
                o.append('<text x="%d" y="%d" text-anchor="middle" fill="%s">%s</text>' % (
                    x + cell // 2, y + cell // 2 + 4, colour, text))
    unit = "example" if per_example else "token"
    for k, line in enumerate(("rows: dr, columns: dc, in patches from the patch; a cell and its mirror are one offset;",
                              "nats per %s; full red: +%.4f (the largest change), blue: the loss falls; grey: no offset"
                              % (unit, top))):
        o.append('<text x="%d" y="%d" text-anchor="middle">%s</text>' % (W // 2, 50 + n * cell + 30 + 18 * k, line))
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 0)
