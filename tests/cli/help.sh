#!/usr/bin/env bash
# Every option a --help lists is one its command takes. The walk: the commands `grassflow --help` lists, the
# subcommands each one's usage line names (bench train|mixer|generate, data stats), and for each, every --option
# of its usage lines, every one that begins a line of its --help (the option lists, the tasks' options) and
# every one with a metavariable after it (--task NAME).
# Each is given as --OPT=x followed by an option no command has: the parser stops at that one before anything
# runs, and an option it does not know would have been named first ("unrecognized option '--OPT'"). A run of
# each takes a tenth of a second; the walk some seconds. (getopt takes an unambiguous prefix of a long option
# too, so an option listed as a prefix of one the parser has would pass.)
set -uo pipefail
BUILD=${1:-build}
GF="$BUILD/grassflow"
tmp=$(mktemp -d /tmp/grassflow-help-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
SENTINEL=--no-command-has-this-option
export GRASSFLOW_NO_REEXEC=1 # the parse alone is tried: no start again for a faster BLAS kernel

# The options a --help text (stdin) lists: those of its usage lines (up to the first blank line), those a line
# begins with (before its description, two spaces on: "--beta1 X, --beta2 X, --eps X   AdamW ..."), and any with
# a metavariable after it ("tasks (--task NAME) and their options:"), unless another command's ("grassflow info
# --mixers", "grassflow train --set KEY=VALUE"). Prose that names an option in passing ("blocks of --seq-len
# tokens") lists nothing.
listed() {
    awk 'NR == 1 || (usage && NF) { usage = NF > 0; print; next } { usage = 0 }
         $1 ~ /^--[a-z]/ { sub(/^ +/, ""); split($0, part, "  "); print part[1] }
         { while (match($0, /(grassflow [a-z]+ )?--[a-z][a-z0-9-]* [A-Z][A-Z0-9_]*/)) {
               m = substr($0, RSTART, RLENGTH); if (m !~ /^grassflow/) print m; $0 = substr($0, RSTART + RLENGTH) } }' |
        grep -oE -- '--[a-z][a-z0-9-]*' | sort -u
}

# The subcommands the first usage line of a --help (stdin) names right after "grassflow [--threads T] CMD".
subcommands() {
    head -1 | sed -E 's/^usage: grassflow (\[--threads T\] )?[a-z]+ ?//' | awk '{print $1}' |
        grep -xE '[a-z]+(\|[a-z]+)*' | tr '|' '\n'
}

echo "help: the top level"
"$GF" --help >"$tmp/top" 2>&1 || fail "grassflow --help: exit $?"
want=; expect 0 "grassflow --version" "$GF" --version
want=; expect 0 "grassflow --threads 1 info --help" "$GF" --threads 1 info --help
for o in $(listed <"$tmp/top"); do
    case "$o" in --version | --threads | --help) ;; *) fail "grassflow --help lists $o, which the walk does not try" ;; esac
done

commands=$(awk '/^commands:/ { on = 1; next } on && /^  [a-z]+ / { print $1 } on && !NF { on = 0 }' "$tmp/top")
[ "$(echo "$commands" | wc -w)" -ge 13 ] && pass "grassflow --help lists $(echo "$commands" | wc -w) commands" \
    || fail "grassflow --help: the commands are not where the walk looks: $commands"

# try N OPTION CMD...: whether CMD takes OPTION; a FAIL line into $tmp/try.N if it refuses it.
try() {
    local n=$1 o=$2; shift 2
    timeout 30 "$GF" "$@" "$o=x" "$SENTINEL" >/dev/null 2>"$tmp/try.$n.err" </dev/null
    if grep -qE -- "(unrecognized option|unknown option|not an option).*'$o('|=)|option '$o(=[^']*)?' is ambiguous" \
        "$tmp/try.$n.err"; then
        echo "grassflow $* --help lists $o, which it refuses: $(head -c 300 "$tmp/try.$n.err" | tr '\n' ' ')" >"$tmp/try.$n"
    fi
}
export -f try
export GF SENTINEL tmp

# every (command, listed option) pair, then each tried, four at a time (a run is mostly the libraries loading)
: >"$tmp/pairs"
for c in $commands; do
    subs=$("$GF" "$c" --help 2>/dev/null | subcommands)
    for s in ${subs:-""}; do
        if ! "$GF" $c $s --help >"$tmp/help" 2>"$tmp/err"; then fail "grassflow $c${s:+ $s} --help: exit $?"; continue; fi
        for o in $(listed <"$tmp/help"); do [ "$o" != --help ] && echo "$o $c $s" >>"$tmp/pairs"; done
        pass "grassflow $c${s:+ $s} --help lists $(listed <"$tmp/help" | grep -vcx -- --help) options"
    done
done
awk '{ print NR, $0 }' "$tmp/pairs" | xargs -P 4 -L 1 bash -c 'try "$@"' try
for r in $(ls "$tmp" | grep -E '^try\.[0-9]+$'); do fail "$(cat "$tmp/$r")"; done
checked=$(wc -l <"$tmp/pairs")
[ "$checked" -ge 100 ] && pass "$checked listed options tried, each refused one named above" \
    || fail "only $checked listed options found: is the walk reading the help texts?"

echo "help: the walk catches an option that is listed and refused"
rm -f "$tmp"/try.*
try 1 --no-such-flag data stats
try 2 --s train   # a prefix of --set, --steps, --seed, ...: ambiguous
try 3 --task data stats
[ -s "$tmp/try.1" ] && pass "an unknown option: $(head -c 120 "$tmp/try.1")..." || fail "an unknown option was not caught: $(head -c 300 "$tmp/try.1.err")"
[ -s "$tmp/try.2" ] && pass "an ambiguous one: $(head -c 120 "$tmp/try.2")..." || fail "an ambiguous option was not caught: $(head -c 300 "$tmp/try.2.err")"
[ ! -e "$tmp/try.3" ] && pass "data stats --task, taken" || fail "$(cat "$tmp/try.3")"

if [ $fails -ne 0 ]; then echo "help: $fails FAILED"; exit 1; fi
echo "help: all passed"
