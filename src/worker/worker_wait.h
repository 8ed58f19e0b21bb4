/* worker_wait.h - the worker's wait loop (worker_wait.c): the one place
 * that polls, reads the clock, beats and notices that the worker must
 * exit.  worker.c waits in it for assignments, worker_run.c for a stage's
 * end; it calls neither of them. */
#ifndef ZERG_WORKER_WAIT_H
#define ZERG_WORKER_WAIT_H

#include "worker_state.h"

/* What wk_wait returns. */
enum { EV_EXIT, EV_ASSIGN, EV_CHILD, EV_DEADLINE };

static inline int64_t wk_now_ns(const struct worker *w)
{
    return zerg_clock_mono(w->clock);
}

/* Writes the next heartbeat (seq + 1); 0 or negative.  A failure is
 * reported once on stderr. */
int wk_beat(struct worker *w);
/* Sets up the event fd now if it is not yet (it also edits the
 * environment): before a stage is started with vfork, whose child writes
 * a heartbeat and must find everything in place. */
void wk_events_start(void);
/* Sends r as an event line on stdout when the launcher relays it
 * (ZERG_STDIO_EVENTS=1); call once its file is written. */
void wk_event_result(const struct zerg_result *r);
/* Sets step and progress, then beats. */
void wk_step(struct worker *w, const char *step, int progress);
/* The same beat as an event line only, where the launcher relays them,
 * and its file within 50 ms (a later beat may have replaced it by then);
 * when the line cannot go, the file now.  For beats the orchestrator
 * must have before it handles the worker's exit (the line is read
 * first), or also has from a file (the idle beat after a result). */
void wk_step_line(struct worker *w, const char *step, int progress);
/* Records the exit code (the first one wins) and, when fmt is non-NULL,
 * why: in w->err and as a log event. */
void wk_exit(struct worker *w, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* 1 when $ZERG_ORCH_PID was given and that process no longer exists. */
int wk_orch_gone(const struct worker *w);
/* Polls until something matters to the caller: EV_EXIT (w->exit_code is
 * set), EV_ASSIGN (only when no stage runs), EV_CHILD (w->stage ended) or
 * EV_DEADLINE.  Heartbeats, lease and progress are handled inside. */
int wk_wait(struct worker *w, int64_t deadline_ns);
/* While a stopped stage may still end by itself: waits until w->stage
 * has exited (1, not reaped) or deadline_ns (0).  Heartbeats go on;
 * signals and the assignment wait: the worker is leaving anyway. */
int wk_wait_stage_end(struct worker *w, int64_t deadline_ns);
/* Sets w->assign_dirty when the assignment changed: inotify's queue read
 * now (so the event of a change seen here does not cause a second read
 * later), else a stat (inotify may not see a write across a bind mount). */
void wk_check_assign(struct worker *w);
/* Stops watching the attempt's log directory (its progress file). */
void wk_unwatch_task(struct worker *w);
/* Reaps children the tasks left behind (the worker may be pid 1). */
void wk_reap_strays(void);
/* Kills and reaps every child of the process, and the descendants their
 * death re-parents to it; only when no stage runs (it would be killed). */
void wk_kill_strays(const struct worker *w);

#endif
