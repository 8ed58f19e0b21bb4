#!/usr/bin/env bash
# The executor pre-flight (DESIGN §14, src/cli/preflight.c) as a user meets
# it: `zerg validate` and `zerg rush` over a graph with tasks without
# `command` check that the executor answers `--version` where the workers
# run -- on PATH, or inside the image through a (fake) container runtime
# -- and fail at once with the fix; long estimates get a warning, capped.
source "$(dirname "$0")/lib.sh"

mkdir -p "$TEST_ROOT/bin"
# stub NAME EXIT: an executor printing a version and exiting EXIT.
stub() {
    printf '#!/bin/sh\necho "9.9.9 (%s)"\necho "stub error line" >&2\nexit %s\n' "$1" "$2" \
        > "$TEST_ROOT/bin/$1"
    chmod +x "$TEST_ROOT/bin/$1"
}
stub good-claude 0
stub bad-claude 3

agent_graph() {
    graph <<'JSON'
{"feature": "f", "tasks": [{"id": "A-L1-001", "title": "agent", "level": 1},
                           {"id": "A-L1-002", "title": "agent", "level": 1},
                           {"id": "C-L1-003", "title": "cmd", "level": 1, "command": "true"}]}
JSON
}
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
# run_z ARGS: zerg in PROJ, stdout/stderr to out/err files, RC, MS.
run_z() {
    local start
    start=$(date +%s%N)
    RC=0
    "$ZERG" -C "$PROJ" "$@" > "$PROJ/out" 2> "$PROJ/err" || RC=$?
    MS=$(ms_since "$start")
}

# ---- not on PATH -----------------------------------------------------------
new_project missing
config_append "executor:" "  claude: zerg-test-no-such-claude"
agent_graph
run_z validate
[ "$RC" -eq 1 ] || fail "validate, missing executor: exit $RC"
grep -q "Executor: FAILED: the executor \`zerg-test-no-such-claude\` (executor.claude) is not found on PATH, and 2 tasks have no \`command\`" "$PROJ/out" ||
    fail "validate stdout: $(cat "$PROJ/out")"
grep -q "^zerg validate: pre-flight failed: .*Fix: install the Claude Code CLI" "$PROJ/err" ||
    fail "validate stderr: $(cat "$PROJ/err")"
run_z validate --json
[ "$RC" -eq 1 ] || fail "validate --json, missing executor: exit $RC"
python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
assert d["ok"] is False and d["preflight"]["ok"] is False, d
assert d["preflight"]["agent_tasks"] == 2, d' "$PROJ/out" || fail "validate --json: $(cat "$PROJ/out")"
run_z rush --no-progress
[ "$RC" -eq 1 ] || fail "rush, missing executor: exit $RC"
[ "$MS" -lt 1000 ] || fail "rush, missing executor: took ${MS} ms"
grep -q "^zerg rush: pre-flight failed: .*not found on PATH.*Fix: install the Claude Code CLI.*set executor.claude" "$PROJ/err" ||
    fail "rush stderr: $(cat "$PROJ/err")"
[ ! -e "$PROJ/.zerg/monitor.log" ] || fail "rush wrote monitor.log: a worker may have started"
[ -z "$(ls -A "$PROJ/.zerg/state" 2>/dev/null)" ] || fail "rush wrote state: $(ls "$PROJ/.zerg/state")"
pass "executor not on PATH: validate exit 1, rush exit 1 in ${MS} ms with the fix, nothing written"

# ---- a path that fails --version; one that answers ---------------------------
new_project failing
config_append "executor:" "  claude: $TEST_ROOT/bin/bad-claude"
agent_graph
run_z rush --no-progress
[ "$RC" -eq 1 ] || fail "rush, failing executor: exit $RC"
grep -q "\`$TEST_ROOT/bin/bad-claude --version\` exited 3: stub error line" "$PROJ/err" ||
    fail "rush stderr: $(cat "$PROJ/err")"
pass "an executor whose --version exits 3: rush exit 1 saying so"

new_project answering
config_append "executor:" "  claude: good-claude"
agent_graph
PATH="$TEST_ROOT/bin:$PATH" run_z validate
[ "$RC" -eq 0 ] || fail "validate, answering executor: exit $RC: $(cat "$PROJ/err")"
grep -q "^Executor: good-claude (executor.claude) answers on PATH: 9.9.9 (good-claude)" "$PROJ/out" ||
    fail "validate stdout: $(cat "$PROJ/out")"
grep -q "^OK: f is valid" "$PROJ/out" || fail "validate: no OK line"
pass "an executor that answers on PATH: validate exit 0 and shows its version"

# ---- kind command, and --executor ------------------------------------------------
new_project command
config_append '  executor: ["zerg-test-no-such-agent", "--go"]'
agent_graph
run_z validate
[ "$RC" -eq 1 ] || fail "validate, kind command: exit $RC"
grep -q "\`zerg-test-no-such-agent\` (workers.executor) is not found on PATH" "$PROJ/err" ||
    fail "kind command stderr: $(cat "$PROJ/err")"
run_z rush --no-progress --executor "zerg-test-other-agent --x"
[ "$RC" -eq 1 ] || fail "rush --executor: exit $RC"
grep -q "\`zerg-test-other-agent\` (--executor) is not found" "$PROJ/err" ||
    fail "rush --executor stderr: $(cat "$PROJ/err")"
pass "kind command and --executor: their first word is checked"

