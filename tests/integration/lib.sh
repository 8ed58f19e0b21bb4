# lib.sh - shared helpers for the integration tests (sourced).
# Each test runs real zerg processes in a fresh temp project and cleans up
# after itself; a missing prerequisite fails the test loudly.
set -euo pipefail

: "${ZERG:?ZERG must point at the zerg binary}"
[ -x "$ZERG" ] || { echo "FAIL: $ZERG is not executable" >&2; exit 1; }
ZERG=$(realpath "$ZERG")
TESTS_PASSED=0

fail() {
    echo "FAIL: $*" >&2
    if [ -n "${PROJ:-}" ] && [ -f "$PROJ/.zerg/monitor.log" ]; then
        echo "--- last monitor.log lines:" >&2
        tail -n 40 "$PROJ/.zerg/monitor.log" >&2
    fi
    exit 1
}
pass() { TESTS_PASSED=$((TESTS_PASSED + 1)); echo "ok - $*"; }

# project_pids PREFIX: pids whose environment has ZERG_PROJECT=PREFIX...
# (workers and the tasks they started carry it).
project_pids() {
    { grep -la "ZERG_PROJECT=$1" /proc/[0-9]*/environ 2>/dev/null || true; } |
        sed 's|/proc/\([0-9]*\)/environ|\1|'
}

# project_runs PATTERN: true when a process of this test's project (by
# its ZERG_PROJECT environment) has PATTERN in its command line; a global
# pgrep would see other tests' processes.
project_runs() {
    local p
    for p in $(project_pids "$PROJ"); do
        tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -q -- "$1" && return 0
    done
    return 1
}

# Kills anything still running from this test's projects.
cleanup_procs() {
    local pids
    pids=$(project_pids "$TEST_ROOT")
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null || true
}

TEST_ROOT=$(mktemp -d "${TMPDIR:-/tmp}/zerg-it-XXXXXX")
on_exit() {
    local rc=$?
    cleanup_procs
    [ -n "${RUSH_PID:-}" ] && kill -9 "$RUSH_PID" 2>/dev/null || true
    if [ $rc -eq 0 ]; then rm -rf "$TEST_ROOT"; else echo "(kept $TEST_ROOT)" >&2; fi
    exit $rc
}
trap on_exit EXIT

# new_project NAME: creates $TEST_ROOT/NAME with feature "f", sets PROJ.
new_project() {
    PROJ="$TEST_ROOT/$1"
    mkdir -p "$PROJ/.gsd/specs/f" "$PROJ/.zerg"
    echo f > "$PROJ/.gsd/.current-feature"
    cat > "$PROJ/.zerg/config.yaml" <<'YAML'
# config_append adds keys to the workers section, which comes last.
resilience:
  reconcile_interval_seconds: 0.5
workers:
  heartbeat_interval_seconds: 0.1
  heartbeat_stale_threshold: 1
  spawn_backoff_base_seconds: 0.1
  spawn_backoff_max_seconds: 0.5
  spawn_ready_timeout_seconds: 5
  backoff_base_seconds: 0.1
  backoff_max_seconds: 0.5
YAML
}

# config_append LINE...: appends indented lines to the workers section.
config_append() { printf '%s\n' "$@" >> "$PROJ/.zerg/config.yaml"; }

# graph_json: writes stdin as the task graph.
graph() { cat > "$PROJ/.gsd/specs/f/task-graph.json"; }

# gen_graph LEVELS PER_LEVEL CMD: a graph of LEVELS x PER_LEVEL tasks whose
# command is CMD (with {id} replaced); each task depends on the task with
# the same index one level below.
gen_graph() {
    python3 - "$1" "$2" "$3" > "$PROJ/.gsd/specs/f/task-graph.json" <<'PY'
import json, sys
levels, per, cmd = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
tasks = []
for l in range(1, levels + 1):
    for i in range(per):
        tid = "T-L%d-%03d" % (l, i)
        deps = ["T-L%d-%03d" % (l - 1, i)] if l > 1 else []
        tasks.append({"id": tid, "title": tid, "level": l,
                      "dependencies": deps, "command": cmd.replace("{id}", tid)})
print(json.dumps({"feature": "f", "tasks": tasks}))
PY
}

