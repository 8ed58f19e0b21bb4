/* test_orch_dag.c - rush.schedule dag (DESIGN §16), stepped by hand.
 *
 * The same graphs under both schedules with the injected clock and fake
 * launcher of orch_fixture.c: under dag a task starts once its own
 * dependencies are complete, while a slow task of a lower level still
 * runs; under levels it waits for the whole level.  Also: the preference
 * among ready tasks, write groups (within and across levels), blocked
 * dependents, level and gate events in level order, a failing gate beside
 * running tasks, and --resume recomputing the ready set. */
#include "testutil.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "orch_fixture.h"
#include "zerg/err.h"
#include "zerg/orchestrator.h"

/* Level 1: A and a slow S; level 2: B and C after A; level 3: D after
 * both. */
static const char diamond[] =
    "{\"feature\":\"t\",\"tasks\":["
    "{\"id\":\"A\",\"level\":1,\"command\":\"true\"},"
    "{\"id\":\"S\",\"level\":1,\"command\":\"true\"},"
    "{\"id\":\"B\",\"level\":2,\"dependencies\":[\"A\"],\"command\":\"true\"},"
    "{\"id\":\"C\",\"level\":2,\"dependencies\":[\"A\"],\"command\":\"true\"},"
    "{\"id\":\"D\",\"level\":3,\"dependencies\":[\"B\",\"C\"],"
    "\"command\":\"true\"}]}";

/* A chain C1 -> C2 -> C3 beside a slow X with its own branch Y. */
static const char chain[] =
    "{\"feature\":\"t\",\"tasks\":["
    "{\"id\":\"C1\",\"level\":1,\"command\":\"true\"},"
    "{\"id\":\"X\",\"level\":1,\"command\":\"true\"},"
    "{\"id\":\"C2\",\"level\":2,\"dependencies\":[\"C1\"],"
    "\"command\":\"true\"},"
    "{\"id\":\"Y\",\"level\":2,\"dependencies\":[\"X\"],\"command\":\"true\"},"
    "{\"id\":\"C3\",\"level\":3,\"dependencies\":[\"C2\"],"
    "\"command\":\"true\"}]}";

/* ---- driving a schedule ---- */

static void start_schedule(struct fx *x, int workers, int resume, int schedule)
{
    struct zerg_err err = {0};
    x->clock.ctx = x; /* fx_start set the fake time functions */
    struct zerg_orch_opts oo = {
        .project = x->dir,
        .feature = "t",
        .zerg_bin = "zerg",
        .cfg = &x->cfg,
        .graph = x->g,
        .state = &x->s,
        .policy = x->pol,
        .launcher = &x->fake.base,
        .workspace = x->ws ? &x->ws->base : NULL,
        .log = x->log,
        .clock = &x->clock,
        .workers = workers,
        .resume = resume,
        .checkpoint_ns = 1,
        .schedule = schedule,
    };
    x->o = zerg_orch_new(&oo, x->now, &err);
    if (!x->o)
        fail_msg("zerg_orch_new: %s", err.msg);
}

/* The fixture's orchestrator replaced, before its first tick, by one with
 * the given schedule. */
static struct fx *sched_new(const char *graph, int workers, int schedule,
                            int with_ws)
{
    struct fx *x =
        with_ws ? fx_new_ws(graph, workers, 0) : fx_new(graph, workers, 0);
    zerg_orch_free(x->o);
    start_schedule(x, workers, 0, schedule);
    return x;
}

/* The orchestrator died: a new one over the state on disk (--resume). */
static void sched_restart(struct fx *x, int workers, int schedule)
{
    char path[400];
    struct zerg_err err = {0};
    zerg_orch_free(x->o);
    zerg_state_close(&x->s);
    snprintf(path, sizeof path, "%s/t.json", x->state_dir);
    assert_int_equal(zerg_state_load(&x->s, x->g, path, NULL, &err), 0);
    start_schedule(x, workers, 1, schedule);
}

static int slot_of(struct fx *x, const char *id)
{
    ssize_t t = zerg_graph_find(x->g, id);
    for (int i = 0; i < x->o->nslots; i++)
        if (x->o->slots[i].task == (int)t)
            return i;
    fail_msg("no slot runs %s", id);
    return -1;
}

