/* orchestrator.c - what happens when: the rush as a state machine.
 *
 * Inputs are events (a worker child exited: orch_slot.c; a heartbeat,
 * result or retry request arrived: orch_intake.c; a stop was asked) and
 * ticks with the current monotonic time.  This file holds what is left
 * once those are handled: the tick itself, dispatch of the current
 * level's tasks (under rush.schedule dag: of every ready task, orch_dag.c)
 * to idle slots, level transitions (judged from task
 * states after a thorough reconciliation, FR-4) and the checkpoint; how
 * the rush stops and ends is the run table (orch_run.c).  Only
 * orch_checkpoint writes the state document. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "orch_internal.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/offload.h"
#include "zerg/review.h"

/* ------------------------------------------------------------------ */
/* Checkpoint: coalesced state writes.                                 */

static void sync_workers(struct zerg_orch *o)
{
    for (int i = 0; i < o->nslots; i++) {
        struct zerg_worker_state *w = &o->s->workers[i];
        struct slot *sl = &o->slots[i];
        w->id = i;
        w->pid = slot_alive(sl) ? sl->proc.pid : 0;
        snprintf(w->container_id, sizeof w->container_id, "%s",
                 slot_alive(sl) ? sl->proc.name : "");
        w->epoch = sl->proc.epoch;
        w->task = sl->task;
    }
}

/* Keep checkpoints under ~5 % of the loop's time however large the state
 * grows: the next one waits at least 20x what the last one cost.  Waiting
 * longer loses nothing: the results it will record stay on disk, the
 * journal, until it does. */
static int64_t checkpoint_gap(const struct zerg_orch *o)
{
    int64_t gap = 20 * o->save_cost_ns;
    return gap > o->o.checkpoint_ns ? gap : o->o.checkpoint_ns;
}

/* The checkpoint written here, on the loop.  0 or negative. */
static int save_here(struct zerg_orch *o)
{
    struct zerg_err err = {0};
    uint64_t gen = o->dirty_gen;
    int64_t t0 = zerg_clock_mono(o->o.clock);
    int rc = zerg_state_save(o->s, o->g, o->state_path, &err);
    o->save_cost_ns = zerg_clock_mono(o->o.clock) - t0;
    if (rc < 0) {
        /* The old file is intact; keep the results on disk (they are the
         * journal) and try again at the next checkpoint. */
        zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_ERROR,
                       "state_write_failed", NULL, NULL,
                       "Cannot write state: %s (will retry)", err.msg);
        return rc;
    }
    o->dirty = 0;
    orch_flush_unlinks(o, o->nunlink);
    orch_save_announced(o, gen);
    return 0;
}

