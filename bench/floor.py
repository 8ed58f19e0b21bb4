#!/usr/bin/env python3
# floor.py - how far zerg is from what the machine itself allows: the same
# work done by bench/floor.c (no orchestrator, P processes taking tasks from
# a shared counter), timed in the same run as zerg, round by round.
#
#   bench/floor.py build/zerg [--quick] [--tasks N] [--merges N] [--runs N]
#
# Dispatch (--tasks, default 2000; 0 skips it): dispatch.py's graph (no-op
# tasks over 4 levels, 8 workers) under zerg; `xargs -P8` over as many
# items; floor.c's `spawn` (the fork/exec of `sh -c true` alone, level by
# level) and `files` (the same, each task leaving the files DESIGN says a
# task leaves, with one syncfs every 10 ms).  The ratios zerg/xargs,
# files/xargs and zerg/files say how much of the gap to xargs the files
# themselves cost and how much is zerg's own.
#
# Merges (--merges, default 400; 0 skips it): worktree.py's one-file tasks
# with 8 workers under zerg, and floor.c's `merge` on a repository of one
# committed file with 8 worktrees: per task a reset to the integration
# branch, the task, add, write-tree, commit-tree, update-ref in the worker,
# then merge-tree and commit-tree and the swap over a running `update-ref
# --stdin` in the merger, one commit at a time.  Both figures are merged
# tasks per second from the first merge to the last.  Beside it `commit`
# (the floor without the reset) and `guarded` (the floor plus the two looks
# zerg's worker takes for DESIGN section 18: `git status` before the reset,
# for an earlier attempt's work to save, and `git ls-files --ignored` after
# the add, for the ignored files a task left out): zerg/guarded is zerg's
# own cost, guarded/merge the cost of those guarantees.
#
# Each round runs zerg first or last, in turn, and deletes nothing (ext4 is
# slower for a while after many deletions).  floor.c is compiled with the
# machine's `cc` into the scratch directory.
# Standard library only.
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # leave no __pycache__ in the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402
import dispatch  # noqa: E402
import worktree  # noqa: E402

WORKERS = dispatch.WORKERS


