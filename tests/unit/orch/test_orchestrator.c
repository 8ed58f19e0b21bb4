/* test_orchestrator.c - the rush state machine, stepped by hand.
 *
 * A fake launcher (no processes) and a fake monotonic clock: the tests
 * spawn, write heartbeats and results into a temp state dir, report child
 * exits and advance time by numbers, then check what the orchestrator
 * decided.  Covers FR-1 (spawn retry + backoff), FR-2 (task timeout,
 * charged), FR-3 (stale heartbeat -> crash), FR-5 (crash reassign,
 * uncharged, crash_loop cap), FR-6 (respawn cap), fencing and resume.
 * The fixture is orch_fixture.c. */
#include "testutil.h"

#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "orch_fixture.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/orchestrator.h"
#include "zerg/retry.h"

/* ---- tests ---- */

static void test_happy_path_levels_in_order(void **st)
{
    (void)st;
    struct fx *x = fx_new(graph3, 2, 0);
    start_ready(x);
    /* Level 1 tasks go out; the level-2 task waits for level 1. */
    assert_int_equal(status_of(x, "A-L1-001"), ZERG_TASK_CLAIMED);
    assert_int_equal(status_of(x, "A-L1-002"), ZERG_TASK_CLAIMED);
    assert_int_equal(status_of(x, "A-L2-001"), ZERG_TASK_PENDING);
    assert_int_equal(x->s.current_level, 1);
    complete_slot(x, 0);
    tick(x);
    assert_int_equal(status_of(x, "A-L2-001"), ZERG_TASK_PENDING);
    complete_slot(x, 1);
    tick(x);
    assert_int_equal(x->s.current_level, 2);
    assert_int_equal(x->s.levels[1].status, ZERG_LEVEL_COMPLETE);
    int slot = x->o->slots[0].task >= 0 ? 0 : 1;
    complete_slot(x, slot);
    tick(x); /* all terminal: workers are told to stop */
    assert_false(zerg_orch_done(x->o));
    finish_workers(x);
    assert_true(zerg_orch_done(x->o));
    assert_int_equal(zerg_orch_exit_code(x->o), ZERG_EXIT_OK);
    assert_string_equal(x->s.status, "complete");
    /* The state on disk says the same. */
    char path[400];
    snprintf(path, sizeof path, "%s/t.json", x->state_dir);
    char *doc = tu_read(path);
    assert_true(tu_contains(doc, "\"complete\""));
    free(doc);
    fx_free(x);
}

static void test_spawn_retry_with_backoff(void **st)
{
    (void)st;
    struct fx *x = fx_new(graph3, 1, 0);
    x->fake.fail_spawns = 2;
    tick(x);
    assert_int_equal(x->fake.spawns, 1);
    assert_int_equal(x->s.metrics.spawn_retries, 1);
    advance(x, 1.9); /* exponential: 2 s before retry 1 */
    assert_int_equal(x->fake.spawns, 1);
    advance(x, 0.1);
    assert_int_equal(x->fake.spawns, 2);
    advance(x, 3.9); /* 4 s before retry 2 */
    assert_int_equal(x->fake.spawns, 2);
    advance(x, 0.1);
    assert_int_equal(x->fake.spawns, 3);
    assert_true(slot_alive(&x->o->slots[0]));
    assert_int_equal(x->s.metrics.spawn_retries, 2);
    /* The worker exits before it is ready: that is a failed spawn too. */
    exited(x, 0, 1 << 8);
    assert_int_equal(x->s.metrics.spawn_retries, 3);
    assert_int_equal(x->s.workers[0].status, ZERG_WORKER_BACKOFF);
    fx_free(x);
}

static void test_spawn_retries_exhausted_fails_run(void **st)
{
    (void)st;
    struct fx *x = fx_new(graph3, 1, 0);
    x->fake.fail_spawns = 100;
    for (int i = 0; i < 10 && !zerg_orch_done(x->o); i++)
        advance(x, 31);
    assert_int_equal(x->fake.spawns, 4); /* 1 + 3 retries */
    assert_true(zerg_orch_done(x->o));
    assert_int_equal(zerg_orch_exit_code(x->o), ZERG_EXIT_FAIL);
    assert_int_equal(x->s.workers[0].status, ZERG_WORKER_RETIRED);
    assert_true(tu_contains(x->s.error, "no worker is left"));
    fx_free(x);
}

