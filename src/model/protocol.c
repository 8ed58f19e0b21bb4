/* protocol.c - the small JSON files the orchestrator and its workers
 * exchange in .zerg/state/ (see zerg/protocol.h for the contract).
 *
 * Every file is built as a zerg_json tree, encoded by zerg/json.h (yajl) and
 * written with the atomic replace: results durably, by their worker under
 * state.durability: full or in batches by the orchestrator under batch
 * (they are its journal), assignments, heartbeats and the lease without
 * fsync (they are rewritten every few seconds and a lost one costs
 * nothing); assignments through the slot directory kept open by
 * protocol_slots.c.
 * Readers check every field's type and range, so a file another program
 * wrote badly is ZERG_ECORRUPT, never a half-filled struct. */
#include "zerg/protocol.h"

#include <errno.h>
#include <sys/stat.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/clock.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/json.h"
#include "protocol_internal.h"

/* These files hold a handful of fields; anything bigger is not ours. */
#define PROTO_MAX_BYTES (64u << 10)
/* Integral JSON numbers are exact up to 2^53. */
#define PROTO_INT_LIMIT 9007199254740992.0

/* ---- reading fields ------------------------------------------------- */

/* An integral number in [lo, hi]. */
static int get_i64(const zerg_json *o, const char *key, int64_t lo, int64_t hi,
                   int64_t *out)
{
    const zerg_json *v = zerg_json_get(o, key);
    if (!zerg_json_is(v, ZERG_JSON_NUMBER))
        return ZERG_ECORRUPT;
    double d = v->u.number;
    if (!isfinite(d) || d != floor(d) || fabs(d) > PROTO_INT_LIMIT ||
        d < (double)lo || d > (double)hi)
        return ZERG_ECORRUPT;
    *out = (int64_t)d;
    return 0;
}

static int get_int(const zerg_json *o, const char *key, int lo, int hi,
                   int *out)
{
    int64_t v;
    int rc = get_i64(o, key, lo, hi, &v);
    if (rc == 0)
        *out = (int)v;
    return rc;
}

static int get_u64(const zerg_json *o, const char *key, uint64_t *out)
{
    int64_t v;
    int rc = get_i64(o, key, 0, INT64_MAX, &v);
    if (rc == 0)
        *out = (uint64_t)v;
    return rc;
}

static int get_bool(const zerg_json *o, const char *key, int *out)
{
    const zerg_json *v = zerg_json_get(o, key);
    if (!zerg_json_is(v, ZERG_JSON_BOOL))
        return ZERG_ECORRUPT;
    *out = v->u.boolean != 0;
    return 0;
}

static int opt_bool(const zerg_json *o, const char *key, int *out)
{
    return zerg_json_get(o, key) ? get_bool(o, key, out) : 0;
}

/* A string that fits buf; with nullable, JSON null reads as "". */
static int get_str(const zerg_json *o, const char *key, int nullable, char *buf,
                   size_t size)
{
    const zerg_json *v = zerg_json_get(o, key);
    if (nullable && zerg_json_is(v, ZERG_JSON_NULL)) {
        buf[0] = '\0';
        return 0;
    }
    if (!zerg_json_is(v, ZERG_JSON_STRING) || v->u.str.len >= size ||
        strlen(v->u.str.s) != v->u.str.len)
        return ZERG_ECORRUPT;
    memcpy(buf, v->u.str.s, v->u.str.len + 1);
    return 0;
}

/* A task id: a safe id, or "" (null) where nullable. */
static int get_id(const zerg_json *o, const char *key, int nullable,
                  char buf[ZERG_ID_MAX + 1])
{
    int rc = get_str(o, key, nullable, buf, ZERG_ID_MAX + 1);
    if (rc == 0 && buf[0] && !zerg_id_valid(buf))
        rc = ZERG_ECORRUPT;
    if (rc == 0 && !buf[0] && !nullable)
        rc = ZERG_ECORRUPT;
    return rc;
}

/* Optional fields (absent in files of an older zerg): a string, an
 * integer, a number; absent leaves the zero value. */
static int opt_str(const zerg_json *o, const char *key, char *buf, size_t n)
{
    buf[0] = '\0';
    return zerg_json_get(o, key) ? get_str(o, key, 1, buf, n) : 0;
}

static int opt_i64(const zerg_json *o, const char *key, int64_t *out)
{
    *out = 0;
    return zerg_json_get(o, key) ? get_i64(o, key, 0, INT64_MAX, out) : 0;
}

