#!/usr/bin/env bash
# Slurm mode on a one-node cluster (lib-slurm.sh): a 2-level graph on 2
# workers, each an srun job step named zerg-f-wN with the run in its
# comment, completes; no job of the run is left in squeue.  Then the same
# with inotify off (state.watch: poll): the orchestrator finds heartbeats
# and results by scanning the run directory.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-slurm.sh"

slurm_project() {
    new_project "$1"
    # Tasks write into the project itself: no git workspace needed.
    sed -i '1i rush:\n  isolation: none' "$PROJ/.zerg/config.yaml"
    graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "A-L1-001", "level": 1, "command": "echo a > a.txt; echo $SLURM_JOB_ID > a.job"},
 {"id": "B-L1-002", "level": 1, "command": "echo b > b.txt; echo $SLURM_JOB_ID > b.job"},
 {"id": "C-L2-001", "level": 2, "dependencies": ["A-L1-001", "B-L1-002"],
  "command": "cat a.txt b.txt > c.txt"}
]}
JSON
}

slurm_project basic
rc=0
timeout 120 "$ZERG" -C "$PROJ" rush --mode slurm --workers 2 --no-progress > "$PROJ/out.txt" 2>&1 || rc=$?
[ $rc -eq 0 ] || fail "slurm rush exited $rc: $(cat "$PROJ/out.txt")"
for t in A-L1-001 B-L1-002 C-L2-001; do
    [ "$(task_status $t)" = complete ] || fail "$t is $(task_status $t)"
done
[ "$(cat "$PROJ/c.txt")" = "$(printf 'a\nb')" ] || fail "c.txt: $(cat "$PROJ/c.txt")"
# The tasks ran inside Slurm jobs.
[ -s "$PROJ/a.job" ] && [ -s "$PROJ/b.job" ] || fail "tasks did not run under srun (no SLURM_JOB_ID)"
grep '"event":"worker_spawn"' "$PROJ/.zerg/monitor.jsonl" | grep -q '"mode":"slurm"' ||
    fail "worker_spawn does not say mode slurm"
grep -q 'slurm job zerg-f-w0' "$PROJ/.zerg/logs/f/worker-0.log" || fail "worker-0.log has no slurm marker"
[ -z "$(slurm_jobs)" ] || fail "jobs left after the rush: $(slurm_jobs)"
pass "2-level graph completes on 2 Slurm workers, no job left"

slurm_project polled
config_append "state:" "  watch: poll" "  poll_interval_ms: 50"
rc=0
timeout 120 "$ZERG" -C "$PROJ" rush --mode slurm --workers 2 --no-progress > "$PROJ/out.txt" 2>&1 || rc=$?
[ $rc -eq 0 ] || fail "polled slurm rush exited $rc: $(cat "$PROJ/out.txt")"
[ "$(task_status C-L2-001)" = complete ] || fail "C-L2-001 is $(task_status C-L2-001)"
has_event state_watch || fail "no state_watch event: inotify was used"
grep '"event":"state_watch"' "$PROJ/.zerg/monitor.jsonl" | grep -q 'every 50 ms' || fail "poll interval not applied"
pass "state.watch: poll completes the same graph without inotify"
