/* test_workspace.c - the git workspace against real git in temp dirs
 * (src/git/ws_*.c): open, prepare/commit/merge, conflicts, the
 * compare-and-swap, leftovers saved as patches, commands planted in the
 * shared .git that must never run, bad inputs, cleanup and a monorepo.
 * Repositories are set up with git run from an argv; once anything is
 * planted, only zerg's own calls touch the repository. */
#include "testutil.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "git/git_internal.h"
#include "git/ws_internal.h"
#include "zerg/err.h"
#include "zerg/git.h"
#include "zerg/protocol.h"
#include "zerg/state.h"
#include "zerg/workspace.h"
#include "zerg/graph.h"

extern char **environ;

static char tmp[PATH_MAX / 2], repo[PATH_MAX], logs[PATH_MAX];
static struct zerg_git G;
static struct zerg_err err;

/* git from an argv (setup only), failing the test on a non-zero exit. */
#define PLAIN TU_GIT

/* zerg's git in dir (NULL = the repository): stdout, asserting success. */
static char *zgit_in(const char *dir, const char *input,
                     const char *const *args)
{
    struct zerg_git_call call = {
        .dir = dir, .input = input, .input_len = input ? strlen(input) : 0};
    char *out = NULL;
    int rc = zerg_git_run(&G, &call, args, &out, &err);
    if (rc != 0)
        fail_msg("git %s: %s", args[0], err.msg);
    return out;
}
#define ZGIT(dir, ...)                                                         \
    zgit_in(dir, NULL, (const char *const[]){__VA_ARGS__, NULL})

static void chomp(char *s)
{
    s[strcspn(s, "\n")] = '\0';
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static int setup(void **state)
{
    snprintf(tmp, sizeof tmp, "%s", tu_mkdtemp());
    setenv("HOME", tmp, 1); /* no global config of whoever runs this */
    snprintf(repo, sizeof repo, "%s/repo", tmp);
    snprintf(logs, sizeof logs, "%s/logs", tmp);
    TU_GIT_REPO(repo, "a.txt", "one\ntwo\nthree\n", "sub/proj/p.txt", "p\n");
    memset(&err, 0, sizeof err);
    assert_int_equal(zerg_git_open(&G, repo, NULL, &err), 0);
    ws_merge_race_hook = NULL;
    return 0;
}

static int teardown(void **state)
{
    ws_merge_race_hook = NULL;
    tu_rmtree(tmp);
    return 0;
}

static struct zerg_ws_opts opts(const char *run)
{
    struct zerg_ws_opts o = {.project = repo,
                             .feature = "F",
                             .run_id = run,
                             .fresh = 1,
                             .nslots = 2};
    return o;
}

static struct zerg_workspace *open_ws(const char *run)
{
    struct zerg_ws_opts o = opts(run);
    struct zerg_workspace *w = zerg_ws_open(&o, &err);
    if (!w)
        fail_msg("open: %s", err.msg);
    return w;
}

/* One attempt in slot: prepare at the tip, write files, commit. */
static void attempt(struct zerg_workspace *w, int slot, const char *task, int n,
                    const char *file, const char *text,
                    char oid[ZERG_GIT_OID_MAX])
{
    char wt[PATH_MAX], cwd[PATH_MAX], tip[ZERG_GIT_OID_MAX], patch[PATH_MAX];
    assert_int_equal(
        w->ops->worktree(w, slot, wt, sizeof wt, cwd, sizeof cwd, &err), 0);
    assert_int_equal(w->ops->tip(w, tip, &err), 0);
    if (zerg_ws_attempt_prepare(&G, wt, tip, logs, task, n, patch, sizeof patch,
                                &err))
        fail_msg("prepare: %s", err.msg);
    if (file)
        tu_write(wt, file, text);
    tu_write(wt, ".zerg/state/junk.json", "{}");
    char *msg = zerg_ws_commit_message(slot, "a title", task, n, "run1");
    if (zerg_ws_attempt_commit(&G, wt, tip, msg, NULL, oid, &err))
        fail_msg("commit: %s", err.msg);
    free(msg);
}

static enum zerg_merge_status merge(struct zerg_workspace *w, int slot,
                                    const char *task, int n, const char *commit,
                                    struct zerg_merge_out *out)
{
    struct zerg_merge_req req = {task, n, slot, "a title", "run1", commit};
    if (w->ops->merge(w, &req, out, &err))
        fail_msg("merge: %s", err.msg);
    return out->status;
}

static void tip_of(struct zerg_workspace *w, char tip[ZERG_GIT_OID_MAX])
{
    assert_int_equal(w->ops->tip(w, tip, &err), 0);
}

static void test_open_fresh(void **state)
{
    struct zerg_workspace *w = open_ws("run1");
    char tip[ZERG_GIT_OID_MAX], path[PATH_MAX * 2];
    tip_of(w, tip);
    char *head = ZGIT(NULL, "rev-parse", "HEAD");
    chomp(head);
    assert_string_equal(tip, head);
    assert_string_equal(w->base, head);
    assert_string_equal(w->branch, "zerg/F/integration");
    assert_string_equal(w->renamed, "");
    /* Slots are numbered from 0 like the workers: worker-0, worker-1. */
    for (int slot = 0; slot < 2; slot++) {
        snprintf(path, sizeof path, "%s/.zerg-worktrees/F/worker-%d/.git",
                 G.top, slot);
        assert_true(exists(path));
        snprintf(path, sizeof path, "refs/heads/zerg/F/worker-%d", slot);
        free(ZGIT(NULL, "show-ref", "--verify", "-q", path));
    }
    snprintf(path, sizeof path, "%s/info/exclude", G.common_dir);
    char *ex = tu_read(path);
    assert_true(tu_contains(ex, "\n/.zerg/state/\n"));
    assert_true(tu_contains(ex, "\n/.zerg-worktrees/\n"));
    free(ex);
    w->ops->free(w);
    /* Opening again adds nothing twice. */
    w = open_ws("run1");
    ex = tu_read(path);
    int copies = 0;
    for (const char *p = ex; (p = strstr(p, "\n/.zerg/state/\n")); p++)
        copies++;
    assert_int_equal(copies, 1);
    free(ex);
    free(head);
    w->ops->free(w);
}

struct found_log {
    int n;
    char tasks[8][32];
    char oids[8][ZERG_GIT_OID_MAX];
    int attempts[8];
};

static void collect(void *ud, const struct zerg_ws_found *f)
{
    struct found_log *l = ud;
    if (l->n >= 8)
        return;
    snprintf(l->tasks[l->n], sizeof l->tasks[0], "%s", f->task_id);
    snprintf(l->oids[l->n], sizeof l->oids[0], "%s", f->oid);
    assert_string_equal(f->run_id, "run1");
    l->attempts[l->n++] = f->attempt;
}

static void test_three_tasks(void **state)
{
    struct zerg_workspace *w = open_ws("run1");
    struct zerg_merge_out out;
    char oid[3][ZERG_GIT_OID_MAX], tip[ZERG_GIT_OID_MAX], none[80];
    attempt(w, 1, "T1", 1, "t1.txt", "1\n", oid[0]);
    assert_int_equal(merge(w, 1, "T1", 1, oid[0], &out), ZERG_MERGE_DONE);
    attempt(w, 2, "T2", 1, "t2.txt", "2\n", oid[1]);
    assert_int_equal(merge(w, 2, "T2", 1, oid[1], &out), ZERG_MERGE_DONE);
    attempt(w, 1, "T3", 2, "t3.txt", "3\n", oid[2]);
    /* Committed, not merged: the worker branch's head is a pending task. */
    struct found_log h = {0};
    if (w->ops->worker_head(w, 1, collect, &h, &err))
        fail_msg("worker_head: %s", err.msg);
    assert_int_equal(h.n, 1);
    assert_string_equal(h.tasks[0], "T3");
    assert_string_equal(h.oids[0], oid[2]);
    assert_int_equal(h.attempts[0], 2);
    assert_int_equal(merge(w, 1, "T3", 2, oid[2], &out), ZERG_MERGE_DONE);
    tip_of(w, tip);
    assert_string_equal(out.tip, tip);
    char spec[ZERG_GIT_OID_MAX + 8];
    snprintf(spec, sizeof spec, "%s^{tree}", tip);
    char *tree = ZGIT(NULL, "rev-parse", spec); /* what workers are told */
    chomp(tree);
    assert_string_equal(out.tree, tree);
    free(tree);
    /* A repeated merge lands nothing. */
    assert_int_equal(merge(w, 1, "T1", 1, oid[0], &out), ZERG_MERGE_ALREADY);
    assert_string_equal(out.tip, tip);
    assert_string_equal(out.tree, ""); /* not known: not said */
    char *files = ZGIT(NULL, "ls-tree", "-r", "--name-only", tip);
    assert_true(tu_contains(files, "t1.txt\nt2.txt\nt3.txt\n"));
    assert_null(strstr(files, ".zerg"));
    free(files);
    char range[200];
    snprintf(range, sizeof range, "%s..%s", w->base, tip);
    char *count = ZGIT(NULL, "rev-list", "--count", range);
    assert_string_equal(count, "3\n");
    free(count);
    char *msg = ZGIT(NULL, "log", "-1", "--format=%B", tip);
    assert_string_equal(msg, "ZERG [W1]: a title\n\nTask-ID: T3\nAttempt: "
                             "2\nZerg-Run: run1\n\n");
    free(msg);
    struct found_log l = {0};
    assert_int_equal(w->ops->merged(w, collect, &l, &err), 0);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.tasks[0], "T1");
    assert_string_equal(l.tasks[2], "T3");
    assert_int_equal(l.attempts[2], 2);
    /* Merged now (here as the very same commit: it was made on the tip),
     * so no longer pending. */
    struct found_log h1 = {0};
    assert_int_equal(w->ops->worker_head(w, 1, collect, &h1, &err),
                     ZERG_ENOTFOUND);
    assert_int_equal(h1.n, 0);
    /* A task that changed nothing: no commit; the head is then the tip's
     * own squash commit, which is not a pending task. */
    attempt(w, 2, "T4", 1, NULL, NULL, none);
    assert_string_equal(none, "");
    struct found_log h2 = {0};
    assert_int_equal(w->ops->worker_head(w, 2, collect, &h2, &err),
                     ZERG_ENOTFOUND);
    char *paths = NULL;
    assert_int_equal(w->ops->changed(w, oid[2], NULL, &paths, &err), 0);
    assert_string_equal(paths, "t3.txt\n");
    free(paths);
    w->ops->free(w);
    /* Reopened for resume, the set is loaded from history. */
    struct zerg_ws_opts o = opts("run1");
    o.fresh = 0;
    w = zerg_ws_open(&o, &err);
    assert_non_null(w);
    assert_int_equal(merge(w, 2, "T2", 1, oid[1], &out), ZERG_MERGE_ALREADY);
    w->ops->free(w);
}

