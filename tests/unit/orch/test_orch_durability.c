/* test_orch_durability.c - group commit of results (state.durability,
 * DESIGN §16; orch_sync_results in src/orch/orch_intake.c and
 * orch_checkpoint in src/orch/orchestrator.c).
 *
 * The syncfs(2) of zerg_fsio_ops is replaced by a recorder, so each test
 * sees when the orchestrator makes its batch durable and which result
 * files were on disk at that instant.  A power cut is simulated by
 * deleting the results written after the last sync (what a lost page
 * cache loses) and starting a new orchestrator with --resume over the
 * state document as it is on disk.  With the offload thread (what a rush
 * uses), the recorder runs on that thread, held by a gate: a disk that
 * is slow to sync. */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "orch_fixture.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/offload.h"

#define MAX_FILES 16

/* Three tasks of level 1, so that two can finish without ending the
 * level (a level transition forces a checkpoint), and one of level 2. */
static const char graph4[] =
    "{\"feature\":\"t\",\"tasks\":["
    "{\"id\":\"A-L1-001\",\"level\":1,\"command\":\"true\"},"
    "{\"id\":\"A-L1-002\",\"level\":1,\"command\":\"true\"},"
    "{\"id\":\"A-L1-003\",\"level\":1,\"command\":\"true\"},"
    "{\"id\":\"A-L2-001\",\"level\":2,\"command\":\"true\"}]}";

/* What the recorder saw. */
static struct {
    struct fx *x;
    int calls;
    char synced[MAX_FILES][128]; /* result files durable at the last call */
    int nsynced;
    int complete_on_disk; /* tasks the state file called complete then */
} rec;

static int list_results(const char *dir, char names[][128], int max)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    assert_non_null(d);
    while ((e = readdir(d)) && n < max)
        if (!strncmp(e->d_name, "result-", 7))
            snprintf(names[n++], 128, "%.127s", e->d_name);
    closedir(d);
    return n;
}

static int complete_in_state_file(struct fx *x)
{
    struct zerg_state s = {0};
    struct zerg_err err = {0};
    char path[400];
    int n = 0;
    snprintf(path, sizeof path, "%s/t.json", x->state_dir);
    if (zerg_state_load(&s, x->g, path, NULL, &err) < 0)
        return 0;
    for (size_t t = 0; t < s.ntasks; t++)
        n += s.tasks[t].status == ZERG_TASK_COMPLETE;
    zerg_state_close(&s);
    return n;
}

static int syncfs_record(int fd)
{
    (void)fd;
    rec.calls++;
    rec.nsynced = list_results(rec.x->run_dir, rec.synced, MAX_FILES);
    rec.complete_on_disk = complete_in_state_file(rec.x);
    return 0;
}

static struct fx *start_graph(const char *graph, int workers)
{
    struct fx *x = fx_new(graph, workers, 0);
    memset(&rec, 0, sizeof rec);
    rec.x = x;
    zerg_fsio_ops.syncfs = syncfs_record;
    start_ready(x);
    return x;
}

static struct fx *start(int workers)
{
    return start_graph(graph3, workers);
}

static void stop(struct fx *x)
{
    zerg_fsio_ops = zerg_fsio_ops_default;
    fx_free(x);
}

/* Checkpoints far apart, so the batch window alone decides the syncs. */
static void slow_checkpoints(struct fx *x)
{
    x->o->o.checkpoint_ns = S(1);
    x->o->last_save_mono_ns = x->now;
}

static int results_on_disk(struct fx *x)
{
    char names[MAX_FILES][128];
    return list_results(x->run_dir, names, MAX_FILES);
}

/* The power cut: every result not durable at the last sync is gone. */
static int lose_unsynced(struct fx *x)
{
    char names[MAX_FILES][128], path[600];
    int n = list_results(x->run_dir, names, MAX_FILES), lost = 0;
    for (int i = 0; i < n; i++) {
        int kept = 0;
        for (int k = 0; k < rec.nsynced; k++)
            kept |= !strcmp(names[i], rec.synced[k]);
        if (kept)
            continue;
        snprintf(path, sizeof path, "%s/%s", x->run_dir, names[i]);
        assert_int_equal(unlink(path), 0);
        lost++;
    }
    return lost;
}

/* Two results applied, then one tick: one sync for both, before the
 * checkpoint that records them and before they are deleted. */
