#!/usr/bin/env bash
# Ending a rush early: `--halt soon,fail=N` starts nothing new after the
# Nth permanent failure and lets the running tasks finish; `--halt now`
# stops them (SIGTERM, the stop grace, SIGKILL; also with a percentage); a bad --halt is exit 2 with nothing
# written; rush.timeout_seconds stops the run and --resume finishes it;
# an oversized monitor.log is rotated when a rush starts.
source "$(dirname "$0")/lib.sh"

# --halt soon,fail=1: F fails while L runs; the three queued tasks are
# never claimed, L completes, the rush exits 1.
new_project soon
config_append "  retry_attempts: 0"
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "H-L1-F", "level": 1, "command": "sleep 0.5; exit 3"},
 {"id": "H-L1-L", "level": 1, "command": "sleep 3; touch long-done"},
 {"id": "H-L1-Q1", "level": 1, "command": "true"},
 {"id": "H-L1-Q2", "level": 1, "command": "true"},
 {"id": "H-L1-Q3", "level": 1, "command": "true"}]}
JSON
rush_bg --workers 2 --halt soon,fail=1 --no-progress
rush_wait 60
[ "$RUSH_RC" -eq 1 ] || fail "--halt soon: exit $RUSH_RC, want 1: $(cat "$PROJ/rush.out")"
has_event rush_halt || fail "no rush_halt event"
[ "$(jdata rush_halt policy)" = "soon,fail=1" ] || fail "rush_halt policy $(jdata rush_halt policy)"
[ "$(jdata rush_halt failed)" = 1 ] && [ "$(jdata rush_halt threshold)" = 1 ] ||
    fail "rush_halt data: failed $(jdata rush_halt failed), threshold $(jdata rush_halt threshold)"
[ "$(events task_claimed)" -eq 2 ] || fail "$(events task_claimed) claims, want 2 (none after the failure)"
[ -f "$PROJ/long-done" ] && [ "$(task_status H-L1-L)" = complete ] || fail "the running task did not finish"
for q in H-L1-Q1 H-L1-Q2 H-L1-Q3; do
    [ "$(task_status $q)" = pending ] || fail "$q is $(task_status $q), want pending"
done
grep -q "Halted by --halt soon,fail=1" "$PROJ/rush.out" || fail "summary lacks the halt: $(cat "$PROJ/rush.out")"
no_procs
pass "--halt soon,fail=1 claims nothing more, lets the running task finish, exits 1"

# --halt now,fail=1: the running task is stopped (it dies of the SIGTERM).
new_project now
config_append "  retry_attempts: 0"
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "N-L1-F", "level": 1, "command": "sleep 0.5; false"},
 {"id": "N-L1-L", "level": 1, "command": "sleep 600"}]}
JSON
rush_bg --workers 2 --halt now,fail=1 --no-progress
rush_wait 30
[ "$RUSH_RC" -eq 1 ] || fail "--halt now: exit $RUSH_RC, want 1"
[ "$(jdata rush_halt policy)" = "now,fail=1" ] || fail "rush_halt policy $(jdata rush_halt policy)"
[ "$(task_status N-L1-L)" = pending ] || fail "the killed task is $(task_status N-L1-L), want pending"
project_runs "sleep 600" && fail "the running task survived --halt now"
grep -q "running tasks were stopped" "$PROJ/rush.out" || fail "summary: $(cat "$PROJ/rush.out")"
no_procs
pass "--halt now,fail=1 stops the running task and exits 1"

# --halt now,fail=50% of 4 tasks: the threshold is 2 failures.
new_project pct
config_append "  retry_attempts: 0"
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "P-L1-F1", "level": 1, "command": "sleep 0.3; false"},
 {"id": "P-L1-F2", "level": 1, "command": "sleep 1.5; false"},
 {"id": "P-L1-S1", "level": 1, "command": "sleep 600"},
 {"id": "P-L1-S2", "level": 1, "command": "sleep 600"}]}
JSON
rush_bg --workers 4 --halt now,fail=50% --no-progress
rush_wait 30
[ "$RUSH_RC" -eq 1 ] || fail "--halt now,fail=50%: exit $RUSH_RC"
[ "$(jdata rush_halt threshold)" = 2 ] && [ "$(jdata rush_halt failed)" = 2 ] ||
    fail "rush_halt data: failed $(jdata rush_halt failed), threshold $(jdata rush_halt threshold)"