static void test_conflict_and_keep(void **state)
{
    struct zerg_workspace *w = open_ws("run1");
    struct zerg_merge_out out;
    char a[ZERG_GIT_OID_MAX], b[ZERG_GIT_OID_MAX], tip[ZERG_GIT_OID_MAX];
    attempt(w, 1, "T1", 1, "a.txt", "one\nTWO-A\nthree\n", a);
    attempt(w, 2, "T2", 1, "a.txt", "one\nTWO-B\nthree\n", b);
    assert_int_equal(merge(w, 1, "T1", 1, a, &out), ZERG_MERGE_DONE);
    tip_of(w, tip);
    assert_int_equal(merge(w, 2, "T2", 1, b, &out), ZERG_MERGE_CONFLICT);
    assert_string_equal(out.conflicts, "a.txt\n");
    assert_string_equal(out.tip, tip);
    free(out.conflicts);
    char now[ZERG_GIT_OID_MAX];
    tip_of(w, now);
    assert_string_equal(now, tip);
    assert_int_equal(w->ops->keep(w, ZERG_WS_KEPT_CONFLICT, "T2", 1, b, &err),
                     0);
    char *kept = ZGIT(NULL, "rev-parse", "refs/zerg/F/conflicts/T2/1");
    chomp(kept);
    assert_string_equal(kept, b);
    free(kept);
    /* rush.review keeps a waiting commit under review/. */
    assert_int_equal(w->ops->keep(w, ZERG_WS_KEPT_REVIEW, "T2", 1, b, &err), 0);
    kept = ZGIT(NULL, "rev-parse", "refs/zerg/F/review/T2/1");
    chomp(kept);
    assert_string_equal(kept, b);
    free(kept);
    w->ops->free(w);
}

/* Moves the integration tip once, as if another writer got there first. */
static void race(struct ws_host *h)
{
    ws_merge_race_hook = NULL;
    char *tip = ZGIT(NULL, "rev-parse", h->ref);
    chomp(tip);
    char *blob =
        zgit_in(NULL, "raced\n",
                (const char *const[]){"hash-object", "-w", "--stdin", NULL});
    chomp(blob);
    char *ls = ZGIT(NULL, "ls-tree", tip);
    char tree_in[4096];
    snprintf(tree_in, sizeof tree_in, "%s100644 blob %s\trace.txt\n", ls, blob);
    char *tree = zgit_in(NULL, tree_in, (const char *const[]){"mktree", NULL});
    chomp(tree);
    char *commit = zgit_in(
        NULL, "raced\n",
        (const char *const[]){"commit-tree", tree, "-p", tip, "-F", "-", NULL});
    chomp(commit);
    free(ZGIT(NULL, "update-ref", h->ref, commit, tip));
    free(tip), free(blob), free(ls), free(tree), free(commit);
}

