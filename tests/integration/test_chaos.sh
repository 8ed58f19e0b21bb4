#!/usr/bin/env bash
# The short chaos run for CI: random worker kills and freezes, corrupted
# heartbeats, orchestrator kills with --resume, failing spawns and a full
# disk under .zerg/state during few-hundred-task rushes; two features
# rushed at once in one project (same and different task ids) under
# worker and orchestrator kills and a `zerg stop --force` of one; tasks
# that attack zerg's own files; a real git repository under worktree
# isolation with tasks failing on purpose and SIGKILLs of workers, their
# process groups, git itself and the orchestrator while git runs.  Then
# the invariants (see tests/chaos/chaos.py and chaos_git.py).  A run passes only if every kind of injection it
# enables really happened and zerg never ended in a way no resume may hide
# (a stray signal, an exit >= 128, exit 2/3, a sanitizer report, a hang).
# `make chaos` runs the long version.
source "$(dirname "$0")/lib.sh"
CHAOS="$(dirname "$0")/../chaos/chaos.py"
chaos() { python3 "$CHAOS" "$ZERG" "$@"; }

chaos --seconds 12 --tasks 300 --workers 6 ||
    fail "chaos invariants violated (seed above)"
pass "chaos: worker kills"
chaos --seconds 12 --tasks 200 --workers 4 --kill-orchestrator ||
    fail "chaos invariants violated with orchestrator kills (seed above)"
pass "chaos: orchestrator kills and resume"
chaos --seconds 10 --tasks 200 --workers 4 --spawn-failures --disk-full ||
    fail "chaos invariants violated with failing spawns and a full disk (seed above)"
pass "chaos: failing spawns, full disk, corrupt heartbeats"
chaos --mode two-features --ids same --seconds 12 --tasks 100 --workers 3 ||
    fail "two features with the same task ids (seed above)"
pass "chaos: two features, same task ids, kills and stop --force of one"
chaos --mode two-features --ids different --seconds 12 --tasks 80 --workers 2 ||
    fail "two features with different task ids (seed above)"
pass "chaos: two features, different task ids"
chaos --mode hostile --seconds 60 --tasks 45 --workers 3 ||
    fail "hostile tasks (seed above)"
pass "chaos: hostile tasks against zerg's own files"
chaos --mode git --seconds 30 --tasks 60 --levels 4 --workers 3 --kill-orchestrator ||
    fail "kills inside git under worktree isolation (seed above)"
pass "chaos: kills inside git, failing tasks, orchestrator kills in a worktree run"
echo "$TESTS_PASSED passed, 0 failed"
