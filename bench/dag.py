#!/usr/bin/python3
# dag.py - makespan of rush.schedule levels against dag on real graphs.
#
# The 70 upstream task graphs of tests/fixtures/upstream-task-graphs/ (the
# graphs a planner produced for real features), each converted to a zerg
# graph that keeps its levels, dependencies and estimates (and, with
# --files, the files each task writes) and whose tasks `sleep`: estimate_minutes scaled to milliseconds (--scale-ms per
# minute, 20 by default; a task without an estimate gets its graph's mean
# estimate) times a seeded log-normal factor (sigma 0.7, mean 1), so real
# durations stray from the estimates the scheduler sees.  Every graph runs
# for real on 5 workers with --schedule levels and with --schedule dag
# (isolation none, 0.1 s heartbeats), with the same sampled durations.
#
# The figure is each makespan (first task_claimed .. last task complete,
# from the state document's timestamps) over the lower bound no schedule
# can beat: max(critical path, total work / workers), both computed from
# the sampled durations.  It reports, for each schedule, the median, p90
# and max of that ratio across graphs and the aggregate (sum of makespans
# over sum of bounds).  The bound knows nothing of files, which is why
# they are left out by default: with --files the runs also pay the file
# serialization (two tasks writing one path never run together), which no
# schedule can avoid and the bound does not see.  Every run pays the
# engine's own per-task overhead (assignment, start, result: a few ms).
#
#   bench/dag.py build/zerg [--quick] [--out FILE] [--scale-ms MS]
#                [--seed N] [--graphs N] [--files]
import glob
import json
import math
import os
import random
import statistics
import sys

sys.dont_write_bytecode = True  # leave no __pycache__ in the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
GRAPHS = os.path.join(HERE, "..", "tests", "fixtures", "upstream-task-graphs")
WORKERS = 5
SIGMA = 0.7
TARGET = 1.05  # dag's aggregate makespan / lower bound, at most
SCHEDULES = ("levels", "dag")
CONFIG = """resilience:
  reconcile_interval_seconds: 60
rush:
  isolation: none
workers:
  heartbeat_interval_seconds: 0.1
  heartbeat_stale_threshold: 5
  retry_attempts: 0
"""


def extra_args(p):
    p.add_argument("--scale-ms", type=float, default=20.0,
                   help="milliseconds of sleep per estimated minute (20)")
    p.add_argument("--seed", type=int, default=1,
                   help="seed of the sampled durations (1)")
    p.add_argument("--graphs", type=int, default=0,
                   help="only the first N graphs (quick: 12)")
    p.add_argument("--files", action="store_true",
                   help="keep the files tasks write (serializes them)")


# ---- the graphs -------------------------------------------------------------

def sample(upstream, rng, scale_ms):
    """Seconds each task sleeps: its estimate (or the graph's mean one)
    scaled, times a log-normal factor of mean 1."""
    given = [t["estimate_minutes"] for t in upstream
             if t.get("estimate_minutes")]
    default = statistics.mean(given) if given else 10.0
    secs = {}
    for t in upstream:
        est = t.get("estimate_minutes") or default
        factor = math.exp(rng.gauss(-SIGMA * SIGMA / 2, SIGMA))
        secs[t["id"]] = round(est * factor * scale_ms / 1000.0, 3)
    return secs


def convert(upstream, secs, with_files):
    """zerg tasks: the upstream structure, a sleep as the command.  Graphs
    numbered from 0 (they say so in a top-level "levels" this converter
    drops) move up by one, as zerg itself would move them."""
    shift = max(0, 1 - min(t["level"] for t in upstream))
    tasks = []
    for t in upstream:
        files = t.get("files") or {}
        task = {"id": t["id"], "title": t.get("title", t["id"]),
                "level": t["level"] + shift,
                "dependencies": t.get("dependencies") or [],
                "command": "sleep %.3f" % secs[t["id"]]}
        if with_files:
            task["files"] = {"create": files.get("create") or [],
                             "modify": files.get("modify") or []}
        if t.get("estimate_minutes"):
            task["estimate_minutes"] = t["estimate_minutes"]
        tasks.append(task)
    return tasks