static void test_compare_and_swap(void **state)
{
    struct zerg_workspace *w = open_ws("run1");
    struct zerg_merge_out out;
    char a[ZERG_GIT_OID_MAX], tip[ZERG_GIT_OID_MAX];
    attempt(w, 1, "T1", 1, "t1.txt", "1\n", a);
    ws_merge_race_hook = race;
    assert_int_equal(merge(w, 1, "T1", 1, a, &out), ZERG_MERGE_DONE);
    assert_null(ws_merge_race_hook); /* the race happened */
    tip_of(w, tip);
    char *files = ZGIT(NULL, "ls-tree", "-r", "--name-only", tip);
    assert_true(tu_contains(files, "race.txt"));
    assert_true(tu_contains(files, "t1.txt"));
    free(files);
    char parent[80];
    snprintf(parent, sizeof parent, "%s^", tip);
    char *msg = ZGIT(NULL, "log", "-1", "--format=%s", parent);
    assert_string_equal(msg, "raced\n");
    free(msg);
    w->ops->free(w);
}

/* A merge starts from where the last one left the branch.  Moved behind
 * zerg's back between merges (here reset to the base, T1 dropped), the
 * next merge is computed on the branch as it is: T2 edits the line T1
 * edited and merges cleanly, where against the remembered tip it would
 * have conflicted. */
static void test_merge_after_the_branch_moved(void **state)
{
    struct zerg_workspace *w = open_ws("run1");
    struct zerg_merge_out out;
    char a[ZERG_GIT_OID_MAX], b[ZERG_GIT_OID_MAX], tip[ZERG_GIT_OID_MAX];
    char wt[PATH_MAX], cwd[PATH_MAX], patch[PATH_MAX];
    attempt(w, 1, "T1", 1, "a.txt", "one\nTWO-A\nthree\n", a);
    assert_int_equal(
        w->ops->worktree(w, 0, wt, sizeof wt, cwd, sizeof cwd, &err), 0);
    assert_int_equal(zerg_ws_attempt_prepare(&G, wt, w->base, logs, "T2", 1,
                                             patch, sizeof patch, &err),
                     0);
    tu_write(wt, "a.txt", "one\nTWO-B\nthree\n");
    char *msg = zerg_ws_commit_message(0, "a title", "T2", 1, "run1");
    assert_int_equal(
        zerg_ws_attempt_commit(&G, wt, w->base, msg, NULL, b, &err), 0);
    free(msg);
    assert_int_equal(merge(w, 1, "T1", 1, a, &out), ZERG_MERGE_DONE);
    PLAIN(repo, "update-ref", "refs/heads/zerg/F/integration", w->base);
    assert_int_equal(merge(w, 0, "T2", 1, b, &out), ZERG_MERGE_DONE);
    tip_of(w, tip);
    assert_string_equal(out.tip, tip);
    char spec[128];
    snprintf(spec, sizeof spec, "%s:a.txt", tip);
    char *text = ZGIT(NULL, "show", spec);
    assert_string_equal(text, "one\nTWO-B\nthree\n");
    free(text);
    snprintf(spec, sizeof spec, "%s^", tip);
    char *parent = ZGIT(NULL, "rev-parse", spec);
    chomp(parent);
    assert_string_equal(parent, w->base);
    free(parent);
    w->ops->free(w);
}

/* A git killed in a slot's last attempt left its branch's ref lock in
 * the common directory, where the user's own git would stop on it: the
 * end of the run (the workspace freed, every worker gone) removes it and
 * the slot's index lock, and keeps a lock while a git runs there. */
static void test_run_end_heals_slot_locks(void **state)
{
    struct zerg_workspace *w = open_ws("run1");
    char a[ZERG_GIT_OID_MAX], wt[PATH_MAX];
    attempt(w, 1, "T1", 1, "t1.txt", "1\n", a);
    assert_int_equal(w->ops->worktree(w, 1, wt, sizeof wt, NULL, 0, &err), 0);
    char ref_lock[PATH_MAX + 64], index_lock[PATH_MAX + 64], gitdir[PATH_MAX];
    snprintf(ref_lock, sizeof ref_lock, "%s/refs/heads/zerg/F/worker-1.lock",
             G.common_dir);
    assert_int_equal(ws_git_dir(&G, wt, gitdir, sizeof gitdir, &err), 0);
    snprintf(index_lock, sizeof index_lock, "%s/index.lock", gitdir);
    tu_write(G.common_dir, "refs/heads/zerg/F/worker-1.lock", "0000\n");
    tu_write(gitdir, "index.lock", "");
    w->ops->free(w);
    assert_false(exists(ref_lock));
    assert_false(exists(index_lock));
    /* A git working in the slot: its lock is its own. */
    w = open_ws("run1");
    tu_write(G.common_dir, "refs/heads/zerg/F/worker-1.lock", "0000\n");
    int in[2];
    assert_int_equal(pipe(in), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) { /* cat-file waits on the pipe until it is closed */
        dup2(in[0], 0);
        close(in[1]);
        if (chdir(wt) == 0)
            execlp("git", "git", "--no-pager", "cat-file", "--batch", NULL);
        _exit(127);
    }
    close(in[0]);
    for (int i = 0; i < 500; i++) { /* until it runs as git in wt */
        char link[64], cwd[PATH_MAX] = "";
        snprintf(link, sizeof link, "/proc/%d/cwd", (int)pid);
        ssize_t n = readlink(link, cwd, sizeof cwd - 1);
        char *comm = NULL;
        snprintf(link, sizeof link, "/proc/%d/comm", (int)pid);
        comm = tu_read(link);
        int ready = n > 0 && comm && !strncmp(comm, "git", 3);
        free(comm);
        if (ready)
            break;
        usleep(10000);
    }
    w->ops->free(w);
    assert_true(exists(ref_lock));
    close(in[1]);
    waitpid(pid, NULL, 0);
    unlink(ref_lock);
}

/* The checked-out check reads the HEAD files: the integration branch
 * checked out in a linked worktree of the user's stops the merge, names
 * that worktree and moves nothing; a HEAD git keeps as a link is asked
 * of git, with the same answer. */
