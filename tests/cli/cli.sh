#!/usr/bin/env bash
# CLI tests: exit codes, error messages that name the culprit, and `grassflow score` against the PyTorch
# reference on checkpoints made by `grassflow init`.
set -uo pipefail
BUILD=${1:-build}
GF="$BUILD/grassflow"
PY=/usr/bin/python3
tmp=$(mktemp -d /tmp/grassflow-cli-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh

echo "cli: exit codes and messages"
want=; expect 2 "no command" "$GF"
want="unknown command"; expect 2 "unknown command" "$GF" frobnicate
for c in info init score train eval generate compare data; do want=; expect 0 "$c --help" "$GF" "$c" --help; done
# every preset of the registry (info --presets) in every help that lists presets: one source of truth (issue 48:
# train --help omitted the window, performer and hybrid presets)
presets=$("$GF" info --presets | awk 'NR > 1 && NF == 0 {exit} NR > 1 {print $1}')
[ "$(echo "$presets" | wc -l)" -ge 19 ] && pass "info --presets lists $(echo "$presets" | wc -l) presets" || fail "info --presets: $presets"
for c in train init info compare; do
    h=$("$GF" "$c" --help | tr ',\n' '  ' | tr -s ' ')
    missing=$(for p in $presets; do case " $h " in *" $p "*) ;; *) printf '%s ' "$p";; esac; done)
    [ -z "$missing" ] && pass "$c --help lists every preset" || fail "$c --help lacks the presets: $missing"
done
want=; expect 0 "--version" "$GF" --version
grep -q "kernel" "$tmp/out" && pass "--version names the BLAS kernel" || fail "--version names the BLAS kernel"
# the attention tiles' form this build has: AVX-512 where the compiler targets it, AVX2 + FMA for x86-64-v3
if grep -q '__AVX512F__ 1' <(cc -march=native -dM -E - </dev/null); then form="AVX-512 register tiles"
elif grep -q '__AVX2__ 1' <(cc -march=native -dM -E - </dev/null); then form="AVX2 + FMA register tiles"; else form="none"; fi
[ "${BUILD:-build}" = build ] && { grep -q "^fp32-fast attention: $form" "$tmp/out" \
    && pass "--version names fp32-fast's attention form ($form)" || fail "--version attention form: $(grep attention "$tmp/out")"; }
"$GF" --threads 1 --version | grep "openmp threads: 1" >/dev/null && pass "--threads 1 sets the thread count" || fail "--threads 1"
env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT "$GF" --version | grep -q "idle threads wait: GOMP_SPINCOUNT=10000$" \
    && pass "idle OpenMP threads spin 10,000 rounds, not the runtime's 300,000 (a shared machine: docs/bench/shared-machine.md)" \
    || fail "the OpenMP spin count: $(env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT "$GF" --version | tail -1)"
OMP_WAIT_POLICY=active "$GF" --version | grep -q "idle threads wait: OMP_WAIT_POLICY=active$" \
    && pass "... unless the user chose a waiting policy" || fail "a user's OMP_WAIT_POLICY: $(OMP_WAIT_POLICY=active "$GF" --version | tail -1)"
want="--threads expects"; expect 2 "--threads with a bad value" "$GF" --threads 0 info --model grassmann-tiny
want="--threads expects a number of threads in \[1, 1024\], and none was given"; expect 2 "--threads without a value is not an unknown option" "$GF" info --model grassmann-tiny --threads
want="--beta1 expects a number in \[0, 1\)"; expect 2 "--beta1 1 is refused by a message that excludes 1" "$GF" train --model grassmann-tiny --corpus tinyshakespeare --beta1 1 --out "$tmp/b1"
want="--bench mixer|out of memory at L="; ASAN_OPTIONS=allocator_may_return_null=1 expect 1 "bench mixer out of memory exits 1" "$GF" bench mixer --seq-lens 64,16000000 --batch 1000 --max-bytes 9223372036854775807
want="unknown model preset 'nope'"; expect 2 "info: unknown preset" "$GF" info --model nope
want="--reference transformer-6L is not one of --models"; expect 2 "compare: a reference that is not compared" "$GF" compare --models grassmann-tiny,hybrid-tiny --corpus tinyshakespeare --reference transformer-6L --out "$tmp/cmp"
want=; expect 0 "info --mixers lists every mixer with its keys" "$GF" info --mixers
grep -q "n_head" "$tmp/out" && grep -q "plucker_eps" "$tmp/out" && grep -q "^performer (p)" "$tmp/out" && grep -q "features  *integer \[1, 65536\], default 128" "$tmp/out" && pass "info --mixers shows each mixer's keys" || fail "info --mixers: $(head -c 300 "$tmp/out")"
want="unknown key \"colour\""; expect 2 "info: --set unknown key" "$GF" info --model grassmann-tiny --set colour=blue
want="norm.*must be one of"; expect 2 "info: --set bad enum" "$GF" info --model grassmann-tiny --set norm=sideways
want="not divisible by n_head"; expect 2 "info: heads do not divide d_model" "$GF" info --model transformer-tiny --set n_head=5
want="\"window\" is 0; expected an integer in \[1, "; expect 2 "info: window attention's window 0" "$GF" info --model transformer-tiny --set mixers=w --set window=0
want="layer 0: n_global 32 is not below max_len 32"; expect 2 "info: n_global >= max_len" "$GF" info --model transformer-tiny --set mixers=w --set n_global=32
echo '{"base": "transformer-tiny", "layers": [{"mixer": "window", "window": 0}]}' >"$tmp/w0.json"
want="layers\[0\]\.window"; expect 1 "info: window 0 in a config file names the layer's key" "$GF" info --config "$tmp/w0.json"
want="\"features\" is 0; expected an integer in \[1, 65536\]"; expect 2 "info: performer with 0 features" "$GF" info --model transformer-tiny --set mixers=p,p --set features=0
echo '{"base": "transformer-tiny", "d_model": 1024, "n_head": 2, "layers": [{"mixer": "performer", "features": 20000}, "attention"]}' >"$tmp/perf.json"
want="layer 0: performer with features 20000, n_head 2 and d_model 1024 keeps .* = 20520000 floats of running sums per layer; at most 16777216 \(64 MiB\) are allowed"; expect 1 "info: a performer too large for its state" "$GF" info --config "$tmp/perf.json"
want="\"redraw\" is -1; expected an integer in \[0, "; expect 2 "info: performer redraw < 0" "$GF" info --model transformer-tiny --set mixers=p,p --set redraw=-1
want="--vocab expects an integer"; expect 2 "info: bad --vocab" "$GF" info --model grassmann-tiny --vocab -3
want="cannot open config file $tmp/none.json"; expect 1 "info: missing config file" "$GF" info --config "$tmp/none.json"
echo '{"vocab_size": 10' >"$tmp/bad.json"
want="bad.json: not valid JSON"; expect 1 "info: malformed config JSON" "$GF" info --config "$tmp/bad.json"
echo '{"base": "grassmann-tiny", "rank": 16, "d_model": 8}' >"$tmp/rank.json"
want="rank is 16"; expect 1 "info: rank larger than d_model" "$GF" info --config "$tmp/rank.json"
echo '{"vocab_size": 10}' >"$tmp/partial.json"
want="missing key \"d_model\""; expect 1 "info: config with missing keys" "$GF" info --config "$tmp/partial.json"
want="--out FILE.safetensors is required"; expect 2 "init: no --out" "$GF" init --model grassmann-tiny
want="cannot write $tmp/no/such/dir"; expect 1 "init: unwritable output" "$GF" init --model grassmann-tiny --out "$tmp/no/such/dir/x.safetensors"
ls "$tmp/no" >/dev/null 2>&1 && fail "init: unwritable output left files" || pass "init: unwritable output leaves nothing behind"

