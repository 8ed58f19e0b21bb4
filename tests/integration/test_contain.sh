#!/usr/bin/env bash
# Everything a worker started dies with it: a task's setsid daemons, double
# forked ones and ones that clear their environment do not outlive the
# task's end, its timeout, `zerg stop --force` or a kill -9 of the
# orchestrator.  Where a cgroup v2 hierarchy is writable each worker runs in
# its own cgroup, which is removed with the worker.
source "$(dirname "$0")/lib.sh"

# Each daemon leads its own session (setsid), and `sh -c "sleep 300"` may
# fork the sleep: a daemon is dead when its session is empty.
session_live() { ps -s "$1" -o stat= 2>/dev/null | grep -qv '^Z'; }
dead() { ! alive "$1" && ! session_live "$1"; }
# Daemons that cleared their environment escape project_pids: kill the
# sessions the tasks recorded when the test ends, whatever happened.
kill_recorded() {
    local f
    for f in "$TEST_ROOT"/*/*.pid; do
        [ -s "$f" ] || continue
        pkill -9 -s "$(cat "$f")" 2>/dev/null || true
        kill -9 "$(cat "$f")" 2>/dev/null || true
    done
}
trap 'rc=$?; set +e; kill_recorded; (exit $rc); on_exit' EXIT
# wait_dead SECONDS FILE...: each FILE holds a pid that must be gone.
wait_dead() {
    local t=$1 f
    shift
    for f in "$@"; do
        [ -s "$PROJ/$f" ] || fail "$f was not written"
        wait_for "$t" dead "$(cat "$PROJ/$f")"
    done
}
has_task_event() {
    grep "\"event\":\"$1\"" "$PROJ/.zerg/monitor.jsonl" | grep -q "\"task\":\"$2\""
}

# The cgroup v2 hierarchy and whether zerg can create cgroups in it.
CG_ROOT=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
CG_OK=0
if [ -n "$CG_ROOT" ]; then
    self_cg=$(sed -n 's/^0:://p' /proc/self/cgroup)
    probe="$CG_ROOT$self_cg/zerg-test-probe-$$"
    mkdir "$probe" 2>/dev/null && rmdir "$probe" && CG_OK=1
fi

# Three daemons per task: setsid, setsid + double fork, and setsid with an
# empty environment (invisible to the ZERG_* environment sweeps).
DAEMONS='sed -n "s/^0:://p" /proc/self/cgroup > $P.cg
setsid sh -c "sleep 300" & echo $! > $P.pid
setsid sh -c "sleep 300 & echo \$! > $P-dbl.pid" &
env -i setsid sleep 300 & echo $! > $P-noenv.pid
while [ ! -s $P-dbl.pid ]; do sleep 0.01; done'
# task_json ID LEVEL DEPS PREFIX [VERIFY_TIMEOUT]: a task running DAEMONS
# (with $P = PREFIX) then CMD_TAIL from the environment.
task_json() {
    python3 - "$@" <<'PY'
import json, os, sys
tid, level, deps, prefix = sys.argv[1:5]
cmd = os.environ.get("CMD_HEAD", "") + "P=%s\n" % prefix + \
    os.environ["DAEMONS"] + "\n" + os.environ.get("CMD_TAIL", "")
t = {"id": tid, "level": int(level), "command": cmd,
     "dependencies": [d for d in deps.split(",") if d]}
if len(sys.argv) > 5:
    t = dict(t, command="true",
             verification={"command": cmd, "timeout_seconds": float(sys.argv[5])})
print(json.dumps(t))
PY
}
export DAEMONS

# ---- (a) a task that exits 0 leaves nothing behind, five times ----------
new_project done
config_append "  retry_attempts: 0"
{
    echo '{"feature": "f", "tasks": ['
    for i in 1 2 3 4 5; do
        deps=""
        [ $i -eq 1 ] || deps="A-L$((i - 1))"
        CMD_HEAD="until [ -f go-$((i - 1)) ] || [ $i -eq 1 ]; do sleep 0.05; done
" task_json "A-L$i" "$i" "$deps" "a$i"
        [ $i -eq 5 ] || echo ,
    done
    echo ']}'
} | graph
rush_bg --workers 1
cg=""
for i in 1 2 3 4 5; do
    wait_for 30 has_task_event task_complete "A-L$i"
    [ $i -eq 1 ] && cg="$CG_ROOT$(cat "$PROJ/a1.cg")"
    wait_dead 10 "a$i.pid" "a$i-dbl.pid" "a$i-noenv.pid"
    # Killed at the task's end, not the rush's: A-L(i+1) waits for go-i.
    [ $i -eq 5 ] || kill -0 "$RUSH_PID" || fail "the rush ended before A-L$((i + 1))"
    touch "$PROJ/go-$i"
done
rush_wait 60
[ "$RUSH_RC" -eq 0 ] || fail "rush exited $RUSH_RC: $(cat "$PROJ/rush.out")"
no_procs
pass "a task's setsid, double-forked and env-less daemons die when it ends (5 tasks)"
if [ $CG_OK -eq 1 ]; then
    case "$cg" in
        */zerg-*/w0-e*) ;;
        *) fail "the worker did not run in its own cgroup (daemon in $cg)" ;;
    esac
    [ ! -e "$cg" ] || fail "the worker's cgroup $cg was not removed"
    [ ! -e "$(dirname "$cg")" ] || fail "the run's cgroup $(dirname "$cg") was not removed"
    pass "each worker ran in its own cgroup, removed with it"
fi

