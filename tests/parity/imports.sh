#!/usr/bin/env bash
# The public reproductions' checkpoints (src/import/alphaxiv.c, grasslm.c), held to their own forward written out in
# PyTorch (tests/parity/torch_ref/alphaxiv.py, grasslm.py). No checkpoint can be downloaded here, so small random
# models are saved as their code saves them: alphaXiv's two classes as its train.py does (torch.save of {epoch,
# model_state_dict, ...}), GrassLM's as its export.py writes .grasslm files (f32 and f16); then:
#   - each imported model's logits against the PyTorch forward (tests/parity/lm_import_check.c): GrassmannGPT with
#     torch.compile's "_orig_mod." prefix, BaseTransformer without, a 12-layer GrassmannGPT (each offset twice);
#     GrassLM of 3 layers in f32 and of 12 in f16 (its weights as the file holds them);
#   - grassflow import writes a grassflow checkpoint that gives the same logits bit for bit, and its tokenizer is
#     BERT's vocabulary when the vocabulary sizes agree (vocab.txt beside the file); score and generate read
#     best.pt itself as they read its import;
#   - grassflow export writes each back (--to alphaxiv, --to grasslm): their loaders (written out as their code
#     reads a file: torch.load and load_state_dict strict; .grasslm by name) read it and give the same logits, and
#     it imports again to the same logits bit for bit; a model their code cannot hold is refused;
#   - refused by name: a state dict of another model, --from an unknown format, an existing --out, a pickle that
#     asks for os.system, a truncated .grasslm and one without its magic.
#   bash tests/parity/imports.sh [BUILD]
set -uo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/../.."
GF="$BUILD/grassflow"
PY=/usr/bin/python3
if ! $PY -c 'import torch, numpy' 2>/dev/null; then
    echo "imports: PyTorch is missing for $PY; install it with: apt-get install python3-torch python3-numpy" >&2
    exit 1
fi
make --no-print-directory BUILD="$BUILD" "$BUILD/tests/lm_import_check" "$GF" >/dev/null || exit 1
tmp=$(mktemp -d /tmp/grassflow-imports-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}

# one model: FILE, then how the reference makes it
check() {
    local f=$1
    shift
    $PY "$@" --out "$f" || { fail "making $f"; return; }
    expect 0 "grassflow import $(basename "$f")" "$GF" import "$f" --out "$f.safetensors"
    if "$BUILD/tests/lm_import_check" "$f" "$f.ref.safetensors" --bits "$f.safetensors" >"$tmp/check" 2>&1; then
        pass "$(cat "$tmp/check")"
    else
        fail "$(cat "$tmp/check")"
    fi
}

echo "imports: alphaXiv's checkpoints held to their forward in PyTorch"
AX=tests/parity/torch_ref/alphaxiv.py GL=tests/parity/torch_ref/grasslm.py
check "$tmp/grassmann-2.pt" $AX make --kind grassmann --layers 2
check "$tmp/transformer-2.pt" $AX make --kind transformer --layers 2 --bare
check "$tmp/grassmann-12.pt" $AX make --kind grassmann --layers 12 --L 24 --bare
echo "imports: GrassLM's .grasslm files held to its forward in PyTorch"
check "$tmp/f32.grasslm" $GL make --layers 3
check "$tmp/f16.grasslm" $GL make --layers 12 --L 24 --f16

echo "imports: grassflow export writes them back, for their own code"
# FILE (the original), the reference's check of the exported file
export_check() {
    local f=$1 to=$2 back="${1%.*}-back.${1##*.}"
    shift 2
    expect 0 "export --to $to $(basename "$f")" "$GF" export --to "$to" --ckpt "$f.safetensors" --out "$back"
    if $PY "$@" --file "$back" --ref "$f.ref.safetensors" >"$tmp/check" 2>&1; then pass "$(cat "$tmp/check")"; else fail "$(cat "$tmp/check")"; fi
    if "$BUILD/tests/lm_import_check" "$back" "$f.ref.safetensors" --bits "$f" >"$tmp/check" 2>&1; then
        pass "... imported again: the same logits, bit for bit"
    else
        fail "re-import: $(cat "$tmp/check")"
    fi
}
export_check "$tmp/grassmann-2.pt" alphaxiv $AX check --kind grassmann --layers 2
export_check "$tmp/transformer-2.pt" alphaxiv $AX check --kind transformer --layers 2
export_check "$tmp/grassmann-12.pt" alphaxiv $AX check --kind grassmann --layers 12 --L 24
export_check "$tmp/f32.grasslm" grasslm $GL check
export_check "$tmp/f16.grasslm" grasslm $GL check
"$GF" init --model grassmann-tiny --out "$tmp/tiny.safetensors" >/dev/null 2>&1
want='cannot be written as an alphaXiv checkpoint: layer 0 is not theirs' expect 1 "export refuses a model their code cannot hold" \
    "$GF" export --to alphaxiv --ckpt "$tmp/tiny.safetensors" --out "$tmp/x.pt"
