/* test_git_scan.c - the cached configuration scan (src/git/git_scan.c):
 * a scan is reused only while every file that could change it is as it
 * was (the repository's config, an include target that appears, an
 * included file changed with the same size and mtime, HEAD for onbranch:,
 * the gitfile and commondir, config.worktree, the user's files, HOME),
 * what the model cannot follow is never cached, a file changed just
 * before the scan is not trusted, and with real git a config planted
 * between two calls of one process is still answered. */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "git/git_internal.h"
#include "zerg/err.h"
#include "zerg/git.h"

static char tmp[PATH_MAX], repo[PATH_MAX + 8], gitdir[PATH_MAX + 16],
    sys_cfg[PATH_MAX + 16], home[PATH_MAX + 8], old_home[PATH_MAX];
static int had_home;

static int64_t far_future(void)
{
    return INT64_MAX / 2; /* every file settled long ago */
}

/* stat without ctime: only the content can tell a same-size,
 * same-mtime rewrite. */
static int stat_no_ctime(const char *path, struct stat *st)
{
    int rc = stat(path, st);
    if (!rc)
        st->st_ctim.tv_sec = 0, st->st_ctim.tv_nsec = 0;
    return rc;
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmp, sizeof tmp, "%s", tu_mkdtemp());
    snprintf(repo, sizeof repo, "%s/repo", tmp);
    snprintf(gitdir, sizeof gitdir, "%s/.git", repo);
    snprintf(sys_cfg, sizeof sys_cfg, "%s/etc/gitconfig", tmp);
    snprintf(home, sizeof home, "%s/home", tmp);
    tu_write(repo, ".git/HEAD", "ref: refs/heads/main\n");
    tu_write(repo, ".git/config", "[core]\n\tbare = false\n");
    tu_write(repo, ".git/objects/.keep", "");
    tu_write(repo, ".git/refs/.keep", "");
    tu_write(home, ".keep", "");
    const char *h = getenv("HOME");
    had_home = h != NULL;
    snprintf(old_home, sizeof old_home, "%s", h ? h : "");
    setenv("HOME", home, 1);
    unsetenv("XDG_CONFIG_HOME");
    git_scan_hooks.now_ns = far_future;
    git_scan_hooks.stat = stat;
    git_scan_forget();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    git_scan_forget();
    if (had_home)
        setenv("HOME", old_home, 1);
    tu_rmtree(tmp);
    return 0;
}

#define L(s) s, sizeof s - 1

/* The local config with an include of extra.cfg (not there yet) and an
 * onbranch: include of ~/branch.cfg. */
static const char RAW[] = "local\0file:.git/config\0core.bare\nfalse\0"
                          "local\0file:.git/config\0include.path\nextra.cfg\0"
                          "local\0file:.git/config\0"
                          "includeif.onbranch:main.path\n~/branch.cfg\0";

static int store(const char *raw, size_t len)
{
    return git_scan_store(repo, sys_cfg, raw, len, far_future());
}

static int lookup(void)
{
    char *list = NULL;
    size_t len = 0;
    int rc = git_scan_lookup(repo, &list, &len);
    free(list);
    return rc;
}

static void test_kept_without_origins(void **state)
{
    (void)state;
    assert_int_equal(store(L(RAW)), 1);
    char *list = NULL;
    size_t len = 0;
    assert_int_equal(git_scan_lookup(repo, &list, &len), 1);
    static const char want[] = "local\0core.bare\nfalse\0"
                               "local\0include.path\nextra.cfg\0"
                               "local\0includeif.onbranch:main.path\n"
                               "~/branch.cfg\0";
    assert_int_equal(len, sizeof want - 1);
    assert_memory_equal(list, want, len);
    free(list);
    assert_int_equal(lookup(), 1);
}

static void test_config_changed(void **state)
{
    (void)state;
    assert_int_equal(store(L(RAW)), 1);
    tu_write(repo, ".git/config",
             "[core]\n\tbare = false\n\tfsmonitor = evil\n");
    assert_int_equal(lookup(), 0);
    assert_int_equal(lookup(), 0); /* the entry is gone, not revived */
}

static void test_new_include_target(void **state)
{
    (void)state;
    assert_int_equal(store(L(RAW)), 1);
    tu_write(repo, ".git/extra.cfg", "[filter \"e\"]\n\tclean = evil\n");
    assert_int_equal(lookup(), 0);
    /* and the onbranch: target under HOME, which does not match yet */
    assert_int_equal(store(L(RAW)), 1);
    tu_write(home, "branch.cfg", "[core]\n\tpager = evil\n");
    assert_int_equal(lookup(), 0);
}

