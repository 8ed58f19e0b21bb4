#!/usr/bin/env bash
# Review before merge (rush.review, DESIGN §21) on a real git repository,
# driven from a second shell while the rush runs: passing tasks wait as
# awaiting_review with nothing merged, their dependents wait while
# independent work goes on, the run says what waits; zerg review / diff
# show the change; approve merges through the queue; redo runs the task
# again with the note ($ZERG_REVIEW_NOTE); bad decisions are refused with
# nothing written; a stale request is dropped; the waiting tasks survive
# zerg stop, an offline approval is applied by --resume, and the run
# completes once everything is approved.
source "$(dirname "$0")/lib.sh"

awaiting() { [ "$(task_status "$1")" = awaiting_review ]; }
status_is() { [ "$(task_status "$1")" = "$2" ]; }
on_integration() { G log --format=%B main..zerg/f/integration | grep -c "^Task-ID: $1\$" || true; }
requests() { { ls "$PROJ/.zerg/review/f" 2>/dev/null || true; } | wc -l; }

new_project review
git_repo README=base
# A writes what its attempt and the reviewer's note say; B is independent
# of A; C waits for A, D for B (schedule dag: D may start while A waits).
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "R-L1-001", "title": "write a", "level": 1,
  "command": "printf 'attempt %s note [%s]\\n' \"$ZERG_ATTEMPT\" \"$ZERG_REVIEW_NOTE\" > a.txt",
  "verification": {"command": "test -s a.txt"}, "files": {"create": ["a.txt"]}},
 {"id": "R-L1-002", "title": "write b", "level": 1,
  "command": "echo b > b.txt", "files": {"create": ["b.txt"]}},
 {"id": "R-L2-001", "title": "read a", "level": 2, "dependencies": ["R-L1-001"],
  "command": "cat a.txt > c.txt", "files": {"create": ["c.txt"]}},
 {"id": "R-L2-002", "title": "read b", "level": 2, "dependencies": ["R-L1-002"],
  "command": "cat b.txt > d.txt", "files": {"create": ["d.txt"]}}
]}
JSON

# ---- bad configuration first: review needs worktree isolation
printf 'rush:\n  isolation: none\n  review: true\n' > "$PROJ/.zerg/config-none.yaml"
cp "$PROJ/.zerg/config.yaml" "$PROJ/.zerg/config.keep"
cat "$PROJ/.zerg/config-none.yaml" "$PROJ/.zerg/config.keep" > "$PROJ/.zerg/config.yaml"
rc=0
zerg rush --workers 2 > "$PROJ/none.txt" 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "rush.review with isolation none: expected exit 2, got $rc: $(cat "$PROJ/none.txt")"
grep -q "rush.review needs worktree isolation" "$PROJ/none.txt" || fail "no clear error: $(cat "$PROJ/none.txt")"
! G rev-parse -q --verify zerg/f/integration > /dev/null || fail "a refused rush made an integration branch"
mv "$PROJ/.zerg/config.keep" "$PROJ/.zerg/config.yaml"
rm -rf "$PROJ/.zerg/state" "$PROJ/.zerg/config-none.yaml"
pass "rush.review without worktree isolation exits 2 and starts nothing"

# ---- the rush waits for review; a second shell reads and decides
rush_bg --workers 2 --review --schedule dag
wait_for 30 awaiting R-L1-001
wait_for 30 awaiting R-L1-002
[ "$(on_integration R-L1-001)" = 0 ] || fail "a task awaiting review was merged"
[ "$(on_integration R-L1-002)" = 0 ] || fail "a task awaiting review was merged"
G rev-parse -q --verify "refs/zerg/f/review/R-L1-001/1" > /dev/null || fail "no review ref for R-L1-001"
wait_for 20 has_event review_waiting
task_running R-L2-001 && fail "a dependent started before its dependency was approved"
kill -0 "$RUSH_PID" || fail "the rush ended while tasks wait for review"
pass "passing tasks wait unmerged as awaiting_review and the run says so"

zerg review > "$PROJ/review.txt" || fail "review exited $?"
grep -q "Waiting for review in f: 2 tasks" "$PROJ/review.txt" || fail "review: $(cat "$PROJ/review.txt")"
grep -q "R-L1-001  write a" "$PROJ/review.txt" || fail "review does not list R-L1-001"
grep -q "1 file changed" "$PROJ/review.txt" || fail "review has no diff stat: $(cat "$PROJ/review.txt")"
grep -q "passed: test -s a.txt" "$PROJ/review.txt" || fail "review does not name the check"
zerg diff R-L1-001 > "$PROJ/diff.txt" || fail "diff exited $?"
grep -qx '+attempt 1 note \[\]' "$PROJ/diff.txt" || fail "diff: $(cat "$PROJ/diff.txt")"
grep -q '^+++ b/a.txt' "$PROJ/diff.txt" || fail "diff names no file"
zerg diff --stat R-L1-002 | grep -q "b.txt" || fail "diff --stat"
zerg status > "$PROJ/status.txt"
grep -q "2 awaiting_review" "$PROJ/status.txt" || fail "status: $(cat "$PROJ/status.txt")"
zerg status --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["tasks"]["awaiting_review"] == 2, d["tasks"]' ||
    fail "status --json does not count awaiting_review"
zerg report -o "$PROJ/mid.html" > /dev/null || fail "report exited $?"
grep -q "awaiting_review" "$PROJ/mid.html" || fail "the report's table does not show awaiting_review"
grep -q 'class="bar o[0-9]* k-awaiting"' "$PROJ/mid.html" || fail "the report's timeline has no waiting bar"
pass "zerg review, zerg diff, zerg status and zerg report show what waits"

