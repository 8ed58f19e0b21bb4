/* container_probe.c - talking to the docker/podman CLI: running one
 * command with a timeout, finding a runtime that really works, and checking
 * that the worker image exists.
 *
 * Every call is fork + execvp of an argv array (never a shell string), with
 * stdin from /dev/null, stdout and stderr captured, and a deadline: a hung
 * daemon costs a few seconds and a clear message, never a stuck run.  A
 * runtime counts as available only when `RUNTIME info` answers: a docker
 * client without a daemon is on PATH on many machines and must not be
 * picked by `container.runtime: auto`. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zerg/clock.h"
#include "zerg/config.h"
#include "zerg/err.h"
#include "zerg/launcher.h"
#include "zerg/text.h"

/* `info` of a local podman takes ~0.35 s idle, but several seconds on a
 * loaded 2-core machine (measured past 5 s while a build and the test
 * suite ran): 20 s tells a slow engine from a hung one without failing a
 * busy run, and only a daemon that hangs makes `--mode auto` wait that
 * long.  A timeout is reported as slowness, not as a broken engine. */
#define PROBE_TIMEOUT_NS (20 * ZERG_NS_PER_S)
#define IMAGE_TIMEOUT_NS (10 * ZERG_NS_PER_S)

/* ---- running one command ---- */

/* A capture buffer: keeps the head (stdout: names, ids) or the tail
 * (stderr: the last line is the error) of what a command printed. */
struct capture {
    char *buf;
    size_t size, len;
    int keep_tail;
};

static void capture_add(struct capture *c, const char *p, size_t n)
{
    if (!c->buf || c->size == 0)
        return;
    size_t room = c->size - 1;
    if (c->keep_tail && n >= room) {
        memcpy(c->buf, p + n - room, room);
        c->len = room;
    } else if (c->keep_tail && c->len + n > room) {
        size_t drop = c->len + n - room;
        memmove(c->buf, c->buf + drop, c->len - drop);
        memcpy(c->buf + c->len - drop, p, n);
        c->len = room;
    } else {
        size_t take = n < room - c->len ? n : room - c->len;
        memcpy(c->buf + c->len, p, take);
        c->len += take;
    }
    c->buf[c->len] = '\0';
}

/* A command's deadline is a real wall of time for a real process, so it
 * is measured on the system clock, never an injected one. */
static int64_t mono_ns(void)
{
    return zerg_clock_mono(&zerg_clock_system);
}

/* In the child: a clean signal state (the orchestrator blocks SIGCHLD and
 * friends for its signalfd; exec keeps the mask), then exec.  An exec
 * failure is reported as an errno through the close-on-exec pipe. */
static void exec_child(char *const argv[], int out, int errfd, int report)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    setpgid(0, 0);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null >= 0)
        dup2(null, 0);
    dup2(out, 1);
    dup2(errfd, 2);
    execvp(argv[0], argv);
    int e = errno;
    if (write(report, &e, sizeof e) < 0)
        _exit(127);
    _exit(127);
}

/* Reads what is available on fd into c; 0 at EOF, 1 otherwise. */
static int drain(int fd, struct capture *c)
{
    char chunk[4096];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n > 0) {
            capture_add(c, chunk, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        return n == 0 ? 0 : 1; /* EAGAIN: nothing more for now */
    }
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* Waits for the exec report: 0 when argv[0] is running, -errno if not. */
static int exec_result(int report)
{
    int e = 0;
    ssize_t got;
    do
        got = read(report, &e, sizeof e);
    while (got < 0 && errno == EINTR);
    return got == (ssize_t)sizeof e ? -e : 0;
}

/* Collects output until the child exits (its pidfd turns readable), then
 * takes what is left in the pipes: output written before the exit is there
 * already, and a grandchild holding the pipes open must not keep us
 * waiting.  Without a pidfd (kernels before 5.3) the pipes' EOF is the cue
 * instead.  Returns 0 with *wstatus, or -ETIMEDOUT after killing the
 * child's process group at the deadline. */
static int collect(pid_t pid, int pfd, int fds[2], struct capture cap[2],
                   int64_t deadline, int *wstatus)
{
    int exited = 0;
    while (!exited) {
        if (pfd < 0 && fds[0] < 0 && fds[1] < 0) {
            exited = waitpid(pid, wstatus, 0) == pid;
            break;
        }
        struct pollfd p[3] = {
            {fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}, {pfd, POLLIN, 0}};
        int64_t left = deadline - mono_ns();
        if (left <= 0)
            break;
        if (poll(p, 3, (int)(left / ZERG_NS_PER_MS) + 1) < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2; i++)
            if (fds[i] >= 0 && p[i].revents && drain(fds[i], &cap[i]) == 0)
                close_fd(&fds[i]);
        if (pfd >= 0 && p[2].revents)
            exited = waitpid(pid, wstatus, WNOHANG) == pid;
    }
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0)
            drain(fds[i], &cap[i]);
    if (exited)
        return 0;
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    waitpid(pid, wstatus, 0);
    return -ETIMEDOUT;
}

