#!/usr/bin/env bash
# Nothing a task produces is lost, and nothing of the user's is touched
# (DESIGN §18), on real repositories: `zerg cleanup` deletes only the refs
# zerg recorded making (git.refs), never a checked-out branch, keeps every
# saved patch under --all, and keeps an integration branch holding
# unmerged work unless --force; a rush (fresh, --resume, or a merge in the
# middle of one) never moves a zerg branch the user has checked out.
source "$(dirname "$0")/lib.sh"

one_task() {
    graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "T-1", "title": "one", "level": 1, "command": "echo one > one.txt"}
]}
JSON
}
# The user's tree as bytes: HEAD's ref, its commit, and every change.
tree_snapshot() {
    { G symbolic-ref -q HEAD || echo detached; G rev-parse HEAD; G status --porcelain=v1 -uno; G diff; } 2>&1
}
# True once no process of this project is left (workers die with a
# killed orchestrator).
no_project_procs() { [ -z "$(project_pids "$PROJ")" ]; }

# ---- the user's own zerg/f/worker-9, checked out with an edit in it
new_project own
git_repo shared.txt=base
one_task
zerg rush --workers 1 --no-progress > "$PROJ/rush.out" 2>&1 || fail "rush exited $?: $(cat "$PROJ/rush.out")"
G switch -q -c zerg/f/worker-9
echo "my edit" >> "$PROJ/shared.txt"
before=$(tree_snapshot)
user_branch_intact() {
    G rev-parse -q --verify refs/heads/zerg/f/worker-9 > /dev/null || fail "$1 deleted the user's zerg/f/worker-9"
    G rev-parse -q --verify HEAD > /dev/null || fail "$1 left HEAD unborn: the checked-out branch went"
    [ "$(tree_snapshot)" = "$before" ] || fail "$1 changed the user's tree: $(tree_snapshot)"
}
zerg cleanup > "$PROJ/c1.txt" 2>&1 || fail "cleanup exited $?: $(cat "$PROJ/c1.txt")"
user_branch_intact cleanup
grep -q 'Deleted refs/heads/zerg/f/worker-0' "$PROJ/c1.txt" || fail "zerg's own worker branch stayed: $(cat "$PROJ/c1.txt")"
grep -q "Kept zerg/f/worker-9: the run's state does not list it as made by zerg" "$PROJ/c1.txt" || fail "cleanup does not say it left worker-9: $(cat "$PROJ/c1.txt")"
rc=0
zerg cleanup --all > "$PROJ/c2.txt" 2>&1 || rc=$?
user_branch_intact "cleanup --all"
[ $rc = 1 ] || fail "cleanup --all kept unmerged work and exited $rc: $(cat "$PROJ/c2.txt")"
zerg cleanup --all --force > "$PROJ/c3.txt" 2>&1 || fail "cleanup --all --force exited $?: $(cat "$PROJ/c3.txt")"
user_branch_intact "cleanup --all --force"
! G rev-parse -q --verify refs/heads/zerg/f/integration > /dev/null || fail "--all --force left the integration branch"
pass "cleanup, --all and --all --force leave the user's checked-out zerg/f/worker-9, its HEAD and edit alone"

# ---- a state of an older zerg (no git.refs): by the names, never a
# ---- checked-out branch
new_project legacy
git_repo shared.txt=base
one_task
zerg rush --workers 1 --no-progress > "$PROJ/rush.out" 2>&1 || fail "rush exited $?: $(cat "$PROJ/rush.out")"
python3 - "$PROJ/.zerg/state/f.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["git"].pop("refs", None)
json.dump(d, open(sys.argv[1], "w"))
PY
G switch -q -c zerg/f/worker-9
before=$(tree_snapshot)
zerg cleanup > "$PROJ/c1.txt" 2>&1 || fail "cleanup exited $?: $(cat "$PROJ/c1.txt")"
G rev-parse -q --verify HEAD > /dev/null || fail "HEAD is unborn: the checked-out branch went"
[ "$(tree_snapshot)" = "$before" ] || fail "the user's tree changed"
grep -q 'Deleted refs/heads/zerg/f/worker-0' "$PROJ/c1.txt" || fail "the old run's worker branch stayed: $(cat "$PROJ/c1.txt")"
grep -q 'does not list the refs zerg made' "$PROJ/c1.txt" || fail "cleanup does not say it goes by the names: $(cat "$PROJ/c1.txt")"
grep -q "Kept zerg/f/worker-9: it is checked out in $PROJ" "$PROJ/c1.txt" || fail "cleanup does not say why worker-9 stays: $(cat "$PROJ/c1.txt")"
pass "a state without git.refs: cleanup goes by the names, says so, and keeps the checked-out branch"

