/* test_task_fsm.c - the task table (src/model/task_fsm.c): its shape,
 * the fields each move owns, refusals that change nothing, and the copy in
 * docs/wiki/Resilience-Architecture.md (ZERG_UPDATE_DOCS=1 rewrites it). */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/err.h"
#include "zerg/task_fsm.h"

static void test_task_table_in_docs(void **state)
{
    (void)state;
    char buf[8192];
    int n = zerg_task_fsm_markdown(buf, sizeof buf);
    assert_true(n > 0 && (size_t)n < sizeof buf);
    tu_check_doc_table("docs/wiki/Resilience-Architecture.md", "task", buf);
}

/* Terminal statuses are left only by `retry` (a user's decision); a
 * complete task only by `reopen` (reconciliation found its work gone). */
static void test_task_table_shape(void **state)
{
    (void)state;
    for (int e = 0; e < ZERG_TASK_NEVENTS; e++) {
        if (e != ZERG_TASK_EV_REOPEN)
            assert_false(zerg_task_move_legal(ZERG_TASK_COMPLETE, e));
        else
            assert_true(zerg_task_move_legal(ZERG_TASK_COMPLETE, e));
        if (e == ZERG_TASK_EV_REOPEN)
            for (int s = 0; s < ZERG_TASK_NSTATUS; s++)
                assert_int_equal(zerg_task_move_legal(s, e),
                                 s == ZERG_TASK_COMPLETE);
        if (e != ZERG_TASK_EV_RETRY) {
            assert_false(zerg_task_move_legal(ZERG_TASK_FAILED, e));
            assert_false(zerg_task_move_legal(ZERG_TASK_BLOCKED, e));
        }
    }
    assert_true(zerg_task_move_legal(ZERG_TASK_FAILED, ZERG_TASK_EV_RETRY));
    assert_true(zerg_task_move_legal(ZERG_TASK_PENDING, ZERG_TASK_EV_CLAIM));
    assert_false(zerg_task_move_legal(ZERG_TASK_PENDING, ZERG_TASK_EV_START));
}

/* An illegal move changes nothing and says why. */
static void test_task_apply_refuses(void **state)
{
    (void)state;
    struct zerg_task_state st = {
        .status = ZERG_TASK_COMPLETE, .worker_id = 3, .retry_count = 2};
    char why[128] = "";
    struct zerg_task_move m = {.worker_id = 1, .attempt = 9};
    assert_int_equal(
        zerg_task_apply(&st, ZERG_TASK_EV_CLAIM, &m, why, sizeof why),
        ZERG_EINVAL_INPUT);
    assert_int_equal(st.status, ZERG_TASK_COMPLETE);
    assert_int_equal(st.worker_id, 3);
    assert_int_equal(st.attempt, 0);
    assert_string_equal(why, "cannot claim a task that is complete");
}

/* The fields each move owns. */
static void test_task_apply_fields(void **state)
{
    (void)state;
    struct zerg_task_state st = {.status = ZERG_TASK_PENDING, .worker_id = -1};
    struct zerg_task_move claim = {
        .worker_id = 2, .epoch = 7, .attempt = 1, .now_wall_ns = 100};
    assert_int_equal(zerg_task_apply(&st, ZERG_TASK_EV_CLAIM, &claim, NULL, 0),
                     0);
    assert_int_equal(st.status, ZERG_TASK_CLAIMED);
    assert_int_equal(st.worker_id, 2);
    assert_int_equal(st.epoch, 7);
    assert_int_equal(st.claimed_at_wall_ns, 100);
    struct zerg_task_move fail = {
        .now_wall_ns = 200, .error = "boom", .reason = "exit"};
    st.retry_count = 3;
    st.crash_count = 1;
    assert_int_equal(zerg_task_apply(&st, ZERG_TASK_EV_FAIL, &fail, NULL, 0),
                     0);
    assert_int_equal(st.status, ZERG_TASK_FAILED);
    assert_int_equal(st.worker_id, -1);
    assert_string_equal(st.error, "boom");
    assert_string_equal(st.reason, "exit");
    assert_int_equal(zerg_task_apply(&st, ZERG_TASK_EV_RETRY, NULL, NULL, 0),
                     0);
    assert_int_equal(st.status, ZERG_TASK_PENDING);
    assert_int_equal(st.retry_count, 0);
    assert_int_equal(st.crash_count, 0);
    assert_int_equal(st.attempt, 1); /* kept: it fences old results */
    assert_null(st.error);
    assert_null(st.reason);
}

/* reopen: a complete task back to pending without its commit, with a
 * fresh budget and the reason; refused from any other status. */
