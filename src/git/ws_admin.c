/* ws_admin.c - the workspace seen from the CLI: `zerg cleanup` (the
 * feature's worktrees removed after their uncommitted work is saved as
 * patches -- a worktree git can no longer read is moved under the logs
 * whole instead --, its worker branches deleted, with --all its integration and
 * conflict refs too), `zerg status`'s description, and whether isolation
 * `auto` means worktrees for a directory. */
#include "git/git_internal.h"
#include "git/ws_internal.h"
#include "zerg/clock.h"
#include "zerg/err.h"
#include "zerg/fsio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cleanup {
    struct zerg_git g;
    const char *feature, *logs_dir;
    int all, dry_run, actions;
    zerg_ws_say_fn say;
    void *ud;
};

static void say(struct cleanup *c, const char *fmt, const char *a,
                const char *b)
{
    char line[3 * PATH_MAX];
    snprintf(line, sizeof line, fmt, a, b ? b : "");
    c->actions++;
    if (c->say)
        c->say(c->ud, line);
}

/* .../.zerg-worktrees/{feature}/ prefix of the feature's worktrees. */
static int feature_dir(const struct cleanup *c, char *buf, size_t n)
{
    return zerg_fsio_path(buf, n, "%s/" WS_DIR "/%s/", c->g.top, c->feature);
}

/* A worker's worktree whose .git a task replaced or broke gets it back
 * first (the broken one kept), so that its work can become a patch. */
static void heal(struct cleanup *c, const char *path, const char *name)
{
    char branch[PATH_MAX];
    struct ws_heal h = {0};
    struct zerg_err ignored = {0};
    if (strncmp(name, "worker-", 7) ||
        zerg_fsio_path(branch, sizeof branch, "zerg/%s/%s", c->feature, name))
        return;
    if (ws_heal_dotgit(&c->g, path, branch, c->logs_dir, &h, &ignored) == 1)
        say(c, "Repaired worktree %s: %s", path, h.why);
}

/* When git cannot read a worktree any more, the whole directory is moved
 * under the logs instead of a patch: nothing unsaved is deleted.  1. */
static int move_tree(struct cleanup *c, const char *path, const char *name,
                     struct zerg_err *err)
{
    char saved[PATH_MAX], why[400];
    snprintf(why, sizeof why, "%.300s", err->msg);
    int rc = ws_move_aside(path, c->logs_dir, name, ".tree", saved,
                           sizeof saved, err);
    if (rc)
        return rc;
    char line[PATH_MAX + 400];
    snprintf(line, sizeof line, "%s (git cannot read it: %.300s)", saved, why);
    say(c, "Moved worktree %s to %s", path, line);
    return 1;
}

/* 0 when saved (or clean), 1 when the tree was moved aside whole. */
static int save_one(struct cleanup *c, const char *path, const char *name,
                    struct zerg_err *err)
{
    char rel[] = "worktrees", file[PATH_MAX], ts[ZERG_TS_MAX], *data = NULL;
    size_t len = 0;
    if (access(path, F_OK) || !c->logs_dir)
        return 0;
    heal(c, path, name);
    int rc = ws_patch_make(&c->g, path, NULL, &data, &len, err);
    if (rc || len == 0) {
        free(data);
        return rc < 0 ? move_tree(c, path, name, err) : rc;
    }
    zerg_clock_iso8601(zerg_clock_wall(&zerg_clock_system), ts);
    for (char *p = ts; *p; p++)
        *p = *p == ':' ? '-' : *p;
    rc = zerg_fsio_mkdirs_own(c->logs_dir, rel, 0755, err);
    if (!rc && zerg_fsio_path(file, sizeof file, "%s/%s/%s-%s.patch",
                              c->logs_dir, rel, name, ts))
        rc = zerg_err_set(err, -ENAMETOOLONG, "patch path too long");
    if (!rc)
        rc = zerg_fsio_write_atomic(file, data, len, ZERG_FSIO_DURABLE, err);
    free(data);
    if (!rc)
        say(c, "Saved the uncommitted work of %s to %s", path, file);
    return rc;
}

