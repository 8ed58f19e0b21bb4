#!/usr/bin/env bash
# A graceful stop in slurm mode (a one-node cluster, never skipped): `zerg
# stop` reaches the worker's step as `scancel --signal TERM`; the task gets
# SIGTERM and workers.stop_grace_seconds: one that traps TERM finishes its
# handler; one that ignores it is killed once the grace is over (`scancel
# --signal KILL`, then the job cancelled).  No job is left; the task is
# pending, uncharged.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-stop.sh"
source "$(dirname "$0")/lib-slurm.sh"

new_project trap
sed -i '1i rush:\n  isolation: none' "$PROJ/.zerg/config.yaml"
trapping_graph
rush_bg --mode slurm --workers 1 --no-progress
wait_for 60 test -f "$PROJ/ready"
zerg stop > "$PROJ/stop.txt" || fail "zerg stop exited $?: $(cat "$PROJ/stop.txt")"
rush_wait 90
[ "$RUSH_RC" -eq 143 ] || fail "exit $RUSH_RC, want 143: $(cat "$PROJ/rush.out")"
[ "$(cat "$PROJ/marker" 2>/dev/null)" = handled ] || fail "the task's TERM handler did not run to its end"
has_event stop_grace_over && fail "the task ended in its grace, yet stop_grace_over was logged"
check_stopped
wait_for 30 test -z "$(slurm_jobs)"
pass "slurm mode: zerg stop gives the task SIGTERM, its handler finishes, no job left"

new_project ignore
sed -i '1i rush:\n  isolation: none' "$PROJ/.zerg/config.yaml"
config_append "  stop_grace_seconds: 1"
ignoring_graph
rush_bg --mode slurm --workers 1 --no-progress
wait_for 60 test -s "$PROJ/task.pid"
task_pid=$(cat "$PROJ/task.pid")
zerg stop > "$PROJ/stop.txt" || fail "zerg stop exited $?: $(cat "$PROJ/stop.txt")"
rush_wait 90
[ "$RUSH_RC" -eq 143 ] || fail "exit $RUSH_RC, want 143: $(cat "$PROJ/rush.out")"
has_event stop_grace_over || fail "no stop_grace_over event"
wait_for 30 sh -c "! kill -0 $task_pid 2>/dev/null"
check_stopped
wait_for 30 test -z "$(slurm_jobs)"
pass "slurm mode: a task that ignores SIGTERM is killed after the grace, no job left"
echo "$TESTS_PASSED passed, 0 failed"