static void test_permanent_spawn_failure_not_retried(void **st)
{
    (void)st;
    struct fx *x = fx_new(graph3, 2, 0);
    x->fake.fail_spawns = 100;
    x->fake.permanent = 1;
    tick(x);
    tick(x);
    assert_int_equal(x->fake.spawns, 2);
    assert_int_equal(x->s.metrics.spawn_retries, 0);
    assert_true(zerg_orch_done(x->o) || (tick(x), zerg_orch_done(x->o)));
    fx_free(x);
}

static void test_crash_reassigns_uncharged_and_respawns(void **st)
{
    (void)st;
    struct fx *x = fx_new(graph3, 1, 0);
    start_ready(x);
    int t = x->o->slots[0].task;
    const char *id = x->g->tasks[t].id;
    heartbeat(x, 0, id, 1, "command", 10);
    exited(x, 0, SIGKILL); /* kill -9 */
    assert_int_equal(x->s.tasks[t].status, ZERG_TASK_PENDING);
    assert_int_equal(x->s.tasks[t].retry_count, 0);
    assert_int_equal(x->s.tasks[t].crash_count, 1);
    assert_int_equal(x->s.metrics.task_reassignments, 1);
    assert_int_equal(x->s.metrics.worker_respawns, 1);
    assert_int_equal(x->s.workers[0].respawn_count, 1);
    tick(x);
    assert_int_equal(x->fake.spawns, 2);
    heartbeat(x, 0, NULL, 0, "ready", 0);
    tick(x);
    assert_int_equal(x->o->slots[0].task, t); /* same task, new worker */
    assert_int_equal(x->s.tasks[t].attempt, 2);
    fx_free(x);
}

static void test_crash_loop_cap(void **st)
{
    (void)st;
    struct fx *x = fx_new(graph3, 1, 0);
    x->cfg.max_task_crashes = 2;
    x->cfg.max_respawn_attempts = 10;
    start_ready(x);
    int t = x->o->slots[0].task;
    for (int i = 0; i < 2; i++) {
        heartbeat(x, 0, x->g->tasks[t].id, x->s.tasks[t].attempt, "command",
                  10);
        exited(x, 0, SIGKILL);
        tick(x);
        heartbeat(x, 0, NULL, 0, "ready", 0);
        tick(x);
        assert_int_equal(x->o->slots[0].task, t);
    }
    exited(x, 0, SIGKILL);
    assert_int_equal(x->s.tasks[t].status, ZERG_TASK_FAILED);
    assert_string_equal(x->s.tasks[t].reason, "crash_loop");
    assert_int_equal(x->s.tasks[t].retry_count, 0);
    fx_free(x);
}

static void test_stale_heartbeat_kills_and_reassigns(void **st)
{
    (void)st;
    struct fx *x = fx_new(graph3, 1, 0);
    start_ready(x);
    int t = x->o->slots[0].task;
    heartbeat(x, 0, x->g->tasks[t].id, 1, "command", 10);
    advance(x, 4.9);
    assert_int_equal(x->fake.kills, 0);
    advance(x, 1.0); /* within one interval (1 s) past the 5 s threshold */
    assert_int_equal(x->fake.kills, 1);
    assert_int_equal(x->fake.last_sig, SIGKILL);
    assert_int_equal(x->s.metrics.stale_detections, 1);
    exited(x, 0, SIGKILL);
    assert_int_equal(x->s.tasks[t].status, ZERG_TASK_PENDING);
    assert_int_equal(x->s.tasks[t].retry_count, 0);
    assert_int_equal(x->s.metrics.task_reassignments, 1);
    fx_free(x);
}

