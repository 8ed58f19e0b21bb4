/* orch_internal.h - the orchestrator's private state, shared by the files
 * of src/orch/.  They form layers, each calling only the ones below it:
 *
 *   orch_loop.c       the real event loop (poll over signalfd + inotify)
 *   orchestrator.c    new/free, tick, dispatch, levels, checkpoint, summary
 *   orch_intake.c     files from workers and `zerg retry`: heartbeats,
 *                     results (fencing, journal replay), retry requests
 *   orch_reconcile.c  snapshot -> reconcile.check -> validated fixes
 *   orch_slot.c       the worker-slot life cycle: state x event table
 *   orch_tasks.c      task moves with their log events (the leaf)
 *
 * Times carry their clock in their names: *_mono_ns from the monotonic
 * `now` every entry point takes, *_wall_ns from o->o.clock. */
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
#include "zerg/task_fsm.h"

#define ORCH_SEC(ns) ((double)(ns) / 1e9)
#define ORCH_MS(ns) ((double)(ns) / 1e6)

/* ---- the worker slot (orch_slot.c) ------------------------------------ */

enum slot_state {
    SLOT_BACKOFF,  /* not running; spawn_at_mono_ns says when to (re)spawn */
    SLOT_STARTING, /* spawned, no heartbeat yet */
    SLOT_READY,    /* idle */
    SLOT_BUSY,     /* running `task` */
    SLOT_KILLING,  /* we asked it to go (`kill` says why); awaiting exit */
    SLOT_STOPPED,  /* gone: the rush is ending or nothing is left to do */
    SLOT_RETIRED,  /* gone: respawn cap or spawn retries exhausted */
    SLOT_CRASHED,  /* gone: crashed with resilience disabled */
    SLOT_NSTATES
};

enum slot_event {
    SLOT_EV_SPAWN_DUE,     /* backoff over: start a worker */
    SLOT_EV_SPAWN_ERR,     /* the launcher could not start it */
    SLOT_EV_FIRST_HB,      /* first heartbeat of this incarnation */
    SLOT_EV_READY_TIMEOUT, /* no heartbeat within spawn_ready_timeout */
    SLOT_EV_ASSIGN,        /* dispatch gave it a task */
    SLOT_EV_TASK_DONE,     /* its task's result was applied or lost */
    SLOT_EV_HB_STALE,      /* stale.worker said its heartbeat is stale */
    SLOT_EV_TASK_STALE,    /* stale.task said its task made no progress */
    SLOT_EV_STOP,          /* the rush is ending (arg sig: 0 = ask) */
    SLOT_EV_CHILD_EXIT,    /* the launcher reaped it */
    SLOT_EV_REVIVE,        /* work came back (`zerg retry`) after a stop */
    SLOT_NEVENTS
};

/* Why the orchestrator itself killed a worker: decides how its exit is
 * handled. */
enum kill_reason {
    KILL_NONE,
    KILL_READY_TIMEOUT, /* never reported ready: a failed spawn */
    KILL_HB_STALE,      /* heartbeat stale: handled as a crash (FR-3) */
    KILL_TASK_TIMEOUT,  /* task stale: charged failure (FR-2) */
    KILL_STOP,          /* the rush is ending */
};

/* What an event carries; each event reads only its own fields. */
struct slot_ev_arg {
    const char *error;                 /* SPAWN_ERR */
    int permanent;                     /* SPAWN_ERR */
    size_t task;                       /* ASSIGN */
    int sig;                           /* STOP */
    const struct zerg_exit_info *exit; /* CHILD_EXIT */
};

struct slot {
    int id;
    enum slot_state state;       /* the only truth about the slot */
    enum kill_reason kill;       /* KILLING: why */
    enum slot_state killed_from; /* KILLING: the state it was killed in */
    struct zerg_proc proc;
    int64_t spawned_at_mono_ns;
    int64_t spawn_at_mono_ns; /* BACKOFF: next spawn allowed */
    int64_t hb_seq;
    int64_t hb_change_at_mono_ns; /* last time the seq changed */
    char hb_step[24];
    int hb_pct;
    int64_t hb_progress_seq; /* the worker's output-progress counter */
    int hb_task_pgid;
    int64_t assigned_at_mono_ns;      /* task assigned */
    int64_t progress_at_mono_ns;      /* task start or last progress */
    int64_t next_stale_check_mono_ns; /* policies asked at most this often */
    int task;                         /* graph index, -1 when idle */
    char last_error[256];
};

