/* test_policy.c - the bundled policies through include/zerg/policy.h
 * (src/lua/policy.c and the bundled policies): decision tables for backoff,
 * stale, respawn and retry, the clamps, and the `why` each decision
 * returns.  Overrides: test_policy_override.c; reconcile:
 * test_policy_reconcile.c. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/clock.h"
#include "zerg/config.h"
#include "zerg/err.h"
#include "zerg/policy.h"

#define S ZERG_NS_PER_S

static struct zerg_config cfg;

static int setup(void **state)
{
    (void)state;
    zerg_config_defaults(&cfg);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    zerg_config_free(&cfg);
    return 0;
}

static struct zerg_policy *policy(void)
{
    struct zerg_err err = {0};
    struct zerg_policy *p = zerg_policy_new(NULL, &cfg, NULL, &err);
    if (!p)
        fail_msg("zerg_policy_new: %s", err.msg);
    return p;
}

static double delay_s(struct zerg_policy *p, const char *kind, int attempt)
{
    return zerg_ns_to_s(zerg_policy_backoff_ns(p, kind, attempt, NULL));
}

static void assert_near(double got, double want)
{
    if (fabs(got - want) > 1e-6)
        fail_msg("got %.9g, want %.9g", got, want);
}

static const char *str(const zerg_json *why, const char *key)
{
    const char *s = zerg_json_as_str(zerg_json_get(why, key));
    if (!s)
        fail_msg("why has no string '%s'", key);
    return s;
}

static double num(const zerg_json *why, const char *key)
{
    const zerg_json *v = zerg_json_get(why, key);
    if (!zerg_json_is(v, ZERG_JSON_NUMBER))
        fail_msg("why has no number '%s'", key);
    return v->u.number;
}

static int boolean(const zerg_json *why, const char *key)
{
    const zerg_json *v = zerg_json_get(why, key);
    if (!zerg_json_is(v, ZERG_JSON_BOOL))
        fail_msg("why has no boolean '%s'", key);
    return v->u.boolean;
}

/* ---- backoff --------------------------------------------------------- */

static void set_spawn(enum zerg_backoff s, double base, double max)
{
    cfg.spawn_backoff_strategy = s;
    cfg.spawn_backoff_base_ns = zerg_s_to_ns(base);
    cfg.spawn_backoff_max_ns = zerg_s_to_ns(max);
}

static void test_backoff_defaults(void **state)
{
    (void)state;
    struct zerg_policy *p = policy();
    /* DESIGN.md section 7: spawn retries 1-3 wait 2, 4, 8 s */
    assert_near(delay_s(p, "spawn", 1), 2);
    assert_near(delay_s(p, "spawn", 2), 4);
    assert_near(delay_s(p, "spawn", 3), 8);
    /* task retries use backoff_* (30 s base, 300 s max) */
    assert_near(delay_s(p, "task", 1), 30);
    assert_near(delay_s(p, "task", 2), 60);
    assert_near(delay_s(p, "task", 4), 240);
    assert_near(delay_s(p, "task", 5), 300);
    assert_int_equal(zerg_policy_error_count(p), 0);
    zerg_policy_free(p);
}

static void test_backoff_exponential_table(void **state)
{
    (void)state;
    set_spawn(ZERG_BACKOFF_EXPONENTIAL, 2, 30);
    struct zerg_policy *p = policy();
    static const double want[31] = {0,  2,  4,  8,  16, 30, 30, 30, 30, 30, 30,
                                    30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30,
                                    30, 30, 30, 30, 30, 30, 30, 30, 30};
    for (int a = 1; a <= 30; a++)
        assert_near(delay_s(p, "spawn", a), want[a]);
    assert_near(delay_s(p, "spawn", 5000), 30); /* 2^4999 = inf, capped */
    zerg_policy_free(p);
}

static void test_backoff_linear_table(void **state)
{
    (void)state;
    set_spawn(ZERG_BACKOFF_LINEAR, 2, 30);
    struct zerg_policy *p = policy();
    for (int a = 1; a <= 30; a++)
        assert_near(delay_s(p, "spawn", a), a <= 15 ? 2.0 * a : 30);
    zerg_policy_free(p);
}

static void test_backoff_fixed_table(void **state)
{
    (void)state;
    set_spawn(ZERG_BACKOFF_FIXED, 2, 30);
    struct zerg_policy *p = policy();
    for (int a = 1; a <= 30; a++)
        assert_near(delay_s(p, "spawn", a), 2);
    zerg_policy_free(p);
}

static void test_backoff_fractions(void **state)
{
    (void)state;
    set_spawn(ZERG_BACKOFF_EXPONENTIAL, 0.2, 1);
    struct zerg_policy *p = policy();
    assert_near(delay_s(p, "spawn", 1), 0.2);
    assert_near(delay_s(p, "spawn", 2), 0.4);
    assert_near(delay_s(p, "spawn", 3), 0.8);
    assert_near(delay_s(p, "spawn", 4), 1);
    zerg_policy_free(p);
}

