/* orch_dag.c - rush.schedule: dag (DESIGN §16): the set of ready tasks.
 *
 * Under dag a task may be claimed as soon as every one of its
 * dependencies is complete (under worktree isolation complete already
 * means merged, orch_merge.c).  Finding such tasks by looking at the
 * whole graph would cost O(tasks) per tick; instead each task keeps the
 * number of its dependencies that are not complete, lowered as each one
 * completes (orch_task_move reports every move here), and a claimable
 * task whose number reaches 0 enters a heap of ready tasks.  A tick then
 * costs what it pops.
 *
 * The heap is ordered by a preference fixed when the rush starts: the
 * longest remaining chain first (the task's estimate plus the longest
 * chain of estimates among what depends on it, in minutes, then in tasks
 * so that a graph without estimates counts tasks), then the lower level,
 * then file order.  A wide level therefore never starves the critical
 * path, and with no estimates the deepest chains go first.
 *
 * Entries go stale (the task was claimed or blocked by another path) and
 * are dropped when popped.  Whether a ready task may run *now* (retry
 * backoff, a running task writing the same file) is the dispatcher's
 * question: what it pops and cannot start is held and goes back into the
 * heap when the pass ends.  Nothing here is persisted: the counts and the
 * heap are rebuilt from the task states when the rush starts (so --resume
 * needs nothing) and after `zerg retry` changed statuses directly.
 *
 * Files: the graph's write groups are per (level, path), enough when two
 * levels never run together.  Under dag they do, so here a path written
 * (files.create or files.modify) by two or more tasks of any levels is
 * one group, and a task waits while a running task shares a group with
 * it: the same-level pairs of the graph's groups, plus the pairs across
 * levels that no dependency orders. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "orch_internal.h"
#include "zerg/heap.h"

struct orch_dag {
    size_t n;
    size_t *left;      /* per task: dependencies not complete yet */
    size_t *out_start; /* dependents of t: out[out_start[t]..out_start[t+1]) */
    size_t *out;
    size_t *rank;          /* per task: its place in the preference order */
    size_t *order;         /* order[rank] = task */
    struct zerg_heap heap; /* ranks of ready tasks */
    size_t *held;          /* ranks popped in this pass but not startable */
    size_t nheld;
    unsigned char *queued; /* in the heap or held: at most once each */
    size_t *pg_start; /* path groups of t: pg[pg_start[t]..pg_start[t+1]) */
    size_t *pg;
    int *pg_running; /* per path group: running tasks in it */
    size_t npg;
};

/* ---- the preference order --------------------------------------------- */

struct pref {
    double mins; /* remaining chain, minutes of estimates */
    size_t cnt;  /* remaining chain, tasks */
    int level;
    size_t idx;
};

