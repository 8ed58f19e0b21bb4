/* test_sandbox.c - the Lua sandbox (src/lua/vm.c, src/lua/convert.c): what
 * a policy can reach, the budgets that stop runaway code, and that the VM
 * keeps working after each stop.  These are the classic sandbox regressions
 * (Redis' scripting tests, HAProxy's hlua budgets), plus the library calls
 * that run long inside C (src/lua/sandbox_lib.c, sandbox_match.c) and the
 * read-only library tables. */
#include "testutil.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua/vm.h"
#include "zerg/err.h"

static char last_err[ZERG_ERR_MSG_MAX];

static struct zerg_vm *vm_with(enum zerg_vm_mode mode, int64_t insns,
                               int64_t mem)
{
    struct zerg_vm_opts o = {
        .mode = mode, .instruction_budget = insns, .memory_bytes = mem};
    struct zerg_err err = {0};
    struct zerg_vm *vm = zerg_vm_new(&o, &err);
    if (!vm)
        fail_msg("zerg_vm_new: %s", err.msg);
    return vm;
}

static struct zerg_vm *policy_vm(void)
{
    return vm_with(ZERG_VM_POLICY, 100000, 8 << 20);
}

/* Runs code that must fail; returns the message. */
static const char *run_fail(struct zerg_vm *vm, const char *code)
{
    struct zerg_err err = {0};
    int rc = zerg_vm_exec(vm, "test", code, NULL, &err);
    if (rc == 0)
        fail_msg("expected an error from: %s", code);
    assert_int_equal(rc, ZERG_EPOLICY);
    snprintf(last_err, sizeof last_err, "%s", err.msg);
    return last_err;
}

/* Runs code that must succeed and returns its first result. */
static zerg_json *run_ok(struct zerg_vm *vm, const char *code)
{
    struct zerg_err err = {0};
    zerg_json *v = NULL;
    if (zerg_vm_exec(vm, "test", code, &v, &err) != 0)
        fail_msg("%s failed: %s", code, err.msg);
    return v;
}

static double run_num(struct zerg_vm *vm, const char *code)
{
    zerg_json *v = run_ok(vm, code);
    assert_int_equal(v->type, ZERG_JSON_NUMBER);
    double x = v->u.number;
    zerg_json_free(v);
    return x;
}

static void assert_usable(struct zerg_vm *vm)
{
    assert_true(run_num(vm, "return 40 + 2") == 42);
}

/* ---- what is (not) in scope ----------------------------------------- */

static void test_unknown_global_read_raises(void **state)
{
    (void)state;
    struct zerg_vm *vm = policy_vm();
    const char *msg = run_fail(vm, "local x = 1\nreturn foo");
    assert_true(tu_contains(msg, "unknown global 'foo'"));
    assert_true(tu_contains(msg, "test:2:")); /* points at the line */
    assert_usable(vm);
    zerg_vm_free(vm);
}

static void test_dangerous_globals_absent(void **state)
{
    (void)state;
    static const char *const absent[] = {
        "io",        "os",   "dofile", "loadfile",   "package", "debug",
        "coroutine", "warn", "module", "loadstring", "setfenv", NULL,
    };
    struct zerg_vm *vm = policy_vm();
    for (const char *const *n = absent; *n; n++) {
        char code[64], want[64];
        snprintf(code, sizeof code, "return %s", *n);
        snprintf(want, sizeof want, "unknown global '%s'", *n);
        assert_true(tu_contains(run_fail(vm, code), want));
    }
    zerg_vm_free(vm);
}

static void test_libraries_trimmed(void **state)
{
    (void)state;
    struct zerg_vm *vm = policy_vm();
    zerg_json *v = run_ok(vm, "return {string.dump == nil, "
                              "math.randomseed == nil, "
                              "(\"\").dump == nil, "
                              "type(string.format), type(table.sort), "
                              "type(utf8.char), type(math.floor)}");
    for (int i = 0; i < 3; i++) {
        assert_int_equal(zerg_json_at(v, i)->type, ZERG_JSON_BOOL);
        assert_true(zerg_json_at(v, i)->u.boolean);
    }
    for (int i = 3; i < 7; i++)
        assert_string_equal(zerg_json_as_str(zerg_json_at(v, i)), "function");
    zerg_json_free(v);
    assert_true(tu_contains(run_fail(vm, "collectgarbage('stop')"),
                            "option 'stop' is not allowed"));
    assert_true(run_num(vm, "return collectgarbage('count') > 0 and 1 "
                            "or 0") == 1);
    zerg_vm_free(vm);
}

