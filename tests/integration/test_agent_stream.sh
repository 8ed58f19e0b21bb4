#!/usr/bin/env bash
# The agent's stream read as it comes (DESIGN §20), with the REAL Claude
# Code CLI against the scripted Messages API where it can be made to do
# the thing, and a stand-in replaying its recorded lines where it cannot:
#   a. (stand-in) the CLI prints its result and does not exit: the stage
#      ends executor.exit_grace_seconds later, the result stands: complete
#      on attempt 1, its cost recorded, nothing stale, nothing charged
#   b. (stand-in) noise on stderr only is no progress: declared stale
#   c. cache tokens reach the state and `zerg status`
#   d. an attempt killed while its API hangs keeps the tokens it streamed
#   e. a result line of more than 512 KiB: its cost is recorded
#   f. a tool's output quoting the root-refusal text, then an API 500:
#      class task, the rush is not stopped as "environment"
#   g. a prompt of more than 128 KiB (one argument's limit) reaches the
#      model whole (on stdin)
#   h. a retry's prompt carries the agent's final message and the failed
#      verification's output, bounded, never raw events or zerg's lines
#   i. `zerg logs --task` shows an agent attempt as a transcript (tool
#      calls with their argument, the final message, cost and tokens),
#      `--raw` the events; a failed rush's summary shows no raw events
#   j. while an agent works, `zerg status` (and the live view, from the
#      same beat) shows its last tool call and its turn, not "command 10%"
# A CLI that cannot be installed fails the test.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-agent.sh"

agent_cli
FIX=$ZERG_SOURCE_DIR/tests/fixtures/claude

python3 - "$TEST_ROOT/scenario.json" <<'PY'
import json, sys
json.dump({
    "C-L1-001": [{"text": "done", "usage": {"cache_read_input_tokens": 480000}}],
    "K-L1-001": [{"tool": "Write", "input": {"file_path": "k.txt", "content": "k\n"}},
                 {"hang": True, "times": 1}, {"text": "done after the hang"}],
    "B-L1-001": [{"text": "x" * (600 * 1024)}],
    "F-L1-001": [{"tool": "Bash", "input": {"command":
                  "echo 'Error: --dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons'"}},
                 {"status": 500}],
    "R-L1-001": [{"text": "MY-FINAL-WORDS: I wrote nothing"}],
    "L-L1-001": [{"tool": "Write", "input": {"file_path": "live.txt", "content": "x\n"}},
                 {"slow_seconds": 6, "deltas": True}, {"text": "done live"}],
    "*": [{"text": "done"}]}, open(sys.argv[1], "w"))
PY
agent_server "$TEST_ROOT/scenario.json"
agent_offline_env

result_field() { # TASK ATTEMPT FIELD: from the attempt's result record
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], 0))' \
        "$PROJ/.zerg/logs/f/tasks/$1/attempt-$2.result.json" "$3"
}

# ---- a. a result, then no exit (stand-in: the real CLI cannot be made to) --
agent_project hang_after
cat > "$PROJ/stand-in" <<SH
#!/bin/sh
# Replays Claude Code's recorded success stream, then hangs as the CLI
# sometimes does after its result.
[ "\$1" = --version ] && { echo "2.1.332 (Claude Code)"; exit 0; }
cat > /dev/null
cat "$FIX/success.jsonl"
exec sleep 300
SH
chmod +x "$PROJ/stand-in"
sed -i "s|^  claude: .*|  claude: $PROJ/stand-in\n  exit_grace_seconds: 1|" "$PROJ/.zerg/config.yaml"
config_append "  task_stale_timeout_seconds: 3" "  retry_attempts: 1"
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "A-L1-001", "title": "hangs after its result", "level": 1}]}
JSON
zrush --timeout 60
[ "$RC" -eq 0 ] || fail "hang after result: exit $RC: $(tail -20 "$PROJ/rush.out")"
[ "$(task_status A-L1-001)" = complete ] || fail "hang after result: $(task_status A-L1-001)"
[ "$(task_status A-L1-001 attempt)" -eq 1 ] || fail "hang after result: retried"
[ "$(events task_timeout)" -eq 0 ] || fail "hang after result: killed as stale"
python3 -c 'import json,sys; c = json.load(open(sys.argv[1]))["tasks"]["A-L1-001"]["cost_usd"]; assert c > 0, c' \
    "$PROJ/.zerg/state/f.json" || fail "hang after result: no cost recorded"
