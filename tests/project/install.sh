#!/usr/bin/env bash
# `make install` into a temporary prefix (and a DESTDIR staging), then every program in examples/ built
# against the installed copy with `pkg-config --cflags --libs grassflow` alone (no -Isrc, no build/
# paths), shared and static, and run: the text-generation example must print what grassflow generate
# prints, the plug-in example (custom_mixer) must register its mixer and train it. An example this script
# does not know how to run is a failure. Then the grassflow command itself, its sources built the same way:
# it prints what build/grassflow prints.
set -uo pipefail
BUILD=${1:-build}
GF="$BUILD/grassflow"
PY=/usr/bin/python3
tmp=$(mktemp -d /tmp/grassflow-install-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
P="$tmp/prefix"
ABI=$(sed -n 's/^#define GF_ABI_VERSION \([0-9]*\)/\1/p' include/grassflow.h)

echo "install: make install PREFIX=$P"
if ! make --no-print-directory install BUILD="$BUILD" PREFIX="$P" >"$tmp/make.log" 2>&1; then
    cat "$tmp/make.log"; echo "install: make install FAILED"; exit 1
fi
for f in bin/grassflow lib/libgrassflow.a lib/libgrassflow.so lib/libgrassflow.so.$ABI include/grassflow.h include/grassflow_plugin.h lib/pkgconfig/grassflow.pc \
    lib/pkgconfig/grassflow-static.pc share/grassflow/data/README.md share/grassflow/configs; do
    [ -e "$P/$f" ] && pass "installed $f" || fail "make install did not install $f"
done
readelf -d "$P/lib/libgrassflow.so" | grep "SONAME.*\[libgrassflow\.so\.$ABI\]" >/dev/null && pass "the shared library's soname is libgrassflow.so.$ABI (GF_ABI_VERSION)" || fail "soname: $(readelf -d "$P/lib/libgrassflow.so" | grep SONAME)"
# the library exports what the installed headers declare (the user API, grassflow.h, and the plug-in
# interface, grassflow_plugin.h), each function of them, and nothing else
nm -D --defined-only "$P/lib/libgrassflow.so" | awk '$2 ~ /^[TDBR]$/ {print $3}' | sort >"$tmp/exported"
cat "$P/include/grassflow.h" "$P/include/grassflow_plugin.h" | grep -oE "\bgf_[a-z0-9_]+ *\(" | sed 's/ *($//' | sort -u >"$tmp/declared"
extra=$(comm -23 "$tmp/exported" "$tmp/declared" | head -5 | tr '\n' ' ') missing=$(comm -13 "$tmp/exported" "$tmp/declared" | head -5 | tr '\n' ' ')
[ -z "$extra" ] && [ -z "$missing" ] && [ -s "$tmp/exported" ] \
    && pass "libgrassflow.so exports the $(wc -l <"$tmp/exported") functions the two installed headers declare, and nothing else" \
    || fail "exported but not declared: ${extra:-none}; declared but not exported: ${missing:-none}"
# the naming scheme (docs/api.md): every symbol the static library defines for other files, exported or
# not, starts with gf_ or GF_, so a program that links libgrassflow.a statically meets no clash with its own
bad=$(nm -g --defined-only "$P/lib/libgrassflow.a" 2>/dev/null | awk 'NF == 3 && $3 !~ /^(gf_|GF_)/ {print $3}' | sort -u | head -5 | tr '\n' ' ')
[ -z "$bad" ] && nm -g --defined-only "$P/lib/libgrassflow.a" >/dev/null 2>&1 && pass "libgrassflow.a defines no global symbol outside gf_ / GF_" \
    || fail "libgrassflow.a defines global symbols without the gf_ prefix: $bad(docs/api.md: every one starts with gf_)"
make --no-print-directory install BUILD="$BUILD" DESTDIR="$tmp/stage" PREFIX=/opt/grassflow >/dev/null 2>&1
[ -e "$tmp/stage/opt/grassflow/lib/libgrassflow.so.$ABI" ] && grep -qx 'prefix=/opt/grassflow' "$tmp/stage/opt/grassflow/lib/pkgconfig/grassflow.pc" && [ ! -e /opt/grassflow ] \
    && pass "DESTDIR stages the files; grassflow.pc names the final prefix" || fail "DESTDIR install: $(ls -R "$tmp/stage" | head -20)"

echo "install: pkg-config"
export PKG_CONFIG_PATH="$P/lib/pkgconfig"
cflags=$(pkg-config --cflags grassflow) && libs=$(pkg-config --libs grassflow) && slibs=$(pkg-config --static --libs grassflow-static) \
    && pass "pkg-config grassflow: $cflags $libs" || fail "pkg-config grassflow: $(pkg-config --libs grassflow 2>&1)"
case "$cflags $libs $slibs" in *-Isrc*|*"$BUILD/"*|*"$PWD"*) fail "pkg-config points into the source tree";; *) pass "pkg-config points only at the prefix and the system";; esac
case "$slibs" in *openblas-openmp*-lopenblas*) pass "--static links the OpenMP OpenBLAS";; *) fail "--static libs: $slibs";; esac
case "$slibs" in "$P/lib/libgrassflow.a "*) pass "pkg-config --libs grassflow-static links $P/lib/libgrassflow.a";; *) fail "grassflow-static libs: $slibs";; esac

