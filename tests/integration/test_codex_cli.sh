#!/usr/bin/env bash
# executor.kind: codex end to end (DESIGN §20), with the REAL Codex CLI
# 0.171.0 (scripts/install-agent.sh codex) against the scripted Responses
# API of tests/agent/fake_responses_api.py on 127.0.0.1 (a model provider
# in $CODEX_HOME/config.toml; the CLI's own retries off):
#   a. two tasks whose agent writes a file with its own tool: complete, the
#      session (thread id) and the tokens (cache reads apart) in the state
#   b. a 401: environment, the rush stops fast, the key fix, nothing charged
#   c. a 429: rate_limit, the pool pauses, then complete, nothing charged
#   d. a 500: class task, charged, complete on attempt 2
#   e. no network (a closed port): the CLI's "Reconnecting" events are no
#      progress: the attempt goes stale and is killed; the rush ends
#   f. no key and no login: the pre-flight stops the rush before any
#      worker, naming `codex login` / CODEX_API_KEY
#   g. a crash mid-task: the next attempt runs `codex exec ... resume
#      THREAD` and its request carries the earlier turn (DESIGN §21)
# A CLI that cannot be installed fails the test.
source "$(dirname "$0")/lib.sh"

CODEX=$(sh "$ZERG_SOURCE_DIR/scripts/install-agent.sh" codex 2>"$TEST_ROOT/install.err" | tail -n 1) ||
    { cat "$TEST_ROOT/install.err" >&2; fail "install-agent.sh codex could not install the CLI"; }
[ -x "$CODEX" ] || fail "install-agent.sh printed '$CODEX', not an executable"

cat > "$TEST_ROOT/scenario.json" <<'JSON'
{"C-L1-001": [{"shell": "echo from codex 1 > c1.txt"}, {"text": "wrote c1.txt"}],
 "C-L1-002": [{"shell": "echo from codex 2 > c2.txt"}, {"text": "wrote c2.txt"}],
 "U-L1-001": [{"status": 401}, {"text": "never"}],
 "R-L1-001": [{"status": 429, "times": 1}, {"text": "done after the limit"}],
 "S-L1-001": [{"status": 500, "times": 1}, {"text": "done after the 500"}],
 "K-L1-001": [{"shell": "echo part one > k1.txt"}, {"hang": true, "times": 1},
              {"text": "done after the resume"}],
 "*": [{"text": "done"}]}
JSON
python3 "$ZERG_SOURCE_DIR/tests/agent/fake_responses_api.py" --port-file "$TEST_ROOT/port" \
    --record-dir "$TEST_ROOT/requests" --scenario "$TEST_ROOT/scenario.json" \
    --log "$TEST_ROOT/server.log" &
SERVER_PID=$!
stop_server() { local rc=$?; kill "$SERVER_PID" 2>/dev/null || true; (exit $rc); on_exit; }
trap stop_server EXIT
wait_for 10 test -s "$TEST_ROOT/port"
PORT=$(cat "$TEST_ROOT/port")

# codex_home DIR PORT: a CODEX_HOME whose model provider is the server.
codex_home() {
    mkdir -p "$1"
    cat > "$1/config.toml" <<EOF
model_provider = "zerg-test"
[model_providers.zerg-test]
name = "zerg test"
base_url = "http://127.0.0.1:$2/v1"
env_key = "CODEX_API_KEY"
wire_api = "responses"
supports_websockets = false
request_max_retries = 0
stream_max_retries = 0
EOF
}

# codex_project NAME [WORKER_KEY...]: a project run by the real Codex CLI.
codex_project() {
    new_project "$1"
    shift
    mkdir -p "$PROJ/home"
    {
        printf 'rush:\n  isolation: none\nexecutor:\n  kind: codex\n  codex: %s\n' "$CODEX"
        printf 'workers:\n  heartbeat_interval_seconds: 0.1\n  heartbeat_stale_threshold: 2\n'
        printf '  spawn_ready_timeout_seconds: 10\n  backoff_base_seconds: 0.1\n'
        printf '  backoff_max_seconds: 0.5\n'
        for k in "$@"; do printf '  %s\n' "$k"; done
    } > "$PROJ/.zerg/config.yaml"
}
crush() {
    RC=0
    HOME="$PROJ/home" CODEX_HOME="${CXHOME:-$TEST_ROOT/codex}" CODEX_API_KEY=${KEY-test-key} \
        "$ZERG" -C "$PROJ" rush --no-progress "$@" > "$PROJ/rush.out" 2>&1 || RC=$?
}
codex_home "$TEST_ROOT/codex" "$PORT"

