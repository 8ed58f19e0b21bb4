/* test_policy_override.c - project overrides in .zerg/policies/ (src/lua/
 * policy.c): wrapping the bundled policy through require, every way an
 * override can fail (load error at start, wrong answer, runtime error,
 * runaway loop, memory) and the fallback plus policy_error each gets, and
 * hot reload keeping the last good version. */
#include "testutil.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "zerg/clock.h"
#include "zerg/config.h"
#include "zerg/err.h"
#include "zerg/log.h"
#include "zerg/policy.h"

#define S ZERG_NS_PER_S

static struct zerg_config cfg;
static struct tu_policy_project pp;

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

/* Writes .zerg/policies/<name> with the given mtime (seconds), so reload
 * sees a change even within one clock tick. */
static void write_override(const char *name, const char *text, int mtime)
{
    char rel[128], path[PATH_MAX];
    assert_true(strlen(pp.dir) + strlen(name) + 20 < sizeof path);
    snprintf(rel, sizeof rel, ".zerg/policies/%s", name);
    tu_write(pp.dir, rel, text);
    snprintf(path, sizeof path, "%s/%s", pp.dir, rel);
    struct timespec ts[2] = {{mtime, 0}, {mtime, 0}};
    utimensat(AT_FDCWD, path, ts, 0);
}

static struct zerg_policy *load_ok(void)
{
    struct zerg_err err = {0};
    struct zerg_policy *p = zerg_policy_new(pp.ovdir, &cfg, pp.lg, &err);
    if (!p)
        fail_msg("zerg_policy_new: %s", err.msg);
    return p;
}

static const char *load_fails(void)
{
    static struct zerg_err err;
    memset(&err, 0, sizeof err);
    struct zerg_policy *p = zerg_policy_new(pp.ovdir, &cfg, pp.lg, &err);
    if (p)
        fail_msg("zerg_policy_new accepted a broken override");
    assert_int_equal(err.code, ZERG_EPOLICY);
    return err.msg;
}

static const char *why_str(const zerg_json *why, const char *key)
{
    const char *s = zerg_json_as_str(zerg_json_get(why, key));
    return s ? s : "(none)";
}

/* ---- good overrides -------------------------------------------------- */

static void test_missing_dir_is_fine(void **state)
{
    (void)state;
    tu_rmtree(pp.ovdir);
    struct zerg_policy *p = load_ok();
    assert_int_equal(zerg_policy_backoff_ns(p, "spawn", 1, NULL), 2 * S);
    assert_int_equal(zerg_policy_reload(p), 0);
    zerg_policy_free(p);
}

static void test_override_wraps_default(void **state)
{
    (void)state;
    write_override("backoff.lua",
                   "local base = require('policies.backoff')\n"
                   "local M = setmetatable({}, {__index = base})\n"
                   "function M.delay(attempt, opts)\n"
                   "    if opts.kind == 'spawn' then return 1 end\n"
                   "    return base.delay(attempt, opts) / 2\n"
                   "end\n"
                   "return M\n",
                   1000);
    struct zerg_policy *p = load_ok();
    zerg_json *why = NULL;
    assert_int_equal(zerg_policy_backoff_ns(p, "spawn", 3, &why), 1 * S);
    assert_string_equal(why_str(why, "policy"), "override");
    assert_true(
        tu_contains(why_str(why, "file"), ".zerg/policies/backoff.lua"));
    zerg_json_free(why);
    assert_int_equal(zerg_policy_backoff_ns(p, "task", 2, NULL), 30 * S);
    /* the bundled retry policy asks the active backoff for its delay */
    struct zerg_retry_in in = {
        .task_id = "T", .retry_count = 1, .failure = "exit", .exit_code = 1};
    struct zerg_retry_out out;
    why = NULL;
    zerg_policy_retry(p, &in, &out, &why);
    assert_int_equal(out.delay_ns, 30 * S);
    assert_string_equal(why_str(why, "policy"), "bundled");
    assert_string_equal(why_str(why, "delay_policy"), "override");
    zerg_json_free(why);
    assert_int_equal(zerg_policy_error_count(p), 0);
    zerg_policy_free(p);
}