static void test_backoff_base_over_max(void **state)
{
    (void)state;
    for (int s = ZERG_BACKOFF_EXPONENTIAL; s <= ZERG_BACKOFF_FIXED; s++) {
        set_spawn((enum zerg_backoff)s, 50, 30);
        struct zerg_policy *p = policy();
        for (int a = 1; a <= 30; a++)
            assert_near(delay_s(p, "spawn", a), 30);
        zerg_policy_free(p);
    }
}

static void test_backoff_clamped_to_an_hour(void **state)
{
    (void)state;
    set_spawn(ZERG_BACKOFF_FIXED, 7200, 7200);
    struct zerg_policy *p = policy();
    zerg_json *why = NULL;
    assert_int_equal(zerg_policy_backoff_ns(p, "spawn", 1, &why), 3600 * S);
    assert_true(boolean(why, "clamped"));
    zerg_json_free(why);
    zerg_policy_free(p);
}

static void test_backoff_why(void **state)
{
    (void)state;
    struct zerg_policy *p = policy();
    zerg_json *why = NULL;
    zerg_policy_backoff_ns(p, "spawn", 2, &why);
    assert_string_equal(str(why, "policy"), "bundled");
    assert_string_equal(str(why, "file"), "policies/backoff.lua");
    assert_string_equal(str(why, "hook"), "backoff.delay");
    assert_string_equal(str(why, "kind"), "spawn");
    assert_string_equal(str(why, "strategy"), "exponential");
    assert_near(num(why, "attempt"), 2);
    assert_near(num(why, "base"), 2);
    assert_near(num(why, "max"), 30);
    assert_near(num(why, "delay"), 4);
    assert_null(zerg_json_get(why, "clamped"));
    zerg_json_free(why);
    zerg_policy_free(p);
}

/* ---- stale ----------------------------------------------------------- */

static void test_stale_task(void **state)
{
    (void)state;
    struct zerg_policy *p = policy(); /* task_stale_timeout 600 s */
    int64_t start = 1000 * S;
    assert_false(zerg_policy_stale_task(p, "A-L1-001", 0, start, start,
                                        start + 599 * S, NULL));
    assert_true(zerg_policy_stale_task(p, "A-L1-001", 0, start, start,
                                       start + 600 * S, NULL));
    /* progress resets the age */
    assert_false(zerg_policy_stale_task(
        p, "A-L1-001", 0, start, start + 500 * S, start + 900 * S, NULL));
    zerg_json *why = NULL;
    assert_true(zerg_policy_stale_task(p, "A-L1-001", 2, start, start,
                                       start + 700 * S, &why));
    assert_string_equal(str(why, "task"), "A-L1-001");
    assert_near(num(why, "worker"), 2);
    assert_near(num(why, "elapsed"), 700);
    assert_near(num(why, "threshold"), 600);
    assert_true(boolean(why, "stale"));
    assert_true(tu_contains(str(why, "reason"), "no progress for 700.0s"));
    zerg_json_free(why);
    zerg_policy_free(p);
}

static void test_stale_worker(void **state)
{
    (void)state;
    cfg.heartbeat_stale_threshold_ns = zerg_s_to_ns(0.5);
    struct zerg_policy *p = policy();
    assert_false(zerg_policy_stale_worker(p, 1, 7, 10 * S,
                                          10 * S + zerg_s_to_ns(0.4), NULL));
    zerg_json *why = NULL;
    assert_true(zerg_policy_stale_worker(p, 1, 7, 10 * S,
                                         10 * S + zerg_s_to_ns(0.5), &why));
    assert_near(num(why, "seq"), 7);
    assert_near(num(why, "threshold"), 0.5);
    assert_string_equal(str(why, "hook"), "stale.worker");
    zerg_json_free(why);
    zerg_policy_free(p);
}

/* ---- respawn --------------------------------------------------------- */

static int respawn(struct zerg_policy *p, int count, int work_left,
                   char *reason, size_t size)
{
    struct zerg_respawn_in in = {.slot = 1,
                                 .respawn_count = count,
                                 .exit_code = 1,
                                 .uptime_ns = 5 * S,
                                 .was_ready = 1,
                                 .work_left = work_left};
    zerg_json *why = NULL;
    int r = zerg_policy_respawn(p, &in, &why);
    snprintf(reason, size, "%s", str(why, "reason"));
    assert_int_equal(boolean(why, "respawn"), r);
    zerg_json_free(why);
    return r;
}

