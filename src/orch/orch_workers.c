/* orch_workers.c - what happens to a worker.
 *
 * A slot is spawned (FR-1: a failure before the first heartbeat is a
 * failed spawn, retried with backoff.delay or retired), becomes ready with
 * its first heartbeat, is watched (FR-3: stale.worker; FR-2: stale.task),
 * and when its child exits the exit is classified: a crash requeues its
 * task uncharged through retry.decide (FR-5) and respawn.decide keeps the
 * pool at size or retires the slot (FR-6). */
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

#define MS(ns) ((double)(ns) / 1e6)
#define SEC(ns) ((double)(ns) / 1e9)

int orch_work_left(const struct zerg_orch *o)
{
    for (size_t i = 0; i < o->g->ntasks; i++)
        if (!zerg_task_status_terminal(o->s->tasks[i].status))
            return 1;
    return 0;
}

void orch_slot_status(struct zerg_orch *o, struct slot *sl,
                      enum zerg_worker_status st)
{
    o->s->workers[sl->id].status = st;
    orch_mark_dirty(o);
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

static void spawn_failed(struct zerg_orch *o, struct slot *sl, const char *why,
                         int permanent, int64_t now)
{
    struct zerg_worker_state *w = &o->s->workers[sl->id];
    int max = o->cfg->spawn_retry_attempts;

    w->spawn_attempt++;
    snprintf(sl->last_error, sizeof sl->last_error, "%s", why);
    if (!permanent && o->cfg->resilience_enabled && w->spawn_attempt <= max) {
        zerg_json *data = NULL;
        int64_t delay = zerg_policy_backoff_ns(o->o.policy, "spawn",
                                               w->spawn_attempt, &data);
        if (!data)
            data = zerg_json_obj();
        zerg_json_set_num(data, "attempt", w->spawn_attempt);
        zerg_json_set_num(data, "max_attempts", max);
        zerg_json_set_num(data, "delay", SEC(delay));
        zerg_json_set_str(data, "error", why);
        sl->spawn_at = now + delay;
        o->s->metrics.spawn_retries++;
        orch_slot_status(o, sl, ZERG_WORKER_BACKOFF);
        zerg_log_event(o->o.log, sl->id, ZERG_LOG_WARN, "worker_spawn_retry",
                       NULL, data,
                       "Worker %d failed to start (%s); retry %d of %d in "
                       "%.1fs",
                       sl->id, why, w->spawn_attempt, max, SEC(delay));
        return;
    }
    sl->want = 0;
    orch_slot_status(o, sl, ZERG_WORKER_RETIRED);
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "attempts", w->spawn_attempt);
    zerg_json_set_str(data, "error", why);
    zerg_json_set_bool(data, "permanent", permanent);
    zerg_log_event(o->o.log, sl->id, ZERG_LOG_ERROR, "worker_spawn_failed",
                   NULL, data,
                   "Worker %d could not be started after %d attempt%s: %s. "
                   "Check .zerg/logs/worker-%d.log, the zerg binary and "
                   "workers.launch_prefix / container settings",
                   sl->id, w->spawn_attempt, w->spawn_attempt == 1 ? "" : "s",
                   why, sl->id);
    pool_reduced(o, sl);
}

static void slot_spawn(struct zerg_orch *o, struct slot *sl, int64_t now)
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

    /* The assignment must never name a task for a fresh incarnation. */
    struct zerg_assign idle = {.epoch = req.epoch};
    zerg_proto_write_assign(o->state_dir, sl->id, &idle, NULL);
    if (o->o.launcher->ops->spawn(o->o.launcher, &req, &sl->proc, &cls, &err) <
        0) {
        sl->proc.epoch = req.epoch;
        spawn_failed(o, sl, err.msg, cls == ZERG_SPAWN_PERMANENT, now);
        return;
    }
    sl->alive = 1;
    sl->ready = 0;
    sl->killed = KILL_NONE;
    sl->spawned_at = now;
    sl->hb_seq = -1;
    sl->hb_change_at = now;
    sl->hb_task_pgid = 0;
    sl->task = -1;
    w->epoch = req.epoch;
    w->started_at = orch_wall_now();
    w->ready_at = 0;
    orch_slot_status(o, sl, ZERG_WORKER_STARTING);
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

