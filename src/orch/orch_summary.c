/* orch_summary.c - the one paragraph a rush ends with: how many tasks
 * completed, failed and are blocked, what recovery did, the agents'
 * spend, and what to do next. */
#include "orch_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "zerg/state.h"

static const char *plural(int64_t n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

/* What to do next, after the counts. */
static void summary_next(const struct zerg_orch *o, size_t complete, char *buf,
                         size_t size)
{
    if (orch_halt_summary(o, buf, size))
        return;
    if (o->gate_failed)
        snprintf(buf, size,
                 " Stopped: %s\nFix it, then `zerg rush --resume` runs the "
                 "gate again.",
                 o->run_error);
    else if (o->stop_asked && o->failed_run)
        snprintf(buf, size, " Stopped: %s.", o->run_error);
    else if (o->stop_asked)
        snprintf(buf, size, " Stopped: continue with `zerg rush --resume`.");
    else if (o->run_error[0])
        snprintf(buf, size,
                 " %s. Next: check `zerg logs --event worker_spawn_failed` "
                 "and .zerg/logs/%s/worker-*.log, fix the cause, then `zerg "
                 "rush --resume`.",
                 o->run_error, o->o.feature);
    else if (complete != o->g->ntasks)
        snprintf(buf, size,
                 " Next: `zerg status` lists the failed tasks, `zerg logs "
                 "--task ID` and .zerg/logs/%s/tasks/ID/ show why; after a "
                 "fix `zerg retry --all-failed && zerg rush --resume`.",
                 o->o.feature);
}

void zerg_orch_summary(const struct zerg_orch *o, char *buf, size_t size)
{
    size_t c[ZERG_TASK_NSTATUS];
    const struct zerg_metrics *m = &o->s->metrics;
    zerg_task_count(o->s->tasks, NULL, o->g->ntasks, c);
    int n = snprintf(
        buf, size,
        "%zu/%zu task%s complete, %zu failed, %zu blocked; recovery: %" PRId64
        " worker %s, %" PRId64 " %s, %" PRId64 " %s, %" PRId64 " spawn %s, "
        "%" PRId64 " stale %s.",
        c[ZERG_TASK_COMPLETE], o->g->ntasks, o->g->ntasks == 1 ? "" : "s",
        c[ZERG_TASK_FAILED], c[ZERG_TASK_BLOCKED], m->worker_crashes,
        plural(m->worker_crashes, "crash", "crashes"), m->task_reassignments,
        plural(m->task_reassignments, "reassignment", "reassignments"),
        m->worker_respawns, plural(m->worker_respawns, "respawn", "respawns"),
        m->spawn_retries, plural(m->spawn_retries, "retry", "retries"),
        m->stale_detections,
        plural(m->stale_detections, "detection", "detections"));
    double spent = zerg_state_cost_usd(o->s);
    if (n >= 0 && (size_t)n < size && spent > 0)
        n += snprintf(buf + n, size - (size_t)n, " Agent spend: $%.4f.", spent);
    if (n >= 0 && (size_t)n < size)
        summary_next(o, c[ZERG_TASK_COMPLETE], buf + n, size - (size_t)n);
}
