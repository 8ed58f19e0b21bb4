/* state.c - the run's state document, .zerg/state/{feature}.json.
 *
 * Three jobs: the status vocabularies, the conversion between struct
 * zerg_state and upstream's JSON shape (tasks keyed by id, workers and
 * levels keyed by number, timestamps as ISO-8601 strings, "none" as null),
 * and whole-file save/load.
 *
 * Reading is strict about what is there and lenient about what is not: a
 * key with the wrong type or an impossible value makes the document
 * corrupt (ZERG_ECORRUPT, with the key path in the message), while a
 * missing optional key takes its default, so older files still load.
 * Reading never repairs anything: a null or disagreeing task level is kept
 * as found for reconciliation to judge.
 *
 * Backups: after every successful save, the same bytes are also written
 * (atomically, without fsync) to path.bak, so .bak is always a complete
 * file written by zerg and never a file damaged by someone else.  Two
 * cheaper schemes were rejected:
 *  - hard-linking path.bak to the file just written (zerg_fsio_keep_copy):
 *    both names share one inode, so anything that damages the live file in
 *    place (`> F.json`, cp over it, an editor that keeps hard links) damages
 *    the backup with it;
 *  - linking the previous file to path.bak before replacing it: a file
 *    damaged during the run would become the backup unless every save
 *    re-parsed it first (tens of ms at 10,000 tasks).
 * The second write costs about 1 ms per MB (page cache, no fsync).  If the
 * machine dies before the kernel flushes it, the rename leaves the old .bak
 * or the new one, and the live file is durable anyway. */
#include "zerg/state.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zerg/clock.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/graph.h"

/* A state file of 10,000 tasks is about 4 MB; anything past 256 MiB is
 * not a state file zerg wrote. */
#define STATE_MAX_BYTES (256u << 20)
/* Bounds that keep a damaged file from asking for huge allocations. */
#define STATE_MAX_LEVEL 100000
#define STATE_MAX_WORKER 100000
/* Integers travel as JSON numbers (doubles): exact up to 2^53. */
#define STATE_MAX_INT64 (INT64_C(1) << 53)
#define NO_NULL INT64_MIN

/* ---- status vocabularies ---------------------------------------------- */

static const char *const task_names[] = {
    "pending", "claimed",       "in_progress", "complete",
    "failed",  "waiting_retry", "blocked",
};
static const char *const worker_names[] = {
    "starting", "ready", "busy", "backoff", "stopped", "crashed", "retired",
};
static const char *const level_names[] = {"pending", "running", "complete"};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static int name_lookup(const char *const *names, size_t n, const char *s)
{
    for (size_t i = 0; s && i < n; i++)
        if (strcmp(names[i], s) == 0)
            return (int)i;
    return -1;
}

const char *zerg_task_status_name(enum zerg_task_status s)
{
    return (unsigned)s < NELEM(task_names) ? task_names[s] : "unknown";
}

int zerg_task_status_parse(const char *s, enum zerg_task_status *out)
{
    int i = name_lookup(task_names, NELEM(task_names), s);
    if (i < 0)
        return -EINVAL;
    *out = (enum zerg_task_status)i;
    return 0;
}

int zerg_task_status_terminal(enum zerg_task_status s)
{
    return s == ZERG_TASK_COMPLETE || s == ZERG_TASK_FAILED ||
           s == ZERG_TASK_BLOCKED;
}

const char *zerg_worker_status_name(enum zerg_worker_status s)
{
    return (unsigned)s < NELEM(worker_names) ? worker_names[s] : "unknown";
}

int zerg_worker_status_parse(const char *s, enum zerg_worker_status *out)
{
    int i = name_lookup(worker_names, NELEM(worker_names), s);
    if (i < 0)
        return -EINVAL;
    *out = (enum zerg_worker_status)i;
    return 0;
}

const char *zerg_level_status_name(enum zerg_level_status s)
{
    return (unsigned)s < NELEM(level_names) ? level_names[s] : "unknown";
}

int zerg_level_status_parse(const char *s, enum zerg_level_status *out)
{
    int i = name_lookup(level_names, NELEM(level_names), s);
    if (i < 0)
        return -EINVAL;
    *out = (enum zerg_level_status)i;
    return 0;
}

/* The metrics, by name, so writing and reading cannot drift apart. */
/* clang-format off */
static const struct {
    const char *name;
    size_t off;
} metric_fields[] = {
#define M(f) {#f, offsetof(struct zerg_metrics, f)}
    M(stale_detections), M(task_reassignments), M(worker_respawns),
    M(spawn_retries),    M(worker_crashes),     M(task_timeouts),
    M(task_retries),     M(policy_errors),      M(results_fenced),
    M(reconcile_fixes),
#undef M
};
/* clang-format on */

