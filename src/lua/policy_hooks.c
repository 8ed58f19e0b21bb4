/* policy_hooks.c - the decisions of include/zerg/policy.h other than
 * reconciliation: backoff.delay, stale.task, stale.worker, respawn.decide
 * and retry.decide.  For each: the arguments pushed to Lua, the checks and
 * clamps on the answer, the fixed safe answer for when even the bundled
 * Lua fails (`builtin`: never a copy of the policy, see policy_call.h),
 * and the `why` returned to the caller.  The machinery: policy.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lua/policy_call.h"
#include "zerg/config.h"
#include "zerg/failure.h"

/* A `verdict [, reason]` answer (stale, respawn). */
static void read_verdict(lua_State *L, const struct zerg_policy_call *c,
                         int first, int nres, int *verdict, char *reason,
                         size_t size)
{
    if (nres < 1 || lua_type(L, first) != LUA_TBOOLEAN)
        luaL_error(L, "%s returned %s, expected true or false", c->full,
                   got(L, first, nres, first));
    *verdict = lua_toboolean(L, first);
    reason[0] = '\0';
    if (nres >= 2 && !lua_isnil(L, first + 1)) {
        if (lua_type(L, first + 1) != LUA_TSTRING)
            luaL_error(L,
                       "%s returned a %s as its reason, expected a "
                       "string",
                       c->full, luaL_typename(L, first + 1));
        copy_reason(reason, size, lua_tostring(L, first + 1));
    }
}

/* d clamped to [0, ZERG_POLICY_DELAY_MAX_S]; *clamped when it was
 * outside. */
static double clamp_delay(double d, int *clamped)
{
    *clamped = d < 0 || d > ZERG_POLICY_DELAY_MAX_S;
    return d < 0                         ? 0
           : d > ZERG_POLICY_DELAY_MAX_S ? ZERG_POLICY_DELAY_MAX_S
                                         : d;
}

/* A delay in seconds: a finite number, clamped.  NaN and the infinities
 * are errors alike: clamping inf to the maximum would turn an arithmetic
 * slip (a division by zero) into a silent one-hour wait. */
static double check_delay(lua_State *L, const struct zerg_policy_call *c,
                          int idx, int *clamped)
{
    double d = lua_tonumber(L, idx);
    if (isnan(d))
        luaL_error(L, "%s returned NaN as a delay", c->full);
    if (isinf(d))
        luaL_error(L,
                   "%s returned %s as a delay, expected a finite number "
                   "of seconds",
                   c->full, d > 0 ? "inf" : "-inf");
    return clamp_delay(d, clamped);
}

/* ---- backoff.delay --------------------------------------------------- */

struct backoff_call {
    struct zerg_policy_call c;
    int spawn; /* kind "spawn", else "task" */
    int attempt;
    enum zerg_backoff strategy;
    double base, max; /* seconds */
    double delay;     /* answer, seconds */
    int clamped;
};

static void push_backoff_opts(lua_State *L, const struct backoff_call *b)
{
    lua_createtable(L, 0, 4);
    set_str(L, "strategy", zerg_backoff_name(b->strategy));
    set_num(L, "base", b->base);
    set_num(L, "max", b->max);
    set_str(L, "kind", b->spawn ? "spawn" : "task");
}

static int backoff_push(lua_State *L, struct zerg_policy_call *c)
{
    struct backoff_call *b = (struct backoff_call *)c;
    lua_pushinteger(L, b->attempt);
    push_backoff_opts(L, b);
    return 2;
}

static void backoff_read(lua_State *L, struct zerg_policy_call *c, int first,
                         int nres)
{
    struct backoff_call *b = (struct backoff_call *)c;
    if (nres < 1 || lua_type(L, first) != LUA_TNUMBER)
        luaL_error(L, "%s returned %s, expected a number of seconds", c->full,
                   got(L, first, nres, first));
    b->delay = check_delay(L, c, first, &b->clamped);
}

/* Fixed: the longest wait the config allows for the kind.  Waiting long
 * is never a retry storm, and the config names the bound. */
