"""The communication model of data-parallel training (docs/distributed.md), from bench/mpi_scaling.sh's measurements:
    distributed_model.py MEASURED.json BENCH_RESULTS.jsonl docs/distributed.md
writes the text between the page's <!-- distributed-model --> markers and docs/distributed/scaling.svg (drawn by
grassflow plot --table: scripts/plot_table.py; $GRASSFLOW, else build/grassflow).

Model. Every step, each rank sums the gradient (4 P bytes for P parameters) with the others by a ring allreduce,
which sends and receives 2 (N - 1) / N x 4 P bytes per rank and takes 2 (N - 1) steps of one message latency:
    t_comm(N) = 2 (N - 1) / N x 4 P / W + 2 (N - 1) x ALPHA
on links of W bytes/s. A node computes its step (B = 32 sequences of 128 tokens, 2 cores) in t_c, taken from
`make bench` on this machine. Weak scaling (each node keeps its batch, the global batch grows with N), the
allreduce after the backward (grassflow does not yet overlap them):
    efficiency(N) = t_c / (t_c + t_comm(N)).
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_table import plot  # noqa: E402

ALPHA = 30e-6  # s, one message on a TCP/Ethernet link (an assumption; InfiniBand is nearer 2 us)
LINKS = [("10 Gb/s", 10e9 / 8, "#d62728"), ("25 Gb/s", 25e9 / 8, "#ff7f0e"), ("100 Gb/s", 100e9 / 8, "#2b7bba")]
NODES = [2, 4, 8, 16, 32, 64]
BEGIN, END = "<!-- distributed-model -->", "<!-- /distributed-model -->"


def t_comm(P, N, W):
    return 2.0 * (N - 1) / N * 4.0 * P / W + 2 * (N - 1) * ALPHA


def node_step(bench, case):
    """seconds a step of B=32 L=128 takes on one node (make bench's 2-thread tokens/s)"""
    for l in open(bench):
        d = json.loads(l)
        if d.get("case") == case and d.get("impl") == "grassflow" and d.get("tokens_per_s"):
            return 32 * 128 / d["tokens_per_s"], d
    return None, None


def main(measured, bench, page):
    m = json.load(open(measured))
    P = {a["preset"]: a["floats"] for a in m["allreduce"]}
    lines = ["Made by `bash bench/mpi_scaling.sh` (%s; %s; %s; %s) and `scripts/distributed_model.py`." % (
        m["date"], m["cpu"], m["blas"], m["mpi"]), ""]
    lines += ["**Bytes per step and rank** (a ring allreduce of the fp32 gradient: 2 (N - 1) / N x 4 P; the "
              "allreduce measured on this machine between 2 ranks, through shared memory):", "",
              "| preset | parameters P | gradient | sent and received per rank, N = 2 | N = 64 | allreduce here, 2 ranks |",
              "|---|---|---|---|---|---|"]
    for a in m["allreduce"]:
        p = a["floats"]
        lines.append("| %s | {:,} | %.1f MB | %.1f MB | %.1f MB | %.1f ms |".format(p) % (
            a["preset"], 4 * p / 1e6, 2 * 0.5 * 4 * p / 1e6, 2 * 63 / 64 * 4 * p / 1e6, a["ms"]))
    lines += ["", "**The allreduce on a cluster's links** (model above, ALPHA = %g us a message):" % (ALPHA * 1e6), "",
              "| preset | " + " | ".join("%s, N = 2 / 64" % n for n, _, _ in LINKS) + " |", "|---|" + "---|" * len(LINKS)]
    for a in m["allreduce"]:
        lines.append("| %s | %s |" % (a["preset"], " | ".join(
            "%.0f / %.0f ms" % (1e3 * t_comm(a["floats"], 2, W), 1e3 * t_comm(a["floats"], 64, W)) for _, W, _ in LINKS)))
    series = []
    rows = []
    for preset, case in (("grassmann-6L", "train word grassmann B=32"), ("transformer-6L", "train word transformer B=32")):
        tc, d = node_step(bench, case)
        if tc is None or preset not in P:
            continue
        for name, W, colour in LINKS:
            eff = [tc / (tc + t_comm(P[preset], N, W)) for N in NODES]
            rows.append("| %s | %s | %.2f s | %s |" % (preset, name, tc, " | ".join("%.0f%%" % (100 * e) for e in eff)))
            if preset == "grassmann-6L":
                series += [{"series": "%s, %s" % (preset, name), "x": N, "y": e, "colour": colour} for N, e in zip(NODES, eff)]
    if rows:
        lines += ["", "**Predicted scaling efficiency** (weak scaling: B = 32 a node, each node a 2-core machine like "
                  "this one computing its step in t_c, the time `make bench` measured at B = 32; no overlap of the "
                  "allreduce with the backward):", "",
                  "| preset | links | t_c | " + " | ".join("N = %d" % N for N in NODES) + " |",
                  "|---|---|---|" + "---|" * len(NODES)] + rows
    t = m["train"]
    t1, t2 = t["np1_tokens_per_s"], t["np2_tokens_per_s"]
    step1 = t["batch"] * t["seq_len"] / t1
    ar = next((a["ms"] / 1e3 for a in m["allreduce"] if a["preset"] == t["model"]), None)
    if ar is not None:
        pred = step1 / (step1 / 2 + ar)
        lines += ["", "**Checked on this machine**: %s on WikiText-2, B = %d, L = %d, %d steps, one thread a rank: "
                  "one rank %.0f tokens/s, two ranks %.0f tokens/s, **%.2fx** (the issue's target: 1.8x). The model "
                  "predicts %.2fx: half the one-rank step (%.2f s) on each rank, plus the allreduce measured "
                  "above (%.0f ms)." % (t["model"], t["batch"], t["seq_len"], t["steps"], t1, t2, t2 / t1, pred,
                                        step1, 1e3 * ar)]
        series.append({"series": "measured here (2 ranks, 1 core each)", "x": 2, "y": (t2 / t1) / 2, "colour": "#000000"})
    if series:
        plot(os.path.join(os.path.dirname(page), "distributed", "scaling.svg"), series,
             title="Data-parallel scaling efficiency, grassmann-6L (model)", xlabel="nodes", ylabel="efficiency",
             logx=True, ymin=0.85, ymax=1.0)
        lines += ["", "![scaling efficiency](distributed/scaling.svg)"]
    lines += ["", "```sh"] + m.get("commands", []) + ["```"]
    src = open(page).read()
    pat = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    if not pat.search(src):
        print("distributed_model: %s has no %s ... %s markers" % (page, BEGIN, END), file=sys.stderr)
        return 1
    open(page, "w").write(pat.sub(lambda _: BEGIN + "\n" + "\n".join(lines) + "\n" + END, src))
    print("distributed_model: wrote %s" % page, file=sys.stderr)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print("usage: distributed_model.py MEASURED.json BENCH_RESULTS.jsonl docs/distributed.md", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
