#!/usr/bin/env bash
# Node loss under Slurm: slurmd killed with -9 while a worker runs a task.
# The controller declares the node down, srun reports the node failure
# and exits: a crash (FR-5), the task is requeued uncharged and runs again
# once the node is back (slurmd restarted; ReturnToService=2).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-slurm.sh"

new_project nodeloss
sed -i '1i rush:\n  isolation: none' "$PROJ/.zerg/config.yaml"
# The replacement waits in the queue while the node is down.
sed -i "s/spawn_ready_timeout_seconds: 5/spawn_ready_timeout_seconds: 60/" "$PROJ/.zerg/config.yaml"
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "SLOW-L1-001", "level": 1,
  "command": "if [ ! -f first-run ]; then touch first-run; sleep 300; fi; echo ok > slow.txt"}
]}
JSON
rush_bg --mode slurm --workers 1 --no-progress
wait_for 30 task_running SLOW-L1-001
wait_for 10 test -f "$PROJ/first-run"
kill -9 "$(slurm_pid slurmd)"
# The node is declared dead after SlurmdTimeout (5 s).
wait_for 60 has_event worker_crash
# A lost node takes its processes with it: the old step goes too.
for p in $(slurm_stepd_pids); do kill -9 "$p" 2>/dev/null || true; done
slurm_start_slurmd
rush_wait 120
[ "$RUSH_RC" -eq 0 ] || fail "rush exited $RUSH_RC: $(cat "$PROJ/rush.out")"
[ "$(task_status SLOW-L1-001)" = complete ] || fail "task is $(task_status SLOW-L1-001)"
[ "$(task_status SLOW-L1-001 retry_count)" -eq 0 ] || fail "node loss was charged to the retry budget"
grep '"event":"worker_crash"' "$PROJ/.zerg/monitor.jsonl" | grep -q 'node failure' ||
    fail "worker_crash does not name the node failure: $(grep worker_crash "$PROJ/.zerg/monitor.jsonl")"
has_event task_reassigned || fail "no task_reassigned event"
pass "slurmd killed: the task is requeued and completes when the node is back"