static void test_override_of_one_hook(void **state)
{
    (void)state;
    /* only stale.task: stale.worker stays the bundled one, silently */
    write_override("stale.lua",
                   "return {task = function(t, now, o) return true, "
                   "'always' end}\n",
                   1000);
    struct zerg_policy *p = load_ok();
    zerg_json *why = NULL;
    assert_true(zerg_policy_stale_task(p, "T", 0, 0, 0, 1, &why));
    assert_string_equal(why_str(why, "reason"), "always");
    zerg_json_free(why);
    why = NULL;
    assert_false(zerg_policy_stale_worker(p, 0, 1, 0, 1, &why));
    assert_string_equal(why_str(why, "policy"), "bundled");
    zerg_json_free(why);
    assert_int_equal(zerg_policy_error_count(p), 0);
    assert_int_equal(pp.nerrors, 0);
    zerg_policy_free(p);
}

/* ---- load errors at start -------------------------------------------- */

static void test_syntax_error_at_start(void **state)
{
    (void)state;
    write_override("retry.lua",
                   "local M = {}\nfunction M.decide(\n"
                   "return M\n",
                   1000);
    const char *msg = load_fails();
    assert_true(tu_contains(msg, ".zerg/policies/retry.lua:3:"));
    assert_true(tu_contains(msg, "near 'return'"));
}

static void test_runtime_error_at_start(void **state)
{
    (void)state;
    write_override("respawn.lua", "local x = nil\nreturn x.y\n", 1000);
    const char *msg = load_fails();
    assert_true(tu_contains(msg, ".zerg/policies/respawn.lua:2:"));
    assert_true(tu_contains(msg, "attempt to index"));
}

static void test_not_a_table(void **state)
{
    (void)state;
    write_override("stale.lua", "return 42\n", 1000);
    const char *msg = load_fails();
    assert_true(tu_contains(msg, "stale.lua: a policy file must return a "
                                 "table of hooks, this one returns number"));
}

static void test_hook_typo(void **state)
{
    (void)state;
    write_override("backoff.lua",
                   "local M = {}\nfunction M.dealy(a, o) return 1 end\n"
                   "return M\n",
                   1000);
    const char *msg = load_fails();
    assert_true(tu_contains(msg, "'dealy' is not a hook of the backoff "
                                 "policy (hooks: delay)"));
    assert_true(tu_contains(msg, "did you mean 'delay'?"));
}

static void test_unknown_policy_file(void **state)
{
    (void)state;
    write_override("stail.lua", "return {}\n", 1000);
    const char *msg = load_fails();
    assert_true(tu_contains(msg, "stail.lua: no policy is called 'stail'"));
    assert_true(tu_contains(msg, "did you mean 'stale.lua'?"));
    /* other files are not policies and are left alone */
    tu_rmtree(pp.ovdir);
    write_override("README.md", "notes\n", 1000);
    write_override("backoff.lua~", "junk(", 1000);
    struct zerg_policy *p = load_ok();
    zerg_policy_free(p);
}

static void test_sandbox_applies_to_overrides(void **state)
{
    (void)state;
    write_override("backoff.lua",
                   "os.execute('touch /tmp/x')\n"
                   "return {}\n",
                   1000);
    assert_true(tu_contains(load_fails(), "unknown global 'os'"));
}

/* ---- failures at decision time --------------------------------------- */

static void test_wrong_type_falls_back(void **state)
{
    (void)state;
    write_override("backoff.lua",
                   "return {delay = function(a, o) return '5' end}\n", 1000);
    struct zerg_policy *p = load_ok();
    zerg_json *why = NULL;
    assert_int_equal(zerg_policy_backoff_ns(p, "spawn", 1, &why), 2 * S);
    assert_string_equal(why_str(why, "policy"), "bundled");
    assert_true(tu_contains(why_str(why, "override_error"),
                            "backoff.delay returned string, expected a "
                            "number"));
    zerg_json_free(why);
    assert_int_equal(zerg_policy_error_count(p), 1);
    assert_int_equal(pp.nerrors, 1);
    assert_true(tu_contains(pp.last_data, "\"policy\":\"backoff\""));
    assert_true(tu_contains(pp.last_data, "\"hook\":\"backoff.delay\""));
    assert_true(tu_contains(pp.last_data, "\"used\":\"bundled\""));
    assert_true(tu_contains(pp.last_data, "backoff.lua\",\"hook\""));
    assert_null(strstr(pp.last_data, "traceback")); /* only C frames */
    zerg_policy_free(p);
}