static void test_task_timeout_is_charged(void **st)
{
    (void)st;
    struct fx *x = fx_new(graph3, 1, 0);
    start_ready(x);
    int t = x->o->slots[0].task;
    const char *id = x->g->tasks[t].id;
    heartbeat(x, 0, id, 1, "command", 10);
    /* Heartbeats keep coming (the worker is alive) but no progress. */
    for (int i = 0; i < 19; i++) {
        advance(x, 1);
        heartbeat(x, 0, id, 1, "command", 10);
    }
    assert_int_equal(x->fake.kills, 0);
    advance(x, 1.1);
    assert_int_equal(x->fake.kills, 1);
    assert_int_equal(x->s.metrics.task_timeouts, 1);
    exited(x, 0, SIGKILL);
    assert_int_equal(x->s.tasks[t].status, ZERG_TASK_WAITING_RETRY);
    assert_int_equal(x->s.tasks[t].retry_count, 1);
    assert_string_equal(x->s.tasks[t].reason, "timeout");
    assert_int_equal(x->s.workers[0].respawn_count, 0);
    fx_free(x);
}

static void test_failure_retries_then_blocks_dependents(void **st)
{
    (void)st;
    struct fx *x = fx_new(graph3, 1, 0);
    x->cfg.retry_attempts = 1;
    x->cfg.backoff_base_ns = S(1);
    start_ready(x);
    /* Fail A-L1-001 until it is permanently failed. */
    for (int round = 0; round < 2; round++) {
        while (x->o->slots[0].task >= 0 &&
               strcmp(x->g->tasks[x->o->slots[0].task].id, "A-L1-001"))
            complete_slot(x, 0), tick(x);
        if (x->o->slots[0].task < 0)
            advance(x, 1.5);
        int t = x->o->slots[0].task;
        assert_string_equal(x->g->tasks[t].id, "A-L1-001");
        result(x, 0, x->o->slots[0].proc.epoch, "A-L1-001",
               x->s.tasks[t].attempt, 0);
        tick(x);
    }
    assert_int_equal(status_of(x, "A-L1-001"), ZERG_TASK_FAILED);
    assert_int_equal(task_of(x, "A-L1-001")->retry_count, 1);
    assert_int_equal(status_of(x, "A-L2-001"), ZERG_TASK_BLOCKED);
    while (x->o->slots[0].task >= 0)
        complete_slot(x, 0), tick(x);
    finish_workers(x);
    assert_true(zerg_orch_done(x->o));
    assert_int_equal(zerg_orch_exit_code(x->o), ZERG_EXIT_FAIL);
    fx_free(x);
}

static void test_result_from_dead_epoch_is_fenced(void **st)
{
    (void)st;
    struct fx *x = fx_new(graph3, 1, 0);
    start_ready(x);
    int t = x->o->slots[0].task;
    uint64_t old_epoch = x->o->slots[0].proc.epoch;
    heartbeat(x, 0, x->g->tasks[t].id, 1, "command", 10);
    exited(x, 0, SIGKILL);
    tick(x);
    heartbeat(x, 0, NULL, 0, "ready", 0);
    tick(x);
    /* The dead incarnation's late result must not complete the task. */
    result(x, 0, old_epoch, x->g->tasks[t].id, 1, 1);
    assert_int_equal(x->s.metrics.results_fenced, 1);
    assert_int_equal(x->s.tasks[t].status, ZERG_TASK_CLAIMED);
    fx_free(x);
}

static void test_respawn_cap_retires_slot(void **st)
{
    (void)st;
    struct fx *x = fx_new(graph3, 1, 0);
    x->cfg.max_respawn_attempts = 1;
    start_ready(x);
    exited(x, 0, SIGKILL);
    assert_int_equal(x->s.workers[0].respawn_count, 1);
    tick(x);
    heartbeat(x, 0, NULL, 0, "ready", 0);
    tick(x);
    exited(x, 0, SIGKILL);
    assert_int_equal(x->s.workers[0].status, ZERG_WORKER_RETIRED);
    tick(x);
    tick(x);
    assert_true(zerg_orch_done(x->o));
    assert_int_equal(zerg_orch_exit_code(x->o), ZERG_EXIT_FAIL);
    fx_free(x);
}

