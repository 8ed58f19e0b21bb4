/* convert.c - zerg_json trees <-> Lua values (rules in convert.h).
 *
 * JSON -> Lua runs inside a protected call and may raise (memory, depth).
 * Lua -> JSON never raises: it only reads the Lua stack (lua_next,
 * lua_rawgeti, lua_tolstring on values that are already strings) and
 * reports what it cannot convert in a caller buffer, so a half-built tree
 * is always freed by this file and never leaked by a longjmp.
 *
 * Key order.  A Lua table is a hash: lua_next walks it in an order that
 * depends on the table's size history and on string hashes, which Lua 5.4
 * seeds per state.  Sorting the keys bytewise (strcmp compares as unsigned
 * char) makes the same table give the same tree and so the same encoded
 * text from run to run, as parsed JSON text does (src/base/json_text.c). */
#include "lua/convert.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

/* ---- JSON -> Lua ----------------------------------------------------- */

static void push_number(lua_State *L, double x)
{
    if (isfinite(x) && x == floor(x) && fabs(x) < ZERG_JSON_INT_LIMIT)
        lua_pushinteger(L, (lua_Integer)x);
    else
        lua_pushnumber(L, x);
}

/* level: containers enclosing v. */
static void push_value(lua_State *L, const zerg_json *v, int level)
{
    if (!v || v->type == ZERG_JSON_NULL) {
        lua_pushnil(L);
        return;
    }
    switch (v->type) {
    case ZERG_JSON_BOOL:
        lua_pushboolean(L, v->u.boolean);
        return;
    case ZERG_JSON_NUMBER:
        push_number(L, v->u.number);
        return;
    case ZERG_JSON_STRING:
        lua_pushlstring(L, v->u.str.s, v->u.str.len);
        return;
    default:
        break;
    }
    if (++level > ZERG_JSON_MAX_DEPTH)
        luaL_error(L, "JSON nested too deeply (more than %d levels)",
                   ZERG_JSON_MAX_DEPTH);
    luaL_checkstack(L, 4, "JSON nested too deeply");
    if (v->type == ZERG_JSON_ARRAY) {
        lua_createtable(L, (int)v->u.arr.n, 0); /* t */
        for (size_t i = 0; i < v->u.arr.n; i++) {
            push_value(L, v->u.arr.items[i], level); /* t item */
            lua_rawseti(L, -2, (lua_Integer)i + 1);  /* t */
        }
        return;
    }
    lua_createtable(L, 0, (int)v->u.obj.n); /* t */
    for (size_t i = 0; i < v->u.obj.n; i++) {
        if (v->u.obj.vals[i]->type == ZERG_JSON_NULL)
            continue;
        lua_pushstring(L, v->u.obj.keys[i]);    /* t key */
        push_value(L, v->u.obj.vals[i], level); /* t key value */
        lua_rawset(L, -3);                      /* t */
    }
}

void zerg_lua_push_json(lua_State *L, const zerg_json *v)
{
    push_value(L, v, 0);
}

/* ---- Lua -> JSON ----------------------------------------------------- */

struct conv {
    char *errbuf;
    size_t errlen;
    int code; /* first failure: -ENOMEM or -EINVAL */
};

/* Records the first failure only: the innermost one says what broke. */
__attribute__((format(printf, 3, 4))) static zerg_json *
conv_fail(struct conv *c, int code, const char *fmt, ...)
{
    if (c->code)
        return NULL;
    c->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->errbuf, c->errlen, fmt, ap);
    va_end(ap);
    return NULL;
}

static zerg_json *oom(struct conv *c)
{
    return conv_fail(c, -ENOMEM, "out of memory");
}

static zerg_json *to_json(lua_State *L, int idx, int level, struct conv *c);

/* n when the table at idx has exactly the keys 1..n, else 0. */
static size_t array_len(lua_State *L, int idx)
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
    return count == len ? len : 0;
}

static zerg_json *array_to_json(lua_State *L, int idx, size_t n, int level,
                                struct conv *c)
{
    zerg_json *arr = zerg_json_arr();
    if (!arr)
        return oom(c);
    for (size_t i = 1; i <= n; i++) {
        lua_rawgeti(L, idx, (lua_Integer)i);
        zerg_json *item = to_json(L, lua_gettop(L), level, c);
        lua_pop(L, 1);
        int rc = item ? zerg_json_push(arr, item) : -EINVAL;
        if (rc != 0) {
            zerg_json_free(arr);
            return rc == -ENOMEM ? oom(c) : NULL;
        }
    }
    return arr;
}

/* A key as text: strings as they are, integers (and integral floats) in
 * decimal.  0, or -1 with the failure recorded. */
static int key_text(lua_State *L, int idx, char *buf, size_t size,
                    const char **out, struct conv *c)
{
    if (lua_type(L, idx) == LUA_TSTRING) {
        size_t len;
        *out = lua_tolstring(L, idx, &len);
        if (strlen(*out) == len)
            return 0;
        conv_fail(c, -EINVAL, "JSON object key contains a NUL character");
        return -1;
    }
    lua_Integer i = 0;
    int ok = lua_type(L, idx) == LUA_TNUMBER;
    if (ok && lua_isinteger(L, idx))
        i = lua_tointeger(L, idx);
    else if (ok)
        ok = lua_numbertointeger(lua_tonumber(L, idx), &i);
    if (!ok) {
        conv_fail(c, -EINVAL, "a table key of type %s cannot be a JSON key",
                  luaL_typename(L, idx));
        return -1;
    }
    snprintf(buf, size, "%lld", (long long)i);
    *out = buf;
    return 0;
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
static int read_member(lua_State *L, struct member *m, int level,
                       struct conv *c)
{
    char buf[32];
    const char *text;
    if (key_text(L, -2, buf, sizeof buf, &text, c) != 0)
        return -1;
    m->key = strdup(text);
    if (!m->key) {
        oom(c);
        return -1;
    }
    m->val = to_json(L, lua_gettop(L), level, c);
    if (!m->val) {
        free(m->key);
        return -1;
    }
    return 0;
}

static size_t table_count(lua_State *L, int idx)
{
    size_t n = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        n++;
        lua_pop(L, 1);
    }
    return n;
}

