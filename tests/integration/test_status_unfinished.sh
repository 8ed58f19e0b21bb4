#!/usr/bin/env bash
# zerg status: the unfinished tasks of a big run read at a glance, one
# group per status with its count, the first ids, "+N more" and the
# distinct reasons with their counts, not one line per task.
source "$(dirname "$0")/lib.sh"

new_project big
python3 - "$PROJ" <<'PY'
import json, os, sys
proj = sys.argv[1]
tasks, st = [], {}
for i in range(3):
    tid = "BAD-L1-%03d" % i
    tasks.append({"id": tid, "level": 1, "command": "exit 3"})
    st[tid] = {"status": "waiting_retry", "level": 1, "retry_count": 1,
               "reason": "exit", "error": "command failed: exit 3",
               "retry_at": "2200-01-01T00:00:00.000Z"}
for i in range(2):
    tid = "RUN-L1-%03d" % i
    tasks.append({"id": tid, "level": 1, "command": "true"})
    st[tid] = {"status": "in_progress", "level": 1, "worker_id": i}
for i in range(200):
    tid = "P-L1-%03d" % i
    tasks.append({"id": tid, "level": 1, "command": "true"})
    st[tid] = {"status": "pending", "level": 1}
    if i < 4:
        st[tid]["reason"] = "interrupted by stop"
json.dump({"feature": "f", "tasks": tasks},
          open(proj + "/.gsd/specs/f/task-graph.json", "w"))
os.makedirs(proj + "/.zerg/state", exist_ok=True)
json.dump({"version": 1, "feature": "f", "run_id": "r1",
           "started_at": "2026-02-03T05:41:55.123Z", "current_level": 1,
           "status": "running", "tasks": st, "workers": {}, "levels": {},
           "metrics": {}}, open(proj + "/.zerg/state/f.json", "w"))
PY
out=$(zerg status) || fail "status failed: $out"
sect=$(printf '%s\n' "$out" | sed -n '/^Unfinished tasks/,/^[A-Z]/p' | sed '$d')
printf '%s\n' "$sect"
printf '%s\n' "$sect" | head -1 | grep -qx 'Unfinished tasks (205):' ||
    fail "no header with the count"
lines=$(printf '%s\n' "$sect" | wc -l)
[ "$lines" -le 8 ] || fail "205 unfinished tasks take $lines lines"
printf '%s\n' "$sect" | grep -Eq '^  in_progress +2  RUN-L1-000 \(W0\), RUN-L1-001 \(W1\)$' ||
    fail "the running group does not name its tasks and workers"
printf '%s\n' "$sect" | grep -Eq '^  waiting_retry +3  BAD-L1-000, BAD-L1-001, BAD-L1-002  \(retried when the run resumes\)$' ||
    fail "the waiting group is not one line"
printf '%s\n' "$sect" | grep -Eq '^ +3x \[exit\] command failed: exit 3$' ||
    fail "the shared reason is not counted once"
printf '%s\n' "$sect" | grep -Eq '^  pending +200  P-L1-000, .* \+194 more$' ||
    fail "the pending group is not capped with +N more"
printf '%s\n' "$sect" | grep -Eq '^ +4x interrupted by stop$' ||
    fail "the pending reason is not counted"
# The running group comes first: what the run is doing now.
[ "$(printf '%s\n' "$sect" | sed -n 2p | awk '{print $1}')" = in_progress ] ||
    fail "running tasks are not listed first"
pass "205 unfinished tasks in $lines lines, grouped by status"
echo "$TESTS_PASSED passed, 0 failed"
