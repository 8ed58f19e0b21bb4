#!/usr/bin/env bash
# FR-5 under Slurm: `scancel` of a busy worker's job step ends srun, which
# is the worker's end: its task is reassigned with the retry budget
# untouched (zerg status --json), a new worker is spawned and the rush
# completes.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-slurm.sh"

new_project scancel
sed -i '1i rush:\n  isolation: none' "$PROJ/.zerg/config.yaml"
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "SLOW-L1-001", "level": 1,
  "command": "if [ ! -f first-run ]; then touch first-run; sleep 300; fi; echo ok > slow.txt"},
 {"id": "NEXT-L2-001", "level": 2, "dependencies": ["SLOW-L1-001"], "command": "cat slow.txt > next.txt"}
]}
JSON
rush_bg --mode slurm --workers 1 --no-progress
wait_for 30 task_running SLOW-L1-001
wait_for 10 test -f "$PROJ/first-run"
job=$(slurm_jobs | awk 'NR == 1 {print $1}')
[ -n "$job" ] || fail "no zerg-f-w* job in squeue"
scancel "$job"
rush_wait 90
[ "$RUSH_RC" -eq 0 ] || fail "rush exited $RUSH_RC: $(cat "$PROJ/rush.out")"
"$ZERG" -C "$PROJ" status --json > "$PROJ/status.json"
python3 - "$PROJ/status.json" "$PROJ/.zerg/state/f.json" <<'PY' || fail "status --json: $(cat "$PROJ/status.json")"
import json, sys
st = json.load(open(sys.argv[1]))
full = json.load(open(sys.argv[2]))
assert st["failed"] == [], st["failed"]
assert st["unfinished"] == [], st["unfinished"]
t = full["tasks"]["SLOW-L1-001"]
assert t["status"] == "complete", t
assert t["retry_count"] == 0, "scancel was charged: %r" % t
assert full["metrics"]["task_reassignments"] >= 1, full["metrics"]
PY
has_event worker_crash || fail "no worker_crash event"
has_event task_reassigned || fail "no task_reassigned event"
grep '"event":"worker_crash"' "$PROJ/.zerg/monitor.jsonl" | grep -q 'slurm: cancelled' ||
    fail "worker_crash does not say the step was cancelled"
[ -z "$(slurm_jobs)" ] || fail "jobs left: $(slurm_jobs)"
pass "scancel of a busy worker: task reassigned uncharged, rush completes"