/* Task id passes; the orchestrator ticks once. */
static void done(struct fx *x, const char *id)
{
    complete_slot(x, slot_of(x, id));
    tick(x);
}

static int running(struct fx *x, const char *id)
{
    enum zerg_task_status s = status_of(x, id);
    return s == ZERG_TASK_CLAIMED || s == ZERG_TASK_IN_PROGRESS;
}

/* Offset in the event log of the first `"event":"NAME"` line that also
 * holds `also` (NULL: any), or -1. */
static long event_at(const char *log, const char *name, const char *also)
{
    char key[96];
    snprintf(key, sizeof key, "\"event\":\"%s\"", name);
    for (const char *p = log; (p = strstr(p, key)); p++) {
        const char *a = p, *z = p;
        while (a > log && a[-1] != '\n')
            a--;
        while (*z && *z != '\n')
            z++;
        if (!also)
            return (long)(a - log);
        const char *f = strstr(a, also);
        if (f && f < z)
            return (long)(a - log);
    }
    return -1;
}

/* ---- tests ---- */

static void test_diamond_dag_starts_level_2_beside_level_1(void **st)
{
    (void)st;
    struct fx *x = sched_new(diamond, 3, ZERG_SCHEDULE_DAG, 0);
    start_ready(x);
    assert_true(running(x, "A") && running(x, "S"));
    assert_int_equal(status_of(x, "B"), ZERG_TASK_PENDING);
    done(x, "A");
    /* S still runs; both tasks after A are out already. */
    assert_true(running(x, "S"));
    assert_true(running(x, "B") && running(x, "C"));
    assert_int_equal(x->s.current_level, 1);
    assert_int_equal(x->s.levels[2].status, ZERG_LEVEL_RUNNING);
    done(x, "B");
    assert_int_equal(status_of(x, "D"), ZERG_TASK_PENDING); /* C runs */
    done(x, "C");
    assert_true(running(x, "D"));
    done(x, "D");
    /* Levels 2 and 3 ended, but a level completes only after the lower
     * ones: current_level is the lowest unfinished level. */
    assert_int_equal(x->s.current_level, 1);
    assert_int_not_equal(x->s.levels[2].status, ZERG_LEVEL_COMPLETE);
    done(x, "S");
    assert_int_equal(x->s.levels[3].status, ZERG_LEVEL_COMPLETE);
    finish_workers(x);
    assert_int_equal(zerg_orch_exit_code(x->o), ZERG_EXIT_OK);
    /* Events: level 2 was announced before its first claim, and the
     * level_complete events come in level order. */
    char *log = fx_events(x);
    long s2 = event_at(log, "level_start", "\"level\":2");
    long cb = event_at(log, "task_claimed", "\"task\":\"B\"");
    long c1 = event_at(log, "level_complete", "\"level\":1");
    long c2 = event_at(log, "level_complete", "\"level\":2");
    long c3 = event_at(log, "level_complete", "\"level\":3");
    long dd = event_at(log, "task_complete", "\"task\":\"D\"");
    assert_true(s2 >= 0 && cb > s2);
    assert_true(c1 > dd && c2 > c1 && c3 > c2);
    free(log);
    fx_free(x);
}

static void test_diamond_levels_waits_for_level_1(void **st)
{
    (void)st;
    struct fx *x = sched_new(diamond, 3, ZERG_SCHEDULE_LEVELS, 0);
    start_ready(x);
    done(x, "A");
    assert_true(running(x, "S"));
    assert_int_equal(status_of(x, "B"), ZERG_TASK_PENDING);
    assert_int_equal(status_of(x, "C"), ZERG_TASK_PENDING);
    done(x, "S");
    assert_true(running(x, "B") && running(x, "C"));
    assert_int_equal(x->s.current_level, 2);
    fx_free(x);
}

static void test_chain_finishes_before_slow_side_task(void **st)
{
    (void)st;
    struct fx *x = sched_new(chain, 2, ZERG_SCHEDULE_DAG, 0);
    start_ready(x);
    assert_true(running(x, "C1") && running(x, "X"));
    done(x, "C1");
    assert_true(running(x, "C2"));
    advance(x, 1);
    done(x, "C2");
    assert_true(running(x, "C3"));
    advance(x, 1);
    done(x, "C3");
    assert_true(running(x, "X"));
    assert_int_equal(status_of(x, "Y"), ZERG_TASK_PENDING);
    advance(x, 1);
    done(x, "X");
    assert_true(running(x, "Y"));
    assert_true(task_of(x, "C3")->completed_at_wall_ns <
                task_of(x, "X")->completed_at_wall_ns);
    done(x, "Y");
    finish_workers(x);
    assert_int_equal(zerg_orch_exit_code(x->o), ZERG_EXIT_OK);
    fx_free(x);
}

