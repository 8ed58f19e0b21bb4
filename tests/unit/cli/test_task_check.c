/* test_task_check.c - which check verifies a task (src/cli/
 * task_check.c): the verification command, the exit code only, or none;
 * grouped by check.  The CLI is not a library, so its file is compiled
 * in here. */
#include "testutil.h"

#include <string.h>

#include "cli/task_check.c"
#include "zerg/err.h"
#include "zerg/graph.h"

static const char graph_text[] =
    "{\"feature\": \"f\", \"tasks\": ["
    " {\"id\": \"A-1\", \"level\": 1, \"command\": \"true\","
    "  \"verification\": {\"command\": \"make test\"}},"
    " {\"id\": \"B-1\", \"level\": 1, \"command\": \"true\"},"
    " {\"id\": \"C-1\", \"level\": 1, \"description\": \"an agent's\"},"
    " {\"id\": \"D-1\", \"level\": 1, \"command\": \"true\","
    "  \"verification\": {\"command\": \"make test\"}},"
    " {\"id\": \"E-1\", \"level\": 1, \"command\": \"false\","
    "  \"verification\": {\"command\": \"a-check\"}}"
    "]}";

static void kinds_and_groups(void **state)
{
    (void)state;
    struct zerg_graph *g = NULL;
    struct zerg_err err = {0};
    assert_int_equal(
        zerg_graph_parse(&g, "g.json", graph_text, strlen(graph_text), &err),
        0);
    const char *text;
    assert_int_equal(zerg_task_check(&g->tasks[0], &text),
                     ZERG_CHECK_VERIFICATION);
    assert_string_equal(text, "make test");
    assert_int_equal(zerg_task_check(&g->tasks[1], &text),
                     ZERG_CHECK_EXIT_CODE);
    assert_string_equal(text, "command exit code only");
    assert_int_equal(zerg_task_check(&g->tasks[2], &text), ZERG_CHECK_NONE);
    assert_string_equal(text, "no verification");
    struct zerg_check_groups gs;
    assert_int_equal(zerg_check_groups(g, &gs), 0);
    assert_int_equal(gs.n, 4);
    assert_string_equal(gs.v[0].text, "a-check");
    assert_string_equal(gs.v[1].text, "make test");
    assert_int_equal(gs.v[1].n, 2);
    assert_int_equal(gs.v[1].tasks[0], 0); /* graph order within a group */
    assert_int_equal(gs.v[1].tasks[1], 3);
    assert_int_equal(gs.v[2].kind, ZERG_CHECK_EXIT_CODE);
    assert_string_equal(zerg_check_kind_name(gs.v[3].kind), "none");
    zerg_check_groups_free(&gs);
    zerg_graph_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kinds_and_groups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
