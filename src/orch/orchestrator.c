/* orchestrator.c - what happens when: the rush as a state machine.
 *
 * Inputs are events (a worker child exited, a heartbeat or result file
 * changed, a stop was asked) and ticks with the current monotonic time.
 * Every recovery decision is asked of a policy and logged with its inputs:
 *
 *   spawn failed (exit before ready) -> backoff.delay, retry or retire (FR-1)
 *   task without progress            -> stale.task, kill, charged (FR-2)
 *   heartbeat not changing           -> stale.worker, kill, crash (FR-3)
 *   periodically / level transition  -> reconcile.check (FR-4)
 *   worker exited after ready        -> retry.decide uncharged (FR-5),
 *                                       respawn.decide (FR-6)
 *   task failed                      -> retry.decide charged
 *
 * Only this file (through orch_checkpoint) writes the state document. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "orch_internal.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/worker.h"

#define MS(ns) ((double)(ns) / 1e6)
#define SEC(ns) ((double)(ns) / 1e9)

void orch_mark_dirty(struct zerg_orch *o)
{
    o->dirty = 1;
}

int orch_worker_alive(const struct zerg_orch *o, int worker)
{
    return worker >= 0 && worker < o->nslots && o->slots[worker].alive;
}

/* ------------------------------------------------------------------ */
/* Checkpoint: coalesced state writes.                                 */

static void sync_workers(struct zerg_orch *o)
{
    for (int i = 0; i < o->nslots; i++) {
        struct zerg_worker_state *w = &o->s->workers[i];
        struct slot *sl = &o->slots[i];
        w->id = i;
        w->pid = sl->alive ? sl->proc.pid : 0;
        snprintf(w->container_id, sizeof w->container_id, "%s",
                 sl->alive ? sl->proc.name : "");
        w->epoch = sl->proc.epoch;
        w->task = sl->task;
    }
}

static int64_t checkpoint_gap(const struct zerg_orch *o)
{
    int64_t gap = 4 * o->save_cost;
    return gap > o->o.checkpoint_ns ? gap : o->o.checkpoint_ns;
}

void orch_checkpoint(struct zerg_orch *o, int64_t now, int force)
{
    struct zerg_err err = {0};

    if (!o->dirty && !force)
        return;
    if (!force && now - o->last_save < checkpoint_gap(o))
        return;
    sync_workers(o);
    o->s->updated_at = orch_wall_now();
    o->s->metrics.policy_errors = zerg_policy_error_count(o->o.policy);
    int64_t t0 = zerg_clock_mono(&zerg_clock_system);
    int rc = zerg_state_save(o->s, o->g, o->state_path, &err);
    /* Keep checkpoints under ~20 % of the loop's time however large the
     * state grows: the next one waits at least 4x what this one cost. */
    o->save_cost = zerg_clock_mono(&zerg_clock_system) - t0;
    if (rc < 0) {
        /* The old file is intact; keep the results on disk (they are the
         * journal) and try again at the next checkpoint. */
        zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_ERROR,
                       "state_write_failed", NULL, NULL,
                       "Cannot write state: %s (will retry)", err.msg);
        o->last_save = now;
        return;
    }
    o->dirty = 0;
    o->last_save = now;
    for (size_t i = 0; i < o->nunlink; i++) {
        unlink(o->pending_unlink[i]);
        free(o->pending_unlink[i]);
    }
    o->nunlink = 0;
}

static void defer_unlink(struct zerg_orch *o, const char *path)
{
    char *copy = strdup(path);
    if (copy && o->nunlink == o->unlink_cap) {
        size_t cap = o->unlink_cap ? o->unlink_cap * 2 : 16;
        void *p = realloc(o->pending_unlink, cap * sizeof *o->pending_unlink);
        if (p) {
            o->pending_unlink = p;
            o->unlink_cap = cap;
        }
    }
    if (!copy || o->nunlink == o->unlink_cap) {
        unlink(path); /* out of memory: lose the journal, not the run */
        free(copy);
        return;
    }
    o->pending_unlink[o->nunlink++] = copy;
}

/* ------------------------------------------------------------------ */
/* Task transitions.                                                   */

static void set_str(char **dst, const char *src)
{
    free(*dst);
    *dst = src ? strdup(src) : NULL;
}

static void release_slot_task(struct zerg_orch *o, size_t t)
{
    int w = orch_ts(o, t)->worker_id;
    if (w >= 0 && w < o->nslots && o->slots[w].task == (int)t)
        o->slots[w].task = -1;
    orch_ts(o, t)->worker_id = -1;
}

/* Back to pending without charging anything (crash, stop, reconcile). */
void orch_requeue(struct zerg_orch *o, size_t t, const char *why)
{
    struct zerg_task_state *st = orch_ts(o, t);
    release_slot_task(o, t);
    st->status = ZERG_TASK_PENDING;
    st->retry_at = 0;
    o->retry_at[t] = 0;
    set_str(&st->error, why);
    size_t lvl = (size_t)o->g->tasks[t].level;
    if (o->level_cursor[lvl] > 0)
        o->level_cursor[lvl] = 0;
    orch_mark_dirty(o);
}