static void backoff_builtin(struct zerg_policy_call *c)
{
    struct backoff_call *b = (struct backoff_call *)c;
    b->delay = clamp_delay(b->max, &b->clamped);
}

static void backoff_init(struct backoff_call *b, struct zerg_policy *p,
                         const char *kind, int attempt)
{
    const struct zerg_config *cfg = zerg_policy_config(p);
    b->c = (struct zerg_policy_call){.p = p,
                                     .policy = "backoff",
                                     .hook = "delay",
                                     .full = "backoff.delay",
                                     .push = backoff_push,
                                     .read = backoff_read,
                                     .builtin = backoff_builtin};
    b->spawn = kind && strcmp(kind, "spawn") == 0;
    b->attempt = attempt;
    b->strategy =
        b->spawn ? cfg->spawn_backoff_strategy : cfg->backoff_strategy;
    b->base =
        secs(b->spawn ? cfg->spawn_backoff_base_ns : cfg->backoff_base_ns);
    b->max = secs(b->spawn ? cfg->spawn_backoff_max_ns : cfg->backoff_max_ns);
}

int64_t zerg_policy_backoff_ns(struct zerg_policy *p, const char *kind,
                               int attempt, zerg_json **why)
{
    struct backoff_call b;
    backoff_init(&b, p, kind, attempt);
    zerg_policy_run(&b.c);
    if (why && (*why = zerg_policy_why(&b.c))) {
        zerg_json_set_str(*why, "kind", b.spawn ? "spawn" : "task");
        zerg_json_set_num(*why, "attempt", attempt);
        zerg_json_set_str(*why, "strategy", zerg_backoff_name(b.strategy));
        zerg_json_set_num(*why, "base", b.base);
        zerg_json_set_num(*why, "max", b.max);
        zerg_json_set_num(*why, "delay", b.delay);
        if (b.clamped)
            zerg_json_set_bool(*why, "clamped", 1);
    }
    return zerg_s_to_ns(b.delay);
}

/* ---- stale.task / stale.worker --------------------------------------- */

struct stale_call {
    struct zerg_policy_call c;
    int is_task;
    const char *task_id;
    int worker;
    int64_t seq;
    double started, last, now; /* seconds; last = progress or change */
    double threshold;
    int stale;
    char reason[ZERG_POLICY_REASON_MAX + 1];
};

static void push_stale_opts(lua_State *L, const struct zerg_config *cfg)
{
    lua_createtable(L, 0, 3);
    set_num(L, "task_stale_timeout", secs(cfg->task_stale_timeout_ns));
    set_num(L, "heartbeat_stale_threshold",
            secs(cfg->heartbeat_stale_threshold_ns));
    set_num(L, "heartbeat_interval", secs(cfg->heartbeat_interval_ns));
}

static int stale_push(lua_State *L, struct zerg_policy_call *c)
{
    struct stale_call *s = (struct stale_call *)c;
    lua_createtable(L, 0, 4);
    set_int(L, "worker", s->worker);
    if (s->is_task) {
        set_str(L, "id", s->task_id ? s->task_id : "");
        set_num(L, "started", s->started);
        set_num(L, "last_progress", s->last);
    } else {
        set_int(L, "seq", s->seq);
        set_num(L, "last_change", s->last);
    }
    lua_pushnumber(L, s->now);
    push_stale_opts(L, zerg_policy_config(c->p));
    return 3;
}

static void stale_read(lua_State *L, struct zerg_policy_call *c, int first,
                       int nres)
{
    struct stale_call *s = (struct stale_call *)c;
    read_verdict(L, c, first, nres, &s->stale, s->reason, sizeof s->reason);
}

/* Fixed: stale once the configured threshold has passed, the meaning of
 * the config key itself (a policy may only refine it). */
static void stale_builtin(struct zerg_policy_call *c)
{
    struct stale_call *s = (struct stale_call *)c;
    s->stale = s->now - s->last >= s->threshold;
    copy_reason(s->reason, sizeof s->reason,
                s->stale ? "threshold passed (builtin)" : "");
}

