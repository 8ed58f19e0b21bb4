#!/usr/bin/env bash
# chaos.sh - the long chaos suite (`make chaos`): several seeded runs.
set -euo pipefail
: "${ZERG:?}"
secs=${CHAOS_SECONDS:-300}
here=$(dirname "$0")
end=$(( $(date +%s) + secs ))
runs=0
while [ "$(date +%s)" -lt "$end" ]; do
    python3 "$here/chaos.py" "$ZERG" --seconds 30 --tasks 400 --workers 8 --kill-orchestrator --spawn-failures --disk-full
    python3 "$here/chaos.py" "$ZERG" --mode two-features --ids same --seconds 30 --tasks 400 --workers 4
    python3 "$here/chaos.py" "$ZERG" --mode two-features --ids different --seconds 30 --tasks 300 --workers 4
    python3 "$here/chaos.py" "$ZERG" --mode hostile --seconds 120 --tasks 150 --workers 4
    python3 "$here/chaos.py" "$ZERG" --mode git --seconds 60 --tasks 200 --levels 5 --workers 4 --kill-orchestrator
    python3 "$here/chaos.py" "$ZERG" --mode stop --seconds 60 --tasks 150 --levels 6 --workers 6 --min-stops 5
    runs=$((runs + 6))
done
echo "$runs passed, 0 failed"
