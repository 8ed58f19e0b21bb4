#!/usr/bin/env bash
# The live view of `zerg rush` in a real terminal (tmux panes of 60 and
# 200 columns): no line wider than the pane, exactly one status line and
# one line per worker on screen, counts equal to `zerg status --json`, a
# redraw on the timer while no event arrives, the block gone at the end.
# Off a terminal: plain event lines without any escape sequence.
source "$(dirname "$0")/lib.sh"

command -v tmux >/dev/null ||
    fail "tmux is missing (scripts/install-deps.sh test installs it)"
TMUX_SOCK="zerg-view-$$"
tm() { tmux -L "$TMUX_SOCK" -f /dev/null "$@"; }
view_cleanup() { tm kill-server 2>/dev/null || true; }
trap '_rc=$?; view_cleanup; (exit $_rc); on_exit' EXIT

# graph_8: six 2-second tasks on level 1, one on level 2, then one long
# task alone on level 3 (the quiet stretch for the timer check).
graph_8() {
    python3 - > "$PROJ/.gsd/specs/f/task-graph.json" <<'PY'
import json
tasks = [{"id": "T-L1-%03d" % i, "title": "t", "level": 1,
          "estimate_minutes": 0.03, "command": "sleep 2"} for i in range(6)]
tasks.append({"id": "T-L2-000", "title": "t", "level": 2,
              "dependencies": ["T-L1-000"], "command": "sleep 2"})
tasks.append({"id": "T-L3-LONG", "title": "t", "level": 3,
              "dependencies": ["T-L2-000"], "command": "sleep 7"})
print(json.dumps({"feature": "f", "tasks": tasks}))
PY
}

# cap FILE: the pane's text, wrapped lines joined (a line that wrapped
# shows up longer than the pane).
cap() { tm capture-pane -p -J -t view > "$1"; }

# check_screen FILE WIDTH: exit 0 when the screen holds exactly one status
# line and three worker lines, 1 when the block is not there (yet or any
# more), 2 with a message on a broken screen.
check_screen() {
    python3 - "$1" "$2" <<'PY'
import re, sys
width = int(sys.argv[2])
lines = [l.rstrip() for l in open(sys.argv[1], encoding="utf-8").read().split("\n")]
# The final summary is printed once, after the live block is gone, and is
# meant to wrap (it is never redrawn); a screen captured between it and
# RUSH_EXIT is past the live view.
for i, l in enumerate(lines):
    if re.search(r"\[ORCH\] Rush (complete|failed|stopped)", l):
        lines = lines[:i]
        break
for l in lines:
    if len(l) > width - 1:
        print("line of %d columns in a %d-column pane: %r" % (len(l), width, l))
        sys.exit(2)
status = [l for l in lines if re.match(r"^\d+/\d+ done +\d+ run", l)]
workers = [l for l in lines if re.match(r"^W\d+ ", l)]
if not status:
    sys.exit(1)
if len(status) != 1:
    print("%d status lines on screen:\n%s" % (len(status), "\n".join(lines)))
    sys.exit(2)
if len(workers) != 3:
    print("%d worker lines, not 3:\n%s" % (len(workers), "\n".join(lines)))
    sys.exit(2)
# The level and the times are never what a narrow line loses.
level = r" L\d+/\d+ \| \S+ ETA \S+" if width < 100 else r"level \d+/\d+  elapsed"
if not re.search(level, status[0]):
    print("the status line lost the level or the times: %r" % status[0])
    sys.exit(2)
PY
}

# counts_match FILE STATUS_JSON: the status line says what status says.
counts_match() {
    python3 - "$1" "$2" <<'PY'
import json, re, sys
m = None
for l in open(sys.argv[1], encoding="utf-8"):
    m = m or re.match(r"^(\d+)/(\d+) done +(\d+) run(?:ning)? +(\d+) fail", l)
if not m:
    sys.exit(1)
t = json.load(open(sys.argv[2]))["tasks"]
want = (t["complete"], sum(t.values()), t["claimed"] + t["in_progress"], t["failed"])
got = tuple(int(x) for x in m.groups())
sys.exit(0 if got == want and got[2] > 0 else 1)
PY
}

