/* state_json.c - struct zerg_state as upstream's JSON document: tasks keyed
 * by id, workers and levels keyed by number, timestamps as ISO-8601
 * strings, "none" as null, written token by token into a zerg_jw.
 * Reading it back is state_read.c. */
#include "zerg/state.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/clock.h"
#include "zerg/graph.h"
#include "zerg/json.h"

#include "state_internal.h"

/* The document is written as it is produced (zerg/json.h, the streaming
 * writer): no tree, no whole text in memory, so a checkpoint of 100,000
 * tasks costs its 64 KiB file buffer and not tens of megabytes. */

static void put_str(struct zerg_jw *w, const char *key, const char *str)
{
    zerg_jw_str(w, key);
    if (str)
        zerg_jw_str(w, str);
    else
        zerg_jw_null(w);
}

static void put_num(struct zerg_jw *w, const char *key, double n)
{
    zerg_jw_str(w, key);
    zerg_jw_num(w, n);
}

/* Wall ns as ISO-8601, 0 -> null. */
static void put_ts(struct zerg_jw *w, const char *key, int64_t ns)
{
    char buf[ZERG_TS_MAX];
    put_str(w, key, ns ? zerg_clock_iso8601(ns, buf) : NULL);
}

/* An integer, or null when it equals none. */
static void put_int(struct zerg_jw *w, const char *key, int64_t v, int64_t none)
{
    zerg_jw_str(w, key);
    if (v == none)
        zerg_jw_null(w);
    else
        zerg_jw_int(w, v);
}

/* The agent's figures and the merge's, present only when set. */
static void put_task_extras(struct zerg_jw *w, const struct zerg_task_state *t)
{
    if (t->commit[0])
        put_str(w, "commit", t->commit);
    if (t->conflict_count)
        put_num(w, "conflict_count", t->conflict_count);
    if (t->prev_duration_ms > 0)
        put_num(w, "prev_duration_ms", (double)t->prev_duration_ms);
    if (t->conflict_paths)
        put_str(w, "conflict_paths", t->conflict_paths);
    if (t->review_commit[0])
        put_str(w, "review_commit", t->review_commit);
    if (t->review_base[0])
        put_str(w, "review_base", t->review_base);
    if (t->review_commit[0])
        put_num(w, "review_worker", t->review_worker);
    if (t->review_note)
        put_str(w, "review_note", t->review_note);
    if (t->cost_usd > 0)
        put_num(w, "cost_usd", t->cost_usd);
    if (t->input_tokens)
        put_num(w, "input_tokens", (double)t->input_tokens);
    if (t->output_tokens)
        put_num(w, "output_tokens", (double)t->output_tokens);
    if (t->cache_read_tokens)
        put_num(w, "cache_read_tokens", (double)t->cache_read_tokens);
    if (t->cache_write_tokens)
        put_num(w, "cache_write_tokens", (double)t->cache_write_tokens);
    if (t->cost_estimated)
        put_num(w, "cost_estimated", 1);
    if (t->session_id[0])
        put_str(w, "session_id", t->session_id);
    if (t->model[0])
        put_str(w, "model", t->model);
}

static void put_task(struct zerg_jw *w, const char *id,
                     const struct zerg_task_state *t)
{
    zerg_jw_str(w, id);
    zerg_jw_obj(w);
    put_str(w, "status", zerg_task_status_name(t->status));
    put_int(w, "level", t->level, 0);
    put_int(w, "worker_id", t->worker_id, -1);
    put_num(w, "retry_count", t->retry_count);
    put_num(w, "crash_count", t->crash_count);
    put_num(w, "attempt", t->attempt);
    put_num(w, "epoch", (double)t->epoch);
    put_ts(w, "claimed_at", t->claimed_at_wall_ns);
    put_ts(w, "started_at", t->started_at_wall_ns);
    put_ts(w, "completed_at", t->completed_at_wall_ns);
    put_ts(w, "retry_at", t->retry_at_wall_ns);
    put_num(w, "duration_ms", (double)t->duration_ms);
    put_str(w, "error", t->error);
    put_str(w, "reason", t->reason);
    put_task_extras(w, t);
    zerg_jw_obj_end(w);
}

