#!/usr/bin/env bash
# The short chaos run for CI: random worker kills and freezes, corrupted
# heartbeats, orchestrator kills with --resume, failing spawns and a full
# disk under .zerg/state during few-hundred-task rushes, then the
# invariants (see tests/chaos/chaos.py).  `make chaos` runs the long version.
source "$(dirname "$0")/lib.sh"
python3 "$(dirname "$0")/../chaos/chaos.py" "$ZERG" --seconds 12 --tasks 300 --workers 6 ||
    fail "chaos invariants violated (seed above)"
pass "chaos: worker kills"
python3 "$(dirname "$0")/../chaos/chaos.py" "$ZERG" --seconds 12 --tasks 200 --workers 4 --kill-orchestrator ||
    fail "chaos invariants violated with orchestrator kills (seed above)"
pass "chaos: orchestrator kills and resume"
python3 "$(dirname "$0")/../chaos/chaos.py" "$ZERG" --seconds 10 --tasks 200 --workers 4 --spawn-failures --disk-full ||
    fail "chaos invariants violated with failing spawns and a full disk (seed above)"
pass "chaos: failing spawns, full disk, corrupt heartbeats"
echo "$TESTS_PASSED passed, 0 failed"
