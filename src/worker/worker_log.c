/* worker_log.c - the log of a task attempt (DESIGN.md section 8),
 * .zerg/logs/{feature}/tasks/{id}/attempt-{n}.log: zerg's own directory,
 * made without following a link (one a task planted there is replaced),
 * and a log file opened the same way, so a task's output never lands
 * outside the project.
 *
 * A worker runs thousands of attempts, so the tasks directory is opened
 * once (openat2 with RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH below .zerg)
 * and kept; before each attempt one lstat of its path must still name
 * that directory (a task may have removed, renamed or replaced it), else
 * it is opened again.  Below it, the attempt's directory and file take
 * one mkdirat and one openat2 that refuses any link.  Whatever that fast
 * path does not like -- a link, a FIFO, a file in the way -- goes the
 * slow way of zerg_fsio_mkdirs_own and zerg_fsio_open_append, which
 * replace planted links and say what is wrong.
 *
 * The worker writes the log itself only while no stage runs, so it knows
 * the size without asking; after a stage (whose output went there too) it
 * does not, until the next fstat.
 *
 * The attempt's result is written there too, as attempt-{n}.result.json,
 * and that file is linked into the state directory as the result the
 * orchestrator reads.  When the orchestrator deletes its result (once a
 * checkpoint holds it) only that link goes: the file stays as the record
 * of the attempt, and no inode is freed.  On ext4 without a journal each
 * inode freed makes every file created after it, for about 35 s, a
 * little dearer (the allocator passes over it), which a long run of short
 * tasks felt as a growing cost per task.  Whatever stands in the way
 * (the directory gone or a link, another filesystem, no /proc) makes the
 * result a plain file of the state directory, as it was. */
#include "worker_log.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "zerg/fsio.h"
#include "zerg/graph.h"
#include "zerg/protocol.h"

#define LOG_LINE_MAX 1024 /* longer lines are formatted on the heap */

static int openat2_beneath(int dfd, const char *rel, int flags, mode_t mode)
{
    struct open_how how = {
        .flags = (unsigned)flags | O_CLOEXEC,
        .mode = (flags & O_CREAT) ? mode : 0,
        .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH,
    };
    return (int)syscall(SYS_openat2, dfd, rel, &how, sizeof how);
}

/* Opens zdir/rel (the tasks directory) into w->tasks_fd; 0 or -errno. */
static int tasks_open(struct worker *w, const char *zdir, const char *rel)
{
    struct stat st;
    int zfd = open(zdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (zfd < 0)
        return -errno;
    int fd = openat2_beneath(zfd, rel, O_RDONLY | O_DIRECTORY, 0);
    int rc = fd < 0 ? -errno : 0;
    close(zfd);
    if (rc == 0 && fstat(fd, &st) < 0)
        rc = -errno;
    if (rc < 0) {
        if (fd >= 0)
            close(fd);
        return rc;
    }
    w->tasks_fd = fd;
    w->tasks_dev = st.st_dev;
    w->tasks_ino = st.st_ino;
    return 0;
}

/* w->tasks_fd names what path (zdir/rel) names now, opened again (and
 * made, links replaced) when it does not.  0 or negative. */
static int tasks_current(struct worker *w, const char *zdir, const char *rel,
                         const char *path)
{
    struct stat st;
    struct zerg_err e = {0};
    if (w->tasks_fd >= 0 && lstat(path, &st) == 0 && S_ISDIR(st.st_mode) &&
        st.st_dev == w->tasks_dev && st.st_ino == w->tasks_ino)
        return 0;
    wk_log_dir_close(w);
    if (tasks_open(w, zdir, rel) == 0)
        return 0;
    int rc = zerg_fsio_mkdirs_own(zdir, rel, 0755, &e);
    return rc < 0 ? rc : tasks_open(w, zdir, rel);
}

/* w->tasks_fd, current (tasks_current); 0 or negative. */
static int tasks_dir(struct worker *w)
{
    char zdir[PATH_MAX], rel[PATH_MAX], path[PATH_MAX];
    if (zerg_fsio_path(zdir, sizeof zdir, "%s/.zerg", w->o->project) < 0 ||
        zerg_fsio_path(rel, sizeof rel, "logs/%s/tasks", w->o->feature) < 0 ||
        zerg_fsio_path(path, sizeof path, "%s/%s", zdir, rel) < 0)
        return -1;
    return tasks_current(w, zdir, rel, path);
}

/* The usual case: the tasks directory kept open, the attempt's directory
 * and file made or opened below it.  0, or negative for the slow way. */
static int open_fast(struct worker *w, const char *id, int attempt,
                     struct wk_log *log)
{
    char name[PATH_MAX];
    struct stat st;
    if (zerg_fsio_path(name, sizeof name, "%s/attempt-%d.log", id, attempt) <
            0 ||
        tasks_dir(w) < 0)
        return -1;
    if (mkdirat(w->tasks_fd, id, 0755) < 0 && errno != EEXIST)
        return -1;
    /* Non-blocking: a FIFO in the way must not hold the open. */
    int fd = openat2_beneath(w->tasks_fd, name,
                             O_WRONLY | O_CREAT | O_APPEND | O_NONBLOCK, 0644);
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -1;
    }
    /* Back to blocking: a write to a full disk must fail, not EAGAIN. */
    fcntl(fd, F_SETFL, O_APPEND);
    log->fd = fd;
    log->size = st.st_size;
    return 0;
}