# ---- a patch cleanup --all saves is still there afterwards, and applies
new_project patch
git_repo shared.txt=base
one_task
zerg rush --workers 1 --no-progress > "$PROJ/rush.out" 2>&1 || fail "rush exited $?: $(cat "$PROJ/rush.out")"
wt="$PROJ/.zerg-worktrees/f/worker-0"
echo "half an edit" >> "$wt/shared.txt"
echo "a new file" > "$wt/new.txt"
rc=0
zerg cleanup --all > "$PROJ/c.txt" 2>&1 || rc=$? # 1: the unmerged branch stays
grep -q '^Saved the uncommitted work' "$PROJ/c.txt" || fail "cleanup --all saved nothing: $(cat "$PROJ/c.txt")"
[ -n "$(find "$PROJ/.zerg/logs/f" -name '*.patch' 2>/dev/null)" ] || fail "cleanup --all deleted the patch it saved: $(cat "$PROJ/c.txt")"
patch="$PROJ/.zerg/logs/f/tasks/T-1/attempt-1.patch"
grep -qF "Saved the uncommitted work of $wt to $patch" "$PROJ/c.txt" || fail "not saved where the worker would have: $(cat "$PROJ/c.txt")"
[ -s "$patch" ] || fail "no $patch"
grep -q 'Kept 1 saved patch' "$PROJ/c.txt" || fail "cleanup --all does not say where the patch is kept: $(cat "$PROJ/c.txt")"
[ -z "$(find "$PROJ/.zerg/logs/f" -type f ! -name '*.patch')" ] || fail "cleanup --all left logs: $(find "$PROJ/.zerg/logs/f" -type f)"
G apply --check "$patch" || fail "the saved patch does not apply on the base"
pass "the patch cleanup --all saved survives it, at tasks/T-1/attempt-1.patch, and applies on the base"

# ---- an integration branch holding unmerged commits
new_project unmerged
git_repo shared.txt=base
one_task
zerg rush --workers 1 --no-progress > "$PROJ/rush.out" 2>&1 || fail "rush exited $?: $(cat "$PROJ/rush.out")"
tip=$(G rev-parse zerg/f/integration)
rc=0
zerg cleanup --all > "$PROJ/c1.txt" 2>&1 || rc=$?
[ "$(G rev-parse -q --verify zerg/f/integration)" = "$tip" ] || fail "cleanup --all deleted unmerged work"
[ $rc = 1 ] || fail "cleanup --all exited $rc with unmerged work kept: $(cat "$PROJ/c1.txt")"
grep -q 'Kept zerg/f/integration: it holds 1 commit on none of your branches; bring it home first (git merge zerg/f/integration) or delete it anyway with --force' "$PROJ/c1.txt" ||
    fail "the message does not say how to merge it first: $(cat "$PROJ/c1.txt")"
[ -e "$PROJ/.zerg/state/f.json" ] || fail "the state that lists the kept branch went"
zerg cleanup --all --dry-run > "$PROJ/dry.txt" 2>&1 || true
grep -q 'Would keep zerg/f/integration: it holds 1 commit' "$PROJ/dry.txt" || fail "--dry-run does not say it keeps the branch: $(cat "$PROJ/dry.txt")"
G merge -q --ff-only zerg/f/integration
zerg cleanup --all > "$PROJ/c2.txt" 2>&1 || fail "cleanup --all of merged work exited $?: $(cat "$PROJ/c2.txt")"
! G rev-parse -q --verify refs/heads/zerg/f/integration > /dev/null || fail "a merged integration branch stayed"
pass "an integration branch with unmerged commits survives cleanup --all (exit 1, how to merge it); once merged it goes"

