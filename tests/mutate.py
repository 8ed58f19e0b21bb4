#!/usr/bin/env python3
"""mutate.py - each core invariant has a test that notices when it breaks.

Every entry below is a one-line mutation of the code that keeps one of
zerg's promises (fencing, level completion, crash charging, backoff caps,
retry ceilings, same-file serialization, containment of what a task
starts, atomic replace, the spend cap, checkpoints after the journal's
sync, logs per feature, the failure classes' routes, log rotation
while a run goes on).  For each, the script applies it to a scratch
copy of the tree, builds that copy and runs the tests named; the
mutation must make at least one of them fail.  A mutation that survives
means the suite no longer guards that promise.

    tests/mutate.py                 every mutation
    tests/mutate.py fencing levels  only those named
    tests/mutate.py --ci N          N of them, a window that moves with the
                                    commit count: consecutive commits run
                                    consecutive windows, so every mutation
                                    runs once in each ceil(total / N)
                                    commits (what `make check` runs)
    tests/mutate.py --list

The working tree is never modified: the copy lives in a temp directory
(or MUTATE_DIR) and is built with CMake in Debug without sanitizers.
Exit status: 0 when every mutation was caught, 1 otherwise, 2 on misuse
(an unknown name, or a mutation whose text is no longer in the code).
"""
import os
import shutil
import subprocess
import sys
import tempfile

