/* ws_own_host.c - container workers' own repositories (DESIGN §19), the
 * host's half: the slot's directory made (git is not run in it: the
 * worker inside the container makes the repository, ws_own.c), and each
 * commit taken from the bundle the worker wrote, through zerg's own git
 * call in the host repository.
 *
 * The bundle is the only thing read from the container's side: opened
 * below the project's .zerg/logs one directory at a time, none of them
 * followed as a link, a regular file only, copied into the host's git dir
 * (which no container mounts) and unbundled from there, so a task can
 * neither name another file nor change it while git reads it.  The
 * worker's branch in the host repository moves only here, to the commit
 * the bundle holds. */
#include "git/git_internal.h"
#include "git/ws_internal.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BUNDLE_MAX ((off_t)4 << 30)

/* Opens root/rel (rel split at '/') for reading: no component a link,
 * the last a regular file.  The fd, or negative with err set. */
static int open_beneath(const char *root, const char *rel, struct zerg_err *err)
{
    char buf[PATH_MAX], *save = NULL;
    if (zerg_fsio_path(buf, sizeof buf, "%s", rel))
        return zerg_err_set(err, -ENAMETOOLONG, "path too long");
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char *part = strtok_r(buf, "/", &save);
    while (fd >= 0 && part) {
        char *next = strtok_r(NULL, "/", &save);
        int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
                    (next ? O_DIRECTORY : O_NONBLOCK);
        int sub = strcmp(part, "..") ? openat(fd, part, flags, 0) : -1;
        int e = sub < 0 ? (strcmp(part, "..") ? errno : EINVAL) : 0;
        close(fd);
        fd = sub < 0 ? -1 : sub;
        errno = e;
        part = next;
    }
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
        close(fd);
        fd = -1, errno = EINVAL;
    }
    if (fd < 0)
        return zerg_err_set(err, errno == ENOENT ? ZERG_ENOTFOUND : -errno,
                            "cannot read %s/%s: %s%s", root, rel,
                            strerror(errno),
                            errno == ELOOP || errno == ENOTDIR
                                ? " (a link or a file in the way)"
                                : "");
    return fd;
}

/* Copies the open bundle to a new file of the host's git dir. */
static int copy_in(int src, const char *dst, struct zerg_err *err)
{
    int out =
        open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (out < 0)
        return zerg_err_set(err, -errno, "cannot create %s: %s", dst,
                            strerror(errno));
    char block[65536];
    off_t total = 0;
    int rc = 0;
    for (;;) {
        ssize_t r = read(src, block, sizeof block);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = r < 0 ? -errno : 0;
            break;
        }
        if ((total += r) > BUNDLE_MAX) {
            rc = -EFBIG;
            break;
        }
        for (ssize_t off = 0; off < r && !rc;) {
            ssize_t w = write(out, block + off, (size_t)(r - off));
            rc = w < 0 && errno != EINTR ? -errno : 0;
            off += w > 0 ? w : 0;
        }
        if (rc)
            break;
    }
    close(out);
    if (rc)
        zerg_err_set(err, rc, "cannot copy the bundle to %s: %s", dst,
                     rc == -EFBIG ? "larger than 4 GiB" : strerror(-rc));
    return rc;
}

/* 1 when `git bundle unbundle`'s output ("oid ref" lines) lists ref at
 * commit (ref NULL: any ref), the oid found in found. */
static int lists(const char *out, const char *ref, const char *commit,
                 char found[ZERG_GIT_OID_MAX])
{
    for (const char *l = out; l && *l; l = strchr(l, '\n'), l += !!l) {
        size_t ol = strcspn(l, " \n");
        const char *r = l + ol + (l[ol] == ' ');
        size_t rl = strcspn(r, "\n");
        if (ol >= ZERG_GIT_OID_MAX || l[ol] != ' ' ||
            (ref && (strlen(ref) != rl || strncmp(r, ref, rl))) ||
            (commit && (strlen(commit) != ol || strncmp(l, commit, ol))))
            continue;
        snprintf(found, ZERG_GIT_OID_MAX, "%.*s", (int)ol, l);
        return 1;
    }
    return 0;
}

/* Takes logs/tasks/{task}/attempt-{n}.bundle into the host repository
 * and moves the slot's worker branch to its head (commit, or with commit
 * NULL whatever the bundle holds for that branch).  0, ZERG_ENOTFOUND
 * (no bundle), or negative. */