echo "cli: info parameter counts (vocab 30522)"
count() { "$GF" info --model "$1" --vocab 30522 --json "${@:2}" | $PY -c 'import json,sys; print(json.load(sys.stdin)["params"])'; }
for pair in "transformer-6L 12585472" "grassmann-6L 12607168" "transformer-12L 17356800" "grassmann-12L 17400192"; do
    set -- $pair
    got=$(count "$1"); [ "$got" = "$2" ] && pass "$1 has $2 parameters" || fail "$1 has $got parameters, expected $2"
done
# a hybrid swaps a Grassmann layer (12607168 - 12585472 = 6 x 3616 more than an attention one) for attention
# a window layer has attention's tensors: hybrid-window-6L = grassmann-6L - 3 x 3616, window-6L = transformer-6L;
# a performer layer adds omega (128 x 64): performer-6L = transformer-6L + 6 x 8192
for pair in "hybrid-last-6L 12603552" "hybrid-middle-6L 12603552" "hybrid-window-6L 12596320" "window-6L 12585472" "performer-6L 12634624"; do
    set -- $pair
    got=$(count "$1"); [ "$got" = "$2" ] && pass "$1 has $2 parameters" || fail "$1 has $got parameters, expected $2"
done
want=; expect 0 "info --presets lists every preset" "$GF" info --presets
grep -Eq '^hybrid-middle-6L +12,603,552 +30,522  grassmann x3, attention, grassmann x2' "$tmp/out" && pass "info --presets: counts and layers" || fail "info --presets: $(head -c 400 "$tmp/out")"
want=; expect 0 "info on a hybrid preset" "$GF" info --model hybrid-last-small
grep -q '^beside      grassmann-small 4,654,144, transformer-small 4,716,544' "$tmp/out" && pass "info on a hybrid prints its pair's counts beside it" || fail "info hybrid: $(head -c 300 "$tmp/out")"
got=$(count grassmann-6L --set extra_proj=true); [ "$got" = 13001920 ] && pass "grassmann-6L + extra_proj has 13001920" || fail "grassmann-6L + extra_proj: $got"
# the paper's ablations (tests/parity/torch_ref/count_params.py holds the same counts): pair.weight (d, 2r) for
# plucker.weight (d, r(r-1)/2); no gate tensors
got=$(count grassmann-6L --set plucker=false); [ "$got" = 11943616 ] && pass "grassmann-6L + plucker false has 11943616" || fail "grassmann-6L + plucker false: $got"
got=$(count grassmann-6L --set gate=false); [ "$got" = 11819200 ] && pass "grassmann-6L + gate false has 11819200" || fail "grassmann-6L + gate false: $got"
got=$(count grassmann-6L --set plucker=false --set gate=false); [ "$got" = 11155648 ] && pass "grassmann-6L + both ablations has 11155648" || fail "grassmann-6L + both ablations: $got"
echo '{"base": "grassmann-tiny", "layers": [{"mixer": "grassmann", "rank": 8, "heads": 2, "plucker": false}]}' >"$tmp/heads.json"
want="layer 0: heads is 2 with plucker false; heads split the Pluecker coordinates.*set heads 1 or plucker true"
expect 1 "info: heads > 1 with plucker false is refused, naming both keys" "$GF" info --config "$tmp/heads.json"
want='"plucker" must be true or false'; expect 2 "info: --set plucker to a non-bool" "$GF" info --model grassmann-tiny --set plucker=3
want='"gate" must be true or false'; expect 2 "info: --set gate to a non-bool" "$GF" info --model grassmann-tiny --set gate=maybe

echo "cli: init does not overwrite"
"$GF" init --model grassmann-tiny --seed 5 --out "$tmp/keep.safetensors" >/dev/null
cp "$tmp/keep.safetensors" "$tmp/keep.orig"
want="keep.safetensors exists and is not replaced"; expect 1 "init over an existing file without --force" "$GF" init --model transformer-tiny --out "$tmp/keep.safetensors"
cmp -s "$tmp/keep.safetensors" "$tmp/keep.orig" && pass "... leaves it as it was" || fail "init overwrote an existing file"
want=; expect 0 "init --force replaces it" "$GF" init --model transformer-tiny --out "$tmp/keep.safetensors" --force
mkfifo "$tmp/init.fifo"
want="init.fifo is a FIFO \(named pipe\); grassflow writes only regular files"; expect 1 "init --force onto a FIFO is refused" timeout 20 "$GF" init --model grassmann-tiny --out "$tmp/init.fifo" --force
[ -p "$tmp/init.fifo" ] && pass "... and the FIFO stays" || fail "init replaced a FIFO"
if mknod "$tmp/init.dev" c 1 7 2>/dev/null; then
    want="init.dev is a character device"; expect 1 "init --force onto a character device is refused" "$GF" init --model grassmann-tiny --out "$tmp/init.dev" --force
    [ -c "$tmp/init.dev" ] && pass "... and the node stays" || fail "init replaced a device node"
fi
echo '{"base": "grassmann-tiny"}' >"$tmp/own.json"
want="own.json is an input, which this command reads"; expect 1 "init --force onto its own --config is refused" "$GF" init --config "$tmp/own.json" --out "$tmp/own.json" --force
for k in $(seq 200); do echo; done >"$tmp/blank.txt"
for t in char word; do
    want="its training split is 181 copies of one token with the $t tokenizer"; expect 1 "a corpus of blank lines is refused for training ($t), not scored as perplexity 1" "$GF" train --model grassmann-tiny --corpus "$tmp/blank.txt" --tokenizer $t --out "$tmp/blank-$t" --steps 2 --no-cache
done
[ ! -e "$tmp/blank-char" ] && [ ! -e "$tmp/blank-word" ] && pass "... and leaves no run folder behind" || fail "a refused blank corpus left $tmp/blank-char"

