/* orch_loop.c - the orchestrator's event loop.
 *
 * One poll(2) over four sources, no fixed polling interval:
 *   - a signalfd: SIGCHLD (a worker exited), SIGTERM/SIGINT/SIGHUP (a
 *     graceful stop: zerg_orch_request_stop; a second one forces);
 *   - inotify on .zerg/state: heartbeats, results and retry requests
 *     arrive as renames (IN_MOVED_TO) of atomically written files.  Only
 *     the renames are watched: IN_CLOSE_WRITE would add an event, and
 *     often a wake-up, per file for the temp file closed before each
 *     rename, which is of no use: every zerg writer of the run
 *     directory (workers, `zerg retry`) renames into place.  A heartbeat
 *     written in place is still read by the periodic scan, a result when
 *     its worker's heartbeat says it went idle;
 *   - the workers' stdout, where the launcher relays it: the same
 *     heartbeats and results as event lines (orch_stdio.c), read before
 *     the exits, so a worker's last result precedes its end;
 *   - the timeout: the nearest deadline zerg_orch_tick asked for.
 * The clock is read once per iteration and passed down.
 *
 * inotify sees only this machine's writes.  Where workers write from other
 * machines (the run directory on NFS, CIFS, a FUSE or cluster filesystem,
 * as statfs tells) or state.watch says poll, the run directory is
 * rescanned every state.poll_interval_ms instead, the way a lost-events
 * overflow is recovered from; the stdout lines still come at once. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/vfs.h>
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

/* Several signals per read; one that returned fewer than asked emptied
 * the queue (no read more to be told EAGAIN). */
#define SIGNALS_PER_READ 8

static void drain_signals(struct zerg_orch *o, int sfd, int64_t now)
{
    struct signalfd_siginfo si[SIGNALS_PER_READ];
    ssize_t len;

    while ((len = read(sfd, si, sizeof si)) >= (ssize_t)sizeof *si) {
        size_t n = (size_t)len / sizeof *si;
        for (size_t i = 0; i < n; i++) {
            if (si[i].ssi_signo == SIGCHLD)
                continue; /* reaped below, once for all */
            /* The first one names the exit code: 130 for Ctrl-C, 143 for
             * a SIGTERM (`zerg stop`), as shells expect of a signalled
             * run, and stops gracefully (also when the rush was stopping
             * by itself: a timeout, --halt now); a second one forces. */
            int again = o->stop_signal != 0;
            if (!again)
                o->stop_signal = (int)si[i].ssi_signo;
            zerg_orch_request_stop(o, again, now);
        }
        if (n < SIGNALS_PER_READ)
            break;
    }
    reap(o, now);
}

/* Filesystems whose remote writes inotify never reports (statfs f_type). */
static int remote_fs(long type)
{
    static const long remote[] = {
        0x6969,     /* NFS */
        0x517B,     /* SMB */
        0xFF534D42, /* CIFS */
        0xFE534D42, /* SMB2 */
        0x65735546, /* FUSE (sshfs, s3fs, ...) */
        0x00C36400, /* Ceph */
        0x01021997, /* 9P */
        0x5346414F, /* AFS */
        0x01161970, /* GFS2 */
        0x0BD00BD0, /* Lustre */
        0x47504653, /* GPFS */
        0x7461636F, /* OCFS2 */
    };
    for (size_t i = 0; i < sizeof remote / sizeof *remote; i++)
        if ((type & 0xFFFFFFFFL) == remote[i])
            return 1;
    return 0;
}

/* 1 when the run directory is to be polled rather than watched. */
static int must_poll(const struct zerg_orch *o)
{
    struct statfs sf;
    if (o->cfg->state_watch == ZERG_WATCH_POLL)
        return 1;
    if (o->cfg->state_watch == ZERG_WATCH_INOTIFY)
        return 0;
    return statfs(o->run_dir, &sf) == 0 && remote_fs((long)sf.f_type);
}

/* Polling: what inotify would have told, found by comparing each
 * directory entry's (name, inode, mtime, size) with the previous scan's;
 * the files are replaced by rename, so a rewrite is a new inode. */
struct scan {
    uint64_t *fp; /* fingerprints of the previous scan, sorted */
    size_t n, cap;
};

