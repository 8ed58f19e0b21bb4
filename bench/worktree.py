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
*" config --null --list "*) echo scan ;;
*) echo call ;;
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


def noop_run(env, n, isolation, tag, shim_dir=None):
    """One rush of n no-op tasks; (wall seconds, calls, scans)."""
    proj = bl.new_project(env, "noop-%s-%s" % (isolation, tag),
                          bl.level_tasks(n, 1, "true"),
                          NOOP_CONFIG % isolation)
    with open(os.path.join(proj, "README"), "w") as f:
        f.write("noop\n")
    git(proj, "init", "-q", "-b", "main")
    git(proj, "config", "user.name", "bench")
    git(proj, "config", "user.email", "bench@example.com")
    git(proj, "add", "-A")
    git(proj, "commit", "-qm", "base")
    extra, log = None, os.path.join(env.root, "git-%s-%s.log" % (isolation,
                                                                tag))
    if shim_dir:
        extra = {"PATH": shim_dir + os.pathsep + os.environ.get("PATH", ""),
                 "ZERG_BENCH_GIT_LOG": log}
    rush = bl.Rush(env, proj, WORKERS, extra_env=extra)
    rc = rush.wait(timeout=120 + n)
    if rc != 0:
        raise bl.BenchError("%s rush of %d no-op tasks exited %d; see %s"
                            % (isolation, n, rc, rush.out_path))
    calls = scans = 0
    if shim_dir and os.path.exists(log):  # none may run no git at all
        with open(log) as f:
            for line in f:
                calls += 1
                scans += line.strip() == "scan"
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
    p.add_argument("--noop-only", action="store_true",
                   help="only the no-op graph, not the 10,000-file one")


if __name__ == "__main__":
    env, ARGS = bl.parse_args("What worktree isolation costs per task: "
                              "reset, commit and merge on a 10,000-file "
                              "repository.", options)
    bl.main(run, env)