static int64_t *metric_ptr(struct zerg_metrics *m, size_t i)
{
    return (int64_t *)((char *)m + metric_fields[i].off);
}

static int64_t metric_get(const struct zerg_metrics *m, size_t i)
{
    return *(const int64_t *)((const char *)m + metric_fields[i].off);
}

/* ---- lifecycle ---------------------------------------------------------- */

static void task_reset(struct zerg_task_state *t, int level)
{
    memset(t, 0, sizeof *t);
    t->status = ZERG_TASK_PENDING;
    t->level = level;
    t->worker_id = -1;
}

int zerg_state_init(struct zerg_state *s, const struct zerg_graph *g,
                    const char *feature, int64_t now_wall_ns)
{
    memset(s, 0, sizeof *s);
    s->version = ZERG_STATE_VERSION;
    s->feature = strdup(feature ? feature : g->feature);
    s->status = strdup("running");
    s->tasks = calloc(g->ntasks ? g->ntasks : 1, sizeof *s->tasks);
    s->levels = calloc((size_t)g->nlevels + 1, sizeof *s->levels);
    if (!s->feature || !s->status || !s->tasks || !s->levels) {
        zerg_state_close(s);
        return -ENOMEM;
    }
    s->ntasks = g->ntasks;
    for (size_t i = 0; i < g->ntasks; i++)
        task_reset(&s->tasks[i], g->tasks[i].level);
    s->nlevels = g->nlevels;
    /* Wall ms in hex plus the pid: unique per rush on one machine. */
    snprintf(s->run_id, sizeof s->run_id, "%llx-%x",
             (unsigned long long)(now_wall_ns / ZERG_NS_PER_MS),
             (unsigned)getpid());
    s->started_at = now_wall_ns;
    s->updated_at = now_wall_ns;
    s->next_epoch = 1; /* 0 means "no incarnation" in task and worker */
    return 0;
}

void zerg_state_close(struct zerg_state *s)
{
    if (!s)
        return;
    for (size_t i = 0; s->tasks && i < s->ntasks; i++) {
        free(s->tasks[i].error);
        free(s->tasks[i].reason);
    }
    free(s->tasks);
    free(s->workers);
    free(s->levels);
    free(s->feature);
    free(s->error);
    free(s->status);
    memset(s, 0, sizeof *s);
}

/* ---- to JSON ------------------------------------------------------------ */

/* The document is built append-only: every key is written once, so the
 * duplicate search of zerg_json_set (linear per key) is skipped and each
 * object is allocated at its final size.  At 10,000 tasks this takes the
 * tree from 210 ms to a few ms. */

/* An empty object with room for n keys. */
static zerg_json *obj_sized(size_t n)
{
    zerg_json *o = zerg_json_obj();
    if (!o || n == 0)
        return o;
    o->u.obj.keys = malloc(n * sizeof *o->u.obj.keys);
    o->u.obj.vals = malloc(n * sizeof *o->u.obj.vals);
    if (!o->u.obj.keys || !o->u.obj.vals) {
        zerg_json_free(o);
        return NULL;
    }
    o->u.obj.cap = n;
    return o;
}

/* Appends key -> v (owned, NULL = out of memory) to an obj_sized object. */
static int add(zerg_json *o, const char *key, zerg_json *v)
{
    char *k = v && o->u.obj.n < o->u.obj.cap ? strdup(key) : NULL;
    if (!k) {
        zerg_json_free(v);
        return -ENOMEM;
    }
    o->u.obj.keys[o->u.obj.n] = k;
    o->u.obj.vals[o->u.obj.n++] = v;
    return 0;
}

static int add_num(zerg_json *o, const char *key, double n)
{
    return add(o, key, zerg_json_num(n));
}

/* NULL -> null */
static int add_str(zerg_json *o, const char *key, const char *str)
{
    return add(o, key, zerg_json_str(str));
}

/* Wall ns as ISO-8601, 0 -> null. */
static int add_ts(zerg_json *o, const char *key, int64_t ns)
{
    char buf[ZERG_TS_MAX];
    if (ns == 0)
        return add(o, key, zerg_json_null());
    return add_str(o, key, zerg_clock_iso8601(ns, buf));
}

/* An integer, or null when it equals none. */
static int add_int(zerg_json *o, const char *key, int64_t v, int64_t none)
{
    if (v == none)
        return add(o, key, zerg_json_null());
    return add_num(o, key, (double)v);
}