void orch_worker_ready(struct zerg_orch *o, struct slot *sl, int64_t now)
{
    struct zerg_worker_state *w = &o->s->workers[sl->id];
    sl->ready = 1;
    w->ready_at = orch_wall_now();
    w->spawn_attempt = 0;
    orch_slot_status(o, sl, ZERG_WORKER_READY);
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "startup_ms", MS(now - sl->spawned_at));
    zerg_log_event(o->o.log, sl->id, ZERG_LOG_INFO, "worker_ready", NULL, data,
                   "Worker %d ready in %.0f ms", sl->id,
                   MS(now - sl->spawned_at));
}

static void respawn_or_retire(struct zerg_orch *o, struct slot *sl,
                              const struct zerg_exit_info *info, int64_t now)
{
    struct zerg_worker_state *w = &o->s->workers[sl->id];
    zerg_json *why = NULL;

    if (!o->cfg->resilience_enabled) {
        sl->want = 0;
        orch_slot_status(o, sl, ZERG_WORKER_CRASHED);
        return;
    }
    if (sl->killed == KILL_TASK_TIMEOUT) {
        /* Our own kill, not the worker's fault: replace it uncounted. */
        sl->spawn_at = now;
        orch_slot_status(o, sl, ZERG_WORKER_BACKOFF);
        return;
    }
    struct zerg_respawn_in in = {
        .slot = sl->id,
        .respawn_count = w->respawn_count,
        .exit_code = info->exit_code,
        .signal = info->signal,
        .uptime_ns = now - sl->spawned_at,
        .was_ready = sl->ready,
        .work_left = orch_work_left(o),
    };
    if (zerg_policy_respawn(o->o.policy, &in, &why)) {
        w->respawn_count++;
        o->s->metrics.worker_respawns++;
        sl->spawn_at = now;
        orch_slot_status(o, sl, ZERG_WORKER_BACKOFF);
        zerg_log_event(o->o.log, sl->id, ZERG_LOG_INFO, "worker_respawn", NULL,
                       why, "Respawning worker %d (respawn %d of %d)", sl->id,
                       w->respawn_count, o->cfg->max_respawn_attempts);
        return;
    }
    sl->want = 0;
    orch_slot_status(o, sl,
                     in.work_left ? ZERG_WORKER_RETIRED : ZERG_WORKER_STOPPED);
    if (in.work_left) {
        zerg_log_event(o->o.log, sl->id, ZERG_LOG_WARN, "worker_retired", NULL,
                       why, "Worker %d retired after %d respawns", sl->id,
                       w->respawn_count);
        pool_reduced(o, sl);
    } else
        zerg_json_free(why);
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

/* "what: last line of .zerg/logs/worker-N.log", so the reason a worker
 * could not start is in the event, not only in a file. */
static void worker_log_tail(const struct zerg_orch *o, int slot,
                            const char *what, char *buf, size_t n)
{
    char path[PATH_MAX], tail[4096], line[320];

    snprintf(buf, n, "%s", what);
    if (zerg_fsio_path(path, sizeof path, "%s/.zerg/logs/worker-%d.log",
                       o->o.project, slot))
        return;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    /* Only the end matters: the log keeps every incarnation's output. */
    off_t size = lseek(fd, 0, SEEK_END);
    off_t from =
        size > (off_t)sizeof tail - 1 ? size - (off_t)sizeof tail + 1 : 0;
    ssize_t got = pread(fd, tail, sizeof tail - 1, from);
    close(fd);
    tail[got > 0 ? got : 0] = '\0';
    zerg_last_line(tail, line, sizeof line);
    /* The launcher may have put that line in the exit detail already. */
    if (line[0] && !strstr(what, line))
        snprintf(buf, n, "%s: %s", what, line);
}

void zerg_orch_child_exited(struct zerg_orch *o, pid_t pid, int wstatus,
                            int64_t now)
{
    struct slot *sl = NULL;
    struct zerg_exit_info info = {0};
    char what[256];

    for (int i = 0; i < o->nslots; i++)
        if (o->slots[i].alive && o->slots[i].proc.pid == pid)
            sl = &o->slots[i];
    if (!sl)
        return;
    o->o.launcher->ops->reaped(o->o.launcher, &sl->proc, wstatus, &info);
    sl->alive = 0;
    /* In subprocess mode the task's own process group outlives a killed
     * worker unless we take it down (the worker cannot any more). */
    if (sl->hb_task_pgid > 0 && !sl->proc.name[0])
        kill(-sl->hb_task_pgid, SIGKILL);
    describe_exit(&info, what, sizeof what);

    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "exit_code", info.exit_code);
    zerg_json_set_num(data, "signal", info.signal);
    zerg_json_set_bool(data, "oom_killed", info.oom_killed);
    zerg_json_set_bool(data, "was_ready", sl->ready);
    zerg_json_set_num(data, "uptime", SEC(now - sl->spawned_at));
    static const char *const kill_names[] = {
        "none", "ready_timeout", "heartbeat_stale", "task_timeout", "stop"};
    zerg_json_set_str(data, "killed_by_orchestrator", kill_names[sl->killed]);
    if (sl->task >= 0)
        zerg_json_set_str(data, "task", orch_tid(o, (size_t)sl->task));

    if (sl->killed == KILL_STOP || (o->finishing && sl->task < 0)) {
        zerg_log_event(o->o.log, sl->id, ZERG_LOG_INFO, "worker_exit", NULL,
                       data, "Worker %d exited (%s)", sl->id, what);
        orch_slot_status(o, sl, ZERG_WORKER_STOPPED);
        sl->want = 0;
        if (sl->task >= 0)
            orch_requeue(o, (size_t)sl->task, "interrupted by stop");
        return;
    }
    if (!sl->ready) {
        /* Exit 3 is the worker's "cannot set up" (unreadable graph or
         * config): starting it again cannot help. */
        int permanent =
            info.exit_code == ZERG_WORKER_EXIT_SETUP && !info.runtime_error;
        char why[512];
        worker_log_tail(o, sl->id, what, why, sizeof why);
        zerg_log_event(o->o.log, sl->id, ZERG_LOG_WARN, "worker_exit", NULL,
                       data, "Worker %d exited before ready (%s)", sl->id, why);
        spawn_failed(o, sl, why, permanent, now);
        return;
    }
    if (sl->killed != KILL_TASK_TIMEOUT)
        o->s->metrics.worker_crashes++;
    zerg_log_event(o->o.log, sl->id, ZERG_LOG_WARN, "worker_crash", NULL, data,
                   "Worker %d crashed (%s)%s", sl->id, what,
                   sl->task >= 0 ? " while running a task" : "");
    if (sl->task >= 0) {
        size_t t = (size_t)sl->task;
        if (sl->killed == KILL_TASK_TIMEOUT) {
            char err[256];
            snprintf(err, sizeof err, "no progress for %.1fs",
                     SEC(now - sl->progress_at));
            orch_task_failure(o, t, "timeout", -1, SIGKILL, err, now);
        } else {
            char err[300];
            snprintf(err, sizeof err, "worker %d %s", sl->id, what);
            orch_task_failure(
                o, t, sl->killed == KILL_HB_STALE ? "heartbeat_stale" : "crash",
                info.exit_code, info.signal, err, now);
        }
    }
    respawn_or_retire(o, sl, &info, now);
}

