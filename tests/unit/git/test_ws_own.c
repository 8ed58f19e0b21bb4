/* test_ws_own.c - a container worker's own repository (src/git/ws_own.c,
 * ws_own_host.c) against real git in temp dirs, without a container: the
 * host makes the slot's directory and runs no git there, the worker makes
 * the repository (borrowing the host's objects), resets, commits and
 * writes the bundle, the host takes the commit from the bundle and merges
 * it (on resume too, from the attempt the slot recorded); what a task plants in
 * its repository (config, a ref named main, a .git turned into a file) never
 * reaches the host's; a bundle reached through a link, or not holding the
 * commit, is refused. */
#include "testutil.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "git/ws_internal.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/git.h"
#include "zerg/workspace.h"

static char tmp[PATH_MAX / 2], repo[PATH_MAX], logs[PATH_MAX + 16];
static char wt[PATH_MAX], tip[ZERG_GIT_OID_MAX], objects[PATH_MAX + 16];
static struct zerg_git G; /* the worker's, opened on its own repository */
static struct zerg_git H; /* the host's */
static struct zerg_err err;
static struct zerg_workspace *W;
static struct zerg_ws_prepared out;

#define PLAIN TU_GIT
#define BRANCH "zerg/F/worker-0"

static int setup(void **state)
{
    snprintf(tmp, sizeof tmp, "%s", tu_mkdtemp());
    setenv("HOME", tmp, 1);
    tu_write(tmp, ".gitconfig", "[user]\n\tname = t\n\temail = t@t\n");
    snprintf(repo, sizeof repo, "%s/repo", tmp);
    snprintf(logs, sizeof logs, "%s/.zerg/logs/F", repo);
    TU_GIT_REPO(repo, "a.txt", "one\n");
    memset(&err, 0, sizeof err);
    struct zerg_ws_opts o = {.project = repo,
                             .feature = "F",
                             .run_id = "r",
                             .fresh = 1,
                             .nslots = 1,
                             .own_repos = 1};
    if (!(W = zerg_ws_open(&o, &err)))
        fail_msg("open: %s", err.msg);
    assert_int_equal(W->ops->worktree(W, 0, wt, sizeof wt, NULL, 0, &err), 0);
    assert_int_equal(W->ops->tip(W, tip, &err), 0);
    snprintf(objects, sizeof objects, "%s/objects", W->git_dir);
    /* What the worker does at start, then opens git there. */
    memset(&out, 0, sizeof out);
    assert_int_equal(zerg_ws_own_ensure(wt, objects, BRANCH, &out, &err), 1);
    assert_int_equal(zerg_git_open(&G, wt, NULL, &err), 0);
    assert_int_equal(zerg_git_open(&H, repo, NULL, &err), 0);
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
    return zerg_ws_own_prepare(&G, wt, objects, BRANCH, tip, logs, task,
                               attempt, &out, &err);
}

/* The attempt's commit and bundle, as the worker makes them. */
static void commit_and_bundle(const char *task, int attempt,
                              char oid[ZERG_GIT_OID_MAX])
{
    char *msg = zerg_ws_commit_message(0, "t", task, attempt, "r");
    if (zerg_ws_attempt_commit(&G, wt, tip, msg, NULL, oid, &err))
        fail_msg("commit: %s", err.msg);
    free(msg);
    assert_true(oid[0] != '\0');
    if (zerg_ws_own_bundle(&G, wt, BRANCH, tip, oid, logs, task, attempt, &err))
        fail_msg("bundle: %s", err.msg);
}

/* The first line of the host's `git rev-parse --verify -q rev` (malloc'd). */
static char *host_rev(const char *rev)
{
    char oid[ZERG_GIT_OID_MAX];
    struct zerg_err e = {0};
    return zerg_git_resolve(&H, NULL, rev, oid, &e) ? NULL : strdup(oid);
}

static int has_object(const char *oid)
{
    char *r = host_rev(oid);
    free(r);
    return r != NULL;
}

static int exists(const char *dir, const char *name)
{
    char path[2 * PATH_MAX];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return lstat(path, &st) == 0;
}

