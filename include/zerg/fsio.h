/* fsio.h - file I/O that never leaves a torn file behind.
 *
 * zerg_fsio_write_atomic is the only way zerg replaces a file: write a temp
 * file in the same directory, fsync it, rename it over the target, fsync the
 * directory.  On any failure the old file is untouched and the temp file is
 * removed.  The syscalls go through zerg_fsio_ops so tests can inject ENOSPC
 * or EIO at any step. */
#ifndef ZERG_FSIO_H
#define ZERG_FSIO_H

#include <stddef.h>
#include <sys/types.h>

struct zerg_err;

struct zerg_fsio_ops {
    ssize_t (*write)(int fd, const void *buf, size_t len);
    int (*fsync)(int fd);
    int (*rename)(const char *from, const char *to);
};
/* The ops in force; tests replace members and restore them after. */
extern struct zerg_fsio_ops zerg_fsio_ops;
extern const struct zerg_fsio_ops zerg_fsio_ops_default;

enum {
    ZERG_FSIO_DURABLE = 0,   /* fsync file and directory (state, results) */
    ZERG_FSIO_NOSYNC = 1,    /* atomic but not durable (heartbeats) */
};

/* Atomically replaces path with data.  Returns 0 or -errno with err set
 * ("cannot write .zerg/state/f.json: No space left on device"). */
int zerg_fsio_write_atomic(const char *path, const void *data, size_t len,
                           int flags, struct zerg_err *err);

/* Reads a whole file into a malloc'd NUL-terminated buffer (caller frees).
 * Files larger than max bytes fail with -EFBIG.  A missing file returns
 * -ENOENT (err set too). */
int zerg_fsio_read_all(const char *path, size_t max, char **data, size_t *len,
                       struct zerg_err *err);

/* mkdir -p; returns 0 or -errno. */
int zerg_fsio_mkdirs(const char *path, mode_t mode);

/* snprintf into buf; returns 0 or -ENAMETOOLONG when it does not fit. */
int zerg_fsio_path(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Hard-links path to `backup` atomically (link to a temp name, rename);
 * used to keep the last good state beside the live one.  0 or -errno. */
int zerg_fsio_keep_copy(const char *path, const char *backup);

#endif
