/* ws_heads.c - which worktree has a branch checked out, read from the
 * HEAD files git itself reads: <common>/HEAD for the main worktree and
 * <common>/worktrees/<id>/HEAD for each linked one.  Each merge asks
 * (zerg never moves a checked-out branch, DESIGN §18); reading a few
 * small files costs microseconds where `git worktree list` was a process
 * a merge.
 *
 * The answer is the listing's: a worktree has the branch checked out
 * when its HEAD is "ref: <branch>" (a rebase or bisect in progress
 * detaches HEAD, and the listing says "detached" too).  Nothing is read
 * through a link or from anything but a small regular file, and no open
 * can block (a FIFO planted as HEAD is refused).  Whatever the files do
 * not answer plainly (a HEAD that is a link, an entry that is not a
 * directory, a worktree without its gitdir file) is asked of git.
 *
 * The same files tell a worker whether its HEAD is still the base it was
 * reset to (ws_head_commit): the branch's loose ref, which git reads
 * before any packed one, walked from the common dir one directory at a
 * time, never through a link. */
#include "git/git_internal.h"
#include "git/ws_internal.h"
#include "zerg/err.h"
#include "zerg/fsio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEAD_MAX 4096

void ws_head_text_ref(const char *text, size_t len, char *out, size_t n)
{
    out[0] = '\0';
    if (len > 4 && !strncmp(text, "ref:", 4)) {
        const char *r = text + 4 + strspn(text + 4, " \t");
        snprintf(out, n, "%.*s", (int)strcspn(r, " \t\r\n"), r);
    }
}

/* The small regular file name under dirfd, NUL-terminated in buf: its
 * length, or -1 when it is anything else (a link, a FIFO, too big). */
static ssize_t read_small(int dirfd, const char *name, char *buf, size_t n)
{
    int fd = openat(dirfd, name,
                    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    struct stat st;
    ssize_t len = -1;
    if (fd < 0)
        return -1;
    if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size < (off_t)n)
        len = read(fd, buf, n - 1);
    close(fd);
    if (len >= 0)
        buf[len] = '\0';
    return len;
}

/* What HEAD under dirfd names: 0 with ref set ("" when detached), -1 when
 * the file does not answer plainly. */
static int head_of(int dirfd, char *ref, size_t n)
{
    char text[HEAD_MAX];
    ssize_t len = read_small(dirfd, "HEAD", text, sizeof text);
    if (len < 0)
        return -1;
    ws_head_text_ref(text, (size_t)len, ref, n);
    return 0;
}

/* The worktree a linked worktree's admin dir names (its gitdir file
 * holds "<path>/.git"), or -1. */
static int linked_path(int admin, char *where, size_t n)
{
    char text[PATH_MAX + 8];
    ssize_t len = read_small(admin, "gitdir", text, sizeof text);
    if (len <= 0)
        return -1;
    text[strcspn(text, "\r\n")] = '\0';
    size_t l = strlen(text);
    if (l > 5 && !strcmp(text + l - 5, "/.git"))
        text[l - 5] = '\0';
    snprintf(where, n, "%s", text);
    return 0;
}

/* The linked worktrees: 1 (where set) when one holds ref, 0 when none,
 * -1 when one does not answer plainly. */
