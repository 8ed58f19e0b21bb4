#!/usr/bin/env bash
# zerg report: a real rush with a crashed worker and a failing task gives
# one self-contained HTML page that headless Chromium renders, with one
# lane per worker slot, also with the network cut off; a synthetic run of
# 2,000 tasks renders too and stays under 5 MB.  No Chromium is a failure.
source "$(dirname "$0")/lib.sh"

command -v chromium >/dev/null ||
    fail "chromium is not installed (scripts/install-deps.sh test installs it)"

# chrome FILE ARGS...: headless Chromium on file://FILE with the network
# off (an unroutable proxy, every host name unresolvable).
chrome() {
    local file=$1
    shift
    timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic \
        --no-first-run --disable-background-networking \
        --disable-component-update --disable-sync \
        --user-data-dir="$(mktemp -d "$TEST_ROOT/chrome-XXXXXX")" \
        --proxy-server=127.0.0.1:9 --host-resolver-rules="MAP * ~NOTFOUND" \
        "$@" "file://$file" 2>>"$TEST_ROOT/chrome.err"
}

# distinct_colours PNG: the number of distinct RGB(A) pixels.
distinct_colours() {
    python3 - "$1" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, w, h, ctype = 8, b"", 0, 0, 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        assert depth == 8, "unexpected bit depth"
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
bpp = {2: 3, 6: 4, 0: 1, 4: 2}[ctype]
raw, stride = zlib.decompress(idat), w * bpp
prev, seen, i = bytearray(stride), set(), 0
for _ in range(h):
    ft, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
    i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b, c = prev[x], prev[x - bpp] if x >= bpp else 0
        if ft == 1: line[x] = (line[x] + a) & 255
        elif ft == 2: line[x] = (line[x] + b) & 255
        elif ft == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif ft == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        seen.add(bytes(line[x:x + bpp]))
    prev = line
print(len(seen))
PY
}

# ---- a real rush: one worker killed mid-task, one task failing for good
new_project real
config_append "  max_retries: 1"
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "CRASH-L1-001", "level": 1,
  "command": "if [ ! -f crashed ]; then touch crashed; kill -9 $PPID; sleep 5; fi; echo ok"},
 {"id": "FAIL-L1-002", "level": 1, "command": "echo '<script>x</script> & \"q\"' >&2; exit 3"},
 {"id": "OK-L1-003", "level": 1, "command": "sleep 0.3"},
 {"id": "NEXT-L2-001", "level": 2, "dependencies": ["CRASH-L1-001"], "command": "sleep 0.2"}
]}
JSON
rc=0
zerg rush --workers 2 > "$PROJ/rush.out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "rush exited $rc, expected 1 (one failed task)"
has_event worker_crash || fail "no worker_crash in the log"
has_event task_reassigned || fail "no task_reassigned in the log"
zerg report > "$PROJ/report.out" || fail "zerg report failed: $(cat "$PROJ/report.out")"
html="$PROJ/.zerg/reports/f.html"
[ -s "$html" ] || fail "no $html"
grep -qx "$html" "$PROJ/report.out" || fail "report did not print its path"
! grep -Eq 'https?://' "$html" || fail "the page references the network: $(grep -Eo 'https?://[^"]*' "$html" | head -3)"
! grep -Eqi '<script|<link|@import|src=' "$html" || fail "the page loads something"
grep -q 'CRASH-L1-001' "$html" && grep -q 'FAIL-L1-002' "$html" || fail "tasks missing from the page"
grep -q 'class="bar o3 ' "$html" || fail "no crashed/reassigned bar"
grep -q 'class="bar o1 ' "$html" || fail "no permanently failed bar"
grep -q 'class="marker m0"' "$html" || fail "no worker-crash marker"
grep -q 'class="marker m2"' "$html" || fail "no respawn marker"
grep -q 'class="level-line"' "$html" || fail "no level lines"
grep -q '<title>CRASH-L1-001' "$html" || fail "bars carry no hover text"
pass "report of a real rush written, self-contained"

zerg report -o - > "$PROJ/stdout.html" || fail "report -o - failed"
cmp -s "$PROJ/stdout.html" "$html" || fail "-o - differs from the file"
zerg report -o "$PROJ/other.html" >/dev/null || fail "report -o FILE failed"
[ -s "$PROJ/other.html" ] || fail "-o FILE wrote nothing"
rc=0
zerg report --bogus >/dev/null 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "unknown option: exit $rc, expected 2"
pass "-o -, -o FILE, usage error"