static void test_checked_out_in_a_linked_worktree(void **state)
{
    struct zerg_workspace *w = open_ws("run1");
    struct zerg_merge_out out;
    char a[ZERG_GIT_OID_MAX], tip[ZERG_GIT_OID_MAX], now[ZERG_GIT_OID_MAX];
    char where[PATH_MAX], other[PATH_MAX];
    attempt(w, 1, "T1", 1, "t1.txt", "1\n", a);
    tip_of(w, tip);
    snprintf(other, sizeof other, "%s/elsewhere", tmp);
    PLAIN(repo, "worktree", "add", "-q", other, "zerg/F/integration");
    assert_int_equal(ws_checked_out_now(&G, "refs/heads/zerg/F/integration",
                                        where, sizeof where, &err),
                     1);
    assert_string_equal(where, other);
    assert_int_equal(
        ws_checked_out_now(&G, "refs/heads/main", where, sizeof where, &err),
        1);
    assert_string_equal(where, repo);
    assert_int_equal(ws_checked_out_now(&G, "refs/heads/zerg/F/none", where,
                                        sizeof where, &err),
                     0);
    struct zerg_merge_req req = {"T1", 1, 1, "a title", "run1", a};
    assert_int_equal(w->ops->merge(w, &req, &out, &err), ZERG_EGIT_CHECKED_OUT);
    assert_true(tu_contains(err.msg, other));
    tip_of(w, now);
    assert_string_equal(now, tip);
    /* HEAD as a link (what git once wrote): not read, git answers. */
    char admin[PATH_MAX + 32], head[PATH_MAX + 40], real[PATH_MAX + 48];
    snprintf(admin, sizeof admin, "%s/.git/worktrees/elsewhere", repo);
    snprintf(head, sizeof head, "%s/HEAD", admin);
    snprintf(real, sizeof real, "%s/HEAD.real", admin);
    assert_int_equal(rename(head, real), 0);
    assert_int_equal(symlink("HEAD.real", head), 0);
    assert_int_equal(ws_checked_out_now(&G, "refs/heads/zerg/F/integration",
                                        where, sizeof where, &err),
                     1);
    assert_string_equal(where, other);
    unlink(head);
    assert_int_equal(rename(real, head), 0);
    PLAIN(repo, "worktree", "remove", "--force", other);
    assert_int_equal(merge(w, 1, "T1", 1, a, &out), ZERG_MERGE_DONE);
    w->ops->free(w);
}

static void test_prepare_saves_leftovers(void **state)
{
    struct zerg_workspace *w = open_ws("run1");
    char wt[PATH_MAX], tip[ZERG_GIT_OID_MAX], patch[PATH_MAX];
    char path[PATH_MAX * 2];
    assert_int_equal(w->ops->worktree(w, 1, wt, sizeof wt, NULL, 0, &err), 0);
    tip_of(w, tip);
    assert_int_equal(zerg_ws_attempt_prepare(&G, wt, tip, logs, "T9", 1, patch,
                                             sizeof patch, &err),
                     0);
    assert_string_equal(patch, "");
    assert_int_equal(zerg_ws_save_patch(&G, wt, "/nonexistent/x", &err), 0);
    snprintf(path, sizeof path, "%s/info/exclude", G.common_dir);
    char *ex = tu_read(path);
    char more[8192];
    snprintf(more, sizeof more, "%s*.cache\n", ex);
    free(ex);
    tu_write(G.common_dir, "info/exclude", more);
    tu_write(wt, "a.txt", "one\nchanged\nthree\n");
    tu_write(wt, "new.txt", "untracked\n");
    tu_write(wt, "build.cache", "keep me\n");
    assert_int_equal(zerg_ws_attempt_prepare(&G, wt, tip, logs, "T9", 2, patch,
                                             sizeof patch, &err),
                     0);
    snprintf(path, sizeof path, "%s/tasks/T9/attempt-1.patch", logs);
    assert_string_equal(patch, path);
    char *text = tu_read(patch);
    assert_true(tu_contains(text, "+changed"));
    assert_true(tu_contains(text, "new.txt"));
    assert_null(strstr(text, "build.cache"));
    free(text);
    char *st = ZGIT(wt, "status", "--porcelain");
    assert_string_equal(st, "");
    free(st);
    snprintf(path, sizeof path, "%s/build.cache", wt);
    assert_true(exists(path));
    free(ZGIT(wt, "apply", "--check", patch));
    w->ops->free(w);
}

/* ---- planted commands ------------------------------------------------ */

static char marks[PATH_MAX + 16];

/* A script that leaves a marker named by its argument, then upper-cases
 * stdin to stdout (a filter's effect would show in the content). */
static void plant(void)
{
    char evil[PATH_MAX], text[PATH_MAX * 16], hooks[PATH_MAX];
    snprintf(marks, sizeof marks, "%s/marks", tmp);
    mkdir(marks, 0755);
    snprintf(evil, sizeof evil, "%s/evil.sh", tmp);
    snprintf(text, sizeof text, "#!/bin/sh\ntouch \"%s/$1\"\nexec tr a-z A-Z\n",
             marks);
    tu_write(tmp, "evil.sh", text);
    chmod(evil, 0755);
    snprintf(hooks, sizeof hooks, "%s/evilhooks", tmp);
    const char *names[] = {
        "pre-commit",  "post-checkout", "reference-transaction",
        "post-commit", "post-merge",    "post-rewrite",
        "pre-auto-gc"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char rel[64], hook[PATH_MAX * 3];
        snprintf(rel, sizeof rel, "evilhooks/%s", names[i]);
        snprintf(text, sizeof text, "#!/bin/sh\n%s hook-%s </dev/null\n", evil,
                 names[i]);
        tu_write(tmp, rel, text);
        snprintf(hook, sizeof hook, "%s/%s", hooks, names[i]);
        chmod(hook, 0755);
    }
    snprintf(text, sizeof text, "[core]\n\tfsmonitor = %s fsmonitor-inc\n",
             evil);
    tu_write(tmp, "inc.cfg", text);
    char cfg[PATH_MAX * 2];
    snprintf(cfg, sizeof cfg, "%s/config", G.common_dir);
    char *old = tu_read(cfg);
    snprintf(text, sizeof text,
             "%s[core]\n\tfsmonitor = %s fsmonitor\n\thooksPath = %s\n"
             "[filter \"evil\"]\n\tclean = %s clean\n\tsmudge = %s smudge\n"
             "\trequired = true\n[merge \"evil\"]\n\tdriver = %s merge\n"
             "[diff \"evil\"]\n\ttextconv = %s textconv\n"
             "\tcommand = %s diffcmd\n[include]\n\tpath = %s/inc.cfg\n",
             old, evil, hooks, evil, evil, evil, evil, evil, tmp);
    free(old);
    tu_write(G.common_dir, "config", text);
    /* merge-tree reads attributes from the main work tree and from here,
     * not from the commits it merges. */
    tu_write(G.common_dir, "info/attributes",
             "* filter=evil merge=evil diff=evil\n");
}

static void assert_no_marks(const char *when)
{
    if (tu_count_entries(marks) != 0)
        fail_msg("a planted command ran (%s)", when);
}

/* zerg cleanup of feature F, going by the names (no git.refs). */
static int ws_cleanup(int all, int force, int dry_run, zerg_ws_say_fn fn,
                      void *ud)
{
    struct zerg_ws_cleanup_opts o = {.project = repo,
                                     .feature = "F",
                                     .logs_dir = logs,
                                     .all = all,
                                     .force = force,
                                     .dry_run = dry_run,
                                     .say = fn,
                                     .ud = ud};
    return zerg_ws_cleanup(&o, &err);
}

/* Every file counts as settled long ago: the configuration scans are
 * cached from the first call, so the plant lands between calls that
 * reuse them. */
static int64_t far_future(void)
{
    return INT64_MAX / 2;
}

