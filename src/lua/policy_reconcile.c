/* policy_reconcile.c - zerg_policy_reconcile: the snapshot pushed to
 * reconcile.check, each fix it returns checked one by one, so an
 * unusable fix is dropped (and logged) without losing the others, and
 * no fix at all when even the bundled Lua fails. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua/policy_call.h"
#include "zerg/config.h"

/* ---- reconcile.check ------------------------------------------------- */

#define RECONCILE_MAX_FIXES 100000

/* The fixes the core applies: the only place their names are read. */
static const struct fix_name {
    const char *name;
    enum zerg_fix_kind kind;
    int task; /* 1: names a task; 0: names a level */
} fix_names[] = {
    {"requeue", ZERG_FIX_REQUEUE, 1},
    {"set_level", ZERG_FIX_SET_LEVEL, 1},
    {"block", ZERG_FIX_BLOCK, 1},
    {"reopen_level", ZERG_FIX_REOPEN_LEVEL, 0},
    {"complete_level", ZERG_FIX_COMPLETE_LEVEL, 0},
    {"rerun", ZERG_FIX_RERUN, 1},
};

static const struct fix_name *fix_lookup(const char *name)
{
    for (size_t i = 0; i < sizeof fix_names / sizeof *fix_names; i++)
        if (strcmp(fix_names[i].name, name) == 0)
            return &fix_names[i];
    return NULL;
}

/* Field k as Lua indexes it: NULL when absent or null, or when obj is
 * not a table (a string indexes to nil). */
static const zerg_json *field(const zerg_json *obj, const char *k)
{
    const zerg_json *v =
        zerg_json_is(obj, ZERG_JSON_OBJECT) ? zerg_json_get(obj, k) : NULL;
    return v && v->type != ZERG_JSON_NULL ? v : NULL;
}

static const char *str_of(const zerg_json *obj, const char *k)
{
    return zerg_json_as_str(field(obj, k));
}

static int status_is(const char *s, const char *a, const char *b)
{
    return s && (strcmp(s, a) == 0 || (b && strcmp(s, b) == 0));
}

/* A rerun throws a task's result away: only for a task the snapshot shows
 * complete.  0, or -1 with msg saying why fix #i is dropped. */
static int rerun_refused(const zerg_json *snap, const char *task, size_t i,
                         char *msg, size_t size)
{
    const char *st = str_of(field(field(snap, "tasks"), task), "status");
    if (status_is(st, "complete", NULL))
        return 0;
    snprintf(msg, size, "fix #%zu: rerun needs a complete task; %s is %s", i,
             task, st ? st : "not in the snapshot");
    return -1;
}

struct reconcile_call {
    struct zerg_policy_call c;
    const zerg_json *snapshot;
    struct zerg_fix *fixes;
    size_t n;
    size_t dropped;
    char drop_msg[256]; /* why the first dropped fix was dropped */
};

static int reconcile_push(lua_State *L, struct zerg_policy_call *c)
{
    struct reconcile_call *r = (struct reconcile_call *)c;
    const struct zerg_config *cfg = zerg_policy_config(c->p);
    if (r->snapshot)
        zerg_lua_push_json(L, r->snapshot);
    if (!lua_istable(L, -1)) {
        lua_pop(L, r->snapshot ? 1 : 0);
        lua_newtable(L);
    } /* snap */
    if (lua_getfield(L, -1, "levels") == LUA_TTABLE) {
        zerg_lua_intkeys(L, -1); /* levels["2"] -> [2] */
        lua_setfield(L, -2, "levels");
    } else {
        lua_pop(L, 1);
    }
    lua_createtable(L, 0, 3); /* snap opts */
    set_num(L, "task_stale_timeout", secs(cfg->task_stale_timeout_ns));
    set_num(L, "heartbeat_stale_threshold",
            secs(cfg->heartbeat_stale_threshold_ns));
    set_num(L, "reconcile_interval", secs(cfg->reconcile_interval_ns));
    return 2;
}

/* Optional string field k of the table at idx into dst; -1 when it is
 * there but not a string that fits. */
static int str_field(lua_State *L, int idx, const char *k, char *dst,
                     size_t size, int truncate)
{
    int t = lua_getfield(L, idx, k);
    dst[0] = '\0';
    int rc = 0;
    if (t == LUA_TSTRING) {
        size_t len;
        const char *s = lua_tolstring(L, -1, &len);
        if (len < size && !memchr(s, '\0', len))
            memcpy(dst, s, len + 1);
        else if (truncate)
            snprintf(dst, size, "%s", s);
        else
            rc = -1;
    } else if (t != LUA_TNIL) {
        rc = -1;
    }
    lua_pop(L, 1);
    return rc;
}

/* Reads fix #i (the table at idx); 0, or -1 with msg saying why it is
 * dropped. */