static void test_runtime_error_falls_back_with_traceback(void **state)
{
    (void)state;
    write_override("retry.lua",
                   "local M = {}\n"
                   "function M.decide(task, failure, opts)\n"
                   "    return {retry = task.nothing.x}\n"
                   "end\n"
                   "return M\n",
                   1000);
    struct zerg_policy *p = load_ok();
    struct zerg_retry_in in = {
        .task_id = "T", .failure = "crash", .exit_code = -1, .signal = 9};
    struct zerg_retry_out out;
    zerg_policy_retry(p, &in, &out, NULL);
    assert_true(out.retry);
    assert_false(out.charge);
    assert_int_equal(zerg_policy_error_count(p), 1);
    assert_true(tu_contains(pp.last_data, "retry.lua:3: attempt to index"));
    assert_true(tu_contains(pp.last_data, "stack traceback"));
    zerg_policy_free(p);
}

static void test_bad_answers_fall_back(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "return {decide = function() return {retry = 1, charge = true} "
        "end}",
        "return {decide = function() return {retry = true} end}",
        "return {decide = function() return {retry = true, charge = true, "
        "delay = 'soon'} end}",
        "return {decide = function() return {retry = true, charge = true, "
        "delay = 0/0} end}",
        "return {decide = function() return true end}",
        "return {decide = function() end}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        write_override("retry.lua", bad[i], 1000);
        struct zerg_policy *p = load_ok();
        struct zerg_retry_in in = {
            .task_id = "T", .failure = "exit", .exit_code = 1};
        struct zerg_retry_out out;
        zerg_policy_retry(p, &in, &out, NULL);
        assert_true(out.retry); /* bundled: first failure is retried */
        assert_true(out.charge);
        assert_int_equal(out.delay_ns, 30 * S);
        assert_int_equal(zerg_policy_error_count(p), 1);
        zerg_policy_free(p);
    }
}

static void test_clamps(void **state)
{
    (void)state;
    write_override("retry.lua",
                   "return {decide = function() return {retry = true, "
                   "charge = false, delay = 1e9, reason = string.rep('r', "
                   "100)} end}\n",
                   1000);
    write_override("backoff.lua", "return {delay = function() return -5 end}\n",
                   1000);
    struct zerg_policy *p = load_ok();
    zerg_json *why = NULL;
    assert_int_equal(zerg_policy_backoff_ns(p, "spawn", 1, &why), 0);
    assert_true(zerg_json_get(why, "clamped")->u.boolean);
    zerg_json_free(why);
    struct zerg_retry_in in = {.task_id = "T", .failure = "exit"};
    struct zerg_retry_out out;
    zerg_policy_retry(p, &in, &out, NULL);
    assert_int_equal(out.delay_ns, 3600 * S);
    assert_int_equal(strlen(out.reason), 63);
    assert_int_equal(zerg_policy_error_count(p), 0);
    zerg_policy_free(p);
}

static void test_runaway_override_stopped(void **state)
{
    (void)state;
    write_override("stale.lua",
                   "return {worker = function() while true do "
                   "pcall(function() while true do end end) end end}\n",
                   1000);
    cfg.policy_time_budget_ns = 0; /* the instruction budget stops it */
    struct zerg_policy *p = load_ok();
    for (int i = 0; i < 3; i++) /* stopped every time, never stuck */
        assert_true(zerg_policy_stale_worker(p, 0, 1, 0, 200 * S, NULL));
    assert_int_equal(zerg_policy_error_count(p), 3);
    assert_true(tu_contains(pp.last_data, "instruction budget exceeded"));
    zerg_policy_free(p);
}

