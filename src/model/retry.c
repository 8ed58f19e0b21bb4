/* retry.c - requeueing failed tasks and the retry request file (see
 * zerg/retry.h).
 *
 * A blocked task is blocked because some dependency failed permanently.
 * Requeueing that dependency makes the blocked task runnable again only if
 * none of its other dependencies is still failed or blocked, so the
 * unblocking is one pass over the graph in dependency order (levels
 * ascending, each level in its dependency order): a blocked task comes
 * back when one of its dependencies just came back and none of them is
 * still failed or blocked.  Tasks blocked by some other failure stay
 * blocked. */
#include "zerg/retry.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zerg/clock.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/json.h"
#include "zerg/level_fsm.h"
#include "zerg/state.h"
#include "zerg/task_fsm.h"

/* A request lists task ids; 16 MiB holds far more than any graph. */
#define REQUEST_MAX_BYTES (16u << 20)

/* ---- the state operation ---------------------------------------------- */

/* What `zerg retry` takes: failed, blocked, or waiting for its retry
 * (then it runs now, with a fresh budget). */
static int retryable(enum zerg_task_status st)
{
    return zerg_task_move_legal(st, ZERG_TASK_EV_RETRY);
}

/* A dependency in this state keeps its dependents blocked. */
static int ended_badly(enum zerg_task_status st)
{
    return st == ZERG_TASK_FAILED || st == ZERG_TASK_BLOCKED;
}

/* The same move, with the same fields reset, as everywhere else. */
static int task_requeue(struct zerg_task_state *t)
{
    return zerg_task_apply(t, ZERG_TASK_EV_RETRY, NULL, NULL, 0);
}

static int task_level(const struct zerg_state *s, const struct zerg_graph *g,
                      size_t i)
{
    return s->tasks[i].level > 0 ? s->tasks[i].level : g->tasks[i].level;
}

/* The run is no longer finished: reopen the level of every requeued task
 * and move the run back to the lowest of them. */
static void reopen_levels(struct zerg_state *s, const struct zerg_graph *g,
                          const unsigned char *requeued)
{
    int lowest = 0;
    for (size_t i = 0; i < s->ntasks; i++) {
        if (!requeued[i])
            continue;
        int lv = task_level(s, g, i);
        if (s->levels && lv >= 1 && lv <= s->nlevels)
            zerg_level_apply(&s->levels[lv], ZERG_LEVEL_EV_RESET, 0);
        if (lv >= 1 && (lowest == 0 || lv < lowest))
            lowest = lv;
    }
    if (lowest && s->current_level > lowest)
        s->current_level = lowest;
    if (s->status && strcmp(s->status, "failed") == 0) {
        char *stopped = strdup("stopped");
        if (stopped) {
            free(s->status);
            s->status = stopped;
            free(s->error);
            s->error = NULL;
        }
    }
}

/* 1 if task i may come back: one dependency was just requeued and none is
 * still failed or blocked. */
static int unblockable(const struct zerg_state *s, const struct zerg_graph *g,
                       size_t i, const unsigned char *requeued)
{
    const struct zerg_task *t = &g->tasks[i];
    int freed = 0;
    for (size_t d = 0; d < t->deps.n; d++) {
        size_t j = t->dep_idx[d];
        if (ended_badly(s->tasks[j].status))
            return 0;
        freed |= requeued[j];
    }
    return freed;
}

/* requeued[] holds the roots, already requeued; adds what they unblock.
 * Returns the total number requeued. */
static int unblock_downstream(struct zerg_state *s, const struct zerg_graph *g,
                              unsigned char *requeued)
{
    int n = 0;
    for (size_t i = 0; i < s->ntasks; i++)
        n += requeued[i];
    for (int lv = 1; lv <= g->nlevels; lv++) {
        const struct zerg_level *L = &g->levels[lv];
        for (size_t k = 0; k < L->n; k++) {
            size_t i = L->tasks[k];
            if (s->tasks[i].status != ZERG_TASK_BLOCKED ||
                !unblockable(s, g, i, requeued))
                continue;
            task_requeue(&s->tasks[i]);
            requeued[i] = 1;
            n++;
        }
    }
    reopen_levels(s, g, requeued);
    return n;
}