static void test_resume_applies_journal_and_requeues(void **st)
{
    (void)st;
    struct fx *x = fx_new(graph3, 2, 0);
    start_ready(x);
    int t0 = x->o->slots[0].task, t1 = x->o->slots[1].task;
    heartbeat(x, 0, x->g->tasks[t0].id, 1, "command", 10);
    heartbeat(x, 1, x->g->tasks[t1].id, 1, "command", 10);
    orch_checkpoint(x->o, x->now, 1);
    /* Worker 0 finishes while the orchestrator is "down": its result is
     * on disk but nobody applied it. */
    write_result(x, 0, x->o->slots[0].proc.epoch, x->g->tasks[t0].id, 1, 1);
    fx_restart(x, 2);
    assert_int_equal(x->s.tasks[t0].status, ZERG_TASK_COMPLETE);
    assert_int_equal(x->s.tasks[t1].status, ZERG_TASK_PENDING);
    assert_int_equal(x->s.tasks[t1].retry_count, 0);
    fx_free(x);
}

/* graph3 on one worker with level 1 done: the run is at level 2. */
static struct fx *level1_done(void)
{
    struct fx *x = fx_new(graph3, 1, 0);
    start_ready(x);
    complete_slot(x, 0);
    tick(x);
    complete_slot(x, 0);
    tick(x);
    assert_int_equal(x->s.current_level, 2);
    return x;
}

static void test_reconcile_reopens_level(void **st)
{
    (void)st;
    struct fx *x = level1_done();
    /* Corrupt the state by hand: level 1 done but a task pending again,
     * and a null level. */
    task_of(x, "A-L1-002")->status = ZERG_TASK_PENDING;
    task_of(x, "A-L1-002")->level = 0;
    int fixes = orch_reconcile(x->o, 1, x->now);
    assert_true(fixes >= 2);
    assert_int_equal(x->s.levels[1].status, ZERG_LEVEL_RUNNING);
    assert_int_equal(x->s.current_level, 1);
    assert_int_equal(task_of(x, "A-L1-002")->level, 1);
    fx_free(x);
}

/* The "tasks_checked" of the last state_reconcile_complete event. */
static int last_checked(struct fx *x)
{
    char *log = fx_events(x), *at = NULL, *p = log;
    while ((p = strstr(p, "\"tasks_checked\":")))
        at = p++;
    int n = at ? atoi(at + strlen("\"tasks_checked\":")) : -1;
    free(log);
    return n;
}

/* A thorough check shows the policy only the tasks a fix can concern: a
 * pending task whose dependency failed (and the failed one), not the
 * complete tasks nor a pending task with nothing failed below it; the
 * block fix still lands. */
static void test_thorough_snapshot_holds_candidates_only(void **st)
{
    (void)st;
    struct fx *x = level1_done();
    finish_workers(x);
    /* Nothing to fix: the complete tasks and the pending one are left
     * out. */
    task_of(x, "A-L2-001")->status = ZERG_TASK_PENDING;
    task_of(x, "A-L2-001")->worker_id = -1;
    assert_int_equal(orch_reconcile(x->o, 1, x->now), 0);
    assert_int_equal(last_checked(x), 0);
    /* Its dependency failed (a state edited by hand): both are shown, and
     * the pending one is blocked. */
    task_of(x, "A-L1-001")->status = ZERG_TASK_FAILED;
    assert_true(orch_reconcile(x->o, 1, x->now) >= 1);
    assert_int_equal(last_checked(x), 2);
    assert_int_equal(status_of(x, "A-L2-001"), ZERG_TASK_BLOCKED);
    fx_free(x);
}

/* The orchestrator dies after a worker finished a task whose claim never
 * reached a checkpoint: the journal still counts, the task is not run
 * again, and no epoch of the dead run is handed out twice. */
