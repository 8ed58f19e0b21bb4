/* worker_wait.c - the worker's wait loop (DESIGN.md sections 8 and 12):
 * everything that happens while the worker waits, idle for an assignment
 * (worker.c) or busy for a stage to end (worker_run.c).
 *
 * Single-threaded around one poll(2) over:
 *   - a signalfd for SIGTERM/SIGINT/SIGHUP (end the task: SIGTERM, the
 *     stop grace, SIGKILL (worker_run.c); say "exiting");
 *   - inotify on the state directory (our assignment arrives as a rename)
 *     and on the running task's log directory (its progress file);
 *   - the pidfd of the running stage;
 *   - a tick of at most 500 ms that also re-stats the assignment (inotify
 *     can miss events across a container bind mount), reads the lease and
 *     the progress file, and a heartbeat timer.
 *
 * When a stage ends, what it left behind that escaped its process group
 * (setsid daemons, re-parented to the worker) is killed here too.  When
 * the attempt ends its log directory is no longer watched, and the
 * IN_IGNORED that says so is read at once, not woken up for.
 *
 * At every tick the orchestrator must still be there: its pid, when
 * known, and the lease, whose seq must keep changing (the only sign of
 * life across a container boundary).
 *
 * Where the launcher relays our stdout (ZERG_STDIO_EVENTS=1), each
 * heartbeat and result also goes there as one event line (DESIGN §15),
 * after its file: the orchestrator learns of it at once, from any node,
 * with or without inotify.  Stdout then carries nothing else.  SIGPIPE
 * is ignored for the worker's whole life (worker.c), so a reader that
 * went away turns the events off instead of killing the worker; every
 * stage child sets it back to its default before the exec.
 *
 * This file calls nothing in worker.c or worker_run.c; both call into
 * it. */
#include "worker_wait.h"
#include "worker_agent.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "zerg/fsio.h"
#include "zerg/lock.h"

/* Without a pidfd (kernels before 5.3) a running stage is polled. */
#define WORKER_CHILD_POLL_NS (20 * ZERG_NS_PER_MS)
/* How long the file of a beat sent as a line alone may lag behind it. */
#define WORKER_LINE_BEAT_NS (50 * ZERG_NS_PER_MS)
#define PROGRESS_MAX_BYTES 64
/* Stray sweeps: children killed per pass, passes at most. */
#define STRAY_BATCH 256
#define STRAY_ROUNDS 64
/* How long a stage killed by a stop signal waits for the worker's own. */
#define STOP_SIGNAL_GRACE_MS 200

/* ---- event lines on stdout ----------------------------------------- */

/* A partly written line gets this long to be finished (only lines over
 * PIPE_BUF can be cut; none of ours is in practice). */
#define EVENT_FINISH_TRIES 100
#define EVENT_FINISH_WAIT_MS 10

/* The event fd: -2 before the first event, -1 when events are off.  One
 * worker per process, so one fd. */
static int events_fd = -2;

/* At the first event: stdout becomes the events' private fd, and fd 1
 * the log (stderr), so nothing else -- our own output, a library's, a
 * child's -- can ever interleave with an event line. */
static int events_open(void)
{
    if (events_fd != -2)
        return events_fd;
    events_fd = -1;
    const char *on = getenv("ZERG_STDIO_EVENTS");
    int wanted = on && strcmp(on, "1") == 0;
    unsetenv("ZERG_STDIO_EVENTS"); /* ours: not for the tasks we start */
    if (!wanted)
        return -1;
    int fd = fcntl(1, F_DUPFD_CLOEXEC, 3);
    if (fd < 0)
        return -1;
    if (dup2(2, 1) < 0) {
        close(fd);
        return -1;
    }
    /* A reader that stops reading must not stop the worker: a full pipe
     * drops the line (its file carries it). */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    events_fd = fd;
    return fd;
}

/* Writes one whole line or none of it: 1, 0 when the pipe was full (the
 * line is lost), or -1 when the fd is broken (EPIPE: nobody reads any
 * more; a line cut and not finished), after which events stay off. */
