/* policy_reconcile.c - zerg_policy_reconcile: the snapshot pushed to
 * reconcile.check, each fix it returns checked one by one, so an
 * unusable fix is dropped (and logged) without losing the others, and
 * the same rule in C for when the bundled Lua fails. */
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

/* ---- the same rule in C ---------------------------------------------- */

/* reconcile_builtin is policies/reconcile.lua written against the
 * snapshot tree, for when the bundled Lua fails (test_policy_parity.c
 * holds the two equal; the Lua is the reference).  It reads the tree as
 * the Lua sees it after reconcile_push: JSON null is absent, a number
 * counts as a level only when it is whole, "levels" is an array (item i
 * is level i + 1) or an object keyed by integer text, as
 * zerg_lua_intkeys reads it.  What the orchestrator never builds and the
 * Lua raises on (a status that is not a string, a level that is not a
 * whole number, a levels key that is not one) is skipped here.  Each fix
 * passes the checks reconcile_read makes, with the same messages, so the
 * fixes dropped and the `why` are the same too. */

#define BUILTIN_TEXT 256 /* > sizeof zerg_fix.reason: cut there, as in Lua */

struct lvl {
    int has;   /* the Lua value is a number */
    int whole; /* ... with an integer value, n */
    int64_t n;
};

struct rtask {
    const char *id;
    const zerg_json *t;
    struct lvl lv;
};

/* One member of a level: a task (id order) or a mark (snapshot order). */
struct member {
    int64_t n;
    size_t rank;
    const struct rtask *task; /* NULL for a mark */
    const zerg_json *mark;
};

struct walk {
    struct reconcile_call *r;
    const zerg_json *snap;
    const zerg_json *tasks;
    int thorough;
    int worktree;       /* isolation == "worktree" */
    const char *branch; /* NULL when not a string */
    size_t seen;        /* fixes made so far, dropped ones included */
    struct rtask *t;
    size_t nt;
    struct member *m;
    size_t nm;
};

static struct lvl lvl_of(double x)
{
    struct lvl l = {.has = 1};
    /* lua_numbertointeger: whole and within int64 */
    l.whole = x >= -0x1p63 && x < 0x1p63 && x == floor(x);
    l.n = l.whole ? (int64_t)x : 0;
    return l;
}

/* util.level_from_id: n of the first `-L{n}-` in id when n >= 1.  A
 * number past int64 is a float in Lua, and math.tointeger refuses it. */
static struct lvl level_from_id(const char *id)
{
    struct lvl l = {0};
    for (const char *p = strstr(id, "-L"); p; p = strstr(p + 1, "-L")) {
        const char *d = p + 2, *e = d;
        while (isdigit((unsigned char)*e))
            e++;
        if (e == d || *e != '-')
            continue;
        errno = 0;
        long long v = strtoll(d, NULL, 10);
        if (errno != ERANGE && v >= 1)
            l = (struct lvl){.has = 1, .whole = 1, .n = v};
        return l;
    }
    return l;
}

/* check_task's lv: the task's level when >= 1, else its graph level when
 * >= 1, else the one in its id; *derived when it is not the task's own. */
static struct lvl task_level(const char *id, const zerg_json *t, int *derived)
{
    const zerg_json *lv = field(t, "level"), *gl = field(t, "graph_level");
    *derived = !(zerg_json_is(lv, ZERG_JSON_NUMBER) && lv->u.number >= 1);
    if (!*derived)
        return lvl_of(lv->u.number);
    if (zerg_json_is(gl, ZERG_JSON_NUMBER) && gl->u.number >= 1)
        return lvl_of(gl->u.number);
    return level_from_id(id);
}

/* Adds fix #(++seen), or drops it as reconcile_read would. */
static void add_fix(struct walk *w, const char *task, const char *fix,
                    struct lvl lv, const char *reason)
{
    struct reconcile_call *r = w->r;
    struct zerg_fix *f = &r->fixes[r->n];
    const struct fix_name *fn = fix_lookup(fix);
    size_t i = ++w->seen;
    char msg[256] = "";
    *f = (struct zerg_fix){.kind = fn->kind};
    snprintf(f->fix, sizeof f->fix, "%s", fix);
    snprintf(f->reason, sizeof f->reason, "%s", reason);
    if (task && strlen(task) >= sizeof f->task)
        snprintf(msg, sizeof msg, "fix #%zu: task must be an id string", i);
    else if (lv.has && (!lv.whole || lv.n < 0 || lv.n > INT_MAX))
        snprintf(msg, sizeof msg, "fix #%zu: level must be a whole number", i);
    else if (fn->task ? !task || !task[0] : lv.n < 1)
        snprintf(msg, sizeof msg, "fix #%zu: %s needs a %s", i, fix,
                 fn->task ? "task" : "level");
    else if (fn->kind == ZERG_FIX_RERUN)
        rerun_refused(w->snap, task, i, msg, sizeof msg);
    if (msg[0]) {
        if (r->dropped++ == 0)
            snprintf(r->drop_msg, sizeof r->drop_msg, "%s", msg);
        return;
    }
    snprintf(f->task, sizeof f->task, "%s", task ? task : "");
    f->level = lv.has ? (int)lv.n : 0;
    r->n++;
}

