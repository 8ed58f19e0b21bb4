/* test_policy_builtin.c - the fixed safe answers (the `builtin` of
 * src/lua/policy_hooks.c, policy_scope.c and policy_reconcile.c).
 *
 * Each decision has one implementation, the bundled Lua; when even that
 * fails, C gives a fixed answer that never copies the policy and can only
 * make a run slower or shorter, never loop or lose work (DESIGN §22,
 * docs/wiki/Policy-API.md "When the bundled policy fails"):
 *
 *   backoff.delay    the configured max of its kind, clamped to [0, 1 h]
 *   stale.task/...   stale once the configured threshold has passed
 *   respawn.decide   no respawn: the slot retires
 *   retry.decide     no retry; charged as the failure class says
 *   reconcile.check  no fix
 *   scope.*          the hook's default verdict
 *
 * Every case runs with zerg_policy_force_builtin on, over inputs where
 * the bundled policy answers differently, so an answer that followed the
 * Lua (or the inputs) instead of the fixed rule fails here; the `why`
 * says who decided. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/clock.h"
#include "zerg/config.h"
#include "zerg/err.h"
#include "zerg/json.h"
#include "zerg/policy.h"

#define S ZERG_NS_PER_S

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
    zerg_policy_force_builtin(pol, 1);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    assert_int_equal(zerg_policy_error_count(pol), 0);
    zerg_policy_free(pol);
    zerg_config_free(&cfg);
    return 0;
}

/* Frees why after checking who decided. */
static void decided_builtin(zerg_json *why)
{
    assert_non_null(why);
    assert_string_equal(zerg_json_as_str(zerg_json_get(why, "policy")),
                        "builtin");
    assert_string_equal(zerg_json_as_str(zerg_json_get(why, "file")),
                        "(built in)");
    zerg_json_free(why);
}

/* The configured max, whatever the attempt (the Lua gives 2, 4, 8 ...). */
static void test_backoff_is_the_max(void **state)
{
    (void)state;
    cfg.spawn_backoff_max_ns = 30 * S;
    cfg.backoff_max_ns = 300 * S;
    static const int attempts[] = {-1, 0, 1, 2, 1000};
    for (size_t i = 0; i < sizeof attempts / sizeof *attempts; i++) {
        zerg_json *why = NULL;
        assert_int_equal(
            zerg_policy_backoff_ns(pol, "spawn", attempts[i], &why), 30 * S);
        decided_builtin(why);
        assert_int_equal(zerg_policy_backoff_ns(pol, "task", attempts[i], NULL),
                         300 * S);
    }
    cfg.backoff_max_ns = 7 * 24 * 3600 * S; /* a week: clamped to 1 h */
    assert_int_equal(zerg_policy_backoff_ns(pol, "task", 1, NULL), 3600 * S);
    zerg_policy_force_builtin(pol, 0);
    assert_true(zerg_policy_backoff_ns(pol, "spawn", 1, NULL) < 30 * S);
}

/* The threshold itself, to the nanosecond's second. */
static void test_stale_is_the_threshold(void **state)
{
    (void)state;
    cfg.task_stale_timeout_ns = 600 * S;
    cfg.heartbeat_stale_threshold_ns = 120 * S;
    int64_t t0 = 1000 * S;
    zerg_json *why = NULL;
    assert_false(
        zerg_policy_stale_task(pol, "T", 0, t0, t0, t0 + 599 * S, &why));
    decided_builtin(why);
    assert_true(
        zerg_policy_stale_task(pol, "T", 0, t0, t0, t0 + 600 * S, NULL));
    assert_false(zerg_policy_stale_worker(pol, 1, 5, t0, t0 + 119 * S, NULL));
    assert_true(zerg_policy_stale_worker(pol, 1, 5, t0, t0 + 121 * S, &why));
    decided_builtin(why);
}

/* Never a respawn, even far under the cap with work left (the Lua
 * respawns there). */
