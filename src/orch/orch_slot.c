/* orch_slot.c - what happens to a worker: the slot life cycle as a table.
 *
 * Every (state, event) pair has an entry in slot_table below, and a no-op
 * is written down: `nop` where the event is expected and means nothing in
 * that state (a heartbeat from a worker being killed), `bad` where it
 * cannot happen unless zerg itself is wrong (logged, nothing changes).
 * The persisted worker status is a function of the state (status_of).
 *
 * A worker asked to go waits for its exit in a state that says what the
 * exit will mean, so each CHILD_EXIT cell has one outcome:
 *   STOPPING         a stop: its task requeued, uncharged
 *   KILLING_UNREADY  a failed spawn
 *   KILLING_STALE    a crash
 *   KILLING_TIMEOUT  its task charged, the worker replaced uncounted
 *
 * The decisions stay in the policies; the actions apply them:
 *   spawn failed (launcher error, exit before ready) -> backoff.delay, or
 *                                                       retired (FR-1)
 *   heartbeat not changing  -> stale.worker: killed, a crash (FR-3)
 *   task without progress   -> stale.task: killed, charged (FR-2)
 *   exit after ready        -> retry.decide uncharged (FR-5), then
 *                              respawn.decide (FR-6) */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "orch_internal.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/text.h"
#include "zerg/worker.h"
#include "zerg/workspace.h"

typedef void slot_fn(struct zerg_orch *o, struct slot *sl,
                     const struct slot_ev_arg *a, int64_t now);

struct slot_action {
    const char *name;
    slot_fn *fn;
    const char *to; /* where it leads, for the docs */
};

static const char *const state_names[SLOT_NSTATES] = {
    "BACKOFF",  "STARTING",        "READY",         "BUSY",
    "STOPPING", "KILLING_UNREADY", "KILLING_STALE", "KILLING_TIMEOUT",
    "STOPPED",  "RETIRED",         "CRASHED",
};
static const char *const event_names[SLOT_NEVENTS] = {
    "SPAWN_DUE", "SPAWN_ERR",  "FIRST_HB", "READY_TIMEOUT",
    "ASSIGN",    "TASK_DONE",  "HB_STALE", "TASK_STALE",
    "STOP",      "CHILD_EXIT", "REVIVE",
};
static const enum zerg_worker_status status_of[SLOT_NSTATES] = {
    ZERG_WORKER_BACKOFF,  ZERG_WORKER_STARTING, ZERG_WORKER_READY,
    ZERG_WORKER_BUSY,     ZERG_WORKER_STOPPING, ZERG_WORKER_STOPPING,
    ZERG_WORKER_STOPPING, ZERG_WORKER_STOPPING, ZERG_WORKER_STOPPED,
    ZERG_WORKER_RETIRED,  ZERG_WORKER_CRASHED,
};
/* worker_exit's killed_by_orchestrator: why it was asked to go. */
static const char *const kill_names[SLOT_NSTATES] = {
    [SLOT_STOPPING] = "stop",
    [SLOT_KILLING_UNREADY] = "ready_timeout",
    [SLOT_KILLING_STALE] = "heartbeat_stale",
    [SLOT_KILLING_TIMEOUT] = "task_timeout",
};

const char *orch_slot_state_name(enum slot_state s)
{
    return (unsigned)s < SLOT_NSTATES ? state_names[s] : "?";
}

static void enter(struct zerg_orch *o, struct slot *sl, enum slot_state s)
{
    sl->state = s;
    o->s->workers[sl->id].status = status_of[s];
    orch_mark_dirty(o);
}

/* ---- helpers the actions share --------------------------------------- */

static int work_left(const struct zerg_orch *o)
{
    for (size_t i = 0; i < o->g->ntasks; i++)
        if (!zerg_task_status_terminal(o->s->tasks[i].status))
            return 1;
    return 0;
}

/* A slot left the pool for good: say how many workers the rush goes on
 * with (the rush fails in the tick when that is none). */
static void pool_reduced(struct zerg_orch *o, const struct slot *gone)
{
    int left = orch_live_slots(o);
    if (left == 0)
        return;
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "workers", left);
    zerg_json_set_num(data, "asked", o->nslots);
    zerg_log_event(o->o.log, gone->id, ZERG_LOG_WARN, "worker_pool_reduced",
                   NULL, data, "Continuing with %d of %d worker%s", left,
                   o->nslots, o->nslots == 1 ? "" : "s");
}

