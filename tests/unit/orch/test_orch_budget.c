/* test_orch_budget.c - rush.max_cost_usd (src/orch/orch_pool.c, DESIGN
 * §14): once the recorded spend reaches the cap no new task is claimed
 * (budget_exhausted), the running ones finish, and the rush ends with
 * exit 1 and a message that says how to go on. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orch_fixture.h"
#include "zerg/err.h"
#include "zerg/orchestrator.h"

/* Three level-1 tasks: two run on the two workers, one waits. */
static const char graph_abc[] =
    "{\"feature\":\"t\",\"tasks\":["
    "{\"id\":\"A\",\"level\":1,\"command\":\"true\"},"
    "{\"id\":\"B\",\"level\":1,\"command\":\"true\"},"
    "{\"id\":\"C\",\"level\":1,\"command\":\"true\"}]}";

static int slot_of(struct fx *x, const char *id)
{
    int t = zerg_graph_find(x->g, id);
    for (int i = 0; i < x->o->nslots; i++)
        if (x->o->slots[i].task == t)
            return i;
    return -1;
}

/* Two workers busy with A and B, C pending, rush.max_cost_usd at cap. */
static struct fx *two_running(double cap)
{
    struct fx *x = fx_new(graph_abc, 2, 0);
    x->cfg.rush_max_cost_usd = cap;
    start_ready(x);
    assert_true(slot_of(x, "A") >= 0);
    assert_true(slot_of(x, "B") >= 0);
    assert_int_equal(status_of(x, "C"), ZERG_TASK_PENDING);
    heartbeat(x, slot_of(x, "A"), "A", 1, "command", 10);
    heartbeat(x, slot_of(x, "B"), "B", 1, "command", 10);
    return x;
}

static void test_cap_reached_stops_claims_running_finish(void **st)
{
    (void)st;
    struct fx *x = two_running(1.0);
    int a = slot_of(x, "A"), b = slot_of(x, "B");
    result_cost(x, a, "A", 1, 1.25); /* the spend passes the cap */
    assert_int_equal(status_of(x, "A"), ZERG_TASK_COMPLETE);
    assert_int_equal(fx_count_events(x, "budget_exhausted"), 1);
    for (int i = 0; i < 3; i++) {
        advance(x, 1);
        heartbeat(x, a, NULL, 0, "ready", 0);
        heartbeat(x, b, "B", 1, "command", 20);
        tick(x);
    }
    /* The idle worker claims nothing; B runs on; the rush goes on. */
    assert_int_equal(x->o->slots[a].task, -1);
    assert_int_equal(status_of(x, "C"), ZERG_TASK_PENDING);
    assert_int_equal(task_of(x, "C")->attempt, 0);
    assert_int_equal(status_of(x, "B"), ZERG_TASK_IN_PROGRESS);
    assert_false(zerg_orch_done(x->o));
    result_cost(x, b, "B", 1, 0.5);
    assert_int_equal(status_of(x, "B"), ZERG_TASK_COMPLETE);
    assert_int_equal(fx_count_events(x, "budget_exhausted"), 1);
    for (int i = 0; i < 5 && !zerg_orch_done(x->o); i++) {
        tick(x);
        finish_workers(x);
    }
    assert_true(zerg_orch_done(x->o));
    assert_int_equal(zerg_orch_exit_code(x->o), ZERG_EXIT_FAIL);
    assert_int_equal(status_of(x, "C"), ZERG_TASK_PENDING);
    assert_int_equal(task_of(x, "C")->attempt, 0);
    assert_int_equal(fx_count_events(x, "task_claimed"), 2);
    char sum[1024];
    zerg_orch_summary(x->o, sum, sizeof sum);
    assert_non_null(strstr(sum, "rush.max_cost_usd ($1.00) reached: $1.75 "
                                "spent; raise it and continue with `zerg "
                                "rush --resume`"));
    fx_free(x);
}

/* Below the cap (and with no cap) the spend changes nothing. */
static void test_below_cap_claims_on(void **st)
{
    (void)st;
    for (int cap = 0; cap < 2; cap++) {
        struct fx *x = two_running(cap ? 1.0 : 0);
        int a = slot_of(x, "A");
        result_cost(x, a, "A", 1, cap ? 0.75 : 100.0);
        assert_int_equal(status_of(x, "A"), ZERG_TASK_COMPLETE);
        heartbeat(x, a, NULL, 0, "ready", 0);
        tick(x);
        assert_int_equal(slot_of(x, "C"), a);
        assert_int_equal(fx_count_events(x, "budget_exhausted"), 0);
        fx_free(x);
    }
}

/* A resumed rush counts what the state already recorded. */
static void test_resumed_spend_counts(void **st)
{
    (void)st;
    struct fx *x = two_running(1.0);
    result_cost(x, slot_of(x, "A"), "A", 1, 0.75);
    assert_int_equal(fx_count_events(x, "budget_exhausted"), 0);
    fx_restart(x, 2);
    x->cfg.rush_max_cost_usd = 1.0;
    start_ready(x);
    int b = slot_of(x, "B");
    assert_true(b >= 0);
    heartbeat(x, b, "B", task_of(x, "B")->attempt, "command", 10);
    result_cost(x, b, "B", task_of(x, "B")->attempt, 0.25); /* $1.00 */
    assert_int_equal(fx_count_events(x, "budget_exhausted"), 1);
    fx_free(x);
}

/* The spend of running attempts counts (DESIGN §20): their heartbeats
 * pass the cap before any result does; with cost_cap_action finish they
 * run on, with stop the rush stops them. */
static void test_in_flight_spend_reaches_cap(void **st)
{
    (void)st;
    for (int stop = 0; stop < 2; stop++) {
        struct fx *x = two_running(1.0);
        x->cfg.rush_cost_cap_action =
            stop ? ZERG_COST_CAP_STOP : ZERG_COST_CAP_FINISH;
        int a = slot_of(x, "A"), b = slot_of(x, "B");
        heartbeat_spend(x, a, "A", 1, 5000, 0.6);
        tick(x);
        assert_int_equal(fx_count_events(x, "budget_exhausted"), 0);
        heartbeat_spend(x, b, "B", 1, 5000, 0.5); /* 1.10 in flight */
        tick(x);
        assert_int_equal(fx_count_events(x, "budget_exhausted"), 1);
        assert_int_equal(x->o->stop_asked != 0, stop);
        assert_int_equal(status_of(x, "C"), ZERG_TASK_PENDING);
        fx_free(x);
    }
}

/* An attempt whose worker dies keeps the spend its heartbeats reported:
 * its tokens and cost reach the task, and count once. */
static void test_killed_attempt_keeps_spend(void **st)
{
    (void)st;
    struct fx *x = two_running(0);
    int a = slot_of(x, "A");
    heartbeat_spend(x, a, "A", 1, 1234, 0.25);
    tick(x);
    exited(x, a, 9); /* SIGKILL, as a wait status */
    tick(x);
    assert_int_equal(task_of(x, "A")->input_tokens, 1234);
    assert_true(task_of(x, "A")->cost_usd > 0.24 &&
                task_of(x, "A")->cost_usd < 0.26);
    assert_int_equal(task_of(x, "A")->cost_estimated, 1);
    fx_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cap_reached_stops_claims_running_finish),
        cmocka_unit_test(test_below_cap_claims_on),
        cmocka_unit_test(test_resumed_spend_counts),
        cmocka_unit_test(test_in_flight_spend_reaches_cap),
        cmocka_unit_test(test_killed_attempt_keeps_spend),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
