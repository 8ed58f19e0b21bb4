/* git_coproc.c - a git process kept running for many requests: `git
 * diff-tree --stdin` and `git update-ref --stdin` answer a merge's
 * questions over a pipe where each was a process of its own (a process
 * is some 2-3 ms; a request on the pipe some tens of microseconds).
 *
 * The same guarantee as every zerg git call (git_run.c): the process is
 * started with the overrides of the configuration scan of its directory,
 * and before each request the scan is taken again (git_scan.c reuses it
 * while no file it depends on changed): when it differs, the process is
 * stopped and a new one started under the new overrides, so nothing a
 * worker wrote into the config since reaches a request.
 *
 * Any trouble (the process gone, an answer that is not what the protocol
 * says, no answer within COPROC_WAIT_MS) stops the process; the caller
 * then asks again the plain way, with a process of its own, which says
 * what went wrong. */
#include "git/git_coproc.h"
#include "git/git_internal.h"
#include "zerg/err.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define COPROC_WAIT_MS 60000
#define COPROC_READ 16384

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

void git_coproc_stop(struct git_coproc *c)
{
    close_fd(&c->to); /* at EOF git ends: a transaction open is aborted */
    close_fd(&c->from);
    if (c->pid > 0) {
        int st;
        pid_t r = 0;
        for (int i = 0; i < 500 && (r = waitpid(c->pid, &st, WNOHANG)) == 0;
             i++)
            nanosleep(&(struct timespec){0, 10000000}, NULL);
        if (r == 0) {
            kill(c->pid, SIGKILL);
            while (waitpid(c->pid, &st, 0) < 0 && errno == EINTR)
                ;
        }
    }
    c->pid = 0;
    free(c->list);
    c->list = NULL;
    c->list_len = c->len = c->off = 0;
}

void git_coproc_free(struct git_coproc *c)
{
    git_coproc_stop(c);
    free(c->buf);
    c->buf = NULL;
    c->cap = 0;
}

/* 1 when the running process was started under the scan dir has now. */
static int still_fresh(const struct zerg_git *g, const struct git_coproc *c)
{
    char *list = NULL;
    size_t len = 0;
    struct zerg_err ignored = {0};
    if (git_scan_config(g, c->dir, &list, &len, &ignored))
        return 0;
    int same = len == c->list_len && !memcmp(list, c->list, len);
    free(list);
    return same;
}

int git_coproc_ensure(const struct zerg_git *g, struct git_coproc *c,
                      const char *dir, const char *const *args,
                      struct zerg_err *err)
{
    if (c->pid > 0 && !strcmp(c->dir, dir) && still_fresh(g, c))
        return 0;
    git_coproc_stop(c);
    struct git_argv a;
    int rc = git_argv_build(g, dir, args, &a, err);
    if (rc)
        return rc;
    char **env = git_env_new(NULL);
    rc = env ? git_spawn_piped(a.argv, (const char *const *)env, &c->pid,
                               &c->to, &c->from)
             : -ENOMEM;
    git_env_free(env);
    if (rc) {
        git_argv_free(&a);
        c->pid = 0;
        return zerg_err_set(err, rc, "cannot start git: %s", strerror(-rc));
    }
    snprintf(c->dir, sizeof c->dir, "%s", dir);
    c->list = a.list, c->list_len = a.list_len;
    a.list = NULL;
    git_argv_free(&a);
    return 0;
}

/* Writes all of data; SIGPIPE is held off as in git_spawn.c. */
int git_coproc_send(struct git_coproc *c, const char *data, size_t len)
{
    sigset_t pipe_set, old, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    sigpending(&pending);
    int was_pending = sigismember(&pending, SIGPIPE), rc = 0;
    for (size_t off = 0; off < len && !rc;) {
        ssize_t w = write(c->to, data + off, len - off);
        if (w < 0 && errno != EINTR)
            rc = -errno;
        else if (w > 0)
            off += (size_t)w;
    }
    sigpending(&pending);
    if (!was_pending && sigismember(&pending, SIGPIPE))
        sigtimedwait(&pipe_set, NULL, &(struct timespec){0, 0});
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc)
        git_coproc_stop(c);
    return rc;
}

/* More of the output into the buffer: 0, or negative (EOF: -EPIPE). */
static int fill(struct git_coproc *c)
{
    if (c->off > 0) { /* what was handed out is done with */
        memmove(c->buf, c->buf + c->off, c->len - c->off);
        c->len -= c->off, c->off = 0;
    }
    if (c->len + COPROC_READ + 1 > c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 4 * COPROC_READ;
        char *b = realloc(c->buf, cap);
        if (!b)
            return -ENOMEM;
        c->buf = b, c->cap = cap;
    }
    struct pollfd p = {c->from, POLLIN, 0};
    int n;
    while ((n = poll(&p, 1, COPROC_WAIT_MS)) < 0 && errno == EINTR)
        ;
    if (n <= 0)
        return n < 0 ? -errno : -ETIMEDOUT;
    ssize_t r;
    while ((r = read(c->from, c->buf + c->len, COPROC_READ)) < 0 &&
           errno == EINTR)
        ;
    if (r <= 0)
        return r < 0 ? -errno : -EPIPE;
    c->len += (size_t)r;
    return 0;
}

int git_coproc_record(struct git_coproc *c, char term, const char **rec,
                      size_t *len)
{
    for (;;) {
        char *start = c->buf ? c->buf + c->off : NULL;
        char *end = start ? memchr(start, term, c->len - c->off) : NULL;
        if (end) {
            *end = '\0';
            *rec = start;
            *len = (size_t)(end - start);
            c->off += *len + 1;
            return 0;
        }
        int rc = fill(c);
        if (rc) {
            git_coproc_stop(c);
            return rc;
        }
    }
}
