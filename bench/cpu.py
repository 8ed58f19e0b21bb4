#!/usr/bin/python3
# cpu.py - CPU cost of heartbeats and of the idle orchestrator.
#
# Idle workers: 8 workers, one running a level-1 task `sleep 600`, the
# other seven idle (level 2 waits for it).  Their CPU time is read at the
# start and the end of a 10 s window (--quick: 3 s), once with the default
# heartbeat interval (30 s) and once with 1 s.
#
# Idle orchestrator: 8 workers each running `sleep 20`; the rush process's
# CPU time over a 10 s window once all eight have started, with the
# default configuration and with a 1 s heartbeat interval.
#
# CPU time is utime+stime from /proc/PID/stat (clock ticks, 10 ms each, so
# summed over the seven idle workers) and, as a cross-check at nanosecond
# resolution, the on-CPU time from /proc/PID/schedstat.
#
#   bench/cpu.py build/zerg [--quick] [--out FILE]
import os
import sys
import time

sys.dont_write_bytecode = True  # leave no __pycache__ in the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

WORKERS = 8


def config(hb_s):
    workers = {"heartbeat_interval_seconds": hb_s} if hb_s else {}
    return bl.config_yaml(workers=workers) if workers else "{}\n"


def cpu_over(pids, window_s):
    """{pid: (tick_ns, sched_ns)} spent during window_s, and the window's
    exact length; processes that ended meanwhile are left out."""
    t0, a = time.monotonic(), {p: bl.proc_cpu(p) for p in pids}
    time.sleep(window_s)
    t1, b = time.monotonic(), {p: bl.proc_cpu(p) for p in pids}
    out = {p: (b[p][0] - a[p][0], b[p][1] - a[p][1])
           for p in pids if a[p] and b[p]}
    return out, t1 - t0


def percent(used, wall_s):
    """CPU percentages: aggregate over all, and per-process summary."""
    n = len(used)
    if not n:
        raise bl.BenchError("no process to measure")
    res = {"processes": n, "window_s": wall_s}
    for i, name in ((0, "ticks"), (1, "sched")):
        res[name + "_pct"] = 100.0 * sum(u[i] for u in used.values()) / \
            (n * wall_s * 1e9)
        res[name + "_pct_each"] = bl.summary(
            [100.0 * u[i] / (wall_s * 1e9) for u in used.values()])
    return res


def idle_workers(env, hb_s, window_s):
    tasks = [{"id": "T-L1-00000", "title": "busy", "level": 1,
              "command": "sleep 600"}]
    tasks += [{"id": "T-L2-%05d" % i, "title": "later", "level": 2,
               "command": "true"} for i in range(WORKERS)]
    proj = bl.new_project(env, "cpu-workers-%s" % (hb_s or "default"),
                          tasks, config(hb_s))
    rush = bl.Rush(env, proj, WORKERS)
    try:
        # Workers may become ready before or after the task starts.
        rush.wait_count(bl.named("worker_ready"), WORKERS, 60,
                        "worker_ready events")
        rush.wait_count(bl.named("task_started"), 1, 60, "task_started")
        time.sleep(1.0)  # let start-up work settle
        pids = []
        for slot in range(WORKERS):
            hb = rush.heartbeat(slot)
            if hb and not hb.get("task_id") and \
                    bl.proc_ppid(hb.get("pid")) == rush.pid:
                pids.append(hb["pid"])
        used, wall = cpu_over(pids, window_s)
    finally:
        rush.stop()
    res = percent(used, wall)
    res["heartbeat_interval_s"] = hb_s or 30
    return res


def idle_orchestrator(env, hb_s, window_s):
    tasks = bl.level_tasks(WORKERS, 1, "sleep 20")
    proj = bl.new_project(env, "cpu-orch-%s" % (hb_s or "default"), tasks,
                          config(hb_s))
    rush = bl.Rush(env, proj, WORKERS)
    try:
        for _ in range(WORKERS):
            rush.wait_event(bl.named("task_started"), 60,
                            "%d task_started events" % WORKERS)
        time.sleep(0.5)
        used, wall = cpu_over([rush.pid], window_s)
        if not rush.running():
            raise bl.BenchError("the rush ended during the window")
    finally:
        rush.stop()
    res = percent(used, wall)
    res["heartbeat_interval_s"] = hb_s or 30
    return res


def run(env):
    window = 3.0 if env.quick else 10.0
    res = {}
    for hb in (None, 1):
        key = "hb_%s" % (hb or "default")
        res["workers_" + key] = idle_workers(env, hb, window)
        res["orch_" + key] = idle_orchestrator(env, hb, window)
        w, o = res["workers_" + key], res["orch_" + key]
        print("heartbeat %2ss: idle worker %.4f %% (schedstat %.4f %%), "
              "orchestrator with 8 busy workers %.4f %% (schedstat %.4f %%)"
              % (w["heartbeat_interval_s"], w["ticks_pct"], w["sched_pct"],
                 o["ticks_pct"], o["sched_pct"]))
    env.save("cpu", res)


if __name__ == "__main__":
    env, _ = bl.parse_args("CPU time of idle workers and of the "
                           "orchestrator while workers are busy.")
    bl.main(run, env)
