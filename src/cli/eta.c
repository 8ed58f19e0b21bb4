/* eta.c - the time a run has left (see eta.h). */
#include "cli/eta.h"

#include "zerg/clock.h"
#include "zerg/graph.h"
#include "zerg/state.h"

/* How long a finished task took, 0 when unknown. */
static int64_t took_ns(const struct zerg_task_state *t)
{
    if (t->duration_ms > 0)
        return t->duration_ms * ZERG_NS_PER_MS;
    int64_t from =
        t->started_at_wall_ns ? t->started_at_wall_ns : t->claimed_at_wall_ns;
    return from && t->completed_at_wall_ns > from
               ? t->completed_at_wall_ns - from
               : 0;
}

/* What this run measured against what was expected of its tasks. */
struct measure {
    double act, act_prev, prev, act_est, est;
    size_t nact;
};

static void measure(const struct zerg_graph *g, const struct zerg_state *s,
                    struct measure *m)
{
    *m = (struct measure){0};
    for (size_t i = 0; i < s->ntasks && i < g->ntasks; i++) {
        const struct zerg_task_state *t = &s->tasks[i];
        int64_t d =
            t->status == ZERG_TASK_COMPLETE || t->status == ZERG_TASK_FAILED
                ? took_ns(t)
                : 0;
        if (d <= 0)
            continue;
        double e = g->tasks[i].estimate_minutes * 60.0 * ZERG_NS_PER_S;
        m->act += (double)d;
        m->nact++;
        if (t->prev_duration_ms > 0) {
            m->act_prev += (double)d;
            m->prev += (double)t->prev_duration_ms * ZERG_NS_PER_MS;
        }
        if (e > 0) {
            m->act_est += (double)d;
            m->est += e;
        }
    }
}

/* What task i is expected to take in all, 0 when nothing tells. */
static double expected(const struct zerg_graph *g,
                       const struct zerg_task_state *t, size_t i,
                       const struct measure *m)
{
    double e = g->tasks[i].estimate_minutes * 60.0 * ZERG_NS_PER_S;
    if (t->prev_duration_ms > 0)
        return (double)t->prev_duration_ms * ZERG_NS_PER_MS *
               (m->prev > 0 ? m->act_prev / m->prev : 1.0);
    if (e > 0)
        return e * (m->est > 0 ? m->act_est / m->est : 1.0);
    return m->nact ? m->act / (double)m->nact : 0;
}

static int left_to_run(enum zerg_task_status st)
{
    return st == ZERG_TASK_PENDING || st == ZERG_TASK_WAITING_RETRY ||
           st == ZERG_TASK_CLAIMED || st == ZERG_TASK_IN_PROGRESS;
}

int64_t zerg_eta_ns(const struct zerg_graph *g, const struct zerg_state *s,
                    int workers, int64_t now_wall_ns)
{
    struct measure m;
    double work = 0, known = 0;
    size_t nleft = 0, nknown = 0;
    measure(g, s, &m);
    for (size_t i = 0; i < s->ntasks && i < g->ntasks; i++) {
        const struct zerg_task_state *t = &s->tasks[i];
        if (!left_to_run(t->status))
            continue;
        nleft++;
        double x = expected(g, t, i, &m);
        if (x <= 0)
            continue;
        nknown++;
        known += x;
        int64_t from = t->started_at_wall_ns ? t->started_at_wall_ns
                                             : t->claimed_at_wall_ns;
        if ((t->status == ZERG_TASK_IN_PROGRESS ||
             t->status == ZERG_TASK_CLAIMED) &&
            from && now_wall_ns > from)
            x -= (double)(now_wall_ns - from);
        work += x > 0 ? x : 0;
    }
    if (!nleft)
        return 0;
    if (!nknown)
        return -1;
    work += (double)(nleft - nknown) * (known / (double)nknown);
    size_t par = workers > 0 ? (size_t)workers : 1;
    if (par > nleft)
        par = nleft;
    return (int64_t)(work / (double)par);
}
