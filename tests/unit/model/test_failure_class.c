/* test_failure_class.c - the failure taxonomy table (zerg/failure.h):
 * every class's name parses back to it, names outside the table are
 * refused, each class goes where DESIGN §14 says, and failure kinds map
 * to their class with anything unknown a task failure. */
#include "testutil.h"

#include <errno.h>
#include <string.h>

#include "zerg/failure.h"

static void test_names_round_trip(void **state)
{
    (void)state;
    for (int i = 0; i < ZERG_FAILURE_CLASS_COUNT; i++) {
        const char *name = zerg_failure_class_name(i);
        assert_non_null(name);
        assert_true(strlen(name) < 16); /* fits struct zerg_result's cls */
        assert_non_null(zerg_failure_class_message(i));
        enum zerg_failure_class back = ZERG_FAILURE_CLASS_COUNT;
        assert_int_equal(zerg_failure_class_parse(name, &back), 0);
        assert_int_equal(back, i);
    }
    assert_null(zerg_failure_class_name(ZERG_FAILURE_CLASS_COUNT));
    enum zerg_failure_class untouched = ZERG_FAILURE_TIMEOUT;
    assert_int_equal(zerg_failure_class_parse("Task", &untouched), -EINVAL);
    assert_int_equal(zerg_failure_class_parse("", &untouched), -EINVAL);
    assert_int_equal(zerg_failure_class_parse(NULL, &untouched), -EINVAL);
    assert_int_equal(untouched, ZERG_FAILURE_TIMEOUT);
}

/* What each class costs and where it goes: only task and timeout charge
 * the retry budget; environment stops the pool, rate_limit pauses it. */
static void test_routes_and_charges(void **state)
{
    (void)state;
    static const struct {
        enum zerg_failure_class c;
        const char *name;
        int charged;
        enum zerg_failure_route route;
    } rows[] = {
        {ZERG_FAILURE_TASK, "task", 1, ZERG_ROUTE_RETRY},
        {ZERG_FAILURE_TIMEOUT, "timeout", 1, ZERG_ROUTE_RETRY},
        {ZERG_FAILURE_CRASH, "crash", 0, ZERG_ROUTE_CRASH},
        {ZERG_FAILURE_CONFLICT, "conflict", 0, ZERG_ROUTE_RETRY},
        {ZERG_FAILURE_ENVIRONMENT, "environment", 0, ZERG_ROUTE_STOP},
        {ZERG_FAILURE_RATE_LIMIT, "rate_limit", 0, ZERG_ROUTE_PAUSE},
    };
    assert_int_equal(sizeof rows / sizeof *rows, ZERG_FAILURE_CLASS_COUNT);
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        assert_string_equal(zerg_failure_class_name(rows[i].c), rows[i].name);
        assert_int_equal(zerg_failure_class_charged(rows[i].c),
                         rows[i].charged);
        assert_int_equal(zerg_failure_class_route(rows[i].c), rows[i].route);
    }
    /* Out of range reads as task: never a pool stop by accident. */
    assert_int_equal(zerg_failure_class_route(ZERG_FAILURE_CLASS_COUNT),
                     ZERG_ROUTE_RETRY);
}

static void test_class_of_kind(void **state)
{
    (void)state;
    static const struct {
        const char *kind;
        enum zerg_failure_class c;
    } rows[] = {
        {"exit", ZERG_FAILURE_TASK},
        {"verification", ZERG_FAILURE_TASK},
        {"scope", ZERG_FAILURE_TASK},
        {"missing_output", ZERG_FAILURE_TASK},
        {"timeout", ZERG_FAILURE_TIMEOUT},
        {"crash", ZERG_FAILURE_CRASH},
        {"heartbeat_stale", ZERG_FAILURE_CRASH},
        {"conflict", ZERG_FAILURE_CONFLICT},
        {"environment", ZERG_FAILURE_ENVIRONMENT},
        {"rate_limit", ZERG_FAILURE_RATE_LIMIT},
        {"something_new", ZERG_FAILURE_TASK},
        {NULL, ZERG_FAILURE_TASK},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        assert_int_equal(zerg_failure_class_of_kind(rows[i].kind), rows[i].c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_round_trip),
        cmocka_unit_test(test_routes_and_charges),
        cmocka_unit_test(test_class_of_kind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
