/* orchestrator.h - the rush: levels, workers, recovery.
 *
 * The orchestrator is a state machine fed with events (a child exited, a
 * file in .zerg/state changed, a stop was asked) and stepped by
 * zerg_orch_tick(now), which applies timers (spawn backoff, stale checks,
 * reconciliation, lease, checkpoint) and dispatches work.  Monotonic time
 * comes in as `now` on every call; wall time (timestamps in the state
 * document) and the cost of a checkpoint are read from opts.clock, never
 * from the system clock.  It never sleeps: zerg_orch_run() is the real
 * event loop around it (poll over signalfd + inotify + the next
 * deadline), and unit tests drive the same functions with a fake clock
 * and launcher.
 *
 * Every decision is asked of a policy (include/zerg/policy.h) and logged
 * with its inputs; the state document is written only here. */
#ifndef ZERG_ORCHESTRATOR_H
#define ZERG_ORCHESTRATOR_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

struct zerg_err;
struct zerg_config;
struct zerg_graph;
struct zerg_state;
struct zerg_policy;
struct zerg_launcher;
struct zerg_workspace;
struct zerg_log;
struct zerg_clock;
struct zerg_orch;

/* --halt, in GNU parallel's words: once `fail` tasks (or `fail` percent
 * of the graph's tasks, rounded up, at least 1) have failed permanently in
 * this rush, SOON lets the running tasks finish and starts no new one, NOW
 * kills them through the stop path; either way the rush exits 1. */
enum zerg_halt_when {
    ZERG_HALT_NEVER,
    ZERG_HALT_SOON,
    ZERG_HALT_NOW,
};
struct zerg_halt {
    enum zerg_halt_when when;
    int fail; /* tasks, or a percentage when `percent` */
    int percent;
};
/* "never", "soon,fail=N", "now,fail=N", "soon,fail=N%", "now,fail=N%"
 * (N >= 1, a percentage 1..100).  0, or -EINVAL with out untouched. */
int zerg_halt_parse(const char *s, struct zerg_halt *out);
/* The spec back as text ("now,fail=50%"), like snprintf. */
int zerg_halt_format(const struct zerg_halt *h, char *buf, size_t size);

struct zerg_orch_opts {
    const char *project; /* absolute project root */
    const char *feature;
    const char *zerg_bin; /* what workers run */
    const struct zerg_config *cfg;
    const struct zerg_graph *graph;
    struct zerg_state *state; /* fresh or loaded; owned by the caller */
    struct zerg_policy *policy;
    struct zerg_launcher *launcher;
    /* Worktree isolation (DESIGN §13): the run's workspace, NULL = none
     * (every worker in the project tree).  Owned by the caller. */
    struct zerg_workspace *workspace;
    const char *prev_run_id; /* resume: the run id the state had */
    struct zerg_log *log;
    const struct zerg_clock *clock; /* required: wall time, costs */
    int workers;                    /* pool size */
    int resume;                     /* state came from disk */
    int64_t checkpoint_ns;          /* min gap between state writes (50 ms) */
    /* Optional: zerg_orch_run calls on_frame(frame_ctx, o, now) at least
     * every frame_ns while it runs (and after each batch of events), so a
     * live view can redraw while nothing happens.  NULL: no frames. */
    void (*on_frame)(void *frame_ctx, const struct zerg_orch *o,
                     int64_t now_mono_ns);
    void *frame_ctx;
    int64_t frame_ns;
    /* --halt: end the rush early once enough tasks failed (NEVER: 0). */
    struct zerg_halt halt;
    /* rush.timeout_seconds / --timeout: wall budget from zerg_orch_new's
     * `now`; 0 = none.  Past it the rush stops like --halt now. */
    int64_t timeout_ns;
    /* rush.schedule / --schedule (enum zerg_schedule, zerg/config.h):
     * LEVELS (0) claims only the current level's tasks; DAG claims any task
     * whose dependencies are complete. */
    int schedule;
    /* Batch syncs and deletions of applied results on a thread of their
     * own (zerg/offload.h) instead of in the loop; the rush sets it, tests
     * leave it off so a batch is durable and a result gone when the tick
     * that synced or deleted it returns. */
    int offload_io;
    /* State checkpoints written by a child process while the loop goes on
     * (orch_save.c), the last one of the run excepted; the rush sets it,
     * tests leave it off so a checkpoint is on disk when its tick
     * returns. */
    int checkpoint_fork;
};

struct zerg_orch;

/* What a live view shows of one worker slot (zerg_orch_worker). */
struct zerg_orch_worker {
    int slot;
    const char *state; /* "busy", "starting", ... (static) */
    const char *task;  /* task id, NULL when idle (orch-owned) */
    int attempt;
    char step[24];              /* last step its heartbeat reported */
    int progress_pct;           /* -1 when unknown */
    char activity[80];          /* an agent's last tool call, "" if none */
    int64_t tool_calls;         /* ... and how many it made */
    double cost_usd;            /* the attempt's spend so far, 0 = none */
    int64_t task_since_mono_ns; /* assignment time, 0 when idle */
    int64_t spawned_at_mono_ns;
    int respawns;
};

/* Creates the orchestrator; the state dir must exist.  On resume, applies
 * the results still on disk and reconciles before anything runs. */
struct zerg_orch *zerg_orch_new(const struct zerg_orch_opts *o, int64_t now,
                                struct zerg_err *err);
void zerg_orch_free(struct zerg_orch *o); /* accepts NULL */

/* Events. */
void zerg_orch_child_exited(struct zerg_orch *o, pid_t pid, int wstatus,
                            int64_t now);
void zerg_orch_file_changed(struct zerg_orch *o, const char *name, int64_t now);
void zerg_orch_request_stop(struct zerg_orch *o, int force, int64_t now);

/* Applies timers and dispatches; returns the next deadline (monotonic ns)
 * at which it wants to be ticked again. */
int64_t zerg_orch_tick(struct zerg_orch *o, int64_t now);

/* 1 once the rush is over (all workers gone and the final state written). */
int zerg_orch_done(const struct zerg_orch *o);
/* ZERG_EXIT_OK when every task completed; 128 + the signal when a signal
 * stopped it (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP); ZERG_EXIT_FAIL
 * otherwise. */
int zerg_orch_exit_code(const struct zerg_orch *o);
/* The pids of live worker children (for the loop's reaping); returns n. */
size_t zerg_orch_pids(const struct zerg_orch *o, pid_t *out, size_t max);
/* Worker slots in the pool, and what slot i is doing now.  0, or -EINVAL
 * for a slot out of range. */
int zerg_orch_nworkers(const struct zerg_orch *o);
int zerg_orch_worker(const struct zerg_orch *o, int slot,
                     struct zerg_orch_worker *out);

/* One paragraph for the user: what happened and what to do next. */
void zerg_orch_summary(const struct zerg_orch *o, char *buf, size_t size);

/* The summary's lines about outputs (DESIGN §18), one a line, nothing
 * when there is nothing to say: each complete task that changed zerg's
 * own configuration (scope.config's reason: "changes zerg's own
 * configuration: review before merging (...)"), how many declared files
 * .gitignore ignores were committed anyway, how many undeclared ignored
 * paths were left out of the commits. */
void zerg_orch_notes(const struct zerg_orch *o, FILE *f);

/* The real event loop: runs until done, returns the exit code. */
int zerg_orch_run(struct zerg_orch *o, const struct zerg_clock *clock);

#endif
