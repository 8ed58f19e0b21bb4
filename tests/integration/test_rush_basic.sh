#!/usr/bin/env bash
# A plain rush: levels in order, same-level ordering, shell syntax in
# commands, the log formats of DESIGN section 11, nothing left running.
source "$(dirname "$0")/lib.sh"

new_project basic
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "A-L1-001", "title": "one", "level": 1, "command": "echo a > a.txt && sleep 0.2",
  "verification": {"command": "grep -q a a.txt", "timeout_seconds": 5}},
 {"id": "A-L1-002", "title": "two", "level": 1, "dependencies": ["A-L1-001"],
  "command": "cat a.txt | tr a b > b.txt"},
 {"id": "A-L1-003", "title": "three", "level": 1, "command": "echo $ZERG_TASK_ID $ZERG_WORKER_ID $ZERG_FEATURE > env.txt"},
 {"id": "A-L2-001", "level": 2, "dependencies": ["A-L1-002", "A-L1-003"],
  "command": "test -f b.txt && echo done > c.txt"}
]}
JSON
zerg rush --workers 2 > "$PROJ/out.txt" 2>&1 || fail "rush exited $?: $(cat "$PROJ/out.txt")"
pass "rush exits 0"
[ "$(cat "$PROJ/b.txt")" = b ] || fail "same-level dependency did not order A-L1-002 after A-L1-001"
[ -f "$PROJ/c.txt" ] || fail "level 2 did not run"
read -r t w feat < "$PROJ/env.txt"
[ "$t" = A-L1-003 ] && [ "$feat" = f ] && [[ "$w" =~ ^[0-9]+$ ]] || fail "task env wrong: $t $w $feat"
pass "levels, same-level dependencies and task environment"
[ "$(state_field status)" = complete ] || fail "state status $(state_field status)"
for t in A-L1-001 A-L1-002 A-L1-003 A-L2-001; do
    [ "$(task_status $t)" = complete ] || fail "$t is $(task_status $t)"
    [ "$(task_status $t level)" -ge 1 ] || fail "$t has no level"
done
pass "state document complete"
grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z \[W[0-9]+\] \[INFO\] Worker [0-9]+ claimed task A-L1-001$' "$PROJ/.zerg/monitor.log" ||
    fail "monitor.log line format"
bad=$(grep -vcE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{12}Z \[(W[0-9]+|ORCH)\] \[(DEBUG|INFO|WARN|ERROR)\] .+$' "$PROJ/.zerg/monitor.log" || true)
[ "$bad" -eq 0 ] || fail "$bad malformed monitor.log lines"
python3 - "$PROJ/.zerg/monitor.jsonl" <<'PY' || fail "monitor.jsonl"
import json, sys
n = 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    assert set(e) == {"ts", "worker", "level", "event", "task", "msg",
                      "feature", "data"}, e
    assert e["feature"] == "f", e
    n += 1
assert n > 10
PY
for ev in rush_start worker_spawn worker_ready level_start task_claimed task_started task_complete level_complete rush_complete; do
    has_event $ev || fail "no $ev event"
done
[ "$(wc -l < "$PROJ/.zerg/monitor.log")" -eq "$(wc -l < "$PROJ/.zerg/monitor.jsonl")" ] || fail "log and jsonl differ in length"
pass "monitor.log / monitor.jsonl formats and events"
[ -s "$PROJ/.zerg/logs/f/tasks/A-L1-001/attempt-1.log" ] || ls -R "$PROJ/.zerg/logs" >&2
ls "$PROJ/.zerg/logs/f/tasks/A-L1-001/" | grep -q . || fail "no task log"
no_procs
ls "$PROJ/.zerg/state/f" | grep -q "^result-" && fail "result files left behind"
pass "no process and no result file left"

# A second rush of a complete feature starts over; --dry-run starts nothing.
zerg rush --dry-run > "$PROJ/plan.txt" || fail "dry-run"
grep -q "A-L2-001" "$PROJ/plan.txt" || fail "plan lacks tasks"
pass "dry run"
echo "$TESTS_PASSED passed, 0 failed"
