#!/usr/bin/env bash
# Worktree isolation across orchestrator deaths (DESIGN §13 "Resume"): the
# orchestrator is killed with SIGKILL at pseudo-random points (a fixed
# seed, so a failure replays) and `zerg rush --resume` continues; at the
# end every task's commit is on the integration branch exactly once, and
# a task committed but not merged when the orchestrator died is merged
# without running again.  Also: the repository's own failing hooks do not
# stop zerg's commits, and a branch that blocks the zerg/ namespace is a
# clear error.
source "$(dirname "$0")/lib.sh"

trailers() { G log --format='%(trailers:key=Task-ID,valueonly,separator=%x2C)' main..zerg/f/integration | sed '/^$/d'; }

new_project resume
git_repo
{
    echo '{"feature": "f", "tasks": ['
    sep=""
    for l in 1 2 3; do
        for i in 1 2 3 4 5; do
            deps=""
            [ "$l" -gt 1 ] && deps="\"dependencies\": [\"R-L$((l - 1))-00$i\"],"
            printf '%s {"id": "R-L%d-00%d", "title": "t%d%d", "level": %d, %s "command": "sleep 0.%d; echo %d%d > f%d%d.txt; echo run >> %s/runs-R-L%d-00%d"}' \
                "$sep" "$l" "$i" "$l" "$i" "$l" "$deps" $(((i * 3 + l) % 5 + 1)) "$l" "$i" "$l" "$i" "$TEST_ROOT" "$l" "$i"
            sep=","
        done
    done
    echo ']}'
} | graph
RANDOM=4242
kills=0
for round in 1 2 3 4 5 6; do
    if [ "$round" = 1 ]; then rush_bg --workers 3; else rush_bg --workers 3 --resume; fi
    sleep "0.$((RANDOM % 9 + 2))"
    if kill -0 "$RUSH_PID" 2> /dev/null; then
        kill -9 "$RUSH_PID"
        kills=$((kills + 1))
    fi
    wait "$RUSH_PID" 2> /dev/null || true
    RUSH_PID=""
    # Workers notice their orchestrator is gone and exit on their own.
    gone() { [ "$(project_pids "$PROJ" | wc -l)" -eq 0 ]; }
    wait_for 30 gone
done
[ "$kills" -ge 2 ] || fail "the orchestrator was killed only $kills times"
zerg rush --resume > "$PROJ/out.txt" 2>&1 || fail "the last --resume failed: $(cat "$PROJ/out.txt")"
pass "15 tasks complete across $kills kill -9s of the orchestrator"
n=$(trailers | wc -l)
dups=$(trailers | sort | uniq -d)
[ -z "$dups" ] || fail "merged twice: $dups"
[ "$n" = 15 ] || fail "expected 15 task commits, got $n: $(trailers | sort | tr '\n' ' ')"
for l in 1 2 3; do
    for i in 1 2 3 4 5; do
        [ "$(G show "zerg/f/integration:f$l$i.txt")" = "$l$i" ] || fail "f$l$i.txt missing"
    done
done
pass "every task's commit is on the integration branch exactly once"

# One feature run, one Zerg-Run: every rush of it (each resume has an id
# of its own, the feature run's id and its own part) signs its commits
# with the feature run's id.
runs=$(G log --format='%(trailers:key=Zerg-Run,valueonly,separator=%x2C)' main..zerg/f/integration | sed '/^$/d' | sort -u)
[ "$(printf '%s\n' "$runs" | wc -l)" = 1 ] ||
    fail "the commits of one run carry $(printf '%s\n' "$runs" | wc -l) Zerg-Run ids: $(echo $runs)"
rid=$(state_field run_id)
[ "${rid%%.*}" = "$runs" ] && [ "$rid" != "$runs" ] ||
    fail "the resumed rush's id $rid is not the feature run's $runs and a part of its own"
pass "one Zerg-Run ($runs) across $kills kills and resumes; this rush is $rid"

