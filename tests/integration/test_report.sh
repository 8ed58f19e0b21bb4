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
grep -q 'class="bar o3"' "$html" || fail "no crashed/reassigned bar"
grep -q 'class="bar o1"' "$html" || fail "no permanently failed bar"
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