static void test_load_refuses_bytecode(void **state)
{
    (void)state;
    struct zerg_vm *vm = policy_vm();
    zerg_json *v = run_ok(vm, "local f, msg = load('\\27LuaT\\0\\25') "
                              "return msg");
    assert_true(tu_contains(zerg_json_as_str(v), "binary chunk"));
    zerg_json_free(v);
    assert_true(tu_contains(run_fail(vm, "return load(function() end)"),
                            "only strings"));
    zerg_vm_free(vm);
}

static void test_load_gets_the_sandbox(void **state)
{
    (void)state;
    struct zerg_vm *vm = policy_vm();
    assert_true(tu_contains(run_fail(vm, "return load('return io')()"),
                            "unknown global 'io'"));
    assert_true(run_num(vm, "return load('return x', 'c', 't', "
                            "{x = 7})()") == 7);
    zerg_vm_free(vm);
}

static void test_env_protected(void **state)
{
    (void)state;
    struct zerg_vm *vm = policy_vm();
    assert_true(tu_contains(run_fail(vm, "setmetatable(_ENV, nil)"),
                            "protected metatable"));
    assert_true(tu_contains(run_fail(vm, "x = 1"),
                            "assignment to undeclared global 'x'"));
    assert_true(tu_contains(run_fail(vm, "setmetatable({}, {__gc = "
                                         "function() end})"),
                            "__gc is not allowed"));
    zerg_json *v = run_ok(vm, "return getmetatable(_ENV)");
    assert_string_equal(zerg_json_as_str(v), "sandbox");
    zerg_json_free(v);
    zerg_vm_free(vm);
}

static void test_repl_mode_globals_writable(void **state)
{
    (void)state;
    struct zerg_vm *vm = vm_with(ZERG_VM_REPL, 0, 0);
    assert_true(run_num(vm, "x = 5; return x") == 5);
    assert_true(run_num(vm, "return x + 1") == 6); /* kept between chunks */
    zerg_json *v = run_ok(vm, "x = nil; return x");
    assert_int_equal(v->type, ZERG_JSON_NULL);
    zerg_json_free(v);
    assert_true(tu_contains(run_fail(vm, "return y"), "unknown global 'y'"));
    zerg_vm_free(vm);
}

static void test_random_is_seeded(void **state)
{
    (void)state;
    const char *code = "local t = {} for i = 1, 5 do "
                       "t[i] = math.random(1, 1000000) end return t";
    struct zerg_vm *a = policy_vm(), *b = policy_vm();
    zerg_json *x = run_ok(a, code), *y = run_ok(b, code);
    char *sx = zerg_json_encode(x, NULL, NULL);
    char *sy = zerg_json_encode(y, NULL, NULL);
    assert_string_equal(sx, sy);
    free(sx);
    free(sy);
    zerg_json_free(x);
    zerg_json_free(y);
    zerg_vm_free(a);
    zerg_vm_free(b);
}

/* ---- require --------------------------------------------------------- */

static void test_require_bundled(void **state)
{
    (void)state;
    struct zerg_vm *vm = policy_vm();
    assert_true(run_num(vm, "return require('zerg.util')"
                            ".level_from_id('A-L3-007')") == 3);
    assert_true(run_num(vm, "return require('policies.backoff')"
                            ".delay(2, {strategy = 'exponential', "
                            "base = 2, max = 30})") == 4);
    /* the same table every time */
    zerg_json *v = run_ok(vm, "return require('zerg.util') == "
                              "require('zerg.util')");
    assert_true(v->u.boolean);
    zerg_json_free(v);
    const char *msg = run_fail(vm, "require('os')");
    assert_true(tu_contains(msg, "module 'os' not found"));
    assert_true(tu_contains(msg, "policies.backoff"));
    assert_true(tu_contains(msg, "zerg.util"));
    zerg_vm_free(vm);
}