static int events_put(const char *line, size_t len)
{
    size_t off = 0;
    int tries = 0;
    while (off < len) {
        ssize_t n = write(events_fd, line + off, len - off);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN && off == 0)
            return 0; /* full: this line is lost, the pipe stays whole */
        if (n < 0 && errno == EAGAIN && tries++ < EVENT_FINISH_TRIES) {
            struct pollfd pfd = {.fd = events_fd, .events = POLLOUT};
            poll(&pfd, 1, EVENT_FINISH_WAIT_MS);
            continue;
        }
        return -1;
    }
    return 1;
}

/* Sends line; 1 when it went.  A gone reader (EPIPE; SIGPIPE is ignored)
 * turns events off, it does not kill the worker. */
static int events_send(char *line, size_t len)
{
    int rc = events_put(line, len);
    if (rc < 0) {
        close(events_fd);
        events_fd = -1;
    }
    free(line);
    return rc > 0;
}

void wk_events_start(void)
{
    (void)events_open();
}

/* 1 when the line went. */
static int event_heartbeat(const struct zerg_heartbeat *hb)
{
    char *line;
    size_t len;
    return events_open() >= 0 &&
           zerg_proto_event_heartbeat(hb, &line, &len) == 0 &&
           events_send(line, len);
}

void wk_event_result(const struct zerg_result *r)
{
    char *line;
    size_t len;
    if (events_open() >= 0 && zerg_proto_event_result(r, &line, &len) == 0)
        events_send(line, len);
}

/* ---- heartbeat ------------------------------------------------------ */

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* Writes the next heartbeat; a failure is reported once on stderr (the
 * orchestrator will call us stale, which is the truth). */
int wk_beat(struct worker *w)
{
    struct zerg_err e = {0};
    int64_t now = wk_now_ns(w);
    w->hb.seq++;
    w->hb.timestamp_ns = zerg_clock_wall(w->clock);
    w->next_hb_ns = now + w->hb_interval_ns;
    int rc = zerg_proto_write_heartbeat(w->state_dir, &w->hb, &e);
    /* Also when the file could not be written: the line still says we
     * are alive. */
    event_heartbeat(&w->hb);
    if (rc < 0 && !w->hb_failed) {
        fprintf(stderr, "zerg worker %d: %s\n", w->o->slot, e.msg);
        w->hb_failed = 1;
    } else if (rc == 0) {
        w->hb_failed = 0;
    }
    return rc;
}

void wk_step(struct worker *w, const char *step, int progress)
{
    snprintf(w->hb.step, sizeof w->hb.step, "%s", step);
    w->hb.progress_pct = progress;
    wk_beat(w);
}

void wk_step_line(struct worker *w, const char *step, int progress)
{
    snprintf(w->hb.step, sizeof w->hb.step, "%s", step);
    w->hb.progress_pct = progress;
    w->hb.seq++;
    w->hb.timestamp_ns = zerg_clock_wall(w->clock);
    if (!event_heartbeat(&w->hb)) {
        wk_beat(w); /* no line: the file carries the beat, now */
        return;
    }
    w->next_hb_ns = min64(w->next_hb_ns, wk_now_ns(w) + WORKER_LINE_BEAT_NS);
}

/* ---- leaving -------------------------------------------------------- */

/* Records the exit code and, for a failure, why. */
void wk_exit(struct worker *w, int code, const char *fmt, ...)
{
    if (w->exit_code >= 0)
        return;
    w->exit_code = code;
    if (!fmt)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err->msg, sizeof w->err->msg, fmt, ap);
    va_end(ap);
    int orphaned = code == ZERG_WORKER_EXIT_ORPHANED;
    w->err->code = orphaned ? -ESRCH : -EIO;
    if (w->log)
        zerg_log_event(w->log, w->o->slot, ZERG_LOG_WARN,
                       orphaned ? "orchestrator_gone" : "worker_error",
                       w->hb.task_id[0] ? w->hb.task_id : NULL, NULL,
                       "Worker %d exits: %s", w->o->slot, w->err->msg);
}