void orch_block_dependents(struct zerg_orch *o, size_t t)
{
    /* Dependents always sit at the same or a higher level; a few passes
     * over the graph reach the transitive closure without recursion. */
    int changed = 1;
    while (changed) {
        changed = 0;
        for (size_t i = 0; i < o->g->ntasks; i++) {
            struct zerg_task_state *st = orch_ts(o, i);
            if (zerg_task_status_terminal(st->status) ||
                st->status == ZERG_TASK_IN_PROGRESS ||
                st->status == ZERG_TASK_CLAIMED)
                continue;
            const struct zerg_task *tk = &o->g->tasks[i];
            for (size_t d = 0; d < tk->deps.n; d++) {
                enum zerg_task_status ds = orch_ts(o, tk->dep_idx[d])->status;
                if (ds != ZERG_TASK_FAILED && ds != ZERG_TASK_BLOCKED)
                    continue;
                char why[160];
                snprintf(why, sizeof why, "dependency %s %s",
                         orch_tid(o, tk->dep_idx[d]),
                         ds == ZERG_TASK_FAILED ? "failed" : "is blocked");
                st->status = ZERG_TASK_BLOCKED;
                set_str(&st->reason, "blocked");
                set_str(&st->error, why);
                zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_WARN,
                               "task_blocked", tk->id, NULL,
                               "Task %s blocked: %s", tk->id, why);
                changed = 1;
                break;
            }
        }
    }
    (void)t;
    orch_mark_dirty(o);
}

static void fail_permanently(struct zerg_orch *o, size_t t, const char *reason,
                             const char *error)
{
    struct zerg_task_state *st = orch_ts(o, t);
    release_slot_task(o, t);
    st->status = ZERG_TASK_FAILED;
    st->completed_at = orch_wall_now();
    set_str(&st->reason, reason);
    set_str(&st->error, error);
    orch_block_dependents(o, t);
}

/* A failure of task t: ask retry.decide and apply it. */
void orch_task_failure(struct zerg_orch *o, size_t t, const char *kind,
                       int exit_code, int sig, const char *error, int64_t now)
{
    struct zerg_task_state *st = orch_ts(o, t);
    struct zerg_retry_in in = {
        .task_id = orch_tid(o, t),
        .retry_count = st->retry_count,
        .crash_count = st->crash_count,
        .attempt = st->attempt,
        .failure = kind,
        .exit_code = exit_code,
        .signal = sig,
    };
    struct zerg_retry_out out;
    zerg_json *why = NULL;
    int worker = st->worker_id;

    if (!o->cfg->resilience_enabled) {
        fail_permanently(o, t, kind, error);
        zerg_log_event(o->o.log, worker, ZERG_LOG_ERROR, "task_failed",
                       orch_tid(o, t), NULL,
                       "Task %s failed (%s): %s; resilience is disabled, "
                       "not retried",
                       orch_tid(o, t), kind, error);
        return;
    }
    zerg_policy_retry(o->o.policy, &in, &out, &why);
    /* retry_count counts retries granted; crash_count counts crashes. */
    if (!out.charge)
        st->crash_count++;
    else if (out.retry)
        st->retry_count++;
    if (!out.retry) {
        /* A charged failure keeps its kind ("timeout", "verification",
         * "exit") as the reason; an uncharged one says why the policy
         * stopped it (e.g. "crash_loop"). */
        const char *reason = !out.charge && out.reason[0] ? out.reason : kind;
        fail_permanently(o, t, reason, error);
        zerg_log_event(o->o.log, worker, ZERG_LOG_ERROR, "task_failed",
                       orch_tid(o, t), why,
                       "Task %s failed permanently (%s): %s", orch_tid(o, t),
                       reason, error);
        return;
    }
    release_slot_task(o, t);
    set_str(&st->error, error);
    set_str(&st->reason, kind);
    if (out.charge) {
        o->s->metrics.task_retries++;
        st->status = ZERG_TASK_WAITING_RETRY;
        st->retry_at = orch_wall_now() + out.delay_ns;
        o->retry_at[t] = now + out.delay_ns;
        zerg_log_event(o->o.log, worker, ZERG_LOG_WARN, "task_failed",
                       orch_tid(o, t), why,
                       "Task %s failed (%s): %s; retry %d of %d in %.1fs",
                       orch_tid(o, t), kind, error, st->retry_count,
                       o->cfg->retry_attempts, SEC(out.delay_ns));
    } else {
        o->s->metrics.task_reassignments++;
        st->status = ZERG_TASK_PENDING;
        o->retry_at[t] = now + out.delay_ns;
        zerg_log_event(o->o.log, worker, ZERG_LOG_WARN, "task_reassigned",
                       orch_tid(o, t), why,
                       "Task %s reassigned after %s of worker %d "
                       "(retry_count stays %d, crash %d)",
                       orch_tid(o, t), kind, worker, st->retry_count,
                       st->crash_count);
    }
    o->level_cursor[o->g->tasks[t].level] = 0;
    orch_mark_dirty(o);
}

