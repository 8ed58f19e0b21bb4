/* test_orch_merge.c - the merge queue of worktree isolation (DESIGN §13,
 * src/orch/orch_merge.c), over the fake workspace of orch_fixture.c.
 *
 * A passing task is complete only once its commit is on the integration
 * branch; the next assignment starts from the new tip; a conflict is kept,
 * retried on its own budget and holds its level open; a broken repository
 * ends the run; on resume what git already holds is adopted, never run or
 * merged twice; paths outside a task's files go to the scope policy, and
 * so do zerg's configuration changed and declared outputs missing. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orch_fixture.h"
#include "zerg/err.h"
#include "zerg/orchestrator.h"
#include "zerg/protocol.h"

/* The slot running task id, or -1. */
static int slot_of(struct fx *x, const char *id)
{
    for (int i = 0; i < x->o->nslots; i++)
        if (x->o->slots[i].task >= 0 &&
            !strcmp(x->g->tasks[x->o->slots[i].task].id, id))
            return i;
    return -1;
}

static void assert_event(struct fx *x, const char *needle)
{
    char *log = fx_events(x);
    assert_true(tu_contains(log, needle));
    free(log);
}

static int has_event(struct fx *x, const char *needle)
{
    char *log = fx_events(x);
    int found = strstr(log, needle) != NULL;
    free(log);
    return found;
}

static void tip_is(char buf[ZERG_OID_MAX], int n)
{
    fake_ws_oid(buf, n);
}

/* ---- merge, then complete ---- */

static void test_commit_merged_before_complete(void **st)
{
    (void)st;
    char tip[ZERG_OID_MAX], commit[ZERG_OID_MAX];
    struct fx *x = fx_new_ws(graph3, 1, 0);
    start_ready(x);
    /* The slot's worktree came from the workspace, and the first attempt
     * starts from the tip read when the rush began. */
    assert_int_equal(x->ws->nworktrees, 1);
    assert_int_equal(x->ws->worktree_slots[0], 0);
    assert_true(tu_contains(x->fake.last_workspace, "/.zerg-worktrees/t/"
                                                    "worker-0"));
    tip_is(tip, 1);
    assert_string_equal(assign_of(x, 0).base, tip);
    assert_string_equal(assign_of(x, 0).base_tree, ""); /* not known yet */
    assert_string_equal(assign_of(x, 0).task, "A-L1-001");

    int t = commit_slot(x, 0);
    fake_commit_oid(commit, "A-L1-001", 1);
    assert_int_equal(x->ws->nmerges, 1);
    const struct fake_merge_call *m = &x->ws->merges[0];
    assert_string_equal(m->task, "A-L1-001");
    assert_int_equal(m->attempt, 1);
    assert_int_equal(m->worker, 0);
    assert_string_equal(m->commit, commit);
    assert_string_equal(m->run_id, "run1");
    /* Merged while still running, complete only after. */
    assert_int_equal(m->status, ZERG_TASK_IN_PROGRESS);
    assert_int_equal(x->s.tasks[t].status, ZERG_TASK_COMPLETE);
    tip_is(tip, 2);
    assert_string_equal(x->s.tasks[t].commit, tip);
    /* A task naming no files has no scope to check, but its changes are
     * listed all the same: one may be zerg's own configuration. */
    assert_int_equal(x->ws->nchanged, 1);
    assert_event(x, "\"event\":\"merge_complete\"");

    /* The next attempt starts from the tip holding the merge. */
    tick(x);
    struct zerg_assign a = assign_of(x, 0);
    assert_string_equal(a.task, "A-L1-002");
    assert_string_equal(a.base, tip);
    char tree[ZERG_OID_MAX];
    fake_ws_tree(tree, 2); /* the merge said the tip's tree: passed on */
    assert_string_equal(a.base_tree, tree);

    /* The branch read again and found elsewhere: that tree is not its. */
    struct zerg_err err = {0};
    x->ws->tip_n = 7;
    assert_int_equal(orch_ws_refresh_tip(x->o, &err), 0);
    struct zerg_assign b = {0};
    orch_ws_assign_base(x->o, &b);
    fake_ws_oid(tip, 7);
    assert_string_equal(b.base, tip);
    assert_string_equal(b.base_tree, "");
    x->ws->tip_n = 2; /* back where the merge left it: its tree again */
    assert_int_equal(orch_ws_refresh_tip(x->o, &err), 0);
    orch_ws_assign_base(x->o, &b);
    assert_string_equal(b.base_tree, tree);
    fx_free(x);
}