/* block: a pending task behind a failed or blocked dependency; the deps
 * are walked as ipairs does, up to the first null. */
static void check_deps(struct walk *w, const struct rtask *t)
{
    const zerg_json *deps = field(t->t, "deps");
    if (!zerg_json_is(deps, ZERG_JSON_ARRAY))
        return;
    for (size_t i = 0; i < zerg_json_len(deps); i++) {
        const zerg_json *dep = zerg_json_at(deps, i);
        if (!dep || dep->type == ZERG_JSON_NULL)
            return;
        const char *id = zerg_json_as_str(dep);
        const char *st = id ? str_of(field(w->tasks, id), "status") : NULL;
        if (!status_is(st, "failed", "blocked"))
            continue;
        char why[BUILTIN_TEXT];
        snprintf(why, sizeof why, "dependency %s is %s", id, st);
        add_fix(w, t->id, "block", t->lv, why);
        return;
    }
}

/* rerun: complete, with a commit the branch no longer holds (merged is
 * false, not merely absent). */
static void check_commit(struct walk *w, const struct rtask *t)
{
    const char *commit = str_of(t->t, "commit");
    const zerg_json *merged = field(t->t, "merged");
    if (!w->thorough || !w->worktree ||
        !status_is(str_of(t->t, "status"), "complete", NULL) || !commit ||
        !commit[0] || !zerg_json_is(merged, ZERG_JSON_BOOL) ||
        merged->u.boolean)
        return;
    char why[BUILTIN_TEXT];
    snprintf(why, sizeof why, "complete but its commit %.12s is not on %s",
             commit,
             w->branch && w->branch[0] ? w->branch : "the integration branch");
    add_fix(w, t->id, "rerun", t->lv, why);
}

static void check_task(struct walk *w, struct rtask *t)
{
    int derived;
    t->lv = task_level(t->id, t->t, &derived);
    if (derived && t->lv.has)
        add_fix(w, t->id, "set_level", t->lv, "task has no level");
    const char *st = str_of(t->t, "status");
    const zerg_json *alive = field(t->t, "worker_alive");
    if (status_is(st, "claimed", "in_progress") &&
        !(zerg_json_is(alive, ZERG_JSON_BOOL) && alive->u.boolean)) {
        const zerg_json *wk = field(t->t, "worker");
        char why[BUILTIN_TEXT];
        if (zerg_json_is(wk, ZERG_JSON_NUMBER) && wk->u.number >= 0)
            snprintf(why, sizeof why, "%s but worker %lld is not alive", st,
                     (long long)lvl_of(wk->u.number).n);
        else
            snprintf(why, sizeof why, "%s but no worker holds it", st);
        add_fix(w, t->id, "requeue", t->lv, why);
    }
    if (status_is(st, "pending", NULL))
        check_deps(w, t);
    check_commit(w, t);
}

/* Ids in the order of util.sorted_keys: Lua compares strings with
 * strcoll. */
static int by_id(const void *a, const void *b)
{
    return strcoll(((const struct rtask *)a)->id,
                   ((const struct rtask *)b)->id);
}