echo "cli: init is deterministic"
"$GF" init --model grassmann-tiny --seed 5 --out "$tmp/a.safetensors" >/dev/null
"$GF" init --model grassmann-tiny --seed 5 --out "$tmp/b.safetensors" >/dev/null
"$GF" init --model grassmann-tiny --seed 6 --out "$tmp/c.safetensors" >/dev/null
cmp -s "$tmp/a.safetensors" "$tmp/b.safetensors" && pass "same seed, same bytes" || fail "same seed gave different files"
cmp -s "$tmp/a.safetensors" "$tmp/c.safetensors" && fail "different seeds gave the same file" || pass "different seed, different weights"
OMP_NUM_THREADS=1 "$GF" init --model grassmann-tiny --seed 5 --out "$tmp/d.safetensors" >/dev/null
cmp -s "$tmp/a.safetensors" "$tmp/d.safetensors" && pass "init does not depend on the thread count" || fail "init depends on thread count"

echo "cli: score against the PyTorch reference"
# lines of different lengths (padding inside a batch), a blank line and a 1-id line (nothing to predict)
$PY - "$tmp/tok.txt" <<'PYEOF'
import random, sys
random.seed(3)
lines = []
for n in [33, 5, 1, 0, 12, 33, 2, 20, 17, 9, 33, 3, 25, 6, 30, 11, 8, 33]:
    lines.append(" ".join(str(random.randrange(64)) for _ in range(n)))
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PYEOF
for model in grassmann-tiny transformer-tiny "hybrid-tiny --set norm=post --set extra_proj=true"; do
    name=${model%% *}
    "$GF" init --model $model --seed 9 --out "$tmp/$name.safetensors" >/dev/null || { fail "init $model"; continue; }
    c=$("$GF" score --ckpt "$tmp/$name.safetensors" --tokens "$tmp/tok.txt" --batch 4 --json) || { fail "score $model"; continue; }
    p=$(OMP_NUM_THREADS=1 $PY tests/parity/torch_ref/score.py --ckpt "$tmp/$name.safetensors" --tokens "$tmp/tok.txt" --json)
    if $PY - "$c" "$p" <<'PYEOF'
import json, sys
c, p = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert c["tokens"] == p["tokens"], (c, p)
rel = abs(c["loss"] - p["loss"]) / abs(p["loss"])
print(f"    C loss {c['loss']:.7f}  PyTorch {p['loss']:.7f}  rel diff {rel:.2e}  tokens {c['tokens']}")
sys.exit(0 if rel <= 1e-5 else 1)
PYEOF
    then pass "score $model matches PyTorch"; else fail "score $model differs from PyTorch"; fi
done

echo "cli: score rejects bad input"
ck="$tmp/grassmann-tiny.safetensors"
want="cannot open $tmp/missing.txt"; expect 1 "score: missing tokens file" "$GF" score --ckpt "$ck" --tokens "$tmp/missing.txt"
printf '1 2 3\n4 99 5\n' >"$tmp/oov.txt"
want="oov.txt:2: token id 99 is outside"; expect 1 "score: id outside the vocabulary (file:line)" "$GF" score --ckpt "$ck" --tokens "$tmp/oov.txt"
printf '1 2 x3\n' >"$tmp/junk.txt"
want="junk.txt:1: 'x3' is not a token id"; expect 1 "score: non-numeric token" "$GF" score --ckpt "$ck" --tokens "$tmp/junk.txt"
printf '4\v10 11\n3\f9\r\n' >"$tmp/vt.txt"; printf '4 10 11\n3 9\n' >"$tmp/sp.txt"
printf '4 \v\n10 11\n' >"$tmp/vn.txt"; want=; expect 0 "score: a \\v before a newline does not merge two lines" "$GF" score --ckpt "$ck" --tokens "$tmp/vn.txt"
grep -q "^tokens 1 " "$tmp/out" && pass "... (1 target, not 2)" || fail "\\v newline: $(cat "$tmp/out")"
"$GF" score --ckpt "$ck" --tokens "$tmp/vt.txt" >"$tmp/vt.out" 2>&1; "$GF" score --ckpt "$ck" --tokens "$tmp/sp.txt" >"$tmp/sp.out" 2>&1
cmp -s "$tmp/vt.out" "$tmp/sp.out" && grep -q "^tokens 3 " "$tmp/vt.out" && pass "score: \\v and \\f separate ids like spaces (C whitespace)" || fail "score with \\v/\\f: $(cat "$tmp/vt.out")"
$PY -c "print(' '.join(['1']*40))" >"$tmp/long.txt"
want="long.txt:1: 40 ids; this model takes at most max_len \+ 1 = 33"; expect 1 "score: line longer than max_len+1" "$GF" score --ckpt "$ck" --tokens "$tmp/long.txt"
$PY - "$ck" "$tmp/wild.safetensors" <<'PYEOF'
import sys
sys.path.insert(0, "tests/parity/torch_ref")
import st_io
t, meta = st_io.read(sys.argv[1])
t["tok_emb.weight"] = t["tok_emb.weight"] * 400.0  # finite weights, astronomically confident wrong logits
st_io.write(sys.argv[2], t, meta)
PYEOF
printf '1 2 3 4 5 6 7 8\n' >"$tmp/eight.txt"
want="warning: perplexity .*, far above the vocabulary size"
expect 0 "score: a huge perplexity is warned about" "$GF" score --ckpt "$tmp/wild.safetensors" --tokens "$tmp/eight.txt"
grep -Eq "ppl (inf|[0-9]\.[0-9]{3}e\+[0-9]+)$" "$tmp/out" && pass "... and printed as inf or in scientific notation, not a 200-digit number: $(cat "$tmp/out")" || fail "huge perplexity printed as: $(head -c 300 "$tmp/out")"
printf '5\n\n' >"$tmp/short.txt"
want="nothing can be predicted"; expect 1 "score: nothing to predict" "$GF" score --ckpt "$ck" --tokens "$tmp/short.txt"
want="not a grassflow checkpoint|too short|header length"; expect 1 "score: a text file as checkpoint" "$GF" score --ckpt "$tmp/tok.txt" --tokens "$tmp/tok.txt"
head -c 1000 "$ck" >"$tmp/trunc.safetensors"
want="trunc.safetensors: header length [0-9]+ is larger than the file|trunc.safetensors: .*data"; expect 1 "score: truncated checkpoint" "$GF" score --ckpt "$tmp/trunc.safetensors" --tokens "$tmp/tok.txt"
want="--batch expects an integer"; expect 2 "score: bad --batch" "$GF" score --ckpt "$ck" --tokens "$tmp/tok.txt" --batch 0