static zerg_json *task_to_json(const struct zerg_task_state *t)
{
    zerg_json *o = obj_sized(14);
    if (!o || add_str(o, "status", zerg_task_status_name(t->status)) ||
        add_int(o, "level", t->level, 0) ||
        add_int(o, "worker_id", t->worker_id, -1) ||
        add_num(o, "retry_count", t->retry_count) ||
        add_num(o, "crash_count", t->crash_count) ||
        add_num(o, "attempt", t->attempt) ||
        add_num(o, "epoch", (double)t->epoch) ||
        add_ts(o, "claimed_at", t->claimed_at) ||
        add_ts(o, "started_at", t->started_at) ||
        add_ts(o, "completed_at", t->completed_at) ||
        add_ts(o, "retry_at", t->retry_at) ||
        add_num(o, "duration_ms", (double)t->duration_ms) ||
        add_str(o, "error", t->error) || add_str(o, "reason", t->reason)) {
        zerg_json_free(o);
        return NULL;
    }
    return o;
}

static zerg_json *worker_to_json(const struct zerg_worker_state *w,
                                 const struct zerg_graph *g)
{
    const char *task = NULL;
    if (w->task >= 0 && (size_t)w->task < g->ntasks)
        task = g->tasks[w->task].id;
    zerg_json *o = obj_sized(9);
    if (!o || add_str(o, "status", zerg_worker_status_name(w->status)) ||
        add_int(o, "pid", w->pid, 0) ||
        add_str(o, "container_id",
                w->container_id[0] ? w->container_id : NULL) ||
        add_num(o, "respawn_count", w->respawn_count) ||
        add_num(o, "spawn_attempt", w->spawn_attempt) ||
        add_num(o, "epoch", (double)w->epoch) || add_str(o, "task", task) ||
        add_ts(o, "started_at", w->started_at) ||
        add_ts(o, "ready_at", w->ready_at)) {
        zerg_json_free(o);
        return NULL;
    }
    return o;
}

static zerg_json *level_to_json(const struct zerg_level_state *l)
{
    zerg_json *o = obj_sized(3);
    if (!o || add_str(o, "status", zerg_level_status_name(l->status)) ||
        add_ts(o, "started_at", l->started_at) ||
        add_ts(o, "completed_at", l->completed_at)) {
        zerg_json_free(o);
        return NULL;
    }
    return o;
}

static zerg_json *tasks_to_json(const struct zerg_state *s,
                                const struct zerg_graph *g)
{
    zerg_json *tasks = obj_sized(s->ntasks);
    for (size_t i = 0; tasks && i < s->ntasks; i++) {
        if (add(tasks, g->tasks[i].id, task_to_json(&s->tasks[i]))) {
            zerg_json_free(tasks);
            return NULL;
        }
    }
    return tasks;
}

static zerg_json *workers_to_json(const struct zerg_state *s,
                                  const struct zerg_graph *g)
{
    zerg_json *workers = obj_sized(s->nworkers);
    for (size_t i = 0; workers && i < s->nworkers; i++) {
        char key[16];
        snprintf(key, sizeof key, "%d", s->workers[i].id);
        if (add(workers, key, worker_to_json(&s->workers[i], g))) {
            zerg_json_free(workers);
            return NULL;
        }
    }
    return workers;
}

static zerg_json *levels_to_json(const struct zerg_state *s)
{
    size_t n = s->levels && s->nlevels > 0 ? (size_t)s->nlevels : 0;
    zerg_json *levels = obj_sized(n);
    for (size_t i = 1; levels && i <= n; i++) {
        char key[16];
        snprintf(key, sizeof key, "%zu", i);
        if (add(levels, key, level_to_json(&s->levels[i]))) {
            zerg_json_free(levels);
            return NULL;
        }
    }
    return levels;
}

static zerg_json *metrics_to_json(const struct zerg_metrics *m)
{
    zerg_json *o = obj_sized(NELEM(metric_fields));
    for (size_t i = 0; o && i < NELEM(metric_fields); i++) {
        if (add_num(o, metric_fields[i].name, (double)metric_get(m, i))) {
            zerg_json_free(o);
            return NULL;
        }
    }
    return o;
}

zerg_json *zerg_state_to_json(const struct zerg_state *s,
                              const struct zerg_graph *g)
{
    if (s->ntasks != g->ntasks)
        return NULL;
    zerg_json *doc = obj_sized(14);
    if (!doc || add_num(doc, "version", s->version) ||
        add_str(doc, "feature", s->feature) ||
        add_str(doc, "run_id", s->run_id[0] ? s->run_id : NULL) ||
        add_ts(doc, "started_at", s->started_at) ||
        add_ts(doc, "updated_at", s->updated_at) ||
        add_num(doc, "current_level", s->current_level) ||
        add_str(doc, "status", s->status) ||
        add(doc, "tasks", tasks_to_json(s, g)) ||
        add(doc, "workers", workers_to_json(s, g)) ||
        add(doc, "levels", levels_to_json(s)) ||
        add(doc, "metrics", metrics_to_json(&s->metrics)) ||
        add_num(doc, "next_epoch", (double)s->next_epoch) ||
        add(doc, "paused", zerg_json_bool(s->paused)) ||
        add_str(doc, "error", s->error)) {
        zerg_json_free(doc);
        return NULL;
    }
    return doc;
}

