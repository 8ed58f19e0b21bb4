#!/usr/bin/env python3
# worktree.py - what worktree isolation costs per task (DESIGN §13): the
# worktree reset before each attempt, the commit after it and the merge
# into the integration branch, on a repository of 10,000 files.
#
#   bench/worktree.py build/zerg [--quick] [--sizes 100,1000] [--runs N]
#                     [--noop N] [--noop-only]
#
# For each size N the same graph (N tasks over 10 levels, each writing one
# small file it declares in files.create) runs twice in copies of one
# repository: with rush.isolation: worktree and with none.  The cost per
# task is the difference of the two wall times divided by N; the merge
# share is read from the events (task_complete of the worker's result to
# merge_complete is inside the orchestrator, so it is timed from the
# merge_complete event's own timestamps: the gap between a result file's
# task_commit event and its merge_complete).
#
# Then --noop N (default 200; 0 skips it) no-op tasks (`true`, one level,
# 4 workers) in a one-file repository, with none and with worktree in the
# same invocation, alternating: the added milliseconds per task, and the
# git processes per task of each mode, counted in one more run of each
# through a `git` on PATH that logs every call (the config scans apart)
# before it execs the real one; the counting runs are not timed.
#
# Then --merges N (default 400; 0 skips it) tasks that each write one file
# of their own (one level, a one-file repository), so every task is a
# commit the orchestrator merges: with 8 workers, the merged tasks per
# second of the run (first merge_complete to last); with 1 worker, the
# merge queue's own capacity, 1000 / the mean of merge_complete's `ms`
# (the orchestrator's time on a commit: what it changed, the checks, the
# merge), measured where its git calls do not wait for the CPU behind the
# workers' (on a machine of few cores the 8-worker run is bound by every
# process's CPU together); and the git processes per task of the
# orchestrator and of the workers, counted through the logging `git`.
# Standard library only.
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

FILES = 10000
LEVELS = 10
WORKERS = 4
CONFIG_WT = bl.config_yaml(
    resilience={"reconcile_interval_seconds": 30},
    workers={"heartbeat_interval_seconds": 0.2,
             "heartbeat_stale_threshold": 10,
             "backoff_base_seconds": 0.1,
             "backoff_max_seconds": 0.2}) + "rush:\n  isolation: %s\n"