# name: (file, original text, mutated text, ctest regex, what it breaks)
MUTATIONS = {
    "fencing": (
        "src/orch/orch_intake.c",
        "st->epoch == r->epoch && st->attempt == r->attempt",
        "st->attempt == r->attempt",
        "unit.test_orchestrator",
        "a result from another epoch applied to the live attempt",
    ),
    "levels": (
        "src/orch/orchestrator.c",
        "if (!zerg_state_level_done(s, o->g, lvl)) {",
        "if (0) {",
        "unit.test_orchestrator",
        "a level closed on the cursor's word, not on its tasks",
    ),
    "crash-charge": (
        "src/orch/orch_tasks.c",
        "    if (!out.charge)\n        st->crash_count++;",
        "    if (!out.charge)\n        st->retry_count++;",
        "unit.test_orchestrator",
        "a worker crash charged to the task's retry budget",
    ),
    "crash-policy": (
        "policies/retry.lua",
        "return { retry = true, delay = 0, charge = false,",
        "return { retry = true, delay = 0, charge = true,",
        "unit.test_orchestrator|unit.test_policy$",
        "the bundled retry policy charging crashes",
    ),
    "backoff-cap": (
        "policies/backoff.lua",
        "    if d > opts.max then\n        d = opts.max\n    end",
        "    if false then\n        d = opts.max\n    end",
        "unit.test_policy$",
        "the bundled backoff without its cap",
    ),
    "serialize": (
        "src/orch/orchestrator.c",
        "if (o->wgroup_running[tk->wgroups[q]] > 0)",
        "if (0)",
        "unit.test_orchestrator",
        "two same-level tasks writing one file run together",
    ),
    "attempt-ceiling": (
        "src/orch/orch_tasks.c",
        "return n < 20 ? 20 : n;",
        "return 1 << 30;",
        "unit.test_orchestrator",
        "a policy retrying a failing task forever",
    ),
    "contain": (
        "src/worker/worker.c",
        "prctl(PR_SET_CHILD_SUBREAPER, 1);",
        "prctl(PR_SET_CHILD_SUBREAPER, 0);",
        "integration.test_contain|unit.test_worker",
        "a task's setsid daemon outliving the task",
    ),
    "atomic-replace": (
        "src/base/fsio_write.c",
        "if (rc == 0 && zerg_fsio_ops.rename(tmp, path) < 0)",
        "if (rc == 0 && (unlink(path), zerg_fsio_ops.rename(tmp, path)) < 0)",
        "unit.test_fsio",
        "a window in which the file does not exist",
    ),
    "spend-cap": (
        "src/orch/orch_pool.c",
        "    if (spent < cap)\n        return;",
        "    if (1)\n        return;",
        "unit.test_orch_budget|integration.test_agent_budget",
        "rush.max_cost_usd never reached: claims go on past the cap",
    ),
    "checkpoint-wait": (
        "src/orch/orch_intake.c",
        "        sync_collect(o, force);",
        "        sync_collect(o, 0);",
        "unit.test_orch_durability",
        "a checkpoint recording results whose batch sync is still in flight",
    ),
    "logs-feature": (
        "src/cli/logs.c",
        "if (f->feature && (!feat || strcmp(feat, f->feature) != 0))",
        "if (0 && f->feature && (!feat || strcmp(feat, f->feature) != 0))",
        "integration.test_two_features",
        "`zerg logs --feature F` showing other features' events",
    ),
    "class-route": (
        "include/zerg/failure.h",
        'X(RATE_LIMIT, "rate_limit", 0, PAUSE,',
        'X(RATE_LIMIT, "rate_limit", 0, RETRY,',
        "unit.test_failure_class|integration.test_agent_stream",
        "a rate limit charged to the task instead of pausing the pool",
    ),
    "rotate-live": (
        "src/launch/launcher_subprocess.c",
        ".caps = {.local_pids = 1, .reopens_logs = 1},",
        ".caps = {.local_pids = 1, .reopens_logs = 0},",
        "integration.test_log_rotate_live",
        "the run's log no longer rotating while workers reopen it by path",
    ),
    "pool-environment": (
        "src/orch/orch_pool.c",
        "    case ZERG_ROUTE_STOP:\n        return environment_stop(o, r, v);",
        "    case ZERG_ROUTE_STOP:\n        break;",
        "unit.test_orch_attempt",
        "an environment failure charged to the task instead of stopping the run",
    ),
    "pool-pause": (
        "src/orch/orch_pool.c",
        "        pool_pause(o, r, now);\n",
        "",
        "unit.test_orch_attempt",
        "a rate limit that no longer pauses the pool",
    ),
    "review-bypass": (
        "src/orch/orch_merge.c",
        "    if (orch_review_applies(o))\n        return orch_review_hold(o, r, v);\n",
        "",
        "unit.test_orch_review",
        "rush.review merging a passing task before anyone approved it",
    ),
    "review-stale": (
        "src/orch/orch_review.c",
        "             st->attempt != rq.attempt) {",
        "             0) {",
        "unit.test_orch_review",
        "an approval of an earlier attempt merging the attempt that waits now",
    ),
    "stdio-fence": (
        "src/orch/orch_intake.c",
        "    if (!live_attempt(o, t, &r)) {",
        "    if (!quiet && !live_attempt(o, t, &r)) {",
        "unit.test_orch_intake_lines|integration.test_stdio_events",
        "a result sent as a stdout event applied without its fence",
    ),
    "stdio-slot": (
        "src/orch/orch_stdio.c",
        "    if (!why && from != slot)",
        "    if (0)",
        "unit.test_orch_stdio|integration.test_stdio_events",
        "a worker's stdout speaking for another slot",
    ),
    "fence-status": (
        "src/orch/orch_intake.c",
        "    return (st->status == ZERG_TASK_CLAIMED ||\n"
        "            st->status == ZERG_TASK_IN_PROGRESS) &&\n"
        "           st->epoch",
        "    return st->epoch",
        "unit.test_orchestrator|integration.test_worktree_fence",
        "a requeued task's late result from its dead worker applied "
        "(merged, under worktree isolation)",
    ),
    "resume-readback": (
        "src/orch/orch_merge.c",
        "ws(o)->ops->merged(ws(o), on_merged, &c, &err) < 0",
        "0",
        "unit.test_orch_merge|integration.test_worktree_resume",
        "--resume not reading the integration branch back",
    ),
    "resume-own-heads": (
        "src/orch/orch_merge.c",
        "if (i < 0 || !f->run_id || !known_run(c, f->run_id))",
        "if (i < 0 || !f->run_id)",
        "unit.test_orch_merge|integration.test_worktree_resume",
        "--resume merging a worker branch head another run left",
    ),
    "conflict-charge": (
        "src/orch/orch_merge.c",
        '        return orch_verdict_requeue(v, "conflict");',
        '        return orch_verdict_failed(v, "exit", NULL, 1, 0, "conflict");',
        "unit.test_orch_merge|integration.test_worktree$",
        "a merge conflict charged to the task's retry budget",
    ),
    "retry-unanswered": (
        "src/orch/orch_intake.c",
        "        zerg_retry_answer_write(apath, ans, NULL);",
        "        (void)ans;",
        "unit.test_orchestrator|integration.test_rush_control",
        "a live rush taking a retry request without answering what it did",
    ),
    "gate-claims": (
        "src/orch/orch_gate.c",
        "    orch_run_event(o, o->dag ? RUN_EV_CLOSE : RUN_EV_STOP, 0, now);",
        "    if (!o->dag)\n        orch_run_event(o, RUN_EV_STOP, 0, now);",
        "unit.test_orch_gate|integration.test_schedule_dag",
        "claims going on under dag after a required gate failed",
    ),
    "level-unplaced": (
        "src/model/state.c",
        "        if (at == 0 && i < g->ntasks)\n            at = g->tasks[i].level;",
        "",
        # The orchestrator's level cursor holds the level too, so only
        # the state query's own test sees this one; test_rush_resume
        # shows the promise the two keep (an unplaced task, no
        # reconciliation, its level waits for it).
        "unit.test_state|integration.test_rush_resume",
        "a level closed while a task of it has no level in the state",
    ),
    "failed-as-complete": (
        "src/orch/orch_attempt.c",
        "    int pass = r->outcome == ZERG_OUTCOME_COMPLETE;",
        "    int pass = 1;",
        "unit.test_orch_attempt|integration.test_chaos$",
        "a failed attempt recorded (and merged) as complete",
    ),
    "budget-rearm": (
        "src/lua/vm.c",
        "    /* From now on every instruction raises: pcall cannot swallow it. */\n"
        "    lua_sethook(vm->L, vm_hook, LUA_MASKCOUNT, 1);",
        "",
        "unit.test_sandbox",
        "a policy that catches its budget error with pcall running on",
    ),
    "merge-stale-tip": (
        "src/git/ws_merge.c",
        "if (rc == 1 && known && moved(h, tip)) {",
        "if (0) {",
        "unit.test_workspace",
        "a merge conflict computed on the remembered tip after the branch "
        "moved: a task charged for a conflict it does not have",
    ),
    "checked-out-heads": (
        "src/git/ws_heads.c",
        "        rc = linked_holder(common, ref, where, n);",
        "        rc = 0;",
        "unit.test_workspace|integration.test_cleanup_safety",
        "the integration branch moved under a linked worktree that has it "
        "checked out",
    ),
    "adopt-newer": (
        "src/orch/orch_tasks.c",
        "    if (orch_task_running(st->status) && !newer)",
        "    if (orch_task_running(st->status))",
        "unit.test_orch_merge",
        "a resumed task complete at the attempt the checkpoint caught, not "
        "at the attempt whose commit was merged",
    ),
    "pipe-fresh": (
        "src/git/git_coproc.c",
        "    if (c->pid > 0 && !strcmp(c->dir, dir) && still_fresh(g, c))",
        "    if (c->pid > 0 && !strcmp(c->dir, dir))",
        "unit.test_workspace",
        "the merge's running git processes kept under the overrides of a "
        "config a worker has since changed",
    ),
    "run-end-heal": (
        "src/git/ws_host.c",
        "        return;\n    heal_slots(h);",
        "        return;",
        "unit.test_workspace",
        "a ref lock a killed git left in a slot's last attempt kept in the "
        "common git directory after the run, where the user's git stops",
    ),
    "fork-guard": (
        "src/base/offload.c",
        "    pthread_atfork(fork_prepare, fork_after, fork_after);",
        "    (void)fork_prepare, (void)fork_after;",
        "unit.test_offload",
        "a checkpoint forked while the journal thread is inside free(3): "
        "the child's allocator locked for good, the rush hung at its end",
    ),
    "started-by-result": (
        "src/orch/orch_intake.c",
        "        orch_task_started(o, t, sl->id, sl->hb_task_pgid);\n    /* A worker",
        "        (void)0;\n    /* A worker",
        "unit.test_orch_attempt",
        "an attempt that ended before its worker's first heartbeat has no "
        "task_started: its joblog row names no worker, its report bar none",
    ),
    "index-stamp-blind": (
        "src/git/ws_outputs.c",
        "    return a && b && a->set && b->set && a->dev == b->dev &&",
        "    return a && b && a->set && b->set;\n    return a->dev == b->dev &&",
        "unit.test_ws_outputs",
        "an index the task rewrote passes for the prepare's: a run file it "
        "staged itself enters the commit",
    ),
    "ignored-listed-before-forcing": (
        "src/git/ws_outputs.c",
        "    if (!rc && force && l) {",
        "    if (0) {",
        "unit.test_ws_outputs",
        "the ignored paths are reported as listed before a declared one was "
        "forced in: the forced file is named among those left out",
    ),
    "head-file-trusted": (
        "src/git/ws_worker.c",
        "           !ws_head_commit(gitdir, g->common_dir, head) && !strcmp(head, base);",
        "           (ws_head_commit(gitdir, g->common_dir, head), 1);",
        "unit.test_ws_outputs",
        "a worker takes HEAD for the base after the agent committed: the "
        "commit on top of the agent's fails its compare-and-swap",
    ),
    "head-ref-through-link": (
        "src/git/ws_heads.c",
        "                          O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK |",
        "                          O_RDONLY | O_DIRECTORY | O_NONBLOCK |",
        "unit.test_ws_outputs",
        "HEAD is read through a directory a task replaced by a link",
    ),
    "head-ref-garbage": (
        "src/git/ws_heads.c",
        "        (len != n && !(len == n + 1 && text[n] == '\\n')))",
        "        0)",
        "unit.test_ws_outputs",
        "a loose ref with text after the id is read as that id (git refuses it)",
    ),
    "head-clean-path-trusted": (
        "src/git/ws_worker.c",
        "    if (!rc && untouched && at_base)",
        "    if (!rc && untouched)",
        "unit.test_ws_outputs",
        "a task that declares nothing and leaves the tree clean has its "
        "agent's commits dropped: HEAD is taken for the base unread",
    ),
    "head-symref-loose": (
        "src/git/ws_heads.c",
        "        (len != j && !(len == j + 1 && text[j] == '\\n')))",
        "        0)",
        "unit.test_ws_outputs",
        "a HEAD git refuses (text after the ref's name) is read as the ref",
    ),
    "tree-of-other-tip": (
        "src/orch/orch_merge.c",
        "             strcmp(o->ws_tree_of, o->ws_tip) ? \"\" : o->ws_tip_tree);",
        "             o->ws_tip_tree);",
        "unit.test_orch_merge",
        "an assignment pairs the tip with the tree of another one",
    ),
    "base-tree-unsaid": (
        "src/git/ws_worker.c",
        "    if (at_base && base_tree && full_oid(base_tree))",
        "    if (0)",
        "unit.test_ws_outputs",
        "the assignment's base tree is never used: a rev-parse more a commit",
    ),
    "stop-pid-no-wait": (
        "src/cli/stop.c",
        "#define PID_WAIT_MS 2000",
        "#define PID_WAIT_MS 0",
        "integration.test_stop_pid_late",
        "a stop right after a rush took its lock finds no pid and stops "
        "nothing",
    ),
    "declared-never-ignored": (
        "src/git/ws_outputs.c",
        "            if (*p && (under(rel, p) || under(p, rel)))",
        "            if (0)",
        "unit.test_ws_outputs",
        "a declared file .gitignore ignores is never forced into the commit: "
        "the task's output is lost from its branch",
    ),
}

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, cwd, quiet=True):
    out = subprocess.DEVNULL if quiet else None
    return subprocess.run(cmd, cwd=cwd, stdout=out, stderr=out).returncode