/* ---- from JSON: typed readers that name the key path on error --------- */

/* Where a reader is looking: an object and its path ("tasks.A-L1-001"). */
struct rd {
    const zerg_json *obj;
    const char *path;
    struct zerg_err *err;
};

/* Short text for a value in a message: -1, "donee", an object, ... */
static const char *describe(const zerg_json *v, char *buf, size_t size)
{
    switch (v->type) {
    case ZERG_JSON_NUMBER:
        snprintf(buf, size, "%.15g", v->u.number);
        break;
    case ZERG_JSON_STRING:
        snprintf(buf, size, "\"%.40s%s\"", v->u.str.s,
                 v->u.str.len > 40 ? "..." : "");
        break;
    case ZERG_JSON_BOOL:
        return v->u.boolean ? "true" : "false";
    case ZERG_JSON_ARRAY:
        return "an array";
    case ZERG_JSON_OBJECT:
        return "an object";
    default:
        return "null";
    }
    return buf;
}

__attribute__((format(printf, 3, 4))) static int
bad(const struct rd *r, const char *key, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return zerg_err_set(r->err, ZERG_ECORRUPT, "%s%s%s: %s", r->path,
                        *r->path && key ? "." : "", key ? key : "", what);
}

static int bad_type(const struct rd *r, const char *key, const char *want,
                    const zerg_json *v)
{
    char buf[64];
    return bad(r, key, "expected %s, got %s", want,
               describe(v, buf, sizeof buf));
}

/* Integer in [min, max]; missing keeps *out; null gives if_null unless
 * that is NO_NULL. */
static int rd_int(const struct rd *r, const char *key, int64_t min, int64_t max,
                  int64_t if_null, int64_t *out)
{
    const zerg_json *v = zerg_json_get(r->obj, key);
    if (!v)
        return 0;
    if (v->type == ZERG_JSON_NULL && if_null != NO_NULL) {
        *out = if_null;
        return 0;
    }
    double d = v->type == ZERG_JSON_NUMBER ? v->u.number : 0.5;
    int integral = d == floor(d); /* false for NaN */
    if (integral && d > (double)max)
        return bad(r, key, "%.15g is too large (at most %lld)", d,
                   (long long)max);
    if (!integral || !(d >= (double)min)) {
        char want[64];
        snprintf(want, sizeof want, "an integer >= %lld%s", (long long)min,
                 if_null != NO_NULL ? " or null" : "");
        return bad_type(r, key, want, v);
    }
    *out = (int64_t)d;
    return 0;
}

static int rd_i(const struct rd *r, const char *key, int min, int64_t if_null,
                int *out)
{
    int64_t v = *out;
    int rc = rd_int(r, key, min, INT_MAX, if_null, &v);
    *out = (int)v;
    return rc;
}

static int rd_i64(const struct rd *r, const char *key, int64_t *out)
{
    return rd_int(r, key, 0, STATE_MAX_INT64, 0, out);
}

static int rd_u64(const struct rd *r, const char *key, uint64_t *out)
{
    int64_t v = (int64_t)*out;
    int rc = rd_int(r, key, 0, STATE_MAX_INT64, NO_NULL, &v);
    *out = (uint64_t)v;
    return rc;
}

/* ISO-8601 time or null (0); missing keeps *out. */
static int rd_ts(const struct rd *r, const char *key, int64_t *out)
{
    const zerg_json *v = zerg_json_get(r->obj, key);
    if (!v)
        return 0;
    if (v->type == ZERG_JSON_NULL) {
        *out = 0;
        return 0;
    }
    if (v->type != ZERG_JSON_STRING ||
        zerg_clock_parse_iso8601(v->u.str.s, out) != 0)
        return bad_type(r, key, "an ISO-8601 time or null", v);
    return 0;
}

/* String or null (NULL); *out must be NULL on entry. */
static int rd_str(const struct rd *r, const char *key, char **out)
{
    const zerg_json *v = zerg_json_get(r->obj, key);
    if (!v || v->type == ZERG_JSON_NULL)
        return 0;
    if (v->type != ZERG_JSON_STRING)
        return bad_type(r, key, "a string or null", v);
    *out = strdup(v->u.str.s);
    return *out ? 0 : zerg_err_set(r->err, -ENOMEM, "out of memory");
}

