#!/usr/bin/env bash
# Workers report on stdout too (DESIGN §15): with `state.watch: poll` and a
# 2 s poll interval, a rush of 20 short tasks on 2 workers ends in a second
# or two, because the event lines carry the results at once -- the files
# alone need a scan per result (a control run, with the worker's events
# turned off through launch_prefix, shows it: about 20 s).  The same rush
# under inotify; and either way the files stay the journal: none left
# after the rush, no result fenced as a duplicate, no event line in the
# worker logs.  Then Slurm (lib-slurm.sh: a one-node cluster): srun relays
# the worker's stdout, so polling every 2 s costs nothing there either;
# and `zerg cleanup` cancels the jobs a killed orchestrator left.
source "$(dirname "$0")/lib.sh"

# setup NAME WATCH [LAUNCH_PREFIX]: a project of 20 `true` tasks on level 1,
# heartbeats every second (so the heartbeat scan, every 2 s, does not find
# the results early either).
setup() {
    new_project "$1"
    cat > "$PROJ/.zerg/config.yaml" <<YAML
rush:
  isolation: none
state:
  watch: $2
  poll_interval_ms: 2000
workers:
  heartbeat_interval_seconds: 1
  heartbeat_stale_threshold: 10
  spawn_ready_timeout_seconds: 10
YAML
    [ -z "${3:-}" ] || config_append "  launch_prefix: $3"
    gen_graph 1 20 true
}

# timed_rush [ARGS]: runs the rush (with ARGS), prints its wall time in milliseconds.
timed_rush() {
    local t0 t1 rc=0
    t0=$(date +%s%N)
    timeout 120 "$ZERG" -C "$PROJ" rush --workers 2 --no-progress "$@" > "$PROJ/out.txt" 2>&1 || rc=$?
    t1=$(date +%s%N)
    [ $rc -eq 0 ] || fail "rush exited $rc: $(tail -n 5 "$PROJ/out.txt")"
    echo $(((t1 - t0) / 1000000))
}

# journal_clean: every task complete, the journal emptied, nothing fenced,
# the worker logs free of event lines.
journal_clean() {
    [ "$(state_field status)" = complete ] || fail "state status $(state_field status)"
    local left
    left=$(find "$PROJ/.zerg/state/f" -name 'result-*.json' | wc -l)
    [ "$left" -eq 0 ] || fail "$left result files left after the rush"
    python3 - "$PROJ/.zerg/state/f.json" <<'PY' || fail "results fenced"
import json, sys
m = json.load(open(sys.argv[1]))["metrics"]
sys.exit(1 if m["results_fenced"] else 0)
PY
    ! grep -q '"zerg":1' "$PROJ"/.zerg/logs/f/worker-*.log 2>/dev/null ||
        fail "event lines in a worker log"
    ! has_event worker_event_invalid || fail "an event line was invalid"
}

setup poll poll
has_poll_line() { grep -q 'Polling .* every 2000 ms' "$PROJ/.zerg/monitor.log"; }
ms=$(timed_rush)
has_poll_line || fail "the rush did not poll the state directory"
journal_clean
echo "# state.watch poll, 2000 ms: 20 tasks in $ms ms (20 x 2 s = 40000 ms)"
poll_ms=$ms

# The control: the same rush with the worker's events turned off.
setup control poll "[env, ZERG_STDIO_EVENTS=0]"
control_ms=$(timed_rush)
journal_clean
echo "# the same without event lines: $control_ms ms"
[ "$control_ms" -gt $((poll_ms * 3)) ] ||
    fail "without event lines the rush took $control_ms ms, with them $poll_ms ms: the event lines did not carry the results"
pass "poll every 2 s: 20 tasks in $poll_ms ms with event lines, $control_ms ms without"

setup inotify inotify
ms=$(timed_rush)
! has_poll_line || fail "state.watch inotify polled"
journal_clean
echo "# state.watch inotify: 20 tasks in $ms ms"
[ "$control_ms" -gt $((ms * 3)) ] || fail "20 tasks took $ms ms under inotify, $control_ms ms polling without event lines"
pass "inotify and event lines together: 20 tasks in $ms ms, each applied once"