int orch_checkpoint(struct zerg_orch *o, int64_t now, int force)
{
    /* A child still writing the last one: the next waits for it, except
     * the last of the run, which waits here. */
    orch_save_reap(o, force == ORCH_SAVE_WAIT);
    if (o->save_pid) {
        if (force)
            o->save_again = 1;
        orch_sync_results(o, now, 0);
        return 0;
    }
    int save = force || o->save_again ||
               (o->dirty && now - o->last_save_mono_ns >= checkpoint_gap(o));
    int child = force != ORCH_SAVE_WAIT && o->o.checkpoint_fork;

    /* The journal before the checkpoint (state.durability: batch): the
     * results applied so far are made durable, in one sync per batch,
     * before a state write records them as done and before they are
     * deleted (by the child, first thing, when there is one: a syncfs
     * waits for all the filesystem's dirty data, tens of ms on a busy
     * disk).  Between checkpoints a batch is synced once its window has
     * passed, so a power cut loses at most the last one. */
    orch_sync_results(o, now, save && !child);
    if (!save)
        return 0;
    sync_workers(o);
    o->s->updated_at_wall_ns = orch_wall_ns(o);
    o->s->metrics.policy_errors = zerg_policy_error_count(o->o.policy);
    o->save_again = 0;
    if (child && orch_save_start(o, now) == 0)
        return 0; /* orch_save.c */
    if (child)
        orch_sync_results(o, now, 1); /* no child: as without one */
    int rc = save_here(o);
    o->last_save_mono_ns = now;
    return rc;
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

/* A task writing a path that a running task writes waits: one counter
 * per write group (orch_tasks.c keeps them), so this costs the number of
 * groups the task is in, however many tasks share them. */
static int conflict_running(const struct zerg_orch *o, size_t t)
{
    const struct zerg_task *tk = &o->g->tasks[t];
    for (size_t q = 0; q < tk->nwgroups; q++)
        if (o->wgroup_running[tk->wgroups[q]] > 0)
            return 1;
    return 0;
}

/* rush.schedule dag: the preferred ready task that may run now, or -1.
 * Ready tasks in retry backoff or sharing a file with a running task (of
 * any level: orch_dag.c keeps its own groups across levels) are held
 * until dispatch ends, so a pass costs what it pops. */
static ssize_t next_ready(struct zerg_orch *o, int64_t now, int64_t *wake)
{
    ssize_t t;
    while ((t = orch_dag_pop(o)) >= 0) {
        if (o->retry_at_mono_ns[t] > now) {
            if (o->retry_at_mono_ns[t] < *wake)
                *wake = o->retry_at_mono_ns[t];
            orch_dag_hold(o, (size_t)t);
        } else if (orch_dag_conflict(o, (size_t)t)) {
            orch_dag_hold(o, (size_t)t);
        } else {
            return t;
        }
    }
    return -1;
}

/* The next task of the current level that may run now, or -1.  *wake is
 * lowered to the earliest retry time still in the future. */
static ssize_t next_task(struct zerg_orch *o, int64_t now, int64_t *wake)
{
    if (o->dag)
        return next_ready(o, now, wake);
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
        if (!zerg_task_move_legal(orch_ts(o, t)->status, ZERG_TASK_EV_CLAIM))
            continue;
        if (o->retry_at_mono_ns[t] > now) {
            if (o->retry_at_mono_ns[t] < *wake)
                *wake = o->retry_at_mono_ns[t];
            continue;
        }
        if (!deps_complete(o, t) || conflict_running(o, t))
            continue;
        return (ssize_t)t;
    }
    return -1;
}

/* A level's first claim under dag (any level whose tasks are ready, not
 * only the current one): it is running from now on, durably, then said. */
static void level_claimed(struct zerg_orch *o, int lvl, int64_t now)
{
    struct zerg_level_state *ls = &o->s->levels[lvl];
    if (!o->dag || !zerg_level_apply(ls, ZERG_LEVEL_EV_START, orch_wall_ns(o)))
        return;
    orch_mark_dirty(o);
    orch_checkpoint(o, now, ORCH_SAVE_NOW);
    orch_save_announce(o, lvl);
}

