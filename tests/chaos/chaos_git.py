"""chaos_git.py - worktree isolation under fire (chaos.py --mode git).

The project is a real git repository rushed with rush.isolation:
worktree (schedule levels or dag, by the seed).  Every task writes
out/{id}: a first line "{id} {epoch} {attempt}", then the first line of
each dependency's out/ file as it finds it in its worktree (a task that
finds one missing records itself as blind and fails).  Tasks chosen by
the seed fail on purpose on some of their first attempts, in the command
(after writing their output) or in the verification, and pass later.
Meanwhile the harness watches the children of the orchestrator and of
its workers in /proc; when one is a git process (add, write-tree,
commit-tree, update-ref, reset, clean, merge-tree, worktree ...) it
SIGKILLs at that instant the worker, the worker's process group, or the
git process itself, or (capped) the orchestrator, which it then resumes
with --resume.  Each task run appends what it did to a ledger outside the
repository.  Invariants:

  * the rush ends with exit 0; only the harness's own kills end a start
    (an exit 1 is a task that failed for good: reported);
  * every task is complete in the state and has exactly one commit on
    zerg/f/integration (Task-ID trailers): none missing, none twice;
  * on the first-parent chain a task's commit comes after those of its
    dependencies, and its committed output holds exactly the first lines
    its dependencies committed: it saw their files; no task ran blind;
  * the attempt recorded complete (state, Attempt trailer, the output's
    first line) is one attempt, and not one that failed; the state names
    the commit on the integration branch;
  * a retry budget is charged only for failures the tasks chose, never
    for a kill;
  * every attempt ran on the worker (slot and incarnation) it was claimed
    on, as the ledger records it against the task_claimed events;
  * no *.lock file (index.lock, a ref's lock) is left in the git
    directory; the user's branch has not moved;
  * no process of the project is left.
"""
import collections
import datetime
import os
import re
import shlex
import signal
import subprocess
import time

import chaos_lib as cl

ORCH_KILLS_MAX = 3
# How long one injection waits for a git process to appear.
HUNT_SECONDS = 1.5
# git's options that take their value as the next argument.
GIT_VALUE_OPTS = ("-C", "-c", "--git-dir", "--work-tree", "--namespace")


def git(proj, *args, check=True):
    return subprocess.run(["git", "-C", proj] + list(args), check=check,
                          capture_output=True, text=True).stdout


def task_command(tid, deps, fails, ledger):
    """The task: its output, what it saw, and its chosen failures."""
    q = shlex.quote
    lines = ['t=%s; e=$ZERG_EPOCH; a=$ZERG_ATTEMPT; w=$ZERG_WORKER_ID; L=%s' %
             (tid, q(ledger)),
             "sleep 0.0$(( a % 7 + 1 ))", "mkdir -p out"]
    if deps:
        ds = " ".join(deps)
        lines.append('for d in %s; do [ -f out/$d ] || '
                     '{ echo "blind $t $e $a $d" >> "$L"; exit 1; }; done' % ds)
        lines.append('{ echo "$t $e $a"; for d in %s; do head -n 1 out/$d; '
                     'done; } > out/$t' % ds)
    else:
        lines.append('echo "$t $e $a" > out/$t')
    if fails["cmd"]:
        lines.append('case " %s " in *" $a "*) echo "fail $t $e $a cmd $w" '
                     '>> "$L"; exit 1;; esac' % " ".join(map(str, fails["cmd"])))
    lines.append('echo "ran $t $e $a $w" >> "$L"')
    return "; ".join(lines)


def verify_command(tid, fails, ledger):
    v = ('t=%s; e=$ZERG_EPOCH; a=$ZERG_ATTEMPT; w=$ZERG_WORKER_ID; ' % tid +
         'head -n 1 out/$t | grep -qx "$t $e $a"')
    if fails["verify"]:
        v = ('%s && case " %s " in *" $a "*) echo "fail $t $e $a verify $w" >> '
             '%s; exit 1;; esac' % (v, " ".join(map(str, fails["verify"])),
                                     shlex.quote(ledger)))
    return v