/* Into one of the going states (which says what the exit will mean),
 * then signal. */
static void kill_slot(struct zerg_orch *o, struct slot *sl, enum slot_state to,
                      int sig)
{
    enter(o, sl, to);
    if (!sig)
        return;
    /* Where the worker's pids are ours, the task's own process group
     * would outlive a killed worker unless we take it down.  A SIGTERM
     * leaves the task to its worker, which gives it SIGTERM and the stop
     * grace (one sender: a task's handler sees one TERM); the tick's
     * deadline brings the SIGKILL if anything is left then. */
    if (sig == SIGKILL && sl->hb_task_pgid > 0 &&
        o->o.launcher->ops->caps.local_pids)
        kill(-sl->hb_task_pgid, SIGKILL);
    o->o.launcher->ops->cancel(o->o.launcher, &sl->proc,
                               sig == SIGKILL ? ZERG_CANCEL_NOW
                                              : ZERG_CANCEL_GRACEFUL);
}

static void describe_exit(const struct zerg_exit_info *info, char *buf,
                          size_t n)
{
    if (info->detail[0])
        snprintf(buf, n, "%s", info->detail);
    else if (info->signal)
        snprintf(buf, n, "killed by signal %d", info->signal);
    else
        snprintf(buf, n, "exit code %d", info->exit_code);
    if (info->oom_killed && strlen(buf) + 20 < n)
        strcat(buf, " (out of memory)");
}

/* "what: last line of .zerg/logs/{feature}/worker-N.log", so the reason a
 * worker
 * could not start is in the event, not only in a file. */
static void worker_log_tail(const struct zerg_orch *o, int slot,
                            const char *what, char *buf, size_t n)
{
    char path[PATH_MAX], tail[4096], line[320];

    snprintf(buf, n, "%s", what);
    if (zerg_fsio_path(path, sizeof path, "%s/.zerg/logs/%s/worker-%d.log",
                       o->o.project, o->o.feature, slot))
        return;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
    if (fd < 0)
        return;
    /* Only the end matters: the log keeps every incarnation's output. */
    off_t size = lseek(fd, 0, SEEK_END);
    off_t from =
        size > (off_t)sizeof tail - 1 ? size - (off_t)sizeof tail + 1 : 0;
    ssize_t got = size > 0 ? pread(fd, tail, sizeof tail - 1, from) : 0;
    close(fd);
    tail[got > 0 ? got : 0] = '\0';
    zerg_last_line(tail, line, sizeof line);
    /* The launcher may have put that line in the exit detail already. */
    if (line[0] && !strstr(what, line))
        snprintf(buf, n, "%s: %s", what, line);
}

/* The worker_exit / worker_crash event data. */
static zerg_json *exit_data(const struct zerg_orch *o, const struct slot *sl,
                            const struct zerg_exit_info *info, int64_t now)
{
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "exit_code", info->exit_code);
    zerg_json_set_num(data, "signal", info->signal);
    zerg_json_set_bool(data, "oom_killed", info->oom_killed);
    zerg_json_set_bool(data, "was_ready", slot_ready(sl));
    zerg_json_set_num(data, "uptime", ORCH_SEC(now - sl->spawned_at_mono_ns));
    const char *kill = kill_names[sl->state];
    zerg_json_set_str(data, "killed_by_orchestrator", kill ? kill : "none");
    if (sl->task >= 0)
        zerg_json_set_str(data, "task", orch_tid(o, (size_t)sl->task));
    return data;
}

/* ---- actions ---------------------------------------------------------- */

static void nop(struct zerg_orch *o, struct slot *sl,
                const struct slot_ev_arg *a, int64_t now)
{
    (void)o, (void)sl, (void)a, (void)now;
}

/* A cell the table says cannot happen: orch_slot_event logs the event and
 * what came with it (refused), and nothing changes. */
static void bad(struct zerg_orch *o, struct slot *sl,
                const struct slot_ev_arg *a, int64_t now)
{
    (void)o, (void)sl, (void)a, (void)now;
}