const char *zerg_state_retry_refusal(const struct zerg_state *s,
                                     const struct zerg_graph *g, size_t idx,
                                     char *buf, size_t size)
{
    if (idx >= s->ntasks || idx >= g->ntasks) {
        snprintf(buf, size, "task #%zu does not exist", idx);
        return buf;
    }
    enum zerg_task_status st = s->tasks[idx].status;
    if (retryable(st))
        return NULL;
    snprintf(buf, size, "task %s is %s; nothing to retry", g->tasks[idx].id,
             zerg_task_status_name(st));
    return buf;
}

int zerg_state_retry_task(struct zerg_state *s, const struct zerg_graph *g,
                          size_t idx)
{
    if (idx >= s->ntasks || s->ntasks != g->ntasks ||
        !retryable(s->tasks[idx].status))
        return ZERG_EINVAL_INPUT;
    unsigned char *requeued = calloc(s->ntasks, 1);
    if (!requeued)
        return -ENOMEM;
    task_requeue(&s->tasks[idx]);
    requeued[idx] = 1;
    int n = unblock_downstream(s, g, requeued);
    free(requeued);
    return n;
}

int zerg_state_retry_all_failed(struct zerg_state *s,
                                const struct zerg_graph *g)
{
    if (s->ntasks != g->ntasks)
        return ZERG_EINVAL_INPUT;
    unsigned char *requeued = calloc(s->ntasks ? s->ntasks : 1, 1);
    if (!requeued)
        return -ENOMEM;
    int roots = 0;
    for (size_t i = 0; i < s->ntasks; i++) {
        if (s->tasks[i].status != ZERG_TASK_FAILED)
            continue;
        task_requeue(&s->tasks[i]);
        requeued[i] = 1;
        roots++;
    }
    int n = roots ? unblock_downstream(s, g, requeued) : 0;
    free(requeued);
    return n;
}

/* ---- the request file ------------------------------------------------- */

static zerg_json *request_doc(const char *feature, const char *const *ids,
                              size_t n, int all_failed)
{
    zerg_json *doc = zerg_json_obj();
    zerg_json *tasks = zerg_json_arr();
    if (!doc || !tasks)
        goto fail;
    for (size_t i = 0; i < n; i++)
        if (zerg_json_push(tasks, zerg_json_str(ids[i])))
            goto fail;
    if (zerg_json_set_str(doc, "feature", feature))
        goto fail;
    if (zerg_json_set(doc, "tasks", tasks)) {
        tasks = NULL; /* freed by the failed set */
        goto fail;
    }
    tasks = NULL;
    if (zerg_json_set_bool(doc, "all_failed", all_failed))
        goto fail;
    return doc;
fail:
    zerg_json_free(tasks);
    zerg_json_free(doc);
    return NULL;
}

static int check_names(const char *feature, const char *const *ids, size_t n,
                       struct zerg_err *err)
{
    if (!zerg_id_valid(feature))
        return zerg_err_set(err, ZERG_EINVAL_INPUT,
                            "invalid feature name \"%.80s\"", feature);
    for (size_t i = 0; i < n; i++)
        if (!ids[i] || !zerg_id_valid(ids[i]))
            return zerg_err_set(err, ZERG_EINVAL_INPUT,
                                "invalid task id \"%.80s\"",
                                ids[i] ? ids[i] : "(null)");
    return 0;
}

/* A name no other request uses: wall ns, bumped past existing files. */
static int request_path(char *buf, size_t size, const char *dir,
                        const char *feature)
{
    int64_t ns = zerg_clock_wall(&zerg_clock_system);
    for (int tries = 0; tries < 1000; tries++, ns++) {
        int rc = zerg_fsio_path(buf, size, "%s/%s/retry-%lld.json", dir,
                                feature, (long long)ns);
        if (rc)
            return rc;
        if (access(buf, F_OK) != 0)
            return 0;
    }
    return -EEXIST;
}

