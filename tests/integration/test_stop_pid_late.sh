#!/usr/bin/env bash
# `zerg stop` right after a rush took its lock: the rush records its pid
# in the lock file just after it locks, so a stop that came between found
# a held lock and no pid; a graceful stop gave up, and --force killed
# nothing and waited 10 s for a lock that stayed held.  A stand-in holder
# here locks the file as a rush does and writes its pid 0.2 s later; the
# stop waits for it and signals that holder.  The pid a killed holder
# left in the file is no one's: a holder locking after it, that never
# writes its own, gets the clear error after the wait and is left alone.
source "$(dirname "$0")/lib.sh"

new_project stoplate
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "S-L1-001", "level": 1, "command": "true"}]}
JSON
mkdir -p "$PROJ/.zerg/state"
LOCK="$PROJ/.zerg/state/f.lock"

# holder DELAY: locks LOCK, writes its pid after DELAY s (never when
# DELAY is "never"), exits 0 on TERM, and after 30 s on its own.
holder() {
    python3 - "$LOCK" "$1" "$PROJ/held" <<'PY' &
import fcntl, os, signal, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
signal.signal(signal.SIGTERM, lambda *a: (os.ftruncate(fd, 0), os._exit(0)))
open(sys.argv[3], "w").close()
if sys.argv[2] != "never":
    time.sleep(float(sys.argv[2]))
    os.write(fd, b"%d\n" % os.getpid())
time.sleep(30)
os._exit(3)
PY
    HOLDER=$!
    wait_file 10 "$PROJ/held" || fail "the stand-in holder did not lock"
    rm -f "$PROJ/held"
}
wait_file() { local i; for ((i = 0; i < $1 * 20; i++)); do [ -e "$2" ] && return 0; sleep 0.05; done; return 1; }

# Graceful: the stop waits for the pid and sends TERM to that holder.
holder 0.2
out=$(zerg stop 2>&1) || fail "stop exited $?: $out"
grep -q "pid $HOLDER" <<<"$out" || fail "the stop did not name the holder $HOLDER: $out"
rc=0; wait "$HOLDER" || rc=$?
[ "$rc" -eq 0 ] || fail "the holder was not stopped by TERM (exit $rc)"
pass "a graceful stop waits for the pid a rush writes just after it locks"

# --force: the holder is killed, the lock is free.
holder 0.2
out=$(zerg stop --force 2>&1) || fail "stop --force exited $?: $out"
grep -q "Killed the rush for f (pid $HOLDER)" <<<"$out" || fail "--force did not kill the holder $HOLDER: $out"
rc=0; wait "$HOLDER" || rc=$?
[ "$rc" -eq 137 ] || fail "the holder exited $rc, want 137 (SIGKILL)"
pass "stop --force kills a holder whose pid came late"

# The killed holder's pid is still in the file; the next one never
# writes its own: the clear error, the holder alone.
holder never
out=$(zerg stop 2>&1) && fail "stop of a pid-less holder exited 0: $out"
grep -q "did not record its pid" <<<"$out" || fail "no clear error: $out"
kill -0 "$HOLDER" 2>/dev/null || fail "the pid-less holder was touched"
kill -TERM "$HOLDER"
wait "$HOLDER" || true
pass "a holder that never records its pid gets the clear error and is left alone"
echo "$TESTS_PASSED passed, 0 failed"
