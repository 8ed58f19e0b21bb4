"""chaos_two.py - two features rushed at once in one project (chaos.py
--mode two-features).

Features f and g, with the same task ids (--ids same) or different ones,
each with its own orchestrator.  While both run, workers of either are
SIGKILLed, each orchestrator is killed with kill -9 and resumed, and once
`zerg stop --force --feature f` is run: it must end f's rush and f's
processes only (g's orchestrator and workers live on); f is then resumed.

Every task appends "FEATURE TASK EPOCH ATTEMPT" (from its environment) to
a ledger of its feature when it has done its work.  That ledger is the
ground truth the checks hold zerg to:

  * each feature's tasks are all complete in its own state, uncharged;
  * each task has exactly one completion in monitor.jsonl among the
    events of its feature (an event is given to a feature by its
    "feature" field when it has one, else by its epoch in the ledgers);
  * the (epoch, attempt) a state records for a task is a run of that task
    by a worker of that same feature (never a result of the other one);
  * no epoch serves both features, no completion is of nobody;
  * nothing of the project is left running.
"""
import collections
import os
import subprocess
import time

import chaos_lib as cl

FEATURES = ("f", "g")
KILLS_MAX = 2


def command(feature, tid, rng):
    return ('sleep 0.0%d; echo "$ZERG_FEATURE $ZERG_TASK_ID $ZERG_EPOCH '
            '$ZERG_ATTEMPT" >> ledger-%s; echo %s %s > out-%s-%s' %
            (rng.randint(1, 9), feature, feature, tid, feature, tid))


