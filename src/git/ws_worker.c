/* ws_worker.c - the worker's half of the workspace, run in its worktree
 * around each attempt: before, the slot checked and healed (ws_heal.c:
 * never through a link, only the slot's own worktree on its own branch,
 * a broken .git and a stale index.lock repaired), the leftovers of a
 * dead attempt saved as a patch and discarded, the tree reset to the
 * base, the attempt recorded
 * (<worktree git dir>/zerg-attempt: "task\nattempt\n"); after, one commit
 * of everything the attempt changed (what it takes: ws_outputs.c), on top
 * of what the agent committed. */
#include "git/git_internal.h"
#include "git/ws_internal.h"
#include "zerg/clock.h"
#include "zerg/err.h"
#include "zerg/fsio.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ATTEMPT_FILE WS_ATTEMPT_FILE

/* What HEAD names, as `git symbolic-ref -q HEAD` says it ("refs/heads/
 * zerg/f/worker-0"; "" when detached or unreadable), read from the git
 * dir's HEAD file: a process fewer per check.  Never through a link, never
 * from a FIFO or anything but a small regular file (a task can write the
 * file; it cannot make zerg block or read elsewhere). */
static void head_ref(const char *gitdir, char *out, size_t n)
{
    char path[PATH_MAX + 8], *text = NULL;
    size_t len = 0;
    out[0] = '\0';
    if (zerg_fsio_path(path, sizeof path, "%s/HEAD", gitdir) ||
        zerg_fsio_read_file(path, 4096, ZERG_FSIO_NOFOLLOW, &text, &len, NULL) <
            0)
        return;
    ws_head_text_ref(text, len, out, n);
    free(text);
}

/* The worktree at top is a linked worktree of the worker's own
 * repository (or, in a container, that repository itself, made for the
 * slot) whose HEAD is branch (refs/heads/...), or with branch NULL some
 * zerg/ branch: never the main worktree, never the user's branch. */
static int check_identity(const struct zerg_git *g, const char *top,
                          const char *branch, struct zerg_err *err)
{
    const char *rp[] = {"rev-parse", "--path-format=absolute", "--git-dir",
                        "--git-common-dir", NULL};
    struct zerg_git_call call = {.dir = top, .ok_status = 1, .retries = 3};
    char *dirs = NULL, head[PATH_MAX], common[PATH_MAX], mine[PATH_MAX];
    int rc = git_run_ex(g, &call, GIT_RUN_NO_WORKTREE | GIT_RUN_LAYOUT, rp,
                        &dirs, NULL, err);
    if (rc < 0) {
        free(dirs);
        return rc;
    }
    char *nl = strchr(dirs, '\n');
    if (nl)
        *nl++ = '\0', nl[strcspn(nl, "\n")] = '\0';
    head_ref(dirs, head, sizeof head);
    const char *want = branch ? branch : "zerg/";
    int same_repo = nl && realpath(nl, common) &&
                    realpath(g->common_dir, mine) && !strcmp(common, mine);
    /* A container worker's own repository (ws_own.c) is not linked: its
     * git dir is its common dir, the one zerg opened, at the top. */
    char own[PATH_MAX + 8], real_top[PATH_MAX];
    int is_own = nl && !strcmp(dirs, nl) && same_repo &&
                 realpath(top, real_top) &&
                 !zerg_fsio_path(own, sizeof own, "%s/.git", real_top) &&
                 !strcmp(own, mine);
    int linked = nl && (strcmp(dirs, nl) || is_own);
    int on_branch = !strncmp(head, "refs/heads/", 11) &&
                    (branch ? !strcmp(head + 11, want)
                            : !strncmp(head + 11, want, strlen(want)));
    if (!same_repo || !linked || !on_branch)
        rc = zerg_err_set(err, ZERG_EGIT_FAILED,
                          "%s is not the registered worktree of its slot "
                          "(git dir %s, HEAD %s; expected a worktree of %s "
                          "on %s%s): refusing to reset or commit there",
                          top, dirs, head[0] ? head : "detached", g->common_dir,
                          want, branch ? "" : "...");
    free(dirs);
    return rc < 0 ? rc : 0;
}

/* The top of the worktree holding dir.  A planted core.worktree is not
 * followed in a linked worktree, and whatever git answers must hold dir:
 * zerg's add -A and reset are only ever run at a worktree's top, and only
 * in a linked worktree of the repository on a zerg branch. */
