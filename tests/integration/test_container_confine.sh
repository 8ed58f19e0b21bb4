#!/usr/bin/env bash
# DESIGN §19: nothing a container writes can change the host repository's
# config, hooks or refs, or choose a mount.  With the real runtime,
# $ZC_RUNTIME = podman or docker (never skipped):
#   1. a task plants core.fsmonitor and a hook in the repository it sees,
#      appends to the host's .git/config by its path, moves `main` to an
#      empty commit and writes into the host's objects: the host's config,
#      hooks and main are as they were, the user's own `git status` runs
#      nothing, and the rush still lands every task (exit 0);
#   2. the agent's git status / diff / log work inside the container, on
#      the history of earlier levels;
#   3. a task that turns /workspace/.git into a file naming a host
#      directory (the old way to choose a mount) gets a repaired slot, the
#      next container mounts only what the host chose, the work lands;
#   4. each commit is kept as a bundle beside the attempt's log, and
#      `zerg cleanup` saves a slot's leftovers as a patch before removing it;
#   5. without worktrees (rush.isolation: none) the project's .git is
#      read-only in the container: git log works, git config fails.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-container.sh"
zc_setup

MARK="$TEST_ROOT/fsmonitor-ran"

# ---- 1 and 2: planted config, hooks, refs; git inside ----------------
new_project confine
zc_config "$PROJ"
git_repo
main_before=$(G rev-parse main)
config_before=$(cat "$PROJ/.git/config")
hooks_before=$(ls -A "$PROJ/.git/hooks" 2>/dev/null | sort | tr '\n' ' ')
# The planted commands name host paths, so they would run on the host if
# the host's git ever read them (fsmonitor runs through the shell).
cat > "$PROJ/plant.sh" <<SH
set -u
git config core.fsmonitor "touch $MARK; false"
mkdir -p .git/hooks
printf '#!/bin/sh\ntouch $MARK\n' > .git/hooks/post-checkout
chmod +x .git/hooks/post-checkout
host=\$(dirname "\$(cat .git/objects/info/alternates)")
echo "host git dir \$host"
printf '[core]\n\tfsmonitor = touch $MARK; false\n' >> "\$host/config" 2>/dev/null && echo WROTE-HOST-CONFIG
mkdir -p "\$host/hooks" 2>/dev/null && printf '#!/bin/sh\ntouch $MARK\n' > "\$host/hooks/post-checkout" 2>/dev/null && echo WROTE-HOST-HOOK
if touch "\$host/objects/planted" 2>/dev/null; then echo WROTE-HOST-OBJECTS; fi
empty=\$(git -c user.name=a -c user.email=a@b commit-tree -m empty "\$(git mktree </dev/null)")
git update-ref refs/heads/main "\$empty"
git --git-dir="\$host" update-ref refs/heads/main "\$empty" 2>/dev/null && echo MOVED-HOST-MAIN
echo planted > planted.txt
SH
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "P-L1-001", "title": "plant", "level": 1, "command": "sh plant.sh"},
 {"id": "P-L2-001", "title": "agent git", "level": 2, "dependencies": ["P-L1-001"],
  "command": "echo more >> planted.txt && git status --short | grep -q planted.txt && git diff --stat | grep -q planted.txt && git log --format=%s -1 | grep -q plant && echo ok > git-ok.txt"}
]}
JSON
G add plant.sh && G commit -qm "plant script"
main_before=$(G rev-parse main)
zerg rush --mode container --workers 1 > "$PROJ/out.txt" 2>&1 ||
    zc_fail "rush exited $?: $(cat "$PROJ/out.txt")"
[ "$(G rev-parse main)" = "$main_before" ] || zc_fail "a task moved the host's main"
[ "$(cat "$PROJ/.git/config")" = "$config_before" ] ||
    zc_fail "the host's .git/config changed: $(cat "$PROJ/.git/config")"
[ "$(ls -A "$PROJ/.git/hooks" 2>/dev/null | sort | tr '\n' ' ')" = "$hooks_before" ] ||
    zc_fail "a hook appeared in the host's .git/hooks"
[ ! -e "$PROJ/.git/objects/planted" ] || zc_fail "a task wrote into the host's objects"
# The user's own git on the host, after the run.
G status --short > /dev/null
G checkout -q -b look zerg/f/integration && G checkout -q main
[ ! -e "$MARK" ] || zc_fail "a planted fsmonitor or hook ran on the host"
log=$(cat "$PROJ/.zerg/logs/f/tasks/P-L1-001/"*.log 2>/dev/null)
# What the container wrote at the host git dir's path stayed in the
# container (checked above on the host); the objects are read-only there.
! grep -q 'WROTE-HOST-OBJECTS\|MOVED-HOST' <<<"$log" || zc_fail "the container wrote the host repository: $log"
[ "$(G show zerg/f/integration:git-ok.txt)" = ok ] ||
    zc_fail "git status/diff/log did not work inside the container"
[ "$(G show zerg/f/integration:planted.txt | tr '\n' ' ')" = "planted more " ] ||
    zc_fail "the planting task's work did not land"
pass "a container cannot write the host's config, hooks, objects or main; git works inside [$ZC_RUNTIME]"

