#!/usr/bin/env bash
# rush.schedule: dag (DESIGN §16) with real workers: a slow level-1 task
# runs while an independent chain goes through levels 2 and 3.  The slow
# task waits (up to 20 s) for the file the chain's last task writes, so
# under dag it ends after the chain, and a scheduler that held the chain
# back until level 1 ended would show in the timestamps.  Also: the
# config key, the flag overriding it, and a bad value (exit 2).
source "$(dirname "$0")/lib.sh"

write_graph() {
    graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "S-L1", "level": 1,
  "command": "i=0; while [ ! -f c3.txt ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; echo s > s.txt"},
 {"id": "C-L1", "level": 1, "command": "echo 1 > c1.txt"},
 {"id": "C-L2", "level": 2, "dependencies": ["C-L1"],
  "command": "test -f c1.txt && echo 2 > c2.txt"},
 {"id": "Y-L2", "level": 2, "dependencies": ["S-L1"],
  "command": "test -f s.txt && echo y > y.txt"},
 {"id": "C-L3", "level": 3, "dependencies": ["C-L2"],
  "command": "test -f c2.txt && echo 3 > c3.txt"}
]}
JSON
}

# check_chain_first: the chain's level-2/3 tasks were claimed before S-L1
# completed, Y-L2 (which needs S-L1) after, every task is complete, and
# the levels completed in order.  Read in the order of the event log, not
# by timestamps: S-L1 ends as soon as it sees c3.txt, so its end and the
# chain's can fall in the same millisecond.  The order is causal: C-L3 is
# claimed before it runs, it runs before c3.txt exists, and S-L1 ends
# only after (or after 20 s, which the rush's time rules out); under the
# levels schedule C-L3 could not be claimed before S-L1 completed.
check_chain_first() {
    python3 - "$PROJ/.zerg/state/f.json" "$PROJ/.zerg/monitor.jsonl" <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))
for k, v in st["tasks"].items():
    assert v["status"] == "complete", (k, v["status"])
events = [json.loads(l) for l in open(sys.argv[2])]
def at(event, task):
    for i, e in enumerate(events):
        if e.get("event") == event and e.get("task") == task:
            return i
    raise AssertionError("no %s of %s" % (event, task))
slow = at("task_complete", "S-L1")
for k in ("C-L2", "C-L3"):
    assert at("task_claimed", k) < slow, (k, "claimed after S-L1 ended")
assert at("task_claimed", "Y-L2") > slow, "Y-L2 claimed before S-L1 ended"
done = [e["data"]["level"] for e in events
        if e.get("event") == "level_complete"]
assert done == [1, 2, 3], done
PY
}

new_project dag
write_graph
start=$(date +%s)
zerg rush --workers 2 --schedule dag > "$PROJ/out.txt" 2>&1 ||
    fail "rush --schedule dag exited $?: $(cat "$PROJ/out.txt")"
[ $(( $(date +%s) - start )) -lt 15 ] ||
    fail "S-L1 waited for its fallback: the chain did not run beside it"
pass "rush --schedule dag exits 0"
check_chain_first || fail "chain tasks did not finish before the slow task"
pass "the chain's level-2/3 tasks finish before the slow level-1 task"
[ "$(cat "$PROJ/y.txt")" = y ] || fail "Y-L2 did not run after S-L1"
no_procs
pass "all complete, nothing left running"

# The config key does the same; --schedule overrides it.
new_project cfg
write_graph
printf 'rush:\n  schedule: dag\n' >> "$PROJ/.zerg/config.yaml"
start=$(date +%s)
zerg rush --workers 2 > "$PROJ/out.txt" 2>&1 ||
    fail "rush with rush.schedule: dag exited $?: $(cat "$PROJ/out.txt")"
[ $(( $(date +%s) - start )) -lt 15 ] ||
    fail "S-L1 waited for its fallback under rush.schedule: dag"
check_chain_first || fail "rush.schedule: dag did not run the chain early"
pass "rush.schedule: dag in the config"

rc=0
zerg rush --workers 2 --schedule bogus --fresh > "$PROJ/bad.txt" 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "--schedule bogus exited $rc, expected 2"
grep -q -- "--schedule takes levels or dag, not 'bogus'" "$PROJ/bad.txt" ||
    fail "no clear message: $(cat "$PROJ/bad.txt")"
printf 'rush:\n  schedule: sometimes\n' > "$PROJ/.zerg/config.yaml"
rc=0
zerg rush --workers 2 --fresh > "$PROJ/bad.txt" 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "rush.schedule: sometimes exited $rc, expected 2"
grep -q "rush.schedule" "$PROJ/bad.txt" || fail "config error lacks the key: $(cat "$PROJ/bad.txt")"
pass "a bad schedule exits 2 with the reason"

# ---- under dag a failed required gate stops claims at once: the level-2
# task already running finishes, its level-3 dependent never starts.
new_project dag-gate
git_repo README=base
cat >> "$PROJ/.zerg/config.yaml" <<'YAML'
quality_gates:
  - name: tests
    command: "false"
YAML
graph <<JSON
{"feature": "f", "tasks": [
 {"id": "G-L1", "level": 1, "command": "echo 1 > g1.txt", "files": {"create": ["g1.txt"]}},
 {"id": "G-L1b", "level": 1, "command": "echo 1 > g1b.txt", "files": {"create": ["g1b.txt"]}},
 {"id": "G-L2", "level": 2,
  "command": "while [ ! -f '$PROJ/go' ]; do sleep 0.05; done; echo 2 > g2.txt",
  "files": {"create": ["g2.txt"]}},
 {"id": "G-L3", "level": 3, "dependencies": ["G-L2"], "command": "echo 3 > g3.txt",
  "files": {"create": ["g3.txt"]}}
]}
JSON
# G-L2 needs nothing: under dag it runs from the start, beside level 1
# (two level-1 tasks make two workers useful).
rush_bg --workers 2 --schedule dag
wait_for 30 task_running G-L2
wait_for 30 has_event gate_fail
touch "$PROJ/go"
rush_wait 60
[ "$RUSH_RC" -eq 1 ] || fail "a failed required gate: rush exited $RUSH_RC"
[ "$(task_status G-L2)" = complete ] || fail "the running G-L2 did not finish: $(task_status G-L2)"
task_running G-L3 && fail "G-L3 was claimed after the required gate failed"
[ "$(task_status G-L3)" = pending ] || fail "G-L3 is $(task_status G-L3)"
pass "dag: a failed required gate stops claims; the running task finishes, its dependent never starts"

echo "all $TESTS_PASSED passed"
