/* orch_merge.c - the merge queue of worktree isolation (DESIGN §13).
 *
 * A passing result carries the commit its worker made in its worktree.
 * Results are applied one at a time, so merging each as it is applied is
 * the queue: the commit's paths go through the scope policy, then the
 * commit is squashed onto the integration branch (src/git, through the
 * workspace ops table: this file knows no git).  Only then is the task
 * complete, so "level N complete" means "level N merged" and the next
 * level starts from a tip holding all of it.  A conflict is an outcome:
 * the commit is kept on a ref and the task runs again on the new tip,
 * charged to its own budget (workers.conflict_retry_attempts).
 *
 * On --resume the branch is read back: a task whose commit is on it is
 * complete (never merged twice), and a task whose commit sits unmerged at
 * the head of a worker branch is merged, not run again. */
#include "orch_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/protocol.h"
#include "zerg/err.h"
#include "zerg/workspace.h"

static struct zerg_workspace *ws(const struct zerg_orch *o)
{
    return o->o.workspace;
}

/* ---- the tip and the worktrees ---------------------------------------- */

int orch_ws_refresh_tip(struct zerg_orch *o, struct zerg_err *err)
{
    if (!ws(o))
        return 0;
    return ws(o)->ops->tip(ws(o), o->ws_tip, err);
}

/* The base, and its tree when a merge of this rush made it (the worker
 * then needs no git to know what its HEAD holds). */
void orch_ws_assign_base(const struct zerg_orch *o, struct zerg_assign *a)
{
    if (!ws(o))
        return;
    snprintf(a->base, sizeof a->base, "%s", o->ws_tip);
    snprintf(a->base_tree, sizeof a->base_tree, "%s",
             strcmp(o->ws_tree_of, o->ws_tip) ? "" : o->ws_tip_tree);
}

int orch_ws_worktree(struct zerg_orch *o, int slot, char *dir, size_t n,
                     char *cwd, size_t cwd_n, struct zerg_err *err)
{
    if (!ws(o))
        return 0;
    return ws(o)->ops->worktree(ws(o), slot, dir, n, cwd, cwd_n, err);
}

/* ---- scope ------------------------------------------------------------ */

static int listed(const struct zerg_strlist *l, const char *path)
{
    for (size_t i = 0; i < l->n; i++) {
        const char *f = l->v[i];
        size_t n = strlen(f);
        if (!strcmp(f, path) || (n && f[n - 1] == '/' && !strncmp(f, path, n)))
            return 1;
    }
    return 0;
}

/* Splits paths (one a line) in place into the ones outside the task's
 * files.create and files.modify; returns how many, at most max. */
static size_t out_of_scope(const struct zerg_task *tk, char *paths,
                           const char **out, size_t max)
{
    size_t n = 0;
    for (char *p = paths, *nl; p && *p && n < max; p = nl) {
        nl = strchr(p, '\n');
        if (nl)
            *nl++ = '\0';
        if (*p && !listed(&tk->files_create, p) &&
            !listed(&tk->files_modify, p))
            out[n++] = p;
    }
    return n;
}

/* 1 when the task may be merged, 0 when the scope policy failed it (*vd
 * found).  paths: what the commit changed, one a line (split here). */
static int scope_check(struct zerg_orch *o, size_t t,
                       const struct zerg_result *r, char *paths,
                       struct verdict *vd)
{
    const struct zerg_task *tk = &o->g->tasks[t];
    char reason[200] = "";
    const char *out[64];
    if (!tk->files_create.n && !tk->files_modify.n)
        return 1; /* a task that names no files has no scope to leave */
    if (!paths)
        return 1; /* found at a branch head on resume, or not listed */
    size_t n = out_of_scope(tk, paths, out, sizeof out / sizeof *out);
    int ok = 1;
    if (n) {
        zerg_json *why = NULL;
        enum zerg_scope_verdict v = zerg_policy_scope(
            o->o.policy, tk, out, n, reason, sizeof reason, &why);
        if (v != ZERG_SCOPE_ALLOW) {
            zerg_log_event(o->o.log, r->worker_id,
                           v == ZERG_SCOPE_FAIL ? ZERG_LOG_ERROR
                                                : ZERG_LOG_WARN,
                           "scope_violation", r->task, why,
                           "Task %s changed %zu path%s outside its files "
                           "(%s%s): %s",
                           r->task, n, n == 1 ? "" : "s", out[0],
                           n > 1 ? ", ..." : "", reason);
            why = NULL;
        }
        zerg_json_free(why);
        if (v == ZERG_SCOPE_FAIL)
            ok = orch_verdict_failed(vd, "scope", NULL, 0, 0,
                                     "changed %.200s outside its files: %s",
                                     out[0], reason);
    }
    return ok;
}