static void spawn_failed(struct zerg_orch *o, struct slot *sl,
                         const struct slot_ev_arg *a, int64_t now)
{
    struct zerg_worker_state *w = &o->s->workers[sl->id];
    int max = o->cfg->spawn_retry_attempts;

    w->spawn_attempt++;
    snprintf(sl->last_error, sizeof sl->last_error, "%s", a->error);
    if (!a->permanent && o->cfg->resilience_enabled &&
        w->spawn_attempt <= max) {
        zerg_json *data = NULL;
        int64_t delay = zerg_policy_backoff_ns(o->o.policy, "spawn",
                                               w->spawn_attempt, &data);
        if (!data)
            data = zerg_json_obj();
        zerg_json_set_num(data, "attempt", w->spawn_attempt);
        zerg_json_set_num(data, "max_attempts", max);
        zerg_json_set_num(data, "delay", ORCH_SEC(delay));
        zerg_json_set_str(data, "error", a->error);
        sl->spawn_at_mono_ns = now + delay;
        o->s->metrics.spawn_retries++;
        enter(o, sl, SLOT_BACKOFF);
        zerg_log_event(
            o->o.log, sl->id, ZERG_LOG_WARN, "worker_spawn_retry", NULL, data,
            "Worker %d failed to start (%s); retry %d of %d in "
            "%.1fs",
            sl->id, a->error, w->spawn_attempt, max, ORCH_SEC(delay));
        return;
    }
    enter(o, sl, SLOT_RETIRED);
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "attempts", w->spawn_attempt);
    zerg_json_set_str(data, "error", a->error);
    zerg_json_set_bool(data, "permanent", a->permanent);
    zerg_log_event(o->o.log, sl->id, ZERG_LOG_ERROR, "worker_spawn_failed",
                   NULL, data,
                   "Worker %d could not be started after %d attempt%s: %s. "
                   "Check .zerg/logs/%s/worker-%d.log, the zerg binary and "
                   "workers.launch_prefix / container settings",
                   sl->id, w->spawn_attempt, w->spawn_attempt == 1 ? "" : "s",
                   a->error, o->o.feature, sl->id);
    pool_reduced(o, sl);
}

static void spawn(struct zerg_orch *o, struct slot *sl,
                  const struct slot_ev_arg *a, int64_t now)
{
    struct zerg_worker_state *w = &o->s->workers[sl->id];
    struct zerg_err err = {0};
    int cls = ZERG_SPAWN_TRANSIENT;
    struct zerg_spawn_req req = {
        .slot = sl->id,
        .epoch = o->s->next_epoch++,
        .feature = o->o.feature,
        .run_id = o->s->run_id,
        .project = o->o.project,
        .zerg_bin = o->o.zerg_bin,
    };

    (void)a;
    char wt[PATH_MAX] = "", wd[PATH_MAX] = "";
    if (orch_ws_worktree(o, sl->id, wt, sizeof wt, wd, sizeof wd, &err) < 0) {
        struct slot_ev_arg fail = {.error = err.msg};
        orch_slot_event(o, sl, SLOT_EV_SPAWN_ERR, &fail, now);
        return;
    }
    req.workspace = wt[0] ? wt : NULL;
    req.workdir = wd[0] ? wd : NULL;
    if (req.workspace && o->o.workspace && o->o.workspace->git_dir[0])
        req.git_dir = o->o.workspace->git_dir;
    /* The assignment must never name a task for a fresh incarnation.  Its
     * new epoch also has slot-N checked again (never a link) before the
     * incarnation's assignments go through the directory kept open. */
    struct zerg_assign idle = {.epoch = req.epoch};
    snprintf(idle.run_id, sizeof idle.run_id, "%s", o->s->run_id);
    zerg_proto_write_assign(o->run_dir, sl->id, &idle, NULL);
    if (o->o.launcher->ops->spawn(o->o.launcher, &req, &sl->proc, &cls, &err) <
        0) {
        sl->proc.epoch = req.epoch;
        struct slot_ev_arg fail = {.error = err.msg,
                                   .permanent = cls == ZERG_SPAWN_PERMANENT};
        orch_slot_event(o, sl, SLOT_EV_SPAWN_ERR, &fail, now);
        return;
    }
    sl->ready = 0;
    sl->spawned_at_mono_ns = now;
    sl->hb_seq = -1;
    sl->hb_change_at_mono_ns = now;
    sl->hb_task_pgid = 0;
    sl->task = -1;
    w->epoch = req.epoch;
    w->started_at_wall_ns = orch_wall_ns(o);
    w->ready_at_wall_ns = 0;
    enter(o, sl, SLOT_STARTING);
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "epoch", (double)req.epoch);
    zerg_json_set_num(data, "pid", sl->proc.pid);
    zerg_json_set_num(data, "attempt", w->spawn_attempt + 1);
    zerg_json_set_str(data, "mode", o->o.launcher->ops->name);
    if (sl->proc.name[0])
        zerg_json_set_str(data, "container", sl->proc.name);
    zerg_log_event(o->o.log, sl->id, ZERG_LOG_INFO, "worker_spawn", NULL, data,
                   "Worker %d spawned (pid %d, epoch %" PRIu64 ")", sl->id,
                   (int)sl->proc.pid, req.epoch);
}

