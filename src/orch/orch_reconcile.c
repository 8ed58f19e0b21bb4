/* orch_reconcile.c - keeping the state document true (FR-4).
 *
 * The orchestrator builds a plain snapshot, asks reconcile.check which
 * divergences it sees, validates each fix against the live state (a policy
 * cannot, say, complete a level that still has running tasks) and applies
 * it.  Light checks run every resilience.reconcile_interval_seconds and
 * look only at what can drift (running tasks, null levels, level marks);
 * thorough ones run before every level transition and on --resume and see
 * every task.  A fix the policy names is parsed into enum zerg_fix_kind
 * by the Lua layer; here it is only checked against the live state. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orch_internal.h"

static int in_snapshot(const struct zerg_orch *o, size_t t, int thorough)
{
    const struct zerg_task_state *st = &o->s->tasks[t];
    return thorough || st->level == 0 || st->status == ZERG_TASK_CLAIMED ||
           st->status == ZERG_TASK_IN_PROGRESS;
}

static zerg_json *task_snapshot(const struct zerg_orch *o, size_t t)
{
    const struct zerg_task_state *st = &o->s->tasks[t];
    const struct zerg_task *tk = &o->g->tasks[t];
    zerg_json *j = zerg_json_obj();
    zerg_json *deps = zerg_json_arr();

    zerg_json_set_str(j, "status", zerg_task_status_name(st->status));
    zerg_json_set_num(j, "level", st->level);
    zerg_json_set_num(j, "graph_level", tk->level);
    zerg_json_set_num(j, "worker", st->worker_id);
    zerg_json_set_bool(j, "worker_alive", orch_slot_runs(o, st->worker_id, t));
    for (size_t d = 0; d < tk->deps.n; d++)
        zerg_json_push(deps, zerg_json_str(tk->deps.v[d]));
    zerg_json_set(j, "deps", deps);
    return j;
}

static zerg_json *snapshot(const struct zerg_orch *o, int thorough)
{
    zerg_json *snap = zerg_json_obj(), *tasks = zerg_json_obj();
    zerg_json *levels = zerg_json_arr();

    zerg_json_set_bool(snap, "thorough", thorough);
    zerg_json_set_num(snap, "current_level", o->s->current_level);
    for (size_t t = 0; t < o->g->ntasks; t++)
        if (in_snapshot(o, t, thorough))
            zerg_json_add(tasks, o->g->tasks[t].id, task_snapshot(o, t));
    for (int l = 1; l <= o->g->nlevels; l++) {
        zerg_json *lv = zerg_json_obj();
        size_t unfinished = 0;
        for (size_t i = 0; i < o->g->levels[l].n; i++)
            unfinished += !zerg_task_status_terminal(
                o->s->tasks[o->g->levels[l].tasks[i]].status);
        zerg_json_set_str(lv, "status",
                          zerg_level_status_name(o->s->levels[l].status));
        zerg_json_set_num(lv, "tasks", (double)o->g->levels[l].n);
        zerg_json_set_num(lv, "unfinished", (double)unfinished);
        zerg_json_push(levels, lv);
    }
    zerg_json_set(snap, "tasks", tasks);
    zerg_json_set(snap, "levels", levels);
    return snap;
}

static int any_dep_failed(const struct zerg_orch *o, size_t t)
{
    const struct zerg_task *tk = &o->g->tasks[t];
    for (size_t d = 0; d < tk->deps.n; d++) {
        enum zerg_task_status s = o->s->tasks[tk->dep_idx[d]].status;
        if (s == ZERG_TASK_FAILED || s == ZERG_TASK_BLOCKED)
            return 1;
    }
    return 0;
}

/* A task fix if it is valid now; 1 when something changed. */
static int apply_task_fix(struct zerg_orch *o, const struct zerg_fix *f,
                          size_t t)
{
    struct zerg_task_state *st = &o->s->tasks[t];
    switch (f->kind) {
    case ZERG_FIX_REQUEUE:
        if ((st->status != ZERG_TASK_CLAIMED &&
             st->status != ZERG_TASK_IN_PROGRESS) ||
            orch_slot_runs(o, st->worker_id, t))
            return 0;
        o->s->metrics.task_reassignments++;
        orch_requeue(o, t, "requeued by reconciliation");
        return 1;
    case ZERG_FIX_SET_LEVEL:
        if (f->level < 1 || f->level > o->g->nlevels || st->level == f->level)
            return 0;
        st->level = f->level;
        return 1;
    case ZERG_FIX_BLOCK:
        if (!zerg_task_move_legal(st->status, ZERG_TASK_EV_BLOCK) ||
            !any_dep_failed(o, t))
            return 0;
        orch_block_dependents(o);
        return 1;
    default:
        return 0;
    }
}

