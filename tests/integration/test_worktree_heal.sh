#!/usr/bin/env bash
# A slot heals (DESIGN §18): a task that replaces its worktree's .git by a
# repository of its own (`rm -rf .git; git init`) or by garbage, a worker
# killed while its task holds the worktree's index.lock, and a 1 GiB file
# left by a dead attempt never fail the tasks that follow on that slot;
# `zerg rush --fresh` and `zerg cleanup` work afterwards.  Each task
# breaks the slot on its first attempt only (a marker outside the repo).
source "$(dirname "$0")/lib.sh"

M="$TEST_ROOT/marks"
mkdir -p "$M"

# breaker NAME CMD: a level-1 task that runs CMD on its first attempt,
# then three level-2 tasks on the same (only) slot.
breaker_graph() {
    python3 - "$1" "$2" "$M" > "$PROJ/.gsd/specs/f/task-graph.json" <<'PY'
import json, sys
name, cmd, marks = sys.argv[1:4]
first = "if [ ! -e %s/%s ]; then touch %s/%s; %s; fi; " % (marks, name, marks, name, cmd)
tasks = [{"id": "B-L1-001", "title": "break", "level": 1,
          "command": first + "echo one > one.txt"}]
for i in range(1, 4):
    tasks.append({"id": "N-L2-00%d" % i, "title": "next %d" % i, "level": 2,
                  "dependencies": ["B-L1-001"],
                  "command": "test -e one.txt && echo %d > n%d.txt" % (i, i)})
print(json.dumps({"feature": "f", "tasks": tasks}))
PY
}

check_all_landed() {
    for f in one.txt n1.txt n2.txt n3.txt; do
        G cat-file -e "zerg/f/integration:$f" 2>/dev/null || fail "$1: $f is not on the integration branch"
    done
}

for kind in init garbage; do
    new_project "$kind"
    git_repo
    case $kind in
        init) cmd='rm -rf .git && git init -q && echo half > half.txt' ;;
        garbage) cmd='echo half > half.txt; echo garbage > .git' ;;
    esac
    breaker_graph "$kind" "$cmd"
    head_before=$(G rev-parse HEAD)
    zerg rush --workers 1 > "$PROJ/out.txt" 2>&1 || fail "$kind: rush exited $?: $(cat "$PROJ/out.txt")"
    check_all_landed "$kind"
    [ "$(G rev-parse HEAD)" = "$head_before" ] || fail "$kind: the user's branch moved"
    has_event worktree_repaired || fail "$kind: no worktree_repaired event"
    ls "$PROJ/.zerg/logs/f/worktrees/"worker-0-*.git > /dev/null 2>&1 || fail "$kind: the broken .git was not kept"
    grep -q half.txt "$PROJ/.zerg/logs/f/tasks/B-L1-001/attempt-1.patch" || fail "$kind: the dead attempt's file is not in its patch"
    pass "$kind: a replaced .git is moved aside and healed; the tasks after it on the slot pass"
    # The same slot broken again, then --fresh and cleanup.
    rm -f "$M/$kind"
    zerg rush --workers 1 --fresh > "$PROJ/out2.txt" 2>&1 || fail "$kind: --fresh exited $?: $(cat "$PROJ/out2.txt")"
    check_all_landed "$kind (fresh)"
    case $kind in
        init) (cd "$PROJ/.zerg-worktrees/f/worker-0" && rm -rf .git && git init -q) ;;
        garbage) echo garbage > "$PROJ/.zerg-worktrees/f/worker-0/.git" ;;
    esac
    echo left > "$PROJ/.zerg-worktrees/f/worker-0/left.txt"
    zerg rush --workers 1 --fresh > "$PROJ/out3.txt" 2>&1 || fail "$kind: --fresh over a broken slot exited $?: $(cat "$PROJ/out3.txt")"
    check_all_landed "$kind (fresh over broken)"
    case $kind in
        init) (cd "$PROJ/.zerg-worktrees/f/worker-0" && rm -rf .git && git init -q) ;;
        garbage) echo garbage > "$PROJ/.zerg-worktrees/f/worker-0/.git" ;;
    esac
    echo kept > "$PROJ/.zerg-worktrees/f/worker-0/kept.txt"
    zerg cleanup > "$PROJ/clean.txt" 2>&1 || fail "$kind: cleanup exited $?: $(cat "$PROJ/clean.txt")"
    [ "$(G worktree list | wc -l)" = 1 ] || fail "$kind: worktrees left: $(G worktree list)"
    grep -rqs kept "$PROJ/.zerg/logs/f/worktrees/" || fail "$kind: cleanup did not keep kept.txt"
    pass "$kind: --fresh over a broken slot and cleanup work; nothing unsaved is deleted"