# Event lines are fenced like files: a worker's stdout (through a
# launch_prefix that adds lines to it) carrying, as its first task
# starts, a failed result of that attempt from another incarnation (a
# stale epoch) and one that names the other slot.  Neither may fail the
# task (retry_attempts 0 would end it for good); the second is refused
# as naming another worker.
cat > "$TEST_ROOT/inject.py" <<'PY'
import json, sys
done = False
for line in sys.stdin:
    sys.stdout.write(line)
    if not done and line.startswith('{"zerg":1,"kind":"heartbeat"'):
        hb = json.loads(line)
        if hb.get("step") == "command" and hb.get("task_id"):
            base = {"zerg": 1, "kind": "result", "run_id": hb["run_id"],
                    "task": hb["task_id"], "attempt": hb["attempt"],
                    "outcome": "failed", "stage": "command", "exit_code": 3,
                    "signal": 0, "timed_out": False, "duration_ms": 1,
                    "error": "forged", "base": "", "commit": ""}
            stale = dict(base, epoch=hb["epoch"] + 999, worker_id=hb["worker_id"])
            other = dict(base, epoch=hb["epoch"], worker_id=hb["worker_id"] + 1)
            sys.stdout.write(json.dumps(stale, separators=(",", ":")) + "\n")
            sys.stdout.write(json.dumps(other, separators=(",", ":")) + "\n")
            done = True
    sys.stdout.flush()
PY
cat > "$TEST_ROOT/inject.sh" <<SH
#!/bin/sh
"\$@" | python3 -u "$TEST_ROOT/inject.py"
SH
chmod +x "$TEST_ROOT/inject.sh"
setup forged inotify "[\"$TEST_ROOT/inject.sh\"]"
config_append "  retry_attempts: 0"
gen_graph 1 4 "sleep 0.5"
timed_rush > /dev/null
for t in T-L1-000 T-L1-001 T-L1-002 T-L1-003; do
    [ "$(task_status $t)" = complete ] || fail "$t is $(task_status $t): a forged event line was applied"
done
! has_event task_failed || fail "a forged result line failed a task"
grep '"event":"worker_event_invalid"' "$PROJ/.zerg/monitor.jsonl" | grep -q 'another worker' ||
    fail "the line naming another slot was not refused"
pass "event lines are fenced: a stale incarnation's result and one naming another slot change nothing"

source "$(dirname "$0")/lib-slurm.sh"
setup slurm poll
ms=$(timed_rush --mode slurm)
has_poll_line || fail "the slurm rush did not poll"
grep '"event":"worker_spawn"' "$PROJ/.zerg/monitor.jsonl" | grep -q '"mode":"slurm"' ||
    fail "the workers were not Slurm jobs"
journal_clean
echo "# slurm, state.watch poll, 2000 ms: 20 tasks in $ms ms"
[ "$control_ms" -gt $((ms * 2)) ] || fail "20 tasks on Slurm took $ms ms under polling, $control_ms ms without event lines"
pass "slurm: srun relays the event lines, 20 tasks in $ms ms under a 2 s poll"

setup leftovers poll
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "SLOW-L1-001", "level": 1, "command": "sleep 300"},
 {"id": "SLOW-L1-002", "level": 1, "command": "sleep 300"}
]}
JSON
rush_bg --mode slurm --workers 2 --no-progress
wait_for 30 task_running SLOW-L1-001
wait_for 30 task_running SLOW-L1-002
old_run=$(state_field run_id)
kill -STOP "$RUSH_PID"
for p in $(pgrep -P "$RUSH_PID" -x srun); do kill -9 "$p"; done
kill -9 "$RUSH_PID"
wait "$RUSH_PID" 2>/dev/null || true
RUSH_PID=""
n_old=$(slurm_jobs | grep -c "zerg-run=$old_run" || true)
[ "$n_old" -eq 2 ] || fail "expected 2 jobs of the killed run, squeue has: $(slurm_jobs)"
zerg cleanup > "$PROJ/cleanup.txt" 2>&1 || fail "cleanup exited $?: $(cat "$PROJ/cleanup.txt")"
grep -q "cancelled 2 leftover Slurm jobs" "$PROJ/cleanup.txt" || fail "cleanup said: $(cat "$PROJ/cleanup.txt")"
old_jobs_gone() { ! slurm_jobs | grep -q "zerg-run=$old_run"; }
wait_for 30 old_jobs_gone
pass "zerg cleanup cancels the Slurm jobs a killed orchestrator left"