zerg() { "$ZERG" -C "$PROJ" "$@"; }

# G ARGS: git in the test's project.
G() { git -C "$PROJ" "$@"; }

# git_repo [FILE=TEXT...]: makes $PROJ a git repository on main with a
# tester identity and one commit holding each FILE (default README=base).
git_repo() {
    local spec
    G init -q -b main
    G config user.name tester
    G config user.email tester@example.com
    [ $# -gt 0 ] || set -- README=base
    for spec in "$@"; do
        echo "${spec#*=}" > "$PROJ/${spec%%=*}"
        G add "${spec%%=*}"
    done
    G commit -qm base
}

# rush_bg ARGS: starts a rush in the background, sets RUSH_PID.
rush_bg() {
    "$ZERG" -C "$PROJ" rush "$@" > "$PROJ/rush.out" 2>&1 &
    RUSH_PID=$!
}

# rush_wait [TIMEOUT]: waits for the background rush, sets RUSH_RC.
rush_wait() {
    local t=${1:-60} i=0
    while kill -0 "$RUSH_PID" 2>/dev/null; do
        i=$((i + 1))
        [ $i -le $((t * 10)) ] || { kill -9 "$RUSH_PID"; fail "rush did not end within ${t}s"; }
        sleep 0.1
    done
    RUSH_RC=0
    wait "$RUSH_PID" || RUSH_RC=$?
    RUSH_PID=""
}

# wait_for TIMEOUT CMD...: polls CMD every 50 ms.
wait_for() {
    local t=$1 i=0
    shift
    until "$@" >/dev/null 2>&1; do
        i=$((i + 1))
        [ $i -le $((t * 20)) ] || fail "timed out after ${t}s waiting for: $*"
        sleep 0.05
    done
}

jdata() { # jdata EVENT FIELD: the field of the event's data (last one)
    python3 - "$PROJ/.zerg/monitor.jsonl" "$1" "$2" <<'PY'
import json, sys
v = None
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["event"] == sys.argv[2]:
        v = e["data"][sys.argv[3]]
print(v)
PY
}

events() { grep -c "\"event\":\"$1\"" "$PROJ/.zerg/monitor.jsonl" || true; }
has_event() { grep -q "\"event\":\"$1\"" "$PROJ/.zerg/monitor.jsonl"; }
task_status() {
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tasks"][sys.argv[2]][sys.argv[3]])' \
        "$PROJ/.zerg/state/f.json" "$1" "${2:-status}"
}
state_field() {
    python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): d=d[k]
print(d)' "$PROJ/.zerg/state/f.json" "$1"
}
# worker_pid SLOT: the pid in the worker's heartbeat.
worker_pid() {
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' \
        "$PROJ/.zerg/state/f/heartbeat-$1.json"
}
# slot_of TASK: the worker slot that last claimed TASK.
slot_of() {
    grep '"event":"task_claimed"' "$PROJ/.zerg/monitor.jsonl" |
        grep "\"task\":\"$1\"" | tail -1 | sed 's/.*"worker":\([0-9]*\).*/\1/'
}
task_running() { grep '"event":"task_started"' "$PROJ/.zerg/monitor.jsonl" | grep -q "\"task\":\"$1\""; }
# no_procs PATTERN: asserts no process of this test matches PATTERN.
no_procs() {
    local left
    left=$(project_pids "$PROJ" | wc -l)
    [ "$left" -eq 0 ] || { ps -eo pid,pgid,args | grep -v grep | grep -F "${1:-zerg}" >&2 || true; fail "$left processes of $PROJ still running"; }
}

# alive PID: true while PID exists and is not a zombie (a killed process
# stays visible to kill -0 until its new parent reaps it).
alive() {
    local st
    st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
    [ -n "$st" ] && [ "$st" != Z ]
}