done

# ---- kill -9 of the worker while its task holds the index.lock, 5 times
new_project lock
git_repo
python3 - "$M" > "$PROJ/.gsd/specs/f/task-graph.json" <<'PY'
import json, sys
marks = sys.argv[1]
# The task takes the worktree's index.lock as `git commit` would, then
# kills its worker (the parent of the shell running the command).
kill = ("if [ ! -e %s/lock-{id} ]; then touch %s/lock-{id}; "
        "echo half > half.txt; : > \"$(git rev-parse --git-dir)/index.lock\"; "
        "kill -9 $PPID; sleep 5; fi; echo {id} > {id}.txt") % (marks, marks)
tasks = [{"id": "K-L%d-001" % l, "title": "k%d" % l, "level": l,
          "dependencies": ["K-L%d-001" % (l - 1)] if l > 1 else [],
          "command": kill.replace("{id}", "K-L%d-001" % l)} for l in range(1, 6)]
print(json.dumps({"feature": "f", "tasks": tasks}))
PY
zerg rush --workers 1 > "$PROJ/out.txt" 2>&1 || fail "lock: rush exited $?: $(cat "$PROJ/out.txt")"
for l in 1 2 3 4 5; do
    G cat-file -e "zerg/f/integration:K-L$l-001.txt" 2>/dev/null || fail "lock: K-L$l-001 did not land"
done
[ "$(events worktree_repaired)" -ge 5 ] || fail "lock: expected 5 stale locks removed, got $(events worktree_repaired)"
pass "a worker killed 5 times with the index.lock held: each retry passes"
# --resume after the orchestrator itself died too: the task takes the
# lock, then kills the orchestrator (its worker's parent) and its worker.
rm -f "$M"/lock-*
python3 -c 'import json, sys
print(json.dumps({"feature": "f", "tasks": [{"id": "R-L1-001", "title": "r",
    "level": 1, "command": sys.argv[1]}]}))' \
    "if [ ! -e $M/r ]; then touch $M/r; : > \"\$(git rev-parse --git-dir)/index.lock\"; kill -9 \$(ps -o ppid= \$PPID) \$PPID; sleep 5; fi; echo r > r.txt" | graph
