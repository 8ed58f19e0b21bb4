/* orch_pool.c - what an agent executor's failures and spend do to the
 * whole pool (DESIGN §14), as opposed to one task:
 *
 *   environment  the executor is missing, not logged in, refused as root:
 *                every task would fail the same way, so the rush stops
 *                at once with the fix, and nothing is charged to the task;
 *   rate_limit   the API said 429 / overloaded / a usage limit: the pool
 *                pauses (no new claims; running tasks go on) until the
 *                reset time the CLI gave or a growing backoff, then
 *                resumes (pool_pause, pool_resume); nothing is charged;
 *   spend        rush.max_cost_usd: once the recorded spend reaches it no
 *                new task is claimed (budget_exhausted); the rush ends
 *                when the running ones finish, resumable.
 *
 * The pause is a two-state table: RUNNING -> PAUSED (a rate limit) ->
 * RUNNING (the wait is over). */
#include "orch_internal.h"

#include <stdio.h>
#include <string.h>

#define RATE_BACKOFF_FIRST_NS (30 * ZERG_NS_PER_S)
#define RATE_BACKOFF_MAX_NS (15 * 60 * ZERG_NS_PER_S)
#define RATE_WAIT_MAX_NS (6 * 3600 * ZERG_NS_PER_S)

/* ---- spend -------------------------------------------------------------- */

void orch_pool_add_unfinished(struct zerg_orch *o, struct slot *sl)
{
    struct zerg_result r = sl->spend; /* no longer in flight: counted once */
    memset(&sl->spend, 0, sizeof sl->spend);
    int any = r.input_tokens || r.output_tokens || r.cache_read_tokens ||
              r.cache_write_tokens || r.cost_usd > 0;
    r.cost_estimated = r.cost_usd > 0; /* a heartbeat's cost is priced */
    if (any && sl->task >= 0 && r.attempt == orch_ts(o, sl->task)->attempt)
        orch_pool_add_cost(o, (size_t)sl->task, &r);
}

void orch_pool_add_cost(struct zerg_orch *o, size_t t,
                        const struct zerg_result *r)
{
    struct zerg_task_state *st = orch_ts(o, t);
    if (o->spent_usd < 0)
        o->spent_usd = zerg_state_cost_usd(o->s); /* once: resumed spend */
    if (r->cost_usd > 0) {
        st->cost_usd += r->cost_usd;
        o->spent_usd += r->cost_usd;
    }
    st->input_tokens += r->input_tokens;
    st->output_tokens += r->output_tokens;
    st->cache_read_tokens += r->cache_read_tokens;
    st->cache_write_tokens += r->cache_write_tokens;
    if (r->session_id[0])
        snprintf(st->session_id, sizeof st->session_id, "%s", r->session_id);
    if (r->model[0])
        snprintf(st->model, sizeof st->model, "%s", r->model);
    st->cost_estimated |= r->cost_estimated;
    orch_pool_check_cap(o, zerg_clock_mono(o->o.clock));
}

/* What the running attempts have spent so far, as their heartbeats say. */
static double in_flight(const struct zerg_orch *o)
{
    double usd = 0;
    for (int i = 0; i < o->nslots; i++)
        if (o->slots[i].task >= 0 && o->slots[i].spend.cost_usd > 0)
            usd += o->slots[i].spend.cost_usd;
    return usd;
}

void orch_pool_check_cap(struct zerg_orch *o, int64_t now)
{
    double cap = o->cfg->rush_max_cost_usd;
    if (cap <= 0 || o->budget_exhausted)
        return;
    if (o->spent_usd < 0)
        o->spent_usd = zerg_state_cost_usd(o->s);
    double running = in_flight(o), spent = o->spent_usd + running;
    if (spent < cap)
        return;
    o->budget_exhausted = 1;
    int stop = o->cfg->rush_cost_cap_action == ZERG_COST_CAP_STOP;
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "cost_usd", spent);
    zerg_json_set_num(data, "in_flight_usd", running);
    zerg_json_set_num(data, "max_cost_usd", cap);
    zerg_json_set_str(data, "action", stop ? "stop" : "finish");
    zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_WARN, "budget_exhausted",
                   NULL, data,
                   "Spent $%.2f (of it $%.2f in running attempts) of "
                   "rush.max_cost_usd $%.2f: no new task is claimed; %s",
                   spent, running, cap,
                   stop ? "running ones are stopped (rush.cost_cap_action: "
                          "stop)"
                        : "running ones finish");
    orch_run_event(o, stop ? RUN_EV_STOP : RUN_EV_CLOSE, 0, now);
}

