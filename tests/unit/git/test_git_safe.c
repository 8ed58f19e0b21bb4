/* test_git_safe.c - the -c overrides for a configuration listing
 * (src/git/git_safe.c): every key that names a program is answered, the
 * fixed ones are always there, nothing is doubled, a buffer too small
 * is -ENOSPC, not a silent cut, and the user's own filter drivers (global
 * and system scope) are kept while the repository's are pinned. */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "zerg/git.h"

#define MAX_ARGS 512
static const char *args[MAX_ARGS];
static char strs[65536];

/* A `git config --null --list` listing: "key\nvalue\0" records. */
static const char LISTING[] = "user.name\nSomeone\0"
                              "core.fsmonitor\ntouch /tmp/m\0"
                              "core.hookspath\n/evil/hooks\0"
                              "include.path\n/tmp/inc.cfg\0"
                              "core.fsmonitor\ntouch /tmp/from-include\0"
                              "filter.Evil.clean\ntouch /tmp/m; cat\0"
                              "filter.Evil.smudge\ncat\0"
                              "filter.lfs.process\ngit-lfs filter-process\0"
                              "merge.evil.driver\ntouch /tmp/m\0"
                              "merge.evil.name\nan evil driver\0"
                              "diff.evil.textconv\ntouch /tmp/m; cat\0"
                              "diff.a.b.command\nrun-me\0"
                              "pager.log\nless -R\0"
                              "credential.https://x.example.helper\nstore\0"
                              "protocol.file.allow\nalways\0"
                              "core.bare\0";

static int run(const char *list, size_t len)
{
    memset(args, 0, sizeof args);
    return zerg_git_safe_overrides(list, len, "/zerg/hooks", args, MAX_ARGS,
                                   strs, sizeof strs);
}

/* Index of the value "key=value" in args, -1 when absent; counts copies. */
static int find(int n, const char *kv, int *copies)
{
    int at = -1;
    *copies = 0;
    for (int i = 1; i < n; i += 2) {
        assert_string_equal(args[i - 1], "-c");
        if (!strcmp(args[i], kv)) {
            at = i;
            (*copies)++;
        }
    }
    return at;
}

static void want(int n, const char *kv)
{
    int copies;
    if (find(n, kv, &copies) < 0)
        fail_msg("missing override %s", kv);
    assert_int_equal(copies, 1);
}

static void test_listing_answered(void **state)
{
    int n = run(LISTING, sizeof LISTING - 1);
    assert_true(n > 0);
    assert_int_equal(n % 2, 0);
    want(n, "core.fsmonitor=false");
    want(n, "core.hooksPath=/zerg/hooks");
    want(n, "filter.Evil.clean=");
    want(n, "filter.Evil.smudge=");
    /* process is set only when the listing has one: any value of it,
     * "" too, makes git skip clean and smudge. */
    int none;
    assert_int_equal(find(n, "filter.Evil.process=", &none), -1);
    want(n, "filter.Evil.required=false");
    want(n, "filter.lfs.clean=");
    want(n, "filter.lfs.process=");
    want(n, "merge.evil.driver=git merge-file --marker-size=%L %A %O %B");
    want(n, "diff.evil.textconv=");
    want(n, "diff.a.b.command=");
    want(n, "pager.log=false");
    want(n, "credential.https://x.example.helper=");
    want(n, "protocol.file.allow=never");
    want(n, "credential.helper=");
    want(n, "core.editor=:");
    want(n, "core.pager=cat");
    want(n, "log.showSignature=false");
    /* Keys that run nothing get nothing. */
    int copies;
    assert_int_equal(find(n, "user.name=", &copies), -1);
    for (int i = 1; i < n; i += 2) {
        assert_false(strncmp(args[i], "include.", 8) == 0);
        assert_false(strncmp(args[i], "core.bare", 9) == 0);
        assert_false(strncmp(args[i], "merge.evil.name", 15) == 0);
    }
}

