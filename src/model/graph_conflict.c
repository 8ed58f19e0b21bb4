/* graph_conflict.c - same-level tasks that write one path (DESIGN.md
 * section 4): legal, but they never run together.  Each (level, path)
 * written by two or more tasks becomes a write group; each task lists its
 * groups, and the graph gets one warning per conflicting pair, up to a
 * cap.
 *
 * Everything is linear in the number of writes, after one sort: every
 * (level, path, task) write is sorted once, so the tasks sharing a path
 * form one run of the array.  Warnings stop after
 * GRAPH_MAX_CONFLICT_WARNINGS pairs and the rest is a count computed from
 * the group sizes.  No list of partners is ever built per task: 20,000
 * tasks writing README.md took 23 s and 6.3 GB through a list of pairs,
 * and would still take 3.2 GB as per-task partner lists; as one group
 * they take 160 KB. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/err.h"
#include "zerg/graph.h"

#include "graph_internal.h"

/* One graph with every task writing README.md would otherwise print n^2/2
 * lines; the conflicts themselves are all kept. */
#define GRAPH_MAX_CONFLICT_WARNINGS 200

struct write {
    int level;
    const char *path;
    size_t task;
};

/* The writes sorted by (level, path, task) with repeats dropped, and the
 * groups of two or more tasks sharing a (level, path), as ranges of it. */
struct writes {
    struct write *w;
    size_t nw;
    size_t *gstart; /* group g is w[gstart[g] .. gend[g]) */
    size_t *gend;
    size_t ngroups;
};

static int write_cmp(const void *pa, const void *pb)
{
    const struct write *x = pa, *y = pb;
    if (x->level != y->level)
        return x->level < y->level ? -1 : 1;
    int r = strcmp(x->path, y->path);
    if (r)
        return r;
    return x->task < y->task ? -1 : x->task > y->task;
}

/* Every (level, path, task) a task creates or modifies, sorted; a task
 * listing one path twice (create and modify) is kept once. */
static int collect_writes(const struct zerg_graph *g, struct writes *ws)
{
    size_t n = 0;
    for (size_t i = 0; i < g->ntasks; i++)
        n += g->tasks[i].files_create.n + g->tasks[i].files_modify.n;
    struct write *w = malloc((n ? n : 1) * sizeof *w);
    if (!w)
        return -ENOMEM;
    n = 0;
    for (size_t i = 0; i < g->ntasks; i++) {
        const struct zerg_task *t = &g->tasks[i];
        for (size_t k = 0; k < t->files_create.n; k++)
            w[n++] = (struct write){t->level, t->files_create.v[k], i};
        for (size_t k = 0; k < t->files_modify.n; k++)
            w[n++] = (struct write){t->level, t->files_modify.v[k], i};
    }
    qsort(w, n, sizeof *w, write_cmp);
    size_t u = 0;
    for (size_t k = 0; k < n; k++)
        if (u == 0 || write_cmp(&w[u - 1], &w[k]) != 0)
            w[u++] = w[k];
    ws->w = w;
    ws->nw = u;
    return 0;
}

/* End of the (level, path) group starting at s. */
static size_t group_end(const struct write *w, size_t nw, size_t s)
{
    size_t e = s + 1;
    while (e < nw && w[e].level == w[s].level &&
           strcmp(w[e].path, w[s].path) == 0)
        e++;
    return e;
}

/* The runs of ws->w shared by two or more tasks. */
static int find_groups(struct writes *ws)
{
    size_t n = 0;
    for (size_t s = 0, e; s < ws->nw; s = e)
        n += (e = group_end(ws->w, ws->nw, s)) - s > 1;
    ws->gstart = malloc((n ? n : 1) * sizeof *ws->gstart);
    ws->gend = malloc((n ? n : 1) * sizeof *ws->gend);
    if (!ws->gstart || !ws->gend)
        return -ENOMEM;
    for (size_t s = 0, e; s < ws->nw; s = e)
        if ((e = group_end(ws->w, ws->nw, s)) - s > 1) {
            ws->gstart[ws->ngroups] = s;
            ws->gend[ws->ngroups++] = e;
        }
    return 0;
}

static void writes_free(struct writes *ws)
{
    free(ws->w);
    free(ws->gstart);
    free(ws->gend);
}

/* ---- warnings --------------------------------------------------------- */

static int warn_conflict(struct zerg_graph *g, const struct write *x, size_t b)
{
    char line[ZERG_ERR_MSG_MAX], sb[ZERG_ERR_MSG_MAX / 2];
    snprintf(line, sizeof line,
             "level %d: %s and %s both write %s; they will not run at the "
             "same time",
             x->level, g->tasks[x->task].id, g->tasks[b].id,
             graph_show_raw(sb, sizeof sb, x->path, strlen(x->path), 256, 0));
    return graph_strlist_push(&g->warnings, line);
}

/* One warning per pair of a group, group by group and in task order,
 * until the cap; then one line with the count of the pairs left out. */
static int warn_conflicts(struct zerg_graph *g, const struct writes *ws)
{
    const struct write *w = ws->w;
    size_t npairs = 0, shown = 0;
    for (size_t k = 0; k < ws->ngroups; k++) {
        size_t s = ws->gstart[k], e = ws->gend[k], m = e - s;
        npairs += m * (m - 1) / 2;
        for (size_t x = s; x < e && shown < GRAPH_MAX_CONFLICT_WARNINGS; x++)
            for (size_t y = x + 1; y < e && shown < GRAPH_MAX_CONFLICT_WARNINGS;
                 y++, shown++)
                if (warn_conflict(g, &w[x], w[y].task) < 0)
                    return -ENOMEM;
    }
    if (npairs <= GRAPH_MAX_CONFLICT_WARNINGS)
        return 0;
    char line[128];
    snprintf(line, sizeof line, "... and %zu more same-file pairs",
             npairs - GRAPH_MAX_CONFLICT_WARNINGS);
    return graph_strlist_push(&g->warnings, line);
}