# field FILE REGEX: the first match's group 1 on screen.
field() {
    python3 - "$1" "$2" <<'PY'
import re, sys
for l in open(sys.argv[1], encoding="utf-8"):
    m = re.search(sys.argv[2], l)
    if m:
        print(m.group(1)); break
PY
}

# The elapsed time on the status line (wide: "elapsed 0:07", narrow:
# "| 0:07 ETA").
ELAPSED='(?:elapsed |\| )([0-9]+:[0-9]{2}(?::[0-9]{2})?)'
info_events() { grep -vc '"level":"DEBUG"' "$PROJ/.zerg/monitor.jsonl" || true; }

# start_pane WIDTH ENV...: a rush of graph_8 on 3 workers in a fresh pane.
start_pane() {
    local w=$1
    shift
    # A server of its own per pane: the previous one may take a moment to
    # exit under load, and a new session on its socket then fails with
    # "server exited unexpectedly".
    tm kill-server 2>/dev/null || true
    PANES=$((${PANES:-0} + 1))
    TMUX_SOCK="zerg-view-$$-$PANES"
    tm new-session -d -s view -x "$w" -y 30 \
        "cd '$PROJ' && env $* '$ZERG' rush --workers 3; echo RUSH_EXIT=\$?; sleep 600"
    tm set-option -t view remain-on-exit on >/dev/null
}

# watch_run WIDTH TIMER: checks every screen of the run until it ends;
# with TIMER=1, checks the timer redraw once the long task runs.
watch_run() {
    local w=$1 timer=$2 s="$PROJ/screen.txt" seen=0 matched=0 rc i
    for i in $(seq 1 1200); do
        cap "$s"
        grep -q RUSH_EXIT= "$s" && break
        if [ "$timer" = 1 ] && grep -q "T-L3-LONG" "$s"; then
            timer_redraw
            timer=0
            continue
        fi
        rc=0
        check_screen "$s" "$w" || rc=$?
        [ $rc -eq 2 ] && fail "$w columns: $(check_screen "$s" "$w")"
        if [ $rc -eq 0 ]; then
            seen=$((seen + 1))
            if [ $matched -eq 0 ]; then
                zerg status --json > "$PROJ/st.json" 2>/dev/null &&
                    counts_match "$s" "$PROJ/st.json" && matched=1
            fi
        fi
        sleep 0.05
    done
    grep -q RUSH_EXIT=0 "$s" || fail "$w columns: rush did not end well: $(cat "$s")"
    [ $seen -ge 5 ] || fail "$w columns: the live block was seen only $seen times"
    [ $matched -eq 1 ] || fail "$w columns: status line never equalled zerg status --json"
    pass "$w columns: width, one status line, 3 worker lines, counts = zerg status ($seen screens)"
    grep -qE '^[0-9]+/[0-9]+ done' "$s" && fail "$w columns: block left after the end: $(cat "$s")"
    grep -q "Rush complete" "$s" || fail "$w columns: no final summary: $(cat "$s")"
    [ "$(grep -c 'Rush complete' "$s")" -eq 1 ] || fail "$w columns: summary printed twice"
    pass "$w columns: block erased, one final summary"
}

# timer_redraw: during the long task, two screens with no event between
# them show different elapsed times.
timer_redraw() {
    local a="$PROJ/a.txt" b="$PROJ/b.txt" ev0 i j ea="" eb=""
    for i in $(seq 1 10); do
        ev0=$(info_events)
        cap "$a"
        ea=$(field "$a" "$ELAPSED")
        [ -n "$ea" ] || continue
        for j in $(seq 1 60); do
            sleep 0.05
            cap "$b"
            eb=$(field "$b" "$ELAPSED")
            [ -n "$eb" ] && [ "$eb" != "$ea" ] && break
        done
        if [ -n "$eb" ] && [ "$eb" != "$ea" ] && [ "$(info_events)" = "$ev0" ]; then
            pass "timer redraw: elapsed $ea -> $eb with no event in between"
            return
        fi
    done
    fail "no redraw on the timer (elapsed stayed $ea or events kept coming)"
}

