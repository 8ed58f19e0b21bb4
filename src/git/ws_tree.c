/* ws_tree.c - worktrees of a feature: where they live
 * (<top>/.zerg-worktrees/{feature}/{name}), the repository's list of
 * them, and making one exist: reused when valid, re-added when its
 * directory vanished but git still has it registered, never reached
 * through a link a task planted on its path (the link is removed), a
 * directory git does not know moved aside rather than deleted; checked
 * out by zerg's own call in the new worktree, not by `worktree add`. */
#include "git/git_internal.h"
#include "git/ws_internal.h"
#include "zerg/err.h"
#include "zerg/fsio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int ws_tree_path(const struct zerg_git *g, const char *feature,
                 const char *name, char *buf, size_t n)
{
    return zerg_fsio_path(buf, n, "%s/" WS_DIR "/%s/%s", g->top, feature, name);
}

/* One "-z" line of the porcelain listing into the current entry. */
static void parse_line(const char *line, struct ws_wt *w)
{
    if (!strncmp(line, "HEAD ", 5))
        snprintf(w->head, sizeof w->head, "%s", line + 5);
    else if (!strncmp(line, "branch ", 7))
        snprintf(w->branch, sizeof w->branch, "%s", line + 7);
    else if (!strncmp(line, "prunable", 8))
        w->prunable = 1;
}

static int parse_list(const char *out, size_t len, struct ws_wt **wts,
                      size_t *n)
{
    size_t cap = 0;
    struct ws_wt *cur = NULL;
    *wts = NULL, *n = 0;
    for (const char *p = out; p < out + len; p += strlen(p) + 1) {
        if (!strncmp(p, "worktree ", 9)) {
            if (*n == cap) {
                cap = cap ? cap * 2 : 8;
                struct ws_wt *grown = realloc(*wts, cap * sizeof *grown);
                if (!grown)
                    return -ENOMEM;
                *wts = grown;
            }
            cur = &(*wts)[(*n)++];
            memset(cur, 0, sizeof *cur);
            snprintf(cur->path, sizeof cur->path, "%s", p + 9);
        } else if (cur) {
            parse_line(p, cur);
        }
    }
    return 0;
}

int ws_list_worktrees(const struct zerg_git *g, struct ws_wt **wts, size_t *n,
                      struct zerg_err *err)
{
    const char *args[] = {"worktree", "list", "--porcelain", "-z", NULL};
    struct zerg_git_call call = {.retries = WS_RETRIES};
    char *out = NULL;
    size_t len = 0;
    int rc = git_run_ex(g, &call, 0, args, &out, &len, err);
    if (rc < 0)
        return rc;
    rc = parse_list(out, len, wts, n);
    free(out);
    if (rc) {
        free(*wts);
        *wts = NULL;
        return zerg_err_set(err, rc, "out of memory");
    }
    return 0;
}

int ws_checked_out(const struct zerg_git *g, const char *ref,
                   const char *except, char *where, size_t n,
                   struct zerg_err *err)
{
    struct ws_wt *wts;
    size_t nw;
    int rc = ws_list_worktrees(g, &wts, &nw, err), found = 0;
    if (rc)
        return rc;
    for (size_t i = 0; !found && i < nw; i++)
        if (!strcmp(wts[i].branch, ref) &&
            !(except && !strcmp(wts[i].path, except))) {
            found = 1;
            if (where)
                snprintf(where, n, "%s", wts[i].path);
        }
    free(wts);
    return found;
}

int ws_refuse_checked_out(const char *ref, const char *where, const char *then,
                          struct zerg_err *err)
{
    const char *name = strncmp(ref, "refs/heads/", 11) ? ref : ref + 11;
    return zerg_err_set(err, ZERG_EGIT_CHECKED_OUT,
                        "%s is checked out in %s: zerg never moves a branch "
                        "that is checked out in a worktree.  Switch that "
                        "worktree to another branch (git -C '%s' switch "
                        "<branch>), then %s",
                        name, where, where, then);
}

int ws_ref_exists(const struct zerg_git *g, const char *ref,
                  struct zerg_err *err)
{
    const char *args[] = {"show-ref", "--verify", "-q", ref, NULL};
    struct zerg_git_call call = {.ok_status = 1, .retries = WS_RETRIES};
    int rc = zerg_git_run(g, &call, args, NULL, err);
    return rc < 0 ? rc : rc == 0;
}

/* -1 when git does not know path, else whether its directory is gone. */
static int registration(const struct zerg_git *g, const char *path, int *gone,
                        struct zerg_err *err)
{
    struct ws_wt *wts;
    size_t n;
    int rc = ws_list_worktrees(g, &wts, &n, err), found = 0;
    if (rc)
        return rc;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(wts[i].path, path)) {
            found = 1;
            *gone = wts[i].prunable;
        }
    free(wts);
    return found;
}