static void test_traceback_names_bundled_file(void **state)
{
    (void)state;
    struct zerg_vm *vm = policy_vm();
    const char *msg = run_fail(vm, "return require('policies.backoff')"
                                   ".delay(1, {strategy = 'linear'})");
    assert_true(tu_contains(msg, "policies/backoff.lua:"));
    assert_true(tu_contains(msg, "stack traceback"));
    zerg_vm_free(vm);
}

/* ---- budgets --------------------------------------------------------- */

static void test_infinite_loop_stopped(void **state)
{
    (void)state;
    struct zerg_vm *vm = policy_vm();
    assert_true(tu_contains(run_fail(vm, "while true do end"),
                            "instruction budget exceeded"));
    assert_usable(vm);
    zerg_vm_free(vm);
}

static void test_pcall_cannot_swallow_budget(void **state)
{
    (void)state;
    struct zerg_vm *vm = policy_vm();
    /* Once tripped, the very next instruction raises again: a script that
     * catches the budget error cannot go on to count its catches.  (With
     * the hook left at its usual period it would, and return 101.) */
    assert_true(tu_contains(
        run_fail(vm, "local n = 0 while true do pcall(function() while true "
                     "do end end) n = n + 1 if n > 100 then return n end end"),
        "instruction budget exceeded"));
    assert_usable(vm);
    assert_true(tu_contains(
        run_fail(vm, "while true do pcall(function() while true do end "
                     "end) end"),
        "instruction budget exceeded"));
    assert_usable(vm);
    assert_true(tu_contains(
        run_fail(vm, "while true do xpcall(function() while true do end "
                     "end, function() while true do end end) end"),
        "budget exceeded"));
    assert_usable(vm);
    /* code that runs while an error unwinds is budgeted too */
    assert_true(tu_contains(
        run_fail(vm, "error(setmetatable({}, {__tostring = function() "
                     "while true do end end}))"),
        "budget exceeded"));
    assert_true(tu_contains(
        run_fail(vm, "do local x <close> = setmetatable({}, {__close = "
                     "function() while true do end end}) error('e') end"),
        "budget exceeded"));
    assert_usable(vm);
    /* an ordinary xpcall still calls its handler */
    zerg_json *v = run_ok(vm, "local ok, m = xpcall(error, function(m) "
                              "return 'h:' .. m end, 'boom', 0) return m");
    assert_string_equal(zerg_json_as_str(v), "h:boom");
    zerg_json_free(v);
    zerg_vm_free(vm);
}

static void test_budget_is_per_call(void **state)
{
    (void)state;
    struct zerg_vm *vm = policy_vm(); /* 100000 instructions per call */
    /* ~40000 instructions each: fine alone, fine repeated */
    for (int i = 0; i < 10; i++)
        assert_true(run_num(vm, "local s = 0 for i = 1, 10000 do "
                                "s = s + i end return s") == 50005000);
    zerg_vm_free(vm);
}

static void test_memory_bomb_stopped(void **state)
{
    (void)state;
    struct zerg_vm *vm = policy_vm(); /* 8 MiB */
    assert_true(
        tu_contains(run_fail(vm, "local t = {} for i = 1, 64 do "
                                 "t[i] = string.rep('x', 1 << 20) .. i end"),
                    "not enough memory"));
    assert_usable(vm);
    assert_true(
        tu_contains(run_fail(vm, "return string.rep('x', 1 << 30)"), "memory"));
    assert_usable(vm);
    assert_true(
        tu_contains(run_fail(vm, "local s = 'x' while true do s = s .. s end"),
                    "not enough memory"));
    assert_usable(vm);
    assert_true(zerg_vm_memory(vm) < (4u << 20)); /* the garbage is gone */
    zerg_vm_free(vm);
}