static void test_one_sync_per_batch_before_checkpoint(void **state)
{
    (void)state;
    struct fx *x = start(2);
    complete_slot(x, 0);
    complete_slot(x, 1);
    assert_int_equal(rec.calls, 0);
    assert_int_equal(results_on_disk(x), 2);
    tick(x);
    assert_int_equal(rec.calls, 1);
    assert_int_equal(rec.nsynced, 2);          /* the batch was on disk */
    assert_int_equal(rec.complete_on_disk, 0); /* not yet claimed done */
    assert_int_equal(complete_in_state_file(x), 2);
    assert_int_equal(results_on_disk(x), 0); /* deleted after the save */
    tick(x);
    assert_int_equal(rec.calls, 1); /* nothing new: no sync */
    stop(x);
}

/* Between checkpoints a batch is synced once its 10 ms window passed,
 * and nothing is deleted before a checkpoint. */
static void test_batch_window(void **state)
{
    (void)state;
    struct fx *x = start_graph(graph4, 3);
    slow_checkpoints(x);
    complete_slot(x, 0);
    tick(x);
    assert_int_equal(rec.calls, 1);
    advance(x, 0.001);
    complete_slot(x, 1);
    tick(x);
    assert_int_equal(rec.calls, 1); /* 1 ms later: still the same window */
    advance(x, 0.008);              /* 9 ms after the first sync */
    assert_int_equal(rec.calls, 1);
    advance(x, 0.001); /* 10 ms: the window has passed */
    assert_int_equal(rec.calls, 2);
    assert_int_equal(rec.nsynced, 2);
    assert_int_equal(results_on_disk(x), 2); /* no checkpoint yet */
    advance(x, 1.0);
    assert_int_equal(results_on_disk(x), 0);
    assert_int_equal(rec.calls, 2); /* the batch was already durable */
    assert_int_equal(complete_in_state_file(x), 2);
    assert_int_not_equal(status_of(x, "A-L1-003"), ZERG_TASK_COMPLETE);
    stop(x);
}

/* full: every worker fsynced its own result; the orchestrator does not
 * sync again, and still deletes results only after the checkpoint. */
static void test_full_leaves_sync_to_workers(void **state)
{
    (void)state;
    struct fx *x = start(2);
    x->cfg.state_durability = ZERG_DURABILITY_FULL;
    complete_slot(x, 0);
    complete_slot(x, 1);
    advance(x, 0.001);
    assert_int_equal(rec.calls, 0);
    assert_int_equal(results_on_disk(x), 0);
    assert_int_equal(complete_in_state_file(x), 2);
    stop(x);
}

/* Runs what is left to the end; runs[t] counts the runs of task t. */
static void run_rest(struct fx *x, int *runs)
{
    for (int round = 0; round < 6 && x->o->s->current_level <= 2; round++) {
        for (int i = 0; i < x->o->nslots; i++) {
            int t = x->o->slots[i].task;
            if (t >= 0 && x->s.tasks[t].status == ZERG_TASK_CLAIMED) {
                complete_slot(x, i);
                runs[t]++;
            }
        }
        advance(x, 0.5);
    }
}

static int runs_of(struct fx *x, const int *runs, const char *id)
{
    return runs[zerg_graph_find(x->g, id)];
}

/* kill -9 of the orchestrator: the page cache keeps every result, synced
 * or not, so --resume completes both and runs neither again. */
static void test_kill_loses_nothing(void **state)
{
    (void)state;
    struct fx *x = start(2);
    slow_checkpoints(x);
    complete_slot(x, 0);
    complete_slot(x, 1);
    assert_int_equal(rec.calls, 0);
    assert_int_equal(complete_in_state_file(x), 0);
    fx_restart(x, 2); /* the old one died without a word */
    assert_int_equal(status_of(x, "A-L1-001"), ZERG_TASK_COMPLETE);
    assert_int_equal(status_of(x, "A-L1-002"), ZERG_TASK_COMPLETE);
    start_ready(x);
    int runs[3] = {0};
    run_rest(x, runs);
    assert_int_equal(runs_of(x, runs, "A-L1-001"), 0);
    assert_int_equal(runs_of(x, runs, "A-L1-002"), 0);
    assert_int_equal(runs_of(x, runs, "A-L2-001"), 1);
    assert_int_equal(status_of(x, "A-L2-001"), ZERG_TASK_COMPLETE);
    stop(x);
}

/* A power cut after one batch was synced and while the next was not:
 * --resume keeps the synced one and runs again at most the lost batch. */
