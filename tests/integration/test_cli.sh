#!/usr/bin/env bash
# test_cli.sh - the command line through the real binary: help and version,
# "did you mean", feature selection (all four ways, the ambiguous and empty
# cases, bad names), -C, `validate` on a small project, and `status`,
# `logs`, `retry`, `stop` on hand-written state, heartbeat, log and lock
# files (a "rush" here is flock(1) holding the feature's lock).
#
# Environment: ZERG (the binary, required), ZERG_SOURCE_DIR.
set -u

if [ -z "${ZERG:-}" ] || [ ! -x "$ZERG" ]; then
    echo "test_cli.sh: ZERG must name the zerg binary (got '${ZERG:-}')" >&2
    exit 1
fi
for tool in flock setsid timeout cksum; do
    command -v "$tool" >/dev/null || {
        echo "test_cli.sh: needs $tool" >&2
        exit 1
    }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/zerg-cli-XXXXXX")
bg_pids=()
cleanup() {
    for p in "${bg_pids[@]}"; do kill -9 -- "-$p" "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
export NO_COLOR=1
# The graphs below have tasks without `command`: validate's executor
# pre-flight needs a `claude` that answers --version (test_preflight.sh
# tests the pre-flight itself).
mkdir -p "$tmp/bin"
printf '#!/bin/sh\necho "2.1.332 (Claude Code)"\n' >"$tmp/bin/claude"
chmod +x "$tmp/bin/claude"
export PATH="$tmp/bin:$PATH"
unset ZERG_FEATURE

passed=0
failed=0
name=""
out=""
err=""
rc=0

# z ARGS...: runs zerg (30 s cap), keeps stdout, stderr and the exit code.
z() {
    out=$(timeout 30 "$ZERG" "$@" 2>"$tmp/.err")
    rc=$?
    err=$(cat "$tmp/.err")
}

fail() {
    echo "FAIL: $name: $*" >&2
    echo "  exit $rc" >&2
    printf '  stdout: %s\n' "$out" | head -40 >&2
    printf '  stderr: %s\n' "$err" | head -20 >&2
    failed=$((failed + 1))
    name="" # one failure per test
}

t() { name=$1; }
ok() {
    if [ -n "$name" ]; then
        passed=$((passed + 1))
        echo "ok: $name"
    fi
}
want_rc() { [ -z "$name" ] || [ "$rc" = "$1" ] || fail "expected exit $1"; }
want_out() {
    [ -z "$name" ] || printf '%s' "$out" | grep -qF -- "$1" ||
        fail "stdout lacks '$1'"
}
want_err() {
    [ -z "$name" ] || printf '%s' "$err" | grep -qF -- "$1" ||
        fail "stderr lacks '$1'"
}
no_out() {
    [ -z "$name" ] || ! printf '%s' "$out" | grep -qF -- "$1" ||
        fail "stdout has '$1'"
}

# graph FEATURE_DIR: a 4-task, 2-level graph with a same-level dependency
# and two tasks writing the same file.
graph() {
    mkdir -p "$1"
    cat >"$1/task-graph.json" <<'EOF'
{"feature": "demo", "tasks": [
 {"id": "A-L1-001", "title": "First thing", "level": 1, "dependencies": [],
  "files": {"create": ["a.txt"], "modify": [], "read": []},
  "estimate_minutes": 5, "command": "true"},
 {"id": "A-L1-002", "title": "Second thing", "level": 1,
  "dependencies": ["A-L1-001"],
  "files": {"create": [], "modify": ["a.txt"], "read": []},
  "estimate_minutes": 3},
 {"id": "A-L1-003", "title": "Third thing", "level": 1, "dependencies": []},
 {"id": "A-L2-001", "title": "Level two", "level": 2,
  "dependencies": ["A-L1-002", "A-L1-003"], "estimate_minutes": 10}
]}
EOF
}

# state FILE STATUS: a run of the graph above in which A-L1-002 failed.
state() {
    cat >"$1" <<EOF
{"version": 1, "feature": "demo", "run_id": "r1",
 "started_at": "2026-02-03T05:41:55.123Z", "current_level": 2,
 "status": "$2", "error": "1 task failed",
 "tasks": {
  "A-L1-001": {"status": "complete", "level": 1},
  "A-L1-002": {"status": "failed", "level": 1, "retry_count": 3,
               "reason": "verification",
               "error": "verification exited 1\u001b[2J"},
  "A-L1-003": {"status": "complete", "level": 1},
  "A-L2-001": {"status": "blocked", "level": 2, "reason": "blocked"}},
 "workers": {
  "0": {"status": "busy", "pid": 4242, "epoch": 7, "task": "A-L1-003"},
  "1": {"status": "retired", "pid": null, "epoch": 2, "respawn_count": 5}},
 "levels": {"1": {"status": "complete"}, "2": {"status": "complete"}},
 "metrics": {"stale_detections": 2, "task_reassignments": 1,
             "worker_respawns": 6, "spawn_retries": 4, "policy_errors": 1}}
EOF
}

heartbeat() { # DIR SLOT EPOCH
    local ts
    ts=$(date -u +%Y-%m-%dT%H:%M:%S.000Z)
    cat >"$1/heartbeat-$2.json" <<EOF
{"worker_id": $2, "epoch": $3, "seq": 17, "timestamp": "$ts",
 "task_id": "A-L1-003", "attempt": 1, "step": "verification",
 "progress_pct": 80, "pid": 4242, "task_pgid": 0}
EOF
}

# alive PID: running and not a zombie waiting to be reaped.
alive() {
    [ -e "/proc/$1" ] && ! grep -q '^[0-9]* (.*) Z' "/proc/$1/stat" 2>/dev/null
}

# fake_rush LOCKFILE [sh code before the wait]: holds the lock like a rush
# and records its pid; prints that pid.
fake_rush() {
    mkdir -p "$(dirname "$1")"
    : >"$1"
    setsid flock "$1" sh -c "${2:-} echo \$\$ > '$1'; exec sleep 120" \
        >/dev/null 2>&1 &
    bg_pids+=($!)
    for _ in $(seq 100); do
        if [ -s "$1" ]; then
            cat "$1"
            return
        fi
        sleep 0.05
    done
}

proj=$tmp/proj
graph "$proj/.gsd/specs/demo"

# ---- help, version, dispatch ------------------------------------------

t "--version"
z --version
want_rc 0
want_out "zerg 0.1.0"
ok

t "--help lists every command"
z --help
want_rc 0
for c in rush status stop retry logs lua validate; do want_out "  $c "; done
want_out "Exit codes"
ok

t "no command is a usage error"
z
want_rc 2
want_err "usage: zerg"
ok

for c in rush status stop retry logs lua validate; do
    t "$c --help"
    z "$c" --help
    want_rc 0
    want_out "usage: zerg $c"
    want_out "Exit codes"
    ok
done

t "help CMD is CMD --help"
z help retry
want_rc 0
want_out "usage: zerg retry"
ok

t "unknown command suggests the nearest"
z rsuh
want_rc 2
want_err "unknown command 'rsuh'; did you mean 'rush'?"
z stauts
want_err "did you mean 'status'?"
z valid
want_err "did you mean 'validate'?"
z xyzzy
want_rc 2
want_err "unknown command 'xyzzy'"
ok

t "unknown option names the command"
z -C "$proj" status --bogus
want_rc 2
want_err "Try 'zerg status --help'"
z --bogus
want_rc 2
ok

# ---- feature selection --------------------------------------------------

two=$tmp/two
graph "$two/.gsd/specs/alpha"
graph "$two/.gsd/specs/beta"

t "ambiguous feature lists the candidates"
z -C "$two" validate
want_rc 2
want_err "zerg validate: which feature? .gsd/specs/ holds 2: alpha, beta"
want_err "--feature F"
ok

t "--feature before the command"
z -C "$two" --feature beta validate
want_rc 0
want_out "Feature:  beta"
ok

t "--feature after the command, and --feature=F"
z -C "$two" validate --feature alpha
want_out "Feature:  alpha"
z validate -C "$two" --feature=beta
want_rc 0
want_out "Feature:  beta"
ok

t "\$ZERG_FEATURE"
ZERG_FEATURE=alpha z -C "$two" validate
want_rc 0
want_out "Feature:  alpha"
ok

t ".gsd/.current-feature, trimmed"
printf '  beta \n\n' >"$two/.gsd/.current-feature"
z -C "$two" validate
want_rc 0
want_out "Feature:  beta"
ok

t "precedence: --feature, then \$ZERG_FEATURE, then the file"
ZERG_FEATURE=alpha z -C "$two" validate
want_out "Feature:  alpha"
ZERG_FEATURE=alpha z -C "$two" --feature beta validate
want_out "Feature:  beta"
rm "$two/.gsd/.current-feature"
ok

t "the only feature directory"
z -C "$proj" validate
want_rc 0
want_out "Feature:  demo"
ok

t "no feature at all"
mkdir -p "$tmp/empty"
z -C "$tmp/empty" status
want_rc 2
want_err "no feature found"
want_err ".gsd/specs/FEATURE/task-graph.json"
ok

t "bad feature names are refused, not escaped"
z -C "$proj" --feature ../x validate
want_rc 2
want_err 'invalid feature name "../x" (from --feature)'
ZERG_FEATURE='a b' z -C "$proj" status
want_rc 2
want_err 'invalid feature name "a b" (from $ZERG_FEATURE)'
printf -- '-rf\n' >"$tmp/empty/.gsd.tmp"
mkdir -p "$tmp/empty/.gsd" && mv "$tmp/empty/.gsd.tmp" \
    "$tmp/empty/.gsd/.current-feature"
z -C "$tmp/empty" retry --all-failed
want_rc 2
want_err "(from .gsd/.current-feature)"
ok

t "feature named but without a graph"
z -C "$proj" --feature nope validate
want_rc 2
want_err "nope/task-graph.json: no such file"
ok

# ---- -C -----------------------------------------------------------------

t "-C DIR from elsewhere"
out=$(cd / && timeout 30 "$ZERG" -C "$proj" validate 2>&1)
rc=$?
want_rc 0
want_out "Feature:  demo"
z -C "$tmp/does-not-exist" status
want_rc 2
want_err "cannot change to directory $tmp/does-not-exist"
ok

# ---- validate -----------------------------------------------------------

t "validate prints the plan"
printf 'workers:\n  max_concurrent: 2\n  retry_atempts: 1\n' \
    >"$proj/.zerg.yaml.tmp"
mkdir -p "$proj/.zerg" && mv "$proj/.zerg.yaml.tmp" "$proj/.zerg/config.yaml"
z -C "$proj" validate
want_rc 0
want_out "Tasks:    4 in 2 levels"
want_out "Level 1: 3 tasks, up to 2 at once"
want_out "Level 2: 1 task, up to 1 at once"
want_out "after A-L1-002, A-L1-003"
want_out "serialized with A-L1-002"
want_out "Critical path: A-L1-001 -> A-L1-002 -> A-L2-001 (3 tasks, 18 min)"
want_out "level 1: A-L1-002 runs after A-L1-001 (same-level dependency)"
want_out "A-L1-001 and A-L1-002 both write a.txt"
want_out "did you mean 'workers.retry_attempts'"
want_out "OK: demo is valid"
ok

t "validate --json"
z -C "$proj" validate --json
want_rc 0
want_out '"ok":true'
want_out '"critical_path":{"tasks":["A-L1-001","A-L1-002","A-L2-001"]'
want_out '"parallelism":2'
ok

t "validate --check-wiring"
z -C "$proj" validate --check-wiring
want_rc 0
want_out "All modules properly wired"
want_out "OK: demo is valid"
z -C "$proj" validate --check-wiring --json
want_rc 0
want_out '"wiring_problems":0'
want_err "All modules properly wired"
ok

t "validate writes nothing"
[ ! -e "$proj/.zerg/state" ] || fail ".zerg/state was created"
ok

t "validate lists the gates, upstream form included"
cp "$proj/.zerg/config.yaml" "$proj/.zerg/config.keep"
printf 'quality_gates:\n  - name: lint\n    command: ruff check .\n    timeout: 120\n  - name: types\n    command: mypy .\n    required: false\n' >> "$proj/.zerg/config.yaml"
z -C "$proj" validate
want_rc 0
want_out "Gates (after each level, under worktree isolation, on the host):"
want_out "lint             required, 120 s: ruff check ."
want_out "types            optional, 300 s: mypy ."
z -C "$proj" validate --json
want_rc 0
want_out '"gates":[{"name":"lint","command":"ruff check .","required":true,"timeout_seconds":120'
mv "$proj/.zerg/config.keep" "$proj/.zerg/config.yaml"
ok
rm "$proj/.zerg/config.yaml"

# ---- status ----------------------------------------------------------------

sd=$proj/.zerg/state

t "status with no run"
z -C "$proj" status
want_rc 1
want_err "no run recorded for demo yet (run 'zerg rush')"
ok

mkdir -p "$sd"
state "$sd/demo.json" failed
mkdir -p "$sd/demo"
heartbeat "$sd/demo" 0 7

t "status of a failed run"
z -C "$proj" status
want_rc 0
want_out "Feature demo: failed, level 2 of 2"
want_out "Levels: 1: 2/3 (1 failed)  2: 0/1 (1 blocked)"
want_out "2 complete, 1 failed, 1 blocked (4 in all)"
want_out "A-L1-003"
want_out "verification  80%"
want_out "s ago"
want_out "Health: failing - the run failed: 1 task failed"
want_out "1 worker retired"
want_out "stale_detections=2 task_reassignments=1 worker_respawns=6"
want_out "spawn_retries=4 policy_errors=1"
want_out "A-L1-002  [verification] verification exited 1?[2J"
no_out $'\033'
ok

t "status --json"
z -C "$proj" status --json
want_rc 0
want_out '"verdict":"failing"'
want_out '"heartbeats":[{"worker_id":0,"epoch":7'
want_out '"failed":[{"id":"A-L1-002","reason":"verification"'
[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "more than one line"
ok

t "status lists the unfinished tasks: status, why, next retry"
cp "$sd/demo.json" "$tmp/demo.saved"
python3 - "$sd/demo.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["status"] = "running"
d["tasks"]["A-L1-002"] = {"status": "waiting_retry", "level": 1,
                          "retry_count": 1, "reason": "exit",
                          "error": "command failed: exit 1",
                          "retry_at": "2200-01-01T00:00:00.000Z"}
d["tasks"]["A-L2-001"] = {"status": "pending", "level": 2}
json.dump(d, open(sys.argv[1], "w"))
PY
z -C "$proj" status
want_rc 0
want_out "Unfinished tasks (2):"
want_out "waiting_retry    1  A-L1-002  (retried when the run resumes)"
want_out "1x [exit] command failed: exit 1"
want_out "pending          1  A-L2-001"
z -C "$proj" status --json
want_out '"unfinished":[{"id":"A-L1-002","status":"waiting_retry"'
want_out '"retry_at":"2200-01-01T00:00:00.000Z"'
cp "$tmp/demo.saved" "$sd/demo.json"
ok

t "status of a running rush with a live worker"
state "$sd/demo.json" running
pid=$(fake_rush "$sd/demo.lock")
z -C "$proj" status
want_out "Feature demo: running (pid $pid)"
want_out "Health: degraded"
z -C "$proj" status --json
want_out "\"running\":true,\"pid\":$pid"
kill "$pid" 2>/dev/null
ok

t "status --watch ends with the rush"
z -C "$proj" status --watch
want_rc 0
want_out "Feature demo:"
ok

t "status when the run was interrupted"
z -C "$proj" status
want_out "Feature demo: not running (interrupted; continue with"
ok

# ---- logs ----------------------------------------------------------------

cat >"$proj/.zerg/monitor.jsonl" <<'EOF'
{"ts":"2026-02-03T05:41:55.123Z","worker":null,"level":"INFO","event":"rush_start","task":null,"msg":"Rush started","data":{}}
{"ts":"2026-02-03T05:41:55.200Z","worker":0,"level":"INFO","event":"task_claimed","task":"A-L1-001","msg":"Worker 0 claimed task A-L1-001","data":{}}
not json at all
{"ts":"2026-02-03T05:41:56.000Z","worker":1,"level":"WARN","event":"task_failed","task":"A-L1-002","msg":"Task A-L1-002 failed\u001b[31m","data":{"attempt":1}}
{"ts":"2026-02-03T05:41:57.000Z","worker":1,"level":"ERROR","event":"worker_crash","task":null,"msg":"Worker 1 crashed","data":{}}
{"ts":"2026-02-03T05:41:58.000Z","worker":null,"level":"INFO","event":"rush_fa
EOF

t "logs prints monitor.log lines and counts corrupt ones"
z -C "$proj" logs
want_rc 0
want_out "2026-02-03T05:41:55.123Z [ORCH] [INFO] Rush started"
want_out "2026-02-03T05:41:55.200Z [W0] [INFO] Worker 0 claimed task A-L1-001"
want_out "[W1] [WARN] Task A-L1-002 failed?[31m"
want_err "skipped 2 corrupt lines"
want_err "(first: line 3)"
[ "$(printf '%s\n' "$out" | wc -l)" = 4 ] || fail "expected 4 lines"
ok

t "logs filters"
z -C "$proj" logs --worker 1 --level warn
[ "$(printf '%s\n' "$out" | wc -l)" = 2 ] || fail "--worker 1 --level warn"
z -C "$proj" logs --worker orch
want_out "Rush started"
no_out "[W0]"
z -C "$proj" logs --event task_failed,worker_crash
want_out "Task A-L1-002 failed"
want_out "Worker 1 crashed"
no_out "claimed"
z -C "$proj" logs --task A-L1-001
want_out "claimed task A-L1-001"
no_out "crashed"
ok

t "logs --feature shows that feature's events only"
cat >"$tmp/two.jsonl" <<'EOF'
{"ts":"2026-02-03T05:41:55.123Z","worker":null,"level":"INFO","event":"rush_start","task":null,"msg":"Rush of f","feature":"f","data":{}}
{"ts":"2026-02-03T05:41:55.200Z","worker":0,"level":"INFO","event":"task_claimed","task":"A-L1-001","msg":"g claimed A-L1-001","feature":"g","data":{}}
{"ts":"2026-02-03T05:41:55.300Z","worker":0,"level":"INFO","event":"task_claimed","task":"A-L1-001","msg":"f claimed A-L1-001","feature":"f","data":{}}
EOF
cp "$proj/.zerg/monitor.jsonl" "$tmp/saved.jsonl"
cp "$tmp/two.jsonl" "$proj/.zerg/monitor.jsonl"
z -C "$proj" logs --feature f
want_rc 0
want_out "Rush of f"
want_out "f claimed A-L1-001"
no_out "g claimed"
z -C "$proj" logs --feature g --task A-L1-001
want_out "g claimed A-L1-001"
no_out "f claimed"
z -C "$proj" logs
want_out "g claimed A-L1-001"
want_out "f claimed A-L1-001"
cp "$tmp/saved.jsonl" "$proj/.zerg/monitor.jsonl"
ok

t "logs --task prints the attempt's output; --attempt, --tail, --since"
mkdir -p "$proj/.zerg/logs/demo/tasks/A-L1-002"
printf 'first try\n' >"$proj/.zerg/logs/demo/tasks/A-L1-002/attempt-1.log"
printf 'building\nerror: expected 3, got 4\n\033[31mred\n' \
    >"$proj/.zerg/logs/demo/tasks/A-L1-002/attempt-2.log"
z -C "$proj" logs --task A-L1-002
want_rc 0
want_out "Task A-L1-002 failed"
want_out "==> $proj/.zerg/logs/demo/tasks/A-L1-002/attempt-2.log <=="
want_out "error: expected 3, got 4"
want_out "?[31mred"
no_out $'\033'
no_out "first try"
z -C "$proj" logs --task A-L1-002 --attempt 1
want_out "first try"
no_out "expected 3"
z -C "$proj" logs --task A-L1-002 --tail 1
want_out "?[31mred"
no_out "building"
z -C "$proj" logs --since 2026-02-03T05:41:56Z
want_out "Task A-L1-002 failed"
want_out "Worker 1 crashed"
no_out "claimed"
z -C "$proj" logs --since 10m
no_out "crashed"
z -C "$proj" logs --tail 1 --event task_claimed,task_failed
want_out "Task A-L1-002 failed"
no_out "claimed"
z -C "$proj" logs --since yesterday
want_rc 2
want_err "--since takes a time"
z -C "$proj" logs --attempt 2
want_rc 2
want_err "--attempt needs --task"
ok

t "logs --since and --tail read across a rotation"
cp "$proj/.zerg/monitor.jsonl" "$tmp/saved.jsonl"
cat >"$proj/.zerg/monitor.jsonl.2" <<'EOF'
{"ts":"2026-02-03T05:40:00.000Z","worker":null,"level":"INFO","event":"rush_start","task":null,"msg":"oldest rotated","data":{}}
EOF
cat >"$proj/.zerg/monitor.jsonl.1" <<'EOF'
{"ts":"2026-02-03T05:41:00.000Z","worker":null,"level":"INFO","event":"level_start","task":null,"msg":"newer rotated","data":{}}
not json in the rotated file
EOF
cat >"$proj/.zerg/monitor.jsonl" <<'EOF'
{"ts":"2026-02-03T05:42:00.000Z","worker":null,"level":"INFO","event":"level_complete","task":null,"msg":"current","data":{}}
EOF
touch -d 2026-02-03T05:40:00Z "$proj/.zerg/monitor.jsonl.2"
touch -d 2026-02-03T05:41:00Z "$proj/.zerg/monitor.jsonl.1"
z -C "$proj" logs --tail 2
want_rc 0
want_out "2026-02-03T05:41:00.000Z [ORCH] [INFO] newer rotated"
want_out "2026-02-03T05:42:00.000Z [ORCH] [INFO] current"
no_out "oldest rotated"
[ "$(printf '%s\n' "$out" | wc -l)" = 2 ] || fail "--tail 2 across files: $out"
want_err "skipped 1 corrupt line in $proj/.zerg/monitor.jsonl.1"
z -C "$proj" logs --tail 5
want_out "oldest rotated"
z -C "$proj" logs --since 2026-02-03T05:40:30Z
want_out "newer rotated"
want_out "current"
no_out "oldest rotated"
# Without either, the current file only, as before.
z -C "$proj" logs
want_out "current"
no_out "rotated"
# A link in a rotated file's place is skipped, not followed.
rm "$proj/.zerg/monitor.jsonl.2"
ln -s "$tmp/saved.jsonl" "$proj/.zerg/monitor.jsonl.2"
z -C "$proj" logs --tail 10
want_rc 0
want_err "skipped"
no_out "Worker 1 crashed"
rm -f "$proj/.zerg/monitor.jsonl.1" "$proj/.zerg/monitor.jsonl.2"
cp "$tmp/saved.jsonl" "$proj/.zerg/monitor.jsonl"
ok

t "logs --json prints the stored lines"
z -C "$proj" logs --json --event task_claimed
want_out '{"ts":"2026-02-03T05:41:55.200Z","worker":0,"level":"INFO","event":"task_claimed"'
ok

t "logs usage errors"
z -C "$proj" logs --level loud
want_rc 2
want_err "--level takes DEBUG, INFO, WARN or ERROR, not 'loud'"
z -C "$proj" logs --worker x
want_rc 2
ok

t "logs --follow prints appended events"
# Run zerg itself in the background, not under timeout(1): timeout passes
# a signal on to its whole process group, which in a sanitizer build can
# reach the leak checker's helper while zerg exits.  A watchdog caps it.
"$ZERG" -C "$proj" logs --follow --event late >"$tmp/follow" 2>&1 &
fpid=$!
(sleep 20; kill -9 "$fpid" 2>/dev/null) &
watchdog=$!
bg_pids+=($watchdog)
sleep 0.5
printf '%s' '{"ts":"2026-02-03T06:00:00.000Z","worker":2,"level":"INFO",' \
    >>"$proj/.zerg/monitor.jsonl"
sleep 0.5
printf '%s\n' '"event":"late","task":null,"msg":"late one","data":{}}' \
    >>"$proj/.zerg/monitor.jsonl"
for _ in $(seq 50); do
    grep -q "late one" "$tmp/follow" && break
    sleep 0.1
done
kill -INT "$fpid"
wait "$fpid"
rc=$?
kill "$watchdog" 2>/dev/null
out=$(cat "$tmp/follow")
want_rc 0
want_out "2026-02-03T06:00:00.000Z [W2] [INFO] late one"
ok

t "logs with no log"
z -C "$two" --feature alpha logs
want_rc 1
want_err "no rush has run here yet"
ok

# ---- retry -----------------------------------------------------------------

state "$sd/demo.json" failed

t "retry refuses a complete task and writes nothing"
before=$(cksum <"$sd/demo.json")
z -C "$proj" retry A-L1-001
want_rc 2
want_err "task A-L1-001 is complete; nothing to retry"
[ "$(cksum <"$sd/demo.json")" = "$before" ] || fail "state changed"
ok

t "retry of an unknown task names it"
z -C "$proj" retry A-L1-002 NOPE
want_rc 2
want_err "unknown task 'NOPE' in feature demo"
[ "$(cksum <"$sd/demo.json")" = "$before" ] || fail "state changed"
ok

t "retry needs ids or --all-failed"
z -C "$proj" retry
want_rc 2
want_err "name the tasks to retry, or pass --all-failed"
z -C "$proj" retry A-L1-002 --all-failed
want_rc 2
ok

t "retry requeues the task and what it blocked"
z -C "$proj" retry A-L1-002
want_rc 0
want_out "Requeued 2 tasks of demo: A-L1-002 A-L2-001"
want_out "zerg rush --resume"
z -C "$proj" status
want_out "2 pending, 2 complete (4 in all)"
want_out "Feature demo: stopped, level 1 of 2"
[ -f "$sd/demo.json.bak" ] || fail "no .bak kept"
ok

t "retry --all-failed with nothing failed"
z -C "$proj" retry --all-failed
want_rc 1
want_out "nothing to retry"
ok

t "retry while a rush runs queues a request"
state "$sd/demo.json" running
before=$(cksum <"$sd/demo.json")
pid=$(fake_rush "$sd/demo.lock")
z -C "$proj" retry --all-failed
want_rc 0
want_out "queued for the running rush (pid $pid)"
req=$(ls "$sd"/demo/retry-*.json 2>/dev/null | head -1)
[ -n "$req" ] || fail "no request file"
[ -z "$req" ] || grep -qF '"all_failed":true' "$req" || fail "request body"
[ "$(cksum <"$sd/demo.json")" = "$before" ] || fail "state changed"
rm -f "$sd"/demo/retry-*.json
ok

# answer_next JSON: plays the running rush's part for the next request:
# leaves JSON as its answer (retried-N.json for retry-N.json), then takes
# the request away.
answer_next() {
    (until r=$(ls "$sd"/demo/retry-*.json 2>/dev/null | head -1) && [ -n "$r" ]; do
        sleep 0.02
    done
    printf '%s' "$1" >"$sd/demo/retried-${r##*/retry-}"
    rm -f "$r") &
    bg_pids+=($!)
}

t "the running rush's answer is the verdict, not the saved state"
# The saved state says A-L1-001 is complete; only the rush knows better.
answer_next '{"requeued":3,"tasks":["A-L1-001","A-L2-001","A-L3-001"],"refused":[]}'
z -C "$proj" retry A-L1-001
want_rc 0
want_out "Requeued 3 tasks of demo in the running rush (pid $pid): A-L1-001 A-L2-001 A-L3-001"
ls "$sd"/demo/retried-*.json >/dev/null 2>&1 && fail "answer left behind"
answer_next '{"requeued":0,"tasks":[],"refused":["task A-L1-001 is in_progress; nothing to retry","task A-L1-003 is complete; nothing to retry"]}'
z -C "$proj" retry A-L1-001 A-L1-003
want_rc 2
want_err "task A-L1-001 is in_progress; nothing to retry"
want_err "task A-L1-003 is complete; nothing to retry"
answer_next '{"requeued":0,"tasks":[],"refused":[]}'
z -C "$proj" retry --all-failed
want_rc 1
want_out "No failed tasks in demo; nothing to retry."
answer_next 'not json'
z -C "$proj" retry --all-failed
want_rc 0
want_out "it left no answer: see 'zerg logs'"
ls "$sd"/demo/retried-*.json >/dev/null 2>&1 && fail "bad answer left behind"
[ "$(cksum <"$sd/demo.json")" = "$before" ] || fail "state changed"
kill "$pid" 2>/dev/null
rm -f "$sd"/demo/retry-*.json "$sd"/demo/retried-*.json
ok

t "a retry the rush ended without reading is applied to the saved state"
state "$sd/demo.json" running
mkdir -p "$sd/demo"
: >"$sd/demo.lock"
# A rush that lets go of its lock as soon as a request appears, unread.
setsid flock "$sd/demo.lock" sh -c "echo \$\$ > '$sd/demo.lock'
    until ls '$sd'/demo/retry-*.json >/dev/null 2>&1; do sleep 0.02; done" \
    >/dev/null 2>&1 &
bg_pids+=($!)
for _ in $(seq 100); do [ -s "$sd/demo.lock" ] && break; sleep 0.05; done
z -C "$proj" retry --all-failed
want_rc 0
want_out "The rush ended before it read the request"
want_out "Requeued 2 tasks of demo"
ls "$sd"/demo/retry-*.json >/dev/null 2>&1 && fail "request left behind"
[ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tasks"]["A-L1-002"]["status"])' "$sd/demo.json")" = pending ] ||
    fail "the failed task was not requeued in the saved state"
ok

# ---- stop ------------------------------------------------------------------

t "stop with no rush"
z -C "$proj" stop
want_rc 1
want_err "no rush is running for demo"
ok

t "stop sends SIGTERM and waits for the lock"
pid=$(fake_rush "$sd/demo.lock")
z -C "$proj" stop
want_rc 0
want_out "Asked the rush for demo (pid $pid) to stop"
want_out "Stopped."
alive "$pid" && fail "the rush still runs"
ok

t "stop --force kills the rush and its recorded workers only"
# A process that looks like a zerg worker, and one that does not.
setsid bash -c 'sleep 120; :' zerg worker >/dev/null 2>&1 &
wpid=$!
bg_pids+=("$wpid")
sleep 120 &
other=$!
bg_pids+=("$other")
cat >"$sd/demo.json" <<EOF
{"version": 1, "feature": "demo", "status": "running", "tasks": {},
 "workers": {"0": {"status": "busy", "pid": $wpid},
             "1": {"status": "busy", "pid": $other}}}
EOF
pid=$(fake_rush "$sd/demo.lock" "trap '' TERM;")
z -C "$proj" stop --force
want_rc 0
want_out "Killed the rush for demo (pid $pid)"
want_out "Killed worker process $wpid"
no_out "Killed worker process $other"
sleep 0.2
alive "$wpid" && fail "worker survived"
alive "$other" || fail "an unrelated process was killed"
kill "$other" 2>/dev/null
ok

echo "test_cli.sh: $passed passed, $failed failed"
[ "$failed" = 0 ]
