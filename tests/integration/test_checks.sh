#!/usr/bin/env bash
# Which check verified a task: `zerg status`, `zerg status --json` and
# `zerg report` show, per task, its verification command or that only its
# command's exit code was checked; tasks sharing a check are grouped.
source "$(dirname "$0")/lib.sh"

new_project checks
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "VER-L1-001", "level": 1, "command": "echo v > v1.txt",
  "verification": {"command": "test -s v1.txt"}},
 {"id": "EXIT-L1-002", "level": 1, "command": "echo e > e.txt"},
 {"id": "VER-L2-001", "level": 2, "dependencies": ["VER-L1-001"],
  "command": "echo w > w.txt", "verification": {"command": "grep -q '<b>' w.txt || test -s w.txt"}}
]}
JSON
zerg rush --workers 2 > "$PROJ/rush.out" 2>&1 || fail "rush exited $?: $(cat "$PROJ/rush.out")"

zerg status > "$PROJ/status.txt" || true
grep -qx 'Checks:' "$PROJ/status.txt" || fail "no Checks section: $(cat "$PROJ/status.txt")"
grep -qxF '  verification: test -s v1.txt -- VER-L1-001' "$PROJ/status.txt" ||
    fail "verification line: $(cat "$PROJ/status.txt")"
grep -qxF "  verification: grep -q '<b>' w.txt || test -s w.txt -- VER-L2-001" "$PROJ/status.txt" ||
    fail "second verification line: $(cat "$PROJ/status.txt")"
grep -qxF '  command exit code only -- EXIT-L1-002' "$PROJ/status.txt" ||
    fail "exit code line: $(cat "$PROJ/status.txt")"
pass "status names each task's check"

zerg status --json | python3 -c '
import json, sys
c = json.load(sys.stdin)["checks"]
got = {(g["kind"], g["check"], tuple(g["tasks"]), g["count"]) for g in c}
want = {("verification", "test -s v1.txt", ("VER-L1-001",), 1),
        ("verification", "grep -q '"'"'<b>'"'"' w.txt || test -s w.txt", ("VER-L2-001",), 1),
        ("exit_code", "command exit code only", ("EXIT-L1-002",), 1)}
assert got == want, c' || fail "status --json checks"
pass "status --json has the checks, tasks grouped by check"

zerg report -o "$PROJ/r.html" > /dev/null || fail "report exited $?"
grep -q '<th>verified by</th>' "$PROJ/r.html" || fail "report lacks the verified-by column"
grep -qF '<td><code>test -s v1.txt</code></td>' "$PROJ/r.html" || fail "report: verification cell"
grep -qF '<td><code>grep -q &#39;&lt;b&gt;&#39; w.txt || test -s w.txt</code></td>' "$PROJ/r.html" ||
    fail "report: the check is not escaped: $(grep -o '<code>[^/]*' "$PROJ/r.html")"
grep -qF '<td>command exit code only</td>' "$PROJ/r.html" || fail "report: exit code cell"
pass "the report's task table says which check verified each task"
echo "$TESTS_PASSED passed, 0 failed"