/* The slow way, by path: links in the way replaced, errors explained. */
static int open_slow(struct worker *w, const char *id, const char *dir,
                     int attempt, struct wk_log *log, struct zerg_err *err)
{
    char zdir[PATH_MAX], rel[PATH_MAX], path[PATH_MAX];
    int rc = zerg_fsio_path(zdir, sizeof zdir, "%s/.zerg", w->o->project);
    if (rc == 0)
        rc = zerg_fsio_path(rel, sizeof rel, "logs/%s/tasks/%s", w->o->feature,
                            id);
    if (rc == 0)
        rc = zerg_fsio_mkdirs_own(zdir, rel, 0755, err);
    if (rc == 0)
        rc = zerg_fsio_path(path, sizeof path, "%s/attempt-%d.log", dir,
                            attempt);
    if (rc < 0)
        return rc;
    int fd = zerg_fsio_open_append(path, err);
    if (fd == ZERG_ESYMLINK && unlink(path) == 0)
        fd = zerg_fsio_open_append(path, err); /* a planted link */
    if (fd < 0)
        return fd;
    log->fd = fd;
    log->size = -1;
    return 0;
}

int wk_log_open(struct worker *w, const char *id, int attempt, char *dir,
                size_t dir_size, struct wk_log *log, struct zerg_err *err)
{
    int rc = zerg_fsio_path(dir, dir_size, "%s/.zerg/logs/%s/tasks/%s",
                            w->o->project, w->o->feature, id);
    if (rc < 0)
        return zerg_err_set(err, rc, "%s", zerg_strerror(rc));
    log->fd = -1;
    log->size = -1;
    if (open_fast(w, id, attempt, log) == 0)
        return 0;
    return open_slow(w, id, dir, attempt, log, err);
}

void wk_log_write(struct wk_log *log, const char *s, size_t len)
{
    while (len > 0) {
        ssize_t n = write(log->fd, s, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            log->size = -1;
            return;
        }
        s += n;
        len -= (size_t)n;
        if (log->size >= 0)
            log->size += n;
    }
}

void wk_log_printf(struct wk_log *log, const char *fmt, ...)
{
    char buf[LOG_LINE_MAX], *text = buf;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof buf) {
        va_start(ap, fmt);
        n = vasprintf(&text, fmt, ap);
        va_end(ap);
    }
    if (n > 0)
        wk_log_write(log, text, (size_t)n);
    if (text != buf && n >= 0)
        free(text);
}

/* The attempt's result record, created empty below the kept tasks
 * directory (one an earlier run of the attempt left, or a link planted
 * there, is replaced): an fd to write, or negative. */
static int result_record(struct worker *w, const char *id, int attempt)
{
    char name[PATH_MAX];
    if (zerg_fsio_path(name, sizeof name, "%s/attempt-%d.result.json", id,
                       attempt) < 0 ||
        tasks_dir(w) < 0)
        return -1;
    for (int tries = 0; tries < 2; tries++) {
        int fd = openat2_beneath(
            w->tasks_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NONBLOCK, 0644);
        if (fd >= 0)
            return fd;
        if (errno != EEXIST || unlinkat(w->tasks_fd, name, 0) < 0)
            return -1;
    }
    return -1;
}

int wk_log_result(struct worker *w, const struct zerg_result *r, int flags,
                  struct zerg_err *err)
{
    char path[PATH_MAX], *text = NULL;
    size_t len = 0;
    int fd = -1;
    if (zerg_id_valid(r->task) &&
        zerg_proto_result_path(path, sizeof path, w->state_dir, r->task,
                               r->attempt) == 0 &&
        zerg_proto_encode_result(r, &text, &len, NULL) == 0 &&
        (fd = result_record(w, r->task, r->attempt)) >= 0) {
        int rc = zerg_fsio_write_linked(fd, path, text, len, flags, NULL);
        close(fd);
        free(text);
        if (rc == 0)
            return 0;
    } else {
        free(text);
    }
    return zerg_proto_write_result_flags(w->state_dir, r, flags, err);
}

void wk_log_dir_close(struct worker *w)
{
    if (w->tasks_fd >= 0)
        close(w->tasks_fd);
    w->tasks_fd = -1;
}
