#!/usr/bin/env bash
# test_lua_repl.sh - `zerg lua`: -e CODE, FILE, exit codes, the data in
# scope (state, graph, config, heartbeats, history), "did you mean" for an
# unknown global, and the interactive REPL driven through a pseudo-terminal
# to prove line editing (Ctrl-A, Ctrl-E, backspace), Ctrl-C and history
# across sessions, and in tmux to show Tab completion on the screen.
#
# Needs: $ZERG (the binary), python3 (its pty module drives the REPL),
# tmux.  A missing tool is a failure, never a skip.
set -euo pipefail

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

[[ -n "${ZERG:-}" && -x "$ZERG" ]] || fail "ZERG must name the zerg binary"
command -v python3 >/dev/null || fail "python3 is required (pty driver)"
python3 -c 'import pty, select' || fail "python3 lacks the pty module"
command -v tmux >/dev/null || fail "tmux is required (completion on screen)"

work=$(mktemp -d)
sock=$work/tmux.sock # a server of our own, never the user's
trap 'tmux -S "$sock" kill-server 2>/dev/null || true
      [[ -n "${KEEP:-}" ]] || rm -rf "$work"' EXIT
proj=$work/proj
mkdir -p "$proj/.gsd/specs/demo" "$proj/.zerg/state" "$work/home"
export HOME=$work/home
unset XDG_STATE_HOME ZERG_FEATURE
cd "$proj"

# expect_out NAME WANT CMD... : stdout of CMD must equal WANT, exit 0
expect_out() {
    local name=$1 want=$2
    shift 2
    local got
    got=$("$@" 2>"$work/err") || fail "$name: exit $? ($(cat "$work/err"))"
    [[ "$got" == "$want" ]] || fail "$name: got [$got], want [$want]"
}

# ---- no project data yet: config and policies are there ------------------
expect_out "no feature" "nil	nil	3" \
    "$ZERG" lua -e 'return state, graph, config.workers.retry_attempts'

cat >"$proj/.gsd/specs/demo/task-graph.json" <<'EOF'
{"feature": "demo", "tasks": [
  {"id": "D-L1-001", "title": "one", "level": 1, "dependencies": []},
  {"id": "D-L1-002", "title": "two", "level": 1, "dependencies": []},
  {"id": "D-L2-001", "title": "three", "level": 2,
   "dependencies": ["D-L1-001"]}]}
EOF

# ---- -e -------------------------------------------------------------------
expect_out "-e arithmetic" "2" "$ZERG" lua -e 'return 1+1'
expect_out "-e expression" "42" "$ZERG" lua -e '40 + 2'
expect_out "-e =expr" "hello" "$ZERG" lua -e '="hello"'
expect_out "-e several" "1	x	true" "$ZERG" lua -e 'return 1, "x", true'
expect_out "-e statement" "" "$ZERG" lua -e 'local x = 1'
expect_out "-e print" "a	1" "$ZERG" lua -e 'print("a", 1)'
expect_out "-e table" '{1, 2, k = "v"}' "$ZERG" lua -e 'return {1, 2, k="v"}'
expect_out "sorted keys" '{1, 2, [3.5] = true, b = 1, ["two words"] = 2, z = {}}' \
    "$ZERG" lua -e 'return {1, 2, z = {}, b = 1, ["two words"] = 2, [3.5] = true}'
expect_out "cycle" '{n = 1, self = <cycle>}' \
    "$ZERG" lua -e 'local t = {n = 1} t.self = t return t'
expect_out "depth limit" '{a = {a = {a = {a = {a = {a = {a = {a = {...}}}}}}}}}' \
    "$ZERG" lua -e 'local t = {} local c = t for i = 1, 12 do c.a = {} c = c.a end return t'
expect_out "string escapes" '{"a\"b\n"}' "$ZERG" lua -e 'return {"a\"b\n"}'
# Output goes to a variable first: `zerg ... | grep -q` under pipefail
# fails whenever grep exits before the writer is done (SIGPIPE).
out=$("$ZERG" lua -e 'help()') || fail "help() exited $?"
[[ "$out" == *'history(id)'* ]] || fail "help() lists history"
expect_out "graph" "3	demo" "$ZERG" lua -e 'return #graph.tasks, feature'
expect_out "no state yet" "nil" "$ZERG" lua -e 'return state'
expect_out "tasks before a run" '{"D-L1-001", "D-L1-002", "D-L2-001"}' \
    "$ZERG" lua -e 'return tasks("pending")'
