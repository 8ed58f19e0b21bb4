#!/usr/bin/env bash
# Task commands and verifications run with /bin/sh -c (dash here), where
# bash syntax such as <(...) cannot parse (2 of the 678 upstream
# verifications, both in 66-questioning-methodology).  `zerg validate` and
# `zerg rush` say so for each such task, and an agent task whose
# verification cannot parse fails before its agent runs, every attempt,
# instead of paying for the agent and then failing.
source "$(dirname "$0")/lib.sh"

new_project syntax
config_append "  retry_attempts: 1" "  executor: [\"$PROJ/agent.sh\"]" \
    "executor:" "  kind: command"
cat > "$PROJ/agent.sh" <<'SH'
#!/bin/sh
[ "$1" = --version ] && { echo stand-in 1.0; exit 0; }
echo run >> agent-runs.txt
echo ok > out.txt
SH
chmod +x "$PROJ/agent.sh"
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "S-L1-001", "title": "agent with bash verification", "level": 1,
  "verification": {"command": "diff <(cat out.txt) <(echo ok)"}},
 {"id": "S-L1-002", "title": "agent with sh verification", "level": 1,
  "verification": {"command": "test -f out.txt"}},
 {"id": "S-L1-003", "title": "command in bash", "level": 1,
  "command": "cat <(echo hi) > hi.txt"}
]}
JSON
zerg validate > "$PROJ/v.out" 2>&1 || fail "validate exited $?: $(cat "$PROJ/v.out")"
grep -q 'task S-L1-001: its verification command cannot run under /bin/sh' "$PROJ/v.out" ||
    fail "validate does not name the verification: $(cat "$PROJ/v.out")"
grep -q 'task S-L1-003: its command cannot run under /bin/sh' "$PROJ/v.out" ||
    fail "validate does not name the command: $(cat "$PROJ/v.out")"
grep -q 'bash syntax' "$PROJ/v.out" || fail "validate does not say it is bash syntax"
! grep -q "task S-L1-002:" "$PROJ/v.out" || fail "validate warned about a valid verification"
pass "validate names every command and verification /bin/sh cannot parse"

rc=0
zerg rush --workers 1 > "$PROJ/rush.txt" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "rush exited $rc: $(cat "$PROJ/rush.txt")"
grep -q 'warning: task S-L1-001: its verification command cannot run' "$PROJ/rush.txt" ||
    fail "rush did not warn: $(cat "$PROJ/rush.txt")"
[ "$(task_status S-L1-001)" = failed ] || fail "S-L1-001 is $(task_status S-L1-001)"
[ "$(task_status S-L1-002)" = complete ] || fail "S-L1-002 is $(task_status S-L1-002)"
runs=$(wc -l < "$PROJ/agent-runs.txt")
[ "$runs" -eq 1 ] || fail "the agent ran $runs times; only S-L1-002's run was expected"
grep '"event":"task_failed"' "$PROJ/.zerg/monitor.jsonl" | grep S-L1-001 |
    grep -q 'the agent was not run' || fail "the failure does not say the agent was not run"
pass "an agent task whose verification cannot parse fails without running its agent"
echo "$TESTS_PASSED passed, 0 failed"
