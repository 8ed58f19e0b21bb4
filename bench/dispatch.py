#!/usr/bin/python3
# dispatch.py - dispatch overhead and level transition latency.
#
# N no-op tasks (`command: "true"`) in 4 levels on 8 workers, against the
# same N items through `xargs -P8 -n1 sh -c true`, through `make -j8` of a
# generated Makefile whose targets run `sh -c true` in 4 levels (each
# level-k target depends on a barrier target that depends on all of level
# k-1), and, when `ninja` is installed, through `ninja -j8` of the same
# graph as a build.ninja (edges whose outputs are never made, so all run;
# phony barriers between levels).  Each repetition runs them back to back,
# so every ratio compares runs made under the same conditions.
#
# From the same rushes' monitor.jsonl: the level transition latency (last
# task_complete of level N -> first task_claimed of level N+1), the
# thorough reconciliations done at each transition, and the memory high
# water mark of the orchestrator and its workers (sampled every 0.25 s).
#
# Diagnostic: the smallest size is also run with the project on tmpfs
# (/dev/shm), where fsync costs nothing, to separate the engine's own
# overhead from the durable writes of results and state.
#
#   bench/dispatch.py build/zerg [--quick] [--out FILE]
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # leave no __pycache__ in the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

LEVELS = 4
WORKERS = 8
CONFIG = bl.config_yaml(
    resilience={"reconcile_interval_seconds": 60},
    workers={"heartbeat_interval_seconds": 1})


def write_makefile(path, n):
    """Phony targets in LEVELS levels; barrier Lk depends on level k."""
    tasks = bl.level_tasks(n, LEVELS, "true")
    by_level = {}
    for t in tasks:
        by_level.setdefault(t["level"], []).append(t["id"])
    out = [".PHONY: all " + " ".join("L%d" % k for k in by_level)]
    out.append("all: L%d" % LEVELS)
    for k, ids in sorted(by_level.items()):
        out.append(".PHONY: " + " ".join(ids))
        out.append("L%d: %s" % (k, " ".join(ids)))
        dep = " L%d" % (k - 1) if k > 1 else ""
        for tid in ids:
            out.append("%s:%s\n\t@sh -c true" % (tid, dep))
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def write_ninja(path, n):
    """The Makefile's graph for ninja: one edge per task running
    `sh -c true` (its output is never made, so every edge runs), a phony
    barrier per level."""
    tasks = bl.level_tasks(n, LEVELS, "true")
    by_level = {}
    for t in tasks:
        by_level.setdefault(t["level"], []).append(t["id"])
    # ninja runs every command through /bin/sh -c, so `true` here is the
    # one `sh -c true` of the other baselines.
    out = ["rule run", "  command = true", ""]
    for k, ids in sorted(by_level.items()):
        dep = " | L%d" % (k - 1) if k > 1 else ""
        out += ["build %s: run%s" % (tid, dep) for tid in ids]
        out.append("build L%d: phony %s" % (k, " ".join(ids)))
    out.append("default L%d" % LEVELS)
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def run_ninja(build_file):
    """ninja -j8 in a fresh build directory (no .ninja_log from before)."""
    d = build_file + ".d"
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return bl.run_timed(["ninja", "-C", d, "-f", os.path.abspath(build_file),
                         "-j%d" % WORKERS], timeout=600,
                        stdout=subprocess.DEVNULL)


def run_xargs(n):
    items = "".join("%d\n" % i for i in range(n)).encode()
    return bl.run_timed(["xargs", "-P%d" % WORKERS, "-n1", "sh", "-c",
                         "true"], timeout=600, input=items)


def run_make(makefile):
    return bl.run_timed(["make", "-s", "-rR", "-j%d" % WORKERS, "-f",
                         makefile, "all"], timeout=600)


def level_transitions(events):
    """Milliseconds from the last task_complete of each level to the first
    task_claimed of the next one."""
    level_of, last_done, first_claim = {}, {}, {}
    for ev in events:
        name, task = ev.get("event"), ev.get("task")
        if name == "task_claimed":
            lvl = ev["data"]["level"]
            level_of[task] = lvl
            t = bl.iso_epoch(ev["ts"])
            first_claim[lvl] = min(first_claim.get(lvl, t), t)
        elif name == "task_complete" and task in level_of:
            lvl = level_of[task]
            last_done[lvl] = max(last_done.get(lvl, 0), bl.iso_epoch(ev["ts"]))
    return [(first_claim[k + 1] - last_done[k]) * 1000.0
            for k in sorted(last_done) if k + 1 in first_claim]


def thorough_reconciles(events):
    return [ev["data"]["duration_ms"] for ev in events
            if ev.get("event") == "state_reconcile_complete" and
            ev.get("data", {}).get("check") == "thorough"]


