/* task_fsm.h - the task life cycle: the one table of legal moves.
 *
 * A task's status (DESIGN §5) changes only through zerg_task_apply: one
 * row per event names the statuses it may leave, the status it enters and
 * the fields it sets or resets.  A move the table does not allow changes
 * nothing and comes back as an error sentence for the caller to log; the
 * orchestrator (src/orch/orch_tasks.c) and the offline `zerg retry` path
 * (src/model/retry.c) both go through it, so a requeue resets the same
 * fields wherever it happens.
 *
 *   claim        pending, waiting_retry       -> claimed
 *   start        claimed                      -> in_progress
 *   complete     claimed, in_progress         -> complete
 *   retry_later  claimed, in_progress         -> waiting_retry
 *   requeue      claimed, in_progress         -> pending (uncharged)
 *   fail         claimed, in_progress,
 *                awaiting_review              -> failed
 *   block        pending, waiting_retry       -> blocked
 *   retry        failed, blocked, waiting_retry -> pending (fresh budget)
 *   adopt        pending .. in_progress       -> in_progress (replay)
 *   reopen       complete                     -> pending (its work is gone)
 *   await        claimed, in_progress         -> awaiting_review (rush.review)
 *   approve      awaiting_review              -> complete (merged)
 *   redo         awaiting_review              -> pending (uncharged)
 *
 * (docs/wiki/Resilience-Architecture.md carries the table rendered from
 * the code by zerg_task_fsm_markdown; a unit test keeps them equal.) */
#ifndef ZERG_TASK_FSM_H
#define ZERG_TASK_FSM_H

#include <stddef.h>
#include <stdint.h>

#include "zerg/state.h"

enum zerg_task_event {
    ZERG_TASK_EV_CLAIM,       /* assigned to a worker: a new attempt */
    ZERG_TASK_EV_START,       /* the worker's heartbeat shows it running */
    ZERG_TASK_EV_COMPLETE,    /* a fenced result said complete */
    ZERG_TASK_EV_RETRY_LATER, /* charged failure, retry granted */
    ZERG_TASK_EV_REQUEUE,     /* uncharged: crash, stop, lost result, fix */
    ZERG_TASK_EV_FAIL,        /* permanent failure */
    ZERG_TASK_EV_BLOCK,       /* a dependency failed permanently */
    ZERG_TASK_EV_RETRY,       /* `zerg retry`: back with a fresh budget
                                 (a waiting_retry task runs now) */
    ZERG_TASK_EV_ADOPT,       /* journal replay: a finished attempt that
                                 the saved state never saw claimed */
    ZERG_TASK_EV_REOPEN,      /* reconciliation: a complete task whose
                                 commit is no longer on the integration
                                 branch runs again */
    ZERG_TASK_EV_AWAIT,       /* passed and committed under rush.review:
                                 merged only once approved */
    ZERG_TASK_EV_APPROVE,     /* `zerg approve`: its commit merged */
    ZERG_TASK_EV_REDO,        /* `zerg redo --note`, or its approved commit
                                 conflicts: it runs again, uncharged */
    ZERG_TASK_NEVENTS
};

/* What an event carries; each row reads only the fields it documents. */
struct zerg_task_move {
    int worker_id;            /* claim; await: the slot that made it */
    uint64_t epoch;           /* claim, adopt */
    int attempt;              /* claim, adopt */
    int64_t now_wall_ns;      /* claim, start, complete, fail */
    int64_t retry_at_wall_ns; /* retry_later */
    const char *error;        /* retry_later, requeue, fail, block, reopen,
                                 redo */
    const char *reason;       /* retry_later, fail, reopen, redo; requeue
                                 when non-NULL */
    const char *commit;       /* await: the commit under review */
    const char *base;         /* await: the tip it was made on */
    const char *note;         /* redo: the reviewer's note (NULL keeps the
                                 last one) */
};

const char *zerg_task_event_name(enum zerg_task_event ev);

/* 1 when the table allows ev from status s. */
int zerg_task_move_legal(enum zerg_task_status s, enum zerg_task_event ev);

/* Applies ev to st.  0 on success; ZERG_EINVAL_INPUT when the move is not
 * in the table (st unchanged, why holds the sentence), -ENOMEM when a
 * string could not be copied (the status has moved; the text is lost). */
int zerg_task_apply(struct zerg_task_state *st, enum zerg_task_event ev,
                    const struct zerg_task_move *m, char *why, size_t size);

/* The only way to give a task a status outside a move: loading a state
 * document or starting a fresh one. */
void zerg_task_set_initial(struct zerg_task_state *st, enum zerg_task_status s);

/* Counts by status of n tasks, the ones listed in idx (or all when idx is
 * NULL), into counts[ZERG_TASK_NSTATUS] (zeroed first). */
void zerg_task_count(const struct zerg_task_state *tasks, const size_t *idx,
                     size_t n, size_t counts[ZERG_TASK_NSTATUS]);

/* The table as a Markdown grid (for the docs); returns bytes written
 * (like snprintf). */
int zerg_task_fsm_markdown(char *buf, size_t size);

#endif