static void test_no_commit_completes_without_merge(void **st)
{
    (void)st;
    char tip[ZERG_OID_MAX];
    struct fx *x = fx_new_ws(graph3, 1, 0);
    start_ready(x);
    complete_slot(x, 0); /* a result with no commit: nothing changed */
    assert_int_equal(x->ws->nmerges, 0);
    assert_int_equal(x->ws->nchanged, 0);
    assert_int_equal(x->ws->nkeeps, 0);
    assert_int_equal(status_of(x, "A-L1-001"), ZERG_TASK_COMPLETE);
    assert_false(has_event(x, "\"event\":\"merge_complete\""));
    tick(x);
    tip_is(tip, 1);
    assert_string_equal(assign_of(x, 0).base, tip);
    fx_free(x);
}

static void test_already_merged_counts(void **st)
{
    (void)st;
    char tip[ZERG_OID_MAX];
    struct fx *x = fx_new_ws(graph3, 1, 0);
    fake_ws_script(x->ws, "A-L1-001", FAKE_MERGE_ALREADY, NULL);
    start_ready(x);
    commit_slot(x, 0);
    assert_int_equal(x->ws->nmerges, 1);
    assert_int_equal(status_of(x, "A-L1-001"), ZERG_TASK_COMPLETE);
    tip_is(tip, 1);
    assert_string_equal(task_of(x, "A-L1-001")->commit, tip);
    assert_event(x, "\"already\":true");
    fx_free(x);
}

/* ---- conflicts ---- */

static void test_conflict_kept_and_requeued_uncharged(void **st)
{
    (void)st;
    char tip[ZERG_OID_MAX], commit[ZERG_OID_MAX];
    struct fx *x = fx_new_ws(graph3, 1, 0);
    fake_ws_script(x->ws, "A-L1-001", FAKE_MERGE_CONFLICT,
                   "src/a.c\nsrc/b.c\n");
    start_ready(x);
    commit_slot(x, 0);
    fake_commit_oid(commit, "A-L1-001", 1);
    struct zerg_task_state *ts = task_of(x, "A-L1-001");
    assert_int_equal(x->ws->nmerges, 1);
    assert_int_not_equal(ts->status, ZERG_TASK_COMPLETE);
    assert_int_equal(ts->status, ZERG_TASK_PENDING);
    assert_int_equal(ts->retry_count, 0);
    assert_int_equal(ts->conflict_count, 1);
    assert_non_null(ts->conflict_paths);
    assert_true(tu_contains(ts->conflict_paths, "src/a.c"));
    assert_true(tu_contains(ts->conflict_paths, "src/b.c"));
    assert_int_equal(x->ws->nkeeps, 1);
    assert_string_equal(x->ws->keeps[0].task, "A-L1-001");
    assert_int_equal(x->ws->keeps[0].attempt, 1);
    assert_string_equal(x->ws->keeps[0].commit, commit);
    assert_event(x, "\"event\":\"merge_conflict\"");
    /* The log escapes slashes. */
    assert_event(x, "\"ref\":\"refs/zerg/t/conflicts/A-L1-001/1\"");
    assert_false(has_event(x, "\"event\":\"task_complete\""));

    /* It runs again, on the tip (unchanged: nothing was merged). */
    tick(x);
    assert_int_equal(status_of(x, "A-L1-001"), ZERG_TASK_CLAIMED);
    struct zerg_assign a = assign_of(x, 0);
    assert_string_equal(a.task, "A-L1-001");
    assert_int_equal(a.attempt, 2);
    tip_is(tip, 1);
    assert_string_equal(a.base, tip);
    commit_slot(x, 0);
    assert_int_equal(status_of(x, "A-L1-001"), ZERG_TASK_COMPLETE);
    assert_int_equal(ts->retry_count, 0);
    assert_int_equal(fake_ws_merges_of(x->ws, "A-L1-001"), 2);
    fx_free(x);
}