echo "cli: the example program (examples/stream_generate.c, public API only)"
EX="$BUILD/examples/stream_generate"
"$GF" init --model grassmann-tiny --set pos=none --seed 3 --out "$tmp/gnone.safetensors" >/dev/null
expect 0 "example: 300 greedy tokens past max_len 32 (pos none)" "$EX" "$tmp/gnone.safetensors" 300 5 17 3
[ "$(wc -w <"$tmp/out")" -eq 300 ] && pass "example: printed 300 ids" || fail "example printed: $(head -c 200 "$tmp/out")"
s300=$(grep -o 'state [0-9]* bytes' "$tmp/err")
"$EX" "$tmp/gnone.safetensors" 10 5 17 3 >/dev/null 2>"$tmp/err10"
[ "$s300" = "$(grep -o 'state [0-9]* bytes' "$tmp/err10")" ] && [ "$s300" = "state 768 bytes" ] && pass "example: Grassmann state is 768 bytes after 13 and after 303 positions" || fail "example state: '$s300' vs '$(cat "$tmp/err10")'"
"$EX" "$tmp/gnone.safetensors" 50 5 17 3 >"$tmp/ex1" 2>/dev/null; "$EX" "$tmp/gnone.safetensors" 50 5 17 3 >"$tmp/ex2" 2>/dev/null
cmp -s "$tmp/ex1" "$tmp/ex2" && pass "example: deterministic" || fail "example: two runs differ"
"$GF" init --model transformer-tiny --seed 3 --out "$tmp/tlearned.safetensors" >/dev/null
want="position 32 is past max_len 32 .*learned positions"; expect 1 "example: learned positions stop at max_len with a clear error" "$EX" "$tmp/tlearned.safetensors" 40 5
want="prompt token '99': stream: token id 99 is outside the vocabulary"; expect 1 "example: a prompt id outside the vocabulary" "$EX" "$tmp/tlearned.safetensors" 4 99

# a program of its own on OpenBLAS's generic kernel (Debian's OpenBLAS does not know recent CPUs): told once
# what to set, as the command sets it for itself; nothing said when a core type is set
own=$(GRASSFLOW_NO_REEXEC=1 env -u OPENBLAS_CORETYPE "$GF" --version | sed -n 's/^blas: OpenBLAS, kernel \([^,]*\),.*/\1/p')
fast=$(bash tests/coretype.sh)
env -u OPENBLAS_CORETYPE "$EX" "$tmp/gnone.safetensors" 3 5 >/dev/null 2>"$tmp/err"
if [ "$own" = Prescott ] && [ -n "$fast" ]; then
    [ "$(grep -c "generic Prescott kernel.*OPENBLAS_CORETYPE=$fast" "$tmp/err")" = 1 ] \
        && pass "example on OpenBLAS's generic kernel: one note naming OPENBLAS_CORETYPE=$fast" || fail "no kernel note: $(head -c 300 "$tmp/err")"
else
    ! grep -q "Prescott" "$tmp/err" && pass "example: OpenBLAS picks $own by itself here, nothing to say" || fail "kernel note with kernel $own"
fi
OPENBLAS_CORETYPE=${fast:-HASWELL} "$EX" "$tmp/gnone.safetensors" 3 5 >/dev/null 2>"$tmp/err"
! grep -q "Prescott" "$tmp/err" && pass "example with OPENBLAS_CORETYPE set: no kernel note" || fail "kernel note although a core type was set"

echo "cli: the text-generation example (examples/generate.c, public API only) against grassflow generate"
EXG="$BUILD/examples/generate"
$PY - "$tmp/small.txt" <<'PYEOF'
import random, sys
random.seed(5)
words = "the game of café naïve 日本 über a an story ends begins 😀 and then".split()
open(sys.argv[1], "w").write("".join(" ".join(random.choice(words) for _ in range(random.randint(2, 12))) + "\n" for _ in range(400)))
PYEOF
# (od -c prints 0000000 for no output at all: two commands that both print nothing are not a match)
# words with learned positions (60 tokens slide past max_len 32); bytes (UTF-8 split across tokens), pos none
TR="--corpus $tmp/small.txt --steps 3 --batch 4 --seq-len 16 --eval-every 0 --no-cache"
"$GF" train --model grassmann-tiny --tokenizer word $TR --out "$tmp/gw" >/dev/null 2>&1 || fail "train a word checkpoint"
"$GF" train --model transformer-tiny --set pos=none --tokenizer byte $TR --out "$tmp/gb" >/dev/null 2>&1 || fail "train a byte checkpoint"
for ck in gw gb; do
    for prompt in "the game" "" "café