static void test_resume_result_of_unsaved_claim(void **st)
{
    (void)st;
    struct fx *x = fx_new(graph3, 1, 0);
    orch_checkpoint(x->o, x->now, 1); /* everything pending on disk */
    char path[400];
    snprintf(path, sizeof path, "%s/t.json", x->state_dir);
    char *before = tu_read(path);
    assert_non_null(before);
    start_ready(x);
    int t = x->o->slots[0].task;
    uint64_t epoch = x->o->slots[0].proc.epoch;
    write_result(x, 0, epoch, x->g->tasks[t].id, 1, 1);
    /* The claim never reached the disk. */
    tu_write(x->state_dir, "t.json", before);
    free(before);
    fx_restart(x, 1);
    assert_int_equal(x->s.tasks[t].status, ZERG_TASK_COMPLETE);
    assert_true(x->s.next_epoch > epoch);
    fx_free(x);
}

/* A fresh run does not inherit the previous run's result files. */
static void test_fresh_run_drops_old_results(void **st)
{
    (void)st;
    struct fx *x = fx_new(graph3, 1, 0);
    write_result(x, 0, 1, "A-L1-001", 1, 1);
    zerg_orch_free(x->o);
    fx_start(x, 1, 0);
    char path[400];
    snprintf(path, sizeof path, "%s/result-A-L1-001-1.json", x->run_dir);
    assert_int_equal(access(path, F_OK), -1);
    assert_true(x->s.next_epoch > 1);
    start_ready(x);
    assert_int_equal(status_of(x, "A-L1-001"), ZERG_TASK_CLAIMED);
    fx_free(x);
}

/* The fence is the pair: a result naming the live attempt but another
 * epoch (an incarnation that never ran it) is dropped. */
static void test_result_live_attempt_other_epoch_fenced(void **st)
{
    (void)st;
    struct fx *x = fx_new(graph3, 1, 0);
    start_ready(x);
    int t = x->o->slots[0].task;
    uint64_t epoch = x->o->slots[0].proc.epoch;
    heartbeat(x, 0, x->g->tasks[t].id, 1, "command", 10);
    result(x, 0, epoch + 7, x->g->tasks[t].id, 1, 1);
    assert_int_equal(x->s.metrics.results_fenced, 1);
    assert_int_equal(x->s.tasks[t].status, ZERG_TASK_IN_PROGRESS);
    result(x, 0, epoch, x->g->tasks[t].id, 1, 1);
    assert_int_equal(x->s.tasks[t].status, ZERG_TASK_COMPLETE);
    fx_free(x);
}

/* A level is done when its tasks are, not when the cursor says so: a task
 * made unfinished behind the cursor's back (a state edited outside the
 * task table) holds the level, and still runs. */
static void test_level_done_judged_from_tasks(void **st)
{
    (void)st;
    struct fx *x = fx_new(graph3, 1, 0);
    start_ready(x);
    complete_slot(x, 0);
    tick(x); /* the cursor moves past the first task */
    task_of(x, "A-L1-001")->status = ZERG_TASK_PENDING;
    complete_slot(x, 0);
    tick(x);
    assert_int_equal(x->s.current_level, 1);
    assert_int_not_equal(x->s.levels[1].status, ZERG_LEVEL_COMPLETE);
    tick(x);
    assert_int_equal(status_of(x, "A-L1-001"), ZERG_TASK_CLAIMED);
    fx_free(x);
}

/* No policy runs a failing task forever: past the attempt ceiling the
 * task fails (attempt_ceiling), and a retry of a failing task waits at
 * least the minimum delay whatever the policy says. */
static void test_retry_ceilings_hold_against_policy(void **st)
{
    (void)st;
    static const char graph1[] =
        "{\"feature\":\"t\",\"tasks\":[{\"id\":\"A-L1-001\",\"level\":1,"
        "\"command\":\"false\"}]}";
    struct fx *x = fx_new(graph1, 1, 0);
    fx_policies(x, "retry.lua",
                "return {decide = function() return {retry = true, "
                "charge = false, delay = 0} end}\n");
    start_ready(x);
    int rounds = 0;
    while (status_of(x, "A-L1-001") != ZERG_TASK_FAILED && rounds < 1000) {
        struct zerg_task_state *ts = task_of(x, "A-L1-001");
        if (ts->status == ZERG_TASK_CLAIMED) {
            heartbeat(x, 0, "A-L1-001", ts->attempt, "command", 1);
            result(x, 0, x->o->slots[0].proc.epoch, "A-L1-001", ts->attempt, 0);
            /* The floor: not runnable again at once. */
            tick(x);
            assert_int_not_equal(status_of(x, "A-L1-001"), ZERG_TASK_CLAIMED);
        }
        advance(x, 0.1);
        rounds++;
    }
    assert_int_equal(status_of(x, "A-L1-001"), ZERG_TASK_FAILED);
    assert_string_equal(task_of(x, "A-L1-001")->reason, "attempt_ceiling");
    assert_int_equal(task_of(x, "A-L1-001")->attempt,
                     10 * (x->cfg.retry_attempts + 1));
    fx_free(x);
}