expect_out "bundled policy" "4.0" \
    "$ZERG" lua -e 'return policies.backoff.delay(2, {strategy =
        "exponential", base = 2, max = 30})'
expect_out "--feature" "demo" "$ZERG" lua --feature demo -e 'return feature'

# ---- errors ---------------------------------------------------------------
set +e
"$ZERG" lua -e 'error("boom")' >"$work/out" 2>"$work/err"
rc=$?
set -e
[[ $rc -eq 1 ]] || fail "runtime error: exit $rc, want 1"
grep -q '(command line):1: boom' "$work/err" || fail "no message: $(cat "$work/err")"
grep -q 'stack traceback' "$work/err" || fail "no traceback"
[[ ! -s "$work/out" ]] || fail "error printed to stdout"

set +e
"$ZERG" lua -e 'return 1 +' >/dev/null 2>"$work/err"
rc=$?
set -e
[[ $rc -eq 1 ]] || fail "syntax error: exit $rc, want 1"
grep -q "unexpected symbol\|<eof>" "$work/err" || fail "syntax message: $(cat "$work/err")"

set +e
"$ZERG" lua -e 'return io.open("/etc/passwd")' >/dev/null 2>"$work/err"
rc=$?
set -e
[[ $rc -eq 1 ]] || fail "sandbox: exit $rc"
grep -q "unknown global 'io'" "$work/err" || fail "sandbox message: $(cat "$work/err")"

# A misspelt global names the closest one in scope.
set +e
"$ZERG" lua -e 'return tsks' >/dev/null 2>"$work/err"
rc=$?
set -e
[[ $rc -eq 1 ]] || fail "unknown global: exit $rc"
grep -q "(command line):1: unknown global 'tsks'; did you mean 'tasks'?\$" \
    "$work/err" || fail "did you mean: $(cat "$work/err")"
set +e
"$ZERG" lua -e 'return zqxjkv' >/dev/null 2>"$work/err"
set -e
grep -q "unknown global 'zqxjkv'\$" "$work/err" || fail "no hint when none is near: $(cat "$work/err")"

set +e
"$ZERG" lua --bogus >/dev/null 2>&1
rc=$?
set -e
[[ $rc -eq 2 ]] || fail "bad option: exit $rc, want 2"
out=$("$ZERG" lua --help) || fail "--help exited $?"
[[ "$out" == *'usage: zerg lua'* ]] || fail "--help"

# ---- FILE -------------------------------------------------------------------
cat >"$work/script.lua" <<'EOF'
#!/usr/bin/env zerg-lua
local n = select("#", ...)
return n, arg[0] ~= nil, ...
EOF
expect_out "FILE with args" "2	true	a	b" "$ZERG" lua "$work/script.lua" a b
printf 'local t = {}\nreturn t.x.y\n' >"$work/bad.lua"
set +e
"$ZERG" lua "$work/bad.lua" >/dev/null 2>"$work/err"
rc=$?
set -e
[[ $rc -eq 1 ]] || fail "FILE error: exit $rc"
grep -q "bad.lua:2:" "$work/err" || fail "FILE error names file:line: $(cat "$work/err")"
set +e
"$ZERG" lua "$work/missing.lua" >/dev/null 2>"$work/err"
rc=$?
set -e
[[ $rc -eq 1 ]] || fail "missing FILE: exit $rc"

# ---- a run's data ---------------------------------------------------------
cat >"$proj/.zerg/state/demo.json" <<'EOF'
{"feature": "demo", "current_level": 1,
 "tasks": {"D-L1-001": {"status": "complete", "level": 1},
           "D-L1-002": {"status": "failed", "level": 1, "retry_count": 3},
           "D-L2-001": {"status": "pending", "level": 2}},
 "levels": {"1": {"status": "complete"}, "2": {"status": "pending"}}}