static void test_conflict_budget_exhausted_fails(void **st)
{
    (void)st;
    struct fx *x = fx_new_ws(graph3, 1, 0);
    x->cfg.conflict_retry_attempts = 1;
    fake_ws_script(x->ws, "A-L1-001", FAKE_MERGE_CONFLICT, "src/a.c\n");
    fake_ws_script(x->ws, "A-L1-001", FAKE_MERGE_CONFLICT, "src/a.c\n");
    start_ready(x);
    commit_slot(x, 0);
    assert_int_equal(status_of(x, "A-L1-001"), ZERG_TASK_PENDING);
    tick(x);
    assert_string_equal(assign_of(x, 0).task, "A-L1-001");
    commit_slot(x, 0);
    struct zerg_task_state *ts = task_of(x, "A-L1-001");
    assert_int_equal(ts->status, ZERG_TASK_FAILED);
    assert_string_equal(ts->reason, "conflict");
    assert_non_null(ts->error);
    assert_true(tu_contains(ts->error, "workers.conflict_retry_attempts"));
    assert_true(tu_contains(ts->error, "src/a.c"));
    assert_int_equal(ts->conflict_count, 2);
    assert_int_equal(ts->retry_count, 0);
    assert_int_equal(x->ws->nkeeps, 2);
    assert_int_equal(x->ws->keeps[1].attempt, 2);
    tick(x);
    assert_int_equal(status_of(x, "A-L2-001"), ZERG_TASK_BLOCKED);
    fx_free(x);
}

/* A conflicted task keeps its level open: the next level starts only from
 * a tip holding all of this one. */
static void test_level_waits_for_every_merge(void **st)
{
    (void)st;
    char tip[ZERG_OID_MAX];
    struct fx *x = fx_new_ws(graph3, 2, 0);
    fake_ws_script(x->ws, "A-L1-001", FAKE_MERGE_CONFLICT, "README.md\n");
    start_ready(x);
    int s1 = slot_of(x, "A-L1-001"), s2 = slot_of(x, "A-L1-002");
    assert_true(s1 >= 0 && s2 >= 0);
    commit_slot(x, s1);
    commit_slot(x, s2);
    assert_int_equal(status_of(x, "A-L1-002"), ZERG_TASK_COMPLETE);
    tick(x);
    assert_int_equal(x->s.current_level, 1);
    assert_int_not_equal(x->s.levels[1].status, ZERG_LEVEL_COMPLETE);
    assert_int_equal(status_of(x, "A-L2-001"), ZERG_TASK_PENDING);
    /* The conflicted task runs again, from the tip with A-L1-002. */
    assert_int_equal(status_of(x, "A-L1-001"), ZERG_TASK_CLAIMED);
    s1 = slot_of(x, "A-L1-001");
    tip_is(tip, 2);
    assert_string_equal(assign_of(x, s1).base, tip);
    tick(x);
    assert_int_equal(status_of(x, "A-L2-001"), ZERG_TASK_PENDING);
    commit_slot(x, s1);
    tick(x);
    assert_int_equal(x->s.current_level, 2);
    assert_int_equal(status_of(x, "A-L2-001"), ZERG_TASK_CLAIMED);
    int s3 = slot_of(x, "A-L2-001");
    tip_is(tip, 3);
    assert_string_equal(assign_of(x, s3).base, tip);
    fx_free(x);
}

/* ---- a broken repository ---- */

static void test_permanent_merge_error_fails_run(void **st)
{
    (void)st;
    struct fx *x = fx_new_ws(graph3, 1, 0);
    fake_ws_script(x->ws, "A-L1-001", FAKE_MERGE_ERROR,
                   "fatal: bad object c0c0");
    start_ready(x);
    commit_slot(x, 0);
    assert_int_equal(status_of(x, "A-L1-001"), ZERG_TASK_FAILED);
    assert_string_equal(task_of(x, "A-L1-001")->reason, "merge_error");
    tick(x);
    assert_int_equal(status_of(x, "A-L1-002"), ZERG_TASK_PENDING);
    for (int i = 0; i < 5 && !zerg_orch_done(x->o); i++) {
        finish_workers(x);
        advance(x, 1);
    }
    assert_true(zerg_orch_done(x->o));
    assert_int_equal(zerg_orch_exit_code(x->o), ZERG_EXIT_FAIL);
    assert_non_null(x->s.error);
    assert_true(tu_contains(x->s.error, "fatal: bad object c0c0"));
    assert_true(tu_contains(x->s.error, "zerg/t/integration"));
    assert_int_equal(x->ws->nmerges, 1);
    fx_free(x);
}