/* ---- orchestrator liveness ------------------------------------------ */

int wk_orch_gone(const struct worker *w)
{
    return w->o->orch_pid > 0 && kill(w->o->orch_pid, 0) < 0 && errno == ESRCH;
}

/* 1 when the orchestrator whose lease we follow still holds the rush
 * lock (.zerg/state/{feature}.lock, flock(2), which the kernel drops when
 * its holder dies): a lease that stopped changing then means a slow or
 * stopped orchestrator (Ctrl-Z, a loaded machine), not a dead one.  The
 * holder is ours when the pid the lock file names is the lease's pid; a
 * probe that cannot tell (no lock file, another filesystem) says no, and
 * the lease alone decides. */
static int orch_holds_lock(const struct worker *w)
{
    char path[PATH_MAX];
    pid_t holder = 0;
    if (w->lease_pid <= 0 ||
        zerg_fsio_path(path, sizeof path, "%s.lock", w->state_dir))
        return 0;
    return zerg_lock_probe(path, &holder) == 1 && holder == w->lease_pid;
}

/* The lease is old but its orchestrator lives: said once per silence. */
static void lease_late(struct worker *w, int64_t now)
{
    if (!w->lease_late_said && w->log) {
        zerg_json *data = zerg_json_obj();
        zerg_json_set_num(data, "lease_age_s",
                          zerg_ns_to_s(now - w->lease_changed_ns));
        zerg_json_set_num(data, "pid", w->lease_pid);
        zerg_log_event(w->log, w->o->slot, ZERG_LOG_INFO, "orchestrator_slow",
                       w->hb.task_id[0] ? w->hb.task_id : NULL, data,
                       "Worker %d: the lease is %.1f s old but the "
                       "orchestrator (pid %d) still holds the rush lock; "
                       "waiting",
                       w->o->slot, zerg_ns_to_s(now - w->lease_changed_ns),
                       w->lease_pid);
    }
    w->lease_late_said = 1;
}

/* The lease must keep changing.  Before it was ever seen it is only
 * required when no orchestrator pid can be checked (container mode).  It
 * is the fallback sign of life (DESIGN §19): a stale lease ends the
 * worker only when the rush lock is no longer held by its orchestrator. */
static void check_lease(struct worker *w, int64_t now)
{
    int64_t seq;
    int pid = 0;
    char run_id[128];
    if (wk_orch_gone(w)) {
        wk_exit(w, ZERG_WORKER_EXIT_ORPHANED,
                "orchestrator gone: process %d no longer exists",
                (int)w->o->orch_pid);
        return;
    }
    int rc = zerg_proto_read_lease(w->state_dir, w->o->feature, &pid, run_id,
                                   sizeof run_id, &seq);
    /* A lease of another run is not a sign of life of ours. */
    if (rc == 0 && strcmp(run_id, w->o->run_id) == 0 &&
        (!w->lease_seen || seq != w->lease_seq)) {
        w->lease_seen = 1, w->lease_seq = seq, w->lease_pid = pid;
        w->lease_changed_ns = now, w->lease_late_said = 0;
    }
    if (!(w->lease_seen || w->o->orch_pid <= 0) ||
        now - w->lease_changed_ns < w->lease_stale_ns)
        return;
    if (orch_holds_lock(w)) {
        lease_late(w, now);
        return;
    }
    wk_exit(w, ZERG_WORKER_EXIT_ORPHANED,
            "orchestrator gone: lease %s/lease-%s.json unchanged for %.1f s "
            "and the rush lock is free",
            w->state_dir, w->o->feature,
            zerg_ns_to_s(now - w->lease_changed_ns));
}

/* ---- assignment and progress watching ------------------------------- */

static int same_file(const struct stat *a, const struct stat *b)
{
    return a->st_ino == b->st_ino && a->st_dev == b->st_dev &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
           a->st_mtim.tv_nsec == b->st_mtim.tv_nsec && a->st_size == b->st_size;
}