EOF
mkdir -p "$proj/.zerg/state/demo"
cat >"$proj/.zerg/state/demo/heartbeat-0.json" <<'EOF'
{"worker_id": 0, "task_id": "D-L2-001", "seq": 9, "progress_pct": 50}
EOF
cat >"$proj/.zerg/monitor.jsonl" <<'EOF'
{"ts":"2026-02-03T05:41:55.123Z","worker":0,"level":"INFO","event":"task_claimed","task":"D-L1-002","msg":"claimed","data":{}}
{"ts":"2026-02-03T05:41:56.123Z","worker":0,"level":"INFO","event":"task_claimed","task":"D-L1-001","msg":"claimed","data":{}}
{"ts":"2026-02-03T05:41:57.123Z","worker":0,"level":"WARN","event":"task_failed","task":"D-L1-002","msg":"failed","data":{"exit_code":1}}
EOF
expect_out "state" "1	failed" \
    "$ZERG" lua -e 'return state.current_level, state.tasks["D-L1-002"].status'
expect_out "tasks(status)" '{"D-L1-002"}' "$ZERG" lua -e 'return tasks("failed")'
expect_out "task(id)" "two	failed	3" \
    "$ZERG" lua -e 'local t = task("D-L1-002") return t.title, t.status, t.retry_count'
expect_out "levels()" "2	complete	1" \
    "$ZERG" lua -e 'local l = levels() return #l, l[1].status, l[1].failed'
expect_out "heartbeats" "9" "$ZERG" lua -e 'return heartbeats[0].seq'
expect_out "history(id)" "2	task_failed	1" \
    "$ZERG" lua -e 'local h = history("D-L1-002") return #h, h[2].event, h[2].data.exit_code'

# ---- overrides are shown; a broken one is reported ------------------------
mkdir -p "$proj/.zerg/policies"
cat >"$proj/.zerg/policies/backoff.lua" <<'EOF'
local base = require("policies.backoff")
return setmetatable({delay = function(a, o) return 99 end}, {__index = base})
EOF
expect_out "override" "99" "$ZERG" lua -e 'return policies.backoff.delay(1, {})'
echo 'return {decide = function(' >"$proj/.zerg/policies/retry.lua"
expect_out "broken override" "function" \
    "$ZERG" lua -e 'return type(policies.retry.decide)'
grep -q "using the bundled retry policy" "$work/err" || fail "broken override not reported"
rm -rf "$proj/.zerg/policies"

# An override runs in the session's VM: what it does to the libraries
# must not reach the REPL's own printing or help().
mkdir -p "$proj/.zerg/policies"
cat >"$proj/.zerg/policies/stale.lua" <<'EOF'
pcall(function() string.format = function() return "hacked" end end)
pcall(rawset, string, "format", nil)
pcall(function() getmetatable("").__index.gsub = nil end)
pcall(function() table.concat = nil end)
return {}
EOF
out=$("$ZERG" lua -e 'help()' 2>"$work/err") || fail "help() after a tampering override: $(cat "$work/err")"
[[ "$out" == *'  history(id)      the task'* ]] || fail "help() after a tampering override: [$out]"
expect_out "printing after a tampering override" '{"a\"b", 1.5}' \
    "$ZERG" lua -e 'return {"a\"b", 1.5}'
expect_out "string.format intact" "007" "$ZERG" lua -e 'return ("%03d"):format(7)'
rm -rf "$proj/.zerg/policies"

# ---- piped stdin: the same loop without prompts -------------------------------
got=$(printf 'x = 20\nreturn x +\n1\n' | "$ZERG" lua 2>/dev/null)
[[ "$got" == "21" ]] || fail "piped stdin: got [$got]"

# ---- the REPL on a terminal ---------------------------------------------------
cat >"$work/drive.py" <<'EOF'
# Drives `zerg lua` on a pseudo-terminal: each step sends keys once the
# expected text has appeared, and the run fails on any timeout.
import os, pty, select, sys, time

zerg, steps = sys.argv[1], sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.execv(zerg, [zerg, "lua"])
buf = b""

def wait_for(pat, timeout=10.0):
    global buf
    end = time.time() + timeout
    while pat not in buf:
        if time.time() > end:
            sys.exit("timeout waiting for %r; screen: %r" % (pat, buf))
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                data = os.read(fd, 4096)
            except OSError:
                break
            if not data:
                break
            buf += data
    if pat not in buf:
        sys.exit("session ended before %r; screen: %r" % (pat, buf))
    buf = buf[buf.index(pat) + len(pat):]

