#!/usr/bin/env bash
# The run's log rotates while the run goes on where the launcher's workers
# reopen a log by its path (capability reopens_logs: subprocess mode).  A
# fresh project has nothing to rotate at start, so a rotated file after a
# run of 2,400 tasks under logging.max_size_mb: 1 means rotation happened
# while it ran; every task's task_complete is still found across the
# files, and the file the run ended in is under the limit by the amount
# of the lines written after the last rotation, not the whole run.
source "$(dirname "$0")/lib.sh"

new_project rotate
gen_graph 4 600 "true"
config_append "logging:" "  max_size_mb: 1" "  keep: 20"
rush_bg --workers 4
rush_wait 300
[ "$RUSH_RC" -eq 0 ] || fail "rush exited $RUSH_RC: $(tail -5 "$PROJ/rush.out")"
ls "$PROJ/.zerg/" > "$PROJ/files.txt"
[ -e "$PROJ/.zerg/monitor.jsonl.1" ] ||
    fail "no rotated monitor.jsonl after a run that wrote past 1 MiB: $(cat "$PROJ/files.txt")"
size=$(stat -c %s "$PROJ/.zerg/monitor.jsonl")
[ "$size" -le $((2 * 1024 * 1024)) ] ||
    fail "the current log grew to $size bytes: it did not rotate while running"
n=$(cat "$PROJ/.zerg/monitor.jsonl" "$PROJ"/.zerg/monitor.jsonl.[0-9]* |
    grep '"event":"task_complete"' | grep -o '"task":"[^"]*"' | sort -u | wc -l)
[ "$n" -eq 2400 ] || fail "$n distinct task_complete events across the rotated files, want 2400"
pass "log rotated while the run went on; no task's events lost across the files"
echo "$TESTS_PASSED passed, 0 failed"