# ---- a. the agent writes files with its own tool -------------------------
codex_project files
sed -i '/^  codex: /a\  args: [-m, gpt-6.2-sol]\n  pricing: ["gpt-6.2-sol=1/10/0.1/0"]' "$PROJ/.zerg/config.yaml"
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "C-L1-001", "title": "write c1", "level": 1, "files": {"create": ["c1.txt"]}},
 {"id": "C-L1-002", "title": "write c2", "level": 1, "files": {"create": ["c2.txt"]}}]}
JSON
crush --workers 2
[ "$RC" -eq 0 ] || fail "codex graph: rush exited $RC: $(tail -20 "$PROJ/rush.out")"
[ "$(cat "$PROJ/c1.txt")" = "from codex 1" ] || fail "c1.txt: $(cat "$PROJ/c1.txt" 2>&1)"
[ "$(cat "$PROJ/c2.txt")" = "from codex 2" ] || fail "c2.txt: $(cat "$PROJ/c2.txt" 2>&1)"
# Two requests a task (the tool turn, the answer), each 1000 in (200 of
# them cached) and 50 out.
python3 - "$PROJ/.zerg/state/f.json" <<'PY' || fail "codex ledger in the state"
import json, sys
for tid in ("C-L1-001", "C-L1-002"):
    t = json.load(open(sys.argv[1]))["tasks"][tid]
    assert t["status"] == "complete" and t["retry_count"] == 0, t
    assert t["input_tokens"] == 1600 and t["cache_read_tokens"] == 400, t
    assert t["output_tokens"] == 100 and len(t["session_id"]) > 8, t
    # No cost from Codex: priced from executor.pricing for the model of
    # executor.args, marked estimated.
    assert t["model"] == "gpt-6.2-sol" and t["cost_estimated"], t
    assert abs(t["cost_usd"] - 0.00264) < 1e-9, t
PY
grep -q '"type":"command_execution"' "$PROJ/.zerg/logs/f/tasks/C-L1-001/attempt-1.log" ||
    fail "the attempt's log lacks Codex's own tool call"
