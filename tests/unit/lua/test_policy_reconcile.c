/* test_policy_reconcile.c - the bundled reconcile policy through
 * zerg_policy_reconcile: one snapshot per divergence and the fix it gets,
 * the thorough-only fix, a clean snapshot, and the order of the fixes. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/config.h"
#include "zerg/err.h"
#include "zerg/policy.h"

static struct zerg_config cfg;
static struct zerg_policy *pol;

static int setup(void **state)
{
    (void)state;
    struct zerg_err err = {0};
    zerg_config_defaults(&cfg);
    pol = zerg_policy_new(NULL, &cfg, NULL, &err);
    if (!pol)
        fail_msg("zerg_policy_new: %s", err.msg);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    zerg_policy_free(pol);
    zerg_config_free(&cfg);
    return 0;
}

struct result {
    struct zerg_fix *fixes;
    size_t n;
    zerg_json *why;
};

static struct result check(const char *snapshot_text)
{
    struct result r = {0};
    zerg_json *snap =
        zerg_json_parse(snapshot_text, strlen(snapshot_text), NULL);
    if (!snap)
        fail_msg("bad snapshot in the test: %s", snapshot_text);
    assert_int_equal(zerg_policy_reconcile(pol, snap, &r.fixes, &r.n, &r.why),
                     0);
    zerg_json_free(snap);
    assert_int_equal(zerg_policy_error_count(pol), 0);
    return r;
}

static void done(struct result *r)
{
    free(r->fixes);
    zerg_json_free(r->why);
}

static void assert_fix(const struct zerg_fix *f, const char *task, int level,
                       const char *fix, const char *reason_part)
{
    assert_string_equal(f->task, task);
    assert_int_equal(f->level, level);
    assert_string_equal(f->fix, fix);
    assert_true(tu_contains(f->reason, reason_part));
}

static void test_requeue_dead_worker(void **state)
{
    (void)state;
    struct result r =
        check("{\"thorough\": false, \"current_level\": 1, \"tasks\": {"
              " \"A-L1-001\": {\"status\": \"in_progress\", \"level\": 1,"
              "  \"worker\": 0, \"worker_alive\": false},"
              " \"A-L1-002\": {\"status\": \"claimed\", \"level\": 1,"
              "  \"worker\": 1, \"worker_alive\": true},"
              " \"A-L1-003\": {\"status\": \"claimed\", \"level\": 1}},"
              " \"levels\": {\"1\": {\"status\": \"running\"}}}");
    assert_int_equal(r.n, 2);
    assert_fix(&r.fixes[0], "A-L1-001", 1, "requeue",
               "in_progress but worker 0 is not alive");
    assert_fix(&r.fixes[1], "A-L1-003", 1, "requeue", "claimed");
    done(&r);
}

static void test_set_level(void **state)
{
    (void)state;
    struct result r =
        check("{\"tasks\": {"
              " \"X-L2-001\": {\"status\": \"pending\", \"level\": 0},"
              " \"Y\": {\"status\": \"pending\", \"graph_level\": 3},"
              " \"Z\": {\"status\": \"pending\"},"
              " \"W-L4-001\": {\"status\": \"pending\", \"level\": 4}}}");
    assert_int_equal(r.n, 2);
    assert_fix(&r.fixes[0], "X-L2-001", 2, "set_level", "no level");
    assert_fix(&r.fixes[1], "Y", 3, "set_level", "no level");
    done(&r);
}

static void test_reopen_level(void **state)
{
    (void)state;
    struct result r =
        check("{\"tasks\": {"
              " \"A-L1-001\": {\"status\": \"complete\", \"level\": 1},"
              " \"A-L1-002\": {\"status\": \"waiting_retry\", \"level\": 1},"
              " \"A-L2-001\": {\"status\": \"pending\", \"level\": 2}},"
              " \"levels\": {\"1\": {\"status\": \"complete\"},"
              "              \"2\": {\"status\": \"pending\"}}}");
    assert_int_equal(r.n, 1);
    assert_fix(&r.fixes[0], "", 1, "reopen_level",
               "level 1 is marked complete but A-L1-002 is waiting_retry");
    done(&r);
}

static const char *all_terminal =
    "{\"thorough\": %s, \"tasks\": {"
    " \"A-L1-001\": {\"status\": \"complete\", \"level\": 1},"
    " \"A-L1-002\": {\"status\": \"failed\", \"level\": 1},"
    " \"A-L1-003\": {\"status\": \"blocked\", \"level\": 1}},"
    " \"levels\": {\"1\": {\"status\": \"running\"}}}";

static void test_complete_level_only_when_thorough(void **state)
{
    (void)state;
    char text[1024];
    snprintf(text, sizeof text, all_terminal, "true");
    struct result r = check(text);
    assert_int_equal(r.n, 1);
    assert_fix(&r.fixes[0], "", 1, "complete_level",
               "all 3 tasks of level 1 are terminal");
    done(&r);

    snprintf(text, sizeof text, all_terminal, "false");
    r = check(text);
    assert_int_equal(r.n, 0);
    assert_null(r.fixes);
    done(&r);
}

static void test_block_after_failed_dependency(void **state)
{
    (void)state;
    struct result r =
        check("{\"tasks\": {"
              " \"A-L1-001\": {\"status\": \"failed\", \"level\": 1},"
              " \"A-L1-002\": {\"status\": \"blocked\", \"level\": 1},"
              " \"A-L2-001\": {\"status\": \"pending\", \"level\": 2,"
              "  \"deps\": [\"A-L1-001\"]},"
              " \"A-L2-002\": {\"status\": \"pending\", \"level\": 2,"
              "  \"deps\": [\"A-L1-002\"]},"
              " \"A-L2-003\": {\"status\": \"waiting_retry\", \"level\": 2,"
              "  \"deps\": [\"A-L1-001\"]}}}");
    assert_int_equal(r.n, 2);
    assert_fix(&r.fixes[0], "A-L2-001", 2, "block",
               "dependency A-L1-001 is failed");
    assert_fix(&r.fixes[1], "A-L2-002", 2, "block",
               "dependency A-L1-002 is blocked");
    done(&r);
}

static void test_clean_snapshot_no_fixes(void **state)
{
    (void)state;
    struct result r = check(
        "{\"thorough\": true, \"current_level\": 2, \"tasks\": {"
        " \"A-L1-001\": {\"status\": \"complete\", \"level\": 1},"
        " \"A-L2-001\": {\"status\": \"in_progress\", \"level\": 2,"
        "  \"worker\": 0, \"worker_alive\": true, \"deps\": [\"A-L1-001\"]}},"
        " \"levels\": {\"1\": {\"status\": \"complete\"},"
        "              \"2\": {\"status\": \"running\"}}}");
    assert_int_equal(r.n, 0);
    assert_string_equal(zerg_json_as_str(zerg_json_get(r.why, "policy")),
                        "bundled");
    assert_int_equal(zerg_json_len(zerg_json_get(r.why, "fixes")), 0);
    assert_true(zerg_json_get(r.why, "thorough")->u.boolean);
    assert_true(zerg_json_get(r.why, "current_level")->u.number == 2);
    done(&r);
}

static void test_many_fixes_in_order(void **state)
{
    (void)state;
    struct result r = check(
        "{\"thorough\": true, \"tasks\": {"
        " \"B-L1-001\": {\"status\": \"in_progress\", \"level\": 1,"
        "  \"worker\": 3},"
        " \"A-L1-001\": {\"status\": \"failed\", \"level\": 1},"
        " \"C-L2-001\": {\"status\": \"pending\", \"deps\": [\"A-L1-001\"]},"
        " \"D-L3-001\": {\"status\": \"complete\", \"level\": 3}},"
        " \"levels\": {\"1\": {\"status\": \"complete\"}}}");
    assert_int_equal(r.n, 5);
    assert_fix(&r.fixes[0], "B-L1-001", 1, "requeue", "worker 3");
    assert_fix(&r.fixes[1], "C-L2-001", 2, "set_level", "no level");
    assert_fix(&r.fixes[2], "C-L2-001", 2, "block", "A-L1-001");
    assert_fix(&r.fixes[3], "", 1, "reopen_level", "B-L1-001");
    assert_fix(&r.fixes[4], "", 3, "complete_level", "all 1 tasks");
    const zerg_json *list = zerg_json_get(r.why, "fixes");
    assert_int_equal(zerg_json_len(list), 5);
    assert_string_equal(
        zerg_json_as_str(zerg_json_get(zerg_json_at(list, 0), "fix")),
        "requeue");
    done(&r);
}

/* The orchestrator's shape: levels as an array with whole-level counts,
 * and a light snapshot that lists only running tasks. */
