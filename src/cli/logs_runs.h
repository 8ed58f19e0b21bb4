/* logs_runs.h - the runs in the monitor log, for `zerg logs` (logs.c):
 * a feature's run begins at a rush_start that is not a resume and goes
 * on through its resumes, to the next such start.  By default `zerg
 * logs` shows each feature's current (last) run only; every run, and
 * every rush of one, gets a header line. */
#ifndef ZERG_CLI_LOGS_RUNS_H
#define ZERG_CLI_LOGS_RUNS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "zerg/graph.h"
#include "zerg/json.h"
#include "zerg/protocol.h"

struct zerg_logs_run {
    char feature[ZERG_ID_MAX + 1];
    char run_id[ZERG_RUN_ID_MAX];
    int64_t start_ns; /* wall, of the current run's rush_start */
    int headed;       /* a header for it was printed */
};

struct zerg_logs_runs {
    struct zerg_logs_run *v; /* one per feature seen */
    size_t n, cap;
    size_t hidden; /* events of earlier runs left out */
};

/* The pre-pass: every event in log order; the last fresh rush_start of
 * each feature marks its current run. */
void zerg_logs_runs_scan(void *runs, const zerg_json *rec);

/* 1 when rec happened before its feature's current run began (counted in
 * hidden); an event of a feature with no rush_start is current. */
int zerg_logs_runs_earlier(struct zerg_logs_runs *rs, const zerg_json *rec);

/* Writes the header line that goes before rec, if any: a run's before its
 * rush_start (or before the first event shown of it, when its start is
 * not shown), a resume's before its rush_start. */
void zerg_logs_runs_header(struct zerg_logs_runs *rs, FILE *out,
                           const zerg_json *rec);

/* --tail: before the last events, one header per feature's current run
 * (the events kept may not hold its start). */
void zerg_logs_runs_tail_header(const struct zerg_logs_runs *rs, FILE *out);

/* The earliest current run's start, 0 when none. */
int64_t zerg_logs_runs_first(const struct zerg_logs_runs *rs);

void zerg_logs_runs_free(struct zerg_logs_runs *rs);

#endif
