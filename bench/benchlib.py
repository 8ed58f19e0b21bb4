# benchlib.py - what the zerg benchmarks share: argument parsing, scratch
# projects, a running `zerg rush` with its event log tailed, /proc readers,
# statistics and the results file each benchmark writes for bench/run.sh.
#
# Standard library only (Debian's python3).  Every rush is started in its
# own scratch project under one work directory; any process left running
# from that directory is killed when a benchmark ends, even on failure.
import argparse
import atexit
import datetime
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

FEATURE = "f"
TICK_NS = 1_000_000_000 // os.sysconf("SC_CLK_TCK")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


class BenchError(Exception):
    """A benchmark could not take its measurement (says why)."""


# ---- arguments and results ----------------------------------------------

class Env:
    """What every benchmark script is given on its command line."""

    def __init__(self, args):
        self.zerg = os.path.realpath(args.zerg)
        self.quick = args.quick
        self.out = args.out
        self.keep = args.keep
        self.verbose = args.verbose
        if args.workdir:
            os.makedirs(args.workdir, exist_ok=True)
            self.root = tempfile.mkdtemp(prefix="zb-", dir=args.workdir)
        else:
            self.root = tempfile.mkdtemp(prefix="zerg-bench-")
        self.results = {}
        atexit.register(self._cleanup)
        # SIGTERM (e.g. from `timeout`) cleans up like Ctrl-C does.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    def _cleanup(self):
        sweep(self.root)
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)
        else:
            print("kept %s" % self.root, file=sys.stderr)

    def log(self, fmt, *args):
        print("# " + (fmt % args if args else fmt), file=sys.stderr,
              flush=True)

    def save(self, key, value):
        """Records one result and rewrites the results file."""
        self.results[key] = value
        if self.out:
            tmp = self.out + ".tmp"
            with open(tmp, "w") as f:
                json.dump(self.results, f, indent=1, sort_keys=True)
            os.replace(tmp, self.out)


def parse_args(description, extra=None):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("zerg", help="the zerg binary to measure")
    p.add_argument("--quick", action="store_true",
                   help="fewer and smaller runs (about a minute in all)")
    p.add_argument("--out", help="write the results as JSON to this file")
    p.add_argument("--workdir", help="where scratch projects go "
                   "(default: $TMPDIR); its filesystem matters, see fsync")
    p.add_argument("--keep", action="store_true",
                   help="keep the scratch projects")
    p.add_argument("-v", "--verbose", action="store_true")
    if extra:
        extra(p)
    args = p.parse_args()
    if not os.access(args.zerg, os.X_OK):
        p.error("%s is not an executable" % args.zerg)
    return Env(args), args


def main(run, env):
    """Runs a benchmark body; a BenchError is reported, not a traceback."""
    try:
        run(env)
    except BenchError as e:
        print("bench: %s" % e, file=sys.stderr)
        env.save("error", str(e))
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)


# ---- statistics -----------------------------------------------------------

def summary(values):
    """Median and spread of a list of numbers (None when it is empty)."""
    vals = [v for v in values if v is not None]
    if not vals:
        return None
    return {"n": len(vals), "median": statistics.median(vals),
            "min": min(vals), "max": max(vals)}


def iso_epoch(ts):
    """'2026-02-03T05:41:55.123Z' -> seconds since the epoch."""
    d = datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ")
    return d.replace(tzinfo=datetime.timezone.utc).timestamp()


# ---- scratch projects -----------------------------------------------------

def config_yaml(resilience=None, workers=None, logging=None):
    """The text of a .zerg/config.yaml from plain dicts."""
    lines = []
    for section, keys in (("resilience", resilience), ("workers", workers),
                          ("logging", logging)):
        if not keys:
            continue
        lines.append(section + ":")
        lines += ["  %s: %s" % (k, v) for k, v in keys.items()]
    return "\n".join(lines) + "\n"


def level_tasks(n, levels, command):
    """n tasks spread evenly over `levels` levels, no dependencies: the
    level barrier alone orders them."""
    tasks = []
    for i in range(n):
        level = 1 + i * levels // n
        tid = "T-L%d-%05d" % (level, i)
        tasks.append({"id": tid, "title": tid, "level": level,
                      "command": command})
    return tasks