/* ------------------------------------------------------------------ */
/* Files from workers: heartbeats and results.                         */

static void task_started(struct zerg_orch *o, struct slot *sl, size_t t)
{
    struct zerg_task_state *st = orch_ts(o, t);
    st->status = ZERG_TASK_IN_PROGRESS;
    st->started_at = orch_wall_now();
    orch_mark_dirty(o);
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "attempt", st->attempt);
    zerg_json_set_num(data, "pgid", sl->hb_task_pgid);
    zerg_log_event(o->o.log, sl->id, ZERG_LOG_INFO, "task_started",
                   orch_tid(o, t), data,
                   "Worker %d started task %s (attempt %d)", sl->id,
                   orch_tid(o, t), st->attempt);
}

/* The worker ran our task and went idle, yet no result was applied: the
 * result is on disk but not seen yet (apply it), or the worker could not
 * write it (a full disk): then the outcome is unknown and the task runs
 * again, uncharged. */
static void lost_result(struct zerg_orch *o, struct slot *sl, int64_t now)
{
    size_t t = (size_t)sl->task;
    char path[PATH_MAX];

    if (zerg_proto_result_path(path, sizeof path, o->state_dir, orch_tid(o, t),
                               orch_ts(o, t)->attempt) == 0 &&
        access(path, F_OK) == 0 && orch_apply_result(o, path, now))
        return;
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "attempt", orch_ts(o, t)->attempt);
    zerg_json_set_str(data, "why", "result_lost");
    o->s->metrics.task_reassignments++;
    zerg_log_event(o->o.log, sl->id, ZERG_LOG_WARN, "task_reassigned",
                   orch_tid(o, t), data,
                   "Task %s reassigned: worker %d finished it but its result "
                   "never arrived (see .zerg/logs/worker-%d.log)",
                   orch_tid(o, t), sl->id, sl->id);
    orch_requeue(o, t, "result lost");
    if (sl->alive && sl->ready)
        orch_slot_status(o, sl, ZERG_WORKER_READY);
}

static void on_heartbeat(struct zerg_orch *o, int slot, int64_t now)
{
    struct zerg_heartbeat hb;
    char path[PATH_MAX];

    if (slot < 0 || slot >= o->nslots || !o->slots[slot].alive)
        return;
    struct slot *sl = &o->slots[slot];
    zerg_proto_heartbeat_path(path, sizeof path, o->state_dir, slot);
    if (zerg_proto_read_heartbeat(path, &hb) < 0 ||
        hb.epoch != sl->proc.epoch || hb.seq == sl->hb_seq)
        return;
    int64_t gap = now - sl->hb_change_at;
    if (sl->ready && gap > o->cfg->heartbeat_stale_threshold_ns / 2) {
        zerg_json *data = zerg_json_obj();
        zerg_json_set_num(data, "gap", SEC(gap));
        zerg_json_set_num(data, "threshold",
                          SEC(o->cfg->heartbeat_stale_threshold_ns));
        zerg_log_event(o->o.log, slot, ZERG_LOG_INFO, "heartbeat_recovered",
                       NULL, data, "Worker %d heartbeat resumed after %.1fs",
                       slot, SEC(gap));
    }
    sl->hb_seq = hb.seq;
    sl->hb_change_at = now;
    sl->hb_task_pgid = hb.task_pgid;
    if (!sl->ready)
        orch_worker_ready(o, sl, now);
    if (sl->task >= 0 && sl->task_seen && !hb.task_id[0]) {
        lost_result(o, sl, now);
        return;
    }
    if (sl->task < 0 || strcmp(hb.task_id, orch_tid(o, (size_t)sl->task)) ||
        hb.attempt != orch_ts(o, (size_t)sl->task)->attempt)
        return;
    size_t t = (size_t)sl->task;
    sl->task_seen = 1;
    if (strcmp(hb.step, sl->hb_step) || hb.progress_pct != sl->hb_pct) {
        sl->progress_at = now;
        snprintf(sl->hb_step, sizeof sl->hb_step, "%s", hb.step);
        sl->hb_pct = hb.progress_pct;
    }
    if (orch_ts(o, t)->status == ZERG_TASK_CLAIMED)
        task_started(o, sl, t);
}

static void fenced(struct zerg_orch *o, const struct zerg_result *r,
                   const char *path, const char *why)
{
    o->s->metrics.results_fenced++;
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "epoch", (double)r->epoch);
    zerg_json_set_num(data, "attempt", r->attempt);
    zerg_json_set_str(data, "why", why);
    zerg_log_event(o->o.log, r->worker_id, ZERG_LOG_WARN, "result_fenced",
                   r->task[0] ? r->task : NULL, data,
                   "Dropped a result for %s attempt %d from worker %d "
                   "(epoch %" PRIu64 "): %s",
                   r->task, r->attempt, r->worker_id, r->epoch, why);
    defer_unlink(o, path);
    orch_mark_dirty(o);
}