# ---- --resume with the user on zerg/f/integration
new_project resume
git_repo shared.txt=base
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "T-1", "title": "one", "level": 1, "command": "echo one > one.txt"},
 {"id": "T-2", "title": "two", "level": 2, "dependencies": ["T-1"], "command": "while [ ! -e \"$ZERG_PROJECT/go\" ]; do sleep 0.05; done; echo two > two.txt"}
]}
JSON
rush_bg --workers 1 --no-progress
wait_for 30 task_running T-2
kill -9 "$RUSH_PID"
rush_wait 30
wait_for 10 no_project_procs
tip=$(G rev-parse zerg/f/integration)
G switch -q zerg/f/integration
echo "user edit" >> "$PROJ/shared.txt"
before=$(tree_snapshot)
touch "$PROJ/go"
rc=0
zerg rush --resume --no-progress > "$PROJ/resume.out" 2>&1 || rc=$?
[ "$(G rev-parse zerg/f/integration)" = "$tip" ] || fail "--resume moved the checked-out integration branch"
[ "$(tree_snapshot)" = "$before" ] || fail "--resume changed the user's tree: $(tree_snapshot)"
[ $rc = 2 ] || fail "--resume with the integration branch checked out exited $rc: $(cat "$PROJ/resume.out")"
grep -q "zerg/f/integration is checked out in $PROJ: zerg never moves a branch that is checked out" "$PROJ/resume.out" ||
    fail "--resume does not say why: $(cat "$PROJ/resume.out")"
grep -q "switch <branch>" "$PROJ/resume.out" || fail "--resume does not give the fix: $(cat "$PROJ/resume.out")"
pass "--resume refuses (exit 2, the fix said) and leaves the checked-out integration branch and the user's tree as they were"
zerg cleanup --all --force > "$PROJ/c.txt" 2>&1 || true
[ "$(G rev-parse -q --verify zerg/f/integration)" = "$tip" ] || fail "cleanup --all --force deleted the checked-out integration branch"
[ "$(tree_snapshot)" = "$before" ] || fail "cleanup changed the user's tree: $(tree_snapshot)"
grep -q "Kept zerg/f/integration: it is checked out in $PROJ" "$PROJ/c.txt" || fail "cleanup does not say why the branch stays: $(cat "$PROJ/c.txt")"
pass "not even --all --force deletes the integration branch the user has checked out"

# ---- a conflict ref moved since zerg set it
new_project moved
git_repo shared.txt=base
one_task
zerg rush --workers 1 --no-progress > "$PROJ/rush.out" 2>&1 || fail "rush exited $?: $(cat "$PROJ/rush.out")"
G merge -q --ff-only zerg/f/integration
set_by_zerg=$(G rev-parse zerg/f/integration)
G update-ref refs/zerg/f/conflicts/T-1/1 "$set_by_zerg"
python3 - "$PROJ/.zerg/state/f.json" "$set_by_zerg" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["git"].setdefault("refs", {})["refs/zerg/f/conflicts/T-1/1"] = sys.argv[2]
json.dump(d, open(sys.argv[1], "w"))
PY
G update-ref refs/zerg/f/conflicts/T-1/1 "$(G rev-parse HEAD~1)" # the user moved it
rc=0
zerg cleanup --all > "$PROJ/c1.txt" 2>&1 || rc=$?
G rev-parse -q --verify refs/zerg/f/conflicts/T-1/1 > /dev/null || fail "cleanup --all deleted a ref moved since zerg set it"
[ $rc = 1 ] || fail "cleanup --all exited $rc with a moved ref kept: $(cat "$PROJ/c1.txt")"
grep -q 'Kept refs/zerg/f/conflicts/T-1/1: it moved since zerg set it' "$PROJ/c1.txt" || fail "cleanup does not say why: $(cat "$PROJ/c1.txt")"
zerg cleanup --all --force > "$PROJ/c2.txt" 2>&1 || fail "cleanup --all --force exited $?: $(cat "$PROJ/c2.txt")"
! G rev-parse -q --verify refs/zerg/f/conflicts/T-1/1 > /dev/null || fail "--force left the moved ref"
[ ! -e "$PROJ/.zerg/state/f.json" ] || fail "the state stayed though nothing of zerg's is left"
pass "a conflict ref moved since zerg set it stays without --force (exit 1) and goes with it"