static void test_respawn_table(void **state)
{
    (void)state;
    char reason[64];
    struct zerg_policy *p = policy(); /* max_respawn_attempts 5 */
    for (int count = 0; count < 5; count++) {
        assert_true(respawn(p, count, 3, reason, sizeof reason));
        assert_string_equal(reason, "work left");
    }
    assert_false(respawn(p, 5, 3, reason, sizeof reason));
    assert_string_equal(reason, "respawn cap reached");
    assert_false(respawn(p, 6, 3, reason, sizeof reason));
    assert_false(respawn(p, 0, 0, reason, sizeof reason));
    assert_string_equal(reason, "no work left");
    zerg_policy_free(p);

    cfg.auto_respawn = 0;
    p = policy();
    assert_false(respawn(p, 0, 3, reason, sizeof reason));
    assert_string_equal(reason, "auto_respawn disabled");
    zerg_policy_free(p);
}

/* ---- retry ----------------------------------------------------------- */

static struct zerg_retry_out retry(struct zerg_policy *p, const char *kind,
                                   int retries, int crashes)
{
    struct zerg_retry_in in = {.task_id = "A-L1-001",
                               .retry_count = retries,
                               .crash_count = crashes,
                               .attempt = 1,
                               .failure = kind,
                               .exit_code = 1};
    struct zerg_retry_out out;
    zerg_policy_retry(p, &in, &out, NULL);
    return out;
}

static void test_retry_crash_not_charged(void **state)
{
    (void)state;
    struct zerg_policy *p = policy(); /* max_task_crashes 3 */
    static const char *const kinds[] = {"crash", "heartbeat_stale"};
    for (int k = 0; k < 2; k++) {
        for (int crashes = 0; crashes < 3; crashes++) {
            struct zerg_retry_out o = retry(p, kinds[k], 2, crashes);
            assert_true(o.retry);
            assert_false(o.charge);
            assert_int_equal(o.delay_ns, 0);
            assert_string_equal(o.reason, kinds[k]);
            /* A crash resumes the agent's session; a stale kill starts
             * afresh (DESIGN §21). */
            assert_int_equal(o.resume, k == 0);
        }
        struct zerg_retry_out o = retry(p, kinds[k], 0, 3);
        assert_false(o.retry);
        assert_false(o.charge);
        assert_string_equal(o.reason, "crash_loop");
    }
    zerg_policy_free(p);
}

static void test_retry_failure_charged(void **state)
{
    (void)state;
    struct zerg_policy *p = policy(); /* 3 retries, 30 s base, 300 max */
    static const char *const kinds[] = {"exit", "verification", "timeout"};
    static const int64_t delays[] = {30 * S, 60 * S, 120 * S};
    for (int k = 0; k < 3; k++) {
        for (int retries = 0; retries < 3; retries++) {
            struct zerg_retry_out o = retry(p, kinds[k], retries, 0);
            assert_true(o.retry);
            assert_true(o.charge);
            assert_false(o.resume); /* the task's own failure: afresh */
            assert_int_equal(o.delay_ns, delays[retries]);
        }
        struct zerg_retry_out o = retry(p, kinds[k], 3, 0);
        assert_false(o.retry);
        assert_true(o.charge);
        assert_string_equal(o.reason, "retries_exhausted");
    }
    zerg_policy_free(p);
}

static void test_retry_why(void **state)
{
    (void)state;
    struct zerg_policy *p = policy();
    struct zerg_retry_in in = {.task_id = "T-L2-003",
                               .retry_count = 1,
                               .crash_count = 0,
                               .attempt = 2,
                               .failure = "verification",
                               .exit_code = 2};
    struct zerg_retry_out out;
    zerg_json *why = NULL;
    zerg_policy_retry(p, &in, &out, &why);
    assert_string_equal(str(why, "policy"), "bundled");
    assert_string_equal(str(why, "file"), "policies/retry.lua");
    assert_string_equal(str(why, "task"), "T-L2-003");
    assert_string_equal(str(why, "failure"), "verification");
    assert_near(num(why, "retry_count"), 1);
    assert_near(num(why, "retry_attempts"), 3);
    assert_near(num(why, "delay"), 60);
    assert_true(boolean(why, "retry"));
    assert_true(boolean(why, "charge"));
    zerg_json_free(why);
    zerg_policy_free(p);
}

static void test_hooks_list(void **state)
{
    (void)state;
    static const char *const want[] = {"backoff.delay", "stale.task",
                                       "stale.worker",  "respawn.decide",
                                       "retry.decide",  "reconcile.check",
                                       "scope.decide",  "scope.config",
                                       "scope.missing", NULL};
    for (int i = 0; want[i]; i++)
        assert_string_equal(zerg_policy_hooks[i], want[i]);
    assert_null(zerg_policy_hooks[9]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_backoff_defaults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backoff_exponential_table, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_backoff_linear_table, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_backoff_fixed_table, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_backoff_fractions, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_backoff_base_over_max, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_backoff_clamped_to_an_hour, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_backoff_why, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_task, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_worker, setup, teardown),
        cmocka_unit_test_setup_teardown(test_respawn_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retry_crash_not_charged, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_retry_failure_charged, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_retry_why, setup, teardown),
        cmocka_unit_test(test_hooks_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
