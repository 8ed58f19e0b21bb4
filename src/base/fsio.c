/* fsio.c - safe opens, whole-file reads and directory walks (see
 * zerg/fsio.h); atomic writes are in fsio_write.c.
 *
 * The openers below are the one place that decides what zerg will open:
 * O_NONBLOCK so a FIFO planted by a task cannot stop the orchestrator in
 * open(2), fstat so only regular files are read, O_NOFOLLOW and a no-follow
 * directory walk so zerg's own files stay inside .zerg/. */
#include "zerg/fsio.h"
#include "zerg/err.h"
#include "zerg/text.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int zerg_fsio_path(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -EINVAL;
    return (size_t)n < size ? 0 : -ENAMETOOLONG;
}

/* Doubles buf toward limit bytes; 0 or -ENOMEM. */
static int grow_buf(char **buf, size_t *cap, size_t limit)
{
    size_t ncap = *cap > limit / 2 ? limit : *cap * 2;
    char *p = realloc(*buf, ncap);
    if (!p)
        return -ENOMEM;
    *buf = p;
    *cap = ncap;
    return 0;
}

/* Reads fd to EOF.  The buffer may reach max + 2 bytes: max of data, one
 * more to notice a file that grew past max, and the NUL. */
static int read_fd(int fd, size_t max, size_t hint, char **data, size_t *len)
{
    if (max > SIZE_MAX - 2)
        max = SIZE_MAX - 2;
    size_t cap = (hint < max ? hint : max) + 1, n = 0;
    char *buf = malloc(cap);
    int rc = buf ? 0 : -ENOMEM;
    while (rc == 0) {
        if (n == cap - 1) { /* full */
            if (n > max) {
                rc = -EFBIG;
                break;
            }
            if ((rc = grow_buf(&buf, &cap, max + 2)) < 0)
                break;
        }
        ssize_t got = read(fd, buf + n, cap - 1 - n);
        if (got < 0 && errno != EINTR)
            rc = -errno;
        else if (got == 0)
            break;
        else if (got > 0)
            n += (size_t)got;
    }
    if (rc == 0 && n > max)
        rc = -EFBIG;
    if (rc < 0) {
        free(buf);
        return rc;
    }
    buf[n] = '\0';
    *data = buf;
    if (len)
        *len = n;
    return 0;
}

const char *zerg_fsio_kind(mode_t mode)
{
    switch (mode & S_IFMT) {
    case S_IFREG:
        return "a regular file";
    case S_IFDIR:
        return "a directory";
    case S_IFIFO:
        return "a FIFO";
    case S_IFSOCK:
        return "a socket";
    case S_IFCHR:
        return "a character device";
    case S_IFBLK:
        return "a block device";
    case S_IFLNK:
        return "a symbolic link";
    }
    return "of an unknown kind";
}

/* The code and sentence for a path that is there but is no regular file. */
static int not_regular(const char *path, mode_t mode, struct zerg_err *err)
{
    if (S_ISLNK(mode))
        return zerg_err_set(err, ZERG_ESYMLINK,
                            "%s is a symbolic link, which zerg does not "
                            "follow for its own files: remove it",
                            path);
    return zerg_err_set(err, S_ISDIR(mode) ? -EISDIR : ZERG_ENOTREG,
                        "%s is not a regular file (%s)", path,
                        zerg_fsio_kind(mode));
}

/* open(2) of path failed with e.  ELOOP under O_NOFOLLOW (a link) and
 * ENXIO (a FIFO without a reader, opened to write non-blocking) are
 * reported as the kind of file found. */
static int open_failed(const char *path, int e, int nofollow, const char *verb,
                       struct zerg_err *err)
{
    struct stat st;
    if (((e == ELOOP && nofollow) || e == ENXIO) && lstat(path, &st) == 0 &&
        !S_ISREG(st.st_mode))
        return not_regular(path, st.st_mode, err);
    return zerg_err_set(err, -e, "cannot %s %s: %s", verb, path, strerror(e));
}

/* fstat of a fresh fd into st; the fd is closed on failure. */
static int check_fd(int fd, const char *path, int any_kind, struct stat *st,
                    struct zerg_err *err)
{
    int rc = fstat(fd, st) < 0 ? -errno : 0;
    if (rc < 0)
        zerg_err_set(err, rc, "cannot read %s: %s", path, strerror(-rc));
    else if (!any_kind && !S_ISREG(st->st_mode))
        rc = not_regular(path, st->st_mode, err);
    if (rc < 0) {
        close(fd);
        return rc;
    }
    return fd;
}

