#!/usr/bin/env bash
# The fence of a requeued task under worktree isolation, at the layer the
# user sees: a task's worker is SIGKILLed and the task goes back to
# pending with its attempt and epoch unchanged until a worker is free to
# claim it.  A result of the dead attempt that lands then (written late,
# as a worker killed after its rename would leave it) must be fenced: not
# applied, its commit never merged into zerg/f/integration.  The task then
# runs again and only that attempt's work is merged.
source "$(dirname "$0")/lib.sh"

on_integration() { G log --format=%B main..zerg/f/integration | grep -c "^Task-ID: $1\$" || true; }

new_project fence
git_repo README=base
# Slot 0 is not replaced (auto_respawn false) and slot 1 is busy with
# LONG until the test lets it go: X waits as pending with its dead
# attempt's fence in place.
config_append "  auto_respawn: false" "  task_stale_timeout_seconds: 600"
graph <<JSON
{"feature": "f", "tasks": [
 {"id": "X-L1-001", "title": "x", "level": 1,
  "command": "[ \"\$ZERG_ATTEMPT\" -gt 1 ] || sleep 600; echo real > x.txt",
  "files": {"create": ["x.txt"]}},
 {"id": "X-L1-002", "title": "long", "level": 1,
  "command": "while [ ! -f '$PROJ/go' ]; do sleep 0.05; done; echo long > long.txt",
  "files": {"create": ["long.txt"]}}
]}
JSON
rush_bg --workers 2
wait_for 30 task_running X-L1-001
wait_for 30 task_running X-L1-002
wait_for 10 bash -c "[ \"\$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[\"tasks\"][\"X-L1-001\"][\"epoch\"])' '$PROJ/.zerg/state/f.json')\" != 0 ]"
slot=$(slot_of X-L1-001)
epoch=$(task_status X-L1-001 epoch)
run_id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$PROJ/.zerg/state/f.json")
kill -9 "$(worker_pid "$slot")"
wait_for 30 bash -c "grep -q '\"event\":\"task_reassigned\".*X-L1-001' '$PROJ/.zerg/monitor.jsonl'"
# The event is logged as the rush moves the task; the state file shows it
# at the next checkpoint.
x_pending() { [ "$(task_status X-L1-001)" = pending ]; }
wait_for 10 x_pending
[ "$(task_status X-L1-001 attempt)" = 1 ] || fail "X was claimed again"
pass "a killed worker's task waits as pending, its attempt and epoch unchanged"

# The dead attempt's late result, with a commit of its own.
base=$(G rev-parse main)
blob=$(echo forged | G hash-object -w --stdin)
tree=$(printf '100644 blob %s\tREADME\n100644 blob %s\tx.txt\n' "$(G rev-parse main:README)" "$blob" | G mktree)
commit=$(printf 'ZERG [W%s]: x\n\nTask-ID: X-L1-001\nAttempt: 1\nZerg-Run: %s\n' "$slot" "${run_id%%.*}" |
    G commit-tree "$tree" -p "$base")
python3 - "$PROJ/.zerg/state/f" "$epoch" "$run_id" "$slot" "$base" "$commit" <<'PY'
import json, os, sys
d, epoch, run_id, slot, base, commit = sys.argv[1:]
doc = {"epoch": int(epoch), "run_id": run_id, "worker_id": int(slot),
       "task": "X-L1-001", "attempt": 1, "outcome": "complete",
       "stage": "command", "exit_code": 0, "signal": 0, "timed_out": False,
       "duration_ms": 5, "error": "", "base": base, "commit": commit}
tmp = os.path.join(d, ".late.tmp.1")
with open(tmp, "w") as f:
    json.dump(doc, f)
os.rename(tmp, os.path.join(d, "result-X-L1-001-1.json"))
PY
wait_for 20 bash -c "grep '\"event\":\"result_fenced\"' '$PROJ/.zerg/monitor.jsonl' | grep -q X-L1-001"
[ "$(task_status X-L1-001)" = pending ] || fail "the late result moved X to $(task_status X-L1-001)"
[ "$(on_integration X-L1-001)" = 0 ] || fail "the dead attempt's commit was merged"
pass "the dead attempt's late result is fenced; its commit is not merged"

touch "$PROJ/go"
rush_wait 60
[ "$(task_status X-L1-001)" = complete ] || fail "X is $(task_status X-L1-001)"
[ "$(task_status X-L1-001 attempt)" = 2 ] || fail "X completed at attempt $(task_status X-L1-001 attempt)"
[ "$(on_integration X-L1-001)" = 1 ] || fail "X is on the integration branch $(on_integration X-L1-001) times"
[ "$(G show zerg/f/integration:x.txt)" = real ] || fail "x.txt on the integration branch: $(G show zerg/f/integration:x.txt)"
pass "the task runs again and only the live attempt's work is merged"
no_procs
