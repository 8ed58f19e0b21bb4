/* test_lock.c - the rush lock (src/base/lock.c): exclusive across processes,
 * names its holder, freed by release and by the holder's death; a FIFO or
 * a link in its place is refused without blocking. */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zerg/err.h"
#include "zerg/lock.h"

/* A child that hangs is killed by this alarm instead of hanging the run. */
#define CHILD_TIMEOUT_S 10

static char dir[PATH_MAX];
static char path[PATH_MAX + 32];

static int setup(void **state)
{
    snprintf(dir, sizeof dir, "%s", tu_mkdtemp());
    snprintf(path, sizeof path, "%s/feat.lock", dir);
    return 0;
}

static int teardown(void **state)
{
    tu_rmtree(dir);
    return 0;
}

/* Exit status of a child that tries the lock: 0 when it failed with
 * ZERG_ELOCKED and a message naming want_pid, 1 when it got the lock,
 * 2 on any other outcome. */
static int child_try(pid_t want_pid)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(CHILD_TIMEOUT_S);
        struct zerg_lock lk;
        struct zerg_err err = {0};
        int rc = zerg_lock_acquire(&lk, path, &err);
        if (rc == 0)
            _exit(1);
        char want[64];
        snprintf(want, sizeof want, "another zerg rush (pid %ld) holds",
                 (long)want_pid);
        _exit(rc == ZERG_ELOCKED && err.code == ZERG_ELOCKED &&
                      strstr(err.msg, want) && strstr(err.msg, path)
                  ? 0
                  : 2);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static void test_second_acquire_fails_naming_pid(void **state)
{
    struct zerg_lock lk;
    struct zerg_err err = {0};
    assert_int_equal(zerg_lock_acquire(&lk, path, &err), 0);
    assert_true(lk.fd >= 0);
    char *text = tu_read(path);
    assert_int_equal(atol(text), (long)getpid());
    free(text);

    assert_int_equal(child_try(getpid()), 0);
    zerg_lock_release(&lk);
    assert_int_equal(lk.fd, -1);
    assert_int_equal(child_try(getpid()), 1); /* free again */
}

static void test_release_frees_and_is_idempotent(void **state)
{
    struct zerg_lock lk;
    assert_int_equal(zerg_lock_acquire(&lk, path, NULL), 0);
    zerg_lock_release(&lk);
    zerg_lock_release(&lk);
    zerg_lock_release(NULL);
    assert_int_equal(zerg_lock_acquire(&lk, path, NULL), 0);
    zerg_lock_release(&lk);
    /* No stale pid is left behind for readers. */
    char *text = tu_read(path);
    assert_string_equal(text, "");
    free(text);
}

static void test_probe(void **state)
{
    pid_t holder = 99;
    assert_int_equal(zerg_lock_probe(path, &holder), 0); /* missing */
    assert_int_equal(holder, 0);

    struct zerg_lock lk;
    assert_int_equal(zerg_lock_acquire(&lk, path, NULL), 0);
    assert_int_equal(zerg_lock_probe(path, &holder), 1);
    assert_int_equal(holder, getpid());
    assert_int_equal(zerg_lock_probe(path, NULL), 1);
    /* Probing does not steal or disturb the lock. */
    assert_int_equal(child_try(getpid()), 0);
    zerg_lock_release(&lk);
    assert_int_equal(zerg_lock_probe(path, &holder), 0);
    assert_int_equal(holder, 0);
}

static void test_lock_dropped_when_holder_dies(void **state)
{
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(CHILD_TIMEOUT_S);
        close(ready[0]);
        struct zerg_lock lk;
        if (zerg_lock_acquire(&lk, path, NULL) < 0)
            _exit(2);
        (void)!write(ready[1], "x", 1);
        pause(); /* until killed */
        _exit(3);
    }
    close(ready[1]);
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    close(ready[0]);

    pid_t holder = 0;
    assert_int_equal(zerg_lock_probe(path, &holder), 1);
    assert_int_equal(holder, pid);
    struct zerg_lock lk;
    struct zerg_err err = {0};
    assert_int_equal(zerg_lock_acquire(&lk, path, &err), ZERG_ELOCKED);
    char want[64];
    snprintf(want, sizeof want, "(pid %ld)", (long)pid);
    assert_true(tu_contains(err.msg, want));
    assert_int_equal(lk.fd, -1);

    kill(pid, SIGKILL);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(zerg_lock_probe(path, NULL), 0);
    assert_int_equal(zerg_lock_acquire(&lk, path, &err), 0);
    zerg_lock_release(&lk);
}

static void test_lock_not_inherited_by_exec(void **state)
{
    struct zerg_lock lk;
    assert_int_equal(zerg_lock_acquire(&lk, path, NULL), 0);
    int flags = fcntl(lk.fd, F_GETFD);
    assert_true(flags & FD_CLOEXEC);
    zerg_lock_release(&lk);
}

static void test_unopenable_path(void **state)
{
    char bad[PATH_MAX + 32];
    snprintf(bad, sizeof bad, "%s/no/such/dir.lock", dir);
    struct zerg_lock lk;
    struct zerg_err err = {0};
    assert_int_equal(zerg_lock_acquire(&lk, bad, &err), -ENOENT);
    assert_true(tu_contains(err.msg, "cannot open lock"));
    assert_true(tu_contains(err.msg, "No such file or directory"));
    assert_int_equal(lk.fd, -1);
}

/* A FIFO as the lock file: a blocking open in `zerg status` would wait for
 * a writer forever.  The alarm turns a regression into a failure. */
static void test_fifo_lock_refused(void **state)
{
    assert_int_equal(mkfifo(path, 0644), 0);
    alarm(CHILD_TIMEOUT_S);
    struct zerg_lock lk;
    struct zerg_err err = {0};
    pid_t holder = 1;
    assert_int_equal(zerg_lock_probe(path, &holder), ZERG_ENOTREG);
    assert_int_equal(holder, 0);
    assert_int_equal(zerg_lock_acquire(&lk, path, &err), ZERG_ENOTREG);
    assert_true(tu_contains(err.msg, "not a regular file (a FIFO)"));
    assert_int_equal(lk.fd, -1);
    alarm(0);
}

/* A link as the lock file would make the rush create and write its pid
 * into a file outside the project. */
static void test_symlink_lock_refused(void **state)
{
    char outside[PATH_MAX + 32];
    snprintf(outside, sizeof outside, "%s/outside", dir);
    assert_int_equal(symlink(outside, path), 0);
    struct zerg_lock lk;
    struct zerg_err err = {0};
    assert_int_equal(zerg_lock_acquire(&lk, path, &err), ZERG_ESYMLINK);
    assert_true(tu_contains(err.msg, "symbolic link"));
    assert_int_equal(access(outside, F_OK), -1);
    assert_int_equal(zerg_lock_probe(path, NULL), ZERG_ESYMLINK);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_second_acquire_fails_naming_pid),
        T(test_release_frees_and_is_idempotent),
        T(test_probe),
        T(test_lock_dropped_when_holder_dies),
        T(test_lock_not_inherited_by_exec),
        T(test_unopenable_path),
        T(test_fifo_lock_refused),
        T(test_symlink_lock_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