static int opt_num(const zerg_json *o, const char *key, double *out)
{
    const zerg_json *v = zerg_json_get(o, key);
    *out = 0;
    if (!v)
        return 0;
    double d = zerg_json_as_num(v, -1);
    if (!zerg_json_is(v, ZERG_JSON_NUMBER) || !(d >= 0) || d > 1e12)
        return ZERG_ECORRUPT;
    *out = d;
    return 0;
}

/* Sets key to s unless s is "" (optional fields stay out of the file). */
static int put_str(zerg_json *o, const char *key, const char *s)
{
    return s[0] ? zerg_json_set_str(o, key, s) : 0;
}

/* A git object id: hex of 40 or 64 digits, or absent/null/"" = none. */
static int get_oid(const zerg_json *o, const char *key, char buf[ZERG_OID_MAX])
{
    buf[0] = '\0';
    if (!zerg_json_get(o, key))
        return 0;
    int rc = get_str(o, key, 1, buf, ZERG_OID_MAX);
    size_t n = strlen(buf);
    if (rc == 0 && n && n != 40 && n != 64)
        rc = ZERG_ECORRUPT;
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (!strchr("0123456789abcdef", buf[i]))
            rc = ZERG_ECORRUPT;
    return rc;
}

size_t zerg_run_origin_len(const char *id)
{
    return id ? strcspn(id, ".") : 0;
}

/* The writer's run id: a string of at most ZERG_RUN_ID_MAX - 1 bytes;
 * absent (files written by hand or by an older zerg) reads as "". */
static int get_run_id(const zerg_json *o, char buf[ZERG_RUN_ID_MAX])
{
    if (!zerg_json_get(o, "run_id")) {
        buf[0] = '\0';
        return 0;
    }
    return get_str(o, "run_id", 1, buf, ZERG_RUN_ID_MAX);
}

/* Reads and parses path; the tree must be an object.  -ENOENT when
 * missing, ZERG_ECORRUPT when not JSON or not an object. */
static int read_doc(const char *path, zerg_json **out)
{
    struct zerg_err err = {0};
    char *text = NULL;
    size_t len = 0;
    int rc = zerg_fsio_read_all(path, PROTO_MAX_BYTES, &text, &len, &err);
    if (rc == -EFBIG)
        return ZERG_ECORRUPT;
    if (rc < 0)
        return rc;
    zerg_json *doc = zerg_json_parse(text, len, &err);
    free(text);
    if (!doc)
        return err.code == -ENOMEM ? -ENOMEM : ZERG_ECORRUPT;
    if (!zerg_json_is(doc, ZERG_JSON_OBJECT)) {
        zerg_json_free(doc);
        return ZERG_ECORRUPT;
    }
    *out = doc;
    return 0;
}

/* ---- writing -------------------------------------------------------- */

int proto_encode(const char *path, zerg_json *doc, int build_rc, char **text,
                 size_t *len, struct zerg_err *err)
{
    int rc = 0;
    *text = NULL;
    if (!doc || build_rc < 0)
        rc = zerg_err_set(err, -ENOMEM, "cannot write %s: out of memory", path);
    else if (!(*text = zerg_json_encode(doc, len, err))) {
        rc = err && err->code ? err->code : -ENOMEM;
        zerg_err_prefix(err, "cannot write %s", path);
    }
    zerg_json_free(doc);
    return rc;
}

/* Encodes doc (freed here) and replaces path with it. */
static int write_doc(const char *path, zerg_json *doc, int build_rc, int flags,
                     struct zerg_err *err)
{
    char *text;
    size_t len = 0;
    int rc = proto_encode(path, doc, build_rc, &text, &len, err);
    if (rc == 0)
        rc = zerg_fsio_write_atomic(path, text, len, flags, err);
    free(text);
    return rc;
}

static int path_error(struct zerg_err *err, const char *dir, const char *what)
{
    return zerg_err_set(err, -ENAMETOOLONG, "cannot write %s in %s: %s", what,
                        dir, zerg_strerror(-ENAMETOOLONG));
}

/* ---- assignment ----------------------------------------------------- */

static int put_task_at(zerg_json *o, const struct zerg_assign *a)
{
    if (!a->task_len)
        return 0;
    return zerg_json_set_num(o, "task_offset", a->task_off) ||
           zerg_json_set_num(o, "task_length", a->task_len) ||
           zerg_json_set_num(o, "task_hash", a->task_hash);
}

