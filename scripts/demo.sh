#!/usr/bin/env bash
# demo.sh - a real rush on examples/demo with a worker crash recovered live.
#   scripts/demo.sh path/to/zerg [DEMO_DIR]
# Starts `zerg rush` on the bundled 3-level example (or a copy of it in
# DEMO_DIR) with 3 workers, waits until the slow task DEMO-L2-002 is
# running, kills its worker with SIGKILL, and lets zerg reassign the task
# and respawn the worker.  Exits non-zero when the rush fails or the crash
# could not be staged.
set -euo pipefail
zerg=$(realpath "${1:-build/zerg}")
demo=$(cd "${2:-$(dirname "$0")/../examples/demo}" && pwd)
cd "$demo"
feature=$(cat .gsd/.current-feature)
rm -rf .zerg/state .zerg/logs .zerg/monitor.log .zerg/monitor.jsonl site

echo "== zerg validate"
"$zerg" validate
echo
echo "== zerg rush --workers 3 (a worker will be killed mid-task)"
"$zerg" rush --workers 3 &
rush=$!

victim=""
for _ in $(seq 1 200); do
    if [ -f .zerg/monitor.jsonl ] &&
        grep -q '"event":"task_started".*"task":"DEMO-L2-002"\|"task":"DEMO-L2-002".*"event":"task_started"' .zerg/monitor.jsonl; then
        slot=$(grep '"event":"task_claimed"' .zerg/monitor.jsonl |
            grep '"task":"DEMO-L2-002"' | tail -1 |
            sed 's/.*"worker":\([0-9]*\).*/\1/')
        victim=$(sed 's/.*"pid":\([0-9]*\).*/\1/' \
            ".zerg/state/$feature/heartbeat-$slot.json")
        break
    fi
    sleep 0.1
done
if [ -z "$victim" ]; then
    echo "demo.sh: DEMO-L2-002 never started; no crash staged" >&2
    kill "$rush" 2>/dev/null || true
    exit 1
fi
sleep 0.5
echo ">>> demo: kill -9 worker $slot (pid $victim) while it runs DEMO-L2-002"
kill -9 "$victim" || true
rc=0
wait "$rush" || rc=$?
echo
echo "== zerg status"
"$zerg" status || true
echo
echo "== the recovery, from .zerg/monitor.log"
grep -E 'crash|reassign|respawn' .zerg/monitor.log || true
echo
echo "== the site zerg built"
ls site
exit "$rc"
