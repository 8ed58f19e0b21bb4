/* test_orch_reconcile_git.c - the thorough reconciliation reading the
 * integration branch back (DESIGN §13 "Resume", src/orch/orch_reconcile.c),
 * over the fake workspace of orch_fixture.c.
 *
 * A complete task whose recorded commit the branch no longer holds (a
 * reset, a rewrite) runs again; one whose commit is there is left alone;
 * its dependents that already ran stay complete and the log says they may
 * need a rerun.  The branch is read once per thorough check, never on a
 * light one, and a branch git cannot read reruns nothing. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orch_fixture.h"
#include "zerg/err.h"
#include "zerg/orchestrator.h"

/* merged() counted, and made to fail on demand. */
static const struct zerg_workspace_ops *real_ops;
static struct zerg_workspace_ops counting_ops;
static int merged_calls, merged_fails;

static int counting_merged(struct zerg_workspace *w, zerg_ws_found_fn fn,
                           void *ud, struct zerg_err *err)
{
    merged_calls++;
    if (merged_fails)
        return zerg_err_set(err, ZERG_EGIT_FAILED, "fatal: bad revision");
    return real_ops->merged(w, fn, ud, err);
}

static void count_merged(struct fx *x)
{
    real_ops = x->ws->base.ops;
    counting_ops = *real_ops;
    counting_ops.merged = counting_merged;
    x->ws->base.ops = &counting_ops;
    merged_calls = merged_fails = 0;
}

/* The task's merges leave the branch, as `git update-ref` to an older
 * commit would do. */
static void drop_from_branch(struct fx *x, const char *task)
{
    for (int i = 0; i < x->ws->nmerges && i < FAKE_WS_MAX; i++)
        if (!strcmp(x->ws->merges[i].task, task))
            x->ws->merges[i].landed[0] = '\0';
}

static int has_event(struct fx *x, const char *needle)
{
    char *log = fx_events(x);
    int found = strstr(log, needle) != NULL;
    free(log);
    return found;
}

/* The slot's task runs and passes with a commit; one tick after. */
static void pass_slot(struct fx *x, const char *id)
{
    assert_string_equal(assign_of(x, 0).task, id);
    commit_slot(x, 0);
    assert_int_equal(status_of(x, id), ZERG_TASK_COMPLETE);
    tick(x);
}

/* graph3 on one worker, every task merged, the run over. */
static struct fx *run_all(void)
{
    struct fx *x = fx_new_ws(graph3, 1, 0);
    count_merged(x);
    start_ready(x);
    pass_slot(x, "A-L1-001");
    pass_slot(x, "A-L1-002");
    assert_int_equal(x->s.current_level, 2);
    pass_slot(x, "A-L2-001");
    finish_workers(x);
    assert_true(zerg_orch_done(x->o));
    assert_int_equal(zerg_orch_exit_code(x->o), ZERG_EXIT_OK);
    assert_int_equal(fake_ws_merges_of(x->ws, NULL), 3);
    return x;
}

/* The finished run's branch lost A-L1-001: --resume runs it again, only
 * it, and ends with all of the work on the branch. */
static void test_resume_reruns_task_whose_commit_is_gone(void **st)
{
    (void)st;
    struct fx *x = run_all();
    char kept[ZERG_OID_MAX];
    snprintf(kept, sizeof kept, "%s", task_of(x, "A-L1-002")->commit);
    drop_from_branch(x, "A-L1-001");
    fx_restart_run(x, 1, "run2");

    struct zerg_task_state *ts = task_of(x, "A-L1-001");
    assert_int_equal(ts->status, ZERG_TASK_PENDING);
    assert_string_equal(ts->commit, "");
    assert_int_equal(ts->completed_at_wall_ns, 0);
    assert_string_equal(ts->reason, "rerun");
    assert_true(tu_contains(ts->error, "is not on zerg/t/integration"));
    /* The ones the branch holds are left alone, the dependent too. */
    assert_int_equal(status_of(x, "A-L1-002"), ZERG_TASK_COMPLETE);
    assert_string_equal(task_of(x, "A-L1-002")->commit, kept);
    assert_int_equal(status_of(x, "A-L2-001"), ZERG_TASK_COMPLETE);
    assert_int_equal(x->s.current_level, 1);
    assert_int_equal(x->s.levels[1].status, ZERG_LEVEL_RUNNING);
    assert_true(has_event(x, "\"fix\":\"rerun\""));
    assert_true(has_event(x, "may need a rerun too: A-L2-001"));

    start_ready(x);
    struct zerg_assign a = assign_of(x, 0);
    assert_string_equal(a.task, "A-L1-001");
    assert_string_equal(a.base, fake_ws_tip(x->ws));
    pass_slot(x, "A-L1-001");
    assert_int_equal(fake_ws_merges_of(x->ws, "A-L1-001"), 2);
    assert_int_equal(fake_ws_merges_of(x->ws, "A-L1-002"), 1);
    assert_int_equal(fake_ws_merges_of(x->ws, "A-L2-001"), 1);
    assert_string_equal(task_of(x, "A-L1-001")->commit, fake_ws_tip(x->ws));
    finish_workers(x);
    assert_true(zerg_orch_done(x->o));
    assert_int_equal(zerg_orch_exit_code(x->o), ZERG_EXIT_OK);
    assert_string_equal(x->s.status, "complete");
    fx_free(x);
}

