/* test_repl.c - what Tab offers in `zerg lua` (src/lua/complete.c through
 * zerg_repl_complete) and the "did you mean" of an unknown global
 * (src/lua/repl.c): globals, fields, nested fields, the string methods,
 * policy hooks, raw access only (an __index function never runs) and the
 * bound on a huge table. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/config.h"
#include "zerg/err.h"
#include "zerg/repl.h"

#define MAXC 64

struct fx {
    char dir[512];
    struct zerg_config cfg;
    char *out, *err;
    size_t outlen, errlen;
    FILE *outf, *errf;
    struct zerg_repl *r;
    char *c[MAXC];
    int n;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "%s", tu_mkdtemp());
    /* An override that shows its hooks only through an __index function:
     * completion still offers the hook the core calls. */
    tu_write(f->dir, ".zerg/policies/retry.lua",
             "local base = require('policies.retry')\n"
             "return setmetatable({}, {__index = function(_, k)\n"
             "  return base[k] end})\n");
    zerg_config_defaults(&f->cfg);
    f->outf = open_memstream(&f->out, &f->outlen);
    f->errf = open_memstream(&f->err, &f->errlen);
    struct zerg_repl_opts o = {
        .project = f->dir, .cfg = &f->cfg, .out = f->outf, .err = f->errf};
    struct zerg_err e = {0};
    f->r = zerg_repl_new(&o, &e);
    if (!f->r)
        fail_msg("zerg_repl_new: %s", e.msg);
    *state = f;
    return 0;
}

static void clear(struct fx *f)
{
    for (int i = 0; i < f->n; i++)
        free(f->c[i]);
    f->n = 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    clear(f);
    zerg_repl_free(f->r);
    fclose(f->outf);
    fclose(f->errf);
    free(f->out);
    free(f->err);
    zerg_config_free(&f->cfg);
    tu_rmtree(f->dir);
    free(f);
    return 0;
}

static void complete(struct fx *f, const char *line)
{
    clear(f);
    f->n = zerg_repl_complete(f->r, line, f->c, MAXC);
    assert_true(f->n >= 0);
}

static int has(struct fx *f, const char *want)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->c[i], want) == 0)
            return 1;
    return 0;
}

static void run(struct fx *f, const char *code)
{
    if (zerg_repl_run_string(f->r, code) != 0) {
        fflush(f->errf);
        fail_msg("%s failed: %s", code, f->err);
    }
}

static void test_globals(void **state)
{
    struct fx *f = *state;
    complete(f, "tas");
    assert_int_equal(f->n, 2);
    assert_string_equal(f->c[0], "task");
    assert_string_equal(f->c[1], "tasks");
    complete(f, "x = polic");
    assert_int_equal(f->n, 1);
    assert_string_equal(f->c[0], "policies");
    complete(f, "ret"); /* keywords too */
    assert_true(has(f, "return"));
    complete(f, "prin"); /* a built-in behind the session's globals */
    assert_true(has(f, "print"));
    run(f, "mine = 1");
    complete(f, "mi");
    assert_true(has(f, "mine"));
    complete(f, "nosuchname");
    assert_int_equal(f->n, 0);
}

static void test_fields(void **state)
{
    struct fx *f = *state;
    complete(f, "policies.re");
    assert_int_equal(f->n, 3);
    assert_string_equal(f->c[0], "policies.reconcile");
    assert_string_equal(f->c[1], "policies.respawn");
    assert_string_equal(f->c[2], "policies.retry");
    complete(f, "return config.work");
    assert_int_equal(f->n, 1);
    assert_string_equal(f->c[0], "config.workers");
    run(f, "t = {a = {bb = {ccc = 1, cd = 2}}, [1] = 0, ['two words'] = 1}");
    complete(f, "t.a.bb.c");
    assert_int_equal(f->n, 2);
    assert_string_equal(f->c[0], "t.a.bb.ccc");
    assert_string_equal(f->c[1], "t.a.bb.cd");
    complete(f, "t."); /* keys that are not names are left out */
    assert_int_equal(f->n, 1);
    assert_string_equal(f->c[0], "t.a");
    complete(f, "t.a.nothing.");
    assert_int_equal(f->n, 0);
    complete(f, "t.a:b.c"); /* not a path */
    assert_int_equal(f->n, 0);
    run(f, "m = {f = function() end, n = 1}");
    complete(f, "m:"); /* after ':' only what can be called */
    assert_int_equal(f->n, 1);
    assert_string_equal(f->c[0], "m:f");
}

