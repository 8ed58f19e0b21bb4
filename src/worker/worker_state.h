/* worker_state.h - the state of one worker incarnation, data only.
 *
 * These files share it, each using only the ones below it:
 *   worker.c       the lifecycle: setup, the assignment loop, teardown;
 *   worker_run.c   one task attempt: its stages, log and result (with
 *                  worker_agent.c and worker_ws.c around the stages);
 *   worker_log.c   the attempt's log file below .zerg/logs/;
 *   worker_wait.c  the poll loop both wait in: heartbeats, lease,
 *                  progress, signals, the running stage's exit;
 *   worker_stream.c an agent's events, read while its stage runs.
 * No functions here: what each file offers is in its own header. */
#ifndef ZERG_WORKER_STATE_H
#define ZERG_WORKER_STATE_H

#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "zerg/clock.h"
#include "zerg/config.h"
#include "zerg/err.h"
#include "zerg/git.h"
#include "zerg/graph.h"
#include "zerg/log.h"
#include "zerg/protocol.h"
#include "zerg/worker.h"
#include "zerg/workspace.h"

#include "worker_stream.h"

/* One running stage of a task attempt (worker_run.c starts and reaps it;
 * the wait loop watches its pidfd). */
struct stage {
    const char *name; /* "command" | "verification" */
    pid_t pid;
    int pidfd;           /* -1 when pidfd_open is unavailable */
    int64_t deadline_ns; /* INT64_MAX: none */
    int status;          /* wait status */
    int timed_out;
    /* An agent's terminal event was read at some point: the CLI has until
     * settle_ns to exit (executor.exit_grace_seconds); settled once it was
     * sent TERM for not exiting, then settle_ns is when KILL follows. */
    int64_t settle_ns; /* INT64_MAX: no terminal event yet */
    int settled;
};

struct worker {
    const struct zerg_worker_opts *o;
    const struct zerg_clock *clock;
    struct zerg_err *err;
    struct zerg_config cfg;
    /* The task graph file, kept open: each assignment says where its
     * task lies in it, and that one task is read (worker_run.c).  The
     * whole graph is read only for an assignment that does not say, or
     * once the file changed under the rush; then it stays in graph. */
    int graph_fd;
    char graph_path[PATH_MAX];
    struct zerg_graph *graph;
    int graph_changed_said;
    struct zerg_log *log;
    char state_dir[PATH_MAX], assign_path[PATH_MAX];
    int64_t hb_interval_ns, lease_stale_ns, poll_ns;

    pid_t self; /* getpid() once: it does not change while we run */
    int sigfd, inofd, task_wd;
    sigset_t oldmask;
    /* SIGPIPE is ignored while the worker runs (a gone reader of its event
     * lines must not kill it) and set back to its default in every stage
     * child; this is what it was before, put back at the end. */
    struct sigaction old_pipe;
    int pipe_set;
    int exit_code;     /* -1 while running */
    int was_subreaper; /* before we set it; -1 when not set */

    struct zerg_heartbeat hb;
    int64_t next_hb_ns, next_tick_ns;
    int ready, hb_failed;

    struct stat assign_st; /* identity of the last file we read */
    int assign_dirty;
    char last_task[ZERG_ID_MAX + 1];
    int last_attempt;

    int lease_seen, lease_pid, lease_late_said;
    int64_t lease_seq, lease_changed_ns;

    struct zerg_git git; /* worktree isolation only (have_git) */
    int have_git;
    struct zerg_ws_stamp index;   /* as this attempt's prepare left it */
    char base_tree[ZERG_OID_MAX]; /* the assignment's, for the commit */
    char workdir[PATH_MAX];       /* where stages run */

    /* Output as progress: the running attempt's log and its size last
     * seen; growth bumps hb.progress_seq.  out_fd -1 when not counted. */
    int out_fd;
    off_t out_size;
    /* An agent executor's stage: its events read as they come (progress
     * is an event then, not a byte). */
    struct wk_stream stream;

    /* .zerg/logs/{feature}/tasks, opened once without following a link
     * (worker_log.c), and its identity, checked against the path before
     * each attempt; -1 until the first attempt.  null_fd: /dev/null, the
     * stdin of every stage, -1 until the first. */
    int tasks_fd, null_fd;
    dev_t tasks_dev;
    ino_t tasks_ino;

    struct stage *stage; /* the running stage, NULL when idle */
    char progress_path[PATH_MAX];
    int progress_last;
};

#endif
