/* orch_internal.h - the orchestrator's private state, shared by the files
 * of src/orch/.  They form layers, each calling only the ones below it:
 *
 *   orch_loop.c       the real event loop (poll over signalfd + inotify)
 *   orchestrator.c    new/free, tick, dispatch, levels, checkpoint
 *   orch_intake.c     files from workers and `zerg retry`: heartbeats,
 *                     results (fencing, journal replay), retry requests
 *   orch_reconcile.c  snapshot -> reconcile.check -> validated fixes
 *   orch_slot.c       the worker-slot life cycle: state x event table
 *   orch_watch.c      the watchdogs: the slot events time raises
 *   orch_summary.c    the paragraph a rush ends with
 *   orch_tasks.c      task moves with their log events (the leaf)
 *   orch_dag.c        rush.schedule dag: the ready set (told of every move)
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
#include "zerg/level_fsm.h"
#include "zerg/log.h"
#include "zerg/orchestrator.h"
#include "zerg/policy.h"
#include "zerg/protocol.h"
#include "zerg/state.h"
#include "zerg/task_fsm.h"

#define ORCH_SEC(ns) ((double)(ns) / 1e9)
#define ORCH_MS(ns) ((double)(ns) / 1e6)
/* A graceful stop: how long after workers.stop_grace_seconds the
 * orchestrator kills the workers still alive (each kills its own task at
 * the grace and exits). */
#define ORCH_STOP_MARGIN_NS (2 * ZERG_NS_PER_S)

/* ---- the worker slot (orch_slot.c) ------------------------------------ */

enum slot_state {
    SLOT_BACKOFF,  /* not running; spawn_at_mono_ns says when to (re)spawn */
    SLOT_STARTING, /* spawned, no heartbeat yet */
    SLOT_READY,    /* idle */
    SLOT_BUSY,     /* running `task` */
    /* Asked to go, awaiting the exit; each says what the exit means. */
    SLOT_STOPPING,        /* the rush stops or finishes: a stop */
    SLOT_KILLING_UNREADY, /* no first heartbeat in time: a failed spawn */
    SLOT_KILLING_STALE,   /* its heartbeat went stale: a crash (FR-3) */
    SLOT_KILLING_TIMEOUT, /* its task made no progress: charged (FR-2) */
    SLOT_STOPPED,         /* gone: the rush is ending or nothing is left */
    SLOT_RETIRED,         /* gone: respawn cap or spawn retries exhausted */
    SLOT_CRASHED,         /* gone: crashed with resilience disabled */
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
    enum slot_state state; /* the only truth about the slot */
    int ready;             /* this incarnation sent its first heartbeat */
    struct zerg_proc proc;
    int64_t spawned_at_mono_ns;
    int64_t spawn_at_mono_ns; /* BACKOFF: next spawn allowed */
    int64_t hb_seq;
    int64_t hb_change_at_mono_ns; /* last time the seq changed */
    char hb_step[24];
    int hb_pct;
    char hb_activity[80]; /* the agent's last tool call, its heartbeat's */
    int64_t hb_tool_calls;
    int64_t hb_progress_seq; /* the worker's output-progress counter */
    /* The running attempt's spend as its heartbeats last said (DESIGN
     * §20): charged when the attempt ends without a result. */
    struct zerg_result spend;
    uint64_t hb_lines_epoch; /* heartbeats of this epoch arrive by line */
    int hb_task_pgid;
    int64_t assigned_at_mono_ns;      /* task assigned */
    int64_t progress_at_mono_ns;      /* task start or last progress */
    int64_t next_stale_check_mono_ns; /* policies asked at most this often */
    int task;                         /* graph index, -1 when idle */
    char last_error[256];
    /* The last result its stdout line applied, (task, attempt), whose
     * file's inotify event is still to come: that event is the same
     * result, skipped unread (orch_intake.c).  line_attempt 0 = none. */
    size_t line_task;
    int line_attempt;
};