static void test_fixed_without_config(void **state)
{
    int n = run(NULL, 0);
    assert_true(n >= 40);
    want(n, "core.fsmonitor=false");
    want(n, "core.hooksPath=/zerg/hooks");
    want(n, "submodule.recurse=false");
    want(n, "protocol.allow=never");
    int n2 =
        zerg_git_safe_overrides("", 0, NULL, args, MAX_ARGS, strs, sizeof strs);
    assert_int_equal(n2, n);
    want(n2, "core.hooksPath=/dev/null");
}

static void test_enospc(void **state)
{
    char small[64];
    assert_int_equal(zerg_git_safe_overrides(LISTING, sizeof LISTING - 1, "/h",
                                             args, MAX_ARGS, small,
                                             sizeof small),
                     -ENOSPC);
    assert_int_equal(zerg_git_safe_overrides(LISTING, sizeof LISTING - 1, "/h",
                                             args, 10, strs, sizeof strs),
                     -ENOSPC);
    /* Exactly enough for the fixed ones but not the listing's. */
    int fixed = run(NULL, 0);
    assert_int_equal(zerg_git_safe_overrides(LISTING, sizeof LISTING - 1,
                                             "/zerg/hooks", args, (size_t)fixed,
                                             strs, sizeof strs),
                     -ENOSPC);
}

static void test_unanswerable_key(void **state)
{
    static const char bad[] = "filter.a=b.clean\ntouch /tmp/m\0";
    assert_int_equal(run(bad, sizeof bad - 1), -EINVAL);
    /* The same name in a section that runs nothing is harmless. */
    static const char ok[] = "branch.a=b.remote\norigin\0";
    assert_true(run(ok, sizeof ok - 1) > 0);
}

/* A `--show-scope` listing: the user's git-crypt and LFS, a repository
 * that redefines crypt's clean, sets required=false on it, adds a smudge
 * (through an include) and defines a driver of its own. */
static const char SCOPED[] =
    "system\0filter.lfs.process\ngit-lfs filter-process\0"
    "system\0filter.lfs.required\ntrue\0"
    "global\0filter.crypt.clean\nuser-clean\0"
    "global\0filter.crypt.smudge\nuser-smudge\0"
    "global\0filter.crypt.required\ntrue\0"
    "global\0filter.own.clean\nown-clean\0"
    "local\0filter.crypt.clean\nplanted-clean\0"
    "local\0filter.crypt.required\nfalse\0"
    "local\0include.path\n../inc.cfg\0"
    "local\0filter.crypt.process\nplanted-process\0"
    "worktree\0filter.evil.smudge\nplanted\0"
    "command\0filter.own.smudge\nplanted\0";

static void test_scoped_user_filters_kept(void **state)
{
    memset(args, 0, sizeof args);
    int n = zerg_git_safe_overrides_scoped(SCOPED, sizeof SCOPED - 1, "/h",
                                           args, MAX_ARGS, strs, sizeof strs);
    assert_true(n > 0);
    want(n, "filter.crypt.clean=user-clean");
    want(n, "filter.crypt.smudge=user-smudge");
    want(n, "filter.crypt.process=");
    want(n, "filter.crypt.required=true");
    want(n, "filter.evil.smudge=");
    want(n, "filter.evil.clean=");
    want(n, "filter.evil.required=false");
    want(n, "filter.own.clean=own-clean");
    want(n, "filter.own.smudge=");
    int copies;
    /* Only the user's: nothing to pin, LFS is left exactly as it is. */
    for (int i = 1; i < n; i += 2)
        assert_false(strncmp(args[i], "filter.lfs.", 11) == 0);
    assert_int_equal(find(n, "filter.crypt.required=false", &copies), -1);
    assert_int_equal(find(n, "filter.own.required=false", &copies), -1);
    for (int i = 1; i < n; i += 2)
        assert_null(strstr(args[i], "planted"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listing_answered),
        cmocka_unit_test(test_fixed_without_config),
        cmocka_unit_test(test_enospc),
        cmocka_unit_test(test_unanswerable_key),
        cmocka_unit_test(test_scoped_user_filters_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
