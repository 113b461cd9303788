#!/usr/bin/env bash
# Every `build/grassflow` command in the README's sh blocks (and `mpirun ... build/grassflow`), in order, as written, from a scratch folder
# that holds the repository's build/, data/ and configs/ (and a my-text.txt for the command that trains
# on "your own text"):
#   - a quick command runs to the end and must exit 0;
#   - a long job (an --epochs or --steps budget above QUICK_STEPS, a 6L/12L model, a stream 100,000
#     positions out, or eval --stream over a whole split) must still be running, not refused, after START_S seconds; if it trains
#     a tiny or small model whose run a later command reads, it then runs shortened (--steps 2) to make it;
#   - a command that reads a run only a long 6L/12L job makes, or a download (DistilBERT), is listed as
#     not run, with the reason.
# A printf line makes a file as the README shows it. Other lines (make, cc, bash, python) run elsewhere: CI itself, tests/project/install.sh,
# tests/parity/python.sh.
set -uo pipefail
BUILD=${1:-build}
ROOT=$PWD
tmp=$(mktemp -d /tmp/grassflow-readme-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
START_S=${START_S:-4}
# the README's mpirun line as written, here run as root in a container: what OpenMPI asks for that case
# (docs/distributed.md, "On a cluster")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
QUICK_STEPS=400

w="$tmp/w"
mkdir -p "$w/build" "$tmp/home"
ln -s "$ROOT/$BUILD/grassflow" "$w/build/grassflow"
ln -s "$ROOT/data" "$w/data"
ln -s "$ROOT/configs" "$w/configs"
/usr/bin/python3 -c "
import random; random.seed(3); w = 'the cat sat on a mat and then it ran far away from home'.split()
open('$w/my-text.txt', 'w').write(''.join(' '.join(random.choice(w) for _ in range(random.randint(3, 12))) + '\n' for _ in range(4000)))"

# the commands, one per line (continuations joined, comments dropped)
/usr/bin/python3 - "$ROOT/README.md" >"$tmp/cmds" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
for block in re.findall(r"```sh\n(.*?)```", text, re.S):
    for line in block.replace("\\\n", " ").split("\n"):
        line = re.sub(r"\s+#.*$", "", line).strip()
        if line.startswith("build/grassflow ") or (line.startswith("mpirun ") and " build/grassflow " in line):
            print(re.sub(r"\s+", " ", line))
        elif line.startswith("printf "): # a file the commands below read, made as the README makes it
            print(line)
EOF
n=$(wc -l <"$tmp/cmds")
[ "$n" -ge 10 ] && pass "$n grassflow commands in the README" || fail "only $n grassflow commands found in README.md"

# a long job: a budget of many steps or epochs, the paper's models on WikiText-2, or a stream far out
long_job() {
    local c=$1 v
    v=$(grep -oE -- "--epochs [0-9]+" <<<"$c" | awk '{print $2}'); [ -n "$v" ] && [ "$v" -gt 1 ] && return 0
    v=$(grep -oE -- "--steps [0-9]+" <<<"$c" | awk '{print $2}'); [ -n "$v" ] && [ "$v" -gt $QUICK_STEPS ] && return 0
    grep -qE -- "-(6|12)L" <<<"$c" && return 0
    grep -qE -- "--positions [0-9,]*[0-9]{6}" <<<"$c" && return 0
    grep -qE -- "^build/grassflow eval .*--stream" <<<"$c" && return 0 # a whole split, one token at a time
    return 1
}
shorten() { sed -E 's/--epochs [0-9]+/--steps 2/; s/--steps [0-9]+/--steps 2/' <<<"$1"; }

i=0
while IFS= read -r c; do
    i=$((i + 1))
    what="README command $i: ${c:0:150}"
    if [[ $c == printf* ]]; then
        (cd "$w" && bash -c "$c") && pass "$what" || fail "$what"; continue
    fi
    if [[ $c == mpirun* ]] && ! { command -v mpirun >/dev/null && "$ROOT/$BUILD/grassflow" --version | grep -q '^mpi: Open MPI'; }; then
        echo "  --    $what: not run (no mpirun, or this grassflow was built without MPI)"; continue
    fi
    if grep -q "~/distilbert" <<<"$c"; then
        echo "  --    $what: not run (a Hugging Face download; tests/parity/distilbert.sh runs it on a synthetic folder)"; continue
    fi
    if grep -q "~/hub/" <<<"$c"; then
        echo "  --    $what: not run (a Hugging Face download; tests/parity/imports.sh runs it on files written as their code writes them)"; continue
    fi
    need=$(grep -oE -- "(--ckpt|--backbone) runs/[^ ]+" <<<"$c" | awk '{print $2}' | head -1)
    if [ -n "$need" ] && [ ! -e "$w/$need" ]; then
        echo "  --    $what: not run (needs $need, which only a long job above makes)"; continue
    fi
    if long_job "$c"; then
        (cd "$w" && HOME="$tmp/home" timeout "$START_S" bash -c "$c" >"$tmp/out" 2>"$tmp/err"); rc=$?
        # 124: still running when timeout stopped it (a hang looks the same: the short jobs and the tests of
        # each command's own suite are what catch one); 0: it was less long than it looked
        [ $rc = 124 ] && pass "$what: a long job, still running after ${START_S} s" || { [ $rc = 0 ] && pass "$what: a long job, ended within ${START_S} s"; } \
            || { fail "$what: exit $rc: $(head -c 400 "$tmp/err")"; continue; }
        out=$(grep -oE -- "--out runs/[^ ]+" <<<"$c" | awk '{print $2}')
        if [ -n "$out" ] && grep -qE -- "-(tiny|small)" <<<"$c" && grep -q "$out/" "$tmp/cmds"; then
            s=$(shorten "$c")
            (cd "$w" && HOME="$tmp/home" timeout 300 bash -c "$s --force" >"$tmp/out" 2>"$tmp/err") \
                && pass "... shortened to --steps 2, it makes $out for the commands below" \
                || fail "$what shortened: $(head -c 400 "$tmp/err")"
        fi
        continue
    fi
    (cd "$w" && HOME="$tmp/home" timeout 300 bash -c "$c" >"$tmp/out" 2>"$tmp/err"); rc=$?
    [ $rc = 0 ] && pass "$what" || fail "$what: exit $rc: $(head -c 400 "$tmp/err")"
done <"$tmp/cmds"

[ $fails -eq 0 ] && echo "readme: all passed" || { echo "readme: $fails FAILED"; exit 1; }
