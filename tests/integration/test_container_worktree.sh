#!/usr/bin/env bash
# Worktree isolation in container mode with the real runtime, $ZC_RUNTIME
# = podman or docker (never skipped): the worker's worktree is /workspace,
# git works inside the container (the worker resets and commits there, a
# task may commit on its own), the spec directory stays read-only (FR-7),
# and every task's work lands once on zerg/f/integration while the user's
# branch and tree stay as they were.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-container.sh"
zc_setup


new_project wt
zc_config "$PROJ"
git_repo
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "W-L1-001", "title": "one", "level": 1,
  "command": "grep -q W-L1-001 .gsd/specs/f/task-graph.json && echo one > one.txt"},
 {"id": "W-L1-002", "title": "two", "level": 1,
  "command": "if touch .gsd/specs/f/x 2>/dev/null; then exit 1; fi; echo two > two.txt && git add two.txt && git -c user.name=a -c user.email=a@b commit -qm self"},
 {"id": "W-L2-001", "title": "both", "level": 2, "dependencies": ["W-L1-001", "W-L1-002"],
  "command": "cat one.txt two.txt > both.txt"}
]}
JSON
head_before=$(G rev-parse HEAD)
zerg rush --mode container --workers 2 > "$PROJ/out.txt" 2>&1 ||
    zc_fail "container worktree rush exited $?: $(cat "$PROJ/out.txt")"
[ "$(G rev-parse HEAD)" = "$head_before" ] || zc_fail "the user's branch moved"
[ ! -e "$PROJ/one.txt" ] || zc_fail "a task wrote into the user's tree"
[ "$(G show zerg/f/integration:both.txt | tr '\n' ' ')" = "one two " ] ||
    zc_fail "level 2 did not see level 1 on the integration branch"
n=$(G log --format='%(trailers:key=Task-ID,valueonly,separator=%x2C)' main..zerg/f/integration | sed '/^$/d' | sort | uniq | wc -l)
[ "$n" = 3 ] || zc_fail "expected 3 task commits, got $n"
if G log --name-only --format= zerg/f/integration | grep -q '^\.zerg'; then
    zc_fail "a .zerg file was committed"
fi
grep -q '"event":"task_commit"' "$PROJ/.zerg/monitor.jsonl" || zc_fail "no task_commit from inside a container"
zc_assert_no_containers "$PROJ" f
pass "container mode with worktrees: git works inside, FR-7 holds, each task lands once [$ZC_RUNTIME]"

echo "$TESTS_PASSED passed, 0 failed"
