/* worker.c - one worker incarnation: ready, wait for an assignment, run
 * it, report, repeat (DESIGN.md sections 8 and 12).  How a task attempt
 * runs is in worker_run.c.
 *
 * Single-threaded around one poll(2) over:
 *   - a signalfd for SIGTERM/SIGINT/SIGHUP (kill the task, say "exiting");
 *   - inotify on the state directory (our assignment arrives as a rename)
 *     and on the running task's log directory (its progress file);
 *   - the pidfd of the running stage;
 *   - a tick of at most 500 ms that also re-stats the assignment (inotify
 *     can miss events across a container bind mount), reads the lease and
 *     the progress file, and a heartbeat timer.
 *
 * The worker never outlives its orchestrator: PR_SET_PDEATHSIG, a check
 * of $ZERG_ORCH_PID at start and at every tick, and the lease, whose seq
 * must keep changing (the only sign of life across a container
 * boundary). */
#include "worker_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zerg/fsio.h"

#define WORKER_POLL_NS (500 * ZERG_NS_PER_MS)
/* Without a pidfd (kernels before 5.3) a running stage is polled. */
#define WORKER_CHILD_POLL_NS (20 * ZERG_NS_PER_MS)
#define WORKER_MIN_HEARTBEAT_NS (10 * ZERG_NS_PER_MS)
#define PROGRESS_MAX_BYTES 64

/* ---- heartbeat ------------------------------------------------------ */

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

/* ---- leaving -------------------------------------------------------- */