/* The inotify-independent path: notice a replaced assignment by stat. */
static void check_assign_stat(struct worker *w)
{
    struct stat st;
    if (stat(w->assign_path, &st) == 0 && !same_file(&st, &w->assign_st))
        w->assign_dirty = 1;
}

/* Output is progress (workers.output_is_progress, and every stream event
 * of an agent): a log that grew since the last look moves progress_seq,
 * which the next heartbeat carries. */
static void check_output(struct worker *w)
{
    struct stat st;
    if (w->stream.on) {
        int64_t now = wk_now_ns(w);
        if (wk_stream_read(&w->stream, now) > 0) {
            struct zerg_agent_usage u;
            zerg_agent_summary_usage(&w->stream.sum, &u);
            w->hb.progress_seq++;
            w->hb.input_tokens = u.input_tokens;
            w->hb.output_tokens = u.output_tokens;
            w->hb.cache_read_tokens = u.cache_read_tokens;
            w->hb.cache_write_tokens = u.cache_creation_tokens;
            memcpy(w->hb.activity, w->stream.sum.tool, sizeof w->hb.activity);
            w->hb.tool_calls = w->stream.sum.tool_calls;
            if (w->stream.sum.has_result &&
                w->stream.sum.result.total_cost_usd > 0)
                w->hb.cost_usd = w->stream.sum.result.total_cost_usd;
            else
                wk_agent_estimate(&w->cfg,
                                  wk_agent_model(&w->cfg, &w->stream.sum), &u,
                                  &w->hb.cost_usd);
        }
        if (w->stream.terminal_ns && w->stage &&
            w->stage->settle_ns == INT64_MAX)
            w->stage->settle_ns =
                w->stream.terminal_ns + w->cfg.executor_exit_grace_ns;
        return;
    }
    if (w->out_fd < 0 || fstat(w->out_fd, &st) != 0 ||
        st.st_size <= w->out_size)
        return;
    w->out_size = st.st_size;
    w->hb.progress_seq++;
}

static void check_progress(struct worker *w)
{
    char *text = NULL;
    size_t len;
    if (w->stage)
        check_output(w);
    if (!w->stage || !w->progress_path[0])
        return;
    if (zerg_fsio_read_all(w->progress_path, PROGRESS_MAX_BYTES, &text, &len,
                           NULL) < 0)
        return;
    int pct = zerg_worker_parse_progress(text);
    free(text);
    if (pct < 0 || pct == w->progress_last)
        return;
    w->progress_last = pct;
    w->hb.progress_pct = pct;
    wk_beat(w);
}

/* Drains inotify; flags what changed.  A read returns every queued event
 * that fits, so one that left room for the largest event emptied the
 * queue: no read more just to hear EAGAIN. */
static void read_inotify(struct worker *w)
{
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    const char *assign_name = strrchr(w->assign_path, '/') + 1;
    const ssize_t room =
        (ssize_t)(sizeof buf - (sizeof(struct inotify_event) + NAME_MAX + 1));
    ssize_t n = (ssize_t)sizeof buf;
    while (n > room && (n = read(w->inofd, buf, sizeof buf)) > 0) {
        for (char *p = buf; p < buf + n;) {
            struct inotify_event *ev = (struct inotify_event *)p;
            p += sizeof *ev + ev->len;
            if (ev->mask & IN_Q_OVERFLOW)
                w->assign_dirty = 1;
            else if (ev->len && ev->wd == w->task_wd)
                check_progress(w);
            else if (ev->len && strcmp(ev->name, assign_name) == 0)
                w->assign_dirty = 1;
        }
    }
}

static void read_signal(struct worker *w)
{
    struct signalfd_siginfo si;
    if (read(w->sigfd, &si, sizeof si) == (ssize_t)sizeof si)
        wk_exit(w, ZERG_WORKER_EXIT_OK, NULL);
}

void wk_check_assign(struct worker *w)
{
    read_inotify(w);
    if (!w->assign_dirty)
        check_assign_stat(w);
}

