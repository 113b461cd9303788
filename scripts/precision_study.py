"""scripts/precision_study.sh's tables: `status OUT` and `docs OUT FILE` (FILE: docs/precision.md, whose text between
the two markers below is replaced, or for --quick a page of its own)."""
import json
import os
import re
import statistics as st
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from escape import md_cell  # noqa: E402  (generated text: <unk> is not an HTML tag)

BEGIN, END = "<!-- precision-quality -->", "<!-- /precision-quality -->"
PROMPTS = ["The history of", "In 1995 , the", "The album was"]
NEED = {"bf16": 0.2, "int8": 1.0}  # the bounds: % change of the validation perplexity from fp32


def read(p):
    return open(p).read().strip() if os.path.exists(p) else ""


def summary(out, prec):
    p = os.path.join(out, prec, "summary.json")
    return json.load(open(p)) if os.path.exists(p) else None


def runs(s):
    return [r for m in s["models"] for r in m["runs"] if r.get("status") == "done"] if s else []


def score(out, w):
    p = os.path.join(out, "score-%s.json" % w)
    return json.load(open(p)) if os.path.exists(p) else None


def state(out):
    rows = []
    for prec in ("fp32", "bf16"):
        s = summary(out, prec)
        rows.append(("train " + prec, "done" if s and s.get("complete") else
                     "%d of 2 seeds done" % len(runs(s)) if s else "not started"))
    for w in ("fp32", "bf16", "int8"):
        n = sum(os.path.exists(os.path.join(out, "greedy-%s-%d.txt" % (w, i))) for i in range(len(PROMPTS)))
        rows.append(("score " + w, "done" if score(out, w) and n == len(PROMPTS) else "not done"))
    return rows


def cmd_status(out):
    rows = state(out)
    for what, s in rows:
        print("%-12s %s" % (what, s))
    left = sum(s != "done" for _, s in rows)
    print("\n%d of %d steps left (%s)" % (left, len(rows), out))
    return 0


def cpu_of(out, prec):
    """the CPU the run's table names (compare writes "machine: ..., CPU NAME"), or "-" """
    try:
        for line in open(os.path.join(out, prec + ".table")):
            if line.startswith("machine:") and "CPU " in line:
                return line.split("CPU ", 1)[1].strip()
    except OSError:
        pass
    return "-"


def training_table(out):
    lines = ["| precision | val ppl, seed 1 | seed 2 | mean ± sd | test ppl (mean) | training tokens/s (mean) | on |",
             "|---|---|---|---|---|---|---|"]
    means = {}
    for prec in ("fp32", "bf16"):
        s = summary(out, prec)
        rs = {r["seed"]: r for r in runs(s)}
        if not rs:
            lines.append("| %s | - | - | - | - | - | - |" % prec)
            continue
        val = [rs[k]["val"] for k in sorted(rs)]
        means[prec] = val
        sd = " ± %.2f" % st.stdev(val) if len(val) > 1 else ""
        cell = lambda k: "%.2f" % rs[k]["val"] if k in rs else "-"
        lines.append("| %s | %s | %s | %.2f%s | %.2f | %.0f | %s |" % (
            prec, cell(1), cell(2), st.mean(val), sd, st.mean(r["test"] for r in rs.values()),
            st.mean(r["tokens_per_s"] for r in rs.values()), cpu_of(out, prec)))
    verdict = ""
    if len(means.get("fp32", [])) == 2 and len(means.get("bf16", [])) == 2:
        spread = abs(means["fp32"][0] - means["fp32"][1])
        diff = abs(st.mean(means["bf16"]) - st.mean(means["fp32"]))
        verdict = ("bf16's mean validation perplexity is %.2f from fp32's, and fp32's two seeds are %.2f apart: "
                   "**%s** the fp32 run's seed spread." % (diff, spread, "within" if diff <= spread else "not within"))
    return lines, verdict


def weights_table(out):
    lines = ["| weights | validation ppl (eval --stream) | change from fp32 | bound | |", "|---|---|---|---|---|"]
    base = score(out, "fp32")
    for w in ("fp32", "bf16", "int8"):
        s = score(out, w)
        if not s:
            lines.append("| %s | not scored yet | | | |" % w)
            continue
        if w == "fp32" or not base:
            lines.append("| %s | %.4f | | | |" % (w, s["ppl"]))
            continue
        ch = 100 * (s["ppl"] / base["ppl"] - 1)
        lines.append("| %s | %.4f | %+.3f%% | %.1f%% | %s |" % (w, s["ppl"], ch, NEED[w],
                                                              "met" if abs(ch) <= NEED[w] else "**not met**"))
    return lines


