#!/usr/bin/env bash
# The real Claude Code CLI (the pinned version, from scripts/install-claude.sh)
# against the scripted Messages API of tests/agent/fake_messages_api.py: a
# Write turn really writes the file; no credentials, root without
# IS_SANDBOX, a 429 it gives up on and a subscription limit end as
# docs/wiki/Agents.md ("What Claude Code reports") says, which is what
# src/agent/ parses.  A CLI that cannot be installed fails the test.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-agent.sh"

agent_cli
"$CLAUDE" --version | grep -q '^2\.1\.332 ' || fail "claude --version: $("$CLAUDE" --version)"
pass "install-claude.sh gives Claude Code 2.1.332"

# ---- the scripted server ---------------------------------------------
RESET=$(($(date +%s) + 3600))
cat > "$TEST_ROOT/scenario.json" <<JSON
{"T-WRITE": [{"tool": "Write", "input": {"file_path": "out/hello.txt",
                                         "content": "hello from the fake model\n"}},
             {"text": "wrote it"}],
 "T-429": [{"status": 429, "retry_after": 1}],
 "T-LIMIT": [{"status": 429, "headers": {
     "anthropic-ratelimit-unified-status": "rejected",
     "anthropic-ratelimit-unified-reset": "$RESET",
     "anthropic-ratelimit-unified-representative-claim": "five_hour"}}],
 "*": [{"text": "done"}]}
JSON
agent_server "$TEST_ROOT/scenario.json"

# claude_run NAME PROMPT [VAR=VALUE...]: runs the CLI in a fresh cwd with
# the environment a test needs to stay offline and fast (see Agents.md),
# stdout in NAME.jsonl, stderr in NAME.err, exit code in RC, seconds in
# SECS.  "-u VAR" arguments remove a variable.
claude_run() {
    local name=$1 prompt=$2 start
    shift 2
    mkdir -p "$TEST_ROOT/$name/cwd" "$TEST_ROOT/$name/home"
    start=$(date +%s%N)
    RC=0
    (cd "$TEST_ROOT/$name/cwd" &&
        env -i PATH="$PATH" HOME="$TEST_ROOT/$name/home" \
            ANTHROPIC_BASE_URL="http://127.0.0.1:$PORT" ANTHROPIC_API_KEY=test \
            IS_SANDBOX=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
            DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 DISABLE_ERROR_REPORTING=1 \
            CLAUDE_CODE_MAX_RETRIES=2 API_TIMEOUT_MS=30000 \
            env "$@" timeout 60 "$CLAUDE" --print --output-format stream-json \
            --verbose --dangerously-skip-permissions "$prompt") \
        > "$TEST_ROOT/$name.jsonl" 2> "$TEST_ROOT/$name.err" || RC=$?
    SECS=$((($(date +%s%N) - start) / 1000000000))
}

# field NAME TYPE EXPR: EXPR (Python, over the dict d) of the last line of
# type TYPE in NAME.jsonl.
field() {
    python3 - "$TEST_ROOT/$1.jsonl" "$2" "$3" <<'PY'
import json, sys
path, want, expr = sys.argv[1:]
last = None
for line in open(path):
    d = json.loads(line)
    if d.get("type") == want:
        last = d
if last is None:
    sys.exit("no %s line in %s" % (want, path))
d = last
print(eval(expr))
PY
}
count_type() { grep -c "\"type\":\"$2\"" "$TEST_ROOT/$1.jsonl" || true; }
count_retries() { grep -c '"subtype":"api_retry"' "$TEST_ROOT/$1.jsonl" || true; }

