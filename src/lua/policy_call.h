/* policy_call.h - one decision asked of a policy hook (private to
 * src/lua/): the machinery lives in policy.c, the hooks in
 * policy_hooks.c and policy_reconcile.c.
 *
 * A hook embeds struct zerg_policy_call as the first member of its own
 * struct holding its inputs and outputs.  zerg_policy_run calls `push`
 * (the arguments) and `read` (validate and store the answer; raise when
 * it is unusable) inside a protected call, first against the project's
 * override, then the bundled policy, and finally `builtin` should both
 * fail: a fixed safe answer, never a copy of the policy (each decision
 * has one implementation, in Lua; test_policy_builtin.c holds the
 * answers, docs/wiki/Policy-API.md lists them). */
#ifndef ZERG_LUA_POLICY_CALL_H
#define ZERG_LUA_POLICY_CALL_H

#include <limits.h>
#include <string.h>

#include <lauxlib.h>

#include "lua/vm.h"
#include "zerg/clock.h"
#include "zerg/policy.h"
#include "zerg/text.h"

struct zerg_config;

#define ZERG_POLICY_DELAY_MAX_S 3600.0 /* nothing waits longer than 1 h */
#define ZERG_POLICY_REASON_MAX 63      /* fits zerg_retry_out.reason */

enum zerg_policy_source {
    ZERG_POLICY_BUNDLED,
    ZERG_POLICY_OVERRIDE,
    ZERG_POLICY_BUILTIN,
};

struct zerg_policy_call {
    struct zerg_policy *p;
    const char *policy, *hook, *full; /* "retry", "decide", "retry.decide" */
    int (*push)(lua_State *L, struct zerg_policy_call *c); /* -> nargs */
    void (*read)(lua_State *L, struct zerg_policy_call *c, int first, int nres);
    void (*builtin)(struct zerg_policy_call *c);
    /* set by zerg_policy_run */
    int use_override;
    int absent; /* the override does not define the hook */
    enum zerg_policy_source src;
    char override_error[512]; /* why the override was not used */
    char file[PATH_MAX];      /* the file that decided */
};

void zerg_policy_run(struct zerg_policy_call *c);

/* A new `why` object: policy, file, hook (and override_error). */
zerg_json *zerg_policy_why(const struct zerg_policy_call *c);

/* Counts a policy failure and logs policy_error. */
void zerg_policy_report(struct zerg_policy *p, const char *policy,
                        const char *hook, const char *file, const char *error,
                        const char *used);

const struct zerg_config *zerg_policy_config(const struct zerg_policy *p);

/* 1 when the project overrides policy `name`. */
int zerg_policy_override_active(const struct zerg_policy *p, const char *name);

/* ---- small helpers for push and read (table on top of the stack) ---- */

static inline void set_num(lua_State *L, const char *k, double v)
{
    lua_pushnumber(L, v);
    lua_setfield(L, -2, k);
}

static inline void set_int(lua_State *L, const char *k, lua_Integer v)
{
    lua_pushinteger(L, v);
    lua_setfield(L, -2, k);
}

static inline void set_str(lua_State *L, const char *k, const char *v)
{
    lua_pushstring(L, v);
    lua_setfield(L, -2, k);
}

static inline void set_bool(lua_State *L, const char *k, int v)
{
    lua_pushboolean(L, v);
    lua_setfield(L, -2, k);
}

static inline double secs(int64_t ns)
{
    return zerg_ns_to_s(ns);
}

/* The type name of result idx for messages ("nothing" past the end). */
static inline const char *got(lua_State *L, int idx, int nres, int first)
{
    return idx - first >= nres ? "nothing" : luaL_typename(L, idx);
}

/* Copies a reason, cut at ZERG_POLICY_REASON_MAX bytes, never inside a
 * UTF-8 sequence. */
static inline void copy_reason(char *dst, size_t size, const char *src)
{
    zerg_text_cut(dst, size, src, ZERG_POLICY_REASON_MAX);
}

#endif
