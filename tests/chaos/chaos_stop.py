"""chaos_stop.py - a stopped orchestrator is not a dead one (chaos.py --mode stop).

DESIGN §19: a worker leaves on its own only when its orchestrator is
really gone, not because it was slow or stopped for a while.  The rush
runs a graph of several levels with workers.lease_stale_seconds at 2 s
and heartbeat_stale_threshold under a second, in a git repository under
rush.isolation: worktree (--isolation none: in the project itself).
Meanwhile the harness SIGSTOPs the orchestrator and SIGCONTs it later:

  long    for longer than the lease (LEASE + 1.5..2.5 s): every worker sees
          the lease go stale and must find the orchestrator alive;
  short   0.3..1.5 s, past the heartbeat threshold (1.2 s here) now and
          then, which the orchestrator applies once it runs again;
  merge   (worktree) the instant the orchestrator runs git to merge a
          task's commit, for longer than the lease;
  merge_short  the same for 1.5..1.8 s: the stop lands in the middle of
          its intake of results and beats, past the heartbeat threshold;

Stops go on until each kind was made (merge_short twice, long ones
--min-stops times; a level or merge stop first while one is missing, as
only the rush's progress makes them possible) or --seconds pass (the
quota's own stops may take QUOTA_CAP more); meanwhile a task sleeps 0.2 to
0.8 s and the last level waits, afterwards none, so the rush ends soon
after the last stop.
  level   right after a level_complete line, while the next level is
          being set up, for longer than the lease.

Invariants:

  * the rush ends with exit 0 on its first start (nothing may need a
    --resume: the orchestrator was never killed);
  * every task is complete, uncharged (retry_count 0, crash_count 0);
  * no worker crashed, went stale, left as orphaned or on an error, no
    task was reassigned: no worker_crash, heartbeat_stale,
    task_reassigned, orchestrator_gone, worker_error event;
  * every stop longer than the lease with a worker alive has at least
    one orchestrator_slow event inside it: the workers saw the stale
    lease and waited;
  * no sanitizer report, no process left;
  * at least --min-stops stops longer than the lease were made.

Then the control: a rush of a second feature whose tasks sleep, its
orchestrator stopped until its workers say orchestrator_slow, then
killed (SIGKILL) while stopped: its workers and their tasks must leave
on their own (polled, up to CONTROL_CAP seconds, never a timing claim).
"""
import datetime
import json
import os
import signal
import subprocess
import time

import chaos_git
import chaos_lib as cl

LEASE = 2.0
HB_THRESHOLD = 1.2
# What a run must have made before it lets the rush finish.
QUOTA = {"level": 1, "short": 1, "merge": 1, "merge_short": 2}
# The git the orchestrator runs to merge a task's commit, as it applies
# the result inside its intake.
chaos_git.TARGETS["orch_merge"] = ("orch", {"merge-tree", "commit-tree",
                                            "update-ref"})
CONTROL_CAP = 60.0
# How long the stops a run still owes its quota may take past --seconds.
QUOTA_CAP = 60.0
HUNT_SECONDS = 3.0
# A worker that sees the stale lease logs at once; its event may be
# written a little after the SIGCONT when it was busy in a stage.
SLOW_SLACK = 1.0
# The longest a waiting worker goes between two looks at the lease.
WORKER_TICK = 0.6
# Stops shorter than the lease: no orchestrator_slow is due.
SHORT = ("short", "merge_short")
FORBIDDEN = ("worker_crash", "heartbeat_stale", "task_reassigned",
             "orchestrator_gone", "worker_error", "worker_retired")


def git(proj, *args):
    return chaos_git.git(proj, *args)


def pace_file(root):
    """Outside the project: 1 while stops are due (a task sleeps 0.2 to
    0.8 s, the last level waits), 0 once they are all made (the rest of
    the rush goes fast)."""
    return os.path.join(root, "pace")


def set_pace(root, value):
    """Replaces the pace file whole: tasks read it at any moment, and a
    rewrite in place lets one read it empty."""
    tmp = pace_file(root) + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % value)
    os.replace(tmp, pace_file(root))