grep -q 'implementing task C-L1-001' "$TEST_ROOT"/requests/*.json || fail "the prompt did not reach the API (stdin)"
pass "codex: the agent's own tool writes the files; session, tokens (cache apart) and a priced cost recorded"

# ---- b. 401 ----------------------------------------------------------------
codex_project unauthorized
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "U-L1-001", "title": "refused", "level": 1}]}
JSON
T0=$(date +%s)
crush
took=$(( $(date +%s) - T0 ))
[ "$RC" -eq 1 ] || fail "401: rush exited $RC: $(tail -5 "$PROJ/rush.out")"
grep -q 'CODEX_API_KEY' "$PROJ/rush.out" || fail "401: no key fix: $(tail -5 "$PROJ/rush.out")"
[ "$(state_field tasks.U-L1-001.retry_count)" = 0 ] || fail "401 charged a retry"
[ "$(events task_claimed)" -le 1 ] || fail "401: $(events task_claimed) claims, the rush retried"
pass "codex 401: environment, exit 1 in ${took}s with the key fix, nothing charged"

# ---- c. 429 ----------------------------------------------------------------
codex_project limited
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "R-L1-001", "title": "limited", "level": 1}]}
JSON
crush
[ "$RC" -eq 0 ] || fail "429: rush exited $RC: $(tail -5 "$PROJ/rush.out")"
has_event pool_pause || fail "429: no pool_pause"
[ "$(state_field tasks.R-L1-001.retry_count)" = 0 ] || fail "429 charged a retry"
pass "codex 429: rate_limit, the pool paused, then complete, nothing charged"

# ---- d. 500 ----------------------------------------------------------------
codex_project overloaded "retry_attempts: 2"
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "S-L1-001", "title": "server error", "level": 1}]}
JSON
crush
[ "$RC" -eq 0 ] || fail "500: rush exited $RC: $(tail -5 "$PROJ/rush.out")"
[ "$(state_field tasks.S-L1-001.retry_count)" = 1 ] || fail "500: retry_count $(state_field tasks.S-L1-001.retry_count)"
[ "$(state_field tasks.S-L1-001.attempt)" = 2 ] || fail "500: attempt $(state_field tasks.S-L1-001.attempt)"
pass "codex 500: class task, charged, complete on attempt 2"

# ---- e. no network ---------------------------------------------------------
codex_home "$TEST_ROOT/codex-dead" 9
codex_project offline "task_stale_timeout_seconds: 4" "retry_attempts: 0"
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "N-L1-001", "title": "offline", "level": 1}]}
JSON
CXHOME="$TEST_ROOT/codex-dead" crush
[ "$RC" -eq 1 ] || fail "offline: rush exited $RC: $(tail -5 "$PROJ/rush.out")"
[ "$(task_status N-L1-001)" = failed ] || fail "offline: $(task_status N-L1-001)"
[ "$(state_field tasks.N-L1-001.reason)" = timeout ] || fail "offline: reason $(state_field tasks.N-L1-001.reason)"
grep -q 'Reconnecting' "$PROJ/.zerg/logs/f/tasks/N-L1-001/attempt-1.log" ||
    fail "offline: the CLI never said it was reconnecting"
pass "codex without network: it never ends on its own; the attempt goes stale, is killed, the rush ends"

# ---- f. no key, no login: the pre-flight ---------------------------------
codex_project nologin
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "C-L1-001", "title": "never runs", "level": 1}]}
JSON
KEY= CXHOME="$TEST_ROOT/codex-empty" crush
[ "$RC" -eq 1 ] || fail "no login: rush exited $RC"
grep -q 'pre-flight failed: Codex CLI is not logged in' "$PROJ/rush.out" ||
    fail "no login: $(cat "$PROJ/rush.out")"
grep -q 'codex login' "$PROJ/rush.out" || fail "no login fix"
[ ! -e "$PROJ/.zerg/state/f.json" ] || fail "no login: a state was written"
pass "codex without key or login: the pre-flight stops the rush with the fix"

# ---- g. a crashed attempt resumes its thread --------------------------------
codex_project resume "task_stale_timeout_seconds: 600" "max_task_crashes: 2"
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "K-L1-001", "title": "write, then hang", "level": 1,
  "files": {"create": ["k1.txt"]}}]}
JSON
requests_of() { grep -l -- "$1" "$TEST_ROOT"/requests/*.json 2>/dev/null | sort; }
HOME="$PROJ/home" CODEX_HOME="$TEST_ROOT/codex" CODEX_API_KEY=test-key \
    "$ZERG" -C "$PROJ" rush --no-progress --workers 1 > "$PROJ/rush.out" 2>&1 &
RUSH_PID=$!
wait_for 60 sh -c "[ -f '$PROJ/k1.txt' ] && [ \$(grep -l K-L1-001 '$TEST_ROOT'/requests/*.json 2>/dev/null | wc -l) -ge 2 ]"
first=$(requests_of K-L1-001)
kill -9 "$(worker_pid 0)"
rush_wait 120
[ "$RUSH_RC" -eq 0 ] || fail "resume: rush exited $RUSH_RC: $(tail -20 "$PROJ/rush.out")"
[ "$(state_field tasks.K-L1-001.attempt)" = 2 ] || fail "resume: attempt $(state_field tasks.K-L1-001.attempt)"
[ "$(state_field tasks.K-L1-001.retry_count)" = 0 ] || fail "resume: the crash was charged"
tid=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    if l.startswith("{"):
        print(json.loads(l).get("thread_id", "")); break' "$PROJ/.zerg/logs/f/tasks/K-L1-001/attempt-1.log")
[ -n "$tid" ] || fail "attempt 1 has no thread id"
grep -q -- "resume $tid" "$PROJ/.zerg/logs/f/tasks/K-L1-001/attempt-2.log" ||
    fail "attempt 2 did not resume $tid: $(head -3 "$PROJ/.zerg/logs/f/tasks/K-L1-001/attempt-2.log")"
resumed=$(comm -13 <(echo "$first") <(requests_of K-L1-001) | tail -1)
[ -n "$resumed" ] || fail "attempt 2 sent no request"
grep -q 'echo part one' "$resumed" || fail "the resumed request lacks the earlier turn"
grep -q 'was interrupted' "$resumed" || fail "the resumed request lacks the new prompt"
n1=$(echo "$first" | wc -l); n2=$(comm -13 <(echo "$first") <(requests_of K-L1-001) | wc -l)
b1=$(cat $first | wc -c); b2=$(comm -13 <(echo "$first") <(requests_of K-L1-001) | xargs cat | wc -c)
echo "# codex attempt 1 (fresh): $n1 requests, $b1 bytes; attempt 2 (resumed): $n2 requests, $b2 bytes"
[ "$n2" -lt "$n1" ] || fail "the resumed attempt sent as many requests ($n2) as a fresh one ($n1)"
pass "codex: a crashed attempt resumes its thread (exec resume), the earlier turn in its request"

no_procs
echo "$TESTS_PASSED passed, 0 failed"
