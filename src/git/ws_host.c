/* ws_host.c - the orchestrator's workspace (zerg_ws_open and the ops
 * table): git and the repository checked, the base resolved, the
 * integration branch and the excludes set up, the worker worktrees made;
 * then the tip, the worktree of a slot and the gate's worktree on demand.
 * The merge queue's ops are in ws_merge.c. */
#include "git/git_internal.h"
#include "git/ws_internal.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/json.h"
#include "zerg/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static struct ws_host *host(struct zerg_workspace *w)
{
    return (struct ws_host *)w;
}

static int op_tip(struct zerg_workspace *w, char oid[ZERG_GIT_OID_MAX],
                  struct zerg_err *err)
{
    return zerg_git_resolve(&host(w)->g, NULL, host(w)->ref, oid, err);
}

/* The directory tasks run in: the worktree plus the monorepo prefix. */
static int with_prefix(const struct zerg_git *g, const char *path, char *cwd,
                       size_t cwd_n)
{
    if (!cwd)
        return 0;
    if (g->prefix[0])
        return zerg_fsio_path(cwd, cwd_n, "%s/%s", path, g->prefix);
    return zerg_fsio_path(cwd, cwd_n, "%s", path);
}

static void log_ready(struct ws_host *h, int slot, const char *path,
                      const char *branch)
{
    zerg_json *data = zerg_json_obj();
    if (data) {
        zerg_json_set_str(data, "path", path);
        zerg_json_set_str(data, "branch", branch);
    }
    zerg_log_event(h->log, slot, ZERG_LOG_INFO, "worktree_ready", NULL, data,
                   "Worktree %s ready on %s", path, branch);
}

void ws_note_ref(struct ws_host *h, const char *ref, const char *oid)
{
    if (h->on_ref)
        h->on_ref(h->ref_ud, ref, oid);
}

void ws_note_ref_at(struct ws_host *h, const char *ref)
{
    char oid[ZERG_GIT_OID_MAX];
    struct zerg_err ignored = {0};
    if (h->on_ref && !zerg_git_resolve(&h->g, NULL, ref, oid, &ignored))
        h->on_ref(h->ref_ud, ref, oid);
}

/* The slot's branch is zerg's from now on (its worker resets it before
 * every attempt), so git.refs lists it, whoever made it first. */
static void note_branch(struct ws_host *h, const char *branch)
{
    char ref[PATH_MAX + 16];
    snprintf(ref, sizeof ref, "refs/heads/%s", branch);
    ws_note_ref_at(h, ref);
}

static void log_repaired(struct ws_host *h, int slot, const char *path,
                         const struct ws_heal *heal)
{
    zerg_json *data = zerg_json_obj();
    if (data) {
        zerg_json_set_num(data, "slot", slot);
        zerg_json_set_str(data, "why", heal->why);
        zerg_json_set_str(data, "saved", heal->saved);
    }
    zerg_log_event(h->log, slot, ZERG_LOG_WARN, "worktree_repaired", NULL, data,
                   "Worktree %s repaired: %s%s%s", path, heal->why,
                   heal->saved[0] ? "; the broken .git was moved to " : "",
                   heal->saved);
}

/* A slot's worktree a worker can open: its .git healed when a task
 * replaced or broke it, made (or re-made) when git does not know it. */
