/* orch_loop.c - the orchestrator's event loop.
 *
 * One poll(2) over three sources, no fixed polling interval:
 *   - a signalfd: SIGCHLD (a worker exited), SIGTERM/SIGINT/SIGHUP (stop;
 *     a second one forces);
 *   - inotify on .zerg/state: heartbeats, results and retry requests
 *     arrive as renames (IN_MOVED_TO) of atomically written files;
 *   - the timeout: the nearest deadline zerg_orch_tick asked for.
 * The clock is read once per iteration and passed down. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "orch_internal.h"
#include "zerg/clock.h"
#include "zerg/err.h"

#define MAX_WORKERS_REAP 1024

static void reap(struct zerg_orch *o, int64_t now)
{
    pid_t pids[MAX_WORKERS_REAP];
    size_t n = zerg_orch_pids(o, pids, MAX_WORKERS_REAP);

    /* Wait for our workers by pid only: the container launcher runs the
     * runtime CLI as short-lived children of its own and reaps them. */
    for (size_t i = 0; i < n; i++) {
        int status;
        pid_t r = waitpid(pids[i], &status, WNOHANG);
        if (r == pids[i])
            zerg_orch_child_exited(o, r, status, now);
    }
}

static void drain_signals(struct zerg_orch *o, int sfd, int64_t now)
{
    struct signalfd_siginfo si;

    while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        if (si.ssi_signo == SIGCHLD)
            continue; /* reaped below, once for all */
        /* The first one names the exit code: 130 for Ctrl-C, 143 for a
         * SIGTERM (`zerg stop`), as shells expect of a signalled run. */
        if (!o->stop_signal)
            o->stop_signal = (int)si.ssi_signo;
        zerg_orch_request_stop(o, o->stopping > 0, now);
    }
    reap(o, now);
}

static void drain_inotify(struct zerg_orch *o, int ifd, int64_t now)
{
    char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t len;

    while ((len = read(ifd, buf, sizeof buf)) > 0) {
        for (char *p = buf; p < buf + len;) {
            const struct inotify_event *ev = (const void *)p;
            if (ev->mask & IN_Q_OVERFLOW) {
                /* Lost events: rescan results and heartbeats. */
                orch_scan_results(o, now);
                o->next_hb_scan_mono_ns = now;
            } else if (ev->len > 0) {
                zerg_orch_file_changed(o, ev->name, now);
            }
            p += sizeof *ev + ev->len;
        }
    }
}

/* How long poll may sleep: until the nearest deadline, at most 1 s, and
 * at most one frame of the live view. */
static int poll_ms(const struct zerg_orch *o, int64_t wake, int64_t now,
                   int64_t now_again)
{
    int64_t ms = (wake - now_again) / ZERG_NS_PER_MS;
    if (ms < 0)
        ms = 0;
    if (wake > now && ms == 0)
        ms = 1;
    if (ms > 1000)
        ms = 1000;
    if (o->o.on_frame && o->o.frame_ns > 0 &&
        ms > o->o.frame_ns / ZERG_NS_PER_MS)
        ms = o->o.frame_ns / ZERG_NS_PER_MS;
    return (int)ms;
}

static void loop(struct zerg_orch *o, const struct zerg_clock *clock, int sfd,
                 int ifd)
{
    while (!zerg_orch_done(o)) {
        int64_t now = zerg_clock_mono(clock);
        int64_t wake = zerg_orch_tick(o, now);
        if (zerg_orch_done(o))
            break;
        struct pollfd pfd[2] = {{.fd = sfd, .events = POLLIN},
                                {.fd = ifd, .events = POLLIN}};
        if (poll(pfd, 2, poll_ms(o, wake, now, zerg_clock_mono(clock))) < 0 &&
            errno != EINTR)
            break;
        now = zerg_clock_mono(clock);
        if (pfd[0].revents & POLLIN)
            drain_signals(o, sfd, now);
        if (pfd[1].revents & POLLIN)
            drain_inotify(o, ifd, now);
        if (o->o.on_frame)
            o->o.on_frame(o->o.frame_ctx, o, now);
    }
}

int zerg_orch_run(struct zerg_orch *o, const struct zerg_clock *clock)
{
    sigset_t mask, old;
    int rc = ZERG_EXIT_FAIL;

    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &mask, &old);
    int sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    int ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (sfd < 0 || ifd < 0 ||
        inotify_add_watch(ifd, o->run_dir, IN_MOVED_TO | IN_CLOSE_WRITE) < 0) {
        zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_ERROR, "rush_failed",
                       NULL, NULL, "Cannot watch %s: %s", o->run_dir,
                       strerror(errno));
        goto out;
    }
    /* Results that landed before the watch existed. */
    orch_scan_results(o, zerg_clock_mono(clock));
    loop(o, clock, sfd, ifd);
    rc = zerg_orch_exit_code(o);
out:
    if (ifd >= 0)
        close(ifd);
    if (sfd >= 0)
        close(sfd);
    /* The stop signals stay blocked: once the rush is over, a SIGTERM or
     * Ctrl-C that arrives while the summary is printed must not turn its
     * exit code into 143 or 130.  Only SIGCHLD goes back as it was. */
    sigset_t after = old;
    sigaddset(&after, SIGTERM);
    sigaddset(&after, SIGINT);
    sigaddset(&after, SIGHUP);
    sigprocmask(SIG_SETMASK, &after, NULL);
    return rc;
}