/* ---- resume ---- */

static void test_resume_adopts_merged_task(void **st)
{
    (void)st;
    char oid[ZERG_OID_MAX];
    struct fx *x = fx_new_ws(graph3, 1, 0);
    orch_checkpoint(x->o, x->now, 1); /* all pending on disk */
    fake_ws_oid(oid, 7);
    fake_ws_found(x->ws, -1, "A-L1-001", 1, "run1", oid);
    x->ws->tip_n = 7;
    fx_restart_run(x, 1, "run2");
    assert_int_equal(status_of(x, "A-L1-001"), ZERG_TASK_COMPLETE);
    assert_string_equal(task_of(x, "A-L1-001")->commit, oid);
    assert_int_equal(x->ws->nmerges, 0);
    start_ready(x);
    struct zerg_assign a = assign_of(x, 0);
    assert_string_equal(a.task, "A-L1-002");
    assert_string_equal(a.base, oid);
    assert_int_equal(task_of(x, "A-L1-001")->attempt, 1);
    assert_int_equal(x->ws->nmerges, 0);
    fx_free(x);
}

/* The checkpoint caught attempt 1 running; it crashed, attempt 2 was
 * claimed, merged, and the orchestrator died before the next checkpoint.
 * On resume the branch's commit of attempt 2 makes the task complete at
 * attempt 2: the record of attempt 1 (its epoch) does not stand. */
static void test_resume_adopts_a_newer_merged_attempt(void **st)
{
    (void)st;
    char oid[ZERG_OID_MAX];
    struct fx *x = fx_new_ws(graph3, 1, 0);
    start_ready(x);
    assert_int_equal(task_of(x, "A-L1-001")->attempt, 1);
    assert_true(task_of(x, "A-L1-001")->epoch != 0);
    orch_checkpoint(x->o, x->now, 1);
    fake_ws_oid(oid, 7);
    fake_ws_found(x->ws, -1, "A-L1-001", 2, "run1", oid);
    x->ws->tip_n = 7;
    fx_restart_run(x, 1, "run2");
    assert_int_equal(status_of(x, "A-L1-001"), ZERG_TASK_COMPLETE);
    assert_int_equal(task_of(x, "A-L1-001")->attempt, 2);
    assert_true(task_of(x, "A-L1-001")->epoch == 0);
    assert_string_equal(task_of(x, "A-L1-001")->commit, oid);
    assert_int_equal(x->ws->nmerges, 0);
    fx_free(x);
}

static void test_resume_merges_committed_head(void **st)
{
    (void)st;
    char c0[ZERG_OID_MAX], c1[ZERG_OID_MAX], tip[ZERG_OID_MAX];
    struct fx *x = fx_new_ws(graph3, 2, 0);
    start_ready(x);
    const char *t0 = x->g->tasks[x->o->slots[0].task].id;
    const char *t1 = x->g->tasks[x->o->slots[1].task].id;
    heartbeat(x, 0, t0, 1, "command", 10);
    heartbeat(x, 1, t1, 1, "command", 10);
    orch_checkpoint(x->o, x->now, 1);
    /* Both committed; the orchestrator died before either result came.
     * Slot 1's head is a commit of another run: stale, not work. */
    fake_commit_oid(c0, t0, 1);
    fake_commit_oid(c1, t1, 1);
    fake_ws_found(x->ws, 0, t0, 1, "run1", c0);
    fake_ws_found(x->ws, 1, t1, 1, "run0-other", c1);
    fx_restart_run(x, 2, "run2");
    assert_int_equal(status_of(x, t0), ZERG_TASK_COMPLETE);
    assert_int_equal(fake_ws_merges_of(x->ws, t0), 1);
    assert_string_equal(x->ws->merges[0].commit, c0);
    assert_int_equal(x->ws->merges[0].attempt, 1);
    tip_is(tip, 2);
    assert_string_equal(task_of(x, t0)->commit, tip);
    assert_int_equal(fake_ws_merges_of(x->ws, t1), 0);
    assert_int_not_equal(status_of(x, t1), ZERG_TASK_COMPLETE);
    assert_int_equal(task_of(x, t1)->retry_count, 0);
    /* The new run starts the other task again from the new tip. */
    start_ready(x);
    assert_int_equal(status_of(x, t1), ZERG_TASK_CLAIMED);
    int s = slot_of(x, t1);
    assert_true(s >= 0);
    assert_string_equal(assign_of(x, s).base, tip);
    assert_int_equal(fake_ws_merges_of(x->ws, NULL), 1);
    fx_free(x);
}