[ "$(task_status P-L1-F2)" = failed ] || fail "the rush halted before the second failure"
project_runs "sleep 600" && fail "sleeps survived --halt now,fail=50%"
no_procs
pass "--halt now,fail=50% halts at half of the tasks"

# Bad values: exit 2, the accepted forms named, nothing written.
new_project bad
gen_graph 1 1 true
for v in later now soon,fail=0 now,fail=101% now,fail=x "soon,success=1"; do
    rc=0
    zerg rush --halt "$v" > "$PROJ/bad.out" 2>&1 || rc=$?
    [ $rc -eq 2 ] || fail "--halt '$v': exit $rc, want 2"
    grep -q "now,fail=N, soon,fail=N, now,fail=N%" "$PROJ/bad.out" || fail "--halt '$v': $(cat "$PROJ/bad.out")"
done
rc=0
zerg rush --timeout soon > "$PROJ/bad.out" 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "--timeout soon: exit $rc, want 2"
[ ! -e "$PROJ/.zerg/state" ] || [ -z "$(ls -A "$PROJ/.zerg/state")" ] || fail "a bad option wrote $(ls "$PROJ/.zerg/state")"
[ ! -e "$PROJ/.zerg/monitor.jsonl" ] || fail "a bad option opened the log"
pass "a bad --halt or --timeout exits 2 and writes nothing"

# rush.timeout_seconds: 2 on 4 x 1.5 s on one worker: stopped after 2 s,
# the state resumable; --resume (with --timeout 0 over the config) ends it.
new_project timeout
printf 'rush:\n  timeout_seconds: 2\n' >> "$PROJ/.zerg/config.yaml"
gen_graph 1 4 "sleep 1.5"
start=$(date +%s)
rush_bg --workers 1 --no-progress
rush_wait 30
took=$(( $(date +%s) - start ))
[ "$RUSH_RC" -eq 1 ] || fail "timeout: exit $RUSH_RC, want 1"
# 4 x 1.5 s on one worker is 6 s: a 2 s budget ends it before the last.
done_n=$(python3 -c 'import json,sys; print(sum(t["status"] == "complete" for t in json.load(open(sys.argv[1]))["tasks"].values()))' "$PROJ/.zerg/state/f.json")
[ "$done_n" -lt 4 ] || fail "the timed-out rush ran all 4 tasks (${took}s)"
has_event rush_timeout || fail "no rush_timeout event"
[ "$(state_field status)" = stopped ] || fail "state status $(state_field status)"
grep -q "Timed out after 2s; resume with \`zerg rush --resume\`" "$PROJ/rush.out" || fail "summary: $(cat "$PROJ/rush.out")"
project_runs "sleep 1.5" && fail "a task survived the timeout"
rush_bg --resume --timeout 0 --workers 2 --no-progress
rush_wait 60
[ "$RUSH_RC" -eq 0 ] || fail "--resume after the timeout: exit $RUSH_RC: $(cat "$PROJ/rush.out")"
[ "$(events rush_timeout)" -eq 1 ] || fail "--timeout 0 did not override the config"
no_procs
pass "rush.timeout_seconds stops the rush (exit 1) and --resume completes it"

# monitor.log past logging.max_size_mb at the start moves to .1 (the old
# .1 to .2); the new one starts small.
new_project rotate
printf 'logging:\n  max_size_mb: 1\n  keep: 2\n' >> "$PROJ/.zerg/config.yaml"
gen_graph 1 1 true
python3 -c 'import sys; open(sys.argv[1], "w").write("x" * 100 + "\n" * 0 + ("old line\n" * 140000))' "$PROJ/.zerg/monitor.log"
echo "previous" > "$PROJ/.zerg/monitor.log.1"
zerg rush --no-progress > "$PROJ/rush.out" 2>&1 || fail "rush with rotation exited $?"
size=$(stat -c %s "$PROJ/.zerg/monitor.log")
[ "$size" -lt 100000 ] || fail "monitor.log is $size bytes after the rotation"
grep -q "Rush f started" "$PROJ/.zerg/monitor.log" || fail "the new monitor.log lacks rush_start"
[ "$(stat -c %s "$PROJ/.zerg/monitor.log.1")" -ge 1048576 ] || fail "monitor.log.1 is not the old log"
[ "$(cat "$PROJ/.zerg/monitor.log.2")" = previous ] || fail "monitor.log.1 did not move to .2"
[ ! -e "$PROJ/.zerg/monitor.jsonl.1" ] || fail "a small monitor.jsonl was rotated"
pass "an oversized monitor.log is rotated at rush start"
echo "$TESTS_PASSED passed, 0 failed"
