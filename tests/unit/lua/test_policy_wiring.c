/* test_policy_wiring.c - the wiring check (src/lua/wiring.c): the bundled
 * policies against zerg_policy_hooks, project overrides, and the source
 * tree against the build. */
#include "testutil.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua/embedded.h"
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

/* Checks the bundled-policy part against lua; the problem count, output
 * in `out`. */
static int check_lua(const struct zerg_embedded *lua)
{
    FILE *f = fmemopen(out, sizeof out - 1, "w");
    assert_non_null(f);
    struct zerg_err err = {0};
    int problems = zerg_wiring_check_bundled(lua, f, &err);
    fclose(f);
    if (problems < 0)
        fail_msg("wiring check failed to run: %s", err.msg);
    return problems;
}

/* The same with policies/scope.lua replaced by text (NULL: left out). */
static int check_scope_as(const char *text)
{
    static struct zerg_embedded lua[64];
    size_t n = 0;
    for (const struct zerg_embedded *e = zerg_embedded_lua; e->name; e++) {
        assert_true(n < sizeof lua / sizeof *lua - 1);
        if (strcmp(e->name, "policies/scope.lua") != 0)
            lua[n++] = *e;
        else if (text)
            lua[n++] = (struct zerg_embedded){e->name, text, strlen(text)};
    }
    lua[n] = (struct zerg_embedded){0};
    return check_lua(lua);
}

static void test_scope_hook_wired(void **state)
{
    (void)state;
    int found = 0;
    for (const struct zerg_embedded *e = zerg_embedded_lua; e->name; e++)
        found |= strcmp(e->name, "policies/scope.lua") == 0;
    assert_true(found);
    /* the table as built is wired, and so is any scope.lua with decide */
    assert_int_equal(check_lua(zerg_embedded_lua), 0);
    assert_true(tu_contains(out, "All modules properly wired"));
    assert_int_equal(check_scope_as("return {decide = function() end,\n"
                                    "config = function() end,\n"
                                    "missing = function() end}\n"),
                     0);
    /* scope.lua with decide only: the core calls config and missing */
    assert_int_equal(check_scope_as("return {decide = function() end}\n"), 2);
    assert_true(tu_contains(out, "the core calls 'scope.missing', which no "
                                 "bundled policy defines"));
    /* scope.lua without decide */
    assert_int_equal(check_scope_as("return {config = function() end,\n"
                                    "missing = function() end}\n"),
                     1);
    assert_true(tu_contains(out, "the core calls 'scope.decide', which no "
                                 "bundled policy defines"));
    assert_null(strstr(out, "All modules properly wired"));
    /* decide misspelt: two problems */
    assert_int_equal(check_scope_as("return {decid = function() end,\n"
                                    "config = function() end,\n"
                                    "missing = function() end}\n"),
                     2);
    assert_true(tu_contains(out, "policies/scope.lua defines hook "
                                 "'scope.decid', which the core never "
                                 "calls"));
    assert_true(tu_contains(out, "the core calls 'scope.decide'"));
    /* no scope.lua at all */
    assert_int_equal(check_scope_as(NULL), 3);
    assert_true(tu_contains(out, "the core calls 'scope.decide'"));
}

/* An override of scope: a misspelt hook is caught, a partial one is
 * fine (the bundled decide stays). */
static void test_scope_override(void **state)
{
    (void)state;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", tu_mkdtemp());
    tu_write(dir, "scope.lua", "return {decied = function() end}\n");
    assert_int_equal(check(dir, ZERG_TEST_SOURCE_DIR), 1);
    assert_true(tu_contains(out, "'decied' is not a hook of the scope "
                                 "policy (hooks: decide, config, missing); "
                                 "did you mean "
                                 "'decide'?"));
    tu_write(dir, "scope.lua",
             "local base = require('policies.scope')\n"
             "return {decide = function(t, p, o)\n"
             "  if p[1] and p[1]:find('^secrets/') then return 'fail' end\n"
             "  return base.decide(t, p, o)\n"
             "end}\n");
    assert_int_equal(check(dir, ZERG_TEST_SOURCE_DIR), 0);
    assert_true(tu_contains(out, "All modules properly wired"));
    tu_write(dir, "scope.lua", "return {}\n");
    assert_int_equal(check(dir, ZERG_TEST_SOURCE_DIR), 0);
    tu_write(dir, "scop.lua", "return {}\n");
    assert_int_equal(check(dir, ZERG_TEST_SOURCE_DIR), 1);
    assert_true(tu_contains(out, "reconcile, scope); did you mean "
                                 "'scope.lua'?"));
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
        cmocka_unit_test(test_scope_hook_wired),
        cmocka_unit_test(test_scope_override),
        cmocka_unit_test(test_missing_override_dir_is_fine),
        cmocka_unit_test(test_orphan_source),
        cmocka_unit_test(test_absent_source_tree_skipped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
