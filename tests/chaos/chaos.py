#!/usr/bin/env python3
"""chaos.py - randomized, seeded, reproducible failure injection.

Runs `zerg rush` on a generated graph of a few hundred tasks and, while it
runs, kills (SIGKILL) or freezes (SIGSTOP) random workers, corrupts
heartbeat files and, with --kill-orchestrator, kills the orchestrator and
resumes it; with --spawn-failures every third worker launch fails; with
--disk-full .zerg/state is a small tmpfs that is filled to the last byte
now and then (needs root for the mount).  Afterwards it checks the invariants:

  * every task ended complete, exactly one task_complete event each;
  * no crash was charged to a retry budget (retry_count == 0 everywhere);
  * the state document and monitor.jsonl agree;
  * no process of the run is left.

Usage: chaos.py ZERG [--seed N] [--seconds S] [--tasks N] [--workers N]
                     [--kill-orchestrator] [--spawn-failures] [--disk-full]
The seed is printed first and on failure; rerun with --seed to reproduce.
"""
import argparse
import collections
import glob
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def project_procs(proj):
    pids = []
    for env in glob.glob("/proc/[0-9]*/environ"):
        try:
            with open(env, "rb") as f:
                if ("ZERG_PROJECT=%s" % proj).encode() in f.read().split(b"\0"):
                    pids.append(int(env.split("/")[2]))
        except OSError:
            pass
    return pids


def worker_pids(proj):
    out = {}
    for hb in glob.glob(proj + "/.zerg/state/f/heartbeat-*.json"):
        try:
            with open(hb) as f:
                d = json.load(f)
            out[d["worker_id"]] = d["pid"]
        except (OSError, ValueError, KeyError):
            pass
    return out


FLAKY_LAUNCH = """#!/bin/sh
# Every third worker launch fails, as a flaky launcher or runtime would.
n=$(cat "$(dirname "$0")/launches" 2>/dev/null || echo 0)
echo $((n + 1)) > "$(dirname "$0")/launches"
[ $((n % 3)) -ne 1 ] || { echo "chaos: launch $n refused" >&2; exit 1; }
exec "$@"
"""


def fill_disk(proj, rng):
    """Fills the tmpfs under .zerg/state, holds it full briefly, frees it."""
    path = proj + "/.zerg/state/chaos-filler"
    try:
        with open(path, "wb") as f:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
    except OSError:
        pass
    time.sleep(rng.uniform(0.1, 0.5))
    os.unlink(path)


def make_project(root, ntasks, levels, spawn_failures):
    proj = os.path.join(root, "chaos")
    os.makedirs(proj + "/.gsd/specs/f")
    os.makedirs(proj + "/.zerg")
    with open(proj + "/.gsd/.current-feature", "w") as f:
        f.write("f\n")
    with open(proj + "/.zerg/config.yaml", "w") as f:
        f.write("resilience:\n"
                "  reconcile_interval_seconds: 0.3\n"
                "workers:\n"
                "  heartbeat_interval_seconds: 0.1\n"
                "  heartbeat_stale_threshold: 0.8\n"
                "  spawn_backoff_base_seconds: 0.05\n"
                "  spawn_backoff_max_seconds: 0.2\n"
                "  max_respawn_attempts: 1000\n"
                "  max_task_crashes: 100\n"
                "  retry_attempts: 0\n")
        if spawn_failures:
            f.write("  launch_prefix: [\"%s/flaky-launch.sh\"]\n" % proj)
    if spawn_failures:
        with open(proj + "/flaky-launch.sh", "w") as f:
            f.write(FLAKY_LAUNCH)
        os.chmod(proj + "/flaky-launch.sh", 0o755)
    per = max(1, ntasks // levels)
    tasks = []
    for l in range(1, levels + 1):
        for i in range(per):
            tid = "C-L%d-%03d" % (l, i)
            deps = ["C-L%d-%03d" % (l - 1, i)] if l > 1 else []
            # Idempotent output: a task killed and re-run writes the same.
            tasks.append({"id": tid, "level": l, "dependencies": deps,
                          "command": "sleep 0.0%d; echo %s > out-%s" %
                          (random.randint(1, 9), tid, tid)})
    with open(proj + "/.gsd/specs/f/task-graph.json", "w") as f:
        json.dump({"feature": "f", "tasks": tasks}, f)
    return proj, len(tasks)


def rush(zerg, proj, workers, resume):
    args = [zerg, "-C", proj, "rush", "--workers", str(workers)]
    if resume:
        args.append("--resume")
    log = open(proj + "/rush.out", "a")
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)


def inject(proj, rng, stats, stopped, disk_full):
    workers = worker_pids(proj)
    if not workers:
        return
    slot = rng.choice(sorted(workers))
    pid = workers[slot]
    what = rng.choices(["kill", "stop", "corrupt", "fill"],
                       [6, 2, 2, 2 if disk_full else 0])[0]
    try:
        if what == "kill":
            os.kill(pid, signal.SIGKILL)
        elif what == "stop":
            os.kill(pid, signal.SIGSTOP)
            stopped.append(pid)
        elif what == "fill":
            fill_disk(proj, rng)
        else:
            with open(proj + "/.zerg/state/f/heartbeat-%d.json" % slot, "w") as f:
                f.write('{"worker_id": %d, "seq": "garbage' % slot)
        stats[what] += 1
    except (ProcessLookupError, FileNotFoundError):
        pass


