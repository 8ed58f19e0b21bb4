/* status_json.c - `zerg status --json`: the view of status_view.c as
 * one JSON object (summary, levels, workers as they are now, heartbeats,
 * git, health). */
#include "status_view.h"
#include "status_ws.h"
#include "cli/task_check.h"

#include <stdlib.h>
#include <string.h>

#include "zerg/clock.h"
#include "zerg/json.h"

/* ---- JSON --------------------------------------------------------------- */

/* The run's tokens (DESIGN §20): input, output and the prompt cache. */
static zerg_json *json_tokens(const struct view *v)
{
    int64_t sum[4] = {0};
    for (size_t i = 0; i < v->s.ntasks; i++) {
        sum[0] += v->s.tasks[i].input_tokens;
        sum[1] += v->s.tasks[i].output_tokens;
        sum[2] += v->s.tasks[i].cache_read_tokens;
        sum[3] += v->s.tasks[i].cache_write_tokens;
    }
    static const char *const names[] = {"input", "output", "cache_read",
                                        "cache_write"};
    zerg_json *t = zerg_json_obj();
    for (size_t k = 0; t && k < 4; k++)
        if (zerg_json_set_num(t, names[k], (double)sum[k])) {
            zerg_json_free(t);
            return NULL;
        }
    return t;
}

static zerg_json *json_levels(const struct view *v)
{
    zerg_json *arr = zerg_json_arr();
    for (int lv = 1; arr && lv <= v->g->nlevels; lv++) {
        struct sv_level c;
        sv_level_counts(v, lv, &c);
        zerg_json *o = zerg_json_obj();
        const char *st = lv <= v->s.nlevels
                             ? zerg_level_status_name(v->s.levels[lv].status)
                             : "pending";
        if (!o || zerg_json_set_num(o, "level", lv) ||
            zerg_json_set_str(o, "status", st) ||
            zerg_json_set_num(o, "done", (double)c.done) ||
            zerg_json_set_num(o, "failed", (double)c.failed) ||
            zerg_json_set_num(o, "blocked", (double)c.blocked) ||
            zerg_json_set_num(o, "total", (double)c.total) ||
            zerg_json_push(arr, o)) {
            zerg_json_free(arr);
            return NULL;
        }
    }
    return arr;
}

static zerg_json *json_counts(const struct view *v)
{
    size_t counts[ZERG_TASK_NSTATUS];
    zerg_state_count(&v->s, counts);
    zerg_json *o = zerg_json_obj();
    for (int st = 0; o && st < ZERG_TASK_NSTATUS; st++)
        if (zerg_json_set_num(o,
                              zerg_task_status_name((enum zerg_task_status)st),
                              (double)counts[st])) {
            zerg_json_free(o);
            return NULL;
        }
    return o;
}

static zerg_json *json_heartbeats(const struct view *v)
{
    zerg_json *arr = zerg_json_arr();
    for (size_t i = 0; arr && i < v->nhb; i++) {
        const struct zerg_heartbeat *hb = &v->hb[i];
        char ts[ZERG_TS_MAX];
        zerg_json *o = zerg_json_obj();
        if (!o || zerg_json_set_num(o, "worker_id", hb->worker_id) ||
            zerg_json_set_num(o, "epoch", (double)hb->epoch) ||
            zerg_json_set_num(o, "seq", (double)hb->seq) ||
            zerg_json_set_str(o, "timestamp",
                              zerg_clock_iso8601(hb->timestamp_ns, ts)) ||
            zerg_json_set_num(o, "age_seconds",
                              zerg_ns_to_s(v->now_ns - hb->timestamp_ns)) ||
            zerg_json_set_str(o, "task_id",
                              hb->task_id[0] ? hb->task_id : NULL) ||
            zerg_json_set_str(o, "step", hb->step) ||
            zerg_json_set_num(o, "progress_pct", hb->progress_pct) ||
            zerg_json_set_str(o, "activity", hb->activity) ||
            zerg_json_set_num(o, "tool_calls", (double)hb->tool_calls) ||
            zerg_json_set_num(o, "pid", hb->pid) || zerg_json_push(arr, o)) {
            zerg_json_free(arr);
            return NULL;
        }
    }
    return arr;
}

