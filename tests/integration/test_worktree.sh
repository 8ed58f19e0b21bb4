#!/usr/bin/env bash
# Worktree isolation (DESIGN §13) on real git repositories: a worktree per
# worker, a commit per task, merges into zerg/f/integration as tasks
# finish, level 2 seeing level 1, conflicts retried on the new tip, a dead
# attempt's leftovers saved as a patch, required gates stopping the run,
# kill -9 of the orchestrator and --resume, cleanup, and the bad inputs.
source "$(dirname "$0")/lib.sh"

integration_log() { G log --format='%H %(trailers:key=Task-ID,valueonly,separator=%x2C)' main..zerg/f/integration; }

# ---- 8 parallel tasks, some committing themselves; level 2 reads level 1
new_project wt
git_repo shared.txt=base README=readme
{
    echo '{"feature": "f", "tasks": ['
    for i in 1 2 3 4 5 6 7 8; do
        if [ $((i % 2)) = 0 ]; then
            cmd="echo t$i > out$i.txt && git add out$i.txt && git commit -qm self-$i"
        else
            cmd="echo t$i > out$i.txt"
        fi
        echo " {\"id\": \"W-L1-00$i\", \"title\": \"write $i\", \"level\": 1, \"command\": \"$cmd\", \"files\": {\"create\": [\"out$i.txt\"]}},"
    done
    echo ' {"id": "W-L2-001", "title": "sum", "level": 2, "dependencies": ["W-L1-001","W-L1-008"], "command": "cat out*.txt > all.txt", "verification": {"command": "test $(wc -l < all.txt) = 8"}, "files": {"create": ["all.txt"]}}'
    echo ']}'
} | graph
head_before=$(G rev-parse HEAD)
zerg rush --workers 4 > "$PROJ/out.txt" 2>&1 || fail "rush exited $?: $(cat "$PROJ/out.txt")"
pass "a rush with worktree isolation completes"
[ "$(G rev-parse HEAD)" = "$head_before" ] || fail "the user's branch moved"
# Only the test's own untracked files (the spec dir, the config, the rush
# output): zerg excludes its run files only, so .zerg/config.yaml shows.
changed=$(G status --porcelain | grep -vxE '\?\? (\.gsd/|\.zerg/|out\.txt)' || true)
[ -z "$changed" ] || fail "the user's tree changed: $changed"
[ ! -e "$PROJ/out1.txt" ] || fail "a task wrote into the user's tree"
pass "the user's branch and working tree are untouched"
n=$(integration_log | wc -l)
[ "$n" = 9 ] || fail "expected 9 commits on the integration branch, got $n: $(integration_log)"
dups=$(integration_log | awk '{print $2}' | sort | uniq -d)
[ -z "$dups" ] || fail "a task landed twice: $dups"
for i in 1 2 3 4 5 6 7 8; do
    [ "$(G show zerg/f/integration:out$i.txt)" = "t$i" ] || fail "out$i.txt missing on the integration branch"
done
[ "$(G show zerg/f/integration:all.txt | wc -l)" = 8 ] || fail "level 2 did not see level 1's output"
pass "every task's work lands exactly once; level 2 reads level 1"
if G log --name-only --format= zerg/f/integration | grep -q '^\.zerg'; then
    fail "a .zerg file was committed"
fi
G log -1 --format=%B zerg/f/integration | grep -q '^Task-ID: W-L2-001$' || fail "no Task-ID trailer"
G log -1 --format=%B zerg/f/integration | grep -q '^Zerg-Run: ' || fail "no Zerg-Run trailer"
G log -1 --format=%s zerg/f/integration | grep -qE '^ZERG \[W[0-9]+\]: sum$' || fail "subject: $(G log -1 --format=%s zerg/f/integration)"
grep -q '/.zerg/' "$PROJ/.git/info/exclude" || fail ".zerg not in .git/info/exclude"
[ ! -e "$PROJ/.gitignore" ] || fail "zerg wrote a .gitignore"
pass "no .zerg file in any commit; trailers; excludes in .git/info/exclude"
grep -q 'git merge zerg/f/integration' "$PROJ/out.txt" || fail "the summary does not say how to bring the work home: $(cat "$PROJ/out.txt")"
zerg status > "$PROJ/status.txt" || true
grep -q 'Integration: zerg/f/integration' "$PROJ/status.txt" || fail "status lacks the integration branch: $(cat "$PROJ/status.txt")"
zerg status --json | python3 -c 'import json,sys; d=json.load(sys.stdin); g=d["git"]; assert g["branch"]=="zerg/f/integration" and g["commits"]==9 and g["merged"]==9, g' ||
    fail "status --json git"
pass "summary and status show the integration branch"

