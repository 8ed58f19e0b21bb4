/* sandbox_lib.c - library functions whose stock versions can outlast any
 * budget in one C call, and the read-only library tables (sandbox.h).
 *
 * A stock C function runs to its end without the count hook, so its work
 * must be bounded some other way:
 *   - string.rep("", 1e18) loops 1e18 times producing nothing: an empty
 *     result is answered at once, and a result larger than the memory cap
 *     is refused before anything is built.  Every other result is
 *     allocated, and allocation is charged by the VM (vm.c).
 *   - table.concat, unpack, insert, remove, move and sort walk a range
 *     that __len or the arguments can make 2^63 long, reading elements
 *     through __index (which may be a C function such as table.concat):
 *     these versions charge one instruction per element they touch, so
 *     the budget ends the walk.  sort is a heap sort (O(n log n) on any
 *     input, one instruction per comparison).
 * The other functions of string, table, utf8 and math do work linear in
 * a string that already exists, so the memory cap bounds them.
 *
 * The library tables the sandbox sees are read-only views, and the
 * string metatable is hidden behind one: an override in the REPL's VM
 * that sets string.format = nil would otherwise break the REPL's own
 * printing, since both use the same tables. */
#include <limits.h>

#include <lauxlib.h>

#include "lua/sandbox.h"

#define REG_FROZEN "zerg.frozen" /* weak-keyed set of the read-only views */
#define METER_EVERY 256

/* Work counted locally and charged in batches. */
struct meter {
    lua_State *L;
    int64_t n;
};

static void meter_add(struct meter *m, int64_t n)
{
    m->n += n;
    if (m->n >= METER_EVERY) {
        zerg_vm_charge(m->L, m->n);
        m->n = 0;
    }
}

static void meter_done(struct meter *m)
{
    if (m->n)
        zerg_vm_charge(m->L, m->n);
    m->n = 0;
}

/* ---- string.rep ------------------------------------------------------ */

