#!/usr/bin/env bash
# DESIGN §19: a worker leaves on its own only when its orchestrator is
# really gone.  An orchestrator stopped (Ctrl-Z, SIGSTOP) for longer than
# the 10 s lease keeps its rush lock, so its workers wait for it instead of
# exiting; after SIGCONT the run finishes with no crash and no charge.
# Then the other side: once the orchestrator dies (kill -9) its lock is
# free and the workers leave.
source "$(dirname "$0")/lib.sh"

new_project stopped
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "P-L1-001", "level": 1, "command": "while [ ! -f go ]; do sleep 0.05; done; echo one > one.txt"},
 {"id": "P-L1-002", "level": 1, "command": "while [ ! -f go ]; do sleep 0.05; done; echo two > two.txt"},
 {"id": "P-L2-001", "level": 2, "dependencies": ["P-L1-001"], "command": "cat one.txt > three.txt"}
]}
JSON
rush_bg --workers 2
wait_for 30 task_running P-L1-001
wait_for 30 task_running P-L1-002
w0=$(worker_pid "$(slot_of P-L1-001)")
w1=$(worker_pid "$(slot_of P-L1-002)")
kill -STOP "$RUSH_PID"
# Past the lease (10 s): the workers either say they wait or leave.
slow_or_gone() { has_event orchestrator_slow || has_event orchestrator_gone; }
wait_for 30 slow_or_gone
if has_event orchestrator_gone || ! alive "$w0" || ! alive "$w1"; then
    kill -CONT "$RUSH_PID"
    fail "a worker left while its orchestrator was only stopped: $(grep orchestrator_gone "$PROJ/.zerg/monitor.log" | head -2)"
fi
n=$(events orchestrator_slow)
touch "$PROJ/go"
kill -CONT "$RUSH_PID"
rush_wait 60
[ "$RUSH_RC" -eq 0 ] || fail "rush exited $RUSH_RC: $(cat "$PROJ/rush.out")"
! has_event orchestrator_gone || fail "a worker said its orchestrator was gone"
! has_event worker_crash || fail "a worker crashed"
for t in P-L1-001 P-L1-002 P-L2-001; do
    [ "$(task_status $t retry_count)" -eq 0 ] || fail "$t was charged"
done
[ "$(cat "$PROJ/three.txt")" = one ] || fail "level 2 did not run on level 1's output"
pass "workers wait for a stopped orchestrator ($n orchestrator_slow), the run completes uncharged"

new_project killed
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "K-L1-001", "level": 1, "command": "sleep 1000"}
]}
JSON
rush_bg --workers 1
wait_for 30 task_running K-L1-001
w=$(worker_pid "$(slot_of K-L1-001)")
kill -9 "$RUSH_PID"
wait "$RUSH_PID" 2>/dev/null || true
RUSH_PID=""
wait_for 30 sh -c "! kill -0 $w"
pass "a worker whose orchestrator was killed still leaves"
echo "$TESTS_PASSED passed, 0 failed"