static int assign(struct zerg_orch *o, struct slot *sl, size_t t, int64_t now)
{
    struct zerg_task_state *st = orch_ts(o, t);
    struct zerg_err err = {0};
    struct zerg_assign a = {.epoch = sl->proc.epoch,
                            .attempt = st->attempt + 1};

    const struct zerg_task *tk = &o->g->tasks[t];
    snprintf(a.task, sizeof a.task, "%s", orch_tid(o, t));
    snprintf(a.run_id, sizeof a.run_id, "%s", o->s->run_id);
    a.task_off = tk->src_off; /* the worker reads this task only */
    a.task_len = tk->src_len;
    a.task_hash = tk->src_hash;
    orch_ws_assign_base(o, &a);
    orch_retry_context(o, t, &a);
    a.resume = o->resume_next[t];
    if (zerg_proto_write_assign(o->run_dir, sl->id, &a, &err) < 0) {
        zerg_log_event(o->o.log, sl->id, ZERG_LOG_ERROR, "assign_failed",
                       orch_tid(o, t), NULL, "Cannot assign %s: %s",
                       orch_tid(o, t), err.msg);
        return -1;
    }
    level_claimed(o, o->g->tasks[t].level, now);
    struct zerg_task_move m = {.worker_id = sl->id,
                               .epoch = a.epoch,
                               .attempt = a.attempt,
                               .now_wall_ns = orch_wall_ns(o)};
    if (orch_task_move(o, t, ZERG_TASK_EV_CLAIM, &m) != 0)
        return -1;
    o->retry_at_mono_ns[t] = 0;
    o->resume_next[t] = 0;
    struct slot_ev_arg ev = {.task = t};
    orch_slot_event(o, sl, SLOT_EV_ASSIGN, &ev, now);
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "attempt", a.attempt);
    zerg_json_set_num(data, "epoch", (double)a.epoch);
    zerg_json_set_num(data, "level", o->g->tasks[t].level);
    if (a.resume)
        zerg_json_set_bool(data, "resume", 1);
    zerg_log_event(o->o.log, sl->id, ZERG_LOG_INFO, "task_claimed",
                   orch_tid(o, t), data, "Worker %d claimed task %s", sl->id,
                   orch_tid(o, t));
    return 0;
}

static void dispatch(struct zerg_orch *o, int64_t now, int64_t *wake)
{
    if (o->gate_failed) /* dag: running tasks finish, nothing new starts */
        return;
    for (int i = 0; i < o->nslots; i++) {
        struct slot *sl = &o->slots[i];
        if (sl->state != SLOT_READY)
            continue;
        ssize_t t = next_task(o, now, wake);
        if (t < 0)
            break;
        if (assign(o, sl, (size_t)t, now) < 0) {
            orch_dag_offer(o, (size_t)t); /* still ready: next tick */
            break;
        }
    }
    orch_dag_settle(o);
}

void orch_level_log(struct zerg_orch *o, const char *event, int lvl)
{
    const struct zerg_level *L = &o->g->levels[lvl];
    size_t c[ZERG_TASK_NSTATUS];
    zerg_task_count(o->s->tasks, L->tasks, L->n, c);
    size_t done = c[ZERG_TASK_COMPLETE], n = L->n;
    size_t failed = c[ZERG_TASK_FAILED] + c[ZERG_TASK_BLOCKED];
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "level", lvl);
    zerg_json_set_num(data, "tasks", (double)n);
    zerg_json_set_num(data, "complete", (double)done);
    zerg_json_set_num(data, "failed", (double)failed);
    if (!strcmp(event, "level_start"))
        zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_INFO, event, NULL,
                       data, "Level %d started: %zu task%s", lvl, n,
                       n == 1 ? "" : "s");
    else
        zerg_log_event(o->o.log, ZERG_LOG_ORCH,
                       failed ? ZERG_LOG_WARN : ZERG_LOG_INFO, event, NULL,
                       data, "Level %d complete: %zu/%zu task%s done%s", lvl,
                       done, n, n == 1 ? "" : "s",
                       failed ? ", some failed or blocked" : "");
}

/* O(1) amortized per tick: the level's cursor moves over terminal tasks
 * only, and any task that becomes unfinished again resets it
 * (orch_level_reopened).  While a task under the cursor is unfinished the
 * level cannot be done; when the cursor reaches the end,
 * zerg_state_level_done decides. */
static int level_maybe_done(struct zerg_orch *o, int lvl)
{
    const struct zerg_level *L = &o->g->levels[lvl];
    size_t *cur = &o->level_cursor[lvl];
    while (*cur < L->n &&
           zerg_task_status_terminal(orch_ts(o, L->tasks[*cur])->status))
        (*cur)++;
    return *cur == L->n;
}

/* Level lvl is done: 1 when it was marked complete, 0 when the thorough
 * reconciliation reopened something (look again). */
