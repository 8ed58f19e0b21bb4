/* test_convert.c - the one Lua <-> tree converter (src/lua/convert.c),
 * checked against the JSON text layer (src/base/json_text.c): a Lua table
 * a policy returns and the same data parsed from text must give the same
 * tree: one nesting limit, the 2^53 integer limit, empty tables, sorted
 * keys, NUL keys.  Last, what the empty-table rule
 * means for the readers of decoded files (graph, state, retry request). */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "lua/convert.h"
#include "zerg/err.h"
#include "zerg/graph.h"
#include "zerg/json.h"
#include "zerg/retry.h"
#include "zerg/state.h"

static char errbuf[512];

static lua_State *lua_new(void)
{
    lua_State *L = luaL_newstate();
    assert_non_null(L);
    luaL_openlibs(L);
    return L;
}

/* Runs code and converts its result; rc from zerg_lua_to_tree. */
static int lua_tree(lua_State *L, const char *code, zerg_json **out)
{
    if (luaL_dostring(L, code) != LUA_OK)
        fail_msg("%s: %s", code, lua_tostring(L, -1));
    int top = lua_gettop(L);
    int rc = zerg_lua_to_tree(L, -1, out, errbuf, sizeof errbuf);
    assert_int_equal(lua_gettop(L), top); /* the stack is left alone */
    lua_settop(L, 0);
    return rc;
}

static zerg_json *lua_ok(lua_State *L, const char *code)
{
    zerg_json *v = NULL;
    if (lua_tree(L, code, &v) != 0)
        fail_msg("%s: %s", code, errbuf);
    return v;
}

static zerg_json *text_ok(const char *text)
{
    struct zerg_err err = {0};
    zerg_json *v = zerg_json_parse(text, strlen(text), &err);
    if (!v)
        fail_msg("parse of %.60s failed: %s", text, err.msg);
    return v;
}

static char *enc(const zerg_json *v)
{
    struct zerg_err err = {0};
    char *s = zerg_json_encode(v, NULL, &err);
    if (!s)
        fail_msg("encode failed: %s", err.msg);
    return s;
}

/* Both paths give trees that encode to want. */
static void assert_both(lua_State *L, const char *code, const char *text,
                        const char *want)
{
    zerg_json *a = lua_ok(L, code), *b = text_ok(text);
    char *sa = enc(a), *sb = enc(b);
    assert_string_equal(sa, want);
    assert_string_equal(sb, want);
    free(sa);
    free(sb);
    zerg_json_free(a);
    zerg_json_free(b);
}

/* "[[[...1...]]]" nested depth deep. */
static char *nested_text(int depth)
{
    char *s = malloc((size_t)depth * 2 + 2);
    memset(s, '[', (size_t)depth);
    s[depth] = '1';
    memset(s + depth + 1, ']', (size_t)depth);
    s[depth * 2 + 1] = '\0';
    return s;
}

/* A Lua chunk returning the same nesting as nested_text(depth). */
static const char *nested_code(int depth)
{
    static char code[128];
    snprintf(code, sizeof code,
             "local t = {1} for i = 2, %d do t = {t} end return t", depth);
    return code;
}

static void test_depth_limit_both_paths(void **state)
{
    (void)state;
    lua_State *L = lua_new();
    int max = ZERG_JSON_MAX_DEPTH;

    char *text = nested_text(max);
    zerg_json *a = lua_ok(L, nested_code(max)), *b = text_ok(text);
    char *sa = enc(a), *sb = enc(b);
    assert_string_equal(sa, text);
    assert_string_equal(sb, text);
    free(sa);
    free(sb);
    free(text);
    zerg_json_free(b);

    /* One level more: refused with the limit named, both ways. */
    zerg_json *v = NULL;
    assert_int_equal(lua_tree(L, nested_code(max + 1), &v), -EINVAL);
    assert_null(v);
    assert_true(tu_contains(errbuf, "tables nested too deeply (more than "
                                    "100 levels, or a cycle)"));
    text = nested_text(max + 1);
    struct zerg_err err = {0};
    assert_null(zerg_json_parse(text, strlen(text), &err));
    assert_int_equal(err.code, ZERG_ECORRUPT);
    assert_true(tu_contains(err.msg, "nested too deeply (more than 100 "
                                     "levels)"));
    free(text);

    /* A cycle is the same error, not a crash. */
    assert_int_equal(lua_tree(L, "local t = {} t.t = t return t", &v), -EINVAL);
    assert_true(tu_contains(errbuf, "nested too deeply"));

    zerg_json_free(a);
    lua_close(L);
}

/* Protected: pushes the tree in the light userdata at 1. */
static int push_tree(lua_State *L)
{
    zerg_lua_push_json(L, lua_touserdata(L, 1));
    return 1;
}