static void test_memory_hog_override(void **state)
{
    (void)state;
    cfg.policy_memory_bytes = 4 << 20;
    /* 64 KiB a step: the cap is reached in about 64 iterations, a few
     * hundred instructions, however slow the machine */
    write_override("respawn.lua",
                   "local keep = {}\n"
                   "return {decide = function(slot, opts)\n"
                   "  for i = 1, 1e9 do keep[#keep + 1] = "
                   "string.rep('x', 65536) .. i end\n"
                   "end}\n",
                   1000);
    cfg.policy_instruction_budget = 0; /* only memory stops it */
    cfg.policy_time_budget_ns = 0;     /* not the CPU clock either */
    struct zerg_policy *p = load_ok();
    struct zerg_respawn_in in = {.slot = 0, .respawn_count = 0, .work_left = 2};
    zerg_json *why = NULL;
    assert_true(zerg_policy_respawn(p, &in, &why)); /* bundled decided */
    assert_string_equal(why_str(why, "policy"), "bundled");
    assert_true(
        tu_contains(why_str(why, "override_error"), "not enough memory"));
    zerg_json_free(why);
    /* the hog kept its memory; the bundled VM is separate and fine */
    assert_int_equal(zerg_policy_backoff_ns(p, "spawn", 1, NULL), 2 * S);
    zerg_policy_free(p);
}

static void test_infinite_delays_fall_back(void **state)
{
    (void)state;
    static const char *const bad[] = {"math.huge", "-math.huge", "1/0"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[256];
        snprintf(text, sizeof text,
                 "return {delay = function() return %s end}\n", bad[i]);
        write_override("backoff.lua", text, 1000);
        snprintf(text, sizeof text,
                 "return {decide = function() return {retry = true, "
                 "charge = true, delay = %s} end}\n",
                 bad[i]);
        write_override("retry.lua", text, 1000);
        struct zerg_policy *p = load_ok();
        zerg_json *why = NULL;
        assert_int_equal(zerg_policy_backoff_ns(p, "spawn", 1, &why), 2 * S);
        assert_string_equal(why_str(why, "policy"), "bundled");
        assert_true(tu_contains(why_str(why, "override_error"), "inf"));
        zerg_json_free(why);
        struct zerg_retry_in in = {
            .task_id = "T", .failure = "exit", .exit_code = 1};
        struct zerg_retry_out out;
        zerg_policy_retry(p, &in, &out, NULL);
        assert_int_equal(out.delay_ns, 30 * S); /* the bundled answer */
        /* backoff.delay, retry.decide (and backoff again if the retry
         * path asks it) */
        assert_true(zerg_policy_error_count(p) >= 2);
        assert_true(tu_contains(pp.last_data, "as a delay"));
        zerg_policy_free(p);
    }
}

/* A hook stuck in one string.find: the budget still ends it. */
static void test_catastrophic_pattern_in_hook(void **state)
{
    (void)state;
    write_override("retry.lua",
                   "local s = string.rep('a', 30) .. 'b'\n"
                   "local p = string.rep('a?', 30) .. string.rep('a', 30)\n"
                   "return {decide = function()\n"
                   "  return {retry = s:find(p) ~= nil, charge = true}\n"
                   "end}\n",
                   1000);
    struct zerg_policy *p = load_ok();
    struct zerg_retry_in in = {
        .task_id = "T", .failure = "exit", .exit_code = 1};
    struct zerg_retry_out out;
    zerg_json *why = NULL;
    zerg_policy_retry(p, &in, &out, &why);
    assert_true(out.retry); /* the bundled decision */
    assert_string_equal(why_str(why, "policy"), "bundled");
    zerg_json_free(why);
    assert_int_equal(zerg_policy_error_count(p), 1);
    assert_true(tu_contains(pp.last_data, "budget exceeded"));
    assert_true(tu_contains(pp.last_data, "retry.lua:4:"));
    zerg_policy_free(p);
}

