/* test_ws_outputs.c - the shortcuts of a passing attempt's staging and
 * commit (src/git/ws_outputs.c, ws_worker.c, ws_heads.c) against real
 * git in temp dirs: the run files' unstaging spared only while the index
 * is the file the prepare left, the ignored paths listed once unless a
 * declared path is among them, HEAD read from the git dir's files and
 * the base's tree taken from the assignment only while HEAD is the base.
 * Each shortcut is checked against the case it must not take. */
#include "testutil.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "git/git_internal.h"
#include "git/ws_internal.h"
#include "zerg/err.h"
#include "zerg/git.h"
#include "zerg/graph.h"
#include "zerg/protocol.h"
#include "zerg/state.h"
#include "zerg/workspace.h"

static char tmp[PATH_MAX / 2], repo[PATH_MAX], logs[PATH_MAX];
static char wt[PATH_MAX], tip[ZERG_GIT_OID_MAX];
static struct zerg_git G;
static struct zerg_err err;
static struct zerg_workspace *W;
static const char *said_tree; /* the assignment's base_tree, NULL: none */

static int setup(void **state)
{
    snprintf(tmp, sizeof tmp, "%s", tu_mkdtemp());
    setenv("HOME", tmp, 1); /* no global config of whoever runs this */
    snprintf(repo, sizeof repo, "%s/repo", tmp);
    snprintf(logs, sizeof logs, "%s/logs", tmp);
    TU_GIT_REPO(repo, ".gitignore", "*.log\ncache/\n", "a.txt", "a\n");
    memset(&err, 0, sizeof err);
    said_tree = NULL;
    assert_int_equal(zerg_git_open(&G, repo, NULL, &err), 0);
    struct zerg_ws_opts o = {.project = repo,
                             .feature = "F",
                             .run_id = "r1",
                             .fresh = 1,
                             .nslots = 1};
    W = zerg_ws_open(&o, &err);
    if (!W)
        fail_msg("open: %s", err.msg);
    assert_int_equal(W->ops->worktree(W, 0, wt, sizeof wt, NULL, 0, &err), 0);
    assert_int_equal(W->ops->tip(W, tip, &err), 0);
    return 0;
}

static int teardown(void **state)
{
    W->ops->free(W);
    tu_rmtree(tmp);
    return 0;
}

static void prepare(int attempt, struct zerg_ws_prepared *p)
{
    if (zerg_ws_slot_prepare(&G, wt, NULL, tip, logs, "T1", attempt, p, &err))
        fail_msg("prepare: %s", err.msg);
}

/* The names in commit's tree, one a line. */
static char *names(const char *commit)
{
    const char *args[] = {"ls-tree", "-r", "--name-only", commit, NULL};
    struct zerg_git_call call = {.dir = wt};
    char *out = NULL;
    if (zerg_git_run(&G, &call, args, &out, &err))
        fail_msg("ls-tree: %s", err.msg);
    return out;
}

static void commit(const struct zerg_task *t, struct zerg_path_list *forced,
                   struct zerg_path_list *ignored,
                   const struct zerg_ws_stamp *index,
                   char oid[ZERG_GIT_OID_MAX])
{
    struct zerg_ws_outputs outs = {.task = t,
                                   .project_dir = wt,
                                   .forced = forced,
                                   .ignored = ignored,
                                   .index = index,
                                   .base_tree = said_tree};
    char *msg = zerg_ws_commit_message(0, "t", "T1", 1, "r1");
    if (zerg_ws_attempt_commit(&G, wt, tip, msg, &outs, oid, &err))
        fail_msg("commit: %s", err.msg);
    free(msg);
}

/* A run file the task staged itself is unstaged even with the prepare's
 * stamp at hand (its `git add` wrote the index again); a task that staged
 * nothing leaves the index as the prepare stamped it. */