static void ready(struct zerg_orch *o, struct slot *sl,
                  const struct slot_ev_arg *a, int64_t now)
{
    struct zerg_worker_state *w = &o->s->workers[sl->id];
    (void)a;
    w->ready_at_wall_ns = orch_wall_ns(o);
    w->spawn_attempt = 0;
    sl->ready = 1;
    enter(o, sl, SLOT_READY);
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "startup_ms",
                      ORCH_MS(now - sl->spawned_at_mono_ns));
    zerg_log_event(o->o.log, sl->id, ZERG_LOG_INFO, "worker_ready", NULL, data,
                   "Worker %d ready in %.0f ms", sl->id,
                   ORCH_MS(now - sl->spawned_at_mono_ns));
}

static void ready_timeout(struct zerg_orch *o, struct slot *sl,
                          const struct slot_ev_arg *a, int64_t now)
{
    (void)a, (void)now;
    zerg_log_event(o->o.log, sl->id, ZERG_LOG_WARN, "worker_ready_timeout",
                   NULL, NULL, "Worker %d did not report ready within %.1fs",
                   sl->id, ORCH_SEC(o->cfg->spawn_ready_timeout_ns));
    kill_slot(o, sl, SLOT_KILLING_UNREADY, SIGKILL);
}

static void assign(struct zerg_orch *o, struct slot *sl,
                   const struct slot_ev_arg *a, int64_t now)
{
    sl->task = (int)a->task;
    sl->progress_at_mono_ns = now;
    sl->assigned_at_mono_ns = now;
    sl->hb_step[0] = '\0';
    sl->hb_pct = -1;
    sl->hb_activity[0] = '\0';
    sl->hb_tool_calls = 0;
    memset(&sl->spend, 0, sizeof sl->spend);
    enter(o, sl, SLOT_BUSY);
}

static void task_done(struct zerg_orch *o, struct slot *sl,
                      const struct slot_ev_arg *a, int64_t now)
{
    (void)a, (void)now;
    sl->task = -1;
    enter(o, sl, SLOT_READY);
}

/* Going: the task's result arrived after all; the exit decides the
 * rest. */
static void drop_task(struct zerg_orch *o, struct slot *sl,
                      const struct slot_ev_arg *a, int64_t now)
{
    (void)o, (void)a, (void)now;
    sl->task = -1;
}

static void hb_stale(struct zerg_orch *o, struct slot *sl,
                     const struct slot_ev_arg *a, int64_t now)
{
    (void)a, (void)now;
    kill_slot(o, sl, SLOT_KILLING_STALE, SIGKILL);
}

static void task_stale(struct zerg_orch *o, struct slot *sl,
                       const struct slot_ev_arg *a, int64_t now)
{
    (void)a, (void)now;
    kill_slot(o, sl, SLOT_KILLING_TIMEOUT, SIGKILL);
}

/* Alive: told to go through the assignment file, signalled when sig. */
static void stop(struct zerg_orch *o, struct slot *sl,
                 const struct slot_ev_arg *a, int64_t now)
{
    (void)now;
    struct zerg_assign stop_all = {.epoch = sl->proc.epoch, .stop = 1};
    snprintf(stop_all.run_id, sizeof stop_all.run_id, "%s", o->s->run_id);
    zerg_proto_write_assign(o->run_dir, sl->id, &stop_all, NULL);
    kill_slot(o, sl, SLOT_STOPPING, a->sig);
}

