/* task_fsm.c - the task life cycle as one table (see zerg/task_fsm.h).
 *
 * Each row: the statuses an event may leave (a bit mask), the status it
 * enters, and the function that sets the fields the move owns.  Nothing
 * else in zerg writes a task's status; a grep for "status = ZERG_TASK_"
 * outside this file finds only comparisons. */
#include "zerg/task_fsm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/err.h"
#include "zerg/text.h"

#define BIT(s) (1u << (s))

static int set_text(char **dst, const char *src)
{
    char *copy = NULL;
    if (src && !(copy = strdup(src)))
        return -ENOMEM;
    free(*dst);
    *dst = copy;
    return 0;
}

/* ---- what each move sets ------------------------------------------- */

static int f_claim(struct zerg_task_state *st, const struct zerg_task_move *m)
{
    st->attempt = m->attempt;
    st->epoch = m->epoch;
    st->worker_id = m->worker_id;
    st->claimed_at_wall_ns = m->now_wall_ns;
    st->retry_at_wall_ns = 0;
    return 0;
}

static int f_start(struct zerg_task_state *st, const struct zerg_task_move *m)
{
    st->started_at_wall_ns = m->now_wall_ns;
    return 0;
}

static int f_complete(struct zerg_task_state *st,
                      const struct zerg_task_move *m)
{
    st->worker_id = -1;
    st->completed_at_wall_ns = m->now_wall_ns;
    return set_text(&st->error, NULL) | set_text(&st->reason, NULL);
}

static int f_retry_later(struct zerg_task_state *st,
                         const struct zerg_task_move *m)
{
    st->worker_id = -1;
    st->retry_at_wall_ns = m->retry_at_wall_ns;
    return set_text(&st->error, m->error) | set_text(&st->reason, m->reason);
}

static int f_requeue(struct zerg_task_state *st, const struct zerg_task_move *m)
{
    st->worker_id = -1;
    st->retry_at_wall_ns = 0;
    int rc = set_text(&st->error, m->error);
    if (m->reason)
        rc |= set_text(&st->reason, m->reason);
    return rc;
}

static void review_clear(struct zerg_task_state *st)
{
    st->review_commit[0] = '\0';
    st->review_base[0] = '\0';
}

static int f_fail(struct zerg_task_state *st, const struct zerg_task_move *m)
{
    st->worker_id = -1;
    review_clear(st);
    st->completed_at_wall_ns = m->now_wall_ns;
    return set_text(&st->error, m->error) | set_text(&st->reason, m->reason);
}

static int f_block(struct zerg_task_state *st, const struct zerg_task_move *m)
{
    return set_text(&st->error, m->error) | set_text(&st->reason, "blocked");
}

/* A fresh budget; `attempt` is kept: it fences results of old attempts. */
static int f_retry(struct zerg_task_state *st, const struct zerg_task_move *m)
{
    (void)m;
    st->worker_id = -1;
    st->retry_count = 0;
    st->crash_count = 0;
    st->epoch = 0;
    st->claimed_at_wall_ns = 0;
    st->started_at_wall_ns = 0;
    st->completed_at_wall_ns = 0;
    st->retry_at_wall_ns = 0;
    st->duration_ms = 0;
    return set_text(&st->error, NULL) | set_text(&st->reason, NULL);
}

static int f_adopt(struct zerg_task_state *st, const struct zerg_task_move *m)
{
    st->attempt = m->attempt;
    st->epoch = m->epoch;
    st->worker_id = -1;
    return 0;
}

/* The work of a complete task is gone (its commit left the integration
 * branch): it runs again, uncharged, so the budgets start afresh as after
 * `retry`; the stale commit and conflict paths would mislead the next
 * attempt.  `attempt` is kept: it fences results of old attempts. */
static int f_reopen(struct zerg_task_state *st, const struct zerg_task_move *m)
{
    st->worker_id = -1;
    st->retry_count = 0;
    st->crash_count = 0;
    st->conflict_count = 0;
    st->commit[0] = '\0';
    st->completed_at_wall_ns = 0;
    st->retry_at_wall_ns = 0;
    return set_text(&st->conflict_paths, NULL) |
           set_text(&st->error, m->error) | set_text(&st->reason, m->reason);
}

/* Passed and committed: the commit waits for the reviewer, kept at its
 * review ref (the worker's branch moves on to other work). */
static int f_await(struct zerg_task_state *st, const struct zerg_task_move *m)
{
    st->worker_id = -1;
    st->completed_at_wall_ns = m->now_wall_ns;
    snprintf(st->review_commit, sizeof st->review_commit, "%s",
             m->commit ? m->commit : "");
    snprintf(st->review_base, sizeof st->review_base, "%s",
             m->base ? m->base : "");
    st->review_worker = m->worker_id;
    return set_text(&st->error, NULL) | set_text(&st->reason, NULL);
}

/* Approved and merged: the note has done its work. */
static int f_approve(struct zerg_task_state *st, const struct zerg_task_move *m)
{
    st->completed_at_wall_ns = m->now_wall_ns;
    review_clear(st);
    return set_text(&st->review_note, NULL) | set_text(&st->error, NULL) |
           set_text(&st->reason, NULL);
}

/* Run again, uncharged: the reviewer asked (the note goes in the next
 * prompt) or the approved commit no longer merges (reason "conflict",
 * the note kept). */
static int f_redo(struct zerg_task_state *st, const struct zerg_task_move *m)
{
    st->completed_at_wall_ns = 0;
    st->retry_at_wall_ns = 0;
    review_clear(st);
    int rc = set_text(&st->error, m->error) | set_text(&st->reason, m->reason);
    if (m->note)
        rc |= set_text(&st->review_note, m->note);
    return rc;
}