static void test_chain_levels_idles_the_free_worker(void **st)
{
    (void)st;
    struct fx *x = sched_new(chain, 2, ZERG_SCHEDULE_LEVELS, 0);
    start_ready(x);
    done(x, "C1");
    assert_int_equal(status_of(x, "C2"), ZERG_TASK_PENDING);
    assert_int_equal(x->o->slots[slot_of(x, "X") ^ 1].state, SLOT_READY);
    fx_free(x);
}

/* Among ready tasks the longest remaining chain goes first: by task count
 * without estimates, by minutes with them. */
static void test_longest_remaining_chain_first(void **st)
{
    (void)st;
    static const char counted[] =
        "{\"feature\":\"t\",\"tasks\":["
        "{\"id\":\"P\",\"level\":1,\"command\":\"true\"},"
        "{\"id\":\"Q\",\"level\":1,\"command\":\"true\"},"
        "{\"id\":\"R\",\"level\":2,\"dependencies\":[\"Q\"],"
        "\"command\":\"true\"},"
        "{\"id\":\"T\",\"level\":3,\"dependencies\":[\"R\"],"
        "\"command\":\"true\"}]}";
    static const char timed[] =
        "{\"feature\":\"t\",\"tasks\":["
        "{\"id\":\"P\",\"level\":1,\"estimate_minutes\":10,"
        "\"command\":\"true\"},"
        "{\"id\":\"Q\",\"level\":1,\"estimate_minutes\":1,"
        "\"command\":\"true\"},"
        "{\"id\":\"L\",\"level\":2,\"estimate_minutes\":1,"
        "\"command\":\"true\"},"
        "{\"id\":\"R\",\"level\":2,\"estimate_minutes\":2,"
        "\"dependencies\":[\"Q\"],\"command\":\"true\"}]}";
    struct fx *x = sched_new(counted, 1, ZERG_SCHEDULE_DAG, 0);
    start_ready(x);
    assert_true(running(x, "Q"));
    done(x, "Q");
    assert_true(running(x, "R")); /* R, T left against P alone */
    done(x, "R");
    assert_true(running(x, "P")); /* a tie with T: the lower level */
    fx_free(x);

    x = sched_new(timed, 1, ZERG_SCHEDULE_DAG, 0);
    start_ready(x);
    assert_true(running(x, "P")); /* 10 min against Q + R = 3 */
    done(x, "P");
    assert_true(running(x, "Q")); /* 3 min against L = 1, a lower level */
    done(x, "Q");
    assert_true(running(x, "R"));
    fx_free(x);
}

static void test_write_groups_hold_within_and_across_levels(void **st)
{
    (void)st;
    static const char g[] =
        "{\"feature\":\"t\",\"tasks\":["
        "{\"id\":\"W1\",\"level\":1,\"files\":{\"modify\":[\"f.txt\"]},"
        "\"command\":\"true\"},"
        "{\"id\":\"W2\",\"level\":1,\"files\":{\"modify\":[\"f.txt\"]},"
        "\"command\":\"true\"},"
        "{\"id\":\"Z\",\"level\":1,\"command\":\"true\"},"
        "{\"id\":\"V\",\"level\":2,\"dependencies\":[\"Z\"],"
        "\"files\":{\"create\":[\"f.txt\"]},\"command\":\"true\"}]}";
    struct fx *x = sched_new(g, 3, ZERG_SCHEDULE_DAG, 0);
    start_ready(x);
    /* Same level, same file: one at a time. */
    assert_true(running(x, "W1") != running(x, "W2"));
    assert_true(running(x, "Z"));
    const char *first = running(x, "W1") ? "W1" : "W2";
    const char *second = running(x, "W1") ? "W2" : "W1";
    done(x, "Z");
    /* V is ready, but a level-1 task writing its file runs. */
    assert_int_equal(status_of(x, "V"), ZERG_TASK_PENDING);
    assert_int_equal(status_of(x, second), ZERG_TASK_PENDING);
    done(x, first);
    /* One of the two waiting writers of f.txt starts, never both. */
    assert_true(running(x, second) != running(x, "V"));
    const char *next = running(x, "V") ? "V" : second;
    const char *last = running(x, "V") ? second : "V";
    done(x, next);
    assert_true(running(x, last));
    done(x, last);
    finish_workers(x);
    assert_int_equal(zerg_orch_exit_code(x->o), ZERG_EXIT_OK);
    fx_free(x);
}

