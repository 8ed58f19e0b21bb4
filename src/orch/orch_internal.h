/* orch_internal.h - the orchestrator's private state, shared by
 * orchestrator.c (events and dispatch), orch_reconcile.c (state
 * reconciliation) and orch_loop.c (the real event loop). */
#ifndef ZERG_ORCH_INTERNAL_H
#define ZERG_ORCH_INTERNAL_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "zerg/clock.h"
#include "zerg/config.h"
#include "zerg/graph.h"
#include "zerg/launcher.h"
#include "zerg/log.h"
#include "zerg/orchestrator.h"
#include "zerg/policy.h"
#include "zerg/protocol.h"
#include "zerg/state.h"

/* Why the orchestrator itself killed a worker: decides how its exit is
 * handled. */
enum kill_reason {
    KILL_NONE,
    KILL_READY_TIMEOUT, /* never reported ready: a failed spawn */
    KILL_HB_STALE,      /* heartbeat stale: handled as a crash (FR-3) */
    KILL_TASK_TIMEOUT,  /* task stale: charged failure (FR-2) */
    KILL_STOP,          /* the rush is ending */
};

struct slot {
    int id;
    struct zerg_proc proc;
    int alive;               /* child not reaped yet */
    int ready;               /* first heartbeat seen */
    int want;                /* should be running (not retired/stopped) */
    enum kill_reason killed;
    int64_t spawned_at;      /* mono */
    int64_t spawn_at;        /* mono: next spawn allowed (backoff) */
    int64_t hb_seq;
    int64_t hb_change_at;    /* mono: last time the seq changed */
    char hb_step[24];
    int hb_pct;
    int hb_task_pgid;
    int64_t assigned_at;     /* mono: task assigned */
    int64_t progress_at;     /* mono: task start or last progress */
    int64_t next_stale_check;/* mono: policies are asked at most this often */
    int task;                /* graph index, -1 when idle */
    int task_seen;           /* a heartbeat showed the worker running it */
    char last_error[256];
};

struct zerg_orch {
    struct zerg_orch_opts o;
    const struct zerg_config *cfg;
    const struct zerg_graph *g;
    struct zerg_state *s;
    char state_dir[PATH_MAX];
    char state_path[PATH_MAX];

    struct slot *slots;
    int nslots;

    int64_t *retry_at;       /* mono time a waiting_retry task may run */
    int *applied_attempt;    /* per task: the attempt whose result was
                                applied last (0 = none) */
    size_t *level_cursor;    /* per level: first maybe-unfinished index */
    char **pending_unlink;   /* applied results to delete after a save */
    size_t nunlink, unlink_cap;

    int dirty;
    int replaying;           /* applying the journal on --resume */
    int64_t last_save;
    int64_t save_cost;       /* how long the last state write took */
    int64_t next_reconcile;
    int64_t next_lease;
    int64_t lease_seq;
    int64_t next_reload;
    int64_t next_hb_scan;
    int64_t started_mono;

    int stopping;            /* 1 graceful, 2 forced */
    int64_t stop_deadline;
    int finishing;           /* all work terminal: stopping workers */
    int finished;            /* final state written */
    int failed_run;          /* runtime failure (no workers left, ...) */
    char run_error[512];
    int warned_conflicts;
};

static inline struct zerg_task_state *orch_ts(struct zerg_orch *o, size_t t)
{
    return &o->s->tasks[t];
}
static inline const char *orch_tid(const struct zerg_orch *o, size_t t)
{
    return o->g->tasks[t].id;
}
static inline int64_t orch_wall_now(void)
{
    return zerg_clock_wall(&zerg_clock_system);
}

/* orchestrator.c: tasks, levels, dispatch, checkpoints. */
void orch_task_failure(struct zerg_orch *o, size_t t, const char *kind,
                       int exit_code, int sig, const char *error, int64_t now);
void orch_requeue(struct zerg_orch *o, size_t t, const char *why);
void orch_block_dependents(struct zerg_orch *o, size_t t);
int orch_worker_alive(const struct zerg_orch *o, int worker);
void orch_mark_dirty(struct zerg_orch *o);
void orch_checkpoint(struct zerg_orch *o, int64_t now, int force);

/* orch_workers.c: spawn, ready, exit, respawn, watchdogs. */
int orch_work_left(const struct zerg_orch *o);
void orch_slot_status(struct zerg_orch *o, struct slot *sl,
                      enum zerg_worker_status st);
void orch_worker_ready(struct zerg_orch *o, struct slot *sl, int64_t now);
void orch_kill_worker(struct zerg_orch *o, struct slot *sl,
                      enum kill_reason why, int sig);
int orch_live_slots(const struct zerg_orch *o);
void orch_stop_workers(struct zerg_orch *o, int sig);
/* Watchdogs and (re)spawns; returns the earliest wake-up it needs. */
int64_t orch_tick_workers(struct zerg_orch *o, int64_t now, int64_t wake);

/* Applies a result file if it matches the live assignment (1), else
 * fences it (0). */
int orch_apply_result(struct zerg_orch *o, const char *path, int64_t now);

/* orch_reconcile.c: applies every result-*.json in the state dir; returns
 * how many were applied. */
int orch_scan_results(struct zerg_orch *o, int64_t now);
/* Raises next_epoch past every epoch seen on disk; a fresh run removes
 * the previous run's result files. */
void orch_prepare_dir(struct zerg_orch *o);
/* Applies and removes a `zerg retry` request file. */
void orch_apply_retry_request(struct zerg_orch *o, const char *path,
                              int64_t now);

/* orch_reconcile.c: light (periodic) or thorough (level transition,
 * resume) reconciliation; returns the number of fixes applied. */
int orch_reconcile(struct zerg_orch *o, int thorough, int64_t now);

#endif
