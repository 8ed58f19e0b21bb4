/* joblog.c - the rows of `zerg logs --joblog`: one per task attempt of a
 * feature's run, in the order they started.
 *
 * Two sources, combined here and read elsewhere (logs_joblog.c):
 *  - the monitor events, in log order: task_claimed and task_started say
 *    who ran an attempt and when; task_complete, task_failed,
 *    task_reassigned, merge_conflict, pool_pause, result_fenced and
 *    worker_crash how it ended.  An event without data.attempt is about
 *    the task's latest attempt.  Only these give a row: an attempt killed
 *    with its worker left no record, yet it was claimed.
 *  - each attempt's result record, written by its worker: exit code,
 *    signal, duration, failure class, cost, commit.  Only a record of one
 *    of the run's rushes counts (records of an earlier run with the same
 *    attempt number are overwritten, but one of a higher number can
 *    linger).
 * The run is what the last rush_start without resume began, with every
 * resumed rush after it; attempt numbers go on across a resume. */
#include "cli/joblog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/clock.h"
#include "zerg/failure.h"

void zerg_joblog_close(struct zerg_joblog *jl)
{
    free(jl->rows);
    free(jl->index);
    free(jl->runs);
    *jl = (struct zerg_joblog){0};
}

static const char *str_of(const zerg_json *o, const char *key)
{
    return zerg_json_as_str(zerg_json_get(o, key));
}

static int int_of(const zerg_json *o, const char *key, int dflt)
{
    const zerg_json *v = zerg_json_get(o, key);
    return zerg_json_is(v, ZERG_JSON_NUMBER) ? (int)zerg_json_as_num(v, dflt)
                                             : dflt;
}

