/* test_orch_stop.c - stopping a rush (orchestrator.c, orch_slot.c): a
 * graceful stop asks each worker to end (SIGTERM through the launcher,
 * which the worker passes on to its task's group, killing it itself after
 * workers.stop_grace_seconds: test_worker.c) and kills what is left once
 * the grace and ORCH_STOP_MARGIN_NS are over, on the injected clock; a
 * forced one kills at once.  A stop is never charged to the task: it is
 * pending again, for --resume.
 *
 * The task's group is a real process group of ours (the fake launcher
 * says its pids are local), so the test sees which signal reached it and
 * when. */
#include "testutil.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "orch_fixture.h"
#include "zerg/err.h"
#include "zerg/orchestrator.h"

static struct zerg_launcher_ops local_ops;

/* A stand-in for a task's process group: a child leading its own group
 * that only a signal ends. */
static pid_t task_group(void)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0);
        for (;;)
            pause();
    }
    setpgid(pid, pid);
    return pid;
}

/* 1 when no signal was sent to g: it runs and has none pending (a
 * signal sent an instant ago may not have ended it yet, but it is pending
 * from the moment kill(2) returns). */
static int untouched(pid_t g)
{
    char path[64], text[4096];
    snprintf(path, sizeof path, "/proc/%d/status", (int)g);
    if (waitpid(g, NULL, WNOHANG) != 0)
        return 0;
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    return strstr(text, "\nSigPnd:\t0000000000000000\n") &&
           strstr(text, "\nShdPnd:\t0000000000000000\n");
}

/* The signal that ended g, waited for (10 s at most), reaped. */
static int ended_by(pid_t g)
{
    int fd = (int)syscall(SYS_pidfd_open, g, 0), st;
    assert_true(fd >= 0);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int n = poll(&p, 1, 10000);
    close(fd);
    if (n != 1)
        fail_msg("the task's group was not killed");
    assert_int_equal(waitpid(g, &st, 0), g);
    return WIFSIGNALED(st) ? WTERMSIG(st) : -1;
}

/* One worker running one task whose group is *g; grace in seconds. */
static struct fx *running(double grace, pid_t *g, const char **id)
{
    struct fx *x = fx_new(graph3, 1, 0);
    local_ops = *x->fake.base.ops;
    local_ops.caps.local_pids = 1;
    x->fake.base.ops = &local_ops;
    x->cfg.stop_grace_ns = S(grace);
    start_ready(x);
    struct slot *sl = &x->o->slots[0];
    assert_int_equal(sl->state, SLOT_BUSY);
    *id = x->g->tasks[sl->task].id;
    *g = task_group();
    fx_hb_line_group(x, 0, sl->proc.epoch, *id, task_of(x, *id)->attempt,
                     "command", *g);
    assert_int_equal(status_of(x, *id), ZERG_TASK_IN_PROGRESS);
    assert_int_equal(sl->hb_task_pgid, *g);
    x->fake.kills = 0;
    return x;
}

/* The worker is reaped: the task is pending, uncharged; the rush ends
 * as stopped. */
static void check_stopped(struct fx *x, const char *id, int wstatus)
{
    exited(x, 0, wstatus);
    tick(x);
    assert_true(zerg_orch_done(x->o));
    assert_string_equal(x->s.status, "stopped");
    assert_int_equal(status_of(x, id), ZERG_TASK_PENDING);
    assert_int_equal(task_of(x, id)->retry_count, 0);
    assert_int_equal(task_of(x, id)->crash_count, 0);
    assert_int_equal(x->s.metrics.worker_crashes, 0);
    assert_int_not_equal(zerg_orch_exit_code(x->o), ZERG_EXIT_OK);
}

static void test_term_then_kill_after_the_grace(void **state)
{
    (void)state;
    pid_t g;
    const char *id;
    struct fx *x = running(10, &g, &id);

    zerg_orch_request_stop(x->o, 0, x->now);
    /* SIGTERM to the worker, which ends its task the same way; the
     * task's group is not killed from here. */
    assert_int_equal(x->fake.kills, 1);
    assert_int_equal(x->fake.last_sig, ZERG_CANCEL_GRACEFUL);
    assert_int_equal(x->o->slots[0].state, SLOT_STOPPING);
    assert_true(untouched(g));
    /* The deadline is a timer of the tick: it asks to be woken then. */
    int64_t deadline = x->now + S(10) + ORCH_STOP_MARGIN_NS;
    assert_true(zerg_orch_tick(x->o, x->now) <= deadline);
    advance(x, 10);
    assert_int_equal(x->fake.kills, 1);
    assert_true(untouched(g));
    /* The worker's own SIGKILL at the grace may be a moment late. */
    x->now = deadline - 1;
    tick(x);
    assert_int_equal(x->fake.kills, 1);
    assert_true(untouched(g));
    assert_int_equal(fx_count_events(x, "stop_grace_over"), 0);
    /* Grace and margin over: SIGKILL to the worker and the task's group. */
    advance(x, 1e-9);
    assert_int_equal(x->fake.kills, 2);
    assert_int_equal(x->fake.last_sig, ZERG_CANCEL_NOW);
    assert_int_equal(ended_by(g), SIGKILL);
    assert_int_equal(fx_count_events(x, "stop_grace_over"), 1);
    check_stopped(x, id, SIGKILL);
    fx_free(x);
}