void orch_kill_worker(struct zerg_orch *o, struct slot *sl,
                      enum kill_reason why, int sig)
{
    sl->killed = why;
    if (sl->hb_task_pgid > 0 && !sl->proc.name[0])
        kill(-sl->hb_task_pgid, SIGKILL);
    o->o.launcher->ops->kill(o->o.launcher, &sl->proc, sig);
}

/* ------------------------------------------------------------------ */
/* Watchdogs.                                                          */

static void check_slot(struct zerg_orch *o, struct slot *sl, int64_t now,
                       int64_t *wake)
{
    const struct zerg_config *c = o->cfg;

    if (!sl->alive || sl->killed)
        return;
    if (!sl->ready) {
        int64_t deadline = sl->spawned_at + c->spawn_ready_timeout_ns;
        if (now >= deadline) {
            zerg_log_event(o->o.log, sl->id, ZERG_LOG_WARN,
                           "worker_ready_timeout", NULL, NULL,
                           "Worker %d did not report ready within %.1fs",
                           sl->id, SEC(c->spawn_ready_timeout_ns));
            orch_kill_worker(o, sl, KILL_READY_TIMEOUT, SIGKILL);
        } else if (deadline < *wake) {
            *wake = deadline;
        }
        return;
    }
    if (!c->resilience_enabled)
        return;
    /* Ask the stale policies twice per heartbeat interval, not at every
     * event: detection stays within half an interval of the threshold
     * while a busy loop does not call Lua per event. */
    if (now < sl->next_stale_check) {
        if (sl->next_stale_check < *wake)
            *wake = sl->next_stale_check;
        return;
    }
    int64_t period = c->heartbeat_interval_ns / 2;
    if (period > ZERG_NS_PER_S)
        period = ZERG_NS_PER_S;
    sl->next_stale_check = now + period;
    zerg_json *why = NULL;
    if (zerg_policy_stale_worker(o->o.policy, sl->id, sl->hb_seq,
                                 sl->hb_change_at, now, &why)) {
        o->s->metrics.stale_detections++;
        zerg_log_event(o->o.log, sl->id, ZERG_LOG_WARN, "heartbeat_stale",
                       sl->task >= 0 ? orch_tid(o, (size_t)sl->task) : NULL,
                       why,
                       "Worker %d heartbeat stale for %.1fs (threshold "
                       "%.1fs); killing it",
                       sl->id, SEC(now - sl->hb_change_at),
                       SEC(c->heartbeat_stale_threshold_ns));
        orch_kill_worker(o, sl, KILL_HB_STALE, SIGKILL);
        return;
    }
    zerg_json_free(why);
    why = NULL;
    /* Re-check one heartbeat interval after the threshold would pass. */
    int64_t hb_wake = sl->hb_change_at + c->heartbeat_stale_threshold_ns;
    if (hb_wake < *wake)
        *wake = hb_wake > now ? hb_wake : now + c->heartbeat_interval_ns;
    if (sl->task < 0 ||
        orch_ts(o, (size_t)sl->task)->status != ZERG_TASK_IN_PROGRESS)
        return;
    size_t t = (size_t)sl->task;
    if (zerg_policy_stale_task(o->o.policy, orch_tid(o, t), sl->id,
                               sl->assigned_at, sl->progress_at, now, &why)) {
        o->s->metrics.stale_detections++;
        o->s->metrics.task_timeouts++;
        zerg_log_event(o->o.log, sl->id, ZERG_LOG_WARN, "task_timeout",
                       orch_tid(o, t), why,
                       "Task %s on worker %d made no progress for %.1fs "
                       "(timeout %.1fs); killing it",
                       orch_tid(o, t), sl->id, SEC(now - sl->progress_at),
                       SEC(c->task_stale_timeout_ns));
        orch_kill_worker(o, sl, KILL_TASK_TIMEOUT, SIGKILL);
        return;
    }
    zerg_json_free(why);
    int64_t t_wake = sl->progress_at + c->task_stale_timeout_ns;
    if (t_wake < *wake)
        *wake = t_wake > now ? t_wake : now + c->heartbeat_interval_ns;
}

int orch_live_slots(const struct zerg_orch *o)
{
    int n = 0;
    for (int i = 0; i < o->nslots; i++)
        n += o->slots[i].alive || o->slots[i].want;
    return n;
}

void orch_stop_workers(struct zerg_orch *o, int sig)
{
    for (int i = 0; i < o->nslots; i++) {
        struct slot *sl = &o->slots[i];
        sl->want = 0;
        if (!sl->alive)
            continue;
        struct zerg_assign a = {.epoch = sl->proc.epoch, .stop = 1};
        zerg_proto_write_assign(o->state_dir, sl->id, &a, NULL);
        if (sig)
            orch_kill_worker(o, sl, KILL_STOP, sig);
        else
            sl->killed = KILL_STOP;
    }
}

int64_t orch_tick_workers(struct zerg_orch *o, int64_t now, int64_t wake)
{
    for (int i = 0; i < o->nslots; i++) {
        struct slot *sl = &o->slots[i];
        check_slot(o, sl, now, &wake);
        if (sl->alive || !sl->want || o->finishing || o->stopping)
            continue;
        if (sl->spawn_at <= now)
            slot_spawn(o, sl, now);
        else if (sl->spawn_at < wake)
            wake = sl->spawn_at;
    }
    return wake;
}