def git(cwd, *args):
    subprocess.run(["git", "-C", cwd] + list(args), check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_repo(proj):
    """FILES small files in 100 directories, one commit."""
    for d in range(100):
        sub = os.path.join(proj, "src", "d%02d" % d)
        os.makedirs(sub, exist_ok=True)
        for i in range(FILES // 100):
            with open(os.path.join(sub, "f%03d.txt" % i), "w") as f:
                f.write("file %d %d\n" % (d, i))
    git(proj, "init", "-q", "-b", "main")
    git(proj, "config", "user.name", "bench")
    git(proj, "config", "user.email", "bench@example.com")
    git(proj, "add", "src")
    git(proj, "commit", "-qm", "base")


def tasks(n):
    out = []
    for i in range(n):
        level = 1 + i * LEVELS // n
        tid = "W-L%d-%05d" % (level, i)
        path = "out/t%05d.txt" % i
        out.append({"id": tid, "title": tid, "level": level,
                    "command": "mkdir -p out && echo %d > %s" % (i, path),
                    "files": {"create": [path]}})
    return out


def one_run(env, n, rep, isolation):
    proj = bl.new_project(env, "wt-%s-%d-%d" % (isolation, n, rep), tasks(n),
                          CONFIG_WT % isolation)
    make_repo(proj)
    rush = bl.Rush(env, proj, WORKERS)
    rc = rush.wait(timeout=300 + n)
    if rc != 0:
        raise bl.BenchError("%s rush of %d tasks exited %d; see %s"
                            % (isolation, n, rc, rush.out_path))
    rush.events()
    return rush


NOOP_CONFIG = bl.config_yaml(
    workers={"heartbeat_interval_seconds": 1}) + "rush:\n  isolation: %s\n"
SHIM = """#!/bin/sh
case " $* " in
*" config --null --list "*) echo "$PPID scan" ;;
*) echo "$PPID call" ;;
esac >>"$ZERG_BENCH_GIT_LOG"
exec %s "$@"
"""


def git_shim(env):
    """A directory holding a `git` that logs each call, then execs git."""
    real = shutil.which("git")
    if not real:
        raise bl.BenchError("no git on PATH")
    shim_dir = os.path.join(env.root, "git-shim")
    os.makedirs(shim_dir, exist_ok=True)
    path = os.path.join(shim_dir, "git")
    with open(path, "w") as f:
        f.write(SHIM % os.path.realpath(real))
    os.chmod(path, 0o755)
    return shim_dir


def one_file_repo(proj):
    """The project as a repository of one committed file."""
    with open(os.path.join(proj, "README"), "w") as f:
        f.write("bench\n")
    for args in (["init", "-q", "-b", "main"],
                 ["config", "user.name", "bench"],
                 ["config", "user.email", "bench@example.com"],
                 ["add", "-A"], ["commit", "-qm", "base"]):
        git(proj, *args)


def shim_env(shim_dir, log):
    """The environment that puts the logging `git` first (None: none)."""
    if not shim_dir:
        return None
    return {"PATH": shim_dir + os.pathsep + os.environ.get("PATH", ""),
            "ZERG_BENCH_GIT_LOG": log}


def noop_run(env, n, isolation, tag, shim_dir=None):
    """One rush of n no-op tasks; (wall seconds, calls, scans)."""
    proj = bl.new_project(env, "noop-%s-%s" % (isolation, tag),
                          bl.level_tasks(n, 1, "true"),
                          NOOP_CONFIG % isolation)
    one_file_repo(proj)
    log = os.path.join(env.root, "git-%s-%s.log" % (isolation, tag))
    rush = bl.Rush(env, proj, WORKERS, extra_env=shim_env(shim_dir, log))
    rc = rush.wait(timeout=120 + n)
    if rc != 0:
        raise bl.BenchError("%s rush of %d no-op tasks exited %d; see %s"
                            % (isolation, n, rc, rush.out_path))
    calls = scans = 0
    if shim_dir and os.path.exists(log):  # none may run no git at all
        with open(log) as f:
            for line in f:
                calls += 1
                scans += line.split()[-1] == "scan"
    return rush.wall, calls, scans


def run_noop(env, n, runs):
    rows = []
    for rep in range(runs):
        wt = noop_run(env, n, "worktree", "t%d" % rep)[0]
        none = noop_run(env, n, "none", "t%d" % rep)[0]
        rows.append({"worktree": wt, "none": none,
                     "per_task_ms": (wt - none) * 1000.0 / n})
        env.log("%d no-op tasks, run %d: worktree %.2fs, none %.2fs", n,
                rep + 1, wt, none)
    shim = git_shim(env)
    counts = {}
    for isolation in ("worktree", "none"):
        _, calls, scans = noop_run(env, n, isolation, "count", shim)
        counts[isolation] = {"git_per_task": calls / float(n),
                             "scans_per_task": scans / float(n)}
    res = {"tasks": n, "workers": WORKERS, "raw": rows, "git": counts,
           "worktree": bl.summary([r["worktree"] for r in rows]),
           "none": bl.summary([r["none"] for r in rows]),
           "per_task_ms": bl.summary([r["per_task_ms"] for r in rows])}
    env.save("worktree_noop_%d" % n, res)
    print("%5d no-op tasks: worktree %.2fs  none %.2fs  +%.1f ms/task  "
          "git processes/task: worktree %.1f (%.1f config scans), none %.1f"
          % (n, res["worktree"]["median"], res["none"]["median"],
             res["per_task_ms"]["median"], counts["worktree"]["git_per_task"],
             counts["worktree"]["scans_per_task"],
             counts["none"]["git_per_task"]))


def merge_tasks(n):
    return [{"id": "M-L1-%05d" % i, "title": "m", "level": 1,
             "command": "echo %d > m%05d.txt" % (i, i),
             "files": {"create": ["m%05d.txt" % i]}} for i in range(n)]


def merge_run(env, n, workers, tag, shim_dir=None):
    """One rush of n one-file tasks; (rush, git log path or None)."""
    proj = bl.new_project(env, "merge-%d-%s" % (workers, tag),
                          merge_tasks(n), NOOP_CONFIG % "worktree")
    one_file_repo(proj)
    log = os.path.join(env.root, "git-merge-%s.log" % tag)
    rush = bl.Rush(env, proj, workers, extra_env=shim_env(shim_dir, log))
    rc = rush.wait(timeout=120 + n)
    if rc != 0:
        raise bl.BenchError("rush of %d one-file tasks exited %d; see %s"
                            % (n, rc, rush.out_path))
    rush.events()
    merged = [e for e in rush.all_events if e.get("event") == "merge_complete"]
    if len(merged) != n:
        raise bl.BenchError("%d merges for %d tasks" % (len(merged), n))
    return rush, merged, log if shim_dir else None


def merged_per_s(merged):
    """Merged tasks a second, first merge_complete to last."""
    ts = sorted(bl.iso_epoch(e["ts"]) for e in merged)
    return (len(ts) - 1) / (ts[-1] - ts[0]) if ts[-1] > ts[0] else 0.0


def run_merges(env, n, runs):
    rows = []
    for rep in range(runs):
        _, merged, _ = merge_run(env, n, 8, "w8-%d" % rep)
        rate = merged_per_s(merged)
        one, merged1, _ = merge_run(env, n, 1, "w1-%d" % rep)
        ms = [e["data"]["ms"] for e in merged1 if "ms" in e["data"]]
        if len(ms) != n:  # a zerg from before `ms`: commit to merge
            ms = merge_ms(one.all_events)
        rows.append({"merged_per_s_8": rate,
                     "merge_ms_1": bl.summary(ms),
                     "commit_to_merge_ms_1": bl.summary(
                         merge_ms(one.all_events)),
                     "capacity_per_s": 1000.0 / (sum(ms) / len(ms))})
        env.log("%d one-file tasks, run %d: %.1f merged/s with 8 workers; "
                "merge %.1f ms median with 1 (capacity %.0f/s)", n, rep + 1,
                rate, rows[-1]["merge_ms_1"]["median"],
                rows[-1]["capacity_per_s"])
    rush, _, log = merge_run(env, n, 8, "count", git_shim(env))
    orch = work = 0
    with open(log) as f:
        for line in f:
            if line.split()[-1] != "call":
                continue
            if int(line.split()[0]) == rush.pid:
                orch += 1
            else:
                work += 1
    res = {"tasks": n, "raw": rows,
           "merged_per_s_8": bl.summary([r["merged_per_s_8"] for r in rows]),
           "capacity_per_s": bl.summary([r["capacity_per_s"] for r in rows]),
           "merge_ms_1": bl.summary([r["merge_ms_1"]["median"]
                                     for r in rows]),
           "commit_to_merge_ms_1": bl.summary(
               [r["commit_to_merge_ms_1"]["median"] for r in rows]),
           "git_per_task": {"orchestrator": orch / float(n),
                            "workers": work / float(n)}}
    env.save("worktree_merges_%d" % n, res)
    print("%5d one-file tasks: %.1f merged/s with 8 workers; merge queue "
          "%.1f ms a commit (task_commit to merge_complete %.1f ms), "
          "capacity %.0f/s; git processes/task: orchestrator %.1f, "
          "workers %.1f"
          % (n, res["merged_per_s_8"]["median"], res["merge_ms_1"]["median"],
             res["commit_to_merge_ms_1"]["median"],
             res["capacity_per_s"]["median"], orch / float(n),
             work / float(n)))


def merge_ms(events):
    """Milliseconds from each task's task_commit to its merge_complete."""
    commit = {}
    out = []
    for e in events:
        t = e.get("task")
        if e.get("event") == "task_commit":
            commit[t] = bl.iso_epoch(e["ts"])
        elif e.get("event") == "merge_complete" and t in commit:
            out.append((bl.iso_epoch(e["ts"]) - commit.pop(t)) * 1000.0)
    return out


def run(env):
    sizes = [100] if env.quick else [100, 1000]
    if ARGS.sizes:
        sizes = [int(s) for s in ARGS.sizes.split(",")]
    if ARGS.noop_only:
        sizes = []
    runs = ARGS.runs or (1 if env.quick else 2)
    if ARGS.noop:
        run_noop(env, ARGS.noop, runs)
    if ARGS.merges:
        run_merges(env, ARGS.merges, runs)
    for n in sizes:
        rows = []
        for rep in range(runs):
            wt = one_run(env, n, rep, "worktree")
            none = one_run(env, n, rep, "none")
            merges = merge_ms(wt.all_events)
            if len(merges) != n:
                raise bl.BenchError("%d merges for %d tasks" % (len(merges), n))
            rows.append({"worktree": wt.wall, "none": none.wall,
                         "per_task_ms": (wt.wall - none.wall) * 1000.0 / n,
                         "commit_to_merge_ms": merges})
            env.log("%d tasks, run %d: worktree %.2fs, none %.2fs", n, rep + 1,
                    wt.wall, none.wall)
        res = {"tasks": n, "files": FILES, "workers": WORKERS, "raw": rows,
               "worktree": bl.summary([r["worktree"] for r in rows]),
               "none": bl.summary([r["none"] for r in rows]),
               "per_task_ms": bl.summary([r["per_task_ms"] for r in rows]),
               "commit_to_merge_ms": bl.summary(
                   [v for r in rows for v in r["commit_to_merge_ms"]])}
        env.save("worktree_%d" % n, res)
        print("%5d tasks on %d files: worktree %.2fs  none %.2fs  "
              "+%.1f ms/task  commit->merge median %.1f ms"
              % (n, FILES, res["worktree"]["median"], res["none"]["median"],
                 res["per_task_ms"]["median"],
                 res["commit_to_merge_ms"]["median"]))


def options(p):
    p.add_argument("--sizes", help="task counts, comma-separated "
                   "(default 100,1000; --quick 100)")
    p.add_argument("--runs", type=int, help="repetitions (default 2; "
                   "--quick 1)")
    p.add_argument("--noop", type=int, default=200,
                   help="no-op tasks for the processes-per-task figure "
                   "(default 200; 0 skips it)")
    p.add_argument("--merges", type=int, default=400,
                   help="one-file tasks for the merge figures (default "
                   "400; 0 skips it)")
    p.add_argument("--noop-only", action="store_true",
                   help="only the no-op and merge graphs, not the "
                   "10,000-file one")


if __name__ == "__main__":
    env, ARGS = bl.parse_args("What worktree isolation costs per task: "
                              "reset, commit and merge on a 10,000-file "
                              "repository.", options)
    bl.main(run, env)