/* A worker that ends within the grace is not killed: its task's handler
 * ran to its end. */
static void test_worker_ending_in_grace_is_not_killed(void **state)
{
    (void)state;
    pid_t g;
    const char *id;
    struct fx *x = running(10, &g, &id);
    zerg_orch_request_stop(x->o, 0, x->now);
    advance(x, 3);
    kill(-g, SIGTERM); /* what the worker passes on */
    assert_int_equal(waitpid(g, NULL, 0), g);
    check_stopped(x, id, 0);
    advance(x, 20);
    assert_int_equal(x->fake.kills, 1);
    assert_int_equal(fx_count_events(x, "stop_grace_over"), 0);
    fx_free(x);
}

static void test_forced_stop_kills_at_once(void **state)
{
    (void)state;
    pid_t g;
    const char *id;
    struct fx *x = running(10, &g, &id);
    zerg_orch_request_stop(x->o, 1, x->now);
    assert_int_equal(x->fake.kills, 1);
    assert_int_equal(x->fake.last_sig, ZERG_CANCEL_NOW);
    assert_int_equal(ended_by(g), SIGKILL);
    check_stopped(x, id, SIGKILL);
    fx_free(x);
}

/* A graceful stop under way, forced (a second Ctrl-C): SIGKILL now. */
static void test_force_during_the_grace(void **state)
{
    (void)state;
    pid_t g;
    const char *id;
    struct fx *x = running(10, &g, &id);
    zerg_orch_request_stop(x->o, 0, x->now);
    advance(x, 1);
    assert_true(untouched(g));
    zerg_orch_request_stop(x->o, 1, x->now);
    assert_int_equal(x->fake.last_sig, ZERG_CANCEL_NOW);
    assert_int_equal(ended_by(g), SIGKILL);
    check_stopped(x, id, SIGKILL);
    fx_free(x);
}

/* workers.stop_grace_seconds: 0 leaves only the margin (the worker kills
 * its task right after the SIGTERM). */
static void test_zero_grace(void **state)
{
    (void)state;
    pid_t g;
    const char *id;
    struct fx *x = running(0, &g, &id);
    zerg_orch_request_stop(x->o, 0, x->now);
    assert_int_equal(x->fake.last_sig, ZERG_CANCEL_GRACEFUL);
    tick(x);
    assert_int_equal(x->fake.kills, 1);
    advance(x, ORCH_SEC(ORCH_STOP_MARGIN_NS));
    assert_int_equal(x->fake.last_sig, ZERG_CANCEL_NOW);
    assert_int_equal(ended_by(g), SIGKILL);
    check_stopped(x, id, SIGKILL);
    fx_free(x);
}

/* The wall budget running out stops the same way: gracefully. */
static void test_timeout_stops_gracefully(void **state)
{
    (void)state;
    pid_t g;
    const char *id;
    struct fx *x = running(1, &g, &id);
    x->o->o.timeout_ns = S(3); /* before the heartbeat would be stale */
    advance(x, 3);
    assert_int_equal(fx_count_events(x, "rush_timeout"), 1);
    assert_int_equal(x->fake.kills, 1);
    assert_int_equal(x->fake.last_sig, ZERG_CANCEL_GRACEFUL);
    assert_true(untouched(g));
    advance(x, 1 + ORCH_SEC(ORCH_STOP_MARGIN_NS));
    assert_int_equal(x->fake.last_sig, ZERG_CANCEL_NOW);
    assert_int_equal(ended_by(g), SIGKILL);
    check_stopped(x, id, SIGKILL);
    fx_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_term_then_kill_after_the_grace),
        cmocka_unit_test(test_worker_ending_in_grace_is_not_killed),
        cmocka_unit_test(test_forced_stop_kills_at_once),
        cmocka_unit_test(test_force_during_the_grace),
        cmocka_unit_test(test_zero_grace),
        cmocka_unit_test(test_timeout_stops_gracefully),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
