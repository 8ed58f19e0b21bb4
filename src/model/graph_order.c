/* graph_order.c - the passes that order a loaded task graph: dependencies
 * resolved to task indexes (same or lower level only), each level put in a
 * dependency order with Kahn's algorithm (a cycle can only live inside one
 * level, so this is also where cycles are found and named), and the
 * longest dependency chain kept as the critical path. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/err.h"
#include "zerg/graph.h"
#include "zerg/heap.h"

#include "graph_internal.h"

/* ---- dependencies ----------------------------------------------------- */

int graph_resolve_deps(struct parse_ctx *c)
{
    struct zerg_graph *g = c->g;
    char sb[SHOW_MAX * 4 + 8];
    for (size_t i = 0; i < g->ntasks; i++) {
        struct zerg_task *t = &g->tasks[i];
        if (t->deps.n && !(t->dep_idx = malloc(t->deps.n * sizeof(size_t))))
            return graph_nomem(c);
        for (size_t k = 0; k < t->deps.n; k++) {
            const char *d = t->deps.v[k];
            ssize_t j = zerg_graph_find(g, d);
            if (j < 0)
                return graph_task_err(c, i, "unknown dependency %s",
                                      graph_show(sb, sizeof sb, d, strlen(d)));
            if ((size_t)j == i)
                return graph_task_err(c, i, "depends on itself");
            if (g->tasks[j].level > t->level)
                return graph_task_err(
                    c, i,
                    "depends on %s at level %d, a higher level "
                    "than its own (%d); dependencies must be at "
                    "the same or a lower level",
                    d, g->tasks[j].level, t->level);
            t->dep_idx[k] = (size_t)j;
        }
    }
    return 0;
}

/* ---- level order ------------------------------------------------------ */

/* Same-level edges in compressed form: the tasks depending on task i are
 * dep_of[start[i] .. start[i+1]). */
struct edges {
    size_t *start, *dep_of, *indeg;
};

static void edges_free(struct edges *e)
{
    free(e->start);
    free(e->dep_of);
    free(e->indeg);
}

static int same_level(const struct zerg_graph *g, size_t i, size_t k)
{
    return g->tasks[g->tasks[i].dep_idx[k]].level == g->tasks[i].level;
}

static int edges_build(const struct zerg_graph *g, struct edges *e)
{
    size_t n = g->ntasks, m = 0;
    e->start = calloc(n + 1, sizeof(size_t));
    e->indeg = calloc(n, sizeof(size_t));
    if (!e->start || !e->indeg)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < g->tasks[i].deps.n; k++)
            if (same_level(g, i, k)) {
                e->start[g->tasks[i].dep_idx[k] + 1]++;
                e->indeg[i]++;
                m++;
            }
    for (size_t i = 0; i < n; i++)
        e->start[i + 1] += e->start[i];
    if (!(e->dep_of = malloc((m ? m : 1) * sizeof(size_t))))
        return -ENOMEM;
    size_t *fill = malloc((n ? n : 1) * sizeof(size_t));
    if (!fill)
        return -ENOMEM;
    memcpy(fill, e->start, n * sizeof(size_t));
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < g->tasks[i].deps.n; k++)
            if (same_level(g, i, k))
                e->dep_of[fill[g->tasks[i].dep_idx[k]]++] = i;
    free(fill);
    return 0;
}

/* Some tasks of a level were never ready: every one of them waits for
 * another of them, so walking "depends on" edges among them must loop.
 * Names the loop, e.g. "A -> B -> A". */
static int report_cycle(struct parse_ctx *c, const unsigned char *done,
                        size_t start)
{
    struct zerg_graph *g = c->g;
    size_t n = g->ntasks, len = 0, x = start;
    size_t *pos = malloc(n * sizeof *pos); /* place on the walk + 1 */
    size_t *walk = malloc(n * sizeof *walk);
    if (!pos || !walk) {
        free(pos);
        free(walk);
        return graph_nomem(c);
    }
    memset(pos, 0, n * sizeof *pos);
    while (!pos[x]) {
        pos[x] = ++len;
        walk[len - 1] = x;
        const struct zerg_task *t = &g->tasks[x];
        size_t k = 0;
        while (done[t->dep_idx[k]] || !same_level(g, x, k))
            k++;
        x = t->dep_idx[k];
    }
    char path[ZERG_ERR_MSG_MAX / 2];
    size_t o = 0;
    for (size_t p = pos[x] - 1; p <= len; p++) {
        const char *id = g->tasks[p < len ? walk[p] : x].id;
        if (o + strlen(id) + 10 >= sizeof path) {
            snprintf(path + o, sizeof path - o, " -> ...");
            break;
        }
        o += (size_t)snprintf(path + o, sizeof path - o, "%s%s",
                              o ? " -> " : "", id);
    }
    free(pos);
    free(walk);
    return graph_task_err(c, x, "dependency cycle: %s", path);
}

/* Orders one level: Kahn's algorithm over same-level edges.  The heap
 * holds task indexes, so the ready task earliest in the file goes first
 * and a level already in dependency order keeps the file order.  It is
 * filled before L->tasks is rewritten, so the order reuses its array. */
