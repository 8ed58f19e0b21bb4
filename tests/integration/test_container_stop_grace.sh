#!/usr/bin/env bash
# A graceful stop in container mode ($ZC_RUNTIME, never skipped): `zerg
# stop` reaches the worker inside its container as SIGTERM (the runtime's
# kill, forwarded by the container's init), the worker gives its task
# SIGTERM and workers.stop_grace_seconds; a task that traps TERM finishes
# its handler, one that ignores it is killed with its container once the
# grace is over.  No container is left; the task is pending, uncharged.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-stop.sh"
source "$(dirname "$0")/lib-container.sh"
zc_setup

new_project trap
zc_config "$PROJ"
trapping_graph
rush_bg --mode container --workers 1 --no-progress
wait_for 120 test -f "$PROJ/ready"
zerg stop > "$PROJ/stop.txt" || fail "zerg stop exited $?: $(cat "$PROJ/stop.txt")"
rush_wait 120
[ "$RUSH_RC" -eq 143 ] || fail "exit $RUSH_RC, want 143: $(cat "$PROJ/rush.out")"
[ "$(cat "$PROJ/marker" 2>/dev/null)" = handled ] || fail "the task's TERM handler did not run to its end in its container"
has_event stop_grace_over && fail "the task ended in its grace, yet stop_grace_over was logged"
check_stopped
zc_assert_no_containers "$PROJ" f
pass "container mode: zerg stop gives the task SIGTERM, its handler finishes, no container left"

new_project ignore
zc_config "$PROJ"
config_append "  stop_grace_seconds: 1"
ignoring_graph
rush_bg --mode container --workers 1 --no-progress
wait_for 120 test -s "$PROJ/task.pid"
zerg stop > "$PROJ/stop.txt" || fail "zerg stop exited $?: $(cat "$PROJ/stop.txt")"
rush_wait 120
[ "$RUSH_RC" -eq 143 ] || fail "exit $RUSH_RC, want 143: $(cat "$PROJ/rush.out")"
has_event stop_grace_over || fail "no stop_grace_over event"
check_stopped
zc_assert_no_containers "$PROJ" f
pass "container mode: a task that ignores SIGTERM is killed after the grace, with its container"
echo "$TESTS_PASSED passed, 0 failed"
