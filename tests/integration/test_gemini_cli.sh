#!/usr/bin/env bash
# executor.kind: gemini (DESIGN §20).  The REAL Gemini CLI 0.61.0
# (scripts/install-agent.sh gemini) for what it does without a model
# server, which is all it can be made to do here (it cannot be pointed at
# a local server headless):
#   a. no credentials at run time: exit 41, no stream: environment, the rush
#      stops fast with the GEMINI_API_KEY fix, nothing charged
#   b. a fresh project folder is untrusted, which makes the headless CLI
#      exit 55: zerg sets GEMINI_CLI_TRUST_WORKSPACE, so it runs (its init
#      event comes); with no network it then retries on stderr only, which
#      is no progress: the attempt goes stale and is killed
#   c. no key and no settings file: the pre-flight stops the rush
# And a STAND-IN (tests/fixtures/gemini/, event shapes from the CLI's own
# formatter, see its README) for a run that reaches a model:
#   d. the stream's tool call and deltas: complete, the final message put
#      together from its deltas, tokens (cache apart) and the model from
#      the result's stats
#   e. a result with status error: class task, charged
# A CLI that cannot be installed fails the test.
source "$(dirname "$0")/lib.sh"

GEMINI=$(sh "$ZERG_SOURCE_DIR/scripts/install-agent.sh" gemini 2>"$TEST_ROOT/install.err" | tail -n 1) ||
    { cat "$TEST_ROOT/install.err" >&2; fail "install-agent.sh gemini could not install the CLI"; }
[ -x "$GEMINI" ] || fail "install-agent.sh printed '$GEMINI', not an executable"
FIX=$ZERG_SOURCE_DIR/tests/fixtures/gemini

# gemini_project NAME BIN [WORKER_KEY...]: a project run by BIN as Gemini.
gemini_project() {
    new_project "$1"
    local bin=$2
    shift 2
    mkdir -p "$PROJ/home"
    {
        printf 'rush:\n  isolation: none\nexecutor:\n  kind: gemini\n  gemini: %s\n' "$bin"
        printf 'workers:\n  heartbeat_interval_seconds: 0.1\n  heartbeat_stale_threshold: 2\n'
        printf '  spawn_ready_timeout_seconds: 10\n  backoff_base_seconds: 0.1\n'
        printf '  backoff_max_seconds: 0.5\n'
        for k in "$@"; do printf '  %s\n' "$k"; done
    } > "$PROJ/.zerg/config.yaml"
}
# grush: a rush with the project's HOME and no Google credentials.
grush() {
    RC=0
    env -u GEMINI_API_KEY -u GOOGLE_API_KEY -u GOOGLE_GENAI_USE_VERTEXAI \
        -u GOOGLE_GENAI_USE_GCA -u GEMINI_CLI_TRUST_WORKSPACE \
        HOME="$PROJ/home" ${GKEY:+GEMINI_API_KEY=$GKEY} \
        "$ZERG" -C "$PROJ" rush --no-progress "$@" > "$PROJ/rush.out" 2>&1 || RC=$?
}

# ---- a. exit 41 ------------------------------------------------------------
gemini_project noauth "$GEMINI"
mkdir -p "$PROJ/home/.gemini" && echo '{}' > "$PROJ/home/.gemini/settings.json"
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "A-L1-001", "title": "no auth", "level": 1}]}
JSON
grush
[ "$RC" -eq 1 ] || fail "no auth: rush exited $RC: $(tail -5 "$PROJ/rush.out")"
grep -q 'GEMINI_API_KEY' "$PROJ/rush.out" || fail "no auth: no fix: $(tail -5 "$PROJ/rush.out")"
grep -q 'exited with code 41' "$PROJ/.zerg/logs/f/tasks/A-L1-001/attempt-1.log" ||
    fail "no auth: the CLI did not exit 41: $(tail -3 "$PROJ/.zerg/logs/f/tasks/A-L1-001/attempt-1.log")"
[ "$(state_field tasks.A-L1-001.retry_count)" = 0 ] || fail "no auth charged a retry"
pass "gemini without credentials (real CLI): exit 41 is environment, the rush stops with the fix"