static int order_level(struct parse_ctx *c, struct edges *e,
                       struct zerg_heap *h, unsigned char *done, int lv)
{
    struct zerg_graph *g = c->g;
    struct zerg_level *L = &g->levels[lv];
    size_t placed = 0;
    h->n = 0;
    for (size_t k = 0; k < L->n; k++)
        if (e->indeg[L->tasks[k]] == 0)
            zerg_heap_push(h, L->tasks[k]);
    while (h->n) {
        size_t x = zerg_heap_pop(h);
        L->tasks[placed++] = x;
        done[x] = 1;
        for (size_t k = e->start[x]; k < e->start[x + 1]; k++)
            if (--e->indeg[e->dep_of[k]] == 0)
                zerg_heap_push(h, e->dep_of[k]);
    }
    if (placed == L->n)
        return 0;
    size_t first = 0; /* the earliest task in the file left waiting */
    while (g->tasks[first].level != lv || done[first])
        first++;
    return report_cycle(c, done, first);
}

int graph_build_levels(struct parse_ctx *c)
{
    struct zerg_graph *g = c->g;
    struct edges e = {0};
    struct zerg_heap h = {0};
    unsigned char *done = NULL;
    int rc = -ENOMEM;
    for (size_t i = 0; i < g->ntasks; i++)
        if (g->tasks[i].level > g->nlevels)
            g->nlevels = g->tasks[i].level;
    g->levels = calloc((size_t)g->nlevels + 1, sizeof *g->levels);
    h.v = malloc(g->ntasks * sizeof *h.v);
    done = calloc(g->ntasks, 1);
    if (!g->levels || !h.v || !done || edges_build(g, &e) < 0)
        goto out;
    for (size_t i = 0; i < g->ntasks; i++)
        g->levels[g->tasks[i].level].n++;
    for (int lv = 1; lv <= g->nlevels; lv++) {
        struct zerg_level *L = &g->levels[lv];
        if (L->n && !(L->tasks = malloc(L->n * sizeof(size_t))))
            goto out;
        L->n = 0;
    }
    for (size_t i = 0; i < g->ntasks; i++) {
        struct zerg_level *L = &g->levels[g->tasks[i].level];
        L->tasks[L->n++] = i;
    }
    rc = 0;
    for (int lv = 1; lv <= g->nlevels && rc == 0; lv++)
        rc = order_level(c, &e, &h, done, lv);
out:
    edges_free(&e);
    free(h.v);
    free(done);
    return rc == -ENOMEM ? graph_nomem(c) : rc;
}

/* ---- critical path ---------------------------------------------------- */

/* Longest chain, compared by (minutes, task count) so that a graph with no
 * estimates falls back to the count.  Levels in their computed order are
 * a topological order of the whole graph, so every dependency of a task
 * has its chain (mins, cnt, prev) before the task is reached. */
struct chains {
    double *mins; /* longest chain ending at the task, in minutes */
    size_t *cnt;  /* its length in tasks */
    size_t *prev; /* the task before it on that chain, SIZE_MAX if none */
};

/* Extends the best chain among task i's dependencies by task i. */
static void chain_extend(const struct zerg_graph *g, struct chains *ch,
                         size_t i)
{
    const struct zerg_task *t = &g->tasks[i];
    double m = 0;
    size_t nc = 0;
    ch->prev[i] = SIZE_MAX;
    for (size_t d = 0; d < t->deps.n; d++) {
        size_t j = t->dep_idx[d];
        if (ch->mins[j] > m || (ch->mins[j] == m && ch->cnt[j] > nc)) {
            m = ch->mins[j];
            nc = ch->cnt[j];
            ch->prev[i] = j;
        }
    }
    ch->mins[i] = m + t->estimate_minutes;
    ch->cnt[i] = nc + 1;
}

/* Every task's chain, in level order; returns the task ending the longest
 * (the first one found on a tie). */
static size_t chains_fill(const struct zerg_graph *g, struct chains *ch)
{
    size_t best = 0;
    int first = 1;
    for (int lv = 1; lv <= g->nlevels; lv++)
        for (size_t k = 0; k < g->levels[lv].n; k++) {
            size_t i = g->levels[lv].tasks[k];
            chain_extend(g, ch, i);
            if (first || ch->mins[i] > ch->mins[best] ||
                (ch->mins[i] == ch->mins[best] && ch->cnt[i] > ch->cnt[best]))
                best = i;
            first = 0;
        }
    return best;
}

int graph_critical_path(struct parse_ctx *c)
{
    struct zerg_graph *g = c->g;
    size_t n = g->ntasks;
    struct chains ch = {malloc(n * sizeof *ch.mins), malloc(n * sizeof *ch.cnt),
                        malloc(n * sizeof *ch.prev)};
    int rc = -ENOMEM;
    if (!ch.mins || !ch.cnt || !ch.prev)
        goto out;
    size_t best = chains_fill(g, &ch);
    if (!(g->critical_path = malloc(ch.cnt[best] * sizeof(size_t))))
        goto out;
    g->ncritical = ch.cnt[best];
    g->critical_minutes = ch.mins[best];
    for (size_t k = g->ncritical, x = best; k > 0; x = ch.prev[x])
        g->critical_path[--k] = x;
    rc = 0;
out:
    free(ch.mins);
    free(ch.cnt);
    free(ch.prev);
    return rc < 0 ? graph_nomem(c) : 0;
}
