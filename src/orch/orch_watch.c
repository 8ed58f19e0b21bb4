/* orch_watch.c - the watchdogs: the slot events that time raises (a
 * worker not ready in time, a heartbeat or a task gone stale, a respawn
 * due), asked of the stale policies and fed to the slot table
 * (orch_slot.c). */
#include "orch_internal.h"

#include <stdio.h>

static void lower(int64_t *wake, int64_t at)
{
    if (at < *wake)
        *wake = at;
}

static void check_ready(struct zerg_orch *o, struct slot *sl, int64_t now,
                        int64_t *wake)
{
    int64_t deadline = sl->spawned_at_mono_ns + o->cfg->spawn_ready_timeout_ns;
    if (now >= deadline)
        orch_slot_event(o, sl, SLOT_EV_READY_TIMEOUT, NULL, now);
    else
        lower(wake, deadline);
}

/* The stale policy on what we know of the slot's heartbeat.  A verdict
 * of stale is checked against the heartbeat file first: what we know may
 * be late rather than the worker (DESIGN §19), its lines still unread
 * after a stop or a slow stretch of ours, while the file it rewrites at
 * every beat moved on.  A newer file is applied and the policy asked
 * again. */
static int hb_stale_verdict(struct zerg_orch *o, struct slot *sl, int64_t now,
                            zerg_json **why)
{
    if (!zerg_policy_stale_worker(o->o.policy, sl->id, sl->hb_seq,
                                  sl->hb_change_at_mono_ns, now, why))
        return 0;
    int64_t seq = sl->hb_seq;
    orch_on_heartbeat(o, sl->id, now);
    if (sl->hb_seq == seq)
        return 1;
    zerg_json_free(*why);
    *why = NULL;
    if (sl->state != SLOT_READY && sl->state != SLOT_BUSY)
        return 0;
    return zerg_policy_stale_worker(o->o.policy, sl->id, sl->hb_seq,
                                    sl->hb_change_at_mono_ns, now, why);
}

/* 1 when it raised HB_STALE. */
static int check_heartbeat(struct zerg_orch *o, struct slot *sl, int64_t now,
                           int64_t *wake)
{
    const struct zerg_config *c = o->cfg;
    zerg_json *why = NULL;
    if (hb_stale_verdict(o, sl, now, &why)) {
        o->s->metrics.stale_detections++;
        zerg_log_event(o->o.log, sl->id, ZERG_LOG_WARN, "heartbeat_stale",
                       sl->task >= 0 ? orch_tid(o, (size_t)sl->task) : NULL,
                       why,
                       "Worker %d heartbeat stale for %.1fs (threshold "
                       "%.1fs); killing it",
                       sl->id, ORCH_SEC(now - sl->hb_change_at_mono_ns),
                       ORCH_SEC(c->heartbeat_stale_threshold_ns));
        orch_slot_event(o, sl, SLOT_EV_HB_STALE, NULL, now);
        return 1;
    }
    zerg_json_free(why);
    /* Re-check one heartbeat interval after the threshold would pass. */
    int64_t at = sl->hb_change_at_mono_ns + c->heartbeat_stale_threshold_ns;
    if (at < *wake)
        *wake = at > now ? at : now + c->heartbeat_interval_ns;
    return 0;
}

static void check_task(struct zerg_orch *o, struct slot *sl, int64_t now,
                       int64_t *wake)
{
    const struct zerg_config *c = o->cfg;
    size_t t = (size_t)sl->task;
    zerg_json *why = NULL;
    if (orch_ts(o, t)->status != ZERG_TASK_IN_PROGRESS)
        return;
    if (zerg_policy_stale_task(o->o.policy, orch_tid(o, t), sl->id,
                               sl->assigned_at_mono_ns, sl->progress_at_mono_ns,
                               now, &why)) {
        o->s->metrics.stale_detections++;
        o->s->metrics.task_timeouts++;
        zerg_log_event(o->o.log, sl->id, ZERG_LOG_WARN, "task_timeout",
                       orch_tid(o, t), why,
                       "Task %s on worker %d made no progress for %.1fs "
                       "(timeout %.1fs); killing it",
                       orch_tid(o, t), sl->id,
                       ORCH_SEC(now - sl->progress_at_mono_ns),
                       ORCH_SEC(c->task_stale_timeout_ns));
        orch_slot_event(o, sl, SLOT_EV_TASK_STALE, NULL, now);
        return;
    }
    zerg_json_free(why);
    int64_t at = sl->progress_at_mono_ns + c->task_stale_timeout_ns;
    if (at < *wake)
        *wake = at > now ? at : now + c->heartbeat_interval_ns;
}

static void check_slot(struct zerg_orch *o, struct slot *sl, int64_t now,
                       int64_t *wake)
{
    if (sl->state == SLOT_STARTING) {
        check_ready(o, sl, now, wake);
        return;
    }
    if ((sl->state != SLOT_READY && sl->state != SLOT_BUSY) ||
        !o->cfg->resilience_enabled)
        return;
    /* Ask the stale policies twice per heartbeat interval, not at every
     * event: detection stays within half an interval of the threshold
     * while a busy loop does not call Lua per event. */
    if (now < sl->next_stale_check_mono_ns) {
        lower(wake, sl->next_stale_check_mono_ns);
        return;
    }
    int64_t period = o->cfg->heartbeat_interval_ns / 2;
    sl->next_stale_check_mono_ns =
        now + (period > ZERG_NS_PER_S ? ZERG_NS_PER_S : period);
    if (check_heartbeat(o, sl, now, wake) || sl->state != SLOT_BUSY)
        return;
    check_task(o, sl, now, wake);
}

int64_t orch_tick_workers(struct zerg_orch *o, int64_t now, int64_t wake)
{
    for (int i = 0; i < o->nslots; i++) {
        struct slot *sl = &o->slots[i];
        check_slot(o, sl, now, &wake);
        if (sl->state != SLOT_BACKOFF || orch_run_ending(o))
            continue;
        if (sl->spawn_at_mono_ns <= now)
            orch_slot_event(o, sl, SLOT_EV_SPAWN_DUE, NULL, now);
        else
            lower(&wake, sl->spawn_at_mono_ns);
    }
    return wake;
}
