#!/usr/bin/env bash
# slurm_latency.sh - spawn->ready and kill->reassign latency of a worker
# under slurm (a one-node cluster on localhost, tests/integration/
# lib-slurm.sh) next to subprocess, and container when a runtime works.
#
#   ZERG=build/zerg bench/slurm_latency.sh [ROUNDS]
#
# spawn->ready: the worker_ready event's startup_ms (spawn call to first
# heartbeat), over every worker of ROUNDS rushes of 2 workers.
# kill->reassign: a busy worker is killed (kill -9 of the worker process;
# under slurm `scancel` of its job; under container `RUNTIME kill`) and the
# time to the task_reassigned event is taken from monitor.jsonl.
# Prints one line per mode: median and max of each, in ms.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ROUNDS=${1:-5}
export ZERG=${ZERG:-$here/../build/zerg}
source "$here/../tests/integration/lib.sh"
source "$here/../tests/integration/lib-slurm.sh"

now_ms() { date +%s%3N; }

bench_project() {
    new_project "$1-$2"
    sed -i '1i rush:\n  isolation: none' "$PROJ/.zerg/config.yaml"
    graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "A-L1-001", "level": 1, "command": "if [ ! -f first ]; then touch first; sleep 300; fi"},
 {"id": "B-L1-002", "level": 1, "command": "true"}
]}
JSON
}

# kill_busy MODE: kills the worker running A-L1-001.
kill_busy() {
    local slot
    slot=$(slot_of A-L1-001)
    case $1 in
    slurm) scancel "$(squeue -h --name "zerg-f-w$slot" -o %i | head -n 1)" ;;
    container) "$ZC_RT" kill "$(grep '"event":"worker_spawn"' "$PROJ/.zerg/monitor.jsonl" |
        grep "\"worker\":$slot" | tail -1 | sed 's/.*"container":"\([^"]*\)".*/\1/')" >/dev/null ;;
    *) kill -9 "$(worker_pid "$slot")" ;;
    esac
}

# One rush: prints "startup_ms..." then "reassign_ms".
one_round() {
    local mode=$1 t0
    bench_project "$mode" "$2"
    rush_bg --mode "$mode" --workers 2 --no-progress
    wait_for 60 task_running A-L1-001
    wait_for 10 test -f "$PROJ/first"
    t0=$(now_ms)
    kill_busy "$mode"
    wait_for 60 has_event task_reassigned
    rush_wait 120
    python3 - "$PROJ/.zerg/monitor.jsonl" "$t0" <<'PY'
import json, sys, datetime
ready, reassign = [], None
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["event"] == "worker_ready":
        ready.append(e["data"]["startup_ms"])
    if e["event"] == "task_reassigned" and reassign is None:
        ts = datetime.datetime.strptime(e["ts"], "%Y-%m-%dT%H:%M:%S.%fZ")
        ms = ts.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000
        reassign = ms - int(sys.argv[2])
print(" ".join("%.1f" % r for r in ready))
print("%.1f" % reassign)
PY
}

report() {
    python3 - "$@" <<'PY'
import statistics, sys
mode, ready, kill = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
r = [float(x) for x in ready]; k = [float(x) for x in kill]
print("%-10s spawn->ready median %7.1f ms max %7.1f ms (n=%d) | "
      "kill->reassign median %7.1f ms max %7.1f ms (n=%d)"
      % (mode, statistics.median(r), max(r), len(r),
         statistics.median(k), max(k), len(k)))
PY
}

modes=${BENCH_MODES:-subprocess slurm}
ZC_RT=""
for rt in podman docker; do
    if command -v "$rt" >/dev/null && "$rt" image exists zerg-worker 2>/dev/null; then
        ZC_RT=$rt
        modes="$modes container"
        break
    fi
done
for mode in $modes; do
    ready="" kills=""
    for i in $(seq "$ROUNDS"); do
        out=$(one_round "$mode" "$i")
        ready="$ready $(echo "$out" | head -n 1)"
        kills="$kills $(echo "$out" | tail -n 1)"
    done
    report "$mode" "$ready" "$kills"
done