def scratch_copy(dest):
    """The tracked and new files of the tree, without build directories."""
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    for rel in filter(None, (f.decode() for f in files)):
        src = os.path.join(ROOT, rel)
        if not os.path.isfile(src):
            continue
        dst = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(src, dst)


def check(tree, build, name):
    path, old, new, tests, what = MUTATIONS[name]
    full = os.path.join(tree, path)
    orig = open(full, encoding="utf-8").read()
    open(full, "w", encoding="utf-8").write(orig.replace(old, new))
    try:
        if run(["cmake", "--build", build, "-j2"], tree) != 0:
            return "caught (does not build)"
        rc = run(["ctest", "-R", tests, "--timeout", "300"], build)
        return "caught" if rc != 0 else None
    finally:
        open(full, "w", encoding="utf-8").write(orig)


def ci_window(n):
    """N mutations in table order from an offset set by the commit count
    (wrapping), so that the windows of consecutive commits cover the
    table.  Outside git the offset is 0."""
    names = list(MUTATIONS)
    try:
        count = int(subprocess.run(["git", "rev-list", "--count", "HEAD"],
                                   cwd=ROOT, capture_output=True, text=True,
                                   check=True).stdout.strip())
    except (OSError, subprocess.CalledProcessError, ValueError):
        count = 0
    n = max(1, min(n, len(names)))
    start = (count * n) % len(names)
    return [names[(start + i) % len(names)] for i in range(n)]


