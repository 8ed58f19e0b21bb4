#!/usr/bin/env bash
# FR-3: a SIGSTOPped worker stops heartbeating; it is found stale within
# the threshold plus one interval, killed, and its task finishes elsewhere.
# FR-2: a hung task times out (charged), retries, fails, blocks its
# dependents, the rest of the graph still runs, nothing is left running.
source "$(dirname "$0")/lib.sh"

new_project stopped
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "S-L1-001", "level": 1, "command": "sleep 1.5; echo $ZERG_WORKER_ID > s.txt"},
 {"id": "S-L1-002", "level": 1, "command": "sleep 0.2"}
]}
JSON
rush_bg --workers 2
wait_for 20 task_running S-L1-001
slot=$(slot_of S-L1-001)
victim=$(worker_pid "$slot")
kill -STOP "$victim"
stopped_at=$(date +%s.%N)
rush_wait 60
[ "$RUSH_RC" -eq 0 ] || fail "rush exited $RUSH_RC"
has_event heartbeat_stale || fail "no heartbeat_stale event"
[ "$(task_status S-L1-001)" = complete ] || fail "task not finished elsewhere"
[ "$(task_status S-L1-001 retry_count)" -eq 0 ] || fail "stale worker charged the task"
! alive "$victim" || fail "stopped worker $victim still exists"
pass "SIGSTOPped worker detected stale, killed, task finished elsewhere"

new_project hung
config_append "  task_stale_timeout_seconds: 0.6" "  retry_attempts: 1"
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "H-L1-001", "level": 1, "command": "sleep 1000"},
 {"id": "H-L1-002", "level": 1, "command": "echo fine > fine.txt"},
 {"id": "H-L2-001", "level": 2, "dependencies": ["H-L1-001"], "command": "true"},
 {"id": "H-L3-001", "level": 3, "dependencies": ["H-L2-001"], "command": "true"},
 {"id": "H-L2-002", "level": 2, "dependencies": ["H-L1-002"], "command": "echo also > also.txt"}
]}
JSON
rc=0
zerg rush --workers 2 > "$PROJ/out.txt" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "expected exit 1, got $rc"
[ "$(events task_timeout)" -eq 2 ] || fail "expected 2 task_timeout events, got $(events task_timeout)"
[ "$(task_status H-L1-001)" = failed ] || fail "hung task $(task_status H-L1-001)"
[ "$(task_status H-L1-001 reason)" = timeout ] || fail "reason $(task_status H-L1-001 reason)"
[ "$(task_status H-L1-001 retry_count)" -eq 1 ] || fail "timeouts must charge the retry budget"
[ "$(task_status H-L2-001)" = blocked ] || fail "dependent not blocked"
[ "$(task_status H-L3-001)" = blocked ] || fail "transitive dependent not blocked"
[ "$(task_status H-L2-002)" = complete ] || fail "independent task did not run"
grep -q "zerg retry" "$PROJ/out.txt" || fail "no next step in the summary: $(cat "$PROJ/out.txt")"
project_runs "sleep 1000" && fail "hung task process survived"
no_procs
pass "hung task: timeout, retry, failure, dependents blocked, others ran, nothing left"
echo "$TESTS_PASSED passed, 0 failed"