static char *read_at(const char *dir, const char *name)
{
    char path[2 * PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *t = tu_read(path);
    assert_non_null(t);
    return t;
}

static char *host_show(const char *spec)
{
    const char *args[] = {"show", spec, NULL};
    struct zerg_git_call call = {0};
    char *text = NULL;
    struct zerg_err e = {0};
    if (zerg_git_run(&H, &call, args, &text, &e) < 0)
        return NULL;
    return text;
}

static void test_commit_lands_through_bundle(void **state)
{
    char oid[ZERG_GIT_OID_MAX];
    struct stat st;
    /* The host made the directory; the repository is the worker's own. */
    char dotgit[PATH_MAX + 8];
    snprintf(dotgit, sizeof dotgit, "%s/.git", wt);
    assert_int_equal(lstat(dotgit, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(prepare("T1", 1), 0);
    assert_string_equal(out.patch, ""); /* a new slot has no leftovers */
    assert_true(exists(wt, "a.txt"));
    tu_write(wt, "b.txt", "two\n");
    commit_and_bundle("T1", 1, oid);
    assert_true(exists(logs, "tasks/T1/attempt-1.bundle"));
    /* Not in the host repository until it is taken in. */
    assert_false(has_object(oid));
    assert_int_equal(W->ops->import(W, 0, "T1", 1, oid, &err), 0);
    char *head = host_rev("refs/heads/" BRANCH);
    assert_non_null(head);
    assert_string_equal(head, oid);
    free(head);
    struct zerg_merge_req req = {.task_id = "T1",
                                 .attempt = 1,
                                 .worker = 0,
                                 .title = "t",
                                 .run_id = "r",
                                 .commit = oid};
    struct zerg_merge_out m = {0};
    assert_int_equal(W->ops->merge(W, &req, &m, &err), 0);
    assert_int_equal(m.status, ZERG_MERGE_DONE);
    char *b = host_show("zerg/F/integration:b.txt");
    assert_non_null(b);
    assert_string_equal(b, "two\n");
    free(b);
    free(m.conflicts);
}

static void test_planted_config_and_main_stay_in_the_slot(void **state)
{
    char oid[ZERG_GIT_OID_MAX];
    char *config_before = read_at(repo, ".git/config");
    char *main_before = host_rev("main");
    assert_int_equal(prepare("T1", 1), 0);
    TU_GIT(wt, "config", "core.fsmonitor", "touch /tmp/zerg-own-planted");
    TU_GIT(wt, "update-ref", "refs/heads/main", tip);
    tu_write(wt, "c.txt", "three\n");
    commit_and_bundle("T1", 1, oid);
    assert_int_equal(W->ops->import(W, 0, "T1", 1, oid, &err), 0);
    char *config_after = read_at(repo, ".git/config");
    char *main_after = host_rev("main");
    assert_string_equal(config_before, config_after);
    assert_string_equal(main_before, main_after);
    free(config_before), free(config_after), free(main_before),
        free(main_after);
}

static void test_gitfile_remade_and_leftovers_kept(void **state)
{
    assert_int_equal(prepare("T1", 1), 0);
    tu_write(wt, "left.txt", "left\n");
    char dotgit[PATH_MAX + 8];
    snprintf(dotgit, sizeof dotgit, "%s/.git", wt);
    tu_rmtree(dotgit);
    tu_write(wt, ".git", "gitdir: /\n");
    assert_int_equal(prepare("T2", 1), 0);
    assert_non_null(strstr(out.repaired, "not a directory"));
    assert_non_null(strstr(out.saved, "/.git/replaced-"));
    assert_int_equal(access(out.saved, F_OK), 0);
    /* The files the task left are saved against the base, not lost. */
    assert_true(out.patch[0] != '\0');
    char *patch = NULL;
    size_t len = 0;
    assert_int_equal(
        zerg_fsio_read_file(out.patch, 1 << 20, 0, &patch, &len, &err), 0);
    assert_non_null(strstr(patch, "+left"));
    assert_null(strstr(patch, "deleted file"));
    free(patch);
    assert_false(exists(wt, "left.txt"));
}

static void test_rewritten_alternates_put_back(void **state)
{
    char alt[PATH_MAX + 64];
    snprintf(alt, sizeof alt, "%s/.git/objects/info", wt);
    tu_write(alt, "alternates", "/etc\n");
    assert_int_equal(prepare("T1", 1), 0);
    assert_non_null(strstr(out.repaired, "alternates"));
    char *text = read_at(alt, "alternates");
    assert_int_equal(strncmp(text, objects, strlen(objects)), 0);
    free(text);
}

static void test_bundle_through_a_link_refused(void **state)
{
    char oid[ZERG_GIT_OID_MAX], dir[PATH_MAX + 64], moved[PATH_MAX + 32];
    assert_int_equal(prepare("T1", 1), 0);
    tu_write(wt, "d.txt", "four\n");
    commit_and_bundle("T1", 1, oid);
    snprintf(dir, sizeof dir, "%s/tasks/T1", logs);
    snprintf(moved, sizeof moved, "%s/elsewhere", tmp);
    assert_int_equal(rename(dir, moved), 0);
    assert_int_equal(symlink(moved, dir), 0);
    assert_true(W->ops->import(W, 0, "T1", 1, oid, &err) < 0);
    assert_non_null(strstr(err.msg, "link"));
    assert_false(has_object(oid));
}

static void test_bundle_without_the_commit_refused(void **state)
{
    char oid[ZERG_GIT_OID_MAX];
    assert_int_equal(prepare("T1", 1), 0);
    tu_write(wt, "e.txt", "five\n");
    commit_and_bundle("T1", 1, oid);
    const char *other = "0123456789012345678901234567890123456789";
    assert_true(W->ops->import(W, 0, "T1", 1, other, &err) < 0);
    assert_non_null(strstr(err.msg, "does not hold"));
    memset(&err, 0, sizeof err);
    assert_int_equal(W->ops->import(W, 0, "T9", 1, oid, &err), ZERG_ENOTFOUND);
}

static void on_found(void *ud, const struct zerg_ws_found *f)
{
    snprintf(ud, ZERG_GIT_OID_MAX, "%s", f->oid);
    assert_string_equal(f->task_id, "T1");
    assert_int_equal(f->attempt, 1);
}

/* Resume: the orchestrator died after the worker committed, before the
 * result was applied; the slot's recorded attempt leads to its bundle,
 * and the commit is found at the worker branch's head. */
static void test_resume_finds_the_recorded_bundle(void **state)
{
    char oid[ZERG_GIT_OID_MAX], found[ZERG_GIT_OID_MAX] = "";
    assert_int_equal(prepare("T1", 1), 0);
    tu_write(wt, "f.txt", "six\n");
    commit_and_bundle("T1", 1, oid);
    assert_false(has_object(oid));
    assert_int_equal(W->ops->worker_head(W, 0, on_found, found, &err), 0);
    assert_string_equal(found, oid);
    assert_true(has_object(oid));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_commit_lands_through_bundle, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_planted_config_and_main_stay_in_the_slot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gitfile_remade_and_leftovers_kept,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_rewritten_alternates_put_back,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_bundle_through_a_link_refused,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_bundle_without_the_commit_refused,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_resume_finds_the_recorded_bundle,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
