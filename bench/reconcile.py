#!/usr/bin/python3
# reconcile.py - cost of state reconciliation on a large graph.
#
# A rush of 10,000 no-op tasks in 4 levels on 8 workers with
# resilience.reconcile_interval_seconds 0.2 and logging.level debug (light
# checks are logged at debug).  Every state_reconcile_complete event carries
# data.check (light | thorough), data.duration_ms and data.tasks_checked;
# light checks run on the interval, thorough ones before each level
# transition.  The rush runs to its end or for --max-seconds (60; --quick:
# 2,000 tasks for 8 s), whichever comes first: the figures are per check,
# and a few hundred light checks are plenty.
#
#   bench/reconcile.py build/zerg [--quick] [--out FILE] [--max-seconds S]
import os
import sys
import time

sys.dont_write_bytecode = True  # leave no __pycache__ in the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

WORKERS = 8
LEVELS = 4
INTERVAL_S = 0.2
CONFIG = bl.config_yaml(
    resilience={"reconcile_interval_seconds": INTERVAL_S},
    workers={"heartbeat_interval_seconds": 1},
    logging={"level": "debug"})


def options(p):
    p.add_argument("--max-seconds", type=float,
                   help="stop the rush after this long (default 60; "
                   "--quick 8)")
    p.add_argument("--tasks", type=int,
                   help="task count (default 10000; --quick 2000)")


def run(env):
    n = ARGS.tasks or (2000 if env.quick else 10000)
    limit = ARGS.max_seconds or (8 if env.quick else 60)
    proj = bl.new_project(env, "reconcile", bl.level_tasks(n, LEVELS, "true"),
                          CONFIG)
    rush = bl.Rush(env, proj, WORKERS)
    deadline = time.monotonic() + limit
    while rush.running() and time.monotonic() < deadline:
        time.sleep(0.1)
    finished = not rush.running()
    ran_s = time.monotonic() - rush.t0
    rush.stop()
    env.log("rush ran %.1f s, stopped %.1f s later", ran_s,
            time.monotonic() - rush.t0 - ran_s)
    rush.events()
    checks = {"light": [], "thorough": []}
    fixes = 0
    for ev in rush.all_events:
        if ev.get("event") == "state_reconcile_complete":
            d = ev.get("data", {})
            checks.setdefault(d.get("check"), []).append(d)
            fixes += d.get("fixes", 0)
    if not checks["light"]:
        raise bl.BenchError("no light state_reconcile_complete events in %s"
                            % rush.jsonl)
    res = {"tasks": n, "workers": WORKERS, "interval_s": INTERVAL_S,
           "ran_s": ran_s, "finished": finished,
           "fixes": fixes,
           "completed": sum(1 for e in rush.all_events
                            if e.get("event") == "task_complete")}
    for kind, ds in checks.items():
        res[kind + "_ms"] = bl.summary([d["duration_ms"] for d in ds])
        res[kind + "_tasks_checked"] = bl.summary(
            [d.get("tasks_checked") for d in ds])
    env.save("reconcile", res)
    for kind in ("light", "thorough"):
        s = res[kind + "_ms"]
        if s:
            print("%s reconciliation at %d tasks: median %.2f ms "
                  "(%.2f-%.2f, %d checks)" % (kind, n, s["median"], s["min"],
                                              s["max"], s["n"]))


if __name__ == "__main__":
    env, ARGS = bl.parse_args("Duration of light and thorough state "
                              "reconciliation on a large graph.", options)
    bl.main(run, env)