/* Applies a result if it belongs to the live assignment.  Returns 1 when
 * applied.  Also used on resume, when no worker is alive: then the task's
 * own (epoch, attempt) is the fence. */
int orch_apply_result(struct zerg_orch *o, const char *path, int64_t now)
{
    struct zerg_result r;

    if (zerg_proto_read_result(path, &r) < 0)
        return 0; /* half-visible or garbage: a later event will retry */
    ssize_t t = zerg_graph_find(o->g, r.task);
    if (t < 0) {
        fenced(o, &r, path, "unknown task");
        return 0;
    }
    struct zerg_task_state *st = orch_ts(o, (size_t)t);
    /* The same result seen twice (an event for a file already applied
     * through another path) is not a stale one. */
    if (o->applied_attempt[t] == r.attempt && st->epoch == r.epoch)
        return 0;
    /* Replaying the journal on --resume: a task completed by a worker of
     * the dead orchestrator counts even when the claim itself never
     * reached a checkpoint (the state still says pending, or an older
     * attempt).  Running it again would run it twice. */
    if (o->replaying && r.outcome == ZERG_OUTCOME_COMPLETE &&
        !zerg_task_status_terminal(st->status) && r.attempt >= st->attempt) {
        st->status = ZERG_TASK_IN_PROGRESS;
        st->attempt = r.attempt;
        st->epoch = r.epoch;
        st->worker_id = -1;
    }
    if ((st->status != ZERG_TASK_CLAIMED &&
         st->status != ZERG_TASK_IN_PROGRESS) ||
        st->epoch != r.epoch || st->attempt != r.attempt) {
        fenced(o, &r, path, "not the live assignment");
        return 0;
    }
    struct slot *sl = NULL;
    if (r.worker_id >= 0 && r.worker_id < o->nslots &&
        o->slots[r.worker_id].task == (int)t)
        sl = &o->slots[r.worker_id];
    st->duration_ms = r.duration_ms;
    o->applied_attempt[t] = r.attempt;
    defer_unlink(o, path);
    /* A task that failed because we were killing its worker (stop, stale
     * heartbeat, timeout) is not the task's failure: the worker's exit
     * decides what happens to it. */
    if (r.outcome != ZERG_OUTCOME_COMPLETE &&
        (o->stopping || (sl && sl->killed)))
        return 0;
    if (r.outcome == ZERG_OUTCOME_COMPLETE) {
        release_slot_task(o, (size_t)t);
        st->status = ZERG_TASK_COMPLETE;
        st->completed_at = orch_wall_now();
        set_str(&st->error, NULL);
        set_str(&st->reason, NULL);
        orch_mark_dirty(o);
        zerg_json *data = zerg_json_obj();
        zerg_json_set_num(data, "attempt", r.attempt);
        zerg_json_set_num(data, "duration_ms", (double)r.duration_ms);
        zerg_json_set_num(data, "epoch", (double)r.epoch);
        if (o->replaying)
            zerg_json_set_bool(data, "replayed", 1);
        zerg_log_event(o->o.log, r.worker_id, ZERG_LOG_INFO, "task_complete",
                       r.task, data, "Task %s complete in %.2fs (worker %d)",
                       r.task, (double)r.duration_ms / 1000, r.worker_id);
    } else {
        const char *kind = r.timed_out ? "timeout" : r.stage;
        if (strcmp(kind, "verification") && strcmp(kind, "timeout"))
            kind = "exit";
        char err[400];
        snprintf(err, sizeof err, "%s %s: %s", r.stage,
                 r.timed_out ? "timed out" : "failed",
                 r.error[0] ? r.error : "no detail");
        orch_task_failure(o, (size_t)t, kind, r.exit_code, r.signal, err, now);
    }
    if (sl) {
        sl->task = -1;
        if (sl->alive && sl->ready)
            orch_slot_status(o, sl, ZERG_WORKER_READY);
    }
    return 1;
}

void zerg_orch_file_changed(struct zerg_orch *o, const char *name, int64_t now)
{
    char path[PATH_MAX];
    int slot = -1;

    switch (zerg_proto_classify(name, &slot)) {
    case 'h':
        on_heartbeat(o, slot, now);
        break;
    case 'r':
        if (zerg_fsio_path(path, sizeof path, "%s/%s", o->state_dir, name))
            return;
        if (access(path, F_OK) == 0)
            orch_apply_result(o, path, now);
        break;
    case 'q':
        if (zerg_fsio_path(path, sizeof path, "%s/%s", o->state_dir, name))
            return;
        orch_apply_retry_request(o, path, now);
        break;
    default:
        break;
    }
}