/* ---- the table -------------------------------------------------------- */

#define RUNNING (BIT(ZERG_TASK_CLAIMED) | BIT(ZERG_TASK_IN_PROGRESS))
#define QUEUED (BIT(ZERG_TASK_PENDING) | BIT(ZERG_TASK_WAITING_RETRY))
#define ENDED (BIT(ZERG_TASK_FAILED) | BIT(ZERG_TASK_BLOCKED))
#define REVIEW BIT(ZERG_TASK_AWAITING_REVIEW)

static const struct task_move_row {
    const char *name;
    unsigned from;
    enum zerg_task_status to;
    int (*fields)(struct zerg_task_state *, const struct zerg_task_move *);
} moves[ZERG_TASK_NEVENTS] = {
    [ZERG_TASK_EV_CLAIM] = {"claim", QUEUED, ZERG_TASK_CLAIMED, f_claim},
    [ZERG_TASK_EV_START] = {"start", BIT(ZERG_TASK_CLAIMED),
                            ZERG_TASK_IN_PROGRESS, f_start},
    [ZERG_TASK_EV_COMPLETE] = {"complete", RUNNING, ZERG_TASK_COMPLETE,
                               f_complete},
    [ZERG_TASK_EV_RETRY_LATER] = {"retry_later", RUNNING,
                                  ZERG_TASK_WAITING_RETRY, f_retry_later},
    [ZERG_TASK_EV_REQUEUE] = {"requeue", RUNNING, ZERG_TASK_PENDING, f_requeue},
    [ZERG_TASK_EV_FAIL] = {"fail", RUNNING | REVIEW, ZERG_TASK_FAILED, f_fail},
    [ZERG_TASK_EV_BLOCK] = {"block", QUEUED, ZERG_TASK_BLOCKED, f_block},
    [ZERG_TASK_EV_RETRY] = {"retry", ENDED | BIT(ZERG_TASK_WAITING_RETRY),
                            ZERG_TASK_PENDING, f_retry},
    [ZERG_TASK_EV_ADOPT] = {"adopt", QUEUED | RUNNING, ZERG_TASK_IN_PROGRESS,
                            f_adopt},
    [ZERG_TASK_EV_REOPEN] = {"reopen", BIT(ZERG_TASK_COMPLETE),
                             ZERG_TASK_PENDING, f_reopen},
    [ZERG_TASK_EV_AWAIT] = {"await", RUNNING, ZERG_TASK_AWAITING_REVIEW,
                            f_await},
    [ZERG_TASK_EV_APPROVE] = {"approve", REVIEW, ZERG_TASK_COMPLETE, f_approve},
    [ZERG_TASK_EV_REDO] = {"redo", REVIEW, ZERG_TASK_PENDING, f_redo},
};

_Static_assert(ZERG_TASK_AWAITING_REVIEW + 1 == ZERG_TASK_NSTATUS,
               "ZERG_TASK_NSTATUS counts every task status");

const char *zerg_task_event_name(enum zerg_task_event ev)
{
    return (unsigned)ev < ZERG_TASK_NEVENTS ? moves[ev].name : "?";
}

int zerg_task_move_legal(enum zerg_task_status s, enum zerg_task_event ev)
{
    return (unsigned)ev < ZERG_TASK_NEVENTS &&
           (unsigned)s < ZERG_TASK_NSTATUS && (moves[ev].from & BIT(s));
}

int zerg_task_apply(struct zerg_task_state *st, enum zerg_task_event ev,
                    const struct zerg_task_move *m, char *why, size_t size)
{
    static const struct zerg_task_move none = {0};
    if (!zerg_task_move_legal(st->status, ev)) {
        if (why && size)
            snprintf(why, size, "cannot %s a task that is %s",
                     zerg_task_event_name(ev),
                     zerg_task_status_name(st->status));
        return ZERG_EINVAL_INPUT;
    }
    st->status = moves[ev].to;
    if (moves[ev].fields(st, m ? m : &none) != 0) {
        if (why && size)
            snprintf(why, size, "out of memory recording the %s",
                     zerg_task_event_name(ev));
        return -ENOMEM;
    }
    return 0;
}

void zerg_task_set_initial(struct zerg_task_state *st, enum zerg_task_status s)
{
    st->status = s;
}

void zerg_task_count(const struct zerg_task_state *tasks, const size_t *idx,
                     size_t n, size_t counts[ZERG_TASK_NSTATUS])
{
    memset(counts, 0, ZERG_TASK_NSTATUS * sizeof *counts);
    for (size_t i = 0; i < n; i++) {
        unsigned s = tasks[idx ? idx[i] : i].status;
        if (s < ZERG_TASK_NSTATUS)
            counts[s]++;
    }
}

/* ---- the table for the docs ------------------------------------------ */

static void task_cell(const void *ctx, int s, int e, char *out, size_t n)
{
    (void)ctx;
    if (s < 0)
        snprintf(out, n, "%s", moves[e].name);
    else if (e < 0)
        snprintf(out, n, "%s", zerg_task_status_name((enum zerg_task_status)s));
    else if (moves[e].from & BIT(s))
        snprintf(out, n, "→ %s", zerg_task_status_name(moves[e].to));
    else
        snprintf(out, n, "refused");
}

int zerg_task_fsm_markdown(char *buf, size_t size)
{
    return zerg_text_table(buf, size, "status \\ event", ZERG_TASK_NSTATUS,
                           ZERG_TASK_NEVENTS, task_cell, NULL);
}