static int remove_tree(struct cleanup *c, const char *path,
                       struct zerg_err *err)
{
    const char *name = strrchr(path, '/') + 1;
    if (c->dry_run) {
        say(c, "Would remove worktree %s%s", path,
            access(path, F_OK) ? "" : " (saving uncommitted work first)");
        return 0;
    }
    if (access(path, F_OK)) {
        say(c, "Forgot worktree %s, whose directory is gone%s", path, NULL);
        return 0; /* the prune below drops its registration */
    }
    int rc = save_one(c, path, name, err);
    if (rc)
        return rc < 0 ? rc : 0; /* moved aside: the prune forgets it */
    const char *args[] = {"worktree", "remove", "-f", "-f", path, NULL};
    struct zerg_git_call call = {.retries = WS_RETRIES};
    rc = zerg_git_run(&c->g, &call, args, NULL, err);
    if (rc < 0)
        return rc;
    say(c, "Removed worktree %s%s", path, NULL);
    return 0;
}

static int remove_trees(struct cleanup *c, struct zerg_err *err)
{
    char dir[PATH_MAX];
    struct ws_wt *wts;
    size_t n;
    if (feature_dir(c, dir, sizeof dir))
        return zerg_err_set(err, -ENAMETOOLONG, "path too long");
    int rc = ws_list_worktrees(&c->g, &wts, &n, err);
    for (size_t i = 0; !rc && i < n; i++)
        if (!strncmp(wts[i].path, dir, strlen(dir)))
            rc = remove_tree(c, wts[i].path, err);
    free(wts);
    if (rc || c->dry_run)
        return rc;
    const char *prune[] = {"worktree", "prune", NULL};
    struct zerg_git_call call = {.retries = WS_RETRIES};
    rc = zerg_git_run(&c->g, &call, prune, NULL, err);
    dir[strlen(dir) - 1] = '\0';
    rmdir(dir); /* only when empty: nothing unsaved goes */
    return rc < 0 ? rc : 0;
}

/* Whether cleanup takes ref (a full name under the feature). */
static int wanted_ref(const struct cleanup *c, const char *ref)
{
    char heads[PATH_MAX], own[PATH_MAX];
    snprintf(heads, sizeof heads, "refs/heads/zerg/%s/", c->feature);
    snprintf(own, sizeof own, "refs/zerg/%s/", c->feature);
    if (!strncmp(ref, heads, strlen(heads))) {
        const char *rest = ref + strlen(heads);
        if (!strncmp(rest, "worker-", 7))
            return 1;
        return c->all && !strncmp(rest, "integration", 11);
    }
    return c->all && !strncmp(ref, own, strlen(own));
}

static int delete_refs(struct cleanup *c, struct zerg_err *err)
{
    char heads[PATH_MAX], own[PATH_MAX];
    snprintf(heads, sizeof heads, "refs/heads/zerg/%s/", c->feature);
    snprintf(own, sizeof own, "refs/zerg/%s/", c->feature);
    const char *args[] = {"for-each-ref", "--format=%(refname)", heads, own,
                          NULL};
    struct zerg_git_call call = {.retries = WS_RETRIES};
    char *out = NULL, *save = NULL;
    int rc = zerg_git_run(&c->g, &call, args, &out, err);
    if (rc < 0)
        return rc;
    rc = 0;
    for (char *l = strtok_r(out, "\n", &save); l && !rc;
         l = strtok_r(NULL, "\n", &save)) {
        if (!wanted_ref(c, l))
            continue;
        if (c->dry_run) {
            say(c, "Would delete %s%s", l, NULL);
            continue;
        }
        const char *del[] = {"update-ref", "-d", l, NULL};
        rc = zerg_git_run(&c->g, &call, del, NULL, err);
        rc = rc < 0 ? rc : 0;
        if (!rc)
            say(c, "Deleted %s%s", l, NULL);
    }
    free(out);
    return rc;
}

