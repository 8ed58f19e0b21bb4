#!/usr/bin/env bash
# Operating a live rush: a second rush exits 3; `zerg status` shows it;
# `zerg retry` is picked up by the running rush; `zerg stop` ends it
# cleanly with nothing left running, and --resume finishes the work.
source "$(dirname "$0")/lib.sh"

new_project ctl
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "C-L1-001", "level": 1, "command": "test -f allow.txt"},
 {"id": "C-L1-002", "level": 1, "command": "sleep 2"},
 {"id": "C-L2-001", "level": 2, "dependencies": ["C-L1-002"], "command": "sleep 600"},
 {"id": "C-L3-001", "level": 3, "dependencies": ["C-L2-001"], "command": "true"}
]}
JSON
config_append "  retry_attempts: 0"
# An answer to a retry no one stayed to read, from an earlier rush.
mkdir -p "$PROJ/.zerg/state/f"
echo '{"requeued":1,"tasks":["X"],"refused":[]}' >"$PROJ/.zerg/state/f/retried-1.json"
rush_bg --workers 2
wait_for 20 task_running C-L1-002
[ -e "$PROJ/.zerg/state/f/retried-1.json" ] && fail "a stale retry answer outlived the rush's start"
rc=0
zerg rush > "$PROJ/second.txt" 2>&1 || rc=$?
[ $rc -eq 3 ] || fail "second rush: expected exit 3, got $rc"
grep -q "pid" "$PROJ/second.txt" || fail "lock message does not name the holder"
pass "a second concurrent rush exits 3"
wait_for 20 bash -c "grep -q '\"event\":\"task_failed\".*C-L1-001\|C-L1-001.*\"event\":\"task_failed\"' '$PROJ/.zerg/monitor.jsonl'"
# The state file shows it at the rush's next checkpoint.
saved_failed() { [ "$(task_status C-L1-001)" = failed ]; }
wait_for 20 saved_failed
zerg status > "$PROJ/status.txt" || fail "status exited $?"
grep -q "C-L1-001" "$PROJ/status.txt" || fail "status does not list the failed task"
zerg status --json | python3 -c 'import json,sys; json.load(sys.stdin)' || fail "status --json"
pass "status shows the live rush"
# The rush, not the saved state, says what can be retried: a running
# task is refused (exit 2, nothing changes), and a task the saved state
# still shows "claimed" (a checkpoint behind the log) is retried.
out=$(zerg retry C-L1-002 2>&1) && fail "retry of a running task succeeded: $out"
printf '%s' "$out" | grep -q "task C-L1-002 is [a-z_]*; nothing to retry" ||
    fail "no refusal from the rush: $out"
python3 - "$PROJ/.zerg/state/f.json" <<'PY'
import json, os, sys
d = json.load(open(sys.argv[1]))
d["tasks"]["C-L1-001"]["status"] = "claimed"
open(sys.argv[1] + ".t", "w").write(json.dumps(d))
os.rename(sys.argv[1] + ".t", sys.argv[1])
PY
ls "$PROJ"/.zerg/state/f/retried-*.json >/dev/null 2>&1 && fail "answer left behind"
touch "$PROJ/allow.txt"
zerg retry C-L1-001 > "$PROJ/retry.txt" || fail "retry exited $?: $(cat "$PROJ/retry.txt")"
grep -q "Requeued 1 task of f in the running rush (pid [0-9]*): C-L1-001" "$PROJ/retry.txt" ||
    fail "retry did not say what the rush requeued: $(cat "$PROJ/retry.txt")"
wait_for 20 bash -c "grep -q '\"event\":\"task_complete\".*C-L1-001\|C-L1-001.*\"event\":\"task_complete\"' '$PROJ/.zerg/monitor.jsonl'"
pass "zerg retry is picked up by the running rush"
wait_for 20 task_running C-L2-001
zerg stop > "$PROJ/stop.txt" || fail "stop exited $?"
rush_wait 30
[ "$RUSH_RC" -eq 143 ] || fail "a rush stopped by zerg stop (SIGTERM) should exit 143, got $RUSH_RC"
[ "$(state_field status)" = stopped ] || fail "state status $(state_field status)"
[ "$(task_status C-L2-001)" = pending ] || fail "interrupted task should be pending, is $(task_status C-L2-001)"
project_runs "sleep 600" && fail "task survived zerg stop"
no_procs
pass "zerg stop ends the rush, its workers and their tasks"