chrome "$html" --screenshot="$PROJ/out.png" --window-size=1200,900 ||
    fail "chromium could not take a screenshot: $(tail -5 "$TEST_ROOT/chrome.err")"
[ -s "$PROJ/out.png" ] || fail "chromium wrote no screenshot"
n=$(distinct_colours "$PROJ/out.png")
[ "$n" -gt 20 ] || fail "the screenshot looks blank: $n colours"
pass "renders in headless chromium ($n colours)"

workers=$(state_field workers | python3 -c 'import ast,sys; print(len(ast.literal_eval(sys.stdin.read())))')
chrome "$html" --dump-dom > "$PROJ/dom.html" || fail "chromium --dump-dom failed"
lanes=$(grep -o 'class="lane"' "$PROJ/dom.html" | wc -l)
[ "$lanes" -eq "$workers" ] || fail "$lanes lanes in the DOM, $workers workers"
[ "$lanes" -eq 2 ] || fail "$lanes lanes, expected 2"
grep -q '&lt;script&gt;' "$PROJ/dom.html" || grep -q 'FAIL-L1-002' "$PROJ/dom.html" ||
    fail "the failed task is missing from the DOM"
! grep -q '<script>x</script>' "$PROJ/dom.html" || fail "a task's output became markup"
pass "one lane per worker ($lanes) with the network cut off"