/* The claim of the committed attempt never reached a checkpoint: the
 * state on disk still has the task pending, one attempt behind the
 * commit at the worker branch's head.  It is merged, not run again; a
 * head one attempt behind a pending task (judged, then requeued) is not. */
static void test_resume_merges_head_of_unsaved_claim(void **st)
{
    (void)st;
    char c0[ZERG_OID_MAX], path[400];
    struct fx *x = fx_new_ws(graph3, 2, 0);
    orch_checkpoint(x->o, x->now, 1); /* every task pending, attempt 0 */
    snprintf(path, sizeof path, "%s/t.json", x->state_dir);
    char *saved = tu_read(path);
    start_ready(x);
    const char *t0 = x->g->tasks[x->o->slots[0].task].id;
    const char *t1 = x->g->tasks[x->o->slots[1].task].id;
    assert_int_equal(task_of(x, t0)->attempt, 1);
    /* What a power cut right after the claims leaves: the old file. */
    FILE *f = fopen(path, "w");
    fputs(saved, f);
    fclose(f);
    free(saved);
    fake_commit_oid(c0, t0, 1);
    fake_ws_found(x->ws, 0, t0, 1, "run1", c0);
    fake_ws_found(x->ws, 1, t1, 0, "run1", c0); /* attempt 0: not work */
    fx_restart_run(x, 2, "run2");
    assert_int_equal(status_of(x, t0), ZERG_TASK_COMPLETE);
    assert_int_equal(fake_ws_merges_of(x->ws, t0), 1);
    assert_int_equal(x->ws->merges[0].attempt, 1);
    assert_int_equal(fake_ws_merges_of(x->ws, t1), 0);
    assert_int_equal(status_of(x, t1), ZERG_TASK_PENDING);
    fx_free(x);
}

/* ---- scope ---- */

static const char graph_files[] =
    "{\"feature\":\"t\",\"tasks\":["
    "{\"id\":\"A-L1-001\",\"level\":1,\"command\":\"true\","
    "\"files\":{\"modify\":[\"src/a.c\"],\"create\":[\"src/new/\"]}},"
    "{\"id\":\"A-L1-002\",\"level\":1,\"command\":\"true\"}]}";

static void test_scope_warns_and_merges(void **st)
{
    (void)st;
    char tip[ZERG_OID_MAX], commit[ZERG_OID_MAX];
    struct fx *x = fx_new_ws(graph_files, 1, 0);
    snprintf(x->ws->changed, sizeof x->ws->changed,
             "src/a.c\nsrc/new/x.c\nMakefile\n");
    start_ready(x);
    assert_string_equal(assign_of(x, 0).task, "A-L1-001");
    commit_slot(x, 0);
    assert_int_equal(x->ws->nchanged, 1);
    fake_commit_oid(commit, "A-L1-001", 1);
    tip_is(tip, 1);
    assert_string_equal(x->ws->changed_commit, commit);
    assert_string_equal(x->ws->changed_base, tip);
    assert_event(x, "\"event\":\"scope_violation\"");
    assert_event(x, "Makefile");
    /* Only Makefile: src/new/x.c is under a listed directory. */
    assert_event(x, "changed 1 path outside its files (Makefile)");
    assert_int_equal(x->ws->nmerges, 1);
    assert_int_equal(status_of(x, "A-L1-001"), ZERG_TASK_COMPLETE);
    fx_free(x);
}

static void test_scope_in_bounds_is_silent(void **st)
{
    (void)st;
    struct fx *x = fx_new_ws(graph_files, 1, 0);
    snprintf(x->ws->changed, sizeof x->ws->changed, "src/a.c\nsrc/new/b.c\n");
    start_ready(x);
    commit_slot(x, 0);
    assert_int_equal(x->ws->nchanged, 1);
    assert_false(has_event(x, "\"event\":\"scope_violation\""));
    assert_int_equal(status_of(x, "A-L1-001"), ZERG_TASK_COMPLETE);
    fx_free(x);
}