# ---- committed but not merged: merged on --resume, not run again
new_project unmerged
git_repo
graph <<JSON
{"feature": "f", "tasks": [
 {"id": "U-L1-001", "level": 1, "command": "echo one > one.txt; echo run >> $TEST_ROOT/u-runs"},
 {"id": "U-L2-001", "level": 2, "dependencies": ["U-L1-001"], "command": "cat one.txt > two.txt"}
]}
JSON
# The orchestrator is stopped (SIGSTOP) so it cannot take the result;
# the worker commits and writes it; then the orchestrator dies and the
# result file is lost, leaving only the commit on the worker branch.
rush_bg --workers 1
wait_for 20 test -e "$TEST_ROOT/u-runs"
kill -STOP "$RUSH_PID"
committed() { G log -1 --format=%B zerg/f/worker-0 2> /dev/null | grep -q '^Task-ID: U-L1-001$'; }
wait_for 20 committed
kill -9 "$RUSH_PID"
kill -CONT "$RUSH_PID" 2> /dev/null || true
wait "$RUSH_PID" 2> /dev/null || true
RUSH_PID=""
gone() { [ "$(project_pids "$PROJ" | wc -l)" -eq 0 ]; }
wait_for 30 gone
rm -f "$PROJ"/.zerg/state/f/result-*.json
zerg rush --resume > "$PROJ/out.txt" 2>&1 || fail "resume failed: $(cat "$PROJ/out.txt")"
[ "$(wc -l < "$TEST_ROOT/u-runs")" = 1 ] || fail "U-L1-001 ran again ($(wc -l < "$TEST_ROOT/u-runs") runs)"
[ "$(G show zerg/f/integration:two.txt)" = one ] || fail "level 2 did not build on the merged commit"
pass "a committed but unmerged task is merged on --resume, not run again"

# ---- merged, but the saved state never said so: read back, not rerun
# The state on disk trails the merges by a checkpoint; here it is made
# to trail by two whole tasks (an older copy put back after the kill).
# A was merged and B after it on the same worker, so no worker branch
# holds A any more: only the integration branch says A is done.
new_project readback
git_repo
graph <<JSON
{"feature": "f", "tasks": [
 {"id": "A-L1-001", "level": 1, "command": "while [ ! -f '$PROJ/go-a' ]; do sleep 0.05; done; echo a > a.txt; echo run >> $TEST_ROOT/a-runs"},
 {"id": "B-L1-002", "level": 1, "command": "echo b > b.txt"},
 {"id": "C-L2-001", "level": 2, "dependencies": ["A-L1-001"], "command": "while [ ! -f '$PROJ/go-c' ]; do sleep 0.05; done; cat a.txt > c.txt"}
]}
JSON
rush_bg --workers 1
wait_for 30 task_running A-L1-001
a_saved() { [ "$(task_status A-L1-001)" = in_progress ]; }
wait_for 30 a_saved
cp "$PROJ/.zerg/state/f.json" "$TEST_ROOT/old-state.json"
touch "$PROJ/go-a"
wait_for 30 task_running C-L2-001
[ "$(trailers | sort | tr '\n' ' ')" = "A-L1-001 B-L1-002 " ] || fail "expected A and B merged: $(trailers | tr '\n' ' ')"
kill -9 "$RUSH_PID"
wait "$RUSH_PID" 2> /dev/null || true
RUSH_PID=""
wait_for 30 gone
cp "$TEST_ROOT/old-state.json" "$PROJ/.zerg/state/f.json"
cp "$TEST_ROOT/old-state.json" "$PROJ/.zerg/state/f.json.bak"
rm -f "$PROJ"/.zerg/state/f/result-*.json
touch "$PROJ/go-c"
zerg rush --resume --workers 1 > "$PROJ/out.txt" 2>&1 || fail "resume failed: $(cat "$PROJ/out.txt")"
[ "$(wc -l < "$TEST_ROOT/a-runs")" = 1 ] || fail "A-L1-001, merged before the kill, ran again"
[ "$(trailers | sort | uniq -d)" = "" ] || fail "merged twice: $(trailers | sort | uniq -d)"
[ "$(trailers | wc -l)" = 3 ] || fail "expected 3 task commits: $(trailers | tr '\n' ' ')"
[ "$(G show zerg/f/integration:c.txt)" = a ] || fail "C did not see A"
pass "a task merged before the state said so is read back from the branch, not run again"