static void test_level_counts_from_orchestrator(void **state)
{
    (void)state;
    struct result r =
        check("{\"thorough\": false, \"current_level\": 2, \"tasks\": {"
              " \"A-L2-001\": {\"status\": \"in_progress\", \"level\": 2,"
              "  \"graph_level\": 2, \"worker\": -1, \"worker_alive\": false,"
              "  \"deps\": []}},"
              " \"levels\": [{\"status\": \"complete\", \"tasks\": 3,"
              "               \"unfinished\": 1},"
              "              {\"status\": \"running\", \"tasks\": 2,"
              "               \"unfinished\": 2}]}");
    assert_int_equal(r.n, 2);
    assert_fix(&r.fixes[0], "A-L2-001", 2, "requeue",
               "in_progress but no worker holds it");
    assert_fix(&r.fixes[1], "", 1, "reopen_level",
               "level 1 is marked complete but 1 of its tasks are "
               "unfinished");
    done(&r);

    r = check("{\"thorough\": true, \"tasks\": {},"
              " \"levels\": [{\"status\": \"running\", \"tasks\": 3,"
              "               \"unfinished\": 0},"
              "              {\"status\": \"pending\", \"tasks\": 0,"
              "               \"unfinished\": 0}]}");
    assert_int_equal(r.n, 1);
    assert_fix(&r.fixes[0], "", 1, "complete_level", "all 3 tasks");
    done(&r);
}

static void test_null_snapshot(void **state)
{
    (void)state;
    struct zerg_fix *fixes = (void *)1;
    size_t n = 9;
    assert_int_equal(zerg_policy_reconcile(pol, NULL, &fixes, &n, NULL), 0);
    assert_int_equal(n, 0);
    assert_null(fixes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_requeue_dead_worker),
        cmocka_unit_test(test_set_level),
        cmocka_unit_test(test_reopen_level),
        cmocka_unit_test(test_complete_level_only_when_thorough),
        cmocka_unit_test(test_block_after_failed_dependency),
        cmocka_unit_test(test_clean_snapshot_no_fixes),
        cmocka_unit_test(test_many_fixes_in_order),
        cmocka_unit_test(test_level_counts_from_orchestrator),
        cmocka_unit_test(test_null_snapshot),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
