#!/usr/bin/python3
# stream.py - orchestrator CPU while 100 agents stream their events.
#
# 100 workers, each running one agent task under executor.kind: claude
# whose CLI is a stand-in replaying Claude Code's recorded stream
# (tests/fixtures/claude/success.jsonl, its assistant and stream events
# repeated) at a realistic rate: one event every 0.1 s per agent, 1,000
# events a second in all, with partial messages as
# --include-partial-messages prints them.  The workers read the streams
# (progress, ledger) and beat with their spend; the orchestrator takes the
# beats and the event lines.  Measured: the rush process's CPU time over a
# 10 s window (--quick: 4 s, 40 workers) once every task has started, as a
# percentage of one core (utime+stime from /proc/PID/stat, and the on-CPU
# time from /proc/PID/schedstat as a cross-check).  Target: < 1 %.
#
#   bench/stream.py build/zerg [--quick] [--out FILE]
import json
import os
import sys
import time

sys.dont_write_bytecode = True  # leave no __pycache__ in the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "..", "tests", "fixtures", "claude",
                       "success.jsonl")
RATE_S = 0.1

STANDIN = r'''#!/usr/bin/python3
import json, sys, time
if sys.argv[1:2] == ["--version"]:
    print("2.1.332 (Claude Code)"); sys.exit(0)
sys.stdin.read()
lines = [l for l in open(%(fixture)r) if l.strip()]
head = [l for l in lines if '"type":"system"' in l][:1]
body = [l for l in lines if '"type":"assistant"' in l or
        '"type":"stream_event"' in l or '"type":"user"' in l]
tail = [l for l in lines if '"type":"result"' in l]
if not body:
    body = [json.dumps({"type": "stream_event", "event": {"type": "ping"}}) + "\n"]
out = sys.stdout
for l in head:
    out.write(l)
out.flush()
end = time.monotonic() + %(seconds)d
i = 0
while time.monotonic() < end:
    out.write(body[i %% len(body)])
    out.flush()
    i += 1
    time.sleep(%(rate)r)
for l in tail:
    out.write(l)
out.flush()
'''


def run(env):
    workers = 40 if env.quick else 100
    window = 4.0 if env.quick else 10.0
    seconds = int(window + 30)
    root = env.root
    standin = os.path.join(root, "claude-standin")
    with open(standin, "w") as f:
        f.write(STANDIN % {"fixture": os.path.abspath(FIXTURE),
                           "seconds": seconds, "rate": RATE_S})
    os.chmod(standin, 0o755)
    tasks = [{"id": "A-L1-%05d" % i, "title": "stream %d" % i, "level": 1}
             for i in range(workers)]
    cfg = ("executor:\n  kind: claude\n  claude: %s\n"
           "workers:\n  spawn_ready_timeout_seconds: 60\n"
           "  task_stale_timeout_seconds: 600\n" % standin)
    proj = bl.new_project(env, "stream-%d" % workers, tasks, cfg)
    rush = bl.Rush(env, proj, workers)
    try:
        rush.wait_count(bl.named("task_started"), workers, 120,
                        "%d task_started events" % workers)
        time.sleep(2.0)  # the stand-ins past their start-up
        t0, a = time.monotonic(), bl.proc_cpu(rush.pid)
        time.sleep(window)
        t1, b = time.monotonic(), bl.proc_cpu(rush.pid)
        if not rush.running():
            raise bl.BenchError("the rush ended during the window")
    finally:
        rush.stop()
    wall = t1 - t0
    res = {"workers": workers, "window_s": wall, "event_interval_s": RATE_S,
           "events_per_s": workers / RATE_S,
           "ticks_pct": 100.0 * (b[0] - a[0]) / (wall * 1e9),
           "sched_pct": 100.0 * (b[1] - a[1]) / (wall * 1e9)}
    print("%d agents streaming %d events/s: orchestrator %.3f %% of a core "
          "(schedstat %.3f %%)" % (workers, res["events_per_s"],
                                   res["ticks_pct"], res["sched_pct"]))
    env.save("stream", res)


if __name__ == "__main__":
    env, _ = bl.parse_args("Orchestrator CPU while 100 agents stream "
                           "events.")
    bl.main(run, env)