grep -q 'did not exit 1.0 s after its result and was ended; the result stands' \
    "$PROJ/.zerg/logs/f/tasks/A-L1-001/attempt-1.log" || fail "hang after result: the log does not say why it ended"
pass "a CLI that hangs after its result is ended after exit_grace_seconds, the result standing (stand-in)"

# ---- b. stderr noise is no progress (stand-in: Gemini's retry loop) ------
agent_project noise
cat > "$PROJ/stand-in" <<SH
#!/bin/sh
[ "\$1" = --version ] && { echo "2.1.332 (Claude Code)"; exit 0; }
cat > /dev/null
head -n 1 "$FIX/success.jsonl"
n=0
while :; do n=\$((n + 1)); echo "Attempt \$n failed. Retrying with backoff... fetch failed" >&2; sleep 0.1; done
SH
chmod +x "$PROJ/stand-in"
sed -i "s|^  claude: .*|  claude: $PROJ/stand-in|" "$PROJ/.zerg/config.yaml"
config_append "  task_stale_timeout_seconds: 3" "  retry_attempts: 0"
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "N-L1-001", "title": "noise", "level": 1}]}
JSON
zrush --timeout 30
[ "$(events task_timeout)" -eq 1 ] || fail "stderr noise: $(events task_timeout) task_timeout events, want 1 (rush exit $RC)"
[ "$(task_status N-L1-001)" = failed ] || fail "stderr noise: $(task_status N-L1-001)"
pass "noise on stderr only is not progress: the attempt goes stale (stand-in)"

# ---- c. cache tokens -------------------------------------------------------
agent_project cache
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "C-L1-001", "title": "cached", "level": 1}]}
JSON
zrush
[ "$RC" -eq 0 ] || fail "cache: exit $RC: $(tail -20 "$PROJ/rush.out")"
[ "$(task_status C-L1-001 cache_read_tokens)" -ge 480000 ] ||
    fail "cache: cache_read_tokens $(task_status C-L1-001 cache_read_tokens)"
[ "$(task_status C-L1-001 model)" != "" ] || fail "cache: no model recorded"
HOME="$PROJ/home" "$ZERG" -C "$PROJ" status | grep -qE 'cache 4[0-9]{5} read' ||
    fail "cache: status: $(HOME="$PROJ/home" "$ZERG" -C "$PROJ" status | grep Cost)"
pass "cache reads (480,000 tokens) and the model reach the state and zerg status"

# ---- d. a killed attempt keeps what it streamed ------------------------------
agent_project killed
# Long enough for the CLI's start-up on a loaded machine (about 2 s).
config_append "  task_stale_timeout_seconds: 7" "  retry_attempts: 2"
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "K-L1-001", "title": "killed", "level": 1}]}
JSON
zrush
[ "$RC" -eq 0 ] || fail "killed: exit $RC: $(tail -20 "$PROJ/rush.out")"
[ "$(events task_timeout)" -eq 1 ] || fail "killed: $(events task_timeout) task_timeout events, want 1"
# The killed attempt wrote no result (its worker was killed with it); its
# heartbeats carried the tokens of the message that streamed.
[ ! -e "$PROJ/.zerg/logs/f/tasks/K-L1-001/attempt-1.result.json" ] ||
    fail "killed: attempt 1 has a result; the test needs one killed before it"
total=$(task_status K-L1-001 input_tokens)
second=$(result_field K-L1-001 2 input_tokens)
[ "$total" -ge $((second + 1000)) ] ||
    fail "killed: the task's input tokens ($total) leave out the killed attempt's (attempt 2: $second)"
