#!/usr/bin/env bash
# Install what grassflow needs on Debian 12 (or Ubuntu) and is missing: compiler, OpenBLAS (both
# flavours: the OpenMP one is what grassflow links), libcjson, cmocka, liblzma, oneDNN (bf16 matmuls: a
# build without it runs fp32 only and says so), OpenMPI (data-parallel training under mpirun: a build
# without it runs one process and says so), PyTorch for the parity
# tests, jemalloc, which bench/run.sh gives the PyTorch twins, clang-14 with its runtime for the libFuzzer
# harnesses, valgrind for tests/trust/valgrind.sh, and festlex-cmu, the CMU Pronouncing Dictionary in
# Festival's lexicon format (/usr/share/festival/dicts/cmu/cmudict-0.4.out: what data/cmudict/ is cut from by
# scripts/make_cmudict_subset.py, and whose full counts tests/unit/test_lexicon.c checks when it is there), zlib
# (IDX images read gzip-compressed), libpng (a user's PNG images at predict) and dataset-fashion-mnist (/usr/share/datasets/fashion-mnist: the image task's
# data, issue 53; tests/unit/test_idx.c reads its test split when it is there), and procps (ps, pgrep, pkill:
# how scripts/job.sh stops a study's job, and the tests that look for a process left running).
# Safe to run again: it only installs what is absent.
set -euo pipefail
pkgs=(build-essential pkg-config libopenblas-dev libopenblas-openmp-dev libcjson-dev libcmocka-dev liblzma-dev zlib1g-dev libpng-dev libdnnl-dev
      openmpi-bin libopenmpi-dev
      python3-torch python3-numpy libjemalloc2 clang-14 libclang-rt-14-dev valgrind festlex-cmu dataset-fashion-mnist procps)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: everything is installed"
    exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
