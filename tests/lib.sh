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
# stopped_at DIR N: DIR's training state is at step N. A run stopped by --stop-at and resumed is compared
# with an uninterrupted one; if the stop did not happen, that compares two whole runs and proves nothing.
stopped_at() {
    local st
    st=$(/usr/bin/python3 -c 'import sys, json, struct
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]
print(json.loads(b[8:8 + n])["__metadata__"]["step"])' "$1/state.safetensors" 2>&1 | tail -1)
    [ "$st" = "$2" ] && pass "... its state is at step $2" || fail "$1: the state is at step '$st', expected $2"
}
