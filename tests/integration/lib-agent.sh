# lib-agent.sh - what the tests with the real Claude Code CLI share: the
# pinned CLI from scripts/install-claude.sh (a CLI that cannot be
# installed fails the test, never skips it) and the scripted Messages API
# server of tests/agent/fake_messages_api.py on 127.0.0.1.  Source it after
# lib.sh.
src=${ZERG_SOURCE_DIR:?}

# agent_cli: sets CLAUDE to the pinned CLI, installing it if needed.
agent_cli() {
    CLAUDE=$(sh "$src/scripts/install-agent.sh" claude 2>"$TEST_ROOT/install.err" | tail -n 1) ||
        { cat "$TEST_ROOT/install.err" >&2; fail "scripts/install-agent.sh claude could not install the CLI"; }
    [ -x "$CLAUDE" ] || fail "install-agent.sh printed '$CLAUDE', not an executable"
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

# agent_offline_env: what the CLI needs to stay offline and fast
# (docs/wiki/Agents.md), against the server agent_server started; the
# workers inherit it.  No retries of its own: zerg's handling is tested.
# ROOT is 1 when the tests run as root (the CLI then needs IS_SANDBOX).
agent_offline_env() {
    export ANTHROPIC_BASE_URL="http://127.0.0.1:$PORT" ANTHROPIC_API_KEY=test
    export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1
    export DISABLE_AUTOUPDATER=1 DISABLE_ERROR_REPORTING=1
    export CLAUDE_CODE_MAX_RETRIES=0 API_TIMEOUT_MS=60000
    ROOT=0
    if [ "$(id -u)" -eq 0 ]; then ROOT=1; export IS_SANDBOX=1; fi
}

# agent_project NAME [ISOLATION [RUSH_KEY...]]: a project whose executor is
# the real CLI, with its own empty HOME; each RUSH_KEY ("max_cost_usd: 1")
# goes in the rush section, config_append adds workers keys.
agent_project() {
    local name=$1 isolation=${2:-none} key
    shift $(($# < 2 ? $# : 2))
    new_project "$name"
    mkdir -p "$PROJ/home"
    {
        printf 'resilience:\n  reconcile_interval_seconds: 0.5\nrush:\n'
        printf '  isolation: %s\n' "$isolation"
        for key in "$@"; do printf '  %s\n' "$key"; done
        printf 'executor:\n  claude: %s\nworkers:\n' "$CLAUDE"
        printf '  heartbeat_interval_seconds: 0.1\n  heartbeat_stale_threshold: 1\n'
        printf '  spawn_backoff_base_seconds: 0.1\n  spawn_backoff_max_seconds: 0.5\n'
        printf '  spawn_ready_timeout_seconds: 10\n'
        printf '  backoff_base_seconds: 0.1\n  backoff_max_seconds: 0.5\n'
    } > "$PROJ/.zerg/config.yaml"
}

# zrush ARGS: a rush with the project's HOME, output in rush.out, RC.
zrush() {
    RC=0
    HOME="$PROJ/home" "$ZERG" -C "$PROJ" rush --no-progress "$@" > "$PROJ/rush.out" 2>&1 || RC=$?
}
