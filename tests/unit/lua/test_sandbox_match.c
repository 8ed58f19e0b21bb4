/* test_sandbox_match.c - the sandbox's own string.find, match, gmatch and
 * gsub (src/lua/sandbox_match.c) give what stock Lua gives: the same
 * script runs in a plain lua_State and in the sandbox, and every result
 * and error message is compared line by line. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "lua/vm.h"
#include "zerg/err.h"

/* Each line of the output is one call: "ok" or "err", then its results
 * as type:value. */
static const char SCRIPT[] =
    "local out = {}\n"
    "local function put(ok, ...)\n"
    "  local t = table.pack(...)\n"
    "  local parts = {}\n"
    "  for i = 1, t.n do\n"
    "    parts[i] = type(t[i]) .. ':' .. tostring(t[i]):gsub('\\0', '\\\\0')\n"
    "  end\n"
    "  out[#out + 1] = (ok and 'ok ' or 'err ') .. table.concat(parts, ',')\n"
    "end\n"
    "local function try(f, ...) put(pcall(f, ...)) end\n"
    "local function all(s, p, i)\n"
    "  local r = {}\n"
    "  for a, b in string.gmatch(s, p, i) do\n"
    "    r[#r + 1] = tostring(a) .. '/' .. tostring(b)\n"
    "  end\n"
    "  return table.concat(r, ' ')\n"
    "end\n"
    "local F = {\n"
    "  {'hello world', 'o w'}, {'hello', 'l+'}, {'hello', '^h'},\n"
    "  {'hello', '^e'}, {'hello', ''}, {'hello', '', 10}, {'hello', '', 6},\n"
    "  {'a.b', '.', 1, true}, {'a+b', '+', 1, true}, {'hello', '(l)(l)'},\n"
    "  {'hello', '()ll()'}, {'x = 10', '(%w+)%s*=%s*(%d+)'},\n"
    "  {'[[x]]', '%[(.-)%]'}, {'THE (quick) fox', '%((%a+)%)'},\n"
    "  {'f(a(b)c)d', '%b()'}, {'f(a(b c)d', '%b()'},\n"
    "  {'THE (quick) fox', '%f[%a]%a+', 5}, {'hello', 'l*', 3},\n"
    "  {'hello', 'l-o'}, {'aaa', 'a-b'}, {'abc', '[a-c]+'}, {'abc', '[^b]+'},\n"
    "  {'a]b', '[]]'}, {'a-b', '[a%-]+'}, {'a^b', '[%^b]+'}, {'a^b', "
    "'[b^]+'},\n"
    "  {'hello', '(h)(e)%2'}, {'abab', '(ab)%1'}, {'xabab', '(a)(b)%1%2'},\n"
    "  {'hello', 'o$'}, {'hel$lo', 'l$l'}, {'  trim me  ', '^%s*(.-)%s*$'},\n"
    "  {'key=val; k2=v2', '(%w+)=(%w+)'}, {'a\\0b', '%z'}, {'a\\0b', '\\0'},\n"
    "  {'a\\0b', '[\\0]'}, {'a\\0b', '%Z+'}, {'abc', '%a+', -2},\n"
    "  {'abc', '.', -10}, {'caf\\195\\169', '[\\128-\\255]+'},\n"
    "  {'hello', 'h?ello'}, {'ello', 'h?ello'}, {'aaab', 'a-ab'},\n"
    "  {'x', '%d?x'}, {'A1 b2', '%u%d'}, {'A1 b2', '%l%d'}, {'a.b', '%p'},\n"
    "  {'tab\\there', '%c'}, {'0x1F', '%x+', 3}, {'a,b', '%W'},\n"
    "  {'one two', '%S+$'}, {'TASK-L12-003', '%-L(%d+)%-'},\n"
    "  {'ab', '(a)(b)()'}, {'aXb', '%f[%u]'}, {'end', '%f[%z]'},\n"
    "  {'a', '%'}, {'a', '[a'}, {'a', '[a%'}, {'a', '(a'}, {'a', 'a)'},\n"
    "  {'a', '%1'}, {'a', '(a)%2'}, {'a', '%b'}, {'a', '%bx'}, {'a', '%f'},\n"
    "  {'a', '%fa'}, {'a', '(()'}, {'a', '(a%1)'}, {'', ''}, {'', 'x*'},\n"
    "  {'', '^$'}, {'abc', 'b', 0}, {'abc', 'c', 3}, {'abc', 'x', 4},\n"
    "  {'abc', '', 4}, {'abc', '', 5}, {12345, 3}, {'a*b', '*b'},\n"
    "  {'a?', 'a%?'}, {'[x]', '[[]'}, {'x', '[%a-]'}, {'-', '[%a-]'},\n"
    "}\n"
    "for _, c in ipairs(F) do\n"
    "  try(string.find, table.unpack(c, 1, 4))\n"
    "  try(string.match, c[1], c[2], c[3])\n"
    "  try(all, c[1], c[2], c[3])\n"
    "  try(string.gsub, c[1], c[2], '<%0>')\n"
    "end\n"
    "local G = {\n"
    "  {'hello world', 'o', '0'}, {'hello', '', '-'},\n"
    "  {'hello world', '(%w+)', '<%1>'}, {'hello world', '%w+', '%0 %0', 1},\n"
    "  {'abc', '%w', {a = '1', b = false}}, {'abc', '%w', {a = 1}},\n"
    "  {'abc', '%w', {a = true}}, {'abc', '%w', string.upper},\n"
    "  {'abc', '%w', function() end}, {'abc', '(%w)(%w)', function(a, b)\n"
    "    return b .. a end}, {'hello', '^h', 'H'}, {'hello', 'l', '%%'},\n"
    "  {'abc', '()', '%1'}, {'aaa', 'a*', '-'}, {'abc', 'b*', '-'},\n"
    "  {'x', 'x', 5}, {'abc', '%w', '%2'}, {'abc', '%w', '%x'},\n"
    "  {'abc', '%w', '%'}, {'abc', '%w', true}, {'abc', 'b', 'B', 0},\n"
    "  {'abab', 'ab', 'X', 1}, {'hello world', 'o', '0', -1},\n"
    "  {'k=v', '(%w+)=(%w+)', '%2=%1'}, {'a b', '%s', '%0%0%0'},\n"
    "}\n"
    "for _, c in ipairs(G) do try(string.gsub, c[1], c[2], c[3], c[4]) end\n"
    "try(('hello'):find('l'))\n"
    "try(function() return ('x=1'):match('(%w)=(%d)') end)\n"
    "try(function() return ('a,b'):gsub(',', ';') end)\n"
    "local function show(t)\n"
    "  local r = {}\n"
    "  for i = 1, #t do r[i] = tostring(t[i]) end\n"
    "  return table.concat(r, ' ')\n"
    "end\n"
    "local function sorted(t, f) table.sort(t, f) return show(t) end\n"
    "try(table.concat, {1, 2, 'x'}, ', ')\n"
    "try(table.concat, {1, 2, 3}, '-', 2, 3)\n"
    "try(table.concat, {1, {}, 3})\n"
    "try(table.concat, {}, 'x', 3, 1)\n"
    "try(table.unpack, {1, 2, 3})\n"
    "try(table.unpack, {1, 2, 3}, 2)\n"
    "try(table.unpack, {1, 2, 3}, -1, 1)\n"
    "try(table.unpack, {}, 1, 1e8)\n"
    "try(function() local t = {1, 2, 3} table.insert(t, 4)\n"
    "  table.insert(t, 1, 0) table.insert(t, 3, 'm') return show(t) end)\n"
    "try(table.insert, {1}, 5, 2)\n"
    "try(table.insert, {1}, 1, 2, 3)\n"
    "try(function() local t = {1, 2, 3, 4} local a = table.remove(t)\n"
    "  local b = table.remove(t, 1) return a, b, show(t) end)\n"
    "try(table.remove, {}, 0)\n"
    "try(table.remove, {1}, 5)\n"
    "try(function() return show(table.move({1, 2, 3}, 1, 3, 2)) end)\n"
    "try(function() return show(table.move({1, 2, 3}, 2, 3, 1)) end)\n"
    "try(function() return show(table.move({1, 2, 3}, 1, 3, 3, {})) end)\n"
    "try(table.move, {}, 1, math.maxinteger, 2)\n"
    "try(sorted, {5, 2, 8, 1, 9, 3})\n"
    "try(sorted, {5, 2, 8, 1, 9, 3}, function(a, b) return a > b end)\n"
    "try(sorted, {'b', 'a', 'c', 'a'})\n"
    "try(sorted, {})\n"
    "try(table.sort, {3, 2, 1}, 5)\n"
    "local big = {}\n"
    "for i = 1, 200 do big[i] = (i * 7919) % 101 end\n"
    "try(sorted, big)\n"
    "try(string.find)\n"
    "try(string.gsub, 'x', 'x')\n"
    "return table.concat(out, '\\n')\n";