static int pref_cmp(const void *pa, const void *pb)
{
    const struct pref *a = pa, *b = pb;
    if (a->mins != b->mins)
        return a->mins > b->mins ? -1 : 1;
    if (a->cnt != b->cnt)
        return a->cnt > b->cnt ? -1 : 1;
    if (a->level != b->level)
        return a->level < b->level ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Remaining chains, from the last task of the last level back: levels in
 * their computed order are a topological order of the whole graph, so
 * every dependent of a task is final before the task is reached and
 * passes its chain down to its dependencies. */
static void remaining_chains(const struct zerg_graph *g, struct pref *p)
{
    for (size_t i = 0; i < g->ntasks; i++)
        p[i] = (struct pref){.level = g->tasks[i].level, .idx = i};
    for (int lv = g->nlevels; lv >= 1; lv--)
        for (size_t k = g->levels[lv].n; k-- > 0;) {
            size_t i = g->levels[lv].tasks[k];
            const struct zerg_task *t = &g->tasks[i];
            p[i].mins += t->estimate_minutes; /* held the dependents' best */
            p[i].cnt += 1;
            for (size_t q = 0; q < t->deps.n; q++) {
                struct pref *dp = &p[t->dep_idx[q]];
                if (p[i].mins > dp->mins ||
                    (p[i].mins == dp->mins && p[i].cnt > dp->cnt)) {
                    dp->mins = p[i].mins;
                    dp->cnt = p[i].cnt;
                }
            }
        }
}

static int build_order(struct orch_dag *d, const struct zerg_graph *g)
{
    struct pref *p = malloc((g->ntasks ? g->ntasks : 1) * sizeof *p);
    if (!p)
        return -ENOMEM;
    remaining_chains(g, p);
    qsort(p, g->ntasks, sizeof *p, pref_cmp);
    for (size_t r = 0; r < g->ntasks; r++) {
        d->order[r] = p[r].idx;
        d->rank[p[r].idx] = r;
    }
    free(p);
    return 0;
}

/* Dependents as compressed rows: one pass to count, one to fill. */
static void build_dependents(struct orch_dag *d, const struct zerg_graph *g)
{
    for (size_t i = 0; i < g->ntasks; i++)
        for (size_t q = 0; q < g->tasks[i].deps.n; q++)
            d->out_start[g->tasks[i].dep_idx[q] + 1]++;
    for (size_t i = 0; i < g->ntasks; i++)
        d->out_start[i + 1] += d->out_start[i];
    size_t *fill = d->left; /* borrowed: rescan sets it afterwards */
    for (size_t i = 0; i < g->ntasks; i++)
        fill[i] = d->out_start[i];
    for (size_t i = 0; i < g->ntasks; i++)
        for (size_t q = 0; q < g->tasks[i].deps.n; q++)
            d->out[fill[g->tasks[i].dep_idx[q]]++] = i;
}

/* ---- path groups across levels ---------------------------------------- */

struct pwrite {
    const char *path;
    size_t task;
};

static int pwrite_cmp(const void *pa, const void *pb)
{
    const struct pwrite *a = pa, *b = pb;
    int r = strcmp(a->path, b->path);
    if (r)
        return r;
    return a->task < b->task ? -1 : a->task > b->task;
}

/* Every (path, task) written, sorted, each once; *n gets the count. */
static struct pwrite *collect_writes(const struct zerg_graph *g, size_t *n)
{
    size_t m = 0, u = 0;
    for (size_t i = 0; i < g->ntasks; i++)
        m += g->tasks[i].files_create.n + g->tasks[i].files_modify.n;
    struct pwrite *w = malloc((m ? m : 1) * sizeof *w);
    if (!w)
        return NULL;
    m = 0;
    for (size_t i = 0; i < g->ntasks; i++) {
        const struct zerg_task *t = &g->tasks[i];
        for (size_t k = 0; k < t->files_create.n; k++)
            w[m++] = (struct pwrite){t->files_create.v[k], i};
        for (size_t k = 0; k < t->files_modify.n; k++)
            w[m++] = (struct pwrite){t->files_modify.v[k], i};
    }
    qsort(w, m, sizeof *w, pwrite_cmp);
    for (size_t k = 0; k < m; k++)
        if (u == 0 || pwrite_cmp(&w[u - 1], &w[k]) != 0)
            w[u++] = w[k];
    *n = u;
    return w;
}

static size_t run_end(const struct pwrite *w, size_t n, size_t s)
{
    size_t e = s + 1;
    while (e < n && !strcmp(w[e].path, w[s].path))
        e++;
    return e;
}

/* Groups as compressed rows per task: count, prefix sums, fill. */
static int build_paths(struct orch_dag *d, const struct zerg_graph *g)
{
    size_t nw = 0, members = 0;
    struct pwrite *w = collect_writes(g, &nw);
    if (!w)
        return -ENOMEM;
    for (size_t s = 0, e; s < nw; s = e)
        if ((e = run_end(w, nw, s)) - s > 1)
            for (size_t x = s; x < e; x++, members++)
                d->pg_start[w[x].task + 1]++;
    for (size_t i = 0; i < g->ntasks; i++)
        d->pg_start[i + 1] += d->pg_start[i];
    d->pg = malloc((members ? members : 1) * sizeof *d->pg);
    size_t *fill = malloc((g->ntasks ? g->ntasks : 1) * sizeof *fill);
    int rc = -ENOMEM;
    if (!d->pg || !fill)
        goto out;
    memcpy(fill, d->pg_start, g->ntasks * sizeof *fill);
    for (size_t s = 0, e; s < nw; s = e)
        if ((e = run_end(w, nw, s)) - s > 1) {
            for (size_t x = s; x < e; x++)
                d->pg[fill[w[x].task]++] = d->npg;
            d->npg++;
        }
    d->pg_running = calloc(d->npg ? d->npg : 1, sizeof *d->pg_running);
    rc = d->pg_running ? 0 : -ENOMEM;
out:
    free(fill);
    free(w);
    return rc;
}

static void paths_add(struct orch_dag *d, size_t t, int delta)
{
    for (size_t k = d->pg_start[t]; k < d->pg_start[t + 1]; k++)
        d->pg_running[d->pg[k]] += delta;
}

int orch_dag_conflict(const struct zerg_orch *o, size_t t)
{
    const struct orch_dag *d = o->dag;
    for (size_t k = d ? d->pg_start[t] : 0; d && k < d->pg_start[t + 1]; k++)
        if (d->pg_running[d->pg[k]] > 0)
            return 1;
    return 0;
}

/* ---- life cycle ------------------------------------------------------- */

static void dag_free(struct orch_dag *d)
{
    if (!d)
        return;
    free(d->left);
    free(d->out_start);
    free(d->out);
    free(d->rank);
    free(d->order);
    free(d->heap.v);
    free(d->held);
    free(d->queued);
    free(d->pg_start);
    free(d->pg);
    free(d->pg_running);
    free(d);
}

static size_t edge_count(const struct zerg_graph *g)
{
    size_t e = 0;
    for (size_t i = 0; i < g->ntasks; i++)
        e += g->tasks[i].deps.n;
    return e;
}

int orch_dag_new(struct zerg_orch *o)
{
    if (o->o.schedule != ZERG_SCHEDULE_DAG)
        return 0;
    const struct zerg_graph *g = o->g;
    size_t n = g->ntasks ? g->ntasks : 1, e = edge_count(g);
    struct orch_dag *d = calloc(1, sizeof *d);
    if (!d)
        return -ENOMEM;
    d->n = g->ntasks;
    d->left = calloc(n, sizeof *d->left);
    d->out_start = calloc(n + 1, sizeof *d->out_start);
    d->out = malloc((e ? e : 1) * sizeof *d->out);
    d->rank = malloc(n * sizeof *d->rank);
    d->order = malloc(n * sizeof *d->order);
    d->heap.v = malloc(n * sizeof *d->heap.v);
    d->held = malloc(n * sizeof *d->held);
    d->queued = calloc(n, 1);
    d->pg_start = calloc(n + 1, sizeof *d->pg_start);
    if (!d->left || !d->out_start || !d->out || !d->rank || !d->order ||
        !d->heap.v || !d->held || !d->queued || !d->pg_start ||
        build_order(d, g) < 0 || build_paths(d, g) < 0) {
        dag_free(d);
        return -ENOMEM;
    }
    build_dependents(d, g);
    o->dag = d;
    orch_dag_rescan(o);
    return 0;
}

void orch_dag_free(struct zerg_orch *o)
{
    dag_free(o->dag);
    o->dag = NULL;
}

/* ---- the ready set ---------------------------------------------------- */

void orch_dag_offer(struct zerg_orch *o, size_t t)
{
    struct orch_dag *d = o->dag;
    if (!d || d->queued[t] || d->left[t] ||
        !zerg_task_move_legal(orch_ts(o, t)->status, ZERG_TASK_EV_CLAIM))
        return;
    d->queued[t] = 1;
    zerg_heap_push(&d->heap, d->rank[t]);
}

void orch_dag_rescan(struct zerg_orch *o)
{
    struct orch_dag *d = o->dag;
    if (!d)
        return;
    d->heap.n = d->nheld = 0;
    memset(d->pg_running, 0, (d->npg ? d->npg : 1) * sizeof *d->pg_running);
    for (size_t t = 0; t < d->n; t++) {
        if (orch_task_running(orch_ts(o, t)->status))
            paths_add(d, t, 1);
        const struct zerg_task *tk = &o->g->tasks[t];
        d->queued[t] = 0;
        d->left[t] = 0;
        for (size_t q = 0; q < tk->deps.n; q++)
            d->left[t] +=
                orch_ts(o, tk->dep_idx[q])->status != ZERG_TASK_COMPLETE;
    }
    for (size_t t = 0; t < d->n; t++)
        orch_dag_offer(o, t);
}

void orch_dag_moved(struct zerg_orch *o, size_t t, enum zerg_task_status from)
{
    struct orch_dag *d = o->dag;
    if (!d)
        return;
    enum zerg_task_status now = orch_ts(o, t)->status;
    if (orch_task_running(from) != orch_task_running(now))
        paths_add(d, t, orch_task_running(now) ? 1 : -1);
    int was = from == ZERG_TASK_COMPLETE;
    int is = now == ZERG_TASK_COMPLETE;
    if (was != is)
        for (size_t k = d->out_start[t]; k < d->out_start[t + 1]; k++) {
            size_t x = d->out[k];
            if (is) {
                d->left[x] -= d->left[x] > 0;
                orch_dag_offer(o, x);
            } else {
                d->left[x]++;
            }
        }
    orch_dag_offer(o, t); /* back to pending or waiting_retry */
}

ssize_t orch_dag_pop(struct zerg_orch *o)
{
    struct orch_dag *d = o->dag;
    while (d && d->heap.n) {
        size_t t = d->order[zerg_heap_pop(&d->heap)];
        d->queued[t] = 0;
        if (!d->left[t] &&
            zerg_task_move_legal(orch_ts(o, t)->status, ZERG_TASK_EV_CLAIM))
            return (ssize_t)t;
    }
    return -1;
}

void orch_dag_hold(struct zerg_orch *o, size_t t)
{
    struct orch_dag *d = o->dag;
    if (!d || d->queued[t])
        return;
    d->queued[t] = 1;
    d->held[d->nheld++] = d->rank[t];
}

void orch_dag_settle(struct zerg_orch *o)
{
    struct orch_dag *d = o->dag;
    if (!d)
        return;
    for (size_t i = 0; i < d->nheld; i++)
        zerg_heap_push(&d->heap, d->held[i]);
    d->nheld = 0;
}

size_t orch_dag_ready(const struct zerg_orch *o)
{
    return o->dag ? o->dag->heap.n + o->dag->nheld : 0;
}