static int close_level(struct zerg_orch *o, int lvl, int64_t now)
{
    struct zerg_state *s = o->s;
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "level", lvl);
    zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_DEBUG, "level_check", NULL,
                   data, "Level %d: all tasks terminal", lvl);
    if (o->cfg->resilience_enabled && orch_reconcile(o, 1, now) > 0)
        return 0; /* a fix may have reopened this or a lower level */
    if (zerg_level_apply(&s->levels[lvl], ZERG_LEVEL_EV_COMPLETE,
                         orch_wall_ns(o)))
        orch_level_log(o, "level_complete", lvl);
    return 1;
}

/* Under dag, claims go on while a closed level's gates run: a level
 * already marked complete whose cursor still says done is not closed
 * again (a thorough reconciliation and a scan of the state on every tick
 * of a five-minute gate).  Under levels nothing else runs meanwhile. */
static int level_closed(const struct zerg_orch *o, int lvl)
{
    return o->dag && o->s->levels[lvl].status == ZERG_LEVEL_COMPLETE;
}

/* Moves current_level forward while the current one is complete, judged
 * from task states (never a counter) after a thorough reconciliation.
 * Levels close in order under either schedule: under dag a level whose
 * tasks all ended early waits here until every lower level closed and
 * passed its gates, so level_complete and gates stay in level order and
 * current_level is the lowest unfinished level. */
static void advance_levels(struct zerg_orch *o, int64_t now, int64_t *wake)
{
    struct zerg_state *s = o->s;

    while (s->current_level <= o->g->nlevels) {
        int lvl = s->current_level;
        if (lvl >= 1) {
            if (!level_maybe_done(o, lvl))
                return;
            if (level_closed(o, lvl)) {
                /* closed on an earlier tick: only its gates are left */
            } else if (!zerg_state_level_done(s, o->g, lvl)) {
                /* The cursor passed a task that is unfinished again
                 * without a move: look at the whole level next time. */
                o->level_cursor[lvl] = 0;
                return;
            } else if (!close_level(o, lvl, now)) {
                continue;
            }
            if (!orch_gates_passed(o, lvl, now, wake))
                return;
        }
        s->current_level++;
        orch_mark_dirty(o);
        if (s->current_level > o->g->nlevels)
            return;
        struct zerg_level_state *ls = &s->levels[s->current_level];
        int fresh = zerg_level_apply(ls, ZERG_LEVEL_EV_START, orch_wall_ns(o));
        /* Every level transition is durable before it is announced; under
         * dag a level already running was announced at its first claim. */
        orch_checkpoint(o, now, ORCH_SAVE_NOW);
        if (fresh || !o->dag)
            orch_save_announce(o, s->current_level);
    }
}

int orch_running_tasks(const struct zerg_orch *o)
{
    for (int i = 0; i < o->nslots; i++)
        if (o->slots[i].task >= 0)
            return 1;
    return 0;
}

/* ------------------------------------------------------------------ */
/* The tick.                                                           */

static void lower(int64_t *wake, int64_t at)
{
    if (at < *wake)
        *wake = at;
}

static int64_t tick_periodic(struct zerg_orch *o, int64_t now, int64_t wake)
{
    if (now >= o->next_lease_mono_ns) {
        zerg_proto_write_lease(o->run_dir, o->o.feature, (int)getpid(),
                               o->s->run_id, ++o->lease_seq, NULL);
        o->next_lease_mono_ns = now + ZERG_LEASE_INTERVAL_NS;
    }
    if (now >= o->next_reload_mono_ns) {
        zerg_policy_reload(o->o.policy);
        o->next_reload_mono_ns = now + 2 * ZERG_NS_PER_S;
    }
    if (o->cfg->resilience_enabled && now >= o->next_reconcile_mono_ns) {
        orch_reconcile(o, 0, now);
        o->next_reconcile_mono_ns = now + o->cfg->reconcile_interval_ns;
    }
    if (now >= o->next_hb_scan_mono_ns) {
        /* A safety net under inotify (queue overflow, missed events). */
        for (int i = 0; i < o->nslots; i++)
            orch_on_heartbeat(o, i, now);
        o->next_hb_scan_mono_ns = now + 2 * o->cfg->heartbeat_interval_ns;
    }
    lower(&wake, o->next_lease_mono_ns);
    lower(&wake, o->next_reload_mono_ns);
    lower(&wake, o->next_hb_scan_mono_ns);
    if (o->cfg->resilience_enabled)
        lower(&wake, o->next_reconcile_mono_ns);
    return wake;
}