/* The task's place in the graph file: all three or none. */
static int get_task_at(const zerg_json *o, struct zerg_assign *a)
{
    int64_t v[3];
    const char *key[3] = {"task_offset", "task_length", "task_hash"};
    if (!zerg_json_get(o, "task_length"))
        return 0;
    for (int k = 0; k < 3; k++)
        if (get_i64(o, key[k], 0, UINT32_MAX, &v[k]))
            return ZERG_ECORRUPT;
    a->task_off = (uint32_t)v[0];
    a->task_len = (uint32_t)v[1];
    a->task_hash = (uint32_t)v[2];
    return 0;
}

int zerg_proto_write_assign(const char *dir, int slot,
                            const struct zerg_assign *a, struct zerg_err *err)
{
    char path[PATH_MAX];
    if (zerg_proto_assign_path(path, sizeof path, dir, slot) < 0)
        return path_error(err, dir, "an assignment");
    if (a->task[0] && !zerg_id_valid(a->task))
        return zerg_err_set(err, -EINVAL, "cannot write %s: bad task id \"%s\"",
                            path, a->task);
    zerg_json *o = zerg_json_obj();
    int rc = -ENOMEM;
    if (o)
        rc =
            zerg_json_set_num(o, "epoch", (double)a->epoch) ||
                    zerg_json_set_str(o, "run_id", a->run_id) ||
                    zerg_json_set_str(o, "task", a->task[0] ? a->task : NULL) ||
                    zerg_json_set_num(o, "attempt", a->attempt) ||
                    zerg_json_set_bool(o, "stop", a->stop) ||
                    put_str(o, "base", a->base) ||
                    put_str(o, "base_tree", a->base_tree) ||
                    put_str(o, "last_class", a->last_class) ||
                    put_str(o, "last_error", a->last_error) ||
                    put_str(o, "last_conflicts", a->last_conflicts) ||
                    put_str(o, "review_note", a->review_note) ||
                    (a->resume && zerg_json_set_bool(o, "resume", 1)) ||
                    put_task_at(o, a)
                ? -ENOMEM
                : 0;
    /* slot-N is created, never followed: a link planted there would send
     * the assignments out of the project.  It is checked once per worker
     * incarnation and then written through a descriptor kept open
     * (protocol_slots.c). */
    return proto_slot_write_assign(dir, slot, a->epoch, path, o, rc, err);
}

int zerg_proto_read_assign(const char *dir, int slot, struct zerg_assign *a)
{
    char path[PATH_MAX];
    if (zerg_proto_assign_path(path, sizeof path, dir, slot) < 0)
        return -ENAMETOOLONG;
    zerg_json *o = NULL;
    int rc = read_doc(path, &o);
    if (rc < 0)
        return rc;
    struct zerg_assign v = {0};
    if (get_u64(o, "epoch", &v.epoch) || get_run_id(o, v.run_id) ||
        get_id(o, "task", 1, v.task) ||
        get_int(o, "attempt", 0, INT_MAX, &v.attempt) ||
        get_bool(o, "stop", &v.stop) || get_oid(o, "base", v.base) ||
        get_oid(o, "base_tree", v.base_tree) ||
        opt_str(o, "last_class", v.last_class, sizeof v.last_class) ||
        opt_str(o, "last_error", v.last_error, sizeof v.last_error) ||
        opt_str(o, "last_conflicts", v.last_conflicts,
                sizeof v.last_conflicts) ||
        opt_str(o, "review_note", v.review_note, sizeof v.review_note) ||
        opt_bool(o, "resume", &v.resume) || get_task_at(o, &v))
        rc = ZERG_ECORRUPT;
    else
        *a = v;
    zerg_json_free(o);
    return rc;
}

/* ---- heartbeat ------------------------------------------------------ */

/* The heartbeat's fields into o (the file, or an event line after its
 * envelope).  0 or -ENOMEM. */
/* The attempt's spend so far, when there is any. */
static int heartbeat_spend(zerg_json *o, const struct zerg_heartbeat *hb)
{
    if (!hb->input_tokens && !hb->output_tokens && !hb->cache_read_tokens &&
        !hb->cache_write_tokens && !hb->cost_usd)
        return 0;
    return zerg_json_set_num(o, "input_tokens", (double)hb->input_tokens) ||
                   zerg_json_set_num(o, "output_tokens",
                                     (double)hb->output_tokens) ||
                   zerg_json_set_num(o, "cache_read_tokens",
                                     (double)hb->cache_read_tokens) ||
                   zerg_json_set_num(o, "cache_write_tokens",
                                     (double)hb->cache_write_tokens) ||
                   zerg_json_set_num(o, "cost_usd", hb->cost_usd)
               ? -ENOMEM
               : 0;
}

