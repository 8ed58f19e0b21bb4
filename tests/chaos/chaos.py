#!/usr/bin/env python3
"""chaos.py - randomized, seeded, reproducible failure injection.

Modes (--mode):

  classic       (default) one feature, a graph of a few hundred tasks;
                while `zerg rush` runs, random workers are killed
                (SIGKILL) or frozen (SIGSTOP) and heartbeat files
                corrupted; with --kill-orchestrator the orchestrator is
                killed and resumed; with --spawn-failures every third
                worker launch fails; with --disk-full .zerg/state is a
                small tmpfs filled to the last byte now and then (needs
                root for the mount).
  two-features  features f and g in one project rushed at once, with the
                same task ids (--ids same) or different ones; see
                chaos_two.py.
  hostile       tasks that attack zerg's own files (FIFOs, links out of
                the project, garbage heartbeats, setsid daemons, config
                rewrites); see chaos_hostile.py.
  git           a real git repository under worktree isolation, tasks
                that fail on purpose and pass on retry, SIGKILLs of
                workers, their process groups and git itself while a
                worker runs git, and (--kill-orchestrator) of the
                orchestrator while it runs git; see chaos_git.py.
  stop          the orchestrator SIGSTOPped for longer than the lease
                (workers.lease_stale_seconds) and SIGCONTed, also while
                it merges or moves to the next level, under worktree
                isolation (--isolation none: without); no worker may
                leave, no task be charged; then the control: killed
                while stopped, its workers must leave; see chaos_stop.py.

Every mode counts the injections it really performed and fails when an
enabled kind never happened.  A rush is resumed only after exit 1 or the
harness's own kill -9; any other end of zerg (a signal nobody sent, an
exit >= 128, exit 2 or 3, a sanitizer report, a hang) fails the run with
the stderr tail.  Classic invariants:

  * every task ended complete, exactly one task_complete event each;
  * no crash was charged to a retry budget (retry_count == 0 everywhere);
  * the state document and monitor.jsonl agree;
  * no process of the run is left.

Usage: chaos.py ZERG [--mode M] [--seed N] [--seconds S] [--tasks N]
                     [--workers N] [--kill-orchestrator] [--spawn-failures]
                     [--disk-full] [--ids same|different]
                     [--isolation worktree|none] [--min-stops N]
The seed is printed first and on failure; rerun with --seed to reproduce.
"""
import argparse
import collections
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

# The helpers beside this file are imported; no __pycache__ in the tree.
sys.dont_write_bytecode = True
import chaos_lib as cl  # noqa: E402

FLAKY_LAUNCH = """#!/bin/sh
# Every third worker launch fails, as a flaky launcher or runtime would.
# Workers are launched together: the counter is read and bumped under a
# lock, or two launches read the same n and the count of refusals the
# harness checks is wrong.  The lock is released before the exec.
d=$(dirname "$0")
n=$(flock "$d/launches.lock" sh -c \
    'n=$(cat "$1" 2>/dev/null || echo 0); echo $((n + 1)) > "$1"; echo "$n"' \
    sh "$d/launches") || { echo "chaos: cannot count launches" >&2; exit 1; }
[ $((n % 3)) -ne 1 ] || { echo "chaos: launch $n refused" >&2; exit 1; }
exec "$@"
"""

ORCH_KILLS_MAX = 3


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


def make_project(root, ntasks, levels, spawn_failures, rng):
    proj = os.path.join(root, "chaos")
    os.makedirs(proj + "/.zerg")
    os.makedirs(proj + "/.gsd")
    with open(proj + "/.gsd/.current-feature", "w") as f:
        f.write("f\n")
    extra = ""
    if spawn_failures:
        if not shutil.which("flock"):
            raise cl.ChaosFailure("--spawn-failures needs flock(1) (util-linux)")
        extra = "  launch_prefix: [\"%s/flaky-launch.sh\"]\n" % proj
        with open(proj + "/flaky-launch.sh", "w") as f:
            f.write(FLAKY_LAUNCH)
        os.chmod(proj + "/flaky-launch.sh", 0o755)
    cl.write_config(proj, extra)
    per = max(1, ntasks // levels)
    tasks = []
    for l in range(1, levels + 1):
        for i in range(per):
            tid = "C-L%d-%03d" % (l, i)
            deps = ["C-L%d-%03d" % (l - 1, i)] if l > 1 else []
            # Idempotent output: a task killed and re-run writes the same.
            tasks.append({"id": tid, "level": l, "dependencies": deps,
                          "command": "sleep 0.0%d; echo %s > out-%s" %
                          (rng.randint(1, 9), tid, tid)})
    cl.write_graph(proj, "f", tasks)
    return proj, len(tasks)


def inject(kind, proj, rng, rush):
    """Performs one injection; True if it really happened."""
    if kind == "orch_kill":
        rush.kill9()
        time.sleep(0.3)
        rush.start(True)
        return True
    if kind == "fill":
        fill_disk(proj, rng)
        return True
    workers = {s: p for s, p in cl.worker_pids(proj, "f").items() if cl.alive(p)}
    if not workers:
        return False
    slot = rng.choice(sorted(workers))
    try:
        if kind == "kill":
            os.kill(workers[slot], signal.SIGKILL)
        elif kind == "stop":
            os.kill(workers[slot], signal.SIGSTOP)
        else:
            with open(proj + "/.zerg/state/f/heartbeat-%d.json" % slot, "w") as f:
                f.write('{"worker_id": %d, "seq": "garbage' % slot)
    except (ProcessLookupError, FileNotFoundError):
        return False
    return True


def check(proj, ntasks):
    problems = []
    state = cl.load_state(proj, "f")
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
    for e in cl.monitor_events(proj):
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


def refused_launches(proj):
    try:
        with open(proj + "/launches") as f:
            n = int(f.read().strip() or 0)
    except (OSError, ValueError):
        return 0
    return sum(1 for i in range(n) if i % 3 == 1)


def run_classic(a, rng, root):
    proj, ntasks = make_project(root, a.tasks, a.levels, a.spawn_failures, rng)
    if a.disk_full:
        os.makedirs(proj + "/.zerg/state")
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs",
                        proj + "/.zerg/state"], check=True)
    try:
        return classic(a, rng, root, proj, ntasks)
    finally:
        if a.disk_full:
            subprocess.run(["umount", "-l", proj + "/.zerg/state"])


