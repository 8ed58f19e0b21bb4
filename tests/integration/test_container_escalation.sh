#!/usr/bin/env bash
# A task in a worker container cannot change how zerg runs, with the real
# runtime ($ZC_RUNTIME = podman or docker; never skipped):
#   - writes to .zerg/config.yaml, .zerg/policies/*.lua, new files in
#     .zerg/ and the task graph fail inside (read-only file system) and the
#     host's files stay as they were, while the project, the task's log, the
#     run directory and the monitor log stay writable;
#   - container.run_args with --privileged makes the next rush exit 2
#     before anything runs, naming the argument and the opt-in;
#   - with ZERG_ALLOW_RUN_ARGS=--privileged the rush runs and logs the
#     container_run_args_allowed warning.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-container.sh"
zc_setup

# --- a task tries to rewrite zerg's control files ---
new_project esc
zc_config "$PROJ"
mkdir -p "$PROJ/.zerg/policies"
cp "$ZERG_SOURCE_DIR/policies/retry.lua" "$PROJ/.zerg/policies/retry.lua"
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "E-L1-001", "level": 1,
  "command": "for f in .zerg/config.yaml .zerg/policies/retry.lua .zerg/policies/respawn.lua .gsd/specs/f/task-graph.json .gsd/.current-feature .zerg/state/f.json; do if { echo 'container: {run_args: [--privileged]}' >> $f; } 2>> denied.txt; then echo $f >> wrote.txt; fi; done; rm -f .zerg/config.yaml 2>> denied.txt; mv .zerg/policies .zerg/p2 2>> denied.txt; ln -s /tmp .zerg/link 2>> denied.txt; echo mine > mine.txt; echo task-line >> .zerg/monitor.log; ls .zerg/state/f > state-ls.txt"}
]}
JSON
sums() {
    (cd "$PROJ" && sha256sum .zerg/config.yaml .zerg/policies/retry.lua \
        .gsd/specs/f/task-graph.json .gsd/.current-feature)
}
before=$(sums)
zerg rush --mode container --workers 1 > "$PROJ/out.txt" 2>&1 ||
    fail "rush exited $?: $(cat "$PROJ/out.txt")"
[ ! -e "$PROJ/wrote.txt" ] || fail "a task wrote zerg's control files: $(cat "$PROJ/wrote.txt")"
[ "$(grep -c 'Read-only file system' "$PROJ/denied.txt")" -eq 9 ] ||
    fail "the writes did not fail with 'Read-only file system': $(cat "$PROJ/denied.txt")"
[ "$(sums)" = "$before" ] || fail "control files changed on the host"
[ ! -e "$PROJ/.zerg/policies/respawn.lua" ] && [ ! -e "$PROJ/.zerg/p2" ] &&
    [ ! -L "$PROJ/.zerg/link" ] || fail "a task created or moved files in .zerg/"
[ "$(cat "$PROJ/mine.txt")" = mine ] || fail "the project is not writable for tasks"
grep -q '^task-line$' "$PROJ/.zerg/monitor.log" || fail ".zerg/monitor.log is not writable inside"
grep -q 'slot-0' "$PROJ/state-ls.txt" || fail "the run directory is not visible inside: $(cat "$PROJ/state-ls.txt")"
ls "$PROJ"/.zerg/logs/f/tasks/E-L1-001/attempt-*.log > /dev/null 2>&1 || fail "no task log"
[ "$(task_status E-L1-001)" = complete ] || fail "the task did not complete"
zc_assert_no_containers "$PROJ" f
pass "$ZC_RUNTIME: .zerg/ and .gsd/ are read-only inside; run dir, logs and monitor log writable"

# --- a risky run_arg needs the user's opt-in ---
new_project priv
zc_config "$PROJ" 'run_args: ["--privileged"]'
gen_graph 1 1 "echo ran > ran.txt"
rc=0
zerg rush --mode container --workers 1 > "$PROJ/out.txt" 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "--privileged in run_args: expected exit 2, got $rc: $(cat "$PROJ/out.txt")"
grep -q "'--privileged'" "$PROJ/out.txt" || fail "the message does not name the argument: $(cat "$PROJ/out.txt")"
grep -q 'ZERG_ALLOW_RUN_ARGS="--privileged"' "$PROJ/out.txt" || fail "the message does not say how to allow it"
[ ! -e "$PROJ/ran.txt" ] && [ ! -e "$PROJ/.zerg/state/f.json" ] || fail "something ran or was written before the refusal"
[ -z "$(zc_containers "$PROJ" f)" ] || fail "a container was created"
# --mode auto would use containers too: refused the same way.
rc=0
zerg rush --mode auto --workers 1 > "$PROJ/out.txt" 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "--mode auto with --privileged: expected exit 2, got $rc"
pass "$ZC_RUNTIME: run_args --privileged refused with exit 2 before anything runs"

# Allowed: the rush runs, and says at its start what it let through.
new_project allowed
zc_config "$PROJ" 'run_args: ["--cap-add=CHOWN", "--security-opt", "no-new-privileges"]'
gen_graph 1 1 "echo ran > ran.txt"
rc=0
zerg rush --mode container --workers 1 > "$PROJ/out.txt" 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "--cap-add in run_args: expected exit 2, got $rc"
grep -q "'--cap-add=CHOWN'" "$PROJ/out.txt" || fail "the message does not name --cap-add=CHOWN"
rc=0
ZERG_ALLOW_RUN_ARGS="--cap-add,--security-opt" zerg rush --mode container --workers 1 \
    > "$PROJ/out.txt" 2>&1 || rc=$?
[ $rc -eq 0 ] || fail "allowed run_args: rush exited $rc: $(cat "$PROJ/out.txt")"
[ "$(cat "$PROJ/ran.txt")" = ran ] || fail "the task did not run"
grep '"event":"container_run_args_allowed"' "$PROJ/.zerg/monitor.jsonl" | grep -q '"level":"WARN"' ||
    fail "no container_run_args_allowed warning"
grep -q "passes --cap-add --security-opt, allowed by ZERG_ALLOW_RUN_ARGS" "$PROJ/.zerg/monitor.log" ||
    fail "the warning does not name the flags"
grep -q "zerg rush: warning: container.run_args passes --cap-add --security-opt" "$PROJ/out.txt" ||
    fail "no warning on the terminal: $(head -3 "$PROJ/out.txt")"
zc_assert_no_containers "$PROJ" f

# --privileged itself, allowed, passes the gate with the warning.  (Docker
# cannot start a privileged container on hosts whose own capability set is
# cut down, as CI containers are; the rush then fails at spawn, exit 1.)
PROJ=$TEST_ROOT/priv
rm -rf "$PROJ/.zerg/state" "$PROJ/.zerg/monitor."*
rc=0
ZERG_ALLOW_RUN_ARGS="--privileged" zerg rush --mode container --workers 1 \
    > "$PROJ/out.txt" 2>&1 || rc=$?
[ $rc -ne 2 ] || fail "allowed --privileged is still refused: $(cat "$PROJ/out.txt")"
grep -q "passes --privileged, allowed by ZERG_ALLOW_RUN_ARGS" "$PROJ/.zerg/monitor.log" ||
    fail "no warning for --privileged"
[ "$ZC_RUNTIME" = docker ] || [ $rc -eq 0 ] || fail "privileged rush on podman exited $rc"
zc_assert_no_containers "$PROJ" f
pass "$ZC_RUNTIME: ZERG_ALLOW_RUN_ARGS lets the named flags through, with a logged warning"
echo "$TESTS_PASSED passed, 0 failed"
