/* git_spawn.c - the process plumbing under zerg_git_run: one git process
 * spawned with posix_spawn from an argv (never a shell), its stdin fed and
 * its stdout and stderr drained together with poll, so a large output on
 * one pipe cannot stall git while zerg waits on the other.  The
 * environment is built here too: the caller's minus every GIT_* variable,
 * so nothing in zerg's own environment redirects git (GIT_DIR,
 * GIT_CONFIG_PARAMETERS, GIT_EXTERNAL_DIFF ...). */
#include "git/git_internal.h"
#include "zerg/err.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* Only the tail of stderr is kept: the message quotes its last lines. */
#define STDERR_KEEP (64 * 1024)
/* A patch or listing larger than this is refused rather than exhausting
 * memory. */
#define STDOUT_MAX ((size_t)1 << 30)

/* Fixed variables: no password prompt that would hang a background
 * rush, untranslated messages so stderr can be classified, no optional
 * index lock taken by status, and no refs/replace/ object a worker could
 * plant to change what zerg reads.  The system config is read (it is
 * root's, and holds the user's LFS or git-crypt as often as ~/.gitconfig
 * does); the overrides of git_safe.c apply to it like to the rest. */
static const char *const FIXED_ENV[] = {
    "GIT_NO_REPLACE_OBJECTS=1",
    "GIT_TERMINAL_PROMPT=0",
    "GIT_OPTIONAL_LOCKS=0",
    "LC_ALL=C",
};
#define NFIXED (sizeof FIXED_ENV / sizeof FIXED_ENV[0])

char **git_env_new(const char *index_file)
{
    size_t n = 0, k = 0;
    while (environ && environ[n])
        n++;
    char **env = calloc(n + NFIXED + 2, sizeof *env);
    if (!env)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (!strncmp(environ[i], "GIT_", 4) ||
            !strncmp(environ[i], "LC_ALL=", 7))
            continue;
        if (!(env[k++] = strdup(environ[i])))
            goto fail;
    }
    for (size_t i = 0; i < NFIXED; i++)
        if (!(env[k++] = strdup(FIXED_ENV[i])))
            goto fail;
    if (index_file && asprintf(&env[k++], "GIT_INDEX_FILE=%s", index_file) < 0)
        goto fail;
    return env;
fail:
    env[k ? k - 1 : 0] = NULL;
    git_env_free(env);
    return NULL;
}

void git_env_free(char **env)
{
    if (!env)
        return;
    for (char **e = env; *e; e++)
        free(*e);
    free(env);
}

struct buf {
    char *data;
    size_t len, cap;
};