static void stale_why(const struct stale_call *s, zerg_json **why)
{
    if (!why || !(*why = zerg_policy_why(&s->c)))
        return;
    if (s->is_task)
        zerg_json_set_str(*why, "task", s->task_id);
    else
        zerg_json_set_num(*why, "seq", (double)s->seq);
    zerg_json_set_num(*why, "worker", s->worker);
    zerg_json_set_num(*why, "elapsed", s->now - s->last);
    zerg_json_set_num(*why, "threshold", s->threshold);
    zerg_json_set_bool(*why, "stale", s->stale);
    if (s->reason[0])
        zerg_json_set_str(*why, "reason", s->reason);
}

static struct stale_call stale_init(struct zerg_policy *p, int is_task)
{
    return (struct stale_call){
        .c = {.p = p,
              .policy = "stale",
              .hook = is_task ? "task" : "worker",
              .full = is_task ? "stale.task" : "stale.worker",
              .push = stale_push,
              .read = stale_read,
              .builtin = stale_builtin},
        .is_task = is_task,
        .threshold =
            secs(is_task ? zerg_policy_config(p)->task_stale_timeout_ns
                         : zerg_policy_config(p)->heartbeat_stale_threshold_ns),
    };
}

int zerg_policy_stale_task(struct zerg_policy *p, const char *task_id,
                           int worker, int64_t started_ns,
                           int64_t last_progress_ns, int64_t now_ns,
                           zerg_json **why)
{
    struct stale_call s = stale_init(p, 1);
    s.task_id = task_id;
    s.worker = worker;
    s.started = secs(started_ns);
    s.last = secs(last_progress_ns);
    s.now = secs(now_ns);
    zerg_policy_run(&s.c);
    stale_why(&s, why);
    return s.stale;
}

int zerg_policy_stale_worker(struct zerg_policy *p, int worker, int64_t seq,
                             int64_t last_change_ns, int64_t now_ns,
                             zerg_json **why)
{
    struct stale_call s = stale_init(p, 0);
    s.worker = worker;
    s.seq = seq;
    s.last = secs(last_change_ns);
    s.now = secs(now_ns);
    zerg_policy_run(&s.c);
    stale_why(&s, why);
    return s.stale;
}

/* ---- respawn.decide -------------------------------------------------- */

struct respawn_call {
    struct zerg_policy_call c;
    const struct zerg_respawn_in *in;
    int respawn;
    char reason[ZERG_POLICY_REASON_MAX + 1];
};

static int respawn_push(lua_State *L, struct zerg_policy_call *c)
{
    const struct zerg_respawn_in *in = ((struct respawn_call *)c)->in;
    const struct zerg_config *cfg = zerg_policy_config(c->p);
    lua_createtable(L, 0, 7); /* slot */
    set_int(L, "id", in->slot);
    set_int(L, "respawn_count", in->respawn_count);
    lua_createtable(L, 0, 2); /* slot exit */
    if (in->exit_code >= 0)
        set_int(L, "code", in->exit_code);
    if (in->signal > 0)
        set_int(L, "signal", in->signal);
    lua_setfield(L, -2, "exit"); /* slot */
    set_num(L, "uptime", secs(in->uptime_ns));
    set_bool(L, "was_ready", in->was_ready);
    set_int(L, "work_left", in->work_left);
    lua_createtable(L, 0, 2); /* slot opts */
    set_bool(L, "auto_respawn", cfg->auto_respawn);
    set_int(L, "max_respawn_attempts", cfg->max_respawn_attempts);
    return 2;
}

static void respawn_read(lua_State *L, struct zerg_policy_call *c, int first,
                         int nres)
{
    struct respawn_call *r = (struct respawn_call *)c;
    read_verdict(L, c, first, nres, &r->respawn, r->reason, sizeof r->reason);
}

/* Fixed: no respawn.  The slot retires (the run goes on with the others,
 * and ends failed, resumable, when none is left): a broken policy cannot
 * turn into a respawn loop. */
static void respawn_builtin(struct zerg_policy_call *c)
{
    struct respawn_call *r = (struct respawn_call *)c;
    r->respawn = 0;
    snprintf(r->reason, sizeof r->reason, "no respawn (builtin)");
}

