#!/usr/bin/env bash
# An orchestrator that dies with its host leaves its Slurm jobs running
# (here: the rush and its srun processes killed with -9).  The next rush
# finds them by name and comment and cancels them: squeue shows none of
# the old run afterwards.  Before that, cleanup --dry-run lists them.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-slurm.sh"

new_project leftovers
sed -i '1i rush:\n  isolation: none' "$PROJ/.zerg/config.yaml"
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "SLOW-L1-001", "level": 1,
  "command": "if [ ! -f first-run ]; then touch first-run; sleep 300; fi; echo ok > slow.txt"},
 {"id": "SLOW-L1-002", "level": 1, "command": "sleep 300"}
]}
JSON
rush_bg --mode slurm --workers 2 --no-progress
wait_for 30 test -f "$PROJ/first-run"
wait_for 30 task_running SLOW-L1-002
old_run=$(state_field run_id)
# Frozen first, so it sees nothing; then srun and the orchestrator die
# without a chance to cancel anything.
kill -STOP "$RUSH_PID"
for p in $(pgrep -P "$RUSH_PID" -x srun); do kill -9 "$p"; done
kill -9 "$RUSH_PID"
wait "$RUSH_PID" 2>/dev/null || true
RUSH_PID=""
n_old=$(slurm_jobs | grep -c "zerg-run=$old_run" || true)
[ "$n_old" -eq 2 ] || fail "expected 2 jobs of the killed run, squeue has: $(slurm_jobs)"
# cleanup --dry-run names each of them and cancels none.
dry=$("$ZERG" -C "$PROJ" cleanup --dry-run 2>&1) || fail "cleanup --dry-run failed: $dry"
for id in $(slurm_jobs | grep "zerg-run=$old_run" | awk '{print $1}'); do
    printf '%s\n' "$dry" | grep -qx "would: cancel leftover Slurm job $id" ||
        fail "cleanup --dry-run does not name job $id: $dry"
done
[ "$(slurm_jobs | grep -c "zerg-run=$old_run")" -eq 2 ] || fail "cleanup --dry-run cancelled jobs"
pass "cleanup --dry-run lists the leftover Slurm jobs and cancels none"
# The graph no longer needs the long sleeps.
python3 - "$PROJ/.gsd/specs/f/task-graph.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
for t in g["tasks"]:
    t["command"] = "echo done > %s.txt" % t["id"]
json.dump(g, open(sys.argv[1], "w"))
PY
rc=0
timeout 120 "$ZERG" -C "$PROJ" rush --resume --mode slurm --workers 2 --no-progress > "$PROJ/out.txt" 2>&1 || rc=$?
[ $rc -eq 0 ] || fail "second rush exited $rc: $(cat "$PROJ/out.txt")"
has_event leftovers_removed || fail "no leftovers_removed event"
left=$(slurm_jobs | grep -c "zerg-run=$old_run" || true)
[ "$left" -eq 0 ] || fail "jobs of the old run still queued: $(slurm_jobs)"
pass "the next rush cancels the jobs a killed orchestrator left"