/* A level fix if it is valid now; 1 when something changed. */
static int apply_level_fix(struct zerg_orch *o, const struct zerg_fix *f)
{
    struct zerg_state *s = o->s;
    if (f->level < 1 || f->level > o->g->nlevels)
        return 0;
    struct zerg_level_state *ls = &s->levels[f->level];
    int done = zerg_state_level_done(s, o->g, f->level);
    switch (f->kind) {
    case ZERG_FIX_REOPEN_LEVEL:
        if (done || ls->status != ZERG_LEVEL_COMPLETE)
            return 0;
        ls->status = ZERG_LEVEL_RUNNING;
        ls->completed_at_wall_ns = 0;
        if (s->current_level > f->level)
            s->current_level = f->level;
        o->level_cursor[f->level] = 0;
        return 1;
    case ZERG_FIX_COMPLETE_LEVEL:
        /* The current level is completed by the level transition itself;
         * this fix is for lower levels whose mark was lost. */
        if (!done || ls->status == ZERG_LEVEL_COMPLETE ||
            f->level >= s->current_level)
            return 0;
        ls->status = ZERG_LEVEL_COMPLETE;
        return 1;
    default:
        return 0;
    }
}

static int apply_fix(struct zerg_orch *o, const struct zerg_fix *f)
{
    if (!f->task[0])
        return apply_level_fix(o, f);
    ssize_t t = zerg_graph_find(o->g, f->task);
    return t >= 0 && apply_task_fix(o, f, (size_t)t);
}

static void log_fix(struct zerg_orch *o, const struct zerg_fix *f,
                    const char *kind)
{
    zerg_json *data = zerg_json_obj();
    zerg_json_set_str(data, "fix", f->fix);
    zerg_json_set_str(data, "reason", f->reason);
    zerg_json_set_num(data, "level", f->level);
    zerg_json_set_str(data, "check", kind);
    char what[96];
    if (f->task[0])
        snprintf(what, sizeof what, "task %s", f->task);
    else
        snprintf(what, sizeof what, "level %d", f->level);
    zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_WARN,
                   "state_reconcile_fix", f->task[0] ? f->task : NULL, data,
                   "Reconciliation fixed %s: %s (%s)", what, f->fix, f->reason);
}

int orch_reconcile(struct zerg_orch *o, int thorough, int64_t now)
{
    struct zerg_fix *fixes = NULL;
    size_t nfixes = 0, applied = 0;
    zerg_json *why = NULL;
    enum zerg_log_level lvl = thorough ? ZERG_LOG_INFO : ZERG_LOG_DEBUG;
    const char *kind = thorough ? "thorough" : "light";

    (void)now;
    zerg_log_event(o->o.log, ZERG_LOG_ORCH, lvl, "state_reconcile_start", NULL,
                   NULL, "State reconciliation (%s) started", kind);
    /* How long it took is a measurement, not a decision: the clock the
     * orchestrator was given, read for the log only. */
    int64_t t0 = zerg_clock_mono(o->o.clock);
    zerg_json *snap = snapshot(o, thorough);
    size_t checked = zerg_json_len(zerg_json_get(snap, "tasks"));
    zerg_policy_reconcile(o->o.policy, snap, &fixes, &nfixes, &why);
    zerg_json_free(snap);
    zerg_json_free(why);
    for (size_t i = 0; i < nfixes; i++) {
        if (!apply_fix(o, &fixes[i]))
            continue;
        applied++;
        o->s->metrics.reconcile_fixes++;
        orch_mark_dirty(o);
        log_fix(o, &fixes[i], kind);
    }
    free(fixes);
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "fixes", (double)applied);
    zerg_json_set_num(data, "duration_ms",
                      ORCH_MS(zerg_clock_mono(o->o.clock) - t0));
    zerg_json_set_num(data, "tasks_checked", (double)checked);
    zerg_json_set_str(data, "check", kind);
    zerg_log_event(o->o.log, ZERG_LOG_ORCH, applied ? ZERG_LOG_INFO : lvl,
                   "state_reconcile_complete", NULL, data,
                   "State reconciliation (%s) complete: %zu fix%s", kind,
                   applied, applied == 1 ? "" : "es");
    return (int)applied;
}
