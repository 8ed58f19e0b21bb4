/* orch_reconcile.c - keeping the state document true (FR-4).
 *
 * The orchestrator builds a plain snapshot, asks reconcile.check which
 * divergences it sees, validates each fix against the live state (a policy
 * cannot, say, complete a level that still has running tasks) and applies
 * it.  Light checks run every resilience.reconcile_interval_seconds and
 * look only at what can drift (running tasks, null levels, level marks);
 * thorough ones run before every level transition and on --resume and see
 * every task.  Also here: the journal replay (result files still on disk)
 * and `zerg retry` requests sent to a live rush. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "orch_internal.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/retry.h"

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
    zerg_json_set_bool(j, "worker_alive",
                       orch_worker_alive(o, st->worker_id) &&
                           o->slots[st->worker_id].task == (int)t);
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

/* Applies one fix if it is valid now; returns 1 when something changed. */
static int apply_fix(struct zerg_orch *o, const struct zerg_fix *f)
{
    struct zerg_state *s = o->s;
    ssize_t t = f->task[0] ? zerg_graph_find(o->g, f->task) : -1;

    if (f->task[0] && t < 0)
        return 0;
    if (!strcmp(f->fix, "requeue") && t >= 0) {
        struct zerg_task_state *st = &s->tasks[t];
        if (st->status != ZERG_TASK_CLAIMED &&
            st->status != ZERG_TASK_IN_PROGRESS)
            return 0;
        if (orch_worker_alive(o, st->worker_id) &&
            o->slots[st->worker_id].task == (int)t)
            return 0;
        s->metrics.task_reassignments++;
        orch_requeue(o, (size_t)t, "requeued by reconciliation");
        return 1;
    }
    if (!strcmp(f->fix, "set_level") && t >= 0) {
        if (f->level < 1 || f->level > o->g->nlevels ||
            s->tasks[t].level == f->level)
            return 0;
        s->tasks[t].level = f->level;
        return 1;
    }
    if (!strcmp(f->fix, "block") && t >= 0) {
        enum zerg_task_status st = s->tasks[t].status;
        if ((st != ZERG_TASK_PENDING && st != ZERG_TASK_WAITING_RETRY) ||
            !any_dep_failed(o, (size_t)t))
            return 0;
        orch_block_dependents(o, (size_t)t);
        return 1;
    }
    if (f->level < 1 || f->level > o->g->nlevels)
        return 0;
    struct zerg_level_state *ls = &s->levels[f->level];
    int done = zerg_state_level_done(s, o->g, f->level);
    if (!strcmp(f->fix, "reopen_level")) {
        if (done || ls->status != ZERG_LEVEL_COMPLETE)
            return 0;
        ls->status = ZERG_LEVEL_RUNNING;
        ls->completed_at = 0;
        if (s->current_level > f->level)
            s->current_level = f->level;
        o->level_cursor[f->level] = 0;
        return 1;
    }
    if (!strcmp(f->fix, "complete_level")) {
        /* The current level is completed by the level transition itself;
         * this fix is for lower levels whose mark was lost. */
        if (!done || ls->status == ZERG_LEVEL_COMPLETE ||
            f->level >= s->current_level)
            return 0;
        ls->status = ZERG_LEVEL_COMPLETE;
        return 1;
    }
    return 0;
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
    int64_t t0 = zerg_clock_mono(&zerg_clock_system);
    zerg_json *snap = snapshot(o, thorough);
    size_t checked = zerg_json_len(zerg_json_get(snap, "tasks"));
    zerg_policy_reconcile(o->o.policy, snap, &fixes, &nfixes, &why);
    zerg_json_free(snap);
    zerg_json_free(why);
    for (size_t i = 0; i < nfixes; i++) {
        const struct zerg_fix *f = &fixes[i];
        if (!apply_fix(o, f))
            continue;
        applied++;
        o->s->metrics.reconcile_fixes++;
        orch_mark_dirty(o);
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
                       "Reconciliation fixed %s: %s (%s)", what, f->fix,
                       f->reason);
    }
    free(fixes);
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "fixes", (double)applied);
    zerg_json_set_num(data, "duration_ms",
                      (double)(zerg_clock_mono(&zerg_clock_system) - t0) / 1e6);
    zerg_json_set_num(data, "tasks_checked", (double)checked);
    zerg_json_set_str(data, "check", kind);
    zerg_log_event(o->o.log, ZERG_LOG_ORCH, applied ? ZERG_LOG_INFO : lvl,
                   "state_reconcile_complete", NULL, data,
                   "State reconciliation (%s) complete: %zu fix%s", kind,
                   applied, applied == 1 ? "" : "es");
    return (int)applied;
}

