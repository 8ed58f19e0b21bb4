/* state_read.c - the state document back into struct zerg_state (the
 * shape state_json.c writes).
 *
 * Reading is strict about what is there and lenient about what is not: a
 * key with the wrong type or an impossible value makes the document
 * corrupt (ZERG_ECORRUPT, with the key path in the message), while a
 * missing optional key takes its default, so older files still load.
 * Reading never repairs anything: a null or disagreeing task level is kept
 * as found for reconciliation to judge. */
#include "zerg/state.h"
#include "zerg/task_fsm.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/clock.h"
#include "zerg/err.h"
#include "zerg/graph.h"
#include "zerg/json.h"

#include "state_internal.h"

/* Bounds that keep a damaged file from asking for huge allocations. */
#define STATE_MAX_LEVEL 100000
#define STATE_MAX_WORKER 100000
/* Integers travel as JSON numbers (doubles): exact up to 2^53. */
#define STATE_MAX_INT64 (INT64_C(1) << 53)
#define NO_NULL INT64_MIN

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

/* A git object id (40 or 64 lowercase hex digits), or null/missing = "". */
static int rd_oid(const struct rd *r, const char *key, char out[65])
{
    const zerg_json *v = zerg_json_get(r->obj, key);
    out[0] = '\0';
    if (!v || v->type == ZERG_JSON_NULL)
        return 0;
    size_t n = v->type == ZERG_JSON_STRING ? v->u.str.len : 0;
    int ok = n == 40 || n == 64;
    for (size_t i = 0; ok && i < n; i++)
        ok = strchr("0123456789abcdef", v->u.str.s[i]) != NULL;
    if (!ok)
        return bad_type(r, key, "a git object id (hex) or null", v);
    memcpy(out, v->u.str.s, n + 1);
    return 0;
}

/* A task's recorded agent spend in USD: a finite number >= 0. */
static int rd_cost(const struct rd *r, double *out)
{
    const zerg_json *v = zerg_json_get(r->obj, "cost_usd");
    if (!v || v->type == ZERG_JSON_NULL)
        return 0;
    double d = zerg_json_as_num(v, -1);
    if (v->type != ZERG_JSON_NUMBER || !(d >= 0) || d > 1e12)
        return bad_type(r, "cost_usd", "a number of dollars >= 0", v);
    *out = d;
    return 0;
}

static int rd_text(const struct rd *r, const char *key, char *out, size_t n)
{
    char *s = NULL;
    int rc = rd_str(r, key, &s);
    if (!rc && s)
        snprintf(out, n, "%s", s);
    free(s);
    return rc;
}

/* git.refs: {"refs/...": "oid", ...}, the refs zerg created.  Missing
 * (a document of an older zerg) leaves known 0: nobody knows then. */
static int rd_refs(const struct rd *r, struct zerg_state *s)
{
    const zerg_json *v = zerg_json_get(r->obj, "refs");
    if (!v || v->type == ZERG_JSON_NULL)
        return 0;
    if (!zerg_json_is(v, ZERG_JSON_OBJECT))
        return bad_type(r, "refs", "an object of ref names and ids", v);
    struct rd in = {v, "git.refs", r->err};
    s->git_refs.known = 1;
    for (size_t i = 0; i < zerg_json_len(v); i++) {
        const char *name = zerg_json_key_at(v, i);
        char oid[65];
        int rc = strncmp(name, "refs/", 5)
                     ? bad(&in, name, "not a full ref name (refs/...)")
                     : rd_oid(&in, name, oid);
        if (!rc && zerg_state_ref_set(s, name, oid))
            rc = zerg_err_set(r->err, -ENOMEM, "out of memory");
        if (rc)
            return rc;
    }
    return 0;
}

/* The run's git object {base, branch, refs} (worktree isolation), or
 * null: a run that made no ref (isolation none). */
static int rd_git(const struct rd *top, struct zerg_state *s)
{
    const zerg_json *v = zerg_json_get(top->obj, "git");
    s->git_refs.known = v != NULL;
    if (!v || v->type == ZERG_JSON_NULL)
        return 0;
    if (v->type != ZERG_JSON_OBJECT)
        return bad_type(top, "git", "an object or null", v);
    struct rd r = {v, "git", top->err};
    char *branch = NULL;
    s->git_refs.known = 0;
    int rc = rd_oid(&r, "base", s->git_base);
    if (!rc)
        rc = rd_str(&r, "branch", &branch);
    if (!rc && branch && strlen(branch) >= sizeof s->git_branch)
        rc = bad(&r, "branch", "longer than %zu characters",
                 sizeof s->git_branch - 1);
    if (!rc)
        snprintf(s->git_branch, sizeof s->git_branch, "%s",
                 branch ? branch : "");
    free(branch);
    return rc ? rc : rd_refs(&r, s);
}

