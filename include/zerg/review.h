/* review.h - the reviewer's decisions on tasks waiting for review
 * (rush.review, DESIGN §21).
 *
 * `zerg approve` and `zerg redo` leave one request file per task in the
 * feature's review directory, outside the run directory a worker writes
 * (a container mounts .zerg/ read-only but for the run directory, so no
 * task can approve itself):
 *
 *   .zerg/review/{feature}/{task}.json
 *   {"feature": "F", "task": "T", "attempt": 2,
 *    "decision": "approve" | "redo", "note": "..."}
 *
 * written with the atomic replace, so a later decision on the same task
 * replaces an earlier one.  The orchestrator reads the directory while a
 * task waits, applies a request whose attempt is the one waiting (an
 * older attempt's is stale and dropped) and deletes it; a request left
 * while no rush runs is applied by the next `zerg rush --resume`. */
#ifndef ZERG_REVIEW_H
#define ZERG_REVIEW_H

#include <stddef.h>

#include "zerg/graph.h"

struct zerg_err;

/* The longest note (bytes) a redo carries into the next prompt. */
#define ZERG_REVIEW_NOTE_MAX 1000

enum zerg_review_decision { ZERG_REVIEW_APPROVE, ZERG_REVIEW_REDO };

struct zerg_review_request {
    char feature[ZERG_ID_MAX + 1];
    char task[ZERG_ID_MAX + 1];
    int attempt; /* the attempt under review */
    enum zerg_review_decision decision;
    char *note; /* redo: owned, NULL = none */
};

const char *zerg_review_decision_name(enum zerg_review_decision d);

/* {project}/.zerg/review/{feature}.  0 or -ENAMETOOLONG. */
int zerg_review_dir(char *buf, size_t n, const char *project,
                    const char *feature);

/* Writes rq into its review directory (created when missing; no link
 * followed; atomic replace, durable); the path goes to written (may be
 * NULL).  ZERG_EINVAL_INPUT for a bad name or a note longer than
 * ZERG_REVIEW_NOTE_MAX; 0 or negative with err set. */
int zerg_review_request_write(const char *project,
                              const struct zerg_review_request *rq,
                              char *written, size_t size, struct zerg_err *err);

/* Parses a request file (never through a link, never a FIFO).
 * ZERG_ECORRUPT naming the file when it is not a request; -ENOENT when
 * missing.  Free with _close. */
int zerg_review_request_read(const char *path, struct zerg_review_request *rq,
                             struct zerg_err *err);
void zerg_review_request_close(struct zerg_review_request *rq);

/* 1 when name is a request's file name ("{task}.json", the task a valid
 * id), the id copied to task (ZERG_ID_MAX + 1 bytes); else 0. */
int zerg_review_request_name(const char *name, char *task);

#endif