static void put_worker(struct zerg_jw *w, const struct zerg_worker_state *ws,
                       const struct zerg_graph *g)
{
    const char *task = NULL;
    if (ws->task >= 0 && (size_t)ws->task < g->ntasks)
        task = g->tasks[ws->task].id;
    char key[16];
    snprintf(key, sizeof key, "%d", ws->id);
    zerg_jw_str(w, key);
    zerg_jw_obj(w);
    put_str(w, "status", zerg_worker_status_name(ws->status));
    put_int(w, "pid", ws->pid, 0);
    put_str(w, "container_id", ws->container_id[0] ? ws->container_id : NULL);
    put_num(w, "respawn_count", ws->respawn_count);
    put_num(w, "spawn_attempt", ws->spawn_attempt);
    put_num(w, "epoch", (double)ws->epoch);
    put_str(w, "task", task);
    put_ts(w, "started_at", ws->started_at_wall_ns);
    put_ts(w, "ready_at", ws->ready_at_wall_ns);
    zerg_jw_obj_end(w);
}

static void put_levels(struct zerg_jw *w, const struct zerg_state *s)
{
    size_t n = s->levels && s->nlevels > 0 ? (size_t)s->nlevels : 0;
    zerg_jw_str(w, "levels");
    zerg_jw_obj(w);
    for (size_t i = 1; i <= n; i++) {
        char key[16];
        snprintf(key, sizeof key, "%zu", i);
        zerg_jw_str(w, key);
        zerg_jw_obj(w);
        put_str(w, "status", zerg_level_status_name(s->levels[i].status));
        put_ts(w, "started_at", s->levels[i].started_at_wall_ns);
        put_ts(w, "completed_at", s->levels[i].completed_at_wall_ns);
        zerg_jw_obj_end(w);
    }
    zerg_jw_obj_end(w);
}

static void put_metrics(struct zerg_jw *w, const struct zerg_metrics *m)
{
    zerg_jw_str(w, "metrics");
    zerg_jw_obj(w);
    for (size_t i = 0; i < zerg_nmetrics; i++)
        put_num(w, zerg_metric_fields[i].name, (double)zerg_metric_get(m, i));
    zerg_jw_obj_end(w);
}

/* {base, branch, refs} under worktree isolation (or once zerg made a
 * ref), else null.  refs is written even when empty: its presence says
 * the document knows which refs zerg created (DESIGN §18). */
static void put_git(struct zerg_jw *w, const struct zerg_state *s)
{
    zerg_jw_str(w, "git");
    if (!s->git_base[0] && !s->git_refs.n) {
        zerg_jw_null(w);
        return;
    }
    zerg_jw_obj(w);
    put_str(w, "base", s->git_base[0] ? s->git_base : NULL);
    put_str(w, "branch", s->git_branch[0] ? s->git_branch : NULL);
    zerg_jw_str(w, "refs");
    zerg_jw_obj(w);
    for (size_t i = 0; i < s->git_refs.n; i++)
        put_str(w, s->git_refs.v[i].name,
                s->git_refs.v[i].oid[0] ? s->git_refs.v[i].oid : NULL);
    zerg_jw_obj_end(w);
    zerg_jw_obj_end(w);
}

void zerg_state_write_json(const struct zerg_state *s,
                           const struct zerg_graph *g, struct zerg_jw *w)
{
    zerg_jw_obj(w);
    put_num(w, "version", s->version);
    put_str(w, "feature", s->feature);
    put_str(w, "run_id", s->run_id[0] ? s->run_id : NULL);
    put_ts(w, "started_at", s->started_at_wall_ns);
    put_ts(w, "updated_at", s->updated_at_wall_ns);
    put_num(w, "current_level", s->current_level);
    put_str(w, "status", s->status);
    zerg_jw_str(w, "tasks");
    zerg_jw_obj(w);
    for (size_t i = 0; i < s->ntasks && i < g->ntasks; i++)
        put_task(w, g->tasks[i].id, &s->tasks[i]);
    zerg_jw_obj_end(w);
    zerg_jw_str(w, "workers");
    zerg_jw_obj(w);
    for (size_t i = 0; i < s->nworkers; i++)
        put_worker(w, &s->workers[i], g);
    zerg_jw_obj_end(w);
    put_levels(w, s);
    put_metrics(w, &s->metrics);
    put_num(w, "next_epoch", (double)s->next_epoch);
    zerg_jw_str(w, "paused");
    zerg_jw_bool(w, s->paused);
    put_git(w, s);
    put_str(w, "error", s->error);
    zerg_jw_obj_end(w);
}

zerg_json *zerg_state_to_json(const struct zerg_state *s,
                              const struct zerg_graph *g)
{
    if (s->ntasks != g->ntasks)
        return NULL;
    struct zerg_jw_buf b = {0};
    struct zerg_jw *w = zerg_jw_new(zerg_jw_buf_sink, &b);
    if (w)
        zerg_state_write_json(s, g, w);
    zerg_json *doc = NULL;
    if (zerg_jw_finish(w, NULL) == 0 && b.p)
        doc = zerg_json_parse(b.p, b.n, NULL);
    free(b.p);
    return doc;
}