static zerg_json *json_health(const struct view *v)
{
    struct health h;
    sv_judge(v, &h);
    zerg_json *o = zerg_json_obj();
    zerg_json *why = zerg_json_arr();
    zerg_json *m = zerg_json_obj();
    int bad = !o || !why || !m;
    for (int i = 0; !bad && i < h.n; i++)
        bad = zerg_json_push(why, zerg_json_str(h.reasons[i])) != 0;
    for (size_t i = 0; !bad && i < zerg_nmetrics; i++)
        bad = zerg_json_set_num(m, zerg_metric_fields[i].name,
                                (double)zerg_metric_get(&v->s.metrics, i)) != 0;
    if (!bad && !zerg_json_set_str(o, "verdict", h.verdict)) {
        bad = zerg_json_set(o, "reasons", why);
        why = NULL;
        bad = bad || zerg_json_set(o, "metrics", m);
        m = NULL;
    } else {
        bad = 1;
    }
    zerg_json_free(why);
    zerg_json_free(m);
    if (bad) {
        zerg_json_free(o);
        return NULL;
    }
    return o;
}

static zerg_json *json_failed(const struct view *v)
{
    zerg_json *arr = zerg_json_arr();
    for (size_t i = 0; arr && i < v->s.ntasks; i++) {
        const struct zerg_task_state *t = &v->s.tasks[i];
        if (t->status != ZERG_TASK_FAILED)
            continue;
        zerg_json *o = zerg_json_obj();
        if (!o || zerg_json_set_str(o, "id", v->g->tasks[i].id) ||
            zerg_json_set_str(o, "reason", t->reason) ||
            zerg_json_set_str(o, "error", t->error) ||
            zerg_json_set_num(o, "retry_count", t->retry_count) ||
            zerg_json_push(arr, o)) {
            zerg_json_free(arr);
            return NULL;
        }
    }
    return arr;
}

static zerg_json *json_check(const struct view *v,
                             const struct zerg_check_group *c)
{
    zerg_json *o = zerg_json_obj(), *ids = zerg_json_arr();
    int bad = !o || !ids ||
              zerg_json_set_str(o, "kind", zerg_check_kind_name(c->kind)) ||
              zerg_json_set_str(o, "check", c->text) ||
              zerg_json_set_num(o, "count", (double)c->n);
    for (size_t k = 0; !bad && k < c->n; k++)
        bad = zerg_json_push(ids, zerg_json_str(v->g->tasks[c->tasks[k]].id));
    if (bad || zerg_json_set(o, "tasks", ids)) {
        zerg_json_free(o);
        return NULL;
    }
    return o;
}

/* Which check passes each task, tasks grouped by check (task_check.h). */
static zerg_json *json_checks(const struct view *v)
{
    struct zerg_check_groups gs;
    zerg_json *arr = zerg_check_groups(v->g, &gs) == 0 ? zerg_json_arr() : NULL;
    for (size_t i = 0; arr && i < gs.n; i++) {
        zerg_json *o = json_check(v, &gs.v[i]);
        if (!o || zerg_json_push(arr, o)) {
            zerg_json_free(arr);
            arr = NULL;
        }
    }
    zerg_check_groups_free(&gs);
    return arr;
}

/* Every unfinished task: id, status, worker, reason, error, retry_at. */
static zerg_json *json_unfinished(const struct view *v)
{
    zerg_json *arr = zerg_json_arr();
    char ts[ZERG_TS_MAX];
    for (size_t i = 0; arr && i < v->s.ntasks; i++) {
        const struct zerg_task_state *t = &v->s.tasks[i];
        if (!sv_unfinished(t->status))
            continue;
        zerg_json *o = zerg_json_obj();
        int waiting =
            t->status == ZERG_TASK_WAITING_RETRY && t->retry_at_wall_ns;
        if (!o || zerg_json_set_str(o, "id", v->g->tasks[i].id) ||
            zerg_json_set_str(o, "status", zerg_task_status_name(t->status)) ||
            zerg_json_set_num(o, "worker", t->worker_id) ||
            zerg_json_set_str(o, "reason", t->reason) ||
            zerg_json_set_str(o, "error", t->error) ||
            zerg_json_set_str(
                o, "retry_at",
                waiting ? zerg_clock_iso8601(t->retry_at_wall_ns, ts) : NULL) ||
            zerg_json_push(arr, o)) {
            zerg_json_free(arr);
            return NULL;
        }
    }
    return arr;
}