void wk_unwatch_task(struct worker *w)
{
    if (w->task_wd < 0)
        return;
    inotify_rm_watch(w->inofd, w->task_wd);
    w->task_wd = -1;
    read_inotify(w); /* the IN_IGNORED, queued by the removal itself */
}

/* Reaps the children that exited; 0 when there is no child at all
 * (ECHILD), 1 when some are left (or it cannot tell). */
static int reap_exited(void)
{
    pid_t pid;
    while ((pid = waitpid(-1, NULL, WNOHANG)) > 0)
        ;
    return pid < 0 && errno == ECHILD ? 0 : 1;
}

/* Collects children the task left behind that became ours (a worker can be
 * pid 1 of its container): only while no stage is waiting to be reaped. */
void wk_reap_strays(void)
{
    reap_exited();
}

/* Live (not zombie) children of self, at most max of them, from
 * /proc/PID/stat ("pid (comm) state ppid ..."; comm may hold spaces and
 * parentheses, so the fields are read after the last ')'). */
static size_t live_children(pid_t self, pid_t *out, size_t max)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    size_t n = 0;
    while (d && n < max && (e = readdir(d))) {
        char path[300], buf[512], state;
        int ppid;
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t len = read(fd, buf, sizeof buf - 1);
        close(fd);
        buf[len > 0 ? len : 0] = '\0';
        const char *rp = strrchr(buf, ')');
        if (rp && sscanf(rp + 1, " %c %d", &state, &ppid) == 2 &&
            ppid == (int)self && state != 'Z' && state != 'X')
            out[n++] = (pid_t)atoi(e->d_name);
    }
    if (d)
        closedir(d);
    return n;
}

/* The worker is a child subreaper (worker.c), so whatever a task started
 * and left -- a setsid daemon, a double-forked one -- is re-parented to it
 * once its own parent is gone.  Kills those children, reaps them, and goes
 * again for the grandchildren their death re-parents to us, until none is
 * left (at most STRAY_ROUNDS rounds: a fork loop cannot hold us; the
 * worker's cgroup, when it has one, gets the rest when it exits). */
void wk_kill_strays(const struct worker *w)
{
    pid_t kids[STRAY_BATCH];
    for (int round = 0; round < STRAY_ROUNDS; round++) {
        /* No child at all (ECHILD), the usual case: no /proc scan, which
         * reads every process of the machine. */
        if (!reap_exited())
            return;
        size_t n = live_children(w->self, kids, STRAY_BATCH);
        if (n == 0)
            return;
        for (size_t i = 0; i < n; i++)
            kill(kids[i], SIGKILL);
        for (size_t i = 0; i < n; i++)
            while (waitpid(kids[i], NULL, 0) < 0 && errno == EINTR)
                ;
    }
}

static int stage_exited(const struct stage *st)
{
    siginfo_t si = {0};
    return waitid(P_PID, (id_t)st->pid, &si, WEXITED | WNOHANG | WNOWAIT) ==
               0 &&
           si.si_pid == st->pid;
}

/* Periodic work: heartbeat when due; at each tick the assignment stat,
 * the lease and the progress file. */
static void housekeeping(struct worker *w, int64_t now)
{
    if (now >= w->next_tick_ns) {
        w->next_tick_ns = now + w->poll_ns;
        check_lease(w, now);
        if (w->exit_code >= 0)
            return;
        check_assign_stat(w);
        check_progress(w);
        if (!w->stage)
            wk_reap_strays();
    }
    if (now >= w->next_hb_ns)
        wk_beat(w);
}

/* A stage ended: a stop signal that came with it is taken first.  Slurm
 * (scancel, preemption, a lost node's cleanup) and `kill` of a process
 * group signal the task and the worker together; the task's death must
 * then read as the worker being stopped (no result: the orchestrator
 * requeues the task uncharged), not as the task failing.  sig_seen: the
 * signalfd was polled with the stage's pidfd and had nothing, so a stage
 * that was not killed by a stop signal needs no second look. */
