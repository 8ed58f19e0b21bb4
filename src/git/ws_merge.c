/* ws_merge.c - the merge queue's side of the workspace: a task's commit
 * squashed onto the integration branch without a checkout
 * (merge-tree --write-tree, commit-tree, update-ref with the old value),
 * the conflict ref, and what is on the branches already (resume).
 *
 * The compare-and-swap: the tip is read, the merge computed against it,
 * and update-ref moves the branch only if it still points there.  A lost
 * race or a locked ref starts the round again from reading the tip, so a
 * commit that landed meanwhile is never lost. */
#include "git/git_internal.h"
#include "git/ws_internal.h"
#include "zerg/err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void (*ws_merge_race_hook)(struct ws_host *h);

static struct ws_host *host(struct zerg_workspace *w)
{
    return (struct ws_host *)w;
}

/* NUL-separated paths (from -z) to one path a line, malloc'd. */
static char *lines_of(const char *z, size_t len)
{
    char *out = malloc(len + 2);
    size_t off = 0;
    if (!out)
        return NULL;
    for (const char *p = z; p < z + len; p += strlen(p) + 1)
        if (*p)
            off += (size_t)sprintf(out + off, "%s\n", p);
    out[off] = '\0';
    return out;
}

int ws_op_changed(struct zerg_workspace *w, const char *commit,
                  const char *base, char **paths, struct zerg_err *err)
{
    char parent[ZERG_GIT_OID_MAX + 4];
    snprintf(parent, sizeof parent, "%s^", commit);
    const char *args[] = {"diff-tree",
                          "-r",
                          "--name-only",
                          "-z",
                          "--no-renames",
                          "--no-ext-diff",
                          "--no-textconv",
                          "--end-of-options",
                          base && *base ? base : parent,
                          commit,
                          NULL};
    struct zerg_git_call call = {.retries = WS_RETRIES};
    char *out = NULL;
    size_t len = 0;
    if (base && *base && ws_pipe_changed(host(w), commit, base, paths) == 0)
        return 0;
    int rc = git_run_ex(&host(w)->g, &call, 0, args, &out, &len, err);
    if (rc < 0)
        return rc;
    *paths = lines_of(out, len);
    free(out);
    return *paths ? 0 : zerg_err_set(err, -ENOMEM, "out of memory");
}

/* merge-tree of tip and commit: the tree in tree, or 1 with the
 * conflicting paths in *conflicts. */
static int merge_tree(struct ws_host *h, const char *tip, const char *commit,
                      char tree[ZERG_GIT_OID_MAX], char **conflicts,
                      struct zerg_err *err)
{
    const char *args[] = {"merge-tree",
                          "--write-tree",
                          "--no-messages",
                          "--name-only",
                          "-z",
                          tip,
                          commit,
                          NULL};
    struct zerg_git_call call = {.ok_status = 1, .retries = WS_RETRIES};
    char *out = NULL;
    size_t len = 0;
    int rc = git_run_ex(&h->g, &call, 0, args, &out, &len, err);
    if (rc < 0)
        return rc;
    size_t tl = strlen(out);
    if (tl == 0 || tl >= ZERG_GIT_OID_MAX) {
        free(out);
        return zerg_err_set(err, ZERG_EGIT_FAILED,
                            "git merge-tree gave no tree for %s", commit);
    }
    memcpy(tree, out, tl + 1);
    if (rc == 1 && !(*conflicts = lines_of(out + tl + 1, len - tl - 1)))
        rc = zerg_err_set(err, -ENOMEM, "out of memory");
    free(out);
    return rc;
}

static int commit_tree(struct ws_host *h, const char *tree, const char *tip,
                       const struct zerg_merge_req *req,
                       char oid[ZERG_GIT_OID_MAX], struct zerg_err *err)
{
    char *msg = zerg_ws_commit_message(req->worker, req->title, req->task_id,
                                       req->attempt, req->run_id);
    if (!msg)
        return zerg_err_set(err, -ENOMEM, "out of memory");
    const char *args[] = {"commit-tree", tree, "-p", tip, "-F", "-", NULL};
    struct zerg_git_call call = {
        .input = msg, .input_len = strlen(msg), .retries = WS_RETRIES};
    char *out = NULL;
    int rc = zerg_git_run(&h->g, &call, args, &out, err);
    free(msg);
    if (rc < 0)
        return rc;
    size_t len = strcspn(out, "\n");
    if (len == 0 || len >= ZERG_GIT_OID_MAX)
        rc = zerg_err_set(err, ZERG_EGIT_FAILED, "git commit-tree gave no id");
    else
        memcpy(oid, out, len), oid[len] = '\0';
    free(out);
    return rc;
}

