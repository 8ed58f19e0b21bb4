# lib-agent.sh - what the tests with the real Claude Code CLI share: the
# pinned CLI from scripts/install-claude.sh (a CLI that cannot be
# installed fails the test, never skips it) and the scripted Messages API
# server of tests/agent/fake_messages_api.py on 127.0.0.1.  Source it after
# lib.sh.
src=${ZERG_SOURCE_DIR:?}

# agent_cli: sets CLAUDE to the pinned CLI, installing it if needed.
agent_cli() {
    CLAUDE=$(sh "$src/scripts/install-claude.sh" 2>"$TEST_ROOT/install.err" | tail -n 1) ||
        { cat "$TEST_ROOT/install.err" >&2; fail "scripts/install-claude.sh could not install the CLI"; }
    [ -x "$CLAUDE" ] || fail "install-claude.sh printed '$CLAUDE', not an executable"
}

# agent_server SCENARIO_FILE: starts the scripted server (stopped when the
# test exits), sets SERVER_PID and PORT; requests are recorded in
# $TEST_ROOT/requests.
agent_server() {
    python3 "$src/tests/agent/fake_messages_api.py" --port-file "$TEST_ROOT/port" \
        --record-dir "$TEST_ROOT/requests" --scenario "$1" \
        --log "$TEST_ROOT/server.log" &
    SERVER_PID=$!
    trap agent_stop_server EXIT
    wait_for 10 test -s "$TEST_ROOT/port"
    PORT=$(cat "$TEST_ROOT/port")
}

agent_stop_server() {
    local rc=$?
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    (exit $rc)
    on_exit
}
