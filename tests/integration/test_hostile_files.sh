#!/usr/bin/env bash
# test_hostile_files.sh - files planted where zerg reads or writes.
#
# Task code can leave anything in the project: a FIFO, whose plain open(2)
# waits for a writer forever; a device; a symbolic link under .zerg/ that
# would send zerg's writes out of the project; a file where a directory is
# due.  Every case runs zerg under `timeout 20`, so a hang fails loudly
# instead of stalling the suite, and checks the exit code and the words of
# the message.  The last cases also need the CLI to create .zerg/logs and
# .zerg/state through zerg_fsio_mkdirs_under and `zerg logs` to open the
# monitor log through zerg_fsio_open_read: until then they fail, saying so.
#
# Environment: ZERG (the binary, required).
. "$(dirname "$0")/lib.sh"
export NO_COLOR=1
unset ZERG_FEATURE

OUT=$TEST_ROOT/out
ERR=$TEST_ROOT/err

# run_z ARGS...: zerg -C $PROJ ARGS under timeout 20; sets RC.
run_z() {
    RC=0
    timeout 20 "$ZERG" -C "$PROJ" "$@" > "$OUT" 2> "$ERR" || RC=$?
    [ "$RC" -ne 124 ] || fail "zerg $* hung (killed after 20 s)"
}

# refused WANT_RC TEXT ARGS...: zerg ARGS exits WANT_RC and says TEXT.
refused() {
    local want=$1 text=$2
    shift 2
    run_z "$@"
    if [ "$RC" -ne "$want" ] || ! grep -qF -- "$text" "$ERR"; then
        cat "$ERR" >&2
        fail "zerg $*: exit $RC (want $want), stderr must say '$text'"
    fi
}

one_task() {
    graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "A-L1-001", "title": "a", "level": 1, "dependencies": [],
  "command": "true"}]}
JSON
}

# ---- user inputs: FIFOs refused, links must stay in the project -------

new_project fifo-config
one_task
rm "$PROJ/.zerg/config.yaml"
mkfifo "$PROJ/.zerg/config.yaml"
for cmd in validate "rush --dry-run"; do
    # shellcheck disable=SC2086
    refused 2 "config.yaml is not a regular file (a FIFO)" $cmd
done
pass "a FIFO as .zerg/config.yaml: validate and rush --dry-run exit 2"

new_project fifo-graph
mkfifo "$PROJ/.gsd/specs/f/task-graph.json"
for cmd in validate "rush --dry-run"; do
    # shellcheck disable=SC2086
    refused 2 "task-graph.json is not a regular file (a FIFO)" $cmd
done
pass "a FIFO as task-graph.json: validate and rush --dry-run exit 2"

new_project fifo-feature
one_task
rm "$PROJ/.gsd/.current-feature"
mkfifo "$PROJ/.gsd/.current-feature"
for cmd in validate "rush --dry-run" status; do
    # shellcheck disable=SC2086
    refused 2 "not a regular file" $cmd
done
grep -qF ".current-feature" "$ERR" || fail "the message does not name .current-feature"
pass "a FIFO as .gsd/.current-feature: exit 2, not a hang"

new_project fifo-policy
one_task
mkdir -p "$PROJ/.zerg/policies"
mkfifo "$PROJ/.zerg/policies/backoff.lua"
refused 2 "backoff.lua is not a regular file (a FIFO)" validate
pass "a FIFO as a policy override: validate exit 2 naming it"

new_project link-graph
one_task
mv "$PROJ/.gsd/specs/f/task-graph.json" "$TEST_ROOT/outside-graph.json"
ln -s "$TEST_ROOT/outside-graph.json" "$PROJ/.gsd/specs/f/task-graph.json"
refused 2 "outside the project" validate
grep -qF "task-graph.json" "$ERR" || fail "the message does not name task-graph.json"
# A link that stays inside the project is fine.
rm "$PROJ/.gsd/specs/f/task-graph.json"
mv "$TEST_ROOT/outside-graph.json" "$PROJ/graph.json"
ln -s ../../../graph.json "$PROJ/.gsd/specs/f/task-graph.json"
run_z validate
[ "$RC" -eq 0 ] || { cat "$ERR" >&2; fail "a link inside the project was refused"; }
rm "$PROJ/.zerg/config.yaml"
ln -s /etc/passwd "$PROJ/.zerg/config.yaml"
refused 2 "outside the project" rush --dry-run
grep -qF "config.yaml" "$ERR" || fail "the message does not name config.yaml"
pass "user inputs: a link out of the project is refused, one inside is read"

# ---- zerg's own files under .zerg/ ------------------------------------

new_project link-log
one_task
OUTSIDE=$TEST_ROOT/outside
ln -s "$OUTSIDE" "$PROJ/.zerg/monitor.log"
refused 1 "monitor.log is a symbolic link" rush --workers 1
[ ! -e "$OUTSIDE" ] || fail "zerg wrote through the link to $OUTSIDE"
echo "untouched" > "$OUTSIDE"
rm "$PROJ/.zerg/monitor.log"
ln -s "$OUTSIDE" "$PROJ/.zerg/monitor.jsonl"
refused 1 "monitor.jsonl is a symbolic link" rush --workers 1
[ "$(cat "$OUTSIDE")" = untouched ] || fail "zerg wrote to $OUTSIDE"
pass "a link as .zerg/monitor.log or monitor.jsonl: refused, nothing outside"

