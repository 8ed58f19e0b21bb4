#!/usr/bin/python3
# scale.py - how zerg's cost per task and its memory grow with the graph.
#
# The project of dispatch.py (N no-op tasks, `command: "true"`, in 4
# levels on 8 workers, heartbeat 1 s, reconciliation every 60 s) at 1,000,
# 10,000 and 100,000 tasks, one run each.  Right before each rush, `xargs
# -P8 -n1 sh -c true` runs over the same number of items, so each ratio
# compares runs made under the same conditions.
#
# For each size: both wall times, the overhead per task ((zerg - xargs) /
# N), zerg's time per task, the memory high water mark (VmHWM) of the
# orchestrator and of the largest worker (sampled every 0.25 s, as in
# dispatch.py), and the level transition latencies of the rush's
# monitor.jsonl, rotated files included.  The log is read once the rush
# has ended, one line at a time: at 100,000 tasks it holds some 350,000
# events (about 250 MB), more than is worth keeping in memory next to
# the rush being measured.
#
# The largest worker is the one that matters: each reads the one task of
# each assignment from the graph file, so its peak must not grow with the
# graph.  A worker is found by its heartbeat file, which names its pid,
# and counted only while the orchestrator is its parent.  Transitions are
# shown as the median and the largest: the target holds for every one.
#
# Targets: the overhead per task at 100,000 tasks within 1.3x of the
# figure at 1,000; orchestrator peak RSS < 64 MiB at 100,000 tasks and
# < 16 MiB at 10,000; worker peak RSS <= 8 MiB and every level
# transition <= 50 ms at 100,000 tasks.
#
#   bench/scale.py build/zerg [--quick] [--sizes 1000,10000] [--out FILE]
import json
import os
import sys

sys.dont_write_bytecode = True  # leave no __pycache__ in the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402
import dispatch  # noqa: E402  (the same project shape and transitions)

SIZES = [1000, 10000, 100000]
QUICK_SIZES = [1000, 10000]
BASE = 1000  # the size the overhead at the others is compared with
SAMPLE_S = 0.25
# dispatch.py's config, except that no rotated monitor.jsonl is dropped:
# the rush still rotates it every 50 MiB, as it would anyone's, but every
# task_complete must be counted (the 100,000-task log is about 5 files).
KEEP = 100
CONFIG = dispatch.CONFIG + bl.config_yaml(logging={"keep": KEEP})


def rush_timeout(n):
    """About 3 ms a task here; ten times that, plus start-up."""
    return 120 + n * 30 // 1000


def run_xargs(n):
    items = "".join("%d\n" % i for i in range(n)).encode()
    return bl.run_timed(["xargs", "-P%d" % dispatch.WORKERS, "-n1", "sh",
                         "-c", "true"], timeout=rush_timeout(n), input=items)


def log_files(path):
    """monitor.jsonl and its rotated files, oldest first (NAME.KEEP ..
    NAME.1, NAME)."""
    rotated = [path + ".%d" % k for k in range(KEEP, 0, -1)]
    return [p for p in rotated if os.path.exists(p)] + [path]


def task_events(paths):
    """task_claimed and task_complete events of the files, parsed one
    line at a time (other lines are skipped before parsing)."""
    for path in paths:
        with open(path, "rb") as f:
            for line in f:
                if b'"task_c' not in line:
                    continue
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                if ev.get("event") in ("task_claimed", "task_complete"):
                    yield ev


def read_log(paths):
    """(number of task_complete events, level transition latencies)."""
    done = [0]

    def counted(events):
        for ev in events:
            if ev["event"] == "task_complete":
                done[0] += 1
            yield ev
    transitions = dispatch.level_transitions(counted(task_events(paths)))
    return done[0], transitions


def run_zerg(env, n):
    proj = bl.new_project(env, "scale-%d" % n,
                          bl.level_tasks(n, dispatch.LEVELS, "true"),
                          CONFIG)
    rush = bl.Rush(env, proj, dispatch.WORKERS, sample_s=SAMPLE_S)
    rc = rush.wait(timeout=rush_timeout(n))
    if rc != 0:
        raise bl.BenchError("rush of %d tasks exited %d; see %s"
                            % (n, rc, rush.out_path))
    return rush


def measure(env, n):
    xargs = run_xargs(n)
    rush = run_zerg(env, n)
    files = log_files(rush.jsonl)
    done, transitions = read_log(files)
    if done != n:
        raise bl.BenchError("%d task_complete events in a rush of %d tasks "
                            "(%d log files); see %s"
                            % (done, n, len(files), rush.jsonl))
    return {"tasks": n, "levels": dispatch.LEVELS,
            "workers": dispatch.WORKERS,
            "zerg": rush.wall, "xargs": xargs,
            "zerg_per_xargs": rush.wall / xargs,
            "overhead_ms_per_task": (rush.wall - xargs) * 1000.0 / n,
            "zerg_ms_per_task": rush.wall * 1000.0 / n,
            "orch_hwm_kb": rush.orch_hwm_kb or None,
            "worker_hwm_kb": max(rush.worker_hwm_kb.values(), default=None),
            "task_complete": done,
            "log_files": len(files),
            "transitions_ms": bl.summary(transitions),
            "transitions_raw_ms": transitions}


def mib(kb):
    return "%.1f MiB" % (kb / 1024.0) if kb else "—"


def report(r):
    tr = r["transitions_ms"]
    print("%6d tasks: zerg %.2fs  xargs %.2fs  zerg/xargs %.2fx  "
          "overhead %.3f ms/task  zerg %.3f ms/task  orchestrator %s  "
          "worker %s  transitions %s ms"
          % (r["tasks"], r["zerg"], r["xargs"], r["zerg_per_xargs"],
             r["overhead_ms_per_task"], r["zerg_ms_per_task"],
             mib(r["orch_hwm_kb"]), mib(r["worker_hwm_kb"]),
             "%.0f (max %.0f of %d)" % (tr["median"], tr["max"], tr["n"])
             if tr else "—"), flush=True)


def options(p):
    p.add_argument("--sizes", help="task counts, comma-separated "
                   "(default 1000,10000,100000; --quick 1000,10000)")


def run(env):
    sizes = QUICK_SIZES if env.quick else SIZES
    if ARGS.sizes:
        sizes = [int(s) for s in ARGS.sizes.split(",")]
    env.save("config", {"sizes": sizes, "levels": dispatch.LEVELS,
                        "workers": dispatch.WORKERS, "sample_s": SAMPLE_S})
    done = {}
    for n in sizes:
        env.log("%d tasks: xargs, then zerg (timeout %d s)", n,
                rush_timeout(n))
        done[n] = measure(env, n)
        env.save("scale_%d" % n, done[n])
        report(done[n])
    base = done.get(BASE)
    for n in sorted(done):
        if base and n != BASE and base["overhead_ms_per_task"] > 0:
            print("overhead per task at %d / at %d: %.2fx"
                  % (n, BASE, done[n]["overhead_ms_per_task"] /
                     base["overhead_ms_per_task"]))


if __name__ == "__main__":
    env, ARGS = bl.parse_args("Cost per task and memory of zerg at 1,000 "
                              "to 100,000 no-op tasks, against xargs.",
                              options)
    bl.main(run, env)