def build_floor(env):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise bl.BenchError("no C compiler (cc) on PATH for bench/floor.c")
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "floor.c")
    out = os.path.join(env.root, "floor")
    r = subprocess.run([cc, "-std=c11", "-O2", "-o", out, src],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise bl.BenchError("cc bench/floor.c failed:\n%s" % r.stderr)
    return out


def floor(binary, mode, directory, n, p):
    """One floor.c run: (wall seconds, merged per second or None)."""
    r = subprocess.run([binary, mode, directory, str(n), str(p)],
                       capture_output=True, text=True, timeout=600)
    fields = r.stdout.split()
    if r.returncode != 0 or len(fields) < 4 or fields[0] != mode:
        raise bl.BenchError("floor %s exited %d: %s" % (
            mode, r.returncode, (r.stderr or r.stdout).strip()))
    return float(fields[3]), float(fields[4]) if len(fields) > 4 else None


def floor_repo(env, tag, p):
    """worktree.py's one-file repository, worktrees wt0..wt{p-1} on
    branches of their own and main checked out nowhere."""
    repo = os.path.join(env.root, "floor-repo-%s" % tag)
    os.makedirs(repo)
    worktree.one_file_repo(repo)
    for k in range(p):
        worktree.git(repo, "worktree", "add", "-q", "-b", "w%d" % k,
                     "wt%d" % k, "main")
    worktree.git(repo, "checkout", "-q", "--detach")
    return repo


def dispatch_round(env, binary, n, rep):
    """xargs, the two floors and zerg; zerg first in every other round.
    Nothing is deleted until the end: ext4 allocates slower for a while
    after many deletions (Performance.md), and the next run would pay."""
    row = {}

    def floors():
        row["xargs"] = dispatch.run_xargs(n)
        for mode in ("spawn", "files"):
            d = os.path.join(env.root, "floor-%s-%d" % (mode, rep))
            os.makedirs(d)
            row[mode] = floor(binary, mode, d, n, WORKERS)[0]

    if rep % 2:
        floors()
    row["zerg"] = dispatch.run_zerg(env, n, rep, tag="floor").wall
    if not rep % 2:
        floors()
    env.log("%d tasks, run %d: zerg %.2fs, xargs %.2fs, floor spawn %.2fs, "
            "floor files %.2fs", n, rep + 1, row["zerg"], row["xargs"],
            row["spawn"], row["files"])
    return row


def merge_round(env, binary, n, rep):
    row = {}

    def floors():
        for mode in ("merge", "commit", "guarded"):
            repo = floor_repo(env, "%s-%d" % (mode, rep), WORKERS)
            row["floor_" + mode] = floor(binary, mode, repo, n, WORKERS)[1]

    if rep % 2:
        floors()
    _, merged, _ = worktree.merge_run(env, n, WORKERS, "floor-%d" % rep)
    row["zerg"] = worktree.merged_per_s(merged)
    if not rep % 2:
        floors()
    env.log("%d one-file tasks, run %d: zerg %.1f merged/s, floor %.1f "
            "(without the reset %.1f, guarded %.1f)", n, rep + 1, row["zerg"],
            row["floor_merge"], row["floor_commit"], row["floor_guarded"])
    return row


def report(env, key, rows, fields, pairs):
    """Medians and ranges of each field and of each (num, den) ratio,
    saved under key; returns them."""
    res = {"raw": rows}
    for k in fields:
        res[k] = bl.summary([r[k] for r in rows])
    for num, den in pairs:
        res["%s_per_%s" % (num, den)] = bl.summary(
            [r[num] / r[den] for r in rows if r[den]])
    env.save(key, res)
    return {k: v["median"] for k, v in res.items() if k != "raw"}


def run_dispatch(env, binary, n, runs):
    rows = [dispatch_round(env, binary, n, rep) for rep in range(runs)]
    m = report(env, "floor_dispatch_%d" % n, rows,
               ("zerg", "xargs", "spawn", "files"),
               (("zerg", "xargs"), ("files", "xargs"), ("zerg", "files")))
    print("%5d no-op tasks: zerg %.2fs  xargs %.2fs  floor spawn %.2fs  "
          "floor files %.2fs  zerg/xargs %.2fx  files/xargs %.2fx  "
          "zerg/files %.2fx"
          % (n, m["zerg"], m["xargs"], m["spawn"], m["files"],
             m["zerg_per_xargs"], m["files_per_xargs"], m["zerg_per_files"]))


def run_merges(env, binary, n, runs):
    rows = [merge_round(env, binary, n, rep) for rep in range(runs)]
    m = report(env, "floor_merges_%d" % n, rows,
               ("zerg", "floor_merge", "floor_commit", "floor_guarded"),
               (("zerg", "floor_merge"), ("zerg", "floor_guarded")))
    print("%5d one-file tasks, %d workers: zerg %.1f merged/s  floor %.1f "
          "(without the reset %.1f, guarded %.1f)  zerg/floor %.2fx  "
          "zerg/guarded %.2fx"
          % (n, WORKERS, m["zerg"], m["floor_merge"], m["floor_commit"],
             m["floor_guarded"], m["zerg_per_floor_merge"],
             m["zerg_per_floor_guarded"]))


def run(env):
    runs = ARGS.runs or (1 if env.quick else 3)
    binary = build_floor(env)
    if ARGS.tasks:
        run_dispatch(env, binary, ARGS.tasks, runs)
    if ARGS.merges:
        run_merges(env, binary, ARGS.merges, runs)


def options(p):
    p.add_argument("--tasks", type=int, default=2000,
                   help="no-op tasks of the dispatch rounds (0 skips them)")
    p.add_argument("--merges", type=int, default=400,
                   help="one-file tasks of the merge rounds (0 skips them)")
    p.add_argument("--runs", type=int, help="rounds (default 3; --quick 1)")


if __name__ == "__main__":
    env, ARGS = bl.parse_args("zerg beside the floor: the same dispatch "
                              "and merges with no orchestrator at all.",
                              options)
    bl.main(run, env)