/* What the commit changed against its base (one a line, malloc'd), or
 * NULL when there is no known base (resume) or git cannot say. */
static char *changed_paths(struct zerg_orch *o, const struct zerg_result *r)
{
    char *paths = NULL;
    struct zerg_err err = {0};
    if (!r->base[0])
        return NULL;
    if (ws(o)->ops->changed(ws(o), r->commit, r->base, &paths, &err) < 0) {
        zerg_log_event(o->o.log, r->worker_id, ZERG_LOG_WARN, "scope_violation",
                       r->task, NULL, "Task %s: cannot list its changes: %s",
                       r->task, err.msg);
        return NULL;
    }
    return paths;
}

/* ---- merging ---------------------------------------------------------- */

static void merged_log(struct zerg_orch *o, const struct zerg_result *r,
                       const struct zerg_merge_out *m, int64_t t0)
{
    int64_t spent = zerg_clock_mono(o->o.clock) - t0;
    zerg_json *data = zerg_json_obj();
    zerg_json_set_str(data, "commit", m->tip);
    zerg_json_set_str(data, "from", r->commit);
    zerg_json_set_num(data, "attempt", r->attempt);
    zerg_json_set_str(data, "branch", ws(o)->branch);
    zerg_json_set_num(data, "ms", (double)(spent / 1000) / 1000.0);
    if (m->status == ZERG_MERGE_ALREADY)
        zerg_json_set_bool(data, "already", 1);
    zerg_log_event(o->o.log, r->worker_id, ZERG_LOG_INFO, "merge_complete",
                   r->task, data, "Task %s merged into %s as %.12s%s", r->task,
                   ws(o)->branch, m->tip,
                   m->status == ZERG_MERGE_ALREADY ? " (already there)" : "");
}

/* Keeps the commit, then the task runs again on the new tip or fails. */
static int conflicted(struct zerg_orch *o, size_t t,
                      const struct zerg_result *r, char *paths,
                      struct verdict *v)
{
    struct zerg_task_state *st = orch_ts(o, t);
    struct zerg_err err = {0};
    char ref[PATH_MAX] = "";
    if (ws(o)->ops->keep(ws(o), ZERG_WS_KEPT_CONFLICT, r->task, r->attempt,
                         r->commit, &err) == 0)
        zerg_ws_conflict_ref(ref, sizeof ref, o->o.feature, r->task,
                             r->attempt);
    for (char *c = paths; c && *c; c++)
        if (*c == '\n' && c[1])
            *c = ' ';
    size_t pl = paths ? strcspn(paths, "\n") : 0;
    if (paths)
        paths[pl] = '\0';
    free(st->conflict_paths);
    st->conflict_paths = paths ? strdup(paths) : NULL;
    st->conflict_count++;
    zerg_json *data = zerg_json_obj();
    zerg_json_set_str(data, "paths", paths ? paths : "");
    zerg_json_set_str(data, "ref", ref);
    zerg_json_set_num(data, "conflicts", st->conflict_count);
    zerg_json_set_num(data, "attempt", r->attempt);
    zerg_log_event(o->o.log, r->worker_id, ZERG_LOG_WARN, "merge_conflict",
                   r->task, data,
                   "Task %s conflicts with %s on %s; its commit is kept at %s",
                   r->task, ws(o)->branch, paths ? paths : "?", ref);
    if (st->conflict_count <= o->cfg->conflict_retry_attempts)
        return orch_verdict_requeue(v, "conflict");
    return orch_verdict_fail_now(
        v, "conflict",
        "merge conflict on %.300s after %d conflict retr%s "
        "(workers.conflict_retry_attempts)",
        paths ? paths : "?", o->cfg->conflict_retry_attempts,
        o->cfg->conflict_retry_attempts == 1 ? "y" : "ies");
}

/* The run cannot go on: git itself failed for good. */
static int merge_broken(struct zerg_orch *o, const char *msg, struct verdict *v)
{
    orch_verdict_fail_now(v, "merge_error", "cannot merge into %.100s: %.380s",
                          ws(o)->branch, msg);
    orch_run_fail(o, "%s", v->error);
    v->stop_run = 1;
    return 0;
}

/* The integration branch got checked out in a worktree during the run:
 * zerg moves no branch under a worktree (DESIGN §18), so nothing is
 * merged, no task is claimed any more and the run ends (exit 1) saying
 * why.  The commit is kept at the task's conflict ref and the task goes
 * back to pending, uncharged (conflict_count untouched): --resume runs
 * it again on the tip. */