/* `git worktree add` checks the new tree out in a child git whose config
 * zerg never read: an includeIf on gitdir (a pattern of the worktrees'
 * admin dirs) or onbranch (zerg's branches) in .git/config matches there
 * only and could name a smudge filter.  So the worktree is added with
 * --no-checkout and then filled by zerg's own call run in it, whose scan
 * sees those includes. */
static int add_worktree(const struct zerg_git *g, const char *path,
                        const char *branch, const char *rev,
                        struct zerg_err *err)
{
    char ref[PATH_MAX];
    if (branch && zerg_fsio_path(ref, sizeof ref, "refs/heads/%s", branch))
        return zerg_err_set(err, -ENAMETOOLONG, "branch name too long");
    int exists = branch ? ws_ref_exists(g, ref, err) : 0;
    if (exists < 0)
        return exists;
    /* -f below would check out a branch that another worktree (the
     * user's) has checked out, and the worker would then move it. */
    char where[PATH_MAX];
    int busy =
        exists ? ws_checked_out(g, ref, path, where, sizeof where, err) : 0;
    if (busy < 0)
        return busy;
    if (busy)
        return ws_refuse_checked_out(ref, where, "run zerg again", err);
    /* An existing worker branch may hold a committed task not merged yet
     * (resume): it is checked out as it is, never reset here. */
    const char *with_branch[] = {"worktree", "add",  "-f", "--no-checkout",
                                 path,       branch, NULL};
    const char *new_branch[] = {"worktree", "add",  "-f", "--no-checkout",
                                "-B",       branch, path, rev,
                                NULL};
    const char *detached[] = {"worktree", "add", "-f", "--no-checkout",
                              "--detach", path,  rev,  NULL};
    const char *const *args = !branch  ? detached
                              : exists ? with_branch
                                       : new_branch;
    struct zerg_git_call call = {.retries = WS_RETRIES};
    int rc = zerg_git_run(g, &call, args, NULL, err);
    if (rc < 0)
        return rc;
    const char *fill[] = {"reset", "-q", "--hard", "HEAD", NULL};
    struct zerg_git_call in_tree = {.dir = path, .retries = WS_RETRIES};
    rc = zerg_git_run(g, &in_tree, fill, NULL, err);
    return rc < 0 ? rc : 1;
}

/* The parent directories, none of them a link: a link a task planted
 * (to the main checkout, say) is removed, never followed, and a real
 * directory takes its place; path itself is never a link either. */
static int make_parent(const struct zerg_git *g, const char *feature,
                       const char *path, struct zerg_err *err)
{
    char rel[PATH_MAX];
    struct stat st;
    if (zerg_fsio_path(rel, sizeof rel, WS_DIR "/%s", feature))
        return zerg_err_set(err, -ENAMETOOLONG, "feature name too long");
    int rc = zerg_fsio_mkdirs_own(g->top, rel, 0755, err);
    if (!rc && !lstat(path, &st) && S_ISLNK(st.st_mode) && unlink(path) < 0)
        rc = zerg_err_set(err, -errno, "cannot remove the link %s: %s", path,
                          strerror(errno));
    return rc;
}

/* A directory at path that is no worktree of g: moved aside (saved), or
 * removed when empty. */
static int clear_path(const char *path, const char *logs_dir,
                      struct zerg_err *err)
{
    char saved[PATH_MAX];
    struct stat st;
    if (lstat(path, &st) < 0 || !rmdir(path))
        return 0;
    if (!logs_dir)
        return zerg_err_set(err, -EEXIST,
                            "%s exists but is not a worktree: move it away "
                            "and run again",
                            path);
    const char *base = strrchr(path, '/');
    return ws_move_aside(path, logs_dir, base ? base + 1 : "worktree", ".tree",
                         saved, sizeof saved, err);
}

int ws_ensure_worktree(const struct zerg_git *g, const char *feature,
                       const char *path, const char *branch, const char *rev,
                       const char *logs_dir, struct zerg_err *err)
{
    struct stat st;
    int gone = 0;
    int rc = make_parent(g, feature, path, err);
    int known = rc ? rc : registration(g, path, &gone, err);
    if (known < 0)
        return known;
    int present = !lstat(path, &st);
    if (known && !gone && present)
        return 0;
    if (known) {
        const char *prune[] = {"worktree", "prune", NULL};
        struct zerg_git_call call = {.retries = WS_RETRIES};
        rc = zerg_git_run(g, &call, prune, NULL, err);
        if (rc < 0)
            return rc;
    }
    if (present && (rc = clear_path(path, logs_dir, err)))
        return rc;
    return add_worktree(g, path, branch, rev, err);
}