[ "$(task_status K-L1-001 cache_read_tokens)" -ge $(( $(result_field K-L1-001 2 cache_read_tokens) + 200 )) ] ||
    fail "killed: the killed attempt's cache tokens are lost"
pass "an attempt killed while its API hangs keeps the tokens it streamed"

# ---- e. a result line over 512 KiB ------------------------------------------
agent_project big
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "B-L1-001", "title": "big answer", "level": 1}]}
JSON
zrush
[ "$RC" -eq 0 ] || fail "big: exit $RC: $(tail -20 "$PROJ/rush.out")"
len=$(awk 'length > max { max = length } END { print max }' "$PROJ/.zerg/logs/f/tasks/B-L1-001/attempt-1.log")
[ "$len" -gt 524288 ] || fail "big: the longest line is $len bytes, the test needs one over 512 KiB"
python3 -c 'import json,sys; c = json.load(open(sys.argv[1]))["tasks"]["B-L1-001"]["cost_usd"]; assert c > 0, c' \
    "$PROJ/.zerg/state/f.json" || fail "big: no cost recorded for a $len-byte result line"
pass "a $len-byte result line: its cost is recorded"

# ---- f. faked environment text, then a 500 ------------------------------------
agent_project faked
config_append "  retry_attempts: 0"
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "F-L1-001", "title": "quotes the refusal", "level": 1},
                           {"id": "F-L1-002", "title": "goes on", "level": 1}]}
JSON
zrush --workers 1
[ "$(task_status F-L1-001)" = failed ] || fail "faked: $(task_status F-L1-001)"
[ "$(result_field F-L1-001 1 class)" = task ] ||
    fail "faked: class $(result_field F-L1-001 1 class), not task"
[ "$(task_status F-L1-002)" = complete ] || fail "faked: the rush stopped: F-L1-002 $(task_status F-L1-002)"
! has_event pool_stop || fail "faked: the pool was stopped"
pass "a tool's output quoting the root refusal, then an API 500: class task, the rush goes on"

# ---- g. a prompt over 128 KiB ------------------------------------------------
agent_project long
python3 - "$PROJ/.gsd/specs/f/task-graph.json" <<'PY'
import json, sys
desc = "context line\n" * 12000 + "THE-END-MARKER"
json.dump({"feature": "f", "tasks": [{"id": "G-L1-001", "title": "long", "level": 1,
           "description": desc}]}, open(sys.argv[1], "w"))