int zerg_container_exec(char *const argv[], int64_t timeout_ns, char *out,
                        size_t out_size, char *errout, size_t err_size,
                        int *wstatus)
{
    int po[2] = {-1, -1}, pe[2] = {-1, -1}, px[2] = {-1, -1}, pfd = -1;
    struct capture cap[2] = {{out, out_size, 0, 0}, {errout, err_size, 0, 1}};
    int rc = 0, st = 0;

    capture_add(&cap[0], "", 0);
    capture_add(&cap[1], "", 0);
    if (pipe2(po, O_CLOEXEC | O_NONBLOCK) < 0 ||
        pipe2(pe, O_CLOEXEC | O_NONBLOCK) < 0 || pipe2(px, O_CLOEXEC) < 0) {
        rc = -errno;
        goto out;
    }
    int64_t deadline = mono_ns() + timeout_ns;
    pid_t pid = fork();
    if (pid < 0) {
        rc = -errno;
        goto out;
    }
    if (pid == 0)
        exec_child(argv, po[1], pe[1], px[1]);
    setpgid(pid, pid);
    close_fd(&po[1]);
    close_fd(&pe[1]);
    close_fd(&px[1]);
    rc = exec_result(px[0]);
    if (rc < 0) {
        waitpid(pid, NULL, 0);
        goto out;
    }
    pfd = pidfd_open(pid, 0); /* -1 on kernels before 5.3: see collect */
    int fds[2] = {po[0], pe[0]};
    po[0] = pe[0] = -1;
    rc = collect(pid, pfd, fds, cap, deadline, &st);
    close_fd(&fds[0]);
    close_fd(&fds[1]);
    if (wstatus)
        *wstatus = st;
out:
    close_fd(&pfd);
    for (int i = 0; i < 2; i++) {
        close_fd(&po[i]);
        close_fd(&pe[i]);
        close_fd(&px[i]);
    }
    return rc;
}

/* ---- messages ---- */

/* Why a finished command failed, in a few words: the runtime's last
 * stderr line, else its exit status. */
static void failure_text(int rc, int st, const char *errout, int64_t tmo_ns,
                         char *buf, size_t size)
{
    char line[512];
    if (rc == -ETIMEDOUT) {
        snprintf(buf, size,
                 "no answer within %g s: the engine is hung or the machine "
                 "is very loaded; try again",
                 zerg_ns_to_s(tmo_ns));
        return;
    }
    if (rc < 0) {
        snprintf(buf, size, "%s", strerror(-rc));
        return;
    }
    zerg_last_line(errout, line, sizeof line);
    if (line[0])
        snprintf(buf, size, "%s", line);
    else if (WIFEXITED(st))
        snprintf(buf, size, "exit code %d", WEXITSTATUS(st));
    else
        snprintf(buf, size, "killed by signal %d", WTERMSIG(st));
}

