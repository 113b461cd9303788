#!/usr/bin/env bash
# libFuzzer harnesses of every parser grassflow reads files with (clang-14, ASan + UBSan):
#   fuzz_safetensors  checkpoints and training states (reader + model loader)
#   fuzz_config       config JSON and --set KEY=VALUE
#   fuzz_meta         tokenizer and training-recipe JSON from checkpoint metadata
#   fuzz_text         corpus text through every tokenizer (invalid UTF-8, NULs, long lines)
#   fuzz_files        WordPiece vocabulary files and token caches
#   fuzz_import       Hugging Face DistilBERT folders (config.json, tokenizer_config.json, vocab.txt, weights)
#   fuzz_nli          SNLI files (jsonl, 14-column txt, TSV, CSV; plain or .xz) and the pair source
#   fuzz_lexicon      pronunciation lexicons (Festival's format, CMUdict's; plain or .xz) with each option
#   fuzz_images       MNIST's IDX files (plain or gzip) and a user's greyscale PGM and PNG images, resized
#   fuzz_torch        the reproductions' checkpoints: torch.save's zip, the restricted unpickler, views; .grasslm
# Usage:
#   bash tests/fuzz/run.sh SECONDS [HARNESS...]   run each harness SECONDS on a copy of its seed corpus
#   bash tests/fuzz/run.sh --smoke                 build, replay the seeds, run each 5 s (the test suite)
# Crashes are written to build/fuzz/crash-HARNESS-*; each one found becomes a seed (tests/fuzz/seeds)
# and so a regression test of the smoke run.
set -euo pipefail
cd "$(dirname "$0")/../.."
smoke=0
if [ "${1:-}" = "--smoke" ]; then smoke=1; secs=5; shift; else secs=${1:?usage: run.sh SECONDS [HARNESS...] | --smoke}; shift; fi
CC=${FUZZ_CC:-clang-14}
command -v $CC >/dev/null || { echo "fuzz: $CC not found; install it with: apt-get install clang-14 libclang-rt-14-dev" >&2; exit 1; }
out=build/fuzz
mkdir -p $out/obj
FLAGS="-g -O1 -std=c11 -D_GNU_SOURCE -Iinclude -Isrc -I/usr/include/x86_64-linux-gnu/openblas-openmp -fsanitize=address,undefined -fno-sanitize-recover=undefined -Wno-unknown-pragmas"
LIBS="-lcjson -llzma -lz -lpng16 -lm -L/usr/lib/x86_64-linux-gnu/openblas-openmp -Wl,-rpath,/usr/lib/x86_64-linux-gnu/openblas-openmp -lopenblas"
objs=() stale=()
for src in $(ls src/*/*.c src/*/*/*.c | grep -v '^src/cli/'); do # the library: every folder of src/ (tasks/NAME/ too) but the CLI
    o=$out/obj/$(echo "$src" | tr / _).o
    if [ ! -e "$o" ] || [ "$src" -nt "$o" ] || [ -n "$(find src include -name '*.h' -newer "$o" | head -1)" ]; then
        stale+=("$src")
    fi
    objs+=("$o")
done
# compiled and run on every core: each harness is one process of one thread
jobs=$(nproc 2>/dev/null || echo 1)
if [ ${#stale[@]} -gt 0 ]; then
    printf '%s\n' "${stale[@]}" | xargs -P "$jobs" -n 1 bash -c \
        'exec '"$CC $FLAGS"' -fsanitize=fuzzer-no-link -c "$1" -o "'"$out"'/obj/$(echo "$1" | tr / _).o"' _
fi
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(fuzz_safetensors fuzz_config fuzz_meta fuzz_text fuzz_files fuzz_import fuzz_nli fuzz_lexicon fuzz_images fuzz_torch)
fuzz_one() { # HARNESS: build it, run it $secs s on its corpus; its report in $out/HARNESS.report, exit 1 on a finding
    local h=$1 corpus=$out/corpus-$1
    $CC $FLAGS -fsanitize=fuzzer "tests/fuzz/$h.c" "${objs[@]}" $LIBS -o "$out/$h" || { echo "fuzz: $h: build failed" >"$out/$h.report"; return 1; }
    mkdir -p "$corpus"
    cp -n tests/fuzz/seeds/$h/* "$corpus/" 2>/dev/null || true
    # -rss_limit_mb: a forged size must not make us allocate gigabytes
    local rc=0
    ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1 OPENBLAS_NUM_THREADS=1 \
        "$out/$h" -max_total_time="$secs" -rss_limit_mb=2048 -max_len=65536 -timeout=10 \
        -artifact_prefix="$out/crash-$h-" "$corpus" tests/fuzz/seeds/$h 2>"$out/$h.log" || rc=1
    { echo "== $h: $secs s"; grep -E "^#[0-9]+.*DONE|Done [0-9]+ runs" "$out/$h.log" | tail -1 || true
      [ $rc = 0 ] || echo "fuzz: $h FAILED; see $out/$h.log and $out/crash-$h-*"; } >"$out/$h.report"
    return $rc
}
status=0
for ((i = 0; i < ${#harnesses[@]}; i += jobs)); do
    pids=()
    for h in "${harnesses[@]:i:jobs}"; do fuzz_one "$h" & pids+=($!); done
    for p in "${pids[@]}"; do wait "$p" || status=1; done
    for h in "${harnesses[@]:i:jobs}"; do cat "$out/$h.report" >&2; done
done
exit $status