static int64_t fake_cpu(void *ctx)
{
    int64_t *t = ctx;
    return *t += 1000000; /* every look costs 1 ms */
}

static void test_time_budget(void **state)
{
    (void)state;
    int64_t t = 0;
    struct zerg_vm_opts o = {.mode = ZERG_VM_POLICY,
                             .time_budget_ns = 50 * 1000000,
                             .cpu_ns = fake_cpu,
                             .cpu_ctx = &t};
    struct zerg_vm *vm = zerg_vm_new(&o, NULL);
    assert_non_null(vm);
    assert_true(tu_contains(run_fail(vm, "while true do end"),
                            "time budget exceeded (50.000 ms"));
    assert_usable(vm);
    zerg_vm_free(vm);
}

static void test_interrupt(void **state)
{
    (void)state;
    volatile sig_atomic_t flag = 1;
    struct zerg_vm_opts o = {.mode = ZERG_VM_REPL, .interrupt = &flag};
    struct zerg_vm *vm = zerg_vm_new(&o, NULL);
    assert_non_null(vm);
    assert_true(tu_contains(run_fail(vm, "while true do pcall(print) end"),
                            "interrupted"));
    flag = 0;
    assert_usable(vm);
    zerg_vm_free(vm);
}

/* ---- C library calls the hook cannot see ---------------------------- */

/* A subject of 31 bytes and a pattern that backtracks 2^30 times. */
#define CATASTROPHIC                                                           \
    "local s = string.rep('a', 30) .. 'b' "                                    \
    "local p = string.rep('a?', 30) .. string.rep('a', 30) "

static void test_catastrophic_patterns_stopped(void **state)
{
    (void)state;
    static const char *const hostile[] = {
        CATASTROPHIC "return string.find(s, p)",
        CATASTROPHIC "return s:match(p)",
        CATASTROPHIC "return (s:gsub(p, 'x'))",
        CATASTROPHIC "for m in s:gmatch(p) do end",
        "return string.rep('a', 3000):find('(.-)(.-)(.-)(.-)x')",
        "return string.rep('(', 5000):find('%b()')",
        CATASTROPHIC "while true do pcall(string.find, s, p) end",
    };
    struct zerg_vm *vm = policy_vm();
    for (size_t i = 0; i < sizeof hostile / sizeof *hostile; i++) {
        assert_true(tu_contains(run_fail(vm, hostile[i]),
                                "instruction budget exceeded"));
        assert_usable(vm);
    }
    zerg_vm_free(vm);
}

static void test_catastrophic_pattern_time_and_interrupt(void **state)
{
    (void)state;
    int64_t t = 0;
    struct zerg_vm_opts o = {.mode = ZERG_VM_POLICY,
                             .time_budget_ns = 50 * 1000000,
                             .cpu_ns = fake_cpu,
                             .cpu_ctx = &t};
    struct zerg_vm *vm = zerg_vm_new(&o, NULL);
    assert_non_null(vm);
    assert_true(tu_contains(run_fail(vm, CATASTROPHIC "return s:find(p)"),
                            "time budget exceeded"));
    zerg_vm_free(vm);
    volatile sig_atomic_t flag = 0;
    struct zerg_vm_opts r = {.mode = ZERG_VM_REPL, .interrupt = &flag};
    vm = zerg_vm_new(&r, NULL);
    assert_non_null(vm);
    flag = 1; /* Ctrl-C reaches a match in progress */
    assert_true(tu_contains(run_fail(vm, CATASTROPHIC "return s:find(p)"),
                            "interrupted"));
    zerg_vm_free(vm);
}

