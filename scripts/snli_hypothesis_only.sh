#!/usr/bin/env bash
# A hypothesis-only copy of the SNLI splits grassflow ships (data/snli: dev, test and the 1% training sample):
# every premise replaced by "." (one token), labels and hypotheses unchanged, so that a model trained and scored
# on it can only read the hypothesis. The classic check of what an NLI model learns from the hypothesis alone
# (docs/search.md, "SNLI heads"). Train on it with --corpus DIR (scripts/snli_study.sh --corpus DIR).
#   bash scripts/snli_hypothesis_only.sh DIR
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# = 1 ] || { sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
mkdir -p "$1"
for s in dev test train_0.01; do
    src=data/snli/snli_1.0_$s.tsv.xz
    [ -f "$src" ] || { echo "snli_hypothesis_only.sh: $src is missing (a clean checkout has it)" >&2; exit 1; }
    xz -dc "$src" | awk -F'\t' -v OFS='\t' '{ $2 = "."; print }' >"$1/snli_1.0_$s.tsv.tmp"
    mv "$1/snli_1.0_$s.tsv.tmp" "$1/snli_1.0_$s.tsv"
done
echo "snli_hypothesis_only.sh: $1 holds the hypothesis-only splits (--corpus $1)"
