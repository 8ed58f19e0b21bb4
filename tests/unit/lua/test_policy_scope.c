/* test_policy_scope.c - scope.decide, scope.config and scope.missing
 * through include/zerg/policy.h
 * (src/lua/policy_scope.c and policies/scope.lua): the bundled verdict and
 * its reason, what an override sees and how it decides (a project that
 * fails on secrets/), every bad answer and broken override falling back
 * to the bundled "warn" with a policy_error, and the reason's cut.  The
 * fixed answer for when even the Lua fails: test_policy_builtin.c. */
#include "testutil.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "zerg/config.h"
#include "zerg/err.h"
#include "zerg/graph.h"
#include "zerg/log.h"
#include "zerg/policy.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static struct zerg_config cfg;
static struct tu_policy_project pp;

static char *creates[] = {"src/auth.c", "src/auth.h"};
static char *modifies[] = {"src/main.c"};
static char *reads[] = {"docs/auth.md", "include/api.h"};

static const struct zerg_task task = {
    .id = "AUTH-L2-003",
    .title = "Add the login handler",
    .level = 2,
    .files_create = {creates, N(creates)},
    .files_modify = {modifies, N(modifies)},
    .files_read = {reads, N(reads)},
};

static int setup(void **state)
{
    (void)state;
    zerg_config_defaults(&cfg);
    tu_policy_project_open(&pp);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tu_policy_project_close(&pp);
    zerg_config_free(&cfg);
    return 0;
}

static void write_override(const char *text)
{
    tu_write(pp.dir, ".zerg/policies/scope.lua", text);
}

static struct zerg_policy *load_ok(void)
{
    struct zerg_err err = {0};
    struct zerg_policy *p = zerg_policy_new(pp.ovdir, &cfg, pp.lg, &err);
    if (!p)
        fail_msg("zerg_policy_new: %s", err.msg);
    return p;
}

static const char *why_str(const zerg_json *why, const char *key)
{
    const char *s = zerg_json_as_str(zerg_json_get(why, key));
    return s ? s : "(none)";
}

/* One decision; the reason into reason (256 bytes), the why returned. */
static enum zerg_scope_verdict decide(struct zerg_policy *p,
                                      const char *const *paths, size_t n,
                                      char *reason, zerg_json **why)
{
    return zerg_policy_scope(p, &task, paths, n, reason, 256, why);
}

/* ---- the bundled policy ---------------------------------------------- */

static void test_verdict_names(void **state)
{
    (void)state;
    assert_string_equal(zerg_scope_verdict_name(ZERG_SCOPE_ALLOW), "allow");
    assert_string_equal(zerg_scope_verdict_name(ZERG_SCOPE_WARN), "warn");
    assert_string_equal(zerg_scope_verdict_name(ZERG_SCOPE_FAIL), "fail");
    assert_string_equal(zerg_scope_verdict_name((enum zerg_scope_verdict)9),
                        "unknown");
}

static void test_bundled_warns(void **state)
{
    (void)state;
    struct zerg_policy *p = load_ok();
    static const char *const paths[] = {"Makefile", "lib/a.c", "lib/b.c",
                                        "secrets/key.pem", "zz.txt"};
    static const struct {
        size_t n;
        const char *reason;
    } rows[] = {
        {0, "0 paths out of scope"},
        {1, "1 path out of scope: Makefile"},
        {2, "2 paths out of scope: Makefile, lib/a.c"},
        {3, "3 paths out of scope: Makefile, lib/a.c, lib/b.c"},
        {4, "4 paths out of scope: Makefile, lib/a.c, lib/b.c and 1 more"},
        {5, "5 paths out of scope: Makefile, lib/a.c, lib/b.c and 2 more"},
    };
    for (size_t i = 0; i < N(rows); i++) {
        char reason[256];
        zerg_json *why = NULL;
        assert_int_equal(decide(p, paths, rows[i].n, reason, &why),
                         ZERG_SCOPE_WARN);
        assert_string_equal(reason, rows[i].reason);
        assert_string_equal(why_str(why, "policy"), "bundled");
        assert_string_equal(why_str(why, "file"), "policies/scope.lua");
        assert_string_equal(why_str(why, "hook"), "scope.decide");
        assert_string_equal(why_str(why, "task"), "AUTH-L2-003");
        assert_string_equal(why_str(why, "verdict"), "warn");
        assert_string_equal(why_str(why, "reason"), rows[i].reason);
        const zerg_json *np = zerg_json_get(why, "paths");
        assert_true(zerg_json_is(np, ZERG_JSON_NUMBER));
        assert_int_equal((size_t)np->u.number, rows[i].n);
        zerg_json_free(why);
    }
    assert_int_equal(zerg_policy_error_count(p), 0);
    zerg_policy_free(p);
}

