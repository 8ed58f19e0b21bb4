#!/usr/bin/env bash
# Agent executors end to end (DESIGN §14): `zerg rush` over tasks without
# `command`, run by the REAL Claude Code CLI (scripts/install-claude.sh)
# against the scripted Messages API of tests/agent/fake_messages_api.py.
#   a. a 2-level graph on 3 workers: the agent's Write calls land, cost and
#      tokens reach the state, `zerg status` and the summary; prompts saved
#   b. no API key: the rush stops fast, exit 1, the login fix, nothing charged
#   c. root without IS_SANDBOX: the same with that fix (as root; else it
#      runs without it)
#   d. 429 with the CLI's own retries off: pool_pause, pool_resume, done,
#      nothing charged (runs in the background: the first pause is 30 s)
#   e. an answer streaming for twice the stale timeout: not stale
#   f. a hanging API: killed as stale, retried, done
#   g. a failed verification: the next attempt's request carries its output
#   h. worktree isolation: the agent's file lands on zerg/f/integration
# A CLI that cannot be installed fails the test.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-agent.sh"
T0=$(date +%s)

agent_cli

# ---- the scripted server ---------------------------------------------
cat > "$TEST_ROOT/scenario.json" <<'JSON'
{"A-L1-001": [{"tool": "Write", "input": {"file_path": "a1.txt", "content": "from the agent 1\n"}},
              {"text": "done"}],
 "A-L1-002": [{"tool": "Write", "input": {"file_path": "a2.txt", "content": "from the agent 2\n"}},
              {"text": "done"}],
 "A-L1-003": [{"text": "nothing to write"}],
 "A-L2-001": [{"tool": "Bash", "input": {"command": "cat a1.txt a2.txt > both.txt"}},
              {"text": "done"}],
 "R-L1-001": [{"status": 429, "retry_after": 1, "times": 1}, {"text": "done"}],
 "S-L1-001": [{"slow_seconds": 14, "deltas": true}, {"text": "done slowly"}],
 "H-L1-001": [{"hang": true, "times": 1}, {"text": "done after the hang"}],
 "V-L1-001": [{"text": "done"}],
 "W-L1-001": [{"tool": "Write", "input": {"file_path": "wt.txt", "content": "in the worktree\n"}},
              {"text": "done"}],
 "*": [{"text": "done"}]}
JSON
agent_server "$TEST_ROOT/scenario.json"

agent_offline_env