static void test_rep_bounded(void **state)
{
    (void)state;
    struct zerg_vm *vm = policy_vm(); /* 8 MiB */
    assert_true(run_num(vm, "return #string.rep('', 1e18)") == 0);
    assert_true(run_num(vm, "return #(''):rep(1e18, '')") == 0);
    assert_true(
        tu_contains(run_fail(vm, "return ('xxxx'):rep(1 << 62)"), "too large"));
    assert_true(tu_contains(run_fail(vm, "return ('x'):rep(1e18)"),
                            "more than the memory budget"));
    assert_true(tu_contains(run_fail(vm, "return ('x'):rep(1 << 40)"),
                            "more than the memory budget"));
    assert_true(tu_contains(run_fail(vm, "return (''):rep(1e15, ',')"),
                            "more than the memory budget"));
    zerg_json *v = run_ok(vm, "return ('ab'):rep(3, ',')");
    assert_string_equal(zerg_json_as_str(v), "ab,ab,ab");
    zerg_json_free(v);
    zerg_vm_free(vm);
}

static void test_table_walks_bounded(void **state)
{
    (void)state;
    static const char *const hostile[] = {
        /* __index a C function that answers "" for every index */
        "return table.concat(setmetatable({}, {__index = table.concat}), "
        "'', 1, 1e18)",
        "local t = setmetatable({}, {__len = function() return 1e15 end}) "
        "table.insert(t, 1, 0)",
        "local t = setmetatable({}, {__len = function() return 1e15 end}) "
        "table.remove(t, 1)",
        "table.move({}, 1, 1e15, 2)",
        "local t = setmetatable({}, {__len = function() return 2^30 end, "
        "__index = tostring}) table.sort(t)",
    };
    struct zerg_vm *vm = policy_vm();
    for (size_t i = 0; i < sizeof hostile / sizeof *hostile; i++) {
        assert_true(tu_contains(run_fail(vm, hostile[i]),
                                "instruction budget exceeded"));
        assert_usable(vm);
    }
    assert_true(tu_contains(run_fail(vm, "return table.unpack({}, 1, 1e8)"),
                            "too many results"));
    assert_true(tu_contains(run_fail(vm, "return string.format('%99999d', "
                                         "1)"),
                            "invalid conversion"));
    assert_true(run_num(vm,
                        "return utf8.len(utf8.char(table.unpack((function() "
                        "local t = {} for i = 1, 5000 do t[i] = 0x4e00 + i end "
                        "return t end)())))") == 5000);
    zerg_vm_free(vm);
}

static void test_ordinary_string_use(void **state)
{
    (void)state;
    struct zerg_vm *vm = policy_vm();
    zerg_json *v = run_ok(
        vm, "local u = require('zerg.util') "
            "local k = {} for w in ('b a c'):gmatch('%a') do k[#k + 1] = w "
            "end table.sort(k) "
            "return {u.level_from_id('F-L12-001'), table.concat(k, ','), "
            "string.format('%-4s|%5.1f', 'ab', 2.25), "
            "(' x '):match('^%s*(.-)%s*$'), ('a-b'):gsub('%-', '+'), "
            "require('zerg.inspect').format({1, 'two', k = true})}");
    char *s = zerg_json_encode(v, NULL, NULL);
    assert_string_equal(s, "[12,\"a,b,c\",\"ab  |  2.2\",\"x\",\"a+b\","
                           "\"{1, \\\"two\\\", k = true}\"]");
    free(s);
    zerg_json_free(v);
    zerg_vm_free(vm);
}

/* ---- shared tables ---------------------------------------------------- */

static void test_library_tables_read_only(void **state)
{
    (void)state;
    static const char *const writes[] = {
        "string.format = nil",
        "rawset(string, 'format', nil)",
        "getmetatable('').__index.format = nil",
        "table.insert(math, 1)",
    };
    struct zerg_vm *vm = vm_with(ZERG_VM_REPL, 0, 0);
    for (size_t i = 0; i < sizeof writes / sizeof *writes; i++) {
        const char *msg = run_fail(vm, writes[i]);
        assert_true(tu_contains(msg, "read-only"));
    }
    assert_true(tu_contains(run_fail(vm, "setmetatable(utf8, {})"),
                            "protected metatable"));
    assert_true(tu_contains(run_fail(vm, "print = nil"),
                            "cannot replace the built-in 'print'"));
    assert_true(tu_contains(run_fail(vm, "rawset(_G, 'string', {})"),
                            "cannot replace the built-in 'string'"));
    zerg_json *v = run_ok(vm, "local n = 0 for k in pairs(string) do "
                              "n = n + 1 end "
                              "return {string.format('%d', 7), n > 10, "
                              "('x').rep == string.rep, "
                              "getmetatable('').__index == string}");
    char *s = zerg_json_encode(v, NULL, NULL);
    assert_string_equal(s, "[\"7\",true,true,true]");
    free(s);
    zerg_json_free(v);
    assert_true(run_num(vm, "x = 5; return x") == 5); /* globals still */
    zerg_vm_free(vm);
}

