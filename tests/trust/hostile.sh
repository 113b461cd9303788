#!/usr/bin/env bash
# Hostile inputs: forged or broken checkpoints, training states, vocabularies, corpora and configs. Each
# must get exit code 1 (or 2 for a usage error) and a message that matches what is wrong; never a crash,
# a hang or a model. Each forged checkpoint is also given to the PyTorch loader (grassflow.torch.load), which
# must refuse it with the C loader's message. Writes the table of what grassflow answers to
# docs/hostile-inputs.md (--doc).
#   bash tests/trust/hostile.sh [BUILD] [--doc]
set -uo pipefail
BUILD=${1:-build}
doc=0; [ "${2:-}" = "--doc" ] && doc=1
cd "$(dirname "$0")/../.."
GF="$BUILD/grassflow"
# AddressSanitizer build? (grep reads all of ldd's output: grep -q would end the pipe early, and with
# pipefail the SIGPIPE of ldd would read as "no")
asan=0; if ldd "$GF" | grep libasan >/dev/null; then asan=1; fi
PY=/usr/bin/python3
tmp=$(mktemp -d /tmp/grassflow-hostile-XXXXXX)
export GRASSFLOW_CACHE="$tmp/cache"
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
# a message as a cell of docs/hostile-inputs.md (scripts/escape.py: gf_escape_md's rule)
md_cell() { $PY -c 'import sys; sys.path.insert(0, "scripts"); from escape import md_cell; print(md_cell(sys.argv[1]))' "$1"; }
"$GF" init --model grassmann-tiny --seed 1 --out "$tmp/good.safetensors" >/dev/null
"$GF" train --model grassmann-tiny --corpus tinyshakespeare --steps 2 --batch 2 --seq-len 8 --eval-every 0 --out "$tmp/run" >/dev/null 2>&1
printf '1 2 3 4\n' >"$tmp/tokens.txt"
mkdir -p "$tmp/in"
"$GF" quantize --ckpt "$tmp/good.safetensors" --weights int8 --out "$tmp/good_q8.safetensors" >/dev/null
$PY tests/trust/hostile/make_inputs.py "$tmp/in" "$tmp/good.safetensors" "$tmp/run/state.safetensors" "$tmp/good_q8.safetensors" \
    >"$tmp/cases.tsv" || { echo "hostile: generator failed"; exit 1; }