want='cannot be written as a .grasslm file: GrassLM is a post-norm' expect 1 "... and so does GrassLM's" "$GF" export --to grasslm --ckpt "$tmp/grassmann-2.pt.safetensors" --out "$tmp/x.grasslm"
want='--to nosuch: not a format grassflow writes; those it writes: alphaxiv, grasslm' expect 2 "an unknown --to" \
    "$GF" export --to nosuch --ckpt "$tmp/tiny.safetensors" --out "$tmp/x.pt"
[ ! -e "$tmp/x.pt" ] && [ ! -e "$tmp/x.grasslm" ] && pass "no refused export left a file" || fail "a refused export wrote a file"

echo "imports: the README's commands on a checkpoint of their shape (BERT's vocabulary, blocks of 128)"
cat >"$tmp/theirs.json" <<'JSON'
{"format": 2, "vocab_size": 30522, "d_model": 32, "n_layer": 2, "d_ff": 64, "max_len": 128, "norm": "pre",
 "pos": "learned", "tie_head": true, "gelu": "erf", "ln_eps": 1e-5,
 "layers": [{"mixer": "grassmann", "rank": 6, "offsets": [1, 2, 4, 8, 12, 16], "block": "pre-mix-norm"}]}
JSON
mkdir -p "$tmp/hub"
"$GF" init --config "$tmp/theirs.json" --seed 5 --out "$tmp/theirs.safetensors" >/dev/null 2>&1 \
    && "$GF" export --to alphaxiv --ckpt "$tmp/theirs.safetensors" --out "$tmp/hub/best.pt" >/dev/null 2>&1 \
    || fail "a checkpoint of their shape"
expect 0 "eval --ckpt best.pt --corpus wikitext-2-raw --eval-blocks chunks --eval-specials cls-sep (the README's)" \
    "$GF" eval --ckpt "$tmp/hub/best.pt" --corpus wikitext-2-raw --eval-blocks chunks --eval-specials cls-sep
grep -q 'chunks' "$tmp/out" && pass "... BERT's vocabulary from data/, scored in their protocol: $(head -1 "$tmp/out")" \
    || fail "eval printed: $(head -3 "$tmp/out")"
expect 0 "import best.pt --out grassmann.safetensors (the README's)" "$GF" import "$tmp/hub/best.pt" --out "$tmp/hub/grassmann.safetensors"
# their shape but for one key their code does not have: refused, never written without it
for extra in '"conv": 2' '"gate": false' '"gate_form": "scalar"' '"offset_mix": "learned"' '"offset_mix": "token"' '"plucker": false' '"window": 8'; do
    sed "s/\"block\": \"pre-mix-norm\"}/\"block\": \"pre-mix-norm\", $extra}/" "$tmp/theirs.json" >"$tmp/extra.json"
    "$GF" init --config "$tmp/extra.json" --seed 5 --out "$tmp/extra.safetensors" --force >/dev/null 2>&1 || fail "init with $extra"
    want='layer 0 is not theirs' expect 1 "export --to alphaxiv refuses their shape with $extra" \
        "$GF" export --to alphaxiv --ckpt "$tmp/extra.safetensors" --out "$tmp/x.pt"
done
[ ! -e "$tmp/x.pt" ] && pass "... and writes nothing" || fail "a refused export wrote $tmp/x.pt"

echo "imports: the tokenizer, and what is refused"
mkdir -p "$tmp/tok" && cp "$tmp/grassmann-2.pt" "$tmp/tok/best.pt"
{ printf '[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n'; sed -n '2000,2034p' data/bert-base-uncased/vocab.txt; } >"$tmp/tok/vocab.txt" # 40, as the models'
head -39 "$tmp/tok/vocab.txt" >"$tmp/v39" # one short: not this model's
expect 0 "a vocab.txt beside the checkpoint" "$GF" import "$tmp/tok/best.pt" --out "$tmp/tok/m.safetensors"
"$GF" info --ckpt "$tmp/tok/m.safetensors" | grep -q 'tokenizer   wordpiece' && pass "... it is the model's tokenizer" \
    || fail "the tokenizer: $("$GF" info --ckpt "$tmp/tok/m.safetensors" | grep tokenizer)"
echo "5 6 7 8 9 10 11" >"$tmp/ids"
a=$("$GF" score --ckpt "$tmp/tok/best.pt" --tokens "$tmp/ids" 2>/dev/null) b=$("$GF" score --ckpt "$tmp/tok/m.safetensors" --tokens "$tmp/ids" 2>/dev/null)
[ -n "$a" ] && [ "$a" = "$b" ] && pass "score reads best.pt itself, as its import: $a" || fail "score: best.pt '$a', imported '$b'"
a=$("$GF" generate --ckpt "$tmp/tok/best.pt" --prompt "$(sed -n 8p "$tmp/tok/vocab.txt")" --tokens 6 --seed 3 --stream 2>&1)
b=$("$GF" generate --ckpt "$tmp/tok/m.safetensors" --prompt "$(sed -n 8p "$tmp/tok/vocab.txt")" --tokens 6 --seed 3 --stream 2>&1)
[ -n "$a" ] && [ "$a" = "$b" ] && pass "generate --stream reads it too: the same text" || fail "generate: '$a' against '$b'"
mkdir -p "$tmp/short" && cp "$tmp/grassmann-2.pt" "$tmp/short/best.pt" && cp "$tmp/v39" "$tmp/short/vocab.txt"
expect 0 "a vocab.txt of another size beside it" "$GF" import "$tmp/short/best.pt" --out "$tmp/short/m.safetensors"
grep -q 'no tokenizer came with it' "$tmp/out" && pass "... is not taken, and the import says it has none" \
    || fail "a vocabulary of 39 for a model of 40: $(cat "$tmp/out")"