/* A child process exists (not reaped yet). */
static inline int slot_alive(const struct slot *sl)
{
    return sl->state >= SLOT_STARTING && sl->state <= SLOT_KILLING_TIMEOUT;
}

/* Alive and asked to go: its exit is awaited. */
static inline int slot_going(const struct slot *sl)
{
    return sl->state >= SLOT_STOPPING && sl->state <= SLOT_KILLING_TIMEOUT;
}

/* Alive, and this incarnation has sent its first heartbeat. */
static inline int slot_ready(const struct slot *sl)
{
    return slot_alive(sl) && sl->ready;
}

/* Still part of the pool: running, or waiting to be (re)spawned. */
static inline int slot_in_pool(const struct slot *sl)
{
    return sl->state <= SLOT_KILLING_TIMEOUT;
}

#define ORCH_CONFIG_NOTES 16 /* tasks the summary names as config changes */

/* The run life cycle (orch_run.c has the table and what each state
 * means).  The order matters: from FINISHING on the rush is ending. */
enum run_state {
    RUN_ACTIVE,
    RUN_CLOSED,
    RUN_FINISHING,
    RUN_STOPPING,
    RUN_KILLING,
    RUN_SAVING,
    RUN_DONE,
    RUN_NSTATES
};
enum run_event {
    RUN_EV_CLOSE,     /* no new claim from now on */
    RUN_EV_IDLE,      /* no task is running */
    RUN_EV_ALL_ENDED, /* past the last level, or no worker is left */
    RUN_EV_REOPEN,    /* zerg retry requeued arg tasks */
    RUN_EV_STOP,      /* a graceful stop was asked */
    RUN_EV_FORCE,     /* a forced stop was asked */
    RUN_EV_DEADLINE,  /* the ending's deadline passed */
    RUN_EV_GONE,      /* no worker is alive */
    RUN_EV_SAVED,     /* the last checkpoint was written, or given up */
    RUN_NEVENTS
};

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

    int64_t *retry_at_mono_ns;    /* when a requeued task may run again */
    int *applied_attempt;         /* per task: the attempt whose result was
                                     applied last (0 = none) */
    unsigned char *resume_next;   /* per task: its next attempt continues
                                     the agent's session (DESIGN §21) */
    size_t *level_cursor;         /* per level: first maybe-unfinished index */
    int *wgroup_running;          /* per write group: running tasks in it */
    struct zerg_offload *offload; /* opts.offload_io; NULL: inline */
    char **pending_unlink;        /* applied results to delete after a save */
    size_t nunlink, unlink_cap;
    size_t nsynced; /* pending_unlink[0..nsynced) are durable */
    int64_t last_sync_mono_ns, sync_cost_ns; /* state.durability: batch */
    int syncs;            /* batch syncs done (the power-loss hook) */
    uint64_t sync_ticket; /* the offloaded sync in flight, or 0 */
    size_t sync_upto;     /* ... which makes [0..sync_upto) durable */

    int dirty;
    int replaying; /* applying the journal on --resume */
    int64_t last_save_mono_ns;
    int64_t save_cost_ns; /* how long the last state write took */
    /* The checkpoint written by a child process (orch_save.c): its pid
     * (0: none running), when it began, the change count it holds
     * (dirty_gen counts orch_mark_dirty calls), how many results of
     * pending_unlink it records, whether another was asked for
     * meanwhile, and the level_start events that wait for it. */
    pid_t save_pid;
    int save_fd; /* the child's sync time comes through it (save_pid > 0) */
    int64_t save_t0_ns;
    uint64_t dirty_gen, save_gen;
    size_t save_unlinks;
    int save_again;
    struct orch_announce {
        int level;
        uint64_t gen;
    } * announce;
    size_t nannounce;
    int64_t next_reconcile_mono_ns;
    int64_t next_lease_mono_ns;
    int64_t lease_seq;
    int64_t next_reload_mono_ns;
    int64_t next_hb_scan_mono_ns;
    int64_t started_mono_ns;

    enum run_state run_state; /* orch_run.c: the run life cycle */
    int stop_asked;           /* a stop was asked: 1 graceful, 2 forced */
    int stop_signal;          /* the signal that asked for the stop, 0 = none */
    int64_t stop_deadline_mono_ns;    /* the ending's next SIGKILL */
    int64_t final_save_since_mono_ns; /* the run's last checkpoint first
                                         failed then; 0 = it has not */
    int failed_run;      /* orch_run_fail: the run cannot succeed */
    char run_error[512]; /* ... and why */

    char ws_tip[ZERG_OID_MAX]; /* worktree isolation: the integration tip */
    /* The tree of the tip ws_tree_of, as the merge that made it said;
     * passed on only while that is still ws_tip. */
    char ws_tip_tree[ZERG_OID_MAX], ws_tree_of[ZERG_OID_MAX];
    /* orch_review.c: rush.review */
    char review_dir[PATH_MAX];   /* .zerg/review/{feature} */
    size_t awaiting;             /* tasks awaiting review */
    int64_t next_review_mono_ns; /* the next look at review_dir */
    int review_said;             /* review_waiting said for this wait */
    int budget_exhausted;        /* rush.max_cost_usd reached */
    double spent_usd;            /* the run's agent spend; < 0 = not summed */
    int rate_limits;             /* rate limits seen (the backoff grows) */
    int64_t pool_paused_until_mono_ns; /* 0 = not paused */
    pid_t gate_pid;                    /* the running quality gate, 0 = none */
    char gate_handle[160]; /* its container's name, "" on the host */
    size_t gate_idx;       /* next gate of gate_level to run */
    int gate_level;
    int gate_failed; /* a required gate failed: the run ends */
    int64_t gate_started_mono_ns, gate_deadline_mono_ns;

    /* orch_halt.c: --halt and rush.timeout_seconds */
    int halt_verdict;        /* enum orch_halt_verdict reached so far */
    int halt_armed;          /* halt_failed_base was taken */
    size_t halt_failed_base; /* tasks already failed when the rush began */
    size_t halt_failed;      /* failed in this rush when it halted */

    struct orch_dag *dag; /* orch_dag.c: rush.schedule dag; NULL = levels */

    /* orch_outputs.c: what the summary says of the outputs (this run) */
    struct {
        size_t task;
        char reason[256];
    } config_notes[ORCH_CONFIG_NOTES]; /* scope.config warned */
    size_t nconfig_notes, config_notes_dropped;
    long forced_files, ignored_files, ignored_tasks;
    char forced_first[256], ignored_first[256]; /* the first of each */
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
    o->dirty_gen++;
}