static void test_scope_policy_fail_skips_merge(void **st)
{
    (void)st;
    struct fx *x = fx_new_ws(graph_files, 1, 0);
    fx_policies(x, "scope.lua",
                "local M = {}\n"
                "function M.decide(task, paths, opts)\n"
                "    return \"fail\", \"strict: \" .. paths[1]\n"
                "end\n"
                "return M\n");
    snprintf(x->ws->changed, sizeof x->ws->changed, "src/a.c\nMakefile\n");
    start_ready(x);
    assert_string_equal(assign_of(x, 0).task, "A-L1-001");
    commit_slot(x, 0);
    struct zerg_task_state *ts = task_of(x, "A-L1-001");
    assert_int_equal(x->ws->nchanged, 1);
    assert_int_equal(x->ws->nmerges, 0);
    assert_int_not_equal(ts->status, ZERG_TASK_COMPLETE);
    assert_int_equal(ts->retry_count, 1); /* charged */
    assert_non_null(ts->error);
    assert_true(tu_contains(ts->error, "Makefile"));
    assert_event(x, "\"event\":\"scope_violation\"");
    assert_event(x, "strict: Makefile");
    fx_free(x);
}

/* The worker's result reached the disk too: it is the journal replayed
 * after the branch was read back, and must not merge a second time. */
static void test_resume_head_and_result_merge_once(void **st)
{
    (void)st;
    char c0[ZERG_OID_MAX], base[ZERG_OID_MAX];
    struct fx *x = fx_new_ws(graph3, 1, 0);
    start_ready(x);
    heartbeat(x, 0, "A-L1-001", 1, "command", 10);
    orch_checkpoint(x->o, x->now, 1);
    fake_commit_oid(c0, "A-L1-001", 1);
    tip_is(base, 1);
    struct zerg_result r = {.epoch = x->o->slots[0].proc.epoch,
                            .worker_id = 0,
                            .attempt = 1,
                            .outcome = ZERG_OUTCOME_COMPLETE};
    snprintf(r.task, sizeof r.task, "A-L1-001");
    snprintf(r.stage, sizeof r.stage, "command");
    snprintf(r.base, sizeof r.base, "%s", base);
    snprintf(r.commit, sizeof r.commit, "%s", c0);
    assert_int_equal(zerg_proto_write_result(x->run_dir, &r, NULL), 0);
    fake_ws_found(x->ws, 0, "A-L1-001", 1, "run1", c0);
    fx_restart_run(x, 1, "run2");
    assert_int_equal(status_of(x, "A-L1-001"), ZERG_TASK_COMPLETE);
    assert_int_equal(fake_ws_merges_of(x->ws, "A-L1-001"), 1);
    fx_free(x);
}

/* An attempt whose merge conflicted was judged: its commit, still at the
 * head of the worker branch, is not merged again on resume (that would
 * charge the same conflict twice, or merge what was refused). */
static void test_resume_conflicted_head_not_merged_again(void **st)
{
    (void)st;
    char c0[ZERG_OID_MAX];
    struct fx *x = fx_new_ws(graph3, 1, 0);
    fake_ws_script(x->ws, "A-L1-001", FAKE_MERGE_CONFLICT, "src/a.c\n");
    fake_ws_script(x->ws, "A-L1-001", FAKE_MERGE_CONFLICT, "src/a.c\n");
    start_ready(x);
    commit_slot(x, 0);
    assert_int_equal(status_of(x, "A-L1-001"), ZERG_TASK_PENDING);
    assert_int_equal(task_of(x, "A-L1-001")->conflict_count, 1);
    orch_checkpoint(x->o, x->now, 1);
    fake_commit_oid(c0, "A-L1-001", 1);
    fake_ws_found(x->ws, 0, "A-L1-001", 1, "run1", c0);
    fx_restart_run(x, 1, "run2");
    assert_int_equal(fake_ws_merges_of(x->ws, "A-L1-001"), 1);
    assert_int_equal(x->ws->nkeeps, 1);
    assert_int_equal(task_of(x, "A-L1-001")->conflict_count, 1);
    assert_int_equal(status_of(x, "A-L1-001"), ZERG_TASK_PENDING);
    fx_free(x);
}