def make_graph(a, rng, ledger):
    """Levels x per tasks; deps on the level below (the same index and one
    more at random) and now and then on a lower index of the same level."""
    per = max(1, a.tasks // a.levels)
    tasks, deps_of = [], {}
    for lv in range(1, a.levels + 1):
        for i in range(per):
            tid = "G-L%d-%03d" % (lv, i)
            deps = []
            if lv > 1:
                deps.append("G-L%d-%03d" % (lv - 1, i))
                other = "G-L%d-%03d" % (rng.randint(1, lv - 1), rng.randrange(per))
                if other not in deps:
                    deps.append(other)
            if i > 0 and rng.random() < 0.15:
                deps.append("G-L%d-%03d" % (lv, rng.randrange(i)))
            # About a third fail on purpose, at most twice, on attempts
            # 1-3 (a kill may use attempt numbers too).
            fails = {"cmd": [], "verify": []}
            if rng.random() < 0.35:
                for att in rng.sample([1, 2, 3], rng.choice([1, 1, 2])):
                    fails[rng.choice(["cmd", "verify"])].append(att)
            deps_of[tid] = deps
            tasks.append({"id": tid, "title": "chaos " + tid, "level": lv,
                          "dependencies": deps,
                          "files": {"create": ["out/" + tid],
                                    "read": ["out/" + d for d in deps]},
                          "command": task_command(tid, deps, fails, ledger),
                          "verification": {"command": verify_command(tid, fails, ledger),
                                           "timeout_seconds": 30}})
    return tasks, deps_of


def make_project(root, a, rng):
    proj = os.path.join(root, "chaos")
    ledger = os.path.join(root, "ledger")
    os.makedirs(proj + "/.zerg")
    git(proj, "init", "-q", "-b", "main")
    git(proj, "config", "user.name", "chaos")
    git(proj, "config", "user.email", "chaos@example.com")
    with open(proj + "/README", "w") as f:
        f.write("chaos in git\n")
    git(proj, "add", "README")
    git(proj, "commit", "-qm", "base")
    schedule = rng.choice(["levels", "dag"])
    cl.write_config(proj, retry_attempts=5, rush="rush:\n  isolation: worktree\n"
                    "  schedule: %s\n" % schedule)
    tasks, deps_of = make_graph(a, rng, ledger)
    cl.write_graph(proj, "f", tasks)
    open(ledger, "w").close()
    return proj, ledger, deps_of, schedule


def children(pid):
    out = []
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, t)) as f:
                out += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return out


def comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return ""