static void test_failed_dependency_blocks_dependents(void **st)
{
    (void)st;
    static const char g[] =
        "{\"feature\":\"t\",\"tasks\":["
        "{\"id\":\"A\",\"level\":1,\"command\":\"true\"},"
        "{\"id\":\"K\",\"level\":1,\"command\":\"true\"},"
        "{\"id\":\"B\",\"level\":2,\"dependencies\":[\"A\"],"
        "\"command\":\"true\"},"
        "{\"id\":\"E\",\"level\":2,\"dependencies\":[\"K\"],"
        "\"command\":\"true\"},"
        "{\"id\":\"C\",\"level\":3,\"dependencies\":[\"B\"],"
        "\"command\":\"true\"}]}";
    struct fx *x = fx_new(g, 2, 0);
    zerg_orch_free(x->o);
    x->cfg.retry_attempts = 0;
    start_schedule(x, 2, 0, ZERG_SCHEDULE_DAG);
    start_ready(x);
    int s = slot_of(x, "A");
    heartbeat(x, s, "A", 1, "command", 10);
    result(x, s, x->o->slots[s].proc.epoch, "A", 1, 0);
    tick(x);
    assert_int_equal(status_of(x, "A"), ZERG_TASK_FAILED);
    assert_int_equal(status_of(x, "B"), ZERG_TASK_BLOCKED);
    assert_int_equal(status_of(x, "C"), ZERG_TASK_BLOCKED);
    assert_int_equal(task_of(x, "B")->attempt, 0);
    assert_true(running(x, "K"));
    done(x, "K");
    assert_true(running(x, "E"));
    done(x, "E");
    finish_workers(x);
    assert_true(zerg_orch_done(x->o));
    assert_int_equal(zerg_orch_exit_code(x->o), ZERG_EXIT_FAIL);
    assert_int_equal(task_of(x, "C")->attempt, 0);
    fx_free(x);
}

/* A required gate fails after level 1 while a level-2 task runs: no new
 * claim, the running task finishes, then the rush stops (exit 1). */
static void test_failing_gate_stops_claims_running_finish(void **st)
{
    (void)st;
    static const char g[] =
        "{\"feature\":\"t\",\"tasks\":["
        "{\"id\":\"A\",\"level\":1,\"command\":\"true\"},"
        "{\"id\":\"B\",\"level\":2,\"command\":\"true\"},"
        "{\"id\":\"C\",\"level\":2,\"dependencies\":[\"A\"],"
        "\"command\":\"true\"},"
        "{\"id\":\"D\",\"level\":2,\"dependencies\":[\"A\"],"
        "\"command\":\"true\"}]}";
    struct fx *x = fx_new_ws(g, 2, 0);
    zerg_orch_free(x->o);
    x->cfg.gates = calloc(1, sizeof *x->cfg.gates);
    assert_non_null(x->cfg.gates);
    x->cfg.ngates = 1;
    x->cfg.gates[0] = (struct zerg_gate){.name = strdup("check"),
                                         .command = strdup("sleep 100"),
                                         .required = 1,
                                         .timeout_ns = S(1)};
    start_schedule(x, 2, 0, ZERG_SCHEDULE_DAG);
    start_ready(x);
    assert_true(running(x, "A") && running(x, "B"));
    commit_slot(x, slot_of(x, "A"));
    tick(x); /* level 1 closes, its gate starts; C goes out beside it */
    assert_int_equal(x->s.levels[1].status, ZERG_LEVEL_COMPLETE);
    assert_true(x->o->gate_pid > 0);
    assert_true(running(x, "C"));
    advance(x, 2); /* past the gate's timeout: killed, a required failure */
    assert_true(x->o->gate_failed);
    assert_false(x->o->stop_asked);
    commit_slot(x, slot_of(x, "C"));
    tick(x);
    assert_int_equal(status_of(x, "C"), ZERG_TASK_COMPLETE);
    assert_int_equal(status_of(x, "D"), ZERG_TASK_PENDING); /* not claimed */
    assert_false(x->o->stop_asked);
    commit_slot(x, slot_of(x, "B"));
    tick(x); /* the last running task ended: the rush stops */
    assert_true(x->o->stop_asked);
    finish_workers(x);
    assert_true(zerg_orch_done(x->o));
    assert_int_equal(zerg_orch_exit_code(x->o), ZERG_EXIT_FAIL);
    assert_int_equal(task_of(x, "D")->attempt, 0);
    char *log = fx_events(x);
    long gs = event_at(log, "gate_start", "\"level\":1");
    long gf = event_at(log, "gate_fail", "\"level\":1");
    assert_true(gs >= 0 && gf > gs);
    assert_int_equal(event_at(log, "gate_start", "\"level\":2"), -1);
    free(log);
    fx_free(x);
}

