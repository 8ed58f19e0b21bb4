/* test_orch_run.c - the run life cycle table (src/orch/orch_run.c).
 *
 * The stops and endings themselves are stepped in test_orch_stop.c,
 * test_orch_budget.c, test_orch_halt.c and test_orchestrator.c; here:
 * the table in docs/wiki/Resilience-Architecture.md is the one the code
 * renders (ZERG_UPDATE_DOCS=1 rewrites it), the run walks ACTIVE ->
 * FINISHING -> SAVING -> DONE on a plain rush, each stop takes its own
 * way to DONE, a second stop changes nothing, a closed run stops once
 * nothing runs, and an event the table refuses is logged whole. */
#include "testutil.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orch_fixture.h"
#include "zerg/err.h"
#include "zerg/orchestrator.h"

static void test_run_table_in_docs(void **state)
{
    (void)state;
    char buf[8192];
    int n = orch_run_table_markdown(buf, sizeof buf);
    assert_true(n > 0 && (size_t)n < sizeof buf);
    tu_check_doc_table("docs/wiki/Resilience-Architecture.md", "run", buf);
}

/* Ticks until the run is done (a few at most: nothing here waits). */
static void tick_to_done(struct fx *x)
{
    for (int i = 0; i < 8 && !zerg_orch_done(x->o); i++) {
        advance(x, 4);
        tick(x);
    }
    assert_true(zerg_orch_done(x->o));
}

static void test_plain_rush_walks_to_done(void **state)
{
    (void)state;
    struct fx *x = fx_new(graph3, 2, 0);
    assert_int_equal(x->o->run_state, RUN_ACTIVE);
    start_ready(x);
    complete_slot(x, 0);
    complete_slot(x, 1);
    tick(x);
    complete_slot(x, 0);
    tick(x);
    assert_int_equal(x->o->run_state, RUN_FINISHING);
    finish_workers(x);
    tick_to_done(x);
    assert_int_equal(x->o->run_state, RUN_DONE);
    assert_int_equal(zerg_orch_exit_code(x->o), ZERG_EXIT_OK);
    assert_int_equal(fx_count_events(x, "rush_complete"), 1);
    assert_int_equal(fx_count_events(x, "run_event_refused"), 0);
    fx_free(x);
}

/* Graceful: STOPPING; the deadline passes with a worker alive: KILLING
 * (stop_grace_over said once), then SAVING and DONE once it is reaped. */
static void test_graceful_stop_then_grace_over(void **state)
{
    (void)state;
    struct fx *x = fx_new(graph3, 1, 0);
    start_ready(x);
    zerg_orch_request_stop(x->o, 0, x->now);
    assert_int_equal(x->o->run_state, RUN_STOPPING);
    assert_int_equal(x->o->stop_asked, 1);
    zerg_orch_request_stop(x->o, 0, x->now); /* a second one: nop */
    assert_int_equal(fx_count_events(x, "rush_stop"), 1);
    advance(x, ORCH_SEC(x->cfg.stop_grace_ns + ORCH_STOP_MARGIN_NS) + 0.1);
    tick(x);
    assert_int_equal(x->o->run_state, RUN_KILLING);
    assert_int_equal(fx_count_events(x, "stop_grace_over"), 1);
    advance(x, 1.1);
    tick(x); /* killed again; still no stop_grace_over twice */
    assert_int_equal(fx_count_events(x, "stop_grace_over"), 1);
    finish_workers(x);
    tick_to_done(x);
    assert_int_equal(zerg_orch_exit_code(x->o), ZERG_EXIT_FAIL);
    assert_int_equal(fx_count_events(x, "rush_failed"), 1);
    fx_free(x);
}

/* Forced from STOPPING: KILLING at once; a graceful one after it is a
 * nop (the run does not go back to waiting out a grace). */
static void test_force_after_graceful(void **state)
{
    (void)state;
    struct fx *x = fx_new(graph3, 1, 0);
    start_ready(x);
    zerg_orch_request_stop(x->o, 0, x->now);
    zerg_orch_request_stop(x->o, 1, x->now);
    assert_int_equal(x->o->run_state, RUN_KILLING);
    assert_int_equal(x->o->stop_asked, 2);
    zerg_orch_request_stop(x->o, 0, x->now);
    assert_int_equal(x->o->run_state, RUN_KILLING);
    assert_int_equal(x->fake.last_sig, SIGKILL);
    finish_workers(x);
    tick_to_done(x);
    fx_free(x);
}

/* CLOSED: nothing new is claimed, the running task finishes, then the
 * run stops on its own (the spend cap's sentence written at that point). */
static void test_closed_stops_when_idle(void **state)
{
    (void)state;
    struct fx *x = fx_new(graph3, 2, 0);
    start_ready(x);
    assert_true(assign_of(x, 0).task[0] && assign_of(x, 1).task[0]);
    orch_run_event(x->o, RUN_EV_CLOSE, 0, x->now);
    assert_int_equal(x->o->run_state, RUN_CLOSED);
    complete_slot(x, 0);
    tick(x);
    assert_int_equal(x->o->run_state, RUN_CLOSED); /* slot 1 still runs */
    complete_slot(x, 1);
    tick(x);
    assert_int_equal(x->o->run_state, RUN_STOPPING);
    assert_int_equal(x->o->stop_asked, 1);
    finish_workers(x);
    tick_to_done(x);
    assert_int_equal(status_of(x, "A-L2-001"), ZERG_TASK_PENDING);
    fx_free(x);
}

/* REOPEN in FINISHING goes on; in a run that failed it does not, and in
 * ACTIVE it means nothing.  GONE in ACTIVE cannot happen: refused and
 * logged with the event and the state, nothing changes. */
static void test_reopen_and_refused(void **state)
{
    (void)state;
    struct fx *x = fx_new(graph3, 1, 0);
    orch_run_event(x->o, RUN_EV_REOPEN, 2, x->now);
    assert_int_equal(x->o->run_state, RUN_ACTIVE);
    assert_int_equal(fx_count_events(x, "rush_continues"), 0);
    orch_run_event(x->o, RUN_EV_ALL_ENDED, 0, x->now);
    assert_int_equal(x->o->run_state, RUN_FINISHING);
    orch_run_event(x->o, RUN_EV_REOPEN, 2, x->now);
    assert_int_equal(x->o->run_state, RUN_ACTIVE);
    assert_int_equal(fx_count_events(x, "rush_continues"), 1);
    orch_run_event(x->o, RUN_EV_ALL_ENDED, 0, x->now);
    orch_run_fail(x->o, "broken for the test");
    orch_run_event(x->o, RUN_EV_REOPEN, 2, x->now);
    assert_int_equal(x->o->run_state, RUN_FINISHING);
    fx_free(x);

    x = fx_new(graph3, 1, 0);
    orch_run_event(x->o, RUN_EV_GONE, 0, x->now);
    assert_int_equal(x->o->run_state, RUN_ACTIVE);
    char *ev = fx_events(x);
    if (!strstr(ev, "\"event\":\"run_event_refused\"") ||
        !strstr(ev, "\"event\":\"GONE\",\"state\":\"ACTIVE\""))
        fail_msg("no whole run_event_refused in the log:\n%s", ev);
    free(ev);
    fx_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_table_in_docs),
        cmocka_unit_test(test_plain_rush_walks_to_done),
        cmocka_unit_test(test_graceful_stop_then_grace_over),
        cmocka_unit_test(test_force_after_graceful),
        cmocka_unit_test(test_closed_stops_when_idle),
        cmocka_unit_test(test_reopen_and_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
