#!/usr/bin/env bash
# FR-1: a worker that fails to start is retried with backoff; a worker that
# never starts ends the rush with exit 1 in bounded time and says why.
source "$(dirname "$0")/lib.sh"

new_project flaky
cat > "$PROJ/flaky-prefix.sh" <<'SH'
#!/bin/sh
# Fails the first two launches, then runs the worker.
n=$(cat "$(dirname "$0")/count" 2>/dev/null || echo 0)
echo $((n + 1)) > "$(dirname "$0")/count"
[ "$n" -ge 2 ] || { echo "simulated launch failure $n" >&2; exit 1; }
exec "$@"
SH
chmod +x "$PROJ/flaky-prefix.sh"
config_append "  launch_prefix: [\"$PROJ/flaky-prefix.sh\"]"
gen_graph 1 3 "echo {id} > {id}.out"
zerg rush --workers 1 > "$PROJ/out.txt" 2>&1 || fail "rush exited $?"
[ "$(events worker_spawn_retry)" -eq 2 ] || fail "expected 2 worker_spawn_retry events, got $(events worker_spawn_retry)"
grep '"event":"worker_spawn_retry"' "$PROJ/.zerg/monitor.jsonl" | head -1 | grep -q '"attempt":1' || fail "attempt not logged"
grep '"event":"worker_spawn_retry"' "$PROJ/.zerg/monitor.jsonl" | head -1 | grep -q '"delay":' || fail "delay not logged"
[ "$(state_field metrics.spawn_retries)" -eq 2 ] || fail "metrics.spawn_retries"
pass "spawn fails twice, then succeeds; each retry logged with attempt and delay"

new_project never
cat > "$PROJ/bad-prefix.sh" <<'SH'
#!/bin/sh
echo "cannot start: simulated" >&2
exit 1
SH
chmod +x "$PROJ/bad-prefix.sh"
config_append "  launch_prefix: [\"$PROJ/bad-prefix.sh\"]"
gen_graph 1 2 "true"
start=$(date +%s)
rc=0
zerg rush --workers 2 > "$PROJ/out.txt" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "expected exit 1, got $rc"
[ $(( $(date +%s) - start )) -lt 30 ] || fail "took too long"
[ "$(events worker_spawn_failed)" -eq 2 ] || fail "expected 2 worker_spawn_failed"
grep -q "no worker is left" "$PROJ/out.txt" || fail "summary does not say why: $(cat "$PROJ/out.txt")"
grep -q "worker-" "$PROJ/out.txt" "$PROJ/.zerg/monitor.log" || fail "no hint where to look"
pass "spawn never succeeds: exit 1, bounded time, clear message"

new_project missing
config_append "  launch_prefix: [\"/nonexistent/wrapper\"]"
gen_graph 1 1 "true"
rc=0
zerg rush --workers 1 > "$PROJ/out.txt" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "expected exit 1, got $rc"
[ "$(events worker_spawn_retry)" -eq 0 ] || fail "a missing binary must not be retried"
grep -q "/nonexistent/wrapper" "$PROJ/.zerg/monitor.log" || fail "message does not name the binary"
pass "a launcher that does not exist fails fast, without a retry storm"
new_project partial
cat > "$PROJ/one-bad-slot.sh" <<'SH'
#!/bin/sh
# Worker slot 1 can never start; slot 0 can.
case " $* " in *" --slot 1 "*) echo "slot 1 is broken" >&2; exit 1 ;; esac
exec "$@"
SH
chmod +x "$PROJ/one-bad-slot.sh"
config_append "  launch_prefix: [\"$PROJ/one-bad-slot.sh\"]"
gen_graph 2 3 "sleep 0.3; echo {id} > {id}.out"
zerg rush --workers 2 > "$PROJ/out.txt" 2>&1 || fail "a rush with one broken slot exited $?"
has_event worker_pool_reduced || fail "no worker_pool_reduced event"
grep -q "Continuing with 1 of 2 workers" "$PROJ/.zerg/monitor.log" || fail "the log does not say the pool shrank"
pass "fewer workers than asked: the rush continues and says so"
echo "$TESTS_PASSED passed, 0 failed"