rows=()
while IFS=$'\t' read -r name what args expect; do
    args=${args//TOKENS/$tmp/tokens.txt}
    # shellcheck disable=SC2086
    timeout 60 "$GF" $args >/dev/null 2>"$tmp/err"
    rc=$?
    msg=$( (grep -m1 "error" "$tmp/err" || head -1 "$tmp/err") | sed "s|$tmp/in/||g; s|$tmp/||g")
    if [ $rc -ge 124 ]; then fail "$name: exit $rc (crash or hang): $(head -c 300 "$tmp/err")"
    elif [ $rc -ne 1 ] && [ $rc -ne 2 ]; then fail "$name: exit $rc, expected 1 ($msg)"
    elif ! grep -Eqi -- "$expect" "$tmp/err"; then fail "$name: message does not match /$expect/: $msg"
    else pass "$name: exit $rc: $msg"; fi
    shown=${args//$tmp\/in\//}
    rows+=("| $what | \`grassflow ${shown//$tmp\//}\` | $rc | $(md_cell "$msg") |")
done <"$tmp/cases.tsv"

# the same forged checkpoints given to the PyTorch loader (grassflow.torch.load): each refused as the C loader
# refuses it (a ValueError matching the case's regex: the C side's message), none allocating what its config
# claims (the address space capped at 1 GiB over what importing torch took)
if $PY -c 'import torch' 2>/dev/null; then
    OMP_NUM_THREADS=1 timeout 600 $PY tests/trust/hostile/torch_load.py cases 1024 "$tmp/cases.tsv" "$tmp/in" >"$tmp/torch.tsv" 2>"$tmp/torch.err"
    rc=$? n=0 same=0
    want_n=$(grep -c -- "--ckpt $tmp/in/" "$tmp/cases.tsv")
    while IFS=$'\t' read -r name kind msg; do
        expect=$(awk -F'\t' -v n="$name" '$1 == n {print $4}' "$tmp/cases.tsv")
        n=$((n + 1))
        if [ "$kind" = ValueError ] && grep -Eqi -- "$expect" <<<"$msg"; then
            same=$((same + 1)); pass "grassflow.torch.load, $name: ${msg//$tmp\/in\//}"
        else fail "grassflow.torch.load, $name: $kind, expected a ValueError matching /$expect/: ${msg:0:300}"; fi
    done <"$tmp/torch.tsv"
    [ $rc = 0 ] && [ "$n" = "$want_n" ] || fail "torch_load.py: exit $rc after $n of $want_n checkpoints (124: a hang) $(tail -c 300 "$tmp/torch.err")"
    rows+=("| each of the $want_n forged checkpoints above given to the PyTorch loader | \`grassflow.torch.load(FILE)\` | ValueError | the C loader's message for $same of them (tests/trust/hostile/torch_load.py) |")
    r=$(OMP_NUM_THREADS=1 timeout 120 $PY tests/trust/hostile/torch_load.py one 1024 "$tmp/run/state.safetensors" 2>&1 | tail -1)
    [[ $r == ValueError*"is a training state"* ]] && pass "grassflow.torch.load of a training state: ${r//$tmp\//}" \
        || fail "grassflow.torch.load of a training state: $r"
else
    echo "  skip  grassflow.torch.load on the forged checkpoints: no PyTorch for $PY"
fi

# valid but extreme: a training text that is a single 100 MB line must be read, not hang or exhaust memory
mkdir -p "$tmp/oneline"
$PY -c "
import random
r = random.Random(1); w = ['the', 'of', 'and', 'king', 'ROMEO', 'café', 'naïve']
open('$tmp/oneline/train.txt', 'w').write(' '.join(r.choice(w) for _ in range(22_000_000))[:100_000_000])
open('$tmp/oneline/valid.txt', 'w').write('the king of ROMEO\n')
open('$tmp/oneline/test.txt', 'w').write('and the café\n')"
for tk in char word; do
    start=$SECONDS
    timeout 300 "$GF" data stats --corpus "$tmp/oneline" --tokenizer $tk --no-cache >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc = 0 ] && pass "train.txt one 100 MB line, $tk tokenizer: read in $((SECONDS - start)) s" || fail "one 100 MB line ($tk): exit $rc $(head -c 300 "$tmp/err")"
    rows+=("| train.txt a single line of 100 MB ($tk tokenizer) | \`grassflow data stats --corpus DIR --tokenizer $tk\` | $rc | $(grep -m1 train "$tmp/out" | sed 's/  */ /g') ($((SECONDS - start)) s) |")
done
# the same line as a single-file corpus cannot be split at line ends: a clear error
timeout 300 "$GF" data stats --corpus "$tmp/oneline/train.txt" --no-cache >/dev/null 2>"$tmp/err"
rc=$?
msg=$(grep -m1 error "$tmp/err" | sed "s|$tmp/||g")
[ $rc = 1 ] && grep -q "cannot split into train/valid/test" "$tmp/err" && pass "one 100 MB line as a single file: $msg" || fail "single-file one line: exit $rc $msg"
rows+=("| a single-file corpus that is one 100 MB line | \`grassflow data stats --corpus train.txt\` | $rc | $(md_cell "$msg") |")

# a corrupted token cache is not used: it is rebuilt, with a note
# costs follow the input: under a 1 GB address-space limit (one thread: the BLAS and OpenMP runtimes
# reserve per-thread buffers), small files must not make grassflow allocate what their configs claim
"$GF" init --model grassmann-tiny --set pos=sinusoidal --set max_len=16777216 --out "$tmp/longmax.safetensors" >/dev/null
$PY - "$tmp/good.safetensors" "$tmp/bigvocab.safetensors" <<'PYEOF'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
h = json.loads(b[8:8 + struct.unpack("<Q", b[:8])[0]])
cfg = json.loads(h["__metadata__"]["config"]); cfg["vocab_size"] = 5000000; cfg["d_model"] = 256
hdr = json.dumps({"__metadata__": {"config": json.dumps(cfg)}}).encode()
open(sys.argv[2], "wb").write(struct.pack("<Q", len(hdr)) + hdr)
PYEOF
# RLIMIT_AS 500,000 KiB (488 MiB): grassflow itself and the BLAS buffers of one thread take about 380 MiB
MEM_KB=500000
mem_case() { # what expect-code regex command...
    local what=$1 code=$2 re=$3; shift 3
    if [ "$asan" = 1 ]; then echo "  skip  $what (AddressSanitizer reserves terabytes of address space)"; return; fi
    (ulimit -v $MEM_KB; OMP_NUM_THREADS=1 timeout 120 "$@" >"$tmp/out" 2>"$tmp/err")
    local rc=$?
    if [ $rc = "$code" ] && grep -Eq -- "$re" "$tmp/err" "$tmp/out"; then pass "$what"; else fail "$what: exit $rc $(head -c 300 "$tmp/err")"; fi
    local shown="${*:2}" msg
    msg=$( (grep -m1 -E "error|note" "$tmp/err" || head -1 "$tmp/out") | sed "s|$tmp/||g")
    rows+=("| $what (ulimit -v $MEM_KB) | \`grassflow ${shown//$tmp\//}\` | $rc | $(md_cell "$msg") |")
}
mem_case "a $(stat -c %s "$tmp/bigvocab.safetensors")-byte checkpoint whose config claims 5M x 256 embeddings: refused before allocating" 1 \
    'tensor "tok_emb.weight" is missing' "$GF" score --ckpt "$tmp/bigvocab.safetensors" --tokens "$tmp/tokens.txt"
mem_case "the same checkpoint given to generate" 1 'tensor "tok_emb.weight" is missing' \
    "$GF" generate --ckpt "$tmp/bigvocab.safetensors" --tokens 5
if [ "$asan" = 0 ] && $PY -c 'import torch' 2>/dev/null; then # the PyTorch loader: 512 MiB over torch's own
    r=$(OMP_NUM_THREADS=1 timeout 120 $PY tests/trust/hostile/torch_load.py one 512 "$tmp/bigvocab.safetensors" 2>&1 | tail -1)
    IFS=$'\t' read -r kind msg rss <<<"$r"
    [ "$kind" = ValueError ] && [[ $msg == *'tensor "tok_emb.weight" is missing'* ]] \
        && pass "the same checkpoint given to grassflow.torch.load: refused, peak RSS $rss MiB" \
        || fail "the same checkpoint given to grassflow.torch.load: $r"
    rows+=("| the same checkpoint given to the PyTorch loader (address space capped at 512 MiB over torch's) | \`grassflow.torch.load(\"bigvocab.safetensors\")\` | ValueError | ${msg//$tmp\//} (peak RSS $rss MiB) |")
fi
mem_case "sinusoidal positions with max_len 2^24: three tokens scored without a 2^24-row table" 0 "tokens 3" \
    "$GF" score --ckpt "$tmp/longmax.safetensors" --tokens "$tmp/tokens.txt"
"$GF" train --model grassmann-tiny --set pos=sinusoidal --set max_len=16777216 --corpus tinyshakespeare --steps 2 \
    --batch 2 --seq-len 8 --eval-every 0 --out "$tmp/longrun" >/dev/null 2>&1
mem_case "eval at --seq-len 2^24 of a sinusoidal model: blocks as long as the split (55,755), streamed when one would not fit" 0 \
    "tokens 55755" "$GF" eval --ckpt "$tmp/longrun/last.safetensors" --corpus tinyshakespeare --seq-len 16777216
mem_case "generate 3,000 tokens from the same model, within the limit" 0 "" \
    "$GF" generate --ckpt "$tmp/longrun/last.safetensors" --tokens 3000 --prompt abc
# one line of ids, far longer than a forward can hold within the budget: scored token by token
"$GF" init --model grassmann-tiny --set pos=none --out "$tmp/nopos.safetensors" >/dev/null
"$GF" init --model transformer-tiny --set pos=none --out "$tmp/attn.safetensors" >/dev/null
for n in 30000 300000 1000000; do $PY -c "import random; r = random.Random($n); print(' '.join(str(r.randrange(64)) for _ in range($n)))" >"$tmp/line$n.txt"; done
mem_case "one line of 300,000 ids: streamed in constant memory" 0 "tokens 299999" \
    "$GF" score --ckpt "$tmp/nopos.safetensors" --tokens "$tmp/line300000.txt"
mem_case "one line of 10^6 ids on an attention model: its KV cache would not fit; refused before the first step" 1 \
    "state for 999999 positions would take 488.3 MiB" "$GF" score --ckpt "$tmp/attn.safetensors" --tokens "$tmp/line1000000.txt"
if ! [ "$asan" = 1 ]; then # the streamed score is the batched one
    a=$("$GF" score --ckpt "$tmp/nopos.safetensors" --tokens "$tmp/line30000.txt" --json)
    b=$(ulimit -v $MEM_KB; OMP_NUM_THREADS=1 "$GF" score --ckpt "$tmp/nopos.safetensors" --tokens "$tmp/line30000.txt" --json)
    $PY -c "import json,sys; a,b=json.loads(sys.argv[1]),json.loads(sys.argv[2]); sys.exit(not (a['tokens']==b['tokens']==29999 and abs(a['loss']-b['loss'])<=1e-6*abs(a['loss'])))" "$a" "$b" &&
        pass "a 30,000-id line batched (one forward) and streamed (under the limit) score the same: $a / $b" ||
        fail "batched and streamed scores differ: $a / $b"
fi
rm -f "$tmp"/line*.txt
head -c 200000000 /dev/zero | xz -1 >"$tmp/bomb.txt.xz" # 29 KB that decompress to 200 MB
# an .xz is read up to 1000 times its size (at least 64 MiB), whatever the memory: no small file costs gigabytes
mem_case "a $(stat -c %s "$tmp/bomb.txt.xz")-byte .xz corpus of 200 MB: refused at 64 MiB (1000 times its size, at least 64 MiB), below a sixth of the address-space limit" 1 \
    "bomb.txt.xz: [0-9]+ bytes of xz decompress to more than 67108864 bytes, the most taken from them" \
    "$GF" data stats --corpus "$tmp/bomb.txt.xz" --no-cache
want="bomb.txt.xz: [0-9]+ bytes of xz decompress to more than 67108864 bytes, the most taken from them \(1000 times"
expect 1 "... and without a memory limit" "$GF" data stats --corpus "$tmp/bomb.txt.xz" --no-cache
grep -q "^HINT: if the file is genuine, give it decompressed: xz -dk .*bomb.txt.xz" "$tmp/err" && pass "... the hint: decompress it" || fail "bomb hint: $(cat "$tmp/err")"
want="decompresses to more than 1000000 bytes"; GRASSFLOW_MAX_TEXT=1000000 expect 1 "... and at GRASSFLOW_MAX_TEXT when set" "$GF" data stats --corpus "$tmp/bomb.txt.xz" --no-cache
want="GRASSFLOW_MAX_TEXT expects a number of bytes"; GRASSFLOW_MAX_TEXT=lots expect 2 "a bad GRASSFLOW_MAX_TEXT" "$GF" data stats --corpus "$tmp/bomb.txt.xz" --no-cache
rm -f "$tmp/bomb.txt.xz"
# a CSV of pairs (RFC 4180) whose quote never closes, with a line break every 15 bytes: one record may take
# 1 MiB, so it ends there, naming the line the quote opened on, whatever the file's size
$PY -c "open('$tmp/unclosed.csv', 'w').write('premise,hypothesis,label\\n\"A man sleeps,\\n' + 'and sleeps, on\\n' * 3_000_000)"
mem_case "a 45 MB CSV of pairs whose quote never closes: refused at 1 MiB, naming the line it opened on" 1 \
    "unclosed.csv:[0-9]+: a record \\(from line 2\\) passes 1048576 bytes" "$GF" data stats --corpus "$tmp/unclosed.csv" --no-cache
rm -f "$tmp/unclosed.csv"
# OpenBLAS reserves 128 MiB per thread and retries a failed allocation forever: under a tight limit with
# two threads grassflow must run or say why, never spin
if ! [ "$asan" = 1 ]; then
    (ulimit -v 420000; OMP_NUM_THREADS=2 timeout 60 "$GF" score --ckpt "$tmp/good.safetensors" --tokens "$tmp/tokens.txt" >"$tmp/out" 2>"$tmp/err")
    rc=$?
    if [ $rc = 0 ] || { [ $rc = 1 ] && grep -q "address-space limit (ulimit -v)" "$tmp/err"; }; then
        pass "two threads under a 410 MiB address-space limit: exit $rc, no spin ($(head -c 90 "$tmp/err" | tr '\n' ' '))"
    else
        fail "two threads under a 410 MiB limit: exit $rc (124: it spun) $(head -c 200 "$tmp/err")"
    fi
fi

# a cache of its own: exactly one .gftok, the one data stats reads
GRASSFLOW_CACHE="$tmp/cache1" "$GF" data stats --corpus tinyshakespeare >"$tmp/stats0" 2>/dev/null
c=$(ls "$tmp/cache1"/*.gftok 2>/dev/null)
[ "$(echo "$c" | grep -c gftok)" = 1 ] && printf 'garbage' | dd of="$c" bs=1 seek=100 conv=notrunc 2>/dev/null \
    || fail "corrupted cache: expected one token cache in $tmp/cache1, found: $(ls "$tmp/cache1")"
GRASSFLOW_CACHE="$tmp/cache1" "$GF" data stats --corpus tinyshakespeare >"$tmp/out" 2>"$tmp/err"
rc=$?
note=$(grep -m1 -i cache "$tmp/err" | sed "s|$tmp/||g")
[ $rc = 0 ] && grep -q "tokenized corpus cached in" "$tmp/err" && ! grep -q "from cache" "$tmp/err" && cmp -s "$tmp/out" "$tmp/stats0" \
    && pass "a corrupted token cache is ignored and rebuilt, the same statistics: $note" || fail "corrupted cache: exit $rc $(cat "$tmp/err")"
rows+=("| a token cache with 7 bytes overwritten | \`grassflow data stats --corpus tinyshakespeare\` | $rc | ${note:-(no note)}; the corpus is tokenized again |")

# round three: what the features added since let in (the full lists are in tests/train/snli.sh, distilbert.sh,
# cli.sh and trust.sh; a row each here for the table)
row_case() { # what expect-code regex command...: the exit code and the message, as a row of the table
    local what=$1 code=$2 re=$3; shift 3
    timeout 120 "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$? shown="${*:2}" msg
    if [ $rc = "$code" ] && grep -Eq -- "$re" "$tmp/err"; then pass "$what"; else fail "$what: exit $rc $(head -c 300 "$tmp/err")"; fi
    msg=$( (grep -m1 "error" "$tmp/err" || head -1 "$tmp/err") | sed "s|$tmp/||g")
    rows+=("| $what | \`grassflow ${shown//$tmp\//}\` | $rc | $(md_cell "$msg") |")
}
printf '{"base": "grassmann-tiny", "tie_head": false, "stacks": [{"name": "tok_emb", "d_model": 16, "d_ff": 32, "n_layer": 1, "layers": ["attention"]}]}' >"$tmp/stack-tok_emb.json"
row_case "a config whose stack is named tok_emb (freezing a backbone by name would take it too)" 1 \
    "a name the model's own tensors use" "$GF" info --config "$tmp/stack-tok_emb.json"
row_case "an existing run folder as the --out of a new run" 1 "holds a run \(state.safetensors, last.safetensors, best.safetensors, metrics.jsonl" \
    "$GF" train --model grassmann-tiny --corpus tinyshakespeare --steps 2 --batch 2 --seq-len 8 --out "$tmp/run"
row_case "--resume --stop-at 1 of a run at step 2" 1 "--stop-at 1: the run in .* is at step 2 already" \
    "$GF" train --resume "$tmp/run" --stop-at 1
$PY tests/parity/torch_ref/distilbert.py make --out "$tmp/hf" >/dev/null 2>&1 && $PY tests/parity/torch_ref/distilbert.py break --dir "$tmp/hf" --out "$tmp/hfb" --how nan >/dev/null 2>&1 && mv "$tmp/hfb/nan" "$tmp/hf-nan"
row_case "a DistilBERT folder with a NaN in a weight" 1 "NaN|not finite|non-finite" "$GF" features --ckpt "$tmp/hf-nan" --text "a man"
cp -r "$tmp/hf" "$tmp/hf-2e9" && $PY -c 'import json, sys; p = sys.argv[1] + "/config.json"; c = json.load(open(p)); c["n_layers"] = 2e9; json.dump(c, open(p, "w"))' "$tmp/hf-2e9"
row_case "a DistilBERT config.json with n_layers 2e9" 1 '"n_layers" is 2000000000' "$GF" features --ckpt "$tmp/hf-2e9" --text "a man"
cp -r "$tmp/hf" "$tmp/hf-lower" && printf '{"do_lower_case": "false"}' >"$tmp/hf-lower/tokenizer_config.json"
row_case "a DistilBERT tokenizer_config.json with \"do_lower_case\": \"false\" (a string)" 1 'do_lower_case' "$GF" features --ckpt "$tmp/hf-lower" --text "a man"
row_case "the weights file of a DistilBERT folder given as a checkpoint" 1 "pass the folder" "$GF" features --ckpt "$tmp/hf/model.safetensors" --text "a man"
rm -rf "$tmp"/hf*

# round four: names that broke an output format (JSON that is not UTF-8, a terminal escape sequence)
$PY - "$tmp/good.safetensors" "$tmp/producer.safetensors" <<'PYEOF'
import json, struct, sys
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
h["__metadata__"]["producer"] = "evil\x1b[2J"
hb = json.dumps(h).encode().replace(b"evil", b"ev\xffil")
open(sys.argv[2], "wb").write(struct.pack("<Q", len(hb)) + hb + b[8 + n:])
PYEOF
utf8_case() { # what check command...: exit 0, and stdout passes the Python check (t: stdout decoded strictly as UTF-8)
    local what=$1 check=$2; shift 2
    timeout 120 "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$? shown="${*:2}"
    if [ $rc = 0 ] && $PY -c "import json, sys; t = open(sys.argv[1], 'rb').read().decode('utf-8', 'strict'); $check" "$tmp/out" 2>"$tmp/pyerr"
    then pass "$what"; else fail "$what: exit $rc $(tail -1 "$tmp/pyerr") $(head -c 200 "$tmp/err")"; fi
    local msg
    msg=$(head -c 120 "$tmp/out" | sed "s|$tmp/||g" | tr '\n\t' '  ')
    rows+=("$(printf '| %s | `grassflow %s` | %s | %s... |' "$what" "${shown//$tmp\//}" $rc "$(md_cell "$msg")" \
        | $PY -c "import sys; print(sys.stdin.buffer.read().decode('utf-8', 'backslashreplace'))")") # the doc is UTF-8
}
utf8_case "a checkpoint whose producer holds a byte that is not UTF-8 and an escape sequence: info --json is UTF-8 (U+FFFD)" \
    "assert json.loads(t)['producer'] == 'ev\ufffdil\x1b[2J'" "$GF" info --ckpt "$tmp/producer.safetensors" --json
utf8_case "... and info's text shows the escape sequence as \\x1b, not to the terminal" \
    "assert '\x1b' not in t and 'written by ev\ufffdil\\\\x1b[2J)' in t, t" "$GF" info --ckpt "$tmp/producer.safetensors"
mkdir -p "$tmp/$(printf 'c\xff')" && cp tests/fixtures/v1/corpus.txt "$tmp/$(printf 'c\xff')/corpus.txt"
utf8_case "data stats --json of a corpus whose path is not UTF-8" "assert json.loads(t)['corpus'].endswith('c\ufffd/corpus.txt')" \
    "$GF" data stats --corpus "$tmp/$(printf 'c\xff')/corpus.txt" --tokenizer char --no-cache --json
"$GF" train --model grassmann-tiny --corpus tinyshakespeare --tokenizer byte --steps 1 --batch 2 --seq-len 8 --eval-every 0 --out "$tmp/bytes" >/dev/null 2>&1
utf8_case "features --json of a byte model: the bytes of a character are pieces that are not UTF-8 (U+FFFD)" \
    "assert json.loads(t)['pieces'] == ['c', 'a', 'f', '\ufffd', '\ufffd']" "$GF" features --ckpt "$tmp/bytes/best.safetensors" --text "café" --pieces --json

if [ $doc = 1 ]; then
    {
        echo "# Hostile inputs and what grassflow answers"
        echo
        echo "Made by \`bash tests/trust/hostile.sh build --doc\` on $(date -u +%Y-%m-%d) (the same script runs in \`make test\`, also under"
        echo "ASan + UBSan). Each input is forged from a good file by tests/trust/hostile/make_inputs.py. Exit code 1 is an"
        echo "error in the input, 2 a usage error; the message is the first line of stderr (paths shortened)."
        echo "The parsers are also fuzzed: tests/fuzz/run.sh."
        echo
        echo "| input | command | exit | grassflow says |"
        echo "|---|---|---|---|"
        printf '%s\n' "${rows[@]}"
    } >docs/hostile-inputs.md
    echo "hostile: wrote docs/hostile-inputs.md"
fi
if [ $fails -ne 0 ]; then echo "hostile: $fails FAILED"; exit 1; fi
echo "hostile: all passed"