static void test_unstage_unless_index_untouched(void **state)
{
    struct zerg_ws_prepared p = {0};
    char oid[ZERG_GIT_OID_MAX];
    static char *create[] = {"out.txt"};
    const struct zerg_task t = {.id = "T1", .files_create = {create, 1}};
    prepare(1, &p);
    assert_true(p.index.set);
    tu_write(wt, "out.txt", "made\n");
    tu_write(wt, ".zerg/logs/F/x.log", "log\n");
    TU_GIT(wt, "add", "-f", ".zerg/logs/F/x.log");
    commit(&t, NULL, NULL, &p.index, oid);
    char *files = names(oid);
    assert_true(tu_contains(files, "out.txt\n"));
    assert_null(strstr(files, ".zerg/logs"));
    free(files);

    prepare(2, &p);
    char gitdir[PATH_MAX];
    struct zerg_ws_stamp now;
    assert_int_equal(ws_git_dir(&G, wt, gitdir, sizeof gitdir, &err), 0);
    ws_stamp_index(gitdir, &now);
    assert_true(ws_stamp_same(&p.index, &now));
    tu_write(wt, "out.txt", "made again\n");
    commit(&t, NULL, NULL, &p.index, oid);
    files = names(oid);
    assert_true(tu_contains(files, "out.txt\n"));
    free(files);
}

/* An index written over in place, same size, is not the file stamped. */
static void test_stamp_sees_a_rewrite(void **state)
{
    struct zerg_ws_prepared p = {0};
    char gitdir[PATH_MAX], path[PATH_MAX + 8], byte;
    struct zerg_ws_stamp now;
    prepare(1, &p);
    assert_int_equal(ws_git_dir(&G, wt, gitdir, sizeof gitdir, &err), 0);
    snprintf(path, sizeof path, "%s/index", gitdir);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, &byte, 1, 0), 1);
    assert_int_equal(pwrite(fd, &byte, 1, 0), 1);
    close(fd);
    ws_stamp_index(gitdir, &now);
    assert_true(now.set);
    assert_false(ws_stamp_same(&p.index, &now));
    struct zerg_ws_stamp unset = {0};
    assert_false(ws_stamp_same(&unset, &unset));
}

/* Declared paths none of which is ignored: one listing reports the
 * undeclared ignored paths and nothing is forced. */
static void test_ignored_listed_once(void **state)
{
    struct zerg_ws_prepared p = {0};
    char oid[ZERG_GIT_OID_MAX];
    static char *create[] = {"src/new.c"};
    const struct zerg_task t = {.id = "T1", .files_create = {create, 1}};
    struct zerg_path_list forced = {0}, ignored = {0};
    prepare(1, &p);
    tu_write(wt, "src/new.c", "int x;\n");
    tu_write(wt, "build.log", "log\n");
    tu_write(wt, "cache/a.bin", "x");
    commit(&t, &forced, &ignored, &p.index, oid);
    char *files = names(oid);
    assert_true(tu_contains(files, "src/new.c\n"));
    assert_null(strstr(files, "build.log"));
    assert_null(strstr(files, "cache/"));
    free(files);
    assert_int_equal(forced.total, 0);
    assert_int_equal(ignored.total, 2);
    const char *q = zerg_path_list_next(&ignored, NULL);
    assert_string_equal(q, "build.log");
    assert_string_equal(zerg_path_list_next(&ignored, q), "cache/");

    /* A declared file in an ignored directory is forced in, and the
     * listing taken again says what is left beside it. */
    static char *inside[] = {"cache/b.bin"};
    const struct zerg_task in = {.id = "T1", .files_create = {inside, 1}};
    struct zerg_path_list forced2 = {0}, ignored2 = {0};
    prepare(2, &p);
    tu_write(wt, "cache/b.bin", "y");
    tu_write(wt, "cache/c.bin", "z");
    commit(&in, &forced2, &ignored2, &p.index, oid);
    files = names(oid);
    assert_true(tu_contains(files, "cache/b.bin\n"));
    assert_null(strstr(files, "cache/c.bin"));
    free(files);
    assert_int_equal(forced2.total, 1);
    assert_string_equal(zerg_path_list_next(&forced2, NULL), "cache/b.bin");
    assert_int_equal(ignored2.total, 1); /* what attempt 1 left is older */
    assert_string_equal(zerg_path_list_next(&ignored2, NULL), "cache/c.bin");
}

