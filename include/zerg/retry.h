/* retry.h - putting failed tasks back in the queue (`zerg retry`).
 *
 * Two halves.  The state operation requeues a failed or blocked task, and
 * with it every task that was blocked only because of it; `zerg retry`
 * applies it to the saved state when no rush runs, and the orchestrator
 * applies it to its live state.  The request file is how `zerg retry`
 * reaches a running rush: it writes
 *
 *   .zerg/state/{feature}/retry-{wall_ns}.json   (the run directory)
 *   {"feature": "F", "tasks": ["A-L1-001", ...], "all_failed": false}
 *
 * with the atomic replace; the orchestrator reads it, applies it with
 * zerg_retry_request_apply, leaves its answer beside it (below) and
 * deletes it.  The live state is the rush's alone: the saved one may be
 * a checkpoint behind (a task the log shows failed can still read
 * "claimed" there), so only the rush can say whether a task is
 * retryable, and the answer is how `zerg retry` learns what it did. */
#ifndef ZERG_RETRY_H
#define ZERG_RETRY_H

#include <stddef.h>
#include "zerg/graph.h"

struct zerg_err;
struct zerg_state;

/* Requeues task idx: a failed or blocked task (or one waiting for its
 * retry, which then runs now) becomes pending with
 * retry_count, crash_count, retry_at, its worker and timestamps reset and
 * error/reason cleared (`attempt` is kept: it fences results of earlier
 * attempts).  Then every blocked task downstream of it whose dependencies
 * are no longer failed or blocked becomes pending too, transitively.  The
 * levels of requeued tasks are reopened, current_level moves back to the
 * lowest of them, and a run recorded as "failed" becomes "stopped".
 * Returns the number of tasks requeued (>= 1), or ZERG_EINVAL_INPUT when
 * the task is not failed, blocked or waiting_retry (nothing changed). */
int zerg_state_retry_task(struct zerg_state *s, const struct zerg_graph *g,
                          size_t idx);

/* Requeues every failed task and what it blocked.  Returns the number of
 * tasks requeued (0 when nothing had failed). */
int zerg_state_retry_all_failed(struct zerg_state *s,
                                const struct zerg_graph *g);

/* The sentence why task idx cannot be retried ("task X is complete;
 * nothing to retry"), or NULL if it can.  Returns buf or NULL. */
const char *zerg_state_retry_refusal(const struct zerg_state *s,
                                     const struct zerg_graph *g, size_t idx,
                                     char *buf, size_t size);

/* ---- the request file for a running rush ------------------------------ */

struct zerg_retry_request {
    char feature[ZERG_ID_MAX + 1];
    char **ids; /* task ids (owned), validated with zerg_id_valid */
    size_t n;
    int all_failed;
};

/* What a rush did with a request, in the answer it leaves beside it,
 *
 *   .zerg/state/{feature}/retried-{wall_ns}.json
 *   {"requeued": 2, "tasks": ["A-L1-001", "A-L2-001"], "refused": []}
 *
 * requeued counts the tasks that came back (those named and what they
 * unblocked), tasks names the first ZERG_RETRY_ANSWER_MAX of them, and
 * refused says why each refused id was refused (then nothing changed). */
#define ZERG_RETRY_ANSWER_MAX 20
#define ZERG_RETRY_REFUSAL_MAX 160
struct zerg_retry_answer {
    int requeued;
    size_t ntasks, nrefused;
    char tasks[ZERG_RETRY_ANSWER_MAX][ZERG_ID_MAX + 1];
    char refused[ZERG_RETRY_ANSWER_MAX][ZERG_RETRY_REFUSAL_MAX];
};

/* Writes a request into the run directory of feature under state_dir
 * (.zerg/state; created when missing; atomic replace, durable).  ids may
 * be NULL when all_failed is set.  0 or negative with err set. */
int zerg_retry_request_write(const char *state_dir, const char *feature,
                             const char *const *ids, size_t n, int all_failed,
                             struct zerg_err *err);

/* The same, and the path written goes to written (size bytes; may be
 * NULL), so the sender can see when the rush has taken it. */
int zerg_retry_request_send(const char *state_dir, const char *feature,
                            const char *const *ids, size_t n, int all_failed,
                            char *written, size_t size, struct zerg_err *err);

/* Parses a request file.  ZERG_ECORRUPT with err naming the file when it is
 * not a valid request; -ENOENT when missing.  Free with _close. */
int zerg_retry_request_read(const char *path, struct zerg_retry_request *req,
                            struct zerg_err *err);
void zerg_retry_request_close(struct zerg_retry_request *req);

/* Applies a request to live state, as `zerg retry` does to the saved one:
 * every id is checked first, and when one is unknown or not retryable
 * nothing changes and each refused id gets its sentence in ans->refused.
 * Returns the number of tasks requeued (also in ans), or -ENOMEM. */
int zerg_retry_request_apply(struct zerg_state *s, const struct zerg_graph *g,
                             const struct zerg_retry_request *req,
                             struct zerg_retry_answer *ans);

/* ---- the answer ------------------------------------------------------- */

/* The path of the answer to the request at request_path: the same
 * directory, "retried-" for "retry-".  0 or negative. */
int zerg_retry_answer_path(char *buf, size_t size, const char *request_path);

/* Written with the atomic replace (not synced: a lost answer only costs
 * the sender its report; the state holds the retry).  0 or negative with
 * err set. */
int zerg_retry_answer_write(const char *path,
                            const struct zerg_retry_answer *ans,
                            struct zerg_err *err);

/* Parses an answer; -ENOENT when missing, ZERG_ECORRUPT when it is not
 * one.  Lists longer than the answer holds are cut. */
int zerg_retry_answer_read(const char *path, struct zerg_retry_answer *ans,
                           struct zerg_err *err);

#endif
