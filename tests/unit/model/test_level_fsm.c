/* test_level_fsm.c - the level life cycle table (src/model/level_fsm.c).
 *
 * The table in docs/wiki/Resilience-Architecture.md is the one the code
 * renders (ZERG_UPDATE_DOCS=1 rewrites it); each move sets its status and
 * its timestamp; any other pair leaves the level as it was and says 0, so
 * a level is started and completed (and logged) once. */
#include "testutil.h"

#include <string.h>

#include "zerg/level_fsm.h"

static void test_level_table_in_docs(void **state)
{
    (void)state;
    char buf[4096];
    int n = zerg_level_fsm_markdown(buf, sizeof buf);
    assert_true(n > 0 && (size_t)n < sizeof buf);
    tu_check_doc_table("docs/wiki/Resilience-Architecture.md", "level", buf);
}

static void test_level_walk(void **state)
{
    (void)state;
    struct zerg_level_state ls = {.status = ZERG_LEVEL_PENDING};
    assert_int_equal(zerg_level_apply(&ls, ZERG_LEVEL_EV_REOPEN, 5), 0);
    assert_int_equal(zerg_level_apply(&ls, ZERG_LEVEL_EV_START, 10), 1);
    assert_int_equal(ls.status, ZERG_LEVEL_RUNNING);
    assert_int_equal(ls.started_at_wall_ns, 10);
    /* A second start (a claim under dag, then the level transition) is no
     * move and keeps the first start's time. */
    assert_int_equal(zerg_level_apply(&ls, ZERG_LEVEL_EV_START, 20), 0);
    assert_int_equal(ls.started_at_wall_ns, 10);
    assert_int_equal(zerg_level_apply(&ls, ZERG_LEVEL_EV_COMPLETE, 30), 1);
    assert_int_equal(ls.status, ZERG_LEVEL_COMPLETE);
    assert_int_equal(ls.completed_at_wall_ns, 30);
    assert_int_equal(zerg_level_apply(&ls, ZERG_LEVEL_EV_COMPLETE, 40), 0);
    assert_int_equal(ls.completed_at_wall_ns, 30);
    assert_int_equal(zerg_level_apply(&ls, ZERG_LEVEL_EV_REOPEN, 50), 1);
    assert_int_equal(ls.status, ZERG_LEVEL_RUNNING);
    assert_int_equal(ls.completed_at_wall_ns, 0);
    assert_int_equal(ls.started_at_wall_ns, 10);
    assert_int_equal(zerg_level_apply(&ls, ZERG_LEVEL_EV_RESET, 60), 0);
    assert_int_equal(zerg_level_apply(&ls, ZERG_LEVEL_EV_COMPLETE, 70), 1);
    assert_int_equal(zerg_level_apply(&ls, ZERG_LEVEL_EV_RESET, 80), 1);
    assert_int_equal(ls.status, ZERG_LEVEL_PENDING);
    assert_int_equal(ls.completed_at_wall_ns, 0);
}

/* A status or event outside the table (a corrupt document) is no move. */
static void test_level_out_of_range(void **state)
{
    (void)state;
    struct zerg_level_state ls = {.status = (enum zerg_level_status)7};
    assert_int_equal(zerg_level_apply(&ls, ZERG_LEVEL_EV_START, 1), 0);
    assert_int_equal((int)ls.status, 7);
    ls.status = ZERG_LEVEL_PENDING;
    assert_int_equal(
        zerg_level_apply(&ls, (enum zerg_level_event)ZERG_LEVEL_NEVENTS, 1), 0);
    assert_int_equal(ls.status, ZERG_LEVEL_PENDING);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_level_table_in_docs),
        cmocka_unit_test(test_level_walk),
        cmocka_unit_test(test_level_out_of_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