# ---- cleanup
zerg cleanup --dry-run > "$PROJ/dry.txt" || fail "cleanup --dry-run failed"
[ "$(G worktree list | wc -l)" -gt 1 ] || fail "--dry-run removed worktrees"
zerg cleanup > "$PROJ/clean.txt" || fail "cleanup failed: $(cat "$PROJ/clean.txt")"
[ "$(G worktree list | wc -l)" = 1 ] || fail "worktrees left: $(G worktree list)"
[ -z "$(G branch --list 'zerg/f/worker-*')" ] || fail "worker branches left"
G rev-parse -q --verify zerg/f/integration > /dev/null || fail "cleanup removed the integration branch"
# The integration branch holds 9 unmerged commits: only --force deletes
# it (test_cleanup_safety.sh holds the refusal itself).
zerg cleanup --all --force > /dev/null || fail "cleanup --all --force failed"
[ -z "$(G branch --list 'zerg/*')" ] || fail "cleanup --all left $(G branch --list 'zerg/*')"
[ ! -e "$PROJ/.zerg/state/f.json" ] || fail "cleanup --all left the state"
pass "cleanup: --dry-run changes nothing; worktrees and worker branches go; --all --force takes the rest"

# ---- conflicts: two same-level tasks append to one file
new_project conflict
git_repo shared.txt=base README=readme
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "C-L1-001", "title": "a", "level": 1, "command": "echo A >> shared.txt; sleep 0.3", "files": {"modify": ["shared.txt"]}},
 {"id": "C-L1-002", "title": "b", "level": 1, "command": "echo B >> shared.txt; echo b > other.txt; sleep 0.3", "files": {"create": ["other.txt"]}}
]}
JSON
zerg rush --workers 2 > "$PROJ/out.txt" 2>&1 || fail "conflict rush exited $?: $(cat "$PROJ/out.txt")"
has_event merge_conflict || fail "no merge_conflict event"
[ -n "$(G for-each-ref 'refs/zerg/f/conflicts/')" ] || fail "the conflicting commit was not kept"
content=$(G show zerg/f/integration:shared.txt | sort | tr '\n' ' ')
[ "$content" = "A B base " ] || fail "shared.txt on the integration branch: $content"
# The conflict is charged to its own budget, never to the retry budget.
for t in C-L1-001 C-L1-002; do
    [ "$(task_status $t retry_count)" = 0 ] || fail "$t: a merge conflict was charged to its retry budget"
done
[ "$(( $(task_status C-L1-001 conflict_count 2>/dev/null || echo 0) + $(task_status C-L1-002 conflict_count 2>/dev/null || echo 0) ))" = 1 ] ||
    fail "expected one conflict counted"
! grep '"event":"task_failed"' "$PROJ/.zerg/monitor.jsonl" | grep -q 'C-L1-00' || fail "a conflict was logged as a task failure"
pass "a conflict is retried on the new tip, uncharged, and both changes land"
has_event scope_violation || fail "C-L1-002 changed shared.txt outside its files: no scope_violation"
pass "a change outside files.create/modify is reported to the scope policy (warn)"

# ---- the conflict budget
new_project budget
git_repo shared.txt=base README=readme
config_append "  conflict_retry_attempts: 0"
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "B-L1-001", "level": 1, "command": "echo A$RANDOM > shared.txt; sleep 0.3"},
 {"id": "B-L1-002", "level": 1, "command": "echo B$RANDOM > shared.txt; sleep 0.3"}
]}
JSON
if zerg rush --workers 2 > "$PROJ/out.txt" 2>&1; then fail "a spent conflict budget did not fail the rush"; fi
grep -q 'conflict_retry_attempts' "$PROJ/.zerg/state/f.json" || fail "the failure does not name the conflict budget"
pass "a spent conflict budget fails the task, named in the message"

# ---- a worker killed mid-task: the retry starts clean, the patch exists
new_project crash
git_repo shared.txt=base README=readme
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "K-L1-001", "level": 1, "command": "test ! -e half.txt || exit 9; echo \"half $ZERG_ATTEMPT\" > half.txt; sleep 30; echo done > done.txt",
  "verification": {"command": "test ! -e half.txt || rm half.txt"}}
]}
JSON
rush_bg --workers 1
wt="$PROJ/.zerg-worktrees/f/worker-0"
# wrote ATTEMPT: the attempt got past its check and wrote half.txt.
wrote() { [ "$(cat "$wt/half.txt" 2>/dev/null)" = "half $1" ]; }
wait_for 20 wrote 1
kill -9 "$(worker_pid 0)"
wait_for 30 has_event task_reassigned
wait_for 20 test -e "$PROJ/.zerg/logs/f/tasks/K-L1-001/attempt-1.patch"
grep -q 'half.txt' "$PROJ/.zerg/logs/f/tasks/K-L1-001/attempt-1.patch" || fail "the patch lacks the half-written file"
pass "a dead attempt's leftovers are saved as a patch"
retried() { wrote 2 || has_event task_failed; }
wait_for 30 retried
has_event task_failed && fail "the retry saw the dead attempt's half-written file"
zerg stop > /dev/null 2>&1 || true
rush_wait || true
[ "$(task_status K-L1-001 retry_count)" = 0 ] || fail "the crash was charged"
pass "the retry started clean (no exit 9) and nothing was charged"