int orch_scan_results(struct zerg_orch *o, int64_t now)
{
    DIR *d = opendir(o->state_dir);
    struct dirent *e;
    char path[PATH_MAX];
    int n = 0, slot;

    if (!d)
        return 0;
    while ((e = readdir(d)))
        if (zerg_proto_classify(e->d_name, &slot) == 'r' &&
            !zerg_fsio_path(path, sizeof path, "%s/%s", o->state_dir,
                            e->d_name))
            n += orch_apply_result(o, path, now);
    closedir(d);
    return n;
}

void orch_apply_retry_request(struct zerg_orch *o, const char *path,
                              int64_t now)
{
    struct zerg_retry_request req = {0};
    struct zerg_err err = {0};

    if (zerg_retry_request_read(path, &req, &err) < 0) {
        if (access(path, F_OK) == 0) {
            zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_WARN,
                           "retry_request_invalid", NULL, NULL,
                           "Ignored retry request %s: %s", path, err.msg);
            unlink(path);
        }
        return;
    }
    if (strcmp(req.feature, o->o.feature)) {
        zerg_retry_request_close(&req);
        return; /* another feature's rush will pick it up */
    }
    int n = zerg_retry_request_apply(o->s, o->g, &req, &err);
    unlink(path);
    if (n < 0) {
        zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_WARN,
                       "retry_request_invalid", NULL, NULL,
                       "Retry request refused: %s", err.msg);
    } else {
        for (size_t t = 0; t < o->g->ntasks; t++)
            if (o->s->tasks[t].status == ZERG_TASK_PENDING)
                o->retry_at[t] = 0;
        memset(o->level_cursor, 0,
               ((size_t)o->g->nlevels + 2) * sizeof *o->level_cursor);
        zerg_json *data = zerg_json_obj();
        zerg_json_set_num(data, "requeued", n);
        zerg_json_set_bool(data, "all_failed", req.all_failed);
        zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_INFO,
                       "task_retry_requested", req.n == 1 ? req.ids[0] : NULL,
                       data, "Retry requested: %d task%s requeued", n,
                       n == 1 ? "" : "s");
        orch_mark_dirty(o);
        orch_reconcile(o, 1, now);
    }
    zerg_retry_request_close(&req);
}

/* Before the first spawn: no epoch the previous orchestrator may have used
 * after its last checkpoint is handed out again (fencing depends on it),
 * and a fresh run does not inherit the previous run's results. */
void orch_prepare_dir(struct zerg_orch *o)
{
    DIR *d = opendir(o->state_dir);
    struct dirent *e;
    char path[PATH_MAX];
    uint64_t max_epoch = 0;
    int slot;

    if (!d)
        return;
    while ((e = readdir(d))) {
        int kind = zerg_proto_classify(e->d_name, &slot);
        if ((kind != 'r' && kind != 'h') ||
            zerg_fsio_path(path, sizeof path, "%s/%s", o->state_dir,
                           e->d_name))
            continue;
        if (kind == 'h') {
            struct zerg_heartbeat hb;
            if (zerg_proto_read_heartbeat(path, &hb) == 0 &&
                hb.epoch > max_epoch)
                max_epoch = hb.epoch;
            continue;
        }
        struct zerg_result r;
        if (zerg_proto_read_result(path, &r) == 0 && r.epoch > max_epoch)
            max_epoch = r.epoch;
        if (!o->o.resume)
            unlink(path);
    }
    closedir(d);
    if (o->s->next_epoch <= max_epoch)
        o->s->next_epoch = max_epoch + 1;
}
