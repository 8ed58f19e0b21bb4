/* test_policy_reconcile.c - the bundled reconcile policy through
 * zerg_policy_reconcile: one snapshot per divergence and the fix it gets,
 * the thorough-only fixes, a clean snapshot, the order of the fixes, and
 * a rerun an override names for a task that is not complete (dropped). */
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

/* rerun: thorough, worktree, complete, a commit, merged == false. */
static const char *branch_snapshot =
    "{\"thorough\": %s, %s \"branch\": \"zerg/f/integration\","
    " \"current_level\": 3, \"tasks\": {"
    " \"A-L1-001\": {\"status\": \"complete\", \"level\": 1,"
    "  \"commit\": \"0123456789abcdef0123456789abcdef01234567\","
    "  \"merged\": false},"
    " \"A-L1-002\": {\"status\": \"complete\", \"level\": 1,"
    "  \"commit\": \"89abcdef0123456789abcdef0123456789abcdef\","
    "  \"merged\": true},"
    " \"A-L1-003\": {\"status\": \"complete\", \"level\": 1},"
    " \"A-L2-001\": {\"status\": \"complete\", \"level\": 2,"
    "  \"commit\": \"fedcba9876543210fedcba9876543210fedcba98\"},"
    " \"A-L2-002\": {\"status\": \"complete\", \"level\": 2,"
    "  \"commit\": \"\", \"merged\": false},"
    " \"A-L2-003\": {\"status\": \"failed\", \"level\": 2,"
    "  \"commit\": \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
    "  \"merged\": false}},"
    " \"levels\": {\"1\": {\"status\": \"complete\"},"
    "              \"2\": {\"status\": \"complete\"}}}";

static struct result check_branch(const char *thorough, const char *isolation)
{
    char text[2048];
    snprintf(text, sizeof text, branch_snapshot, thorough, isolation);
    return check(text);
}

/* Only the task whose commit the branch no longer holds: not one it
 * holds, not one without a commit, not one whose merged is unknown, not a
 * task that is not complete. */
static void test_rerun_missing_commit(void **state)
{
    (void)state;
    struct result r = check_branch("true", "\"isolation\": \"worktree\",");
    assert_int_equal(r.n, 1);
    assert_fix(&r.fixes[0], "A-L1-001", 1, "rerun",
               "complete but its commit 0123456789ab is not on "
               "zerg/f/integration");
    assert_int_equal(r.fixes[0].kind, ZERG_FIX_RERUN);
    done(&r);
}

/* Not on a light check, nor without worktree isolation. */
static void test_rerun_thorough_worktree_only(void **state)
{
    (void)state;
    const char *const cases[][2] = {
        {"false", "\"isolation\": \"worktree\","},
        {"true", ""},
        {"true", "\"isolation\": \"none\","},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct result r = check_branch(cases[i][0], cases[i][1]);
        assert_int_equal(r.n, 0);
        done(&r);
    }
}

/* A rerun throws a result away: an override that names one for a task
 * the snapshot does not show complete has it dropped and logged; its
 * other fixes still apply. */
static void test_rerun_refused_unless_complete(void **state)
{
    (void)state;
    struct zerg_err err = {0};
    char dir[256];
    snprintf(dir, sizeof dir, "%s", tu_mkdtemp());
    tu_write(dir, "reconcile.lua",
             "return {check = function(s)\n"
             "  return {{task = 'A-L1-001', fix = 'rerun', reason = 'x'},\n"
             "          {task = 'A-L1-002', fix = 'rerun', reason = 'y'},\n"
             "          {task = 'nope', fix = 'rerun', reason = 'z'}}\n"
             "end}\n");
    struct zerg_policy *p = zerg_policy_new(dir, &cfg, NULL, &err);
    if (!p)
        fail_msg("zerg_policy_new: %s", err.msg);
    const char *text = "{\"thorough\": true, \"tasks\": {"
                       " \"A-L1-001\": {\"status\": \"complete\"},"
                       " \"A-L1-002\": {\"status\": \"pending\"}}}";
    zerg_json *snap = zerg_json_parse(text, strlen(text), NULL);
    struct zerg_fix *fixes = NULL;
    size_t n = 0;
    zerg_json *why = NULL;
    assert_int_equal(zerg_policy_reconcile(p, snap, &fixes, &n, &why), 0);
    assert_int_equal(n, 1);
    assert_string_equal(fixes[0].task, "A-L1-001");
    assert_int_equal(fixes[0].kind, ZERG_FIX_RERUN);
    assert_true(zerg_json_get(why, "dropped")->u.number == 2);
    assert_string_equal(
        zerg_json_as_str(zerg_json_get(why, "dropped_reason")),
        "fix #2: rerun needs a complete task; A-L1-002 is pending");
    assert_int_equal(zerg_policy_error_count(p), 1);
    free(fixes);
    zerg_json_free(why);
    zerg_json_free(snap);
    zerg_policy_free(p);
    tu_rmtree(dir);
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
        cmocka_unit_test(test_rerun_missing_commit),
        cmocka_unit_test(test_rerun_thorough_worktree_only),
        cmocka_unit_test(test_rerun_refused_unless_complete),
        cmocka_unit_test(test_null_snapshot),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