static int buf_add(struct buf *b, const char *src, size_t n, size_t max)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        if (cap > max + 1)
            return -EFBIG;
        char *d = realloc(b->data, cap);
        if (!d)
            return -ENOMEM;
        b->data = d, b->cap = cap;
    }
    memcpy(b->data + b->len, src, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

/* An empty output is still a string. */
static int buf_finish(struct buf *b)
{
    if (!b->data && !(b->data = calloc(1, 1)))
        return -ENOMEM;
    return 0;
}

/* stderr keeps its last STDERR_KEEP bytes. */
static int tail_add(struct buf *b, const char *src, size_t n)
{
    if (b->len + n > STDERR_KEEP && b->len > 0) {
        size_t drop = b->len + n - STDERR_KEEP;
        drop = drop > b->len ? b->len : drop;
        memmove(b->data, b->data + drop, b->len - drop);
        b->len -= drop;
    }
    return buf_add(b, src, n, STDERR_KEEP + n);
}

/* Reads what fd has; 1 at EOF, 0 when more may come, negative on error. */
static int drain(int fd, struct buf *b, int is_err)
{
    char chunk[16384];
    ssize_t r = read(fd, chunk, sizeof chunk);
    if (r == 0)
        return 1;
    if (r < 0)
        return errno == EINTR || errno == EAGAIN ? 0 : -errno;
    return is_err ? tail_add(b, chunk, (size_t)r)
                  : buf_add(b, chunk, (size_t)r, STDOUT_MAX);
}

/* Writes some of the input; 1 when all is written or the reader left. */
static int feed(int fd, const struct git_proc *p, size_t *off)
{
    ssize_t w = write(fd, p->input + *off, p->input_len - *off);
    if (w < 0)
        return errno == EINTR || errno == EAGAIN ? 0 : 1;
    *off += (size_t)w;
    return *off >= p->input_len;
}

struct pipes {
    int in, out, err; /* our ends, -1 when closed */
};

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* The poll loop over the three pipes until both outputs reach EOF. */
static int pump(struct pipes *pp, const struct git_proc *p, struct buf *out,
                struct buf *errb)
{
    size_t off = 0;
    int rc = 0;
    if (pp->in >= 0 && p->input_len == 0)
        close_fd(&pp->in);
    while (pp->out >= 0 || pp->err >= 0) {
        struct pollfd fds[3] = {
            {pp->out, POLLIN, 0}, {pp->err, POLLIN, 0}, {pp->in, POLLOUT, 0}};
        if (poll(fds, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        int done[3] = {0, 0, 0};
        if (fds[0].revents)
            done[0] = drain(pp->out, out, 0);
        if (fds[1].revents)
            done[1] = drain(pp->err, errb, 1);
        if (fds[2].revents)
            done[2] = (fds[2].revents & (POLLERR | POLLHUP))
                          ? 1
                          : feed(pp->in, p, &off);
        if (done[0] < 0 || done[1] < 0)
            rc = rc ? rc : (done[0] < 0 ? done[0] : done[1]);
        if (done[0])
            close_fd(&pp->out);
        if (done[1])
            close_fd(&pp->err);
        if (done[2])
            close_fd(&pp->in);
    }
    close_fd(&pp->in);
    return rc;
}

static int open_pipes(int in[2], int out[2], int errp[2], int want_in)
{
    in[0] = in[1] = out[0] = out[1] = errp[0] = errp[1] = -1;
    if (pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
        (want_in && pipe2(in, O_CLOEXEC) < 0))
        return -errno;
    if (want_in)
        fcntl(in[1], F_SETFL, O_NONBLOCK);
    return 0;
}

static int setup_actions(posix_spawn_file_actions_t *fa, int in[2], int out[2],
                         int errp[2])
{
    int rc = posix_spawn_file_actions_init(fa);
    if (rc)
        return -rc;
    if (in[0] >= 0)
        rc = posix_spawn_file_actions_adddup2(fa, in[0], 0);
    else
        rc = posix_spawn_file_actions_addopen(fa, 0, "/dev/null", O_RDONLY, 0);
    if (!rc)
        rc = posix_spawn_file_actions_adddup2(fa, out[1], 1);
    if (!rc)
        rc = posix_spawn_file_actions_adddup2(fa, errp[1], 2);
    return -rc;
}

/* Default signal dispositions and an empty mask in the child: the
 * orchestrator may block or ignore signals git relies on (SIGPIPE). */
static int setup_attr(posix_spawnattr_t *at)
{
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    int rc = posix_spawnattr_init(at);
    if (!rc)
        rc = posix_spawnattr_setsigmask(at, &none);
    if (!rc)
        rc = posix_spawnattr_setsigdefault(at, &all);
    if (!rc)
        rc = posix_spawnattr_setflags(at, POSIX_SPAWN_SETSIGMASK |
                                              POSIX_SPAWN_SETSIGDEF);
    return -rc;
}

static int wait_child(pid_t pid, int *status, int *sig)
{
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -errno;
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    *sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    return 0;
}

/* The directory goes to git as -C (posix_spawn has no portable chdir). */
static int spawn_child(struct git_proc *p, int in[2], int out[2], int errp[2],
                       pid_t *pid)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    int rc = setup_actions(&fa, in, out, errp);
    if (rc)
        return rc;
    rc = setup_attr(&at);
    if (!rc)
        rc = -posix_spawn(pid, p->argv[0], &fa, &at, (char *const *)p->argv,
                          (char *const *)p->envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    return rc;
}

/* Writing to a pipe git closed early must not kill zerg with SIGPIPE:
 * it is blocked in this thread while the pipes are pumped and a pending
 * one is consumed afterwards. */
static int pump_guarded(struct pipes *pp, const struct git_proc *p,
                        struct buf *out, struct buf *errb)
{
    sigset_t pipe_set, old, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    sigpending(&pending);
    int was_pending = sigismember(&pending, SIGPIPE);
    int rc = pump(pp, p, out, errb);
    sigpending(&pending);
    if (!was_pending && sigismember(&pending, SIGPIPE)) {
        struct timespec zero = {0, 0};
        sigtimedwait(&pipe_set, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

int git_spawn(struct git_proc *p, struct zerg_err *err)
{
    int in[2], out[2], errp[2];
    struct buf ob = {0}, eb = {0};
    pid_t pid;
    p->out = p->errtxt = NULL;
    int rc = open_pipes(in, out, errp, p->input != NULL);
    if (!rc)
        rc = spawn_child(p, in, out, errp, &pid);
    close_fd(&in[0]), close_fd(&out[1]), close_fd(&errp[1]);
    if (rc) {
        close_fd(&in[1]), close_fd(&out[0]), close_fd(&errp[0]);
        return zerg_err_set(err, rc, "cannot run %s: %s", p->argv[0],
                            strerror(-rc));
    }
    struct pipes pp = {in[1], out[0], errp[0]};
    int prc = pump_guarded(&pp, p, &ob, &eb);
    close_fd(&pp.out), close_fd(&pp.err);
    rc = wait_child(pid, &p->status, &p->signal);
    if (!rc)
        rc = prc;
    if (!rc && (buf_finish(&ob) || buf_finish(&eb)))
        rc = -ENOMEM;
    if (rc) {
        free(ob.data), free(eb.data);
        return zerg_err_set(err, rc, "cannot read the output of git: %s",
                            strerror(-rc));
    }
    p->out = ob.data, p->out_len = ob.len, p->errtxt = eb.data;
    return 0;
}

int git_spawn_piped(const char *const *argv, const char *const *envp,
                    pid_t *pid, int *to, int *from)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0) {
        int e = -errno;
        close_fd(&in[0]), close_fd(&in[1]), close_fd(&out[0]);
        return e;
    }
    int rc = -posix_spawn_file_actions_init(&fa), made = rc == 0;
    if (!rc)
        rc = -posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    if (!rc)
        rc = -posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    if (!rc)
        rc =
            -posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    if (!rc && !(rc = setup_attr(&at))) {
        rc = -posix_spawn(pid, argv[0], &fa, &at, (char *const *)argv,
                          (char *const *)envp);
        posix_spawnattr_destroy(&at);
    }
    if (made)
        posix_spawn_file_actions_destroy(&fa);
    close_fd(&in[0]), close_fd(&out[1]);
    if (rc) {
        close_fd(&in[1]), close_fd(&out[0]);
        return rc;
    }
    *to = in[1], *from = out[0];
    return 0;
}