int64_t zerg_orch_tick(struct zerg_orch *o, int64_t now)
{
    int64_t wake = now + 60 * ZERG_NS_PER_S;

    if (orch_run_ending(o))
        return orch_run_tick_ending(o, now, wake);
    wake = tick_periodic(o, now, wake);
    advance_levels(o, now, &wake);
    /* Past the last level every task is terminal (each level was found
     * done on the way), so this needs no scan of the tasks. */
    if (o->s->current_level > o->g->nlevels) {
        orch_run_event(o, RUN_EV_ALL_ENDED, 0, now);
        return now;
    }
    wake = orch_tick_workers(o, now, wake);
    if (orch_live_slots(o) == 0) {
        orch_run_fail(o,
                      "no worker is left to run the remaining tasks (all %d "
                      "retired: spawn retries or respawn cap exhausted)",
                      o->nslots);
        orch_run_event(o, RUN_EV_ALL_ENDED, 0, now);
        return now;
    }
    int held = orch_halt_tick(o, now, &wake); /* --halt, timeout_seconds */
    held |= orch_pool_closed(o, now, &wake);  /* rate limit, spend cap */
    if (!held && o->run_state == RUN_ACTIVE)
        dispatch(o, now, &wake);
    wake = orch_review_tick(o, now, wake); /* rush.review's decisions */
    if (!orch_running_tasks(o))
        orch_run_event(o, RUN_EV_IDLE, 0, now);
    orch_checkpoint(o, now, ORCH_SAVE_DUE);
    if (o->dirty)
        lower(&wake, o->last_save_mono_ns + checkpoint_gap(o));
    if (o->save_pid) /* its SIGCHLD wakes the loop; this in case not */
        lower(&wake, now + 50 * ZERG_NS_PER_MS);
    return wake < now ? now : wake;
}

/* ------------------------------------------------------------------ */
/* Life cycle.                                                         */

size_t zerg_orch_pids(const struct zerg_orch *o, pid_t *out, size_t max)
{
    size_t n = 0;
    for (int i = 0; i < o->nslots && n < max; i++)
        if (slot_alive(&o->slots[i]))
            out[n++] = o->slots[i].proc.pid;
    return n;
}

/* The state's worker table sized to the pool; every slot starts in
 * BACKOFF with no delay. */
static int init_slots(struct zerg_orch *o)
{
    if ((size_t)o->nslots != o->s->nworkers) {
        void *w =
            realloc(o->s->workers, (size_t)o->nslots * sizeof *o->s->workers);
        if (!w)
            return -ENOMEM;
        o->s->workers = w;
        for (size_t i = o->s->nworkers; i < (size_t)o->nslots; i++)
            memset(&o->s->workers[i], 0, sizeof *o->s->workers);
        o->s->nworkers = (size_t)o->nslots;
    }
    for (int i = 0; i < o->nslots; i++) {
        o->slots[i] = (struct slot){.id = i, .task = -1};
        struct zerg_worker_state *w = &o->s->workers[i];
        w->id = i;
        w->status = ZERG_WORKER_BACKOFF;
        w->spawn_attempt = 0;
        w->task = -1;
        w->pid = 0;
    }
    return 0;
}

