#!/usr/bin/env bash
# `zerg status` tells the truth after the rush died (kill -9): the workers
# it recorded as busy are shown as gone, the health is failing with the
# reason (interrupted) and the way on; a level with failed tasks never
# reads as done ("1/2 (1 failed)", JSON done/failed apart), and the
# current level is never past the last one.
source "$(dirname "$0")/lib.sh"

new_project killed
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "K-L1-001", "level": 1, "command": "sleep 1000"},
 {"id": "K-L1-002", "level": 1, "command": "sleep 1000"}
]}
JSON
rush_bg --workers 2
wait_for 30 task_running K-L1-001
wait_for 30 task_running K-L1-002
# A checkpoint that records both workers busy.
two_busy() {
    python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
sys.exit(sum(w["status"] == "busy" for w in d["workers"].values()) != 2)' "$PROJ/.zerg/state/f.json"
}
wait_for 30 two_busy
kill -9 "$RUSH_PID"
wait "$RUSH_PID" 2>/dev/null || true
RUSH_PID=""
cleanup_procs
zerg status > "$PROJ/st.txt" 2>&1 || fail "status exited $?: $(cat "$PROJ/st.txt")"
grep -q 'interrupted' "$PROJ/st.txt" || fail "status does not say the run was interrupted: $(cat "$PROJ/st.txt")"
grep -q '^Health: failing' "$PROJ/st.txt" || fail "health is not failing: $(cat "$PROJ/st.txt")"
grep -q 'zerg rush --resume' "$PROJ/st.txt" || fail "no way on"
! grep -qE '^ +[0-9]+ +busy' "$PROJ/st.txt" || fail "a dead worker is shown busy: $(cat "$PROJ/st.txt")"
[ "$(grep -cE '^ +[0-9]+ +gone' "$PROJ/st.txt")" = 2 ] || fail "the workers are not shown gone: $(cat "$PROJ/st.txt")"
zerg status --json > "$PROJ/st.json" || fail "status --json exited $?"
python3 - "$PROJ/st.json" <<'PY' || fail "status --json: $(cat "$PROJ/st.json")"
import json, sys
d = json.load(open(sys.argv[1]))
ws = d["workers"]
assert all(w["status"] == "gone" and w["recorded_status"] == "busy" for w in ws.values()), ws
assert d["health"]["verdict"] == "failing", d["health"]
assert any("interrupted" in r for r in d["health"]["reasons"]), d["health"]
PY
pass "after kill -9 status shows the workers gone and the run interrupted"

new_project counts
config_append "  retry_attempts: 0"
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "C-L1-001", "level": 1, "command": "true"},
 {"id": "C-L1-002", "level": 1, "command": "false"}
]}
JSON
zerg rush --workers 2 > "$PROJ/out.txt" 2>&1 && fail "a rush with a failing task exited 0"
zerg status > "$PROJ/st.txt" 2>&1 || fail "status exited $?"
grep -q 'Levels: 1: 1/2 (1 failed)' "$PROJ/st.txt" || fail "the level reads as done: $(grep Levels "$PROJ/st.txt")"
grep -q 'level 1 of 1' "$PROJ/st.txt" || fail "current level past the last: $(head -1 "$PROJ/st.txt")"
zerg status --json > "$PROJ/st.json"
python3 - "$PROJ/st.json" <<'PY' || fail "status --json levels: $(cat "$PROJ/st.json")"
import json, sys
d = json.load(open(sys.argv[1]))
lv = d["levels"][0]
assert (lv["done"], lv["failed"], lv["blocked"], lv["total"]) == (1, 1, 0, 2), lv
assert d["current_level"] <= d["nlevels"], (d["current_level"], d["nlevels"])
PY
pass "failed tasks are counted apart, the current level stays within the graph"
echo "$TESTS_PASSED passed, 0 failed"
