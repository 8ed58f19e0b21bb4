/* kept.c - removing a feature's logs without losing a saved copy (DESIGN
 * §18: nothing is deleted without a copy that survives, and what zerg
 * saved survives `zerg cleanup --all` and a fresh rush too).
 *
 * Saved copies are the leftovers of dead attempts, tasks/ID/attempt-N.patch
 * and worktrees/NAME-TS.patch (regular files named *.patch anywhere), and
 * what a slot's healing moved aside whole under worktrees/: a task's
 * replaced .git (NAME-TS.git) and a worktree git could no longer read
 * (NAME-TS.tree).  Everything else goes; a directory goes only when
 * nothing is left in it.
 *
 * A fresh rush sets the last run's task logs aside as tasks.previous and
 * prunes the run before it to its saved copies, kept as tasks.kept-{time}
 * when there are any. */
#include "cli.h"

#include "zerg/clock.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* nftw has no context pointer: one walk at a time. */
static struct zerg_kept *walking;
static int walk_failed;

static int is_patch(const char *path, const struct stat *st)
{
    size_t n = strlen(path);
    return S_ISREG(st->st_mode) && n > 6 && !strcmp(path + n - 6, ".patch");
}

/* 1 for a path inside (or at) worktrees/NAME.git or worktrees/NAME.tree. */
static int in_moved_copy(const char *path)
{
    const char *w = strstr(path, "/worktrees/");
    if (!w)
        return 0;
    const char *name = w + 11, *end = strchr(name, '/');
    size_t n = end ? (size_t)(end - name) : strlen(name);
    return (n > 4 && !strncmp(name + n - 4, ".git", 4)) ||
           (n > 5 && !strncmp(name + n - 5, ".tree", 5));
}

static int count(const char *path, const struct stat *st)
{
    if (is_patch(path, st))
        walking->patches++;
    else if (in_moved_copy(path) &&
             !strchr(strstr(path, "/worktrees/") + 11, '/'))
        walking->copies++; /* the copy itself, not each file in it */
    else
        return 0;
    return 1;
}

static int prune_one(const char *path, const struct stat *st, int type,
                     struct FTW *ftw)
{
    (void)ftw;
    if (type == FTW_NS || type == FTW_DNR) {
        walk_failed = EACCES; /* unseen: it may hold a copy, so it stays */
        return 0;
    }
    if (count(path, st) || in_moved_copy(path) || walking->dry_run)
        return 0;
    if (type == FTW_DP) {
        if (rmdir(path) < 0 && errno != ENOTEMPTY && errno != EEXIST)
            walk_failed = errno;
        return 0;
    }
    if (unlink(path) < 0 && errno != ENOENT)
        walk_failed = errno;
    return 0;
}

int zerg_cli_prune_logs(const char *dir, struct zerg_kept *k)
{
    k->patches = k->copies = 0;
    walking = k, walk_failed = 0;
    int rc = nftw(dir, prune_one, 16, FTW_DEPTH | FTW_PHYS);
    walking = NULL;
    if (rc < 0 && errno == ENOENT)
        return 0;
    if (rc < 0)
        return -errno;
    return walk_failed ? -walk_failed : 0;
}

/* tasks.previous still holds saved patches: renamed tasks.kept-{time}. */
static void keep_aside(const struct zerg_cli *cli, const char *feature,
                       const char *prev)
{
    char to[PATH_MAX], ts[ZERG_TS_MAX];
    zerg_clock_iso8601(zerg_clock_wall(&zerg_clock_system), ts);
    for (char *p = ts; *p; p++)
        *p = *p == ':' ? '-' : *p;
    if (zerg_cli_path(cli, to, sizeof to, ".zerg/logs/%s/tasks.kept-%s",
                      feature, ts) == 0 &&
        rename(prev, to) < 0)
        fprintf(stderr,
                "zerg rush: warning: cannot keep the saved patches "
                "of an earlier run (%s): they stay in %s\n",
                strerror(errno), prev);
}

void zerg_cli_set_logs_aside(const struct zerg_cli *cli, const char *feature)
{
    char tasks[PATH_MAX], prev[PATH_MAX];
    if (zerg_cli_path(cli, tasks, sizeof tasks, ".zerg/logs/%s/tasks",
                      feature) ||
        zerg_cli_path(cli, prev, sizeof prev, ".zerg/logs/%s/tasks.previous",
                      feature))
        return;
    /* The run before last's logs go, but not the patches of its dead
     * attempts (DESIGN §18): those are kept beside, under a name of their
     * own, when any is left. */
    struct zerg_kept k = {0};
    if (zerg_cli_prune_logs(prev, &k) == 0 && (k.patches || k.copies))
        keep_aside(cli, feature, prev);
    if (rename(tasks, prev) < 0 && errno != ENOENT)
        fprintf(stderr,
                "zerg rush: warning: cannot set the old task logs "
                "aside (%s): new attempts append to them\n",
                strerror(errno));
}