/* ---- write groups ------------------------------------------------------ */

static int cmp_size(const void *pa, const void *pb)
{
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    return a < b ? -1 : a > b;
}

/* The groups as the graph keeps them: their tasks in one array. */
static int keep_groups(struct zerg_graph *g, const struct writes *ws)
{
    size_t total = 0;
    for (size_t k = 0; k < ws->ngroups; k++)
        total += ws->gend[k] - ws->gstart[k];
    g->wgroup_start = malloc((ws->ngroups + 1) * sizeof *g->wgroup_start);
    g->wgroup_tasks = malloc((total ? total : 1) * sizeof *g->wgroup_tasks);
    if (!g->wgroup_start || !g->wgroup_tasks)
        return -ENOMEM;
    size_t at = 0;
    for (size_t k = 0; k < ws->ngroups; k++) {
        g->wgroup_start[k] = at;
        for (size_t x = ws->gstart[k]; x < ws->gend[k]; x++)
            g->wgroup_tasks[at++] = ws->w[x].task;
    }
    g->wgroup_start[ws->ngroups] = at;
    g->nwgroups = ws->ngroups;
    return 0;
}

/* Each task's groups, ascending (groups are numbered in sorted order, and
 * a task meets them in that order). */
static int task_groups(struct zerg_graph *g)
{
    for (size_t k = 0; k < g->nwgroups; k++)
        for (size_t x = g->wgroup_start[k]; x < g->wgroup_start[k + 1]; x++)
            g->tasks[g->wgroup_tasks[x]].nwgroups++;
    for (size_t i = 0; i < g->ntasks; i++) {
        struct zerg_task *t = &g->tasks[i];
        if (t->nwgroups && !(t->wgroups = malloc(t->nwgroups * sizeof(size_t))))
            return -ENOMEM;
        t->nwgroups = 0;
    }
    for (size_t k = 0; k < g->nwgroups; k++)
        for (size_t x = g->wgroup_start[k]; x < g->wgroup_start[k + 1]; x++) {
            struct zerg_task *t = &g->tasks[g->wgroup_tasks[x]];
            t->wgroups[t->nwgroups++] = k;
        }
    return 0;
}

int graph_find_conflicts(struct parse_ctx *c)
{
    struct writes ws = {0};
    int rc = -ENOMEM;
    if (collect_writes(c->g, &ws) == 0 && find_groups(&ws) == 0 &&
        warn_conflicts(c->g, &ws) == 0)
        rc = keep_groups(c->g, &ws) == 0 ? task_groups(c->g) : -ENOMEM;
    writes_free(&ws);
    return rc < 0 ? graph_nomem(c) : 0;
}

/* 1 when group k holds task t (its tasks are ascending). */
static int group_has(const struct zerg_graph *g, size_t k, size_t t)
{
    const size_t *v = g->wgroup_tasks + g->wgroup_start[k];
    size_t n = g->wgroup_start[k + 1] - g->wgroup_start[k];
    return bsearch(&t, v, n, sizeof *v, cmp_size) != NULL;
}

int zerg_graph_conflicts(const struct zerg_graph *g, size_t a, size_t b)
{
    if (!g || a >= g->ntasks || b >= g->ntasks || a == b)
        return 0;
    const struct zerg_task *t = &g->tasks[a];
    for (size_t q = 0; q < t->nwgroups; q++)
        if (group_has(g, t->wgroups[q], b))
            return 1;
    return 0;
}

/* The partners of t in one group: its tasks but t. */
static size_t group_partners(const struct zerg_graph *g, size_t k, size_t t,
                             size_t *out)
{
    size_t n = 0;
    for (size_t x = g->wgroup_start[k]; x < g->wgroup_start[k + 1]; x++)
        if (g->wgroup_tasks[x] != t)
            out[n++] = g->wgroup_tasks[x];
    return n;
}

size_t zerg_graph_partners(const struct zerg_graph *g, size_t t, size_t *out,
                           size_t max)
{
    if (!g || t >= g->ntasks || !g->tasks[t].nwgroups)
        return 0;
    const struct zerg_task *tk = &g->tasks[t];
    if (tk->nwgroups == 1) {
        /* The common case, in O(max): one group, its tasks but t. */
        size_t k = tk->wgroups[0], n = 0;
        for (size_t x = g->wgroup_start[k];
             x < g->wgroup_start[k + 1] && n < max; x++)
            if (g->wgroup_tasks[x] != t)
                out[n++] = g->wgroup_tasks[x];
        return g->wgroup_start[k + 1] - g->wgroup_start[k] - 1;
    }
    size_t all = 0;
    for (size_t q = 0; q < tk->nwgroups; q++)
        all += g->wgroup_start[tk->wgroups[q] + 1] -
               g->wgroup_start[tk->wgroups[q]];
    size_t *v = malloc(all * sizeof *v), n = 0, u = 0;
    if (!v)
        return 0;
    for (size_t q = 0; q < tk->nwgroups; q++)
        n += group_partners(g, tk->wgroups[q], t, v + n);
    if (tk->nwgroups > 1)
        qsort(v, n, sizeof *v, cmp_size);
    for (size_t k = 0; k < n; k++)
        if (u == 0 || v[u - 1] != v[k])
            v[u++] = v[k];
    if (out && max)
        memcpy(out, v, (u < max ? u : max) * sizeof *out);
    free(v);
    return u;
}