echo "install: the installed command"
(cd /tmp && env -u GRASSFLOW_DATA "$P/bin/grassflow" data stats --corpus tinyshakespeare --no-cache >"$tmp/ibin.out" 2>"$tmp/ibin.err") \
    && grep -q "train" "$tmp/ibin.out" && pass "$P/bin/grassflow runs from another folder and finds its data in share/grassflow/data" \
    || fail "installed bin/grassflow: $(head -c 400 "$tmp/ibin.err")"
# the tests' fault injection lives in build/grassflow only: the installed command trains through it
FT="--model grassmann-tiny --corpus tinyshakespeare --steps 4 --batch 2 --seq-len 16 --warmup 1 --eval-every 2 --no-cache"
GRASSFLOW_FAULT_NONFINITE=1 "$P/bin/grassflow" train $FT --out "$tmp/nofault" >/dev/null 2>"$tmp/nofault.err" \
    && pass "the installed command ignores GRASSFLOW_FAULT_* (a NaN asked at step 1 is not injected)" \
    || fail "installed command injected a fault: $(head -c 300 "$tmp/nofault.err")"
GRASSFLOW_FAULT_NONFINITE=1 "$BUILD/grassflow" train $FT --out "$tmp/fault" >/dev/null 2>&1 \
    && fail "build/grassflow did not inject the fault the tests rely on" || pass "... while build/grassflow, which the tests run, does"

echo "install: checkpoints for the examples"
$PY -c "
import random; random.seed(2); w = 'the game of café a story ends begins and then'.split()
open('$tmp/small.txt', 'w').write(''.join(' '.join(random.choice(w) for _ in range(random.randint(2, 10))) + '\n' for _ in range(300)))"
"$GF" train --model grassmann-tiny --tokenizer word --corpus "$tmp/small.txt" --steps 3 --batch 4 --seq-len 16 \
    --eval-every 0 --no-cache --out "$tmp/gw" >/dev/null 2>&1 && pass "a word checkpoint" || fail "train a word checkpoint"
CK="$tmp/gw/last.safetensors"