/* Rewrites path with text of the same size, its mtime put back. */
static void rewrite_keep_mtime(const char *dir, const char *rel,
                               const char *text)
{
    char path[PATH_MAX * 2];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal((size_t)st.st_size, strlen(text));
    tu_write(dir, rel, text);
    struct timespec times[2] = {st.st_atim, st.st_mtim};
    assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
    struct stat now;
    assert_int_equal(stat(path, &now), 0);
    assert_int_equal(now.st_size, st.st_size);
    assert_int_equal(now.st_mtim.tv_nsec, st.st_mtim.tv_nsec);
    assert_int_equal(now.st_mtim.tv_sec, st.st_mtim.tv_sec);
}

static void test_included_same_size_and_mtime(void **state)
{
    (void)state;
    git_scan_hooks.stat = stat_no_ctime;
    tu_write(repo, ".git/extra.cfg", "[x]\n\tclean = aaaa\n");
    static const char raw[] = "local\0file:.git/config\0include.path\n"
                              "extra.cfg\0"
                              "local\0file:.git/extra.cfg\0x.clean\naaaa\0";
    assert_int_equal(store(L(raw)), 1);
    assert_int_equal(lookup(), 1);
    rewrite_keep_mtime(repo, ".git/extra.cfg", "[x]\n\tclean = evil\n");
    assert_int_equal(lookup(), 0);
}

static void test_head_and_gitdir(void **state)
{
    (void)state;
    assert_int_equal(store(L(RAW)), 1);
    tu_write(repo, ".git/HEAD", "ref: refs/heads/other\n");
    assert_int_equal(lookup(), 0);
    /* .git becomes a gitfile naming another git dir */
    assert_int_equal(store(L(RAW)), 1);
    char moved[PATH_MAX * 2], text[PATH_MAX * 3];
    snprintf(moved, sizeof moved, "%s/moved.git", tmp);
    assert_int_equal(rename(gitdir, moved), 0);
    snprintf(text, sizeof text, "gitdir: %s\n", moved);
    tu_write(repo, ".git", text);
    assert_int_equal(lookup(), 0);
}

/* A linked worktree: a gitfile, a commondir, config.worktree. */
static void test_linked_worktree(void **state)
{
    (void)state;
    char wt[PATH_MAX * 2], text[PATH_MAX * 3];
    snprintf(wt, sizeof wt, "%s/wt", tmp);
    snprintf(text, sizeof text, "gitdir: %s/worktrees/w\n", gitdir);
    tu_write(wt, ".git", text);
    tu_write(gitdir, "worktrees/w/HEAD", "ref: refs/heads/w\n");
    tu_write(gitdir, "worktrees/w/commondir", "../..\n");
    char raw[PATH_MAX * 2];
    int n = snprintf(raw, sizeof raw, "local%cfile:%s/config%ccore.bare\nfalse",
                     0, gitdir, 0);
    char *list = NULL;
    size_t len = 0;
    assert_int_equal(
        git_scan_store(wt, sys_cfg, raw, (size_t)n + 1, far_future()), 1);
    assert_int_equal(git_scan_lookup(wt, &list, &len), 1);
    free(list);
    tu_write(gitdir, "worktrees/w/config.worktree", "[core]\n\tpager = x\n");
    assert_int_equal(git_scan_lookup(wt, &list, &len), 0);
    assert_int_equal(
        git_scan_store(wt, sys_cfg, raw, (size_t)n + 1, far_future()), 1);
    tu_write(gitdir, "worktrees/w/commondir", "../../..\n");
    assert_int_equal(git_scan_lookup(wt, &list, &len), 0);
    tu_write(gitdir, "worktrees/w/commondir", "../..\n");
    assert_int_equal(
        git_scan_store(wt, sys_cfg, raw, (size_t)n + 1, far_future()), 1);
    tu_write(wt, ".git", "gitdir: /elsewhere\n");
    assert_int_equal(git_scan_lookup(wt, &list, &len), 0);
}

static void test_user_files_and_home(void **state)
{
    (void)state;
    assert_int_equal(store(L(RAW)), 1);
    tu_write(home, ".gitconfig", "[core]\n\tpager = x\n");
    assert_int_equal(lookup(), 0);
    assert_int_equal(store(L(RAW)), 1);
    tu_write(home, ".config/git/config", "[core]\n\tpager = x\n");
    assert_int_equal(lookup(), 0);
    assert_int_equal(store(L(RAW)), 1);
    tu_write(tmp, "etc/gitconfig", "[core]\n\tpager = x\n");
    assert_int_equal(lookup(), 0);
    assert_int_equal(store(L(RAW)), 1);
    setenv("HOME", tmp, 1);
    assert_int_equal(lookup(), 0);
    setenv("HOME", home, 1);
    assert_int_equal(store(L(RAW)), 1);
    setenv("XDG_CONFIG_HOME", tmp, 1);
    assert_int_equal(lookup(), 0);
    unsetenv("XDG_CONFIG_HOME");
}