static int open_checked(const char *path, int flags, struct stat *st,
                        struct zerg_err *err)
{
    int any = flags & ZERG_FSIO_ANY_KIND, nofollow = flags & ZERG_FSIO_NOFOLLOW;
    /* O_NONBLOCK changes nothing for a regular file; it only keeps open(2)
     * of a FIFO from waiting for a writer that never comes. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | (any ? 0 : O_NONBLOCK) |
                            (nofollow ? O_NOFOLLOW : 0));
    if (fd < 0)
        return open_failed(path, errno, nofollow, "read", err);
    return check_fd(fd, path, any, st, err);
}

int zerg_fsio_open_read(const char *path, int flags, struct zerg_err *err)
{
    struct stat st;
    return open_checked(path, flags, &st, err);
}

int zerg_fsio_open_append(const char *path, struct zerg_err *err)
{
    struct stat st;
    int fd = open(path,
                  O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW |
                      O_NONBLOCK,
                  0644);
    if (fd < 0)
        return open_failed(path, errno, 1, "open", err);
    if ((fd = check_fd(fd, path, 0, &st, err)) < 0)
        return fd;
    /* Back to blocking: a write to a full disk must fail, not EAGAIN. */
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

/* Reads the regular file (or, with any kind, the stream) open on fd. */
static int read_checked(int fd, const char *path, size_t max,
                        const struct stat *st, char **data, size_t *len,
                        struct zerg_err *err)
{
    int reg = S_ISREG(st->st_mode);
    int rc =
        reg && (uintmax_t)st->st_size > max
            ? -EFBIG
            : read_fd(fd, max, reg ? (size_t)st->st_size : 4096, data, len);
    close(fd);
    if (rc == -EFBIG)
        return zerg_err_set(err, rc, "cannot read %s: larger than %zu bytes",
                            path, max);
    if (rc < 0)
        return zerg_err_set(err, rc, "cannot read %s: %s", path,
                            zerg_strerror(rc));
    return 0;
}

int zerg_fsio_read_file(const char *path, size_t max, int flags, char **data,
                        size_t *len, struct zerg_err *err)
{
    struct stat st;
    *data = NULL;
    int fd = open_checked(path, flags, &st, err);
    if (fd < 0)
        return fd;
    return read_checked(fd, path, max, &st, data, len, err);
}

int zerg_fsio_read_all(const char *path, size_t max, char **data, size_t *len,
                       struct zerg_err *err)
{
    return zerg_fsio_read_file(path, max, 0, data, len, err);
}

int zerg_fsio_project_of(const char *path, char *root, size_t size)
{
    const char *found = NULL;
    for (const char *p = path; *p; p++) {
        if (p != path && p[-1] != '/')
            continue;
        size_t n = strcspn(p, "/");
        if ((n == 5 && !strncmp(p, ".zerg", 5)) ||
            (n == 4 && !strncmp(p, ".gsd", 4)))
            found = p;
    }
    if (!found)
        return -ENOENT;
    if (found == path)
        return zerg_fsio_path(root, size, ".");
    size_t n = found - path > 1 ? (size_t)(found - path) - 1 : 1;
    return zerg_fsio_path(root, size, "%.*s", (int)n, path);
}

/* Where fd really is: /proc/self/fd names the file opened, so a link
 * swapped after the open cannot fool the check; without /proc, the
 * resolved path. */
static int fd_realpath(int fd, const char *path, char *out)
{
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, out, PATH_MAX - 1);
    if (n > 0 && out[0] == '/') {
        out[n] = '\0';
        return 0;
    }
    return realpath(path, out) ? 0 : -errno;
}

/* 0 when the file open on fd lies inside root; the fd is closed if not. */
static int fd_inside(int fd, const char *path, const char *root,
                     struct zerg_err *err)
{
    char real[PATH_MAX], top[PATH_MAX];
    int rc = fd_realpath(fd, path, real);
    if (rc == 0 && !realpath(root, top))
        rc = -errno;
    if (rc < 0) {
        close(fd);
        return zerg_err_set(err, rc, "cannot resolve %s: %s", path,
                            strerror(-rc));
    }
    size_t n = strlen(top);
    if (strcmp(top, "/") == 0 || (strncmp(real, top, n) == 0 && real[n] == '/'))
        return 0;
    close(fd);
    return zerg_err_set(err, ZERG_EOUTSIDE,
                        "%s leads to %s, outside the project %s: zerg reads "
                        "its inputs only from inside the project",
                        path, real, top);
}