static void stop_idle(struct zerg_orch *o, struct slot *sl,
                      const struct slot_ev_arg *a, int64_t now)
{
    (void)a, (void)now;
    enter(o, sl, SLOT_STOPPED);
}

static void revive(struct zerg_orch *o, struct slot *sl,
                   const struct slot_ev_arg *a, int64_t now)
{
    (void)a;
    sl->spawn_at_mono_ns = now;
    enter(o, sl, SLOT_BACKOFF);
}

/* The exit ended the slot's attempt, if it had one: what its heartbeats
 * reported spent is charged, then the verdict applied (orch_attempt.c). */
static void end_attempt(struct zerg_orch *o, struct slot *sl,
                        const struct verdict *v, int64_t now)
{
    if (sl->task < 0)
        return;
    size_t t = (size_t)sl->task;
    orch_pool_add_unfinished(o, sl);
    sl->task = -1;
    orch_attempt_end(o, t, v, NULL, NULL, now);
}

static void exit_stopped(struct zerg_orch *o, struct slot *sl,
                         const struct slot_ev_arg *a, int64_t now)
{
    const struct zerg_exit_info *info = a->exit;
    char what[256];
    describe_exit(info, what, sizeof what);
    zerg_log_event(o->o.log, sl->id, ZERG_LOG_INFO, "worker_exit", NULL,
                   exit_data(o, sl, info, now), "Worker %d exited (%s)", sl->id,
                   what);
    /* Stopped because the rush was finishing, which it no longer is:
     * back into the pool. */
    int wanted = !orch_run_ending(o);
    if (wanted)
        sl->spawn_at_mono_ns = now;
    enter(o, sl, wanted ? SLOT_BACKOFF : SLOT_STOPPED);
    struct verdict v;
    orch_verdict_requeue(&v, "interrupted by stop");
    v.resume = 1; /* the agent was working: go on from there */
    end_attempt(o, sl, &v, now);
}

/* Exit before the first heartbeat: a failed spawn (FR-1).  Exit 3 is the
 * worker's "cannot set up" (unreadable graph or config): starting it
 * again cannot help. */
static void exit_unready(struct zerg_orch *o, struct slot *sl,
                         const struct slot_ev_arg *a, int64_t now)
{
    const struct zerg_exit_info *info = a->exit;
    char what[256], why[512];
    describe_exit(info, what, sizeof what);
    worker_log_tail(o, sl->id, what, why, sizeof why);
    zerg_log_event(o->o.log, sl->id, ZERG_LOG_WARN, "worker_exit", NULL,
                   exit_data(o, sl, info, now),
                   "Worker %d exited before ready (%s)", sl->id, why);
    struct slot_ev_arg fail = {
        .error = why,
        .permanent =
            info->exit_code == ZERG_WORKER_EXIT_SETUP && !info->runtime_error,
    };
    spawn_failed(o, sl, &fail, now);
}

/* FR-6: replace the worker, or retire the slot. */
static void respawn_or_retire(struct zerg_orch *o, struct slot *sl,
                              const struct zerg_exit_info *info, int64_t now)
{
    struct zerg_worker_state *w = &o->s->workers[sl->id];
    zerg_json *why = NULL;
    struct zerg_respawn_in in = {
        .slot = sl->id,
        .respawn_count = w->respawn_count,
        .exit_code = info->exit_code,
        .signal = info->signal,
        .uptime_ns = now - sl->spawned_at_mono_ns,
        .was_ready = slot_ready(sl),
        .work_left = work_left(o),
    };
    if (zerg_policy_respawn(o->o.policy, &in, &why)) {
        w->respawn_count++;
        o->s->metrics.worker_respawns++;
        sl->spawn_at_mono_ns = now;
        enter(o, sl, SLOT_BACKOFF);
        zerg_log_event(o->o.log, sl->id, ZERG_LOG_INFO, "worker_respawn", NULL,
                       why, "Respawning worker %d (respawn %d of %d)", sl->id,
                       w->respawn_count, o->cfg->max_respawn_attempts);
        return;
    }
    enter(o, sl, in.work_left ? SLOT_RETIRED : SLOT_STOPPED);
    if (!in.work_left) {
        zerg_json_free(why);
        return;
    }
    zerg_log_event(o->o.log, sl->id, ZERG_LOG_WARN, "worker_retired", NULL, why,
                   "Worker %d retired after %d respawns", sl->id,
                   w->respawn_count);
    pool_reduced(o, sl);
}