/* The integration branch checked out in a worktree since the run began
 * (the open refuses it before): moving it would move that worktree's HEAD
 * under its files, so the merge stops with ZERG_EGIT_CHECKED_OUT. */
static int not_checked_out(struct ws_host *h, struct zerg_err *err)
{
    char where[PATH_MAX];
    int rc = ws_checked_out_now(&h->g, h->ref, where, sizeof where, err);
    if (rc <= 0)
        return rc;
    return ws_refuse_checked_out(h->ref, where,
                                 "`zerg rush --resume` goes on from here", err);
}

/* 1 when the branch is no longer at tip (or cannot be read). */
static int moved(struct ws_host *h, const char *tip)
{
    char now[ZERG_GIT_OID_MAX];
    struct zerg_err ignored = {0};
    return zerg_git_resolve(&h->g, NULL, h->ref, now, &ignored) ||
           strcmp(now, tip);
}

/* The branch from tip to next: over the running update-ref, else (the
 * swap lost or the pipe broke) by a process of its own, whose error says
 * which.  A swap that failed after the branch moved to next (the pipe
 * broke after the update) is done. */
static int swap(struct ws_host *h, const char *next, const char *tip,
                struct zerg_err *err)
{
    if (ws_pipe_swap(h, h->ref, next, tip) == 0)
        return 0;
    /* No retries here: a failed swap must re-read the tip. */
    const char *args[] = {"update-ref", h->ref, next, tip, NULL};
    struct zerg_git_call call = {0};
    int rc = zerg_git_run(&h->g, &call, args, NULL, err);
    if (rc < 0 && !moved(h, next))
        rc = 0;
    return rc < 0 ? rc : 0;
}

/* One round: DONE, CONFLICT, or ZERG_EGIT_TRANSIENT when the tip moved.
 * The first round starts from where the last merge left the branch; a
 * lost swap forgets it, and the next round reads the branch. */
static int merge_round(struct ws_host *h, const struct zerg_merge_req *req,
                       struct zerg_merge_out *out, struct zerg_err *err)
{
    char tip[ZERG_GIT_OID_MAX], tree[ZERG_GIT_OID_MAX], next[ZERG_GIT_OID_MAX];
    int rc = 0, known = h->tip[0] != '\0';
    if (known)
        snprintf(tip, sizeof tip, "%s", h->tip);
    else
        rc = zerg_git_resolve(&h->g, NULL, h->ref, tip, err);
    h->tip[0] = '\0';
    if (!rc)
        rc = merge_tree(h, tip, req->commit, tree, &out->conflicts, err);
    if (rc == 1 && known && moved(h, tip)) {
        free(out->conflicts); /* against a tip the branch left */
        out->conflicts = NULL;
        return ZERG_EGIT_TRANSIENT;
    }
    if (rc == 1) {
        out->status = ZERG_MERGE_CONFLICT;
        snprintf(out->tip, sizeof out->tip, "%s", tip);
        return 0;
    }
    if (!rc)
        rc = commit_tree(h, tree, tip, req, next, err);
    if (rc)
        return rc;
    if (ws_merge_race_hook)
        ws_merge_race_hook(h);
    if ((rc = not_checked_out(h, err)))
        return rc;
    if ((rc = swap(h, next, tip, err)))
        return rc;
    out->status = ZERG_MERGE_DONE;
    snprintf(out->tip, sizeof out->tip, "%s", next);
    snprintf(out->tree, sizeof out->tree, "%s", tree);
    snprintf(h->tip, sizeof h->tip, "%s", next);
    ws_note_ref(h, h->ref, next);
    return 0;
}

