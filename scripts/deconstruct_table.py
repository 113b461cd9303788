#!/usr/bin/env python3
"""Attention deconstructed (issue 55, docs/search.md): the table of "Deconstructing Attention"'s three findings
(Xue, Moosavi, Aletras, arXiv 2510.11602) from a search of configs/search/deconstruct.json.

    python3 scripts/deconstruct_table.py runs/search/deconstruct/summary.tsv [--margin 5]

Reads the search's summary.tsv (a row per point: its --set keys, the mean validation perplexity over its seeds
and their spread) and prints markdown (a point counts once its status is done): each relaxed principle the search has (a row each; a
point it lists but has not run says "not run"), in every layer and in the hybrid that keeps attention in layers 2
and 4, against full attention, then each finding with the numbers that decide it.
*Decision* (the paper gives no threshold): a variant "matches" attention when its validation perplexity is
within --margin percent of it (default 5), "fails" when it is more than 4 x the margin worse; a finding is
"reproduced" when every variant it names does what it claims, "refuted" when none does, "in part" otherwise.
The third finding is judged on the variants that fail alone; when none does, it is "not decided", with the numbers
of those more than --margin behind alone.
Standard library only."""
import csv
import sys

# each point of deconstruct.json: (mixers, the other --set keys) -> (principle relaxed, hybrid?)
POINTS = {
    ("", ""): ("standard attention", False),
    ("f,f,f,f", "span=1"): ("no mixing (a position sees only itself)", False),
    ("f,f,f,f", ""): ("sequence-independent mixing (fixed-mix)", False),
    ("x,x,x,x", "form=relu"): ("form: relu weights, no softmax", False),
    ("x,x,x,x", "form=sigmoid"): ("form: sigmoid weights", False),
    ("x,x,x,x", "form=l1"): ("form: L1-normalised weights", False),
    ("e,e,e,e", ""): ("queries and keys from the input embeddings (emb-qk)", False),
    ("f,a,f,a", "span=1"): ("no mixing (a position sees only itself)", True),
    ("f,a,f,a", ""): ("sequence-independent mixing (fixed-mix)", True),
    ("x,a,x,a", "form=l1"): ("form: L1-normalised weights", True),
    ("e,a,e,a", ""): ("queries and keys from the input embeddings (emb-qk)", True),
    ("g,a,g,a", "rank=16"): ("Grassmann (rank 16) in the relaxed layers", True),
}
NO_MIX = "no mixing (a position sees only itself)"
RELAXED = ["sequence-independent mixing (fixed-mix)", "form: relu weights, no softmax", "form: sigmoid weights",
           "form: L1-normalised weights", "queries and keys from the input embeddings (emb-qk)"]


def key(point):
    """'set mixers=f,a,f,a, set span=1' -> ('f,a,f,a', 'span=1')"""
    sets = [p.strip() for p in point.split(", set ")] if point.startswith("set ") else []
    sets = [s[4:] if s.startswith("set ") else s for s in sets]
    mixers = next((s.split("=", 1)[1] for s in sets if s.startswith("mixers=")), "")
    return mixers, ",".join(s for s in sets if not s.startswith("mixers="))


def read(path):
    """The finished points' numbers, and every point the search lists (run or not)."""
    rows, listed = {}, set()
    for r in csv.DictReader(open(path), delimiter="\t"):
        k = key(r["point"])
        if r["model"] != "transformer-small" or k not in POINTS:
            continue
        listed.add(POINTS[k])
        if r["status"] == "done" and r["val_mean"] not in ("", "nan"):
            rows[POINTS[k]] = (float(r["val_mean"]), float(r["val_std"] or 0), int(r["seeds"]))
    return rows, listed


def verdict(ok):
    return "reproduced" if all(ok) else "refuted" if not any(ok) else "in part"


def main(argv):
    margin = float(argv[argv.index("--margin") + 1]) if "--margin" in argv else 5.0
    rows, listed = read(argv[1])
    ref = rows.get(("standard attention", False))
    if not ref:
        sys.exit("deconstruct_table.py: %s has no finished 'standard attention' point (the spec's {})" % argv[1])
    gap = lambda v: 100.0 * (v[0] / ref[0] - 1.0)
    def cell(name, hybrid):  # a point of the search: its numbers, or "not run"; not in this search: a dash
        v = rows.get((name, hybrid))
        if not v:
            return "not run" if (name, hybrid) in listed else "-"
        return "%.2f ± %.2f (%+.1f%%, %d seed%s)" % (v[0], v[1], gap(v), v[2], "s"[:v[2] != 1])
    print("| principle relaxed | in every layer | in layers 1 and 3 (attention in 2 and 4) |")
    print("|---|---|---|")
    print("| none: standard attention | %s | - |" % cell("standard attention", False))
    for name in [NO_MIX] + RELAXED + ["Grassmann (rank 16) in the relaxed layers"]:
        if (name, False) in listed or (name, True) in listed:  # a row for each principle the search has
            print("| %s | %s | %s |" % (name, cell(name, False), cell(name, True)))
    print("\nA variant matches attention within %g%% of its validation perplexity and fails beyond %g%%.\n"
          % (margin, 4 * margin))
    nomix = rows.get((NO_MIX, False))
    if nomix:
        g = gap(nomix)  # a failure reproduces it, a match refutes it; between the two it is not decided
        said = ("reproduced" if g > 4 * margin else "refuted" if g <= margin else
                "not decided (no mixing neither matches attention nor fails: between %g%% and %g%%)" % (margin, 4 * margin))
        print("1. *Mixing is indispensable*: %s. Without mixing the perplexity is %+.1f%% of attention's." % (said, g))
    alone = [(n, rows[(n, False)]) for n in RELAXED if (n, False) in rows]
    if alone:
        ok = [gap(v) <= margin for _, v in alone]
        print("2. *The form and the sequence dependence are relaxable*: %s (%d of %d within %g%%: %s)."
              % (verdict(ok), sum(ok), len(ok), margin, "; ".join("%s %+.1f%%" % (n, gap(v)) for n, v in alone)))
    pairs = [(n, rows[(n, False)], rows[(n, True)]) for n in [NO_MIX] + RELAXED  # behind attention alone
             if (n, False) in rows and (n, True) in rows and gap(rows[(n, False)]) > margin]
    said = lambda ps: "; ".join("%s %+.1f%% alone, %+.1f%% in the hybrid" % (n, gap(a), gap(h)) for n, a, h in ps)
    failing = [p for p in pairs if gap(p[1]) > 4 * margin]  # the finding is of variants that fail alone
    if failing:
        print("3. *Variants that fail alone work beside attention*: %s (%s)."
              % (verdict([gap(h) <= margin for _, _, h in failing]), said(failing)))
    elif pairs:
        print("3. *Variants that fail alone work beside attention*: not decided (no variant fails alone, beyond %g%%; "
              "of those more than %g%% behind alone, %d of %d within %g%% in the hybrid: %s)."
              % (4 * margin, margin, sum(gap(h) <= margin for _, _, h in pairs), len(pairs), margin, said(pairs)))
    elif alone:
        print("3. *Variants that fail alone work beside attention*: not tested (no variant with both forms run is "
              "more than %g%% behind attention alone)." % margin)


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        sys.exit(__doc__)
    main(sys.argv)