static int linked_holder(int common, const char *ref, char *where, size_t n)
{
    int fd = openat(common, "worktrees",
                    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        char head[PATH_MAX];
        if (e->d_name[0] == '.')
            continue; /* ".", "..": git names no worktree with a dot */
        int admin = openat(dirfd(d), e->d_name,
                           O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (admin < 0 || head_of(admin, head, sizeof head) < 0)
            rc = -1;
        else if (!strcmp(head, ref))
            rc = linked_path(admin, where, n) < 0 ? -1 : 1;
        if (admin >= 0)
            close(admin);
    }
    closedir(d);
    return rc;
}

/* From the files: 1 / 0 as ws_checked_out, -1 when git must say. */
static int holder_from_files(const struct zerg_git *g, const char *ref,
                             char *where, size_t n)
{
    char head[PATH_MAX];
    size_t cl = strlen(g->common_dir);
    if (cl < 5 || strcmp(g->common_dir + cl - 5, "/.git"))
        return -1; /* a main worktree elsewhere (core.worktree, a bare
                      repository): the listing knows where */
    int common =
        open(g->common_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (common < 0)
        return -1;
    int rc = head_of(common, head, sizeof head);
    if (rc == 0 && !strcmp(head, ref)) {
        snprintf(where, n, "%.*s", (int)(cl - 5), g->common_dir);
        rc = 1;
    } else if (rc == 0) {
        rc = linked_holder(common, ref, where, n);
    }
    close(common);
    return rc;
}

/* A full object id and at most a newline after it: git's loose ref. */
static int loose_oid(const char *text, size_t len, char oid[ZERG_GIT_OID_MAX])
{
    size_t n = strspn(text, "0123456789abcdef");
    if ((n != 40 && n != 64) ||
        (len != n && !(len == n + 1 && text[n] == '\n')))
        return -1;
    memcpy(oid, text, n);
    oid[n] = '\0';
    return 0;
}

/* The loose ref (refs/heads/...) under common, one directory at a time:
 * 0 with oid set, -1 when it is not there plainly. */
static int loose_ref(int common, const char *ref, char oid[ZERG_GIT_OID_MAX])
{
    char part[PATH_MAX], text[128];
    int fd = fcntl(common, F_DUPFD_CLOEXEC, 0), rc = -1;
    for (const char *p = ref; fd >= 0;) {
        size_t n = strcspn(p, "/");
        if (n == 0 || n >= sizeof part || p[0] == '.')
            break; /* "", ".", "..", ".x": git refuses them too */
        memcpy(part, p, n), part[n] = '\0';
        if (!p[n]) {
            ssize_t len = read_small(fd, part, text, sizeof text);
            rc = len < 0 ? -1 : loose_oid(text, (size_t)len, oid);
            break;
        }
        int next = openat(fd, part,
                          O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK |
                              O_CLOEXEC);
        close(fd);
        fd = next, p += n + 1;
    }
    if (fd >= 0)
        close(fd);
    return rc;
}

/* A HEAD naming a branch, as git reads it: "ref:", blanks, the name,
 * at most a newline.  0 with ref set, 1 when HEAD names no ref, -1 when
 * it is anything else (git would refuse it, or read it otherwise). */
static int head_symref(const char *text, size_t len, char *ref, size_t n)
{
    if (len < 4 || strncmp(text, "ref:", 4))
        return 1;
    size_t i = 4 + strspn(text + 4, " \t"), j = i;
    while (j < len && text[j] > ' ' && text[j] < 0x7f)
        j++;
    if (j == i || j - i >= n ||
        (len != j && !(len == j + 1 && text[j] == '\n')))
        return -1;
    memcpy(ref, text + i, j - i);
    ref[j - i] = '\0';
    return 0;
}

int ws_head_commit(const char *gitdir, const char *common_dir,
                   char oid[ZERG_GIT_OID_MAX])
{
    char ref[PATH_MAX], text[HEAD_MAX];
    int dir = open(gitdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    ssize_t len = dir < 0 ? -1 : read_small(dir, "HEAD", text, sizeof text);
    if (dir >= 0)
        close(dir);
    int named = len < 0 ? -1 : head_symref(text, (size_t)len, ref, sizeof ref);
    if (named == 1)
        return loose_oid(text, (size_t)len, oid); /* detached */
    if (named < 0 || strncmp(ref, "refs/heads/", 11))
        return -1; /* a per-worktree ref, or something odd: git says */
    int common =
        open(common_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (common < 0)
        return -1;
    /* A reftable store keeps no loose refs that count. */
    int rc = faccessat(common, "reftable", F_OK, AT_SYMLINK_NOFOLLOW) == 0
                 ? -1
                 : loose_ref(common, ref, oid);
    close(common);
    return rc;
}

int ws_checked_out_now(const struct zerg_git *g, const char *ref, char *where,
                       size_t n, struct zerg_err *err)
{
    int rc = holder_from_files(g, ref, where, n);
    if (rc >= 0)
        return rc;
    return ws_checked_out(g, ref, NULL, where, n, err);
}
