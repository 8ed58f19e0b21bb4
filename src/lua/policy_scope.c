/* policy_scope.c - zerg_policy_scope and zerg_policy_scope_hook
 * (include/zerg/policy.h): a task's paths asked of scope.lua, one of
 * three hooks of one shape (task, paths, opts) -> verdict, reason:
 * scope.decide (paths outside files.create and files.modify, DESIGN
 * section 13), scope.config (zerg's own configuration changed) and
 * scope.missing (declared outputs never made, section 18).  The arguments
 * pushed to Lua, the check on the verdict, the fixed answer for when even
 * the bundled Lua fails, and the `why` returned to the caller.  The machinery:
 * policy.c. */
#include <stdio.h>
#include <string.h>

#include "lua/policy_call.h"
#include "zerg/graph.h"

/* A reason names a few paths, each possibly long: 255 bytes keeps a log
 * line readable while naming more than the 63 of the other hooks. */
#define SCOPE_REASON_MAX 255
#define SCOPE_LISTED 3 /* paths the bundled reason names */

static const char *const verdict_names[] = {
    [ZERG_SCOPE_ALLOW] = "allow",
    [ZERG_SCOPE_WARN] = "warn",
    [ZERG_SCOPE_FAIL] = "fail",
};

#define NVERDICTS (sizeof verdict_names / sizeof *verdict_names)

const char *zerg_scope_verdict_name(enum zerg_scope_verdict v)
{
    return (unsigned)v < NVERDICTS ? verdict_names[v] : "unknown";
}

/* The hooks: name, the bundled verdict, and the fixed answer's words
 * (scope_builtin: a count of the paths follows). */
static const struct {
    const char *hook, *full;
    enum zerg_scope_verdict verdict;
    const char *builtin;
} hooks[] = {
    [ZERG_SCOPE_DECIDE] = {"decide", "scope.decide", ZERG_SCOPE_WARN,
                           "out of scope"},
    [ZERG_SCOPE_CONFIG] = {"config", "scope.config", ZERG_SCOPE_WARN,
                           "changes zerg's own configuration: review "
                           "before merging"},
    [ZERG_SCOPE_MISSING] = {"missing", "scope.missing", ZERG_SCOPE_FAIL,
                            "missing_output: files.create not made"},
};

#define NHOOKS (sizeof hooks / sizeof *hooks)

struct scope_call {
    struct zerg_policy_call c;
    enum zerg_scope_hook hook;
    const struct zerg_task *task;
    const char *const *paths;
    size_t npaths;
    enum zerg_scope_verdict verdict;
    char reason[SCOPE_REASON_MAX + 1];
};

/* ---- arguments ------------------------------------------------------- */