# ---- b. the trust and stderr noise -------------------------------------
gemini_project trust "$GEMINI" "task_stale_timeout_seconds: 10" "retry_attempts: 0"
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "B-L1-001", "title": "offline", "level": 1}]}
JSON
GKEY=test-key grush
log=$PROJ/.zerg/logs/f/tasks/B-L1-001/attempt-1.log
[ "$RC" -eq 1 ] || fail "offline: rush exited $RC: $(tail -5 "$PROJ/rush.out")"
! grep -q 'not running in a trusted directory' "$log" || fail "the worktree was not trusted: $(tail -3 "$log")"
grep -q '"type":"init"' "$log" || fail "the CLI never started its stream: $(tail -5 "$log")"
grep -q 'Retrying with backoff' "$log" || fail "the CLI did not retry on stderr: $(tail -5 "$log")"
[ "$(state_field tasks.B-L1-001.reason)" = timeout ] || fail "offline: reason $(state_field tasks.B-L1-001.reason)"
pass "gemini (real CLI): the worktree is trusted; retries on stderr are no progress, the attempt goes stale"

# ---- c. the pre-flight -----------------------------------------------------
gemini_project nokey "$GEMINI"
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "C-L1-001", "title": "never runs", "level": 1}]}
JSON
grush
[ "$RC" -eq 1 ] || fail "pre-flight: rush exited $RC"
grep -q 'pre-flight failed: Gemini CLI has no credentials' "$PROJ/rush.out" || fail "pre-flight: $(cat "$PROJ/rush.out")"
[ ! -e "$PROJ/.zerg/state/f.json" ] || fail "pre-flight: a state was written"
pass "gemini without key or settings: the pre-flight stops the rush with the fix"

# ---- d, e. the stand-in ------------------------------------------------------
# It answers --version like the CLI, reads the prompt from stdin as the
# CLI does, writes the file the stream's write_file names, then replays
# the stream; the task id picks the fixture.
cat > "$TEST_ROOT/gemini-standin" <<EOF
#!/bin/sh
[ "\$1" = --version ] && { echo 0.61.0; exit 0; }
[ "\$GEMINI_CLI_TRUST_WORKSPACE" = true ] || { echo "not trusted" >&2; exit 55; }
prompt=\$(cat)
case "\$prompt" in
*G-L1-001*) printf 'from gemini\n' > gem.txt; cat "$FIX/success.jsonl" ;;
*) cat "$FIX/api-error.jsonl"; exit 1 ;;
esac
EOF
chmod +x "$TEST_ROOT/gemini-standin"
gemini_project replay "$TEST_ROOT/gemini-standin" "retry_attempts: 1"
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "G-L1-001", "title": "write gem", "level": 1, "files": {"create": ["gem.txt"]}},
 {"id": "G-L1-002", "title": "turn limit", "level": 1}]}
JSON
GKEY=test-key grush --workers 2
[ "$RC" -eq 1 ] || fail "replay: rush exited $RC: $(tail -5 "$PROJ/rush.out")"
python3 - "$PROJ/.zerg/state/f.json" <<'PY' || fail "replay: the ledger"
import json, sys
s = json.load(open(sys.argv[1]))["tasks"]
g = s["G-L1-001"]
assert g["status"] == "complete", g
assert g["input_tokens"] == 2200 and g["cache_read_tokens"] == 3000, g
assert g["output_tokens"] == 150 and g["model"] == "gemini-2.5-pro", g
assert g["session_id"] == "afad6d15-47f2-4016-af3d-4696404ae787", g
e = s["G-L1-002"]
assert e["status"] == "failed" and e["retry_count"] == 1, e
PY
HOME="$PROJ/home" "$ZERG" -C "$PROJ" logs --task G-L1-002 > "$PROJ/logs.out" 2>&1 || true
grep -q 'Reached max session turns' "$PROJ/rush.out" "$PROJ/logs.out" ||
    fail "replay: the failure's reason is not the CLI's: $(tail -5 "$PROJ/rush.out")"
pass "gemini stream (stand-in): complete with tokens and model; an error result is the task's, charged"

no_procs
echo "$TESTS_PASSED passed, 0 failed"