static int heartbeat_put(zerg_json *o, const struct zerg_heartbeat *hb)
{
    char ts[ZERG_TS_MAX];
    zerg_clock_iso8601(hb->timestamp_ns, ts);
    return zerg_json_set_num(o, "worker_id", hb->worker_id) ||
                   zerg_json_set_num(o, "epoch", (double)hb->epoch) ||
                   zerg_json_set_str(o, "run_id", hb->run_id) ||
                   zerg_json_set_num(o, "seq", (double)hb->seq) ||
                   zerg_json_set_str(o, "timestamp", ts) ||
                   zerg_json_set_str(o, "task_id",
                                     hb->task_id[0] ? hb->task_id : NULL) ||
                   zerg_json_set_num(o, "attempt", hb->attempt) ||
                   zerg_json_set_str(o, "step", hb->step) ||
                   zerg_json_set_num(o, "progress_pct", hb->progress_pct) ||
                   zerg_json_set_num(o, "pid", hb->pid) ||
                   zerg_json_set_num(o, "task_pgid", hb->task_pgid) ||
                   zerg_json_set_num(o, "progress_seq",
                                     (double)hb->progress_seq) ||
                   heartbeat_spend(o, hb) ||
                   (hb->activity[0] &&
                    zerg_json_set_str(o, "activity", hb->activity)) ||
                   (hb->tool_calls &&
                    zerg_json_set_num(o, "tool_calls", (double)hb->tool_calls))
               ? -ENOMEM
               : 0;
}

/* A heartbeat from o, whole or not at all: 0 or ZERG_ECORRUPT. */
static int heartbeat_get(const zerg_json *o, struct zerg_heartbeat *hb)
{
    struct zerg_heartbeat v = {0};
    const char *ts = zerg_json_as_str(zerg_json_get(o, "timestamp"));
    if (get_int(o, "worker_id", 0, INT_MAX, &v.worker_id) ||
        get_u64(o, "epoch", &v.epoch) || get_run_id(o, v.run_id) ||
        get_i64(o, "seq", 0, INT64_MAX, &v.seq) || !ts ||
        zerg_clock_parse_iso8601(ts, &v.timestamp_ns) < 0 ||
        get_id(o, "task_id", 1, v.task_id) ||
        get_int(o, "attempt", 0, INT_MAX, &v.attempt) ||
        get_str(o, "step", 0, v.step, sizeof v.step) ||
        get_int(o, "progress_pct", 0, 100, &v.progress_pct) ||
        get_int(o, "pid", 0, INT_MAX, &v.pid) ||
        get_int(o, "task_pgid", 0, INT_MAX, &v.task_pgid) ||
        opt_i64(o, "progress_seq", &v.progress_seq) ||
        opt_i64(o, "input_tokens", &v.input_tokens) ||
        opt_i64(o, "output_tokens", &v.output_tokens) ||
        opt_i64(o, "cache_read_tokens", &v.cache_read_tokens) ||
        opt_i64(o, "cache_write_tokens", &v.cache_write_tokens) ||
        opt_num(o, "cost_usd", &v.cost_usd) ||
        opt_str(o, "activity", v.activity, sizeof v.activity) ||
        opt_i64(o, "tool_calls", &v.tool_calls))
        return ZERG_ECORRUPT;
    *hb = v;
    return 0;
}

int zerg_proto_write_heartbeat(const char *dir, const struct zerg_heartbeat *hb,
                               struct zerg_err *err)
{
    char path[PATH_MAX];
    if (zerg_proto_heartbeat_path(path, sizeof path, dir, hb->worker_id) < 0)
        return path_error(err, dir, "a heartbeat");
    zerg_json *o = zerg_json_obj();
    int rc = o ? heartbeat_put(o, hb) : -ENOMEM;
    return write_doc(path, o, rc, ZERG_FSIO_NOSYNC, err);
}

