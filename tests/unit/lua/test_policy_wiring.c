/* test_policy_wiring.c - the wiring check (src/lua/wiring.c): the bundled
 * policies against zerg_policy_hooks, project overrides, and the source
 * tree against the build. */
#include "testutil.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/err.h"
#include "zerg/wiring.h"

static char out[16384];

/* Runs the check; returns the problem count, output in `out`. */
static int check(const char *override_dir, const char *source_dir)
{
    FILE *f = fmemopen(out, sizeof out - 1, "w");
    assert_non_null(f);
    struct zerg_err err = {0};
    int n = zerg_wiring_check_tree(override_dir, source_dir, f, &err);
    fclose(f);
    if (n < 0)
        fail_msg("wiring check failed to run: %s", err.msg);
    return n;
}

static void test_this_tree_is_wired(void **state)
{
    (void)state;
    FILE *f = fmemopen(out, sizeof out - 1, "w");
    int n = zerg_wiring_check(NULL, f, NULL);
    fclose(f);
    if (n != 0)
        fail_msg("problems:\n%s", out);
    assert_true(tu_contains(out, "All modules properly wired"));
}

static void test_override_problems(void **state)
{
    (void)state;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", tu_mkdtemp());
    tu_write(dir, "backoff.lua", "return {dealy = function() end}\n");
    tu_write(dir, "stail.lua", "return {}\n");
    tu_write(dir, "retry.lua", "return {decide = function(\n");
    tu_write(dir, "respawn.lua",
             "local base = require('policies.respawn')\n"
             "return setmetatable({}, {__index = base})\n");
    tu_write(dir, "notes.txt", "not a policy\n");
    assert_int_equal(check(dir, ZERG_TEST_SOURCE_DIR), 3);
    assert_true(tu_contains(out, "'dealy' is not a hook of the backoff "
                                 "policy"));
    assert_true(tu_contains(out, "did you mean 'delay'?"));
    assert_true(tu_contains(out, "stail.lua: no policy is called 'stail'"));
    assert_true(tu_contains(out, "did you mean 'stale.lua'?"));
    assert_true(tu_contains(out, "retry.lua:2:"));
    assert_null(strstr(out, "respawn.lua"));
    assert_null(strstr(out, "All modules properly wired"));
    tu_rmtree(dir);
}

static void test_missing_override_dir_is_fine(void **state)
{
    (void)state;
    assert_int_equal(check("/nonexistent/.zerg/policies", ZERG_TEST_SOURCE_DIR),
                     0);
    assert_true(tu_contains(out, "All modules properly wired"));
}

static void test_orphan_source(void **state)
{
    (void)state;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", tu_mkdtemp());
    tu_write(dir, "src/deep/orphan.c", "int x;\n");
    tu_write(dir, "src/notes.h", "\n");
    int n = check(NULL, dir);
    assert_true(n >= 2);
    assert_true(tu_contains(out, "src/deep/orphan.c is not in the build"));
    /* and everything the build lists is missing from that tree */
    assert_true(tu_contains(out, "src/lua/wiring.c is built but missing"));
    assert_null(strstr(out, "notes.h"));
    tu_rmtree(dir);
}

static void test_absent_source_tree_skipped(void **state)
{
    (void)state;
    assert_int_equal(check(NULL, "/nonexistent/zerg-source"), 0);
    assert_true(tu_contains(out, "source tree /nonexistent/zerg-source is "
                                 "absent; the built-sources check was "
                                 "skipped"));
    assert_true(tu_contains(out, "All modules properly wired"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_this_tree_is_wired),
        cmocka_unit_test(test_override_problems),
        cmocka_unit_test(test_missing_override_dir_is_fine),
        cmocka_unit_test(test_orphan_source),
        cmocka_unit_test(test_absent_source_tree_skipped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