static void test_string_methods(void **state)
{
    struct fx *f = *state;
    complete(f, "return (\"x\"):fo");
    assert_int_equal(f->n, 1);
    assert_string_equal(f->c[0], ":format");
    complete(f, "('x'):");
    assert_true(has(f, ":gsub"));
    assert_true(has(f, ":upper"));
    complete(f, "string.up"); /* the library's read-only view */
    assert_int_equal(f->n, 1);
    assert_string_equal(f->c[0], "string.upper");
    run(f, "s = 'abc'");
    complete(f, "s:le");
    assert_int_equal(f->n, 1);
    assert_string_equal(f->c[0], "s:len");
    complete(f, "x):"); /* not a string literal: nothing to walk */
    assert_int_equal(f->n, 0);
}

static void test_policy_hooks(void **state)
{
    struct fx *f = *state;
    complete(f, "policies.stale.");
    assert_true(has(f, "policies.stale.task"));
    assert_true(has(f, "policies.stale.worker"));
    complete(f, "policies.backoff.de");
    assert_int_equal(f->n, 1);
    assert_string_equal(f->c[0], "policies.backoff.delay");
    /* the override's table is empty: decide is reached by a function */
    fflush(f->outf);
    size_t before = f->outlen;
    run(f, "return rawget(policies.retry, 'decide'), "
           "type(policies.retry.decide)");
    fflush(f->outf);
    assert_string_equal(f->out + before, "nil\tfunction\n");
    complete(f, "policies.retry.");
    assert_int_equal(f->n, 1);
    assert_string_equal(f->c[0], "policies.retry.decide");
}

static void test_no_index_function_runs(void **state)
{
    struct fx *f = *state;
    run(f, "calls = 0\n"
           "p = setmetatable({a = 1}, {__index = function()\n"
           "  calls = calls + 1 error('must not run') end})\n"
           "q = setmetatable({}, {__index = p})");
    complete(f, "p.");
    assert_int_equal(f->n, 1);
    assert_string_equal(f->c[0], "p.a");
    complete(f, "p.missing.");
    assert_int_equal(f->n, 0);
    complete(f, "q."); /* an __index table is followed */
    assert_int_equal(f->n, 1);
    assert_string_equal(f->c[0], "q.a");
    complete(f, "q.zz.");
    assert_int_equal(f->n, 0);
    fflush(f->outf);
    size_t before = f->outlen;
    run(f, "return calls");
    fflush(f->outf);
    assert_string_equal(f->out + before, "0\n");
}

static void test_huge_and_cyclic_tables_are_bounded(void **state)
{
    struct fx *f = *state;
    run(f, "big = {} for i = 1, 100000 do big['k' .. i] = i end\n"
           "cyc = {} setmetatable(cyc, {__index = cyc}) cyc.me = 1");
    char *many[2 * ZERG_REPL_COMPLETE_SCAN];
    int n =
        zerg_repl_complete(f->r, "big.k", many, 2 * ZERG_REPL_COMPLETE_SCAN);
    assert_true(n > 0);
    assert_true(n <= ZERG_REPL_COMPLETE_SCAN);
    for (int i = 0; i < n; i++)
        free(many[i]);
    complete(f, "big.k"); /* and at most what the caller has room for */
    assert_int_equal(f->n, MAXC);
    complete(f, "cyc.");
    assert_int_equal(f->n, 1);
    assert_string_equal(f->c[0], "cyc.me");
}

static const char *run_err(struct fx *f, const char *code)
{
    fflush(f->errf);
    size_t before = f->errlen;
    assert_int_equal(zerg_repl_run_string(f->r, code), -1);
    fflush(f->errf);
    return f->err + before;
}

static void test_did_you_mean(void **state)
{
    struct fx *f = *state;
    const char *msg = run_err(f, "return tsks");
    assert_true(tu_contains(msg, "unknown global 'tsks'; did you mean "
                                 "'tasks'?\nstack traceback"));
    msg = run_err(f, "return hist('x')"); /* a prefix */
    assert_true(tu_contains(msg, "did you mean 'history'?"));
    msg = run_err(f, "return polcies.retry");
    assert_true(tu_contains(msg, "did you mean 'policies'?"));
    run(f, "my_counter = 1");
    msg = run_err(f, "return my_countr");
    assert_true(tu_contains(msg, "did you mean 'my_counter'?"));
    msg = run_err(f, "return zqxjkv");
    assert_true(tu_contains(msg, "unknown global 'zqxjkv'"));
    assert_null(strstr(msg, "did you mean"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_globals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_string_methods, setup, teardown),
        cmocka_unit_test_setup_teardown(test_policy_hooks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_index_function_runs, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_huge_and_cyclic_tables_are_bounded,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_did_you_mean, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
