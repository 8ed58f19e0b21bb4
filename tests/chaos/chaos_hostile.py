"""chaos_hostile.py - tasks that attack zerg's own files (chaos.py --mode
hostile).

A graph of ordinary tasks, some of which (chosen and placed by the seed)
also do one hostile thing to the run directory .zerg/state/f/ while the
rush runs: FIFOs named like a heartbeat, a result and a retry request
(a plain open(2) of a FIFO waits forever), a FIFO as the task's own
progress file, links named like results and heartbeats that point at
/etc/passwd and at a canary directory outside the project, a slot
directory and a task log directory that are links to the canary, garbage
in the other slots' heartbeats, `setsid` daemons that leave the task's
session, and rewrites of .zerg/config.yaml (one leaves it empty for a
moment).  Each act appends its name to hostile-done once done, so the run
proves it happened.  Invariants:

  * the rush ends by itself with exit 0 within a bounded time (no resume);
  * every task is complete and the state document is valid JSON;
  * nothing outside the project changed: the canary directory (names,
    contents, mtimes) and /etc/passwd are as before;
  * no process of the project is left, setsid daemons included.
"""
import hashlib
import json
import os

import chaos_lib as cl

S = ".zerg/state/f"


def acts(canary, later):
    """name -> shell snippet; later(n) gives a task id of level 3."""
    return {
        "fifo_heartbeat": "rm -f %s/heartbeat-99.json && mkfifo %s/heartbeat-99.json" % (S, S),
        "fifo_result": "mkfifo %s/result-%s-1.json && mkfifo %s/result-NOPE-1.json"
                       % (S, later(0), S),
        "fifo_retry": "rm -f %s/retry-1.json && mkfifo %s/retry-1.json" % (S, S),
        "fifo_progress": 'rm -f "$ZERG_PROGRESS_FILE" && mkfifo "$ZERG_PROGRESS_FILE"',
        "link_passwd": "ln -s /etc/passwd %s/result-%s-1.json" % (S, later(1)),
        "link_canary": "ln -s %s/victim %s/result-%s-1.json && "
                       "ln -s %s/victim %s/heartbeat-98.json && "
                       "ln -s %s %s/slot-97" % (canary, S, later(2), canary, S,
                                                canary, S),
        "link_tasklog": "mkdir -p .zerg/logs/f/tasks && ln -s %s .zerg/logs/f/tasks/%s"
                        % (canary, later(3)),
        # Another worker's heartbeat may not exist yet when this runs
        # first: it waits for one (up to 10 s) rather than fail unseen.
        "garbage_heartbeats": 'n=0; t=0; while [ $n -eq 0 ] && [ $t -lt 100 ]; do '
                              'for h in %s/heartbeat-*.json; do '
                              '[ "$h" = "%s/heartbeat-$ZERG_WORKER_ID.json" ] && continue; '
                              '[ -f "$h" ] && [ ! -L "$h" ] && printf "garbage{" > "$h" && '
                              'n=$((n+1)); done; [ $n -gt 0 ] || sleep 0.1; t=$((t+1)); '
                              'done; [ $n -gt 0 ]' % (S, S),
        "setsid_daemon": "setsid sleep 300 </dev/null >/dev/null 2>&1 & "
                         "setsid -f sh -c 'sleep 301' </dev/null >/dev/null 2>&1",
        "config_append": "printf '# rewritten by a task\\n' >> .zerg/config.yaml",
        "config_truncate": 'c=$(cat .zerg/config.yaml) && : > .zerg/config.yaml && '
                           'sleep 0.3 && printf "%s\\n" "$c" > .zerg/config.yaml',
    }


def make_project(root, a, rng):
    proj = os.path.join(root, "chaos")
    canary = os.path.join(root, "canary")
    os.makedirs(proj + "/.zerg")
    os.makedirs(canary + "/sub")
    with open(canary + "/victim", "w") as f:
        f.write("canary\n")
    cl.write_config(proj)
    levels, per = 3, max(4, a.tasks // 3)
    later = lambda n: "H-L3-%03d" % (n % per)
    table = acts(canary, later)
    names = sorted(table)
    rng.shuffle(names)
    slots = rng.sample([(l, i) for l in (1, 2) for i in range(per)], len(names))
    where = dict(zip(slots, names))
    tasks = []
    for l in range(1, levels + 1):
        for i in range(per):
            tid = "H-L%d-%03d" % (l, i)
            cmd = "sleep 0.0%d; echo %s > out-%s" % (rng.randint(1, 9), tid, tid)
            act = where.get((l, i))
            if act:
                cmd = "{ %s; } 2>/dev/null && echo %s >> hostile-done; %s" % (
                    table[act], act, cmd)
            tasks.append({"id": tid, "level": l,
                          "dependencies": ["H-L%d-%03d" % (l - 1, i)] if l > 1 else [],
                          "command": cmd})
    cl.write_graph(proj, "f", tasks)
    return proj, canary, names, len(tasks)


def snapshot(canary):
    """Everything about the canary a write would change."""
    out = {}
    for d, dirs, files in os.walk(canary):
        out[d] = os.lstat(d).st_mtime_ns
        for name in files:
            p = os.path.join(d, name)
            with open(p, "rb") as f:
                out[p] = (os.lstat(p).st_mtime_ns, f.read())
    with open("/etc/passwd", "rb") as f:
        out["/etc/passwd"] = (os.stat("/etc/passwd").st_mtime_ns,
                              hashlib.sha256(f.read()).hexdigest())
    return out


def run(a, rng, root, report):
    proj, canary, names, ntasks = make_project(root, a, rng)
    before = snapshot(canary)
    inj = cl.Injections(rng, {n: 1 for n in names})
    rush = cl.Rush(a.zerg, proj, "f", a.workers, root)
    rush.start(False)
    rush.finish(a.seconds, max_resumes=0)
    problems = []
    try:
        with open(proj + "/hostile-done") as f:
            for line in f:
                inj.performed(line.strip())
    except OSError:
        pass
    cl.scan_worker_logs(proj)
    problems += check_state(proj, ntasks)
    after = snapshot(canary)
    changed = sorted(k for k in set(before) | set(after)
                     if before.get(k) != after.get(k))
    if changed:
        problems.append("written outside the project: %s" % changed)
    return report(a, root, proj, inj, rush, problems,
                  "hostile, %d tasks, %d workers" % (ntasks, a.workers))


def check_state(proj, ntasks):
    path = proj + "/.zerg/state/f.json"
    try:
        with open(path) as f:
            state = json.load(f)
    except (OSError, ValueError) as e:
        return ["the state document is not valid JSON: %s" % e]
    bad = {t: v["status"] for t, v in state["tasks"].items()
           if v["status"] != "complete"}
    if bad or len(state["tasks"]) != ntasks:
        return ["%d tasks not complete: %s" % (len(bad), list(bad.items())[:5])]
    return []
