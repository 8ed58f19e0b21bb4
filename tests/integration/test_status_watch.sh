#!/usr/bin/env bash
# `zerg status --watch` in a real terminal (a tmux pane of 60x20): every
# redraw fits the screen (no line wider than the pane, no more lines than
# it has, the rest counted on the last line), and it keeps watching after
# the run is finished, until Ctrl-C.  Off a terminal it ends with the run.
source "$(dirname "$0")/lib.sh"

command -v tmux >/dev/null ||
    fail "tmux is missing (scripts/install-deps.sh test installs it)"
TMUX_SOCK="zerg-watch-$$"
tm() { tmux -L "$TMUX_SOCK" -f /dev/null "$@"; }
trap '_rc=$?; tm kill-server 2>/dev/null || true; (exit $_rc); on_exit' EXIT

new_project watch
config_append "  retry_attempts: 0"
# 40 tasks: 30 pass, 10 fail, so the unfinished and failed lists are long.
python3 - > "$PROJ/.gsd/specs/f/task-graph.json" <<'PY'
import json
tasks = [{"id": "W-L1-%03d" % i, "title": "a task with a title", "level": 1,
          "command": "false" if i % 4 == 0 else "true"} for i in range(40)]
tasks += [{"id": "W-L2-%03d" % i, "title": "t", "level": 2,
           "dependencies": ["W-L1-%03d" % (4 * i)], "command": "true"}
          for i in range(10)]
print(json.dumps({"feature": "f", "tasks": tasks}))
PY
zerg rush --workers 4 > "$PROJ/out.txt" 2>&1 && fail "the rush should fail (10 failing tasks)"

tm new-session -d -s watch -x 60 -y 20 "TERM=xterm $ZERG -C $PROJ status --watch; echo WATCH-EXITED; sleep 30"
screen_ok() {
    tm capture-pane -p -J -t watch > "$PROJ/screen.txt"
    python3 - "$PROJ/screen.txt" <<'PY'
import sys
lines = open(sys.argv[1], encoding="utf-8").read().rstrip("\n").split("\n")
text = "\n".join(lines)
if "Feature f:" not in text:
    sys.exit(1)                      # not drawn yet
assert len(lines) <= 20, "%d lines on a 20-line screen" % len(lines)
for l in lines:
    assert len(l.rstrip()) <= 59, "line of %d columns: %r" % (len(l.rstrip()), l)
assert lines[0].startswith("Every 1 s"), "no watch header: %r" % lines[0]
assert lines[1].startswith("Feature f:"), "the top is gone: %r" % lines[1]
assert "more lines" in lines[-1] or any("more lines" in l for l in lines[-2:]), \
    "the rest is not counted:\n" + text
PY
}
wait_for 20 screen_ok
# It redraws after the run ended (the header's clock moves on) and every
# redraw fits: it did not stop when it saw a finished run.
cp "$PROJ/screen.txt" "$PROJ/first.txt"
redrawn() { screen_ok && ! cmp -s "$PROJ/screen.txt" "$PROJ/first.txt"; }
wait_for 20 redrawn
! grep -q WATCH-EXITED "$PROJ/screen.txt" || fail "--watch exited although the terminal is still watching"
tm send-keys -t watch C-c
wait_for 10 sh -c "tmux -L $TMUX_SOCK -f /dev/null capture-pane -p -t watch | grep -q WATCH-EXITED"
pass "status --watch fits a 60x20 terminal, keeps watching after the run, stops on Ctrl-C"

timeout 20 "$ZERG" -C "$PROJ" status --watch > "$PROJ/plain.txt" 2>&1 ||
    fail "status --watch off a terminal did not end by itself (rc $?)"
grep -q 'Feature f: failed' "$PROJ/plain.txt" || fail "off a terminal: $(head -3 "$PROJ/plain.txt")"
! grep -q $'\033' "$PROJ/plain.txt" || fail "escape sequences off a terminal"
pass "off a terminal status --watch prints once for a finished run and ends"
echo "$TESTS_PASSED passed, 0 failed"