/* A crash (an exit after ready, or after a stale heartbeat): the running
 * task is requeued uncharged (FR-5), the worker replaced or retired. */
static void exit_crashed(struct zerg_orch *o, struct slot *sl,
                         const struct slot_ev_arg *a, int64_t now)
{
    char what[256];
    describe_exit(a->exit, what, sizeof what);
    o->s->metrics.worker_crashes++;
    zerg_log_event(o->o.log, sl->id, ZERG_LOG_WARN, "worker_crash", NULL,
                   exit_data(o, sl, a->exit, now), "Worker %d crashed (%s)%s",
                   sl->id, what, sl->task >= 0 ? " while running a task" : "");
    struct verdict v;
    orch_verdict_failed(
        &v, sl->state == SLOT_KILLING_STALE ? "heartbeat_stale" : "crash", NULL,
        a->exit->exit_code, a->exit->signal, "worker %d %s", sl->id, what);
    end_attempt(o, sl, &v, now);
    if (o->cfg->resilience_enabled)
        respawn_or_retire(o, sl, a->exit, now);
    else
        enter(o, sl, SLOT_CRASHED);
}

/* Killed for a task without progress: the task is charged (FR-2); the
 * kill was ours, not the worker's fault, so it is replaced uncounted. */
static void exit_timed_out(struct zerg_orch *o, struct slot *sl,
                           const struct slot_ev_arg *a, int64_t now)
{
    char what[256];
    describe_exit(a->exit, what, sizeof what);
    zerg_log_event(o->o.log, sl->id, ZERG_LOG_WARN, "worker_crash", NULL,
                   exit_data(o, sl, a->exit, now), "Worker %d crashed (%s)%s",
                   sl->id, what, sl->task >= 0 ? " while running a task" : "");
    struct verdict v;
    orch_verdict_failed(&v, "timeout", NULL, -1, SIGKILL,
                        "no progress for %.1fs",
                        ORCH_SEC(now - sl->progress_at_mono_ns));
    end_attempt(o, sl, &v, now);
    if (o->cfg->resilience_enabled) {
        sl->spawn_at_mono_ns = now;
        enter(o, sl, SLOT_BACKOFF);
    } else {
        enter(o, sl, SLOT_CRASHED);
    }
}

/* ---- the table -------------------------------------------------------- */

/* clang-format off */
static const struct slot_action
    NOP    = {"nop", nop, NULL},
    BAD    = {"bad", bad, NULL},
    SPAWN  = {"spawn", spawn, "STARTING (or SPAWN_ERR)"},
    SFAIL  = {"spawn_failed", spawn_failed, "BACKOFF / RETIRED"},
    READY  = {"ready", ready, "READY"},
    RTIME  = {"kill", ready_timeout, "KILLING_UNREADY"},
    ASSIGN = {"assign", assign, "BUSY"},
    DONE   = {"task_done", task_done, "READY"},
    DROP   = {"drop_task", drop_task, NULL},
    HBST   = {"kill", hb_stale, "KILLING_STALE"},
    TKST   = {"kill", task_stale, "KILLING_TIMEOUT"},
    STOP   = {"stop", stop, "STOPPING"},
    STOPI  = {"stop", stop_idle, "STOPPED"},
    XSTOP  = {"stopped", exit_stopped, "STOPPED (BACKOFF if work came back)"},
    XSPAWN = {"spawn_failed", exit_unready, "BACKOFF / RETIRED"},
    XCRASH = {"crashed", exit_crashed, "BACKOFF / RETIRED / STOPPED / CRASHED"},
    XTIME  = {"timed_out", exit_timed_out, "BACKOFF / CRASHED"},
    REVIVE = {"revive", revive, "BACKOFF"};

/* Every (state, event) pair; docs/wiki/Resilience-Architecture.md shows
 * it rendered with the names and targets above. */