echo "install: every example against the installed library"
mkdir -p "$tmp/src" && cp examples/*.c "$tmp/src/" # built away from the source tree
n_ex=0
for src in "$tmp"/src/*.c; do
    name=$(basename "$src" .c)
    n_ex=$((n_ex + 1))
    case $name in
        stream_generate) args=("$CK" 20 1 2 3) ;;
        generate) args=("$CK" "the game" 40 0) ;;
        train) args=("$tmp/train-run" 12) ;; # a fresh run each time (the static one follows the shared one)
        custom_mixer) args=(40) ;; # registers its own mixer; exits non-zero unless it learns and its checks hold
        *) fail "examples/$name.c: tests/project/install.sh does not know how to run it (add it here)"; continue ;;
    esac
    # shared, then static (libgrassflow.a instead of the .so): each with exactly the build line of the example's
    # first comment (issue 48: custom_mixer.c needed a -lm its documented line lacked), run from its folder; a
    # warning fails it as -Werror would
    lines=$(awk 'NR == 1, /\*\// {print} /\*\// {exit}' "$src" | sed -n 's/^ \*     \(cc .*\)$/\1/p')
    shared_line=$(grep -- "-o $name $name.c " <<<"$lines" | head -1) static_line=$(grep -- "-o $name-static $name.c " <<<"$lines" | head -1)
    if [ -z "$shared_line" ] || [ -z "$static_line" ]; then
        fail "examples/$name.c: its first comment has no build line 'cc ... -o $name $name.c \$(pkg-config ...)' and '-o $name-static'"; continue
    fi
    if ! (cd "$tmp/src" && eval "$shared_line") 2>"$tmp/err" || [ -s "$tmp/err" ]; then
        fail "examples/$name.c: its build line '$shared_line' fails or warns: $(head -c 600 "$tmp/err")"; continue
    fi
    if ! (cd "$tmp/src" && eval "$static_line") 2>"$tmp/err" || [ -s "$tmp/err" ]; then
        fail "examples/$name.c: its static build line '$static_line' fails or warns: $(head -c 600 "$tmp/err")"; continue
    fi
    pass "$name builds with the lines its first comment gives, as written"
    mv "$tmp/src/$name" "$tmp/$name" && mv "$tmp/src/$name-static" "$tmp/$name-static"
    deps=$(LD_LIBRARY_PATH="$P/lib" ldd "$tmp/$name")
    grep -q "libgrassflow.so.$ABI => $P/lib/libgrassflow.so.$ABI" <<<"$deps" && grep -q "openblas-openmp/libopenblas" <<<"$deps" \
        && pass "$name: links $P/lib/libgrassflow.so.$ABI and the OpenMP OpenBLAS" || fail "$name: ldd says $deps"
    ldd "$tmp/$name-static" | grep libgrassflow >/dev/null && fail "$name-static still needs libgrassflow.so" || pass "$name-static: libgrassflow linked in"
    rm -rf "$tmp/train-run"
    LD_LIBRARY_PATH="$P/lib" "$tmp/$name" "${args[@]}" >"$tmp/$name.out" 2>"$tmp/err" && rm -rf "$tmp/train-run" &&
        "$tmp/$name-static" "${args[@]}" >"$tmp/$name-static.out" 2>/dev/null
    [ $? -eq 0 ] && [ -s "$tmp/$name.out" ] && cmp -s "$tmp/$name.out" "$tmp/$name-static.out" \
        && pass "$name runs (shared and static print the same)" || fail "$name: $(head -c 400 "$tmp/err")"
done
[ $n_ex -ge 2 ] && pass "$n_ex examples built and run" || fail "only $n_ex examples found"
# a checkpoint of examples/train (through the library, not grassflow train) works in grassflow generate (issue 48:
# it had no tokenizer, and generate said so without a hint)
rm -rf "$tmp/train-run" && LD_LIBRARY_PATH="$P/lib" "$tmp/train" "$tmp/train-run" 12 >/dev/null 2>&1
"$GF" generate --ckpt "$tmp/train-run/best.safetensors" --prompt "A Causal" --tokens 8 --temperature 0 >"$tmp/exgen.out" 2>"$tmp/err" \
    && grep -q "^A Causal" "$tmp/exgen.out" && pass "grassflow generate reads a checkpoint of examples/train (its byte tokenizer): $(head -c 40 "$tmp/exgen.out" | tr '\n' ' ')" \
    || fail "generate on an examples/train checkpoint: $(head -c 400 "$tmp/err")"
"$GF" generate --ckpt "$CK" --prompt "the game" --tokens 40 --temperature 0 >"$tmp/cli.out" 2>/dev/null
cmp -s "$tmp/cli.out" "$tmp/generate.out" && pass "the installed generate example prints what grassflow generate --temperature 0 prints" \
    || fail "generate example: '$(head -c 200 "$tmp/generate.out")' vs grassflow generate '$(head -c 200 "$tmp/cli.out")'"

# the complete program on grassflow.h's first screen, as written, built against the installed header alone
echo "install: the program of grassflow.h's first screen"
mkdir -p "$tmp/first"
sed -n '/^ \*     #include <stdio.h>/,/^ \*     }$/p' "$P/include/grassflow.h" | sed 's/^ \*     //; s/^ \*$//' >"$tmp/first/first.c"
if [ -s "$tmp/first/first.c" ] && (cd "$tmp/first" && cc -std=c11 -Wall -Wextra -Werror $cflags -o first first.c $libs) 2>"$tmp/err" \
    && (cd "$tmp/first" && LD_LIBRARY_PATH="$P/lib" ./first >out 2>"$tmp/err") \
    && awk '/^step 1: loss/ {a = $4} /^step 20: loss/ {b = $4} END {exit !(a > 0 && b > 0 && b < a)}' "$tmp/first/out" \
    && [ -s "$tmp/first/first.safetensors" ]; then
    pass "grassflow.h's first-screen program builds (-Werror), trains (loss $(tr '\n' ' ' <"$tmp/first/out")) and saves"
else
    fail "grassflow.h's first-screen program: $(head -c 600 "$tmp/err") $(cat "$tmp/first/out" 2>/dev/null)"
fi

# the command-line tool itself: its sources, copied away from the tree, built against the installed header
# and library (pkg-config; the Makefile's -std=c11 -D_GNU_SOURCE; cJSON, which the tool uses itself), then
# run beside build/grassflow: the same output for the same commands, the same checkpoint bytes
echo "install: the grassflow command against the installed library"
mkdir -p "$tmp/cli" && cp src/cli/*.c src/cli/*.h bench/command.c "$tmp/cli/"
IG="$tmp/cli/grassflow"
if (cd "$tmp/cli" && cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror $cflags -o "$IG" ./*.c $libs $(pkg-config --libs libcjson) -lm) 2>"$tmp/err"; then
    pass "src/cli/ builds against the installed headers (grassflow.h, grassflow_plugin.h) and libgrassflow.so alone"
    # (ldd's whole output first: grep -q leaves a pipe early, and under pipefail ldd's SIGPIPE failed the check)
    grep -q "libgrassflow.so.$ABI => $P/lib/libgrassflow.so.$ABI" <<<"$(LD_LIBRARY_PATH="$P/lib" ldd "$IG")" \
        && pass "... and links $P/lib/libgrassflow.so.$ABI" || fail "installed-built grassflow: $(LD_LIBRARY_PATH="$P/lib" ldd "$IG")"
    GFA=$(cd "$(dirname "$GF")" && pwd)/$(basename "$GF") DATA="$PWD/data"
    same() { # same DESCRIPTION ARGS...: both builds, from the same folder, print the same (stdout and stderr)
        local what=$1; shift
        (cd "$tmp" && GRASSFLOW_DATA="$DATA" "$GFA" "$@") >"$tmp/a.out" 2>"$tmp/a.err"; local ra=$?
        (cd "$tmp" && GRASSFLOW_DATA="$DATA" LD_LIBRARY_PATH="$P/lib" "$IG" "$@") >"$tmp/b.out" 2>"$tmp/b.err"; local rb=$?
        [ $ra -eq $rb ] && cmp -s "$tmp/a.out" "$tmp/b.out" && cmp -s "$tmp/a.err" "$tmp/b.err" && [ -s "$tmp/a.out" -o -s "$tmp/a.err" ] \
            && pass "installed-built grassflow $what: prints what $GF prints (exit $ra)" \
            || fail "installed-built grassflow $what: exit $rb vs $ra; '$(head -c 300 "$tmp/b.out") $(head -c 300 "$tmp/b.err")' vs '$(head -c 300 "$tmp/a.out") $(head -c 300 "$tmp/a.err")'"
    }
    same "--version" --version
    same "info" info --model grassmann-tiny --vocab 500
    same "data stats" data stats --corpus small.txt --tokenizer word --no-cache --json
    for b in a b; do
        g=$([ $b = a ] && echo "$GFA" || echo "$IG")
        (cd "$tmp" && LD_LIBRARY_PATH="$P/lib" "$g" train --model grassmann-tiny --tokenizer word --corpus small.txt --steps 4 \
            --batch 4 --seq-len 16 --eval-every 0 --no-cache --out run && mv run "run-$b") >/dev/null 2>"$tmp/train-$b.err"
    done # (one --out for both: the recipe stored in a checkpoint names it)
    cmp -s "$tmp/run-a/last.safetensors" "$tmp/run-b/last.safetensors" \
        && pass "installed-built grassflow train: 4 steps, the same checkpoint bytes as $GF's" \
        || fail "installed-built grassflow train: $(tail -c 300 "$tmp/train-b.err")"
    same "eval" eval --ckpt run-b/last.safetensors --corpus small.txt --no-cache --split test
    same "generate" generate --ckpt run-b/last.safetensors --prompt "the game" --tokens 20 --temperature 0
    same "a usage error" train --model grassmann-tiny --steps -1
    # a task of a program's own (tests/plugins/task_vectors.c, on the public header alone) through the installed library
    IV="$tmp/cli/grassflow-vectors"
    mkdir -p "$tmp/vec" && cp tests/plugins/task_vectors.c "$tmp/cli/" && for s in train valid test; do
        { echo "classes: down up"; for i in $(seq 1 24); do c=$((i % 2)); echo "$([ $c = 1 ] && echo up || echo down) $([ $c = 1 ] && echo '1 0.5 0.8 1.2 0.7 0.9' || echo '-1 -0.5 -0.8 -1.2 -0.7 -0.9')"; done; } >"$tmp/vec/$s.txt"
    done
    if (cd "$tmp/cli" && cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror $cflags -o "$IV" ./*.c $libs $(pkg-config --libs libcjson) -lm) 2>"$tmp/err" &&
        (cd "$tmp" && LD_LIBRARY_PATH="$P/lib" "$IV" train --task vectors --dim 3 --corpus vec --model grassmann-tiny --steps 20 \
            --batch 8 --lr 3e-3 --eval-every 0 --out vrun) >"$tmp/v.out" 2>"$tmp/v.err" && grep -q 'test error rate' "$tmp/v.out"; then
        pass "a task registered by a program of its own (gf_task_register through the installed library) trains: $(grep -o 'test error rate [0-9.]*' "$tmp/v.out")"
    else
        fail "the vectors task through the installed library: $(head -c 400 "$tmp/err") $(tail -c 400 "$tmp/v.err")"
    fi
    # an importer of a program's own (tests/plugins/importer_toy.c: gf_importer_register through the installed library):
    # features --ckpt reads its folder, and a folder it does not claim is refused with the importers listed
    IT="$tmp/cli-toy/grassflow-toy"
    mkdir -p "$tmp/cli-toy" "$tmp/toyckpt" "$tmp/notoy" && cp src/cli/*.c src/cli/*.h bench/command.c tests/plugins/importer_toy.c "$tmp/cli-toy/" \
        && echo "grassmann-tiny 1234" >"$tmp/toyckpt/toy-model.txt"
    if (cd "$tmp/cli-toy" && cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror $cflags -o "$IT" ./*.c $libs $(pkg-config --libs libcjson) -lm) 2>"$tmp/err" &&
        LD_LIBRARY_PATH="$P/lib" "$IT" features --ckpt "$tmp/toyckpt" --text hi --json >"$tmp/toy.json" 2>"$tmp/toy.err" &&
        /usr/bin/python3 -c "
import json, math, sys; o = json.load(open('$tmp/toy.json'))
sys.exit(0 if o['ids'] == [104, 105] and len(o['hidden']) == 2 and all(len(r) == 32 and all(math.isfinite(x) for x in r) for r in o['hidden']) else 1)"; then
        pass "an importer registered by a program of its own (gf_importer_register through the installed library): features --ckpt reads its folder"
    else
        fail "the toy importer through the installed library: $(head -c 400 "$tmp/err") $(head -c 300 "$tmp/toy.err") $(head -c 200 "$tmp/toy.json")"
    fi
    LD_LIBRARY_PATH="$P/lib" "$IT" features --ckpt "$tmp/notoy" --text hi >/dev/null 2>"$tmp/toy.err"
    [ $? -ne 0 ] && grep -q "toy: a toy folder" "$tmp/toy.err" && grep -q "hf-distilbert" "$tmp/toy.err" \
        && pass "a folder no importer claims: refused, naming every importer (the program's too)" \
        || fail "a folder no importer claims: $(head -c 400 "$tmp/toy.err")"
else
    fail "src/cli/ does not build against the installed library: $(head -c 800 "$tmp/err")"
fi

# the plug-in example: a mixer registered through the installed header and library alone, trained
awk '/^loss [0-9.]+ -> [0-9.]+/ {found = 1; ok = $4 + 0 < $2 + 0} END {exit !(found && ok)}' "$tmp/custom_mixer.out" 2>/dev/null \
    && grep -q "^backward against finite differences: agrees" "$tmp/custom_mixer.out" \
    && grep -q "^streamed logits against the batch forward: max |diff| < " "$tmp/custom_mixer.out" \
    && pass "custom_mixer: its own mixer (gf_mixer_register) trains ($(grep -o '^loss [0-9.]* -> [0-9.]*' "$tmp/custom_mixer.out")), its backward and streaming step check out" \
    || fail "custom_mixer: $(tail -n 4 "$tmp/custom_mixer.out" 2>/dev/null | tr '\n' ' ')"

if [ $fails -ne 0 ]; then echo "install: $fails FAILED"; exit 1; fi
echo "install: all passed"