/* A child process exists (not reaped yet). */
static inline int slot_alive(const struct slot *sl)
{
    return sl->state >= SLOT_STARTING && sl->state <= SLOT_KILLING;
}

/* This incarnation has sent its first heartbeat. */
static inline int slot_ready(const struct slot *sl)
{
    enum slot_state s = sl->state == SLOT_KILLING ? sl->killed_from : sl->state;
    return s == SLOT_READY || s == SLOT_BUSY;
}

/* Still part of the pool: running, or waiting to be (re)spawned. */
static inline int slot_in_pool(const struct slot *sl)
{
    return sl->state <= SLOT_KILLING;
}

struct zerg_orch {
    struct zerg_orch_opts o;
    const struct zerg_config *cfg;
    const struct zerg_graph *g;
    struct zerg_state *s;
    char state_dir[PATH_MAX];  /* .zerg/state */
    char state_path[PATH_MAX]; /* .zerg/state/{feature}.json */
    char run_dir[PATH_MAX];    /* .zerg/state/{feature}/: the run's files */

    struct slot *slots;
    int nslots;

    int64_t *retry_at_mono_ns; /* when a requeued task may run again */
    int *applied_attempt;      /* per task: the attempt whose result was
                                  applied last (0 = none) */
    size_t *level_cursor;      /* per level: first maybe-unfinished index */
    int *wgroup_running;       /* per write group: running tasks in it */
    char **pending_unlink;     /* applied results to delete after a save */
    size_t nunlink, unlink_cap;

    int dirty;
    int replaying; /* applying the journal on --resume */
    int64_t last_save_mono_ns;
    int64_t save_cost_ns; /* how long the last state write took */
    int64_t next_reconcile_mono_ns;
    int64_t next_lease_mono_ns;
    int64_t lease_seq;
    int64_t next_reload_mono_ns;
    int64_t next_hb_scan_mono_ns;
    int64_t started_mono_ns;

    int stopping;    /* 1 graceful, 2 forced */
    int stop_signal; /* the signal that asked for the stop, 0 = none */
    int64_t stop_deadline_mono_ns;
    int finishing;  /* all work terminal: stopping workers */
    int finished;   /* final state written */
    int failed_run; /* runtime failure (no workers left, ...) */
    char run_error[512];

    char ws_tip[ZERG_OID_MAX]; /* worktree isolation: the integration tip */
    int budget_exhausted;      /* rush.max_cost_usd reached */
    int rate_limits;           /* rate limits seen (the backoff grows) */
    int64_t pool_paused_until_mono_ns; /* 0 = not paused */
    pid_t gate_pid;            /* the running quality gate, 0 = none */
    size_t gate_idx;           /* next gate of gate_level to run */
    int gate_level;
    int gate_failed;           /* a required gate failed: the run ends */
    int64_t gate_started_mono_ns, gate_deadline_mono_ns;

    /* orch_halt.c: --halt and rush.timeout_seconds */
    int halt_verdict;        /* enum orch_halt_verdict reached so far */
    int halt_armed;          /* halt_failed_base was taken */
    size_t halt_failed_base; /* tasks already failed when the rush began */
    size_t halt_failed;      /* failed in this rush when it halted */
};

static inline struct zerg_task_state *orch_ts(struct zerg_orch *o, size_t t)
{
    return &o->s->tasks[t];
}
static inline const char *orch_tid(const struct zerg_orch *o, size_t t)
{
    return o->g->tasks[t].id;
}
static inline int64_t orch_wall_ns(const struct zerg_orch *o)
{
    return zerg_clock_wall(o->o.clock);
}
static inline void orch_mark_dirty(struct zerg_orch *o)
{
    o->dirty = 1;
}

/* ---- orch_tasks.c: task moves with their log events ------------------- */

