/* ws_patch.c - the uncommitted work of a worktree as one binary patch
 * (tracked and untracked files, not ignored ones), made through a
 * temporary index in the worktree's own git dir: `git add -A` there,
 * `write-tree`, `diff-tree -p --binary HEAD TREE`.  The real index and
 * the files are not touched, so saving is safe before anything else.
 *
 * A leftover too large to save in reasonable time is left out: a file
 * over WS_PATCH_FILE_MAX (64 MiB), or any file once WS_PATCH_TOTAL_MAX
 * (256 MiB) of files are in.  Hashing and diffing a 1 GiB file took ~85 s
 * and then overflowed the output cap, so the attempt was retried forever.
 * Each file left out is named with its size in the patch's header (lines
 * before the first "diff --git", which `git apply` skips) and reported to
 * the caller. */
#include "git/git_internal.h"
#include "git/ws_internal.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/text.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Largest index copied to seed the temporary one (its stat data spares
 * `git add -A` from hashing every file again). */
#define INDEX_MAX ((size_t)256 << 20)

int ws_git_dir(const struct zerg_git *g, const char *dir, char *buf, size_t n,
               struct zerg_err *err)
{
    const char *args[] = {"rev-parse", "--absolute-git-dir", NULL};
    return git_line_ex(g, dir, GIT_RUN_LAYOUT, args, buf, n, err);
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

/* The changed and untracked files of dir too large to save: their
 * ":(exclude,literal)" pathspecs appended to a NULL-terminated malloc'd
 * argv after `add -A -- .`, and each named in skip. */
static int big_files(const struct zerg_git *g, const char *dir,
                     struct ws_skip *skip, const char ***argv, char **names,
                     struct zerg_err *err)
{
    const char *ls[] = {"ls-files",           "-z", "-m", "-o",
                        "--exclude-standard", NULL};
    struct zerg_git_call call = {.dir = dir, .retries = WS_RETRIES};
    size_t len = 0, n = 4, total = 0;
    int rc = git_run_ex(g, &call, 0, ls, names, &len, err);
    if (rc < 0)
        return rc;
    size_t count = 0;
    for (size_t i = 0; i < len; i++)
        count += (*names)[i] == '\0';
    if (!(*argv = calloc(count + 6, sizeof **argv)))
        return zerg_err_set(err, -ENOMEM, "out of memory");
    const char *head[] = {"add", "-A", "--", "."};
    memcpy(*argv, head, sizeof head);
    for (char *p = *names; p < *names + len; p += strlen(p) + 1) {
        char full[2 * PATH_MAX];
        struct stat st;
        if (zerg_fsio_path(full, sizeof full, "%s/%s", dir, p) ||
            lstat(full, &st) || !S_ISREG(st.st_mode))
            continue;
        size_t size = (size_t)st.st_size;
        if (size <= WS_PATCH_FILE_MAX && total + size <= WS_PATCH_TOTAL_MAX) {
            total += size;
            continue;
        }
        /* The pathspec is built in place: names is ours to reuse. */
        char *spec = NULL;
        if (asprintf(&spec, ":(exclude,literal)%s", p) < 0)
            return zerg_err_set(err, -ENOMEM, "out of memory");
        (*argv)[n++] = spec;
        if (skip) {
            size_t off = strlen(skip->text);
            zerg_text_append(skip->text, sizeof skip->text, &off,
                             "%s%s (%zu bytes)", skip->n ? "; " : "", p, size);
            if (!skip->n++)
                snprintf(skip->first, sizeof skip->first, "%s", p),
                    skip->first_size = (long long)size;
        }
    }
    return 0;
}

static void free_specs(const char **argv)
{
    for (size_t i = 4; argv && argv[i]; i++)
        free((char *)argv[i]);
    free(argv);
}

/* add -A (minus the files too large) and write-tree into tmp: the tree of
 * everything in dir worth saving. */
/* git add -A of the worktree but what is mounted into it (a container's
 * read-only .gsd and .zerg are the host's, not leftovers), the big files
 * excluded: add holds "add -A -- ." and then their pathspecs. */
static int add_all(const struct zerg_git *g, const struct zerg_git_call *call,
                   const char *dir, const char **add, struct zerg_err *err)
{
    const char *fixed[] = {"add", "-A", NULL};
    struct ws_args a = {0};
    size_t nspec = 0;
    while (add[4 + nspec])
        nspec++;
    const char **v = NULL;
    int rc = ws_worktree_args(dir, fixed, &a) ? -ENOMEM : 0;
    if (!rc && !(v = calloc(a.n + nspec + 1, sizeof *v)))
        rc = -ENOMEM;
    if (rc) {
        ws_args_free(&a);
        return zerg_err_set(err, rc, "out of memory");
    }
    memcpy(v, a.v, a.n * sizeof *v);
    memcpy(v + a.n, add + 4, nspec * sizeof *v);
    rc = zerg_git_run(g, call, v, NULL, err);
    free(v);
    ws_args_free(&a);
    return rc;
}

static int tree_of_all(const struct zerg_git *g, const char *dir,
                       const char *tmp, struct ws_skip *skip,
                       char tree[ZERG_GIT_OID_MAX], struct zerg_err *err)
{
    const char **add = NULL;
    char *names = NULL;
    const char *write[] = {"write-tree", NULL};
    struct zerg_git_call call = {
        .dir = dir, .index_file = tmp, .retries = WS_RETRIES};
    char *out = NULL;
    int rc = big_files(g, dir, skip, &add, &names, err);
    if (!rc)
        rc = add_all(g, &call, dir, add, err);
    free_specs(add);
    free(names);
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

/* The header naming what was left out, before the diff. */
static int add_header(const struct ws_skip *skip, char **data, size_t *len)
{
    if (!skip || !skip->n)
        return 0;
    char *text = NULL;
    int n = asprintf(&text,
                     "# zerg: left out of this patch, too large to save "
                     "(limits: %d MiB a file, %d MiB in all):\n#   %s\n",
                     (int)(WS_PATCH_FILE_MAX >> 20),
                     (int)(WS_PATCH_TOTAL_MAX >> 20), skip->text);
    char *joined = n < 0 ? NULL : realloc(text, (size_t)n + *len + 1);
    if (!joined) {
        free(text);
        return -ENOMEM;
    }
    memcpy(joined + n, *data ? *data : "", *len);
    joined[(size_t)n + *len] = '\0';
    free(*data);
    *data = joined, *len += (size_t)n;
    return 0;
}

/* 1 when dir holds nothing a patch would: no change to a tracked file
 * (staged or not), no untracked file that is not ignored.  One process,
 * where the patch takes four (the usual case: the attempt before
 * committed or was reset).  Takes no optional lock, so a kill leaves no
 * index.lock behind. */
static int tree_clean(const struct zerg_git *g, const char *dir,
                      struct zerg_err *err)
{
    const char *args[] = {"--no-optional-locks",
                          "status",
                          "--porcelain",
                          "-z",
                          "--untracked-files=all",
                          "--ignore-submodules=none",
                          NULL};
    struct zerg_git_call call = {.dir = dir, .retries = WS_RETRIES};
    char *out = NULL;
    int rc = zerg_git_run(g, &call, args, &out, err);
    int clean = rc >= 0 && out && !*out;
    free(out);
    return rc < 0 ? rc : clean;
}

int ws_patch_make(const struct zerg_git *g, const char *dir,
                  struct ws_skip *skip, char **data, size_t *len,
                  struct zerg_err *err)
{
    char gitdir[PATH_MAX], tmp[PATH_MAX + 64], tree[ZERG_GIT_OID_MAX];
    struct ws_skip own = {0};
    skip = skip ? skip : &own; /* the header is written either way */
    *data = NULL, *len = 0;
    int rc = tree_clean(g, dir, err);
    skip->clean = rc == 1;
    if (rc)
        return rc < 0 ? rc : 0;
    rc = ws_git_dir(g, dir, gitdir, sizeof gitdir, err);
    if (rc)
        return rc;
    snprintf(tmp, sizeof tmp, "%s/zerg-patch-index.%ld", gitdir,
             (long)getpid());
    /* The name is this process's own: a .lock beside it was left by a git
     * of an earlier call of ours that was killed, and would fail every
     * later one. */
    char lock[sizeof tmp + 8];
    snprintf(lock, sizeof lock, "%s.lock", tmp);
    unlink(tmp), unlink(lock);
    rc = seed_index(gitdir, tmp, err);
    if (!rc)
        rc = tree_of_all(g, dir, tmp, skip, tree, err);
    unlink(tmp), unlink(lock);
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
    if (rc >= 0 && add_header(skip, data, len))
        rc = zerg_err_set(err, -ENOMEM, "out of memory");
    return rc < 0 ? rc : 0;
}