# ---- container mode: inside the image --------------------------------------------
# A runtime CLI compatible with docker: it answers the probes and runs
# `run --rm --network=none IMAGE EXE --version` as an image would that
# has only `fine-agent`.
cat > "$TEST_ROOT/bin/fake-docker" <<SH
#!/bin/sh
echo "\$*" >> "$TEST_ROOT/runtime.log"
case "\$1" in
--version) echo "Docker version 99.0, build fake" ;;
info) echo ok ;;
image) echo sha256:0123 ;;
run)
    shift
    while [ "\${1#-}" != "\$1" ]; do shift; done
    image=\$1; shift
    [ "\$1" = fine-agent ] && { echo "fine-agent 1.0 in \$image"; exit 0; }
    echo "docker: Error response from daemon: exec: \"\$1\": executable file not found in \\\$PATH" >&2
    exit 127 ;;
esac
SH
chmod +x "$TEST_ROOT/bin/fake-docker"
new_project image
cat >> "$PROJ/.zerg/config.yaml" <<YAML
  mode: container
container:
  runtime: $TEST_ROOT/bin/fake-docker
  image: my-worker:1
YAML
agent_graph
run_z validate
[ "$RC" -eq 1 ] || fail "validate, image without claude: exit $RC: $(cat "$PROJ/err")"
grep -q "\`claude\` (executor.claude) is not found in the image (\`fake-docker run --rm my-worker:1 claude --version\` exited 127" "$PROJ/err" ||
    fail "image stderr: $(cat "$PROJ/err")"
grep -q "docker/Containerfile" "$PROJ/err" || fail "image: no Containerfile fix: $(cat "$PROJ/err")"
grep -q "^run --rm --network=none my-worker:1 claude --version$" "$TEST_ROOT/runtime.log" ||
    fail "the runtime was not asked to run claude --version: $(cat "$TEST_ROOT/runtime.log")"
run_z rush --no-progress
[ "$RC" -eq 1 ] || fail "rush, image without claude: exit $RC"
grep -q "^zerg rush: pre-flight failed: .*in the image" "$PROJ/err" || fail "rush image stderr: $(cat "$PROJ/err")"
sed -i 's/^  image: my-worker:1$/  image: my-worker:1\nexecutor:\n  claude: fine-agent/' "$PROJ/.zerg/config.yaml"
run_z validate
[ "$RC" -eq 0 ] || fail "validate, image with the executor: exit $RC: $(cat "$PROJ/err")"
grep -q "^Executor: fine-agent (executor.claude) answers in the image: fine-agent 1.0 in my-worker:1" "$PROJ/out" ||
    fail "image ok stdout: $(cat "$PROJ/out")"
pass "container mode: the executor is looked for inside the image, with the Containerfile fix"

# ---- long estimates: a warning each, capped -----------------------------------------
new_project estimates
python3 - > "$PROJ/.gsd/specs/f/task-graph.json" <<'PY'
import json
tasks = [{"id": "E-L1-%03d" % i, "title": "t", "level": 1, "command": "true",
          "estimate_minutes": 20 if i < 7 else 5} for i in range(8)]
print(json.dumps({"feature": "f", "tasks": tasks}))
PY
run_z validate
[ "$RC" -eq 0 ] || fail "validate with long estimates: exit $RC (warnings must not fail it)"
[ "$(grep -c 'is estimated at 20 min, longer than workers.task_stale_timeout_seconds (600 s): raise the timeout' "$PROJ/out")" -eq 5 ] ||
    fail "validate: expected 5 warning lines: $(cat "$PROJ/out")"
grep -q "^  ... and 2 more tasks like that$" "$PROJ/out" || fail "validate: no 'and 2 more'"
grep -q "Executor: not needed" "$PROJ/out" || fail "validate: executor line"
run_z rush --no-progress
[ "$RC" -eq 0 ] || fail "rush with long estimates: exit $RC: $(cat "$PROJ/err")"
[ "$(grep -c '^zerg rush: warning: task E-L1-00[0-9] is estimated at 20 min' "$PROJ/err")" -eq 5 ] ||
    fail "rush: expected 5 warnings: $(cat "$PROJ/err")"
grep -q "^zerg rush: warning: (the stale check is about progress" "$PROJ/err" || fail "rush: no progress note"
pass "estimates over the stale timeout: 5 warnings and 'and 2 more', the rush still runs"

# ---- docker/Containerfile: what agent tasks need, at the pinned version -----
python3 - "${ZERG_SOURCE_DIR:?}" <<'PY' || fail "docker/Containerfile"
import re, sys
src = sys.argv[1]
text = open(src + "/docker/Containerfile").read()
pin = re.search(r"^claude\) version=(\S+) ", open(src + "/scripts/install-agent.sh").read(), re.M).group(1)
known = {"FROM", "RUN", "COPY", "ENV", "WORKDIR", "CMD", "ARG", "LABEL", "USER"}
cont = False
for n, line in enumerate(text.splitlines(), 1):
    if not cont and line.strip() and not line.startswith("#"):
        word = line.split()[0]
        assert word in known, "line %d: unknown instruction %r" % (n, word)
    if not line.startswith("#"):
        cont = line.rstrip().endswith("\\")
body = "\n".join(l for l in text.splitlines() if not l.startswith("#"))
for need in ("git", "nodejs", "npm", "@anthropic-ai/claude-code@" + pin, "claude --version"):
    assert need in body, "Containerfile does not install %s" % need
for need in ('"-e", "ANTHROPIC_API_KEY"', "/tmp/.claude:ro", "ZERG_ALLOW_RUN_ARGS=--volume", "IS_SANDBOX=1"):
    assert need in text, "Containerfile comments lack %s" % need
PY
pass "docker/Containerfile: instructions known; git, Node, Claude Code at the pinned version; both logins documented"

echo "$TESTS_PASSED passed, 0 failed"
