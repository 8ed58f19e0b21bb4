/* test_offload.c - the journal's disk work off the caller's thread
 * (src/base/offload.c): every queued path is gone after a drain and
 * after free, the queue grows past its first size, syncs are done in
 * queue order and report their tickets and outcome, the thread keeps
 * every signal blocked, a child forked while it frees can allocate (the
 * checkpoint's child does), and a NULL offload is a no-op. */
#include "testutil.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "zerg/offload.h"

static char dir[PATH_MAX];

static int setup(void **state)
{
    snprintf(dir, sizeof dir, "%s", tu_mkdtemp());
    return 0;
}

static int teardown(void **state)
{
    tu_rmtree(dir);
    return 0;
}

/* Makes n files f<from>.. and queues them all. */
static void queue_files(struct zerg_offload *u, int from, int n)
{
    for (int i = from; i < from + n; i++) {
        char *p = malloc(PATH_MAX + 16);
        snprintf(p, PATH_MAX + 16, "%s/f%d", dir, i);
        int fd = open(p, O_CREAT | O_WRONLY, 0644);
        assert_true(fd >= 0);
        close(fd);
        zerg_offload_unlink(u, p);
    }
}

static void test_drain_and_free_delete_everything(void **state)
{
    struct zerg_offload *u = zerg_offload_new();
    assert_non_null(u);
    queue_files(u, 0, 500); /* past the first queue size, 64 */
    zerg_offload_drain(u);
    assert_int_equal(tu_count_entries(dir), 0);
    /* It goes on after a drain; free drains what is still queued. */
    queue_files(u, 500, 100);
    zerg_offload_free(u);
    assert_int_equal(tu_count_entries(dir), 0);
    /* A path that is already gone is no error. */
    u = zerg_offload_new();
    char *p = strdup("/nonexistent/zerg-offload-test");
    zerg_offload_unlink(u, p);
    zerg_offload_drain(u);
    zerg_offload_drain(u); /* idle: returns at once */
    zerg_offload_free(u);
    zerg_offload_drain(NULL);
    zerg_offload_free(NULL);
}

/* A signal sent to the process while the thread runs is not taken by it:
 * with SIGUSR1 blocked here, it stays pending for this thread. */
static void test_thread_blocks_signals(void **state)
{
    sigset_t usr1, old, pending;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigprocmask(SIG_BLOCK, &usr1, &old);
    struct zerg_offload *u = zerg_offload_new();
    assert_non_null(u);
    queue_files(u, 0, 10);
    kill(getpid(), SIGUSR1); /* default action: would end the process */
    zerg_offload_drain(u);
    sigpending(&pending);
    assert_true(sigismember(&pending, SIGUSR1));
    zerg_offload_free(u);
    int sig;
    sigwait(&usr1, &sig);
    sigprocmask(SIG_SETMASK, &old, NULL);
    assert_int_equal(tu_count_entries(dir), 0);
}

/* Tickets grow; a sync queued after deletions is done after them, and
 * its outcome is the syncfs's: 0 for a directory, an error for a path
 * that is gone.  Waiting for a ticket already done returns at once. */
static void test_sync_tickets_in_order(void **state)
{
    struct zerg_offload *q = zerg_offload_new();
    assert_non_null(q);
    int rc = 1;
    int64_t cost = -1;
    assert_int_equal(zerg_offload_synced(q, 1, 0, &rc, &cost), 0);
    queue_files(q, 0, 200);
    uint64_t t1 = zerg_offload_sync(q, dir);
    assert_true(t1 > 0);
    assert_int_equal(zerg_offload_synced(q, t1, 1, &rc, &cost), 1);
    assert_int_equal(rc, 0);
    assert_true(cost >= 0);
    assert_int_equal(tu_count_entries(dir), 0); /* queued before it */
    uint64_t t2 = zerg_offload_sync(q, "/nonexistent/zerg-offload-test");
    assert_true(t2 > t1);
    assert_int_equal(zerg_offload_synced(q, t2, 1, &rc, &cost), 1);
    assert_true(rc < 0);
    assert_int_equal(zerg_offload_synced(q, t1, 0, &rc, &cost), 1);
    zerg_offload_free(q);
}

/* The hook runs inside the thread's free(3) guard: it says so, holds it
 * 200 ms, then marks that it is done. */
static volatile int hook_inside, hook_done;

static void slow_free_hook(void)
{
    if (hook_done)
        return;
    __atomic_store_n(&hook_inside, 1, __ATOMIC_SEQ_CST);
    nanosleep(&(struct timespec){0, 200000000}, NULL);
    __atomic_store_n(&hook_done, 1, __ATOMIC_SEQ_CST);
}

/* The checkpoint forks while the thread frees the paths it unlinked.  A
 * fork made while the thread is inside free(3) waits until it is out:
 * the child, forked as soon as the thread is in, finds it done. */
static void test_fork_waits_for_the_threads_free(void **state)
{
    struct zerg_offload *q = zerg_offload_new();
    assert_non_null(q);
    zerg_offload_free_hook = slow_free_hook;
    zerg_offload_unlink(q, strdup("/nonexistent/zerg-offload-test"));
    while (!__atomic_load_n(&hook_inside, __ATOMIC_SEQ_CST))
        nanosleep(&(struct timespec){0, 100000}, NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        free(malloc(100)); /* what the checkpoint's child does first */
        _exit(__atomic_load_n(&hook_done, __ATOMIC_SEQ_CST) ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0); /* 1: forked mid-free */
    zerg_offload_drain(q);
    zerg_offload_free_hook = NULL;
    zerg_offload_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_drain_and_free_delete_everything,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_sync_tickets_in_order, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_thread_blocks_signals, setup,
                                        teardown),
        cmocka_unit_test(test_fork_waits_for_the_threads_free),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