static void test_planted_commands(void **state)
{
    int64_t (*clock_was)(void) = git_scan_hooks.now_ns;
    git_scan_hooks.now_ns = far_future;
    struct zerg_workspace *w = open_ws("run1");
    unsigned long hits = git_scan_stats.hits;
    struct zerg_merge_out out;
    char a[ZERG_GIT_OID_MAX], b[ZERG_GIT_OID_MAX], c[ZERG_GIT_OID_MAX];
    char wt[PATH_MAX], tip[ZERG_GIT_OID_MAX];
    plant();
    /* The check itself is real: the planted config does run when zerg's
     * overrides are not there. */
    assert_int_equal(w->ops->worktree(w, 1, wt, sizeof wt, NULL, 0, &err), 0);
    attempt(w, 1, "T1", 1, ".gitattributes",
            "* filter=evil merge=evil diff=evil\n", a);
    tu_write(wt, "x.txt", "alpha\nbeta\ngamma\ndelta\nepsilon\n");
    char *msg = zerg_ws_commit_message(1, "x", "T1", 1, "run1");
    char first[ZERG_GIT_OID_MAX];
    snprintf(first, sizeof first, "%s", a);
    assert_int_equal(zerg_ws_attempt_commit(&G, wt, first, msg, NULL, a, &err),
                     0);
    free(msg);
    assert_int_equal(merge(w, 1, "T1", 1, a, &out), ZERG_MERGE_DONE);
    assert_no_marks("first merge");
    attempt(w, 1, "T2", 1, "x.txt", "ALPHA-2\nbeta\ngamma\ndelta\nepsilon\n",
            b);
    attempt(w, 2, "T3", 1, "x.txt", "alpha\nbeta\ngamma\ndelta\nepsilon-3\n",
            c);
    assert_int_equal(merge(w, 1, "T2", 1, b, &out), ZERG_MERGE_DONE);
    assert_int_equal(merge(w, 2, "T3", 1, c, &out), ZERG_MERGE_DONE);
    assert_no_marks("merges");
    tip_of(w, tip);
    char spec[128];
    snprintf(spec, sizeof spec, "%s:x.txt", tip);
    char *blob = ZGIT(NULL, "cat-file", "blob", spec);
    assert_string_equal(blob, "ALPHA-2\nbeta\ngamma\ndelta\nepsilon-3\n");
    free(blob);
    char *paths = NULL;
    assert_int_equal(w->ops->changed(w, c, NULL, &paths, &err), 0);
    assert_string_equal(paths, "x.txt\n");
    free(paths);
    tu_write(wt, "x.txt", "dirty\n");
    char patch[PATH_MAX * 2];
    snprintf(patch, sizeof patch, "%s/p.patch", tmp);
    assert_int_equal(zerg_ws_save_patch(&G, wt, patch, &err), 1);
    char *ptext = tu_read(patch);
    assert_true(tu_contains(ptext, "+dirty"));
    free(ptext);
    char gate[PATH_MAX];
    assert_int_equal(w->ops->gate_tree(w, gate, sizeof gate, &err), 0);
    assert_int_equal(w->ops->gate_tree(w, gate, sizeof gate, &err), 0);
    char gx[PATH_MAX * 2];
    snprintf(gx, sizeof gx, "%s/x.txt", gate);
    char *checked = tu_read(gx);
    assert_string_equal(checked, "ALPHA-2\nbeta\ngamma\ndelta\nepsilon-3\n");
    free(checked);
    char leftover[PATH_MAX];
    assert_int_equal(zerg_ws_attempt_prepare(&G, wt, tip, logs, "T4", 1,
                                             leftover, sizeof leftover, &err),
                     0);
    assert_true(leftover[0] != '\0');
    assert_no_marks("prepare, changed, patches, gate");
    w->ops->free(w);
    assert_true(ws_cleanup(1, 1, 0, NULL, NULL) > 0);
    assert_no_marks("cleanup");
    assert_true(git_scan_stats.hits > hits);
    git_scan_hooks.now_ns = clock_was;
    /* Without zerg's overrides the plant is live: the test can fail. */
    const char *argv[] = {"git", "-C", repo, "status", "--short", NULL};
    pid_t pid;
    int st;
    tu_write(repo, "a.txt", "touched\n");
    assert_int_equal(
        posix_spawnp(&pid, "git", NULL, NULL, (char *const *)argv, environ), 0);
    waitpid(pid, &st, 0);
    assert_true(tu_count_entries(marks) > 0);
}

/* The merge's running git processes (ws_pipes.c) were started before a
 * worker planted the config: the next merge finds the scan changed and
 * starts them again under the new overrides, so the planted
 * reference-transaction hook (core.hooksPath) never runs; what the
 * commit changed is still read right.  Without the restart the old
 * process would still run under the old overrides (no hooksPath
 * override: the planted one counts). */
static void test_pipes_restart_on_planted_config(void **state)
{
    int64_t (*clock_was)(void) = git_scan_hooks.now_ns;
    git_scan_hooks.now_ns = far_future;
    struct zerg_workspace *w = open_ws("run1");
    struct zerg_merge_out out;
    char a[ZERG_GIT_OID_MAX], b[ZERG_GIT_OID_MAX];
    attempt(w, 1, "T1", 1, "t1.txt", "1\n", a);
    char *paths = NULL;
    assert_int_equal(w->ops->changed(w, a, w->base, &paths, &err), 0);
    assert_string_equal(paths, "t1.txt\n");
    free(paths);
    assert_int_equal(merge(w, 1, "T1", 1, a, &out), ZERG_MERGE_DONE);
    struct ws_host *h = (struct ws_host *)w;
    assert_true(h->diff.pid > 0 && h->refs.pid > 0); /* running */
    pid_t diff_was = h->diff.pid, refs_was = h->refs.pid;
    plant();
    attempt(w, 0, "T2", 1, "t2.txt", "2\n", b);
    char tip[ZERG_GIT_OID_MAX];
    tip_of(w, tip);
    assert_int_equal(w->ops->changed(w, b, tip, &paths, &err), 0);
    assert_string_equal(paths, "t2.txt\n");
    free(paths);
    assert_int_equal(merge(w, 0, "T2", 1, b, &out), ZERG_MERGE_DONE);
    assert_true(h->diff.pid != diff_was && h->refs.pid != refs_was);
    assert_no_marks("merge over the running processes");
    /* Killed (a chaos run kills zerg's git processes): the question is
     * asked the plain way, and the next one starts them again. */
    char c[ZERG_GIT_OID_MAX];
    attempt(w, 1, "T3", 1, "t3.txt", "3\n", c);
    kill(h->diff.pid, SIGKILL);
    kill(h->refs.pid, SIGKILL);
    tip_of(w, tip);
    assert_int_equal(w->ops->changed(w, c, tip, &paths, &err), 0);
    assert_string_equal(paths, "t3.txt\n");
    free(paths);
    assert_int_equal(merge(w, 1, "T3", 1, c, &out), ZERG_MERGE_DONE);
    char *files = ZGIT(NULL, "ls-tree", "-r", "--name-only", out.tip);
    assert_true(tu_contains(files, "t1.txt") && tu_contains(files, "t2.txt") &&
                tu_contains(files, "t3.txt"));
    free(files);
    w->ops->free(w);
    git_scan_hooks.now_ns = clock_was;
}