int zerg_policy_respawn(struct zerg_policy *p, const struct zerg_respawn_in *in,
                        zerg_json **why)
{
    struct respawn_call r = {
        .c = {.p = p,
              .policy = "respawn",
              .hook = "decide",
              .full = "respawn.decide",
              .push = respawn_push,
              .read = respawn_read,
              .builtin = respawn_builtin},
        .in = in,
    };
    zerg_policy_run(&r.c);
    if (why && (*why = zerg_policy_why(&r.c))) {
        zerg_json_set_num(*why, "slot", in->slot);
        zerg_json_set_num(*why, "respawn_count", in->respawn_count);
        zerg_json_set_num(*why, "max_respawn_attempts",
                          zerg_policy_config(p)->max_respawn_attempts);
        zerg_json_set_num(*why, "exit_code", in->exit_code);
        zerg_json_set_num(*why, "signal", in->signal);
        zerg_json_set_num(*why, "uptime", secs(in->uptime_ns));
        zerg_json_set_num(*why, "work_left", in->work_left);
        zerg_json_set_bool(*why, "respawn", r.respawn);
        zerg_json_set_str(*why, "reason", r.reason);
    }
    return r.respawn;
}

/* ---- retry.decide ---------------------------------------------------- */

struct retry_call {
    struct zerg_policy_call c;
    const struct zerg_retry_in *in;
    struct zerg_retry_out *out;
    int clamped;
};

/* The failure class the retry policy sees (DESIGN §14): as the worker
 * classified it, else from the kind. */
static const char *retry_class(const struct zerg_retry_in *in)
{
    if (in->failure_class && *in->failure_class)
        return in->failure_class;
    return zerg_failure_class_name(zerg_failure_class_of_kind(in->failure));
}

static int retry_push(lua_State *L, struct zerg_policy_call *c)
{
    const struct zerg_retry_in *in = ((struct retry_call *)c)->in;
    const struct zerg_config *cfg = zerg_policy_config(c->p);
    lua_createtable(L, 0, 4); /* task */
    set_str(L, "id", in->task_id ? in->task_id : "");
    set_int(L, "retry_count", in->retry_count);
    set_int(L, "crash_count", in->crash_count);
    set_int(L, "attempt", in->attempt);
    lua_createtable(L, 0, 3); /* task failure */
    set_str(L, "kind", in->failure ? in->failure : "exit");
    set_str(L, "class", retry_class(in));
    if (in->exit_code >= 0)
        set_int(L, "exit_code", in->exit_code);
    if (in->signal > 0)
        set_int(L, "signal", in->signal);
    lua_createtable(L, 0, 3); /* task failure opts */
    set_int(L, "retry_attempts", cfg->retry_attempts);
    set_int(L, "max_task_crashes", cfg->max_task_crashes);
    struct backoff_call b;
    backoff_init(&b, c->p, "task", 1);
    push_backoff_opts(L, &b);
    lua_setfield(L, -2, "backoff");
    return 3;
}

/* Field k of the table at idx as a boolean; raises when it is not one. */
static int bool_field(lua_State *L, const struct zerg_policy_call *c, int idx,
                      const char *k)
{
    int t = lua_getfield(L, idx, k);
    if (t != LUA_TBOOLEAN)
        luaL_error(L, "%s returned %s = %s, expected true or false", c->full, k,
                   lua_typename(L, t));
    int v = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return v;
}