# ---- a fresh rush with the user on zerg/f/worker-0
new_project fresh
git_repo shared.txt=base
one_task
G switch -q -c zerg/f/worker-0
w0=$(G rev-parse HEAD)
rc=0
zerg rush --workers 1 --no-progress > "$PROJ/fresh.out" 2>&1 || rc=$?
[ "$(G rev-parse HEAD)" = "$w0" ] || fail "the rush moved the user's checked-out zerg/f/worker-0"
[ -z "$(G status --porcelain -uno)" ] || fail "the user's tree changed: $(G status --porcelain -uno)"
[ $rc = 2 ] || fail "a rush with zerg/f/worker-0 checked out exited $rc: $(cat "$PROJ/fresh.out")"
grep -q "zerg/f/worker-0 is checked out in $PROJ" "$PROJ/fresh.out" || fail "the rush does not say why: $(cat "$PROJ/fresh.out")"
pass "a rush refuses (exit 2) while the user has a worker branch checked out, and moves nothing"

# ---- the integration branch checked out in the middle of a run
new_project midrun
git_repo shared.txt=base
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "T-1", "title": "one", "level": 1, "command": "while [ ! -e \"$ZERG_PROJECT/go\" ]; do sleep 0.05; done; echo one > one.txt"}
]}
JSON
base=$(G rev-parse HEAD)
rush_bg --workers 1 --no-progress
wait_for 30 task_running T-1
G switch -q zerg/f/integration
touch "$PROJ/go"
rush_wait 60
[ "$(G rev-parse HEAD)" = "$base" ] || fail "the merge moved the checked-out integration branch"
[ -z "$(G status --porcelain -uno)" ] || fail "the user's tree changed under them: $(G status --porcelain -uno)"
[ "$RUSH_RC" = 1 ] || fail "the run exited $RUSH_RC with the integration branch checked out: $(cat "$PROJ/rush.out")"
grep -q "zerg/f/integration is checked out in $PROJ" "$PROJ/rush.out" || fail "the run does not say why it stopped: $(cat "$PROJ/rush.out")"
kept=$(G rev-parse -q --verify refs/zerg/f/conflicts/T-1/1) || fail "the task's commit was not kept"
[ "$(G show "$kept:one.txt")" = one ] || fail "the kept commit lacks the task's work"
grep '"event":"merge_conflict"' "$PROJ/.zerg/monitor.jsonl" | grep -q '"reason":"checked_out"' || fail "no merge_conflict event with reason checked_out"
G switch -q main
zerg rush --resume --no-progress > "$PROJ/resume.out" 2>&1 || fail "--resume after switching away exited $?: $(cat "$PROJ/resume.out")"
[ "$(G show zerg/f/integration:one.txt)" = one ] || fail "the resumed run did not merge T-1"
pass "a merge that finds the integration branch checked out stops the run (exit 1), moves nothing, keeps the commit; --resume finishes"
# ---- a dead attempt's patch survives two fresh rushes (the set-aside
# tasks.previous is pruned, never its patches) and cleanup --all keeps a
# broken .git that healing moved aside
new_project fresh2
git_repo shared.txt=base
M2="$TEST_ROOT/marks-fresh2"
mkdir -p "$M2"
graph <<JSON
{"feature": "f", "tasks": [
 {"id": "P-1", "title": "p", "level": 1,
  "command": "if [ ! -e $M2/p ]; then touch $M2/p; echo half > half.txt; kill -9 \$PPID; sleep 5; fi; echo done > p.txt"}
]}
JSON
zerg rush --workers 1 > "$PROJ/r1.txt" 2>&1 || fail "fresh2: first rush exited $?: $(cat "$PROJ/r1.txt")"
patch="$PROJ/.zerg/logs/f/tasks/P-1/attempt-1.patch"
[ -s "$patch" ] || fail "fresh2: no patch of the dead attempt"
sum=$(sha256sum < "$patch")
zerg rush --fresh --workers 1 > "$PROJ/r2.txt" 2>&1 || fail "fresh2: second rush exited $?"
zerg rush --fresh --workers 1 > "$PROJ/r3.txt" 2>&1 || fail "fresh2: third rush exited $?"
found=$(find "$PROJ/.zerg/logs/f" -name attempt-1.patch -path '*P-1*' -exec sha256sum {} + | grep -c "${sum%% *}" || true)
[ "$found" -ge 1 ] || fail "fresh2: two fresh rushes deleted the dead attempt's patch: $(find "$PROJ/.zerg/logs/f" | head -20)"
ls -d "$PROJ"/.zerg/logs/f/tasks.kept-* > /dev/null 2>&1 || fail "fresh2: the patch was not kept aside under tasks.kept-*"
# A broken .git that healing moved aside, as if a task had replaced it.
mkdir -p "$PROJ/.zerg/logs/f/worktrees/worker-0-2026-12-01T00-00-00.000Z.git/objects"
echo keep > "$PROJ/.zerg/logs/f/worktrees/worker-0-2026-12-01T00-00-00.000Z.git/objects/x"
zerg cleanup --all --force > "$PROJ/c.txt" 2>&1 || fail "fresh2: cleanup --all --force exited $?: $(cat "$PROJ/c.txt")"
find "$PROJ/.zerg/logs/f" -name attempt-1.patch | grep -q . || fail "fresh2: cleanup --all deleted the kept patch"
[ -e "$PROJ/.zerg/logs/f/worktrees/worker-0-2026-12-01T00-00-00.000Z.git/objects/x" ] ||
    fail "fresh2: cleanup --all deleted the moved-aside .git"
