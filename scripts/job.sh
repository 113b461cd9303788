# Sourced by the study scripts that run long, resumable jobs (g2p_study, image_study, mixer_study,
# precision_study): the one copy of how a study runs a job and how it stops.
#   job_run CMD...   CMD as a job of its own (its own process group), in the background, waited for; its exit
#                    status is CMD's
# A SIGINT or SIGTERM sent to the study, by Ctrl-C at a terminal or by `kill PID`, reaches the job in progress
# as one SIGTERM (a job started in the background ignores SIGINT; a terminal's Ctrl-C reaches the study alone,
# the job being in a group of its own, so the job gets the signal once): grassflow finishes its step, saves
# its state and exits. The study then prints JOB_STOPPED (set it to what it keeps and the command that
# continues) and exits with 130, or 143 after SIGTERM. Without this, bash defers a signal sent to the script
# until its foreground child ends: `kill PID` let a run of hours go on. /usr/bin/time in a job is spared the
# signal: it would die of it without recording the peak memory of the run it waits for.
# tests/studies/job.sh checks each of these.
JOB=""
JOB_STOPPED=${JOB_STOPPED:-"the run in progress saved its state; the same command continues it"}
exec {JOB_STDERR}>&2 # the study's own stderr, for the stop's message: a caller may redirect job_run's
job_stop() { # INT or TERM
    local job=${JOB:-$(jobs -p | tail -1)} # (a signal between `&` and JOB=$!: the job just started)
    if [ -n "$job" ]; then
        ps -eo pid=,pgid=,comm= | awk -v g="$job" '$2 == g && $3 != "time" { print $1 }' | xargs -r kill -TERM 2>/dev/null || true
        wait "$job" 2>/dev/null || true
        while kill -0 -- "-$job" 2>/dev/null; do sleep 0.2; done # the whole job: a run under a script too
    fi
    echo "$(basename "$0"): stopped by SIG$1; $JOB_STOPPED" >&"$JOB_STDERR"
    [ "$1" = TERM ] && exit 143
    exit 130
}
trap 'job_stop INT' INT
trap 'job_stop TERM' TERM
# (job control only while the job starts: its own process group, and no "Done" notices nor process groups of
# their own for the study's other commands, whose Ctrl-C then reaches the study as well)
job_run() {
    local rc=0
    set -m
    "$@" {JOB_STDERR}>&- &
    JOB=$!
    set +m
    wait "$JOB" || rc=$?
    JOB=""
    return $rc
}