/* An attempt the scope policy failed is not merged on resume either. */
static void test_resume_scope_failed_head_not_merged(void **st)
{
    (void)st;
    char c0[ZERG_OID_MAX];
    struct fx *x = fx_new_ws(graph_files, 1, 0);
    fx_policies(x, "scope.lua",
                "return {decide = function() return \"fail\", \"no\" end}\n");
    snprintf(x->ws->changed, sizeof x->ws->changed, "Makefile\n");
    start_ready(x);
    commit_slot(x, 0);
    assert_int_equal(x->ws->nmerges, 0);
    assert_int_equal(task_of(x, "A-L1-001")->retry_count, 1);
    orch_checkpoint(x->o, x->now, 1);
    fake_commit_oid(c0, "A-L1-001", 1);
    fake_ws_found(x->ws, 0, "A-L1-001", 1, "run1", c0);
    fx_restart_run(x, 1, "run2");
    assert_int_equal(x->ws->nmerges, 0);
    assert_int_not_equal(status_of(x, "A-L1-001"), ZERG_TASK_COMPLETE);
    fx_free(x);
}

/* Nor is the last attempt of a task failed for its conflicts: the
 * integration branch never takes the work of a failed task. */
static void test_resume_failed_head_not_merged(void **st)
{
    (void)st;
    char c1[ZERG_OID_MAX];
    struct fx *x = fx_new_ws(graph3, 1, 0);
    x->cfg.conflict_retry_attempts = 0;
    fake_ws_script(x->ws, "A-L1-001", FAKE_MERGE_CONFLICT, "src/a.c\n");
    start_ready(x);
    commit_slot(x, 0);
    assert_int_equal(status_of(x, "A-L1-001"), ZERG_TASK_FAILED);
    orch_checkpoint(x->o, x->now, 1);
    fake_commit_oid(c1, "A-L1-001", 1);
    fake_ws_found(x->ws, 0, "A-L1-001", 1, "run1", c1);
    fx_restart_run(x, 1, "run2");
    assert_int_equal(fake_ws_merges_of(x->ws, "A-L1-001"), 1);
    assert_int_equal(x->ws->tip_n, 1);
    assert_int_equal(status_of(x, "A-L1-001"), ZERG_TASK_FAILED);
    fx_free(x);
}

/* ---- outputs (DESIGN §18, src/orch/orch_outputs.c) --------------------- */

/* The summary lines zerg_orch_notes prints, malloc'd. */
static char *notes_of(struct fx *x)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    zerg_orch_notes(x->o, f);
    fclose(f);
    return buf;
}

/* A change to zerg's own configuration is merged, logged and named in
 * the summary; a wiki page beside it is not configuration. */
static void test_config_change_flagged(void **st)
{
    (void)st;
    struct fx *x = fx_new_ws(graph_files, 1, 0);
    snprintf(x->ws->changed, sizeof x->ws->changed,
             "src/a.c\n.zerg/config.yaml\n.zerg/wiki/page.md\n");
    start_ready(x);
    commit_slot(x, 0);
    assert_int_equal(x->ws->nmerges, 1);
    assert_int_equal(status_of(x, "A-L1-001"), ZERG_TASK_COMPLETE);
    assert_event(x, "\"event\":\"config_change\"");
    char *notes = notes_of(x);
    assert_true(tu_contains(notes, "Task A-L1-001: changes zerg's own "
                                   "configuration: review before merging "
                                   "(.zerg/config.yaml).\n"));
    free(notes);
    fx_free(x);
}

/* A project that refuses it: the attempt fails, charged, nothing merged. */
static void test_config_change_fail(void **st)
{
    (void)st;
    struct fx *x = fx_new_ws(graph_files, 1, 0);
    fx_policies(x, "scope.lua",
                "return {config = function(t, p) return 'fail', "
                "'no config from tasks: ' .. p[1] end}\n");
    snprintf(x->ws->changed, sizeof x->ws->changed,
             "src/a.c\n.zerg/policies/retry.lua\n");
    start_ready(x);
    commit_slot(x, 0);
    struct zerg_task_state *ts = task_of(x, "A-L1-001");
    assert_int_equal(x->ws->nmerges, 0);
    assert_int_not_equal(ts->status, ZERG_TASK_COMPLETE);
    assert_int_equal(ts->retry_count, 1);
    assert_true(tu_contains(ts->error, "no config from tasks: "
                                       ".zerg/policies/retry.lua"));
    char *notes = notes_of(x);
    assert_string_equal(notes, "");
    free(notes);
    fx_free(x);
}

/* A result of the running attempt of slot 0 with missing and ignored
 * paths, applied. */