def new_project(env, name, tasks, config, root=None):
    """Creates a project for feature f; returns its path."""
    proj = os.path.join(root or env.root, name)
    if os.path.exists(proj):
        shutil.rmtree(proj)
    os.makedirs(os.path.join(proj, ".gsd", "specs", FEATURE))
    os.makedirs(os.path.join(proj, ".zerg"))
    with open(os.path.join(proj, ".gsd", ".current-feature"), "w") as f:
        f.write(FEATURE + "\n")
    with open(os.path.join(proj, ".gsd", "specs", FEATURE,
                           "task-graph.json"), "w") as f:
        json.dump({"feature": FEATURE, "tasks": tasks}, f)
    with open(os.path.join(proj, ".zerg", "config.yaml"), "w") as f:
        f.write(config)
    return proj


# ---- the disk -------------------------------------------------------------

def fsync_ms(directory, n=40):
    """Median milliseconds of a 4 KiB write + fsync, and of the atomic
    replace zerg uses for durable files (write, fsync, rename, fsync of
    the directory)."""
    path = os.path.join(directory, "fsync-probe")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    dfd = os.open(directory, os.O_RDONLY)
    plain, replace = [], []
    try:
        for _ in range(n):
            t0 = time.monotonic()
            os.pwrite(fd, b"x" * 4096, 0)
            os.fsync(fd)
            plain.append((time.monotonic() - t0) * 1000.0)
            t0 = time.monotonic()
            with open(path + ".tmp", "wb") as f:
                f.write(b"y" * 4096)
                f.flush()
                os.fsync(f.fileno())
            os.rename(path + ".tmp", path + ".new")
            os.fsync(dfd)
            replace.append((time.monotonic() - t0) * 1000.0)
    finally:
        os.close(fd)
        os.close(dfd)
        for p in (path, path + ".new"):
            try:
                os.unlink(p)
            except OSError:
                pass
    return statistics.median(plain), statistics.median(replace)


# ---- /proc ----------------------------------------------------------------