/* The orchestrator dies mid-run; the chain's next task finished while it
 * was down.  The new one counts the ready set from the state: the task
 * after it starts at once, beside the requeued slow one. */
static void test_resume_mid_run_recounts_ready(void **st)
{
    (void)st;
    struct fx *x = sched_new(chain, 2, ZERG_SCHEDULE_DAG, 0);
    start_ready(x);
    done(x, "C1");
    int s = slot_of(x, "C2");
    heartbeat(x, s, "C2", 1, "command", 10);
    heartbeat(x, slot_of(x, "X"), "X", 1, "command", 10);
    orch_checkpoint(x->o, x->now, 1);
    write_result(x, s, x->o->slots[s].proc.epoch, "C2", 1, 1);
    sched_restart(x, 2, ZERG_SCHEDULE_DAG);
    assert_int_equal(status_of(x, "C1"), ZERG_TASK_COMPLETE);
    assert_int_equal(status_of(x, "C2"), ZERG_TASK_COMPLETE);
    assert_int_equal(status_of(x, "X"), ZERG_TASK_PENDING);
    assert_int_equal(x->s.current_level, 1);
    start_ready(x);
    assert_true(running(x, "C3") && running(x, "X"));
    done(x, "C3");
    assert_int_equal(status_of(x, "Y"), ZERG_TASK_PENDING);
    done(x, "X");
    assert_true(running(x, "Y"));
    done(x, "Y");
    finish_workers(x);
    assert_int_equal(zerg_orch_exit_code(x->o), ZERG_EXIT_OK);
    assert_int_equal(x->s.levels[3].status, ZERG_LEVEL_COMPLETE);
    fx_free(x);
}

/* A crash requeues its task (uncharged): it is ready again at once. */
static void test_crash_requeue_is_ready_again(void **st)
{
    (void)st;
    struct fx *x = sched_new(chain, 2, ZERG_SCHEDULE_DAG, 0);
    start_ready(x);
    done(x, "C1");
    int s = slot_of(x, "C2");
    exited(x, s, SIGKILL);
    assert_int_equal(status_of(x, "C2"), ZERG_TASK_PENDING);
    assert_int_equal(orch_dag_ready(x->o), 1);
    advance(x, 5); /* the slot respawns */
    heartbeat(x, s, NULL, 0, "ready", 0);
    tick(x);
    assert_true(running(x, "C2"));
    assert_int_equal(task_of(x, "C2")->attempt, 2);
    fx_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diamond_dag_starts_level_2_beside_level_1),
        cmocka_unit_test(test_diamond_levels_waits_for_level_1),
        cmocka_unit_test(test_chain_finishes_before_slow_side_task),
        cmocka_unit_test(test_chain_levels_idles_the_free_worker),
        cmocka_unit_test(test_longest_remaining_chain_first),
        cmocka_unit_test(test_write_groups_hold_within_and_across_levels),
        cmocka_unit_test(test_failed_dependency_blocks_dependents),
        cmocka_unit_test(test_failing_gate_stops_claims_running_finish),
        cmocka_unit_test(test_resume_mid_run_recounts_ready),
        cmocka_unit_test(test_crash_requeue_is_ready_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