int ws_op_merge(struct zerg_workspace *w, const struct zerg_merge_req *req,
                struct zerg_merge_out *out, struct zerg_err *err)
{
    struct ws_host *h = host(w);
    memset(out, 0, sizeof *out);
    char *key = ws_done_key(req->task_id, req->attempt, req->run_id);
    if (!key)
        return zerg_err_set(err, -ENOMEM, "out of memory");
    if (ws_done_has(h, key)) {
        free(key);
        out->status = ZERG_MERGE_ALREADY;
        return zerg_git_resolve(&h->g, NULL, h->ref, out->tip, err);
    }
    int rc = ZERG_EGIT_TRANSIENT;
    for (int round = 0; rc == ZERG_EGIT_TRANSIENT && round < WS_CAS_TRIES;
         round++) {
        if (round)
            git_pause(round - 1);
        rc = merge_round(h, req, out, err);
    }
    if (!rc && out->status == ZERG_MERGE_DONE)
        return ws_done_add(h, key) ? zerg_err_set(err, -ENOMEM, "no memory")
                                   : 0;
    free(key);
    return rc;
}

int ws_op_keep(struct zerg_workspace *w, enum zerg_ws_kept kind,
               const char *task, int attempt, const char *commit,
               struct zerg_err *err)
{
    struct ws_host *h = host(w);
    char ref[PATH_MAX];
    int rc = ws_check_name("task id", task, err);
    if (rc)
        return rc;
    if (zerg_ws_kept_ref(ref, sizeof ref, h->feature, kind, task, attempt))
        return zerg_err_set(err, -ENAMETOOLONG, "ref of task %s too long",
                            task);
    const char *args[] = {"update-ref", ref, commit, NULL};
    struct zerg_git_call call = {.retries = WS_RETRIES};
    rc = zerg_git_run(&h->g, &call, args, NULL, err);
    if (rc < 0)
        return rc;
    ws_note_ref(h, ref, commit);
    return 0;
}

int ws_op_merged(struct zerg_workspace *w, zerg_ws_found_fn fn, void *ud,
                 struct zerg_err *err)
{
    struct ws_host *h = host(w);
    char range[2 * PATH_MAX];
    snprintf(range, sizeof range, "%s..%s", h->pub.base, h->ref);
    const char *args[] = {"--reverse", "--end-of-options", range, NULL};
    return ws_log_tasks(&h->g, args, fn, ud, err);
}

struct head_ctx {
    const struct ws_host *h;
    zerg_ws_found_fn fn;
    void *ud;
    int found;
};

/* A head whose task attempt is already merged is not pending: the merge
 * squashed it into a commit of its own (the same commit only when both
 * were made within one second), found by its trailers. */
static void head_one(void *ud, const struct zerg_ws_found *f)
{
    struct head_ctx *c = ud;
    char *key = ws_done_key(f->task_id, f->attempt, f->run_id);
    int merged = key && ws_done_has(c->h, key);
    free(key);
    if (merged)
        return;
    c->found = 1;
    c->fn(c->ud, f);
}

/* The worker branch's head counts only when the integration branch does
 * not hold it: after a reset the head is the tip's own squash commit, and
 * a merged attempt's head is known by its trailers. */
int ws_op_worker_head(struct zerg_workspace *w, int slot, zerg_ws_found_fn fn,
                      void *ud, struct zerg_err *err)
{
    struct ws_host *h = host(w);
    char branch[PATH_MAX], ref[PATH_MAX + 16];
    ws_own_take_recorded(h, slot);
    zerg_ws_worker_branch(branch, sizeof branch, h->feature, slot);
    snprintf(ref, sizeof ref, "refs/heads/%s", branch);
    int rc = ws_ref_exists(&h->g, ref, err);
    if (rc <= 0)
        return rc < 0 ? rc : ZERG_ENOTFOUND;
    const char *anc[] = {"merge-base", "--is-ancestor", ref, h->ref, NULL};
    struct zerg_git_call call = {.ok_status = 1, .retries = WS_RETRIES};
    rc = zerg_git_run(&h->g, &call, anc, NULL, err);
    if (rc != 1)
        return rc < 0 ? rc : ZERG_ENOTFOUND;
    const char *args[] = {"-1", "--end-of-options", ref, NULL};
    struct head_ctx c = {h, fn, ud, 0};
    rc = ws_log_tasks(&h->g, args, head_one, &c, err);
    return rc ? rc : c.found ? 0 : ZERG_ENOTFOUND;
}