static void test_respawn_never(void **state)
{
    (void)state;
    struct zerg_respawn_in in = {.slot = 2,
                                 .respawn_count = 0,
                                 .exit_code = 1,
                                 .uptime_ns = 90 * S,
                                 .was_ready = 1,
                                 .work_left = 12};
    zerg_json *why = NULL;
    assert_false(zerg_policy_respawn(pol, &in, &why));
    assert_non_null(
        strstr(zerg_json_as_str(zerg_json_get(why, "reason")), "builtin"));
    decided_builtin(why);
    zerg_policy_force_builtin(pol, 0);
    assert_true(zerg_policy_respawn(pol, &in, NULL));
}

/* No retry, with a fresh budget; a crash stays uncharged, a task
 * failure is charged (include/zerg/failure.h). */
static void test_retry_never(void **state)
{
    (void)state;
    static const struct {
        const char *kind;
        int charge;
    } kinds[] = {{"exit", 1},  {"verification", 1},    {"timeout", 1},
                 {"crash", 0}, {"heartbeat_stale", 0}, {"missing_output", 1}};
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
        struct zerg_retry_in in = {.task_id = "T",
                                   .attempt = 1,
                                   .failure = kinds[i].kind,
                                   .exit_code = 1};
        struct zerg_retry_out out;
        memset(&out, 0x5a, sizeof out);
        zerg_json *why = NULL;
        zerg_policy_retry(pol, &in, &out, &why);
        decided_builtin(why);
        assert_false(out.retry);
        assert_int_equal(out.delay_ns, 0);
        assert_int_equal(out.charge, kinds[i].charge);
        assert_string_equal(out.reason, "no retry (builtin)");
    }
    struct zerg_retry_in in = {.task_id = "T", .attempt = 1, .failure = "exit"};
    struct zerg_retry_out out;
    zerg_policy_force_builtin(pol, 0);
    zerg_policy_retry(pol, &in, &out, NULL);
    assert_true(out.retry);
}

/* No fix, for a snapshot where the Lua makes one (a task claimed by a
 * dead worker is requeued). */
static void test_reconcile_no_fix(void **state)
{
    (void)state;
    struct zerg_err err = {0};
    static const char text[] =
        "{\"thorough\":true,\"current_level\":1,\"tasks\":{\"A\":{"
        "\"status\":\"in_progress\",\"level\":1,\"graph_level\":1,"
        "\"worker\":0,\"worker_alive\":false,\"deps\":[]}},"
        "\"levels\":[{\"status\":\"running\",\"tasks\":1,\"unfinished\":1}]}";
    zerg_json *snap = zerg_json_parse(text, sizeof text - 1, &err);
    assert_non_null(snap);
    struct zerg_fix *fixes = NULL;
    size_t n = 99;
    zerg_json *why = NULL;
    assert_int_equal(zerg_policy_reconcile(pol, snap, &fixes, &n, &why), 0);
    assert_int_equal(n, 0);
    assert_null(fixes);
    decided_builtin(why);
    zerg_policy_force_builtin(pol, 0);
    assert_int_equal(zerg_policy_reconcile(pol, snap, &fixes, &n, NULL), 0);
    assert_int_equal(n, 1);
    assert_string_equal(fixes[0].fix, "requeue");
    free(fixes);
    zerg_json_free(snap);
}

/* The default verdict of each hook, the paths counted. */
static void test_scope_defaults(void **state)
{
    (void)state;
    static const char *const paths[] = {"a", "b"};
    static const struct {
        enum zerg_scope_hook hook;
        enum zerg_scope_verdict verdict;
        const char *reason;
    } want[] = {
        {ZERG_SCOPE_DECIDE, ZERG_SCOPE_WARN, "out of scope (2 paths, builtin)"},
        {ZERG_SCOPE_CONFIG, ZERG_SCOPE_WARN,
         "changes zerg's own configuration: review before merging (2 paths, "
         "builtin)"},
        {ZERG_SCOPE_MISSING, ZERG_SCOPE_FAIL,
         "missing_output: files.create not made (2 paths, builtin)"},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        char reason[256];
        zerg_json *why = NULL;
        assert_int_equal(zerg_policy_scope_hook(pol, want[i].hook, NULL, paths,
                                                2, reason, sizeof reason, &why),
                         want[i].verdict);
        assert_string_equal(reason, want[i].reason);
        decided_builtin(why);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_backoff_is_the_max, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_stale_is_the_threshold, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_respawn_never, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retry_never, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reconcile_no_fix, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scope_defaults, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
