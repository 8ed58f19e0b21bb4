/* test_orch_intake_lines.c - a result that came by its stdout line first
 * (src/orch/orch_intake.c, line_file_event): the inotify event of its
 * file, which follows, is skipped without reading the file; any later
 * event for the name is read as before (a stale rewrite is fenced); a
 * result whose file came first leaves nothing to skip; an event for a
 * file already gone says nothing.
 *
 * The skip is seen through what a read would do: the file is made
 * unreadable as a result before its event, so a read would log
 * result_invalid and move the file aside.
 *
 * And a result ends the process group its stage's beat named: a worker
 * that dies before its idle beat, whose file may come 50 ms after the
 * result, does not get a reaped group's id killed.
 *
 * And beats read by an intake that took long (the orchestrator stopped
 * in the middle of it) count as seen when it ended, not when it began;
 * a worker whose lines are still unread is not stale while its heartbeat
 * file moved on. */
#include "testutil.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "orch/orch_fixture.h"

/* One worker, ready by line, running its first task (started). */
static struct fx *running(const char **id, int *attempt, uint64_t *epoch)
{
    struct fx *x = fx_new(graph3, 1, 0);
    tick(x);
    struct slot *sl = &x->o->slots[0];
    *epoch = sl->proc.epoch;
    fx_hb_line(x, 0, *epoch, NULL, 0, "ready");
    tick(x); /* assigns */
    assert_int_equal(sl->state, SLOT_BUSY);
    *id = x->g->tasks[sl->task].id;
    *attempt = task_of(x, *id)->attempt;
    fx_hb_line(x, 0, *epoch, *id, *attempt, "command");
    assert_int_equal(status_of(x, *id), ZERG_TASK_IN_PROGRESS);
    return x;
}

static void name_of(char *name, size_t n, const char *id, int attempt)
{
    snprintf(name, n, "result-%s-%d.json", id, attempt);
}

static int exists(struct fx *x, const char *name)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", x->run_dir, name);
    return access(path, F_OK) == 0;
}

static void test_line_first_skips_the_file_event(void **state)
{
    (void)state;
    const char *id;
    int attempt;
    uint64_t epoch;
    struct fx *x = running(&id, &attempt, &epoch);
    char name[128], aside[160];
    name_of(name, sizeof name, id, attempt);
    snprintf(aside, sizeof aside, ".invalid-%s", name);

    write_result(x, 0, epoch, id, attempt, 1); /* the file first */
    fx_result_line(x, 0, epoch, id, attempt);  /* then its line */
    assert_int_equal(status_of(x, id), ZERG_TASK_COMPLETE);
    /* A read would find this unreadable and move it aside. */
    tu_write(x->run_dir, name, "garbage{");
    zerg_orch_file_changed(x->o, name, x->now);
    assert_int_equal(fx_count_events(x, "result_invalid"), 0);
    assert_true(exists(x, name));
    assert_int_equal(x->s.metrics.results_fenced, 0);

    /* Only the first event is the line's file: a later one is read. */
    zerg_orch_file_changed(x->o, name, x->now);
    assert_int_equal(fx_count_events(x, "result_invalid"), 1);
    assert_false(exists(x, name));
    assert_true(exists(x, aside));
    assert_int_equal(status_of(x, id), ZERG_TASK_COMPLETE);
    fx_free(x);
}

static void test_stale_rewrite_after_the_line_is_fenced(void **state)
{
    (void)state;
    const char *id;
    int attempt;
    uint64_t epoch;
    struct fx *x = running(&id, &attempt, &epoch);
    char name[128];
    name_of(name, sizeof name, id, attempt);

    write_result(x, 0, epoch, id, attempt, 1);
    fx_result_line(x, 0, epoch, id, attempt);
    zerg_orch_file_changed(x->o, name, x->now); /* its own: skipped */
    assert_int_equal(x->s.metrics.results_fenced, 0);
    /* Another incarnation's result under the same name lands after. */
    write_result(x, 0, epoch - 1, id, attempt, 1);
    zerg_orch_file_changed(x->o, name, x->now);
    assert_int_equal(x->s.metrics.results_fenced, 1);
    assert_int_equal(fx_count_events(x, "result_fenced"), 1);
    assert_int_equal(status_of(x, id), ZERG_TASK_COMPLETE);
    fx_free(x);
}