static int slot_tree(struct ws_host *h, int slot, char *path, size_t n,
                     struct zerg_err *err)
{
    char name[32], branch[PATH_MAX];
    struct ws_heal heal = {0};
    struct zerg_err sub = {0};
    snprintf(name, sizeof name, "worker-%d", slot);
    if (slot < 0 || ws_tree_path(&h->g, h->feature, name, path, n) ||
        zerg_ws_worker_branch(branch, sizeof branch, h->feature, slot))
        return zerg_err_set(err, ZERG_EINVAL_INPUT, "no worktree for slot %d",
                            slot);
    if (h->own) { /* the worker makes and heals its repository itself */
        int made = ws_own_slot(h, slot, path, err);
        if (made == 1)
            log_ready(h, slot, path, branch);
        return made < 0 ? made : 0;
    }
    int rc = 0, linked = ws_path_check(path, &sub) == ZERG_ESYMLINK;
    if (linked) {
        /* ws_ensure_worktree removes the link (never what it leads to)
         * and makes the worktree again. */
        snprintf(heal.why, sizeof heal.why, "%.190s", sub.msg);
        log_repaired(h, slot, path, &heal);
    } else {
        rc = ws_heal_dotgit(&h->g, path, branch, h->logs, &heal, &sub);
    }
    if (rc == 1)
        log_repaired(h, slot, path, &heal);
    else if (rc < 0 && rc != ZERG_ENOTFOUND)
        return zerg_err_set(err, rc, "%s", sub.msg);
    /* A worktree whose .git is sound is used as it is; git is only asked
     * when it is missing or was a link. */
    if (rc == 1 || (rc == 0 && !linked)) {
        note_branch(h, branch); /* reused: a state of an older zerg has no
                                   git.refs to list it */
        return 0;
    }
    rc = ws_ensure_worktree(&h->g, h->feature, path, branch, h->pub.base,
                            h->logs, err);
    if (rc < 0)
        return rc;
    note_branch(h, branch);
    log_ready(h, slot, path, branch);
    return 0;
}

static int op_worktree(struct zerg_workspace *w, int slot, char *buf, size_t n,
                       char *cwd, size_t cwd_n, struct zerg_err *err)
{
    struct ws_host *h = host(w);
    int rc = slot_tree(h, slot, buf, n, err);
    if (!rc && with_prefix(&h->g, buf, cwd, cwd_n))
        rc = zerg_err_set(err, -ENAMETOOLONG, "worktree path too long");
    return rc;
}

/* The gate's worktree, detached at the tip; a reused one is reset and
 * cleaned so a gate never sees what the last one left. */
static int op_gate_tree(struct zerg_workspace *w, char *buf, size_t n,
                        struct zerg_err *err)
{
    struct ws_host *h = host(w);
    char tip[ZERG_GIT_OID_MAX], path[PATH_MAX];
    int rc = op_tip(w, tip, err);
    if (!rc && ws_tree_path(&h->g, h->feature, "gate", path, sizeof path))
        rc = zerg_err_set(err, -ENAMETOOLONG, "gate path too long");
    if (!rc)
        rc = ws_ensure_worktree(&h->g, h->feature, path, NULL, tip, h->logs,
                                err);
    if (rc == 0) {
        const char *reset[] = {"reset", "-q", "--hard", tip, NULL};
        const char *clean[] = {"clean", "-ffdq", NULL};
        struct zerg_git_call call = {.dir = path, .retries = WS_RETRIES};
        rc = zerg_git_run(&h->g, &call, reset, NULL, err);
        if (rc >= 0)
            rc = zerg_git_run(&h->g, &call, clean, NULL, err);
    }
    if (rc < 0)
        return rc;
    if (with_prefix(&h->g, path, buf, n))
        return zerg_err_set(err, -ENAMETOOLONG, "gate path too long");
    return 0;
}

/* The end of the run (every worker is gone): a lock a killed git left in
 * a slot (its index, its HEAD, its branch's ref in the common directory)
 * goes now, not at the slot's next use, which may never come: the
 * branch's lock would stop the user's own git.  Never while a git still
 * runs in the worktree (ws_heal_lock).  Container slots hold repositories
 * of their own. */
static void heal_slots(struct ws_host *h)
{
    for (int s = 0; !h->own && s < h->nslots; s++) {
        char name[32], path[PATH_MAX], branch[PATH_MAX];
        struct ws_heal lk = {0};
        struct stat st;
        snprintf(name, sizeof name, "worker-%d", s);
        if (ws_tree_path(&h->g, h->feature, name, path, sizeof path) ||
            lstat(path, &st) || !S_ISDIR(st.st_mode) ||
            zerg_ws_worker_branch(branch, sizeof branch, h->feature, s))
            continue;
        if (ws_heal_tree_lock(&h->g, path, branch, &lk) == 1)
            log_repaired(h, s, path, &lk);
    }
}

