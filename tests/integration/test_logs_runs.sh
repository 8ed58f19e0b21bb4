#!/usr/bin/env bash
# zerg logs shows the current run: a run, a second run (--fresh) stopped
# and resumed; `zerg logs` prints only the second run's events, under one
# header for the run and one for its resume, and says how many earlier
# events it left out; --all-runs shows both runs under their headers;
# --json prints the current run's lines and no header.
source "$(dirname "$0")/lib.sh"

new_project runs
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "A-L1-001", "level": 1, "command": "echo a"},
 {"id": "B-L2-001", "level": 2, "dependencies": ["A-L1-001"],
  "command": "if [ -f go ]; then echo b; else sleep 30; fi"}
]}
JSON
touch "$PROJ/go"
zerg rush --workers 1 --no-progress > "$PROJ/r1.out" 2>&1 || fail "run 1 failed: $(tail -3 "$PROJ/r1.out")"
run1=$(state_field run_id)
rm "$PROJ/go"
rush_bg --workers 1 --no-progress --fresh
wait_for 30 task_running B-L2-001
run2=$(state_field run_id)
kill -INT "$RUSH_PID"
rush_wait 30
touch "$PROJ/go"
zerg rush --workers 1 --no-progress --resume > "$PROJ/r3.out" 2>&1 || fail "the resume failed: $(tail -3 "$PROJ/r3.out")"
rush3=$(state_field run_id)
[ "$run1" != "$run2" ] || fail "the two runs share an id"
[ "$(events rush_start)" -eq 3 ] || fail "expected 3 rush_start events"

zerg logs > "$PROJ/cur.txt" 2> "$PROJ/cur.err" || fail "zerg logs failed: $(cat "$PROJ/cur.err")"
head -1 "$PROJ/cur.txt" | grep -q "^=== run $run2 of f, started " ||
    fail "no header for the current run: $(head -2 "$PROJ/cur.txt")"
[ "$(grep -c '^=== run ' "$PROJ/cur.txt")" -eq 1 ] || fail "more than one run shown"
grep -q "^--- f resumed: rush $rush3, " "$PROJ/cur.txt" || fail "no header for the resume"
[ "$(grep -c 'Rush f started' "$PROJ/cur.txt")" -eq 1 ] || fail "the first run's start is shown"
grep -q 'Rush f resumed' "$PROJ/cur.txt" || fail "the resume's events are missing"
! grep -q "$run1" "$PROJ/cur.txt" || fail "the first run is named"
grep -q 'of earlier runs not shown (--all-runs shows every run)' "$PROJ/cur.err" ||
    fail "no word of the hidden runs: $(cat "$PROJ/cur.err")"
pass "zerg logs: the current run only, a header for it and its resume"

zerg logs --all-runs > "$PROJ/all.txt" 2> "$PROJ/all.err" || fail "--all-runs failed"
[ "$(grep -c '^=== run ' "$PROJ/all.txt")" -eq 2 ] || fail "--all-runs: not two run headers"
grep -q "^=== run $run1 of f" "$PROJ/all.txt" || fail "--all-runs: no header for the first run"
[ "$(grep -c 'Rush f started' "$PROJ/all.txt")" -eq 2 ] || fail "--all-runs: not both starts"
[ ! -s "$PROJ/all.err" ] || fail "--all-runs warns: $(cat "$PROJ/all.err")"
total=$(wc -l < "$PROJ/.zerg/monitor.jsonl")
[ "$(grep -vc '^\(===\|---\) ' "$PROJ/all.txt")" -eq "$total" ] || fail "--all-runs does not print every event"
pass "--all-runs: both runs, each under its header"

zerg logs --json > "$PROJ/cur.json" 2>/dev/null || fail "--json failed"
! grep -q '^\(===\|---\) ' "$PROJ/cur.json" || fail "--json prints headers"
[ "$(grep -c '"event":"rush_start"' "$PROJ/cur.json")" -eq 2 ] || fail "--json: not the current run's two rushes"
python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$PROJ/cur.json" || fail "--json: not JSON lines"
zerg logs --tail 2 > "$PROJ/tail.txt" 2>/dev/null || fail "--tail failed"
head -1 "$PROJ/tail.txt" | grep -q "^=== run $run2 of f, started .*: its last events ===" ||
    fail "--tail: no header: $(head -1 "$PROJ/tail.txt")"
[ "$(wc -l < "$PROJ/tail.txt")" -eq 3 ] || fail "--tail 2: not a header and 2 lines"
pass "--json: the current run, no header; --tail: a header and the last lines"
echo "$TESTS_PASSED passed, 0 failed"