static uint64_t fingerprint(const char *name, const struct stat *st)
{
    uint64_t h = 1469598103934665603u;
    for (const char *p = name; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211u;
    uint64_t v[3] = {(uint64_t)st->st_ino,
                     (uint64_t)st->st_mtim.tv_sec * 1000000000u +
                         (uint64_t)st->st_mtim.tv_nsec,
                     (uint64_t)st->st_size};
    for (int i = 0; i < 3; i++)
        h = (h ^ v[i]) * 1099511628211u;
    return h;
}

static int cmp_fp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void poll_dir(struct zerg_orch *o, struct scan *sc, int64_t now)
{
    DIR *d = opendir(o->run_dir);
    struct dirent *e;
    struct scan next = {0};
    while (d && (e = readdir(d))) {
        struct stat st;
        if (e->d_name[0] == '.' ||
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        uint64_t fp = fingerprint(e->d_name, &st);
        if (next.n == next.cap) {
            size_t cap = next.cap ? next.cap * 2 : 64;
            uint64_t *v = realloc(next.fp, cap * sizeof *v);
            if (!v)
                break;
            next.fp = v;
            next.cap = cap;
        }
        next.fp[next.n++] = fp;
        if (!sc->n || !bsearch(&fp, sc->fp, sc->n, sizeof fp, cmp_fp))
            zerg_orch_file_changed(o, e->d_name, now);
    }
    if (d)
        closedir(d);
    if (next.n)
        qsort(next.fp, next.n, sizeof *next.fp, cmp_fp);
    free(sc->fp);
    *sc = next;
}

static void rescan(struct zerg_orch *o, int64_t now)
{
    orch_scan_results(o, now);
    o->next_hb_scan_mono_ns = now;
}

/* inotify returns whole events, as many as fit: a read that left room
 * for one more of the largest emptied the queue, and the loop goes back
 * to poll instead of reading again to be told EAGAIN. */
#define INOTIFY_EVENT_MAX (sizeof(struct inotify_event) + NAME_MAX + 1)

static void drain_inotify(struct zerg_orch *o, int ifd, int64_t now)
{
    char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t len;

    while ((len = read(ifd, buf, sizeof buf)) > 0) {
        for (char *p = buf; p < buf + len;) {
            const struct inotify_event *ev = (const void *)p;
            if (ev->mask & IN_Q_OVERFLOW) {
                /* Lost events: rescan results and heartbeats. */
                rescan(o, now);
            } else if (ev->len > 0) {
                zerg_orch_file_changed(o, ev->name, now);
            }
            p += sizeof *ev + ev->len;
        }
        if ((size_t)len + INOTIFY_EVENT_MAX <= sizeof buf)
            break;
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

/* ifd < 0: polling every poll_ns. */
static void loop(struct zerg_orch *o, const struct zerg_clock *clock, int sfd,
                 int ifd, int64_t poll_ns)
{
    int64_t next_scan = 0;
    struct scan sc = {0};
    struct orch_stdio *io = orch_stdio_new(); /* NULL: files only */
    while (!zerg_orch_done(o)) {
        int64_t now = zerg_clock_mono(clock);
        if (ifd < 0 && now >= next_scan) {
            poll_dir(o, &sc, now);
            next_scan = now + poll_ns;
        }
        int64_t wake = zerg_orch_tick(o, now);
        orch_stdio_adopt(io, o); /* the workers it just spawned */
        if (zerg_orch_done(o))
            break;
        if (ifd < 0 && next_scan < wake)
            wake = next_scan;
        struct pollfd pfd[2] = {{.fd = sfd, .events = POLLIN},
                                {.fd = ifd, .events = POLLIN}};
        int ms = poll_ms(o, wake, now, zerg_clock_mono(clock));
        if (orch_stdio_poll(io, pfd, 2, ms) < 0 && errno != EINTR)
            break;
        now = zerg_clock_mono(clock);
        orch_stdio_drain(io, o, now);
        if (pfd[0].revents & POLLIN)
            drain_signals(o, sfd, now);
        if (pfd[1].revents & POLLIN)
            drain_inotify(o, ifd, now);
        orch_intake_took(o, now, zerg_clock_mono(clock));
        if (o->o.on_frame)
            o->o.on_frame(o->o.frame_ctx, o, now);
    }
    orch_stdio_free(io, o);
    free(sc.fp);
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
    int polling = must_poll(o);
    int ifd = polling ? -1 : inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (sfd < 0 || (!polling && ifd < 0) ||
        (!polling && inotify_add_watch(ifd, o->run_dir, IN_MOVED_TO) < 0)) {
        zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_ERROR, "rush_failed",
                       NULL, NULL, "Cannot watch %s: %s", o->run_dir,
                       strerror(errno));
        goto out;
    }
    int64_t poll_ns = (int64_t)o->cfg->state_poll_interval_ms * ZERG_NS_PER_MS;
    if (polling)
        zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_INFO, "state_watch",
                       NULL, NULL, "Polling %s every %d ms (state.watch %s)",
                       o->run_dir, o->cfg->state_poll_interval_ms,
                       o->cfg->state_watch == ZERG_WATCH_POLL
                           ? "poll"
                           : "auto: a network or FUSE filesystem");
    /* Results that landed before the watch existed. */
    orch_scan_results(o, zerg_clock_mono(clock));
    loop(o, clock, sfd, ifd, poll_ns > 0 ? poll_ns : 100 * ZERG_NS_PER_MS);
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