/* ---- orch_tasks.c: task moves with their log events ------------------- */

/* Applies a move of task t through the task table; an illegal one is
 * refused and logged (task_move_refused).  Returns 0 or negative. */
int orch_task_move(struct zerg_orch *o, size_t t, enum zerg_task_event ev,
                   const struct zerg_task_move *m);
/* A failure of running task t: asks retry.decide and applies it; cls is
 * the failure class the worker found (NULL = from kind). */
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
/* Resume: task t's attempt finished unseen (its commit found at a
 * worker branch's head): running again, as the journal would have said.
 * 0, or the refusal. */
int orch_task_adopt(struct zerg_orch *o, size_t t, int attempt);
/* Resume: task t's work is known to be done (merged, or committed and
 * merged now): complete, whatever the state last said. */
void orch_task_adopt_complete(struct zerg_orch *o, size_t t, int attempt,
                              const char *why);
void orch_task_started(struct zerg_orch *o, size_t t, int worker, int pgid);
/* A retry's assignment says what went wrong last time (for the prompt). */
void orch_retry_context(const struct zerg_orch *o, size_t t,
                        struct zerg_assign *a);
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
/* orch_watch.c: watchdogs and due spawns; returns the earliest wake-up
 * it needs. */
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

/* ---- orch_attempt.c: how an attempt ends ------------------------------ */