# requests_with TEXT...: the recorded Messages requests holding every TEXT.
requests_with() {
    local f t hit
    for f in "$TEST_ROOT"/requests/*-POST-v1_messages.json; do
        hit=1
        for t in "$@"; do grep -qF -- "$t" "$f" || { hit=0; break; }; done
        [ $hit = 1 ] && echo "$f"
    done
    return 0
}
secs_since() { echo $(( $(date +%s) - $1 )); }

# ---- d. 429: started first, it waits out a 30 s pool pause ---------------
agent_project ratelimit
PROJ_D=$PROJ
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "R-L1-001", "title": "rate limited", "level": 1}]}
JSON
HOME="$PROJ/home" "$ZERG" -C "$PROJ" rush --no-progress > "$PROJ/rush.out" 2>&1 &
D_PID=$!

# ---- a. a 2-level graph of agent tasks on 3 workers ----------------------
agent_project graph
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "A-L1-001", "title": "write a1", "level": 1, "files": {"create": ["a1.txt"]}},
 {"id": "A-L1-002", "title": "write a2", "level": 1, "files": {"create": ["a2.txt"]}},
 {"id": "A-L1-003", "title": "nothing", "level": 1},
 {"id": "A-L2-001", "title": "join", "level": 2, "dependencies": ["A-L1-001", "A-L1-002"],
  "files": {"create": ["both.txt"], "read": ["a1.txt", "a2.txt"]}}
]}
JSON
zrush --workers 3
[ "$RC" -eq 0 ] || fail "agent graph: rush exited $RC: $(tail -20 "$PROJ/rush.out")"
[ "$(cat "$PROJ/a1.txt")" = "from the agent 1" ] || fail "a1.txt: $(cat "$PROJ/a1.txt" 2>&1)"
[ "$(cat "$PROJ/a2.txt")" = "from the agent 2" ] || fail "a2.txt: $(cat "$PROJ/a2.txt" 2>&1)"
[ "$(cat "$PROJ/both.txt")" = "from the agent 1
from the agent 2" ] || fail "the level-2 agent's Bash did not see level 1: $(cat "$PROJ/both.txt" 2>&1)"
for t in A-L1-001 A-L1-002 A-L1-003 A-L2-001; do
    [ "$(task_status $t)" = complete ] || fail "$t: $(task_status $t)"
    python3 -c 'import json,sys
t = json.load(open(sys.argv[1]))["tasks"][sys.argv[2]]
assert t["cost_usd"] > 0 and t["input_tokens"] > 0 and t["output_tokens"] > 0, t
assert t["session_id"], t' "$PROJ/.zerg/state/f.json" "$t" || fail "$t: no cost, tokens or session in the state"
    p="$PROJ/.zerg/logs/f/tasks/$t/attempt-1.prompt"
    grep -q "^You are implementing task $t " "$p" || fail "no saved prompt $p"
    grep -q '^# Task: ' "$p" || fail "$p lacks the Task section"
done
grep -q '^Create:' "$PROJ/.zerg/logs/f/tasks/A-L2-001/attempt-1.prompt" || fail "prompt without Files"
HOME="$PROJ/home" "$ZERG" -C "$PROJ" status --json > "$PROJ/status.json" || fail "status --json"
python3 -c 'import json,sys; c = json.load(open(sys.argv[1]))["cost_usd"]; assert c > 0, c' \
    "$PROJ/status.json" || fail "status --json cost_usd: $(cat "$PROJ/status.json")"
"$ZERG" -C "$PROJ" status | grep -qE '^Cost: +\$0\.[0-9]+ \([0-9]+ in / [0-9]+ out tokens; cache [1-9][0-9]* read / [1-9][0-9]* written\)' ||
    fail "status shows no cost: $("$ZERG" -C "$PROJ" status)"
grep -qE 'Agent spend: \$0\.[0-9]+\.' "$PROJ/rush.out" || fail "the summary has no spend: $(tail -3 "$PROJ/rush.out")"
[ "$(events task_claimed)" -eq 4 ] || fail "expected 4 claims, got $(events task_claimed)"
pass "agent graph on 3 workers: files written, cost in state/status/summary, prompts saved"

# ---- b. no API key ---------------------------------------------------------
agent_project nokey
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "N-L1-001", "title": "no key", "level": 1},
                           {"id": "N-L1-002", "title": "no key", "level": 1}]}
JSON
start=$(date +%s)
RC=0
env -u ANTHROPIC_API_KEY HOME="$PROJ/home" "$ZERG" -C "$PROJ" rush --no-progress > "$PROJ/rush.out" 2>&1 || RC=$?
took=$(secs_since "$start")
[ "$RC" -eq 1 ] || fail "no API key: exit $RC: $(tail "$PROJ/rush.out")"
# Fast means no second try: at most one attempt a task, no retry waited.
[ "$(events task_claimed)" -le 2 ] || fail "no API key: $(events task_claimed) claims, the rush retried"
[ "$(task_status N-L1-001 attempt)" -le 1 ] && [ "$(task_status N-L1-002 attempt)" -le 1 ] || fail "no API key: a task ran twice"
grep -q "Not logged in" "$PROJ/rush.out" || fail "no API key: no reason in $(tail "$PROJ/rush.out")"
grep -q "ANTHROPIC_API_KEY" "$PROJ/rush.out" || fail "no API key: no login fix in $(tail "$PROJ/rush.out")"
for t in N-L1-001 N-L1-002; do
    [ "$(task_status $t retry_count)" -eq 0 ] || fail "no API key: $t charged"
done
grep '"event":"task_failed"' "$PROJ/.zerg/monitor.jsonl" | grep -q '"class":"environment"' ||
    fail "no task_failed with class environment"
pass "no API key: exit 1 in ${took}s with the login fix, nothing charged"

# ---- c. root without IS_SANDBOX ---------------------------------------------
agent_project root
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "C-L1-001", "title": "as root", "level": 1}]}
JSON
start=$(date +%s)
RC=0
env -u IS_SANDBOX HOME="$PROJ/home" "$ZERG" -C "$PROJ" rush --no-progress > "$PROJ/rush.out" 2>&1 || RC=$?
took=$(secs_since "$start")
if [ $ROOT = 1 ]; then
    [ "$RC" -eq 1 ] || fail "root without IS_SANDBOX: exit $RC"
    [ "$(events task_claimed)" -le 1 ] || fail "root without IS_SANDBOX: $(events task_claimed) claims, the rush retried"
    grep -q "IS_SANDBOX=1" "$PROJ/rush.out" || fail "root: no IS_SANDBOX fix in $(tail "$PROJ/rush.out")"
    [ "$(task_status C-L1-001 retry_count)" -eq 0 ] || fail "root: the task was charged"
    pass "root without IS_SANDBOX: exit 1 in ${took}s with the IS_SANDBOX fix"
else
    [ "$RC" -eq 0 ] || fail "not root, without IS_SANDBOX: exit $RC: $(tail "$PROJ/rush.out")"
    pass "not root: the rush works without IS_SANDBOX"
fi

# ---- e. an answer streaming longer than the stale timeout ------------------
agent_project slow
# The stale timeouts leave room for the CLI's own start-up (its first
# request took over 3 s on a loaded 2-core machine).
config_append "  task_stale_timeout_seconds: 7" "  retry_attempts: 0"
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "S-L1-001", "title": "slow", "level": 1}]}
JSON
start=$(date +%s)
zrush
took=$(secs_since "$start")
[ "$RC" -eq 0 ] || fail "slow stream: exit $RC: $(tail -20 "$PROJ/rush.out")"
[ "$took" -ge 13 ] || fail "slow stream: over in ${took}s, the server did not stream 14 s"
[ "$(events task_timeout)" -eq 0 ] || fail "slow stream: declared stale"
[ "$(task_status S-L1-001 retry_count)" -eq 0 ] || fail "slow stream: charged"
pass "an answer streaming 14 s with a 7 s stale timeout: not stale (stream events are progress)"

# ---- f. a hanging API --------------------------------------------------------
agent_project hang
config_append "  task_stale_timeout_seconds: 7" "  retry_attempts: 2"
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "H-L1-001", "title": "hang", "level": 1}]}
JSON
zrush
[ "$RC" -eq 0 ] || fail "hang: exit $RC: $(tail -20 "$PROJ/rush.out")"
[ "$(events task_timeout)" -eq 1 ] || fail "hang: $(events task_timeout) task_timeout events, want 1"
[ "$(task_status H-L1-001)" = complete ] || fail "hang: $(task_status H-L1-001)"
[ "$(task_status H-L1-001 attempt)" -eq 2 ] || fail "hang: attempt $(task_status H-L1-001 attempt)"
[ -f "$PROJ/.zerg/logs/f/tasks/H-L1-001/attempt-2.prompt" ] || fail "hang: no attempt-2.prompt"
pass "a hanging API: killed as stale, retried, complete on attempt 2"

# ---- g. a failed verification feeds the next attempt -------------------------
agent_project verify
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "V-L1-001", "title": "verified", "level": 1,
  "verification": {"command": "if [ -f .second ]; then exit 0; fi; touch .second; echo \"VERIFY-$((6 * 7))-FAILED here\"; exit 1"}}]}
JSON
zrush
[ "$RC" -eq 0 ] || fail "verify: exit $RC: $(tail -20 "$PROJ/rush.out")"
[ "$(task_status V-L1-001 attempt)" -eq 2 ] || fail "verify: attempt $(task_status V-L1-001 attempt)"
p2="$PROJ/.zerg/logs/f/tasks/V-L1-001/attempt-2.prompt"
grep -q "What went wrong last time" "$p2" || fail "verify: attempt-2.prompt has no retry section"
grep -q "VERIFY-42-FAILED here" "$p2" || fail "verify: attempt-2.prompt lacks the verification output"
[ -n "$(requests_with "implementing task V-L1-001" "What went wrong last time" "VERIFY-42-FAILED here")" ] ||
    fail "verify: no request to the API carried the verification output"
[ -n "$(requests_with "implementing task V-L1-001")" ] &&
    [ "$(requests_with "implementing task V-L1-001" "VERIFY-42-FAILED" | wc -l)" -eq \
      "$(requests_with "implementing task V-L1-001" "VERIFY-42-FAILED" "Attempt 1 failed" | wc -l)" ] ||
    fail "verify: the output reached the API outside the retry section"
pass "a failed verification: attempt 2's prompt and API request carry its output"

# ---- h. worktree isolation -----------------------------------------------------
agent_project worktree worktree
git -C "$PROJ" init -q -b main
git -C "$PROJ" config user.name tester
git -C "$PROJ" config user.email tester@example.com
echo base > "$PROJ/README"
git -C "$PROJ" add README && git -C "$PROJ" commit -qm base
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "W-L1-001", "title": "write in the worktree", "level": 1,
  "files": {"create": ["wt.txt"]}}]}
JSON
zrush
[ "$RC" -eq 0 ] || fail "worktree: exit $RC: $(tail -20 "$PROJ/rush.out")"
[ "$(git -C "$PROJ" show zerg/f/integration:wt.txt)" = "in the worktree" ] ||
    fail "worktree: wt.txt not on zerg/f/integration"
[ ! -e "$PROJ/wt.txt" ] || fail "worktree: the agent wrote into the project checkout"
pass "worktree isolation: the agent's file lands on zerg/f/integration"

# ---- d. (the 429 rush from the start) -----------------------------------------
PROJ=$PROJ_D
RUSH_PID=$D_PID
rush_wait 70
[ "$RUSH_RC" -eq 0 ] || fail "429: exit $RUSH_RC: $(tail -20 "$PROJ/rush.out")"
has_event pool_pause || fail "429: no pool_pause"
has_event pool_resume || fail "429: no pool_resume"
[ "$(task_status R-L1-001)" = complete ] || fail "429: $(task_status R-L1-001)"
[ "$(task_status R-L1-001 retry_count)" -eq 0 ] || fail "429: charged"
grep '"event":"pool_pause"' "$PROJ/.zerg/monitor.jsonl" | grep -q '429' ||
    fail "429: the pause does not say why: $(grep pool_pause "$PROJ/.zerg/monitor.jsonl")"
pass "429 (CLI retries off): pool_pause, pool_resume, complete, nothing charged"

no_procs
echo "$TESTS_PASSED passed, 0 failed ($(secs_since "$T0")s)"
