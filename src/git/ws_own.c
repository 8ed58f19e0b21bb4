/* ws_own.c - the repository of a container worker's own (DESIGN §19),
 * the worker's half, run inside the container.
 *
 * A container worker does not share the host repository: its worktree
 * (/workspace, the host's .zerg-worktrees/{feature}/worker-{n}) holds a
 * .git directory of its own whose objects/info/alternates names the
 * host's objects directory, mounted read-only at the same path.  So the
 * agent's git status, diff and log work, the worker commits there, and
 * nothing a task writes (config, hooks, refs, the objects it adds) reaches
 * the host repository.  The host takes each commit from a bundle the
 * worker writes beside the attempt's log (tasks/{id}/attempt-{n}.bundle),
 * through its own git call (ws_own_host.c); it never runs git in this
 * repository during a run.
 *
 * The repository is made by hand (no templates, so no sample hooks), and
 * checked before every attempt: a .git a task replaced (a file, a link,
 * another repository's commondir) is made again, the broken one kept
 * inside the new one as .git/replaced-{timestamp}, a rewritten alternates is
 * put back, HEAD is pointed at the slot's branch again.  The files of the
 * worktree are never touched here: the prepare saves them as a patch first. */
#include "git/git_internal.h"
#include "git/ws_internal.h"
#include "zerg/clock.h"
#include "zerg/err.h"
#include "zerg/fsio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char CONFIG[] = "[core]\n"
                             "\trepositoryformatversion = 0\n"
                             "\tfilemode = true\n"
                             "\tbare = false\n"
                             "\tlogallrefupdates = true\n";

static int put(const char *gitdir, const char *name, const char *text,
               struct zerg_err *err)
{
    char path[PATH_MAX + 64];
    if (zerg_fsio_path(path, sizeof path, "%s/%s", gitdir, name))
        return zerg_err_set(err, -ENAMETOOLONG, "path too long");
    return zerg_fsio_write_atomic(path, text, strlen(text), ZERG_FSIO_NOSYNC,
                                  err);
}

/* gitdir/name holds want (its newline aside). */
static int holds(const char *gitdir, const char *name, const char *want)
{
    char path[PATH_MAX + 64], line[PATH_MAX + 40];
    snprintf(path, sizeof path, "%s/%s", gitdir, name);
    snprintf(line, sizeof line, "%.*s", (int)strcspn(want, "\n"), want);
    return ws_file_says(path, line);
}

static int make_repo(const char *gitdir, const char *head, const char *alt,
                     struct zerg_err *err)
{
    static const char *const dirs[] = {
        "",     "objects",    "objects/info", "objects/pack",
        "refs", "refs/heads", "refs/tags"};
    char path[PATH_MAX + 64];
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        snprintf(path, sizeof path, "%s/%s", gitdir, dirs[i]);
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
            return zerg_err_set(err, -errno, "cannot create %s: %s", path,
                                strerror(errno));
    }
    int rc = put(gitdir, "config", CONFIG, err);
    if (!rc)
        rc = put(gitdir, "HEAD", head, err);
    if (!rc)
        rc = put(gitdir, "objects/info/alternates", alt, err);
    return rc;
}

static int is_kind(const char *path, mode_t kind)
{
    struct stat st;
    return !lstat(path, &st) && (st.st_mode & S_IFMT) == kind;
}

/* What is wrong with gitdir as the slot's own repository, NULL when
 * nothing a rewrite of HEAD and alternates cannot mend. */
static const char *own_fault(const char *gitdir)
{
    char path[PATH_MAX + 64];
    struct stat st;
    if (lstat(gitdir, &st) < 0)
        return errno == ENOENT ? "" : "its .git is unreadable";
    if (S_ISLNK(st.st_mode))
        return "its .git is a symbolic link";
    if (!S_ISDIR(st.st_mode))
        return "its .git is not a directory";
    snprintf(path, sizeof path, "%s/commondir", gitdir);
    if (!lstat(path, &st))
        return "its .git names another repository (commondir)";
    static const char *const need[][2] = {{"objects", "d"},
                                          {"objects/info", "d"},
                                          {"refs", "d"},
                                          {"config", "f"}};
    for (size_t i = 0; i < sizeof need / sizeof *need; i++) {
        snprintf(path, sizeof path, "%s/%s", gitdir, need[i][0]);
        if (!is_kind(path, need[i][1][0] == 'd' ? S_IFDIR : S_IFREG))
            return "its .git is not a repository zerg made";
    }
    return NULL;
}