wait_for(b"> ")
for step in steps:
    keys, want = step.split("|", 1)
    time.sleep(0.3)  # let the line editor take the terminal first
    os.write(fd, keys.encode().decode("unicode_escape").encode("latin-1"))
    if want:
        wait_for(want.encode().decode("unicode_escape").encode("latin-1"))
for _ in range(100):
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        sys.exit(0 if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
                 else "zerg lua exited with status %d" % status)
    time.sleep(0.1)
os.kill(pid, 9)
sys.exit("zerg lua did not leave on Ctrl-D")
EOF
# Type "eturn 40+2", Ctrl-A to the start and insert "r", Ctrl-E to the end,
# backspace the "2" and type "3": the line is "return 40+3".  Then a
# multi-line chunk, Ctrl-C on a runaway loop and on a half-typed line, and
# Ctrl-D to leave.
python3 "$work/drive.py" "$ZERG" \
    'eturn 40+2|' '\x01r\x05\x7f3\r|43\r\n> ' \
    't = {\r|>> ' 'n = 5}\r|' 'return t.n\r|5\r\n> ' \
    'while true do end\r|' '\x03|interrupted' \
    'half typed\x03|> ' 'return tasks("complete")[1]\r|D-L1-001\r\n> ' \
    '\x04|' || fail "interactive session"
[[ -s "$HOME/.zerg_lua_history" ]] || fail "no history file"
# libedit writes spaces as \040
grep -q 'return.*40+3' "$HOME/.zerg_lua_history" || fail "edited line not in history"

# A new session recalls the last line with Ctrl-P (history from the file).
python3 "$work/drive.py" "$ZERG" '\x10\r|D-L1-001\r\n> ' '\x04|' \
    || fail "history recall"

# $XDG_STATE_HOME takes precedence for the history file.
export XDG_STATE_HOME=$work/state
python3 "$work/drive.py" "$ZERG" 'return 7\r|7\r\n> ' '\x04|' \
    || fail "session with XDG_STATE_HOME"
grep -q 'return.*7' "$XDG_STATE_HOME/zerg/lua_history" || fail "XDG history"

# ---- Tab completion, on a tmux screen ------------------------------------------
# screen_wait ERE: polls the pane until a line matches (10 s at most).
screen_wait() {
    local i
    for ((i = 0; i < 100; i++)); do
        tmux -S "$sock" capture-pane -p -t repl >"$work/screen" 2>/dev/null || true
        grep -qE -- "$1" "$work/screen" && return 0
        sleep 0.1
    done
    fail "tmux: no line matching [$1]; screen:
$(cat "$work/screen")"
}
keys() { tmux -S "$sock" send-keys -t repl "$@"; }

tmux -S "$sock" new-session -d -s repl -x 120 -y 40 \
    "cd '$proj' && exec '$ZERG' lua" || fail "tmux new-session"
# libedit draws the prompt once it has the terminal in raw mode.
screen_wait '^> ?$'
keys 'polic' Tab
screen_wait '^> policies$'
keys '.retry.' Tab
screen_wait '^> policies\.retry\.decide$'
keys Enter
screen_wait '^<function'
keys 'tas' Tab Tab # two candidates: the common part, then the list
screen_wait '^task +tasks *$'
keys C-u 'return ("x"):up' Tab
screen_wait '^> return \("x"\):upper$'
keys '() .. config.work' Tab
screen_wait 'upper\(\) \.\. config\.workers$'
keys '.retry_att' Tab
screen_wait 'config\.workers\.retry_attempts$'
keys Enter
screen_wait '^X3$'
keys 'return tsks' Enter
screen_wait "unknown global 'tsks'; did you mean 'tasks'\?"
keys C-d
for ((i = 0; i < 100; i++)); do
    tmux -S "$sock" has-session -t repl 2>/dev/null || break
    sleep 0.1
done
! tmux -S "$sock" has-session -t repl 2>/dev/null || fail "tmux: zerg lua did not leave on Ctrl-D"

echo "ok: test_lua_repl"