def classic(a, rng, root, proj, ntasks):
    inj = cl.Injections(rng, {"kill": 6, "stop": 2, "corrupt": 2,
                              "fill": 2 if a.disk_full else 0,
                              "orch_kill": 1 if a.kill_orchestrator else 0},
                         {"orch_kill": ORCH_KILLS_MAX})
    rush = cl.Rush(a.zerg, proj, "f", a.workers, root)
    cl.drive(rush, inj, a.seconds, rng, (0.05, 0.4),
             lambda kind: inject(kind, proj, rng, rush), 180)
    cl.scan_worker_logs(proj)
    problems = check(proj, ntasks)
    if a.spawn_failures:
        inj.enable("spawn_refused")
        inj.performed("spawn_refused", refused_launches(proj))
    return report(a, root, proj, inj, rush, problems,
                  "%d tasks, %d workers" % (ntasks, a.workers))


def report(a, root, proj, inj, rushes, problems, what):
    """Common ending: injections, leftovers, recovery events, verdict."""
    if not isinstance(rushes, (list, tuple)):
        rushes = [rushes]
    for k in inj.missing():
        problems.append("injection '%s' never performed (the rush ended "
                        "first? use more --tasks)" % k)
    left = cl.leftovers(proj)
    if left:
        problems.append("processes left: %s" % cl.describe(left))
        cl.kill_all(left)
    seen = collections.Counter()
    try:
        for e in cl.monitor_events(proj):
            seen[e["event"]] += 1
    except (OSError, ValueError):
        pass
    print("chaos: %s, injected: %s; resumes %s" % (
        what, inj.summary(), {r.feature: r.resumes for r in rushes}))
    print("chaos: recovery seen: %s" % {k: seen[k] for k in (
        "worker_crash", "task_reassigned", "heartbeat_stale",
        "worker_spawn_retry", "state_write_failed", "result_fenced",
        "result_invalid", "state_reconcile_fix") if seen[k]})
    if problems:
        print("chaos: FAILED with seed %d (project kept in %s):" % (a.seed, root))
        for pr in problems:
            print("  - " + pr)
        return 1
    if a.disk_full:
        subprocess.run(["umount", "-l", proj + "/.zerg/state"])
        a.disk_full = False
    shutil.rmtree(root, ignore_errors=True)
    print("chaos: all invariants hold (seed %d)" % a.seed)
    return 0


def parse():
    ap = argparse.ArgumentParser()
    ap.add_argument("zerg")
    ap.add_argument("--mode", choices=("classic", "two-features", "hostile",
                                       "git", "stop"),
                    default="classic")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--tasks", type=int, default=300)
    ap.add_argument("--levels", type=int, default=4)
    ap.add_argument("--workers", type=int, default=6)
    ap.add_argument("--kill-orchestrator", action="store_true")
    ap.add_argument("--spawn-failures", action="store_true")
    ap.add_argument("--disk-full", action="store_true")
    ap.add_argument("--ids", choices=("same", "different"), default="same")
    ap.add_argument("--isolation", choices=("worktree", "none"),
                    default="worktree")
    ap.add_argument("--min-stops", type=int, default=3)
    a = ap.parse_args()
    a.zerg = os.path.abspath(a.zerg)
    if a.seed is None:
        a.seed = int.from_bytes(os.urandom(4), "big")
    return a


def main():
    a = parse()
    print("chaos: mode %s, seed %d" % (a.mode, a.seed), flush=True)
    rng = random.Random(a.seed)
    root = tempfile.mkdtemp(prefix="zerg-chaos-")
    try:
        if a.mode == "classic":
            return run_classic(a, rng, root)
        if a.mode == "two-features":
            import chaos_two
            return chaos_two.run(a, rng, root, report)
        if a.mode == "git":
            import chaos_git
            return chaos_git.run(a, rng, root, report)
        if a.mode == "stop":
            import chaos_stop
            return chaos_stop.run(a, rng, root, report)
        import chaos_hostile
        return chaos_hostile.run(a, rng, root, report)
    except cl.ChaosFailure as e:
        print("chaos: FAILED with seed %d (project kept in %s):\n%s" %
              (a.seed, root, e))
        cl.kill_rushes()
        cl.kill_all(cl.project_procs(os.path.join(root, "chaos")))
        return 1


if __name__ == "__main__":
    sys.exit(main())
