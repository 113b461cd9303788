#!/usr/bin/env bash
# Every relative link and image of the README and docs/ names a file the repository tracks (a figure kept in a
# folder git ignores would show in the author's checkout and nowhere else), and every #anchor one of the
# target's headings.
set -uo pipefail
cd "$(dirname "$0")/../.."
/usr/bin/python3 - <<'PYEOF'
import os, re, subprocess, sys
tracked = set(subprocess.run(["git", "ls-files"], capture_output=True, text=True, check=True).stdout.split("\n"))
dirs = {os.path.dirname(p) for p in tracked}
while True:
    more = {os.path.dirname(d) for d in dirs} - dirs
    if not more: break
    dirs |= more
def anchors(path):
    out = set()
    for line in open(path, encoding="utf-8"):
        m = re.match(r"#+ (.*)", line)
        if m:
            a = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            out.add(a)
    return out
bad, n = [], 0
for md in ["README.md"] + sorted(p for p in tracked if p.startswith("docs/") and p.endswith(".md")):
    text = open(md, encoding="utf-8").read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target): continue  # http:, mailto:
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(os.path.dirname(md), path)) if path else md
        n += 1
        if full not in tracked and full not in dirs:
            bad.append("%s: %s (no such tracked file)" % (md, target)); continue
        if anchor and full.endswith(".md") and anchor not in anchors(full):
            bad.append("%s: %s (no heading #%s)" % (md, target, anchor))
for b in bad: print("  FAIL  " + b)
print("links: %d checked, %d broken" % (n, len(bad)))
sys.exit(1 if bad else 0)
PYEOF