int zerg_ws_cleanup(const char *project, const char *feature,
                    const char *logs_dir, int all, int dry_run,
                    zerg_ws_say_fn say_fn, void *ud, struct zerg_err *err)
{
    struct cleanup c = {.feature = feature,
                        .logs_dir = logs_dir,
                        .all = all,
                        .dry_run = dry_run,
                        .say = say_fn,
                        .ud = ud};
    int rc = ws_check_name("feature", feature, err);
    if (!rc)
        rc = zerg_git_open(&c.g, project, NULL, err);
    if (!rc)
        rc = remove_trees(&c, err);
    if (!rc)
        rc = delete_refs(&c, err);
    return rc ? rc : c.actions;
}

/* The feature's worker worktrees: slot, head and whether dirty. */
static int describe_trees(const struct zerg_git *g, const char *feature,
                          struct zerg_ws_info *out, struct zerg_err *err)
{
    char dir[PATH_MAX];
    struct ws_wt *wts;
    size_t n;
    zerg_fsio_path(dir, sizeof dir, "%s/" WS_DIR "/%s/worker-", g->top,
                   feature);
    int rc = ws_list_worktrees(g, &wts, &n, err);
    for (size_t i = 0; !rc && i < n && out->nworktrees < 64; i++) {
        if (strncmp(wts[i].path, dir, strlen(dir)) || wts[i].prunable)
            continue;
        int k = out->nworktrees++;
        out->wt[k].slot = atoi(wts[i].path + strlen(dir));
        snprintf(out->wt[k].path, sizeof out->wt[k].path, "%s", wts[i].path);
        snprintf(out->wt[k].head, sizeof out->wt[k].head, "%s", wts[i].head);
        const char *st[] = {"status", "--porcelain", "--ignore-submodules",
                            NULL};
        struct zerg_git_call call = {.dir = wts[i].path, .retries = 3};
        char *text = NULL;
        rc = zerg_git_run(g, &call, st, &text, err);
        out->wt[k].dirty = rc >= 0 && text && text[0];
        rc = rc < 0 ? rc : 0;
        free(text);
    }
    free(wts);
    return rc;
}

int zerg_ws_describe(const char *project, const char *feature, const char *base,
                     struct zerg_ws_info *out, struct zerg_err *err)
{
    struct zerg_git g;
    char ref[PATH_MAX + 16], range[2 * PATH_MAX], count[32];
    memset(out, 0, sizeof *out);
    int rc = ws_check_name("feature", feature, err);
    if (!rc)
        rc = zerg_git_open(&g, project, NULL, err);
    if (rc)
        return rc;
    zerg_ws_integration_branch(out->branch, sizeof out->branch, feature);
    snprintf(ref, sizeof ref, "refs/heads/%s", out->branch);
    rc = zerg_git_resolve(&g, NULL, ref, out->tip, err);
    out->exists = rc == 0;
    if (rc && rc != ZERG_ENOTFOUND)
        return rc;
    if (out->exists) {
        snprintf(range, sizeof range, "%s..%s", base && *base ? base : "HEAD",
                 ref);
        const char *args[] = {"rev-list", "--count", "--end-of-options", range,
                              NULL};
        rc = git_line(&g, NULL, args, count, sizeof count, err);
        if (rc)
            return rc;
        out->commits = atoi(count);
    }
    return describe_trees(&g, feature, out, err);
}

int zerg_ws_auto_applies(const char *dir)
{
    struct zerg_git g;
    struct zerg_err err = {0};
    char oid[ZERG_GIT_OID_MAX];
    if (zerg_git_open(&g, dir, NULL, &err))
        return 0;
    return zerg_git_resolve(&g, NULL, "HEAD", oid, &err) == 0;
}