static void test_file_first_leaves_nothing_to_skip(void **state)
{
    (void)state;
    const char *id;
    int attempt;
    uint64_t epoch;
    struct fx *x = running(&id, &attempt, &epoch);
    char name[128];
    name_of(name, sizeof name, id, attempt);

    result(x, 0, epoch, id, attempt, 1); /* file and its event */
    assert_int_equal(status_of(x, id), ZERG_TASK_COMPLETE);
    fx_result_line(x, 0, epoch, id, attempt); /* the same result seen twice */
    assert_int_equal(x->o->slots[0].line_attempt, 0);
    write_result(x, 0, epoch - 1, id, attempt, 1);
    zerg_orch_file_changed(x->o, name, x->now);
    assert_int_equal(x->s.metrics.results_fenced, 1);
    fx_free(x);
}

/* The line's result is remembered per slot until its file's event. */
static void test_line_remembered_until_its_event(void **state)
{
    (void)state;
    const char *id;
    int attempt;
    uint64_t epoch;
    struct fx *x = running(&id, &attempt, &epoch);
    char name[128];
    name_of(name, sizeof name, id, attempt);

    write_result(x, 0, epoch, id, attempt, 1);
    fx_result_line(x, 0, epoch, id, attempt);
    struct slot *sl = &x->o->slots[0];
    assert_int_equal(sl->line_attempt, attempt);
    assert_string_equal(x->g->tasks[sl->line_task].id, id);
    /* Another file's event does not take it. */
    zerg_orch_file_changed(x->o, "result-NOPE-1.json", x->now);
    assert_int_equal(sl->line_attempt, attempt);
    zerg_orch_file_changed(x->o, name, x->now);
    assert_int_equal(sl->line_attempt, 0);
    fx_free(x);
}

static void test_event_for_a_missing_file_is_quiet(void **state)
{
    (void)state;
    const char *id;
    int attempt;
    uint64_t epoch;
    struct fx *x = running(&id, &attempt, &epoch);
    char name[128];
    name_of(name, sizeof name, id, attempt);
    zerg_orch_file_changed(x->o, name, x->now);
    assert_int_equal(fx_count_events(x, "result_invalid"), 0);
    assert_int_equal(x->s.metrics.results_fenced, 0);
    assert_int_equal(status_of(x, id), ZERG_TASK_IN_PROGRESS);
    fx_free(x);
}

/* A stand-in for a group id reused after the task's group was reaped:
 * a process of ours leading a group of its own.  SIGUSR1 ends it with
 * status 0, unless a SIGKILL came first. */
static void usr1_exit(int sig)
{
    (void)sig;
    _exit(0);
}

static pid_t other_group(void)
{
    sigset_t usr1, old;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigprocmask(SIG_BLOCK, &usr1, &old);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        setpgid(0, 0);
        signal(SIGUSR1, usr1_exit);
        for (;;)
            sigsuspend(&none);
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    setpgid(pid, pid);
    return pid;
}