def proc_cpu(pid):
    """(utime+stime in ns at clock-tick resolution, on-CPU ns from
    schedstat) of one process, or None once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = int(fields[11]) + int(fields[12])  # utime, stime
        with open("/proc/%d/schedstat" % pid) as f:
            sched = int(f.read().split()[0])
        return ticks * TICK_NS, sched
    except (OSError, ValueError, IndexError):
        return None


def proc_status_kb(pid, key):
    """A kB field of /proc/PID/status (VmHWM, VmRSS), None once gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def proc_ppid(pid):
    """Parent pid of a process, None once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def project_pids(prefix):
    """Pids whose environment has ZERG_PROJECT equal to prefix or below it
    (workers and the tasks they started carry it)."""
    want = ("ZERG_PROJECT=" + prefix.rstrip("/")).encode()
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % d, "rb") as f:
                env = f.read()
        except OSError:
            continue
        if any(e == want or e.startswith(want + b"/")
               for e in env.split(b"\0")):
            pids.append(int(d))
    return pids


def sweep(prefix):
    """Kills whatever still runs from projects under prefix."""
    for pid in project_pids(prefix):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


# ---- a running rush -------------------------------------------------------

class Rush:
    """`zerg rush` in a project, started in the background.

    events() returns the monitor.jsonl events that appeared since the last
    call (whole lines only); the orchestrator's and workers' memory high
    water marks are sampled every `sample_s` seconds when asked."""

    def __init__(self, env, proj, workers, args=(), sample_s=None,
                 extra_env=None):
        self.env, self.proj = env, proj
        self.jsonl = os.path.join(proj, ".zerg", "monitor.jsonl")
        self.state_dir = os.path.join(proj, ".zerg", "state", FEATURE)
        self._off, self._buf, self.all_events = 0, b"", []
        self._cursor = 0
        cmd = [env.zerg, "-C", proj, "rush", "--workers", str(workers)]
        cmd += list(args)
        e = dict(os.environ, **(extra_env or {}))
        self.out_path = os.path.join(proj, "rush.out")
        self._out = open(self.out_path, "w")
        self.rc = None
        self.orch_hwm_kb = 0
        self.worker_hwm_kb = {}  # pid -> kB
        self._stop_sampling = threading.Event()
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdout=self._out,
                                     stderr=subprocess.STDOUT, env=e)
        self.pid = self.proc.pid
        self._sampler = None
        if sample_s:
            self._sampler = threading.Thread(target=self._sample,
                                             args=(sample_s,), daemon=True)
            self._sampler.start()

    # -- memory sampling
    def _sample(self, period):
        while not self._stop_sampling.wait(period):
            self.sample_memory()

    def sample_memory(self):
        hwm = proc_status_kb(self.pid, "VmHWM")
        if hwm:
            self.orch_hwm_kb = max(self.orch_hwm_kb, hwm)
        for pid in self.worker_pids():
            if proc_ppid(pid) != self.pid:
                continue  # an old heartbeat; the pid may be reused
            hwm = proc_status_kb(pid, "VmHWM")
            if hwm:
                self.worker_hwm_kb[pid] = max(self.worker_hwm_kb.get(pid, 0),
                                              hwm)

    def worker_pids(self):
        """Pids of the workers, from their heartbeat files (what the
        orchestrator itself knows them by)."""
        pids = []
        try:
            names = os.listdir(self.state_dir)
        except OSError:
            return pids
        for name in names:
            if name.startswith("heartbeat-") and name.endswith(".json"):
                slot = name[10:-5]
                hb = self.heartbeat(int(slot)) if slot.isdigit() else None
                if hb and isinstance(hb.get("pid"), int):
                    pids.append(hb["pid"])
        return pids

    # -- lifetime
    def running(self):
        return self.proc.poll() is None

    def wait(self, timeout):
        """Waits for the rush to end; its exit code.  A rush still running
        after timeout seconds is killed and is an error."""
        try:
            self.rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise BenchError("rush in %s did not end within %ds; see %s"
                             % (self.proj, timeout, self.out_path))
        self.wall = time.monotonic() - self.t0
        self._finish()
        return self.rc

    def stop(self, timeout=15):
        """Asks the rush to stop (SIGTERM, as `zerg stop` does); kills it
        if it has not ended after timeout seconds."""
        if self.running():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.rc = self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._finish()

    def kill(self):
        if self.running():
            self.proc.kill()
            self.proc.wait()
        self._finish()

    def _finish(self):
        self._stop_sampling.set()
        self._out.close()
        sweep(self.proj)

    # -- the event log
    def events(self):
        try:
            with open(self.jsonl, "rb") as f:
                f.seek(self._off)
                chunk = f.read()
        except FileNotFoundError:
            return []
        self._off += len(chunk)
        data = self._buf + chunk
        lines = data.split(b"\n")
        self._buf = lines.pop()
        new = []
        for line in lines:
            if line.strip():
                try:
                    new.append(json.loads(line))
                except ValueError:
                    continue
        self.all_events += new
        return new

    def mark(self):
        """Makes wait_event look only at events logged from now on."""
        self.events()
        self._cursor = len(self.all_events)

    def wait_event(self, match, timeout, what, poll_s=0.005):
        """The first event after the previous match (or mark) for which
        match(event) is true."""
        deadline = time.monotonic() + timeout
        while True:
            ended = not self.running()
            self.events()
            for i in range(self._cursor, len(self.all_events)):
                if match(self.all_events[i]):
                    self._cursor = i + 1
                    return self.all_events[i]
            self._cursor = len(self.all_events)
            if ended:
                raise BenchError("rush ended (exit %s) while waiting for %s; "
                                 "see %s" % (self.proc.returncode, what,
                                             self.out_path))
            if time.monotonic() > deadline:
                raise BenchError("no %s within %ss in %s"
                                 % (what, timeout, self.jsonl))
            time.sleep(poll_s)

    def wait_count(self, match, count, timeout, what):
        """Waits until count events (since the start) match, in any order
        relative to other waits."""
        deadline = time.monotonic() + timeout
        while True:
            ended = not self.running()
            self.events()
            if sum(1 for e in self.all_events if match(e)) >= count:
                return
            if ended or time.monotonic() > deadline:
                raise BenchError("no %d %s within %ss in %s"
                                 % (count, what, timeout, self.jsonl))
            time.sleep(0.005)

    def heartbeat(self, slot):
        path = os.path.join(self.state_dir, "heartbeat-%d.json" % slot)
        try:
            with open(path) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None


def named(name, **fields):
    """Matcher for wait_event: event name plus equal fields."""
    def match(ev):
        return ev.get("event") == name and all(
            ev.get(k) == v for k, v in fields.items())
    return match


def run_timed(cmd, timeout, **kw):
    """Runs cmd to its end; its wall time in seconds (error if it fails)."""
    t0 = time.monotonic()
    r = subprocess.run(cmd, timeout=timeout, **kw)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        raise BenchError("%s exited %d" % (" ".join(cmd[:3]), r.returncode))
    return wall
