/* fsio_write.c - atomic and durable file replacement (see zerg/fsio.h).
 *
 * The state file, heartbeats, assignments and results all go through
 * zerg_fsio_write_atomic or, for a document written as it is produced (the
 * state checkpoint), the zerg_fsio_atomic stream: a reader - or a
 * restarted orchestrator after a crash at any instant - sees the old file
 * or the new one, never a torn one.  The temp file is ".NAME.tmp.PID.SEQ"
 * beside the target, so the rename never crosses a filesystem, and the
 * leading dot keeps it out of globs such as "heartbeat-*.json".  SEQ counts
 * the process's temp files: with the pid it is unique among live writers,
 * and O_EXCL catches the rest (a file left by a dead process whose pid came
 * back, a writer in another pid namespace), so no getrandom(2) per file is
 * needed.  The system calls that make data durable go through
 * zerg_fsio_ops, so tests can fail or drop them. */
#include "zerg/fsio.h"
#include "zerg/err.h"
#include "zerg/text.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* rename(2) over an existing file, without the flush ext4 attaches to
 * it: with auto_da_alloc (the default), renaming over an existing name
 * makes ext4 allocate and start writing the new file's blocks on the
 * spot, about 180 us here against 20 us for the same swap done as
 * renameat2(RENAME_EXCHANGE) and an unlink of the old file, now under the
 * temp name.  Readers see the old file or the new one either way.  The
 * flush is what made a rename-replaced file survive a power cut with its
 * new contents; zerg does not rely on it: durable files are fsynced before
 * they are renamed, and a heartbeat or an assignment lost to a power cut
 * is written again by the next run.  Where the target does not exist yet
 * or the filesystem cannot exchange, a plain rename. */
static int replace_at(int dfd, const char *from, const char *to)
{
    if (renameat2(dfd, from, dfd, to, RENAME_EXCHANGE) < 0)
        return errno == ENOENT || errno == EINVAL || errno == ENOSYS
                   ? renameat(dfd, from, dfd, to)
                   : -1;
    if (unlinkat(dfd, from, 0) == 0 || errno == ENOENT)
        return 0;
    /* `to` was something rename(2) would not have replaced (a
     * directory): put it back and fail as rename would have. */
    int e = errno;
    (void)renameat2(dfd, from, dfd, to, RENAME_EXCHANGE);
    errno = e;
    return -1;
}

static int replace_file(const char *from, const char *to)
{
    return replace_at(AT_FDCWD, from, to);
}

const struct zerg_fsio_ops zerg_fsio_ops_default = {
    .write = write,
    .fsync = fsync,
    .rename = replace_file,
    .syncfs = syncfs,
};
struct zerg_fsio_ops zerg_fsio_ops = {
    .write = write,
    .fsync = fsync,
    .rename = replace_file,
    .syncfs = syncfs,
};

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

/* The next temp-name number of this process.  After a clash the next
 * try jumps ahead by the monotonic clock, so a run of leftovers from a
 * dead process with our pid is not walked one by one. */
static uint32_t temp_seq(int tries)
{
    static atomic_uint seq;
    unsigned inc = 1;
    if (tries > 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        inc = (unsigned)ts.tv_nsec | 1;
    }
    return (uint32_t)(atomic_fetch_add(&seq, inc) + inc);
}

/* The temp name dir/.BASE.tmp.PID.SEQ of a try. */
static int temp_name(char *tmp, size_t size, const char *dir, const char *base,
                     int tries)
{
    return zerg_fsio_path(tmp, size, "%s%s.%s.tmp.%ld.%08x", dir,
                          *dir ? "/" : "", base, (long)getpid(),
                          temp_seq(tries));
}

/* Creates dir/.BASE.tmp.PID.SEQ exclusively; returns the fd (name in
 * tmp) or -errno. */
static int temp_create_at(int dfd, const char *dir, const char *base, char *tmp,
                          size_t size)
{
    for (int tries = 0; tries < 16; tries++) {
        int rc = temp_name(tmp, size, dir, base, tries);
        if (rc < 0)
            return rc;
        int fd =
            openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST)
            return fd >= 0 ? fd : -errno;
    }
    return -EEXIST;
}

static int temp_create(const char *dir, const char *base, char *tmp,
                       size_t size)
{
    return temp_create_at(AT_FDCWD, dir, base, tmp, size);
}

/* Hard-links path (linkat flags) to a fresh temp name dir/.BASE.tmp.*;
 * 0 or -errno (the name in tmp). */