static void test_power_loss_reruns_at_most_last_batch(void **state)
{
    (void)state;
    struct fx *x = start_graph(graph4, 3);
    slow_checkpoints(x);
    complete_slot(x, 0); /* A-L1-001 */
    tick(x);
    assert_int_equal(rec.calls, 1);
    advance(x, 0.001);
    complete_slot(x, 1); /* A-L1-002: its batch is not synced yet */
    tick(x);
    assert_int_equal(rec.calls, 1);
    assert_int_equal(complete_in_state_file(x), 0);
    int lost = lose_unsynced(x);
    assert_int_equal(lost, 1);
    fx_restart(x, 3);
    assert_int_equal(status_of(x, "A-L1-001"), ZERG_TASK_COMPLETE);
    assert_int_not_equal(status_of(x, "A-L1-002"), ZERG_TASK_COMPLETE);
    start_ready(x);
    int runs[4] = {0};
    run_rest(x, runs);
    /* Of the two that had finished, only the lost batch runs again;
     * A-L1-003 never finished, A-L2-001 had not started. */
    assert_int_equal(runs_of(x, runs, "A-L1-001"), 0);
    assert_true(runs_of(x, runs, "A-L1-002") <= lost);
    assert_int_equal(runs_of(x, runs, "A-L1-002"), 1);
    assert_int_equal(runs_of(x, runs, "A-L1-003"), 1);
    assert_int_equal(runs_of(x, runs, "A-L2-001"), 1);
    for (size_t t = 0; t < x->g->ntasks; t++)
        assert_int_equal(x->s.tasks[t].status, ZERG_TASK_COMPLETE);
    stop(x);
}

/* graph4 on 3 workers with the offload thread (what a rush uses), syncfs
 * replaced by fn, checkpoints far apart. */
static struct fx *start_offloaded(int (*fn)(int))
{
    struct fx *x = start_graph(graph4, 3);
    x->o->offload = zerg_offload_new();
    assert_non_null(x->o->offload);
    zerg_fsio_ops.syncfs = fn;
    slow_checkpoints(x);
    return x;
}

/* The gate of a slow disk: the offloaded sync waits while it is shut. */
static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;

static int syncfs_gated(int fd)
{
    pthread_mutex_lock(&gate);
    pthread_mutex_unlock(&gate);
    return syncfs_record(fd);
}

/* With the offload thread, a batch sync between checkpoints does not hold
 * the loop: the tick returns while the disk works, the batch counts as
 * durable only once the sync is seen done, no second sync starts while
 * one is in flight, and a checkpoint waits for it, syncs the rest itself
 * and only then records and deletes. */
static void test_offloaded_sync_does_not_hold_the_loop(void **state)
{
    (void)state;
    struct fx *x = start_offloaded(syncfs_gated);
    pthread_mutex_lock(&gate);
    complete_slot(x, 0);
    tick(x); /* returns with the sync held at the gate */
    assert_int_equal(x->o->syncs, 1);
    assert_true(x->o->sync_ticket > 0);
    assert_int_equal(x->o->nsynced, 0);
    advance(x, 0.02); /* past the window: still the one in flight */
    complete_slot(x, 1);
    tick(x);
    assert_int_equal(x->o->syncs, 1);
    assert_int_equal(x->o->nsynced, 0);
    pthread_mutex_unlock(&gate);
    int rc;
    int64_t cost;
    assert_int_equal(
        zerg_offload_synced(x->o->offload, x->o->sync_ticket, 1, &rc, &cost),
        1);
    assert_int_equal(rc, 0);
    tick(x); /* seen done: the first batch is durable, the second next */
    assert_int_equal(x->o->nsynced, 1);
    assert_int_equal(results_on_disk(x), 2); /* no checkpoint yet */
    assert_int_equal(complete_in_state_file(x), 0);
    advance(x, 1.0); /* the checkpoint: every applied result synced first */
    zerg_offload_drain(x->o->offload);
    assert_int_equal(rec.nsynced, 2);
    assert_int_equal(rec.complete_on_disk, 0);
    assert_int_equal(complete_in_state_file(x), 2);
    assert_int_equal(results_on_disk(x), 0);
    stop(x);
}