static int take_bundle(struct ws_host *h, int slot, const char *task,
                       int attempt, const char *commit, struct zerg_err *err)
{
    char rel[PATH_MAX], tmp[PATH_MAX + 64], branch[PATH_MAX];
    char ref[PATH_MAX + 16], head[ZERG_GIT_OID_MAX], logs[PATH_MAX];
    if (zerg_fsio_path(rel, sizeof rel, "%s/tasks/%s/attempt-%d.bundle",
                       h->feature, task, attempt) ||
        zerg_fsio_path(logs, sizeof logs, "%s", h->logs) ||
        zerg_ws_worker_branch(branch, sizeof branch, h->feature, slot))
        return zerg_err_set(err, -ENAMETOOLONG, "bundle path too long");
    char *cut = strrchr(logs, '/'); /* .zerg/logs: no container writes it */
    *cut = '\0';
    snprintf(ref, sizeof ref, "refs/heads/%s", branch);
    int fd = open_beneath(logs, rel, err);
    if (fd < 0)
        return fd;
    snprintf(tmp, sizeof tmp, "%s/zerg-bundle.%ld", h->g.common_dir,
             (long)getpid());
    unlink(tmp);
    int rc = copy_in(fd, tmp, err);
    close(fd);
    const char *args[] = {"bundle", "unbundle", tmp, NULL};
    struct zerg_git_call call = {.retries = WS_RETRIES};
    char *out = NULL;
    if (!rc)
        rc = zerg_git_run(&h->g, &call, args, &out, err);
    unlink(tmp);
    if (rc >= 0 && !lists(out, ref, commit, head))
        rc = zerg_err_set(err, ZERG_EGIT_FAILED,
                          "the bundle %s/%s does not hold %s at %s", logs, rel,
                          ref, commit ? commit : "any commit");
    free(out);
    char oid[ZERG_GIT_OID_MAX];
    if (rc >= 0)
        rc = zerg_git_resolve(&h->g, NULL, head, oid, err);
    const char *set[] = {"update-ref", ref, oid, NULL};
    if (rc >= 0)
        rc = zerg_git_run(&h->g, &call, set, NULL, err);
    if (rc < 0)
        return rc;
    ws_note_ref(h, ref, oid);
    return 0;
}

int ws_op_import(struct zerg_workspace *w, int slot, const char *task,
                 int attempt, const char *commit, struct zerg_err *err)
{
    struct ws_host *h = (struct ws_host *)w;
    if (!h->own)
        return 0;
    int rc = ws_check_name("task id", task, err);
    return rc ? rc : take_bundle(h, slot, task, attempt, commit, err);
}

/* Resume: the attempt the slot's repository recorded (a plain file read
 * below the slot, no link followed) had its bundle taken in if it wrote
 * one, so that its commit is found at the worker branch's head. */
void ws_own_take_recorded(struct ws_host *h, int slot)
{
    char path[PATH_MAX], task[512], text[512];
    struct zerg_err ignored = {0};
    if (!h->own || ws_tree_path(&h->g, h->feature, "", path, sizeof path))
        return;
    char rel[64];
    snprintf(rel, sizeof rel, "worker-%d/.git/" WS_ATTEMPT_FILE, slot);
    int fd = open_beneath(path, rel, &ignored);
    if (fd < 0)
        return;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    text[n > 0 ? n : 0] = '\0';
    char *nl = strchr(text, '\n');
    if (!nl || (size_t)(nl - text) >= sizeof task)
        return;
    *nl = '\0';
    snprintf(task, sizeof task, "%s", text);
    int attempt = atoi(nl + 1);
    if (ws_name_valid(task) && attempt > 0)
        take_bundle(h, slot, task, attempt, NULL, &ignored);
}

/* The slot's directory, a real one: a worktree of the host repository
 * left there by a run without containers is moved under the logs whole
 * (nothing it holds is lost) and forgotten.  1 when made. */
int ws_own_slot(struct ws_host *h, int slot, const char *path,
                struct zerg_err *err)
{
    char rel[PATH_MAX], saved[PATH_MAX];
    struct ws_wt *wts = NULL;
    size_t n = 0;
    int rc = ws_list_worktrees(&h->g, &wts, &n, err), known = 0;
    for (size_t i = 0; !rc && i < n; i++)
        known |= !strcmp(wts[i].path, path);
    free(wts);
    if (!rc && known) {
        rc = ws_move_aside(path, h->logs, strrchr(path, '/') + 1, ".tree",
                           saved, sizeof saved, err);
        const char *prune[] = {"worktree", "prune", NULL};
        struct zerg_git_call call = {.retries = WS_RETRIES};
        if (!rc)
            rc = zerg_git_run(&h->g, &call, prune, NULL, err);
        if (rc >= 0)
            zerg_log_event(h->log, slot, ZERG_LOG_WARN, "worktree_repaired",
                           NULL, NULL,
                           "Worktree %s was a worktree of the repository, "
                           "which container workers do not share: moved to "
                           "%s",
                           path, saved);
    }
    if (rc < 0)
        return rc;
    if (zerg_fsio_path(rel, sizeof rel, WS_DIR "/%s/worker-%d", h->feature,
                       slot))
        return zerg_err_set(err, -ENAMETOOLONG, "worktree path too long");
    struct stat st;
    int made = lstat(path, &st) < 0;
    rc = zerg_fsio_mkdirs_own(h->g.top, rel, 0755, err);
    return rc ? rc : made;
}