/* One override tampering with the string library at load time cannot
 * change what another one, or the bundled module it wraps, computes. */
static void test_override_cannot_change_libraries(void **state)
{
    (void)state;
    write_override("respawn.lua",
                   "pcall(function() string.format = function() "
                   "return 'hacked' end end)\n"
                   "pcall(rawset, string, 'format', nil)\n"
                   "pcall(function() getmetatable('').__index.rep = nil end)\n"
                   "return {}\n",
                   1000);
    write_override("stale.lua",
                   "local base = require('policies.stale')\n"
                   "return {task = function(...) return base.task(...) end}\n",
                   1000);
    struct zerg_policy *p = load_ok();
    zerg_json *why = NULL;
    assert_true(zerg_policy_stale_task(p, "T", 0, 0, 0, 1000 * S, &why));
    assert_string_equal(why_str(why, "policy"), "override");
    assert_true(tu_contains(why_str(why, "reason"), "no progress for"));
    zerg_json_free(why);
    assert_int_equal(zerg_policy_error_count(p), 0);
    zerg_policy_free(p);
}

static void test_reconcile_unknown_fix_dropped(void **state)
{
    (void)state;
    write_override("reconcile.lua",
                   "return {check = function(s, o) return {\n"
                   "  {task = 'A', fix = 'requeue', reason = 'r1'},\n"
                   "  {task = 'A', fix = 'frobnicate'},\n"
                   "  {level = 0, fix = 'reopen_level'},\n"
                   "  {level = 2, fix = 'complete_level', reason = 'r2'},\n"
                   "} end}\n",
                   1000);
    struct zerg_policy *p = load_ok();
    struct zerg_fix *fixes = NULL;
    size_t n = 0;
    zerg_json *why = NULL;
    zerg_policy_reconcile(p, NULL, &fixes, &n, &why);
    assert_int_equal(n, 2);
    assert_string_equal(fixes[0].fix, "requeue");
    assert_string_equal(fixes[0].task, "A");
    assert_string_equal(fixes[1].fix, "complete_level");
    assert_int_equal(fixes[1].level, 2);
    assert_true(zerg_json_get(why, "dropped")->u.number == 2);
    assert_true(tu_contains(why_str(why, "dropped_reason"),
                            "unknown fix 'frobnicate'"));
    assert_int_equal(pp.nerrors, 1);
    assert_true(tu_contains(pp.last_data, "2 fix(es) dropped"));
    free(fixes);
    zerg_json_free(why);
    zerg_policy_free(p);
}

/* ---- reload ---------------------------------------------------------- */

static const char *fixed_delay = "return {delay = function() return %d end}\n";

static void write_delay(int seconds, int mtime)
{
    char text[128];
    snprintf(text, sizeof text, fixed_delay, seconds);
    write_override("backoff.lua", text, mtime);
}

static void test_reload_picks_up_changes(void **state)
{
    (void)state;
    write_delay(7, 1000);
    struct zerg_policy *p = load_ok();
    assert_int_equal(zerg_policy_backoff_ns(p, "spawn", 1, NULL), 7 * S);
    assert_int_equal(zerg_policy_reload(p), 0); /* nothing changed */
    write_delay(9, 2000);
    assert_int_equal(zerg_policy_reload(p), 1);
    assert_int_equal(zerg_policy_backoff_ns(p, "spawn", 1, NULL), 9 * S);
    /* a new override appears */
    write_override("stale.lua",
                   "return {worker = function() return true "
                   "end}\n",
                   2000);
    assert_int_equal(zerg_policy_reload(p), 1);
    assert_true(zerg_policy_stale_worker(p, 0, 0, 0, 0, NULL));
    /* removed: back to the bundled one */
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/backoff.lua", pp.ovdir);
    unlink(path);
    assert_int_equal(zerg_policy_reload(p), 1);
    assert_int_equal(zerg_policy_backoff_ns(p, "spawn", 1, NULL), 2 * S);
    assert_true(zerg_policy_stale_worker(p, 0, 0, 0, 0, NULL));
    assert_int_equal(zerg_policy_error_count(p), 0);
    zerg_policy_free(p);
}