zerg status > "$PROJ/status.txt" 2>&1 || true
grep -Eq 'worker 0  .*/worker-0  [0-9a-f]{12}' "$PROJ/status.txt" ||
    zc_fail "zerg status does not list the container slot and its head: $(cat "$PROJ/status.txt")"
pass "zerg status lists a container slot with its head, read from its files [$ZC_RUNTIME]"

ls "$PROJ/.zerg/logs/f/tasks/P-L1-001/attempt-1.bundle" > /dev/null 2>&1 ||
    zc_fail "no bundle kept for P-L1-001's commit"
G bundle verify -q "$PROJ/.zerg/logs/f/tasks/P-L1-001/attempt-1.bundle" 2>/dev/null ||
    zc_fail "the kept bundle does not verify against the host repository"
pass "each commit is kept as a bundle beside the attempt's log [$ZC_RUNTIME]"

# ---- 3: /workspace/.git turned into a file naming a host directory ---
new_project gitfile
zc_config "$PROJ"
git_repo
mkdir -p "$TEST_ROOT/elsewhere"
graph <<JSON
{"feature": "f", "tasks": [
 {"id": "G-L1-001", "title": "gitfile", "level": 1,
  "command": "echo one > one.txt && git add one.txt && rm -rf .git && echo 'gitdir: $TEST_ROOT/elsewhere' > .git && exit 1"},
 {"id": "G-L1-002", "title": "after", "level": 1,
  "command": "test -d .git && echo two > two.txt"}
]}
JSON
config_append "  retry_attempts: 0"
zerg rush --mode container --workers 1 > "$PROJ/out.txt" 2>&1 || true  # G-L1-001 fails
[ "$(G show zerg/f/integration:two.txt 2>/dev/null)" = two ] ||
    zc_fail "the slot was not repaired for the next task: $(cat "$PROJ/out.txt")"
has_event worktree_repaired || zc_fail "no worktree_repaired for a .git turned into a file"
grep -q "gitdir: $TEST_ROOT/elsewhere" "$PROJ"/.zerg-worktrees/f/worker-0/.git/replaced-* 2>/dev/null ||
    zc_fail "the planted .git was not kept in the remade repository"
grep -q '^+one' "$PROJ"/.zerg/logs/f/worktrees/*.patch 2>/dev/null ||
    zc_fail "the failed attempt's files were not saved as a patch"
! grep -q '^deleted file' "$PROJ"/.zerg/logs/f/worktrees/*.patch 2>/dev/null ||
    zc_fail "a saved patch deletes the base's files (an empty slot taken for leftovers)"
[ -z "$(ls -A "$TEST_ROOT/elsewhere")" ] || zc_fail "something was written to the planted git dir"
pass "a .git turned into a file is moved aside and remade; it chooses no mount [$ZC_RUNTIME]"

# ---- 4b: zerg cleanup saves a container slot's leftovers, then removes it
new_project clean
zc_config "$PROJ"
git_repo
config_append "  retry_attempts: 0"
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "L-L1-001", "title": "leaves work", "level": 1,
  "command": "echo unfinished > left.txt && exit 3"}
]}
JSON
zerg rush --mode container --workers 1 > "$PROJ/out.txt" 2>&1 || true
[ -e "$PROJ/.zerg-worktrees/f/worker-0/left.txt" ] || zc_fail "the failed attempt's file is not in its slot"
zerg cleanup > "$PROJ/cleanup.txt" 2>&1 || zc_fail "cleanup exited $?: $(cat "$PROJ/cleanup.txt")"
[ ! -e "$PROJ/.zerg-worktrees/f/worker-0" ] || zc_fail "cleanup left the container slot: $(cat "$PROJ/cleanup.txt")"
grep -q '^+unfinished' "$PROJ/.zerg/logs/f/tasks/L-L1-001/attempt-1.patch" 2>/dev/null ||
    zc_fail "cleanup did not save the slot's leftovers as the attempt's patch: $(cat "$PROJ/cleanup.txt")"
pass "zerg cleanup saves a container slot's leftovers as a patch, then removes it [$ZC_RUNTIME]"

# ---- 5: isolation none: .git read-only ---------------------------------
new_project none
zc_config "$PROJ"
git_repo
echo 'rush: {isolation: none}' >> "$PROJ/.zerg/config.yaml"
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "N-L1-001", "title": "git ro", "level": 1,
  "command": "git log --format=%s -1 > seen.txt && if git config core.fsmonitor x 2>/dev/null; then echo WROTE > wrote.txt; fi; true"}
]}
JSON
config_before=$(cat "$PROJ/.git/config")
zerg rush --mode container --workers 1 > "$PROJ/out.txt" 2>&1 ||
    zc_fail "rush (isolation none) exited $?: $(cat "$PROJ/out.txt")"
[ -s "$PROJ/seen.txt" ] || zc_fail "git log did not work with a read-only .git"
[ ! -e "$PROJ/wrote.txt" ] || zc_fail "git config wrote the host's .git/config"
[ "$(cat "$PROJ/.git/config")" = "$config_before" ] || zc_fail "the host's .git/config changed"
pass "without worktrees the project's .git is read-only in the container [$ZC_RUNTIME]"

zc_assert_no_containers "$PROJ" f
echo "$TESTS_PASSED passed, 0 failed"