static void test_tree_to_lua_depth(void **state)
{
    (void)state;
    /* The 100-deep tree goes in; wrapped once more it is refused with a
     * Lua error (every caller runs it protected). */
    lua_State *L = lua_new();
    char *text = nested_text(ZERG_JSON_MAX_DEPTH);
    zerg_json *v = text_ok(text);
    free(text);
    lua_pushcfunction(L, push_tree);
    lua_pushlightuserdata(L, v);
    assert_int_equal(lua_pcall(L, 1, 1, 0), LUA_OK);
    lua_settop(L, 0);

    zerg_json *outer = zerg_json_arr();
    assert_int_equal(zerg_json_push(outer, v), 0);
    lua_pushcfunction(L, push_tree);
    lua_pushlightuserdata(L, outer);
    assert_int_equal(lua_pcall(L, 1, 1, 0), LUA_ERRRUN);
    assert_true(tu_contains(lua_tostring(L, -1), "JSON nested too deeply "
                                                 "(more than 100 levels)"));
    zerg_json_free(outer);
    lua_close(L);
}

static void test_int_limit_both_paths(void **state)
{
    (void)state;
    lua_State *L = lua_new();
    /* Below 2^53: exact integers.  2^53 and beyond: doubles, so 2^53 + 1
     * rounds to 2^53 whether it came as text (strtod) or as a Lua
     * integer, and is written in cjson's "%.14g". */
    const char *want = "[9007199254740991,-9007199254740991,9.007199254741e+15,"
                       "9.007199254741e+15,-9.007199254741e+15,1.5]";
    assert_both(L,
                "return {9007199254740991, -9007199254740991, "
                "9007199254740992, 9007199254740993, -9007199254740993, 1.5}",
                "[9007199254740991,-9007199254740991,9007199254740992,"
                "9007199254740993,-9007199254740993,1.5]",
                want);
    zerg_json *a = lua_ok(L, "return {9007199254740993}");
    zerg_json *b = text_ok("[9007199254740993]");
    assert_true(zerg_json_at(a, 0)->u.number == 9007199254740992.0);
    assert_true(zerg_json_at(b, 0)->u.number == 9007199254740992.0);
    zerg_json_free(a);
    zerg_json_free(b);

    /* Back into Lua the same limit picks integer or float. */
    zerg_json *v = text_ok("[9007199254740991, 9007199254740992, 3, 2.5]");
    zerg_lua_push_json(L, v);
    lua_setglobal(L, "v");
    zerg_json_free(v);
    v = lua_ok(L, "return {math.type(v[1]), math.type(v[2]), "
                  "math.type(v[3]), math.type(v[4])}");
    char *s = enc(v);
    assert_string_equal(s, "[\"integer\",\"float\",\"integer\",\"float\"]");
    free(s);
    zerg_json_free(v);
    lua_close(L);
}

static void test_empty_tables_both_paths(void **state)
{
    (void)state;
    lua_State *L = lua_new();
    assert_both(L, "return {}", "[]", "{}");
    assert_both(L, "return {}", "{}", "{}");
    assert_both(L, "return {a = {}, b = {{}}}", "{\"b\":[[]],\"a\":{}}",
                "{\"a\":{},\"b\":[{}]}");
    zerg_json *v = lua_ok(L, "return {}");
    assert_true(zerg_json_is(v, ZERG_JSON_ARRAY));
    assert_true(zerg_json_is(v, ZERG_JSON_OBJECT));
    /* And back into Lua an empty container is an empty table. */
    zerg_lua_push_json(L, v);
    assert_int_equal(lua_type(L, -1), LUA_TTABLE);
    lua_pushnil(L);
    assert_int_equal(lua_next(L, -2), 0);
    lua_settop(L, 0);
    zerg_json_free(v);
    lua_close(L);
}

static void test_keys_both_paths(void **state)
{
    (void)state;
    lua_State *L = lua_new();
    /* Bytewise order: upper case before lower, UTF-8 after ASCII. */
    assert_both(L, "return {b = 1, ['\\xc3\\xa9'] = 2, B = 3, a = 4}",
                "{\"b\":1,\"\xc3\xa9\":2,\"B\":3,\"a\":4}",
                "{\"B\":3,\"a\":4,\"b\":1,\"\xc3\xa9\":2}");
    /* Arrays keep their order; null items stay (cjson.null in text). */
    assert_both(L, "return {3, 1, 2}", "[3,1,2]", "[3,1,2]");
    zerg_json *v = text_ok("[1,null,3]");
    assert_int_equal(zerg_json_len(v), 3);
    assert_true(zerg_json_is(zerg_json_at(v, 1), ZERG_JSON_NULL));
    zerg_json_free(v);

    /* NUL in a key: the same error from both. */
    assert_int_equal(lua_tree(L, "return {['a\\0b'] = 1}", &v), -EINVAL);
    assert_true(tu_contains(errbuf, "JSON object key contains a NUL "
                                    "character"));
    struct zerg_err err = {0};
    assert_null(zerg_json_parse("{\"a\\u0000b\":1}", 14, &err));
    assert_int_equal(err.code, ZERG_ECORRUPT);
    assert_true(tu_contains(err.msg, "JSON object key contains a NUL "
                                     "character"));

    /* Lua-only cases: keys that collide as text, keys JSON cannot have. */
    assert_int_equal(lua_tree(L, "return {[1] = 'a', ['1'] = 'b', x = 0}", &v),
                     -EINVAL);
    assert_true(tu_contains(errbuf, "two table keys give the JSON key \"1\""));
    assert_int_equal(lua_tree(L, "return {[true] = 1}", &v), -EINVAL);
    assert_true(tu_contains(errbuf, "key of type boolean"));
    assert_int_equal(lua_tree(L, "return {f = print}", &v), -EINVAL);
    assert_true(tu_contains(errbuf, "function cannot be converted"));
    lua_close(L);
}