static void retry_read(lua_State *L, struct zerg_policy_call *c, int first,
                       int nres)
{
    struct retry_call *r = (struct retry_call *)c;
    struct zerg_retry_out *out = r->out;
    if (nres < 1 || !lua_istable(L, first))
        luaL_error(L,
                   "%s returned %s, expected a table {retry, delay, "
                   "charge}",
                   c->full, got(L, first, nres, first));
    out->retry = bool_field(L, c, first, "retry");
    out->charge = bool_field(L, c, first, "charge");
    int rt = lua_getfield(L, first, "resume");
    if (rt != LUA_TNIL && rt != LUA_TBOOLEAN)
        luaL_error(L, "%s returned resume = %s, expected true or false",
                   c->full, lua_typename(L, rt));
    out->resume = rt == LUA_TBOOLEAN && lua_toboolean(L, -1);
    lua_pop(L, 1);
    int t = lua_getfield(L, first, "delay");
    if (t != LUA_TNIL && t != LUA_TNUMBER)
        luaL_error(L, "%s returned delay = %s, expected a number of seconds",
                   c->full, lua_typename(L, t));
    out->delay_ns =
        zerg_s_to_ns(t == LUA_TNIL ? 0 : check_delay(L, c, -1, &r->clamped));
    t = lua_getfield(L, first, "reason");
    if (t != LUA_TNIL && t != LUA_TSTRING)
        luaL_error(L, "%s returned reason = %s, expected a string", c->full,
                   lua_typename(L, t));
    copy_reason(out->reason, sizeof out->reason,
                t == LUA_TSTRING ? lua_tostring(L, -1) : "");
    lua_pop(L, 2);
}

/* Fixed: no retry; the task fails and `zerg retry` brings it back.  The
 * charge is the failure class's own (include/zerg/failure.h): a crash
 * stays uncharged, whoever decides. */
static void retry_builtin(struct zerg_policy_call *c)
{
    struct retry_call *r = (struct retry_call *)c;
    enum zerg_failure_class fc = zerg_failure_class_of_kind(r->in->failure);
    *r->out = (struct zerg_retry_out){
        .charge = zerg_failure_class_charged(fc),
    };
    r->clamped = 0; /* a failed read may have set it */
    copy_reason(r->out->reason, sizeof r->out->reason, "no retry (builtin)");
}

static void retry_why(const struct retry_call *r, int delay_override,
                      zerg_json **why)
{
    const struct zerg_retry_in *in = r->in;
    if (!why || !(*why = zerg_policy_why(&r->c)))
        return;
    zerg_json_set_str(*why, "task", in->task_id);
    zerg_json_set_str(*why, "failure", in->failure ? in->failure : "exit");
    zerg_json_set_num(*why, "exit_code", in->exit_code);
    zerg_json_set_num(*why, "signal", in->signal);
    zerg_json_set_num(*why, "attempt", in->attempt);
    zerg_json_set_num(*why, "retry_count", in->retry_count);
    zerg_json_set_num(*why, "crash_count", in->crash_count);
    zerg_json_set_num(*why, "retry_attempts",
                      zerg_policy_config(r->c.p)->retry_attempts);
    zerg_json_set_num(*why, "max_task_crashes",
                      zerg_policy_config(r->c.p)->max_task_crashes);
    zerg_json_set_bool(*why, "retry", r->out->retry);
    zerg_json_set_bool(*why, "charge", r->out->charge);
    zerg_json_set_bool(*why, "resume", r->out->resume);
    zerg_json_set_num(*why, "delay", secs(r->out->delay_ns));
    if (delay_override)
        zerg_json_set_str(*why, "delay_policy", "override");
    if (r->clamped)
        zerg_json_set_bool(*why, "clamped", 1);
    zerg_json_set_str(*why, "reason", r->out->reason);
}

void zerg_policy_retry(struct zerg_policy *p, const struct zerg_retry_in *in,
                       struct zerg_retry_out *out, zerg_json **why)
{
    struct retry_call r = {
        .c = {.p = p,
              .policy = "retry",
              .hook = "decide",
              .full = "retry.decide",
              .push = retry_push,
              .read = retry_read,
              .builtin = retry_builtin},
        .in = in,
        .out = out,
    };
    *out = (struct zerg_retry_out){0};
    zerg_policy_run(&r.c);
    /* The bundled retry policy asks the bundled backoff for its delay; a
     * project that overrides backoff.delay expects that to govern task
     * retries too, so ask the active backoff policy instead. */
    int delay_override = r.c.src != ZERG_POLICY_OVERRIDE && out->retry &&
                         out->charge &&
                         zerg_policy_override_active(p, "backoff");
    if (delay_override)
        out->delay_ns =
            zerg_policy_backoff_ns(p, "task", in->retry_count + 1, NULL);
    retry_why(&r, delay_override, why);
}
