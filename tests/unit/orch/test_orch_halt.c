/* test_orch_halt.c - `zerg rush --halt` and the rush's wall budget
 * (src/orch/orch_halt.c): the spec's grammar and the decision, as pure
 * functions of counts and nanoseconds (no orchestrator, no clock). */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "orch/orch_internal.h"

#define S(n) ((int64_t)(n)*ZERG_NS_PER_S)

static struct zerg_halt parsed(const char *s)
{
    struct zerg_halt h = {.when = ZERG_HALT_NOW, .fail = 99};
    if (zerg_halt_parse(s, &h) != 0)
        fail_msg("'%s' should parse", s);
    return h;
}

static void test_parse_accepted_forms(void **state)
{
    (void)state;
    struct zerg_halt h = parsed("never");
    assert_int_equal(h.when, ZERG_HALT_NEVER);
    h = parsed("soon,fail=1");
    assert_int_equal(h.when, ZERG_HALT_SOON);
    assert_int_equal(h.fail, 1);
    assert_false(h.percent);
    h = parsed("now,fail=3");
    assert_int_equal(h.when, ZERG_HALT_NOW);
    assert_int_equal(h.fail, 3);
    h = parsed("now,fail=50%");
    assert_int_equal(h.fail, 50);
    assert_true(h.percent);
    h = parsed("soon,fail=100%");
    assert_int_equal(h.when, ZERG_HALT_SOON);
    assert_int_equal(h.fail, 100);
}

static void test_parse_rejects_and_leaves_out_alone(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "now",
        "soon",
        "later,fail=1",
        "now,fail=",
        "now,fail=0",
        "now,fail=-1",
        "now,fail=x",
        "now,fail=1x",
        "now,fail=0%",
        "now,fail=101%",
        "now,fail=5%%",
        "now,success=1",
        "now fail=1",
        "NOW,fail=1",
        "now,fail=1,",
        "never,fail=1",
        " now,fail=1",
        "now,fail= 1",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct zerg_halt h = {.when = ZERG_HALT_SOON, .fail = 7};
        if (zerg_halt_parse(bad[i], &h) != -EINVAL)
            fail_msg("'%s' should be refused", bad[i]);
        assert_int_equal(h.when, ZERG_HALT_SOON);
        assert_int_equal(h.fail, 7);
    }
    struct zerg_halt h = {0};
    assert_int_equal(zerg_halt_parse(NULL, &h), -EINVAL);
}

static void test_format_round_trips(void **state)
{
    (void)state;
    static const char *const specs[] = {"never", "soon,fail=1", "now,fail=2",
                                        "now,fail=50%", "soon,fail=100%"};
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
        char buf[48];
        struct zerg_halt h = parsed(specs[i]);
        assert_int_equal(zerg_halt_format(&h, buf, sizeof buf),
                         (int)strlen(specs[i]));
        assert_string_equal(buf, specs[i]);
    }
}

/* N% of the graph, rounded up, at least 1; NEVER has no threshold. */
static void test_threshold(void **state)
{
    (void)state;
    static const struct {
        const char *spec;
        size_t ntasks, want;
    } rows[] = {
        {"never", 10, 0},          {"now,fail=1", 10, 1},
        {"soon,fail=3", 2, 3},     {"now,fail=50%", 4, 2},
        {"now,fail=50%", 5, 3},    {"now,fail=50%", 1, 1},
        {"now,fail=1%", 1000, 10}, {"now,fail=1%", 150, 2},
        {"now,fail=1%", 3, 1},     {"soon,fail=100%", 7, 7},
        {"now,fail=10%", 0, 1},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        struct zerg_halt h = parsed(rows[i].spec);
        size_t got = orch_halt_threshold(&h, rows[i].ntasks);
        if (got != rows[i].want)
            fail_msg("%s on %zu tasks: threshold %zu, want %zu", rows[i].spec,
                     rows[i].ntasks, got, rows[i].want);
    }
}

static void test_decide_failures(void **state)
{
    (void)state;
    struct zerg_halt never = parsed("never"), soon = parsed("soon,fail=2"),
                     now = parsed("now,fail=50%");
    assert_int_equal(orch_halt_decide(&never, 100, 100, S(10), 0),
                     ORCH_HALT_GO);
    assert_int_equal(orch_halt_decide(&soon, 0, 10, 0, 0), ORCH_HALT_GO);
    assert_int_equal(orch_halt_decide(&soon, 1, 10, 0, 0), ORCH_HALT_GO);
    assert_int_equal(orch_halt_decide(&soon, 2, 10, 0, 0), ORCH_HALT_SOON);
    assert_int_equal(orch_halt_decide(&soon, 5, 10, 0, 0), ORCH_HALT_SOON);
    assert_int_equal(orch_halt_decide(&now, 2, 5, 0, 0), ORCH_HALT_GO);
    assert_int_equal(orch_halt_decide(&now, 3, 5, 0, 0), ORCH_HALT_NOW);
}

/* The budget counts from the rush's start, is reached at exactly its end,
 * beats a failure count, and 0 means none. */
static void test_decide_timeout(void **state)
{
    (void)state;
    struct zerg_halt never = parsed("never"), soon = parsed("soon,fail=1");
    assert_int_equal(orch_halt_decide(&never, 0, 4, S(2) - 1, S(2)),
                     ORCH_HALT_GO);
    assert_int_equal(orch_halt_decide(&never, 0, 4, S(2), S(2)),
                     ORCH_HALT_TIMEOUT);
    assert_int_equal(orch_halt_decide(&soon, 1, 4, S(3), S(2)),
                     ORCH_HALT_TIMEOUT);
    assert_int_equal(orch_halt_decide(&never, 0, 4, S(86400), 0), ORCH_HALT_GO);
    /* A later verdict overrides an earlier one in the tick. */
    assert_true(ORCH_HALT_GO < ORCH_HALT_SOON);
    assert_true(ORCH_HALT_SOON < ORCH_HALT_NOW);
    assert_true(ORCH_HALT_NOW < ORCH_HALT_TIMEOUT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_accepted_forms),
        cmocka_unit_test(test_parse_rejects_and_leaves_out_alone),
        cmocka_unit_test(test_format_round_trips),
        cmocka_unit_test(test_threshold),
        cmocka_unit_test(test_decide_failures),
        cmocka_unit_test(test_decide_timeout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