grep -q 'copie' "$PROJ/c.txt" || fail "fresh2: cleanup does not say it kept the copy: $(cat "$PROJ/c.txt")"
pass "a dead attempt's patch survives two fresh rushes and cleanup --all; so does a moved-aside .git"
# ---- a worker branch whose head is a passing task's commit that was
# never merged (its orchestrator died between the commit and the merge):
# plain cleanup keeps it, --all --force deletes it
new_project unmergedhead
git_repo shared.txt=base
one_task
zerg rush --workers 1 --no-progress > "$PROJ/rush.out" 2>&1 || fail "unmergedhead: rush exited $?"
wt="$PROJ/.zerg-worktrees/f/worker-0"
run=$(git -C "$wt" log -1 --format='%(trailers:key=Zerg-Run,valueonly)' | head -1)
echo later > "$wt/later.txt"
git -C "$wt" add later.txt
git -C "$wt" commit -qm "ZERG [W0]: two

Task-ID: T-2
Attempt: 1
Zerg-Run: $run"
head=$(G rev-parse refs/heads/zerg/f/worker-0)
rc=0
zerg cleanup > "$PROJ/c.txt" 2>&1 || rc=$?
[ $rc = 1 ] || fail "unmergedhead: cleanup exited $rc: $(cat "$PROJ/c.txt")"
[ "$(G rev-parse -q --verify refs/heads/zerg/f/worker-0)" = "$head" ] ||
    fail "unmergedhead: cleanup deleted a worker branch holding an unmerged task commit"
grep -q 'its head is the commit of task T-2 (attempt 1), which passed but is on no branch' "$PROJ/c.txt" ||
    fail "unmergedhead: cleanup does not say why it kept worker-0: $(cat "$PROJ/c.txt")"
zerg cleanup --all --force > "$PROJ/c2.txt" 2>&1 || fail "unmergedhead: --all --force exited $?: $(cat "$PROJ/c2.txt")"
! G rev-parse -q --verify refs/heads/zerg/f/worker-0 > /dev/null || fail "unmergedhead: --force kept worker-0"
pass "a worker branch holding a passed, unmerged task commit survives cleanup (exit 1) until --force"
echo "$TESTS_PASSED passed, 0 failed"