/* ------------------------------------------------------------------ */
/* Levels and dispatch.                                                */

static int deps_complete(const struct zerg_orch *o, size_t t)
{
    const struct zerg_task *tk = &o->g->tasks[t];
    for (size_t d = 0; d < tk->deps.n; d++)
        if (o->s->tasks[tk->dep_idx[d]].status != ZERG_TASK_COMPLETE)
            return 0;
    return 1;
}

static int conflict_running(struct zerg_orch *o, size_t t)
{
    const struct zerg_task *tk = &o->g->tasks[t];
    for (size_t c = 0; c < tk->nconflicts; c++) {
        enum zerg_task_status s = orch_ts(o, tk->conflicts[c])->status;
        if (s == ZERG_TASK_CLAIMED || s == ZERG_TASK_IN_PROGRESS)
            return 1;
    }
    return 0;
}

/* The next task of the current level that may run now, or -1.  *wake is
 * lowered to the earliest retry time still in the future. */
static ssize_t next_task(struct zerg_orch *o, int64_t now, int64_t *wake)
{
    int lvl = o->s->current_level;
    if (lvl < 1 || lvl > o->g->nlevels)
        return -1;
    const struct zerg_level *L = &o->g->levels[lvl];
    size_t *cur = &o->level_cursor[lvl];
    while (*cur < L->n &&
           zerg_task_status_terminal(orch_ts(o, L->tasks[*cur])->status))
        (*cur)++;
    for (size_t i = *cur; i < L->n; i++) {
        size_t t = L->tasks[i];
        struct zerg_task_state *st = orch_ts(o, t);
        if (st->status != ZERG_TASK_PENDING &&
            st->status != ZERG_TASK_WAITING_RETRY)
            continue;
        if (o->retry_at[t] > now) {
            if (o->retry_at[t] < *wake)
                *wake = o->retry_at[t];
            continue;
        }
        if (!deps_complete(o, t) || conflict_running(o, t))
            continue;
        return (ssize_t)t;
    }
    return -1;
}

static int assign(struct zerg_orch *o, struct slot *sl, size_t t, int64_t now)
{
    struct zerg_task_state *st = orch_ts(o, t);
    struct zerg_err err = {0};
    struct zerg_assign a = {.epoch = sl->proc.epoch,
                            .attempt = st->attempt + 1};

    snprintf(a.task, sizeof a.task, "%s", orch_tid(o, t));
    if (zerg_proto_write_assign(o->state_dir, sl->id, &a, &err) < 0) {
        zerg_log_event(o->o.log, sl->id, ZERG_LOG_ERROR, "assign_failed",
                       orch_tid(o, t), NULL, "Cannot assign %s: %s",
                       orch_tid(o, t), err.msg);
        return -1;
    }
    st->attempt = a.attempt;
    st->epoch = a.epoch;
    st->worker_id = sl->id;
    st->status = ZERG_TASK_CLAIMED;
    st->claimed_at = orch_wall_now();
    o->retry_at[t] = 0;
    sl->task = (int)t;
    sl->progress_at = now;
    sl->assigned_at = now;
    sl->task_seen = 0;
    sl->hb_step[0] = '\0';
    sl->hb_pct = -1;
    orch_slot_status(o, sl, ZERG_WORKER_BUSY);
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "attempt", a.attempt);
    zerg_json_set_num(data, "epoch", (double)a.epoch);
    zerg_json_set_num(data, "level", o->g->tasks[t].level);
    zerg_log_event(o->o.log, sl->id, ZERG_LOG_INFO, "task_claimed",
                   orch_tid(o, t), data, "Worker %d claimed task %s", sl->id,
                   orch_tid(o, t));
    return 0;
}

static void dispatch(struct zerg_orch *o, int64_t now, int64_t *wake)
{
    for (int i = 0; i < o->nslots; i++) {
        struct slot *sl = &o->slots[i];
        if (!sl->alive || !sl->ready || sl->task >= 0 || sl->killed)
            continue;
        ssize_t t = next_task(o, now, wake);
        if (t < 0)
            return;
        if (assign(o, sl, (size_t)t, now) < 0)
            return;
    }
}

static void level_log(struct zerg_orch *o, const char *event, int lvl)
{
    size_t done = 0, failed = 0, n = o->g->levels[lvl].n;
    for (size_t i = 0; i < n; i++) {
        enum zerg_task_status s =
            orch_ts(o, o->g->levels[lvl].tasks[i])->status;
        done += s == ZERG_TASK_COMPLETE;
        failed += s == ZERG_TASK_FAILED || s == ZERG_TASK_BLOCKED;
    }
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "level", lvl);
    zerg_json_set_num(data, "tasks", (double)n);
    zerg_json_set_num(data, "complete", (double)done);
    zerg_json_set_num(data, "failed", (double)failed);
    if (!strcmp(event, "level_start"))
        zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_INFO, event, NULL,
                       data, "Level %d started: %zu tasks", lvl, n);
    else
        zerg_log_event(o->o.log, ZERG_LOG_ORCH,
                       failed ? ZERG_LOG_WARN : ZERG_LOG_INFO, event, NULL,
                       data, "Level %d complete: %zu/%zu tasks done%s", lvl,
                       done, n, failed ? ", some failed or blocked" : "");
}