/* A file named like a result that is not one is said once and moved
 * aside, not left to be read at every scan. */
static void test_invalid_result_moved_aside(void **st)
{
    (void)st;
    struct fx *x = fx_new(graph3, 1, 0);
    start_ready(x);
    tu_write(x->run_dir, "result-A-L1-001-1.json", "{not json");
    zerg_orch_file_changed(x->o, "result-A-L1-001-1.json", x->now);
    char path[512];
    snprintf(path, sizeof path, "%s/result-A-L1-001-1.json", x->run_dir);
    assert_int_equal(access(path, F_OK), -1);
    snprintf(path, sizeof path, "%s/.invalid-result-A-L1-001-1.json",
             x->run_dir);
    assert_int_equal(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/.zerg/monitor.jsonl", x->dir);
    char *log = tu_read(path);
    assert_true(tu_contains(log, "\"event\":\"result_invalid\""));
    free(log);
    assert_int_equal(status_of(x, "A-L1-001"), ZERG_TASK_CLAIMED);
    fx_free(x);
}

/* `zerg retry` reaching a rush that is stopping its workers because all
 * has ended: the rush goes on with its pool and runs the task again. */
static void test_retry_while_finishing_runs(void **st)
{
    (void)st;
    struct zerg_err err = {0};
    struct fx *x = fx_new(graph3, 1, 0);
    x->cfg.retry_attempts = 0;
    start_ready(x);
    while (x->o->slots[0].task >= 0) {
        int t = x->o->slots[0].task;
        const char *id = x->g->tasks[t].id;
        heartbeat(x, 0, id, x->s.tasks[t].attempt, "command", 5);
        result(x, 0, x->o->slots[0].proc.epoch, id, x->s.tasks[t].attempt,
               strcmp(id, "A-L1-002") != 0);
        tick(x);
    }
    tick(x);
    assert_int_equal(status_of(x, "A-L1-002"), ZERG_TASK_FAILED);
    assert_int_equal(x->o->slots[0].state, SLOT_STOPPING); /* told to stop */
    assert_int_equal(
        zerg_retry_request_write(x->state_dir, "t", NULL, 0, 1, &err), 0);
    char name[300] = "";
    struct dirent *e;
    DIR *d = opendir(x->run_dir);
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, "retry-", 6))
            snprintf(name, sizeof name, "%s", e->d_name);
    closedir(d);
    zerg_orch_file_changed(x->o, name, x->now);
    assert_int_equal(status_of(x, "A-L1-002"), ZERG_TASK_PENDING);
    /* The request is gone, its answer beside it says what came back. */
    char req[PATH_MAX], ans_path[PATH_MAX];
    struct zerg_retry_answer ans;
    snprintf(req, sizeof req, "%s/%s", x->run_dir, name);
    assert_int_equal(access(req, F_OK), -1);
    assert_int_equal(zerg_retry_answer_path(ans_path, sizeof ans_path, req), 0);
    assert_int_equal(zerg_retry_answer_read(ans_path, &ans, &err), 0);
    assert_int_equal(ans.requeued, 1);
    assert_string_equal(ans.tasks[0], "A-L1-002");
    assert_int_equal(ans.nrefused, 0);
    /* Naming a task the rush has pending is refused, and said so. */
    const char *again[] = {"A-L1-002"};
    assert_int_equal(zerg_retry_request_send(x->state_dir, "t", again, 1, 0,
                                             req, sizeof req, &err),
                     0);
    zerg_orch_file_changed(x->o, strrchr(req, '/') + 1, x->now);
    assert_int_equal(access(req, F_OK), -1);
    assert_int_equal(zerg_retry_answer_path(ans_path, sizeof ans_path, req), 0);
    assert_int_equal(zerg_retry_answer_read(ans_path, &ans, &err), 0);
    assert_int_equal(ans.requeued, 0);
    assert_int_equal(ans.nrefused, 1);
    assert_string_equal(ans.refused[0],
                        "task A-L1-002 is pending; nothing to retry");
    exited(x, 0, 0); /* the stop it was asked for */
    assert_int_equal(x->o->slots[0].state, SLOT_BACKOFF);
    tick(x);
    heartbeat(x, 0, NULL, 0, "ready", 0);
    tick(x);
    assert_int_equal(status_of(x, "A-L1-002"), ZERG_TASK_CLAIMED);
    assert_false(zerg_orch_done(x->o));
    fx_free(x);
}

