#!/usr/bin/env bash
# kill -9 of the orchestrator: no worker survives it, and `--resume`
# finishes without re-running completed tasks.  Also: a hand-corrupted
# state (a level marked complete with pending tasks, null levels) is
# reconciled on resume.
source "$(dirname "$0")/lib.sh"

new_project orch
gen_graph 3 4 "echo {id} >> runs.log; sleep 0.3"
rush_bg --workers 2
wait_for 30 grep -q '"event":"level_start".*"level":2\|"level":2.*"event":"level_start"' "$PROJ/.zerg/monitor.jsonl"
kill -9 "$RUSH_PID"
wait "$RUSH_PID" 2>/dev/null || true
RUSH_PID=""
# Workers notice their orchestrator is gone (parent death / lease).
gone() { [ -z "$(project_pids "$PROJ")" ]; }
wait_for 15 gone
pass "no worker survives the orchestrator's kill -9"
done_before=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(1 for t in d["tasks"].values() if t["status"]=="complete"))' "$PROJ/.zerg/state/f.json")
[ "$done_before" -ge 4 ] || fail "expected level 1 complete before the kill, got $done_before"
rc=0
zerg rush > "$PROJ/out.txt" 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "a rush over an unfinished run must refuse (exit 2), got $rc"
grep -q -- "--resume" "$PROJ/out.txt" || fail "refusal does not mention --resume"
zerg rush --resume --workers 2 > "$PROJ/out.txt" 2>&1 || fail "resume exited $?: $(cat "$PROJ/out.txt")"
[ "$(state_field status)" = complete ] || fail "state not complete"
dups=$(sort "$PROJ/runs.log" | uniq -d | wc -l)
total=$(sort -u "$PROJ/runs.log" | wc -l)
[ "$total" -eq 12 ] || fail "expected 12 distinct tasks run, got $total"
# A task running at the kill may run twice (it never finished); a task
# that completed must not.
python3 - "$PROJ" <<'PY' || fail "a completed task ran again"
import json, sys, collections
proj = sys.argv[1]
runs = collections.Counter(l.strip() for l in open(proj + "/runs.log"))
events = [json.loads(l) for l in open(proj + "/.zerg/monitor.jsonl")]
kill_idx = max(i for i, e in enumerate(events) if e["event"] == "rush_start" and e["data"].get("resume"))
done_before = {e["task"] for e in events[:kill_idx] if e["event"] == "task_complete"}
again = [t for t in done_before if runs[t] > 1]
assert not again, again
PY
no_procs
pass "--resume finishes without re-running completed tasks"

new_project corrupt
gen_graph 2 2 "echo {id} >> runs.log"
zerg rush --workers 1 > /dev/null 2>&1 || fail "first rush"
python3 - "$PROJ/.zerg/state/f.json" <<'PY'
import json, sys
p = sys.argv[1]
d = json.load(open(p))
d["status"] = "running"
d["tasks"]["T-L1-001"]["status"] = "pending"
d["tasks"]["T-L1-001"]["level"] = None
d["tasks"]["T-L2-001"]["status"] = "in_progress"
d["tasks"]["T-L2-001"]["worker_id"] = 0
d["levels"]["1"]["status"] = "complete"
json.dump(d, open(p, "w"))
PY
zerg rush --resume --workers 1 > "$PROJ/out.txt" 2>&1 || fail "resume of corrupted state exited $?"
grep '"event":"state_reconcile_fix"' "$PROJ/.zerg/monitor.jsonl" > "$PROJ/fixes" || fail "no reconcile fixes logged"
grep -q set_level "$PROJ/fixes" || fail "null level not fixed"
grep -q requeue "$PROJ/fixes" || fail "in_progress task on a dead worker not requeued"
grep -q reopen_level "$PROJ/fixes" || fail "complete level with pending task not reopened"
[ "$(task_status T-L1-001 level)" = 1 ] || fail "level not restored"
[ "$(state_field status)" = complete ] || fail "not complete after reconcile"
pass "hand-corrupted state reconciled on resume"

# A task with no level in the state (as the Python tool's state files may
# have it) counts in its graph level even when nothing reconciles it
# (resilience.enabled false): its level does not close before it ran, and
# the level after it starts only then.
new_project unplaced
gen_graph 2 2 "echo {id} >> runs.log"
zerg rush --workers 1 > /dev/null 2>&1 || fail "first rush"
python3 - "$PROJ/.zerg/state/f.json" <<'PY'
import json, sys
p = sys.argv[1]
d = json.load(open(p))
d["status"] = "running"
d["current_level"] = 1
for t in ("T-L1-001", "T-L2-000", "T-L2-001"):
    d["tasks"][t].update(status="pending", completed_at=None, commit=None)
    d["tasks"][t].pop("commit", None)
d["tasks"]["T-L1-001"]["level"] = None
d["levels"]["1"]["status"] = "running"
d["levels"]["1"]["completed_at"] = None
d["levels"]["2"].update(status="pending", started_at=None, completed_at=None)
json.dump(d, open(p, "w"))
PY
sed -i 's/^resilience:$/resilience:\n  enabled: false/' "$PROJ/.zerg/config.yaml"
: > "$PROJ/runs.log"
zerg rush --resume --workers 1 > "$PROJ/out.txt" 2>&1 || fail "resume with an unplaced task exited $?: $(cat "$PROJ/out.txt")"
[ "$(head -1 "$PROJ/runs.log")" = T-L1-001 ] || fail "level 2 ran before the unplaced level-1 task: $(tr '\n' ' ' < "$PROJ/runs.log")"
[ "$(sort "$PROJ/runs.log" | tr '\n' ' ')" = "T-L1-001 T-L2-000 T-L2-001 " ] || fail "runs: $(tr '\n' ' ' < "$PROJ/runs.log")"
[ "$(state_field status)" = complete ] || fail "not complete: $(state_field status)"
pass "an unplaced task holds its level open without a reconciliation"
echo "$TESTS_PASSED passed, 0 failed"
