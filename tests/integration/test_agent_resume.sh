#!/usr/bin/env bash
# Session resume (DESIGN §21) with the REAL Claude Code CLI against the
# scripted Messages API: an agent writes a file, then its API hangs and
# its worker is SIGKILLed (a crash).  retry.lua says resume: the next
# attempt runs `claude ... --resume SESSION` in the same directory with a
# short prompt saying it was interrupted, and its request carries the
# earlier conversation (the Write and its result), so the agent goes on
# from there instead of starting over; nothing is charged.  The test
# prints what the resumed attempt sent against what the first one did.
# A CLI that cannot be installed fails the test.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-agent.sh"

agent_cli
cat > "$TEST_ROOT/scenario.json" <<'JSON'
{"M-L1-001": [{"tool": "Write", "input": {"file_path": "m1.txt", "content": "part one\n"}},
              {"hang": true, "times": 1}, {"text": "done after the resume"}],
 "*": [{"text": "done"}]}
JSON
agent_server "$TEST_ROOT/scenario.json"
agent_offline_env

requests_of() { grep -l -- "$1" "$TEST_ROOT"/requests/*-POST-v1_messages.json 2>/dev/null | sort; }

agent_project resume
config_append "  task_stale_timeout_seconds: 600" "  max_task_crashes: 2"
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "M-L1-001", "title": "write, then hang", "level": 1,
  "files": {"create": ["m1.txt"]}}]}
JSON
HOME="$PROJ/home" "$ZERG" -C "$PROJ" rush --no-progress --workers 1 > "$PROJ/rush.out" 2>&1 &
RUSH_PID=$!
# The Write landed and the request after it hangs: two requests of the task.
wait_for 60 sh -c "[ -f '$PROJ/m1.txt' ] && [ \$(grep -l M-L1-001 '$TEST_ROOT'/requests/*-POST-v1_messages.json 2>/dev/null | wc -l) -ge 2 ]"
first=$(requests_of M-L1-001)
kill -9 "$(worker_pid 0)"
rush_wait 120
[ "$RUSH_RC" -eq 0 ] || fail "rush exited $RUSH_RC: $(tail -20 "$PROJ/rush.out")"
[ "$(task_status M-L1-001)" = complete ] || fail "not complete: $(task_status M-L1-001)"
[ "$(state_field tasks.M-L1-001.attempt)" = 2 ] || fail "attempt $(state_field tasks.M-L1-001.attempt)"
[ "$(state_field tasks.M-L1-001.retry_count)" = 0 ] || fail "the crash was charged"
grep '"event":"task_claimed"' "$PROJ/.zerg/monitor.jsonl" | tail -1 | grep -q '"resume":true' ||
    fail "the second claim does not say resume"
log2=$PROJ/.zerg/logs/f/tasks/M-L1-001/attempt-2.log
sid=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    if l.startswith("{"):
        print(json.loads(l).get("session_id", "")); break' "$PROJ/.zerg/logs/f/tasks/M-L1-001/attempt-1.log")
[ -n "$sid" ] || fail "attempt 1 has no session"
grep -q -- "--resume $sid" "$log2" || fail "attempt 2 did not resume $sid: $(head -3 "$log2")"
grep -q 'was interrupted' "$PROJ/.zerg/logs/f/tasks/M-L1-001/attempt-2.prompt" ||
    fail "the resumed prompt does not say it was interrupted"
# The resumed request: the earlier conversation (the Write's input and its
# result), then the new prompt; the file was not written again.
resumed=$(comm -13 <(echo "$first") <(requests_of M-L1-001) | tail -1)
[ -n "$resumed" ] || fail "attempt 2 sent no request"
grep -q 'part one' "$resumed" || fail "the resumed request lacks the earlier Write"
grep -q 'was interrupted' "$resumed" || fail "the resumed request lacks the new prompt"
[ "$(cat "$PROJ/m1.txt")" = "part one" ] || fail "m1.txt: $(cat "$PROJ/m1.txt")"
n1=$(echo "$first" | wc -l); n2=$(comm -13 <(echo "$first") <(requests_of M-L1-001) | wc -l)
b1=$(cat $first | wc -c); b2=$(comm -13 <(echo "$first") <(requests_of M-L1-001) | xargs cat | wc -c)
echo "# attempt 1 (fresh): $n1 requests, $b1 bytes; attempt 2 (resumed): $n2 requests, $b2 bytes"
[ "$n2" -lt "$n1" ] || fail "the resumed attempt sent as many requests ($n2) as a fresh one ($n1)"
pass "a crashed agent resumes its session: --resume, the earlier turns in its request, uncharged"
no_procs
echo "$TESTS_PASSED passed, 0 failed"
