#!/usr/bin/env bash
# scripts/job.sh, how a study runs a long job and stops, on a made-up study whose job records every signal it
# gets: SIGINT or SIGTERM sent to the study's pid alone (`kill PID`) and Ctrl-C at a terminal (a pty) each
# reach the job as one SIGTERM, and the study exits with 130 or 143 saying what it keeps; a job's own exit
# status passes through; the message goes to the study's stderr when the job's is redirected. (Before scripts/job.sh, bash deferred a signal sent to a study until its run ended.)
#   bash tests/studies/job.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d /tmp/grassflow-job-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/lib.sh
# the job: records "started", then each signal; after the first it goes on for a second (time for a second
# signal to arrive and be recorded), then exits as grassflow does after a stop
cat >"$tmp/job.sh" <<'JOB'
stop=""
trap 'echo TERM >>"$1"; stop=143' TERM
trap 'echo INT >>"$1"; stop=130' INT
echo started >>"$1"
echo $$ >"$1.pid"
while [ -z "$stop" ]; do sleep 0.05; done
sleep 1
exit "$stop"
JOB
cat >"$tmp/study.sh" <<STUDY
set -euo pipefail
cd "$PWD"
JOB_STOPPED="the made-up run saved its state"
. scripts/job.sh
job_run bash "$tmp/job.sh" "\$1" 2>>"$tmp/job.err" || exit \$? # (the stop's message still reaches the study's stderr)
job_run bash -c 'exit 3'
STUDY
# each case from Python: a study started in the background by bash would ignore SIGINT (bash's rule, as
# under nohup); from a terminal or a job manager it does not
PYCODE='
import os, pty, signal, subprocess, sys, time
study, marker, how = sys.argv[1], sys.argv[2], sys.argv[3]
def started():
    for _ in range(200):
        if os.path.exists(marker) and "started" in open(marker).read():
            return True
        time.sleep(0.05)
    return False
if how == "tty":
    pid, fd = pty.fork()
    if pid == 0:
        signal.signal(signal.SIGINT, signal.SIG_DFL) # (this test itself may have started with SIGINT ignored)
        os.execvp("bash", ["bash", study, marker])
    started()
    os.write(fd, b"\x03")
    out = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    rc = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    err = out.decode(errors="replace")
else:
    p = subprocess.Popen(["bash", study, marker], stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    if how != "none":
        started()
        p.send_signal(getattr(signal, how))
    try:
        err = p.communicate(timeout=30)[1]
    except subprocess.TimeoutExpired:
        p.kill()
        os.kill(int(open(marker + ".pid").read()), signal.SIGKILL) # the job, in a process group of its own
        print("still running 30 s after the signal")
        sys.exit(0)
    rc = p.returncode
got = open(marker).read().split() if os.path.exists(marker) else []
print("rc=%d job=%s msg=%d" % (rc, ",".join(got), "stopped by SIG" in err and ("the made-up run saved its state" in err or
                                                                      "the run in progress saved its state" in err)))'
case_() { # how, what is wanted, what it checks
    local got
    got=$(timeout 90 /usr/bin/python3 - "$tmp/study.sh" "$tmp/m-$1" "$1" 2>&1 <<<"$PYCODE")
    [ -f "$tmp/m-$1.pid" ] && kill -KILL "$(cat "$tmp/m-$1.pid")" 2>/dev/null # a job left by a failure
    [ "$got" = "$2" ] && pass "$3" || fail "$3: got $got, wanted $2"
}
case_ SIGINT "rc=130 job=started,TERM msg=1" "SIGINT to the study's pid: the job gets one SIGTERM, the study exits 130 saying so"
case_ SIGTERM "rc=143 job=started,TERM msg=1" "SIGTERM to the study's pid: the same, exit 143"
case_ tty "rc=130 job=started,TERM msg=1" "Ctrl-C at a terminal: the job gets one SIGTERM (not the terminal's SIGINT too), exit 130"
# a study that sets no JOB_STOPPED (g2p_study, image_study) under set -u: the default message
sed -i '/^JOB_STOPPED=/d' "$tmp/study.sh"
rm -f "$tmp/m-SIGTERM"
case_ SIGTERM "rc=143 job=started,TERM msg=1" "a study that sets no JOB_STOPPED (set -u): exit 143 with the default message"
printf 'echo started >>"$1"\n' >"$tmp/job.sh"
case_ none "rc=3 job=started msg=0" "no signal: a job's exit status (3) is the study's"
# the studies that use it start at their full size too (a status line, no training): a line of theirs that
# fails under set -e while job.sh is read would end them at once, and their tests run --quick only
for s in mixer_study precision_study; do
    want="" expect 0 "scripts/$s.sh status (not --quick) starts" bash "scripts/$s.sh" --out "$tmp/$s" status
done
[ "$fails" = 0 ] && echo "job: all passed" || { echo "job: $fails failed"; exit 1; }