/* Applies a move of task t through the task table; an illegal one is
 * refused and logged (task_move_refused).  Returns 0 or negative. */
int orch_task_move(struct zerg_orch *o, size_t t, enum zerg_task_event ev,
                   const struct zerg_task_move *m);
/* A failure of running task t: asks retry.decide and applies it. */
void orch_task_failure(struct zerg_orch *o, size_t t, const char *kind,
                       int exit_code, int sig, const char *error, int64_t now);
/* The same with the failure class the worker found (NULL = from kind). */
void orch_task_failure_cls(struct zerg_orch *o, size_t t, const char *kind,
                           const char *cls, int exit_code, int sig,
                           const char *error, int64_t now);
/* Back to pending without charging anything (crash, stop, reconcile). */
void orch_requeue(struct zerg_orch *o, size_t t, const char *why);
void orch_task_complete(struct zerg_orch *o, size_t t);
/* Fails task t at once, without asking retry.decide (a conflict budget
 * spent, a broken repository). */
void orch_task_fail_now(struct zerg_orch *o, size_t t, const char *reason,
                        const char *error);
/* Resume: task t's work is known to be done (merged, or committed and
 * merged now): complete, whatever the state last said. */
void orch_task_adopt_complete(struct zerg_orch *o, size_t t, int attempt,
                              const char *why);
void orch_task_started(struct zerg_orch *o, size_t t, int worker, int pgid);
/* Blocks every queued task with a failed or blocked dependency. */
void orch_block_dependents(struct zerg_orch *o);
/* Any task level became unfinished again: level cursors rewind. */
void orch_level_reopened(struct zerg_orch *o, size_t t);
/* Claimed or in progress: holds its write groups. */
static inline int orch_task_running(enum zerg_task_status s)
{
    return s == ZERG_TASK_CLAIMED || s == ZERG_TASK_IN_PROGRESS;
}
/* Adds d to the running count of each write group of task t. */
void orch_wgroups_add(struct zerg_orch *o, size_t t, int d);

/* ---- orch_slot.c: the slot table -------------------------------------- */

void orch_slot_event(struct zerg_orch *o, struct slot *sl, enum slot_event ev,
                     const struct slot_ev_arg *arg, int64_t now);
/* Watchdogs and due spawns; returns the earliest wake-up it needs. */
int64_t orch_tick_workers(struct zerg_orch *o, int64_t now, int64_t wake);
/* STOP to every slot (sig 0: ask through the assignment file). */
void orch_stop_workers(struct zerg_orch *o, int sig, int64_t now);
/* REVIVE to every slot: the rush was finishing and has work again. */
void orch_revive_workers(struct zerg_orch *o, int64_t now);
int orch_live_slots(const struct zerg_orch *o);
int orch_any_alive(const struct zerg_orch *o);
/* 1 when worker `w` is alive and assigned task t. */
int orch_slot_runs(const struct zerg_orch *o, int w, size_t t);
/* The table as Markdown, for the docs (like snprintf). */
int orch_slot_table_markdown(char *buf, size_t size);
const char *orch_slot_state_name(enum slot_state s);

/* ---- orch_merge.c: the merge queue (worktree isolation) --------------- */

/* All no-ops without a workspace. */
int orch_ws_refresh_tip(struct zerg_orch *o, struct zerg_err *err);
void orch_ws_assign_base(const struct zerg_orch *o, struct zerg_assign *a);
int orch_ws_worktree(struct zerg_orch *o, int slot, char *dir, size_t n,
                     char *cwd, size_t cwd_n, struct zerg_err *err);
/* A passing result with a commit: scope, then merge.  1 = merged (or
 * nothing to merge): complete it; 0 = handled here (conflict, scope
 * failure, broken repository). */
int orch_merge_result(struct zerg_orch *o, size_t t,
                      const struct zerg_result *r, int64_t now);
/* --resume: what the integration branch and the worker branches say. */
void orch_merge_resume(struct zerg_orch *o, int64_t now);

/* ---- orch_pool.c: environment failures, rate limits, spend ------------ */

