/* orch_attempt.c - how an attempt ends: one verdict, then one dispatch.
 *
 * An attempt ends with a result (a file or an event line, fenced in
 * orch_intake.c) or with its worker's exit (orch_slot.c).  Either way
 * the end is judged once into a struct verdict, and orch_attempt_end
 * alone applies it: the task's move (through orch_tasks.c), the slot
 * told its task is done, then whatever the run must do.
 *
 * A result's verdict, in order, each step able to end it:
 *
 *   failing, from a worker being killed   its exit decides (left here)
 *   failing, class environment            requeue; the run stops
 *   failing, class rate_limit             requeue; the pool pauses
 *   failing, otherwise                    FAILED (retry.decide)
 *   passing, a declared output missing    FAILED missing_output
 *   passing, under worktree isolation     its commit taken, scope.config,
 *                                         scope.decide, then merged:
 *                                         FAILED / REQUEUE (conflict,
 *                                         held branch) / FAIL_NOW
 *   passing, under rush.review            the same checks, then REVIEW:
 *                                         kept, awaiting_review, merged
 *                                         once approved (orch_review.c)
 *   passing                               COMPLETE
 *
 * A worker's exit: a crash or a stale heartbeat is FAILED (uncharged by
 * its class), a task timeout FAILED (charged), a stop REQUEUE. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "orch_internal.h"

int orch_verdict_failed(struct verdict *v, const char *failure, const char *cls,
                        int exit_code, int sig, const char *fmt, ...)
{
    va_list ap;
    *v = (struct verdict){.kind = VERDICT_FAILED,
                          .failure = failure,
                          .cls = cls,
                          .exit_code = exit_code,
                          .sig = sig};
    va_start(ap, fmt);
    vsnprintf(v->error, sizeof v->error, fmt, ap);
    va_end(ap);
    return 0;
}

int orch_verdict_requeue(struct verdict *v, const char *why)
{
    *v = (struct verdict){.kind = VERDICT_REQUEUE};
    snprintf(v->error, sizeof v->error, "%s", why);
    return 0;
}

int orch_verdict_fail_now(struct verdict *v, const char *reason,
                          const char *fmt, ...)
{
    va_list ap;
    *v = (struct verdict){.kind = VERDICT_FAIL_NOW, .failure = reason};
    va_start(ap, fmt);
    vsnprintf(v->error, sizeof v->error, fmt, ap);
    va_end(ap);
    return 0;
}

/* ---- the verdict of a result -------------------------------------------- */

/* A failing result: the pool's (environment, rate limit) or the task's. */
static void failed(struct zerg_orch *o, const struct zerg_result *r,
                   struct verdict *v, int64_t now)
{
    if (!orch_pool_failure(o, r, v, now))
        return;
    const char *kind = r->timed_out ? "timeout" : r->stage;
    if (strcmp(kind, "verification") && strcmp(kind, "timeout"))
        kind = "exit";
    /* The worker says crash when its own git was killed under it: the
     * crash path, uncharged and capped by max_task_crashes. */
    if (r->has_class && zerg_failure_class_route(r->fclass) == ZERG_ROUTE_CRASH)
        kind = "crash";
    orch_verdict_failed(v, kind, r->has_class ? r->cls : NULL, r->exit_code,
                        r->signal, "%s %s: %s", r->stage,
                        r->timed_out ? "timed out" : "failed",
                        r->error[0] ? r->error : "no detail");
}

/* A passing result: its declared outputs exist, and under worktree
 * isolation complete means merged. */
static void passed(struct zerg_orch *o, size_t t, const struct zerg_result *r,
                   struct verdict *v, int64_t now)
{
    *v = (struct verdict){.kind = VERDICT_COMPLETE};
    if (orch_outputs_check(o, t, r, v))
        orch_merge_result(o, t, r, v, now);
}

int orch_attempt_result(struct zerg_orch *o, size_t t,
                        const struct zerg_result *r, struct slot *sl,
                        int64_t now)
{
    struct verdict v;
    int pass = r->outcome == ZERG_OUTCOME_COMPLETE;
    /* A task that failed because we were killing its worker (stop, stale
     * heartbeat, timeout) is not the task's failure: the worker's exit
     * decides what happens to it. */
    if (!pass && (o->stop_asked || (sl && slot_going(sl))))
        return 0;
    if (pass)
        passed(o, t, r, &v, now);
    else
        failed(o, r, &v, now);
    orch_attempt_end(o, t, &v, r, sl, now);
    return 1;
}

/* ---- the dispatch ------------------------------------------------------- */

void orch_attempt_completed(struct zerg_orch *o, size_t t,
                            const struct zerg_result *r,
                            enum zerg_task_event ev)
{
    struct zerg_task_move m = {.now_wall_ns = orch_wall_ns(o)};
    if (orch_task_move(o, t, ev, &m) != 0)
        return;
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "attempt", r->attempt);
    if (ev == ZERG_TASK_EV_APPROVE)
        zerg_json_set_bool(data, "approved", 1);
    zerg_json_set_num(data, "duration_ms", (double)r->duration_ms);
    zerg_json_set_num(data, "epoch", (double)r->epoch);
    if (o->replaying)
        zerg_json_set_bool(data, "replayed", 1);
    zerg_log_event(o->o.log, r->worker_id, ZERG_LOG_INFO, "task_complete",
                   r->task, data, "Task %s complete in %.2fs (worker %d)",
                   r->task, (double)r->duration_ms / 1000, r->worker_id);
    orch_outputs_landed(o, r);
}

void orch_attempt_end(struct zerg_orch *o, size_t t, const struct verdict *v,
                      const struct zerg_result *r, struct slot *sl, int64_t now)
{
    switch (v->kind) {
    case VERDICT_COMPLETE:
        if (r)
            orch_attempt_completed(o, t, r, ZERG_TASK_EV_COMPLETE);
        break;
    case VERDICT_REVIEW:
        if (r)
            orch_review_await(o, t, r, now);
        break;
    case VERDICT_FAILED:
        orch_task_failure_cls(o, t, v->failure, v->cls, v->exit_code, v->sig,
                              v->error, now);
        break;
    case VERDICT_REQUEUE:
        orch_requeue(o, t, v->error);
        o->resume_next[t] = v->resume;
        break;
    case VERDICT_FAIL_NOW:
        orch_task_fail_now(o, t, v->failure, v->error);
        break;
    }
    if (sl)
        orch_slot_event(o, sl, SLOT_EV_TASK_DONE, NULL, now);
    if (v->stop_run)
        orch_run_event(o, RUN_EV_STOP, 0, now);
}
