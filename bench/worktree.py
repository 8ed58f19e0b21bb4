#!/usr/bin/env python3
# worktree.py - what worktree isolation costs per task (DESIGN §13): the
# worktree reset before each attempt, the commit after it and the merge
# into the integration branch, on a repository of 10,000 files.
#
#   bench/worktree.py build/zerg [--quick] [--sizes 100,1000] [--runs N]
#
# For each size N the same graph (N tasks over 10 levels, each writing one
# small file it declares in files.create) runs twice in copies of one
# repository: with rush.isolation: worktree and with none.  The cost per
# task is the difference of the two wall times divided by N; the merge
# share is read from the events (task_complete of the worker's result to
# merge_complete is inside the orchestrator, so it is timed from the
# merge_complete event's own timestamps: the gap between a result file's
# task_commit event and its merge_complete).  Standard library only.
import os
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
    runs = ARGS.runs or (1 if env.quick else 2)
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


if __name__ == "__main__":
    env, ARGS = bl.parse_args("What worktree isolation costs per task: "
                              "reset, commit and merge on a 10,000-file "
                              "repository.", options)
    bl.main(run, env)
