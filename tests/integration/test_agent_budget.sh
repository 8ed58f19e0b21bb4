#!/usr/bin/env bash
# rush.max_cost_usd end to end (DESIGN §14, docs/wiki/Agents.md): the REAL
# Claude Code CLI (scripts/install-claude.sh) against the scripted Messages
# API of tests/agent/fake_messages_api.py, the only executor that reports
# a cost.  Two level-1 agent tasks run on two workers; the first one's
# spend passes the cap while the second still runs:
#   - budget_exhausted is logged, the running task finishes (complete),
#   - the level-2 task is never claimed,
#   - the rush exits 1 with the documented message;
#   - raised, `zerg rush --resume` runs the rest;
#   - spend in flight counts (DESIGN §20): an attempt still running, priced
#     by executor.pricing from the tokens it streamed, passes the cap and
#     rush.cost_cap_action: stop stops it (pending, uncharged).
# No timing: the first task waits until the second has started, the second
# until budget_exhausted (logged before the first's task_complete) or the
# first's task_complete is in the log.  A CLI that cannot be installed
# fails the test.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-agent.sh"

agent_cli

# The Bash turns poll for what they wait on (at most 120 s, then fail).
a_waits='i=0; until [ -e b.started ] || [ $i -ge 1200 ]; do sleep 0.1; i=$((i+1)); done; [ -e b.started ]'
b_waits='touch b.started; i=0; until grep -qE "\"event\":\"budget_exhausted\"|\"event\":\"task_complete\",\"task\":\"B-L1-001\"" .zerg/monitor.jsonl || [ $i -ge 1200 ]; do sleep 0.1; i=$((i+1)); done'
python3 - "$a_waits" "$b_waits" > "$TEST_ROOT/scenario.json" <<'PY'
import json, sys
a, b = sys.argv[1:]
print(json.dumps({
    "B-L1-001": [{"tool": "Bash", "input": {"command": a}}, {"text": "done"}],
    "B-L1-002": [{"tool": "Bash", "input": {"command": b}}, {"text": "done"}],
    "P-L1-001": [{"tool": "Bash", "input": {"command": "i=0; while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; touch after.txt"}},
                 {"text": "done"}],
    "*": [{"text": "done"}]}))
PY
agent_server "$TEST_ROOT/scenario.json"

agent_offline_env

agent_project budget none "max_cost_usd: 0.001"
config_append "  retry_attempts: 0"
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "B-L1-001", "title": "spends first", "level": 1},
 {"id": "B-L1-002", "title": "still running", "level": 1},
 {"id": "B-L2-001", "title": "never claimed", "level": 2, "dependencies": ["B-L1-001"]}
]}
JSON
zrush --workers 2
[ "$RC" -eq 1 ] || fail "over the cap: exit $RC, want 1: $(tail -20 "$PROJ/rush.out")"
[ "$(events budget_exhausted)" -eq 1 ] || fail "$(events budget_exhausted) budget_exhausted events, want 1"
grep '"event":"budget_exhausted"' "$PROJ/.zerg/monitor.jsonl" | grep -q '"max_cost_usd":0.001' ||
    fail "budget_exhausted without the cap: $(grep budget_exhausted "$PROJ/.zerg/monitor.jsonl")"
for t in B-L1-001 B-L1-002; do
    [ "$(task_status $t)" = complete ] || fail "$t: $(task_status $t), want complete"
done
[ "$(task_status B-L2-001)" = pending ] || fail "B-L2-001: $(task_status B-L2-001), want pending"
[ "$(task_status B-L2-001 attempt)" -eq 0 ] || fail "B-L2-001 was attempted"
[ "$(events task_claimed)" -eq 2 ] || fail "$(events task_claimed) claims, want 2"
grep -q 'rush.max_cost_usd (\$0\.00) reached: \$0\.[0-9]* spent; raise it and continue with `zerg rush --resume`' \
    "$PROJ/rush.out" || fail "no cap message: $(tail -5 "$PROJ/rush.out")"
pass "the spend passes rush.max_cost_usd: budget_exhausted, the running task finishes, no new claim, exit 1"

sed -i 's/max_cost_usd: 0.001/max_cost_usd: 100/' "$PROJ/.zerg/config.yaml"
zrush --resume
[ "$RC" -eq 0 ] || fail "resume with the cap raised: exit $RC: $(tail -20 "$PROJ/rush.out")"
[ "$(task_status B-L2-001)" = complete ] || fail "B-L2-001 after resume: $(task_status B-L2-001)"
pass "the cap raised, --resume runs the rest"

# ---- spend in flight, cost_cap_action: stop ------------------------------
agent_project inflight none "max_cost_usd: 1" "cost_cap_action: stop"
sed -i 's|^executor:|executor:\n  pricing: ["claude-opus-5-*=2000/0/0/0"]|' "$PROJ/.zerg/config.yaml"
config_append "  retry_attempts: 0" "  stop_grace_seconds: 1"
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "P-L1-001", "title": "runs long", "level": 1}]}
JSON
zrush --workers 1
[ "$RC" -ne 0 ] || fail "in flight: exit 0"
grep '"event":"budget_exhausted"' "$PROJ/.zerg/monitor.jsonl" | grep -q '"action":"stop"' ||
    fail "in flight: no budget_exhausted with action stop: $(grep budget_exhausted "$PROJ/.zerg/monitor.jsonl")"
grep '"event":"budget_exhausted"' "$PROJ/.zerg/monitor.jsonl" | grep -q '"in_flight_usd":[1-9]' ||
    fail "in flight: the running attempt's spend did not count"
[ ! -e "$PROJ/after.txt" ] || fail "in flight: the attempt ran to its end"
[ "$(task_status P-L1-001)" = pending ] || fail "in flight: P-L1-001 $(task_status P-L1-001), want pending"
[ "$(task_status P-L1-001 retry_count)" -eq 0 ] || fail "in flight: the stopped attempt was charged"
[ "$(task_status P-L1-001 cost_estimated)" = 1 ] || fail "in flight: its spend is not recorded as estimated"
pass "a running attempt's priced spend passes the cap: cost_cap_action stop stops it, uncharged"

no_procs
echo "$TESTS_PASSED passed, 0 failed"