/* What the end of an attempt means for its task.  It is found once, from
 * a result (orch_attempt_result, which asks orch_outputs.c, orch_merge.c
 * and orch_pool.c in turn) or from its worker's exit (orch_slot.c), and
 * applied by orch_attempt_end, the one place an ended attempt moves its
 * task. */
enum verdict_kind {
    VERDICT_COMPLETE, /* it passed (and is merged): complete */
    VERDICT_FAILED,   /* a failure: retry.decide says what it costs */
    VERDICT_REQUEUE,  /* to run again, uncharged, no policy asked */
    VERDICT_FAIL_NOW, /* failed for good, no policy asked */
    VERDICT_REVIEW,   /* it passed, its commit kept: awaiting_review */
};
struct verdict {
    enum verdict_kind kind;
    const char *failure; /* FAILED: the kind retry.decide sees; FAIL_NOW:
                            the reason recorded */
    const char *cls;     /* FAILED: the worker's class, NULL = the kind's */
    int exit_code, sig;  /* FAILED */
    char error[512];     /* FAILED, FAIL_NOW: what happened; REQUEUE: why */
    int resume;          /* REQUEUE: the next attempt continues the agent's
                            session (a stop, a rate limit) */
    int stop_run;        /* the run stops afterwards (orch_run_fail said
                            why) */
};

/* The finders' words: each fills v and returns 0 ("the verdict is
 * found"), so a check reads `if (!ok) return orch_verdict_...`. */