def words_after(text, prompt):
    return text[len(prompt):].split() if text.startswith(prompt) else text.split()


def greedy_table(out):
    lines = ["| prompt | continuation (fp32, greedy) | bf16: words equal to fp32's | int8: words equal to fp32's |",
             "|---|---|---|---|"]
    for i, prompt in enumerate(PROMPTS):
        texts = {w: read(os.path.join(out, "greedy-%s-%d.txt" % (w, i))) for w in ("fp32", "bf16", "int8")}
        if not texts["fp32"]:
            continue
        ref = words_after(texts["fp32"], prompt)

        def same(w):
            if not texts[w]:
                return "-"
            got = words_after(texts[w], prompt)
            k = next((j for j, (a, b) in enumerate(zip(ref, got)) if a != b), min(len(ref), len(got)))
            return "all %d" % len(ref) if k == len(ref) == len(got) else "the first %d of %d" % (k, len(ref))
        lines.append("| %s | %s | %s | %s |" % (md_cell(prompt), md_cell(" ".join(ref)), same("bf16"), same("int8")))
    return lines


def curve_gap(out):
    """The largest |bf16 loss - fp32 loss| at a logged training step, over both seeds; None without runs."""
    model, gaps = os.environ.get("MODEL", "grassmann-6L"), []
    for seed in (1, 2):
        loss = {}
        for prec in ("fp32", "bf16"):
            p = os.path.join(out, prec, model, "seed-%d" % seed, "metrics.jsonl")
            if os.path.exists(p):
                rows = (json.loads(l) for l in open(p) if l.strip())
                loss[prec] = {r["step"]: r["loss"] for r in rows if r.get("type") == "train"}
        if len(loss) == 2:
            gaps += [abs(loss["bf16"][k] - loss["fp32"][k]) for k in loss["fp32"] if k in loss["bf16"]]
    return max(gaps) if gaps else None


def cmd_docs(out, path):
    tl, verdict = training_table(out)
    cmds = [read(os.path.join(out, f)) for f in ("fp32.command", "bf16.command", "score-fp32.command",
                                                  "score-bf16.command", "score-int8.command", "greedy.command")]
    left = [w for w, s in state(out) if s != "done"]
    body = ["### Quality (scripts/precision_study.sh)", "",
            "Written by `bash scripts/precision_study.sh docs` from %s%s." % (
                out, "" if not left else "; **not finished**: %s left (the tables show what has run)" % ", ".join(left)),
            "", "**bf16 training**: WikiText-2 words, %s, one epoch, seeds 1 and 2, in fp32 and with `--precision bf16`; "
            "validation perplexity of each run's best checkpoint." % os.environ.get("MODEL", "grassmann-6L"), ""] + tl
    body += ["", verdict] if verdict else []
    gap = curve_gap(out)
    if gap is not None:
        body += ["", "![training loss of the four runs](precision/bf16-training.svg)", "",
                 "The training losses of the four runs (docs/precision/bf16-training.svg): at the steps logged, a bf16 "
                 "run's loss is at most %.4f from its fp32 twin's (same seed)." % gap]
    body += ["", "The tokens/s are each run's own wall-clock rate on the CPU its row names, not a benchmark: the runs "
             "may have run on different machines, or shared one (the throughput tables above are `bench`'s)."]
    body += ["", "**bf16 and int8 weights in generation**: the fp32 run's seed-1 checkpoint, scored on the validation "
             "split one token at a time by the streaming engine with each kind of weights; the bounds are the issue's.",
             ""] + weights_table(out)
    body += ["", "Greedy continuations (`generate --temperature 0`) of the same checkpoint with each kind of weights:",
             ""] + greedy_table(out)
    body += ["", "A model one epoch in repeats a few frequent words, so equal greedy texts are weaker evidence than "
             "the perplexities above."]
    body += ["", "```sh"] + [c for c in cmds if c] + ["```"]
    text = "\n".join(body)
    if os.path.basename(path) == "precision.md":
        src = open(path).read()
        pat = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
        if not pat.search(src):
            print("precision_study: %s has no %s ... %s markers" % (path, BEGIN, END), file=sys.stderr)
            return 1
        open(path, "w").write(pat.sub(lambda _: BEGIN + "\n" + text + "\n" + END, src))
    else:
        open(path, "w").write(text + "\n")
    print("precision_study: wrote %s" % path, file=sys.stderr)
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "status":
        sys.exit(cmd_status(sys.argv[2]))
    if len(sys.argv) >= 4 and sys.argv[1] == "docs":
        sys.exit(cmd_docs(sys.argv[2], sys.argv[3]))
    print("usage: precision_study.py status OUT | docs OUT FILE", file=sys.stderr)
    sys.exit(2)
