/* lock.h - per-feature exclusive lock held by a rush for its lifetime.
 *
 * flock(2) on .zerg/state/{feature}.lock, non-blocking, O_CLOEXEC so no
 * worker inherits it; the kernel drops it when the holder dies, even by
 * kill -9.  The file also records the holder's pid for `zerg stop`. */
#ifndef ZERG_LOCK_H
#define ZERG_LOCK_H

#include <sys/types.h>

struct zerg_err;

struct zerg_lock {
    int fd; /* -1 when not held */
};

/* Takes the lock or fails at once with ZERG_ELOCKED ("another zerg rush
 * (pid 123) holds ...").  Writes our pid into the file.  A lock path that
 * is a symbolic link (ZERG_ESYMLINK) or not a regular file (ZERG_ENOTREG)
 * is refused, never followed nor waited on. */
int zerg_lock_acquire(struct zerg_lock *lk, const char *path,
                      struct zerg_err *err);
void zerg_lock_release(struct zerg_lock *lk);

/* 1 if someone holds the lock (sets *holder to the pid recorded in the
 * file, or 0 if unknown), 0 if free or missing, -errno on error, and
 * ZERG_ESYMLINK / ZERG_ENOTREG as for zerg_lock_acquire. */
int zerg_lock_probe(const char *path, pid_t *holder);

#endif