static int worktree_top(const struct zerg_git *g, const char *dir, char *top,
                        size_t n, struct zerg_err *err)
{
    const char *args[] = {"rev-parse", "--show-toplevel", NULL};
    struct zerg_git_call call = {.dir = dir, .retries = WS_RETRIES};
    char *out = NULL, real[PATH_MAX];
    int rc = git_run_ex(g, &call, GIT_RUN_NO_WORKTREE | GIT_RUN_LAYOUT, args,
                        &out, NULL, err);
    if (rc < 0)
        return rc;
    out[strcspn(out, "\n")] = '\0';
    size_t tl = strlen(out);
    if (!realpath(dir, real) || strncmp(real, out, tl) ||
        (real[tl] && real[tl] != '/') || tl >= n)
        rc = zerg_err_set(err, ZERG_EGIT_FAILED,
                          "git puts the work tree of %s at %s: a "
                          "core.worktree setting points elsewhere; remove it",
                          dir, out);
    else
        memcpy(top, out, tl + 1);
    free(out);
    return rc ? rc : check_identity(g, top, NULL, err);
}

int zerg_ws_save_patch(const struct zerg_git *g, const char *dir,
                       const char *path, struct zerg_err *err)
{
    char top[PATH_MAX], parent[PATH_MAX], *data = NULL;
    size_t len = 0;
    int rc = worktree_top(g, dir, top, sizeof top, err);
    if (!rc)
        rc = ws_patch_make(g, top, NULL, &data, &len, err);
    if (rc || len == 0) {
        free(data);
        return rc;
    }
    snprintf(parent, sizeof parent, "%s", path);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = '\0';
        rc = zerg_fsio_mkdirs(parent, 0755);
        if (rc)
            zerg_err_set(err, rc, "cannot create %s: %s", parent,
                         strerror(-rc));
    }
    if (!rc)
        rc = zerg_fsio_write_atomic(path, data, len, ZERG_FSIO_DURABLE, err);
    free(data);
    return rc ? rc : 1;
}

/* Saves the leftovers under logs_dir: fills out->patch with the file, ""
 * when the worktree was clean, and out->skipped with what was too large
 * to save. */
/* logs_dir/rel/name, or name with -2, -3 ... before .patch when a patch
 * is there already (a prepare that died after saving, then ran again):
 * a saved patch is never overwritten. */
static int free_name(const char *logs_dir, const char *rel, const char *name,
                     char *path, size_t n, struct zerg_err *err)
{
    size_t stem = strlen(name) - (strlen(name) > 6 ? 6 : 0);
    for (int k = 1; k < 1000; k++) {
        int w = k == 1 ? snprintf(path, n, "%s/%s/%s", logs_dir, rel, name)
                       : snprintf(path, n, "%s/%s/%.*s-%d.patch", logs_dir, rel,
                                  (int)stem, name, k);
        if (w < 0 || (size_t)w >= n)
            return zerg_err_set(err, -ENAMETOOLONG, "patch path too long");
        if (access(path, F_OK))
            return 0;
    }
    return zerg_err_set(err, -EEXIST, "999 patches of one attempt in %s/%s",
                        logs_dir, rel);
}

static int save_leftovers(const struct zerg_git *g, const char *top,
                          const char *gitdir, const char *logs_dir,
                          struct zerg_ws_prepared *out, int *clean,
                          struct zerg_err *err)
{
    char rel[PATH_MAX], name[128], path[2 * PATH_MAX], *data = NULL;
    size_t len = 0;
    struct ws_skip skip = {0};
    int rc = ws_patch_make(g, top, &skip, &data, &len, err);
    *clean = !rc && skip.clean;
    if (rc || len == 0) {
        free(data);
        return rc;
    }
    if (ws_leftover_place(gitdir, top, rel, sizeof rel, name, sizeof name))
        rc = zerg_err_set(err, -ENAMETOOLONG, "patch path too long");
    if (!rc)
        rc = zerg_fsio_mkdirs_own(logs_dir, rel, 0755, err);
    if (!rc)
        rc = free_name(logs_dir, rel, name, path, sizeof path, err);
    if (!rc)
        rc = zerg_fsio_write_atomic(path, data, len, ZERG_FSIO_DURABLE, err);
    if (!rc && zerg_fsio_path(out->patch, sizeof out->patch, "%s", path))
        rc = zerg_err_set(err, -ENAMETOOLONG, "patch path too long");
    if (!rc) {
        out->nskipped = skip.n;
        snprintf(out->skipped, sizeof out->skipped, "%s", skip.text);
        snprintf(out->first, sizeof out->first, "%s", skip.first);
        out->first_size = skip.first_size;
    }
    free(data);
    return rc;
}