def git_subcommand(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = [x.decode(errors="replace") for x in f.read().split(b"\0")]
    except OSError:
        return None
    i = 1
    while i < len(argv):
        if argv[i] in GIT_VALUE_OPTS:
            i += 2
        elif argv[i].startswith("-"):
            i += 1
        else:
            return argv[i]
    return None


# What each kind of injection waits for: the git a worker runs to commit
# a task's work, to reset its worktree before an attempt, to move a ref;
# any git of a worker; the git the orchestrator runs to merge.
TARGETS = {
    "git_commit": ("worker", {"add", "write-tree", "commit-tree"}),
    "git_reset": ("worker", {"reset", "clean", "diff-tree", "read-tree"}),
    "git_ref": ("worker", {"update-ref"}),
    "git_any": ("worker", None),
    "orch_git": ("orch", {"merge-tree", "commit-tree", "update-ref", "worktree"}),
}
# How a worker caught in git is killed, in turn.
METHODS = ("worker", "group", "git")


def hunt(orch, kind, deadline):
    """Polls until a git process of the wanted kind is a child of the
    orchestrator or of one of its workers: (git pid, parent, subcommand)."""
    where, want = TARGETS[kind]
    while time.monotonic() < deadline:
        kids = children(orch)
        parents = [orch] if where == "orch" else [k for k in kids if comm(k) == "zerg"]
        for p in parents:
            for k in (kids if p == orch else children(p)):
                if comm(k) == "git":
                    sub = git_subcommand(k)
                    if sub and (want is None or sub in want):
                        return k, p, sub
        time.sleep(0.0005)
    return None


class GitRush(cl.Rush):
    """A Rush that also keeps every end the harness did not cause."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.unforced = []

    def judge(self, rc):
        """An exit 1 the harness did not cause is final: a --resume does
        not run failed tasks again, and the checks say which failed."""
        verdict = super().judge(rc)
        if verdict == "resume" and not self.harness_killed:
            out = "%s/rush-%s.out" % (self.logdir, self.feature)
            self.unforced.append("start %d exited %d: %s" % (
                self.n, rc, "".join(l for l in cl.tail(out, 6).splitlines(True)
                                    if "failed" in l).strip()))
            return "done"
        return verdict


def inject(kind, rush, hits, methods):
    """Kills inside git; True if it really happened."""
    if not rush.running():
        return False
    orch = rush.p.pid
    found = hunt(orch, kind, time.monotonic() + HUNT_SECONDS)
    if not found:
        return False
    gpid, parent, sub = found
    method = "orch" if kind == "orch_git" else \
        METHODS[sum(methods.values()) % len(METHODS)]
    try:
        if method == "orch":
            rush.kill9()
            time.sleep(0.2)
            rush.start(True)
        elif method == "worker":
            os.kill(parent, signal.SIGKILL)
        elif method == "git":
            os.kill(gpid, signal.SIGKILL)
        else:
            pgid = os.getpgid(parent)
            # Never the harness's own group, nor the orchestrator's.
            if pgid in (os.getpgrp(), os.getpgid(orch)):
                return False
            os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    hits[sub] += 1
    methods[method] += 1
    return True


def run(a, rng, root, report):
    proj, ledger, deps_of, schedule = make_project(root, a, rng)
    head = git(proj, "rev-parse", "HEAD").strip()
    inj = cl.Injections(rng, {"git_commit": 3, "git_reset": 3, "git_ref": 2,
                              "git_any": 2,
                              "orch_git": 1 if a.kill_orchestrator else 0},
                        {"orch_git": ORCH_KILLS_MAX})
    hits, methods = collections.Counter(), collections.Counter()
    rush = GitRush(a.zerg, proj, "f", a.workers, root)
    cl.drive(rush, inj, a.seconds, rng, (0.1, 0.5),
             lambda kind: inject(kind, rush, hits, methods), 240)
    cl.scan_worker_logs(proj)
    problems = ["a rush ended by itself with a failure: " + u
                for u in rush.unforced]
    fails = check(a, proj, ledger, deps_of, head, problems)
    if not check_workers(proj, ledger, problems):
        problems.append("the ledger records no attempt")
    check_locks(a, proj, problems)
    inj.enable("task_fail")
    inj.performed("task_fail", fails)
    for m in METHODS:
        inj.enable("kill_" + m)
        inj.performed("kill_" + m, methods[m])
    return report(a, root, proj, inj, rush, problems,
                  "git, %d tasks, %d workers, schedule %s; git processes "
                  "killed in: %s" % (len(deps_of), a.workers, schedule,
                                     dict(sorted(hits.items()))))


def read_ledger(ledger):
    """(failed (task, epoch, attempt) set, blind records)."""
    failed, blind = set(), []
    with open(ledger) as f:
        for line in f:
            w = line.split()
            if w and w[0] == "fail":
                failed.add((w[1], w[2], w[3]))
            elif w and w[0] == "blind":
                blind.append(line.strip())
    return failed, blind


def check_workers(proj, ledger, problems):
    """Every attempt ran on the worker it was claimed on: the ledger's
    (task, epoch, attempt, worker) against the task_claimed events (the
    epoch names the worker's incarnation).  Returns the attempts checked."""
    claimed = {}
    for e in cl.monitor_events(proj):
        if e["event"] == "task_claimed" and e.get("worker") is not None:
            d = e.get("data") or {}
            claimed[(e["task"], str(d.get("epoch")), str(d.get("attempt")))] = \
                str(e["worker"])
    checked = 0
    with open(ledger) as f:
        for line in f:
            w = line.split()
            if not w or w[0] not in ("ran", "fail"):
                continue
            key, worker = (w[1], w[2], w[3]), w[-1]
            if key not in claimed:
                problems.append("%s epoch %s attempt %s ran but was never "
                                "claimed" % key)
            elif claimed[key] != worker:
                problems.append("%s epoch %s attempt %s ran on worker %s, "
                                "claimed on %s" % (key + (worker, claimed[key])))
            checked += 1
    return checked


def integration(proj):
    """[(task id, attempt trailer, commit)] on the first-parent chain,
    oldest first."""
    out = git(proj, "log", "--first-parent", "--reverse",
              "--format=%(trailers:key=Task-ID,valueonly,separator=%x2C)%x09"
              "%(trailers:key=Attempt,valueonly,separator=%x2C)%x09%H",
              "main..zerg/f/integration")
    return [tuple(line.split("\t")) for line in out.splitlines() if line]


def locks(proj):
    found = []
    for d, _, files in os.walk(proj + "/.git"):
        found += [os.path.join(d, n)[len(proj) + 1:] for n in files
                  if n.endswith(".lock")]
    return found


def ts_of(event):
    return datetime.datetime.strptime(event["ts"], "%Y-%m-%dT%H:%M:%S.%fZ") \
        .replace(tzinfo=datetime.timezone.utc).timestamp()


def lock_story(proj, lock, last):
    """When the lock was made against the log's last event, and the git
    processes working in the project now: what tells a lock that outlived
    the run's end-of-run healing from one made after it."""
    born = os.stat(os.path.join(proj, lock)).st_mtime
    gits = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if comm(int(pid)) == "git" and \
                    os.readlink("/proc/%s/cwd" % pid).startswith(proj):
                gits.append(int(pid))
        except OSError:
            continue
    when = "made %.3f s before the log's last event" % (last - born) \
        if last else "made with no event logged"
    return "%s; git processes in the project now: %s" % (when, gits or "none")


def check_locks(a, proj, problems):
    """A lock a killed git left is a problem where it blocks: in the
    common git directory (the user's own git would stop on it), or in a
    slot's git directory when a task was claimed on that slot after it
    (the slot was not healed, §18).  One a slot holds from the last kill
    of the run is left to the next use of the slot; `zerg cleanup` must
    then remove the worktrees, and every lock with them."""
    started = collections.defaultdict(list)
    events = cl.monitor_events(proj)
    for e in events:
        if e["event"] == "task_claimed" and e.get("worker") is not None:
            started[e["worker"]].append(ts_of(e))
    last = ts_of(events[-1]) if events else None
    for lock in locks(proj):
        parts = lock.split("/")
        if len(parts) < 4 or parts[1] != "worktrees":
            problems.append("lock left in the common git directory: %s (%s)"
                            % (lock, lock_story(proj, lock, last)))
            continue
        # The lock of a temporary index named by a pid blocks nobody.
        if re.search(r"\.[0-9]+\.lock$", lock):
            continue
        slot = int(parts[2].rsplit("-", 1)[-1]) if parts[2][-1].isdigit() else -1
        born = os.stat(os.path.join(proj, lock)).st_mtime
        # Half a second: the claim of the attempt whose git made the lock
        # may be logged just after the lock was made.
        after = sum(1 for t in started.get(slot, []) if t > born + 0.5)
        if after:
            problems.append("%s stayed while %d attempts were claimed on slot %d "
                            "after it: the slot was not healed" % (lock, after, slot))
    r = subprocess.run([a.zerg, "-C", proj, "--feature", "f", "cleanup"],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        problems.append("zerg cleanup after the run exited %d: %s" %
                        (r.returncode, (r.stdout + r.stderr)[-300:]))
    left = locks(proj)
    if left:
        problems.append("lock files left in the git directory after zerg "
                        "cleanup: %s" % left[:8])


def check(a, proj, ledger, deps_of, head, problems):
    """Appends what is wrong to problems; returns the chosen failures seen."""
    failed, blind = read_ledger(ledger)
    if blind:
        problems.append("tasks ran without their dependencies' files: %s" % blind[:5])
    state = cl.load_state(proj, "f")["tasks"]
    chain = integration(proj)
    pos = collections.defaultdict(list)
    for i, (tid, _, _) in enumerate(chain):
        pos[tid].append(i)
    first = {}
    for tid in sorted(deps_of):
        v = state.get(tid, {})
        if v.get("status") != "complete":
            problems.append("%s is %s: %s" % (tid, v.get("status"), v.get("error")))
        if len(pos[tid]) != 1:
            problems.append("%s has %d commits on zerg/f/integration" %
                            (tid, len(pos[tid])))
            continue
        text = git(proj, "show", "zerg/f/integration:out/" + tid, check=False)
        lines = text.splitlines()
        first[tid] = lines[0] if lines else ""
        w = first[tid].split()
        if len(w) != 3 or w[0] != tid:
            problems.append("%s: committed output %r" % (tid, text[:80]))
            continue
        mine = (tid, w[1], w[2])
        _, trailer, commit = chain[pos[tid][0]]
        if mine in failed:
            problems.append("%s: the committed attempt (epoch %s, attempt %s) "
                            "failed" % mine)
        # Epoch 0: completed on a resume from the commit the worker had
        # made before the restart (§13), so the epoch is not known.
        if str(v.get("attempt")) != w[2] or trailer != w[2] or \
                str(v.get("epoch")) not in (w[1], "0") or v.get("commit") != commit:
            problems.append("%s: state says epoch %s attempt %s commit %s, the "
                            "trailer attempt %s, the output %s, the commit %s" % (
                                tid, v.get("epoch"), v.get("attempt"), v.get("commit"),
                                trailer, mine[1:], commit))
        chosen = sum(1 for f in failed if f[0] == tid)
        if v.get("retry_count", 0) > chosen:
            problems.append("%s: retry_count %d but it failed on purpose %d "
                            "times: a kill was charged" % (tid, v["retry_count"], chosen))
    for tid, deps in sorted(deps_of.items()):
        if tid not in first:
            continue
        late = [d for d in deps if pos[d] and pos[d][0] > pos[tid][0]]
        if late:
            problems.append("%s merged before its dependencies %s" % (tid, late))
        seen = git(proj, "show", "zerg/f/integration:out/" + tid,
                   check=False).splitlines()[1:]
        if seen != [first.get(d) for d in deps]:
            problems.append("%s saw %s of its dependencies, they committed %s" %
                            (tid, seen, [first.get(d) for d in deps]))
    stray = set(pos) - set(deps_of)
    if stray:
        problems.append("commits of unknown tasks: %s" % sorted(stray)[:5])
    if git(proj, "rev-parse", "HEAD").strip() != head or \
            git(proj, "symbolic-ref", "HEAD").strip() != "refs/heads/main":
        problems.append("the user's branch moved")
    if len(problems) > 25:
        del problems[25:]
    return len(failed)
