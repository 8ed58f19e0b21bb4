#!/usr/bin/env bash
# A worktree path is never followed through a link (DESIGN §18): a task
# that replaces its own worktree directory, or the feature's directory
# above it, by a symbolic link leading to the user's main checkout must
# not make zerg reset or commit there.  The user's branch, HEAD and
# uncommitted edit in the main worktree stay exactly as they were, and
# the refusal says why.
source "$(dirname "$0")/lib.sh"

M="$TEST_ROOT/marks"
mkdir -p "$M"

for kind in self parent; do
    new_project "$kind"
    git_repo
    echo "the user's own edit" >> "$PROJ/README"
    case $kind in
        # The task's cwd is .zerg-worktrees/f/worker-0.
        self) trick='cd .. && mv worker-0 w0.moved && ln -s "$ZERG_PROJECT" worker-0' ;;
        parent) trick='cd ../.. && mv f f.moved && mkdir fake && ln -s "$ZERG_PROJECT" fake/worker-0 && ln -s "$PWD/fake" f' ;;
    esac
    python3 -c 'import json, sys
print(json.dumps({"feature": "f", "tasks": [{"id": "L-L1-001", "title": "link",
    "level": 1, "command": sys.argv[1]}]}))' \
        "if [ ! -e $M/$kind ]; then touch $M/$kind; echo task > task.txt; $trick; fi; true" |
        graph
    head_before=$(G rev-parse HEAD)
    status_before=$(G status --porcelain | grep -v '^?? ' || true)
    diff_before=$(G diff)
    timeout 120 "$ZERG" -C "$PROJ" rush --workers 1 > "$PROJ/out.txt" 2>&1 || true
    [ -e "$M/$kind" ] || fail "$kind: the task never ran: $(cat "$PROJ/out.txt")"
    [ "$(G rev-parse HEAD)" = "$head_before" ] || fail "$kind: the user's HEAD moved: $(G log --oneline -3)"
    [ "$(G symbolic-ref HEAD)" = refs/heads/main ] || fail "$kind: the user's checkout left main"
    [ "$(G diff)" = "$diff_before" ] || fail "$kind: the user's uncommitted edit changed: $(G diff)"
    [ "$(G status --porcelain | grep -v '^?? ' || true)" = "$status_before" ] || fail "$kind: the user's index changed: $(G status --porcelain)"
    if G log --format=%B main | grep -q '^Task-ID:'; then fail "$kind: a task commit landed on the user's branch"; fi
    grep -qE 'symbolic link|not the registered worktree' "$PROJ/.zerg/monitor.log" ||
        fail "$kind: no message says why the worktree was refused"
    pass "$kind: a worktree path turned into a link is refused; the user's branch, HEAD and edit are untouched"
    # The next rush removes the link (never what it leads to) and makes
    # the slot again.
    zerg rush --workers 1 --fresh > "$PROJ/out2.txt" 2>&1 || fail "$kind: the rush after the link exited $?: $(cat "$PROJ/out2.txt")"
    [ ! -L "$PROJ/.zerg-worktrees/f/worker-0" ] && [ ! -L "$PROJ/.zerg-worktrees/f" ] || fail "$kind: the link is still there"
    [ -f "$PROJ/.zerg-worktrees/f/worker-0/.git" ] || fail "$kind: the slot was not made again"
    [ "$(G rev-parse HEAD)" = "$head_before" ] && [ "$(G diff)" = "$diff_before" ] || fail "$kind: the user's checkout changed on the next rush"
    pass "$kind: the next rush replaces the link by a new worktree"
done
echo "$TESTS_PASSED passed"
