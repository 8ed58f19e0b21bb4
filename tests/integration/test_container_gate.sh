#!/usr/bin/env bash
# DESIGN §19: no code a container task wrote runs on the host.  In
# container mode a quality gate runs what the tasks wrote (here a check
# script a task committed, as a task-written Makefile would be for `make
# test`) in a container of the workers' image and runtime, $ZC_RUNTIME =
# podman or docker (never skipped): the script's write to a host path
# never reaches the host, the gate sees its worktree at /workspace, reads
# git history, and cannot write the repository.  gates.on_host: true opts
# out, and then the same script does run on the host, which is what the
# first case guards against.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-container.sh"
zc_setup

MARK="$TEST_ROOT/host-marker"

gate_project() {
    new_project "$1"
    cat >> "$PROJ/.zerg/config.yaml" <<YAML
${2:-}
quality_gates:
  - name: check
    command: "sh check.sh"
YAML
    zc_config "$PROJ"
    git_repo
    # The task writes the script the gate runs.  It reports where it ran
    # (/workspace only in a container) and tries the host path and the
    # repository's refs.
    cat > "$PROJ/check.tmpl" <<SH
touch $MARK
echo "pwd=\$(pwd)"
git log --format=%s -1 2>/dev/null && echo GIT-READ
if git update-ref refs/heads/gate-was-here HEAD 2>/dev/null; then echo GIT-WROTE; fi
exit 0
SH
    python3 - "$PROJ" <<'PY'
import json, sys
proj = sys.argv[1]
script = open(proj + "/check.tmpl").read()
cmd = "cat > check.sh <<'EOF'\n" + script + "EOF"
json.dump({"feature": "f", "tasks": [
    {"id": "C-L1-001", "title": "write the check", "level": 1, "command": cmd,
     "files": {"create": ["check.sh"]}}]},
    open(proj + "/.gsd/specs/f/task-graph.json", "w"))
PY
    rm "$PROJ/check.tmpl"
}

gate_log() { cat "$PROJ/.zerg/logs/f/gates/level-1-check.log"; }

rm -f "$MARK"
gate_project contained
zerg rush --mode container --workers 1 > "$PROJ/out.txt" 2>&1 ||
    zc_fail "rush exited $?: $(cat "$PROJ/out.txt")"
has_event gate_pass || zc_fail "the gate did not pass: $(gate_log)"
[ ! -e "$MARK" ] || zc_fail "a task-written gate script wrote on the host"
gate_log | grep -qx 'pwd=/workspace' || zc_fail "the gate did not run in a container at /workspace: $(gate_log)"
gate_log | grep -q GIT-READ || zc_fail "the gate could not read git history: $(gate_log)"
! gate_log | grep -q GIT-WROTE || zc_fail "the gate wrote a ref into the repository"
! G show-ref --verify -q refs/heads/gate-was-here || zc_fail "a ref written by the gate exists"
grep '"event":"gate_start"' "$PROJ/.zerg/monitor.jsonl" | grep -q '"where":"container"' ||
    zc_fail "gate_start does not say it ran in a container"
zc_assert_no_containers "$PROJ" f
pass "a gate runs a task-written script in a container, never on the host [$ZC_RUNTIME]"

rm -f "$MARK"
gate_project on-host "gates:
  on_host: true"
zerg rush --mode container --workers 1 > "$PROJ/out.txt" 2>&1 ||
    zc_fail "rush exited $?: $(cat "$PROJ/out.txt")"
[ -e "$MARK" ] || zc_fail "gates.on_host: true did not run the gate on the host: $(gate_log)"
! gate_log | grep -qx 'pwd=/workspace' || zc_fail "gates.on_host: true still ran in a container"
grep '"event":"gate_start"' "$PROJ/.zerg/monitor.jsonl" | grep -q '"where":"host"' ||
    zc_fail "gate_start does not say it ran on the host"
rm -f "$MARK"
pass "gates.on_host: true runs the gate on the host, as documented (unsafe) [$ZC_RUNTIME]"

echo "$TESTS_PASSED passed, 0 failed"