def lower_bound(upstream, secs):
    """max(critical path, total work / workers) of the sampled seconds."""
    deps = {t["id"]: t.get("dependencies") or [] for t in upstream}
    chain = {}

    def longest(i):  # graphs are small (at most a few dozen tasks)
        if i not in chain:
            chain[i] = secs[i] + max([longest(d) for d in deps[i]] or [0])
        return chain[i]

    cp = max(longest(i) for i in deps)
    return max(cp, sum(secs.values()) / WORKERS), cp


# ---- one rush ---------------------------------------------------------------

def makespan(proj):
    """First claim to last completion, from the state document."""
    with open(os.path.join(proj, ".zerg", "state", bl.FEATURE + ".json")) as f:
        st = json.load(f)
    tasks = st["tasks"].values()
    bad = [t["status"] for t in tasks if t["status"] != "complete"]
    if bad:
        raise bl.BenchError("%s: %d task(s) not complete (%s)"
                            % (proj, len(bad), ", ".join(sorted(set(bad)))))
    first = min(bl.iso_epoch(t["claimed_at"]) for t in tasks)
    last = max(bl.iso_epoch(t["completed_at"]) for t in tasks)
    return last - first


def run_one(env, name, tasks, schedule, timeout):
    proj = bl.new_project(env, "%s-%s" % (name, schedule), tasks, CONFIG)
    rush = bl.Rush(env, proj, WORKERS,
                   args=("--schedule", schedule, "--no-progress"))
    rc = rush.wait(timeout)
    if rc != 0:
        raise bl.BenchError("rush --schedule %s of %s exited %d; see %s"
                            % (schedule, name, rc, rush.out_path))
    return makespan(proj)


# ---- figures ----------------------------------------------------------------

def pct(values, q):
    """The q-quantile (nearest rank) of a list."""
    v = sorted(values)
    return v[max(0, math.ceil(q * len(v)) - 1)]


def figures(rows, schedule):
    ratios = [r[schedule] / r["bound"] for r in rows]
    return {"median": statistics.median(ratios), "p90": pct(ratios, 0.9),
            "max": max(ratios),
            "aggregate": sum(r[schedule] for r in rows) /
            sum(r["bound"] for r in rows)}


def run(env):
    args = env.args
    files = sorted(glob.glob(os.path.join(GRAPHS, "*.json")))
    if not files:
        raise bl.BenchError("no graphs in %s" % GRAPHS)
    limit = args.graphs or (12 if env.quick else 0)
    if limit:
        files = files[:limit]
    env.save("config", {"workers": WORKERS, "sigma": SIGMA,
                        "scale_ms_per_minute": args.scale_ms,
                        "seed": args.seed, "graphs": len(files),
                        "files": args.files,
                        "target_aggregate": TARGET})
    rows = []
    for k, path in enumerate(files):
        name = os.path.basename(path)[:-5]
        with open(path) as f:
            upstream = json.load(f)["tasks"]
        secs = sample(upstream, random.Random(args.seed * 1000 + k),
                      args.scale_ms)
        tasks = convert(upstream, secs, args.files)
        bound, cp = lower_bound(upstream, secs)
        row = {"graph": name, "tasks": len(tasks), "bound": bound,
               "critical_path": cp, "work": sum(secs.values())}
        timeout = 60 + 10 * sum(secs.values())
        for schedule in SCHEDULES:
            row[schedule] = run_one(env, name, tasks, schedule, timeout)
        rows.append(row)
        env.log("%-36s %3d tasks  bound %6.2fs  levels %.3fx  dag %.3fx",
                name, len(tasks), bound, row["levels"] / bound,
                row["dag"] / bound)
        env.save("graphs", rows)
    result = {s: figures(rows, s) for s in SCHEDULES}
    result["dag_met"] = result["dag"]["aggregate"] <= TARGET
    env.save("makespan", result)
    for s in SCHEDULES:
        f = result[s]
        env.log("%-6s makespan / bound: median %.3f  p90 %.3f  max %.3f  "
                "aggregate %.3f", s, f["median"], f["p90"], f["max"],
                f["aggregate"])


if __name__ == "__main__":
    e, a = bl.parse_args("rush.schedule levels vs dag: makespan against "
                         "the lower bound on the upstream graphs",
                         extra_args)
    e.args = a
    bl.main(run, e)
