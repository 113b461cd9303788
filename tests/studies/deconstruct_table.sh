#!/usr/bin/env bash
# scripts/deconstruct_table.py (the deconstruction's findings, issue 55) on made-up search summaries, in a
# second: each finding reproduced, refuted and in part by the numbers that decide it (the first and the third
# not decided between a match and a failure), a point still running not counted, a principle the search does
# not list left out of the table, another model's "(the model as it is)" not taken for attention, no attention
# point an error.
#   bash tests/studies/deconstruct_table.sh
set -uo pipefail
PY=/usr/bin/python3
tmp=$(mktemp -d /tmp/grassflow-deconstruct-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
# summary FILE ROW...: a search's summary.tsv, each ROW "model|point|seeds|val|status"
summary() {
    local f=$1; shift
    printf 'search\tmodel\tpoint\tseeds\tval_mean\tval_std\ttest_mean\tparams\tfolder\tstatus\n' >"$f"
    for r in "$@"; do
        IFS='|' read -r m p s v st <<<"$r"
        printf '1\t%s\t%s\t%s\t%s\t1.0\t%s\t1\tx\t%s\n' "$m" "$p" "$s" "$v" "$v" "$st" >>"$f"
    done
}
T=transformer-small
summary "$tmp/a.tsv" "grassmann-small|(the model as it is)|2|900|done" "$T|(the model as it is)|2|300|done" \
    "$T|set mixers=f,f,f,f, set span=1|2|700|done" "$T|set mixers=f,f,f,f|2|370|done" \
    "$T|set mixers=x,x,x,x, set form=relu|2|310|done" "$T|set mixers=f,a,f,a|2|308|done" \
    "$T|set mixers=f,a,f,a, set span=1|1|301|running"
$PY scripts/deconstruct_table.py "$tmp/a.tsv" >"$tmp/out" 2>"$tmp/err"
grep -q '^| none: standard attention | 300.00 ± 1.00 (+0.0%, 2 seeds) | - |$' "$tmp/out" &&
    pass "attention is transformer-small's own point, not another model's" || fail "attention row: $(head -4 "$tmp/out")"
grep -q '^1\. \*Mixing is indispensable\*: reproduced\. Without mixing the perplexity is +133\.3%' "$tmp/out" &&
    pass "finding 1 reproduced at +133.3%" || fail "finding 1: $(grep '^1\.' "$tmp/out")"
grep -q '^2\. .*: in part (1 of 2 within 5%' "$tmp/out" && pass "finding 2 in part (relu +3.3%, fixed-mix +23.3%)" ||
    fail "finding 2: $(grep '^2\.' "$tmp/out")"
grep -q '^3\. .*: reproduced (sequence-independent mixing (fixed-mix) +23.3% alone, +2.7% in the hybrid)\.$' "$tmp/out" &&
    pass "finding 3: the running no-mixing hybrid is not counted" || fail "finding 3: $(grep '^3\.' "$tmp/out")"
grep -q '^| no mixing (a position sees only itself) | 700.00 ± 1.00 (+133.3%, 2 seeds) | not run |$' "$tmp/out" &&
    pass "a point of the spec not done yet says: not run" || fail "not run: $(grep 'no mixing' "$tmp/out" | head -1)"
grep -q '^| form: sigmoid weights |' "$tmp/out" && fail "a principle the search does not list has a row (sigmoid)" ||
    pass "a principle the search does not list has no row"
grep -q '^| form: relu weights, no softmax | 310.00 ± 1.00 (+3.3%, 2 seeds) | - |$' "$tmp/out" &&
    pass "a hybrid the search does not list is a dash" || fail "relu row: $(grep 'relu' "$tmp/out" | head -1)"
summary "$tmp/b.tsv" "$T|(the model as it is)|2|300|done" "$T|set mixers=f,f,f,f, set span=1|2|310|done" \
    "$T|set mixers=x,x,x,x, set form=l1|2|430|done" "$T|set mixers=x,a,x,a, set form=l1|2|380|done"
$PY scripts/deconstruct_table.py "$tmp/b.tsv" --margin 10 >"$tmp/out" 2>"$tmp/err"
grep -q '^1\. .*: refuted\.' "$tmp/out" && grep -q '^2\. .*: refuted (0 of 1 within 10%' "$tmp/out" &&
    grep -q '^3\. .*: refuted (form: L1-normalised weights +43.3% alone, +26.7% in the hybrid)' "$tmp/out" &&
    pass "--margin 10: findings refuted, their numbers named" || fail "refuted: $(cat "$tmp/out" "$tmp/err")"
summary "$tmp/d.tsv" "$T|(the model as it is)|2|300|done" "$T|set mixers=f,f,f,f, set span=1|2|330|done" \
    "$T|set mixers=f,a,f,a, set span=1|2|303|done"
$PY scripts/deconstruct_table.py "$tmp/d.tsv" >"$tmp/out" 2>"$tmp/err"
grep -q '^1\. \*Mixing is indispensable\*: not decided (.*between 5% and 20%)\. Without mixing the perplexity is +10\.0%' \
    "$tmp/out" && pass "finding 1 at +10%, between a match and a failure: not decided" || fail "finding 1: $(grep '^1\.' "$tmp/out")"
grep -q '^3\. .*: not decided (no variant fails alone, beyond 20%; of those more than 5% behind alone, 1 of 1 within 5% in the hybrid: no mixing (a position sees only itself) +10\.0% alone, +1\.0% in the hybrid)\.$' \
    "$tmp/out" && pass "finding 3 with no variant failing alone (+10%): not decided, its numbers named" ||
    fail "finding 3 undecided: $(grep '^3\.' "$tmp/out")"
summary "$tmp/c.tsv" "$T|set mixers=f,f,f,f|2|340|done"
want='no finished .standard attention. point' expect 1 "no attention point: an error that names it" \
    $PY scripts/deconstruct_table.py "$tmp/c.tsv"
[ "$fails" -eq 0 ] && echo "deconstruct_table: all passed" || { echo "deconstruct_table: $fails FAILED"; exit 1; }
