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
    runs=$((runs + 1))
done
echo "$runs passed, 0 failed"
