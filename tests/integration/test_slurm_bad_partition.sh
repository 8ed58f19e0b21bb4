#!/usr/bin/env bash
# A partition that does not exist is a permanent spawn failure: the rush
# exits 1 at once with srun's message and which setting to check, and
# never retries (no worker_spawn_retry, no srun started per attempt).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-slurm.sh"

new_project badpart
sed -i '1i rush:\n  isolation: none' "$PROJ/.zerg/config.yaml"
sed -i '1i slurm:\n  partition: no-such-partition' "$PROJ/.zerg/config.yaml"
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "A-L1-001", "level": 1, "command": "true"},
 {"id": "B-L1-002", "level": 1, "command": "true"}
]}
JSON
start=$(date +%s)
rc=0
timeout 60 "$ZERG" -C "$PROJ" rush --mode slurm --workers 2 --no-progress > "$PROJ/out.txt" 2>&1 || rc=$?
took=$(($(date +%s) - start))
[ $rc -eq 1 ] || fail "expected exit 1, got $rc: $(cat "$PROJ/out.txt")"
echo "# a bad partition: over in ${took}s"
grep -qi 'partition' "$PROJ/out.txt" || fail "the message does not name the partition: $(cat "$PROJ/out.txt")"
grep -q 'slurm.partition' "$PROJ/out.txt" "$PROJ/.zerg/monitor.log" || fail "no hint at slurm.partition"
[ "$(events worker_spawn_retry)" -eq 0 ] || fail "$(events worker_spawn_retry) spawn retries for a permanent error"
[ "$(events worker_spawn_failed)" -eq 2 ] || fail "expected 2 worker_spawn_failed, got $(events worker_spawn_failed)"
grep '"event":"worker_spawn_failed"' "$PROJ/.zerg/monitor.jsonl" | grep -q '"permanent":true' ||
    fail "spawn failure not permanent"
attempts=$(cat "$PROJ"/.zerg/logs/f/worker-*.log 2>/dev/null | grep -c '=== zerg: worker' || true)
[ "$attempts" -eq 0 ] || fail "$attempts srun attempts in .zerg/logs/f (expected none)"
pass "unknown partition: exit 1 in ${took}s, permanent, no retry storm"