/* Reads every pair of the table at idx into m[0..*got), sorted. */
static int read_members(lua_State *L, int idx, struct member *m, size_t *got,
                        int level, struct conv *c)
{
    lua_pushnil(L);            /* ... nil */
    while (lua_next(L, idx)) { /* ... key value */
        if (read_member(L, &m[*got], level, c) != 0) {
            lua_pop(L, 2);
            return -1;
        }
        (*got)++;
        lua_pop(L, 1); /* ... key */
    }
    qsort(m, *got, sizeof *m, member_cmp);
    for (size_t i = 1; i < *got; i++)
        if (strcmp(m[i - 1].key, m[i].key) == 0) {
            conv_fail(c, -EINVAL, "two table keys give the JSON key \"%.40s\"",
                      m[i].key);
            return -1;
        }
    return 0;
}

static zerg_json *object_to_json(lua_State *L, int idx, int level,
                                 struct conv *c)
{
    size_t n = table_count(L, idx), got = 0;
    zerg_json *obj = zerg_json_obj();
    struct member *m = n ? calloc(n, sizeof *m) : NULL;
    if (!obj || (n && !m)) {
        free(m);
        zerg_json_free(obj);
        return oom(c);
    }
    int rc = n ? read_members(L, idx, m, &got, level, c) : 0;
    for (size_t i = 0; rc == 0 && i < got; i++) {
        /* Keys are unique (checked): append without looking them up. */
        rc = zerg_json_add(obj, m[i].key, m[i].val);
        m[i].val = NULL; /* owned by obj, or freed by zerg_json_add */
        if (rc)
            oom(c);
    }
    free_members(m, got);
    if (rc) {
        zerg_json_free(obj);
        return NULL;
    }
    return obj;
}

/* level: tables enclosing the value at idx. */
static zerg_json *table_to_json(lua_State *L, int idx, int level,
                                struct conv *c)
{
    if (++level > ZERG_JSON_MAX_DEPTH)
        return conv_fail(c, -EINVAL,
                         "tables nested too deeply (more than %d levels, or "
                         "a cycle)",
                         ZERG_JSON_MAX_DEPTH);
    if (!lua_checkstack(L, 4))
        return conv_fail(c, -ENOMEM, "Lua stack exhausted");
    size_t n = array_len(L, idx);
    return n ? array_to_json(L, idx, n, level, c)
             : object_to_json(L, idx, level, c);
}

static zerg_json *to_json(lua_State *L, int idx, int level, struct conv *c)
{
    zerg_json *v;
    switch (lua_type(L, idx)) {
    case LUA_TNIL:
        v = zerg_json_null();
        break;
    case LUA_TBOOLEAN:
        v = zerg_json_bool(lua_toboolean(L, idx));
        break;
    case LUA_TNUMBER: {
        double x = (double)lua_tonumber(L, idx);
        v = isfinite(x) ? zerg_json_num(x) : zerg_json_null();
        break;
    }
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(L, idx, &len);
        v = zerg_json_strn(s, len);
        break;
    }
    case LUA_TTABLE:
        return table_to_json(L, idx, level, c);
    default:
        if (lua_type(L, idx) == LUA_TLIGHTUSERDATA &&
            !lua_touserdata(L, idx)) { /* a NULL light userdata: JSON null */
            v = zerg_json_null();
            break;
        }
        return conv_fail(c, -EINVAL, "a %s cannot be converted to JSON",
                         luaL_typename(L, idx));
    }
    return v ? v : oom(c);
}

int zerg_lua_to_tree(lua_State *L, int idx, zerg_json **out, char *errbuf,
                     size_t errlen)
{
    struct conv c = {.errbuf = errbuf, .errlen = errlen};
    errbuf[0] = '\0';
    idx = lua_absindex(L, idx);
    int top = lua_gettop(L);
    *out = to_json(L, idx, 0, &c);
    lua_settop(L, top);
    if (!*out && !c.code)
        oom(&c);
    return *out ? 0 : c.code;
}

zerg_json *zerg_lua_to_json(lua_State *L, int idx, char *errbuf, size_t errlen)
{
    zerg_json *v;
    zerg_lua_to_tree(L, idx, &v, errbuf, errlen);
    return v;
}

/* ---- integer keys ---------------------------------------------------- */

int zerg_lua_int_text(const char *s, lua_Integer *out)
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
        if (lua_type(L, -2) == LUA_TSTRING &&
            zerg_lua_int_text(lua_tostring(L, -2), &i))
            lua_pushinteger(L, i);
        else
            lua_pushvalue(L, -2);
        lua_insert(L, -2);   /* copy key newkey value */
        lua_rawset(L, copy); /* copy key */
    }
    lua_replace(L, idx);
}