/* Moves current_level forward while the current one is complete, judged
 * from task states (never a counter) after a thorough reconciliation. */
/* O(1) amortized per tick: the level's cursor moves over terminal tasks
 * only, and any task that becomes unfinished again resets it.  While a
 * task under the cursor is unfinished the level cannot be done; when the
 * cursor reaches the end, zerg_state_level_done decides. */
static int level_maybe_done(struct zerg_orch *o, int lvl)
{
    const struct zerg_level *L = &o->g->levels[lvl];
    size_t *cur = &o->level_cursor[lvl];
    while (*cur < L->n &&
           zerg_task_status_terminal(orch_ts(o, L->tasks[*cur])->status))
        (*cur)++;
    return *cur == L->n;
}

static void advance_levels(struct zerg_orch *o, int64_t now)
{
    struct zerg_state *s = o->s;

    while (s->current_level <= o->g->nlevels) {
        int lvl = s->current_level;
        if (lvl >= 1) {
            if (!level_maybe_done(o, lvl) ||
                !zerg_state_level_done(s, o->g, lvl))
                return;
            zerg_json *data = zerg_json_obj();
            zerg_json_set_num(data, "level", lvl);
            zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_DEBUG,
                           "level_check", NULL, data,
                           "Level %d: all tasks terminal", lvl);
            if (o->cfg->resilience_enabled && orch_reconcile(o, 1, now) > 0)
                continue; /* a fix may have reopened this or a lower level */
            if (s->levels[lvl].status != ZERG_LEVEL_COMPLETE) {
                s->levels[lvl].status = ZERG_LEVEL_COMPLETE;
                s->levels[lvl].completed_at = orch_wall_now();
                level_log(o, "level_complete", lvl);
            }
        }
        s->current_level++;
        orch_mark_dirty(o);
        if (s->current_level > o->g->nlevels)
            return;
        struct zerg_level_state *ls = &s->levels[s->current_level];
        if (ls->status == ZERG_LEVEL_PENDING) {
            ls->status = ZERG_LEVEL_RUNNING;
            ls->started_at = orch_wall_now();
        }
        /* Every level transition is durable before it is announced. */
        orch_checkpoint(o, now, 1);
        level_log(o, "level_start", s->current_level);
    }
}

/* ------------------------------------------------------------------ */
/* Stop and finish.                                                    */

void zerg_orch_request_stop(struct zerg_orch *o, int force, int64_t now)
{
    if (o->stopping >= (force ? 2 : 1))
        return;
    o->stopping = force ? 2 : 1;
    o->stop_deadline = now + 5 * ZERG_NS_PER_S;
    zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_WARN, "rush_stop", NULL,
                   NULL, "Stop requested%s: stopping workers",
                   force ? " (forced)" : "");
    orch_stop_workers(o, force ? SIGKILL : SIGTERM);
    free(o->s->status);
    o->s->status = strdup("stopped");
    orch_mark_dirty(o);
}

static void finish(struct zerg_orch *o, int64_t now)
{
    size_t counts[7] = {0};
    char summary[1024];

    zerg_state_count(o->s, counts);
    int ok = counts[ZERG_TASK_COMPLETE] == o->g->ntasks && !o->failed_run;
    free(o->s->status);
    o->s->status = strdup(o->stopping ? "stopped" : ok ? "complete" : "failed");
    if (o->run_error[0])
        set_str(&o->s->error, o->run_error);
    orch_mark_dirty(o);
    orch_checkpoint(o, now, 1);
    o->finished = 1;
    zerg_orch_summary(o, summary, sizeof summary);
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "complete", (double)counts[ZERG_TASK_COMPLETE]);
    zerg_json_set_num(data, "failed", (double)counts[ZERG_TASK_FAILED]);
    zerg_json_set_num(data, "blocked", (double)counts[ZERG_TASK_BLOCKED]);
    zerg_json_set_num(data, "tasks", (double)o->g->ntasks);
    zerg_json_set_num(data, "elapsed", SEC(now - o->started_mono));
    zerg_json_set_num(data, "worker_crashes",
                      (double)o->s->metrics.worker_crashes);
    zerg_json_set_num(data, "task_reassignments",
                      (double)o->s->metrics.task_reassignments);
    zerg_log_event(o->o.log, ZERG_LOG_ORCH, ok ? ZERG_LOG_INFO : ZERG_LOG_ERROR,
                   ok ? "rush_complete" : "rush_failed", NULL, data,
                   "Rush %s in %.1fs: %s",
                   o->stopping ? "stopped"
                   : ok        ? "complete"
                               : "failed",
                   SEC(now - o->started_mono), summary);
}

