#!/usr/bin/env bash
# The integration branch checked against the state on --resume (DESIGN §13
# "Resume", the `rerun` fix of policies/reconcile.lua): after a run
# completed, someone moves zerg/f/integration back (`git update-ref`), so
# commits the state records as merged are gone.  `zerg rush --resume`
# notices, runs exactly the tasks whose work vanished, and the branch ends
# holding all of it again; with the branch intact it has nothing to do.
source "$(dirname "$0")/lib.sh"

trailers() { G log --format='%(trailers:key=Task-ID,valueonly)' "$1" | sed '/^$/d'; }
runs() { cat "$TEST_ROOT/runs-$1" 2> /dev/null | wc -l; }

new_project reconcile
git_repo
BASE=$(G rev-parse HEAD)
graph <<JSON
{"feature": "f", "tasks": [
 {"id": "R-L1-001", "level": 1, "command": "echo a > a.txt; echo run >> $TEST_ROOT/runs-R-L1-001"},
 {"id": "R-L1-002", "level": 1, "command": "echo b > b.txt; echo run >> $TEST_ROOT/runs-R-L1-002"},
 {"id": "R-L2-001", "level": 2, "dependencies": ["R-L1-001"], "command": "cat a.txt > c.txt; echo run >> $TEST_ROOT/runs-R-L2-001"}
]}
JSON
zerg rush --workers 2 > "$PROJ/out1.txt" 2>&1 || fail "the first rush failed: $(cat "$PROJ/out1.txt")"
[ "$(trailers "main..zerg/f/integration" | wc -l)" = 3 ] || fail "3 task commits expected after the run"

# The branch as the run left it: nothing to do, nothing runs.
zerg rush --resume > "$PROJ/out2.txt" 2>&1 || fail "--resume of an intact run failed: $(cat "$PROJ/out2.txt")"
grep -q "Nothing to do" "$PROJ/out2.txt" || fail "an intact complete run was resumed: $(cat "$PROJ/out2.txt")"
for t in R-L1-001 R-L1-002 R-L2-001; do
    [ "$(runs $t)" = 1 ] || fail "$t ran again on an intact branch"
done
pass "a complete run whose branch holds every commit: nothing to do"

# Every merge dropped: all three run again, the branch holds their work.
G update-ref refs/heads/zerg/f/integration "$BASE"
zerg rush --resume --workers 2 > "$PROJ/out3.txt" 2>&1 || fail "--resume after the reset failed: $(cat "$PROJ/out3.txt")"
grep -q "3 complete tasks of f have their work no longer on zerg/f/integration" "$PROJ/out3.txt" ||
    fail "the resume did not say what it found: $(cat "$PROJ/out3.txt")"
[ "$(grep -c '"fix":"rerun"' "$PROJ/.zerg/monitor.jsonl")" = 3 ] || fail "3 rerun fixes expected"
# R-L2-001 reruns too, so R-L1-001's fix names no dependent left behind.
! grep -q "may need a rerun too" "$PROJ/.zerg/monitor.jsonl" || fail "a rerun dependent was called kept"
for t in R-L1-001 R-L1-002 R-L2-001; do
    [ "$(runs $t)" = 2 ] || fail "$t ran $(runs $t) times, not 2"
done
[ "$(trailers "main..zerg/f/integration" | sort | tr '\n' ' ')" = "R-L1-001 R-L1-002 R-L2-001 " ] ||
    fail "the branch does not hold each task once: $(trailers main..zerg/f/integration | tr '\n' ' ')"
for f in a b; do
    [ "$(G show "zerg/f/integration:$f.txt")" = "$f" ] || fail "$f.txt missing on the branch"
done
[ "$(G show zerg/f/integration:c.txt)" = a ] || fail "c.txt missing on the branch"
[ ! -e "$PROJ/a.txt" ] || fail "the user's tree was written"
pass "the branch reset to its base: every task reruns and the branch holds all of the work"

# Only the last merge dropped: only that task runs again.
LAST=$(trailers "zerg/f/integration^!")
G update-ref refs/heads/zerg/f/integration zerg/f/integration~1
zerg rush --resume --workers 2 > "$PROJ/out4.txt" 2>&1 || fail "--resume after dropping one merge failed: $(cat "$PROJ/out4.txt")"
grep -q "1 complete task of f has its work no longer on" "$PROJ/out4.txt" ||
    fail "the resume did not say what it found: $(cat "$PROJ/out4.txt")"
for t in R-L1-001 R-L1-002 R-L2-001; do
    want=2
    [ "$t" = "$LAST" ] && want=3
    [ "$(runs $t)" = "$want" ] || fail "$t ran $(runs $t) times, not $want (dropped: $LAST)"
done
[ "$(trailers "main..zerg/f/integration" | sort | tr '\n' ' ')" = "R-L1-001 R-L1-002 R-L2-001 " ] ||
    fail "the branch does not hold each task once after the second rerun"
pass "one merge dropped: only $LAST reruns"

# A rewrite that drops R-L1-001 from the middle of the branch (a rebase in
# a worktree of its own): the later commits get new ids but keep their
# Task-ID trailers, so only R-L1-001 runs again; its dependent R-L2-001 is
# kept, and the log says it may need a rerun too.
DROP=$(G log --format='%H %(trailers:key=Task-ID,valueonly)' main..zerg/f/integration | awk '$2 == "R-L1-001" {print $1}')
[ -n "$DROP" ] || fail "no commit of R-L1-001 on the branch"
G worktree add -q --detach "$TEST_ROOT/rewrite" zerg/f/integration
git -C "$TEST_ROOT/rewrite" rebase -q --onto "$DROP^" "$DROP" || fail "the rebase failed"
G update-ref refs/heads/zerg/f/integration "$(git -C "$TEST_ROOT/rewrite" rev-parse HEAD)"
G worktree remove --force "$TEST_ROOT/rewrite"
zerg rush --resume --workers 2 > "$PROJ/out5.txt" 2>&1 || fail "--resume after the rewrite failed: $(cat "$PROJ/out5.txt")"
grep -q "1 complete task of f has its work no longer on" "$PROJ/out5.txt" ||
    fail "the rewritten commits were counted as lost: $(cat "$PROJ/out5.txt")"
[ "$(runs R-L1-001)" = 3 ] || fail "R-L1-001 ran $(runs R-L1-001) times, not 3"
[ "$(runs R-L1-002)" = 2 ] || fail "R-L1-002 ran again after the rewrite"
[ "$(runs R-L2-001)" = 3 ] || fail "R-L2-001 ran again after the rewrite"
grep -q "may need a rerun too: R-L2-001" "$PROJ/.zerg/monitor.jsonl" || fail "the kept dependent was not named"
[ "$(trailers "main..zerg/f/integration" | sort | tr '\n' ' ')" = "R-L1-001 R-L1-002 R-L2-001 " ] ||
    fail "the branch does not hold each task once after the rewrite"
[ "$(G show zerg/f/integration:a.txt)" = a ] || fail "a.txt missing after the rerun"
zerg rush --resume > "$PROJ/out6.txt" 2>&1 || fail "the last --resume failed"
grep -q "Nothing to do" "$PROJ/out6.txt" || fail "the repaired run was resumed again: $(cat "$PROJ/out6.txt")"
pass "a rewrite dropping one commit: only that task reruns, its dependent is kept and named"