static int alloc_tables(struct zerg_orch *o)
{
    o->slots = calloc((size_t)o->nslots, sizeof *o->slots);
    o->retry_at_mono_ns = calloc(o->g->ntasks + 1, sizeof *o->retry_at_mono_ns);
    o->applied_attempt = calloc(o->g->ntasks + 1, sizeof *o->applied_attempt);
    o->level_cursor =
        calloc((size_t)o->g->nlevels + 2, sizeof *o->level_cursor);
    o->wgroup_running = calloc(o->g->nwgroups + 1, sizeof *o->wgroup_running);
    o->resume_next = calloc(o->g->ntasks + 1, sizeof *o->resume_next);
    if (!o->slots || !o->retry_at_mono_ns || !o->applied_attempt ||
        !o->level_cursor || !o->wgroup_running || !o->resume_next)
        return -ENOMEM;
    for (size_t t = 0; t < o->g->ntasks; t++)
        if (orch_task_running(orch_ts(o, t)->status))
            orch_wgroups_add(o, t, 1);
    return init_slots(o);
}

struct zerg_orch *zerg_orch_new(const struct zerg_orch_opts *opts, int64_t now,
                                struct zerg_err *err)
{
    struct zerg_orch *o = calloc(1, sizeof *o);
    if (!o)
        goto oom;
    if (!opts->clock) {
        zerg_err_set(err, -EINVAL, "the orchestrator needs a clock");
        goto fail;
    }
    o->o = *opts;
    if (!o->o.checkpoint_ns)
        o->o.checkpoint_ns = 50 * ZERG_NS_PER_MS;
    o->cfg = opts->cfg;
    o->g = opts->graph;
    o->s = opts->state;
    if (zerg_fsio_path(o->state_dir, sizeof o->state_dir, "%s/.zerg/state",
                       opts->project) ||
        zerg_fsio_path(o->state_path, sizeof o->state_path, "%s/%s.json",
                       o->state_dir, opts->feature) ||
        zerg_proto_run_dir(o->run_dir, sizeof o->run_dir, o->state_dir,
                           opts->feature) ||
        zerg_review_dir(o->review_dir, sizeof o->review_dir, opts->project,
                        opts->feature)) {
        zerg_err_set(err, -ENAMETOOLONG, "project path too long");
        goto fail;
    }
    o->nslots = opts->workers;
    if (alloc_tables(o) < 0)
        goto oom;
    orch_review_count(o); /* the moves keep it from here on */
    o->started_mono_ns = now;
    o->spent_usd = -1;
    o->next_reconcile_mono_ns = now + o->cfg->reconcile_interval_ns;
    orch_run_status(o, "running");
    if (orch_prepare_dir(o, err) < 0 || orch_ws_refresh_tip(o, err) < 0)
        goto fail;
    if (opts->resume)
        orch_resume_results(o, now);
    /* After the replay: the ready set is counted from the states as they
     * are now, so a resumed rush needs nothing saved about it. */
    if (orch_dag_new(o) < 0)
        goto oom;
    if (opts->offload_io)
        o->offload = zerg_offload_new(); /* NULL: the loop does it */
    orch_mark_dirty(o);
    return o;
oom:
    zerg_err_set(err, -ENOMEM, "out of memory");
fail:
    zerg_orch_free(o);
    return NULL;
}

void zerg_orch_free(struct zerg_orch *o)
{
    if (!o)
        return;
    orch_save_close(o);
    free(o->slots);
    free(o->retry_at_mono_ns);
    free(o->resume_next);
    free(o->applied_attempt);
    free(o->level_cursor);
    free(o->wgroup_running);
    orch_dag_free(o);
    zerg_offload_free(o->offload);
    for (size_t i = 0; i < o->nunlink; i++)
        free(o->pending_unlink[i]);
    free(o->pending_unlink);
    free(o);
}
