/* convert.c - zerg_json trees <-> Lua values (see vm.h).
 *
 * JSON -> Lua runs inside a protected call and may raise on memory.
 * Lua -> JSON never raises: it only reads the Lua stack (lua_next,
 * lua_tolstring on values that are already strings) and reports what it
 * cannot convert in a caller buffer, so a half-built tree is always freed
 * by this file and never leaked by a longjmp. */
#include "lua/vm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#define CONVERT_MAX_DEPTH 100
#define EXACT_INT_LIMIT 9007199254740992.0 /* 2^53 */

/* ---- JSON -> Lua ----------------------------------------------------- */

static void push_number(lua_State *L, double x)
{
    if (isfinite(x) && x == floor(x) && fabs(x) < EXACT_INT_LIMIT)
        lua_pushinteger(L, (lua_Integer)x);
    else
        lua_pushnumber(L, x);
}

void zerg_lua_push_json(lua_State *L, const zerg_json *v)
{
    luaL_checkstack(L, 4, "JSON nested too deeply");
    if (!v) {
        lua_pushnil(L);
        return;
    }
    switch (v->type) {
    case ZERG_JSON_NULL:
        lua_pushnil(L);
        break;
    case ZERG_JSON_BOOL:
        lua_pushboolean(L, v->u.boolean);
        break;
    case ZERG_JSON_NUMBER:
        push_number(L, v->u.number);
        break;
    case ZERG_JSON_STRING:
        lua_pushlstring(L, v->u.str.s, v->u.str.len);
        break;
    case ZERG_JSON_ARRAY:
        lua_createtable(L, (int)v->u.arr.n, 0); /* t */
        for (size_t i = 0; i < v->u.arr.n; i++) {
            zerg_lua_push_json(L, v->u.arr.items[i]); /* t item */
            lua_rawseti(L, -2, (lua_Integer)i + 1);   /* t */
        }
        break;
    case ZERG_JSON_OBJECT:
        lua_createtable(L, 0, (int)v->u.obj.n); /* t */
        for (size_t i = 0; i < v->u.obj.n; i++) {
            if (v->u.obj.vals[i]->type == ZERG_JSON_NULL)
                continue;
            lua_pushstring(L, v->u.obj.keys[i]);     /* t key */
            zerg_lua_push_json(L, v->u.obj.vals[i]); /* t key value */
            lua_rawset(L, -3);                       /* t */
        }
        break;
    }
}

/* ---- Lua -> JSON ----------------------------------------------------- */

struct conv {
    char *errbuf;
    size_t errlen;
};

static zerg_json *conv_fail(struct conv *c, const char *fmt, const char *a)
{
    if (!c->errbuf[0])
        snprintf(c->errbuf, c->errlen, fmt, a);
    return NULL;
}

static zerg_json *to_json(lua_State *L, int idx, int depth, struct conv *c);

/* 1 when the table at idx has exactly the keys 1..n, n >= 1. */
static int is_array(lua_State *L, int idx, size_t *n)
{
    size_t len = (size_t)lua_rawlen(L, idx), count = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1 ||
            (size_t)lua_tointeger(L, -1) > len) {
            lua_pop(L, 1);
            return 0;
        }
        count++;
    }
    *n = len;
    return len > 0 && count == len;
}

static zerg_json *array_to_json(lua_State *L, int idx, size_t n, int depth,
                                struct conv *c)
{
    zerg_json *arr = zerg_json_arr();
    if (!arr)
        return conv_fail(c, "%s", "out of memory");
    for (size_t i = 1; i <= n; i++) {
        lua_rawgeti(L, idx, (lua_Integer)i);
        zerg_json *item = to_json(L, lua_gettop(L), depth + 1, c);
        lua_pop(L, 1);
        if (!item || zerg_json_push(arr, item) != 0) {
            zerg_json_free(arr);
            return conv_fail(c, "%s", "out of memory");
        }
    }
    return arr;
}

/* A key as text: strings as they are, integers (and integral floats) in
 * decimal.  Returns 0, or -1 for keys JSON cannot have. */
static int key_text(lua_State *L, int idx, char *buf, size_t size,
                    const char **out)
{
    if (lua_type(L, idx) == LUA_TSTRING) {
        *out = lua_tostring(L, idx);
        return 0;
    }
    if (lua_type(L, idx) == LUA_TNUMBER) {
        lua_Integer i;
        if (lua_isinteger(L, idx))
            i = lua_tointeger(L, idx);
        else if (!lua_numbertointeger(lua_tonumber(L, idx), &i))
            return -1;
        snprintf(buf, size, "%lld", (long long)i);
        *out = buf;
        return 0;
    }
    return -1;
}

struct member {
    char *key;
    zerg_json *val;
};

static int member_cmp(const void *a, const void *b)
{
    return strcmp(((const struct member *)a)->key,
                  ((const struct member *)b)->key);
}