int ws_own_sound(const char *top, const char *objects)
{
    char gitdir[PATH_MAX], alt[PATH_MAX + 2], path[PATH_MAX + 64];
    if (zerg_fsio_path(gitdir, sizeof gitdir, "%s/.git", top) ||
        zerg_fsio_path(alt, sizeof alt, "%s\n", objects) || own_fault(gitdir))
        return 0;
    struct stat st;
    snprintf(path, sizeof path, "%s/objects/info/http-alternates", gitdir);
    if (!lstat(path, &st) || !holds(gitdir, "objects/info/alternates", alt))
        return 0;
    snprintf(path, sizeof path, "%s/HEAD", gitdir);
    return is_kind(path, S_IFREG);
}

/* 1 when the worktree at top holds a file git would take (untracked,
 * not ignored), what is mounted into it (.zerg/, .gsd/) aside: a
 * repository made again over a task's files, not a new empty slot. */
int ws_own_has_files(const struct zerg_git *g, const char *top,
                     struct zerg_err *err)
{
    const char *fixed[] = {"ls-files", "-z", "-o", "--exclude-standard", NULL};
    struct ws_args a = {0};
    struct zerg_git_call call = {.dir = top, .retries = WS_RETRIES};
    char *out = NULL;
    int rc = ws_worktree_args(top, fixed, &a)
                 ? zerg_err_set(err, -ENOMEM, "out of memory")
                 : zerg_git_run(g, &call, a.v, &out, err);
    ws_args_free(&a);
    int any = rc >= 0 && out && out[0];
    free(out);
    return rc < 0 ? rc : any;
}

static void said(struct zerg_ws_prepared *out, const char *why)
{
    if (!out->repaired[0])
        snprintf(out->repaired, sizeof out->repaired, "%s", why);
}

/* Makes the repository again in place of the broken .git, which is kept
 * inside the new one as .git/replaced-{timestamp}: the worktree is its
 * own mount in a container, so nothing is moved across file systems and
 * nothing the task left is deleted. */
static int remake(const char *gitdir, const char *head, const char *alt,
                  struct zerg_ws_prepared *out, struct zerg_err *err)
{
    char fresh[PATH_MAX + 16], kept[PATH_MAX + 64], ts[ZERG_TS_MAX];
    struct stat st;
    snprintf(fresh, sizeof fresh, "%s.zerg-new", gitdir);
    zerg_fsio_remove_tree(fresh); /* a remake that died half-way */
    int rc = make_repo(fresh, head, alt, err);
    if (!rc && lstat(gitdir, &st) < 0 && rename(fresh, gitdir) < 0)
        rc = zerg_err_set(err, -errno, "cannot create %s: %s", gitdir,
                          strerror(errno));
    if (rc || lstat(fresh, &st) < 0)
        return rc;
    zerg_clock_iso8601(zerg_clock_wall(&zerg_clock_system), ts);
    for (char *p = ts; *p; p++)
        *p = *p == ':' ? '-' : *p;
    snprintf(kept, sizeof kept, "%s/replaced-%s", fresh, ts);
    if (rename(gitdir, kept) < 0 || rename(fresh, gitdir) < 0)
        return zerg_err_set(err, -errno,
                            "cannot put a new repository in "
                            "place of %s: %s",
                            gitdir, strerror(errno));
    snprintf(out->saved, sizeof out->saved, "%s/replaced-%s", gitdir, ts);
    return 0;
}