static int open_input(const char *path, struct stat *st, struct zerg_err *err)
{
    char root[PATH_MAX];
    int fd = open_checked(path, 0, st, err);
    if (fd < 0)
        return fd;
    int rc = zerg_fsio_project_of(path, root, sizeof root) == 0
                 ? fd_inside(fd, path, root, err)
                 : 0;
    return rc < 0 ? rc : fd;
}

int zerg_fsio_open_input(const char *path, struct zerg_err *err)
{
    struct stat st;
    return open_input(path, &st, err);
}

int zerg_fsio_read_input(const char *path, size_t max, char **data, size_t *len,
                         struct zerg_err *err)
{
    struct stat st;
    *data = NULL;
    int fd = open_input(path, &st, err);
    if (fd < 0)
        return fd;
    return read_checked(fd, path, max, &st, data, len, err);
}

static int mkdir_one(const char *path, mode_t mode)
{
    if (mkdir(path, mode) == 0)
        return 0;
    int rc = -errno;
    struct stat st;
    if (rc == -EEXIST && stat(path, &st) == 0)
        return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
    return rc;
}

int zerg_fsio_mkdirs(const char *path, mode_t mode)
{
    char buf[PATH_MAX];
    int rc = zerg_fsio_path(buf, sizeof buf, "%s", path);
    if (rc < 0)
        return rc;
    /* The common case, the parent exists: one mkdir instead of one per
     * path component. */
    rc = mkdir_one(buf, mode);
    if (rc != -ENOENT)
        return rc;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/' || p[-1] == '/')
            continue;
        *p = '\0';
        rc = mkdir_one(buf, mode);
        *p = '/';
        if (rc < 0)
            return rc;
    }
    return mkdir_one(buf, mode);
}

/* Creates (if missing) and opens the directory name inside dfd without
 * following a link.  The new fd, ZERG_ESYMLINK, -ENOTDIR or -errno. */
/* One component: created if missing, entered without following a link.
 * With replace_links a symbolic link in the way is removed (the link, not
 * what it points to) and a directory made in its place. */
static int step_into(int dfd, const char *name, mode_t mode, int replace_links)
{
    /* EEXIST covers a link or a file in the way: the open tells which. */
    if (mkdirat(dfd, name, mode) < 0 && errno != EEXIST)
        return -errno;
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0)
        return fd;
    int rc = -errno;
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return rc;
    if (S_ISLNK(st.st_mode) && replace_links && unlinkat(dfd, name, 0) == 0)
        return step_into(dfd, name, mode, 0);
    return S_ISLNK(st.st_mode)    ? ZERG_ESYMLINK
           : !S_ISDIR(st.st_mode) ? -ENOTDIR
                                  : rc;
}

/* The sentence for a failed step at `at` (root/rel up to the component). */
static int mkdirs_failed(const char *full, const char *at, int rc,
                         struct zerg_err *err)
{
    struct stat st;
    if (rc == ZERG_ESYMLINK)
        return zerg_err_set(err, rc,
                            "cannot create %s: %s is a symbolic link, which "
                            "zerg does not follow for its own directories: "
                            "remove it",
                            full, at);
    if (rc == -ENOTDIR && stat(at, &st) == 0 && !S_ISDIR(st.st_mode))
        return zerg_err_set(err, rc,
                            "cannot create %s: %s: Not a directory (it is "
                            "%s): remove it",
                            full, at, zerg_fsio_kind(st.st_mode));
    return zerg_err_set(err, rc, "cannot create %s: %s", at, zerg_strerror(rc));
}

/* Walks rel below the open directory dfd (consumed), one component at a
 * time; at holds root and grows by each component for the messages. */
static int walk_under(int dfd, const char *rel, mode_t mode, int replace_links,
                      char *at, size_t size, const char *full,
                      struct zerg_err *err)
{
    int rc = 0;
    for (const char *p = rel; rc == 0 && *p;) {
        size_t n = strcspn(p, "/");
        char name[NAME_MAX + 1];
        if (n > NAME_MAX)
            rc = -ENAMETOOLONG;
        else if (n == 2 && !strncmp(p, "..", 2))
            rc = -EINVAL;
        size_t used = strlen(at);
        if (rc == 0 && n > 0 && !(n == 1 && *p == '.')) {
            memcpy(name, p, n);
            name[n] = '\0';
            snprintf(at + used, size - used, "/%s", name);
            int fd = step_into(dfd, name, mode, replace_links);
            if (fd < 0)
                rc = fd;
            else {
                close(dfd);
                dfd = fd;
            }
        }
        p += n + (p[n] == '/');
    }
    close(dfd);
    return rc < 0 ? mkdirs_failed(full, at, rc, err) : 0;
}

