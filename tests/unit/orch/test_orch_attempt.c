/* test_orch_attempt.c - how an attempt ends (src/orch/orch_attempt.c):
 * one verdict, one dispatch.
 *
 * The pool's classes (DESIGN §14) through the real result path: an
 * environment failure requeues the task uncharged and stops the run, a
 * rate limit requeues it uncharged and pauses the pool while the run
 * goes on; a passing result without its declared output is a charged
 * missing_output failure.  Each verdict moves its task once (one event),
 * and the dispatch's order holds: the task moved, then the slot told
 * (never left busy with a task that is no longer its own), then the run's
 * stop. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orch_fixture.h"
#include "zerg/err.h"
#include "zerg/orchestrator.h"

/* Slot 0's running task fails with class fc (or passes with a missing
 * output when fc < 0); returns the task's index.  Its heartbeat comes
 * first unless stage is given: then the result alone, from that stage. */
static size_t end_in(struct fx *x, int fc, const char *stage)
{
    struct slot *sl = &x->o->slots[0];
    assert_true(sl->task >= 0);
    size_t t = (size_t)sl->task;
    const char *id = x->g->tasks[t].id;
    int attempt = x->s.tasks[t].attempt;
    if (!stage)
        heartbeat(x, 0, id, attempt, "command", 10);
    struct zerg_result r = {0};
    r.epoch = sl->proc.epoch;
    r.worker_id = 0;
    snprintf(r.task, sizeof r.task, "%s", id);
    r.attempt = attempt;
    snprintf(r.stage, sizeof r.stage, "%s", stage ? stage : "command");
    if (fc < 0) {
        r.outcome = ZERG_OUTCOME_COMPLETE;
        zerg_path_list_add(&r.missing, "out/never-made.txt");
    } else {
        r.outcome = ZERG_OUTCOME_FAILED;
        r.exit_code = 1;
        snprintf(r.error, sizeof r.error, "the test's failure");
        snprintf(r.fix, sizeof r.fix, "the test's fix");
        zerg_result_set_class(&r, (enum zerg_failure_class)fc);
    }
    assert_int_equal(zerg_proto_write_result(x->run_dir, &r, NULL), 0);
    char name[128];
    snprintf(name, sizeof name, "result-%s-%d.json", id, attempt);
    zerg_orch_file_changed(x->o, name, x->now);
    return t;
}

static size_t end_with(struct fx *x, int fc)
{
    return end_in(x, fc, NULL);
}

/* environment: requeued uncharged, the run stops and says why; the slot
 * was told its task is done before the stop reached it. */
static void test_environment_stops_the_run(void **state)
{
    (void)state;
    struct fx *x = fx_new(graph3, 1, 0);
    start_ready(x);
    size_t t = end_with(x, ZERG_FAILURE_ENVIRONMENT);
    struct zerg_task_state *st = &x->s.tasks[t];
    assert_int_equal(st->status, ZERG_TASK_PENDING);
    assert_int_equal(st->retry_count, 0);
    assert_int_equal(st->crash_count, 0);
    assert_int_equal(x->o->run_state, RUN_STOPPING);
    assert_true(x->o->failed_run);
    assert_non_null(strstr(x->o->run_error, "the test's fix"));
    assert_int_equal(x->o->slots[0].state, SLOT_STOPPING);
    assert_int_equal(x->o->slots[0].task, -1);
    assert_int_equal(fx_count_events(x, "task_failed"), 1);
    assert_int_equal(fx_count_events(x, "rush_stop"), 1);
    finish_workers(x);
    for (int i = 0; i < 4 && !zerg_orch_done(x->o); i++) {
        advance(x, 1);
        tick(x);
    }
    assert_true(zerg_orch_done(x->o));
    assert_int_equal(zerg_orch_exit_code(x->o), ZERG_EXIT_FAIL);
    assert_int_equal(st->status, ZERG_TASK_PENDING); /* for --resume */
    fx_free(x);
}

