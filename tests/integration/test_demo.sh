#!/usr/bin/env bash
# `make demo` as a user runs it (scripts/demo.sh), on a copy of
# examples/demo: the rush completes although a worker is killed mid-task,
# and the crash is recovered (reassigned uncharged, worker respawned).
source "$(dirname "$0")/lib.sh"
src=${ZERG_SOURCE_DIR:?}

PROJ="$TEST_ROOT/demo"
cp -r "$src/examples/demo" "$PROJ"
rm -rf "$PROJ/.zerg/state" "$PROJ/.zerg/logs" "$PROJ"/.zerg/monitor.* "$PROJ/site"
bash "$src/scripts/demo.sh" "$ZERG" "$PROJ" > "$PROJ/demo.out" 2>&1 ||
    fail "demo.sh exited $?: $(tail -20 "$PROJ/demo.out")"
grep -q '>>> demo: kill -9 worker' "$PROJ/demo.out" || fail "no crash was staged"
has_event worker_crash || fail "no worker_crash event"
has_event task_reassigned || fail "no task_reassigned event"
[ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tasks"]["DEMO-L2-002"]["retry_count"])' "$PROJ/.zerg/state/demo.json")" = 0 ] ||
    fail "the crash was charged to DEMO-L2-002"
ls "$PROJ/site" > /dev/null || fail "the demo built no site"
pass "make demo: a worker killed mid-task is recovered and the rush completes"
echo "$TESTS_PASSED passed, 0 failed"