# FIFOs left in the run directory (heartbeats, results, retry requests, the
# lock, the state file) must neither hang `zerg status` nor a resume.
new_project fifo-run
one_task
run_z rush --workers 1
[ "$RC" -eq 0 ] || { cat "$ERR" >&2; fail "the first rush failed ($RC)"; }
RUN=$PROJ/.zerg/state/f
rm -f "$RUN/heartbeat-0.json"
mkfifo "$RUN/heartbeat-0.json" "$RUN/heartbeat-7.json" \
    "$RUN/result-0-A-L1-001.json" "$RUN/retry-1.json"
run_z status
[ "$RC" -ne 124 ] || fail "status hung"
run_z rush --workers 1 --resume
[ "$RC" -eq 0 ] || { cat "$ERR" >&2; fail "the resume failed ($RC)"; }
grep -q "Nothing to do" "$OUT" || fail "a resume of a complete run did not say it had nothing to do"
# As after a kill -9 mid-task: the resume replays the run directory.
python3 - "$PROJ/.zerg/state/f.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["status"] = "running"
d["tasks"]["A-L1-001"]["status"] = "in_progress"
json.dump(d, open(sys.argv[1], "w"))
PY
run_z rush --workers 1 --resume
[ "$RC" -eq 0 ] || { cat "$ERR" >&2; fail "the resume failed ($RC)"; }
grep -q "not a regular file" "$PROJ/.zerg/monitor.log" ||
    fail "the FIFO result was not logged as 'not a regular file'"
pass "FIFOs in the run directory: status and --resume do not hang"

mv "$PROJ/.zerg/state/f.lock" "$TEST_ROOT/lock.bak"
mkfifo "$PROJ/.zerg/state/f.lock"
run_z status
[ "$RC" -ne 124 ] || fail "status hung on a FIFO lock"
refused 1 "f.lock: it is not a regular file (a FIFO)" rush --workers 1 --fresh
rm "$PROJ/.zerg/state/f.lock"
mv "$PROJ/.zerg/state/f.json" "$TEST_ROOT/state.bak"
mkfifo "$PROJ/.zerg/state/f.json"
refused 1 "f.json is not a regular file (a FIFO)" status
pass "a FIFO as the lock or the state file: refused, not waited on"

# ---- cases that need the CLI to use the fsio openers ------------------

echo "# the cases below need src/cli (logs.c, rush.c) to use the" \
    "zerg_fsio openers; they fail until it does"

new_project fifo-jsonl
one_task
mkfifo "$PROJ/.zerg/monitor.jsonl"
refused 2 "monitor.jsonl is not a regular file (a FIFO)" logs
pass "a FIFO as .zerg/monitor.jsonl: zerg logs exits 2"

new_project logs-file
one_task
echo "not a directory" > "$PROJ/.zerg/logs"
refused 1 "Not a directory" rush --workers 1
grep -qF ".zerg/logs" "$ERR" || fail "the message does not name .zerg/logs"
pass "a file as .zerg/logs: rush names it and says Not a directory"

new_project link-state
one_task
mkdir "$TEST_ROOT/elsewhere"
ln -s "$TEST_ROOT/elsewhere" "$PROJ/.zerg/state"
refused 1 "symbolic link" rush --workers 1
[ -z "$(ls -A "$TEST_ROOT/elsewhere")" ] || fail "zerg wrote into the linked state dir"
pass "a link as .zerg/state: refused, nothing written through it"

# Root ignores permission bits, so a read-only bind mount (in a private
# mount namespace) is the only way to make .zerg read-only here.
new_project readonly
one_task
if ! command -v unshare > /dev/null ||
    ! unshare -m sh -c "mount --bind -o ro '$PROJ/.zerg' '$PROJ/.zerg'" 2> /dev/null; then
    fail "read-only .zerg: 'unshare -m' with a read-only bind mount is not" \
        "available here (util-linux, run as root); this case cannot be checked"
else
    RC=0
    timeout 20 unshare -m sh -c "mount --bind -o ro '$PROJ/.zerg' '$PROJ/.zerg' &&
        exec '$ZERG' -C '$PROJ' rush --workers 1" > "$OUT" 2> "$ERR" || RC=$?
    [ "$RC" -ne 124 ] || fail "rush hung on a read-only .zerg"
    if [ "$RC" -eq 0 ] || ! grep -qE "Read-only file system|Permission denied" "$ERR" ||
        grep -qF "No such file" "$ERR"; then
        cat "$ERR" >&2
        fail "read-only .zerg: exit $RC; the message must name the real error"
    fi
    pass "a read-only .zerg: the message says Read-only file system"
fi

echo "test_hostile_files: $TESTS_PASSED passed"
