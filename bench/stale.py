#!/usr/bin/python3
# stale.py - SIGSTOP -> stale detection latency.
#
# Workers heartbeat every 0.2 s and are stale after 1.0 s without a change.
# Each repetition SIGSTOPs one busy worker (pid from its heartbeat) and
# reads the wall clock; the figure is the time to its heartbeat_stale event
# minus the threshold.  The last heartbeat the worker managed to write
# before it stopped was up to one interval earlier, so the figure lies in
# [-interval, +interval] when detection is prompt.  Also recorded: the
# detection lag after the threshold measured from that last heartbeat's own
# timestamp, which removes that phase.  The stopped worker is killed and
# replaced by the orchestrator; the next repetition waits for the
# replacement to run a task and stops a worker of another slot.
#
#   bench/stale.py build/zerg [--quick] [--out FILE]
import os
import signal
import sys
import time

sys.dont_write_bytecode = True  # leave no __pycache__ in the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

WORKERS = 4
INTERVAL_S = 0.2
THRESHOLD_S = 1.0
CONFIG = bl.config_yaml(
    resilience={"reconcile_interval_seconds": 60},
    workers={"heartbeat_interval_seconds": INTERVAL_S,
             "heartbeat_stale_threshold": THRESHOLD_S,
             "spawn_backoff_base_seconds": 0.1,
             "spawn_backoff_max_seconds": 0.5})


def busy_worker(rush, stopped):
    for slot in sorted(range(WORKERS), key=lambda s: stopped.get(s, 0)):
        hb = rush.heartbeat(slot)
        if hb and hb.get("task_id") and hb.get("step") == "command" and \
                bl.proc_ppid(hb.get("pid")) == rush.pid:
            return slot, hb["pid"]
    return None


def one_stop(rush, stopped):
    deadline = time.monotonic() + 60
    found = None
    while not found:
        found = busy_worker(rush, stopped)
        if not found:
            if time.monotonic() > deadline or not rush.running():
                raise bl.BenchError("no busy worker to stop in %s"
                                    % rush.proj)
            time.sleep(0.02)
    slot, pid = found
    rush.mark()
    t_stop = time.time()
    os.kill(pid, signal.SIGSTOP)
    stopped[slot] = stopped.get(slot, 0) + 1
    time.sleep(0.05)  # a rename under way when it stopped has landed
    hb = rush.heartbeat(slot)
    ev = rush.wait_event(bl.named("heartbeat_stale", worker=slot),
                         THRESHOLD_S * 10, "heartbeat_stale of worker %d"
                         % slot)
    t_stale = bl.iso_epoch(ev["ts"])
    rush.wait_event(bl.named("task_started", worker=slot), 60,
                    "task_started on the replacement of worker %d" % slot)
    return {"slot": slot,
            "after_threshold_ms": (t_stale - t_stop - THRESHOLD_S) * 1000.0,
            "after_last_beat_ms":
                (t_stale - bl.iso_epoch(hb["timestamp"]) - THRESHOLD_S) *
                1000.0 if hb and hb.get("pid") == pid else None}


def run(env):
    reps = 2 if env.quick else 5
    tasks = bl.level_tasks(2 * WORKERS, 1, "sleep 300")
    proj = bl.new_project(env, "stale", tasks, CONFIG)
    rush = bl.Rush(env, proj, WORKERS)
    rows, stopped = [], {}
    try:
        for i in range(reps):
            row = one_stop(rush, stopped)
            env.log("stop %d (worker %d): stale %.0f ms after the threshold",
                    i + 1, row["slot"], row["after_threshold_ms"])
            rows.append(row)
    finally:
        rush.stop()
    res = {"interval_s": INTERVAL_S, "threshold_s": THRESHOLD_S,
           "workers": WORKERS, "reps": len(rows), "raw": rows,
           "after_threshold_ms": bl.summary(
               [r["after_threshold_ms"] for r in rows]),
           "after_last_beat_ms": bl.summary(
               [r["after_last_beat_ms"] for r in rows])}
    env.save("stale", res)
    s = res["after_threshold_ms"]
    print("SIGSTOP -> heartbeat_stale minus threshold: median %.0f ms "
          "(%.0f..%.0f, %d stops; interval %.0f ms)"
          % (s["median"], s["min"], s["max"], s["n"], INTERVAL_S * 1000))


if __name__ == "__main__":
    env, _ = bl.parse_args("Latency from SIGSTOP of a worker to its "
                           "heartbeat_stale event.")
    bl.main(run, env)
