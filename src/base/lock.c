/* lock.c - the per-feature rush lock (see zerg/lock.h).
 *
 * A rush holds flock(LOCK_EX) for its lifetime; `zerg status` and friends
 * probe with LOCK_SH so they never look like a rush.  The lock file is never
 * unlinked: removing it would let a second rush lock a fresh inode while the
 * first still holds the old one.  It is opened without following a link and
 * without blocking, and must be a regular file: a FIFO planted in its place
 * would otherwise hang every `zerg status`. */
#include "zerg/lock.h"
#include "zerg/err.h"
#include "zerg/fsio.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* A probe holds LOCK_SH for a few microseconds; retrying this many times
 * rides one out without ever sleeping. */
#define LOCK_PROBE_RETRIES 1000

/* The pid recorded in the lock file, or 0 when empty or unreadable. */
static pid_t read_pid(int fd)
{
    char buf[32];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    long pid = strtol(buf, NULL, 10);
    return pid > 0 ? (pid_t)pid : 0;
}

static int write_pid(int fd)
{
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)n, 0) != n)
        return -errno;
    return 0;
}

/* LOCK_EX, retrying while only probes (LOCK_SH) are in the way.  0,
 * -EWOULDBLOCK when a real holder has it, or -errno. */
static int take_exclusive(int fd)
{
    for (int i = 0; i < LOCK_PROBE_RETRIES; i++) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return 0;
        if (errno != EWOULDBLOCK)
            return -errno;
        /* A shared lock is only granted when no exclusive one is held. */
        if (flock(fd, LOCK_SH | LOCK_NB) < 0)
            return errno == EWOULDBLOCK ? -EWOULDBLOCK : -errno;
        flock(fd, LOCK_UN);
        sched_yield();
    }
    return -EWOULDBLOCK;
}

/* Opens (creating) the lock file to write: the fd or negative, err set. */
static int open_lock(const char *path, struct zerg_err *err)
{
    struct stat st;
    int rc,
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK,
                  0644);
    if (fd < 0 && errno == ELOOP)
        return zerg_err_set(err, ZERG_ESYMLINK,
                            "cannot open lock %s: it is a symbolic link, "
                            "which zerg does not follow: remove it",
                            path);
    if (fd < 0) {
        rc = -errno;
        return zerg_err_set(err, rc, "cannot open lock %s: %s", path,
                            zerg_strerror(rc));
    }
    if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
        close(fd);
        return zerg_err_set(err, ZERG_ENOTREG,
                            "cannot open lock %s: it is not a regular file "
                            "(%s): remove it",
                            path, zerg_fsio_kind(st.st_mode));
    }
    return fd;
}

int zerg_lock_acquire(struct zerg_lock *lk, const char *path,
                      struct zerg_err *err)
{
    lk->fd = -1;
    int rc, fd = open_lock(path, err);
    if (fd < 0)
        return fd;
    rc = take_exclusive(fd);
    if (rc == -EWOULDBLOCK) {
        pid_t holder = read_pid(fd);
        close(fd);
        if (holder)
            return zerg_err_set(err, ZERG_ELOCKED,
                                "another zerg rush (pid %ld) holds the lock "
                                "%s",
                                (long)holder, path);
        return zerg_err_set(err, ZERG_ELOCKED,
                            "another zerg rush holds the lock %s", path);
    }
    if (rc == 0)
        rc = write_pid(fd);
    if (rc < 0) {
        close(fd);
        return zerg_err_set(err, rc, "cannot lock %s: %s", path,
                            zerg_strerror(rc));
    }
    lk->fd = fd;
    return 0;
}

void zerg_lock_release(struct zerg_lock *lk)
{
    if (!lk || lk->fd < 0)
        return;
    /* Empty the file first so no reader sees our pid once we are gone. */
    if (ftruncate(lk->fd, 0) < 0) {
        /* The pid stays; probes still see the lock is free. */
    }
    close(lk->fd); /* closing the last descriptor drops the flock */
    lk->fd = -1;
}

int zerg_lock_probe(const char *path, pid_t *holder)
{
    if (holder)
        *holder = 0;
    int fd = zerg_fsio_open_read(path, ZERG_FSIO_NOFOLLOW, NULL);
    if (fd < 0)
        return fd == -ENOENT ? 0 : fd;
    int held = 0;
    if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
        flock(fd, LOCK_UN);
    } else if (errno == EWOULDBLOCK) {
        held = 1;
        if (holder)
            *holder = read_pid(fd);
    } else {
        held = -errno;
    }
    close(fd);
    return held;
}
