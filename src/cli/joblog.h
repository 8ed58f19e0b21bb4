/* joblog.h - the rows of `zerg logs --joblog` (joblog.c): one per task
 * attempt of a feature's run, built from its monitor events and its
 * attempts' result records, without any I/O of its own. */
#ifndef ZERG_CLI_JOBLOG_H
#define ZERG_CLI_JOBLOG_H

#include <stddef.h>
#include <stdint.h>

#include "zerg/graph.h"
#include "zerg/json.h"
#include "zerg/protocol.h"

/* How an attempt ended, as the events and its record tell it. */
enum zerg_jl_end {
    ZERG_JL_RUNNING,    /* nothing says it ended */
    ZERG_JL_COMPLETE,   /* passed and accepted (merged, if isolated) */
    ZERG_JL_FAILED,     /* its command or verification failed, timed out
                           or broke a rule: charged to the retries */
    ZERG_JL_CRASHED,    /* its worker (or the worker's git) died under it */
    ZERG_JL_REASSIGNED, /* ended but not taken (conflict, rate limit, lost
                           result): run again uncharged */
    ZERG_JL_FENCED,     /* its result came from a stale worker, dropped */
};

struct zerg_jl_row {
    char task[ZERG_ID_MAX + 1];
    int attempt;
    int worker;        /* -1: not known */
    int64_t start_ns;  /* wall: started, else claimed */
    int64_t end_ns;    /* wall of the event that ended it, 0: none */
    size_t seq;        /* order first seen, breaks ties of start */
    size_t prev, next; /* 1 + index of the task's row before / after, 0 */
    enum zerg_jl_end end;
    char cls[16];                          /* failure class, "": none */
    int ev_exit, ev_signal, ev_exit_known; /* from the events */
    int have_result; /* the result record below is this attempt's */
    struct zerg_result result;
};

struct zerg_joblog {
    struct zerg_jl_row *rows;
    size_t n, cap;
    size_t *index, nindex;         /* task -> 1 + its newest row */
    char (*runs)[ZERG_RUN_ID_MAX]; /* the run ids of the run's rushes */
    size_t nruns, runs_cap;
    int oom;
};

/* Zero-initialised is ready; _close frees what it holds. */
void zerg_joblog_close(struct zerg_joblog *jl);

/* One monitor event of the feature, in log order.  A rush_start that is
 * not a resume begins a new run: rows of earlier runs are dropped. */
void zerg_joblog_event(struct zerg_joblog *jl, const zerg_json *rec);

/* The record of an attempt (attempt-N.result.json): taken by its row when
 * it was written in one of the run's rushes; else ignored.  1 taken. */
int zerg_joblog_result(struct zerg_joblog *jl, const struct zerg_result *r);

/* Sorts the rows by start (then first seen); no event or result may
 * follow. */
void zerg_joblog_sort(struct zerg_joblog *jl);

/* The outcome word of a row: complete, failed, crashed, reassigned,
 * fenced or running. */
const char *zerg_jl_outcome(const struct zerg_jl_row *row);

/* The header line and one row as TSV, '\n' included, into buf: tabs,
 * newlines and control characters in fields become spaces.  The length
 * it needed (as snprintf). */
#define ZERG_JL_HEADER                                                         \
    "task\tattempt\tworker\tstart\truntime\texit\toutcome\tclass\tcost\t"      \
    "commit\n"
int zerg_jl_format_tsv(const struct zerg_jl_row *row, char *buf, size_t n);

/* The same row as a JSON object (caller frees): numbers as numbers, "-"
 * as null, a kill as "exit": null with "signal": N.  NULL when out of
 * memory. */
zerg_json *zerg_jl_to_json(const struct zerg_jl_row *row);

#endif