int zerg_ws_own_ensure(const char *worktree, const char *objects,
                       const char *branch, struct zerg_ws_prepared *out,
                       struct zerg_err *err)
{
    char gitdir[PATH_MAX], head[PATH_MAX + 32], alt[PATH_MAX + 2];
    int rc = ws_path_check(worktree, err);
    if (rc)
        return rc;
    if (zerg_fsio_path(gitdir, sizeof gitdir, "%s/.git", worktree) ||
        zerg_fsio_path(head, sizeof head, "ref: refs/heads/%s\n", branch) ||
        zerg_fsio_path(alt, sizeof alt, "%s\n", objects))
        return zerg_err_set(err, -ENAMETOOLONG, "worktree path too long");
    const char *fault = own_fault(gitdir);
    if (fault && fault[0])
        said(out, fault);
    if (fault) {
        rc = remake(gitdir, head, alt, out, err);
        return rc ? rc : 1;
    }
    int fixed = 0;
    if (!holds(gitdir, "objects/info/alternates", alt)) {
        if ((rc = put(gitdir, "objects/info/alternates", alt, err)))
            return rc;
        said(out, "its alternates no longer named the project's objects");
        fixed = 1;
    }
    if (!holds(gitdir, "HEAD", head)) {
        if ((rc = put(gitdir, "HEAD", head, err)))
            return rc;
        said(out, "its HEAD was not on the slot's branch");
        fixed = 1;
    }
    return fixed;
}

/* logs_dir/tasks/{task}/attempt-{n}.bundle; an older bundle of the same
 * attempt (a crashed run of it) is moved to attempt-{n}-{k}.bundle first,
 * so none is ever overwritten. */
static int bundle_place(const char *logs_dir, const char *task, int attempt,
                        char *path, size_t n, struct zerg_err *err)
{
    char rel[PATH_MAX], old[PATH_MAX + 64];
    if (zerg_fsio_path(rel, sizeof rel, "tasks/%s", task))
        return zerg_err_set(err, -ENAMETOOLONG, "task id too long");
    int rc = zerg_fsio_mkdirs_own(logs_dir, rel, 0755, err);
    if (rc)
        return rc;
    if (zerg_fsio_path(path, n, "%s/%s/attempt-%d.bundle", logs_dir, rel,
                       attempt))
        return zerg_err_set(err, -ENAMETOOLONG, "bundle path too long");
    for (int k = 2; !access(path, F_OK) && k < 1000; k++) {
        snprintf(old, sizeof old, "%s/%s/attempt-%d-%d.bundle", logs_dir, rel,
                 attempt, k);
        if (!access(old, F_OK))
            continue;
        if (rename(path, old) < 0)
            return zerg_err_set(err, -errno, "cannot keep %s: %s", path,
                                strerror(errno));
    }
    return 0;
}

int zerg_ws_own_bundle(const struct zerg_git *g, const char *worktree,
                       const char *branch, const char *base, const char *commit,
                       const char *logs_dir, const char *task, int attempt,
                       struct zerg_err *err)
{
    char ref[PATH_MAX + 16], tip[ZERG_GIT_OID_MAX], path[PATH_MAX + 64];
    char not_base[ZERG_GIT_OID_MAX + 1];
    snprintf(ref, sizeof ref, "refs/heads/%s", branch);
    int rc = zerg_git_resolve(g, worktree, ref, tip, err);
    if (!rc && strcmp(tip, commit))
        rc = zerg_err_set(err, ZERG_EGIT_FAILED,
                          "%s is at %.12s, not at the attempt's commit %.12s",
                          branch, tip, commit);
    if (!rc)
        rc = bundle_place(logs_dir, task, attempt, path, sizeof path, err);
    if (rc)
        return rc;
    snprintf(not_base, sizeof not_base, "^%s", base);
    const char *args[] = {"bundle", "create", "-q", path, ref, not_base, NULL};
    struct zerg_git_call call = {.dir = worktree, .retries = WS_RETRIES};
    rc = zerg_git_run(g, &call, args, NULL, err);
    return rc < 0 ? rc : 0;
}