static char *run_stock(void)
{
    lua_State *L = luaL_newstate();
    assert_non_null(L);
    luaL_openlibs(L);
    if (luaL_loadbuffer(L, SCRIPT, strlen(SCRIPT), "=script") != LUA_OK ||
        lua_pcall(L, 0, 1, 0) != LUA_OK)
        fail_msg("stock Lua: %s", lua_tostring(L, -1));
    char *s = strdup(lua_tostring(L, -1)); /* no NULs: put() escapes them */
    lua_close(L);
    return s;
}

static char *run_sandbox(void)
{
    struct zerg_vm_opts o = {.mode = ZERG_VM_POLICY,
                             .instruction_budget = 10000000,
                             .memory_bytes = 8 << 20};
    struct zerg_err err = {0};
    struct zerg_vm *vm = zerg_vm_new(&o, &err);
    if (!vm)
        fail_msg("zerg_vm_new: %s", err.msg);
    zerg_json *v = NULL;
    if (zerg_vm_exec(vm, "script", SCRIPT, &v, &err) != 0)
        fail_msg("sandbox: %s", err.msg);
    char *s = strdup(zerg_json_as_str(v));
    zerg_json_free(v);
    zerg_vm_free(vm);
    return s;
}

/* Compares line by line so a difference names the call. */
static void test_same_results_as_stock_lua(void **state)
{
    (void)state;
    char *want = run_stock(), *got = run_sandbox();
    char *sw = NULL, *sg = NULL;
    char *lw = strtok_r(want, "\n", &sw), *lg = strtok_r(got, "\n", &sg);
    int line = 1, bad = 0;
    for (; lw || lg; line++) {
        if (!lw || !lg || strcmp(lw, lg) != 0) {
            print_error("line %d:\n  stock:   %s\n  sandbox: %s\n", line,
                        lw ? lw : "(none)", lg ? lg : "(none)");
            bad++;
        }
        lw = lw ? strtok_r(NULL, "\n", &sw) : NULL;
        lg = lg ? strtok_r(NULL, "\n", &sg) : NULL;
    }
    assert_true(line > 300); /* the script ran to its end */
    free(want);
    free(got);
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_results_as_stock_lua),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