want='not the state dict of alphaXiv' expect 1 "another model's state dict is refused" \
    "$GF" import --from alphaxiv tests/fixtures/torch/plain.pt --out "$tmp/x.safetensors"
want='--from nosuch: no such format; the formats: hf-distilbert, alphaxiv, grasslm' expect 2 "an unknown format" \
    "$GF" import --from nosuch "$tmp/tok/best.pt" --out "$tmp/x.safetensors"
want='give --force to replace it' expect 1 "an existing --out is kept" "$GF" import "$tmp/tok/best.pt" --out "$tmp/tok/m.safetensors"
want='the global os.system' expect 1 "a pickle that asks for os.system" \
    "$GF" import --from alphaxiv tests/fixtures/torch/hostile/os-system.pt --out "$tmp/x.safetensors"
head -c 5000 "$tmp/f32.grasslm" >"$tmp/cut.grasslm"
want='runs past the end of the file' expect 1 "a truncated .grasslm" "$GF" import "$tmp/cut.grasslm" --out "$tmp/x.safetensors"
printf 'GRLN' | cat - <(tail -c +5 "$tmp/f32.grasslm") >"$tmp/magic.grasslm"
want='not a .grasslm file' expect 1 "a .grasslm without its magic" "$GF" import "$tmp/magic.grasslm" --out "$tmp/x.safetensors"
# damaged .grasslm files: a header whose sizes are not its weights', no layers, a weight twice (another left out)
$PY - "$tmp/f32.grasslm" "$tmp" <<'PYEOF' || fail "making the damaged .grasslm files"
import struct, sys
src, out = sys.argv[1], sys.argv[2]
raw = bytearray(open(src, "rb").read())
bad = bytearray(raw); struct.pack_into("<I", bad, 24, 41); open(out + "/vocab41.grasslm", "wb").write(bad)
bad = bytearray(raw); struct.pack_into("<I", bad, 8, 0); open(out + "/layers0.grasslm", "wb").write(bad)
at, (n,), ws = 68, struct.unpack_from("<I", raw, 64), []
for _ in range(n):  # (name, the entry's bytes)
    start = at
    (nl,) = struct.unpack_from("<I", raw, at); name = raw[at + 4:at + 4 + nl].decode(); at += 4 + nl
    (nd,) = struct.unpack_from("<I", raw, at); shape = struct.unpack_from("<%dI" % nd, raw, at + 4); at += 4 + 4 * nd
    numel = 1
    for x in shape: numel *= x
    at += 4 * numel
    ws.append((name, raw[start:at]))
dup = dict(ws)
ws = [(k, dup["blocks.0.ln1.weight"] if k == "ln_final.weight" else v) for k, v in ws]
open(out + "/twice.grasslm", "wb").write(raw[:68] + b"".join(v for _, v in ws))
PYEOF
want="its header's sizes .* are not its weights'" expect 1 "a .grasslm whose header is not its weights'" \
    "$GF" import "$tmp/vocab41.grasslm" --out "$tmp/x.safetensors"
want='0 layers \(1 to 64\)' expect 1 "a .grasslm of no layers" "$GF" import "$tmp/layers0.grasslm" --out "$tmp/x.safetensors"
want='weight blocks.0.ln1.weight is in it twice' expect 1 "a .grasslm with a weight twice (and one left out)" \
    "$GF" import "$tmp/twice.grasslm" --out "$tmp/x.safetensors"
# an alphaXiv checkpoint whose Pluecker pair list is not int64
$PY - "$tmp/grassmann-2.pt" "$tmp/idx8.pt" <<'PYEOF' || fail "making idx8.pt"
import sys, torch
ck = torch.load(sys.argv[1])
ck["model_state_dict"]["_orig_mod.blocks.0.grassmann.plucker.idx_j"] = ck["model_state_dict"]["_orig_mod.blocks.0.grassmann.plucker.idx_j"].to(torch.uint8)
torch.save(ck, sys.argv[2])
PYEOF
want='plucker.idx_i is not the int64 pair list of rank 6' expect 1 "a pair list that is not int64" \
    "$GF" import "$tmp/idx8.pt" --out "$tmp/x.safetensors"
[ ! -e "$tmp/x.safetensors" ] && pass "no refused import left a file" || fail "a refused import wrote $tmp/x.safetensors"
[ "$fails" -eq 0 ] || { echo "imports: $fails FAILED"; exit 1; }
echo "imports: all passed"