/* The usual case, everything but the last component of rel already there
 * as real directories (a task's log directory below .zerg/logs/F/tasks/):
 * one openat2 that refuses any link on the way, then one step.  1 when
 * done, 0 to take the walk below (which makes what is missing, replaces
 * links under mkdirs_own, and says what is wrong). */
static int mkdirs_fast(const char *root, const char *rel, mode_t mode)
{
    const char *slash = strrchr(rel, '/');
    char parent[PATH_MAX];
    if (!slash || slash == rel || !slash[1] || strstr(rel, "..") ||
        (size_t)(slash - rel) >= sizeof parent)
        return 0;
    memcpy(parent, rel, (size_t)(slash - rel));
    parent[slash - rel] = '\0';
    int rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rfd < 0)
        return 0;
    struct open_how how = {
        .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
        .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH,
    };
    int pfd = (int)syscall(SYS_openat2, rfd, parent, &how, sizeof how);
    close(rfd);
    if (pfd < 0)
        return 0;
    int fd = step_into(pfd, slash + 1, mode, 0);
    close(pfd);
    if (fd < 0)
        return 0;
    close(fd);
    return 1;
}

static int mkdirs_below(const char *root, const char *rel, mode_t mode,
                        int replace_links, struct zerg_err *err)
{
    char full[PATH_MAX], at[PATH_MAX];
    if (mkdirs_fast(root, rel, mode))
        return 0;
    int rc = zerg_fsio_path(full, sizeof full, "%s/%s", root, rel);
    if (rc < 0)
        return zerg_err_set(err, rc, "cannot create %s/%s: %s", root, rel,
                            zerg_strerror(rc));
    if ((rc = zerg_fsio_mkdirs(root, mode)) < 0)
        return mkdirs_failed(full, root, rc, err);
    int dfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return mkdirs_failed(full, root, -errno, err);
    snprintf(at, sizeof at, "%s", root);
    return walk_under(dfd, rel, mode, replace_links, at, sizeof at, full, err);
}

int zerg_fsio_mkdirs_under(const char *root, const char *rel, mode_t mode,
                           struct zerg_err *err)
{
    return mkdirs_below(root, rel, mode, 0, err);
}

int zerg_fsio_mkdirs_own(const char *root, const char *rel, mode_t mode,
                         struct zerg_err *err)
{
    return mkdirs_below(root, rel, mode, 1, err);
}

static int remove_entry(const char *path, const struct stat *st, int kind,
                        struct FTW *ftw)
{
    (void)st, (void)ftw;
    return (kind == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT
               ? -1
               : 0;
}

int zerg_fsio_remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return errno == ENOENT ? 0 : -errno;
    if (!S_ISDIR(st.st_mode))
        return unlink(path) < 0 ? -errno : 0;
    return nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) < 0 ? -errno : 0;
}

/* ---- the end of a log ---------------------------------------------- */

#define TAIL_MAX_BYTES 65536

int zerg_fsio_read_end(int fd, size_t max, char **text, size_t *len)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -errno;
    off_t from = st.st_size > (off_t)max ? st.st_size - (off_t)max : 0;
    size_t want = (size_t)(st.st_size - from);
    char *buf = malloc(want + 1);
    if (!buf)
        return -ENOMEM;
    ssize_t got = pread(fd, buf, want, from);
    if (got < 0) {
        int e = -errno;
        free(buf);
        return e;
    }
    buf[got] = '\0';
    *text = buf;
    *len = (size_t)got;
    return 0;
}

int zerg_fsio_read_tail(const char *path, size_t lines, char *buf, size_t size)
{
    char *text = NULL;
    size_t len = 0;
    if (size)
        buf[0] = '\0';
    int fd = zerg_fsio_open_read(path, ZERG_FSIO_NOFOLLOW, NULL);
    if (fd < 0)
        return fd;
    int rc = zerg_fsio_read_end(fd, TAIL_MAX_BYTES, &text, &len);
    close(fd);
    if (rc < 0)
        return rc;
    size_t end = len;
    while (end > 0 && text[end - 1] == '\n')
        end--;
    size_t i = zerg_text_tail_start(text, end, lines);
    /* Keep the end when it does not fit: the last lines say what broke. */
    if (end - i >= size)
        i = end - (size - 1);
    size_t k = 0;
    for (; i < end && k + 1 < size; i++) {
        unsigned char c = (unsigned char)text[i];
        buf[k++] =
            c == '\n' || c == '\t' || (c >= 0x20 && c != 0x7f) ? (char)c : '?';
    }
    if (size)
        buf[k] = '\0';
    free(text);
    return 0;
}
