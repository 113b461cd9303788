# Shared helpers of the shell tests: pass/fail counting and `expect CODE WHAT CMD...`, which runs CMD,
# checks its exit code and, if $want is set, that its stderr matches the extended regex $want.
fails=0
pass() { echo "  ok    $1"; }
fail() { echo "  FAIL  $1"; fails=$((fails + 1)); }
expect() {
    local code=$1 what=$2; shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ "$rc" -ne "$code" ]; then fail "$what: exit $rc, expected $code ($(head -c 400 "$tmp/err"))"; want=; return; fi
    if [ -n "${want:-}" ] && ! grep -Eq -- "$want" "$tmp/err"; then
        fail "$what: stderr does not match /$want/: $(head -c 400 "$tmp/err")"; want=; return
    fi
    want=
    pass "$what"
}