int zerg_proto_read_heartbeat(const char *path, struct zerg_heartbeat *hb)
{
    zerg_json *o = NULL;
    int rc = read_doc(path, &o);
    if (rc < 0)
        return rc;
    rc = heartbeat_get(o, hb);
    zerg_json_free(o);
    return rc;
}

/* ---- result --------------------------------------------------------- */

static const char *outcome_name(enum zerg_outcome o)
{
    return o == ZERG_OUTCOME_COMPLETE ? "complete" : "failed";
}

static int outcome_parse(const zerg_json *o, enum zerg_outcome *out)
{
    const char *s = zerg_json_as_str(zerg_json_get(o, "outcome"));
    if (s && strcmp(s, "complete") == 0)
        *out = ZERG_OUTCOME_COMPLETE;
    else if (s && strcmp(s, "failed") == 0)
        *out = ZERG_OUTCOME_FAILED;
    else
        return ZERG_ECORRUPT;
    return 0;
}

/* The failure class and the agent's run, when there are any. */
static int result_extra(zerg_json *o, const struct zerg_result *r)
{
    if (put_str(o, "class", r->cls) || put_str(o, "fix", r->fix) ||
        (r->reset_at_s &&
         zerg_json_set_num(o, "reset_at_s", (double)r->reset_at_s)))
        return -1;
    if (!r->session_id[0] && !r->cost_usd && !r->input_tokens &&
        !r->output_tokens)
        return 0;
    return put_str(o, "session_id", r->session_id) ||
                   put_str(o, "model", r->model) ||
                   zerg_json_set_num(o, "cost_usd", r->cost_usd) ||
                   zerg_json_set_num(o, "input_tokens",
                                     (double)r->input_tokens) ||
                   zerg_json_set_num(o, "output_tokens",
                                     (double)r->output_tokens) ||
                   zerg_json_set_num(o, "cache_read_tokens",
                                     (double)r->cache_read_tokens) ||
                   zerg_json_set_num(o, "cache_write_tokens",
                                     (double)r->cache_write_tokens) ||
                   zerg_json_set_num(o, "num_turns", (double)r->num_turns) ||
                   (r->cost_estimated &&
                    zerg_json_set_bool(o, "cost_estimated", 1))
               ? -1
               : 0;
}

/* The class's name into the enum, once: nothing past the protocol
 * compares class names.  A name outside the taxonomy is a task failure,
 * never one that stops or pauses the pool. */
static void read_class(struct zerg_result *v)
{
    v->has_class = v->cls[0] != '\0';
    if (v->has_class && zerg_failure_class_parse(v->cls, &v->fclass) < 0) {
        v->fclass = ZERG_FAILURE_TASK;
        snprintf(v->cls, sizeof v->cls, "%s",
                 zerg_failure_class_name(ZERG_FAILURE_TASK));
    }
}

static int read_result_extra(const zerg_json *o, struct zerg_result *v)
{
    return opt_str(o, "class", v->cls, sizeof v->cls) ||
                   opt_str(o, "fix", v->fix, sizeof v->fix) ||
                   opt_i64(o, "reset_at_s", &v->reset_at_s) ||
                   opt_str(o, "session_id", v->session_id,
                           sizeof v->session_id) ||
                   opt_num(o, "cost_usd", &v->cost_usd) ||
                   opt_i64(o, "input_tokens", &v->input_tokens) ||
                   opt_i64(o, "output_tokens", &v->output_tokens) ||
                   opt_i64(o, "cache_read_tokens", &v->cache_read_tokens) ||
                   opt_i64(o, "cache_write_tokens", &v->cache_write_tokens) ||
                   opt_str(o, "model", v->model, sizeof v->model) ||
                   opt_i64(o, "num_turns", &v->num_turns) ||
                   opt_bool(o, "cost_estimated", &v->cost_estimated)
               ? ZERG_ECORRUPT
               : 0;
}

/* The result's fields into o (the file, or an event line after its
 * envelope).  0 or -ENOMEM. */