/* What the model does not follow is scanned before every call. */
static void test_never_cached(void **state)
{
    (void)state;
    static const char tilde_user[] =
        "local\0file:.git/config\0include.path\n~root/x.cfg\0";
    static const char prefix[] =
        "local\0file:.git/config\0include.path\n%(prefix)/x.cfg\0";
    static const char worktree[] =
        "local\0file:.git/config\0core.worktree\n/elsewhere\0";
    static const char not_file[] = "local\0file:.git/config\0core.bare\nfalse\0"
                                   "command\0command line:\0core.pager\nx\0";
    static const char other_first[] =
        "local\0file:/etc/passwd\0core.bare\nfalse\0";
    static const char no_local[] = "global\0file:/etc/passwd\0a.b\nc\0";
    static const char cut[] = "local\0file:.git/config";
    assert_int_equal(store(L(tilde_user)), 0);
    assert_int_equal(store(L(prefix)), 0);
    assert_int_equal(store(L(worktree)), 0);
    assert_int_equal(store(L(not_file)), 0);
    assert_int_equal(store(L(other_first)), 0);
    assert_int_equal(store(L(no_local)), 0);
    assert_int_equal(store(L(cut)), 0);
    assert_int_equal(git_scan_store(repo, "", L(RAW), far_future()), 0);
    assert_int_equal(git_scan_store("repo", sys_cfg, L(RAW), far_future()), 0);
    setenv("HOME", "home", 1); /* relative: git would take it after -C */
    assert_int_equal(store(L(RAW)), 0);
    setenv("HOME", home, 1);
    assert_int_equal(lookup(), 0);
    /* a failed store drops what was kept for the directory */
    assert_int_equal(store(L(RAW)), 1);
    assert_int_equal(store(L(worktree)), 0);
    assert_int_equal(lookup(), 0);
}

/* ctime and mtime in whole seconds, as a coarse file system keeps them. */
static int stat_seconds(const char *path, struct stat *st)
{
    int rc = stat(path, st);
    if (!rc)
        st->st_ctim.tv_nsec = 0, st->st_mtim.tv_nsec = 0;
    return rc;
}