int orch_verdict_failed(struct verdict *v, const char *failure, const char *cls,
                        int exit_code, int sig, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
int orch_verdict_requeue(struct verdict *v, const char *why);
int orch_verdict_fail_now(struct verdict *v, const char *reason,
                          const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A live result r of task t (sl: the slot that ran it, or NULL): its
 * verdict, then orch_attempt_end.  0 when it is left to the worker's
 * exit (a failing result from a worker being killed or stopped). */
int orch_attempt_result(struct zerg_orch *o, size_t t,
                        const struct zerg_result *r, struct slot *sl,
                        int64_t now);
/* The dispatch: the task's move and its event, then (sl) the slot told
 * its task is done, then (v->stop_run) the run's stop.  r: the result
 * for a COMPLETE or REVIEW verdict. */
void orch_attempt_end(struct zerg_orch *o, size_t t, const struct verdict *v,
                      const struct zerg_result *r, struct slot *sl,
                      int64_t now);
/* Task t complete by ev (COMPLETE, or APPROVE after review): the move,
 * task_complete and what its outputs left out. */
void orch_attempt_completed(struct zerg_orch *o, size_t t,
                            const struct zerg_result *r,
                            enum zerg_task_event ev);

/* ---- orch_run.c: the run table ---------------------------------------- */

void orch_run_event(struct zerg_orch *o, enum run_event ev, int arg,
                    int64_t now);
/* The run cannot succeed: why (printf-style); the last one said wins. */
void orch_run_fail(struct zerg_orch *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The tick from FINISHING on; returns the earliest wake-up it needs. */
int64_t orch_run_tick_ending(struct zerg_orch *o, int64_t now, int64_t wake);
/* 1 from FINISHING on: no worker is wanted any more. */
int orch_run_ending(const struct zerg_orch *o);
/* The run's status in the state document ("running", "stopped", ...). */
void orch_run_status(struct zerg_orch *o, const char *status);
int orch_run_table_markdown(char *buf, size_t size);
const char *orch_run_state_name(enum run_state s);

/* ---- orch_merge.c: the merge queue (worktree isolation) --------------- */

/* All no-ops without a workspace. */
int orch_ws_refresh_tip(struct zerg_orch *o, struct zerg_err *err);
void orch_ws_assign_base(const struct zerg_orch *o, struct zerg_assign *a);
int orch_ws_worktree(struct zerg_orch *o, int slot, char *dir, size_t n,
                     char *cwd, size_t cwd_n, struct zerg_err *err);
/* A passing result with a commit: taken, its scope, then merged.  1 =
 * merged (or nothing to merge): complete it; 0 = *v found (a conflict, a
 * scope failure, a broken or held repository). */
int orch_merge_result(struct zerg_orch *o, size_t t,
                      const struct zerg_result *r, struct verdict *v,
                      int64_t now);
/* The merge itself of r's commit (checked already): 1 = merged, 0 = *v
 * found (a conflict: REQUEUE or FAIL_NOW; a held branch: REQUEUE with
 * stop_run; a broken repository: FAIL_NOW with stop_run).  t0: when the
 * orchestrator took the commit up (monotonic), for merge_complete's ms. */
int orch_merge_commit(struct zerg_orch *o, size_t t,
                      const struct zerg_result *r, struct verdict *v,
                      int64_t t0);

/* ---- orch_review.c: review before merge (rush.review) ----------------- */

/* 1 when a passing commit waits for review instead of being merged. */
int orch_review_applies(const struct zerg_orch *o);
/* Keeps r's commit at its review ref: 0 with *v REVIEW (or FAILED when
 * it cannot be kept). */
int orch_review_hold(struct zerg_orch *o, const struct zerg_result *r,
                     struct verdict *v);
/* The REVIEW dispatch: the task waits as awaiting_review. */
void orch_review_await(struct zerg_orch *o, size_t t,
                       const struct zerg_result *r, int64_t now);
/* While tasks wait: the reviewer's requests applied, and once nothing
 * runs, review_waiting said.  Returns wake, lowered to the next look. */
int64_t orch_review_tick(struct zerg_orch *o, int64_t now, int64_t wake);
/* Counts the tasks awaiting review (start, or a state changed wholesale). */
void orch_review_count(struct zerg_orch *o);
/* 1 while some slot runs a task. */
int orch_running_tasks(const struct zerg_orch *o);
/* --resume: what the integration branch and the worker branches say. */
void orch_merge_resume(struct zerg_orch *o, int64_t now);

/* ---- orch_outputs.c: what an attempt produced (DESIGN §18) ----------- */

/* A passing result's missing declared outputs, asked of scope.missing:
 * 1 = go on, 0 = *v found (missing_output, charged). */
int orch_outputs_check(struct zerg_orch *o, size_t t,
                       const struct zerg_result *r, struct verdict *v);
/* The paths its commit changed (one a line, NULL = unknown) that are
 * zerg's own configuration, asked of scope.config: 1 = go on (flagged
 * for the summary on "warn"), 0 = *v found (config_change). */
int orch_outputs_config(struct zerg_orch *o, size_t t,
                        const struct zerg_result *r, const char *paths,
                        struct verdict *v);
/* A completed task's forced and left-out ignored files: events and the
 * summary's counts. */
void orch_outputs_landed(struct zerg_orch *o, const struct zerg_result *r);

/* ---- orch_pool.c: environment failures, rate limits, spend ------------ */

/* A slot's attempt ended without a result (killed, crashed, stopped):
 * the spend its heartbeats reported is added to its task. */
void orch_pool_add_unfinished(struct zerg_orch *o, struct slot *sl);
/* rush.max_cost_usd against the recorded spend plus what running
 * attempts report (heartbeats): once reached, no new claims, and with
 * rush.cost_cap_action: stop a graceful stop of the running ones. */
void orch_pool_check_cap(struct zerg_orch *o, int64_t now);
/* Adds a result's spend to task t; may exhaust rush.max_cost_usd. */
void orch_pool_add_cost(struct zerg_orch *o, size_t t,
                        const struct zerg_result *r);
/* A failed result of class environment (the run stops) or rate_limit
 * (the pool pauses): 0 = *v found (requeued, uncharged), 1 = the task's
 * own failure. */
int orch_pool_failure(struct zerg_orch *o, const struct zerg_result *r,
                      struct verdict *v, int64_t now);
/* 1 while no task may be claimed (paused, or the spend cap reached);
 * *wake lowered to the pause's end. */
int orch_pool_closed(struct zerg_orch *o, int64_t now, int64_t *wake);

/* ---- orch_gate.c: quality gates after each merged level --------------- */

/* 1 when level lvl's gates all passed (or there are none); 0 while one
 * runs (wake lowered to poll it) or after a required one failed (the run
 * is stopping). */
int orch_gates_passed(struct zerg_orch *o, int lvl, int64_t now, int64_t *wake);
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
/* ---- orch_save.c: the checkpoint written by a child process ---------- */

/* Forks the child that writes the state as it is now; 0, or -errno when
 * it could not (the caller then writes it itself). */
int orch_save_start(struct zerg_orch *o, int64_t now);
/* The child's end, if it has ended (wait: once it has): its results
 * deleted and its level_start events said, or the failure logged. */
void orch_save_reap(struct zerg_orch *o, int wait);
/* level_start of lvl: now when no child is writing, else once the
 * checkpoint holding it is durable. */
void orch_save_announce(struct zerg_orch *o, int lvl);
/* Says the waiting level_start events of the changes up to gen. */
void orch_save_announced(struct zerg_orch *o, uint64_t gen);
/* Waits for a child still writing; drops what never became durable. */
void orch_save_close(struct zerg_orch *o);
/* The level_start and level_complete events (orchestrator.c). */
void orch_level_log(struct zerg_orch *o, const char *event, int lvl);

/* Checkpoint kinds (orch_checkpoint): when due, now (in a child process
 * where there is one), now and here. */
enum { ORCH_SAVE_DUE, ORCH_SAVE_NOW, ORCH_SAVE_WAIT };

/* Deletes the results applied before the checkpoint that just landed. */
void orch_flush_unlinks(struct zerg_orch *o, size_t n); /* the first n */
/* state.durability: batch: makes the results applied since the last sync
 * durable with one sync once the batch window (10 ms, at least 4x the
 * last sync's cost) has passed: on the offload thread when there is one
 * (the batch counts as durable once a later call sees it done), else
 * here.  force: now, and here, after any sync in flight; on return every
 * applied result is durable.  0 (also when nothing was to be done or
 * under full, where workers synced them) or -errno. */
int orch_sync_results(struct zerg_orch *o, int64_t now, int force);

/* ---- orchestrator.c --------------------------------------------------- */

/* 0, or negative when the checkpoint written here (ORCH_SAVE_WAIT, or no
 * child) failed: the old file is intact and the results stay on disk. */
int orch_checkpoint(struct zerg_orch *o, int64_t now, int force);

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
                                        int64_t elapsed_ns, int64_t timeout_ns);
/* Called by the tick before dispatch: applies the decision (logs
 * rush_halt / rush_timeout, stops through zerg_orch_request_stop) and
 * lowers *wake to the timeout.  1 when no task may be claimed now. */
int orch_halt_tick(struct zerg_orch *o, int64_t now, int64_t *wake);
/* The summary's sentence about a halt or a timeout; 0 (nothing written)
 * when the rush was not ended by either. */
int orch_halt_summary(const struct zerg_orch *o, char *buf, size_t size);

/* ---- orch_dag.c: rush.schedule dag, the ready set ---------------------- */

/* Builds the ready set from the task states when o->o.schedule is DAG
 * (else does nothing, o->dag stays NULL).  0 or -ENOMEM. */
int orch_dag_new(struct zerg_orch *o);
void orch_dag_free(struct zerg_orch *o);
/* Recounts every task's unfinished dependencies and refills the set from
 * the states (statuses changed outside orch_task_move). */
void orch_dag_rescan(struct zerg_orch *o);
/* Task t moved from status `from` (orch_task_move): dependents of a task
 * that became complete may become ready; t itself may be ready again. */
void orch_dag_moved(struct zerg_orch *o, size_t t, enum zerg_task_status from);
/* t enters the set if it is claimable and its dependencies are complete. */
void orch_dag_offer(struct zerg_orch *o, size_t t);
/* The preferred ready task, taken out of the set, or -1. */
ssize_t orch_dag_pop(struct zerg_orch *o);
/* A popped task that may not start now: back in the set at settle. */
void orch_dag_hold(struct zerg_orch *o, size_t t);
void orch_dag_settle(struct zerg_orch *o);
/* 1 while a running task writes a path task t writes, at any level. */
int orch_dag_conflict(const struct zerg_orch *o, size_t t);
/* Tasks in the set (some may be stale until popped). */
size_t orch_dag_ready(const struct zerg_orch *o);

/* ---- orch_intake.c: the same intake for lines from a worker's stdout -- */

/* A heartbeat of slot however it came (orch_on_heartbeat reads its file);
 * fenced by epoch, and by seq (only newer beats count). */
void orch_heartbeat_apply(struct zerg_orch *o, int slot,
                          const struct zerg_heartbeat *hb, int64_t now);
/* The intake stamped with at ran until until: the beats and progress it
 * applied at at were read as late as that (the orchestrator was stopped
 * or slow in between, DESIGN §19), so they count as seen at until. */
void orch_intake_took(struct zerg_orch *o, int64_t at, int64_t until);
/* A result from a stdout line: applied as its file would be (which it
 * names: it is deleted after the checkpoint like any applied result), or
 * left to the file's own intake when fenced, so a stale result is logged
 * once.  1 when applied. */
int orch_apply_result_event(struct zerg_orch *o, const struct zerg_result *r,
                            int64_t now);

/* ---- orch_stdio.c: event lines on the workers' stdout (DESIGN §15) ----- */

/* A byte stream cut into lines of at most max bytes; a longer line is
 * dropped up to its end.  Data-only, for orch_lines_feed. */
struct orch_lines {
    char *buf;
    size_t len, cap, max;
    int skipping; /* inside an over-long line: dropped up to its '\n' */
};

struct orch_lines_cb {
    /* A whole line, without its '\n'. */
    void (*line)(void *ctx, const char *line, size_t len);
    /* A line over max was dropped; len is how much of it was seen. */
    void (*too_long)(void *ctx, size_t len);
    void *ctx;
};

/* Feeds n bytes; calls cb for each line they complete.  0, or -ENOMEM
 * (the partial line is then dropped). */
int orch_lines_feed(struct orch_lines *l, const char *data, size_t n,
                    const struct orch_lines_cb *cb);
void orch_lines_close(struct orch_lines *l);

/* One line of worker slot's stream (the incarnation epoch's): decoded and
 * given to the intake above; other output goes to the worker log, a bad
 * event line is logged (worker_event_invalid) and dropped. */
void orch_stdio_line(struct zerg_orch *o, int slot, uint64_t epoch,
                     const char *line, size_t len, int64_t now);

/* The streams of the loop (orch_loop.c).  NULL from _new is usable: no
 * streams, plain poll. */
struct orch_stdio;
struct pollfd;
struct orch_stdio *orch_stdio_new(void);
/* Closes every stream, and the events fds of slots never taken over. */
void orch_stdio_free(struct orch_stdio *io, struct zerg_orch *o);
/* Takes over the events fds spawns left in the slots' zerg_proc (and
 * zeroes them there: from now on the stream owns the fd). */
void orch_stdio_adopt(struct orch_stdio *io, struct zerg_orch *o);
/* poll(2) over the caller's nhead fds and every stream; revents of the
 * streams are kept for orch_stdio_drain. */
int orch_stdio_poll(struct orch_stdio *io, struct pollfd *head, size_t nhead,
                    int timeout_ms);
/* Reads the streams poll found readable and applies their lines; a stream
 * at its end (the worker and srun gone) is closed. */
void orch_stdio_drain(struct orch_stdio *io, struct zerg_orch *o, int64_t now);

#endif
