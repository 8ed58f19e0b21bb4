#!/usr/bin/env bash
# A graceful stop: `zerg stop` and Ctrl-C give each running task SIGTERM,
# then workers.stop_grace_seconds to end by itself, then SIGKILL.  A task
# that traps TERM finishes its handler (a write that takes a moment); one
# that ignores TERM is killed once the grace is over; a second Ctrl-C
# kills at once.  The stopped task is pending again, uncharged, and
# --resume finishes it.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-stop.sh"

# ---- zerg stop: the TERM handler runs to its end ------------------------
new_project stop
trapping_graph
rush_bg --workers 1
wait_for 30 test -f "$PROJ/ready"
zerg stop > "$PROJ/stop.txt" || fail "zerg stop exited $?: $(cat "$PROJ/stop.txt")"
grep -q "SIGTERM and 10 s to end" "$PROJ/stop.txt" || fail "stop does not say the grace: $(cat "$PROJ/stop.txt")"
rush_wait 60
[ "$RUSH_RC" -eq 143 ] || fail "rush stopped by zerg stop exited $RUSH_RC, want 143"
[ "$(cat "$PROJ/marker" 2>/dev/null)" = handled ] || fail "the task's TERM handler did not run to its end"
[ "$(jdata rush_stop grace)" = 10 ] || fail "rush_stop grace $(jdata rush_stop grace)"
has_event stop_grace_over && fail "the task ended in its grace, yet stop_grace_over was logged"
check_stopped
grep -q "stopping: SIGTERM to the command" "$PROJ/.zerg/logs/f/tasks/G-L1-001/attempt-1.log" ||
    fail "the attempt log does not say the task was stopped"
pass "zerg stop: SIGTERM first, the task's handler finishes its write, the rush ends as stopped"

touch "$PROJ/go"
out=$(zerg rush --resume --workers 1 2>&1) || fail "--resume after the stop exited $?: $out"
[ "$(task_status G-L1-001)" = complete ] && [ "$(task_status G-L2-001)" = complete ] ||
    fail "--resume did not finish the stopped work"
pass "the stopped task is resumed by --resume"

# ---- a task that ignores TERM is killed after the grace -----------------
new_project ignore
config_append "  stop_grace_seconds: 1"
ignoring_graph
rush_bg --workers 1
wait_for 30 test -s "$PROJ/task.pid"
task_pid=$(cat "$PROJ/task.pid")
zerg stop > "$PROJ/stop.txt" || fail "zerg stop exited $?: $(cat "$PROJ/stop.txt")"
rush_wait 60
[ "$RUSH_RC" -eq 143 ] || fail "exit $RUSH_RC, want 143"
! alive "$task_pid" || fail "the task that ignores TERM survived the grace"
grep '"event":"stop_grace_over"' "$PROJ/.zerg/monitor.jsonl" | grep -q '"task":"G-L1-001"' ||
    fail "no stop_grace_over event naming the task"
grep -q "did not end within 1.0 s of SIGTERM: SIGKILL" "$PROJ/.zerg/logs/f/tasks/G-L1-001/attempt-1.log" ||
    fail "the attempt log does not say the task was killed after the grace"
check_stopped
pass "a task that ignores SIGTERM is killed once workers.stop_grace_seconds is over"

# ---- Ctrl-C of the rush: the same graceful stop -------------------------
new_project ctrlc
trapping_graph
rush_bg --workers 1
wait_for 30 test -f "$PROJ/ready"
kill -INT "$RUSH_PID"
rush_wait 60
[ "$RUSH_RC" -eq 130 ] || fail "Ctrl-C: exit $RUSH_RC, want 130"
[ "$(cat "$PROJ/marker" 2>/dev/null)" = handled ] || fail "Ctrl-C: the task's TERM handler did not run to its end"
check_stopped
pass "Ctrl-C: SIGTERM first, the task's handler finishes, the rush ends as stopped"

# ---- a second Ctrl-C kills at once (the grace would be 10 minutes) -------
new_project twice
config_append "  stop_grace_seconds: 600"
ignoring_graph
rush_bg --workers 1
wait_for 30 test -s "$PROJ/task.pid"
task_pid=$(cat "$PROJ/task.pid")
kill -INT "$RUSH_PID"
wait_for 30 has_event rush_stop
alive "$task_pid" || fail "the task that ignores TERM died at the first Ctrl-C"
kill -INT "$RUSH_PID"
rush_wait 60
[ "$RUSH_RC" -eq 130 ] || fail "second Ctrl-C: exit $RUSH_RC, want 130"
[ "$(events rush_stop)" -eq 2 ] || fail "$(events rush_stop) rush_stop events, want 2 (graceful, forced)"
! alive "$task_pid" || fail "the task survived the second Ctrl-C"
check_stopped
pass "a second Ctrl-C kills the running task at once"
echo "$TESTS_PASSED passed, 0 failed"
