#!/usr/bin/env bash
# state.durability (DESIGN §16): the promise, both halves.
#  - kill -9 of the orchestrator mid-run under batch (the default):
#    `--resume` loses nothing that finished: every task that reported
#    complete is complete and none runs again (each run appends its id to
#    runs.log).
#  - a power cut: ZERG_TEST_POWER_LOSS_AT_SYNC=N makes the N-th batch sync
#    delete the batch's unsynced results (what a lost page cache loses)
#    and kill the orchestrator; `--resume` runs again at most that batch
#    and everything completes.
#  - killed after its last task, before the run's last checkpoint:
#    `--resume` ends the run and runs nothing again.
#  - full: every result fsynced by its worker; the run completes the same.
source "$(dirname "$0")/lib.sh"

# The tasks that logged task_complete before the resume, and how many of
# them ran more than once.  Prints "DONE_BEFORE RERUN".
reruns() {
    python3 - "$PROJ" <<'PY'
import json, sys, collections
proj = sys.argv[1]
runs = collections.Counter(l.strip() for l in open(proj + "/runs.log"))
events = [json.loads(l) for l in open(proj + "/.zerg/monitor.jsonl")]
resume = max(i for i, e in enumerate(events)
             if e["event"] == "rush_start" and e["data"].get("resume"))
done = {e["task"] for e in events[:resume] if e["event"] == "task_complete"}
print(len(done), sum(1 for t in done if runs[t] > 1))
PY
}

all_complete() {
    [ "$(state_field status)" = complete ] || fail "state not complete"
    local n
    n=$(sort -u "$PROJ/runs.log" | wc -l)
    [ "$n" -eq "$1" ] || fail "expected $1 distinct tasks run, got $n"
}

new_project kill
# Levels 3 and 4 take a while, so that the kill lands in the run, not
# after its last task.
gen_graph 4 15 "echo {id} >> runs.log; case {id} in T-L[34]-*) sleep 0.2;; esac"
rush_bg --workers 4
wait_for 30 grep -q '"event":"level_start".*"level":3\|"level":3.*"event":"level_start"' "$PROJ/.zerg/monitor.jsonl"
kill -9 "$RUSH_PID"
wait "$RUSH_PID" 2>/dev/null || true
RUSH_PID=""
gone() { [ -z "$(project_pids "$PROJ")" ]; }
wait_for 15 gone
zerg rush --resume --workers 4 > "$PROJ/out.txt" 2>&1 || fail "resume exited $?: $(cat "$PROJ/out.txt")"
all_complete 60
read -r done_before again < <(reruns)
[ "$done_before" -ge 30 ] || fail "expected levels 1-2 reported complete before the kill, got $done_before"
[ "$again" -eq 0 ] || fail "$again tasks that reported complete ran again after kill -9"
no_procs
pass "batch: kill -9 of the orchestrator loses nothing that finished ($done_before done before, 0 run again)"

# Killed after its last task, before the checkpoint that ends the run
# (the state says every task is complete, the run still "running"):
# --resume ends the run instead of saying there is nothing to do.
new_project ended
gen_graph 2 3 "echo {id} >> runs.log"
zerg rush --workers 2 > "$PROJ/out.txt" 2>&1 || fail "rush exited $?: $(cat "$PROJ/out.txt")"
python3 - "$PROJ/.zerg/state/f.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["status"] = "running"
json.dump(d, open(sys.argv[1], "w"))
PY
zerg rush --resume --workers 2 > "$PROJ/out.txt" 2>&1 || fail "resume exited $?: $(cat "$PROJ/out.txt")"
grep -q "Nothing to do" "$PROJ/out.txt" && fail "resume of a run that never ended did nothing: $(cat "$PROJ/out.txt")"
all_complete 6
[ "$(sort "$PROJ/runs.log" | uniq -d | wc -l)" -eq 0 ] || fail "resume ran a complete task again"
zerg rush --resume --workers 2 > "$PROJ/out.txt" 2>&1 || fail "second resume exited $?"
grep -q "Nothing to do" "$PROJ/out.txt" || fail "resume of an ended run: $(cat "$PROJ/out.txt")"
pass "batch: --resume ends a run killed after its last task, runs nothing again"

new_project power
gen_graph 4 15 "echo {id} >> runs.log"
ZERG_TEST_POWER_LOSS_AT_SYNC=4 "$ZERG" -C "$PROJ" rush --workers 4 > "$PROJ/rush.out" 2>&1 && rc=0 || rc=$?
[ $rc -eq 137 ] || fail "the power-loss hook should end the rush with 137, got $rc: $(cat "$PROJ/rush.out")"
lost=$(sed -n 's/.*test power loss: \([0-9]*\) unsynced results dropped.*/\1/p' "$PROJ/rush.out")
[ -n "$lost" ] && [ "$lost" -ge 1 ] || fail "no batch dropped: $(cat "$PROJ/rush.out")"
wait_for 15 gone
zerg rush --resume --workers 4 > "$PROJ/out.txt" 2>&1 || fail "resume exited $?: $(cat "$PROJ/out.txt")"
all_complete 60
read -r done_before again < <(reruns)
[ "$again" -le "$lost" ] || fail "$again finished tasks ran again, more than the $lost of the lost batch"
[ "$again" -ge 1 ] || fail "the lost batch ($lost results) ran no task again"
no_procs
pass "batch: a power cut runs again at most the last batch ($again of $lost dropped, $done_before reported done)"

new_project full
printf 'state:\n  durability: full\n' >> "$PROJ/.zerg/config.yaml"
gen_graph 2 6 "echo {id} >> runs.log"
zerg validate > /dev/null 2>&1 || fail "state.durability: full does not validate"
zerg rush --workers 3 > "$PROJ/out.txt" 2>&1 || fail "rush under full exited $?: $(cat "$PROJ/out.txt")"
all_complete 12
[ "$(sort "$PROJ/runs.log" | uniq -d | wc -l)" -eq 0 ] || fail "a task ran twice under full"
pass "full: every result fsynced by its worker, the run completes"
echo "$TESTS_PASSED passed, 0 failed"
