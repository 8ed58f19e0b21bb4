/* git_open.c - zerg_git_open: which git (PATH), whether it is new enough
 * (merge-tree --write-tree needs 2.38), and which repository holds a
 * directory: the top of its work tree, the common git dir and the
 * project's prefix below the top (a monorepo). */
#include "git/git_internal.h"
#include "zerg/err.h"
#include "zerg/fsio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The first executable regular file named git on PATH. */
static int find_git(char *buf, size_t n)
{
    const char *path = getenv("PATH");
    char dirs[8192];
    snprintf(dirs, sizeof dirs, "%s", path && *path ? path : "/usr/bin:/bin");
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d;
         d = strtok_r(NULL, ":", &save)) {
        struct stat st;
        if (d[0] != '/' || zerg_fsio_path(buf, n, "%s/git", d))
            continue;
        if (!stat(buf, &st) && S_ISREG(st.st_mode) && !access(buf, X_OK))
            return 0;
    }
    return ZERG_EGIT_MISSING;
}

/* "git version 2.39.5" (maybe with a vendor suffix). */
static int parse_version(const char *text, int *major, int *minor)
{
    const char *v = strstr(text, "git version ");
    if (!v || sscanf(v + 12, "%d.%d", major, minor) != 2)
        return -1;
    return 0;
}

static int check_version(struct zerg_git *g, struct zerg_err *err)
{
    const char *argv[] = {g->bin, "--version", NULL};
    char **env = git_env_new(NULL);
    struct git_proc p = {.argv = argv, .envp = (const char *const *)env};
    int rc = env ? git_spawn(&p, err) : -ENOMEM;
    git_env_free(env);
    if (rc)
        return zerg_err_set(err, rc, "cannot run %s --version", g->bin);
    rc = p.status || parse_version(p.out, &g->major, &g->minor) ? -1 : 0;
    free(p.out), free(p.errtxt);
    if (rc)
        return zerg_err_set(err, ZERG_EGIT_FAILED,
                            "%s --version did not say which git it is", g->bin);
    if (g->major < ZERG_GIT_MIN_MAJOR ||
        (g->major == ZERG_GIT_MIN_MAJOR && g->minor < ZERG_GIT_MIN_MINOR))
        return zerg_err_set(err, ZERG_EGIT_OLD,
                            "git %d.%d or newer is needed (found %d.%d at "
                            "%s); install a newer git or set "
                            "rush.isolation: none",
                            ZERG_GIT_MIN_MAJOR, ZERG_GIT_MIN_MINOR, g->major,
                            g->minor, g->bin);
    return 0;
}

/* hooks_dir NULL or "" means /dev/null: no file can exist below it, so
 * no hook is ever found and there is no directory to plant one in. */
static int set_hooks_dir(struct zerg_git *g, const char *hooks_dir,
                         struct zerg_err *err)
{
    struct stat st;
    const char *d = hooks_dir && *hooks_dir ? hooks_dir : "/dev/null";
    if (zerg_fsio_path(g->hooks_dir, sizeof g->hooks_dir, "%s", d))
        return zerg_err_set(err, -ENAMETOOLONG, "hooks dir name too long");
    if (d != hooks_dir)
        return 0;
    int rc = zerg_fsio_mkdirs(d, 0700);
    if (rc)
        return zerg_err_set(err, rc, "cannot create %s: %s", d, strerror(-rc));
    if (lstat(d, &st) || !S_ISDIR(st.st_mode))
        return zerg_err_set(err, ZERG_ESYMLINK,
                            "%s must be a directory, not a link", d);
    return 0;
}

/* The prefix of dir below top ("" at the top). */
static int set_prefix(struct zerg_git *g, const char *dir, struct zerg_err *err)
{
    char real_dir[PATH_MAX], real_top[PATH_MAX];
    if (!realpath(dir, real_dir) || !realpath(g->top, real_top))
        return zerg_err_set(err, -errno, "cannot resolve %s: %s", dir,
                            strerror(errno));
    size_t tl = strlen(real_top);
    if (strncmp(real_dir, real_top, tl) ||
        (real_dir[tl] != '/' && real_dir[tl] != '\0'))
        return zerg_err_set(err, ZERG_EGIT_NOREPO,
                            "%s is not inside the work tree %s git names; "
                            "set rush.isolation: none to run in place",
                            dir, g->top);
    snprintf(g->top, sizeof g->top, "%s", real_top);
    snprintf(g->prefix, sizeof g->prefix, "%s",
             real_dir[tl] ? real_dir + tl + 1 : "");
    return 0;
}

static int find_repo(struct zerg_git *g, const char *dir, struct zerg_err *err)
{
    const char *args[] = {"rev-parse", "--path-format=absolute",
                          "--show-toplevel", "--git-common-dir", NULL};
    struct zerg_git_call call = {.dir = dir, .retries = 3};
    char *out = NULL, *nl;
    struct zerg_err sub = {0};
    int rc = git_run_ex(g, &call, GIT_RUN_NO_WORKTREE, args, &out, NULL, &sub);
    if (rc < 0 || !(nl = strchr(out, '\n'))) {
        free(out);
        return zerg_err_set(err, ZERG_EGIT_NOREPO,
                            "%s is not a git repository; set "
                            "rush.isolation: none to run in place",
                            dir);
    }
    *nl = '\0';
    nl[strcspn(nl + 1, "\n") + 1] = '\0';
    snprintf(g->top, sizeof g->top, "%s", out);
    snprintf(g->common_dir, sizeof g->common_dir, "%s", nl + 1);
    free(out);
    return set_prefix(g, dir, err);
}

int zerg_git_open(struct zerg_git *g, const char *dir, const char *hooks_dir,
                  struct zerg_err *err)
{
    memset(g, 0, sizeof *g);
    snprintf(g->identity_name, sizeof g->identity_name, "zerg");
    snprintf(g->identity_email, sizeof g->identity_email, "zerg@localhost");
    if (find_git(g->bin, sizeof g->bin))
        return zerg_err_set(err, ZERG_EGIT_MISSING,
                            "no git on PATH; install git or set "
                            "rush.isolation: none");
    int rc = check_version(g, err);
    if (!rc)
        rc = set_hooks_dir(g, hooks_dir, err);
    if (!rc)
        rc = find_repo(g, dir, err);
    return rc;
}