static int result_put(zerg_json *o, const struct zerg_result *r)
{
    return zerg_json_set_num(o, "epoch", (double)r->epoch) ||
                   zerg_json_set_str(o, "run_id", r->run_id) ||
                   zerg_json_set_num(o, "worker_id", r->worker_id) ||
                   zerg_json_set_str(o, "task", r->task) ||
                   zerg_json_set_num(o, "attempt", r->attempt) ||
                   zerg_json_set_str(o, "outcome", outcome_name(r->outcome)) ||
                   zerg_json_set_str(o, "stage", r->stage) ||
                   zerg_json_set_num(o, "exit_code", r->exit_code) ||
                   zerg_json_set_num(o, "signal", r->signal) ||
                   zerg_json_set_bool(o, "timed_out", r->timed_out) ||
                   zerg_json_set_num(o, "duration_ms",
                                     (double)r->duration_ms) ||
                   zerg_json_set_str(o, "error", r->error) ||
                   (r->base[0] && zerg_json_set_str(o, "base", r->base)) ||
                   (r->commit[0] &&
                    zerg_json_set_str(o, "commit", r->commit)) ||
                   put_str(o, "patch", r->patch) || result_extra(o, r) ||
                   proto_paths_put(o, "missing", &r->missing) ||
                   proto_paths_put(o, "forced", &r->forced) ||
                   proto_paths_put(o, "ignored", &r->ignored)
               ? -ENOMEM
               : 0;
}

/* A result from o, whole or not at all: 0 or ZERG_ECORRUPT. */
static int result_get(const zerg_json *o, struct zerg_result *r)
{
    struct zerg_result v = {0};
    if (get_u64(o, "epoch", &v.epoch) || get_run_id(o, v.run_id) ||
        get_int(o, "worker_id", 0, INT_MAX, &v.worker_id) ||
        get_id(o, "task", 0, v.task) ||
        get_int(o, "attempt", 0, INT_MAX, &v.attempt) ||
        outcome_parse(o, &v.outcome) ||
        get_str(o, "stage", 0, v.stage, sizeof v.stage) ||
        get_int(o, "exit_code", -1, 255, &v.exit_code) ||
        get_int(o, "signal", 0, 128, &v.signal) ||
        get_bool(o, "timed_out", &v.timed_out) ||
        get_i64(o, "duration_ms", 0, INT64_MAX, &v.duration_ms) ||
        get_str(o, "error", 1, v.error, sizeof v.error) ||
        get_oid(o, "base", v.base) || get_oid(o, "commit", v.commit) ||
        opt_str(o, "patch", v.patch, sizeof v.patch) ||
        read_result_extra(o, &v) || proto_paths_get(o, "missing", &v.missing) ||
        proto_paths_get(o, "forced", &v.forced) ||
        proto_paths_get(o, "ignored", &v.ignored))
        return ZERG_ECORRUPT;
    read_class(&v);
    *r = v;
    return 0;
}

int zerg_proto_write_result(const char *dir, const struct zerg_result *r,
                            struct zerg_err *err)
{
    return zerg_proto_write_result_flags(dir, r, ZERG_FSIO_DURABLE, err);
}

int zerg_proto_write_result_flags(const char *dir, const struct zerg_result *r,
                                  int flags, struct zerg_err *err)
{
    char path[PATH_MAX];
    if (!zerg_id_valid(r->task))
        return zerg_err_set(err, -EINVAL,
                            "cannot write a result in %s: bad task id \"%s\"",
                            dir, r->task);
    if (zerg_proto_result_path(path, sizeof path, dir, r->task, r->attempt) < 0)
        return path_error(err, dir, "a result");
    zerg_json *o = zerg_json_obj();
    int rc = o ? result_put(o, r) : -ENOMEM;
    return write_doc(path, o, rc, flags, err);
}

int zerg_proto_encode_result(const struct zerg_result *r, char **text,
                             size_t *len, struct zerg_err *err)
{
    zerg_json *o = zerg_json_obj();
    int rc = o ? result_put(o, r) : -ENOMEM;
    return proto_encode("a result", o, rc, text, len, err);
}

int zerg_proto_read_result(const char *path, struct zerg_result *r)
{
    zerg_json *o = NULL;
    int rc = read_doc(path, &o);
    if (rc < 0)
        return rc;
    rc = result_get(o, r);
    zerg_json_free(o);
    return rc;
}

/* ---- event lines (stdout) ------------------------------------------- */

static const char *const event_kinds[] = {
    [ZERG_EVENT_HEARTBEAT] = "heartbeat",
    [ZERG_EVENT_RESULT] = "result",
};

/* {"zerg":1,"kind":K, then the document's own fields}\n: the envelope
 * first, so a reader (or a person) tells an event from stray output by
 * its first bytes. */