def check(proj, ntasks):
    problems = []
    with open(proj + "/.zerg/state/f.json") as f:
        state = json.load(f)
    complete = {t for t, v in state["tasks"].items() if v["status"] == "complete"}
    if len(complete) != ntasks:
        bad = {t: v["status"] for t, v in state["tasks"].items()
               if v["status"] != "complete"}
        problems.append("%d tasks not complete: %s" %
                        (ntasks - len(complete), list(bad.items())[:5]))
    charged = [t for t, v in state["tasks"].items() if v["retry_count"]]
    if charged:
        problems.append("crashes charged to retry budgets: %s" % charged[:5])
    # A completion may be logged twice when the orchestrator was killed
    # after applying a result but before its state write was durable: the
    # journal replay on --resume records the same (epoch, attempt) again.
    # Two different completions of one task would be a real double run.
    completions = collections.defaultdict(set)
    with open(proj + "/.zerg/monitor.jsonl") as f:
        for line in f:
            e = json.loads(line)
            if e["event"] == "task_complete":
                completions[e["task"]].add((e["data"].get("epoch"),
                                            e["data"].get("attempt")))
    events = {t: len(c) for t, c in completions.items()}
    twice = [t for t, n in events.items() if n != 1]
    if twice:
        problems.append("tasks completed more than once: %s" % twice[:5])
    if set(events) != complete:
        problems.append("state and monitor.jsonl disagree on %d tasks" %
                        len(set(events) ^ complete))
    for t in complete:
        if not os.path.exists("%s/out-%s" % (proj, t)):
            problems.append("task %s complete but produced nothing" % t)
            break
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("zerg")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--tasks", type=int, default=300)
    ap.add_argument("--levels", type=int, default=4)
    ap.add_argument("--workers", type=int, default=6)
    ap.add_argument("--kill-orchestrator", action="store_true")
    ap.add_argument("--spawn-failures", action="store_true")
    ap.add_argument("--disk-full", action="store_true")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else int.from_bytes(os.urandom(4), "big")
    print("chaos: seed %d" % seed, flush=True)
    rng = random.Random(seed)
    random.seed(seed)
    root = tempfile.mkdtemp(prefix="zerg-chaos-")
    proj, ntasks = make_project(root, a.tasks, a.levels, a.spawn_failures)
    if a.disk_full:
        os.makedirs(proj + "/.zerg/state")
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs",
                        proj + "/.zerg/state"], check=True)
    try:
        return run(a, seed, rng, root, proj, ntasks)
    finally:
        if a.disk_full:
            subprocess.run(["umount", "-l", proj + "/.zerg/state"])


def run(a, seed, rng, root, proj, ntasks):
    stats = collections.Counter()
    stopped = []
    p = rush(os.path.abspath(a.zerg), proj, a.workers, False)
    deadline = time.monotonic() + a.seconds
    orch_kills = 0
    while time.monotonic() < deadline:
        time.sleep(rng.uniform(0.05, 0.4))
        if p.poll() is not None:
            break
        if a.kill_orchestrator and rng.random() < 0.05 and orch_kills < 3:
            p.kill()
            p.wait()
            orch_kills += 1
            time.sleep(0.3)
            p = rush(os.path.abspath(a.zerg), proj, a.workers, True)
            continue
        inject(proj, rng, stats, stopped, a.disk_full)
    try:
        rc = p.wait(timeout=180)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = -1
    # A run killed at the very end may need one more resume.
    if rc != 0 and a.kill_orchestrator:
        rc = rush(os.path.abspath(a.zerg), proj, a.workers, True).wait(timeout=180)
    time.sleep(0.5)
    left = project_procs(proj)
    problems = [] if rc == 0 else ["rush exited %d" % rc]
    problems += check(proj, ntasks)
    if left:
        problems.append("processes left: %s" % left)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    seen = collections.Counter()
    try:
        with open(proj + "/.zerg/monitor.jsonl") as f:
            for line in f:
                seen[json.loads(line)["event"]] += 1
    except (OSError, ValueError):
        pass
    print("chaos: %d tasks, %d workers, injected %s, orchestrator kills %d" %
          (ntasks, a.workers, dict(stats), orch_kills))
    print("chaos: recovery seen: %s" % {k: seen[k] for k in (
        "worker_crash", "task_reassigned", "heartbeat_stale",
        "worker_spawn_retry", "state_write_failed", "result_fenced",
        "state_reconcile_fix") if seen[k]})
    if problems:
        print("chaos: FAILED with seed %d (project kept in %s):" % (seed, root))
        for pr in problems:
            print("  - " + pr)
        return 1
    if a.disk_full:
        subprocess.run(["umount", "-l", proj + "/.zerg/state"])
        a.disk_full = False
    shutil.rmtree(root)
    print("chaos: all invariants hold (seed %d)" % seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