static int read_fix(lua_State *L, int idx, size_t i, struct zerg_fix *f,
                    const zerg_json *snap, char *msg, size_t size)
{
    if (!lua_istable(L, idx)) {
        snprintf(msg, size, "fix #%zu is a %s, not a table", i,
                 luaL_typename(L, idx));
        return -1;
    }
    if (str_field(L, idx, "fix", f->fix, sizeof f->fix, 0) != 0 || !f->fix[0]) {
        snprintf(msg, size, "fix #%zu has no fix name", i);
        return -1;
    }
    if (str_field(L, idx, "task", f->task, sizeof f->task, 0) != 0) {
        snprintf(msg, size, "fix #%zu: task must be an id string", i);
        return -1;
    }
    str_field(L, idx, "reason", f->reason, sizeof f->reason, 1);
    int t = lua_getfield(L, idx, "level");
    lua_Integer lv = 0;
    int ok = t == LUA_TNIL || (t == LUA_TNUMBER &&
                               lua_numbertointeger(lua_tonumber(L, -1), &lv) &&
                               lv >= 0 && lv <= INT_MAX);
    lua_pop(L, 1);
    if (!ok) {
        snprintf(msg, size, "fix #%zu: level must be a whole number", i);
        return -1;
    }
    f->level = (int)lv;
    const struct fix_name *fn = fix_lookup(f->fix);
    if (!fn) {
        snprintf(msg, size, "fix #%zu: unknown fix '%s'", i, f->fix);
        return -1;
    }
    f->kind = fn->kind;
    if (fn->task ? !f->task[0] : f->level < 1) {
        snprintf(msg, size, "fix #%zu: %s needs a %s", i, f->fix,
                 fn->task ? "task" : "level");
        return -1;
    }
    if (f->kind == ZERG_FIX_SET_LEVEL && f->level < 1) {
        snprintf(msg, size, "fix #%zu: set_level needs a level >= 1", i);
        return -1;
    }
    if (f->kind == ZERG_FIX_RERUN)
        return rerun_refused(snap, f->task, i, msg, size);
    return 0;
}

static void reconcile_clear(struct reconcile_call *r)
{
    free(r->fixes);
    r->fixes = NULL;
    r->n = r->dropped = 0;
    r->drop_msg[0] = '\0';
}

static void reconcile_read(lua_State *L, struct zerg_policy_call *c, int first,
                           int nres)
{
    struct reconcile_call *r = (struct reconcile_call *)c;
    reconcile_clear(r);
    if (nres < 1 || !lua_istable(L, first))
        luaL_error(L, "%s returned %s, expected a list of fixes", c->full,
                   got(L, first, nres, first));
    size_t n = (size_t)lua_rawlen(L, first);
    if (n > RECONCILE_MAX_FIXES)
        luaL_error(L, "%s returned %zu fixes, more than %d", c->full, n,
                   RECONCILE_MAX_FIXES);
    r->fixes = calloc(n ? n : 1, sizeof *r->fixes);
    if (!r->fixes)
        luaL_error(L, "%s: out of memory for %zu fixes", c->full, n);
    for (size_t i = 1; i <= n; i++) {
        char msg[256];
        lua_rawgeti(L, first, (lua_Integer)i);
        if (read_fix(L, lua_gettop(L), i, &r->fixes[r->n], r->snapshot, msg,
                     sizeof msg) == 0) {
            r->n++;
        } else if (r->dropped++ == 0) {
            snprintf(r->drop_msg, sizeof r->drop_msg, "%s", msg);
        }
        lua_pop(L, 1);
    }
}

/* ---- the fixed answer ------------------------------------------------ */

/* When even the bundled reconcile.lua fails: no fix.  The state stays as
 * it is until the next reconciliation (the light one runs every
 * reconcile_interval_seconds, a thorough one before each level), and a
 * fix is never guessed at. */
static void reconcile_builtin(struct zerg_policy_call *c)
{
    reconcile_clear((struct reconcile_call *)c);
}

static zerg_json *fix_json(const struct zerg_fix *f)
{
    zerg_json *o = zerg_json_obj();
    if (!o)
        return NULL;
    if (f->task[0])
        zerg_json_set_str(o, "task", f->task);
    if (f->level > 0)
        zerg_json_set_num(o, "level", f->level);
    zerg_json_set_str(o, "fix", f->fix);
    zerg_json_set_str(o, "reason", f->reason);
    return o;
}

static void reconcile_why(const struct reconcile_call *r, zerg_json **why)
{
    if (!why || !(*why = zerg_policy_why(&r->c)))
        return;
    const zerg_json *s = r->snapshot;
    const zerg_json *thorough = zerg_json_get(s, "thorough");
    zerg_json_set_bool(*why, "thorough",
                       zerg_json_is(thorough, ZERG_JSON_BOOL) &&
                           thorough->u.boolean);
    zerg_json_set_num(*why, "current_level",
                      zerg_json_as_num(zerg_json_get(s, "current_level"), 0));
    zerg_json_set_num(*why, "tasks",
                      (double)zerg_json_len(zerg_json_get(s, "tasks")));
    zerg_json *list = zerg_json_arr();
    for (size_t i = 0; list && i < r->n; i++)
        zerg_json_push(list, fix_json(&r->fixes[i]));
    if (list)
        zerg_json_set(*why, "fixes", list);
    if (r->dropped) {
        zerg_json_set_num(*why, "dropped", (double)r->dropped);
        zerg_json_set_str(*why, "dropped_reason", r->drop_msg);
    }
}

int zerg_policy_reconcile(struct zerg_policy *p, const zerg_json *snapshot,
                          struct zerg_fix **fixes, size_t *nfixes,
                          zerg_json **why)
{
    struct reconcile_call r = {
        .c = {.p = p,
              .policy = "reconcile",
              .hook = "check",
              .full = "reconcile.check",
              .push = reconcile_push,
              .read = reconcile_read,
              .builtin = reconcile_builtin},
        .snapshot = snapshot,
    };
    zerg_policy_run(&r.c);
    if (r.dropped) {
        char msg[400];
        snprintf(msg, sizeof msg, "%zu fix(es) dropped; %s", r.dropped,
                 r.drop_msg);
        zerg_policy_report(p, "reconcile", r.c.full, r.c.file, msg, "dropped");
    }
    reconcile_why(&r, why);
    if (r.n == 0) {
        free(r.fixes);
        r.fixes = NULL;
    }
    *fixes = r.fixes;
    *nfixes = r.n;
    return 0;
}
