/* test_ws_heal.c - a slot that heals (src/git/ws_heal.c and
 * zerg_ws_slot_prepare) against real git in temp dirs: a garbage .git is
 * moved aside and rewritten, a worktree on another branch or reached
 * through a link is refused with nothing touched, a stale index.lock is
 * removed, and a leftover over 64 MiB is named, not saved. */
#include "testutil.h"

#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "git/ws_internal.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/git.h"
#include "zerg/workspace.h"

extern char **environ;

static char tmp[PATH_MAX / 2], repo[PATH_MAX], logs[PATH_MAX];
static char wt[PATH_MAX], tip[ZERG_GIT_OID_MAX];
static struct zerg_git G;
static struct zerg_err err;
static struct zerg_workspace *W;
static struct zerg_ws_prepared out;

#define PLAIN TU_GIT

static int exists(const char *dir, const char *name)
{
    char path[2 * PATH_MAX];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return lstat(path, &st) == 0;
}

static int setup(void **state)
{
    snprintf(tmp, sizeof tmp, "%s", tu_mkdtemp());
    setenv("HOME", tmp, 1);
    tu_write(tmp, ".gitconfig", "[user]\n\tname = t\n\temail = t@t\n");
    snprintf(repo, sizeof repo, "%s/repo", tmp);
    snprintf(logs, sizeof logs, "%s/logs", tmp);
    TU_GIT_REPO(repo, "a.txt", "one\n");
    memset(&err, 0, sizeof err);
    struct zerg_ws_opts o = {.project = repo,
                             .feature = "F",
                             .run_id = "r",
                             .fresh = 1,
                             .nslots = 1};
    if (!(W = zerg_ws_open(&o, &err)))
        fail_msg("open: %s", err.msg);
    char cwd[PATH_MAX];
    assert_int_equal(
        W->ops->worktree(W, 0, wt, sizeof wt, cwd, sizeof cwd, &err), 0);
    assert_int_equal(W->ops->tip(W, tip, &err), 0);
    assert_int_equal(zerg_git_open(&G, wt, NULL, &err), 0);
    return 0;
}

static int teardown(void **state)
{
    W->ops->free(W);
    tu_rmtree(tmp);
    return 0;
}

static int prepare(const char *task, int attempt)
{
    return zerg_ws_slot_prepare(&G, wt, "zerg/F/worker-0", tip, logs, task,
                                attempt, &out, &err);
}

static void test_garbage_git_healed(void **state)
{
    tu_write(wt, "half.txt", "half\n");
    tu_write(wt, ".git", "garbage\n");
    assert_int_equal(prepare("T1", 1), 0);
    assert_non_null(strstr(out.repaired, "does not name"));
    assert_true(strstr(out.saved, "/logs/worktrees/worker-0-") != NULL);
    assert_int_equal(access(out.saved, F_OK), 0);
    assert_non_null(strstr(out.patch, "worktrees/worker-0-"));
    assert_false(exists(wt, "half.txt"));
}

static void test_other_branch_refused(void **state)
{
    PLAIN(wt, "checkout", "-q", "-b", "other");
    tu_write(wt, "mine.txt", "keep\n");
    assert_int_equal(prepare("T1", 1), ZERG_EGIT_FAILED);
    assert_non_null(strstr(err.msg, "not the registered worktree"));
    assert_true(exists(wt, "mine.txt"));
}

static void test_link_refused(void **state)
{
    char moved[PATH_MAX + 8];
    snprintf(moved, sizeof moved, "%s.moved", wt);
    assert_int_equal(rename(wt, moved), 0);
    assert_int_equal(symlink(repo, wt), 0);
    tu_write(repo, "user.txt", "the user's\n");
    assert_int_equal(prepare("T1", 1), ZERG_ESYMLINK);
    assert_non_null(strstr(err.msg, "symbolic link"));
    assert_true(exists(repo, "user.txt"));
    assert_int_equal(unlink(wt), 0);
    assert_int_equal(rename(moved, wt), 0);
}

static void test_stale_lock_removed(void **state)
{
    char admin[PATH_MAX];
    assert_int_equal(
        ws_admin_dir(&G, wt, "zerg/F/worker-0", admin, sizeof admin), 0);
    char refs[PATH_MAX + 32];
    snprintf(refs, sizeof refs, "%s/.git/refs/heads/zerg/F", repo);
    tu_write(admin, "index.lock", "");
    tu_write(admin, "HEAD.lock", "");
    tu_write(refs, "worker-0.lock", "");
    assert_int_equal(prepare("T1", 1), 0);
    assert_non_null(strstr(out.lock, "stale locks of a dead attempt"));
    assert_non_null(strstr(out.lock, "index.lock"));
    assert_non_null(strstr(out.lock, "HEAD.lock"));
    assert_non_null(strstr(out.lock, "the branch's ref lock"));
    assert_false(exists(admin, "index.lock"));
    assert_false(exists(admin, "HEAD.lock"));
    assert_false(exists(refs, "worker-0.lock"));
}

static void test_big_leftover_named(void **state)
{
    char big[PATH_MAX + 16], *text = NULL;
    size_t len = 0;
    snprintf(big, sizeof big, "%s/big.bin", wt);
    int fd = open(big, O_WRONLY | O_CREAT, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)70 << 20), 0);
    close(fd);
    tu_write(wt, "small.txt", "small\n");
    assert_int_equal(prepare("T2", 1), 0);
    assert_int_equal(out.nskipped, 1);
    assert_string_equal(out.first, "big.bin");
    assert_int_equal(out.first_size, 70LL << 20);
    assert_int_equal(zerg_fsio_read_all(out.patch, 1 << 20, &text, &len, &err),
                     0);
    assert_non_null(strstr(text, "#   big.bin (73400320 bytes)"));
    assert_non_null(strstr(text, "small.txt"));
    assert_null(strstr(text, "diff --git a/big.bin"));
    free(text);
    assert_false(exists(wt, "big.bin"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_garbage_git_healed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_other_branch_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_link_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_lock_removed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_big_leftover_named, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