static void test_task_reopen(void **state)
{
    (void)state;
    struct zerg_task_state st = {.status = ZERG_TASK_COMPLETE,
                                 .worker_id = -1,
                                 .attempt = 3,
                                 .retry_count = 2,
                                 .crash_count = 1,
                                 .conflict_count = 1,
                                 .completed_at_wall_ns = 500,
                                 .commit = "0123456789abcdef"};
    st.conflict_paths = strdup("src/a.c");
    struct zerg_task_move m = {.error = "its commit 0123456789ab is gone",
                               .reason = "rerun"};
    assert_int_equal(zerg_task_apply(&st, ZERG_TASK_EV_REOPEN, &m, NULL, 0), 0);
    assert_int_equal(st.status, ZERG_TASK_PENDING);
    assert_string_equal(st.commit, "");
    assert_int_equal(st.completed_at_wall_ns, 0);
    assert_int_equal(st.retry_count, 0);
    assert_int_equal(st.crash_count, 0);
    assert_int_equal(st.conflict_count, 0);
    assert_null(st.conflict_paths);
    assert_int_equal(st.attempt, 3); /* kept: it fences old results */
    assert_string_equal(st.error, "its commit 0123456789ab is gone");
    assert_string_equal(st.reason, "rerun");
    char why[128] = "";
    assert_int_equal(
        zerg_task_apply(&st, ZERG_TASK_EV_REOPEN, &m, why, sizeof why),
        ZERG_EINVAL_INPUT);
    assert_string_equal(why, "cannot reopen a task that is pending");
    assert_int_equal(st.status, ZERG_TASK_PENDING);
    free(st.error);
    free(st.reason);
}

/* Review before merge: await keeps the commit and its base, redo clears
 * them and keeps the note for the next prompt (a conflict's redo keeps the
 * last note), approve merges and forgets the note; only approve, redo and
 * fail leave awaiting_review, and neither claim nor retry touches it. */
static void test_task_review(void **state)
{
    (void)state;
    struct zerg_task_state st = {.status = ZERG_TASK_IN_PROGRESS,
                                 .worker_id = 2};
    struct zerg_task_move m = {
        .now_wall_ns = 50, .commit = "c0ffee", .base = "ba5e"};
    assert_int_equal(zerg_task_apply(&st, ZERG_TASK_EV_AWAIT, &m, NULL, 0), 0);
    assert_int_equal(st.status, ZERG_TASK_AWAITING_REVIEW);
    assert_int_equal(st.worker_id, -1);
    assert_string_equal(st.review_commit, "c0ffee");
    assert_string_equal(st.review_base, "ba5e");
    for (int e = 0; e < ZERG_TASK_NEVENTS; e++)
        assert_int_equal(zerg_task_move_legal(ZERG_TASK_AWAITING_REVIEW, e),
                         e == ZERG_TASK_EV_APPROVE || e == ZERG_TASK_EV_REDO ||
                             e == ZERG_TASK_EV_FAIL);
    assert_false(zerg_task_status_terminal(ZERG_TASK_AWAITING_REVIEW));

    struct zerg_task_move redo = {.error = "redo asked at review",
                                  .reason = "review",
                                  .note = "name it parse_args"};
    assert_int_equal(zerg_task_apply(&st, ZERG_TASK_EV_REDO, &redo, NULL, 0),
                     0);
    assert_int_equal(st.status, ZERG_TASK_PENDING);
    assert_string_equal(st.review_commit, "");
    assert_string_equal(st.review_note, "name it parse_args");
    assert_string_equal(st.reason, "review");

    st.status = ZERG_TASK_IN_PROGRESS;
    assert_int_equal(zerg_task_apply(&st, ZERG_TASK_EV_AWAIT, &m, NULL, 0), 0);
    struct zerg_task_move conflict = {.error = "conflict",
                                      .reason = "conflict"};
    assert_int_equal(
        zerg_task_apply(&st, ZERG_TASK_EV_REDO, &conflict, NULL, 0), 0);
    assert_string_equal(st.review_note, "name it parse_args");

    st.status = ZERG_TASK_IN_PROGRESS;
    assert_int_equal(zerg_task_apply(&st, ZERG_TASK_EV_AWAIT, &m, NULL, 0), 0);
    struct zerg_task_move ok = {.now_wall_ns = 90};
    assert_int_equal(zerg_task_apply(&st, ZERG_TASK_EV_APPROVE, &ok, NULL, 0),
                     0);
    assert_int_equal(st.status, ZERG_TASK_COMPLETE);
    assert_null(st.review_note);
    assert_string_equal(st.review_base, "");
    assert_true(st.completed_at_wall_ns == 90);
    free(st.error);
    free(st.reason);
}

static void test_task_count(void **state)
{
    (void)state;
    struct zerg_task_state t[4] = {{.status = ZERG_TASK_PENDING},
                                   {.status = ZERG_TASK_COMPLETE},
                                   {.status = ZERG_TASK_COMPLETE},
                                   {.status = ZERG_TASK_BLOCKED}};
    size_t c[ZERG_TASK_NSTATUS];
    zerg_task_count(t, NULL, 4, c);
    assert_int_equal(c[ZERG_TASK_COMPLETE], 2);
    assert_int_equal(c[ZERG_TASK_PENDING], 1);
    assert_int_equal(c[ZERG_TASK_BLOCKED], 1);
    size_t idx[2] = {0, 3};
    zerg_task_count(t, idx, 2, c);
    assert_int_equal(c[ZERG_TASK_COMPLETE], 0);
    assert_int_equal(c[ZERG_TASK_BLOCKED], 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_task_table_in_docs),
        cmocka_unit_test(test_task_table_shape),
        cmocka_unit_test(test_task_apply_refuses),
        cmocka_unit_test(test_task_apply_fields),
        cmocka_unit_test(test_task_reopen),
        cmocka_unit_test(test_task_review),
        cmocka_unit_test(test_task_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
