#!/usr/bin/env bash
# DESIGN §19 under fire: the orchestrator SIGSTOPped and SIGCONTed again
# and again during a rush of several levels (for longer than the lease,
# workers.lease_stale_seconds at 2 s, and shorter; also while it runs git
# to merge a task and right after a level completed), under worktree
# isolation and without.  The rush must end with every task complete and
# uncharged, no worker gone as orphaned, crashed or stale, an
# orchestrator_slow inside every long stop, no sanitizer report; then
# its orchestrator killed for real while stopped, and its workers must
# leave on their own (see tests/chaos/chaos_stop.py).  A run with fewer
# long stops than --min-stops fails.
source "$(dirname "$0")/lib.sh"
CHAOS="$(dirname "$0")/../chaos/chaos.py"
chaos() { python3 "$CHAOS" "$ZERG" --mode stop "$@"; }

chaos --isolation worktree --seconds 25 --tasks 60 --levels 5 --workers 4 --min-stops 3 ||
    fail "a stopped orchestrator under worktree isolation (seed above)"
pass "chaos: orchestrator stopped past the lease, in merges and level changes, worktree"
chaos --isolation none --seconds 12 --tasks 40 --levels 4 --workers 3 --min-stops 2 ||
    fail "a stopped orchestrator without isolation (seed above)"
pass "chaos: orchestrator stopped past the lease, no isolation"
echo "$TESTS_PASSED passed, 0 failed"
