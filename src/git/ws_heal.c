/* ws_heal.c - a worker slot that heals (DESIGN §18): a worktree whose
 * path a task turned into a symbolic link is never used, a worktree whose
 * .git a task replaced or broke (`rm -rf .git; git init`, garbage written
 * to it) gets its .git file back (the broken one moved aside under the
 * feature's logs, never deleted), and an index.lock left by a dead
 * attempt is removed once no git process runs in the worktree.
 *
 * A slot's registration is found in the repository's common dir: the
 * admin dir (<common>/worktrees/<id>) whose HEAD names the slot's own
 * branch zerg/{feature}/worker-{n}; git lets one branch be checked out in
 * one worktree only, and zerg alone checks that branch out. */
#include "git/git_internal.h"
#include "git/ws_internal.h"
#include "zerg/clock.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/text.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int ws_path_check(const char *path, struct zerg_err *err)
{
    char real[PATH_MAX];
    if (!realpath(path, real))
        return zerg_err_set(err, -errno, "cannot resolve worktree %s: %s", path,
                            strerror(errno));
    if (strcmp(real, path))
        return zerg_err_set(err, ZERG_ESYMLINK,
                            "the worktree path %s leads through a symbolic "
                            "link to %s (a task replaced a directory by a "
                            "link?): refusing to reset or commit there",
                            path, real);
    return 0;
}

/* A small file's text with its trailing newline cut, or NULL. */
static char *read_small(const char *path)
{
    char *data = NULL;
    size_t len = 0;
    struct zerg_err ignored = {0};
    if (zerg_fsio_read_file(path, 4096, ZERG_FSIO_NOFOLLOW, &data, &len,
                            &ignored))
        return NULL;
    while (len && (data[len - 1] == '\n' || data[len - 1] == '\r'))
        data[--len] = '\0';
    return data;
}

int ws_file_says(const char *path, const char *want)
{
    char *text = read_small(path);
    int same = text && !strcmp(text, want);
    free(text);
    return same;
}

/* The admin dir of the worktree at path on branch: the one whose gitdir
 * names path/.git (on the host), else the one whose HEAD names the branch
 * (in a container, where gitdir names the host's path).  A HEAD on some
 * other branch is then refused by the identity check, not healed. */
int ws_admin_dir(const struct zerg_git *g, const char *path, const char *branch,
                 char *buf, size_t n)
{
    char dir[PATH_MAX + 16], head[PATH_MAX + 16], file[2 * PATH_MAX];
    char want[PATH_MAX + 8];
    snprintf(dir, sizeof dir, "%s/worktrees", g->common_dir);
    snprintf(head, sizeof head, "ref: refs/heads/%s", branch);
    snprintf(want, sizeof want, "%s/.git", path);
    DIR *d = opendir(dir);
    int found = 0;
    for (struct dirent *e; d && found < 2 && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(file, sizeof file, "%s/%s/gitdir", dir, e->d_name);
        int exact = ws_file_says(file, want);
        snprintf(file, sizeof file, "%s/%s/HEAD", dir, e->d_name);
        if (exact || (!found && ws_file_says(file, head))) {
            snprintf(buf, n, "%s/%s", dir, e->d_name);
            found = exact ? 2 : 1;
        }
    }
    if (d)
        closedir(d);
    return found ? 0 : ZERG_ENOTFOUND;
}

/* What is wrong with path/.git for admin (NULL when nothing). */
static const char *dotgit_fault(const char *dotgit, const char *admin)
{
    struct stat st;
    char want[PATH_MAX + 16];
    if (lstat(dotgit, &st) < 0)
        return errno == ENOENT ? "its .git is missing"
                               : "its .git is unreadable";
    if (S_ISLNK(st.st_mode))
        return "its .git is a symbolic link";
    if (S_ISDIR(st.st_mode))
        return "its .git was replaced by a directory (another repository)";
    if (!S_ISREG(st.st_mode))
        return "its .git is not a regular file";
    snprintf(want, sizeof want, "gitdir: %s", admin);
    return ws_file_says(dotgit, want)
               ? NULL
               : "its .git does not name the slot's git dir";
}

/* A rename: the same file system as the project in the usual layout, so
 * nothing is copied and nothing is lost. */
int ws_move_aside(const char *what, const char *logs_dir, const char *base,
                  const char *suffix, char *saved, size_t n,
                  struct zerg_err *err)
{
    char ts[ZERG_TS_MAX];
    zerg_clock_iso8601(zerg_clock_wall(&zerg_clock_system), ts);
    for (char *p = ts; *p; p++)
        *p = *p == ':' ? '-' : *p;
    int rc = zerg_fsio_mkdirs_own(logs_dir, "worktrees", 0755, err);
    if (!rc &&
        zerg_fsio_path(saved, n, "%s/worktrees/%s-%s.git", logs_dir, base, ts))
        rc = zerg_err_set(err, -ENAMETOOLONG, "path too long");
    if (!rc && rename(what, saved) < 0)
        rc = zerg_err_set(err, -errno, "cannot move %s aside to %s: %s", what,
                          saved, strerror(errno));
    return rc;
}