# ---- a required gate failure stops claims
new_project gate
git_repo shared.txt=base README=readme
cat >> "$PROJ/.zerg/config.yaml" <<'YAML'
quality_gates:
  - name: tests
    command: "echo gate output here; test -f never-there"
YAML
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "G-L1-001", "level": 1, "command": "echo 1 > one.txt"},
 {"id": "G-L2-001", "level": 2, "dependencies": ["G-L1-001"], "command": "echo 2 > two.txt"}
]}
JSON
if zerg rush --workers 1 > "$PROJ/out.txt" 2>&1; then fail "a failing required gate did not fail the rush"; fi
has_event gate_start && has_event gate_fail || fail "no gate_start/gate_fail"
task_running G-L2-001 && fail "a level-2 task started after the gate failed"
grep -q 'gate output here' "$PROJ/out.txt" || fail "the summary lacks the gate's output: $(cat "$PROJ/out.txt")"
pass "a required gate failure stops the run before level 2, with its output"

# ---- nothing a worker plants in .git/config runs in zerg's own git calls
new_project planted
git_repo shared.txt=base README=readme
mark="$TEST_ROOT/planted-ran"
graph <<JSON
{"feature": "f", "tasks": [
 {"id": "P-L1-001", "level": 1, "command": "git config core.fsmonitor 'touch $mark.fsmonitor'; git config filter.evil.clean 'touch $mark.clean; cat'; git config filter.evil.smudge 'touch $mark.smudge; cat'; echo '* filter=evil' > .gitattributes; mkdir -p hooks; printf '#!/bin/sh\\ntouch $mark.hook\\n' > hooks/pre-commit; chmod +x hooks/pre-commit; git config core.hooksPath \$PWD/hooks; echo x > x.txt"},
 {"id": "P-L2-001", "level": 2, "dependencies": ["P-L1-001"], "command": "echo y > y.txt"}
]}
JSON
zerg rush --workers 1 > "$PROJ/out.txt" 2>&1 || fail "planted rush exited $?: $(cat "$PROJ/out.txt")"
ls "$mark".* 2> /dev/null && fail "a command planted in .git/config ran"
[ "$(G show zerg/f/integration:y.txt)" = y ] || fail "the run after the planting did not merge"
pass "a planted fsmonitor, filter and hooksPath never run in zerg's calls"

# ---- bad input
new_project notrepo
config_append "" "rush:" "  isolation: worktree"
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "N-L1-001", "level": 1, "command": "true"}]}
JSON
rc=0; zerg rush > "$PROJ/out.txt" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "isolation worktree outside a repository: exit $rc"
grep -qi 'not a git repository' "$PROJ/out.txt" || fail "no clear message: $(cat "$PROJ/out.txt")"
[ ! -e "$PROJ/.zerg/state/f/slot-0" ] || fail "workers were set up"
pass "isolation: worktree outside a repository is a clear error (exit 2)"

new_project auto-none
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "N-L1-001", "level": 1, "command": "echo in place > here.txt"}]}
JSON
zerg rush > "$PROJ/out.txt" 2>&1 || fail "auto outside a repository failed: $(cat "$PROJ/out.txt")"
[ -f "$PROJ/here.txt" ] || fail "auto outside a repository did not run in place"
grep -q 'rush.isolation: none' "$PROJ/out.txt" || fail "no notice that isolation is off"
pass "auto outside a repository runs in place with a notice"

new_project badbase
git_repo shared.txt=base README=readme
config_append "" "rush:" "  base: no-such-branch"
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "N-L1-001", "level": 1, "command": "true"}]}
JSON
rc=0; zerg rush > "$PROJ/out.txt" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "a rush.base that does not exist: exit $rc"
grep -q 'no-such-branch' "$PROJ/out.txt" || fail "the message does not name the base: $(cat "$PROJ/out.txt")"
pass "a rush.base that does not exist is a clear error (exit 2)"

new_project unborn
G init -q -b main
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "N-L1-001", "level": 1, "command": "echo x > x.txt"}]}
JSON
zerg rush > "$PROJ/out.txt" 2>&1 || fail "auto on an unborn HEAD failed: $(cat "$PROJ/out.txt")"
[ -f "$PROJ/x.txt" ] || fail "an unborn HEAD did not fall back to running in place"
pass "a repository without a commit runs in place (auto)"

new_project dirty
git_repo shared.txt=base README=readme
echo local edit >> "$PROJ/README"
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "D-L1-001", "level": 1, "command": "cat README > seen.txt"}]}
JSON
zerg rush > "$PROJ/out.txt" 2>&1 || fail "dirty base rush failed: $(cat "$PROJ/out.txt")"
grep -q 'uncommitted changes are not in the run' "$PROJ/out.txt" || fail "no notice about the dirty tree"
[ "$(G show zerg/f/integration:seen.txt)" = readme ] || fail "the run saw uncommitted changes"
grep -q 'local edit' "$PROJ/README" || fail "the user's uncommitted edit was lost"
pass "a dirty tree: the run starts from HEAD, says so, and the edit stays"

echo "$TESTS_PASSED passed, 0 failed"
