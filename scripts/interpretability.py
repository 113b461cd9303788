"""docs/interpretability.md's statistics from grassflow inspect's JSON of many paragraphs
(scripts/interpretability.sh).

    python3 scripts/interpretability.py PARAGRAPHS.jsonl CKPT > OUT/stats.md

Per Grassmann layer, over every paragraph and token: the mean gate a, and that of the 30 most frequent
pieces of these paragraphs (the, commas, of, ...) against the others; each offset's mean share of the mix
and the mean loss change when it is dropped from that layer alone (inspect's drop_delta, a paragraph's
mean over its tokens); the loss change with the gate forced to 0 and to 1; and how often the layer's most
active Pluecker coordinate over a paragraph is the same pair of reduced dimensions.
"""
import collections
import json
import sys


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else float("nan")


def main(path, ckpt):
    docs = [json.loads(line) for line in open(path)]
    freq = collections.Counter(p for d in docs for p in d["pieces"])
    common = {p for p, _ in freq.most_common(30)}
    n_tok = sum(d["tokens"] for d in docs)
    print("%d paragraphs of WikiText-2's raw validation split (%d tokens, the first 80 words of each), read by `%s`"
          " (`grassflow inspect`, `bash scripts/interpretability.sh --ckpt %s`). The 30 most frequent pieces: %s.\n"
          % (len(docs), n_tok, ckpt.split("/")[-2] + "/" + ckpt.split("/")[-1], ckpt,
             " ".join("`%s`" % p for p, _ in freq.most_common(30))))
    layers = [l for l in docs[0]["layers"] if l["kind"] == "grassmann"]
    offsets = layers[0]["offsets"]
    print("| layer | mean gate a | a, 30 most frequent pieces | a, the other pieces | loss change, a = 0 | "
          "loss change, a = 1 | top coordinate, paragraphs agreeing |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for li, l0 in enumerate(layers):
        ls = [d["layers"][l0["layer"]] for d in docs]
        g_all, g_common, g_rest = [], [], []
        for d, l in zip(docs, ls):
            for p, g in zip(d["pieces"], l["gate_mean"]):
                g_all.append(g)
                (g_common if p in common else g_rest).append(g)
        tops = collections.Counter(tuple((c["i"], c["j"])) for c in (l["plucker_top_layer"][0] for l in ls))
        (i, j), k = tops.most_common(1)[0]
        print("| %d | %.3f | %.3f | %.3f | %+.3f | %+.3f | (%d, %d): %d of %d |" % (
            l0["layer"], mean(g_all), mean(g_common), mean(g_rest), mean(l["gate0_delta"] for l in ls),
            mean(l["gate1_delta"] for l in ls), i, j, k, len(ls)))
    print("\nEach offset D, per layer: its mean share of the mix (over the tokens that have a partner t - D) and "
          "the mean loss change when D is dropped from that layer alone (nats per token; positive: D helped).\n")
    print("| layer | " + " | ".join("D = %d share" % o for o in offsets) + " | " +
          " | ".join("D = %d dropped" % o for o in offsets) + " |")
    print("|---|" + "---:|" * (2 * len(offsets)))
    for l0 in layers:
        ls = [d["layers"][l0["layer"]] for d in docs]
        shares = [mean(s[k] for l in ls for s, nv in zip(l["share"], l["n_valid"]) if nv and s[k] > 0)
                  for k in range(len(offsets))]
        drops = [mean(l["drop_delta"][k] for l in ls) for k in range(len(offsets))]
        print("| %d | " % l0["layer"] + " | ".join("%.3f" % s for s in shares) + " | " +
              " | ".join("%+.4f" % x for x in drops) + " |")


if __name__ == "__main__":
    main(*sys.argv[1:3])