static int merge_held(struct zerg_orch *o, const struct zerg_result *r,
                      const char *msg, struct verdict *v)
{
    struct zerg_err err = {0};
    char ref[PATH_MAX] = "";
    if (ws(o)->ops->keep(ws(o), ZERG_WS_KEPT_CONFLICT, r->task, r->attempt,
                         r->commit, &err) == 0)
        zerg_ws_conflict_ref(ref, sizeof ref, o->o.feature, r->task,
                             r->attempt);
    zerg_json *data = zerg_json_obj();
    zerg_json_set_str(data, "ref", ref);
    zerg_json_set_str(data, "branch", ws(o)->branch);
    zerg_json_set_str(data, "reason", "checked_out");
    zerg_json_set_num(data, "attempt", r->attempt);
    /* merge_conflict's contract (nothing merged, the commit kept at its
     * conflict ref, the task runs again) with the reason in data. */
    zerg_log_event(o->o.log, r->worker_id, ZERG_LOG_ERROR, "merge_conflict",
                   r->task, data,
                   "Task %s not merged (its commit is kept at "
                   "%s): %s",
                   r->task, ref[0] ? ref : "its worker branch", msg);
    orch_verdict_requeue(v, "not merged: the integration branch is checked "
                            "out");
    orch_run_fail(o, "%s", msg);
    v->stop_run = 1;
    return 0;
}

/* Container workers: the commit is taken from the attempt's bundle
 * first (DESIGN §19).  One the host cannot take is the attempt's fault
 * (its worker wrote no usable bundle): a charged failure, retried. */
static int took_commit(struct zerg_orch *o, const struct zerg_result *r,
                       struct verdict *v)
{
    struct zerg_err err = {0};
    if (!ws(o)->ops->import ||
        ws(o)->ops->import(ws(o), r->worker_id, r->task, r->attempt, r->commit,
                           &err) >= 0)
        return 1;
    zerg_json *data = zerg_json_obj();
    zerg_json_set_str(data, "commit", r->commit);
    zerg_json_set_num(data, "attempt", r->attempt);
    zerg_log_event(o->o.log, r->worker_id, ZERG_LOG_ERROR, "commit_not_taken",
                   r->task, data,
                   "Task %s: its commit %.12s cannot be taken from its "
                   "worker: %s",
                   r->task, r->commit, err.msg);
    return orch_verdict_failed(v, "commit", NULL, 0, 0,
                               "its commit cannot be taken: %.340s", err.msg);
}

int orch_merge_result(struct zerg_orch *o, size_t t,
                      const struct zerg_result *r, struct verdict *v,
                      int64_t now)
{
    (void)now;
    if (!ws(o) || !r->commit[0])
        return 1; /* isolation none, or a task that changed nothing */
    int64_t t0 = zerg_clock_mono(o->o.clock);
    if (!took_commit(o, r, v))
        return 0;
    char *paths = changed_paths(o, r);
    int ok = orch_outputs_config(o, t, r, paths, v) &&
             scope_check(o, t, r, paths, v);
    free(paths);
    if (!ok)
        return 0;
    if (orch_review_applies(o))
        return orch_review_hold(o, r, v);
    return orch_merge_commit(o, t, r, v, t0);
}

int orch_merge_commit(struct zerg_orch *o, size_t t,
                      const struct zerg_result *r, struct verdict *v,
                      int64_t t0)
{
    const struct zerg_task *tk = &o->g->tasks[t];
    struct zerg_merge_req req = {.task_id = r->task,
                                 .attempt = r->attempt,
                                 .worker = r->worker_id,
                                 .title = tk->title ? tk->title : "",
                                 .run_id = o->s->run_id,
                                 .commit = r->commit};
    struct zerg_merge_out m = {0};
    struct zerg_err err = {0};
    int rc = ws(o)->ops->merge(ws(o), &req, &m, &err);
    if (rc == ZERG_EGIT_CHECKED_OUT)
        return merge_held(o, r, err.msg, v);
    if (rc < 0)
        return merge_broken(o, err.msg, v);
    if (m.status == ZERG_MERGE_CONFLICT) {
        conflicted(o, t, r, m.conflicts, v);
        free(m.conflicts);
        return 0;
    }
    free(m.conflicts);
    snprintf(o->ws_tip, sizeof o->ws_tip, "%s", m.tip);
    snprintf(o->ws_tip_tree, sizeof o->ws_tip_tree, "%s", m.tree);
    snprintf(o->ws_tree_of, sizeof o->ws_tree_of, "%s", m.tip);
    snprintf(orch_ts(o, t)->commit, sizeof orch_ts(o, t)->commit, "%s", m.tip);
    merged_log(o, r, &m, t0);
    return 1;
}

