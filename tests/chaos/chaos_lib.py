"""chaos_lib.py - what every chaos mode shares (see chaos.py).

Finding a run's processes, starting and restarting one feature's
orchestrator while telling a resumable end (exit 1, or the harness's own
kill -9) from a crash of zerg itself, scanning for sanitizer reports, and
counting the injections really performed, so that a run which injected
nothing cannot pass as one that survived everything.
"""
import collections
import glob
import json
import os
import signal
import subprocess
import time

# What ASan, LSan and UBSan print; UBSan goes on running after its report
# and the exit code stays 0, so the text is the only trace.
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "runtime error:",
                   "LeakSanitizer", "SUMMARY: UndefinedBehaviorSanitizer")


class ChaosFailure(Exception):
    """zerg itself misbehaved in a way no resume may hide."""


def proc_env(pid):
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            return dict(kv.split(b"=", 1) for kv in f.read().split(b"\0")
                        if b"=" in kv)
    except OSError:
        return {}


def alive(pid):
    """True while pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def project_procs(proj, feature=None):
    """Live pids whose environment names the project (and the feature:
    ZERG_FEATURE for tasks, the run ids of the feature for workers)."""
    pids = []
    want = ("%s" % proj).encode()
    for env in glob.glob("/proc/[0-9]*/environ"):
        pid = int(env.split("/")[2])
        e = proc_env(pid)
        if e.get(b"ZERG_PROJECT") != want or not alive(pid):
            continue
        if feature is None or e.get(b"ZERG_FEATURE") == feature.encode() \
                or worker_feature(pid) == feature:
            pids.append(pid)
    return pids


def worker_feature(pid):
    """The --feature of a `zerg worker` process, or None."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        return None
    if b"worker" not in argv or b"--feature" not in argv:
        return None
    i = argv.index(b"--feature")
    return argv[i + 1].decode() if i + 1 < len(argv) else None