/* ---- conversion ------------------------------------------------------ */

static void test_lua_to_json(void **state)
{
    (void)state;
    struct zerg_vm *vm = policy_vm();
    zerg_json *v = run_ok(vm, "return {b = {1, 2, 'x'}, a = true, "
                              "[3] = 0.5, n = {}}");
    char *s = zerg_json_encode(v, NULL, NULL);
    assert_string_equal(s, "{\"3\":0.5,\"a\":true,\"b\":[1,2,\"x\"],"
                           "\"n\":{}}");
    free(s);
    zerg_json_free(v);
    struct zerg_err err = {0};
    assert_int_equal(zerg_vm_exec(vm, "t", "return {f = print}", &v, &err),
                     ZERG_EPOLICY);
    assert_true(tu_contains(err.msg, "function cannot be converted"));
    assert_int_equal(
        zerg_vm_exec(vm, "t", "local t = {} t.t = t return t", &v, &err),
        ZERG_EPOLICY);
    assert_true(tu_contains(err.msg, "nested too deeply"));
    zerg_vm_free(vm);
}

static void test_json_to_lua(void **state)
{
    (void)state;
    struct zerg_vm *vm = vm_with(ZERG_VM_REPL, 0, 0);
    const char *text = "{\"levels\": {\"1\": {\"status\": \"complete\"}}, "
                       "\"n\": 3, \"f\": 1.5, \"gone\": null, "
                       "\"list\": [\"a\", \"b\"]}";
    zerg_json *doc = zerg_json_parse(text, strlen(text), NULL);
    assert_non_null(doc);
    assert_int_equal(zerg_vm_set_global(vm, "doc", doc, NULL), 0);
    zerg_json_free(doc);
    zerg_json *v = run_ok(vm, "return {math.type(doc.n), math.type(doc.f), "
                              "doc.gone == nil, #doc.list, "
                              "doc.levels['1'].status}");
    char *s = zerg_json_encode(v, NULL, NULL);
    assert_string_equal(s, "[\"integer\",\"float\",true,2,\"complete\"]");
    free(s);
    zerg_json_free(v);
    zerg_vm_free(vm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unknown_global_read_raises),
        cmocka_unit_test(test_dangerous_globals_absent),
        cmocka_unit_test(test_libraries_trimmed),
        cmocka_unit_test(test_load_refuses_bytecode),
        cmocka_unit_test(test_load_gets_the_sandbox),
        cmocka_unit_test(test_env_protected),
        cmocka_unit_test(test_repl_mode_globals_writable),
        cmocka_unit_test(test_random_is_seeded),
        cmocka_unit_test(test_require_bundled),
        cmocka_unit_test(test_traceback_names_bundled_file),
        cmocka_unit_test(test_infinite_loop_stopped),
        cmocka_unit_test(test_pcall_cannot_swallow_budget),
        cmocka_unit_test(test_budget_is_per_call),
        cmocka_unit_test(test_memory_bomb_stopped),
        cmocka_unit_test(test_time_budget),
        cmocka_unit_test(test_interrupt),
        cmocka_unit_test(test_catastrophic_patterns_stopped),
        cmocka_unit_test(test_catastrophic_pattern_time_and_interrupt),
        cmocka_unit_test(test_rep_bounded),
        cmocka_unit_test(test_table_walks_bounded),
        cmocka_unit_test(test_ordinary_string_use),
        cmocka_unit_test(test_library_tables_read_only),
        cmocka_unit_test(test_lua_to_json),
        cmocka_unit_test(test_json_to_lua),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