static void free_members(struct member *m, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(m[i].key);
        zerg_json_free(m[i].val);
    }
    free(m);
}

/* Converts the pair on top of the stack (... key value) into m. */
static int read_member(lua_State *L, struct member *m, int depth,
                       struct conv *c)
{
    char buf[32];
    const char *text;
    if (key_text(L, -2, buf, sizeof buf, &text) != 0) {
        conv_fail(c, "a table key of type %s cannot be a JSON key",
                  luaL_typename(L, -2));
        return -1;
    }
    m->key = strdup(text);
    m->val = to_json(L, lua_gettop(L), depth + 1, c);
    if (!m->key || !m->val) {
        free(m->key);
        zerg_json_free(m->val);
        conv_fail(c, "%s", "out of memory");
        return -1;
    }
    return 0;
}

/* The table at idx as an object with its keys sorted, so the same table
 * always gives the same text. */
static zerg_json *object_to_json(lua_State *L, int idx, int depth,
                                 struct conv *c)
{
    size_t n = 0, cap = 0;
    struct member *m = NULL;
    zerg_json *obj = NULL;
    lua_pushnil(L);
    while (lua_next(L, idx)) { /* ... key value */
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            struct member *grown = realloc(m, cap * sizeof *m);
            if (!grown) {
                conv_fail(c, "%s", "out of memory");
                lua_pop(L, 2);
                goto done;
            }
            m = grown;
        }
        if (read_member(L, &m[n], depth, c) != 0) {
            lua_pop(L, 2);
            goto done;
        }
        n++;
        lua_pop(L, 1); /* ... key */
    }
    if (n > 1)
        qsort(m, n, sizeof *m, member_cmp);
    obj = zerg_json_obj();
    for (size_t i = 0; i < n && obj; i++) {
        if (zerg_json_set(obj, m[i].key, m[i].val) != 0) {
            m[i].val = NULL; /* freed by zerg_json_set */
            zerg_json_free(obj);
            obj = NULL;
            conv_fail(c, "%s", "out of memory");
            break;
        }
        m[i].val = NULL; /* owned by obj now */
    }
done:
    free_members(m, n);
    return obj;
}

static zerg_json *to_json(lua_State *L, int idx, int depth, struct conv *c)
{
    if (depth > CONVERT_MAX_DEPTH)
        return conv_fail(c, "%s", "tables nested too deeply (or a cycle)");
    if (!lua_checkstack(L, 8))
        return conv_fail(c, "%s", "Lua stack exhausted");
    switch (lua_type(L, idx)) {
    case LUA_TNIL:
        return zerg_json_null();
    case LUA_TBOOLEAN:
        return zerg_json_bool(lua_toboolean(L, idx));
    case LUA_TNUMBER: {
        double x = lua_tonumber(L, idx);
        return isfinite(x) ? zerg_json_num(x) : zerg_json_null();
    }
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(L, idx, &len);
        return zerg_json_strn(s, len);
    }
    case LUA_TTABLE: {
        size_t n;
        if (is_array(L, idx, &n))
            return array_to_json(L, idx, n, depth, c);
        return object_to_json(L, idx, depth, c);
    }
    default:
        return conv_fail(c, "a %s cannot be converted to JSON",
                         luaL_typename(L, idx));
    }
}

zerg_json *zerg_lua_to_json(lua_State *L, int idx, char *errbuf, size_t errlen)
{
    struct conv c = {.errbuf = errbuf, .errlen = errlen};
    errbuf[0] = '\0';
    idx = lua_absindex(L, idx);
    int top = lua_gettop(L);
    zerg_json *v = to_json(L, idx, 0, &c);
    lua_settop(L, top);
    if (!v && !errbuf[0])
        snprintf(errbuf, errlen, "out of memory");
    return v;
}

/* ---- integer keys ---------------------------------------------------- */

/* 1 and *out set when s is canonical decimal integer text ("3", "-2", not
 * "03" or "3.0"). */
static int int_text(const char *s, lua_Integer *out)
{
    char *end;
    if (!*s || (s[0] == '0' && s[1]) || (s[0] == '-' && s[1] == '0'))
        return 0;
    long long v = strtoll(s, &end, 10);
    if (*end || end == s)
        return 0;
    *out = (lua_Integer)v;
    return 1;
}

void zerg_lua_intkeys(lua_State *L, int idx)
{
    idx = lua_absindex(L, idx);
    if (!lua_istable(L, idx))
        return;
    lua_newtable(L); /* copy */
    int copy = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, idx)) { /* copy key value */
        lua_Integer i;
        if (lua_type(L, -2) == LUA_TSTRING && int_text(lua_tostring(L, -2), &i))
            lua_pushinteger(L, i);
        else
            lua_pushvalue(L, -2);
        lua_insert(L, -2);   /* copy key newkey value */
        lua_rawset(L, copy); /* copy key */
    }
    lua_replace(L, idx);
}