static int temp_link(const char *path, int flags, const char *dir,
                     const char *base, char *tmp, size_t size)
{
    for (int tries = 0; tries < 16; tries++) {
        int rc = temp_name(tmp, size, dir, base, tries);
        if (rc < 0)
            return rc;
        if (linkat(AT_FDCWD, path, AT_FDCWD, tmp, flags) == 0)
            return 0;
        if (errno != EEXIST)
            return -errno;
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

int zerg_fsio_write_linked(int fd, const char *path, const void *data,
                           size_t len, int flags, struct zerg_err *err)
{
    char dir[PATH_MAX], tmp[PATH_MAX];
    const char *base;
    int rc = split_path(path, dir, sizeof dir, &base);
    if (rc == 0)
        rc = write_full(fd, data, len);
    if (rc == 0 && !(flags & ZERG_FSIO_NOSYNC))
        rc = sync_fd(fd);
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    if (rc == 0)
        rc = temp_link(self, AT_SYMLINK_FOLLOW, dir, base, tmp, sizeof tmp);
    if (rc < 0)
        return zerg_err_set(err, rc, "cannot write %s: %s", path,
                            zerg_strerror(rc));
    if (zerg_fsio_ops.rename(tmp, path) < 0) {
        rc = -errno;
        unlink(tmp);
        return zerg_err_set(err, rc, "cannot write %s: %s", path,
                            zerg_strerror(rc));
    }
    if (!(flags & ZERG_FSIO_NOSYNC) && (rc = sync_dir(dir)) < 0)
        return zerg_err_set(err, rc, "cannot sync directory of %s: %s", path,
                            zerg_strerror(rc));
    return 0;
}

int zerg_fsio_write_atomic_at(int dfd, const char *name, const void *data,
                              size_t len)
{
    char tmp[NAME_MAX + 1];
    int fd = temp_create_at(dfd, "", name, tmp, sizeof tmp);
    if (fd < 0)
        return fd;
    int rc = temp_fill(fd, data, len, ZERG_FSIO_NOSYNC);
    if (rc == 0 && replace_at(dfd, tmp, name) < 0)
        rc = -errno;
    if (rc < 0)
        unlinkat(dfd, tmp, 0);
    return rc;
}

/* ---- a file written as it is produced ------------------------------ */

#define STREAM_BUF (64u << 10)

int zerg_fsio_atomic_open(struct zerg_fsio_atomic *a, const char *path,
                          int flags)
{
    const char *base;
    memset(a, 0, sizeof *a);
    a->fd = -1;
    a->flags = flags;
    int rc = zerg_fsio_path(a->path, sizeof a->path, "%s", path);
    if (rc == 0)
        rc = split_path(path, a->dir, sizeof a->dir, &base);
    if (rc == 0 && !(a->buf = malloc(STREAM_BUF)))
        rc = -ENOMEM;
    if (rc == 0 &&
        (a->fd = temp_create(a->dir, base, a->tmp, sizeof a->tmp)) < 0)
        rc = a->fd;
    if (rc < 0) {
        free(a->buf);
        a->buf = NULL;
        a->rc = rc;
    }
    return rc;
}

static void stream_flush(struct zerg_fsio_atomic *a)
{
    if (a->rc == 0 && a->n > 0)
        a->rc = write_full(a->fd, a->buf, a->n);
    a->n = 0;
}

int zerg_fsio_atomic_write(struct zerg_fsio_atomic *a, const void *data,
                           size_t len)
{
    const char *p = data;
    while (a->rc == 0 && len > 0) {
        size_t k = STREAM_BUF - a->n < len ? STREAM_BUF - a->n : len;
        memcpy(a->buf + a->n, p, k);
        a->n += k;
        p += k;
        len -= k;
        if (a->n == STREAM_BUF)
            stream_flush(a);
    }
    return a->rc;
}

void zerg_fsio_atomic_abort(struct zerg_fsio_atomic *a)
{
    if (a->fd >= 0) {
        close(a->fd);
        unlink(a->tmp);
    }
    a->fd = -1;
    free(a->buf);
    a->buf = NULL;
}

int zerg_fsio_atomic_commit(struct zerg_fsio_atomic *a, struct zerg_err *err)
{
    int rc = a->rc;
    if (a->fd < 0)
        return zerg_err_set(err, rc ? rc : -EBADF, "cannot write %s: %s",
                            a->path, zerg_strerror(rc ? rc : -EBADF));
    stream_flush(a);
    rc = a->rc;
    if (rc == 0 && !(a->flags & ZERG_FSIO_NOSYNC))
        rc = sync_fd(a->fd);
    if (close(a->fd) < 0 && rc == 0 && errno != EINTR)
        rc = -errno;
    a->fd = -1;
    free(a->buf);
    a->buf = NULL;
    if (rc == 0 && zerg_fsio_ops.rename(a->tmp, a->path) < 0)
        rc = -errno;
    if (rc < 0) {
        unlink(a->tmp);
        return zerg_err_set(err, rc, "cannot write %s: %s", a->path,
                            zerg_strerror(rc));
    }
    if (!(a->flags & ZERG_FSIO_NOSYNC) && (rc = sync_dir(a->dir)) < 0)
        return zerg_err_set(err, rc, "cannot sync directory of %s: %s", a->path,
                            zerg_strerror(rc));
    return 0;
}

int zerg_fsio_sync_fs(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = zerg_fsio_ops.syncfs(fd) < 0 ? -errno : 0;
    close(fd);
    return rc;
}

int zerg_fsio_sync_files(const char *dir, char *const *paths, size_t n)
{
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        int fd = open(paths[i], O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) {
            if (errno != ENOENT) /* gone: nothing left to make durable */
                rc = -errno;
            continue;
        }
        rc = sync_fd(fd);
        close(fd);
    }
    return rc < 0 ? rc : sync_dir(dir);
}

int zerg_fsio_keep_copy(const char *path, const char *backup)
{
    char dir[PATH_MAX], tmp[PATH_MAX];
    const char *base;
    int rc = split_path(backup, dir, sizeof dir, &base);
    if (rc == 0)
        rc = temp_link(path, 0, dir, base, tmp, sizeof tmp);
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