/* The run directory must exist: a rush that holds the lock may not have
 * created it yet. */
static int ensure_run_dir(const char *state_dir, const char *feature,
                          struct zerg_err *err)
{
    return zerg_fsio_mkdirs_under(state_dir, feature, 0755, err) < 0
               ? (err && err->code ? err->code : -EIO)
               : 0;
}

int zerg_retry_request_send(const char *state_dir, const char *feature,
                            const char *const *ids, size_t n, int all_failed,
                            char *written, size_t size, struct zerg_err *err)
{
    char path[PATH_MAX];
    char *text = NULL;
    zerg_json *doc = NULL;
    size_t len = 0;
    int rc = check_names(feature, ids, n, err);
    if (rc || (rc = ensure_run_dir(state_dir, feature, err)))
        return rc;
    if ((rc = request_path(path, sizeof path, state_dir, feature))) {
        zerg_err_set(err, rc, "cannot name a retry request in %s: %s",
                     state_dir, zerg_strerror(rc));
        goto cleanup;
    }
    if (!(doc = request_doc(feature, ids, n, all_failed)) ||
        !(text = zerg_json_encode(doc, &len, err))) {
        rc = zerg_err_set(err, -ENOMEM, "cannot write %s: out of memory", path);
        goto cleanup;
    }
    rc = zerg_fsio_write_atomic(path, text, len, ZERG_FSIO_DURABLE, err);
    if (rc == 0 && written)
        snprintf(written, size, "%s", path);
cleanup:
    free(text);
    zerg_json_free(doc);
    return rc;
}

int zerg_retry_request_write(const char *state_dir, const char *feature,
                             const char *const *ids, size_t n, int all_failed,
                             struct zerg_err *err)
{
    return zerg_retry_request_send(state_dir, feature, ids, n, all_failed, NULL,
                                   0, err);
}

void zerg_retry_request_close(struct zerg_retry_request *req)
{
    if (!req)
        return;
    for (size_t i = 0; i < req->n; i++)
        free(req->ids[i]);
    free(req->ids);
    memset(req, 0, sizeof *req);
}

static int request_from_json(struct zerg_retry_request *req,
                             const zerg_json *doc, const char **why)
{
    const char *feature = zerg_json_as_str(zerg_json_get(doc, "feature"));
    const zerg_json *tasks = zerg_json_get(doc, "tasks");
    const zerg_json *all = zerg_json_get(doc, "all_failed");
    if (!zerg_json_is(doc, ZERG_JSON_OBJECT))
        return *why = "not a JSON object", -1;
    if (!feature || !zerg_id_valid(feature))
        return *why = "\"feature\" is missing or not a valid name", -1;
    if (tasks && !zerg_json_is(tasks, ZERG_JSON_ARRAY))
        return *why = "\"tasks\" is not an array", -1;
    if (all && !zerg_json_is(all, ZERG_JSON_BOOL))
        return *why = "\"all_failed\" is not true or false", -1;
    snprintf(req->feature, sizeof req->feature, "%s", feature);
    req->all_failed = all ? all->u.boolean : 0;
    size_t n = tasks ? zerg_json_len(tasks) : 0;
    if (n && !(req->ids = calloc(n, sizeof *req->ids)))
        return *why = "out of memory", -1;
    for (size_t i = 0; i < n; i++) {
        const char *id = zerg_json_as_str(zerg_json_at(tasks, i));
        if (!id || !zerg_id_valid(id))
            return *why = "\"tasks\" holds something that is not a task id", -1;
        if (!(req->ids[i] = strdup(id)))
            return *why = "out of memory", -1;
        req->n = i + 1;
    }
    return 0;
}