/* out = what `git rev-parse rev` says in the worktree. */
static void rev(const char *spec, char out[ZERG_GIT_OID_MAX])
{
    const char *args[] = {"rev-parse", spec, NULL};
    struct zerg_git_call call = {.dir = wt};
    char *text = NULL;
    if (zerg_git_run(&G, &call, args, &text, &err))
        fail_msg("rev-parse %s: %s", spec, err.msg);
    snprintf(out, ZERG_GIT_OID_MAX, "%.*s", (int)strcspn(text, "\n"), text);
    free(text);
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* The worker branch's loose ref, as a path. */
static void ref_path(char *out, size_t n)
{
    char branch[PATH_MAX];
    assert_int_equal(zerg_ws_worker_branch(branch, sizeof branch, "F", 0), 0);
    snprintf(out, n, "%s/refs/heads/%s", G.common_dir, branch);
}

/* HEAD from the files: the loose ref git reads first, a detached HEAD;
 * anything not plain (packed, a link in the file or in a directory on
 * the way, a FIFO, text after the id, a per-worktree ref) is git's to
 * say, and reading it never blocks. */
static void test_head_read_from_files(void **state)
{
    struct zerg_ws_prepared p = {0};
    char gitdir[PATH_MAX], ref[PATH_MAX], path[2 * PATH_MAX],
        oid[ZERG_GIT_OID_MAX];
    prepare(1, &p);
    assert_int_equal(ws_git_dir(&G, wt, gitdir, sizeof gitdir, &err), 0);
    ref_path(ref, sizeof ref);
    assert_int_equal(ws_head_commit(gitdir, G.common_dir, oid), 0);
    assert_string_equal(oid, tip);

    put(ref, "0123456789abcdef0123456789abcdef01234567 x\n");
    assert_int_equal(ws_head_commit(gitdir, G.common_dir, oid), -1);
    assert_int_equal(unlink(ref), 0);
    snprintf(path, sizeof path, "%s.elsewhere", ref);
    put(path, tip);
    assert_int_equal(symlink(path, ref), 0);
    assert_int_equal(ws_head_commit(gitdir, G.common_dir, oid), -1);
    assert_int_equal(unlink(ref), 0);
    assert_int_equal(mkfifo(ref, 0600), 0);
    assert_int_equal(ws_head_commit(gitdir, G.common_dir, oid), -1);
    assert_int_equal(unlink(ref), 0);

    /* A directory on the way that is a link. */
    char dir[PATH_MAX + 32], moved[PATH_MAX + 48];
    snprintf(dir, sizeof dir, "%s/refs/heads/zerg", G.common_dir);
    snprintf(moved, sizeof moved, "%s.real", dir);
    put(ref, tip);
    assert_int_equal(rename(dir, moved), 0);
    assert_int_equal(symlink(moved, dir), 0);
    assert_int_equal(ws_head_commit(gitdir, G.common_dir, oid), -1);
    assert_int_equal(unlink(dir), 0);
    assert_int_equal(rename(moved, dir), 0);

    /* Packed: the loose file gone, git says. */
    TU_GIT(repo, "pack-refs", "--all");
    assert_int_equal(access(ref, F_OK), -1);
    assert_int_equal(ws_head_commit(gitdir, G.common_dir, oid), -1);

    /* HEAD as git would not read it, or would read elsewhere. */
    char branch[PATH_MAX], text[PATH_MAX + 64];
    assert_int_equal(zerg_ws_worker_branch(branch, sizeof branch, "F", 0), 0);
    snprintf(text, sizeof text, "%s/refs/heads/zerg", G.common_dir);
    mkdir(text, 0755); /* pack-refs took the directories with the files */
    snprintf(text, sizeof text, "%s/refs/heads/zerg/F", G.common_dir);
    mkdir(text, 0755);
    put(ref, tip); /* a loose ref again */
    snprintf(path, sizeof path, "%s/HEAD", gitdir);
    snprintf(text, sizeof text, "ref: refs/heads/%s\n", branch);
    put(path, text);
    assert_int_equal(ws_head_commit(gitdir, G.common_dir, oid), 0);
    snprintf(text, sizeof text, "ref: refs/heads/%s junk\n", branch);
    put(path, text);
    assert_int_equal(ws_head_commit(gitdir, G.common_dir, oid), -1);
    snprintf(text, sizeof text, "ref: refs/heads/%s\ngarbage\n", branch);
    put(path, text);
    assert_int_equal(ws_head_commit(gitdir, G.common_dir, oid), -1);
    snprintf(dir, sizeof dir, "%s/reftable", G.common_dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(text, sizeof text, "ref: refs/heads/%s\n", branch);
    put(path, text);
    assert_int_equal(ws_head_commit(gitdir, G.common_dir, oid), -1);
    assert_int_equal(rmdir(dir), 0);
    snprintf(dir, sizeof dir, "%s/refs/worktree", G.common_dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(dir, sizeof dir, "%s/refs/worktree/x", G.common_dir);
    put(dir, tip);
    put(path, "ref: refs/worktree/x\n");
    assert_int_equal(ws_head_commit(gitdir, G.common_dir, oid), -1);
    snprintf(moved, sizeof moved, "%s\n", tip);
    put(path, moved);
    assert_int_equal(ws_head_commit(gitdir, G.common_dir, oid), 0);
    assert_string_equal(oid, tip);
}

/* Attempt n whose agent commits file itself: zerg's commit goes on top of
 * the agent's, whatever the assignment said of the base's tree. */
static void agent_commit_kept(int n, const struct zerg_task *t,
                              const char *file)
{
    struct zerg_ws_prepared p = {0};
    char oid[ZERG_GIT_OID_MAX], parent[ZERG_GIT_OID_MAX];
    char got[ZERG_GIT_OID_MAX], spec[ZERG_GIT_OID_MAX + 8];
    prepare(n, &p);
    tu_write(wt, file, "by the agent\n");
    TU_GIT(wt, "add", file);
    TU_GIT(wt, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm",
           "agent");
    rev("HEAD", parent);
    commit(t, NULL, NULL, &p.index, oid);
    assert_true(oid[0]);
    assert_string_not_equal(oid, parent);
    snprintf(spec, sizeof spec, "%s^", oid);
    rev(spec, got);
    assert_string_equal(got, parent);
}

/* The assignment's tree is what the staged tree is compared with while
 * HEAD is the base: the same tree, no commit; another, a commit (so no
 * git was asked).  Once the agent committed, HEAD is asked of git and the
 * agent's commit is kept under zerg's. */
static void test_base_tree_from_the_assignment(void **state)
{
    struct zerg_ws_prepared p = {0};
    char oid[ZERG_GIT_OID_MAX], tree[ZERG_GIT_OID_MAX], other[ZERG_GIT_OID_MAX];
    char spec[ZERG_GIT_OID_MAX + 8];
    static char *create[] = {"out.txt"};
    const struct zerg_task t = {.id = "T1", .files_create = {create, 1}};
    snprintf(spec, sizeof spec, "%s^{tree}", tip);
    rev(spec, tree);
    said_tree = tree;
    prepare(1, &p);
    tu_write(wt, "out.txt", "made\n");
    commit(&t, NULL, NULL, &p.index, oid);
    assert_true(oid[0]);
    snprintf(spec, sizeof spec, "%s^{tree}", oid);
    rev(spec, other);

    prepare(2, &p);
    commit(&t, NULL, NULL, &p.index, oid);
    assert_string_equal(oid, ""); /* nothing changed */
    said_tree = other;
    prepare(3, &p);
    commit(&t, NULL, NULL, &p.index, oid);
    assert_true(oid[0]); /* compared with the tree said, not asked */

    said_tree = tree;
    agent_commit_kept(4, &t, "agent.txt");
    /* A task that declares nothing and leaves the tree clean: its agent's
     * commit is found by git too. */
    const struct zerg_task quiet = {.id = "T1"};
    agent_commit_kept(5, &quiet, "agent2.txt");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_unstage_unless_index_untouched,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_stamp_sees_a_rewrite, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_ignored_listed_once, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_head_read_from_files, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_base_tree_from_the_assignment,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