/* The tree at base.  clean: the tree was found clean just before (no
 * untracked file), so the reset leaves nothing for `git clean`. */
static int reset_to(const struct zerg_git *g, const char *top, const char *base,
                    int clean, struct zerg_err *err)
{
    const char *reset[] = {"reset", "-q", "--hard", base, NULL};
    /* Not -x: ignored files (build caches) and zerg's run files stay.
     * What is mounted into the worktree (a container's read-only .gsd and
     * .zerg) is not the attempt's to remove. */
    const char *sweep[] = {"clean", "-ffdq", NULL};
    struct zerg_git_call call = {.dir = top, .retries = WS_RETRIES};
    struct ws_args a = {0};
    int rc = zerg_git_run(g, &call, reset, NULL, err);
    if (rc >= 0 && !clean && ws_worktree_args(top, sweep, &a))
        rc = zerg_err_set(err, -ENOMEM, "out of memory");
    if (rc >= 0 && !clean)
        rc = zerg_git_run(g, &call, a.v, NULL, err);
    ws_args_free(&a);
    return rc < 0 ? rc : 0;
}

static int write_record(const char *gitdir, const char *task, int attempt,
                        struct zerg_err *err)
{
    char path[PATH_MAX + 32], text[512];
    snprintf(path, sizeof path, "%s/" ATTEMPT_FILE, gitdir);
    int len = snprintf(text, sizeof text, "%s\n%d\n", task, attempt);
    return zerg_fsio_write_atomic(path, text, (size_t)len, ZERG_FSIO_NOSYNC,
                                  err);
}

/* The end of every prepare: the leftovers saved (when save), the tree
 * reset to base, the attempt recorded. */
static int clean_slot(const struct zerg_git *g, const char *top,
                      const char *gitdir, const char *base,
                      const char *logs_dir, const char *task, int attempt,
                      int save, struct zerg_ws_prepared *out,
                      struct zerg_err *err)
{
    int clean = 0;
    int rc =
        save ? save_leftovers(g, top, gitdir, logs_dir, out, &clean, err) : 0;
    if (!rc)
        rc = reset_to(g, top, base, clean, err);
    if (!rc)
        rc = write_record(gitdir, task, attempt, err);
    if (!rc)
        ws_stamp_index(gitdir, &out->index);
    return rc;
}

/* The path, the .git and the lock of a slot, before anything runs in
 * it: a link is refused, a broken .git and a stale lock are healed. */
static int heal_slot(const struct zerg_git *g, const char *worktree,
                     const char *branch, const char *logs_dir,
                     struct zerg_ws_prepared *out, struct zerg_err *err)
{
    struct ws_heal heal = {0};
    int rc = ws_path_check(worktree, err);
    if (!rc && branch)
        rc = ws_heal_dotgit(g, worktree, branch, logs_dir, &heal, err);
    if (rc == 1) {
        snprintf(out->repaired, sizeof out->repaired, "%s", heal.why);
        snprintf(out->saved, sizeof out->saved, "%s", heal.saved);
        rc = 0;
    }
    return rc;
}

int zerg_ws_slot_prepare(const struct zerg_git *g, const char *worktree,
                         const char *branch, const char *base,
                         const char *logs_dir, const char *task, int attempt,
                         struct zerg_ws_prepared *out, struct zerg_err *err)
{
    char top[PATH_MAX], gitdir[PATH_MAX];
    struct ws_heal lock = {0};
    memset(out, 0, sizeof *out);
    int rc = ws_check_name("task id", task, err);
    if (!rc)
        rc = heal_slot(g, worktree, branch, logs_dir, out, err);
    if (!rc)
        rc = worktree_top(g, worktree, top, sizeof top, err);
    if (!rc && branch)
        rc = check_identity(g, top, branch, err);
    if (!rc)
        rc = ws_git_dir(g, top, gitdir, sizeof gitdir, err);
    if (!rc && ws_heal_lock(gitdir, g->common_dir, branch, top, &lock) == 1)
        snprintf(out->lock, sizeof out->lock, "%s", lock.why);
    return rc ? rc
              : clean_slot(g, top, gitdir, base, logs_dir, task, attempt, 1,
                           out, err);
}

/* A container worker's slot (ws_own.c): the repository checked and
 * mended first; a branch not born yet (a repository just made) has no
 * leftovers to save unless the worktree holds files, which are then
 * saved against the base. */