def run_zerg(env, n, rep, root=None, tag="disk"):
    proj = bl.new_project(env, "dispatch-%s-%d-%d" % (tag, n, rep),
                          bl.level_tasks(n, LEVELS, "true"), CONFIG, root)
    rush = bl.Rush(env, proj, WORKERS, sample_s=0.25)
    rc = rush.wait(timeout=120 + n // 10)
    if rc != 0:
        raise bl.BenchError("rush of %d tasks exited %d; see %s"
                            % (n, rc, rush.out_path))
    rush.events()
    done = [e for e in rush.all_events if e.get("event") == "task_complete"]
    if len(done) != n:
        raise bl.BenchError("%d task_complete events, expected %d"
                            % (len(done), n))
    return rush


def measure_size(env, n, runs, tmpfs):
    makefile = os.path.join(env.root, "Makefile.%d" % n)
    write_makefile(makefile, n)
    ninja_file = os.path.join(env.root, "build.%d.ninja" % n)
    have_ninja = shutil.which("ninja") is not None
    if have_ninja:
        write_ninja(ninja_file, n)
    rows = []
    for rep in range(runs):
        row = {"xargs": run_xargs(n), "make": run_make(makefile)}
        if have_ninja:
            row["ninja"] = run_ninja(ninja_file)
        row["replace_ms"] = bl.fsync_ms(env.root, 10)[1]
        rush = run_zerg(env, n, rep)
        row["zerg"] = rush.wall
        row["transitions_ms"] = level_transitions(rush.all_events)
        row["thorough_ms"] = thorough_reconciles(rush.all_events)
        row["orch_hwm_kb"] = rush.orch_hwm_kb
        row["worker_hwm_kb"] = max(rush.worker_hwm_kb.values(), default=None)
        if tmpfs:
            row["zerg_tmpfs"] = run_zerg(env, n, rep, tmpfs, "tmpfs").wall
        env.log("%d tasks, run %d: zerg %.2fs%s, xargs %.2fs, make %.2fs%s, "
                "durable replace %.1f ms, orchestrator peak %s kB", n,
                rep + 1, row["zerg"],
                " (tmpfs %.2fs)" % row["zerg_tmpfs"] if tmpfs else "",
                row["xargs"], row["make"],
                ", ninja %.2fs" % row["ninja"] if have_ninja else "",
                row["replace_ms"], row["orch_hwm_kb"])
        rows.append(row)
    return rows


def summarize(n, rows):
    col = lambda k: [r[k] for r in rows if r.get(k) is not None]  # noqa
    flat = lambda k: [v for r in rows for v in r[k]]  # noqa
    res = {"tasks": n, "levels": LEVELS, "workers": WORKERS,
           "runs": len(rows), "raw": rows}
    for k in ("zerg", "xargs", "make", "zerg_tmpfs", "orch_hwm_kb",
              "worker_hwm_kb", "replace_ms"):
        res[k] = bl.summary(col(k))
    res["zerg_per_xargs"] = bl.summary([r["zerg"] / r["xargs"] for r in rows])
    res["zerg_per_make"] = bl.summary([r["zerg"] / r["make"] for r in rows])
    if "ninja" in rows[0]:
        res["ninja"] = bl.summary(col("ninja"))
        res["zerg_per_ninja"] = bl.summary(
            [r["zerg"] / r["ninja"] for r in rows])
    if "zerg_tmpfs" in rows[0]:
        res["tmpfs_per_xargs"] = bl.summary(
            [r["zerg_tmpfs"] / r["xargs"] for r in rows])
    res["overhead_ms_per_task"] = bl.summary(
        [(r["zerg"] - r["xargs"]) * 1000.0 / n for r in rows])
    res["transitions_ms"] = bl.summary(flat("transitions_ms"))
    res["thorough_ms"] = bl.summary(flat("thorough_ms"))
    return res


def tmpfs_root(env):
    """A scratch directory on tmpfs, or None."""
    try:
        if os.statvfs("/dev/shm").f_bavail and \
                b"tmpfs" in subprocess.check_output(
                    ["stat", "-f", "-c", "%T", "/dev/shm"]):
            d = os.path.join("/dev/shm", os.path.basename(env.root))
            os.makedirs(d, exist_ok=True)
            return d
    except (OSError, subprocess.CalledProcessError):
        pass
    return None


def options(p):
    p.add_argument("--sizes", help="task counts, comma-separated "
                   "(default 2000,10000; --quick 2000)")
    p.add_argument("--runs", type=int, help="repetitions (default 3; "
                   "--quick 1)")


def run(env):
    sizes = [2000] if env.quick else [2000, 10000]
    if ARGS.sizes:
        sizes = [int(s) for s in ARGS.sizes.split(",")]
    runs = ARGS.runs or (1 if env.quick else 3)
    shm = tmpfs_root(env)
    try:
        for n in sizes:
            res = summarize(n, measure_size(env, n, runs,
                                            shm if n == sizes[0] else None))
            env.save("dispatch_%d" % n, res)
            print("%5d tasks: zerg %.2fs  xargs %.2fs  make %.2fs  "
                  "zerg/xargs %.2fx  zerg/make %.2fx%s  transitions %.0f ms"
                  % (n, res["zerg"]["median"], res["xargs"]["median"],
                     res["make"]["median"], res["zerg_per_xargs"]["median"],
                     res["zerg_per_make"]["median"],
                     "  zerg/ninja %.2fx" % res["zerg_per_ninja"]["median"]
                     if "zerg_per_ninja" in res else "",
                     res["transitions_ms"]["median"]))
    finally:
        if shm:
            bl.sweep(shm)
            shutil.rmtree(shm, ignore_errors=True)


if __name__ == "__main__":
    env, ARGS = bl.parse_args("Dispatch overhead of zerg against xargs "
                              "and make; level transition latency.",
                              options)
    bl.main(run, env)