/* Same-level tasks writing one file never run together, whatever the
 * pool size; the second starts once the first is done. */
static void test_shared_file_serialized(void **st)
{
    (void)st;
    static const char graph_shared[] =
        "{\"feature\":\"t\",\"tasks\":["
        "{\"id\":\"A-L1-001\",\"level\":1,\"command\":\"true\","
        "\"files\":{\"modify\":[\"README.md\"]}},"
        "{\"id\":\"A-L1-002\",\"level\":1,\"command\":\"true\","
        "\"files\":{\"create\":[\"README.md\"]}},"
        "{\"id\":\"A-L1-003\",\"level\":1,\"command\":\"true\"}]}";
    struct fx *x = fx_new(graph_shared, 3, 0);
    start_ready(x);
    int a = status_of(x, "A-L1-001") == ZERG_TASK_CLAIMED;
    int b = status_of(x, "A-L1-002") == ZERG_TASK_CLAIMED;
    assert_int_equal(a + b, 1);
    assert_int_equal(status_of(x, "A-L1-003"), ZERG_TASK_CLAIMED);
    int slot = -1;
    for (int i = 0; i < 3; i++)
        if (x->o->slots[i].task ==
            zerg_graph_find(x->g, a ? "A-L1-001" : "A-L1-002"))
            slot = i;
    assert_true(slot >= 0);
    complete_slot(x, slot);
    tick(x);
    assert_int_equal(status_of(x, a ? "A-L1-002" : "A-L1-001"),
                     ZERG_TASK_CLAIMED);
    fx_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_happy_path_levels_in_order),
        cmocka_unit_test(test_spawn_retry_with_backoff),
        cmocka_unit_test(test_spawn_retries_exhausted_fails_run),
        cmocka_unit_test(test_permanent_spawn_failure_not_retried),
        cmocka_unit_test(test_crash_reassigns_uncharged_and_respawns),
        cmocka_unit_test(test_crash_loop_cap),
        cmocka_unit_test(test_stale_heartbeat_kills_and_reassigns),
        cmocka_unit_test(test_task_timeout_is_charged),
        cmocka_unit_test(test_failure_retries_then_blocks_dependents),
        cmocka_unit_test(test_result_from_dead_epoch_is_fenced),
        cmocka_unit_test(test_respawn_cap_retires_slot),
        cmocka_unit_test(test_resume_applies_journal_and_requeues),
        cmocka_unit_test(test_reconcile_reopens_level),
        cmocka_unit_test(test_thorough_snapshot_holds_candidates_only),
        cmocka_unit_test(test_resume_result_of_unsaved_claim),
        cmocka_unit_test(test_fresh_run_drops_old_results),
        cmocka_unit_test(test_result_live_attempt_other_epoch_fenced),
        cmocka_unit_test(test_level_done_judged_from_tasks),
        cmocka_unit_test(test_retry_ceilings_hold_against_policy),
        cmocka_unit_test(test_invalid_result_moved_aside),
        cmocka_unit_test(test_retry_while_finishing_runs),
        cmocka_unit_test(test_shared_file_serialized),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
