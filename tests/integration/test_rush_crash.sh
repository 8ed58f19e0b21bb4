#!/usr/bin/env bash
# FR-5/FR-6: kill -9 of a worker mid-task.  The task is reassigned with
# retry_count untouched, a replacement worker is spawned, and the killed
# task's own processes are gone: the shell that runs the command (it
# writes its pid, $$, to task.pid) and the sleep it started.
source "$(dirname "$0")/lib.sh"

new_project crash
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "SLOW-L1-001", "level": 1,
  "command": "if [ ! -f first-run ]; then touch first-run; echo $$ > task.pid; sleep 300; fi; echo ok > slow.txt"},
 {"id": "FAST-L1-002", "level": 1, "command": "echo fast > fast.txt"},
 {"id": "NEXT-L2-001", "level": 2, "dependencies": ["SLOW-L1-001"], "command": "cat slow.txt > next.txt"}
]}
JSON
rush_bg --workers 2
wait_for 20 task_running SLOW-L1-001
wait_for 10 test -s "$PROJ/task.pid"
slot=$(slot_of SLOW-L1-001)
victim=$(worker_pid "$slot")
task_sh=$(cat "$PROJ/task.pid")
wait_for 10 pgrep -P "$task_sh" -x sleep
sleeper=$(pgrep -P "$task_sh" -x sleep)
for pid in "$task_sh" "$sleeper"; do
    tr '\0' '\n' < "/proc/$pid/environ" | grep -qx "ZERG_PROJECT=$PROJ" ||
        fail "process $pid is not a task of this project"
done
kill -9 "$victim"
rush_wait 60
[ "$RUSH_RC" -eq 0 ] || fail "rush exited $RUSH_RC: $(cat "$PROJ/rush.out")"
[ "$(task_status SLOW-L1-001)" = complete ] || fail "slow task $(task_status SLOW-L1-001)"
[ "$(task_status SLOW-L1-001 retry_count)" -eq 0 ] || fail "crash was charged to the retry budget"
[ "$(task_status SLOW-L1-001 crash_count)" -eq 1 ] || fail "crash_count"
has_event worker_crash || fail "no worker_crash event"
has_event task_reassigned || fail "no task_reassigned event"
has_event worker_respawn || fail "no worker_respawn event"
[ "$(state_field metrics.worker_respawns)" -ge 1 ] || fail "metrics.worker_respawns"
[ "$(state_field metrics.task_reassignments)" -ge 1 ] || fail "metrics.task_reassignments"
pass "killed worker's task reassigned uncharged; replacement spawned"
! alive "$task_sh" || fail "the killed task's shell $task_sh survived"
! alive "$sleeper" || fail "the killed task's sleep $sleeper survived"
no_procs
pass "the killed task's processes are gone"
# With resilience.enabled: false nothing is recovered automatically: the
# crashed worker's task fails permanently (reason crash), its dependents
# are blocked, the slot is not respawned, and the rush exits 1.
new_project off
sed -i 's/^resilience:$/resilience:\n  enabled: false/' "$PROJ/.zerg/config.yaml"
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "OFF-L1-001", "level": 1, "command": "kill -9 $PPID; sleep 5"},
 {"id": "OFF-L1-002", "level": 1, "command": "sleep 0.5"},
 {"id": "OFF-L2-001", "level": 2, "dependencies": ["OFF-L1-001"], "command": "true"}
]}
JSON
rc=0
zerg rush --workers 2 > "$PROJ/out.txt" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "resilience off: expected exit 1, got $rc"
[ "$(task_status OFF-L1-001)" = failed ] || fail "crashed task is $(task_status OFF-L1-001)"
[ "$(task_status OFF-L1-001 reason)" = crash ] || fail "reason $(task_status OFF-L1-001 reason)"
[ "$(task_status OFF-L2-001)" = blocked ] || fail "dependent not blocked"
[ "$(task_status OFF-L1-002)" = complete ] || fail "the healthy worker's task did not finish"
[ "$(events worker_respawn)" -eq 0 ] || fail "a worker was respawned with resilience off"
[ "$(events task_reassigned)" -eq 0 ] || fail "a task was reassigned with resilience off"
no_procs
pass "resilience.enabled: false: no reassignment, no respawn, exit 1"
echo "$TESTS_PASSED passed, 0 failed"