int state_git_from_json(struct zerg_state *s, const zerg_json *doc,
                        struct zerg_err *err)
{
    if (!doc || doc->type != ZERG_JSON_OBJECT)
        return zerg_err_set(err, ZERG_ECORRUPT, "not a JSON object (got %s)",
                            doc ? zerg_json_type_name(doc->type) : "nothing");
    struct rd r = {doc, "", err};
    return rd_git(&r, s);
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
    int i = state_name_lookup(names, n, v->u.str.s);
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
    int rc = rd_status(&r, state_task_names, NELEM(state_task_names), &st);
    zerg_task_set_initial(t, (enum zerg_task_status)st);
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
        (rc = rd_ts(&r, "claimed_at", &t->claimed_at_wall_ns)) ||
        (rc = rd_ts(&r, "started_at", &t->started_at_wall_ns)) ||
        (rc = rd_ts(&r, "completed_at", &t->completed_at_wall_ns)) ||
        (rc = rd_ts(&r, "retry_at", &t->retry_at_wall_ns)) ||
        (rc = rd_i64(&r, "duration_ms", &t->duration_ms)) ||
        (rc = rd_i64(&r, "prev_duration_ms", &t->prev_duration_ms)) ||
        (rc = rd_str(&r, "error", &t->error)) ||
        (rc = rd_str(&r, "reason", &t->reason)) ||
        (rc = rd_oid(&r, "commit", t->commit)) ||
        (rc = rd_i(&r, "conflict_count", 0, 0, &t->conflict_count)) ||
        (rc = rd_str(&r, "conflict_paths", &t->conflict_paths)) ||
        (rc = rd_oid(&r, "review_commit", t->review_commit)) ||
        (rc = rd_oid(&r, "review_base", t->review_base)) ||
        (rc = rd_i(&r, "review_worker", -1, -1, &t->review_worker)) ||
        (rc = rd_str(&r, "review_note", &t->review_note)) ||
        (rc = rd_i64(&r, "input_tokens", &t->input_tokens)) ||
        (rc = rd_i64(&r, "output_tokens", &t->output_tokens)) ||
        (rc = rd_i64(&r, "cache_read_tokens", &t->cache_read_tokens)) ||
        (rc = rd_i64(&r, "cache_write_tokens", &t->cache_write_tokens)) ||
        (rc = rd_i(&r, "cost_estimated", 0, 0, &t->cost_estimated)) ||
        (rc = rd_cost(&r, &t->cost_usd)) ||
        (rc = rd_text(&r, "model", t->model, sizeof t->model)) ||
        (rc = rd_text(&r, "session_id", t->session_id, sizeof t->session_id)))
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
    if ((rc = rd_status(&r, state_worker_names, NELEM(state_worker_names),
                        &st)) ||
        (rc = rd_i(&r, "pid", 0, 0, &w->pid)) ||
        (rc = rd_str(&r, "container_id", &cid)) ||
        (rc = rd_i(&r, "respawn_count", 0, NO_NULL, &w->respawn_count)) ||
        (rc = rd_i(&r, "spawn_attempt", 0, NO_NULL, &w->spawn_attempt)) ||
        (rc = rd_u64(&r, "epoch", &w->epoch)) ||
        (rc = rd_str(&r, "task", &task)) ||
        (rc = rd_ts(&r, "started_at", &w->started_at_wall_ns)) ||
        (rc = rd_ts(&r, "ready_at", &w->ready_at_wall_ns)))
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
    int rc = rd_status(&r, state_level_names, NELEM(state_level_names), &st);
    l->status = (enum zerg_level_status)st;
    if (!rc)
        rc = rd_ts(&r, "started_at", &l->started_at_wall_ns);
    if (!rc)
        rc = rd_ts(&r, "completed_at", &l->completed_at_wall_ns);
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
    for (size_t i = 0; i < zerg_nmetrics; i++) {
        int rc = rd_int(&r, zerg_metric_fields[i].name, 0, STATE_MAX_INT64,
                        NO_NULL, zerg_metric_at(&s->metrics, i));
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
    if (rc || (rc = rd_ts(&r, "started_at", &s->started_at_wall_ns)) ||
        (rc = rd_ts(&r, "updated_at", &s->updated_at_wall_ns)) ||
        (rc = rd_i(&r, "current_level", 0, NO_NULL, &s->current_level)) ||
        (rc = rd_str(&r, "status", &s->status)) ||
        (rc = rd_u64(&r, "next_epoch", &s->next_epoch)) ||
        (rc = rd_str(&r, "error", &s->error)) || (rc = rd_git(&r, s)))
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
        state_task_reset(&s.tasks[i], g->tasks[i].level);
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