PY
zrush
[ "$RC" -eq 0 ] || fail "long prompt: exit $RC: $(tail -20 "$PROJ/rush.out")"
size=$(stat -c %s "$PROJ/.zerg/logs/f/tasks/G-L1-001/attempt-1.prompt")
[ "$size" -gt 131072 ] || fail "long prompt: the prompt is $size bytes, the test needs over 128 KiB"
grep -l 'THE-END-MARKER' "$TEST_ROOT"/requests/*-POST-v1_messages.json > /dev/null 2>&1 ||
    fail "long prompt: no request carried the end of the prompt"
pass "a $size-byte prompt reaches the model whole (on stdin, no E2BIG)"

# ---- h. what the retry's prompt says -------------------------------------
agent_project retry
config_append "  retry_attempts: 1"
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "R-L1-001", "title": "retried", "level": 1,
  "verification": {"command": "test -e .again || { touch .again; echo VERIFY-SAID-NO; exit 1; }"}}]}
JSON
zrush
[ "$RC" -eq 0 ] || fail "retry prompt: exit $RC: $(tail -20 "$PROJ/rush.out")"
p1=$PROJ/.zerg/logs/f/tasks/R-L1-001/attempt-1.prompt
p2=$PROJ/.zerg/logs/f/tasks/R-L1-001/attempt-2.prompt
grep -q 'MY-FINAL-WORDS' "$p2" || fail "retry prompt: no final message: $(cat "$p2")"
grep -q 'VERIFY-SAID-NO' "$p2" || fail "retry prompt: no verification output: $(cat "$p2")"
! grep -q '"type"\|==== zerg\|--dangerously' "$p2" || fail "retry prompt: raw events or zerg's lines: $(cat "$p2")"
[ $(( $(stat -c %s "$p2") - $(stat -c %s "$p1") )) -le 4096 ] || fail "retry prompt: over 4 KB more than the first"
pass "a retry's prompt has the final message and the verification's output, bounded, no raw events"

# ---- i. the transcript -------------------------------------------------------
HOME="$PROJ/home" "$ZERG" -C "$PROJ" logs --task R-L1-001 --attempt 1 > "$PROJ/tr.txt" 2>&1 ||
    fail "transcript: zerg logs exited $?"
grep -q '^agent: MY-FINAL-WORDS' "$PROJ/tr.txt" || fail "transcript: no agent line: $(cat "$PROJ/tr.txt")"
grep -qE '^result: success, [0-9]+ turns, \$[0-9.]+, [0-9]+ in / [0-9]+ out tokens \(cache [0-9]+ read' "$PROJ/tr.txt" ||
    fail "transcript: no result line: $(cat "$PROJ/tr.txt")"
grep -q '^session .*, model ' "$PROJ/tr.txt" || fail "transcript: no session line"
grep -q 'VERIFY-SAID-NO' "$PROJ/tr.txt" || fail "transcript: the verification's output is gone"
! grep -q '{"type"' "$PROJ/tr.txt" || fail "transcript: raw events shown: $(grep -m1 '{"type"' "$PROJ/tr.txt" | cut -c1-200)"
HOME="$PROJ/home" "$ZERG" -C "$PROJ" logs --task R-L1-001 --attempt 1 --raw > "$PROJ/raw.txt"
grep -q '^{.*"type":"result"' "$PROJ/raw.txt" || fail "transcript: --raw does not show the events"
PROJ=$TEST_ROOT/killed
HOME="$PROJ/home" "$ZERG" -C "$PROJ" logs --task K-L1-001 --attempt 2 > "$PROJ/tr.txt"
grep -qE '^tool:  Write .*k\.txt' "$PROJ/tr.txt" || fail "transcript: no tool line with its path: $(tail -12 "$PROJ/tr.txt")"
! grep -q '  | {"type"' "$TEST_ROOT/faked/rush.out" || fail "transcript: the failure summary shows raw events"
grep -q '  | result: error' "$TEST_ROOT/faked/rush.out" || fail "transcript: the failure summary has no result line: $(tail -12 "$TEST_ROOT/faked/rush.out")"
pass "zerg logs --task shows a transcript (--raw the events); the failure summary too"

# ---- j. the live worker line ---------------------------------------------------
agent_project live
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "L-L1-001", "title": "live", "level": 1}]}
JSON
HOME="$PROJ/home" "$ZERG" -C "$PROJ" rush --no-progress > "$PROJ/rush.out" 2>&1 &
RUSH_PID=$!
live_line() { HOME="$PROJ/home" "$ZERG" -C "$PROJ" status 2>/dev/null | grep -E 'L-L1-001 .*Write .*live\.txt, turn 2'; }
wait_for 60 live_line || fail "status never showed the tool call: $(HOME="$PROJ/home" "$ZERG" -C "$PROJ" status 2>&1 | tail -5)"
HOME="$PROJ/home" "$ZERG" -C "$PROJ" status --json | python3 -c 'import json,sys
hb = [h for h in json.load(sys.stdin)["heartbeats"] if h.get("task_id") == "L-L1-001"]
assert hb and hb[0]["tool_calls"] == 1 and "live.txt" in hb[0]["activity"], hb' ||
    fail "status --json lacks the activity"
rush_wait 60
[ "$RUSH_RC" -eq 0 ] || fail "live: exit $RUSH_RC"
pass "while the agent works, status shows its last tool call and turn"

echo "$TESTS_PASSED passed, 0 failed"
