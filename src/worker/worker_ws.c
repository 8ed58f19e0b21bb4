/* worker_ws.c - an attempt's worktree under worktree isolation (DESIGN
 * §13): before the attempt, the worktree is set to the integration tip
 * the orchestrator named (leftovers of a dead attempt saved as a patch
 * first); after it passed, everything it changed becomes one commit with
 * the task's trailers, and the result says which declared outputs are
 * missing and which ignored files were committed or left out (§18).  The git
 * work itself is src/git/ws_worker.c. */
#include "worker_ws.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/fsio.h"
#include "zerg/workspace.h"

int wk_ws_setup(struct worker *w)
{
    const struct zerg_worker_opts *o = w->o;
    const char *dir = o->workdir ? o->workdir : o->workspace;
    if (zerg_fsio_path(w->workdir, sizeof w->workdir, "%s",
                       dir ? dir : o->project) < 0)
        return zerg_err_set(w->err, -ENAMETOOLONG, "path too long: %s", dir);
    if (!o->workspace)
        return 0;
    struct zerg_err e = {0};
    int rc = 0;
    if (o->objects) {
        /* The slot's own repository, made before git can open it; what
         * was mended is said by the first prepare, which checks again. */
        char branch[PATH_MAX];
        struct zerg_ws_prepared *p = calloc(1, sizeof *p);
        zerg_ws_worker_branch(branch, sizeof branch, o->feature, o->slot);
        rc = p ? zerg_ws_own_ensure(o->workspace, o->objects, branch, p, &e)
               : zerg_err_set(&e, -ENOMEM, "out of memory");
        free(p);
        if (rc < 0)
            return zerg_err_set(w->err, rc, "worktree %s: %s", o->workspace,
                                e.msg);
    }
    /* NULL: core.hooksPath=/dev/null for our own git calls; no hook can
     * exist below a non-directory, whatever the shared .git holds. */
    rc = zerg_git_open(&w->git, o->workspace, NULL, &e);
    if (rc < 0)
        return zerg_err_set(w->err, rc, "worktree %s: %s", o->workspace, e.msg);
    w->have_git = 1;
    return 0;
}

static void logs_dir(const struct worker *w, char *buf, size_t n)
{
    zerg_fsio_path(buf, n, "%s/.zerg/logs/%s", w->o->project, w->o->feature);
}

/* The patch path relative to the project, for the result and the log. */
static void patch_rel(const struct worker *w, const char *abs, char *buf,
                      size_t n)
{
    size_t pn = strlen(w->o->project);
    if (!strncmp(abs, w->o->project, pn) && abs[pn] == '/')
        abs += pn + 1;
    snprintf(buf, n, "%s", abs);
}

/* The events of a prepare: the slot healed, leftovers too large to
 * save, the leftovers saved. */
static void log_prepared(struct worker *w, const struct zerg_assign *a,
                         const struct zerg_ws_prepared *p,
                         struct zerg_result *r)
{
    int slot = w->o->slot;
    if (p->repaired[0] || p->lock[0]) {
        zerg_json *data = zerg_json_obj();
        zerg_json_set_num(data, "slot", slot);
        zerg_json_set_str(data, "why", p->repaired[0] ? p->repaired : p->lock);
        zerg_json_set_str(data, "saved", p->saved);
        zerg_log_event(w->log, slot, ZERG_LOG_WARN, "worktree_repaired",
                       a->task, data, "Worker %d repaired its worktree: %s%s%s",
                       slot, p->repaired[0] ? p->repaired : p->lock,
                       p->saved[0] ? "; the broken .git was moved to " : "",
                       p->saved);
    }
    if (p->patch[0])
        patch_rel(w, p->patch, r->patch, sizeof r->patch);
    if (p->nskipped) {
        zerg_json *data = zerg_json_obj();
        zerg_json_set_str(data, "path", p->first);
        zerg_json_set_num(data, "bytes", (double)p->first_size);
        zerg_json_set_num(data, "files", p->nskipped);
        zerg_json_set_str(data, "skipped", p->skipped);
        zerg_json_set_str(data, "patch", r->patch);
        zerg_log_event(w->log, slot, ZERG_LOG_WARN, "leftover_too_large",
                       a->task, data,
                       "Worker %d left %s (%lld bytes)%s out of the saved "
                       "leftovers, too large to save (64 MiB a file, "
                       "256 MiB in all); it is discarded, named in %s",
                       slot, p->first, p->first_size,
                       p->nskipped > 1 ? " and others" : "", r->patch);
    }
    if (p->patch[0]) {
        zerg_json *data = zerg_json_obj();
        zerg_json_set_str(data, "patch", r->patch);
        zerg_log_event(w->log, slot, ZERG_LOG_WARN, "attempt_discarded",
                       a->task, data,
                       "Worker %d saved the leftovers of an earlier attempt "
                       "as %s before starting %s",
                       slot, r->patch, a->task);
    }
}

/* A git of ours killed by a signal (the OOM killer, an outside kill) is
 * no fault of the task's: the attempt ends as a crash, which charges no
 * retry, and the next attempt on this slot heals what it left (a lock). */
static void git_killed(int rc, struct zerg_result *r)
{
    if (rc == ZERG_EGIT_KILLED)
        zerg_result_set_class(r, ZERG_FAILURE_CRASH);
}