/* ---- bad inputs --------------------------------------------------------- */

static void expect_open_fails(struct zerg_ws_opts o, int code, const char *text)
{
    memset(&err, 0, sizeof err);
    struct zerg_workspace *w = zerg_ws_open(&o, &err);
    assert_null(w);
    assert_int_equal(err.code, code);
    if (!tu_contains(err.msg, text))
        fail_msg("message: %s", err.msg);
}

static void test_bad_inputs(void **state)
{
    struct zerg_ws_opts o = opts("run1");
    char dir[PATH_MAX * 2];
    snprintf(dir, sizeof dir, "%s/plain", tmp);
    mkdir(dir, 0755);
    o.project = dir;
    expect_open_fails(o, ZERG_EGIT_NOREPO, "is not a git repository");
    snprintf(dir, sizeof dir, "%s/unborn", tmp);
    mkdir(dir, 0755);
    PLAIN(dir, "init", "-q");
    o.project = dir;
    expect_open_fails(o, ZERG_EGIT_NOREPO, "no commit");
    o = opts("run1");
    o.base = "no-such-branch";
    expect_open_fails(o, ZERG_EINVAL_INPUT, "no-such-branch");
    o = opts("run1");
    o.feature = "a..b";
    expect_open_fails(o, ZERG_EINVAL_INPUT, "a..b");
    PLAIN(repo, "branch", "zerg");
    expect_open_fails(opts("run1"), ZERG_EINVAL_INPUT, "refs/heads/zerg");
    PLAIN(repo, "branch", "-D", "zerg");
    /* An old git first on PATH. */
    char *path = strdup(getenv("PATH"));
    char fake[PATH_MAX * 2], newpath[PATH_MAX * 4];
    tu_write(tmp, "fakebin/git", "#!/bin/sh\necho 'git version 2.20.0'\n");
    snprintf(fake, sizeof fake, "%s/fakebin/git", tmp);
    chmod(fake, 0755);
    snprintf(newpath, sizeof newpath, "%s/fakebin:%s", tmp, path);
    setenv("PATH", newpath, 1);
    expect_open_fails(opts("run1"), ZERG_EGIT_OLD,
                      "git 2.38 or newer is needed (found 2.20");
    assert_int_equal(zerg_ws_auto_applies(repo), 0);
    setenv("PATH", path, 1);
    free(path);
    assert_int_equal(zerg_ws_auto_applies(repo), 1);
    assert_int_equal(zerg_ws_auto_applies(dir), 0);
}

static void test_rename_old_integration(void **state)
{
    struct zerg_workspace *w = open_ws("run1");
    struct zerg_merge_out out;
    char a[ZERG_GIT_OID_MAX], old_tip[ZERG_GIT_OID_MAX];
    attempt(w, 1, "T1", 1, "t1.txt", "1\n", a);
    assert_int_equal(merge(w, 1, "T1", 1, a, &out), ZERG_MERGE_DONE);
    tip_of(w, old_tip);
    char base[ZERG_GIT_OID_MAX];
    snprintf(base, sizeof base, "%s", w->base);
    w->ops->free(w);
    w = open_ws("run2");
    assert_string_equal(w->renamed, "zerg/F/integration.run1");
    char *kept = ZGIT(NULL, "rev-parse", "refs/heads/zerg/F/integration.run1");
    chomp(kept);
    assert_string_equal(kept, old_tip);
    free(kept);
    char tip[ZERG_GIT_OID_MAX];
    tip_of(w, tip);
    assert_string_equal(tip, base);
    w->ops->free(w);
    /* Resume keeps the recorded base even when HEAD moved on. */
    PLAIN(repo, "commit", "-q", "--allow-empty", "-m", "moved");
    struct zerg_ws_opts o = opts("run2");
    o.fresh = 0;
    o.recorded_base = base;
    w = zerg_ws_open(&o, &err);
    assert_non_null(w);
    assert_string_equal(w->base, base);
    w->ops->free(w);
}

static void note_ref(void *ud, const char *ref, const char *oid)
{
    assert_int_equal(zerg_state_ref_set(ud, ref, oid), 0);
}

static const char *noted(const struct zerg_state *s, const char *ref)
{
    const struct zerg_state_ref *r = zerg_state_ref_find(s, ref);
    return r ? r->oid : "(not noted)";
}

/* Every ref the workspace makes or moves reaches git.refs with the oid it
 * set (cleanup deletes only those); a branch the user has checked out is
 * never moved: not at open, not by a merge. */
static void test_refs_noted_and_checked_out(void **state)
{
    struct zerg_state s = {0};
    struct zerg_ws_opts o = opts("run1");
    o.on_ref = note_ref, o.ref_ud = &s;
    struct zerg_workspace *w = zerg_ws_open(&o, &err);
    assert_non_null(w);
    struct zerg_merge_out out;
    char a[ZERG_GIT_OID_MAX], b[ZERG_GIT_OID_MAX], tip[ZERG_GIT_OID_MAX];
    assert_string_equal(noted(&s, "refs/heads/zerg/F/integration"), w->base);
    attempt(w, 1, "T1", 1, "a.txt", "one\nTWO-A\nthree\n", a);
    assert_string_equal(noted(&s, "refs/heads/zerg/F/worker-1"), w->base);
    assert_int_equal(merge(w, 1, "T1", 1, a, &out), ZERG_MERGE_DONE);
    tip_of(w, tip);
    assert_string_equal(noted(&s, "refs/heads/zerg/F/integration"), tip);
    attempt(w, 0, "T2", 1, "b.txt", "b\n", b);
    assert_int_equal(w->ops->keep(w, ZERG_WS_KEPT_CONFLICT, "T2", 1, b, &err),
                     0);
    assert_string_equal(noted(&s, "refs/zerg/F/conflicts/T2/1"), b);

    PLAIN(repo, "switch", "-q", "zerg/F/integration");
    struct zerg_merge_req req = {"T2", 1, 0, "a title", "run1", b};
    assert_int_equal(w->ops->merge(w, &req, &out, &err), ZERG_EGIT_CHECKED_OUT);
    assert_true(tu_contains(err.msg, "zerg/F/integration is checked out in"));
    char now[ZERG_GIT_OID_MAX];
    tip_of(w, now);
    assert_string_equal(now, tip);
    w->ops->free(w);
    expect_open_fails(opts("run2"), ZERG_EGIT_CHECKED_OUT,
                      "switch <branch>), then run zerg again");
    PLAIN(repo, "switch", "-q", "main");
    PLAIN(repo, "switch", "-q", "-c", "zerg/F/worker-7");
    expect_open_fails(opts("run2"), ZERG_EGIT_CHECKED_OUT,
                      "zerg/F/worker-7 is checked out in");
    zerg_state_close(&s);
}