static int event_encode(enum zerg_event_kind kind, const void *doc, char **line,
                        size_t *len)
{
    zerg_json *o = zerg_json_obj();
    int rc = -ENOMEM;
    if (o && !zerg_json_set_num(o, "zerg", ZERG_EVENT_VERSION) &&
        !zerg_json_set_str(o, "kind", event_kinds[kind]))
        rc = kind == ZERG_EVENT_HEARTBEAT ? heartbeat_put(o, doc)
                                          : result_put(o, doc);
    char *text = rc == 0 ? zerg_json_encode(o, len, NULL) : NULL;
    zerg_json_free(o);
    char *grown = text ? realloc(text, *len + 2) : NULL;
    if (!grown) {
        free(text);
        return -ENOMEM;
    }
    grown[(*len)++] = '\n';
    grown[*len] = '\0';
    *line = grown;
    return 0;
}

int zerg_proto_event_heartbeat(const struct zerg_heartbeat *hb, char **line,
                               size_t *len)
{
    return event_encode(ZERG_EVENT_HEARTBEAT, hb, line, len);
}

int zerg_proto_event_result(const struct zerg_result *r, char **line,
                            size_t *len)
{
    return event_encode(ZERG_EVENT_RESULT, r, line, len);
}

/* The envelope's kind, ZERG_EVENT_NONE when o is not an event of ours. */
static enum zerg_event_kind event_kind(const zerg_json *o)
{
    const char *kind = zerg_json_as_str(zerg_json_get(o, "kind"));
    for (size_t k = 1; kind && k < sizeof event_kinds / sizeof *event_kinds;
         k++)
        if (strcmp(kind, event_kinds[k]) == 0)
            return (enum zerg_event_kind)k;
    return ZERG_EVENT_NONE;
}

int zerg_proto_event_parse(const char *line, size_t len, struct zerg_event *ev)
{
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    /* Stray output is anything that does not even open like an event:
     * not worth a JSON parse. */
    if (len < 8 || memcmp(line, "{\"zerg\":", 8) != 0)
        return 1;
    zerg_json *o = zerg_json_parse(line, len, NULL);
    int rc = ZERG_ECORRUPT;
    if (!o || !zerg_json_is(o, ZERG_JSON_OBJECT))
        goto out;
    double version = zerg_json_as_num(zerg_json_get(o, "zerg"), 0);
    ev->kind = event_kind(o);
    if (version != ZERG_EVENT_VERSION || ev->kind == ZERG_EVENT_NONE)
        goto out;
    rc = ev->kind == ZERG_EVENT_HEARTBEAT ? heartbeat_get(o, &ev->hb)
                                          : result_get(o, &ev->result);
out:
    zerg_json_free(o);
    return rc;
}

/* ---- lease ---------------------------------------------------------- */

int zerg_proto_write_lease(const char *dir, const char *feature, int pid,
                           const char *run_id, int64_t seq,
                           struct zerg_err *err)
{
    char path[PATH_MAX];
    if (zerg_proto_lease_path(path, sizeof path, dir, feature) < 0)
        return path_error(err, dir, "the lease");
    zerg_json *o = zerg_json_obj();
    int rc = -ENOMEM;
    if (o)
        rc = zerg_json_set_num(o, "pid", pid) ||
                     zerg_json_set_str(o, "run_id", run_id ? run_id : "") ||
                     zerg_json_set_num(o, "seq", (double)seq)
                 ? -ENOMEM
                 : 0;
    return write_doc(path, o, rc, ZERG_FSIO_NOSYNC, err);
}

int zerg_proto_read_lease(const char *dir, const char *feature, int *pid,
                          char *run_id, size_t run_id_size, int64_t *seq)
{
    char path[PATH_MAX], rid[128];
    if (zerg_proto_lease_path(path, sizeof path, dir, feature) < 0)
        return -ENAMETOOLONG;
    zerg_json *o = NULL;
    int rc = read_doc(path, &o);
    if (rc < 0)
        return rc;
    int p;
    int64_t s;
    if (get_int(o, "pid", 0, INT_MAX, &p) ||
        get_str(o, "run_id", 0, rid, sizeof rid) ||
        get_i64(o, "seq", 0, INT64_MAX, &s) ||
        (run_id && strlen(rid) >= run_id_size)) {
        rc = ZERG_ECORRUPT;
    } else {
        if (pid)
            *pid = p;
        if (seq)
            *seq = s;
        if (run_id)
            memcpy(run_id, rid, strlen(rid) + 1);
    }
    zerg_json_free(o);
    return rc;
}
