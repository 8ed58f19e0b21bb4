/* test_orch_review.c - review before merge (rush.review, DESIGN §21,
 * src/orch/orch_review.c) over the fake workspace of orch_fixture.c.
 *
 * A passing commit is kept at its review ref and its task waits, not
 * merged and not terminal (its dependent waits, its worker takes other
 * work); an approval merges it through the queue; a redo runs it again,
 * uncharged, with the note in the next assignment; an approved commit
 * that conflicts goes back with its conflict; a request for another
 * attempt is dropped; the run says once what waits; a restart keeps the
 * waiting task and applies the decision left meanwhile. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "orch_fixture.h"
#include "zerg/err.h"
#include "zerg/review.h"

static struct fx *review_fx(int workers)
{
    struct fx *x = fx_new_ws(graph3, workers, 0);
    x->cfg.rush_review = 1;
    start_ready(x);
    return x;
}

static void decide(struct fx *x, const char *task, int attempt,
                   enum zerg_review_decision d, const char *note, char *path)
{
    struct zerg_review_request rq = {
        .attempt = attempt, .decision = d, .note = (char *)note};
    snprintf(rq.feature, sizeof rq.feature, "t");
    snprintf(rq.task, sizeof rq.task, "%s", task);
    struct zerg_err err = {0};
    assert_int_equal(
        zerg_review_request_write(x->dir, &rq, path, PATH_MAX, &err), 0);
}

/* Ticks until the orchestrator looked at the review directory. */
static void look(struct fx *x)
{
    advance(x, 0.3);
    tick(x);
}

static void test_review_holds_then_approve(void **st)
{
    (void)st;
    char commit[ZERG_OID_MAX], path[PATH_MAX];
    struct fx *x = review_fx(1);
    int t = commit_slot(x, 0);
    fake_commit_oid(commit, "A-L1-001", 1);
    /* Kept, not merged; the worker went on to the other level-1 task. */
    assert_int_equal(x->ws->nmerges, 0);
    assert_int_equal(x->ws->nkeeps, 1);
    assert_int_equal(x->ws->keeps[0].kind, ZERG_WS_KEPT_REVIEW);
    assert_string_equal(x->ws->keeps[0].commit, commit);
    assert_int_equal(x->s.tasks[t].status, ZERG_TASK_AWAITING_REVIEW);
    assert_string_equal(x->s.tasks[t].review_commit, commit);
    assert_int_equal(x->s.tasks[t].review_worker, 0);
    assert_int_equal(x->o->awaiting, 1);
    tick(x);
    assert_string_equal(assign_of(x, 0).task, "A-L1-002");
    commit_slot(x, 0);
    tick(x);
    /* Both wait: level 2 does not start, and the run says so once. */
    assert_int_equal(x->o->slots[0].task, -1);
    assert_int_equal(status_of(x, "A-L2-001"), ZERG_TASK_PENDING);
    assert_int_equal(fx_count_events(x, "review_waiting"), 1);
    advance(x, 2);
    tick(x);
    assert_int_equal(fx_count_events(x, "review_waiting"), 1);
    assert_false(zerg_orch_done(x->o));

    decide(x, "A-L1-001", 1, ZERG_REVIEW_APPROVE, NULL, path);
    look(x);
    assert_int_equal(x->ws->nmerges, 1);
    assert_string_equal(x->ws->merges[0].commit, commit);
    assert_int_equal(x->ws->merges[0].worker, 0);
    assert_int_equal(x->s.tasks[t].status, ZERG_TASK_COMPLETE);
    assert_string_equal(x->s.tasks[t].commit, fake_ws_tip(x->ws));
    assert_string_equal(x->s.tasks[t].review_commit, "");
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(fx_count_events(x, "task_approved"), 1);
    assert_int_equal(x->o->awaiting, 1);
    fx_free(x);
}

static void test_review_redo_carries_note(void **st)
{
    (void)st;
    char path[PATH_MAX];
    struct fx *x = review_fx(1);
    int t = commit_slot(x, 0);
    tick(x);
    complete_slot(x, 0); /* A-L1-002 has no commit: nothing to review */
    tick(x);
    decide(x, "A-L1-001", 1, ZERG_REVIEW_REDO, "rename it", path);
    look(x);
    assert_string_equal(x->s.tasks[t].review_note, "rename it");
    assert_int_equal(x->s.tasks[t].retry_count, 0);
    assert_int_equal(fx_count_events(x, "task_redo"), 1);
    tick(x);
    struct zerg_assign a = assign_of(x, 0);
    assert_string_equal(a.task, "A-L1-001");
    assert_int_equal(a.attempt, 2);
    assert_string_equal(a.review_note, "rename it");
    assert_false(a.resume);
    commit_slot(x, 0);
    assert_int_equal(x->s.tasks[t].status, ZERG_TASK_AWAITING_REVIEW);
    assert_int_equal(x->ws->nmerges, 0);
    /* The first attempt's approval is stale now: dropped. */
    decide(x, "A-L1-001", 1, ZERG_REVIEW_APPROVE, NULL, path);
    look(x);
    assert_int_equal(x->ws->nmerges, 0);
    assert_int_equal(x->s.tasks[t].status, ZERG_TASK_AWAITING_REVIEW);
    assert_int_equal(fx_count_events(x, "review_request_invalid"), 1);
    assert_int_equal(access(path, F_OK), -1);
    fx_free(x);
}

static void test_review_approved_conflict_runs_again(void **st)
{
    (void)st;
    char path[PATH_MAX];
    struct fx *x = review_fx(1);
    int t = commit_slot(x, 0);
    fake_ws_script(x->ws, "A-L1-001", FAKE_MERGE_CONFLICT, "a.txt\n");
    decide(x, "A-L1-001", 1, ZERG_REVIEW_APPROVE, NULL, path);
    look(x);
    assert_int_equal(x->s.tasks[t].status, ZERG_TASK_PENDING);
    assert_int_equal(x->s.tasks[t].conflict_count, 1);
    assert_string_equal(x->s.tasks[t].reason, "conflict");
    assert_int_equal(x->ws->keeps[1].kind, ZERG_WS_KEPT_CONFLICT);
    assert_int_equal(x->o->awaiting, 0);
    fx_free(x);
}

/* What waits survives a restart; the decision left meanwhile is applied
 * by the next orchestrator. */
static void test_review_survives_restart(void **st)
{
    (void)st;
    char path[PATH_MAX];
    struct fx *x = review_fx(1);
    int t = commit_slot(x, 0);
    orch_checkpoint(x->o, x->now, ORCH_SAVE_NOW);
    fx_restart(x, 1);
    assert_int_equal(x->s.tasks[t].status, ZERG_TASK_AWAITING_REVIEW);
    assert_int_equal(x->o->awaiting, 1);
    x->cfg.rush_review = 0; /* the decision is applied all the same */
    decide(x, "A-L1-001", 1, ZERG_REVIEW_APPROVE, NULL, path);
    look(x);
    assert_int_equal(x->s.tasks[t].status, ZERG_TASK_COMPLETE);
    assert_int_equal(fake_ws_merges_of(x->ws, "A-L1-001"), 1);
    fx_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_review_holds_then_approve),
        cmocka_unit_test(test_review_redo_carries_note),
        cmocka_unit_test(test_review_approved_conflict_runs_again),
        cmocka_unit_test(test_review_survives_restart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