/* NULL task, paths, reason and why are all accepted. */
static void test_null_arguments(void **state)
{
    (void)state;
    struct zerg_policy *p = load_ok();
    char reason[64];
    assert_int_equal(
        zerg_policy_scope(p, NULL, NULL, 3, reason, sizeof reason, NULL),
        ZERG_SCOPE_WARN);
    assert_string_equal(reason, "0 paths out of scope");
    static const char *const one[] = {"x"};
    assert_int_equal(zerg_policy_scope(p, NULL, one, 1, NULL, 0, NULL),
                     ZERG_SCOPE_WARN);
    assert_int_equal(zerg_policy_error_count(p), 0);
    zerg_policy_free(p);
}

/* A reason is cut at 255 bytes, and to the caller's buffer, never
 * inside a UTF-8 sequence. */
static void test_reason_cut(void **state)
{
    (void)state;
    struct zerg_policy *p = load_ok();
    char longp[400];
    memset(longp, 'a', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    const char *const paths[] = {longp};
    char reason[256], small[31];
    zerg_json *why = NULL;
    assert_int_equal(decide(p, paths, 1, reason, &why), ZERG_SCOPE_WARN);
    assert_int_equal(strlen(reason), 255);
    assert_int_equal(strlen(why_str(why, "reason")), 255);
    assert_true(tu_contains(reason, "1 path out of scope: aaaa"));
    zerg_json_free(why);
    /* "1 path out of scope: " is 21 bytes; é is 2 bytes: the cut at 30
     * would split the fifth one */
    const char *const accented[] = {"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                                    "\xc3\xa9"};
    zerg_policy_scope(p, &task, accented, 1, small, sizeof small, NULL);
    assert_string_equal(small, "1 path out of scope: \xc3\xa9\xc3\xa9\xc3\xa9"
                               "\xc3\xa9");
    assert_int_equal(zerg_policy_error_count(p), 0);
    zerg_policy_free(p);
}

/* ---- overrides ------------------------------------------------------- */

/* The project's boundary: secrets/ fails, docs/ is fine, anything else
 * is the bundled warning. */
static const char secrets_policy[] =
    "local base = require('policies.scope')\n"
    "local M = {}\n"
    "function M.decide(task, paths, opts)\n"
    "    local docs = 0\n"
    "    for _, p in ipairs(paths) do\n"
    "        if p:sub(1, 8) == 'secrets/' then\n"
    "            return 'fail', task.id .. ' wrote ' .. p\n"
    "        end\n"
    "        if p:sub(1, 5) == 'docs/' then docs = docs + 1 end\n"
    "    end\n"
    "    if docs == #paths then return 'allow', 'docs only' end\n"
    "    return base.decide(task, paths, opts)\n"
    "end\n"
    "return M\n";

static void test_override_fail_and_allow(void **state)
{
    (void)state;
    write_override(secrets_policy);
    struct zerg_policy *p = load_ok();
    char reason[256];
    zerg_json *why = NULL;
    static const char *const secret[] = {"a.c", "secrets/key.pem"};
    assert_int_equal(decide(p, secret, 2, reason, &why), ZERG_SCOPE_FAIL);
    assert_string_equal(reason, "AUTH-L2-003 wrote secrets/key.pem");
    assert_string_equal(why_str(why, "policy"), "override");
    assert_true(tu_contains(why_str(why, "file"), ".zerg/policies/scope.lua"));
    assert_string_equal(why_str(why, "verdict"), "fail");
    zerg_json_free(why);

    static const char *const docs[] = {"docs/a.md", "docs/b.md"};
    assert_int_equal(decide(p, docs, 2, reason, &why), ZERG_SCOPE_ALLOW);
    assert_string_equal(reason, "docs only");
    assert_string_equal(why_str(why, "verdict"), "allow");
    zerg_json_free(why);

    static const char *const other[] = {"docs/a.md", "lib/x.c"};
    assert_int_equal(decide(p, other, 2, reason, NULL), ZERG_SCOPE_WARN);
    assert_string_equal(reason, "2 paths out of scope: docs/a.md, lib/x.c");
    assert_int_equal(zerg_policy_error_count(p), 0);
    assert_int_equal(pp.nerrors, 0);
    zerg_policy_free(p);
}

/* Everything the override is given: the task, its files, the paths and
 * opts. */
static void test_override_sees_the_task(void **state)
{
    (void)state;
    write_override("return {decide = function(t, paths, opts)\n"
                   "  local f = t.files\n"
                   "  return 'allow', string.format("
                   "'%s|%s|%d|%d:%s,%s|%d:%s|%d:%s,%s|%d:%s,%s|%d', "
                   "t.id, t.title, t.level, #f.create, f.create[1], "
                   "f.create[2], #f.modify, f.modify[1], #f.read, "
                   "f.read[1], f.read[2], #paths, paths[1], paths[2], "
                   "opts.listed)\n"
                   "end}\n");
    struct zerg_policy *p = load_ok();
    char reason[256];
    static const char *const paths[] = {"README.md", "src/x.c"};
    assert_int_equal(decide(p, paths, 2, reason, NULL), ZERG_SCOPE_ALLOW);
    assert_string_equal(reason,
                        "AUTH-L2-003|Add the login handler|2|"
                        "2:src/auth.c,src/auth.h|1:src/main.c|"
                        "2:docs/auth.md,include/api.h|2:README.md,src/x.c|3");
    assert_int_equal(zerg_policy_error_count(p), 0);
    zerg_policy_free(p);
}

/* An override without a reason says "" ; it may leave decide out, and
 * the bundled one decides. */
static void test_override_reason_optional(void **state)
{
    (void)state;
    write_override("return {decide = function() return 'fail' end}\n");
    struct zerg_policy *p = load_ok();
    char reason[256] = "stale";
    static const char *const paths[] = {"x"};
    assert_int_equal(decide(p, paths, 1, reason, NULL), ZERG_SCOPE_FAIL);
    assert_string_equal(reason, "");
    zerg_policy_free(p);
    write_override("return {}\n");
    p = load_ok();
    zerg_json *why = NULL;
    assert_int_equal(decide(p, paths, 1, reason, &why), ZERG_SCOPE_WARN);
    assert_string_equal(why_str(why, "policy"), "bundled");
    zerg_json_free(why);
    assert_int_equal(zerg_policy_error_count(p), 0);
    zerg_policy_free(p);
}

/* Each unusable answer: the bundled "warn" decides, policy_error says
 * why, and the decision's why carries the override's error. */
static void test_bad_answers_fall_back(void **state)
{
    (void)state;
    static const struct {
        const char *ret, *error;
    } rows[] = {
        {"42", "scope.decide returned number, expected \"allow\""},
        {"nil", "scope.decide returned nil, expected"},
        {"", "scope.decide returned nothing, expected"},
        {"'maybe'", "scope.decide returned \"maybe\", expected"},
        {"'FAIL'", "scope.decide returned \"FAIL\""},
        {"true", "scope.decide returned boolean"},
        {"{'fail'}", "scope.decide returned table"},
        {"'fail', 7", "returned a number as its reason"},
        {"'allow', {}", "returned a table as its reason"},
    };
    static const char *const paths[] = {"secrets/key.pem"};
    for (size_t i = 0; i < N(rows); i++) {
        char text[256];
        snprintf(text, sizeof text,
                 "return {decide = function() return %s end}\n", rows[i].ret);
        write_override(text);
        pp.nerrors = 0;
        struct zerg_policy *p = load_ok();
        char reason[256];
        zerg_json *why = NULL;
        assert_int_equal(decide(p, paths, 1, reason, &why), ZERG_SCOPE_WARN);
        assert_string_equal(reason, "1 path out of scope: secrets/key.pem");
        assert_string_equal(why_str(why, "policy"), "bundled");
        assert_true(tu_contains(why_str(why, "override_error"), rows[i].error));
        zerg_json_free(why);
        assert_int_equal(zerg_policy_error_count(p), 1);
        assert_int_equal(pp.nerrors, 1);
        assert_true(tu_contains(pp.last_data, "\"hook\":\"scope.decide\""));
        assert_true(tu_contains(pp.last_data, "\"used\":\"bundled\""));
        zerg_policy_free(p);
    }
}

/* A runtime error, a runaway loop (even one that pcall wraps) and a
 * memory hog are stopped within their budgets; the bundled policy
 * decides. */
static void test_broken_override_falls_back(void **state)
{
    (void)state;
    static const struct {
        const char *body, *error;
    } rows[] = {
        {"error('no scope today')", "no scope today"},
        {"return paths.nope.deeper", "attempt to index"},
        {"while true do end", "instruction budget exceeded"},
        {"while true do pcall(function() while true do end end) end",
         "instruction budget exceeded"},
        {"local t = {} while true do t[#t + 1] = string.rep('x', 1024) end",
         "not enough memory"},
    };
    static const char *const paths[] = {"a", "b"};
    cfg.policy_memory_bytes = 8 << 20;
    /* The instruction budget stops the loops, not the CPU clock, which a
     * loaded machine (or a sanitizer) can run out first. */
    cfg.policy_time_budget_ns = 0;
    for (size_t i = 0; i < N(rows); i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "return {decide = function(task, paths, opts)\n  %s\nend}\n",
                 rows[i].body);
        write_override(text);
        pp.nerrors = 0;
        struct zerg_policy *p = load_ok();
        for (int k = 0; k < 2; k++) { /* stopped every time */
            char reason[256];
            zerg_json *why = NULL;
            assert_int_equal(decide(p, paths, 2, reason, &why),
                             ZERG_SCOPE_WARN);
            assert_string_equal(reason, "2 paths out of scope: a, b");
            assert_string_equal(why_str(why, "policy"), "bundled");
            assert_true(
                tu_contains(why_str(why, "override_error"), rows[i].error));
            zerg_json_free(why);
        }
        assert_int_equal(zerg_policy_error_count(p), 2);
        assert_int_equal(pp.nerrors, 2);
        assert_true(tu_contains(pp.last_data, "scope.lua:2:") ||
                    tu_contains(pp.last_data, "not enough memory"));
        zerg_policy_free(p);
    }
}

/* A misspelt hook or a misnamed file is a load error at start. */
static void test_override_load_errors(void **state)
{
    (void)state;
    write_override("return {decid = function() return 'allow' end}\n");
    struct zerg_err err = {0};
    struct zerg_policy *p = zerg_policy_new(pp.ovdir, &cfg, pp.lg, &err);
    assert_null(p);
    assert_int_equal(err.code, ZERG_EPOLICY);
    assert_true(tu_contains(err.msg,
                            "'decid' is not a hook of the scope "
                            "policy (hooks: decide, config, missing)"));
    assert_true(tu_contains(err.msg, "did you mean 'decide'?"));
    tu_rmtree(pp.ovdir);
    tu_write(pp.dir, ".zerg/policies/scop.lua", "return {}\n");
    memset(&err, 0, sizeof err);
    p = zerg_policy_new(pp.ovdir, &cfg, pp.lg, &err);
    assert_null(p);
    assert_true(tu_contains(err.msg, "no policy is called 'scop'"));
    assert_true(tu_contains(err.msg, "reconcile, scope)"));
    assert_true(tu_contains(err.msg, "did you mean 'scope.lua'?"));
}

/* Forcing the fixed answer: the bundled default verdict and the hook's
 * words with a count, decided "builtin". */
static void test_builtin(void **state)
{
    (void)state;
    write_override("return {decide = function() return 'allow' end}\n");
    struct zerg_policy *p = load_ok();
    zerg_policy_force_builtin(p, 1);
    static const char *const paths[] = {"a", "b", "c", "d"};
    char reason[256];
    zerg_json *why = NULL;
    assert_int_equal(decide(p, paths, 4, reason, &why), ZERG_SCOPE_WARN);
    assert_string_equal(reason, "out of scope (4 paths, builtin)");
    assert_string_equal(why_str(why, "policy"), "builtin");
    assert_string_equal(why_str(why, "file"), "(built in)");
    zerg_json_free(why);
    zerg_policy_force_builtin(p, 0);
    assert_int_equal(decide(p, paths, 4, reason, NULL), ZERG_SCOPE_ALLOW);
    assert_int_equal(zerg_policy_error_count(p), 0);
    zerg_policy_free(p);
}

/* ---- scope.config and scope.missing ------------------------------------ */

static enum zerg_scope_verdict hook(struct zerg_policy *p,
                                    enum zerg_scope_hook h,
                                    const char *const *paths, size_t n,
                                    char *reason, zerg_json **why)
{
    return zerg_policy_scope_hook(p, h, &task, paths, n, reason, 256, why);
}

/* A task that changes zerg's configuration is flagged, not failed; a
 * declared output that was never made fails the attempt as
 * missing_output, naming it. */
static void test_bundled_config_and_missing(void **state)
{
    (void)state;
    struct zerg_policy *p = load_ok();
    static const char *const cfgp[] = {".zerg/config.yaml",
                                       ".zerg/policies/retry.lua"};
    static const char *const miss[] = {"src/auth.c", "src/auth.h", "a", "b"};
    char reason[256];
    zerg_json *why = NULL;
    assert_int_equal(hook(p, ZERG_SCOPE_CONFIG, cfgp, 2, reason, &why),
                     ZERG_SCOPE_WARN);
    assert_string_equal(reason, "changes zerg's own configuration: review "
                                "before merging (.zerg/config.yaml, "
                                ".zerg/policies/retry.lua)");
    assert_string_equal(why_str(why, "hook"), "scope.config");
    assert_string_equal(why_str(why, "policy"), "bundled");
    assert_string_equal(why_str(why, "verdict"), "warn");
    zerg_json_free(why);
    assert_int_equal(hook(p, ZERG_SCOPE_MISSING, miss, 1, reason, &why),
                     ZERG_SCOPE_FAIL);
    assert_string_equal(reason,
                        "missing_output: files.create not made: src/auth.c");
    assert_string_equal(why_str(why, "hook"), "scope.missing");
    assert_string_equal(why_str(why, "verdict"), "fail");
    zerg_json_free(why);
    assert_int_equal(hook(p, ZERG_SCOPE_MISSING, miss, 4, reason, NULL),
                     ZERG_SCOPE_FAIL);
    assert_string_equal(reason, "missing_output: files.create not made: "
                                "src/auth.c, src/auth.h, a and 1 more");
    assert_int_equal(zerg_policy_error_count(p), 0);
    zerg_policy_free(p);
}

/* An override written before config and missing existed (decide only)
 * still loads and decides; the new hooks stay bundled. */
static void test_old_override_keeps_new_hooks(void **state)
{
    (void)state;
    write_override("return {decide = function() return 'allow' end}\n");
    struct zerg_policy *p = load_ok();
    static const char *const paths[] = {"src/auth.c"};
    char reason[256];
    zerg_json *why = NULL;
    assert_int_equal(decide(p, paths, 1, reason, NULL), ZERG_SCOPE_ALLOW);
    assert_int_equal(hook(p, ZERG_SCOPE_MISSING, paths, 1, reason, &why),
                     ZERG_SCOPE_FAIL);
    assert_string_equal(why_str(why, "policy"), "bundled");
    zerg_json_free(why);
    assert_int_equal(hook(p, ZERG_SCOPE_CONFIG, paths, 1, reason, NULL),
                     ZERG_SCOPE_WARN);
    assert_int_equal(zerg_policy_error_count(p), 0);
    zerg_policy_free(p);
}

/* A project that lets a task skip its optional outputs and refuses any
 * change to zerg's configuration. */
static void test_override_config_and_missing(void **state)
{
    (void)state;
    write_override(
        "local base = require('policies.scope')\n"
        "local M = setmetatable({}, {__index = base})\n"
        "function M.missing(task, paths, opts)\n"
        "    if paths[1]:match('%.md$') then return 'warn', 'docs later' end\n"
        "    return base.missing(task, paths, opts)\n"
        "end\n"
        "function M.config(task, paths, opts)\n"
        "    return 'fail', task.id .. ' touched ' .. paths[1]\n"
        "end\n"
        "return M\n");
    struct zerg_policy *p = load_ok();
    static const char *const md[] = {"docs/auth.md"}, *const c[] = {"src/x.c"};
    static const char *const cfgp[] = {".zerg/config.yaml"};
    char reason[256];
    zerg_json *why = NULL;
    assert_int_equal(hook(p, ZERG_SCOPE_MISSING, md, 1, reason, &why),
                     ZERG_SCOPE_WARN);
    assert_string_equal(reason, "docs later");
    assert_string_equal(why_str(why, "policy"), "override");
    zerg_json_free(why);
    assert_int_equal(hook(p, ZERG_SCOPE_MISSING, c, 1, reason, NULL),
                     ZERG_SCOPE_FAIL);
    assert_string_equal(reason, "missing_output: files.create not made: "
                                "src/x.c");
    assert_int_equal(hook(p, ZERG_SCOPE_CONFIG, cfgp, 1, reason, NULL),
                     ZERG_SCOPE_FAIL);
    assert_string_equal(reason, "AUTH-L2-003 touched .zerg/config.yaml");
    /* decide, through the metatable, is the bundled one */
    assert_int_equal(decide(p, c, 1, reason, NULL), ZERG_SCOPE_WARN);
    assert_int_equal(zerg_policy_error_count(p), 0);
    zerg_policy_free(p);
}

/* A broken answer of the new hooks falls back to the bundled verdict;
 * with even the Lua gone, the fixed answer keeps the default verdicts. */
static void test_new_hooks_fall_back(void **state)
{
    (void)state;
    write_override("return {missing = function() return 'maybe' end,\n"
                   "        config = function() error('boom') end}\n");
    struct zerg_policy *p = load_ok();
    static const char *const paths[] = {"src/auth.c"};
    char reason[256];
    zerg_json *why = NULL;
    assert_int_equal(hook(p, ZERG_SCOPE_MISSING, paths, 1, reason, NULL),
                     ZERG_SCOPE_FAIL);
    assert_int_equal(hook(p, ZERG_SCOPE_CONFIG, paths, 1, reason, NULL),
                     ZERG_SCOPE_WARN);
    assert_int_equal(zerg_policy_error_count(p), 2);
    zerg_policy_force_builtin(p, 1);
    assert_int_equal(hook(p, ZERG_SCOPE_MISSING, paths, 1, reason, &why),
                     ZERG_SCOPE_FAIL);
    assert_string_equal(reason, "missing_output: files.create not made (1 "
                                "path, builtin)");
    assert_string_equal(why_str(why, "policy"), "builtin");
    zerg_json_free(why);
    assert_int_equal(hook(p, ZERG_SCOPE_CONFIG, paths, 1, reason, NULL),
                     ZERG_SCOPE_WARN);
    assert_string_equal(reason, "changes zerg's own configuration: review "
                                "before merging (1 path, builtin)");
    zerg_policy_free(p);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_verdict_names),
        T(test_bundled_warns),
        T(test_null_arguments),
        T(test_reason_cut),
        T(test_override_fail_and_allow),
        T(test_override_sees_the_task),
        T(test_override_reason_optional),
        T(test_bad_answers_fall_back),
        T(test_broken_override_falls_back),
        T(test_override_load_errors),
        T(test_builtin),
        T(test_bundled_config_and_missing),
        T(test_old_override_keeps_new_hooks),
        T(test_override_config_and_missing),
        T(test_new_hooks_fall_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
