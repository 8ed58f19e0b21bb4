#!/usr/bin/python3
# kill.py - kill -> reassign latency.
#
# A rush of long tasks (`sleep 300`) keeps every worker busy; each
# repetition SIGKILLs one busy worker (its pid from its heartbeat; in
# container mode the container's init process, found through the runtime)
# and measures, from the wall clock read just before kill(2), the time to
# the task_reassigned event of its task in monitor.jsonl (ISO timestamps
# with milliseconds, so figures are +-1 ms).  Also recorded: the time to
# the worker_crash event and to the replacement worker's worker_ready.
# The next repetition waits until the replacement worker runs a task, and
# kills a worker of another slot (the respawn cap is per slot).
#
# Container mode runs only when `podman` works with tests/containers.conf
# and the image zerg-worker exists; otherwise it is reported as not
# measured, with the reason.
#
#   bench/kill.py build/zerg [--quick] [--out FILE]
import json
import os
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # leave no __pycache__ in the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

WORKERS = 4
IMAGE = "zerg-worker"
SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONTAINERS_CONF = os.path.join(SRC, "tests", "containers.conf")


def config(mode):
    workers = {"heartbeat_interval_seconds": 1,
               "heartbeat_stale_threshold": 10,
               "spawn_backoff_base_seconds": 0.1,
               "spawn_backoff_max_seconds": 0.5}
    text = bl.config_yaml(resilience={"reconcile_interval_seconds": 60},
                          workers=workers)
    if mode == "container":
        text += "container:\n  runtime: podman\n  image: %s\n" % IMAGE
    return text


def busy_worker(rush, skip):
    """(slot, task, pid) of a worker running a task, preferring the slots
    killed least often so far."""
    for slot in sorted(range(WORKERS), key=lambda s: skip.get(s, 0)):
        hb = rush.heartbeat(slot)
        if hb and hb.get("task_id") and hb.get("step") == "command":
            return slot, hb["task_id"], hb.get("pid")
    return None


def container_pid(rush, slot):
    """Host pid of the container that runs worker slot."""
    # The state document is .zerg/state/{feature}.json, beside the run
    # directory (rush.state_dir) that holds the heartbeats.
    path = os.path.join(os.path.dirname(rush.state_dir), bl.FEATURE + ".json")
    with open(path) as f:
        cid = json.load(f)["workers"][str(slot)]["container_id"]
    out = subprocess.check_output(
        ["podman", "inspect", "--format", "{{.State.Pid}}", cid],
        env=dict(os.environ, CONTAINERS_CONF=CONTAINERS_CONF), timeout=30)
    return int(out.strip())


def one_kill(rush, mode, killed):
    deadline = time.monotonic() + 60
    found = None
    while not found:
        found = busy_worker(rush, killed)
        if not found:
            if time.monotonic() > deadline or not rush.running():
                raise bl.BenchError("no busy worker to kill in %s"
                                    % rush.proj)
            time.sleep(0.02)
    slot, task, pid = found
    if mode == "container":
        pid = container_pid(rush, slot)
    elif bl.proc_ppid(pid) != rush.pid:
        raise bl.BenchError("heartbeat pid %s of worker %d is not a child "
                            "of the rush" % (pid, slot))
    rush.mark()  # only events after the kill count
    start = len(rush.all_events)
    t_kill = time.time()
    os.kill(pid, signal.SIGKILL)
    killed[slot] = killed.get(slot, 0) + 1
    ev = rush.wait_event(bl.named("task_reassigned", task=task), 30,
                         "task_reassigned for %s" % task)
    crash = next((e for e in rush.all_events[start:]
                  if bl.named("worker_crash", worker=slot)(e)), None)
    ready = rush.wait_event(bl.named("worker_ready", worker=slot), 60,
                            "worker_ready of the replacement of %d" % slot)
    rush.wait_event(bl.named("task_started", worker=slot), 60,
                    "task_started on the replacement of worker %d" % slot)
    ms = lambda e: (bl.iso_epoch(e["ts"]) - t_kill) * 1000.0  # noqa
    return {"slot": slot, "task": task,
            "reassign_ms": ms(ev),
            "crash_ms": ms(crash) if crash else None,
            "ready_ms": ms(ready)}


def measure(env, mode, reps):
    tasks = bl.level_tasks(2 * WORKERS, 1, "sleep 300")
    proj = bl.new_project(env, "kill-%s" % mode, tasks, config(mode))
    extra = {"CONTAINERS_CONF": CONTAINERS_CONF} if mode == "container" \
        else None
    rush = bl.Rush(env, proj, WORKERS, ["--mode", mode], extra_env=extra)
    rows, killed = [], {}
    try:
        for i in range(reps):
            row = one_kill(rush, mode, killed)
            env.log("%s kill %d (worker %d): reassigned after %.1f ms",
                    mode, i + 1, row["slot"], row["reassign_ms"])
            rows.append(row)
    finally:
        rush.stop()
    return {"mode": mode, "workers": WORKERS, "reps": len(rows), "raw": rows,
            "reassign_ms": bl.summary([r["reassign_ms"] for r in rows]),
            "crash_ms": bl.summary([r["crash_ms"] for r in rows]),
            "ready_ms": bl.summary([r["ready_ms"] for r in rows])}


def container_unavailable():
    """Why container mode cannot be measured here, or None."""
    env = dict(os.environ, CONTAINERS_CONF=CONTAINERS_CONF)
    try:
        r = subprocess.run(["podman", "info"], env=env, timeout=60,
                           capture_output=True, text=True)
        if r.returncode != 0:
            return "`podman info` fails: " + \
                (r.stderr.strip().splitlines() or ["?"])[-1]
        r = subprocess.run(["podman", "image", "exists", IMAGE], env=env,
                           timeout=60)
        if r.returncode != 0:
            return "the image %s does not exist (build it with " \
                   "`make image`)" % IMAGE
    except FileNotFoundError:
        return "podman is not installed"
    except subprocess.TimeoutExpired:
        return "podman does not answer within 60 s"
    return None


def run(env):
    reps = 2 if env.quick else 5
    res = measure(env, "subprocess", reps)
    env.save("kill_subprocess", res)
    print("kill -> task_reassigned (subprocess): median %.1f ms "
          "(%.1f-%.1f, %d kills)" % (res["reassign_ms"]["median"],
                                     res["reassign_ms"]["min"],
                                     res["reassign_ms"]["max"], reps))
    why = container_unavailable()
    if why:
        env.save("kill_container", {"mode": "container", "skipped": why})
        print("kill -> task_reassigned (container): not measured: " + why)
        return
    res = measure(env, "container", reps)
    env.save("kill_container", res)
    print("kill -> task_reassigned (container): median %.1f ms "
          "(%.1f-%.1f, %d kills)" % (res["reassign_ms"]["median"],
                                     res["reassign_ms"]["min"],
                                     res["reassign_ms"]["max"], reps))


if __name__ == "__main__":
    env, _ = bl.parse_args("Latency from SIGKILL of a busy worker to the "
                           "reassignment of its task.")
    bl.main(run, env)
