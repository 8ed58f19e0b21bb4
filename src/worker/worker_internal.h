/* worker_internal.h - the worker's private state, shared by worker.c (the
 * lifecycle: setup, the poll loop, heartbeats, orchestrator liveness) and
 * worker_run.c (one task attempt: its stages, log and result). */
#ifndef ZERG_WORKER_INTERNAL_H
#define ZERG_WORKER_INTERNAL_H

#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "zerg/clock.h"
#include "zerg/config.h"
#include "zerg/err.h"
#include "zerg/graph.h"
#include "zerg/log.h"
#include "zerg/protocol.h"
#include "zerg/worker.h"

/* What wk_wait returns. */
enum { EV_EXIT, EV_ASSIGN, EV_CHILD, EV_DEADLINE };

struct stage {
    const char *name; /* "command" | "verification" */
    pid_t pid;
    int pidfd;           /* -1 when pidfd_open is unavailable */
    int64_t deadline_ns; /* INT64_MAX: none */
    int status;          /* wait status */
    int timed_out;
};

struct worker {
    const struct zerg_worker_opts *o;
    const struct zerg_clock *clock;
    struct zerg_err *err;
    struct zerg_config cfg;
    struct zerg_graph *graph;
    struct zerg_log *log;
    char state_dir[PATH_MAX], assign_path[PATH_MAX];
    int64_t hb_interval_ns, lease_stale_ns, poll_ns;

    int sigfd, inofd, task_wd;
    sigset_t oldmask;
    int exit_code; /* -1 while running */

    struct zerg_heartbeat hb;
    int64_t next_hb_ns, next_tick_ns;
    int ready, hb_failed;

    struct stat assign_st; /* identity of the last file we read */
    int assign_dirty;
    char last_task[ZERG_ID_MAX + 1];
    int last_attempt;

    int lease_seen;
    int64_t lease_seq, lease_changed_ns;

    struct stage *stage; /* the running stage, NULL when idle */
    char progress_path[PATH_MAX];
    int progress_last;
};

static inline int64_t wk_now_ns(const struct worker *w)
{
    return zerg_clock_mono(w->clock);
}

/* Writes the next heartbeat (seq + 1); 0 or negative.  A failure is
 * reported once on stderr. */
int wk_beat(struct worker *w);
/* Sets step and progress, then beats. */
void wk_step(struct worker *w, const char *step, int progress);
/* Polls until something matters to the caller: EV_EXIT (w->exit_code is
 * set), EV_ASSIGN (only when no stage runs), EV_CHILD (w->stage ended) or
 * EV_DEADLINE.  Heartbeats, lease and progress are handled inside. */
int wk_wait(struct worker *w, int64_t deadline_ns);
/* Reaps children the tasks left behind (the worker may be pid 1). */
void wk_reap_strays(void);
/* Runs one attempt of a task and writes its result (not when the worker
 * was told to exit meanwhile). */
void wk_run_task(struct worker *w, const struct zerg_assign *a);

#endif