static void test_reload_broken_keeps_last_good(void **state)
{
    (void)state;
    write_delay(7, 1000);
    struct zerg_policy *p = load_ok();
    write_override("backoff.lua", "return {delay = function(\n", 2000);
    assert_int_equal(zerg_policy_reload(p), 0);
    assert_int_equal(zerg_policy_backoff_ns(p, "spawn", 1, NULL), 7 * S);
    assert_int_equal(zerg_policy_error_count(p), 1);
    assert_int_equal(pp.nerrors, 1);
    assert_true(tu_contains(pp.last_data, "\"used\":\"last good\""));
    assert_true(tu_contains(pp.last_data, "backoff.lua:2:"));
    /* not retried until the file changes again */
    assert_int_equal(zerg_policy_reload(p), 0);
    assert_int_equal(zerg_policy_error_count(p), 1);
    /* a typo'd hook is broken too */
    write_override("backoff.lua", "return {dealy = function() end}\n", 3000);
    assert_int_equal(zerg_policy_reload(p), 0);
    assert_true(tu_contains(pp.last_data, "did you mean 'delay'?"));
    assert_int_equal(zerg_policy_backoff_ns(p, "spawn", 1, NULL), 7 * S);
    /* fixed: picked up */
    write_delay(11, 4000);
    assert_int_equal(zerg_policy_reload(p), 1);
    assert_int_equal(zerg_policy_backoff_ns(p, "spawn", 1, NULL), 11 * S);
    zerg_policy_free(p);
}

static void test_reload_broken_new_file_uses_bundled(void **state)
{
    (void)state;
    write_delay(7, 1000);
    struct zerg_policy *p = load_ok();
    write_override("stale.lua", "syntax error here\n", 2000);
    assert_int_equal(zerg_policy_reload(p), 0);
    assert_true(tu_contains(pp.last_data, "\"used\":\"bundled\""));
    /* the good one is untouched */
    assert_int_equal(zerg_policy_backoff_ns(p, "spawn", 1, NULL), 7 * S);
    assert_false(zerg_policy_stale_worker(p, 0, 0, 0, 1, NULL));
    zerg_policy_free(p);
}

static void test_reload_fresh_vm(void **state)
{
    (void)state;
    /* module state does not survive a reload: each version starts clean */
    write_override("backoff.lua",
                   "local n = 0\n"
                   "return {delay = function() n = n + 1 return n end}\n",
                   1000);
    struct zerg_policy *p = load_ok();
    assert_int_equal(zerg_policy_backoff_ns(p, "spawn", 1, NULL), 1 * S);
    assert_int_equal(zerg_policy_backoff_ns(p, "spawn", 1, NULL), 2 * S);
    write_override("backoff.lua",
                   "local n = 10\n"
                   "return {delay = function() n = n + 1 return n end}\n",
                   2000);
    assert_int_equal(zerg_policy_reload(p), 1);
    assert_int_equal(zerg_policy_backoff_ns(p, "spawn", 1, NULL), 11 * S);
    zerg_policy_free(p);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_missing_dir_is_fine),
        T(test_override_wraps_default),
        T(test_override_of_one_hook),
        T(test_syntax_error_at_start),
        T(test_runtime_error_at_start),
        T(test_not_a_table),
        T(test_hook_typo),
        T(test_unknown_policy_file),
        T(test_sandbox_applies_to_overrides),
        T(test_wrong_type_falls_back),
        T(test_runtime_error_falls_back_with_traceback),
        T(test_bad_answers_fall_back),
        T(test_clamps),
        T(test_runaway_override_stopped),
        T(test_memory_hog_override),
        T(test_infinite_delays_fall_back),
        T(test_catastrophic_pattern_in_hook),
        T(test_override_cannot_change_libraries),
        T(test_reconcile_unknown_fix_dropped),
        T(test_reload_picks_up_changes),
        T(test_reload_broken_keeps_last_good),
        T(test_reload_broken_new_file_uses_bundled),
        T(test_reload_fresh_vm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