# ---- a worker branch head left by an earlier run is not this run's work
# Run 1 leaves A committed on a worker branch, never merged; run 2 is a
# --fresh run on one worker, killed before it claims A; its --resume on
# two workers finds run 1's commit at slot 1's head.  It must run A,
# not merge the old run's commit.
new_project oldhead
git_repo
graph <<JSON
{"feature": "f", "tasks": [
 {"id": "B-L1-001", "level": 1, "command": "while [ ! -f '$PROJ/go-b' ]; do sleep 0.05; done; echo b > b.txt"},
 {"id": "A-L1-002", "level": 1, "command": "echo a > a.txt; echo run >> $TEST_ROOT/old-runs"}
]}
JSON
rush_bg --workers 2
wait_for 20 test -e "$TEST_ROOT/old-runs"
kill -STOP "$RUSH_PID"
aslot=$(slot_of A-L1-002)
committed_a() { G log -1 --format=%B "zerg/f/worker-$aslot" 2> /dev/null | grep -q '^Task-ID: A-L1-002$'; }
wait_for 20 committed_a
kill -9 "$RUSH_PID"
kill -CONT "$RUSH_PID" 2> /dev/null || true
wait "$RUSH_PID" 2> /dev/null || true
RUSH_PID=""
wait_for 30 gone
run1=$(state_field run_id)
rm -f "$PROJ"/.zerg/state/f/result-*.json
rush_bg --workers 1 --fresh
run2_b() { [ "$(state_field run_id)" != "$run1" ] && [ "$(task_status B-L1-001)" = in_progress ]; }
wait_for 30 run2_b
kill -9 "$RUSH_PID"
wait "$RUSH_PID" 2> /dev/null || true
RUSH_PID=""
wait_for 30 gone
[ "$(task_status A-L1-002)" = pending ] || fail "run 2 got to A: $(task_status A-L1-002)"
committed_a || fail "slot $aslot's branch no longer holds run 1's commit"
touch "$PROJ/go-b"
zerg rush --resume --workers 2 > "$PROJ/out.txt" 2>&1 || fail "resume failed: $(cat "$PROJ/out.txt")"
[ "$(wc -l < "$TEST_ROOT/old-runs")" = 2 ] || fail "A-L1-002 did not run in run 2: run 1's commit was merged"
run2=$(state_field run_id)
G log --format=%B main..zerg/f/integration | grep -q "^Zerg-Run: ${run1%%.*}\$" &&
    fail "a commit of run 1 is on run 2's integration branch"
[ "$(trailers | sort | tr '\n' ' ')" = "A-L1-002 B-L1-001 " ] || fail "trailers: $(trailers | tr '\n' ' ')"
pass "a worker branch head of an earlier run is not merged by --resume; the task runs again"

# ---- the repository's failing hooks do not stop zerg's commits
new_project hooks
git_repo
printf '#!/bin/sh\necho hook refuses >&2\nexit 1\n' > "$PROJ/.git/hooks/pre-commit"
cp "$PROJ/.git/hooks/pre-commit" "$PROJ/.git/hooks/commit-msg"
cp "$PROJ/.git/hooks/pre-commit" "$PROJ/.git/hooks/reference-transaction"
chmod +x "$PROJ"/.git/hooks/*
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "H-L1-001", "level": 1, "command": "echo h > h.txt"}]}
JSON
zerg rush > "$PROJ/out.txt" 2>&1 || fail "a failing pre-commit hook stopped the rush: $(cat "$PROJ/out.txt")"
[ "$(G show zerg/f/integration:h.txt)" = h ] || fail "the task did not land"
pass "the repository's own hooks do not run for zerg's commits (documented)"

# ---- a branch that blocks the zerg/ namespace
new_project clash
git_repo
G branch zerg
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "X-L1-001", "level": 1, "command": "true"}]}
JSON
rc=0
zerg rush > "$PROJ/out.txt" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "a branch named zerg did not stop the rush"
grep -q "zerg" "$PROJ/out.txt" && grep -qi "branch" "$PROJ/out.txt" || fail "no clear message: $(cat "$PROJ/out.txt")"
[ "$(G rev-parse zerg)" = "$(G rev-parse main)" ] || fail "the user's branch zerg was changed"
pass "a branch named zerg is a clear error and is left alone"

echo "$TESTS_PASSED passed, 0 failed"