/* rate_limit: requeued uncharged, nothing claimed while the pool waits,
 * the run still active; after the wait the task runs again. */
static void test_rate_limit_pauses_the_pool(void **state)
{
    (void)state;
    struct fx *x = fx_new(graph3, 1, 0);
    start_ready(x);
    size_t t = end_with(x, ZERG_FAILURE_RATE_LIMIT);
    assert_int_equal(x->s.tasks[t].status, ZERG_TASK_PENDING);
    assert_int_equal(x->s.tasks[t].retry_count, 0);
    assert_int_equal(x->o->run_state, RUN_ACTIVE);
    assert_false(x->o->failed_run);
    assert_int_equal(fx_count_events(x, "pool_pause"), 1);
    assert_int_equal(x->o->slots[0].state, SLOT_READY);
    tick(x);
    assert_int_equal(x->o->slots[0].task, -1); /* paused: no claim */
    /* The wait, the idle worker beating meanwhile. */
    while (x->now <= x->o->pool_paused_until_mono_ns) {
        advance(x, 2);
        heartbeat(x, 0, NULL, 0, "ready", 0);
        tick(x);
    }
    assert_true(x->o->slots[0].task >= 0);
    assert_int_equal(fx_count_events(x, "pool_resume"), 1);
    fx_free(x);
}

/* A pass without a declared output: FAILED missing_output, charged, one
 * retry granted, no task_complete. */
static void test_missing_output_is_charged(void **state)
{
    (void)state;
    struct fx *x = fx_new(graph3, 1, 0);
    x->cfg.retry_attempts = 2;
    start_ready(x);
    size_t t = end_with(x, -1);
    struct zerg_task_state *st = &x->s.tasks[t];
    assert_int_equal(st->status, ZERG_TASK_WAITING_RETRY);
    assert_int_equal(st->retry_count, 1);
    assert_string_equal(st->reason, "missing_output");
    assert_int_equal(fx_count_events(x, "missing_output"), 1);
    assert_int_equal(fx_count_events(x, "task_failed"), 1);
    assert_int_equal(fx_count_events(x, "task_complete"), 0);
    assert_int_equal(x->o->slots[0].state, SLOT_READY);
    fx_free(x);
}

/* A task that fails faster than its worker's first heartbeat: the result
 * says it ran, so its attempt still has its task_started (joblog, report
 * and the worker of the attempt come from it), before its task_failed.
 * A failure in setup ran nothing: no task_started. */
static void test_result_before_any_heartbeat_says_started(void **state)
{
    (void)state;
    struct fx *x = fx_new(graph3, 1, 0);
    x->cfg.retry_attempts = 2;
    start_ready(x);
    size_t t = end_in(x, ZERG_FAILURE_TASK, "command");
    assert_int_equal(x->s.tasks[t].status, ZERG_TASK_WAITING_RETRY);
    assert_int_equal(fx_count_events(x, "task_started"), 1);
    char *ev = fx_events(x);
    char *started = strstr(ev, "\"task_started\"");
    char *failed = strstr(ev, "\"task_failed\"");
    assert_non_null(started);
    assert_non_null(failed);
    assert_true(started < failed);
    free(ev);
    assert_true(x->s.tasks[t].started_at_wall_ns > 0);
    fx_free(x);

    x = fx_new(graph3, 1, 0);
    x->cfg.retry_attempts = 2;
    start_ready(x);
    t = end_in(x, ZERG_FAILURE_TASK, "setup");
    assert_int_equal(x->s.tasks[t].status, ZERG_TASK_WAITING_RETRY);
    assert_int_equal(fx_count_events(x, "task_started"), 0);
    assert_int_equal(fx_count_events(x, "task_failed"), 1);
    fx_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_environment_stops_the_run),
        cmocka_unit_test(test_rate_limit_pauses_the_pool),
        cmocka_unit_test(test_missing_output_is_charged),
        cmocka_unit_test(test_result_before_any_heartbeat_says_started),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