int zerg_ws_own_prepare(const struct zerg_git *g, const char *worktree,
                        const char *objects, const char *branch,
                        const char *base, const char *logs_dir,
                        const char *task, int attempt,
                        struct zerg_ws_prepared *out, struct zerg_err *err)
{
    char top[PATH_MAX], gitdir[PATH_MAX], ref[PATH_MAX + 16];
    char head[ZERG_GIT_OID_MAX];
    struct ws_heal lock = {0};
    struct zerg_err unborn = {0};
    memset(out, 0, sizeof *out);
    int rc = ws_check_name("task id", task, err);
    if (!rc)
        rc = zerg_ws_own_ensure(worktree, objects, branch, out, err);
    if (rc < 0)
        return rc;
    rc = worktree_top(g, worktree, top, sizeof top, err);
    if (!rc)
        rc = ws_git_dir(g, top, gitdir, sizeof gitdir, err);
    if (!rc && ws_heal_lock(gitdir, g->common_dir, branch, top, &lock) == 1)
        snprintf(out->lock, sizeof out->lock, "%s", lock.why);
    snprintf(ref, sizeof ref, "refs/heads/%s", branch);
    int born = !rc && !zerg_git_resolve(g, top, ref, head, &unborn);
    int files = !rc && !born ? ws_own_has_files(g, top, err) : 0;
    if (files < 0)
        return files;
    if (files) {
        const char *set[] = {"update-ref", ref, base, NULL};
        struct zerg_git_call call = {.dir = top, .retries = WS_RETRIES};
        rc = zerg_git_run(g, &call, set, NULL, err);
        born = rc >= 0;
        rc = rc < 0 ? rc : 0;
    }
    return rc ? rc
              : clean_slot(g, top, gitdir, base, logs_dir, task, attempt, born,
                           out, err);
}

int zerg_ws_attempt_prepare(const struct zerg_git *g, const char *worktree,
                            const char *base, const char *logs_dir,
                            const char *task, int attempt, char *patch,
                            size_t patch_n, struct zerg_err *err)
{
    struct zerg_ws_prepared *out = calloc(1, sizeof *out);
    if (!out)
        return zerg_err_set(err, -ENOMEM, "out of memory");
    int rc = zerg_ws_slot_prepare(g, worktree, NULL, base, logs_dir, task,
                                  attempt, out, err);
    if (patch && patch_n)
        snprintf(patch, patch_n, "%s", out->patch);
    free(out);
    return rc;
}

/* HEAD and its tree in one call: 0, or negative. */
static int head_and_tree(const struct zerg_git *g, const char *top,
                         char head[ZERG_GIT_OID_MAX],
                         char tree[ZERG_GIT_OID_MAX], struct zerg_err *err)
{
    const char *args[] = {"rev-parse", "HEAD^{commit}", "HEAD^{tree}", NULL};
    struct zerg_git_call call = {.dir = top, .retries = WS_RETRIES};
    char *out = NULL;
    int rc = zerg_git_run(g, &call, args, &out, err);
    if (rc < 0)
        return rc;
    size_t a = strcspn(out, "\n"), b = out[a] ? strcspn(out + a + 1, "\n") : 0;
    if (a == 0 || a >= ZERG_GIT_OID_MAX || b == 0 || b >= ZERG_GIT_OID_MAX)
        rc = zerg_err_set(err, ZERG_EGIT_FAILED, "git rev-parse HEAD gave %s",
                          out);
    else
        snprintf(head, ZERG_GIT_OID_MAX, "%.*s", (int)a, out),
            snprintf(tree, ZERG_GIT_OID_MAX, "%.*s", (int)b, out + a + 1);
    free(out);
    return rc;
}

/* Commits tree (the index's, written when tree is "") on head and moves
 * HEAD there (compare-and-swap); the new commit in head. */
static int commit_index(const struct zerg_git *g, const char *top,
                        char head[ZERG_GIT_OID_MAX],
                        char tree[ZERG_GIT_OID_MAX], const char *message,
                        struct zerg_err *err)
{
    char next[ZERG_GIT_OID_MAX];
    const char *wt[] = {"write-tree", NULL};
    const char *ct[] = {"commit-tree", tree, "-p", head, "-F", "-", NULL};
    const char *ur[] = {"update-ref", "HEAD", next, head, NULL};
    struct zerg_git_call call = {.dir = top, .retries = WS_RETRIES};
    int rc = tree[0] ? 0 : git_line(g, top, wt, tree, ZERG_GIT_OID_MAX, err);
    if (rc)
        return rc;
    call.input = message, call.input_len = strlen(message);
    char *out = NULL;
    rc = zerg_git_run(g, &call, ct, &out, err);
    if (rc < 0)
        return rc;
    snprintf(next, sizeof next, "%.*s", (int)strcspn(out, "\n"), out);
    free(out);
    call.input = NULL, call.input_len = 0;
    rc = zerg_git_run(g, &call, ur, NULL, err);
    if (rc < 0)
        return rc;
    memcpy(head, next, sizeof next);
    return 0;
}