static int child_event(struct worker *w, const struct stage *st, int sig_seen)
{
    siginfo_t si = {0};
    struct pollfd pfd = {.fd = w->sigfd, .events = POLLIN};
    int grace_ms = 0;
    /* Killed by a stop signal (or a shell saying so, 128+n): the one for
     * us may be a moment behind (slurmstepd signals the step's processes
     * one by one). */
    if (waitid(P_PID, (id_t)st->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        si.si_pid == st->pid) {
        int sig = si.si_code == CLD_EXITED ? si.si_status - 128 : si.si_status;
        if (si.si_code != CLD_EXITED || si.si_status > 128)
            if (sig == SIGTERM || sig == SIGKILL || sig == SIGINT ||
                sig == SIGHUP)
                grace_ms = STOP_SIGNAL_GRACE_MS;
    }
    if ((grace_ms > 0 || !sig_seen) && poll(&pfd, 1, grace_ms) > 0 &&
        (pfd.revents & POLLIN))
        read_signal(w);
    return EV_CHILD;
}

int wk_wait_stage_end(struct worker *w, int64_t deadline_ns)
{
    struct stage *st = w->stage;
    for (;;) {
        if (stage_exited(st))
            return 1;
        int64_t now = wk_now_ns(w);
        if (now >= deadline_ns)
            return 0;
        if (now >= w->next_hb_ns)
            wk_beat(w);
        int64_t until = min64(w->next_hb_ns, deadline_ns);
        if (st->pidfd < 0)
            until = min64(until, now + WORKER_CHILD_POLL_NS);
        int64_t wait_ns = until - now;
        int timeout_ms = (int)((wait_ns + ZERG_NS_PER_MS - 1) / ZERG_NS_PER_MS);
        struct pollfd pfd = {.fd = st->pidfd, .events = POLLIN};
        if (poll(&pfd, 1, timeout_ms) < 0 && errno != EINTR)
            return 0;
    }
}

/* Waits for the next event that matters to the caller: a request to exit,
 * a changed assignment (only when idle), the stage's exit, or deadline. */
int wk_wait(struct worker *w, int64_t deadline_ns)
{
    struct stage *st = w->stage;
    int64_t asked = deadline_ns;
    for (;;) {
        int64_t now = wk_now_ns(w);
        housekeeping(w, now);
        /* An agent's terminal event read meanwhile brings it forward. */
        deadline_ns = st ? min64(asked, st->settle_ns) : asked;
        if (w->exit_code >= 0)
            return EV_EXIT;
        if (st && st->pidfd < 0 && stage_exited(st))
            return child_event(w, st, 0);
        if (!st && w->assign_dirty)
            return EV_ASSIGN;
        if (now >= deadline_ns)
            return EV_DEADLINE;
        int64_t until =
            min64(min64(w->next_tick_ns, w->next_hb_ns), deadline_ns);
        if (st && st->pidfd < 0)
            until = min64(until, now + WORKER_CHILD_POLL_NS);
        int64_t wait_ns = until - now;
        int timeout_ms = (int)((wait_ns + ZERG_NS_PER_MS - 1) / ZERG_NS_PER_MS);
        struct pollfd pfd[3] = {
            {.fd = w->sigfd, .events = POLLIN},
            {.fd = w->inofd, .events = POLLIN},
            {.fd = st ? st->pidfd : -1, .events = POLLIN},
        };
        int n = poll(pfd, 3, timeout_ms);
        if (n < 0 && errno != EINTR) {
            wk_exit(w, ZERG_WORKER_EXIT_ERROR, "poll: %s", strerror(errno));
            return EV_EXIT;
        }
        if (n <= 0)
            continue;
        if (pfd[0].revents & POLLIN)
            read_signal(w);
        if (pfd[1].revents & POLLIN)
            read_inotify(w);
        if (w->exit_code < 0 && (pfd[2].revents & (POLLIN | POLLHUP)))
            return child_event(w, st, 1);
    }
}