# ---- a Write turn ------------------------------------------------------
claude_run write 'You are implementing task T-WRITE of the feature "f".'
[ "$RC" -eq 0 ] || { cat "$TEST_ROOT/write.err" >&2; fail "write run exited $RC"; }
f="$TEST_ROOT/write/cwd/out/hello.txt"
[ -f "$f" ] || fail "the Write step did not create $f"
[ "$(cat "$f")" = "hello from the fake model" ] || fail "content of $f: $(cat "$f")"
[ "$(field write result 'd["is_error"]')" = False ] || fail "result is_error"
[ "$(field write result 'd["result"]')" = "wrote it" ] || fail "result text"
[ "$(field write result 'd["num_turns"]')" = 2 ] || fail "num_turns"
[ "$(field write result 'd["usage"]["input_tokens"]')" = 2000 ] || fail "input tokens"
[ "$(field write result 'd["total_cost_usd"] > 0')" = True ] || fail "no cost"
[ "$(field write system 'd["subtype"]')" = init ] || fail "no system init line"
[ "$(count_type write user)" -eq 1 ] || fail "expected one tool-result (user) line"
# The relative path of the scenario went out absolute (the history of the
# second request holds the tool_use).
grep -q "\"file_path\": \"$TEST_ROOT/write/cwd/out/hello.txt\"" \
    "$TEST_ROOT"/requests/*-POST-v1_messages.json ||
    fail "the server did not send an absolute file_path"
pass "a Write step creates the file in the cwd; result has cost, tokens, turns"

# ---- no credentials ----------------------------------------------------
claude_run nokey 'You are implementing task T-NOKEY of the feature "f".' \
    -u ANTHROPIC_API_KEY
[ "$RC" -ne 0 ] || fail "no API key: exit 0"
[ "$RC" -ne 124 ] || fail "no API key: did not exit within 60 s"
[ "$SECS" -le 10 ] || fail "no API key: took ${SECS}s"
[ "$(field nokey result 'd["is_error"]')" = True ] || fail "no API key: is_error"
field nokey result 'd["result"]' | grep -q '^Not logged in' ||
    fail "no API key: result $(field nokey result 'd["result"]')"
[ "$(field nokey assistant 'd["error"]')" = authentication_failed ] ||
    fail "no API key: assistant error"
pass "no API key and an empty HOME: exit $RC in ${SECS}s, 'Not logged in'"

# ---- root without IS_SANDBOX -----------------------------------------
claude_run root 'You are implementing task T-ROOT of the feature "f".' -u IS_SANDBOX
if [ "$(id -u)" -eq 0 ]; then
    [ "$RC" -eq 1 ] || fail "root without IS_SANDBOX: exit $RC"
    grep -q -- '--dangerously-skip-permissions cannot be used with root/sudo privileges' \
        "$TEST_ROOT/root.err" || fail "root: stderr $(cat "$TEST_ROOT/root.err")"
    [ ! -s "$TEST_ROOT/root.jsonl" ] || fail "root: the refusal printed stream-json"
    pass "root without IS_SANDBOX: exit 1, the refusal on stderr, no stream"
else
    [ "$RC" -eq 0 ] || fail "not root, without IS_SANDBOX: exit $RC"
    pass "not root: IS_SANDBOX is not needed"
fi

# ---- 429: the CLI retries CLAUDE_CODE_MAX_RETRIES times, then gives up --
before=$(grep -c 'task=T-429 ' "$TEST_ROOT/server.log" || true)
claude_run r429 'You are implementing task T-429 of the feature "f".'
[ "$RC" -eq 1 ] || fail "429: exit $RC"
asked=$(($(grep -c 'task=T-429 ' "$TEST_ROOT/server.log") - before))
[ "$asked" -eq 3 ] || fail "429: $asked requests, want 1 + CLAUDE_CODE_MAX_RETRIES=2"
[ "$(count_retries r429)" -eq 2 ] || fail "429: api_retry lines"
[ "$(field r429 system 'd["error_status"], d["error"], d["max_retries"]')" = "(429, 'rate_limit', 2)" ] ||
    fail "429: api_retry line $(field r429 system 'd')"
# retry-after: 1 is honoured (the delay is at least 1 s).
[ "$(field r429 system 'd["retry_delay_ms"] >= 1000')" = True ] || fail "429: delay"
[ "$(field r429 result 'd["api_error_status"]')" = 429 ] || fail "429: status"
[ "$(field r429 assistant 'd["error"]')" = rate_limit ] || fail "429: error"
field r429 result 'd["result"]' | grep -q 'Request rejected (429)' || fail "429: result"
[ "$(count_type r429 rate_limit_event)" -eq 0 ] || fail "429 with an API key: a reset time"
pass "429: 2 retries (CLAUDE_CODE_MAX_RETRIES), then exit 1 with api_error_status 429"

# ---- a subscription limit: no retry, a reset time ----------------------
claude_run limit 'You are implementing task T-LIMIT of the feature "f".' \
    -u ANTHROPIC_API_KEY CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-test
[ "$RC" -eq 1 ] || fail "usage limit: exit $RC"
[ "$(count_retries limit)" -eq 0 ] || fail "usage limit: the CLI retried"
[ "$(field limit rate_limit_event 'd["rate_limit_info"]["resetsAt"]')" = "$RESET" ] ||
    fail "usage limit: resetsAt"
field limit result 'd["result"]' | grep -q "^You've hit your 5-hour limit · resets " ||
    fail "usage limit: result $(field limit result 'd["result"]')"
pass "usage limit: rate_limit_event with resetsAt, result 'You've hit your 5-hour limit'"

echo "$TESTS_PASSED passed, 0 failed"
