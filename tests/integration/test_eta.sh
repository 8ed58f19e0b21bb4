#!/usr/bin/env bash
# The ETA of a graph run again: a --fresh run keeps what each task took in
# the run before (prev_duration_ms in the state), and `zerg status` of the
# stopped run says the time left from it; a graph with nothing measured
# and no estimate says no ETA.
source "$(dirname "$0")/lib.sh"

new_project eta
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "A-L1-001", "level": 1, "command": "sleep 0.2"},
 {"id": "B-L2-001", "level": 2, "dependencies": ["A-L1-001"],
  "command": "if [ -f slow ]; then sleep 30; else sleep 2; fi"}
]}
JSON
zerg rush --workers 1 --no-progress > "$PROJ/r1.out" 2>&1 || fail "run 1 failed"
out=$(zerg status)
! printf '%s\n' "$out" | grep -q '^ETA:' || fail "a complete run shows an ETA"
b1=$(state_field tasks.B-L2-001.duration_ms)
touch "$PROJ/slow"
rush_bg --workers 1 --no-progress --fresh
b_started() { [ "$(grep '"event":"task_started"' "$PROJ/.zerg/monitor.jsonl" | grep -c '"task":"B-L2-001"')" -ge 2 ]; }
wait_for 30 b_started
kill -INT "$RUSH_PID"
rush_wait 30
prev=$(state_field tasks.B-L2-001.prev_duration_ms)
[ "$prev" = "$b1" ] || fail "the run before's duration of B ($b1 ms) is not kept: $prev"
out=$(zerg status)
printf '%s\n' "$out" | grep -Eq '^ETA:    0:0[1-3] once resumed on 1 worker$' ||
    fail "no ETA from the run before: $(printf '%s\n' "$out" | head -4)"
pass "--fresh keeps the run before's durations ($prev ms); status: $(printf '%s\n' "$out" | grep '^ETA:')"
echo "$TESTS_PASSED passed, 0 failed"
