/* fsio.c - atomic file replacement and whole-file reads (see zerg/fsio.h).
 *
 * The state file, heartbeats, assignments and results all go through
 * zerg_fsio_write_atomic: a reader - or a restarted orchestrator after a
 * crash at any instant - sees the old file or the new one, never a torn
 * one.  The temp file is ".NAME.tmp.PID.RANDOM" beside the target, so the
 * rename never crosses a filesystem, and the leading dot keeps it out of
 * globs such as "heartbeat-*.json". */
#include "zerg/fsio.h"
#include "zerg/err.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const struct zerg_fsio_ops zerg_fsio_ops_default = {
    .write = write,
    .fsync = fsync,
    .rename = rename,
};
struct zerg_fsio_ops zerg_fsio_ops = {
    .write = write,
    .fsync = fsync,
    .rename = rename,
};

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

/* Splits path into its directory ("." when none) and its last component. */
static int split_path(const char *path, char *dir, size_t size,
                      const char **base)
{
    const char *slash = strrchr(path, '/');
    *base = slash ? slash + 1 : path;
    if (!**base)
        return -EISDIR;
    if (!slash)
        return zerg_fsio_path(dir, size, ".");
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    if (n >= size)
        return -ENAMETOOLONG;
    memcpy(dir, path, n);
    dir[n] = '\0';
    return 0;
}

static uint32_t random_u32(void)
{
    uint32_t r;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) == sizeof r)
        return r;
    /* No entropy yet (early boot): O_EXCL still guards against clashes. */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint32_t)ts.tv_nsec ^ ((uint32_t)getpid() << 16);
}

/* Creates dir/.BASE.tmp.PID.RANDOM exclusively; returns the fd (name in
 * tmp) or -errno. */
static int temp_create(const char *dir, const char *base, char *tmp,
                       size_t size)
{
    for (int tries = 0; tries < 16; tries++) {
        int rc = zerg_fsio_path(tmp, size, "%s/.%s.tmp.%ld.%08x", dir, base,
                                (long)getpid(), random_u32());
        if (rc < 0)
            return rc;
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST)
            return fd >= 0 ? fd : -errno;
    }
    return -EEXIST;
}

/* Writes all of buf, resuming after short writes and EINTR. */
static int write_full(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = zerg_fsio_ops.write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return -EIO; /* no progress and no errno: do not spin */
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

static int sync_fd(int fd)
{
    int rc;
    do
        rc = zerg_fsio_ops.fsync(fd);
    while (rc < 0 && errno == EINTR);
    return rc < 0 ? -errno : 0;
}

static int sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = sync_fd(fd);
    close(fd);
    return rc;
}

/* Writes, syncs and closes the temp file; the fd is closed either way. */
static int temp_fill(int fd, const void *data, size_t len, int flags)
{
    int rc = write_full(fd, data, len);
    if (rc == 0 && !(flags & ZERG_FSIO_NOSYNC))
        rc = sync_fd(fd);
    /* close can report a deferred write error (NFS, quotas). */
    if (close(fd) < 0 && rc == 0 && errno != EINTR)
        rc = -errno;
    return rc;
}

int zerg_fsio_write_atomic(const char *path, const void *data, size_t len,
                           int flags, struct zerg_err *err)
{
    char dir[PATH_MAX], tmp[PATH_MAX];
    const char *base;
    int rc = split_path(path, dir, sizeof dir, &base);
    if (rc < 0)
        goto fail;
    int fd = temp_create(dir, base, tmp, sizeof tmp);
    if (fd < 0) {
        rc = fd;
        goto fail;
    }
    rc = temp_fill(fd, data, len, flags);
    if (rc == 0 && zerg_fsio_ops.rename(tmp, path) < 0)
        rc = -errno;
    if (rc < 0) {
        unlink(tmp);
        goto fail;
    }
    /* The new file is in place; this makes the rename itself durable. */
    if (!(flags & ZERG_FSIO_NOSYNC) && (rc = sync_dir(dir)) < 0)
        return zerg_err_set(err, rc, "cannot sync directory of %s: %s", path,
                            zerg_strerror(rc));
    return 0;
fail:
    return zerg_err_set(err, rc, "cannot write %s: %s", path,
                        zerg_strerror(rc));
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

int zerg_fsio_read_all(const char *path, size_t max, char **data, size_t *len,
                       struct zerg_err *err)
{
    *data = NULL;
    int rc, fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        rc = -errno;
        goto fail;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        rc = -errno;
        close(fd);
        goto fail;
    }
    if (S_ISREG(st.st_mode) && (uintmax_t)st.st_size > max) {
        close(fd);
        rc = -EFBIG;
        goto fail;
    }
    rc = read_fd(fd, max, S_ISREG(st.st_mode) ? (size_t)st.st_size : 4096, data,
                 len);
    close(fd);
    if (rc == 0)
        return 0;
fail:
    if (rc == -EFBIG)
        return zerg_err_set(err, rc, "cannot read %s: larger than %zu bytes",
                            path, max);
    return zerg_err_set(err, rc, "cannot read %s: %s", path, zerg_strerror(rc));
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

/* Hard-links path to a fresh temp name beside backup; 0 or -errno. */
static int temp_link(const char *path, const char *dir, const char *base,
                     char *tmp, size_t size)
{
    for (int tries = 0; tries < 16; tries++) {
        int rc = zerg_fsio_path(tmp, size, "%s/.%s.tmp.%ld.%08x", dir, base,
                                (long)getpid(), random_u32());
        if (rc < 0)
            return rc;
        if (link(path, tmp) == 0)
            return 0;
        if (errno != EEXIST)
            return -errno;
    }
    return -EEXIST;
}

int zerg_fsio_keep_copy(const char *path, const char *backup)
{
    char dir[PATH_MAX], tmp[PATH_MAX];
    const char *base;
    int rc = split_path(backup, dir, sizeof dir, &base);
    if (rc == 0)
        rc = temp_link(path, dir, base, tmp, sizeof tmp);
    if (rc < 0)
        return rc;
    /* rename replaces an existing backup atomically; link alone would
     * fail with EEXIST. */
    if (zerg_fsio_ops.rename(tmp, backup) < 0) {
        rc = -errno;
        unlink(tmp);
    }
    return rc;
}