# ---- (b) a verification timeout kills the daemons too --------------------
# B-L1-002 holds the rush open: the daemons die at the timeout, not at the
# rush's end.
new_project timeout
config_append "  retry_attempts: 0"
{
    echo '{"feature": "f", "tasks": ['
    CMD_TAIL="sleep 300" task_json B-L1-001 1 "" b 1
    echo ', {"id": "B-L1-002", "level": 1,'
    echo '   "command": "until [ -f go ]; do sleep 0.05; done"}]}'
} | graph
rush_bg --workers 2
wait_for 30 has_task_event task_failed B-L1-001
grep -q "timed out" "$PROJ/.zerg/monitor.jsonl" || fail "no timeout recorded"
wait_dead 10 b.pid b-dbl.pid b-noenv.pid
kill -0 "$RUSH_PID" || fail "the rush ended before B-L1-002"
touch "$PROJ/go"
rush_wait 60
[ "$RUSH_RC" -eq 1 ] || fail "timed-out task: rush exited $RUSH_RC"
[ "$(task_status B-L1-001)" = failed ] || fail "B-L1-001 is $(task_status B-L1-001)"
no_procs
pass "a verification timeout kills the task's daemons"

# ---- (c) zerg stop --force ----------------------------------------------
# The worker is stopped (SIGSTOP) first, so it cannot sweep: stop --force
# itself must find the daemons (the worker's cgroup, their environment).
new_project force
{
    echo '{"feature": "f", "tasks": ['
    CMD_TAIL="sleep 300" task_json C-L1 1 "" c
    echo ']}'
} | graph
rush_bg --workers 1
wait_for 30 test -s "$PROJ/c-dbl.pid"
wait_for 10 test -s "$PROJ/c-noenv.pid"
kill -STOP "$(worker_pid 0)"
zerg stop --force > "$PROJ/stop.txt" 2>&1 || fail "stop --force exited $?: $(cat "$PROJ/stop.txt")"
rush_wait 10
if [ $CG_OK -eq 1 ]; then
    wait_dead 10 c.pid c-dbl.pid c-noenv.pid
else # an env-less daemon is only found through a cgroup
    wait_dead 10 c.pid c-dbl.pid
fi
no_procs
pass "zerg stop --force kills the task's daemons"

# ---- (e) kill -9 of the worker -------------------------------------------
# The worker cannot sweep: the orchestrator, reaping it, kills its cgroup
# and the processes with its ZERG_RUN_ID/ZERG_WORKER_ID/ZERG_EPOCH.
# E-L1-002 holds the rush open: this happens at the reaping, not at the
# rush's end.
new_project killed
{
    echo '{"feature": "f", "tasks": ['
    CMD_HEAD='[ -f e-first ] && exit 0
touch e-first
' CMD_TAIL="sleep 300" task_json E-L1-001 1 "" e
    echo ', {"id": "E-L1-002", "level": 1,'
    echo '   "command": "until [ -f go ]; do sleep 0.05; done"}]}'
} | graph
rush_bg --workers 2
wait_for 30 test -s "$PROJ/e-dbl.pid"
wait_for 10 test -s "$PROJ/e-noenv.pid"
kill -9 "$(worker_pid "$(slot_of E-L1-001)")"
if [ $CG_OK -eq 1 ]; then
    wait_dead 10 e.pid e-dbl.pid e-noenv.pid
else # an env-less daemon is only found through a cgroup
    wait_dead 10 e.pid e-dbl.pid
fi
kill -0 "$RUSH_PID" || fail "the rush ended before E-L1-002"
touch "$PROJ/go"
rush_wait 60
[ "$RUSH_RC" -eq 0 ] || fail "rush exited $RUSH_RC: $(cat "$PROJ/rush.out")"
[ "$(task_status E-L1-001)" = complete ] || fail "E-L1-001 is $(task_status E-L1-001)"
no_procs
pass "kill -9 of a worker: its task's daemons die when it is reaped"

# ---- (d) kill -9 of the orchestrator -------------------------------------
# The worker gets SIGTERM (parent death signal), kills the task's group
# and then its re-parented descendants: no later zerg command is needed.
new_project orphan
{
    echo '{"feature": "f", "tasks": ['
    CMD_HEAD='[ -f d-first ] && exit 0
touch d-first
' CMD_TAIL="sleep 300" task_json D-L1 1 "" d
    echo ']}'
} | graph
rush_bg --workers 1
wait_for 30 test -s "$PROJ/d-dbl.pid"
wait_for 10 test -s "$PROJ/d-noenv.pid"
wpid=$(worker_pid 0)
kill -9 "$RUSH_PID"
rush_wait 10
wait_for 10 dead "$wpid"
wait_dead 10 d.pid d-dbl.pid d-noenv.pid
no_procs
pass "kill -9 of the orchestrator: the worker kills the task's daemons as it exits"
rush_bg --resume --workers 1
rush_wait 60
[ "$RUSH_RC" -eq 0 ] || fail "resume exited $RUSH_RC: $(cat "$PROJ/rush.out")"
[ "$(task_status D-L1)" = complete ] || fail "D-L1 is $(task_status D-L1)"
no_procs
pass "the resumed rush finishes the task"
if [ $CG_OK -eq 1 ]; then
    cg="$CG_ROOT$(cat "$PROJ/d.cg")"
    [ ! -e "$(dirname "$cg")" ] || fail "the killed rush's cgroup $(dirname "$cg") is left"
    pass "the resumed rush removed the killed rush's cgroup"
fi
echo "$TESTS_PASSED passed, 0 failed"