/* A full object id as the orchestrator names bases: 40 or 64 hex digits
 * (then no git need say what commit it is). */
static int full_oid(const char *s)
{
    size_t n = strspn(s, "0123456789abcdef");
    return (n == 40 || n == 64) && !s[n];
}

/* After the staging: 1 when the index's tree (written into tree) is not
 * HEAD's, 0 when it is; head gets HEAD.  at_base: HEAD is still base,
 * whose tree base_tree is when the orchestrator said it (then no git
 * need say either). */
static int staged_changes(const struct zerg_git *g, const char *top,
                          const char *base, const char *base_tree, int at_base,
                          char head[ZERG_GIT_OID_MAX],
                          char tree[ZERG_GIT_OID_MAX], struct zerg_err *err)
{
    char head_tree[ZERG_GIT_OID_MAX];
    const char *wt[] = {"write-tree", NULL};
    int rc = 0;
    if (at_base && base_tree && full_oid(base_tree))
        snprintf(head, ZERG_GIT_OID_MAX, "%s", base),
            snprintf(head_tree, sizeof head_tree, "%s", base_tree);
    else
        rc = head_and_tree(g, top, head, head_tree, err);
    if (!rc)
        rc = git_line(g, top, wt, tree, ZERG_GIT_OID_MAX, err);
    return rc ? rc : strcmp(tree, head_tree) != 0;
}

/* 1 when HEAD is still base, read from the git dir's files (no process);
 * 0 when it is not or they do not say (then git is asked). */
static int still_at_base(const struct zerg_git *g, const char *top,
                         const char *base)
{
    char gitdir[PATH_MAX], head[ZERG_GIT_OID_MAX];
    struct zerg_err ignored = {0};
    return !ws_git_dir(g, top, gitdir, sizeof gitdir, &ignored) &&
           !ws_head_commit(gitdir, g->common_dir, head) && !strcmp(head, base);
}

int zerg_ws_attempt_commit(const struct zerg_git *g, const char *worktree,
                           const char *base, const char *message,
                           const struct zerg_ws_outputs *outs,
                           char oid[ZERG_GIT_OID_MAX], struct zerg_err *err)
{
    char top[PATH_MAX], head[ZERG_GIT_OID_MAX], base_oid[ZERG_GIT_OID_MAX];
    oid[0] = '\0';
    int rc = worktree_top(g, worktree, top, sizeof top, err);
    if (!rc && full_oid(base))
        snprintf(base_oid, sizeof base_oid, "%s", base);
    else if (!rc)
        rc = zerg_git_resolve(g, top, base, base_oid, err);
    /* What the commit takes (src/git/ws_outputs.c); an attempt that
     * left the tree as it found it has nothing to stage. */
    int untouched = rc ? 0 : ws_outputs_untouched(g, top, outs, err);
    if (untouched < 0)
        rc = untouched;
    if (!rc && !untouched)
        rc = ws_outputs_stage(g, top, outs, err);
    char tree[ZERG_GIT_OID_MAX] = "";
    int at_base = !rc && still_at_base(g, top, base_oid);
    if (!rc && untouched && at_base)
        snprintf(head, sizeof head, "%s", base_oid);
    else if (!rc && untouched)
        rc = zerg_git_resolve(g, top, "HEAD", head, err);
    else if (!rc)
        rc = staged_changes(g, top, base_oid, outs ? outs->base_tree : NULL,
                            at_base, head, tree, err);
    /* Commits the agent made are kept; a zerg commit on top carries the
     * trailers even when they left nothing uncommitted (resume reads the
     * worker branch's head).  HEAD is then the commit made. */
    if (rc == 1 || (rc == 0 && strcmp(head, base_oid)))
        rc = commit_index(g, top, head, tree, message, err);
    if (rc)
        return rc < 0 ? rc : ZERG_EGIT_FAILED;
    if (strcmp(head, base_oid))
        snprintf(oid, ZERG_GIT_OID_MAX, "%s", head);
    return 0;
}