int zerg_retry_request_read(const char *path, struct zerg_retry_request *req,
                            struct zerg_err *err)
{
    struct zerg_err why = {0};
    const char *what = NULL;
    char *text = NULL;
    size_t len = 0;
    zerg_json *doc = NULL;

    memset(req, 0, sizeof *req);
    int rc = zerg_fsio_read_all(path, REQUEST_MAX_BYTES, &text, &len, &why);
    if (rc) {
        zerg_err_set(err, rc, "%s", why.msg);
        goto cleanup;
    }
    if (!(doc = zerg_json_parse(text, len, &why))) {
        rc = zerg_err_set(err, ZERG_ECORRUPT, "%s: not a retry request: %s",
                          path, why.msg);
        goto cleanup;
    }
    if (request_from_json(req, doc, &what)) {
        zerg_retry_request_close(req);
        rc = zerg_err_set(err, ZERG_ECORRUPT, "%s: not a retry request: %s",
                          path, what);
    }
cleanup:
    zerg_json_free(doc);
    free(text);
    return rc;
}

/* Each id the state refuses gets its sentence; 1 if there was one. */
static int refusals(const struct zerg_state *s, const struct zerg_graph *g,
                    const struct zerg_retry_request *req,
                    struct zerg_retry_answer *ans)
{
    char why[ZERG_RETRY_REFUSAL_MAX];
    int bad = 0;
    for (size_t i = 0; i < req->n; i++) {
        ssize_t idx = zerg_graph_find(g, req->ids[i]);
        const char *no = why;
        if (idx < 0)
            snprintf(why, sizeof why, "unknown task %s", req->ids[i]);
        else
            no = zerg_state_retry_refusal(s, g, (size_t)idx, why, sizeof why);
        if (!no)
            continue;
        bad = 1;
        if (ans->nrefused < ZERG_RETRY_ANSWER_MAX)
            snprintf(ans->refused[ans->nrefused++], ZERG_RETRY_REFUSAL_MAX,
                     "%s", no);
    }
    return bad;
}

/* Names the tasks that became pending (the first ZERG_RETRY_ANSWER_MAX). */
static void list_requeued(const struct zerg_state *s,
                          const struct zerg_graph *g,
                          const unsigned char *was_pending,
                          struct zerg_retry_answer *ans)
{
    for (size_t i = 0; i < s->ntasks && ans->ntasks < ZERG_RETRY_ANSWER_MAX;
         i++)
        if (!was_pending[i] && s->tasks[i].status == ZERG_TASK_PENDING)
            snprintf(ans->tasks[ans->ntasks++], ZERG_ID_MAX + 1, "%s",
                     g->tasks[i].id);
}

int zerg_retry_request_apply(struct zerg_state *s, const struct zerg_graph *g,
                             const struct zerg_retry_request *req,
                             struct zerg_retry_answer *ans)
{
    memset(ans, 0, sizeof *ans);
    if (refusals(s, g, req, ans))
        return 0;
    unsigned char *was_pending = calloc(s->ntasks ? s->ntasks : 1, 1);
    if (!was_pending)
        return -ENOMEM;
    for (size_t i = 0; i < s->ntasks; i++)
        was_pending[i] = s->tasks[i].status == ZERG_TASK_PENDING;
    int total = req->all_failed ? zerg_state_retry_all_failed(s, g) : 0;
    for (size_t i = 0; i < req->n && total >= 0; i++) {
        size_t idx = (size_t)zerg_graph_find(g, req->ids[i]);
        /* Requeued by all_failed or an earlier id (or listed twice). */
        if (s->tasks[idx].status == ZERG_TASK_PENDING)
            continue;
        int n = zerg_state_retry_task(s, g, idx);
        total = n < 0 ? n : total + n;
    }
    if (total > 0)
        list_requeued(s, g, was_pending, ans);
    free(was_pending);
    ans->requeued = total > 0 ? total : 0;
    return total;
}

/* ---- the answer ------------------------------------------------------- */