/* 1 when g was not killed: it ends on SIGUSR1 by itself. */
static int survived(pid_t g)
{
    int st;
    kill(g, SIGUSR1);
    assert_int_equal(waitpid(g, &st, 0), g);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void test_result_ends_the_known_group(void **state)
{
    (void)state;
    const char *id;
    int attempt;
    uint64_t epoch;
    struct fx *x = running(&id, &attempt, &epoch);
    /* A launcher whose pids are ours: the orchestrator kills the task's
     * group when its worker dies. */
    static struct zerg_launcher_ops local;
    local = *x->fake.base.ops;
    local.caps.local_pids = 1;
    x->fake.base.ops = &local;
    pid_t g = other_group();
    fx_hb_line_group(x, 0, epoch, id, attempt, "command", g);
    assert_int_equal(x->o->slots[0].hb_task_pgid, g);
    fx_result_line(x, 0, epoch, id, attempt);
    assert_int_equal(status_of(x, id), ZERG_TASK_COMPLETE);
    exited(x, 0, SIGKILL); /* dead before its idle beat */
    assert_true(survived(g));
    fx_free(x);
}

/* The orchestrator stopped (SIGSTOP) in the middle of an intake that
 * began at T: the lines it read after the SIGCONT were stamped T, though
 * it read them 4.6 s later.  The loop says how long the intake took
 * (orch_intake_took) and the next tick does not find the worker silent
 * for the time the orchestrator was away (DESIGN §19). */
static void test_intake_that_took_long_is_not_a_silence(void **state)
{
    (void)state;
    const char *id;
    int attempt;
    uint64_t epoch;
    struct fx *x = running(&id, &attempt, &epoch);
    struct slot *sl = &x->o->slots[0];
    advance(x, 1);
    int64_t t = x->now;
    fx_hb_line(x, 0, epoch, id, attempt, "verify"); /* read after the stop */
    orch_intake_took(x->o, t - 1, t + S(4.6));      /* another stamp: kept */
    assert_int_equal(sl->hb_change_at_mono_ns, t);
    orch_intake_took(x->o, t, t + S(4.6));
    assert_int_equal(sl->hb_change_at_mono_ns, t + S(4.6));
    assert_int_equal(sl->progress_at_mono_ns, t + S(4.6));
    x->now = t + S(5.5); /* past the 5 s threshold from T, not from the read */
    tick(x);
    assert_int_equal(fx_count_events(x, "heartbeat_stale"), 0);
    assert_int_equal(sl->state, SLOT_BUSY);
    assert_int_equal(status_of(x, id), ZERG_TASK_IN_PROGRESS);
    advance(x, 4.5); /* and then really silent */
    assert_int_equal(fx_count_events(x, "heartbeat_stale"), 1);
    fx_free(x);
}

/* Not stopped mid-intake but slow past the threshold: the worker's
 * lines wait unread in its pipe, its file events are skipped (its beats
 * come by line) and the periodic scan of the files is not due (every two
 * intervals, 8 s here).  The file it rewrote meanwhile is newer: read
 * before the verdict, it says the worker is alive (DESIGN §19).  With the
 * file unchanged too, the worker is stale. */
static void test_unread_lines_are_not_a_stale_worker(void **state)
{
    (void)state;
    struct fx *x = fx_new(graph3, 1, 0);
    x->cfg.heartbeat_interval_ns = S(4);
    tick(x);
    struct slot *sl = &x->o->slots[0];
    uint64_t epoch = sl->proc.epoch;
    fx_hb_line(x, 0, epoch, NULL, 0, "ready");
    tick(x); /* assigns */
    const char *id = x->g->tasks[sl->task].id;
    int attempt = task_of(x, id)->attempt;
    fx_hb_line(x, 0, epoch, id, attempt, "command");
    struct zerg_heartbeat hb = {.worker_id = 0,
                                .epoch = epoch,
                                .seq = sl->hb_seq + 40,
                                .attempt = attempt};
    snprintf(hb.task_id, sizeof hb.task_id, "%s", id);
    snprintf(hb.step, sizeof hb.step, "command");
    assert_int_equal(zerg_proto_write_heartbeat(x->run_dir, &hb, NULL), 0);
    zerg_orch_file_changed(x->o, "heartbeat-0.json", x->now); /* skipped */
    assert_int_not_equal(sl->hb_seq, hb.seq);
    advance(x, 5.5); /* past the 5 s threshold, no line read, no scan */
    assert_int_equal(fx_count_events(x, "heartbeat_stale"), 0);
    assert_int_equal(sl->state, SLOT_BUSY);
    assert_int_equal(sl->hb_seq, hb.seq);
    advance(x, 5.5); /* nothing new in the file either */
    assert_int_equal(fx_count_events(x, "heartbeat_stale"), 1);
    fx_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_line_first_skips_the_file_event),
        cmocka_unit_test(test_stale_rewrite_after_the_line_is_fenced),
        cmocka_unit_test(test_file_first_leaves_nothing_to_skip),
        cmocka_unit_test(test_line_remembered_until_its_event),
        cmocka_unit_test(test_event_for_a_missing_file_is_quiet),
        cmocka_unit_test(test_result_ends_the_known_group),
        cmocka_unit_test(test_intake_that_took_long_is_not_a_silence),
        cmocka_unit_test(test_unread_lines_are_not_a_stale_worker),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
