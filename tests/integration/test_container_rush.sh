#!/usr/bin/env bash
# Container mode end to end with the real runtime, $ZC_RUNTIME = podman or
# docker (never skipped):
# a full rush; FR-7 (a task reads the graph inside its container, the spec
# directory is read-only); a container killed mid-task is replaced and its
# task reassigned; a runtime whose first two `run` calls fail is retried
# with logged backoff; a missing image fails fast; containers left by a
# killed orchestrator are removed by the next rush.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-container.sh"
zc_setup

# --- a full rush, FR-7 ---
new_project full
zc_config "$PROJ"
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "C-L1-001", "level": 1,
  "command": "grep -q C-L1-001 .gsd/specs/f/task-graph.json && echo read > fr7.txt"},
 {"id": "C-L1-002", "level": 1,
  "command": "if touch .gsd/specs/f/x 2>/dev/null; then exit 1; fi; echo ro > ro.txt"},
 {"id": "C-L2-001", "level": 2, "dependencies": ["C-L1-001", "C-L1-002"],
  "command": "cat fr7.txt ro.txt > both.txt"}
]}
JSON
zerg rush --mode container --workers 2 > "$PROJ/out.txt" 2>&1 || fail "container rush exited $?: $(cat "$PROJ/out.txt")"
[ "$(cat "$PROJ/both.txt" | tr '\n' ' ')" = "read ro " ] || fail "tasks did not run as expected"
grep -q '"mode":"container"' "$PROJ/.zerg/monitor.jsonl" || fail "rush_start does not say container mode"
zc_assert_no_containers "$PROJ" f
pass "full container rush; the graph is readable and read-only inside (FR-7); no container left"

# --- kill a container mid-task ---
new_project kill
zc_config "$PROJ"
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "K-L1-001", "level": 1,
  "command": "if [ ! -f once ]; then touch once; sleep 300; fi; echo ok > k.txt"},
 {"id": "K-L1-002", "level": 1, "command": "true"}
]}
JSON
rush_bg --mode container --workers 2
wait_for 60 task_running K-L1-001
wait_for 10 test -f "$PROJ/once"
slot=$(slot_of K-L1-001)
name=$(zc_containers "$PROJ" f | grep -- "-w$slot-" | head -1)
[ -n "$name" ] || fail "no container for slot $slot"
zc_rt kill --signal KILL "$name" >/dev/null
rush_wait 120
[ "$RUSH_RC" -eq 0 ] || fail "rush exited $RUSH_RC"
[ "$(task_status K-L1-001)" = complete ] || fail "task not finished"
[ "$(task_status K-L1-001 retry_count)" -eq 0 ] || fail "container kill charged the task"
has_event task_reassigned || fail "no task_reassigned"
has_event worker_respawn || fail "no worker_respawn"
zc_assert_no_containers "$PROJ" f
pass "container killed mid-task: task reassigned uncharged, worker replaced"

# --- a runtime that fails its first two `run` calls ---
new_project flaky
cat > "$PROJ/flaky-podman" <<SH
#!/bin/sh
# Behaves like $ZC_RUNTIME, except that the first two \`run\` calls fail
# the way a daemon hiccup does.
if [ "\$1" = run ]; then
    n=\$(cat "$PROJ/runs" 2>/dev/null || echo 0)
    echo \$((n + 1)) > "$PROJ/runs"
    if [ "\$n" -lt 2 ]; then echo "Error: simulated runtime hiccup" >&2; exit 125; fi
fi
exec $ZC_RUNTIME "\$@"
SH
chmod +x "$PROJ/flaky-podman"
zc_config "$PROJ"
sed -i "s|^  runtime: .*|  runtime: \"$PROJ/flaky-podman\"|" "$PROJ/.zerg/config.yaml"
grep -q flaky-podman "$PROJ/.zerg/config.yaml" || fail "could not set the runtime"
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "F-L1-001", "level": 1, "command": "true"}]}
JSON
zerg rush --mode container --workers 1 > "$PROJ/out.txt" 2>&1 || fail "rush exited $?: $(cat "$PROJ/out.txt")"
[ "$(events worker_spawn_retry)" -eq 2 ] || fail "expected 2 spawn retries, got $(events worker_spawn_retry)"
grep '"event":"worker_spawn_retry"' "$PROJ/.zerg/monitor.jsonl" | grep -q '"delay"' || fail "no delay logged"
grep -q "simulated runtime hiccup" "$PROJ/.zerg/monitor.log" || fail "the runtime's error is not in the log"
pass "runtime failing its first two run calls: retried with logged backoff"

# --- a missing image ---
new_project noimage
zc_config "$PROJ"
sed -i 's|^  image: .*|  image: "zerg-no-such-image"|' "$PROJ/.zerg/config.yaml"
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "N-L1-001", "level": 1, "command": "true"}]}
JSON
rc=0
start=$(date +%s)
zerg rush --mode container --workers 2 > "$PROJ/out.txt" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "missing image: expected exit 1, got $rc"
[ "$(events worker_spawn_retry)" -eq 0 ] || fail "a missing image must not be retried"
grep -q "make image" "$PROJ/.zerg/monitor.log" "$PROJ/out.txt" || fail "no fix in the message"
[ $(( $(date +%s) - start )) -lt 30 ] || fail "missing image took too long"
pass "missing image: exit 1, the fix in the message, no retry storm"

# --- containers left by a killed orchestrator ---
new_project left
zc_config "$PROJ"
gen_graph 1 2 "sleep 600"
rush_bg --mode container --workers 2
wait_for 60 task_running T-L1-000
before=$(zc_containers "$PROJ" f)
[ -n "$before" ] || fail "no container found for the running rush"
kill -9 "$RUSH_PID"; wait "$RUSH_PID" 2>/dev/null || true; RUSH_PID=""
gen_graph 1 1 "true"
rm -f "$PROJ/.zerg/state/f.json"
zerg rush --mode container --workers 1 > "$PROJ/out.txt" 2>&1 || fail "next rush exited $?"
after=$(zc_rt ps -a --format '{{.Names}}')
for name in $before; do
    ! grep -qx "$name" <<< "$after" || fail "container $name of the killed rush is still there"
done
zc_assert_no_containers "$PROJ" f
pass "the next rush removes containers left by a killed orchestrator"
# --- --mode auto: container when a runtime really works, else subprocess ---
new_project auto
zerg_cfg_image() { sed -i "s|^  image: .*|  image: \"$1\"|" "$PROJ/.zerg/config.yaml"; }
zc_config "$PROJ"
gen_graph 1 1 true
zerg rush --mode auto --workers 1 > "$PROJ/out.txt" 2>&1 || fail "auto rush exited $?"
grep '"event":"mode_selected"' "$PROJ/.zerg/monitor.jsonl" | grep -q "using container" ||
    fail "auto did not pick container mode with a working runtime and image"
zerg_cfg_image zerg-no-such-image
zerg rush --fresh --mode auto --workers 1 > "$PROJ/out.txt" 2>&1 || fail "auto rush exited $?"
grep '"event":"mode_selected"' "$PROJ/.zerg/monitor.jsonl" | tail -1 | grep -q "using subprocess" ||
    fail "auto did not fall back to subprocess mode without the image"
grep '"event":"mode_selected"' "$PROJ/.zerg/monitor.jsonl" | tail -1 | grep -q "zerg-no-such-image" ||
    fail "auto does not say why it chose subprocess mode"
pass "--mode auto probes the runtime and the image, and says which mode and why"
echo "$TESTS_PASSED passed, 0 failed"