def kill_all(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def kill_rushes():
    """After a failure: no orchestrator of the run may go on respawning."""
    for r in Rush.started:
        if r.running():
            r.p.kill()
            r.p.wait()


def worker_pids(proj, feature):
    """slot -> pid from the feature's heartbeats (unreadable ones skipped)."""
    out = {}
    for hb in glob.glob("%s/.zerg/state/%s/heartbeat-*.json" % (proj, feature)):
        try:
            with open(hb) as f:
                d = json.load(f)
            out[int(d["worker_id"])] = int(d["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
    return out


def sanitizer_report(text):
    for mark in SANITIZER_MARKS:
        i = text.find(mark)
        if i >= 0:
            return text[max(0, i - 200):i + 1500]
    return None


def tail(path, n=30):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return "(no %s)" % path


def scan_worker_logs(proj):
    """Worker stderr goes to .zerg/logs/{feature}/worker-N.log: a sanitizer report
    of a worker lands there, not in the rush's stderr."""
    for path in glob.glob(proj + "/.zerg/logs/*/worker-*.log"):
        with open(path, errors="replace") as f:
            rep = sanitizer_report(f.read())
        if rep:
            raise ChaosFailure("sanitizer report in %s:\n%s" % (path, rep))


class Rush:
    """One feature's orchestrator, across its kills and resumes.

    finish() is the only way a run ends: exit 0 is done; exit 1 (failed or
    stopped) or death by the harness's own SIGKILL is resumed; everything
    else (another signal, an exit >= 128, exit 2 or 3, a sanitizer report,
    a hang) raises ChaosFailure with the stderr tail."""

    started = []  # every Rush of this process, for kill_rushes()

    def __init__(self, zerg, proj, feature, workers, logdir, env=None):
        self.zerg, self.proj, self.feature = zerg, proj, feature
        self.workers, self.logdir, self.env = workers, logdir, env
        self.p = None
        self.n = 0
        self.harness_killed = False
        self.resumes = 0
        self.err_path = None
        Rush.started.append(self)

    def start(self, resume):
        self.n += 1
        args = [self.zerg, "-C", self.proj, "--feature", self.feature,
                "rush", "--workers", str(self.workers)]
        if resume:
            args.append("--resume")
            self.resumes += 1
        self.err_path = "%s/rush-%s-%d.err" % (self.logdir, self.feature, self.n)
        out = open("%s/rush-%s.out" % (self.logdir, self.feature), "a")
        err = open(self.err_path, "w")
        self.harness_killed = False
        self.p = subprocess.Popen(args, stdout=out, stderr=err, env=self.env)
        out.close()
        err.close()

    def running(self):
        return self.p is not None and self.p.poll() is None

    def holds_lock(self):
        """True once this incarnation holds the feature's lock: the rush
        writes its pid there right after taking it and empties the file
        when it lets go; a SIGKILLed incarnation leaves its own pid, never
        this one's.  Before that, `zerg stop` rightly finds no rush."""
        try:
            with open("%s/.zerg/state/%s.lock" % (self.proj, self.feature)) as f:
                text = f.read().strip()
        except OSError:
            return False
        return self.running() and text == str(self.p.pid)

    def kill9(self):
        """The injected orchestrator death: SIGKILL, reaped at once."""
        self.harness_killed = True
        self.p.kill()
        self.p.wait()

    def mark_killed_externally(self):
        """`zerg stop --force` (run by the harness) SIGKILLs the rush."""
        self.harness_killed = True

    def judge(self, rc):
        """'done', 'resume', or raises ChaosFailure."""
        with open(self.err_path, errors="replace") as f:
            rep = sanitizer_report(f.read())
        if rep:
            self.fail("sanitizer report (exit %d)" % rc, rep)
        if rc == 0:
            return "done"
        # 143: stopped cleanly by the SIGTERM of the harness's own `zerg
        # stop --force`, before its SIGKILL.
        if rc == 1 or (self.harness_killed and
                       rc in (-signal.SIGKILL, 128 + signal.SIGTERM)):
            return "resume"
        if rc < 0:
            self.fail("killed by signal %d the harness did not send" % -rc)
        if rc >= 128:
            self.fail("exit %d (a crash or an abort)" % rc)
        self.fail("unexpected exit %d" % rc)

    def fail(self, what, report=None):
        raise ChaosFailure("zerg rush --feature %s (start %d): %s\n%s" % (
            self.feature, self.n, what,
            report or "--- stderr tail:\n" + tail(self.err_path)))

    def check_if_ended(self):
        """Judges the current start if it has ended; resumes if allowed.
        True when this feature's rush is done."""
        if self.p is None:
            return False
        rc = self.p.poll()
        if rc is None:
            return False
        if self.judge(rc) == "done":
            return True
        self.start(True)
        return False

    def finish(self, timeout, max_resumes=3):
        """Waits for the rush to end for good (resuming as judge allows)."""
        deadline = time.monotonic() + timeout
        extra = 0
        while True:
            left = deadline - time.monotonic()
            try:
                rc = self.p.wait(timeout=max(0.1, left))
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
                self.fail("no end within %.0f s (a hang)" % timeout)
            if self.judge(rc) == "done":
                return
            extra += 1
            if extra > max_resumes:
                self.fail("still exit %d after %d resumes" % (rc, max_resumes))
            self.start(True)


class Injections:
    """Counts each kind of injection really performed (a kill of a pid
    that was already gone does not count) and, until every enabled kind
    has happened once, picks the ones still missing first.  A kind given
    a cap is not picked again once it has happened that often."""

    def __init__(self, rng, weights, caps=None):
        self.rng = rng
        self.weights = {k: w for k, w in weights.items() if w > 0}
        self.caps = caps or {}
        self.done = collections.Counter()

    def pick(self):
        missing = self.missing()
        if missing:
            return self.rng.choice(missing)
        kinds = [k for k in sorted(self.weights)
                 if self.done[k] < self.caps.get(k, 1 << 30)]
        return self.rng.choices(kinds, [self.weights[k] for k in kinds])[0]

    def performed(self, kind, n=1):
        self.done[kind] += n

    def enable(self, kind):
        self.weights.setdefault(kind, 0)

    def missing(self):
        return sorted(k for k in self.weights if not self.done[k])

    def summary(self):
        return ", ".join("%s=%d" % (k, self.done[k]) for k in sorted(self.weights))


def kill_worker(proj, feature, rng):
    """SIGKILLs one live worker of the feature; True if one was killed."""
    workers = worker_pids(proj, feature)
    live = [(s, p) for s, p in sorted(workers.items())
            if alive(p) and worker_feature(p) == feature]
    if not live:
        return False
    try:
        os.kill(rng.choice(live)[1], signal.SIGKILL)
        return True
    except ProcessLookupError:
        return False


def monitor_events(proj):
    out = []
    with open(proj + "/.zerg/monitor.jsonl") as f:
        for line in f:
            out.append(json.loads(line))
    return out


def load_state(proj, feature):
    with open("%s/.zerg/state/%s.json" % (proj, feature)) as f:
        return json.load(f)


def write_config(proj, extra="", retry_attempts=0, rush=""):
    """The chaos config: fast heartbeats and backoffs, budgets no crash
    can spend; retry_attempts for the modes whose tasks fail on purpose,
    rush a whole rush: section."""
    with open(proj + "/.zerg/config.yaml", "w") as f:
        f.write(rush + "resilience:\n"
                "  reconcile_interval_seconds: 0.3\n"
                "workers:\n"
                "  heartbeat_interval_seconds: 0.1\n"
                "  heartbeat_stale_threshold: 0.8\n"
                "  spawn_backoff_base_seconds: 0.05\n"
                "  spawn_backoff_max_seconds: 0.2\n"
                "  max_respawn_attempts: 1000\n"
                "  max_task_crashes: 100\n"
                "  backoff_base_seconds: 0.05\n"
                "  backoff_max_seconds: 0.2\n"
                "  retry_attempts: %d\n" % retry_attempts + extra)


def write_graph(proj, feature, tasks):
    os.makedirs("%s/.gsd/specs/%s" % (proj, feature), exist_ok=True)
    with open("%s/.gsd/specs/%s/task-graph.json" % (proj, feature), "w") as f:
        json.dump({"feature": feature, "tasks": tasks}, f)


def leftovers(proj, grace=3.0):
    """Processes of the project still alive after a grace period (a
    worker killed by PDEATHSIG may need a moment)."""
    deadline = time.monotonic() + grace
    while True:
        left = project_procs(proj)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def describe(pids):
    out = []
    for pid in pids:
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                out.append("%d: %s" % (pid, f.read().replace(b"\0", b" ")
                                       .decode(errors="replace")[:120]))
        except OSError:
            out.append("%d: (gone)" % pid)
    return out


def drive(rush, inj, seconds, rng, pause, inject_one, finish_s):
    """Starts rush and injects faults until it ends or seconds pass: a
    pause drawn from pause (min, max), then inj's next kind, which
    inject_one(kind) performs (True when it did); then waits up to
    finish_s for the rush to end."""
    rush.start(False)
    deadline = time.monotonic() + seconds
    done = False
    while time.monotonic() < deadline and not done:
        time.sleep(rng.uniform(*pause))
        if not rush.running():
            done = rush.check_if_ended()
            continue
        kind = inj.pick()
        if inject_one(kind):
            inj.performed(kind)
    if not done:
        rush.finish(finish_s)