static void result_outputs(struct fx *x, const char *missing,
                           const char *ignored)
{
    int t = x->o->slots[0].task;
    const char *id = x->g->tasks[t].id;
    int attempt = x->s.tasks[t].attempt;
    struct zerg_result r = {.epoch = x->o->slots[0].proc.epoch,
                            .attempt = attempt,
                            .outcome = ZERG_OUTCOME_COMPLETE};
    snprintf(r.task, sizeof r.task, "%s", id);
    snprintf(r.stage, sizeof r.stage, "verification");
    snprintf(r.base, sizeof r.base, "%s", assign_of(x, 0).base);
    fake_commit_oid(r.commit, id, attempt);
    if (missing)
        zerg_path_list_add(&r.missing, missing);
    if (ignored)
        zerg_path_list_add(&r.ignored, ignored);
    heartbeat(x, 0, id, attempt, "command", 10);
    assert_int_equal(zerg_proto_write_result(x->run_dir, &r, NULL), 0);
    char name[128];
    snprintf(name, sizeof name, "result-%s-%d.json", id, attempt);
    zerg_orch_file_changed(x->o, name, x->now);
}

/* A declared output never made fails the attempt as missing_output,
 * charged like a task failure and retried; the retry that makes it
 * completes, and what it left out ignored is counted. */
static void test_missing_output_retried(void **st)
{
    (void)st;
    static const char graph_one[] =
        "{\"feature\":\"t\",\"tasks\":["
        "{\"id\":\"A-L1-001\",\"level\":1,\"command\":\"true\","
        "\"files\":{\"create\":[\"src/new/\"]}}]}";
    struct fx *x = fx_new_ws(graph_one, 1, 0);
    x->cfg.backoff_base_ns = S(1);
    start_ready(x);
    assert_string_equal(assign_of(x, 0).task, "A-L1-001");
    result_outputs(x, "src/new/", NULL);
    struct zerg_task_state *ts = task_of(x, "A-L1-001");
    assert_int_equal(x->ws->nmerges, 0);
    assert_int_equal(ts->status, ZERG_TASK_WAITING_RETRY);
    assert_int_equal(ts->retry_count, 1);
    assert_true(tu_contains(ts->error, "missing_output: files.create not "
                                       "made: src/new/"));
    assert_event(x, "\"event\":\"missing_output\"");
    advance(x, 1.5);
    assert_int_equal(slot_of(x, "A-L1-001"), 0);
    assert_int_equal(assign_of(x, 0).attempt, 2);
    result_outputs(x, NULL, "cache/");
    assert_int_equal(ts->status, ZERG_TASK_COMPLETE);
    assert_int_equal(x->ws->nmerges, 1);
    assert_event(x, "\"event\":\"output_ignored\"");
    char *notes = notes_of(x);
    assert_true(tu_contains(notes, "1 ignored path was left out of the "
                                   "commits of 1 task, not declared "
                                   "(cache/)"));
    free(notes);
    fx_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commit_merged_before_complete),
        cmocka_unit_test(test_no_commit_completes_without_merge),
        cmocka_unit_test(test_already_merged_counts),
        cmocka_unit_test(test_conflict_kept_and_requeued_uncharged),
        cmocka_unit_test(test_conflict_budget_exhausted_fails),
        cmocka_unit_test(test_level_waits_for_every_merge),
        cmocka_unit_test(test_permanent_merge_error_fails_run),
        cmocka_unit_test(test_resume_adopts_merged_task),
        cmocka_unit_test(test_resume_adopts_a_newer_merged_attempt),
        cmocka_unit_test(test_resume_merges_committed_head),
        cmocka_unit_test(test_resume_merges_head_of_unsaved_claim),
        cmocka_unit_test(test_scope_warns_and_merges),
        cmocka_unit_test(test_scope_in_bounds_is_silent),
        cmocka_unit_test(test_scope_policy_fail_skips_merge),
        cmocka_unit_test(test_resume_head_and_result_merge_once),
        cmocka_unit_test(test_resume_conflicted_head_not_merged_again),
        cmocka_unit_test(test_resume_scope_failed_head_not_merged),
        cmocka_unit_test(test_resume_failed_head_not_merged),
        cmocka_unit_test(test_config_change_flagged),
        cmocka_unit_test(test_config_change_fail),
        cmocka_unit_test(test_missing_output_retried),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