def main(argv):
    if "--list" in argv:
        for name, m in MUTATIONS.items():
            print(f"{name:16} {m[0]}: {m[4]}")
        return 0
    if argv[:1] == ["--ci"]:
        if len(argv) != 2 or not argv[1].isdigit():
            print("mutate: --ci takes a count", file=sys.stderr)
            return 2
        argv = ci_window(int(argv[1]))
        print(f"mutate: this commit's window: {' '.join(argv)}")
    names = argv or list(MUTATIONS)
    unknown = [n for n in names if n not in MUTATIONS]
    if unknown:
        print(f"mutate: unknown mutation(s): {' '.join(unknown)} "
              f"(--list shows them)", file=sys.stderr)
        return 2
    work = os.environ.get("MUTATE_DIR") or tempfile.mkdtemp(prefix="zmut.")
    tree, build = os.path.join(work, "src"), os.path.join(work, "build")
    shutil.rmtree(tree, ignore_errors=True)
    scratch_copy(tree)
    for name in names:
        path, old = MUTATIONS[name][0:2]
        text = open(os.path.join(tree, path), encoding="utf-8").read()
        if text.count(old) != 1:
            print(f"mutate: {name}: the text to mutate is not (exactly once) "
                  f"in {path}; update tests/mutate.py", file=sys.stderr)
            return 2
    if run(["cmake", "-S", tree, "-B", build, "-DCMAKE_BUILD_TYPE=Debug"],
           tree) != 0 or run(["cmake", "--build", build, "-j2"], tree) != 0:
        print("mutate: the unmutated copy does not build", file=sys.stderr)
        return 2
    survivors = []
    for name in names:
        verdict = check(tree, build, name)
        print(f"mutate: {name:16} {verdict or 'SURVIVED'}: "
              f"{MUTATIONS[name][4]}")
        if not verdict:
            survivors.append(name)
    if not os.environ.get("MUTATE_DIR"):
        shutil.rmtree(work, ignore_errors=True)
    if survivors:
        print(f"mutate: {len(survivors)} mutation(s) survived: "
              f"{' '.join(survivors)}", file=sys.stderr)
        return 1
    print(f"mutate: all {len(names)} mutation(s) caught")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