/* A required status from names[]. */
static int rd_status(const struct rd *r, const char *const *names, size_t n,
                     int *out)
{
    const zerg_json *v = zerg_json_get(r->obj, "status");
    if (!v)
        return bad(r, "status", "missing");
    if (v->type != ZERG_JSON_STRING)
        return bad_type(r, "status", "a status string", v);
    int i = name_lookup(names, n, v->u.str.s);
    if (i < 0) {
        char buf[64];
        return bad(r, "status", "unknown status %s",
                   describe(v, buf, sizeof buf));
    }
    *out = i;
    return 0;
}

/* A required member of the given type (checked when present). */
static int rd_member(const struct rd *r, const char *key,
                     enum zerg_json_type type, const char *want,
                     const zerg_json **out)
{
    const zerg_json *v = zerg_json_get(r->obj, key);
    if (!v)
        return bad(r, key, "missing");
    if (v->type != type)
        return bad_type(r, key, want, v);
    *out = v;
    return 0;
}

/* A number key ("0", "12"): plain decimal, no sign, no leading zero. */
static int key_number(const char *key, long min, long max)
{
    size_t n = strlen(key);
    if (n == 0 || n > 9 || (key[0] == '0' && n > 1) ||
        strspn(key, "0123456789") != n)
        return -1;
    long v = strtol(key, NULL, 10);
    return v >= min && v <= max ? (int)v : -1;
}

/* ---- from JSON: sections ------------------------------------------------ */

static int read_task(struct zerg_task_state *t, const char *id,
                     const zerg_json *v, struct zerg_err *err)
{
    char path[128];
    snprintf(path, sizeof path, "tasks.%s", id);
    struct rd r = {v, path, err};
    if (v->type != ZERG_JSON_OBJECT) {
        struct rd up = {NULL, "tasks", err};
        return bad_type(&up, id, "an object", v);
    }
    int st = 0;
    int rc = rd_status(&r, task_names, NELEM(task_names), &st);
    t->status = (enum zerg_task_status)st;
    if (!rc)
        rc = rd_i(&r, "level", 1, 0, &t->level);
    if (!rc && t->level > STATE_MAX_LEVEL)
        rc = bad(&r, "level", "%d is too large (at most %d)", t->level,
                 STATE_MAX_LEVEL);
    if (rc || (rc = rd_i(&r, "worker_id", 0, -1, &t->worker_id)) ||
        (rc = rd_i(&r, "retry_count", 0, NO_NULL, &t->retry_count)) ||
        (rc = rd_i(&r, "crash_count", 0, NO_NULL, &t->crash_count)) ||
        (rc = rd_i(&r, "attempt", 0, NO_NULL, &t->attempt)) ||
        (rc = rd_u64(&r, "epoch", &t->epoch)) ||
        (rc = rd_ts(&r, "claimed_at", &t->claimed_at)) ||
        (rc = rd_ts(&r, "started_at", &t->started_at)) ||
        (rc = rd_ts(&r, "completed_at", &t->completed_at)) ||
        (rc = rd_ts(&r, "retry_at", &t->retry_at)) ||
        (rc = rd_i64(&r, "duration_ms", &t->duration_ms)) ||
        (rc = rd_str(&r, "error", &t->error)) ||
        (rc = rd_str(&r, "reason", &t->reason)))
        return rc;
    return 0;
}

static int read_tasks(struct zerg_state *s, const struct zerg_graph *g,
                      const zerg_json *doc, size_t *dropped,
                      struct zerg_err *err)
{
    struct rd top = {doc, "", err};
    const zerg_json *tasks = NULL;
    int rc = rd_member(&top, "tasks", ZERG_JSON_OBJECT, "an object", &tasks);
    if (rc)
        return rc;
    for (size_t i = 0; i < tasks->u.obj.n; i++) {
        const char *id = tasks->u.obj.keys[i];
        ssize_t at = zerg_graph_find(g, id);
        if (at < 0) {
            (*dropped)++; /* the graph no longer has it */
            continue;
        }
        rc = read_task(&s->tasks[at], id, tasks->u.obj.vals[i], err);
        if (rc)
            return rc;
    }
    return 0;
}