static int sb_rep(lua_State *L)
{
    size_t l, lsep;
    luaL_checklstring(L, 1, &l);
    lua_Integer n = luaL_checkinteger(L, 2);
    luaL_optlstring(L, 3, "", &lsep);
    if (n <= 0 || (l == 0 && lsep == 0)) {
        lua_pushliteral(L, "");
        return 1;
    }
    size_t max = (size_t)LUA_MAXINTEGER;
    if (l + lsep < l || l + lsep > max / (size_t)n)
        return luaL_error(L, "resulting string too large");
    size_t total = l * (size_t)n + lsep * (size_t)(n - 1);
    int64_t cap = zerg_vm_memory_cap(L);
    if (cap > 0 && total > (size_t)cap)
        return luaL_error(L,
                          "string.rep: the result would be %I bytes, more "
                          "than the memory budget (%I bytes)",
                          (lua_Integer)total, (lua_Integer)cap);
    lua_pushvalue(L, lua_upvalueindex(1)); /* the stock rep */
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

/* ---- table functions ------------------------------------------------- */

#define TAB_R 1 /* read */
#define TAB_W 2 /* write */
#define TAB_L 4 /* length */

static int has_meta(lua_State *L, const char *field)
{
    int yes = lua_getfield(L, -1, field) != LUA_TNIL;
    lua_pop(L, 1);
    return yes;
}

/* A table, or a value whose metatable has what is needed. */
static void check_tab(lua_State *L, int arg, int what)
{
    if (lua_type(L, arg) == LUA_TTABLE)
        return;
    if (lua_getmetatable(L, arg)) {
        int ok = (!(what & TAB_R) || has_meta(L, "__index")) &&
                 (!(what & TAB_W) || has_meta(L, "__newindex")) &&
                 (!(what & TAB_L) || has_meta(L, "__len"));
        lua_pop(L, 1);
        if (ok)
            return;
    }
    luaL_checktype(L, arg, LUA_TTABLE); /* raises */
}

static lua_Integer tab_len(lua_State *L, int arg, int what)
{
    check_tab(L, arg, what | TAB_L);
    return luaL_len(L, arg);
}

static int sb_concat(lua_State *L)
{
    struct meter m = {L, 0};
    lua_Integer last = tab_len(L, 1, TAB_R);
    size_t lsep;
    const char *sep = luaL_optlstring(L, 2, "", &lsep);
    lua_Integer i = luaL_optinteger(L, 3, 1);
    last = luaL_optinteger(L, 4, last);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (; i <= last; i++) {
        meter_add(&m, 1);
        lua_geti(L, 1, i);
        if (!lua_isstring(L, -1))
            return luaL_error(L,
                              "invalid value (%s) at index %I in table for "
                              "'concat'",
                              luaL_typename(L, -1), (lua_Integer)i);
        luaL_addvalue(&b);
        if (i == last)
            break; /* i + 1 could overflow */
        luaL_addlstring(&b, sep, lsep);
    }
    meter_done(&m);
    luaL_pushresult(&b);
    return 1;
}

static int sb_unpack(lua_State *L)
{
    lua_Integer i = luaL_optinteger(L, 2, 1);
    lua_Integer e = luaL_opt(L, luaL_checkinteger, 3, luaL_len(L, 1));
    if (i > e)
        return 0;
    lua_Unsigned n = (lua_Unsigned)e - (lua_Unsigned)i;
    if (n >= (unsigned)INT_MAX || !lua_checkstack(L, (int)(++n)))
        return luaL_error(L, "too many results to unpack");
    zerg_vm_charge(L, (int64_t)n); /* before the walk: n < INT_MAX */
    for (; i < e; i++)
        lua_geti(L, 1, i);
    lua_geti(L, 1, e);
    return (int)n;
}

static int sb_insert(lua_State *L)
{
    struct meter m = {L, 0};
    lua_Integer e = tab_len(L, 1, TAB_R | TAB_W);
    e = (lua_Integer)((lua_Unsigned)e + 1u); /* first empty slot */
    lua_Integer pos = e;
    switch (lua_gettop(L)) {
    case 2:
        break;
    case 3:
        pos = luaL_checkinteger(L, 2);
        luaL_argcheck(L, (lua_Unsigned)pos - 1u < (lua_Unsigned)e, 2,
                      "position out of bounds");
        for (lua_Integer i = e; i > pos; i--) { /* move up the tail */
            meter_add(&m, 1);
            lua_geti(L, 1, i - 1);
            lua_seti(L, 1, i);
        }
        break;
    default:
        return luaL_error(L, "wrong number of arguments to 'insert'");
    }
    meter_done(&m);
    lua_seti(L, 1, pos);
    return 0;
}

static int sb_remove(lua_State *L)
{
    struct meter m = {L, 0};
    lua_Integer size = tab_len(L, 1, TAB_R | TAB_W);
    lua_Integer pos = luaL_optinteger(L, 2, size);
    if (pos != size)
        luaL_argcheck(L, (lua_Unsigned)pos - 1u <= (lua_Unsigned)size, 1,
                      "position out of bounds"); /* #1 as in Lua 5.4.4 */
    lua_geti(L, 1, pos);                         /* the result */
    for (; pos < size; pos++) {
        meter_add(&m, 1);
        lua_geti(L, 1, pos + 1);
        lua_seti(L, 1, pos);
    }
    meter_done(&m);
    lua_pushnil(L);
    lua_seti(L, 1, pos);
    return 1;
}

static int sb_move(lua_State *L)
{
    struct meter m = {L, 0};
    lua_Integer f = luaL_checkinteger(L, 2);
    lua_Integer e = luaL_checkinteger(L, 3);
    lua_Integer t = luaL_checkinteger(L, 4);
    int tt = !lua_isnoneornil(L, 5) ? 5 : 1;
    check_tab(L, 1, TAB_R);
    check_tab(L, tt, TAB_W);
    if (e >= f) {
        luaL_argcheck(L, f > 0 || e < LUA_MAXINTEGER + f, 3,
                      "too many elements to move");
        lua_Integer n = e - f + 1;
        luaL_argcheck(L, t <= LUA_MAXINTEGER - n + 1, 4,
                      "destination wrap around");
        int forward =
            t > e || t <= f || (tt != 1 && !lua_compare(L, 1, tt, LUA_OPEQ));
        for (lua_Integer k = 0; k < n; k++) {
            lua_Integer i = forward ? k : n - 1 - k; /* overlap: back */
            meter_add(&m, 1);
            lua_geti(L, 1, f + i);
            lua_seti(L, tt, t + i);
        }
    }
    meter_done(&m);
    lua_pushvalue(L, tt);
    return 1;
}

/* The comparison of sort: the function at 2, else "<". */
static int sort_less(lua_State *L, struct meter *m, int a, int b)
{
    meter_add(m, 1);
    a = lua_absindex(L, a);
    b = lua_absindex(L, b);
    if (lua_isnil(L, 2))
        return lua_compare(L, a, b, LUA_OPLT);
    lua_pushvalue(L, 2);
    lua_pushvalue(L, a);
    lua_pushvalue(L, b);
    lua_call(L, 2, 1);
    int r = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return r;
}

/* Moves t[i] down the max-heap t[1..n] to its place. */
static void sift_down(lua_State *L, struct meter *m, lua_Integer i,
                      lua_Integer n)
{
    lua_geti(L, 1, i); /* v */
    while (i <= n / 2) {
        lua_Integer c = 2 * i;
        lua_geti(L, 1, c); /* v a */
        if (c < n) {
            lua_geti(L, 1, c + 1); /* v a b */
            if (sort_less(L, m, -2, -1)) {
                lua_remove(L, -2); /* v b */
                c++;
            } else {
                lua_pop(L, 1); /* v a */
            }
        }
        if (!sort_less(L, m, -2, -1)) { /* v child */
            lua_pop(L, 1);
            break;
        }
        lua_seti(L, 1, i); /* v; t[i] = child */
        i = c;
    }
    lua_seti(L, 1, i);
}

static int sb_sort(lua_State *L)
{
    struct meter m = {L, 0};
    lua_Integer n = tab_len(L, 1, TAB_R | TAB_W);
    if (n > 1) {
        luaL_argcheck(L, n < INT_MAX, 1, "array too big");
        if (!lua_isnoneornil(L, 2))
            luaL_checktype(L, 2, LUA_TFUNCTION);
        lua_settop(L, 2);
        for (lua_Integer i = n / 2; i >= 1; i--)
            sift_down(L, &m, i, n);
        for (lua_Integer end = n; end > 1; end--) {
            lua_geti(L, 1, 1);
            lua_geti(L, 1, end);
            lua_seti(L, 1, 1);   /* t[1] = t[end] */
            lua_seti(L, 1, end); /* t[end] = the largest */
            sift_down(L, &m, 1, end - 1);
        }
    }
    meter_done(&m);
    return 0;
}

void zerg_sandbox_bound_libs(lua_State *L)
{
    static const luaL_Reg table_fns[] = {
        {"concat", sb_concat}, {"unpack", sb_unpack}, {"insert", sb_insert},
        {"remove", sb_remove}, {"move", sb_move},     {"sort", sb_sort},
        {NULL, NULL},
    };
    lua_getglobal(L, "string");     /* string */
    lua_getfield(L, -1, "rep");     /* string rep */
    lua_pushcclosure(L, sb_rep, 1); /* string sb_rep */
    lua_setfield(L, -2, "rep");
    lua_pop(L, 1);
    zerg_sandbox_bound_patterns(L);
    lua_getglobal(L, "table");
    luaL_setfuncs(L, table_fns, 0);
    lua_pop(L, 1);
}

/* ---- read-only views ------------------------------------------------- */

static int frozen_newindex(lua_State *L)
{
    return luaL_error(L,
                      "the library table '%s' is read-only (use a local "
                      "copy)",
                      lua_tostring(L, lua_upvalueindex(1)));
}

/* The iterator of pairs(view): next over the table (upvalue 1). */
static int frozen_next(lua_State *L)
{
    lua_settop(L, 2);
    lua_pushvalue(L, lua_upvalueindex(1)); /* view key t */
    lua_insert(L, 2);                      /* view t key */
    if (lua_next(L, 2))
        return 2;
    lua_pushnil(L);
    return 1;
}

static int frozen_pairs(lua_State *L)
{
    lua_pushvalue(L, lua_upvalueindex(1)); /* frozen_next */
    lua_pushvalue(L, 1);
    lua_pushnil(L);
    return 3;
}

static int frozen_len(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)lua_rawlen(L, lua_upvalueindex(1)));
    return 1;
}