static void op_free(struct zerg_workspace *w)
{
    struct ws_host *h = host(w);
    if (!h)
        return;
    heal_slots(h);
    for (size_t i = 0; i < h->ndone; i++)
        free(h->done[i]);
    free(h->done);
    git_coproc_free(&h->diff);
    git_coproc_free(&h->refs);
    free(h);
}

static const struct zerg_workspace_ops HOST_OPS = {
    .tip = op_tip,
    .worktree = op_worktree,
    .changed = ws_op_changed,
    .merge = ws_op_merge,
    .keep = ws_op_keep,
    .merged = ws_op_merged,
    .worker_head = ws_op_worker_head,
    .gate_tree = op_gate_tree,
    .import = ws_op_import,
    .free = op_free,
};

/* The run's base: the recorded one on resume, else rush.base or HEAD. */
static int resolve_base(struct ws_host *h, const struct zerg_ws_opts *o,
                        struct zerg_err *err)
{
    const char *rev = o->recorded_base && *o->recorded_base ? o->recorded_base
                      : o->base && *o->base                 ? o->base
                                                            : "HEAD";
    int rc = zerg_git_resolve(&h->g, NULL, rev, h->pub.base, err);
    if (rc != ZERG_ENOTFOUND)
        return rc;
    if (rev == o->base || rev == o->recorded_base)
        return zerg_err_set(err, ZERG_EINVAL_INPUT,
                            "%s %s is not a commit of %s: fix rush.base or "
                            "name an existing branch, tag or commit",
                            rev == o->base ? "rush.base" : "the recorded base",
                            rev, h->g.top);
    return zerg_err_set(err, ZERG_EGIT_NOREPO,
                        "%s has no commit yet (HEAD is unborn): make a first "
                        "commit or set rush.isolation: none",
                        h->g.top);
}

static int open_checks(struct ws_host *h, const struct zerg_ws_opts *o,
                       struct zerg_err *err)
{
    int rc = ws_check_name("feature", o->feature, err);
    if (!rc)
        rc = zerg_git_open(&h->g, o->project, NULL, err);
    if (!rc)
        rc = resolve_base(h, o, err);
    if (rc)
        return rc;
    snprintf(h->feature, sizeof h->feature, "%s", o->feature);
    if (zerg_fsio_path(h->logs, sizeof h->logs, "%s/.zerg/logs/%s", o->project,
                       o->feature))
        return zerg_err_set(err, -ENAMETOOLONG, "project path too long");
    snprintf(h->run_id, sizeof h->run_id, "%s", o->run_id ? o->run_id : "");
    zerg_ws_integration_branch(h->pub.branch, sizeof h->pub.branch, o->feature);
    snprintf(h->ref, sizeof h->ref, "refs/heads/%s", h->pub.branch);
    snprintf(h->pub.git_dir, sizeof h->pub.git_dir, "%s", h->g.common_dir);
    return 0;
}

static int make_slots(struct ws_host *h, struct zerg_err *err)
{
    char path[PATH_MAX];
    for (int slot = 0; slot < h->nslots; slot++) {
        int rc = slot_tree(h, slot, path, sizeof path, err);
        if (rc)
            return rc;
    }
    return 0;
}

const struct zerg_git *zerg_ws_git(const struct zerg_workspace *w)
{
    return &((const struct ws_host *)w)->g;
}

struct zerg_workspace *zerg_ws_open(const struct zerg_ws_opts *o,
                                    struct zerg_err *err)
{
    struct ws_host *h = calloc(1, sizeof *h);
    if (!h) {
        zerg_err_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    h->pub.ops = &HOST_OPS;
    h->diff = h->refs = (struct git_coproc)GIT_COPROC_INIT;
    h->nslots = o->nslots;
    h->own = o->own_repos;
    h->log = o->log;
    h->on_ref = o->on_ref;
    h->ref_ud = o->ref_ud;
    int rc = open_checks(h, o, err);
    if (!rc)
        rc = ws_setup_branch(h, o, err);
    if (!rc)
        rc = ws_add_excludes(&h->g, err);
    if (!rc)
        rc = ws_done_load(h, err);
    if (!rc)
        rc = make_slots(h, err);
    if (rc) {
        op_free(&h->pub);
        return NULL;
    }
    return &h->pub;
}