static int read_worker(struct zerg_worker_state *w, const char *key,
                       const zerg_json *v, const struct zerg_graph *g,
                       struct zerg_err *err)
{
    char path[96];
    snprintf(path, sizeof path, "workers.%s", key);
    struct rd r = {v, path, err};
    if (v->type != ZERG_JSON_OBJECT) {
        struct rd up = {NULL, "workers", err};
        return bad_type(&up, key, "an object", v);
    }
    char *cid = NULL, *task = NULL;
    int st = 0, rc;
    if ((rc = rd_status(&r, worker_names, NELEM(worker_names), &st)) ||
        (rc = rd_i(&r, "pid", 0, 0, &w->pid)) ||
        (rc = rd_str(&r, "container_id", &cid)) ||
        (rc = rd_i(&r, "respawn_count", 0, NO_NULL, &w->respawn_count)) ||
        (rc = rd_i(&r, "spawn_attempt", 0, NO_NULL, &w->spawn_attempt)) ||
        (rc = rd_u64(&r, "epoch", &w->epoch)) ||
        (rc = rd_str(&r, "task", &task)) ||
        (rc = rd_ts(&r, "started_at", &w->started_at)) ||
        (rc = rd_ts(&r, "ready_at", &w->ready_at)))
        goto out;
    w->status = (enum zerg_worker_status)st;
    if (cid && strlen(cid) >= sizeof w->container_id) {
        rc = bad(&r, "container_id", "longer than %zu characters",
                 sizeof w->container_id - 1);
        goto out;
    }
    snprintf(w->container_id, sizeof w->container_id, "%s", cid ? cid : "");
    w->task = task ? (int)zerg_graph_find(g, task) : -1;
out:
    free(cid);
    free(task);
    return rc;
}