/* ---- environment -------------------------------------------------------- */

/* The run cannot go on here: the task runs again (uncharged) after a
 * fix, and the run stops once it is requeued. */
static int environment_stop(struct zerg_orch *o, const struct zerg_result *r,
                            struct verdict *v)
{
    orch_verdict_requeue(v, "environment");
    if (o->failed_run)
        return 0;
    orch_run_fail(o, "task %s cannot run here: %.200s%s%.200s", r->task,
                  r->error[0] ? r->error : "the executor failed",
                  r->fix[0] ? ". Fix: " : "", r->fix);
    zerg_json *data = zerg_json_obj();
    zerg_json_set_str(data, "class", "environment");
    zerg_json_set_str(data, "fix", r->fix);
    zerg_log_event(o->o.log, r->worker_id, ZERG_LOG_ERROR, "task_failed",
                   r->task, data, "Task %s: %s (environment; no retry charged)",
                   r->task, o->run_error);
    v->stop_run = 1;
    return 0;
}

/* ---- the pause ---------------------------------------------------------- */

static void pool_pause(struct zerg_orch *o, const struct zerg_result *r,
                       int64_t now)
{
    int64_t wait = RATE_BACKOFF_FIRST_NS
                   << (o->rate_limits < 5 ? o->rate_limits : 5);
    if (wait > RATE_BACKOFF_MAX_NS)
        wait = RATE_BACKOFF_MAX_NS;
    int64_t wall_s = orch_wall_ns(o) / ZERG_NS_PER_S;
    if (r->reset_at_s > wall_s)
        wait = (r->reset_at_s - wall_s + 1) * ZERG_NS_PER_S;
    if (wait > RATE_WAIT_MAX_NS)
        wait = RATE_WAIT_MAX_NS;
    o->rate_limits++;
    if (o->pool_paused_until_mono_ns > now + wait)
        return; /* already paused for longer */
    o->pool_paused_until_mono_ns = now + wait;
    zerg_json *data = zerg_json_obj();
    zerg_json_set_str(data, "reason", r->error);
    zerg_json_set_num(data, "wait", ORCH_SEC(wait));
    if (r->reset_at_s)
        zerg_json_set_num(data, "reset_at_s", (double)r->reset_at_s);
    zerg_log_event(o->o.log, r->worker_id, ZERG_LOG_WARN, "pool_pause", r->task,
                   data,
                   "Rate limited (%s): no new claims for %.0fs; running tasks "
                   "go on",
                   r->error[0] ? r->error : "rate limit", ORCH_SEC(wait));
}

int orch_pool_failure(struct zerg_orch *o, const struct zerg_result *r,
                      struct verdict *v, int64_t now)
{
    if (!r->has_class)
        return 1;
    switch (zerg_failure_class_route(r->fclass)) {
    case ZERG_ROUTE_STOP:
        return environment_stop(o, r, v);
    case ZERG_ROUTE_PAUSE:
        pool_pause(o, r, now);
        orch_verdict_requeue(v, zerg_failure_class_name(r->fclass));
        v->resume = 1; /* its session stands; only the API said wait */
        return 0;
    case ZERG_ROUTE_RETRY:
    case ZERG_ROUTE_CRASH:
        break;
    }
    return 1;
}

int orch_pool_closed(struct zerg_orch *o, int64_t now, int64_t *wake)
{
    if (o->pool_paused_until_mono_ns) {
        if (now < o->pool_paused_until_mono_ns) {
            if (o->pool_paused_until_mono_ns < *wake)
                *wake = o->pool_paused_until_mono_ns;
            return 1;
        }
        o->pool_paused_until_mono_ns = 0;
        zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_INFO, "pool_resume",
                       NULL, NULL, "Rate limit wait over: claiming again");
    }
    return o->budget_exhausted;
}