/* Answers are a few KiB; anything larger is not one. */
#define ANSWER_MAX_BYTES (64u << 10)

int zerg_retry_answer_path(char *buf, size_t size, const char *request_path)
{
    const char *base = strrchr(request_path, '/');
    base = base ? base + 1 : request_path;
    if (strncmp(base, "retry-", 6) != 0)
        return -EINVAL;
    return zerg_fsio_path(buf, size, "%.*sretried-%s",
                          (int)(base - request_path), request_path, base + 6);
}

static void answer_list(struct zerg_jw *w, const char *key, const char *items,
                        size_t stride, size_t n)
{
    zerg_jw_str(w, key);
    zerg_jw_arr(w);
    for (size_t i = 0; i < n; i++)
        zerg_jw_str(w, items + i * stride);
    zerg_jw_arr_end(w);
}

int zerg_retry_answer_write(const char *path,
                            const struct zerg_retry_answer *ans,
                            struct zerg_err *err)
{
    struct zerg_jw_buf buf = {0};
    struct zerg_jw *w = zerg_jw_new(zerg_jw_buf_sink, &buf);
    if (!w)
        return zerg_err_set(err, -ENOMEM, "cannot write %s: out of memory",
                            path);
    zerg_jw_obj(w);
    zerg_jw_str(w, "requeued");
    zerg_jw_int(w, ans->requeued);
    answer_list(w, "tasks", ans->tasks[0], sizeof ans->tasks[0], ans->ntasks);
    answer_list(w, "refused", ans->refused[0], sizeof ans->refused[0],
                ans->nrefused);
    zerg_jw_obj_end(w);
    int rc = zerg_jw_finish(w, err);
    if (rc == 0)
        rc = zerg_fsio_write_atomic(path, buf.p, buf.n, ZERG_FSIO_NOSYNC, err);
    free(buf.p);
    return rc;
}

/* Copies the strings of arr (at most ZERG_RETRY_ANSWER_MAX); -1 if arr
 * is not an array of strings. */
static int answer_strings(const zerg_json *arr, char *items, size_t stride,
                          size_t *n)
{
    if (!zerg_json_is(arr, ZERG_JSON_ARRAY))
        return -1;
    for (size_t i = 0; i < zerg_json_len(arr); i++) {
        const char *v = zerg_json_as_str(zerg_json_at(arr, i));
        if (!v)
            return -1;
        if (*n < ZERG_RETRY_ANSWER_MAX)
            snprintf(items + (*n)++ * stride, stride, "%s", v);
    }
    return 0;
}

int zerg_retry_answer_read(const char *path, struct zerg_retry_answer *ans,
                           struct zerg_err *err)
{
    char *text = NULL;
    size_t len = 0;
    zerg_json *doc = NULL;
    memset(ans, 0, sizeof *ans);
    int rc = zerg_fsio_read_file(path, ANSWER_MAX_BYTES, ZERG_FSIO_NOFOLLOW,
                                 &text, &len, err);
    if (rc)
        return rc;
    struct zerg_err why = {0};
    doc = zerg_json_parse(text, len, &why);
    const zerg_json *n = zerg_json_get(doc, "requeued");
    double v = zerg_json_as_num(n, -1);
    if (!doc || !zerg_json_is(n, ZERG_JSON_NUMBER) || v < 0 || v > INT_MAX ||
        answer_strings(zerg_json_get(doc, "tasks"), ans->tasks[0],
                       sizeof ans->tasks[0], &ans->ntasks) ||
        answer_strings(zerg_json_get(doc, "refused"), ans->refused[0],
                       sizeof ans->refused[0], &ans->nrefused))
        rc = zerg_err_set(err, ZERG_ECORRUPT, "%s: not a retry answer%s%s",
                          path, why.msg[0] ? ": " : "", why.msg);
    else
        ans->requeued = (int)v;
    zerg_json_free(doc);
    free(text);
    return rc;
}