/* A checkpoint run on a thread of its own, so that the test can watch
 * it while the sync it must wait for is held at the gate. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct fx *x;
    int done;
} ckpt = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0};

static void *checkpoint_thread(void *arg)
{
    (void)arg;
    orch_checkpoint(ckpt.x->o, ckpt.x->now, 1);
    pthread_mutex_lock(&ckpt.mu);
    ckpt.done = 1;
    pthread_cond_broadcast(&ckpt.cv);
    pthread_mutex_unlock(&ckpt.mu);
    return NULL;
}

/* 1 when the checkpoint finished within seconds. */
static int checkpoint_done_within(double seconds)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)seconds;
    until.tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&ckpt.mu);
    while (!ckpt.done &&
           pthread_cond_timedwait(&ckpt.cv, &ckpt.mu, &until) == 0)
        ;
    int done = ckpt.done;
    pthread_mutex_unlock(&ckpt.mu);
    return done;
}

/* A checkpoint asked for while the batch sync is in flight waits for that
 * sync: it neither records the batch as done nor deletes its results
 * before the disk has them.  The checkpoint is given 2 s on its own
 * thread; it cannot finish while the gate is shut, however slow the
 * machine, and without the wait it finishes at once. */
static void test_checkpoint_waits_for_sync_in_flight(void **state)
{
    (void)state;
    struct fx *x = start_offloaded(syncfs_gated);
    pthread_mutex_lock(&gate);
    complete_slot(x, 0);
    tick(x); /* the batch's sync is in flight, held at the gate */
    assert_int_equal(x->o->syncs, 1);
    assert_true(x->o->sync_ticket > 0);
    assert_int_equal(rec.calls, 0);
    ckpt.x = x;
    ckpt.done = 0;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, checkpoint_thread, NULL), 0);
    int early = checkpoint_done_within(2.0);
    int complete_early = complete_in_state_file(x);
    int results_early = results_on_disk(x);
    pthread_mutex_unlock(&gate);
    assert_int_equal(pthread_join(th, NULL), 0);
    zerg_offload_drain(x->o->offload);
    assert_false(early);                 /* it waited for the sync */
    assert_int_equal(complete_early, 0); /* the state file not replaced */
    assert_int_equal(results_early, 1);  /* the result not deleted */
    assert_int_equal(rec.calls, 1);      /* that sync, no other */
    assert_int_equal(rec.complete_on_disk, 0);
    assert_int_equal(complete_in_state_file(x), 1);
    assert_int_equal(results_on_disk(x), 0);
    stop(x);
}

/* Ticks until the checkpoint child has ended and been reaped; fails the
 * test loudly if it never does. */
static void wait_save_child(struct fx *x)
{
    for (int i = 0; x->o->save_pid && i < 20000; i++) {
        nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
        tick(x);
    }
    if (x->o->save_pid)
        fail_msg("the checkpoint process %d never ended", (int)x->o->save_pid);
}

/* With checkpoint_fork (what a rush uses) the level transition's
 * checkpoint is written by a child process: the next level's task is
 * handed out at once, while level_start waits until the document holding
 * the transition is on disk, and the results it records are deleted only
 * then.  A change made meanwhile keeps the state dirty. */
static void test_forked_checkpoint_at_transition(void **state)
{
    (void)state;
    struct fx *x = start_graph(graph4, 3);
    x->o->o.checkpoint_fork = 1;
    slow_checkpoints(x);
    complete_slot(x, 0);
    complete_slot(x, 1);
    complete_slot(x, 2);
    tick(x); /* the level is done: the transition */
    assert_true(x->o->save_pid > 0);
    assert_int_equal(status_of(x, "A-L2-001"), ZERG_TASK_CLAIMED);
    assert_true(x->o->dirty); /* the claim came after the fork */
    char *ev = fx_events(x);
    assert_false(tu_contains(ev, "Level 2 started"));
    free(ev);
    assert_int_equal(results_on_disk(x), 3);
    wait_save_child(x);
    ev = fx_events(x);
    assert_true(tu_contains(ev, "Level 2 started"));
    free(ev);
    assert_int_equal(complete_in_state_file(x), 3);
    assert_int_equal(results_on_disk(x), 0);
    assert_true(x->o->dirty);
    stop(x);
}

/* syncfs failing (a writeback error somewhere on the filesystem): the
 * batch's own files are fsynced instead, and the run goes on quietly. */
static int syncfs_eio(int fd)
{
    (void)fd;
    rec.calls++;
    errno = EIO;
    return -1;
}

static int fsync_eio(int fd)
{
    (void)fd;
    errno = EIO;
    return -1;
}

/* n tasks recorded complete, their results deleted, no error said. */
static void recorded_quietly(struct fx *x, int n)
{
    assert_int_equal(complete_in_state_file(x), n);
    assert_int_equal(results_on_disk(x), 0);
    char *log = fx_events(x);
    assert_null(strstr(log, "results_sync_failed"));
    free(log);
}