/* ------------------------------------------------------------------ */
/* The tick.                                                           */

static int64_t tick_periodic(struct zerg_orch *o, int64_t now, int64_t wake)
{
    if (now >= o->next_lease) {
        zerg_proto_write_lease(o->state_dir, o->o.feature, (int)getpid(),
                               o->s->run_id, ++o->lease_seq, NULL);
        o->next_lease = now + ZERG_LEASE_INTERVAL_NS;
    }
    if (now >= o->next_reload) {
        zerg_policy_reload(o->o.policy);
        o->next_reload = now + 2 * ZERG_NS_PER_S;
    }
    if (o->cfg->resilience_enabled && now >= o->next_reconcile) {
        orch_reconcile(o, 0, now);
        o->next_reconcile = now + o->cfg->reconcile_interval_ns;
    }
    if (now >= o->next_hb_scan) {
        /* A safety net under inotify (queue overflow, missed events). */
        for (int i = 0; i < o->nslots; i++)
            on_heartbeat(o, i, now);
        o->next_hb_scan = now + 2 * o->cfg->heartbeat_interval_ns;
    }
    int64_t next[] = {o->next_lease, o->next_reload, o->next_hb_scan,
                      o->cfg->resilience_enabled ? o->next_reconcile
                                                 : INT64_MAX};
    for (size_t i = 0; i < sizeof next / sizeof *next; i++)
        if (next[i] < wake)
            wake = next[i];
    return wake;
}

int64_t zerg_orch_tick(struct zerg_orch *o, int64_t now)
{
    int64_t wake = now + 60 * ZERG_NS_PER_S;

    if (o->finished)
        return wake;
    if (o->stopping || o->finishing) {
        int any = 0;
        for (int i = 0; i < o->nslots; i++)
            any |= o->slots[i].alive;
        if (!any) {
            finish(o, now);
            return wake;
        }
        if (now >= o->stop_deadline) {
            for (int i = 0; i < o->nslots; i++)
                if (o->slots[i].alive)
                    orch_kill_worker(o, &o->slots[i], KILL_STOP, SIGKILL);
            o->stop_deadline = now + ZERG_NS_PER_S;
        }
        orch_checkpoint(o, now, 0);
        return o->stop_deadline < wake ? o->stop_deadline : wake;
    }
    wake = tick_periodic(o, now, wake);
    advance_levels(o, now);
    /* Past the last level every task is terminal (each level was found
     * done on the way), so this needs no scan of the tasks. */
    if (o->s->current_level > o->g->nlevels) {
        o->finishing = 1;
        o->stop_deadline = now + 3 * ZERG_NS_PER_S;
        orch_stop_workers(o, 0);
        orch_checkpoint(o, now, 1);
        return now;
    }
    wake = orch_tick_workers(o, now, wake);
    if (orch_live_slots(o) == 0) {
        snprintf(o->run_error, sizeof o->run_error,
                 "no worker is left to run the remaining tasks (all %d "
                 "retired: spawn retries or respawn cap exhausted)",
                 o->nslots);
        o->failed_run = 1;
        o->finishing = 1;
        return now;
    }
    dispatch(o, now, &wake);
    orch_checkpoint(o, now, 0);
    if (o->dirty) {
        int64_t w = o->last_save + checkpoint_gap(o);
        if (w < wake)
            wake = w;
    }
    return wake < now ? now : wake;
}

/* ------------------------------------------------------------------ */
/* Life cycle.                                                         */

int zerg_orch_done(const struct zerg_orch *o)
{
    return o->finished;
}

int zerg_orch_exit_code(const struct zerg_orch *o)
{
    size_t counts[7] = {0};
    zerg_state_count(o->s, counts);
    return counts[ZERG_TASK_COMPLETE] == o->g->ntasks && !o->failed_run &&
                   !o->stopping
               ? ZERG_EXIT_OK
               : ZERG_EXIT_FAIL;
}

size_t zerg_orch_pids(const struct zerg_orch *o, pid_t *out, size_t max)
{
    size_t n = 0;
    for (int i = 0; i < o->nslots && n < max; i++)
        if (o->slots[i].alive)
            out[n++] = o->slots[i].proc.pid;
    return n;
}