static const struct slot_action *const slot_table[SLOT_NSTATES][SLOT_NEVENTS] = {
/*                        SPAWN_DUE SPAWN_ERR FIRST_HB READY_TO ASSIGN   TASK_DONE HB_STALE TASK_STALE STOP    CHILD_EXIT REVIVE */
[SLOT_BACKOFF]         = {&SPAWN,   &SFAIL,   &NOP,    &NOP,    &BAD,    &BAD,     &NOP,    &NOP,      &STOPI, &BAD,      &NOP},
[SLOT_STARTING]        = {&NOP,     &BAD,     &READY,  &RTIME,  &BAD,    &BAD,     &NOP,    &NOP,      &STOP,  &XSPAWN,   &NOP},
[SLOT_READY]           = {&NOP,     &BAD,     &NOP,    &NOP,    &ASSIGN, &BAD,     &HBST,   &NOP,      &STOP,  &XCRASH,   &NOP},
[SLOT_BUSY]            = {&NOP,     &BAD,     &NOP,    &NOP,    &BAD,    &DONE,    &HBST,   &TKST,     &STOP,  &XCRASH,   &NOP},
[SLOT_STOPPING]        = {&NOP,     &BAD,     &NOP,    &NOP,    &BAD,    &DROP,    &NOP,    &NOP,      &STOP,  &XSTOP,    &NOP},
[SLOT_KILLING_UNREADY] = {&NOP,     &BAD,     &NOP,    &NOP,    &BAD,    &BAD,     &NOP,    &NOP,      &STOP,  &XSPAWN,   &NOP},
[SLOT_KILLING_STALE]   = {&NOP,     &BAD,     &NOP,    &NOP,    &BAD,    &DROP,    &NOP,    &NOP,      &STOP,  &XCRASH,   &NOP},
[SLOT_KILLING_TIMEOUT] = {&NOP,     &BAD,     &NOP,    &NOP,    &BAD,    &DROP,    &NOP,    &NOP,      &STOP,  &XTIME,    &NOP},
[SLOT_STOPPED]         = {&NOP,     &BAD,     &NOP,    &NOP,    &BAD,    &BAD,     &NOP,    &NOP,      &NOP,   &BAD,      &REVIVE},
[SLOT_RETIRED]         = {&NOP,     &BAD,     &NOP,    &NOP,    &BAD,    &BAD,     &NOP,    &NOP,      &NOP,   &BAD,      &NOP},
[SLOT_CRASHED]         = {&NOP,     &BAD,     &NOP,    &NOP,    &BAD,    &BAD,     &NOP,    &NOP,      &NOP,   &BAD,      &NOP},
};
/* clang-format on */

/* slot_event_refused: the event, the state and what came with the event,
 * so the log says what reached the slot, not only that something did. */
static void refused(struct zerg_orch *o, const struct slot *sl,
                    enum slot_event ev, const struct slot_ev_arg *a)
{
    zerg_json *data = zerg_json_obj();
    zerg_json_set_str(data, "event", event_names[ev]);
    zerg_json_set_str(data, "state", orch_slot_state_name(sl->state));
    if (ev == SLOT_EV_SPAWN_ERR && a->error)
        zerg_json_set_str(data, "error", a->error);
    if (ev == SLOT_EV_ASSIGN)
        zerg_json_set_str(data, "task", orch_tid(o, a->task));
    if (ev == SLOT_EV_STOP)
        zerg_json_set_num(data, "signal", a->sig);
    if (ev == SLOT_EV_CHILD_EXIT && a->exit) {
        zerg_json_set_num(data, "exit_code", a->exit->exit_code);
        zerg_json_set_num(data, "signal", a->exit->signal);
    }
    zerg_log_event(o->o.log, sl->id, ZERG_LOG_ERROR, "slot_event_refused", NULL,
                   data, "Worker %d: event %s refused in state %s", sl->id,
                   event_names[ev], orch_slot_state_name(sl->state));
}

void orch_slot_event(struct zerg_orch *o, struct slot *sl, enum slot_event ev,
                     const struct slot_ev_arg *arg, int64_t now)
{
    static const struct slot_ev_arg none = {0};
    const struct slot_action *act = slot_table[sl->state][ev];
    if (act->fn == bad)
        refused(o, sl, ev, arg ? arg : &none);
    act->fn(o, sl, arg ? arg : &none, now);
}