static void push_list(lua_State *L, const char *const *v, size_t n)
{
    lua_createtable(L, n > INT_MAX ? INT_MAX : (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        lua_pushstring(L, v[i] ? v[i] : "");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
}

static void push_files(lua_State *L, const struct zerg_strlist *l,
                       const char *k)
{
    if (l) {
        push_list(L, (const char *const *)l->v, l->n);
    } else {
        lua_newtable(L);
    }
    lua_setfield(L, -2, k);
}

static int scope_push(lua_State *L, struct zerg_policy_call *c)
{
    const struct scope_call *s = (const struct scope_call *)c;
    const struct zerg_task *t = s->task;
    lua_createtable(L, 0, 4); /* task */
    set_str(L, "id", t && t->id ? t->id : "");
    set_str(L, "title", t && t->title ? t->title : "");
    set_int(L, "level", t ? t->level : 0);
    lua_createtable(L, 0, 3); /* task files */
    push_files(L, t ? &t->files_create : NULL, "create");
    push_files(L, t ? &t->files_modify : NULL, "modify");
    push_files(L, t ? &t->files_read : NULL, "read");
    lua_setfield(L, -2, "files");      /* task */
    push_list(L, s->paths, s->npaths); /* task paths */
    lua_createtable(L, 0, 1);          /* task paths opts */
    set_int(L, "listed", SCOPE_LISTED);
    return 3;
}

/* ---- the answer ------------------------------------------------------ */

static int verdict_lookup(const char *s, enum zerg_scope_verdict *v)
{
    for (size_t i = 0; i < NVERDICTS; i++)
        if (strcmp(verdict_names[i], s) == 0) {
            *v = (enum zerg_scope_verdict)i;
            return 0;
        }
    return -1;
}

/* `verdict [, reason]`: an unknown verdict raises, so the bundled policy
 * decides and the error is logged like any other bad answer. */
static void scope_read(lua_State *L, struct zerg_policy_call *c, int first,
                       int nres)
{
    struct scope_call *s = (struct scope_call *)c;
    if (nres < 1 || lua_type(L, first) != LUA_TSTRING)
        luaL_error(L,
                   "%s returned %s, expected \"allow\", \"warn\" or "
                   "\"fail\"",
                   c->full, got(L, first, nres, first));
    if (verdict_lookup(lua_tostring(L, first), &s->verdict) != 0)
        luaL_error(L,
                   "%s returned \"%s\", expected \"allow\", \"warn\" or "
                   "\"fail\"",
                   c->full, lua_tostring(L, first));
    s->reason[0] = '\0';
    if (nres >= 2 && !lua_isnil(L, first + 1)) {
        if (lua_type(L, first + 1) != LUA_TSTRING)
            luaL_error(L,
                       "%s returned a %s as its reason, expected a "
                       "string",
                       c->full, luaL_typename(L, first + 1));
        zerg_text_cut(s->reason, sizeof s->reason, lua_tostring(L, first + 1),
                      SCOPE_REASON_MAX);
    }
}

/* ---- the fixed answer ------------------------------------------------ */

/* When even the bundled scope.lua fails: the hook's documented default
 * verdict (decide and config warn, missing fails) and its words with a
 * count of the paths; the event carries the paths themselves. */
static void scope_builtin(struct zerg_policy_call *c)
{
    struct scope_call *s = (struct scope_call *)c;
    s->verdict = hooks[s->hook].verdict;
    snprintf(s->reason, sizeof s->reason, "%s (%zu %s, builtin)",
             hooks[s->hook].builtin, s->npaths,
             s->npaths == 1 ? "path" : "paths");
}

/* ---- the decision ---------------------------------------------------- */

static void scope_why(const struct scope_call *s, zerg_json **why)
{
    if (!why || !(*why = zerg_policy_why(&s->c)))
        return;
    zerg_json_set_str(*why, "task", s->task && s->task->id ? s->task->id : "");
    zerg_json_set_num(*why, "paths", (double)s->npaths);
    zerg_json_set_str(*why, "verdict", zerg_scope_verdict_name(s->verdict));
    zerg_json_set_str(*why, "reason", s->reason);
}

enum zerg_scope_verdict
zerg_policy_scope_hook(struct zerg_policy *p, enum zerg_scope_hook hook,
                       const struct zerg_task *task, const char *const *paths,
                       size_t npaths, char *reason, size_t reason_size,
                       zerg_json **why)
{
    if ((unsigned)hook >= NHOOKS)
        hook = ZERG_SCOPE_DECIDE;
    struct scope_call s = {
        .c = {.p = p,
              .policy = "scope",
              .hook = hooks[hook].hook,
              .full = hooks[hook].full,
              .push = scope_push,
              .read = scope_read,
              .builtin = scope_builtin},
        .hook = hook,
        .task = task,
        .paths = paths,
        .npaths = paths ? npaths : 0,
        .verdict = hooks[hook].verdict,
    };
    zerg_policy_run(&s.c);
    if (reason)
        zerg_text_cut(reason, reason_size, s.reason, SCOPE_REASON_MAX);
    scope_why(&s, why);
    return s.verdict;
}

enum zerg_scope_verdict zerg_policy_scope(struct zerg_policy *p,
                                          const struct zerg_task *task,
                                          const char *const *paths,
                                          size_t npaths, char *reason,
                                          size_t reason_size, zerg_json **why)
{
    return zerg_policy_scope_hook(p, ZERG_SCOPE_DECIDE, task, paths, npaths,
                                  reason, reason_size, why);
}
