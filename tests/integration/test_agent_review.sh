#!/usr/bin/env bash
# Review before merge with the REAL Claude Code CLI against the scripted
# Messages API (DESIGN §21): the agent's passing attempt waits unmerged;
# `zerg redo --note` sends it back and the next attempt's request to the
# model carries the note under "What the reviewer asked" (bounded, no raw
# events, no earlier prompt); `zerg approve` merges it and the rush ends.
# A CLI that cannot be installed fails the test.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-agent.sh"

agent_cli
cat > "$TEST_ROOT/scenario.json" <<'JSON'
{"V-L1-001": [{"tool": "Write", "input": {"file_path": "v.txt", "content": "draft\n"}},
              {"text": "wrote v.txt"}],
 "*": [{"text": "done"}]}
JSON
agent_server "$TEST_ROOT/scenario.json"
agent_offline_env

awaiting_at() { [ "$(task_status V-L1-001)" = awaiting_review ] && [ "$(task_status V-L1-001 attempt)" = "$1" ]; }

agent_project review worktree "review: true"
git_repo README=base
config_append "  task_stale_timeout_seconds: 600"
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "V-L1-001", "title": "write v", "level": 1,
  "files": {"create": ["v.txt"]}}]}
JSON
HOME="$PROJ/home" "$ZERG" -C "$PROJ" rush --no-progress --workers 1 > "$PROJ/rush.out" 2>&1 &
RUSH_PID=$!
wait_for 90 awaiting_at 1
zerg diff V-L1-001 | grep -qx '+draft' || fail "diff: $(zerg diff V-L1-001)"
zerg review | grep -q 'V-L1-001  write v' || fail "review: $(zerg review)"
! G show zerg/f/integration:v.txt > /dev/null 2>&1 || fail "the agent's file was merged before review"
pass "the agent's passing attempt waits for review, unmerged"

note="call the file's content final, not draft"
zerg redo V-L1-001 --note "$note" > "$PROJ/redo.txt" || fail "redo exited $?"
wait_for 90 awaiting_at 2
prompt=$PROJ/.zerg/logs/f/tasks/V-L1-001/attempt-2.prompt
grep -q "^## What the reviewer asked" "$prompt" || fail "the prompt has no review section: $(cat "$prompt")"
grep -qF "$note" "$prompt" || fail "the prompt lacks the note"
! grep -q '"type":' "$prompt" || fail "the prompt carries raw events"
[ "$(grep -c '^You are implementing task' "$prompt")" = 1 ] || fail "the prompt nests an earlier prompt"
[ "$(task_status V-L1-001 retry_count)" = 0 ] || fail "the redo was charged"
sent=$(grep -lF "$note" "$TEST_ROOT"/requests/*-POST-v1_messages.json 2>/dev/null | head -1)
[ -n "$sent" ] || fail "no request to the model carried the note"
grep -q 'What the reviewer asked' "$sent" || fail "the request lacks the review heading"
pass "zerg redo: the next attempt's request to the model carries the note"

zerg approve V-L1-001 > "$PROJ/approve.txt" || fail "approve exited $?"
grep -q "V-L1-001 merged as" "$PROJ/approve.txt" || fail "approve: $(cat "$PROJ/approve.txt")"
rush_wait 60
[ "$RUSH_RC" -eq 0 ] || fail "rush exited $RUSH_RC: $(tail -20 "$PROJ/rush.out")"
[ "$(G show zerg/f/integration:v.txt)" = draft ] || fail "v.txt on the integration branch: $(G show zerg/f/integration:v.txt 2>&1)"
pass "zerg approve merges the agent's work and the rush completes"
no_procs
echo "$TESTS_PASSED passed, 0 failed"