struct said {
    int n;
    char text[4096];
};

static void say(void *ud, const char *line)
{
    struct said *s = ud;
    s->n++;
    size_t off = strlen(s->text);
    snprintf(s->text + off, sizeof s->text - off, "%s\n", line);
}

static void test_cleanup(void **state)
{
    struct zerg_workspace *w = open_ws("run1");
    char wt[PATH_MAX], gate[PATH_MAX], dir[PATH_MAX * 2];
    assert_int_equal(w->ops->worktree(w, 1, wt, sizeof wt, NULL, 0, &err), 0);
    assert_int_equal(w->ops->gate_tree(w, gate, sizeof gate, &err), 0);
    w->ops->free(w);
    tu_write(wt, "unsaved.txt", "work\n");
    struct said s = {0};
    int n = ws_cleanup(0, 0, 1, say, &s);
    assert_true(n >= 5); /* 3 worktrees, 2 worker branches */
    assert_int_equal(n, s.n);
    assert_true(tu_contains(s.text, "Would remove worktree"));
    assert_true(exists(wt));
    struct said s2 = {0};
    n = ws_cleanup(0, 0, 0, say, &s2);
    assert_int_equal(n, s2.n);
    assert_true(n >= 5);
    assert_false(exists(wt));
    snprintf(dir, sizeof dir, "%s/worktrees", logs);
    assert_int_equal(tu_count_entries(dir), 1);
    char *list = ZGIT(NULL, "worktree", "list", "--porcelain");
    assert_null(strstr(list, ".zerg-worktrees"));
    free(list);
    char *refs = ZGIT(NULL, "for-each-ref", "--format=%(refname)");
    assert_null(strstr(refs, "worker-"));
    assert_true(tu_contains(refs, "refs/heads/zerg/F/integration"));
    free(refs);
    struct zerg_ws_info info;
    assert_int_equal(zerg_ws_describe(repo, "F", NULL, &info, &err), 0);
    assert_int_equal(info.exists, 1);
    assert_int_equal(info.nworktrees, 0);
    assert_true(ws_cleanup(1, 0, 0, NULL, NULL) > 0);
    refs = ZGIT(NULL, "for-each-ref", "--format=%(refname)");
    assert_null(strstr(refs, "zerg/F"));
    free(refs);
}

static void test_describe_and_monorepo(void **state)
{
    char project[PATH_MAX * 2];
    snprintf(project, sizeof project, "%s/sub/proj", repo);
    struct zerg_ws_opts o = opts("run1");
    o.project = project;
    struct zerg_workspace *w = zerg_ws_open(&o, &err);
    assert_non_null(w);
    char wt[PATH_MAX], cwd[PATH_MAX], want[PATH_MAX * 2];
    assert_int_equal(
        w->ops->worktree(w, 1, wt, sizeof wt, cwd, sizeof cwd, &err), 0);
    snprintf(want, sizeof want, "%s/sub/proj", wt);
    assert_string_equal(cwd, want);
    snprintf(want, sizeof want, "%s/p.txt", cwd);
    assert_true(exists(want));
    tu_write(wt, "dirty.txt", "x\n");
    struct zerg_ws_info info;
    assert_int_equal(zerg_ws_describe(project, "F", NULL, &info, &err), 0);
    assert_int_equal(info.exists, 1);
    assert_int_equal(info.commits, 0);
    assert_int_equal(info.nworktrees, 2);
    for (int i = 0; i < 2; i++)
        assert_int_equal(info.wt[i].dirty, info.wt[i].slot == 1);
    w->ops->free(w);
}

/* The number of lines of text equal to line. */
static int line_count(const char *text, const char *line)
{
    int n = 0;
    size_t len = strlen(line);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p)
        n += !strncmp(p, line, len) && (p[len] == '\n' || !p[len]);
    return n;
}

/* A repository an older zerg set up excluded all of .zerg/ and .gsd/,
 * so a task's outputs there never reached a commit: those lines go,
 * the user's stay, and only zerg's run files are excluded, once. */
static void test_excludes_migrated(void **state)
{
    char project[PATH_MAX * 2], path[PATH_MAX * 2];
    snprintf(project, sizeof project, "%s/sub/proj", repo);
    snprintf(path, sizeof path, "%s/info/exclude", G.common_dir);
    tu_write(G.common_dir, "info/exclude",
             "# git ls-files --others --exclude-from=.git/info/exclude\n"
             "*.swp\n/.zerg/\n/.zerg-worktrees/\n/.gsd/\n"
             "/sub/proj/.zerg/\n/sub/proj/.gsd/\n/.gsd/mine\n"
             "/other/.zerg/\n.zerg/\nbuild/");
    struct zerg_ws_opts o = opts("run1");
    o.project = project;
    for (int round = 0; round < 2; round++) {
        struct zerg_workspace *w = zerg_ws_open(&o, &err);
        if (!w)
            fail_msg("open: %s", err.msg);
        w->ops->free(w);
        char *ex = tu_read(path);
        static const char *const gone[] = {
            "/.zerg/", "/.gsd/", "/sub/proj/.zerg/", "/sub/proj/.gsd/"};
        static const char *const kept[] = {
            "# git ls-files --others --exclude-from=.git/info/exclude",
            "*.swp",
            "/.gsd/mine",
            "/other/.zerg/",
            ".zerg/",
            "build/"};
        static const char *const added[] = {
            "/.zerg/state/",           "/.zerg/logs/",
            "/.zerg/reports/",         "/.zerg/monitor.log",
            "/.zerg/monitor.jsonl",    "/.zerg-worktrees/",
            "/sub/proj/.zerg/state/",  "/sub/proj/.zerg/logs/",
            "/sub/proj/.zerg/reports/"};
        for (size_t i = 0; i < sizeof gone / sizeof *gone; i++)
            if (line_count(ex, gone[i]))
                fail_msg("%s is still excluded:\n%s", gone[i], ex);
        for (size_t i = 0; i < sizeof kept / sizeof *kept; i++)
            if (line_count(ex, kept[i]) != 1)
                fail_msg("the user's %s was not kept:\n%s", kept[i], ex);
        for (size_t i = 0; i < sizeof added / sizeof *added; i++)
            if (line_count(ex, added[i]) != 1)
                fail_msg("%s is not there once:\n%s", added[i], ex);
        free(ex);
    }
}

/* What a passing attempt's commit takes (DESIGN §18): its outputs under
 * .gsd/ and .zerg/, a declared file .gitignore ignores; never zerg's run
 * files, even staged by the task itself; undeclared ignored paths are
 * listed, not committed; a files.create never made is missing. */