/* Adds a result's spend to task t; may exhaust rush.max_cost_usd. */
void orch_pool_add_cost(struct zerg_orch *o, size_t t,
                        const struct zerg_result *r);
/* A failed result of class environment (stop the rush) or rate_limit
 * (pause the pool): 1 when handled here, uncharged. */
int orch_pool_failure(struct zerg_orch *o, size_t t,
                      const struct zerg_result *r, int64_t now);
/* 1 while no task may be claimed (paused, or the spend cap reached);
 * *wake lowered to the pause's end. */
int orch_pool_closed(struct zerg_orch *o, int64_t now, int64_t *wake);

/* ---- orch_gate.c: quality gates after each merged level --------------- */

/* 1 when level lvl's gates all passed (or there are none); 0 while one
 * runs (wake lowered to poll it) or after a required one failed (the run
 * is stopping). */
int orch_gates_passed(struct zerg_orch *o, int lvl, int64_t now,
                      int64_t *wake);
/* Kills a running gate (the rush is stopping). */
void orch_gate_abort(struct zerg_orch *o);

/* ---- orch_reconcile.c ------------------------------------------------- */

/* Light (periodic) or thorough (level transition, resume) reconciliation;
 * returns the number of fixes applied. */
int orch_reconcile(struct zerg_orch *o, int thorough, int64_t now);

/* ---- orch_intake.c: files from workers and from `zerg retry` ---------- */

void orch_on_heartbeat(struct zerg_orch *o, int slot, int64_t now);
/* Applies a result file if it matches the live assignment (1), else
 * fences it (0). */
int orch_apply_result(struct zerg_orch *o, const char *path, int64_t now);
/* Applies every result-*.json in the state dir; returns how many. */
int orch_scan_results(struct zerg_orch *o, int64_t now);
/* --resume: the journal replay, then a thorough reconciliation. */
void orch_resume_results(struct zerg_orch *o, int64_t now);
/* Creates the run dir (refusing a symlink), raises next_epoch past every
 * epoch seen on disk and the wall clock in microseconds; a fresh run
 * removes the previous run's result files.  0 or negative with err set. */
int orch_prepare_dir(struct zerg_orch *o, struct zerg_err *err);
/* Applies and removes a `zerg retry` request file. */
void orch_apply_retry_request(struct zerg_orch *o, const char *path,
                              int64_t now);
/* Deletes the results applied before the checkpoint that just landed. */
void orch_flush_unlinks(struct zerg_orch *o);

/* ---- orchestrator.c --------------------------------------------------- */

void orch_checkpoint(struct zerg_orch *o, int64_t now, int force);

/* ---- orch_halt.c: --halt and rush.timeout_seconds ---------------------- */

/* Ordered: a later verdict overrides an earlier one (a draining SOON can
 * still run out of time). */
enum orch_halt_verdict {
    ORCH_HALT_GO,      /* keep running */
    ORCH_HALT_SOON,    /* no new claims; stop once nothing runs */
    ORCH_HALT_NOW,     /* stop now, killing the running tasks */
    ORCH_HALT_TIMEOUT, /* the wall budget is spent: stop now */
};
/* Failed tasks that trigger h on a graph of ntasks (0 for NEVER). */
size_t orch_halt_threshold(const struct zerg_halt *h, size_t ntasks);
/* The pure decision: `failed` tasks failed in this rush, `elapsed_ns` since
 * it began, timeout_ns 0 = none. */
enum orch_halt_verdict orch_halt_decide(const struct zerg_halt *h,
                                        size_t failed, size_t ntasks,
                                        int64_t elapsed_ns,
                                        int64_t timeout_ns);
/* Called by the tick before dispatch: applies the decision (logs
 * rush_halt / rush_timeout, stops through zerg_orch_request_stop) and
 * lowers *wake to the timeout.  1 when no task may be claimed now. */
int orch_halt_tick(struct zerg_orch *o, int64_t now, int64_t *wake);
/* The summary's sentence about a halt or a timeout; 0 (nothing written)
 * when the rush was not ended by either. */
int orch_halt_summary(const struct zerg_orch *o, char *buf, size_t size);

#endif
