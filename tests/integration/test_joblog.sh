#!/usr/bin/env bash
# `zerg logs --joblog`: one tab-separated row per task attempt of a real
# rush under worktree isolation, from the monitor events and the
# attempts' result records: tasks that pass, one that fails then passes
# on its retry, one whose worker is killed with kill -9 mid-task (it
# leaves no record, yet gets a row).  The table loads with python's csv
# module; --task and --json give the same rows.
source "$(dirname "$0")/lib.sh"

new_project jl
git_repo README=base
FLAGS="$TEST_ROOT/flags"
mkdir -p "$FLAGS"
sed "s|@FLAGS@|$FLAGS|g" <<'JSON' | graph
{"feature": "f", "tasks": [
 {"id": "PASS-L1-001", "level": 1, "command": "echo a > a.txt"},
 {"id": "RETRY-L1-002", "level": 1,
  "command": "if [ ! -f @FLAGS@/retried ]; then touch @FLAGS@/retried; echo boom >&2; exit 3; fi; echo b > b.txt",
  "verification": {"command": "test -f b.txt"}},
 {"id": "KILL-L1-003", "level": 1,
  "command": "if [ ! -f @FLAGS@/killed ]; then touch @FLAGS@/killed; echo $$ > @FLAGS@/task.pid; sleep 300; fi; echo ok > s.txt"},
 {"id": "NEXT-L2-001", "level": 2, "dependencies": ["KILL-L1-003"], "command": "cat s.txt > n.txt"}
]}
JSON
rush_bg --workers 2
wait_for 20 task_running KILL-L1-003
wait_for 10 test -s "$FLAGS/task.pid"
victim_slot=$(slot_of KILL-L1-003)
kill -9 "$(worker_pid "$victim_slot")"
rush_wait 60
[ "$RUSH_RC" -eq 0 ] || fail "rush exited $RUSH_RC: $(cat "$PROJ/rush.out")"
[ ! -e "$PROJ/.zerg/logs/f/tasks/KILL-L1-003/attempt-1.result.json" ] ||
    fail "the killed attempt left a result record"

zerg logs --joblog > "$PROJ/joblog.tsv" || fail "logs --joblog exited $?"
header=$(head -1 "$PROJ/joblog.tsv")
[ "$header" = "$(printf 'task\tattempt\tworker\tstart\truntime\texit\toutcome\tclass\tcost\tcommit')" ] ||
    fail "header: $header"
pass "--joblog prints the header"

# Each row as the events and records say it: python reads the table with
# the csv module and checks it against monitor.jsonl and git.
python3 - "$PROJ" "$victim_slot" <<'PY' || fail "joblog rows: $(cat "$PROJ/joblog.tsv")"
import csv, json, re, subprocess, sys
proj, victim = sys.argv[1], int(sys.argv[2])
rows = list(csv.DictReader(open(proj + "/joblog.tsv", newline=""), delimiter="\t"))
assert all(len(r) == 10 and None not in r.values() for r in rows), rows
got = [(r["task"], r["attempt"], r["outcome"]) for r in rows]
want = {("PASS-L1-001", "1", "complete"), ("RETRY-L1-002", "1", "failed"),
        ("RETRY-L1-002", "2", "complete"), ("KILL-L1-003", "1", "crashed"),
        ("KILL-L1-003", "2", "complete"), ("NEXT-L2-001", "1", "complete")}
assert len(got) == 6 and set(got) == want, got
starts = [r["start"] for r in rows]
assert starts == sorted(starts), "not in start order: %s" % starts
assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", s) for s in starts), starts
assert all(re.fullmatch(r"\d+\.\d{3}", r["runtime"]) for r in rows), rows
started = {}
for line in open(proj + "/.zerg/monitor.jsonl"):
    e = json.loads(line)
    if e["event"] == "task_started":
        started[(e["task"], str(e["data"]["attempt"]))] = e["worker"]
by = {(r["task"], r["attempt"]): r for r in rows}
for key, r in by.items():
    assert int(r["worker"]) == started[key], (key, r, started)
    assert r["cost"] == "-", r
    if r["outcome"] == "complete":
        assert r["exit"] == "0" and r["class"] == "-", r
        assert re.fullmatch(r"[0-9a-f]{12}", r["commit"]), r
        body = subprocess.run(["git", "-C", proj, "log", "-1", "--format=%B", r["commit"]],
                              capture_output=True, text=True, check=True).stdout
        assert "Task-ID: %s" % r["task"] in body, (r, body)
f = by[("RETRY-L1-002", "1")]
assert (f["exit"], f["class"], f["commit"]) == ("3", "task", "-"), f
k = by[("KILL-L1-003", "1")]
assert (k["exit"], k["class"], k["commit"]) == ("sig9", "crash", "-"), k
assert int(k["worker"]) == victim, (k, victim)
PY
pass "one row per attempt: outcome, attempt, worker, exit, class and commit right; loads with csv"

zerg logs --joblog --task KILL-L1-003 > "$PROJ/one.tsv" || fail "--joblog --task exited $?"
[ "$(wc -l < "$PROJ/one.tsv")" = 3 ] || fail "--task: $(cat "$PROJ/one.tsv")"
[ "$(cut -f1,2,7 "$PROJ/one.tsv" | tail -n +2 | tr '\t\n' ' ')" = "KILL-L1-003 1 crashed KILL-L1-003 2 complete " ] ||
    fail "--task rows: $(cat "$PROJ/one.tsv")"
zerg logs --joblog --task NO-SUCH-TASK > "$PROJ/none.tsv" || fail "--task of no attempt exited $?"
[ "$(wc -l < "$PROJ/none.tsv")" = 1 ] || fail "--task of no attempt: $(cat "$PROJ/none.tsv")"
pass "--task keeps only that task's attempts"

zerg logs --joblog --json > "$PROJ/joblog.jsonl" || fail "--joblog --json exited $?"
python3 - "$PROJ" <<'PY' || fail "--json rows: $(cat "$PROJ/joblog.jsonl")"
import csv, json, sys
proj = sys.argv[1]
tsv = list(csv.DictReader(open(proj + "/joblog.tsv", newline=""), delimiter="\t"))
js = [json.loads(l) for l in open(proj + "/joblog.jsonl")]
assert [(j["task"], j["attempt"], j["outcome"]) for j in js] == \
       [(r["task"], int(r["attempt"]), r["outcome"]) for r in tsv], js
k = [j for j in js if j["outcome"] == "crashed"][0]
assert k["exit"] is None and k["signal"] == 9 and k["commit"] is None, k
PY
pass "--json gives the same rows as JSON lines"

rc=0
zerg logs --joblog --follow > /dev/null 2>&1 || rc=$?
[ $rc = 2 ] || fail "--joblog --follow: exit $rc, not 2"
pass "--joblog with another filter is a usage error"
zerg --feature other logs --joblog > "$PROJ/other.tsv" || fail "--feature other exited $?"
[ "$(wc -l < "$PROJ/other.tsv")" = 1 ] || fail "another feature's joblog: $(cat "$PROJ/other.tsv")"
pass "--feature: a feature that never ran has the header only"
echo "$TESTS_PASSED passed, 0 failed"