static void worker_exit(struct worker *w, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Records the exit code and, for a failure, why. */
static void worker_exit(struct worker *w, int code, const char *fmt, ...)
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

static int orch_gone(const struct worker *w)
{
    return w->o->orch_pid > 0 && kill(w->o->orch_pid, 0) < 0 && errno == ESRCH;
}

/* The lease must keep changing.  Before it was ever seen it is only
 * required when no orchestrator pid can be checked (container mode). */
static void check_lease(struct worker *w, int64_t now)
{
    int64_t seq;
    char run_id[128];
    if (orch_gone(w)) {
        worker_exit(w, ZERG_WORKER_EXIT_ORPHANED,
                    "orchestrator gone: process %d no longer exists",
                    (int)w->o->orch_pid);
        return;
    }
    int rc = zerg_proto_read_lease(w->state_dir, w->o->feature, NULL, run_id,
                                   sizeof run_id, &seq);
    /* A lease of another run is not a sign of life of ours. */
    if (rc == 0 && strcmp(run_id, w->o->run_id) == 0 &&
        (!w->lease_seen || seq != w->lease_seq)) {
        w->lease_seen = 1;
        w->lease_seq = seq;
        w->lease_changed_ns = now;
    }
    if ((w->lease_seen || w->o->orch_pid <= 0) &&
        now - w->lease_changed_ns >= w->lease_stale_ns)
        worker_exit(
            w, ZERG_WORKER_EXIT_ORPHANED,
            "orchestrator gone: lease %s/lease-%s.json unchanged for %.1f s",
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

static void check_progress(struct worker *w)
{
    char *text = NULL;
    size_t len;
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

/* Drains inotify; flags what changed. */
static void read_inotify(struct worker *w)
{
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    const char *assign_name = strrchr(w->assign_path, '/') + 1;
    ssize_t n;
    while ((n = read(w->inofd, buf, sizeof buf)) > 0) {
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
        worker_exit(w, ZERG_WORKER_EXIT_OK, NULL);
}

/* Collects children the task left behind that became ours (a worker can be
 * pid 1 of its container): only while no stage is waiting to be reaped. */
void wk_reap_strays(void)
{
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
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

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* Waits for the next event that matters to the caller: a request to exit,
 * a changed assignment (only when idle), the stage's exit, or deadline. */
int wk_wait(struct worker *w, int64_t deadline_ns)
{
    struct stage *st = w->stage;
    for (;;) {
        int64_t now = wk_now_ns(w);
        housekeeping(w, now);
        if (w->exit_code >= 0)
            return EV_EXIT;
        if (st && st->pidfd < 0 && stage_exited(st))
            return EV_CHILD;
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
            worker_exit(w, ZERG_WORKER_EXIT_ERROR, "poll: %s", strerror(errno));
            return EV_EXIT;
        }
        if (n <= 0)
            continue;
        if (pfd[0].revents & POLLIN)
            read_signal(w);
        if (pfd[1].revents & POLLIN)
            read_inotify(w);
        if (w->exit_code < 0 && (pfd[2].revents & (POLLIN | POLLHUP)))
            return EV_CHILD;
    }
}

/* ---- the loop ------------------------------------------------------- */

static void handle_assignment(struct worker *w)
{
    struct zerg_assign a;
    struct stat st;
    w->assign_dirty = 0;
    if (stat(w->assign_path, &st) == 0)
        w->assign_st = st;
    int rc = zerg_proto_read_assign(w->state_dir, w->o->slot, &a);
    if (rc == ZERG_ECORRUPT)
        fprintf(stderr, "zerg worker %d: ignoring unreadable %s\n", w->o->slot,
                w->assign_path);
    if (rc < 0)
        return;
    switch (
        zerg_worker_decide(&a, w->o->epoch, w->last_task, w->last_attempt)) {
    case ZERG_ASSIGN_RUN:
        wk_run_task(w, &a);
        w->assign_dirty = 1; /* it may have changed while we worked */
        break;
    case ZERG_ASSIGN_STOP:
        worker_exit(w, ZERG_WORKER_EXIT_OK, NULL);
        break;
    case ZERG_ASSIGN_IGNORE:
        if (a.epoch != w->o->epoch && w->log)
            zerg_log_event(w->log, w->o->slot, ZERG_LOG_DEBUG,
                           "assignment_fenced", a.task[0] ? a.task : NULL, NULL,
                           "Worker %d ignored an assignment for epoch %" PRIu64
                           " (its epoch is %" PRIu64 ")",
                           w->o->slot, a.epoch, w->o->epoch);
        break;
    }
}

static void worker_loop(struct worker *w)
{
    w->assign_dirty = 1; /* it may have been written before we were ready */
    while (wk_wait(w, INT64_MAX) == EV_ASSIGN)
        handle_assignment(w);
}

/* ---- setup ---------------------------------------------------------- */

static void warn_stderr(void *ud, const char *msg)
{
    fprintf(stderr, "zerg worker: %s\n", msg);
}

static int setup_signals(struct worker *w)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, &w->oldmask);
    w->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (w->sigfd < 0)
        return zerg_err_set(w->err, -errno, "signalfd: %s", strerror(errno));
    /* A parent death now arrives as SIGTERM on the signalfd. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    return 0;
}

/* Exits early when the orchestrator died before PR_SET_PDEATHSIG took
 * effect.  A launch_prefix that forks leaves another parent in between,
 * so a different parent alone is not proof: the pid must be gone too. */
static int check_orphaned(struct worker *w)
{
    if (w->o->orch_pid <= 0 || getppid() == w->o->orch_pid || !orch_gone(w))
        return 0;
    return zerg_err_set(w->err, -ESRCH,
                        "orchestrator gone: process %d no longer exists",
                        (int)w->o->orch_pid);
}

/* `zerg rush --executor CMD` reaches the worker as $ZERG_EXECUTOR and
 * replaces workers.executor, split on whitespace like a string value of
 * that key. */
static int executor_override(struct zerg_argv *ex)
{
    const char *s = getenv("ZERG_EXECUTOR");
    char *copy, *save = NULL;
    size_t n = 0;

    if (!s || !*s)
        return 0;
    if (!(copy = strdup(s)))
        return -ENOMEM;
    char **v = calloc(strlen(s) / 2 + 2, sizeof *v);
    if (!v) {
        free(copy);
        return -ENOMEM;
    }
    for (char *tok = strtok_r(copy, " \t", &save); tok;
         tok = strtok_r(NULL, " \t", &save))
        if (!(v[n++] = strdup(tok)))
            break;
    free(copy);
    for (size_t i = 0; i < ex->n; i++)
        free(ex->v[i]);
    free(ex->v);
    ex->v = v;
    ex->n = n;
    return 0;
}

static int load_inputs(struct worker *w)
{
    const struct zerg_worker_opts *o = w->o;
    char cfg_path[PATH_MAX], graph_path[PATH_MAX];
    struct zerg_err e = {0};
    zerg_fsio_path(cfg_path, sizeof cfg_path, "%s/.zerg/config.yaml",
                   o->project);
    zerg_fsio_path(graph_path, sizeof graph_path,
                   "%s/.gsd/specs/%s/task-graph.json", o->project, o->feature);
    int rc =
        zerg_config_load(&w->cfg, o->config_path ? o->config_path : cfg_path,
                         warn_stderr, NULL, &e);
    if (rc < 0)
        return zerg_err_set(w->err, rc, "%s", e.msg);
    if (executor_override(&w->cfg.executor) < 0)
        return zerg_err_set(w->err, -ENOMEM, "out of memory");
    const char *gp = o->graph_path ? o->graph_path : graph_path;
    rc = zerg_graph_load(&w->graph, gp, &e);
    if (rc < 0)
        return zerg_err_set(w->err, rc, "cannot read task graph %s: %s", gp,
                            rc > -4096 && rc != -EFBIG ? strerror(-rc) : e.msg);
    return 0;
}

static int setup_state(struct worker *w)
{
    const struct zerg_worker_opts *o = w->o;
    int rc = 0;
    if (o->state_dir)
        rc = zerg_fsio_path(w->state_dir, sizeof w->state_dir, "%s",
                            o->state_dir);
    else
        rc = zerg_fsio_path(w->state_dir, sizeof w->state_dir, "%s/.zerg/state",
                            o->project);
    if (rc == 0)
        rc = zerg_proto_assign_path(w->assign_path, sizeof w->assign_path,
                                    w->state_dir, o->slot);
    char slot_dir[PATH_MAX];
    if (rc == 0)
        rc = zerg_proto_slot_dir(slot_dir, sizeof slot_dir, w->state_dir,
                                 o->slot);
    if (rc == 0)
        rc = zerg_fsio_mkdirs(slot_dir, 0755);
    if (rc < 0)
        return zerg_err_set(w->err, rc, "cannot use state directory %s: %s",
                            w->state_dir, strerror(-rc));
    /* Only our slot's directory: the others' traffic never wakes us. */
    w->inofd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (w->inofd < 0 || inotify_add_watch(w->inofd, slot_dir,
                                          IN_MOVED_TO | IN_CLOSE_WRITE) < 0)
        return zerg_err_set(w->err, -errno, "cannot watch %s: %s", slot_dir,
                            strerror(errno));
    return 0;
}

static void setup_timing(struct worker *w)
{
    const struct zerg_worker_opts *o = w->o;
    int64_t now = wk_now_ns(w);
    w->hb_interval_ns = o->heartbeat_interval_ns > 0
                            ? o->heartbeat_interval_ns
                            : w->cfg.heartbeat_interval_ns;
    if (w->hb_interval_ns < WORKER_MIN_HEARTBEAT_NS)
        w->hb_interval_ns = WORKER_MIN_HEARTBEAT_NS;
    w->lease_stale_ns =
        o->lease_stale_ns > 0 ? o->lease_stale_ns : ZERG_LEASE_STALE_NS;
    w->poll_ns =
        o->poll_ns > 0 ? min64(o->poll_ns, WORKER_POLL_NS) : WORKER_POLL_NS;
    w->lease_changed_ns = now;
    w->next_tick_ns = now;
}

static void open_log(struct worker *w)
{
    char dir[PATH_MAX];
    struct zerg_err e = {0};
    if (zerg_fsio_path(dir, sizeof dir, "%s/.zerg", w->o->project) < 0)
        return;
    w->log = zerg_log_open(dir, w->clock, &e);
    /* The default level leaves ZERG_DEBUG=1 in charge. */
    if (w->log && w->cfg.log_level != ZERG_LOG_INFO)
        zerg_log_set_level(w->log, (enum zerg_log_level)w->cfg.log_level);
}

/* Everything before "ready"; returns an exit code. */
static int worker_setup(struct worker *w)
{
    if (setup_signals(w) < 0)
        return ZERG_WORKER_EXIT_ERROR;
    if (check_orphaned(w) < 0)
        return ZERG_WORKER_EXIT_ORPHANED;
    if (load_inputs(w) < 0)
        return ZERG_WORKER_EXIT_SETUP;
    if (setup_state(w) < 0)
        return ZERG_WORKER_EXIT_ERROR;
    setup_timing(w);
    open_log(w);
    w->hb = (struct zerg_heartbeat){
        .worker_id = w->o->slot,
        .epoch = w->o->epoch,
        .pid = (int)getpid(),
    };
    snprintf(w->hb.step, sizeof w->hb.step, "ready");
    if (wk_beat(w) < 0) {
        zerg_err_set(w->err, -EIO, "cannot write the ready heartbeat in %s",
                     w->state_dir);
        return ZERG_WORKER_EXIT_ERROR;
    }
    w->ready = 1;
    return ZERG_WORKER_EXIT_OK;
}

static void worker_close(struct worker *w)
{
    if (w->ready) {
        w->hb.task_pgid = 0;
        wk_step(w, "exiting", w->hb.progress_pct);
    }
    zerg_log_close(w->log);
    zerg_graph_free(w->graph);
    zerg_config_free(&w->cfg);
    if (w->inofd >= 0)
        close(w->inofd);
    if (w->sigfd >= 0)
        close(w->sigfd);
    sigprocmask(SIG_SETMASK, &w->oldmask, NULL);
}

int zerg_worker_run(const struct zerg_worker_opts *o, struct zerg_err *err)
{
    struct zerg_err local = {0};
    struct worker w = {
        .o = o,
        .clock = o->clock ? o->clock : &zerg_clock_system,
        .err = err ? err : &local,
        .sigfd = -1,
        .inofd = -1,
        .task_wd = -1,
        .exit_code = -1,
        .progress_last = -1,
    };
    sigprocmask(SIG_BLOCK, NULL, &w.oldmask);
    zerg_config_defaults(&w.cfg);
    int rc = worker_setup(&w);
    if (rc == ZERG_WORKER_EXIT_OK) {
        worker_loop(&w);
        rc = w.exit_code;
    }
    worker_close(&w);
    return rc;
}