static int ok_status(int rc, int st)
{
    return rc == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* ---- finding a runtime ---- */

static void rt_fill(struct zerg_container_rt *rt, const char *argv0)
{
    const char *slash = strrchr(argv0, '/');
    memset(rt, 0, sizeof *rt);
    snprintf(rt->path, sizeof rt->path, "%s", argv0);
    snprintf(rt->name, sizeof rt->name, "%s", slash ? slash + 1 : argv0);
}

/* Probes one candidate: `--version` (found? which flavour?) then `info`
 * (does its engine answer?).  0, or ZERG_ENOTFOUND with why set. */
static int probe_one(const char *argv0, struct zerg_container_rt *rt, char *why,
                     size_t why_size)
{
    char out[512], errout[2048], text[600];
    int st = 0;

    rt_fill(rt, argv0);
    char *ver[] = {rt->path, "--version", NULL};
    int rc = zerg_container_exec(ver, PROBE_TIMEOUT_NS, out, sizeof out, errout,
                                 sizeof errout, &st);
    if (rc == -ENOENT || rc == -EACCES) {
        snprintf(why, why_size, "%s: %s", rt->name,
                 rc == -ENOENT ? (strchr(argv0, '/') ? "no such file"
                                                     : "not found on PATH")
                               : "not executable");
        return ZERG_ENOTFOUND;
    }
    if (!ok_status(rc, st)) {
        failure_text(rc, st, errout, PROBE_TIMEOUT_NS, text, sizeof text);
        snprintf(why, why_size, "%s: `%s --version` fails (%s)", rt->name,
                 rt->name, text);
        return ZERG_ENOTFOUND;
    }
    for (char *p = out; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    rt->podman = strstr(out, "podman") != NULL;
    zerg_last_line(out, rt->version, sizeof rt->version);

    char *info[] = {rt->path, "info", NULL};
    rc = zerg_container_exec(info, PROBE_TIMEOUT_NS, NULL, 0, errout,
                             sizeof errout, &st);
    if (!ok_status(rc, st)) {
        failure_text(rc, st, errout, PROBE_TIMEOUT_NS, text, sizeof text);
        if (rt->podman)
            snprintf(why, why_size, "%s: found but `%s info` fails (%s)",
                     rt->name, rt->name, text);
        else
            snprintf(why, why_size, "%s: client found but no daemon (%s)",
                     rt->name, text);
        return ZERG_ENOTFOUND;
    }
    snprintf(why, why_size, "%s answers (%s)", rt->name, rt->version);
    return 0;
}

int zerg_container_resolve(const char *setting, struct zerg_container_rt *rt,
                           char *why, size_t why_size)
{
    static const char *const autos[] = {"podman", "docker"};
    char reasons[2][512];

    if (setting && setting[0] && strcmp(setting, "auto") != 0)
        return probe_one(setting, rt, why, why_size);
    for (int i = 0; i < 2; i++) {
        if (probe_one(autos[i], rt, reasons[i], sizeof reasons[i]) == 0) {
            if (i == 0)
                snprintf(why, why_size, "%s", reasons[0]);
            else
                snprintf(why, why_size, "%s; not podman (%s)", reasons[1],
                         reasons[0]);
            return 0;
        }
    }
    snprintf(why, why_size, "no working container runtime: %s; %s", reasons[0],
             reasons[1]);
    return ZERG_ENOTFOUND;
}

/* ---- the image ---- */

static int says_missing(const char *errout)
{
    static const char *const words[] = {"no such image", "image not known",
                                        "not found"};
    char low[2048];
    size_t i = 0;
    for (; errout && errout[i] && i < sizeof low - 1; i++)
        low[i] = (char)tolower((unsigned char)errout[i]);
    low[i] = '\0';
    for (size_t w = 0; w < sizeof words / sizeof *words; w++)
        if (strstr(low, words[w]))
            return 1;
    return 0;
}

int zerg_container_image_exists(const struct zerg_container_rt *rt,
                                const char *image, char *why, size_t why_size)
{
    char errout[2048], text[600];
    int st = 0;
    char *argv[] = {(char *)rt->path, "image",       "inspect", "--format",
                    "{{.Id}}",        (char *)image, NULL};
    int rc = zerg_container_exec(argv, IMAGE_TIMEOUT_NS, NULL, 0, errout,
                                 sizeof errout, &st);
    if (ok_status(rc, st)) {
        snprintf(why, why_size, "image '%s' is present", image);
        return 1;
    }
    if (rc == 0 && says_missing(errout)) {
        snprintf(why, why_size,
                 "image '%s' not found for %s: build it with `make image` "
                 "(or set container.image)",
                 image, rt->name);
        return 0;
    }
    failure_text(rc, st, errout, IMAGE_TIMEOUT_NS, text, sizeof text);
    snprintf(why, why_size, "cannot check image '%s' with %s: %s", image,
             rt->name, text);
    return rc < 0 ? rc : -EIO;
}

int zerg_container_available(const struct zerg_config *cfg, char *why,
                             size_t why_size)
{
    struct zerg_container_rt rt;
    char text[1024];
    const char *image = cfg->container_image && cfg->container_image[0]
                            ? cfg->container_image
                            : "zerg-worker";

    if (zerg_container_resolve(cfg->container_runtime, &rt, text, sizeof text) <
        0) {
        snprintf(why, why_size, "%s", text);
        return 0;
    }
    int r = zerg_container_image_exists(&rt, image, text, sizeof text);
    if (r == 1)
        snprintf(why, why_size, "%s works and image '%s' is present", rt.name,
                 image);
    else
        snprintf(why, why_size, "%s works but %s", rt.name, text);
    return r == 1;
}