/* A branch holding every commit: a resume reruns nothing. */
static void test_resume_with_branch_intact_reruns_nothing(void **st)
{
    (void)st;
    struct fx *x = run_all();
    fx_restart_run(x, 1, "run2");
    for (size_t t = 0; t < x->g->ntasks; t++)
        assert_int_equal(x->s.tasks[t].status, ZERG_TASK_COMPLETE);
    assert_false(has_event(x, "\"fix\":\"rerun\""));
    fx_free(x);
}

/* Mid-run: the light check never reads the branch; the thorough one
 * reads it once and reopens the level the lost task belongs to. */
static void test_thorough_check_reads_branch_once(void **st)
{
    (void)st;
    struct fx *x = fx_new_ws(graph3, 1, 0);
    count_merged(x);
    start_ready(x);
    pass_slot(x, "A-L1-001");
    pass_slot(x, "A-L1-002");
    assert_int_equal(x->s.current_level, 2);
    assert_int_equal(x->s.levels[1].status, ZERG_LEVEL_COMPLETE);
    drop_from_branch(x, "A-L1-002");

    int calls = merged_calls;
    assert_int_equal(orch_reconcile(x->o, 0, x->now), 0);
    assert_int_equal(merged_calls, calls);
    assert_int_equal(status_of(x, "A-L1-002"), ZERG_TASK_COMPLETE);

    assert_int_equal(orch_reconcile(x->o, 1, x->now), 1);
    assert_int_equal(merged_calls, calls + 1);
    assert_int_equal(status_of(x, "A-L1-002"), ZERG_TASK_PENDING);
    assert_int_equal(status_of(x, "A-L1-001"), ZERG_TASK_COMPLETE);
    assert_int_equal(x->s.current_level, 1);
    assert_int_equal(x->s.levels[1].status, ZERG_LEVEL_RUNNING);
    assert_false(has_event(x, "may need a rerun too")); /* no dependents */

    /* The level-2 task in flight finishes; the lost one runs again and
     * the run ends with both levels merged. */
    pass_slot(x, "A-L2-001");
    pass_slot(x, "A-L1-002");
    assert_int_equal(fake_ws_merges_of(x->ws, "A-L1-002"), 2);
    finish_workers(x);
    assert_true(zerg_orch_done(x->o));
    assert_int_equal(zerg_orch_exit_code(x->o), ZERG_EXIT_OK);
    fx_free(x);
}

/* A branch git cannot read says nothing is missing. */
static void test_unreadable_branch_reruns_nothing(void **st)
{
    (void)st;
    struct fx *x = fx_new_ws(graph3, 1, 0);
    count_merged(x);
    start_ready(x);
    pass_slot(x, "A-L1-001");
    drop_from_branch(x, "A-L1-001");
    merged_fails = 1;
    assert_int_equal(orch_reconcile(x->o, 1, x->now), 0);
    assert_int_equal(merged_calls, 1);
    assert_int_equal(status_of(x, "A-L1-001"), ZERG_TASK_COMPLETE);
    assert_true(has_event(x, "\"event\":\"reconcile_error\""));
    assert_true(has_event(x, "fatal: bad revision"));
    fx_free(x);
}

/* A policy cannot throw away merged work: a rerun of a task whose commit
 * the branch holds is not applied. */
static void test_rerun_of_merged_task_not_applied(void **st)
{
    (void)st;
    struct fx *x = fx_new_ws(graph3, 1, 0);
    fx_policies(x, "reconcile.lua",
                "return {check = function(s)\n"
                "  local t = s.tasks['A-L1-001']\n"
                "  if s.thorough and t and t.status == 'complete' then\n"
                "    return {{task = 'A-L1-001', fix = 'rerun',\n"
                "             reason = 'wanted'}}\n"
                "  end\n"
                "  return {}\n"
                "end}\n");
    start_ready(x);
    pass_slot(x, "A-L1-001");
    assert_int_equal(orch_reconcile(x->o, 1, x->now), 0);
    assert_int_equal(zerg_policy_error_count(x->pol), 0); /* it ran */
    assert_int_equal(status_of(x, "A-L1-001"), ZERG_TASK_COMPLETE);
    assert_string_not_equal(task_of(x, "A-L1-001")->commit, "");
    assert_false(has_event(x, "\"fix\":\"rerun\""));
    fx_free(x);
}

/* Without worktree isolation there is no branch to read. */
static void test_isolation_none_reruns_nothing(void **st)
{
    (void)st;
    struct fx *x = fx_new(graph3, 1, 0);
    start_ready(x);
    complete_slot(x, 0);
    snprintf(task_of(x, "A-L1-001")->commit, sizeof x->s.tasks[0].commit, "%s",
             "0123456789abcdef0123456789abcdef01234567");
    assert_int_equal(orch_reconcile(x->o, 1, x->now), 0);
    assert_int_equal(status_of(x, "A-L1-001"), ZERG_TASK_COMPLETE);
    fx_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resume_reruns_task_whose_commit_is_gone),
        cmocka_unit_test(test_resume_with_branch_intact_reruns_nothing),
        cmocka_unit_test(test_thorough_check_reads_branch_once),
        cmocka_unit_test(test_unreadable_branch_reruns_nothing),
        cmocka_unit_test(test_rerun_of_merged_task_not_applied),
        cmocka_unit_test(test_isolation_none_reruns_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