static int worker_cmp(const void *a, const void *b)
{
    const struct zerg_worker_state *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

/* Workers come back sorted by slot: a parsed object has no useful order. */
static int read_workers(struct zerg_state *s, const struct zerg_graph *g,
                        const zerg_json *doc, struct zerg_err *err)
{
    const zerg_json *workers = zerg_json_get(doc, "workers");
    struct rd top = {doc, "", err};
    if (!workers || workers->type == ZERG_JSON_NULL)
        return 0;
    if (workers->type != ZERG_JSON_OBJECT)
        return bad_type(&top, "workers", "an object", workers);
    size_t n = workers->u.obj.n;
    s->workers = calloc(n ? n : 1, sizeof *s->workers);
    if (!s->workers)
        return zerg_err_set(err, -ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const char *key = workers->u.obj.keys[i];
        struct zerg_worker_state *w = &s->workers[i];
        w->id = key_number(key, 0, STATE_MAX_WORKER);
        w->task = -1;
        if (w->id < 0) {
            struct rd up = {NULL, "workers", err};
            return bad(&up, NULL, "key \"%.40s\" is not a worker number", key);
        }
        int rc = read_worker(w, key, workers->u.obj.vals[i], g, err);
        s->nworkers = i + 1;
        if (rc)
            return rc;
    }
    qsort(s->workers, n, sizeof *s->workers, worker_cmp);
    return 0;
}

static int read_level(struct zerg_level_state *l, const char *key,
                      const zerg_json *v, struct zerg_err *err)
{
    char path[64];
    snprintf(path, sizeof path, "levels.%s", key);
    struct rd r = {v, path, err};
    if (v->type != ZERG_JSON_OBJECT) {
        struct rd up = {NULL, "levels", err};
        return bad_type(&up, key, "an object", v);
    }
    int st = 0;
    int rc = rd_status(&r, level_names, NELEM(level_names), &st);
    l->status = (enum zerg_level_status)st;
    if (!rc)
        rc = rd_ts(&r, "started_at", &l->started_at);
    if (!rc)
        rc = rd_ts(&r, "completed_at", &l->completed_at);
    return rc;
}

/* levels[1..nlevels] must cover the graph, every level key in the file and
 * every task level, so callers can index s->levels[task.level]. */
static int read_levels(struct zerg_state *s, const struct zerg_graph *g,
                       const zerg_json *doc, struct zerg_err *err)
{
    const zerg_json *levels = zerg_json_get(doc, "levels");
    struct rd top = {doc, "", err}, up = {NULL, "levels", err};
    if (levels && levels->type == ZERG_JSON_NULL)
        levels = NULL;
    if (levels && levels->type != ZERG_JSON_OBJECT)
        return bad_type(&top, "levels", "an object", levels);
    int max = g->nlevels;
    for (size_t i = 0; i < s->ntasks; i++)
        max = s->tasks[i].level > max ? s->tasks[i].level : max;
    for (size_t i = 0; levels && i < levels->u.obj.n; i++) {
        int n = key_number(levels->u.obj.keys[i], 1, STATE_MAX_LEVEL);
        if (n < 0)
            return bad(&up, NULL, "key \"%.40s\" is not a level number",
                       levels->u.obj.keys[i]);
        max = n > max ? n : max;
    }
    s->levels = calloc((size_t)max + 1, sizeof *s->levels);
    if (!s->levels)
        return zerg_err_set(err, -ENOMEM, "out of memory");
    s->nlevels = max;
    for (size_t i = 0; levels && i < levels->u.obj.n; i++) {
        const char *key = levels->u.obj.keys[i];
        int rc = read_level(&s->levels[key_number(key, 1, STATE_MAX_LEVEL)],
                            key, levels->u.obj.vals[i], err);
        if (rc)
            return rc;
    }
    return 0;
}

static int read_metrics(struct zerg_state *s, const zerg_json *doc,
                        struct zerg_err *err)
{
    const zerg_json *m = zerg_json_get(doc, "metrics");
    struct rd top = {doc, "", err}, r = {m, "metrics", err};
    if (!m || m->type == ZERG_JSON_NULL)
        return 0;
    if (m->type != ZERG_JSON_OBJECT)
        return bad_type(&top, "metrics", "an object", m);
    for (size_t i = 0; i < NELEM(metric_fields); i++) {
        int rc = rd_int(&r, metric_fields[i].name, 0, STATE_MAX_INT64, NO_NULL,
                        metric_ptr(&s->metrics, i));
        if (rc)
            return rc;
    }
    return 0;
}

static int read_header(struct zerg_state *s, const zerg_json *doc,
                       struct zerg_err *err)
{
    struct rd r = {doc, "", err};
    const zerg_json *feature = NULL, *paused;
    char *run_id = NULL;
    int64_t version = ZERG_STATE_VERSION;
    int rc = rd_int(&r, "version", 1, INT_MAX, NO_NULL, &version);
    if (!rc && version != ZERG_STATE_VERSION)
        rc = bad(&r, "version",
                 "version %lld is not supported (this "
                 "zerg reads version %d)",
                 (long long)version, ZERG_STATE_VERSION);
    if (rc ||
        (rc = rd_member(&r, "feature", ZERG_JSON_STRING, "a string", &feature)))
        return rc;
    s->version = (int)version;
    if (!(s->feature = strdup(feature->u.str.s)))
        return zerg_err_set(err, -ENOMEM, "out of memory");
    if ((rc = rd_str(&r, "run_id", &run_id)))
        return rc;
    if (run_id && strlen(run_id) >= sizeof s->run_id)
        rc = bad(&r, "run_id", "longer than %zu characters",
                 sizeof s->run_id - 1);
    snprintf(s->run_id, sizeof s->run_id, "%s", run_id ? run_id : "");
    free(run_id);
    if (rc || (rc = rd_ts(&r, "started_at", &s->started_at)) ||
        (rc = rd_ts(&r, "updated_at", &s->updated_at)) ||
        (rc = rd_i(&r, "current_level", 0, NO_NULL, &s->current_level)) ||
        (rc = rd_str(&r, "status", &s->status)) ||
        (rc = rd_u64(&r, "next_epoch", &s->next_epoch)) ||
        (rc = rd_str(&r, "error", &s->error)))
        return rc;
    paused = zerg_json_get(doc, "paused");
    if (paused && paused->type != ZERG_JSON_BOOL)
        return bad_type(&r, "paused", "true or false", paused);
    s->paused = paused ? paused->u.boolean : 0;
    return 0;
}

int zerg_state_from_json(struct zerg_state *out, const struct zerg_graph *g,
                         const zerg_json *doc, size_t *dropped,
                         struct zerg_err *err)
{
    struct zerg_state s = {0};
    size_t ndropped = 0;
    int rc;

    memset(out, 0, sizeof *out);
    if (!doc || doc->type != ZERG_JSON_OBJECT)
        return zerg_err_set(err, ZERG_ECORRUPT, "not a JSON object (got %s)",
                            doc ? zerg_json_type_name(doc->type) : "nothing");
    s.next_epoch = 1;
    if ((rc = read_header(&s, doc, err)))
        goto cleanup;
    s.tasks = calloc(g->ntasks ? g->ntasks : 1, sizeof *s.tasks);
    if (!s.tasks) {
        rc = zerg_err_set(err, -ENOMEM, "out of memory");
        goto cleanup;
    }
    s.ntasks = g->ntasks;
    for (size_t i = 0; i < g->ntasks; i++)
        task_reset(&s.tasks[i], g->tasks[i].level);
    if ((rc = read_tasks(&s, g, doc, &ndropped, err)) ||
        (rc = read_workers(&s, g, doc, err)) ||
        (rc = read_levels(&s, g, doc, err)) ||
        (rc = read_metrics(&s, doc, err)))
        goto cleanup;
    *out = s;
    if (dropped)
        *dropped = ndropped;
    return 0;
cleanup:
    zerg_state_close(&s);
    return rc;
}

/* ---- files -------------------------------------------------------------- */

/* The corrupt-file sentence: what, that nothing was touched, the way
 * back. */
static int corrupt(struct zerg_err *err, const char *path, const char *why)
{
    char bak[PATH_MAX];
    int have_bak = zerg_fsio_path(bak, sizeof bak, "%s.bak", path) == 0 &&
                   access(bak, F_OK) == 0;
    if (have_bak)
        return zerg_err_set(
            err, ZERG_ECORRUPT,
            "%s is corrupt (%s). It was not modified. The last good copy is "
            "%s: inspect both, then 'cp %s %s' to resume from it, or remove "
            "%s to start over.",
            path, why, bak, bak, path, path);
    return zerg_err_set(err, ZERG_ECORRUPT,
                        "%s is corrupt (%s). It was not modified. Inspect it, "
                        "then remove %s to start over.",
                        path, why, path);
}

int zerg_state_load(struct zerg_state *s, const struct zerg_graph *g,
                    const char *path, size_t *dropped, struct zerg_err *err)
{
    struct zerg_err why = {0};
    char *text = NULL;
    size_t len = 0;
    zerg_json *doc = NULL;

    memset(s, 0, sizeof *s);
    int rc = zerg_fsio_read_all(path, STATE_MAX_BYTES, &text, &len, &why);
    if (rc == -EFBIG) {
        rc = corrupt(err, path, "larger than 256 MiB");
    } else if (rc) {
        zerg_err_set(err, rc, "%s", why.msg);
    } else if (!(doc = zerg_json_parse(text, len, &why))) {
        rc = corrupt(err, path, why.msg[0] ? why.msg : "not JSON");
    } else if ((rc = zerg_state_from_json(s, g, doc, dropped, &why))) {
        if (rc == ZERG_ECORRUPT)
            corrupt(err, path, why.msg);
        else
            zerg_err_set(err, rc, "cannot load %s: %s", path, why.msg);
    }
    zerg_json_free(doc);
    free(text);
    return rc;
}

int zerg_state_save(const struct zerg_state *s, const struct zerg_graph *g,
                    const char *path, struct zerg_err *err)
{
    char bak[PATH_MAX];
    char *text = NULL;
    size_t len = 0;
    zerg_json *doc = NULL;
    int rc;

    if (zerg_fsio_path(bak, sizeof bak, "%s.bak", path))
        return zerg_err_set(err, -ENAMETOOLONG, "cannot save %s: path too long",
                            path);
    if (s->ntasks != g->ntasks)
        return zerg_err_set(err, -EINVAL,
                            "cannot save %s: the state has %zu "
                            "tasks but the graph %zu",
                            path, s->ntasks, g->ntasks);
    if (!(doc = zerg_state_to_json(s, g))) {
        rc = zerg_err_set(err, -ENOMEM, "cannot save %s: out of memory", path);
        goto cleanup;
    }
    struct zerg_err why = {0};
    if (!(text = zerg_json_encode(doc, &len, &why))) {
        rc = zerg_err_set(err, why.code ? why.code : -ENOMEM,
                          "cannot save %s: %s", path, why.msg);
        goto cleanup;
    }
    rc = zerg_fsio_write_atomic(path, text, len, ZERG_FSIO_DURABLE, err);
    /* A failed backup write leaves the previous .bak, still a complete
     * file written by zerg; the save itself succeeded and the run goes on. */
    if (rc == 0)
        (void)zerg_fsio_write_atomic(bak, text, len, ZERG_FSIO_NOSYNC, NULL);
cleanup:
    free(text);
    zerg_json_free(doc);
    return rc;
}

/* ---- queries ------------------------------------------------------------ */

int zerg_state_level_done(const struct zerg_state *s,
                          const struct zerg_graph *g, int level)
{
    for (size_t i = 0; i < s->ntasks; i++) {
        /* An unplaced task (level null in the file) counts in its graph
         * level until reconciliation places it, so no level is declared
         * done while one of its tasks is unaccounted for. */
        int at = s->tasks[i].level;
        if (at == 0 && i < g->ntasks)
            at = g->tasks[i].level;
        if (at == level && !zerg_task_status_terminal(s->tasks[i].status))
            return 0;
    }
    return 1;
}

void zerg_state_count(const struct zerg_state *s, size_t counts[7])
{
    memset(counts, 0, 7 * sizeof counts[0]);
    for (size_t i = 0; i < s->ntasks; i++)
        if ((unsigned)s->tasks[i].status < 7)
            counts[s->tasks[i].status]++;
}