rush_bg --workers 1 --fresh
rush_wait 60
[ "$RUSH_RC" -ne 0 ] || fail "lock: the orchestrator was not killed"
[ -e "$PROJ/.zerg-worktrees/f/worker-0/.git" ] || fail "lock: no worktree"
lockfile=$(ls "$PROJ"/.git/worktrees/*/index.lock 2>/dev/null | head -1)
[ -n "$lockfile" ] || fail "lock: the dead attempt left no index.lock"
cleanup_procs
zerg rush --resume --workers 1 > "$PROJ/resume.txt" 2>&1 || fail "lock: --resume exited $?: $(cat "$PROJ/resume.txt")"
G cat-file -e zerg/f/integration:r.txt 2>/dev/null || fail "lock: --resume did not land r.txt"
pass "--resume recovers a slot whose index.lock a dead attempt left"

# ---- a 1 GiB file left by a dead attempt: reported, the retry runs at once
new_project big
git_repo
echo '{"feature": "f", "tasks": [{"id": "G-L1-001", "title": "big", "level": 1, "command": "if [ ! -e '"$M"'/big ]; then touch '"$M"'/big; echo small > small.txt; truncate -s 1G big.bin; kill -9 $PPID; sleep 5; fi; test ! -e big.bin && echo ok > ok.txt"}]}' | graph
timeout 120 "$ZERG" -C "$PROJ" rush --workers 1 > "$PROJ/out.txt" 2>&1 || fail "big: rush exited $?: $(cat "$PROJ/out.txt")"
G cat-file -e zerg/f/integration:ok.txt 2>/dev/null || fail "big: the retry did not land"
has_event leftover_too_large || fail "big: no leftover_too_large event"
grep '"event":"leftover_too_large"' "$PROJ/.zerg/monitor.jsonl" | grep -q 'big.bin' || fail "big: the event does not name big.bin"
grep '"event":"leftover_too_large"' "$PROJ/.zerg/monitor.jsonl" | grep -q '1073741824' || fail "big: the event does not give the size"
patch="$PROJ/.zerg/logs/f/tasks/G-L1-001/attempt-1.patch"
grep -q '^#   big.bin (1073741824 bytes)' "$patch" || fail "big: the patch header does not name big.bin: $(head -3 "$patch")"
grep -q 'small.txt' "$patch" || fail "big: the small file was not saved"
[ "$(stat -c %s "$patch")" -lt 100000 ] || fail "big: the patch holds the big file"
pass "a 1 GiB leftover is named with its size, left out of the patch, and the retry runs"

# ---- a git of zerg's killed under the worker: a crash, never charged
new_project killedgit
git_repo
config_append "  retry_attempts: 0"
mkdir -p "$TEST_ROOT/bin"
real_git=$(command -v git)
cat > "$TEST_ROOT/bin/git" <<SH
#!/bin/sh
# The first \`reset --hard\` of a worker's prepare (ZERG_WORKER_ID is set
# in workers only) is killed, as the OOM killer or a stray kill would.
[ -n "\$ZERG_WORKER_ID" ] && case " \$* " in *" reset "*" --hard "*)
    if [ ! -e "$M/killedgit" ]; then touch "$M/killedgit"; kill -9 \$\$; fi ;;
esac
exec "$real_git" "\$@"
SH
chmod +x "$TEST_ROOT/bin/git"
echo '{"feature": "f", "tasks": [{"id": "K-L1-001", "title": "k", "level": 1, "command": "echo k > k.txt"}]}' | graph
PATH="$TEST_ROOT/bin:$PATH" zerg rush --workers 1 > "$PROJ/out.txt" 2>&1 ||
    fail "killedgit: a killed git failed the task (retry_attempts 0): $(cat "$PROJ/out.txt")"
[ -e "$M/killedgit" ] || fail "killedgit: the wrapper never killed a git"
[ "$(task_status K-L1-001 retry_count)" = 0 ] || fail "killedgit: the killed git was charged"
grep '"event":"task_reassigned"' "$PROJ/.zerg/monitor.jsonl" | grep -q 'killed by signal 9' ||
    fail "killedgit: the requeue does not say git was killed"
pass "a git killed under the worker is a crash: not charged, the retry lands"

# ---- stale locks a killed git left in a slot: the next attempt and
# cleanup remove them
new_project reflock
git_repo
config_append "  retry_attempts: 0"
echo '{"feature": "f", "tasks": [{"id": "R-L1-001", "title": "r", "level": 1, "command": "echo r > r.txt"}]}' | graph
zerg rush --workers 1 > "$PROJ/out.txt" 2>&1 || fail "reflock: first rush exited $?"
admin=$(dirname "$(G -C "$PROJ/.zerg-worktrees/f/worker-0" rev-parse --absolute-git-dir)")/worker-0
: > "$PROJ/.git/refs/heads/zerg/f/worker-0.lock"
: > "$admin/HEAD.lock"
zerg rush --fresh --workers 1 > "$PROJ/out2.txt" 2>&1 ||
    fail "reflock: a stale ref lock failed the next run: $(cat "$PROJ/out2.txt")"
[ ! -e "$PROJ/.git/refs/heads/zerg/f/worker-0.lock" ] || fail "reflock: the ref lock stayed"
[ ! -e "$admin/HEAD.lock" ] || fail "reflock: HEAD.lock stayed"
: > "$PROJ/.git/refs/heads/zerg/f/worker-0.lock"
zerg cleanup > "$PROJ/cl.txt" 2>&1 || fail "reflock: cleanup exited $? on a stale ref lock: $(cat "$PROJ/cl.txt")"
[ ! -e "$PROJ/.git/refs/heads/zerg/f/worker-0.lock" ] || fail "reflock: cleanup left the ref lock"
pass "stale HEAD and branch ref locks of a dead attempt are removed by the next attempt and by cleanup"
echo "$TESTS_PASSED passed, 0 failed"