static void remember_frozen(lua_State *L, int view)
{
    if (lua_getfield(L, LUA_REGISTRYINDEX, REG_FROZEN) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L); /* set */
        lua_newtable(L); /* set mt */
        lua_pushliteral(L, "k");
        lua_setfield(L, -2, "__mode");
        lua_setmetatable(L, -2);
        lua_pushvalue(L, -1);
        lua_setfield(L, LUA_REGISTRYINDEX, REG_FROZEN);
    }
    lua_pushvalue(L, view);
    lua_pushboolean(L, 1);
    lua_rawset(L, -3);
    lua_pop(L, 1);
}

void zerg_sandbox_push_frozen(lua_State *L, int idx, const char *name)
{
    idx = lua_absindex(L, idx);
    lua_newtable(L);          /* view */
    lua_createtable(L, 0, 5); /* view mt */
    lua_pushvalue(L, idx);
    lua_setfield(L, -2, "__index");
    lua_pushstring(L, name);
    lua_pushcclosure(L, frozen_newindex, 1);
    lua_setfield(L, -2, "__newindex");
    lua_pushvalue(L, idx);
    lua_pushcclosure(L, frozen_next, 1);
    lua_pushcclosure(L, frozen_pairs, 1);
    lua_setfield(L, -2, "__pairs");
    lua_pushvalue(L, idx);
    lua_pushcclosure(L, frozen_len, 1);
    lua_setfield(L, -2, "__len");
    lua_pushliteral(L, "read-only");
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2); /* view */
    remember_frozen(L, lua_gettop(L));
}

int zerg_sandbox_is_frozen(lua_State *L, int idx)
{
    idx = lua_absindex(L, idx);
    if (lua_getfield(L, LUA_REGISTRYINDEX, REG_FROZEN) != LUA_TTABLE) {
        lua_pop(L, 1);
        return 0;
    }
    lua_pushvalue(L, idx);
    int yes = lua_rawget(L, -2) != LUA_TNIL;
    lua_pop(L, 2);
    return yes;
}

void zerg_sandbox_hide_string_mt(lua_State *L, int view)
{
    view = lua_absindex(L, view);
    lua_pushliteral(L, "");
    lua_getmetatable(L, -1);  /* "" mt */
    lua_createtable(L, 0, 1); /* "" mt shown */
    lua_pushvalue(L, view);
    lua_setfield(L, -2, "__index");
    zerg_sandbox_push_frozen(L, -1, "string metatable"); /* ... shown view */
    lua_setfield(L, -3, "__metatable");
    lua_pop(L, 3);
}