"; do
        label=${prompt//$'\n'/\\n}
        a=$("$GF" generate --ckpt "$tmp/$ck/last.safetensors" --prompt "$prompt" --tokens 60 --temperature 0 2>/dev/null | od -c)
        b=$("$EXG" "$tmp/$ck/last.safetensors" "$prompt" 60 0 2>"$tmp/err" | od -c)
        [ "$a" != 0000000 ] && [ "$a" = "$b" ] && pass "example: $ck greedy text after '$label' equals grassflow generate's" || fail "example: $ck '$label': $(head -c 300 "$tmp/err")"
        a=$("$GF" generate --ckpt "$tmp/$ck/last.safetensors" --prompt "$prompt" --tokens 60 --temperature 1.2 --top-k 40 --top-p 0.9 --seed 8 --stream 2>/dev/null | od -c)
        b=$("$EXG" "$tmp/$ck/last.safetensors" "$prompt" 60 1.2 40 0.9 8 2>/dev/null | od -c)
        [ "$a" != 0000000 ] && [ "$a" = "$b" ] && pass "example: $ck sampled text (top-k, top-p, seed) equals grassflow generate --stream's" || fail "example: $ck sampled '$label' differs"
    done
done
# window attention with global tokens, pos none: 70 greedy tokens run past max_len 32 and wrap its ring of 5
"$GF" train --model transformer-tiny --set mixers=w --set window=5 --set n_global=2 --set pos=none --tokenizer byte $TR \
    --out "$tmp/gwin" >/dev/null 2>&1 || fail "train a window-attention checkpoint"
a=$("$GF" generate --ckpt "$tmp/gwin/last.safetensors" --prompt "the game" --tokens 70 --temperature 0 2>/dev/null | od -c)
b=$("$GF" generate --ckpt "$tmp/gwin/last.safetensors" --prompt "the game" --tokens 70 --temperature 0 --no-cache 2>"$tmp/err" | od -c)
[ "$a" != 0000000 ] && [ "$a" = "$b" ] && pass "window (w 5, 2 globals, pos none): greedy text streamed = recomputed past max_len" \
    || fail "window generate vs --no-cache: $(head -c 300 "$tmp/err")"
"$GF" bench generate --model transformer-tiny --set mixers=w --set window=8 --set n_global=2 --set pos=none --positions 10,3000 \
    --tokens 3 --json >"$tmp/wbench.json" 2>/dev/null
$PY -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"]; sys.exit(not(len(r)==2 and r[0]["state_bytes"]==r[1]["state_bytes"]==2*10*2*32*4))' "$tmp/wbench.json" \
    && pass "bench generate: window attention's state is flat, 2 layers x (8 + 2) x 2 d floats at positions 10 and 3000" \
    || fail "bench generate window state: $(cat "$tmp/wbench.json")"
want="has no tokenizer"; expect 1 "example: a checkpoint without a tokenizer" "$EXG" "$tmp/gnone.safetensors" "x" 5
want="TOP_K 'many' is not a non-negative integer"; expect 2 "example: a bad argument" "$EXG" "$tmp/gw/last.safetensors" "x" 5 1 many
want="sampler: temperature -1"; expect 1 "example: a bad temperature" "$EXG" "$tmp/gw/last.safetensors" "x" 5 -1

echo "cli: the training example (examples/train.c, public API only)"
EXT="$BUILD/examples/train"
expect 0 "example: trains a byte-level model from C" "$EXT" "$tmp/ex-train" 150
if $PY - "$tmp/out" <<'PYEOF'
import re, sys
text = open(sys.argv[1]).read()
steps = [float(x) for x in re.findall(r"^step +\d+/\d+ +loss ([0-9.]+)", text, re.M)]
before, after = map(float, re.search(r"validation loss ([0-9.]+) -> ([0-9.]+)", text).groups())
print("    training loss %.3f -> %.3f over %d log lines, validation loss %.3f -> %.3f" % (steps[0], steps[-1], len(steps), before, after))
sys.exit(0 if len(steps) >= 10 and steps[-1] < steps[0] - 1.0 and after < before - 1.0 else 1)
PYEOF
then pass "example: the loss falls"; else fail "example: the loss does not fall: $(head -c 600 "$tmp/out")"; fi
for f in last best state; do [ -s "$tmp/ex-train/$f.safetensors" ] && pass "example: wrote $f.safetensors" || fail "example: no $f.safetensors"; done
printf '84 104 101 32 109 111 100 101 108\n' >"$tmp/bytes.txt"
want=; expect 0 "example: its checkpoint scores with grassflow score" "$GF" score --ckpt "$tmp/ex-train/best.safetensors" --tokens "$tmp/bytes.txt"

echo "cli: output that failed is a failure (every command, to /dev/full and to a closed stdout)"
export GRASSFLOW_CACHE="$tmp/cache"
ck="$tmp/gw/last.safetensors"
printf 'the game of\n' >"$tmp/gw-text.txt"
out_fails() { # WHAT REASON: the command just run (its stdout redirected by the caller) exited 1 saying why
    local rc=$? what=$1 why=$2
    [ $rc = 1 ] && grep -q "grassflow: error: writing standard output: $why" "$tmp/err" && pass "$what" \
        || fail "$what: exit $rc, expected 1 ($(head -c 300 "$tmp/err"))"
}
full() { # WHAT CMD...: CMD with stdout on /dev/full exits 1 and says why
    "${@:2}" >/dev/full 2>"$tmp/err"
    out_fails "$1 > /dev/full" "No space left on device"
}
for c in info init score train eval generate compare data features bench import export; do full "$c --help" "$GF" $c --help; done
full "--help" "$GF" --help
full "--version" "$GF" --version
full "info" "$GF" info --model grassmann-tiny
full "info --json" "$GF" info --model grassmann-tiny --json
full "init" "$GF" init --model grassmann-tiny --out "$tmp/full-init.safetensors"
full "score --json" "$GF" score --ckpt "$tmp/grassmann-tiny.safetensors" --tokens "$tmp/tok.txt" --json
full "eval --json" "$GF" eval --ckpt "$ck" --corpus "$tmp/small.txt" --seq-len 16 --no-cache --json
full "generate" "$GF" generate --ckpt "$ck" --prompt "the game" --tokens 5
full "generate --stream" "$GF" generate --ckpt "$ck" --prompt "the game" --tokens 5 --stream
full "features" "$GF" features --ckpt "$ck" --text "the game of"
full "features --json" "$GF" features --ckpt "$ck" --text "the game of" --json
full "data stats" "$GF" data stats --corpus "$tmp/small.txt" --tokenizer word --no-cache
full "data stats --json" "$GF" data stats --corpus "$tmp/small.txt" --tokenizer word --no-cache --json
full "train" "$GF" train --model grassmann-tiny --tokenizer word $TR --out "$tmp/full-train"
[ -s "$tmp/full-train/last.safetensors" ] && pass "... the run's checkpoints are written all the same" || fail "train > /dev/full: no checkpoint"
full "compare" "$GF" compare --models grassmann-tiny,transformer-tiny --tokenizer word $TR --out "$tmp/full-cmp"
full "bench train --json" "$GF" bench train --model grassmann-tiny --steps 1 --batch 1 --seq-len 8 --json
full "bench mixer" "$GF" bench mixer --seq-lens 8 --batch 1
full "bench generate --json" "$GF" bench generate --model grassmann-tiny --positions 10 --tokens 5 --json
# bench generate on a pipe: the first position's row is out while the context still advances to the
# second, and the advance shows its progress on stderr
( "$GF" bench generate --model grassmann-tiny --set pos=none --positions 10,20000000 --tokens 5 2>"$tmp/gen.err" | cat >"$tmp/gen.out" ) &
genpid=$!
for i in $(seq 60); do grep -q "advancing the context" "$tmp/gen.err" 2>/dev/null && break; sleep 0.5; done
grep -q "position 10 " "$tmp/gen.out" && pass "bench generate prints each row as it is measured (piped)" \
    || fail "bench generate piped: no row before the end: $(cat "$tmp/gen.out")"
grep -q "advancing the context to position 20000000: [0-9]* ([0-9]*%)" "$tmp/gen.err" \
    && pass "... and shows progress while it advances the context" || fail "bench generate progress: $(cat "$tmp/gen.err")"
pkill -P $genpid 2>/dev/null; kill $genpid 2>/dev/null; wait $genpid 2>/dev/null

echo "cli: info --ckpt describes a checkpoint"
"$GF" train --model grassmann-tiny --tokenizer word $TR --eval-every 3 --out "$tmp/desc" >/dev/null 2>&1
want=; expect 0 "info --ckpt best.safetensors" "$GF" info --ckpt "$tmp/desc/best.safetensors"
grep -Eq "^training    step 3, validation loss [0-9.]+ \(ppl [0-9.]+\)" "$tmp/out" && pass "... its step and validation loss" || fail "info --ckpt step: $(cat "$tmp/out")"
grep -q "^tokenizer   word, [0-9]* pieces" "$tmp/out" && grep -q "^task        lm (head next_token)" "$tmp/out" && grep -q '"seq_len":16' "$tmp/out" \
    && pass "... its tokenizer, task and recipe" || fail "info --ckpt: $(cat "$tmp/out")"
want=; expect 0 "info --ckpt state.safetensors --json" "$GF" info --ckpt "$tmp/desc/state.safetensors" --json
$PY -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["kind"]=="training state" and d["step"]==3 and d["task"]=="lm" and d["params"]>0 and d["tokenizer"]["kind"]=="word" and d["recipe"]["steps"]==3, d' "$tmp/out" \
    && pass "... is JSON with the state's step, task, tokenizer and recipe" || fail "info --ckpt --json: $(head -c 400 "$tmp/out")"
head -c 300 "$tmp/desc/best.safetensors" >"$tmp/cut.safetensors"
want="cut.safetensors"; expect 1 "info --ckpt of a cut file names it" "$GF" info --ckpt "$tmp/cut.safetensors"
want="leave out --model"; expect 2 "info --ckpt with --model is refused" "$GF" info --ckpt "$tmp/desc/best.safetensors" --model grassmann-tiny
want=; expect 0 "train --out in folders that do not exist yet (runs/x in a fresh clone) creates them" "$GF" train --model grassmann-tiny --tokenizer word $TR --out "$tmp/fresh/runs/x"
[ -s "$tmp/fresh/runs/x/last.safetensors" ] && pass "... and the run is there" || fail "train --out with missing parents: $(ls -R "$tmp/fresh" 2>&1 | head)"
touch "$tmp/afile"
want="afile is not a directory"; expect 1 "train --out under a file is refused, naming it" "$GF" train --model grassmann-tiny --tokenizer word $TR --out "$tmp/afile/x"
want="not a built-in corpus"; expect 1 "a run refused for its corpus" "$GF" train --model grassmann-tiny --tokenizer word $TR --corpus "$tmp/none.txt" --out "$tmp/fresh2/runs/x"
[ ! -e "$tmp/fresh2" ] && pass "... creates none of the missing folders" || fail "a refused run left $(ls -R "$tmp/fresh2" | head -5)"
"$GF" info --model grassmann-tiny >&- 2>"$tmp/err"; out_fails "info >&- (a closed stdout)" "Bad file descriptor"
"$GF" --version >&- 2>"$tmp/err"; out_fails "--version >&-" "Bad file descriptor"
"$GF" score --ckpt "$tmp/grassmann-tiny.safetensors" --tokens "$tmp/short.txt" >&- 2>/dev/null; rc=$?
[ $rc = 1 ] && pass "a command that fails for another reason keeps its own exit code with stdout closed" || fail "score error with closed stdout: exit $rc"
# a reader that goes away: with SIGPIPE ignored (as under many supervisors) generate --stream gets EPIPE
# and stops at once instead of sampling a million tokens nobody reads
start=$SECONDS
( trap '' PIPE; timeout 20 "$GF" generate --ckpt "$ck" --prompt "the" --tokens 1000000 --stream 2>"$tmp/err" | head -c 20 >/dev/null; exit "${PIPESTATUS[0]}" ); rc=$?
[ $rc = 1 ] && grep -q "writing standard output: Broken pipe" "$tmp/err" && [ $((SECONDS - start)) -lt 15 ] \
    && pass "generate --stream stops at a closed pipe with exit 1 ($((SECONDS - start)) s)" || fail "generate --stream into a closed pipe: exit $rc after $((SECONDS - start)) s: $(head -c 300 "$tmp/err")"

echo "cli: JSON that is JSON (a diverged model's infinite perplexity is null)"
strict_json() { # FILE...: every line of every FILE is JSON that Python reads with NaN/Infinity refused
    $PY - "$@" <<'PYEOF'
import json, sys
def refuse(c): raise ValueError("not JSON: " + c)
n = 0
for path in sys.argv[1:]:
    for k, line in enumerate(open(path, encoding="utf-8"), 1):
        if line.strip():
            try:
                json.loads(line, parse_constant=refuse)
            except ValueError as e:
                sys.exit(f"    {path}:{k}: {e}")
            n += 1
sys.exit(0 if n else "    no JSON at all")
PYEOF
}
jget() { $PY -c 'import json,sys; print(json.dumps(json.loads(open(sys.argv[1]).read())[sys.argv[2]]))' "$@"; }
# a run whose loss explodes (lr 10, no clipping): finite weights, val loss in the thousands, exp() = inf
"$GF" train --model grassmann-tiny --tokenizer word --corpus "$tmp/small.txt" --no-cache --steps 20 --batch 4 --seq-len 16 \
    --eval-every 10 --lr 10 --warmup 0 --clip 0 --on-nonfinite skip --out "$tmp/diverged" >/dev/null 2>&1
grep -q '"val_ppl": null' "$tmp/diverged/metrics.jsonl" && pass "metrics.jsonl: the diverged run's perplexity is null" || fail "metrics.jsonl of the diverged run: $(grep val "$tmp/diverged/metrics.jsonl" | head -2)"
strict_json "$tmp/diverged/metrics.jsonl" && pass "... and every line is strict JSON" || fail "metrics.jsonl is not strict JSON: $(head -c 400 "$tmp/diverged/metrics.jsonl")"
dv="$tmp/diverged/last.safetensors"
want=; expect 0 "eval --json of the diverged model" "$GF" eval --ckpt "$dv" --corpus "$tmp/small.txt" --seq-len 16 --no-cache --json
strict_json "$tmp/out" && [ "$(jget "$tmp/out" ppl)" = null ] && [ "$(jget "$tmp/out" loss)" != null ] \
    && pass "... is strict JSON with \"ppl\": null and a finite loss" || fail "eval --json of a diverged model: $(cat "$tmp/out")"
$PY - "$tmp/grassmann-tiny.safetensors" "$tmp/wild4k.safetensors" <<'PYEOF'
import sys
sys.path.insert(0, "tests/parity/torch_ref")
import st_io
t, meta = st_io.read(sys.argv[1])
t["tok_emb.weight"] = t["tok_emb.weight"] * 4000.0  # finite weights, a loss of about 2300: exp overflows
st_io.write(sys.argv[2], t, meta)
PYEOF
want=; expect 0 "score --json of a model whose perplexity overflows" "$GF" score --ckpt "$tmp/wild4k.safetensors" --tokens "$tmp/eight.txt" --json
strict_json "$tmp/out" && [ "$(jget "$tmp/out" ppl)" = null ] && pass "... is strict JSON with \"ppl\": null" || fail "score --json: $(cat "$tmp/out")"
want=; expect 0 "score (text) still says inf" "$GF" score --ckpt "$tmp/wild4k.safetensors" --tokens "$tmp/eight.txt"
grep -q "ppl inf$" "$tmp/out" && pass "... ppl inf" || fail "score text: $(cat "$tmp/out")"
q="$tmp/a \"quoted\" \\ dir"; mkdir -p "$q" && cp "$tmp/small.txt" "$q/text.txt"
want=; expect 0 "data stats --json of a path holding a quote and a backslash" "$GF" data stats --corpus "$q/text.txt" --tokenizer word --no-cache --json
strict_json "$tmp/out" && [ "$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["corpus"] == sys.argv[2])' "$tmp/out" "$q/text.txt")" = True ] \
    && pass "... is JSON that names the path exactly" || fail "data stats --json with a quote: $(cat "$tmp/out")"
printf '{"base": "grassmann-tiny"}\n' >"$q/cfg.json"
want=; expect 0 "bench generate --json with a config path holding a quote" "$GF" bench generate --config "$q/cfg.json" --positions 10 --tokens 5 --json
strict_json "$tmp/out" && pass "... is JSON" || fail "bench generate --json with a quote: $(cat "$tmp/out")"
for b in "train --model grassmann-tiny --steps 1 --batch 1 --seq-len 8" "mixer --seq-lens 8 --batch 1"; do
    want=; expect 0 "bench ${b%% *} --json" "$GF" bench $b --json
    strict_json "$tmp/out" && pass "... is strict JSON" || fail "bench ${b%% *} --json: $(cat "$tmp/out")"
done
want=; expect 0 "features --json of the diverged model" "$GF" features --ckpt "$dv" --text "the game of" --json
strict_json "$tmp/out" && pass "... is strict JSON" || fail "features --json: $(head -c 300 "$tmp/out")"

echo "cli: flags that do not apply are refused, and a checkpoint of one task given to another is named"
lm="$tmp/a.safetensors" # grassmann-tiny from init: a language model
H=configs/snli/head-grassmann.json
mkdir -p "$tmp/snli64" # the first 64 pairs of each split
for s in train_0.01 dev test; do xz -dc "data/snli/snli_1.0_$s.tsv.xz" | head -64 >"$tmp/snli64/snli_1.0_${s%_0.01}.tsv"; done
want="--max-sent does not apply to --task lm \(the default\).*it is for --task snli"; expect 2 "train: --max-sent for a language model" "$GF" train --model grassmann-tiny --corpus tinyshakespeare --max-sent 8 --out "$tmp/x"
want="--seq-len does not apply to --task snli, sentence-pair.*it is for --task lm"; expect 2 "train: --seq-len for sentence pairs" "$GF" train --task snli --model grassmann-tiny --corpus snli --seq-len 8 --out "$tmp/x"
want="--backbone does not apply to --task lm \(the default\).*it is for --task snli"; expect 2 "train: --backbone without --task snli, at once" "$GF" train --backbone "$lm" --head $H --corpus snli --out "$tmp/x"
want="--head does not apply to --task lm"; expect 2 "train: --head without --task snli" "$GF" train --model grassmann-tiny --head $H --corpus tinyshakespeare --out "$tmp/x"
want="--freeze-backbone does not apply to --task lm"; expect 2 "compare: --freeze-backbone for language models" "$GF" compare --models grassmann-tiny,hybrid-tiny --freeze-backbone --corpus tinyshakespeare --out "$tmp/x"
want="--tokenizer does not apply with --backbone"; expect 2 "train: --tokenizer with --backbone" "$GF" train --task snli --backbone "$lm" --head $H --corpus snli --tokenizer char --out "$tmp/x"
want="--set does not apply with --backbone"; expect 2 "compare: --set with --backbone" "$GF" compare --task snli --backbone "$lm" --models $H --set rank=8 --corpus snli --out "$tmp/x"
want="--vocab does not apply to train: the vocabulary is the tokenizer's"; expect 2 "train: --vocab (the tokenizer decides it)" "$GF" train --model grassmann-tiny --vocab 500 --corpus tinyshakespeare --out "$tmp/x"
want="--models grassmann-tiny: no such file; with --backbone, --models lists head stack files.*head-grassmann.json"; expect 2 "compare --backbone: a preset in --models, and the heads shipped" "$GF" compare --task snli --backbone "$lm" --models grassmann-tiny --corpus snli --out "$tmp/x"
[ ! -e "$tmp/x" ] && pass "... none of them leaves a folder behind" || fail "a refused run left $tmp/x"
want="--hypothesis: .*gw/last.safetensors reads text with a word tokenizer, with no \[CLS\]"; expect 1 "features: --hypothesis with a model that cannot read pairs" "$GF" features --ckpt "$tmp/gw/last.safetensors" --text the --hypothesis game
want="--max-sent does not apply to one --text"; expect 2 "features: --max-sent without --hypothesis" "$GF" features --ckpt "$lm" --text hi --max-sent 4
want="--seed does not apply with --temperature 0"; expect 2 "generate: --seed with greedy decoding" "$GF" generate --ckpt "$tmp/gw/last.safetensors" --temperature 0 --seed 3
want="--top-k does not apply with --temperature 0"; expect 2 "generate: --top-k with greedy decoding" "$GF" generate --ckpt "$tmp/gw/last.safetensors" --temperature 0 --top-k 5
"$GF" init --model grassmann-tiny --set task=classify --set head.n_classes=3 --vocab 30522 --set max_len=128 --out "$tmp/cls.safetensors" >/dev/null
"$GF" init --model grassmann-tiny --set head.kind=classify --set head.n_classes=3 --out "$tmp/cls64.safetensors" >/dev/null
want=; expect 0 "eval of a classifier made by init (no recipe, no --task): scored as a classifier" "$GF" eval --ckpt "$tmp/cls.safetensors" --corpus "$tmp/snli64" --split dev --json
$PY -c "import json,sys; e=json.load(open('$tmp/out')); sys.exit(not (e['pairs'] == 64 and 'confusion' in e))" && pass "... its accuracy and confusion on the 64 pairs" || fail "classifier eval: $(head -c 300 "$tmp/out")"
want="--seq-len does not apply to --task snli \(.*cls.safetensors is a classifier\)"; expect 2 "eval: --seq-len for a classifier" "$GF" eval --ckpt "$tmp/cls.safetensors" --corpus "$tmp/snli64" --seq-len 8
want="--stream does not apply to --task snli"; expect 2 "eval: --stream for a classifier" "$GF" eval --ckpt "$tmp/cls.safetensors" --corpus "$tmp/snli64" --stream
want="--max-sent does not apply to --task lm \(the default\)"; expect 2 "eval: --max-sent for a language model" "$GF" eval --ckpt "$lm" --corpus tinyshakespeare --max-sent 8
want="--max-sent does not apply to --task lm \(the task .*gw/last.safetensors was trained for\)"; expect 2 "... named as the task the checkpoint was trained for" "$GF" eval --ckpt "$tmp/gw/last.safetensors" --corpus "$tmp/small.txt" --max-sent 8
want="--task lm: .*cls.safetensors is a classifier \(head classify, 3 classes\); it predicts labels"; expect 1 "eval --task lm of a classifier" "$GF" eval --ckpt "$tmp/cls.safetensors" --corpus tinyshakespeare --task lm
want="--corpus tinyshakespeare holds no data of task snli .*cls.safetensors is a classifier"; expect 1 "eval of a classifier on a text corpus" "$GF" eval --ckpt "$tmp/cls.safetensors" --corpus tinyshakespeare
want="--corpus snli holds the data of task snli .*a.safetensors is a language model"; expect 1 "eval of a language model on sentence pairs" "$GF" eval --ckpt "$lm" --corpus snli
want="--task snli: .*a.safetensors is a language model; it predicts tokens"; expect 1 "eval --task snli of a language model" "$GF" eval --ckpt "$lm" --corpus snli --task snli
want="cls64.safetensors has vocab_size 64 but the tokenizer of --task snli gives 30522"; expect 1 "eval of a classifier for another vocabulary" "$GF" eval --ckpt "$tmp/cls64.safetensors" --corpus "$tmp/snli64"
want="cls.safetensors: score predicts each next token.*head is classify"; expect 1 "score of a classifier" "$GF" score --ckpt "$tmp/cls.safetensors" --tokens "$tmp/tok.txt"
want="cls.safetensors: generate needs a language model.*head is classify"; expect 1 "generate from a classifier" "$GF" generate --ckpt "$tmp/cls.safetensors"
want="--backbone .*cls.safetensors is a classifier \(head classify, 3 classes\), not a pretrained model"; expect 1 "a classifier as --backbone" "$GF" train --task snli --backbone "$tmp/cls.safetensors" --head $H --corpus "$tmp/snli64" --out "$tmp/x"
printf '{"name": "head", "d_model": 16, "d_model": 32, "d_ff": 32, "n_layer": 1, "layers": ["grassmann"]}' >"$tmp/duphead.json"
want='duphead.json: the key "d_model" appears twice'; expect 1 "a --head file with a key twice (cJSON would read the first)" "$GF" train --task snli --backbone "$lm" --head "$tmp/duphead.json" --corpus "$tmp/snli64" --out "$tmp/x"

echo "cli: --set is checked against the config the task builds, and reaches every stack"
want="the model is set to vocab_size=30522 head.kind=classify head.n_classes=3 direction=bidirectional segments=2"
expect 0 "train --task snli --set direction=bidirectional (a classifier's setting, not an LM's)" "$GF" train --task snli --model grassmann-tiny --set direction=bidirectional --set rank=8 --corpus "$tmp/snli64" --steps 1 --batch 4 --eval-every 0 --out "$tmp/setcls"
$PY -c "
import json, struct, sys
b = open('$tmp/setcls/last.safetensors', 'rb').read(); n = struct.unpack('<Q', b[:8])[0]
c = json.loads(json.loads(b[8:8 + n])['__metadata__']['config'])
sys.exit(not (c['direction'] == 'bidirectional' and all(l['rank'] == 8 for l in c['layers'])))" && pass "... the run's model is bidirectional with rank 8" || fail "--set on snli: $(head -c 300 "$tmp/err")"
want="--set vocab_size=10 does not apply with --task lm: the vocabulary is the tokenizer's"
expect 2 "train --set vocab_size=10: refused, not ignored" "$GF" train --model grassmann-tiny --set vocab_size=10 --corpus tinyshakespeare --steps 1 --out "$tmp/x"
want='--set head.kind=next_token does not apply with --task snli: the task sets head.kind "classify" vs "next_token"'
expect 2 "train --task snli --set head.kind=next_token: refused, naming what the task sets" "$GF" train --task snli --model grassmann-tiny --set head.kind=next_token --corpus "$tmp/snli64" --steps 1 --out "$tmp/x"
want="--set max_len=50 does not apply with --task snli: the task sets max_len 99 vs 50"
expect 2 "train --task snli --set max_len=50 (pairs of 2 x 48 pieces need 99): refused" "$GF" train --task snli --model grassmann-tiny --set max_len=50 --corpus "$tmp/snli64" --steps 1 --out "$tmp/x"
[ ! -e "$tmp/x" ] && pass "... and nothing is created" || fail "a refused run left $tmp/x"
want="classify head has n_classes 2; SNLI has 3 labels"; expect 1 "compare --task snli checks each model's --set against the classifier, before any run" "$GF" compare --task snli --models grassmann-tiny,transformer-tiny --set head.n_classes=2 --corpus "$tmp/snli64" --out "$tmp/cmpset"
[ ! -e "$tmp/cmpset" ] && pass "... and creates nothing" || fail "compare left $tmp/cmpset"
printf '{"base": "grassmann-tiny", "tie_head": false, "stacks": [{"name": "head", "d_model": 16, "d_ff": 32, "n_layer": 2, "layers": [{"mixer": "grassmann", "rank": 4, "offsets": [1, 2]}, "attention"]}]}' >"$tmp/stacks.json"
"$GF" info --config "$tmp/stacks.json" --set rank=8 --set offsets=1,3 --json >"$tmp/out" 2>"$tmp/err"
$PY - "$tmp/out" <<'PYEOF' && pass "--set rank=8 offsets=1,3 reach every Grassmann layer of every stack" || fail "--set across stacks: $(head -c 300 "$tmp/err")"
import json, sys
c = json.load(open(sys.argv[1]))["config"]
first, head = c["layers"], c["stacks"][0]["layers"]
assert all(l["rank"] == 8 and l["offsets"] == [1, 3] for l in first), first
assert head[0]["rank"] == 8 and head[0]["offsets"] == [1, 3] and head[1]["mixer"] == "attention" and "rank" not in head[1], head
PYEOF
want="a list gives one value per layer of the first stack, and this model has further stacks \(\"head\"\)"; expect 2 "--set rank=[4,8] with a further stack: refused, not half applied" "$GF" info --config "$tmp/stacks.json" --set 'rank=[4,8]'

echo "cli: the demo (scripts/demo.sh, 20 steps): trains, scores once, samples, names the next command"
STEPS=20 OUT="$tmp/demo" GF="$GF" bash scripts/demo.sh >"$tmp/demo.out" 2>"$tmp/demo.err"
[ $? = 0 ] && [ "$(grep -c 'eval step' "$tmp/demo.err")" = 1 ] && grep -q '^ROMEO:$' "$tmp/demo.out" \
    && [ "$(wc -c <"$tmp/demo.out")" -gt 300 ] \
    && grep -q 'build/grassflow compare --models grassmann-6L,transformer-6L' "$tmp/demo.err" \
    && pass "one evaluation, a 400-character sample, the next command" \
    || fail "demo: $(tail -5 "$tmp/demo.err") / $(head -c 300 "$tmp/demo.out")"

if [ $fails -ne 0 ]; then echo "cli: $fails FAILED"; exit 1; fi
echo "cli: all passed"