static void test_syncfs_failure_falls_back(void **state)
{
    (void)state;
    struct fx *x = start(1);
    zerg_fsio_ops.syncfs = syncfs_eio;
    complete_slot(x, 0);
    advance(x, 0.001);
    assert_int_equal(rec.calls, 1);
    recorded_quietly(x, 1);
    stop(x);
}

/* The same with the offload thread: its failed sync is not said either;
 * the checkpoint's own sync falls back to the files and the run goes on. */
static void test_offloaded_syncfs_failure_falls_back(void **state)
{
    (void)state;
    struct fx *x = start_offloaded(syncfs_eio);
    complete_slot(x, 0);
    tick(x);
    zerg_offload_drain(x->o->offload);
    tick(x); /* the failed sync seen: the batch is not durable */
    assert_int_equal(x->o->nsynced, 0);
    assert_int_equal(results_on_disk(x), 1);
    advance(x, 1.0); /* the checkpoint: syncfs fails again, fsync works */
    zerg_offload_drain(x->o->offload);
    recorded_quietly(x, 1);
    stop(x);
}

/* Nothing can be synced (the disk is failing): said once per batch, and
 * no result is deleted, since no checkpoint landed either. */
static void test_sync_failure_keeps_journal(void **state)
{
    (void)state;
    struct fx *x = start(1);
    zerg_fsio_ops.syncfs = syncfs_eio;
    complete_slot(x, 0);
    zerg_fsio_ops.fsync = fsync_eio;
    advance(x, 0.001);
    zerg_fsio_ops.fsync = zerg_fsio_ops_default.fsync;
    assert_int_equal(rec.calls, 1);
    assert_int_equal(results_on_disk(x), 1);
    char *log = fx_events(x);
    assert_true(tu_contains(log, "\"event\":\"results_sync_failed\""));
    assert_true(tu_contains(log, "\"event\":\"state_write_failed\""));
    free(log);
    stop(x);
}

/* The run's last checkpoint fails (the state file's place is taken, as a
 * full disk would refuse it): the rush does not end on a state file that
 * says less than it did.  It tries again each second, and ends complete
 * once the write goes through. */
static void test_final_checkpoint_retried(void **st)
{
    (void)st;
    struct fx *x = fx_new(graph3, 2, 0);
    start_ready(x);
    complete_slot(x, 0);
    complete_slot(x, 1);
    tick(x);
    int slot = x->o->slots[0].task >= 0 ? 0 : 1;
    char path[400], inside[440];
    snprintf(path, sizeof path, "%s/t.json", x->state_dir);
    snprintf(inside, sizeof inside, "%s/keep", path);
    (void)unlink(path); /* an earlier checkpoint may have written it */
    assert_int_equal(mkdir(path, 0755), 0); /* rename over it fails */
    tu_write(path, "keep", "x");
    complete_slot(x, slot);
    tick(x);
    finish_workers(x);
    assert_false(zerg_orch_done(x->o));
    advance(x, 1.5);
    assert_false(zerg_orch_done(x->o));
    char *ev = fx_events(x);
    assert_true(tu_contains(ev, "state_write_failed"));
    free(ev);
    assert_int_equal(unlink(inside), 0);
    assert_int_equal(rmdir(path), 0);
    advance(x, 1.5);
    assert_true(zerg_orch_done(x->o));
    assert_int_equal(zerg_orch_exit_code(x->o), ZERG_EXIT_OK);
    char *doc = tu_read(path);
    assert_true(tu_contains(doc, "\"complete\""));
    assert_false(tu_contains(doc, "\"in_progress\""));
    free(doc);
    fx_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_sync_per_batch_before_checkpoint),
        cmocka_unit_test(test_batch_window),
        cmocka_unit_test(test_full_leaves_sync_to_workers),
        cmocka_unit_test(test_kill_loses_nothing),
        cmocka_unit_test(test_power_loss_reruns_at_most_last_batch),
        cmocka_unit_test(test_offloaded_sync_does_not_hold_the_loop),
        cmocka_unit_test(test_forked_checkpoint_at_transition),
        cmocka_unit_test(test_checkpoint_waits_for_sync_in_flight),
        cmocka_unit_test(test_syncfs_failure_falls_back),
        cmocka_unit_test(test_offloaded_syncfs_failure_falls_back),
        cmocka_unit_test(test_sync_failure_keeps_journal),
        cmocka_unit_test(test_final_checkpoint_retried),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