# A SIGTERM that arrives once the rush is complete does not change its
# exit code (it used to kill the process with 143 while the summary was
# written).  Repeated: the window is short.
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "T-L1-001", "level": 1, "command": "true"}]}
JSON
for round in 1 2 3 4 5; do
    : >"$PROJ/.zerg/monitor.jsonl"
    rush_bg --fresh --workers 1
    wait_for 30 has_event rush_complete
    while kill -TERM "$RUSH_PID" 2>/dev/null; do sleep 0.001; done
    rush_wait 30
    [ "$RUSH_RC" -eq 0 ] || fail "round $round: exit $RUSH_RC after Rush complete"
done
pass "a SIGTERM after the rush completed leaves exit 0"

# A feature whose tasks are all complete: nothing to do, exit 0, nothing
# runs again (unless --fresh).
starts=$(events rush_start)
out=$(zerg rush 2>&1) || fail "rush of a complete feature exited $?"
printf '%s' "$out" | grep -q "Nothing to do: all 1 task of f is complete" ||
    fail "no 'nothing to do': $out"
[ "$(events rush_start)" = "$starts" ] || fail "a complete feature ran again"
out=$(zerg rush --resume 2>&1) || fail "--resume of a complete feature exited $?"
printf '%s' "$out" | grep -q "Nothing to do" || fail "--resume: $out"
pass "a complete feature: nothing to do, exit 0"

# Ctrl-C stops cleanly and exits 130; --resume says what it picks up.
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "I-L1-001", "level": 1, "command": "sleep 600"},
 {"id": "I-L1-002", "level": 1, "command": "true"}]}
JSON
rush_bg --fresh --workers 1
wait_for 30 task_running I-L1-001
kill -INT "$RUSH_PID"
rush_wait 30
[ "$RUSH_RC" -eq 130 ] || fail "Ctrl-C: expected exit 130, got $RUSH_RC"
[ "$(state_field status)" = stopped ] || fail "state status $(state_field status)"
project_runs "sleep 600" && fail "task survived Ctrl-C"
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "I-L1-001", "level": 1, "command": "true"},
 {"id": "I-L1-002", "level": 1, "command": "true"}]}
JSON
out=$(zerg rush --resume --workers 1 2>&1) || fail "resume exited $?: $out"
printf '%s' "$out" | grep -q "Resuming f (run .*): .*to run" || fail "no resume line: $out"
pass "Ctrl-C exits 130 after a clean stop; --resume says what it resumes"

# A failed rush shows each failed task's real error and where its log is.
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "F-L1-001", "level": 1, "command": "echo 'error: expected 3, got 4' >&2; exit 3"},
 {"id": "F-L2-001", "level": 2, "dependencies": ["F-L1-001"], "command": "true"}]}
JSON
rc=0
out=$(zerg rush --fresh --workers 1 2>&1) || rc=$?
[ $rc -eq 1 ] || fail "failed rush exited $rc"
printf '%s' "$out" | grep -q "F-L1-001 failed (exit)" || fail "no failed task line: $out"
printf '%s' "$out" | grep -q "  | error: expected 3, got 4" || fail "no output tail: $out"
printf '%s' "$out" | grep -q "(the whole output: $PROJ/.zerg/logs/f/tasks/F-L1-001/attempt-1.log)" ||
    fail "no log path: $out"
printf '%s' "$out" | grep -q "1 task is blocked behind this failure" || fail "no blocked count: $out"
pass "a failed rush shows the failing output and the log path"
echo "$TESTS_PASSED passed, 0 failed"
