#!/usr/bin/env bash
# FR-6: respawns per slot are capped; a slot at its cap is retired; with
# no slot left and work remaining the rush fails with exit 1 and says so.
# FR-5: a task that keeps killing its worker fails with crash_loop.
source "$(dirname "$0")/lib.sh"

new_project cap
config_append "  max_respawn_attempts: 2" "  max_task_crashes: 10"
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "K-L1-001", "level": 1, "command": "kill -9 $PPID; sleep 5"}
]}
JSON
rc=0
zerg rush --workers 1 > "$PROJ/out.txt" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "expected exit 1, got $rc"
[ "$(events worker_respawn)" -eq 2 ] || fail "expected 2 respawns, got $(events worker_respawn)"
has_event worker_retired || fail "no worker_retired event"
grep -q "no worker is left" "$PROJ/out.txt" || fail "summary: $(cat "$PROJ/out.txt")"
[ "$(task_status K-L1-001 retry_count)" -eq 0 ] || fail "crashes charged"
no_procs
pass "respawn cap reached: slot retired, rush fails with a clear message"

new_project loop
config_append "  max_respawn_attempts: 10" "  max_task_crashes: 2"
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "K-L1-001", "level": 1, "command": "kill -9 $PPID; sleep 5"},
 {"id": "K-L1-002", "level": 1, "command": "true"}
]}
JSON
rc=0
zerg rush --workers 1 > "$PROJ/out.txt" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "expected exit 1, got $rc"
[ "$(task_status K-L1-001)" = failed ] || fail "status $(task_status K-L1-001)"
[ "$(task_status K-L1-001 reason)" = crash_loop ] || fail "reason $(task_status K-L1-001 reason)"
# max_task_crashes 2: two crashes retried, the third fails the task.
[ "$(task_status K-L1-001 attempt)" -eq 3 ] || fail "attempts $(task_status K-L1-001 attempt), want 3"
[ "$(task_status K-L1-001 crash_count)" -eq 3 ] || fail "crashes $(task_status K-L1-001 crash_count), want 3"
[ "$(task_status K-L1-002)" = complete ] || fail "other task did not run"
pass "max_task_crashes 2: a task crashing its worker runs 3 times, the third crash is crash_loop"
echo "$TESTS_PASSED passed, 0 failed"