static void test_commit_takes_outputs(void **state)
{
    struct zerg_workspace *w = open_ws("run1");
    char wt[PATH_MAX], tip[ZERG_GIT_OID_MAX], oid[ZERG_GIT_OID_MAX];
    char patch[PATH_MAX];
    assert_int_equal(w->ops->worktree(w, 0, wt, sizeof wt, NULL, 0, &err), 0);
    tip_of(w, tip);
    assert_int_equal(zerg_ws_attempt_prepare(&G, wt, tip, logs, "T1", 1, patch,
                                             sizeof patch, &err),
                     0);
    tu_write(wt, ".gitignore", "*.log\ncache/\n");
    tu_write(wt, ".gsd/specs/F/notes.md", "notes\n");
    tu_write(wt, ".zerg/wiki/page.md", "page\n");
    tu_write(wt, "out/run.log", "declared\n");
    tu_write(wt, "other.log", "not declared\n");
    tu_write(wt, "cache/a.bin", "x");
    tu_write(wt, ".zerg/state/F.json", "{}");
    tu_write(wt, ".zerg/logs/F/x.log", "log\n");
    free(ZGIT(wt, "add", "-f", ".zerg/logs/F/x.log"));
    static char *create[] = {"out/run.log", ".gsd/specs/F/notes.md",
                             "never/made.c", "out/"};
    const struct zerg_task t = {.id = "T1", .files_create = {create, 4}};
    struct zerg_path_list forced = {0}, ignored = {0}, missing = {0};
    struct zerg_ws_outputs outs = {
        .task = &t, .project_dir = wt, .forced = &forced, .ignored = &ignored};
    char *msg = zerg_ws_commit_message(0, "outputs", "T1", 1, "run1");
    assert_int_equal(zerg_ws_attempt_commit(&G, wt, tip, msg, &outs, oid, &err),
                     0);
    free(msg);
    char *files = ZGIT(NULL, "ls-tree", "-r", "--name-only", oid);
    assert_true(tu_contains(files, ".gsd/specs/F/notes.md\n"));
    assert_true(tu_contains(files, ".zerg/wiki/page.md\n"));
    assert_true(tu_contains(files, "out/run.log\n"));
    assert_null(strstr(files, "other.log"));
    assert_null(strstr(files, "cache/"));
    assert_null(strstr(files, ".zerg/state"));
    assert_null(strstr(files, ".zerg/logs"));
    free(files);
    assert_int_equal(forced.total, 1);
    assert_string_equal(zerg_path_list_next(&forced, NULL), "out/run.log");
    assert_int_equal(ignored.total, 2);
    const char *p = zerg_path_list_next(&ignored, NULL);
    assert_string_equal(p, "cache/");
    assert_string_equal(zerg_path_list_next(&ignored, p), "other.log");
    assert_int_equal(zerg_ws_outputs_missing(wt, &t, &missing), 1);
    assert_string_equal(zerg_path_list_next(&missing, NULL), "never/made.c");
    w->ops->free(w);
}

/* The shortcuts of a clean tree (one `git status` instead of the patch's
 * four processes before an attempt, and of the staging's four after it)
 * miss nothing: a staged-only leftover is still saved, an attempt that
 * made only an ignored file still reports it, one that committed by
 * itself still gets zerg's commit on top, one that changed nothing makes
 * no commit. */
static void test_clean_tree_shortcuts(void **state)
{
    struct zerg_workspace *w = open_ws("run1");
    char wt[PATH_MAX], tip[ZERG_GIT_OID_MAX], oid[ZERG_GIT_OID_MAX];
    char patch[PATH_MAX];
    assert_int_equal(w->ops->worktree(w, 0, wt, sizeof wt, NULL, 0, &err), 0);
    tip_of(w, tip);
    assert_int_equal(zerg_ws_attempt_prepare(&G, wt, tip, logs, "T1", 1, patch,
                                             sizeof patch, &err),
                     0);
    tu_write(wt, "staged.txt", "only in the index\n");
    free(ZGIT(wt, "add", "staged.txt"));
    tu_write(wt, "staged.txt", "x");
    free(ZGIT(wt, "checkout", "--", "staged.txt"));
    assert_int_equal(zerg_ws_attempt_prepare(&G, wt, tip, logs, "T1", 2, patch,
                                             sizeof patch, &err),
                     0);
    assert_true(patch[0] != '\0');
    char *text = tu_read(patch);
    assert_true(tu_contains(text, "+only in the index"));
    free(text);

    const struct zerg_task bare = {.id = "T1"};
    struct zerg_path_list ignored = {0};
    struct zerg_ws_outputs outs = {
        .task = &bare, .project_dir = wt, .ignored = &ignored};
    char *msg = zerg_ws_commit_message(0, "t", "T1", 2, "run1");
    assert_int_equal(zerg_ws_attempt_commit(&G, wt, tip, msg, &outs, oid, &err),
                     0);
    assert_string_equal(oid, ""); /* nothing changed: no commit */
    assert_int_equal(ignored.total, 0);

    char ex[PATH_MAX + 16];
    snprintf(ex, sizeof ex, "%s/info/exclude", G.common_dir);
    char *old = tu_read(ex), more[8192];
    snprintf(more, sizeof more, "%s*.tmp\n", old);
    free(old);
    tu_write(G.common_dir, "info/exclude", more);
    tu_write(wt, "made.tmp", "ignored output\n");
    assert_int_equal(zerg_ws_attempt_commit(&G, wt, tip, msg, &outs, oid, &err),
                     0);
    assert_int_equal(ignored.total, 1);
    assert_string_equal(zerg_path_list_next(&ignored, NULL), "made.tmp");

    tu_write(wt, "own.txt", "committed by the task\n");
    free(ZGIT(wt, "add", "own.txt"));
    free(ZGIT(wt, "commit", "-qm", "by the agent"));
    char *own = ZGIT(wt, "rev-parse", "HEAD");
    own[strcspn(own, "\n")] = '\0';
    assert_int_equal(zerg_ws_attempt_commit(&G, wt, tip, msg, &outs, oid, &err),
                     0);
    assert_true(oid[0] && strcmp(oid, own));
    char *parent;
    char spec[ZERG_GIT_OID_MAX + 4];
    snprintf(spec, sizeof spec, "%s^", oid);
    parent = ZGIT(NULL, "rev-parse", spec);
    assert_true(tu_contains(parent, own));
    char *body = ZGIT(NULL, "log", "-1", "--format=%B", oid);
    assert_true(tu_contains(body, "Task-ID: T1"));
    free(body), free(parent), free(own), free(msg);
    w->ops->free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_clean_tree_shortcuts, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_open_fresh, setup, teardown),
        cmocka_unit_test_setup_teardown(test_three_tasks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conflict_and_keep, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_compare_and_swap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refs_noted_and_checked_out, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_prepare_saves_leftovers, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_planted_commands, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_inputs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rename_old_integration, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_cleanup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipes_restart_on_planted_config,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_end_heals_slot_locks, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_merge_after_the_branch_moved,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_checked_out_in_a_linked_worktree,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_describe_and_monorepo, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_excludes_migrated, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_commit_takes_outputs, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