/* The state's workers, each with its status as it is now (worker_word)
 * and, when that differs, the recorded one as recorded_status. */
static zerg_json *json_workers(const struct view *v, const zerg_json *state)
{
    zerg_json *ws = zerg_json_dup(zerg_json_get(state, "workers"));
    for (size_t i = 0; ws && i < v->s.nworkers; i++) {
        const struct zerg_worker_state *w = &v->s.workers[i];
        char key[16];
        snprintf(key, sizeof key, "%d", w->id);
        zerg_json *o = (zerg_json *)zerg_json_get(ws, key);
        const char *now = sv_worker_word(v, w),
                   *was = zerg_worker_status_name(w->status);
        if (o && strcmp(now, was) &&
            (zerg_json_set_str(o, "recorded_status", was) ||
             zerg_json_set_str(o, "status", now))) {
            zerg_json_free(ws);
            return NULL;
        }
    }
    return ws;
}

static zerg_json *json_view(const struct view *v)
{
    zerg_json *o = zerg_json_obj();
    zerg_json *state = zerg_state_to_json(&v->s, v->g);
    if (!o || !state)
        goto fail;
    /* The full document's workers, metrics and levels are reused; its
     * per-task map is left out (it can be thousands of entries). */
    if (zerg_json_set_str(o, "feature", v->feature) ||
        zerg_json_set_str(o, "run", sv_run_word(v)) ||
        zerg_json_set_bool(o, "running", v->running) ||
        (v->running && v->pid ? zerg_json_set_num(o, "pid", v->pid)
                              : zerg_json_set_null(o, "pid")) ||
        zerg_json_set_str(o, "run_id", v->s.run_id) ||
        zerg_json_set_str(o, "status", v->s.status) ||
        zerg_json_set_str(o, "error", v->s.error) ||
        zerg_json_set_num(o, "current_level", sv_shown_level(v)) ||
        zerg_json_set_num(o, "nlevels", v->g->nlevels) ||
        zerg_json_set_num(o, "cost_usd", zerg_state_cost_usd(&v->s)) ||
        zerg_json_set(o, "tokens", json_tokens(v)) ||
        zerg_json_set(o, "levels", json_levels(v)) ||
        zerg_json_set(o, "tasks", json_counts(v)) ||
        zerg_json_set(o, "failed", json_failed(v)) ||
        zerg_json_set(o, "unfinished", json_unfinished(v)) ||
        zerg_json_set(o, "checks", json_checks(v)) ||
        zerg_json_set(o, "workers", json_workers(v, state)) ||
        zerg_json_set(o, "heartbeats", json_heartbeats(v)) ||
        zerg_json_set(o, "git",
                      zerg_status_ws_json(v->cli, v->feature, &v->s, v->g)) ||
        zerg_json_set(o, "health", json_health(v)))
        goto fail;
    zerg_json_free(state);
    return o;
fail:
    zerg_json_free(state);
    zerg_json_free(o);
    return NULL;
}

int sv_print_json(FILE *out, const struct view *v)
{
    struct zerg_err err = {0};
    zerg_json *doc = json_view(v);
    char *text = doc ? zerg_json_encode(doc, NULL, &err) : NULL;
    zerg_json_free(doc);
    if (!text) {
        zerg_cli_error("status", "cannot encode the summary: %s",
                       err.msg[0] ? err.msg : "out of memory");
        return ZERG_EXIT_FAIL;
    }
    fprintf(out, "%s\n", text);
    free(text);
    return ZERG_EXIT_OK;
}