# ---- a run stopped and resumed: 3 minutes in all, the last rush 4.7 s;
# a 50 ms failure retried at once, a crash, a config change awaiting
# review, and six levels inside one second.  Checked in Chromium: the
# label boxes it lays out, the bars it draws, at 1400 and 800 px.
new_project resumed
python3 - "$PROJ" <<'PY2'
import json, os, sys, datetime
proj = sys.argv[1]
t0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
def ts(ms):
    return (t0 + datetime.timedelta(milliseconds=ms)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
ev = []
def e(ms, worker, event, task=None, data=None, msg="m", level="INFO"):
    ev.append({"ts": ts(ms), "worker": worker, "level": level, "event": event,
               "task": task, "msg": msg, "feature": "f", "data": data or {}})
e(0, None, "rush_start", data={"run_id": "r1", "resume": False})
e(10, None, "level_start", data={"level": 1})
e(20, 0, "task_claimed", "FLAKY-L1-001", {"attempt": 1})
e(70, 0, "task_failed", "FLAKY-L1-001", {"retry": True}, "exit 3")
e(71, 0, "task_claimed", "FLAKY-L1-001", {"attempt": 2})
e(30000, 0, "task_complete", "FLAKY-L1-001", {"attempt": 2})
e(20, 1, "task_claimed", "CRASH-L1-002", {"attempt": 1})
e(5000, 1, "worker_crash", None, {"task": "CRASH-L1-002"}, "killed")
e(5000, None, "task_reassigned", "CRASH-L1-002")
e(5100, 1, "worker_respawn")
e(5200, 1, "task_claimed", "CRASH-L1-002", {"attempt": 2})
e(9000, 1, "config_change", "CRASH-L1-002", {}, "changes zerg's own configuration: review before merging", "WARN")
e(9001, 1, "task_complete", "CRASH-L1-002", {"attempt": 2})
e(30001, None, "level_complete", data={"level": 1})
t = 30002
for lvl in range(2, 8):
    e(t, None, "level_start", data={"level": lvl})
    e(t + 1, 0, "task_claimed", "Q-L%d-001" % lvl, {"attempt": 1})
    e(t + 100, 0, "task_complete", "Q-L%d-001" % lvl, {"attempt": 1})
    e(t + 101, None, "level_complete", data={"level": lvl})
    t += 102
e(t, None, "level_start", data={"level": 8})
e(t + 1, 0, "task_claimed", "LONG-L8-001", {"attempt": 1})
e(60000, None, "rush_failed", data={"elapsed": 60.0}, msg="Rush stopped")
e(175300, None, "rush_start", data={"run_id": "r2", "resume": True})
e(175310, 0, "task_claimed", "LONG-L8-001", {"attempt": 2})
e(180000, 0, "task_complete", "LONG-L8-001", {"attempt": 2})
e(180001, None, "level_complete", data={"level": 8})
e(180002, None, "rush_complete", data={"elapsed": 4.7})
with open(proj + "/.zerg/monitor.jsonl", "w") as f:
    for x in ev:
        f.write(json.dumps(x) + "\n")
os.makedirs(proj + "/.zerg/state", exist_ok=True)
json.dump({"feature": "f", "run_id": "r2", "started_at": ts(0), "status": "complete",
           "tasks": {}, "workers": {"0": {}, "1": {}}, "metrics": {}},
          open(proj + "/.zerg/state/f.json", "w"))
PY2
zerg report >/dev/null || fail "report of the resumed run failed"
html="$PROJ/.zerg/reports/f.html"
grep -q 'class="elapsed">3 min 00 s from the first start to the last end, over 2 rushes' "$html" ||
    fail "elapsed does not cover the whole run: $(grep -o 'class="elapsed">[^<]*' "$html")"
grep -q 'rushes running 1 min 04 s' "$html" || fail "the rushes' running time is not summed"
[ "$(grep -c 'class="bar ' "$html")" -eq 12 ] || fail "not every attempt has a bar"
grep -q 'class="bar o2 k-retried"' "$html" || fail "no retried bar"
grep -q 'class="bar o3 k-crashed"' "$html" || fail "no crashed bar"
grep -q 'class="bar o6 k-review"' "$html" || fail "no awaiting-review bar"
grep -q 'class="gap"' "$html" || fail "the time between the rushes is not drawn"
pass "a resumed run: whole elapsed, retried/crashed/review bars, the gap"

# geometry PNG-PREFIX WIDTH: Chromium lays the page out at WIDTH px and a
# script added to a copy reports every label's box and every bar's; the
# labels of one row may not overlap, every bar is at least 3 px wide and
# no bar of a lane covers another.
geometry() {
    local w=$1 copy="$PROJ/geo-$1.html"
    python3 - "$html" "$copy" <<'PY2'
import sys
script = """<script>
var out = [];
document.querySelectorAll("text.lvl").forEach(function (t) {
  var b = t.getBBox(); out.push(["L", b.x, b.x + b.width, b.y, t.textContent]); });
document.querySelectorAll("rect.bar").forEach(function (r) {
  var b = r.getBBox(); out.push(["B", b.x, b.x + b.width, b.y, ""]); });
var p = document.createElement("pre"); p.id = "geo";
p.textContent = JSON.stringify(out); document.body.appendChild(p);
</script></body>"""
page = open(sys.argv[1]).read()
assert page.count("</body>") == 1
open(sys.argv[2], "w").write(page.replace("</body>", script))
PY2
    chrome "$copy" --window-size="$w,900" --dump-dom > "$PROJ/geo-$w.dom" ||
        fail "chromium --dump-dom failed at $w px"
    chrome "$html" --window-size="$w,900" --screenshot="$PROJ/resumed-$w.png" ||
        fail "no screenshot at $w px"
    [ "$(distinct_colours "$PROJ/resumed-$w.png")" -gt 20 ] || fail "blank screenshot at $w px"
    python3 - "$PROJ/geo-$w.dom" <<'PY2'
import html, json, re, sys
dom = open(sys.argv[1]).read()
m = re.search(r'<pre id="geo">(.*?)</pre>', dom, re.S)
assert m, "the geometry script did not run"
items = json.loads(html.unescape(m.group(1)))
labels = [i for i in items if i[0] == "L"]
bars = [i for i in items if i[0] == "B"]
names = [i[4] for i in labels]
assert "resumed" in names and "L1" in names and "L2" in names, names
for a in labels:
    for b in labels:
        if a is not b and abs(a[3] - b[3]) < 1 and a[1] < b[2] and b[1] < a[2]:
            sys.exit("labels overlap: %r and %r" % (a, b))
assert len(bars) == 12, "%d bars" % len(bars)
for b in bars:
    assert b[2] - b[1] >= 3, "a bar %.1f px wide: %r" % (b[2] - b[1], b)
for a in bars:
    for b in bars:
        if a is not b and abs(a[3] - b[3]) < 1 and a[1] < b[2] - 0.01 and b[1] < a[2] - 0.01:
            sys.exit("bars overlap on a lane: %r and %r" % (a, b))
print("%d labels, %d bars" % (len(labels), len(bars)))
PY2
}
for w in 1400 800; do
    out=$(geometry "$w") || fail "geometry at $w px: $out"
    pass "Chromium at $w px: $out, no label overlaps, every bar visible"
done

# ---- 2,000 synthetic tasks on 8 workers
new_project big
python3 - "$PROJ" <<'PY'
import json, sys, datetime
proj = sys.argv[1]
t0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
def ts(ms):
    return (t0 + datetime.timedelta(milliseconds=ms)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
ev, tasks, now = [], {}, 0
def e(ms, worker, event, task=None, data=None, msg="m"):
    ev.append({"ts": ts(ms), "worker": worker, "level": "INFO", "event": event,
               "task": task, "msg": msg, "feature": "f", "data": data or {}})
e(0, None, "rush_start", data={"run_id": "synthetic", "resume": False})
free = [0] * 8
for lvl in range(1, 5):
    start = max(free)
    e(start, None, "level_start", data={"level": lvl})
    for i in range(500):
        tid = "T-L%d-%04d" % (lvl, i)
        w = min(range(8), key=lambda k: free[k])
        t = max(free[w], start)
        dur = 200 + (i * 37) % 900
        e(t, w, "task_claimed", tid, {"attempt": 1})
        e(t + 5, w, "task_started", tid, {"attempt": 1})
        if i % 97 == 0:
            e(t + dur, w, "worker_crash", None, {"task": tid})
            e(t + dur, w, "task_reassigned", tid)
            e(t + dur + 1, w, "worker_respawn")
            status = "complete"
        elif i % 89 == 0:
            e(t + dur, w, "task_failed", tid, {"retry": False, "reason": "exit"}, "failed <&>")
            status = "failed"
        else:
            e(t + dur, w, "task_complete", tid, {"attempt": 1, "duration_ms": dur})
            status = "complete"
        e(t + dur, w, "some_future_event", tid)
        free[w] = t + dur + 2
        tasks[tid] = {"status": status, "level": lvl, "attempt": 1, "retry_count": 0,
                      "crash_count": 0, "duration_ms": dur,
                      "error": "boom" if status == "failed" else None, "reason": None}
    e(max(free), None, "level_complete", data={"level": lvl})
e(max(free), None, "rush_failed", data={"elapsed": max(free) / 1000})
with open(proj + "/.zerg/monitor.jsonl", "w") as f:
    for x in ev:
        f.write(json.dumps(x) + "\n")
    f.write("{not json\n")
import os
os.makedirs(proj + "/.zerg/state", exist_ok=True)
json.dump({"feature": "f", "run_id": "synthetic", "started_at": ts(0), "status": "failed",
           "tasks": tasks, "workers": {str(k): {"status": "stopped"} for k in range(8)},
           "metrics": {"worker_crashes": 21}},
          open(proj + "/.zerg/state/f.json", "w"))
PY
zerg report >/dev/null || fail "report of 2,000 tasks failed"
html="$PROJ/.zerg/reports/f.html"
size=$(stat -c %s "$html")
[ "$size" -lt 5000000 ] || fail "2,000-task report is $size bytes"
[ "$(grep -c '<tr class="task">' "$html")" -eq 2000 ] || fail "table does not hold 2000 tasks"
grep -q '1 unreadable' "$html" || fail "the corrupt line was not counted"
chrome "$html" --dump-dom > "$PROJ/dom.html" || fail "chromium --dump-dom failed (2,000 tasks)"
[ "$(grep -o 'class="lane"' "$PROJ/dom.html" | wc -l)" -eq 8 ] || fail "2,000 tasks: not 8 lanes"
[ "$(grep -o 'class="bar o' "$PROJ/dom.html" | wc -l)" -eq 2000 ] || fail "2,000 tasks: not 2000 bars"
chrome "$html" --screenshot="$PROJ/out.png" --window-size=1200,900 || fail "no screenshot (2,000 tasks)"
n=$(distinct_colours "$PROJ/out.png")
[ "$n" -gt 20 ] || fail "2,000-task screenshot looks blank: $n colours"
pass "2,000 tasks: $size bytes, 8 lanes, 2000 bars, renders"
echo "$TESTS_PASSED passed, 0 failed"