static int by_level(const void *a, const void *b)
{
    const struct member *x = a, *y = b;
    if (x->n != y->n)
        return x->n < y->n ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* The integer a levels key stands for, as zerg_lua_intkeys reads it. */
static int int_key(const char *s, int64_t *n)
{
    lua_Integer v;
    if (!zerg_lua_int_text(s, &v))
        return 0;
    *n = (int64_t)v;
    return 1;
}

static void add_mark(struct walk *w, int64_t n, const zerg_json *mark)
{
    if (mark && mark->type != ZERG_JSON_NULL)
        w->m[w->nm++] =
            (struct member){.n = n, .rank = w->nt + w->nm, .mark = mark};
}

static void collect_marks(struct walk *w, const zerg_json *levels)
{
    int64_t n;
    for (size_t i = 0; i < zerg_json_len(levels); i++) {
        if (zerg_json_is(levels, ZERG_JSON_ARRAY))
            add_mark(w, (int64_t)i + 1, zerg_json_at(levels, i));
        else if (int_key(zerg_json_key_at(levels, i), &n))
            add_mark(w, n, zerg_json_at(levels, i));
    }
}

/* level_facts and the level fixes for the members m[0..k) of level n. */
static void check_level(struct walk *w, const struct member *m, size_t k)
{
    size_t total = 0;
    const struct rtask *open = NULL;
    const zerg_json *mark = NULL;
    for (size_t j = 0; j < k; j++) {
        if (m[j].mark) {
            mark = m[j].mark; /* a later key replaces an earlier one */
            continue;
        }
        total++;
        const char *st = str_of(m[j].task->t, "status");
        if (!open && !status_is(st, "complete", "failed") &&
            !status_is(st, "blocked", NULL))
            open = m[j].task;
    }
    int marked = status_is(str_of(mark, "status"), "complete", NULL);
    const zerg_json *tasks = field(mark, "tasks");
    const zerg_json *unfinished = field(mark, "unfinished");
    double all =
        zerg_json_is(tasks, ZERG_JSON_NUMBER) ? tasks->u.number : (double)total;
    char facts[BUILTIN_TEXT] = "", why[2 * BUILTIN_TEXT];
    if (open) {
        const char *st = str_of(open->t, "status");
        snprintf(facts, sizeof facts, "%s is %s", open->id, st ? st : "nil");
    } else if (zerg_json_is(unfinished, ZERG_JSON_NUMBER) &&
               unfinished->u.number > 0) {
        snprintf(facts, sizeof facts, "%lld of its tasks are unfinished",
                 (long long)lvl_of(unfinished->u.number).n);
    }
    struct lvl lv = {.has = 1, .whole = 1, .n = m[0].n};
    if (marked && facts[0]) {
        snprintf(why, sizeof why, "level %lld is marked complete but %s",
                 (long long)lv.n, facts);
        add_fix(w, NULL, "reopen_level", lv, why);
    } else if (w->thorough && !marked && !facts[0] && all > 0) {
        snprintf(why, sizeof why, "all %lld tasks of level %lld are terminal",
                 (long long)lvl_of(all).n, (long long)lv.n);
        add_fix(w, NULL, "complete_level", lv, why);
    }
}

static void check_levels(struct walk *w, const zerg_json *levels)
{
    for (size_t i = 0; i < w->nt; i++)
        if (w->t[i].lv.has && w->t[i].lv.whole)
            w->m[w->nm++] =
                (struct member){.n = w->t[i].lv.n, .rank = i, .task = &w->t[i]};
    collect_marks(w, levels);
    qsort(w->m, w->nm, sizeof *w->m, by_level);
    for (size_t i = 0, k; i < w->nm; i += k) {
        for (k = 1; i + k < w->nm && w->m[i + k].n == w->m[i].n; k++)
            ;
        check_level(w, &w->m[i], k);
    }
}

/* The arrays for one walk; -1 when out of memory. */
static int walk_alloc(struct walk *w, const zerg_json *levels)
{
    size_t nt =
        zerg_json_is(w->tasks, ZERG_JSON_OBJECT) ? zerg_json_len(w->tasks) : 0;
    size_t nl = zerg_json_len(levels);
    w->t = calloc(nt ? nt : 1, sizeof *w->t);
    w->m = calloc(nt + nl + 1, sizeof *w->m);
    /* at most three fixes per task and one per level */
    w->r->fixes = calloc(4 * nt + nl + 1, sizeof *w->r->fixes);
    if (!w->t || !w->m || !w->r->fixes)
        return -1;
    for (size_t i = 0; i < nt; i++) {
        const zerg_json *t = zerg_json_at(w->tasks, i);
        if (t && t->type != ZERG_JSON_NULL)
            w->t[w->nt++] =
                (struct rtask){.id = zerg_json_key_at(w->tasks, i), .t = t};
    }
    return 0;
}

static void reconcile_builtin(struct zerg_policy_call *c)
{
    struct reconcile_call *r = (struct reconcile_call *)c;
    const zerg_json *snap = r->snapshot, *levels = field(snap, "levels");
    const zerg_json *thorough = field(snap, "thorough");
    struct walk w = {
        .r = r,
        .snap = snap,
        .tasks = field(snap, "tasks"),
        .thorough = thorough &&
                    !(thorough->type == ZERG_JSON_BOOL && !thorough->u.boolean),
        .worktree = status_is(str_of(snap, "isolation"), "worktree", NULL),
        .branch = str_of(snap, "branch"),
    };
    reconcile_clear(r);
    if (!zerg_json_is(levels, ZERG_JSON_ARRAY) &&
        !zerg_json_is(levels, ZERG_JSON_OBJECT))
        levels = NULL;
    if (walk_alloc(&w, levels) == 0) {
        qsort(w.t, w.nt, sizeof *w.t, by_id);
        for (size_t i = 0; i < w.nt; i++)
            check_task(&w, &w.t[i]);
        check_levels(&w, levels);
    } else {
        reconcile_clear(r); /* out of memory: no fixes, do no harm */
    }
    free(w.t);
    free(w.m);
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