static int64_t changed_at(void)
{
    struct stat st;
    char cfg[PATH_MAX * 2];
    snprintf(cfg, sizeof cfg, "%s/config", gitdir);
    assert_int_equal(git_scan_hooks.stat(cfg, &st), 0);
    int64_t c = (int64_t)st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec;
    int64_t m = (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    return c > m ? c : m;
}

static void test_fresh_file_not_trusted(void **state)
{
    (void)state;
    int64_t t = changed_at();
    if (t % 1000000000LL == 0)
        fail_msg("the test file system keeps whole seconds only");
    /* a scan that began within 100 ms of the change is used once only */
    assert_int_equal(git_scan_store(repo, sys_cfg, L(RAW), t + 50000000LL), 0);
    assert_int_equal(git_scan_store(repo, sys_cfg, L(RAW), t + 150000000LL), 1);
    /* on a file system of whole seconds, within 3 s */
    git_scan_hooks.stat = stat_seconds;
    t = changed_at();
    assert_int_equal(git_scan_store(repo, sys_cfg, L(RAW), t + 2500000000LL),
                     0);
    assert_int_equal(git_scan_store(repo, sys_cfg, L(RAW), t + 3100000000LL),
                     1);
}

/* ---- real git --------------------------------------------------------- */

static char marks[PATH_MAX + 16], evil[PATH_MAX + 16];

static void real_repo(struct zerg_git *g)
{
    struct zerg_err err = {0};
    tu_rmtree(repo);
    mkdir(repo, 0755);
    TU_GIT(repo, "init", "-q", "-b", "main");
    TU_GIT(repo, "config", "include.path", "planted.cfg");
    TU_GIT(repo, "config", "--add", "include.path", "same.cfg");
    tu_write(repo, ".gitattributes", "* filter=evil\n");
    tu_write(repo, "a.txt", "a\n");
    TU_GIT(repo, "add", "-A");
    TU_GIT(repo, "commit", "-qm", "base");
    snprintf(marks, sizeof marks, "%s/marks", tmp);
    mkdir(marks, 0755);
    snprintf(evil, sizeof evil, "%s/evil.sh", tmp);
    char text[PATH_MAX * 3];
    snprintf(text, sizeof text, "#!/bin/sh\ntouch \"%s/$1\"\nexec cat\n",
             marks);
    tu_write(tmp, "evil.sh", text);
    chmod(evil, 0755);
    assert_int_equal(zerg_git_open(g, repo, NULL, &err), 0);
}

/* `git add -A` of a changed a.txt through zerg: a planted clean filter
 * would leave a mark. */
static void add_all(const struct zerg_git *g, const char *content)
{
    struct zerg_err err = {0};
    tu_write(repo, "a.txt", content);
    const char *args[] = {"add", "-A", NULL};
    struct zerg_git_call call = {.dir = repo};
    assert_int_equal(zerg_git_run(g, &call, args, NULL, &err), 0);
}

static void test_planted_between_calls(void **state)
{
    (void)state;
    struct zerg_git g;
    git_scan_hooks.stat = stat_no_ctime;
    real_repo(&g);
    char text[PATH_MAX * 3];
    snprintf(text, sizeof text, "[filter \"evil\"]\n\tclean = %s clean\n",
             evil);
    size_t evil_len = strlen(text);
    char benign[PATH_MAX * 3];
    snprintf(benign, sizeof benign, "[x]\n\ty = %0*d\n", (int)evil_len - 10, 0);
    assert_int_equal(strlen(benign), evil_len);
    tu_write(repo, ".git/same.cfg", benign);
    add_all(&g, "b\n");
    unsigned long hits = git_scan_stats.hits;
    add_all(&g, "c\n");
    assert_true(git_scan_stats.hits > hits); /* the cache is in use */
    /* a new include target between two calls */
    tu_write(repo, ".git/planted.cfg", text);
    add_all(&g, "d\n");
    assert_int_equal(tu_count_entries(marks), 0);
    char planted[PATH_MAX * 2];
    snprintf(planted, sizeof planted, "%s/.git/planted.cfg", repo);
    assert_int_equal(unlink(planted), 0);
    add_all(&g, "e\n");
    add_all(&g, "f\n");
    /* an included file changed with the same size and mtime */
    rewrite_keep_mtime(repo, ".git/same.cfg", text);
    add_all(&g, "g\n");
    assert_int_equal(tu_count_entries(marks), 0);
    /* the plant is live without zerg's overrides: the test can fail */
    tu_write(repo, "a.txt", "h\n");
    TU_GIT(repo, "add", "-A");
    assert_true(tu_count_entries(marks) > 0);
}

/* rev-parse --show-toplevel through zerg, as the slot checks ask it. */
static void toplevel(const struct zerg_git *g, int flags, char *buf, size_t n)
{
    const char *args[] = {"rev-parse", "--show-toplevel", NULL};
    struct zerg_err err = {0};
    assert_int_equal(
        git_line_ex(g, repo, flags | GIT_RUN_NO_WORKTREE, args, buf, n, &err),
        0);
}

/* A layout query is answered from the entry while its scan is valid,
 * and runs again (with the new answer) once a file changed. */
static void test_layout_query(void **state)
{
    (void)state;
    struct zerg_git g;
    real_repo(&g);
    char a[PATH_MAX], b[PATH_MAX], real[PATH_MAX];
    toplevel(&g, GIT_RUN_LAYOUT, a, sizeof a);
    unsigned long hits = git_scan_stats.query_hits;
    toplevel(&g, GIT_RUN_LAYOUT, b, sizeof b);
    assert_string_equal(a, b);
    assert_int_equal(git_scan_stats.query_hits, hits + 1);
    /* without the flag git runs */
    toplevel(&g, 0, b, sizeof b);
    assert_int_equal(git_scan_stats.query_hits, hits + 1);
    /* after a change git runs, and answers the new place */
    TU_GIT(repo, "config", "core.worktree", tmp);
    toplevel(&g, GIT_RUN_LAYOUT, b, sizeof b);
    assert_int_equal(git_scan_stats.query_hits, hits + 1);
    assert_non_null(realpath(tmp, real));
    assert_string_equal(b, real);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kept_without_origins, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_config_changed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_include_target, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_included_same_size_and_mtime,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_head_and_gitdir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_linked_worktree, setup, teardown),
        cmocka_unit_test_setup_teardown(test_user_files_and_home, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_never_cached, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fresh_file_not_trusted, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_planted_between_calls, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_layout_query, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