new_project narrow
graph_8
start_pane 60 NO_COLOR=1
watch_run 60 1
tm capture-pane -p -e -t view > "$PROJ/escapes.txt"
if grep -q $'\033\[3[0-7]m' "$PROJ/escapes.txt"; then
    fail "NO_COLOR run shows colours"
fi
pass "NO_COLOR honoured"

new_project wide
graph_8
start_pane 200 -u NO_COLOR
watch_run 200 0

# Off a terminal: plain lines, no escapes.
new_project plain
graph_8
zerg rush --workers 3 > "$PROJ/plain.txt" 2>&1 || fail "plain rush exited $?"
grep -q $'\033' "$PROJ/plain.txt" && fail "escape sequence in plain output"
grep -qE '^[0-9T:.-]+Z \[(W[0-9]+|ORCH)\] \[INFO\] ' "$PROJ/plain.txt" ||
    fail "plain output is not event lines: $(head "$PROJ/plain.txt")"
pass "plain run prints event lines without escape sequences"

# On a terminal with --no-progress: the same plain lines.  script(1)
# records everything written to its terminal, escapes included.
new_project noprog
graph_8
script -q -e -c "'$ZERG' -C '$PROJ' rush --workers 3 --no-progress" \
    "$PROJ/tty.txt" < /dev/null > /dev/null 2>&1 || fail "--no-progress rush exited $?"
grep -q 'Rush complete' "$PROJ/tty.txt" || fail "--no-progress: no summary: $(cat "$PROJ/tty.txt")"
grep -q $'\033' "$PROJ/tty.txt" && fail "--no-progress wrote escape sequences on a terminal"
grep -qE '^[0-9T:.-]+Z \[(W[0-9]+|ORCH)\] \[INFO\] ' "$PROJ/tty.txt" ||
    fail "--no-progress output is not event lines"
pass "--no-progress on a terminal prints plain event lines"

# rush.review: the block says what waits and the status line counts it;
# an approval from this shell lets the run end.
new_project review
git_repo README=base
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "V-L1-001", "title": "v", "level": 1,
  "command": "echo v > v.txt", "files": {"create": ["v.txt"]}}]}
JSON
tm kill-server 2>/dev/null || true
TMUX_SOCK="zerg-view-$$-review"
tm new-session -d -s view -x 120 -y 30 \
    "cd '$PROJ' && env NO_COLOR=1 '$ZERG' rush --workers 1 --review; echo RUSH_EXIT=\$?; sleep 600"
tm set-option -t view remain-on-exit on >/dev/null
waiting_shown() { cap "$PROJ/rv.txt"; grep -q '^Waiting for review: V-L1-001  (zerg review' "$PROJ/rv.txt"; }
wait_for 60 waiting_shown
review_saved() { [ "$(task_status V-L1-001)" = awaiting_review ]; }
wait_for 30 review_saved
grep -qE '^0/1 done .*  1 to review  ' "$PROJ/rv.txt" || fail "the status line does not count the review: $(cat "$PROJ/rv.txt")"
zerg approve V-L1-001 > /dev/null || fail "approve exited $?"
ended() { cap "$PROJ/rv.txt"; grep -q RUSH_EXIT= "$PROJ/rv.txt"; }
wait_for 60 ended
grep -q RUSH_EXIT=0 "$PROJ/rv.txt" || fail "the reviewed rush did not end well: $(cat "$PROJ/rv.txt")"
grep -q '^Waiting for review' "$PROJ/rv.txt" && fail "the review line stayed after the end"
pass "rush.review: the live view says what waits and counts it; approve ends the run"
echo "all $TESTS_PASSED checks passed"