def make_project(root, a, rng):
    set_pace(root, 1)
    proj = os.path.join(root, "chaos")
    os.makedirs(proj + "/.zerg")
    os.makedirs(proj + "/.gsd")
    with open(proj + "/.gsd/.current-feature", "w") as f:
        f.write("f\n")
    rush = ""
    if a.isolation == "worktree":
        git(proj, "init", "-q", "-b", "main")
        git(proj, "config", "user.name", "chaos")
        git(proj, "config", "user.email", "chaos@example.com")
        with open(proj + "/README", "w") as f:
            f.write("chaos, stopped\n")
        git(proj, "add", "README")
        git(proj, "commit", "-qm", "base")
        rush = "rush:\n  isolation: worktree\n  schedule: levels\n"
    cl.write_config(proj, "  lease_stale_seconds: %g\n" % LEASE, rush=rush)
    # The threshold the stops must pass, above what a loaded machine's
    # scheduling delays reach: a worker starved of the CPU for 0.8 s is
    # not what this mode is about.
    with open(proj + "/.zerg/config.yaml") as f:
        text = f.read().replace("heartbeat_stale_threshold: 0.8",
                                "heartbeat_stale_threshold: %g" % HB_THRESHOLD)
    with open(proj + "/.zerg/config.yaml", "w") as f:
        f.write(text)
    per = max(1, a.tasks // a.levels)
    pace = pace_file(root)
    # The last level waits for the stops to be over: the rush cannot end
    # before them, and ends soon after.
    gate = 'while [ "$(cat %s)" != 0 ]; do sleep 0.05; done; ' % pace
    tasks = []
    for lv in range(1, a.levels + 1):
        for i in range(per):
            tid = "S-L%d-%03d" % (lv, i)
            deps = ["S-L%d-%03d" % (lv - 1, i)] if lv > 1 else []
            # A task reads its dependency's output: a level that ran
            # before the one below merged would fail, never pass.
            check = "".join("test -f out/%s && " % d for d in deps)
            tasks.append({"id": tid, "level": lv, "dependencies": deps,
                          "files": {"create": ["out/" + tid],
                                    "read": ["out/" + d for d in deps]},
                          "command": "%s%ssleep $(( $(cat %s) * %d ))e-1 && "
                                     "mkdir -p out && echo %s > out/%s" %
                                     (check, gate if lv == a.levels else "",
                                      pace, rng.randint(2, 8), tid, tid)})
    cl.write_graph(proj, "f", tasks)
    # The control's feature: tasks that outlive any patience.
    cl.write_graph(proj, "k", [{"id": "K-L1-%03d" % i, "level": 1,
                                "command": "sleep 600"} for i in range(2)])
    return proj, len(tasks)


class StopRush(cl.Rush):
    """Nobody kills this orchestrator: any end but exit 0 fails."""

    def judge(self, rc):
        verdict = super().judge(rc)
        if verdict != "done":
            self.fail("exit %d although the orchestrator was only stopped" % rc)
        return verdict


def wall():
    return time.time()


def log_size(proj):
    try:
        return os.path.getsize(proj + "/.zerg/monitor.jsonl")
    except OSError:
        return 0


def hunt_level(proj, deadline):
    """Polls monitor.jsonl for a new level_complete line; True when one came."""
    off = log_size(proj)
    while time.monotonic() < deadline:
        with open(proj + "/.zerg/monitor.jsonl", "rb") as f:
            f.seek(off)
            new = f.read()
        cut = new.rfind(b"\n")
        if cut >= 0:
            if b'"level_complete"' in new[:cut]:
                return True
            off += cut + 1
        time.sleep(0.001)
    return False


def lease_seq(proj):
    try:
        with open(proj + "/.zerg/state/f/lease-f.json") as f:
            return json.load(f)["seq"]
    except (OSError, ValueError, KeyError):
        return None


def renewed(rush, proj, seq):
    """After a SIGCONT: waits until the lease moved on and every worker
    has had a tick to see it, so that the next stop is a new silence
    (orchestrator_slow is said once per silence)."""
    deadline = time.monotonic() + 10
    while rush.running() and time.monotonic() < deadline:
        if lease_seq(proj) != seq:
            time.sleep(WORKER_TICK)
            return
        time.sleep(0.02)


def stop_for(rush, seconds, kind, stops, proj):
    """SIGSTOP, sleep, SIGCONT; records the stop.  False if it ended first."""
    pid = rush.p.pid
    seq = lease_seq(proj)
    workers = [p for p in cl.worker_pids(proj, "f").values() if cl.alive(p)]
    t0 = wall()
    try:
        os.kill(pid, signal.SIGSTOP)
    except ProcessLookupError:
        return False
    time.sleep(seconds)
    os.kill(pid, signal.SIGCONT)
    stops.append({"kind": kind, "t0": t0, "t1": wall(), "secs": seconds,
                  "workers": len(workers)})
    renewed(rush, proj, seq)
    return True


def inject(kind, rush, rng, proj, stops):
    if not rush.running():
        return False
    long_s = LEASE + rng.uniform(1.5, 2.5)
    if kind == "short":
        return stop_for(rush, rng.uniform(0.3, 1.5), kind, stops, proj)
    if kind == "long":
        return stop_for(rush, long_s, kind, stops, proj)
    if kind == "level":
        if not hunt_level(proj, time.monotonic() + HUNT_SECONDS):
            return False
        return stop_for(rush, long_s, kind, stops, proj)
    found = chaos_git.hunt(rush.p.pid, "orch_merge",
                           time.monotonic() + HUNT_SECONDS)
    if not found:
        return False
    stops_before = len(stops)
    ok = stop_for(rush, long_s if kind == "merge" else
                  rng.uniform(HB_THRESHOLD + 0.3, HB_THRESHOLD + 0.6),
                  kind, stops, proj)
    if ok:
        stops[stops_before]["git"] = found[2]
    return ok


def ts_of(e):
    return datetime.datetime.strptime(e["ts"], "%Y-%m-%dT%H:%M:%S.%fZ") \
        .replace(tzinfo=datetime.timezone.utc).timestamp()


def check(proj, ntasks, stops, problems):
    state = cl.load_state(proj, "f")["tasks"]
    bad = {t: v["status"] for t, v in state.items() if v["status"] != "complete"}
    if bad or len(state) != ntasks:
        problems.append("%d of %d tasks not complete: %s" % (
            len(bad) + ntasks - len(state), ntasks, list(bad.items())[:5]))
    charged = {t: (v.get("retry_count"), v.get("crash_count"))
               for t, v in state.items()
               if v.get("retry_count") or v.get("crash_count")}
    if charged:
        problems.append("tasks charged (retry_count, crash_count) for a stop: %s"
                        % list(charged.items())[:5])
    events = [e for e in cl.monitor_events(proj) if e.get("feature") in (None, "f")]
    for e in events:
        if e["event"] in FORBIDDEN:
            problems.append("%s (worker %s, task %s): %s" % (
                e["event"], e.get("worker"), e.get("task"), e.get("msg", "")[:160]))
            if len(problems) > 20:
                return
    slow = [ts_of(e) for e in events if e["event"] == "orchestrator_slow"]
    for s in stops:
        if s["kind"] in SHORT or not s["workers"]:
            continue
        if not any(s["t0"] <= t <= s["t1"] + SLOW_SLACK for t in slow):
            problems.append("a %s stop of %.1f s (%d workers alive) saw no "
                            "orchestrator_slow" % (s["kind"], s["secs"], s["workers"]))
    return len(slow)


def control(a, root, proj, problems):
    """Stopped, then really killed: the workers must go by themselves."""
    rush = cl.Rush(a.zerg, proj, "k", 2, root)
    rush.start(False)
    deadline = time.monotonic() + 60
    while len([p for p in cl.project_procs(proj, "k")
               if cl.worker_feature(p) is None]) < 2:
        if time.monotonic() > deadline or not rush.running():
            problems.append("control: the tasks of feature k never ran")
            rush.kill9()
            return
        time.sleep(0.05)
    off = log_size(proj)
    os.kill(rush.p.pid, signal.SIGSTOP)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with open(proj + "/.zerg/monitor.jsonl", "rb") as f:
            f.seek(off)
            if b'"orchestrator_slow"' in f.read():
                break
        time.sleep(0.05)
    else:
        problems.append("control: no orchestrator_slow while stopped")
    before = cl.project_procs(proj, "k")
    if not any(cl.worker_feature(p) == "k" for p in before):
        problems.append("control: the workers of k left while their "
                        "orchestrator was only stopped")
    rush.kill9()
    deadline = time.monotonic() + CONTROL_CAP
    while time.monotonic() < deadline:
        left = [p for p in before if cl.alive(p)]
        if not left:
            return len(before)
        time.sleep(0.1)
    problems.append("control: %d processes of feature k still there %.0f s after "
                    "its orchestrator was killed: %s" % (
                        len(left), CONTROL_CAP, cl.describe(left)))
    cl.kill_all(left)
    return 0


def quota_met(a, inj, stops):
    if inj.missing():
        return False
    if sum(1 for s in stops if s["kind"] not in SHORT) < a.min_stops:
        return False
    return all(inj.done[k] >= n for k, n in QUOTA.items() if k in inj.weights)


def pick(inj):
    """A kind the quota still owes that only the rush's progress makes
    possible (a level change, a merge) comes first: once the last level
    waits at the gate there is none left to catch.  A stop of the
    orchestrator as such can be made at any time, so it waits its turn."""
    owed = [k for k in sorted(inj.weights) if k not in ("long", "short")
            and inj.done[k] < QUOTA.get(k, 1)]
    return inj.rng.choice(owed) if owed else inj.pick()


def drive(a, rng, root, rush, inj, stops, proj):
    """cl.drive, but until the quota is met rather than for a time: the
    stops take the time, not the tasks.  Then the tasks go fast.  The
    last level waits at the gate until then; a run that has not met its
    quota --seconds + QUOTA_CAP after the start fails on what it lacks
    (a loaded machine makes no stop shorter)."""
    rush.start(False)
    deadline = time.monotonic() + a.seconds + QUOTA_CAP
    done = False
    while not done and not quota_met(a, inj, stops) and \
            time.monotonic() < deadline:
        time.sleep(rng.uniform(0.2, 0.6))
        if not rush.running():
            done = rush.check_if_ended()
            continue
        kind = pick(inj)
        if inject(kind, rush, rng, proj, stops):
            inj.performed(kind)
    set_pace(root, 0)
    if not done:
        rush.finish(120)


def run(a, rng, root, report):
    proj, ntasks = make_project(root, a, rng)
    wt = a.isolation == "worktree"
    weights = {"long": 2, "short": 1, "level": 1, "merge": 2 if wt else 0,
               "merge_short": 6 if wt else 0}
    inj = cl.Injections(rng, weights)
    stops = []
    rush = StopRush(a.zerg, proj, "f", a.workers, root)
    drive(a, rng, root, rush, inj, stops, proj)
    cl.scan_worker_logs(proj)
    problems = []
    long_stops = sum(1 for s in stops if s["kind"] not in SHORT)
    if long_stops < a.min_stops:
        problems.append("only %d stops longer than the lease (at least %d "
                        "wanted: use more --tasks)" % (long_stops, a.min_stops))
    slow = check(proj, ntasks, stops, problems)
    gone = control(a, root, proj, problems)
    cl.scan_worker_logs(proj)
    hits = sorted(s["git"] for s in stops if "git" in s)
    return report(a, root, proj, inj, rush, problems,
                  "stop, %d tasks, %d workers, isolation %s; %d stops "
                  "(%.0f s stopped), %d orchestrator_slow, merges stopped in %s; "
                  "control: %s processes left by themselves after the kill" % (
                      ntasks, a.workers, a.isolation, len(stops),
                      sum(s["secs"] for s in stops), slow or 0, hits, gone))