/* ---- resume ----------------------------------------------------------- */

struct found_ctx {
    struct zerg_orch *o;
    int64_t now;
    int slot; /* worker_head: the slot read, -1 for the branch scan */
    /* The invocations of this feature run that git shows (the previous
     * one, and every one with a merge): a worker branch's head from
     * another run is stale, not work to merge. */
    char runs[16][ZERG_RUN_ID_MAX];
    int nruns;
};

/* Runs compare by their feature run part (protocol.h): a commit says
 * which feature run made it; an older zerg's commit names its rush. */
static int known_run(const struct found_ctx *c, const char *id)
{
    size_t n = zerg_run_origin_len(id);
    for (int i = 0; i < c->nruns; i++)
        if (strlen(c->runs[i]) == n && !strncmp(c->runs[i], id, n))
            return 1;
    return 0;
}

static void add_run(struct found_ctx *c, const char *id)
{
    if (id && *id && !known_run(c, id) &&
        c->nruns < (int)(sizeof c->runs / sizeof *c->runs))
        snprintf(c->runs[c->nruns++], sizeof c->runs[0], "%.*s",
                 (int)zerg_run_origin_len(id), id);
}

/* A task commit on the integration branch: that task is complete. */
static void on_merged(void *ud, const struct zerg_ws_found *f)
{
    struct found_ctx *c = ud;
    struct zerg_orch *o = c->o;
    ssize_t i = zerg_graph_find(o->g, f->task_id);
    add_run(c, f->run_id);
    /* The branch is this feature run's (a fresh run renames an older
     * one), so every task commit on it counts, whichever invocation. */
    if (i < 0)
        return;
    struct zerg_task_state *st = orch_ts(o, (size_t)i);
    snprintf(st->commit, sizeof st->commit, "%s", f->oid);
    if (st->status == ZERG_TASK_COMPLETE)
        return;
    orch_task_adopt_complete(o, (size_t)i, f->attempt,
                             "merged before the "
                             "restart");
}

/* A task commit at a worker branch's head that is not merged yet. */
static void on_head(void *ud, const struct zerg_ws_found *f)
{
    struct found_ctx *c = ud;
    struct zerg_orch *o = c->o;
    ssize_t i = zerg_graph_find(o->g, f->task_id);
    if (i < 0 || !f->run_id || !known_run(c, f->run_id))
        return;
    size_t t = (size_t)i;
    struct zerg_task_state *st = orch_ts(o, t);
    /* Only an attempt whose result was never applied: one that was judged
     * (a conflict, a scope failure, a failed task) keeps its commit at
     * the head until the next attempt resets it, and is not work to
     * merge.  Checkpoints are spaced out, so the claim itself may not
     * have reached the state: then the task is still waiting there, one
     * attempt behind the commit (a judged attempt would be the same
     * attempt, not the next). */
    int running = orch_task_running(st->status) && f->attempt == st->attempt;
    int unsaved_claim = (st->status == ZERG_TASK_PENDING ||
                         st->status == ZERG_TASK_WAITING_RETRY) &&
                        f->attempt == st->attempt + 1;
    if (!running && !unsaved_claim)
        return;
    struct zerg_result r = {.worker_id = c->slot, .attempt = f->attempt};
    snprintf(r.task, sizeof r.task, "%s", f->task_id);
    snprintf(r.commit, sizeof r.commit, "%s", f->oid);
    struct verdict v;
    if (orch_merge_result(o, t, &r, &v, c->now) == 1)
        orch_task_adopt_complete(o, t, f->attempt,
                                 "committed before the restart");
    else if (v.kind != VERDICT_REVIEW || orch_task_adopt(o, t, f->attempt) == 0)
        orch_attempt_end(o, t, &v, &r, NULL, c->now);
}

void orch_merge_resume(struct zerg_orch *o, int64_t now)
{
    if (!ws(o))
        return;
    struct found_ctx c = {.o = o, .now = now, .slot = -1};
    struct zerg_err err = {0};
    add_run(&c, o->o.prev_run_id);
    if (ws(o)->ops->merged(ws(o), on_merged, &c, &err) < 0)
        zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_WARN,
                       "reconcile_error", NULL, NULL, "Cannot read %s back: %s",
                       ws(o)->branch, err.msg);
    for (int s = 0; s < o->nslots; s++) {
        c.slot = s;
        ws(o)->ops->worker_head(ws(o), s, on_head, &c, &err);
    }
    orch_ws_refresh_tip(o, &err);
}