static size_t hash(const char *s)
{
    size_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* The index slot of task: holds 1 + the index of its newest row, or 0. */
static size_t *slot_of(const struct zerg_joblog *jl, const char *task)
{
    size_t mask = jl->nindex - 1;
    for (size_t i = hash(task) & mask;; i = (i + 1) & mask) {
        size_t at = jl->index[i];
        if (!at || !strcmp(jl->rows[at - 1].task, task))
            return &jl->index[i];
    }
}

/* Keeps the index at most half full (a run can have 10^5 attempts). */
static int index_grow(struct zerg_joblog *jl)
{
    if (2 * (jl->n + 1) <= jl->nindex)
        return 0;
    size_t n = jl->nindex ? 2 * jl->nindex : 256;
    free(jl->index);
    if (!(jl->index = calloc(n, sizeof *jl->index))) {
        jl->nindex = 0;
        return -1;
    }
    jl->nindex = n;
    for (size_t i = 0; i < jl->n; i++)
        if (!jl->rows[i].next)
            *slot_of(jl, jl->rows[i].task) = i + 1;
    return 0;
}

/* The row of (task, attempt); attempt 0: the task's latest.  NULL when
 * there is none. */
static struct zerg_jl_row *find(struct zerg_joblog *jl, const char *task,
                                int attempt)
{
    struct zerg_jl_row *best = NULL;
    size_t at = task && jl->nindex ? *slot_of(jl, task) : 0;
    for (; at; at = jl->rows[at - 1].prev) {
        struct zerg_jl_row *r = &jl->rows[at - 1];
        if (attempt ? r->attempt == attempt
                    : !best || r->attempt > best->attempt)
            best = r;
        if (attempt && best)
            break;
    }
    return best;
}

static struct zerg_jl_row *add(struct zerg_joblog *jl, const char *task,
                               int attempt)
{
    if (!zerg_id_valid(task) || attempt < 1)
        return NULL;
    if (jl->n == jl->cap) {
        size_t cap = jl->cap ? jl->cap * 2 : 64;
        struct zerg_jl_row *rows = realloc(jl->rows, cap * sizeof *rows);
        if (!rows) {
            jl->oom = 1;
            return NULL;
        }
        jl->rows = rows;
        jl->cap = cap;
    }
    if (index_grow(jl) < 0) {
        jl->oom = 1;
        return NULL;
    }
    size_t *slot = slot_of(jl, task);
    struct zerg_jl_row *r = &jl->rows[jl->n];
    *r = (struct zerg_jl_row){
        .attempt = attempt, .worker = -1, .seq = jl->n, .prev = *slot};
    snprintf(r->task, sizeof r->task, "%s", task);
    if (*slot)
        jl->rows[*slot - 1].next = jl->n + 1;
    *slot = ++jl->n;
    return r;
}

static void add_run(struct zerg_joblog *jl, const char *run_id)
{
    if (!run_id || !*run_id)
        return;
    if (jl->nruns == jl->runs_cap) {
        size_t cap = jl->runs_cap ? jl->runs_cap * 2 : 4;
        void *p = realloc(jl->runs, cap * sizeof *jl->runs);
        if (!p) {
            jl->oom = 1;
            return;
        }
        jl->runs = p;
        jl->runs_cap = cap;
    }
    snprintf(jl->runs[jl->nruns++], ZERG_RUN_ID_MAX, "%s", run_id);
}

static void rush_start(struct zerg_joblog *jl, const zerg_json *data)
{
    const zerg_json *resume = zerg_json_get(data, "resume");
    if (!zerg_json_is(resume, ZERG_JSON_BOOL) || !resume->u.boolean) {
        jl->n = jl->nruns = 0;
        if (jl->index)
            memset(jl->index, 0, jl->nindex * sizeof *jl->index);
    }
    add_run(jl, str_of(data, "run_id"));
}

/* task_claimed / task_started: the row, its worker and its start. */
static void begun(struct zerg_joblog *jl, const zerg_json *rec,
                  const zerg_json *data, int64_t ts_ns, int started)
{
    const char *task = str_of(rec, "task");
    int attempt = int_of(data, "attempt", 0);
    struct zerg_jl_row *r = find(jl, task, attempt);
    if (!r && !(r = add(jl, task, attempt)))
        return;
    r->worker = int_of(rec, "worker", r->worker);
    if (started || !r->start_ns)
        r->start_ns = ts_ns;
}

static void ended(struct zerg_jl_row *r, enum zerg_jl_end end, const char *cls,
                  const zerg_json *data, int64_t ts_ns)
{
    r->end = end;
    r->end_ns = ts_ns;
    if (cls)
        snprintf(r->cls, sizeof r->cls, "%s", cls);
    if (zerg_json_get(data, "exit_code") || zerg_json_get(data, "signal")) {
        r->ev_exit = int_of(data, "exit_code", -1);
        r->ev_signal = int_of(data, "signal", 0);
        r->ev_exit_known = 1;
    }
}

/* task_failed / task_reassigned: what the retry decision said. */
static void failed(struct zerg_jl_row *r, const zerg_json *data, int reassigned,
                   int64_t ts_ns)
{
    const char *kind = str_of(data, "failure");
    const char *cls = str_of(data, "class");
    enum zerg_failure_class fc;
    if (!cls || zerg_failure_class_parse(cls, &fc) < 0) {
        fc = zerg_failure_class_of_kind(kind);
        cls = kind ? zerg_failure_class_name(fc) : NULL;
    }
    enum zerg_jl_end end = reassigned ? ZERG_JL_REASSIGNED : ZERG_JL_FAILED;
    if (cls && zerg_failure_class_route(fc) == ZERG_ROUTE_CRASH)
        end = ZERG_JL_CRASHED;
    ended(r, end, cls, data, ts_ns);
}

void zerg_joblog_event(struct zerg_joblog *jl, const zerg_json *rec)
{
    const char *ev = str_of(rec, "event"), *ts = str_of(rec, "ts");
    const zerg_json *data = zerg_json_get(rec, "data");
    int64_t ts_ns = 0;
    if (!ev || !ts || zerg_clock_parse_iso8601(ts, &ts_ns) < 0)
        return;
    if (!strcmp(ev, "rush_start")) {
        rush_start(jl, data);
        return;
    }
    if (!strcmp(ev, "task_claimed") || !strcmp(ev, "task_started")) {
        begun(jl, rec, data, ts_ns, ev[5] == 's');
        return;
    }
    const char *task = str_of(rec, "task");
    if (!strcmp(ev, "worker_crash"))
        task = str_of(data, "task");
    struct zerg_jl_row *r = find(jl, task, int_of(data, "attempt", 0));
    if (!r)
        return;
    if (!strcmp(ev, "task_complete"))
        ended(r, ZERG_JL_COMPLETE, "", NULL, ts_ns);
    else if (!strcmp(ev, "task_failed"))
        failed(r, data, 0, ts_ns);
    else if (!strcmp(ev, "task_reassigned"))
        failed(r, data, 1, ts_ns);
    else if (!strcmp(ev, "merge_conflict"))
        ended(r, ZERG_JL_REASSIGNED, "conflict", NULL, ts_ns);
    else if (!strcmp(ev, "pool_pause"))
        ended(r, ZERG_JL_REASSIGNED, "rate_limit", NULL, ts_ns);
    else if (!strcmp(ev, "result_fenced") && r->end != ZERG_JL_COMPLETE)
        ended(r, ZERG_JL_FENCED, NULL, NULL, ts_ns);
    else if (!strcmp(ev, "worker_crash") && r->end == ZERG_JL_RUNNING)
        ended(r, ZERG_JL_CRASHED, "crash", data, ts_ns);
}

int zerg_joblog_result(struct zerg_joblog *jl, const struct zerg_result *res)
{
    struct zerg_jl_row *r = find(jl, res->task, res->attempt);
    int ours = !res->run_id[0];
    for (size_t i = 0; !ours && i < jl->nruns; i++)
        ours = !strcmp(jl->runs[i], res->run_id);
    if (!r || !ours)
        return 0;
    r->result = *res;
    r->have_result = 1;
    return 1;
}

static int by_start(const void *a, const void *b)
{
    const struct zerg_jl_row *x = a, *y = b;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void zerg_joblog_sort(struct zerg_joblog *jl)
{
    if (jl->n)
        qsort(jl->rows, jl->n, sizeof *jl->rows, by_start);
}

/* ---- one row ---------------------------------------------------------- */

static enum zerg_jl_end row_end(const struct zerg_jl_row *r)
{
    const struct zerg_result *res = &r->result;
    if (r->end != ZERG_JL_RUNNING || !r->have_result)
        return r->end;
    /* A record but no verdict yet (the rush stopped before it was read). */
    if (res->has_class &&
        zerg_failure_class_route(res->fclass) == ZERG_ROUTE_CRASH)
        return ZERG_JL_CRASHED;
    return res->outcome == ZERG_OUTCOME_COMPLETE ? ZERG_JL_COMPLETE
                                                 : ZERG_JL_FAILED;
}

const char *zerg_jl_outcome(const struct zerg_jl_row *row)
{
    static const char *const names[] = {
        [ZERG_JL_RUNNING] = "running",       [ZERG_JL_COMPLETE] = "complete",
        [ZERG_JL_FAILED] = "failed",         [ZERG_JL_CRASHED] = "crashed",
        [ZERG_JL_REASSIGNED] = "reassigned", [ZERG_JL_FENCED] = "fenced",
    };
    return names[row_end(row)];
}

static const char *row_class(const struct zerg_jl_row *r)
{
    enum zerg_jl_end end = row_end(r);
    const char *rec = r->have_result ? r->result.cls : "";
    if (end == ZERG_JL_COMPLETE || end == ZERG_JL_RUNNING)
        return "";
    if (end == ZERG_JL_CRASHED)
        return "crash";
    if (end == ZERG_JL_FAILED && rec[0])
        return rec; /* the worker's own word: task, timeout, environment */
    return r->cls[0] ? r->cls : rec;
}

/* exit code, or signal (> 0), or neither (0 returned). */
static int row_exit(const struct zerg_jl_row *r, int *code, int *sig)
{
    if (r->have_result) {
        *code = r->result.exit_code;
        *sig = r->result.signal;
        return 1;
    }
    *code = r->ev_exit;
    *sig = r->ev_signal;
    return r->ev_exit_known && (*sig > 0 || *code >= 0);
}

/* Seconds it ran, or < 0 when not known. */
static double row_runtime(const struct zerg_jl_row *r)
{
    if (r->have_result)
        return (double)r->result.duration_ms / 1000;
    if (r->end_ns && r->start_ns && r->end_ns >= r->start_ns)
        return (double)(r->end_ns - r->start_ns) / 1e9;
    return -1;
}

/* An agent run has a cost, a command none. */
static int row_cost(const struct zerg_jl_row *r, double *usd)
{
    *usd = r->result.cost_usd;
    return r->have_result && (r->result.session_id[0] || *usd > 0);
}

static void clean_field(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = ' ';
}

int zerg_jl_format_tsv(const struct zerg_jl_row *r, char *buf, size_t n)
{
    char worker[16] = "-", start[ZERG_TS_MAX] = "-", rt[32] = "-", ex[24] = "-",
         cost[32] = "-", cls[16], commit[13] = "-";
    int code, sig;
    double secs = row_runtime(r), usd;
    if (r->worker >= 0)
        snprintf(worker, sizeof worker, "%d", r->worker);
    if (r->start_ns)
        zerg_clock_iso8601(r->start_ns, start);
    if (secs >= 0)
        snprintf(rt, sizeof rt, "%.3f", secs);
    if (row_exit(r, &code, &sig))
        snprintf(ex, sizeof ex, sig > 0 ? "sig%d" : "%d", sig > 0 ? sig : code);
    if (row_cost(r, &usd))
        snprintf(cost, sizeof cost, "%.4f", usd);
    snprintf(cls, sizeof cls, "%s", *row_class(r) ? row_class(r) : "-");
    clean_field(cls);
    if (r->have_result && r->result.commit[0])
        snprintf(commit, sizeof commit, "%.12s", r->result.commit);
    return snprintf(buf, n, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r->task,
                    r->attempt, worker, start, rt, ex, zerg_jl_outcome(r), cls,
                    cost, commit);
}

static int set_or_null(zerg_json *o, const char *key, int known, double v)
{
    return known ? zerg_json_set_num(o, key, v) : zerg_json_set_null(o, key);
}

zerg_json *zerg_jl_to_json(const struct zerg_jl_row *r)
{
    zerg_json *o = zerg_json_obj();
    char start[ZERG_TS_MAX], commit[13];
    int code, sig, ex = row_exit(r, &code, &sig);
    double secs = row_runtime(r), usd;
    const char *cls = row_class(r);
    snprintf(commit, sizeof commit, "%.12s", r->result.commit);
    int rc = !o || zerg_json_set_str(o, "task", r->task) ||
             zerg_json_set_num(o, "attempt", r->attempt) ||
             set_or_null(o, "worker", r->worker >= 0, r->worker) ||
             zerg_json_set_str(
                 o, "start",
                 r->start_ns ? zerg_clock_iso8601(r->start_ns, start) : NULL) ||
             set_or_null(o, "runtime", secs >= 0, secs) ||
             set_or_null(o, "exit", ex && sig <= 0, code) ||
             set_or_null(o, "signal", ex && sig > 0, sig) ||
             zerg_json_set_str(o, "outcome", zerg_jl_outcome(r)) ||
             zerg_json_set_str(o, "class", *cls ? cls : NULL) ||
             set_or_null(o, "cost", row_cost(r, &usd), usd) ||
             zerg_json_set_str(o, "commit",
                               r->have_result && commit[0] ? commit : NULL);
    if (rc) {
        zerg_json_free(o);
        return NULL;
    }
    return o;
}