static const char *plural(int64_t n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

void zerg_orch_summary(const struct zerg_orch *o, char *buf, size_t size)
{
    size_t c[7] = {0};
    const struct zerg_metrics *m = &o->s->metrics;
    zerg_state_count(o->s, c);
    int n = snprintf(
        buf, size,
        "%zu/%zu tasks complete, %zu failed, %zu blocked; recovery: %" PRId64
        " worker %s, %" PRId64 " %s, %" PRId64 " %s, %" PRId64 " spawn %s, "
        "%" PRId64 " stale %s.",
        c[ZERG_TASK_COMPLETE], o->g->ntasks, c[ZERG_TASK_FAILED],
        c[ZERG_TASK_BLOCKED], m->worker_crashes,
        plural(m->worker_crashes, "crash", "crashes"), m->task_reassignments,
        plural(m->task_reassignments, "reassignment", "reassignments"),
        m->worker_respawns, plural(m->worker_respawns, "respawn", "respawns"),
        m->spawn_retries, plural(m->spawn_retries, "retry", "retries"),
        m->stale_detections,
        plural(m->stale_detections, "detection", "detections"));
    if (n < 0 || (size_t)n >= size)
        return;
    if (o->stopping)
        snprintf(buf + n, size - (size_t)n,
                 " Stopped: continue with `zerg rush --resume`.");
    else if (o->run_error[0])
        snprintf(buf + n, size - (size_t)n,
                 " %s. Next: check `zerg logs --event worker_spawn_failed` "
                 "and .zerg/logs/worker-*.log, fix the cause, then `zerg "
                 "rush --resume`.",
                 o->run_error);
    else if (c[ZERG_TASK_COMPLETE] != o->g->ntasks)
        snprintf(buf + n, size - (size_t)n,
                 " Next: `zerg status` lists the failed tasks, `zerg logs "
                 "--task ID` and .zerg/logs/tasks/ID/ show why; after a fix "
                 "`zerg retry --all-failed && zerg rush --resume`.");
}

static void resume_results(struct zerg_orch *o, int64_t now);

struct zerg_orch *zerg_orch_new(const struct zerg_orch_opts *opts, int64_t now,
                                struct zerg_err *err)
{
    struct zerg_orch *o = calloc(1, sizeof *o);
    if (!o)
        goto oom;
    o->o = *opts;
    if (!o->o.checkpoint_ns)
        o->o.checkpoint_ns = 50 * ZERG_NS_PER_MS;
    o->cfg = opts->cfg;
    o->g = opts->graph;
    o->s = opts->state;
    if (zerg_fsio_path(o->state_dir, sizeof o->state_dir, "%s/.zerg/state",
                       opts->project) ||
        zerg_fsio_path(o->state_path, sizeof o->state_path, "%s/%s.json",
                       o->state_dir, opts->feature)) {
        zerg_err_set(err, -ENAMETOOLONG, "project path too long");
        goto fail;
    }
    o->nslots = opts->workers;
    o->slots = calloc((size_t)o->nslots, sizeof *o->slots);
    o->retry_at = calloc(o->g->ntasks + 1, sizeof *o->retry_at);
    o->applied_attempt =
        calloc(o->g->ntasks + 1, sizeof *o->applied_attempt);
    o->level_cursor =
        calloc((size_t)o->g->nlevels + 2, sizeof *o->level_cursor);
    if (!o->slots || !o->retry_at || !o->applied_attempt || !o->level_cursor)
        goto oom;
    if ((size_t)o->nslots != o->s->nworkers) {
        void *w =
            realloc(o->s->workers, (size_t)o->nslots * sizeof *o->s->workers);
        if (!w)
            goto oom;
        o->s->workers = w;
        for (size_t i = o->s->nworkers; i < (size_t)o->nslots; i++)
            memset(&o->s->workers[i], 0, sizeof *o->s->workers);
        o->s->nworkers = (size_t)o->nslots;
    }
    for (int i = 0; i < o->nslots; i++) {
        o->slots[i] = (struct slot){.id = i, .want = 1, .task = -1};
        struct zerg_worker_state *w = &o->s->workers[i];
        w->id = i;
        w->status = ZERG_WORKER_BACKOFF;
        w->spawn_attempt = 0;
        w->task = -1;
        w->pid = 0;
    }
    o->started_mono = now;
    o->next_reconcile = now + o->cfg->reconcile_interval_ns;
    free(o->s->status);
    o->s->status = strdup("running");
    orch_prepare_dir(o);
    if (opts->resume)
        resume_results(o, now);
    orch_mark_dirty(o);
    return o;
oom:
    zerg_err_set(err, -ENOMEM, "out of memory");
fail:
    zerg_orch_free(o);
    return NULL;
}

/* After a restart: apply the results the last orchestrator did not (they
 * are the journal), then requeue what was running on workers that are
 * gone -- uncharged -- through a thorough reconciliation. */
static void resume_results(struct zerg_orch *o, int64_t now)
{
    o->replaying = 1;
    int n = orch_scan_results(o, now);
    o->replaying = 0;
    if (n > 0)
        zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_INFO,
                       "results_recovered", NULL, NULL,
                       "Applied %d result%s finished while the orchestrator "
                       "was down",
                       n, n == 1 ? "" : "s");
    orch_reconcile(o, 1, now);
}

void zerg_orch_free(struct zerg_orch *o)
{
    if (!o)
        return;
    free(o->slots);
    free(o->retry_at);
    free(o->applied_attempt);
    free(o->level_cursor);
    for (size_t i = 0; i < o->nunlink; i++)
        free(o->pending_unlink[i]);
    free(o->pending_unlink);
    free(o);
}
