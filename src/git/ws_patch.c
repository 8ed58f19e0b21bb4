/* ws_patch.c - the uncommitted work of a worktree as one binary patch
 * (tracked and untracked files, not ignored ones), made through a
 * temporary index in the worktree's own git dir: `git add -A` there,
 * `write-tree`, `diff-tree -p --binary HEAD TREE`.  The real index and
 * the files are not touched, so saving is safe before anything else. */
#include "git/git_internal.h"
#include "git/ws_internal.h"
#include "zerg/err.h"
#include "zerg/fsio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Largest index copied to seed the temporary one (its stat data spares
 * `git add -A` from hashing every file again). */
#define INDEX_MAX ((size_t)256 << 20)

int ws_git_dir(const struct zerg_git *g, const char *dir, char *buf, size_t n,
               struct zerg_err *err)
{
    const char *args[] = {"rev-parse", "--absolute-git-dir", NULL};
    return git_line(g, dir, args, buf, n, err);
}

/* Copies gitdir/index to tmp (created new, never through a link); a
 * missing index leaves tmp absent, which git reads as empty. */
static int seed_index(const char *gitdir, const char *tmp, struct zerg_err *err)
{
    char src[PATH_MAX + 8], *data = NULL;
    size_t len = 0;
    snprintf(src, sizeof src, "%s/index", gitdir);
    struct zerg_err ignored = {0};
    if (zerg_fsio_read_file(src, INDEX_MAX, ZERG_FSIO_NOFOLLOW, &data, &len,
                            &ignored))
        return 0;
    int fd =
        open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    int rc = fd < 0 ? -errno : 0;
    for (size_t off = 0; !rc && off < len;) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno != EINTR)
            rc = -errno;
        off += w > 0 ? (size_t)w : 0;
    }
    if (fd >= 0)
        close(fd);
    free(data);
    if (rc)
        return zerg_err_set(err, rc, "cannot write %s: %s", tmp, strerror(-rc));
    return 0;
}

/* add -A and write-tree into tmp: the tree of everything in dir. */
static int tree_of_all(const struct zerg_git *g, const char *dir,
                       const char *tmp, char tree[ZERG_GIT_OID_MAX],
                       struct zerg_err *err)
{
    const char *add[] = {"add", "-A", "--", ".", NULL};
    const char *write[] = {"write-tree", NULL};
    struct zerg_git_call call = {
        .dir = dir, .index_file = tmp, .retries = WS_RETRIES};
    char *out = NULL;
    int rc = zerg_git_run(g, &call, add, NULL, err);
    if (rc >= 0)
        rc = zerg_git_run(g, &call, write, &out, err);
    if (rc < 0)
        return rc;
    size_t len = strcspn(out, "\n");
    if (len == 0 || len >= ZERG_GIT_OID_MAX)
        rc = zerg_err_set(err, ZERG_EGIT_FAILED, "git write-tree gave no id");
    else
        memcpy(tree, out, len), tree[len] = '\0';
    free(out);
    return rc;
}

int ws_patch_make(const struct zerg_git *g, const char *dir, char **data,
                  size_t *len, struct zerg_err *err)
{
    char gitdir[PATH_MAX], tmp[PATH_MAX + 64], tree[ZERG_GIT_OID_MAX];
    *data = NULL, *len = 0;
    int rc = ws_git_dir(g, dir, gitdir, sizeof gitdir, err);
    if (rc)
        return rc;
    snprintf(tmp, sizeof tmp, "%s/zerg-patch-index.%ld", gitdir,
             (long)getpid());
    unlink(tmp);
    rc = seed_index(gitdir, tmp, err);
    if (!rc)
        rc = tree_of_all(g, dir, tmp, tree, err);
    unlink(tmp);
    if (rc)
        return rc;
    const char *diff[] = {"diff-tree",
                          "-p",
                          "--binary",
                          "--no-ext-diff",
                          "--no-textconv",
                          "--no-color",
                          "HEAD",
                          tree,
                          NULL};
    struct zerg_git_call call = {.dir = dir, .retries = WS_RETRIES};
    rc = git_run_ex(g, &call, 0, diff, data, len, err);
    return rc < 0 ? rc : 0;
}