int wk_ws_before(struct worker *w, const struct zerg_assign *a,
                 struct zerg_result *r)
{
    if (!w->have_git)
        return 0;
    char logs[PATH_MAX], branch[PATH_MAX];
    struct zerg_err e = {0};
    logs_dir(w, logs, sizeof logs);
    if (!a->base[0]) {
        snprintf(r->error, sizeof r->error,
                 "the assignment names no base commit for the worktree");
        return -EINVAL;
    }
    struct zerg_ws_prepared *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(r->error, sizeof r->error, "out of memory");
        return -ENOMEM;
    }
    int rc =
        zerg_ws_worker_branch(branch, sizeof branch, w->o->feature, w->o->slot);
    if (!rc && w->o->objects)
        rc =
            zerg_ws_own_prepare(&w->git, w->o->workspace, w->o->objects, branch,
                                a->base, logs, a->task, a->attempt, p, &e);
    else if (!rc)
        rc = zerg_ws_slot_prepare(&w->git, w->o->workspace, branch, a->base,
                                  logs, a->task, a->attempt, p, &e);
    log_prepared(w, a, p, r);
    w->index = rc < 0 ? (struct zerg_ws_stamp){0} : p->index;
    snprintf(w->base_tree, sizeof w->base_tree, "%s",
             rc < 0 ? "" : a->base_tree);
    free(p);
    if (rc < 0) {
        snprintf(r->error, sizeof r->error,
                 "cannot prepare the worktree: %.200s", e.msg);
        git_killed(rc, r);
        return rc;
    }
    snprintf(r->base, sizeof r->base, "%s", a->base);
    return 0;
}

/* A declared path among zerg's run files stays in the worktree, never in
 * a commit (DESIGN §18): said, so the task's author moves it. */
static void warn_run_files(struct worker *w, const struct zerg_task *t)
{
    const struct zerg_strlist *l[] = {&t->files_create, &t->files_modify};
    for (size_t k = 0; k < 2; k++)
        for (size_t i = 0; i < l[k]->n; i++) {
            if (!zerg_ws_run_file(l[k]->v[i]))
                continue;
            zerg_json *data = zerg_json_obj();
            zerg_json_set_str(data, "file", l[k]->v[i]);
            zerg_log_event(w->log, w->o->slot, ZERG_LOG_WARN,
                           "output_not_committed", t->id, data,
                           "Task %s declares %s, one of zerg's run files: "
                           "it is never committed (write it elsewhere)",
                           t->id, l[k]->v[i]);
        }
}

/* Container mode: the commit also as a bundle the host takes it from
 * (DESIGN §19); without it the host could not merge, so the attempt
 * fails as its commit would have. */
static int own_bundle(struct worker *w, const struct zerg_task *t, int attempt,
                      struct zerg_result *r)
{
    char logs[PATH_MAX], branch[PATH_MAX];
    struct zerg_err e = {0};
    logs_dir(w, logs, sizeof logs);
    zerg_ws_worker_branch(branch, sizeof branch, w->o->feature, w->o->slot);
    int rc = zerg_ws_own_bundle(&w->git, w->o->workspace, branch, r->base,
                                r->commit, logs, t->id, attempt, &e);
    if (rc < 0) {
        snprintf(r->stage, sizeof r->stage, "commit");
        snprintf(r->error, sizeof r->error,
                 "cannot write the task's commit as a bundle: %.200s", e.msg);
        r->commit[0] = '\0';
        git_killed(rc, r);
    }
    return rc;
}

int wk_ws_after(struct worker *w, const struct zerg_task *t, int attempt,
                struct zerg_result *r)
{
    /* Declared outputs, in either isolation: the orchestrator asks
     * scope.missing what a missing one means (DESIGN §18). */
    zerg_ws_outputs_missing(w->workdir, t, &r->missing);
    if (!w->have_git)
        return 0;
    warn_run_files(w, t);
    struct zerg_err e = {0};
    char *msg = zerg_ws_commit_message(w->o->slot, t->title, t->id, attempt,
                                       w->o->run_id ? w->o->run_id : "");
    if (!msg) {
        snprintf(r->error, sizeof r->error, "out of memory");
        return -ENOMEM;
    }
    struct zerg_ws_outputs outs = {.task = t,
                                   .project_dir = w->workdir,
                                   .forced = &r->forced,
                                   .ignored = &r->ignored,
                                   .index = &w->index,
                                   .base_tree = w->base_tree};
    int rc = zerg_ws_attempt_commit(&w->git, w->o->workspace, r->base, msg,
                                    &outs, r->commit, &e);
    free(msg);
    if (rc < 0) {
        snprintf(r->stage, sizeof r->stage, "commit");
        snprintf(r->error, sizeof r->error,
                 "cannot commit the task's work: %.200s", e.msg);
        git_killed(rc, r);
        return rc;
    }
    if (r->commit[0] && w->o->objects)
        rc = own_bundle(w, t, attempt, r);
    if (rc < 0)
        return rc;
    if (r->commit[0]) {
        zerg_json *data = zerg_json_obj();
        zerg_json_set_str(data, "commit", r->commit);
        zerg_json_set_num(data, "attempt", attempt);
        zerg_log_event(w->log, w->o->slot, ZERG_LOG_INFO, "task_commit", t->id,
                       data, "Worker %d committed %s as %.12s", w->o->slot,
                       t->id, r->commit);
    }
    return 0;
}