static void slot_cell(const void *ctx, int s, int e, char *out, size_t n)
{
    (void)ctx;
    const struct slot_action *a = s >= 0 && e >= 0 ? slot_table[s][e] : NULL;
    if (s < 0)
        snprintf(out, n, "%s", event_names[e]);
    else if (e < 0)
        snprintf(out, n, "%s (`%s`)", state_names[s],
                 zerg_worker_status_name(status_of[s]));
    else
        snprintf(out, n, "%s%s%s", a->name, a->to ? " → " : "",
                 a->to ? a->to : "");
}

int orch_slot_table_markdown(char *buf, size_t size)
{
    return zerg_text_table(buf, size, "state \\ event", SLOT_NSTATES,
                           SLOT_NEVENTS, slot_cell, NULL);
}

/* ---- events from outside --------------------------------------------- */

void zerg_orch_child_exited(struct zerg_orch *o, pid_t pid, int wstatus,
                            int64_t now)
{
    struct slot *sl = NULL;
    struct zerg_exit_info info = {0};

    for (int i = 0; i < o->nslots; i++)
        if (slot_alive(&o->slots[i]) && o->slots[i].proc.pid == pid)
            sl = &o->slots[i];
    if (!sl)
        return;
    o->o.launcher->ops->reaped(o->o.launcher, &sl->proc, wstatus, &info);
    /* Where the worker's pids are ours, the task's own process group
     * outlives a dead worker unless we take it down (it cannot any more). */
    if (sl->hb_task_pgid > 0 && o->o.launcher->ops->caps.local_pids)
        kill(-sl->hb_task_pgid, SIGKILL);
    struct slot_ev_arg a = {.exit = &info};
    orch_slot_event(o, sl, SLOT_EV_CHILD_EXIT, &a, now);
}

/* ---- queries ---------------------------------------------------------- */

void orch_stop_workers(struct zerg_orch *o, int sig, int64_t now)
{
    struct slot_ev_arg a = {.sig = sig};
    for (int i = 0; i < o->nslots; i++)
        orch_slot_event(o, &o->slots[i], SLOT_EV_STOP, &a, now);
}

void orch_revive_workers(struct zerg_orch *o, int64_t now)
{
    for (int i = 0; i < o->nslots; i++)
        orch_slot_event(o, &o->slots[i], SLOT_EV_REVIVE, NULL, now);
}

int orch_live_slots(const struct zerg_orch *o)
{
    int n = 0;
    for (int i = 0; i < o->nslots; i++)
        n += slot_in_pool(&o->slots[i]);
    return n;
}

int orch_any_alive(const struct zerg_orch *o)
{
    for (int i = 0; i < o->nslots; i++)
        if (slot_alive(&o->slots[i]))
            return 1;
    return 0;
}

int orch_slot_runs(const struct zerg_orch *o, int w, size_t t)
{
    return w >= 0 && w < o->nslots && slot_alive(&o->slots[w]) &&
           o->slots[w].task == (int)t;
}

int zerg_orch_nworkers(const struct zerg_orch *o)
{
    return o->nslots;
}

int zerg_orch_worker(const struct zerg_orch *o, int slot,
                     struct zerg_orch_worker *out)
{
    if (slot < 0 || slot >= o->nslots)
        return -EINVAL;
    const struct slot *sl = &o->slots[slot];
    *out = (struct zerg_orch_worker){
        .slot = slot,
        .state = zerg_worker_status_name(status_of[sl->state]),
        .progress_pct = -1,
        .spawned_at_mono_ns = sl->spawned_at_mono_ns,
        .respawns = o->s->workers[slot].respawn_count,
    };
    if (sl->task < 0 || !slot_alive(sl))
        return 0;
    out->task = o->g->tasks[sl->task].id;
    out->attempt = o->s->tasks[sl->task].attempt;
    out->task_since_mono_ns = sl->assigned_at_mono_ns;
    out->progress_pct = sl->hb_pct;
    snprintf(out->step, sizeof out->step, "%s", sl->hb_step);
    snprintf(out->activity, sizeof out->activity, "%s", sl->hb_activity);
    out->tool_calls = sl->hb_tool_calls;
    out->cost_usd = sl->spend.cost_usd;
    return 0;
}