int ws_heal_dotgit(const struct zerg_git *g, const char *path,
                   const char *branch, const char *logs_dir,
                   struct ws_heal *out, struct zerg_err *err)
{
    char admin[PATH_MAX], dotgit[PATH_MAX + 8], text[PATH_MAX + 16];
    struct stat st;
    snprintf(dotgit, sizeof dotgit, "%s/.git", path);
    if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode))
        return zerg_err_set(err, ZERG_ENOTFOUND, "%s is gone", path);
    if (ws_admin_dir(g, path, branch, admin, sizeof admin))
        return zerg_err_set(err, ZERG_ENOTFOUND,
                            "no worktree of %s is on %s: the slot's "
                            "registration is gone",
                            g->common_dir, branch);
    const char *fault = dotgit_fault(dotgit, admin);
    if (!fault)
        return 0;
    const char *base = strrchr(path, '/');
    int rc = 0;
    if (!lstat(dotgit, &st))
        rc = ws_move_aside(dotgit, logs_dir, base ? base + 1 : "worktree",
                           ".git", out->saved, sizeof out->saved, err);
    int len = snprintf(text, sizeof text, "gitdir: %s\n", admin);
    if (!rc)
        rc = zerg_fsio_write_atomic(dotgit, text, (size_t)len,
                                    ZERG_FSIO_DURABLE, err);
    if (rc)
        return rc;
    snprintf(out->why, sizeof out->why, "%s", fault);
    return 1;
}

/* 1 when a live git process has its working directory in dir (it may
 * hold the index lock); /proc is Linux's, and without it nothing is
 * known to run. */
static int git_runs_in(const char *dir)
{
    DIR *d = opendir("/proc");
    size_t dl = strlen(dir);
    int found = 0;
    for (struct dirent *e; d && !found && (e = readdir(d));) {
        char link[300], cwd[PATH_MAX], comm[64];
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(link, sizeof link, "/proc/%s/cwd", e->d_name);
        ssize_t n = readlink(link, cwd, sizeof cwd - 1);
        if (n <= 0 || (size_t)n < dl)
            continue;
        cwd[n] = '\0';
        if (strncmp(cwd, dir, dl) || (cwd[dl] && cwd[dl] != '/'))
            continue;
        snprintf(link, sizeof link, "/proc/%s/comm", e->d_name);
        char *c = read_small(link);
        snprintf(comm, sizeof comm, "%s", c ? c : "");
        free(c);
        found = !strncmp(comm, "git", 3);
    }
    if (d)
        closedir(d);
    return found;
}

/* The locks a dead attempt's git can leave in its slot: the worktree's
 * own index, HEAD and ORIG_HEAD (reset, commit) and the ref of the slot's
 * branch (update-ref HEAD), which only that slot's worker ever moves.
 * Shared locks (packed-refs, the integration branch) are the
 * orchestrator's and never touched here. */
static int slot_locks(const char *gitdir, const char *common,
                      const char *branch, char locks[4][PATH_MAX + 32])
{
    static const char *const own[] = {"index", "HEAD", "ORIG_HEAD"};
    int n = 0;
    for (size_t i = 0; i < 3; i++)
        snprintf(locks[n++], PATH_MAX + 32, "%s/%s.lock", gitdir, own[i]);
    if (common && branch && !strncmp(branch, "zerg/", 5) &&
        !strstr(branch, ".."))
        snprintf(locks[n++], PATH_MAX + 32, "%s/refs/heads/%s.lock", common,
                 branch);
    return n;
}

int ws_heal_lock(const char *gitdir, const char *common, const char *branch,
                 const char *worktree, struct ws_heal *out)
{
    char locks[4][PATH_MAX + 32];
    int n = slot_locks(gitdir, common, branch, locks), removed = 0;
    size_t off = 0;
    if (git_runs_in(worktree))
        return 0;
    /* The worker is at the start of an attempt on its own slot: the
     * attempt that took a lock is over, and no other zerg process works
     * in this worktree.  A lock holds a half-written index or ref value,
     * no work. */
    for (int i = 0; i < n; i++) {
        struct stat st;
        if (lstat(locks[i], &st) < 0 || !S_ISREG(st.st_mode))
            continue;
        if (unlink(locks[i]) < 0)
            return -errno;
        const char *name = strrchr(locks[i], '/') + 1;
        zerg_text_append(out->why, sizeof out->why, &off, "%s%s",
                         removed++ ? ", "
                                   : "stale locks of a dead attempt "
                                     "removed: ",
                         i == 3 ? "the branch's ref lock" : name);
    }
    return removed > 0;
}

int ws_heal_tree_lock(const struct zerg_git *g, const char *worktree,
                      const char *branch, struct ws_heal *out)
{
    char gitdir[PATH_MAX];
    struct zerg_err ignored = {0};
    if (ws_git_dir(g, worktree, gitdir, sizeof gitdir, &ignored) != 0)
        return 0;
    return ws_heal_lock(gitdir, g->common_dir, branch, worktree, out);
}