static void test_null_userdata_is_null(void **state)
{
    (void)state;
    lua_State *L = lua_new();
    lua_pushlightuserdata(L, NULL); /* what cjson.null is */
    zerg_json *v = NULL;
    assert_int_equal(zerg_lua_to_tree(L, -1, &v, errbuf, sizeof errbuf), 0);
    assert_true(zerg_json_is(v, ZERG_JSON_NULL));
    zerg_json_free(v);
    static int x;
    lua_pushlightuserdata(L, &x); /* any other pointer is not JSON */
    assert_int_equal(zerg_lua_to_tree(L, -1, &v, errbuf, sizeof errbuf),
                     -EINVAL);
    assert_null(v);
    assert_true(tu_contains(errbuf, "userdata cannot be converted"));
    lua_close(L);
}

/* ---- readers of decoded files ----------------------------------------- */

static void test_graph_reader_accepts_empty(void **state)
{
    (void)state;
    /* files and verification are objects; written as [] they are empty. */
    const char *text = "{\"feature\":\"f\",\"levels\":[],\"tasks\":["
                       "{\"id\":\"A\",\"level\":1,\"files\":[],"
                       "\"verification\":[]},"
                       "{\"id\":\"B\",\"level\":1,\"files\":{},"
                       "\"verification\":{}}]}";
    struct zerg_graph *g = NULL;
    struct zerg_err err = {0};
    if (zerg_graph_parse(&g, "g.json", text, strlen(text), &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(g->ntasks, 2);
    zerg_graph_free(g);
}

static void test_state_reader_accepts_empty(void **state)
{
    (void)state;
    const char *gtext = "{\"feature\":\"demo\",\"tasks\":["
                        "{\"id\":\"A-L1-001\",\"level\":1}]}";
    struct zerg_graph *g = NULL;
    struct zerg_err err = {0};
    assert_int_equal(zerg_graph_parse(&g, "g", gtext, strlen(gtext), &err), 0);
    /* workers and levels are objects; [] and {} both mean none. */
    const char *texts[] = {
        "{\"version\":1,\"feature\":\"demo\",\"tasks\":[],\"workers\":[],"
        "\"levels\":[],\"metrics\":[]}",
        "{\"version\":1,\"feature\":\"demo\",\"tasks\":{},\"workers\":{},"
        "\"levels\":{},\"metrics\":{}}",
    };
    for (size_t i = 0; i < 2; i++) {
        zerg_json *doc = text_ok(texts[i]);
        struct zerg_state s;
        if (zerg_state_from_json(&s, g, doc, NULL, &err) != 0)
            fail_msg("%s: %s", texts[i], err.msg);
        assert_int_equal(s.nworkers, 0);
        assert_int_equal(s.ntasks, 1);
        zerg_state_close(&s);
        zerg_json_free(doc);
    }
    zerg_graph_free(g);
}

static void test_retry_reader_accepts_empty(void **state)
{
    (void)state;
    char dir[256], path[320];
    snprintf(dir, sizeof dir, "%s", tu_mkdtemp());
    snprintf(path, sizeof path, "%s/retry-demo-1.json", dir);
    const char *bodies[] = {
        "{\"feature\":\"demo\",\"tasks\":[],\"all_failed\":true}",
        "{\"feature\":\"demo\",\"tasks\":{},\"all_failed\":true}",
    };
    for (size_t i = 0; i < 2; i++) {
        tu_write(dir, "retry-demo-1.json", bodies[i]);
        struct zerg_retry_request req;
        struct zerg_err err = {0};
        if (zerg_retry_request_read(path, &req, &err) != 0)
            fail_msg("%s: %s", bodies[i], err.msg);
        assert_int_equal(req.n, 0);
        assert_true(req.all_failed);
        zerg_retry_request_close(&req);
    }
    tu_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_depth_limit_both_paths),
        cmocka_unit_test(test_tree_to_lua_depth),
        cmocka_unit_test(test_int_limit_both_paths),
        cmocka_unit_test(test_empty_tables_both_paths),
        cmocka_unit_test(test_keys_both_paths),
        cmocka_unit_test(test_null_userdata_is_null),
        cmocka_unit_test(test_graph_reader_accepts_empty),
        cmocka_unit_test(test_state_reader_accepts_empty),
        cmocka_unit_test(test_retry_reader_accepts_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