# Refusals: nothing is written.
before=$(requests)
rc=0; zerg approve R-L2-001 > "$PROJ/bad1.txt" 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -q "is pending, not awaiting review" "$PROJ/bad1.txt" || fail "approve of a pending task: rc $rc $(cat "$PROJ/bad1.txt")"
rc=0; zerg approve R-L1-002 NOPE > "$PROJ/bad2.txt" 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -q "unknown task 'NOPE'" "$PROJ/bad2.txt" || fail "approve of an unknown task: rc $rc"
rc=0; zerg redo R-L1-001 --note "$(head -c 1200 /dev/zero | tr '\0' x)" > "$PROJ/bad3.txt" 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -q "at most 1000" "$PROJ/bad3.txt" || fail "an over-long note: rc $rc"
rc=0; zerg approve > /dev/null 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "approve with no task: rc $rc"
[ "$(requests)" = "$before" ] || fail "a refused decision left a request"
awaiting R-L1-002 || fail "a refused batch approved R-L1-002"
pass "bad decisions are refused (exit 2) and nothing is written"

# A request for another attempt is stale: dropped, the task waits on.
mkdir -p "$PROJ/.zerg/review/f"
printf '{"feature":"f","task":"R-L1-002","attempt":7,"decision":"approve"}' > "$PROJ/.zerg/review/f/R-L1-002.json"
wait_for 10 has_event review_request_invalid
awaiting R-L1-002 || fail "a stale request moved the task"
[ "$(on_integration R-L1-002)" = 0 ] || fail "a stale request merged the task"
pass "a request for another attempt is dropped"

zerg approve R-L1-002 > "$PROJ/approve.txt" || fail "approve exited $?"
grep -q "R-L1-002 merged as" "$PROJ/approve.txt" || fail "approve: $(cat "$PROJ/approve.txt")"
[ "$(on_integration R-L1-002)" = 1 ] || fail "the approved task is not on the integration branch"
wait_for 30 awaiting R-L2-002
task_running R-L2-001 && fail "R-L2-001 started while R-L1-001 waits"
pass "approve merges; the dependent of the approved task runs, the other waits"

zerg redo R-L1-001 --note "say hello" > "$PROJ/redo.txt" || fail "redo exited $?"
grep -Eq "R-L1-001 (runs again|ran again \(attempt 2\))" "$PROJ/redo.txt" || fail "redo: $(cat "$PROJ/redo.txt")"
wait_for 30 bash -c "[ \"\$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[\"tasks\"][\"R-L1-001\"][\"attempt\"])' '$PROJ/.zerg/state/f.json')\" = 2 ]"
wait_for 30 awaiting R-L1-001
zerg diff R-L1-001 | grep -qx '+attempt 2 note \[say hello\]' || fail "the redo did not get the note: $(zerg diff R-L1-001)"
[ "$(jdata task_redo note)" = "say hello" ] || fail "task_redo event"
[ "$(task_status R-L1-001 retry_count)" = 0 ] || fail "a redo was charged"
pass "redo runs the task again, uncharged, with \$ZERG_REVIEW_NOTE"

# ---- stop with reviews pending; approve offline; --resume applies it
zerg stop > /dev/null || fail "stop exited $?"
rush_wait 30
awaiting R-L1-001 || fail "zerg stop lost R-L1-001's review: $(task_status R-L1-001)"
awaiting R-L2-002 || fail "zerg stop lost R-L2-002's review"
zerg approve R-L1-001 > "$PROJ/offline.txt" || fail "offline approve exited $?"
grep -q "no rush is running: 'zerg rush --resume' merges them first" "$PROJ/offline.txt" || fail "offline approve: $(cat "$PROJ/offline.txt")"
zerg review | grep -q "approved: the rush applies it" || fail "review does not show the pending approval"
pass "reviews survive zerg stop; an approval with no rush waits for --resume"

rush_bg --workers 2 --resume --review --schedule dag
wait_for 30 status_is R-L1-001 complete
wait_for 30 awaiting R-L2-001
grep -qx 'attempt 2 note \[say hello\]' <(G show zerg/f/integration:a.txt) || fail "the integration branch lacks the approved a.txt"
zerg approve --all > "$PROJ/all.txt" || fail "approve --all exited $?"
rush_wait 60
[ "$RUSH_RC" -eq 0 ] || fail "resumed rush exited $RUSH_RC: $(tail -5 "$PROJ/rush.out")"
for t in R-L1-001 R-L1-002 R-L2-001 R-L2-002; do
    [ "$(task_status $t)" = complete ] || fail "$t is $(task_status $t)"
    [ "$(on_integration $t)" = 1 ] || fail "$t is on the integration branch $(on_integration $t) times"
done
[ "$(G show zerg/f/integration:c.txt)" = "attempt 2 note [say hello]" ] || fail "c.txt: $(G show zerg/f/integration:c.txt)"
[ "$(requests)" = 0 ] || fail "requests left behind"
zerg report -o "$PROJ/end.html" > /dev/null || fail "report exited $?"
grep -q 'class="bar o[0-9]* k-redone"' "$PROJ/end.html" || fail "the report does not show the attempt sent back"
zerg review | grep -q "Nothing waits for review" || fail "review after the run"
no_procs
pass "--resume applies the offline approval; approve --all finishes the run"