def make_project(root, a, rng):
    proj = os.path.join(root, "chaos")
    os.makedirs(proj + "/.zerg")
    cl.write_config(proj)
    ids = {}
    per = max(1, a.tasks // a.levels)
    for feat in FEATURES:
        prefix = "C" if a.ids == "same" else feat.upper()
        tasks = []
        for l in range(1, a.levels + 1):
            for i in range(per):
                tid = "%s-L%d-%03d" % (prefix, l, i)
                deps = ["%s-L%d-%03d" % (prefix, l - 1, i)] if l > 1 else []
                tasks.append({"id": tid, "level": l, "dependencies": deps,
                              "command": command(feat, tid, rng)})
        cl.write_graph(proj, feat, tasks)
        ids[feat] = {t["id"] for t in tasks}
    return proj, ids


def unfinished_share(proj, feature):
    try:
        tasks = cl.load_state(proj, feature)["tasks"]
    except (OSError, ValueError, KeyError):
        return 0.0
    return sum(v["status"] != "complete" for v in tasks.values()) / max(1, len(tasks))


def stop_force_f(a, proj, rushes, problems):
    """`zerg stop --force --feature f` while g has work left; True if done."""
    f, g = rushes["f"], rushes["g"]
    if not (f.holds_lock() and g.running()) or unfinished_share(proj, "g") < 0.25:
        return False
    g_workers = [p for p in cl.worker_pids(proj, "g").values()
                 if cl.alive(p) and cl.worker_feature(p) == "g"]
    f.mark_killed_externally()
    r = subprocess.run([a.zerg, "-C", proj, "--feature", "f", "stop", "--force"],
                       capture_output=True, text=True, timeout=30)
    rep = cl.sanitizer_report(r.stderr)
    if rep:
        raise cl.ChaosFailure("zerg stop --force: sanitizer report\n" + rep)
    if r.returncode != 0:
        raise cl.ChaosFailure("zerg stop --force --feature f exited %d: %s%s"
                              % (r.returncode, r.stdout, r.stderr))
    try:
        rc = f.p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        raise cl.ChaosFailure("f's rush still runs 10 s after stop --force")
    deadline = time.monotonic() + 3
    while cl.project_procs(proj, "f") and time.monotonic() < deadline:
        time.sleep(0.1)
    left = cl.project_procs(proj, "f")
    if left:
        problems.append("stop --force --feature f left f's processes: %s" %
                        cl.describe(left))
    if not g.running() and g.p.returncode != 0:
        problems.append("stop --force --feature f ended g's rush (exit %d)" %
                        g.p.returncode)
    gone = [p for p in g_workers if not cl.alive(p)]
    if gone and g.running():
        problems.append("stop --force --feature f killed g's workers %s" % gone)
    if f.judge(rc) != "resume":
        problems.append("f's rush ended by stop --force with exit %d" % rc)
    f.start(True)
    return True


def inject(kind, a, proj, rng, rushes, problems):
    feat = kind[-1]
    if kind.startswith("kill_"):
        return cl.kill_worker(proj, feat, rng)
    if kind.startswith("orch_kill_"):
        if not rushes[feat].running():
            return False
        rushes[feat].kill9()
        time.sleep(0.2)
        rushes[feat].start(True)
        return True
    return stop_force_f(a, proj, rushes, problems)


def run(a, rng, root, report):
    proj, ids = make_project(root, a, rng)
    rushes = {f: cl.Rush(a.zerg, proj, f, a.workers, root) for f in FEATURES}
    for r in rushes.values():
        r.start(False)
    inj = cl.Injections(rng, {"kill_f": 4, "kill_g": 4, "orch_kill_f": 1,
                              "orch_kill_g": 1, "stop_force_f": 1},
                         {"orch_kill_f": KILLS_MAX, "orch_kill_g": KILLS_MAX,
                          "stop_force_f": 1})
    problems = []
    done = set()
    deadline = time.monotonic() + a.seconds
    while time.monotonic() < deadline and len(done) < len(FEATURES):
        time.sleep(rng.uniform(0.05, 0.3))
        for f, r in rushes.items():
            if f not in done and not r.running() and r.check_if_ended():
                done.add(f)
        kind = inj.pick()
        if kind[-1] in done or not inject(kind, a, proj, rng, rushes, problems):
            continue
        inj.performed(kind)
    for f, r in rushes.items():
        if f not in done:
            r.finish(180)
    cl.scan_worker_logs(proj)
    problems += check(proj, ids)
    return report(a, root, proj, inj, list(rushes.values()), problems,
                  "two features (%s ids), %d tasks each, %d workers each" %
                  (a.ids, len(ids["f"]), a.workers))


def read_ledgers(proj, problems):
    """feature -> set of (task, epoch, attempt); epoch -> feature."""
    runs, owner = {}, {}
    for feat in FEATURES:
        runs[feat] = set()
        try:
            lines = open("%s/ledger-%s" % (proj, feat)).read().split("\n")
        except OSError:
            lines = []
        for line in filter(None, lines):
            parts = line.split()
            if len(parts) != 4 or parts[0] != feat:
                problems.append("ledger-%s has a run of another feature: %r"
                                % (feat, line))
                continue
            epoch = int(parts[2])
            runs[feat].add((parts[1], epoch, int(parts[3])))
            if owner.setdefault(epoch, feat) != feat:
                problems.append("epoch %d served both features" % epoch)
    return runs, owner


def completions(proj, owner, problems):
    """feature -> task -> set of (epoch, attempt) from task_complete."""
    out = {f: collections.defaultdict(set) for f in FEATURES}
    for e in cl.monitor_events(proj):
        if e["event"] != "task_complete":
            continue
        epoch, attempt = e["data"].get("epoch"), e["data"].get("attempt")
        feat = e.get("feature") or owner.get(epoch)
        if feat not in out:
            problems.append("a completion of nobody: %s" % e)
            continue
        if e.get("feature") and owner.get(epoch) not in (None, feat):
            problems.append("event says %s, epoch %d ran %s" %
                            (feat, epoch, owner[epoch]))
        out[feat][e["task"]].add((epoch, attempt))
    return out


def check(proj, ids):
    problems = []
    runs, owner = read_ledgers(proj, problems)
    done = completions(proj, owner, problems)
    for feat in FEATURES:
        check_feature(proj, feat, ids[feat], runs[feat], done[feat], problems)
    return problems


def check_feature(proj, feat, ids, runs, done, problems):
    tasks = cl.load_state(proj, feat)["tasks"]
    bad = {t: v["status"] for t, v in tasks.items() if v["status"] != "complete"}
    if bad or set(tasks) != ids:
        problems.append("%s: %d tasks not complete: %s" %
                        (feat, len(bad), list(bad.items())[:5]))
    charged = [t for t, v in tasks.items() if v["retry_count"]]
    if charged:
        problems.append("%s: crashes charged to retry budgets: %s" %
                        (feat, charged[:5]))
    stray = set(done) - ids
    if stray:
        problems.append("%s: completions of tasks not in its graph: %s" %
                        (feat, sorted(stray)[:5]))
    for t in sorted(ids):
        got = done.get(t, set())
        if len(got) != 1:
            problems.append("%s: task %s completed %d times in the log: %s" %
                            (feat, t, len(got), sorted(got)))
            continue
        v = tasks.get(t, {})
        mine = (v.get("epoch"), v.get("attempt"))
        if mine not in got:
            problems.append("%s: state has %s for %s, the log %s" %
                            (feat, mine, t, sorted(got)))
        if (t,) + mine not in runs:
            problems.append("%s: %s complete with %s, which no worker of %s "
                            "ran" % (feat, t, mine, feat))
        try:
            text = open("%s/out-%s-%s" % (proj, feat, t)).read().split()
        except OSError:
            text = []
        if text != [feat, t]:
            problems.append("%s: %s complete but its output is %r" %
                            (feat, t, text))
    if len(problems) > 20:
        del problems[20:]
